/*
 * test_moe_te.c - how Megatron-Core's TEGroupedMLP runs the experts on
 * Transformer Engine: the quantization padding copies in fp8/fp4/MX
 * training (moe.c pad_op: Fp8Padding / Fp8Unpadding) and the paths that
 * make them unnecessary (Hybrid-EP's padded permute, router padding),
 * against derived bytes; the grouped GEMM as per-expert kernels over
 * streams (moe.c stream_kernels, block.c), against derived times, and
 * what issuing those per-expert cuBLASLt GEMMs costs the host
 * (train_host.c, framework host gemm); the router GEMMs' dtypes through
 * Transformer Engine (layer.c router_dtypes).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "base/arena.h"
#include "base/diag.h"
#include "fixture.h"
#include "models/block.h"
#include "models/layer.h"
#include "models/route.h"
#include "models/train.h"

/* The GPT fixture (h 1024, 16 heads, s 2048, b 2: T = 4096 tokens) with
 * every layer MoE: 8 experts of 512, top-2, ep 2 (4 local experts),
 * uniform routing, a bf16 router, MXFP8 linear layers, the framework's
 * padding on. */
static void pad_job(struct fixture *f)
{
	fixture_moe(f, 8, 2, 512, 2);
	f->job.training.dtype = DTYPE_MXFP8;
	f->fw.elementwise.expert_quant_padding = 1;
}

static void build(struct fixture *f, struct arena *a, struct layer_ops *fwd,
		  struct layer_ops *bwd)
{
	struct layer_kind kind = { .moe = 1 };
	struct layer_dims d;
	struct route_result r;

	fixture_dims(f, a, &d, &r);
	layer_fwd(&d, &kind, fwd);
	layer_bwd(&d, &kind, LREC_NONE, bwd);
}

/* got within 1e-12 of want (relative). */
static int near(double got, double want)
{
	return fixture_near(got, want, 1e-12);
}

Test(moe, grouped_mlp_pads_rows_for_quantization)
{
	struct fixture f;
	struct arena a;
	struct layer_ops fwd, bwd;
	const struct layer_op *op;
	/* The GPU's experts get R = k T = 2 x 4096 = 8192 rows (the two EP
	 * ranks' tokens for its half of the experts) of h = 1024 in bf16:
	 *   rows  n = R h 2 B = 16777216 B
	 *   probs p = R 2 B (bf16 router) = 16384 B
	 * Forward: Fp8Padding of the input and of the probabilities (two
	 * kernels, read and write n + p = 16793600 B each way) right before
	 * fc1's quantize; Fp8Unpadding of fc2's output (one kernel, n each
	 * way) right after fc2. Backward: the output gradient padded first
	 * (n), the input's and the probabilities' gradients unpadded last
	 * (n + p, two kernels). */
	double n = 8192.0 * 1024 * 2, p = 8192.0 * 2;

	arena_init(&a);
	pad_job(&f);
	build(&f, &a, &fwd, &bwd);
	op = fixture_op(&fwd, "expert_pad");
	cr_assert_not_null(op);
	cr_assert(near(op->k.read_B, n + p), "read %g B", op->k.read_B);
	cr_assert(near(op->k.write_B, n + p), "write %g B", op->k.write_B);
	cr_assert(near(op->k.launches, 2));
	cr_assert_eq(fixture_op_index(&fwd, "expert_pad") + 1,
		     fixture_op_index(&fwd, "expert_fc1_cast"));
	op = fixture_op(&fwd, "expert_unpad");
	cr_assert_not_null(op);
	cr_assert(near(op->k.read_B, n) && near(op->k.write_B, n));
	cr_assert(near(op->k.launches, 1));
	cr_assert_eq(fixture_op_index(&fwd, "expert_fc2") + 1,
		     fixture_op_index(&fwd, "expert_unpad"));
	op = fixture_op(&bwd, "expert_unpad_bwd");
	cr_assert_not_null(op);
	cr_assert(near(op->k.read_B, n) && near(op->k.write_B, n));
	cr_assert_lt(fixture_op_index(&bwd, "expert_unpad_bwd"),
		     fixture_op_index(&bwd, "expert_fc2_dgrad"));
	op = fixture_op(&bwd, "expert_pad_bwd");
	cr_assert_not_null(op);
	cr_assert(near(op->k.read_B, n + p) && near(op->k.write_B, n + p));
	cr_assert(near(op->k.launches, 2));
	cr_assert_gt(fixture_op_index(&bwd, "expert_pad_bwd"),
		     fixture_op_index(&bwd, "expert_fc1_wgrad"));
	arena_release(&a);
}

Test(moe, aligned_counts_need_no_padding_copies)
{
	struct fixture f;
	struct arena a;
	struct layer_ops fwd, bwd;
	struct ep_comm_spec e;

	arena_init(&a);
	/* Hybrid-EP's permute pads the splits itself (pad_multiple) */
	pad_job(&f);
	fixture_ep_forward(&e, "test-hybridep");
	e.quant_pad = 1;
	f.job.moe.dispatcher = &e;
	build(&f, &a, &fwd, &bwd);
	cr_assert_null(fixture_op(&fwd, "expert_pad"));
	cr_assert_null(fixture_op(&fwd, "expert_unpad"));
	cr_assert_null(fixture_op(&bwd, "expert_pad_bwd"));
	cr_assert_null(fixture_op(&bwd, "expert_unpad_bwd"));
	/* the same dispatcher without it: the grouped MLP pads */
	e.quant_pad = 0;
	build(&f, &a, &fwd, &bwd);
	cr_assert_not_null(fixture_op(&fwd, "expert_pad"));
	/* the router padded the routing map */
	pad_job(&f);
	f.job.moe.router_padding = 1;
	build(&f, &a, &fwd, &bwd);
	cr_assert_null(fixture_op(&fwd, "expert_pad"));
	cr_assert_null(fixture_op(&bwd, "expert_pad_bwd"));
	/* bf16: nothing is quantized, nothing padded */
	pad_job(&f);
	f.job.training.dtype = DTYPE_BF16;
	build(&f, &a, &fwd, &bwd);
	cr_assert_null(fixture_op(&fwd, "expert_pad"));
	/* a framework without the padding (flag off) */
	pad_job(&f);
	f.fw.elementwise.expert_quant_padding = 0;
	build(&f, &a, &fwd, &bwd);
	cr_assert_null(fixture_op(&fwd, "expert_unpad"));
	arena_release(&a);
}

/* o costed by block.c on f's GPU (bf16 activations) into b; the index
 * of the op named name (the test fails when there is none). */
static int costed_op(struct fixture *f, const struct layer_ops *o,
		     const char *name, struct block *b)
{
	struct block_dtypes dt = { DTYPE_BF16, DTYPE_BF16 };
	int i;

	cr_assert_eq(block_cost(b, o, &f->gpu, &dt, NULL), 0);
	for (i = 0; i < b->n; i++)
		if (strcmp(b->op[i].name, name) == 0)
			return i;
	cr_assert_fail("no op %s", name);
	return -1;
}

/* The time of the op named name once block.c has costed o on f's GPU. */
static double op_time(struct fixture *f, const struct layer_ops *o,
		      const char *name)
{
	static struct block b;

	return b.op[costed_op(f, o, name, &b)].time_s;
}

Test(moe, per_expert_gemms_pay_each_streams_launches)
{
	struct fixture f;
	struct arena a;
	struct layer_ops fwd, bwd, one_f, one_b;
	const struct layer_op *op;
	double t1, t4;

	/* ep 1: all 8 experts local, bf16. One grouped kernel (streams 0):
	 * one launch. Transformer Engine's multi-stream path, 4 streams:
	 * experts 0..7 on streams 0,1,2,3,0,1,2,3, two kernels back to
	 * back on each stream: ceil(8 / 4) = 2 launches in a row, so the
	 * op costs the grouped kernel plus one kernel_launch more (the
	 * fixture GPU's; the tile and wave cost is the same). 3 streams:
	 * ceil(8 / 3) = 3; 8 or more streams: 1. */
	arena_init(&a);
	pad_job(&f);
	f.job.parallelism.ep = 1;
	f.job.training.dtype = DTYPE_BF16;
	build(&f, &a, &one_f, &one_b);
	op = fixture_op(&one_f, "expert_fc1");
	cr_assert(op->k.launches <= 1);
	t1 = op_time(&f, &one_f, "expert_fc1");
	f.fw.elementwise.grouped_gemm_streams = 4;
	build(&f, &a, &fwd, &bwd);
	cr_assert(near(fixture_op(&fwd, "expert_fc1")->k.launches, 2));
	cr_assert(near(fixture_op(&bwd, "expert_fc2_wgrad")->k.launches, 2));
	t4 = op_time(&f, &fwd, "expert_fc1");
	cr_assert_gt(f.gpu.kernel_launch_s, 0);
	cr_assert(near(t4 - t1, f.gpu.kernel_launch_s),
		  "%g s more, launch %g s", t4 - t1, f.gpu.kernel_launch_s);
	/* with a per-GEMM-kernel set-up t_k (B200's 3.2 us): the one kernel
	 * of ep 1's grouped cost pays it once, the second kernel of each
	 * stream's chain once more: launch + 3.2 us over t1 + 3.2 us */
	f.gpu.gemm_kernel_overhead_s = 3.2e-6;
	t1 = op_time(&f, &one_f, "expert_fc1");
	t4 = op_time(&f, &fwd, "expert_fc1");
	cr_assert(near(t4 - t1, f.gpu.kernel_launch_s + 3.2e-6),
		  "%g s more", t4 - t1);
	f.gpu.gemm_kernel_overhead_s = 0;
	f.fw.elementwise.grouped_gemm_streams = 3;
	build(&f, &a, &fwd, &bwd);
	cr_assert(near(fixture_op(&fwd, "expert_fc2")->k.launches, 3));
	f.fw.elementwise.grouped_gemm_streams = 8;
	build(&f, &a, &fwd, &bwd);
	cr_assert(near(fixture_op(&fwd, "expert_fc2")->k.launches, 1));
	cr_assert(near(op_time(&f, &fwd, "expert_fc1"), t1));
	arena_release(&a);
}

/* The op named name of pass `pass` in o (a recomputed forward's ops sit
 * in the backward's list under the forward's names). */
static const struct layer_op *pass_op(const struct layer_ops *o,
				      const char *name, enum layer_pass pass)
{
	int i;

	for (i = 0; i < o->n; i++)
		if (o->op[i].pass == pass && strcmp(o->op[i].name, name) == 0)
			return &o->op[i];
	return NULL;
}

/*
 * grouped_gemm v1.1.4 (AutoModel's ops.gmm) built for sm80 runs the
 * untransposed grouped GEMM, the forward's (trans_b=False), as one
 * CUTLASS grouped kernel, and the backward's dgrad (trans_b=True) and
 * wgrad (trans_a) per expert over its 4 streams on every arch
 * (csrc/grouped_gemm.cu GroupedGemm, GROUPED_GEMM_DEVICE_CAPABILITY):
 * framework grouped_gemm_fwd_kernel_arch sm80. ep 1, 8 local experts,
 * 4 streams: ceil(8 / 4) = 2 kernels a stream. On the sm90 GPU every
 * grouped GEMM has 2; on the sm80 one the forward's and its
 * recomputation's have 1 (and no per-expert host GEMM), the
 * backward's still 2.
 */
Test(moe, grouped_gemm_forward_one_kernel_on_its_arch)
{
	static const char *const fwd_gemms[] = { "expert_fc1", "expert_fc2" };
	static const char *const bwd_gemms[] = {
		"expert_fc1_dgrad", "expert_fc1_wgrad", "expert_fc2_dgrad",
		"expert_fc2_wgrad",
	};
	struct layer_kind kind = { .moe = 1 };
	struct fixture f;
	struct arena a;
	struct layer_ops fwd, bwd;
	struct layer_dims d;
	struct route_result r;
	struct diag dg;
	int arch, i;

	arena_init(&a);
	diag_init(&dg, stderr);
	pad_job(&f);
	f.job.parallelism.ep = 1;
	f.job.training.dtype = DTYPE_BF16;
	f.fw.elementwise.grouped_gemm_streams = 4;
	f.fw.elementwise.grouped_gemm_fwd_kernel_arch = "sm80";
	for (arch = 0; arch < 2; arch++) {
		double want_f = arch ? 1 : 2;

		f.gpu.arch = arch ? "sm80" : "sm90";
		layer_dims_from_job(&f.job, &d);
		cr_assert_eq(route_plan(&f.job, &d, &a, &r, &dg), 0);
		layer_fwd(&d, &kind, &fwd);
		layer_bwd(&d, &kind, LREC_FULL, &bwd);
		for (i = 0; i < 2; i++) {
			const struct layer_op *op = pass_op(&fwd, fwd_gemms[i],
							    PASS_FWD);
			const struct layer_op *rc = pass_op(&bwd, fwd_gemms[i],
							    PASS_RECOMPUTE);

			cr_assert(op && rc, "%s", fwd_gemms[i]);
			cr_assert(near(op->k.launches, want_f), "%s %s: %g",
				  f.gpu.arch, fwd_gemms[i], op->k.launches);
			cr_assert(near(rc->k.launches, want_f));
			cr_assert_eq(op->host_gemm, !arch);
		}
		for (i = 0; i < 4; i++) {
			const struct layer_op *op = pass_op(&bwd, bwd_gemms[i],
							    PASS_BWD);

			cr_assert(op, "%s", bwd_gemms[i]);
			cr_assert(near(op->k.launches, 2), "%s %s: %g",
				  f.gpu.arch, bwd_gemms[i], op->k.launches);
			cr_assert_eq(op->host_gemm, 1);
		}
	}
	arena_release(&a);
}

Test(moe, router_gemms_through_transformer_engine)
{
	struct fixture f;
	struct arena a;
	struct layer_ops fwd, bwd;

	/* An fp32 router (--moe-router-dtype fp32) in bf16 training.
	 * Megatron-Core's RouterGatingLinearFunction through TE's
	 * general_gemm: the forward GEMM on the bf16 input and weight (fp32
	 * only as output), the backward's two GEMMs on operands cast to
	 * fp32, which TE runs as TF32. Without it (an older Megatron-Core,
	 * torch.mm): every router GEMM in fp32. A bf16 router: bf16 all
	 * through either way. */
	arena_init(&a);
	pad_job(&f);
	f.job.training.dtype = DTYPE_BF16;
	f.job.moe.router_dtype = DTYPE_FP32;
	f.fw.router_gemm_te = 1;
	build(&f, &a, &fwd, &bwd);
	cr_assert_eq(fixture_op(&fwd, "router")->k.dt, DTYPE_BF16);
	cr_assert_eq(fixture_op(&bwd, "router_dgrad")->k.dt, DTYPE_TF32);
	cr_assert_eq(fixture_op(&bwd, "router_wgrad")->k.dt, DTYPE_TF32);
	f.fw.router_gemm_te = 0;
	build(&f, &a, &fwd, &bwd);
	cr_assert_eq(fixture_op(&fwd, "router")->k.dt, DTYPE_FP32);
	cr_assert_eq(fixture_op(&bwd, "router_dgrad")->k.dt, DTYPE_FP32);
	f.fw.router_gemm_te = 1;
	f.job.moe.router_dtype = DTYPE_BF16;
	build(&f, &a, &fwd, &bwd);
	cr_assert_eq(fixture_op(&fwd, "router")->k.dt, DTYPE_BF16);
	cr_assert_eq(fixture_op(&bwd, "router_wgrad")->k.dt, DTYPE_BF16);
	/* a GPU without a TF32 rate (MI355X) runs the fp32 backward GEMMs
	 * in fp32: the op costs what an fp32 router_dgrad costs */
	{
		double tf32_s, fp32_s;

		f.job.moe.router_dtype = DTYPE_FP32;
		build(&f, &a, &fwd, &bwd);
		f.gpu.matrix_peak_flops[DTYPE_TF32] = 0;
		tf32_s = op_time(&f, &bwd, "router_dgrad");
		f.fw.router_gemm_te = 0;
		build(&f, &a, &fwd, &bwd);
		fp32_s = op_time(&f, &bwd, "router_dgrad");
		cr_assert(near(tf32_s, fp32_s), "%g s vs %g s", tf32_s, fp32_s);
		f.fw.router_gemm_te = 1;
	}
	/* MXFP8 training keeps the router in the 16-bit base dtype */
	f.job.training.dtype = DTYPE_MXFP8;
	f.job.moe.router_dtype = DTYPE_FP32;
	build(&f, &a, &fwd, &bwd);
	cr_assert_eq(fixture_op(&fwd, "router")->k.dt, DTYPE_BF16);
	arena_release(&a);
}

/* The host time of issuing the op named name once block.c has costed o. */
static double host_time(struct fixture *f, const struct layer_ops *o,
			const char *name)
{
	static struct block b;
	int i = costed_op(f, o, name, &b);

	return train_host_op_s(&f->job, &b, i);
}

Test(moe, per_expert_cublaslt_gemms_cost_the_host_gemm_each)
{
	struct fixture f;
	struct arena a;
	struct layer_ops fwd, bwd;
	struct host_spec *h = &f.fw.host;
	double us = 1e-6;

	/* ep 1: all 8 experts local. Host costs on the reference CPU:
	 * module 36 us, kernel 4 us, gemm 10 us, event 2.5 us (framework
	 * data), scale 1. MXFP8: the grouped cast opens GroupedLinear's
	 * call, so expert_fc1 is issued inside it: its 8 per-expert cuBLASLt
	 * GEMMs (4 streams) cost 8 x 10 = 80 us, and the stream joins
	 * record 1 + min(4, 8) = 5 events, 5 x 2.5 = 12.5 us: 92.5 us. The
	 * backward's wgrad, inside the module's backward call, the same. */
	arena_init(&a);
	pad_job(&f);
	f.job.parallelism.ep = 1;
	memset(h, 0, sizeof(*h));
	h->module_s = h->bwd_module_s = 36 * us;
	h->op_s = 13.5 * us;
	h->kernel_s = 4 * us;
	h->gemm_s = 10 * us;
	h->event_s = 2.5 * us;
	f.sys.host_dispatch_scale = 1;
	f.fw.elementwise.grouped_gemm_streams = 4;
	build(&f, &a, &fwd, &bwd);
	cr_assert_eq(fixture_op(&fwd, "expert_fc1")->host, HOST_FREE);
	cr_assert(near(host_time(&f, &fwd, "expert_fc1"), 92.5 * us),
		  "%g s", host_time(&f, &fwd, "expert_fc1"));
	cr_assert(near(host_time(&f, &bwd, "expert_fc1_wgrad"), 92.5 * us),
		  "%g s", host_time(&f, &bwd, "expert_fc1_wgrad"));
	/* a Grace host (host_dispatch_scale 2.75): 92.5 x 2.75 = 254.375 us */
	f.sys.host_dispatch_scale = 2.75;
	cr_assert(near(host_time(&f, &fwd, "expert_fc1"), 254.375 * us));
	f.sys.host_dispatch_scale = 1;
	/* gemm 0 falls back to kernel: 8 x 4 + 12.5 = 44.5 us */
	h->gemm_s = 0;
	cr_assert(near(host_time(&f, &fwd, "expert_fc1"), 44.5 * us));
	h->gemm_s = 10 * us;
	/* 8 streams: 1 + min(8, 8) = 9 events: 80 + 22.5 = 102.5 us */
	f.fw.elementwise.grouped_gemm_streams = 8;
	build(&f, &a, &fwd, &bwd);
	cr_assert(near(host_time(&f, &fwd, "expert_fc1"), 102.5 * us));
	/* one grouped kernel (streams 0): no per-call GEMM setup, no
	 * events: 1 + 7 further kernels at 4 us = 32 us */
	f.fw.elementwise.grouped_gemm_streams = 0;
	build(&f, &a, &fwd, &bwd);
	cr_assert(near(host_time(&f, &fwd, "expert_fc1"), 32 * us));
	/* bf16: no cast, the grouped GEMM opens the module call: the call
	 * with its first GEMM (module, 36 us), 7 further GEMMs at 10 us and
	 * 5 events: 36 + 70 + 12.5 = 118.5 us */
	f.job.training.dtype = DTYPE_BF16;
	f.fw.elementwise.grouped_gemm_streams = 4;
	build(&f, &a, &fwd, &bwd);
	cr_assert_eq(fixture_op(&fwd, "expert_fc1")->host, HOST_MODULE);
	cr_assert(near(host_time(&f, &fwd, "expert_fc1"), 118.5 * us),
		  "%g s", host_time(&f, &fwd, "expert_fc1"));
	arena_release(&a);
}

Test(moe, hybridep_dispatch_call_costs_its_measured_host_time)
{
	struct fixture f;
	struct arena a;
	struct layer_ops fwd, bwd;
	struct ep_comm_spec e;
	struct host_spec *h = &f.fw.host;
	double us = 1e-6;

	/* ep 2 over a forwarding dispatcher whose dispatch call costs the
	 * host 182 us (configs/ep/hybridep.yaml dispatch_call_host, on the
	 * reference CPU), a torch.distributed collective 13.5 us. The call
	 * is dispatch_with_permute: the forward's dispatch and the
	 * combine's backward (a dispatch) each cost 182 us in place of the
	 * collective's 13.5 us; the forward's combine and the dispatch's
	 * backward (combine_with_unpermute, not measured) stay at 13.5 us. */
	arena_init(&a);
	pad_job(&f);
	fixture_ep_forward(&e, "test-hybridep");
	e.dispatch_call_host_s = 182 * us;
	f.job.moe.dispatcher = &e;
	memset(h, 0, sizeof(*h));
	h->collective_s = 13.5 * us;
	h->op_s = 13.5 * us;
	h->bwd_op_s = 13.5 * us;	/* a backward op, as a forward one */
	f.sys.host_dispatch_scale = 1;
	build(&f, &a, &fwd, &bwd);
	cr_assert(near(host_time(&f, &fwd, "moe_dispatch"), 182 * us),
		  "%g s", host_time(&f, &fwd, "moe_dispatch"));
	cr_assert(near(host_time(&f, &bwd, "moe_combine_bwd"), 182 * us));
	cr_assert(near(host_time(&f, &fwd, "moe_combine"), 13.5 * us));
	cr_assert(near(host_time(&f, &bwd, "moe_dispatch_bwd"), 13.5 * us));
	/* the permutes the call launches itself (the forward's sort, the
	 * combine's backward's unsort) cost nothing more: 0, not an op's
	 * 13.5 us */
	cr_assert(host_time(&f, &fwd, "expert_sort") == 0);
	cr_assert(host_time(&f, &bwd, "expert_unsort_bwd") == 0);
	/* a Grace host (host_dispatch_scale 2.75): 182 x 2.75 = 500.5 us */
	f.sys.host_dispatch_scale = 2.75;
	cr_assert(near(host_time(&f, &fwd, "moe_dispatch"), 500.5 * us));
	f.sys.host_dispatch_scale = 1;
	/* 0 (every other dispatcher): the collective's 13.5 us */
	e.dispatch_call_host_s = 0;
	build(&f, &a, &fwd, &bwd);
	cr_assert(near(host_time(&f, &fwd, "moe_dispatch"), 13.5 * us));
	cr_assert(near(host_time(&f, &bwd, "moe_combine_bwd"), 13.5 * us));
	cr_assert(near(host_time(&f, &fwd, "expert_sort"), 13.5 * us));
	cr_assert(near(host_time(&f, &bwd, "expert_unsort_bwd"), 13.5 * us));
	arena_release(&a);
}
