/*
 * block.c - cost a layer's op list through the GPU model.
 *
 * Each kernel's time is the GPU model's (gpu.h): a GEMM in the job's
 * low-precision dtype when the op says so (the four linear layers under
 * fp8/MX training), else in the base dtype; fused attention in the base
 * dtype; memory-bound ops by the bytes they move, their working set being
 * what they read and write. A wgrad GEMM that adds into the gradient
 * buffer takes at least the time to move its own bytes plus that buffer's
 * (the roofline of its fused epilogue). The block's model FLOPs count its forward and
 * backward passes by layer_kern_model_flops (no recomputation); its
 * executed FLOPs are what the GPU model says each kernel executes.
 *
 * Block-scaled fp8 (Transformer Engine's Float8BlockScaling: 1x128
 * activation and gradient scales, 128x128 weight scales) on Hopper runs
 * cuBLASLt's VEC128 / BLK128x128 scale modes, whose main loop rescales
 * each 128-deep k block's partial sums in fp32 before accumulating them;
 * such a GEMM's math runs at the GPU's fp8_block_gemm_rate of the fp8
 * rate (configs/gpus: its source), its memory traffic as per-tensor
 * fp8's:
 *
 *     R_block = fp8_block_gemm_rate x R(fp8)
 *
 * Accumulation modes (Hopper fp8, gpu.h gpu_use_fp8_fast_accum). A
 * per-tensor fp8 GEMM either promotes the tensor core's partial sums to
 * fp32 every few k blocks (split accumulator: gemm_efficiency_dtype fp8)
 * or never does (fast accumulation: the GPU's fp8_fast_accum_efficiency).
 * The framework says which passes run fast (fp8_fast_accumulation:
 * Transformer Engine's fprop, transformer_engine/pytorch/module/base.py
 * _2X_ACC_FPROP False, _2X_ACC_DGRAD and _2X_ACC_WGRAD True, the same in
 * recipe.Float8CurrentScaling's MMParams, @ d0067d0d); a recomputed
 * forward runs as the forward. Block scaling always promotes
 * (Float8BlockScaling asserts use_split_accumulator on all three).
 */
#include "block.h"

#include <math.h>
#include <stdio.h>

#include "base/diag.h"
#include "config/spec_job.h"

/* Local experts a grouped GEMM holds at most (Kimi-K2: 384 on one GPU). */
#define GROUPED_MAX JOB_LOCAL_EXPERTS_MAX	/* the job layout refuses more */

/* A GEMM whose result is added into a gradient buffer (beta 1: D = C +
 * A B with C = D the buffer). Its epilogue moves the buffer's accum_B
 * bytes (read C, write D) in place of a plain GEMM's result store, so the
 * GEMM is costed with those bytes per output element as its result width:
 * gpu_gemm.c's wave model adds the epilogue's traffic after each wave's
 * mainloop (t_e), as it does for a plain GEMM's store. The roofline of
 * all its bytes stays a floor. */
/* An NVFP4 GEMM (Transformer Engine's cublas_gemm, common/gemm/
 * cublaslt_gemm.cu @ 71bbefbf, the 26.04 pin, through d0067d0) first
 * launches nvte_nvfp4_compute_per_tensor_scale: the GEMM's alpha from the
 * two operands' per-tensor amaxes, a one-value kernel on the stream before
 * the cuBLASLt call (beta 0 or 1 comes from device constants): one more
 * kernel launch. */
static struct gpu_cost accumulating_gemm(const struct kern *k,
					 const struct gpu_spec *g,
					 enum dtype dt)
{
	struct gpu_cost c;
	double ws, mem_s, elems = k->m * k->n * k->batch;

	if (k->accum_B > 0 && elems > 0) {
		struct gpu_gemm_dtypes q = {
			.compute = dt, .a_B = dtype_bytes(dt),
			.b_B = dtype_bytes(dt), .c_B = k->accum_B / elems,
		};
		c = gpu_gemm_q(g, &q, k->m, k->n, k->k, k->batch);
		ws = c.bytes;
	} else {
		c = gpu_gemm(g, dt, k->m, k->n, k->k, k->batch);
		ws = c.bytes + k->accum_B;
	}
	mem_s = ws / gpu_level_bandwidth_Bps(g, gpu_serving_level(g, ws));
	if (k->accum_B > 0 && g->kernel_launch_s + mem_s > c.time_s) {
		c.time_s = g->kernel_launch_s + mem_s;
		c.bound = GPU_BOUND_MEMORY;
	}
	if (dt == DTYPE_NVFP4)
		c.time_s += g->kernel_launch_s;	/* the alpha kernel, above */
	c.bytes = ws;
	return c;
}

/* A grouped GEMM over the experts (rows in m or k), with the weight
 * gradients' accumulation as accumulating_gemm's: accum_B spread over
 * the n experts' m x n outputs as the epilogue's bytes per element. */
static struct gpu_cost grouped_gemm(const struct kern *k,
				    const struct gpu_spec *g, enum dtype dt)
{
	struct gpu_gemm_group groups[GROUPED_MAX];
	double each, ws, mem_s, kernels, acc_B = k->accum_B;
	struct gpu_cost c;
	int e, n = k->ngroups;

	if (n > GROUPED_MAX)
		BUG("more local experts than a grouped GEMM holds");
	/* rows not given: a balanced rank, k->m or k->k is the total */
	each = 0;
	for (e = 0; e < n; e++) {
		double r = k->rows ? k->rows[e] : each;

		groups[e] = (struct gpu_gemm_group){ k->m, k->n, k->k };
		if (k->group_dim == GROUP_M)
			groups[e].m = r;
		else
			groups[e].k = r;
	}
	if (k->accum_B > 0 && n > 0 && k->m * k->n > 0) {
		struct gpu_gemm_dtypes q = {
			.compute = dt, .a_B = dtype_bytes(dt),
			.b_B = dtype_bytes(dt),
			.c_B = k->accum_B / (n * k->m * k->n),
		};
		c = gpu_grouped_gemm_q(g, &q, groups, (size_t)n);
		acc_B = 0;	/* in c.bytes, through the epilogue */
	} else {
		c = gpu_grouped_gemm(g, dt, groups, (size_t)n);
	}
	/* per-expert kernels over streams: each stream's chain of launches
	 * (moe.c stream_kernels) beyond the one the grouped cost holds pays
	 * the GPU's launch, every kernel beyond that one its set-up and
	 * drain (gpu_grouped_kernels_s, gpu_grouped.c says why) */
	kernels = k->kernels > k->launches ? k->kernels : k->launches;
	c.time_s += gpu_grouped_kernels_s(g, kernels, k->launches);
	/* and no less than the longest stream's own kernels one after
	 * another (gpu_grouped_chain_s) */
	if (k->kernels > 1) {
		struct gpu_gemm_dtypes q = {
			.compute = dt, .a_B = dtype_bytes(dt),
			.b_B = dtype_bytes(dt),
			.c_B = dtype_bytes(dt) < 2 ? 2 : dtype_bytes(dt),
		};

		if (k->accum_B > 0 && n > 0 && k->m * k->n > 0)
			q.c_B = k->accum_B / (n * k->m * k->n);
		c.time_s = fmax(c.time_s, gpu_grouped_chain_s(g, &q, groups,
				(size_t)n, k->launches));
	}
	/* the backward's per-expert BLAS kernels at the GPU's measured
	 * fraction of that (configs/gpus: expert_bwd_efficiency) */
	if (k->stream_bwd && g->expert_bwd_efficiency > 0)
		c.time_s /= g->expert_bwd_efficiency;
	ws = c.bytes + acc_B;
	mem_s = ws / gpu_level_bandwidth_Bps(g, gpu_serving_level(g, ws));
	if (k->accum_B > 0 && g->kernel_launch_s + mem_s > c.time_s) {
		c.time_s = g->kernel_launch_s + mem_s;
		c.bound = GPU_BOUND_MEMORY;
	}
	c.bytes = ws;
	return c;
}

/* The GEMM dtype: an explicit one (the router's), else low or base. A
 * TF32 GEMM (an fp32 one the library runs as TF32) on a GPU without a
 * TF32 rate runs in fp32. */
static enum dtype gemm_dt(const struct kern *k, const struct gpu_spec *g,
			  const struct block_dtypes *dt)
{
	if (k->dt == DTYPE_TF32 && !(gpu_peak_flops(g, DTYPE_TF32) > 0))
		return DTYPE_FP32;
	if (k->dt >= 0)
		return (enum dtype)k->dt;
	return k->lowp ? dt->gemm_lowp : dt->base;
}

/* A memory-bound kernel that reaches k->mem_eff of the streaming rate
 * (an MXFP8 cast, layer_cast.c lop_cast): its bytes over the serving
 * level's rate times mem_eff (the level chosen by the bytes it really
 * moves, and those reported), plus its launches. */
static struct gpu_cost slow_memory_op(const struct kern *k,
				      const struct gpu_spec *g)
{
	double e = k->mem_eff, ws = k->read_B + k->write_B;
	struct gpu_cost c = gpu_memory_ops(g, k->read_B / e, k->write_B / e,
					   k->strided_B / e, k->vec_flops, ws,
					   k->launches);

	c.bytes = ws;
	return c;
}

/* A memory-bound op holding an atomic scatter-add (index_add_ or
 * scatter_add_ of several rows into each output row): its bytes as
 * gpu_memory_ops streams them, plus what the scatter_B added bytes take
 * at the GPU's scatter-add rate beyond streaming. */
static struct gpu_cost scatter_op(const struct kern *k,
				  const struct gpu_spec *g)
{
	struct gpu_cost c = gpu_memory_ops(g, k->read_B, k->write_B,
					   k->strided_B, k->vec_flops,
					   k->read_B + k->write_B, k->launches);
	double extra_s = gpu_scatter_add_extra_s(g, k->scatter_B);

	if (extra_s > 0) {
		c.time_s += extra_s;
		c.bound = GPU_BOUND_MEMORY;
	}
	return c;
}

/* A chunked linear-recurrence kernel in the base dtype. */
static struct gpu_cost chunk_cost(const struct kern *k,
				  const struct gpu_spec *g,
				  const struct block_dtypes *dt)
{
	struct gpu_chunk_shape s;

	s.m = k->m;
	s.n = k->n;
	s.k = k->k;
	s.batch = k->batch;
	s.in_B = k->chunk_in_B;
	s.out_B = k->chunk_out_B;
	s.backward = k->chunk_bwd;
	return gpu_chunk_gemm(g, dt->base, &s);
}

/* Latency-bound kernels (kern chain_*, moe_permute.c): Transformer
 * Engine's Triton kernels launch with Triton's default 4 warps (its
 * autotune configs set none: triton.Config num_warps=4), 128 threads a
 * program, and an NVIDIA SM keeps at most 2048 threads resident (CUDA
 * C++ Programming Guide, compute capabilities 8.0-10.x), so 16 programs
 * an SM run side by side and the grid runs in waves of 16 x SMs. Each
 * program issues its chain of dependent loads one after the other, a
 * load taking the GPU's pointer-chase hit latency (l1_hit_latency,
 * l2_hit_latency: cycles at max_clock). The kernel takes at least the
 * waves times the chain; its bytes stream meanwhile (its stores do not
 * wait). 0 where the GPU states no latency. */
#define CHAIN_THREADS 128.0
#define SM_MAX_THREADS 2048.0

static double chain_s(const struct kern *k, const struct gpu_spec *g)
{
	double resident = floor(SM_MAX_THREADS / CHAIN_THREADS) *
			  (double)g->compute_units;
	double cycles = k->chain_l1 * g->l1_hit_cycles +
			k->chain_l2 * g->l2_hit_cycles;

	if (!(k->chain_grid > 0) || !(resident > 0) || !(g->max_clock_hz > 0))
		return 0;
	return ceil(k->chain_grid / resident) * cycles / g->max_clock_hz;
}

static struct gpu_cost mem_cost(const struct kern *k,
				const struct gpu_spec *g)
{
	if (k->mem_eff > 0 && k->mem_eff < 1)
		return slow_memory_op(k, g);
	if (k->scatter_B > 0)
		return scatter_op(k, g);
	if (k->launches > 1 || k->strided_B > 0)
		return gpu_memory_ops(g, k->read_B, k->write_B, k->strided_B,
				      k->vec_flops, k->read_B + k->write_B,
				      k->launches);
	return gpu_memory_op(g, k->read_B, k->write_B, k->vec_flops,
			     k->read_B + k->write_B);
}

/* The time of one kernel on g. */
static struct gpu_cost kern_cost(const struct kern *k, const struct gpu_spec *g,
				 const struct block_dtypes *dt)
{
	struct gpu_cost c;
	double chain;

	switch (k->kind) {
	case KERN_CHUNK:
		return chunk_cost(k, g, dt);
	case KERN_GEMM:
		return accumulating_gemm(k, g, gemm_dt(k, g, dt));
	case KERN_GROUPED:
		return grouped_gemm(k, g, gemm_dt(k, g, dt));
	case KERN_ATTN_FWD:
		return gpu_attention_fwd(g, dt->base, &k->attn);
	case KERN_ATTN_BWD:
		return gpu_attention_bwd(g, dt->base, &k->attn);
	case KERN_MEM:
		break;
	}
	c = mem_cost(k, g);
	chain = chain_s(k, g);
	if (chain > c.time_s) {
		c.time_s = chain;
		c.bound = GPU_BOUND_MEMORY;
	}
	return c;
}

static const char *op_name(const struct layer_op *op, struct prog *p)
{
	char buf[96];

	if (op->pass != PASS_RECOMPUTE || !p)
		return op->name;
	snprintf(buf, sizeof(buf), "recompute %s", op->name);
	return prog_intern(p, buf);
}

/* Copy op's structure into bo and cost its kernel. */
static int cost_op(struct block_op *bo, const struct layer_op *op,
		   const struct gpu_spec *g, const struct block_dtypes *dt,
		   struct prog *p)
{
	struct gpu_cost c = { 0 };

	bo->name = op_name(op, p);
	bo->kind = op->kind;
	bo->coll = op->coll;
	bo->bytes = op->coll_B;
	bo->a2a_B = op->a2a_B;
	bo->group = op->group;
	bo->stream = op->stream;
	bo->ep_path = op->ep_path;
	bo->p2p_next = op->p2p_next;
	bo->bwd = op->pass == PASS_BWD;
	bo->host = op->host;
	bo->scope = op->scope;
	bo->host_n = op->host_n;
	bo->host_kernels = op->host_kernels;
	bo->host_gemm = op->host_gemm;
	bo->side_stream = op->side_stream;
	bo->host_events = op->host_events;
	bo->host_items = op->host_items;
	bo->host_hooks = op->host_hooks;
	bo->host_wait = op->host_wait;
	bo->host_call_s = op->host_call_s;
	bo->host_s = 0;
	bo->host_name = NULL;
	bo->dep[0] = op->dep[0];
	bo->dep[1] = op->dep[1];
	if (op->kind == LOP_KERNEL)
		c = kern_cost(&op->k, g, dt);
	bo->time_s = c.time_s;
	bo->flops = c.flops;
	bo->mem_bound = op->kind == LOP_KERNEL && c.bound == GPU_BOUND_MEMORY;
	bo->owned = gpu_gemm_owned_share(g, c.tiles_per_unit);
	return bo->name ? 0 : -1;
}

double block_lowp_rate(const struct job_spec *j)
{
	if (j->training.dtype != DTYPE_FP8 ||
	    j->training.fp8_scaling != FP8_BLOCK || !j->system ||
	    !j->system->gpu)
		return 1;
	return j->system->gpu->fp8_block_gemm_rate;
}

unsigned block_fast_accum(const struct job_spec *j)
{
	unsigned fwd = 1u << PASS_FWD | 1u << PASS_RECOMPUTE;

	if (j->training.dtype != DTYPE_FP8 ||
	    j->training.fp8_scaling == FP8_BLOCK || !j->framework)
		return 0;
	switch (j->framework->fp8_fast_accum) {
	case FP8_FAST_FPROP:
		return fwd;
	case FP8_FAST_ALL:
		return fwd | 1u << PASS_BWD;
	default:
		return 0;
	}
}

unsigned block_captured(const struct job_spec *j)
{
	unsigned bits = 0;
	int s;

	for (s = SCOPE_ATTN; s < SCOPE_COUNT; s++)
		if (layer_job_captures(j, s))
			bits |= 1u << s;
	return bits;
}

/* g with gemm_lowp's GEMM efficiency times dt->lowp_rate, in *low, for
 * the low-precision GEMMs; g itself when the rate is all of it. */
static const struct gpu_spec *lowp_gpu(const struct gpu_spec *g,
				       const struct block_dtypes *dt,
				       struct gpu_spec *low)
{
	double r = dt->lowp_rate;

	if (!(r > 0) || r >= 1 || dt->gemm_lowp < 0 ||
	    dt->gemm_lowp >= DTYPE_COUNT)
		return g;
	*low = *g;
	low->gemm_efficiency_dtype[dt->gemm_lowp] *= r;
	return low;
}

int block_cost(struct block *b, const struct layer_ops *o,
	       const struct gpu_spec *g, const struct block_dtypes *dt,
	       struct prog *p)
{
	struct gpu_spec low, cap, cap_low, fast, cap_fast;
	const struct gpu_spec *gl = lowp_gpu(g, dt, &low);
	const struct gpu_spec *gc = g, *gcl = gl, *gf = gl, *gcf = gl;
	int i;

	/* A kernel replayed from a captured graph pays the GPU's gap
	 * between graph nodes, not the eager host launch (as infer_cost). */
	if (dt->captured) {
		cap = *g;
		cap.kernel_launch_s = g->kernel_launch_graph_s;
		cap_low = *gl;
		cap_low.kernel_launch_s = g->kernel_launch_graph_s;
		gc = &cap;
		gcl = &cap_low;
		gcf = gcl;
	}
	/* The fast-accumulation passes' fp8 GEMMs (block_fast_accum: never
	 * block-scaled, so gl is g there). */
	if (dt->fast_accum && dt->gemm_lowp == DTYPE_FP8 &&
	    g->fp8_fast_accum_efficiency > 0) {
		fast = *gl;
		gpu_use_fp8_fast_accum(&fast);
		cap_fast = fast;
		if (dt->captured)
			cap_fast.kernel_launch_s = g->kernel_launch_graph_s;
		gf = &fast;
		gcf = &cap_fast;
	}

	b->n = o->n;
	b->out = o->n - 1;
	b->time_s = b->mem_s = b->flops = b->model_flops = 0;
	for (i = 0; i < o->n; i++) {
		const struct layer_op *op = &o->op[i];
		int in_graph = op->scope != SCOPE_NONE &&
			       (dt->captured >> op->scope & 1u);
		int lowp = op->k.lowp && (op->k.kind == KERN_GEMM ||
					  op->k.kind == KERN_GROUPED);
		int fa = lowp && (dt->fast_accum >> op->pass & 1u);
		const struct gpu_spec *go = !lowp ? (in_graph ? gc : g) :
					    fa ? (in_graph ? gcf : gf) :
					    in_graph ? gcl : gl;

		if (cost_op(&b->op[i], op, go, dt, p) != 0)
			return -1;
		b->time_s += b->op[i].time_s;
		if (b->op[i].mem_bound)
			b->mem_s += b->op[i].time_s;
		b->flops += b->op[i].flops;
		if (op->kind == LOP_KERNEL && op->pass != PASS_RECOMPUTE)
			b->model_flops += layer_kern_model_flops(&op->k);
	}
	return 0;
}
