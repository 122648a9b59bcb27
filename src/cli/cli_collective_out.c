/*
 * cli_collective_out.c - what `llmsim collective` prints and stores
 * (cli_collective.h): the rccl-tests table (size, count, type, redop,
 * root, then time, algbw, busbw and #wrong for out-of-place and in-place;
 * dispatch and combine with their path and routing), CSV, the --json
 * object around the rows, and the stored config (the system and the
 * collective asked for, so config hashes tell runs apart).
 */
#include "cli.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "base/diag.h"
#include "base/sha256.h"
#include "config/schema.h"
#include "config/spec_job.h"
#include "config/spec_moe.h"
#include "config/spec_system.h"
#include "store/store.h"

#include "cli_collective.h"

const char *const coll_redop_names[] = {
	"sum", "prod", "min", "max", "avg", NULL,
};

/* nccl-tests print redop "none" and root -1 where they do not apply. */
const char *coll_redop(const struct opts *o)
{
	if (o->ep == EP_OP_NONE && (o->op == COLL_ALLREDUCE ||
				    o->op == COLL_REDUCESCATTER ||
				    o->op == COLL_REDUCE))
		return coll_redop_names[o->redop];
	return "none";
}

long coll_root(const struct opts *o)
{
	return o->ep == EP_OP_NONE && (o->op == COLL_BROADCAST ||
				       o->op == COLL_REDUCE) ? o->root : -1;
}

/* The op as the user named it. */
const char *coll_op_name(const struct opts *o)
{
	if (o->ep == EP_OP_DISPATCH)
		return "dispatch";
	if (o->ep == EP_OP_COMBINE)
		return "combine";
	return coll_op_names[o->op];
}

const char *const coll_tester_names[TESTER_COUNT + 1] = {
	"elements", "nccl-tests", "rccl-tests", NULL,
};

/* Whether the rows' sizes follow a tester's per-rank rounding (--tester):
 * all-gather, reduce-scatter and all-to-all, not dispatch / combine. */
static int split_op(const struct opts *o)
{
	return o->ep == EP_OP_NONE && o->tester >= 0 &&
	       (o->op == COLL_ALLGATHER || o->op == COLL_REDUCESCATTER ||
		o->op == COLL_ALLTOALL);
}

/* dispatch / combine: the routing and the path in the table's head. */
static void print_ep_head(const struct opts *o, const struct ep_comm_spec *e,
			  const struct row *rows, int n)
{
	long sms = o->sms ? o->sms : (long)e->sms;

	printf("# %s path %s (%s, dedup %s, ", coll_op_name(o),
	       e->name ? e->name : "(inline)", ep_mode_names[e->mode],
	       ep_dedup_names[e->dedup]);
	if (sms)
		printf("%ld SMs", sms);
	else
		printf("the library's SMs");
	printf("%s), top-%g of %g experts, hidden %g", e->gpu_initiated ?
	       ", GPU-initiated" : "", o->topk, o->experts, o->hidden);
	if (o->groups)
		printf(", top-%g of %s groups", o->topk_groups,
		       o->groups < 0 ? "node" : "the");
	if (o->gate == GATE_ROUND_ROBIN)
		printf(", round-robin gate");
	printf("\n# a token reaches %.2f GPUs, %.2f nodes on average; size: "
	       "DeepEP's logical bytes per GPU, algbw = size / time\n#\n",
	       n ? rows[0].ep.ranks_hit : 0, n ? rows[0].ep.nodes_hit : 0);
	printf("#%11s %13s %9s %11s %11s %11s  %-12s %s\n", "size", "tokens",
	       "type", "time", "algbw", "busbw", "path", "protocol");
}

/* dispatch / combine: main's table (path, tokens) after the head. */
static void print_ep_rows(const struct opts *o, const struct ep_comm_spec *e,
			  const struct row *rows, int n)
{
	int i;

	print_ep_head(o, e, rows, n);
	printf("#%11s %13s %9s %11s %11s %11s\n", "(B)", "(per GPU)", "",
	       "(us)", "(GB/s)", "(GB/s)");
	for (i = 0; i < n; i++)
		printf("%12.0f %13.0f %9s %11.2f %11.2f %11.2f  %-12s %s\n",
		       rows[i].size_B, rows[i].count, o->dtype,
		       rows[i].r.time_s * 1e6, rows[i].r.algbw_Bps / 1e9,
		       rows[i].r.busbw_Bps / 1e9, rows[i].r.algorithm,
		       rows[i].r.protocol);
}

/* A collective: rccl-tests' columns, out-of-place and in-place. */
static void print_coll_rows(const struct opts *o, const struct row *rows,
			    int n)
{
	int i, k;

	printf("# out-of-place and in-place are the same prediction (llmsim "
	       "does not model the\n# difference); #wrong is N/A (nothing is "
	       "checked).\n");
	if (split_op(o))
		printf("# sizes a rank as %s runs them (--tester)\n",
		       coll_tester_names[o->tester]);
	printf("#\n");
	printf("#%62s%34s\n", "out-of-place", "in-place");
	printf("#%11s %13s %9s %6s %6s", "size", "count", "type", "redop",
	       "root");
	for (k = 0; k < 2; k++)
		printf(" %9s %7s %7s %6s", "time", "algbw", "busbw", "#wrong");
	printf("  %-12s %s\n", "algorithm", "protocol");
	printf("#%11s %13s %9s %6s %6s", "(B)", "(elements)", "", "", "");
	for (k = 0; k < 2; k++)
		printf(" %9s %7s %7s %6s", "(us)", "(GB/s)", "(GB/s)", "");
	printf("\n");
	for (i = 0; i < n; i++) {
		printf("%12.0f %13.0f %9s %6s %6ld", rows[i].size_B,
		       rows[i].count, o->dtype, coll_redop(o), coll_root(o));
		for (k = 0; k < 2; k++)
			printf(" %9.2f %7.2f %7.2f %6s", rows[i].r.time_s * 1e6,
			       rows[i].r.algbw_Bps / 1e9,
			       rows[i].r.busbw_Bps / 1e9, "N/A");
		printf("  %-12s %s\n", rows[i].r.algorithm, rows[i].r.protocol);
	}
}

static void print_table(const struct opts *o, const struct system_spec *s,
			const struct ep_comm_spec *e, const struct row *rows,
			int n)
{
	double sum = 0;
	int i;

	printf("# llmsim collective: %s, %ld ranks on %s (%lld node%s x %lld "
	       "GPUs), library %s\n", coll_op_name(o), o->ranks,
	       s->name ? s->name : o->system, (long long)s->nodes,
	       s->nodes == 1 ? "" : "s", (long long)s->gpus_per_node,
	       s->collectives->name ? s->collectives->name : "(inline)");
	if (e) {
		printf("#\n");
		print_ep_rows(o, e, rows, n);
	} else {
		print_coll_rows(o, rows, n);
	}
	for (i = 0; i < n; i++)
		sum += rows[i].r.busbw_Bps / 1e9;
	/* rccl-tests prints the number alone; the unit follows it, so a
	 * parser reading the number after the colon still reads it */
	printf("# Avg bus bandwidth    : %g GB/s\n", n ? sum / n : 0.0);
}

static void print_csv(const struct opts *o, const struct row *rows, int n)
{
	int i;

	puts("size_B,count,type,time_us,algbw_GBps,busbw_GBps,algorithm,"
	     "protocol,redop,root");
	for (i = 0; i < n; i++)
		printf("%.0f,%.0f,%s,%.3f,%.4f,%.4f,%s,%s,%s,%ld\n",
		       rows[i].size_B, rows[i].count, o->dtype,
		       rows[i].r.time_s * 1e6, rows[i].r.algbw_Bps / 1e9,
		       rows[i].r.busbw_Bps / 1e9, rows[i].r.algorithm,
		       rows[i].r.protocol, coll_redop(o), coll_root(o));
}

/* dispatch / combine fields of a --json row; 0 when out of memory. */
static int ep_json(cJSON *r, const struct opts *o, const struct row *row)
{
	return cJSON_AddStringToObject(r, "op", coll_op_name(o)) &&
	       cJSON_AddNumberToObject(r, "tokens", row->count) &&
	       cJSON_AddNumberToObject(r, "hidden", o->hidden) &&
	       cJSON_AddNumberToObject(r, "topk", o->topk) &&
	       cJSON_AddNumberToObject(r, "experts", o->experts) &&
	       cJSON_AddNumberToObject(r, "ranks_hit", row->ep.ranks_hit) &&
	       cJSON_AddNumberToObject(r, "nodes_hit", row->ep.nodes_hit) &&
	       cJSON_AddNumberToObject(r, "send_B", row->ep.send_B) &&
	       cJSON_AddNumberToObject(r, "node_share", row->ep.node_share);
}

/* The --json rows; NULL when out of memory. */
static cJSON *rows_json(const struct opts *o, const struct row *rows, int n)
{
	cJSON *a = cJSON_CreateArray();
	int i;

	for (i = 0; a && i < n; i++) {
		cJSON *r = cJSON_CreateObject();

		if (!r || !cJSON_AddItemToArray(a, r) ||
		    !cJSON_AddNumberToObject(r, "size_B", rows[i].size_B) ||
		    !cJSON_AddNumberToObject(r, "count", rows[i].count) ||
		    !cJSON_AddStringToObject(r, "type", o->dtype) ||
		    !cJSON_AddStringToObject(r, "redop", coll_redop(o)) ||
		    !cJSON_AddNumberToObject(r, "root", (double)coll_root(o)) ||
		    !cJSON_AddNumberToObject(r, "time_us", rows[i].r.time_s * 1e6) ||
		    !cJSON_AddNumberToObject(r, "algbw_GBps",
					     rows[i].r.algbw_Bps / 1e9) ||
		    !cJSON_AddNumberToObject(r, "busbw_GBps",
					     rows[i].r.busbw_Bps / 1e9) ||
		    !cJSON_AddStringToObject(r, "algorithm", rows[i].r.algorithm) ||
		    !cJSON_AddStringToObject(r, "protocol", rows[i].r.protocol) ||
		    (o->ep && !ep_json(r, o, &rows[i]))) {
			if (!r)
				break;
			cJSON_Delete(a);
			return NULL;
		}
	}
	if (a && cJSON_GetArraySize(a) != n) {
		cJSON_Delete(a);
		return NULL;
	}
	return a;
}

static cJSON *name_or_null(const char *const *names, int i)
{
	return i < 0 ? cJSON_CreateNull() : cJSON_CreateString(names[i]);
}

/* dispatch / combine's part of the stored config. 1, or 0 (OOM). */
static int ep_config(cJSON *c, const struct opts *o)
{
	cJSON *t = cJSON_CreateArray();
	int i, ok = t && cJSON_AddItemToObject(c, "tokens", t);

	if (!ok) {
		cJSON_Delete(t);
		return 0;
	}
	for (i = 0; ok && i < o->ntokens; i++) {
		cJSON *x = cJSON_CreateNumber(o->tokens[i]);

		ok = x && cJSON_AddItemToArray(t, x);
		if (!ok)
			cJSON_Delete(x);
	}
	return ok && cJSON_AddNumberToObject(c, "hidden", o->hidden) &&
	       cJSON_AddNumberToObject(c, "topk", o->topk) &&
	       cJSON_AddNumberToObject(c, "experts", o->experts) &&
	       cJSON_AddNumberToObject(c, "groups", o->groups) &&
	       cJSON_AddNumberToObject(c, "topk_groups", o->topk_groups) &&
	       cJSON_AddStringToObject(c, "dispatcher", o->dispatcher) &&
	       cJSON_AddNumberToObject(c, "sms", (double)o->sms) &&
	       /* only when asked: random runs keep their config hashes */
	       (o->gate == GATE_RANDOM ||
		cJSON_AddStringToObject(c, "gate", balanced_gate_names[o->gate]));
}

/*
 * What the run was asked: the resolved system and the collective (op,
 * ranks, type, reduction, root, sizes, forced algorithm and protocol;
 * for dispatch and combine the routing and the path), so runs of
 * different ops or rank counts have different config hashes. NULL when
 * out of memory.
 */
static cJSON *config_json(const struct opts *o, const struct system_spec *s)
{
	cJSON *cfg = cJSON_CreateObject(), *c = cJSON_CreateObject();
	int ok = cfg && c &&
		cJSON_AddItemToObject(cfg, "system",
				      schema_to_json(&system_schema, s)) &&
		cJSON_AddItemToObject(cfg, "collective", c);

	if (!ok) {
		if (!cJSON_GetObjectItem(cfg, "collective"))
			cJSON_Delete(c);
		cJSON_Delete(cfg);
		return NULL;
	}
	ok = cJSON_AddStringToObject(c, "op", coll_op_name(o)) &&
	     cJSON_AddNumberToObject(c, "ranks", (double)o->ranks) &&
	     cJSON_AddStringToObject(c, "type", o->dtype) &&
	     cJSON_AddStringToObject(c, "redop", coll_redop(o)) &&
	     cJSON_AddNumberToObject(c, "root", (double)coll_root(o)) &&
	     (o->group <= 1 ||
	      cJSON_AddNumberToObject(c, "group", (double)o->group)) &&
	     (!split_op(o) ||
	      cJSON_AddStringToObject(c, "tester",
				      coll_tester_names[o->tester])) &&
	     cJSON_AddNumberToObject(c, "min_bytes", o->min_B) &&
	     cJSON_AddNumberToObject(c, "max_bytes", o->max_B) &&
	     cJSON_AddNumberToObject(c, "step_factor", o->factor) &&
	     cJSON_AddItemToObject(c, "algorithm",
				   name_or_null(coll_algo_names, o->algo)) &&
	     cJSON_AddItemToObject(c, "protocol",
				   name_or_null(coll_proto_names, o->proto)) &&
	     (o->ep == EP_OP_NONE || ep_config(c, o));
	if (!ok || !cJSON_GetObjectItem(cfg, "system")) {
		cJSON_Delete(cfg);
		return NULL;
	}
	return cfg;
}

/* The --json object: identity, then the rows. */
static cJSON *result_json(const struct opts *o, const struct system_spec *s,
			  const char *hash, const struct row *rows, int n)
{
	cJSON *r = cJSON_CreateObject(), *a = rows_json(o, rows, n);
	int ok = r && a &&
		cJSON_AddNumberToObject(r, "schema_version",
					COLLECTIVE_JSON_SCHEMA) &&
		cJSON_AddStringToObject(r, "llmsim_version", cli_version()) &&
		cJSON_AddStringToObject(r, "config_hash", hash) &&
		cJSON_AddStringToObject(r, "op", coll_op_name(o)) &&
		cJSON_AddStringToObject(r, "system",
					s->name ? s->name : o->system) &&
		cJSON_AddNumberToObject(r, "ranks", (double)o->ranks) &&
		cJSON_AddStringToObject(r, "type", o->dtype) &&
		cJSON_AddStringToObject(r, "redop", coll_redop(o)) &&
		cJSON_AddNumberToObject(r, "root", (double)coll_root(o)) &&
		(o->group <= 1 ||
		 cJSON_AddNumberToObject(r, "group", (double)o->group)) &&
		(!split_op(o) ||
		 cJSON_AddStringToObject(r, "tester",
					 coll_tester_names[o->tester])) &&
		cJSON_AddItemToObject(r, "rows", a);

	if (!ok) {
		if (a && !cJSON_GetObjectItem(r, "rows"))
			cJSON_Delete(a);
		cJSON_Delete(r);
		return NULL;
	}
	return r;
}

static int store_rows(const struct opts *o, const char *data_root,
		      const char *cfg_s, const char *json,
		      const struct row *rows, int n, struct diag *d)
{
	struct store_coll_row sr[MAX_ROWS];
	struct cli_result res = { .command = "collective",
				  .kind = "collective", .config_json = cfg_s,
				  .json = json, .rows = sr,
				  .nrows = (uint32_t)n };
	int i;

	for (i = 0; i < n; i++)
		sr[i] = (struct store_coll_row){ rows[i].size_B, rows[i].count,
			o->dtype, coll_op_name(o), (uint32_t)o->ranks,
			rows[i].r.time_s, rows[i].r.algbw_Bps,
			rows[i].r.busbw_Bps, rows[i].r.algorithm,
			rows[i].r.protocol };
	return cli_store(o->db, data_root, &res, d);
}

int coll_output(const struct opts *o, const struct system_spec *s,
		const struct ep_comm_spec *e, const struct row *rows, int n,
		const char *data_root, struct diag *d)
{
	cJSON *cfg = config_json(o, s), *res = NULL;
	char *cfg_s = cfg ? cJSON_PrintUnformatted(cfg) : NULL, hash[65];
	char *json = NULL;
	int rc = CLI_OK;

	if (cfg_s) {
		sha256_hex(cfg_s, strlen(cfg_s), hash);
		res = result_json(o, s, hash, rows, n);
	}
	json = res ? cJSON_Print(res) : NULL;
	if (!json) {
		diag_oom(d);
		rc = CLI_FAIL;
		goto out;
	}
	if (o->fmt == FMT_JSON)
		printf("%s\n", json);
	else if (o->fmt == FMT_CSV)
		print_csv(o, rows, n);
	else
		print_table(o, s, e, rows, n);
	if (o->store && store_rows(o, data_root, cfg_s, json, rows, n, d) != CLI_OK)
		rc = CLI_FAIL;
out:
	cJSON_free(json);
	cJSON_free(cfg_s);
	cJSON_Delete(res);
	cJSON_Delete(cfg);
	return rc;
}

