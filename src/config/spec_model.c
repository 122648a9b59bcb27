/*
 * spec_model.c - the model schema (Hugging Face config.json keys).
 * Its rope_scaling and quantization_config sections are
 * spec_model_sections.c's; the per-layer queries on a resolved model
 * (model_is_moe, model_layer_window, ...) spec_model_layer.c's.
 */
#include "spec_model.h"

#include <stddef.h>
#include <string.h>

#include "cnode.h"
#include "base/diag.h"

const char *const hidden_act_names[] = {
	"silu", "gelu", "gelu_new", "gelu_pytorch_tanh", "relu", "relu2", NULL,
};

/* transformers activations.py ACT2CLS maps "swish" to SiLUActivation,
 * as it does "silu": the same function under its other name */
static const char *const hidden_act_aliases[] = { "swish", "silu", NULL };

static const char *const norm_names[] = {"rmsnorm", "layernorm", NULL};
static const char *const pos_names[] = {"rope", "learned", "none", NULL};

static const char *const experts_aliases[] = {
	"num_local_experts", "num_experts", NULL,
};

static const char *const qk_norm_aliases[] = { "use_qk_norm", NULL };
/* Nemotron-H / Nemotron 3 (transformers NemotronHConfig): the MLP's
 * activation (relu2: squared ReLU, a plain 2-matrix MLP) */
static const char *const act_aliases[] = { "mlp_hidden_act", NULL };
/* Nemotron-H (nvidia/Nemotron-H-8B-Base-8K config.json) names the
 * attention's head width attention_head_dim; the chunk is
 * mamba_chunk_size in some Mamba-2 configs (Falcon-H1) */
static const char *const head_dim_aliases[] = { "attention_head_dim", NULL };
static const char *const chunk_aliases[] = { "mamba_chunk_size", NULL };
/* transformers' Llama4TextConfig: moe_layers (when not given) =
 * range(interleave_moe_layer_step - 1, num_hidden_layers, step), i.e.
 * (i + 1) % step == 0, Qwen-MoE's decoder_sparse_step rule */
static const char *const sparse_step_aliases[] = {
	"interleave_moe_layer_step", NULL };
/* transformers' Llama4TextConfig names it no_rope_layer_interval */
static const char *const nope_interval_aliases[] = {
	"no_rope_layer_interval", NULL };
/* DeepSeek's nextn layers by other names: Qwen3.5's MTP modules
 * (mtp_num_hidden_layers, Qwen3_5TextConfig) and MiniMax-M2's
 * num_mtp_modules MTP modules (of mtp_transformer_layers layers each;
 * vLLM minimax_m2 MTP; MiniMaxAI/MiniMax-M2 config.json) */
static const char *const nextn_aliases[] = {
	"mtp_num_hidden_layers", "num_mtp_modules", NULL };
/* The shared expert's width by other names: MiniMax-M2's (0 in the
 * released checkpoint: none) and Nemotron 3's */
static const char *const shared_size_aliases[] = {
	"shared_intermediate_size", "moe_shared_expert_intermediate_size",
	NULL };

/* Keys found in real config.json files that do not change the time or
 * memory of a training step: tokenizer ids, initialization, dropout
 * probabilities (dropout itself is a job setting), rotary bases and
 * scaling, norm epsilons, loss coefficients, routing details that do not
 * change the work (probability normalization, scaling, bias update), and
 * bookkeeping. */
static const char *const ignored[] = {
	"architectures", "auto_map", "torch_dtype", "dtype",
	"transformers_version", "bos_token_id", "eos_token_id",
	"pad_token_id", "initializer_range", "use_cache", "attention_dropout",
	"hidden_dropout", "embd_pdrop", "resid_pdrop",
	"rope_theta", "rope_interleave", "rope_ntk_alpha", "rope_ntk_beta",
	"rope_scaling_factor", "partial_rotary_factor", "rms_norm_eps",
	"layer_norm_eps", "pretraining_tp", "output_router_logits",
	"router_aux_loss_coef", "router_jitter_noise", "norm_topk_prob",
	"topk_method", "routed_scaling_factor", "aux_loss_alpha", "seq_aux",
	"ep_size", "_name_or_path", "model_name", "attn_implementation",
	"head_dim_original", "initial_context_length",
	"ffn_hidden_size", "tokenizer_class",
	"is_decoder", "is_encoder_decoder", "return_dict", "tie_encoder_decoder", "keys_to_ignore_at_inference",
	/* Llama 4: the temperature's constants (attn_temperature_tuning
	 * itself is a field: it adds kernels in some engines), cache
	 * bookkeeping */
	"floor_scale", "attn_scale", "cache_implementation", "for_llm_compressor",
	"_attn_implementation_autoset",
	/* Nemotron-H / Nemotron 3 (transformers NemotronHConfig): the
	 * mixer's activation (silu, fused in its conv1d), dt initialization
	 * and limits, residual bookkeeping, logits kept at generation, the
	 * small conv1d and projection biases (d_inner + 2 G N and H values
	 * a layer), the kernel switch */
	"mamba_hidden_act", "time_step_min", "time_step_max",
	"time_step_floor", "time_step_limit", "time_step_rank",
	"rescale_prenorm_residual", "residual_in_fp32", "norm_eps",
	"num_logits_to_keep", "use_mamba_kernels", "use_conv_bias", "layer_norm_epsilon",
	"mamba_proj_bias", "use_bias",
	/* multimodal wrappers (Llama 4, Gemma 3, Qwen2.5/3-VL, Mistral 3):
	 * image/video token ids and the vision projector, which a language
	 * model simulation does not run */
	"boi_token_index", "eoi_token_index", "image_token_index",
	"image_token_id", "video_token_id", "vision_start_token_id",
	"vision_end_token_id", "vision_token_id", "mm_tokens_per_image",
	"multimodal_projector_bias", "projector_hidden_act",
	"spatial_merge_size", "vision_feature_layer",
	"vision_feature_select_strategy", "image_seq_length",
	/* Qwen3-Next / Qwen3.5 (spec_model_gdn.c): the recurrent state's
	 * dtype (llmsim keeps it in fp32, the value every Qwen3.5 config.json
	 * writes), MTP embedding bookkeeping. partial_rotary_factor (above)
	 * changes no time: a fused rotary kernel reads and writes the whole
	 * head, copying the part it does not rotate */
	"mamba_ssm_dtype", "mtp_use_dedicated_embeddings",
	/* MiniMax-M2 (MiniMaxAI/MiniMax-M2 config.json; vLLM
	 * model_executor/models/minimax_m2.py): residual scaling constants
	 * (1.0) of MiniMax-01's norms, the context bookkeeping, where the
	 * rotary embedding applies (rotary_dim 64 of head_dim 128, as
	 * partial_rotary_factor: the rotary kernel reads and writes q and k
	 * whole), QK-Norm over the whole q and k rather than per head
	 * (qk_norm_type per_layer: the same elements normalized; under TP
	 * vLLM's MiniMaxText01RMSNormTP adds a T x 1 fp32 all-reduce of the
	 * sums of squares, not modeled), the shared expert's gate function,
	 * the routing bias added to the scores before top-k (DeepSeek's
	 * noaux_tc in substance: the same work), whether MTP is used (a job
	 * turns MTP on), and the dense MLP width that no MiniMax-M2 layer
	 * builds (every layer is MoE: vLLM MiniMaxM2DecoderLayer always
	 * builds block_sparse_moe) */
	"layernorm_full_attention_beta", "layernorm_linear_attention_beta",
	"layernorm_mlp_beta", "max_model_len", "rotary_dim", "qk_norm_type",
	"shared_moe_mode", "use_routing_bias", "use_mtp",
	"mlp_intermediate_size",
	/* StarCoder2 (Starcoder2Config), GPT-NeoX (GPTNeoXConfig), StableLM:
	 * dropout probabilities and the norm epsilon (as above); mlp_type and
	 * norm_type, which transformers' Starcoder2 classes never read (its
	 * MLP is c_fc, act, c_proj; its norms nn.LayerNorm); GPT-NeoX's names
	 * for rope_theta and partial_rotary_factor (GPTNeoXConfig
	 * convert_rope_params_to_dict: rotary_emb_base, rotary_pct); and the
	 * keys model_hf_defaults (spec_model_hf.c) reads itself */
	"residual_dropout", "embedding_dropout", "norm_epsilon", "mlp_type",
	"norm_type", "rotary_emb_base", "rotary_pct", "use_qkv_bias",
	"use_parallel_residual", "logit_scale",
	NULL,
};

/* transformers v5 writes rope_scaling (with rope_theta) as rope_parameters
 * (vLLM PR #28542 reads either). */
static const char *const rope_scaling_aliases[] = {"rope_parameters", NULL};

static const char *const layer_type_names[] = {
	"full_attention", "sliding_attention", "chunked_attention",
	"linear_attention", NULL,
};

static const char *const scoring_names[] = {"softmax", "sigmoid", NULL};

#define OFF(m) offsetof(struct model_spec, m)
#define DIM(k, h) { .key = #k, .type = ST_INT, .offset = OFF(k), \
	.min = 1, .max = 1e9, .flags = SF_OPTIONAL, .help = h }

static const struct schema_field model_fields[] = {
	{ .key = "name", .type = ST_STRING, .offset = OFF(name),
	  .flags = SF_OPTIONAL, .help = "preset name" },
	{ .key = "model_type", .type = ST_STRING, .offset = OFF(model_type),
	  .flags = SF_OPTIONAL | SF_INFO, .help = "Hugging Face model_type (info)" },
	{ .key = "text_model_of", .type = ST_STRING, .offset = OFF(text_model_of),
	  .flags = SF_OPTIONAL | SF_INFO,
	  .help = "set when a multimodal checkpoint's config.json was read: "
		  "its model_type; the model is its text_config (info)" },
	{ .key = "hidden_size", .type = ST_INT, .offset = OFF(hidden_size),
	  .min = 1, .max = 1e7, .flags = SF_REQUIRED, .help = "model width d" },
	{ .key = "num_hidden_layers", .type = ST_INT, .offset = OFF(num_hidden_layers),
	  .min = 1, .max = 1e4, .flags = SF_REQUIRED,
	  .help = "transformer layers (at most 10000: a step simulates "
		  "each layer of a stage; Megatron's 1T model has 128, "
		  "DeepNet 1000)" },
	{ .key = "num_attention_heads", .type = ST_INT,
	  .offset = OFF(num_attention_heads), .min = 1, .max = 1e5,
	  .flags = SF_REQUIRED, .help = "query heads" },
	DIM(num_key_value_heads, "KV heads for GQA (default num_attention_heads)"),
	{ .key = "head_dim", .type = ST_INT, .offset = OFF(head_dim), .min = 1,
	  .max = 1e9, .aliases = head_dim_aliases, .flags = SF_OPTIONAL,
	  .help = "per-head dimension (default hidden_size / "
		  "num_attention_heads; Nemotron-H's attention_head_dim)" },
	{ .key = "intermediate_size", .type = ST_INT, .offset = OFF(intermediate_size),
	  .min = 1, .max = 1e8, .flags = SF_OPTIONAL,
	  .help = "dense MLP hidden size (with intermediate_size_mlp given, "
		  "Llama 4 terms: the expert's and shared expert's); "
		  "required unless every layer is MoE (Qwen3.5 MoE's "
		  "text_config has none)" },
	DIM(intermediate_size_mlp, "Llama 4: the dense layers' MLP hidden size "
	    "(then intermediate_size is the routed and the shared expert's)"),
	{ .key = "vocab_size", .type = ST_INT, .offset = OFF(vocab_size),
	  .min = 1, .max = 1e8, .flags = SF_REQUIRED, .help = "vocabulary size" },
	{ .key = "hidden_act", .type = ST_ENUM, .offset = OFF(hidden_act),
	  .values = hidden_act_names, .def = "silu", .aliases = act_aliases,
	  .help = "MLP activation; silu (or swish) means a gated (SwiGLU) "
		  "MLP",
	  .value_aliases = hidden_act_aliases },
	{ .key = "gated_mlp", .type = ST_BOOL, .offset = OFF(gated_mlp),
	  .flags = SF_OPTIONAL,
	  .help = "gate+up+down MLP (default: true for silu, false otherwise)" },
	{ .key = "norm", .type = ST_ENUM, .offset = OFF(norm), .values = norm_names,
	  .def = "rmsnorm", .help = "normalization layers" },
	{ .key = "norm_bias", .type = ST_BOOL, .offset = OFF(norm_bias),
	  .flags = SF_OPTIONAL,
	  .help = "a layernorm has a bias as well as a weight (default: "
		  "true, but false for model_type cohere and cohere2, whose "
		  "CohereLayerNorm subtracts the mean and has a weight only; "
		  "rmsnorm has no bias)" },
	{ .key = "position_embedding", .type = ST_ENUM,
	  .offset = OFF(position_embedding), .values = pos_names, .def = "rope",
	  .help = "rotary, learned table, or none" },
	{ .key = "max_position_embeddings", .type = ST_INT,
	  .offset = OFF(max_position_embeddings), .min = 1, .max = 1e9,
	  .flags = SF_OPTIONAL, .help = "longest sequence / learned position rows" },
	{ .key = "tie_word_embeddings", .type = ST_BOOL,
	  .offset = OFF(tie_word_embeddings), .flags = SF_OPTIONAL,
	  .help = "LM head shares the input embedding (default: true for "
		  "model_type gemma, gemma2, gemma3_text, gpt2, bloom, opt, "
		  "falcon, starcoder2, cohere, cohere2, mpt and gpt_bigcode, "
		  "whose transformers config classes tie by "
		  "default, so their config.json leaves the key out; else "
		  "false)" },
	{ .key = "attention_bias", .type = ST_BOOL, .offset = OFF(attention_bias),
	  .def = "false", .help = "attention projections have bias" },
	{ .key = "mlp_bias", .type = ST_BOOL, .offset = OFF(mlp_bias),
	  .flags = SF_OPTIONAL,
	  .help = "MLP and expert linears have bias (default: true for "
		  "model_type gpt_oss, whose experts carry gate_up and down "
		  "biases, else false)" },
	{ .key = "swiglu_limit", .type = ST_NUM, .offset = OFF(swiglu_limit),
	  .min = 0, .max = 1e6, .flags = SF_OPTIONAL,
	  .help = "gated MLP inputs clamped to this (gpt-oss: 7)" },
	{ .key = "quick_glu", .type = ST_BOOL, .offset = OFF(quick_glu),
	  .flags = SF_OPTIONAL,
	  .help = "the gated MLP's activation is quick-GELU, x sigmoid(1.702 "
		  "x), times the linear half plus an offset (default: true "
		  "for model_type gpt_oss, whose experts apply it whatever "
		  "hidden_act says, else false)" },
	{ .key = "attention_sinks", .type = ST_BOOL,
	  .offset = OFF(attention_sinks), .flags = SF_OPTIONAL,
	  .help = "every attention head adds a learned sink logit to its "
		  "softmax, which the attention kernel must support (default: "
		  "true for model_type gpt_oss, transformers GptOssAttention's "
		  "sinks, else false)" },
	{ .key = "rope_scaling", .type = ST_SECTION, .offset = OFF(rope_scaling),
	  .sub = &model_rope_schema, .aliases = rope_scaling_aliases,
	  .flags = SF_OPTIONAL,
	  .help = "rotary scaling (YaRN's attention factor scales cos and sin)" },
	{ .key = "qk_layernorm", .type = ST_BOOL, .offset = OFF(qk_layernorm),
	  .aliases = qk_norm_aliases, .flags = SF_OPTIONAL,
	  .help = "Q and K normalized per head before rotary (default: true "
		  "for model_type qwen3, qwen3_moe and qwen3_next, whose "
		  "attention always has q_norm and k_norm)" },
	{ .key = "router_weight_on_input", .type = ST_BOOL,
	  .offset = OFF(router_weight_on_input), .flags = SF_OPTIONAL,
	  .help = "the router's weight scales a token's input to its expert, "
		  "not the expert's output (default: true for model_type "
		  "llama4 and llama4_text, whose Llama4TextMoe multiplies "
		  "routed_in by router_scores, else false)" },
	{ .key = "n_routed_experts", .type = ST_INT, .offset = OFF(n_routed_experts),
	  .min = 1, .max = 1e6, .aliases = experts_aliases, .flags = SF_OPTIONAL,
	  .help = "routed experts per MoE layer (absent: dense)" },
	DIM(num_experts_per_tok, "experts each token is routed to (top-k)"),
	DIM(moe_intermediate_size, "per-expert MLP hidden size"),
	DIM(moe_latent_size, "latent MoE: the routed experts' input and output "
	    "width; tokens are projected from the hidden size to it before "
	    "the dispatch and back after the combine (Nemotron 3 Super; "
	    "absent or null: none)"),
	{ .key = "n_shared_experts", .type = ST_INT, .offset = OFF(n_shared_experts),
	  .min = 0, .max = 1e4, .flags = SF_OPTIONAL,
	  .help = "shared (always-on) experts per MoE layer" },
	{ .key = "shared_expert_intermediate_size", .type = ST_INT,
	  .offset = OFF(shared_expert_intermediate_size), .min = 0, .max = 1e9,
	  .aliases = shared_size_aliases, .flags = SF_OPTIONAL,
	  .help = "shared expert hidden size (Qwen-MoE; MiniMax-M2's "
		  "shared_intermediate_size, Nemotron 3's "
		  "moe_shared_expert_intermediate_size); 0 = none" },
	{ .key = "first_k_dense_replace", .type = ST_INT,
	  .offset = OFF(first_k_dense_replace), .min = 0, .max = 1e5,
	  .flags = SF_OPTIONAL, .help = "the first k layers are dense (DeepSeek)" },
	{ .key = "decoder_sparse_step", .type = ST_INT,
	  .offset = OFF(decoder_sparse_step), .min = 1, .max = 1e9,
	  .aliases = sparse_step_aliases, .flags = SF_OPTIONAL,
	  .help = "every n-th layer is MoE (Qwen-MoE; Llama 4's "
		  "interleave_moe_layer_step)" },
	{ .key = "moe_layers", .type = ST_INT_LIST, .offset = OFF(moe_layers),
	  .min = 0, .max = 1e5, .flags = SF_OPTIONAL,
	  .help = "Llama 4: the MoE layers (absent: by decoder_sparse_step)" },
	DIM(moe_layer_freq, "DeepSeek: layers i >= first_k_dense_replace with "
	    "i % moe_layer_freq == 0 are MoE"),
	{ .key = "mlp_only_layers", .type = ST_INT_LIST,
	  .offset = OFF(mlp_only_layers), .min = 0, .max = 1e5,
	  .flags = SF_OPTIONAL, .help = "layers kept dense (Qwen-MoE)" },
	DIM(experts_per_token, "top-k as gpt-oss spells it (= num_experts_per_tok)"),
	{ .key = "scoring_func", .type = ST_ENUM, .offset = OFF(scoring_func),
	  .values = scoring_names, .def = "softmax",
	  .help = "router scores: softmax or sigmoid (DeepSeek-V3)" },
	DIM(n_group, "expert groups of group-limited routing (DeepSeek)"),
	DIM(topk_group, "groups one token's experts may come from"),
	{ .key = "num_nextn_predict_layers", .type = ST_INT,
	  .offset = OFF(num_nextn_predict_layers), .min = 0, .max = 64,
	  .aliases = nextn_aliases, .flags = SF_OPTIONAL,
	  .help = "multi-token-prediction modules (DeepSeek-V3); a job turns them on" },
	{ .key = "sliding_window", .type = ST_INT, .offset = OFF(sliding_window),
	  .min = 1, .max = 1e9, .flags = SF_OPTIONAL,
	  .help = "keys a sliding-window attention layer sees" },
	{ .key = "use_sliding_window", .type = ST_BOOL,
	  .offset = OFF(use_sliding_window), .flags = SF_OPTIONAL,
	  .help = "Qwen2/3: whether sliding_window applies" },
	{ .key = "max_window_layers", .type = ST_INT,
	  .offset = OFF(max_window_layers), .min = 0, .max = 1e5,
	  .flags = SF_OPTIONAL,
	  .help = "Qwen2/3: layers from this index on use the sliding window" },
	{ .key = "layer_types", .type = ST_INT_LIST, .offset = OFF(layer_types),
	  .values = layer_type_names, .flags = SF_OPTIONAL,
	  .help = "attention of each layer (gpt-oss; Llama 4 in newer "
		  "transformers: chunked_attention = RoPE layer, "
		  "full_attention = NoPE layer)" },
	{ .key = "attention_chunk_size", .type = ST_INT,
	  .offset = OFF(attention_chunk_size), .min = 1, .max = 1e9,
	  .flags = SF_OPTIONAL,
	  .help = "Llama 4: RoPE layers attend within aligned chunks of this "
		  "many tokens (chunked attention)" },
	{ .key = "no_rope_layers", .type = ST_INT_LIST,
	  .offset = OFF(no_rope_layers), .min = 0, .max = 1,
	  .flags = SF_OPTIONAL,
	  .help = "Llama 4: per layer 1 = RoPE (chunked attention), 0 = NoPE "
		  "(global attention), the first num_hidden_layers entries "
		  "read; absent or []: by nope_layer_interval" },
	{ .key = "nope_layer_interval", .type = ST_INT,
	  .offset = OFF(nope_layer_interval), .min = 1, .max = 1e5,
	  .aliases = nope_interval_aliases, .flags = SF_OPTIONAL,
	  .help = "Llama 4: every n-th layer is NoPE when no_rope_layers is "
		  "absent or empty (transformers' Llama4TextConfig "
		  "no_rope_layer_interval, default 4)" },
	{ .key = "attn_temperature_tuning", .type = ST_NUM,
	  .offset = OFF(attn_temperature_tuning), .min = 0, .max = 1e9,
	  .flags = SF_OPTIONAL | SF_BOOLNUM,
	  .help = "Llama 4: the NoPE layers scale each query by log(floor((p "
		  "+ 1) / floor_scale) + 1) attn_scale + 1 at position p; on "
		  "when > 0 or true (the checkpoints write 4; TensorRT-LLM "
		  "reads 'attn_temperature_tuning > 0'); the engine's "
		  "attn_temperature says what it costs" },
	{ .key = "vision_params", .type = ST_NUM, .offset = OFF(vision_params),
	  .min = 0, .max = 1e13, .flags = SF_OPTIONAL,
	  .help = "parameters of a multimodal checkpoint's vision encoder and "
		  "projector (vision_config's tower, adapter and "
		  "multi_modal_projector): not simulated, but held in GPU "
		  "memory by an engine with vision_encoder" },
	{ .key = "quantization_config", .type = ST_SECTION,
	  .offset = OFF(quantization), .sub = &model_quant_schema,
	  .flags = SF_OPTIONAL,
	  .help = "checkpoint weight format (used for inference memory; "
		  "training runs in training.dtype)" },
	DIM(q_lora_rank, "MLA query low-rank dimension"),
	DIM(kv_lora_rank, "MLA key/value low-rank dimension"),
	DIM(qk_nope_head_dim, "MLA per-head non-rotary Q/K dimension"),
	DIM(qk_rope_head_dim, "MLA per-head rotary Q/K dimension"),
	DIM(v_head_dim, "MLA per-head value dimension"),
	{ .key = "mtp_hybrid_override_pattern", .type = ST_STRING,
	  .offset = OFF(mtp_hybrid_override_pattern), .flags = SF_OPTIONAL,
	  .help = "a hybrid's MTP module: its blocks in the pattern's "
		  "characters (Nemotron 3 Super: *E, an attention and an MoE "
		  "block), at most 4; absent: a layer of the last layer's "
		  "kind" },
	{ .key = "hybrid_override_pattern", .type = ST_STRING,
	  .offset = OFF(hybrid_override_pattern), .flags = SF_OPTIONAL,
	  .help = "Nemotron-H / Nemotron 3: one character a layer, M "
		  "Mamba-2 mixer, * attention, - MLP, E MoE (each alone with "
		  "its norm and residual; spec_model_mamba.c)" },
	DIM(mamba_num_heads, "Mamba-2 heads H (d_inner = H x mamba_head_dim)"),
	DIM(mamba_head_dim, "Mamba-2 channels per head P"),
	DIM(ssm_state_size, "Mamba-2 state size N per channel"),
	DIM(n_groups, "Mamba-2 groups of the B and C projections (default 1)"),
	DIM(conv_kernel, "Mamba-2 causal conv1d width (default 4)"),
	{ .key = "chunk_size", .type = ST_INT, .offset = OFF(chunk_size),
	  .min = 1, .max = 1e9, .aliases = chunk_aliases, .flags = SF_OPTIONAL,
	  .help = "Mamba-2 SSD scan chunk (default 128)" },
	DIM(expand, "Mamba-2 d_inner / hidden_size (used when mamba_num_heads "
	    "is not given)"),
	{ .key = "mamba_ssm_cache_dtype", .type = ST_STRING,
	  .offset = OFF(mamba_ssm_cache_dtype), .flags = SF_OPTIONAL,
	  .help = "serving: dtype of the Mamba SSM state (float32, bfloat16, "
		  "float16, auto = the activations')" },
	/* Gated DeltaNet (Qwen3-Next, Qwen3.5: spec_model_gdn.c) */
	DIM(linear_num_key_heads, "Gated DeltaNet q/k heads of the "
	    "linear_attention layers"),
	DIM(linear_num_value_heads, "Gated DeltaNet v heads (a multiple of "
	    "linear_num_key_heads)"),
	DIM(linear_key_head_dim, "Gated DeltaNet per-head q/k dimension"),
	DIM(linear_value_head_dim, "Gated DeltaNet per-head v dimension"),
	DIM(linear_conv_kernel_dim, "Gated DeltaNet causal conv1d width "
	    "(default 4)"),
	DIM(full_attention_interval, "without layer_types: every n-th layer "
	    "is full attention, the others Gated DeltaNet (default 4 when "
	    "the linear keys are given, transformers' Qwen3NextConfig)"),
	{ .key = "attn_output_gate", .type = ST_BOOL,
	  .offset = OFF(attn_output_gate), .flags = SF_OPTIONAL,
	  .help = "full attention's output multiplied by sigmoid of a second "
		  "q-sized projection (q_proj twice as wide; default: true "
		  "for model_type qwen3_next and qwen3_5*, whose attention "
		  "always has the gate, else false)" },
	/* DeepSeek-V3.2-Exp's DeepSeek Sparse Attention (deepseek-ai/
	 * DeepSeek-V3.2-Exp config.json and inference/model.py Indexer) */
	DIM(index_n_heads, "DSA: lightning indexer heads (DeepSeek-V3.2: 64)"),
	DIM(index_head_dim, "DSA: lightning indexer head dimension (128)"),
	DIM(index_topk, "DSA: keys each query attends to, chosen by the "
	    "indexer (2048); given: sparse attention"),
	/* MiniMax-M2 */
	{ .key = "attn_type_list", .type = ST_INT_LIST,
	  .offset = OFF(attn_type_list), .min = 0, .max = 1,
	  .flags = SF_OPTIONAL,
	  .help = "MiniMax: per layer 1 = softmax attention, 0 = lightning "
		  "(linear) attention (MiniMax-01; not modeled: refused)" },
	{ .key = "mtp_transformer_layers", .type = ST_INT,
	  .offset = OFF(mtp_transformer_layers), .min = 1, .max = 1e3,
	  .flags = SF_OPTIONAL,
	  .help = "MiniMax-M2: transformer layers per MTP module (1, as "
		  "DeepSeek's; more are not modeled)" },
};

/* Where a conflict among keys is reported: the value of the one the
 * user changed (schema_check_blame: a --set, a file overriding the
 * preset), else of the first one written, else the mapping. A key's
 * aliases (num_local_experts for n_routed_experts) count as the key. */
static const struct cnode *blamed(const struct cnode *node,
				  const char *const *keys, int n)
{
	const char *names[24];
	const struct schema_field *f;
	struct schema_at at = { node, NULL };
	int i, k, c = 0;

	if (!node)
		return NULL;
	for (i = 0; i < n; i++) {
		f = schema_field(&model_schema, keys[i]);
		if (c < 24)
			names[c++] = keys[i];
		for (k = 0; f && f->aliases && f->aliases[k] && c < 24; k++)
			names[c++] = f->aliases[k];
	}
	for (i = 0; i < c && !cnode_get(node, names[i]); i++)
		;
	if (i == c)	/* none written here: the mapping */
		return node;
	return cnode_get(node, names[schema_check_blame(&at, names, c)]);
}

/* Top-k: num_experts_per_tok, or gpt-oss's experts_per_token (both
 * present in its config.json, with the same value). */
static int check_topk(struct model_spec *m, const struct cnode *node,
		      struct diag *d)
{
	if (m->experts_per_token > 0 && m->num_experts_per_tok > 0 &&
	    m->experts_per_token != m->num_experts_per_tok) {
		cnode_error(d, node, "'experts_per_token' %lld and "
			    "'num_experts_per_tok' %lld disagree",
			    (long long)m->experts_per_token,
			    (long long)m->num_experts_per_tok);
		return -1;
	}
	if (m->num_experts_per_tok == 0)
		m->num_experts_per_tok = m->experts_per_token;
	if (m->num_experts_per_tok == 0) {
		cnode_error(d, node, "%s", "an MoE model ('n_routed_experts') also "
			    "needs 'num_experts_per_tok'");
		return -1;
	}
	if (m->num_experts_per_tok > m->n_routed_experts) {
		static const char *const keys[] = {"num_experts_per_tok",
			"experts_per_token", "n_routed_experts"};

		cnode_error(d, blamed(node, keys, 3),
			    "'num_experts_per_tok' %lld exceeds "
			    "'n_routed_experts' %lld: a token cannot pick more "
			    "experts than there are",
			    (long long)m->num_experts_per_tok,
			    (long long)m->n_routed_experts);
		return -1;
	}
	return 0;
}

/* Group-limited routing: groups divide the experts and a token's top-k
 * fits in the groups it may use. */
static int check_groups(const struct model_spec *m, const struct cnode *node,
			struct diag *d)
{
	if (m->n_group == 0 && m->topk_group == 0)
		return 0;
	if (m->n_group == 0 || m->topk_group == 0 || m->topk_group > m->n_group ||
	    m->n_routed_experts % m->n_group != 0) {
		static const char *const keys[] = {"n_group", "topk_group",
						   "n_routed_experts"};

		cnode_error(d, blamed(node, keys, 3),
			    "group-limited routing needs 'n_group' "
			    "dividing 'n_routed_experts' %lld and 1 <= "
			    "'topk_group' <= 'n_group' (got %lld, %lld)",
			    (long long)m->n_routed_experts, (long long)m->n_group,
			    (long long)m->topk_group);
		return -1;
	}
	/* DeepSeek's gate keeps the topk_group best groups, zeroes the
	 * others' scores, then takes the top k: a k past the experts of
	 * those groups would route to masked experts
	 * (deepseek-ai/DeepSeek-V3@013e2213 inference/model.py
	 * Gate.forward) [D]. */
	if (m->num_experts_per_tok >
	    m->topk_group * (m->n_routed_experts / m->n_group)) {
		static const char *const keys[] = {"num_experts_per_tok",
			"experts_per_token", "topk_group", "n_group"};

		cnode_error(d, blamed(node, keys, 4),
			    "'num_experts_per_tok' %lld exceeds the %lld "
			    "experts of 'topk_group' %lld groups of %lld "
			    "('n_routed_experts' %lld / 'n_group' %lld): a "
			    "token's experts come from its topk_group groups",
			    (long long)m->num_experts_per_tok,
			    (long long)(m->topk_group *
					(m->n_routed_experts / m->n_group)),
			    (long long)m->topk_group,
			    (long long)(m->n_routed_experts / m->n_group),
			    (long long)m->n_routed_experts,
			    (long long)m->n_group);
		return -1;
	}
	return 0;
}

/* A size given both ways must agree: 0, or -1 after reporting. */
static int same_size(const struct cnode *node, struct diag *d,
		     const char *key, int64_t given, int64_t llama4)
{
	const struct cnode *at = node ? cnode_get(node, key) : NULL;

	if (given == 0 || given == llama4)
		return 0;
	cnode_error(d, at ? at : node, "'%s' %lld contradicts "
		    "'intermediate_size' %lld, which in Llama 4 terms "
		    "('intermediate_size_mlp' given) is the expert's width",
		    key, (long long)given, (long long)llama4);
	return -1;
}

/* Llama 4 terms (intermediate_size_mlp given): intermediate_size is the
 * routed expert's width and the one shared expert's of every MoE layer,
 * intermediate_size_mlp the dense layers' MLP (transformers v5
 * modeling_llama4.py: Llama4TextMoe builds experts of
 * config.intermediate_size and shared_expert = Llama4TextMLP(config),
 * Llama4TextDecoderLayer a dense layer's Llama4TextMLP of
 * config.intermediate_size_mlp; configuration_llama4.py Llama4TextConfig,
 * huggingface/transformers commit 008e574). Moved into llmsim's terms, so
 * the resolved model prints as the preset does and reads back the same. */
static int llama4_sizes(struct model_spec *m, const struct cnode *node,
			struct diag *d)
{
	int64_t expert = m->intermediate_size;
	int rc = 0;

	if (m->intermediate_size_mlp == 0)
		return 0;
	if (same_size(node, d, "moe_intermediate_size",
		      m->moe_intermediate_size, expert) != 0 ||
	    same_size(node, d, "shared_expert_intermediate_size",
		      m->shared_expert_intermediate_size, expert) != 0)
		rc = -1;
	m->intermediate_size = m->intermediate_size_mlp;
	m->intermediate_size_mlp = 0;
	if (model_is_moe(m)) {
		m->moe_intermediate_size = expert;
		if (m->n_shared_experts == 0)
			m->shared_expert_intermediate_size = expert;
	}
	return rc;
}

/* moe_layers name layers of the model. */
static int check_moe_layers(const struct model_spec *m,
			    const struct cnode *node, struct diag *d)
{
	const struct cnode *at = node ? cnode_get(node, "moe_layers") : NULL;
	size_t k;

	/* the latent projections wrap routed experts (Megatron-Core
	 * MoELayer): a dense model has none to wrap */
	if (m->moe_latent_size > 0 && m->n_routed_experts <= 0) {
		const struct cnode *lat = node ?
			cnode_get(node, "moe_latent_size") : NULL;

		cnode_error(d, lat ? lat : node, "'moe_latent_size' %lld without routed experts "
			    "('n_routed_experts'): the latent projections "
			    "wrap an MoE layer's experts",
			    (long long)m->moe_latent_size);
		return -1;
	}
	for (k = 0; k < m->moe_layers.n; k++)
		if (m->moe_layers.v[k] >= m->num_hidden_layers) {
			cnode_error(d, at ? at : node, "'moe_layers' names "
				    "layer %lld of a %lld-layer model",
				    (long long)m->moe_layers.v[k],
				    (long long)m->num_hidden_layers);
			return -1;
		}
	return 0;
}

/* A model whose MoE keys select none of its layers (DeepSeek's
 * first_k_dense_replace at or past num_hidden_layers, every layer in
 * mlp_only_layers) builds only dense MLPs of intermediate_size in
 * transformers (modeling_deepseek_v3.py DeepseekV3DecoderLayer,
 * modeling_qwen2_moe.py Qwen2MoeDecoderLayer): it is simulated as the
 * dense model it is, with a note. */
static void check_moe_any_layer(struct model_spec *m,
				const struct cnode *node, struct diag *d)
{
	static const char *const keys[] = {"first_k_dense_replace",
		"mlp_only_layers", "moe_layers", "decoder_sparse_step",
		"moe_layer_freq"};
	const struct cnode *at;
	int64_t i;

	for (i = 0; i < m->num_hidden_layers; i++)
		if (model_layer_moe(m, i))
			return;
	m->no_moe_layer = 1;
	at = blamed(node, keys, 5);
	diag_note(d, at ? at->file : NULL, at ? at->line : 0, at ? at->col : 0,
		  "the model's %lld routed experts are in none of its %lld "
		  "layers (first_k_dense_replace, mlp_only_layers, "
		  "moe_layers, decoder_sparse_step): every layer is a dense "
		  "MLP of intermediate_size %lld, as transformers builds it; "
		  "simulated as a dense model", (long long)m->n_routed_experts,
		  (long long)m->num_hidden_layers,
		  (long long)m->intermediate_size);
}

/* Whether Hugging Face model_type `type` names its expert width
 * moe_intermediate_size, a key of its own with a default of its own in
 * its transformers config class (configuration_<type>.py), unlike Mixtral
 * and gpt-oss, whose experts are intermediate_size wide [?]. */
static int own_expert_size_key(const char *type)
{
	static const char *const types[] = {
		"deepseek_v2", "deepseek_v3", "qwen2_moe", "qwen3_moe",
		"qwen3_next", "glm4_moe",
	};
	size_t i;

	for (i = 0; type && i < sizeof(types) / sizeof(types[0]); i++)
		if (strcmp(type, types[i]) == 0)
			return 1;
	return 0;
}

/* Experts as intermediate_size wide when moe_intermediate_size is not
 * given; a warning at model_type where the model's own config class
 * would have used its own default instead (a file missing the key would
 * otherwise be simulated with experts several times too wide). */
static void default_expert_size(struct model_spec *m,
				const struct cnode *node, struct diag *d)
{
	const struct cnode *at = node ? cnode_get(node, "model_type") : NULL;

	if (m->moe_intermediate_size != 0)
		return;
	m->moe_intermediate_size = m->intermediate_size;
	if (!own_expert_size_key(m->model_type))
		return;
	if (!at)
		at = node;
	diag_warn(d, at ? at->file : NULL, at ? at->line : 0,
		  at ? at->col : 0, "'moe_intermediate_size' is missing: "
		  "model_type %s sizes its experts by it (with a transformers "
		  "default of its own); llmsim takes intermediate_size %lld, "
		  "as for Mixtral and gpt-oss: give moe_intermediate_size",
		  m->model_type, (long long)m->intermediate_size);
}

static int check_moe(struct model_spec *m, const struct cnode *node,
		     struct diag *d)
{
	int rc = 0;

	if (!model_is_moe(m)) {
		if (m->num_experts_per_tok > 0 || m->experts_per_token > 0) {
			cnode_error(d, node, "%s", "'num_experts_per_tok' without "
				    "'n_routed_experts' (or num_experts, "
				    "num_local_experts)");
			return -1;
		}
		return 0;
	}
	/* Mixtral's and gpt-oss's config.json give the expert size as
	 * intermediate_size and have no moe_intermediate_size. */
	default_expert_size(m, node, d);
	if (m->moe_intermediate_size == 0) {
		cnode_error(d, node, "%s", "an MoE model needs "
			    "'moe_intermediate_size' (or 'intermediate_size', "
			    "the experts' width for Mixtral and gpt-oss)");
		return -1;
	}
	if (check_topk(m, node, d) != 0 || check_groups(m, node, d) != 0)
		rc = -1;
	if (m->decoder_sparse_step == 0)
		m->decoder_sparse_step = 1;
	if (m->moe_layer_freq == 0)
		m->moe_layer_freq = 1;
	if (rc == 0)
		check_moe_any_layer(m, node, d);
	return rc;
}

/* intermediate_size: the dense MLPs' width, needed when a layer has one
 * (transformers' Qwen3_5MoeTextConfig has no such key: every layer of
 * Qwen3.5 MoE is sparse). */
static int check_ffn(const struct model_spec *m, const struct cnode *node,
		     struct diag *d)
{
	int64_t i;

	if (m->intermediate_size > 0)
		return 0;
	for (i = 0; i < m->num_hidden_layers; i++)
		if (!model_layer_moe(m, i)) {
			cnode_error(d, node, "'intermediate_size' is missing: "
				    "layer %lld has a dense MLP (every layer "
				    "MoE needs none)", (long long)i);
			return -1;
		}
	return 0;
}

/* Sliding-window keys: a window for the layers that slide, one entry
 * of layer_types per layer. */
static int check_window(const struct model_spec *m, const struct cnode *node,
			struct diag *d)
{
	size_t i;

	/* given empty too: `layer_types: []` was taken as absent, the
	 * layers then read from full_attention_interval or as attention
	 * without a word (transformers' layer_type_validation refuses a
	 * list of another length) */
	if ((m->layer_types.n > 0 || m->layer_types.given) &&
	    m->layer_types.n != (size_t)m->num_hidden_layers) {
		static const char *const keys[] = {"layer_types",
						   "num_hidden_layers"};

		cnode_error(d, blamed(node, keys, 2),
			    "'layer_types' has %zu entries for %lld "
			    "layers", m->layer_types.n,
			    (long long)m->num_hidden_layers);
		return -1;
	}
	for (i = 0; i < m->layer_types.n; i++)
		if (m->layer_types.v[i] == LTYPE_SLIDING && m->sliding_window == 0) {
			cnode_error(d, node, "'layer_types' has sliding_attention "
				    "layers but no 'sliding_window'");
			return -1;
		}
	/* transformers reads the first num_hidden_layers entries */
	if (m->no_rope_layers.n > 0 &&
	    m->no_rope_layers.n < (size_t)m->num_hidden_layers) {
		const struct cnode *at = node ?
			cnode_get(node, "no_rope_layers") : NULL;

		cnode_error(d, at ? at : node, "'no_rope_layers' has %zu "
			    "entries for %lld layers", m->no_rope_layers.n,
			    (long long)m->num_hidden_layers);
		return -1;
	}
	return 0;
}

/* DeepSeek Sparse Attention: the indexer needs its heads, and runs
 * beside MLA, its queries from MLA's q_lora latent (Indexer.wq_b reads
 * qr, the q_a projection's normed output). */
static int check_dsa(const struct model_spec *m, const struct cnode *node,
		     struct diag *d)
{
	static const char *const keys[] = {"index_topk", "index_n_heads",
		"index_head_dim", "kv_lora_rank", "q_lora_rank"};

	if (m->index_topk == 0 && m->index_n_heads == 0 &&
	    m->index_head_dim == 0)
		return 0;
	if (m->index_topk > 0 && m->index_n_heads > 0 &&
	    m->index_head_dim > 0 && model_is_mla(m) && m->q_lora_rank > 0)
		return 0;
	cnode_error(d, blamed(node, keys, 5), "%s", "DeepSeek Sparse "
		    "Attention needs 'index_topk', 'index_n_heads' and "
		    "'index_head_dim' together, on an MLA model with "
		    "'kv_lora_rank' and 'q_lora_rank' (its indexer reads the "
		    "query latent)");
	return -1;
}

/* MiniMax's attn_type_list: one entry per layer, every one softmax
 * attention (1); MiniMax-01's lightning attention layers (0: a linear
 * attention, MiniMaxText01LinearAttention in vLLM minimax_text_01.py)
 * are not modeled. An MTP module of one layer (mtp_transformer_layers)
 * is DeepSeek's nextn layer; more are not modeled. */
static int check_attn_types(const struct model_spec *m,
			    const struct cnode *node, struct diag *d)
{
	const struct cnode *at = node ? cnode_get(node, "attn_type_list")
				      : NULL;
	size_t i;

	if (m->mtp_transformer_layers > 1) {
		const struct cnode *k = node ?
			cnode_get(node, "mtp_transformer_layers") : NULL;

		cnode_error(d, k ? k : node, "'mtp_transformer_layers' %lld: "
			    "an MTP module of more than one transformer layer "
			    "is not modeled (MiniMax-M2 and DeepSeek-V3 have "
			    "one)", (long long)m->mtp_transformer_layers);
		return -1;
	}
	if (m->attn_type_list.n == 0)
		return 0;
	if (m->attn_type_list.n != (size_t)m->num_hidden_layers) {
		cnode_error(d, at ? at : node, "'attn_type_list' has %zu "
			    "entries for %lld layers", m->attn_type_list.n,
			    (long long)m->num_hidden_layers);
		return -1;
	}
	for (i = 0; i < m->attn_type_list.n; i++)
		if (m->attn_type_list.v[i] == 0) {
			cnode_error(d, at ? at : node, "'attn_type_list' "
				    "makes layer %zu a lightning (linear) "
				    "attention layer (0), which llmsim does not "
				    "model; only softmax attention layers (1) "
				    "are simulated", i);
			return -1;
		}
	return 0;
}

static int model_check(void *obj, const struct schema_at *at, struct diag *d)
{
	const struct cnode *node = at->map;
	struct model_spec *m = obj;
	int rc = 0;

	if (m->num_key_value_heads == 0)
		m->num_key_value_heads = m->num_attention_heads;
	m->config_head_dim = m->head_dim;
	if (m->head_dim == 0 && model_is_mla(m))	/* Q/K per head */
		m->head_dim = m->qk_nope_head_dim + m->qk_rope_head_dim;
	if (m->head_dim == 0) {
		if (m->hidden_size % m->num_attention_heads != 0) {
			static const char *const keys[] = {
				"hidden_size", "num_attention_heads"};

			cnode_error(d, blamed(node, keys, 2), "%s",
				    "'hidden_size' must be a multiple of "
			       "'num_attention_heads' unless 'head_dim' is given");
			rc = -1;
		}
		m->head_dim = m->hidden_size / m->num_attention_heads;
	}
	if (m->num_attention_heads % m->num_key_value_heads != 0) {
		static const char *const keys[] = {"num_attention_heads",
						   "num_key_value_heads"};

		cnode_error(d, blamed(node, keys, 2), "%s",
			    "'num_attention_heads' must be a multiple of "
		       "'num_key_value_heads'");
		rc = -1;
	}
	if (m->gated_mlp < 0)
		m->gated_mlp = m->hidden_act == ACT_SILU;
	/* An absent key is the config class's default, which config.json
	 * leaves out (PretrainedConfig.to_diff_dict; spec_model_hf.c
	 * model_tied_by_default). Loaded untied, gemma-7b carried a second
	 * 256000 x 3072 head (786 M parameters, its optimizer states and
	 * gradients). */
	if (m->tie_word_embeddings < 0)
		m->tie_word_embeddings = model_tied_by_default(m->model_type);
	if (model_hf_defaults(m, node, d) != 0)
		rc = -1;
	if (m->mlp_bias < 0)	/* transformers GptOssExperts: biases always */
		m->mlp_bias = m->model_type &&
			      strcmp(m->model_type, "gpt_oss") == 0;
	/* transformers GptOssExperts._apply_gate: gate * sigmoid(gate *
	 * 1.702) * (up + 1), hidden_act unread; Megatron-Bridge's gpt-oss
	 * bridge sets activation_func quick_gelu, glu_linear_offset 1.0
	 * (gpt_oss_bridge.py @ 067f987) */
	/* transformers GptOssAttention: self.sinks, one logit a head */
	if (m->attention_sinks < 0)
		m->attention_sinks = m->model_type &&
				     strcmp(m->model_type, "gpt_oss") == 0;
	if (m->quick_glu < 0)
		m->quick_glu = m->model_type &&
			       strcmp(m->model_type, "gpt_oss") == 0;
	m->rope_mscale = model_rope_mscale(&m->rope_scaling);
	/* transformers' Qwen3Attention (and the MoE and Next variants) builds
	 * q_norm and k_norm unconditionally; their config.json has no key */
	/* transformers' Llama4TextMoe.forward: routed_in = hidden_states
	 * repeated per expert, times router_scores, before the experts
	 * (TensorRT-LLM's Llama4MoE: apply_router_weight_on_input=True).
	 * Set on Llama 4 only: absent stays -1 (off) elsewhere, so no other
	 * model's printed config changes */
	if (m->router_weight_on_input < 0 && m->model_type &&
	    strncmp(m->model_type, "llama4", 6) == 0)
		m->router_weight_on_input = 1;
	/* GLM-4.5's config.json has no scoring_func: transformers'
	 * Glm4MoeTopkRouter always scores by sigmoid (modeling_glm4_moe.py
	 * Glm4MoeTopkRouter.forward: router_logits.sigmoid(); vLLM's
	 * glm4_moe.py passes scoring_func="sigmoid" to its FusedMoE) */
	if (m->model_type && strcmp(m->model_type, "glm4_moe") == 0 &&
	    !(node && cnode_get(node, "scoring_func")))
		m->scoring_func = SCORE_SIGMOID;
	/* Nemotron-H / Nemotron 3 attention has no position embedding:
	 * Megatron-Bridge's MambaModelProvider (src/megatron/bridge/models/
	 * mamba/mamba_provider.py: position_embedding_type "none", which
	 * nemotron_h_provider.py's providers keep) and vLLM's nemotron_h.py
	 * NemotronHAttention (qkv_proj, attn, o_proj, no rotary_emb); the
	 * config.json's rope_theta is read by nothing */
	if (m->model_type && strcmp(m->model_type, "nemotron_h") == 0 &&
	    !(node && cnode_get(node, "position_embedding")))
		m->position_embedding = POS_NONE;
	if (m->qk_layernorm < 0)
		m->qk_layernorm = m->model_type &&
				  strncmp(m->model_type, "qwen3", 5) == 0;
	/* transformers' Llama4TextConfig: no_rope_layer_interval=4 (set
	 * only on a chunked model or one with attention temperature tuning,
	 * which applies to the NoPE layers, so no other model's config
	 * changes) */
	if (model_check_chunked(m, node, d) != 0)
		rc = -1;
	if ((m->attention_chunk_size > 0 || m->attn_temperature_tuning > 0) &&
	    m->nope_layer_interval == 0)
		m->nope_layer_interval = 4;
	if (llama4_sizes(m, node, d) != 0 || check_moe_layers(m, node, d) != 0)
		rc = -1;
	if (model_check_hybrid(m, node, d) != 0)	/* before check_moe */
		return -1;
	if (check_moe(m, node, d) != 0 || check_window(m, node, d) != 0 ||
	    model_check_gdn(m, node, d) != 0 ||
	    model_check_hf_keys(node, d) != 0)
		rc = -1;
	if (check_dsa(m, node, d) != 0 || check_attn_types(m, node, d) != 0)
		rc = -1;
	if (rc == 0 && check_ffn(m, node, d) != 0)
		rc = -1;
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
