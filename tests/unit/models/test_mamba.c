/*
 * test_mamba.c - a Mamba-2 hybrid (Nemotron 3 Nano) in training: the
 * FLOPs of one Mamba-2 mixer layer (mamba.c) against the closed form,
 * the parameter count against the published total, the per-sequence
 * serving state and the KV cache of the attention layers only.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "base/arena.h"
#include "config/spec_job.h"
#include "config/spec_model.h"
#include "fixture.h"
#include "models/footprint.h"
#include "models/infer.h"
#include "models/layer.h"
#include "models/layer_impl.h"

#define NANO "results/reference/moe/T-MB2606-H100-NEMOTRON3-NANO-FP8.yaml"
#define SERVE "results/reference/inference/" \
	"I-VLLMRECIPE-H200-TP1-NEMOTRON3-NANO-FP8-1024-1024.yaml"

/* Nemotron 3 Nano in bf16, one sequence of 8192 tokens a microbatch, tp 1. */
static const struct job_spec *nano(struct arena *a, const char *const *sets,
				   size_t n)
{
	return fixture_load_job(a, NANO, sets, n);
}

/* One Mamba-2 mixer layer of nano in bf16 without recompute: its
 * dimensions in d and an empty op list (in a) for layer_fwd / layer_bwd. */
static struct layer_ops *nano_layer(struct arena *a, struct layer_dims *d)
{
	static const char *const sets[] = {
		"training.dtype=bf16", "training.recompute=none",
	};
	struct layer_ops *o;

	layer_dims_from_job(nano(a, sets, 2), d);
	o = arena_alloc(a, sizeof(*o));
	cr_assert_not_null(o);
	return o;
}

/*
 * h 2688, H 64 heads of P 64 (d_inner 4096), N 128, G 8, Q 128, T 8192
 * tokens, t 1. in_proj outputs w = 2 d_inner + 2 G N + H = 8192 + 2048 +
 * 64 = 10304.
 * GEMMs forward: in_proj 2 T w h + out_proj 2 T d_inner h
 *   = 2 8192 (10304 + 4096) 2688 = 634,178,764,800.
 * Scan forward: 2 T (Q G N + H P N + H P (Q + N)) (bmm_chunk, chunk_state,
 *   chunk_scan) = 2 8192 (131,072 + 524,288 + 1,048,576) = 27,917,287,424.
 * Forward 662,096,052,224 FLOP.
 * Backward: the GEMMs twice (dgrad and wgrad), 1,268,357,529,600, and
 *   the scan's 10 T H P N + 6 T Q H P + 6 T Q G N (its states recomputed,
 *   dstates, dx, dB, dC, dCB, two bmm_chunk_bwd, ddAcs) = 42,949,672,960
 *   + 25,769,803,776 + 6,442,450,944 = 75,161,927,680: 1,343,519,457,280.
 */
Test(mamba, layer_flops_forward_and_backward)
{
	struct arena a;
	struct layer_dims d;
	struct layer_kind k = { 0, 0, 0, 0, BLOCK_MAMBA, 0 };
	struct layer_ops *o;

	arena_init(&a);
	o = nano_layer(&a, &d);
	cr_assert_eq(d.batch * d.seq, 8192);
	layer_fwd(&d, &k, o);
	fixture_assert_close(layer_ops_flops(o, PASS_FWD), 662096052224.0);
	cr_assert_lt(fixture_op_index(o, "qkv"), 0, "a Mamba layer has no "
		     "attention");
	cr_assert_lt(fixture_op_index(o, "fc1"), 0, "nor an MLP");
	cr_assert_geq(fixture_op_index(o, "ssd_chunk_scan"), 0);
	layer_bwd(&d, &k, LREC_NONE, o);
	fixture_assert_close(layer_ops_flops(o, PASS_BWD), 1343519457280.0);
	arena_release(&a);
}

/*
 * DDP's hook adds of the mixer's small parameters: the gated norm's
 * weight (d_inner = 4096) after the norm's backward; the conv1d weight
 * (c K, c = d_inner + 2 G N = 4096 + 2 x 8 x 128 = 6144, K 4: 24,576)
 * and bias (6144), then A_log, D and dt_bias (H = 64 each), all after
 * the conv's backward, which follows the scan's: Megatron-LM's mixer
 * passes the five into the one autograd Function
 * mamba_split_conv1d_scan_combined, whose backward returns their
 * gradients together, the conv's backward last. The input norm's weight
 * (RMSNorm, h 2688) after norm1's backward. Each add reads 6 n B and
 * writes 4 n B (bf16 gradient, an fp32 main_grad set on the dimensions).
 */
Test(mamba, small_parameters_are_added_by_the_ddp_hook)
{
	struct arena a;
	struct layer_dims d;
	struct layer_kind k = { 0, 0, 0, 0, BLOCK_MAMBA, 0 };
	struct layer_ops *o;
	int at, scan;

	arena_init(&a);
	o = nano_layer(&a, &d);
	cr_assert_eq(d.act_B, 2);
	cr_assert_eq(d.norm_tensors, 1);
	d.grad_B = 4;	/* an fp32 main_grad, whatever the job's framework */
	layer_bwd(&d, &k, LREC_NONE, o);
	cr_assert_eq(fixture_small_grad_adds(o), 5);
	cr_assert_eq(fixture_op_count(o, PASS_BWD, "norm_grad_add"), 2);
	at = fixture_op_index(o, "mamba_norm_bwd");
	cr_assert(at >= 0);
	fixture_assert_grad_add(o, at + 1, "norm_grad_add", 4096);
	at = fixture_op_index(o, "mamba_conv1d_bwd");
	scan = fixture_op_index(o, "ssd_cumsum_bwd");
	cr_assert(scan >= 0 && at > scan, "conv %d, scan %d", at, scan);
	fixture_assert_grad_add(o, at + 1, "conv1d_grad_add", 24576);
	fixture_assert_grad_add(o, at + 2, "conv1d_grad_add", 6144);
	fixture_assert_grad_add(o, at + 3, "ssm_param_grad_add", 64);
	fixture_assert_grad_add(o, at + 4, "ssm_param_grad_add", 64);
	fixture_assert_grad_add(o, at + 5, "ssm_param_grad_add", 64);
	cr_assert_eq(fixture_op_count(o, PASS_BWD, "ssm_param_grad_add"), 3);
	at = fixture_op_index(o, "norm1_bwd");
	cr_assert(at >= 0);
	fixture_assert_grad_add(o, at + 1, "norm_grad_add", 2688);

	/* torch FSDP's flat gradients (fused accumulation, fsdp_n > 0):
	 * no add of any kind */
	d.fsdp_n = 8;
	d.unfused_grad_acc = 0;
	layer_bwd(&d, &k, LREC_NONE, o);
	cr_assert_eq(fixture_small_grad_adds(o), 0);
	cr_assert_eq(fixture_op_count(o, -1, "norm_grad_add"), 0);
	arena_release(&a);
}

/*
 * Parameters (31.6B total, NVIDIA's model card): embedding and head 2 x
 * 131072 x 2688 (+ the final norm 2688) = 704,645,760; 23 Mamba layers
 * of in_proj 2688 x 10304 + out_proj 4096 x 2688 + conv (4096 + 2048)
 * (4 + 1) + A, D, dt_bias 3 x 64 + the gated norm 4096 + the input norm
 * 2688 = 38,744,896 each, 891,132,608; 6 attention layers of q 2688 x
 * 4096, k and v 2 x 2688 x 256, o 4096 x 2688 and a norm 2688 =
 * 23,399,040 each, 140,394,240; 23 MoE layers of 128 experts 2 x 2688 x
 * 1856 (squared ReLU: two matrices) = 1,277,165,568, the shared expert
 * 2 x 2688 x 3712 = 19,955,712, the router 2688 x 128 = 344,064 and a
 * norm 2688: 1,297,468,032 each, 29,841,764,736. Sum 31,577,937,344.
 */
Test(mamba, nano_parameters)
{
	struct arena a;
	const struct job_spec *j;

	arena_init(&a);
	j = nano(&a, NULL, 0);
	fixture_assert_close(footprint_model_params(j), 31577937344.0);
	arena_release(&a);
}

/*
 * A dense hybrid (Nemotron-H 8B: 24 Mamba, 24 MLP, 4 attention layers,
 * M-M-M-M*-... 52 layers) holds every layer's own parameters, not 52 of
 * its first (a Mamba) layer's: footprint.c's uniform-layer shortcut took
 * a hybrid for a model of one layer kind (found by scripts/prop-check.py:
 * params_per_gpu x tp < params). h 4096, d_inner 128 x 64 = 8192, G 8, N
 * 128, K 4, f 21504 (squared ReLU, two matrices), 8 KV heads of 128.
 *   Mamba: in_proj 4096 x (2 8192 + 2 8 128 + 128) = 76,021,760, conv
 *     (8192 + 2048) x (4 + 1) = 51,200, A, D, dt_bias 384, gated norm
 *     8192, out_proj 8192 x 4096 = 33,554,432, input norm 4096:
 *     109,640,064, x 24 = 2,631,361,536.
 *   MLP: 2 x 4096 x 21504 + norm 4096 = 176,164,864, x 24 = 4,227,956,736.
 *   attention: q and o 2 x 4096^2 + k, v 2 x 4096 x 1024 + norm 4096 =
 *     41,947,136, x 4 = 167,788,544.
 *   embedding and head 2 x 131072 x 4096 + final norm 4096 = 1,073,745,920.
 * Total 8,100,852,736 (NVIDIA's model card: 8B), all on one GPU at tp 1
 * pp 1 (before the fix 52 x 109,640,064 + 1,073,745,920 = 6,775,029,248).
 * default.yaml's DGX H100, dp 8, bf16, ZeRO 1: weights 2 B a parameter
 * 16,201,705,472 B, fp32 gradients 4 B 32,403,410,944 B, the distributed
 * optimizer's fp32 master and two moments 12 B / dp 8 = 1.5 B
 * 12,151,279,104 B. At pp 2 the two stages' parameters add up to it.
 */
Test(mamba, dense_hybrid_parameters_per_gpu)
{
	static const char *const sets[] = {
		"model=nemotron-h-8b", "parallelism.tp=1",
		"parallelism.sequence_parallel=false",
		"parallelism.tp_comm_overlap=false",
	};
	static const char *const sets_pp[] = {
		"model=nemotron-h-8b", "parallelism.tp=1",
		"parallelism.sequence_parallel=false",
		"parallelism.tp_comm_overlap=false", "parallelism.pp=2",
	};
	struct arena a;
	const struct job_spec *j;
	struct footprint f, st[2];

	arena_init(&a);
	j = fixture_load_job(&a, "workloads/jobs/default.yaml", sets, 4);
	fixture_assert_close(footprint_model_params(j), 8100852736.0);
	cr_assert_eq(footprint_job(j, 1e12, &f), 0);
	fixture_assert_close(f.params, 8100852736.0);
	fixture_assert_close(f.weights_B, 16201705472.0);
	fixture_assert_close(f.grads_B, 32403410944.0);
	fixture_assert_close(f.optimizer_B, 12151279104.0);
	j = fixture_load_job(&a, "workloads/jobs/default.yaml", sets_pp, 5);
	cr_assert_eq(footprint_job_stages(j, 1e12, &f, st, 2), 0);
	fixture_assert_close(st[0].params + st[1].params, 8100852736.0);
	arena_release(&a);
}

/*
 * Serving state per sequence: 23 Mamba layers x (SSM H P N = 64 x 64 x
 * 128 in fp32, 2,097,152 B, + conv (d_inner + 2 G N)(K - 1) = 6144 x 3
 * in bf16, 36,864 B) = 49,082,368 B. KV cache per token: the 6
 * attention layers only, 2 x 2 KV heads x 128 x 2 B = 1024 B each: 6144
 * B (52 layers would be 53,248).
 */
Test(mamba, nano_state_and_kv_bytes)
{
	struct arena a;
	const struct job_spec *j;

	arena_init(&a);
	j = nano(&a, NULL, 0);
	cr_assert_eq(model_mamba_ssm_B(j->model, 2), 4);
	fixture_assert_close(model_mamba_state_bytes(j->model,
			     model_mamba_ssm_B(j->model, 2), 2), 49082368.0);
	fixture_assert_close(model_kv_bytes_per_token(j->model, 2), 6144.0);
	cr_assert_eq(model_attn_layers(j->model), 6);
	cr_assert_eq(model_layer_block(j->model, 0), BLOCK_MAMBA);
	cr_assert_eq(model_layer_block(j->model, 1), BLOCK_MOE);
	cr_assert_eq(model_layer_block(j->model, 5), BLOCK_ATTN);
	cr_assert(model_layer_moe(j->model, 1) && !model_layer_moe(j->model, 0));
	arena_release(&a);
}

/*
 * Serving (infer_mamba.c): a Mamba layer's weights on one GPU are its
 * 38,744,896 - 2688 (its norm counted apart) parameters, and its state a
 * sequence 2,134,016 B (above, one layer); at tp 2 the heads and groups
 * halve: 64 x 32 x 128 x 4 + (2048 + 1024) x 3 x 2 = 1,048,576 + 18,432
 * = 1,067,008 B. Its decode step reads and writes the state of each
 * decoding sequence: 8 sequences, 8 x 2,097,152 B of SSM state read.
 */
Test(mamba, serving_state_and_decode_ops)
{
	static const char *const tp2[] = {
		"parallelism.tp=2", "system.gpus_per_node=2",
	};
	struct arena a;
	const struct job_spec *j;
	struct infer_dims d;
	struct infer_kind k;
	struct infer_batch b;
	struct infer_ops o;
	const struct infer_op *su;

	arena_init(&a);
	j = fixture_load_job(&a, SERVE, tp2, 2);
	infer_dims_from_job(j, j->system->gpu, &d);
	infer_kind_of(j, 0, &k);
	cr_assert_eq(k.block, BLOCK_MAMBA);
	fixture_assert_close(infer_mamba_state_layer_B(&d), 1067008.0);
	fixture_assert_close(infer_mamba_params(&d) * 2,
			     38744896.0 - 2688.0);
	memset(&b, 0, sizeof(b));
	cr_assert_eq(infer_batch_add(&b, 8, 1, 1000, 0, 1), 0);
	infer_layer_ops(&d, &b, &k, NULL, &o);
	su = fixture_infer_op(&o, "selective_state_update");
	cr_assert_not_null(su);
	fixture_assert_close(su->read_B, 8 * (32.0 * 64 * 128 * 4) +
			     8 * 3072.0 * 2);
	/* the state's bytes both ways: 2 x 8 x 1,048,576 */
	fixture_assert_close(su->ssm_state_B, 16777216.0);
	cr_assert_null(fixture_infer_op(&o, "ssd_chunk_scan"),
		       "no prompt chunk in a decode step");
	arena_release(&a);
}

/* The cost unit's op named `name` (NULL where u has none). */
static const struct infer_cost_op *cost_op(const struct infer_unit *u,
					   const char *name)
{
	int i;

	for (i = 0; i < u->n; i++)
		if (strcmp(u->op[i].name, name) == 0)
			return &u->op[i];
	return NULL;
}

/*
 * The decode state update at the GPU's ssm_update_bandwidth (infer_cost.c
 * ssm_update_cost; configs/gpus/h200.yaml: 2.84 TB/s, vLLM's benchmark of
 * the kernel's default launch configuration). The recipe's H200, tp 1,
 * 1024 decoding sequences: state S = 1024 x 64 x 64 x 128 x 4 =
 * 2,147,483,648 B read and as much written (ssm_state_B 4,294,967,296);
 * x, B, C read 1024 x 6144 x 2 = 12,582,912 B, y written 1024 x 4096 x 2
 * = 8,388,608 B: 4,315,938,816 B in all. Streamed at 4.8 TB/s x 0.87 =
 * 4.176 TB/s that is 1.0335 ms; the state's bytes at 2.84 TB/s instead
 * add 4,294,967,296 x (1 / 2.84e12 - 1 / 4.176e12) = 0.4838 ms: 1.5173 ms
 * plus the launch. Without the key the whole op streams (1.0335 ms plus
 * the launch): the same op 0.4838 ms faster.
 */
Test(mamba, serving_state_update_at_the_measured_rate)
{
	struct arena a;
	const struct job_spec *j;
	struct gpu_spec g;
	struct infer_dims d;
	struct infer_kind k;
	struct infer_batch b;
	struct infer_ops o;
	struct infer_unit u;
	const struct infer_op *su;
	const struct infer_cost_op *c;
	double with_s, stream_s, extra_s = 4294967296.0 *
		(1 / 2.84e12 - 1 / (4.8e12 * 0.87));

	arena_init(&a);
	j = fixture_load_job(&a, SERVE, NULL, 0);
	g = *j->system->gpu;
	fixture_assert_close(g.ssm_update_Bps, 2.84e12);
	infer_dims_from_job(j, &g, &d);
	infer_kind_of(j, 0, &k);
	cr_assert_eq(k.block, BLOCK_MAMBA);
	memset(&b, 0, sizeof(b));
	cr_assert_eq(infer_batch_add(&b, 1024, 1, 1000, 0, 1), 0);
	infer_layer_ops(&d, &b, &k, NULL, &o);
	su = fixture_infer_op(&o, "selective_state_update");
	cr_assert_not_null(su);
	fixture_assert_close(su->ssm_state_B, 4294967296.0);
	fixture_assert_close(su->read_B + su->write_B, 4315938816.0);
	infer_cost(&o, &d, &b, &k, &g, IGRAPH_NONE, &u);
	c = cost_op(&u, "selective_state_update");
	cr_assert_not_null(c);
	with_s = c->time_s - g.kernel_launch_s;
	cr_assert(fixture_near(with_s, 4315938816.0 / (4.8e12 * 0.87) +
			       extra_s, 1e-9), "got %g s", with_s);
	cr_assert(fixture_near(with_s, 1.5173e-3, 1e-4), "got %g s", with_s);
	g.ssm_update_Bps = 0;
	infer_cost(&o, &d, &b, &k, &g, IGRAPH_NONE, &u);
	c = cost_op(&u, "selective_state_update");
	stream_s = c->time_s - g.kernel_launch_s;
	cr_assert(fixture_near(stream_s, 4315938816.0 / (4.8e12 * 0.87),
			       1e-9), "got %g s", stream_s);
	cr_assert(fixture_near(with_s - stream_s, extra_s, 1e-6));
	arena_release(&a);
}

/*
 * Context parallelism (mamba.c cp_pre / cp_post; Megatron-LM@00caa53a
 * mamba_context_parallel.py). Nano at cp 2 (load-balanced) holds s / cp =
 * 4096 tokens: the all-to-alls carry z and x 4096 x 4096 x 2 B =
 * 33,554,432 B each, B and C 4096 x 8 x 128 x 2 = 8,388,608, dt 4096 x 64
 * x 2 = 524,288 and y back 33,554,432; the scan runs 8192 tokens for 32
 * heads and 4 groups, the GEMMs 4096 tokens: every term of the cp 1
 * forward halves, 331,048,026,112 FLOP.
 * At cp 16 the TP rank's 8 groups are fewer than cp: each is repeated r =
 * 2 times (one group a rank), B's all-to-all 512 x 8 x 2 x 128 x 2 =
 * 2,097,152 B; forward FLOP: GEMMs 2 x 512 x 2688 x (10304 + 4096) =
 * 39,636,172,800, the scan 2 x 8192 x (Q G N + H P N + H P (Q + N)) with
 * H 4, G 1 = 2 x 8192 x (16,384 + 32,768 + 65,536) = 1,879,048,192:
 * 41,515,220,992.
 */
Test(mamba, context_parallel_all_to_alls)
{
	static const char *const sets[] = {
		"training.dtype=bf16", "training.recompute=none",
	};
	static const char *const names[6] = {
		"mamba_cp_z_a2a", "mamba_cp_x_a2a", "mamba_cp_b_a2a",
		"mamba_cp_c_a2a", "mamba_cp_dt_a2a", "mamba_cp_y_a2a",
	};
	static const double bytes[6] = {
		33554432, 33554432, 8388608, 8388608, 524288, 33554432,
	};
	struct arena a;
	const struct job_spec *j;
	struct layer_dims d;
	struct layer_kind k = { .block = BLOCK_MAMBA };
	struct layer_ops *o;
	int i;

	arena_init(&a);
	j = nano(&a, sets, 2);
	o = arena_alloc(&a, sizeof(*o));
	cr_assert_not_null(o);
	layer_dims_from_job(j, &d);
	d.cpd.cp = 2;
	d.cpd.load_balance = 1;
	d.seq = 4096;
	layer_fwd(&d, &k, o);
	fixture_assert_close(layer_ops_flops(o, PASS_FWD), 331048026112.0);
	for (i = 0; i < 6; i++) {
		int x = fixture_op_index(o, names[i]);

		cr_assert_geq(x, 0, "%s", names[i]);
		cr_assert_eq(o->op[x].coll, COLL_ALLTOALL);
		cr_assert_eq(o->op[x].group, LG_CP);
		fixture_assert_close(o->op[x].coll_B, bytes[i]);
	}
	cr_assert_geq(fixture_op_index(o, "mamba_cp_undo_lb"), 0);
	cr_assert_lt(fixture_op_index(o, "mamba_cp_bc_repeat"), 0);
	layer_bwd(&d, &k, LREC_NONE, o);
	cr_assert_geq(fixture_op_index(o, "mamba_cp_dy_a2a"), 0);
	cr_assert_geq(fixture_op_index(o, "mamba_cp_dz_a2a"), 0);

	d.cpd.cp = 16;
	d.seq = 512;
	layer_fwd(&d, &k, o);
	fixture_assert_close(layer_ops_flops(o, PASS_FWD), 41515220992.0);
	i = fixture_op_index(o, "mamba_cp_b_a2a");
	cr_assert_geq(i, 0);
	fixture_assert_close(o->op[i].coll_B, 2097152);
	cr_assert_geq(fixture_op_index(o, "mamba_cp_bc_repeat"), 0);
	arena_release(&a);
}

/*
 * A hybrid's MTP module as its mtp_hybrid_override_pattern builds it
 * (Nemotron 3 Super's "*E": an attention block, then an MoE block).
 * On Nemotron 3 Nano's shapes with that pattern: the module's parameters
 * are an attention block's, an MoE block's, two norms (2 h) and the
 * 2h x h projection, where without the key they are one layer of the
 * last layer's kind (an 'E' block); the forward runs both blocks' ops
 * (the attention core once), the backward their backwards.
 */
Test(mamba, mtp_module_of_its_pattern)
{
	static const char *const with[] = {
		"training.dtype=bf16", "training.recompute=none",
		"model.num_nextn_predict_layers=1", "moe.mtp_layers=1",
		"model.mtp_hybrid_override_pattern=\"*E\"",
	};
	static const char *const without[] = {
		"training.dtype=bf16", "training.recompute=none",
		"model.num_nextn_predict_layers=1", "moe.mtp_layers=1",
	};
	struct arena a;
	const struct job_spec *j, *j0;
	struct layer_dims d;
	struct layer_kind k[MODEL_MTP_BLOCKS], attn = { 0, 0, 0, 0, BLOCK_ATTN, 0 };
	struct layer_kind moe = { 1, 0, 0, 0, BLOCK_MOE, 0 };
	struct layer_ops *o;
	double dn, ex, dn0, ex0, ad, ae, md, me, h = 2688;
	int i, n_attn = 0;

	arena_init(&a);
	j = nano(&a, with, 5);
	j0 = nano(&a, without, 4);
	cr_assert_eq(layer_mtp_kinds(j->model, k), 2);
	cr_assert_eq(k[0].block, BLOCK_ATTN);
	cr_assert_eq(k[1].block, BLOCK_MOE);
	cr_assert(k[1].moe);
	cr_assert_eq(layer_mtp_kinds(j0->model, k), 1);
	cr_assert_eq(k[0].block, BLOCK_MOE);	/* the pattern's last, 'E' */
	layer_dims_from_job(j, &d);
	footprint_mtp_params(j, &d, &dn, &ex);
	footprint_mtp_params(j0, &d, &dn0, &ex0);
	layer_kind_params(&d, &attn, 0, 0, &ad, &ae);
	layer_kind_params(&d, &moe, 0, 0, &md, &me);
	fixture_assert_close(dn, ad + md + 2 * h + 2 * h * h);
	fixture_assert_close(ex, ae + me);
	fixture_assert_close(dn - dn0, ad);	/* the attention block more */
	o = arena_alloc(&a, sizeof(*o));
	cr_assert_not_null(o);
	layer_mtp_fwd(&d, (struct layer_kind[]){ attn, moe }, 2, 1, o);
	for (i = 0; i < o->n; i++)
		n_attn += o->op[i].kind == LOP_KERNEL &&
			  strcmp(o->op[i].name, "attn") == 0;
	cr_assert_eq(n_attn, 1);
	arena_release(&a);
}
