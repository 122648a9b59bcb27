/* scripts/fit-cutlass-moe-row-time.c - least-squares fit of the B200's
 * gpu cutlass_moe_row_time (nvfp4) on TensorRT-LLM's CUTLASS fused-MoE
 * module latencies (results/reference/kernels/aic-b200-trtllm-moe-nvfp4.tsv),
 * with leave-one-out errors. Links llmsim's library: every row is
 * predicted by llmsim's own op list and costs (infer_moe_ops, infer_cost,
 * CUDA graph), nothing re-derived here.
 *   make && cc -O2 -Isrc -Ibuild/gen scripts/fit-cutlass-moe-row-time.c \
 *     build/libllmsim.a $(pkg-config --libs yaml-0.1 libcjson gsl sqlite3) \
 *     -lm $(mpicc --showme:link) -o /tmp/fitrow && /tmp/fitrow
 * (-DMIN_T=1024: the rows of 1024 tokens and more only)
 *
 * A row: one GPU holding every expert (moe_tp 1, moe_ep 1), balanced
 * routing (moe.routing.balance uniform), T tokens into the module with
 * the router logits given (the router GEMM is not in the time; its top-k
 * is). Model: Qwen3-30B-A3B's job (tests/data/serve/q30-h100.yaml on
 * dgx-b200, NVFP4, trtllm) with the row's hidden, expert width, top-k and
 * experts, no shared expert.
 *
 * The fit: t(x) = t_rest + sum over the two searching ops (moe_expand,
 * expert_act) of launch + max(body, R x), x the row time; minimise
 * sum (ln t(x) / t_meas)^2 by Brent (gsl_min) over x in [0, 100 ns].
 * The closed form is checked against infer_cost with x set at the fit.
 * Leave-one-out: every row; and every shape (9 fits of 8 shapes).
 * Arguments (optional): a TSV of the same columns, a system preset
 * (default dgx-b200) and a row time in ns to score it at, unfitted
 * (default: the preset's own nvfp4 value).
 * -DRATES: instead, print for every row the weight-streaming rate and
 * FLOP rate the measurement leaves the two grouped GEMMs
 * (expert_gate_up, expert_down): their weight bytes (infer_unit
 * weights_B) and FLOPs over the measured time less llmsim's time for
 * every other op at the row time given (a diagnosis of the GEMMs, not a
 * fit).
 * -DFP8: the rows are FP8 (per-tensor) modules, the job runs serving.dtype
 * fp8 and the row time is the preset's fp8 value (H100: unset, so score
 * at 0 ns: results/reference/kernels/aic-h100-trtllm-1.3.0rc20-moe-fp8-
 * maverick.tsv dgx-h100 0). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_min.h>

#include "base/arena.h"
#include "base/diag.h"
#include "config/config.h"
#include "config/spec_job.h"
#include "models/infer.h"

#ifdef FP8
#define MOE_DTYPE "serving.dtype=fp8"
#define MOE_DT DTYPE_FP8
#else
#define MOE_DTYPE "serving.dtype=nvfp4"
#define MOE_DT DTYPE_NVFP4
#endif
#define TSV "results/reference/kernels/aic-b200-trtllm-moe-nvfp4.tsv"
static const char *tsv = TSV, *preset = "dgx-b200";
static double at_ns = -1;
#define JOB "tests/data/serve/q30-h100.yaml"
#define MAXR 1000

struct row {
	double h, f, k, E, T, meas_s;
	double rest_s;		/* every op but the router GEMM and the two */
	double body_s[2];	/* expand, act: bytes-bound body */
	double launch_s[2];
	double rows;		/* R */
	int shape;
};

static struct row rows[MAXR];
static int nrows, nshapes;

static double pred(const struct row *r, double x)
{
	double t = r->rest_s;
	int i;

	for (i = 0; i < 2; i++)
		t += r->launch_s[i] + fmax(r->body_s[i], r->rows * x);
	return t;
}

/* Which rows count: skip < 0 none; by_shape: skip that shape, else that row. */
struct sel { int skip, by_shape; };

static int kept(const struct sel *s, int i)
{
	if (s->skip < 0)
		return 1;
	return s->by_shape ? rows[i].shape != s->skip : i != s->skip;
}

static double objective(double x, void *p)
{
	const struct sel *s = p;
	double sum = 0, e;
	int i;

	for (i = 0; i < nrows; i++) {
		if (!kept(s, i))
			continue;
		e = log(pred(&rows[i], x) / rows[i].meas_s);
		sum += e * e;
	}
	return sum;
}

static double fit(const struct sel *s)
{
	gsl_min_fminimizer *m = gsl_min_fminimizer_alloc(gsl_min_fminimizer_brent);
	gsl_function fn = {objective, (void *)s};
	double lo = 0, hi = 100e-9, x = 5e-9;
	int it = 0, st;

	/* a starting point below both ends, as Brent needs; none: the
	 * better end (the error monotone over the interval) */
	for (x = 1e-9; x < hi; x += 1e-9)
		if (objective(x, (void *)s) < objective(lo, (void *)s) &&
		    objective(x, (void *)s) < objective(hi, (void *)s))
			break;
	if (!(x < hi)) {
		gsl_min_fminimizer_free(m);
		return objective(lo, (void *)s) <= objective(hi, (void *)s)
		       ? lo : hi;
	}
	gsl_min_fminimizer_set(m, &fn, x, lo, hi);
	do {
		st = gsl_min_fminimizer_iterate(m);
		lo = gsl_min_fminimizer_x_lower(m);
		hi = gsl_min_fminimizer_x_upper(m);
		st = gsl_min_test_interval(lo, hi, 1e-14, 0);
	} while (st == GSL_CONTINUE && ++it < 200);
	x = gsl_min_fminimizer_x_minimum(m);
	gsl_min_fminimizer_free(m);
	return x;
}

/* llmsim's MoE module time for row r at row time x (infer_cost). */
static void cost_row(struct row *r, double x, double *total_s,
		     struct infer_unit *u)
{
	static struct arena a, ra;
	static int init;
	static struct model_spec m;
	char bt[64], sys[64];
	const char *sets[] = {sys, "system.gpus_per_node=1",
			      MOE_DTYPE, "serving.engine=trtllm",
			      "moe.routing.balance=uniform", bt};
	struct config_ctx cx;
	struct diag dg;
	struct job_spec *j;
	struct infer_dims d;
	struct infer_route rt;
	struct infer_ops o;
	struct infer_batch b;
	struct infer_kind k = {1, 0, 0};
	struct gpu_spec g;
	int i;

	if (!init) {
		arena_init(&a);
		arena_init(&ra);
		init = 1;
	}
	snprintf(bt, sizeof(bt), "serving.batch=%.0f", r->T);
	snprintf(sys, sizeof(sys), "system.preset=%s", preset);
	diag_init(&dg, stderr);
	cx = (struct config_ctx){&a, &dg, "."};
	j = arena_alloc(&a, sizeof(*j));
	memset(j, 0, sizeof(*j));
	if (config_load(&cx, &job_schema, JOB, sets,
			sizeof(sets) / sizeof(sets[0]), j)) {
		fprintf(stderr, "cannot load %s\n", JOB);
		exit(1);
	}
	m = *j->model;
	m.hidden_size = (int64_t)r->h;
	m.moe_intermediate_size = (int64_t)r->f;
	m.num_experts_per_tok = (int64_t)r->k;
	m.n_routed_experts = (int64_t)r->E;
	m.n_shared_experts = 0;
	m.shared_expert_intermediate_size = 0;
	j->model = &m;
	g = *j->system->gpu;
	if (at_ns < 0)
		at_ns = g.cutlass_moe_row_time_s[MOE_DT] * 1e9;
	g.cutlass_moe_row_time_s[MOE_DT] = x;
	infer_dims_from_job(j, &g, &d);
	if (infer_moe_route(j, &d, r->T, &ra, &rt, &dg)) {
		fprintf(stderr, "routing failed\n");
		exit(1);
	}
#ifndef POISSON
	/* aiconfigurator's "balanced" routing (collector/helper.py
	 * balanced_logits @ 095f58a51c4c: token i's j-th expert is
	 * (i + j ceil(E/k)) mod E, spread over E when T < ceil(E/k)) gives
	 * the experts exactly T k / E rows each: min(E, T k) of them have
	 * rows, not infer_moe_route's 1 - exp(-T k / E) per expert (random
	 * routing). -DPOISSON keeps the latter. */
	rt.active = fmin(d.moe.local, rt.rows);
#endif
	o.n = 0;
	infer_moe_ops(&d, r->T, &rt, ITBO_NONE, &o);
	memset(&b, 0, sizeof(b));
	infer_cost(&o, &d, &b, &k, &g, IGRAPH_FULL, u);
	*total_s = 0;
	for (i = 0; i < u->n; i++)
		if (strcmp(u->op[i].name, "router") != 0)
			*total_s += u->op[i].time_s;
	r->rows = rt.rows;
	/* the searching ops' bytes-bound bodies (at x = 0) */
	if (x == 0) {
		int n = 0;

		r->rest_s = *total_s;
		for (i = 0; i < o.n; i++) {
			if (!(o.op[i].search_rows > 0))
				continue;
			if (n >= 2 || o.op[i].search_rows != rt.rows) {
				fprintf(stderr, "unexpected searching op %s\n",
					o.op[i].name);
				exit(1);
			}
			r->launch_s[n] = g.kernel_launch_graph_s;
			r->body_s[n] = u->op[i].time_s - r->launch_s[n];
			r->rest_s -= u->op[i].time_s;
			n++;
		}
		if (n != 2) {
			fprintf(stderr, "%d searching ops, want 2\n", n);
			exit(1);
		}
	}
	arena_release(&ra);
	arena_init(&ra);
}

static int cmpd(const void *p, const void *q)
{
	double a = *(const double *)p, b = *(const double *)q;

	return a < b ? -1 : a > b;
}

static void summary(const char *what, const double *e, int n)
{
	double s[MAXR], ab[MAXR], ss = 0;
	int i;

	for (i = 0; i < n; i++) {
		s[i] = e[i];
		ab[i] = fabs(e[i]);
		ss += log(1 + e[i]) * log(1 + e[i]);
	}
	qsort(s, (size_t)n, sizeof(double), cmpd);
	qsort(ab, (size_t)n, sizeof(double), cmpd);
	printf("%s: %d rows, median signed %+.1f %%, median |err| %.1f %%, "
	       "p90 |err| %.1f %%, max |err| %.1f %%, rms log %.3f\n", what, n,
	       100 * s[n / 2], 100 * ab[n / 2], 100 * ab[(int)(0.9 * n)],
	       100 * ab[n - 1], sqrt(ss / n));
}

int main(int argc, char **argv)
{
	FILE *fp;
	char line[512];
	double prev[4] = {-1, -1, -1, -1}, x, xl, lo = 1, hi = 0, tot;
	double e0[MAXR], e1[MAXR], el[MAXR], es[MAXR];
	struct sel all = {-1, 0};
	struct infer_unit u;
	int i, s;

	if (argc > 1)
		tsv = argv[1];
	if (argc > 2)
		preset = argv[2];
	if (argc > 3)
		at_ns = atof(argv[3]);
	fp = fopen(tsv, "r");
	if (!fp) {
		perror(tsv);
		return 1;
	}
	while (fgets(line, sizeof(line), fp)) {
		struct row *r = &rows[nrows];
		double ms;

		if (line[0] == '#')
			continue;
		if (nrows >= MAXR ||
		    sscanf(line, "%lf %lf %lf %lf %lf %lf", &r->h, &r->f, &r->k,
			   &r->E, &r->T, &ms) != 6) {
			fprintf(stderr, "bad line: %s", line);
			return 1;
		}
#ifdef MIN_T	/* -DMIN_T=n: the rows of n tokens and more only */
		if (r->T < MIN_T)
			continue;
#endif
		r->meas_s = ms * 1e-3;
		if (r->h != prev[0] || r->f != prev[1] || r->k != prev[2] ||
		    r->E != prev[3])
			nshapes++;
		prev[0] = r->h, prev[1] = r->f, prev[2] = r->k, prev[3] = r->E;
		r->shape = nshapes - 1;
		nrows++;
	}
	fclose(fp);
	for (i = 0; i < nrows; i++) {
		cost_row(&rows[i], 0, &tot, &u);
		e0[i] = tot / rows[i].meas_s - 1;
	}
	for (i = 0; i < nrows; i++)
		e1[i] = pred(&rows[i], at_ns * 1e-9) / rows[i].meas_s - 1;
#ifdef RATES
	cost_row(&rows[0], 0, &tot, &u);	/* sets at_ns */
	printf("# h f k E T: measured us, llmsim us (GEMMs us), weights GB, "
	       "GEMM TFLOP; measured less llmsim's other ops: TB/s, PFLOP/s\n");
	for (i = 0; i < nrows; i++) {
		double gemm_s = 0, left_s;
		int j;

		cost_row(&rows[i], at_ns * 1e-9, &tot, &u);
		for (j = 0; j < u.n; j++)
			if (strcmp(u.op[j].name, "expert_gate_up") == 0 ||
			    strcmp(u.op[j].name, "expert_down") == 0)
				gemm_s += u.op[j].time_s;
		left_s = rows[i].meas_s - (tot - gemm_s);
		printf("%.0f %.0f %.0f %.0f %.0f: %.1f %.1f (%.1f) %.3f %.3f",
		       rows[i].h, rows[i].f, rows[i].k, rows[i].E, rows[i].T,
		       rows[i].meas_s * 1e6, tot * 1e6, gemm_s * 1e6,
		       u.weights_B / 1e9, u.flops / 1e12);
		if (left_s > 0)
			printf(" %.2f %.2f\n", u.weights_B / left_s / 1e12,
			       u.flops / left_s / 1e15);
		else
			printf(" - -\n");
	}
	return 0;
#endif
	printf("%s on %s at %.2f ns (not fitted): ", tsv, preset, at_ns);
	summary("rows", e1, nrows);
	x = fit(&all);
	for (i = 0; i < nrows; i++) {
		double chk;

		cost_row(&rows[i], x, &chk, &u);
		if (fabs(chk / pred(&rows[i], x) - 1) > 1e-9) {
			fprintf(stderr, "closed form %g != infer_cost %g\n",
				pred(&rows[i], x), chk);
			return 1;
		}
		e1[i] = chk / rows[i].meas_s - 1;
	}
	printf("cutlass_moe_row_time (nvfp4), all %d rows of %d shapes: "
	       "%.2f ns (checked against infer_cost)\n", nrows, nshapes,
	       x * 1e9);
	summary("llmsim / measured - 1 at 0 ns (before)", e0, nrows);
	summary("at the fit (in-sample)", e1, nrows);
	for (i = 0; i < nrows; i++) {
		struct sel one = {i, 0};

		xl = fit(&one);
		lo = fmin(lo, xl);
		hi = fmax(hi, xl);
		el[i] = pred(&rows[i], xl) / rows[i].meas_s - 1;
	}
	printf("leave one row out: fits %.2f-%.2f ns\n", lo * 1e9, hi * 1e9);
	summary("leave one row out, the row left out", el, nrows);
	lo = 1, hi = 0;
	for (s = 0; s < nshapes; s++) {
		struct sel sh = {s, 1};
		double se[MAXR];
		int n = 0;

		xl = fit(&sh);
		lo = fmin(lo, xl);
		hi = fmax(hi, xl);
		for (i = 0; i < nrows; i++)
			if (rows[i].shape == s) {
				es[i] = pred(&rows[i], xl) / rows[i].meas_s - 1;
				se[n++] = es[i];
			}
		for (i = 0; i < nrows; i++)
			if (rows[i].shape == s)
				break;
		printf("  shape h %.0f f %.0f k %.0f E %.0f left out: fit "
		       "%.2f ns; ", rows[i].h, rows[i].f, rows[i].k, rows[i].E,
		       xl * 1e9);
		summary("its rows", se, n);
	}
	printf("leave one shape out: fits %.2f-%.2f ns\n", lo * 1e9, hi * 1e9);
	summary("leave one shape out, the shape left out", es, nrows);
	printf("\nper row (h f k E T: measured us, llmsim us at 0, at fit)\n");
	for (i = 0; i < nrows; i++)
		printf("%.0f %.0f %.0f %.0f %.0f: %.1f %.1f %.1f\n", rows[i].h,
		       rows[i].f, rows[i].k, rows[i].E, rows[i].T,
		       rows[i].meas_s * 1e6, (1 + e0[i]) * rows[i].meas_s * 1e6,
		       (1 + e1[i]) * rows[i].meas_s * 1e6);
	return 0;
}
