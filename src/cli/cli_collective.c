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
 * all-gather, reduce-scatter and all-to-all, to what the library's test
 * suite runs a rank: --tester, by default nccl-tests' 16 B for an NCCL
 * system, rccl-tests' 4 elements (all-gather, reduce-scatter) or one
 * (all-to-all) for RCCL, one element otherwise), and the count column
 * is the call's (per rank for those three; with
 * --group G, per operation: sizes in whole elements of G operations). A
 * size with no whole element (per rank or operation) is left out with a
 * warning: the testers print it as count 0, which NCCL launches nothing
 * for.
 * `sendrecv` is nccl-tests' pattern: every rank sends the size to the next
 * rank and receives from the previous one, all at once.
 *
 * `dispatch` and `combine` are an MoE layer's token exchange over an
 * expert-parallel group of --ranks GPUs (models/ep.h): each GPU routes
 * --tokens tokens of --hidden elements to --topk of --experts experts
 * (uniformly; within --topk-groups of --groups groups first when given;
 * --gate round_robin: token t takes experts k t .. k t + k - 1 mod E,
 * the fixed gate of a job's framework.balanced_gate round_robin),
 * through the --dispatcher path of configs/ep (deepep, deepep-ll,
 * hybridep: GPU-initiated, own latency and SM budget; alltoall,
 * hierarchical: the library's all-to-all), "name[,key=value...]" as
 * validate's dispatch cases write it (config_load_named). One row per
 * token count; size
 * is DeepEP's logical byte count (ep.h logical_B) and algbw that over the
 * time, the "bottleneck bandwidth" DeepEP's and Hybrid-EP's tests print;
 * busbw the bytes that leave the GPU (send_B less its own share) over the
 * time.
 *
 * --group G (broadcast, reduce): the size is a library group of G such
 * operations launched as one (ncclGroupStart/End), size / G bytes each,
 * rooted at ranks 0..G-1 (network/cgroup.h), as TensorRT-LLM's
 * attention-DP MoE exchange issues them.
 *
 * Options as rccl-tests and nccl-tests take them work too (-b, -e, -f,
 * -g, -d, -o for the reduction, -r for the root, and their long names);
 * dtypes in either spelling (bf16 or bfloat16). The table has rccl-tests'
 * columns: size, count, type, redop, root, then time, algbw, busbw and
 * #wrong for out-of-place and in-place (one prediction for both, nothing
 * checked: N/A). --json is an object (schema_version, llmsim_version,
 * config_hash, op, system, ranks, type, redop, root) around the rows.
 *
 * Results go to the database (one run, one row per size) unless
 * --no-store, with the system and the collective asked for as the
 * config, so different ops or rank counts have different hashes. Exit
 * status: 0, 1 runtime failure, 2 bad input.
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
#include "config/spec_gpu.h"
#include "config/spec_job.h"
#include "config/spec_moe.h"
#include "config/spec_system.h"
#include "models/ep.h"
#include "store/store.h"
#include "base/units.h"

#include "cli_collective.h"

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

/* -b and -e when not given: rccl-tests' and nccl-tests' 32M each
 * (NVIDIA/nccl-tests src/common.cu, "Command line parameter defaults"). */
#define DEFAULT_SIZE_B ((double)(32 << 20))

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
	return cli_choice_error("collective", "--dtype", got, names);
}

/* CLI_OK, or CLI_USAGE after reporting. */
static int parse_size(const char *opt, const char *text, double *out)
{
	const char *why;

	if (units_parse_test_size(text, out, &why) == 0) {
		/* 0 B would be a row of nothing, and the step factor could
		 * never take it to --max. */
		if (*out >= 1)
			return CLI_OK;
		return cli_usage_error("collective", "%s: expected a size of at "
				       "least 1 byte, got '%s'", opt, text);
	}
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

/* A whole number from lo to hi into *out; bounded before the cast
 * ((long)1e20 is LONG_MIN, which --root and --group let through to run
 * as root -9223372036854775808 and one operation). */
static int ranged(const char *opt, const char *what, const char *v,
		  long long lo, long long hi, long *out)
{
	double x;

	if (!number(v, (double)lo, &x) || x != floor(x) || x > (double)hi)
		return cli_usage_error("collective", "%s: expected %s from "
				       "%lld to %lld, got '%s'", opt, what, lo,
				       hi, v);
	*out = (long)x;
	return CLI_OK;
}

/* --tokens 128,4096: token counts per GPU, one row each. */
static int parse_tokens(struct opts *o, const char *v)
{
	const char *p = v;

	o->ntokens = 0;
	do {	/* at least one item, none empty ('' and '128,' too) */
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
	} while (*p++ == ',');
	return CLI_OK;
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

	for (i = 0; i < NDTYPES; i++)
		if (strcmp(dtypes[i].name, v) == 0)
			return dtypes[i].name;
	for (i = 0; alias[i]; i += 2)
		if (strcmp(alias[i], v) == 0)
			return alias[i + 1];
	return NULL;
}


enum {
	OPT_SYSTEM = 256, OPT_SET, OPT_OP, OPT_ALGO, OPT_PROTO, OPT_DB,
	OPT_JSON, OPT_CSV, OPT_NO_STORE, OPT_TOKENS, OPT_HIDDEN, OPT_TOPK,
	OPT_EXPERTS, OPT_GROUPS, OPT_TOPK_GROUPS, OPT_DISPATCHER, OPT_SMS,
	OPT_GATE, OPT_GROUP, OPT_TESTER,
};


/* The options of dispatch and combine (getopt_long's c, its optarg):
 * CLI_OK, CLI_USAGE, or 1 when c is none of them. */
static int ep_option(struct opts *o, int c, const char *v)
{
	double x;

	switch (c) {
	case OPT_TOKENS: return parse_tokens(o, v);
	case OPT_HIDDEN: return whole("--hidden", v, 1, &o->hidden);
	case OPT_TOPK: return whole("--topk", v, 1, &o->topk);
	case OPT_EXPERTS: return whole("--experts", v, 1, &o->experts);
	case OPT_GROUPS:
		if (strcmp(v, "nodes") == 0) {
			o->groups = -1;
			return CLI_OK;
		}
		return whole("--groups", v, 1, &o->groups);
	case OPT_TOPK_GROUPS:
		return whole("--topk-groups", v, 1, &o->topk_groups);
	case OPT_DISPATCHER:
		o->dispatcher = v;
		return CLI_OK;
	case OPT_GATE:
		if ((o->gate = schema_name_index(balanced_gate_names, v)) < 0)
			return cli_choice_error("collective", "--gate", v,
						balanced_gate_names);
		return CLI_OK;
	case OPT_SMS:
		if (whole("--sms", v, 1, &x) != CLI_OK)
			return CLI_USAGE;
		o->sms = (long)x;
		return CLI_OK;
	default:
		return 1;
	}
}

static int op_option(struct opts *o, const char *v)
{
	o->ep = strcmp(v, "dispatch") == 0 ? EP_OP_DISPATCH :
		strcmp(v, "combine") == 0 ? EP_OP_COMBINE : EP_OP_NONE;
	if (o->ep != EP_OP_NONE)
		o->op = COLL_ALLTOALL;
	else if ((o->op = schema_name_index(coll_op_names, v)) < 0)
		return cli_choice_error("collective", "--op", v, op_names_ep);
	return CLI_OK;
}

/* One option (getopt_long's c with its optarg). CLI_OK or CLI_USAGE. */
static int option(struct opts *o, int c, const char *v)
{
	int rc;

	switch (c) {
	case OPT_SYSTEM: o->system = v; break;
	case OPT_SET:
		/* The system is loaded on its own: 'system.nodes=2' means
		 * 'nodes=2' here. */
		o->sets[o->nsets++] = strncmp(v, "system.", 7) == 0 ? v + 7 : v;
		break;
	case OPT_OP: return op_option(o, v);
	case 'g':
		return ranged("--ranks", "a whole number of GPUs", v, 1,
			      SYSTEM_MAX_GPUS, &o->ranks);
	case 'b': return parse_size("--min (-b)", v, &o->min_B);
	case 'e': return parse_size("--max (-e)", v, &o->max_B);
	case 'f': return parse_number("--step-factor (-f)", v, 1, &o->factor);
	case 'd':
		if (!(o->dtype = dtype_canonical(v)))
			return bad_dtype(v);
		o->dtype_set = 1;
		break;
	case 'o':
		if ((o->redop = schema_name_index(coll_redop_names, v)) < 0)
			return cli_choice_error("collective", "--redop (-o)",
						v, coll_redop_names);
		break;
	case 'r':
		return ranged("--root (-r)", "a rank", v, 0,
			      SYSTEM_MAX_GPUS - 1, &o->root);
	case OPT_ALGO:
		if ((o->algo = schema_name_index(coll_algo_names, v)) < 0)
			return cli_choice_error("collective", "--algo", v,
						coll_algo_names);
		break;
	case OPT_GROUP:
		return ranged("--group", "a count of operations", v, 1,
			      SYSTEM_MAX_GPUS, &o->group);
	case OPT_PROTO:
		if ((o->proto = schema_name_index(coll_proto_names, v)) < 0)
			return cli_choice_error("collective", "--proto", v,
						coll_proto_names);
		break;
	case OPT_TESTER:
		if ((o->tester = schema_name_index(coll_tester_names, v)) < 0)
			return cli_choice_error("collective", "--tester", v,
						coll_tester_names);
		break;
	case OPT_DB: o->db = v; break;
	case OPT_JSON: o->fmt = FMT_JSON; break;
	case OPT_CSV: o->fmt = FMT_CSV; break;
	case OPT_NO_STORE: o->store = 0; break;
	default:
		rc = ep_option(o, c, v);
		return rc == 1 ? CLI_USAGE : rc;
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
	/* group-limited routing as the model's n_group / topk_group
	 * (spec_model.c): equal groups, topk_group of them at most, and room
	 * in them for the k experts (DeepSeek-V3's gate takes the top-k of
	 * the experts of its topk_group groups; torch.topk refuses k above
	 * them). Before, --groups 3 of 256 experts and --topk-groups 5 ran as
	 * ungrouped routing, printing "top-5 of the groups". */
	if (o->groups > 0 && (long)o->experts % (long)o->groups != 0)
		return cli_usage_error("collective", "--groups %g does not "
				       "divide --experts %g (the groups are "
				       "equal)", o->groups, o->experts);
	if (o->groups > 0 && o->topk_groups > o->groups)
		return cli_usage_error("collective", "--topk-groups %g is "
				       "above --groups %g", o->topk_groups,
				       o->groups);
	if (o->groups > 0 && o->topk_groups > 0 &&
	    o->topk > o->topk_groups * (o->experts / o->groups))
		return cli_usage_error("collective", "--topk %g is above the "
				       "%g experts of --topk-groups %g groups "
				       "of %g", o->topk,
				       o->topk_groups * (o->experts / o->groups),
				       o->topk_groups, o->experts / o->groups);
	if (o->gate == GATE_ROUND_ROBIN && o->groups)
		return cli_usage_error("collective", "%s", "--gate round_robin "
				       "picks consecutive experts, not groups: "
				       "drop --groups");
	return CLI_OK;
}

/* The options, long and short (rccl-tests' and nccl-tests' short options
 * -b -e -f -g -d -o -r and their long spellings work alongside llmsim's). */
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
	{ "group", required_argument, NULL, OPT_GROUP },
	{ "algo", required_argument, NULL, OPT_ALGO },
	{ "proto", required_argument, NULL, OPT_PROTO },
	{ "db", required_argument, NULL, OPT_DB },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "csv", no_argument, NULL, OPT_CSV },
	{ "no-store", no_argument, NULL, OPT_NO_STORE },
	{ "tokens", required_argument, NULL, OPT_TOKENS },
	{ "hidden", required_argument, NULL, OPT_HIDDEN },
	{ "topk", required_argument, NULL, OPT_TOPK },
	{ "experts", required_argument, NULL, OPT_EXPERTS },
	{ "groups", required_argument, NULL, OPT_GROUPS },
	{ "topk-groups", required_argument, NULL, OPT_TOPK_GROUPS },
	{ "dispatcher", required_argument, NULL, OPT_DISPATCHER },
	{ "sms", required_argument, NULL, OPT_SMS },
	{ "gate", required_argument, NULL, OPT_GATE },
	{ "tester", required_argument, NULL, OPT_TESTER },
	{ NULL, 0, NULL, 0 },
};

/* Options into o; o->sets has room for argc entries. */
static int parse(struct opts *o, int argc, char **argv)
{
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
	if (o->ep == EP_OP_NONE && (o->ntokens || o->dispatcher || o->sms ||
				    o->hidden || o->topk || o->experts ||
				    o->groups || o->topk_groups || o->gate))
		return cli_usage_error("collective", "%s", "--tokens, --hidden, "
				       "--topk, --experts, --groups, "
				       "--topk-groups, --gate, --dispatcher and "
				       "--sms go with --op dispatch or combine");
	if (o->min_B > 0 && o->max_B > 0 && o->min_B > o->max_B)
		return cli_usage_error("collective", "--min (%.0f B) is larger "
				       "than --max (%.0f B)", o->min_B, o->max_B);
	/* rccl-tests' -b and -e both default to 32M; one given alone
	 * keeps the other's default unless that puts them out of order,
	 * where it takes the given one's value (-b 64M: one size) */
	if (o->min_B <= 0)
		o->min_B = o->max_B > 0 && o->max_B < DEFAULT_SIZE_B ?
			   o->max_B : DEFAULT_SIZE_B;
	if (o->max_B <= 0)
		o->max_B = o->min_B > DEFAULT_SIZE_B ? o->min_B : DEFAULT_SIZE_B;
	if (o->ep != EP_OP_NONE)
		return ep_defaults(o);
	if (o->factor <= 1 && o->min_B != o->max_B)
		return cli_usage_error("collective", "%s", "--step-factor must "
				       "be above 1 to go from --min to --max");
	if (o->root >= o->ranks)
		return cli_usage_error("collective", "--root %ld: the ranks "
				       "are 0..%ld", o->root, o->ranks - 1);
	if (o->group > 1 && o->op != COLL_BROADCAST && o->op != COLL_REDUCE)
		return cli_usage_error("collective", "%s", "--group goes with "
				       "--op broadcast or reduce");
	if (o->group > o->ranks)
		return cli_usage_error("collective", "--group %ld: at most one "
				       "operation per rank (%ld)", o->group,
				       o->ranks);
	return CLI_OK;
}

/* The tester of the system's library when --tester was not given:
 * nccl-tests for NCCL (a preset named nccl or nccl-*, its releases),
 * rccl-tests for RCCL, whole elements for another library. */
static void resolve_tester(struct opts *o, const struct system_spec *s)
{
	const char *lib = s->collectives && s->collectives->name ?
			  s->collectives->name : "";

	if (o->tester >= 0)
		return;
	o->tester = strncmp(lib, "nccl", 4) == 0 ? TESTER_NCCL :
		    strncmp(lib, "rccl", 4) == 0 ? TESTER_RCCL :
		    TESTER_ELEMENTS;
}

/* Bytes a size is rounded down to a multiple of: for the ops that split
 * the buffer over the ranks, what the tester runs a rank (its
 * getCollByteCount: nccl-tests v2.19.6, since v2.13.12 (29f4114),
 * `(count/nranks) & ~(16/eltSize - 1)`: 16 B; rccl-tests @ ae3e635
 * all-gather / reduce-scatter `(count/(ALIGN*nranks))*ALIGN`, ALIGN 4
 * elements, all-to-all count/nranks: one element) times the ranks; per
 * operation for a --group of broadcasts or reduces (size / G each);
 * else whole elements. Nested floors: floor(floor(S / e) / (p m)) m e
 * = floor(S / (e p m)) e p m, the testers' size. */
static double granule(const struct opts *o)
{
	double e = dtype_size(o->dtype), g = e;

	if (o->op == COLL_ALLGATHER || o->op == COLL_REDUCESCATTER ||
	    o->op == COLL_ALLTOALL) {
		if (o->tester == TESTER_NCCL)
			g = e < 16 ? 16 : e;
		else if (o->tester == TESTER_RCCL &&
			 o->op != COLL_ALLTOALL)
			g = 4 * e;
		g *= (double)o->ranks;
	}
	if (o->group > 1)
		g *= (double)o->group;
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
			       .algo = o->algo, .proto = o->proto, .replicas = 1,
			       .group = o->group > 1 ? (uint32_t)o->group : 1 };
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
	/* the count nccl-tests and rccl-tests print is the call's own
	 * (args->nbytes / wordSize: paramcount), per rank where the
	 * buffer is split over the ranks */
	row->count = size / dtype_size(o->dtype) /
		     (double)(o->op == COLL_ALLGATHER ||
			      o->op == COLL_REDUCESCATTER ||
			      o->op == COLL_ALLTOALL ? o->ranks :
			      o->group > 1 ? o->group : 1);
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
		.routing = { o->experts, o->topk, o->groups, o->topk_groups,
			     o->gate == GATE_ROUND_ROBIN },
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

/* The sizes run_sizes left out (empty of them, below one granule g):
 * a warning, or an error when none was left to time. 0 or -1. */
static int left_out(const struct opts *o, double g, int empty, int nrows,
		    struct diag *d)
{
	char what[96], unit[96];
	double e = dtype_size(o->dtype), per_rank = g / (double)o->ranks;

	if (o->group > 1) {
		snprintf(what, sizeof(what), "a group of %ld %s operations "
			 "over %ld ranks", o->group, coll_op_name(o), o->ranks);
		snprintf(unit, sizeof(unit), "a whole %s element per "
			 "operation", o->dtype);
	} else {
		snprintf(what, sizeof(what), "%s over %ld ranks",
			 coll_op_name(o), o->ranks);
		if (g <= e)
			snprintf(unit, sizeof(unit), "a whole %s element",
				 o->dtype);
		else if (per_rank <= e)
			snprintf(unit, sizeof(unit), "a whole %s element per "
				 "rank", o->dtype);
		else
			snprintf(unit, sizeof(unit), "%.0f B per rank, as %s "
				 "runs it", per_rank,
				 coll_tester_names[o->tester]);
	}
	/* --max holds a granule, but every size the step factor reached
	 * from --min was below one (--min 1 --step-factor 1e308) */
	if (nrows == 0 && o->max_B >= g) {
		diag_error(d, NULL, 0, 0, "no size from --min (%.0f B) by "
			   "--step-factor %g up to --max (%.0f B) holds %s: %s "
			   "moves a multiple of %.0f B (NCCL launches nothing "
			   "for count 0); raise --min or lower --step-factor",
			   o->min_B, o->factor, o->max_B, unit, what, g);
		return -1;
	}
	if (nrows == 0) {
		diag_error(d, NULL, 0, 0, "--max (%.0f B) holds less than %s: "
			   "%s moves a multiple of %.0f B (NCCL launches "
			   "nothing for count 0)", o->max_B, unit, what, g);
		return -1;
	}
	diag_warn(d, NULL, 0, 0, "%d size%s below %.0f B left out: %s moves "
		  "a multiple of it (%s), and a smaller size is count 0, which "
		  "NCCL launches nothing for", empty, empty == 1 ? "" : "s", g,
		  what, unit);
	return 0;
}

static int run_sizes(struct net *n, const struct opts *o, const uint32_t *gpus,
		     struct row *rows, int *nrows, struct diag *d)
{
	double s, g = granule(o);
	int empty = 0;

	*nrows = 0;
	for (s = o->min_B; s <= o->max_B * (1 + 1e-12); s *= o->factor) {
		double b = floor(s / g) * g;

		if (*nrows == MAX_ROWS) {
			diag_error(d, NULL, 0, 0, "more than %d sizes from --min "
				   "to --max; raise --step-factor", MAX_ROWS);
			return -1;
		}
		/* No whole element (per rank): the testers call the
		 * library with count 0, which NCCL discards without a
		 * launch (enqueue.cc taskAppend: "Empty collectives can be
		 * discarded"); its base latency would be a wrong time. */
		if (b > 0) {
			if (time_size(n, o, gpus, b, &rows[*nrows], d))
				return -1;
			++*nrows;
		} else {
			empty++;
		}
		if (o->factor <= 1)
			break;
	}
	if (empty)
		return left_out(o, g, empty, *nrows, d);
	return 0;
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
	/* One GPU crosses no link: the fabric model timed it 0 us (and a
	 * dispatch inf GB/s, a busbw NaN). NCCL on one GPU copies the
	 * buffer on the device: H200, all-reduce 5.8 us at 8 B to 69.6 us
	 * at 128 MiB (results/reference/device/h200-backend-cuda-coll-1gpu-
	 * 2026-12-04.jsonl), a kernel's cost, not the fabric's. */
	if (o->ranks < 2) {
		diag_error(d, NULL, 0, 0, "--ranks %ld: %s needs at least 2 "
			   "GPUs: on one nothing crosses a link (the library "
			   "copies the buffer on the GPU, a kernel's cost: "
			   "llmsim measure --op copy times it)", o->ranks,
			   coll_op_name(o));
		return -1;
	}
	return 0;
}

/* The dispatcher runs on the system's GPUs and spans the group's share
 * of one NVLink domain (the job's JR_EP_VENDOR rule) and holds at most
 * all of a GPU's SMs. */
static int check_dispatcher(const struct opts *o, const struct system_spec *s,
			    const struct ep_comm_spec *e, struct diag *d)
{
	const char *gpu = s->gpu->name ? s->gpu->name : "GPU";

	if (e->vendor != EP_VENDOR_ANY &&
	    (e->vendor == EP_VENDOR_NVIDIA) != (s->gpu->vendor == GPU_NVIDIA)) {
		diag_error(d, NULL, 0, 0, "dispatcher '%s' runs on %s GPUs "
			   "only, the system's %s is not one (alltoall or "
			   "hierarchical run on any)", e->name ? e->name : "",
			   ep_vendor_names[e->vendor], gpu);
		return -1;
	}
	if (!ep_comm_spans_domain(e, o->ranks, s->gpus_per_node)) {
		diag_error(d, NULL, 0, 0, "dispatcher '%s' spans at most %lld "
			   "GPUs of one NVLink domain (its scale_up_max_ranks), "
			   "--ranks %ld puts %lld in one of the system's "
			   "%lld-GPU domains (hybridep and deepep-ll span any)",
			   e->name ? e->name : "",
			   (long long)e->scale_up_max_ranks, o->ranks,
			   (long long)ep_comm_domain_ranks(o->ranks,
							   s->gpus_per_node),
			   (long long)s->gpus_per_node);
		return -1;
	}
	if (o->sms > s->gpu->compute_units) {
		diag_error(d, NULL, 0, 0, "--sms %ld: the GPU (%s) has %lld "
			   "SMs (compute_units)", o->sms, gpu,
			   (long long)s->gpu->compute_units);
		return -1;
	}
	return 0;
}

/* Load the system and time every size; rows filled. CLI status. */
static int simulate(struct opts *o, struct config_ctx *cx,
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
		if (config_load_named(cx, &ep_comm_schema, o->dispatcher,
				      "--dispatcher", 1, 1, e))
			return d->oom ? CLI_FAIL : CLI_USAGE;
		*ep = e;
	}
	if (check_ranks(o, s, d) != 0 ||
	    (e && check_dispatcher(o, s, e, d) != 0))
		return CLI_USAGE;
	resolve_tester(o, s);
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
	struct opts o = { .op = -1,
			  .factor = 2, .dtype = "float", .algo = -1,
			  .proto = -1, .fmt = FMT_TABLE, .store = 1,
			  .tester = -1 };
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
		rc = coll_output(&o, s, ep, rows, n, cx.data_root, &d);
out:
	mem_free(rows);
	arena_release(&a);
	return rc;
}
