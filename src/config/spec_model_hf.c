/*
 * spec_model_hf.c - Hugging Face config.json keys llmsim does not model
 * but still checks: a value no real checkpoint could hold is a broken or
 * foreign file, not a model to simulate.
 *
 *   torch_dtype, dtype   a torch dtype name (llmsim takes dtypes from the
 *                        job, but 'float3' is a broken file)
 *   rope_theta           the rotary base b of inv_freq_i = b^(-2i/d)
 *                        (transformers modeling_rope_utils
 *                        _compute_default_rope_parameters): a finite
 *                        number > 0; b = 0 makes every frequency but the
 *                        first infinite, b < 0 makes them NaN. Checked at
 *                        the top level and inside rope_scaling.
 *   architectures        the model classes the checkpoint was saved from.
 *                        llmsim simulates a decoder-only language model
 *                        with its LM head; transformers names those
 *                        classes *ForCausalLM or *LMHeadModel (its
 *                        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES, models/auto/
 *                        modeling_auto.py) and a multimodal wrapper around
 *                        one *ForConditionalGeneration (Llama 4, Gemma 3,
 *                        Qwen2.5-VL, Mistral 3). Any other class (BERT's
 *                        *ForMaskedLM, a reward model's
 *                        *ForSequenceClassification, CLIPModel) is a
 *                        different computation: an error that says how to
 *                        simulate it as a decoder-only LM anyway.
 *   is_encoder_decoder   true (T5, BART, Whisper): not a decoder-only
 *                        model, an error.
 * Every error names file:line:col of the value.
 */
#include "spec_model.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cnode.h"
#include "schema.h"
#include "base/diag.h"

/* torch's dtype names (torch.dtype; pytorch.org/docs/stable/
 * tensor_attributes.html), as transformers writes torch_dtype (or, since
 * v4.56, dtype) into config.json: str(dtype) without "torch.". */
static const char *const torch_dtypes[] = {
	"float32", "float", "float64", "double", "float16", "half",
	"bfloat16", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
	"float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn_x2", "complex32",
	"complex64", "complex128", "uint8", "uint16", "uint32", "uint64",
	"int8", "int16", "short", "int32", "int", "int64", "long", "bool",
	"auto", NULL,
};

/* How a value reads in a message: 'text' for a scalar, else its kind. */
static const char *shown(const struct cnode *v, char *buf, size_t n)
{
	if (v->kind != CNODE_SCALAR)
		return v->kind == CNODE_SEQ ? "a list" : "a mapping";
	snprintf(buf, n, "'%s'", v->text);
	return buf;
}

static int check_torch_dtype(const struct cnode *node, struct diag *d)
{
	static const char *const keys[] = { "torch_dtype", "dtype" };
	int rc = 0;

	for (size_t i = 0; i < 2; i++) {
		const struct cnode *v = cnode_get(node, keys[i]);
		const char *t;

		if (!v || (v->kind == CNODE_SCALAR && cnode_is_null(v)))
			continue;
		t = v->kind == CNODE_SCALAR ? v->text : "";
		if (strncmp(t, "torch.", 6) == 0)
			t += 6;
		if (v->kind == CNODE_SCALAR &&
		    schema_name_index(torch_dtypes, t) >= 0)
			continue;
		cnode_error(d, v, "'%s': expected a torch dtype name such as "
			    "'bfloat16' (float32, float16, float8_e4m3fn, "
			    "...), got %s%s%s", keys[i],
			    v->kind == CNODE_SCALAR ? "'" : "",
			    v->kind == CNODE_SCALAR ? v->text : "a collection",
			    v->kind == CNODE_SCALAR ? "'" : "");
		rc = -1;
	}
	return rc;
}

/* A decimal number (JSON's or YAML's: 1e6, 500000.0), finite, in *v. */
static int decimal(const char *t, double *v)
{
	char *end;

	if (!isdigit((unsigned char)t[*t == '-']) && t[*t == '-'] != '.')
		return 0;
	if (strpbrk(t, "xXpP"))	/* strtod's hex floats */
		return 0;
	*v = strtod(t, &end);
	return end != t && *end == '\0' && isfinite(*v);
}

/* rope_theta in map (named path in the message): absent or null, or an
 * unquoted finite number > 0. */
static int check_theta(const struct cnode *map, const char *path,
		       struct diag *d)
{
	const struct cnode *v = map && map->kind == CNODE_MAP ?
				cnode_get(map, "rope_theta") : NULL;
	char buf[96];
	double b;

	if (!v || (v->kind == CNODE_SCALAR && cnode_is_null(v)))
		return 0;
	if (v->kind == CNODE_SCALAR && !v->quoted &&
	    decimal(v->text, &b) && b > 0)
		return 0;
	cnode_error(d, v, "'%s': expected the rotary base, a number > 0 such "
		    "as 10000 (inv_freq = rope_theta^(-2i/head_dim)), got %s%s",
		    path, shown(v, buf, sizeof(buf)), v->kind == CNODE_SCALAR &&
		    v->quoted ? " (a quoted string; write it without quotes)" :
		    "");
	return -1;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n > k && strcmp(s + n - k, suffix) == 0;
}

/* Whether class name c is a decoder-only LM class (see the top). */
static int causal_lm_class(const char *c)
{
	return ends_with(c, "ForCausalLM") || ends_with(c, "LMHeadModel") ||
	       ends_with(c, "ForConditionalGeneration");
}

static int check_architectures(const struct cnode *node, struct diag *d)
{
	const struct cnode *v = cnode_get(node, "architectures");
	char buf[96];
	size_t i;
	int rc = 0;

	if (!v || (v->kind == CNODE_SCALAR && cnode_is_null(v)))
		return 0;
	if (v->kind != CNODE_SEQ) {
		cnode_error(d, v, "'architectures': expected a list of model "
			    "class names such as [\"LlamaForCausalLM\"], got %s",
			    shown(v, buf, sizeof(buf)));
		return -1;
	}
	for (i = 0; i < v->nitems; i++) {
		const struct cnode *c = v->items[i];

		if (c->kind != CNODE_SCALAR || cnode_is_null(c)) {
			cnode_error(d, c, "'architectures': expected a model "
				    "class name such as \"LlamaForCausalLM\", "
				    "got %s", c->kind == CNODE_SCALAR ? "null" :
				    shown(c, buf, sizeof(buf)));
			rc = -1;
		} else if (!causal_lm_class(c->text)) {
			cnode_error(d, c, "'architectures': '%s' is not a "
				    "decoder-only language model (a class "
				    "ending ForCausalLM, LMHeadModel or "
				    "ForConditionalGeneration); llmsim "
				    "simulates one with its LM head: remove "
				    "'architectures' to simulate this config "
				    "as one anyway", c->text);
			rc = -1;
		}
	}
	return rc;
}

static int check_encoder_decoder(const struct cnode *node, struct diag *d)
{
	const struct cnode *v = cnode_get(node, "is_encoder_decoder");
	int on;

	if (!v || (v->kind == CNODE_SCALAR && cnode_is_null(v)))
		return 0;
	on = v->kind == CNODE_SCALAR && !v->quoted ?
	     (strcmp(v->text, "true") == 0 ? 1 :
	      strcmp(v->text, "false") == 0 ? 0 : -1) : -1;
	if (on < 0) {
		char buf[96];

		cnode_error(d, v, "'is_encoder_decoder': expected true or "
			    "false, got %s", shown(v, buf, sizeof(buf)));
		return -1;
	}
	if (!on)
		return 0;
	cnode_error(d, v, "%s", "'is_encoder_decoder': an encoder-decoder "
		    "model (T5, BART, Whisper) is not simulated; llmsim "
		    "simulates decoder-only language models");
	return -1;
}

/* Older transformers configs name the sizes as their original code did
 * and map llmsim's (Llama-style) names onto them (attribute_map):
 * GPT2Config (@ 1c70522e: hidden_size n_embd, num_hidden_layers n_layer,
 * num_attention_heads n_head, max_position_embeddings n_positions; the
 * MLP n_inner, None: 4 n_embd), BloomConfig (@ 04efa883: n_layer,
 * n_head, n_embed), FalconConfig (@ 05585536: n_layer, n_head; n_embed
 * read for hidden_size), OPTConfig (@ 014674d3: ffn_dim), MptConfig
 * (@ 05699a76 models/mpt: hidden_size d_model, num_attention_heads
 * n_heads, num_hidden_layers n_layers; the MLP expansion_ratio x
 * d_model, positions max_seq_len), GPTBigCodeConfig (@ 05ff2e98
 * models/gpt_bigcode: GPT-2's names; multi_query true: one KV head,
 * num_key_value_heads = 1 if multi_query else n_head). llmsim reads
 * only its names, and such a model's other keys differ too
 * (activation_function, its norm and positions), so the old name where
 * llmsim's is missing is an error that says which key it is, not a
 * silent translation. Falcon's KV heads (FalconConfig: num_kv_heads,
 * used with new_decoder_architecture; multi_query true: one KV head;
 * the original RW checkpoints' n_head_kv, falcon-40b's 8) are llmsim's
 * num_key_value_heads: without it llmsim would read as many KV heads as
 * query heads. */
static const char *const old_names[][3] = {
	{ "n_embd", "hidden_size",
	  "GPT-2's, GPT-J's, CodeGen's and GPTBigCode's name" },
	{ "n_embed", "hidden_size", "BLOOM's and Falcon's name" },
	{ "d_model", "hidden_size", "MPT's name" },
	{ "n_layer", "num_hidden_layers",
	  "GPT-2's, BLOOM's and Falcon's name" },
	{ "n_layers", "num_hidden_layers", "MPT's name" },
	{ "n_head", "num_attention_heads",
	  "GPT-2's, BLOOM's and Falcon's name" },
	{ "n_heads", "num_attention_heads", "MPT's name" },
	{ "n_inner", "intermediate_size",
	  "GPT-2's name (null there: 4 x n_embd)" },
	{ "expansion_ratio", "intermediate_size",
	  "MPT's multiplier (intermediate_size = expansion_ratio x d_model)"
	  " standing" },
	{ "n_positions", "max_position_embeddings", "GPT-2's name" },
	{ "max_seq_len", "max_position_embeddings", "MPT's name" },
	{ "ffn_dim", "intermediate_size", "OPT's name" },
	{ "n_head_kv", "num_key_value_heads",
	  "Falcon's (RW checkpoints') name" },
	{ "num_kv_heads", "num_key_value_heads", "Falcon's name" },
	{ "multi_query", "num_key_value_heads",
	  "Falcon's and GPTBigCode's flag (true: 1 KV head) standing" },
};

int model_check_old_names(const struct cnode *node, struct diag *d)
{
	size_t i;
	int rc = 0;

	if (!node || node->kind != CNODE_MAP)
		return 0;
	for (i = 0; i < sizeof(old_names) / sizeof(old_names[0]); i++) {
		const struct cnode *v = cnode_get(node, old_names[i][0]);

		if (!v || cnode_get(node, old_names[i][1]))
			continue;
		cnode_error(d, v, "'%s' is %s for '%s' (transformers "
			    "attribute_map); llmsim reads '%s': give it, and "
			    "hidden_act, norm, position_embedding and the "
			    "biases as the model has them",
			    old_names[i][0], old_names[i][2], old_names[i][1],
			    old_names[i][1]);
		rc = -1;
	}
	return rc;
}

int model_check_hf_keys(const struct cnode *node, struct diag *d)
{
	int rc = 0;

	if (!node || node->kind != CNODE_MAP)
		return 0;
	if (check_torch_dtype(node, d) != 0)
		rc = -1;
	if (check_theta(node, "rope_theta", d) != 0)
		rc = -1;
	if (check_theta(cnode_get(node, "rope_scaling"),
			"rope_scaling.rope_theta", d) != 0)
		rc = -1;
	if (check_theta(cnode_get(node, "rope_parameters"),	/* v5's name */
			"rope_parameters.rope_theta", d) != 0)
		rc = -1;
	if (check_architectures(node, d) != 0)
		rc = -1;
	if (check_encoder_decoder(node, d) != 0)
		rc = -1;
	return rc;
}

/* Hugging Face model types whose config class ties the LM head to the
 * embedding when config.json leaves tie_word_embeddings out. A class
 * that sets no default of its own takes PretrainedConfig's True
 * (huggingface/transformers @ bdf52342 configuration_utils.py
 * PretrainedConfig.__init__: kwargs.pop("tie_word_embeddings", True)),
 * which save_pretrained then leaves out of config.json (to_diff_dict
 * keeps only what differs from PretrainedConfig()): GPT2Config
 * (@ 1c70522e models/gpt2), BloomConfig (@ 04efa883 models/bloom),
 * OPTConfig (@ 014674d3 models/opt), FalconConfig (@ 05585536
 * models/falcon) set none; GemmaConfig, Gemma2Config and
 * Gemma3TextConfig set True (@ 008e5743 models/gemma, models/gemma2;
 * @ 008f5c8c models/gemma3). Starcoder2Config, CohereConfig and
 * Cohere2Config (@ 008e5743 models/starcoder2, models/cohere,
 * models/cohere2: tie_word_embeddings: bool = True), MptConfig
 * (@ 05699a76 models/mpt: tie_word_embeddings=True) and
 * GPTBigCodeConfig (@ 05ff2e98 models/gpt_bigcode: True) tie too: a
 * Command-R config.json without the key had a second 256000 x 8192
 * head (2.1 B parameters). GPTNeoXConfig sets False (@ 008e5743
 * models/gpt_neox), as do the classes of every other model type
 * llmsim's presets name (Llama, Mixtral, Qwen3, DeepSeek, ...). */
int model_tied_by_default(const char *model_type)
{
	static const char *const tied[] = {
		"gemma", "gemma2", "gemma3_text", "gpt2", "bloom", "opt",
		"falcon", "starcoder2", "cohere", "cohere2", "mpt",
		"gpt_bigcode", NULL,
	};

	return model_type && schema_name_index(tied, model_type) >= 0;
}

/* A config.json boolean at key of node: 1 or 0; dflt when absent or
 * null; -1 after reporting a value that is not true or false. */
static int hf_bool(const struct cnode *node, const char *key, int dflt,
		   struct diag *d)
{
	const struct cnode *v = cnode_get(node, key);
	char buf[96];

	if (!v || (v->kind == CNODE_SCALAR && cnode_is_null(v)))
		return dflt;
	if (v->kind == CNODE_SCALAR && !v->quoted) {
		if (strcmp(v->text, "true") == 0)
			return 1;
		if (strcmp(v->text, "false") == 0)
			return 0;
	}
	cnode_error(d, v, "'%s': expected true or false, got %s%s", key,
		    shown(v, buf, sizeof(buf)), v->kind == CNODE_SCALAR &&
		    v->quoted && (strcmp(v->text, "true") == 0 ||
				  strcmp(v->text, "false") == 0) ?
		    " (a quoted string; write it without quotes)" : "");
	return -1;
}

/* The norms and biases of model types whose config.json does not say
 * them in llmsim's keys (norm, attention_bias, mlp_bias), from the
 * transformers classes (huggingface/transformers @ 008e5743):
 *   starcoder2  Starcoder2DecoderLayer: nn.LayerNorm (norm_type, in some
 *               config.json files, is read by nothing); q, k, v, o_proj,
 *               c_fc and c_proj take bias=config.use_bias, which
 *               Starcoder2Config defaults to True.
 *   gpt_neox    GPTNeoXLayer: nn.LayerNorm (two, both on the layer's
 *               input under use_parallel_residual: the same kernels);
 *               query_key_value and dense bias=config.attention_bias
 *               (GPTNeoXConfig: True); GPTNeoXMLP's nn.Linear layers
 *               keep their default bias.
 *   phi         PhiDecoderLayer: nn.LayerNorm; PhiAttention's q, k, v
 *               and dense and PhiMLP's fc1, fc2 are biased nn.Linear.
 *   stablelm    StableLmDecoderLayer: nn.LayerNorm; q, k, v take
 *               bias=config.use_qkv_bias (default False), o_proj and
 *               the MLP none.
 * A key the file gives itself wins. The rest is not modeled and is said
 * so (a warning with the size): llmsim's attention_bias also biases
 * o_proj (StableLM's use_qkv_bias true: hidden_size parameters and one
 * bias kernel a layer too many), and every layer has two norms, where
 * Phi, Cohere (CohereDecoderLayer: one input_layernorm feeding attention
 * and the MLP) and StableLM with use_parallel_residual have one.
 *   cohere,     CohereLayerNorm: mean-subtracting, weight only (no bias:
 *   cohere2     "variance = (h - mean).pow(2).mean(-1)", "weight * h");
 *               CohereForCausalLM multiplies the logits by logit_scale
 *               (model_hf_defaults: a warning). */
static int type_defaults(struct model_spec *m, const struct cnode *node,
			 struct diag *d)
{
	const char *t = m->model_type;
	const struct cnode *at, *v;
	int ab, mb, shared = 0;

	if (!t || !node || node->kind != CNODE_MAP)
		return 0;
	at = cnode_get(node, "model_type");
	if (strcmp(t, "starcoder2") == 0) {
		ab = mb = hf_bool(node, "use_bias", 1, d);
	} else if (strcmp(t, "gpt_neox") == 0) {
		ab = mb = 1;
	} else if (strcmp(t, "phi") == 0) {
		ab = mb = shared = 1;
	} else if (strcmp(t, "stablelm") == 0) {
		ab = hf_bool(node, "use_qkv_bias", 0, d);
		mb = 0;
		shared = hf_bool(node, "use_parallel_residual", 0, d);
	} else if (strcmp(t, "cohere") == 0 || strcmp(t, "cohere2") == 0) {
		ab = mb = -2;	/* their own attention_bias / mlp_bias */
		shared = 1;
		if (m->norm_bias < 0)
			m->norm_bias = 0;
	} else {
		return 0;
	}
	if (ab == -1 || shared == -1)
		return -1;	/* a bad boolean, reported */
	if (!cnode_get(node, "norm"))
		m->norm = NORM_LAYER;
	if (ab >= 0 && !cnode_get(node, "attention_bias"))
		m->attention_bias = ab;
	if (mb >= 0 && m->mlp_bias < 0)
		m->mlp_bias = mb;
	v = cnode_get(node, "use_qkv_bias");
	if (strcmp(t, "stablelm") == 0 && ab == 1 && v &&
	    !cnode_get(node, "attention_bias"))
		diag_warn(d, v->file, v->line, v->col, "'use_qkv_bias': "
			  "StableLM biases q, k and v but not o_proj; llmsim's "
			  "attention_bias biases o_proj too (%lld parameters "
			  "and one bias kernel a layer too many)",
			  (long long)m->hidden_size);
	if (shared && at)
		diag_warn(d, at->file, at->line, at->col, "'model_type' %s: "
			  "attention and the MLP share one input norm; llmsim "
			  "builds two norms a layer (one norm of %lld elements "
			  "a token, its kernels and parameters, too many a "
			  "layer)", t, (long long)m->hidden_size);
	return 0;
}

/* A layernorm is biased unless said (type_defaults: Cohere's is not);
 * an rmsnorm has a weight only, so a bias there is a contradiction. */
int model_hf_defaults(struct model_spec *m, const struct cnode *node,
		      struct diag *d)
{
	const struct cnode *v = node ? cnode_get(node, "norm_bias") : NULL;
	const struct cnode *l;

	if (type_defaults(m, node, d) != 0)
		return -1;
	/* CohereForCausalLM "logits = logits * self.logit_scale" (MPT's
	 * original code too): one elementwise pass not charged; null or
	 * absent, no pass */
	l = node ? cnode_get(node, "logit_scale") : NULL;
	if (l && l->kind == CNODE_SCALAR && !cnode_is_null(l))
		diag_warn(d, l->file, l->line, l->col, "'logit_scale': the "
			  "logits are multiplied by it, one elementwise pass "
			  "over %lld logits a token that llmsim does not "
			  "charge", (long long)m->vocab_size);
	if (m->norm_bias < 0)
		m->norm_bias = m->norm == NORM_LAYER;
	if (m->norm_bias == 1 && m->norm != NORM_LAYER) {
		if (v)
			cnode_error(d, v, "'norm_bias': true, but norm is "
				    "rmsnorm, which has a weight only (set "
				    "norm: layernorm, or drop norm_bias)");
		else
			diag_error(d, NULL, 0, 0, "'norm_bias': true, but norm "
				   "is rmsnorm, which has a weight only");
		return -1;
	}
	return 0;
}
