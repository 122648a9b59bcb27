/*
 * step.c - one training step, end to end.
 *
 * step time       t = the end of the last task of the step program
 * tokens/s        gbs s / t
 * model FLOPs     F = the forward and backward FLOPs of every layer,
 *                 embedding and head over all microbatches and GPUs, without
 *                 recomputation, attention counted in full (layer.h)
 * MFU             F / (t N P), N GPUs, P the dense peak of the job's dtype
 *                 (gpu_peak_flops); TFLOP/s per GPU = F / (t N)
 * executed        the FLOPs the GPU model executes, recomputation included
 *                 (hardware FLOPs, HFU = executed / (t N P))
 * breakdown       the critical-path split of exec.h
 * memory          footprint.h against the GPU's usable memory
 */
#include "step.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "gpu/gpu.h"
#include "base/mem.h"
#include "network/net.h"
#include "engine/sim.h"

/* Progress (diag_progress) above this many tasks (full-fidelity runs). */
#define STEP_TASKS_NOTICE 1000000u

/* The stat for (name, op, group) in out->colls, added when new (the
 * array grows as needed: every kind is kept). NULL when out of memory. */
static struct step_coll_stat *stat_of(struct step_coll_stat **colls,
				      uint32_t *ncolls, uint32_t *cap,
				      const struct task_info *info,
				      const struct coll_desc *c)
{
	struct step_coll_stat *v = *colls;
	uint32_t i, n = *ncolls;

	for (i = 0; i < n; i++)
		if (strcmp(v[i].name, info->name) == 0 && v[i].op == c->op &&
		    v[i].group == c->ngpus)
			return &v[i];
	if (n == *cap) {
		uint32_t grown = *cap ? 2 * *cap : 16;

		v = mem_realloc(v, (size_t)grown * sizeof(*v));
		if (!v)
			return NULL;
		*colls = v;
		*cap = grown;
	}
	memset(&v[n], 0, sizeof(v[n]));
	snprintf(v[n].name, sizeof(v[n].name), "%s", info->name);
	v[n].op = c->op;
	v[n].group = c->ngpus;
	*ncolls = n + 1;
	return &v[n];
}

static int by_time(const void *a, const void *b)
{
	const struct step_coll_stat *x = a, *y = b;

	if (x->time_s != y->time_s)
		return x->time_s > y->time_s ? -1 : 1;
	return strcmp(x->name, y->name);
}

int step_coll_stats(const struct prog *p, struct step_coll_stat **colls,
		    uint32_t *ncolls)
{
	uint32_t t, n = prog_tasks(p), cap = 0;

	for (t = 0; t < n; t++) {
		const struct coll_desc *c = exec_task_coll(p, t);
		struct step_coll_stat *s;
		uint32_t k;

		if (!c || (t > 0 && exec_task_coll(p, t - 1) == c))
			continue;
		s = stat_of(colls, ncolls, &cap, exec_task_info(p, t), c);
		if (!s)
			return -1;
		s->count++;
		s->bytes += c->bytes;
		s->time_s += exec_task_end_s(p, t) - exec_task_start_s(p, t);
		for (k = t; k < n && exec_task_coll(p, k) == c; k++)
			if (exec_task_critical(p, k)) {
				s->critical_s += exec_task_end_s(p, k) -
						 exec_task_start_s(p, k);
				break;
			}
	}
	if (*ncolls > 0)
		qsort(*colls, *ncolls, sizeof(**colls), by_time);
	return 0;
}

/* The host model's tasks (category other, on the host stream: "issue
 * ...", "sync, ..."): the busiest rank's total and the critical part.
 * -1 when out of memory. */
static int host_stats(const struct prog *p, struct step_result *out)
{
	uint32_t t, n = prog_tasks(p), nr = prog_ranks(p);
	double *busy = mem_alloc((size_t)nr * sizeof(*busy));

	if (!busy)
		return -1;
	memset(busy, 0, (size_t)nr * sizeof(*busy));
	for (t = 0; t < n; t++) {
		const struct task_info *info = exec_task_info(p, t);
		double d;

		if (info->cat != TASK_OTHER || (strncmp(info->name, "issue", 5) != 0 &&
		    strncmp(info->name, "sync", 4) != 0))
			continue;
		d = exec_task_end_s(p, t) - exec_task_start_s(p, t);
		busy[exec_task_rank(p, t)] += d;
		if (exec_task_critical(p, t))
			out->host_critical_s += d;
	}
	for (t = 0; t < nr; t++)
		if (busy[t] > out->host_busy_s)
			out->host_busy_s = busy[t];
	mem_free(busy);
	return 0;
}

static void rates(const struct job_spec *j, struct step_result *out)
{
	const struct gpu_spec *g = j->system->gpu;
	double t = out->step_s, n;

	out->gpus = system_gpus(j->system);
	n = (double)out->gpus;
	out->peak_flops = gpu_peak_flops(g, (enum dtype)j->training.dtype);
	if (t <= 0)
		return;
	out->tokens_per_s = out->plan.tokens / t;
	out->tflops_per_gpu = out->plan.model_flops / (t * n) / 1e12;
	out->hw_tflops_per_gpu = out->plan.exec_flops / (t * n) / 1e12;
	out->mfu = out->plan.model_flops / (t * n * out->peak_flops);
}

/* Run the built program on a fresh simulation with the chosen backend. */
static int simulate(const struct job_spec *j, struct prog *p,
		    const struct step_comm *comm, struct step_result *out,
		    struct diag *d)
{
	struct sim *sim = sim_new();
	struct net *net = NULL;
	const struct comm_ops *ops;
	struct exec_result er;
	const char *why = "";
	void *ctx;
	int rc = -1;

	if (!sim) {
		diag_oom(d);
		goto out;
	}
	if (comm && comm->ops) {
		ops = comm->ops;
		ctx = comm->ctx;
		if (comm->attach && comm->attach(ctx, sim) != 0) {
			diag_oom(d);
			goto out;
		}
	} else {
		net = net_new(j->system, sim, d);
		if (!net) {
			rc = d->oom ? -1 : -2;
			goto out;
		}
		ops = &net_comm_ops;
		ctx = net;
	}
	if (prog_tasks(p) > STEP_TASKS_NOTICE)
		diag_progress(d, "simulating %u tasks on %u ranks...",
			      prog_tasks(p), prog_ranks(p));
	if (exec_run(p, sim, ops, ctx, &er, &why) != 0)
		goto fail;
	if (net && net_failed(net)) {
		why = net_error(net);
		goto fail;
	}
	if (comm && comm->failed && (why = comm->failed(comm->ctx)))
		goto fail;

	out->step_s = er.step_s;
	/* The step is a sum of many independent op deviations and waits for
	 * maxima (exec_jitter.c): nearly normal, so its median is its mean
	 * and its 90th percentile 1.2816 standard deviations above. */
	out->step_sd_s = er.step_sd_s;
	out->step_p50_s = er.step_s;
	out->step_p90_s = er.step_s + 1.2815516 * er.step_sd_s;
	memcpy(out->part_s, er.part_s, sizeof(out->part_s));
	out->events = er.events;
	out->tasks = prog_tasks(p);
	rc = 0;
	goto out;
fail:
	diag_error(d, NULL, 0, 0, "the step simulation failed: %s", why);
out:
	net_free(net);
	sim_free(sim);
	return rc;
}

int step_run(const struct job_spec *j, int full, const struct step_comm *comm,
	     FILE *trace, struct step_result *out, struct diag *d)
{
	struct prog *p;
	int rc;

	memset(out, 0, sizeof(*out));
	if (train_check(j, d) != 0)
		return -2;
	p = train_build(j, full, &out->plan, d);
	if (!p)
		return -1;
	rc = simulate(j, p, comm, out, d);
	if (rc != 0)
		goto out;
	rc = -1;
	if (footprint_job(j, gpu_usable_memory_B(j->system->gpu), &out->mem) != 0 ||
	    step_coll_stats(p, &out->colls, &out->ncolls) != 0 ||
	    host_stats(p, out) != 0) {
		diag_oom(d);
		goto out;
	}
	rates(j, out);
	if (trace && exec_write_trace(p, trace, train_rank_label,
				      &out->plan.lay) != 0) {
		diag_error(d, NULL, 0, 0, "could not write the trace");
		goto out;
	}
	rc = 0;
out:
	prog_free(p);
	return rc;
}

void step_result_release(struct step_result *r)
{
	mem_free(r->colls);
	r->colls = NULL;
	r->ncolls = 0;
}
