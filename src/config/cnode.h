/*
 * cnode.h - a parsed config document: a tree of mappings, sequences and
 * scalars, each knowing the file, line and column it came from.
 *
 * YAML (libyaml) and JSON (cJSON, for Hugging Face config.json files) both
 * load into this tree, so the schema layer (schema.h) validates one shape
 * and every diagnostic can name file:line:col. Nodes live in an arena.
 *
 * Loading never crashes on bad input: syntax errors, invalid UTF-8, empty
 * files, documents nested deeper than CNODE_MAX_DEPTH and alias expansion
 * past CNODE_MAX_NODES are diagnostics. Aliases (*a) share the anchored
 * node; merge keys (<<) are not supported and say so.
 *
 * Depends on mem.h, diag.h, libyaml, cJSON.
 */
#ifndef LLMSIM_CONFIG_CNODE_H
#define LLMSIM_CONFIG_CNODE_H

#include <stddef.h>
#include <stdio.h>

struct arena;
struct diag;

#define CNODE_MAX_DEPTH 64
#define CNODE_MAX_NODES 100000

enum cnode_kind {
	CNODE_SCALAR,
	CNODE_MAP,
	CNODE_SEQ
};

struct cnode;

struct cnode_pair {
	struct cnode *key;		/* always a scalar */
	struct cnode *value;
};

/* How a scalar was made a string (cnode.quoted; nonzero is a string). */
enum cnode_quote {
	CNODE_PLAIN = 0,	/* plain: typed by its key */
	CNODE_QUOTED = 1,	/* in single or double quotes (JSON keys) */
	CNODE_BLOCK = 2,	/* a YAML block scalar, | or > */
	CNODE_STR_TAG = 3,	/* plain but tagged !!str */
	CNODE_JSON_STR = 4,	/* a JSON string value: as quoted, except
				 * that "inf" is infinity where a key takes
				 * it (JSON has no infinite number) */
};

struct cnode {
	enum cnode_kind kind;
	const char *file;		/* path as given, or "--set" */
	int line, col;			/* 1-based; 0 when unknown */
	const char *text;		/* CNODE_SCALAR: the scalar's text */
	int quoted;			/* CNODE_SCALAR: a string by its
					 * writing (enum cnode_quote; 0:
					 * plain) */
	struct cnode_pair *pairs;	/* CNODE_MAP, in document order */
	size_t npairs;
	struct cnode **items;		/* CNODE_SEQ */
	size_t nitems;
};

/* Parse a YAML file (one document). NULL after reporting to d. */
struct cnode *cnode_load_yaml(struct arena *a, const char *path,
			      struct diag *d);

/* Parse YAML text (a --set value, a test); `file` names it in messages. */
struct cnode *cnode_parse_yaml(struct arena *a, const char *text,
			       size_t len, const char *file, struct diag *d);

/* Parse a JSON file (a Hugging Face config.json). */
struct cnode *cnode_load_json(struct arena *a, const char *path,
			      struct diag *d);

/* Report an error at node at (file:line:col), or without a location when
 * at is NULL (a spec built in C). printf-style. */
void cnode_error(struct diag *d, const struct cnode *at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* 1 for an unquoted YAML null scalar: empty, ~, null, Null or NULL. */
int cnode_is_null(const struct cnode *n);

/* The value for key in a mapping, or NULL. */
struct cnode *cnode_get(const struct cnode *map, const char *key);

/* Print a tree as YAML (for debugging and tests). */
void cnode_print(FILE *out, const struct cnode *n, int indent);

#endif
