/*
 * infer_params.c - a layer's kind and its parameters in an inference
 * step on one GPU: the kind of each layer of the model (MoE, linear
 * attention, window, chunk, temperature, quantization exclusions, a
 * hybrid's block), the local head counts, the KV bytes a token takes
 * in a layer, and the parameters and weight bytes of a layer, the
 * embedding and the LM head (split out of infer.c, whose header states
 * the notation and the per-GPU parameter and KV formulas).
 *
 * Parameters per GPU: a layer holds h (a + 2g) d / t + a d h / t +
 * (2 or 3) h f / t weights in W and 2 h norm weights in B; the
 * embedding and LM head V h / t each in B (tied: one table).
 *
 * KV bytes per token per layer on one GPU: 2 (g/t) d K; MLA:
 * (r + d_r) K on every TP rank.
 */
#include "infer_impl.h"

#include "config/spec_job.h"
#include "layer.h"

void infer_kind_of(const struct job_spec *j, int64_t layer,
		   struct infer_kind *k)
{
	k->moe = model_layer_moe(j->model, layer);
	k->linear = model_layer_linear(j->model, layer);
	k->window = k->linear ? 0 : (double)model_layer_window(j->model, layer);
	k->chunk = k->linear ? 0 : (double)model_layer_chunk(j->model, layer);
	k->temperature = model_layer_temperature(j->model, layer);
	k->qexcl = quant_layer_excluded(&j->model->quantization, layer);
	k->block = model_layer_block(j->model, layer);
	k->nope = model_layer_nope(j->model, layer);
}

const struct infer_dims *infer_kind_dims(const struct infer_dims *d,
					 const struct infer_kind *k,
					 struct infer_dims *tmp)
{
	/* exclusions count only when the serving weights are quantized
	 * (infer_dims_from_job's gate on d->qexcl) */
	unsigned q = d->qexcl |
		     (k && d->weight != d->base ? k->qexcl : 0);

	if (q == d->qexcl)
		return d;
	*tmp = *d;
	tmp->qexcl = q;
	if (tmp->moe_model)
		infer_moe_precision(tmp);
	return tmp;
}

/* Local query heads a/t and KV heads (g/t, or 1 replicated). */
double infer_heads_local(const struct infer_dims *d)
{
	return d->heads / d->tp;
}

double infer_kv_heads_local(const struct infer_dims *d)
{
	return d->kv_heads >= d->tp ? d->kv_heads / d->tp : 1;
}

double infer_kv_token_layer_B(const struct infer_dims *d)
{
	if (d->mla)
		return (d->kv_lora_rank + d->rope_dim) * d->kv_B +
		       d->index_key_B;
	return 2 * infer_kv_heads_local(d) * d->head_dim * d->kv_B;
}

static double mla_q_params(const struct infer_dims *d)
{
	double qw = d->heads * (d->nope_dim + d->rope_dim);

	if (d->q_lora_rank > 0)
		return d->hidden * d->q_lora_rank + d->q_lora_rank * qw;
	return d->hidden * qw;
}

/* DSA's lightning indexer (DeepSeek-V3.2-Exp inference/model.py
 * Indexer): wq_b (r_q -> H_I d_I), wk (h -> d_I), its LayerNorm k_norm
 * (weight and bias, 2 d_I) and weights_proj (h -> H_I); replicated on
 * every TP rank (the reference's plain Linear layers; vLLM's Indexer
 * builds them as ReplicatedLinear). 0 without DSA. */
static double index_params(const struct infer_dims *d)
{
	return d->q_lora_rank * d->index_heads * d->index_dim +
	       d->hidden * d->index_dim + 2 * d->index_dim +
	       d->hidden * d->index_heads;
}

double infer_layer_params(const struct infer_dims *d)
{
	double h = d->hidden, attn, mlp = (d->gated ? 3 : 2) * h * d->ffn;

	if (d->mla) {
		/* kv_a and the DSA indexer are replicated on every TP
		 * rank: counted t times */
		attn = mla_q_params(d) + d->tp * index_params(d) +
		       d->tp * h * (d->kv_lora_rank + d->rope_dim) +
		       d->kv_lora_rank * d->heads * (d->nope_dim + d->v_head_dim) +
		       d->heads * d->v_head_dim * h;
	} else {	/* (the output gate: a second query-sized output) */
		attn = h * ((d->attn_gate ? 2 : 1) * d->heads +
			    2 * d->kv_heads) * d->head_dim +
		       d->heads * d->head_dim * h;
	}
	return (attn + mlp) / d->tp;
}

/* Attention parameters of a layer on one GPU (/t; MLA's replicated kv_a
 * counted on every rank). */
static double attn_params(const struct infer_dims *d)
{
	double h = d->hidden;

	if (d->mla)
		return (mla_q_params(d) + d->tp * index_params(d) +
			d->tp * h * (d->kv_lora_rank + d->rope_dim) +
			d->kv_lora_rank * d->heads *
			(d->nope_dim + d->v_head_dim) +
			d->heads * d->v_head_dim * h) / d->tp;
	return (h * ((d->attn_gate ? 2 : 1) * d->heads + 2 * d->kv_heads) *
		d->head_dim + d->heads * d->head_dim * h) / d->tp;
}

/* The attention output projection's parameters on one GPU (o_proj:
 * a d_v h / t under MLA, a d h / t otherwise); 0 for a linear-attention
 * mixer, whose projections all count as QX_ATTN. */
static double attn_out_params(const struct infer_dims *d,
			      const struct infer_kind *k)
{
	if (k && k->linear)
		return 0;
	return d->heads * (d->mla ? d->v_head_dim : d->head_dim) *
	       d->hidden / d->tp;
}

/* The mixer's parameters: a Gated DeltaNet's, or the attention's. */
static double mixer_params(const struct infer_dims *d,
			   const struct infer_kind *k)
{
	return k && k->linear ? infer_gdn_params(d) : attn_params(d);
}

double infer_kind_params(const struct infer_dims *d,
			 const struct infer_kind *k)
{
	switch (k ? k->block : BLOCK_PAIR) {	/* a hybrid's block alone */
	case BLOCK_MAMBA:
		return infer_mamba_params(d);
	case BLOCK_ATTN:
		return attn_params(d);
	case BLOCK_MLP:
		return infer_layer_params(d) - attn_params(d);
	case BLOCK_MOE:
		return infer_moe_params(d);
	default:
		break;
	}
	if (k && k->moe)
		return mixer_params(d, k) + infer_moe_params(d);
	return infer_layer_params(d) - attn_params(d) + mixer_params(d, k);
}

double infer_kind_weight_B(const struct infer_dims *d0,
			   const struct infer_kind *k)
{
	struct infer_dims tmp;
	const struct infer_dims *d = infer_kind_dims(d0, k, &tmp);
	double norms = 2 * d->hidden * d->act_B, attn = mixer_params(d, k);
	double out = attn_out_params(d, k);
	double mlp_B = infer_class_weight_B(d, QX_MLP);
	/* the attention's bytes: its input projections' and o_proj's, each
	 * in its class's dtype */
	double attn_W = (attn - out) * infer_class_weight_B(d, QX_ATTN) +
			out * infer_class_weight_B(d, QX_ATTN_OUT);

	switch (k ? k->block : BLOCK_PAIR) {	/* one norm, one block */
	case BLOCK_MAMBA:	/* projections in the serving dtype */
		return infer_mamba_params(d) * d->weight_B + norms / 2;
	case BLOCK_ATTN:
		return attn_W + norms / 2;
	case BLOCK_MLP:
		return (infer_layer_params(d) - attn) * mlp_B + norms / 2;
	case BLOCK_MOE:
		return infer_moe_weight_B(d) + norms / 2;
	default:
		break;
	}
	if (k && k->moe)
		return attn_W + infer_moe_weight_B(d) + norms;
	return attn_W + (infer_layer_params(d) - attn_params(d)) * mlp_B +
	       norms;
}

double infer_kind_attn_excluded_params(const struct infer_dims *d0,
				       const struct infer_kind *k)
{
	struct infer_dims tmp;
	const struct infer_dims *d = infer_kind_dims(d0, k, &tmp);
	double h = d->hidden, all, out;
	int blk = k ? k->block : BLOCK_PAIR;

	if ((k && k->linear) || blk == BLOCK_MAMBA || blk == BLOCK_MLP ||
	    blk == BLOCK_MOE)
		return 0;
	/* the stored matrices, once: infer_layer_params' attention x t
	 * without the TP-replicated copies of kv_a and the DSA indexer */
	if (d->mla) {
		out = d->heads * d->v_head_dim * h;
		all = mla_q_params(d) + index_params(d) +
		      h * (d->kv_lora_rank + d->rope_dim) +
		      d->kv_lora_rank * d->heads *
		      (d->nope_dim + d->v_head_dim) + out;
	} else {
		out = d->heads * d->head_dim * h;
		all = h * ((d->attn_gate ? 2 : 1) * d->heads +
			   2 * d->kv_heads) * d->head_dim + out;
	}
	return (d->qexcl & QX_ATTN ? all - out : 0) +
	       (d->qexcl & QX_ATTN_OUT ? out : 0);
}

double infer_embed_params(const struct infer_dims *d)
{
	return d->vocab * d->hidden / d->tp;
}

double infer_head_params(const struct infer_dims *d)
{
	return d->vocab * d->hidden / d->tp;
}
