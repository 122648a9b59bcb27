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
#include "config/spec_system.h"
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
	double size_B, count;		/* B, elements */
	struct net_coll_result r;
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

/* One option with a value; 1 if not one of these, CLI_OK done,
 * CLI_USAGE bad (reported). */
static int value_opt(struct opts *o, int argc, char **argv, int *i)
{
	const char *v, *missing = NULL;
	double x;

	if ((v = cli_option(argc, argv, i, "--system", &missing))) {
		o->system = v;
	} else if ((v = cli_option(argc, argv, i, "--set", &missing))) {
		/* The system is loaded on its own: 'system.nodes=2' means
		 * 'nodes=2' here. */
		o->sets[o->nsets++] = strncmp(v, "system.", 7) == 0 ? v + 7 : v;
	} else if ((v = cli_option(argc, argv, i, "--op", &missing))) {
		if ((o->op = schema_name_index(coll_op_names, v)) < 0)
			return list_error("--op", v, coll_op_names);
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
	} else if ((v = cli_option(argc, argv, i, "--algo", &missing))) {
		if ((o->algo = schema_name_index(coll_algo_names, v)) < 0)
			return list_error("--algo", v, coll_algo_names);
	} else if ((v = cli_option(argc, argv, i, "--proto", &missing))) {
		if ((o->proto = schema_name_index(coll_proto_names, v)) < 0)
			return list_error("--proto", v, coll_proto_names);
	} else if ((v = cli_option(argc, argv, i, "--db", &missing))) {
		o->db = v;
	} else if (missing) {
		return cli_usage_error("collective", "'%s' needs a value",
				       missing);
	} else {
		return 1;
	}
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
	struct coll_desc c = { (enum coll_op)o->op, size, gpus,
			       (uint32_t)o->ranks, NULL, o->algo, o->proto, 1, 0 };
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

static void print_table(const struct opts *o, const struct system_spec *s,
			const struct row *rows, int n)
{
	double sum = 0;
	int i;

	printf("# llmsim collective: %s, %ld ranks on %s (%lld node%s x %lld "
	       "GPUs), library %s\n#\n", coll_op_names[o->op], o->ranks,
	       s->name ? s->name : o->system, (long long)s->nodes,
	       s->nodes == 1 ? "" : "s", (long long)s->gpus_per_node,
	       s->collectives->name ? s->collectives->name : "(inline)");
	printf("#%11s %13s %9s %11s %11s %11s  %-12s %s\n", "size", "count",
	       "type", "time", "algbw", "busbw", "algorithm", "protocol");
	printf("#%11s %13s %9s %11s %11s %11s\n", "(B)", "(elements)", "",
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
		    !cJSON_AddStringToObject(r, "protocol", rows[i].r.protocol)) {
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
			o->dtype, coll_op_names[o->op], (uint32_t)o->ranks,
			rows[i].r.time_s, rows[i].r.algbw_Bps,
			rows[i].r.busbw_Bps, rows[i].r.algorithm,
			rows[i].r.protocol };
	return cli_store(o->db, data_root, &res, d);
}

static int output(const struct opts *o, const struct system_spec *s,
		  const struct row *rows, int n, const char *data_root,
		  struct diag *d)
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
		print_table(o, s, rows, n);
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
		    struct system_spec *s, struct row *rows, int *n)
{
	struct diag *d = cx->diag;
	struct net *net = NULL;
	uint32_t *gpus;
	long i;
	int rc = -1;

	if (config_load(cx, &system_schema, o->system, o->sets, o->nsets, s))
		return d->oom ? CLI_FAIL : CLI_USAGE;
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
		rc = run_sizes(net, o, gpus, rows, n, d);
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
	rc = simulate(&o, &cx, s, rows, &n);
	if (rc == CLI_OK)
		rc = output(&o, s, rows, n, cx.data_root, &d);
out:
	mem_free(rows);
	arena_release(&a);
	return rc;
}
