/*
 * test_hf_checked.c - Hugging Face config.json keys llmsim does not model
 * but checks (spec_model_hf.c): a rotary base of 0, a class that is not a
 * decoder-only LM (BERT, a reward model, CLIP's text tower behind a
 * multimodal wrapper), an encoder-decoder. Each was accepted silently
 * before: simulated as the decoder-only LM it is not.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "config/config.h"
#include "config_testutil.h"
#include "config/spec_model.h"

static void setup(void)
{
	fixture_cx_init("tests/data");
}

TestSuite(hf_checked, .init = setup, .fini = fixture_fini);

/* A small valid model followed by the keys under test (text starts with
 * a comma, or is empty). */
#define BASE "{\"hidden_size\": 1024, \"num_hidden_layers\": 2," \
	" \"num_attention_heads\": 8, \"intermediate_size\": 4096," \
	" \"vocab_size\": 1000"

/* config_load's status on BASE + extra + "}"; diagnostics in C. */
static int try_load(const char *extra)
{
	char dir[64], path[256], text[1024];
	struct model_spec *m = arena_alloc(&A, sizeof(*m));
	int rc;

	snprintf(text, sizeof(text), BASE "%s}", extra);
	tmpdir_make(dir);
	write_file(path, dir, "config.json", text, strlen(text));
	memset(m, 0, sizeof(*m));
	rc = config_load(&CX, &model_schema, path, NULL, 0, m);
	tmpdir_remove(dir);
	return rc;
}

Test(hf_checked, rope_theta_is_a_positive_number)
{
	/* Llama 3's 500000 and DeepSeek's 10000.0, null (= absent) load. */
	cr_assert_eq(try_load(", \"rope_theta\": 500000"), 0, "%s",
		     capture_text(&C));
	cr_assert_eq(try_load(", \"rope_theta\": 1e4"), 0);
	cr_assert_eq(try_load(", \"rope_theta\": null"), 0);
	cr_assert_eq(C.d.errors, 0, "%s", capture_text(&C));
	/* base 0: inv_freq_i = 0^(-2i/d) is infinite for i > 0 */
	cr_assert_eq(try_load(", \"rope_theta\": 0"), -1);
	cr_assert_has(capture_text(&C), "'rope_theta': expected the rotary "
		      "base, a number > 0 such as 10000");
	cr_assert_has(capture_text(&C), "got '0'");
	/* a negative base: NaN frequencies */
	cr_assert_eq(try_load(", \"rope_theta\": -10000"), -1);
	cr_assert_has(capture_text(&C), "got '-10000'");
	/* a string and a list are not numbers; inside rope_scaling too */
	cr_assert_eq(try_load(", \"rope_theta\": \"10000\""), -1);
	cr_assert_has(capture_text(&C), "(a quoted string; write it without "
		      "quotes)");
	cr_assert_eq(try_load(", \"rope_theta\": [1]"), -1);
	cr_assert_has(capture_text(&C), "got a list");
	cr_assert_eq(try_load(", \"rope_scaling\": {\"rope_type\": \"yarn\","
			      " \"factor\": 4, \"rope_theta\": 0}"), -1);
	cr_assert_has(capture_text(&C), "'rope_scaling.rope_theta'");
	cr_assert_eq(C.d.errors, 5, "%s", capture_text(&C));
}

Test(hf_checked, architectures_name_a_decoder_only_lm)
{
	/* the causal-LM suffixes and a multimodal wrapper's class load */
	cr_assert_eq(try_load(", \"architectures\": [\"LlamaForCausalLM\"]"),
		     0, "%s", capture_text(&C));
	cr_assert_eq(try_load(", \"architectures\": [\"GPT2LMHeadModel\"]"), 0);
	cr_assert_eq(try_load(", \"architectures\": "
			      "[\"Llama4ForConditionalGeneration\"]"), 0);
	cr_assert_eq(try_load(", \"architectures\": null"), 0);
	cr_assert_eq(try_load(", \"architectures\": []"), 0);
	cr_assert_eq(C.d.errors, 0, "%s", capture_text(&C));
	/* BERT's masked LM (bidirectional encoder) */
	cr_assert_eq(try_load(", \"architectures\": [\"BertForMaskedLM\"]"), -1);
	cr_assert_has(capture_text(&C), "'BertForMaskedLM' is not a "
		      "decoder-only language model");
	/* a reward model: a Llama trunk with a 1-wide head, no LM head */
	cr_assert_eq(try_load(", \"architectures\": "
			      "[\"LlamaForSequenceClassification\"]"), -1);
	cr_assert_has(capture_text(&C), "remove 'architectures' to simulate "
		      "this config as one anyway");
	/* not a list of names */
	cr_assert_eq(try_load(", \"architectures\": \"LlamaForCausalLM\""), -1);
	cr_assert_has(capture_text(&C), "expected a list of model class names");
	cr_assert_eq(try_load(", \"architectures\": [1, null]"), -1);
	cr_assert_has(capture_text(&C), "got null");
	cr_assert_eq(C.d.errors, 5, "%s", capture_text(&C));
}

Test(hf_checked, a_wrappers_architectures_are_checked)
{
	char dir[64], path[256];
	struct model_spec m;
	/* CLIP: the wrapper says CLIPModel, its text_config (a text
	 * encoder) says nothing; the text model would otherwise load */
	const char *text = "{\"architectures\": [\"CLIPModel\"],"
		" \"model_type\": \"clip\", \"text_config\": {"
		"\"architectures\": null, \"hidden_size\": 512,"
		" \"num_hidden_layers\": 12, \"num_attention_heads\": 8,"
		" \"intermediate_size\": 2048, \"vocab_size\": 49408},"
		" \"vision_config\": {\"hidden_size\": 768}}";

	tmpdir_make(dir);
	write_file(path, dir, "config.json", text, strlen(text));
	memset(&m, 0, sizeof(m));
	cr_assert_eq(config_load(&CX, &model_schema, path, NULL, 0, &m), -1);
	cr_assert_has(capture_text(&C), "'CLIPModel' is not a decoder-only");
	tmpdir_remove(dir);
}

Test(hf_checked, encoder_decoder_is_refused)
{
	cr_assert_eq(try_load(", \"is_encoder_decoder\": false"), 0, "%s",
		     capture_text(&C));
	cr_assert_eq(C.d.warnings, 0, "%s", capture_text(&C));
	cr_assert_eq(try_load(", \"is_encoder_decoder\": true"), -1);
	cr_assert_has(capture_text(&C), "an encoder-decoder model (T5, BART, "
		      "Whisper) is not simulated");
	cr_assert_eq(try_load(", \"is_encoder_decoder\": \"yes\""), -1);
	cr_assert_has(capture_text(&C), "'is_encoder_decoder': expected true "
		      "or false, got 'yes'");
}

/* transformers v5 writes rope_scaling as rope_parameters, rope_theta
 * inside it. gpt-oss's YaRN: factor 32, no attention_factor or mscale, so
 * m = 0.1 ln 32 + 1 = 1.34657 (transformers get_mscale); before, the key
 * was warned about and dropped (m = 1). */
Test(hf_checked, v5_rope_parameters_is_rope_scaling)
{
	char dir[64], path[256];
	static const char text[] = BASE ", \"rope_parameters\": {\"rope_type\":"
		" \"yarn\", \"factor\": 32.0, \"rope_theta\": 150000,"
		" \"beta_fast\": 32.0, \"beta_slow\": 1.0}}";
	struct model_spec *m = arena_alloc(&A, sizeof(*m));

	tmpdir_make(dir);
	write_file(path, dir, "config.json", text, strlen(text));
	memset(m, 0, sizeof(*m));
	cr_assert_eq(config_load(&CX, &model_schema, path, NULL, 0, m), 0,
		     "%s", capture_text(&C));
	tmpdir_remove(dir);
	cr_assert_str_eq(m->rope_scaling.rope_type, "yarn");
	cr_assert_float_eq(m->rope_mscale, 0.1 * 3.4657359 + 1, 1e-6);
	/* its rope_theta is checked as the top-level one is */
	cr_assert_eq(try_load(", \"rope_parameters\": {\"rope_theta\": 0}"),
		     -1);
	cr_assert_has(capture_text(&C), "'rope_parameters.rope_theta'");
	/* both names: one is a copy of the other or a conflict; exit 2 */
	cr_assert_eq(try_load(", \"rope_scaling\": {\"factor\": 2},"
			      " \"rope_parameters\": {\"factor\": 4}"), -1);
	cr_assert_has(capture_text(&C), "give it once");
}
