/*
 * plan_rank.c - does the planner's analytical tier rank layouts as the
 * full simulation does? For tests/plan-cli.sh and
 * scripts/validate-plan.sh.
 *
 *   plan_rank [--top K] [--sample M] [--min-rho R] [--pin KEY]... JOB
 *             [key=value]...
 *
 * Every valid layout of JOB that fits (with the key=value overrides,
 * nothing pinned) is estimated (plan_run, analytical tier only); the
 * best K by the estimate and M more spread evenly over the rest of the
 * ranking are simulated in full. --pin KEY keeps the job's value of a
 * searched dimension (as `llmsim plan --set KEY=...` does). Printed, one line: the job, GPUs,
 * layouts ranked, the sample, Spearman's rank correlation between the
 * estimated and the simulated step time over the sample and over the
 * best K, the analytical rank of the full simulation's fastest layout of
 * the sample, and the estimate's median and largest error against the
 * simulation. Exit 1 when the fastest is not in the analytical top K or
 * the correlation over the sample is below R (default 0.9); 2 on bad
 * input.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/diag.h"
#include "base/mem.h"
#include "config/config.h"
#include "plan/plan.h"

/* Ranks (1 = smallest) of v[0..n-1] into rank[], ties at their mean. */
static void ranks(const double *v, size_t n, double *rank)
{
	size_t i, k;

	for (i = 0; i < n; i++) {
		double below = 0, same = 0;

		for (k = 0; k < n; k++) {
			below += v[k] < v[i];
			same += v[k] == v[i];
		}
		rank[i] = below + (same + 1) / 2;
	}
}

/* Spearman's rho: Pearson's correlation of the ranks. */
static double spearman(const double *a, const double *b, size_t n)
{
	double *ra = mem_alloc(n * sizeof(*ra)), *rb = mem_alloc(n * sizeof(*rb));
	double ma = 0, mb = 0, sab = 0, saa = 0, sbb = 0;
	size_t i;

	if (!ra || !rb || n < 2)
		return NAN;
	ranks(a, n, ra);
	ranks(b, n, rb);
	for (i = 0; i < n; i++) {
		ma += ra[i] / (double)n;
		mb += rb[i] / (double)n;
	}
	for (i = 0; i < n; i++) {
		sab += (ra[i] - ma) * (rb[i] - mb);
		saa += (ra[i] - ma) * (ra[i] - ma);
		sbb += (rb[i] - mb) * (rb[i] - mb);
	}
	mem_free(ra);
	mem_free(rb);
	return saa > 0 && sbb > 0 ? sab / sqrt(saa * sbb) : NAN;
}

static int by_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

int main(int argc, char **argv)
{
	struct arena a;
	struct diag d;
	struct config_ctx cx;
	struct job_spec j;
	struct plan_opts o;
	struct plan_result r;
	struct plan_cand *s;
	const char *job = NULL, *sets[32], *pins[16];
	size_t npins = 0;
	size_t nsets = 0, n = 0, top = 20, more = 20, i, kept, best = 0;
	double min_rho = 0.9, *est, *sim, *err, rho_all, rho_top;
	int argi;

	for (argi = 1; argi < argc; argi++) {
		if (strcmp(argv[argi], "--top") == 0 && argi + 1 < argc)
			top = (size_t)atoi(argv[++argi]);
		else if (strcmp(argv[argi], "--sample") == 0 && argi + 1 < argc)
			more = (size_t)atoi(argv[++argi]);
		else if (strcmp(argv[argi], "--min-rho") == 0 && argi + 1 < argc)
			min_rho = atof(argv[++argi]);
		else if (strcmp(argv[argi], "--pin") == 0 && argi + 1 < argc &&
			 npins < 16)
			pins[npins++] = argv[++argi];
		else if (!job)
			job = argv[argi];
		else if (nsets < 32)
			sets[nsets++] = argv[argi];
	}
	if (!job || top < 2) {
		fprintf(stderr, "usage: plan_rank [--top K] [--sample M] "
			"[--min-rho R] [--pin KEY]... JOB [key=value]...\n");
		return 2;
	}
	arena_init(&a);
	diag_init(&d, stderr);
	cx = (struct config_ctx){ &a, &d, config_data_root(&a, argv[0]) };
	memset(&j, 0, sizeof(j));
	if (config_load(&cx, &job_plan_schema, job, sets, nsets, &j) != 0)
		return 2;
	plan_opts_init(&o);
	o.no_full = 1;
	o.top_k = 1000000;	/* every layout estimated in full */
	for (i = 0; i < npins; i++)
		if (!plan_pin_key(&o, pins[i])) {
			fprintf(stderr, "plan_rank: %s is not a searched "
				"dimension\n", pins[i]);
			return 2;
		}
	if (plan_run(&j, &o, &r, &d) != 0)
		return 2;
	s = mem_calloc(top + more, sizeof(*s));
	est = mem_alloc((top + more) * sizeof(*est));
	sim = mem_alloc((top + more) * sizeof(*sim));
	err = mem_alloc((top + more) * sizeof(*err));
	if (!s || !est || !sim || !err)
		return 1;
	for (i = 0; i < (size_t)r.ncands && i < top; i++)
		s[n++] = r.cands[i];
	for (i = 0; i < more && (size_t)r.ncands > top; i++) {
		size_t k = top + i * ((size_t)r.ncands - top) / more;

		if (k < (size_t)r.ncands && (n == 0 || s[n - 1].est_rank != r.cands[k].est_rank))
			s[n++] = r.cands[k];
	}
	for (i = 0; i < n; i++)
		s[i].est_rank = (int64_t)(s[i].est_rank ? s[i].est_rank : 0);
	/* analytical ranks: the position in plan_run's order */
	for (i = 0; i < n; i++) {
		int64_t k;

		for (k = 0; k < r.ncands; k++)
			if (memcmp(&r.cands[k].lay, &s[i].lay, sizeof(s[i].lay)) == 0)
				s[i].est_rank = k + 1;
	}
	o.no_full = 0;
	o.jobs = 0;
	if (plan_simulate(&j, &o, s, n, &d) != 0)
		return 1;
	for (i = 0, kept = 0; i < n; i++)	/* a failed full run: no comparison */
		if (!s[i].full_failed)
			s[kept++] = s[i];
	if (kept < n)
		fprintf(stderr, "plan_rank: %zu full runs failed (left out)\n",
			n - kept);
	n = kept;
	for (i = 0; i < n; i++) {
		est[i] = s[i].est.step_s;
		sim[i] = s[i].step_s;
		err[i] = fabs(est[i] - sim[i]) / sim[i];
		if (sim[i] < sim[best])
			best = i;
	}
	if (getenv("PLAN_RANK_VERBOSE"))	/* every simulated layout */
		for (i = 0; i < n; i++) {
			char lay[160];

			plan_layout_str(&s[i].lay, lay, sizeof(lay));
			fprintf(stderr, "%5lld %-56s est %9.4f s  full %9.4f s  %+6.1f %%\n",
				(long long)s[i].est_rank, lay, est[i], sim[i],
				100 * (est[i] - sim[i]) / sim[i]);
		}
	rho_all = spearman(est, sim, n);
	rho_top = spearman(est, sim, n < top ? n : top);
	qsort(err, n, sizeof(*err), by_double);
	printf("%-34s %6lld %8llu %4zu %7.3f %7.3f %9lld %7.1f %% %6.1f %%\n",
	       j.name ? j.name : job, (long long)system_gpus(j.system),
	       (unsigned long long)r.ranked, n, rho_all, rho_top,
	       (long long)s[best].est_rank, 100 * err[n / 2], 100 * err[n - 1]);
	plan_result_release(&r);
	argi = 0;
	if ((size_t)s[best].est_rank > top) {
		fprintf(stderr, "plan_rank: %s: the fastest simulated layout is "
			"%lld-th by the estimate, outside the top %zu\n", job,
			(long long)s[best].est_rank, top);
		argi = 1;
	}
	if (!(rho_all >= min_rho)) {
		fprintf(stderr, "plan_rank: %s: Spearman %.3f < %.3f\n", job,
			rho_all, min_rho);
		argi = 1;
	}
	mem_free(s);
	mem_free(est);
	mem_free(sim);
	mem_free(err);
	arena_release(&a);
	return argi;
}
