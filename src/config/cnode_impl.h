/*
 * cnode_impl.h - what the cnode loaders share: reading and checking a
 * file's bytes, building nodes in the arena, duplicate-key checks.
 *
 * Private to the config loader's files (cnode*.c build trees with it,
 * config*.c build the override and merged mappings); not a contract.
 * Depends on cnode.h, diag.h, mem.h.
 */
#ifndef LLMSIM_CONFIG_CNODE_IMPL_H
#define LLMSIM_CONFIG_CNODE_IMPL_H

#include <stddef.h>
#include <stdio.h>

#include "cnode.h"

/* Largest config file read, B. Real configs are a few KiB. */
#define CNODE_MAX_FILE_B ((size_t)16 << 20)

/*
 * Read the regular file (or the pipe: /dev/stdin, <(...)) at path into a
 * NUL-terminated buffer from mem_alloc (the caller mem_frees it); *len
 * excludes the terminator. At most CNODE_MAX_FILE_B.
 * Checks the bytes with cnode_check_text. NULL after reporting to d.
 */
char *cnode_read_file(const char *path, size_t *len, struct diag *d);

/*
 * Read the stream f (a pipe, standard input) to its end, at most
 * CNODE_MAX_FILE_B, into a NUL-terminated buffer from mem_alloc; *len
 * excludes the terminator; name is what messages call it. The bytes are
 * not checked. NULL after reporting to d.
 */
char *cnode_read_stream(FILE *f, const char *name, size_t *len,
			struct diag *d);

/* cnode_read_file, with the path first copied into the arena (nodes name
 * their file by it) and returned in *name. */
char *cnode_read_named(struct arena *a, const char *path, const char **name,
		       size_t *len, struct diag *d);

/*
 * Check that text is UTF-8 with no NUL bytes and no control characters
 * other than tab, CR and LF (a byte order mark only at the start); the
 * first offence is reported at its line:col. 0 or -1.
 */
int cnode_check_text(const char *text, size_t len, const char *file,
		     struct diag *d);

/* cnode_check_text for text starting at line:col (1-based) of file. */
int cnode_check_text_at(const char *text, size_t len, const char *file,
			int line, int col, struct diag *d);

/*
 * cnode_parse_yaml for text that sits at line:col (1-based) of file, such
 * as a --set value after its key: nodes and messages carry positions in
 * file (columns shift on the text's first line only). file must outlive
 * the nodes (it is not copied).
 */
struct cnode *cnode_parse_yaml_at(struct arena *a, const char *text,
				  size_t len, const char *file, int line,
				  int col, struct diag *d);

/* Line and column (1-based, columns in characters) of byte off. */
void cnode_offset_pos(const char *text, size_t len, size_t off, int *line,
		      int *col);

/* Byte offset of 1-based line:col (columns in characters), clamped to
 * len. */
size_t cnode_pos_offset(const char *text, size_t len, int line, int col);

/* A zeroed node in the arena; NULL when out of memory. */
struct cnode *cnode_new(struct arena *a, enum cnode_kind kind,
			const char *file, int line, int col);

/* Append to a mapping or sequence whose array has *cap slots. 0 or -1
 * (out of memory). */
int cnode_map_add(struct arena *a, struct cnode *map, size_t *cap,
		  struct cnode *key, struct cnode *value);
int cnode_seq_add(struct arena *a, struct cnode *seq, size_t *cap,
		  struct cnode *item);

/* Report every key of map that repeats an earlier one (at the repeat,
 * with a note at the first). Returns how many, or -1 when out of memory
 * (reported). */
long cnode_check_duplicates(const struct cnode *map, struct diag *d);

/* "expected a mapping, got an empty document" at file:1:1. */
void cnode_empty_document(const char *file, struct diag *d);

#endif
