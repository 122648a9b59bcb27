/*
 * train.c - the step program of a dense training step.
 *
 * A step is, on every pipeline rank, the actions of its schedule
 * (sched.h): the forward or backward of one model chunk on one
 * microbatch. An action is a chain of units (embedding, layers, head) and
 * a unit is a costed block (block.h) of kernels on the compute stream and
 * TP collectives on the tp stream, instantiated with its dependencies;
 * each unit waits for the previous one, the first unit of an action for
 * the activation or gradient received from the neighbouring stage
 * (train_pp.c), and the head's backward for its own forward. Gradient
 * reduction, parameter gathers, the optimizer and host overhead come last
 * (train_dp.c).
 *
 * The program is exact in structure; its time comes from the GPU model
 * (kernel durations) and the fabric model (every collective, through the
 * executor's comm backend).
 *
 * Simulated ranks: with symmetric replication one rank per pipeline stage
 * stands for its tp x dp identical GPUs; its collectives list every
 * member GPU and how many identical groups run alongside (layout.h).
 */
#include "train.h"

#include <stdio.h>
#include <string.h>

#include "base/diag.h"
#include "gpu/gpu.h"
#include "footprint.h"
#include "split.h"
#include "train_impl.h"

int train_check(const struct job_spec *j, struct diag *d)
{
	const struct model_spec *m = j->model;
	const struct gpu_spec *g = j->system->gpu;
	enum dtype dt = (enum dtype)j->training.dtype;

	if (model_is_moe(m)) {
		diag_error(d, NULL, 0, 0, "model '%s' is a Mixture of Experts "
			   "(%lld routed experts): MoE simulation is not "
			   "available yet, only dense models can be run",
			   m->name ? m->name : "?", (long long)m->n_routed_experts);
		return -1;
	}
	if (model_is_mla(m)) {
		diag_error(d, NULL, 0, 0, "model '%s' uses multi-head latent "
			   "attention: MLA is not available yet",
			   m->name ? m->name : "?");
		return -1;
	}
	if (j->parallelism.cp > 1) {
		diag_error(d, NULL, 0, 0, "context parallelism (cp %lld) is not "
			   "available yet; use cp 1", (long long)j->parallelism.cp);
		return -1;
	}
	if (gpu_check_dtype(g, dt, d) != 0) {
		diag_note(d, NULL, 0, 0, "training.dtype is '%s'", dtype_names[dt]);
		return -1;
	}
	if (gpu_check_dtype(g, layer_base_dtype(dt), d) != 0) {
		diag_note(d, NULL, 0, 0, "training.dtype '%s' keeps attention and "
			  "the LM head in %s", dtype_names[dt],
			  dtype_names[layer_base_dtype(dt)]);
		return -1;
	}
	return 0;
}

/* ---- instantiating blocks ---- */

static void record_first(struct unit_rec *rec, task_id id)
{
	if (rec->nfirst >= sizeof(rec->first) / sizeof(rec->first[0]))
		BUG("a block has too many ops waiting for its input");
	rec->first[rec->nfirst++] = id;
}

/* Op i of block b on the n members of a TP group (t->ranks) into
 * ids[i * n + k]. */
static int inst_op(struct train *t, const struct block *b, int i, uint32_t n,
		   const struct task_info *info, task_id *ids)
{
	const struct block_op *op = &b->op[i];
	uint32_t k;

	if (op->kind == LOP_KERNEL) {
		for (k = 0; k < n; k++) {
			ids[i * (int)n + (int)k] = prog_task(t->prog, t->ranks[k],
				TRAIN_ST_COMPUTE, op->time_s, info);
			if (ids[i * (int)n + (int)k] == TASK_NONE)
				return -1;
		}
	} else {
		struct coll_desc c = {
			.op = op->coll, .bytes = op->bytes, .gpus = t->gpus,
			.ngpus = (uint32_t)t->lay.tp, .algo = -1, .proto = -1,
			.replicas = layout_tp_replicas(&t->lay),
		};
		c.sm_share = train_sm_share(t, op->coll, t->gpus, c.ngpus,
					    t->dims.chunks > 1);
		task_id first = prog_coll(t->prog, t->ranks, n, TRAIN_ST_TP,
					  &c, info);

		if (first == TASK_NONE)
			return -1;
		for (k = 0; k < n; k++)
			ids[i * (int)n + (int)k] = first + k;
	}
	return 0;
}

/* Block b as unit u of action a on the TP group t->ranks[0..n-1], each
 * member waiting for in[k] (TASK_NONE: nothing). The tasks waiting for
 * in[] are the unit's first tasks when `first` is set. */
static int inst_block(struct train *t, const struct block *b, uint32_t n,
		      const task_id *in, int64_t a, int64_t u,
		      const struct task_info *tmpl, int first)
{
	task_id *ids = t->scratch;
	int i, e;
	uint32_t k;

	for (k = 0; k < n && first; k++)
		train_unit(t, t->ranks[k], a, u)->nfirst = 0;
	for (i = 0; i < b->n; i++) {
		struct task_info info = *tmpl;

		info.name = b->op[i].name;
		info.cat = b->op[i].kind == LOP_KERNEL ? TASK_COMPUTE : TASK_COMM;
		if (inst_op(t, b, i, n, &info, ids) != 0)
			return -1;
		for (e = 0; e < 2; e++) {
			int dep = b->op[i].dep[e];

			for (k = 0; k < n && dep != LAYER_NONE; k++) {
				task_id me = ids[i * (int)n + (int)k];
				task_id before = dep == LAYER_IN ? in[k] :
						 ids[dep * (int)n + (int)k];

				if (dep == LAYER_IN && first)
					record_first(train_unit(t, t->ranks[k], a, u), me);
				if (train_dep(t, before, me) != 0)
					return -1;
			}
		}
	}
	for (k = 0; k < n; k++)
		train_unit(t, t->ranks[k], a, u)->last = ids[(b->n - 1) * (int)n + (int)k];
	return 0;
}

/* Whether an action's input arrives from another pipeline stage. */
static int receives(const struct train *t, struct sched_action act, int64_t vs)
{
	return act.bwd ? vs < t->stages - 1 : vs > 0;
}

/* The all-gather rebuilding a scattered transfer, as the start of unit 0
 * (the transfer waits for nothing of it; unit 0 waits for it). */
static int gather_input(struct train *t, uint32_t n, task_id *in, int64_t a,
			const struct task_info *info)
{
	uint32_t k;

	if (inst_block(t, t->pg, n, in, a, 0, info, 1) != 0)
		return -1;
	for (k = 0; k < n; k++)
		in[k] = train_unit(t, t->ranks[k], a, 0)->last;
	return 0;
}

/* Every action of pipeline rank s on the TP group of data-parallel index
 * dp_i: its units chained, the head's backward after its forward. */
static int build_group(struct train *t, int64_t s, int64_t dp_i, task_id *in)
{
	const struct stage_plan *sp = &t->stage[s];
	uint32_t n = (uint32_t)t->lay.sim_tp, k;
	int64_t a, u;

	for (k = 0; k < n; k++)
		t->ranks[k] = layout_rank(&t->lay, s, dp_i, (int64_t)k);
	layout_tp_gpus(&t->lay, s, dp_i, t->gpus);
	for (a = 0; a < sp->nacts; a++) {
		struct sched_action act = sp->acts[a];
		int64_t vs = train_vs(t, s, act.chunk);
		struct task_info info = { .microbatch = (int32_t)act.mb };

		for (k = 0; k < n; k++) {
			in[k] = TASK_NONE;
			if (act.bwd && vs == t->stages - 1)
				in[k] = train_action_end(t, t->ranks[k],
					sp->lookup[(int64_t)act.chunk * t->m + act.mb]);
		}
		if (t->pg && receives(t, act, vs) &&
		    gather_input(t, n, in, a, &info) != 0)
			return -1;
		for (u = 0; u < train_units(t, vs); u++) {
			const struct block *b = train_unit_block(t, vs, act.bwd,
								 u, &info.layer);

			if (inst_block(t, b, n, in, a, u, &info,
				       !(u == 0 && t->pg && receives(t, act, vs))) != 0)
				return -1;
			for (k = 0; k < n; k++)
				in[k] = train_unit(t, t->ranks[k], a, u)->last;
		}
	}
	return 0;
}

/* ---- setup ---- */

static int plan_stage(struct train *t, int64_t s)
{
	struct stage_plan *sp = &t->stage[s];
	int64_t a, n = sched_actions(t->m, t->v);

	sp->nacts = n;
	sp->acts = arena_alloc(&t->arena, (size_t)n * sizeof(*sp->acts));
	sp->lookup = arena_alloc(&t->arena, (size_t)n * sizeof(*sp->lookup));
	sp->unit_off = arena_alloc(&t->arena,
				   (size_t)(n + 1) * sizeof(*sp->unit_off));
	if (!sp->acts || !sp->lookup || !sp->unit_off)
		return -1;
	sched_rank(t->job->parallelism.schedule, t->pp, t->v, t->m, s,
		   sp->acts);
	sp->unit_off[0] = 0;
	for (a = 0; a < n; a++) {
		struct sched_action act = sp->acts[a];

		sp->lookup[((int64_t)act.bwd * t->v + act.chunk) * t->m + act.mb] = a;
		sp->unit_off[a + 1] = sp->unit_off[a] +
			(uint32_t)train_units(t, train_vs(t, s, act.chunk));
	}
	return 0;
}

static struct block *new_block(struct train *t, const struct layer_ops *o)
{
	struct block *b = arena_alloc(&t->arena, sizeof(*b));

	if (b && block_cost(b, o, t->gpu, &t->dt, t->prog) != 0)
		return NULL;
	return b;
}

static int cost_blocks(struct train *t)
{
	struct layer_ops *o = arena_alloc(&t->arena, sizeof(*o));
	enum layer_recompute rc = (enum layer_recompute)t->job->training.recompute;

	if (!o)
		return -1;
	layer_fwd(&t->dims, o);
	t->lf = new_block(t, o);
	layer_bwd(&t->dims, rc, o);
	t->lb = new_block(t, o);
	layer_embed_fwd(&t->dims, o);
	t->ef = new_block(t, o);
	layer_embed_bwd(&t->dims, o);
	t->eb = new_block(t, o);
	layer_head_fwd(&t->dims, o);
	t->hf = new_block(t, o);
	layer_head_bwd(&t->dims, o);
	t->hb = new_block(t, o);
	if (t->dims.pp_gather && t->stages > 1) {
		layer_pp_gather(&t->dims, o);
		if (!(t->pg = new_block(t, o)))
			return -1;
	}
	return t->lf && t->lb && t->ef && t->eb && t->hf && t->hb ? 0 : -1;
}

static int alloc_ranks(struct train *t)
{
	uint32_t r, nu;
	int64_t pp_i, dp_i, tp_i;
	size_t width = (size_t)(t->lay.tp > t->lay.dp ? t->lay.tp : t->lay.dp) + 2;

	t->units = arena_alloc(&t->arena, t->lay.nranks * sizeof(*t->units));
	t->last_dp = arena_alloc(&t->arena, t->lay.nranks * sizeof(*t->last_dp));
	t->scratch = arena_alloc(&t->arena, (size_t)LAYER_MAX_OPS *
				 (size_t)t->lay.sim_tp * sizeof(*t->scratch));
	t->gpus = arena_alloc(&t->arena, width * sizeof(*t->gpus));
	t->ranks = arena_alloc(&t->arena, width * sizeof(*t->ranks));
	if (!t->units || !t->last_dp || !t->scratch || !t->gpus || !t->ranks)
		return -1;
	for (r = 0; r < t->lay.nranks; r++) {
		layout_coords(&t->lay, r, &pp_i, &dp_i, &tp_i);
		nu = t->stage[pp_i].unit_off[t->stage[pp_i].nacts];
		t->units[r] = arena_alloc(&t->arena, nu * sizeof(struct unit_rec));
		t->last_dp[r] = TASK_NONE;
		if (!t->units[r])
			return -1;
	}
	return 0;
}

/* Everything but the program; t->lay is set. */
static int setup(struct train *t, const struct job_spec *j)
{
	const struct parallel_spec *p = &j->parallelism;
	int64_t s;

	t->job = j;
	t->gpu = j->system->gpu;
	t->m = job_microbatches(j);
	t->v = p->vpp;
	t->pp = p->pp;
	t->stages = p->pp * p->vpp;
	layer_dims_from_job(j, &t->dims);
	t->dt.base = layer_base_dtype((enum dtype)j->training.dtype);
	t->dt.gemm_lowp = (enum dtype)j->training.dtype;
	t->split = arena_alloc(&t->arena, (size_t)t->stages * sizeof(*t->split));
	t->stage = arena_alloc(&t->arena, (size_t)t->pp * sizeof(*t->stage));
	if (!t->split || !t->stage)
		return -1;
	split_layers(j, t->split);
	for (s = 0; s < t->pp; s++)
		if (plan_stage(t, s) != 0)
			return -1;
	return alloc_ranks(t);
}

static void name_streams(struct prog *p)
{
	static const char *const names[TRAIN_ST_COUNT] = {
		"compute", "tp", "pp_fwd", "pp_bwd", "pp_fwd_wrap",
		"pp_bwd_wrap", "dp", "dp_gather",
	};
	uint32_t s;

	for (s = 0; s < TRAIN_ST_COUNT; s++)
		prog_name_stream(p, s, names[s]);
}

/* FLOPs per step of the whole job from the costed blocks. */
static void fill_plan(const struct train *t, struct train_plan *plan)
{
	const struct job_spec *j = t->job;
	double model = 0, exec = 0, scale;
	int64_t vs;

	for (vs = 0; vs < t->stages; vs++) {
		double n = (double)t->split[vs];

		model += n * (t->lf->model_flops + t->lb->model_flops);
		exec += n * (t->lf->flops + t->lb->flops);
		if (vs == 0) {
			model += t->ef->model_flops + t->eb->model_flops;
			exec += t->ef->flops + t->eb->flops;
		}
		if (vs == t->stages - 1) {
			model += t->hf->model_flops + t->hb->model_flops;
			exec += t->hf->flops + t->hb->flops;
		}
	}
	scale = (double)t->m * (double)t->lay.tp * (double)t->lay.dp;
	plan->lay = t->lay;
	plan->microbatches = t->m;
	plan->tokens = (double)j->training.global_batch_size *
		       (double)j->training.seq_len;
	plan->model_flops = model * scale;
	plan->exec_flops = exec * scale;
	plan->params = footprint_model_params(j);
}

static int build_all(struct train *t)
{
	task_id *in = arena_alloc(&t->arena,
				  (size_t)t->lay.sim_tp * sizeof(*in));
	int64_t s, dp_i;

	name_streams(t->prog);
	if (!in || cost_blocks(t) != 0)
		return -1;
	for (s = 0; s < t->pp; s++)
		for (dp_i = 0; dp_i < t->lay.sim_dp; dp_i++)
			if (build_group(t, s, dp_i, in) != 0)
				return -1;
	if (train_build_pp(t) != 0 || train_build_dp(t) != 0)
		return -1;
	return 0;
}

/* Every rendezvous of the step waits for its slowest GPU, under the
 * system's variability (src/engine/exec_jitter.c). */
static void set_jitter(struct prog *p, const struct job_spec *j)
{
	struct exec_jitter jit = {
		j->system->variability.op_jitter,
		j->system->variability.gpu_spread,
	};

	prog_set_jitter(p, &jit);
}

struct prog *train_build(const struct job_spec *j, int full,
			 struct train_plan *plan, struct diag *d)
{
	struct train t;
	struct prog *p = NULL;

	memset(&t, 0, sizeof(t));
	arena_init(&t.arena);
	layout_init(&t.lay, j->parallelism.tp, j->parallelism.cp,
		    j->parallelism.pp, j->parallelism.dp,
		    full || j->full_fidelity);
	t.prog = prog_new(t.lay.nranks, TRAIN_ST_COUNT);
	if (!t.prog || setup(&t, j) != 0 || build_all(&t) != 0) {
		diag_oom(d);
		prog_free(t.prog);
		goto out;
	}
	fill_plan(&t, plan);
	p = t.prog;
	set_jitter(p, j);
out:
	arena_release(&t.arena);
	return p;
}

void train_rank_label(uint32_t rank, char *buf, size_t len, void *arg)
{
	const struct layout *l = arg;
	int64_t pp_i, dp_i, tp_i;

	layout_coords(l, rank, &pp_i, &dp_i, &tp_i);
	if (l->sim_tp == l->tp && l->sim_dp == l->dp)
		snprintf(buf, len, "pp%lld dp%lld tp%lld", (long long)pp_i,
			 (long long)dp_i, (long long)tp_i);
	else
		snprintf(buf, len, "pp%lld (stands for its %lld GPUs)",
			 (long long)pp_i, (long long)(l->tp * l->dp));
}
