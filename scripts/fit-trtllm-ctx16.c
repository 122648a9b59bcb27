/* scripts/fit-trtllm-ctx16.c - least-squares fit of a GPU's
 * attention.trtllm_ctx16_efficiency, TensorRT-LLM's context FMHA in 16
 * bits, on TensorRT-LLM's own context-attention op timings
 * (results/reference/kernels/aic-trtllm-1.3.0rc20-context-attention.tsv,
 * rows kv bf16), held out on a sibling GPU's rows; and a check that the
 * FP8-cache rows (its FP8 context FMHA) sit at llmsim's flash rate
 * (attention.fwd_efficiency), which the engine keeps for them. Links
 * llmsim's library: every row is gpu_attention_prefill's time for the
 * row's heads and prompts, nothing re-derived here.
 *   make && cc -O2 -Isrc -Ibuild/gen scripts/fit-trtllm-ctx16.c \
 *     build/libllmsim.a $(pkg-config --libs yaml-0.1 libcjson gsl sqlite3) \
 *     -lm -o /tmp/fitctx && /tmp/fitctx dgx-h200 h200 dgx-h100 h100
 * Arguments: the fit's system preset and its TSV gpu name, then the
 * held-out system preset and gpu name (default dgx-h200 h200 dgx-h100
 * h100; Blackwell: dgx-b200 b200 gb200-nvl72 gb200).
 *
 * The fit: minimise sum (ln t(eta) / t_meas)^2 over the fit GPU's bf16
 * rows by Brent (gsl_min) over eta in [0.05, 1]. Cross-validation: five
 * folds of the rows (row index mod 5), and leave one head shape out
 * (heads_q, heads_kv, head_dim). The table's op also runs the QKV
 * preprocessing (RoPE, the cache write), which llmsim charges as its own
 * kernel (rope_cache, src/models/infer.c attn_gqa: reads T (q + 2 kv) x
 * 2 B, writes T (q + kv) x 2 B + T 2 kv x kv_B, 4 FLOP an element of q
 * and k): every prediction adds that kernel's time, so eta is the
 * attention kernel's alone. */
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
#include "gpu/gpu.h"

#define TSV "results/reference/kernels/aic-trtllm-1.3.0rc20-context-attention.tsv"
#define JOB "tests/data/serve/q30-h100.yaml"
#define MAXR 20000

struct row {
	char gpu[16];
	int fp8;
	double b, isl, hq, hkv, d, meas_s;
};

static struct row rows[MAXR];
static int nrows;

struct set {
	const char *gpu;
	int fp8, nfolds, fold, in_fold;	/* folds: index mod nfolds */
	double hq, hkv, d;		/* > 0: leave this shape out (in_fold
					 * 0) or keep it alone (1) */
	const struct gpu_spec *g;
};

static int shape_is(const struct row *r, const struct set *s)
{
	return r->hq == s->hq && r->hkv == s->hkv && r->d == s->d;
}

static int in_set(const struct set *s, int i)
{
	const struct row *r = &rows[i];

	if (strcmp(r->gpu, s->gpu) || r->fp8 != s->fp8)
		return 0;
	if (s->nfolds > 1 && ((i % s->nfolds == s->fold) != s->in_fold))
		return 0;
	if (s->hq > 0 && shape_is(r, s) != s->in_fold)
		return 0;
	return 1;
}

/* llmsim's time of row r at efficiency eta (0: the GPU's fwd_efficiency) */
static double predict(const struct gpu_spec *g, const struct row *r,
		      double eta)
{
	struct gpu_attn_heads h;
	struct gpu_attn_group grp = {r->b, r->isl, r->isl};
	double t, q, kv, rd, wr;

	memset(&h, 0, sizeof(h));
	h.heads_q = r->hq;
	h.heads_kv = r->hkv;
	h.head_dim_qk = h.head_dim_v = r->d;
	h.kv_B = r->fp8 ? 1 : 2;
	h.fwd_efficiency = eta;
	t = r->b * r->isl;
	q = r->hq * r->d;
	kv = r->hkv * r->d;
	rd = t * (q + 2 * kv) * 2;
	wr = t * (q + kv) * 2 + t * 2 * kv * h.kv_B;
	return gpu_attention_prefill(g, DTYPE_BF16, &h, &grp, 1).time_s +
	       gpu_memory_op(g, rd, wr, 4 * t * (q + kv), rd + wr).time_s;
}

static double objective(double eta, void *p)
{
	const struct set *s = p;
	double sum = 0, e;
	int i;

	for (i = 0; i < nrows; i++) {
		if (!in_set(s, i))
			continue;
		e = log(predict(s->g, &rows[i], eta) / rows[i].meas_s);
		sum += e * e;
	}
	return sum;
}

static double fit(struct set *s)
{
	gsl_function f = {objective, s};
	gsl_min_fminimizer *m = gsl_min_fminimizer_alloc(gsl_min_fminimizer_brent);
	double lo = 0.05, hi = 1, x = 0.6, best = x, fb = objective(x, s);
	double y;
	int it, k;

	/* a bracketing start: the best of a coarse scan */
	for (k = 1; k <= 19; k++) {
		y = objective(0.05 * k, s);
		if (y < fb) {
			fb = y;
			best = 0.05 * k;
		}
	}
	x = best;
	lo = fmax(0.05, x - 0.05);
	hi = fmin(1, x + 0.05);
	if (!(objective(lo, s) > fb && objective(hi, s) > fb)) {
		gsl_min_fminimizer_free(m);
		return x;
	}
	gsl_min_fminimizer_set(m, &f, x, lo, hi);
	for (it = 0; it < 100; it++) {
		gsl_min_fminimizer_iterate(m);
		x = gsl_min_fminimizer_x_minimum(m);
		lo = gsl_min_fminimizer_x_lower(m);
		hi = gsl_min_fminimizer_x_upper(m);
		if (gsl_min_test_interval(lo, hi, 1e-5, 0) == GSL_SUCCESS)
			break;
	}
	gsl_min_fminimizer_free(m);
	return x;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* median signed and |err| (llmsim / measured - 1), rms ln over s */
static void score(const char *what, const struct set *s, double eta)
{
	static double e[MAXR], ae[MAXR];
	double ss = 0, l;
	int i, n = 0;

	for (i = 0; i < nrows; i++) {
		if (!in_set(s, i))
			continue;
		l = log(predict(s->g, &rows[i], eta) / rows[i].meas_s);
		e[n] = exp(l) - 1;
		ae[n] = fabs(e[n]);
		ss += l * l;
		n++;
	}
	if (n == 0) {
		printf("%s: no rows\n", what);
		return;
	}
	qsort(e, (size_t)n, sizeof(double), cmp_d);
	qsort(ae, (size_t)n, sizeof(double), cmp_d);
	printf("%s: %d rows, median signed %+.1f %%, median |err| %.1f %%, "
	       "rms ln %.3f\n", what, n, 100 * e[n / 2], 100 * ae[n / 2],
	       sqrt(ss / n));
}

static const struct gpu_spec *gpu_of(struct arena *a, const char *preset)
{
	char sys[96];
	const char *sets[] = {sys};
	struct config_ctx cx;
	struct diag dg;
	struct job_spec *j;

	snprintf(sys, sizeof(sys), "system.preset=%s", preset);
	diag_init(&dg, stderr);
	cx = (struct config_ctx){a, &dg, "."};
	j = arena_alloc(a, sizeof(*j));
	memset(j, 0, sizeof(*j));
	if (config_load(&cx, &job_schema, JOB, sets, 1, j)) {
		fprintf(stderr, "cannot load %s with %s\n", JOB, sys);
		exit(1);
	}
	/* at the clock the tables ran at (fitted_clock; configs/gpus/
	 * README.md "Clock basis"): the fit then prints the preset's value */
	if (j->system->gpu->fitted_clock.trtllm_ctx16_eff_hz > 0) {
		struct gpu_spec *g = arena_alloc(a, sizeof(*g));

		gpu_at_matrix_clock(j->system->gpu,
				    j->system->gpu->fitted_clock.trtllm_ctx16_eff_hz,
				    g);
		return g;
	}
	return j->system->gpu;
}

static void load(void)
{
	FILE *f = fopen(TSV, "r");
	char line[512], kv[16];
	struct row r;

	if (!f) {
		perror(TSV);
		exit(1);
	}
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == '#')
			continue;
		if (sscanf(line, "%15s %15s %lf %lf %lf %lf %lf %lf", r.gpu, kv,
			   &r.b, &r.isl, &r.hq, &r.hkv, &r.d, &r.meas_s) != 8)
			continue;
		r.fp8 = strcmp(kv, "fp8") == 0;
		r.meas_s *= 1e-3;
		if (nrows < MAXR)
			rows[nrows++] = r;
	}
	fclose(f);
}

int main(int argc, char **argv)
{
	const char *fp = argc > 2 ? argv[1] : "dgx-h200";
	const char *fg = argc > 2 ? argv[2] : "h200";
	const char *hp = argc > 4 ? argv[3] : "dgx-h100";
	const char *hg = argc > 4 ? argv[4] : "h100";
	static const double shapes[][3] = {
		{16, 1, 128}, {16, 2, 128}, {16, 4, 128}, {16, 8, 128},
		{32, 1, 128}, {32, 2, 128}, {32, 4, 128}, {32, 8, 128},
		{64, 1, 128}, {64, 2, 128}, {64, 4, 128}, {64, 8, 128},
		{16, 8, 64}, {32, 8, 64}, {64, 8, 64}, {32, 4, 64},
	};
	struct arena a;
	struct set s = {0}, h = {0};
	char what[160];
	double eta, lo = 1, hi = 0, x;
	int k;

	arena_init(&a);
	load();
	s.gpu = fg;
	s.g = gpu_of(&a, fp);
	h.gpu = hg;
	h.g = gpu_of(&a, hp);
	printf("%d rows; fit %s (%s), held out %s (%s)\n", nrows, fg, fp, hg,
	       hp);
	/* the FP8-cache rows at the flash rate the engine keeps for them */
	s.fp8 = h.fp8 = 1;
	score("kv fp8 rows at fwd_efficiency (fit GPU)", &s, 0);
	score("kv fp8 rows at fwd_efficiency (held-out GPU)", &h, 0);
	s.fp8 = h.fp8 = 0;
	snprintf(what, sizeof(what), "kv bf16 rows at fwd_efficiency %.3f "
		 "(before; fit GPU)", s.g->attention.fwd_efficiency);
	score(what, &s, 0);
	score("kv bf16 rows at fwd_efficiency (before; held-out GPU)", &h, 0);
	eta = fit(&s);
	printf("trtllm_ctx16_efficiency (%s): %.4f\n", fg, eta);
	score("kv bf16 rows at the fit (in-sample)", &s, eta);
	score("kv bf16 rows at the fit (held-out GPU)", &h, eta);
	printf("held-out GPU's own fit (not used): %.4f\n", fit(&h));
	for (k = 0; k < 5; k++) {
		struct set t = s, v = s;

		t.nfolds = v.nfolds = 5;
		t.fold = v.fold = k;
		t.in_fold = 0;
		v.in_fold = 1;
		x = fit(&t);
		lo = fmin(lo, x);
		hi = fmax(hi, x);
		snprintf(what, sizeof(what), "  fold %d left out: fit %.4f; "
			 "its rows", k, x);
		score(what, &v, x);
	}
	printf("five folds: fits %.4f-%.4f\n", lo, hi);
	lo = 1;
	hi = 0;
	for (k = 0; k < (int)(sizeof(shapes) / sizeof(shapes[0])); k++) {
		struct set t = s, v = s;

		t.hq = v.hq = shapes[k][0];
		t.hkv = v.hkv = shapes[k][1];
		t.d = v.d = shapes[k][2];
		t.in_fold = 0;
		v.in_fold = 1;
		x = fit(&t);
		lo = fmin(lo, x);
		hi = fmax(hi, x);
		snprintf(what, sizeof(what), "  shape %g/%g d%g left out: fit "
			 "%.4f; its rows", shapes[k][0], shapes[k][1],
			 shapes[k][2], x);
		score(what, &v, x);
	}
	printf("leave one shape out: fits %.4f-%.4f\n", lo, hi);
	return 0;
}
