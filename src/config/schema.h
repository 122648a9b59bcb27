/*
 * schema.h - one table per config kind drives validation, defaults,
 * bounds, help text and printing.
 *
 * A config kind (gpu, fabric, system, model, job, ...) is a C struct plus a
 * const table of its fields. The loader (config.h) turns a parsed YAML or
 * JSON mapping into the struct by walking the table: it parses each value
 * by the field's type (units required where the type has a dimension),
 * applies the default when the key is absent, checks bounds and enum
 * values, rejects unknown keys (with "did you mean" when one is close),
 * and reports every problem with file:line:col and the dotted key path
 * before giving up. The same table prints a resolved struct back as YAML
 * with units (`llmsim config show`), as JSON (the results store), and as
 * help text (`llmsim config help KIND`).
 *
 * Storage by type (at `offset` in the struct):
 *   ST_INT        int64_t
 *   ST_NUM        double, a bare number (ratios, efficiencies); with
 *                 SF_INF also 'inf' (printed 'inf', JSON "inf")
 *   ST_BOOL       int: 1/0; -1 when SF_OPTIONAL and absent
 *   ST_STRING     const char * (arena); NULL when optional and absent
 *   ST_ENUM       int, index into `values`; -1 when SF_OPTIONAL and absent
 *   ST_BYTES ... ST_FREQ   double in SI base units (see units.h)
 *   ST_INT_LIST   struct schema_int_list (of enum indices when `values`
 *                 is set: a list of names)
 *   ST_SECTION    a nested struct laid out inline, described by `sub`
 *   ST_REF        const void *, pointing at a resolved struct of kind
 *                 `sub`; in YAML a preset name, a path, or a mapping
 *                 (which may say `preset: NAME` and override its keys)
 *
 * Absent keys: a field with `def` gets the default, parsed exactly as if
 * the user had written it (for ST_REF: a preset name or path that
 * config_load resolves as if written in the mapping). A field with SF_REQUIRED and no default is an
 * error when absent. Otherwise (optional) it stays zero / NULL, or -1 for
 * ST_BOOL and ST_ENUM, and the kind's check() derives it.
 *
 * Bounds: min/max in the field's storage units (SI for quantities); both
 * zero means unbounded; SF_MIN_EXCL makes min exclusive (e.g. > 0);
 * SF_ZERO_OFF also accepts 0 below a positive min (a "0 = none" key
 * whose other values have a plausibility floor).
 *
 * Provenance: any mapping may hold `fitted_on: {KEY: [CASE, ...]}`, which
 * records that its field KEY was fitted to the measurements of those
 * reference cases (`llmsim validate` reports their rows as in-sample).
 * The loader checks that every KEY is a field of that mapping and every
 * case a string; the struct does not keep it (validate reads the files).
 *
 * Depends on libc only (cJSON for schema_to_json).
 */
#ifndef LLMSIM_CONFIG_SCHEMA_H
#define LLMSIM_CONFIG_SCHEMA_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct cnode;
struct diag;
struct arena;
struct cJSON;

enum schema_type {
	ST_INT,
	ST_NUM,
	ST_BOOL,
	ST_STRING,
	ST_ENUM,
	ST_BYTES,
	ST_BANDWIDTH,
	ST_TIME,
	ST_FLOPS,
	ST_FREQ,
	ST_INT_LIST,
	ST_SECTION,
	ST_REF,
	ST_TYPE_COUNT
};

enum schema_flags {
	SF_REQUIRED = 1u << 0,	/* error when absent (and no default) */
	SF_OPTIONAL = 1u << 1,	/* absent: zero / NULL / -1, derived later */
	SF_MIN_EXCL = 1u << 2,	/* value must be > min, not >= */
	SF_INFO = 1u << 3,	/* informational only; not used by models */
	SF_FIT = 1u << 4,	/* a model parameter `llmsim calibrate` may
				 * fit to measurements, within min/max */
	SF_OVERLAY = 1u << 5,	/* ST_STRING: names a file whose `overlay:`
				 * mapping is merged onto the mapping that
				 * holds the field (config.h) */
	SF_INF = 1u << 6,	/* ST_NUM: 'inf' is accepted (+infinity) */
	SF_WHOLE = 1u << 7,	/* ST_NUM: a whole number (a count or a size
				 * kept in a double, e.g. a per-dtype table) */
	SF_BOOLNUM = 1u << 8,	/* ST_NUM: true and false are accepted as 1
				 * and 0 (a Hugging Face key that checkpoints
				 * write either way) */
	SF_ZERO_OFF = 1u << 9,	/* 0 means "none / not stated" and is
				 * accepted; any other value must lie in
				 * min..max (min > 0: a plausibility floor) */
};

struct schema_int_list {
	int64_t *v;		/* values (arena) */
	size_t n;		/* how many */
	int given;		/* 1 when the key was given, [] included */
};

struct schema;

/* Where a kind's check() stands: the mapping the object came from and
 * its dotted key path, for cross-field diagnostics (schema_check_error). */
struct schema_at {
	const struct cnode *map;	/* the mapping; may be NULL */
	const char *path;		/* "system.gpu"; NULL at the top */
};

struct schema_field {
	const char *key;		/* YAML key */
	enum schema_type type;
	size_t offset;			/* offsetof(struct, member) */
	const char *def;		/* default as YAML text, or NULL */
	double min, max;		/* bounds (storage units); 0,0 = none */
	const char *const *values;	/* ST_ENUM: NULL-terminated names */
	const struct schema *sub;	/* ST_SECTION / ST_REF */
	const char *const *aliases;	/* other accepted keys, NULL-terminated */
	unsigned flags;			/* enum schema_flags */
	const char *help;		/* one line for `config help` */
	const char *const *value_aliases;	/* ST_ENUM: other spellings, as
					 * pairs {alias, value}, NULL-ended */
};

struct schema {
	const char *kind;		/* "gpu", "fabric", "system", ... */
	const char *help;		/* what this kind describes */
	const char *const *preset_dirs;	/* where presets live, relative to the
					 * data root ("configs/gpus"); NULL-
					 * terminated; NULL for sections */
	size_t size;			/* sizeof the struct */
	const struct schema_field *fields;
	size_t nfields;
	/* Cross-field checks and derived values after all fields loaded.
	 * at says where the object came from (schema_check_error reports
	 * there). Returns 0, or -1 after reporting errors on d. May be
	 * NULL. */
	int (*check)(void *obj, const struct schema_at *at, struct diag *d);
	/* Keys accepted and ignored, NULL-terminated (e.g. Hugging Face
	 * config.json keys that do not affect performance). May be NULL. */
	const char *const *ignored_keys;
	/* Sections only: a scalar written where the section is expected
	 * stands for {scalar_key: scalar} (`input_len: 1024` for
	 * `input_len: {mean: 1024}`). NULL: a scalar is an error. */
	const char *scalar_key;
};

#define SCHEMA_COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The least efficiency (a fraction of a peak rate: a GPU's GEMM,
 * attention, memory and cast efficiencies and rates, a link's line code
 * and sustained share, a switch's reduction efficiency) a config may
 * give: 1 %. Times scale by 1 / efficiency, and the lowest shipped is
 * 4.6 % (Blackwell chunk_bwd_efficiency, fla's chunk_gdn on GB200; the
 * chunk efficiencies are 4.6-27 %, every other is >= 20.4 %, h200
 * flash_triton_bwd_efficiency); a value below 1 % is a slip (1e-9 made
 * a Llama 3 8B step outrun the engine's 146-year clock, 1e-4 printed a
 * 21-hour step as a result). */
#define SCHEMA_EFF_MIN 0.01

/*
 * Load the mapping `map` into obj (s->size bytes, zeroed by the caller) by
 * walking the table, then run s->check (only when every field loaded).
 * References must already be resolved to mappings (config_load does it);
 * any other value in an ST_REF field is a reference the resolver already
 * reported, and fails the load without another message. Strings, lists
 * and referenced structs are allocated in a. Reports every problem to d
 * (FILE:LINE:COL: error: 'dotted.key': expected ..., got '...') and
 * returns -1; 0 on success. In a mapping that came from a JSON file, a
 * kind with ignored_keys (a foreign format: Hugging Face config.json)
 * treats null as absent, accepts the ignored keys silently and any other
 * unknown key with a warning (with the closest modeled key: a typo such
 * as 'num_hiden_layers' shows).
 */
int schema_load(const struct schema *s, const struct cnode *map,
		struct arena *a, struct diag *d, void *obj);

/*
 * For a check() that found keys[0..n-1] (dotted, relative to at->map) in
 * conflict: the index of the one to blame, the first whose value came
 * from another file than the mapping (a --set, or a file overriding a
 * preset: what the user just changed), else the first present, else 0.
 */
int schema_check_blame(const struct schema_at *at, const char *const *keys,
		       int n);

/* The full dotted path of key under at ("system.gpu.hbm.capacity"). */
const char *schema_check_path(const struct schema_at *at, const char *key,
			      char *buf, size_t len);

/* Report "FILE:LINE:COL: error: 'PATH.key': MESSAGE" at key's value, or
 * at the mapping when the key is absent (key NULL: the mapping itself). */
void schema_check_error(struct diag *d, const struct schema_at *at,
			const char *key, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* The field whose key or one of whose aliases is key, or NULL. */
const struct schema_field *schema_field(const struct schema *s,
					const char *key);

/* A top-level key of a foreign-format mapping that schema_load does not
 * read (a multimodal wrapper's key beside text_config): nothing when it
 * is a field or one of s->ignored_keys, else the warning schema_load
 * gives an unknown config.json key ("key not modeled by llmsim and
 * ignored", with "did you mean" the closest field). */
void schema_warn_foreign(struct diag *d, const struct schema *s,
			 const struct cnode *key);

/* The index of name in names (NULL-terminated), or -1. */
int schema_name_index(const char *const *names, const char *name);

/* Of the n candidates, the one closest to word (edit distance with
 * transpositions, case-insensitive) when close enough to suggest as "did
 * you mean", else NULL. */
const char *schema_closest(const char *word, const char *const *cand,
			   size_t n);

/* Check a table for programmer errors (for tests): every default parses,
 * enums have values, sections and references have a sub-schema, no key
 * or alias appears twice, bounds are ordered. Reports each problem to d
 * and returns -1 if there was any. */
int schema_check_table(const struct schema *s, struct diag *d);

/* Print the resolved struct obj as YAML at the given indent, quantities
 * with units (units_format), references expanded inline. */
void schema_print_yaml(FILE *out, const struct schema *s, const void *obj,
		       int indent);

/* Print s as one YAML scalar that loads back as the string s, also as
 * an item of a flow sequence: plain where it is a safe word (letters,
 * digits, _ . - / +, not true / null / ...), else double-quoted with
 * escapes (quote, backslash, control characters, NEL / LS / PS, BOM). */
void schema_print_string(FILE *out, const char *s);

/* The resolved struct as a cJSON object: quantities as numbers in SI base
 * units (bytes, B/s, s, FLOP/s, Hz), enums as their names, references
 * expanded. NULL when out of memory. Caller frees with cJSON_Delete. */
struct cJSON *schema_to_json(const struct schema *s, const void *obj);

/* schema_to_json with every quantity a string with its unit, as
 * units_format prints it ("1980 MHz"): what `config show --json` prints,
 * so that the file loads back as the same kind (a bare number is refused
 * there as a quantity without its unit). */
struct cJSON *schema_to_json_units(const struct schema *s, const void *obj);

/* Help for a kind: every key with its type, default, bounds and help. */
void schema_print_help(FILE *out, const struct schema *s);

#endif
