/*
 * train_opt.c - the optimizer step's time on one GPU (train_optimizer_s;
 * train_dp.c builds its task, the planner's analytical tier takes the
 * same time).
 *
 * Optimizer (memory-bound, per parameter of the local shard, P / dp under
 * ZeRO >= 1; bytes per parameter from footprint_param_bytes: gradients G,
 * the parameters the optimizer steps M (the fp32 master copy when kept,
 * else the W-byte weights), states S = k s (Adam k = 2, SGD 1)). The
 * framework's optimizer_step lists its passes; multi_tensor_apply passes
 * (gpu_multi_tensor_op, one launch per 320 chunks of 65536 elements) are
 *   grad_unscale  fp16 jobs: read G, write G (unscale, inf check)
 *   grad_norm     read G
 *   grad_clip     read G, write G
 *   update fused  read G + M + S, write M + S
 *   update foreach torch.optim.Adam's default on CUDA (_multi_tensor_adam,
 *                 torch <= 2.8, no weight decay, not capturable), one
 *                 moment s = S / 2: lerp_(m, g) (r s + G, w s), mul_(v)
 *                 (r s, w s), addcmul_(v, g, g) (r s + G, w s), sqrt(v)
 *                 (r s, w s), div_ and add_ (each r s, w s), addcdiv_(p,
 *                 m, sqrt) (r M + 2 s, w M): read M + 8 s + 2 G, write
 *                 M + 6 s, 7 passes
 *   decoupled_decay  before them, with the foreach update: AdamW's
 *                 decoupled weight decay (weight_decay != 0),
 *                 torch._foreach_mul_(device_params, 1 - lr *
 *                 weight_decay) (torch/optim/adam.py _multi_tensor_adam
 *                 with decoupled_weight_decay, adamw.py
 *                 _multi_tensor_adamw before torch 2.6): read M, write M,
 *                 an 8th pass (the fused kernel and the eager loop
 *                 already count it)
 *   copy_params   with master weights: read M, write W
 * and streaming kernels (gpu_memory_op)
 *   update eager  Composer's DecoupledAdamW loop, per element: p *= 1 -
 *                 wd (r M, w M); m = b1 m (r s, w s) + (1-b1) g (r s + G,
 *                 w s); v = b2 v (r s, w s) + (1-b2) g g (r s + G, w s);
 *                 d = sqrt(v) (r s, w s) / c (r s, w s) + eps (r s, w s);
 *                 p -= a m / d (r M + 2 s, w M): read 2M + 9s + 2G, write
 *                 2M + 7s, 9 kernels per tensor
 *   scale_grads   with framework per_token_loss (Megatron-Core
 *                 calculate_per_token_loss), before the step,
 *                 finalize_model_grads' scale_gradients(1 / num_tokens):
 *                 grad_data *= s, read G and write G over the buffer
 *                 zero_grad writes, dense and expert
 *                 (param_and_grad_buffer.py, finalize_model_grads.py @
 *                 d98e8a64dd); the token count's pipeline broadcast and
 *                 data-parallel all-reduce (a scalar each) are not
 *                 counted [?: microseconds]
 *   zero_grad     write G over the whole gradient buffer: under ZeRO 1-2
 *                 every parameter of this GPU (P, not the shard: Megatron-
 *                 Core's _ParamAndGradBuffer allocates grad_data for all
 *                 its parameters, the reduce-scatter writes the shard in
 *                 place, and zero_grad_buffer's reset() zeroes all of
 *                 grad_data; megatron/core/distributed/
 *                 param_and_grad_buffer.py and distributed_data_parallel.py,
 *                 NVIDIA/Megatron-LM 0e9fcc1d), under ZeRO 3 the gradient
 *                 shard only (FSDP keeps sharded gradients), and under
 *                 ZeRO 2 too where the framework frees the gradients
 *                 outside the shard (no grad_buffer_full:
 *                 footprint_grads_sharded).
 */
#include <math.h>

#include "gpu/gpu.h"
#include "footprint.h"
#include "train.h"

/*
 * Vector FLOPs per parameter of the optimizer step, per element as
 * PyTorch's AdamW runs it (torch.optim.adamw _single_tensor_adamw; the
 * fused kernel does the same arithmetic): decoupled weight decay
 * p *= 1 - lr wd (1), m = b1 m + (1 - b1) g (2), v = b2 v + (1 - b2) g^2
 * (3), p -= lr_t m / (sqrt(v) + eps) (4: square root, add, divide, fused
 * multiply-add), the bias corrections being per-step scalars folded into
 * lr_t: 10. SGD with momentum: g += wd p, b = mu b + g, p -= lr b, one
 * fused multiply-add each: 3. The gradient-norm pass: a square and a sum,
 * 2. Nominal: at about 0.3 FLOP per byte moved the step is memory-bound on
 * every GPU llmsim knows.
 */
enum { ADAM_FLOPS = 10, SGD_FLOPS = 3, GRAD_NORM_FLOPS = 2 };

/* multi_tensor_apply launches a pass over p elements needs: 320 blocks
 * of one 65536-element chunk each per launch (PyTorch's and apex's
 * MultiTensorApply: depth_to_max_blocks 320, kChunkSize 65536). */
static double mt_launches(double p)
{
	return ceil(p / (320.0 * 65536.0));
}

/* One multi_tensor_apply pass reading r and writing w bytes per element. */
static double mt_pass(const struct gpu_spec *g, double p, double r, double w,
		      double flops)
{
	return gpu_multi_tensor_op(g, r * p, w * p, flops * p,
				   mt_launches(p)).time_s;
}

/* The optimizer step over this rank's shard of p parameters: the passes
 * of the framework's optimizer_step (see the top of the file). */
double train_optimizer_s(const struct job_spec *j, const struct layer_dims *d,
			 const int64_t *split, int64_t s)
{
	const struct parallel_spec *pl = &j->parallelism;
	const struct opt_step_spec *o = &j->framework->optimizer_step;
	const struct gpu_spec *g = j->system->gpu;
	struct footprint_param_bytes b;
	double dense, experts, p, buffer;
	double upd = j->training.optimizer == OPT_ADAM ? ADAM_FLOPS : SGD_FLOPS;
	double G, M, S, sum = 0;

	footprint_rank_params_split(j, d, split, s, &dense, &experts);
	footprint_param_bytes(j, &b);
	G = b.grads_B;
	M = b.master_B > 0 ? b.master_B : b.weights_B;
	S = b.states_B;
	buffer = dense + experts;	/* the unsharded gradient buffer */
	if (j->training.zero_stage >= 1) {	/* the distributed optimizer's shard */
		dense /= (double)(pl->dp * pl->cp);
		experts /= (double)(pl->edp > 0 ? pl->edp : 1);
	}
	p = dense + experts;
	if (o->grad_unscale && j->training.dtype == DTYPE_FP16)
		sum += mt_pass(g, p, G, G, 1);
	if (o->grad_norm)
		sum += mt_pass(g, p, G, 0, GRAD_NORM_FLOPS);
	if (o->grad_clip)
		sum += mt_pass(g, p, G, G, 1);
	if (o->update == OPT_UPDATE_EAGER && j->training.optimizer == OPT_ADAM) {
		double st = S / 2;	/* one moment */

		sum += gpu_memory_op(g, (2 * M + 9 * st + 2 * G) * p,
				     (2 * M + 7 * st) * p, upd * p,
				     (M + S + G) * p).time_s;
	} else if (o->update == OPT_UPDATE_FOREACH &&
		   j->training.optimizer == OPT_ADAM) {
		double st = S / 2;	/* one moment; the square root's too */

		sum += 2 * mt_pass(g, p, st + G, st, 2) +	/* lerp, addcmul */
		       4 * mt_pass(g, p, st, st, 1) +	/* mul, sqrt, div, add */
		       mt_pass(g, p, M + 2 * st, M, 2);	/* addcdiv */
		if (o->decoupled_decay)	/* p *= 1 - lr wd */
			sum += mt_pass(g, p, M, M, 1);
	} else {
		sum += mt_pass(g, p, G + M + S, M + S, upd);
	}
	if (o->copy_params && b.master_B > 0)
		sum += mt_pass(g, p, b.master_B, b.weights_B, 0);
	if (footprint_grads_sharded(j))
		buffer = p;	/* FSDP, ZeRO 2: only the shard's gradients */
	if (j->framework->per_token_loss)	/* scale_gradients */
		sum += gpu_memory_op(g, G * buffer, G * buffer, buffer,
				     G * buffer).time_s;
	if (o->zero_grad)
		sum += gpu_memory_op(g, 0, G * buffer, 0, G * buffer).time_s;
	return sum;
}
