/*
 * spec_model.c - the model schema (Hugging Face config.json keys).
 */
#include "spec_model.h"

#include <stddef.h>

#include "cnode.h"
#include "base/diag.h"

const char *const hidden_act_names[] = {
	"silu", "gelu", "gelu_new", "gelu_pytorch_tanh", "relu", "relu2", NULL,
};

static const char *const norm_names[] = {"rmsnorm", "layernorm", NULL};
static const char *const pos_names[] = {"rope", "learned", "none", NULL};

static const char *const experts_aliases[] = {
	"num_local_experts", "num_experts", NULL,
};

/* Keys found in real config.json files that do not change performance. */
static const char *const ignored[] = {
	"architectures", "auto_map", "torch_dtype", "transformers_version",
	"bos_token_id", "eos_token_id", "pad_token_id", "initializer_range",
	"use_cache", "attention_dropout", "hidden_dropout", "rope_scaling",
	"rope_theta", "rms_norm_eps", "layer_norm_eps", "quantization_config",
	"mlp_bias", "pretraining_tp", "sliding_window", "use_sliding_window",
	"max_window_layers", "output_router_logits", "router_aux_loss_coef",
	"router_jitter_noise", "norm_topk_prob", "scoring_func", "topk_method",
	"n_group", "topk_group", "routed_scaling_factor", "aux_loss_alpha",
	"seq_aux", "ep_size", "moe_layer_freq", "num_nextn_predict_layers",
	"ffn_hidden_size", "_name_or_path", "model_name", "attn_implementation",
	"mlp_only_layers", "qk_layernorm", "head_dim_original", NULL,
};

#define OFF(m) offsetof(struct model_spec, m)
#define DIM(k, h) { .key = #k, .type = ST_INT, .offset = OFF(k), \
	.min = 1, .max = 1e9, .flags = SF_OPTIONAL, .help = h }

static const struct schema_field model_fields[] = {
	{ .key = "name", .type = ST_STRING, .offset = OFF(name),
	  .flags = SF_OPTIONAL, .help = "preset name" },
	{ .key = "model_type", .type = ST_STRING, .offset = OFF(model_type),
	  .flags = SF_OPTIONAL | SF_INFO, .help = "Hugging Face model_type (info)" },
	{ .key = "hidden_size", .type = ST_INT, .offset = OFF(hidden_size),
	  .min = 1, .max = 1e7, .flags = SF_REQUIRED, .help = "model width d" },
	{ .key = "num_hidden_layers", .type = ST_INT, .offset = OFF(num_hidden_layers),
	  .min = 1, .max = 1e5, .flags = SF_REQUIRED, .help = "transformer layers" },
	{ .key = "num_attention_heads", .type = ST_INT,
	  .offset = OFF(num_attention_heads), .min = 1, .max = 1e5,
	  .flags = SF_REQUIRED, .help = "query heads" },
	DIM(num_key_value_heads, "KV heads for GQA (default num_attention_heads)"),
	DIM(head_dim, "per-head dimension (default hidden_size / num_attention_heads)"),
	{ .key = "intermediate_size", .type = ST_INT, .offset = OFF(intermediate_size),
	  .min = 1, .max = 1e8, .flags = SF_REQUIRED, .help = "dense MLP hidden size" },
	{ .key = "vocab_size", .type = ST_INT, .offset = OFF(vocab_size),
	  .min = 1, .max = 1e8, .flags = SF_REQUIRED, .help = "vocabulary size" },
	{ .key = "hidden_act", .type = ST_ENUM, .offset = OFF(hidden_act),
	  .values = hidden_act_names, .def = "silu",
	  .help = "MLP activation; silu means a gated (SwiGLU) MLP" },
	{ .key = "gated_mlp", .type = ST_BOOL, .offset = OFF(gated_mlp),
	  .flags = SF_OPTIONAL,
	  .help = "gate+up+down MLP (default: true for silu, false otherwise)" },
	{ .key = "norm", .type = ST_ENUM, .offset = OFF(norm), .values = norm_names,
	  .def = "rmsnorm", .help = "normalization layers" },
	{ .key = "position_embedding", .type = ST_ENUM,
	  .offset = OFF(position_embedding), .values = pos_names, .def = "rope",
	  .help = "rotary, learned table, or none" },
	{ .key = "max_position_embeddings", .type = ST_INT,
	  .offset = OFF(max_position_embeddings), .min = 1, .max = 1e9,
	  .flags = SF_OPTIONAL, .help = "longest sequence / learned position rows" },
	{ .key = "tie_word_embeddings", .type = ST_BOOL,
	  .offset = OFF(tie_word_embeddings), .def = "false",
	  .help = "LM head shares the input embedding" },
	{ .key = "attention_bias", .type = ST_BOOL, .offset = OFF(attention_bias),
	  .def = "false", .help = "attention projections have bias" },
	{ .key = "n_routed_experts", .type = ST_INT, .offset = OFF(n_routed_experts),
	  .min = 1, .max = 1e6, .aliases = experts_aliases, .flags = SF_OPTIONAL,
	  .help = "routed experts per MoE layer (absent: dense)" },
	DIM(num_experts_per_tok, "experts each token is routed to (top-k)"),
	DIM(moe_intermediate_size, "per-expert MLP hidden size"),
	{ .key = "n_shared_experts", .type = ST_INT, .offset = OFF(n_shared_experts),
	  .min = 0, .max = 1e4, .flags = SF_OPTIONAL,
	  .help = "shared (always-on) experts per MoE layer" },
	DIM(shared_expert_intermediate_size, "shared expert hidden size (Qwen-MoE)"),
	{ .key = "first_k_dense_replace", .type = ST_INT,
	  .offset = OFF(first_k_dense_replace), .min = 0, .max = 1e5,
	  .flags = SF_OPTIONAL, .help = "the first k layers are dense (DeepSeek)" },
	DIM(decoder_sparse_step, "every n-th layer is MoE (Qwen-MoE)"),
	DIM(q_lora_rank, "MLA query low-rank dimension"),
	DIM(kv_lora_rank, "MLA key/value low-rank dimension"),
	DIM(qk_nope_head_dim, "MLA per-head non-rotary Q/K dimension"),
	DIM(qk_rope_head_dim, "MLA per-head rotary Q/K dimension"),
	DIM(v_head_dim, "MLA per-head value dimension"),
};

int model_is_moe(const struct model_spec *m)
{
	return m->n_routed_experts > 0;
}

int model_is_mla(const struct model_spec *m)
{
	return m->kv_lora_rank > 0;
}

static int model_check(void *obj, const struct cnode *node, struct diag *d)
{
	struct model_spec *m = obj;
	int rc = 0;

	if (m->num_key_value_heads == 0)
		m->num_key_value_heads = m->num_attention_heads;
	if (m->head_dim == 0) {
		if (m->hidden_size % m->num_attention_heads != 0) {
			cnode_error(d, node, "%s", "'hidden_size' must be a multiple of "
			       "'num_attention_heads' unless 'head_dim' is given");
			rc = -1;
		}
		m->head_dim = m->hidden_size / m->num_attention_heads;
	}
	if (m->num_attention_heads % m->num_key_value_heads != 0) {
		cnode_error(d, node, "%s", "'num_attention_heads' must be a multiple of "
		       "'num_key_value_heads'");
		rc = -1;
	}
	if (m->gated_mlp < 0)
		m->gated_mlp = m->hidden_act == ACT_SILU;
	if (model_is_moe(m)) {
		/* Mixtral's config.json gives the expert size as
		 * intermediate_size and has no moe_intermediate_size. */
		if (m->moe_intermediate_size == 0)
			m->moe_intermediate_size = m->intermediate_size;
		if (m->num_experts_per_tok == 0) {
			cnode_error(d, node, "%s", "an MoE model ('n_routed_experts') also needs "
			       "'num_experts_per_tok'");
			rc = -1;
		} else if (m->num_experts_per_tok > m->n_routed_experts) {
			cnode_error(d, node, "%s", "'num_experts_per_tok' must not exceed "
			       "'n_routed_experts'");
			rc = -1;
		}
		if (m->decoder_sparse_step == 0)
			m->decoder_sparse_step = 1;
	}
	if (model_is_mla(m) && (m->qk_nope_head_dim == 0 ||
				m->qk_rope_head_dim == 0 || m->v_head_dim == 0)) {
		cnode_error(d, node, "%s", "an MLA model ('kv_lora_rank') also needs "
		       "'qk_nope_head_dim', 'qk_rope_head_dim' and 'v_head_dim'");
		rc = -1;
	}
	return rc;
}

static const char *const model_dirs[] = {"workloads/models", NULL};

const struct schema model_schema = {
	.kind = "model",
	.help = "an LLM architecture in Hugging Face config.json terms",
	.preset_dirs = model_dirs,
	.size = sizeof(struct model_spec),
	.fields = model_fields,
	.nfields = SCHEMA_COUNT(model_fields),
	.check = model_check,
	.ignored_keys = ignored,
};
