/*
 * infer_run.c - one inference step end to end, and the per-engine-step
 * model of serving.
 *
 * step latency     t = the end of the step program's last task, plus the
 *                  host's share when the engine does not overlap it with
 *                  the GPU (it is then a task of the program); with
 *                  overlap_scheduling t = max(GPU, host), as one step of a
 *                  steady stream of steps
 * tokens/s         prefill: T / t (prompt tokens); decode: S / t (tokens
 *                  generated, one per sequence), per instance; the job's
 *                  dp instances run alike
 * HBM floor        (weights read + KV read) / HBM peak bandwidth of the
 *                  fullest stage: no decode step can beat it
 * memory           infer_mem.h
 *
 * Serving (infer_stepper): the same units, costed for the step's batch,
 * each run alone on the event engine (the stage's one rank, collectives
 * timed on the idle fabric); a stage of L layers takes L layer times
 * (infer_prog.h), the pipeline's latency is the sum of its stages and
 * transfers and it accepts a batch every slowest-stage time.
 */
#include "infer_run.h"

#include <math.h>
#include <string.h>

#include "base/diag.h"
#include "base/mem.h"
#include "config/spec_job.h"
#include "engine/sim.h"
#include "gpu/gpu.h"
#include "network/net.h"

void infer_job_batch(const struct job_spec *j, struct infer_batch *b)
{
	const struct serving_spec *s = &j->serving;
	double n = (double)s->batch, ctx = (double)s->context_len;

	memset(b, 0, sizeof(*b));
	if (j->phase == PHASE_PREFILL)
		infer_batch_add(b, n, fmax(1, round(s->input_len.mean)), ctx,
				1, 1);
	else
		infer_batch_add(b, n, 1, ctx, 0, 1);
}

/* ---- floors and rates ---- */

/* Weights the GEMMs of stage r read per step, and the KV its attention
 * reads, per GPU. */
static void stage_reads(const struct infer_ctx *x, const struct infer_batch *b,
			int64_t r, double *w_B, double *kv_B)
{
	const struct infer_dims *d = &x->dims;
	double layers = (double)x->split[r], ctx = 0;
	int i;

	*w_B = layers * infer_layer_params(d) * d->weight_B;
	if (r == x->pp - 1 && infer_batch_sampled(b) > 0)
		*w_B += infer_head_params(d) * d->act_B;
	for (i = 0; i < b->n; i++)
		if (!b->g[i].pad)
			ctx += b->g[i].count * b->g[i].ctx;
	*kv_B = layers * ctx * infer_kv_token_layer_B(d);
}

static void floors(const struct infer_ctx *x, const struct infer_batch *b,
		   struct infer_result *out)
{
	double bw = x->gpu->hbm.bandwidth_Bps, w, kv, best = -1;
	int64_t r;

	for (r = 0; r < x->pp; r++) {
		stage_reads(x, b, r, &w, &kv);
		if ((w + kv) / bw > best) {
			best = (w + kv) / bw;
			out->weights_read_B = w;
			out->kv_read_B = kv;
		}
	}
	out->hbm_floor_s = best;
}

static void rates(const struct infer_ctx *x, const struct job_spec *j,
		  const struct infer_unit *u, struct infer_result *out)
{
	double layers = 0, peak = gpu_peak_flops(x->gpu, x->dims.compute);
	int64_t r;

	for (r = 0; r < x->pp; r++)
		layers = fmax(layers, (double)x->split[r]);
	out->gpus = system_gpus(j->system);
	out->instances = j->parallelism.dp;
	out->flops_per_gpu = layers * u[IU_LAYER].flops + u[IU_EMBED].flops +
			     u[IU_HEAD].flops;
	if (out->step_s <= 0)
		return;
	out->tokens_per_s = (j->phase == PHASE_PREFILL ? out->tokens
						       : out->info.sampled) /
			    out->step_s;
	out->tokens_per_s_total = out->tokens_per_s * (double)out->instances;
	out->tflops_per_gpu = out->flops_per_gpu / out->step_s / 1e12;
	out->mfu = peak > 0 ? out->flops_per_gpu / out->step_s / peak : 0;
}

/* ---- the full program ---- */

static int simulate(const struct job_spec *j, struct prog *p, FILE *trace,
		    struct infer_result *out, struct diag *d)
{
	struct sim *sim = sim_new();
	struct infer_comm comm;
	struct exec_result er;
	const char *why = "";
	int rc = -1, crc;

	memset(&comm, 0, sizeof(comm));
	if (!sim) {
		diag_oom(d);
		return -1;
	}
	crc = infer_comm_init(&comm, j, sim, 0, d);
	if (crc != 0) {
		rc = crc;
		goto out;
	}
	if (exec_run(p, sim, &infer_comm_ops, &comm, &er, &why) != 0)
		goto fail;
	why = comm.failed ? comm.why :
	      net_failed(comm.net) ? net_error(comm.net) :
	      comm.custom && net_failed(comm.custom) ? net_error(comm.custom) :
	      NULL;
	if (why)
		goto fail;
	out->gpu_s = er.step_s;
	memcpy(out->part_s, er.part_s, sizeof(out->part_s));
	out->events = er.events;
	out->tasks = prog_tasks(p);
	if (step_coll_stats(p, &out->colls, &out->ncolls) != 0) {
		diag_oom(d);
		goto out;
	}
	if (trace && exec_write_trace(p, trace, infer_rank_label, NULL) != 0) {
		diag_error(d, NULL, 0, 0, "could not write the trace");
		goto out;
	}
	rc = 0;
	goto out;
fail:
	diag_error(d, NULL, 0, 0, "the step simulation failed: %s", why);
out:
	infer_comm_release(&comm);
	sim_free(sim);
	return rc;
}

/* The step's latency from the program's time and the host's share. */
static void latency(const struct infer_ctx *x, struct infer_result *out)
{
	out->host_s = out->info.host_s;
	out->step_s = out->gpu_s;
	if (out->info.host_in_prog)
		out->gpu_s -= out->host_s;
	if (x->eng->overlap_scheduling && out->host_s > out->gpu_s) {
		out->part_s[EXEC_OTHER] += out->host_s - out->gpu_s;
		out->step_s = out->host_s;
	}
}

int infer_run(const struct job_spec *j, FILE *trace, struct infer_result *out,
	      struct diag *d)
{
	struct infer_ctx x;
	struct infer_batch b, padded;
	struct infer_unit *u = NULL;
	struct prog *p = NULL;
	double seq_tokens;
	int64_t micro;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = infer_ctx_init(&x, j, d);
	if (rc != 0)
		return rc;
	infer_job_batch(j, &b);
	out->batch = infer_batch_seqs(&b);
	out->tokens = infer_batch_tokens(&b);
	micro = x.pp > 1 ? (int64_t)fmin((double)x.pp, out->batch) : 1;
	rc = -1;
	u = mem_calloc(3, sizeof(*u));
	p = infer_prog_step(&x, &b, micro, &out->info, d);
	if (!u || !p)
		goto out;
	if (simulate(j, p, trace, out, d) != 0)
		goto out;
	latency(&x, out);
	infer_graph_for(&x, &b, &padded);
	infer_units(&x, &padded, out->info.graph, &u[IU_EMBED], &u[IU_LAYER],
		    &u[IU_HEAD]);
	rates(&x, j, u, out);
	floors(&x, &b, out);
	seq_tokens = (double)j->serving.context_len +
		     (j->phase == PHASE_PREFILL ? j->serving.input_len.mean : 1);
	infer_mem_job(j, x.eng, &x.dims, x.split, (double)x.max_tokens,
		      (double)x.max_seqs, seq_tokens, &out->mem);
	rc = 0;
out:
	if (!u)
		diag_oom(d);
	mem_free(u);
	prog_free(p);
	infer_ctx_release(&x);
	return rc;
}

void infer_result_release(struct infer_result *r)
{
	mem_free(r->colls);
	r->colls = NULL;
	r->ncolls = 0;
}

/* ---- the stepper ---- */

int infer_stepper_init(struct infer_stepper *s, const struct job_spec *j,
		       struct diag *d)
{
	int rc;

	memset(s, 0, sizeof(*s));
	rc = infer_ctx_init(&s->ctx, j, d);
	if (rc != 0)
		return rc;
	s->sim = sim_new();
	if (!s->sim) {
		infer_ctx_release(&s->ctx);
		diag_oom(d);
		return -1;
	}
	rc = infer_comm_init(&s->comm, j, s->sim, 1, d);
	if (rc != 0) {
		sim_free(s->sim);
		infer_ctx_release(&s->ctx);
		s->sim = NULL;
	}
	return rc;
}

void infer_stepper_release(struct infer_stepper *s)
{
	infer_comm_release(&s->comm);
	sim_free(s->sim);
	infer_ctx_release(&s->ctx);
	s->sim = NULL;
}

/* Run program p (freed here) alone; its time and split into *t and part.
 * -1 after reporting. */
static int run_alone(struct infer_stepper *s, struct prog *p, double *t,
		     double *part, struct diag *d)
{
	struct exec_result er;
	const char *why = "";
	int rc = -1;

	if (!p) {
		diag_oom(d);
		return -1;
	}
	if (exec_run(p, s->sim, &infer_comm_ops, &s->comm, &er, &why) != 0) {
		diag_error(d, NULL, 0, 0, "the step simulation failed: %s", why);
		goto out;
	}
	if (s->comm.failed) {
		diag_error(d, NULL, 0, 0, "the step simulation failed: %s",
			   s->comm.why);
		goto out;
	}
	*t = er.step_s;
	memcpy(part, er.part_s, sizeof(er.part_s));
	s->events += er.events;
	rc = 0;
out:
	prog_free(p);
	return rc;
}

static void add_parts(double *acc, const double *part, double times)
{
	int k;

	for (k = 0; k < EXEC_PART_COUNT; k++)
		acc[k] += times * part[k];
}

int infer_stepper_cost(struct infer_stepper *s, const struct infer_batch *b,
		       struct infer_step_cost *out, struct diag *d)
{
	const struct infer_ctx *x = &s->ctx;
	struct infer_unit u[3];
	struct infer_batch padded;
	double t[3], part[3][EXEC_PART_COUNT], ts, ps[EXEC_PART_COUNT];
	double stage;
	int64_t r;
	int k;

	memset(out, 0, sizeof(*out));
	out->graph = infer_graph_for(x, b, &padded);
	out->host_s = infer_host_s(x, b);
	infer_units(x, &padded, out->graph, &u[IU_EMBED], &u[IU_LAYER],
		    &u[IU_HEAD]);
	for (k = 0; k < 3; k++) {
		int64_t stage_of = k == IU_HEAD ? x->pp - 1 : 0;

		if (run_alone(s, infer_prog_unit(x, &u[k], stage_of), &t[k],
			      part[k], d) != 0)
			return -1;
	}
	for (r = 0; r < x->pp; r++) {
		stage = (double)x->split[r] * t[IU_LAYER] +
			(r == 0 ? t[IU_EMBED] : 0) +
			(r == x->pp - 1 ? t[IU_HEAD] : 0);
		add_parts(out->part_s, part[IU_LAYER], (double)x->split[r]);
		if (r == 0)
			add_parts(out->part_s, part[IU_EMBED], 1);
		if (r == x->pp - 1)
			add_parts(out->part_s, part[IU_HEAD], 1);
		out->latency_s += stage;
		out->interval_s = fmax(out->interval_s, stage);
		if (r + 1 < x->pp) {
			if (run_alone(s, infer_prog_send(x,
				      infer_batch_tokens(&padded), r), &ts, ps,
				      d) != 0)
				return -1;
			out->latency_s += ts;
			add_parts(out->part_s, ps, 1);
		}
	}
	s->steps++;
	return 0;
}
