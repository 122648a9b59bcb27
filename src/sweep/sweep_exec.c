/*
 * sweep_exec.c - one point of a sweep: resolve its job, skip it when
 * the database has it, simulate it, store it (sweep_impl.h).
 *
 * A point's job is the resolved base with the point's override trees
 * merged on (config_load_resolved), so everything config_load checks is
 * checked, and a bad value is reported at its place in the sweep file.
 * Those diagnostics are captured (open_memstream) and become the stored
 * reason of an invalid point.
 *
 * With `plan: true` the point's job is planned (plan.h, both tiers), the
 * winner simulated once more for its full step result, and the point
 * stored as the winner's run (config and step: what every view shows)
 * with the plan's ranking (plan_candidates, v_plans) and "objective" and
 * "plan" added to its result JSON. Its key is the hash of the job
 * planned and the planner's options.
 *
 * An invalid point has no resolved config to hash; its hash is the
 * SHA-256 of "invalid", the base as written and its axis values, so the
 * same invalid point is one row however often the sweep runs (and is
 * re-tried every time: it is cheap, and the base may have been fixed).
 */
#include "sweep_impl.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "base/arena.h"
#include "base/mem.h"
#include "base/sha256.h"
#include "config/cnode.h"
#include "config/config.h"
#include "config/schema.h"
#include "config/spec_job.h"
#include "plan/plan.h"
#include "run/step.h"
#include "store/store.h"

/* Everything one point allocates, released together. */
struct point {
	struct arena a;
	struct diag d;			/* the job's diagnostics, captured */
	char *msgs;			/* what d wrote (open_memstream) */
	size_t nmsgs;
	FILE *mf;
	struct job_spec *job;
	struct step_result *r;
	char *config_json, *result_json, *axes_json;
	/* plan: true */
	struct plan_result plan;
	struct job_spec win;		/* the winner's job */
	char *win_json;			/* its config, canonical JSON */
	char win_hash[65];
	struct store_plan_row *rows;	/* [plan.ncands] */
};

static int point_init(struct point *p)
{
	memset(p, 0, sizeof(*p));
	arena_init(&p->a);
	p->mf = open_memstream(&p->msgs, &p->nmsgs);
	diag_init(&p->d, p->mf);
	return p->mf ? 0 : -1;
}

/* The captured diagnostics (never NULL). */
static const char *point_msgs(struct point *p)
{
	if (p->mf && fflush(p->mf) != 0)
		return "(the diagnostics could not be kept: out of memory)";
	return p->msgs && p->msgs[0] ? p->msgs : "(no diagnostic)";
}

static void point_release(struct point *p)
{
	if (p->mf)
		fclose(p->mf);
	free(p->msgs);		/* open_memstream's buffer is malloc'd */
	if (p->r)
		step_result_release(p->r);
	mem_free(p->r);
	cJSON_free(p->config_json);
	cJSON_free(p->result_json);
	cJSON_free(p->axes_json);
	cJSON_free(p->win_json);
	mem_free(p->rows);
	plan_result_release(&p->plan);
	arena_release(&p->a);
}

/* The base as the hash of an invalid point sees it. */
static const char *base_text(struct sweep_ctx *c)
{
	const struct cnode *b = c->sw->base;

	return b->kind == CNODE_SCALAR ? b->text : "(inline base)";
}

static void invalid_hash(struct sweep_ctx *c, const char *axes_json,
			 char hash[65])
{
	static const char hexd[] = "0123456789abcdef";
	unsigned char dg[SHA256_DIGEST_B];
	struct sha256 h;
	int i;

	sha256_init(&h);
	sha256_update(&h, "invalid\n", 8);
	sha256_update(&h, base_text(c), strlen(base_text(c)));
	sha256_update(&h, "\n", 1);
	sha256_update(&h, axes_json, strlen(axes_json));
	sha256_final(&h, dg);
	for (i = 0; i < SHA256_DIGEST_B; i++) {
		hash[2 * i] = hexd[dg[i] >> 4];
		hash[2 * i + 1] = hexd[dg[i] & 15];
	}
	hash[64] = '\0';
}

/* Store the point as invalid (bad input) or print why it failed. */
static enum sweep_outcome not_run(struct sweep_ctx *c, struct point *p,
				  uint64_t idx, char hash[65], int failed,
				  struct diag *d)
{
	struct store_point sp = {
		c->sweep_id, idx, hash, STORE_POINT_INVALID,
		point_msgs(p), p->axes_json
	};
	int dup = 0;

	if (failed) {
		diag_error(d, c->sw->file, 0, 0, "point %llu failed:\n%s",
			   (unsigned long long)idx, point_msgs(p));
		return SWEEP_FAILED;
	}
	if (!hash[0])	/* no resolved config to hash */
		invalid_hash(c, p->axes_json, hash);
	if (store_put_point(c->st, &sp, NULL, NULL, &dup, d) < 0)
		return SWEEP_FAILED;
	return SWEEP_INVALID;
}

/* Load the point's job into p->job. 0; -1 bad input; -2 out of memory. */
static int load_job(struct sweep_ctx *c, struct point *p, uint64_t idx)
{
	struct config_ctx cx = { &p->a, &p->d, c->o->data_root };
	struct cnode **trees;
	size_t n;

	if (sweep_point_overrides(&p->a, c->sw, idx, &trees, &n, &p->d) != 0)
		return -2;
	p->job = arena_alloc(&p->a, job_schema.size);
	if (!p->job) {
		diag_oom(&p->d);
		return -2;
	}
	/* A point to plan has its layout searched, not checked. */
	if (config_load_resolved(&cx, c->sw->plan ? &job_plan_schema :
				 &job_schema, c->base,
				 (const struct cnode *const *)trees, n,
				 p->job) != 0)
		return p->d.oom ? -2 : -1;
	return 0;
}

/* The resolved config as canonical JSON and its hash. 0 or -1 (OOM). */
static int config_text(struct point *p, char hash[65])
{
	cJSON *cfg = schema_to_json(&job_schema, p->job);

	p->config_json = cfg ? cJSON_PrintUnformatted(cfg) : NULL;
	cJSON_Delete(cfg);
	if (!p->config_json)
		return -1;
	sha256_hex(p->config_json, strlen(p->config_json), hash);
	return 0;
}

/* Simulate job j; 0, -1 runtime failure, -2 bad input (both in p->d). */
static int simulate(struct point *p, const struct job_spec *j)
{
	cJSON *res;
	int rc;

	p->r = mem_calloc(1, sizeof(*p->r));
	if (!p->r) {
		diag_oom(&p->d);
		return -1;
	}
	rc = step_run(j, 0, NULL, NULL, p->r, &p->d);
	if (rc != 0)
		return rc;
	res = step_to_json(j, p->r);
	p->result_json = res ? cJSON_PrintUnformatted(res) : NULL;
	cJSON_Delete(res);
	if (!p->result_json) {
		diag_oom(&p->d);
		return -1;
	}
	return 0;
}

static enum sweep_outcome store_ran(struct sweep_ctx *c, struct point *p,
				    uint64_t idx, const char *hash,
				    struct diag *d)
{
	struct store_run run = { "sweep", "job", p->config_json, hash,
				 p->result_json, c->o->version };
	struct store_point sp = { c->sweep_id, idx, hash, STORE_POINT_OK,
				  NULL, p->axes_json };
	struct store_step step;
	int dup = 0;

	sweep_step_row(p->r, &step);
	if (store_put_point(c->st, &sp, &run, &step, &dup, d) < 0)
		return SWEEP_FAILED;
	return dup ? SWEEP_DUPLICATE : SWEEP_RAN;
}

void sweep_step_row(const struct step_result *r, struct store_step *out)
{
	*out = (struct store_step){
		.step_time_s = r->step_s, .tokens_per_s = r->tokens_per_s,
		.mfu = r->mfu, .tflops_per_gpu = r->tflops_per_gpu,
		.peak_bytes_per_gpu = r->mem.peak_B, .fits = r->mem.fits,
		.compute_s = r->part_s[EXEC_COMPUTE],
		.exposed_comm_s = r->part_s[EXEC_EXPOSED_COMM],
		.bubble_s = r->part_s[EXEC_BUBBLE],
		.optimizer_s = r->part_s[EXEC_OPTIMIZER],
		.other_s = r->part_s[EXEC_OTHER],
	};
}

/* ---- plan: true ----------------------------------------------------- */

/* The planner's options for this sweep: `plan:`'s top and objective, one
 * process (the sweep's workers are the parallelism), and every searched
 * dimension the sweep sets or sweeps pinned (a sweep over parallelism.tp
 * with plan: true is the best layout at each tp). */
static void plan_opts_of(const struct sweep *sw, struct plan_opts *o)
{
	size_t k;

	plan_opts_init(o);
	if (sw->plan_top > 0)
		o->top_k = sw->plan_top;
	if (sw->plan_objective >= 0)
		o->objective = sw->plan_objective;
	o->jobs = 1;
	for (k = 0; k < sw->nset; k++)
		(void)plan_pin_key(o, sw->set[k].key);
	for (k = 0; k < sw->naxes; k++)
		(void)plan_pin_key(o, sw->axes[k].key);
}

/* A plan point's key: the job planned and the planner's options, so a
 * point planned with other options is planned again. */
static void plan_hash(const struct plan_opts *o, const char *config_json,
		      char hash[65])
{
	char head[96];
	size_t n = (size_t)snprintf(head, sizeof(head), "plan top %d objective "
				    "%s pinned %u\n", o->top_k,
				    plan_objective_names[o->objective],
				    (unsigned)o->pinned);
	size_t m = strlen(config_json);
	char *buf = mem_alloc(n + m + 1);

	if (!buf) {
		hash[0] = '\0';
		return;
	}
	memcpy(buf, head, n);
	memcpy(buf + n, config_json, m + 1);
	sha256_hex(buf, n + m, hash);
	mem_free(buf);
}

/* The winner's step JSON with the plan beside it: "layout" (the
 * winner's, as `llmsim plan` prints it: the summary table's column),
 * "objective" (as v_plans reads it) and "plan" (what `llmsim plan
 * --json` prints). */
static int plan_result_json(struct point *p, const struct plan_opts *o)
{
	cJSON *res = step_to_json(&p->win, p->r);
	cJSON *plan = plan_to_json(p->job, o, &p->plan);
	char lay[160];
	int ok;

	plan_layout_str(&p->plan.cands[0].lay, lay, sizeof(lay));
	ok = res && plan &&
		 cJSON_AddStringToObject(res, "layout", lay) &&
		 cJSON_AddStringToObject(res, "objective",
					 plan_objective_names[o->objective]) &&
		 cJSON_AddItemToObject(res, "plan", plan);

	if (!ok)
		cJSON_Delete(plan);
	cJSON_free(p->result_json);	/* simulate()'s, without the plan */
	p->result_json = ok ? cJSON_PrintUnformatted(res) : NULL;
	cJSON_Delete(res);
	return p->result_json ? 0 : -1;
}

/* The winner's job, its config and hash, its rows. 0 or -1 (OOM). */
static int plan_winner(struct point *p)
{
	cJSON *cfg;
	int64_t i;

	plan_layout_job(p->job, NULL, &p->plan.cands[0].lay, &p->win);
	cfg = schema_to_json(&job_schema, &p->win);
	p->win_json = cfg ? cJSON_PrintUnformatted(cfg) : NULL;
	cJSON_Delete(cfg);
	p->rows = mem_calloc((size_t)p->plan.ncands, sizeof(*p->rows));
	if (!p->win_json || !p->rows)
		return -1;
	sha256_hex(p->win_json, strlen(p->win_json), p->win_hash);
	for (i = 0; i < p->plan.ncands; i++)
		sweep_plan_row(&p->plan, i, &p->rows[i]);
	return 0;
}

/*
 * Plan the point (p->job loaded with job_plan_schema, hash its config's
 * hash on entry), simulate the winner once more for its full step
 * result, store the winner's run, its step, the plan's ranking and the
 * point in one transaction. The point's hash becomes plan_hash().
 */
static enum sweep_outcome plan_point(struct sweep_ctx *c, struct point *p,
				     uint64_t idx, char hash[65],
				     struct diag *d)
{
	struct plan_opts o;
	struct store_run run = { "sweep", "job", NULL, p->win_hash, NULL,
				 c->o->version };
	struct store_point sp = { c->sweep_id, idx, hash, STORE_POINT_OK,
				  NULL, p->axes_json };
	struct store_step step;
	int rc, dup = 0;

	plan_opts_of(c->sw, &o);
	plan_hash(&o, p->config_json, hash);
	if (!hash[0]) {
		diag_oom(d);
		return SWEEP_FAILED;
	}
	rc = store_point_done(c->st, c->sweep_id, hash, d);
	if (rc != 0)
		return rc > 0 ? SWEEP_RESUMED : SWEEP_FAILED;
	if (job_is_inference(p->job)) {
		diag_error(&p->d, c->sw->file, 0, 0, "plan: true searches the "
			   "parallel layouts of a training job; this point's "
			   "job is phase %s", job_phase_names[p->job->phase]);
		return not_run(c, p, idx, hash, 0, d);
	}
	sweep_free_stops();	/* the search may take long: stoppable */
	rc = plan_run(p->job, &o, &p->plan, &p->d);
	sweep_hold_stops();
	if (rc == 0 && p->plan.ncands < 1) {
		diag_error(&p->d, c->sw->file, 0, 0, "%s", "the planner "
			   "ranked no layout");
		rc = 2;
	}
	if (rc != 0)	/* 2: no layout is valid or fits (bad input) */
		return not_run(c, p, idx, hash, rc != 2, d);
	if (plan_winner(p) != 0) {
		diag_oom(d);
		return SWEEP_FAILED;
	}
	sweep_free_stops();
	rc = simulate(p, &p->win);
	sweep_hold_stops();
	if (rc == 0 && plan_result_json(p, &o) != 0) {
		diag_oom(&p->d);
		rc = -1;
	}
	if (rc != 0)
		return not_run(c, p, idx, hash, rc == -1, d);
	run.config_json = p->win_json;
	run.result_json = p->result_json;
	sweep_step_row(p->r, &step);
	if (store_put_plan_point(c->st, &sp, &run, &step, p->rows,
				 (uint32_t)p->plan.ncands, &dup, d) < 0)
		return SWEEP_FAILED;
	return dup ? SWEEP_DUPLICATE : SWEEP_RAN;
}

enum sweep_outcome sweep_point_run(struct sweep_ctx *c, uint64_t idx,
				   char hash[65], struct diag *d)
{
	struct point p;
	enum sweep_outcome out;
	cJSON *axes;
	int rc;

	hash[0] = '\0';
	sweep_hold_stops();	/* freed only while it simulates */
	if (point_init(&p) != 0) {
		diag_oom(d);
		point_release(&p);
		return SWEEP_FAILED;
	}
	axes = sweep_point_json(c->sw, idx);
	p.axes_json = axes ? cJSON_PrintUnformatted(axes) : NULL;
	cJSON_Delete(axes);
	if (!p.axes_json) {
		diag_oom(d);
		out = SWEEP_FAILED;
		goto out;
	}
	rc = load_job(c, &p, idx);
	if (rc != 0) {
		out = not_run(c, &p, idx, hash, rc == -2, d);
		goto out;
	}
	if (config_text(&p, hash) != 0) {
		diag_oom(d);
		out = SWEEP_FAILED;
		goto out;
	}
	if (c->sw->plan) {	/* keyed by the plan's hash, not the job's */
		out = plan_point(c, &p, idx, hash, d);
		goto out;
	}
	rc = store_point_done(c->st, c->sweep_id, hash, d);
	if (rc != 0) {
		out = rc > 0 ? SWEEP_RESUMED : SWEEP_FAILED;
		goto out;
	}
	if (job_is_inference(p.job)) {	/* step_run costs training steps */
		diag_error(&p.d, c->sw->file, 0, 0, "a sweep simulates "
			   "training steps; this point's job is phase %s (run "
			   "it with llmsim run)", job_phase_names[p.job->phase]);
		out = not_run(c, &p, idx, hash, 0, d);
		goto out;
	}
	sweep_free_stops();
	rc = simulate(&p, p.job);
	sweep_hold_stops();
	if (rc != 0)
		out = not_run(c, &p, idx, hash, rc == -1, d);
	else
		out = store_ran(c, &p, idx, hash, d);
out:
	point_release(&p);
	return out;
}
