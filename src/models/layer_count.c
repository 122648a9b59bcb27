/*
 * layer_count.c - what a layer's ops and weights count: the model FLOPs
 * of its kernels (attention at the pairs the model computes, grouped
 * GEMMs by their groups' rows) and its parameters, dense and routed
 * experts. Split from layer.c, which calls it (never the reverse).
 */
#include "layer_impl.h"

#include "config/spec_model.h"

#include "base/diag.h"

static double grouped_flops(const struct kern *k)
{
	double sum = 0, rows;
	int e;

	for (e = 0; e < k->ngroups; e++) {
		rows = k->rows ? k->rows[e] : 0;
		sum += 2 * (k->group_dim == GROUP_M ? rows * k->n * k->k :
			    k->m * k->n * rows);
	}
	return sum;
}

/* Score pairs the model count takes (layer.h): the area under the causal
 * diagonal when the s_q queries are the last of s_kv keys, s_q s_kv -
 * s_q^2/2 (s^2/2 for self-attention), or every pair without a mask. */
static double model_pairs(const struct gpu_attn_shape *a)
{
	double sq = a->seq_q, skv = a->seq_kv;

	if (!a->causal)
		return sq * skv;
	if (sq <= skv)
		return sq * skv - sq * sq / 2;
	return skv * skv / 2;
}

double layer_kern_model_flops(const struct kern *k)
{
	const struct gpu_attn_shape *a = &k->attn;
	double fwd = 4 * a->batch * a->heads_q * model_pairs(a) *
		     (a->head_dim_qk + a->head_dim_v) / 2;

	if (k->model_flops < 0)
		return 0;
	if (k->model_flops > 0)
		return k->model_flops;
	switch (k->kind) {
	case KERN_GEMM:
	case KERN_CHUNK:
		return 2 * k->m * k->n * k->k * k->batch;
	case KERN_GROUPED:
		return grouped_flops(k);
	case KERN_ATTN_FWD:
		return fwd;
	case KERN_ATTN_BWD:
		return 2 * fwd;
	case KERN_MEM:
		return 0;
	}
	BUG("unknown kernel kind");
}

double layer_ops_flops(const struct layer_ops *o, enum layer_pass pass)
{
	double sum = 0;
	int i;

	for (i = 0; i < o->n; i++)
		if (o->op[i].kind == LOP_KERNEL && o->op[i].pass == pass)
			sum += layer_kern_model_flops(&o->op[i].k);
	return sum;
}

int layer_mtp_kinds(const struct model_spec *m, struct layer_kind *k)
{
	int b[MODEL_MTP_BLOCKS], n = model_mtp_blocks(m, b), i;
	int64_t last = m->num_hidden_layers - 1;
	int lin = model_layer_linear(m, last);

	for (i = 0; i < n; i++)
		k[i] = (struct layer_kind){ b[i] == BLOCK_MOE, 0, 0, 0, b[i], 0 };
	if (n > 0)
		return n;
	k[0] = (struct layer_kind){ model_layer_moe(m, last),
		lin ? 0 : (double)model_layer_window(m, last),
		lin ? 0 : (double)model_layer_chunk(m, last), lin,
		model_layer_block(m, last), model_layer_nope(m, last) };
	return 1;
}

int layer_bias_of(const struct model_spec *m)
{
	return (m->attention_bias ? LAYER_BIAS_ATTN : 0) |
	       (m->o_proj_bias == 1 ? LAYER_BIAS_OUT : 0) |
	       (m->mlp_bias == 1 ? LAYER_BIAS_MLP : 0);
}

void layer_kind_params(const struct layer_dims *d, const struct layer_kind *k,
		       int bias, int layernorm, double *dense, double *experts)
{
	double h = d->hidden, norms = 2 * h * (layernorm ? 2 : 1);
	int ab = bias & (LAYER_BIAS_ATTN | LAYER_BIAS_OUT);
	int mb = (bias & LAYER_BIAS_MLP) != 0;
	double mlp = (d->gated ? 3 : 2) * h * d->ffn +
		     (mb ? (d->gated ? 2 : 1) * d->ffn + h : 0);
	double moe_dense = 0;

	*experts = 0;
	if ((k && k->moe))
		moe_params(d, mb, &moe_dense, experts);
	switch (k ? k->block : BLOCK_PAIR) {	/* a hybrid's block alone */
	case BLOCK_MAMBA:
		*dense = mamba_params(d) + norms / 2;
		return;
	case BLOCK_ATTN:
		*dense = attn_params(d, ab) + norms / 2;
		return;
	case BLOCK_MLP:
	case BLOCK_MOE:
		*dense = norms / 2 + ((k && k->moe) ? moe_dense : mlp);
		return;
	default:
		break;
	}
	*dense = (k && k->linear ? gdn_params(d, ab) : attn_params(d, ab)) +
		 norms + ((k && k->moe) ? moe_dense : mlp);
}

double layer_params(const struct layer_dims *d, int bias, int layernorm)
{
	double dense, experts;

	layer_kind_params(d, NULL, bias, layernorm, &dense, &experts);
	return dense + experts;
}

double layer_embed_params(const struct layer_dims *d, double max_positions)
{
	return d->vocab * d->hidden +
	       (d->learned_pos ? max_positions * d->hidden : 0);
}

double layer_head_params(const struct layer_dims *d, int layernorm)
{
	return d->vocab * d->hidden + d->hidden * (layernorm ? 2 : 1);
}
