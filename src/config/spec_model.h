/*
 * spec_model.h - an LLM architecture, in Hugging Face config.json terms.
 *
 * Keys are the ones Hugging Face uses for the Llama, Mixtral, Qwen-MoE and
 * DeepSeek-V3 families, so a model is either YAML in workloads/models/ or
 * an actual config.json (read with cJSON; keys that do not affect
 * performance are ignored there). Derived values are filled in by the
 * schema's check: head_dim = hidden_size / num_attention_heads,
 * num_key_value_heads = num_attention_heads, gated_mlp from hidden_act
 * (silu: gated 3-matrix MLP; gelu/relu2: plain 2-matrix) unless given.
 *
 * Depends on schema.h only.
 */
#ifndef LLMSIM_CONFIG_SPEC_MODEL_H
#define LLMSIM_CONFIG_SPEC_MODEL_H

#include <stdint.h>

#include "schema.h"

enum hidden_act {
	ACT_SILU,
	ACT_GELU,
	ACT_GELU_NEW,
	ACT_GELU_TANH,
	ACT_RELU,
	ACT_RELU2
};

extern const char *const hidden_act_names[];

enum norm_kind {
	NORM_RMS,
	NORM_LAYER
};

enum pos_embedding {
	POS_ROPE,
	POS_LEARNED,
	POS_NONE
};

struct model_spec {
	const char *name;			/* preset name */
	const char *model_type;			/* "llama", "mixtral", "deepseek_v3" (info) */
	int64_t hidden_size;			/* d_model */
	int64_t num_hidden_layers;		/* transformer layers */
	int64_t num_attention_heads;		/* query heads */
	int64_t num_key_value_heads;		/* KV heads (GQA); = heads for MHA */
	int64_t head_dim;			/* per-head dimension */
	int64_t intermediate_size;		/* dense MLP hidden size */
	int64_t vocab_size;			/* tokens */
	int hidden_act;				/* enum hidden_act */
	int gated_mlp;				/* 1: gate+up+down; 0: up+down */
	int norm;				/* enum norm_kind */
	int position_embedding;			/* enum pos_embedding */
	int64_t max_position_embeddings;	/* learned position table rows; context (info for RoPE) */
	int tie_word_embeddings;		/* LM head shares the embedding */
	int attention_bias;			/* QKV/out projections have bias */
	/* Mixture of Experts (0 = dense) */
	int64_t n_routed_experts;		/* experts per MoE layer */
	int64_t num_experts_per_tok;		/* top-k */
	int64_t moe_intermediate_size;		/* per-expert MLP hidden size */
	int64_t n_shared_experts;		/* always-on experts per MoE layer */
	int64_t shared_expert_intermediate_size;/* shared expert hidden size (Qwen-MoE) */
	int64_t first_k_dense_replace;		/* first k layers dense (DeepSeek) */
	int64_t decoder_sparse_step;		/* every n-th layer is MoE (Qwen-MoE) */
	/* Multi-head latent attention (DeepSeek); 0 = not MLA */
	int64_t q_lora_rank;
	int64_t kv_lora_rank;
	int64_t qk_nope_head_dim;
	int64_t qk_rope_head_dim;
	int64_t v_head_dim;
};

/* 1 for a Mixture-of-Experts model. */
int model_is_moe(const struct model_spec *m);

/* 1 for multi-head latent attention. */
int model_is_mla(const struct model_spec *m);

extern const struct schema model_schema;

#endif
