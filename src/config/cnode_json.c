/*
 * cnode_json.c - a JSON file (a Hugging Face config.json) to a cnode tree.
 *
 * cJSON decodes the values but keeps no positions, so a small scanner
 * first walks the same text in document order. It checks the syntax
 * strictly (RFC 8259, plus CNODE_MAX_DEPTH and a 63-character limit on
 * numbers, which is the longest cJSON reads) and records where each key
 * and each value starts. Building the tree then walks cJSON's result in
 * the same pre-order and takes the positions one by one. Because the
 * scanner has accepted the text, cJSON failing on it can only mean it ran
 * out of memory. Numbers keep their source text ("1e400", "4096"), so the
 * schema sees what the user wrote.
 */
#include <cJSON.h>
#include <string.h>

#include "cnode_impl.h"
#include "base/diag.h"
#include "base/arena.h"
#include "base/mem.h"

#define JSON_MAX_NUMBER 63

struct jpos {
	int line, col;			/* 1-based */
	size_t off, len;		/* source bytes of a number token */
};

struct scanner {
	const char *s;			/* the text */
	size_t n, i;			/* its length, the cursor (bytes) */
	int line, col;			/* position of the cursor */
	int depth;			/* open objects and arrays */
	const char *file;		/* for messages */
	struct diag *d;			/* where errors go */
	struct arena *a;		/* holds pos */
	struct jpos *pos;		/* keys and values in pre-order */
	size_t npos, cap;		/* used and allocated entries of pos */
	int failed;			/* an error was reported */
};

static int peek(const struct scanner *sc)
{
	return sc->i < sc->n ? (unsigned char)sc->s[sc->i] : -1;
}

/* Move past one byte; columns count characters, so continuation bytes of
 * a UTF-8 sequence do not advance them. */
static void advance(struct scanner *sc)
{
	unsigned char c = (unsigned char)sc->s[sc->i++];

	if (c == '\n') {
		sc->line++;
		sc->col = 1;
	} else if ((c & 0xc0) != 0x80) {
		sc->col++;
	}
}

static void skip_ws(struct scanner *sc)
{
	int c;

	while ((c = peek(sc)) == ' ' || c == '\t' || c == '\n' || c == '\r')
		advance(sc);
}

/* Report "invalid JSON: expected WHAT, got ..." at the cursor. */
static int fail(struct scanner *sc, const char *what)
{
	int c = peek(sc);

	if (c < 0)
		diag_error(sc->d, sc->file, sc->line, sc->col, "invalid JSON: "
			   "expected %s, got the end of the file", what);
	else if (c == '\n')
		diag_error(sc->d, sc->file, sc->line, sc->col, "invalid JSON: "
			   "expected %s, got the end of the line", what);
	else if (c >= 0x20 && c < 0x7f)
		diag_error(sc->d, sc->file, sc->line, sc->col, "invalid JSON: "
			   "expected %s, got '%c'", what, c);
	else
		diag_error(sc->d, sc->file, sc->line, sc->col, "invalid JSON: "
			   "expected %s, got byte 0x%02x", what, (unsigned)c);
	sc->failed = 1;
	return -1;
}

static int record(struct scanner *sc, int line, int col, size_t off,
		  size_t len)
{
	void *p = sc->pos;
	char msg[96];

	if (sc->npos >= CNODE_MAX_NODES) {
		snprintf(msg, sizeof(msg), "more than %d values in one file",
			 CNODE_MAX_NODES);
		diag_error(sc->d, sc->file, line, col, "%s", msg);
		sc->failed = 1;
		return -1;
	}
	if (arena_grow(sc->a, &p, &sc->cap, sc->npos + 1, sizeof(*sc->pos))) {
		diag_oom(sc->d);
		sc->failed = 1;
		return -1;
	}
	sc->pos = p;
	sc->pos[sc->npos++] = (struct jpos){line, col, off, len};
	return 0;
}

static int hex4(struct scanner *sc, unsigned *v)
{
	int k, c;

	*v = 0;
	for (k = 0; k < 4; k++) {
		c = peek(sc);
		if (c >= '0' && c <= '9')
			*v = *v * 16 + (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			*v = *v * 16 + (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			*v = *v * 16 + (unsigned)(c - 'A' + 10);
		else
			return fail(sc, "four hex digits after '\\u'");
		advance(sc);
	}
	return 0;
}

/* A \u escape, cursor after the 'u'. Surrogates must pair, as cJSON
 * requires; \u0000 would cut the string short and is refused. */
static int unicode_escape(struct scanner *sc)
{
	unsigned v, lo;

	if (hex4(sc, &v) != 0)
		return -1;
	if (v == 0)
		return fail(sc, "a character other than \\u0000 (NUL)");
	if (v >= 0xdc00 && v <= 0xdfff)
		return fail(sc, "a high surrogate before this low one");
	if (v < 0xd800 || v > 0xdbff)
		return 0;
	if (peek(sc) != '\\')
		return fail(sc, "'\\u' and a low surrogate");
	advance(sc);
	if (peek(sc) != 'u')
		return fail(sc, "'\\u' and a low surrogate");
	advance(sc);
	if (hex4(sc, &lo) != 0)
		return -1;
	if (lo < 0xdc00 || lo > 0xdfff)
		return fail(sc, "a low surrogate (\\udc00 to \\udfff)");
	return 0;
}

static int string(struct scanner *sc)
{
	int c;

	advance(sc);	/* the opening quote */
	for (;;) {
		c = peek(sc);
		if (c < 0)
			return fail(sc, "'\"' to close the string");
		if (c == '"') {
			advance(sc);
			return 0;
		}
		if (c == '\n')
			return fail(sc, "'\"' to close the string");
		if (c < 0x20)
			return fail(sc, "an escape such as \\n instead of a "
				    "control character");
		advance(sc);
		if (c != '\\')
			continue;
		c = peek(sc);
		if (c < 0 || !strchr("\"\\/bfnrtu", c))
			return fail(sc, "an escape: \\\" \\\\ \\/ \\b \\f \\n "
				    "\\r \\t or \\uXXXX");
		advance(sc);
		if (c == 'u' && unicode_escape(sc) != 0)
			return -1;
	}
}

static int digits(struct scanner *sc)
{
	int any = 0;

	while (peek(sc) >= '0' && peek(sc) <= '9') {
		advance(sc);
		any = 1;
	}
	return any ? 0 : fail(sc, "a digit");
}

static int number(struct scanner *sc)
{
	size_t start = sc->i;

	if (peek(sc) == '-')
		advance(sc);
	if (peek(sc) == '0')
		advance(sc);
	else if (digits(sc) != 0)
		return -1;
	if (peek(sc) == '.') {
		advance(sc);
		if (digits(sc) != 0)
			return -1;
	}
	if (peek(sc) == 'e' || peek(sc) == 'E') {
		advance(sc);
		if (peek(sc) == '+' || peek(sc) == '-')
			advance(sc);
		if (digits(sc) != 0)
			return -1;
	}
	if (sc->i - start > JSON_MAX_NUMBER)
		return fail(sc, "a number of at most 63 characters");
	sc->pos[sc->npos - 1].len = sc->i - start;
	return 0;
}

static int literal(struct scanner *sc, const char *word)
{
	size_t n = strlen(word), k;

	for (k = 0; k < n; k++) {
		if (peek(sc) != word[k])
			return fail(sc, "a value (an object, array, string, "
				    "number, true, false or null)");
		advance(sc);
	}
	return 0;
}

static int value(struct scanner *sc);

/* The members of an object or the items of an array, cursor after the
 * opening bracket. */
static int members(struct scanner *sc, int close, int keyed)
{
	skip_ws(sc);
	if (peek(sc) == close) {
		advance(sc);
		return 0;
	}
	for (;;) {
		if (keyed) {
			if (peek(sc) != '"')
				return fail(sc, "a key in double quotes");
			if (record(sc, sc->line, sc->col, sc->i, 0) != 0 ||
			    string(sc) != 0)
				return -1;
			skip_ws(sc);
			if (peek(sc) != ':')
				return fail(sc, "':' after the key");
			advance(sc);
		}
		if (value(sc) != 0)
			return -1;
		skip_ws(sc);
		if (peek(sc) == close) {
			advance(sc);
			return 0;
		}
		if (peek(sc) != ',')
			return fail(sc, keyed ? "',' or '}' after a member"
					      : "',' or ']' after an item");
		advance(sc);
		skip_ws(sc);
	}
}

static int value(struct scanner *sc)
{
	int c, rc;
	char msg[64];

	skip_ws(sc);
	c = peek(sc);
	if (record(sc, sc->line, sc->col, sc->i, 0) != 0)
		return -1;
	if (c == '{' || c == '[') {
		if (sc->depth == CNODE_MAX_DEPTH) {
			snprintf(msg, sizeof(msg), "nesting deeper than %d "
				 "levels", CNODE_MAX_DEPTH);
			diag_error(sc->d, sc->file, sc->line, sc->col, "%s", msg);
			sc->failed = 1;
			return -1;
		}
		advance(sc);
		sc->depth++;
		rc = members(sc, c == '{' ? '}' : ']', c == '{');
		sc->depth--;
		return rc;
	}
	if (c == '"')
		return string(sc);
	if (c == '-' || (c >= '0' && c <= '9'))
		return number(sc);
	if (c == 't')
		return literal(sc, "true");
	if (c == 'f')
		return literal(sc, "false");
	if (c == 'n')
		return literal(sc, "null");
	return fail(sc, "a value (an object, array, string, number, true, "
		    "false or null)");
}

/* Scan the whole text: one value, then only whitespace. 1 when the text
 * holds nothing but whitespace, 0 when it is valid, -1 after reporting. */
static int scan(struct scanner *sc)
{
	if (sc->n >= 3 && memcmp(sc->s, "\xef\xbb\xbf", 3) == 0)
		sc->i = 3;	/* byte order mark; cJSON skips it too */
	skip_ws(sc);
	if (sc->i == sc->n)
		return 1;
	if (value(sc) != 0)
		return -1;
	skip_ws(sc);
	if (sc->i != sc->n)
		return fail(sc, "the end of the file after the value");
	return 0;
}

struct jbuild {
	struct arena *a;		/* holds the nodes */
	struct diag *d;			/* where errors go */
	const char *file;		/* the nodes' file */
	const char *text;		/* the source, for number text */
	const struct jpos *pos;		/* the scanner's positions */
	size_t npos, next;		/* how many; the next to hand out */
	int failed;			/* an error was reported */
};

static struct cnode *node_at(struct jbuild *b, enum cnode_kind kind,
			     const struct jpos **p)
{
	static const struct jpos unknown = {0, 0, 0, 0};
	struct cnode *n;

	/* The scanner and cJSON agree on the structure, so positions never
	 * run out; if they ever did, the node would just lack one. */
	*p = b->next < b->npos ? &b->pos[b->next++] : &unknown;
	n = cnode_new(b->a, kind, b->file, (*p)->line, (*p)->col);
	if (!n)
		b->failed = 1;
	return n;
}

static struct cnode *build(struct jbuild *b, const cJSON *j);

static int build_children(struct jbuild *b, const cJSON *j, struct cnode *n)
{
	const struct jpos *p;
	const cJSON *c;
	size_t cap = 0;
	struct cnode *key, *v;

	for (c = j->child; c && !b->failed; c = c->next) {
		key = NULL;
		if (n->kind == CNODE_MAP) {
			key = node_at(b, CNODE_SCALAR, &p);
			if (!key || !(key->text = arena_strdup(b->a, c->string)))
				return -1;
			key->quoted = 1;
		}
		v = build(b, c);
		if (!v)
			return -1;
		if (key ? cnode_map_add(b->a, n, &cap, key, v)
			: cnode_seq_add(b->a, n, &cap, v))
			return -1;
	}
	return b->failed ? -1 : 0;
}

static struct cnode *build(struct jbuild *b, const cJSON *j)
{
	const struct jpos *p;
	struct cnode *n = node_at(b, cJSON_IsObject(j) ? CNODE_MAP :
				  cJSON_IsArray(j) ? CNODE_SEQ : CNODE_SCALAR,
				  &p);

	if (!n)
		return NULL;
	if (n->kind != CNODE_SCALAR) {
		if (build_children(b, j, n) != 0)
			goto oom;
		if (n->kind == CNODE_MAP &&
		    cnode_check_duplicates(n, b->d) != 0)
			b->failed = 1;	/* reported (or out of memory) */
		return b->failed ? NULL : n;
	}
	if (cJSON_IsString(j)) {
		n->text = arena_strdup(b->a, j->valuestring);
		n->quoted = CNODE_JSON_STR;
	} else if (cJSON_IsNumber(j)) {
		n->text = arena_strndup(b->a, b->text + p->off, p->len);
	} else {
		n->text = cJSON_IsTrue(j) ? "true" : cJSON_IsFalse(j) ? "false"
					  : "null";
	}
	if (n->text)
		return n;
oom:
	if (!b->failed)
		diag_oom(b->d);
	b->failed = 1;
	return NULL;
}

/* Route cJSON's allocations through mem.h, so failure injection reaches
 * them too. */
static void json_hooks(void)
{
	cJSON_Hooks h = {mem_alloc, mem_free};

	cJSON_InitHooks(&h);
}

static struct cnode *to_tree(struct arena *a, struct scanner *sc,
			     struct diag *d)
{
	struct jbuild b = {a, d, sc->file, sc->s, sc->pos, sc->npos, 0, 0};
	struct cnode *root;
	cJSON *j;

	json_hooks();
	j = cJSON_ParseWithLength(sc->s, sc->n);
	if (!j) {
		/* The scanner accepted the text: cJSON lacked memory. */
		diag_oom(d);
		return NULL;
	}
	root = build(&b, j);
	cJSON_Delete(j);
	return root;
}

struct cnode *cnode_load_json(struct arena *a, const char *path,
			      struct diag *d)
{
	struct scanner sc;
	struct cnode *root = NULL;
	const char *name;
	size_t len = 0;
	char *text = cnode_read_named(a, path, &name, &len, d);
	int rc;

	if (!text)
		return NULL;
	memset(&sc, 0, sizeof(sc));
	sc.s = text;
	sc.n = len;
	sc.line = sc.col = 1;
	sc.file = name;
	sc.d = d;
	sc.a = a;
	rc = scan(&sc);
	if (rc == 1)
		cnode_empty_document(name, d);
	else if (rc == 0)
		root = to_tree(a, &sc, d);
	mem_free(text);
	return root;
}
