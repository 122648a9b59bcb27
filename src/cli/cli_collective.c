/*
 * cli_collective.c - `llmsim collective`: time one collective over a range
 * of sizes on an idle system and print it the way rccl-tests and
 * nccl-tests do, so the two tables can be diffed.
 *
 *   llmsim collective --system S --op OP --ranks N [--min SIZE] [--max SIZE]
 *                     [--step-factor F] [--dtype T] [--algo A] [--proto P]
 *                     [--set key=value]... [--json | --csv] [--db PATH]
 *                     [--no-store]
 *
 * Ranks are GPUs 0..N-1, filling node 0 first (global id = node * gpus
 * per node + local index). Sizes follow rccl-tests: plain bytes or K/M/G
 * suffixes of 2^10/2^20/2^30, from --min to --max multiplying by the step
 * factor; as there, a size is rounded down to whole elements (and, for
 * all-gather, reduce-scatter and all-to-all, to a multiple of the ranks).
 * `sendrecv` is nccl-tests' pattern: every rank sends the size to the next
 * rank and receives from the previous one, all at once.
 *
 * `dispatch` and `combine` are an MoE layer's token exchange over an
 * expert-parallel group of --ranks GPUs (models/ep.h): each GPU routes
 * --tokens tokens of --hidden elements to --topk of --experts experts
 * (uniformly; within --topk-groups of --groups groups first when given),
 * through the --dispatcher path of configs/ep (deepep, deepep-ll,
 * hybridep: GPU-initiated, own latency and SM budget; alltoall,
 * hierarchical: the library's all-to-all). One row per token count; size
 * is DeepEP's logical byte count (ep.h logical_B) and algbw that over the
 * time, the "bottleneck bandwidth" DeepEP's and Hybrid-EP's tests print;
 * busbw the bytes that leave the GPU (send_B less its own share) over the
 * time.
 *
 * Results go to the database (one run, one row per size) unless
 * --no-store. Exit status: 0, 1 runtime failure, 2 bad input.
 */
#include "cli.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "base/diag.h"
#include "base/arena.h"
#include "base/mem.h"
#include "network/net.h"
#include "config/schema.h"
#include "config/spec_gpu.h"
#include "config/spec_moe.h"
#include "config/spec_system.h"
#include "models/ep.h"
#include "store/store.h"
#include "base/units.h"

#define MAX_ROWS 256

enum out_fmt {
	FMT_TABLE,
	FMT_CSV,
	FMT_JSON
};

struct opts {
	const char *system;
	const char **sets;		/* --set values (argc entries) */
	size_t nsets;
	int op;				/* enum coll_op; -1 unset */
	long ranks;			/* 0 unset */
	double min_B, max_B;		/* B */
	double factor;
	const char *dtype;
	int algo, proto;		/* -1 = the library's choice */
	int fmt;			/* enum out_fmt */
	const char *db;			/* NULL = default */
	int store;
	/* dispatch / combine (ep != EP_OP_NONE) */
	int ep;				/* enum ep_op */
	double tokens[MAX_ROWS];	/* per GPU, one row each */
	int ntokens;
	double hidden, topk, experts;
	double groups;			/* 0 none, -1 = the nodes spanned */
	double topk_groups;
	const char *dispatcher;		/* configs/ep preset or file */
	long sms;			/* 0 = the dispatcher's */
	int dtype_set;
};

enum ep_op {
	EP_OP_NONE,
	EP_OP_DISPATCH,
	EP_OP_COMBINE
};

static const char *const op_names_ep[] = {
	"allreduce", "allgather", "reducescatter", "alltoall", "broadcast",
	"reduce", "sendrecv", "dispatch", "combine", NULL
};

/* nccl-tests data types and their sizes. */
static const struct {
	const char *name;
	double bytes;			/* B per element */
} dtypes[] = {
	{"int8", 1}, {"uint8", 1}, {"int32", 4}, {"uint32", 4},
	{"int64", 8}, {"uint64", 8}, {"half", 2}, {"float", 4},
	{"double", 8}, {"bfloat16", 2}, {"fp8_e4m3", 1}, {"fp8_e5m2", 1},
};

#define NDTYPES (sizeof(dtypes) / sizeof(dtypes[0]))

struct row {
	double size_B, count;		/* B, elements (tokens for dispatch) */
	struct net_coll_result r;
	struct ep_traffic ep;		/* dispatch / combine */
};

/* A usage error naming what was expected: one of names. */
static int list_error(const char *what, const char *got,
		      const char *const *names)
{
	char list[256];
	size_t i, k = 0;

	list[0] = '\0';
	for (i = 0; names[i] && k < sizeof(list); i++)
		k += (size_t)snprintf(list + k, sizeof(list) - k, "%s%s",
				      i ? ", " : "", names[i]);
	return cli_usage_error("collective", "%s: expected one of %s; got '%s'",
			       what, list, got);
}

static double dtype_size(const char *name)
{
	size_t i;

	for (i = 0; i < NDTYPES; i++)
		if (strcmp(dtypes[i].name, name) == 0)
			return dtypes[i].bytes;
	return 0;
}

/* The enum dtype a dispatch row travels in, or -1. */
static int ep_dtype(const char *name)
{
	if (strcmp(name, "bfloat16") == 0)
		return DTYPE_BF16;
	if (strcmp(name, "half") == 0)
		return DTYPE_FP16;
	if (strcmp(name, "float") == 0)
		return DTYPE_FP32;
	if (strncmp(name, "fp8_", 4) == 0)
		return DTYPE_FP8;
	return -1;
}

static int bad_dtype(const char *got)
{
	const char *names[NDTYPES + 1];
	size_t i;

	for (i = 0; i < NDTYPES; i++)
		names[i] = dtypes[i].name;
	names[NDTYPES] = NULL;
	return list_error("--dtype", got, names);
}

/* CLI_OK, or CLI_USAGE after reporting. */
static int parse_size(const char *opt, const char *text, double *out)
{
	const char *why;

	if (units_parse_test_size(text, out, &why) == 0)
		return CLI_OK;
	return cli_usage_error("collective", "%s: expected a size such as "
			       "'1K', '8M' or '4096', got '%s' (%s)", opt,
			       text, why);
}

/* 1 if text is a finite number >= lo (into *out), else 0. */
static int number(const char *text, double lo, double *out)
{
	char *end;
	double v = strtod(text, &end);

	if (end == text || *end != '\0' || !isfinite(v) || v < lo)
		return 0;
	*out = v;
	return 1;
}

/* CLI_OK, or CLI_USAGE after reporting. */
static int parse_number(const char *opt, const char *text, double lo,
			double *out)
{
	if (number(text, lo, out))
		return CLI_OK;
	return cli_usage_error("collective", "%s: expected a number >= %g, "
			       "got '%s'", opt, lo, text);
}

/* A whole number >= lo for option opt; CLI_OK or CLI_USAGE. */
static int whole(const char *opt, const char *v, double lo, double *out)
{
	if (number(v, lo, out) && *out == floor(*out) && *out <= 1 << 24)
		return CLI_OK;
	return cli_usage_error("collective", "%s: expected a whole number "
			       ">= %g, got '%s'", opt, lo, v);
}

/* --tokens 128,4096: token counts per GPU, one row each. */
static int parse_tokens(struct opts *o, const char *v)
{
	const char *p = v;

	o->ntokens = 0;
	while (*p) {
		char item[32];
		size_t n = strcspn(p, ",");
		double t;

		if (n == 0 || n >= sizeof(item) || o->ntokens == MAX_ROWS)
			return cli_usage_error("collective", "--tokens: expected "
					       "up to %d counts such as "
					       "'128,4096', got '%s'",
					       MAX_ROWS, v);
		memcpy(item, p, n);
		item[n] = '\0';
		if (whole("--tokens", item, 1, &t) != CLI_OK)
			return CLI_USAGE;
		o->tokens[o->ntokens++] = t;
		p += n;
		if (*p == ',')
			p++;
	}
	return CLI_OK;
}

/* The options of dispatch and combine; as value_opt. */
static int ep_opt(struct opts *o, int argc, char **argv, int *i,
		  const char **missing)
{
	const char *v;
	double x;

	if ((v = cli_option(argc, argv, i, "--tokens", missing)))
		return parse_tokens(o, v);
	if ((v = cli_option(argc, argv, i, "--hidden", missing)))
		return whole("--hidden", v, 1, &o->hidden);
	if ((v = cli_option(argc, argv, i, "--topk", missing)))
		return whole("--topk", v, 1, &o->topk);
	if ((v = cli_option(argc, argv, i, "--experts", missing)))
		return whole("--experts", v, 1, &o->experts);
	if ((v = cli_option(argc, argv, i, "--groups", missing))) {
		if (strcmp(v, "nodes") == 0) {
			o->groups = -1;
			return CLI_OK;
		}
		return whole("--groups", v, 1, &o->groups);
	}
	if ((v = cli_option(argc, argv, i, "--topk-groups", missing)))
		return whole("--topk-groups", v, 1, &o->topk_groups);
	if ((v = cli_option(argc, argv, i, "--dispatcher", missing))) {
		o->dispatcher = v;
		return CLI_OK;
	}
	if ((v = cli_option(argc, argv, i, "--sms", missing))) {
		if (whole("--sms", v, 1, &x) != CLI_OK)
			return CLI_USAGE;
		o->sms = (long)x;
		return CLI_OK;
	}
	return 1;
}

/* One option with a value; 1 if not one of these, CLI_OK done,
 * CLI_USAGE bad (reported). */
static int value_opt(struct opts *o, int argc, char **argv, int *i)
{
	const char *v, *missing = NULL;
	double x;
	int rc;

	if ((v = cli_option(argc, argv, i, "--system", &missing))) {
		o->system = v;
	} else if ((v = cli_option(argc, argv, i, "--set", &missing))) {
		/* The system is loaded on its own: 'system.nodes=2' means
		 * 'nodes=2' here. */
		o->sets[o->nsets++] = strncmp(v, "system.", 7) == 0 ? v + 7 : v;
	} else if ((v = cli_option(argc, argv, i, "--op", &missing))) {
		o->ep = strcmp(v, "dispatch") == 0 ? EP_OP_DISPATCH :
			strcmp(v, "combine") == 0 ? EP_OP_COMBINE : EP_OP_NONE;
		if (o->ep != EP_OP_NONE)
			o->op = COLL_ALLTOALL;
		else if ((o->op = schema_name_index(coll_op_names, v)) < 0)
			return list_error("--op", v, op_names_ep);
	} else if ((v = cli_option(argc, argv, i, "--ranks", &missing))) {
		if (!number(v, 1, &x) || x != floor(x) || x > 1 << 22)
			return cli_usage_error("collective", "--ranks: "
					       "expected a whole number of "
					       "GPUs, got '%s'", v);
		o->ranks = (long)x;
	} else if ((v = cli_option(argc, argv, i, "--min", &missing))) {
		return parse_size("--min", v, &o->min_B);
	} else if ((v = cli_option(argc, argv, i, "--max", &missing))) {
		return parse_size("--max", v, &o->max_B);
	} else if ((v = cli_option(argc, argv, i, "--step-factor", &missing))) {
		return parse_number("--step-factor", v, 1, &o->factor);
	} else if ((v = cli_option(argc, argv, i, "--dtype", &missing))) {
		if (dtype_size(v) == 0)
			return bad_dtype(v);
		o->dtype = v;
		o->dtype_set = 1;
	} else if ((v = cli_option(argc, argv, i, "--algo", &missing))) {
		if ((o->algo = schema_name_index(coll_algo_names, v)) < 0)
			return list_error("--algo", v, coll_algo_names);
	} else if ((v = cli_option(argc, argv, i, "--proto", &missing))) {
		if ((o->proto = schema_name_index(coll_proto_names, v)) < 0)
			return list_error("--proto", v, coll_proto_names);
	} else if ((v = cli_option(argc, argv, i, "--db", &missing))) {
		o->db = v;
	} else if ((rc = ep_opt(o, argc, argv, i, &missing)) != 1) {
		return rc;
	} else if (missing) {
		return cli_usage_error("collective", "'%s' needs a value",
				       missing);
	} else {
		return 1;
	}
	return CLI_OK;
}

/* Defaults of dispatch and combine: DeepSeek-V3's layer as DeepEP's
 * tests run it (4096 tokens, hidden 7168, top-8 of 256, bf16). */
static int ep_defaults(struct opts *o)
{
	if (!o->ntokens)
		o->tokens[o->ntokens++] = 4096;
	if (!o->hidden)
		o->hidden = 7168;
	if (!o->topk)
		o->topk = 8;
	if (!o->experts)
		o->experts = 256;
	if (!o->dispatcher)
		o->dispatcher = "deepep";
	if (!o->dtype_set)
		o->dtype = "bfloat16";
	if (ep_dtype(o->dtype) < 0)
		return cli_usage_error("collective", "--dtype %s: dispatch and "
				       "combine move bfloat16, half, float or "
				       "fp8_e4m3 / fp8_e5m2 rows", o->dtype);
	if (o->topk > o->experts)
		return cli_usage_error("collective", "--topk %g is above "
				       "--experts %g", o->topk, o->experts);
	if ((long)o->experts % o->ranks != 0)
		return cli_usage_error("collective", "--experts %g is not a "
				       "multiple of --ranks %ld (experts are "
				       "spread evenly over the EP group)",
				       o->experts, o->ranks);
	if (o->topk_groups && !o->groups)
		return cli_usage_error("collective", "%s", "--topk-groups "
				       "needs --groups (a number or 'nodes')");
	return CLI_OK;
}

/* Options into o; o->sets has room for argc entries. */
static int parse(struct opts *o, int argc, char **argv)
{
	int i, rc;

	for (i = 1; i < argc; i++) {
		rc = value_opt(o, argc, argv, &i);
		if (rc == CLI_USAGE)
			return rc;
		if (rc == CLI_OK)
			continue;
		if (strcmp(argv[i], "--json") == 0)
			o->fmt = FMT_JSON;
		else if (strcmp(argv[i], "--csv") == 0)
			o->fmt = FMT_CSV;
		else if (strcmp(argv[i], "--no-store") == 0)
			o->store = 0;
		else
			return cli_usage_error("collective", "unknown option "
					       "'%s'", argv[i]);
	}
	if (!o->system || o->op < 0 || o->ranks == 0)
		return cli_usage_error("collective", "%s", "--system, --op and "
				       "--ranks are required");
	if (o->ep == EP_OP_NONE && (o->ntokens || o->dispatcher || o->sms ||
				    o->hidden || o->topk || o->experts ||
				    o->groups || o->topk_groups))
		return cli_usage_error("collective", "%s", "--tokens, --hidden, "
				       "--topk, --experts, --groups, "
				       "--topk-groups, --dispatcher and --sms "
				       "go with --op dispatch or combine");
	if (o->ep != EP_OP_NONE)
		return ep_defaults(o);
	if (o->min_B > o->max_B)
		return cli_usage_error("collective", "%s", "--min is larger "
				       "than --max");
	if (o->factor <= 1 && o->min_B != o->max_B)
		return cli_usage_error("collective", "%s", "--step-factor must "
				       "be above 1 to go from --min to --max");
	return CLI_OK;
}

/* Bytes a size is rounded down to a multiple of. */
static double granule(const struct opts *o)
{
	double g = dtype_size(o->dtype);

	if (o->op == COLL_ALLGATHER || o->op == COLL_REDUCESCATTER ||
	    o->op == COLL_ALLTOALL)
		g *= (double)o->ranks;
	return g;
}

/* sendrecv as nccl-tests runs it: rank i sends to rank i+1. */
static double *ring_matrix(long p, double bytes)
{
	double *m = mem_calloc((size_t)(p * p), sizeof(*m));
	long i;

	if (m)
		for (i = 0; i < p; i++)
			m[i * p + (i + 1) % p] += bytes;
	return m;
}

static int time_size(struct net *n, const struct opts *o,
		     const uint32_t *gpus, double size, struct row *row,
		     struct diag *d)
{
	struct coll_desc c = { .op = (enum coll_op)o->op, .bytes = size,
			       .gpus = gpus, .ngpus = (uint32_t)o->ranks,
			       .algo = o->algo, .proto = o->proto, .replicas = 1 };
	double *m = NULL;
	int rc;

	if (o->op == COLL_SENDRECV) {
		c.op = COLL_ALLTOALL;
		c.a2a_B = m = ring_matrix(o->ranks, size);
		if (!m) {
			diag_oom(d);
			return -1;
		}
		if (c.algo < 0)
			c.algo = ALGO_P2P;
	}
	rc = net_collective_time(n, &c, &row->r, d);
	mem_free(m);
	if (rc == 0 && o->op == COLL_SENDRECV)
		row->r.busbw_Bps = row->r.algbw_Bps;	/* nccl-tests: factor 1 */
	row->size_B = size;
	row->count = size / dtype_size(o->dtype);
	return rc;
}

/* One dispatch or combine of `tokens` tokens per GPU over path e. */
static int ep_time(struct net *n, const struct opts *o,
		   const struct system_spec *s, const struct ep_comm_spec *e,
		   const uint32_t *gpus, double tokens, struct row *row,
		   struct diag *d)
{
	struct ep_call c = {
		.gpus = gpus, .ranks = (uint32_t)o->ranks,
		.gpus_per_node = (double)s->gpus_per_node, .tokens = tokens,
		.hidden = o->hidden,
		.routing = { o->experts, o->topk, o->groups, o->topk_groups },
		.dtype = ep_dtype(o->dtype), .combine = o->ep == EP_OP_COMBINE,
		.sms = o->sms, .algo = o->algo, .proto = o->proto,
	};
	struct ep_call_result res;

	if (ep_call_time(n, e, &c, &res, d) != 0)
		return -1;
	row->ep = res.traffic;
	row->r = res.r;
	row->size_B = res.logical_B;
	row->count = tokens;
	return 0;
}

static int run_ep(struct net *n, const struct opts *o,
		  const struct system_spec *s, const struct ep_comm_spec *e,
		  const uint32_t *gpus, struct row *rows, int *nrows,
		  struct diag *d)
{
	int i;

	for (*nrows = 0, i = 0; i < o->ntokens; i++, ++*nrows)
		if (ep_time(n, o, s, e, gpus, o->tokens[i], &rows[i], d))
			return -1;
	return 0;
}

static int run_sizes(struct net *n, const struct opts *o, const uint32_t *gpus,
		     struct row *rows, int *nrows, struct diag *d)
{
	double s, g = granule(o);

	*nrows = 0;
	for (s = o->min_B; s <= o->max_B * (1 + 1e-12); s *= o->factor) {
		if (*nrows == MAX_ROWS) {
			diag_error(d, NULL, 0, 0, "more than %d sizes from --min "
				   "to --max; raise --step-factor", MAX_ROWS);
			return -1;
		}
		if (time_size(n, o, gpus, floor(s / g) * g, &rows[*nrows], d))
			return -1;
		++*nrows;
		if (o->factor <= 1)
			break;
	}
	return 0;
}

/* The op as the user named it. */
static const char *op_name(const struct opts *o)
{
	if (o->ep == EP_OP_DISPATCH)
		return "dispatch";
	if (o->ep == EP_OP_COMBINE)
		return "combine";
	return coll_op_names[o->op];
}

/* dispatch / combine: the routing and the path in the table's head. */
static void print_ep_head(const struct opts *o, const struct ep_comm_spec *e,
			  const struct row *rows, int n)
{
	long sms = o->sms ? o->sms : (long)e->sms;

	printf("# %s path %s (%s, dedup %s, ", op_name(o),
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
	printf("\n# a token reaches %.2f GPUs, %.2f nodes on average; size: "
	       "DeepEP's logical bytes per GPU, algbw = size / time\n#\n",
	       n ? rows[0].ep.ranks_hit : 0, n ? rows[0].ep.nodes_hit : 0);
	printf("#%11s %13s %9s %11s %11s %11s  %-12s %s\n", "size", "tokens",
	       "type", "time", "algbw", "busbw", "path", "protocol");
}

static void print_table(const struct opts *o, const struct system_spec *s,
			const struct ep_comm_spec *e, const struct row *rows,
			int n)
{
	double sum = 0;
	int i;

	printf("# llmsim collective: %s, %ld ranks on %s (%lld node%s x %lld "
	       "GPUs), library %s\n#\n", op_name(o), o->ranks,
	       s->name ? s->name : o->system, (long long)s->nodes,
	       s->nodes == 1 ? "" : "s", (long long)s->gpus_per_node,
	       s->collectives->name ? s->collectives->name : "(inline)");
	if (e)
		print_ep_head(o, e, rows, n);
	else
		printf("#%11s %13s %9s %11s %11s %11s  %-12s %s\n", "size",
		       "count", "type", "time", "algbw", "busbw", "algorithm",
		       "protocol");
	printf("#%11s %13s %9s %11s %11s %11s\n", "(B)",
	       e ? "(per GPU)" : "(elements)", "",
	       "(us)", "(GB/s)", "(GB/s)");
	for (i = 0; i < n; i++) {
		printf("%12.0f %13.0f %9s %11.2f %11.2f %11.2f  %-12s %s\n",
		       rows[i].size_B, rows[i].count, o->dtype,
		       rows[i].r.time_s * 1e6, rows[i].r.algbw_Bps / 1e9,
		       rows[i].r.busbw_Bps / 1e9, rows[i].r.algorithm,
		       rows[i].r.protocol);
		sum += rows[i].r.busbw_Bps / 1e9;
	}
	printf("# Avg bus bandwidth    : %g\n", n ? sum / n : 0.0);
}

static void print_csv(const struct opts *o, const struct row *rows, int n)
{
	int i;

	puts("size_B,count,type,time_us,algbw_GBps,busbw_GBps,algorithm,protocol");
	for (i = 0; i < n; i++)
		printf("%.0f,%.0f,%s,%.3f,%.4f,%.4f,%s,%s\n", rows[i].size_B,
		       rows[i].count, o->dtype, rows[i].r.time_s * 1e6,
		       rows[i].r.algbw_Bps / 1e9, rows[i].r.busbw_Bps / 1e9,
		       rows[i].r.algorithm, rows[i].r.protocol);
}

/* dispatch / combine fields of a --json row; 0 when out of memory. */
static int ep_json(cJSON *r, const struct opts *o, const struct row *row)
{
	return cJSON_AddStringToObject(r, "op", op_name(o)) &&
	       cJSON_AddNumberToObject(r, "tokens", row->count) &&
	       cJSON_AddNumberToObject(r, "hidden", o->hidden) &&
	       cJSON_AddNumberToObject(r, "topk", o->topk) &&
	       cJSON_AddNumberToObject(r, "experts", o->experts) &&
	       cJSON_AddNumberToObject(r, "ranks_hit", row->ep.ranks_hit) &&
	       cJSON_AddNumberToObject(r, "nodes_hit", row->ep.nodes_hit) &&
	       cJSON_AddNumberToObject(r, "send_B", row->ep.send_B) &&
	       cJSON_AddNumberToObject(r, "node_share", row->ep.node_share);
}

/* The --json array; NULL when out of memory. */
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

static int store_rows(const struct opts *o, const char *data_root,
		      const struct system_spec *s, const char *json,
		      const struct row *rows, int n, struct diag *d)
{
	struct store_coll_row sr[MAX_ROWS];
	struct cli_result res = { .command = "collective",
				  .schema = &system_schema, .config = s,
				  .json = json, .rows = sr,
				  .nrows = (uint32_t)n };
	int i;

	for (i = 0; i < n; i++)
		sr[i] = (struct store_coll_row){ rows[i].size_B, rows[i].count,
			o->dtype, op_name(o), (uint32_t)o->ranks,
			rows[i].r.time_s, rows[i].r.algbw_Bps,
			rows[i].r.busbw_Bps, rows[i].r.algorithm,
			rows[i].r.protocol };
	return cli_store(o->db, data_root, &res, d);
}

static int output(const struct opts *o, const struct system_spec *s,
		  const struct ep_comm_spec *e, const struct row *rows, int n,
		  const char *data_root, struct diag *d)
{
	cJSON *a = rows_json(o, rows, n);
	char *json = a ? cJSON_Print(a) : NULL;
	int rc = CLI_OK;

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
	if (o->store && store_rows(o, data_root, s, json, rows, n, d) != CLI_OK)
		rc = CLI_FAIL;
out:
	cJSON_free(json);
	cJSON_Delete(a);
	return rc;
}

static int check_ranks(const struct opts *o, const struct system_spec *s,
		       struct diag *d)
{
	long have = (long)system_gpus(s);

	if (o->ranks > have) {
		diag_error(d, NULL, 0, 0, "--ranks %ld: the system has %ld "
			   "GPUs (%lld node%s x %lld); add --set "
			   "system.nodes=%ld", o->ranks, have,
			   (long long)s->nodes, s->nodes == 1 ? "" : "s",
			   (long long)s->gpus_per_node,
			   (o->ranks + s->gpus_per_node - 1) /
			   s->gpus_per_node);
		return -1;
	}
	if (o->op == COLL_SENDRECV && o->ranks < 2) {
		diag_error(d, NULL, 0, 0, "--ranks: sendrecv needs at least 2");
		return -1;
	}
	return 0;
}

/* Load the system and time every size; rows filled. CLI status. */
static int simulate(const struct opts *o, struct config_ctx *cx,
		    struct system_spec *s, const struct ep_comm_spec **ep,
		    struct row *rows, int *n)
{
	struct diag *d = cx->diag;
	struct ep_comm_spec *e = NULL;
	struct net *net = NULL;
	uint32_t *gpus;
	long i;
	int rc = -1;

	if (config_load(cx, &system_schema, o->system, o->sets, o->nsets, s))
		return d->oom ? CLI_FAIL : CLI_USAGE;
	if (o->ep != EP_OP_NONE) {
		e = arena_alloc(cx->arena, ep_comm_schema.size);
		if (!e) {
			diag_oom(d);
			return CLI_FAIL;
		}
		memset(e, 0, ep_comm_schema.size);
		if (config_load(cx, &ep_comm_schema, o->dispatcher, NULL, 0, e))
			return d->oom ? CLI_FAIL : CLI_USAGE;
		*ep = e;
	}
	if (check_ranks(o, s, d) != 0)
		return CLI_USAGE;
	gpus = mem_alloc((size_t)o->ranks * sizeof(*gpus));
	if (!gpus) {
		diag_oom(d);
		return CLI_FAIL;
	}
	for (i = 0; i < o->ranks; i++)
		gpus[i] = (uint32_t)i;
	net = net_new(s, NULL, d);
	if (net)
		rc = e ? run_ep(net, o, s, e, gpus, rows, n, d) :
			 run_sizes(net, o, gpus, rows, n, d);
	net_free(net);
	mem_free(gpus);
	if (rc == 0)
		return CLI_OK;
	return d->oom ? CLI_FAIL : CLI_USAGE;
}

int cli_collective(int argc, char **argv, const char *argv0)
{
	struct opts o = { .op = -1, .min_B = 32 << 20, .max_B = 32 << 20,
			  .factor = 2, .dtype = "float", .algo = -1,
			  .proto = -1, .fmt = FMT_TABLE, .store = 1 };
	struct arena a;
	struct diag d;
	struct config_ctx cx;
	struct system_spec *s;
	const struct ep_comm_spec *ep = NULL;
	struct row *rows = NULL;
	int n = 0, rc = CLI_FAIL;

	arena_init(&a);
	diag_init(&d, stderr);
	o.sets = arena_alloc(&a, (size_t)argc * sizeof(*o.sets));
	if (!o.sets) {
		diag_oom(&d);
		goto out;
	}
	if ((rc = parse(&o, argc, argv)) != CLI_OK)
		goto out;
	cx = (struct config_ctx){ &a, &d, config_data_root(&a, argv0) };
	s = arena_alloc(&a, sizeof(*s));
	rows = mem_calloc(MAX_ROWS, sizeof(*rows));
	if (!s || !rows || !cx.data_root) {
		diag_oom(&d);
		rc = CLI_FAIL;
		goto out;
	}
	rc = simulate(&o, &cx, s, &ep, rows, &n);
	if (rc == CLI_OK)
		rc = output(&o, s, ep, rows, n, cx.data_root, &d);
out:
	mem_free(rows);
	arena_release(&a);
	return rc;
}
