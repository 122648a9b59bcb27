/*
 * test_hf_model.c - Hugging Face config.json files as a new user would
 * try them: the keys that change time or memory are modeled (MoE layer
 * placement, sliding windows, MLA, group-limited routing, MTP, weight
 * quantization), known-irrelevant keys pass silently, and any other key
 * is a warning with the modeled key it may be a typo of.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "config/config.h"
#include "config_testutil.h"
#include "config/spec_model.h"

#define DATA "tests/data"

static void setup(void)
{
	fixture_cx_init(DATA);
}

TestSuite(hf_model, .init = setup, .fini = fixture_fini);

static const struct model_spec *load(const char *what)
{
	struct model_spec *m = arena_alloc(&A, sizeof(*m));

	cr_assert_eq(config_load(&CX, &model_schema, what, NULL, 0, m), 0,
		     "%s: %s", what, capture_text(&C));
	return m;
}

static const char *write_json(char dir[64], char path[256], const char *text)
{
	tmpdir_make(dir);
	write_file(path, dir, "config.json", text, strlen(text));
	return path;
}

Test(hf_model, typo_is_a_warning_with_did_you_mean)
{
	char dir[64], path[256];
	const struct model_spec *m = load(write_json(dir, path,
		"{\"hidden_size\": 1024, \"num_hidden_layers\": 2,"
		" \"num_hiden_layers\": 3, \"num_attention_heads\": 8,"
		" \"intermediate_size\": 4096, \"vocab_size\": 1000,"
		" \"rope_theta\": 10000, \"frobnicate\": 1}"));

	cr_assert_eq(m->num_hidden_layers, 2);
	cr_assert_has(capture_text(&C), "'num_hiden_layers': key not modeled "
		      "by llmsim and ignored; did you mean 'num_hidden_layers'?");
	cr_assert_has(capture_text(&C), "'frobnicate': key not modeled");
	/* rope_theta is known not to matter: no word about it. */
	cr_assert_null(strstr(capture_text(&C), "rope_theta"));
	cr_assert_eq(C.d.warnings, 2);
	cr_assert_eq(C.d.errors, 0);
	tmpdir_remove(dir);
}

Test(hf_model, typo_of_a_required_key_still_fails)
{
	char dir[64], path[256];
	struct model_spec m;

	write_json(dir, path, "{\"hidden_size\": 1024, \"num_hiden_layers\": 3,"
		   " \"num_attention_heads\": 8, \"intermediate_size\": 4096,"
		   " \"vocab_size\": 1000}");
	memset(&m, 0, sizeof(m));
	cr_assert_eq(config_load(&CX, &model_schema, path, NULL, 0, &m), -1);
	cr_assert_has(capture_text(&C), "did you mean 'num_hidden_layers'?");
	tmpdir_remove(dir);
}

Test(hf_model, gpt_oss_layer_types_and_both_topk_spellings)
{
	const struct model_spec *m = load(DATA "/workloads/models/hf-gpt-oss/config.json");

	cr_assert_eq(C.d.warnings, 0, "%s", capture_text(&C));
	cr_assert_eq(m->n_routed_experts, 32);
	cr_assert_eq(m->num_experts_per_tok, 4);
	/* no moe_intermediate_size: the experts are intermediate_size wide */
	cr_assert_eq(m->moe_intermediate_size, 2880);
	cr_assert_eq(model_layer_window(m, 0), 128);
	cr_assert_eq(model_layer_window(m, 1), 0);
	cr_assert_eq(model_layer_window(m, 2), 128);
	cr_assert(model_layer_moe(m, 0) && model_layer_moe(m, 3));
	cr_assert_eq(m->quantization.method, QUANT_MXFP4);
	/* swiglu_limit 7; experts with biases (model_type gpt_oss, no
	 * mlp_bias key); rope_scaling yarn, factor 32, no mscale: the
	 * attention factor 0.1 ln 32 + 1 = 1.3465736. */
	cr_assert_float_eq(m->swiglu_limit, 7.0, 1e-12);
	cr_assert_eq(m->mlp_bias, 1);
	cr_assert_float_eq(m->rope_mscale, 1.3465735903, 1e-9);
}

Test(hf_model, yarn_attention_factor)
{
	char dir[64], path[256];
	const struct model_spec *m;

	/* DeepSeek-V3's config.json gives mscale = mscale_all_dim = 1: the
	 * ratio m(40, 1) / m(40, 1) = 1, cos and sin unscaled. */
	m = load(write_json(dir, path, "{\"hidden_size\": 1024,"
		" \"num_hidden_layers\": 2, \"num_attention_heads\": 8,"
		" \"intermediate_size\": 4096, \"vocab_size\": 1000,"
		" \"rope_scaling\": {\"type\": \"yarn\", \"factor\": 40,"
		" \"mscale\": 1.0, \"mscale_all_dim\": 1.0, \"beta_fast\": 32,"
		" \"original_max_position_embeddings\": 4096}}"));
	cr_assert_float_eq(m->rope_mscale, 1.0, 1e-12);
	cr_assert_eq(m->mlp_bias, 0);
	cr_assert_eq(C.d.warnings, 0, "%s", capture_text(&C));
	tmpdir_remove(dir);
	/* A given attention_factor is taken as it is; llama3 scaling and
	 * null (absent) leave the rope unscaled. */
	m = load(write_json(dir, path, "{\"hidden_size\": 1024,"
		" \"num_hidden_layers\": 2, \"num_attention_heads\": 8,"
		" \"intermediate_size\": 4096, \"vocab_size\": 1000,"
		" \"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4,"
		" \"attention_factor\": 1.25}}"));
	cr_assert_float_eq(m->rope_mscale, 1.25, 1e-12);
	tmpdir_remove(dir);
	m = load(write_json(dir, path, "{\"hidden_size\": 1024,"
		" \"num_hidden_layers\": 2, \"num_attention_heads\": 8,"
		" \"intermediate_size\": 4096, \"vocab_size\": 1000,"
		" \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8,"
		" \"low_freq_factor\": 1, \"high_freq_factor\": 4}}"));
	cr_assert_float_eq(m->rope_mscale, 1.0, 1e-12);
	tmpdir_remove(dir);
	m = load(write_json(dir, path, "{\"hidden_size\": 1024,"
		" \"num_hidden_layers\": 2, \"num_attention_heads\": 8,"
		" \"intermediate_size\": 4096, \"vocab_size\": 1000,"
		" \"rope_scaling\": null}"));
	cr_assert_float_eq(m->rope_mscale, 1.0, 1e-12);
	tmpdir_remove(dir);
}

Test(hf_model, top_k_spellings_must_agree)
{
	char dir[64], path[256];
	struct model_spec m;

	write_json(dir, path, "{\"hidden_size\": 1024, \"num_hidden_layers\": 2,"
		   " \"num_attention_heads\": 8, \"intermediate_size\": 4096,"
		   " \"vocab_size\": 1000, \"num_local_experts\": 8,"
		   " \"experts_per_token\": 2, \"num_experts_per_tok\": 4}");
	memset(&m, 0, sizeof(m));
	cr_assert_eq(config_load(&CX, &model_schema, path, NULL, 0, &m), -1);
	cr_assert_has(capture_text(&C), "'experts_per_token' 2 and "
		      "'num_experts_per_tok' 4 disagree");
	tmpdir_remove(dir);
}

Test(hf_model, deepseek_v3_mla_groups_mtp_and_kv_bytes)
{
	const struct model_spec *m = load(DATA "/workloads/models/hf-deepseek/config.json");

	cr_assert_eq(C.d.warnings, 0, "%s", capture_text(&C));
	/* MLA: head_dim is the Q/K head, nope + rope = 128 + 64, not the
	 * meaningless hidden / heads = 56. */
	cr_assert_eq(m->head_dim, 192);
	cr_assert_eq(m->n_group, 8);
	cr_assert_eq(m->topk_group, 4);
	cr_assert_eq(m->scoring_func, SCORE_SIGMOID);
	cr_assert_eq(m->num_nextn_predict_layers, 1);
	cr_assert_eq(m->quantization.method, QUANT_FP8);
	/* first_k_dense_replace 3: layers 0-2 dense, 3-60 MoE */
	cr_assert(!model_layer_moe(m, 2) && model_layer_moe(m, 3) &&
		  model_layer_moe(m, 60));
	/* one shared expert of moe_intermediate_size */
	cr_assert_eq(model_shared_ffn(m), 2048);
	/* latent KV per token, bf16: (kv_lora 512 + rope 64) x 61 layers x
	 * 2 B = 70,272 B */
	cr_assert_eq(model_kv_bytes_per_token(m, 2), 70272);
}

Test(hf_model, qwen_layer_placement_and_window)
{
	char dir[64], path[256];
	const struct model_spec *m = load(write_json(dir, path,
		"{\"hidden_size\": 1024, \"num_hidden_layers\": 6,"
		" \"num_attention_heads\": 8, \"num_key_value_heads\": 2,"
		" \"intermediate_size\": 4096, \"vocab_size\": 1000,"
		" \"num_experts\": 16, \"num_experts_per_tok\": 2,"
		" \"moe_intermediate_size\": 512, \"decoder_sparse_step\": 2,"
		" \"mlp_only_layers\": [3], \"shared_expert_intermediate_size\": 1024,"
		" \"sliding_window\": 256, \"use_sliding_window\": true,"
		" \"max_window_layers\": 4}"));

	/* (i + 1) % 2 == 0: layers 1, 3, 5; layer 3 kept dense */
	cr_assert(!model_layer_moe(m, 0) && model_layer_moe(m, 1));
	cr_assert(!model_layer_moe(m, 3) && model_layer_moe(m, 5));
	/* sliding from max_window_layers = 4 on */
	cr_assert_eq(model_layer_window(m, 3), 0);
	cr_assert_eq(model_layer_window(m, 4), 256);
	cr_assert_eq(model_shared_ffn(m), 1024);
	/* GQA: 2 x 2 KV heads x 128 x 6 layers x 2 B = 6144 B per token */
	cr_assert_eq(model_kv_bytes_per_token(m, 2), 6144);
	tmpdir_remove(dir);
}

Test(hf_model, layer_types_must_cover_every_layer)
{
	char dir[64], path[256];
	struct model_spec m;

	write_json(dir, path, "{\"hidden_size\": 1024, \"num_hidden_layers\": 3,"
		   " \"num_attention_heads\": 8, \"intermediate_size\": 4096,"
		   " \"vocab_size\": 1000, \"sliding_window\": 64,"
		   " \"layer_types\": [\"sliding_attention\", \"full_attention\"]}");
	memset(&m, 0, sizeof(m));
	cr_assert_eq(config_load(&CX, &model_schema, path, NULL, 0, &m), -1);
	cr_assert_has(capture_text(&C), "'layer_types' has 2 entries for 3 layers");
	tmpdir_remove(dir);
}

Test(hf_model, llama4_no_rope_layers_from_the_interval)
{
	const struct model_spec *m;
	char dir[64], path[256];

	/* Llama 4's config.json (text part): attention_chunk_size 8192,
	 * no_rope_layers [] and no no_rope_layer_interval: transformers'
	 * Llama4TextConfig builds the list from the interval, default 4:
	 * layer i is RoPE (chunked) unless (i + 1) % 4 == 0, so layers 3
	 * and 7 attend globally. */
	m = load(DATA "/workloads/models/hf-llama4/config.json");
	cr_assert_eq(C.d.errors, 0, "%s", capture_text(&C));
	cr_assert_eq(model_layer_chunk(m, 0), 8192);
	cr_assert_eq(model_layer_chunk(m, 2), 8192);
	cr_assert_eq(model_layer_chunk(m, 3), 0);
	cr_assert_eq(model_layer_chunk(m, 7), 0);
	/* transformers' own spelling no_rope_layer_interval (2: layers 1
	 * and 3 NoPE); a list longer than the layers is read for the first
	 * num_hidden_layers entries (layer 1 RoPE, layer 2 NoPE). */
	m = load(write_json(dir, path, "{\"hidden_size\": 1024,"
		" \"num_hidden_layers\": 4, \"num_attention_heads\": 8,"
		" \"intermediate_size\": 4096, \"vocab_size\": 1000,"
		" \"attention_chunk_size\": 4096, \"no_rope_layer_interval\": 2}"));
	cr_assert_eq(model_layer_chunk(m, 1), 0);
	cr_assert_eq(model_layer_chunk(m, 2), 4096);
	tmpdir_remove(dir);
	m = load(write_json(dir, path, "{\"hidden_size\": 1024,"
		" \"num_hidden_layers\": 4, \"num_attention_heads\": 8,"
		" \"intermediate_size\": 4096, \"vocab_size\": 1000,"
		" \"attention_chunk_size\": 4096,"
		" \"no_rope_layers\": [1, 1, 0, 1, 0, 0]}"));
	cr_assert_eq(model_layer_chunk(m, 1), 4096);
	cr_assert_eq(model_layer_chunk(m, 2), 0);
	cr_assert_eq(C.d.errors, 0, "%s", capture_text(&C));
	tmpdir_remove(dir);
}

Test(hf_model, llama4_chunked_attention_layer_types)
{
	const struct model_spec *m;
	char dir[64], path[256];
	struct model_spec bad;

	/* Newer transformers write Llama 4's layer_types from no_rope_layers
	 * (RoPE layer = "chunked_attention", NoPE = "full_attention"). With
	 * the interval 4 given, layers 3 and 7 are NoPE: the list below is
	 * that pattern, so layers 0-2, 4-6 are chunked at 4096 and 3, 7
	 * attend globally. */
	m = load(write_json(dir, path, "{\"hidden_size\": 1024,"
		" \"num_hidden_layers\": 8, \"num_attention_heads\": 8,"
		" \"intermediate_size\": 4096, \"vocab_size\": 1000,"
		" \"attention_chunk_size\": 4096, \"no_rope_layer_interval\": 4,"
		" \"layer_types\": [\"chunked_attention\", \"chunked_attention\","
		" \"chunked_attention\", \"full_attention\", \"chunked_attention\","
		" \"chunked_attention\", \"chunked_attention\", \"full_attention\"]}"));
	cr_assert_eq(C.d.errors, 0, "%s", capture_text(&C));
	cr_assert_eq(C.d.warnings, 0, "%s", capture_text(&C));
	cr_assert_eq(model_layer_chunk(m, 0), 4096);
	cr_assert_eq(model_layer_chunk(m, 3), 0);
	cr_assert_eq(model_layer_chunk(m, 6), 4096);
	cr_assert_eq(model_layer_chunk(m, 7), 0);
	cr_assert_eq(model_layer_window(m, 0), 0);
	tmpdir_remove(dir);
	/* layer_types alone decides: [chunked, full, full, chunked] is not
	 * the default interval-4 pattern (which would make layer 1 chunked
	 * and layer 3 global), and no list or interval contradicts it. */
	m = load(write_json(dir, path, "{\"hidden_size\": 1024,"
		" \"num_hidden_layers\": 4, \"num_attention_heads\": 8,"
		" \"intermediate_size\": 4096, \"vocab_size\": 1000,"
		" \"attention_chunk_size\": 2048,"
		" \"layer_types\": [\"chunked_attention\", \"full_attention\","
		" \"full_attention\", \"chunked_attention\"]}"));
	cr_assert_eq(model_layer_chunk(m, 0), 2048);
	cr_assert_eq(model_layer_chunk(m, 1), 0);
	cr_assert_eq(model_layer_chunk(m, 3), 2048);
	tmpdir_remove(dir);
	/* Contradicting no_rope_layers (layer 1 NoPE there, chunked in
	 * layer_types): an error at the layer_types key (line 2). */
	write_json(dir, path, "{\"hidden_size\": 1024, \"num_hidden_layers\": 2,"
		   " \"num_attention_heads\": 8, \"intermediate_size\": 4096,"
		   " \"vocab_size\": 1000, \"attention_chunk_size\": 2048,\n"
		   " \"no_rope_layers\": [1, 0], \"layer_types\":"
		   " [\"chunked_attention\", \"chunked_attention\"]}");
	memset(&bad, 0, sizeof(bad));
	cr_assert_eq(config_load(&CX, &model_schema, path, NULL, 0, &bad), -1);
	cr_assert_has(capture_text(&C), "config.json:2:");
	cr_assert_has(capture_text(&C), "'layer_types' layer 1 is "
		      "chunked_attention but 'no_rope_layers' makes it NoPE");
	tmpdir_remove(dir);
	/* chunked_attention without attention_chunk_size */
	write_json(dir, path, "{\"hidden_size\": 1024, \"num_hidden_layers\": 1,"
		   " \"num_attention_heads\": 8, \"intermediate_size\": 4096,"
		   " \"vocab_size\": 1000,"
		   " \"layer_types\": [\"chunked_attention\"]}");
	memset(&bad, 0, sizeof(bad));
	cr_assert_eq(config_load(&CX, &model_schema, path, NULL, 0, &bad), -1);
	cr_assert_has(capture_text(&C), "chunked_attention layers but no "
		      "'attention_chunk_size'");
	tmpdir_remove(dir);
}

Test(hf_model, experts_in_no_layer_make_a_dense_model)
{
	char dir[64], path[256];
	const struct model_spec *m = load(write_json(dir, path,
		"{\"model_type\": \"deepseek_v3\", \"hidden_size\": 1024,"
		" \"num_hidden_layers\": 3, \"num_attention_heads\": 8,"
		" \"intermediate_size\": 4096, \"vocab_size\": 1000,"
		" \"n_routed_experts\": 16, \"num_experts_per_tok\": 2,"
		" \"moe_intermediate_size\": 512, \"first_k_dense_replace\": 3}"));

	/* transformers' DeepseekV3DecoderLayer: layer i is MoE when i >=
	 * first_k_dense_replace; with 3 >= 3 layers none is, so every MLP
	 * is dense and the model is not MoE (no EP, no expert lines). */
	cr_assert_not(model_is_moe(m));
	cr_assert_eq(model_layer_moe(m, 0) + model_layer_moe(m, 1) +
		     model_layer_moe(m, 2), 0);
	cr_assert_has(capture_text(&C), "note: the model's 16 routed experts "
		      "are in none of its 3 layers");
	cr_assert_eq(C.d.errors, 0);
	tmpdir_remove(dir);
}

Test(hf_model, missing_expert_size_warns_where_the_type_has_its_own)
{
	char dir[64], path[256];
	const struct model_spec *m = load(write_json(dir, path,
		"{\"model_type\": \"qwen3_moe\", \"hidden_size\": 1024,\n"
		" \"num_hidden_layers\": 2, \"num_attention_heads\": 8,"
		" \"intermediate_size\": 6144, \"vocab_size\": 1000,"
		" \"num_experts\": 16, \"num_experts_per_tok\": 2}"));

	/* Qwen3MoeConfig sizes experts by moe_intermediate_size: without it
	 * llmsim takes intermediate_size 6144 and says so at model_type
	 * (line 1, column 16: after '{"model_type": '). */
	cr_assert_eq(m->moe_intermediate_size, 6144);
	cr_assert_has(capture_text(&C), "config.json:1:16: warning: "
		      "'moe_intermediate_size' is missing: model_type qwen3_moe");
	cr_assert_eq(C.d.warnings, 1, "%s", capture_text(&C));
	tmpdir_remove(dir);
}

Test(hf_model, mixtral_experts_are_intermediate_size_wide_silently)
{
	char dir[64], path[256];
	const struct model_spec *m = load(write_json(dir, path,
		"{\"model_type\": \"mixtral\", \"hidden_size\": 1024,"
		" \"num_hidden_layers\": 2, \"num_attention_heads\": 8,"
		" \"intermediate_size\": 3584, \"vocab_size\": 1000,"
		" \"num_local_experts\": 8, \"num_experts_per_tok\": 2}"));

	/* MixtralConfig has no moe_intermediate_size: each expert is
	 * intermediate_size 3584 wide, and that is no news. */
	cr_assert_eq(m->moe_intermediate_size, 3584);
	cr_assert_eq(C.d.warnings, 0, "%s", capture_text(&C));
	tmpdir_remove(dir);
}

/* The module-exclusion lists of each producer's quantization_config map
 * to llmsim's module classes; segment names decide, layer indices and
 * regex syntax do not. */
Test(hf_model, quant_exclusion_patterns_name_module_classes)
{
	/* the attention block: its input and output projections; a
	 * projection named under it: that projection's class only (the
	 * output projection is a class of its own: nvidia/DeepSeek-R1-FP4-v2
	 * quantizes wo where nvidia/DeepSeek-R1-FP4 keeps all attention
	 * bf16) */
	cr_assert_eq(quant_exclude_class("model.layers.*.self_attn"),
		     QX_ATTN | QX_ATTN_OUT);
	cr_assert_eq(quant_exclude_class("model.layers.*.self_attn*"),
		     QX_ATTN_ALL);
	cr_assert_eq(quant_exclude_class("model.layers.3.self_attn.q_proj"),
		     QX_ATTN);
	cr_assert_eq(quant_exclude_class("model.layers.*.self_attn.kv_b_proj"),
		     QX_ATTN);
	cr_assert_eq(quant_exclude_class("model.layers.*.self_attn.o_proj"),
		     QX_ATTN_OUT);
	cr_assert_eq(quant_exclude_class("layers.*.attn.wo"), QX_ATTN_OUT);
	cr_assert_eq(quant_exclude_class("decoder.layers.*.self_attention."
					 "linear_proj"), QX_ATTN_OUT);
	cr_assert_eq(quant_exclude_class("model.layers.*.mlp.router"),
		     QX_ROUTER);
	/* an MoE block's gate is its router; gate_proj is the dense MLP */
	cr_assert_eq(quant_exclude_class("model.layers.*.mlp.gate"), QX_ROUTER);
	cr_assert_eq(quant_exclude_class("model.layers.0.mlp.gate_proj"), QX_MLP);
	cr_assert_eq(quant_exclude_class("*block_sparse_moe.gate*"), QX_ROUTER);
	cr_assert_eq(quant_exclude_class("model.layers.1.feed_forward.experts"),
		     QX_EXPERTS);
	cr_assert_eq(quant_exclude_class(
		"language_model.model.layers.*.feed_forward.shared_expert.down_proj"),
		QX_SHARED);
	/* a whole MLP block: all it holds */
	cr_assert_eq(quant_exclude_class("model.layers.*.mlp"),
		     QX_MLP | QX_EXPERTS | QX_SHARED | QX_ROUTER);
	/* a regex over 17 layer indices: 20 segments (model, layers, 0..16,
	 * experts). Segments past the 16th were dropped, so the experts were
	 * missed (class 0, then read as a whole-layer selection) */
	cr_assert_eq(quant_exclude_class("re:model\\.layers\\.(0|1|2|3|4|5|6|7|8|"
					 "9|10|11|12|13|14|15|16)\\.mlp\\.experts"),
		     QX_EXPERTS);
	cr_assert_eq(quant_exclude_class("model.layers.(0|1|2|3|4|5|6|7|8|9|10|"
					 "11|12|13|14|15|16|17).mlp.gate"),
		     QX_ROUTER);
	cr_assert_eq(quant_exclude_class("re:.*lm_head"), QX_LM_HEAD);
	cr_assert_eq(quant_exclude_class("model.embed_tokens"), QX_EMBED);
	cr_assert_eq(quant_exclude_class("vision_model*"), QX_VISION);
	cr_assert_eq(quant_exclude_class("model.layers.*.frobnicate"), 0u);
}

/* gpt-oss's modules_to_not_convert: attention, router, embedding and LM
 * head stay bf16; a misspelt entry warns with the segment it may mean. */
Test(hf_model, quant_exclusions_read_and_typos_warn)
{
	char dir[64], path[256];
	const struct model_spec *m = load(write_json(dir, path,
		"{\"hidden_size\": 1024, \"num_hidden_layers\": 2,"
		" \"num_attention_heads\": 8, \"intermediate_size\": 4096,"
		" \"vocab_size\": 1000, \"quantization_config\": {"
		" \"quant_method\": \"mxfp4\", \"modules_to_not_convert\": ["
		" \"model.layers.*.self_attn\", \"model.layers.*.mlp.router\","
		" \"model.embed_tokens\", \"lm_head\"],"
		" \"ignore\": [\"model.layers.*.self_atn\"]}}"));

	cr_assert_eq(m->quantization.excluded,
		     QX_ATTN_ALL | QX_ROUTER | QX_EMBED | QX_LM_HEAD);
	cr_assert_has(capture_text(&C), "'model.layers.*.self_atn' names no "
		      "module class");
	cr_assert_has(capture_text(&C), "did you mean 'self_attn'?");
	cr_assert_eq(C.d.warnings, 1);
	tmpdir_remove(dir);
}

/* A plain index after a layers segment names one decoder layer; a glob
 * over every layer or no layers segment names none (-1); a regex or glob
 * selecting some layers is not resolved (-2). */
Test(hf_model, quant_exclusion_patterns_name_their_layer)
{
	cr_assert_eq(quant_exclude_layer("model.layers.3.self_attn"), 3);
	cr_assert_eq(quant_exclude_layer("language_model.model.layers.47.*"),
		     47);
	cr_assert_eq(quant_exclude_layer("re:.*layers\\.12\\..*"), 12);
	cr_assert_eq(quant_exclude_layer("transformer.h.0.attn"), 0);
	cr_assert_eq(quant_exclude_layer("decoder.layers.5"), 5);
	/* an expert's index inside the layer is not a layer */
	cr_assert_eq(quant_exclude_layer(
		"model.layers.3.mlp.experts.12.down_proj"), 3);
	cr_assert_eq(quant_exclude_layer("model.layers.*.mlp"), -1);
	cr_assert_eq(quant_exclude_layer("lm_head"), -1);
	cr_assert_eq(quant_exclude_layer("re:.*layers\\.\\d+\\.mlp"), -1);
	cr_assert_eq(quant_exclude_layer("re:.*layers\\.(0|47)\\..*"), -2);
	cr_assert_eq(quant_exclude_layer("model.layers.1*"), -2);
	cr_assert_eq(quant_exclude_layer("model.layers.[0-3].mlp"), -2);
	/* re.match: "layers\\.1.*" and an unanchored "layers\\.1" also match
	 * layers 10-19; a literal after the any-character '.' does not */
	cr_assert_eq(quant_exclude_layer("re:.*layers\\.1.*"), -2);
	cr_assert_eq(quant_exclude_layer("re:.*layers\\.1"), -2);
	cr_assert_eq(quant_exclude_layer("re:.*layers\\.1$"), 1);
	cr_assert_eq(quant_exclude_layer("re:.*layers.3.mlp"), 3);
	/* a glob's '.' is literal: layer 4 only */
	cr_assert_eq(quant_exclude_layer("model.layers.4.*"), 4);
}

/* Per-layer exclusions: layer 0 whole (attention and MLP), layer 47's
 * attention, every layer's router; a regex layer selection warns and is
 * taken as every layer (here: the shared expert). */
Test(hf_model, quant_exclusions_per_layer)
{
	char dir[64], path[256];
	const struct model_spec *m = load(write_json(dir, path,
		"{\"hidden_size\": 1024, \"num_hidden_layers\": 48,"
		" \"num_attention_heads\": 8, \"intermediate_size\": 4096,"
		" \"vocab_size\": 1000, \"quantization_config\": {"
		" \"quant_method\": \"fp8\", \"exclude_modules\": ["
		" \"language_model.model.layers.0.*\","
		" \"language_model.model.layers.47.self_attn\","
		" \"language_model.model.layers.5.self_attn.o_proj\","
		" \"*feed_forward.router*\","
		" \"re:.*layers\\\\.(1|2)\\\\.feed_forward.shared_expert.*\"]}}"));
	const struct quant_spec *q = &m->quantization;
	unsigned ffn = QX_MLP | QX_EXPERTS | QX_SHARED | QX_ROUTER;

	cr_assert_eq(q->excluded, QX_ROUTER | QX_SHARED);
	/* layer 5's o_proj alone: QX_ATTN_OUT is bit 8, which a byte a layer
	 * (the storage before) dropped */
	cr_assert_eq(quant_layer_excluded(q, 5),
		     QX_ATTN_OUT | QX_ROUTER | QX_SHARED);
	cr_assert_eq(quant_layer_excluded(q, 0), QX_ATTN_ALL | ffn);
	cr_assert_eq(quant_layer_excluded(q, 47),
		     QX_ATTN_ALL | QX_ROUTER | QX_SHARED);
	cr_assert_eq(quant_layer_excluded(q, 1), QX_ROUTER | QX_SHARED);
	cr_assert_eq(quant_layer_excluded(q, 600), QX_ROUTER | QX_SHARED);
	cr_assert_has(capture_text(&C), "selects layers by a regex or glob");
	cr_assert_eq(C.d.warnings, 1, "%s", capture_text(&C));
	tmpdir_remove(dir);
}

/* Whole layers selected by a regex (re.match: "layers\\.1.*" is layers 1
 * and 10-19) or a glob name no class and no one index: not resolved, so
 * taken as quantized, with a warning each (they were dropped silently). */
Test(hf_model, quant_whole_layer_selection_warns)
{
	char dir[64], path[256];
	const struct model_spec *m = load(write_json(dir, path,
		"{\"hidden_size\": 1024, \"num_hidden_layers\": 48,"
		" \"num_attention_heads\": 8, \"intermediate_size\": 4096,"
		" \"vocab_size\": 1000, \"quantization_config\": {"
		" \"quant_method\": \"fp8\", \"ignore\": ["
		" \"re:.*layers\\\\.1.*\", \"model.layers.2*\"]}}"));
	const struct quant_spec *q = &m->quantization;

	cr_assert_eq(q->excluded, 0);
	cr_assert_eq(quant_layer_excluded(q, 1), 0);
	cr_assert_has(capture_text(&C), "selects whole layers");
	cr_assert_eq(C.d.warnings, 2, "%s", capture_text(&C));
	tmpdir_remove(dir);
}

/* The config.json files of the round-31 MoE models as published
 * (tests/data/workloads/models/hf-*: MiniMax-M2, GLM-4.5, Kimi K2,
 * DeepSeek-V3.2-Exp) load without a warning, with their keys mapped:
 * MiniMax-M2's three MTP modules are nextn layers, its shared expert 0
 * wide is none, its router ('gate') and score bias stay unquantized;
 * GLM-4.5 routes by sigmoid without a scoring_func key and has QK-Norm
 * by use_qk_norm; DeepSeek-V3.2-Exp's indexer keys are read. */
Test(hf_model, round31_moe_config_json_files_load_silently)
{
	const struct model_spec *m;

	m = load(DATA "/workloads/models/hf-minimax-m2/config.json");
	cr_assert_eq(C.d.warnings, 0, "%s", capture_text(&C));
	cr_assert_eq(m->num_nextn_predict_layers, 3);
	cr_assert_eq(m->n_routed_experts, 256);
	cr_assert_eq(m->moe_intermediate_size, 1536);
	cr_assert_eq(model_shared_ffn(m), 0);
	cr_assert_eq(m->scoring_func, SCORE_SIGMOID);
	cr_assert_eq(m->qk_layernorm, 1);
	cr_assert_eq(m->quantization.excluded, QX_ROUTER | QX_LM_HEAD);
	m = load(DATA "/workloads/models/hf-glm-4.5/config.json");
	cr_assert_eq(C.d.warnings, 0, "%s", capture_text(&C));
	cr_assert_eq(m->scoring_func, SCORE_SIGMOID);
	cr_assert_eq(m->qk_layernorm, 1);
	cr_assert_eq(m->first_k_dense_replace, 3);
	cr_assert(!model_layer_moe(m, 2) && model_layer_moe(m, 3));
	m = load(DATA "/workloads/models/hf-kimi-k2/config.json");
	cr_assert_eq(C.d.warnings, 0, "%s", capture_text(&C));
	cr_assert_eq(m->n_routed_experts, 384);
	cr_assert_eq(m->num_attention_heads, 64);
	cr_assert(model_is_mla(m) && !model_is_dsa(m));
	m = load(DATA "/workloads/models/hf-deepseek-v32/config.json");
	cr_assert_eq(C.d.warnings, 0, "%s", capture_text(&C));
	cr_assert(model_is_dsa(m));
	cr_assert_eq(m->index_n_heads, 64);
	cr_assert_eq(m->index_head_dim, 128);
	cr_assert_eq(model_layer_window(m, 0), 2048);
}

/* A bare "gate" in modules_to_not_convert (MiniMax-M2's) is the MoE
 * block's router, as is e_score_correction_bias; gate_proj stays the
 * MLP's. */
Test(hf_model, bare_gate_exclusion_is_the_router)
{
	cr_assert_eq(quant_exclude_class("gate"), QX_ROUTER);
	cr_assert_eq(quant_exclude_class("e_score_correction_bias"),
		     QX_ROUTER);
	cr_assert_eq(quant_exclude_class("gate_proj"), QX_MLP);
}

/* A Nemotron-H / Nemotron 3 config.json (model_type nemotron_h): the
 * hybrid_override_pattern's layers, the Mamba-2 keys, mlp_hidden_act and
 * the shared expert's width by their Nemotron names, the mixer's
 * initialization keys silent. */
#define NEMO_HEAD "{\"model_type\": \"nemotron_h\", \"hidden_size\": 256," \
	" \"num_attention_heads\": 4, \"num_key_value_heads\": 2," \
	" \"attention_head_dim\": 64, \"intermediate_size\": 512," \
	" \"vocab_size\": 1000," \
	" \"mamba_num_heads\": 8, \"mamba_head_dim\": 64," \
	" \"ssm_state_size\": 128, \"conv_kernel\": 4," \
	" \"mamba_chunk_size\": 64, \"mamba_hidden_act\": \"silu\"," \
	" \"time_step_min\": 0.001, \"use_conv_bias\": true," \
	" \"mlp_hidden_act\": \"relu2\", \"layer_norm_epsilon\": 1e-5,"

Test(hf_model, nemotron_h_pattern_and_mamba_keys)
{
	char dir[64], path[256];
	const struct model_spec *m = load(write_json(dir, path, NEMO_HEAD
		" \"num_hidden_layers\": 5, \"hybrid_override_pattern\":"
		" \"M-*ME\", \"n_routed_experts\": 8, \"num_experts_per_tok\": 2,"
		" \"moe_intermediate_size\": 128,"
		" \"moe_shared_expert_intermediate_size\": 256, \"n_groups\": 2}"));

	cr_assert_eq(C.d.warnings, 0, "%s", capture_text(&C));
	cr_assert_eq(model_layer_block(m, 0), BLOCK_MAMBA);
	cr_assert_eq(model_layer_block(m, 1), BLOCK_MLP);
	cr_assert_eq(model_layer_block(m, 2), BLOCK_ATTN);
	cr_assert_eq(model_layer_block(m, 4), BLOCK_MOE);
	cr_assert(model_layer_moe(m, 4) && !model_layer_moe(m, 1));
	cr_assert_eq(model_attn_layers(m), 1);
	cr_assert_eq(m->hidden_act, ACT_RELU2);
	cr_assert_eq(m->gated_mlp, 0);	/* squared ReLU: up and down */
	cr_assert_eq(m->shared_expert_intermediate_size, 256);
	cr_assert_eq(model_mamba_inner(m), 512);
	cr_assert_eq(m->head_dim, 64);	/* Nemotron-H's attention_head_dim */
	cr_assert_eq(m->chunk_size, 64);	/* mamba_chunk_size */
	/* no rotary in NemotronHAttention (vLLM nemotron_h.py) */
	cr_assert_eq(m->position_embedding, POS_NONE);
	tmpdir_remove(dir);
}

/* A nemotron_h file that names its position embedding keeps it; another
 * model_type without the key keeps the schema's rope. */
Test(hf_model, nemotron_h_position_embedding_only_by_default)
{
	char dir[64], path[256];
	const struct model_spec *m = load(write_json(dir, path, NEMO_HEAD
		" \"num_hidden_layers\": 2, \"hybrid_override_pattern\":"
		" \"M*\", \"position_embedding\": \"rope\"}"));

	cr_assert_eq(m->position_embedding, POS_ROPE);
	tmpdir_remove(dir);
	m = load(write_json(dir, path, "{\"model_type\": \"llama\","
		" \"hidden_size\": 256, \"num_attention_heads\": 4,"
		" \"num_key_value_heads\": 2, \"intermediate_size\": 512,"
		" \"vocab_size\": 1000, \"num_hidden_layers\": 2}"));
	cr_assert_eq(m->position_embedding, POS_ROPE);
	tmpdir_remove(dir);
}

static void nemotron_fails(const char *tail, const char *msg)
{
	char dir[64], path[256];
	struct model_spec m;
	char text[2048];

	snprintf(text, sizeof(text), "%s%s", NEMO_HEAD, tail);
	write_json(dir, path, text);
	memset(&m, 0, sizeof(m));
	cr_assert_eq(config_load(&CX, &model_schema, path, NULL, 0, &m), -1,
		     "%s", tail);
	cr_assert_has(capture_text(&C), msg);
	tmpdir_remove(dir);
}

Test(hf_model, nemotron_h_bad_patterns_fail)
{
	nemotron_fails(" \"num_hidden_layers\": 4, \"hybrid_override_pattern\":"
		       " \"M-*X\"}", "layer 3 is 'X': expected M (Mamba-2)");
	nemotron_fails(" \"num_hidden_layers\": 5, \"hybrid_override_pattern\":"
		       " \"M-*M\"}", "'hybrid_override_pattern' has 4 layers "
		       "for 'num_hidden_layers' 5");
	nemotron_fails(" \"num_hidden_layers\": 2, \"hybrid_override_pattern\":"
		       " \"ME\"}", "has 1 MoE layers ('E') but the model has no "
		       "'n_routed_experts'");
	nemotron_fails(" \"num_hidden_layers\": 2, \"hybrid_override_pattern\":"
		       " \"M-\", \"n_groups\": 3}", "'mamba_num_heads' 8 is not a "
		       "multiple of 'n_groups' 3");
}

/* The Hugging Face hub cache keeps a download as
 * models--ORG--NAME/snapshots/COMMIT/config.json (huggingface_hub's
 * repo_folder_name): the model is NAME, as a checkout's directory
 * names it; it was COMMIT (a 40-hex name in every table). A repo id
 * without an ORG ("gpt2") is models--gpt2; a checkout is its folder. */
Test(hf_model, hub_cache_path_names_the_repo_not_the_commit)
{
	static const char *const sub[][2] = {
		{"models--meta-llama--Llama-3.1-8B/snapshots/"
		 "0e9e39f249a16976918f6564b8830bc894c89659", "Llama-3.1-8B"},
		{"models--gpt2/snapshots/607a30d783dfa663caf39e06633721c8d4cfcd7e",
		 "gpt2"},
		{"models--a--b/snapshots/c", "b"},
		{"Llama-3-8B", "Llama-3-8B"},
		{"snapshots/abc", "abc"},	/* no models--: a checkout */
	};
	const char *json = "{\"hidden_size\": 1024, \"num_hidden_layers\": 2,"
			   " \"num_attention_heads\": 8, \"intermediate_size\":"
			   " 4096, \"vocab_size\": 1000}";
	char dir[64], cmd[512], path[512];
	size_t i;

	tmpdir_make(dir);
	for (i = 0; i < sizeof(sub) / sizeof(sub[0]); i++) {
		const struct model_spec *m;
		FILE *f;

		snprintf(cmd, sizeof(cmd), "mkdir -p '%s/%s'", dir, sub[i][0]);
		cr_assert_eq(system(cmd), 0);
		snprintf(path, sizeof(path), "%s/%s/config.json", dir,
			 sub[i][0]);
		f = fopen(path, "w");
		cr_assert_not_null(f);
		fputs(json, f);
		fclose(f);
		m = load(path);
		cr_assert_str_eq(m->name, sub[i][1], "%s", path);
	}
	tmpdir_remove(dir);
}

Test(hf_model, tie_word_embeddings_absent_is_the_config_class_default)
{
	/*
	 * config.json leaves out a key equal to its config class's default
	 * (transformers PretrainedConfig.to_diff_dict): GemmaConfig,
	 * Gemma2Config and Gemma3TextConfig tie by default, so google's
	 * gemma-7b config.json has no tie_word_embeddings, and llmsim's
	 * false gave it a second 256000 x 3072 head. GPT2Config, BloomConfig,
	 * OPTConfig and FalconConfig set no default: PretrainedConfig's
	 * True (openai-community/gpt2's config.json has no such key).
	 * Starcoder2Config, CohereConfig, Cohere2Config, MptConfig and
	 * GPTBigCodeConfig default to True (a Command-R config.json without
	 * the key got a second 256000 x 8192 head), GPTNeoXConfig to False.
	 * Absent: true for those twelve model_types, false for llama
	 * (LlamaConfig's False), gpt_neox, a type merely starting like one
	 * (gpt2_custom, cohere3) and none; a given value stands either way.
	 */
	static const char *const types[] = { "gemma", "gemma2",
					     "gemma3_text", "gpt2", "bloom",
					     "opt", "falcon", "starcoder2",
					     "cohere", "cohere2", "mpt",
					     "gpt_bigcode", "llama",
					     "gpt_neox", "gpt2_custom",
					     "cohere3", NULL };
	static const int want[] = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
				    0, 0, 0, 0, 0 };
	char dir[64], path[256], text[512];
	const struct model_spec *m;
	size_t i;

	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		snprintf(text, sizeof(text), "{%s%s%s \"hidden_size\": 1024,"
			 " \"num_hidden_layers\": 2, \"num_attention_heads\": 8,"
			 " \"intermediate_size\": 4096, \"vocab_size\": 1000}",
			 types[i] ? "\"model_type\": \"" : "",
			 types[i] ? types[i] : "", types[i] ? "\"," : "");
		m = load(write_json(dir, path, text));
		cr_assert_eq(m->tie_word_embeddings, want[i], "%s",
			     types[i] ? types[i] : "(none)");
		tmpdir_remove(dir);
	}
	m = load(write_json(dir, path, "{\"model_type\": \"gemma\","
		" \"tie_word_embeddings\": false, \"hidden_size\": 1024,"
		" \"num_hidden_layers\": 2, \"num_attention_heads\": 8,"
		" \"intermediate_size\": 4096, \"vocab_size\": 1000}"));
	cr_assert_eq(m->tie_word_embeddings, 0);
	tmpdir_remove(dir);
	m = load(write_json(dir, path, "{\"model_type\": \"opt\","
		" \"tie_word_embeddings\": false, \"hidden_size\": 1024,"
		" \"num_hidden_layers\": 2, \"num_attention_heads\": 8,"
		" \"intermediate_size\": 4096, \"vocab_size\": 1000}"));
	cr_assert_eq(m->tie_word_embeddings, 0);
	tmpdir_remove(dir);
}

Test(hf_model, swish_is_silu)
{
	/* transformers ACT2CLS maps "swish" to SiLUActivation, as "silu":
	 * the same function, so the same gated MLP as silu (and an unknown
	 * name is still refused: bad-inputs) */
	char dir[64], path[256];
	const struct model_spec *m;

	m = load(write_json(dir, path, "{\"hidden_act\": \"swish\","
		" \"hidden_size\": 1024, \"num_hidden_layers\": 2,"
		" \"num_attention_heads\": 8, \"intermediate_size\": 4096,"
		" \"vocab_size\": 1000}"));
	cr_assert_eq(m->hidden_act, ACT_SILU);
	cr_assert_eq(m->gated_mlp, 1);
	tmpdir_remove(dir);
}

Test(hf_model, norm_and_biases_of_the_model_type)
{
	/*
	 * config.json says a model's norms and biases in its own words, or
	 * not at all where the class fixes them (transformers @ 008e5743):
	 * Starcoder2 nn.LayerNorm, every linear bias=config.use_bias
	 * (default True; norm_type and mlp_type are read by nothing);
	 * GPT-NeoX nn.LayerNorm, attention bias=config.attention_bias
	 * (default True), biased MLP linears; Phi nn.LayerNorm, biased
	 * linears, one norm for attention and the MLP (a warning: llmsim
	 * builds two); StableLM nn.LayerNorm, q/k/v bias=use_qkv_bias
	 * (default False; true is a warning, llmsim biases o_proj too),
	 * unbiased MLP; Cohere one shared norm (a warning), CohereLayerNorm
	 * mean-subtracting with a weight only (layernorm, norm_bias false:
	 * one norm tensor), logit_scale a warning (the logits' pass is not
	 * charged; null is no scale). A key the file gives wins; other types
	 * keep llmsim's defaults (rmsnorm, no bias).
	 */
	static const struct {
		const char *type, *keys;
		int norm, ab, mb, warnings, tensors;
	} c[] = {
		{ "starcoder2", "", NORM_LAYER, 1, 1, 0, 2 },
		{ "starcoder2", "\"use_bias\": false, \"norm_type\": "
		  "\"layer_norm\", \"mlp_type\": \"default\",",
		  NORM_LAYER, 0, 0, 0, 2 },
		{ "gpt_neox", "\"rotary_pct\": 0.25, \"rotary_emb_base\": "
		  "10000, \"use_parallel_residual\": true,",
		  NORM_LAYER, 1, 1, 0, 2 },
		{ "gpt_neox", "\"attention_bias\": false, \"norm\": "
		  "\"rmsnorm\",", NORM_RMS, 0, 1, 0, 1 },
		{ "phi", "", NORM_LAYER, 1, 1, 1, 2 },
		{ "stablelm", "\"use_parallel_residual\": false,",
		  NORM_LAYER, 0, 0, 0, 2 },
		{ "stablelm", "\"use_qkv_bias\": true, "
		  "\"use_parallel_residual\": true,", NORM_LAYER, 1, 0, 2, 2 },
		{ "cohere", "\"logit_scale\": 0.0625,", NORM_LAYER, 0, 0, 2,
		  1 },
		{ "cohere2", "\"logit_scale\": null,", NORM_LAYER, 0, 0, 1, 1 },
		{ "cohere", "\"norm_bias\": true,", NORM_LAYER, 0, 0, 1, 2 },
		{ "cohere", "\"norm\": \"rmsnorm\",", NORM_RMS, 0, 0, 1, 1 },
		{ "llama", "", NORM_RMS, 0, 0, 0, 1 },
	};
	char dir[64], path[256], text[512];
	const struct model_spec *m;
	size_t i;
	int w;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		snprintf(text, sizeof(text), "{\"model_type\": \"%s\", %s"
			 " \"hidden_size\": 1024, \"num_hidden_layers\": 2,"
			 " \"num_attention_heads\": 8, \"intermediate_size\":"
			 " 4096, \"vocab_size\": 1000}", c[i].type, c[i].keys);
		w = C.d.warnings;
		m = load(write_json(dir, path, text));
		cr_assert_eq(m->norm, c[i].norm, "%zu %s", i, c[i].type);
		cr_assert_eq(m->attention_bias, c[i].ab, "%zu %s", i,
			     c[i].type);
		cr_assert_eq(m->mlp_bias, c[i].mb, "%zu %s", i, c[i].type);
		cr_assert_eq(model_norm_tensors(m), c[i].tensors, "%zu %s", i,
			     c[i].type);
		cr_assert_eq(C.d.warnings - w, c[i].warnings, "%zu %s: %s", i,
			     c[i].type, capture_text(&C));
		tmpdir_remove(dir);
	}
	cr_assert_has(capture_text(&C), "'use_qkv_bias': StableLM biases q, "
		      "k and v but not o_proj; llmsim's attention_bias biases "
		      "o_proj too (1024 parameters and one bias kernel a "
		      "layer too many)");
	cr_assert_has(capture_text(&C), "'model_type' phi: attention and the "
		      "MLP share one input norm; llmsim builds two norms a "
		      "layer (one norm of 1024 elements a token");
	cr_assert_has(capture_text(&C), "'logit_scale': the logits are "
		      "multiplied by it, one elementwise pass over 1000 logits "
		      "a token that llmsim does not charge");
	/* an rmsnorm has no bias to keep: refused at the key */
	cr_assert_neq(config_load(&CX, &model_schema, write_json(dir, path,
		"{\"norm_bias\": true, \"hidden_size\": 1024,"
		" \"num_hidden_layers\": 2, \"num_attention_heads\": 8,"
		" \"intermediate_size\": 4096, \"vocab_size\": 1000}"), NULL,
		0, arena_alloc(&A, sizeof(struct model_spec))), 0);
	cr_assert_has(capture_text(&C), "config.json:1:15: error: 'norm_bias': "
		      "true, but norm is rmsnorm, which has a weight only");
	tmpdir_remove(dir);
	/* a value that is not a boolean is refused, at its place */
	cr_assert_neq(config_load(&CX, &model_schema, write_json(dir, path,
		"{\"model_type\": \"starcoder2\", \"use_bias\": \"yes\","
		" \"hidden_size\": 1024, \"num_hidden_layers\": 2,"
		" \"num_attention_heads\": 8, \"intermediate_size\": 4096,"
		" \"vocab_size\": 1000}"), NULL, 0,
		arena_alloc(&A, sizeof(struct model_spec))), 0);
	cr_assert_has(capture_text(&C), "config.json:1:42: error: 'use_bias': "
		      "expected true or false, got 'yes'");
	tmpdir_remove(dir);
}
