/*
 * cli_doc.c - the man page and the bash completion, generated from what
 * the binary itself knows: the command registry's summaries and usage
 * texts (cli.c passes them in) and the config schemas (every key of
 * every kind, as `llmsim config help` prints them). `make man` writes
 * them with `llmsim help --man` and `llmsim help --bash-completion`;
 * `make install` installs them. Nothing here is written by hand twice.
 *
 * The completion completes commands, each command's options (read from
 * its usage text: every "--word" and "-x" in it), preset names after
 * --system, --model, --dispatcher, for `run`/`plan` JOB and `config
 * show` (asking `llmsim config list` at completion time, so presets
 * added later complete too), the values of --kind (validate's kinds, or
 * the config kinds), --op (collective's or measure's), --objective,
 * --backend, --format, --view, the kinds after `config list|help`, and
 * files elsewhere.
 */
#include "cli.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "base/coll.h"
#include "calib/valid.h"
#include "config/config.h"
#include "config/schema.h"

/* Write text for roff: a leading '.' or '\'' escaped, backslashes
 * doubled. */
static void roff(FILE *out, const char *s)
{
	int bol = 1;

	for (; *s; s++) {
		if (bol && (*s == '.' || *s == '\''))
			fputs("\\&", out);
		if (*s == '\\')
			fputs("\\e", out);
		else if (*s == '-')
			fputs("\\-", out);
		else
			fputc(*s, out);
		bol = *s == '\n';
	}
}

static void schema_section(FILE *out)
{
	char *buf = NULL;
	size_t len = 0, k;
	FILE *m;

	for (k = 0; config_kinds[k]; k++) {
		fprintf(out, ".SS %s\n.nf\n", config_kinds[k]->kind);
		m = open_memstream(&buf, &len);
		if (!m)
			return;
		schema_print_help(m, config_kinds[k]);
		fclose(m);
		roff(out, buf);
		free(buf);
		buf = NULL;
		fputs(".fi\n", out);
	}
}

int cli_doc_man(FILE *out, const struct cli_command *cmds, size_t n)
{
	size_t i;

	fprintf(out, ".TH LLMSIM 1 \"\" \"llmsim %s\" \"User Commands\"\n",
		cli_version());
	fputs(".SH NAME\nllmsim \\- predict the step time of large language "
	      "model training and serving on GPU clusters\n"
	      ".SH SYNOPSIS\n.B llmsim\n.I command\n[\\fIoptions\\fR]\n"
	      ".br\n.B llmsim\n.I command\n\\-\\-help\n"
	      ".SH DESCRIPTION\nllmsim predicts how long one step of a large "
	      "language model takes on a GPU cluster, where the time goes "
	      "(compute, exposed communication, pipeline bubble), and whether "
	      "it fits in memory. It simulates the step on a discrete-event "
	      "engine with a GPU roofline model and a link-level fabric "
	      "model, and keeps every result in an SQLite database.\n"
	      ".SH COMMANDS\n", out);
	for (i = 0; i < n; i++) {
		fprintf(out, ".SS %s\n", cmds[i].name);
		roff(out, cmds[i].summary);
		fputs(cmds[i].fn ? ".\n" : " (not available yet).\n", out);
		if (!cmds[i].usage)
			continue;
		fputs(".PP\n.nf\n", out);
		roff(out, cmds[i].usage);
		fputs(".fi\n", out);
	}
	fputs(".SH EXIT STATUS\n.TP\n0\nsuccess\n.TP\n1\nruntime failure "
	      "(I/O, the database, out of memory, a failed simulation)\n"
	      ".TP\n2\nbad input or usage, with file:line:col diagnostics\n"
	      ".TP\n3\n\\fBmeasure\\fR: no device (no GPU, or no driver)\n"
	      ".TP\n4\n\\fBmeasure\\fR: a library or the backend is missing\n"
	      ".TP\n5\n\\fBrun \\-\\-require\\-fit\\fR: the job does not fit "
	      "in GPU memory\n"
	      ".SH ENVIRONMENT\n.TP\nLLMSIM_DATA\nthe folder holding configs/ "
	      "and workloads/ (default: found from the binary: the checkout, "
	      "or PREFIX/share/llmsim when installed)\n"
	      ".SH FILES\n.TP\nresults/llmsim.db\nthe results database (in "
	      "the checkout; in the current directory for an installed "
	      "llmsim)\n.TP\nPREFIX/share/llmsim\nthe presets: configs/ "
	      "(GPUs, links, fabrics, collective libraries, systems) and "
	      "workloads/ (models, frameworks, jobs, sweeps)\n"
	      ".SH CONFIG KEYS\nEvery key of every config kind, with its type, "
	      "default and bounds (as \\fBllmsim config help\\fR prints "
	      "them).\n", out);
	schema_section(out);
	fputs(".SH SEE ALSO\nThe documentation in the source tree: "
	      "docs/cli-output.md (outputs and exit status), docs/sweeps.md, "
	      "docs/results-store.md (the database and its views), "
	      "docs/report.md, docs/megatron.md.\n", out);
	return ferror(out) ? CLI_FAIL : CLI_OK;
}

/* Every option ("--word", "-x") in a usage text, once, space-separated
 * (buf starts and ends with a space, so " --x " finds a repeat). */
static void options_of(const char *usage, char *buf, size_t len)
{
	const char *p = usage, *s;
	size_t at = 1, n;
	char word[66];

	snprintf(buf, len, " ");
	while (*p) {
		if (*p != '-' || (p > usage && (isalnum((unsigned char)p[-1]) ||
						p[-1] == '-' || p[-1] == '_'))) {
			p++;
			continue;
		}
		s = p;
		while (*p == '-')
			p++;
		while (isalnum((unsigned char)*p) || *p == '-' || *p == '_')
			p++;
		n = (size_t)(p - s);
		if (n < 2 || n > 60 || s[n - 1] == '-' ||
		    (s[1] != '-' && n != 2) || (s[1] == '-' && n < 3))
			continue;
		/* "-x" only where the text lists it as an option ("[-j N]",
		 * "  -j, --jobs"): not "mpirun -n" or "kill -9" in prose */
		if (s[1] != '-' && !(s > usage && s[-1] == '[') && *p != ',')
			continue;
		snprintf(word, sizeof(word), " %.*s ", (int)n, s);
		if (strstr(buf, word) || at + n + 2 >= len)
			continue;
		at += (size_t)snprintf(buf + at, len - at, "%s", word + 1);
	}
}

/* Words separated by spaces: a NULL-terminated table's. */
static void words(FILE *out, const char *const *w)
{
	size_t i;

	for (i = 0; w[i]; i++)
		fprintf(out, "%s%s", i ? " " : "", w[i]);
}

int cli_doc_completion(FILE *out, const struct cli_command *cmds, size_t n)
{
	char opts[1024];
	size_t i;

	fputs("# bash completion for llmsim (generated: llmsim help "
	      "--bash-completion)\n"
	      "_llmsim_presets()\n{\n"
	      "\tllmsim config list \"$@\" 2>/dev/null | sed 's/^  *//; /:$/d'\n"
	      "}\n_llmsim()\n{\n"
	      "\tlocal cur prev cmd\n"
	      "\tcur=${COMP_WORDS[COMP_CWORD]}\n"
	      "\tprev=${COMP_WORDS[COMP_CWORD-1]}\n"
	      "\tcmd=${COMP_WORDS[1]}\n"
	      "\tif [ \"$COMP_CWORD\" -eq 1 ]; then\n"
	      "\t\tCOMPREPLY=($(compgen -W \"", out);
	for (i = 0; i < n; i++)
		fprintf(out, "%s%s", i ? " " : "", cmds[i].name);
	fputs(" help --help --version\" -- \"$cur\"))\n\t\treturn\n\tfi\n"
	      "\tcase $prev in\n"
	      "\t--system) COMPREPLY=($(compgen -W \"$(_llmsim_presets "
	      "system)\" -- \"$cur\")); return ;;\n"
	      "\t--model) COMPREPLY=($(compgen -W \"$(_llmsim_presets "
	      "model)\" -- \"$cur\")); return ;;\n"
	      "\t--dispatcher) COMPREPLY=($(compgen -W \"$(_llmsim_presets "
	      "ep_comm)\" -- \"$cur\")); return ;;\n"
	      "\t--kind)\n\t\tif [ \"$cmd\" = validate ]; then\n"
	      "\t\t\tCOMPREPLY=($(compgen -W \"", out);
	words(out, valid_kind_names);
	fputs(" all\" -- \"$cur\"))\n\t\telse\n"
	      "\t\t\tCOMPREPLY=($(compgen -W \"", out);
	for (i = 0; config_kinds[i]; i++)
		fprintf(out, "%s%s", i ? " " : "", config_kinds[i]->kind);
	fputs("\" -- \"$cur\"))\n\t\tfi\n\t\treturn ;;\n"
	      "\t--op)\n\t\tif [ \"$cmd\" = measure ]; then\n"
	      "\t\t\tCOMPREPLY=($(compgen -W \"", out);
	words(out, coll_op_names);
	fputs(" alltoallv gemm copy\" -- \"$cur\"))\n\t\telse\n"
	      "\t\t\tCOMPREPLY=($(compgen -W \"", out);
	words(out, coll_op_names);
	fputs(" dispatch combine\" -- \"$cur\"))\n\t\tfi\n\t\treturn ;;\n"
	      "\t--objective) COMPREPLY=($(compgen -W \"throughput memory "
	      "cost\" -- \"$cur\")); return ;;\n"
	      "\t--backend) COMPREPLY=($(compgen -W \"mpi hip cuda\" -- "
	      "\"$cur\")); return ;;\n"
	      "\t--format) COMPREPLY=($(compgen -W \"csv json\" -- \"$cur\")); "
	      "return ;;\n"
	      "\t--view)\n"	/* the views of the --db the line names */
	      "\t\tlocal i db=\n"
	      "\t\tfor ((i = 2; i < COMP_CWORD; i++)); do\n"
	      "\t\t\t[ \"${COMP_WORDS[i]}\" = --db ] && db=${COMP_WORDS[i+1]}\n"
	      "\t\tdone\n"
	      "\t\tCOMPREPLY=($(compgen -W \"$(llmsim db views ${db:+--db \"$db\"} "
	      "2>/dev/null | sed -n 's/^\\(v_[a-z0-9_]*\\):.*/\\1/p')\" -- "
	      "\"$cur\"))\n\t\treturn ;;\n"
	      "\t--db|--trace|--output|--reference|--import|--lib|--blas) "
	      "COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n"
	      "\tesac\n"
	      "\tcase $cmd in\n", out);
	for (i = 0; i < n; i++) {
		if (!cmds[i].usage)
			continue;
		options_of(cmds[i].usage, opts, sizeof(opts));
		fprintf(out, "\t%s) opts=\"%s --help\" ;;\n", cmds[i].name, opts);
	}
	fputs("\t*) opts=\"--help\" ;;\n\tesac\n"
	      "\tif [[ $cur == -* ]]; then\n"
	      "\t\tCOMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
	      "\telif [ \"$cmd\" = run ] || [ \"$cmd\" = plan ]; then\n"
	      "\t\tCOMPREPLY=($(compgen -f -X '!*.y*ml' -- \"$cur\") "
	      "$(compgen -d -- \"$cur\") $(compgen -W \"$(_llmsim_presets job)\" "
	      "-- \"$cur\"))\n"
	      "\telif [ \"$cmd\" = sweep ]; then\n"
	      "\t\tCOMPREPLY=($(compgen -f -X '!*.y*ml' -- \"$cur\") "
	      "$(compgen -d -- \"$cur\"))\n"
	      "\telif [ \"$cmd\" = config ] && [ \"$COMP_CWORD\" -eq 2 ]; then\n"
	      "\t\tCOMPREPLY=($(compgen -W \"show list help import-megatron\" "
	      "-- \"$cur\"))\n"
	      "\telif [ \"$cmd\" = config ] && [ \"$COMP_CWORD\" -eq 3 ] && "
	      "{ [ \"${COMP_WORDS[2]}\" = list ] || "
	      "[ \"${COMP_WORDS[2]}\" = help ]; }; then\n"
	      "\t\tCOMPREPLY=($(compgen -W \"", out);
	for (i = 0; config_kinds[i]; i++)
		fprintf(out, "%s%s", i ? " " : "", config_kinds[i]->kind);
	fputs("\" -- \"$cur\"))\n"
	      "\telif [ \"$cmd\" = config ] && [ \"$COMP_CWORD\" -eq 3 ] && "
	      "[ \"${COMP_WORDS[2]}\" = show ]; then\n"
	      "\t\tCOMPREPLY=($(compgen -f -- \"$cur\") $(compgen -W "
	      "\"$(_llmsim_presets)\" -- \"$cur\"))\n"
	      "\telif [ \"$cmd\" = db ] && [ \"$COMP_CWORD\" -eq 2 ]; then\n"
	      "\t\tCOMPREPLY=($(compgen -W \"views export merge\" -- \"$cur\"))\n"
	      "\telse\n"
	      "\t\tCOMPREPLY=($(compgen -f -- \"$cur\"))\n"
	      "\tfi\n}\ncomplete -o filenames -F _llmsim llmsim\n", out);
	return ferror(out) ? CLI_FAIL : CLI_OK;
}
