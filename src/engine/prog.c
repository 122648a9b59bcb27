/*
 * prog.c - building a step program: tasks, collectives and edges
 * (layout in exec_impl.h), and the edges' CSR form for a run.
 *
 * Building never reports errors: an allocation failure marks the program
 * failed, later calls become no-ops returning TASK_NONE / -1, and
 * exec_run() says "out of memory". Callers may therefore check once, at
 * the end. Misuse (a rank or stream out of range, an unknown task id) is a
 * programming error and aborts.
 */
#include "exec_impl.h"

#include <math.h>

#include "base/diag.h"
#include "base/mem.h"

#include <stdlib.h>
#include <string.h>

struct prog *prog_new(uint32_t nranks, uint32_t nstreams)
{
	struct prog *p;
	uint64_t nlanes = (uint64_t)nranks * nstreams;

	if (nranks == 0 || nstreams == 0 || nlanes >= UINT32_MAX)
		BUG("prog_new: need 1 <= nranks * nstreams < 2^32");
	p = mem_calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->nranks = nranks;
	p->nstreams = nstreams;
	arena_init(&p->arena);
	p->lane_head = mem_alloc(nlanes * sizeof(uint32_t));
	p->lane_tail = mem_alloc(nlanes * sizeof(uint32_t));
	p->stream_name = mem_calloc(nstreams, sizeof(*p->stream_name));
	if (!p->lane_head || !p->lane_tail || !p->stream_name) {
		prog_free(p);
		return NULL;
	}
	memset(p->lane_head, 0xff, nlanes * sizeof(uint32_t));
	memset(p->lane_tail, 0xff, nlanes * sizeof(uint32_t));
	return p;
}

void prog_drop_results(struct prog *p)
{
	if (!p->state && !p->coll_time && !p->critical)
		return;
	mem_free(p->state);
	mem_free(p->coll_time);
	mem_free(p->critical);
	p->state = NULL;
	p->coll_time = NULL;
	p->critical = NULL;
	p->ran = 0;
}

void prog_free(struct prog *p)
{
	if (!p)
		return;
	prog_drop_results(p);
	mem_free(p->task);
	mem_free(p->info);
	mem_free(p->lane_head);
	mem_free(p->lane_tail);
	mem_free(p->stream_name);
	mem_free(p->infos);
	mem_free(p->strs);
	mem_free(p->groups);
	prog_itab_release(&p->info_tab);
	prog_itab_release(&p->str_tab);
	prog_itab_release(&p->group_tab);
	mem_free(p->colls);
	mem_free(p->edge);
	mem_free(p->succ_off);
	mem_free(p->succ);
	arena_release(&p->arena);
	mem_free(p);
}

/* Grow *arr (elements of elem bytes) from cap to ncap; 0 or -1. */
static int regrow(void *arr, size_t elem, uint32_t ncap)
{
	void **a = arr;
	void *n = mem_realloc(*a, (size_t)ncap * elem);

	if (!n)
		return -1;
	*a = n;
	return 0;
}

/* Next capacity for an array holding cap elements, or 0 at the limit. */
static uint32_t next_cap(uint32_t cap, uint32_t first)
{
	if (cap == 0)
		return first;
	return cap >= UINT32_MAX / 2 ? 0 : cap * 2;
}

void prog_set_jitter(struct prog *p, const struct exec_jitter *j)
{
	if (!(j->op_sigma >= 0) || !(j->gpu_sigma >= 0) ||
	    !isfinite(j->op_sigma) || !isfinite(j->gpu_sigma))
		BUG("prog_set_jitter: sigmas must be finite and >= 0");
	p->jitter = *j;
}

void prog_name_stream(struct prog *p, uint32_t stream, const char *name)
{
	if (stream >= p->nstreams)
		BUG("prog_name_stream: stream out of range");
	p->stream_name[stream] = prog_intern(p, name);
}

/* ---- tasks ---- */

static int grow_tasks(struct prog *p, uint32_t need)
{
	uint32_t ncap = p->cap;

	while (ncap < need) {
		ncap = next_cap(ncap, 1024);
		if (ncap == 0)
			return -1;
	}
	if (ncap == p->cap)
		return 0;
	if (regrow(&p->task, sizeof(*p->task), ncap) ||
	    regrow(&p->info, sizeof(*p->info), ncap))
		return -1;
	p->cap = ncap;
	return 0;
}

/* Append one task with duration field dur to (rank, stream). The caller
 * has made room. */
static task_id append(struct prog *p, uint32_t rank, uint32_t stream,
		      int64_t dur, uint32_t info)
{
	uint32_t lane = rank * p->nstreams + stream;
	task_id t = p->ntasks++;

	p->task[t].lane = lane;
	p->info[t] = info;
	p->task[t].dur = dur;
	p->task[t].next = TASK_NONE;
	if (p->lane_tail[lane] == TASK_NONE)
		p->lane_head[lane] = t;
	else
		p->task[p->lane_tail[lane]].next = t;
	p->lane_tail[lane] = t;
	return t;
}

/* Room for n more tasks and the info index of *info; UINT32_MAX (and the
 * program failed) when out of memory. */
static uint32_t prepare(struct prog *p, uint32_t n,
			const struct task_info *info)
{
	uint32_t ii;

	if (!info || !info->name || (unsigned)info->cat >= TASK_CAT_COUNT)
		BUG("prog_task: task_info needs a name and a category");
	if (p->failed)
		return UINT32_MAX;
	prog_drop_results(p);
	if (n > UINT32_MAX - 1 - p->ntasks || grow_tasks(p, p->ntasks + n))
		goto oom;
	ii = prog_intern_info(p, info);
	if (ii == UINT32_MAX)
		goto oom;
	return ii;
oom:
	p->failed = 1;
	return UINT32_MAX;
}

task_id prog_task(struct prog *p, uint32_t rank, uint32_t stream,
		  double dur_s, const struct task_info *info)
{
	uint32_t ii;

	if (rank >= p->nranks || stream >= p->nstreams)
		BUG("prog_task: rank or stream out of range");
	ii = prepare(p, 1, info);
	if (ii == UINT32_MAX)
		return TASK_NONE;
	return append(p, rank, stream, units_s_to_ns(dur_s), ii);
}

/* Copy the descriptor and its arrays into the program; 0 or -1. */
static int copy_desc(struct prog *p, struct coll_desc *dst,
		     const struct coll_desc *c)
{
	size_t ngpus = c->ngpus;
	double *a2a;

	*dst = *c;
	if (ngpus == 0 || !c->gpus)
		BUG("prog_coll: a collective needs its GPU ids");
	dst->gpus = prog_intern_group(p, c->gpus, c->ngpus);
	if (!dst->gpus)
		return -1;
	if (c->path && !(p->path && memcmp(p->path, c->path,
					   sizeof(*c->path)) == 0)) {
		p->path = arena_alloc(&p->arena, sizeof(*p->path));
		if (!p->path)
			return -1;
		*p->path = *c->path;
	}
	if (c->path)
		dst->path = p->path;
	if (!c->a2a_B)
		return 0;
	if (ngpus > SIZE_MAX / sizeof(*a2a) / ngpus)
		return -1;
	a2a = arena_alloc(&p->arena, ngpus * ngpus * sizeof(*a2a));
	if (!a2a)
		return -1;
	memcpy(a2a, c->a2a_B, ngpus * ngpus * sizeof(*a2a));
	dst->a2a_B = a2a;
	return 0;
}

/* Room for one more collective record; 0 or -1. */
static int grow_colls(struct prog *p)
{
	uint32_t ncap;

	if (p->ncolls < p->capcolls)
		return 0;
	ncap = next_cap(p->capcolls, 64);
	if (ncap == 0 || regrow(&p->colls, sizeof(*p->colls), ncap))
		return -1;
	p->capcolls = ncap;
	return 0;
}

task_id prog_coll(struct prog *p, const uint32_t *ranks, uint32_t n,
		  uint32_t stream, const struct coll_desc *c,
		  const struct task_info *info)
{
	struct pcoll *pc;
	uint32_t ii, i;

	if (n == 0 || !c || (unsigned)c->op >= COLL_OP_COUNT ||
	    stream >= p->nstreams)
		BUG("prog_coll: bad collective");
	for (i = 0; i < n; i++)
		if (ranks[i] >= p->nranks)
			BUG("prog_coll: rank out of range");
	ii = prepare(p, n, info);
	if (ii == UINT32_MAX)
		return TASK_NONE;
	if (grow_colls(p) || copy_desc(p, &p->colls[p->ncolls].desc, c)) {
		p->failed = 1;
		return TASK_NONE;
	}
	pc = &p->colls[p->ncolls];
	pc->first = p->ntasks;
	pc->n = n;
	for (i = 0; i < n; i++)
		append(p, ranks[i], stream, -(int64_t)p->ncolls - 1, ii);
	p->ncolls++;
	return pc->first;
}

int prog_dep(struct prog *p, task_id before, task_id after)
{
	uint32_t ncap;

	if (p->failed)
		return -1;
	if (before >= p->ntasks || after >= p->ntasks)
		BUG("prog_dep: unknown task");
	prog_drop_results(p);
	if (p->nedges == p->capedges) {
		ncap = next_cap(p->capedges, 1024);
		if (ncap == 0 || regrow(&p->edge, 2 * sizeof(*p->edge), ncap)) {
			p->failed = 1;
			return -1;
		}
		p->capedges = ncap;
	}
	p->edge[2 * p->nedges] = before;
	p->edge[2 * p->nedges + 1] = after;
	p->nedges++;
	return 0;
}

uint32_t prog_ranks(const struct prog *p)
{
	return p->nranks;
}

uint32_t prog_tasks(const struct prog *p)
{
	return p->ntasks;
}

/* Out-degree of t in the existing CSR. */
static uint32_t csr_degree(const struct prog *p, task_id t)
{
	return t < p->ncsr ? p->succ_off[t + 1] - p->succ_off[t] : 0;
}

int prog_build_csr(struct prog *p)
{
	uint32_t n = p->ntasks, t, e, total;
	uint32_t *off, *succ;

	if (p->nedges == 0 && p->succ_off && p->ncsr == n)
		return 0;
	total = p->ncsr ? p->succ_off[p->ncsr] : 0;
	if (p->nedges > UINT32_MAX - total)
		return -1;
	total += p->nedges;
	off = mem_calloc((size_t)n + 1, sizeof(*off));
	succ = mem_alloc((size_t)total * sizeof(*succ));
	if (!off || !succ) {
		mem_free(off);
		mem_free(succ);
		return -1;
	}
	/* off[t + 1] counts t's edges, then becomes t's fill cursor. */
	for (e = 0; e < p->nedges; e++)
		off[p->edge[2 * e] + 1]++;
	for (t = 0; t < n; t++)
		off[t + 1] += off[t] + csr_degree(p, t);
	for (t = 0; t < p->ncsr; t++) {
		uint32_t k = csr_degree(p, t);

		memcpy(succ + off[t], p->succ + p->succ_off[t],
		       k * sizeof(*succ));
		off[t] += k;
	}
	for (e = 0; e < p->nedges; e++)
		succ[off[p->edge[2 * e]]++] = p->edge[2 * e + 1];
	/* Each cursor now sits at the next task's start: shift back. */
	memmove(off + 1, off, (size_t)n * sizeof(*off));
	off[0] = 0;
	mem_free(p->succ_off);
	mem_free(p->succ);
	mem_free(p->edge);
	p->succ_off = off;
	p->succ = succ;
	p->ncsr = n;
	p->edge = NULL;
	p->nedges = p->capedges = 0;
	return 0;
}
