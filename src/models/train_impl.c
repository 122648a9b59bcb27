/*
 * train_impl.c - what the step-program builder's files share (declared in
 * train_impl.h): dependencies, the units of an action and their records,
 * the parameters a unit holds, which actions pair (moe.a2a_overlap),
 * groups of simulated ranks, and the compute share a collective holds.
 *
 * A leaf of the builder: train.c, train_pp.c and train_dp.c call it; it
 * calls none of them.
 */
#include "train_impl.h"

#include "footprint.h"
#include "split.h"

#include <string.h>

int train_dep(struct train *t, task_id before, task_id after)
{
	if (before == TASK_NONE || after == TASK_NONE)
		return 0;
	return prog_dep(t->prog, before, after);
}

/* A virtual stage's units in forward order: the embedding (stage 0),
 * its decoder layers, the MTP modules on their stage when it is not the
 * last, then on the last stage the head and after it the MTP modules
 * (with their heads), or only the MTP modules' heads when the modules
 * ran on an earlier stage (Megatron's process_mtp_loss on the
 * post-process stage). */
int64_t train_units(const struct train *t, int64_t vs)
{
	int last = vs == t->stages - 1;

	return t->split[vs] + (vs == 0) + last +
	       (vs == t->mtp_stage || (last && t->mtp_alone) ? t->mtp : 0);
}

struct unit_rec *train_unit(const struct train *t, uint32_t r, int64_t a,
			    int64_t u)
{
	int64_t pp_i, i;

	layout_where(&t->lay, r, &pp_i, &i);
	return &t->units[r][t->stage[pp_i].unit_off[a] + u];
}

/* Whether actions a and a + 1 of a stage run as a pair: a forward and a
 * backward of different microbatches (or chunks), so neither waits for
 * the other, both of MoE layers. Pipelined, only a steady-state step
 * pairs (Megatron-Core's combined_1f1b_schedule_for_interleaved_pipelining
 * runs in the steady loop; warm-up forwards and cool-down backwards run
 * alone): a rank whose warm-up holds every forward (rank 0 when m == pp) has none,
 * and pairing its last forward with its first backward would close a
 * cycle, that backward waiting for the next rank's gradient, which waits
 * for this forward's activation. Unpipelined, backward k pairs with
 * forward k + 1 (combined_1f1b_schedule_for_no_pipelining). */
int train_pairs(const struct train *t, int64_t s, int64_t a)
{
	const struct stage_plan *sp = &t->stage[s];
	int64_t in_run = a % sp->run_acts, k = in_run - sp->warmup;
	struct sched_action p, q;

	if (!t->a2a_overlap || in_run + 1 >= sp->run_acts)
		return 0;
	if (t->pp > 1 && (k < 0 || k % 2 != 0 ||
			  k >= 2 * (sp->run_acts / 2 - sp->warmup)))
		return 0;
	p = sp->acts[a];
	q = sp->acts[a + 1];
	return p.bwd != q.bwd && (p.mb != q.mb || p.chunk != q.chunk);
}

int64_t train_embed_peer(const struct train *t)
{
	int64_t r;

	if (t->pp < 2)
		return -1;
	if (t->job->model->tie_word_embeddings)
		return t->pp - 1;
	if (t->mtp <= 0)
		return -1;
	r = t->mtp_stage % t->pp;
	return r == 0 ? -1 : r;
}

int train_fsdp_pp_no_sync(const struct train *t)
{
	return t->job->framework->fsdp_pp_no_sync &&
	       t->job->training.zero_stage >= 3 && t->pp >= 2;
}

int train_alloc_actions(struct train *t, task_id ***out)
{
	task_id **v = arena_alloc(&t->arena, t->lay.nranks * sizeof(*v));
	int64_t pp_i, i, a;
	uint32_t r;

	if (!v)
		return -1;
	for (r = 0; r < t->lay.nranks; r++) {
		layout_where(&t->lay, r, &pp_i, &i);
		v[r] = arena_alloc(&t->arena, (size_t)t->stage[pp_i].nacts *
				   sizeof(**v));
		if (!v[r])
			return -1;
		for (a = 0; a < t->stage[pp_i].nacts; a++)
			v[r][a] = TASK_NONE;
	}
	*out = v;
	return 0;
}

task_id train_action_end(const struct train *t, uint32_t r, int64_t a)
{
	int64_t pp_i, i;
	const struct stage_plan *sp;

	layout_where(&t->lay, r, &pp_i, &i);
	sp = &t->stage[pp_i];
	return t->units[r][sp->unit_off[a + 1] - 1].last;
}

task_id train_send_after(const struct train *t, uint32_t r, int64_t a)
{
	int64_t pp_i, i;
	const struct stage_plan *sp;

	layout_where(&t->lay, r, &pp_i, &i);
	sp = &t->stage[pp_i];
	if (!train_pairs(t, pp_i, a) && !(a > 0 && train_pairs(t, pp_i, a - 1)))
		return train_action_end(t, r, a);
	return t->units[r][sp->unit_off[a + 1] - 1].out;
}

/* The kind index of layer i. */
static int layer_kind(const struct train *t, int64_t i)
{
	const struct model_spec *m = t->job->model;

	return train_kind_index(model_layer_moe(m, i), model_layer_window(m, i),
				model_layer_chunk(m, i),
				model_layer_linear(m, i), model_layer_block(m, i),
				model_layer_nope(m, i));
}

int train_layer_kind(const struct train *t, int64_t i)
{
	return layer_kind(t, i);
}

/* The backward block of MTP module i (forward order on its stage): the
 * summed one (t->mbs) when a lookup of its embedding weight runs after
 * it in the rank's backward, the first stage's on one stage or the
 * first module's before a later one (autograd runs the weight's
 * AccumulateGrad, and Megatron's main_grad hook, once: layer.c). */
static const struct block *mtp_bwd_block(const struct train *t, int64_t i)
{
	return t->mbs && (t->stages == 1 || i > 0) ? t->mbs : t->mb;
}

const struct block *train_unit_block(const struct train *t, int64_t vs,
				     int bwd, int64_t u, int32_t *layer)
{
	int64_t n = train_units(t, vs), first = split_first_layer(t->split, vs);
	int64_t k = bwd ? n - 1 - u : u;	/* position in forward order */
	int has_embed = vs == 0, last = vs == t->stages - 1;
	int64_t head = last ? n - 1 - t->mtp : n;	/* the head's position */
	int64_t layers_end = has_embed + t->split[vs];
	int kind;

	*layer = -1;
	if (has_embed && k == 0)
		return bwd ? t->eb : t->ef;
	if (last && k == head)
		return bwd ? t->hb : t->hf;
	if (last && k > head)	/* an MTP module, or its head alone */
		return t->mtp_alone ? (bwd ? t->hb : t->hf)
				    : (bwd ? mtp_bwd_block(t, k - head - 1)
					   : t->mf);
	if (k >= layers_end)	/* an MTP module on its own stage */
		return bwd ? mtp_bwd_block(t, k - layers_end) : t->mf;
	*layer = (int32_t)(first + k - has_embed);
	kind = layer_kind(t, *layer);
	return bwd ? t->lb[kind] : t->lf[kind];
}

const struct block *train_unit_wcast(const struct train *t, int64_t vs,
				     int64_t u)
{
	int32_t layer;
	const struct block *b = train_unit_block(t, vs, 0, u, &layer);

	if (!b->wcast)
		return NULL;
	/* the head's block also stands for the MTP heads' passes (t->mtp_
	 * alone): one output weight, cast at the head's own unit */
	if (b == t->hf && u != train_units(t, vs) - 1 - t->mtp)
		return NULL;
	/* a repeated MTP pass: the first module's weights, cast already */
	if (b == t->mf && t->job->moe.mtp_repeated &&
	    u - (train_units(t, vs) - t->mtp) > 0)
		return NULL;
	return b->wcast;
}

void train_unit_params(const struct train *t, int64_t vs, int bwd,
		       int64_t u, double *dense, double *experts)
{
	const struct block *b;
	int32_t layer;
	double d = 0, e = 0;

	int64_t n = train_units(t, vs), k = bwd ? n - 1 - u : u;
	int mtp_head = vs == t->stages - 1 && t->mtp_alone && k > n - 1 - t->mtp;

	b = train_unit_block(t, vs, bwd, u, &layer);
	if (b == t->ef || b == t->eb)
		d = footprint_unit_params(t->job, &t->dims, UNIT_EMBED, 0);
	else if (mtp_head)
		;	/* the output layer is the head's, shared */
	else if (b == t->hf || b == t->hb)
		/* pp = 1: the one rank holds the embedding with the head */
		d = footprint_unit_params(t->job, &t->dims, UNIT_HEAD, t->pp == 1);
	else if ((b == t->mf || b == t->mb || b == t->mbs) &&
		 t->job->moe.mtp_repeated &&
		 k - (n - t->mtp) > 0)
		;	/* a repeated pass: the first module's weights */
	else if (b == t->mf || b == t->mb || b == t->mbs) {
		footprint_mtp_params(t->job, &t->dims, &d, &e);
		/* an MTP stage of its own builds the embedding too (Megatron
		 * GPTModel: pre_process or mtp_process); its first module's
		 * unit holds it */
		if (t->mtp_alone && k == t->split[vs] + (vs == 0) && vs != 0)
			d += footprint_unit_params(t->job, &t->dims, UNIT_EMBED, 0);
	}
	else
		footprint_layer_params(t->job, &t->dims, layer, &d, &e);
	*dense = d / t->dims.tp;
	*experts = e / (double)(t->lay.ep * t->lay.etp);
}

/* A group train_group() worked out: its GPUs, then its simulated ranks
 * and their positions (arrays in the arena, room for cap GPUs each,
 * kept when the slot takes another group). */
struct group_memo {
	uint32_t g, r;		/* the question; r = UINT32_MAX: empty */
	uint32_t n, sim, cap;
	uint32_t *gpus, *ranks, *pos;
};

#define GROUP_MEMO 256		/* entries, direct-mapped by (group, rank) */
#define GROUP_MEMO_MAX 512	/* GPUs of a group the memo keeps, at most */

/* The memo entry for (g, r), or NULL (out of memory: work it out). */
static struct group_memo *group_memo_of(struct train *t, uint32_t g,
					uint32_t r)
{
	uint32_t k;

	if (!t->group_memo) {
		t->group_memo = arena_alloc(&t->arena, GROUP_MEMO *
					    sizeof(*t->group_memo));
		if (!t->group_memo)
			return NULL;
		for (k = 0; k < GROUP_MEMO; k++)
			t->group_memo[k] = (struct group_memo){ .r = UINT32_MAX };
	}
	return &t->group_memo[(r * LG_COUNT + g) % GROUP_MEMO];
}

uint32_t train_group(struct train *t, enum layout_group g, uint32_t r,
		     uint32_t *size)
{
	int64_t pp_i, i;
	uint32_t n, k, sim = 0;
	struct group_memo *m;

	/* A step asks for the same few groups of each rank for every
	 * collective of every layer and microbatch (334k times for the
	 * DeepSeek-V3 2,048-GPU step, groups of up to 128 GPUs). */
	m = group_memo_of(t, (uint32_t)g, r);
	if (m && m->r == r && m->g == (uint32_t)g) {
		memcpy(t->gpus, m->gpus, m->n * sizeof(*t->gpus));
		memcpy(t->ranks, m->ranks, m->sim * sizeof(*t->ranks));
		memcpy(t->pos, m->pos, m->sim * sizeof(*t->pos));
		*size = m->n;
		return m->sim;
	}
	layout_where(&t->lay, r, &pp_i, &i);
	n = layout_group_size(&t->lay, g);
	layout_group(&t->lay, g, i, t->idx);
	for (k = 0; k < n; k++) {
		t->gpus[k] = layout_gpu(&t->lay, pp_i, t->idx[k]);
		if (t->idx[k] < t->lay.sim) {
			t->ranks[sim] = layout_rank(&t->lay, pp_i, t->idx[k]);
			t->pos[sim++] = k;
		}
	}
	*size = n;
	if (m && n <= GROUP_MEMO_MAX) {
		if (n > m->cap) {	/* a slot's room only grows: bounded */
			uint32_t cap = n < 64 ? 64 : GROUP_MEMO_MAX;
			uint32_t *v = arena_alloc(&t->arena, 3 * (size_t)cap *
						  sizeof(*v));

			if (!v)
				return sim;
			*m = (struct group_memo){ .cap = cap, .gpus = v,
						  .ranks = v + cap,
						  .pos = v + 2 * cap };
		}
		m->g = (uint32_t)g;
		m->r = r;
		m->n = n;
		m->sim = sim;
		memcpy(m->gpus, t->gpus, n * sizeof(*m->gpus));
		memcpy(m->ranks, t->ranks, sim * sizeof(*m->ranks));
		memcpy(m->pos, t->pos, sim * sizeof(*m->pos));
	}
	return sim;
}

/* Whether the n GPUs of a group lie in one node. */
static int one_node(const struct system_spec *sys, const uint32_t *gpus,
		    uint32_t n)
{
	uint32_t i, per = (uint32_t)sys->gpus_per_node;

	for (i = 1; i < n; i++)
		if (gpus[i] / per != gpus[0] / per)
			return 0;
	return 1;
}

double train_sm_share(const struct train *t, enum coll_op op,
		      const uint32_t *gpus, uint32_t n, int tp_overlap)
{
	return train_coll_sm_share(t->job, op, gpus, n, tp_overlap);
}

double train_dp_sm_share(const struct job_spec *j, enum coll_op op,
			 const uint32_t *gpus, uint32_t n)
{
	double share = train_coll_sm_share(j, op, gpus, n, 0);
	int64_t cap = j->framework->dp_comm_max_units;
	double units = (double)j->system->gpu->compute_units;

	if (cap > 0 && units > 0 && (double)cap / units < share)
		share = (double)cap / units;
	return share;
}

double train_coll_sm_share(const struct job_spec *j, enum coll_op op,
			   const uint32_t *gpus, uint32_t n, int tp_overlap)
{
	const struct system_spec *sys = j->system;
	const struct coll_units_spec *u;
	int64_t units;

	if (!sys->collectives)
		return 0;	/* a program built without a library (tests) */
	u = &sys->collectives->kernel_units;
	units = u->scale_up;
	if (tp_overlap)
		units = op == COLL_REDUCESCATTER ?
			j->framework->tp_comm_overlap_units : 0;
	else if (op == COLL_SENDRECV)
		units = u->p2p_scale_up > 0 && one_node(sys, gpus, n) ?
			u->p2p_scale_up : u->p2p;
	else if (!one_node(sys, gpus, n))
		units = u->scale_out;
	if (units >= sys->gpu->compute_units)
		return 1.0;
	return (double)units / (double)sys->gpu->compute_units;
}
