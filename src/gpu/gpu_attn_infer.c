/*
 * gpu_attn_infer.c - attention in an inference step: prefill chunks over
 * a cached prefix, and decode over a paged KV cache.
 *
 * A step's attention sees groups of sequences: `count` sequences with q
 * new query tokens each and kv keys (kv - q cached, then the q new ones;
 * causal). Per sequence and query head the visible pairs P(q, kv) and the
 * FLOPs per pair 2 (d + d_v) are those of gpu_attention.c.
 *
 * Bytes. Q and O in the step's dtype (e bytes), K and V read from the
 * cache at e_kv bytes (fp8 caches are dequantized in the kernel):
 *
 *     D = sum over groups  count (q h_q (d + d_v) e + kv h_kv w e_kv + q h_q 4)
 *
 * with w = d + d_v, or d when K and V are one cached vector (absorbed MLA,
 * V being the first d_v elements of the latent), and the fp32 row
 * log-sum-exp. The cache was written in earlier steps and has been evicted
 * since (a step touches every layer's KV once): the serving level is HBM.
 *
 * Prefill: one variable-length flash kernel for all groups (FlashAttention
 * varlen, FlashInfer's batch prefill): the work units of every group's
 * query blocks and heads share the CUs, list-scheduled as in
 * gpu_attention.c (a group alone gives gpu_attention_fwd's time when its
 * bytes are served by HBM there too):
 *
 *     t = t_launch + max(t_c(all units), D / B_hbm)
 *
 * Mixed steps in one kernel without GQA packing (gpu_attention_mixed):
 * vLLM V1's FlashAttention backend sends every token of a step to one
 * flash_attn_varlen_func (v1/attention/backends/flash_attn.py
 * FlashAttentionImpl.forward), and on FlashAttention 2 that call packs a
 * KV head's query heads only when every query is one token
 * (vllm-project/flash-attention csrc/flash_attn/flash_api.cpp
 * mha_varlen_fwd: seqlenq_ngroups_swapped = max_seqlen_q == 1 && ...;
 * vLLM's own use_cascade_attention: "use_flash_decoding = ... and
 * np.all(query_lens == 1)"). A paged cache runs the split-KV kernel
 * (run_mha_fwd with force_split_kernel = paged_KV; flash_fwd_launch_
 * template.h run_mha_fwd_splitkv_dispatch: kBlockM = 64, grid (query
 * blocks, sequences, query heads)), so a decode token of a step with
 * prompt tokens is h_q programs of one real row each, and each program
 * loads its KV head's keys itself. The programs of one sequence's query
 * heads lie a grid plane of (query block, sequence) apart, the plane
 * holding a program of every decode sequence (80 sequences of 2K bf16
 * keys at 512 B: 84 MB a KV head, twice A100's 40 MB L2), so each is
 * taken to read from HBM [?: no profile of the hit rate; an adjacent
 * head's program, dispatched about half the resident CTAs later, may
 * find part of its keys in L2]. Their units are rows_m rows over the kv
 * keys, the
 * prompt groups' units as above, one launch, one union:
 *
 *     D_dec = sum count (q h_q (d + d_v) e + kv h_q w e_kv + q h_q 4)
 *     t = t_launch + max(t_c(all units), (D_pre + D_dec) / B_hbm)
 *
 * Decode (q small: one token, or 1 + k draft tokens under verification):
 * flash-decoding with split KV (Dao et al. 2023; FlashInfer, vLLM's paged
 * attention v2, FlashMLA). A work unit is one (sequence, KV head); its
 * g = h_q / h_kv query heads ride along (GQA packing), so a unit reads its
 * keys once. When the units cannot fill the U compute units the keys of
 * each are split into s chunks, s = min(ceil(U / N0), ceil(kv / B_k)),
 * N0 = sum count h_kv, B_k = attention.block_q the KV tile; a unit then
 * reads kv/s keys at its CU's share of the bandwidth and computes on its
 * share of the rate:
 *
 *     t_u = t_0 + max(kv/s w e_kv / (B_hbm / U),
 *                     2 q g (kv/s) (d + d_v) / (R_a rho / U))
 *
 * rho = r / (M ceil(r / M)) the fill of the MMAs: r = q g query rows per
 * unit padded to the MMA's row granule M = attention.mma_rows (a decode
 * with one query and 8-way GQA fills half of a 16-row MMA; absorbed MLA's
 * 128 heads fill them). R_a, t_0 as for prefill. Units of a group are
 * equal; groups differ, so the units are list-scheduled as above. Split
 * units leave fp32 partial outputs and log-sum-exps that a second kernel
 * merges (vLLM's paged attention v2 reduce, FlashInfer's merge states):
 *
 *     D_m = sum count q h_q (s (d_v + 1) 4 + d_v e),  t_m = D_m / B_hbm
 *
 *     t = t_launch (1 + [s > 1]) + max(t_c, D / B_hbm) + t_m
 *
 * The kernels split only to fill the GPU, never to balance a partial
 * last wave once the units fill it, so t keeps its wave steps (e.g.
 * Qwen3-30B, 4 KV heads, on B200's 148 SMs: 148 sequences are 4 waves,
 * 149 are 5): trtllm-gen, TensorRT-LLM's Blackwell decode
 * (NVIDIA/TensorRT-LLM@01c84c67 trtllmGenKernels/fmha/fmhaKernels.h
 * computeNumCtas: CTAs per sequence's KV = max(1, floor(SMs / CTAs)),
 * at most one per KV tile, else the persistent scheduler);
 * FlashInfer's decode plan (flashinfer-ai/flashinfer@fb28d724
 * include/flashinfer/attention/scheduler.cuh: no split once batch x
 * KV heads >= occupancy x SMs, below it a binary search of the chunk
 * that fits that grid); XQA, TensorRT-LLM's Hopper decode (@12453212
 * decoderXQAImplCommon.h computeMultiBlockCount: kv / 512 blocks, at
 * most round(sqrt(8 kv / 512)), cut by floor to at most 8 waves, so
 * 1 block once the units exceed 4 waves). h->split picks the rule:
 * the ceil above (FlashInfer-like, GPU_TRTLLM_DECODE_NONE), trtllm-gen's
 * floor, s = min(floor(U / N0), ceil(kv / B_k)) while N0 < U
 * (GPU_TRTLLM_DECODE_TRTLLM_GEN), or XQA's count with kv the group's
 * keys, s = max(1, min(x, round(sqrt(8 x)))) for x = floor(kv / 512),
 * cut to floor(s / (w / 8)) when the w = N0 s / U waves exceed 8
 * (GPU_TRTLLM_DECODE_XQA; it splits past one wave too, so a partial last
 * wave of long sequences shrinks: 8 H200 sequences of 32k keys and 8 KV
 * heads run 16 blocks each, 7.8 waves, where the ceil gives 3 and two
 * waves of 1.45). The engine's decode_kernel says whether the GPU's
 * TensorRT-LLM rule applies (attention.trtllm_decode).
 *
 * A fixed-partition kernel (h->partition = P keys; engine
 * decode_partition) splits every sequence into s = ceil(kv / P) units
 * whatever the fill: AMD's custom paged attention, which vLLM's ROCm
 * builds run for decode (ROCm/vllm@6663000a csrc/rocm/attention.cu
 * paged_attention_custom_launcher: PARTITION_SIZE 256, grid (sequences,
 * ceil(max_seq_len / 256), KV heads) of 256-thread workgroups, one
 * (sequence, partition, KV head) each, a workgroup past its sequence's
 * end returning at once; then paged_attention_ll4mi_reduce_kernel, grid
 * (query heads, sequences), launched at every s). Its partials tmp_out
 * are in the query's dtype (scalar_t), exp_sums and max_logits fp32:
 *
 *     D_m = sum count q h_q (s (d_v e + 2 x 4) + d_v e),  2 launches
 *
 * XQA's kernels (NVIDIA/TensorRT-LLM decoderXQAImplJIT/kernelUtils.cpp
 * supportConfigQGMMA: SM 90 and kv_cache_data_type E4M3 only; else
 * supportConfigHMMA, SM >= 80, 16-bit, INT8 or E4M3 caches): on Hopper an
 * FP8 cache runs the warp-specialized GMMA kernel (mha_sm90), a 16-bit one
 * the Ampere-style mma.sync kernel (mha.cu), whose work units take at
 * least attention.xqa_hmma_unit_time each (scaled from its tables'
 * clock to the step's as t_mla below), t_u = max(that, t_u above):
 * a fixed per-unit cost (Q load, pipeline, epilogue) that a unit's key
 * reads hide once it has a few hundred keys.
 *
 * TensorRT-LLM's MLA generation (absorbed MLA decode, h->shared_kv, with
 * its decode rule set): AttentionOp::mlaGeneration runs its own fmha
 * kernels, not XQA ("Current mlaGeneration will using fmha to do
 * attention", thop/attentionOp.cpp, NVIDIA/TensorRT-LLM; trtllm-gen on
 * Blackwell). Its op timings (aiconfigurator's generation_mla_perf, 128
 * heads, 1-1024 sequences, 1-131071 cached keys) are, at every batch,
 * a fixed time plus one per sequence plus the pairs at one rate: no
 * waves and no split steps, the kernel keeping every SM busy. Where the
 * GPU gives attention.trtllm_mla_efficiency (16-bit cache: of the
 * clock-scaled bf16 peak) or trtllm_mla_fp8_efficiency (FP8 cache: of
 * the fp8 peak), with n sequences of F FLOPs and B bytes in all:
 *
 *     t = t_launch + max(F / (eta R_peak) + n t_mla / U, B / B_hbm)
 *
 * t_mla = attention.trtllm_mla_unit_time, a sequence's fixed time on
 * one SM (its 128 query heads' Q load, softmax state and output), in
 * cycles: scaled from its tables' clock to the step's (gpu
 * fitted_clock; gpu_fitted_time). The GPU files give the fit
 * (scripts/fit-trtllm-mla-decode.c).
 *
 * Sliding windows (h->window = w): a group's kernel reads the keys
 * within w of its queries, min(kv, q + w - 1) per sequence, and its
 * pairs are gpu_attention.c's windowed ones.
 *
 * Range: paged layouts cost as contiguous (page-table reads and partial
 * last pages ignored: a page is 16-64 tokens of 256+ bytes each); sparse
 * attention (DeepSeek V3.2's DSA: the top-k keys of each query) is costed
 * as a window of top-k keys (models/infer.c indexer_ops), its gathered
 * keys read as the window's would be. A unit on few CUs is
 * charged its 1/U share of the bandwidth, which understates what one
 * CU pulls when the kernel has fewer units than CUs (short single-
 * sequence decode), where launch time dominates anyway.
 */
#include "gpu_impl.h"

#include <math.h>

#include "base/diag.h"

/* Bytes of K and V (or the shared latent) per key and KV head. */
static double kv_width(const struct gpu_attn_heads *h)
{
	return h->shared_kv ? h->head_dim_qk : h->head_dim_qk + h->head_dim_v;
}

static void check_heads(const struct gpu_attn_heads *h)
{
	gpu_require_size(h->heads_q, "attention query heads");
	gpu_require_size(h->heads_kv, "attention key/value heads");
	gpu_require_size(h->head_dim_qk, "attention head dim");
	gpu_require_size(h->head_dim_v, "attention value head dim");
	if (!(h->kv_B > 0) || !(h->heads_kv > 0))
		BUG("inference attention without KV heads or KV bytes");
}

static void check_group(const struct gpu_attn_group *grp)
{
	gpu_require_size(grp->count, "attention sequences");
	gpu_require_size(grp->q, "attention query tokens");
	gpu_require_size(grp->kv, "attention keys");
	if (grp->q > grp->kv)
		BUG("an attention group with more queries than keys");
}

/* The shape of one sequence of a group (gpu_attention.c's terms). */
static struct gpu_attn_shape group_shape(const struct gpu_attn_heads *h,
					 const struct gpu_attn_group *grp)
{
	struct gpu_attn_shape a = {
		.batch = 1, .heads_q = h->heads_q, .heads_kv = h->heads_kv,
		.seq_q = grp->q, .seq_kv = grp->kv,
		.head_dim_qk = h->head_dim_qk, .head_dim_v = h->head_dim_v,
		.causal = 1, .window = h->window,
	};

	return a;
}

/* Keys of a group's sequence the kernel reads: all of them, or under a
 * sliding window of w those within w of one of its q queries. */
static double keys_read(const struct gpu_attn_heads *h,
			const struct gpu_attn_group *grp)
{
	if (h->window > 0)
		return fmin(grp->kv, grp->q + h->window - 1);
	return grp->kv;
}

/* D of one group (see the top). */
static double group_bytes(const struct gpu_attn_heads *h,
			  const struct gpu_attn_group *grp, double e)
{
	double qo = grp->q * h->heads_q * (h->head_dim_qk + h->head_dim_v) * e;
	double kv = keys_read(h, grp) * h->heads_kv * kv_width(h) * h->kv_B;
	double lse = grp->q * h->heads_q * dtype_bytes(DTYPE_FP32);

	return grp->count * (qo + kv + lse);
}

/* Keys the programs of one sequence's KV head read under stream_rows R
 * (see the top): g = h_q / h_kv query heads share a KV head, a program
 * holds R rows (the next power of two of g when g > R), so
 * T = floor(rows / g) query tokens, and the q tokens take nb = ceil(q / T)
 * programs. Program i sees the context c = kv - q and its tokens up to
 * min((i + 1) T, q): c + min((i + 1) T, q) keys, or under a window w only
 * those within w of its tokens, T + w - 1 at most (the kernel starts its
 * key loop at the window's first tile). Summed over i in closed form:
 *
 *     no window:  nb c + T nb (nb - 1) / 2 + q
 *     window:     n1 c + T n1 (n1 + 1) / 2 + (nb - 1 - n1) W
 *                 + min(c + q, q - (nb - 1) T + w - 1)
 *
 * with W = T + w - 1 and n1 = min(nb - 1, max(0, ceil((W - c) / T) - 1))
 * the full programs whose visible keys are fewer than W. */
static double stream_keys(const struct gpu_attn_heads *h,
			  const struct gpu_attn_group *grp)
{
	double g = h->heads_q / h->heads_kv, rows = h->stream_rows;
	double t, nb, c = grp->kv - grp->q, w = h->window, full_w, n1;

	if (g > rows)
		rows = pow(2, ceil(log2(g)));
	t = fmax(1, floor(rows / g));
	nb = ceil(grp->q / t);
	if (!(w > 0))
		return nb * c + t * nb * (nb - 1) / 2 + grp->q;
	full_w = t + w - 1;
	n1 = fmin(nb - 1, fmax(0, ceil((full_w - c) / t) - 1));
	return n1 * c + t * n1 * (n1 + 1) / 2 + (nb - 1 - n1) * full_w +
	       fmin(c + grp->q, grp->q - (nb - 1) * t + w - 1);
}

static double pair_flops(const struct gpu_attn_heads *h)
{
	return 2 * (h->head_dim_qk + h->head_dim_v);
}

/* Add `copies` times the units u to the union acc. */
static void add_units(struct gpu_units *acc, const struct gpu_units *u,
		      double copies)
{
	acc->n += copies * u->n;
	acc->sum_s += copies * u->sum_s;
	acc->sum2_s2 += copies * u->sum2_s2;
	acc->longest_s = fmax(acc->longest_s, u->longest_s);
}

/* Compute time of the union of units on the GPU's CUs: whole waves when
 * every unit is equal, else the list-scheduling bound. */
static double union_s(const struct gpu_units *u, double cus)
{
	int equal = u->n > 0 &&
		    fabs(u->sum_s - u->n * u->longest_s) <= 1e-12 * u->sum_s;

	return gpu_attn_schedule_s(u, 1, cus, !equal);
}

/* The prefill kernel's work and bytes for groups grp: units of b query
 * rows per query head (b = 0: no tiling, FLOPs at the rate), each
 * sequence's keys read for heads_read KV heads (h->heads_kv; the query
 * heads where the kernel does not pack them). grouped: the GPU's vendor
 * forward kernel, whose units hold attention.fwd_q_blocks query blocks
 * as the training forward's (gpu_attn_fwd_units): the GPU's
 * attention.fwd_efficiency is fitted under those units, so a kernel that
 * takes it takes them too. */
struct flash_sum {
	struct gpu_units all;
	double flops, bytes, stream_B;
};

static void flash_groups(const struct gpu_spec *g, double e, double rate,
			 const struct gpu_attn_heads *h, double heads_read,
			 const struct gpu_attn_group *grp, int ngroups,
			 double b, int grouped, struct flash_sum *f)
{
	double cus = (double)g->compute_units;
	double bw = gpu_level_bandwidth_Bps(g, GPU_LEVEL_HBM);
	double tile_s = b * b * pair_flops(h) / (rate / cus);
	double keep_s = b * h->head_dim_qk * e / (bw / cus);
	struct gpu_attn_heads hr = *h;
	int i;

	hr.heads_kv = heads_read;
	for (i = 0; i < ngroups; i++) {
		struct gpu_attn_shape a;
		struct gpu_units u;

		check_group(&grp[i]);
		if (grp[i].count == 0 || grp[i].q == 0)
			continue;
		a = group_shape(h, &grp[i]);
		f->flops += grp[i].count * h->heads_q * gpu_attn_pairs(&a) *
			    pair_flops(h);
		f->bytes += group_bytes(&hr, &grp[i], e);
		if (h->stream_rows > 0)
			f->stream_B += grp[i].count * h->heads_kv *
				       stream_keys(h, &grp[i]) * kv_width(h) *
				       h->kv_B;
		if (b > 0) {
			u = grouped ?
			    gpu_attn_fwd_units(g, &a, b,
					       g->gemm_tile_overhead_s,
					       keep_s, tile_s) :
			    gpu_attn_units(g, &a, b, g->gemm_tile_overhead_s +
					   keep_s, tile_s, 0);
			add_units(&f->all, &u, grp[i].count * h->heads_q);
		}
	}
}

static double prefill_rate(const struct gpu_spec *g, enum dtype dt,
			   const struct gpu_attn_heads *h)
{
	return gpu_attn_rate(g, dt, h->fwd_efficiency > 0 ? h->fwd_efficiency :
			     g->attention.fwd_efficiency,
			     h->head_dim_qk, h->head_dim_v, 0);
}

static struct gpu_cost flash_cost(const struct gpu_spec *g, double rate,
				  const struct flash_sum *f, int tiled)
{
	double cus = (double)g->compute_units, comp_s, memory_s;

	if (f->flops == 0)
		return (struct gpu_cost){0, 0, 0, GPU_BOUND_COMPUTE, GPU_LEVEL_HBM, 0};
	comp_s = tiled ? gpu_attn_schedule_s(&f->all, 1, cus, 1) :
		 f->flops / rate;
	memory_s = fmax(f->bytes / gpu_level_bandwidth_Bps(g, GPU_LEVEL_HBM),
			f->stream_B / gpu_level_bandwidth_Bps(g, GPU_LEVEL_L2));
	return gpu_make_cost(g, f->flops, f->bytes, GPU_LEVEL_HBM, 1,
			     fmax(comp_s, memory_s), comp_s, memory_s);
}

struct gpu_cost gpu_attention_prefill(const struct gpu_spec *g, enum dtype dt,
				      const struct gpu_attn_heads *h,
				      const struct gpu_attn_group *grp,
				      int ngroups)
{
	double b = (double)g->attention.block_q, rate;
	struct flash_sum f = {{0, 0, 0, 0}, 0, 0, 0};

	gpu_require_dtype(g, dt);
	check_heads(h);
	rate = prefill_rate(g, dt, h);
	/* (a kernel with its own h->fwd_efficiency keeps one-block units) */
	flash_groups(g, dtype_bytes(dt), rate, h, h->heads_kv, grp, ngroups,
		     b, !(h->fwd_efficiency > 0), &f);
	return flash_cost(g, rate, &f, b > 0);
}

/* Prompt and decode groups in the prefill kernel's one launch, the decode
 * groups unpacked (see gpu.h): their units rows_m query rows per query
 * head, each reading its KV head's keys. */
struct gpu_cost gpu_attention_mixed(const struct gpu_spec *g, enum dtype dt,
				    const struct gpu_attn_heads *h,
				    const struct gpu_attn_group *pre, int npre,
				    const struct gpu_attn_group *dec, int ndec,
				    double rows_m)
{
	double rate;
	struct flash_sum f = {{0, 0, 0, 0}, 0, 0, 0};
	struct gpu_attn_heads hd = *h;

	gpu_require_dtype(g, dt);
	check_heads(h);
	gpu_require_size(rows_m, "mixed attention rows a program");
	if (!(rows_m > 0))
		BUG("mixed attention without tiles");
	rate = prefill_rate(g, dt, h);
	/* The prompt groups' programs are the same paged split-KV kernel's
	 * (flash_api.cpp mha_varlen_fwd: a block table forces
	 * run_mha_fwd_splitkv_dispatch, kBlockM 64), so they tile at rows_m
	 * too, not at the GPU's own prefill tile attention.block_q (which a
	 * GPU config may leave out). */
	flash_groups(g, dtype_bytes(dt), rate, h, h->heads_kv, pre, npre,
		     rows_m, 0, &f);
	hd.stream_rows = 0;
	flash_groups(g, dtype_bytes(dt), rate, &hd, h->heads_q, dec, ndec,
		     rows_m, 0, &f);
	return flash_cost(g, rate, &f, 1);
}

/* Token-level sparse attention over a fixed number of gathered key slots
 * (gpu.h gpu_attention_gather): FlashMLA's sparse prefill kernel on sm90
 * and sm100 (deepseek-ai/FlashMLA @ 1408756 and vllm-project/FlashMLA,
 * csrc/sm90/prefill/sparse/fwd.cu: grid (h_q / B_H) x s_q, B_H = 64 query
 * heads a CTA; num_topk_blocks = topk / B_TOPK, every block's QK^T and PV
 * issued, invalid indices (-1, or past s_kv) masked to -inf after the
 * QK^T). A CTA's work is the same for every query, S slots of its
 * H_c heads, and a CTA holds an SM (its 384 threads and shared memory):
 *
 *     t_c = ceil(N_cta / U) S H_c 2 (d + d_v) / (R / U),
 *     N_cta = sum count q h_q / H_c
 *
 * R = eta x the dt matrix rate at the sustained clock (eta 0: the flash
 * forward's rate, gpu_attn_rate). Bytes as the prefill kernel's (D above:
 * Q, O, the LSE and each sequence's keys once; the gathers' re-reads of
 * a sequence's keys hit L2, inside the measured rate eta comes from). */
struct gpu_cost gpu_attention_gather(const struct gpu_spec *g, enum dtype dt,
				     const struct gpu_attn_heads *h,
				     const struct gpu_attn_group *grp,
				     int ngroups, double slots,
				     double cta_heads, double eta)
{
	double cus = (double)g->compute_units, e = dtype_bytes(dt);
	double rate, ctas = 0, bytes = 0, cta_s, comp_s, mem_s, flops;
	int i;

	gpu_require_dtype(g, dt);
	check_heads(h);
	gpu_require_size(slots, "sparse attention key slots");
	gpu_require_size(cta_heads, "sparse attention heads a CTA");
	if (fmod(h->heads_q, cta_heads) != 0)
		BUG("sparse attention heads not a multiple of a CTA's");
	rate = eta > 0 ? gpu_clock_peak_flops(g, dt) * eta :
	       gpu_attn_rate(g, dt, g->attention.fwd_efficiency,
			     h->head_dim_qk, h->head_dim_v, 0);
	for (i = 0; i < ngroups; i++) {
		check_group(&grp[i]);
		ctas += grp[i].count * grp[i].q * h->heads_q / cta_heads;
		bytes += group_bytes(h, &grp[i], e);
	}
	if (ctas == 0)
		return (struct gpu_cost){0, 0, 0, GPU_BOUND_COMPUTE, GPU_LEVEL_HBM, 0};
	cta_s = slots * cta_heads * pair_flops(h) / (rate / cus);
	comp_s = ceil(ctas / cus) * cta_s;
	flops = ctas * slots * cta_heads * pair_flops(h);
	mem_s = bytes / gpu_level_bandwidth_Bps(g, GPU_LEVEL_HBM);
	return gpu_make_cost(g, flops, bytes, GPU_LEVEL_HBM, 1,
			     fmax(comp_s, mem_s), comp_s, mem_s);
}

/* XQA's multi-block count (see the top): kv / 512 blocks, at most
 * round(sqrt(8 kv / 512)), cut to at most kTargetWaveFactor (8) waves of
 * the n0 (sequence, KV head) units. */
#define XQA_MIN_KEYS_PER_BLOCK 512	/* kMinHistoryTokensPerBlock */
#define XQA_TARGET_WAVES 8		/* kTargetWaveFactor */

static double xqa_splits(double cus, double n0, double kv)
{
	double s = floor(kv / XQA_MIN_KEYS_PER_BLOCK), waves;

	s = fmax(1, fmin(s, round(sqrt(8 * s))));
	waves = n0 * s / cus;
	if (waves > XQA_TARGET_WAVES)
		s = floor(s / (waves / XQA_TARGET_WAVES));
	return fmax(1, s);
}

/* Splits of a group's keys (see the top): h->split's rule. */
static double kv_splits(const struct gpu_spec *g,
			const struct gpu_attn_heads *h, double n0, double kv)
{
	double cus = (double)g->compute_units, bk = (double)g->attention.block_q;

	if (h->partition > 0)
		return fmax(1, ceil(kv / h->partition));
	if (h->split == GPU_TRTLLM_DECODE_XQA)
		return xqa_splits(cus, n0, kv);
	if (n0 >= cus || bk <= 0)
		return 1;
	if (h->split == GPU_TRTLLM_DECODE_TRTLLM_GEN)
		return fmax(1, fmin(floor(cus / n0), ceil(kv / bk)));
	return fmax(1, fmin(ceil(cus / n0), ceil(kv / bk)));
}

/* The MMA fill rho of r query rows (see the top). */
static double mma_fill(const struct gpu_spec *g, double rows)
{
	double m = (double)g->attention.mma_rows;

	if (m <= 1 || rows <= 0)
		return 1;
	return rows / (m * ceil(rows / m));
}

/* The dtype the MLA generation kernel computes in: its cache's (FP8 for
 * a 1-byte cache, else 16-bit). */
static enum dtype mla_dtype(const struct gpu_attn_heads *h)
{
	return h->kv_B < 2 ? DTYPE_FP8 : DTYPE_BF16;
}

/* TensorRT-LLM's MLA generation kernel (see the top): the whole GPU at
 * the kernel's measured rate, a fixed time a sequence shared by the
 * SMs, no waves (its own split keeps every SM busy at any batch). */
static struct gpu_cost trtllm_mla_decode(const struct gpu_spec *g,
					 enum dtype dt,
					 const struct gpu_attn_heads *h,
					 const struct gpu_attn_group *grp,
					 int ngroups, double eta)
{
	enum dtype mdt = mla_dtype(h);
	double rate, bw, flops = 0, bytes = 0, fixed = 0, comp_s, unit_s;
	int i;

	gpu_require_dtype(g, mdt);
	rate = gpu_clock_peak_flops(g, mdt) * eta;
	unit_s = gpu_fitted_time(g, g->attention.trtllm_mla_unit_s,
				 g->fitted_clock.trtllm_mla_unit_hz);
	bw = gpu_level_bandwidth_Bps(g, GPU_LEVEL_HBM);
	for (i = 0; i < ngroups; i++) {
		const struct gpu_attn_group *x = &grp[i];
		struct gpu_attn_shape a;

		check_group(x);
		if (x->count == 0 || x->q == 0)
			continue;
		a = group_shape(h, x);
		flops += x->count * h->heads_q * gpu_attn_pairs(&a) *
			 pair_flops(h);
		bytes += group_bytes(h, x, dtype_bytes(dt));
		fixed += x->count * unit_s;
	}
	if (flops == 0)
		return (struct gpu_cost){0, 0, 0, GPU_BOUND_MEMORY, GPU_LEVEL_HBM, 0};
	comp_s = flops / rate + fixed / (double)g->compute_units;
	return gpu_make_cost(g, flops, bytes, GPU_LEVEL_HBM, 1,
			     fmax(comp_s, bytes / bw), comp_s, bytes / bw);
}

struct gpu_cost gpu_attention_decode(const struct gpu_spec *g, enum dtype dt,
				     const struct gpu_attn_heads *h,
				     const struct gpu_attn_group *grp,
				     int ngroups)
{
	double cus = (double)g->compute_units, e = dtype_bytes(dt);
	double rate, bw, flops = 0, bytes = 0, merge_B = 0, n0 = 0, comp_s;
	double gq = h->heads_q / h->heads_kv;
	struct gpu_units all = {0, 0, 0, 0};
	int i, launches = 1;
	/* XQA's Hopper GMMA kernel takes FP8 (1-byte) caches only; a 16-bit
	 * cache runs its mma.sync kernel, whose units take at least the
	 * GPU's xqa_hmma_unit_time (see the top) */
	double floor_s = h->split == GPU_TRTLLM_DECODE_XQA && h->kv_B > 1 ?
			 gpu_fitted_time(g, g->attention.xqa_hmma_unit_s,
					 g->fitted_clock.xqa_hmma_unit_hz) : 0;
	double mla_eta = mla_dtype(h) == DTYPE_FP8 ?
			 g->attention.trtllm_mla_fp8_eff :
			 g->attention.trtllm_mla_eff;

	gpu_require_dtype(g, dt);
	check_heads(h);
	rate = gpu_attn_rate(g, dt, g->attention.fwd_efficiency,
			     h->head_dim_qk, h->head_dim_v, 0);
	/* (a GPU without the cache dtype's matrix rate keeps the flash
	 * rates: the key is a kernel's rate at that dtype) */
	if (h->shared_kv && h->split != GPU_TRTLLM_DECODE_NONE && mla_eta > 0 &&
	    gpu_peak_flops(g, mla_dtype(h)) > 0)
		return trtllm_mla_decode(g, dt, h, grp, ngroups, mla_eta);
	bw = gpu_level_bandwidth_Bps(g, GPU_LEVEL_HBM);
	for (i = 0; i < ngroups; i++) {
		check_group(&grp[i]);
		n0 += grp[i].count * h->heads_kv;
	}
	for (i = 0; i < ngroups; i++) {
		const struct gpu_attn_group *x = &grp[i];
		struct gpu_attn_shape a;
		struct gpu_units u;
		double s, keys, mem_s, comp;

		if (x->count == 0 || x->q == 0)
			continue;
		a = group_shape(h, x);
		flops += x->count * h->heads_q * gpu_attn_pairs(&a) *
			 pair_flops(h);
		bytes += group_bytes(h, x, e);
		s = kv_splits(g, h, n0, keys_read(h, x));
		keys = keys_read(h, x) / s;
		mem_s = keys * kv_width(h) * h->kv_B / (bw / cus);
		comp = x->q * gq * keys * pair_flops(h) /
		       (rate * mma_fill(g, x->q * gq) / cus);
		u.n = 1;
		u.longest_s = u.sum_s = fmax(g->gemm_tile_overhead_s +
					     fmax(mem_s, comp), floor_s);
		u.sum2_s2 = u.sum_s * u.sum_s;
		add_units(&all, &u, x->count * h->heads_kv * s);
		if (h->partition > 0) {
			/* partials in the step's dtype, the row's sum and
			 * max in fp32; the reduce runs at any s */
			merge_B += x->count * x->q * h->heads_q *
				   (s * (h->head_dim_v * e +
					 2 * dtype_bytes(DTYPE_FP32)) +
				    h->head_dim_v * e);
			launches = 2;
		} else if (s > 1) {
			merge_B += x->count * x->q * h->heads_q *
				   (s * (h->head_dim_v + 1) *
				    dtype_bytes(DTYPE_FP32) + h->head_dim_v * e);
			launches = 2;
		}
	}
	if (flops == 0)
		return (struct gpu_cost){0, 0, 0, GPU_BOUND_MEMORY, GPU_LEVEL_HBM, 0};
	comp_s = union_s(&all, cus);
	return gpu_make_cost(g, flops, bytes + merge_B, GPU_LEVEL_HBM, launches,
			     fmax(comp_s, bytes / bw) + merge_B / bw, comp_s,
			     bytes / bw);
}
