/*
 * config.h - load a config of any kind: resolve references, apply
 * overrides, validate against the kind's schema into its typed struct.
 *
 * References: a schema field of type ST_REF (a job's model and system, a
 * system's gpu, scale_up and scale_out, ...) may be written as
 *   - a preset name ("h100"): looked up as NAME.yaml (or NAME.json) in the
 *     kind's preset_dirs under the data root;
 *   - a path ("../my/gpu.yaml", "config.json"): relative to the directory
 *     of the file that refers to it; a value with '/' or ending in .yaml,
 *     .yml or .json is a path;
 *   - an inline mapping, which may name `preset: NAME` (or a path) and
 *     override any of its keys.
 * References nest (a preset system names a preset GPU); cycles are
 * reported with the chain that closes them. A file may itself start with
 * `preset: NAME` (or a path) at its top level and override that config's
 * keys. A reference field with a default (schema.h) that a mapping leaves
 * out is resolved as if the default had been written there. A kind with
 * a `name` key that a file leaves out gets the file's name ("h100" for
 * configs/gpus/h100.yaml; a Hugging Face config.json its folder's).
 *
 * Overrides: `--set dotted.key=value` applies after references are
 * resolved, so `--set system.nodes=64` changes a preset system and
 * `--set system.gpu=mi300x` swaps the GPU. The value is YAML
 * (`--set parallelism={tp: 8, pp: 2}` works, merged into parallelism).
 * Diagnostics about a --set name it as the file "--set", line N for the
 * N-th option, column within its argument: `--set:1:8: error: ...`.
 *
 * The data root (where configs/ and workloads/ are) is $LLMSIM_DATA if
 * set, else the nearest directory up to three levels above the running
 * binary's that holds configs/ (build/llmsim and build/asan/llmsim both
 * find the checkout) or share/llmsim/configs (an installed llmsim:
 * PREFIX/bin/llmsim finds PREFIX/share/llmsim), else the current
 * directory.
 *
 * Out of memory anywhere is reported as "out of memory" and counted in
 * diag.oom, so a caller can exit 1 rather than 2.
 *
 * Depends on cnode.h, schema.h, diag.h, mem.h.
 */
#ifndef LLMSIM_CONFIG_CONFIG_H
#define LLMSIM_CONFIG_CONFIG_H

#include <stddef.h>

struct arena;
struct diag;
struct schema;

struct config_ctx {
	struct arena *arena;	/* owns everything loaded */
	struct diag *diag;	/* where errors go */
	const char *data_root;	/* configs/ and workloads/ live here */
};

/* Pick the data root as described above; argv0 is main's argv[0]. The
 * result lives in the arena. */
const char *config_data_root(struct arena *a, const char *argv0);

/*
 * Load `what` (a path, a preset name of kind s, or "-" for standard
 * input, named "<stdin>" in messages) as kind s into *out
 * (storage of s->size bytes, zeroed by the caller), applying sets[0..nsets-1]
 * ("dotted.key=value"). Reports every error before returning -1.
 */
int config_load(struct config_ctx *cx, const struct schema *s,
		const char *what, const char *const *sets, size_t nsets,
		void *out);

/*
 * config_load with settings written in a file rather than given as --set
 * (validate's dispatch cases carry a dispatcher's settings in a column
 * of a table): sets[i] sits at file:line:cols[i], and its diagnostics
 * point there.
 */
int config_load_at(struct config_ctx *cx, const struct schema *s,
		   const char *what, const char *const *sets, size_t nsets,
		   const char *file, int line, const int *cols, void *out);

/*
 * config_load_at of a config named with its settings in one text,
 * "name[,key=value...]" (validate's dispatcher column, `llmsim
 * collective --dispatcher`): the name, then each setting in order, the
 * text's first character at file:line:col0. Empty settings (",,") are
 * skipped. The text is copied; 0, or -1 after reporting.
 */
int config_load_named(struct config_ctx *cx, const struct schema *s,
		      const char *text, const char *file, int line, int col0,
		      void *out);

/*
 * Resolve `ref`, a node that names a config of kind s the way a job's
 * `model:` does (a preset name, a path relative to ref's file, or a
 * mapping that may say `preset:`), into one tree with every reference
 * expanded. The tree lives in cx's arena and is never modified, so one
 * resolved tree can be the base of many config_load_resolved() calls
 * (a sweep resolves its base job once). NULL after reporting.
 */
struct cnode;
struct cnode *config_resolve_node(struct config_ctx *cx,
				  const struct schema *s,
				  const struct cnode *ref);

/*
 * Load kind s into *out (s->size bytes, zeroed by the caller) from a
 * tree that config_resolve_node() returned, with the override trees
 * overs[0..n-1] ({a: {b: value}}, as a --set becomes) deep-merged onto
 * it in order. Diagnostics name the place each value was written.
 * Reports every error and returns -1; 0 on success.
 */
int config_load_resolved(struct config_ctx *cx, const struct schema *s,
			 const struct cnode *base,
			 const struct cnode *const *overs, size_t n,
			 void *out);

/*
 * The file of preset `name` of kind s (NAME.yaml, NAME.yml, NAME.json in
 * each preset dir under the data root), or NULL when there is none.
 * *oom is set when it failed for lack of memory (reported).
 */
const char *config_preset_file(struct config_ctx *cx, const struct schema *s,
			       const char *name, int *oom);

/* Names of the presets of kind s (sorted, NULL-terminated, in the arena). */
const char **config_list_presets(struct config_ctx *cx,
				 const struct schema *s);

/* The registry of config kinds, NULL-terminated (gpu, fabric, system,
 * model, job, and any kind a module adds). Defined in config_kinds.c so
 * adding a kind is a one-line change there. */
extern const struct schema *const config_kinds[];

/* The kind called name, or NULL. */
const struct schema *config_kind(const char *name);

/*
 * The kind of the config `what` names, for commands that take a config of
 * any kind (`llmsim config show`). A path (it has a '/' or ends in .yaml,
 * .yml or .json) is the kind whose preset folder holds the file
 * (configs/gpus -> gpu, workloads/models -> model, ...), else model for
 * .json (a Hugging Face config.json), else job. A preset name is a job
 * preset if there is one, else the one kind that has a preset so named,
 * else job. NULL when the name is a preset of several kinds (*several
 * lists them, comma-separated, in the arena; the caller asks which) or
 * when out of memory (reported; *several NULL).
 */
const struct schema *config_kind_of(struct config_ctx *cx, const char *what,
				    const char **several);

/*
 * A hex SHA-256 of the resolved config's canonical JSON (schema_to_json,
 * printed unformatted), so equal configs hash equal however they were
 * written. Stored with every result. Returns 0 or -1 when out of memory.
 */
int config_hash(const struct schema *s, const void *obj, char hex[65]);

#endif
