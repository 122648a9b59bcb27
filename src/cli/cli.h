/*
 * cli.h - the command-line interface: `llmsim <command> [options]`.
 *
 * main() hands argv to cli_main(), which handles --help/--version and
 * dispatches to one entry of the command registry (cli.c). Each command
 * lives in its own file (cli_config.c, cli_run.c, ...), parses its own
 * options (cli_opt.c), may store its result (cli_store.c) and returns an
 * exit status:
 *
 *   0  success
 *   1  runtime failure (I/O, database, out of memory, simulation failed)
 *   2  bad input or usage (diagnostics on stderr)
 *   3  `measure` only: no device (no GPU, or no driver)
 *   4  `measure` only: a library or backend is missing (RCCL, NCCL,
 *      rocBLAS, cuBLAS, MPI, or the backend was not built)
 *   5  `run --require-fit`: the job does not fit in GPU memory
 *
 * This is the application layer: it may use every module.
 */
#ifndef LLMSIM_CLI_CLI_H
#define LLMSIM_CLI_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct cJSON;
struct diag;
struct job_spec;
struct schema;
struct store_coll_row;
struct store_meas_info;
struct store_meas_row;
struct store_plan_row;
struct store_step;
struct store_valid_row;

enum {
	CLI_OK = 0,
	CLI_FAIL = 1,
	CLI_USAGE = 2,
	CLI_NO_DEVICE = 3,
	CLI_NO_LIBRARY = 4,
	CLI_NO_FIT = 5		/* run --require-fit: does not fit in memory */
};

struct cli_command {
	const char *name;		/* "run" */
	const char *summary;		/* one line for `llmsim --help` */
	const char *usage;		/* full help for `llmsim NAME --help` */
	int (*fn)(int argc, char **argv, const char *argv0);
					/* NULL: reserved for a later issue */
	const char *later;		/* for reserved commands: what fills it */
};

/* Run the command argv names; its exit status. Checks standard output
 * at the end and closes it: call once, from main(). */
int cli_main(int argc, char **argv);

/* 1 if argv holds -h or --help (before a "--"). */
int cli_wants_help(int argc, char **argv);

/* Print a command's usage to out. */
void cli_print_usage(FILE *out, const struct cli_command *c);

/* The registry entry called name, or NULL. */
const struct cli_command *cli_command(const char *name);

/*
 * The value of option `name` at argv[*i]: "--name VALUE" (advancing *i
 * past it) or "--name=VALUE". NULL when argv[*i] is not that option; NULL
 * with *missing = name when it is but has no value (nothing follows, or
 * the value is empty).
 */
const char *cli_option(int argc, char **argv, int *i, const char *name,
		       const char **missing);

/*
 * getopt_long over a command's arguments (argv[0] is the command's
 * name), the same everywhere: options and operands in any order, "--"
 * ends the options, "-" is an operand (standard input or output).
 * Unknown options and missing values are reported as usage errors of
 * cmd. Returns the option (as getopt_long: its short letter or the
 * `val` of a long one), -1 when the options are done (operands are
 * argv[optind..argc-1]), or '?' after reporting (return CLI_USAGE).
 * Call cli_getopt_reset() before the first call for a new argv.
 */
struct option;
int cli_getopt(int argc, char **argv, const char *shortopts,
	       const struct option *longopts, const char *cmd);
void cli_getopt_reset(void);

/*
 * cli_getopt over options given by name, for commands that dispatch on
 * the name: valued[] (NULL-terminated) take a value, flags[] do not;
 * each is "--long" or "-x". fn(arg, name, value) is called for each
 * option given, in order (value NULL for a flag; an empty value is
 * refused first as a missing one), and its status other than CLI_OK
 * ends the parse. Operands are refused. CLI_OK, or the failing status
 * (CLI_USAGE after reporting).
 */
int cli_getopt_named(int argc, char **argv, const char *cmd,
		     const char *const *valued, const char *const *flags,
		     int (*fn)(void *arg, const char *name, const char *value),
		     void *arg);

/* Report a usage error of command cmd ("run", "config", ...) on stderr:
 * "llmsim: error: MESSAGE" and where its help is. Returns CLI_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Report that option opt of command cmd got a value not among names
 * (NULL-terminated): "OPT: expected one of A, B, C; got 'GOT'" (the
 * list cut at 255 characters). Returns CLI_USAGE. */
int cli_choice_error(const char *cmd, const char *opt, const char *got,
		     const char *const *names);

/* The man page and the bash completion of the n commands cmds
 * (cli_doc.c). CLI_OK, or CLI_FAIL on a write error. */
int cli_doc_man(FILE *out, const struct cli_command *cmds, size_t n);
int cli_doc_completion(FILE *out, const struct cli_command *cmds, size_t n);

/* Commands, one per file. */
int cli_config(int argc, char **argv, const char *argv0);
int cli_run(int argc, char **argv, const char *argv0);
int cli_collective(int argc, char **argv, const char *argv0);
int cli_sweep(int argc, char **argv, const char *argv0);
int cli_db(int argc, char **argv, const char *argv0);
int cli_report(int argc, char **argv, const char *argv0);

/* `config import-megatron` (cli_megatron.c); argv[0] is its name. */
struct config_ctx;
int cli_import_megatron(struct config_ctx *cx, int argc, char **argv);
int cli_measure(int argc, char **argv, const char *argv0);
int cli_validate(int argc, char **argv, const char *argv0);
int cli_calibrate(int argc, char **argv, const char *argv0);
int cli_plan(int argc, char **argv, const char *argv0);

/* A result to store with cli_store(). */
struct cli_result {
	const char *command;			/* "run", "collective" */
	const struct schema *schema;		/* kind of the resolved config;
						   NULL: kind and config_json */
	const void *config;			/* the resolved config */
	const char *json;			/* the command's --json output */
	const struct store_step *step;		/* step summary, or NULL */
	const struct store_coll_row *rows;	/* collective rows, or NULL */
	uint32_t nrows;				/* entries of rows */
	const char *kind;			/* without a schema: the kind */
	const char *config_json;		/* without a schema: the input */
	const struct store_meas_info *meas_info;	/* measure: where */
	const struct store_meas_row *meas;	/* measure: the points */
	uint32_t nmeas;
	const struct store_valid_row *valid;	/* validate: the rows */
	uint32_t nvalid;
	const struct store_plan_row *plan;	/* a plan's ranking, or NULL */
	uint32_t nplan;				/* entries of plan */
};

/*
 * Store r in the database db, or in DATA_ROOT/results/llmsim.db when db is
 * NULL: the resolved config as canonical JSON (printed once) with its
 * SHA-256, the same text and hash as config_hash(), the result and the
 * llmsim version. Prints "llmsim: stored as run N in PATH" on stderr.
 * Returns CLI_OK, or CLI_FAIL after reporting to d.
 */
int cli_store(const char *db, const char *data_root,
	      const struct cli_result *r, struct diag *d);

/*
 * cli_store of a `run` of job j: the resolved job, its JSON result and
 * the step summary step (training, inference or serving alike).
 */
int cli_store_run(const char *db, const char *data_root,
		  const struct job_spec *j, const char *json,
		  const struct store_step *step, struct diag *d);

/*
 * The default results database (free with mem_free; NULL when out of
 * memory): DATA_ROOT/results/llmsim.db in a checkout, results/llmsim.db
 * under the current directory for an installed llmsim (its data root,
 * PREFIX/share/llmsim, is not the user's to write).
 */
char *cli_default_db(const char *data_root);
/* The same, in the arena. */
struct arena;
const char *cli_default_db_in(struct arena *a, const char *data_root);

/* What `run` was asked to do with a result. */
struct serve_reqs;

struct cli_run_io {
	int json;			/* print JSON instead of the summary */
	const char *trace;		/* Chrome trace file, or NULL */
	const char *db;			/* database, or NULL for the default */
	int no_store;
	double max_trace_B;		/* B, a serving trace's budget; 0: none */
	struct serve_reqs *reqs;	/* a serving run's requests, made for
					 * its trace estimate (the run takes
					 * them over); NULL: the run makes them */
	int require_fit;		/* exit CLI_NO_FIT when it does not fit
					 * (inference ignored --require-fit) */
};

struct job_spec;

/*
 * The --trace stream of `run`: stdout for "-", else PATH opened for
 * writing; NULL after reporting "cannot write the trace 'PATH': REASON",
 * *rc then CLI_USAGE when the path is at fault (a missing directory, a
 * directory, no permission: exit 2) or CLI_FAIL (out of descriptors,
 * memory...); *rc is CLI_OK when the stream opened.
 */
FILE *cli_trace_open(const char *path, int *rc, struct diag *d);

/*
 * Finish a cli_trace_open() stream: flush it and close it (stdout only
 * flushed). CLI_OK, or CLI_FAIL after reporting a write error, one made
 * while the run wrote the trace (the simulators leave it to this: the
 * stream's error flag and errno) or now, as "cannot write the trace
 * 'PATH': REASON".
 */
int cli_trace_close(FILE *f, const char *path, struct diag *d);

/*
 * After a run that returned rc (0; -1 failure; -2 bad input) and wrote
 * its trace to f (NULL: none): f finished with cli_trace_close, and the
 * command's code, CLI_OK, CLI_USAGE or CLI_FAIL (also for a trace that
 * could not be written after a run that succeeded; a simulator leaves
 * its trace write errors to this).
 */
int cli_trace_finish(FILE *f, const char *path, int rc, struct diag *d);

/*
 * obj's JSON text into *json (free with cJSON_free), printed on stdout
 * with a newline when print (--json); obj is freed here. CLI_OK, or
 * CLI_FAIL out of memory (obj NULL counts as that).
 */
int cli_json_text(struct cJSON *obj, int print, char **json, struct diag *d);

/* `plan` (cli_plan.c): the prefill:decode ratio search for now. */
int cli_plan(int argc, char **argv, const char *argv0);

/* `run` of an inference phase (cli_infer.c): prefill and decode steps,
 * serving runs. Returns CLI_OK, CLI_FAIL or CLI_USAGE. */
int cli_run_inference(const struct cli_run_io *io, const struct job_spec *j,
		      const char *data_root, struct diag *d);

/* The version string ("0.1.0" plus the git revision when built in a
 * checkout). */
const char *cli_version(void);

#endif
