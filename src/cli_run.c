/*
 * cli_run.c - placeholder while the command is being built; replaced by its
 * issue's implementation.
 */
#include "cli.h"

int cli_run(int argc, char **argv, const char *argv0)
{
	(void)argc;
	(void)argv;
	(void)argv0;
	fprintf(stderr, "llmsim: error: 'run' is under construction\n");
	return CLI_FAIL;
}
