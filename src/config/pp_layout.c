/*
 * pp_layout.c - parse a pipeline_model_parallel_layout string.
 *
 * Two passes over growing buffers, as Megatron's two regular expressions:
 * first every "(group)*n" is replaced by n copies of its group, then
 * every "x*n" by n copies of x. The unrolled string is then read one
 * character a layer, '|' closing a virtual stage.
 */
#include "pp_layout.h"

#include <stdio.h>
#include <string.h>

#include "base/mem.h"

struct buf {
	char *p;
	size_t n, cap;
};

/* Append len bytes of s; 0, -1 over PP_LAYOUT_MAX_CHARS, -2 out of memory. */
static int put(struct buf *b, const char *s, size_t len)
{
	if (b->n + len > PP_LAYOUT_MAX_CHARS)
		return -1;
	if (b->n + len + 1 > b->cap) {
		size_t cap = 2 * (b->n + len + 1);
		char *p = mem_realloc(b->p, cap);

		if (!p)
			return -2;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->n, s, len);
	b->n += len;
	b->p[b->n] = '\0';
	return 0;
}

/* The count after '*' at s[*i] (the '*' itself); advances *i past it.
 * -1 when there is none. A count may be 0 (Megatron's "\d+": "t*0" is
 * no layer). */
static long star_count(const char *s, size_t *i)
{
	long n = 0;
	size_t k = *i;

	if (s[k] != '*' || s[k + 1] < '0' || s[k + 1] > '9')
		return -1;
	for (k++; s[k] >= '0' && s[k] <= '9'; k++) {
		n = 10 * n + (s[k] - '0');
		if (n > PP_LAYOUT_MAX_CHARS)
			return PP_LAYOUT_MAX_CHARS + 1;
	}
	*i = k;
	return n;
}

/* n copies of s[0..len-1] appended; codes as put(). */
static int repeat(struct buf *b, const char *s, size_t len, long n)
{
	long r;
	int rc = 0;

	if (n > PP_LAYOUT_MAX_CHARS || (long)len * n > PP_LAYOUT_MAX_CHARS)
		return -1;
	for (r = 0; r < n && rc == 0; r++)
		rc = put(b, s, len);
	return rc;
}

/* Pass 1: commas out, groups unrolled into b. */
static int unroll_groups(const char *s, struct buf *b, char *why, size_t wl)
{
	size_t i = 0, close;
	long n;
	int rc;

	while (s[i]) {
		if (s[i] == ',') {
			i++;
			continue;
		}
		if (s[i] == ')') {
			snprintf(why, wl, "')' at %zu closes no group", i + 1);
			return -1;
		}
		if (s[i] != '(') {
			rc = put(b, s + i, 1);
			if (rc != 0)
				goto big;
			i++;
			continue;
		}
		for (close = i + 1; s[close] && s[close] != ')'; close++)
			if (s[close] == '(') {
				snprintf(why, wl, "groups do not nest ('(' at %zu)",
					 close + 1);
				return -1;
			}
		if (!s[close] || close == i + 1) {
			snprintf(why, wl, "the group at %zu is %s", i + 1,
				 s[close] ? "empty" : "not closed");
			return -1;
		}
		{
			size_t at = close + 1, k;
			struct buf g = {0};

			n = star_count(s, &at);
			if (n < 0) {
				snprintf(why, wl, "the group at %zu needs '*n' "
					 "after it", i + 1);
				return -1;
			}
			rc = 0;
			for (k = i + 1; k < close; k++)	/* its commas out */
				if (s[k] != ',' && (rc = put(&g, s + k, 1)) != 0)
					break;
			if (rc == 0)
				rc = repeat(b, g.p ? g.p : "", g.n, n);
			mem_free(g.p);
			if (rc != 0)
				goto big;
			i = at;
		}
	}
	return 0;
big:
	if (rc == -2)
		return -2;
	snprintf(why, wl, "it unrolls to more than %d characters",
		 PP_LAYOUT_MAX_CHARS);
	return -1;
}

/* Pass 2: "x*n" unrolled from a into b. */
static int unroll_chars(const char *a, struct buf *b, char *why, size_t wl)
{
	size_t i = 0, at;
	long n;
	int rc;

	while (a[i]) {
		at = i + 1;
		n = star_count(a, &at);
		if (a[i] == '*') {
			snprintf(why, wl, "'*' repeats nothing");
			return -1;
		}
		if (n < 0 && a[i + 1] == '*') {
			snprintf(why, wl, "'*' after '%c' needs a count", a[i]);
			return -1;
		}
		rc = repeat(b, a + i, 1, n >= 0 ? n : 1);
		if (rc == -2)
			return -2;
		if (rc != 0) {
			snprintf(why, wl, "it unrolls to more than %d characters",
				 PP_LAYOUT_MAX_CHARS);
			return -1;
		}
		i = at;
	}
	return 0;
}

/* Read the unrolled layout u into out and counts. */
static int read_layers(const char *u, struct pp_layout *out, int64_t *counts,
		       int64_t max_stages, char *why, size_t wl)
{
	int64_t st = 0, in_stage = 0, held = 0;
	size_t i, len = strlen(u);

	memset(out, 0, sizeof(*out));
	out->mtp_stage = -1;
	out->empty_stage = -1;
	out->bare_stage = -1;
	out->mtp_one_stage = 1;
	out->mtp_after_layers = 1;
	if (counts && max_stages > 0)
		counts[0] = 0;
	for (i = 0; i <= len; i++) {
		char c = u[i];

		if (c == '|' || c == '\0') {
			if (in_stage == 0 && st > 0 && c == '|' &&
			    out->empty_stage < 0)
				out->empty_stage = st;
			if (held == 0 && out->bare_stage < 0)
				out->bare_stage = st;
			if (c == '\0')
				break;
			st++;
			in_stage = 0;
			held = 0;
			if (counts && st < max_stages)
				counts[st] = 0;
			continue;
		}
		held++;
		switch (c) {
		case 'E':
			out->embeddings++;
			out->embedding_first = i == 0;
			break;
		case 'L':
			out->losses++;
			out->loss_last = i + 1 == len;
			break;
		case 't':
			out->layers++;
			in_stage++;
			if (out->mtp > 0)
				out->mtp_after_layers = 0;
			if (counts && st < max_stages)
				counts[st]++;
			break;
		case 'm':
			if (out->mtp_stage < 0)
				out->mtp_stage = st;
			else if (out->mtp_stage != st)
				out->mtp_one_stage = 0;
			out->mtp++;
			break;
		default:
			snprintf(why, wl, "'%c' is not a layer: E (embedding), "
				 "t (decoder layer), m (MTP module), L (loss), "
				 "'|' between stages", c);
			return -1;
		}
	}
	out->stages = st + 1;
	return 0;
}

int pp_layout_parse(const char *s, struct pp_layout *out, int64_t *counts,
		    int64_t max_stages, char *why, size_t why_len)
{
	struct buf a = {0}, b = {0};
	int rc;

	why[0] = '\0';
	rc = unroll_groups(s, &a, why, why_len);
	if (rc == 0)
		rc = unroll_chars(a.p ? a.p : "", &b, why, why_len);
	if (rc == 0)
		rc = read_layers(b.p ? b.p : "", out, counts, max_stages, why,
				 why_len);
	mem_free(a.p);
	mem_free(b.p);
	return rc;
}

int64_t pp_layout_stages(const char *s)
{
	struct pp_layout l;
	char why[160];

	return pp_layout_parse(s, &l, NULL, 0, why, sizeof(why)) == 0 ?
		l.stages : -1;
}
