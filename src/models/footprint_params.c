/*
 * footprint_params.c - bytes per parameter and the parameters of a
 * unit (split out of footprint.c, whose header states the activation,
 * ZeRO-3 gathering and workspace terms).
 *
 * Model states per parameter of a GPU's share (mixed precision, Rajbhandari
 * et al. 2020, "ZeRO", sec. 3.1): weights W = 2 B (4 B for fp32/tf32
 * training), gradients G = the framework's grad dtype, optimizer
 * O = fp32 master copy (4 B when the framework keeps one and W < 4) + the
 * states, S bytes each in the framework's optimizer_state_dtype (Adam's
 * two moments 2 S, SGD's momentum S: 8 B and 4 B in fp32; PyTorch keeps
 * them in the dtype of the parameters the optimizer steps). ZeRO-1
 * divides O by dp, ZeRO-2 also G, ZeRO-3 also W. Megatron's distributed
 * optimizer with fp32 gradients is ZeRO-1: 6 + 12/dp B per parameter.
 * ZeRO-2 divides G only where the framework frees the gradients outside
 * the rank's shard (PyTorch FSDP SHARD_GRAD_OP, Megatron-FSDP's
 * optim_grads: is_grad_buffer_distributed); Megatron-Core DDP allocates
 * grad_data for all of the rank's parameters whether or not the optimizer
 * is distributed (framework grad_buffer_full; NVIDIA/Megatron-LM @
 * d98e8a64 megatron/core/distributed/param_and_grad_buffer.py
 * _ParamAndGradBuffer: torch.zeros(self.numel, dtype=self.grad_dtype);
 * megatron_fsdp/param_and_grad_buffer.py _init_each_parameter_group_
 * buffers for the sharding strategies), so its ZeRO-2 is ZeRO-1.
 *
 * A unit's parameters (footprint_unit_params): the embedding, one layer
 * or the LM head of layer.c, the head less the table it shares with a
 * tied embedding.
 */
#include "footprint.h"

#include "base/diag.h"
#include "config/spec_job.h"
#include "config/spec_model.h"

void footprint_param_bytes(const struct job_spec *j,
			   struct footprint_param_bytes *out)
{
	double fp32 = dtype_bytes(DTYPE_FP32);
	/* Adam keeps two moments per parameter, SGD one momentum buffer. */
	double states = j->training.optimizer == OPT_ADAM ? 2 : 1;
	enum dtype state = (enum dtype)j->framework->optimizer_state_dtype;

	out->weights_B = dtype_bytes(layer_base_dtype(
		(enum dtype)j->training.dtype));
	out->grads_B = dtype_bytes((enum dtype)j->framework->grad_dtype);
	out->master_B = j->framework->master_weights &&
			out->weights_B < fp32 ? fp32 : 0;
	out->states_B = states * dtype_bytes(state);
}

int footprint_grads_sharded(const struct job_spec *j)
{
	int64_t zero = j->training.zero_stage;

	return zero >= 3 || (zero == 2 && !j->framework->grad_buffer_full);
}

/* Model-state bytes per parameter sharded over dp ranks by ZeRO. */
static void per_param(const struct job_spec *j, double dp, double *w_B,
		      double *g_B, double *o_B)
{
	struct footprint_param_bytes b;
	int64_t zero = j->training.zero_stage;

	footprint_param_bytes(j, &b);
	*w_B = zero >= 3 ? b.weights_B / dp : b.weights_B;
	*g_B = b.grads_B / (footprint_grads_sharded(j) ? dp : 1);
	*o_B = (b.states_B + b.master_B) / (zero >= 1 ? dp : 1);
}

void footprint_per_param(const struct job_spec *j, double *w_B,
			 double *g_B, double *o_B)
{
	/* dense parameters' data-parallel group is dp x cp (Megatron) */
	per_param(j, (double)(j->parallelism.dp * j->parallelism.cp), w_B,
		  g_B, o_B);
}

/* The routed experts' share. Under ZeRO 3 with fsdp_expert_reduce_dtype
 * (FSDP2 sharding the experts without a mixed-precision policy) their
 * sharded gradients are in that dtype, the parameters': foreach_reduce
 * reduce-scatters in the reduce dtype and casts the output to the
 * sharded parameter's dtype before it becomes .grad (pytorch/pytorch
 * torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py,
 * _to_dtype_if_needed(reduce_output, orig_dtype), torch 2.6-2.8), not in
 * the framework's grad_dtype. */
void footprint_expert_per_param(const struct job_spec *j, double *w_B,
				double *g_B, double *o_B)
{
	double edp = (double)(j->parallelism.edp > 0 ? j->parallelism.edp : 1);
	int rdt = j->framework->fsdp_expert_reduce_dtype;

	per_param(j, edp, w_B, g_B, o_B);
	if (j->training.zero_stage >= 3 && rdt >= 0)
		*g_B = dtype_bytes((enum dtype)rdt) / edp;
}

double footprint_unit_params(const struct job_spec *j,
			     const struct layer_dims *d, enum footprint_unit u,
			     int with_embedding)
{
	const struct model_spec *m = j->model;
	int layernorm = model_norm_tensors(m) == 2;

	switch (u) {
	case UNIT_EMBED:
		return layer_embed_params(d,
			(double)m->max_position_embeddings);
	case UNIT_LAYER:
		return layer_params(d, layer_bias_of(m), layernorm);
	case UNIT_HEAD:
		if (m->tie_word_embeddings && with_embedding)
			return layer_head_params(d, layernorm) -
			       d->vocab * d->hidden;
		return layer_head_params(d, layernorm);
	}
	BUG("unknown unit");
}
