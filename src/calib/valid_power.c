/*
 * valid_power.c - the clock a kernel table's calls ran at under the
 * board's power limit (gpu_power.c).
 *
 * The GPU rates of configs/gpus are fitted at sustained_matrix_clock,
 * the clock back-to-back GEMMs hold at the power limit, and a kernel
 * table is predicted there unless its file says otherwise. A benchmark
 * that runs a few hundred calls after a near-idle spell never reaches
 * the limit: its GEMMs run at burst_matrix_clock for the power window's
 * hold (gpu_power_burst_hold_s from the idle board's idle_power, 79.1 ms
 * on H200) and only then drop to the sustained clock. A gemm file
 * states that regime with three keys:
 *
 *     power_before: idle   each row's calls start after an idle spell
 *     warmup_calls: W      calls of the row's kernel before the timed
 *                          ones (the harness's warm-ups, all of them)
 *     timed_calls: N       calls timed, the row's time their mean; a row
 *                          may carry its own timed_calls
 *
 * and each row is predicted as gpu_power_calls_mean_s: the row's time at
 * both clocks (its whole model rerun at burst_matrix_clock), the calls
 * at the burst until the hold, sustained after. The rows of such a file
 * must be GPU-bound calls (a host-bound harness idles the GPU between
 * them: the power rises slower than the model's); a GPU without the
 * power model is an error at power_before.
 *
 * The kernel's accumulator stages. A gemm file may also say how many
 * accumulator buffers a SM of its kernel holds,
 *
 *     accumulator_stages: 1 or 2
 *
 * in place of the GPU's gemm_accumulator_stages (gpu_gemm.c, "Epilogue
 * overlap"): the GPU's value is what the vendor library of its training
 * and serving paths runs (cuBLAS's sm100 kernels: not published, 1),
 * while a table of CUTLASS sm100 kernels, whose builder gives two
 * tensor-memory stages at every tile here, states 2 where its file names
 * the kernel's source. Only for kind gemm.
 *
 * Approximation [?]: each row starts from the idle board; a harness that
 * runs its rows one after another with only short host gaps between
 * carries some of the last row's power into the window, so a long row
 * after long rows drops to the sustained clock a little earlier than
 * this says.
 */
#include "valid.h"

#include <string.h>

#include "base/diag.h"
#include "config/cnode.h"
#include "gpu/gpu.h"

/* The most calls a row may time or warm up (a bound for malformed
 * files; the harnesses here run tens to hundreds). */
#define POWER_CALLS_MAX 1e6

static const char *scalar(const struct cnode *map, const char *key)
{
	const struct cnode *n = cnode_get(map, key);

	return n && n->kind == CNODE_SCALAR ? n->text : NULL;
}

static int bad_at(const struct cnode *n, const char *what, struct diag *d)
{
	diag_error(d, n->file, n->line, n->col, "%s", what);
	return -1;
}

/* map's key, a whole number of calls in [lo, POWER_CALLS_MAX], into *out;
 * -1 after an error at it. */
static int get_calls(const struct cnode *map, const char *key, double lo,
		     double *out, struct diag *d)
{
	const struct cnode *n = cnode_get(map, key);
	char msg[160];

	if (valid_parse_number(scalar(map, key), lo, 1, out) &&
	    *out <= POWER_CALLS_MAX)
		return 0;
	snprintf(msg, sizeof(msg), "'%s': expected a whole number of calls "
		 "from %.0f to %.0f", key, lo, POWER_CALLS_MAX);
	return bad_at(n, msg, d);
}

int valid_power_read(const struct cnode *root, const char *kind,
		     const struct gpu_spec *g, struct valid_power *p,
		     struct diag *d)
{
	const struct cnode *pb = cnode_get(root, "power_before");
	const struct cnode *w = cnode_get(root, "warmup_calls");
	const struct cnode *t = cnode_get(root, "timed_calls");
	const char *v = scalar(root, "power_before");

	memset(p, 0, sizeof(*p));
	if (!pb) {
		if (w || t)
			return bad_at(w ? w : t, "'warmup_calls', "
				      "'timed_calls': only with power_before",
				      d);
		return 0;
	}
	if (!v || strcmp(v, "idle"))
		return bad_at(pb, "'power_before': expected idle (the board's "
			      "idle_power before each row's calls)", d);
	if (strcmp(kind, "gemm"))
		return bad_at(pb, "'power_before': only for kind gemm", d);
	if (!gpu_power_modelled(g))
		return bad_at(pb, "'power_before': the GPU has no power model "
			      "(burst_matrix_clock above sustained_matrix_"
			      "clock, burst_gemm_power above 1, power_window)",
			      d);
	if (!w || !t)
		return bad_at(pb, "'power_before': expected warmup_calls and "
			      "timed_calls with it", d);
	if (get_calls(root, "warmup_calls", 0, &p->warmup_calls, d) < 0 ||
	    get_calls(root, "timed_calls", 1, &p->timed_calls, d) < 0)
		return -1;
	p->on = 1;
	return 0;
}

int valid_stages_read(const struct cnode *root, const char *kind,
		      struct gpu_spec *g, struct diag *d)
{
	const struct cnode *n = cnode_get(root, "accumulator_stages");
	double v;

	if (!n)
		return 0;
	if (strcmp(kind, "gemm"))
		return bad_at(n, "'accumulator_stages': only for kind gemm", d);
	if (!valid_parse_number(scalar(root, "accumulator_stages"), 1, 1, &v) ||
	    v > 2)
		return bad_at(n, "'accumulator_stages': expected 1 or 2 (the "
			      "kernel's accumulator buffers a SM)", d);
	g->gemm_accumulator_stages = (int64_t)v;
	return 0;
}

int valid_power_row_calls(const struct cnode *row,
			  const struct valid_power *p, double *timed,
			  struct diag *d)
{
	const struct cnode *n = cnode_get(row, "timed_calls");

	*timed = p->timed_calls;
	if (!n)
		return 0;
	if (!p->on)
		return bad_at(n, "'timed_calls': only in a file with "
			      "power_before", d);
	return get_calls(row, "timed_calls", 1, timed, d);
}

double valid_power_time_s(const struct gpu_spec *g,
			  const struct valid_power *p, double timed,
			  double burst_s, double sustained_s)
{
	if (!p->on)
		return sustained_s;
	return gpu_power_calls_mean_s(g, burst_s, sustained_s, p->warmup_calls,
				      timed, g->idle_power);
}
