/*
 * spec_model_sections.c - the model schema's two sub-sections:
 * rope_scaling (also rope_parameters, transformers v5's name) and
 * quantization_config, with the YaRN attention factor the resolved
 * model keeps (model_rope_mscale). model_fields in spec_model.c names
 * them as the .sub of its rope_scaling and quantization keys.
 */
#include "spec_model.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "cnode.h"
#include "base/diag.h"

/* quantization_config keys that do not change what is modeled. */
static const char *const quant_ignored[] = {
	"fmt", "activation_scheme", "quant_type", "bits", "group_size", "zero_point", "version",
	"desc_act", "sym", "backend",
	/* DeepSeek-V3.1/3.2's UE8M0 (power-of-two) block scales: one
	 * byte per 128 x 128 block instead of four, not modeled */
	"scale_fmt",
	/* read by quant_check (spec_quant.c): module exclusions */
	"exclude_modules", "ignore", "modules_to_not_convert",
	"ignored_layers", NULL,
};

/* rope_scaling keys that do not change the work (frequencies only). */
static const char *const rope_ignored[] = {
	"beta_fast", "beta_slow", "original_max_position_embeddings",
	"truncate", "low_freq_factor", "high_freq_factor", "short_factor",
	"long_factor", "mrope_section", "mrope_interleaved", "finetuned",
	"rope_theta",
	/* Qwen3.5's rope_parameters: changes no time (the top level's
	 * partial_rotary_factor, spec_model.c ignored[]) */
	"partial_rotary_factor", NULL,
};

static const char *const rope_type_aliases[] = {"type", NULL};

#define ROFF(m) offsetof(struct rope_scaling_spec, m)

static const struct schema_field rope_fields[] = {
	{ .key = "rope_type", .type = ST_STRING, .offset = ROFF(rope_type),
	  .aliases = rope_type_aliases, .flags = SF_OPTIONAL,
	  .help = "yarn, llama3, linear, dynamic, ..." },
	{ .key = "factor", .type = ST_NUM, .offset = ROFF(factor), .min = 0,
	  .max = 1e6, .flags = SF_OPTIONAL, .help = "context scaling factor" },
	{ .key = "mscale", .type = ST_NUM, .offset = ROFF(mscale), .min = 0,
	  .max = 1e3, .flags = SF_OPTIONAL, .help = "YaRN mscale (DeepSeek)" },
	{ .key = "mscale_all_dim", .type = ST_NUM, .offset = ROFF(mscale_all_dim),
	  .min = 0, .max = 1e3, .flags = SF_OPTIONAL,
	  .help = "YaRN mscale_all_dim (DeepSeek)" },
	{ .key = "attention_factor", .type = ST_NUM,
	  .offset = ROFF(attention_factor), .min = 0, .max = 1e3,
	  .flags = SF_OPTIONAL, .help = "YaRN attention factor, when given" },
};

const struct schema model_rope_schema = {
	.kind = "model.rope_scaling",
	.help = "rotary position scaling",
	.size = sizeof(struct rope_scaling_spec),
	.fields = rope_fields,
	.nfields = SCHEMA_COUNT(rope_fields),
	.ignored_keys = rope_ignored,
};

#define QOFF(m) offsetof(struct quant_spec, m)

static const struct schema_field quant_fields[] = {
	{ .key = "quant_method", .type = ST_STRING, .offset = QOFF(quant_method),
	  .flags = SF_OPTIONAL,
	  .help = "checkpoint weight format: fp8 (128x128 block scales), mxfp4" },
	{ .key = "weight_block_size", .type = ST_INT_LIST,
	  .offset = QOFF(weight_block_size), .min = 1, .max = 1e6,
	  .flags = SF_OPTIONAL, .help = "rows and columns sharing one scale" },
};

static int quant_check(void *obj, const struct schema_at *at, struct diag *d)
{
	const struct cnode *node = at->map;
	struct quant_spec *q = obj;

	q->method = QUANT_NONE;
	if (quant_read_excludes(q, node, d) < 0)
		return -1;
	/* [rows, cols] of one scale block (DeepSeek-V3: [128, 128]); one
	 * entry or three were taken without a word */
	if (q->weight_block_size.given && q->weight_block_size.n != 2) {
		const struct cnode *k = node ?
			cnode_get(node, "weight_block_size") : NULL;

		if (!k)
			k = node;
		diag_error(d, k ? k->file : NULL, k ? k->line : 0,
			   k ? k->col : 0, "'quantization_config."
			   "weight_block_size' has %zu entries: expected 2, the "
			   "rows and columns one scale covers (e.g. [128, 128])",
			   q->weight_block_size.n);
		return -1;
	}
	if (!q->quant_method)
		return 0;
	if (strcmp(q->quant_method, "fp8") == 0)
		q->method = QUANT_FP8;
	else if (strcmp(q->quant_method, "mxfp4") == 0)
		q->method = QUANT_MXFP4;
	else
		diag_warn(d, node ? node->file : NULL, node ? node->line : 0,
			  node ? node->col : 0, "quantization_config.quant_method "
			  "'%s' is not modeled (fp8, mxfp4 are); weights are "
			  "taken in the job's dtype", q->quant_method);
	return 0;
}

const struct schema model_quant_schema = {
	.kind = "model.quantization_config",
	.help = "a checkpoint's weight quantization",
	.size = sizeof(struct quant_spec),
	.fields = quant_fields,
	.nfields = SCHEMA_COUNT(quant_fields),
	.check = quant_check,
	.ignored_keys = quant_ignored,
};

/* YaRN's attention factor ("mscale", "concentration factor"), which
 * multiplies cos and sin: the given attention_factor; else with mscale
 * and mscale_all_dim both given their ratio m(f, mscale) / m(f,
 * mscale_all_dim) (DeepSeek-V3: 1); else m(f, 1), with m(f, s) = 0.1 s
 * ln f + 1 for f > 1 (transformers modeling_rope_utils
 * _compute_yarn_parameters; Megatron-Core yarn_rotary_pos_embedding.py
 * _yarn_get_concentration_factor, the same). 1 for any other scaling. */
static double yarn_m(double f, double s)
{
	return f <= 1 ? 1 : 0.1 * s * log(f) + 1;
}

double model_rope_mscale(const struct rope_scaling_spec *r)
{
	if (!r->rope_type || strcmp(r->rope_type, "yarn") != 0)
		return 1;
	if (r->attention_factor > 0)
		return r->attention_factor;
	if (r->mscale > 0 && r->mscale_all_dim > 0)
		return yarn_m(r->factor, r->mscale) /
		       yarn_m(r->factor, r->mscale_all_dim);
	return yarn_m(r->factor, 1);
}
