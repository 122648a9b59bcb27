/*
 * infer_comm.c - the inference steps' comm backend (see infer_comm.h).
 */
#include "infer_comm.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/diag.h"
#include "base/mem.h"
#include "config/spec_job.h"
#include "network/flow.h"
#include "network/net.h"

struct infer_comm_entry {
	int used;
	int lib;			/* 0 system, 1 custom */
	enum coll_op op;
	double bytes;
	uint32_t ngpus, first, last, replicas;
	uint32_t group;			/* coll_desc.group, 1 for one operation */
	double time_s;
};

/* A pending completion of an idle-mode collective. */
struct timer {
	void (*done)(void *token);
	void *token;
};

int infer_comm_init(struct infer_comm *c, const struct job_spec *j,
		    struct sim *sim, int idle, struct diag *d)
{
	const struct engine_spec *e = j->serving.engine;

	memset(c, 0, sizeof(*c));
	c->sim = sim;
	c->idle = idle;
	c->net = net_new(j->system, idle ? NULL : sim, d);
	if (!c->net)
		return d->oom ? -1 : -2;
	if (e && e->custom_allreduce && e->custom_allreduce_lib) {
		c->custom_sys = *j->system;
		c->custom_sys.collectives = e->custom_allreduce_lib;
		c->custom_sys.algorithm = -1;
		c->custom_sys.protocol = -1;
		c->custom = net_new(&c->custom_sys, idle ? NULL : sim, d);
		if (!c->custom) {
			infer_comm_release(c);
			return d->oom ? -1 : -2;
		}
		c->custom_max_B = e->custom_allreduce_max_B;
	}
	return 0;
}

void infer_comm_release(struct infer_comm *c)
{
	net_free(c->net);
	net_free(c->custom);
	mem_free(c->tab);
	c->net = c->custom = NULL;
	c->tab = NULL;
}

/* Whether the engine's kernels take this collective: a TP all-reduce
 * within one node, small enough. */
static int use_custom(const struct infer_comm *c, const struct coll_desc *d)
{
	uint32_t per_node = (uint32_t)c->custom_sys.gpus_per_node, i;

	if (!c->custom || d->op != COLL_ALLREDUCE || d->bytes > c->custom_max_B)
		return 0;
	for (i = 1; i < d->ngpus; i++)
		if (d->gpus[i] / per_node != d->gpus[0] / per_node)
			return 0;
	return 1;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	return (h ^ v) * 1099511628211ull;
}

static uint64_t hash_entry(const struct infer_comm_entry *e)
{
	uint64_t h = 1469598103934665603ull, b;

	memcpy(&b, &e->bytes, sizeof(b));
	h = mix(h, (uint64_t)e->lib);
	h = mix(h, (uint64_t)e->op);
	h = mix(h, b);
	h = mix(h, e->ngpus);
	h = mix(h, e->first);
	h = mix(h, e->last);
	h = mix(h, e->replicas);
	return e->group > 1 ? mix(h, e->group) : h;
}

/* The key of (lib, d) as an entry. */
static struct infer_comm_entry key_of(int lib, const struct coll_desc *d)
{
	struct infer_comm_entry e = {1, lib, d->op, d->bytes, d->ngpus,
		d->gpus[0], d->gpus[d->ngpus - 1], d->replicas,
		d->group > 1 ? d->group : 1, 0};

	return e;
}

static int same(const struct infer_comm_entry *a,
		const struct infer_comm_entry *b)
{
	return a->lib == b->lib && a->op == b->op && a->bytes == b->bytes &&
	       a->ngpus == b->ngpus && a->first == b->first &&
	       a->last == b->last && a->replicas == b->replicas &&
	       a->group == b->group;
}

/* The slot of key k: its entry, or the free slot it goes to; NULL when
 * the table must grow first. */
static struct infer_comm_entry *slot(struct infer_comm *c,
				     const struct infer_comm_entry *k)
{
	size_t i;

	if (c->cap == 0 || 2 * (c->used + 1) > c->cap)
		return NULL;
	for (i = hash_entry(k) & (c->cap - 1);; i = (i + 1) & (c->cap - 1))
		if (!c->tab[i].used || same(&c->tab[i], k))
			return &c->tab[i];
}

static int grow(struct infer_comm *c)
{
	struct infer_comm_entry *old = c->tab;
	size_t n = c->cap, i, k;

	c->cap = n ? 2 * n : 64;
	c->tab = mem_calloc(c->cap, sizeof(*c->tab));
	if (!c->tab) {
		c->tab = old;
		c->cap = n;
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (!old[i].used)
			continue;
		for (k = hash_entry(&old[i]) & (c->cap - 1); c->tab[k].used;
		     k = (k + 1) & (c->cap - 1))
			;
		c->tab[k] = old[i];
	}
	mem_free(old);
	return 0;
}

static void fail(struct infer_comm *c, const char *what)
{
	if (!c->failed)
		snprintf(c->why, sizeof(c->why), "%s", what);
	c->failed = 1;
}

double infer_comm_time(struct infer_comm *c, const struct coll_desc *desc)
{
	int lib = use_custom(c, desc);
	struct infer_comm_entry k = key_of(lib, desc);
	struct infer_comm_entry *e = slot(c, &k);
	struct net_coll_result r;
	struct diag quiet;

	if (!e) {
		if (grow(c) != 0) {
			fail(c, "out of memory");
			return -1;
		}
		e = slot(c, &k);
	}
	if (e->used) {
		c->hits++;
		return e->time_s;
	}
	diag_init(&quiet, NULL);
	if (net_collective_time(lib ? c->custom : c->net, desc, &r, &quiet)) {
		fail(c, quiet.oom ? "out of memory" : "a collective of the "
		     "step cannot run on this system");
		return -1;
	}
	c->misses++;
	*e = k;
	e->time_s = r.time_s;
	c->used++;
	return r.time_s;
}

static void fire(struct sim *sim, void *arg)
{
	struct timer t = *(struct timer *)arg;

	(void)sim;
	mem_free(arg);
	t.done(t.token);
}

static void start(void *ctx, const struct coll_desc *desc,
		  void (*done)(void *token), void *token)
{
	struct infer_comm *c = ctx;
	struct timer *t;
	units_ns_t at;
	double s;

	if (!c->idle) {
		net_comm_ops.start(use_custom(c, desc) ? c->custom : c->net,
				   desc, done, token);
		return;
	}
	s = infer_comm_time(c, desc);
	t = mem_alloc(sizeof(*t));
	if (!t) {
		fail(c, "out of memory");
		done(token);	/* the failure is reported after the run */
		return;
	}
	t->done = done;
	t->token = token;
	/* Past the engine's horizon (a rate far too low): the run fails
	 * with the reason, as a flow that long does on the fabric model. */
	if (units_ns_add(sim_now(c->sim), units_s_to_ns_sat(fmax(s, 0)),
			 &at) != 0) {
		mem_free(t);
		fail(c, FLOW_TOO_LONG);
		done(token);
		return;
	}
	if (!sim_at(c->sim, at, fire, t)) {
		mem_free(t);
		fail(c, "out of memory");
		done(token);
	}
}

const struct comm_ops infer_comm_ops = { .start = start };
