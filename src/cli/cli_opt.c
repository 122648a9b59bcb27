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

int cli_choice_error(const char *cmd, const char *opt, const char *got,
		     const char *const *names)
{
	char list[256];
	size_t i, k = 0;

	list[0] = '\0';
	for (i = 0; names[i] && k < sizeof(list); i++)
		k += (size_t)snprintf(list + k, sizeof(list) - k, "%s%s",
				      i ? ", " : "", names[i]);
	return cli_usage_error(cmd, "%s: expected one of %s; got '%s'", opt,
			       list, got);
}

void cli_getopt_reset(void)
{
	optind = 0;	/* glibc: 0 re-initializes completely */
	opterr = 0;	/* we report, in our own words */
}

/* Whether name[0..n) begins two or more of the long options. */
static int prefix_of_several(const struct option *o, const char *name,
			     size_t n)
{
	int k = 0;

	for (; o->name; o++)
		k += strncmp(o->name, name, n) == 0;
	return k > 1;
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
		const char *arg = argv[optind - 1];
		const char *eq = strchr(arg, '=');

		if (strncmp(arg, "--", 2) == 0 && eq && optopt)
			/* a long option that takes no value got one */
			cli_usage_error(cmd, "'%.*s' takes no value",
					(int)(eq - arg), arg);
		else if (strncmp(arg, "--", 2) == 0)
			cli_usage_error(cmd, "%s option '%.*s'",
					prefix_of_several(longopts, arg + 2,
						eq ? (size_t)(eq - arg - 2) :
						strlen(arg + 2)) ?
					"ambiguous" : "unknown",
					(int)(eq ? eq - arg : (long)strlen(arg)),
					arg);
		else
			cli_usage_error(cmd, "unknown option '-%c'", optopt);
		return '?';
	}
	return c;
}

int cli_getopt_named(int argc, char **argv, const char *cmd,
		     const char *const *valued, const char *const *flags,
		     int (*fn)(void *arg, const char *name, const char *value),
		     void *arg)
{
	enum { MAXOPT = 64, LONGVAL = 256 };
	struct option longopts[MAXOPT + 1];
	const char *names[MAXOPT];
	char shortopts[2 * MAXOPT + 1];
	size_t nlong = 0, nshort = 0, n = 0, nvalued = 0, j;
	int c, k, rc;

	for (k = 0; k < 2; k++) {
		const char *const *list = k == 0 ? valued : flags;

		for (; list && *list && n < MAXOPT; list++, n++) {
			const char *name = *list;

			names[n] = name;
			if (name[1] == '-') {
				longopts[nlong++] = (struct option){
					name + 2,
					k == 0 ? required_argument : no_argument,
					NULL, LONGVAL + (int)n };
			} else {
				shortopts[nshort++] = name[1];
				if (k == 0)
					shortopts[nshort++] = ':';
			}
		}
		if (k == 0)
			nvalued = n;
	}
	longopts[nlong] = (struct option){ NULL, 0, NULL, 0 };
	shortopts[nshort] = '\0';
	cli_getopt_reset();
	while ((c = cli_getopt(argc, argv, shortopts, longopts, cmd)) != -1) {
		if (c == '?')
			return CLI_USAGE;
		if (c >= LONGVAL)
			j = (size_t)(c - LONGVAL);
		else
			for (j = 0; j < n; j++)
				if (names[j][1] == c && names[j][2] == '\0')
					break;
		if (j >= n)	/* cannot happen: getopt knows only these */
			return cli_usage_error(cmd, "unknown option '%s'",
					       argv[optind - 1]);
		if (j < nvalued && *optarg == '\0')
			return cli_usage_error(cmd, "'%s' needs a value",
					       names[j]);
		rc = fn(arg, names[j], j < nvalued ? optarg : NULL);
		if (rc != CLI_OK)
			return rc;
	}
	if (optind < argc)
		return cli_usage_error(cmd, "unexpected argument '%s'",
				       argv[optind]);
	return CLI_OK;
}
