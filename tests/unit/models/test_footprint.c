/*
 * test_footprint.c - memory per GPU against Korthikanti et al. 2022 and
 * the ZeRO paper.
 */
#include <criterion/criterion.h>
#include <math.h>

#include "base/arena.h"
#include "base/diag.h"
#include "fixture.h"
#include "moe_case.h"
#include "models/footprint.h"
#include "models/route.h"
#include "models/sched.h"
#include "models/split.h"

static void assert_close(double got, double want)
{
	cr_assert(fabs(got - want) <= 1e-9 * fabs(want), "got %.6g, want %.6g",
		  got, want);
}

/* Korthikanti's setting: MHA, f = 4h, dropout, unfused attention,
 * 16-bit. h 1024, a 16, s 2048, b 2. */
static void kor_dims(struct layer_dims *d, int64_t tp, int sp)
{
	struct fixture f;

	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 2, 64, 1, tp, 1);
	f.job.parallelism.sequence_parallel = sp;
	f.job.training.dropout = 1;
	f.job.training.attention = ATTN_UNFUSED;
	layer_dims_from_job(&f.job, d);
}

Test(footprint, korthikanti_tensor_parallel)
{
	struct layer_dims d;
	double s = 2048, b = 2, h = 1024, a = 16, t = 4;

	/* eq. 2: s b h (10 + 24/t + 5 a s / (h t))
	 * = 4194304 * (10 + 6 + 40) = 234881024 B. */
	kor_dims(&d, 4, 0);
	assert_close(footprint_layer_act_B(&d, LREC_NONE),
		     s * b * h * (10 + 24 / t + 5 * a * s / (h * t)));
}

Test(footprint, korthikanti_sequence_parallel)
{
	struct layer_dims d;
	double s = 2048, b = 2, h = 1024, a = 16, t = 4;

	/* eq. 5: s b h / t (34 + 5 a s / h) = 1048576 * 194 = 203423744 B. */
	kor_dims(&d, 4, 1);
	assert_close(footprint_layer_act_B(&d, LREC_NONE),
		     s * b * h / t * (34 + 5 * a * s / h));
	/* selective recompute with SP: 34 s b h / t = 35651584 B. */
	assert_close(footprint_layer_act_B(&d, LREC_SELECTIVE),
		     34 * s * b * h / t);
	/* full recompute: the layer input, 2 s b h / t = 2097152 B. */
	assert_close(footprint_layer_act_B(&d, LREC_FULL), 2 * s * b * h / t);
}

Test(footprint, korthikanti_no_parallelism)
{
	struct layer_dims d;
	double s = 2048, b = 2, h = 1024, a = 16;

	/* t = 1: s b h (34 + 5 a s / h) = 4194304 * 194 = 813694976 B. */
	kor_dims(&d, 1, 0);
	assert_close(footprint_layer_act_B(&d, LREC_NONE),
		     s * b * h * (34 + 5 * a * s / h));
}

Test(footprint, flash_attention_drops_the_scores)
{
	struct layer_dims d;
	double s = 2048, b = 2, h = 1024, a = 16, t = 4;

	/* Flash keeps a log-sum-exp per row and head instead of the s^2
	 * scores: 34 s b h / t + 4 B b (a/t) s = 35651584 + 65536 B. */
	kor_dims(&d, 4, 1);
	d.unfused_attn = 0;
	assert_close(footprint_layer_act_B(&d, LREC_NONE),
		     34 * s * b * h / t + 4 * b * (a / t) * s);
}

Test(footprint, bytes_per_parameter_by_zero_stage)
{
	struct fixture f;
	double w, g, o;

	/* Megatron mixed precision, Adam, fp32 grads, dp 8 (8 GPUs, tp 1):
	 * ZeRO-0 2 + 4 + 12 = 18 B; ZeRO-1 (distributed optimizer)
	 * 6 + 12/8 = 7.5 B; ZeRO-2 2 + (4 + 12)/8 = 4 B; ZeRO-3 18/8. */
	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 1, 64, 1, 1, 1);
	footprint_per_param(&f.job, &w, &g, &o);
	assert_close(w + g + o, 18);
	f.job.training.zero_stage = 1;
	footprint_per_param(&f.job, &w, &g, &o);
	assert_close(w + g + o, 6 + 12.0 / 8);
	f.job.training.zero_stage = 2;
	footprint_per_param(&f.job, &w, &g, &o);
	assert_close(w + g + o, 2 + 16.0 / 8);
	/* Megatron-Core DDP (grad_buffer_full): ZeRO-2 keeps the whole fp32
	 * grad buffer, 2 + 4 + 12/8 = 7.5 B, ZeRO-1's; ZeRO-3 shards it. */
	f.fw.grad_buffer_full = 1;
	footprint_per_param(&f.job, &w, &g, &o);
	assert_close(g, 4);
	assert_close(w + g + o, 6 + 12.0 / 8);
	f.job.training.zero_stage = 3;
	footprint_per_param(&f.job, &w, &g, &o);
	assert_close(w + g + o, 18.0 / 8);
	f.fw.grad_buffer_full = 0;
	footprint_per_param(&f.job, &w, &g, &o);
	assert_close(w + g + o, 18.0 / 8);
}

/* Peak stored activations of a rank, without the one-layer transient. */
static double in_flight_layers(struct fixture *f, int64_t rank)
{
	struct layer_dims d;
	struct sched_live live;
	int64_t split[16];
	double act;
	double per_layer, transient;
	int64_t i, stages = f->job.parallelism.pp * f->job.parallelism.vpp;

	for (i = 0; i < stages; i++)
		split[i] = f->model.num_hidden_layers / stages;
	layer_dims_from_job(&f->job, &d);
	per_layer = footprint_layer_act_B(&d, LREC_FULL);
	transient = footprint_layer_act_B(&d, LREC_NONE);
	cr_assert_eq(sched_live_init(&live, f->job.parallelism.schedule,
				     f->job.parallelism.pp, f->job.parallelism.vpp,
				     job_microbatches(&f->job), rank, 0), 0);
	act = footprint_rank_act_B(&f->job, &d, split, rank, &live);
	sched_live_release(&live);
	return (act - transient) / per_layer;
}

Test(footprint, one_f_one_b_keeps_p_microbatches)
{
	struct fixture f;

	/* 8 layers on pp 4 (2 each), 8 GPUs with tp 2 -> dp 1, so
	 * m = 32 / (1 * 1) = 32: rank 0 keeps p = 4 microbatches
	 * of 2 layers = 8 layer-inputs (Korthikanti sec. 4.2.3). */
	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 1, 32, 1, 2, 4);
	f.job.training.recompute = RECOMPUTE_FULL;
	cr_assert_float_eq(in_flight_layers(&f, 0), 8, 1e-9);
}

Test(footprint, gpipe_keeps_all_microbatches)
{
	struct fixture f;

	/* GPipe: all m = 32 microbatches of 2 layers = 64 layer-inputs. */
	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 1, 32, 1, 2, 4);
	f.job.training.recompute = RECOMPUTE_FULL;
	f.job.parallelism.schedule = SCHED_GPIPE;
	cr_assert_float_eq(in_flight_layers(&f, 0), 64, 1e-9);
}

Test(footprint, local_batches_keep_one_run_in_flight)
{
	struct fixture f;
	struct footprint one, runs, eight;

	/* GPipe keeps every microbatch of its schedule: one schedule of
	 * m = 32 holds 32 x 2 = 64 layer-inputs on rank 0; a local batch of
	 * 8 (training.local_batch_size: 4 runs of 8, each drained before
	 * the next) holds 8 x 2 = 16, as a step of 8 microbatches does
	 * (global_batch_size 8): the same activations, a quarter of the
	 * checkpoints of one schedule of 32. */
	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 1, 32, 1, 2, 4);
	f.job.training.recompute = RECOMPUTE_FULL;
	f.job.parallelism.schedule = SCHED_GPIPE;
	cr_assert_eq(footprint_job(&f.job, 80e9, &one), 0);
	f.job.training.local_batch_size = 8;
	cr_assert_eq(job_schedule_runs(&f.job), 4);
	cr_assert_eq(footprint_job(&f.job, 80e9, &runs), 0);
	f.job.training.local_batch_size = 0;
	f.job.training.global_batch_size = 8;
	cr_assert_eq(footprint_job(&f.job, 80e9, &eight), 0);
	cr_assert_float_eq(runs.activations_B, eight.activations_B, 1e-3);
	cr_assert(runs.activations_B < one.activations_B,
		  "runs %g B, one schedule %g B", runs.activations_B,
		  one.activations_B);
}

Test(footprint, interleaving_keeps_more)
{
	struct fixture f;

	/* pp 4, vpp 2, 8 layers (1 per chunk), m = 32: Korthikanti's
	 * L (1 + (p-1)/(p v)) = 8 * (1 + 3/8) = 11 layer-inputs. */
	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 1, 32, 1, 2, 4);
	f.job.training.recompute = RECOMPUTE_FULL;
	f.job.parallelism.vpp = 2;
	f.job.parallelism.schedule = SCHED_INTERLEAVED;
	cr_assert_float_eq(in_flight_layers(&f, 0), 11, 1e-9);
}

Test(footprint, whole_job)
{
	struct fixture f;
	struct footprint fp;
	double per_rank_params;

	/* 8 GPUs, tp 8: one rank holds 8 layers of 12 h^2 + 4h, the
	 * embedding (V + s) h and the head's final norm 2h (the LM head is
	 * untied: + V h), all / 8, at 18 B each. */
	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 1, 8, 1, 8, 1);
	cr_assert_eq(footprint_job(&f.job, 80e9, &fp), 0);
	per_rank_params = (8 * (12 * 1024.0 * 1024 + 4 * 1024) +
			   (51200 + 2048) * 1024.0 + 51200 * 1024.0 +
			   2 * 1024) / 8;
	cr_assert_float_eq(fp.params, per_rank_params, 1e-3);
	cr_assert_float_eq(fp.weights_B + fp.grads_B + fp.optimizer_B,
			   18 * per_rank_params, 1);
	cr_assert_float_eq(fp.peak_B, fp.weights_B + fp.grads_B +
			   fp.optimizer_B + fp.activations_B + fp.workspace_B, 1);
	cr_assert(fp.fits);
	cr_assert_eq(footprint_job(&f.job, fp.peak_B - 1, &fp), 0);
	cr_assert(!fp.fits);
}

Test(footprint, tied_embedding_counted_once_per_gpu)
{
	struct fixture f;
	struct layer_dims d;
	int64_t halves[2] = {4, 4}, whole[1] = {8};
	double h = 1024, V = 51200, s = 2048;
	double layer = 12 * h * h + 4 * h;	/* as in whole_job */

	/* Tied embeddings: the LM head's V h matrix is the embedding's.
	 * The whole model counts it once: 8 layers, the embedding (V + s) h
	 * and the head's final norm 2 h. */
	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 1, 8, 1, 4, 2);
	f.model.tie_word_embeddings = 1;
	layer_dims_from_job(&f.job, &d);
	assert_close(footprint_model_params(&f.job),
		     8 * layer + (V + s) * h + 2 * h);
	/* pp 2, tp 4: rank 0 holds 4 layers and the embedding, rank 1 four
	 * layers, its own copy of the matrix and the final norm; / 4 each. */
	assert_close(footprint_rank_params(&f.job, &d, halves, 0),
		     (4 * layer + (V + s) * h) / 4);
	assert_close(footprint_rank_params(&f.job, &d, halves, 1),
		     (4 * layer + V * h + 2 * h) / 4);
	/* pp 1, tp 8: one GPU holds both ends and the matrix once. */
	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 1, 8, 1, 8, 1);
	f.model.tie_word_embeddings = 1;
	layer_dims_from_job(&f.job, &d);
	assert_close(footprint_rank_params(&f.job, &d, whole, 0),
		     (8 * layer + (V + s) * h + 2 * h) / 8);
}

Test(footprint, optimizer_states_in_their_dtype)
{
	struct fixture f;
	struct footprint_param_bytes b;
	double w, g, o;

	/* Plain PyTorch (bf16 parameters and gradients, no master copy):
	 * AdamW keeps its two moments in bf16, 2 x 2 B, so 2 + 2 + 4 = 8 B
	 * per parameter, not the 2 + 2 + 8 of fp32 moments. */
	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 1, 64, 1, 1, 1);
	f.fw.grad_dtype = DTYPE_BF16;
	f.fw.master_weights = 0;
	f.fw.optimizer_state_dtype = DTYPE_BF16;
	footprint_param_bytes(&f.job, &b);
	assert_close(b.weights_B, 2);
	assert_close(b.grads_B, 2);
	cr_assert_eq(b.master_B, 0);
	assert_close(b.states_B, 4);
	footprint_per_param(&f.job, &w, &g, &o);
	assert_close(w + g + o, 8);
	/* SGD: one momentum buffer, 2 B. */
	f.job.training.optimizer = OPT_SGD;
	footprint_param_bytes(&f.job, &b);
	assert_close(b.states_B, 2);
}

Test(footprint, fsdp_gathers_the_largest_unit)
{
	struct fixture f;
	struct footprint fp;
	double h = 1024, V = 51200, s = 2048, W = 2;

	/* ZeRO-3, 8 GPUs (tp 1, pp 1, dp 8): two units are gathered at once,
	 * each as large as the largest this GPU gathers, the embedding with
	 * its learned positions, (V + s) h = 54.5e6 parameters (a layer is
	 * 12 h^2 + 4 h = 12.6e6, the head V h + 2 h), at W = 2 B unsharded:
	 * workspace = 1 GiB + 2 (V + s) h W. */
	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 1, 64, 1, 1, 1);
	f.job.training.zero_stage = 3;
	cr_assert_eq(footprint_job(&f.job, 80e9, &fp), 0);
	assert_close(fp.workspace_B, 1073741824.0 + 2 * (V + s) * h * W);
	/* Three units in flight: 3 (V + s) h W. */
	f.fw.fsdp_prefetch_units = 3;
	cr_assert_eq(footprint_job(&f.job, 80e9, &fp), 0);
	assert_close(fp.workspace_B, 1073741824.0 + 3 * (V + s) * h * W);
}

Test(footprint, fsdp_without_reshard_holds_every_unit)
{
	struct fixture f;
	struct footprint fp;
	double h = 1024, V = 51200, s = 2048, W = 2, L = 8;
	double params = (V + s) * h + L * (12 * h * h + 4 * h) + V * h + 2 * h;

	/* The job above with FSDP2's reshard_after_forward False (NeMo
	 * AutoModel's MoE parallelizer): at the end of the forward every
	 * unit is gathered, the embedding with its positions (V + s) h, 8
	 * layers of 12 h^2 + 4 h and the head V h + 2 h = 207.4e6
	 * parameters at W = 2 B: workspace 1 GiB + 2 x 207.4e6 B (more
	 * than two units' 2 (V + s) h W). */
	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 1, 64, 1, 1, 1);
	f.job.training.zero_stage = 3;
	f.fw.fsdp_reshard_after_forward = 0;
	cr_assert_eq(footprint_job(&f.job, 80e9, &fp), 0);
	assert_close(fp.workspace_B, 1073741824.0 + params * W);
	/* Torch pipelining's no-sync at pp 1 changes nothing; resharding
	 * after the forward, two units as above. */
	f.fw.fsdp_reshard_after_forward = 1;
	f.fw.fsdp_pp_no_sync = 1;
	cr_assert_eq(footprint_job(&f.job, 80e9, &fp), 0);
	assert_close(fp.workspace_B, 1073741824.0 + 2 * (V + s) * h * W);
}

Test(footprint, te_cross_entropy_keeps_the_logits_in_their_dtype)
{
	struct fixture f;
	struct layer_dims d;
	double T = 2048 * 2, h = 1024, t = 4, V = 51200, B = 2;

	/* Korthikanti's dims with SP: the last stage keeps the final norm
	 * input and the LM head input, T/t h B each, and an fp32 softmax,
	 * T V/t 4 B: 2 * 1024 * 1024 * 2 + 4096 * 12800 * 4 = 4194304 +
	 * 209715200 = 213909504 B. */
	kor_dims(&d, 4, 1);
	assert_close(footprint_head_act_B(&d),
		     2 * T / t * h * B + T * V / t * 4);
	/* Transformer Engine's in-place loss keeps the bf16 logits, T V/t
	 * B: 4194304 + 104857600 = 109051904 B. Only with the fused loss. */
	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 2, 64, 1, 4, 1);
	f.job.parallelism.sequence_parallel = 1;
	f.fw.cross_entropy_in_place = 1;
	layer_dims_from_job(&f.job, &d);
	cr_assert_eq(d.ce_in_place, 0);
	f.fw.fused_cross_entropy = 1;
	layer_dims_from_job(&f.job, &d);
	cr_assert_eq(d.ce_in_place, 1);
	assert_close(footprint_head_act_B(&d),
		     2 * T / t * h * B + T * V / t * B);
}

Test(footprint, moe_probs_in_activation_drop_the_fc2_output)
{
	struct moe_case m;
	double R = 4096 * 2, h = 1024, B = 2, before;

	/* 8 experts of width 512, top-2, ep 1: R = T k = 8192 rows. With
	 * the probabilities applied in the activation (Megatron-Core >=
	 * 0.13) unpermute keeps nothing, and the weighted SwiGLU one fp32
	 * probability a row: R (h B - 4) = 8192 * 2044 = 16744448 B less. */
	moe_case_init(&m, 8, 2, 512, 1);
	moe_case_dims(&m);
	cr_assert_eq(m.d.moe.rows, R);
	before = footprint_kind_act_B(&m.d, &m.kind, LREC_NONE);
	m.f.fw.moe_probs_in_activation = 1;
	moe_case_dims(&m);
	assert_close(before - footprint_kind_act_B(&m.d, &m.kind, LREC_NONE),
		     R * (h * B - 4));
	moe_case_release(&m);
}

Test(footprint, fsdp_expert_grads_in_their_reduce_dtype)
{
	struct fixture f;
	double w, g, o;

	/* Megatron mixed precision (fp32 grads, 4 B), ZeRO 3, the routed
	 * experts sharded over edp 4: 4 / 4 = 1 B of gradient a parameter.
	 * With fsdp_expert_reduce_dtype bf16 (FSDP2 without a policy: the
	 * sharded gradient in the parameters' dtype, foreach_reduce's cast
	 * to orig_dtype) 2 / 4 = 0.5 B; the weights (2 / 4) and optimizer
	 * (12 / 4: fp32 master 4 + Adam's two fp32 moments 8) stay. Outside
	 * ZeRO 3 the key is
	 * unread: ZeRO 1 keeps the full fp32 gradient, 4 B. */
	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 1, 64, 1, 1, 1);
	f.job.training.zero_stage = 3;
	f.job.parallelism.edp = 4;
	footprint_expert_per_param(&f.job, &w, &g, &o);
	assert_close(g, 1);
	f.fw.fsdp_expert_reduce_dtype = DTYPE_BF16;
	footprint_expert_per_param(&f.job, &w, &g, &o);
	assert_close(g, 0.5);
	assert_close(w, 0.5);
	assert_close(o, 3);
	f.job.training.zero_stage = 1;
	footprint_expert_per_param(&f.job, &w, &g, &o);
	assert_close(g, 4);
}

/* The last rank's stored activations (transient included). */
static double rank_act(struct fixture *f, int64_t rank)
{
	struct layer_dims d;
	struct sched_live live;
	int64_t split[16];
	double act;
	int64_t i, stages = f->job.parallelism.pp * f->job.parallelism.vpp;

	for (i = 0; i < stages; i++)
		split[i] = f->model.num_hidden_layers / stages;
	layer_dims_from_job(&f->job, &d);
	cr_assert_eq(sched_live_init(&live, f->job.parallelism.schedule,
				     f->job.parallelism.pp, f->job.parallelism.vpp,
				     job_microbatches(&f->job), rank, 0), 0);
	act = footprint_rank_act_B(&f->job, &d, split, rank, &live);
	sched_live_release(&live);
	return act;
}

Test(footprint, deferred_head_wgrad_holds_its_buffers)
{
	struct fixture f;
	double base, all, three, first;
	/* h 1024, V 65536, s 2048, b 1, tp 1: a deferred microbatch holds
	 * the head's input, 2048 x 1024 x 2 B = 4 MiB, and its output
	 * gradient, 2048 x 65536 x 2 B = 256 MiB: 272,629,760 B. */
	const double buf = 2048.0 * 1024 * 2 + 2048.0 * 65536 * 2;

	/* 4 layers on pp 2, 8 GPUs, gbs 32: dp 4, m = 8, 1F1B. The last
	 * rank runs F0 B0 F1 B1 ...: one microbatch w live after each
	 * forward (w holds the head's fp32 loss softmax, 512 MiB, > buf).
	 * Deferring all 8: after F7 it holds w + 7 buf, after B7 8 buf, so
	 * the peak grows by 7 buf; the first 3 only: by 3 buf (w + 3 buf
	 * from F3 on); rank 0 holds no head: unchanged. */
	fixture_gpt(&f, 4, 1024, 16, 65536, 2048, 1, 32, 1, 1, 2);
	base = rank_act(&f, 1);
	first = rank_act(&f, 0);
	f.job.parallelism.defer_embedding_wgrad = 1;
	all = rank_act(&f, 1);
	f.job.parallelism.wgrad_deferral_limit = 3;
	three = rank_act(&f, 1);
	cr_assert_float_eq(all - base, 7 * buf, 1e-3 * buf,
			   "all: +%.0f B", all - base);
	cr_assert_float_eq(three - base, 3 * buf, 1e-3 * buf,
			   "three: +%.0f B", three - base);
	cr_assert_float_eq(rank_act(&f, 0), first, 1e-6);
}

Test(footprint, dense_first_moe_layers_counted_by_their_kind)
{
	struct fixture f;
	struct layer_dims d;
	struct footprint fp, per[2];
	int64_t split[2] = { 2, 2 };
	double dense0, ex0, dense1, ex1, embed, head;

	/* 4 layers, layer 0 dense (first_k_dense_replace 1), 1-3 MoE of 8
	 * experts, pp 2 (tp 1, ep 1): rank 0 holds layers 0 and 1 and the
	 * embedding, rank 1 layers 2 and 3 and the head. job_footprint
	 * shares a layer's figures between layers of one kind (moe,
	 * linear, block): rank 0 must count one dense and one MoE layer,
	 * rank 1 two MoE layers (a dense layer has no experts: ex0 = 0). */
	fixture_moe(&f, 8, 2, 512, 1);
	f.model.first_k_dense_replace = 1;
	f.job.parallelism.pp = 2;
	layer_dims_from_job(&f.job, &d);
	footprint_layer_params(&f.job, &d, 0, &dense0, &ex0);
	footprint_layer_params(&f.job, &d, 1, &dense1, &ex1);
	embed = footprint_unit_params(&f.job, &d, UNIT_EMBED, 0);
	head = footprint_unit_params(&f.job, &d, UNIT_HEAD, 0);
	cr_assert_eq(ex0, 0);
	cr_assert(ex1 > 0);
	cr_assert_eq(footprint_job_stages(&f.job, 1e15, &fp, per, 2), 0);
	assert_close(per[0].params, dense0 + dense1 + ex1 + embed);
	assert_close(per[1].params, 2 * (dense1 + ex1) + head);
	/* the public per-rank sum, which lists no slots, agrees */
	assert_close(footprint_rank_params(&f.job, &d, split, 0),
		     per[0].params);
	assert_close(footprint_rank_params(&f.job, &d, split, 1),
		     per[1].params);
}

Test(footprint, eager_expert_activation_keeps_its_products)
{
	struct moe_case m;
	double R = 4096 * 2, fe = 512, B = 2, fused, eager, rc_fused;

	/* 8 experts of width 512, top-2, ep 1: R = 8192 rows. The eager
	 * activation with the probabilities in it keeps act(x_glu),
	 * x_linear + offset and y (footprint.c eager_act_B): 3 R f B =
	 * 3 * 8192 * 512 * 2 = 25165824 B more a layer; recomputing
	 * moe_act drops them with the fc2 input, so the selective
	 * footprints are equal. */
	moe_case_init(&m, 8, 2, 512, 1);
	m.f.model.gated_mlp = 1;
	m.f.fw.moe_probs_in_activation = 1;
	moe_case_dims(&m);
	cr_assert_eq(m.d.moe.rows, R);
	cr_assert_eq(m.d.gated, 1);
	fused = footprint_kind_act_B(&m.d, &m.kind, LREC_NONE);
	m.d.rc_mods = 1u << RCM_MOE_ACT;
	rc_fused = footprint_kind_act_B(&m.d, &m.kind, LREC_SELECTIVE);
	m.f.fw.elementwise.eager_activation = 1;
	moe_case_dims(&m);
	cr_assert_eq(m.d.eager_act, 1);
	eager = footprint_kind_act_B(&m.d, &m.kind, LREC_NONE);
	assert_close(eager - fused, 3 * R * fe * B);
	m.d.rc_mods = 1u << RCM_MOE_ACT;
	assert_close(footprint_kind_act_B(&m.d, &m.kind, LREC_SELECTIVE),
		     rc_fused);
	moe_case_release(&m);
}

Test(footprint, eager_dense_glu_keeps_the_activation_output)
{
	struct fixture f;
	struct layer_dims d;
	double T = 2048 * 2, ffn = 4096, B = 2, fused, eager, rc_fused;

	/* h 1024, f 4096 (fixture: 4h), gated, s 2048, b 2, tp 1: T = 4096
	 * tokens. Eager act(g) * u keeps act(g), T f B = 4096 * 4096 * 2 =
	 * 33554432 B a layer beyond the fused kernel (footprint.c
	 * eager_glu_B); selective recompute of the MLP drops it with the
	 * rest, full recompute keeps the layer input only (unchanged). */
	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 2, 64, 1, 1, 1);
	f.model.gated_mlp = 1;
	layer_dims_from_job(&f.job, &d);
	cr_assert_eq(d.gated, 1);
	cr_assert_eq(d.eager_act, 0);
	fused = footprint_layer_act_B(&d, LREC_NONE);
	d.rc_mods = 1u << RCM_MLP;
	rc_fused = footprint_layer_act_B(&d, LREC_SELECTIVE);
	f.fw.elementwise.eager_activation = 1;
	layer_dims_from_job(&f.job, &d);
	cr_assert_eq(d.eager_act, 1);
	eager = footprint_layer_act_B(&d, LREC_NONE);
	assert_close(eager - fused, T * ffn * B);
	assert_close(footprint_layer_act_B(&d, LREC_FULL), T * 1024 * B);
	d.rc_mods = 1u << RCM_MLP;
	assert_close(footprint_layer_act_B(&d, LREC_SELECTIVE), rc_fused);
	/* ungated: no halves, nothing more: eager == fused */
	f.model.gated_mlp = 0;
	f.fw.elementwise.eager_activation = 0;
	layer_dims_from_job(&f.job, &d);
	fused = footprint_layer_act_B(&d, LREC_NONE);
	f.fw.elementwise.eager_activation = 1;
	layer_dims_from_job(&f.job, &d);
	cr_assert_eq(d.eager_act, 0);
	assert_close(footprint_layer_act_B(&d, LREC_NONE), fused);
}

Test(footprint, eager_moe_glu_keeps_the_activation_output)
{
	struct moe_case m;
	double R = 4096 * 2, T = 4096, fe = 512, fs = 1024, B = 2;
	double fused, eager, rc_fused;

	/* 8 experts of width 512, top-2, ep 1: R = 8192 rows; a shared
	 * expert of width 1024 over the T = 4096 tokens; probabilities
	 * applied after the experts (unpermute). Eager act(g) * u keeps
	 * act(g): routed R fe B = 8192 * 512 * 2 = 8388608 B, shared T fs B
	 * = 4096 * 1024 * 2 = 8388608 B more a layer; recomputing moe_act
	 * and the shared experts drops both, so those selective footprints
	 * are equal. */
	moe_case_init(&m, 8, 2, 512, 1);
	m.f.model.gated_mlp = 1;
	m.f.model.shared_expert_intermediate_size = 1024;
	moe_case_dims(&m);
	cr_assert_eq(m.d.moe.rows, R);
	cr_assert_eq(m.d.moe.shared_ffn, fs);
	fused = footprint_kind_act_B(&m.d, &m.kind, LREC_NONE);
	m.d.rc_mods = 1u << RCM_MOE_ACT | 1u << RCM_SHARED_EXPERTS;
	rc_fused = footprint_kind_act_B(&m.d, &m.kind, LREC_SELECTIVE);
	m.f.fw.elementwise.eager_activation = 1;
	moe_case_dims(&m);
	eager = footprint_kind_act_B(&m.d, &m.kind, LREC_NONE);
	assert_close(eager - fused, R * fe * B + T * fs * B);
	m.d.rc_mods = 1u << RCM_MOE_ACT | 1u << RCM_SHARED_EXPERTS;
	assert_close(footprint_kind_act_B(&m.d, &m.kind, LREC_SELECTIVE),
		     rc_fused);
	moe_case_release(&m);
}

Test(footprint, clamped_glu_keeps_the_clamped_halves)
{
	struct moe_case m;
	double R = 4096 * 2, fe = 512, B = 2, plain, fused, eager_plain;
	double rc_plain;

	/* gpt-oss's clamped GLU (swiglu_limit 7) with its clamps as
	 * kernels, probabilities in the activation: the clamps keep the fc1
	 * output (already kept) and the fused function saves their cat, R u
	 * B = 8192 * 1024 * 2 = 16777216 B more a layer. Eager, the
	 * activation keeps the clamped gate instead, R fe B = 8388608 B.
	 * Recomputing moe_act drops either. */
	moe_case_init(&m, 8, 2, 512, 1);
	m.f.model.gated_mlp = 1;
	m.f.fw.moe_probs_in_activation = 1;
	moe_case_dims(&m);
	plain = footprint_kind_act_B(&m.d, &m.kind, LREC_NONE);
	m.d.rc_mods = 1u << RCM_MOE_ACT;
	rc_plain = footprint_kind_act_B(&m.d, &m.kind, LREC_SELECTIVE);
	m.f.model.swiglu_limit = 7;
	m.f.fw.elementwise.glu_clamp_kernels = 1;
	moe_case_dims(&m);
	cr_assert_eq(m.d.moe.clamp_ops, 1);
	fused = footprint_kind_act_B(&m.d, &m.kind, LREC_NONE);
	assert_close(fused - plain, R * 2 * fe * B);
	m.d.rc_mods = 1u << RCM_MOE_ACT;
	assert_close(footprint_kind_act_B(&m.d, &m.kind, LREC_SELECTIVE),
		     rc_plain);
	m.f.fw.elementwise.eager_activation = 1;
	m.f.model.swiglu_limit = 0;
	moe_case_dims(&m);
	eager_plain = footprint_kind_act_B(&m.d, &m.kind, LREC_NONE);
	m.f.model.swiglu_limit = 7;
	moe_case_dims(&m);
	assert_close(footprint_kind_act_B(&m.d, &m.kind, LREC_NONE) -
		     eager_plain, R * fe * B);
	moe_case_release(&m);
}

Test(footprint, eager_glu_offset_keeps_the_shifted_linear_half)
{
	struct moe_case m;
	double R = 4096 * 2, fe = 512, B = 2, plain;

	/* 8 experts of width 512, top-2: R = 8192 rows; eager GLU, the
	 * probabilities applied after the experts. act(x_glu) * (x_linear +
	 * offset) (quick-GEGLU, gpt-oss): MulBackward0 keeps x_linear +
	 * offset, a new tensor, R fe B = 8192 * 512 * 2 = 8388608 B more a
	 * layer than the same GLU without the offset. Fused: nothing more. */
	moe_case_init(&m, 8, 2, 512, 1);
	m.f.model.gated_mlp = 1;
	m.f.fw.moe_probs_in_activation = 0;
	m.f.fw.elementwise.eager_activation = 1;
	moe_case_dims(&m);
	cr_assert_eq(m.d.eager_act, 1);
	cr_assert_eq(m.d.moe.glu_offset, 0);
	plain = footprint_kind_act_B(&m.d, &m.kind, LREC_NONE);
	m.f.model.quick_glu = 1;
	moe_case_dims(&m);
	cr_assert_eq(m.d.moe.glu_offset, 1);
	assert_close(footprint_kind_act_B(&m.d, &m.kind, LREC_NONE) - plain,
		     R * fe * B);
	m.f.fw.elementwise.eager_activation = 0;
	moe_case_dims(&m);
	plain = footprint_kind_act_B(&m.d, &m.kind, LREC_NONE);
	m.f.model.quick_glu = 0;
	moe_case_dims(&m);
	assert_close(footprint_kind_act_B(&m.d, &m.kind, LREC_NONE), plain);
	moe_case_release(&m);
}

Test(footprint, alike_ranks_share_their_figures)
{
	static int64_t moe[] = { 5, 7, 8, 9, 13, 15, 16, 20, 21, 22, 23 };
	struct fixture f;
	struct layer_dims d;
	struct footprint fp, per[8];
	struct sched_live live;
	int64_t split[8], r;
	double act;

	/* 24 layers on pp 8, 3 a rank (gbs 16, mbs 2, dp 1: m = 8, 1F1B),
	 * MoE where moe[] says: the middle ranks 1-6 hold D D M, D M M,
	 * M D D, D M D, M M D and D D M again (D dense, M MoE): five kinds
	 * of rank, more than job_footprint remembers (4), rank 6 like
	 * rank 1 after rank 1's class was dropped. Every rank's figures
	 * must be the ones the rank alone gives (the public per-rank sums,
	 * which share nothing), bit for bit: ranks with as many layers but
	 * other kinds must not take each other's (rank 2 holds two MoE
	 * layers, rank 1 one), and alike ranks differ in what their
	 * schedule keeps in flight alone (rank 1 min(p - r, m) = 7
	 * microbatches, rank 6 2). */
	fixture_moe(&f, 8, 2, 512, 1);
	f.model.num_hidden_layers = 24;
	f.model.moe_layers.v = moe;
	f.model.moe_layers.n = sizeof(moe) / sizeof(moe[0]);
	f.model.moe_layers.given = 1;
	f.job.parallelism.pp = 8;
	f.job.parallelism.dp = 1;
	layer_dims_from_job(&f.job, &d);
	split_layers(&f.job, split);
	for (r = 0; r < 8; r++)
		cr_assert_eq(split[r], 3, "rank %lld: %lld layers",
			     (long long)r, (long long)split[r]);
	cr_assert_eq(job_microbatches(&f.job), 8);
	cr_assert_eq(footprint_job_stages(&f.job, 1e15, &fp, per, 8), 0);
	for (r = 0; r < 8; r++) {
		cr_assert_eq(sched_live_init(&live, f.job.parallelism.schedule,
					     8, 1, 8, r,
					     footprint_extra_warmup(&f.job)), 0);
		act = footprint_rank_act_B(&f.job, &d, split, r, &live);
		sched_live_release(&live);
		cr_assert_eq(per[r].rank, r);
		cr_assert(per[r].params == footprint_rank_params(&f.job, &d,
								  split, r),
			  "rank %lld: %.17g params", (long long)r,
			  per[r].params);
		cr_assert(per[r].activations_B == act,
			  "rank %lld: %.17g B, alone %.17g B", (long long)r,
			  per[r].activations_B, act);
		cr_assert(per[r].peak_B == per[r].weights_B + per[r].grads_B +
			  per[r].optimizer_B + per[r].activations_B +
			  per[r].workspace_B);
	}
	cr_assert(per[2].params > per[1].params);
	cr_assert(per[6].params == per[1].params);
	cr_assert(per[6].activations_B < per[1].activations_B);
}
