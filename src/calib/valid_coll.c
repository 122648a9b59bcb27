/*
 * valid_coll.c - the fabric model against measured collective tables
 * (results/reference/collectives/NAME.yaml): for every row the measured and
 * the predicted bus bandwidth on the idle system; error = predicted /
 * measured - 1.
 *
 * A table names the llmsim system it was measured on (and its node
 * count, `nodes`, when the preset's differs), the op, the ranks,
 * optionally the algorithm the measurement forced (NCCL_ALGO; absent:
 * the library's choice), and rows of [size_B, time_us, busbw_GBps] as
 * rccl-tests / nccl-tests printed them. Rows outside 1 KiB - 8 GiB, and
 * rows whose busbw printed as 0.00 (no defined error), are shown and not
 * scored. `gated: false` marks a table shown and not gated (a measurement
 * outside the reference set: valid_report.c skips its gates).
 * `engine_kernel_max_B: N` marks a table measured through an engine's
 * own op that runs its own kernels, not the library's, up to N bytes
 * (TensorRT-LLM's AllReduce AUTO: its one-/two-shot kernels by its
 * strategy table, NCCL above): rows of size <= N are shown with the
 * library's prediction and not scored, since the library does not run
 * them. Any other key is an error at it. `type` and `placement`, what
 * nccl-tests printed, are not read (a row's size is bytes, and the
 * library model prices bytes: one prediction serves any type and either
 * placement); each must be one of the benchmark's own names.
 * `collectives: PRESET` names the library release the table ran, as a
 * collectives preset (configs/collectives/PRESET.yaml, e.g. nccl-2.26 for
 * NCCL 2.26.2) that starts from the system's library (`preset: nccl`),
 * or from a release that does (nccl-2.26-blackwell: `preset: nccl-2.26`;
 * up to 4 releases in the chain, a cycle named): the keys those files write are set over the system's
 * collectives, the parent's first, every other key as the system has it. Absent: the system's library as it
 * stands (the current release). `disabled_algorithms: [A, ...]` names
 * algorithms the run switched off (NCCL_NVLS_ENABLE=0: [nvls, nvls_tree];
 * NCCL_ALGO=^A): the library picks among the others.
 * `engine_collectives: PRESET` marks a table measured through an engine's
 * own all-reduce kernels at every row (vLLM's custom all-reduce, the
 * "vllm cr" tables of its ROCm quick-reduce PRs): every row is predicted
 * by that collectives preset in place of the system's library, as a
 * serving engine runs it (engine custom_allreduce_collectives), and
 * scored. It names a whole model (configs/collectives/vllm-custom-
 * allreduce.yaml), not a release over the library, so it excludes
 * `collectives`; the table's op must be allreduce and the preset
 * neither a release nor a library (one direct kernel).
 *
 * (Was tests/tools/collectives.c, run by scripts/validate-collectives.sh.)
 */
#include "valid.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/diag.h"
#include "base/mem.h"
#include "config/cnode.h"
#include "config/config.h"
#include "config/spec_collectives.h"
#include "config/spec_system.h"
#include "network/net.h"

#define MAX_ROWS 256

struct ref {
	const char *id, *system;
	const char *nodes;		/* system.nodes override, or NULL */
	const char *lib;		/* collectives preset (release), or NULL */
	const struct cnode *lib_at;	/* its key's value, for a note */
	const char *eng;		/* engine_collectives preset, or NULL */
	const struct cnode *eng_at;	/* its key's value */
	int off[ALGO_COUNT];		/* 1: disabled_algorithms names it */
	const struct cnode *off_at;	/* that key's value, for a note */
	int op;				/* enum coll_op */
	int gated;			/* 0: `gated: false`, shown only */
	int algo;			/* enum coll_algo forced, or -1 */
	uint32_t ranks;
	double engine_max_B;		/* rows <= it: the engine's kernels; 0 none */
	double size_B[MAX_ROWS];	/* B */
	double time_us[MAX_ROWS];	/* us, 0 = not published */
	double busbw_GBps[MAX_ROWS];	/* GB/s */
	int n;
};

/* The rows: each [size_B, time_us, busbw_GBps], sizes whole, every
 * number finite and >= 0 (0: not published / printed 0.00); 0, or -1
 * after reporting at the value (a mapping in a row crashed atof, and
 * rows past MAX_ROWS were dropped unseen). */
static int read_rows(const struct cnode *rows, struct ref *r,
		     struct diag *d)
{
	static const char *const what[3] = {"size_B", "time_us",
					    "busbw_GBps"};
	double *out[3];
	size_t i;
	int j;

	for (i = 0; i < rows->nitems; i++) {
		const struct cnode *row = rows->items[i];

		if (row->kind != CNODE_SEQ || row->nitems != 3) {
			cnode_error(d, row, "%s", "expected a row "
				    "[size_B, time_us, busbw_GBps]");
			return -1;
		}
		if (r->n == MAX_ROWS) {
			cnode_error(d, row, "more than %d rows", MAX_ROWS);
			return -1;
		}
		out[0] = &r->size_B[r->n];
		out[1] = &r->time_us[r->n];
		out[2] = &r->busbw_GBps[r->n];
		for (j = 0; j < 3; j++) {
			const struct cnode *x = row->items[j];

			if (x->kind != CNODE_SCALAR) {
				cnode_error(d, x, "'%s': expected a number, "
					    "got a %s", what[j],
					    x->kind == CNODE_MAP ? "mapping" :
					    "list");
				return -1;
			}
			if (!valid_parse_number(x->text, 0, j == 0, out[j])) {
				cnode_error(d, x, "'%s': expected a %s >= 0, "
					    "got '%s'", what[j], j == 0 ?
					    "whole number" : "finite number",
					    x->text);
				return -1;
			}
		}
		r->n++;
	}
	return 0;
}

/* A collectives preset name at key (letters, digits, '.', '_', '-';
 * 1 - 100, not starting with '.'), or NULL (absent): 1, or 0 after
 * reporting at the value. */
static int preset_name_ok(const char *name, const struct cnode *at,
			  const char *key, struct diag *d)
{
	if (!name || (*name && strlen(name) <= 100 &&
		      strspn(name, "abcdefghijklmnopqrstuvwxyz"
			     "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") ==
		      strlen(name) && name[0] != '.'))
		return 1;
	cnode_error(d, at, "'%s': expected a collectives preset name "
		    "(letters, digits, '.', '_', '-'; 1 - 100), got '%s'",
		    key, name);
	return 0;
}

/* The table's keys: any other is an error at it (a typo such as
 * 'engine_kernel_max_b' scored the engine's rows without a word). type and
 * placement say what nccl-tests printed (-d, in-place or not) and are not
 * read; their values are checked (table_names). */
static const char *const table_keys[] = {
	"id", "system", "nodes", "op", "ranks", "algorithm", "gated",
	"engine_kernel_max_B", "type", "placement", "rows", "collectives",
	"disabled_algorithms", "engine_collectives", NULL,
};

/* A key of the table that must be a scalar: its text, NULL when absent;
 * *bad set after an error at a mapping or list (nodes: [2] ran on the
 * preset's node count). */
static const char *table_scalar(const struct cnode *doc, const char *key,
				int *bad, struct diag *d)
{
	const struct cnode *v = cnode_get(doc, key);

	if (!v || v->kind == CNODE_SCALAR)
		return v ? v->text : NULL;
	cnode_error(d, v, "'%s': expected a scalar, got a %s", key,
		    v->kind == CNODE_MAP ? "mapping" : "list");
	*bad = 1;
	return NULL;
}

/* nccl-tests' data type names (NVIDIA/nccl-tests src/common.cu
 * test_typenames: int8 ... double, bfloat16 from NCCL 2.10) and rccl-
 * tests' fp8 ones, as `llmsim collective --dtype` takes them; its two
 * result column groups. */
static const char *const type_names[] = {
	"int8", "uint8", "int32", "uint32", "int64", "uint64", "half",
	"float", "double", "bfloat16", "fp8_e4m3", "fp8_e5m2", NULL,
};
static const char *const placement_names[] = {
	"out-of-place", "in-place", NULL,
};

/* A shown-only key's value is one of names (a typo such as 'bf16' or
 * 'inplace' would say nothing otherwise): 0, or -1 after an error at it. */
static int table_names(const struct cnode *doc, const char *key,
		       const char *text, const char *const *names,
		       struct diag *d)
{
	char list[256];
	size_t i, k = 0;

	if (!text || schema_name_index(names, text) >= 0)
		return 0;
	list[0] = '\0';
	for (i = 0; names[i] && k < sizeof(list); i++)
		k += (size_t)snprintf(list + k, sizeof(list) - k, "%s%s",
				      i ? ", " : "", names[i]);
	cnode_error(d, cnode_get(doc, key), "'%s': expected one of %s (what "
		    "the benchmark printed; not read), got '%s'", key, list,
		    text);
	return -1;
}

/* disabled_algorithms: a list of the library's algorithm names, each
 * once, not the one `algorithm` forces; 0, or -1 after an error at it. */
static int read_off(const struct cnode *v, struct ref *r, struct diag *d)
{
	size_t i;

	memset(r->off, 0, sizeof(r->off));
	if (!v)
		return 0;
	if (v->kind != CNODE_SEQ) {
		cnode_error(d, v, "'disabled_algorithms': expected a list of "
			    "algorithm names ([nvls, nvls_tree])");
		return -1;
	}
	for (i = 0; i < v->nitems; i++) {
		const struct cnode *x = v->items[i];
		int k = x->kind == CNODE_SCALAR ?
			schema_name_index(coll_algo_names, x->text) : -1;

		if (k < 0 || r->off[k] || k == r->algo) {
			cnode_error(d, x, "'disabled_algorithms': expected "
				    "the names of algorithms, each once and "
				    "not the forced 'algorithm' (ring, tree, "
				    "direct, rhd, hierarchical, nvls, "
				    "nvls_tree, pairwise, p2p), got %s%s%s",
				    x->kind == CNODE_SCALAR ? "'" : "a ",
				    x->kind == CNODE_SCALAR ? x->text :
				    x->kind == CNODE_MAP ? "mapping" : "list",
				    x->kind == CNODE_SCALAR ? "'" : "");
			return -1;
		}
		r->off[k] = 1;
	}
	return 0;
}

static int read_ref(struct arena *a, const char *path, struct ref *r,
		    struct diag *d)
{
	const struct cnode *doc = cnode_load_yaml(a, path, d), *rows;
	const char *op, *ranks, *algo, *engine;
	double x = 0;
	int bad = 0;

	if (!doc)
		return -1;
	if (doc->kind != CNODE_MAP) {
		cnode_error(d, doc, "expected a mapping (a collective table)");
		return -1;
	}
	if (valid_check_keys(doc, table_keys, "collective table", d) != 0)
		return -1;
	r->id = table_scalar(doc, "id", &bad, d);
	r->system = table_scalar(doc, "system", &bad, d);
	r->nodes = table_scalar(doc, "nodes", &bad, d);
	r->lib = table_scalar(doc, "collectives", &bad, d);
	r->lib_at = cnode_get(doc, "collectives");
	r->eng = table_scalar(doc, "engine_collectives", &bad, d);
	r->eng_at = cnode_get(doc, "engine_collectives");
	if (!preset_name_ok(r->lib, r->lib_at, "collectives", d))
		bad = 1;
	if (!preset_name_ok(r->eng, r->eng_at, "engine_collectives", d))
		bad = 1;
	if (r->lib && r->eng) {
		cnode_error(d, r->eng_at, "'engine_collectives' and "
			    "'collectives' both name the table's model: an "
			    "engine's own all-reduce replaces the library, "
			    "a release sits over it; give one");
		bad = 1;
	}
	op = table_scalar(doc, "op", &bad, d);
	ranks = table_scalar(doc, "ranks", &bad, d);
	algo = table_scalar(doc, "algorithm", &bad, d);
	engine = table_scalar(doc, "engine_kernel_max_B", &bad, d);
	if (table_names(doc, "type", table_scalar(doc, "type", &bad, d),
			type_names, d) != 0 ||
	    table_names(doc, "placement", table_scalar(doc, "placement", &bad,
			d), placement_names, d) != 0)
		bad = 1;
	if (bad)
		return -1;
	rows = cnode_get(doc, "rows");
	r->op = op ? schema_name_index(coll_op_names, op) : -1;
	if (op && r->op < 0) {
		cnode_error(d, cnode_get(doc, "op"), "'op': expected one of "
			    "allreduce, allgather, reducescatter, alltoall, "
			    "broadcast, reduce, sendrecv, got '%s'", op);
		return -1;
	}
	/* An engine's own kernel (vLLM/SGLang custom all-reduce) is an
	 * all-reduce only: the engine calls the library for every other
	 * op */
	if (r->eng && r->op != COLL_ALLREDUCE) {
		cnode_error(d, r->eng_at, "'engine_collectives' needs 'op: "
			    "allreduce' (an engine's own kernel is an "
			    "all-reduce only), got 'op: %s'", op ? op :
			    "(none)");
		return -1;
	}
	r->algo = algo ? schema_name_index(coll_algo_names, algo) : -1;
	if (algo && r->algo < 0) {
		cnode_error(d, cnode_get(doc, "algorithm"), "'algorithm': "
			    "expected one of ring, tree, direct, rhd, "
			    "hierarchical, nvls, pairwise, p2p, got '%s'", algo);
		return -1;
	}
	r->off_at = cnode_get(doc, "disabled_algorithms");
	if (read_off(r->off_at, r, d) != 0)
		return -1;
	r->gated = valid_get_bool(doc, "gated", 1, d);
	if (r->gated < 0)
		return -1;
	r->ranks = 0;
	r->n = 0;
	if (ranks && (!valid_parse_number(ranks, 1, 1, &x) || x > 1e6)) {
		cnode_error(d, cnode_get(doc, "ranks"), "'ranks': expected a "
			    "whole number from 1 to 1e6, got '%s'", ranks);
		return -1;
	}
	r->ranks = ranks ? (uint32_t)x : 0;
	if (r->nodes && (!valid_parse_number(r->nodes, 1, 1, &x) || x > 1e6)) {
		cnode_error(d, cnode_get(doc, "nodes"), "'nodes': expected a "
			    "whole number from 1 to 1e6, got '%s'", r->nodes);
		return -1;
	}
	if (r->nodes) {		/* as the system's integer key reads it */
		char *t = arena_alloc(a, 16);

		if (!t) {
			diag_oom(d);
			return -1;
		}
		snprintf(t, 16, "%.0f", x);
		r->nodes = t;
	}
	r->engine_max_B = 0;
	if (engine && !valid_parse_number(engine, 0, 1, &r->engine_max_B)) {
		cnode_error(d, cnode_get(doc, "engine_kernel_max_B"),
			    "'engine_kernel_max_B': expected a whole number "
			    "of bytes >= 0, got '%s'", engine);
		return -1;
	}
	if (!r->id || !r->system || r->op < 0 || r->ranks == 0 || !rows ||
	    rows->kind != CNODE_SEQ) {
		cnode_error(d, doc, "expected 'id', 'system', 'op', "
			    "'ranks' and 'rows' of [size_B, time_us, busbw_GBps]"
			    " (%s)", !r->id ? "no 'id'" :
			    !r->system ? "no 'system'" : !op ? "no 'op'" :
			    !ranks ? "no 'ranks'" : "'rows' absent or not a "
			    "list");
		return -1;
	}
	return read_rows(rows, r, d);
}

static int add_row(struct valid_table *t, const struct ref *r, int i,
		   const struct net_coll_result *p, struct diag *d)
{
	struct valid_row *v = valid_row_add(t, d);
	double s = r->size_B[i];

	if (!v)
		return -1;
	snprintf(v->label, sizeof(v->label), "%.0f B", s);
	v->size_B = s;
	v->measured = r->busbw_GBps[i];
	v->predicted = p->busbw_Bps / 1e9;
	v->error = v->measured > 0 ? v->predicted / v->measured - 1 : NAN;
	snprintf(v->note, sizeof(v->note), "%s/%s, %.2f us (measured %.2f)",
		 p->algorithm, p->protocol, p->time_s * 1e6, r->time_us[i]);
	if (!(v->measured > 0) || s < 1024 || s > 8589934592.0) {
		v->scored = 0;
		snprintf(v->note, sizeof(v->note), "%s", v->measured > 0 ?
			 "(outside 1 KiB - 8 GiB, not scored)" :
			 "(measured 0.00, not scored)");
	} else if (s <= r->engine_max_B) {
		v->scored = 0;
		snprintf(v->note, sizeof(v->note), "engine kernel, not scored; "
			 "%s/%s %.2f us", p->algorithm, p->protocol,
			 p->time_s * 1e6);
	}
	return 0;
}

/* The most keys a release preset sets (each one --set); validate adds
 * one for nodes and one per algorithm switched off. */
#define MAX_RELEASE_KEYS 64

/* A scalar as --set value text that parses back to the same node: a
 * plain one as written, unless a flow list would split it (an item
 * with , [ ] { } or ': '); a quoted, block or !!str one (a string by
 * its writing) in double quotes with \\ \" and controls escaped, so
 * "false" stays a string (the schema refuses it for a boolean, as in
 * the file) and "a, b" one item. NULL when out of memory. */
static char *scalar_text(struct arena *a, const struct cnode *v, int item)
{
	const char *t = v->text ? v->text : "";
	char *out, *o;
	size_t i;

	if (v->quoted == CNODE_PLAIN &&
	    (!item || (!strpbrk(t, ",[]{}") && !strstr(t, ": "))))
		return arena_printf(a, "%s", t);
	if (!(out = o = arena_alloc(a, 4 * strlen(t) + 3)))
		return NULL;
	*o++ = '"';
	for (i = 0; t[i]; i++) {
		unsigned char c = (unsigned char)t[i];

		if (c == '"' || c == '\\') {
			*o++ = '\\';
			*o++ = (char)c;
		} else if (c == '\n') {
			*o++ = '\\';
			*o++ = 'n';
		} else if (c < 0x20 || c == 0x7f) {
			o += sprintf(o, "\\x%02x", c);
		} else {
			*o++ = (char)c;
		}
	}
	*o++ = '"';
	*o = '\0';
	return out;
}

/* The release file's keys under `path` (dotted), each as a --set
 * "path.key=value" appended to sets[*n]: mappings walked, scalars as
 * scalar_text writes them, lists of scalars as [a, b]; at most
 * MAX_RELEASE_KEYS of them from first on. 0, or -1 after reporting. */
static int leaf_sets(struct arena *a, const struct cnode *v,
		     const char *path, const char **sets, size_t *n,
		     size_t first, struct diag *d)
{
	size_t i;
	char *t, *x;

	if (v->kind == CNODE_MAP) {
		for (i = 0; i < v->npairs; i++) {
			const char *k = v->pairs[i].key->text;

			if (!(t = arena_printf(a, "%s.%s", path, k)) ||
			    leaf_sets(a, v->pairs[i].value, t, sets, n, first,
				      d))
				return t ? -1 : (diag_oom(d), -1);
		}
		return 0;
	}
	if (*n - first >= MAX_RELEASE_KEYS) {
		cnode_error(d, v, "a release preset of more than %d keys "
			    "(validate sets at most that many)",
			    MAX_RELEASE_KEYS);
		return -1;
	}
	if (v->kind == CNODE_SCALAR)
		t = (x = scalar_text(a, v, 0)) ?
		    arena_printf(a, "%s=%s", path, x) : NULL;
	else {
		t = arena_printf(a, "%s=[", path);
		for (i = 0; t && i < v->nitems; i++) {
			if (v->items[i]->kind != CNODE_SCALAR) {
				cnode_error(d, v->items[i], "expected a "
					    "scalar (a release preset's lists "
					    "are flat)");
				return -1;
			}
			x = scalar_text(a, v->items[i], 1);
			t = x ? arena_printf(a, "%s%s%s", t, i ? ", " : "",
					     x) : NULL;
		}
		t = t ? arena_printf(a, "%s]", t) : NULL;
	}
	if (!t) {
		diag_oom(d);
		return -1;
	}
	sets[(*n)++] = t;
	return 0;
}

/* Whether collectives preset name is itself a release (its file has a
 * `preset:`), not a library (nccl.yaml, rccl.yaml have none): 1 or 0,
 * -1 after reporting a file that does not parse. */
static int is_release(struct config_ctx *cx, const char *name)
{
	const struct cnode *doc;
	const char *file;
	int oom;

	file = config_preset_file(cx, &collectives_schema, name, &oom);
	if (!file)
		return oom ? -1 : 0;
	doc = cnode_load_yaml(cx->arena, file, cx->diag);
	if (!doc)
		return -1;
	return doc->kind == CNODE_MAP && cnode_get(doc, "preset") ? 1 : 0;
}

/* Whether collectives preset name is an engine's own all-reduce kernel:
 * neither a release (a `preset:`) nor a library (nccl, rccl, openmpi:
 * algorithms besides the one direct kernel, vllm-custom-allreduce.yaml
 * and sglang-custom-allreduce.yaml have only `direct`). 0 after
 * reporting at at, 1 when it is. */
static int engine_preset_ok(struct config_ctx *cx, const char *name,
			    const struct cnode *at)
{
	const struct cnode *doc, *al;
	const char *file;
	size_t i;
	int oom;

	file = config_preset_file(cx, &collectives_schema, name, &oom);
	if (!file)	/* config_load names the missing preset */
		return !oom;
	if (!(doc = cnode_load_yaml(cx->arena, file, cx->diag)))
		return 0;
	if (doc->kind == CNODE_MAP && cnode_get(doc, "preset")) {
		cnode_error(cx->diag, at, "'engine_collectives': '%s' is a "
			    "release of a library, not an engine's own "
			    "all-reduce (give it as 'collectives')", name);
		return 0;
	}
	al = doc->kind == CNODE_MAP ? cnode_get(doc, "algorithms") : NULL;
	for (i = 0; al && al->kind == CNODE_MAP && i < al->npairs; i++)
		if (strcmp(al->pairs[i].key->text, "direct") != 0) {
			cnode_error(cx->diag, at, "'engine_collectives': "
				    "'%s' is a library (it has the '%s' "
				    "algorithm), not an engine's own "
				    "all-reduce (one direct kernel, as "
				    "vllm-custom-allreduce)", name,
				    al->pairs[i].key->text);
			return 0;
		}
	return 1;
}

/* A release chain holds at most this many releases (r's and the
 * releases it starts from: nccl-2.26-blackwell starts from nccl-2.26,
 * which starts from the library nccl: 2). */
#define MAX_RELEASE_CHAIN 4

/* Release name's sets (its parent release's first: seen[0..nseen) the
 * releases above it, name the next); *lib_of the library the chain
 * starts from. */
static int release_chain_sets(struct config_ctx *cx, const struct ref *r,
			      const char *name, const char **seen,
			      int nseen, const char **sets, size_t *n,
			      size_t first, const char **lib_of);

/* r's release (`collectives: PRESET`) as sets over the system's
 * collectives; *lib_of the library it starts from (its `preset:`, or
 * that release's own), to check against the system's. 0, or -1 after
 * reporting. */
static int release_sets(struct config_ctx *cx, const struct ref *r,
			const char **sets, size_t *n, const char **lib_of)
{
	const char *seen[MAX_RELEASE_CHAIN];

	return release_chain_sets(cx, r, r->lib, seen, 0, sets, n, *n,
				  lib_of);
}

/* "a -> b -> c" of seen[0..nseen) then name, for a message */
static const char *chain_text(struct config_ctx *cx, const char **seen,
			      int nseen, const char *name)
{
	const char *t = "";
	int i;

	for (i = 0; i < nseen && t; i++)
		t = arena_printf(cx->arena, "%s%s -> ", t, seen[i]);
	return t ? arena_printf(cx->arena, "%s%s", t, name) : NULL;
}

static int release_chain_sets(struct config_ctx *cx, const struct ref *r,
			      const char *name, const char **seen,
			      int nseen, const char **sets, size_t *n,
			      size_t first, const char **lib_of)
{
	const struct cnode *doc, *p;
	const char *file, *chain;
	size_t i;
	int oom, j, rel;

	file = config_preset_file(cx, &collectives_schema, name, &oom);
	if (!file) {
		const char **names = oom ? NULL :
			config_list_presets(cx, &collectives_schema);
		char list[512];
		size_t k = 0;

		if (oom)
			return -1;
		list[0] = '\0';
		for (i = 0; names && names[i] && k < sizeof(list); i++)
			k += (size_t)snprintf(list + k, sizeof(list) - k,
					      "%s%s", i ? ", " : "", names[i]);
		cnode_error(cx->diag, r->lib_at, "'collectives': no "
			    "collectives preset '%s' (presets: %s)", name,
			    list);
		return -1;
	}
	if (!(doc = cnode_load_yaml(cx->arena, file, cx->diag)))
		return -1;
	p = doc->kind == CNODE_MAP ? cnode_get(doc, "preset") : NULL;
	if (!p || p->kind != CNODE_SCALAR) {
		cnode_error(cx->diag, p ? p : doc, "a release preset starts "
			    "from its library's ('preset: nccl'), as "
			    "configs/collectives/nccl-2.26.yaml does");
		diag_note(cx->diag, r->lib_at->file, r->lib_at->line,
			  r->lib_at->col, "'collectives: %s' of this table",
			  r->lib);
		return -1;
	}
	*lib_of = p->text;
	seen[nseen++] = name;
	if ((rel = is_release(cx, p->text)) < 0)
		return -1;
	if (rel) {
		for (j = 0; j < nseen && strcmp(seen[j], p->text) != 0; j++)
			;
		if (j < nseen || nseen >= MAX_RELEASE_CHAIN) {
			if (!(chain = chain_text(cx, seen, nseen, p->text))) {
				diag_oom(cx->diag);
				return -1;
			}
			cnode_error(cx->diag, r->lib_at, j < nseen ?
				    "'collectives': release chain %s is a "
				    "cycle" : "'collectives': release chain "
				    "%s is more than 4 releases deep", chain);
			return -1;
		}
		if (release_chain_sets(cx, r, p->text, seen, nseen, sets, n,
				       first, lib_of) != 0)
			return -1;
	}
	for (i = 0; i < doc->npairs; i++) {
		const char *k = doc->pairs[i].key->text;
		char *t;

		if (strcmp(k, "preset") == 0 || strcmp(k, "name") == 0)
			continue;
		if (!(t = arena_printf(cx->arena, "collectives.%s", k))) {
			diag_oom(cx->diag);
			return -1;
		}
		if (leaf_sets(cx->arena, doc->pairs[i].value, t, sets, n,
			      first, cx->diag) != 0)
			return -1;
	}
	return 0;
}

/* Whether c runs on system with the table's sets but not its
 * disabled_algorithms (sets[0..nbase)): the list is then why it did not
 * (the library left none it runs the op with). A failure for any other
 * reason (9 ranks on 8 GPUs, send/recv over 4, a size past what the
 * engine represents) was noted as the list's. Quiet; 1 or 0. */
static int runs_without_off(struct config_ctx *cx, const char *system,
			    const char *const *sets, size_t nbase,
			    const struct coll_desc *c)
{
	struct system_spec *s = arena_alloc(cx->arena, sizeof(*s));
	struct config_ctx q = *cx;
	struct net_coll_result p;
	struct diag quiet;
	struct net *n = NULL;
	int ok = 0;

	diag_init(&quiet, NULL);
	q.diag = &quiet;
	if (s) {
		memset(s, 0, sizeof(*s));
		if (config_load(&q, &system_schema, system, sets, nbase, s) == 0 &&
		    (n = net_new(s, NULL, &quiet)))
			ok = net_collective_time(n, c, &p, &quiet) == 0;
	}
	net_free(n);
	return ok;
}

/* Predict one table. */
static int do_file(struct valid_set *set, struct config_ctx *cx,
		   const char *path)
{
	struct ref r;
	struct system_spec *s = arena_alloc(cx->arena, sizeof(*s));
	struct valid_table *t;
	struct net *n = NULL;
	uint32_t *gpus = NULL, i;
	char set_nodes[64], set_off[ALGO_COUNT][160];
	const char *sets[1 + MAX_RELEASE_KEYS + ALGO_COUNT], *lib_of = NULL;
	size_t nsets = 0, nbase;
	int k, rc = -1;

	if (!s || read_ref(cx->arena, path, &r, cx->diag) != 0)
		return -1;
	memset(s, 0, sizeof(*s));
	if (r.nodes) {
		snprintf(set_nodes, sizeof(set_nodes), "nodes=%s", r.nodes);
		sets[nsets++] = set_nodes;
	}
	if (r.lib && release_sets(cx, &r, sets, &nsets, &lib_of) != 0)
		return -1;
	if (r.eng && !engine_preset_ok(cx, r.eng, r.eng_at))
		return -1;
	if (r.eng && !(sets[nsets++] = arena_printf(cx->arena,
						    "collectives=%s", r.eng))) {
		diag_oom(cx->diag);
		return -1;
	}
	nbase = nsets;
	for (k = 0; k < ALGO_COUNT; k++)
		if (r.off[k]) {	/* every protocol of it off */
			snprintf(set_off[k], sizeof(set_off[k]), "collectives."
				 "algorithms.%s.protocols={ll: false, ll128: "
				 "false, simple: false}", coll_algo_names[k]);
			sets[nsets++] = set_off[k];
		}
	if (config_load(cx, &system_schema, r.system, sets, nsets, s) != 0) {
		if (r.lib && !cx->diag->oom)	/* whose --set it was */
			diag_note(cx->diag, r.lib_at->file, r.lib_at->line,
				  r.lib_at->col, "'collectives: %s' of this "
				  "table", r.lib);
		if (r.eng && !cx->diag->oom)
			diag_note(cx->diag, r.eng_at->file, r.eng_at->line,
				  r.eng_at->col, "'engine_collectives: %s' of "
				  "this table", r.eng);
		return -1;
	}
	if (lib_of && (!s->collectives || !s->collectives->name ||
		       strcmp(lib_of, s->collectives->name) != 0)) {
		cnode_error(cx->diag, r.lib_at, "'collectives': release '%s' "
			    "starts from '%s', but %s runs '%s'", r.lib,
			    lib_of, r.system, s->collectives &&
			    s->collectives->name ? s->collectives->name : "?");
		return -1;
	}
	gpus = mem_alloc(r.ranks * sizeof(*gpus));
	n = net_new(s, NULL, cx->diag);
	if (!gpus || !n || !(t = valid_table_add(set, VK_COLLECTIVE, cx->diag)))
		goto out;
	for (i = 0; i < r.ranks; i++)
		gpus[i] = i;
	snprintf(t->id, sizeof(t->id), "%s", r.id);
	snprintf(t->title, sizeof(t->title),
		 "%s, %u ranks on %s%s%s%s%s%s%s (%s)", coll_op_names[r.op],
		 r.ranks, r.system, r.nodes ? ", " : "", r.nodes ? r.nodes : "",
		 r.nodes ? " nodes" : "", r.eng ? ", engine's own: " : "",
		 r.eng ? r.eng : "", r.gated ? "" : ", extra (not gated)",
		 path);
	t->unit = "GB/s";
	t->gated = r.gated;
	for (k = 0; k < r.n; k++) {
		struct coll_desc c = { (enum coll_op)r.op, r.size_B[k], gpus,
				       r.ranks, NULL, r.algo, -1, 1, 0, NULL,
				       0, 0, 0 };
		struct net_coll_result p;

		if (net_collective_time(n, &c, &p, cx->diag) != 0) {
			/* the library left with none it runs for the op:
			 * say whose list that was; else the table's row */
			if (cx->diag->oom)
				goto out;
			if (r.off_at && runs_without_off(cx, r.system, sets,
							 nbase, &c))
				diag_note(cx->diag, r.off_at->file,
					  r.off_at->line, r.off_at->col,
					  "'disabled_algorithms' of this "
					  "table leaves the library none it "
					  "runs this op with");
			else
				diag_note(cx->diag, path, 0, 0, "row %d of "
					  "this table (%.15g B, %u ranks on "
					  "%s)", k + 1, r.size_B[k], r.ranks,
					  r.system);
			goto out;
		}
		if (add_row(t, &r, k, &p, cx->diag) != 0)
			goto out;
		t->rows[t->n - 1].in_sample = valid_is_fitted(set, t->id);
	}
	rc = 0;
out:
	if (rc && !cx->diag->errors)
		diag_oom(cx->diag);
	net_free(n);
	mem_free(gpus);
	return rc;
}

int valid_collectives(struct valid_set *set, struct config_ctx *cx,
		      const char *dir)
{
	const char **files;
	size_t n, i;

	if (valid_list_yaml(cx, dir, &files, &n) != 0)
		return -1;
	for (i = 0; i < n; i++)
		if (do_file(set, cx, files[i]) != 0)
			return -1;
	return 0;
}
