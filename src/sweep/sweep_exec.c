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
	if (config_load_resolved(&cx, &job_schema, c->base,
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

/* Simulate; 0, -1 runtime failure, -2 bad input (both in p->d). */
static int simulate(struct point *p)
{
	cJSON *res;
	int rc;

	p->r = mem_calloc(1, sizeof(*p->r));
	if (!p->r) {
		diag_oom(&p->d);
		return -1;
	}
	rc = step_run(p->job, 0, NULL, NULL, p->r, &p->d);
	if (rc != 0)
		return rc;
	res = step_to_json(p->job, p->r);
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

enum sweep_outcome sweep_point_run(struct sweep_ctx *c, uint64_t idx,
				   char hash[65], struct diag *d)
{
	struct point p;
	enum sweep_outcome out;
	cJSON *axes;
	int rc;

	hash[0] = '\0';
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
	rc = store_point_done(c->st, c->sweep_id, hash, d);
	if (rc != 0) {
		out = rc > 0 ? SWEEP_RESUMED : SWEEP_FAILED;
		goto out;
	}
	rc = simulate(&p);
	if (rc != 0)
		out = not_run(c, &p, idx, hash, rc == -1, d);
	else
		out = store_ran(c, &p, idx, hash, d);
out:
	point_release(&p);
	return out;
}
