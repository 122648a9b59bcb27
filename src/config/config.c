/*
 * config.c - load a config: find its file, resolve its references into
 * one tree, merge --set overrides onto it, and load that tree into the
 * kind's struct through its schema (schema_load).
 *
 * Resolution works on the parsed trees, before any typing, so that
 * overrides can reach into anything a reference brought in. For every
 * ST_REF field (sections are walked for nested ones):
 *
 *   "NAME"            the preset file, loaded and resolved recursively
 *   "path.yaml"       the same, relative to the referring file's directory
 *   {preset: X, ...}  X resolved, then the other keys deep-merged onto it
 *   {...}             an inline config, its own references resolved
 *
 * A file may also start with `preset: X` at its top level and override
 * X's keys, so a config can inherit from another of its kind. A reference
 * field with a default (a preset name) that the mapping leaves out is
 * resolved as if the default had been written there.
 *
 * Deep merge of `over` onto `base`: a key in both whose values are
 * mappings merges recursively (so {gpu: {hbm: {capacity: 96 GB}}} changes
 * one number of a preset's GPU); otherwise over's value replaces base's,
 * and a reference that replaces one is resolved afresh (so `--set
 * system.gpu=mi300x` swaps the GPU). A mapping that names `preset:` is a
 * new base, never merged into the old one. Keys are matched through the
 * schema, so an alias replaces its field's key.
 *
 * Trees are never modified in place (aliases share nodes): a changed
 * mapping is copied. Every node keeps the file:line:col it was written
 * at, so errors found later name the file that holds the bad value.
 *
 * A reference that fails is reported here and replaced by a scalar, which
 * schema_load takes as "already reported" (see schema.h); the rest of the
 * config is still loaded so that every error is reported in one run.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cnode.h"
#include "cnode_impl.h"
#include "config_impl.h"
#include "base/diag.h"
#include "base/arena.h"
#include "base/mem.h"
#include "schema.h"
#include "spec_model.h"

#define KEYPATH_LEN 256

static struct cnode *resolve_map(struct resolver *r, const struct schema *s,
				 struct cnode *map, const char *keypath);
static struct cnode *resolve_ref(struct resolver *r, const struct schema *s,
				 struct cnode *v, const char *keypath);
static struct cnode *apply_overlays(struct resolver *r, const struct schema *s,
				    struct cnode *map, const char *keypath);
static long find_pair(const struct schema *s, const struct cnode *map,
		      const struct schema_field *f, const char *key);

/* Report at `at` (or without a place for the command line). */
static void ref_error(struct resolver *r, const struct cnode *at,
		      const char *keypath, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void ref_error(struct resolver *r, const struct cnode *at,
		      const char *keypath, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (at && keypath)
		diag_error(r->cx->diag, at->file, at->line, at->col, "'%s': %s",
			   keypath, msg);
	else if (at)
		diag_error(r->cx->diag, at->file, at->line, at->col, "%s", msg);
	else
		diag_error(r->cx->diag, NULL, 0, 0, "%s", msg);
}

static void keyjoin(char *buf, const char *prefix, const char *key)
{
	if (prefix)
		snprintf(buf, KEYPATH_LEN, "%s.%s", prefix, key);
	else
		snprintf(buf, KEYPATH_LEN, "%s", key);
}

/* What stands in for a reference that failed (see the file comment). */
static struct cnode *failed_ref(struct resolver *r, const struct cnode *at)
{
	struct cnode *n = arena_alloc(r->cx->arena, sizeof(*n));

	if (!n) {
		diag_oom(r->cx->diag);
		return NULL;
	}
	*n = *at;
	n->kind = CNODE_SCALAR;
	n->text = "";
	n->pairs = NULL;
	n->npairs = 0;
	n->items = NULL;
	n->nitems = 0;
	return n;
}

/* A copy of a mapping with its own pairs array (*cap slots). */
static struct cnode *copy_map(struct resolver *r, const struct cnode *map,
			      size_t *cap)
{
	struct cnode *c = arena_alloc(r->cx->arena, sizeof(*c));
	size_t n = map->npairs ? map->npairs : 1;

	if (c)
		*c = *map;
	if (c && !(c->pairs = arena_alloc(r->cx->arena, n * sizeof(*c->pairs))))
		c = NULL;
	if (!c) {
		diag_oom(r->cx->diag);
		return NULL;
	}
	if (map->npairs)	/* an empty mapping may have no pairs array */
		memcpy(c->pairs, map->pairs, map->npairs * sizeof(*c->pairs));
	*cap = n;
	return c;
}

/* ---- files ---- */

/* The directory component before end (the '/' ending it) in path:
 * its start into *start, its length; 0 when there is none. */
static size_t dir_before(const char *path, const char *end,
			 const char **start)
{
	const char *s = end;

	while (s > path && s[-1] != '/')
		s--;
	*start = s;
	return (size_t)(end - s);
}

/* The Hugging Face hub cache's ".../models--ORG--NAME/snapshots/HASH/
 * config.json" (huggingface_hub's repo_folder_name: "models" and the
 * repo id's parts joined by "--", which a repo id cannot hold): NAME,
 * as a checkout's directory names it. NULL when base (the
 * "config.json" in path) is not there. */
static char *hub_cache_name(struct arena *a, const char *path,
			    const char *base)
{
	const char *hash, *snaps, *repo, *name;
	size_t nh, ns, nr;

	if (base - path < 2 || !(nh = dir_before(path, base - 1, &hash)) ||
	    hash - path < 2 ||
	    (ns = dir_before(path, hash - 1, &snaps)) != 9 ||
	    strncmp(snaps, "snapshots", 9) != 0 || snaps - path < 2 ||
	    (nr = dir_before(path, snaps - 1, &repo)) <= 8 ||
	    strncmp(repo, "models--", 8) != 0)
		return NULL;
	/* the last "--" part: NAME of ORG--NAME (a repo with no ORG, as
	 * "models--gpt2", is NAME itself) */
	for (name = repo + nr - 1; name >= repo + 10; name--)
		if (name[-1] == '-' && name[-2] == '-')
			break;
	if (name < repo + 10)
		name = repo + 8;
	if (name >= repo + nr)
		return NULL;
	return arena_strndup(a, name, (size_t)(repo + nr - name));
}

/* "configs/gpus/h100.yaml" -> "h100"; a Hugging Face checkout's
 * ".../Llama-3-8B/config.json" -> "Llama-3-8B", the hub cache's
 * ".../models--meta-llama--Llama-3-8B/snapshots/HASH/config.json" too
 * (it named the model HASH). */
static char *name_of(struct arena *a, const char *path)
{
	const char *base = strrchr(path, '/'), *dot, *start;
	char *hub;

	base = base ? base + 1 : path;
	if (strcmp(base, "config.json") == 0 && base > path) {
		if ((hub = hub_cache_name(a, path, base)))
			return hub;
		for (start = base - 1; start > path && start[-1] != '/'; start--)
			;
		if (base - 1 > start && start[0] != '.')
			return arena_strndup(a, start, (size_t)(base - 1 - start));
	}
	dot = strrchr(base, '.');
	if (dot && dot > base)
		return arena_strndup(a, base, (size_t)(dot - base));
	return arena_strdup(a, base);
}

/* A kind with a `name` key that the file leaves out gets the file's name
 * ("h100" for configs/gpus/h100.yaml), so a resolved config says which
 * preset it came from. */
static struct cnode *with_name(struct resolver *r, const struct schema *s,
			       struct cnode *root, const char *file)
{
	const struct schema_field *f = schema_field(s, "name");
	struct cnode *key, *val, *out;
	size_t cap;

	if (!f || f->type != ST_STRING || cnode_get(root, "name"))
		return root;
	out = copy_map(r, root, &cap);
	key = arena_alloc(r->cx->arena, sizeof(*key));
	val = arena_alloc(r->cx->arena, sizeof(*val));
	if (out && key && val) {
		*key = (struct cnode){.kind = CNODE_SCALAR, .file = root->file,
				      .line = root->line, .col = root->col,
				      .text = "name"};
		*val = *key;
		val->quoted = 1;
		val->text = name_of(r->cx->arena, file);
		if (val->text &&
		    cnode_map_add(r->cx->arena, out, &cap, key, val) == 0)
			return out;
	}
	if (!r->cx->diag->oom)
		diag_oom(r->cx->diag);
	return NULL;
}

/* Check that the file a reference names can be loaded without closing a
 * cycle; its realpath in real (PATH_MAX). 0 or -1 after reporting. */
static int check_target(struct resolver *r, const char *file,
			const struct cnode *at, const char *keypath,
			char *real)
{
	char chain[2048];
	struct stat st;
	size_t k = 0;
	int i, first = -1;

	if (stat(file, &st) != 0) {
		ref_error(r, at, keypath, "cannot read '%s': %s", file,
			  strerror(errno));
		return -1;
	}
	/* A pipe given as /dev/stdin resolves to /proc/self/fd/0 and then
	 * to "pipe:[N]", which is no path: it names itself (a pipe reads
	 * once, so it cannot close a cycle anyway). */
	if (!realpath(file, real)) {
		if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode) ||
		    strlen(file) >= PATH_MAX) {
			ref_error(r, at, keypath, "cannot read '%s': %s", file,
				  strerror(errno));
			return -1;
		}
		strcpy(real, file);
	}
	if (S_ISDIR(st.st_mode)) {
		ref_error(r, at, keypath, "'%s' is a directory, expected a "
			  "YAML or JSON file", file);
		return -1;
	}
	for (i = 0; i < r->depth && first < 0; i++)
		if (strcmp(r->real[i], real) == 0)
			first = i;
	if (first < 0 && r->depth < CONFIG_MAX_REF_DEPTH)
		return 0;
	if (first < 0) {
		ref_error(r, at, keypath, "references nested deeper than %d "
			  "files", CONFIG_MAX_REF_DEPTH);
		return -1;
	}
	chain[0] = '\0';
	for (i = first; i < r->depth && k < sizeof(chain); i++)
		k += (size_t)snprintf(chain + k, sizeof(chain) - k, "%s -> ",
				      r->shown[i]);
	ref_error(r, at, keypath, "reference cycle: %s%s", chain, file);
	return -1;
}

static struct cnode *load_root(struct resolver *r, const struct schema *s,
			       const char *file)
{
	struct diag *d = r->cx->diag;
	size_t len = strlen(file);
	struct cnode *root;

	if (len > 5 && strcmp(file + len - 5, ".json") == 0)
		root = cnode_load_json(r->cx->arena, file, d);
	else
		root = cnode_load_yaml(r->cx->arena, file, d);
	if (root && root->kind != CNODE_MAP) {
		diag_error(d, root->file, root->line, root->col, "expected a "
			   "mapping (%s), got a %s", s->help,
			   root->kind == CNODE_SEQ ? "sequence" : "scalar");
		return NULL;
	}
	if (root && s == &model_schema)
		root = model_text_config(r->cx->arena, root, d);
	return root ? with_name(r, s, root, file) : NULL;
}

struct cnode *config_resolve_file(struct resolver *r, const struct schema *s,
				  const char *file, const struct cnode *at,
				  const char *keypath)
{
	char real[PATH_MAX];
	struct cnode *root;

	if (check_target(r, file, at, keypath, real) != 0)
		return NULL;
	root = load_root(r, s, file);
	if (!root)
		return NULL;
	r->shown[r->depth] = file;
	r->real[r->depth] = arena_strdup(r->cx->arena, real);
	if (!r->real[r->depth]) {
		diag_oom(r->cx->diag);
		return NULL;
	}
	r->depth++;
	/* A file may start from a preset too (`preset: NAME` at its top
	 * level, its other keys overriding), exactly as an inline mapping. */
	root = resolve_ref(r, s, root, keypath);
	r->depth--;
	return root;
}

/* ---- references ---- */

static int preset_name_ok(const char *t)
{
	const char *p;

	if (!t[0] || t[0] == '.' || t[0] == '-')
		return 0;
	for (p = t; *p; p++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			    "0123456789._+-", *p))
			return 0;
	return 1;
}

/* A scalar reference: a preset name or a path. */
static struct cnode *resolve_name(struct resolver *r, const struct schema *s,
				  const struct cnode *v, const char *keypath)
{
	const char *file;
	char *dir;
	int oom = 0;

	if (config_is_path(v->text)) {
		dir = config_dir_of(r->cx->arena, v->file);
		file = dir ? config_join(r->cx->arena, dir, v->text) : NULL;
		if (!file) {
			diag_oom(r->cx->diag);
			return NULL;
		}
		return config_resolve_file(r, s, file, v, keypath);
	}
	if (!preset_name_ok(v->text)) {
		ref_error(r, v, keypath, "expected a %s preset name or a path, "
			  "got '%s'", s->kind, v->text);
		return NULL;
	}
	file = config_preset_file(r->cx, s, v->text, &oom);
	if (!file) {
		if (!oom)
			config_no_preset(r->cx, s, v->text, v, keypath);
		return NULL;
	}
	return config_resolve_file(r, s, file, v, keypath);
}

static struct cnode *resolve_ref(struct resolver *r, const struct schema *s,
				 struct cnode *v, const char *keypath)
{
	const struct cnode *p;
	struct cnode *base;
	char sub[KEYPATH_LEN];

	if (v->kind == CNODE_SCALAR && !cnode_is_null(v))
		return resolve_name(r, s, v, keypath);
	if (v->kind != CNODE_MAP) {
		ref_error(r, v, keypath, "expected a %s preset name, a path or "
			  "a mapping, got %s", s->kind, v->kind == CNODE_SEQ ?
			  "a sequence" : "null");
		return NULL;
	}
	p = cnode_get(v, "preset");
	if (!p)
		return apply_overlays(r, s, resolve_map(r, s, v, keypath),
				      keypath);
	keyjoin(sub, keypath, "preset");
	if (p->kind != CNODE_SCALAR || cnode_is_null(p)) {
		ref_error(r, p, sub, "expected a %s preset name or a path, got "
			  "%s", s->kind, p->kind == CNODE_SCALAR ? "null" :
			  p->kind == CNODE_MAP ? "a mapping" : "a sequence");
		return NULL;
	}
	base = resolve_name(r, s, p, keypath);
	return base ? config_merge(r, s, base, v, keypath, 1) : NULL;
}

/* A failed reference becomes the stand-in; NULL only when out of
 * memory. */
static struct cnode *ref_or_stand_in(struct resolver *r, struct cnode *got,
				     const struct cnode *v)
{
	if (got || r->cx->diag->oom)
		return got;
	return failed_ref(r, v);
}

/* The index of the pair in map for field f (any of its names), or for
 * the literal key when f is NULL; -1 if none. */
static long find_pair(const struct schema *s, const struct cnode *map,
		      const struct schema_field *f, const char *key)
{
	size_t i;

	for (i = 0; i < map->npairs; i++) {
		const char *k = map->pairs[i].key->text;

		if (f ? schema_field(s, k) == f : strcmp(k, key) == 0)
			return (long)i;
	}
	return -1;
}

/* A scalar node at `at`'s place, for text the user did not write. */
static struct cnode *synthetic(struct resolver *r, const struct cnode *at,
			       const char *text)
{
	struct cnode *n = cnode_new(r->cx->arena, CNODE_SCALAR, at->file,
				    at->line, at->col);

	if (n)
		n->text = text;
	return n;
}

/* Whether a section (or one nested in it) has a reference with a
 * default, which must be resolved even when the section is left out. */
static int has_ref_default(const struct schema *s)
{
	size_t i;

	for (i = 0; s && i < s->nfields; i++) {
		const struct schema_field *f = &s->fields[i];

		if ((f->type == ST_REF && f->def) ||
		    (f->type == ST_SECTION && has_ref_default(f->sub)))
			return 1;
	}
	return 0;
}

/* A reference the mapping leaves out whose field has a default (a preset
 * name) is resolved as if the user had written it in the mapping; a
 * section left out that holds such a reference as if written empty. */
static struct cnode *add_ref_defaults(struct resolver *r,
				      const struct schema *s,
				      struct cnode *map)
{
	struct cnode *out = map, *k, *v;
	size_t i, cap = 0;

	for (i = 0; i < s->nfields; i++) {
		const struct schema_field *f = &s->fields[i];
		int section = f->type == ST_SECTION && has_ref_default(f->sub);

		if ((f->type != ST_REF || !f->def) && !section)
			continue;
		if (find_pair(s, map, f, f->key) >= 0)
			continue;
		if (out == map && !(out = copy_map(r, map, &cap)))
			return NULL;
		k = synthetic(r, map, f->key);
		if (section) {
			v = cnode_new(r->cx->arena, CNODE_MAP, map->file,
				      map->line, map->col);
		} else {
			v = synthetic(r, map, f->def);
		}
		if (!k || !v || cnode_map_add(r->cx->arena, out, &cap, k, v)) {
			diag_oom(r->cx->diag);
			return NULL;
		}
	}
	return out;
}

static struct cnode *resolve_map(struct resolver *r, const struct schema *s,
				 struct cnode *map, const char *keypath)
{
	struct cnode *out, *v, *nv;
	char sub[KEYPATH_LEN];
	size_t i, cap;

	if (map->kind != CNODE_MAP)
		return map;	/* schema_load says what was expected */
	map = add_ref_defaults(r, s, map);
	if (!map)
		return NULL;
	out = map;
	for (i = 0; i < map->npairs; i++) {
		const struct schema_field *f =
			schema_field(s, map->pairs[i].key->text);

		v = map->pairs[i].value;
		keyjoin(sub, keypath, map->pairs[i].key->text);
		if (f && f->type == ST_REF)
			nv = ref_or_stand_in(r, resolve_ref(r, f->sub, v, sub),
					     v);
		else if (f && f->type == ST_SECTION && v->kind == CNODE_MAP)
			nv = resolve_map(r, f->sub, v, sub);
		else
			continue;
		if (!nv)
			return NULL;
		if (nv == v)
			continue;
		if (out == map && !(out = copy_map(r, map, &cap)))
			return NULL;
		out->pairs[i].value = nv;
	}
	return out;
}

/* ---- deep merge ---- */

/* The merged value for one key of `over` (see the file comment). */
static struct cnode *merge_value(struct resolver *r,
				 const struct schema_field *f,
				 const struct cnode *bv, struct cnode *ov,
				 const char *keypath)
{
	int both_maps = bv && bv->kind == CNODE_MAP && ov->kind == CNODE_MAP;

	if (!f)
		return ov;
	if (f->type == ST_REF) {
		if (both_maps && !cnode_get(ov, "preset"))
			return config_merge(r, f->sub, bv, ov, keypath, 0);
		return ref_or_stand_in(r, resolve_ref(r, f->sub, ov, keypath),
				       ov);
	}
	if (f->type == ST_SECTION && both_maps)
		return config_merge(r, f->sub, bv, ov, keypath, 0);
	if (f->type == ST_SECTION && ov->kind == CNODE_MAP)
		return resolve_map(r, f->sub, ov, keypath);
	return ov;
}

struct cnode *config_merge(struct resolver *r, const struct schema *s,
			   const struct cnode *base, const struct cnode *over,
			   const char *keypath, int preset_used)
{
	char sub[KEYPATH_LEN];
	struct cnode *out, *nv;
	size_t i, cap;

	out = copy_map(r, base, &cap);
	if (!out)
		return NULL;
	for (i = 0; i < over->npairs; i++) {
		struct cnode *k = over->pairs[i].key;
		const struct schema_field *f = schema_field(s, k->text);
		long j;

		if (preset_used && !f && strcmp(k->text, "preset") == 0)
			continue;	/* resolve_ref has used it */
		j = find_pair(s, out, f, k->text);
		keyjoin(sub, keypath, k->text);
		/* null over a key of the schema unsets it: the base's value
		 * goes (a sweep point or --set could not take back a key
		 * the base sets, e.g. parallelism.dp when system.nodes is
		 * swept); an unknown key keeps its null to be named */
		if (f && cnode_is_null(over->pairs[i].value)) {
			if (j >= 0) {
				memmove(&out->pairs[j], &out->pairs[j + 1],
					(out->npairs - (size_t)j - 1) *
					sizeof(*out->pairs));
				out->npairs--;
			}
			continue;
		}
		nv = merge_value(r, f, j >= 0 ? out->pairs[j].value : NULL,
				 over->pairs[i].value, sub);
		if (!nv)
			return NULL;
		if (j >= 0) {
			out->pairs[j].key = k;
			out->pairs[j].value = nv;
		} else if (cnode_map_add(r->cx->arena, out, &cap, k, nv) != 0) {
			diag_oom(r->cx->diag);
			return NULL;
		}
	}
	return apply_overlays(r, s, out, keypath);
}

/* ---- overlays ---- */

/* The file of an overlay field's value once applied (compared by
 * address): its text is then the file's path. */
static const char overlay_applied[] = "(overlay applied)";

/* The file an overlay field names: absolute, or relative to the folder
 * of the file that names it, else to the data root. NULL when none is
 * readable. */
static const char *overlay_file(struct resolver *r, const struct cnode *v)
{
	struct arena *a = r->cx->arena;
	const char *c[2] = {NULL, NULL};
	char *dir;
	int i;

	if (v->text[0] == '/')
		return access(v->text, R_OK) == 0 ? v->text : NULL;
	dir = config_dir_of(a, v->file);
	c[0] = dir ? config_join(a, dir, v->text) : NULL;
	c[1] = config_join(a, r->cx->data_root ? r->cx->data_root : ".",
			   v->text);
	for (i = 0; i < 2; i++)
		if (c[i] && access(c[i], R_OK) == 0)
			return c[i];
	return NULL;
}

/* Merge the `overlay:` mapping of the file map's pair j names onto map;
 * the pair's value becomes the file's path. NULL after reporting. */
static struct cnode *overlay_one(struct resolver *r, const struct schema *s,
				 struct cnode *map, size_t j,
				 const char *keypath)
{
	const struct schema_field *f = schema_field(s, map->pairs[j].key->text);
	struct cnode *v = map->pairs[j].value, *doc, *ov, *out, *path, *marked;
	const char *file;
	char sub[KEYPATH_LEN];
	size_t cap = 0;
	long k;

	keyjoin(sub, keypath, map->pairs[j].key->text);
	if (v->kind != CNODE_SCALAR || cnode_is_null(v))
		return map;	/* schema_load says what was expected */
	if (!(file = overlay_file(r, v))) {
		ref_error(r, v, sub, "cannot read '%s' (relative to this file's "
			  "folder or the data root)", v->text);
		return NULL;
	}
	if (!(doc = cnode_load_yaml(r->cx->arena, file, r->cx->diag)))
		return NULL;
	ov = cnode_get(doc, "overlay");
	if (!ov || ov->kind != CNODE_MAP) {
		diag_error(r->cx->diag, doc->file, doc->line, doc->col,
			   "expected an 'overlay:' mapping of %s keys (a file "
			   "`llmsim calibrate` writes)", s->kind);
		return NULL;
	}
	if (cnode_get(ov, f->key)) {
		ref_error(r, cnode_get(ov, f->key), sub, "an overlay cannot "
			  "name another");
		return NULL;
	}
	/* Marked applied before merging: the merge applies overlays too. */
	if (!(path = synthetic(r, v, file)) || !(marked = copy_map(r, map, &cap))) {
		diag_oom(r->cx->diag);
		return NULL;
	}
	path->file = overlay_applied;
	marked->pairs[j].value = path;
	out = config_merge(r, s, marked, ov, keypath, 0);
	if (out && (k = find_pair(s, out, f, f->key)) >= 0)
		out->pairs[k].value = path;
	return out;
}

/* Apply every SF_OVERLAY field of map (a system's `calibration:`). */
static struct cnode *apply_overlays(struct resolver *r, const struct schema *s,
				    struct cnode *map, const char *keypath)
{
	size_t i;
	long j;

	for (i = 0; map && map->kind == CNODE_MAP && i < s->nfields; i++) {
		const struct schema_field *f = &s->fields[i];

		if (!(f->flags & SF_OVERLAY) ||
		    (j = find_pair(s, map, f, f->key)) < 0)
			continue;
		/* Once: later merges (a --set) must not re-apply it over
		 * what they change. */
		if (map->pairs[j].value->file == overlay_applied)
			continue;
		map = overlay_one(r, s, map, (size_t)j, keypath);
	}
	return map;
}

/* ---- the entry point ---- */

/* The file for `what` (a path, or a preset of kind s); NULL after
 * reporting. */
static const char *top_file(struct config_ctx *cx, const struct schema *s,
			    const char *what)
{
	const char *file;
	int oom = 0;

	if (config_is_path(what))
		return what;
	file = config_preset_file(cx, s, what, &oom);
	if (!file && !oom)
		config_no_preset(cx, s, what, NULL, NULL);
	return file;
}

/* The config on standard input ("-"), resolved: YAML (JSON is YAML)
 * named "<stdin>" in messages, paths in it relative to the current
 * directory. NULL after reporting. */
static struct cnode *resolve_stdin(struct resolver *r, const struct schema *s)
{
	struct diag *d = r->cx->diag;
	size_t len = 0;
	char *text = cnode_read_stream(stdin, "<stdin>", &len, d);
	struct cnode *root = NULL;

	if (!text)
		goto out;
	root = cnode_parse_yaml(r->cx->arena, text, len, "<stdin>", d);
	if (root && root->kind != CNODE_MAP) {
		diag_error(d, root->file, root->line, root->col, "expected a "
			   "mapping (%s) on standard input", s->help);
		root = NULL;
	}
	if (root)
		root = resolve_ref(r, s, root, NULL);
out:
	mem_free(text);
	return root;
}

/* A --set that swaps a whole top-level reference for a preset or a file
 * (a job's model=, system=) leaves the file's `name` describing another
 * config (headers read "llama3-8b-dgx-h100: glm-4.5-air on mi300x-roce"):
 * the name says what was set, "llama3-8b-dgx-h100 (--set model=
 * glm-4.5-air)", unless a --set gives the name itself. Returns root, a
 * copy with the new name, or NULL when out of memory. */
static struct cnode *name_the_swap(struct resolver *r, const struct schema *s,
				   struct cnode *root, const char *const *sets,
				   size_t nsets)
{
	struct cnode *name = root && root->kind == CNODE_MAP ?
			     cnode_get(root, "name") : NULL;
	struct cnode *copy, *v;
	const char *text, *sep = " (--set ";
	size_t i, k, cap;

	if (!name || name->kind != CNODE_SCALAR || !name->text)
		return root;
	for (i = 0; i < nsets; i++)
		if (strncmp(sets[i], "name=", 5) == 0)
			return root;
	text = name->text;
	for (i = 0; i < nsets; i++) {
		const char *eq = strchr(sets[i], '=');

		for (k = 0; eq && k < s->nfields; k++) {
			const struct schema_field *f = &s->fields[k];

			if (f->type != ST_REF || strlen(f->key) !=
			    (size_t)(eq - sets[i]) ||
			    strncmp(f->key, sets[i], (size_t)(eq - sets[i])) != 0)
				continue;
			if (eq[1] == '\0' || eq[1] == '{' || eq[1] == '[')
				break;	/* not a preset or a file */
			text = arena_printf(r->cx->arena, "%s%s%s", text, sep,
					    sets[i]);
			if (!text)
				goto oom;
			sep = ", ";
			break;
		}
	}
	if (text == name->text)
		return root;
	if (!(text = arena_printf(r->cx->arena, "%s)", text)) ||
	    !(copy = copy_map(r, root, &cap)) ||
	    !(v = cnode_new(r->cx->arena, CNODE_SCALAR, name->file,
			    name->line, name->col)))
		goto oom;
	v->text = text;
	v->quoted = name->quoted;
	for (i = 0; i < copy->npairs; i++)
		if (copy->pairs[i].value == name)
			copy->pairs[i].value = v;
	return copy;
oom:
	diag_oom(r->cx->diag);
	return NULL;
}

/* config_load and config_load_at: the i-th set at --set:i+1:1, or at
 * at_file:at_line:cols[i] when at_file is given. */
static int load(struct config_ctx *cx, const struct schema *s,
		const char *what, const char *const *sets, size_t nsets,
		const char *at_file, int at_line, const int *cols, void *out)
{
	struct resolver r;
	struct cnode *root, *over;
	unsigned before = cx->diag->errors;
	const char *file = strcmp(what, "-") == 0 ? what : top_file(cx, s, what);
	size_t i;

	if (!file)
		return -1;
	memset(&r, 0, sizeof(r));
	r.cx = cx;
	if (strcmp(what, "-") == 0)
		root = resolve_stdin(&r, s);
	else
		root = config_resolve_file(&r, s, file, NULL, NULL);
	for (i = 0; root && i < nsets && !cx->diag->oom; i++) {
		over = at_file ? config_set_tree_at(cx, sets[i], at_file,
						    at_line, cols[i]) :
				 config_set_tree(cx, sets[i], (int)i + 1);
		if (over)
			root = config_merge(&r, s, root, over, NULL, 0);
	}
	root = name_the_swap(&r, s, root, sets, nsets);
	if (!root || cx->diag->oom)
		return -1;
	if (schema_load(s, root, cx->arena, cx->diag, out) != 0)
		return -1;
	return cx->diag->errors == before ? 0 : -1;
}

int config_load(struct config_ctx *cx, const struct schema *s,
		const char *what, const char *const *sets, size_t nsets,
		void *out)
{
	return load(cx, s, what, sets, nsets, NULL, 0, NULL, out);
}

int config_load_at(struct config_ctx *cx, const struct schema *s,
		   const char *what, const char *const *sets, size_t nsets,
		   const char *file, int line, const int *cols, void *out)
{
	return load(cx, s, what, sets, nsets, file, line, cols, out);
}

int config_load_named(struct config_ctx *cx, const struct schema *s,
		      const char *text, const char *file, int line, int col0,
		      void *out)
{
	char *name = arena_strdup(cx->arena, text), *p;
	const char **sets;
	int *cols;
	size_t cap = 1, n = 0;

	for (p = name; p && *p; p++)
		cap += *p == ',';
	sets = arena_alloc(cx->arena, cap * sizeof(*sets));
	cols = arena_alloc(cx->arena, cap * sizeof(*cols));
	if (!name || !sets || !cols) {
		diag_oom(cx->diag);
		return -1;
	}
	for (p = strchr(name, ','); p; p = strchr(p + 1, ',')) {
		*p = '\0';
		if (p[1] && p[1] != ',') {
			cols[n] = col0 + (int)(p + 1 - name);
			sets[n++] = p + 1;
		}
	}
	return load(cx, s, name, sets, n, file, line, cols, out);
}

struct cnode *config_resolve_node(struct config_ctx *cx,
				  const struct schema *s,
				  const struct cnode *ref)
{
	struct resolver r;
	struct cnode *root;
	unsigned before = cx->diag->errors;

	memset(&r, 0, sizeof(r));
	r.cx = cx;
	root = resolve_ref(&r, s, (struct cnode *)ref, NULL);
	/* A reference inside that failed was reported and left a stand-in
	 * (see the file comment): the tree is no config to build on. */
	if (!root || root->kind != CNODE_MAP || cx->diag->errors != before)
		return NULL;
	return root;
}

int config_load_resolved(struct config_ctx *cx, const struct schema *s,
			 const struct cnode *base,
			 const struct cnode *const *overs, size_t n,
			 void *out)
{
	struct resolver r;
	struct cnode *root = (struct cnode *)base;
	unsigned before = cx->diag->errors;
	size_t i;

	memset(&r, 0, sizeof(r));
	r.cx = cx;
	for (i = 0; root && i < n && !cx->diag->oom; i++)
		root = config_merge(&r, s, root, overs[i], NULL, 0);
	if (!root || cx->diag->oom)
		return -1;
	if (schema_load(s, root, cx->arena, cx->diag, out) != 0)
		return -1;
	return cx->diag->errors == before ? 0 : -1;
}
