/*
 * step.c - one training step, end to end.
 *
 * step time       t = the end of the last task of the step program
 * tokens/s        gbs s / t
 * model FLOPs     F = the forward and backward FLOPs of every layer,
 *                 embedding and head over all microbatches and GPUs, without
 *                 recomputation, causal attention as half the score
 *                 matrix as Megatron-LM counts it (layer.h, docs/mfu.md)
 * MFU             F / (t N P), N GPUs, P the dense peak of the job's dtype
 *                 (gpu_peak_flops); TFLOP/s per GPU = F / (t N)
 * executed        the FLOPs the GPU model executes, recomputation included
 *                 (hardware FLOPs, HFU = executed / (t N P))
 * breakdown       the critical-path split of exec.h
 * memory          footprint.h against the GPU's usable memory
 *
 * What simulating costs (step_estimate), before anything is built: the
 * tasks from train_estimate(), and from them llmsim's own memory, CPU
 * time and trace size at the rates measured on the 16k-GPU --full job
 * (docs/scaling.md has the measurements):
 *
 *   memory  M = STEP_TASK_B n + STEP_CALL_B c + STEP_FIXED_B
 *               + STEP_NODE_B nodes      (n tasks, c collective calls)
 *   time    T = STEP_TASK_S n
 *   trace   R = STEP_TRACE_B n
 *
 * STEP_TASK_B: a task's 12-byte record, 16-byte run state and 4-byte
 * successor, its layer-and-microbatch run and the allocator's slack;
 * STEP_CALL_B: a call's 16 bytes and 40 bytes of run state, and slack.
 * Together they give the measured peaks (1,031 MB for 25.7 M tasks and
 * 1.03 M calls; 176 MB for 3.2 M tasks and 0.52 M calls). STEP_NODE_B:
 * the topology, flow model and caches, 24 KiB a node (62 MB for 2,048
 * nodes, 405 MB for 16,384 in the symmetric mode). STEP_TASK_S: 300 ns a
 * task on this project's reference machine (a 2-core AMD EPYC: 200 ns at
 * 4k GPUs, 27 M tasks in 5.3 s; 370 ns at 16k, 107 M in 40 s, where the
 * program no longer sits in the caches). STEP_TRACE_B: 167 bytes of
 * trace JSON a task, measured.
 */
#include "base/clock.h"
#include "step.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/diag.h"
#include "gpu/gpu.h"
#include "base/mem.h"
#include "network/net.h"
#include "engine/sim.h"

/* Progress (diag_progress) above this many tasks (full-fidelity runs),
 * at most every STEP_PROGRESS_S of wall time. */
#define STEP_TASKS_NOTICE 1000000u
#define STEP_PROGRESS_S 2.0

#define STEP_TASK_B 36.0	/* B a task, at peak */
#define STEP_CALL_B 64.0	/* B a collective call, at peak */
#define STEP_FIXED_B 16777216.0	/* B whatever the job (16 MiB) */
#define STEP_NODE_B 24576.0	/* B a node: topology, flows, caches */
#define STEP_TASK_S 300e-9	/* s of CPU a task */
#define STEP_TRACE_B 170.0	/* B of trace a task */

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

/* A remembered stat_of() answer. */
struct stat_memo {
	const char *name;	/* the task name's address */
	enum coll_op op;
	uint32_t group;
	uint32_t index;		/* into out->colls */
};

static int by_time(const void *a, const void *b)
{
	const struct step_coll_stat *x = a, *y = b;

	if (x->time_s != y->time_s)
		return x->time_s > y->time_s ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The stat of info and c through a small memo by name pointer (names
 * are interned or literals), op and group, then stat_of(). */
static struct step_coll_stat *stat_memo(struct step_coll_stat **colls,
					uint32_t *ncolls, uint32_t *cap,
					const struct task_info *info,
					const struct coll_desc *c,
					struct stat_memo *memo)
{
	uint64_t h = ((uint64_t)(uintptr_t)info->name ^
		      (uint64_t)c->op << 48 ^ c->ngpus) * 0x9e3779b97f4a7c15ull;
	struct stat_memo *m = &memo[h >> 58];
	struct step_coll_stat *s;

	if (m->name == info->name && m->op == c->op && m->group == c->ngpus)
		return &(*colls)[m->index];
	s = stat_of(colls, ncolls, cap, info, c);
	if (s)
		*m = (struct stat_memo){ info->name, c->op, c->ngpus,
					 (uint32_t)(s - *colls) };
	return s;
}

/* Every collective call (in the order of their first members), one
 * memo lookup a call rather than a walk of every task. */
int step_coll_stats(const struct prog *p, struct step_coll_stat **colls,
		    uint32_t *ncolls)
{
	struct stat_memo memo[64];
	uint32_t k, n = prog_colls(p), cap = 0;
	double *overlap = mem_alloc((size_t)n * sizeof(double) + 1);

	if (!overlap || exec_coll_overlap(p, overlap) != 0) {
		mem_free(overlap);
		return -1;
	}
	memset(memo, 0, sizeof(memo));
	for (k = 0; k < n; k++) {
		task_id t = prog_coll_first(p, k);
		uint32_t i, members = prog_coll_members(p, k);
		const struct coll_desc *c = exec_task_coll(p, t);
		struct step_coll_stat *s;
		struct task_info in = { 0 };
		enum task_cat cat;

		/* The name is all a stat is keyed by: not the layer and
		 * microbatch (a binary search of the task's run, 334k
		 * times on the DSV3 2,048-GPU step). */
		in.name = exec_task_name(p, t, &cat);
		in.cat = cat;
		s = stat_memo(colls, ncolls, &cap, &in, c, memo);
		if (!s) {
			mem_free(overlap);
			return -1;
		}
		s->count++;
		s->bytes += c->bytes;
		s->time_s += exec_task_dur_s(p, t);
		s->overlapped_s += overlap[k];
		for (i = 0; i < members; i++)
			if (exec_task_critical(p, t + i)) {
				s->critical_s += exec_task_end_s(p, t + i) -
						 exec_task_start_s(p, t + i);
				break;
			}
	}
	mem_free(overlap);
	if (*ncolls > 0)
		qsort(*colls, *ncolls, sizeof(**colls), by_time);
	return 0;
}

const char *const step_dim_names[STEP_DIM_COUNT] = {
	"tp", "cp", "ep", "pp", "dp", "other",
};

/* The dimension of a stream from its name's prefix. */
static enum step_dim dim_of(const char *stream)
{
	static const char *const prefix[STEP_DIM_OTHER] = {
		"tp", "cp", "ep", "pp", "dp",
	};
	int i;

	for (i = 0; stream && i < STEP_DIM_OTHER; i++)
		if (strncmp(stream, prefix[i], 2) == 0)
			return (enum step_dim)i;
	return STEP_DIM_OTHER;
}

/* Exposed communication by dimension, and the final rank's compute by
 * pass (its compute stream runs one task at a time, so the durations
 * add up to its compute time). */
static void splits(const struct prog *p, const struct exec_result *er,
		   struct step_result *out)
{
	uint32_t s, t, n = prog_tasks(p);

	for (s = 0; s < EXEC_MAX_STREAMS; s++) {
		const char *name = exec_stream_name(p, s);

		out->exposed_dim_s[dim_of(name)] += er->exposed_by_stream_s[s];
		/* the host thread's issue and syncs on the path while the
		 * final rank was not computing: their part of other_s */
		if (name && strcmp(name, "host") == 0)
			out->host_critical_s += er->other_by_stream_s[s];
	}
	for (t = 0; t < n; t++) {
		struct task_info ti;
		enum task_cat cat;
		double d;

		exec_task_name(p, t, &cat);
		if (cat != TASK_COMPUTE || exec_task_rank(p, t) != er->final_rank)
			continue;
		exec_task_info(p, t, &ti);
		d = exec_task_dur_s(p, t);
		if (ti.phase == TASK_PHASE_BWD)
			out->backward_s += d;
		else
			out->forward_s += d;
	}
}

/* The tasks rank_busy sums: the compute tasks, and the host model's
 * (category other, on the host stream: "issue ...", "sync, ..."). */
enum busy_kind { BUSY_COMPUTE, BUSY_HOST, BUSY_KINDS };

/* The kind a task counts as, or BUSY_KINDS for neither. */
static enum busy_kind busy_kind_of(const char *name, enum task_cat cat)
{
	if (cat == TASK_COMPUTE)
		return BUSY_COMPUTE;
	if (cat == TASK_OTHER && (strncmp(name, "issue", 5) == 0 ||
				  strncmp(name, "sync", 4) == 0))
		return BUSY_HOST;
	return BUSY_KINDS;
}

/* Names are interned (one pointer per name): busy_kind_of() answered
 * from a small table by pointer, so the 1.6 M host tasks of the DSV3
 * 2,048-GPU step do not each compare their name. */
#define BUSY_MEMO 256
struct busy_memo {
	const char *name;
	enum task_cat cat;
	enum busy_kind kind;
};

static enum busy_kind busy_kind_memo(struct busy_memo *memo,
				     const char *name, enum task_cat cat)
{
	struct busy_memo *m = &memo[((uintptr_t)name >> 3) % BUSY_MEMO];

	if (m->name != name || m->cat != cat)
		*m = (struct busy_memo){ name, cat, busy_kind_of(name, cat) };
	return m->kind;
}

/* Each simulated rank's summed durations of the tasks of each kind, in
 * busy[k * prog_ranks(p) + rank] (an array the caller frees): one pass
 * over the tasks for both kinds (3.2 M tasks on the DSV3 2,048-GPU
 * step). NULL when out of memory. */
static double *rank_busy(const struct prog *p)
{
	uint32_t t, n = prog_tasks(p), nr = prog_ranks(p);
	size_t size = (size_t)BUSY_KINDS * nr * sizeof(double);
	double *busy = mem_alloc(size + 1);
	struct busy_memo memo[BUSY_MEMO] = { { NULL, TASK_COMPUTE, BUSY_KINDS } };

	if (!busy)
		return NULL;
	memset(busy, 0, size);
	for (t = 0; t < n; t++) {
		enum task_cat cat;
		const char *name = exec_task_name(p, t, &cat);
		enum busy_kind k = busy_kind_memo(memo, name, cat);
		double d;

		if (k == BUSY_KINDS)
			continue;
		d = exec_task_dur_s(p, t);
		busy[(size_t)k * nr + exec_task_rank(p, t)] += d;
	}
	return busy;
}

/* Compute per pipeline rank: the compute tasks' durations summed per
 * simulated rank (rank r is pipeline rank r / (ranks / pp), layout.h),
 * the busiest of a pipeline rank's simulated GPUs kept (busy: rank_busy's
 * compute row); and the bubble of the schedule with equal stages,
 * (p - 1) / (v m + p - 1) (sched.c). */
static void stage_stats(const struct job_spec *j, const struct prog *p,
			const double *busy, struct step_result *out)
{
	uint32_t r, nr = prog_ranks(p);
	int64_t pp = j->parallelism.pp, vpp = j->parallelism.vpp;
	int64_t m = out->plan.microbatches, sim = nr / pp, st;

	for (r = 0; r < nr; r++) {
		st = sim > 0 ? (int64_t)r / sim : 0;
		if (st < out->nstages && busy[r] > out->stage_compute_s[st])
			out->stage_compute_s[st] = busy[r];
	}
	out->ideal_bubble = pp > 1 && m > 0 ?
		(double)(pp - 1) / (double)((vpp > 0 ? vpp : 1) * m + pp - 1) :
		0;
}

/* The host model's tasks: the busiest rank's total (busy: rank_busy's
 * host row; their critical part comes from the path, splits). */
static void host_stats(const struct prog *p, const double *busy,
		       struct step_result *out)
{
	uint32_t r, nr = prog_ranks(p);

	for (r = 0; r < nr; r++)
		if (busy[r] > out->host_busy_s)
			out->host_busy_s = busy[r];
}

/* host_stats and stage_stats from one rank_busy pass; -1 when out of
 * memory. */
static int busy_stats(const struct job_spec *j, const struct prog *p,
		      struct step_result *out)
{
	double *busy = rank_busy(p);

	if (!busy)
		return -1;
	host_stats(p, busy + (size_t)BUSY_HOST * prog_ranks(p), out);
	stage_stats(j, p, busy + (size_t)BUSY_COMPUTE * prog_ranks(p), out);
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

/* Where a long run's progress goes. */
struct progress {
	struct diag *d;
	double t0, last;	/* s, monotonic clock at the start, last line */
};

/* prog_set_progress() callback: a line every STEP_PROGRESS_S at most. */
static void progress_line(void *arg, uint32_t done, uint32_t total,
			  double now_s)
{
	struct progress *pr = arg;
	double t = clock_mono_s();

	if (t - pr->last < STEP_PROGRESS_S)
		return;
	pr->last = t;
	diag_progress(pr->d, "%.1f M of %.1f M tasks (%.0f %%), %.3f s of the "
		      "step simulated, %.0f s elapsed", done / 1e6, total / 1e6,
		      100.0 * done / total, now_s, t - pr->t0);
}

/* Run the built program on a fresh simulation with the chosen backend. */
static int simulate(const struct job_spec *j, struct prog *p,
		    const struct step_comm *comm, struct step_result *out,
		    struct diag *d)
{
	struct progress pr;
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
	if (prog_tasks(p) > STEP_TASKS_NOTICE) {
		double n = prog_tasks(p);

		diag_progress(d, "simulating %.1f M tasks on %u ranks (about "
			      "%.0f s)...", n / 1e6, prog_ranks(p),
			      STEP_TASK_S * n);
		pr.d = d;
		pr.t0 = pr.last = clock_mono_s();
		prog_set_progress(p, progress_line, &pr);
	}
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
	splits(p, &er, out);
	/* rank r is pipeline rank r / (ranks / pp) (layout.h) */
	if (j->parallelism.pp > 1 && prog_ranks(p) >= j->parallelism.pp)
		out->final_stage = (int64_t)er.final_rank /
				   ((int64_t)prog_ranks(p) / j->parallelism.pp);
	out->events = er.events;
	if (net) {
		struct net_stats ns;

		net_get_stats(net, &ns);
		out->calls = ns.collectives;
		out->replayed = ns.replays;
		out->flows = ns.flows;
		out->solves = ns.solves;
	}
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

/* A straggler makes GPUs unlike: refuse it where one simulated rank
 * stands for a group (0, or -2 after reporting). */
static int check_straggler(const struct job_spec *j, int full,
			   struct diag *d)
{
	const struct straggler_spec *s = &j->straggler;

	if (s->gpu < 0 || !(s->compute_scale > 1) || full || j->full_fidelity)
		return 0;
	diag_error(d, NULL, 0, 0, "straggler: GPU %lld computes %g times "
		   "slower than its peers, which the symmetric mode (one "
		   "simulated rank per group of identical GPUs) cannot show; "
		   "run with --full (or full_fidelity: true)",
		   (long long)s->gpu, s->compute_scale);
	return -2;
}

int step_estimate(const struct job_spec *j, int full,
		  struct step_estimate *e, struct diag *d)
{
	struct train_estimate te;

	memset(e, 0, sizeof(*e));
	if (train_check(j, d) != 0 || check_straggler(j, full, d) != 0)
		return -2;
	if (train_estimate(j, full, &te, d) != 0)
		return -1;
	e->tasks = te.tasks;
	e->ranks = te.ranks;
	e->calls = te.calls;
	e->memory_B = STEP_TASK_B * te.tasks + STEP_CALL_B * te.calls +
		      STEP_FIXED_B + STEP_NODE_B * (double)j->system->nodes;
	e->time_s = STEP_TASK_S * te.tasks;
	/* the power model runs a one-GPU step three times (power_step) */
	if (gpu_power_modelled(j->system->gpu) && system_gpus(j->system) == 1)
		e->time_s *= 3;
	e->trace_B = STEP_TRACE_B * te.tasks;
	e->buildable = te.tasks <= (double)PROG_MAX_TASKS;
	return 0;
}

/* The busiest simulated rank's compute time (s) of a simulated program
 * (rank_busy's compute row): the GPU whose power sets the clock; -1
 * when out of memory. */
static double busiest_compute_s(const struct prog *p)
{
	double *busy = rank_busy(p), m = 0;
	uint32_t r;

	if (!busy)
		return -1;
	for (r = 0; r < prog_ranks(p); r++)
		m = fmax(m, busy[(size_t)BUSY_COMPUTE * prog_ranks(p) + r]);
	mem_free(busy);
	return m;
}

/* One build and run of j with its GPU's matrix work at clock_hz (the
 * program into *pp, the caller frees it). */
static int run_at_clock(const struct job_spec *j, int full, double clock_hz,
			struct prog **pp, struct step_result *out,
			struct diag *d)
{
	struct gpu_spec g;
	struct system_spec s = *j->system;
	struct job_spec jc = *j;

	gpu_at_matrix_clock(j->system->gpu, clock_hz, &g);
	s.gpu = &g;
	jc.system = &s;
	memset(out, 0, sizeof(*out));
	if (!(*pp = train_build(&jc, full, &out->plan, d)))
		return -1;
	return simulate(&jc, *pp, NULL, out, d);
}

/* The power model (gpu_power.c): the step at sustained_matrix_clock f_s
 * (*p, *out) is run again with the matrix work at burst_matrix_clock f_b
 * to find how much of the busiest rank's compute follows the clock:
 * M_s = (C_s - C_b) / (1 - f_s / f_b). The rest of the step, O = step -
 * M_s, sets the clock f (gpu_power_step_clock_hz); the step is rebuilt
 * and run at f, which replaces *p and *out. One program is held at a
 * time (each is freed before the next is built), so the memory
 * estimate holds; the time is three runs (step_estimate). */
static int power_step(const struct job_spec *j, int full, struct prog **p,
		      struct step_result *out, struct diag *d)
{
	const struct gpu_spec *g = j->system->gpu;
	double fs = g->sustained_matrix_clock_hz, fb = g->burst_matrix_clock_hz;
	double cs, cb, m, f, step_s = out->step_s;
	struct step_result *rb = mem_alloc(sizeof(*rb));
	struct prog *pb = NULL;
	int rc = -1;

	if (!rb || (cs = busiest_compute_s(*p)) < 0) {
		diag_oom(d);
		goto out;
	}
	prog_free(*p);
	*p = NULL;
	if ((rc = run_at_clock(j, full, fb, &pb, rb, d)) != 0)
		goto out;
	if ((cb = busiest_compute_s(pb)) < 0) {
		diag_oom(d);
		rc = -1;
		goto out;
	}
	prog_free(pb);
	pb = NULL;
	m = fmax(0, cs - cb) / (1 - fs / fb);
	f = gpu_power_step_clock_hz(g, m, fmax(0, step_s - m));
	if ((rc = run_at_clock(j, full, f, p, out, d)) != 0)
		goto out;
	out->matrix_clock_hz = f;
out:
	prog_free(pb);
	mem_free(rb);
	return rc;
}

/* step_run(); detail 0 leaves out what step_run_time() says it does. */
static int run_step(const struct job_spec *j, int full,
		    const struct step_comm *comm, FILE *trace,
		    struct step_result *out, struct diag *d, int detail)
{
	struct prog *p;
	int rc;

	memset(out, 0, sizeof(*out));
	if (train_check(j, d) != 0 || check_straggler(j, full, d) != 0)
		return -2;
	p = train_build(j, full, &out->plan, d);
	if (!p)
		return -1;
	rc = simulate(j, p, comm, out, d);
	out->matrix_clock_hz = j->system->gpu->sustained_matrix_clock_hz;
	/* The power model counts the step's power from its matrix work and
	 * HBM-bound work alone: it knows nothing of what communication
	 * (NVLink, network, the collectives' kernels beside the GEMMs) draws.
	 * So it runs only a step with no collective, where that is all there
	 * is (the H200 steps it was checked on); a step with collectives
	 * stays at the sustained clock. The same keys on H100 made every
	 * published multi-GPU H100 step 3-9 points faster than measured
	 * (results/reference/device/README.md, "ruled out"). The planner's
	 * shared network (comm) runs each layout once, at the sustained
	 * clock, as its estimate does. */
	if (rc == 0 && !(comm && comm->ops) && prog_colls(p) == 0 &&
	    gpu_power_modelled(j->system->gpu))
		rc = power_step(j, full, &p, out, d);
	if (rc != 0)
		goto out;
	rc = -1;
	out->nstages = j->parallelism.pp < STEP_MAX_STAGES ?
		j->parallelism.pp : STEP_MAX_STAGES;
	if (detail && (footprint_job_stages(j, gpu_usable_memory_B(j->system->gpu),
				 &out->mem, out->stage_mem, out->nstages) != 0 ||
	    step_coll_stats(p, &out->colls, &out->ncolls) != 0 ||
	    busy_stats(j, p, out) != 0)) {
		diag_oom(d);
		goto out;
	}
	rates(j, out);
	if (trace) {
		rc = step_write_trace(j, p, out, trace, d);
		if (rc != 0)
			goto out;
	}
	rc = 0;
out:
	prog_free(p);
	return rc;
}

int step_run(const struct job_spec *j, int full, const struct step_comm *comm,
	     FILE *trace, struct step_result *out, struct diag *d)
{
	return run_step(j, full, comm, trace, out, d, 1);
}

int step_run_time(const struct job_spec *j, int full,
		  const struct step_comm *comm, struct step_result *out,
		  struct diag *d)
{
	return run_step(j, full, comm, NULL, out, d, 0);
}

void step_result_release(struct step_result *r)
{
	mem_free(r->colls);
	r->colls = NULL;
	r->ncolls = 0;
}
