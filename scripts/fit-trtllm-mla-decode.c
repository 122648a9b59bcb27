/* scripts/fit-trtllm-mla-decode.c - least-squares fit of a GPU's
 * attention.trtllm_mla_efficiency, trtllm_mla_fp8_efficiency and
 * trtllm_mla_unit_time on TensorRT-LLM's MLA generation op timings
 * (results/reference/kernels/aic-trtllm-mla-decode.tsv), with 5-fold
 * cross-validated error and the held-out rows' error. Links llmsim's
 * library: every row is llmsim's gpu_attention_decode on the GPU preset
 * (the decode rule its attention.trtllm_decode names, absorbed MLA: 1 KV
 * head, 576-wide latent, values its first 512, bf16 queries), nothing
 * re-derived here.
 *   make && cc -O2 -Isrc -Ibuild/gen scripts/fit-trtllm-mla-decode.c \
 *     build/libllmsim.a $(pkg-config --libs yaml-0.1 libcjson gsl sqlite3) \
 *     -lm $(mpicc --showme:link) -o /tmp/fitmla && /tmp/fitmla h200 1.3.0rc20
 * Arguments: the fit rows' gpu and version (the TSV's first columns),
 * then held-out sets as gpu:version (each scored at the fit, on its own
 * GPU preset). Fit rows: 128 heads (DeepSeek-V3/R1 under attention DP),
 * both KV dtypes, batch >= 16 (fewer sequences than SMs leave the kernel's
 * own key split, not modelled, to decide). Held out: the same GPU's 64-head
 * rows, and each set named.
 *
 * The fit: minimise sum (ln t_llmsim / t_meas)^2 over the three keys by
 * GSL's Nelder-Mead simplex (gsl_multimin_fminimizer_nmsimplex2) from the
 * start (0.5, 0.5, 20 us); the efficiencies bounded to (0, 1] and the time
 * to [0, 200 us] by a penalty. Prints the fit, rms / median / max |log
 * error| before (the preset without the three keys: the flash rates) and
 * after, per KV dtype. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_multimin.h>
#include <gsl/gsl_vector.h>

#include "base/arena.h"
#include "base/diag.h"
#include "config/config.h"
#include "config/spec_gpu.h"
#include "config/spec_job.h"
#include "config/spec_system.h"
#include "gpu/gpu.h"

#define TSV "results/reference/kernels/aic-trtllm-mla-decode.tsv"
#define MAXR 8000

struct row {
	char gpu[16], ver[16];
	int fp8, heads;
	double batch, cached, meas_s;
};

static struct row rows[MAXR];
static int nrows;
/* s; the op's time outside the kernel (its preprocessing: rope of the
 * new token and the latent's append, their launches), fitted with the
 * three keys but not one of them: a serving step charges that work as
 * its own rope_cache op */
static double pre_s;

/* the rows a fit or a score sees */
struct set {
	const char *gpu, *ver;
	int heads, min_batch, fold, nfolds, in_fold;
	struct gpu_spec *g;
};

static int in_set(const struct set *s, int i)
{
	const struct row *r = &rows[i];

	if (strcmp(r->gpu, s->gpu) || strcmp(r->ver, s->ver) ||
	    r->heads != s->heads || r->batch < s->min_batch)
		return 0;
	if (s->nfolds > 1 && ((i % s->nfolds == s->fold) != s->in_fold))
		return 0;
	return 1;
}

static double predict(const struct gpu_spec *g, const struct row *r)
{
	struct gpu_attn_heads h;
	struct gpu_attn_group grp = {r->batch, 1, r->cached + 1};

	memset(&h, 0, sizeof(h));
	h.heads_q = r->heads;
	h.heads_kv = 1;
	h.head_dim_qk = 576;
	h.head_dim_v = 512;
	h.kv_B = r->fp8 ? 1 : 2;
	h.shared_kv = 1;
	h.split = g->attention.trtllm_decode;
	return pre_s + gpu_attention_decode(g, DTYPE_BF16, &h, &grp, 1).time_s;
}

static void set_params(struct gpu_spec *g, const gsl_vector *x)
{
	g->attention.trtllm_mla_eff = gsl_vector_get(x, 0);
	g->attention.trtllm_mla_fp8_eff = gsl_vector_get(x, 1);
	g->attention.trtllm_mla_unit_s = gsl_vector_get(x, 2) * 1e-6;
	pre_s = gsl_vector_get(x, 3) * 1e-6;
}

static double objective(const gsl_vector *x, void *p)
{
	struct set *s = p;
	double sum = 0, e, pen = 0;
	int i, k;

	for (k = 0; k < 2; k++) {
		double v = gsl_vector_get(x, k);

		if (v <= 0.01 || v > 1)
			pen += 1e3 * (1 + fabs(v));
	}
	for (k = 2; k < 4; k++)
		if (gsl_vector_get(x, k) < 0 || gsl_vector_get(x, k) > 200)
			pen += 1e3 * (1 + fabs(gsl_vector_get(x, k)));
	if (pen > 0)
		return pen;
	set_params(s->g, x);
	for (i = 0; i < nrows; i++) {
		if (!in_set(s, i))
			continue;
		e = log(predict(s->g, &rows[i]) / rows[i].meas_s);
		sum += e * e;
	}
	return sum;
}

static void fit(struct set *s, double out[4])
{
	const gsl_multimin_fminimizer_type *T =
		gsl_multimin_fminimizer_nmsimplex2;
	gsl_multimin_fminimizer *m = gsl_multimin_fminimizer_alloc(T, 4);
	gsl_vector *x = gsl_vector_alloc(4), *step = gsl_vector_alloc(4);
	gsl_multimin_function fn = {objective, 4, s};
	int it = 0, st, k;

	gsl_vector_set(x, 0, 0.5);
	gsl_vector_set(x, 1, 0.5);
	gsl_vector_set(x, 2, 20);
	gsl_vector_set(step, 0, 0.1);
	gsl_vector_set(step, 1, 0.1);
	gsl_vector_set(step, 2, 5);
	gsl_vector_set(x, 3, 10);
	gsl_vector_set(step, 3, 3);
	gsl_multimin_fminimizer_set(m, &fn, x, step);
	do {
		st = gsl_multimin_fminimizer_iterate(m);
		if (st)
			break;
		st = gsl_multimin_test_size(gsl_multimin_fminimizer_size(m),
					    1e-6);
	} while (st == GSL_CONTINUE && ++it < 2000);
	for (k = 0; k < 4; k++)
		out[k] = gsl_vector_get(m->x, k);
	gsl_vector_free(x);
	gsl_vector_free(step);
	gsl_multimin_fminimizer_free(m);
}

static int by_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* rms, median, max |ln(pred / meas)| and the median signed ratio of the
 * set's rows of KV dtype fp8 (-1: both) */
static void score(const char *label, const struct set *s, int fp8)
{
	static double e[MAXR];
	double sum = 0, mx = 0;
	int i, n = 0;

	for (i = 0; i < nrows; i++) {
		if (!in_set(s, i) || (fp8 >= 0 && rows[i].fp8 != fp8))
			continue;
		e[n] = log(predict(s->g, &rows[i]) / rows[i].meas_s);
		sum += e[n] * e[n];
		mx = fmax(mx, fabs(e[n]));
		n++;
	}
	if (!n)
		return;
	qsort(e, (size_t)n, sizeof(*e), by_double);
	printf("  %-34s %-4s n %4d  rms log %.3f  median ratio %.3f  max |log| %.3f\n",
	       label, fp8 < 0 ? "both" : fp8 ? "fp8" : "bf16", n,
	       sqrt(sum / n), exp(e[n / 2]), mx);
}

/* The GPU of system preset dgx-NAME (gb200: gb200-nvl72), as a job
 * loads it (tests/data/serve/l8-h100-tp1.yaml with the system set). */
static void load_gpu(struct arena *a, const char *name, struct gpu_spec *g)
{
	struct diag d;
	struct config_ctx cx;
	struct job_spec *j = arena_alloc(a, sizeof(*j));
	char sys[64];
	const char *sets[] = {sys};

	diag_init(&d, stderr);
	cx = (struct config_ctx){a, &d, "."};
	snprintf(sys, sizeof(sys), "system.preset=%s%s",
		 strcmp(name, "gb200") ? "dgx-" : "",
		 strcmp(name, "gb200") ? name : "gb200-nvl72");
	memset(j, 0, sizeof(*j));
	if (config_load(&cx, &job_schema, "tests/data/serve/l8-h100-tp1.yaml",
			sets, 1, j)) {
		fprintf(stderr, "cannot load the %s system\n", name);
		exit(2);
	}
	/* at the clock the tables ran at (the preset's fitted_clock,
	 * configs/gpus/README.md "Clock basis"), so that the fit prints the
	 * preset's values: rates of the peak at that clock, the unit time at
	 * it */
	if (j->system->gpu->fitted_clock.trtllm_mla_eff_hz > 0)
		gpu_at_matrix_clock(j->system->gpu,
				    j->system->gpu->fitted_clock.trtllm_mla_eff_hz,
				    g);
	else
		*g = *j->system->gpu;
	/* "before": the flash rates, as without the three keys */
	g->attention.trtllm_mla_eff = g->attention.trtllm_mla_fp8_eff = 0;
	g->attention.trtllm_mla_unit_s = 0;
}

static void read_rows(void)
{
	FILE *f = fopen(TSV, "r");
	char line[512], kv[16];

	if (!f) {
		perror(TSV);
		exit(2);
	}
	while (fgets(line, sizeof(line), f) && nrows < MAXR) {
		struct row *r = &rows[nrows];
		double ms;

		if (line[0] == '#')
			continue;
		if (sscanf(line, "%15s %15s %15s %d %lf %lf %lf", r->gpu,
			   r->ver, kv, &r->heads, &r->batch, &r->cached,
			   &ms) != 7)
			continue;
		r->fp8 = !strcmp(kv, "fp8");
		r->meas_s = ms * 1e-3;
		nrows++;
	}
	fclose(f);
}

int main(int argc, char **argv)
{
	struct arena a;
	struct gpu_spec g0, g;
	struct set s;
	double x[4], cv[4];
	gsl_vector *v = gsl_vector_alloc(4);
	int k, fold, i;

	if (argc < 3) {
		fprintf(stderr, "usage: %s GPU VERSION [GPU:VERSION]...\n",
			argv[0]);
		return 2;
	}
	read_rows();
	arena_init(&a);
	load_gpu(&a, argv[1], &g0);
	g = g0;
	s = (struct set){argv[1], argv[2], 128, 16, 0, 0, 0, &g};
	fit(&s, x);
	pre_s = x[3] * 1e-6;
	printf("%s %s: %d rows read; before (the flash rates, with the "
	       "fitted preprocessing):\n", argv[1], argv[2], nrows);
	s.g = &g0;
	for (k = -1; k <= 1; k++)
		score("fit rows (128 heads, batch >= 16)", &s, k);
	s.g = &g;
	printf("fit: trtllm_mla_efficiency %.4f, trtllm_mla_fp8_efficiency "
	       "%.4f, trtllm_mla_unit_time %.2f us (preprocessing %.2f us)\n",
	       x[0], x[1], x[2], x[3]);
	for (k = 0; k < 4; k++)
		gsl_vector_set(v, k, x[k]);
	set_params(&g, v);
	for (k = -1; k <= 1; k++)
		score("fit rows, at the fit", &s, k);
	s.heads = 64;
	for (k = -1; k <= 1; k++)
		score("held out: 64 heads", &s, k);
	s.heads = 128;
	s.min_batch = 1;
	for (k = -1; k <= 1; k++)
		score("held out: 128 heads, every batch", &s, k);
	/* 5-fold cross-validation over the fit rows */
	s.min_batch = 16;
	s.nfolds = 5;
	printf("5-fold cross-validation (fit on 4/5, scored on the fifth):\n");
	for (fold = 0; fold < 5; fold++) {
		struct gpu_spec gf = g0;

		s.g = &gf;
		s.fold = fold;
		s.in_fold = 0;
		fit(&s, cv);
		for (k = 0; k < 4; k++)
			gsl_vector_set(v, k, cv[k]);
		set_params(&gf, v);
		s.in_fold = 1;
		printf("  fold %d: %.4f %.4f %.2f us %.2f us;", fold, cv[0],
		       cv[1], cv[2], cv[3]);
		score("its held-out fifth", &s, -1);
	}
	s.nfolds = 0;
	for (i = 3; i < argc; i++) {
		char name[32], *ver;
		struct gpu_spec gh, gb;
		struct set h;

		snprintf(name, sizeof(name), "%s", argv[i]);
		ver = strchr(name, ':');
		if (!ver)
			continue;
		*ver++ = 0;
		load_gpu(&a, name, &gb);
		gh = gb;
		for (k = 0; k < 4; k++)
			gsl_vector_set(v, k, x[k]);
		set_params(&gh, v);
		pre_s = x[3] * 1e-6;
		printf("held out %s %s (its own preset, before / at the fit):\n",
		       name, ver);
		h = (struct set){name, ver, 128, 16, 0, 0, 0, &gb};
		for (k = -1; k <= 1; k++)
			score("before", &h, k);
		h.g = &gh;
		for (k = -1; k <= 1; k++)
			score("at the fit", &h, k);
	}
	gsl_vector_free(v);
	arena_release(&a);
	return 0;
}
