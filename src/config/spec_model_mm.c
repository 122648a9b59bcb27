/*
 * spec_model_mm.c - the text model of a multimodal checkpoint's
 * config.json.
 *
 * A multimodal checkpoint (Llama 4 "llama4", Gemma 3 "gemma3", Qwen2.5-VL
 * "qwen2_5_vl", Qwen3-VL, Mistral 3 "mistral3") nests its language model
 * under text_config and its image/audio encoders under vision_config /
 * audio_config (transformers: the wrapper config's sub_configs, e.g.
 * configuration_llama4.py Llama4Config, huggingface/transformers commit
 * 008e574). llmsim simulates the language model: it reads text_config,
 * takes from the top level only the model keys text_config leaves out
 * (Llama 4 keeps tie_word_embeddings there), and names the encoder
 * sections in one note. A model key given at both levels with different
 * values is a contradiction (an error at the top-level key); the same
 * value twice (Qwen2.5-VL repeats its text keys at the top) is fine. A
 * top-level key that is neither a model key nor known to be irrelevant
 * is the warning any unknown config.json key gets (did you mean).
 * The wrapper's model_type becomes text_model_of, which config show and
 * the resolved config print.
 */
#include "spec_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cnode.h"
#include "cnode_impl.h"
#include "base/diag.h"

/* Sections of a multimodal config that hold no language model. */
static const char *const encoder_sections[] = {
	"vision_config", "audio_config", "vision_tower_config",
	"audio_tower_config", NULL,
};

static int in_names(const char *const *names, const char *key)
{
	size_t i;

	for (i = 0; names[i]; i++)
		if (strcmp(names[i], key) == 0)
			return 1;
	return 0;
}

/* A scalar's number, when the whole text is one. */
static int as_number(const char *t, double *v)
{
	char *end;

	*v = strtod(t, &end);
	return end != t && *end == '\0';
}

/* The same value: equal scalars (1e-05 and 1e-5 are the same number),
 * mappings with the same keys and values, sequences item by item. */
static int same_value(const struct cnode *a, const struct cnode *b)
{
	double x, y;
	size_t i;

	if (a->kind != b->kind)
		return 0;
	if (a->kind == CNODE_SCALAR)
		return strcmp(a->text, b->text) == 0 ||
		       (as_number(a->text, &x) && as_number(b->text, &y) &&
			x == y);
	if (a->kind == CNODE_SEQ) {
		if (a->nitems != b->nitems)
			return 0;
		for (i = 0; i < a->nitems; i++)
			if (!same_value(a->items[i], b->items[i]))
				return 0;
		return 1;
	}
	if (a->npairs != b->npairs)
		return 0;
	for (i = 0; i < a->npairs; i++) {
		const struct cnode *v = cnode_get(b, a->pairs[i].key->text);

		if (!v || !same_value(a->pairs[i].value, v))
			return 0;
	}
	return 1;
}

/* The value of key in text, under any name of its field (an alias). */
static const struct cnode *text_value(const struct cnode *text,
				      const struct schema_field *f)
{
	const struct cnode *v = cnode_get(text, f->key);
	size_t k;

	for (k = 0; !v && f->aliases && f->aliases[k]; k++)
		v = cnode_get(text, f->aliases[k]);
	return v;
}

/* A top-level model key against text_config: 1 to take it (text_config
 * lacks it), 0 to drop it, -1 after reporting a contradiction. */
static int top_key(const struct cnode *text, const struct cnode *k,
		   const struct cnode *v, struct diag *d)
{
	const struct schema_field *f = schema_field(&model_schema, k->text);
	const struct cnode *tv;

	if (!f) {	/* the wrapper's own bookkeeping, or a typo */
		schema_warn_foreign(d, &model_schema, k);
		return 0;
	}
	tv = text_value(text, f);
	if (!tv || cnode_is_null(tv))
		return !cnode_is_null(v);
	if (cnode_is_null(v) || same_value(v, tv))
		return 0;
	cnode_error(d, k, "'%s' here contradicts 'text_config.%s' at line %d; "
		    "a multimodal config's text model is its text_config: give "
		    "the key there, once", k->text, k->text, tv->line);
	return -1;
}

static struct cnode *scalar(struct arena *a, const struct cnode *at,
			    const char *text, int quoted)
{
	struct cnode *n = cnode_new(a, CNODE_SCALAR, at->file, at->line, at->col);

	if (n) {
		n->text = text;
		n->quoted = quoted;
	}
	return n;
}

/* The note naming the encoder sections left out (one line in all);
 * nested: the text model is text_config, else the top level. */
static void note_encoders(const struct cnode *root, const char *wrapper,
			  int nested, struct diag *d)
{
	char list[256];
	size_t i, k = 0;

	list[0] = '\0';
	for (i = 0; i < root->npairs && k < sizeof(list); i++)
		if (in_names(encoder_sections, root->pairs[i].key->text))
			k += (size_t)snprintf(list + k, sizeof(list) - k, "%s%s",
					      k ? ", " : "",
					      root->pairs[i].key->text);
	diag_note(d, root->file, root->line, root->col, "multimodal checkpoint "
		  "(model_type '%s'): its %s is simulated; %s not modeled (a "
		  "language-model simulation)", wrapper, nested ?
		  "text model (text_config)" :
		  "language model (the top-level keys)",
		  k ? list : "no encoder section");
}

/* Append key: value to out; 0, or -1 when out of memory (reported). */
static int add(struct arena *a, struct cnode *out, size_t *cap,
	       struct cnode *key, struct cnode *value, struct diag *d)
{
	if (key && value && cnode_map_add(a, out, cap, key, value) == 0)
		return 0;
	diag_oom(d);
	return -1;
}

/* A multimodal config without text_config (Qwen2-VL and Qwen2.5-VL as
 * first published: the language model's keys at the top level beside
 * vision_config): the top level without its encoder sections, which the
 * note names. root itself when it has none. */
static struct cnode *flat_wrapper(struct arena *a, struct cnode *root,
				  struct diag *d)
{
	const struct cnode *type = cnode_get(root, "model_type");
	struct cnode *out;
	size_t i, cap = 0;
	int enc = 0;

	for (i = 0; i < root->npairs; i++)
		enc |= in_names(encoder_sections, root->pairs[i].key->text);
	if (!enc)
		return root;
	out = cnode_new(a, CNODE_MAP, root->file, root->line, root->col);
	if (!out) {
		diag_oom(d);
		return NULL;
	}
	for (i = 0; i < root->npairs; i++)
		if (!in_names(encoder_sections, root->pairs[i].key->text) &&
		    add(a, out, &cap, root->pairs[i].key,
			root->pairs[i].value, d) != 0)
			return NULL;
	note_encoders(root, type && type->kind == CNODE_SCALAR ?
		      type->text : "unknown", 0, d);
	return out;
}

struct cnode *model_text_config(struct arena *a, struct cnode *root,
				struct diag *d)
{
	const struct cnode *text = cnode_get(root, "text_config");
	const struct cnode *wrapper_type = cnode_get(root, "model_type");
	const char *wrapper;
	struct cnode *out;
	size_t i, cap = 0;
	int rc = 0, bad = 0, take;

	/* both: the root's old names must not hide text_config's */
	bad = model_check_old_names(root, d) != 0;
	if (text && model_check_old_names(text, d) != 0)
		bad = 1;
	if (bad)
		return NULL;
	if (!text || cnode_is_null(text))
		return flat_wrapper(a, root, d);
	if (text->kind != CNODE_MAP) {
		cnode_error(d, text, "%s", "'text_config': expected a mapping "
			    "(the text model of a multimodal checkpoint)");
		return NULL;
	}
	wrapper = wrapper_type && wrapper_type->kind == CNODE_SCALAR ?
		  wrapper_type->text : "unknown";
	out = cnode_new(a, CNODE_MAP, text->file, text->line, text->col);
	if (!out) {
		diag_oom(d);
		return NULL;
	}
	for (i = 0; i < text->npairs && rc == 0; i++)
		if (strcmp(text->pairs[i].key->text, "text_model_of") != 0)
			rc = add(a, out, &cap, text->pairs[i].key,
				 text->pairs[i].value, d);
	/* the wrapper's own checked keys (architectures, rope_theta, ...),
	 * which the loop below drops: text_config's are checked with it */
	if (model_check_hf_keys(root, d) != 0)
		bad = 1;
	for (i = 0; i < root->npairs && rc == 0; i++) {
		struct cnode_pair *p = &root->pairs[i];

		if (strcmp(p->key->text, "model_type") == 0 ||
		    strcmp(p->key->text, "text_config") == 0 ||
		    strcmp(p->key->text, "text_model_of") == 0 ||
		    in_names(encoder_sections, p->key->text))
			continue;
		take = top_key(text, p->key, p->value, d);
		if (take < 0)
			bad = 1;	/* report every contradiction */
		else if (take)
			rc = add(a, out, &cap, p->key, p->value, d);
	}
	if (rc == 0 && !bad)
		rc = add(a, out, &cap, scalar(a, root, "text_model_of", 0),
			 scalar(a, root, wrapper, 1), d);
	if (rc != 0 || bad)
		return NULL;
	note_encoders(root, wrapper, 1, d);
	return out;
}

void model_print_text_of(FILE *out, const struct model_spec *m)
{
	if (m->text_model_of)
		fprintf(out, "  model          the text model (text_config) of a "
			"multimodal checkpoint (model_type %s); its vision and "
			"audio encoders are not simulated\n", m->text_model_of);
}
