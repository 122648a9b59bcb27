/*
 * cli_plan.c - `llmsim plan JOB.yaml [--top K] [--objective O]
 * [--max-gpus N] [--headroom F] [--set k=v]... [--json] [--db PATH]
 * [--no-store] [--full] [--analytical-only]`: search the job's parallel
 * layouts (plan.h), print the ranked table (or one JSON object), store
 * the plan with the job it came from.
 *
 * `llmsim plan JOB.yaml --pd-ratio [--gpus N] [--set k=v]... [--json]`:
 * the prefill:decode ratio search of a disaggregated serving job against
 * its SLO (serve/serve_plan.h).
 *
 * A --set of a searched dimension (parallelism.tp, training.recompute,
 * ...) pins it; any other --set overrides the job as in `llmsim run`.
 *
 * Exit status: 0 success; 1 runtime failure; 2 bad input (job
 * diagnostics, an impossible pin, no layout that is valid or fits).
 * SIGINT or SIGTERM says in one line that the plan was interrupted and
 * at which stage, then ends the process by that signal (exit 130 or 143
 * in a shell), as `llmsim sweep` does.
 */
#include "cli.h"

#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/arena.h"
#include "base/diag.h"
#include "base/mem.h"
#include "base/units.h"
#include "config/config.h"
#include "config/spec_job.h"
#include "plan/plan.h"
#include "run/step.h"
#include "serve/serve_plan.h"
#include "store/store.h"
#include "sweep/sweep_run.h"

struct plan_cli {
	const char *job;
	const char **sets;
	size_t nsets;
	int json;
	const char *db;
	int no_store;
	int pd_ratio;		/* --pd-ratio: prefill:decode splits */
	int64_t gpus;		/* --gpus, with --pd-ratio */
	struct plan_opts o;
};

static int parse_int(const char *v, int64_t lo, int64_t hi, int64_t *out)
{
	char *end;
	long long n = strtoll(v, &end, 10);

	if (*v == '\0' || *end != '\0' || n < lo || n > hi)
		return -1;
	*out = n;
	return 0;
}

/* "5%" or "0.05": a fraction in [0, 1). */
static int parse_fraction(const char *v, double *out)
{
	char *end;
	double x = strtod(v, &end);

	if (end == v)
		return -1;
	if (strcmp(end, "%") == 0)
		x /= 100;
	else if (*end != '\0')
		return -1;
	if (!(x >= 0 && x < 1))
		return -1;
	*out = x;
	return 0;
}

static int objective(const char *v, int *out)
{
	int i;

	for (i = 0; plan_objective_names[i]; i++)
		if (strcmp(v, plan_objective_names[i]) == 0) {
			*out = i;
			return 0;
		}
	return -1;
}

/* Pin the searched dimensions a --set names: "parallelism.tp=8", or a
 * flow mapping "parallelism={tp: 8, pp: 2}" (its keys). */
static void pin_set(struct plan_opts *o, const char *set)
{
	const char *eq = strchr(set, '='), *p;
	char key[128];
	size_t n;

	if (!eq || (size_t)(eq - set) >= sizeof(key))
		return;
	memcpy(key, set, (size_t)(eq - set));
	key[eq - set] = '\0';
	if (plan_pin_key(o, key))
		return;
	if (strcmp(key, "parallelism") != 0 && strcmp(key, "training") != 0)
		return;
	for (p = eq + 1; *p; p++) {	/* each "name:" inside the braces */
		const char *s = p;

		while (*s == '{' || *s == ',' || *s == ' ')
			s++;
		n = strcspn(s, ":,}");
		if (s[n] == ':' && n > 0 && n < 64) {
			char name[64];

			memcpy(name, s, n);
			name[n] = '\0';
			(void)plan_pin_key(o, name);
		}
		p = s + n;
		if (!*p)
			break;
	}
}

static int parse(int argc, char **argv, struct arena *a, struct plan_cli *c)
{
	static const struct option longopts[] = {
		{ "top", required_argument, NULL, 'k' },
		{ "objective", required_argument, NULL, 'o' },
		{ "max-gpus", required_argument, NULL, 'g' },
		{ "headroom", required_argument, NULL, 'r' },
		{ "set", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "db", required_argument, NULL, 'd' },
		{ "no-store", no_argument, NULL, 'n' },
		{ "full", no_argument, NULL, 'F' },
		{ "analytical-only", no_argument, NULL, 'A' },
		{ "cross-node-tp", no_argument, NULL, 'X' },
		{ "jobs", required_argument, NULL, 'J' },
		{ "pd-ratio", no_argument, NULL, 'P' },
		{ "gpus", required_argument, NULL, 'G' },
		{ NULL, 0, NULL, 0 },
	};
	int64_t v;
	int ch;

	memset(c, 0, sizeof(*c));
	plan_opts_init(&c->o);
	c->sets = arena_alloc(a, (size_t)argc * sizeof(*c->sets));
	if (!c->sets)
		return CLI_FAIL;
	optind = 0;	/* glibc: start over (and permute operands last) */
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (ch) {
		case 'k':
			if (parse_int(optarg, 1, 1000, &v) != 0)
				return cli_usage_error("plan", "--top: expected a "
					"count from 1 to 1000, got '%s'", optarg);
			c->o.top_k = (int)v;
			break;
		case 'o':
			if (objective(optarg, &c->o.objective) != 0)
				return cli_usage_error("plan", "--objective: expected "
					"throughput, memory or cost, got '%s'", optarg);
			break;
		case 'g':
			if (parse_int(optarg, 1, 100000000, &v) != 0)
				return cli_usage_error("plan", "--max-gpus: expected a "
					"GPU count, got '%s'", optarg);
			c->o.max_gpus = v;
			break;
		case 'r':
			if (parse_fraction(optarg, &c->o.headroom) != 0)
				return cli_usage_error("plan", "--headroom: expected "
					"a fraction of the usable memory such as 5%% or "
					"0.05, got '%s'", optarg);
			break;
		case 's':
			c->sets[c->nsets++] = optarg;
			pin_set(&c->o, optarg);
			break;
		case 'j':
			c->json = 1;
			break;
		case 'd':
			c->db = optarg;
			break;
		case 'n':
			c->no_store = 1;
			break;
		case 'F':
			c->o.full_fidelity = 1;
			break;
		case 'A':
			c->o.no_full = 1;
			break;
		case 'X':
			c->o.cross_node_tp = 1;
			break;
		case 'J':
			if (parse_int(optarg, 1, 256, &v) != 0)
				return cli_usage_error("plan", "--jobs: expected a "
					"count of processes from 1 to 256, got '%s'",
					optarg);
			c->o.jobs = (int)v;
			break;
		case 'P':
			c->pd_ratio = 1;
			break;
		case 'G':
			if (parse_int(optarg, 1, 100000000, &v) != 0)
				return cli_usage_error("plan", "'--gpus' expects a "
						       "positive integer, got '%s'",
						       optarg);
			c->gpus = v;
			break;
		default:
			return cli_usage_error("plan", "unknown option or missing "
					       "value: '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return cli_usage_error("plan", "%s", "no job given");
	if (optind + 1 < argc)
		return cli_usage_error("plan", "more than one job given ('%s')",
				       argv[optind + 1]);
	c->job = argv[optind];
	if (c->gpus > 0 && !c->pd_ratio)
		return cli_usage_error("plan", "%s", "--gpus goes with --pd-ratio "
				       "(the layout search takes --max-gpus)");
	return CLI_OK;
}

static int report(const struct plan_cli *c, const struct job_spec *j,
		  const struct plan_result *r, char **json, struct diag *d)
{
	if (cli_json_text(plan_to_json(j, &c->o, r), c->json, json,
			  d) != CLI_OK)
		return CLI_FAIL;
	if (!c->json)
		plan_print(stdout, j, &c->o, r);
	return CLI_OK;
}

/* Store the plan with the job it came from and its ranking. */
static int store_plan(const struct plan_cli *c, const char *data_root,
		      const struct job_spec *j, const struct plan_result *r,
		      const char *json, struct diag *d)
{
	struct store_plan_row *rows = mem_calloc((size_t)(r->ncands ? r->ncands : 1),
						 sizeof(*rows));
	struct cli_result res = { .command = "plan", .schema = &job_schema,
				  .config = j, .json = json, .plan = rows,
				  .nplan = (uint32_t)r->ncands };
	int64_t i;
	int rc;

	if (!rows) {
		diag_oom(d);
		return CLI_FAIL;
	}
	for (i = 0; i < r->ncands; i++)
		sweep_plan_row(r, i, &rows[i]);
	rc = cli_store(c->db, data_root, &res, d);
	mem_free(rows);
	return rc;
}

static void pd_table(const struct serve_plan_point *v, int n)
{
	char a[24], b[24];
	int i;

	printf("%-14s %6s %14s %14s %14s %12s %12s\n", "split", "GPUs",
	       "max rate", "per GPU", "output tok/s", "TTFT p99", "TPOT p99");
	for (i = 0; i < n; i++) {
		char split[32];

		if (v[i].prefill_instances == 0)
			snprintf(split, sizeof(split), "colocated x%lld",
				 (long long)v[i].decode_instances);
		else
			snprintf(split, sizeof(split), "P%lld:D%lld",
				 (long long)v[i].prefill_instances,
				 (long long)v[i].decode_instances);
		step_human(a, sizeof(a), v[i].ttft_p99_s, UNIT_TIME);
		step_human(b, sizeof(b), v[i].tpot_p99_s, UNIT_TIME);
		printf("%-14s %6lld %10.4g r/s %10.4g r/s %14.0f %12s %12s\n",
		       split, (long long)v[i].gpus, v[i].max_rate,
		       v[i].rate_per_gpu, v[i].output_tokens_per_s, a, b);
	}
}

static int pd_json(const struct serve_plan_point *v, int n)
{
	cJSON *arr = cJSON_CreateArray();
	char *text;
	int i;

	for (i = 0; arr && i < n; i++) {
		cJSON *o = cJSON_CreateObject();

		if (!o || !cJSON_AddItemToArray(arr, o)) {
			cJSON_Delete(o);
			cJSON_Delete(arr);
			return CLI_FAIL;
		}
		if (!cJSON_AddNumberToObject(o, "prefill_instances",
					     (double)v[i].prefill_instances) ||
		    !cJSON_AddNumberToObject(o, "decode_instances",
					     (double)v[i].decode_instances) ||
		    !cJSON_AddNumberToObject(o, "gpus", (double)v[i].gpus) ||
		    !cJSON_AddNumberToObject(o, "max_rate", v[i].max_rate) ||
		    !cJSON_AddNumberToObject(o, "rate_per_gpu", v[i].rate_per_gpu) ||
		    !cJSON_AddNumberToObject(o, "output_tokens_per_s",
					     v[i].output_tokens_per_s) ||
		    !cJSON_AddNumberToObject(o, "ttft_p99_s", v[i].ttft_p99_s) ||
		    !cJSON_AddNumberToObject(o, "tpot_p99_s", v[i].tpot_p99_s)) {
			cJSON_Delete(arr);
			return CLI_FAIL;
		}
	}
	text = arr ? cJSON_Print(arr) : NULL;
	cJSON_Delete(arr);
	if (!text)
		return CLI_FAIL;
	printf("%s\n", text);
	cJSON_free(text);
	return CLI_OK;
}

/* --gpus of --pd-ratio: within the system, and room for the smallest
 * instance (colocated tp x pp, a prefill or a decode one). 0 or -1. */
static int check_pd_gpus(int64_t gpus, const struct job_spec *j,
			 struct diag *d)
{
	const struct disagg_spec *dg = &j->serving.disaggregated;
	const struct system_spec *s = j->system;
	int64_t have = system_gpus(s), least;

	least = j->parallelism.tp * j->parallelism.pp;
	if (dg->prefill.tp * dg->prefill.pp > 0 &&
	    dg->prefill.tp * dg->prefill.pp < least)
		least = dg->prefill.tp * dg->prefill.pp;
	if (dg->decode.tp * dg->decode.pp > 0 &&
	    dg->decode.tp * dg->decode.pp < least)
		least = dg->decode.tp * dg->decode.pp;
	if (gpus > have) {
		diag_error(d, NULL, 0, 0, "--gpus %lld: the system has %lld "
			   "GPUs (%lld node%s x %lld); add --set system.nodes="
			   "%lld", (long long)gpus, (long long)have,
			   (long long)s->nodes, s->nodes == 1 ? "" : "s",
			   (long long)s->gpus_per_node,
			   (long long)((gpus + s->gpus_per_node - 1) /
				       s->gpus_per_node));
		return -1;
	}
	if (gpus > 0 && gpus < least) {
		diag_error(d, NULL, 0, 0, "--gpus %lld: fewer than the %lld "
			   "GPUs of the smallest instance (tp x pp)",
			   (long long)gpus, (long long)least);
		return -1;
	}
	return 0;
}

/* --pd-ratio: the prefill:decode splits of serving job j. */
static int pd_ratio(const struct plan_cli *c, struct config_ctx *cx,
		    struct diag *d)
{
	struct serve_plan_opts po = {0, 0, 0, 0};
	struct serve_plan_point *v = NULL;
	struct job_spec *j = arena_alloc(cx->arena, sizeof(*j));
	int rc, n = 0;

	if (!j) {
		diag_oom(d);
		return CLI_FAIL;
	}
	memset(j, 0, sizeof(*j));
	if (config_load(cx, &job_schema, c->job, c->sets, c->nsets, j) != 0)
		return d->oom ? CLI_FAIL : CLI_USAGE;
	if (!job_is_inference(j)) {
		diag_error(d, NULL, 0, 0, "plan --pd-ratio needs a serving job "
			   "(phase serving), got phase %s",
			   job_phase_names[j->phase]);
		return CLI_USAGE;
	}
	if (check_pd_gpus(c->gpus, j, d) != 0)
		return CLI_USAGE;
	po.gpus = c->gpus;
	rc = serve_plan_ratio(j, &po, &v, &n, d);
	if (rc != 0) {
		mem_free(v);
		return rc == -2 ? CLI_USAGE : CLI_FAIL;
	}
	if (c->json)
		rc = pd_json(v, n);
	else {
		pd_table(v, n);
		rc = CLI_OK;
	}
	if (rc != CLI_OK)
		diag_oom(d);
	mem_free(v);
	return rc;
}

/* ---- interruption ---------------------------------------------------- */

enum { STAGE_LOAD, STAGE_SEARCH, STAGE_STORE, STAGE_N };

static volatile sig_atomic_t stage;
static pid_t plan_pid;	/* forked full-run workers die silently */

static void on_stop(int sig)
{
	static const char *const msg[STAGE_N] = {
		"\nllmsim plan: interrupted while reading the job; nothing "
		"was searched or stored\n",
		"\nllmsim plan: interrupted before the search finished; "
		"nothing was printed or stored\n",
		"\nllmsim plan: interrupted after the search, while printing "
		"or storing the plan (a store is one transaction: all or "
		"nothing)\n",
	};
	const char *m = msg[stage >= 0 && stage < STAGE_N ? stage : 0];

	if (getpid() == plan_pid)
		(void)!write(STDERR_FILENO, m, strlen(m));
	signal(sig, SIG_DFL);
	raise(sig);
}

static const int stop_sigs[] = { SIGINT, SIGTERM };

/* Catch the stop signals (one ignored when we started, as in a
 * background job of a script, stays ignored). */
static void catch_stops(struct sigaction *old)
{
	struct sigaction sa;
	size_t i;

	stage = STAGE_LOAD;
	plan_pid = getpid();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < sizeof(stop_sigs) / sizeof(stop_sigs[0]); i++) {
		sigaction(stop_sigs[i], NULL, &old[i]);
		if (old[i].sa_handler != SIG_IGN)
			sigaction(stop_sigs[i], &sa, NULL);
	}
}

static void restore_stops(const struct sigaction *old)
{
	size_t i;

	for (i = 0; i < sizeof(stop_sigs) / sizeof(stop_sigs[0]); i++)
		sigaction(stop_sigs[i], &old[i], NULL);
}

int cli_plan(int argc, char **argv, const char *argv0)
{
	struct sigaction old[2];
	struct arena a;
	struct diag d;
	struct plan_cli c;
	struct config_ctx cx;
	struct job_spec *j;
	struct plan_result r;
	char *json = NULL;
	int rc;

	catch_stops(old);
	arena_init(&a);
	diag_init(&d, stderr);
	memset(&r, 0, sizeof(r));
	rc = parse(argc, argv, &a, &c);
	if (rc != CLI_OK)
		goto out;
	cx = (struct config_ctx){ &a, &d, config_data_root(&a, argv0) };
	j = arena_alloc(&a, sizeof(*j));
	rc = CLI_FAIL;
	if (!j || !cx.data_root) {
		diag_oom(&d);
		goto out;
	}
	if (c.pd_ratio) {
		stage = STAGE_SEARCH;
		rc = pd_ratio(&c, &cx, &d);
		goto out;
	}
	if (config_load(&cx, &job_plan_schema, c.job, c.sets, c.nsets, j) != 0) {
		rc = d.oom ? CLI_FAIL : CLI_USAGE;
		goto out;
	}
	if (job_is_inference(j)) {
		diag_error(&d, NULL, 0, 0, "plan searches the parallel layouts of "
			   "a training job; job '%s' is phase %s (--pd-ratio "
			   "searches the prefill:decode splits of a serving job)",
			   j->name ? j->name : c.job, job_phase_names[j->phase]);
		rc = CLI_USAGE;
		goto out;
	}
	stage = STAGE_SEARCH;
	rc = plan_run(j, &c.o, &r, &d);
	stage = STAGE_STORE;
	if (rc != 0) {
		rc = rc == 2 ? CLI_USAGE : CLI_FAIL;
		goto out;
	}
	rc = report(&c, j, &r, &json, &d);
	if (rc == CLI_OK && !c.no_store)
		rc = store_plan(&c, cx.data_root, j, &r, json, &d);
out:
	cJSON_free(json);
	plan_result_release(&r);
	arena_release(&a);
	restore_stops(old);
	return rc;
}
