/*
 * cli_validate.c - `llmsim validate`: predict every reference case and
 * every stored measurement, print predicted against measured with the
 * error of each row, per-table and overall summaries (median signed and
 * absolute error, p90, max; in-sample rows apart from independent
 * ones), store the rows (v_validation), and exit 1 when a table misses
 * its gates (results/reference/validate.yaml).
 *
 *   llmsim validate [--kind K[,K]...] [--reference DIR] [--db PATH]
 *                   [--run N] [--system S] [--gates SET] [--tolerance P]
 *                   [--set KEY=VALUE]... [--fastest] [--jobs N] [--quiet]
 *                   [--no-store]
 *
 * --set overrides a key of every kernel set's GPU preset, as `llmsim
 * run --set` does (--set gemm_efficiency_dtype.fp8=0.7): the what-if
 * behind fitting a GPU's efficiencies (configs/gpus/README.md).
 *
 * Exit status: 0 every gate met; 1 a gate missed, a case failed to run
 * or the database could not be opened (missing with --no-store, not a
 * database, a newer schema: as `db views`, `report` and `calibrate`);
 * 2 bad input (a bad reference file or option, --kind measured on a
 * database without measurements).
 */
#include "cli.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <signal.h>
#include <unistd.h>

#include "base/arena.h"
#include "base/diag.h"
#include "base/mem.h"
#include "config/cnode.h"
#include "config/config.h"
#include "store/store.h"
#include "calib/valid.h"

struct vopts {
	int kinds[VK_COUNT];		/* 1: validate this kind */
	int explicit_kinds;
	const char *reference;		/* folder; NULL: DATA_ROOT/results/reference */
	const char *db;
	const char *system;
	const char *gates;		/* gate set name */
	double tolerance;		/* fraction; NaN: the gate file's */
	int64_t run;
	int use_min, jobs, quiet, store;
	int db_failed;			/* the database failed to open (exit
					 * 1; a file that is no results
					 * database is bad input, exit 2) */
	const char **sets;		/* --set for the kernel sets' GPUs */
	size_t nsets;
};

/* --kind K[,K]...: every item a kind or all; an empty list or item is
 * refused (strtok skipped them: --kind , ran no table and passed). */
static int parse_kinds(struct vopts *o, const char *v)
{
	char buf[128], *rest, *k;
	int i;

	if (strlen(v) >= sizeof(buf))
		return cli_usage_error("validate", "--kind: a list of at most "
				       "%zu characters, got %zu", sizeof(buf) - 1,
				       strlen(v));
	snprintf(buf, sizeof(buf), "%s", v);
	memset(o->kinds, 0, sizeof(o->kinds));
	o->explicit_kinds = 1;
	for (rest = buf; (k = strsep(&rest, ",")) != NULL;) {
		if (!*k)
			return cli_usage_error("validate", "--kind: an empty "
					       "kind in '%s'", v);
		if (strcmp(k, "all") == 0) {
			for (i = 0; i < VK_COUNT; i++)
				o->kinds[i] = 1;
			o->explicit_kinds = 0;
			continue;
		}
		for (i = 0; i < VK_COUNT; i++)
			if (strcmp(k, valid_kind_names[i]) == 0)
				break;
		if (i == VK_COUNT)
			return cli_usage_error("validate", "--kind: expected "
					       "kernel, collective, training, "
					       "moe, cp, dispatch, measured, "
					       "inference, latency or "
					       "all; got '%s'", k);
		o->kinds[i] = 1;
	}
	return CLI_OK;
}

static int parse_pct(const char *opt, const char *v, double *out)
{
	char *end;
	double x = strtod(v, &end);

	if (end == v || (*end && strcmp(end, "%") != 0) || !(x > 0) || x > 1000)
		return cli_usage_error("validate", "%s: expected a percentage "
				       "such as '15%%', got '%s'", opt, v);
	/* a bare 0.15 was read as 0.15 %, where plan's --headroom reads a
	 * bare number as a fraction: the sign says which */
	if (!*end)
		return cli_usage_error("validate", "%s: write the percentage "
				       "with its sign, '%s%%' (a bare number "
				       "is ambiguous: 0.15 could mean 15 %%)",
				       opt, v);
	*out = x / 100;
	return CLI_OK;
}

static int one_opt(void *arg, const char *name, const char *v)
{
	struct vopts *o = arg;
	char *end;

	if (strcmp(name, "--kind") == 0)
		return parse_kinds(o, v);
	if (strcmp(name, "--set") == 0)
		o->sets[o->nsets++] = strncmp(v, "gpu.", 4) == 0 ? v + 4 : v;
	else if (strcmp(name, "--reference") == 0)
		o->reference = v;
	else if (strcmp(name, "--db") == 0)
		o->db = v;
	else if (strcmp(name, "--system") == 0)
		o->system = v;
	else if (strcmp(name, "--gates") == 0)
		o->gates = v;
	else if (strcmp(name, "--tolerance") == 0)
		return parse_pct("--tolerance", v, &o->tolerance);
	else if (strcmp(name, "--run") == 0) {
		/* an id past a long long was saturated to LLONG_MAX and
		 * "run 9223372036854775807 is not a measure run" named
		 * another id */
		errno = 0;
		o->run = strtoll(v, &end, 10);
		if (*end || o->run < 1 || errno == ERANGE)
			return cli_usage_error("validate", "--run: expected a "
					       "run id, got '%s'", v);
	} else if (strcmp(name, "--jobs") == 0) {
		long jobs = strtol(v, &end, 10);

		/* every character read: atoi took '2x' as 2 */
		o->jobs = end == v || *end || jobs < 1 || jobs > 16 ? 0 :
			  (int)jobs;
		if (o->jobs == 0)
			return cli_usage_error("validate", "--jobs: expected 1 "
					       "to 16, got '%s'", v);
	} else if (strcmp(name, "--fastest") == 0)
		o->use_min = 1;
	else if (strcmp(name, "--quiet") == 0)
		o->quiet = 1;
	else if (strcmp(name, "--no-store") == 0)
		o->store = 0;
	return CLI_OK;
}

static int parse(struct vopts *o, int argc, char **argv)
{
	static const char *const valued[] = {
		"--kind", "--set", "--reference", "--db", "--system", "--gates",
		"--tolerance", "--run", "--jobs", NULL,
	};
	static const char *const flags[] = {
		"--fastest", "--quiet", "--no-store", NULL,
	};
	int rc;

	rc = cli_getopt_named(argc, argv, "validate", valued, flags, one_opt,
			      o);
	if (rc != CLI_OK)
		return rc;
	if ((o->run || o->system || o->use_min) && !o->kinds[VK_MEASURED])
		return cli_usage_error("validate", "%s", "--run, --system and "
				       "--fastest apply to measured tables "
				       "(--kind measured)");
	if (o->nsets > 0 && !o->kinds[VK_KERNEL])
		return cli_usage_error("validate", "%s", "--set applies to the "
				       "kernel sets' GPUs (--kind kernel); "
				       "predict measurements on another "
				       "system with --system FILE");
	return CLI_OK;
}

/* ---- gates ---------------------------------------------------------- */

static double pct(const struct cnode *m, const char *key)
{
	const struct cnode *v = cnode_get(m, key);
	char *end;
	double x;

	if (!v || v->kind != CNODE_SCALAR)
		return NAN;
	x = strtod(v->text, &end);
	return end != v->text && strcmp(end, "%") == 0 ? x / 100 : -1;
}

static const char *const gate_keys[] = {
	"median_abs", "median_abs_large", "bias_abs", "max_abs", NULL,
};

/* The gate set `name` from FILE into g[kind]; 0, or -1 after reporting. */
static int load_gates(struct config_ctx *cx, const char *file,
		      const char *name, double tolerance,
		      struct valid_gate g[VK_COUNT])
{
	const struct cnode *doc = cnode_load_yaml(cx->arena, file, cx->diag);
	const struct cnode *set = doc ? cnode_get(doc, name) : NULL;
	int k;

	if (!doc)
		return -1;
	if (!set || set->kind != CNODE_MAP) {
		diag_error(cx->diag, file, 0, 0, "no gate set '%s' (targets, "
			   "regression, ...)", name);
		return -1;
	}
	/* every key a kind and every gate a known one: a typo ('colective',
	 * 'max_ab') or a kind given a scalar dropped its gate without a
	 * word, and validate passed it */
	if (valid_check_keys(set, valid_kind_names, "gate set", cx->diag) < 0)
		return -1;
	for (k = 0; k < VK_COUNT; k++) {
		const struct cnode *m = cnode_get(set, valid_kind_names[k]);

		g[k] = (struct valid_gate){ NAN, NAN, NAN, NAN };
		if (m && m->kind != CNODE_MAP) {
			cnode_error(cx->diag, m, "'%s.%s': expected a mapping "
				    "of gates such as {median_abs: 15%%}", name,
				    valid_kind_names[k]);
			return -1;
		}
		if (m && valid_check_keys(m, gate_keys, "kind's gate mapping",
					  cx->diag) < 0)
			return -1;
		if (m && m->kind == CNODE_MAP) {
			g[k].median_abs = pct(m, "median_abs");
			g[k].median_abs_large = pct(m, "median_abs_large");
			g[k].bias_abs = pct(m, "bias_abs");
			g[k].max_abs = pct(m, "max_abs");
		}
		if (g[k].median_abs < 0 || g[k].median_abs_large < 0 ||
		    g[k].bias_abs < 0 || g[k].max_abs < 0) {
			diag_error(cx->diag, m->file, m->line, m->col, "'%s.%s': "
				   "expected percentages such as '15%%'", name,
				   valid_kind_names[k]);
			return -1;
		}
		if (!isnan(tolerance))
			g[k].median_abs = tolerance;
	}
	return 0;
}

/* ---- storing -------------------------------------------------------- */

static char *options_json(const struct vopts *o, const char *ref)
{
	cJSON *j = cJSON_CreateObject(), *k = cJSON_AddArrayToObject(j, "kinds");
	char *s = NULL;
	int i;

	for (i = 0; k && i < VK_COUNT; i++)
		if (o->kinds[i])
			cJSON_AddItemToArray(k, cJSON_CreateString(valid_kind_names[i]));
	if (j && cJSON_AddStringToObject(j, "reference", ref) &&
	    cJSON_AddStringToObject(j, "gates", o->gates) &&
	    (isnan(o->tolerance) ||
	     cJSON_AddNumberToObject(j, "tolerance", o->tolerance)) &&
	    cJSON_AddNumberToObject(j, "run", (double)o->run) &&
	    cJSON_AddStringToObject(j, "system", o->system ? o->system : "") &&
	    cJSON_AddStringToObject(j, "time", o->use_min ? "fastest" :
				    "median"))
		s = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	return s;
}

static int store_set(const struct vopts *o, const char *ref,
		     const char *data_root, const struct valid_set *set,
		     struct diag *d)
{
	struct store_valid_row *rows;
	size_t i, j, n = 0, total = 0;
	char *cfg = options_json(o, ref);
	struct cli_result r = { .command = "validate", .kind = "validate",
				.config_json = cfg };
	int rc = CLI_FAIL;

	for (i = 0; i < set->n; i++)
		total += set->t[i].n;
	rows = mem_calloc(total + 1, sizeof(*rows));
	if (!rows || !cfg) {
		diag_oom(d);
		goto out;
	}
	for (i = 0; i < set->n; i++)
		for (j = 0; j < set->t[i].n; j++) {
			const struct valid_table *t = &set->t[i];
			const struct valid_row *v = &t->rows[j];

			if (!isfinite(v->error))
				continue;	/* no prediction */
			rows[n++] = (struct store_valid_row){
				valid_kind_names[t->kind], t->id, v->label,
				t->unit, v->measured, v->predicted, v->error,
				v->scored, v->in_sample, v->lo, v->hi };
		}
	r.valid = rows;
	r.nvalid = (uint32_t)n;
	r.json = "{}";
	rc = cli_store(o->db, data_root, &r, d);
out:
	mem_free(rows);
	cJSON_free(cfg);
	return rc;
}

/* ---- the command ---------------------------------------------------- */

/* Measured tables from the database: --db, else the default one when it
 * exists. Asked for (--kind measured), none is bad input; as part of
 * all, none is nothing to do. */
static int measured(struct vopts *o, struct config_ctx *cx,
		    struct valid_set *set)
{
	char *path = o->db ? (char *)o->db :
		     arena_printf(cx->arena, "%s/results/llmsim.db",
				  cx->data_root);
	struct valid_meas_opts mo = { o->run, o->system, o->use_min, path };
	char real[PATH_MAX];
	struct store *st;
	int rc, bad;

	if (!path) {
		diag_oom(cx->diag);
		return -1;
	}
	if (!o->explicit_kinds && access(path, R_OK) != 0)
		return 0;
	/* --no-store touches no database: read-only, so a missing file is
	 * an error and stays missing, and an old one is not migrated */
	bad = 0;
	st = o->store ? store_open(path, cx->diag) :
			store_open_reader(path, cx->diag, &bad);
	if (!st) {	/* a runtime failure, unless the file is at fault */
		o->db_failed = !bad;
		return -1;
	}
	/* Calibrations name their runs by the database's real path. */
	if (realpath(path, real))
		mo.db = real;
	rc = valid_measured(set, cx, st, &mo);
	store_close(st);
	if (rc == 0 && o->explicit_kinds) {
		diag_error(cx->diag, path, 0, 0, "the database holds no "
			   "measurements (llmsim measure stores them)");
		return -1;
	}
	return rc < 0 ? -1 : 0;
}

/* ---- interruption --------------------------------------------------
 * SIGINT or SIGTERM: one line saying what was running and what was
 * printed (a kind's tables print, flushed, when its last case has run:
 * the kinds that finished before the signal are on stdout, without the
 * summary) and that nothing was stored (a store is one transaction),
 * then death by the signal (exit 130 or 143), as plan and sweep do. */

enum { VSTAGE_CASES, VSTAGE_PRINT, VSTAGE_STORE };

static volatile sig_atomic_t vstage, vkind, vprinted;
static pid_t validate_pid;	/* forked training workers die silently */

static void say(const char *s)
{
	(void)!write(STDERR_FILENO, s, strlen(s));
}

static void on_stop(int sig)
{
	if (getpid() == validate_pid) {
		if (vstage == VSTAGE_CASES) {
			say("\nllmsim validate: interrupted while running the ");
			say(vkind >= 0 && vkind < VK_COUNT ?
			    valid_kind_names[vkind] : "?");
			say(vprinted ? " cases; the tables of the kinds "
			    "before it are printed (no summary); nothing was "
			    "stored\n" : " cases; nothing was printed or "
			    "stored\n");
		} else if (vstage == VSTAGE_PRINT) {
			say("\nllmsim validate: interrupted while printing the "
			    "tables; nothing was stored\n");
		} else {
			say("\nllmsim validate: interrupted while storing the "
			    "rows (a store is one transaction: all or "
			    "nothing)\n");
		}
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Catch the stop signals (one ignored when we started, as in a
 * background job of a script, stays ignored). */
static void catch_stops(void)
{
	static const int sigs[] = { SIGINT, SIGTERM };
	struct sigaction sa, old;
	size_t i;

	vstage = VSTAGE_CASES;
	vkind = VK_KERNEL;
	vprinted = 0;
	validate_pid = getpid();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		sigaction(sigs[i], NULL, &old);
		if (old.sa_handler != SIG_IGN)
			sigaction(sigs[i], &sa, NULL);
	}
}

/* Print the tables from *from on (those a kind just added) and flush
 * them: an interrupted run keeps what finished. Counts the missed gates
 * in *missed. */
static void print_new(const struct vopts *o, const struct valid_set *set,
		      const struct valid_gate g[VK_COUNT], size_t *from,
		      int *missed)
{
	FILE *null = o->quiet ? fopen("/dev/null", "w") : NULL;

	for (; *from < set->n; ++*from) {
		const struct valid_table *t = &set->t[*from];
		int m = valid_print_table(o->quiet && null ? null : stdout, t,
					  &g[t->kind]);

		if (m && o->quiet)	/* a miss is always shown */
			valid_print_table(stdout, t, &g[t->kind]);
		*missed += m;
	}
	if (null)
		fclose(null);
	fflush(stdout);
	vprinted = *from > 0;
}

static int gather(struct vopts *o, struct config_ctx *cx, const char *ref,
		  struct valid_set *set, const struct valid_gate g[VK_COUNT],
		  int *missed)
{
	char *dir;
	int k, rc = 0;
	size_t from = 0;


	static const char *const sub[] = {"kernels", "collectives",
					  "training", "moe", "cp", "ep"};

	for (k = 0; k <= VK_DISPATCH && rc == 0; k++) {
		if (!o->kinds[k])
			continue;
		vkind = k;
		if (!(dir = arena_printf(cx->arena, "%s/%s", ref, sub[k]))) {
			diag_oom(cx->diag);
			return -1;
		}
		rc = k == VK_TRAINING || k == VK_MOE || k == VK_CP ?
		     valid_training(set, cx, dir, o->jobs, (enum valid_kind)k) :
		     k == VK_DISPATCH ? valid_dispatch(set, cx, dir) :
		     k == VK_KERNEL ? valid_kernels(set, cx, dir, o->sets,
						    o->nsets) :
		     valid_collectives(set, cx, dir);
		if (rc == 0)
			print_new(o, set, g, &from, missed);
	}
	if (rc == 0 && (o->kinds[VK_INFERENCE] || o->kinds[VK_LATENCY])) {
		if (!(dir = arena_printf(cx->arena, "%s/inference", ref))) {
			diag_oom(cx->diag);
			return -1;
		}
		vkind = o->kinds[VK_INFERENCE] ? VK_INFERENCE : VK_LATENCY;
		rc = valid_inference(set, cx, dir, o->jobs,
				     o->kinds[VK_INFERENCE],
				     o->kinds[VK_LATENCY]);
		if (rc == 0)
			print_new(o, set, g, &from, missed);
	}
	if (rc == 0 && o->kinds[VK_MEASURED]) {
		vkind = VK_MEASURED;
		rc = measured(o, cx, set);
		if (rc == 0)
			print_new(o, set, g, &from, missed);
	}
	return rc;
}

/* Print the summary (the tables printed as their kinds finished); 1
 * when a gate missed. */
static int report(const struct vopts *o, const struct valid_set *set,
		  int missed)
{
	valid_print_summary(stdout, set);
	if (missed)
		printf("  gates (%s): %d table%s MISSED\n", o->gates, missed,
		       missed == 1 ? "" : "s");
	else
		printf("  gates (%s): every table met them\n", o->gates);
	return missed > 0;
}

int cli_validate(int argc, char **argv, const char *argv0)
{
	struct vopts o = { .gates = "targets", .tolerance = NAN, .jobs = 2,
			   .store = 1 };
	struct valid_gate g[VK_COUNT];
	struct valid_set set;
	struct config_ctx cx;
	struct arena a;
	struct diag d;
	const char *ref, *gfile;
	int k, rc, missed = 0;

	catch_stops();
	memset(&set, 0, sizeof(set));
	for (k = 0; k < VK_COUNT; k++)
		o.kinds[k] = 1;
	arena_init(&a);
	diag_init(&d, stderr);
	cx = (struct config_ctx){ &a, &d, config_data_root(&a, argv0) };
	if (!(o.sets = arena_alloc(&a, (size_t)argc * sizeof(*o.sets)))) {
		diag_oom(&d);
		rc = CLI_FAIL;
		goto out;
	}
	if ((rc = parse(&o, argc, argv)) != CLI_OK)
		goto out;
	ref = o.reference ? o.reference : cx.data_root &&
	      strcmp(cx.data_root, ".") == 0 ? "results/reference" :
	      arena_printf(&a, "%s/results/reference", cx.data_root);
	gfile = ref ? arena_printf(&a, "%s/validate.yaml", ref) : NULL;
	if (!cx.data_root || !gfile) {
		diag_oom(&d);
		rc = CLI_FAIL;
		goto out;
	}
	if (load_gates(&cx, gfile, o.gates, o.tolerance, g) != 0 ||
	    valid_load_fitted(&set, &cx) != 0 || gather(&o, &cx, ref, &set, g, &missed)) {
		rc = d.oom || o.db_failed ? CLI_FAIL : CLI_USAGE;
		goto out;
	}
	vstage = VSTAGE_PRINT;
	rc = report(&o, &set, missed) ? CLI_FAIL : CLI_OK;
	fflush(stdout);
	vstage = VSTAGE_STORE;
	if (o.store && set.n &&
	    store_set(&o, ref, cx.data_root, &set, &d) != CLI_OK)
		rc = CLI_FAIL;
out:
	valid_set_release(&set);
	arena_release(&a);
	return rc;
}
