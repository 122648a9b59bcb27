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
#include "models/layer_impl.h"
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
	struct block_dtypes dt = { DTYPE_BF16, DTYPE_BF16, 1, 0, 0 };
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
	/* with a per-GEMM-kernel set-up and drain t_k (B200's 3.2 us): the
	 * one kernel of ep 1's grouped cost pays it once; on the 4 streams
	 * each of the 8 persistent kernels pays it, one after another on
	 * every SM (block.c), while only the second launch of each
	 * stream's chain is paid: launch + 7 x 3.2 us over t1 + 3.2 us */
	f.gpu.gemm_kernel_overhead_s = 3.2e-6;
	cr_assert(near(fixture_op(&fwd, "expert_fc1")->k.kernels, 8));
	t1 = op_time(&f, &one_f, "expert_fc1");
	t4 = op_time(&f, &fwd, "expert_fc1");
	cr_assert(near(t4 - t1, f.gpu.kernel_launch_s + 7 * 3.2e-6),
		  "%g s more", t4 - t1);
	f.gpu.gemm_kernel_overhead_s = 0;
	f.fw.elementwise.grouped_gemm_streams = 3;
	build(&f, &a, &fwd, &bwd);
	cr_assert(near(fixture_op(&fwd, "expert_fc2")->k.launches, 3));
	f.fw.elementwise.grouped_gemm_streams = 8;
	build(&f, &a, &fwd, &bwd);
	cr_assert(near(fixture_op(&fwd, "expert_fc2")->k.launches, 1));
	cr_assert(near(op_time(&f, &fwd, "expert_fc1"), t1));
	/* 8 streams, one kernel each: no launch in a row, but still 8
	 * kernels' set-ups: t1 + 7 x 3.2 us (t1 holds one) */
	f.gpu.gemm_kernel_overhead_s = 3.2e-6;
	t1 = op_time(&f, &one_f, "expert_fc1");
	t4 = op_time(&f, &fwd, "expert_fc1");
	cr_assert(near(t4 - t1, 7 * 3.2e-6), "%g s more", t4 - t1);
	f.gpu.gemm_kernel_overhead_s = 0;
	arena_release(&a);
}

/*
 * The GPU's expert_bwd_efficiency (configs/gpus/mi355x.yaml: AMD's
 * measured per-expert hipBLASLt backward) scales only the backward's
 * per-expert kernels: ep 1, 8 local experts on 4 streams, e = 0.5
 * doubles expert_fc1_dgrad and expert_fc2_wgrad (time / 0.5) and leaves
 * the forward's expert_fc1 as it was; with one grouped kernel (streams 0)
 * the backward's GEMMs are not per expert and keep their time.
 */
Test(moe, expert_bwd_efficiency_scales_per_expert_backward_only)
{
	static const char *const names[] = { "expert_fc1", "expert_fc1_dgrad",
					     "expert_fc2_wgrad" };
	struct fixture f;
	struct arena a;
	struct layer_ops fwd, bwd;
	double t[2][3];
	int s, e, i;

	arena_init(&a);
	pad_job(&f);
	f.job.parallelism.ep = 1;
	f.job.training.dtype = DTYPE_BF16;
	for (s = 0; s < 2; s++) {
		f.fw.elementwise.grouped_gemm_streams = s ? 0 : 4;
		build(&f, &a, &fwd, &bwd);
		cr_assert_eq(fixture_op(&bwd, "expert_fc1_dgrad")->k.stream_bwd,
			     !s);
		cr_assert_eq(fixture_op(&fwd, "expert_fc1")->k.stream_bwd, 0);
		for (e = 0; e < 2; e++) {
			f.gpu.expert_bwd_efficiency = e ? 0.5 : 1;
			for (i = 0; i < 3; i++)
				t[e][i] = op_time(&f, i ? &bwd : &fwd,
						  names[i]);
		}
		f.gpu.expert_bwd_efficiency = 0;
		cr_assert(near(t[1][0], t[0][0]), "fwd %g %g", t[1][0],
			  t[0][0]);
		for (i = 1; i < 3; i++)
			cr_assert(near(t[1][i], s ? t[0][i] : 2 * t[0][i]),
				  "streams %d %s: %g against %g", s ? 0 : 4,
				  names[i], t[1][i], t[0][i]);
	}
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

/* ep 1 (8 local experts), 4 GEMM streams, host_dispatch_scale 1 and the
 * framework's host costs on the reference CPU: module 36 us, op 13.5
 * us, kernel 4 us, gemm 10 us, event 2.5 us, the rest 0. */
static void host_case(struct fixture *f, struct arena *a)
{
	struct host_spec *h = &f->fw.host;
	double us = 1e-6;

	arena_init(a);
	pad_job(f);
	f->job.parallelism.ep = 1;
	memset(h, 0, sizeof(*h));
	h->module_s = h->bwd_module_s = 36 * us;
	h->op_s = 13.5 * us;
	h->kernel_s = 4 * us;
	h->gemm_s = 10 * us;
	h->event_s = 2.5 * us;
	f->sys.host_dispatch_scale = 1;
	f->fw.elementwise.grouped_gemm_streams = 4;
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
	host_case(&f, &a);
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

Test(moe, per_expert_items_and_weight_hooks_cost_the_host)
{
	struct fixture f;
	struct arena a;
	struct layer_ops fwd, bwd;
	struct host_spec *h = &f.fw.host;
	double us = 1e-6;

	/* As above (MXFP8, ep 1: 8 local experts, 4 streams): expert_fc1
	 * costs 8 GEMMs x 10 + 5 events x 2.5 = 92.5 us, and so do its
	 * backward's dgrad and wgrad. With expert_item 3 us and param_hook
	 * 5 us: the forward call's 8 per-expert items, 92.5 + 8 x 3 =
	 * 116.5 us; the backward call's items once, on the dgrad, 116.5 us;
	 * the 8 expert weights' hooks after the wgrad, 92.5 + 8 x 5 =
	 * 132.5 us. */
	host_case(&f, &a);
	h->expert_item_s = 3 * us;
	h->param_hook_s = 5 * us;
	build(&f, &a, &fwd, &bwd);
	cr_assert(near(host_time(&f, &fwd, "expert_fc1"), 116.5 * us),
		  "%g s", host_time(&f, &fwd, "expert_fc1"));
	cr_assert(near(host_time(&f, &bwd, "expert_fc1_dgrad"), 116.5 * us),
		  "%g s", host_time(&f, &bwd, "expert_fc1_dgrad"));
	cr_assert(near(host_time(&f, &bwd, "expert_fc1_wgrad"), 132.5 * us),
		  "%g s", host_time(&f, &bwd, "expert_fc1_wgrad"));
	/* a Grace host (x 2.75): 132.5 x 2.75 = 364.375 us */
	f.sys.host_dispatch_scale = 2.75;
	cr_assert(near(host_time(&f, &bwd, "expert_fc1_wgrad"),
		       364.375 * us));
	f.sys.host_dispatch_scale = 1;
	/* one grouped kernel (streams 0): not the per-expert loop, neither
	 * cost: 1 + 7 further kernels at 4 us = 32 us */
	f.fw.elementwise.grouped_gemm_streams = 0;
	build(&f, &a, &fwd, &bwd);
	cr_assert(near(host_time(&f, &fwd, "expert_fc1"), 32 * us));
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
	 * collective's 13.5 us; so do the forward's combine and the
	 * dispatch's backward (combine_with_unpermute, the same method
	 * shape as the handle path: its 182 us, an upper bound). */
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
	cr_assert(near(host_time(&f, &fwd, "moe_combine"), 182 * us));
	cr_assert(near(host_time(&f, &bwd, "moe_dispatch_bwd"), 182 * us));
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
	cr_assert(near(host_time(&f, &fwd, "moe_combine"), 13.5 * us));
	cr_assert(near(host_time(&f, &bwd, "moe_dispatch_bwd"), 13.5 * us));
	arena_release(&a);
}

Test(moe, hybridep_casts_16bit_probabilities_to_fp32)
{
	struct fixture f;
	struct arena a;
	struct layer_ops fwd, bwd;
	struct ep_comm_spec e;
	const struct layer_op *op;
	/* T = 4096 tokens x E = 8 experts of routing probabilities from a
	 * bf16 router, before a dispatcher that takes fp32 only (Megatron-
	 * Core _HybridEPManager.dispatch: token_probs.float()): one kernel
	 * right before the dispatch, read T E 2 = 65536 B, write T E 4 =
	 * 131072 B; its backward casts the gradient back after the
	 * dispatch's backward: read 131072 B, write 65536 B. An fp32 router
	 * or a dispatcher without fp32_probs: no cast. */
	double n = 4096.0 * 8;

	arena_init(&a);
	pad_job(&f);
	f.job.training.dtype = DTYPE_BF16;
	fixture_ep_forward(&e, "test-hybridep");
	e.fp32_probs = 1;
	f.job.moe.dispatcher = &e;
	f.job.moe.router_dtype = DTYPE_BF16;
	build(&f, &a, &fwd, &bwd);
	op = fixture_op(&fwd, "moe_probs_cast");
	cr_assert_not_null(op);
	cr_assert(near(op->k.read_B, 2 * n), "read %g B", op->k.read_B);
	cr_assert(near(op->k.write_B, 4 * n), "write %g B", op->k.write_B);
	cr_assert_eq(fixture_op_index(&fwd, "moe_probs_cast") + 1,
		     fixture_op_index(&fwd, "moe_dispatch"));
	op = fixture_op(&bwd, "moe_probs_cast_bwd");
	cr_assert_not_null(op);
	cr_assert(near(op->k.read_B, 4 * n), "read %g B", op->k.read_B);
	cr_assert(near(op->k.write_B, 2 * n), "write %g B", op->k.write_B);
	cr_assert_gt(fixture_op_index(&bwd, "moe_probs_cast_bwd"),
		     fixture_op_index(&bwd, "moe_dispatch_bwd"));
	f.job.moe.router_dtype = DTYPE_FP32;
	build(&f, &a, &fwd, &bwd);
	cr_assert_null(fixture_op(&fwd, "moe_probs_cast"));
	f.job.moe.router_dtype = DTYPE_BF16;
	e.fp32_probs = 0;
	build(&f, &a, &fwd, &bwd);
	cr_assert_null(fixture_op(&fwd, "moe_probs_cast"));
	cr_assert_null(fixture_op(&bwd, "moe_probs_cast_bwd"));
	arena_release(&a);
}

Test(moe, mxfp8_casts_run_at_the_gpus_cast_rate)
{
	struct fixture f;
	struct arena a;
	struct layer_ops fwd, bwd, dense;
	struct layer_dims d;
	const struct layer_op *op;
	int64_t act[] = { RCM_MOE_ACT };
	double L, t1, t85, g1, g85;

	/* Dense GPT layer, tp 1, MXFP8: proj_cast quantizes the attention
	 * output, n = T q = 4096 x 1024 = 4194304 elements, both layouts:
	 * read n 2 = 8388608 B, write 2 n (1 + 1/32) = 8650752 B (data and
	 * E8M0 scales, one per 32), 17039360 B in all, one kernel. 17 MB
	 * fit the fixture's 50 MB L2 (10 TB/s x 0.8 = 8e12 B/s): at the
	 * streaming rate 4 us launch + 17039360 / 8e12 = 2.12992 us =
	 * 6.12992 us (its n vector FLOPs take 0.063 us: memory-bound). At
	 * mx_cast_efficiency 0.85 (b200.yaml: TE quantize_mxfp8, both
	 * layouts, 8192^2 on B200): 4 + 2.12992 / 0.85 = 6.50579 us; the
	 * bytes counted stay 17039360. */
	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 2, 64, 1, 1, 1);
	f.job.training.dtype = DTYPE_MXFP8;
	f.fw.elementwise.mx_generic_cast = 1;
	f.gpu.mx_cast_efficiency = 1;
	layer_dims_from_job(&f.job, &d);
	layer_fwd(&d, NULL, &dense);
	op = fixture_op(&dense, "proj_cast");
	cr_assert(op);
	cr_assert(near(op->k.read_B + op->k.write_B, 17039360.0));
	t1 = op_time(&f, &dense, "proj_cast");
	cr_assert(fixture_near(t1, 6.12992e-6, 1e-9), "%.9g s", t1);
	f.gpu.mx_cast_efficiency = 0.85;
	layer_dims_from_job(&f.job, &d);
	cr_assert(near(d.mx_cast_eff, 0.85));
	layer_fwd(&d, NULL, &dense);
	t85 = op_time(&f, &dense, "proj_cast");
	cr_assert(fixture_near(t85, 4e-6 + 2.12992e-6 / 0.85, 1e-9),
		  "%.9g s", t85);
	/* TE's specialized cast-only kernels (TE PR #2958, framework
	 * mx_generic_cast false): the streaming rate, 6.12992 us */
	f.fw.elementwise.mx_generic_cast = 0;
	layer_dims_from_job(&f.job, &d);
	cr_assert(near(d.mx_cast_eff, 1));
	layer_fwd(&d, NULL, &dense);
	cr_assert(fixture_near(op_time(&f, &dense, "proj_cast"), 6.12992e-6,
			       1e-9));
	f.fw.elementwise.mx_generic_cast = 1;
	/* per-tensor FP8 and NVFP4 casts are other kernels: not slowed */
	f.job.training.dtype = DTYPE_FP8;
	layer_dims_from_job(&f.job, &d);
	cr_assert(near(d.mx_cast_eff, 1));
	/* MoE, MXFP8, 4 local experts, per-expert quantizers (TE
	 * split_quantize: one kernel each): the grouped fc1 cast's body,
	 * its time less its launches, grows by 1 / 0.85 whatever its
	 * bytes; and the fc2 input cast of the moe_act recomputation
	 * writes the row-wise layout only in the forward, which streams
	 * (1.006 of the rate measured): unchanged. */
	arena_init(&a);
	pad_job(&f);
	f.fw.elementwise.per_expert_quantize = 1;
	f.fw.elementwise.mx_generic_cast = 1;
	f.gpu.mx_cast_efficiency = 1;
	build(&f, &a, &fwd, &bwd);
	op = fixture_op(&fwd, "expert_fc1_cast");
	cr_assert(op);
	L = op->k.launches;
	cr_assert(near(L, 4));
	g1 = op_time(&f, &fwd, "expert_fc1_cast") - L * f.gpu.kernel_launch_s;
	f.gpu.mx_cast_efficiency = 0.85;
	build(&f, &a, &fwd, &bwd);
	g85 = op_time(&f, &fwd, "expert_fc1_cast") - L * f.gpu.kernel_launch_s;
	cr_assert(fixture_near(g85, g1 / 0.85, 1e-9), "%g %g", g1, g85);
	f.job.training.recompute = RECOMPUTE_SELECTIVE;
	f.job.training.recompute_modules.given = 1;
	f.job.training.recompute_modules.n = 1;
	f.job.training.recompute_modules.v = act;
	build(&f, &a, &fwd, &bwd);
	op = fixture_op(&fwd, "expert_fc2_cast");
	cr_assert(op);
	cr_assert(near(op->k.mem_eff, 0));
	op = fixture_op(&fwd, "expert_fc1_cast");
	cr_assert(near(op->k.mem_eff, 0.85));
	arena_release(&a);
}

/* Ops named name in o, and the first of them (NULL when none). */
static int count_ops(const struct layer_ops *o, const char *name,
		     const struct layer_op **first)
{
	int i, n = 0;

	*first = NULL;
	for (i = 0; i < o->n; i++)
		if (strcmp(o->op[i].name, name) == 0 && n++ == 0)
			*first = &o->op[i];
	return n;
}

Test(moe, weight_scale_swizzle_before_each_weight_gemm)
{
	struct fixture f;
	struct arena a;
	struct layer_ops fwd, bwd;
	struct layer_dims d;
	const struct layer_op *op;
	double u;

	/* Dense GPT layer (h 1024, q 1024, kv 1024, ffn 4096), tp 1,
	 * MXFP8, framework weight_scale_swizzle (TE < 2.18): before each
	 * GEMM that reads a weight, forward (qkv, proj, fc1, fc2) and dgrad
	 * (the same four), one kernel reading and writing the weight's
	 * E8M0 scales, 1 B a 32 elements. The first forward one is qkv's:
	 * 3072 x 1024 / 32 = 98304 B each way, inside the GEMM's call (host
	 * one kernel launch: HOST_FREE). The wgrad GEMMs read no weight. */
	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 2, 64, 1, 1, 1);
	f.job.training.dtype = DTYPE_MXFP8;
	f.fw.elementwise.weight_scale_swizzle = 1;
	layer_dims_from_job(&f.job, &d);
	cr_assert(near(d.w_swizzle_B, 1.0 / 32));
	layer_fwd(&d, NULL, &fwd);
	layer_bwd(&d, NULL, LREC_NONE, &bwd);
	cr_assert_eq(count_ops(&fwd, "scale_swizzle", &op), 4);
	cr_assert(near(op->k.read_B, 98304.0) && near(op->k.write_B, 98304.0),
		  "%g %g", op->k.read_B, op->k.write_B);
	cr_assert(op->k.launches <= 1);
	cr_assert_eq(op->host, HOST_FREE);
	cr_assert_eq(strcmp((op + 1)->name, "qkv"), 0, "%s", (op + 1)->name);
	cr_assert_eq(count_ops(&bwd, "scale_swizzle", &op), 4);
	/* NVFP4: E4M3 scales, 1 B a 16: 196608 B */
	f.job.training.dtype = DTYPE_NVFP4;
	layer_dims_from_job(&f.job, &d);
	layer_fwd(&d, NULL, &fwd);
	cr_assert_eq(count_ops(&fwd, "scale_swizzle", &op), 4);
	cr_assert(near(op->k.read_B, 196608.0));
	/* TE >= 2.18 (swizzled once when cached), per-tensor FP8, bf16:
	 * none */
	f.fw.elementwise.weight_scale_swizzle = 0;
	layer_dims_from_job(&f.job, &d);
	layer_fwd(&d, NULL, &fwd);
	cr_assert_eq(count_ops(&fwd, "scale_swizzle", &op), 0);
	f.fw.elementwise.weight_scale_swizzle = 1;
	f.job.training.dtype = DTYPE_FP8;
	layer_dims_from_job(&f.job, &d);
	layer_fwd(&d, NULL, &fwd);
	cr_assert_eq(count_ops(&fwd, "scale_swizzle", &op), 0);
	/* MoE (every layer), 4 local experts, MXFP8: the grouped GEMM's
	 * experts' scales in one kernel, L u h / 32 B before expert_fc1
	 * (u = 512, or 1024 gated), before expert_fc2, and before each
	 * expert dgrad; 65 tensors would take two launches (64 a kernel,
	 * TE swizzle.cu), the second issued from the same call. */
	arena_init(&a);
	pad_job(&f);
	f.fw.elementwise.weight_scale_swizzle = 1;
	build(&f, &a, &fwd, &bwd);
	layer_dims_from_job(&f.job, &d);
	u = (d.gated ? 2 : 1) * 512.0;
	cr_assert(near(d.moe.local, 4));
	op = fixture_op(&fwd, "expert_fc1");
	cr_assert(op);
	op--;
	cr_assert_eq(strcmp(op->name, "scale_swizzle"), 0);
	cr_assert(near(op->k.read_B, 4 * u * 1024 / 32.0), "%g",
		  op->k.read_B);
	cr_assert(op->k.launches <= 1);
	cr_assert_eq(strcmp((fixture_op(&bwd, "expert_fc1_dgrad") - 1)->name,
			    "scale_swizzle"), 0);
	cr_assert_eq(strcmp((fixture_op(&bwd, "expert_fc2_dgrad") - 1)->name,
			    "scale_swizzle"), 0);
	fwd.n = 0;
	cr_assert_not_null(lop_swizzle(&fwd, PASS_FWD, &d, 1, 65 * 1024.0, 0,
				       1, 65));
	cr_assert_eq(fwd.n, 1);
	cr_assert(near(fwd.op[0].k.launches, 2));
	cr_assert_eq(fwd.op[0].host_kernels, 1);
	/* TE 2.9 (act_scale_swizzle): the expert fc1 forward also swizzles
	 * its input's scales, R h / 32 B more in a second kernel; each
	 * wgrad swizzles its two operands' (fc1: R (h + u) / 32 B, two
	 * kernels), with no weight. */
	f.fw.elementwise.act_scale_swizzle = 1;
	build(&f, &a, &fwd, &bwd);
	layer_dims_from_job(&f.job, &d);
	cr_assert(near(d.x_swizzle_B, 1.0 / 32));
	op = fixture_op(&fwd, "expert_fc1") - 1;
	cr_assert_eq(strcmp(op->name, "scale_swizzle"), 0);
	cr_assert(near(op->k.launches, 2));
	op = fixture_op(&bwd, "expert_fc1_wgrad") - 1;
	cr_assert_eq(strcmp(op->name, "scale_swizzle"), 0);
	cr_assert(near(op->k.launches, 2));
	cr_assert_eq(op->host_kernels, 1);
	arena_release(&a);
}

Test(moe, act_scale_swizzle_swizzles_every_quantized_operand)
{
	struct fixture f;
	struct layer_ops fwd, bwd;
	struct layer_dims d;
	const struct layer_op *op;

	/* Dense GPT layer (T = 4096 tokens, h 1024, qkv 3072), MXFP8, TE
	 * 2.9 (weight and act scale swizzles): qkv's forward swizzles the
	 * weight's and the input's scales, (3072 + 4096) x 1024 / 32 =
	 * 229376 B each way, two kernels, the second from C++ (host one
	 * more); qkv's wgrad its input's (4096 x 1024) and its output
	 * gradient's (4096 x 3072): 4096 x 4096 / 32 = 524288 B, two
	 * kernels; every GEMM has one: 4 forward, 8 backward. */
	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 2, 64, 1, 1, 1);
	f.job.training.dtype = DTYPE_MXFP8;
	f.fw.elementwise.weight_scale_swizzle = 1;
	f.fw.elementwise.act_scale_swizzle = 1;
	layer_dims_from_job(&f.job, &d);
	layer_fwd(&d, NULL, &fwd);
	layer_bwd(&d, NULL, LREC_NONE, &bwd);
	cr_assert_eq(count_ops(&fwd, "scale_swizzle", &op), 4);
	cr_assert(near(op->k.read_B, 229376.0), "%g", op->k.read_B);
	cr_assert(near(op->k.write_B, 229376.0));
	cr_assert(near(op->k.launches, 2));
	cr_assert_eq(op->host_kernels, 1);
	cr_assert_eq(count_ops(&bwd, "scale_swizzle", &op), 8);
	op = fixture_op(&bwd, "qkv_wgrad") - 1;
	cr_assert_eq(strcmp(op->name, "scale_swizzle"), 0);
	cr_assert(near(op->k.read_B, 524288.0), "%g", op->k.read_B);
	cr_assert(near(op->k.launches, 2));
	/* act alone (no weight swizzle): the input's only, 131072 B */
	f.fw.elementwise.weight_scale_swizzle = 0;
	layer_dims_from_job(&f.job, &d);
	layer_fwd(&d, NULL, &fwd);
	cr_assert_eq(count_ops(&fwd, "scale_swizzle", &op), 4);
	cr_assert(near(op->k.read_B, 131072.0), "%g", op->k.read_B);
	cr_assert(op->k.launches <= 1);
}

Test(moe, paged_stash_copies_the_fused_mlps_saved_tensors)
{
	struct fixture f;
	struct arena a;
	struct layer_ops fwd, bwd;
	const struct layer_op *op;
	/* pad_job's layer (h 1024, expert FFN f 512, top-2, ep 2: R = 8192
	 * rows on the GPU), gated (u = 2 f = 1024), MXFP8, the padding off
	 * (Hybrid-EP pads in the paged-stash recipes). A row's saved bytes
	 * (layer_dims.c stash_row_B): FC1 input column-wise, its data and
	 * its e8m0 scales, h (1 + 1/32) = 1056, FC1 output bf16 u 2 = 2048,
	 * probability fp32 4, FC2 input column-wise f (1 + 1/32) = 528:
	 * 3636 B; R 3636 = 29786112 B read and written by 6 copy kernels
	 * after fc2's forward (the stash) and before fc2's backward (the
	 * reload). NVFP4 (e4m3 scales a block of 16): h (1/2 + 1/16) = 576,
	 * 2048, 4, f (1/2 + 1/16) = 288: 2916 B a row, 23887872 B. */
	double n = 8192.0 * 3636, n4 = 8192.0 * 2916;

	arena_init(&a);
	pad_job(&f);
	f.model.gated_mlp = 1;
	f.fw.elementwise.expert_quant_padding = 0;
	build(&f, &a, &fwd, &bwd);
	cr_assert_null(fixture_op(&fwd, "expert_stash"));
	cr_assert_null(fixture_op(&bwd, "expert_stash_reload"));
	f.job.moe.paged_stash = 1;
	build(&f, &a, &fwd, &bwd);
	op = fixture_op(&fwd, "expert_stash");
	cr_assert_not_null(op);
	cr_assert(near(op->k.read_B, n), "read %g B", op->k.read_B);
	cr_assert(near(op->k.write_B, n), "write %g B", op->k.write_B);
	cr_assert(near(op->k.launches, 6));
	cr_assert_eq(fixture_op_index(&fwd, "expert_fc2") + 1,
		     fixture_op_index(&fwd, "expert_stash"));
	op = fixture_op(&bwd, "expert_stash_reload");
	cr_assert_not_null(op);
	cr_assert(near(op->k.read_B, n) && near(op->k.write_B, n));
	cr_assert_lt(fixture_op_index(&bwd, "expert_stash_reload"),
		     fixture_op_index(&bwd, "expert_fc2_grad_cast"));
	f.job.training.dtype = DTYPE_NVFP4;
	build(&f, &a, &fwd, &bwd);
	op = fixture_op(&fwd, "expert_stash");
	cr_assert_not_null(op);
	cr_assert(near(op->k.read_B, n4), "nvfp4 read %g B", op->k.read_B);
	arena_release(&a);
}
