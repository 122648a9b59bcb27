/*
 * cnode_yaml.c - YAML text to a cnode tree through libyaml's event API.
 *
 * Events drive a stack of open collections, at most CNODE_MAX_DEPTH deep.
 * A collection is attached to its parent when it ends, so a mapping key
 * that is itself a collection is seen whole and rejected.
 *
 * Aliases share the anchored node. Each anchor remembers how many nodes
 * its subtree expands to (aliases inside counted at their expanded size),
 * and every alias adds that many to the document's running total; past
 * CNODE_MAX_NODES the document is refused. This bounds every later walk
 * of the tree (the schema loader, printing) however aliases nest, which
 * is what defeats "billion laughs". An anchor is defined when its node
 * ends, so a node cannot alias itself and the tree has no cycles.
 *
 * Tags (!!int, !include, ...) are ignored with a warning: a value is read
 * by the type of its key (the schema), and llmsim has no includes. Only
 * !!str has a meaning here: a string, as quoting makes one.
 *
 * Text parsed on its own may sit inside a larger file (a --set value after
 * its key): positions are then shifted to the text's origin there.
 *
 * The YAML entry points of cnode.h (cnode_parse_yaml, cnode_load_yaml)
 * live here, as cnode_load_json lives in cnode_json.c; cnode.c holds the
 * tree and the helpers both loaders share (cnode_impl.h).
 */
#include <stdint.h>
#include <string.h>
#include <yaml.h>

#include "cnode_impl.h"
#include "base/diag.h"
#include "base/arena.h"
#include "base/mem.h"

#define ANCHOR_BUCKETS 256

struct anchor {
	const char *name;		/* without the '&' */
	struct cnode *node;		/* what aliases share */
	uint64_t size;			/* nodes it expands to */
	struct anchor *next;		/* bucket chain, newest first */
};

struct frame {
	struct cnode *node;		/* the open mapping or sequence */
	size_t cap;			/* slots in its pairs/items array */
	struct cnode *key;		/* mapping: key awaiting its value */
	int drop;			/* the key was refused: drop the pair */
	uint64_t start;			/* b->nodes when it began */
	const char *anchor;		/* anchor to define when it ends */
};

struct builder {
	struct arena *a;		/* holds the nodes */
	struct diag *d;			/* where errors go */
	const char *file;		/* the nodes' file */
	const char *text;		/* the source, for positions */
	size_t len;			/* its length, bytes */
	struct frame stack[CNODE_MAX_DEPTH]; /* open collections */
	int depth;			/* open collections */
	int line0, col0;		/* lines and columns before text[0]
					 * in file (first line only) */
	uint64_t nodes;			/* nodes so far, aliases expanded */
	uint64_t aliased;		/* of which through aliases */
	struct anchor *anchors[ANCHOR_BUCKETS]; /* hash chains by name */
	struct cnode *root;		/* the document's node, when done */
	int docs;			/* documents started */
	unsigned errors;		/* recoverable errors reported */
	int fatal;			/* stop reading events */
};

static unsigned hash(const char *s)
{
	unsigned h = 5381;

	while (*s)
		h = h * 33u + (unsigned char)*s++;
	return h % ANCHOR_BUCKETS;
}

static void oom(struct builder *b)
{
	diag_oom(b->d);
	b->fatal = 1;
}

/* 1-based line and column in the file of the text's line:col. */
static void place(const struct builder *b, int *line, int *col)
{
	if (*line == 1)
		*col += b->col0;
	*line += b->line0;
}

static void mark_pos(const struct builder *b, yaml_mark_t m, int *line,
		     int *col)
{
	*line = (int)m.line + 1;
	*col = (int)m.column + 1;
	place(b, line, col);
}

static void fatal_at(struct builder *b, yaml_mark_t m, const char *msg)
{
	int line, col;

	mark_pos(b, m, &line, &col);
	diag_error(b->d, b->file, line, col, "%s", msg);
	b->fatal = 1;
}

static int define_anchor(struct builder *b, const char *name,
			 struct cnode *node, uint64_t size)
{
	struct anchor *an = arena_alloc(b->a, sizeof(*an));
	unsigned h = hash(name);

	if (!an) {
		oom(b);
		return -1;
	}
	an->name = name;
	an->node = node;
	an->size = size;
	an->next = b->anchors[h];
	b->anchors[h] = an;
	return 0;
}

static const struct anchor *find_anchor(const struct builder *b,
					const char *name)
{
	const struct anchor *an;

	for (an = b->anchors[hash(name)]; an; an = an->next)
		if (strcmp(an->name, name) == 0)
			return an;
	return NULL;
}

/* Count n more nodes (an alias's expansion: aliased); refuse the
 * document past CNODE_MAX_NODES, blaming aliases only when they count. */
static int count_nodes(struct builder *b, uint64_t n, int aliased,
		       yaml_mark_t at)
{
	char msg[160];

	b->nodes += n;
	if (aliased)
		b->aliased += n;
	if (b->nodes <= CNODE_MAX_NODES)
		return 0;
	if (b->aliased > 0)
		snprintf(msg, sizeof(msg), "the document expands to more than "
			 "%d nodes through its aliases (%llu from aliases); "
			 "refusing it", CNODE_MAX_NODES,
			 (unsigned long long)b->aliased);
	else
		snprintf(msg, sizeof(msg), "the document has more than %d "
			 "nodes (keys, values and items); a config has a few "
			 "hundred: refusing it", CNODE_MAX_NODES);
	fatal_at(b, at, msg);
	return -1;
}

/* Warn that a node's tag is ignored (all but !!str, which makes a
 * string), naming it the short way YAML files write it. */
static void warn_tag(struct builder *b, const yaml_char_t *tag,
		     yaml_mark_t m)
{
	static const char core[] = "tag:yaml.org,2002:";
	const char *t = (const char *)tag;
	int line, col;

	if (!t || strcmp(t, YAML_STR_TAG) == 0)
		return;
	mark_pos(b, m, &line, &col);
	if (strncmp(t, core, sizeof(core) - 1) == 0)
		diag_warn(b->d, b->file, line, col, "tag '!!%s' ignored: llmsim "
			  "reads a value by the type of its key",
			  t + sizeof(core) - 1);
	else
		diag_warn(b->d, b->file, line, col, "tag '%s' ignored: llmsim "
			  "reads a value by the type of its key", t);
}

static int check_key(struct builder *b, const struct cnode *key)
{
	if (key->kind != CNODE_SCALAR) {
		diag_error(b->d, key->file, key->line, key->col, "a mapping "
			   "key must be a plain name, got a %s",
			   key->kind == CNODE_MAP ? "mapping" : "sequence");
		return -1;
	}
	if (!key->quoted && strcmp(key->text, "<<") == 0) {
		diag_error(b->d, key->file, key->line, key->col, "merge keys "
			   "('<<') are not supported: write the keys out, or "
			   "start from a preset with 'preset: NAME' and "
			   "override keys");
		return -1;
	}
	if (key->text[0] == '\0') {
		diag_error(b->d, key->file, key->line, key->col,
			   "empty mapping key");
		return -1;
	}
	return 0;
}

/* Attach a finished node to the open collection (or make it the root). */
static void attach(struct builder *b, struct cnode *n)
{
	struct frame *f;
	int rc = 0;

	if (b->depth == 0) {
		b->root = n;
		return;
	}
	f = &b->stack[b->depth - 1];
	if (f->node->kind == CNODE_SEQ) {
		rc = cnode_seq_add(b->a, f->node, &f->cap, n);
	} else if (!f->key) {
		f->key = n;
		f->drop = check_key(b, n) != 0;
		b->errors += (unsigned)f->drop;
	} else {
		/* A refused key (reported) never enters the mapping, so later
		 * checks see only scalar keys. */
		if (!f->drop)
			rc = cnode_map_add(b->a, f->node, &f->cap, f->key, n);
		f->key = NULL;
	}
	if (rc != 0)
		oom(b);
}

static struct cnode *new_node(struct builder *b, enum cnode_kind kind,
			      yaml_mark_t m)
{
	struct cnode *n;
	int line, col;

	mark_pos(b, m, &line, &col);
	n = cnode_new(b->a, kind, b->file, line, col);
	if (!n)
		oom(b);
	return n;
}

static const char *anchor_name(struct builder *b, const yaml_char_t *s)
{
	char *name;

	if (!s)
		return NULL;
	name = arena_strdup(b->a, (const char *)s);
	if (!name)
		oom(b);
	return name;
}

static void on_scalar(struct builder *b, const yaml_event_t *e)
{
	const char *tag = (const char *)e->data.scalar.tag;
	const char *anchor;
	struct cnode *n;

	if (memchr(e->data.scalar.value, 0, e->data.scalar.length)) {
		fatal_at(b, e->start_mark, "a NUL character ('\\0') is not "
			 "allowed in a value");
		return;
	}
	if (count_nodes(b, 1, 0, e->start_mark) != 0 ||
	    !(n = new_node(b, CNODE_SCALAR, e->start_mark)))
		return;
	warn_tag(b, e->data.scalar.tag, e->start_mark);
	n->text = arena_strndup(b->a, (const char *)e->data.scalar.value,
				e->data.scalar.length);
	if (!n->text) {
		oom(b);
		return;
	}
	/* A quoted or block scalar, or one tagged !!str, is a string. */
	switch (e->data.scalar.style) {
	case YAML_PLAIN_SCALAR_STYLE:
	case YAML_ANY_SCALAR_STYLE:
		n->quoted = tag && strcmp(tag, YAML_STR_TAG) == 0 ?
			    CNODE_STR_TAG : CNODE_PLAIN;
		break;
	case YAML_LITERAL_SCALAR_STYLE:
	case YAML_FOLDED_SCALAR_STYLE:
		n->quoted = CNODE_BLOCK;
		break;
	default:
		n->quoted = CNODE_QUOTED;
	}
	anchor = anchor_name(b, e->data.scalar.anchor);
	if (b->fatal || (anchor && define_anchor(b, anchor, n, 1) != 0))
		return;
	attach(b, n);
}

static void on_start(struct builder *b, const yaml_event_t *e,
		     enum cnode_kind kind, const yaml_char_t *anchor,
		     const yaml_char_t *tag)
{
	struct frame *f;
	char msg[96];

	if (b->depth == CNODE_MAX_DEPTH) {
		snprintf(msg, sizeof(msg), "nesting deeper than %d levels",
			 CNODE_MAX_DEPTH);
		fatal_at(b, e->start_mark, msg);
		return;
	}
	f = &b->stack[b->depth];
	memset(f, 0, sizeof(*f));
	f->start = b->nodes;
	if (count_nodes(b, 1, 0, e->start_mark) != 0)
		return;
	warn_tag(b, tag, e->start_mark);
	f->node = new_node(b, kind, e->start_mark);
	f->anchor = anchor_name(b, anchor);
	if (!b->fatal)
		b->depth++;
}

static void on_end(struct builder *b)
{
	struct frame *f = &b->stack[--b->depth];
	long dups;

	if (f->node->kind == CNODE_MAP) {
		dups = cnode_check_duplicates(f->node, b->d);
		if (dups < 0) {
			b->fatal = 1;
			return;
		}
		b->errors += (unsigned)dups;
	}
	if (f->anchor &&
	    define_anchor(b, f->anchor, f->node, b->nodes - f->start) != 0)
		return;
	attach(b, f->node);
}

static void on_alias(struct builder *b, const yaml_event_t *e)
{
	const char *name = (const char *)e->data.alias.anchor;
	const struct anchor *an = find_anchor(b, name);
	char msg[192];

	if (!an) {
		snprintf(msg, sizeof(msg), "alias '*%.64s' names no earlier "
			 "anchor '&%.64s'", name, name);
		fatal_at(b, e->start_mark, msg);
		return;
	}
	if (count_nodes(b, an->size, 1, e->start_mark) != 0)
		return;
	attach(b, an->node);
}

static void on_event(struct builder *b, const yaml_event_t *e)
{
	switch (e->type) {
	case YAML_DOCUMENT_START_EVENT:
		if (++b->docs > 1)
			fatal_at(b, e->start_mark, "a second document ('---'): "
				 "a config file holds exactly one");
		break;
	case YAML_SCALAR_EVENT:
		on_scalar(b, e);
		break;
	case YAML_SEQUENCE_START_EVENT:
		on_start(b, e, CNODE_SEQ, e->data.sequence_start.anchor,
			 e->data.sequence_start.tag);
		break;
	case YAML_MAPPING_START_EVENT:
		on_start(b, e, CNODE_MAP, e->data.mapping_start.anchor,
			 e->data.mapping_start.tag);
		break;
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		on_end(b);
		break;
	case YAML_ALIAS_EVENT:
		on_alias(b, e);
		break;
	default:	/* stream start/end, document end, no event */
		break;
	}
}

/* The line of libyaml's context mark, clamped to the text (at the end of
 * input libyaml counts a line break the text may not have). */
static int context_line(const struct builder *b, const yaml_parser_t *p)
{
	int line = (int)p->context_mark.line + 1, col;

	if (cnode_pos_offset(b->text, b->len, line,
			     (int)p->context_mark.column + 1) >= b->len)
		cnode_offset_pos(b->text, b->len, b->len, &line, &col);
	return line + b->line0;
}

/* Report libyaml's error with the best position it gives. */
static void syntax_error(struct builder *b, const yaml_parser_t *p)
{
	int line, col;
	size_t off;
	const char *hint = "";

	if (p->error == YAML_MEMORY_ERROR) {
		oom(b);
		return;
	}
	if (p->error == YAML_READER_ERROR) {
		cnode_offset_pos(b->text, b->len, p->problem_offset, &line,
				 &col);
	} else {
		line = (int)p->problem_mark.line + 1;
		col = (int)p->problem_mark.column + 1;
	}
	off = cnode_pos_offset(b->text, b->len, line, col);
	if (off >= b->len)	/* "at the end": where the text ends */
		cnode_offset_pos(b->text, b->len, b->len, &line, &col);
	if (off < b->len && b->text[off] == '\t')
		hint = "; tabs cannot indent YAML, use spaces";
	place(b, &line, &col);
	if (p->context && p->error != YAML_READER_ERROR)
		diag_error(b->d, b->file, line, col, "invalid YAML: %s (%s "
			   "at line %d)%s", p->problem ? p->problem : "error",
			   p->context, context_line(b, p), hint);
	else
		diag_error(b->d, b->file, line, col, "invalid YAML: %s%s",
			   p->problem ? p->problem : "error", hint);
	b->fatal = 1;
}

static void run_parser(struct builder *b)
{
	yaml_parser_t p;
	yaml_event_t e;
	int done = 0;

	if (!yaml_parser_initialize(&p)) {
		oom(b);
		return;
	}
	yaml_parser_set_input_string(&p, (const unsigned char *)b->text,
				     b->len);
	while (!done && !b->fatal) {
		if (!yaml_parser_parse(&p, &e)) {
			syntax_error(b, &p);
			break;
		}
		on_event(b, &e);
		done = e.type == YAML_STREAM_END_EVENT;
		yaml_event_delete(&e);
	}
	yaml_parser_delete(&p);
}

static int is_empty_scalar(const struct cnode *n)
{
	return n->kind == CNODE_SCALAR && !n->quoted && n->text[0] == '\0';
}

/* YAML text already checked by cnode_check_text; file names it in
 * messages, the text starting after line0 lines and col0 columns of it;
 * empty_ok: an empty stream is a null scalar rather than an error. */
static struct cnode *build_tree(struct arena *a, const char *text,
				size_t len, const char *file, int line0,
				int col0, int empty_ok, struct diag *d)
{
	struct builder *b = mem_calloc(1, sizeof(*b));
	struct cnode *root = NULL;

	if (!b) {
		diag_oom(d);
		return NULL;
	}
	b->a = a;
	b->d = d;
	b->file = file;
	b->text = text;
	b->len = len;
	b->line0 = line0;
	b->col0 = col0;
	run_parser(b);
	if (b->fatal || b->errors)
		goto out;
	root = b->root;
	if (!root && empty_ok) {
		yaml_mark_t start = {0, 0, 0};
		root = new_node(b, CNODE_SCALAR, start);
		if (root)
			root->text = "";
	} else if (!empty_ok && (!root || is_empty_scalar(root))) {
		cnode_empty_document(file, d);
		root = NULL;
	}
out:
	mem_free(b);
	return root;
}

struct cnode *cnode_parse_yaml(struct arena *a, const char *text,
			       size_t len, const char *file, struct diag *d)
{
	const char *name = arena_strdup(a, file);

	if (!name) {
		diag_oom(d);
		return NULL;
	}
	if (cnode_check_text(text, len, name, d) != 0)
		return NULL;
	return build_tree(a, text, len, name, 0, 0, 1, d);
}

struct cnode *cnode_parse_yaml_at(struct arena *a, const char *text,
				  size_t len, const char *file, int line,
				  int col, struct diag *d)
{
	if (cnode_check_text_at(text, len, file, line, col, d) != 0)
		return NULL;
	return build_tree(a, text, len, file, line - 1, col - 1, 1, d);
}

struct cnode *cnode_load_yaml(struct arena *a, const char *path,
			      struct diag *d)
{
	struct cnode *root;
	const char *name;
	size_t len = 0;
	char *text = cnode_read_named(a, path, &name, &len, d);

	if (!text)
		return NULL;
	root = build_tree(a, text, len, name, 0, 0, 0, d);
	mem_free(text);
	return root;
}
