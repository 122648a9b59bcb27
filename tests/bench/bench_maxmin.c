/*
 * bench_maxmin.c - cost of one max-min re-solve as concurrent flows grow.
 *
 * For N = 10, 100, 1000, 10000 flows, each crossing 2-6 random links of a
 * pool of max(8, N/2) links (so all flows form one connected component:
 * the worst case for the incremental solver), we time
 *   full:  every flow restarted on its own path, solve everything;
 *   incr:  one flow ends and another starts, re-solve (what the fabric
 *          does on every flow event).
 * A second workload splits the same flows into independent groups of 10
 * on disjoint links (TP groups in separate nodes): there a change
 * re-solves one group only, whatever N is. A third is the first with every
 * other flow rate-bounded (1-20 GB/s, around the fair share, so some
 * bounds bind): every solve orders the bounded flows.
 * Each figure is the median of repeated runs, in microseconds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "network/flow.h"
#include "network/maxmin.h"

#include <malloc.h>

struct rng {
	uint64_t s;
};

static uint32_t rnd(struct rng *r, uint32_t n)
{
	r->s ^= r->s << 13;
	r->s ^= r->s >> 7;
	r->s ^= r->s << 17;
	return (uint32_t)(r->s % n);
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* A flow's links and rate bound, kept so it can be started again. */
struct flow_def {
	mm_id path[6];		/* constraint ids */
	uint32_t len;		/* entries of path */
	double bound_Bps;	/* B/s; 0 = none */
};

/* A flow over 2-6 distinct links among [base, base + nlinks), rate-bounded
 * (1-20 GB/s) when bounded is set, started in m. */
static mm_id add_flow(struct mm *m, struct rng *r, mm_id base, uint32_t nlinks,
		      int bounded, struct flow_def *f)
{
	static const double coef[6] = {1, 1, 1, 1, 1, 1};
	uint32_t len = 2 + rnd(r, 5), i, k;

	if (len > nlinks)
		len = nlinks;
	for (i = 0; i < len; i++) {
		do {
			f->path[i] = base + rnd(r, nlinks);
			for (k = 0; k < i && f->path[k] != f->path[i]; k++)
				;
		} while (k < i);
	}
	f->len = len;
	f->bound_Bps = bounded ? 1e9 * (1 + rnd(r, 20)) : 0;
	return mm_var_add(m, f->path, coef, len, f->bound_Bps, NULL);
}

struct workload {
	struct mm *m;
	mm_id *flows;
	struct flow_def *defs;	/* each flow's path and bound */
	uint32_t n, group, links_per_group;
	int bounded;		/* every other flow rate-bounded */
};

static int build(struct workload *w, struct rng *r, uint32_t n, uint32_t group,
		 int bounded)
{
	uint32_t i, ngroups = (n + group - 1) / group;

	w->m = mm_new();
	w->flows = malloc(n * sizeof(*w->flows));
	w->defs = malloc(n * sizeof(*w->defs));
	w->n = n;
	w->group = group;
	w->bounded = bounded;
	w->links_per_group = group / 2 > 8 ? group / 2 : 8;
	if (!w->m || !w->flows || !w->defs)
		return -1;
	for (i = 0; i < ngroups * w->links_per_group; i++)
		if (mm_cons_add(w->m, 50e9 + 1e9 * rnd(r, 50)) == MM_NONE)
			return -1;
	for (i = 0; i < n; i++) {
		mm_id g = i / group;

		w->flows[i] = add_flow(w->m, r, g * w->links_per_group,
				       w->links_per_group, bounded && i % 2,
				       &w->defs[i]);
		if (w->flows[i] == MM_NONE)
			return -1;
	}
	return mm_solve(w->m, NULL, NULL) < 0 ? -1 : 0;
}

/* End every flow and start it again on the same path: every component
 * then has new variables, so the next solve re-solves everything. */
static int restart_all(struct workload *w)
{
	static const double coef[6] = {1, 1, 1, 1, 1, 1};
	uint32_t i;

	for (i = 0; i < w->n; i++)
		mm_var_remove(w->m, w->flows[i]);
	for (i = 0; i < w->n; i++) {
		const struct flow_def *f = &w->defs[i];

		w->flows[i] = mm_var_add(w->m, f->path, coef, f->len,
					 f->bound_Bps, NULL);
		if (w->flows[i] == MM_NONE)
			return -1;
	}
	return 0;
}

/* Median us of a full solve and of an incremental one; -1 when out of
 * memory. */
static int measure(struct workload *w, struct rng *r, int reps,
		   double *full_us, double *incr_us, long *incr_vars)
{
	double *tf = malloc((size_t)reps * sizeof(double));
	double *ti = malloc((size_t)reps * sizeof(double));
	int k;

	for (k = 0; k < reps; k++) {
		double t0;

		if (!tf || !ti || restart_all(w) != 0) {
			free(tf);
			free(ti);
			return -1;
		}
		t0 = now_us();
		mm_solve(w->m, NULL, NULL);
		tf[k] = now_us() - t0;
	}
	for (k = 0; k < reps; k++) {
		uint32_t i = rnd(r, w->n);
		mm_id g = i / w->group;
		double t0 = now_us();

		mm_var_remove(w->m, w->flows[i]);
		w->flows[i] = add_flow(w->m, r, g * w->links_per_group,
				       w->links_per_group, w->bounded && i % 2,
				       &w->defs[i]);
		*incr_vars = mm_solve(w->m, NULL, NULL);
		ti[k] = now_us() - t0;
	}
	*full_us = median(tf, reps);
	*incr_us = median(ti, reps);
	free(tf);
	free(ti);
	return 0;
}

static int run(uint32_t n, uint32_t group, int bounded, const char *label,
	       double *full_us)
{
	struct rng r = { 0x9e3779b97f4a7c15ull ^ n };
	struct workload w = {0};
	double full, incr;
	long vars = 0;
	int reps = n >= 10000 ? 21 : 201;

	if (build(&w, &r, n, group, bounded) != 0) {
		fprintf(stderr, "bench_maxmin: out of memory\n");
		return -1;
	}
	if (measure(&w, &r, reps, &full, &incr, &vars) != 0) {
		fprintf(stderr, "bench_maxmin: out of memory\n");
		return -1;
	}
	printf("%-10s %7u flows  full %10.2f us  incremental %10.2f us"
	       "  (%ld flows re-solved)\n", label, n, full, incr, vars);
	*full_us = full;
	mm_free(w.m);
	free(w.flows);
	free(w.defs);
	return 0;
}

/* Bytes the C heap holds (small chunks plus mmap'd large ones). */
static double heap_B(void)
{
	struct mallinfo2 mi = mallinfo2();

	return (double)mi.uordblks + (double)mi.hblkhd;
}

/* Memory a flow costs: the heap taken by 10,000 one-component flows
 * (2-6 links each) in the solver, over their count, plus the flownet's
 * record of a flow. */
static int per_flow(void)
{
	enum { N = 10000, LINKS = N / 2 };
	struct rng r = { 0x9e3779b97f4a7c15ull };
	struct mm *m = mm_new();
	struct flow_def def;
	double before;
	uint32_t i;

	for (i = 0; m && i < LINKS; i++)
		if (mm_cons_add(m, 50e9 + 1e9 * rnd(&r, 50)) == MM_NONE)
			goto oom;
	if (!m)
		goto oom;
	before = heap_B();
	for (i = 0; i < N; i++)
		if (add_flow(m, &r, 0, LINKS, 0, &def) == MM_NONE)
			goto oom;
	if (mm_solve(m, NULL, NULL) < 0)
		goto oom;
	printf("memory per flow: %.0f B in the max-min solver (its variable, "
	       "2-6 elements, its constraint-list entries and the solver's "
	       "scratch; 10,000 flows on 5,000 links) + %zu B its flow "
	       "record\n", (heap_B() - before) / N, flow_record_bytes());
	mm_free(m);
	return 0;
oom:
	fprintf(stderr, "bench_maxmin: out of memory\n");
	mm_free(m);
	return -1;
}

/* Exit 0 when the target is met, 1 when it is missed or a run fails (as
 * bench_plan and scripts/benchlib.sh: make bench lists the misses). The
 * target is the one-component full solve of the largest size. */
int main(void)
{
	static const uint32_t sizes[] = {10, 100, 1000, 10000};
	enum { NSIZES = sizeof(sizes) / sizeof(sizes[0]) };
	const double target_us = 1000;
	double full_us[NSIZES], other_us;
	size_t i;

	if (per_flow() != 0)
		return 1;
	printf("max-min re-solve, median per solve (target: 10,000 flows in "
	       "one component, full solve <= 1 ms)\n");
	for (i = 0; i < NSIZES; i++)
		if (run(sizes[i], sizes[i], 0, "one-comp", &full_us[i]) != 0)
			return 1;
	for (i = 0; i < NSIZES; i++)
		if (run(sizes[i], 10, 0, "groups-10", &other_us) != 0)
			return 1;
	for (i = 0; i < NSIZES; i++)
		if (run(sizes[i], sizes[i], 1, "bounded", &other_us) != 0)
			return 1;
	printf("one-comp 10000 flows full %.2f us (target <= %.0f us): %s\n",
	       full_us[NSIZES - 1], target_us,
	       full_us[NSIZES - 1] <= target_us ? "ok" : "MISSED");
	return full_us[NSIZES - 1] <= target_us ? 0 : 1;
}
