/*
 * test_infer_moe.c - the MoE layer's kernels as the engines run them:
 * TensorRT-LLM's CUTLASS fused MoE (engine moe_kernels: cutlass) against
 * the generic list (vLLM, SGLang).
 *
 * Base job: tests/data/serve/q30-h100.yaml (Qwen3-30B-A3B: h 2048, 128
 * experts, top-8, expert width 768; TensorRT-LLM) on a B200 in NVFP4 so
 * the experts' input is quantized: a = 0.5 + 1/16 = 0.5625 B an element.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "config/spec_job.h"
#include "models/ep.h"
#include "models/infer.h"
#include "models/infer_mem.h"
#include "run/infer_run.h"

#include "fixture.h"

#define Q30 "tests/data/serve/q30-h100.yaml"

/* Qwen3-30B-A3B on B200 NVFP4 under `engine`, the MoE layer's ops for a
 * decode step of `tokens` sequences (one token each) per TP group, with
 * more overrides. */
static void moe_case(struct fixture_infer_moe *c, const char *engine,
		     double tokens, const char *const *more, size_t nmore)
{
	char e[64], bt[64];
	const char *sets[12] = {"system.preset=dgx-b200",
				"system.gpus_per_node=8",
				"serving.dtype=nvfp4", e, bt};
	size_t n = 5, i;

	cr_assert_leq(nmore, 8);
	for (i = 0; i < nmore; i++)
		sets[n++] = more[i];
	snprintf(e, sizeof(e), "serving.engine=%s", engine);
	snprintf(bt, sizeof(bt), "serving.batch=%.0f", tokens);
	fixture_infer_moe(c, Q30, sets, n, tokens);
}

static void bytes_eq(const struct infer_ops *o, const char *name,
		     double read_B, double write_B)
{
	const struct infer_op *op = fixture_infer_op(o, name);

	cr_assert_not_null(op, "no op %s", name);
	cr_assert_float_eq(op->read_B, read_B, 1e-6, "%s read %g, want %g",
			   name, op->read_B, read_B);
	cr_assert_float_eq(op->write_B, write_B, 1e-6, "%s write %g, want %g",
			   name, op->write_B, write_B);
}

/*
 * TP 1, a 1,024-token step: N = T = 1024 tokens, R = T k = 8,192 rows.
 *   moe_quant      reads 1024 x 2048 x 2 B = 4,194,304 B, writes
 *                  1024 x 2048 x 0.5625 B = 1,179,648 B
 *   sort (N > 256: three kernels). Token blocks: the smallest b in 32 ..
 *                  1024 with ceil(1024 / b) x 128 <= b is 512 (2 x 128 =
 *                  256 <= 512; 256 gives 4 x 128 = 512 > 256): 256 blocks.
 *     count        reads 128 x 1024 x 8 x 4 B = 4,194,304 B (every
 *                  expert's blocks scan their tokens' ids), writes the
 *                  1024 x 8 x 4 = 32,768 B of rows + 256 x 4 B of counts
 *                  = 33,792 B
 *   moe_expand     reads 8192 x 2048 x 0.5625 + 8192 x 8 = 9,502,720 B,
 *                  writes 9,437,184 + 8192 x 4 = 9,469,952 B
 *   moe_finalize   reads 8192 x 2048 x 2 + 1024 x 8 x 12 = 33,652,736 B,
 *                  writes 1024 x 2048 x 2 = 4,194,304 B
 * The generic list has none of these but moe_align and moe_sum.
 */
Test(infer_moe, cutlass_kernels_of_a_prefill_step)
{
	struct fixture_infer_moe c;

	moe_case(&c, "trtllm", 1024, NULL, 0);
	cr_assert(c.d.moe.cutlass);
	cr_assert_float_eq(c.r.rows, 8192.0, 1e-9);
	bytes_eq(&c.o, "moe_quant", 4194304.0, 1179648.0);
	bytes_eq(&c.o, "moe_sort_count", 4194304.0, 33792.0);
	cr_assert_not_null(fixture_infer_op(&c.o, "moe_sort_scan"));
	cr_assert_not_null(fixture_infer_op(&c.o, "moe_sort_merge"));
	cr_assert_null(fixture_infer_op(&c.o, "moe_sort"));
	cr_assert_not_null(fixture_infer_op(&c.o, "moe_strides"));
	bytes_eq(&c.o, "moe_expand", 9502720.0, 9469952.0);
	bytes_eq(&c.o, "moe_finalize", 33652736.0, 4194304.0);
	cr_assert_null(fixture_infer_op(&c.o, "moe_align"));
	cr_assert_null(fixture_infer_op(&c.o, "moe_sum"));
	cr_assert_not_null(fixture_infer_op(&c.o, "expert_gate_up"));
	cr_assert_not_null(fixture_infer_op(&c.o, "expert_down"));
	fixture_infer_moe_release(&c);

	moe_case(&c, "sglang", 1024, NULL, 0);
	cr_assert(!c.d.moe.cutlass);
	cr_assert_not_null(fixture_infer_op(&c.o, "moe_align"));
	cr_assert_not_null(fixture_infer_op(&c.o, "moe_sum"));
	cr_assert_null(fixture_infer_op(&c.o, "moe_expand"));
	cr_assert_null(fixture_infer_op(&c.o, "moe_finalize"));
	fixture_infer_moe_release(&c);
}

/*
 * A 64-token step fits one thread block: one sort kernel, reading the
 * 64 x 8 x 4 = 2,048 B of ids and writing both maps (2 x 2,048 B) and
 * the 129 expert offsets (8 B each): 5,128 B.
 */
Test(infer_moe, cutlass_sorts_small_steps_in_one_kernel)
{
	struct fixture_infer_moe c;

	moe_case(&c, "trtllm", 64, NULL, 0);
	bytes_eq(&c.o, "moe_sort", 2048.0, 5128.0);
	cr_assert_null(fixture_infer_op(&c.o, "moe_sort_count"));
	fixture_infer_moe_release(&c);
}

/*
 * Attention DP (tp 1, dp 8, ep 8), 64 tokens a rank: the rank quantizes
 * its own 64 tokens, then all-gathers N = 512 tokens' quantized rows with
 * their 8 ids and 8 router weights (4 B each): 512 x (2048 x 0.5625 +
 * 64) = 622,592 B, and swizzles their NVFP4 scales (512 x 2048 / 16 =
 * 65,536 B each way). The finalize kernel writes all 512 tokens' rows,
 * 512 x 2048 x 2 = 2,097,152 B, for the reduce-scatter of as many.
 * TensorRT-LLM passes each rank's token count (adp_moe_sized): the
 * gather is a grouped broadcast per rank, the scatter a grouped reduce.
 */
Test(infer_moe, cutlass_attention_dp_gathers_quantized_rows)
{
	const char *adp[] = {"parallelism.tp=1", "parallelism.dp=8",
			     "parallelism.ep=8",
			     "parallelism.attention_dp=true"};
	const struct infer_op *op;
	struct fixture_infer_moe c;

	moe_case(&c, "trtllm", 64, adp, 4);
	cr_assert(c.d.moe.dispatch && c.d.moe.allgather);
	bytes_eq(&c.o, "moe_quant", 64 * 2048 * 2.0, 64 * 2048 * 0.5625);
	op = fixture_infer_op(&c.o, "moe_dispatch");
	cr_assert_not_null(op);
	cr_assert_eq(op->coll, COLL_BROADCAST);	/* adp_moe_sized */
	cr_assert_float_eq(op->coll_B, 622592.0, 1e-6);
	bytes_eq(&c.o, "moe_sf_swizzle", 65536.0, 65536.0);
	cr_assert_float_eq(fixture_infer_op(&c.o, "moe_finalize")->write_B, 2097152.0,
			   1e-6);
	op = fixture_infer_op(&c.o, "moe_combine");
	cr_assert_not_null(op);
	cr_assert_eq(op->coll, COLL_REDUCE);
	cr_assert_float_eq(op->coll_B, 2097152.0, 1e-6);
	cr_assert_null(fixture_infer_op(&c.o, "expert_sort"));
	fixture_infer_moe_release(&c);
}

/*
 * Without per-rank sizes (adp_moe_sized false: padded ranks) the same
 * bytes go by one all-gather and one reduce-scatter.
 */
Test(infer_moe, unsized_attention_dp_gathers_and_reduce_scatters)
{
	const char *adp[] = {"parallelism.tp=1", "parallelism.dp=8",
			     "parallelism.ep=8",
			     "parallelism.attention_dp=true",
			     "serving.engine.adp_moe_sized=false"};
	struct fixture_infer_moe c;

	moe_case(&c, "trtllm", 64, adp, 5);
	cr_assert(!c.d.moe.sized);
	cr_assert_eq(fixture_infer_op(&c.o, "moe_dispatch")->coll, COLL_ALLGATHER);
	cr_assert_float_eq(fixture_infer_op(&c.o, "moe_dispatch")->coll_B, 622592.0,
			   1e-6);
	cr_assert_eq(fixture_infer_op(&c.o, "moe_combine")->coll, COLL_REDUCESCATTER);
	fixture_infer_moe_release(&c);
}

/*
 * Where TensorRT-LLM's attention-DP MoE pays for routing skew (r30,
 * skew30). Its all-gather path (fused_moe_cutlass.py forward_chunk)
 * gathers every rank's tokens whatever their experts, runs the local
 * experts on the rows routed to them and reduce-scatters every token:
 * skew changes the busiest rank's rows R, not the collectives' bytes.
 * Same step as above (N = 512 gathered tokens, S = N k = 4,096 rows,
 * the mean rank's S / 8 = 512), moe.routing max_mean 1.5: the busiest
 * rank holds R = 1.5 x 512 = 768 rows over its 16 experts (48 each,
 * all 16 touched: 16 (1 - e^-48) = 16). So
 *   moe_dispatch   622,592 B, moe_combine 2,097,152 B (as balanced)
 *   expert_gate_up m 768 (balanced 512), n 2 x 768 = 1,536, k 2,048
 *   expert_down    m 768, n 2,048, k 768
 *   moe_expand     reads 768 x 2048 x 0.5625 + 768 x 8 = 890,880 B,
 *                  writes 884,736 + 768 x 4 = 887,808 B, 768 rows
 *                  searched
 *   moe_finalize   reads 768 x 2048 x 2 + 512 x 8 x 12 = 3,194,880 B,
 *                  writes every gathered token, 512 x 2048 x 2 =
 *                  2,097,152 B (as balanced).
 * A path that made the gather uneven, or the finalize write R rows,
 * would fail here.
 */
Test(infer_moe, cutlass_attention_dp_pays_skew_in_the_busiest_rows)
{
	const char *adp[] = {"parallelism.tp=1", "parallelism.dp=8",
			     "parallelism.ep=8",
			     "parallelism.attention_dp=true",
			     "moe.routing.balance=max_mean",
			     "moe.routing.max_mean_ratio=1.5"};
	const struct infer_op *op;
	struct fixture_infer_moe c, u;

	moe_case(&u, "trtllm", 64, adp, 4);
	moe_case(&c, "trtllm", 64, adp, 6);
	cr_assert_float_eq(u.r.rows, 512.0, 1e-9);
	cr_assert_float_eq(c.r.rows, 768.0, 1e-9);
	cr_assert_float_eq(c.r.max_mean, 1.5, 1e-12);
	cr_assert_float_eq(c.r.active, 16.0, 1e-9);
	op = fixture_infer_op(&c.o, "moe_dispatch");
	cr_assert_not_null(op);
	cr_assert_float_eq(op->coll_B, 622592.0, 1e-6);
	cr_assert_null(op->a2a_B);
	op = fixture_infer_op(&c.o, "moe_combine");
	cr_assert_not_null(op);
	cr_assert_float_eq(op->coll_B, 2097152.0, 1e-6);
	cr_assert_null(op->a2a_B);
	op = fixture_infer_op(&c.o, "expert_gate_up");
	cr_assert_not_null(op);
	cr_assert_float_eq(op->m, 768.0, 1e-9);
	cr_assert_float_eq(op->n, 1536.0, 1e-9);
	cr_assert_float_eq(op->k, 2048.0, 1e-9);
	cr_assert_float_eq(fixture_infer_op(&u.o, "expert_gate_up")->m, 512.0,
			   1e-9);
	op = fixture_infer_op(&c.o, "expert_down");
	cr_assert_not_null(op);
	cr_assert_float_eq(op->m, 768.0, 1e-9);
	cr_assert_float_eq(op->n, 2048.0, 1e-9);
	cr_assert_float_eq(op->k, 768.0, 1e-9);
	bytes_eq(&c.o, "moe_expand", 890880.0, 887808.0);
	cr_assert_float_eq(fixture_infer_op(&c.o, "moe_expand")->search_rows,
			   768.0, 1e-9);
	bytes_eq(&c.o, "moe_finalize", 3194880.0, 2097152.0);
	fixture_infer_moe_release(&c);
	fixture_infer_moe_release(&u);
}

/*
 * TensorRT-LLM on an all-to-all dispatcher (DeepEP here) takes the
 * generic list, whose rows route.c sizes in the job's 16-bit dtype (no
 * moe.dispatch_dtype). The combine sends the same rows back in 16 bits
 * without the dispatch's extras (configs/ep/deepep.yaml
 * bytes_per_token_extra 96 B: top-k indices and weights), as training's
 * combine_B: dispatch_B x (2048 x 2) / (2048 x 2 + 96) = x 4096/4192,
 * not the CUTLASS all-gather's quantized 0.5625 (which gave 2 / 0.5625
 * = 3.56x the dispatch's bytes). SGLang on the same path gives the same
 * two numbers.
 */
Test(infer_moe, cutlass_engine_on_an_all_to_all_combines_what_it_sent)
{
	const char *a2a[] = {"parallelism.tp=1", "parallelism.dp=8",
			     "parallelism.ep=8",
			     "parallelism.attention_dp=true",
			     "moe.dispatcher=deepep"};
	const struct infer_op *dsp, *cmb;
	double trt_B, sgl_B;
	struct fixture_infer_moe c;

	moe_case(&c, "trtllm", 64, a2a, 5);
	cr_assert(c.d.moe.dispatch && !c.d.moe.allgather);
	cr_assert_float_eq(c.d.moe.elem_B, 2.0, 1e-12);
	dsp = fixture_infer_op(&c.o, "moe_dispatch");
	cmb = fixture_infer_op(&c.o, "moe_combine");
	cr_assert(dsp && cmb);
	cr_assert_eq(cmb->coll, COLL_ALLTOALL);
	cr_assert_float_eq(cmb->coll_B, dsp->coll_B * 4096 / 4192,
			   1e-6 * dsp->coll_B,
			   "combine %g B, dispatch %g B", cmb->coll_B,
			   dsp->coll_B);
	trt_B = cmb->coll_B;
	fixture_infer_moe_release(&c);

	moe_case(&c, "sglang", 64, a2a, 5);
	sgl_B = fixture_infer_op(&c.o, "moe_combine")->coll_B;
	cr_assert_float_eq(trt_B, sgl_B, 1e-6 * sgl_B);
	fixture_infer_moe_release(&c);
}

/*
 * Serving over Hybrid-EP costs its dispatch and combine as training does:
 * route.c's rows (ep_row_extra_B) on ep.c's path (ep_coll_path), so the
 * dispatcher's probabilities, efficiencies and FP8 row cost all apply.
 * Qwen3-30B-A3B (h 2048, E 128, top-8), SGLang, attention DP 8 over EP 8
 * in one 8-GPU node; configs/ep/hybridep.yaml: probs_per_domain_expert
 * 4 B, 32 SMs at sm_rate 40.9 GB/s, fp8_row_cost 39 ns, scale_up 0.95,
 * scale_out 0.92, fp8 scales 4 B per 128 elements.
 *   extras: 4 B x E/ep x min(m, ep) = 4 x 128/8 x 8 = 512 B a row
 *   bf16 row: 2048 x 2 + 512 = 4608 B; the combine sends 2048 x 2 = 4096 B
 *     rows back, so its bytes are the dispatch's x 4096/4608 = 8/9
 *   path: 32 x 40.9 GB/s = 1308.8 GB/s of SM copy rate (no FP8 cost)
 *   fp8 row (moe.dispatch_dtype=fp8): 2048 x (1 + 4/128) + 512 = 2624 B;
 *     per SM 2624 / (39 ns + 2624 B / 40.9 GB/s) = 2624 / 103.156 ns
 *     = 25.437 GB/s, x 32 = 813.99 GB/s; the combine: 8/9 no longer,
 *     4096/2624 of the dispatch's bytes
 *   the combine is a combine kernel (EP_ROW_COMBINE, as training's
 *     forward combine): combine_row_cost 61 ns a row more, per SM
 *     4096 / (61 ns + 4096 B / 40.9 GB/s) = 4096 / 161.147 ns
 *     = 25.418 GB/s, x 32 = 813.37 GB/s, whatever the dispatch's dtype.
 * Before: serving built its own path (sm_rate x SMs, no efficiencies, no
 * FP8 row cost) and combined dispatch_B x act_B / elem_B, the extras too.
 */
Test(infer_moe, serving_ep_uses_training_dispatcher_costs)
{
	const char *hep[] = {"parallelism.tp=1", "parallelism.dp=8",
			     "parallelism.ep=8",
			     "parallelism.attention_dp=true",
			     "moe.dispatcher=hybridep",
			     "moe.dispatch_dtype=fp8"};
	const struct infer_op *dsp, *cmb;
	struct coll_path p;
	const struct coll_path *pp;
	struct fixture_infer_moe c;
	int algo;

	moe_case(&c, "sglang", 64, hep, 5);
	cr_assert_float_eq(c.r.row_B, 4608.0, 1e-9);
	dsp = fixture_infer_op(&c.o, "moe_dispatch");
	cmb = fixture_infer_op(&c.o, "moe_combine");
	cr_assert(dsp && cmb);
	cr_assert_float_eq(dsp->ep_row_B, 4608.0, 1e-9);
	cr_assert_eq(dsp->ep_kind, 0);
	cr_assert_eq(cmb->ep_kind, EP_ROW_COMBINE);
	cr_assert_float_eq(cmb->ep_row_B, 4096.0, 1e-9);
	cr_assert_float_eq(cmb->coll_B, dsp->coll_B * 8 / 9,
			   1e-9 * dsp->coll_B);
	pp = ep_coll_path(c.j->moe.dispatcher, 1, dsp->ep_row_B, dsp->ep_kind,
			  0, &p, &algo);
	cr_assert_not_null(pp);
	cr_assert_float_eq(p.gpu_Bps, 1308.8e9, 1e3);
	cr_assert_float_eq(p.eff_scale_up, 0.95, 1e-12);
	cr_assert_float_eq(p.eff_scale_out, 0.92, 1e-12);
	fixture_infer_moe_release(&c);

	moe_case(&c, "sglang", 64, hep, 6);
	cr_assert_float_eq(c.r.row_B, 2624.0, 1e-9);
	dsp = fixture_infer_op(&c.o, "moe_dispatch");
	cmb = fixture_infer_op(&c.o, "moe_combine");
	cr_assert(dsp && cmb);
	cr_assert_eq(dsp->ep_kind, EP_ROW_FP8);
	cr_assert_float_eq(cmb->coll_B, dsp->coll_B * 4096 / 2624,
			   1e-9 * dsp->coll_B);
	ep_coll_path(c.j->moe.dispatcher, 1, dsp->ep_row_B, dsp->ep_kind, 0, &p,
		     &algo);
	cr_assert_float_eq(p.gpu_Bps, 813.99e9, 0.05e9, "%g", p.gpu_Bps);
	ep_coll_path(c.j->moe.dispatcher, 1, cmb->ep_row_B, cmb->ep_kind, 0, &p,
		     &algo);
	cr_assert_float_eq(p.gpu_Bps, 813.37e9, 0.01e9, "%g", p.gpu_Bps);
	fixture_infer_moe_release(&c);
}

/*
 * A serving job's unset moe.dispatch_dtype is its activation dtype (bf16),
 * whatever training.dtype says (layer.c moe_dims, layer_job_act_dtype):
 * with training.dtype fp32 set on the Qwen3-30B-A3B Hybrid-EP job the
 * rows stay 2048 x 2 B + 512 B of Hybrid-EP extras = 4,608 B (as in
 * serving_ep_uses_training_dispatcher_costs) and not FP8; before, they
 * were fp32: 2048 x 4 + 512 = 8,704 B.
 */
Test(infer_moe, serving_dispatch_dtype_is_not_training_dtype)
{
	const char *hep[] = {"parallelism.tp=1", "parallelism.dp=8",
			     "parallelism.ep=8",
			     "parallelism.attention_dp=true",
			     "moe.dispatcher=hybridep", "training.dtype=fp32"};
	const struct infer_op *cmb;
	struct fixture_infer_moe c;

	moe_case(&c, "sglang", 64, hep, 6);
	cr_assert_float_eq(c.r.row_B, 4608.0, 1e-9);
	cr_assert_eq(c.r.row_fp8, 0);
	cmb = fixture_infer_op(&c.o, "moe_combine");
	cr_assert_not_null(cmb);
	cr_assert_float_eq(cmb->ep_row_B, 4096.0, 1e-9);
	fixture_infer_moe_release(&c);
}

/*
 * Under skewed routing (moe.routing max_mean 1.5) the combine runs the
 * dispatch backwards: it is route.c's EP_PASS_COMBINE matrix, the one
 * training's forward combine takes, and the pace GPU (member 0), which
 * received the surplus rows, sends them back. Entry (i, k) of the
 * combine (GPU i sends to GPU k) is entry (k, i) of the dispatch x
 * (h act_B) / row_B = 4096/4608 = 8/9 on Hybrid-EP (the probabilities
 * stay behind). With C the combine's bytes a GPU sends (8/9 of the
 * dispatch's D):
 *   to the pace GPU in dispatch    D / 8 x 1.5       (column 0)
 *   to each other GPU              (D - D 1.5 / 8) / 7 = D 6.5 / 56
 *   the pace GPU's combine row     C / 8 x 1.5 to each GPU (row 0)
 *   every other combine row        C 6.5 / 56, the pace GPU included
 * Before (infer_moe.c built its own copy): the dispatch's pattern not
 * transposed, cmb[i][k] = dsp[i][k] x 8/9, so the pace GPU received its
 * surplus a second time instead of sending it back.
 */
Test(infer_moe, serving_ep_combine_is_the_transposed_dispatch)
{
	const char *hep[] = {"parallelism.tp=1", "parallelism.dp=8",
			     "parallelism.ep=8",
			     "parallelism.attention_dp=true",
			     "moe.dispatcher=hybridep",
			     "moe.routing.balance=max_mean",
			     "moe.routing.max_mean_ratio=1.5"};
	const struct infer_op *dsp, *cmb;
	struct fixture_infer_moe c;
	double sum_d = 0, sum_c = 0, C;
	int i, k;

	moe_case(&c, "sglang", 64, hep, 7);
	dsp = fixture_infer_op(&c.o, "moe_dispatch");
	cmb = fixture_infer_op(&c.o, "moe_combine");
	cr_assert(dsp && cmb && dsp->a2a_B && cmb->a2a_B);
	C = cmb->coll_B;
	cr_assert_float_eq(C, dsp->coll_B * 8 / 9, 1e-9 * C);
	for (i = 0; i < 8; i++)
		for (k = 0; k < 8; k++) {
			double want = i == 0 ? C / 8 * 1.5 : C * 6.5 / 56;

			cr_assert_float_eq(cmb->a2a_B[i * 8 + k],
					   dsp->a2a_B[k * 8 + i] * 8 / 9,
					   1e-9 * C);
			cr_assert_float_eq(cmb->a2a_B[i * 8 + k], want,
					   1e-9 * C, "(%d, %d)", i, k);
			sum_d += dsp->a2a_B[i * 8 + k];
			sum_c += cmb->a2a_B[i * 8 + k];
		}
	cr_assert_float_eq(sum_c / sum_d, 8.0 / 9, 1e-12);
	cr_assert_eq(cmb->a2a_B, c.r.combine_a2a_B);
	fixture_infer_moe_release(&c);
}

/* The activations of a max_tokens-token step of case c's engine (one
 * sequence: the logits term is V (2 + 4) B). */
static double step_activations_B(const struct fixture_infer_moe *c, double tokens)
{
	int64_t split = c->j->model->num_hidden_layers;
	struct infer_mem m;

	infer_mem_job(c->j, c->j->serving.engine, &c->d, &split, tokens, 1, 0,
		      NULL, &m);
	return m.activations_B;
}

/*
 * The KV estimation's forward of max_num_tokens T = 1024 tokens a rank
 * (TensorRT-LLM _util.py KvCacheCreator: dummy context requests of
 * max_num_tokens, repeated tp_size times under attention DP; the KV
 * cache gets the fraction of what the peak leaves). Qwen3-30B-A3B, h
 * 2048, expert width f 768, k 8, NVFP4 input a = 0.5625 B, bf16 2 B.
 * CUTLASS fused MoE over n tokens, m = n k rows (moe_kernels.cu
 * getWorkspaceDeviceBufferSizes, allocated by torch::empty in moeOp.cpp):
 *   GEMM inputs  max(m h a, m h 2 (fc2 out), m f a) = m x 4096 B
 *   GEMM outputs max(m f a, m 2f 2 (gated act in), m h 2) = m x 4096 B
 *   + the gathered input n h a and the output n h 2: n x 2048 x 2.5625
 *   + the step's residual and hidden state T x 2h x 2 = 8,388,608 B.
 * Attention DP 8 (all-gather): n = 8192, m = 65,536:
 *   65,536 x 8192 + 8192 x 5248 + 8,388,608 = 588,251,136 B.
 * TP 1: n = 1024, m = 8192: 8192 x 8192 + 1024 x 5248 + 8,388,608
 *   = 80,871,424 B.
 * vLLM's fused-MoE caches on the TP 1 job: T (2h + k (2f + f + h)) 2 =
 *   1024 x (4096 + 34,816) x 2 = 79,691,776 B (no gather: unchanged).
 * Each plus the logits of one sequence, V x 6 B.
 */
Test(infer_moe, cutlass_workspace_sizes_the_kv_estimation_forward)
{
	const char *adp[] = {"parallelism.tp=1", "parallelism.dp=8",
			     "parallelism.ep=8",
			     "parallelism.attention_dp=true"};
	struct fixture_infer_moe c;
	double logits;

	moe_case(&c, "trtllm", 1024, adp, 4);
	logits = c.d.vocab * (c.d.act_B + 4);
	cr_assert(c.d.moe.cutlass && c.d.moe.allgather);
	cr_assert_float_eq(step_activations_B(&c, 1024),
			   588251136.0 + logits, 1e-3);
	fixture_infer_moe_release(&c);

	moe_case(&c, "trtllm", 1024, NULL, 0);
	cr_assert_float_eq(step_activations_B(&c, 1024),
			   80871424.0 + logits, 1e-3);
	fixture_infer_moe_release(&c);

	moe_case(&c, "vllm", 1024, NULL, 0);
	cr_assert(!c.d.moe.cutlass);
	cr_assert_float_eq(step_activations_B(&c, 1024),
			   79691776.0 + logits, 1e-3);
	fixture_infer_moe_release(&c);
}

/* The time infer_cost gives op `name` of c's layer on c's GPU (graph). */
static double op_time_s(const struct fixture_infer_moe *c, const char *name)
{
	static struct infer_unit u;
	struct infer_kind k = {1, 0, 0, 0, 0, 0, 0, 0};
	int i;

	infer_cost(&c->o, &c->d, &c->b, &k, c->j->system->gpu, IGRAPH_FULL,
		   &u);
	for (i = 0; i < u.n; i++)
		if (strcmp(u.op[i].name, name) == 0)
			return u.op[i].time_s;
	cr_assert_fail("no op %s", name);
	return 0;
}

/* The time infer_cost gives op `name` of c's layer on g (graph). */
static double op_time_on(const struct fixture_infer_moe *c, const struct gpu_spec *g,
			 const char *name)
{
	static struct infer_unit u;
	struct infer_kind k = {1, 0, 0, 0, 0, 0, 0, 0};
	int i;

	infer_cost(&c->o, &c->d, &c->b, &k, g, IGRAPH_FULL, &u);
	for (i = 0; i < u.n; i++)
		if (strcmp(u.op[i].name, name) == 0)
			return u.op[i].time_s;
	cr_assert_fail("no op %s", name);
	return 0;
}

/*
 * The CUTLASS fused MoE's expand and activation kernels search each
 * row's expert: time = launch + max(bytes / bandwidth, R x row time),
 * b200.yaml cutlass_moe_row_time nvfp4 8.3 ns. TP 1, 1,024 tokens:
 * R = 8,192 rows, both working sets under the 126 MB L2 (8.0 TB/s,
 * efficiency 1), launch from the graph 2.3 us (b200.yaml
 * kernel_launch_graph):
 *   moe_expand  9,502,720 + 9,469,952 = 18,972,672 B / 8e12 = 2.3716 us;
 *               rows 8,192 x 8.3 ns = 67.9936 us -> 70.2936 us
 *   expert_act  8192 x 1536 x 2 + 8192 x 768 x 0.5625 = 28,704,768 B
 *               / 8e12 = 3.5881 us (its 8 x 8192 x 768 FLOPs at 75
 *               TFLOP/s 0.67 us); rows 67.9936 us -> 70.2936 us
 * At 0 ns a row, and at 0.1 ns (819 ns of rows under 2.37 us of bytes:
 * the larger of the two, not their sum), moe_expand is its bytes:
 * 2.3 + 2.3716 = 4.6716 us. SGLang's activation (no search) stays at its
 * bytes, 2.3 + 3.5881 = 5.8881 us.
 */
Test(infer_moe, cutlass_expand_and_act_pay_a_row_time)
{
	struct fixture_infer_moe c;
	struct gpu_spec g;

	moe_case(&c, "trtllm", 1024, NULL, 0);
	g = *c.j->system->gpu;
	g.kernel_launch_s = g.kernel_launch_graph_s;
	cr_assert_float_eq(g.cutlass_moe_row_time_s[DTYPE_NVFP4], 8.3e-9,
			   1e-15);
	cr_assert_float_eq(g.cutlass_moe_row_time_s[DTYPE_FP8], 0, 1e-15);
	cr_assert_float_eq(c.r.rows, 8192.0, 1e-9);
	cr_assert_float_eq(g.kernel_launch_s, 2.3e-6, 1e-15);
	cr_assert_float_eq(op_time_on(&c, &g, "moe_expand"), 70.2936e-6,
			   1e-10);
	cr_assert_float_eq(op_time_on(&c, &g, "expert_act"), 70.2936e-6,
			   1e-10);
	g.cutlass_moe_row_time_s[DTYPE_NVFP4] = 0;
	cr_assert_float_eq(op_time_on(&c, &g, "moe_expand"), 4.6716e-6,
			   1e-10);
	g.cutlass_moe_row_time_s[DTYPE_NVFP4] = 0.1e-9;
	cr_assert_float_eq(op_time_on(&c, &g, "moe_expand"), 4.6716e-6,
			   1e-10);
	fixture_infer_moe_release(&c);

	moe_case(&c, "sglang", 1024, NULL, 0);
	g = *c.j->system->gpu;
	g.kernel_launch_s = g.kernel_launch_graph_s;
	cr_assert_float_eq(op_time_on(&c, &g, "expert_act"), 5.8881e-6,
			   1e-10);
	fixture_infer_moe_release(&c);
}

/*
 * A 64-token decode step at TP 1: R = 64 x 8 = 512 rows over the experts
 * with rows; routing uniform (the default, exactly balanced): A =
 * min(128, 512) = 128 groups of 512 / 128 = 4 rows. TensorRT-LLM's
 * CUTLASS fused MoE on sm100 offers only 128-row tiles at NVFP4 (b200.yaml
 * cutlass_moe_tile_m), so its fc1 costs what gpu_grouped_gemm_q gives
 * those 128 groups (n = 2 x 768, k = 2048) with min_tile_m 128; SGLang's
 * generic list keeps the 64-row tiles (min_tile_m 0). At 4 rows an
 * expert the 64-row tile is the cheaper one, so the CUTLASS fc1 is the
 * slower.
 */
/*
 * moe.routing.balance max_mean at ratio 1 is not the forced (exactly
 * balanced) default, by design (docs/serving.md): the busiest rank's
 * rows are the mean's either way, but a measured ratio describes a
 * router's own choice, whose rows fall on the experts at random. A
 * 4-token decode at TP 1 of Qwen3-30B-A3B (128 experts, top 8): R = 32
 * rows, max_mean 1 in both. Forced: the gate places them on min(128, 32)
 * = 32 experts. max_mean 1: 32 / 128 = 0.25 expected rows an expert,
 * 128 (1 - exp(-0.25)) = 28.3135 experts with rows (Poisson), so fewer
 * experts' weights read.
 */
Test(infer_moe, max_mean_one_touches_experts_at_random)
{
	const char *mm[] = {"moe.routing.balance=max_mean",
			    "moe.routing.max_mean_ratio=1"};
	struct fixture_infer_moe c;

	moe_case(&c, "trtllm", 4, NULL, 0);
	cr_assert_float_eq(c.r.rows, 32.0, 1e-9);
	cr_assert_float_eq(c.r.max_mean, 1.0, 1e-12);
	cr_assert_float_eq(c.r.active, 32.0, 1e-9);
	fixture_infer_moe_release(&c);
	moe_case(&c, "trtllm", 4, mm, 2);
	cr_assert_float_eq(c.r.rows, 32.0, 1e-9);
	cr_assert_float_eq(c.r.max_mean, 1.0, 1e-12);
	cr_assert_float_eq(c.r.active, 128 * (1 - exp(-0.25)), 1e-9);
	cr_assert_float_eq(c.r.active, 28.3135, 1e-4);
	fixture_infer_moe_release(&c);
}

Test(infer_moe, cutlass_nvfp4_experts_tile_rows_by_128)
{
	struct gpu_gemm_group grp[128];
	struct gpu_gemm_dtypes q = {.compute = DTYPE_NVFP4, .a_B = 0.5625,
				     .b_B = 0.5625, .c_B = 2, .b_cold = 1,
				     .min_tile_m = 128};
	struct fixture_infer_moe c;
	struct gpu_spec g;	/* launched from the graph, as infer_cost */
	double cut, gen, want128, want0;
	int i;

	moe_case(&c, "trtllm", 64, NULL, 0);
	g = *c.j->system->gpu;
	g.kernel_launch_s = g.kernel_launch_graph_s;
	cr_assert_eq(g.cutlass_moe_tile_m[DTYPE_NVFP4], 128);
	cr_assert_float_eq(c.r.rows, 512.0, 1e-9);
	cr_assert_float_eq(c.r.active, 128.0, 1e-9);
	for (i = 0; i < 128; i++)
		grp[i] = (struct gpu_gemm_group){4, 1536, 2048};
	cut = op_time_s(&c, "expert_gate_up");
	want128 = gpu_grouped_gemm_q(&g, &q, grp, 128).time_s;
	q.min_tile_m = 0;
	want0 = gpu_grouped_gemm_q(&g, &q, grp, 128).time_s;
	fixture_infer_moe_release(&c);

	moe_case(&c, "sglang", 64, NULL, 0);
	gen = op_time_s(&c, "expert_gate_up");
	fixture_infer_moe_release(&c);
	cr_assert_float_eq(cut, want128, 1e-12, "cutlass %g s, want %g", cut,
			   want128);
	cr_assert_float_eq(gen, want0, 1e-12, "generic %g s, want %g", gen,
			   want0);
	cr_assert_gt(cut, gen);
}

/*
 * Qwen3's per-head RMSNorm of Q and K (model qk_layernorm, derived for
 * qwen3 model types), before the rotary. Qwen3-30B-A3B at TP 1: q = 32 x
 * 128 = 4,096 and kv = 4 x 128 = 512 elements a token, bf16 (2 B); a
 * 1,024-token step:
 *   TensorRT-LLM (qk_norm_rope_fused: fused_qk_norm_rope in place):
 *     qk_norm_rope reads and writes 1024 x (4096 + 512) x 2 = 9,437,184 B
 *   vLLM (q_norm, k_norm kernels):
 *     q_norm reads and writes 1024 x 4096 x 2 = 8,388,608 B
 *     k_norm reads and writes 1024 x 512 x 2 = 1,048,576 B
 * A model without the norm (qk_layernorm false) has none of them; its
 * other ops are the same, two fewer than vLLM's Qwen3 layer.
 */
Test(infer_moe, qwen3_qk_norm_as_the_engine_runs_it)
{
	const char *off[] = {"model.qk_layernorm=false"};
	const char *unfused[] = {"serving.engine.qk_norm_rope_fused=false"};
	struct fixture_infer_moe c;
	int n_trt;

	moe_case(&c, "trtllm", 1024, NULL, 0);
	cr_assert(c.d.qk_norm);
	cr_assert(c.d.qk_norm_rope_fused);
	bytes_eq(&c.o, "qk_norm_rope", 9437184.0, 9437184.0);
	cr_assert_null(fixture_infer_op(&c.o, "q_norm"));
	cr_assert_null(fixture_infer_op(&c.o, "k_norm"));
	n_trt = c.o.n;
	fixture_infer_moe_release(&c);

	moe_case(&c, "vllm", 1024, NULL, 0);
	cr_assert(!c.d.qk_norm_rope_fused);
	bytes_eq(&c.o, "q_norm", 8388608.0, 8388608.0);
	bytes_eq(&c.o, "k_norm", 1048576.0, 1048576.0);
	cr_assert_null(fixture_infer_op(&c.o, "qk_norm_rope"));
	fixture_infer_moe_release(&c);

	/* the engine key alone decides: TensorRT-LLM told otherwise runs
	 * two kernels, one op more than its own */
	moe_case(&c, "trtllm", 1024, unfused, 1);
	cr_assert_not_null(fixture_infer_op(&c.o, "q_norm"));
	cr_assert_null(fixture_infer_op(&c.o, "qk_norm_rope"));
	cr_assert_eq(c.o.n, n_trt + 1);
	fixture_infer_moe_release(&c);

	moe_case(&c, "trtllm", 1024, off, 1);
	cr_assert(!c.d.qk_norm);
	cr_assert_null(fixture_infer_op(&c.o, "qk_norm_rope"));
	cr_assert_null(fixture_infer_op(&c.o, "q_norm"));
	cr_assert_eq(c.o.n, n_trt - 1);
	fixture_infer_moe_release(&c);
}

/* o's nth op (from 0) named name, or NULL. */
static const struct infer_op *nth_op(const struct infer_ops *o,
				     const char *name, int nth)
{
	int i;

	for (i = 0; i < o->n; i++)
		if (strcmp(o->op[i].name, name) == 0 && nth-- == 0)
			return &o->op[i];
	return NULL;
}

/*
 * A Maverick-style TensorRT-LLM layout (Llama 4 Maverick: h 5120, dense
 * MLP 16384, shared expert 8192; NVFP4, a = 0.5625 B; trtllm.yaml
 * norm_quant tp_allreduce, act_quant per_tensor) with attention DP at TP
 * 2 (tp 2, dp 4, ep 8), 64 decode tokens a TP group. Attention DP keeps
 * the norms out of the all-reduce although TP 2 and h 5120 > 4096 would
 * fuse them without it:
 *   dense layer: both norms apart (2) and the SiLU-mul (NVFP4, 1) -> 3;
 *     its SiLU-mul writes 64 x 16384/2 x 2 B = 1,048,576 B
 *   the same without attention DP (tp 2 alone): the SiLU-mul's only -> 1
 *   MoE layer: the first norm apart (1); the norm before the MoE writes
 *     16 bits, no kernel (the CUTLASS MoE quantizes its own input,
 *     moe_quant); the shared expert quantizes that 16-bit input (1) and
 *     its SiLU-mul output (NVFP4, 1) -> 3.
 *     the second add_norm reads 2 x 64 x 5120 x 2 = 1,310,720 B and writes
 *       the residual and the 16-bit output, 64 x 5120 x (2 + 2) =
 *       1,310,720 B (was 64 x 5120 x (2 + 0.5625) = 839,680 B)
 *     the shared input's quant reads 64 x 5120 x 2 = 655,360 B and writes
 *       64 x 5120 x 0.5625 = 184,320 B, before shared_gate_up
 *     shared_act reads 64 x 2 x 8192/2 x 2 = 1,048,576 B and writes
 *       16 bits, 64 x 4096 x 2 = 524,288 B
 */
Test(infer_moe, trtllm_maverick_quantization_kernels_under_attention_dp)
{
	const char *adp[] = {"model=llama4-maverick", "parallelism.tp=2",
			     "parallelism.dp=4", "parallelism.ep=8",
			     "parallelism.attention_dp=true"};
	const char *tp2[] = {"model=llama4-maverick", "parallelism.tp=2",
			     "parallelism.dp=4"};
	struct infer_kind dense = {0, 0, 0, 0, 0, 0, 0, 0};
	struct infer_ops o;
	const struct infer_op *op;
	struct fixture_infer_moe c;

	moe_case(&c, "trtllm", 64, adp, 5);
	cr_assert(c.d.moe.cutlass && c.d.moe.dispatch && c.d.moe.allgather);
	cr_assert_eq(fixture_infer_count(&c.o, "quant"), 3);
	op = nth_op(&c.o, "add_norm", 1);
	cr_assert_not_null(op);
	cr_assert_float_eq(op->read_B, 1310720.0, 1e-6);
	cr_assert_float_eq(op->write_B, 1310720.0, 1e-6);
	op = nth_op(&c.o, "quant", 1);
	cr_assert_not_null(op);
	cr_assert_float_eq(op->read_B, 655360.0, 1e-6);
	cr_assert_float_eq(op->write_B, 184320.0, 1e-6);
	cr_assert_str_eq(op[1].name, "shared_gate_up");
	bytes_eq(&c.o, "shared_act", 1048576.0, 524288.0);
	infer_layer_ops(&c.d, &c.b, &dense, NULL, &o);
	cr_assert_eq(fixture_infer_count(&o, "quant"), 3);
	bytes_eq(&o, "silu_mul", 2 * 1048576.0, 1048576.0);
	fixture_infer_moe_release(&c);

	moe_case(&c, "trtllm", 64, tp2, 3);
	infer_layer_ops(&c.d, &c.b, &dense, NULL, &o);
	cr_assert_eq(fixture_infer_count(&o, "quant"), 1);
	fixture_infer_moe_release(&c);
}

/*
 * The router weight on the experts' input (model router_weight_on_input,
 * Llama 4's; TensorRT-LLM's CutlassFusedMoE.forward_chunk multiplies x by
 * token_final_scales.to(x.dtype) before fp4_quantize). Qwen3-30B-A3B
 * told so, TP 1, a 1,024-token step, h 2048, k 8, bf16 input:
 *   moe_weight_cast   reads 1024 x 8 x 4 = 32,768 B, writes
 *                     1024 x 8 x 2 = 16,384 B
 *   moe_weight_input  reads 1024 x 2048 x 2 + 16,384 = 4,210,688 B,
 *                     writes 1024 x 2048 x 2 = 4,194,304 B
 * right before moe_quant; two ops more than without the key. Qwen3
 * itself (model_type qwen3_moe) has it off, Maverick (llama4_text) on;
 * the generic list (vLLM) adds none.
 */
Test(infer_moe, cutlass_router_weight_on_input)
{
	const char *on[] = {"model.router_weight_on_input=true"};
	const char *mav[] = {"model=llama4-maverick"};
	struct fixture_infer_moe c;
	int n, i;

	moe_case(&c, "trtllm", 1024, NULL, 0);
	cr_assert_neq(c.j->model->router_weight_on_input, 1);
	cr_assert_null(fixture_infer_op(&c.o, "moe_weight_input"));
	n = c.o.n;
	fixture_infer_moe_release(&c);

	moe_case(&c, "trtllm", 1024, on, 1);
	cr_assert_eq(c.o.n, n + 2);
	bytes_eq(&c.o, "moe_weight_cast", 32768.0, 16384.0);
	bytes_eq(&c.o, "moe_weight_input", 4210688.0, 4194304.0);
	for (i = 0; i < c.o.n; i++)
		if (strcmp(c.o.op[i].name, "moe_weight_input") == 0)
			break;
	cr_assert_lt(i + 1, c.o.n);
	cr_assert_str_eq(c.o.op[i + 1].name, "moe_quant");
	fixture_infer_moe_release(&c);

	moe_case(&c, "vllm", 1024, on, 1);
	cr_assert_null(fixture_infer_op(&c.o, "moe_weight_input"));
	fixture_infer_moe_release(&c);

	moe_case(&c, "trtllm", 1024, mav, 1);
	cr_assert_eq(c.j->model->router_weight_on_input, 1);
	cr_assert_not_null(fixture_infer_op(&c.o, "moe_weight_input"));
	fixture_infer_moe_release(&c);
}

/* The second add_norm of an MoE layer's ops (the one before the MoE). */
static const struct infer_op *moe_norm(const struct infer_ops *o, int *quant)
{
	int i, seen = 0;

	for (i = 0; i < o->n; i++) {
		if (strcmp(o->op[i].name, "add_norm") != 0 || ++seen < 2)
			continue;
		*quant = i + 1 < o->n && strcmp(o->op[i + 1].name, "quant") == 0;
		return &o->op[i];
	}
	cr_assert_fail("no second add_norm");
	return NULL;
}

/*
 * Llama 4 Maverick (shared expert) at NVFP4 under vLLM (the generic MoE
 * list: the experts quantize their input from 16 bits, expert_quant; the
 * norm before the MoE writes the quantized input of its one quantized
 * GEMM reader, the shared expert's gate/up). With the shared expert kept
 * unquantized (exclude_modules ...feed_forward.shared_expert) the norm
 * writes 16 bits and no quantization kernel follows: 8 tokens x h 5120
 * elements, written as the residual (2 B) and the output, 2 B instead of
 * gemm_a_B: 8 x 5120 x (2 + 2) = 163,840 B against 8 x 5120 x (2 + a).
 */
Test(infer_moe, norm_before_an_unquantized_shared_expert_writes_16_bits)
{
	const char *q[] = {"model=llama4-maverick"};
	const char *x[] = {"model=llama4-maverick",
			   "model.quantization_config.exclude_modules=["
			   "language_model.model.layers.*.feed_forward."
			   "shared_expert]"};
	struct fixture_infer_moe c0, c1;
	const struct infer_op *n0, *n1;
	int q0, q1;

	moe_case(&c0, "vllm", 8, q, 1);
	moe_case(&c1, "vllm", 8, x, 2);
	cr_assert_eq(c0.d.moe.cutlass, 0);
	cr_assert_lt(c0.d.gemm_a_B, 2.0);
	cr_assert_eq(c1.d.qexcl, (unsigned)QX_SHARED);
	n0 = moe_norm(&c0.o, &q0);
	n1 = moe_norm(&c1.o, &q1);
	cr_assert_float_eq(n0->write_B, 8 * 5120 * (2 + c0.d.gemm_a_B), 1e-6);
	cr_assert_float_eq(n1->write_B, 163840.0, 1e-6);
	cr_assert_eq(q1, 0);
	fixture_infer_moe_release(&c0);
	fixture_infer_moe_release(&c1);
}

/*
 * A latent MoE (Nemotron 3 Super's moe_latent_size; TensorRT-LLM's
 * NemotronHMOE: fc1_latent_proj, the experts, fc2_latent_proj, then one
 * TP all-reduce) on Qwen3-30B-A3B's shapes with l = 512 of h = 2048, the
 * 1,024-token TP 1 step of the test above (bf16 here):
 *   moe_latent_down  a GEMM T x l x h = 1024 x 512 x 2048
 *   moe_latent_up    a GEMM T x h x l = 1024 x 2048 x 512
 *   expert_gate_up   k = l = 512 (was h), expert_down n = l
 *   moe_finalize     reads R l B + N k 12 = 8192 x 512 x 2 + 98,304
 *                    = 8,486,912 B, writes N l B = 1,048,576 B
 *   parameters       h E + 2 h l + E 3 l f_e = 262,144 + 2,097,152 +
 *                    128 x 3 x 512 x 768 = 153,354,240 (h's 604,504,064)
 */
Test(infer_moe, latent_projections_and_latent_experts)
{
	const char *const more[] = {"model.moe_latent_size=512",
				    "serving.dtype=bf16"};
	struct fixture_infer_moe c;
	const struct infer_op *op;

	moe_case(&c, "trtllm", 1024, more, 2);
	op = fixture_infer_op(&c.o, "moe_latent_down");
	cr_assert_not_null(op);
	cr_assert_float_eq(op->m, 1024, 1e-9);
	cr_assert_float_eq(op->n, 512, 1e-9);
	cr_assert_float_eq(op->k, 2048, 1e-9);
	op = fixture_infer_op(&c.o, "moe_latent_up");
	cr_assert_not_null(op);
	cr_assert_float_eq(op->n, 2048, 1e-9);
	cr_assert_float_eq(op->k, 512, 1e-9);
	op = fixture_infer_op(&c.o, "expert_gate_up");
	cr_assert_not_null(op);
	cr_assert_float_eq(op->k, 512, 1e-9);
	bytes_eq(&c.o, "moe_finalize", 8486912, 1048576);
	cr_assert_float_eq(infer_moe_params(&c.d), 153354240, 1e-3);
	fixture_infer_moe_release(&c);
}
