/*
 * net.c - the fabric model's front: build a system's network, choose an
 * algorithm and protocol per collective, time collectives alone, and run
 * them inside a step simulation.
 *
 * Choice. For each (algorithm, protocol) the library offers and that
 * applies to the op and group, the plan is run on a private idle copy of
 * the fabric (its own event engine) and the fastest wins; ties go to the
 * earlier algorithm in enum order (ring first), then the earlier
 * protocol (LL first). The candidates are run as the library's tuning
 * model sees them (CRUN_LIBRARY: latency constants and bandwidth, without
 * the kernels' loop costs and sustained caps of pipe.h, which NCCL's
 * model does not charge), so the choice is the library's even where its
 * model is too kind; the chosen plan is then timed in full. Where the
 * library's tuner scales an algorithm's bandwidth by a measured ratio
 * (RCCL's bwRatio per algorithm, protocol and node count: its model of
 * what the kernels reach, e.g. trees across 2 MI300X nodes at 0.11 of a
 * ring's Simple bandwidth), the candidate's transfer time is divided by
 * that ratio for the choice only: t_choice = L + (t - L) / r, L the
 * plan's latency constants; where it scales the latency (NCCL's ring
 * plateau: a ring Simple all-reduce across nodes at 1.4 L), the choice
 * adds (f - 1) L. A send's protocol in a p2p op (all-to-all, send/recv)
 * is the library's rule where it gives one (peer_max_bytes: NCCL's LL
 * threshold), not a timed choice. Plans, idle
 * times and choices are cached by collective (pcache.h), so a step that
 * repeats a collective pays once.
 *
 * The system's collective_overhead (software time the library's model
 * does not see: launch path, virtualization) is added to the first
 * phase of every plan; being the same for every candidate, it never
 * changes the choice.
 *
 * Inside a step the chosen plan runs on the step's engine through the
 * shared flows (flow.h), so it shares links with every other collective
 * in flight. A collective whose links carry nothing else when it starts
 * is replayed from its trajectory on the idle fabric (crun.h: recorded
 * once per plan and size, beside its idle time; it becomes real flows
 * the moment another flow needs one of its links, so the result is the
 * flow-level one): a step that repeats a collective 65,536 times pays
 * for its flows, solves and events once.
 *
 * What a collective's cost is keyed by (plans, times, choices,
 * trajectories): op, members, replicas, algorithm and protocol, size,
 * and an uneven all-to-all's matrix (compared in full). Entries stay for
 * the net's life; uneven all-to-alls, whose matrices may differ at every
 * call, stop being cached past A2A_CACHE_MAX entries (they still run,
 * as flows, each built for its own matrix). In front of the cache, a
 * small memo keyed by the descriptor's member array (the executor's are
 * interned, one per group) and its fields, checked against the members'
 * contents, answers a repeated collective without hashing its members.
 */
#include "net.h"

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "base/diag.h"
#include "base/mem.h"
#include "base/mix.h"
#include "config/spec_gpu.h"
#include "config/spec_system.h"
#include "algo.h"
#include "flow.h"
#include "ham.h"
#include "pcache.h"
#include "crun.h"
#include "net_memo.h"
#include "topo.h"

#define A2A_CACHE_MAX 4096	/* cache entries keyed by an all-to-all matrix */

struct net {
	const struct system_spec *sys;
	struct topo *topo;
	struct ham_cache ham;
	struct pcache *cache;
	struct sim *sim;		/* the step's engine, or NULL */
	struct flownet *flows;		/* flows on it */
	struct crun_set runs;		/* collectives in flight on it */
	struct sim *idle_sim;		/* private engine for idle timings */
	struct flownet *idle;
	struct crun_set idle_runs;
	struct net_stats stats;
	struct net_memo memo;		/* comm_start's memo (net_memo.h) */
	uint32_t a2a_entries;		/* cache entries keyed by a matrix */
	int replay;			/* replay idle-link collectives */
	int noguests;			/* no guests on replays (flow.c) */
	struct algo_floor floor;	/* the GPU's ring / tree LL costs (gpu_floor) */
	int failed;
	char error[256];
};

static int idle_engine(struct net *n);
static void idle_release(struct net *n);

/* crun_set's idle-engine callbacks for pair replays (crun_pair.c). */
static int idle_for_pairs(void *ctx, struct sim **sim, struct flownet **fn,
			  struct crun_set **rs)
{
	struct net *n = ctx;

	if (idle_engine(n) != 0)
		return -1;
	*sim = n->idle_sim;
	*fn = n->idle;
	*rs = &n->idle_runs;
	return 0;
}

static void idle_lost(void *ctx)
{
	idle_release(ctx);	/* it may be left mid-flight */
}

struct net *net_new(const struct system_spec *sys, struct sim *sim,
		    struct diag *d)
{
	struct net *n = mem_calloc(1, sizeof(*n));

	if (!n)
		goto oom;
	n->sys = sys;
	n->sim = sim;
	n->replay = 1;
	crun_set_pairs(&n->runs, idle_for_pairs, idle_lost, n);
	n->topo = topo_build(sys, d);
	if (!n->topo) {
		net_free(n);
		return NULL;
	}
	n->cache = pcache_new();
	if (!n->cache || (sim && !(n->flows = flow_new(n->topo, sim))) ||
	    (sim && net_memo_init(&n->memo) != 0))
		goto oom;
	return n;
oom:
	diag_oom(d);
	net_free(n);
	return NULL;
}

int net_attach(struct net *n, struct sim *sim)
{
	crun_set_release(&n->runs);
	n->sim = sim;
	n->failed = 0;
	/* The comm_start memo starts empty for each engine (a net built
	 * without one has none yet). Its entries are keyed by the member
	 * arrays of the step program that ran, by address: another step's
	 * program rarely has the same arrays at the same addresses, so kept
	 * across the planner's runs they only filled slots, and the table,
	 * which doubles when half its slots have missed, grew to 262,144
	 * slots of 192 B (50 MiB, zeroed fresh: 1.6 % of the DeepSeek-V3
	 * 2,048-GPU plan's CPU was the kernel clearing its pages) where
	 * one run needs 16,384. A miss asks the plan cache, which holds the
	 * same plan and trajectory (kept while the net lives): the results
	 * are the same (tests/unit/network: net.attach_starts_an_empty_memo). */
	net_memo_free(&n->memo);
	if (net_memo_init(&n->memo) != 0)
		return -1;
	if (n->flows && flow_attach(n->flows, sim) == 0)
		return 0;
	flow_free(n->flows);
	n->flows = flow_new(n->topo, sim);
	if (n->flows)
		flow_set_guests(n->flows, !n->noguests);
	return n->flows ? 0 : -1;
}

static void idle_release(struct net *n)
{
	crun_set_release(&n->idle_runs);
	flow_free(n->idle);
	sim_free(n->idle_sim);
	n->idle = NULL;
	n->idle_sim = NULL;
}

void net_free(struct net *n)
{
	if (!n)
		return;
	net_memo_free(&n->memo);
	crun_set_release(&n->runs);
	flow_free(n->flows);
	idle_release(n);
	pcache_free(n->cache);
	ham_cache_release(&n->ham);
	topo_free(n->topo);
	mem_free(n);
}

/* Plans are built per byte of size (shared by every size) unless the
 * collective is an uneven all-to-all, whose matrix is its size. */
static int per_byte(const struct coll_desc *c)
{
	return !c->a2a_B;
}

/* A plan and the pairs that do not apply are keyed without the size
 * when plans are built per byte (the build never sees it): keyed by size,
 * the pairs that do not apply were built again for each size a group
 * has (6,294 builds for 2,343 distinct on the DSV3 2,048 pp16 bench). */
static struct pkey key_of(const struct coll_desc *c, int kind, int algo,
			  int proto)
{
	int any_size = (kind == PK_PLAN || kind == PK_NOAPPLY) && per_byte(c);

	return (struct pkey){ kind, (int)c->op, algo, proto, c->ngpus,
			      c->replicas > 1 ? c->replicas : 1,
			      c->group > 1 ? c->group : 1,
			      any_size ? -1 : c->bytes,
			      c->gpus, c->a2a_B, c->path };
}

/* Whether a new entry for c may be cached: always, but for uneven
 * all-to-alls past A2A_CACHE_MAX entries (counted here). */
static int cacheable(struct net *n, const struct coll_desc *c)
{
	if (!c->a2a_B)
		return 1;
	if (n->a2a_entries >= A2A_CACHE_MAX)
		return 0;
	n->a2a_entries++;
	return 1;
}

/* The bytes a plan's per-chunk pipeline steps through: the collective's
 * size, but for an uneven all-to-all the heaviest sender's row (a
 * context-parallel ring's one peer, a routing matrix's straggler), which
 * its nominal size overstates by up to ngpus times. */
static double pipeline_bytes(const struct coll_desc *c)
{
	double most = 0, row;
	uint32_t i, j;

	if (!c->a2a_B)
		return c->bytes;
	for (i = 0; i < c->ngpus; i++) {
		row = 0;
		for (j = 0; j < c->ngpus; j++)
			row += c->a2a_B[(size_t)i * (size_t)c->ngpus + (size_t)j];
		if (row > most)
			most = row;
	}
	return most;
}

/* The GPU's own ring / tree LL costs where the library runs at them (its
 * gpu_floor), else NULL (the library's base and hop). */
static const struct algo_floor *gpu_floor(struct net *n)
{
	const struct gpu_spec *g = n->sys->gpu;

	if (!n->sys->collectives->gpu_floor || !g)
		return NULL;
	n->floor = (struct algo_floor){ g->collective_launch_s,
					g->collective_ll_step_s,
					g->collective_ll_channel_Bps };
	return &n->floor;
}

static struct cplan *build(struct net *n, const struct coll_desc *c,
			   int algo, int proto, int *rc, const char **why)
{
	struct cplan *cp = pcache_plan_new();
	struct coll_desc unit = *c;

	if (!cp) {
		*rc = -1;
		return NULL;
	}
	cp->per_byte = per_byte(c);
	if (cp->per_byte)
		unit.bytes = 1;
	else
		cp->size_B = pipeline_bytes(c);
	if (c->path)
		*rc = algo_path_build(n->topo, n->sys->collectives, &n->ham,
				      &unit, &cp->plan, why);
	else
		*rc = algo_build(n->topo, n->sys->collectives, gpu_floor(n),
				 &n->ham, &unit, algo, proto, &cp->plan, why);
	if (*rc == 0 && c->replicas > 1 &&
	    crun_charge_replicas(n->topo, &cp->plan, c->replicas, c->ngpus) != 0)
		*rc = -1;
	/* a host-launched library call pays the system's launch overhead;
	 * a GPU-initiated path its own setup (in the plan) */
	if (*rc == 0 && cp->plan.nphases > 0 && !c->path)
		cp->plan.phases[0].latency_s += n->sys->collective_overhead_s;
	if (*rc != 0) {
		pcache_plan_unref(cp);
		return NULL;
	}
	return cp;
}

/* The plan of (algo, proto) for c, with a reference for the caller.
 * *rc: 0; 1 does not apply (*why); -1 out of memory; -2 bad c (*why). */
/* The PK_NOAPPLY entry's mask has a bit for every pair. */
_Static_assert(ALGO_COUNT * PROTO_COUNT <= 31, "pairs fit an int's bits");

static struct cplan *get_plan(struct net *n, const struct coll_desc *c,
			      int algo, int proto, int *rc, const char **why)
{
	struct pkey k = key_of(c, PK_PLAN, algo, proto);
	struct pkey mk = key_of(c, PK_NOAPPLY, -1, -1);
	const struct pval *v = pcache_get(n->cache, &k);
	const struct pval *m = pcache_get(n->cache, &mk);
	uint32_t bit = 1u << (algo * PROTO_COUNT + proto);
	struct cplan *cp;

	if (v) {
		*rc = 0;
		pcache_plan_ref(v->plan);
		n->stats.plan_hits++;
		return v->plan;
	}
	if (m && ((uint32_t)m->algo & bit)) {
		*rc = 1;
		*why = m->why;
		return NULL;
	}
	cp = build(n, c, algo, proto, rc, why);
	if (*rc == 0 && cacheable(n, c)) {
		struct pval nv = { cp, *why, algo, proto, 0, NULL, NULL };

		/* A full cache only costs a rebuild later. */
		(void)pcache_put(n->cache, &k, &nv);
	} else if (*rc == 1 && cacheable(n, c)) {
		/* Pairs that do not apply are one bit each of the group's
		 * entry (most of a library's pairs do not apply to a given
		 * group: an entry each was most of the cache). */
		struct pval nv = { NULL, *why, (int)(m ? (uint32_t)m->algo | bit
						       : bit), -1, 0, NULL,
				   NULL };

		(void)pcache_set(n->cache, &mk, &nv);
	}
	return cp;
}

/* Volumes of cp are multiplied by this for c. */
static double scale_of(const struct cplan *cp, const struct coll_desc *c)
{
	return cp->per_byte ? c->bytes : 1;
}

struct stopwatch {
	struct sim *sim;
	units_ns_t end;		/* ns */
	int done;
};

static void stop(void *token)
{
	struct stopwatch *w = token;

	w->end = sim_now(w->sim);
	w->done = 1;
}

static int idle_engine(struct net *n)
{
	if (n->idle)
		return 0;
	if (!n->idle_sim && !(n->idle_sim = sim_new()))
		return -1;
	n->idle = flow_new(n->topo, n->idle_sim);
	return n->idle ? 0 : -1;
}

/* Seconds cp takes for c on the idle fabric, costed as view says. 0, -1
 * (memory) or -2 (longer than the engine represents: FLOW_TOO_LONG). */
static int run_idle(struct net *n, struct cplan *cp,
		    const struct coll_desc *c, enum crun_view view,
		    double *t_s)
{
	struct stopwatch w = { 0 };
	units_ns_t t0;

	if (idle_engine(n) != 0)
		return -1;
	w.sim = n->idle_sim;
	t0 = sim_now(n->idle_sim);
	if (crun_start(&n->idle_runs, n->idle_sim, n->idle, cp,
		       scale_of(cp, c), view, stop, &w) != 0 ||
	    sim_run(n->idle_sim) != 0 || flow_failed(n->idle) || !w.done) {
		int rc = strcmp(flow_error(n->idle), FLOW_TOO_LONG) == 0 ? -2
									 : -1;

		/* A failed run leaves the idle engine mid-flight: start over
		 * with a fresh one next time. */
		idle_release(n);
		return rc;
	}
	*t_s = units_ns_to_s(w.end - t0);
	return 0;
}

/* The same, remembered per plan, size and view. */
static int idle_time(struct net *n, struct cplan *cp,
		     const struct coll_desc *c, enum crun_view view, double *t_s)
{
	struct pkey k = key_of(c, view == CRUN_FULL ? PK_TIME : PK_LIBTIME,
			       cp->plan.algo, cp->plan.proto);
	const struct pval *v = pcache_get(n->cache, &k);
	struct pval nv = { NULL, NULL, cp->plan.algo, cp->plan.proto, 0,
			   NULL, NULL };
	int rc;

	if (v) {
		*t_s = v->time_s;
		return 0;
	}
	rc = run_idle(n, cp, c, view, t_s);
	if (rc != 0)
		return rc;
	nv.time_s = *t_s;
	/* A candidate's library-view time serves only the choice among the
	 * candidates, and the choice itself is cached: keeping every
	 * candidate's time as well made up most of the cache (20 entries a
	 * collective on a 4k-GPU --full step, 70 MB). */
	if (view == CRUN_FULL && cacheable(n, c))
		(void)pcache_put(n->cache, &k, &nv);
	return 0;
}

static int forced(int desc, int sys, int count)
{
	int v = desc >= 0 ? desc : sys;

	return v >= 0 && v < count ? v : -1;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Nodes (scale-up domains) the collective's GPUs span; 0 when out of
 * memory. */
static uint32_t span_nodes(const struct net *n, const struct coll_desc *c)
{
	uint32_t per = n->topo->gpus_per_node ? n->topo->gpus_per_node : 1;
	uint32_t *k, i, count = 0;

	if (c->ngpus == 0 || !c->gpus)
		return 1;	/* check_desc reports it */
	if (!(k = mem_alloc((size_t)c->ngpus * sizeof(*k))))
		return 0;
	for (i = 0; i < c->ngpus; i++)
		k[i] = c->gpus[i] / per;
	qsort(k, c->ngpus, sizeof(*k), cmp_u32);
	for (i = 0; i < c->ngpus; i++)
		if (i == 0 || k[i] != k[i - 1])
			count++;
	mem_free(k);
	return count;
}

/* The plan's latency constants: the sum of its phases' (s). */
static double plan_latency_s(const struct plan *pl)
{
	double s = 0;
	uint32_t i;

	for (i = 0; i < pl->nphases; i++)
		s += pl->phases[i].latency_s;
	return s;
}

/* What the library's tuner believes candidate cp takes from its idle
 * library-view time t_s, for a collective of `bytes` over `nodes` nodes
 * (see the file comment; RCCL and NCCL trees also scale by size bucket,
 * NCCL rings across nodes their latency). */
static double choice_time(const struct net *n, const struct cplan *cp,
			  const struct coll_desc *c, uint32_t nodes, double t_s)
{
	const struct coll_lib_spec *lib = n->sys->collectives;
	double bytes = c->bytes, lat = plan_latency_s(&cp->plan), extra = 0;
	double r = lib->algo[cp->plan.algo].select_bw[algo_scale(nodes)]
			   .r[cp->plan.proto];
	uint32_t i;

	for (i = 0; i < cp->plan.nphases; i++)
		extra += cp->plan.phases[i].select_extra_s;
	r = (r > 0 && r < 1 ? r : 1) * coll_lib_size_factor(lib,
		cp->plan.algo, cp->plan.proto, bytes, nodes);
	if (cp->plan.select_r > 0)	/* NVLS: its tuner's bandwidth */
		r *= cp->plan.select_r;
	/* the latency as the tuner sees it (NCCL's ring plateau) */
	extra += (coll_lib_lat_factor(lib, cp->plan.algo, cp->plan.proto,
				      c->op, bytes, c->ngpus, nodes) - 1) * lat;
	if (r != 1 && t_s > lat)
		return lat + extra + (t_s - lat) / r;
	return t_s + extra;
}

/* Whether the library runs algorithm a with protocol p only up to a
 * size below `bytes` (MSCCL's programs are per protocol, each with its
 * own [minBytes, maxBytes]: RCCL's all-pairs all-reduce on 8 MI300X runs
 * its LL program up to 524287 B and its Simple one from 524288 B). */
static int proto_too_big(const struct coll_lib_spec *lib, int a, int p,
			 double bytes)
{
	double max = lib->algo[a].proto_max_bytes.b[p];

	return max > 0 && bytes > max;
}

/* The largest send one rank makes to one peer in a p2p op (all-to-all:
 * bytes / ranks, or the uneven matrix's largest entry off the diagonal;
 * send/recv: its bytes); -1 for other ops. */
static double peer_bytes(const struct coll_desc *c)
{
	uint32_t i, j, n = c->ngpus;
	double m = 0;

	if (c->op == COLL_SENDRECV)
		return c->bytes;
	if (c->op != COLL_ALLTOALL || n == 0)
		return -1;
	if (!c->a2a_B)
		return c->bytes / n;
	for (i = 0; i < n; i++)
		for (j = 0; j < n; j++)
			if (j != i && c->a2a_B[(size_t)i * n + j] > m)
				m = c->a2a_B[(size_t)i * n + j];
	return m;
}

/* Whether the library's p2p rule (peer_max_bytes) takes protocol p away
 * from algorithm a for c. NCCL does not tune a send's protocol: LL while
 * the send fits NCCL_P2P_LL_THRESHOLD on its channels, else Simple
 * (NVIDIA/nccl@5067397c src/enqueue.cc addP2pToPlan: protoLL &= bytes <=
 * nChannels x P2pLLThreshold). So the protocol with the smallest limit
 * the send fits is the only one; a send over every limit takes one
 * without a limit. */
static int peer_rule_skips(const struct coll_lib_spec *lib, int a, int p,
			   const struct coll_desc *c)
{
	const struct coll_algo_spec *as = &lib->algo[a];
	double peer = peer_bytes(c), lim = 0;
	int q, rule = -1;

	if (peer < 0)
		return 0;
	for (q = 0; q < PROTO_COUNT; q++) {
		double m = as->peer_max_B.b[q];

		if (m > 0 && as->protocols.on[q] && peer <= m &&
		    (rule < 0 || m < lim)) {
			rule = q;
			lim = m;
		}
	}
	if (rule >= 0)
		return p != rule;
	return as->peer_max_B.b[p] > 0;
}

/* Time every candidate; keep the fastest. 0, 1 (none applies), -1, -2. */
/* NCCL enables LL128 by default only where its graph's GPU-NIC path is at
 * most PXB (PXN on sm90+): through the CPU over C2C it is PHB, so its
 * tuner keeps LL128 within a node until v2.27.3 ("Add support for P2C
 * (PXN over C2C) and the LL128 protocol"; NVIDIA/nccl v2.26.2-1
 * src/graph/tuning.cc, the pEnable == 2 branch; paths.cc). A protocol
 * the user forces (NCCL_PROTO, pEnable 1) skips that test and runs. */
static int c2c_skips_ll128(const struct net *n, int p, uint32_t nodes)
{
	return p == PROTO_LL128 && nodes > 1 && n->topo->nic_via_c2c &&
	       !n->sys->collectives->ll128_c2c;
}

static int pick(struct net *n, const struct coll_desc *c, int fa, int fp,
		int *algo, int *proto, const char **why)
{
	double best = -1;
	int a, p, rc;
	uint32_t nodes = span_nodes(n, c);

	if (nodes == 0)
		return -1;	/* out of memory */
	for (a = 0; a < ALGO_COUNT; a++)
		for (p = 0; p < PROTO_COUNT; p++) {
			struct cplan *cp;
			double t;

			if ((fa >= 0 && a != fa) || (fp >= 0 && p != fp))
				continue;
			if (fa < 0 && n->sys->collectives->algo[a].max_bytes > 0 &&
			    c->bytes > n->sys->collectives->algo[a].max_bytes)
				continue;	/* the library hands it on */
			if (fp < 0 && proto_too_big(n->sys->collectives, a, p,
						    c->bytes))
				continue;	/* another protocol's program */
			if (fp < 0 && peer_rule_skips(n->sys->collectives, a, p,
						      c))
				continue;	/* the library's p2p rule */
			if (fp < 0 && c2c_skips_ll128(n, p, nodes))
				continue;	/* the tuner's NIC-path rule */
			cp = get_plan(n, c, a, p, &rc, why);
			if (rc == 1)
				continue;
			if (rc != 0)
				return rc;
			rc = idle_time(n, cp, c, CRUN_LIBRARY, &t);
			if (rc == 0)
				t = choice_time(n, cp, c, nodes, t);
			pcache_plan_unref(cp);
			if (rc == -2)
				*why = FLOW_TOO_LONG;
			if (rc != 0)
				return rc;
			if (best < 0 || t < best) {
				best = t;
				*algo = a;
				*proto = p;
			}
		}
	return best < 0 ? 1 : 0;
}

/* RCCL's protocol ranges (rcclUpdateCollectiveProtocol): after its tuner
 * picked (algorithm, protocol), a group spanning nodes gets the protocol
 * its size falls in, the algorithm kept, when that algorithm runs it.
 * 0, or -1 out of memory. */
static int forced_range(struct net *n, const struct coll_desc *c, int algo,
			int *proto, const char **why)
{
	uint32_t nodes = span_nodes(n, c);
	int p;

	if (nodes == 0)
		return -1;
	p = coll_lib_range_proto(n->sys->collectives, c->op, c->bytes,
				 c->ngpus, nodes);
	if (p >= 0 && algo_offered(n->sys->collectives, algo, p, c->op, why))
		*proto = p;
	return 0;
}

/* The (algorithm, protocol) for c: forced, remembered, or picked. */
static int choose(struct net *n, const struct coll_desc *c, int *algo,
		  int *proto, const char **why)
{
	int fa = forced(c->algo, n->sys->algorithm, ALGO_COUNT);
	int fp = forced(c->proto, n->sys->protocol, PROTO_COUNT);
	struct pkey k = key_of(c, PK_CHOICE, fa, fp);
	const struct pval *v;
	int rc;

	*why = "no algorithm the library offers applies";
	if (fa >= 0 && fp >= 0) {
		*algo = fa;
		*proto = fp;
		return 0;
	}
	v = pcache_get(n->cache, &k);
	if (v) {
		*algo = v->algo;
		*proto = v->proto;
		return 0;
	}
	rc = pick(n, c, fa, fp, algo, proto, why);
	if (rc == 0 && fp < 0)
		rc = forced_range(n, c, *algo, proto, why);
	if (rc == 0 && cacheable(n, c)) {
		struct pval nv = { NULL, NULL, *algo, *proto, 0, NULL, NULL };

		(void)pcache_put(n->cache, &k, &nv);
	}
	return rc;
}

static void describe(char *buf, size_t len, const struct coll_desc *c)
{
	snprintf(buf, len, "%s of %.0f B over %u GPUs",
		 (unsigned)c->op < COLL_OP_COUNT ? coll_op_names[c->op] : "?",
		 c->bytes, c->ngpus);
}

/* The plan to run for c, with a reference; NULL with *why / *rc set. */
static struct cplan *plan_for(struct net *n, const struct coll_desc *c,
			      int *rc, const char **why)
{
	int algo = 0, proto = 0;

	/* Plans are built for 1 byte and scaled, so the size is checked
	 * here, before any cache lookup. */
	if (!(c->bytes >= 0) || !isfinite(c->bytes)) {
		*why = "the size must be a finite number of bytes >= 0";
		*rc = -2;
		return NULL;
	}
	if (c->path)	/* not the library's: its own plan, no choice */
		return get_plan(n, c, ALGO_COUNT, 0, rc, why);
	*rc = choose(n, c, &algo, &proto, why);
	if (*rc != 0)
		return NULL;
	return get_plan(n, c, algo, proto, rc, why);
}

int net_collective_time(struct net *n, const struct coll_desc *c,
			struct net_coll_result *out, struct diag *d)
{
	const char *why = NULL;
	char what[128];
	struct cplan *cp;
	int rc;
	double t;

	describe(what, sizeof(what), c);
	cp = plan_for(n, c, &rc, &why);
	if (!cp) {
		if (rc == -1)
			diag_oom(d);
		else
			diag_error(d, NULL, 0, 0, "%s: %s", what, why);
		return -1;
	}
	rc = idle_time(n, cp, c, CRUN_FULL, &t);
	if (c->path) {
		out->algorithm = c->path->mode == COLL_PATH_FORWARD ?
				 "forward" : "direct";
		out->protocol = "gpu";
	} else {
		out->algorithm = coll_algo_names[cp->plan.algo];
		out->protocol = coll_proto_names[cp->plan.proto];
	}
	pcache_plan_unref(cp);
	if (rc == -2) {
		diag_error(d, NULL, 0, 0, "%s: %s", what, FLOW_TOO_LONG);
		return -1;
	}
	if (rc != 0) {
		diag_oom(d);
		return -1;
	}
	out->time_s = t;
	out->algbw_Bps = t > 0 ? c->bytes / t : 0;
	out->busbw_Bps = out->algbw_Bps * algo_busbw_factor(c->op, c->ngpus);
	return 0;
}

/* ---- the comm backend ---- */

struct bail {
	void (*done)(void *token);
	void *token;
};

static void bail_ev(struct sim *sim, void *arg)
{
	struct bail b = *(struct bail *)arg;

	(void)sim;
	mem_free(arg);
	b.done(b.token);
}

/* Record the first failure and finish the collective at once. */
static void fail(struct net *n, const struct coll_desc *c, const char *why,
		 void (*done)(void *), void *token)
{
	struct bail *b = mem_alloc(sizeof(*b));
	char what[128];

	if (!n->failed) {
		describe(what, sizeof(what), c);
		snprintf(n->error, sizeof(n->error), "%s: %s", what, why);
	}
	n->failed = 1;
	if (b) {
		*b = (struct bail){ done, token };
		if (sim_after(n->sim, 0, bail_ev, b))
			return;
		mem_free(b);
	}
}

static void free_traj(void *tr)
{
	ctraj_free(tr);
}

/* The trajectory of cp for c on the idle fabric, recorded once and
 * cached beside its idle time; NULL when it cannot be had (memory, or
 * an all-to-all matrix past the cache's limit): c then runs as flows. */
static const struct ctraj *traj_of(struct net *n, struct cplan *cp,
				   const struct coll_desc *c)
{
	struct pkey k = key_of(c, PK_TRAJ, cp->plan.algo, cp->plan.proto);
	const struct pval *v = pcache_get(n->cache, &k);
	struct pval nv = { NULL, NULL, cp->plan.algo, cp->plan.proto, 0,
			   NULL, free_traj };
	struct ctraj *tr;

	if (v)
		return v->own;
	if (!cacheable(n, c) || idle_engine(n) != 0)
		return NULL;
	if (crun_record(&n->idle_runs, n->idle_sim, n->idle, cp,
		       scale_of(cp, c), &tr) != 0) {
		idle_release(n);	/* it may be left mid-flight */
		return NULL;
	}
	nv.own = tr;
	if (pcache_put(n->cache, &k, &nv) != 0) {
		ctraj_free(tr);
		return NULL;
	}
	return tr;
}

/* Whether the cache holds cp as c's plan (and so keeps it while the net
 * lives): a plan it could not store is held by the memo alone. */
static int kept(const struct net *n, const struct coll_desc *c,
		const struct cplan *cp)
{
	struct pkey k = c->path ? key_of(c, PK_PLAN, ALGO_COUNT, 0)
				: key_of(c, PK_PLAN, cp->plan.algo,
					 cp->plan.proto);
	const struct pval *v = pcache_get(n->cache, &k);

	return v && v->plan == cp;
}

/* Start c. dm: the caller's memo of c (comm.h), or NULL. What it holds
 * for c is what the memo would give: the plan (kept by the cache, which
 * drops nothing while the net lives) and trajectory found the first
 * time; an uneven all-to-all's are never kept (the cache may refuse its
 * matrix past A2A_CACHE_MAX, and then builds its plan anew). */
static void start_with(struct net *n, const struct coll_desc *c,
		       struct comm_memo *dm, void (*done)(void *token),
		       void *token)
{
	const char *why = "out of memory";
	const struct memo *m;
	const struct ctraj *tr = NULL;
	struct cplan *cp;
	int rc;

	if (!n->sim)
		BUG("net_comm_ops on a net built without an engine");
	n->stats.collectives++;
	if (dm && dm->a && !c->a2a_B) {
		cp = (struct cplan *)dm->a;
		pcache_plan_ref(cp);
		tr = dm->b;
	} else if ((m = c->a2a_B ? NULL : net_memo_slot(&n->memo, c)) &&
		   net_memo_same(m, c)) {
		cp = m->cp;
		pcache_plan_ref(cp);
		tr = m->tr;
	} else {
		cp = plan_for(n, c, &rc, &why);
		if (!cp) {
			fail(n, c, rc == -1 ? "out of memory" : why, done,
			     token);
			return;
		}
		tr = traj_of(n, cp, c);
		net_memo_put(&n->memo, c, cp, tr);
	}
	/* The plan stays: the memo holds a reference (net_memo_put) or, for a
	 * plan it holds no more, the cache does (plans are never dropped
	 * while the net lives). Only a cached plan is kept here. */
	if (dm && !dm->a && !c->a2a_B && kept(n, c, cp)) {
		dm->a = cp;
		dm->b = tr;
	}
	rc = 1;
	if (n->replay && tr)
		rc = crun_replay(&n->runs, n->sim, n->flows, cp,
				scale_of(cp, c), tr, done, token);
	if (rc == 1) {
		n->stats.flows += cp->plan.nflows;
		/* a replay kept from its links now may hold them when its
		 * first flows are due (crun.c "Late replays") */
		if (n->replay && tr)
			rc = crun_start_late(&n->runs, n->sim, n->flows, cp,
					     scale_of(cp, c), tr, done, token);
		else
			rc = crun_start(&n->runs, n->sim, n->flows, cp,
					scale_of(cp, c), CRUN_FULL, done,
					token);
	}
	pcache_plan_unref(cp);
	if (rc != 0)
		fail(n, c, "out of memory", done, token);
}

void net_set_replay(struct net *n, int on)
{
	n->replay = on;
}

void net_set_pairs(struct net *n, int on)
{
	crun_set_pairs(&n->runs, on ? idle_for_pairs : NULL, idle_lost, n);
}

void net_set_pairs_max_bytes(struct net *n, size_t bytes)
{
	n->runs.pairs_max_B = bytes;
}

void net_set_guests(struct net *n, int on)
{
	n->noguests = !on;
	if (n->flows)
		flow_set_guests(n->flows, on);
}

static void comm_start(void *ctx, const struct coll_desc *c,
		       void (*done)(void *token), void *token)
{
	start_with(ctx, c, NULL, done, token);
}

static void comm_start_memo(void *ctx, const struct coll_desc *c,
			    struct comm_memo *dm, void (*done)(void *token),
			    void *token)
{
	start_with(ctx, c, dm, done, token);
}

const struct comm_ops net_comm_ops = { .start = comm_start,
				       .start_memo = comm_start_memo };

void net_get_stats(const struct net *n, struct net_stats *out)
{
	*out = n->stats;
	if (n->flows) {
		out->solves = flow_solves(n->flows);
		out->resolved = flow_resolved(n->flows);
		out->guests = flow_guests(n->flows);
	}
	out->replays = crun_replays(&n->runs);
	out->late = crun_late(&n->runs);
	out->paired = n->runs.paired;
	out->pairs_recorded = n->runs.pairs_recorded;
	out->pairs_evicted = n->runs.pairs_evicted;
	out->flows -= crun_late_flows(&n->runs);	/* never started */
	out->resumed = crun_resumed(&n->runs);
	out->reheld = crun_reheld(&n->runs);
	out->reclaimed = crun_reclaimed(&n->runs);
	out->detached = crun_detached(&n->runs);
	out->host_kept = crun_host_kept(&n->runs);
}

int net_failed(const struct net *n)
{
	return n->failed || (n->flows && flow_failed(n->flows));
}

const char *net_error(const struct net *n)
{
	if (n->failed)
		return n->error;
	return n->flows ? flow_error(n->flows) : "";
}
