/*
 * footprint_rank.c - the footprint of a pipeline rank and of the job's
 * worst rank: the parameters each rank holds, the activations its
 * schedule keeps in flight, the workspace (split out of footprint.c,
 * whose header states the memory terms; it prices one layer's
 * activations, this file adds them up over ranks).
 */
#include "footprint.h"
#include "footprint_impl.h"

#include <math.h>
#include <string.h>

#include "base/mem.h"
#include "config/spec_job.h"
#include "config/spec_model.h"
#include "ep.h"
#include "sched.h"
#include "split.h"

/* Whether every layer is of one kind (dense, one window, no hybrid
 * pattern of Mamba, attention and MLP blocks): a range of layers then
 * costs one layer times its length. */
static int uniform_layers(const struct model_spec *m)
{
	if (model_is_moe(m) || m->layer_types.n > 0 || model_is_gdn(m) ||
	    m->hybrid_override_pattern)
		return 0;
	return m->sliding_window == 0 || m->use_sliding_window == 0 ||
	       m->max_window_layers <= 0 ||
	       m->max_window_layers >= m->num_hidden_layers;
}

/* first[vs] = the first layer of virtual stage vs, for vs < stages. */
static void first_layers(const int64_t *split, int64_t stages, int64_t *first)
{
	int64_t vs, n = 0;

	for (vs = 0; vs < stages; vs++) {
		first[vs] = n;
		n += split[vs];
	}
}

/* The first layer of virtual stage vs: first[vs] when the table is built,
 * else the running sum *n of the layers before vs, *at the stages summed
 * so far (a rank's stages come in increasing vs). */
static int64_t stage_first(const int64_t *split, const int64_t *first,
			   int64_t vs, int64_t *at, int64_t *n)
{
	if (first)
		return first[vs];
	while (*at < vs)
		*n += split[(*at)++];
	return *n;
}

/* What footprint_layer_params and footprint_kind_act_B read of a
 * layer's kind: moe, linear and block alone (layer_count.c
 * layer_kind_params; the window, chunk and NoPE flag shape attention's
 * time, not its parameters or the tensors it keeps), so layers alike in
 * those three share their figures: a slot each. */
enum { KIND_SLOTS = 2 * 2 * (BLOCK_MOE + 1) };

static int slot_of(const struct model_spec *m, int64_t i)
{
	return (model_layer_moe(m, i) != 0) +
	       2 * (model_layer_linear(m, i) != 0) + 4 * model_layer_block(m, i);
}

/* One job's per-layer figures by slot, remembered across its stages and
 * ranks: pure functions of the slot (job, dims, recompute fixed), so the
 * same values as computed for each layer. of[i]: layer i's slot, listed
 * once for every rank (job_footprint), or NULL. */
struct kind_memo {
	const struct job_spec *j;
	const struct layer_dims *d;
	const uint8_t *of;
	uint8_t par_ok[KIND_SLOTS], act_ok[KIND_SLOTS];
	double dense[KIND_SLOTS], experts[KIND_SLOTS];	/* layer params */
	double act_B[KIND_SLOTS];	/* footprint_kind_act_B */
};

static int slot_at(const struct kind_memo *km, int64_t i)
{
	return km->of ? km->of[i] : slot_of(km->j->model, i);
}

/* footprint_layer_params of layer i. */
static void layer_params_of(struct kind_memo *km, int64_t i, double *dense,
			    double *experts)
{
	int x = slot_at(km, i);

	if (!km->par_ok[x]) {
		footprint_layer_params(km->j, km->d, i, &km->dense[x],
				       &km->experts[x]);
		km->par_ok[x] = 1;
	}
	*dense = km->dense[x];
	*experts = km->experts[x];
}

/* footprint_kind_act_B of layer i's kind; its MLP's HAS_ bit into *kinds. */
static double layer_act_of(struct kind_memo *km, int64_t i,
			   enum layer_recompute rc, unsigned *kinds)
{
	int x = slot_at(km, i);

	*kinds |= (x & 1) ? HAS_MOE : HAS_DENSE;
	if (!km->act_ok[x]) {
		struct layer_kind k = footprint_kind_of(km->j, i);

		km->act_B[x] = footprint_kind_act_B(km->d, &k, rc);
		km->act_ok[x] = 1;
	}
	return km->act_B[x];
}

/* Parameters (dense, experts; whole model, not / tp) of layers
 * [first, first + n), added layer by layer. */
static void range_params(int uniform, int64_t first, int64_t n,
			 struct kind_memo *km, double *dense, double *experts)
{
	double dn = 0, ex = 0, a = 0, b = 0;
	int64_t i;

	if (uniform && n > 0) {
		layer_params_of(km, first, &a, &b);
		*dense = a * (double)n;
		*experts = b * (double)n;
		return;
	}
	for (i = first; i < first + n; i++) {
		layer_params_of(km, i, &a, &b);
		dn += a;
		ex += b;
	}
	*dense = dn;
	*experts = ex;
}

/* Whether pipeline rank `rank` holds the LM head (the last virtual
 * stage); rank 0 holds the embedding. */
static int holds_head(const struct parallel_spec *p, int64_t rank)
{
	return (p->pp * p->vpp - 1) % p->pp == rank;
}

static void rank_params_split(const struct job_spec *j,
			      const struct layer_dims *d, const int64_t *split,
			      const int64_t *first, int uniform, int64_t rank,
			      struct kind_memo *km, double *dense,
			      double *experts)
{
	const struct parallel_spec *p = &j->parallelism;
	double dn = 0, ex = 0, a, b;
	int64_t c, vs, f, at = 0, n = 0;

	for (c = 0; c < p->vpp; c++) {
		vs = c * p->pp + rank;
		f = stage_first(split, first, vs, &at, &n);
		range_params(uniform, f, split[vs], km, &a, &b);
		dn += a;
		ex += b;
	}
	if (rank == 0)
		dn += footprint_unit_params(j, d, UNIT_EMBED, 0);
	if (holds_head(p, rank))
		dn += footprint_unit_params(j, d, UNIT_HEAD, rank == 0);
	if (model_is_moe(j->model) && j->moe.mtp_layers > 0 &&
	    split_mtp_stage(j) % p->pp == rank) {
		int64_t ms = split_mtp_stage(j);

		footprint_mtp_params(j, d, &a, &b);
		dn += (double)job_mtp_modules(j) * a;
		ex += (double)job_mtp_modules(j) * b;
		/* an MTP stage before the last builds its own embedding
		 * (Megatron GPTModel: pre_process or mtp_process) */
		if (ms != p->pp * p->vpp - 1 && ms != 0)
			dn += footprint_unit_params(j, d, UNIT_EMBED, 0);
	}
	*dense = dn / d->tp;
	*experts = ex / ((double)p->ep * (double)(p->etp > 0 ? p->etp : p->tp));
}

void footprint_rank_params_split(const struct job_spec *j,
				 const struct layer_dims *d,
				 const int64_t *split, int64_t rank,
				 double *dense, double *experts)
{
	struct kind_memo km;

	km = (struct kind_memo){ .j = j, .d = d };
	rank_params_split(j, d, split, NULL, uniform_layers(j->model), rank,
			  &km, dense, experts);
}

double footprint_rank_params(const struct job_spec *j,
			     const struct layer_dims *d, const int64_t *split,
			     int64_t rank)
{
	double dense, experts;

	footprint_rank_params_split(j, d, split, rank, &dense, &experts);
	return dense + experts;
}

/* Parameters (whole model, not / tp) of the largest unit pipeline rank
 * `rank` all-gathers under ZeRO-3: a layer, or (not layers_only) the
 * embedding or the LM head where it holds them (V h each, more than a
 * layer's ~12 h^2 when V > 12 h). */
static double largest_unit_params(const struct job_spec *j,
				  const struct layer_dims *d,
				  const int64_t *split, const int64_t *first,
				  int64_t rank, struct kind_memo *km,
				  int layers_only)
{
	const struct parallel_spec *p = &j->parallelism;
	double big = 0, a, b;
	int64_t i;

	for (i = rank; i < p->pp * p->vpp; i += p->pp)
		if (split[i] > 0) {
			layer_params_of(km, first[i], &a, &b);
			big = fmax(big, a + b / (double)p->ep);
		}
	if (layers_only)
		return big;
	if (rank == 0)
		big = fmax(big, footprint_unit_params(j, d, UNIT_EMBED, 0));
	if (holds_head(p, rank))
		big = fmax(big, footprint_unit_params(j, d, UNIT_HEAD,
						      rank == 0));
	return big;
}

/* Activations a (virtual stage, microbatch) keeps until its backward;
 * its layers start at layer `first`. */
static double stage_act_B(const struct job_spec *j,
			  const struct layer_dims *d, const int64_t *split,
			  int64_t first, int uniform, int64_t vs,
			  struct kind_memo *km, unsigned *kinds)
{
	int64_t stages = j->parallelism.pp * j->parallelism.vpp;
	enum layer_recompute rc = (enum layer_recompute)j->training.recompute;
	int64_t i;
	double b = 0;

	if (uniform && split[vs] > 0)
		b = layer_act_of(km, first, rc, kinds) * (double)split[vs];
	else
		for (i = first; i < first + split[vs]; i++)
			b += layer_act_of(km, i, rc, kinds);
	/* activation offloading (pp 1, train_offload.c): Transformer
	 * Engine's default schedule keeps at most layers - N sets on the
	 * GPU, the first N layers' leaving as the last ones are made */
	if (stages == 1)
		for (i = first; i < first + split[vs] &&
		     i < j->training.cpu_offload_layers; i++)
			b -= layer_act_of(km, i, rc, &(unsigned){ 0 });
	if (vs == 0)
		b += footprint_embed_act_B(d);
	if (vs == stages - 1)
		b += footprint_head_act_B(d);
	return b;
}

int64_t footprint_extra_warmup(const struct job_spec *j)
{
	/* MoE all-to-all overlap runs one more warm-up forward (sched.h) */
	return model_is_moe(j->model) && j->moe.a2a_overlap &&
	       j->parallelism.ep > 1;
}

double footprint_stage_act_B(const struct job_spec *j,
			     const struct layer_dims *d, const int64_t *split,
			     int64_t vs)
{
	unsigned kinds = 0;
	struct kind_memo km;

	km = (struct kind_memo){ .j = j, .d = d };
	return stage_act_B(j, d, split, split_first_layer(split, vs),
			   uniform_layers(j->model), vs, &km, &kinds);
}

/*
 * defer_embedding_wgrad_compute holds, for each backward it defers, the
 * output layer's input (ColumnParallelLinear.forward appends input_ to
 * embedding_activation_buffer: the SP shard, T' h B) and its output
 * gradient (LinearWithGradAccumulationAndAsyncCommunication.backward
 * appends grad_output to grad_output_buffer: T (V/t) B) until the drain
 * after the last backward (NVIDIA/Megatron-LM core_v0.12.0:megatron/
 * core/tensor_parallel/layers.py; schedules.py
 * finish_embedding_wgrad_compute): the first wgrad_deferral_limit
 * backwards of the head's chunk (all with 0; models/train.c t->defer).
 * The last rank's peak is then the largest, over its schedule, of the
 * live activations plus the buffers held so far: a walk of its actions
 * (its g runs one after another, the buffers kept across them).
 * -1 when out of memory; 0 when nothing is deferred on this rank.
 */
static double deferred_peak(const struct job_spec *j,
			    const struct layer_dims *d, int64_t rank,
			    const double *w)
{
	const struct parallel_spec *p = &j->parallelism;
	int64_t g = job_schedule_runs(j), m = job_microbatches(j) / g;
	int64_t defer, n, run, i, c, held = 0;
	double buf = layer_sp_tokens(d) * d->hidden * d->act_B +
		     layer_tokens(d) * d->vocab / d->tp * d->act_B;
	double peak = 0, sum;
	struct sched_action *acts;
	int64_t *live;

	if (!p->defer_embedding_wgrad || p->pp < 2 || rank != p->pp - 1)
		return 0;
	defer = p->wgrad_deferral_limit > 0 &&
		p->wgrad_deferral_limit < m * g ? p->wgrad_deferral_limit :
		m * g;
	n = sched_actions(m, p->vpp);
	acts = mem_alloc((size_t)n * sizeof(*acts));
	live = mem_calloc((size_t)p->vpp, sizeof(*live));
	if (!acts || !live) {
		mem_free(acts);
		mem_free(live);
		return -1;
	}
	sched_rank_ex(p->schedule, p->pp, p->vpp, m, rank,
		      footprint_extra_warmup(j), acts);
	for (run = 0; run < g; run++)
		for (i = 0; i < n; i++) {
			live[acts[i].chunk] += acts[i].bwd ? -1 : 1;
			if (acts[i].bwd && acts[i].chunk == p->vpp - 1 &&
			    run * m + (int64_t)acts[i].mb < defer)
				held++;
			for (sum = (double)held * buf, c = 0; c < p->vpp; c++)
				sum += (double)live[c] * w[c];
			peak = fmax(peak, sum);
		}
	mem_free(acts);
	mem_free(live);
	return peak;
}

/* w[c] = what one microbatch keeps on chunk c of pipeline rank `rank`
 * (stage_act_B); its layers' HAS_ bits into *kinds. */
static void rank_chunks_act(const struct job_spec *j,
			    const struct layer_dims *d, const int64_t *split,
			    const int64_t *first, int uniform, int64_t rank,
			    struct kind_memo *km, double *w, unsigned *kinds)
{
	const struct parallel_spec *p = &j->parallelism;
	int64_t c, vs, f, at = 0, n = 0;

	for (c = 0; c < p->vpp; c++) {
		vs = c * p->pp + rank;
		f = stage_first(split, first, vs, &at, &n);
		w[c] = stage_act_B(j, d, split, f, uniform, vs, km, kinds);
	}
}

/* Rank `rank`'s activations: the peak of its live vectors with its
 * chunks' w (rank_chunks_act) or of its deferred buffers, plus the
 * transient of its largest layer's backward; -1 when out of memory. */
static double rank_act_of(const struct job_spec *j, const struct layer_dims *d,
			  int64_t rank, const struct sched_live *live,
			  const double *w, double transient)
{
	double peak = sched_live_peak(live, w);
	double held = deferred_peak(j, d, rank, w);

	if (held < 0)
		return -1;
	return fmax(peak, held) + transient;
}

static double rank_act_B(const struct job_spec *j, const struct layer_dims *d,
			 const int64_t *split, const int64_t *first,
			 int uniform, int64_t rank,
			 const struct sched_live *live, struct kind_memo *km)
{
	const struct parallel_spec *p = &j->parallelism;
	double w_small[16] = { 0 }, *w = w_small, act;
	unsigned kinds = 0;

	if (p->vpp > 16 && !(w = mem_alloc((size_t)p->vpp * sizeof(*w))))
		return -1;
	rank_chunks_act(j, d, split, first, uniform, rank, km, w, &kinds);
	act = rank_act_of(j, d, rank, live, w, footprint_transient_act_B(d,
			  (enum layer_recompute)j->training.recompute, kinds));
	if (w != w_small)
		mem_free(w);
	return act;
}

double footprint_rank_act_B(const struct job_spec *j,
			    const struct layer_dims *d, const int64_t *split,
			    int64_t rank, const struct sched_live *live)
{
	struct kind_memo km;

	km = (struct kind_memo){ .j = j, .d = d };
	return rank_act_B(j, d, split, NULL, uniform_layers(j->model), rank,
			  live, &km);
}

/* The footprint of pipeline rank `rank` but for its activations
 * (f->activations_B and f->peak_B: rank_peak), and what those take:
 * w[c], one microbatch's bytes on chunk c, and *transient. */
static void rank_state(const struct job_spec *j, const struct layer_dims *d,
		       const int64_t *split, const int64_t *first,
		       int64_t rank, const double pp_B[6],
		       struct kind_memo *km, struct footprint *f, double *w,
		       double *transient)
{
	double pw = pp_B[0], g = pp_B[1], o = pp_B[2], we = pp_B[3],
	       ge = pp_B[4], oe = pp_B[5], dense, experts;
	int uniform = uniform_layers(j->model);
	unsigned kinds = 0;

	rank_params_split(j, d, split, first, uniform, rank, km, &dense,
			  &experts);
	f->rank = rank;
	f->params = dense + experts;
	f->weights_B = dense * pw + experts * we;
	f->grads_B = dense * g + experts * ge;
	f->optimizer_B = dense * o + experts * oe;
	rank_chunks_act(j, d, split, first, uniform, rank, km, w, &kinds);
	*transient = footprint_transient_act_B(d,
		(enum layer_recompute)j->training.recompute, kinds);
	f->workspace_B = j->framework->workspace_B;
	if (model_is_moe(j->model) && j->parallelism.ep > 1)
		f->workspace_B += ep_buffer_bytes(j->moe.dispatcher,
			moe_row_width(d) * d->act_B, (double)j->parallelism.ep,
			(double)j->system->gpus_per_node /
			(double)(j->parallelism.etp > 0 ? j->parallelism.etp :
				 j->parallelism.tp));
	if (j->training.zero_stage >= 3) {
		double edp = (double)(j->parallelism.edp > 0 ?
				      j->parallelism.edp : 1);
		double gathered = (double)j->framework->fsdp_prefetch_units *
				  largest_unit_params(j, d, split, first,
						      rank, km, 0);
		double held;

		/* one stage with the root unit (fsdp_root_unit, train_dp.c):
		 * the embedding and the head stay gathered through the
		 * forward and the backward, beside the prefetched layers */
		if (j->framework->fsdp_root_unit && j->parallelism.pp == 1)
			gathered = fmax(gathered,
				footprint_unit_params(j, d, UNIT_EMBED, 0) +
				footprint_unit_params(j, d, UNIT_HEAD, 1) +
				(double)j->framework->fsdp_prefetch_units *
				largest_unit_params(j, d, split, first, rank,
						    km, 1));
		held = gathered / d->tp * (pw * (double)(j->parallelism.dp *
							 j->parallelism.cp));
		double all = dense * pw * (double)(j->parallelism.dp *
						   j->parallelism.cp) +
			     (edp > 1 ? experts * we * edp : 0);

		if ((!j->framework->fsdp_reshard_after_forward ||
		     (j->framework->fsdp_pp_no_sync && j->parallelism.pp > 1)) &&
		    all > held)
			held = all;
		f->workspace_B += held;
	}
}

/* f's activations (rank f->rank's, live vectors live; w and transient
 * from rank_state) and its peak. 0, or -1 when out of memory. */
static int rank_peak(const struct job_spec *j, const struct layer_dims *d,
		     const struct sched_live *live, const double *w,
		     double transient, struct footprint *f)
{
	f->activations_B = rank_act_of(j, d, f->rank, live, w, transient);
	if (f->activations_B < 0)
		return -1;
	f->peak_B = f->weights_B + f->grads_B + f->optimizer_B +
		    f->activations_B + f->workspace_B;
	return 0;
}

/*
 * Ranks alike: a rank that holds neither end of the model (embedding,
 * LM head and its deferred buffers: rank 0, rank p - 1), nor the MTP
 * module, holds its chunks' layers and nothing else, so two such ranks
 * whose chunks hold layers of the same slots in the same order (the
 * split's counts alone for a uniform model, whose every layer has one
 * slot: no MoE, linear attention or block pattern) have the same
 * parameters, workspace, per-chunk activations and transient, the same
 * operations giving the same bits (kind_memo): their footprints differ
 * in the microbatches their schedules keep in flight alone. job_footprint
 * keeps rank_state's result for the last CLASSES such classes met and
 * runs only rank_peak for a further rank of one (1F1B pp 128: the 126
 * middle ranks of an even split are one class).
 */
enum { CLASSES = 4 };

struct rank_class {
	int64_t rank;		/* the first rank of the class; -1: none */
	double transient;	/* B, rank_state's */
	struct footprint f;	/* rank_state's (rank: the first's) */
};

/* Whether pipeline rank r holds the layers of its chunks alone. */
static int only_layers(const struct parallel_spec *p, int64_t r,
		       int64_t mtp_rank)
{
	return r != 0 && r != p->pp - 1 && !holds_head(p, r) && r != mtp_rank;
}

/* Whether ranks r and q (both only_layers) are alike; of: the layers'
 * slots (NULL: a uniform model). */
static int alike(const struct parallel_spec *p, const int64_t *split,
		 const int64_t *first, const uint8_t *of, int64_t r, int64_t q)
{
	int64_t c, a, b;

	for (c = 0; c < p->vpp; c++) {
		a = c * p->pp + r;
		b = c * p->pp + q;
		if (split[a] != split[b])
			return 0;
		if (of && split[a] > 0 &&
		    memcmp(of + first[a], of + first[b], (size_t)split[a]) != 0)
			return 0;
	}
	return 1;
}

/* The footprint of the worst rank into out and, for r < nper, of rank r
 * into per[r]; live as footprint_job_live has it. */
static int job_footprint(const struct job_spec *j, double usable_B,
			 const struct sched_live *live, struct footprint *out,
			 struct footprint *per, int64_t nper)
{
	const struct parallel_spec *p = &j->parallelism;
	int64_t split_small[512], *split = split_small, *first;
	/* a schedule holds one local batch's microbatches in flight (each
	 * run drains before the next: job_schedule_runs) */
	int64_t r, m = job_microbatches(j) / job_schedule_runs(j);
	int64_t stages = p->pp * p->vpp, k, next = 0;
	int64_t mtp_rank = model_is_moe(j->model) && j->moe.mtp_layers > 0 ?
			   split_mtp_stage(j) % p->pp : -1;
	struct sched_live mine = { 0 };
	struct layer_dims d;
	struct kind_memo km;
	struct rank_class cls[CLASSES];
	/* w of each class, then of a rank of none: (CLASSES + 1) vpp */
	double w_small[(CLASSES + 1) * 16], *ws = w_small, *w, transient;
	/* each layer's slot, once for every rank (a uniform model asks
	 * for one layer a stage: none) */
	int64_t nl = j->model->num_hidden_layers, i;
	uint8_t of_small[512], *of = NULL;
	/* bytes per parameter (weights, grads, optimizer; dense then
	 * routed experts): the same on every rank */
	double pp_B[6];
	int rc = -1;

	if (stages > 256 &&
	    !(split = mem_alloc(2 * (size_t)stages * sizeof(*split))))
		return -1;
	first = split + stages;
	if (p->vpp > 16 &&
	    !(ws = mem_alloc((size_t)((CLASSES + 1) * p->vpp) * sizeof(*ws))))
		goto out;
	if (!uniform_layers(j->model)) {
		of = nl <= 512 ? of_small : mem_alloc((size_t)nl);
		if (!of)
			goto out;
		for (i = 0; i < nl; i++)
			of[i] = (uint8_t)slot_of(j->model, i);
	}
	for (k = 0; k < CLASSES; k++)
		cls[k].rank = -1;
	layer_dims_from_job(j, &d);
	km = (struct kind_memo){ .j = j, .d = &d, .of = of };
	split_layers(j, split);
	first_layers(split, stages, first);
	footprint_per_param(j, &pp_B[0], &pp_B[1], &pp_B[2]);
	footprint_expert_per_param(j, &pp_B[3], &pp_B[4], &pp_B[5]);
	out->peak_B = -1;
	for (r = 0; r < p->pp; r++) {
		struct footprint f;
		const struct sched_live *l = live ? &live[r] : &mine;

		/* zeroed whole, padding too (rank_state sets the members,
		 * a class's copy is taken byte for byte): the planner's
		 * helpers write a copy of the worst footprint down a pipe
		 * byte for byte, and the 4 bytes after `fits` went
		 * uninitialised (valgrind, plan --jobs 2) */
		memset(&f, 0, sizeof(f));
		if (!live && sched_live_init(&mine, p->schedule, p->pp, p->vpp,
					     m, r, footprint_extra_warmup(j)) != 0)
			goto out;
		k = CLASSES;	/* none */
		if (only_layers(p, r, mtp_rank))
			for (k = 0; k < CLASSES; k++)
				if (cls[k].rank >= 0 &&
				    alike(p, split, first, of, r, cls[k].rank))
					break;
		w = ws + k * p->vpp;
		if (k < CLASSES) {	/* a class met before */
			memcpy(&f, &cls[k].f, sizeof(f));
			f.rank = r;
			transient = cls[k].transient;
		} else {
			if (only_layers(p, r, mtp_rank))	/* a new class */
				w = ws + (k = next++ % CLASSES) * p->vpp;
			rank_state(j, &d, split, first, r, pp_B, &km, &f, w,
				   &transient);
			if (k < CLASSES) {
				memcpy(&cls[k].f, &f, sizeof(f));
				cls[k].rank = r;
				cls[k].transient = transient;
			}
		}
		if (rank_peak(j, &d, l, w, transient, &f) != 0)
			goto out;
		sched_live_release(&mine);
		f.usable_B = usable_B;
		f.fits = f.peak_B <= usable_B;
		if (r < nper)
			per[r] = f;
		if (f.peak_B > out->peak_B)
			*out = f;
	}
	out->usable_B = usable_B;
	out->fits = out->peak_B <= usable_B;
	rc = 0;
out:
	sched_live_release(&mine);
	if (split != split_small)
		mem_free(split);
	if (ws != w_small)
		mem_free(ws);
	if (of != of_small)
		mem_free(of);
	return rc;
}

int footprint_job_live(const struct job_spec *j, double usable_B,
		       const struct sched_live *live, struct footprint *out)
{
	return job_footprint(j, usable_B, live, out, NULL, 0);
}

int footprint_job_stages(const struct job_spec *j, double usable_B,
			 struct footprint *out, struct footprint *stages,
			 int64_t nstages)
{
	return job_footprint(j, usable_B, NULL, out, stages, nstages);
}

int footprint_job(const struct job_spec *j, double usable_B,
		  struct footprint *out)
{
	return footprint_job_live(j, usable_B, NULL, out);
}
