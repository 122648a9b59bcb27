/*
 * cli_measure.c - `llmsim measure`: run a measurement backend
 * (src/backend, docs/measure.md) and print and store what it measured.
 *
 *   llmsim measure --backend mpi|hip|cuda --op OP [--min SIZE] [--max SIZE]
 *                  [--step-factor F] [--dtype T] [--ranks N] [--iters N]
 *                  [--warmup N] [--budget S] [--m M --n N --k K]
 *                  [--system S] [--set key=value]... [--lib PATH]
 *                  [--blas PATH] [--launcher CMD] [--json | --csv]
 *                  [--db PATH] [--no-store]
 *   llmsim measure --import FILE [--system S] ...
 *
 * The backend is build/backend/llmsim-backend-NAME beside the binary (or
 * in $LLMSIM_BACKEND_DIR). mpi runs under mpirun (`mpirun -n RANKS`, with
 * --oversubscribe when RANKS exceeds the CPUs and --allow-run-as-root as
 * root; $LLMSIM_MPIRUN or --launcher replaces the launcher); hip and cuda
 * run on this node's GPUs (--ranks: how many; default all), or under
 * --launcher for several nodes. Each point is printed as it arrives, in
 * rccl-tests' columns (those of `llmsim collective`) plus the fastest
 * and slowest iteration and the check.
 *
 * Stored: a run per backend run (command "measure", the resolved system
 * it ran on as its config), its hello line (host, device, library and
 * versions, the command), every point, whether the stream ended with its
 * end line and the backend's error line. An interrupted measurement
 * (Ctrl-C) keeps and stores the points it has, marked incomplete. An
 * imported file may hold several runs (measure_proto.c: each hello opens
 * one): each is stored and printed as its own; a run cut short or ended
 * by an error line is said (a warning with its line) and kept.
 *
 * Exit status: 0; 1 runtime failure (a check failed, the backend died);
 * 2 bad input; 3 no device (no GPU or driver); 4 a library or the
 * backend is missing (RCCL/NCCL/BLAS not found, the backend not built).
 */
#include "cli.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/arena.h"
#include "base/diag.h"
#include "base/mem.h"
#include "base/units.h"
#include "config/config.h"
#include "config/schema.h"
#include "config/spec_system.h"
#include "measure.h"

#define MAX_ARGS 96

/* The ops and dtypes of the protocol (docs/measure.md). */
static const char *const ops[] = {
	"allreduce", "allgather", "reducescatter", "alltoall", "alltoallv",
	"broadcast", "reduce", "sendrecv", "gemm", "copy", NULL,
};
static const char *const dtypes[] = {
	"int8", "uint8", "int32", "uint32", "int64", "uint64", "half",
	"float", "double", "bfloat16", NULL,
};
static const char *const backends[] = {"mpi", "hip", "cuda", NULL};

enum { OUT_TABLE, OUT_CSV, OUT_JSON };

/* Sizes when --min / --max are not given. Collectives and copy: one
 * size, 32 MiB, as rccl-tests and nccl-tests (their -b and -e both
 * default to 32*1024*1024: NVIDIA/nccl-tests src/common.cu, "Command
 * line parameter defaults"), so a table diffs against theirs; the
 * command says so on stderr. gemm: squares of dimension 1024 to 16384
 * (5 at x2), the range docs/measure.md times; a 32M dimension would be
 * a 2^25-square matrix. */
#define DEFAULT_SIZE_B ((double)(32 << 20))
#define DEFAULT_GEMM_MIN 1024.0
#define DEFAULT_GEMM_MAX 16384.0

struct mopts {
	const char *backend, *op, *dtype, *system, *lib, *blas, *launcher;
	const char *db, *import;
	const char **sets;
	size_t nsets;
	double min_B, max_B, factor, budget_s;	/* sizes: 0 = not given */
	long ranks, iters, warmup, m, n, k;
	int fmt, store;
};

static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
	(void)sig;
	interrupted = 1;
}

static int in_list(const char *const *names, const char *s)
{
	size_t i;

	for (i = 0; names[i]; i++)
		if (strcmp(names[i], s) == 0)
			return 1;
	return 0;
}

/* A whole number >= lo into *out; CLI_OK or CLI_USAGE (reported). */
static int whole(const char *opt, const char *v, long lo, long *out)
{
	char *end;
	long x = strtol(v, &end, 10);

	if (end == v || *end || x < lo || x > (1L << 30))
		return cli_usage_error("measure", "%s: expected a whole number "
				       ">= %ld, got '%s'", opt, lo, v);
	*out = x;
	return CLI_OK;
}

static int size_opt(const char *opt, const char *v, double *out)
{
	const char *why;

	if (units_parse_test_size(v, out, &why) == 0) {
		if (*out >= 1)
			return CLI_OK;
		/* 0 never grows by --step-factor (and 0 is "not given") */
		why = "it must be at least 1";
	}
	return cli_usage_error("measure", "%s: expected a size such as '1K', "
			       "'8M' or '4096', got '%s' (%s)", opt, v, why);
}

static int number_opt(const char *opt, const char *v, double lo, double *out)
{
	char *end;
	double x = strtod(v, &end);

	if (end == v || *end || !isfinite(x) || x < lo)
		return cli_usage_error("measure", "%s: expected a number >= %g, "
				       "got '%s'", opt, lo, v);
	*out = x;
	return CLI_OK;
}

/* Options naming things. 1: not one of these. */
static int name_opt(struct mopts *o, const char *opt, const char *v)
{
	if (strcmp(opt, "--backend") == 0) {
		if (!in_list(backends, v))
			return cli_choice_error("measure", opt, v, backends);
		o->backend = v;
	} else if (strcmp(opt, "--op") == 0) {
		if (!in_list(ops, v))
			return cli_choice_error("measure", opt, v, ops);
		o->op = v;
	} else if (strcmp(opt, "--dtype") == 0) {
		if (!in_list(dtypes, v))
			return cli_choice_error("measure", opt, v, dtypes);
		o->dtype = v;
	} else if (strcmp(opt, "--system") == 0) {
		o->system = v;
	} else if (strcmp(opt, "--set") == 0) {
		o->sets[o->nsets++] = strncmp(v, "system.", 7) == 0 ? v + 7 : v;
	} else if (strcmp(opt, "--lib") == 0) {
		o->lib = v;
	} else if (strcmp(opt, "--blas") == 0) {
		o->blas = v;
	} else if (strcmp(opt, "--launcher") == 0) {
		o->launcher = v;
	} else if (strcmp(opt, "--db") == 0) {
		o->db = v;
	} else if (strcmp(opt, "--import") == 0) {
		o->import = v;
	} else {
		return 1;
	}
	return CLI_OK;
}

/* Options with numbers. 1: not one of these. */
static int num_opt(struct mopts *o, const char *opt, const char *v)
{
	if (strcmp(opt, "--min") == 0)
		return size_opt(opt, v, &o->min_B);
	if (strcmp(opt, "--max") == 0)
		return size_opt(opt, v, &o->max_B);
	if (strcmp(opt, "--step-factor") == 0)
		return number_opt(opt, v, 1, &o->factor);
	if (strcmp(opt, "--budget") == 0)
		return number_opt(opt, v, 1e-3, &o->budget_s);
	if (strcmp(opt, "--ranks") == 0)
		return whole(opt, v, 1, &o->ranks);
	if (strcmp(opt, "--iters") == 0)
		return whole(opt, v, 1, &o->iters);
	if (strcmp(opt, "--warmup") == 0)
		return whole(opt, v, 0, &o->warmup);
	if (strcmp(opt, "--m") == 0)
		return whole(opt, v, 1, &o->m);
	if (strcmp(opt, "--n") == 0)
		return whole(opt, v, 1, &o->n);
	if (strcmp(opt, "--k") == 0)
		return whole(opt, v, 1, &o->k);
	return 1;
}

static int one_opt(void *arg, const char *name, const char *v)
{
	struct mopts *o = arg;
	int rc;

	if (strcmp(name, "--json") == 0)
		o->fmt = OUT_JSON;
	else if (strcmp(name, "--csv") == 0)
		o->fmt = OUT_CSV;
	else if (strcmp(name, "--no-store") == 0)
		o->store = 0;
	else if ((rc = name_opt(o, name, v)) != 1 ||
		 (rc = num_opt(o, name, v)) != 1)
		return rc;
	return CLI_OK;
}

/* The sizes not given (0): see DEFAULT_SIZE_B. One bound alone
 * keeps the other's default unless that would put them out of order,
 * where it takes the given one's value (--min 64M: one size). */
static void default_sizes(struct mopts *o)
{
	int gemm = strcmp(o->op, "gemm") == 0;
	double lo = gemm ? DEFAULT_GEMM_MIN : DEFAULT_SIZE_B;
	double hi = gemm ? DEFAULT_GEMM_MAX : DEFAULT_SIZE_B;

	if (o->min_B <= 0 && o->max_B <= 0) {
		o->min_B = lo;
		o->max_B = hi;
		if (!gemm)
			fprintf(stderr, "llmsim measure: one size, 32 MiB "
				"(rccl-tests' default); --min and --max "
				"sweep sizes (e.g. --min 8 --max 8G)\n");
	} else if (o->min_B <= 0) {
		o->min_B = lo < o->max_B ? lo : o->max_B;
	} else if (o->max_B <= 0) {
		o->max_B = hi > o->min_B ? hi : o->min_B;
	}
}

/* The sizes the backend walks from --min to --max by --step-factor
 * (bk_main.c sweep: the same loop and rounding), counted up to one more
 * than it takes: it refused the 257th only after measuring 256. A GEMM
 * of given m, n and k is one. */
static int sizes_of(const struct mopts *o)
{
	double s;
	int n = 0;

	if (o->m && o->n && o->k && strcmp(o->op, "gemm") == 0)
		return 1;
	for (s = o->min_B; s <= o->max_B * (1 + 1e-12) &&
	     n <= MEASURE_BACKEND_SIZES; s *= o->factor) {
		n++;
		if (o->factor <= 1)
			break;
	}
	return n;
}

static int parse(struct mopts *o, int argc, char **argv)
{
	static const char *const valued[] = {
		"--backend", "--op", "--dtype", "--system", "--set", "--lib",
		"--blas", "--launcher", "--db", "--import", "--min", "--max",
		"--step-factor", "--budget", "--ranks", "--iters", "--warmup",
		"--m", "--n", "--k", NULL,
	};
	static const char *const flags[] = {
		"--json", "--csv", "--no-store", NULL,
	};
	int rc;

	rc = cli_getopt_named(argc, argv, "measure", valued, flags, one_opt, o);
	if (rc != CLI_OK)
		return rc;
	if (o->import)
		return CLI_OK;
	if (!o->backend || !o->op)
		return cli_usage_error("measure", "%s", "--backend and --op are "
				       "required (or --import FILE)");
	/* said here, before mpirun starts ranks that all refuse it
	 * (src/backend/mpi.c supports()) and print mpirun's abort notice */
	if (strcmp(o->backend, "mpi") == 0 && strcmp(o->op, "gemm") == 0)
		return cli_usage_error("measure", "%s", "the mpi backend does "
				       "not run gemm (it measures collectives "
				       "and copy on CPU hosts); gemm runs on "
				       "hip or cuda");
	if (o->min_B > 0 && o->max_B > 0 && o->min_B > o->max_B)
		return cli_usage_error("measure", "--min (%.0f B) is larger than "
				       "--max (%.0f B)", o->min_B, o->max_B);
	default_sizes(o);
	if (o->factor <= 1 && o->min_B != o->max_B)
		return cli_usage_error("measure", "%s", "--step-factor must be "
				       "above 1 to go from --min to --max");
	if (sizes_of(o) > MEASURE_BACKEND_SIZES)
		return cli_usage_error("measure", "--min %.0f B to --max %.0f B "
				       "by --step-factor %g is more than %d "
				       "sizes, a backend run's most: raise "
				       "--step-factor or narrow --min / --max",
				       o->min_B, o->max_B, o->factor,
				       MEASURE_BACKEND_SIZES);
	return CLI_OK;
}

/* ------------------------------------------------------------------ */
/* The backend's command line                                          */

struct argv_buf {
	char *v[MAX_ARGS + 1];
	int n;
	char text[MAX_ARGS][48];	/* numbers formatted here */
	char exe[PATH_MAX];
};

static void add(struct argv_buf *a, const char *s)
{
	if (a->n < MAX_ARGS)
		a->v[a->n++] = (char *)s;
	a->v[a->n] = NULL;
}

static void add_num(struct argv_buf *a, const char *opt, double x)
{
	add(a, opt);
	if (a->n < MAX_ARGS) {
		snprintf(a->text[a->n], sizeof(a->text[0]), "%.17g", x);
		add(a, a->text[a->n]);
	}
}

/* Words of a launcher string (split on spaces, in place of a copy). */
static int add_words(struct argv_buf *a, char *s)
{
	char *save = NULL, *w;

	for (w = strtok_r(s, " \t", &save); w; w = strtok_r(NULL, " \t", &save))
		add(a, w);
	return a->n;
}

/* The backends' folder: $LLMSIM_BACKEND_DIR, else backend/ beside the
 * running binary. */
static int backend_exe(const char *name, char *out, size_t len)
{
	const char *env = getenv("LLMSIM_BACKEND_DIR");
	char self[PATH_MAX];
	ssize_t n;
	char *slash;

	if (env && *env)
		return snprintf(out, len, "%s/llmsim-backend-%s", env, name) <
		       (int)len ? 0 : -1;
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return -1;
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (slash)
		*slash = '\0';
	return snprintf(out, len, "%s/backend/llmsim-backend-%s", self, name) <
	       (int)len ? 0 : -1;
}

/* The launcher words: --launcher, $LLMSIM_MPIRUN, or (mpi) mpirun with
 * what this host needs. */
static void launcher(struct argv_buf *a, const struct mopts *o, char *buf,
		     size_t len)
{
	const char *env = getenv("LLMSIM_MPIRUN");
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	if (o->launcher || (env && *env && strcmp(o->backend, "mpi") == 0)) {
		snprintf(buf, len, "%s", o->launcher ? o->launcher : env);
		add_words(a, buf);
	} else if (strcmp(o->backend, "mpi") == 0) {
		add(a, "mpirun");
		if (geteuid() == 0)
			add(a, "--allow-run-as-root");
		if (cpus > 0 && o->ranks > cpus)
			add(a, "--oversubscribe");
	} else {
		return;
	}
	if (strcmp(o->backend, "mpi") == 0 && !o->launcher &&
	    !(env && *env)) {
		add_num(a, "-n", (double)o->ranks);
	}
}

static void backend_args(struct argv_buf *a, const struct mopts *o)
{
	add(a, a->exe);
	add(a, "--op");
	add(a, o->op);
	add(a, "--dtype");
	add(a, o->dtype);
	add_num(a, "--min", o->min_B);
	add_num(a, "--max", o->max_B);
	add_num(a, "--step-factor", o->factor);
	add_num(a, "--iters", (double)o->iters);
	add_num(a, "--warmup", (double)o->warmup);
	add_num(a, "--budget", o->budget_s);
	if (strcmp(o->backend, "mpi") != 0 && o->ranks > 0)
		add_num(a, "--gpus", (double)o->ranks);
	if (o->m)
		add_num(a, "--m", (double)o->m);
	if (o->n)
		add_num(a, "--n", (double)o->n);
	if (o->k)
		add_num(a, "--k", (double)o->k);
	if (o->lib) {
		add(a, "--lib");
		add(a, o->lib);
	}
	if (o->blas) {
		add(a, "--blas");
		add(a, o->blas);
	}
}

/* The command as one line, for the store. */
static char *command_text(const struct argv_buf *a)
{
	size_t len = 1, i;
	char *s;

	for (i = 0; i < (size_t)a->n; i++)
		len += strlen(a->v[i]) + 1;
	if (!(s = mem_alloc(len)))
		return NULL;
	s[0] = '\0';
	for (i = 0; i < (size_t)a->n; i++) {
		strcat(s, a->v[i]);
		if (i + 1 < (size_t)a->n)
			strcat(s, " ");
	}
	return s;
}

/* ------------------------------------------------------------------ */
/* Running it                                                          */

/* Start argv with its stdout into *out; its pid or -1 (reported). */
static pid_t spawn(char *const *argv, FILE **out, struct diag *d)
{
	int fds[2];
	pid_t pid;

	if (pipe(fds) != 0) {
		diag_error(d, NULL, 0, 0, "pipe: %s", strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		diag_error(d, NULL, 0, 0, "fork: %s", strerror(errno));
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		setenv("LLMSIM_MEASURE", "1", 1);	/* errors once, by us */
		execvp(argv[0], argv);
		fprintf(stderr, "llmsim: error: cannot run %s: %s\n", argv[0],
			strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	if (!(*out = fdopen(fds[0], "r"))) {
		diag_error(d, NULL, 0, 0, "fdopen: %s", strerror(errno));
		close(fds[0]);
		return -1;
	}
	return pid;
}

/* A run's table ends with its summary once the run is over. */
static void run_footer(const struct mopts *o, const struct measure_log *m)
{
	if (o->fmt == OUT_TABLE && m->npts && m->have_hello) {
		measure_print_footer(stdout, m);
		fflush(stdout);
	}
}

/* Read protocol lines from f until its end, printing points as they
 * come, a table a run. 0, or -1 after reporting a bad line. */
static int read_lines(FILE *f, const char *where, struct measure_stream *s,
		      const struct mopts *o, struct diag *d)
{
	struct measure_log *m;
	char *line = NULL;
	size_t cap = 0;
	int rc = 0, r, opened;

	while (getline(&line, &cap, f) > 0) {
		r = measure_stream_line(s, line, where, &opened, d);
		if (opened && s->n >= 2) {
			run_footer(o, s->runs[s->n - 2]);
			if (o->fmt == OUT_TABLE && s->runs[s->n - 2]->npts)
				putchar('\n');
		}
		if (r < 0) {
			rc = -1;
			/* a file of another protocol: said once, not a line
			 * at a time; a backend is drained (it must not block) */
			if (o->import && s->runs[s->n - 1]->foreign)
				break;
			continue;
		}
		/* the table's header is the hello's: a point before it (an
		 * imported file without one, refused) is not printed */
		m = s->runs[s->n - 1];
		if (r == MEASURE_POINT && o->fmt == OUT_TABLE &&
		    m->have_hello) {
			if (m->npts == 1)
				measure_print_header(stdout, m, o->op);
			measure_print_point(stdout, &m->pts[m->npts - 1]);
			fflush(stdout);
		}
	}
	free(line);
	return rc;
}

/* The last run that reported an error (NULL: none). */
static const struct measure_log *err_run(const struct measure_stream *s)
{
	size_t i;

	for (i = s->n; i-- > 0;)
		if (s->runs[i]->err_status)
			return s->runs[i];
	return NULL;
}

/* The backend's exit status as llmsim's. */
static int status_of(int ws, const struct measure_stream *s, const char *exe,
		     struct diag *d)
{
	const struct measure_log *e = err_run(s);
	int code;

	if (interrupted)
		return CLI_FAIL;
	if (!WIFEXITED(ws)) {
		diag_error(d, NULL, 0, 0, "%s died (signal %d)", exe,
			   WIFSIGNALED(ws) ? WTERMSIG(ws) : 0);
		return CLI_FAIL;
	}
	code = WEXITSTATUS(ws);
	if (code == 127) {
		diag_error(d, NULL, 0, 0, "%s could not start: its launcher or "
			   "a runtime library it links (libamdhip64, libmpi) is "
			   "missing", exe);
		return CLI_NO_LIBRARY;
	}
	if (code == 0 && measure_stream_points(s) == 0) {
		diag_error(d, NULL, 0, 0, "%s measured nothing", exe);
		return CLI_FAIL;
	}
	/* a failure with no error line (a launcher's own failure, a
	 * backend killed by hand) must not pass silently: say so */
	if (code != 0 && !(e && e->err_msg && e->err_msg[0]))
		diag_error(d, NULL, 0, 0, "%s exited with status %d and no "
			   "error line (anything it wrote on stderr is above)",
			   exe, code);
	if (code == 0 || (code >= 1 && code <= 4))
		return code;
	return e ? e->err_status : CLI_FAIL;
}

static int run_backend(const struct mopts *o, struct measure_stream *s,
		       char **cmd, struct diag *d)
{
	const struct measure_log *e;
	struct argv_buf *a = mem_calloc(1, sizeof(*a));
	char words[1024];
	struct sigaction sa, old;
	FILE *f = NULL;
	pid_t pid;
	int ws = 0, rc;

	if (!a) {
		diag_oom(d);
		return CLI_FAIL;
	}
	if (backend_exe(o->backend, a->exe, sizeof(a->exe)) != 0 ||
	    access(a->exe, X_OK) != 0) {
		diag_error(d, NULL, 0, 0, "the %s backend is not built (%s): "
			   "its compiler (%s) was missing when llmsim was built; "
			   "install it (scripts/install-deps.sh) and run make",
			   o->backend, a->exe, strcmp(o->backend, "mpi") == 0 ?
			   "mpicc" : strcmp(o->backend, "hip") == 0 ? "hipcc" :
			   "nvcc");
		mem_free(a);
		return CLI_NO_LIBRARY;
	}
	launcher(a, o, words, sizeof(words));
	backend_args(a, o);
	*cmd = command_text(a);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_interrupt;
	sigaction(SIGINT, &sa, &old);
	pid = spawn(a->v, &f, d);
	rc = pid < 0 ? CLI_FAIL : read_lines(f, a->exe, s, o, d);
	/* Interrupted: the read stopped (EINTR); stop the backend too, if
	 * the signal reached only us, and keep what it measured. */
	if (interrupted && pid > 0)
		kill(pid, SIGINT);
	if (f)
		fclose(f);
	if (pid > 0)
		while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
			;
	sigaction(SIGINT, &old, NULL);
	if (pid > 0)
		rc = rc ? CLI_FAIL : status_of(ws, s, a->exe, d);
	if ((e = err_run(s)) && e->err_msg && e->err_msg[0] && rc != CLI_OK)
		diag_error(d, NULL, 0, 0, "%s backend: %s", o->backend,
			   e->err_msg);
	mem_free(a);
	return rc;
}

/* A run of an imported stream that is refused (the file is then
 * refused whole): points with no hello before them, an end line whose
 * count is not the run's. CLI_OK or CLI_USAGE (reported). */
static int import_refused(const char *file, const struct measure_log *m,
			  struct diag *d)
{
	/* (a hello that was refused failed the read before this) */
	if (!m->have_hello && m->first_point_line) {
		diag_error(d, file, (int)m->first_point_line, 0, "a point "
			   "with no hello line before it: each backend run "
			   "opens with its hello (docs/measure.md)");
		return CLI_USAGE;
	}
	if (m->ended && !m->have_hello && !m->err_status) {
		diag_error(d, file, (int)m->end_line, 0, "an end line with no "
			   "hello line before it (docs/measure.md)");
		return CLI_USAGE;
	}
	if (m->ended && !isnan(m->end_points) &&
	    m->end_points != (double)m->npts) {
		diag_error(d, file, (int)m->end_line, 0, "the end line counts "
			   "%g point%s, the run of line %u has %u: lines were "
			   "lost or added", m->end_points,
			   m->end_points == 1 ? "" : "s", m->hello_line,
			   m->npts);
		return CLI_USAGE;
	}
	return CLI_OK;
}

/* Say what a run that is kept lacks: an error line from the backend, no
 * end line (killed, or the file cut), no point. */
static void import_warn(const char *file, const struct measure_log *m,
			struct diag *d)
{
	char err[512];

	measure_run_error(m, err, sizeof(err));
	if (!m->have_hello && err[0])
		diag_warn(d, file, (int)m->err_line, 0, "a backend run that "
			  "stopped before its hello line, measuring nothing: "
			  "%s", err);
	else if (m->have_hello && err[0])
		diag_warn(d, file, (int)m->err_line, 0, "the backend stopped "
			  "at an error after %u point%s (run of line %u): %s%s",
			  m->npts, m->npts == 1 ? "" : "s", m->hello_line, err,
			  m->npts ? "; its points are stored, the run marked "
			  "incomplete" : "; nothing to store");
	else if (m->have_hello && !m->ended)
		diag_warn(d, file, (int)m->lines, 0, "the run of line %u stops "
			  "after %u point%s with no end line (the backend was "
			  "killed or the file cut)%s", m->hello_line, m->npts,
			  m->npts == 1 ? "" : "s", m->npts ? ": stored, marked "
			  "incomplete" : "");
	else if (m->have_hello && m->npts == 0)
		diag_warn(d, file, (int)m->lines, 0, "no point after the hello "
			  "line (line %u): nothing to store for this run",
			  m->hello_line);
}

/* An imported stream holds runs, each a hello line, then points: else
 * an error at the line where the hello was due (the first point; else
 * the last line read, line 1 of an empty file) or, with no point in any
 * run, at the last line. */
static int import_complete(const char *file, const struct measure_stream *s,
			   struct diag *d)
{
	const struct measure_log *first = s->runs[0];
	int last = s->lines ? (int)s->lines : 1, rc = CLI_OK;
	size_t i, hellos = 0;

	if (s->lines == 0) {
		diag_error(d, file, 1, 0, "expected a hello line, then points "
			   "(docs/measure.md), got an empty file");
		return CLI_USAGE;
	}
	for (i = 0; i < s->n && rc == CLI_OK; i++)
		rc = import_refused(file, s->runs[i], d);
	if (rc != CLI_OK)
		return rc;
	for (i = s->n; i-- > 0;)
		if (s->runs[i]->have_hello) {
			hellos++;
			first = s->runs[i];
		}
	if (measure_stream_points(s) == 0) {
		for (i = 0; i < s->n; i++)
			if (s->runs[i]->err_status)
				import_warn(file, s->runs[i], d);
		if (!hellos)
			diag_error(d, file, last, 0, "expected a hello line, "
				   "then points (docs/measure.md), got neither "
				   "in %u line%s", s->lines,
				   s->lines == 1 ? "" : "s");
		else
			diag_error(d, file, last, 0, "no point after the hello "
				   "line (line %u): nothing measured "
				   "(docs/measure.md)", first->hello_line);
		return CLI_USAGE;
	}
	for (i = 0; i < s->n; i++)
		import_warn(file, s->runs[i], d);
	return CLI_OK;
}

static int import(const struct mopts *o, struct measure_stream *s,
		  struct diag *d)
{
	FILE *f = strcmp(o->import, "-") == 0 ? stdin : fopen(o->import, "r");
	FILE *t = NULL;
	unsigned *src_line = NULL;
	int rc, err;

	if (!f) {
		diag_error(d, o->import, 0, 0, "cannot read: %s",
			   strerror(errno));
		return CLI_USAGE;
	}
	/* nccl-tests' own text is converted (measure_nccl.c) */
	rc = measure_nccl_text(f, o->import, o->op, &t, &src_line, &s->nsrc,
			       d);
	err = ferror(f) ? errno : 0;	/* a directory: EISDIR */
	if (f != stdin)
		fclose(f);
	if (rc == 0) {
		/* messages cite the file's lines, not the converted
		 * stream's (its hello was "line 1", its points 2, 3, ...) */
		s->src_line = src_line;
		rc = read_lines(t, o->import, s, o, d);
		fclose(t);
	}
	s->src_line = NULL;
	s->nsrc = 0;
	mem_free(src_line);
	if (rc != 0)
		return d->oom ? CLI_FAIL : CLI_USAGE;
	if (err) {
		diag_error(d, o->import, 0, 0, "cannot read: %s",
			   strerror(err));
		return CLI_USAGE;
	}
	return import_complete(o->import, s, d);
}

/* ------------------------------------------------------------------ */
/* Storing                                                             */

static char *sets_json(const struct mopts *o)
{
	cJSON *a = cJSON_CreateArray();
	char *s = NULL;
	size_t i;

	for (i = 0; a && i < o->nsets; i++)
		if (!cJSON_AddItemToArray(a, cJSON_CreateString(o->sets[i])))
			break;
	if (a && i == o->nsets)
		s = cJSON_PrintUnformatted(a);
	cJSON_Delete(a);
	return s;
}

static int store_log(const struct mopts *o, const char *data_root,
		     const struct system_spec *s, struct measure_log *m,
		     const char *cmd, struct diag *d)
{
	char *sets = sets_json(o), *json = cJSON_PrintUnformatted(m->points);
	char err[512];
	struct cli_result r = { .command = "measure", .json = json,
				.meas_info = &m->info, .meas = m->pts,
				.nmeas = m->npts };
	int rc = CLI_FAIL;

	if (!sets || !json) {
		diag_oom(d);
		goto out;
	}
	m->info.system = o->system ? o->system : "";
	m->info.sets_json = sets;
	m->info.command = cmd ? cmd : o->import ? o->import : "";
	m->info.incomplete = measure_run_incomplete(m);
	measure_run_error(m, err, sizeof(err));
	m->info.error = err;
	if (s) {
		r.schema = &system_schema;
		r.config = s;
	} else {
		r.kind = "system";
		r.config_json = "{}";
	}
	rc = cli_store(o->db, data_root, &r, d);
out:
	m->info.system = m->info.sets_json = m->info.command = NULL;
	m->info.error = NULL;
	cJSON_free(sets);
	cJSON_free(json);
	return rc;
}

/* The system the measurement ran on: --system, or for mpi the shipped
 * CPU host. NULL in *s when there is none (a GPU run without
 * --system: stored, not predictable). CLI status. */
static int load_system(struct mopts *o, struct config_ctx *cx,
		       struct system_spec **s)
{
	*s = NULL;
	if (!o->system && o->backend && strcmp(o->backend, "mpi") == 0)
		o->system = "cpu-host";
	if (!o->system)
		return CLI_OK;
	if (!(*s = arena_alloc(cx->arena, sizeof(**s)))) {
		diag_oom(cx->diag);
		return CLI_FAIL;
	}
	if (config_load(cx, &system_schema, o->system, o->sets, o->nsets, *s))
		return cx->diag->oom ? CLI_FAIL : CLI_USAGE;
	return CLI_OK;
}

/* Every run's points as one JSON array or CSV table (each point names
 * its op; the table's summary of the last run). */
static void output(const struct mopts *o, struct measure_stream *st)
{
	size_t i;

	if (o->fmt == OUT_JSON) {
		cJSON *all = cJSON_CreateArray(), *p;
		char *s;

		for (i = 0; all && i < st->n; i++)
			cJSON_ArrayForEach(p, st->runs[i]->points)
				cJSON_AddItemReferenceToArray(all, p);
		if (all && (s = cJSON_Print(all))) {
			printf("%s\n", s);
			cJSON_free(s);
		}
		cJSON_Delete(all);
	} else if (o->fmt == OUT_CSV) {
		for (i = 0; i < st->n; i++)
			measure_print_csv(stdout, st->runs[i], i == 0);
	} else {
		run_footer(o, st->runs[st->n - 1]);
	}
}

/* An imported file without --system: the shipped CPU host when every
 * run in it is the mpi backend's (else stored, not predictable). */
static int import_system(struct mopts *o, struct config_ctx *cx,
			 const struct measure_stream *st,
			 struct system_spec **s)
{
	size_t i, mpi = 0, runs = 0;

	for (i = 0; i < st->n; i++)
		if (st->runs[i]->have_hello && st->runs[i]->npts) {
			runs++;
			mpi += strcmp(st->runs[i]->info.backend, "mpi") == 0;
		}
	if (o->system || !runs || mpi != runs)
		return CLI_OK;
	o->backend = "mpi";
	return load_system(o, cx, s);
}

/* Store every run that has a hello and points; CLI status. */
static int store_runs(const struct mopts *o, const char *data_root,
		      const struct system_spec *s, struct measure_stream *st,
		      const char *cmd, struct diag *d)
{
	size_t i;
	int rc;

	for (i = 0; i < st->n; i++) {
		struct measure_log *m = st->runs[i];

		if (!m->npts || !m->have_hello)
			continue;
		if ((rc = store_log(o, data_root, s, m, cmd, d)) != CLI_OK)
			return rc;
	}
	return CLI_OK;
}

int cli_measure(int argc, char **argv, const char *argv0)
{
	struct mopts o = { .dtype = "float", .factor = 2, .budget_s = 2,
			   .ranks = 0, .iters = 20, .warmup = 5,
			   .fmt = OUT_TABLE, .store = 1 };
	struct measure_stream st = { 0 };
	struct system_spec *s = NULL;
	struct config_ctx cx;
	struct arena a;
	struct diag d;
	char *cmd = NULL;
	uint32_t npts;
	int rc, src;

	arena_init(&a);
	diag_init(&d, stderr);
	o.sets = arena_alloc(&a, (size_t)argc * sizeof(*o.sets));
	cx = (struct config_ctx){ &a, &d, config_data_root(&a, argv0) };
	if (!o.sets || !cx.data_root) {
		diag_oom(&d);
		rc = CLI_FAIL;
		goto out;
	}
	if (measure_stream_init(&st, &d) != 0) {
		rc = CLI_FAIL;
		goto out;
	}
	if ((rc = parse(&o, argc, argv)) != CLI_OK)
		goto out;
	if (o.backend && strcmp(o.backend, "mpi") == 0 && o.ranks == 0)
		o.ranks = 2;
	if ((rc = load_system(&o, &cx, &s)) != CLI_OK)
		goto out;
	rc = o.import ? import(&o, &st, &d) : run_backend(&o, &st, &cmd, &d);
	if (o.import && rc == CLI_OK)
		rc = import_system(&o, &cx, &st, &s);
	output(&o, &st);
	npts = measure_stream_points(&st);
	if (interrupted)
		fprintf(stderr, "llmsim: interrupted after %u points\n", npts);
	/* a measurement keeps what it has (a bad line, Ctrl-C); a file
	 * with a bad line is refused whole, as any bad input */
	if (o.store && npts && !(o.import && rc != CLI_OK) &&
	    (src = store_runs(&o, cx.data_root, s, &st, cmd, &d)) != CLI_OK &&
	    rc == CLI_OK)
		rc = src;
out:
	mem_free(cmd);
	if (st.runs)
		measure_stream_release(&st);
	arena_release(&a);
	return rc;
}
