/*
 * config_testutil.h - helpers the config loader's tests share: diagnostics
 * captured into memory, and throwaway files in a temporary directory.
 */
#ifndef LLMSIM_CONFIG_TESTUTIL_H
#define LLMSIM_CONFIG_TESTUTIL_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/diag.h"
#include "base/arena.h"
#include "base/mem.h"
#include "config/config.h"
#include "config/schema.h"

/*
 * Under AddressSanitizer (make check), ask LeakSanitizer now whether
 * anything allocated is unreachable, and fail the test if so: a leak
 * report at a Criterion worker's exit does not fail the test by itself.
 * Without the sanitizer this checks nothing.
 */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define assert_no_leaks()                                                  \
	cr_assert_eq(__lsan_do_recoverable_leak_check(), 0,                \
		     "LeakSanitizer found leaks (see above)")
#else
#define assert_no_leaks() ((void)0)
#endif

struct capture {
	char *buf;		/* what was printed (open_memstream) */
	size_t len;		/* its length, bytes */
	FILE *f;		/* the stream diagnostics print to */
	struct diag d;		/* prints into f */
};

static inline void capture_begin(struct capture *c)
{
	c->buf = NULL;
	c->len = 0;
	c->f = open_memstream(&c->buf, &c->len);
	cr_assert_not_null(c->f);
	diag_init(&c->d, c->f);
}

/* Everything printed so far, NUL-terminated. */
static inline const char *capture_text(struct capture *c)
{
	fflush(c->f);
	return c->buf ? c->buf : "";
}

static inline void capture_end(struct capture *c)
{
	fclose(c->f);
	free(c->buf);
}

/* What each test starts with: an arena and captured diagnostics. */
static struct arena A;
static struct capture C;

static inline void fixture_init(void)
{
	arena_init(&A);
	capture_begin(&C);
}

static inline void fixture_fini(void)
{
	capture_end(&C);
	arena_release(&A);
	mem_fail_after(-1);
}

/* A loader context on A and C reading presets from data_root: what the
 * config and HF-model suites (and the models' suites that load presets)
 * start with (five copies of the same setup before). */
static struct config_ctx CX;

static inline void fixture_cx_init(const char *data_root)
{
	fixture_init();
	CX.arena = &A;
	CX.diag = &C.d;
	CX.data_root = data_root;
}

#define cr_assert_has(text, needle)                                        \
	cr_assert(strstr((text), (needle)) != NULL,                        \
		  "expected to find\n  %s\nin\n%s", (needle), (text))

/* A fresh temporary directory (removed by tmpdir_remove). */
static inline void tmpdir_make(char dir[64])
{
	snprintf(dir, 64, "/tmp/llmsim-test-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static inline void tmpdir_remove(const char *dir)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

/* Write len bytes of text to dir/name; returns the path (static buffer
 * per call site is the caller's: out of 256 bytes). */
static inline void write_file(char out[256], const char *dir,
			      const char *name, const char *text, size_t len)
{
	FILE *f;

	snprintf(out, 256, "%s/%s", dir, name);
	f = fopen(out, "wb");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(text, 1, len, f), len);
	cr_assert_eq(fclose(f), 0);
}

/* Field-by-field equality of two structs of kind s. */
static inline void assert_same(const struct schema *s, const void *a,
			       const void *b)
{
	size_t i;

	for (i = 0; i < s->nfields; i++) {
		const struct schema_field *f = &s->fields[i];
		const char *pa = (const char *)a + f->offset;
		const char *pb = (const char *)b + f->offset;
		const struct schema_int_list *la = (const void *)pa;
		const struct schema_int_list *lb = (const void *)pb;
		const char *sa = NULL, *sb = NULL;

		if (f->type == ST_STRING || f->type == ST_REF) {
			sa = *(const char *const *)(const void *)pa;
			sb = *(const char *const *)(const void *)pb;
		}

		switch (f->type) {
		case ST_STRING:
			cr_assert((!sa && !sb) || (sa && sb && !strcmp(sa, sb)),
				  "'%s' differs", f->key);
			break;
		case ST_INT_LIST:
			cr_assert_eq(la->n, lb->n, "'%s' differs", f->key);
			cr_assert(!la->n || !memcmp(la->v, lb->v,
						    la->n * sizeof(*la->v)));
			break;
		case ST_SECTION:
			assert_same(f->sub, pa, pb);
			break;
		case ST_REF:
			cr_assert_eq(!sa, !sb, "'%s' differs", f->key);
			if (sa)
				assert_same(f->sub, sa, sb);
			break;
		case ST_INT:
			cr_assert_eq(*(const int64_t *)(const void *)pa,
				     *(const int64_t *)(const void *)pb,
				     "'%s' differs", f->key);
			break;
		case ST_BOOL:
		case ST_ENUM:
			cr_assert_eq(*(const int *)(const void *)pa,
				     *(const int *)(const void *)pb,
				     "'%s' differs", f->key);
			break;
		default:
			cr_assert_eq(*(const double *)(const void *)pa,
				     *(const double *)(const void *)pb,
				     "'%s' differs", f->key);
			break;
		}
	}
}

#endif
