/*
 * valid_ep.c - predicted against measured MoE dispatch and combine
 * bandwidth: results/reference/ep/cases.tsv (gated: DeepEP's published
 * tables) and extra-cases.tsv (shown). Each line: id, system preset,
 * nodes, ranks, op (dispatch or combine), dispatcher (configs/ep, then
 * key=value settings of it after commas, e.g. the kernels' chunk size of
 * the version that was measured), SMs (0:
 * the dispatcher's), tokens per GPU, hidden, top-k, experts, groups
 * ("nodes": one per node; 0: none), top-k groups, dtype (bfloat16 or
 * fp8_e4m3), measured GB/s (DeepEP's logical "bottleneck bandwidth"), the
 * measured time in us or "-", the source. The prediction is
 * `llmsim collective --op dispatch|combine`'s algbw (models/ep.h
 * ep_call_time); error = predicted / measured - 1 of the bandwidth.
 */
#include "valid.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/diag.h"
#include "base/mem.h"
#include "config/config.h"
#include "config/spec_gpu.h"
#include "config/spec_moe.h"
#include "config/spec_system.h"
#include "models/ep.h"
#include "network/net.h"

#define NCOLS 17
#define NNUMS 9

static const char *const colname[NCOLS] = {"id", "system", "nodes", "ranks",
	"op", "dispatcher", "sms", "tokens", "hidden", "topk", "experts",
	"groups", "topk_groups", "dtype", "measured_GBps", "measured_us",
	"source"};

/* A case line's numbers, read once by numbers(): the system's nodes and
 * the call (all but its GPUs, which predict() places). */
struct ep_case {
	double nodes;			/* of the system preset */
	struct ep_call call;
};

/* Split a tab-separated line in place into at most n fields, empty ones
 * kept (strtok merged two tabs, shifting every later column), the line's
 * end cut; the last field keeps any further tabs. The count. */
static int fields(char *line, char **f, int n)
{
	int k = 0;
	char *tab;

	line[strcspn(line, "\r\n")] = '\0';
	for (;;) {
		f[k++] = line;
		if (k == n || !(tab = strchr(line, '\t')))
			return k;
		*tab = '\0';
		line = tab + 1;
	}
}

/* The numeric columns of a case line (nodes, ranks, SMs, tokens, hidden,
 * top-k, experts, groups unless "nodes", top-k groups), whole numbers up
 * to 1e9, and the dtype one llmsim knows, read into *k; 0, or -1 after
 * reporting at the field's column (atol read '1e3' ranks as 1, atof 'x'
 * tokens as 0 and any unknown dtype was BF16). */
static int numbers(char *const *f, const char *line, const char *path,
		   int ln, struct ep_case *k, struct diag *d)
{
	static const int cols[NNUMS] = {2, 3, 6, 7, 8, 9, 10, 11, 12};
	struct ep_call *c = &k->call;
	double x[NNUMS];
	size_t i;

	for (i = 0; i < NNUMS; i++) {
		const char *t = f[cols[i]];
		double lo = cols[i] == 2 ? 1 : 0;

		x[i] = -1;	/* groups "nodes": one group per node */
		if (cols[i] == 11 && strcmp(t, "nodes") == 0)
			continue;
		if (!valid_parse_number(t, lo, 1, &x[i]) || x[i] > 1e9) {
			diag_error(d, path, ln, (int)(t - line) + 1, "'%s': "
				   "expected a whole number from %g to 1e9%s, "
				   "got '%s'", colname[cols[i]], lo,
				   cols[i] == 11 ? " or 'nodes'" : "", t);
			return -1;
		}
	}
	if (strcmp(f[13], "bfloat16") != 0 && strcmp(f[13], "fp8_e4m3") != 0) {
		diag_error(d, path, ln, (int)(f[13] - line) + 1, "'dtype': "
			   "expected bfloat16 or fp8_e4m3, got '%s'", f[13]);
		return -1;
	}
	memset(k, 0, sizeof(*k));
	k->nodes = x[0];
	c->ranks = (uint32_t)x[1];
	c->sms = (int64_t)x[2];
	c->tokens = x[3];
	c->hidden = x[4];
	c->routing.topk = x[5];
	c->routing.experts = x[6];
	c->routing.n_group = x[7];
	c->routing.topk_group = x[8];
	c->dtype = strcmp(f[13], "fp8_e4m3") == 0 ? DTYPE_FP8 : DTYPE_BF16;
	c->combine = strcmp(f[4], "combine") == 0;
	c->algo = c->proto = -1;
	return 0;
}

/* Where a case's line is: a dispatcher setting's diagnostic names it. */
struct case_at {
	const char *path;
	int line;
	int col;			/* of the dispatcher column */
};

/* Predict case k of line fields f into row v; 0, or -1 with why set. */
static int predict(struct config_ctx *cx, char **f, const struct ep_case *k,
		   const struct case_at *at, struct valid_row *v, char *why,
		   size_t whylen)
{
	struct system_spec *s = arena_alloc(cx->arena, system_schema.size);
	struct ep_comm_spec *e = arena_alloc(cx->arena, ep_comm_schema.size);
	const char *nodes;
	struct ep_call c = k->call;
	struct ep_call_result r;
	struct net *n = NULL;
	uint32_t *gpus = NULL, i;
	int rc = -1;

	nodes = arena_printf(cx->arena, "nodes=%.0f", k->nodes);
	if (!s || !e || !nodes) {
		diag_oom(cx->diag);
		return -1;
	}
	memset(s, 0, system_schema.size);
	memset(e, 0, ep_comm_schema.size);
	if (config_load(cx, &system_schema, f[1], &nodes, 1, s) != 0) {
		snprintf(why, whylen, "system or dispatcher did not load");
		return -1;
	}
	if (config_load_named(cx, &ep_comm_schema, f[5], at->path, at->line,
			      at->col, e) != 0) {
		snprintf(why, whylen, "system or dispatcher did not load");
		return -1;
	}
	c.gpus_per_node = (double)s->gpus_per_node;
	if (c.ranks < 2 || c.ranks > system_gpus(s) || !(c.tokens > 0) ||
	    !(c.hidden > 0) || !(c.routing.topk > 0) ||
	    c.routing.topk > c.routing.experts) {
		snprintf(why, whylen, "bad case: ranks, tokens, hidden or top-k");
		return -1;
	}
	if (!ep_comm_spans_domain(e, c.ranks, s->gpus_per_node)) {
		snprintf(why, whylen, "the dispatcher does not span %lld GPUs "
			 "of one NVLink domain (scale_up_max_ranks)",
			 (long long)ep_comm_domain_ranks(c.ranks,
							 s->gpus_per_node));
		return -1;
	}
	gpus = mem_alloc(c.ranks * sizeof(*gpus));
	if (!gpus) {
		diag_oom(cx->diag);
		return -1;
	}
	for (i = 0; i < c.ranks; i++)
		gpus[i] = i;
	c.gpus = gpus;
	n = net_new(s, NULL, cx->diag);
	if (n && ep_call_time(n, e, &c, &r, cx->diag) == 0) {
		v->predicted = r.r.algbw_Bps / 1e9;
		rc = 0;
	} else {
		snprintf(why, whylen, "the fabric model refused it");
	}
	net_free(n);
	mem_free(gpus);
	return rc;
}

/* One cases file as a table; 0 (absent file: nothing), -1 after
 * reporting a bad line. */
static int do_file(struct valid_set *set, struct config_ctx *cx,
		   const char *dir, const char *name, int gated)
{
	char path[1024], why[128], *line = NULL;
	size_t cap = 0;
	struct valid_table *t = NULL;
	FILE *fp;
	int ln = 0, rc = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (!(fp = fopen(path, "r")))
		return 0;
	/* getline: a line of any length is one line (a 2 KiB fgets read the
	 * rest of a long one as a second, malformed line) */
	while (getline(&line, &cap, fp) > 0) {
		char *f[NCOLS];
		struct ep_case c;
		struct case_at at;
		struct valid_row *v;
		double measured = 0;
		int k, i;

		ln++;
		if (line[0] == '#' || line[strspn(line, " \t\r\n")] == '\0')
			continue;
		k = fields(line, f, NCOLS);
		for (i = 0; i < k && i < 15 && f[i][0]; i++)
			;
		if (i < k && i < 15) {
			diag_error(cx->diag, path, ln, (int)(f[i] - line) + 1,
				   "'%s': an empty field", colname[i]);
			rc = -1;
			break;
		}
		if (k < 15 || !valid_parse_measured(f[14], &measured) ||
		    (strcmp(f[4], "dispatch") && strcmp(f[4], "combine"))) {
			diag_error(cx->diag, path, ln, 1, "expected id, system, "
				   "nodes, ranks, dispatch|combine, dispatcher, "
				   "sms, tokens, hidden, topk, experts, groups, "
				   "topk_groups, dtype, measured GB/s, measured "
				   "us, source (tab-separated)");
			rc = -1;
			break;
		}
		if (numbers(f, line, path, ln, &c, cx->diag) != 0) {
			rc = -1;
			break;
		}
		if (!t) {
			if (!(t = valid_table_add(set, VK_DISPATCH, cx->diag))) {
				rc = -1;
				break;
			}
			snprintf(t->id, sizeof(t->id), "dispatch/%s", name);
			snprintf(t->title, sizeof(t->title), "MoE dispatch/combine "
				 "logical bandwidth, %s (%s)", gated ?
				 "DeepEP's published tables" :
				 "extra (not gated)", name);
			t->unit = "GB/s";
			t->gated = gated;
		}
		if (!(v = valid_row_add(t, cx->diag))) {
			rc = -1;
			break;
		}
		snprintf(v->label, sizeof(v->label), "%s", f[0]);
		v->measured = measured;
		v->in_sample = valid_is_fitted(set, f[0]);
		why[0] = '\0';
		at.path = path;
		at.line = ln;
		at.col = (int)(f[5] - line) + 1;
		if (predict(cx, f, &c, &at, v, why, sizeof(why)) != 0) {
			if (cx->diag->oom) {
				rc = -1;
				break;
			}
			v->predicted = NAN;
			v->scored = 0;
			v->failed = 1;
			snprintf(v->note, sizeof(v->note), "FAILED");
			fprintf(stderr, "llmsim: validate: %s did not run: %s\n",
				v->label, why);
			continue;
		}
		v->error = v->predicted / v->measured - 1;
	}
	free(line);	/* getline's, from malloc */
	fclose(fp);
	return rc;
}

int valid_dispatch(struct valid_set *set, struct config_ctx *cx,
		   const char *dir)
{
	if (do_file(set, cx, dir, "cases.tsv", 1) != 0)
		return -1;
	return do_file(set, cx, dir, "extra-cases.tsv", 0);
}
