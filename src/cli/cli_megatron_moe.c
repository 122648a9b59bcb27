/*
 * cli_megatron_moe.c - Megatron-LM's --moe-layer-freq pattern for
 * `llmsim config import-megatron`: which layers are MoE.
 *
 * Megatron (megatron/training/arguments.py moe_freq_type, NVIDIA/
 * Megatron-LM @ 2a75ac12c) takes a whole number N (layer i is MoE when
 * i % N == 0: llmsim's model.moe_layer_freq) or a Python list expression
 * of 1 (MoE) and 0 (dense) items, evaluated, whose length must be the
 * layer count (gpt_layer_specs.py get_gpt_decoder_layer_specs asserts
 * it): "([0]*3+[1]*58)" is DeepSeek-V3's three dense layers first,
 * "([1]*3+[0]*1)*3" repeats a group. This reads the subset such patterns
 * use, without evaluating Python:
 *
 *     sum    := prod ('+' prod)*
 *     prod   := (factor | N '*' factor) ('*' N)*
 *     factor := '[' [item (',' item)*] ']' | '(' sum ')'
 *     item   := 0 | 1
 *
 * and returns the MoE layers as model.moe_layers wants them, "[3, 4, ...]".
 */
#include "cli_megatron.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "base/arena.h"

#define PATTERN_MAX 100000	/* layers (model.num_hidden_layers' bound) */

struct pat {
	const char *s;
	unsigned char *v;	/* the items so far */
	long n;
	int depth;		/* parentheses open */
	const char *err;	/* the first error, or NULL */
};

static void skip(struct pat *p)
{
	while (isspace((unsigned char)*p->s))
		p->s++;
}

static int eat(struct pat *p, char c)
{
	skip(p);
	if (*p->s != c)
		return 0;
	p->s++;
	return 1;
}

/* A whole number of at most 6 digits, or -1. */
static long number(struct pat *p)
{
	long x = 0;
	int k = 0;

	skip(p);
	while (isdigit((unsigned char)*p->s) && k < 7) {
		x = 10 * x + (*p->s++ - '0');
		k++;
	}
	return k == 0 || k > 6 ? -1 : x;
}

static int sum(struct pat *p);

/* Repeat the items from `from` on until there are `times` copies. */
static int repeat(struct pat *p, long from, long times)
{
	long len = p->n - from, t;

	if (times < 0 || (len > 0 && times > PATTERN_MAX / len + 1) ||
	    from + len * times > PATTERN_MAX) {
		p->err = "more layers than a model can have";
		return -1;
	}
	for (t = 1; t < times; t++) {
		memcpy(p->v + p->n, p->v + from, (size_t)len);
		p->n += len;
	}
	if (times == 0)
		p->n = from;
	return 0;
}

static int factor(struct pat *p)
{
	long x;

	if (eat(p, '(')) {
		if (++p->depth > 64) {	/* a bounded recursion */
			p->err = "parentheses nested deeper than 64";
			return -1;
		}
		if (sum(p) != 0)
			return -1;
		p->depth--;
		if (!eat(p, ')')) {
			p->err = "expected ')'";
			return -1;
		}
		return 0;
	}
	if (!eat(p, '[')) {
		p->err = "expected '[' or '('";
		return -1;
	}
	if (eat(p, ']'))
		return 0;
	do {
		x = number(p);
		if (x != 0 && x != 1) {
			p->err = "a list item is not 0 or 1";
			return -1;
		}
		if (p->n >= PATTERN_MAX) {
			p->err = "more layers than a model can have";
			return -1;
		}
		p->v[p->n++] = (unsigned char)x;
	} while (eat(p, ','));
	if (!eat(p, ']')) {
		p->err = "expected ']'";
		return -1;
	}
	return 0;
}

static int prod(struct pat *p)
{
	long from = p->n, times;

	skip(p);
	if (isdigit((unsigned char)*p->s)) {	/* N * factor */
		times = number(p);
		if (times < 0 || !eat(p, '*')) {
			p->err = "expected a count and '*'";
			return -1;
		}
		if (factor(p) != 0 || repeat(p, from, times) != 0)
			return -1;
	} else if (factor(p) != 0) {
		return -1;
	}
	while (eat(p, '*')) {
		times = number(p);
		if (times < 0) {
			p->err = "expected a count after '*'";
			return -1;
		}
		if (repeat(p, from, times) != 0)
			return -1;
	}
	return 0;
}

static int sum(struct pat *p)
{
	do {
		if (prod(p) != 0)
			return -1;
	} while (eat(p, '+'));
	return 0;
}

const char *cli_megatron_moe_layers(struct arena *a, const char *s,
				    long *layers, const char **err)
{
	struct pat p = { .s = s };
	size_t cap, at = 0;
	char *out;
	long i, moe = 0;

	*err = NULL;
	p.v = arena_alloc(a, PATTERN_MAX);
	if (!p.v)
		return NULL;
	if (sum(&p) != 0) {
		*err = p.err;
		return NULL;
	}
	skip(&p);
	if (*p.s) {
		*err = "unexpected text after the pattern";
		return NULL;
	}
	for (i = 0; i < p.n; i++)
		moe += p.v[i];
	if (moe == 0) {
		*err = "no MoE layer";
		return NULL;
	}
	cap = (size_t)moe * 8 + 3;
	out = arena_alloc(a, cap);
	if (!out)
		return NULL;
	out[at++] = '[';
	for (i = 0; i < p.n; i++)
		if (p.v[i])
			at += (size_t)snprintf(out + at, cap - at, "%s%ld",
					       at > 1 ? ", " : "", i);
	snprintf(out + at, cap - at, "]");
	*layers = p.n;
	return out;
}
