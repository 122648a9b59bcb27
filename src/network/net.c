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
 * plan's latency constants. Plans, idle
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
 * in flight.
 */
#include "net.h"

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "base/diag.h"
#include "base/mem.h"
#include "algo.h"
#include "flow.h"
#include "ham.h"
#include "pcache.h"
#include "crun.h"
#include "topo.h"

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
	int failed;
	char error[256];
};

struct net *net_new(const struct system_spec *sys, struct sim *sim,
		    struct diag *d)
{
	struct net *n = mem_calloc(1, sizeof(*n));

	if (!n)
		goto oom;
	n->sys = sys;
	n->sim = sim;
	n->topo = topo_build(sys, d);
	if (!n->topo) {
		net_free(n);
		return NULL;
	}
	n->cache = pcache_new();
	if (!n->cache || (sim && !(n->flows = flow_new(n->topo, sim))))
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
	if (n->flows && flow_attach(n->flows, sim) == 0)
		return 0;
	flow_free(n->flows);
	n->flows = flow_new(n->topo, sim);
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
	crun_set_release(&n->runs);
	flow_free(n->flows);
	idle_release(n);
	pcache_free(n->cache);
	ham_cache_release(&n->ham);
	topo_free(n->topo);
	mem_free(n);
}

/* FNV-1a of a non-library path's numbers (they shape the plan). */
static uint64_t path_hash(const struct coll_path *p)
{
	const double v[8] = { p->mode, p->setup_s, p->hop_scale_up_s,
			      p->hop_scale_out_s, p->gpu_Bps, p->node_share,
			      p->eff_scale_up, p->eff_scale_out };
	const unsigned char *b = (const unsigned char *)v;
	uint64_t h = 1469598103934665603ull;
	size_t i;

	for (i = 0; i < sizeof(v); i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

static struct pkey key_of(const struct coll_desc *c, int kind, int algo,
			  int proto)
{
	uint64_t tag = c->a2a_B ? c->a2a_key : 0;

	if (c->path)
		tag ^= path_hash(c->path);
	return (struct pkey){ kind, (int)c->op, algo, proto, c->ngpus,
			      c->replicas > 1 ? c->replicas : 1,
			      kind == PK_PLAN ? -1 : c->bytes, c->gpus, tag };
}

/* Plans can be remembered unless the collective is an uneven all-to-all
 * whose matrix the caller gave no key for. */
static int shareable(const struct coll_desc *c)
{
	return !c->a2a_B || c->a2a_key != 0;
}

/* Plans are built per byte of size (shared by every size) unless the
 * collective is an uneven all-to-all, whose matrix is its size. */
static int per_byte(const struct coll_desc *c)
{
	return !c->a2a_B;
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
	if (c->path)
		*rc = algo_path_build(n->topo, n->sys->collectives, &n->ham,
				      &unit, &cp->plan, why);
	else
		*rc = algo_build(n->topo, n->sys->collectives, &n->ham, &unit,
				 algo, proto, &cp->plan, why);
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
static struct cplan *get_plan(struct net *n, const struct coll_desc *c,
			      int algo, int proto, int *rc, const char **why)
{
	struct pkey k = key_of(c, PK_PLAN, algo, proto);
	const struct pval *v = shareable(c) ? pcache_get(n->cache, &k) : NULL;
	struct cplan *cp;

	if (v) {
		*rc = v->plan ? 0 : 1;
		*why = v->why;
		if (v->plan) {
			pcache_plan_ref(v->plan);
			n->stats.plan_hits++;
		}
		return v->plan;
	}
	cp = build(n, c, algo, proto, rc, why);
	if (shareable(c) && (*rc == 0 || *rc == 1)) {
		struct pval nv = { cp, *why, algo, proto, 0 };

		/* A full cache only costs a rebuild later. */
		(void)pcache_put(n->cache, &k, &nv);
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

/* Seconds cp takes for c on the idle fabric, costed as view says. 0 or
 * -1 (memory). */
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
		/* A failed run leaves the idle engine mid-flight: start over
		 * with a fresh one next time. */
		idle_release(n);
		return -1;
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
	const struct pval *v = shareable(c) ? pcache_get(n->cache, &k) : NULL;
	struct pval nv = { NULL, NULL, cp->plan.algo, cp->plan.proto, 0 };

	if (v) {
		*t_s = v->time_s;
		return 0;
	}
	if (run_idle(n, cp, c, view, t_s) != 0)
		return -1;
	nv.time_s = *t_s;
	if (shareable(c))
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
 * library-view time t_s, for a group over `nodes` nodes (see the file
 * comment). */
static double choice_time(const struct net *n, const struct cplan *cp,
			  uint32_t nodes, double t_s)
{
	const struct coll_lib_spec *lib = n->sys->collectives;
	double lat = plan_latency_s(&cp->plan);
	double r = lib->algo[cp->plan.algo].select_bw[algo_scale(nodes)]
			   .r[cp->plan.proto];

	if (r > 0 && r < 1 && t_s > lat)
		return lat + (t_s - lat) / r;
	return t_s;
}

/* Time every candidate; keep the fastest. 0, 1 (none applies), -1, -2. */
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
			cp = get_plan(n, c, a, p, &rc, why);
			if (rc == 1)
				continue;
			if (rc != 0)
				return rc;
			rc = idle_time(n, cp, c, CRUN_LIBRARY, &t);
			if (rc == 0)
				t = choice_time(n, cp, nodes, t);
			pcache_plan_unref(cp);
			if (rc != 0)
				return -1;
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
	v = shareable(c) ? pcache_get(n->cache, &k) : NULL;
	if (v) {
		*algo = v->algo;
		*proto = v->proto;
		return 0;
	}
	rc = pick(n, c, fa, fp, algo, proto, why);
	if (rc == 0 && fp < 0)
		rc = forced_range(n, c, *algo, proto, why);
	if (rc == 0 && shareable(c)) {
		struct pval nv = { NULL, NULL, *algo, *proto, 0 };

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

static void comm_start(void *ctx, const struct coll_desc *c,
		       void (*done)(void *token), void *token)
{
	struct net *n = ctx;
	const char *why = "out of memory";
	struct cplan *cp;
	int rc;

	if (!n->sim)
		BUG("net_comm_ops on a net built without an engine");
	n->stats.collectives++;
	cp = plan_for(n, c, &rc, &why);
	if (!cp) {
		fail(n, c, rc == -1 ? "out of memory" : why, done, token);
		return;
	}
	n->stats.flows += cp->plan.nflows;
	rc = crun_start(&n->runs, n->sim, n->flows, cp, scale_of(cp, c),
			CRUN_FULL, done, token);
	pcache_plan_unref(cp);
	if (rc != 0)
		fail(n, c, "out of memory", done, token);
}

const struct comm_ops net_comm_ops = { comm_start };

void net_get_stats(const struct net *n, struct net_stats *out)
{
	*out = n->stats;
	if (n->flows) {
		out->solves = flow_solves(n->flows);
		out->resolved = flow_resolved(n->flows);
	}
}

int net_failed(const struct net *n)
{
	return n->failed || (n->flows && flow_failed(n->flows));
}

const char *net_error(const struct net *n)
{
	if (n->failed)
		return n->error;
	return net_failed(n) ? "out of memory in the flow model" : "";
}
