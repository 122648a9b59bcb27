/*
 * cli_calibrate.c - `llmsim calibrate`: fit named model parameters of a
 * system to measurements stored by `llmsim measure`, with confidence
 * intervals and cross-validated error, and write the fit as a
 * calibration file a system applies by reference (calib.h).
 *
 *   llmsim calibrate --db PATH [--run N[,N]...] [--system S]
 *                    [--params KEY[,KEY]...] [--start KEY=VALUE]...
 *                    [--max-params N] [--folds K] [--fastest] [-o FILE]
 *
 * --start lays the system out with KEY at VALUE before the fit: the
 * fit's start, and the "before" errors' value (a key the preset leaves
 * at 0 = none, such as a GPU's collective_launch, has no start of its
 * own); KEY must be one of the parameters fitted.
 *
 * Exit status: 0; 1 the fit did not converge (or a runtime failure); 2
 * bad input (an unknown or unfittable key, a database without
 * measurements, runs on different systems without --system).
 */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/diag.h"
#include "base/mem.h"
#include "config/config.h"
#include "config/spec_system.h"
#include "store/store.h"
#include "calib/calib.h"
#include "calib/valid.h"

#define MAX_STARTS 32

struct copts {
	const char *db, *system, *params, *out;
	int64_t *runs;			/* --run ids (mem_realloc'd; any
					 * number: a fixed 64 refused a
					 * list of 65) */
	size_t nruns, runs_cap;
	const char *starts[MAX_STARTS];	/* --start KEY=VALUE, as given */
	int nstarts, folds, use_min, max_iter;
	long max_params;
};

/* What the runs held, copied out of the store's callbacks (arena). */
struct gathered {
	struct config_ctx *cx;
	const struct copts *o;
	struct store_meas_row *rows;
	struct calib_point *pts;
	size_t n, cap;
	const char *system;		/* the runs' system, if one */
	int mixed;			/* runs name different systems */
	const char **runs;		/* "measure run 1 in DB" each (arena;
					 * a fixed 4096 B cut the list, and a
					 * path, short) */
	size_t nruns, capruns;
	const char *runs_text;		/* the same joined by ", " (arena) */
	char what[256];			/* backend, library, host of the first */
};

/* --run N[,N]...: every item a run id (an empty one is refused: strtok
 * skipped it, and --run , fitted every run in the database); the option
 * may be given again, adding ids. */
static int parse_runs(struct copts *o, const char *v)
{
	char *buf = strdup(v), *rest, *t, *end;
	int rc = CLI_OK;

	if (!buf) {
		fprintf(stderr, "llmsim: calibrate: out of memory\n");
		return CLI_FAIL;
	}
	for (rest = buf; rc == CLI_OK && (t = strsep(&rest, ",")) != NULL;) {
		long long r;

		errno = 0;
		r = strtoll(t, &end, 10);
		if (!*t || *end || r < 1 || errno == ERANGE) {
			rc = cli_usage_error("calibrate", "--run: expected run "
					     "ids such as '3' or '3,4', got "
					     "'%s'", v);
		} else if (o->nruns == o->runs_cap) {
			size_t cap = o->runs_cap ? 2 * o->runs_cap : 16;
			int64_t *n = mem_realloc(o->runs, cap * sizeof(*n));

			if (!n) {
				fprintf(stderr, "llmsim: calibrate: out of "
					"memory\n");
				rc = CLI_FAIL;
				break;
			}
			o->runs = n;
			o->runs_cap = cap;
		}
		if (rc == CLI_OK)
			o->runs[o->nruns++] = r;
	}
	free(buf);
	return rc;
}

/* v whole (digits only, at most 5 of them) into *out; else -1 (atoi
 * read '3x' as 3 and 'abc' as 0, which --folds took). */
static int whole_opt(const char *v, long *out)
{
	size_t n = strspn(v, "0123456789");

	if (n == 0 || n > 5 || v[n] != '\0')
		return -1;
	*out = strtol(v, NULL, 10);
	return 0;
}

static int one_opt(void *arg, const char *name, const char *v)
{
	long x = -1;
	struct copts *o = arg;

	if (strcmp(name, "--db") == 0)
		o->db = v;
	else if (strcmp(name, "--system") == 0)
		o->system = v;
	else if (strcmp(name, "--params") == 0)
		o->params = v;
	else if (strcmp(name, "-o") == 0 || strcmp(name, "--output") == 0)
		o->out = v;
	else if (strcmp(name, "--run") == 0)
		return parse_runs(o, v);
	else if (strcmp(name, "--start") == 0) {
		const char *eq = strchr(v, '=');

		if (!eq || eq == v || !eq[1])
			return cli_usage_error("calibrate", "--start: expected "
					       "KEY=VALUE, such as gpu.collective_"
					       "launch=6.6us, got '%s'", v);
		if (o->nstarts == MAX_STARTS)
			return cli_usage_error("calibrate", "--start: at most "
					       "%d", MAX_STARTS);
		o->starts[o->nstarts++] = strncmp(v, "system.", 7) == 0 ?
					  v + 7 : v;
	}
	else if (strcmp(name, "--folds") == 0) {
		/* one fold leaves no point out: it ran no cross-validation
		 * and said nothing */
		if (whole_opt(v, &x) != 0 || x > 20 || x == 1)
			return cli_usage_error("calibrate", "--folds: expected "
					       "0 (none) or 2 to 20, got '%s'",
					       v);
		o->folds = (int)x;
	} else if (strcmp(name, "--max-iter") == 0) {
		if (whole_opt(v, &x) != 0 || x < 1 || x > 10000)
			return cli_usage_error("calibrate", "--max-iter: "
					       "expected 1 to 10000, got '%s'",
					       v);
		o->max_iter = (int)x;
	} else if (strcmp(name, "--max-params") == 0) {
		if (whole_opt(v, &x) != 0 || x < 1 || x > 16)
			return cli_usage_error("calibrate", "--max-params: "
					       "expected 1 to 16, got '%s'", v);
		o->max_params = x;
	} else if (strcmp(name, "--fastest") == 0)
		o->use_min = 1;
	return CLI_OK;
}

static int parse(struct copts *o, int argc, char **argv)
{
	static const char *const valued[] = {
		"--db", "--system", "--params", "-o", "--output", "--run",
		"--folds", "--max-iter", "--max-params", "--start", NULL,
	};
	static const char *const flags[] = { "--fastest", NULL };
	int rc;

	rc = cli_getopt_named(argc, argv, "calibrate", valued, flags, one_opt,
			      o);
	if (rc != CLI_OK)
		return rc;
	if (!o->db)
		return cli_usage_error("calibrate", "%s", "--db is required (the "
				       "database `llmsim measure` stored into)");
	return CLI_OK;
}

static int wanted(const struct copts *o, int64_t id)
{
	size_t i;

	for (i = 0; i < o->nruns; i++)
		if (o->runs[i] == id)
			return 1;
	return o->nruns == 0;
}

static int copy_row(struct arena *a, struct store_meas_row *to,
		    const struct store_meas_row *from)
{
	*to = *from;
	to->op = arena_strdup(a, from->op);
	to->type = arena_strdup(a, from->type);
	to->check = arena_strdup(a, from->check);
	return to->op && to->type && to->check ? 0 : -1;
}

/* Run r into g's list ("measure run N in DB", DB's real path: what
 * validate names a run by, cli_validate.c); 0 or -1 out of memory. */
static int note_run(struct gathered *g, const struct store_meas_run *r)
{
	struct arena *a = g->cx->arena;
	char real[PATH_MAX];
	const char *db = realpath(g->o->db, real) ? real : g->o->db, *id;

	if (!(id = arena_printf(a, "measure run %lld in %s", (long long)r->id,
				db)) ||
	    (g->nruns == g->capruns &&
	     arena_grow(a, (void **)&g->runs, &g->capruns, g->nruns + 1,
			sizeof(*g->runs))))
		return -1;
	g->runs[g->nruns++] = id;
	if (!g->what[0])
		snprintf(g->what, sizeof(g->what), "%s backend, %s on %s",
			 r->info.backend, r->info.library_version, r->info.host);
	if (!g->system && !(g->system = arena_strdup(a, r->info.system)))
		return -1;
	if (strcmp(g->system, r->info.system) != 0)
		g->mixed = 1;
	return 0;
}

static int take_run(void *ctx, const struct store_meas_run *r)
{
	struct gathered *g = ctx;
	struct arena *a = g->cx->arena;
	const char **sets;
	int ns;
	uint32_t i;

	if (!wanted(g->o, r->id))
		return 0;
	if (note_run(g, r) != 0) {
		diag_oom(g->cx->diag);
		return -1;
	}
	if ((ns = valid_run_sets(g->cx, r, &sets)) < 0)
		return -1;
	for (i = 0; i < r->nrows; i++) {
		const struct store_meas_row *m = &r->rows[i];

		if (strcmp(m->check, "wrong") == 0 || valid_point_empty(m))
			continue;	/* a wrong result's or a no-op's time is
					 * no datum */
		if (g->n == g->cap &&
		    (arena_grow(a, (void **)&g->rows, &g->cap, g->n + 1,
				sizeof(*g->rows)) ||
		     !(g->pts = mem_realloc(g->pts, g->cap * sizeof(*g->pts)))))
			return -1;
		if (copy_row(a, &g->rows[g->n], m) != 0)
			return -1;
		g->pts[g->n] = (struct calib_point){ NULL, g->o->use_min ?
			m->time_min_s : m->time_s, sets, ns };
		g->n++;
	}
	return 0;
}

/* g's runs joined by ", " (arena); NULL out of memory. */
static const char *join_runs(const struct gathered *g)
{
	size_t i, len = 1, at = 0, n;
	char *t;

	for (i = 0; i < g->nruns; i++)
		len += strlen(g->runs[i]) + 2;
	if (!(t = arena_alloc(g->cx->arena, len)))
		return NULL;
	t[0] = '\0';
	for (i = 0; i < g->nruns; i++) {
		n = strlen(g->runs[i]);
		if (i) {
			memcpy(t + at, ", ", 2);
			at += 2;
		}
		memcpy(t + at, g->runs[i], n + 1);
		at += n;
	}
	return t;
}

/* Points of the wanted runs; CLI status. */
static int gather(struct gathered *g, struct diag *d)
{
	int bad = 0;	/* the file given is no results database */
	struct store *st = store_open_reader(g->o->db, d, &bad);	/* reads */
	int64_t n;
	size_t i;

	if (!st)
		return bad ? CLI_USAGE : CLI_FAIL;
	n = store_each_measure(st, 0, take_run, g, d);
	store_close(st);
	if (n < 0)
		return d->oom ? CLI_FAIL : CLI_USAGE;
	if (!(g->runs_text = join_runs(g))) {
		diag_oom(d);
		return CLI_FAIL;
	}
	for (i = 0; i < g->n; i++)	/* rows moved while growing */
		g->pts[i].row = &g->rows[i];
	if (g->n == 0) {
		diag_error(d, g->o->db, 0, 0, "no measurements%s to fit (llmsim "
			   "measure stores them)", g->o->nruns ? " in the runs "
			   "given" : "");
		return CLI_USAGE;
	}
	if (g->mixed && !g->o->system) {
		diag_error(d, g->o->db, 0, 0, "the runs were measured on "
			   "different systems: choose with --run or --system");
		return CLI_USAGE;
	}
	return CLI_OK;
}

/* Of the candidates, those the system sets inside their bounds (a zero
 * latency is a mechanism the preset leaves out, an efficiency of 1 says
 * the rate beside it is itself measured: neither is a value to tune);
 * they move to the front; the count. */
static long keep_set(struct calib_param *c, size_t n)
{
	size_t i, k = 0;

	for (i = 0; i < n; i++)
		if (c[i].start > c[i].lo && c[i].start < c[i].hi) {
			struct calib_param t = c[k];

			c[k++] = c[i];
			c[i] = t;
		}
	return (long)k;
}

/* The named parameters (--params), or a choice of them. CLI status. */
static int params(const struct copts *o, struct calib_problem *pb,
		  const struct system_spec *sys, struct diag *d)
{
	struct arena *a = pb->cx->arena;
	struct calib_param *all;
	char buf[1024], *rest, *k, why[256];
	long n;
	size_t i;

	if (o->params) {
		/* every item a key: an empty one (--params , named none and
		 * the fit said "out of memory") or a 33rd (dropped without
		 * a word) is refused */
		if (strlen(o->params) >= sizeof(buf))
			return cli_usage_error("calibrate", "--params: a list "
					       "of at most %zu characters",
					       sizeof(buf) - 1);
		snprintf(buf, sizeof(buf), "%s", o->params);
		pb->par = arena_alloc(a, 32 * sizeof(*pb->par));
		pb->npar = 0;
		for (rest = buf; pb->par && (k = strsep(&rest, ",")) != NULL;) {
			const char *key;

			if (!*k)
				return cli_usage_error("calibrate", "--params: "
						       "an empty key in '%s'",
						       o->params);
			if (pb->npar == 32)
				return cli_usage_error("calibrate", "--params: "
						       "at most 32 keys");
			key = arena_strdup(a, strncmp(k, "system.", 7) == 0 ?
					   k + 7 : k);
			if (!key)
				return CLI_FAIL;
			/* twice, the fit moved one copy and left the other
			 * at its start, and the file's overlay (the first)
			 * applied the start: a fit that changed nothing */
			for (i = 0; i < pb->npar; i++)
				if (strcmp(pb->par[i].key, key) == 0)
					return cli_usage_error("calibrate",
						"--params: %s named twice", key);
			if (calib_param_find(sys, key, &pb->par[pb->npar], why,
					     sizeof(why)) != 0)
				return cli_usage_error("calibrate", "--params: "
						       "%s: %s", key, why);
			pb->npar++;
		}
		return pb->par ? CLI_OK : CLI_FAIL;
	}
	if ((n = calib_param_all(sys, a, &all)) < 0)
		return CLI_FAIL;
	n = keep_set(all, (size_t)n);
	n = calib_choose(pb, all, (size_t)n, (size_t)o->max_params, &pb->par, d);
	if (n < 0)
		return CLI_FAIL;
	pb->npar = (size_t)n;
	if (n == 0) {
		diag_error(d, NULL, 0, 0, "no fittable parameter moves these "
			   "predictions: name some with --params");
		return CLI_USAGE;
	}
	return CLI_OK;
}

/* Whether a --start names parameter p. */
static int started(const struct copts *o, const struct calib_param *p)
{
	int i;

	for (i = 0; i < o->nstarts; i++)
		if (strlen(p->key) == strcspn(o->starts[i], "=") &&
		    strncmp(p->key, o->starts[i], strlen(p->key)) == 0)
			return 1;
	return 0;
}

/* Every --start names a fitted parameter, and puts it inside its
 * bounds (the fit's start must be a value it can move from); a fitted
 * key the system leaves outside them (absent: 0) needs one. CLI
 * status. */
static int check_starts(const struct copts *o, const struct calib_problem *pb)
{
	int i;
	size_t k;

	for (k = 0; k < pb->npar; k++)
		if (!(pb->par[k].start > pb->par[k].lo &&
		      pb->par[k].start < pb->par[k].hi) &&
		    !started(o, &pb->par[k]))
			return cli_usage_error("calibrate", "--params %s: %s "
					       "leaves it unset or outside its "
					       "bounds (llmsim config help): "
					       "give the fit a start with "
					       "--start %s=VALUE",
					       pb->par[k].key, pb->system,
					       pb->par[k].key);

	for (i = 0; i < o->nstarts; i++) {
		size_t len = strcspn(o->starts[i], "=");

		for (k = 0; k < pb->npar; k++)
			if (strlen(pb->par[k].key) == len &&
			    strncmp(pb->par[k].key, o->starts[i], len) == 0)
				break;
		if (k == pb->npar)
			return cli_usage_error("calibrate", "--start %s: not a "
					       "parameter this fit fits (name it "
					       "with --params)", o->starts[i]);
		if (!(pb->par[k].start > pb->par[k].lo &&
		      pb->par[k].start < pb->par[k].hi))
			return cli_usage_error("calibrate", "--start %s: a "
					       "start must lie inside the key's "
					       "bounds (llmsim config help)",
					       o->starts[i]);
	}
	return CLI_OK;
}

/* The first point's sets, then the --start ones (arena); NULL when out
 * of memory. */
static const char **start_sets(const struct copts *o, struct gathered *g,
			       size_t *n)
{
	size_t i, n0 = (size_t)g->pts[0].nsets;
	const char **s = arena_alloc(g->cx->arena, (n0 + (size_t)o->nstarts +
						    1) * sizeof(*s));

	if (!s)
		return NULL;
	for (i = 0; i < n0; i++)
		s[i] = g->pts[0].sets[i];
	for (i = 0; i < (size_t)o->nstarts; i++)
		s[n0 + i] = o->starts[i];
	*n = n0 + (size_t)o->nstarts;
	return s;
}

static void print_param(const struct calib_param *p)
{
	char s[48], v[48], e[48], lo[48], hi[48];

	calib_value_text(p, p->start, s, sizeof(s));
	calib_value_text(p, p->value, v, sizeof(v));
	calib_value_text(p, p->stderr_, e, sizeof(e));
	calib_value_text(p, p->ci_lo, lo, sizeof(lo));
	calib_value_text(p, p->ci_hi, hi, sizeof(hi));
	printf("  %-50s %12s %12s %12s  [%s, %s]%s\n", p->key, s, v, e, lo, hi,
	       p->ci_lo <= p->lo * 1.0001 + 1e-300 || p->ci_hi >= p->hi * 0.9999
	       ? "  (at a bound)" : "");
}

static void report(const struct calib_problem *pb,
		   const struct calib_result *r, const struct gathered *g,
		   const char *out)
{
	size_t i, j;

	printf("llmsim calibrate: %zu points of %s (%s), on %s; %zu "
	       "parameter%s\n", pb->npts, g->runs_text, g->what, pb->system,
	       pb->npar, pb->npar == 1 ? "" : "s");
	printf("  %-50s %12s %12s %12s  %s\n", "parameter", "start", "fitted",
	       "stderr", "95% interval");
	for (i = 0; i < pb->npar; i++)
		print_param(&pb->par[i]);
	if (pb->npar > 1) {
		printf("  correlation:\n");
		for (i = 0; i < pb->npar; i++) {
			printf("   ");
			for (j = 0; j < pb->npar; j++)
				printf(" %+6.3f", r->corr[i * pb->npar + j]);
			printf("\n");
		}
	}
	printf("  error over the points, median |predicted / measured - 1|: "
	       "%.1f%% with the preset, %.1f%% fitted (rms of ln ratio %.3f -> "
	       "%.3f); %d iterations, %zu degrees of freedom\n",
	       100 * r->med_before, 100 * r->med_after, r->rms_before,
	       r->rms_after, r->iters, r->dof);
	if (r->folds)
		printf("  cross-validated (%d folds, each point predicted by a "
		       "fit without its fold): median |error| %.1f%% (the preset: "
		       "%.1f%%), rms of ln ratio %.3f (%.3f)\n", r->folds,
		       100 * r->cv_med, 100 * r->cv_med_before, r->cv_rms,
		       r->cv_rms_before);
	printf("  wrote %s; a system applies it with 'calibration: %s'\n", out,
	       out);
}

static const char *out_path(const struct copts *o, struct config_ctx *cx,
			    const struct system_spec *sys)
{
	if (o->out)
		return o->out;
	return arena_printf(cx->arena, "%s/configs/calibrated/%s.yaml",
			    cx->data_root, sys->name ? sys->name : "system");
}

int cli_calibrate(int argc, char **argv, const char *argv0)
{
	struct copts o = { .folds = 5, .max_params = 4, .max_iter = 60 };
	struct calib_problem pb;
	struct calib_result res;
	struct gathered g;
	struct valid_pred pred;
	struct config_ctx cx;
	struct arena a;
	struct diag d;
	const char *out, **sets;
	size_t nsets = 0;
	int rc, fit;

	arena_init(&a);
	diag_init(&d, stderr);
	memset(&g, 0, sizeof(g));
	memset(&res, 0, sizeof(res));
	memset(&pred, 0, sizeof(pred));
	cx = (struct config_ctx){ &a, &d, config_data_root(&a, argv0) };
	g.cx = &cx;
	g.o = &o;
	if ((rc = parse(&o, argc, argv)) != CLI_OK || !cx.data_root ||
	    (rc = gather(&g, &d)) != CLI_OK)
		goto out;
	pb = (struct calib_problem){ &cx, o.system ? o.system : g.system,
				     g.pts, g.n, NULL, 0, o.max_iter };
	if (!pb.system || !pb.system[0]) {
		rc = cli_usage_error("calibrate", "%s", "the runs name no system: "
				     "give --system");
		goto out;
	}
	if (!(sets = start_sets(&o, &g, &nsets))) {
		diag_oom(&d);
		rc = CLI_FAIL;
		goto out;
	}
	if (valid_pred_open(&pred, &cx, pb.system, sets, nsets) != 0) {
		/* the --starts follow the run's own sets: "--set:4" was
		 * the first --start after a run's three, named nowhere */
		if (!d.oom && o.nstarts) {
			size_t first = nsets - (size_t)o.nstarts;

			char which[64];

			if (o.nstarts == 1)
				snprintf(which, sizeof(which), "--set %zu: the "
					 "--start option", nsets);
			else
				snprintf(which, sizeof(which), "--set %zu to "
					 "%zu: the --start options in order",
					 first + 1, nsets);
			diag_note(&d, NULL, 0, 0, "%s (after the %zu --sets "
				  "of the first measure run and its layout)",
				  which, first);
		}
		rc = d.oom ? CLI_FAIL : CLI_USAGE;
		goto out;
	}
	if ((rc = params(&o, &pb, pred.sys, &d)) != CLI_OK ||
	    (rc = check_starts(&o, &pb)) != CLI_OK)
		goto out;
	fit = calib_fit(&pb, &res, &d);
	if (fit == 0 && o.folds > 1)
		fit = calib_cross_validate(&pb, (int)((size_t)o.folds < g.n ?
			(size_t)o.folds : g.n), &res, &d);
	rc = fit == 0 ? CLI_OK : fit == -2 ? CLI_USAGE : CLI_FAIL;
	if (fit == 0 && (!(out = out_path(&o, &cx, pred.sys)) ||
			 calib_file_write(out, &pb, &res, o.db, g.runs, g.nruns,
					  cli_version(), &d) != 0))
		rc = CLI_FAIL;
	else if (fit == 0)
		report(&pb, &res, &g, out);
out:
	valid_pred_close(&pred);
	mem_free(res.corr);
	mem_free(g.pts);
	mem_free(o.runs);
	arena_release(&a);
	return rc;
}
