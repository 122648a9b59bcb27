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
 * transfers and it accepts a batch every slowest-stage time. Under
 * two-batch overlap a stage's n MoE layers take a one-layer run's time of
 * the two half batches plus n - 1 times what a second layer adds to it
 * (tbo_times): the halves' stages repeat layer after layer.
 */
#include "infer_run.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "base/diag.h"
#include "base/mem.h"
#include "base/htab.h"
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

/* Weights the GEMMs of stage r read per step (the units': an MoE layer's
 * experts with rows only), and the cached KV its attention reads (a
 * sliding-window layer's last w tokens), per GPU; a Gated DeltaNet
 * layer reads each sequence's fixed state instead (infer_gdn.c). */
static void stage_reads(const struct infer_ctx *x, const struct infer_batch *b,
			const struct infer_step_units *u, int64_t r,
			double *w_B, double *kv_B)
{
	const struct infer_dims *d = &x->dims;
	int i, k;

	*w_B = *kv_B = 0;
	for (k = 0; k < x->nkinds; k++) {
		double n = (double)infer_stage_kind_layers(x, r, k), w;
		double ctx = 0;

		if (x->kinds[k].linear) {
			*w_B += n * u->layer[k].weights_B;
			*kv_B += n * infer_batch_seqs(b) *
				 infer_gdn_state_B(d);
			continue;
		}
		w = x->kinds[k].window;
		for (i = 0; i < b->n; i++)
			if (!b->g[i].pad)
				ctx += b->g[i].count * (w > 0 ?
					fmin(b->g[i].ctx, w) : b->g[i].ctx);
		*w_B += n * u->layer[k].weights_B;
		*kv_B += n * ctx * infer_kv_token_layer_B(d);
	}
	if (r == x->pp - 1)
		*w_B += u->head.weights_B;
}

static void floors(const struct infer_ctx *x, const struct infer_batch *b,
		   const struct infer_step_units *u, struct infer_result *out)
{
	double bw = x->gpu->hbm.bandwidth_Bps, w, kv, best = -1;
	int64_t r;

	for (r = 0; r < x->pp; r++) {
		stage_reads(x, b, u, r, &w, &kv);
		if ((w + kv) / bw > best) {
			best = (w + kv) / bw;
			out->weights_read_B = w;
			out->kv_read_B = kv;
		}
	}
	out->hbm_floor_s = best;
}

static void rates(const struct infer_ctx *x, const struct job_spec *j,
		  const struct infer_step_units *u, struct infer_result *out)
{
	double peak = gpu_peak_flops(x->gpu, x->dims.compute), f;
	int64_t r;
	int k;

	out->flops_per_gpu = 0;
	for (r = 0; r < x->pp; r++) {
		f = (r == 0 ? u->embed.flops : 0) +
		    (r == x->pp - 1 ? u->head.flops : 0);
		for (k = 0; k < x->nkinds; k++)
			f += (double)infer_stage_kind_layers(x, r, k) *
			     u->layer[k].flops;
		out->flops_per_gpu = fmax(out->flops_per_gpu, f);
	}
	out->gpus = system_gpus(j->system);
	out->instances = j->parallelism.dp / x->adp;
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
	int rc = -1, crc, werr = 0;

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
	if (trace && exec_write_trace(p, trace, infer_rank_label, NULL, NULL) != 0) {
		/* A write error: trace's error flag and errno say so to the
		 * caller, who names the file (cli_trace_close). */
		werr = errno;
		goto out;
	}
	rc = 0;
	goto out;
fail:
	diag_error(d, NULL, 0, 0, "the step simulation failed: %s", why);
out:
	infer_comm_release(&comm);
	sim_free(sim);
	if (werr)
		errno = werr;
	return rc;
}

/* The step's latency from the program's time, the host's share and the
 * time the host takes to issue the eager kernels (issue_s: the GPU
 * cannot finish before, infer_prog.h). */
static void latency(const struct infer_ctx *x, double issue_s,
		    struct infer_result *out)
{
	out->host_s = out->info.host_s;
	if (out->info.host_in_prog)
		out->gpu_s -= out->host_s;
	if (x->eng->issue_serial && x->eng->overlap_scheduling)
		out->host_s += issue_s;	/* the loop's own thread launches */
	else if (issue_s > out->gpu_s) {
		out->part_s[EXEC_OTHER] += issue_s - out->gpu_s;
		out->gpu_s = issue_s;
	}
	out->step_s = out->gpu_s + (out->info.host_in_prog ? out->host_s : 0);
	if (x->eng->overlap_scheduling && out->host_s > out->gpu_s) {
		out->part_s[EXEC_OTHER] += out->host_s - out->gpu_s;
		out->step_s = out->host_s;
	}
}

int infer_run(const struct job_spec *j, FILE *trace, struct infer_result *out,
	      struct diag *d)
{
	struct infer_ctx x;
	struct infer_batch b, padded, rank;
	struct infer_step_units *u = NULL;
	struct prog *p = NULL;
	double seq_tokens, route_T, sampled;
	int64_t micro;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = infer_ctx_init(&x, j, d);
	if (rc != 0)
		return rc;
	infer_job_batch(j, &b);
	out->batch = infer_batch_seqs(&b);
	out->tokens = infer_batch_tokens(&b);
	sampled = infer_batch_sampled(&b);
	infer_adp_rank(&x, &b, &rank, &route_T);	/* the busiest rank's */
	b = rank;
	if (x.dims.moe_model && x.dims.moe.tbo)
		infer_tbo_warn(&x, &b, d);
	micro = x.pp > 1 ? (int64_t)fmin((double)x.pp, infer_batch_seqs(&b))
			 : 1;
	rc = -1;
	u = mem_calloc(1, sizeof(*u));
	if (u)
		arena_init(&u->arena);
	p = infer_prog_step(&x, &b, micro, route_T, &out->info, d);
	if (!u || !p)
		goto out;
	out->info.tokens = out->tokens;		/* the whole instance's */
	out->info.sampled = sampled;
	if (simulate(j, p, trace, out, d) != 0)
		goto out;
	infer_graph_for(&x, &b, &padded);
	if (infer_units(&x, &padded, out->info.graph, route_T, u, d) != 0)
		goto out;
	latency(&x, infer_issue_s(&x, u), out);
	rates(&x, j, u, out);
	floors(&x, &b, u, out);
	seq_tokens = (double)j->serving.context_len +
		     (j->phase == PHASE_PREFILL ? j->serving.input_len.mean : 1);
	infer_mem_job(j, x.eng, &x.dims, x.split, (double)x.max_tokens,
		      (double)x.max_seqs, seq_tokens, NULL, &out->mem);
	/* the step's own sequences need their KV pages (the instance's
	 * pools: adp ranks of kv_pages each); a batch of 10M sequences or a
	 * context of 100M tokens was reported as fitting */
	if (out->mem.fits && out->batch * (infer_mem_seq_pages(&out->mem,
	    (double)x.eng->block_size, seq_tokens) - out->mem.state_pages) >
	    out->mem.kv_pages * (double)(x.adp > 0 ? x.adp : 1))
		out->mem.fits = 0;
	rc = 0;
out:
	if (!u)
		diag_oom(d);
	else
		infer_step_units_release(u);
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

/*
 * The unit memo. A unit program (infer_prog_unit) is a chain of tasks on
 * one stage built from nothing but the unit's costed ops (name, kind,
 * time, bytes, collective, EP matrix and row) and the step's EP node
 * share, on a fixed instance (ctx) and the idle fabric (comm, itself
 * memoized): the same key gives the same program, and exec_run gives it
 * the same time and split. A serving run costs the same embedding, head,
 * input copy (and, between steps of one shape, layers) step after step:
 * the memo runs each distinct one once. Keys are kept whole and compared
 * byte for byte (a hash only picks the slot), so a hit is exactly the
 * miss's numbers.
 */
struct umemo_val {
	double t, part[EXEC_PART_COUNT];
};

#define UMEMO_SLOTS 1024	/* fixed: full, the memo starts over */

struct infer_unit_memo {
	struct htab *t;			/* key bytes -> struct umemo_val */
	unsigned char *buf;		/* scratch key */
	size_t cap;
};

static void umemo_free(struct infer_unit_memo *m)
{
	if (!m)
		return;
	htab_free(m->t);
	mem_free(m->buf);
	mem_free(m);
}

static struct infer_unit_memo *umemo_new(void)
{
	struct infer_unit_memo *m = mem_calloc(1, sizeof(*m));

	if (m && !(m->t = htab_new(sizeof(struct umemo_val), UMEMO_SLOTS,
				   UMEMO_SLOTS))) {
		mem_free(m);
		return NULL;
	}
	return m;
}

/* Append len bytes at p to the scratch key at *at. 0, or -1 (OOM). */
static int key_put(struct infer_unit_memo *m, size_t *at, const void *p,
		   size_t len)
{
	if (*at + len > m->cap) {
		size_t cap = m->cap ? m->cap : 4096;
		unsigned char *nb;

		while (cap < *at + len)
			cap *= 2;
		nb = mem_realloc(m->buf, cap);
		if (!nb)
			return -1;
		m->buf = nb;
		m->cap = cap;
	}
	memcpy(m->buf + *at, p, len);
	*at += len;
	return 0;
}

/* The key of unit u on stage `stage` into m->buf; its length, or 0 when
 * out of memory. */
static size_t unit_key(struct infer_unit_memo *m, const struct infer_ctx *x,
		       const struct infer_step_units *su,
		       const struct infer_unit *u, int64_t stage)
{
	size_t at = 0, ep = x->dims.moe_model ? (size_t)x->dims.moe.ep : 1;
	int i, rc = 0, graph = (int)su->graph;

	rc |= key_put(m, &at, &stage, sizeof(stage));
	rc |= key_put(m, &at, &su->route.node_share,
		      sizeof(su->route.node_share));
	rc |= key_put(m, &at, &u->n, sizeof(u->n));
	/* inst_unit's dependency graph depends on the launch mode (the aux
	 * stream beside the main one under a full graph) and each op's
	 * ep_free, so the key holds them */
	rc |= key_put(m, &at, &graph, sizeof(graph));
	for (i = 0; i < u->n && rc == 0; i++) {
		const struct infer_cost_op *op = &u->op[i];
		int kind = (int)op->kind, coll = (int)op->coll;
		unsigned char has = op->a2a_B != NULL;

		rc |= key_put(m, &at, &op->name, sizeof(op->name));
		rc |= key_put(m, &at, &kind, sizeof(kind));
		rc |= key_put(m, &at, &op->time_s, sizeof(op->time_s));
		rc |= key_put(m, &at, &op->bytes, sizeof(op->bytes));
		rc |= key_put(m, &at, &coll, sizeof(coll));
		rc |= key_put(m, &at, &op->ep_row_B, sizeof(op->ep_row_B));
		rc |= key_put(m, &at, &op->ep_kind, sizeof(op->ep_kind));
		rc |= key_put(m, &at, &op->ep_free, sizeof(op->ep_free));
		rc |= key_put(m, &at, &has, sizeof(has));
		if (has)
			rc |= key_put(m, &at, op->a2a_B,
				      ep * ep * sizeof(*op->a2a_B));
	}
	return rc == 0 ? at : 0;
}

int infer_unit_keys_equal(const struct infer_ctx *x,
			  const struct infer_step_units *a,
			  const struct infer_unit *ua,
			  const struct infer_step_units *b,
			  const struct infer_unit *ub, int64_t stage)
{
	struct infer_unit_memo *m = umemo_new();
	unsigned char *ka;
	size_t la, lb;
	int eq = -1;

	if (!m)
		return -1;
	la = unit_key(m, x, a, ua, stage);
	ka = la > 0 ? mem_alloc(la) : NULL;
	if (ka) {
		memcpy(ka, m->buf, la);
		lb = unit_key(m, x, b, ub, stage);
		if (lb > 0)
			eq = la == lb && memcmp(ka, m->buf, la) == 0;
	}
	mem_free(ka);
	umemo_free(m);
	return eq;
}

/*
 * The step memo. infer_stepper_cost is a pure function of its batch for
 * a given stepper (the units, the memoized idle fabric, the fixed
 * instance): the same groups (count, q, ctx, prefill, sampled, pad,
 * rank_count, in order) and ranked flag give the same cost. A serving
 * run repeats whole step shapes: TensorRT-LLM's fixed-length benchmark
 * requests run in waves that start together and decode in lockstep, so
 * every wave after the first repeats the first one's steps (1000
 * requests of 1024/32768 on one B200: 11 waves of the same 32,768 decode
 * shapes). Keys are kept whole and compared byte for byte.
 */
struct infer_step_memo {
	struct htab *t;			/* key doubles -> infer_step_cost */
	double key[2 + 7 * INFER_MAX_GROUPS];	/* scratch */
};

#define SMEMO_MIN_SLOTS 1024
#define SMEMO_MAX_SLOTS 131072

static void smemo_free(struct infer_step_memo *m)
{
	if (!m)
		return;
	htab_free(m->t);
	mem_free(m);
}

static struct infer_step_memo *smemo_new(void)
{
	struct infer_step_memo *m = mem_calloc(1, sizeof(*m));

	if (m && !(m->t = htab_new(sizeof(struct infer_step_cost),
				   SMEMO_MIN_SLOTS, SMEMO_MAX_SLOTS))) {
		mem_free(m);
		return NULL;
	}
	return m;
}

/* b's key into m->key; its length in doubles. */
static size_t step_key(struct infer_step_memo *m, const struct infer_batch *b)
{
	size_t at = 0;
	int i;

	m->key[at++] = (double)b->n;
	m->key[at++] = (double)b->ranked;
	for (i = 0; i < b->n && i < INFER_MAX_GROUPS; i++) {
		const struct infer_seqs *g = &b->g[i];

		m->key[at++] = g->count;
		m->key[at++] = g->q;
		m->key[at++] = g->ctx;
		m->key[at++] = (double)g->prefill;
		m->key[at++] = g->sampled;
		m->key[at++] = (double)g->pad;
		m->key[at++] = g->rank_count;
	}
	return at;
}

/* Run program p (freed there) alone; see run_alone below. */
static int run_alone(struct infer_stepper *s, struct prog *p, double *t,
		     double *part, struct diag *d);

/* Unit u of stage `stage` run alone, through the memo (out of memory:
 * run, not kept). */
static int run_unit(struct infer_stepper *s, const struct infer_step_units *su,
		    const struct infer_unit *u, int64_t stage, double *t,
		    double *part, struct diag *d)
{
	struct infer_unit_memo *m = s->umemo;
	const struct umemo_val *hit;
	struct umemo_val val;
	size_t len = 0;

	if (m && (len = unit_key(m, &s->ctx, su, u, stage)) > 0 &&
	    (hit = htab_get(m->t, m->buf, len)) != NULL) {
		*t = hit->t;
		memcpy(part, hit->part, sizeof(hit->part));
		s->unit_hits++;
		return 0;
	}
	s->unit_runs++;
	if (run_alone(s, infer_prog_unit(&s->ctx, su, u, stage), t, part,
		      d) != 0)
		return -1;
	if (len == 0)
		return 0;
	val.t = *t;
	memcpy(val.part, part, sizeof(val.part));
	htab_put(m->t, m->buf, len, &val);
	return 0;
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
	s->ctx.memo = infer_cost_memo_new();
	s->umemo = umemo_new();
	s->smemo = smemo_new();
	if (!s->sim || !s->ctx.memo || !s->umemo || !s->smemo) {
		infer_stepper_no_memo(s);
		sim_free(s->sim);
		s->sim = NULL;
		infer_ctx_release(&s->ctx);
		diag_oom(d);
		return -1;
	}
	rc = infer_comm_init(&s->comm, j, s->sim, 1, d);
	if (rc != 0) {
		infer_stepper_no_memo(s);
		sim_free(s->sim);
		infer_ctx_release(&s->ctx);
		s->sim = NULL;
	}
	return rc;
}

void infer_stepper_release(struct infer_stepper *s)
{
	infer_comm_release(&s->comm);
	infer_stepper_no_memo(s);
	sim_free(s->sim);
	infer_ctx_release(&s->ctx);
	s->sim = NULL;
}

void infer_stepper_no_memo(struct infer_stepper *s)
{
	infer_cost_memo_free(s->ctx.memo);
	umemo_free(s->umemo);
	smemo_free(s->smemo);
	s->ctx.memo = NULL;
	s->umemo = NULL;
	s->smemo = NULL;
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

/* The units of a step, each run alone: t[k] and part[k] for the layer
 * kinds k, then embedding (nkinds), head (nkinds + 1) and the inputs
 * every stage copies (nkinds + 2; 0 without any). */
static int unit_times(struct infer_stepper *s, const struct infer_step_units *u,
		      double *t, double (*part)[EXEC_PART_COUNT],
		      struct diag *d)
{
	const struct infer_ctx *x = &s->ctx;
	int k, n = x->nkinds;

	for (k = 0; k < n; k++)
		if (run_unit(s, u, &u->layer[k], 0, &t[k], part[k], d) != 0)
			return -1;
	if (run_unit(s, u, &u->embed, 0, &t[n], part[n], d) != 0 ||
	    run_unit(s, u, &u->head, x->pp - 1, &t[n + 1], part[n + 1],
		     d) != 0)
		return -1;
	t[n + 2] = 0;
	memset(part[n + 2], 0, sizeof(part[n + 2]));
	if (u->input.n > 0 &&
	    run_unit(s, u, &u->input, 0, &t[n + 2], part[n + 2], d) != 0)
		return -1;
	return 0;
}

/*
 * Two-batch overlap (infer_tbo.c) of the step of (padded) batch `padded`:
 * for each MoE kind k, the time of a run of its layers as two half
 * batches, the first layer (tf[k], pf[k]: one layer run alone, the halves
 * staggered in and out) and each next one (tn[k], pn[k]: the second
 * layer's addition to a run of two, the steady state of a longer run).
 * Kinds of no MoE layer, or whose layer is never followed by one of its
 * own kind, take the one-layer time for both. 0, or -1 after reporting.
 */
static int tbo_times(struct infer_stepper *s, const struct infer_batch *padded,
		     enum infer_graph graph, double route_T, double *tf,
		     double (*pf)[EXEC_PART_COUNT], double *tn,
		     double (*pn)[EXEC_PART_COUNT], struct diag *d)
{
	const struct infer_ctx *x = &s->ctx;
	struct infer_step_units *half = mem_calloc(1, sizeof(*half));
	struct infer_batch hb;
	int64_t L = x->job->model->num_hidden_layers, f;
	double t2, p2[EXEC_PART_COUNT];
	int k, i, rc = -1;

	if (!half) {
		diag_oom(d);
		return -1;
	}
	arena_init(&half->arena);
	infer_micro_batch(padded, 2, &hb);
	half->tbo = infer_batch_decode_only(padded) ? ITBO_DECODE
						     : ITBO_PREFILL;
	if (infer_units(x, &hb, graph, route_T / 2, half, d) != 0)
		goto out;
	for (k = 0; k < x->nkinds; k++) {
		tf[k] = tn[k] = 0;
		memset(pf[k], 0, sizeof(pf[k]));
		memset(pn[k], 0, sizeof(pn[k]));
		for (f = 0; f < L && x->kind_of[f] != k; f++)
			;
		if (!x->kinds[k].moe || f == L)
			continue;
		if (run_alone(s, infer_tbo_prog(x, half, f, 1), &tf[k], pf[k],
			      d) != 0)
			goto out;
		tn[k] = tf[k];
		memcpy(pn[k], pf[k], sizeof(pn[k]));
		if (f + 1 < L && x->kind_of[f + 1] == k) {
			if (run_alone(s, infer_tbo_prog(x, half, f, 2), &t2, p2,
				      d) != 0)
				goto out;
			tn[k] = t2 - tf[k];
			for (i = 0; i < EXEC_PART_COUNT; i++)
				pn[k][i] = p2[i] - pf[k][i];
		}
	}
	rc = 0;
out:
	infer_step_units_release(half);
	mem_free(half);
	return rc;
}

static int stepper_cost(struct infer_stepper *s, const struct infer_batch *b,
			struct infer_step_cost *out, struct diag *d);

int infer_stepper_cost(struct infer_stepper *s, const struct infer_batch *b,
		       struct infer_step_cost *out, struct diag *d)
{
	struct infer_step_memo *m = s->smemo;
	const struct infer_step_cost *hit;
	size_t len;

	if (!m || b->n > INFER_MAX_GROUPS)
		return stepper_cost(s, b, out, d);
	len = step_key(m, b) * sizeof(double);
	hit = htab_get(m->t, m->key, len);
	if (hit) {
		*out = *hit;
		s->steps++;
		s->step_hits++;
		return 0;
	}
	if (stepper_cost(s, b, out, d) != 0)
		return -1;
	htab_put(m->t, m->key, len, out);	/* out of memory: not kept */
	return 0;
}

static int stepper_cost(struct infer_stepper *s, const struct infer_batch *b,
			struct infer_step_cost *out, struct diag *d)
{
	const struct infer_ctx *x = &s->ctx;
	struct infer_step_units *u = &s->units;
	struct infer_batch padded, rank;
	double t[INFER_MAX_KINDS + 3], part[INFER_MAX_KINDS + 3][EXEC_PART_COUNT];
	double tf[INFER_MAX_KINDS], pf[INFER_MAX_KINDS][EXEC_PART_COUNT];
	double tn[INFER_MAX_KINDS], pn[INFER_MAX_KINDS][EXEC_PART_COUNT];
	double ts, ps[EXEC_PART_COUNT], stage, n, issue, route_T;
	int64_t r;
	int k, e = x->nkinds, h = x->nkinds + 1, in = x->nkinds + 2, rc;
	int tbo;

	memset(out, 0, sizeof(*out));
	infer_adp_rank(x, b, &rank, &route_T);	/* the busiest rank's */
	b = &rank;
	out->graph = infer_graph_for(x, b, &padded);
	out->host_s = infer_host_s(x, b);
	arena_init(&u->arena);
	rc = infer_units(x, &padded, out->graph, route_T, u, d);
	if (rc == 0)
		rc = unit_times(s, u, t, part, d);
	issue = rc == 0 ? infer_issue_s(x, u) : 0;
	infer_step_units_release(u);
	tbo = rc == 0 && infer_tbo_on(x, &padded);
	if (tbo)
		rc = tbo_times(s, &padded, out->graph, route_T, tf, pf, tn, pn,
			       d);
	if (rc != 0)
		return -1;
	for (r = 0; r < x->pp; r++) {
		/* every stage copies its own inputs (infer_prog.c
		 * inst_stage) */
		stage = t[in] + (r == 0 ? t[e] : 0) +
			(r == x->pp - 1 ? t[h] : 0);
		add_parts(out->part_s, part[in], 1);
		for (k = 0; k < x->nkinds; k++) {
			n = (double)infer_stage_kind_layers(x, r, k);
			if (tbo && x->kinds[k].moe && n > 0) {
				/* the stage's MoE layers as one run */
				stage += tf[k] + (n - 1) * tn[k];
				add_parts(out->part_s, pf[k], 1);
				add_parts(out->part_s, pn[k], n - 1);
				continue;
			}
			stage += n * t[k];
			add_parts(out->part_s, part[k], n);
		}
		if (r == 0)
			add_parts(out->part_s, part[e], 1);
		if (r == x->pp - 1)
			add_parts(out->part_s, part[h], 1);
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
	if (x->eng->issue_serial && x->eng->overlap_scheduling)
		out->host_s += issue;	/* the loop's own thread launches */
	else if (issue > out->interval_s) {	/* the host issues slower */
		out->part_s[EXEC_OTHER] += issue - out->interval_s;
		out->latency_s += issue - out->interval_s;
		out->interval_s = issue;
	}
	s->steps++;
	return 0;
}
