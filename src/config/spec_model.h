/*
 * spec_model.h - an LLM architecture, in Hugging Face config.json terms.
 *
 * Keys are the ones Hugging Face uses for the Llama, Mistral, Mixtral,
 * Qwen2/3(-MoE), gpt-oss and DeepSeek-V2/V3 families, so a model is either
 * YAML in workloads/models/ or an actual config.json (read with cJSON).
 * In a config.json the keys known not to affect performance are accepted
 * silently; any other key llmsim does not model is a warning naming the
 * modeled key it may be a typo of. A multimodal checkpoint's config.json
 * (text_config beside vision_config: Llama 4, Gemma 3, Qwen2.5/3-VL,
 * Mistral 3) is read as its text model (model_text_config). Llama 4's
 * own terms (intermediate_size_mlp given: intermediate_size is the
 * expert's width; interleave_moe_layer_step, moe_layers) are moved into
 * these. Derived values are filled in by the
 * schema's check: head_dim = hidden_size / num_attention_heads (MLA:
 * qk_nope_head_dim + qk_rope_head_dim), num_key_value_heads =
 * num_attention_heads, gated_mlp from hidden_act (silu: gated 3-matrix
 * MLP; gelu/relu2: plain 2-matrix) unless given.
 *
 * Which layers are what (model_layer_moe, model_layer_window):
 *   MoE      n_routed_experts > 0, not in mlp_only_layers, index >=
 *            first_k_dense_replace, (i + 1) % decoder_sparse_step == 0
 *            (Qwen-MoE) and i % moe_layer_freq == 0 (DeepSeek); with
 *            moe_layers given (Llama 4), i in moe_layers instead
 *   sliding  layer_types[i] == sliding_attention (gpt-oss); else, with a
 *            sliding_window and use_sliding_window not false, every layer
 *            from max_window_layers on (Mistral: all; Qwen2/3: i >=
 *            max_window_layers)
 *   chunked  attention_chunk_size > 0 and a RoPE layer: no_rope_layers[i]
 *            == 1, or, without the list, (i + 1) % nope_layer_interval
 *            != 0 (Llama 4: transformers' Llama4TextConfig default; its
 *            NoPE layers attend globally)
 *
 * Depends on schema.h only.
 */
#ifndef LLMSIM_CONFIG_SPEC_MODEL_H
#define LLMSIM_CONFIG_SPEC_MODEL_H

#include <stdint.h>
#include <stdio.h>

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

/* Hugging Face layer_types entries. */
enum layer_type {
	LTYPE_FULL,		/* "full_attention" */
	LTYPE_SLIDING,		/* "sliding_attention" */
	LTYPE_CHUNKED,		/* "chunked_attention" (Llama 4's RoPE layers) */
	LTYPE_LINEAR		/* "linear_attention" (Qwen3-Next / Qwen3.5:
				 * a Gated DeltaNet mixer, spec_model_gdn.c) */
};

/* What a hybrid model's layer is (Nemotron-H / Nemotron 3
 * hybrid_override_pattern, one character a layer; spec_model_mamba.c).
 * BLOCK_PAIR: not a hybrid model, every layer attention + MLP. */
enum model_block {
	BLOCK_PAIR,		/* attention and MLP (a transformer layer) */
	BLOCK_MAMBA,		/* 'M': a Mamba-2 mixer alone */
	BLOCK_ATTN,		/* '*': attention alone */
	BLOCK_MLP,		/* '-': a dense MLP alone */
	BLOCK_MOE		/* 'E': a routed-expert MLP alone */
};

/* Router scoring (DeepSeek scoring_func). */
enum scoring_func {
	SCORE_SOFTMAX,
	SCORE_SIGMOID
};

/* quantization_config.quant_method: the checkpoint's weight format. */
enum quant_method {
	QUANT_NONE,
	QUANT_FP8,		/* DeepSeek-V3: fp8 e4m3, 128 x 128 block scales */
	QUANT_MXFP4		/* gpt-oss: MoE weights in mxfp4 */
};

/* Hugging Face rope_scaling: the rotary scaling (YaRN's attention
 * factor is what changes the work: see model_check). */
struct rope_scaling_spec {
	const char *rope_type;			/* "yarn", "llama3", "linear", ... */
	double factor;				/* context scaling; 0 = absent */
	double mscale;				/* YaRN (DeepSeek): mscale */
	double mscale_all_dim;			/* YaRN (DeepSeek): mscale_all_dim */
	double attention_factor;		/* YaRN: given attention factor; 0 = derived */
};

/* Module classes a checkpoint can leave unquantized (quant_spec.excluded
 * bits): its quantization_config names them by module path
 * (ModelOpt exclude_modules, compressed-tensors ignore, bitsandbytes/AWQ/
 * gpt-oss modules_to_not_convert, fp8 ignored_layers); see
 * quant_exclude_class. */
enum quant_excl {
	QX_ATTN = 1u << 0,	/* attention input projections (qkv / q, k,
				 * v; MLA's q_a, q_b, kv_a, kv_b) and a
				 * linear-attention mixer's projections */
	QX_MLP = 1u << 1,	/* a dense layer's MLP */
	QX_EXPERTS = 1u << 2,	/* routed experts */
	QX_SHARED = 1u << 3,	/* shared expert(s) */
	QX_ROUTER = 1u << 4,	/* MoE router (always 16-bit in llmsim) */
	QX_LM_HEAD = 1u << 5,	/* LM head (always 16-bit in llmsim) */
	QX_EMBED = 1u << 6,	/* embedding (a lookup: no GEMM) */
	QX_VISION = 1u << 7,	/* vision tower / projector (not simulated) */
	QX_ATTN_OUT = 1u << 8	/* attention output projection (o_proj, wo,
				 * linear_proj): a checkpoint can quantize it
				 * alone, e.g. nvidia/DeepSeek-R1-FP4-v2 */
};

/* The whole attention block ("self_attn", "attention"): input and output
 * projections. */
#define QX_ATTN_ALL (QX_ATTN | QX_ATTN_OUT)

/* The class bits a module-path pattern names ("model.layers.*.self_attn",
 * "re:.*lm_head", "*router*"), 0 when none is recognized. */
unsigned quant_exclude_class(const char *pattern);

/* The decoder layer a pattern selects by a plain index after a layers
 * segment ("model.layers.3.self_attn", "re:.*layers\.3\..*"): the
 * index; -1 when it names no single layer ("model.layers.*.mlp", no
 * layers segment); -2 when its layer selection is a regex or glob llmsim
 * does not resolve ("layers\.(0|47)\.", "layers.1*"). */
int64_t quant_exclude_layer(const char *pattern);

/* Layers a per-layer exclusion can name (quant_spec.layer_excluded). */
#define QUANT_LAYERS_MAX 512

/* A checkpoint's quantization_config (weights as stored). */
struct quant_spec {
	const char *quant_method;		/* as written ("fp8", "mxfp4", ...) */
	struct schema_int_list weight_block_size;	/* scale block (rows, cols) */
	int method;				/* enum quant_method, from quant_method */
	unsigned excluded;			/* enum quant_excl bits: modules the
						 * checkpoint keeps unquantized (from
						 * exclude_modules / ignore /
						 * modules_to_not_convert /
						 * ignored_layers) in every layer */
	uint16_t layer_excluded[QUANT_LAYERS_MAX];	/* enum quant_excl
						 * bits a pattern naming one layer adds
						 * to that layer ("model.layers.3.*":
						 * the whole layer) */
};

/* The enum quant_excl bits of decoder layer `layer` (0-based): the
 * classes excluded everywhere and those named for that layer. */
unsigned quant_layer_excluded(const struct quant_spec *q, int64_t layer);

struct cnode;
struct diag;

/* Read the exclusion lists of a quantization_config mapping into
 * q->excluded: a list of strings each; a pattern that names no class
 * warns (with the closest segment name), a non-list or non-string exits
 * 2 at its file:line:col (-1). */
int quant_read_excludes(struct quant_spec *q, const struct cnode *map,
			struct diag *d);

/* Hugging Face keys llmsim does not model but checks (spec_model_hf.c):
 * torch_dtype and dtype name torch dtypes, rope_theta is a number > 0,
 * architectures names decoder-only LM classes, is_encoder_decoder is not
 * true. 0, or -1 after reporting each bad value at its file:line:col. */
int model_check_hf_keys(const struct cnode *map, struct diag *d);

/* An older transformers config's own name for a size (n_embd, n_layer,
 * n_head, n_inner, n_positions, n_embed, ffn_dim, MPT's d_model, ...)
 * where llmsim's key is missing: an error naming the key it stands for
 * (spec_model_hf.c). 0, or -1 after reporting each. Run on the file's
 * map before the schema. */
int model_check_old_names(const struct cnode *map, struct diag *d);

/* Whether Hugging Face model_type's config class ties the LM head to the
 * embedding when tie_word_embeddings is absent (spec_model_hf.c: GPT-2,
 * BLOOM, OPT, Falcon, Gemma 1-3, StarCoder2, Cohere 1-2, MPT and
 * GPTBigCode do; the rest llmsim knows do not). */
int model_tied_by_default(const char *model_type);

/* The rope_scaling and quantization_config sections of model_schema
 * (spec_model_sections.c). */
extern const struct schema model_rope_schema;
extern const struct schema model_quant_schema;

/* YaRN's attention factor, which multiplies cos and sin; 1 for any
 * scaling but yarn (spec_model_sections.c). */
double model_rope_mscale(const struct rope_scaling_spec *r);

struct model_spec {
	const char *name;			/* preset name */
	const char *model_type;			/* "llama", "mixtral", "deepseek_v3" (info) */
	const char *text_model_of;		/* model_type of the multimodal checkpoint
						 * whose text_config this is; NULL: none */
	int64_t hidden_size;			/* d_model */
	int64_t num_hidden_layers;		/* transformer layers */
	int64_t num_attention_heads;		/* query heads */
	int64_t num_key_value_heads;		/* KV heads (GQA); = heads for MHA */
	int64_t head_dim;			/* per-head dimension */
	int64_t config_head_dim;		/* head_dim as the file gives it, 0 when
					 * absent (before llmsim derives it):
					 * what tools reading config.json see */
	int64_t intermediate_size;		/* dense MLP hidden size */
	int64_t intermediate_size_mlp;		/* Llama 4 terms given: the dense MLP's
						 * width (read, then moved into
						 * intermediate_size; 0 after the check) */
	int64_t vocab_size;			/* tokens */
	int hidden_act;				/* enum hidden_act */
	int gated_mlp;				/* 1: gate+up+down; 0: up+down */
	int norm;				/* enum norm_kind */
	int norm_bias;				/* a LayerNorm's bias: 1 / 0; -1 absent
						 * (biased, cohere: not) */
	int position_embedding;			/* enum pos_embedding */
	int64_t max_position_embeddings;	/* learned position table rows; context (info for RoPE) */
	int tie_word_embeddings;		/* LM head shares the embedding */
	int attention_bias;			/* QKV/out projections have bias */
	int mlp_bias;				/* MLP / expert linears have bias (gpt-oss);
						 * -1 absent: from model_type */
	double swiglu_limit;			/* gated MLP's clamp (gpt-oss 7); 0 = none */
	int attention_sinks;			/* a learned per-head sink logit in every
						 * attention softmax (gpt-oss); -1 until
						 * derived from model_type */
	int quick_glu;				/* gated MLP's activation is quick-GELU,
						 * x sigmoid(1.702 x), with a linear
						 * offset (gpt-oss) */
	struct rope_scaling_spec rope_scaling;	/* rotary scaling; factor 0 = none */
	double rope_mscale;			/* YaRN attention factor on cos/sin (1 = none),
						 * derived */
	int qk_layernorm;			/* per-head norms of Q and K before
						 * rotary (Qwen3, OLMo 2) */
	/* Mixture of Experts (0 = dense) */
	int64_t n_routed_experts;		/* experts per MoE layer */
	int64_t num_experts_per_tok;		/* top-k */
	int router_weight_on_input;		/* the router's weight scales the expert's
						 * input, not its output (Llama 4: 1 when
						 * absent); -1 absent elsewhere (off) */
	int64_t moe_intermediate_size;		/* per-expert MLP hidden size */
	int64_t moe_latent_size;		/* latent MoE (Nemotron 3 Super): tokens
						 * projected to this width before the
						 * dispatch, back after the combine; 0
						 * none */
	int64_t n_shared_experts;		/* always-on experts per MoE layer */
	int64_t shared_expert_intermediate_size;/* shared expert hidden size (Qwen-MoE) */
	int64_t first_k_dense_replace;		/* first k layers dense (DeepSeek) */
	int64_t decoder_sparse_step;		/* every n-th layer is MoE (Qwen-MoE) */
	int64_t moe_layer_freq;			/* DeepSeek: layer i MoE when i % freq == 0 */
	struct schema_int_list mlp_only_layers;	/* Qwen-MoE: layers kept dense */
	struct schema_int_list moe_layers;	/* Llama 4: the MoE layers' indices;
						 * empty: by decoder_sparse_step */
	int64_t experts_per_token;		/* gpt-oss spelling of top-k */
	int scoring_func;			/* enum scoring_func */
	int64_t n_group;			/* expert groups for group-limited routing */
	int64_t topk_group;			/* groups a token may use (DeepSeek: nodes) */
	int64_t num_nextn_predict_layers;	/* MTP modules (DeepSeek-V3: 1) */
	int no_moe_layer;			/* derived: experts given, but the keys
						 * above select no layer (dense) */
	/* Attention window */
	int64_t sliding_window;			/* keys a sliding-window layer sees; 0 = none */
	int use_sliding_window;			/* Qwen2/3 switch; -1 absent */
	int64_t max_window_layers;		/* Qwen2/3: first sliding layer */
	struct schema_int_list layer_types;	/* per layer, enum layer_type (gpt-oss) */
	int64_t attention_chunk_size;		/* Llama 4: RoPE layers attend within aligned
						 * chunks of this many tokens; 0 = none */
	struct schema_int_list no_rope_layers;	/* Llama 4: per layer 1 = RoPE (chunked),
						 * 0 = NoPE (global); empty: by interval */
	int64_t nope_layer_interval;		/* Llama 4: every n-th layer is NoPE */
	double attn_temperature_tuning;		/* Llama 4: > 0 scales the queries of
						 * the NoPE layers by position (a
						 * count; true reads 1); 0 = off */
	struct quant_spec quantization;		/* checkpoint weight format */
	double vision_params;			/* parameters of a multimodal checkpoint's
						 * vision encoder and projector (not
						 * simulated; held in memory by engines
						 * with vision_encoder); 0 = none */
	/* Multi-head latent attention (DeepSeek); 0 = not MLA */
	int64_t q_lora_rank;
	int64_t kv_lora_rank;
	int64_t qk_nope_head_dim;
	int64_t qk_rope_head_dim;
	int64_t v_head_dim;
	/* Gated DeltaNet linear attention (Qwen3-Next, Qwen3.5; 0 = none):
	 * the linear_attention layers' mixer (spec_model_gdn.c) */
	int64_t linear_num_key_heads;		/* q/k heads */
	int64_t linear_num_value_heads;		/* v heads (a multiple of the k heads) */
	int64_t linear_key_head_dim;		/* d_k */
	int64_t linear_value_head_dim;		/* d_v */
	int64_t linear_conv_kernel_dim;		/* causal depthwise conv1d width */
	int64_t full_attention_interval;	/* without layer_types: every n-th
						 * layer full attention, the others
						 * linear (Qwen3-Next: 4) */
	int attn_output_gate;			/* full attention's output gated by
						 * sigmoid(a second q-sized projection);
						 * -1 absent: on for qwen3_next / qwen3_5* */
	/* DeepSeek Sparse Attention (DeepSeek-V3.2-Exp, model_type
	 * deepseek_v32): a lightning indexer of index_n_heads heads of
	 * index_head_dim scores every causal key, and each query attends to
	 * its index_topk best; 0 = dense attention */
	int64_t index_n_heads;
	int64_t index_head_dim;
	int64_t index_topk;
	/* MiniMax-M2 (model_type minimax_m2) */
	struct schema_int_list attn_type_list;	/* per layer: 1 softmax attention,
						 * 0 lightning (linear) attention,
						 * refused */
	int64_t mtp_transformer_layers;		/* layers per MTP module (1) */
	/* Mamba-2 hybrid (Nemotron-H, Nemotron 3; spec_model_mamba.c) */
	const char *mtp_hybrid_override_pattern;	/* the MTP module's blocks
						 * (model_mtp_blocks); NULL: none */
	const char *hybrid_override_pattern;	/* one of M * - E a layer; NULL:
						 * not hybrid */
	int64_t mamba_num_heads;		/* SSM heads H */
	int64_t mamba_head_dim;			/* per-head channels P */
	int64_t ssm_state_size;			/* state N per channel */
	int64_t n_groups;			/* B/C groups G */
	int64_t conv_kernel;			/* causal conv1d width K */
	int64_t chunk_size;			/* SSD chunk Q */
	int64_t expand;				/* d_inner = expand h (info when
						 * heads x head_dim given) */
	const char *mamba_ssm_cache_dtype;	/* serving SSM state dtype
						 * (float32, bfloat16); NULL: the
						 * engine's activation dtype */
	unsigned char block[QUANT_LAYERS_MAX];	/* derived: enum model_block of
						 * each layer */
};

/* 1 for a Mixture-of-Experts model: routed experts in at least one
 * layer (experts whose layers first_k_dense_replace, mlp_only_layers,
 * decoder_sparse_step or moe_layers all make dense leave a dense model,
 * as transformers builds it). */
int model_is_moe(const struct model_spec *m);
int model_norm_tensors(const struct model_spec *m);

/* enum model_block of layer i (BLOCK_PAIR for a non-hybrid model). */
int model_layer_block(const struct model_spec *m, int64_t i);

/* A hybrid's MTP module (mtp_hybrid_override_pattern, Nemotron 3 Super's
 * "*E"): its blocks, in order (enum model_block), at most
 * MODEL_MTP_BLOCKS; 0 without the key (an MTP module is then a layer of
 * the last layer's kind). */
enum { MODEL_MTP_BLOCKS = 4 };
int model_mtp_blocks(const struct model_spec *m, int *blocks);

/* Layers with attention: all, or a hybrid model's '*' layers. */
int64_t model_attn_layers(const struct model_spec *m);

/* Mamba-2 inner width d_inner = mamba_num_heads mamba_head_dim. */
int64_t model_mamba_inner(const struct model_spec *m);

/* Bytes of the fixed recurrent state one sequence keeps over all Mamba
 * layers in serving (spec_model_mamba.c): the SSM state H P N at ssm_B
 * bytes and the conv1d state (d_inner + 2 G N) (K - 1) at conv_B. 0 for
 * a model without Mamba layers. */
double model_mamba_state_bytes(const struct model_spec *m, double ssm_B,
			       double conv_B);

/* The SSM state's bytes per element in serving: mamba_ssm_cache_dtype's
 * (float32 4, bfloat16/float16 2), else act_B. */
double model_mamba_ssm_B(const struct model_spec *m, double act_B);

/* Norm and bias defaults of Hugging Face model types whose config.json
 * does not say them in llmsim's keys (spec_model_hf.c: StarCoder2's
 * use_bias, GPT-NeoX, Phi and StableLM's LayerNorm and biases), and a
 * warning where llmsim builds more than such a model has (a shared
 * norm, StableLM's unbiased o_proj). Run after the schema, on the
 * file's map. 0, or -1 after reporting a bad value. */
int model_hf_defaults(struct model_spec *m, const struct cnode *map,
		      struct diag *d);

/* Resolve hybrid_override_pattern into m->block and check the Mamba
 * keys: 0, or -1 after reporting (spec_model_mamba.c). */
struct cnode;
struct diag;
int model_check_hybrid(struct model_spec *m, const struct cnode *node,
		       struct diag *d);

/* 1 for multi-head latent attention. */
int model_is_mla(const struct model_spec *m);

/* 1 for DeepSeek Sparse Attention (index_topk > 0; MLA). */
int model_is_dsa(const struct model_spec *m);

/* Bytes of one token's lightning-indexer key in one DSA layer's cache:
 * index_head_dim fp8 values and one fp32 scale per 128 of them
 * (deepseek-ai/DeepSeek-V3.2-Exp inference/model.py Indexer: k_cache
 * float8_e4m3fn [.., head_dim], k_scale_cache float32 [.., head_dim /
 * block_size], block_size 128): 128 + 4 = 132 B. 0 without DSA. */
double model_index_key_bytes(const struct model_spec *m);

/* 1 when layer i (0-based) has a routed-expert MLP (see the top). */
int model_layer_moe(const struct model_spec *m, int64_t i);

/* Keys layer i's attention sees per query: its sliding window, else
 * DeepSeek Sparse Attention's index_topk (each query attends to its top-k
 * keys: a window's count of pairs, model_is_dsa), or 0 for full (causal)
 * attention. */
int64_t model_layer_window(const struct model_spec *m, int64_t i);

/* Layer i's attention chunk: the aligned chunk of tokens a query attends
 * within (Llama 4's chunked attention on its RoPE layers), 0 = none. */
int64_t model_layer_chunk(const struct model_spec *m, int64_t i);

/* 1 when layer i (0-based) has no rotary embedding: Llama 4's NoPE
 * layers (no_rope_layers 0, every nope_layer_interval-th layer, or not
 * chunked_attention in layer_types); 0 for a model without them. */
int model_layer_nope(const struct model_spec *m, int64_t i);

/* 1 when layer i scales its queries by position (Llama 4's attention
 * temperature tuning, on the NoPE layers). */
int model_layer_temperature(const struct model_spec *m, int64_t i);

/* layer_types naming chunked_attention layers needs attention_chunk_size
 * and agrees with no_rope_layers or nope_layer_interval
 * (spec_model_layer.c): 0, or -1 after reporting at file:line:col. */
struct cnode;
struct diag;
int model_check_chunked(const struct model_spec *m, const struct cnode *node,
			struct diag *d);

/* 1 when the model has Gated DeltaNet (linear_attention) layers. */
int model_is_gdn(const struct model_spec *m);

/* 1 when layer i (0-based) is a Gated DeltaNet (linear attention) layer:
 * layer_types[i] == linear_attention, else, without layer_types, (i + 1)
 * % full_attention_interval != 0 (transformers Qwen3NextConfig). */
int model_layer_linear(const struct model_spec *m, int64_t i);

/* Full-attention layers (those model_layer_linear leaves). */
int64_t model_full_attn_layers(const struct model_spec *m);

/* Bytes of the recurrent state one sequence keeps in one Gated DeltaNet
 * layer: the fp32 delta-rule state v_heads d_k d_v 4 B and the conv1d's
 * last (kernel - 1) inputs of its 2 k_heads d_k + v_heads d_v channels
 * at conv_B bytes (spec_model_gdn.c). */
double model_gdn_state_B(const struct model_spec *m, double conv_B);

/* The Gated DeltaNet checks and defaults (spec_model_gdn.c): 0, or -1
 * after reporting at file:line:col. */
struct cnode;
struct diag;
int model_check_gdn(struct model_spec *m, const struct cnode *node,
		    struct diag *d);

/* Routed and shared expert MLP sizes: the shared experts of a layer
 * (DeepSeek n_shared_experts x moe_intermediate_size, Qwen-MoE
 * shared_expert_intermediate_size) as one MLP of this hidden size; 0 =
 * none. */
int64_t model_shared_ffn(const struct model_spec *m);

/* Bytes of the key/value cache one token keeps over all attention
 * layers (a hybrid model's '*' layers only) at
 * elem_B bytes per element: MLA keeps the latent kv_lora_rank +
 * qk_rope_head_dim per layer; GQA 2 num_key_value_heads head_dim; DSA
 * adds its indexer key (model_index_key_bytes). */
double model_kv_bytes_per_token(const struct model_spec *m, double elem_B);

extern const struct schema model_schema;

/*
 * A multimodal checkpoint's config.json (a top-level text_config): the
 * mapping of its text model (spec_model_mm.c), with text_model_of set to
 * the wrapper's model_type and one note naming the encoder sections
 * left out. root itself when it has no text_config; NULL after
 * reporting (a model key given at both levels with different values,
 * out of memory). Nodes live in the arena a.
 */
struct arena;
struct cnode *model_text_config(struct arena *a, struct cnode *root,
				struct diag *d);

/* A run summary's line saying the model is a multimodal checkpoint's
 * text model; nothing for any other model. */
void model_print_text_of(FILE *out, const struct model_spec *m);

#endif
