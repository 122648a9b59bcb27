/*
 * cli_config.c - placeholder while the command is being built; replaced by its
 * issue's implementation.
 */
#include "cli.h"

int cli_config(int argc, char **argv, const char *argv0)
{
	(void)argc;
	(void)argv;
	(void)argv0;
	fprintf(stderr, "llmsim: error: 'config' is under construction\n");
	return CLI_FAIL;
}
