/*
 * valid_kernels.c - the GPU model against measured kernels
 * (results/reference/kernels/NAME.yaml, format in its README): for every
 * row the measured and the predicted rate (TFLOP/s for GEMMs and
 * attention, TB/s for memory kernels); error = predicted rate /
 * measured rate - 1 (= measured time / predicted time - 1).
 *
 * A file names the GPU preset it was measured on, the kind of kernel
 * (gemm, attention, stream, memory), how it was timed, and its rows.
 * Timing "stream" means back-to-back launches: the model's time as is.
 * Timing "single" (one kernel between two events recorded from the
 * host) and "graph" (kernels replayed from a CUDA graph) have their own
 * per-kernel cost, the file's launch_overhead, which replaces the GPU's
 * kernel_launch for every kernel the model launches (a backward
 * attention is three). Rows measured under min_time are shown but not
 * scored; so is a row with `scored: false` (for attention also
 * fwd_scored or bwd_scored: false). An attention row may carry one
 * pass only (a source that published the forward, or the backward).
 * A gemm file may state its calls' power regime (power_before: idle,
 * warmup_calls, timed_calls; valid_power.c): its rows are then priced
 * at the burst clock until the power window's hold, not all sustained;
 * and its kernel's accumulator_stages (valid_power.c).
 * A key the file's kind does not take, in the file or a row, is an
 * error at it, and so is a flag (scored, causal) other than true or
 * false.
 *
 * (Was tests/tools/kernels.c, run by scripts/validate-kernels.sh.)
 */
#include "valid.h"

#include <ctype.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/diag.h"
#include "base/mem.h"
#include "base/units.h"
#include "config/cnode.h"
#include "config/config.h"
#include "gpu/gpu.h"

/* One reference file's header and its GPU. */
struct ref {
	const char *const *sets;	/* --set overrides for the GPU */
	size_t nsets;
	const char *path;		/* the file */
	const char *id;			/* its id */
	const char *gpu_name;		/* GPU preset */
	const char *kind;		/* gemm, attention, decode_attention,
					 * stream, memory */
	enum dtype dt;			/* gemm and attention; decode_attention:
					 * Q and O */
	double kv_B;			/* B per K/V cache element,
					 * decode_attention */
	int split;			/* decode_attention: enum
					 * gpu_trtllm_decode, the kernel's
					 * split of the keys */
	double launch_s;		/* s, launch_overhead; < 0 = kernel_launch */
	double min_time_s;		/* s, shorter rows not scored */
	double array_B;			/* B, stream arrays */
	int b_cold;			/* gemm: `weights: cold`, B read from
					 * HBM (a benchmark that flushes L2
					 * before each call) */
	struct valid_power power;	/* gemm: the calls' power regime */
	struct gpu_spec g;		/* the GPU */
};

/* One printed row. */
struct line {
	char label[112];		/* what was measured */
	double meas, pred;		/* rate, in the row's unit */
	const char *unit;		/* "TFLOP/s" or "TB/s" */
	double meas_s;			/* s, measured time (0 = unknown) */
	int scored;			/* counts in the statistics */
};

static int bad(struct diag *d, const struct cnode *n, const char *what)
{
	diag_error(d, n ? n->file : NULL, n ? n->line : 0, n ? n->col : 0,
		   "%s", what);
	return -1;
}

static const char *get_str(const struct cnode *map, const char *key)
{
	const struct cnode *n = cnode_get(map, key);

	return n && n->kind == CNODE_SCALAR ? n->text : NULL;
}

/* The keys a file and its rows may hold, by kind; any other is an error
 * at it (valid_check_keys: 'weigths: cold' priced a DeepGEMM file warm,
 * 'scord: false' scored a row). A memory row's tbps is the source's rate,
 * shown in the file only (the row's bytes over s is the measurement); when
 * given it must be bytes / s as written (memory_rate_check). */
static const char *const file_keys[] = {
	"id", "title", "source", "confidence", "measured_on", "notes", "gpu",
	"kind", "dtype", "timing", "launch_overhead", "min_time", "weights",
	"fp8_accumulation", "kv_dtype", "decode_kernel", "array_bytes",
	"power_before", "warmup_calls", "timed_calls", "accumulator_stages",
	"rows", NULL,
};

static const struct {
	const char *kind;
	const char *const keys[20];
} row_keys[] = {
	{"gemm", {"label", "m", "n", "k", "tflops", "s", "scored", "groups",
		  "group_dim", "counts", "streams", "shapes", "timed_calls",
		  NULL}},
	{"attention", {"label", "backend", "batch", "heads_q", "heads_kv",
		       "seq", "head_dim", "head_dim_v", "causal", "window",
		       "fwd_s", "fwd_tflops", "bwd_s", "bwd_tflops", "scored",
		       "fwd_scored", "bwd_scored", NULL}},
	{"decode_attention", {"label", "batch", "heads_q", "heads_kv",
			      "head_dim", "cached", "s", "scored", NULL}},
	{"stream", {"label", "kernel", "tbps", "scored", NULL}},
	{"memory", {"label", "bytes", "s", "tbps", "scored", NULL}},
};

#define NKINDS (sizeof(row_keys) / sizeof(row_keys[0]))

/* The kind's index in row_keys, or -1. */
static int kind_index(const char *kind)
{
	size_t i;

	for (i = 0; kind && i < NKINDS; i++)
		if (strcmp(kind, row_keys[i].kind) == 0)
			return (int)i;
	return -1;
}

static int memory_rate_check(const struct cnode *row, struct diag *d);

/* A row's keys for the file's kind, and its true/false flags: 0, or -1
 * after an error at the key or value. */
static int check_row(const struct ref *r, const struct cnode *row,
		     struct diag *d)
{
	static const char *const flags[] = {"scored", "fwd_scored",
					    "bwd_scored", "causal"};
	char what[48];
	int k = kind_index(r->kind), rc;
	size_t i;

	if (row->kind != CNODE_MAP)
		return bad(d, row, "row: expected a mapping");
	snprintf(what, sizeof(what), "%s row", r->kind);
	rc = valid_check_keys(row, row_keys[k].keys, what, d);
	for (i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		if (valid_get_bool(row, flags[i], 0, d) < 0)
			rc = -1;
	if (strcmp(r->kind, "memory") == 0 && memory_rate_check(row, d) < 0)
		rc = -1;
	return rc;
}

/* A number, or NAN when absent or not a number. */
/* The number text t spells in full; NaN when absent or not one. */
static double text_num(const char *t)
{
	char *end;
	double v;

	if (!t)
		return NAN;
	v = strtod(t, &end);
	return end != t && *end == '\0' ? v : NAN;
}

static double get_num(const struct cnode *map, const char *key)
{
	return text_num(get_str(map, key));
}

/* A memory row's tbps, when given, is its bytes / s rounded to the
 * decimals it is written with (half a unit of its last digit, and 1e-9
 * relative for the doubles): a row whose bytes or s were mistyped reads
 * a rate its own tbps contradicts (the shipped H200 rows agree to 0.04 %,
 * 3 decimals). 0, or -1 after an error at tbps. */
static int memory_rate_check(const struct cnode *row, struct diag *d)
{
	const struct cnode *n = cnode_get(row, "tbps");
	const char *t = n && n->kind == CNODE_SCALAR ? n->text : NULL;
	const char *dot = t ? strchr(t, '.') : NULL;
	double tb = text_num(t), b = get_num(row, "bytes"), s = get_num(row, "s");
	double rate, tol = 0.5;
	size_t i;

	if (!n)
		return 0;
	if (!(tb > 0) || isinf(tb)) {
		diag_error(d, n->file, n->line, n->col, "'tbps': expected a "
			   "rate in TB/s greater than 0 (the row's bytes / s), "
			   "got '%s'", t ? t : "a mapping or list");
		return -1;
	}
	if (!(b > 0) || !(s > 0) || strpbrk(t, "eE"))
		return 0;	/* row_memory refuses the row; a rate in
				 * exponent form is not rounded by digits */
	for (i = 1; dot && isdigit((unsigned char)dot[i]); i++)
		tol /= 10;
	rate = b / s / 1e12;
	if (fabs(rate - tb) <= tol + 1e-9 * rate)
		return 0;
	diag_error(d, n->file, n->line, n->col, "'tbps': expected the row's "
		   "bytes / s, %.6g TB/s (to %zu decimals as written), got '%s'",
		   rate, dot ? i - 1 : (size_t)0, t);
	return -1;
}

/* A time with its unit; def when absent; -1 when malformed. */
static double get_time(const struct cnode *map, const char *key, double def)
{
	const char *t = get_str(map, key), *why;
	double v;

	if (!t)
		return def;
	return units_parse(t, UNIT_TIME, &v, &why) == 0 ? v : -1;
}

static int get_dtype(const struct cnode *root, struct ref *r,
		     struct diag *d)
{
	const char *t = get_str(root, "dtype");
	int i;

	for (i = 0; t && i < DTYPE_COUNT; i++)
		if (strcmp(t, dtype_names[i]) == 0) {
			r->dt = (enum dtype)i;
			return gpu_check_dtype(&r->g, r->dt, d);
		}
	return bad(d, root, "'dtype': expected one of fp32, tf32, bf16, fp16, "
		   "fp8, mxfp8, mxfp6, mxfp4");
}

static int read_timing(const struct cnode *root, struct ref *r,
		       struct diag *d)
{
	const char *timing = get_str(root, "timing");
	int stream = timing && strcmp(timing, "stream") == 0;

	if (!timing || (!stream && strcmp(timing, "single") &&
			strcmp(timing, "graph")))
		return bad(d, root, "'timing': expected stream, single or graph");
	r->launch_s = get_time(root, "launch_overhead", -1);
	r->min_time_s = get_time(root, "min_time", 0);
	if (r->min_time_s < 0 || (!stream && r->launch_s < 0))
		return bad(d, root, "'launch_overhead', 'min_time': expected "
			   "times such as '21 us' (launch_overhead required "
			   "unless timing is stream)");
	return 0;
}

/* `weights: cold` (a GEMM file whose benchmark flushed L2 before each
 * timed call, as DeepGEMM's bench_kineto does): B is priced from HBM
 * whatever its size, as an inference step's weights (gpu_gemm_q b_cold);
 * absent or `warm`, the working set picks the serving level. */
static int read_weights(const struct cnode *root, struct ref *r,
			struct diag *d)
{
	const struct cnode *n = cnode_get(root, "weights");
	const char *t = get_str(root, "weights");

	r->b_cold = 0;
	if (!n)
		return 0;
	if (!t || (strcmp(t, "cold") && strcmp(t, "warm")))
		return bad(d, n, "'weights': expected cold or warm");
	if (strcmp(r->kind, "gemm"))
		return bad(d, n, "'weights': only for kind gemm");
	r->b_cold = strcmp(t, "cold") == 0;
	return 0;
}

/* `fp8_accumulation: fast` (an fp8 GEMM file whose kernels ran in
 * Hopper's fast-accumulation mode: cuBLASLt FAST_ACCUM 1) prices its rows
 * at the GPU's fp8_fast_accum_efficiency; `split` or absent, at the
 * promoted mode's gemm_efficiency_dtype fp8 (gpu_use_fp8_fast_accum). */
static int read_fp8_accum(const struct cnode *root, struct ref *r,
			  struct diag *d)
{
	const struct cnode *n = cnode_get(root, "fp8_accumulation");
	const char *t = get_str(root, "fp8_accumulation");

	if (!n)
		return 0;
	if (!t || (strcmp(t, "fast") && strcmp(t, "split")))
		return bad(d, n, "'fp8_accumulation': expected fast or split");
	if (strcmp(r->kind, "gemm") || r->dt != DTYPE_FP8)
		return bad(d, n, "'fp8_accumulation': only for kind gemm, "
			   "dtype fp8");
	if (strcmp(t, "fast") == 0)
		gpu_use_fp8_fast_accum(&r->g);
	return 0;
}

/* decode_attention: `kv_dtype` (bf16, fp16 or fp8), the KV cache's
 * element. */
static int read_kv_dtype(const struct cnode *root, struct ref *r,
			 struct diag *d)
{
	const char *t = get_str(root, "kv_dtype");

	const char *k = get_str(root, "decode_kernel");

	if (t && (strcmp(t, "bf16") == 0 || strcmp(t, "fp16") == 0))
		r->kv_B = 2;
	else if (t && strcmp(t, "fp8") == 0)
		r->kv_B = 1;
	else
		return bad(d, root, "'kv_dtype': expected bf16, fp16 or fp8 "
			   "(kind decode_attention)");
	/* decode_kernel as the engine key: trtllm splits the keys by the
	 * GPU's attention.trtllm_decode rule, flash (absent) by the
	 * generic fill rule */
	if (k && strcmp(k, "trtllm") == 0)
		r->split = r->g.attention.trtllm_decode;
	else if (k && strcmp(k, "flash") != 0)
		return bad(d, cnode_get(root, "decode_kernel"),
			   "'decode_kernel': expected flash or trtllm");
	return 0;
}

static int read_header(struct config_ctx *cx, const struct cnode *root,
		       struct ref *r)
{
	r->id = get_str(root, "id");
	r->gpu_name = get_str(root, "gpu");
	r->kind = get_str(root, "kind");
	if (!r->id || !r->gpu_name || !r->kind)
		return bad(cx->diag, root, "expected 'id', 'gpu' and 'kind'");
	if (valid_check_keys(root, file_keys, "kernel file", cx->diag) < 0)
		return -1;
	if (kind_index(r->kind) < 0)
		return bad(cx->diag, cnode_get(root, "kind"), "'kind': expected "
			   "one of gemm, attention, decode_attention, stream, "
			   "memory");
	if (strcmp(r->kind, "decode_attention") &&
	    (cnode_get(root, "kv_dtype") || cnode_get(root, "decode_kernel")))
		return bad(cx->diag, cnode_get(root, cnode_get(root, "kv_dtype") ?
					       "kv_dtype" : "decode_kernel"),
			   "'kv_dtype', 'decode_kernel': only for kind "
			   "decode_attention");
	if (strcmp(r->kind, "stream") && cnode_get(root, "array_bytes"))
		return bad(cx->diag, cnode_get(root, "array_bytes"),
			   "'array_bytes': only for kind stream");
	if (read_timing(root, r, cx->diag) < 0)
		return -1;
	memset(&r->g, 0, sizeof(r->g));
	if (config_load(cx, &gpu_schema, r->gpu_name, r->sets, r->nsets,
			&r->g) < 0)
		return -1;
	/* The model's time as the file's timing method measures it: each
	 * kernel launched (a backward attention is three) costs the
	 * method's launch_overhead. */
	if (r->launch_s >= 0)
		r->g.kernel_launch_s = r->launch_s;
	if (strcmp(r->kind, "decode_attention") == 0) {
		if (get_dtype(root, r, cx->diag) < 0 ||
		    read_kv_dtype(root, r, cx->diag) < 0)
			return -1;
	} else if (strcmp(r->kind, "gemm") == 0 ||
		   strcmp(r->kind, "attention") == 0) {
		if (get_dtype(root, r, cx->diag) < 0 ||
		    read_fp8_accum(root, r, cx->diag) < 0)
			return -1;
	}
	if (valid_power_read(root, r->kind, &r->g, &r->power, cx->diag) < 0 ||
	    valid_stages_read(root, r->kind, &r->g, cx->diag) < 0)
		return -1;
	return read_weights(root, r, cx->diag);
}


/* A grouped GEMM row (`groups: G`): G equal groups in one kernel
 * (gpu_grouped_gemm), the row's m (group_dim m: the experts' forward and
 * dgrad GEMMs) or k (group_dim k: their weight gradients) being the total
 * over the groups, as a MoE layer's tokens. With `streams: S` the groups
 * are G kernels issued round-robin on S streams (Transformer Engine's
 * multi-stream cuBLAS path), costed as the training path costs them
 * (gpu_grouped_kernels_s: the longest chain ceil(G / S) of launches and
 * G kernels' set-ups on top of the pooled tiles; at least that chain's
 * own kernels one after another, gpu_grouped_chain_s); S a whole number
 * in [1, VALID_STREAMS_MAX]. */
#define VALID_GROUPS_MAX 256
#define VALID_STREAMS_MAX 64	/* a bound for malformed rows (TE runs 4) */

/* The row's streams: 0 when absent (one grouped kernel), -1 when
 * malformed or out of range. */
static double row_streams(const struct cnode *row)
{
	double s;

	if (!cnode_get(row, "streams"))
		return 0;
	s = get_num(row, "streams");
	if (!(s >= 1 && s <= VALID_STREAMS_MAX && s == floor(s)))
		return -1;
	return s;
}

/* -1 with an error at the value when the row's streams is malformed or
 * on a row without groups; 0 otherwise. */
static int bad_streams(const struct cnode *row, struct diag *d)
{
	const struct cnode *n = cnode_get(row, "streams");
	char msg[160];

	if (!n)
		return 0;
	if (!cnode_get(row, "groups"))
		return bad(d, n, "'streams': only on a grouped row (groups: G)");
	if (row_streams(row) > 0)
		return 0;
	snprintf(msg, sizeof(msg), "'streams': expected a whole number of "
		 "streams from 1 to %d, got '%s'", VALID_STREAMS_MAX,
		 n->kind == CNODE_SCALAR ? n->text : "(not a scalar)");
	return bad(d, n, msg);
}

/* A row's `counts: [c_1, ..., c_G]`: the groups' rows (group_dim m) or
 * k (group_dim k) where they differ (a routing draw), whole numbers >= 0
 * summing to the row's total. Into c[groups]; 0 when absent (equal
 * groups), 1 when read, -1 with an error at the value when malformed. */
static int row_counts(const struct cnode *row, double groups, int by_k,
		      double total, double *c, struct diag *d)
{
	const struct cnode *n = cnode_get(row, "counts");
	char msg[200];
	double sum = 0;
	size_t i;

	if (!n)
		return 0;
	for (i = 0; n->kind == CNODE_SEQ && i < n->nitems; i++) {
		const struct cnode *e = n->items[i];
		char *end;

		c[i] = e->kind == CNODE_SCALAR ? strtod(e->text, &end) : NAN;
		if (e->kind != CNODE_SCALAR || end == e->text || *end ||
		    !(c[i] >= 0 && c[i] == floor(c[i])))
			break;
		sum += c[i];
	}
	if (n->kind == CNODE_SEQ && i == n->nitems &&
	    (double)n->nitems == groups && sum == total)
		return 1;
	snprintf(msg, sizeof(msg), "'counts': expected a list of %.0f whole "
		 "numbers >= 0 (one a group) summing to the row's %s, %.0f",
		 groups, by_k ? "k" : "m", total);
	return bad(d, n, msg);
}

/* The file's operands as gpu_gemm_q's: A and B in its dtype, the result
 * as gpu_gemm's (BF16 under 16 bits), B from HBM when r->b_cold. */
static struct gpu_gemm_dtypes ref_dtypes(const struct ref *r)
{
	double b = dtype_bytes(r->dt);
	struct gpu_gemm_dtypes q = {
		.compute = r->dt, .a_B = b, .b_B = b,
		.c_B = b < 2 ? 2 : b, .b_cold = r->b_cold,
	};

	return q;
}

/* One dense GEMM as the file's benchmark timed it. */
static double ref_gemm_s(const struct ref *r, double m, double n, double k)
{
	struct gpu_gemm_dtypes q = ref_dtypes(r);

	if (!r->b_cold)
		return gpu_gemm(&r->g, r->dt, m, n, k, 1).time_s;
	return gpu_gemm_q(&r->g, &q, m, n, k, 1).time_s;
}

static double grouped_time(const struct ref *r, const struct cnode *row,
			   double m, double n, double k, double groups,
			   struct diag *d)
{
	struct gpu_gemm_group g[VALID_GROUPS_MAX];
	double c[VALID_GROUPS_MAX];
	const char *dim = get_str(row, "group_dim");
	int by_k = dim && strcmp(dim, "k") == 0, counted;
	double streams = row_streams(row), chain, t;
	struct gpu_gemm_dtypes q;
	size_t i, ng = (size_t)groups;

	if (!(groups >= 1 && groups <= VALID_GROUPS_MAX &&
	      groups == floor(groups)) || streams < 0 ||
	    (cnode_get(row, "group_dim") && !dim) ||
	    (dim && !by_k && strcmp(dim, "m") != 0))
		return -1;
	counted = row_counts(row, groups, by_k, by_k ? k : m, c, d);
	if (counted < 0)
		return -2;
	for (i = 0; i < ng; i++) {
		double each = counted ? c[i] : (by_k ? k : m) / groups;

		g[i] = (struct gpu_gemm_group){ by_k ? m : each, n,
						by_k ? each : k };
	}
	q = ref_dtypes(r);
	t = r->b_cold ? gpu_grouped_gemm_q(&r->g, &q, g, ng).time_s :
			gpu_grouped_gemm(&r->g, r->dt, g, ng).time_s;
	if (streams > 0) {
		chain = ceil(groups / streams);
		t = fmax(t + gpu_grouped_kernels_s(&r->g, groups, chain),
			 gpu_grouped_chain_s(&r->g, &q, g, ng, chain));
	}
	return t;
}

/* A row's `shapes: [[m, n, k], ...]`: several dense GEMMs run one after
 * another, published as one summed time `s` (Transformer Engine's GEMM
 * profiling guide prints a layer's Fprop, Dgrad and Wgrad sums). The
 * predicted time is the sum of gpu_gemm's; the rate both sides' summed
 * FLOPs over their time. 0 when done, -1 for a malformed row (the caller
 * reports it), -2 after an error at the value. */
static int row_gemm_shapes(const struct ref *r, const struct cnode *row,
			   struct line *l, struct diag *d)
{
	const struct cnode *n = cnode_get(row, "shapes");
	const char *label = get_str(row, "label");
	double s = get_num(row, "s"), flop = 0, t = 0, v[3];
	size_t i, j;

	for (i = 0; n->kind == CNODE_SEQ && i < n->nitems; i++) {
		const struct cnode *e = n->items[i];

		if (e->kind != CNODE_SEQ || e->nitems != 3)
			break;
		for (j = 0; j < 3; j++) {
			const struct cnode *x = e->items[j];

			v[j] = x->kind == CNODE_SCALAR ? text_num(x->text) : NAN;
			if (!(v[j] >= 1 && v[j] == floor(v[j])))
				break;
		}
		if (j < 3)
			break;
		flop += 2 * v[0] * v[1] * v[2];
		t += ref_gemm_s(r, v[0], v[1], v[2]);
	}
	if (n->kind != CNODE_SEQ || n->nitems == 0 || i < n->nitems)
		return bad(d, n, "'shapes': expected a list of [m, n, k] "
			   "triples of whole numbers >= 1") - 1;
	if (cnode_get(row, "m") || cnode_get(row, "n") ||
	    cnode_get(row, "k") || cnode_get(row, "groups") ||
	    cnode_get(row, "tflops"))
		return bad(d, n, "'shapes': a row of several GEMMs takes "
			   "its summed time s, not m, n, k, groups or "
			   "tflops") - 1;
	if (!(s > 0))
		return -1;
	snprintf(l->label, sizeof(l->label), "%s%s%zu GEMMs, %.3g TFLOP",
		 label ? label : "", label ? " " : "", n->nitems,
		 flop / 1e12);
	l->meas = flop / s / 1e12;
	l->meas_s = s;
	l->pred = flop / t / 1e12;
	l->unit = "TFLOP/s";
	return 0;
}

/* 0, or -1 for a malformed row (the caller reports it), or -2 after
 * reporting an error at a value. */
static int row_gemm(const struct ref *r, const struct cnode *row,
		    struct line *l, struct diag *d)
{
	double m = get_num(row, "m"), n = get_num(row, "n");
	double k = get_num(row, "k"), tf = get_num(row, "tflops");
	double s = get_num(row, "s"), flop = 2 * m * n * k;
	double groups = get_num(row, "groups"), t;
	const char *label = get_str(row, "label");
	int grouped = cnode_get(row, "groups") != NULL;

	/* group_dim or streams alone, or groups not a number, is a
	 * malformed row (it would be scored as one dense GEMM) */
	if (!grouped && cnode_get(row, "counts"))
		return bad(d, cnode_get(row, "counts"), "'counts': only on a "
			   "grouped row (groups: G)") - 1;
	if (!(m > 0 && n > 0 && k > 0 && tf > 0) ||
	    (!grouped && (cnode_get(row, "group_dim") ||
			  cnode_get(row, "streams"))))
		return -1;
	if (grouped) {
		t = grouped_time(r, row, m, n, k, groups, d);
		if (t < 0)
			return t < -1 ? -2 : -1;
	} else {
		t = ref_gemm_s(r, m, n, k);
	}
	snprintf(l->label, sizeof(l->label), "%s%s%.0f x %.0f x %.0f%s%s",
		 label ? label : "", label ? " " : "", m, n, k,
		 grouped ? " grouped" : "",
		 cnode_get(row, "streams") ? " on streams" : "");
	l->meas = tf;
	l->meas_s = s > 0 ? s : flop / (tf * 1e12);
	l->pred = flop / t / 1e12;
	l->unit = "TFLOP/s";
	return 0;
}

/* A gemm row as its file's calls ran under the power limit (valid_power.c:
 * the row at both clocks, the timed calls' mean), or at the sustained
 * clock; the return of row_gemm. */
static int row_gemm_power(const struct ref *r, const struct cnode *row,
			  struct line *l, struct diag *d)
{
	int (*fn)(const struct ref *, const struct cnode *, struct line *,
		  struct diag *) = cnode_get(row, "shapes") ? row_gemm_shapes
							    : row_gemm;
	struct ref rb;
	struct line lb;
	double timed, work;
	int rc = fn(r, row, l, d);

	if (rc < 0 || valid_power_row_calls(row, &r->power, &timed, d) < 0)
		return rc < 0 ? rc : -2;
	if (!r->power.on)
		return 0;
	rb = *r;
	gpu_at_matrix_clock(&r->g, r->g.burst_matrix_clock_hz, &rb.g);
	rc = fn(&rb, row, &lb, d);
	if (rc < 0)
		return rc;
	work = l->meas * l->meas_s;	/* TFLOP */
	l->pred = work / valid_power_time_s(&r->g, &r->power, timed,
					    work / lb.pred, work / l->pred);
	return 0;
}

/* An attention row's backend: absent, vendor or cudnn the vendor's
 * kernel (cuDNN; CK on AMD), flash FlashAttention-2, ck_tile Composable
 * Kernel's generic CK-tile pipelines (AMD GPUs only). Anything else is
 * an error at the value (a typo such as ck-tile ran at the vendor rates
 * without a word). The kernel (enum gpu_attn_kernel), or -1. */
static int row_backend(const struct ref *r, const struct cnode *row,
		       struct diag *d)
{
	static const struct { const char *name; int kernel; } tab[] = {
		{"vendor", GPU_ATTN_VENDOR}, {"cudnn", GPU_ATTN_VENDOR},
		{"flash", GPU_ATTN_FLASH2}, {"ck_tile", GPU_ATTN_CK_TILE},
	};
	const struct cnode *n = cnode_get(row, "backend");
	char msg[256];
	size_t i;

	if (!n)
		return GPU_ATTN_VENDOR;
	for (i = 0; n->kind == CNODE_SCALAR && i < sizeof(tab) / sizeof(tab[0]);
	     i++)
		if (strcmp(n->text, tab[i].name) == 0)
			break;
	if (n->kind != CNODE_SCALAR || i == sizeof(tab) / sizeof(tab[0])) {
		snprintf(msg, sizeof(msg), "'backend': expected one of vendor, "
			 "cudnn, flash, ck_tile, got '%s'",
			 n->kind == CNODE_SCALAR ? n->text : "a collection");
		return bad(d, n, msg);
	}
	if (tab[i].kernel == GPU_ATTN_CK_TILE && r->g.vendor != GPU_AMD) {
		snprintf(msg, sizeof(msg), "'backend': ck_tile is Composable "
			 "Kernel's, which runs on AMD GPUs only; gpu '%s' is an "
			 "NVIDIA GPU", r->gpu_name ? r->gpu_name : "");
		return bad(d, n, msg);
	}
	return tab[i].kernel;
}

/* Attention: one line per pass; pass 0 forward, 1 backward, with the
 * row's kernel (row_backend). */
static int row_attention(const struct ref *r, const struct cnode *row,
			 int pass, int kernel, struct line *l)
{
	const char *key_s = pass ? "bwd_s" : "fwd_s";
	const char *key_tf = pass ? "bwd_tflops" : "fwd_tflops";
	const char *causal = get_str(row, "causal"), *label = get_str(row, "label");
	const char *backend = get_str(row, "backend");
	struct gpu_attn_shape a = {0};
	struct gpu_cost c;
	enum dtype dt;
	double t = get_num(row, key_s), tf = get_num(row, key_tf);

	a.batch = get_num(row, "batch");
	a.heads_q = get_num(row, "heads_q");
	a.heads_kv = get_num(row, "heads_kv");
	a.seq_q = a.seq_kv = get_num(row, "seq");
	a.head_dim_qk = a.head_dim_v = get_num(row, "head_dim");
	if (get_str(row, "head_dim_v"))		/* MLA-style: V narrower */
		a.head_dim_v = get_num(row, "head_dim_v");
	a.causal = causal && strcmp(causal, "true") == 0;
	if (get_str(row, "window"))		/* sliding window, keys */
		a.window = get_num(row, "window");
	a.kernel = kernel;
	/* An FP8 or MXFP8 set is predicted as training.fp8_attention is
	 * costed: the bf16 kernel's bytes, the GPU's FP8 (MXFP8) kernel
	 * rates (attention.fp8_* / mxfp8_*; absent, the bf16 kernel's) and
	 * its FP8 window backward (attention.fp8_bwd_skips_window). */
	a.fp8 = r->dt == DTYPE_FP8 || r->dt == DTYPE_MXFP8;
	a.mx = r->dt == DTYPE_MXFP8;
	dt = a.fp8 ? DTYPE_BF16 : r->dt;
	if (!(a.batch > 0 && a.heads_q > 0 && a.heads_kv > 0 && a.seq_q > 0 &&
	      a.head_dim_qk > 0 && a.head_dim_v > 0 && a.window >= 0 &&
	      t > 0 && tf > 0))
		return -1;
	c = pass ? gpu_attention_bwd(&r->g, dt, &a)
		 : gpu_attention_fwd(&r->g, dt, &a);
	snprintf(l->label, sizeof(l->label), "%s %s %s", label ? label : "",
		 backend ? backend : "", pass ? "bwd" : "fwd");
	l->meas = tf;
	l->meas_s = t;
	l->pred = tf * t / c.time_s;
	l->unit = "TFLOP/s";
	return 0;
}

/* A decode attention call (kind decode_attention): `batch` sequences of
 * one new query token each over `cached` keys already in a paged cache
 * (so cached + 1 keys with the new one), heads_q / heads_kv heads of
 * head_dim, measured time `s`. Predicted as a serving step's decode
 * attention (gpu_attention_decode, Q/O in the file's dtype, K/V at its
 * kv_dtype); the rate is the K/V cache's bytes over the time, TB/s. */
static int row_decode(const struct ref *r, const struct cnode *row,
		      struct line *l)
{
	const char *label = get_str(row, "label");
	double b = get_num(row, "batch"), cached = get_num(row, "cached");
	double s = get_num(row, "s"), kv_bytes;
	struct gpu_attn_heads h = {0};
	struct gpu_attn_group grp;
	struct gpu_cost c;

	h.heads_q = get_num(row, "heads_q");
	h.heads_kv = get_num(row, "heads_kv");
	h.head_dim_qk = h.head_dim_v = get_num(row, "head_dim");
	h.kv_B = r->kv_B;
	h.split = r->split;
	if (!(b >= 1 && b == floor(b) && cached >= 0 &&
	      cached == floor(cached) && h.heads_q > 0 && h.heads_kv > 0 &&
	      h.heads_q >= h.heads_kv && h.head_dim_qk > 0 && s > 0))
		return -1;
	grp = (struct gpu_attn_group){b, 1, cached + 1};
	c = gpu_attention_decode(&r->g, r->dt, &h, &grp, 1);
	kv_bytes = b * (cached + 1) * h.heads_kv * 2 * h.head_dim_qk * h.kv_B;
	snprintf(l->label, sizeof(l->label), "%s%sb %.0f, %.0f/%.0f heads, "
		 "%.0f cached", label ? label : "", label ? " " : "", b,
		 h.heads_q, h.heads_kv, cached);
	l->meas = kv_bytes / s / 1e12;
	l->meas_s = s;
	l->pred = kv_bytes / c.time_s / 1e12;
	l->unit = "TB/s";
	return 0;
}

/* BabelStream kernels: arrays read and written. */
static int stream_arrays(const char *k, double *rd, double *wr)
{
	static const struct { const char *name; double rd, wr; } tab[] = {
		{"copy", 1, 1}, {"mul", 1, 1}, {"add", 2, 1},
		{"triad", 2, 1}, {"dot", 2, 0},
	};
	size_t i;

	for (i = 0; k && i < sizeof(tab) / sizeof(tab[0]); i++)
		if (strcmp(k, tab[i].name) == 0) {
			*rd = tab[i].rd;
			*wr = tab[i].wr;
			return 0;
		}
	return -1;
}

static int row_stream(const struct ref *r, const struct cnode *row,
		      struct line *l)
{
	const char *k = get_str(row, "kernel");
	double rd, wr, tb = get_num(row, "tbps"), a = r->array_B, t;

	if (stream_arrays(k, &rd, &wr) < 0 || !(tb > 0) || !(a > 0))
		return -1;
	t = gpu_memory_op(&r->g, rd * a, wr * a, 0, (rd + wr) * a).time_s;
	snprintf(l->label, sizeof(l->label), "%s (%.0f MB arrays)", k, a / 1e6);
	l->meas = tb;
	l->meas_s = (rd + wr) * a / (tb * 1e12);
	l->pred = (rd + wr) * a / t / 1e12;
	l->unit = "TB/s";
	return 0;
}

static int row_memory(const struct ref *r, const struct cnode *row,
		      struct line *l)
{
	const char *label = get_str(row, "label");
	double b = get_num(row, "bytes"), s = get_num(row, "s"), t;

	if (!label || !(b > 0) || !(s > 0))
		return -1;
	t = gpu_memory_op(&r->g, b / 2, b / 2, 0, b).time_s;
	snprintf(l->label, sizeof(l->label), "%s", label);
	l->meas = b / s / 1e12;
	l->meas_s = s;
	l->pred = b / t / 1e12;
	l->unit = "TB/s";
	return 0;
}


/* One row (two for attention: forward, backward) into t. */
static int add_line(struct valid_table *t, const struct ref *r,
		    const struct cnode *row, const char *pass_key,
		    const struct line *l, struct diag *d)
{
	const char *scored = get_str(row, "scored");
	const char *pass = pass_key ? get_str(row, pass_key) : NULL;
	struct valid_row *v = valid_row_add(t, d);

	if (!v)
		return -1;
	snprintf(v->label, sizeof(v->label), "%s", l->label);
	v->measured = l->meas;
	v->predicted = l->pred;
	v->error = l->pred / l->meas - 1;
	if ((scored && strcmp(scored, "false") == 0) ||
	    (pass && strcmp(pass, "false") == 0)) {
		v->scored = 0;
		snprintf(v->note, sizeof(v->note), "(shown, not scored)");
	} else if (l->meas_s < r->min_time_s) {
		v->scored = 0;
		snprintf(v->note, sizeof(v->note), "(under min_time, not scored)");
	}
	return 0;
}

static int do_row(struct valid_table *t, const struct ref *r,
		  const struct cnode *row, struct diag *d)
{
	struct line l;
	int pass, rc = -1;

	memset(&l, 0, sizeof(l));
	if (check_row(r, row, d) < 0)
		return -1;
	if (strcmp(r->kind, "attention") == 0) {
		int lines = 0, kernel = row_backend(r, row, d);

		if (kernel < 0)
			return -1;
		for (pass = 0; pass < 2; pass++) {
			if (!get_str(row, pass ? "bwd_s" : "fwd_s") &&
			    !get_str(row, pass ? "bwd_tflops" : "fwd_tflops"))
				continue;	/* a source without this pass */
			if (row_attention(r, row, pass, kernel, &l) < 0)
				break;
			if (add_line(t, r, row, pass ? "bwd_scored" :
				     "fwd_scored", &l, d) < 0)
				return -1;
			lines++;
		}
		return pass == 2 && lines > 0 ? 0 :
		       bad(d, row, "attention row: expected batch, heads_q, "
			   "heads_kv, seq, head_dim (optional head_dim_v, "
			   "window) and a pass's time and rate (fwd_s and "
			   "fwd_tflops, bwd_s and bwd_tflops, or both)");
	}
	if (strcmp(r->kind, "gemm") == 0 && bad_streams(row, d) < 0)
		return -1;
	if (strcmp(r->kind, "gemm") == 0)
		rc = row_gemm_power(r, row, &l, d);
	else if (strcmp(r->kind, "decode_attention") == 0)
		rc = row_decode(r, row, &l);
	else if (strcmp(r->kind, "stream") == 0)
		rc = row_stream(r, row, &l);
	else if (strcmp(r->kind, "memory") == 0)
		rc = row_memory(r, row, &l);
	if (rc == -2)
		return -1;
	if (rc < 0)
		return bad(d, row, "row: missing or malformed values for this kind");
	return add_line(t, r, row, NULL, &l, d);
}

static int do_file(struct valid_set *set, struct config_ctx *cx,
		   const char *path, const char *const *sets, size_t nsets)
{
	struct cnode *root, *rows;
	struct valid_table *t;
	struct ref r;
	size_t i;

	memset(&r, 0, sizeof(r));
	r.path = path;
	r.sets = sets;
	r.nsets = nsets;
	root = cnode_load_yaml(cx->arena, path, cx->diag);
	if (!root || root->kind != CNODE_MAP) {
		if (root)
			bad(cx->diag, root, "expected a mapping");
		return -1;
	}
	if (read_header(cx, root, &r) < 0)
		return -1;
	r.array_B = get_num(root, "array_bytes");
	rows = cnode_get(root, "rows");
	if (!rows || rows->kind != CNODE_SEQ)
		return bad(cx->diag, root, "'rows': expected a list");
	if (!(t = valid_table_add(set, VK_KERNEL, cx->diag)))
		return -1;
	snprintf(t->id, sizeof(t->id), "%s", r.id);
	snprintf(t->title, sizeof(t->title), "%s on %s (%s)", r.kind,
		 r.gpu_name, path);
	t->unit = strcmp(r.kind, "gemm") == 0 ||
		  strcmp(r.kind, "attention") == 0 ? "TFLOP/s" : "TB/s";
	for (i = 0; i < rows->nitems; i++)
		if (do_row(t, &r, rows->items[i], cx->diag) < 0)
			return -1;
	for (i = 0; i < t->n; i++)
		t->rows[i].in_sample = valid_is_fitted(set, t->id);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int valid_list_yaml(struct config_ctx *cx, const char *dir,
		    const char ***out, size_t *n)
{
	DIR *dp = opendir(dir);
	struct dirent *e;
	const char **v = NULL;
	size_t cap = 0;

	*n = 0;
	if (!dp) {
		diag_error(cx->diag, dir, 0, 0, "cannot read the folder");
		return -1;
	}
	while ((e = readdir(dp))) {
		size_t len = strlen(e->d_name);
		char *p;

		if (len < 6 || strcmp(e->d_name + len - 5, ".yaml") != 0)
			continue;
		if (*n == cap && arena_grow(cx->arena, (void **)&v, &cap,
					    *n + 1, sizeof(*v)) != 0)
			break;
		p = arena_alloc(cx->arena, strlen(dir) + len + 2);
		if (!p)
			break;
		sprintf(p, "%s/%s", dir, e->d_name);
		v[(*n)++] = p;
	}
	closedir(dp);
	if (e) {
		diag_oom(cx->diag);
		return -1;
	}
	if (*n)
		qsort(v, *n, sizeof(*v), cmp_str);
	*out = v;
	return 0;
}

int valid_kernels(struct valid_set *set, struct config_ctx *cx,
		  const char *dir, const char *const *sets, size_t nsets)
{
	const char **files;
	size_t n, i;

	if (valid_list_yaml(cx, dir, &files, &n) != 0)
		return -1;
	for (i = 0; i < n; i++)
		if (do_file(set, cx, files[i], sets, nsets) != 0)
			return -1;
	return 0;
}
