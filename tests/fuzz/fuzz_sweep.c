/*
 * fuzz_sweep.c - libFuzzer harness for sweep files (make fuzz
 * FUZZ_TARGETS=sweep).
 *
 * The input is a sweep file (docs/sweeps.md), loaded with sweep_load
 * against the job schema (references resolve against LLMSIM_DATA,
 * normally tests/data: base `test-job` is the fixture job). Where it
 * loads, the first 8 points and the last 8 (at most 16) each have their
 * axis values, their JSON and one-line texts, their override trees and
 * their job, loaded from the resolved base with those overrides as
 * `llmsim sweep` does (sweep_exec.c load_job; the planner's schema under
 * `plan:`).
 *
 * Beyond "no crash, no leak, no undefined behaviour": a sweep that loads
 * has 1 to SWEEP_MAX_POINTS points, the product of its dimensions'
 * lengths; every axis is set by a dimension that exists; a point's JSON
 * holds exactly the axes its values set; and a point's override trees
 * are one a fixed key and one an axis it sets.
 */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/diag.h"
#include "config/cnode.h"
#include "config/config.h"
#include "config/schema.h"
#include "config/spec_job.h"
#include "scratch.h"
#include "sweep/sweep.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_shape(const struct sweep *sw)
{
	uint64_t product = 1;
	size_t k;

	FUZZ_CHECK(sw->npoints >= 1 && sw->npoints <= SWEEP_MAX_POINTS,
		   "%llu points", (unsigned long long)sw->npoints);
	for (k = 0; k < sw->ndims; k++) {
		FUZZ_CHECK(sw->dims[k].n >= 1, "dimension %zu of length 0", k);
		product *= sw->dims[k].n;
		FUZZ_CHECK(product <= SWEEP_MAX_POINTS,
			   "dimensions past the most");
	}
	FUZZ_CHECK(product == sw->npoints,
		   "%llu points, dimensions give %llu",
		   (unsigned long long)sw->npoints,
		   (unsigned long long)product);
	for (k = 0; k < sw->naxes; k++)
		FUZZ_CHECK(sw->axes[k].dim < sw->ndims && sw->axes[k].key &&
			   sw->axes[k].column, "axis %zu", k);
}

static void check_point(struct config_ctx *cx, const struct sweep *sw,
			const struct cnode *base, uint64_t i)
{
	const struct cnode **vals = arena_alloc(cx->arena, (sw->naxes + 1) *
						sizeof(*vals));
	const struct schema *s = sw->plan ? &job_plan_schema : &job_schema;
	struct cnode **trees;
	size_t n, k, set = 0;
	cJSON *json;
	void *job;

	FUZZ_CHECK(vals, "out of memory");
	sweep_point_values(sw, i, vals);
	for (k = 0; k < sw->naxes; k++) {
		set += vals[k] != NULL;
		FUZZ_CHECK(sweep_value_text(cx->arena, vals[k]), "no text");
	}
	json = sweep_point_json(sw, i);
	FUZZ_CHECK(json && cJSON_GetArraySize(json) == (int)set,
		   "point %llu: %d JSON axes for %zu set",
		   (unsigned long long)i, json ? cJSON_GetArraySize(json) : -1,
		   set);
	cJSON_Delete(json);
	if (sweep_point_overrides(cx->arena, sw, i, &trees, &n, cx->diag) != 0)
		return;
	FUZZ_CHECK(n == sw->nset + set,
		   "point %llu: %zu trees for %zu sets and %zu axes",
		   (unsigned long long)i, n, sw->nset, set);
	job = arena_alloc(cx->arena, s->size);
	FUZZ_CHECK(job, "out of memory");
	(void)config_load_resolved(cx, s, base,
				   (const struct cnode *const *)trees, n, job);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct arena a;
	struct diag d;
	struct config_ctx cx = {&a, &d, NULL};
	const struct cnode *base;
	const char *path;
	struct sweep sw;
	uint64_t i;

	arena_init(&a);
	diag_init(&d, NULL);
	cx.data_root = getenv("LLMSIM_DATA") ? getenv("LLMSIM_DATA")
					     : "tests/data";
	path = fuzz_scratch("in.yaml");
	fuzz_put(path, data, size);
	memset(&sw, 0, sizeof(sw));
	if (sweep_load(&a, path, &job_schema, &sw, &d) == 0) {
		check_shape(&sw);
		base = config_resolve_node(&cx, sw.plan ? &job_plan_schema :
					   &job_schema, sw.base);
		/* points 0-7 and the last 8 (all of them up to 16) */
		for (i = 0; base && i < sw.npoints && i < 16; i++)
			check_point(&cx, &sw, base, sw.npoints > 16 && i >= 8 ?
				    sw.npoints - 16 + i : i);
	}
	arena_release(&a);
	return 0;
}
