/*
 * spec_model_layer.c - what a resolved model is, layer by layer: MoE,
 * MLA and DeepSeek Sparse Attention, which layers have routed experts,
 * a sliding window, an attention chunk or no rotary embedding, the
 * shared experts' width and the key/value cache bytes per token
 * (declared in spec_model.h; the keys they read are spec_model.c's),
 * and the check that layer_types' chunked_attention layers agree with
 * the NoPE keys (model_check_chunked).
 */
#include "spec_model.h"

#include <math.h>
#include <stddef.h>

#include "cnode.h"
#include "base/diag.h"

int model_is_moe(const struct model_spec *m)
{
	return m->n_routed_experts > 0 && !m->no_moe_layer;
}

/* A norm's parameter tensors: the weight, and a layernorm's bias unless
 * norm_bias says none (Cohere) */
int model_norm_tensors(const struct model_spec *m)
{
	return m->norm == NORM_LAYER && m->norm_bias != 0 ? 2 : 1;
}

int model_is_mla(const struct model_spec *m)
{
	return m->kv_lora_rank > 0;
}

int model_is_dsa(const struct model_spec *m)
{
	return m->index_topk > 0;
}

double model_index_key_bytes(const struct model_spec *m)
{
	if (!model_is_dsa(m))
		return 0;
	return (double)m->index_head_dim * 1 +
	       4.0 * ceil((double)m->index_head_dim / 128);
}

static int in_list(const struct schema_int_list *l, int64_t v)
{
	size_t k;

	for (k = 0; k < l->n; k++)
		if (l->v[k] == v)
			return 1;
	return 0;
}

int model_layer_moe(const struct model_spec *m, int64_t i)
{
	if (!model_is_moe(m) || i < m->first_k_dense_replace ||
	    in_list(&m->mlp_only_layers, i))
		return 0;
	if (m->hybrid_override_pattern)	/* its 'E' layers */
		return model_layer_block(m, i) == BLOCK_MOE;
	if (m->moe_layers.n > 0)
		return in_list(&m->moe_layers, i);
	return (i + 1) % m->decoder_sparse_step == 0 &&
	       i % m->moe_layer_freq == 0;
}

/* The sliding window of layer i, 0 = none. */
static int64_t slide(const struct model_spec *m, int64_t i)
{
	if (m->layer_types.n > 0)
		return m->layer_types.v[i] == LTYPE_SLIDING ? m->sliding_window : 0;
	if (m->sliding_window == 0 || m->use_sliding_window == 0 ||
	    i < m->max_window_layers)
		return 0;
	return m->sliding_window;
}

/* DeepSeek Sparse Attention: query p attends to its min(p + 1,
 * index_topk) top-scored keys (Indexer.forward: index_score.topk(
 * min(index_topk, end_pos)), the other scores masked to -inf), so the
 * core's pairs, FLOPs and the keys a decode step reads are a causal
 * window's of index_topk keys; which keys they are does not change the
 * count (the sparse kernels gather them: FlashMLA's sparse kernels,
 * deepseek-ai/FlashMLA flash_mla_sparse_fwd, as vLLM's and SGLang's
 * DSA backends run them [S]). */
int64_t model_layer_window(const struct model_spec *m, int64_t i)
{
	int64_t w = slide(m, i);

	return w > 0 || !model_is_dsa(m) ? w : m->index_topk;
}

/* Whether layer_types names any chunked_attention layer (then it
 * decides which layers are chunked; model_check has checked that it
 * agrees with no_rope_layers or nope_layer_interval when given). */
static int types_chunked(const struct model_spec *m)
{
	size_t k;

	for (k = 0; k < m->layer_types.n; k++)
		if (m->layer_types.v[k] == LTYPE_CHUNKED)
			return 1;
	return 0;
}

/* Whether layer i uses RoPE by no_rope_layers, else by the interval. */
static int rope_layer(const struct model_spec *m, int64_t i, int64_t interval)
{
	if (m->no_rope_layers.n > 0)
		return (size_t)i < m->no_rope_layers.n && m->no_rope_layers.v[i];
	return (i + 1) % interval != 0;
}

int model_layer_nope(const struct model_spec *m, int64_t i)
{
	if (types_chunked(m))
		return !((size_t)i < m->layer_types.n &&
			 m->layer_types.v[i] == LTYPE_CHUNKED);
	if (m->no_rope_layers.n == 0 && m->nope_layer_interval <= 0)
		return 0;
	return !rope_layer(m, i, m->nope_layer_interval);
}

int64_t model_layer_chunk(const struct model_spec *m, int64_t i)
{
	if (m->attention_chunk_size <= 0)
		return 0;
	return model_layer_nope(m, i) ? 0 : m->attention_chunk_size;
}

int model_layer_temperature(const struct model_spec *m, int64_t i)
{
	return m->attn_temperature_tuning > 0 && model_layer_nope(m, i);
}

int64_t model_shared_ffn(const struct model_spec *m)
{
	if (!model_is_moe(m))
		return 0;
	if (m->shared_expert_intermediate_size > 0)
		return m->shared_expert_intermediate_size;
	return m->n_shared_experts * m->moe_intermediate_size;
}

double model_kv_bytes_per_token(const struct model_spec *m, double elem_B)
{
	double per_layer = model_is_mla(m) ?
		(double)(m->kv_lora_rank + m->qk_rope_head_dim) :
		2.0 * (double)(m->num_key_value_heads * m->head_dim);

	/* Gated DeltaNet layers keep a fixed state, no per-token cache; a
	 * hybrid's Mamba / MLP / MoE layers none at all; DSA adds the
	 * indexer's key cache to every attention layer */
	return (per_layer * elem_B + model_index_key_bytes(m)) *
	       (double)(m->hybrid_override_pattern ? model_attn_layers(m) :
			model_full_attn_layers(m));
}

/* layer_types with chunked_attention (Llama 4 in newer transformers,
 * which derives it from no_rope_layers: RoPE = chunked): it needs
 * attention_chunk_size, and must agree with no_rope_layers, or with
 * nope_layer_interval when that is given without a list. Runs before
 * the interval's default is set (interval 0 = not given). */
int model_check_chunked(const struct model_spec *m, const struct cnode *node,
			struct diag *d)
{
	const struct cnode *at = node ? cnode_get(node, "layer_types") : NULL;
	int64_t i;

	if (!types_chunked(m))
		return 0;
	if (m->attention_chunk_size <= 0) {
		cnode_error(d, at ? at : node, "%s", "'layer_types' has "
			    "chunked_attention layers but no "
			    "'attention_chunk_size'");
		return -1;
	}
	if (m->no_rope_layers.n == 0 && m->nope_layer_interval == 0)
		return 0;
	for (i = 0; i < m->num_hidden_layers &&
		    (size_t)i < m->layer_types.n; i++) {
		int chunked = m->layer_types.v[i] == LTYPE_CHUNKED;

		if (chunked != rope_layer(m, i, m->nope_layer_interval)) {
			cnode_error(d, at ? at : node, "'layer_types' layer "
				    "%lld is %s but '%s' makes it %s",
				    (long long)i, chunked ? "chunked_attention"
				    : "not chunked", m->no_rope_layers.n > 0 ?
				    "no_rope_layers" : "nope_layer_interval",
				    chunked ? "NoPE (global)" :
				    "RoPE (chunked)");
			return -1;
		}
	}
	return 0;
}
