/* quantization_config's module exclusions: which module classes a
 * checkpoint keeps in its 16-bit compute dtype.
 *
 * The lists are module paths or patterns, written differently by each
 * producer:
 *   ModelOpt (hf_quant_config.json / config.json)  exclude_modules
 *   compressed-tensors (llm-compressor)             ignore ("re:" regexes)
 *   bitsandbytes, AWQ, gpt-oss mxfp4                modules_to_not_convert
 *   fp8 (vLLM "fp8" method)                         ignored_layers
 * e.g. gpt-oss: ["model.layers.*.self_attn", "model.layers.*.mlp.router",
 * "model.embed_tokens", "lm_head"] (the config.json transformers'
 * models/gpt_oss/convert_gpt_oss_weights_to_hf.py writes) [D].
 *
 * A pattern is cut into path segments; the segment names say the class
 * (q_proj and the like: attention; experts; shared_expert; router or an
 * MoE block's "gate"; lm_head; embed_tokens; vision tower). A pattern
 * that ends at a whole MLP block ("model.layers.*.mlp") names the block
 * and all it holds (dense MLP, experts, shared expert, router).
 *
 * A plain layer index after a layers segment ("model.layers.3.self_attn",
 * "re:.*layers\.47\..*") names that decoder layer only
 * (quant_spec.layer_excluded; "model.layers.3.*", naming no class, the
 * whole layer: attention and MLP); a pattern without one names its
 * classes in every layer. A layer selection by regex or glob
 * ("layers\.(0|47)\.", "layers.1*") is not resolved: it warns and is
 * taken as every layer. Indices inside a layer (one expert of many) are
 * not resolved either: "experts.12" names the layer's experts. */
#include "spec_model.h"
#include <ctype.h>
#include <string.h>
#include "cnode.h"
#include "schema.h"
#include "base/diag.h"

#define SEG_MAX 64		/* characters of a segment kept, with its NUL */

struct seg_class {
	const char *name;
	unsigned cls;
};

/* Segment names with a class of their own. QX_MLP here marks a dense
 * MLP's projections; a block name (BLOCK, ATTN_BLOCK) is resolved
 * below: an attention block alone names its input and output
 * projections (QX_ATTN_ALL), with a projection after it that projection
 * ("self_attn.o_proj": QX_ATTN_OUT only). */
#define BLOCK 0x10000u
#define ATTN_BLOCK 0x20000u

static const struct seg_class segs[] = {
	{ "lm_head", QX_LM_HEAD }, { "output_layer", QX_LM_HEAD },
	{ "embed_tokens", QX_EMBED }, { "embed", QX_EMBED },
	{ "embeddings", QX_EMBED }, { "wte", QX_EMBED },
	{ "tok_embeddings", QX_EMBED }, { "word_embeddings", QX_EMBED },
	{ "vision_model", QX_VISION }, { "vision_tower", QX_VISION },
	{ "visual", QX_VISION }, { "vision", QX_VISION },
	{ "multi_modal_projector", QX_VISION }, { "mm_projector", QX_VISION },
	{ "router", QX_ROUTER }, { "shared_expert_gate", QX_ROUTER },
	{ "shared_expert", QX_SHARED }, { "shared_experts", QX_SHARED },
	{ "shared_mlp", QX_SHARED },
	{ "experts", QX_EXPERTS },
	{ "self_attn", ATTN_BLOCK }, { "attn", ATTN_BLOCK },
	{ "attention", ATTN_BLOCK }, { "self_attention", ATTN_BLOCK },
	{ "q_proj", QX_ATTN }, { "k_proj", QX_ATTN }, { "v_proj", QX_ATTN },
	{ "o_proj", QX_ATTN_OUT }, { "qkv_proj", QX_ATTN }, { "qkv", QX_ATTN },
	{ "query_key_value", QX_ATTN }, { "linear_qkv", QX_ATTN },
	{ "linear_proj", QX_ATTN_OUT }, { "q_a_proj", QX_ATTN },
	{ "q_b_proj", QX_ATTN }, { "kv_a_proj_with_mqa", QX_ATTN },
	{ "kv_b_proj", QX_ATTN }, { "wq", QX_ATTN }, { "wk", QX_ATTN },
	{ "wv", QX_ATTN }, { "wo", QX_ATTN_OUT },
	{ "gate_proj", QX_MLP }, { "up_proj", QX_MLP },
	{ "down_proj", QX_MLP }, { "gate_up_proj", QX_MLP },
	{ "linear_fc1", QX_MLP }, { "linear_fc2", QX_MLP },
	{ "w1", QX_MLP }, { "w2", QX_MLP }, { "w3", QX_MLP },
	{ "mlp", BLOCK }, { "feed_forward", BLOCK }, { "ffn", BLOCK },
	{ "block_sparse_moe", BLOCK }, { "moe", BLOCK },
};

/* Segments that carry no class: path scaffolding. */
static const char *const scaffold[] = {
	"model", "models", "layers", "layer", "language_model", "decoder",
	"transformer", "h", "blocks", "weight", "bias", "module", "re",
	"text_model", "backbone", NULL,
};

#define ALL_FFN (QX_MLP | QX_EXPERTS | QX_SHARED | QX_ROUTER)

static int is_number(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return 0;
	return 1;
}

/* The next segment of *p, lower-cased into out (its first SEG_MAX - 1
 * characters): a run of letters, digits and underscores, cut at anything
 * else ('.', '*', regex syntax, ':'). Advances *p past it; 0 when no
 * segment is left. A pattern has any number of segments. */
static int next_seg(const char **p, char out[SEG_MAX])
{
	const char *s = *p;
	size_t k = 0;

	while (*s && !(isalnum((unsigned char)*s) || *s == '_'))
		s++;
	if (!*s) {
		*p = s;
		return 0;
	}
	for (; *s && (isalnum((unsigned char)*s) || *s == '_'); s++)
		if (k + 1 < SEG_MAX)
			out[k++] = (char)tolower((unsigned char)*s);
	out[k] = 0;
	*p = s;
	return 1;
}

static unsigned seg_class(const char *s)
{
	size_t i;

	for (i = 0; i < sizeof(segs) / sizeof(segs[0]); i++)
		if (strcmp(segs[i].name, s) == 0)
			return segs[i].cls;
	return 0;
}

unsigned quant_exclude_class(const char *pattern)
{
	char seg[SEG_MAX];
	const char *p = pattern ? pattern : "";
	unsigned cls = 0, c, prev = 0;
	int block_last = 0, attn_block = 0;

	for (; next_seg(&p, seg); prev = seg_class(seg)) {
		c = seg_class(seg);
		/* an MoE block's "gate" is its router (Qwen3-MoE, DeepSeek
		 * mlp.gate; Mixtral block_sparse_moe.gate) */
		if (!c && strcmp(seg, "gate") == 0 && prev == BLOCK)
			c = QX_ROUTER;
		/* a bare "gate" is the MoE block's router too, and
		 * e_score_correction_bias the router's score bias
		 * (MiniMaxAI/MiniMax-M2 config.json modules_to_not_convert
		 * ["gate", "e_score_correction_bias", "lm_head"]: its
		 * block_sparse_moe.gate stays unquantized while the experts
		 * are fp8) */
		if (!c && strcmp(pattern, "gate") == 0)
			c = QX_ROUTER;
		if (!c && strcmp(seg, "e_score_correction_bias") == 0)
			c = QX_ROUTER;
		if (c == BLOCK) {
			block_last = 1;
			continue;
		}
		if (c == ATTN_BLOCK) {
			attn_block = 1;
			continue;
		}
		if (c)
			block_last = 0;
		cls |= c;
	}
	if (!cls && block_last)
		return ALL_FFN;
	if (attn_block && !(cls & QX_ATTN_ALL))
		cls |= QX_ATTN_ALL;
	/* the most specific class named wins: experts.gate_proj names
	 * experts, not the dense MLP; the shared expert's gate_proj
	 * names the shared expert */
	if (cls & QX_ROUTER)
		return cls & ~(unsigned)(QX_MLP | QX_EXPERTS | QX_SHARED);
	if (cls & (QX_EXPERTS | QX_SHARED))
		return cls & ~(unsigned)QX_MLP;
	return cls;
}

/* Path segments after which a number is a decoder layer's index
 * (HF "model.layers.N", Megatron "decoder.layers.N", GPT-2 "h.N",
 * "blocks.N"). */
static const char *const layer_words[] = {
	"layers", "layer", "h", "blocks", NULL,
};

static int layer_word(const char *w, size_t n)
{
	size_t i;

	for (i = 0; layer_words[i]; i++)
		if (strlen(layer_words[i]) == n &&
		    strncmp(layer_words[i], w, n) == 0)
			return 1;
	return 0;
}

static int word_char(int c)
{
	return isalnum(c) || c == '_';
}

int64_t quant_exclude_layer(const char *pattern)
{
	const char *s = pattern ? pattern : "", *w, *q;
	/* compressed-tensors' "re:" targets are Python re.match patterns:
	 * anchored at the start only, and an unescaped '.' is any character */
	int re = strncmp(s, "re:", 3) == 0;
	int64_t v;

	while (*s) {
		if (!word_char((unsigned char)*s)) {
			s++;
			continue;
		}
		for (w = s; word_char((unsigned char)*s); s++)
			;
		if (!layer_word(w, (size_t)(s - w)))
			continue;
		/* the separator: '.', or a regex's escaped "\." */
		for (q = s; *q == '.' || *q == '\\'; q++)
			;
		if (q == s)
			continue;
		if (isdigit((unsigned char)*q)) {
			for (v = 0; isdigit((unsigned char)*q); q++)
				v = v < QUANT_LAYERS_MAX * 10LL ?
				    10 * v + (*q - '0') : v;
			/* a regex's "1" at its end or "1.*" also matches
			 * layers 10-19: a selection, not an index */
			if (re && (!*q || (*q == '.' && (!q[1] ||
				   strchr("*+?{", q[1])))))
				return -2;
			if (!*q || *q == '.' || *q == '$' ||
			    (q[0] == '\\' && q[1] == '.'))
				return v;
			return -2;	/* "1*", "1[0-9]", "1?" */
		}
		if (*q && strchr("([{?+|", *q))
			return -2;	/* "(0|47)", "[0-3]" */
	}
	return -1;
}

unsigned quant_layer_excluded(const struct quant_spec *q, int64_t layer)
{
	unsigned c = q->excluded;

	if (layer >= 0 && layer < QUANT_LAYERS_MAX)
		c |= q->layer_excluded[layer];
	return c;
}

/* A pattern with no class: it names something llmsim does not know (a
 * typo, or a module of an architecture not modelled). */
static int generic_only(const char *pattern)
{
	char seg[SEG_MAX];

	while (next_seg(&pattern, seg))
		if (!is_number(seg) && schema_name_index(scaffold, seg) < 0)
			return 0;
	return 1;
}

static const char *const exclude_keys[] = {
	"exclude_modules", "ignore", "modules_to_not_convert",
	"ignored_layers", NULL,
};

int quant_read_excludes(struct quant_spec *q, const struct cnode *map,
			struct diag *d)
{
	const char *names[sizeof(segs) / sizeof(segs[0])];
	size_t k, i, nn = 0;
	int64_t layer;

	q->excluded = 0;
	memset(q->layer_excluded, 0, sizeof(q->layer_excluded));
	for (i = 0; i < sizeof(segs) / sizeof(segs[0]); i++)
		names[nn++] = segs[i].name;
	for (k = 0; map && exclude_keys[k]; k++) {
		const struct cnode *list = cnode_get(map, exclude_keys[k]);

		if (!list || cnode_is_null(list))
			continue;
		if (list->kind != CNODE_SEQ) {
			cnode_error(d, list, "quantization_config.%s: expected "
				    "a list of module names or patterns",
				    exclude_keys[k]);
			return -1;
		}
		for (i = 0; i < list->nitems; i++) {
			const struct cnode *it = list->items[i];
			unsigned c;

			if (it->kind != CNODE_SCALAR || cnode_is_null(it)) {
				cnode_error(d, it, "quantization_config.%s: "
					    "expected a module name or pattern",
					    exclude_keys[k]);
				return -1;
			}
			c = quant_exclude_class(it->text);
			layer = quant_exclude_layer(it->text);
			if (layer >= QUANT_LAYERS_MAX) {
				diag_warn(d, it->file, it->line, it->col,
					  "quantization_config.%s: '%s' names "
					  "layer %lld, past the %d layers "
					  "llmsim reads; ignored",
					  exclude_keys[k], it->text,
					  (long long)layer, QUANT_LAYERS_MAX);
				continue;
			}
			if (layer >= 0 && (c || generic_only(it->text))) {
				/* no class named: the whole layer */
				q->layer_excluded[layer] |= (uint16_t)
					(c ? c : QX_ATTN_ALL | ALL_FFN);
				continue;
			}
			if (layer == -2 && c)
				diag_warn(d, it->file, it->line, it->col,
					  "quantization_config.%s: '%s' selects "
					  "layers by a regex or glob llmsim "
					  "does not resolve; taken as every "
					  "layer", exclude_keys[k], it->text);
			if (c) {
				q->excluded |= c;
				continue;
			}
			if (layer == -2 && generic_only(it->text)) {
				/* whole layers by a selection: silently
				 * dropped before */
				diag_warn(d, it->file, it->line, it->col,
					  "quantization_config.%s: '%s' selects "
					  "whole layers by a regex or glob "
					  "llmsim does not resolve; taken as "
					  "quantized", exclude_keys[k],
					  it->text);
				continue;
			}
			if (generic_only(it->text))
				continue;
			{
				char seg[SEG_MAX], last[SEG_MAX] = "";
				const char *p = it->text, *near;

				while (next_seg(&p, seg))
					memcpy(last, seg, sizeof(last));
				near = *last ? schema_closest(last, names, nn) :
					       NULL;

				diag_warn(d, it->file, it->line, it->col,
					  "quantization_config.%s: '%s' names "
					  "no module class llmsim models "
					  "(attention, mlp, experts, "
					  "shared_expert, router, lm_head, "
					  "embed_tokens, vision) and is taken "
					  "as quantized%s%s%s", exclude_keys[k],
					  it->text, near ? "; did you mean '" :
					  "", near ? near : "", near ? "'?" : "");
			}
		}
	}
	return 0;
}
