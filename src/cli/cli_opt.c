/*
 * cli_opt.c - option parsing and usage errors shared by the commands.
 *
 * A leaf of the CLI: cli.c and every cli_COMMAND.c call it; it calls
 * none of them.
 */
#include "cli.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *cli_option(int argc, char **argv, int *i, const char *name,
		       const char **missing)
{
	size_t n = strlen(name);
	const char *v;

	if (strncmp(argv[*i], name, n) != 0)
		return NULL;
	if (argv[*i][n] == '=')
		v = argv[*i] + n + 1;
	else if (argv[*i][n] != '\0')
		return NULL;	/* another option with this prefix */
	else
		v = *i + 1 < argc ? argv[++*i] : "";
	if (*v == '\0') {
		*missing = name;
		return NULL;
	}
	return v;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fputs("llmsim: error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nrun 'llmsim %s --help' for usage\n", cmd);
	return CLI_USAGE;
}

void cli_getopt_reset(void)
{
	optind = 0;	/* glibc: 0 re-initializes completely */
	opterr = 0;	/* we report, in our own words */
}

int cli_getopt(int argc, char **argv, const char *shortopts,
	       const struct option *longopts, const char *cmd)
{
	char opts[128];
	int c;

	/* A leading ':' makes a missing value ':' rather than '?'. GNU
	 * getopt permutes argv, so operands end up after the options. */
	/* ('+' or '-' must come first of all, then ':') */
	if (shortopts[0] == '+' || shortopts[0] == '-')
		snprintf(opts, sizeof(opts), "%c:%s", shortopts[0],
			 shortopts + 1);
	else
		snprintf(opts, sizeof(opts), ":%s", shortopts);
	c = getopt_long(argc, argv, opts, longopts, NULL);
	if (c == ':') {
		cli_usage_error(cmd, "'%s' needs a value", argv[optind - 1]);
		return '?';
	}
	if (c == '?') {
		if (optopt && optopt != '?')
			cli_usage_error(cmd, "unknown option '-%c'", optopt);
		else
			cli_usage_error(cmd, "unknown option '%s'",
					argv[optind - 1]);
		return '?';
	}
	return c;
}
