/*
 * exec_jitter.c - the synchronization tax: per-rank variability and the
 * wait for the slowest member of every rendezvous.
 *
 * Model. A GPU's pace wanders: its compute over one "op" (the run of
 * compute tasks one rank does for one microbatch in a row: a stage's
 * forward or backward of a microbatch) takes T (1 + sigma_op Z), Z
 * standard normal, independent between ops and GPUs, and the GPU keeps a
 * persistent pace factor 1 + sigma_gpu Y (Y standard normal, fixed per
 * GPU). Fleet measurements fix both: ByteDance's straggler study (Lin et
 * al., OSDI '25, artifact github.com/ByteDance-Seed/StragglerAnalysis,
 * traces of production Megatron jobs) shows a healthy worker's forward
 * or backward op deviating from its peers' median by 1.0 % (sd, trace ST,
 * tp 1: 68 ms forward and 146 ms backward ops alike, so the deviation is
 * proportional to T; lag-1 correlation -0.12) and persistent per-worker
 * offsets of 0.2 - 0.5 % (sd over workers of their median deviation).
 * sigma_op is one GPU's own sd: trace ST's peers are the 2 dp ranks of a
 * stage, the worker included, so its deviation is sigma_op / sqrt 2
 * (sigma_op 1.4 %, configs/systems). The values are data
 * (system.variability).
 *
 * Lateness. Let L_i be how far GPU i is behind the deterministic schedule.
 * Between two meetings of one group (the same set of GPUs: a TP group, a
 * DP group, a pair of pipeline neighbours in either direction) the
 * members' lateness gains independent parts; a rendezvous makes all of
 * them wait for the latest. With U the variance each member gathered
 * since the group last met,
 *
 *     U = sigma_op^2 sum_ops t_op^2 + sigma_gpu^2 C^2
 *
 * (t_op the part of each op run since then, so a whole op adds
 * sigma_op^2 T^2; C the compute since then), the expected wait beyond the
 * deterministic rendezvous is the expected maximum of N such deviations,
 *
 *     delta = e(N) sqrt(U),    e(N) = E[max of N standard normals]
 *                                   = int x N phi(x) Phi(x)^(N-1) dx
 *
 * with N the group's GPUs (every replica of a symmetric group counts).
 * The lateness is in the compute: the engine starts the collective at
 * max(its last member's arrival, end of the compute that feeds it +
 * delta), U taken when that compute ended. A member held back by its
 * stream (a chain of gradient buckets behind earlier ones) has absorbed
 * the lateness meanwhile, so the chain pays it once, not per bucket. The
 * tax propagates through the step like any wait (it shows in the
 * critical path as a gap: other_s). A rank is realigned with the group
 * (its gathered terms restart) only when its compute actually waited for
 * the collective (a compute task whose cause is the collective's member):
 * an overlapped collective (gradient buckets during the backward) does
 * not stop a slow GPU from staying late, and the last bucket waits for
 * all the lateness of the step. Per-op jitter is what varies from step
 * to step; the persistent part adds to the mean only.
 *
 * Spread. A rank's lateness variance V grows by sigma_op^2 T^2 per op; at
 * a rendezvous the independent part U_op (the transient share of U)
 * becomes that of the maximum, v(N) U_op, v(N) = Var[max of N standard
 * normals]. The step time's standard deviation is sqrt(V) of the final
 * rank at the end; p50 and p90 are mean + z sd with z = 0 and 1.2816
 * (the maximum of normals is nearly normal for the N and step counts of
 * training). Checked against the same traces: steps of job ST vary with
 * p90 / mean 1.006 (AR 1.005).
 *
 * Deterministic: expectations, no sampling. e(N) and v(N) are computed by
 * quadrature (Simpson, x in [-9, 9], 3601 points) and memoized.
 */
#include "exec_impl.h"

#include <math.h>
#include <string.h>

#include "base/mem.h"

#define GRID 3600		/* Simpson intervals over [-9, 9] */

/* E[max] and E[max^2] of n standard normals by Simpson's rule. */
static void max_moments(double n, double *m1, double *m2)
{
	double a = -9, h = 18.0 / GRID, s1 = 0, s2 = 0;
	int i;

	for (i = 0; i <= GRID; i++) {
		double x = a + i * h;
		double phi = exp(-0.5 * x * x) / sqrt(2 * M_PI);
		double cdf = 0.5 * erfc(-x / sqrt(2));
		double f = n * phi * (cdf > 0 ? exp((n - 1) * log(cdf)) : 0);
		double w = i == 0 || i == GRID ? 1 : i % 2 ? 4 : 2;

		s1 += w * x * f;
		s2 += w * x * x * f;
	}
	*m1 = s1 * h / 3;
	*m2 = s2 * h / 3;
}

double exec_emax(double n)
{
	double m1, m2;

	if (n <= 1)
		return 0;
	max_moments(n, &m1, &m2);
	return m1;
}

double exec_vmax(double n)
{
	double m1, m2;

	if (n <= 1)
		return 1;
	max_moments(n, &m1, &m2);
	return m2 - m1 * m1;
}

/* Memoized e(n), v(n) for group sizes up to JIT_MEMO, else computed. */
static void moments(struct exec_jit *j, uint32_t n, double *e, double *v)
{
	if (n < JIT_MEMO && j->memo) {
		if (!j->memo->ok[n]) {
			j->memo->e[n] = exec_emax(n);
			j->memo->v[n] = exec_vmax(n);
			j->memo->ok[n] = 1;
		}
		*e = j->memo->e[n];
		*v = j->memo->v[n];
		return;
	}
	*e = exec_emax(n);
	*v = exec_vmax(n);
}

int exec_jit_init(struct exec_jit *j, const struct exec_jitter *spec,
		  uint32_t nranks)
{
	uint32_t r;

	memset(j, 0, sizeof(*j));
	j->spec = *spec;
	j->on = spec->op_sigma > 0 || spec->gpu_sigma > 0;
	if (!j->on)
		return 0;
	j->nranks = nranks;
	j->rank = mem_calloc(nranks, sizeof(*j->rank));
	j->memo = mem_calloc(1, sizeof(*j->memo));
	if (!j->rank || !j->memo)
		return -1;
	for (r = 0; r < nranks; r++)
		j->rank[r].op_mb = UINT32_MAX;
	return 0;
}

void exec_jit_release(struct exec_jit *j)
{
	uint32_t r;

	for (r = 0; j->rank && r < j->nranks; r++)
		mem_free(j->rank[r].g);
	mem_free(j->rank);
	mem_free(j->memo);
	memset(j, 0, sizeof(*j));
}

/* Close rank's current op: its parts since each group's last meeting
 * become closed terms, and its whole length adds to the rank's spread. */
static void close_op(struct exec_jit *j, struct jit_rank *r)
{
	double s2 = j->spec.op_sigma * j->spec.op_sigma;
	uint32_t k;

	for (k = 0; k <= r->n; k++) {
		struct jit_acc *a = k < r->n ? &r->g[k].acc : &r->total;

		a->closed += a->since * a->since;
		a->since = 0;
	}
	r->var += s2 * r->op_len * r->op_len;
	r->op_len = 0;
}

void exec_jit_compute(struct exec_jit *j, uint32_t rank, int32_t mb,
		      double dur_s)
{
	struct jit_rank *r;
	uint32_t k;

	if (!j->on || !(dur_s > 0))
		return;
	r = &j->rank[rank];
	if (mb < 0 || (uint32_t)mb != r->op_mb)
		close_op(j, r);
	r->op_mb = (uint32_t)mb;
	r->op_len += dur_s;
	for (k = 0; k <= r->n; k++) {
		struct jit_acc *a = k < r->n ? &r->g[k].acc : &r->total;

		a->since += dur_s;
		a->comp += dur_s;
	}
}

/* rank's terms for the group with key: created from the rank's totals
 * since the step began (all ranks start aligned); NULL out of memory. */
static struct jit_acc *acc_of(struct jit_rank *r, uint64_t key)
{
	uint32_t k;

	for (k = 0; k < r->n; k++)
		if (r->g[k].key == key)
			return &r->g[k].acc;
	if (r->n == r->cap) {
		uint32_t cap = r->cap ? 2 * r->cap : 4;
		struct jit_group *g = mem_realloc(r->g, cap * sizeof(*g));

		if (!g)
			return NULL;
		r->g = g;
		r->cap = cap;
	}
	r->g[r->n].key = key;
	r->g[r->n].acc = r->total;
	return &r->g[r->n++].acc;
}

/* Transient and persistent variance gathered in a. */
static void gathered(const struct exec_jit *j, const struct jit_acc *a,
		     double *u_op, double *u_gpu)
{
	double so = j->spec.op_sigma, sg = j->spec.gpu_sigma;

	*u_op = so * so * (a->closed + a->since * a->since);
	*u_gpu = sg * sg * a->comp * a->comp;
}

int exec_jit_rendezvous(struct exec_jit *j, const uint32_t *ranks,
			uint32_t n, uint64_t key, uint32_t gpus,
			double *wait_s)
{
	double u_op = 0, u_gpu = 0, e, v;
	uint32_t i;

	*wait_s = 0;
	if (!j->on || gpus < 2)
		return 0;
	/* Members are alike; take the largest (the replicas' variances are
	 * those of their simulated rank). */
	for (i = 0; i < n; i++) {
		struct jit_acc *a = acc_of(&j->rank[ranks[i]], key);
		double x, y;

		if (!a)
			return -1;
		gathered(j, a, &x, &y);
		if (x > u_op)
			u_op = x;
		if (y > u_gpu)
			u_gpu = y;
	}
	moments(j, gpus, &e, &v);
	*wait_s = e * sqrt(u_op + u_gpu);
	return 0;
}

int exec_jit_realign(struct exec_jit *j, uint32_t rank, uint64_t key,
		     uint32_t gpus)
{
	struct jit_rank *r;
	struct jit_acc *a;
	double u_op, u_gpu, e, v;

	if (!j->on || gpus < 2)
		return 0;
	r = &j->rank[rank];
	if (!(a = acc_of(r, key)))
		return -1;
	gathered(j, a, &u_op, &u_gpu);
	moments(j, gpus, &e, &v);
	/* The rank now carries the group's latest lateness: the transient
	 * part it gathered on its own (u_op) has the spread of the maximum,
	 * v(N) u_op (the open op is added whole when it closes, so its
	 * share is taken off here too). */
	r->var += (v - 1) * u_op;	/* may dip below 0 until the op closes */
	memset(a, 0, sizeof(*a));
	return 0;
}

double exec_jit_sd(struct exec_jit *j, uint32_t rank)
{
	if (!j->on)
		return 0;
	close_op(j, &j->rank[rank]);
	return j->rank[rank].var > 0 ? sqrt(j->rank[rank].var) : 0;
}

uint64_t exec_jit_group_key(const uint32_t *gpus, uint32_t n)
{
	uint64_t sum = 0, x;
	uint32_t i;

	/* Order-independent: a pair meets as one group whichever way its
	 * transfers go (splitmix64 of each id, summed). */
	for (i = 0; i < n; i++) {
		x = gpus[i] + 0x9e3779b97f4a7c15ull;
		x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
		x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
		sum += x ^ (x >> 31);
	}
	return sum ^ n;
}

uint64_t exec_jit_key_of(const struct coll_desc *c, struct jit_key_memo *memo)
{
	struct jit_key_memo *m = &memo[((uintptr_t)c->gpus >> 2) % JIT_KEY_MEMO];

	if (m->gpus != c->gpus) {
		m->gpus = c->gpus;
		m->key = exec_jit_group_key(c->gpus, c->ngpus);
	}
	return m->key;
}
