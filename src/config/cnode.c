/*
 * cnode.c - the parsed config tree: reading and checking files, building
 * and printing nodes. The YAML and JSON front ends are cnode_yaml.c and
 * cnode_json.c.
 *
 * Bytes are checked before any parser sees them (strict UTF-8, no NUL,
 * no control characters), so a bad byte is reported at its own line and
 * column instead of as a parser's byte offset. Columns count characters,
 * as libyaml's marks do.
 */
#include "cnode.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cnode_impl.h"
#include "base/diag.h"
#include "base/arena.h"
#include "base/mem.h"

/* Decode one UTF-8 sequence at s (n bytes available). Returns its length
 * and stores the code point, or 0 when the bytes are not UTF-8 (overlong
 * forms, surrogates and values past U+10FFFF included). */
static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
	static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
	size_t len, i;
	uint32_t c = s[0];

	if (c < 0x80)
		len = 1;
	else if ((c & 0xe0) == 0xc0)
		len = 2, c &= 0x1f;
	else if ((c & 0xf0) == 0xe0)
		len = 3, c &= 0x0f;
	else if ((c & 0xf8) == 0xf0)
		len = 4, c &= 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3fu);
	}
	if (c < min_cp[len] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

/* Characters YAML 1.2 allows in a stream (libyaml's reader agrees). */
static int printable(uint32_t c, size_t off)
{
	if (c == '\t' || c == '\n' || c == '\r')
		return 1;
	if (c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0 && c != 0x85))
		return 0;
	if (c == 0xfeff)
		return off == 0;	/* a byte order mark, only first */
	return c != 0xfffe && c != 0xffff;
}

/* Advance line/col over the character starting at text[i]. A CR LF pair
 * is one line break, as is a lone CR. */
static void step_pos(const char *text, size_t len, size_t i, int *line,
		     int *col)
{
	if (text[i] == '\n' ||
	    (text[i] == '\r' && (i + 1 >= len || text[i + 1] != '\n'))) {
		(*line)++;
		*col = 1;
	} else if (text[i] != '\r') {
		(*col)++;
	}
}

int cnode_check_text(const char *text, size_t len, const char *file,
		     struct diag *d)
{
	return cnode_check_text_at(text, len, file, 1, 1, d);
}

int cnode_check_text_at(const char *text, size_t len, const char *file,
			int line, int col, struct diag *d)
{
	const unsigned char *s = (const unsigned char *)text;
	size_t i = 0;

	while (i < len) {
		uint32_t c = 0;
		size_t n = utf8_decode(s + i, len - i, &c);

		if (n == 0) {
			diag_error(d, file, line, col, "invalid UTF-8 (byte "
				   "0x%02x): config files must be UTF-8 text",
				   s[i]);
			return -1;
		}
		if (c == 0) {
			diag_error(d, file, line, col, "NUL byte: config "
				   "files must be UTF-8 text");
			return -1;
		}
		if (!printable(c, i)) {
			diag_error(d, file, line, col, "control character "
				   "U+%04X is not allowed in a config file",
				   (unsigned)c);
			return -1;
		}
		step_pos(text, len, i, &line, &col);
		i += n;
	}
	return 0;
}

/* Bytes in the UTF-8 sequence starting with byte b (1 for stray bytes). */
static size_t seq_len(unsigned char b)
{
	if ((b & 0xe0) == 0xc0)
		return 2;
	if ((b & 0xf0) == 0xe0)
		return 3;
	if ((b & 0xf8) == 0xf0)
		return 4;
	return 1;
}

void cnode_offset_pos(const char *text, size_t len, size_t off, int *line,
		      int *col)
{
	size_t i = 0;

	*line = 1;
	*col = 1;
	while (i < off && i < len) {
		size_t n = seq_len((unsigned char)text[i]);
		step_pos(text, len, i, line, col);
		i += n;
	}
}

size_t cnode_pos_offset(const char *text, size_t len, int line, int col)
{
	int l = 1, c = 1;
	size_t i = 0;

	while (i < len && (l < line || (l == line && c < col))) {
		size_t n = seq_len((unsigned char)text[i]);
		step_pos(text, len, i, &l, &c);
		i += n;
	}
	return i < len ? i : len;
}

/* Open path: a regular file no larger than CNODE_MAX_FILE_B (its size in
 * *size), or a pipe or terminal (/dev/stdin, a shell's <(...): *size is
 * -1, read to its end). NULL after reporting. */
static FILE *open_input(const char *path, long long *size, struct diag *d)
{
	struct stat st;
	FILE *f;

	if (stat(path, &st) != 0) {
		diag_error(d, path, 0, 0, "cannot read: %s", strerror(errno));
		return NULL;
	}
	if (S_ISDIR(st.st_mode)) {
		diag_error(d, path, 0, 0, "is a directory, expected a "
			   "YAML or JSON file");
		return NULL;
	}
	if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode) ||
	    S_ISSOCK(st.st_mode)) {
		*size = -1;
	} else if (!S_ISREG(st.st_mode)) {
		diag_error(d, path, 0, 0, "not a regular file or a pipe");
		return NULL;
	} else if ((uintmax_t)st.st_size > CNODE_MAX_FILE_B) {
		diag_error(d, path, 0, 0, "file too large (%lld B; a config "
			   "is at most %zu B)", (long long)st.st_size,
			   CNODE_MAX_FILE_B);
		return NULL;
	} else {
		*size = (long long)st.st_size;
	}
	f = fopen(path, "rb");
	if (!f)
		diag_error(d, path, 0, 0, "cannot read: %s", strerror(errno));
	return f;
}

/* Read a regular file of size bytes into buf (size + 1 B), noticing one
 * that changed size. 0 or -1 after reporting. */
static int read_sized(FILE *f, const char *path, char *buf, size_t size,
		      struct diag *d)
{
	size_t got = fread(buf, 1, size, f);

	/* Read one byte more than stat said, to notice a file that grew. */
	if (ferror(f) || got != size || fgetc(f) != EOF) {
		diag_error(d, path, 0, 0, "cannot read: %s",
			   ferror(f) ? strerror(errno) : "file changed size "
			   "while being read");
		return -1;
	}
	return 0;
}

char *cnode_read_stream(FILE *f, const char *path, size_t *len,
			struct diag *d)
{
	size_t cap = 0, n = 0, got;
	char *buf = NULL, *nb;

	do {
		if (n > CNODE_MAX_FILE_B) {
			diag_error(d, path, 0, 0, "input too large (a config "
				   "is at most %zu B)", CNODE_MAX_FILE_B);
			goto fail;
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 4096;
			if (!(nb = mem_realloc(buf, cap + 1))) {
				diag_oom(d);
				goto fail;
			}
			buf = nb;
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
	} while (got > 0);
	if (ferror(f)) {
		diag_error(d, path, 0, 0, "cannot read: %s", strerror(errno));
		goto fail;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
fail:
	mem_free(buf);
	return NULL;
}

char *cnode_read_file(const char *path, size_t *len, struct diag *d)
{
	long long size = 0;
	size_t n;
	char *buf = NULL;
	FILE *f = open_input(path, &size, d);

	if (!f)
		return NULL;
	if (size < 0) {
		buf = cnode_read_stream(f, path, &n, d);
	} else {
		n = (size_t)size;
		if (!(buf = mem_alloc(n + 1)))
			diag_oom(d);
		else if (read_sized(f, path, buf, n, d) != 0)
			goto fail;
	}
	if (!buf)
		goto out;
	buf[n] = '\0';
	if (cnode_check_text(buf, n, path, d) != 0)
		goto fail;
	*len = n;
	goto out;
fail:
	mem_free(buf);
	buf = NULL;
out:
	fclose(f);
	return buf;
}

struct cnode *cnode_new(struct arena *a, enum cnode_kind kind,
			const char *file, int line, int col)
{
	struct cnode *n = arena_alloc(a, sizeof(*n));

	if (n) {
		n->kind = kind;
		n->file = file;
		n->line = line;
		n->col = col;
	}
	return n;
}

int cnode_map_add(struct arena *a, struct cnode *map, size_t *cap,
		  struct cnode *key, struct cnode *value)
{
	void *p = map->pairs;

	if (arena_grow(a, &p, cap, map->npairs + 1, sizeof(*map->pairs)) != 0)
		return -1;
	map->pairs = p;
	map->pairs[map->npairs].key = key;
	map->pairs[map->npairs].value = value;
	map->npairs++;
	return 0;
}

int cnode_seq_add(struct arena *a, struct cnode *seq, size_t *cap,
		  struct cnode *item)
{
	void *p = seq->items;

	if (arena_grow(a, &p, cap, seq->nitems + 1, sizeof(*seq->items)) != 0)
		return -1;
	seq->items = p;
	seq->items[seq->nitems++] = item;
	return 0;
}

static void duplicate(const struct cnode *first, const struct cnode *again,
		      struct diag *d)
{
	diag_error(d, again->file, again->line, again->col,
		   "'%s': duplicate key; give each key once", again->text);
	diag_note(d, first->file, first->line, first->col,
		  "'%s' was first given here", first->text);
}

/* Sort order for the duplicate check: by key text, then document order. */
static int by_key(const void *pa, const void *pb)
{
	const struct cnode_pair *a = *(const struct cnode_pair *const *)pa;
	const struct cnode_pair *b = *(const struct cnode_pair *const *)pb;
	int c = strcmp(a->key->text, b->key->text);

	if (c != 0)
		return c;
	return a < b ? -1 : a > b;
}

long cnode_check_duplicates(const struct cnode *map, struct diag *d)
{
	const struct cnode_pair **v;
	size_t i, j, n = map->npairs;
	long dups = 0;

	if (n <= 16) {	/* the usual case: quadratic and allocation-free */
		for (i = 1; i < n; i++)
			for (j = 0; j < i; j++)
				if (strcmp(map->pairs[i].key->text,
					   map->pairs[j].key->text) == 0) {
					duplicate(map->pairs[j].key,
						  map->pairs[i].key, d);
					dups++;
					break;
				}
		return dups;
	}
	v = mem_alloc(n * sizeof(*v));
	if (!v) {
		diag_oom(d);
		return -1;
	}
	for (i = 0; i < n; i++)
		v[i] = &map->pairs[i];
	qsort(v, n, sizeof(*v), by_key);
	for (i = 1, j = 0; i < n; i++) {
		if (strcmp(v[i]->key->text, v[j]->key->text) != 0) {
			j = i;	/* first of a new run of equal keys */
			continue;
		}
		duplicate(v[j]->key, v[i]->key, d);
		dups++;
	}
	mem_free(v);
	return dups;
}

void cnode_empty_document(const char *file, struct diag *d)
{
	diag_error(d, file, 1, 1, "expected a mapping, got an empty document");
}

struct cnode *cnode_get(const struct cnode *map, const char *key)
{
	size_t i;

	if (!map || map->kind != CNODE_MAP)
		return NULL;
	for (i = 0; i < map->npairs; i++)
		if (strcmp(map->pairs[i].key->text, key) == 0)
			return map->pairs[i].value;
	return NULL;
}

char *cnode_read_named(struct arena *a, const char *path, const char **name,
		       size_t *len, struct diag *d)
{
	*name = arena_strdup(a, path);
	if (!*name) {
		diag_oom(d);
		return NULL;
	}
	return cnode_read_file(*name, len, d);
}
/* Print a scalar: plain when written plain, else double-quoted with C-like
 * escapes (enough for debugging and tests; not a full YAML emitter). */
static void print_scalar(FILE *out, const struct cnode *n)
{
	const unsigned char *p = (const unsigned char *)n->text;

	if (!n->quoted && *p) {
		fputs(n->text, out);
		return;
	}
	fputc('"', out);
	for (; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(out, "\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", out);
		else if (*p < 0x20)
			fprintf(out, "\\x%02x", *p);
		else
			fputc(*p, out);
	}
	fputc('"', out);
}

static void print_node(FILE *out, const struct cnode *n, int indent);

/* A value after "key:" or "-": scalars and empty collections inline,
 * the rest on the following lines, indented. */
static void print_value(FILE *out, const struct cnode *v, int indent)
{
	if (v->kind == CNODE_SCALAR) {
		fputc(' ', out);
		print_scalar(out, v);
		fputc('\n', out);
	} else if ((v->kind == CNODE_MAP && v->npairs == 0) ||
		   (v->kind == CNODE_SEQ && v->nitems == 0)) {
		fputs(v->kind == CNODE_MAP ? " {}\n" : " []\n", out);
	} else {
		fputc('\n', out);
		print_node(out, v, indent + 2);
	}
}

static void print_node(FILE *out, const struct cnode *n, int indent)
{
	size_t i;

	switch (n->kind) {
	case CNODE_SCALAR:
		fprintf(out, "%*s", indent, "");
		print_scalar(out, n);
		fputc('\n', out);
		break;
	case CNODE_MAP:
		for (i = 0; i < n->npairs; i++) {
			fprintf(out, "%*s", indent, "");
			print_scalar(out, n->pairs[i].key);
			fputc(':', out);
			print_value(out, n->pairs[i].value, indent);
		}
		break;
	case CNODE_SEQ:
		for (i = 0; i < n->nitems; i++) {
			fprintf(out, "%*s-", indent, "");
			print_value(out, n->items[i], indent);
		}
		break;
	}
}

void cnode_print(FILE *out, const struct cnode *n, int indent)
{
	if ((n->kind == CNODE_MAP && n->npairs == 0) ||
	    (n->kind == CNODE_SEQ && n->nitems == 0))
		fprintf(out, "%*s%s\n", indent, "",
			n->kind == CNODE_MAP ? "{}" : "[]");
	else
		print_node(out, n, indent);
}

void cnode_error(struct diag *d, const struct cnode *at, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	diag_error(d, at ? at->file : NULL, at ? at->line : 0,
		   at ? at->col : 0, "%s", msg);
}

int cnode_is_null(const struct cnode *n)
{
	static const char *const nulls[] = {"", "~", "null", "Null", "NULL"};
	size_t i;

	if (n->kind != CNODE_SCALAR || n->quoted)
		return 0;
	for (i = 0; i < sizeof(nulls) / sizeof(nulls[0]); i++)
		if (strcmp(n->text, nulls[i]) == 0)
			return 1;
	return 0;
}
