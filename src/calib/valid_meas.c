/*
 * valid_meas.c - predicting what `llmsim measure` measured: each stored
 * point on the system it ran on (or another, --system), and the tables
 * `llmsim validate` prints for them. `llmsim calibrate` predicts through
 * the same calls.
 *
 * The ranks' layout is the measurement's (its nodes and devices per
 * node override the system's), so a preset that describes a host's
 * hardware predicts a run on any number of its cores. Per op:
 *   collectives  net_collective_time() on the idle fabric, as `llmsim
 *                collective`: send/recv as nccl-tests' ring (every rank
 *                to the next, busbw = algbw), all-to-all-v with the mpi
 *                backend's skew (bk_a2av_count in src/backend/bk_main.c:
 *                rank i sends rank j a share (i + j mod p) + 1 of
 *                p (p + 1) / 2 of the size)
 *   copy         gpu_memory_op(): read and write the size, working set
 *                twice the size
 *   gemm         gpu_gemm() in the dtype; on a GPU with the power model
 *                (gpu_power.c) the median of the backend's timed calls
 *                after its warm-ups, from an idle GPU (valid_gemm_point_s)
 * Rows compare rates (bus bandwidth, GB/s of copy traffic, TFLOP/s);
 * error = predicted rate / measured rate - 1 = measured time / predicted
 * time - 1.
 */
#include "valid.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/diag.h"
#include "base/mem.h"
#include "config/cnode.h"
#include "config/config.h"
#include "config/spec_collectives.h"
#include "config/spec_system.h"
#include "gpu/gpu.h"
#include "network/net.h"
#include "store/store.h"
#include "calib.h"


void valid_pred_close(struct valid_pred *p)
{
	net_free(p->net);
	mem_free(p->gpus);
	memset(p, 0, sizeof(*p));
}

int valid_pred_open(struct valid_pred *p, struct config_ctx *cx,
		    const char *system, const char *const *sets, size_t nsets)
{
	memset(p, 0, sizeof(*p));
	if (!(p->sys = arena_alloc(cx->arena, sizeof(*p->sys)))) {
		diag_oom(cx->diag);
		return -1;
	}
	memset(p->sys, 0, sizeof(*p->sys));
	if (config_load(cx, &system_schema, system, sets, nsets, p->sys) != 0)
		return -1;
	p->ngpus = (uint32_t)system_gpus(p->sys);
	p->gpus = mem_alloc(p->ngpus * sizeof(*p->gpus));
	if (p->gpus)
		p->net = net_new(p->sys, NULL, cx->diag);
	if (!p->gpus || !p->net) {
		if (!p->gpus)
			diag_oom(cx->diag);
		valid_pred_close(p);
		return -1;
	}
	for (uint32_t i = 0; i < p->ngpus; i++)
		p->gpus[i] = i;
	return 0;
}

static const struct {
	const char *name;
	int op;				/* enum coll_op, or -1 */
} op_map[] = {
	{"allreduce", COLL_ALLREDUCE}, {"allgather", COLL_ALLGATHER},
	{"reducescatter", COLL_REDUCESCATTER}, {"alltoall", COLL_ALLTOALL},
	{"alltoallv", COLL_ALLTOALL}, {"broadcast", COLL_BROADCAST},
	{"reduce", COLL_REDUCE}, {"sendrecv", COLL_SENDRECV},
};

/* The byte matrix of a send/recv ring or the all-to-all-v skew: each
 * rank sends the size in all (the backends' protocol 2, as the testers;
 * older rows are put in these terms on import and by the store's
 * migration 10). */
static double *matrix(const char *op, uint32_t p, double bytes)
{
	double *m = mem_calloc((size_t)p * p, sizeof(*m)), W = p * (p + 1.0) / 2;
	uint32_t i, j;

	for (i = 0; m && i < p; i++)
		for (j = 0; j < p; j++) {
			if (strcmp(op, "sendrecv") == 0)
				m[i * p + j] = j == (i + 1) % p ? bytes : 0;
			else
				m[i * p + j] = bytes * ((i + j) % p + 1) / W;
		}
	return m;
}

static int predict_coll(struct valid_pred *p, const struct store_meas_row *r,
			int op, double *t, char *note, size_t len,
			struct diag *d)
{
	struct coll_desc c = { (enum coll_op)op, r->size_B, p->gpus, r->ranks,
			       NULL, -1, -1, 1, 0, NULL, 0, 0, 0 };
	struct net_coll_result res;
	double *m = NULL;
	int rc;

	if (r->ranks > p->ngpus) {
		diag_error(d, NULL, 0, 0, "%u ranks measured, the system has %u",
			   r->ranks, p->ngpus);
		return -1;
	}
	if (strcmp(r->op, "sendrecv") == 0 || strcmp(r->op, "alltoallv") == 0) {
		if (!(m = matrix(r->op, r->ranks, r->size_B))) {
			diag_oom(d);
			return -1;
		}
		c.op = COLL_ALLTOALL;
		c.a2a_B = m;
		if (strcmp(r->op, "sendrecv") == 0)
			c.algo = ALGO_P2P;
	}
	rc = net_collective_time(p->net, &c, &res, d);
	mem_free(m);
	if (rc != 0)
		return -1;
	*t = res.time_s;
	snprintf(note, len, "%s/%s", res.algorithm, res.protocol);
	return 0;
}

static int dtype_of(const char *t)
{
	if (strcmp(t, "float") == 0)
		return DTYPE_FP32;
	if (strcmp(t, "half") == 0)
		return DTYPE_FP16;
	if (strcmp(t, "bfloat16") == 0)
		return DTYPE_BF16;
	return -1;
}

/* Untimed calls before a point's timed ones: the backend's default
 * (bk_main.c, --warmup 5; the run's hello line says it, the store does
 * not keep it). */
#define BK_WARMUP_CALLS 5

/* The largest GEMM size predicted (2^53: doubles still whole). */
#define GEMM_MAX_SIZE 9007199254740992LL

/* A GEMM point's time: the median of the backend's r->iters timed calls
 * (gpu.cu time_iters: BK_WARMUP_CALLS back to back, then each timed
 * call on its own), the GPU idle before them (the host checks the last
 * point's result and uploads this one's). Under the power model the
 * calls run at burst_matrix_clock (t_b each) until the power window's
 * average reaches the limit, t_hold = gpu_power_burst_hold_s(idle_power)
 * after the first call starts, and at sustained_matrix_clock (t_s) from
 * then; the call across t_hold does its first (t_hold - start) / t_b of
 * the work at t_b's rate. The calls' times never fall, so the median is
 * the middle call's (the mean of the two middle ones for even counts).
 * H200 bf16 8192^3: t_b 1.383 ms; 116 ms x (1 - 0.173) / (1.386 - 0.173)
 * = 79.1 ms hold: all 25 calls (34.6 ms) at burst_matrix_clock. */
double valid_gemm_point_s(const struct gpu_spec *g, int dtype,
			  const struct store_meas_row *r)
{
	double m = (double)r->m, n = (double)r->n, k = (double)r->k;
	enum dtype dt = (enum dtype)dtype;
	double ts = gpu_gemm(g, dt, m, n, k, 1).time_s, tb, hold, start = 0;
	double lo = 0, hi = 0, t;
	int calls = r->iters > 0 ? r->iters : 1, c, mid = calls / 2;
	struct gpu_spec gb;

	if (!gpu_power_modelled(g))
		return ts;
	gpu_at_matrix_clock(g, g->burst_matrix_clock_hz, &gb);
	tb = gpu_gemm(&gb, dt, m, n, k, 1).time_s;
	hold = gpu_power_burst_hold_s(g, g->idle_power);
	/* up to the median call; from the first past the hold, all t_s */
	for (c = 0; c <= BK_WARMUP_CALLS + mid; c++) {
		if (start >= hold) {
			if (c <= BK_WARMUP_CALLS + mid - 1)
				lo = ts;
			hi = ts;
			break;
		}
		t = gpu_power_call_s(tb, ts, start, hold);
		if (c == BK_WARMUP_CALLS + mid - 1)
			lo = t;
		if (c == BK_WARMUP_CALLS + mid)
			hi = t;
		start += t;
	}
	return calls % 2 ? hi : (lo + hi) / 2;
}

int valid_predict_point(struct valid_pred *p, const struct store_meas_row *r,
			double *time_s, char *note, size_t len, struct diag *d)
{
	size_t i;
	int dt;

	note[0] = '\0';
	if (strcmp(r->op, "copy") == 0) {
		*time_s = gpu_memory_op(p->sys->gpu, r->size_B, r->size_B, 0,
					2 * r->size_B).time_s;
		return 0;
	}
	if (strcmp(r->op, "gemm") == 0) {
		if ((dt = dtype_of(r->type)) < 0) {
			diag_error(d, NULL, 0, 0, "gemm in %s: not modelled",
				   r->type);
			return -1;
		}
		/* measure --import checks them; a database written before
		 * (or by hand) may not have */
		if (r->m < 1 || r->n < 1 || r->k < 1 ||
		    r->m > GEMM_MAX_SIZE || r->n > GEMM_MAX_SIZE ||
		    r->k > GEMM_MAX_SIZE) {
			diag_error(d, NULL, 0, 0, "gemm %lld x %lld x %lld: "
				   "expected m, n and k from 1 to 2^53",
				   (long long)r->m, (long long)r->n,
				   (long long)r->k);
			return -1;
		}
		*time_s = valid_gemm_point_s(p->sys->gpu, dt, r);
		return 0;
	}
	for (i = 0; i < sizeof(op_map) / sizeof(op_map[0]); i++)
		if (strcmp(op_map[i].name, r->op) == 0)
			return predict_coll(p, r, op_map[i].op, time_s, note, len,
					    d);
	diag_error(d, NULL, 0, 0, "op '%s': not one llmsim predicts", r->op);
	return -1;
}

int valid_point_empty(const struct store_meas_row *r)
{
	return r->count == 0 && r->size_B == 0 &&
	       strcmp(r->op, "gemm") != 0 && strcmp(r->op, "copy") != 0;
}

double valid_point_rate(const struct store_meas_row *r, double time_s)
{
	double med = strcmp(r->op, "gemm") == 0 ? r->rate :
		     strcmp(r->op, "copy") == 0 ? r->rate : r->busbw_Bps;

	/* The stored rate is at the median time; any other time scales it. */
	return med * r->time_s / time_s;
}

const char *valid_point_unit(const struct store_meas_row *r)
{
	return strcmp(r->op, "gemm") == 0 ? "TFLOP/s" : "GB/s";
}

double valid_point_scale(const struct store_meas_row *r)
{
	return strcmp(r->op, "gemm") == 0 ? 1e12 : 1e9;
}

/* The --set list a run's predictions use: its own sets (sets_json), all
 * of them, then its rank layout. Array and strings in the arena (*out);
 * count, or -1 after reporting (a sets_json that is not an array of
 * strings: a set skipped would predict another system). */
int valid_run_sets(struct config_ctx *cx, const struct store_meas_run *run,
		   const char ***out)
{
	cJSON *a = cJSON_Parse(run->info.sets_json), *it;
	const char **sets;
	int n = 0, rc = -1;

	if (!cJSON_IsArray(a)) {
		diag_error(cx->diag, NULL, 0, 0, "measure run %lld: sets_json: "
			   "expected an array of --set strings",
			   (long long)run->id);
		goto out;
	}
	if (!(sets = arena_alloc(cx->arena, ((size_t)cJSON_GetArraySize(a) +
					     2) * sizeof(*sets)))) {
		diag_oom(cx->diag);
		goto out;
	}
	cJSON_ArrayForEach(it, a) {
		if (!cJSON_IsString(it)) {
			diag_error(cx->diag, NULL, 0, 0, "measure run %lld: sets_json"
				   ": set %d is not a string",
				   (long long)run->id, n + 1);
			goto out;
		}
		sets[n++] = arena_strdup(cx->arena, it->valuestring);
	}
	sets[n++] = arena_printf(cx->arena, "nodes=%d", run->info.nodes);
	sets[n++] = arena_printf(cx->arena, "gpus_per_node=%d",
				 run->info.devices_per_node);
	for (int i = 0; i < n; i++)
		if (!sets[i]) {
			diag_oom(cx->diag);
			goto out;
		}
	*out = sets;
	rc = n;
out:
	cJSON_Delete(a);
	return rc;
}

struct meas_ctx {
	struct valid_set *set;
	struct config_ctx *cx;
	const struct valid_meas_opts *o;
	int rc;
};

static int add_point(struct valid_table *t, struct valid_pred *p,
		     const struct store_meas_row *r, int use_min,
		     double *pred_s, struct diag *d)
{
	struct valid_row *v = valid_row_add(t, d);
	double meas_s = use_min ? r->time_min_s : r->time_s;
	double scale = valid_point_scale(r);

	if (!v)
		return -1;
	if (strcmp(r->op, "gemm") == 0)
		snprintf(v->label, sizeof(v->label), "%s %lld x %lld x %lld",
			 r->type, (long long)r->m, (long long)r->n,
			 (long long)r->k);
	else
		snprintf(v->label, sizeof(v->label), "%s %.0f B", r->op,
			 r->size_B);
	v->size_B = r->size_B;
	if (valid_predict_point(p, r, pred_s, v->note, sizeof(v->note),
				d) != 0)
		return -1;
	v->measured = valid_point_rate(r, meas_s) / scale;
	v->predicted = valid_point_rate(r, *pred_s) / scale;
	v->error = meas_s / *pred_s - 1;
	if (strcmp(r->check, "wrong") == 0) {
		v->scored = 0;
		snprintf(v->note, sizeof(v->note), "(check failed, not scored)");
	} else if (r->ranks == 1 && isnan(r->rate)) {
		/* a collective of one rank: llmsim moves nothing (0 s); the
		 * library's call is a local copy or nothing (in place) */
		v->scored = 0;
		snprintf(v->note, sizeof(v->note), "(1 rank: nothing to move, "
			 "not predicted)");
	} else if (valid_point_empty(r)) {
		/* the testers print count-0 sizes; the library moves nothing */
		v->scored = 0;
		snprintf(v->note, sizeof(v->note), "(count 0: nothing moved, "
			 "not scored)");
	} else if (!(v->measured > 0) || !isfinite(v->error)) {
		v->scored = 0;
		snprintf(v->note, sizeof(v->note), "(no rate, not scored)");
	}
	return 0;
}

/* Predictions of a run's points with extra sets (calib_band's fn). */
struct band_ctx {
	struct config_ctx *cx;
	const char *system;
	const char **sets;
	int nsets;
	const struct store_meas_run *run;
};

static int band_eval(void *ctx, const char *const *extra, size_t nextra,
		     double *out)
{
	struct band_ctx *b = ctx;
	const char **sets = mem_alloc(((size_t)b->nsets + nextra + 1) *
				      sizeof(*sets));
	struct config_ctx cx = *b->cx;
	struct valid_pred p;
	struct arena a;
	char note[64];
	size_t i, n = 0;
	int rc = 0;

	if (!sets) {
		diag_oom(cx.diag);
		return -1;
	}
	for (i = 0; i < (size_t)b->nsets; i++)
		sets[n++] = b->sets[i];
	for (i = 0; i < nextra; i++)
		sets[n++] = extra[i];
	arena_init(&a);
	cx.arena = &a;
	rc = valid_pred_open(&p, &cx, b->system, sets, n);
	for (i = 0; rc == 0 && i < b->run->nrows; i++)
		rc = valid_predict_point(&p, &b->run->rows[i], &out[i], note,
					 sizeof(note), cx.diag);
	if (p.net)
		valid_pred_close(&p);
	arena_release(&a);
	mem_free(sets);
	return rc;
}

/* The 95% band of every row of t from the system's calibration. */
static int bands(struct valid_table *t, struct band_ctx *b, const char *calib,
		 const double *pred_s)
{
	size_t n = b->run->nrows, i;
	double *sig = mem_alloc((n + 1) * sizeof(double));
	int rc = -1;

	if (sig && calib_band(b->cx, calib, "", 1, band_eval, b, NULL, 0,
			      pred_s, n, sig) == 0) {
		for (i = 0; i < n && i < t->n; i++) {
			/* The fit is of ln time: the band is one there. */
			const struct store_meas_row *r = &b->run->rows[i];
			double hi_s, lo_s;

			calib_interval(pred_s[i], sig[i], &lo_s, &hi_s);

			t->rows[i].lo = valid_point_rate(r, hi_s) /
					valid_point_scale(r);
			t->rows[i].hi = valid_point_rate(r, lo_s) /
					valid_point_scale(r);
		}
		rc = 0;
	}
	if (!sig)
		diag_oom(b->cx->diag);
	mem_free(sig);
	return rc;
}

static void title(struct valid_table *t, const struct store_meas_run *run,
		  const char *system, int use_min)
{
	snprintf(t->id, sizeof(t->id), "measure run %lld", (long long)run->id);
	const char *lib = run->info.library_version[0] ?
			  run->info.library_version : run->info.library[0] ?
			  run->info.library : "no library";

	snprintf(t->title, sizeof(t->title), "%s, %d rank%s (%d x %d), %s "
		 "backend, %s on %s (%s), %s; predicted on %s%s%s",
		 run->nrows ? run->rows[0].op : "?", run->info.ranks,
		 run->info.ranks == 1 ? "" : "s", run->info.nodes,
		 run->info.devices_per_node, run->info.backend, lib,
		 run->info.host, run->info.device, run->created_at, system,
		 use_min ? "; fastest iterations" : "",
		 run->info.incomplete ? "; INCOMPLETE (the stream stopped "
		 "before its end line)" : "");
	t->unit = run->nrows ? valid_point_unit(&run->rows[0]) : "GB/s";
}

/* Whether the calibration at path was fitted on the run id names (its
 * rows are then in-sample when predicted with it). */
static int calib_names(struct config_ctx *cx, const char *path,
		       const char *id)
{
	struct calib_file f;
	size_t i;

	if (calib_file_load(cx, path, &f) != 0)
		return 0;
	for (i = 0; i < f.nfitted; i++)
		if (strcmp(f.fitted_on[i], id) == 0)
			return 1;
	return 0;
}

/* More mpi ranks than the host has CPUs time-share them, which llmsim
 * does not model (each rank is a core of its own): shown, not scored. */
static void oversubscribed(struct valid_table *t,
			   const struct store_meas_run *run)
{
	size_t i;

	if (strcmp(run->info.backend, "mpi") != 0 || run->info.cpus < 1 ||
	    run->info.devices_per_node <= run->info.cpus)
		return;
	for (i = 0; i < t->n; i++)
		if (t->rows[i].scored) {
			t->rows[i].scored = 0;
			snprintf(t->rows[i].note, sizeof(t->rows[i].note),
				 "(%d ranks on %d CPUs, not scored)",
				 run->info.devices_per_node, run->info.cpus);
		}
}

/* --system FILE where FILE is what `llmsim calibrate` writes (an
 * `overlay:` of a system's keys and the `system:` it was fitted for):
 * that system with the calibration applied, as validate --help says
 * ("a preset, a file, a calibration"). It went to config_load as a
 * system file and failed on 'overlay': unknown key. The system's name
 * into *name and "calibration=FILE" into *set; 0 when path is no such
 * file (then it is a preset or a system file), -1 out of memory. */
static int calib_as_system(struct config_ctx *cx, const char *path,
			   const char **name, const char **set)
{
	const struct cnode *doc, *sys;
	struct diag quiet;
	FILE *f;

	if (!strchr(path, '/') && !strstr(path, ".yaml") &&
	    !strstr(path, ".yml"))
		return 0;	/* a preset name */
	if (!(f = fopen(path, "r")))
		return 0;
	fclose(f);
	diag_init(&quiet, NULL);	/* config_load reports a bad file */
	doc = cnode_load_yaml(cx->arena, path, &quiet);
	if (quiet.oom) {
		diag_oom(cx->diag);
		return -1;
	}
	if (!doc || doc->kind != CNODE_MAP || !cnode_get(doc, "overlay") ||
	    !(sys = cnode_get(doc, "system")) || sys->kind != CNODE_SCALAR ||
	    !sys->text[0])
		return 0;
	*name = sys->text;
	if (!(*set = arena_printf(cx->arena, "calibration=%s", path))) {
		diag_oom(cx->diag);
		return -1;
	}
	return 1;
}

/* A run imported with --set K=V of a key the system's calibration
 * fitted: the fit replaced the run's V by its own value (calibrate:
 * the run's sets, then the parameters), so validate predicts with the
 * fitted value too, and says so. It predicted with V when the system
 * file names the calibration (its overlay is applied before the sets)
 * and with the fitted value under --system CALIBRATION (applied after
 * them), silently either way, and the band (each parameter moved one
 * standard error from the fitted value) was of another prediction.
 * The calibration set again after the run's sets (an overlay a --set
 * names is applied then), p reopened. 0, or -1 after reporting. */
static int calib_over_sets(struct config_ctx *cx,
			   const struct store_meas_run *run, const char *system,
			   struct valid_pred *p, const char ***sets, int *n)
{
	const struct calib_param *q;
	struct calib_file f;
	const char **more, *cal;
	int i, hit = 0;

	if (!p->sys->calibration)
		return 0;
	if (calib_file_load(cx, p->sys->calibration, &f) != 0) {
		valid_pred_close(p);
		return -1;
	}
	for (i = 0; i < *n; i++)
		if ((q = calib_file_set_names(&f, "", (*sets)[i]))) {
			fprintf(stderr, "llmsim: validate: measure run %lld: "
				"its --set %s gives way to %s of the "
				"calibration %s (%.6g), as in the fit "
				"(docs/measure.md)\n", (long long)run->id,
				(*sets)[i], q->key, p->sys->calibration,
				q->value);
			hit = 1;
		}
	if (!hit)
		return 0;
	cal = arena_printf(cx->arena, "calibration=%s", p->sys->calibration);
	more = arena_alloc(cx->arena, ((size_t)*n + 1) * sizeof(*more));
	valid_pred_close(p);
	if (!cal || !more) {
		diag_oom(cx->diag);
		return -1;
	}
	memcpy(more, *sets, (size_t)*n * sizeof(*more));
	more[(*n)++] = cal;
	*sets = more;
	return valid_pred_open(p, cx, system, *sets, (size_t)*n);
}

static int one_run(void *ctx, const struct store_meas_run *run)
{
	struct meas_ctx *m = ctx;
	struct config_ctx *cx = m->cx;
	const char **sets, *system = m->o->system ? m->o->system :
				     run->info.system;
	double *pred_s = NULL;
	struct valid_table *t;
	struct valid_pred p;
	const char *p_calib = NULL, *fit_id;
	int n, rc = 0, fitted;
	uint32_t i;

	if (!system || !system[0]) {
		fprintf(stderr, "llmsim: validate: measure run %lld names no "
			"system (measured without --system): not predicted\n",
			(long long)run->id);
		return 0;
	}
	if ((n = valid_run_sets(cx, run, &sets)) < 0)
		return -1;
	if (m->o->system) {
		const char *name = NULL, *cal = NULL, **more;
		int c = calib_as_system(cx, m->o->system, &name, &cal);

		if (c < 0)
			return -1;
		if (c > 0) {	/* the run's sets, then the calibration */
			if (!(more = arena_alloc(cx->arena, ((size_t)n + 1) *
						 sizeof(*more)))) {
				diag_oom(cx->diag);
				return -1;
			}
			memcpy(more, sets, (size_t)n * sizeof(*more));
			more[n++] = cal;
			sets = more;
			system = name;
		}
	}
	if (!(t = valid_table_add(m->set, VK_MEASURED, cx->diag)) ||
	    !(pred_s = mem_alloc((run->nrows + 1) * sizeof(double))))
		return -1;
	title(t, run, system, m->o->use_min);
	if (valid_pred_open(&p, cx, system, sets, (size_t)n) != 0 ||
	    calib_over_sets(cx, run, system, &p, &sets, &n) != 0) {
		mem_free(pred_s);
		return -1;
	}
	for (i = 0; i < run->nrows && rc == 0; i++)
		rc = add_point(t, &p, &run->rows[i], m->o->use_min, &pred_s[i],
			       cx->diag);
	if (rc == 0 && (p_calib = p.sys->calibration)) {
		struct band_ctx b = { cx, system, sets, n, run };

		rc = bands(t, &b, p.sys->calibration, pred_s);
	}
	valid_pred_close(&p);
	/* whole (a buffer of 600 B cut a database's long real path, and
	 * the run's rows were not marked in-sample) */
	fit_id = arena_printf(cx->arena, "measure run %lld in %s",
			      (long long)run->id, m->o->db ? m->o->db : "");
	if (!fit_id) {
		diag_oom(cx->diag);
		mem_free(pred_s);
		return -1;
	}
	fitted = p_calib && calib_names(cx, p_calib, fit_id);
	for (i = 0; i < t->n; i++)
		t->rows[i].in_sample = fitted;
	oversubscribed(t, run);
	mem_free(pred_s);
	return rc;
}

int valid_measured(struct valid_set *set, struct config_ctx *cx,
		   struct store *st, const struct valid_meas_opts *o)
{
	struct meas_ctx m = { set, cx, o, 0 };
	int64_t n = store_each_measure(st, o->run, one_run, &m, cx->diag);

	return n < 0 ? -1 : n > INT32_MAX ? INT32_MAX : (int)n;
}
