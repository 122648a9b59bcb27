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

/* Split a tab-separated line into at most n fields; the count. */
static int fields(char *line, char **f, int n)
{
	char *save = NULL, *t;
	int k = 0;

	for (t = strtok_r(line, "\t\n", &save); t && k < n;
	     t = strtok_r(NULL, "\t\n", &save))
		f[k++] = t;
	return k;
}

/* Predict one case line into row v; 0, or -1 with why set. */
static int predict(struct config_ctx *cx, char **f, struct valid_row *v,
		   char *why, size_t whylen)
{
	struct system_spec *s = arena_alloc(cx->arena, system_schema.size);
	struct ep_comm_spec *e = arena_alloc(cx->arena, ep_comm_schema.size);
	char nodes[64], *esets[8], *save = NULL, *t;
	const char *sets[1] = { nodes };
	size_t nes = 0;
	struct ep_call c;
	struct ep_call_result r;
	struct net *n = NULL;
	uint32_t *gpus = NULL, i;
	int rc = -1;

	if (!s || !e) {
		diag_oom(cx->diag);
		return -1;
	}
	memset(s, 0, system_schema.size);
	memset(e, 0, ep_comm_schema.size);
	snprintf(nodes, sizeof(nodes), "nodes=%s", f[2]);
	if (config_load(cx, &system_schema, f[1], sets, 1, s) != 0 ||
	    !(t = strtok_r(f[5], ",", &save))) {
		snprintf(why, whylen, "system or dispatcher did not load");
		return -1;
	}
	while (nes < 8 && (esets[nes] = strtok_r(NULL, ",", &save)))
		nes++;
	if (config_load(cx, &ep_comm_schema, t, (const char **)esets, nes,
			e) != 0) {
		snprintf(why, whylen, "system or dispatcher did not load");
		return -1;
	}
	memset(&c, 0, sizeof(c));
	c.ranks = (uint32_t)atol(f[3]);
	c.gpus_per_node = (double)s->gpus_per_node;
	c.combine = strcmp(f[4], "combine") == 0;
	c.sms = atol(f[6]);
	c.tokens = atof(f[7]);
	c.hidden = atof(f[8]);
	c.routing.topk = atof(f[9]);
	c.routing.experts = atof(f[10]);
	c.routing.n_group = strcmp(f[11], "nodes") == 0 ? -1 : atof(f[11]);
	c.routing.topk_group = atof(f[12]);
	c.dtype = strncmp(f[13], "fp8", 3) == 0 ? DTYPE_FP8 : DTYPE_BF16;
	c.algo = c.proto = -1;
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
	char path[1024], line[2048], why[128];
	struct valid_table *t = NULL;
	FILE *fp;
	int ln = 0, rc = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (!(fp = fopen(path, "r")))
		return 0;
	while (fgets(line, sizeof(line), fp)) {
		char *f[NCOLS];
		struct valid_row *v;
		double measured = 0;
		int k;

		ln++;
		if (line[0] == '#' || line[strspn(line, " \t\r\n")] == '\0')
			continue;
		k = fields(line, f, NCOLS);
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
		if (predict(cx, f, v, why, sizeof(why)) != 0) {
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
