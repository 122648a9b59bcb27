/*
 * spec_recompute.c - training.recompute_modules: which modules selective
 * recomputation re-runs, checked against the granularity and the model
 * as Megatron-Core's TransformerConfig.__post_init__ checks them.
 */
#include "spec_job.h"

#include "cnode.h"
#include "base/diag.h"

/* training.recompute's values (enum recompute order). */
const char *const recompute_names[] = {"none", "selective", "full", NULL};

/* Whether the job's recompute_modules name module m. */
int job_recomputes(const struct job_spec *j, enum recompute_module m)
{
	const struct schema_int_list *l = &j->training.recompute_modules;
	size_t i;

	for (i = 0; i < l->n; i++)
		if (l->v[i] == m)
			return 1;
	return 0;
}

/* recompute_modules against the granularity and the model, as
 * Megatron-Core's TransformerConfig.__post_init__ refuses them. -1 after
 * an error. */
int job_recompute_check(const struct job_spec *j, struct diag *d,
			const struct cnode *node)
{
	const struct cnode *t = node ? cnode_get(node, "training") : NULL;
	const struct cnode *at = t ? cnode_get(t, "recompute_modules") : NULL;

	at = at ? at : t ? t : node;
	if (j->training.recompute_modules.n == 0)
		return 0;
	/* Megatron-Core reads the modules only with recompute_granularity
	 * 'selective' and ignores them otherwise: a planner's or a sweep's
	 * recompute none/full replays the job's list untouched */
	if (j->training.recompute != RECOMPUTE_SELECTIVE)
		return 0;
	/* torchtitan's op-level policy is a whole-layer checkpoint with its
	 * own save list: it replaces every module, and its mm count is
	 * written for a dense layer's GQA/MHA projections and MLP */
	if (job_recomputes(j, RCM_OPS) &&
	    (j->training.recompute_modules.n > 1 || model_is_mla(j->model) ||
	     model_is_moe(j->model))) {
		cnode_error(d, at, "training.recompute_modules: ops stands "
			    "alone (no other module) and needs a dense model "
			    "without multi-head latent attention (torchtitan's "
			    "op-level selective checkpointing of Llama's "
			    "blocks)");
		return -1;
	}
	if (job_recomputes(j, RCM_MLA_UP_PROJ) && !model_is_mla(j->model)) {
		cnode_error(d, at, "training.recompute_modules: mla_up_proj needs "
			    "a model with multi-head latent attention "
			    "(kv_lora_rank)");
		return -1;
	}
	if (j->training.dtype == DTYPE_FP8 &&
	    j->training.fp8_scaling == FP8_DELAYED &&
	    (job_recomputes(j, RCM_MOE_ACT) ||
	     job_recomputes(j, RCM_LAYERNORM))) {
		cnode_error(d, at, "training.recompute_modules: moe_act and "
			    "layernorm cannot be recomputed under fp8 delayed "
			    "scaling (Megatron-Core: 'Delayed scaling does not "
			    "support moe_act and layernorm recompute for fp8'); "
			    "set training.fp8_scaling: current or block");
		return -1;
	}
	if (job_recomputes(j, RCM_MOE) && j->moe.a2a_overlap &&
	    j->parallelism.ep > 1) {
		cnode_error(d, at, "training.recompute_modules: moe cannot be "
			    "recomputed with moe.a2a_overlap (Megatron-Core: "
			    "'disable moe in recompute_modules when enabling "
			    "overlap_moe_expert_parallel_comm')");
		return -1;
	}
	if (job_recomputes(j, RCM_SHARED_EXPERTS) &&
	    j->moe.shared_expert_overlap) {
		cnode_error(d, at, "training.recompute_modules: shared_experts "
			    "cannot be recomputed with moe.shared_expert_overlap "
			    "(Megatron-Core refuses the pair)");
		return -1;
	}
	return 0;
}

/* training.fp8_scaling given on a job that does not train in fp8: it
 * has no effect (the MX and FP4 formats scale per block), say so.
 * training.fp8_attention true on a 16- or 32-bit job: none either
 * (Megatron-Core's fp8_dot_product_attention sets the recipe's fp8_dpa,
 * which Transformer Engine's DotProductAttention reads only inside the
 * fp8 autocast: self.fp8 = FP8GlobalStateManager.is_fp8_enabled(),
 * dot_product_attention.py init_fp8_metadata, TE @ f031cf87b; Megatron
 * raises nothing); the model leaves it off (layer.c). training.
 * fp8_output_proj on any dtype but mxfp8: none either (Megatron-Core
 * is_te_mxfp8_output_proj_active, NVIDIA/Megatron-LM @ 620cf750
 * megatron/core/transformer/mxfp8_output_proj.py, needs fp8 and the
 * mxfp8 recipe; layer_dims.c leaves it off). A GPU without the dtype's
 * rate is train_check's error. */
void job_fp8_scaling_check(const struct job_spec *j, struct diag *d,
			   const struct cnode *node)
{
	const struct cnode *t = node ? cnode_get(node, "training") : NULL;
	const struct cnode *at = t ? cnode_get(t, "fp8_scaling") : NULL;
	const struct cnode *fa = t ? cnode_get(t, "fp8_attention") : NULL;
	const struct cnode *fo = t ? cnode_get(t, "fp8_output_proj") : NULL;

	if (!d)
		return;
	if (at && j->training.dtype != DTYPE_FP8)
		diag_warn(d, at->file, at->line, at->col,
			  "'training.fp8_scaling' has no effect: "
			  "training.dtype is %s, not fp8",
			  dtype_names[j->training.dtype]);
	if (fa && j->training.fp8_attention &&
	    !dtype_low_precision((enum dtype)j->training.dtype))
		diag_warn(d, fa->file, fa->line, fa->col,
			  "'training.fp8_attention' has no effect: "
			  "training.dtype is %s, not an fp8 or fp4 format "
			  "(attention runs in FP8 only inside the fp8 "
			  "autocast)", dtype_names[j->training.dtype]);
	if (fo && j->training.fp8_output_proj &&
	    j->training.dtype != DTYPE_MXFP8)
		diag_warn(d, fo->file, fo->line, fo->col,
			  "'training.fp8_output_proj' has no effect: "
			  "training.dtype is %s, not mxfp8 (Megatron-Core "
			  "runs the MXFP8 LM head only under the mxfp8 recipe)",
			  dtype_names[j->training.dtype]);
}
