/*
 * exec_setup.c - setting up and tearing down one run of a step program
 * (exec_run.c drives it): the run's state (the cause candidates sized to
 * the largest collective, the work queue, lane and collective records,
 * per-rank compute load, the variability scratch) and the program's
 * result arrays (task states, collective times, the critical bitmap) are
 * allocated here and freed again, and at the start of a run every task's
 * pending count is set to its dependencies plus its stream predecessor,
 * every lane is idle and every collective waits, with its GPU group key
 * when the program has variability (exec_jitter.c).
 */
#include "exec_run.h"

#include "base/mem.h"

#include <stddef.h>

/* Members of the largest collective. */
static uint32_t max_members(const struct prog *p)
{
	uint32_t k, n = 0;

	for (k = 0; k < p->ncolls; k++)
		if (p->colls[k].n > n)
			n = p->colls[k].n;
	return n;
}

/* Allocate the run's state and the program's result arrays; 0 or -1. */
int exec_run_alloc(struct run *r, struct prog *p)
{
	size_t n = p->ntasks, nlanes = (size_t)p->nranks * p->nstreams;

	r->cand = mem_alloc(max_members(p) * sizeof(*r->cand));
	r->qcap = 1024;
	r->queue = mem_alloc(r->qcap * sizeof(*r->queue));
	r->lanes = mem_alloc(nlanes * sizeof(*r->lanes));
	r->colls_mem = mem_alloc(sizeof(*r->colls_mem) +
				 (size_t)p->ncolls * sizeof(*r->colls));
	if (r->colls_mem) {
		r->colls_mem->run = r;
		r->colls = r->colls_mem->c;
	}
	r->load = mem_calloc(p->nranks, sizeof(*r->load));
	p->state = prog_take_spare(p, n * sizeof(*p->state));	/* aux 0 */
	if (!p->state)
		p->state = mem_calloc(n, sizeof(*p->state));
	p->coll_time = mem_calloc(p->ncolls, sizeof(*p->coll_time));
	p->critical = mem_calloc(n / 64 + 1, sizeof(*p->critical));
	r->jit_ranks = mem_alloc((max_members(p) + 1) * sizeof(*r->jit_ranks));
	r->compute_end = mem_calloc(p->nranks, sizeof(*r->compute_end));
	/* A group key per call, only with variability (8 bytes a call). */
	r->group_key = p->jitter.op_sigma > 0 || p->jitter.gpu_sigma > 0 ?
		       mem_alloc((p->ncolls + 1) * sizeof(*r->group_key)) :
		       mem_alloc(sizeof(*r->group_key));
	r->coll_late = p->jitter.op_sigma > 0 || p->jitter.gpu_sigma > 0 ?
		       mem_alloc((p->ncolls + 1) * sizeof(*r->coll_late)) :
		       mem_alloc(sizeof(*r->coll_late));
	/* The backend's memo per distinct descriptor (the program's are
	 * interned and stay as they are while it runs). */
	r->desc_memo = r->ops && r->ops->start_memo ?
		       mem_calloc(p->desc_tab.n + 1, sizeof(*r->desc_memo)) :
		       NULL;
	if ((r->ops && r->ops->start_memo && !r->desc_memo) ||
	    !r->cand || !r->queue || !r->lanes || !r->colls || !r->load ||
	    !p->state ||
	    !p->coll_time || !p->critical || !r->jit_ranks ||
	    !r->compute_end || !r->group_key || !r->coll_late)
		return -1;
	if (exec_crate_alloc(r) != 0)
		return -1;
	return exec_jit_init(&r->jit, &p->jitter, p->nranks);
}

void exec_run_free(struct run *r)
{
	uint32_t i;

	if (r->load)
		for (i = 0; i < r->p->nranks; i++)
			mem_free(r->load[i].wait);
	mem_free(r->cand);
	mem_free(r->queue);
	mem_free(r->lanes);
	mem_free(r->colls_mem);
	mem_free(r->load);
	mem_free(r->jit_ranks);
	mem_free(r->compute_end);
	mem_free(r->group_key);
	mem_free(r->coll_late);
	mem_free(r->desc_memo);
	exec_crate_free(r);
	exec_jit_release(&r->jit);
}

/* Counters and records at the start of a run. The task states come
 * zeroed from exec_run_alloc (in the last build's edge array, cleared,
 * when it is large enough: its pages are already the process's), so one
 * pass sets each task's stamp and cause and counts it as pending in its
 * stream successor and its dependents. */
void exec_run_init(struct run *r)
{
	struct prog *p = r->p;
	uint32_t t, e, k, nlanes = p->nranks * p->nstreams;
	struct jit_key_memo memo[JIT_KEY_MEMO] = { { NULL, 0 } };
	struct pstate *st = p->state;

	for (t = 0; t < p->ntasks; t++) {
		uint32_t s1 = p->succ1[t], nx = p->task[t].next;

		st[t].stamp = -1;
		st[t].cause = TASK_NONE;
		if (nx != TASK_NONE)
			st[nx].aux++;
		if (s1 == TASK_NONE)
			continue;
		if (!(s1 & KIND_COLL)) {
			st[s1].aux++;
			continue;
		}
		s1 &= ~KIND_COLL;
		for (e = p->more_off[s1]; e < p->more_off[s1 + 1]; e++)
			st[p->more[e]].aux++;
	}
	for (t = 0; t < nlanes; t++) {
		r->lanes[t].run = r;
		r->lanes[t].cur = TASK_NONE;
		r->lanes[t].tag_hint = 0;
		r->lanes[t].pers = 0;
	}
	for (k = 0; k < p->ncolls; k++) {
		r->colls[k].k = k;
		r->colls[k].arrived = 0;
		r->colls[k].state = 0;
		if (r->jit.on) {
			r->group_key[k] = exec_jit_key_of(coll_desc_of(p, k), memo);
			r->coll_late[k] = -1;
		}
	}
}
