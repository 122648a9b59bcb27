/*
 * config_impl.h - what the config loader's files share: the reference
 * resolver (config.c), --set overrides (config_set.c), presets and the
 * data root (config_presets.c). Private to src/config; not a contract
 * (config.h is).
 *
 * Depends on config.h, cnode.h, schema.h.
 */
#ifndef LLMSIM_CONFIG_CONFIG_IMPL_H
#define LLMSIM_CONFIG_CONFIG_IMPL_H

#include "cnode.h"
#include "config.h"
#include "schema.h"

/* References nest at most this deep (job -> system -> gpu is 3). */
#define CONFIG_MAX_REF_DEPTH 16

struct resolver {
	struct config_ctx *cx;		/* arena, diagnostics, data root */
	const char *shown[CONFIG_MAX_REF_DEPTH];	/* files being resolved */
	const char *real[CONFIG_MAX_REF_DEPTH];		/* their realpath()s */
	int depth;			/* files on the chain */
};

/* 1 when a reference's text is a path rather than a preset name: it has a
 * '/' or ends in .yaml, .yml or .json. */
int config_is_path(const char *text);

/* dir/name (name alone when dir is "." or name is absolute), in the
 * arena; NULL when out of memory. */
char *config_join(struct arena *a, const char *dir, const char *name);

/* The directory part of path ("." when none), in the arena. */
char *config_dir_of(struct arena *a, const char *path);


/* Report that preset `name` of kind s does not exist, at `at` (NULL for
 * the command line), with "did you mean" and the presets there are. */
void config_no_preset(struct config_ctx *cx, const struct schema *s,
		      const char *name, const struct cnode *at,
		      const char *path);

/* Load and resolve the file at path as kind s; `at` is the reference
 * that names it (NULL for the top level), path its dotted key. The
 * resolved mapping, or NULL after reporting (d->oom when out of memory). */
struct cnode *config_resolve_file(struct resolver *r, const struct schema *s,
				  const char *file, const struct cnode *at,
				  const char *keypath);

/* Deep-merge the mapping `over` onto the resolved mapping `base` of kind
 * s (see config.c); NULL only when out of memory. preset_used: over's
 * `preset:` key named base and is not merged (anywhere else it is an
 * unknown key like any other). */
struct cnode *config_merge(struct resolver *r, const struct schema *s,
			   const struct cnode *base, const struct cnode *over,
			   const char *keypath, int preset_used);

/* The override tree of the n-th (1-based) `--set dotted.key=value`:
 * {dotted: {key: value}}, nodes placed at "--set:N:COL". NULL after
 * reporting. */
struct cnode *config_set_tree(struct config_ctx *cx, const char *text,
			      int n);

/* The same for a setting written at file:line:col (config_load_at). */
struct cnode *config_set_tree_at(struct config_ctx *cx, const char *text,
				 const char *file, int line, int col);

#endif
