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
#include <getopt.h>
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
#include "base/sha256.h"
#include "base/units.h"

#define MAX_ROWS 256

/* The version of the --json object's layout (docs/cli-output.md). */
#define COLLECTIVE_JSON_SCHEMA 1

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
	const char *dtype;		/* nccl-tests' name */
	int redop;			/* index into redop_names */
	long root;			/* broadcast and reduce */
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

/* The nccl-tests name of a dtype spelled any accepted way; NULL if none. */
static const char *dtype_canonical(const char *v)
{
	static const char *const alias[] = {
		"bf16", "bfloat16", "fp16", "half", "float16", "half",
		"fp32", "float", "float32", "float", "fp64", "double",
		"float64", "double", "fp8", "fp8_e4m3", "i8", "int8",
		"u8", "uint8", "i32", "int32", "u32", "uint32", "i64", "int64",
		"u64", "uint64", NULL,
	};
	size_t i;

	if (dtype_size(v) > 0)
		for (i = 0; i < NDTYPES; i++)
			if (strcmp(dtypes[i].name, v) == 0)
				return dtypes[i].name;
	for (i = 0; alias[i]; i += 2)
		if (strcmp(alias[i], v) == 0)
			return alias[i + 1];
	return NULL;
}

static const char *const redop_names[] = {
	"sum", "prod", "min", "max", "avg", NULL,
};

enum {
	OPT_SYSTEM = 256, OPT_SET, OPT_OP, OPT_ALGO, OPT_PROTO, OPT_DB,
	OPT_JSON, OPT_CSV, OPT_NO_STORE,
};

/* One option (getopt_long's c with its optarg). CLI_OK or CLI_USAGE. */
static int option(struct opts *o, int c, const char *v)
{
	double x;

	switch (c) {
	case OPT_SYSTEM: o->system = v; break;
	case OPT_SET:
		/* The system is loaded on its own: 'system.nodes=2' means
		 * 'nodes=2' here. */
		o->sets[o->nsets++] = strncmp(v, "system.", 7) == 0 ? v + 7 : v;
		break;
	case OPT_OP:
		if ((o->op = schema_name_index(coll_op_names, v)) < 0)
			return list_error("--op", v, coll_op_names);
		break;
	case 'g':
		if (!number(v, 1, &x) || x != floor(x) || x > 1 << 22)
			return cli_usage_error("collective", "--ranks: "
					       "expected a whole number of "
					       "GPUs, got '%s'", v);
		o->ranks = (long)x;
		break;
	case 'b': return parse_size("--min (-b)", v, &o->min_B);
	case 'e': return parse_size("--max (-e)", v, &o->max_B);
	case 'f': return parse_number("--step-factor (-f)", v, 1, &o->factor);
	case 'd':
		if (!(o->dtype = dtype_canonical(v)))
			return bad_dtype(v);
		break;
	case 'o':
		if ((o->redop = schema_name_index(redop_names, v)) < 0)
			return list_error("--redop (-o)", v, redop_names);
		break;
	case 'r':
		if (!number(v, 0, &x) || x != floor(x))
			return cli_usage_error("collective", "--root (-r): "
					       "expected a rank, got '%s'", v);
		o->root = (long)x;
		break;
	case OPT_ALGO:
		if ((o->algo = schema_name_index(coll_algo_names, v)) < 0)
			return list_error("--algo", v, coll_algo_names);
		break;
	case OPT_PROTO:
		if ((o->proto = schema_name_index(coll_proto_names, v)) < 0)
			return list_error("--proto", v, coll_proto_names);
		break;
	case OPT_DB: o->db = v; break;
	case OPT_JSON: o->fmt = FMT_JSON; break;
	case OPT_CSV: o->fmt = FMT_CSV; break;
	case OPT_NO_STORE: o->store = 0; break;
	default: return CLI_USAGE;
	}
	return CLI_OK;
}

/* Options into o; o->sets has room for argc entries. rccl-tests' and
 * nccl-tests' short options (-b -e -f -g -d -o -r) and long spellings
 * work alongside llmsim's. */
static int parse(struct opts *o, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "system", required_argument, NULL, OPT_SYSTEM },
		{ "set", required_argument, NULL, OPT_SET },
		{ "op", required_argument, NULL, OPT_OP },
		{ "ranks", required_argument, NULL, 'g' },
		{ "ngpus", required_argument, NULL, 'g' },
		{ "min", required_argument, NULL, 'b' },
		{ "minbytes", required_argument, NULL, 'b' },
		{ "max", required_argument, NULL, 'e' },
		{ "maxbytes", required_argument, NULL, 'e' },
		{ "step-factor", required_argument, NULL, 'f' },
		{ "stepfactor", required_argument, NULL, 'f' },
		{ "dtype", required_argument, NULL, 'd' },
		{ "datatype", required_argument, NULL, 'd' },
		{ "redop", required_argument, NULL, 'o' },
		{ "root", required_argument, NULL, 'r' },
		{ "algo", required_argument, NULL, OPT_ALGO },
		{ "proto", required_argument, NULL, OPT_PROTO },
		{ "db", required_argument, NULL, OPT_DB },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "csv", no_argument, NULL, OPT_CSV },
		{ "no-store", no_argument, NULL, OPT_NO_STORE },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	cli_getopt_reset();
	while ((c = cli_getopt(argc, argv, "b:e:f:g:d:o:r:", longopts,
			       "collective")) != -1)
		if (c == '?' || option(o, c, optarg) != CLI_OK)
			return CLI_USAGE;
	if (optind < argc)
		return cli_usage_error("collective", "unexpected operand '%s'",
				       argv[optind]);
	if (!o->system || o->op < 0 || o->ranks == 0)
		return cli_usage_error("collective", "%s", "--system, --op and "
				       "--ranks (-g) are required");
	if (o->min_B > o->max_B)
		return cli_usage_error("collective", "%s", "--min is larger "
				       "than --max");
	if (o->factor <= 1 && o->min_B != o->max_B)
		return cli_usage_error("collective", "%s", "--step-factor must "
				       "be above 1 to go from --min to --max");
	if (o->root >= o->ranks)
		return cli_usage_error("collective", "--root %ld: the ranks "
				       "are 0..%ld", o->root, o->ranks - 1);
	return CLI_OK;
}

/* nccl-tests print redop "none" and root -1 where they do not apply. */
static const char *redop_of(const struct opts *o)
{
	if (o->op == COLL_ALLREDUCE || o->op == COLL_REDUCESCATTER ||
	    o->op == COLL_REDUCE)
		return redop_names[o->redop];
	return "none";
}

static long root_of(const struct opts *o)
{
	return o->op == COLL_BROADCAST || o->op == COLL_REDUCE ? o->root : -1;
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
	int i, k;

	printf("# llmsim collective: %s, %ld ranks on %s (%lld node%s x %lld "
	       "GPUs), library %s\n", coll_op_names[o->op], o->ranks,
	       s->name ? s->name : o->system, (long long)s->nodes,
	       s->nodes == 1 ? "" : "s", (long long)s->gpus_per_node,
	       s->collectives->name ? s->collectives->name : "(inline)");
	printf("# out-of-place and in-place are the same prediction (llmsim "
	       "does not model the\n# difference); #wrong is N/A (nothing is "
	       "checked).\n#\n");
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
		       rows[i].count, o->dtype, redop_of(o), root_of(o));
		for (k = 0; k < 2; k++)
			printf(" %9.2f %7.2f %7.2f %6s", rows[i].r.time_s * 1e6,
			       rows[i].r.algbw_Bps / 1e9,
			       rows[i].r.busbw_Bps / 1e9, "N/A");
		printf("  %-12s %s\n", rows[i].r.algorithm, rows[i].r.protocol);
		sum += rows[i].r.busbw_Bps / 1e9;
	}
	printf("# Avg bus bandwidth    : %g\n", n ? sum / n : 0.0);
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
		       rows[i].r.protocol, redop_of(o), root_of(o));
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
		    !cJSON_AddStringToObject(r, "redop", redop_of(o)) ||
		    !cJSON_AddNumberToObject(r, "root", (double)root_of(o)) ||
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

static cJSON *name_or_null(const char *const *names, int i)
{
	return i < 0 ? cJSON_CreateNull() : cJSON_CreateString(names[i]);
}

/*
 * What the run was asked: the resolved system and the collective (op,
 * ranks, type, reduction, root, sizes, forced algorithm and protocol),
 * so runs of different ops or rank counts have different config hashes.
 * NULL when out of memory.
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
	ok = cJSON_AddStringToObject(c, "op", coll_op_names[o->op]) &&
	     cJSON_AddNumberToObject(c, "ranks", (double)o->ranks) &&
	     cJSON_AddStringToObject(c, "type", o->dtype) &&
	     cJSON_AddStringToObject(c, "redop", redop_of(o)) &&
	     cJSON_AddNumberToObject(c, "root", (double)root_of(o)) &&
	     cJSON_AddNumberToObject(c, "min_bytes", o->min_B) &&
	     cJSON_AddNumberToObject(c, "max_bytes", o->max_B) &&
	     cJSON_AddNumberToObject(c, "step_factor", o->factor) &&
	     cJSON_AddItemToObject(c, "algorithm",
				   name_or_null(coll_algo_names, o->algo)) &&
	     cJSON_AddItemToObject(c, "protocol",
				   name_or_null(coll_proto_names, o->proto));
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
		cJSON_AddStringToObject(r, "op", coll_op_names[o->op]) &&
		cJSON_AddStringToObject(r, "system",
					s->name ? s->name : o->system) &&
		cJSON_AddNumberToObject(r, "ranks", (double)o->ranks) &&
		cJSON_AddStringToObject(r, "type", o->dtype) &&
		cJSON_AddStringToObject(r, "redop", redop_of(o)) &&
		cJSON_AddNumberToObject(r, "root", (double)root_of(o)) &&
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
		print_table(o, s, rows, n);
	if (o->store && store_rows(o, data_root, cfg_s, json, rows, n, d) != CLI_OK)
		rc = CLI_FAIL;
out:
	cJSON_free(json);
	cJSON_free(cfg_s);
	cJSON_Delete(res);
	cJSON_Delete(cfg);
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
			  .factor = 2, .dtype = "float", .redop = 0, .algo = -1,
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
