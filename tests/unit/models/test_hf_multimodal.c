/*
 * test_hf_multimodal.c - a multimodal checkpoint's config.json (Llama 4
 * Maverick's, text_config beside vision_config) resolves to the same
 * language model as the shipped preset: layers, parameters, active
 * parameters and the per-layer MoE and attention pattern; contradictions
 * between the two levels are errors at file:line:col.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "../config/config_testutil.h"
#include "config/config.h"
#include "config/spec_model.h"
#include "fixture.h"
#include "models/footprint.h"

static void setup(void)
{
	fixture_cx_init(".");
}

TestSuite(hf_multimodal, .init = setup, .fini = fixture_fini);

static const struct model_spec *load(const char *what)
{
	struct model_spec *m = arena_alloc(&A, sizeof(*m));

	cr_assert_eq(config_load(&CX, &model_schema, what, NULL, 0, m), 0,
		     "%s: %s", what, capture_text(&C));
	return m;
}

/* Parameters of the whole model and per token, through a job of it. */
static void params(const struct model_spec *m, double *total, double *active)
{
	struct fixture f;

	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 1, 8, 1, 1, 1);
	f.model = *m;
	*total = footprint_model_params(&f.job);
	*active = footprint_active_params(&f.job);
}

Test(hf_multimodal, maverick_config_json_is_the_preset)
{
	const struct model_spec *hf, *pre;
	double hf_total, hf_active, pre_total, pre_active;
	int64_t i;

	hf = load("tests/data/workloads/models/hf-llama4-maverick/config.json");
	cr_assert_eq(C.d.warnings, 0, "%s", capture_text(&C));
	/* one note names the encoder section left out */
	cr_assert_has(capture_text(&C), "vision_config not modeled");
	cr_assert_str_eq(hf->text_model_of, "llama4");
	pre = load("llama4-maverick");
	cr_assert_null(pre->text_model_of);
	cr_assert_eq(hf->num_hidden_layers, 48);
	cr_assert_eq(hf->num_hidden_layers, pre->num_hidden_layers);
	/* Llama 4 terms: intermediate_size 8192 is the expert's and the
	 * shared expert's width, intermediate_size_mlp 16384 the dense MLP */
	cr_assert_eq(hf->intermediate_size, 16384);
	cr_assert_eq(hf->moe_intermediate_size, 8192);
	cr_assert_eq(model_shared_ffn(hf), 8192);
	cr_assert_eq(hf->n_routed_experts, pre->n_routed_experts);
	cr_assert_eq(hf->num_experts_per_tok, pre->num_experts_per_tok);
	cr_assert_eq(hf->qk_layernorm, pre->qk_layernorm);
	cr_assert_eq(hf->tie_word_embeddings, pre->tie_word_embeddings);
	/* moe_layers [1, 3, ..., 47] (the file) and decoder_sparse_step 2
	 * (the preset: (i + 1) % 2 == 0) name the same 24 layers; the file's
	 * no_rope_layers [1, 1, 1, 0] * 12 and the preset's interval 4 the
	 * same NoPE layers 3, 7, ..., 47 */
	for (i = 0; i < 48; i++) {
		cr_assert_eq(model_layer_moe(hf, i), i % 2 == 1, "layer %lld",
			     (long long)i);
		cr_assert_eq(model_layer_moe(hf, i), model_layer_moe(pre, i));
		cr_assert_eq(model_layer_chunk(hf, i), model_layer_chunk(pre, i));
	}
	params(hf, &hf_total, &hf_active);
	params(pre, &pre_total, &pre_active);
	cr_assert_eq(hf_total, pre_total, "%.6g vs %.6g", hf_total, pre_total);
	cr_assert_eq(hf_active, pre_active, "%.6g vs %.6g", hf_active,
		     pre_active);
	/* Meta's model card: 400 B total, 17 B active. Per MoE layer 128
	 * experts of 3 h f = 3 * 5120 * 8192 = 125.8 M each: 24 layers *
	 * 128 * 125.8 M = 386.5 B of experts; the rest (attention 48 * (40 +
	 * 2 * 8 + 40) * 128 * 5120 = 3.0 B, dense MLPs 24 * 3 * 5120 * 16384
	 * = 6.0 B, shared experts 24 * 125.8 M = 3.0 B, embedding and head
	 * 2 * 202048 * 5120 = 2.1 B) ~14 B: ~400.7 B. Active: the 14 B plus
	 * one expert per MoE layer 3.0 B = ~17.2 B. */
	cr_assert(hf_total > 399e9 && hf_total < 402e9, "%.6g", hf_total);
	cr_assert(hf_active > 17.0e9 && hf_active < 17.5e9, "%.6g", hf_active);
}

static const char *write_json(char dir[64], char path[256], const char *text)
{
	tmpdir_make(dir);
	write_file(path, dir, "config.json", text, strlen(text));
	return path;
}

Test(hf_multimodal, top_level_key_contradicting_text_config_is_an_error)
{
	struct model_spec *m = arena_alloc(&A, sizeof(*m));
	char dir[64], path[256];

	/* Qwen2.5-VL repeats its text keys at the top level: the same
	 * value is fine (1e-06 and 1e-6 too), a different one an error at
	 * the top-level key (line 2, column 3) */
	write_json(dir, path, "{\"model_type\": \"qwen2_5_vl\",\n"
		   "  \"hidden_size\": 2048, \"rms_norm_eps\": 1e-06,\n"
		   "  \"text_config\": {\"model_type\": \"qwen2_5_vl_text\","
		   " \"hidden_size\": 1024, \"num_hidden_layers\": 2,"
		   " \"num_attention_heads\": 8, \"intermediate_size\": 4096,"
		   " \"vocab_size\": 1000, \"rms_norm_eps\": 1e-6},\n"
		   "  \"vision_config\": {\"depth\": 32},"
		   " \"audio_config\": {\"d_model\": 1280}}");
	cr_assert_neq(config_load(&CX, &model_schema, path, NULL, 0, m), 0);
	cr_assert_has(capture_text(&C), "config.json:2:3: error: 'hidden_size' "
		      "here contradicts 'text_config.hidden_size'");
	tmpdir_remove(dir);
}

Test(hf_multimodal, generic_text_config_and_one_note)
{
	const struct model_spec *m;
	char dir[64], path[256];

	/* Gemma 3 style: the text model only under text_config, a top-level
	 * model key text_config lacks is taken (tie_word_embeddings), the
	 * same key twice with the same value is fine; both encoder sections
	 * named in one note, no warning */
	m = load(write_json(dir, path, "{\"model_type\": \"gemma3\","
		" \"architectures\": [\"Gemma3ForConditionalGeneration\"],"
		" \"mm_tokens_per_image\": 256, \"image_token_index\": 262144,"
		" \"tie_word_embeddings\": true, \"vocab_size\": 1000,"
		" \"text_config\": {\"model_type\": \"gemma3_text\","
		" \"hidden_size\": 1024, \"num_hidden_layers\": 2,"
		" \"num_attention_heads\": 8, \"intermediate_size\": 4096,"
		" \"vocab_size\": 1000, \"hidden_act\": \"gelu_pytorch_tanh\"},"
		" \"vision_config\": {\"hidden_size\": 1152},"
		" \"audio_config\": {\"d_model\": 1280}}"));
	cr_assert_eq(C.d.warnings, 0, "%s", capture_text(&C));
	cr_assert_has(capture_text(&C), "vision_config, audio_config not "
		      "modeled");
	cr_assert_str_eq(m->model_type, "gemma3_text");
	cr_assert_str_eq(m->text_model_of, "gemma3");
	cr_assert_eq(m->hidden_size, 1024);
	cr_assert_eq(m->tie_word_embeddings, 1);
	tmpdir_remove(dir);
}

Test(hf_multimodal, flat_wrapper_encoder_section_is_one_note)
{
	const struct model_spec *m;
	char dir[64], path[256];

	/* Qwen2-VL / Qwen2.5-VL as first published (transformers < 4.52):
	 * the language model's keys at the top level, the vision encoder
	 * under vision_config, no text_config. The encoder section is
	 * named in the one note, not warned about as an unknown key, and
	 * the language model loads from the top level. */
	m = load(write_json(dir, path, "{\"model_type\": \"qwen2_5_vl\","
		" \"architectures\": [\"Qwen2_5_VLForConditionalGeneration\"],"
		" \"hidden_size\": 1024, \"num_hidden_layers\": 2,"
		" \"num_attention_heads\": 8, \"num_key_value_heads\": 2,"
		" \"intermediate_size\": 4096, \"vocab_size\": 1000,"
		" \"hidden_act\": \"silu\","
		" \"vision_config\": {\"depth\": 32, \"hidden_size\": 1280}}"));
	cr_assert_eq(C.d.warnings, 0, "%s", capture_text(&C));
	cr_assert_has(capture_text(&C), "multimodal checkpoint (model_type "
		      "'qwen2_5_vl'): its language model (the top-level keys) "
		      "is simulated; vision_config not modeled");
	cr_assert_eq(m->hidden_size, 1024);
	cr_assert_eq(m->num_key_value_heads, 2);
	tmpdir_remove(dir);
}

Test(hf_multimodal, llama4_sizes_given_both_ways_must_agree)
{
	struct model_spec *m = arena_alloc(&A, sizeof(*m));
	char dir[64], path[256];

	/* Llama 4 terms (intermediate_size_mlp given): intermediate_size
	 * 8192 is the expert's width, so moe_intermediate_size 4096 is a
	 * contradiction */
	write_json(dir, path, "{\"hidden_size\": 1024, \"num_hidden_layers\": 2,"
		   " \"num_attention_heads\": 8, \"intermediate_size\": 8192,"
		   " \"intermediate_size_mlp\": 16384, \"vocab_size\": 1000,"
		   " \"num_local_experts\": 4, \"num_experts_per_tok\": 1,"
		   " \"moe_intermediate_size\": 4096}");
	cr_assert_neq(config_load(&CX, &model_schema, path, NULL, 0, m), 0);
	cr_assert_has(capture_text(&C), "'moe_intermediate_size' 4096 "
		      "contradicts 'intermediate_size' 8192");
	tmpdir_remove(dir);
}

Test(hf_multimodal, unknown_wrapper_key_is_a_warning_with_did_you_mean)
{
	const struct model_spec *m;
	char dir[64], path[256];

	/* Top-level keys of a wrapper that are neither model keys nor
	 * known-irrelevant get the warning any config.json key gets: a
	 * typo of a model key (line 2, column 3) with its did-you-mean, an
	 * unrelated key without one; known-irrelevant keys (architectures,
	 * image_token_index) and the encoder section stay silent: two
	 * warnings in all, and the typo is not taken as the model key. */
	m = load(write_json(dir, path, "{\"model_type\": \"gemma3\",\n"
		"  \"tie_word_embedings\": true, \"frobnicate\": 1,"
		" \"architectures\": [\"Gemma3ForConditionalGeneration\"],"
		" \"image_token_index\": 262144,"
		" \"text_config\": {\"hidden_size\": 1024,"
		" \"num_hidden_layers\": 2, \"num_attention_heads\": 8,"
		" \"intermediate_size\": 4096, \"vocab_size\": 1000},"
		" \"vision_config\": {\"hidden_size\": 1152}}"));
	cr_assert_has(capture_text(&C), "config.json:2:3: warning: "
		      "'tie_word_embedings': key not modeled by llmsim and "
		      "ignored; did you mean 'tie_word_embeddings'?");
	cr_assert_has(capture_text(&C), "'frobnicate': key not modeled by "
		      "llmsim and not known to be irrelevant");
	cr_assert_eq(C.d.warnings, 2, "%s", capture_text(&C));
	cr_assert_eq(C.d.errors, 0, "%s", capture_text(&C));
	cr_assert_eq(m->tie_word_embeddings, 0);
	tmpdir_remove(dir);
}
