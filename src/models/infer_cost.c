/*
 * infer_cost.c - the time of an inference step's op list on one GPU.
 *
 * Each kernel op of an infer_ops list (infer.c, infer_moe.c) is costed by
 * the GPU model: a GEMM by gpu_gemm_q in the weights' (or, for ops with
 * bf16 weights, the base) dtype, a local experts' grouped GEMM by
 * gpu_grouped_gemm_q over evenly split rows, prefill and decode attention
 * by gpu_attention_prefill/decode over the batch's sequence groups (split
 * at a chunked layer's attention chunks), and every other kernel as a
 * memory-bound op (the CUTLASS fused MoE's row-searching kernels take
 * the larger of their bytes and their rows' search time). An op inside a
 * captured CUDA graph (engine graph full, or piecewise outside attention)
 * pays the graph's kernel launch, an eager one the host launch.
 * Collectives are not timed here: their bytes pass to the caller, which
 * runs them on the fabric model.
 *
 * Split out of infer.c (round 17), behaviour unchanged.
 */
#include "infer_impl.h"

#include <math.h>
#include <string.h>

#include "base/mem.h"
#include "base/htab.h"

/* The attention groups of b of one kind (prefill or decode). */
int infer_chunk_groups(double count, double q, double kv, double chunk,
		       struct gpu_attn_group *out, int cap)
{
	double start = kv - q, cs, ce;
	int n = 0;

	if (cap < 1)
		return 0;
	if (!(chunk > 0)) {
		out[0] = (struct gpu_attn_group){count, q, kv};
		return 1;
	}
	while (start < kv) {
		cs = floor(start / chunk) * chunk;
		ce = n == cap - 1 ? kv : fmin(cs + chunk, kv);
		out[n++] = (struct gpu_attn_group){count, ce - start, ce - cs};
		start = ce;
	}
	return n;
}

/* The attention groups of b's prefill (or decode) sequences, split by
 * the layer's attention chunks; out holds INFER_MAX_ATTN_GROUPS. */
static int groups_of(const struct infer_batch *b, int prefill,
		     const struct infer_kind *k, struct gpu_attn_group *out)
{
	double chunk = k ? k->chunk : 0;
	int i, n = 0;

	for (i = 0; i < b->n; i++) {
		const struct infer_seqs *s = &b->g[i];
		int left = INFER_MAX_ATTN_GROUPS - n - (b->n - i - 1);

		if (s->prefill != prefill || s->count <= 0 || s->q <= 0 ||
		    s->pad)
			continue;
		n += infer_chunk_groups(s->count, s->q, s->ctx + s->q, chunk,
					out + n, left > 1 ? left : 1);
	}
	return n;
}

static void attn_heads(const struct infer_dims *d, int decode,
		       const struct infer_kind *k, struct gpu_attn_heads *h)
{
	memset(h, 0, sizeof(*h));
	h->window = k ? k->window : 0;
	h->stream_rows = decode ? 0 : d->sink_rows;
	h->heads_q = infer_heads_local(d);
	h->kv_B = d->kv_B;
	if (!d->mla) {
		h->heads_kv = infer_kv_heads_local(d);
		h->head_dim_qk = h->head_dim_v = d->head_dim;
	} else if (decode || d->index_topk > 0) {
		/* absorbed: MQA over the latent, values its first r (DSA's
		 * sparse kernel in prefill too: infer.c indexer_ops) */
		h->heads_kv = 1;
		h->head_dim_qk = d->kv_lora_rank + d->rope_dim;
		h->head_dim_v = d->kv_lora_rank;
		h->shared_kv = 1;
	} else {
		/* decompressed prompt keys: per-head K and V in bf16 */
		h->heads_kv = infer_heads_local(d);
		h->head_dim_qk = d->nope_dim + d->rope_dim;
		h->head_dim_v = d->v_head_dim;
		h->kv_B = d->act_B;
	}
}

/* The local experts' grouped GEMM: op->m rows over op->groups experts
 * (at least one), evenly; weights in the experts' dtype, read cold.
 * TensorRT-LLM's CUTLASS fused MoE (moe_kernels: cutlass) tiles rows by
 * no fewer than the GPU's cutlass_moe_tile_m at the compute dtype, unless
 * the weights alone are quantized (its weight-only lists keep 64-row
 * tiles). */
static struct gpu_cost grouped_cost(const struct infer_op *op,
				    const struct infer_dims *d,
				    const struct gpu_spec *g)
{
	struct gpu_gemm_group grp[INFER_MAX_EXPERT_GROUPS];
	struct gpu_gemm_dtypes q;
	size_t n = (size_t)fmax(1, fmin(round(op->groups),
					INFER_MAX_EXPERT_GROUPS)), i;
	const struct infer_moe *e = &d->moe;
	/* the step's tokens (vLLM's M: rows x E / (k x local)) */
	double tokens = e->topk > 0 && e->local > 0 ?
			op->m * e->experts / (e->topk * e->local) : op->m;
	int64_t tuned_m = (int64_t)e->tuned[2];

	q.compute = d->moe.compute;
	q.a_B = d->moe.gemm_a_B;
	q.b_B = d->moe.weight_B;
	q.c_B = d->act_B;
	q.b_cold = 1;
	q.one_kernel = 0;
	q.efficiency = d->moe.wo_eff_used;
	/* block-scaled fp8 experts in the CUTLASS fused MoE: the GPU's
	 * measured share of its fp8 rate for them (gpu
	 * cutlass_moe_fp8_block_rate) */
	if (d->moe.quant_in_op && q.efficiency == 0 &&
	    g->cutlass_moe_fp8_block_rate < 1)
		q.efficiency = g->gemm_efficiency_dtype[DTYPE_FP8] *
			       g->cutlass_moe_fp8_block_rate;
	q.tile_m = d->moe.wo_tile_m;
	q.ntile_m = d->moe.wo_ntile_m;
	/* block-scaled fp8 experts in vLLM's Triton fused_moe: the GPU's
	 * measured share of its fp8 rate (triton_moe_fp8_block_rate), on
	 * the GPU's own tiles (the weight-only kernels' are not this
	 * kernel's) */
	if (q.efficiency == 0 && d->moe.block_rate < 1) {
		q.efficiency = g->gemm_efficiency_dtype[DTYPE_FP8] *
			       d->moe.block_rate;
		q.ntile_m = 0;
	}
	/* 16-bit experts on vLLM's Triton fused_moe without a tuned
	 * config: get_default_config's 64 x 64 x 32 tile, which it picks
	 * for M > E (M the tokens of the batch: rows x E / (k x local), E
	 * the local experts), at the GPU's measured efficiency for it
	 * (triton_moe_default_efficiency); at M <= E its 16 x 32 x 64 tile
	 * streams the weights at the GEMM's own rate (aic rows at 128-256
	 * tokens: 4.0-4.2 TB/s on H200) */
	if (q.efficiency == 0 && d->moe.default_eff > 0 &&
	    d->moe.topk > 0 && d->moe.local > 0 &&
	    op->m * d->moe.experts / (d->moe.topk * d->moe.local) >
	    d->moe.local) {
		q.efficiency = d->moe.default_eff;
		q.ntile_m = 0;
	}
	q.tile_n = d->moe.wo_tile_n;
	q.tile_cover = d->moe.wo_tile_cover;
	q.cover_rows = d->moe.wo_cover_rows;
	q.min_tile_m = d->moe.cutlass && d->moe.weight == d->moe.compute &&
		       !d->moe.quant_in_op ?
		       g->cutlass_moe_tile_m[d->moe.compute] : 0;
	q.resident = 0;
	q.tile_Bps = 0;
	/* block-fp8 experts in vLLM's Triton fused_moe where its tuned
	 * file names a small-batch tile (gpu triton_moe_fp8_block_tuned):
	 * that tile alone between its fewest and most tokens, over the
	 * kernel's whole
	 * grid (gpu_grouped.c empty_blocks_s), as many CTAs an SM as its
	 * shared memory holds of the tile's num_stages A and B stages
	 * (Triton's pipeliner buffers each stage: stages x (BM BK a_B +
	 * BK BN b_B) bytes a CTA) */
	if (d->moe.block_rate < 1 && e->tuned[1] > 0 &&
	    tokens >= e->tuned[0] && tokens <= e->tuned[1] && tuned_m > 0) {
		double stage_B = e->tuned[5] * (e->tuned[2] * e->tuned[4] *
						q.a_B + e->tuned[4] *
						e->tuned[3] * q.b_B);

		q.tile_m = &tuned_m;
		q.ntile_m = 1;
		q.tile_n = e->tuned[3];
		q.tile_cover = 1;
		q.cover_rows = 1;
		q.resident = stage_B > 0 ?
			     fmax(1, floor(g->lds_per_cu_B / stage_B)) : 1;
		q.tile_Bps = g->triton_moe_tile_Bps;
	}
	for (i = 0; i < n; i++)
		grp[i] = (struct gpu_gemm_group){op->m / (double)n, op->n, op->k};
	return gpu_grouped_gemm_q(g, &q, grp, n);
}

/* A memory op of the CUTLASS fused MoE that searches each of its
 * search_rows rows' expert (moe_expand, expert_act: a binary search over
 * the experts' first rows before each row's copy, infer_moe.c): its body
 * takes max(bytes / bandwidth, rows x the GPU's cutlass_moe_row_time at
 * the experts' compute dtype), the launch on top. */
static struct gpu_cost search_cost(const struct infer_op *op,
				   const struct infer_dims *d,
				   const struct gpu_spec *g)
{
	struct gpu_cost c = gpu_memory_op(g, op->read_B, op->write_B,
					  op->vec_flops,
					  op->read_B + op->write_B);
	double rows_s = op->search_rows *
			g->cutlass_moe_row_time_s[d->moe.compute];
	double launch_s = c.time_s > 0 ? g->kernel_launch_s : 0;

	if (rows_s > c.time_s - launch_s) {
		c.time_s = launch_s + rows_s;
		c.bound = rows_s >= launch_s ? GPU_BOUND_COMPUTE
					     : GPU_BOUND_LAUNCH;
	}
	return c;
}

/* Mamba-2's decode state update (infer_mamba.c): a memory op whose
 * ssm_state_B bytes of recurrent state move at the GPU's
 * ssm_update_bandwidth where it serves them from HBM (gpu.h
 * gpu_ssm_update_extra_s), the rest streaming. */
static struct gpu_cost ssm_update_cost(const struct infer_op *op,
				       const struct gpu_spec *g)
{
	struct gpu_cost c = gpu_memory_op(g, op->read_B, op->write_B,
					  op->vec_flops,
					  op->read_B + op->write_B);

	if (c.level == GPU_LEVEL_HBM) {
		c.time_s += gpu_ssm_update_extra_s(g, op->ssm_state_B);
		if (c.bound == GPU_BOUND_LAUNCH &&
		    c.time_s >= 2 * g->kernel_launch_s)
			c.bound = GPU_BOUND_MEMORY;
	}
	return c;
}

/* A host-to-device copy from pinned memory (infer.h h2d_B): the host
 * issues it (a launch), then its bytes cross the host link at d->h2d_Bps;
 * it writes them to HBM as it goes. */
static struct gpu_cost h2d_cost(const struct infer_op *op,
				const struct infer_dims *d,
				const struct gpu_spec *g)
{
	struct gpu_cost c;

	memset(&c, 0, sizeof(c));
	c.time_s = g->kernel_launch_s + op->h2d_B / d->h2d_Bps;
	c.bytes = op->h2d_B;
	c.bound = GPU_BOUND_MEMORY;
	return c;
}

/* DSA under vLLM's FLASHMLA_SPARSE backend (engine dsa_kernel
 * flashmla_sparse; infer.c indexer_ops): FlashMLA's sparse prefill kernel
 * on the absorbed latent, the rank's query heads padded up to the GPU's
 * flashmla_sparse_heads (a CTA's head tile), every query computing all
 * index_topk key slots (gpu_attention_gather). With a 16-bit KV cache the
 * backend sends the decode tokens through the same kernel
 * (FlashMLASparseImpl.forward: _forward_bf16_kv for every token unless
 * the cache is fp8_ds_mla). */
static struct gpu_cost sparse_gather_cost(const struct infer_dims *d,
					  const struct infer_kind *kind,
					  const struct gpu_spec *g,
					  const struct gpu_attn_group *grp,
					  int n, int decode)
{
	struct gpu_attn_heads h;

	attn_heads(d, decode, kind, &h);
	h.heads_q = ceil(h.heads_q / d->dsa_pad_heads) * d->dsa_pad_heads;
	return gpu_attention_gather(g, d->base, &h, grp, n, d->index_topk,
				    d->dsa_pad_heads,
				    g->flashmla_sparse_efficiency);
}

/* The prompt groups' flash kernel with the decode groups in it, unpacked
 * (infer_dims mixed_rows; gpu.h gpu_attention_mixed). */
static struct gpu_cost mixed_cost(const struct infer_dims *d,
				  const struct infer_batch *b,
				  const struct infer_kind *kind,
				  const struct gpu_spec *g)
{
	struct gpu_attn_group pre[INFER_MAX_ATTN_GROUPS];
	struct gpu_attn_group dec[INFER_MAX_ATTN_GROUPS];
	struct gpu_attn_heads h;
	int np = groups_of(b, 1, kind, pre), nd = groups_of(b, 0, kind, dec);

	attn_heads(d, 0, kind, &h);
	return gpu_attention_mixed(g, d->base, &h, pre, np, dec, nd,
				   d->mixed_rows);
}

static struct gpu_cost kern_cost(const struct infer_op *op,
				 const struct infer_dims *d,
				 const struct infer_batch *b,
				 const struct infer_kind *kind,
				 const struct gpu_spec *g)
{
	struct gpu_attn_group grp[INFER_MAX_ATTN_GROUPS];
	struct gpu_attn_heads h;
	struct gpu_gemm_dtypes q;
	struct gpu_chunk_shape cs;
	int n;

	switch (op->kern) {
	case IK_GEMM:
		q.compute = op->weight_B_base ? d->base : d->compute;
		q.a_B = op->weight_B_base ? d->act_B : d->gemm_a_B;
		q.b_B = op->weight_B_base ? d->act_B : d->weight_B;
		q.c_B = d->act_B;
		q.b_cold = 1;
		q.one_kernel = op->m <= (op->weight_B_base ||
					 d->weight == d->base
					 ? d->skinny_rows_base : d->skinny_rows);
		q.min_tile_m = 0;
		/* weights alone quantized (narrower than the inputs): the
		 * engine's weight-only kernel where the GPU gives its rate */
		q.efficiency = !op->weight_B_base &&
			       q.b_B < dtype_bytes(q.compute) ?
			       d->wo_linear_eff : 0;
		q.tile_m = NULL;
		q.ntile_m = 0;
		q.tile_n = 0;
		q.tile_cover = 0;
		q.cover_rows = 0;
		q.resident = 0;
		q.tile_Bps = 0;
		return gpu_gemm_q(g, &q, op->m, op->n, op->k, op->batch);
	case IK_GROUPED:
		return grouped_cost(op, d, g);
	case IK_ATTN_PREFILL:
		if (op->mixed)
			return mixed_cost(d, b, kind, g);
		n = groups_of(b, 1, kind, grp);
		attn_heads(d, 0, kind, &h);
		if (op->dense_mha) {	/* DSA's masked MHA: decompressed */
			h.heads_kv = infer_heads_local(d);
			h.head_dim_qk = d->nope_dim + d->rope_dim;
			h.head_dim_v = d->v_head_dim;
			h.kv_B = d->act_B;
			h.shared_kv = 0;
			h.window = 0;
		} else if (d->index_topk > 0 && d->dsa_pad_heads > 0) {
			return sparse_gather_cost(d, kind, g, grp, n, 0);
		}
		if (d->trtllm_ctx16 && !op->dense_mha)
			h.fwd_efficiency = g->attention.trtllm_ctx16_eff;
		return gpu_attention_prefill(g, d->base, &h, grp, n);
	case IK_ATTN_DECODE:
		n = groups_of(b, 0, kind, grp);
		if (d->index_topk > 0 && d->dsa_pad_heads > 0 &&
		    d->kv_B >= dtype_bytes(d->base))
			return sparse_gather_cost(d, kind, g, grp, n, 1);
		attn_heads(d, 1, kind, &h);
		if (d->trtllm_decode)
			h.split = g->attention.trtllm_decode;
		h.partition = d->decode_partition;
		return gpu_attention_decode(g, d->base, &h, grp, n);
	case IK_CHUNK:
		cs.m = op->m;
		cs.n = op->n;
		cs.k = op->k;
		cs.batch = op->batch;
		cs.in_B = op->chunk_in_B;
		cs.out_B = op->chunk_out_B;
		cs.backward = 0;
		return gpu_chunk_gemm(g, d->base, &cs);
	case IK_MEM:
		if (op->h2d_B > 0)
			return h2d_cost(op, d, g);
		if (op->search_rows > 0)
			return search_cost(op, d, g);
		if (op->ssm_state_B > 0)
			return ssm_update_cost(op, g);
		break;
	}
	return gpu_memory_op(g, op->read_B, op->write_B, op->vec_flops,
			     op->read_B + op->write_B);
}

/* Weights a GEMM op reads (B). */
static double weights_read_B(const struct infer_op *op,
			     const struct infer_dims *d)
{
	if (op->kern == IK_GROUPED)
		return op->groups * op->n * op->k * d->moe.weight_B;
	if (op->kern != IK_GEMM || op->attention)
		return 0;
	return op->batch * op->n * op->k *
	       (op->weight_B_base ? d->act_B : d->weight_B);
}

/* ---- the memo (infer.h) ---- */

/* What an op's cost depends on besides (d0, g): the layer kind, the GPU
 * variant (eager or captured launch, fp8 fast accumulation or not) and
 * the op's shape fields kern_cost reads for a non-attention kernel. The
 * key is zeroed before it is filled, so its padding compares equal. */
struct memo_key {
	const struct infer_kind *kind;
	int variant;		/* 0 g, 1 captured, 2 fast, 3 captured fast */
	int kern, dense_mha, weight_B_base;
	double m, n, k, batch, groups;
	double read_B, write_B, vec_flops, h2d_B, search_rows, ssm_state_B;
};

struct infer_cost_memo {
	struct htab *t;		/* memo_key -> struct gpu_cost */
	const struct infer_dims *d0;
	const struct gpu_spec *g;
	uint64_t hits, misses;
};

/* Slots at first use and at most: past the cap the table starts over
 * (a miss costs the op once more, never a different number). */
#define MEMO_MIN_SLOTS 512
#define MEMO_MAX_SLOTS 32768

struct infer_cost_memo *infer_cost_memo_new(void)
{
	struct infer_cost_memo *m = mem_calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->t = htab_new(sizeof(struct gpu_cost), MEMO_MIN_SLOTS,
			MEMO_MAX_SLOTS);
	if (!m->t) {
		mem_free(m);
		return NULL;
	}
	return m;
}

void infer_cost_memo_free(struct infer_cost_memo *m)
{
	if (!m)
		return;
	htab_free(m->t);
	mem_free(m);
}

void infer_cost_memo_stats(const struct infer_cost_memo *m, uint64_t *hits,
			   uint64_t *misses)
{
	*hits = m ? m->hits : 0;
	*misses = m ? m->misses : 0;
}

static int cost_variant(const struct gpu_spec *g, const struct gpu_spec *k,
			const struct gpu_spec *captured,
			const struct gpu_spec *fast)
{
	if (k == g)
		return 0;
	if (k == captured)
		return 1;
	return k == fast ? 2 : 3;
}

/* kern_cost through m: a non-attention kernel's cost from the memo, or
 * computed and kept (out of memory: computed, not kept). */
static struct gpu_cost memo_cost(struct infer_cost_memo *m,
				 const struct infer_op *op,
				 const struct infer_dims *d,
				 const struct infer_batch *b,
				 const struct infer_kind *kind,
				 const struct gpu_spec *gk, int variant)
{
	struct memo_key key;
	const struct gpu_cost *hit;
	struct gpu_cost c;

	if (!m || op->kern == IK_ATTN_PREFILL || op->kern == IK_ATTN_DECODE)
		return kern_cost(op, d, b, kind, gk);
	memset(&key, 0, sizeof(key));
	key.kind = kind;
	key.variant = variant;
	key.kern = (int)op->kern;
	key.dense_mha = op->dense_mha;
	key.weight_B_base = op->weight_B_base;
	key.m = op->m;
	key.n = op->n;
	key.k = op->k;
	key.batch = op->batch;
	key.groups = op->groups;
	key.read_B = op->read_B;
	key.write_B = op->write_B;
	key.vec_flops = op->vec_flops;
	key.h2d_B = op->h2d_B;
	key.search_rows = op->search_rows;
	key.ssm_state_B = op->ssm_state_B;
	hit = htab_get(m->t, &key, sizeof(key));
	if (hit) {
		m->hits++;
		return *hit;
	}
	c = kern_cost(op, d, b, kind, gk);
	htab_put(m->t, &key, sizeof(key), &c);
	m->misses++;
	return c;
}

void infer_cost(const struct infer_ops *o, const struct infer_dims *d0,
		const struct infer_batch *b, const struct infer_kind *kind,
		const struct gpu_spec *g, enum infer_graph graph,
		struct infer_unit *u)
{
	infer_cost_memo(o, d0, b, kind, g, graph, NULL, u);
}

void infer_cost_memo(const struct infer_ops *o, const struct infer_dims *d0,
		     const struct infer_batch *b, const struct infer_kind *kind,
		     const struct gpu_spec *g, enum infer_graph graph,
		     struct infer_cost_memo *m, struct infer_unit *u)
{
	struct infer_dims tmp;
	const struct infer_dims *d = infer_kind_dims(d0, kind, &tmp);
	struct gpu_spec captured = *g, fast, captured_fast;
	int i, use_fast = d->fp8_fast_accum && d->compute == DTYPE_FP8 &&
			  g->fp8_fast_accum_efficiency > 0;

	captured.kernel_launch_s = g->kernel_launch_graph_s;
	/* The engine's dense fp8 GEMMs in fast accumulation (infer.h
	 * fp8_fast_accum): the GPU's fp8_fast_accum_efficiency for them. */
	if (use_fast) {
		fast = *g;
		gpu_use_fp8_fast_accum(&fast);
		captured_fast = fast;
		captured_fast.kernel_launch_s = g->kernel_launch_graph_s;
	}
	if (m && (m->d0 != d0 || m->g != g)) {	/* another step model's */
		htab_clear(m->t);
		m->d0 = d0;
		m->g = g;
	}
	memset(u, 0, sizeof(*u));
	u->n = o->n;
	for (i = 0; i < o->n; i++) {
		const struct infer_op *op = &o->op[i];
		struct infer_cost_op *c = &u->op[i];
		int in_graph = op->h2d_B <= 0 &&
			       (graph == IGRAPH_FULL ||
				(graph == IGRAPH_PIECEWISE && !op->attention));
		const struct gpu_spec *gk;
		struct gpu_cost k;

		c->name = op->name;
		c->kind = op->kind;
		c->coll = op->coll;
		c->a2a_B = op->a2a_B;
		c->ep_row_B = op->ep_row_B;
		c->ep_kind = op->ep_kind;
		c->tbo_yield = op->tbo_yield;
		c->ep_free = op->ep_free;
		if (op->kind != IOP_KERNEL) {
			c->bytes = op->coll_B;
			continue;
		}
		gk = use_fast && op->kern == IK_GEMM &&
		     !op->weight_B_base && !op->attention ?
		     (in_graph ? &captured_fast : &fast) :
		     in_graph ? &captured : g;
		k = memo_cost(m, op, d, b, kind, gk,
			      cost_variant(g, gk, &captured, &fast));
		u->weights_B += weights_read_B(op, d);
		c->eager = !in_graph;
		u->eager += !in_graph;
		c->time_s = k.time_s;
		c->flops = k.flops;
		c->bytes = k.bytes;
		u->kernel_s += k.time_s;
		u->flops += k.flops;
		u->bytes += k.bytes;
	}
}
