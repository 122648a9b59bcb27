/*
 * serve_plan.c - the prefill:decode ratio search (serve_plan.h).
 *
 * A deployment meets the SLO at rate r when the serving simulation of the
 * job's requests arriving as a Poisson process of rate r completes them
 * all with p99 TTFT <= slo.ttft_p99 and p99 TPOT <= slo.tpot_p99 (either
 * target 0: not checked). Meeting it is taken to be monotone in r (more
 * load, more queueing), so the largest such rate is found by bisection
 * between a rate that meets it and one that does not: the upper end is
 * 1.5 x the rate the deployment serves offline (no deployment keeps up
 * beyond its saturation), the lower end a thousandth of it. A
 * deployment that misses the SLO even at the lower end serves 0.
 *
 * Splits: p prefill instances of the prefill pool's layout and d decode
 * instances of the decode pool's, every (p, d) with p, d >= 1 and as many
 * decode instances as the remaining GPUs hold (from the next node when the
 * KV moves over the scale-out fabric, as serve_setup.c places them).
 */
#include "serve_plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "base/mem.h"
#include "config/spec_job.h"
#include "serve.h"

/* Run job j quietly; -1 runtime failure (reported), 1 the deployment
 * cannot run it (bad input: too small, ...), 0 ran. */
static int try_run(const struct job_spec *j, struct serve_result *r,
		   struct diag *d)
{
	struct diag quiet;
	int rc;

	diag_init(&quiet, NULL);
	rc = serve_run(j, NULL, r, &quiet);
	serve_result_release(r);
	if (rc == -1) {
		if (quiet.oom)
			diag_oom(d);
		else
			diag_error(d, NULL, 0, 0, "the serving simulation failed");
		return -1;
	}
	return rc == 0 ? 0 : 1;
}

static int meets(const struct slo_spec *slo, const struct serve_result *r)
{
	if (r->completed < r->requests)
		return 0;
	if (slo->ttft_p99_s > 0 && r->ttft.p99 > slo->ttft_p99_s)
		return 0;
	if (slo->tpot_p99_s > 0 && r->tpot.p99 > slo->tpot_p99_s)
		return 0;
	return 1;
}

/* The largest rate job *j (its rate overwritten) meets the SLO at, into
 * p. -1 on a runtime failure. */
static int search(struct job_spec *j, const struct serve_plan_opts *o,
		  struct serve_plan_point *p, struct diag *d)
{
	struct serve_result r;
	double lo, hi, cap;
	int i, rc, its = o->iterations > 0 ? o->iterations : 12;

	j->serving.arrival_rate = INFINITY;
	rc = try_run(j, &r, d);
	if (rc != 0)
		return rc < 0 ? -1 : 0;
	cap = r.requests_per_s;
	lo = o->rate_lo > 0 ? o->rate_lo : cap / 1000;
	hi = o->rate_hi > 0 ? o->rate_hi : 1.5 * cap;
	j->serving.arrival_rate = lo;
	if ((rc = try_run(j, &r, d)) != 0 || !meets(&j->serving.slo, &r))
		return rc < 0 ? -1 : 0;
	for (i = 0; i < its; i++) {
		double mid = sqrt(lo * hi);

		j->serving.arrival_rate = mid;
		rc = try_run(j, &r, d);
		if (rc < 0)
			return -1;
		if (rc == 0 && meets(&j->serving.slo, &r))
			lo = mid;
		else
			hi = mid;
	}
	j->serving.arrival_rate = lo;
	if (try_run(j, &r, d) < 0)
		return -1;
	p->max_rate = lo;
	p->rate_per_gpu = lo / (double)p->gpus;
	p->output_tokens_per_s = r.output_tokens_per_s;
	p->ttft_p99_s = r.ttft.p99;
	p->tpot_p99_s = r.tpot.p99;
	return 0;
}

static int by_goodput(const void *a, const void *b)
{
	const struct serve_plan_point *x = a, *y = b;

	if (x->rate_per_gpu != y->rate_per_gpu)
		return x->rate_per_gpu > y->rate_per_gpu ? -1 : 1;
	return x->prefill_instances < y->prefill_instances ? -1 : 1;
}

/* GPUs p prefill and n decode instances occupy (placed as serve_setup.c
 * places them). */
static int64_t footprint(const struct job_spec *j, int64_t p, int64_t sp,
			 int64_t n, int64_t sd)
{
	int64_t per_node = j->system->gpus_per_node, base = p * sp;

	if (j->serving.disaggregated.transfer == KV_VIA_SCALE_OUT)
		base = (base + per_node - 1) / per_node * per_node;
	return base + n * sd;
}

int serve_plan_ratio(const struct job_spec *j, const struct serve_plan_opts *o,
		     struct serve_plan_point **out, int *n, struct diag *d)
{
	const struct disagg_spec *dg = &j->serving.disaggregated;
	int64_t gpus = o->gpus > 0 ? o->gpus : system_gpus(j->system);
	int64_t sp = dg->prefill.tp * dg->prefill.pp;
	int64_t sd = dg->decode.tp * dg->decode.pp, p, dn;
	int64_t size = j->parallelism.tp * j->parallelism.pp;
	struct serve_plan_point *v;
	struct job_spec jj;
	int k = 0, cap, colocated;

	*out = NULL;
	*n = 0;
	if (j->serving.slo.ttft_p99_s <= 0 && j->serving.slo.tpot_p99_s <= 0) {
		diag_error(d, j->serving.file, j->serving.line, j->serving.col,
			   "'serving.slo': expected ttft_p99 or tpot_p99 (such as "
			   "'2 s', '100 ms') for the ratio search, got neither");
		return -2;
	}
	cap = (int)(gpus / (sp < sd ? sp : sd)) + 2;
	v = mem_calloc((size_t)cap, sizeof(*v));
	if (!v) {
		diag_oom(d);
		return -1;
	}
	jj = *j;
	jj.phase = PHASE_SERVING;
	jj.serving.disaggregated.enabled = 0;
	jj.parallelism.dp = gpus / size;
	if (jj.parallelism.dp >= 1) {
		v[k] = (struct serve_plan_point){0, jj.parallelism.dp,
			jj.parallelism.dp * size, 0, 0, 0, 0, 0};
		if (search(&jj, o, &v[k], d) != 0)
			goto fail;
		k++;
	} else {
		diag_note(d, NULL, 0, 0, "colocated: an instance of the job's "
			  "layout (tp x pp = %lld GPUs) does not fit in the "
			  "%lld GPUs; only prefill:decode splits are compared",
			  (long long)size, (long long)gpus);
	}
	for (p = 1; p * sp < gpus; p++) {
		for (dn = (gpus - p * sp) / sd; dn >= 1; dn--)
			if (footprint(j, p, sp, dn, sd) <= gpus)
				break;
		if (dn < 1)
			continue;
		jj = *j;
		jj.serving.disaggregated.enabled = 1;
		jj.serving.disaggregated.prefill.instances = p;
		jj.serving.disaggregated.decode.instances = dn;
		v[k] = (struct serve_plan_point){p, dn,
			footprint(j, p, sp, dn, sd), 0, 0, 0, 0, 0};
		if (search(&jj, o, &v[k], d) != 0)
			goto fail;
		k++;
	}
	if (k == 0) {
		diag_error(d, NULL, 0, 0, "no deployment fits in the %lld GPUs: "
			   "a colocated instance needs %lld, one prefill and one "
			   "decode instance %lld", (long long)gpus,
			   (long long)size, (long long)footprint(j, 1, sp, 1, sd));
		mem_free(v);
		return -2;
	}
	/* the colocated baseline stays first */
	colocated = v[0].prefill_instances == 0;
	qsort(v + colocated, (size_t)(k - colocated), sizeof(*v), by_goodput);
	*out = v;
	*n = k;
	return 0;
fail:
	mem_free(v);
	return -1;
}
