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
	p->stream_shift = NO_SHIFT;
	if ((nstreams & (nstreams - 1)) == 0)
		p->stream_shift = (uint32_t)__builtin_ctz(nstreams);
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
	if (!p->state && !p->coll_time && !p->critical && !p->far)
		return;
	mem_free(p->state);
	mem_free(p->coll_time);
	mem_free(p->sm_wait);
	mem_free(p->critical);
	mem_free(p->far);
	p->state = NULL;
	p->coll_time = NULL;
	p->sm_wait = NULL;
	p->critical = NULL;
	p->far = NULL;
	p->nfar = p->capfar = 0;
	p->ran = 0;
}

void prog_free(struct prog *p)
{
	if (!p)
		return;
	prog_drop_results(p);
	mem_free(p->task);
	mem_free(p->lane_head);
	mem_free(p->lane_tail);
	mem_free(p->stream_name);
	mem_free(p->kinds);
	mem_free(p->tags);
	mem_free(p->strs);
	mem_free(p->groups);
	mem_free(p->mats);
	prog_itab_release(&p->mat_tab);
	prog_itab_release(&p->kind_tab);
	prog_itab_release(&p->str_tab);
	prog_itab_release(&p->group_tab);
	mem_free(p->colls);
	mem_free(p->descs);
	prog_itab_release(&p->desc_tab);
	mem_free(p->edge);
	mem_free(p->spare);
	mem_free(p->succ1);
	mem_free(p->more_off);
	mem_free(p->more);
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
	if (regrow(&p->task, sizeof(*p->task), ncap))
		return -1;
	p->cap = ncap;
	return 0;
}

/* Grow *arr (elements of elem bytes, capacity *cap) to hold n more than
 * used, when it holds fewer; a failure leaves it as it was. */
static void reserve_cap(void *arr, size_t elem, uint32_t used, uint32_t *cap,
			double n)
{
	uint32_t want;

	if (!(n > 0) || n > (double)PROG_MAX_TASKS - used)
		return;
	want = used + (uint32_t)n;
	if (want > *cap && regrow(arr, elem, want) == 0)
		*cap = want;
}

void prog_reserve(struct prog *p, double tasks, double calls)
{
	if (p->failed)
		return;
	reserve_cap(&p->task, sizeof(*p->task), p->ntasks, &p->cap, tasks);
	reserve_cap(&p->edge, 2 * sizeof(*p->edge), p->nedges, &p->capedges,
		    2 * tasks);
	reserve_cap(&p->colls, sizeof(*p->colls), p->ncolls, &p->capcolls,
		    calls);
}

/* Append one task of the given kind field to (rank, stream). The caller
 * has made room. */
static task_id append(struct prog *p, uint32_t rank, uint32_t stream,
		      uint32_t kind)
{
	uint32_t lane = rank * p->nstreams + stream;
	task_id t = p->ntasks++;

	p->task[t].lane = lane;
	p->task[t].kind = kind;
	p->task[t].next = TASK_NONE;
	if (p->lane_tail[lane] == TASK_NONE)
		p->lane_head[lane] = t;
	else
		p->task[p->lane_tail[lane]].next = t;
	p->lane_tail[lane] = t;
	return t;
}

/* Start a new layer-and-microbatch run at the next task unless the last
 * run has the same pair (and phase); 0 or -1. */
static int tag(struct prog *p, const struct task_info *info)
{
	const struct ptag *last = p->ntags ? &p->tags[p->ntags - 1] : NULL;

	if (last && last->layer == info->layer &&
	    last->microbatch == info->microbatch &&
	    last->phase == (int32_t)info->phase)
		return 0;
	if (p->ntags == p->captags) {
		uint32_t ncap = next_cap(p->captags, 256);

		if (ncap == 0 || regrow(&p->tags, sizeof(*p->tags), ncap))
			return -1;
		p->captags = ncap;
	}
	p->tags[p->ntags++] = (struct ptag){ p->ntasks, info->layer,
					     info->microbatch,
					     (int32_t)info->phase };
	return 0;
}

/* Room for n more tasks, their layer-and-microbatch run and the index of
 * their kind (dur ns, *info's name and category); UINT32_MAX (and the
 * program failed) when out of memory. */
static uint32_t prepare(struct prog *p, uint32_t n, double dur_s,
			const struct task_info *info, float owned)
{
	uint32_t k;

	if (!info || !info->name || (unsigned)info->cat >= TASK_CAT_COUNT)
		BUG("prog_task: task_info needs a name and a category");
	if (p->failed)
		return UINT32_MAX;
	if (p->state || p->coll_time || p->critical || p->far)
		prog_drop_results(p);
	if (n > PROG_MAX_TASKS - p->ntasks || grow_tasks(p, p->ntasks + n) ||
	    tag(p, info))
		goto oom;
	k = prog_intern_kind_s(p, dur_s, info->name, info->cat, owned);
	if (k == UINT32_MAX || k >= KIND_COLL)
		goto oom;
	return k;
oom:
	p->failed = 1;
	return UINT32_MAX;
}

task_id prog_task(struct prog *p, uint32_t rank, uint32_t stream,
		  double dur_s, const struct task_info *info)
{
	return prog_task_owned(p, rank, stream, dur_s, info, 0);
}

task_id prog_task_owned(struct prog *p, uint32_t rank, uint32_t stream,
			double dur_s, const struct task_info *info,
			double owned)
{
	uint32_t k;

	if (rank >= p->nranks || stream >= p->nstreams)
		BUG("prog_task: rank or stream out of range");
	if (!(owned >= 0 && owned <= 1))
		BUG("prog_task_owned: owned share outside [0, 1]");
	k = prepare(p, 1, dur_s, info, (float)owned);
	if (k == UINT32_MAX)
		return TASK_NONE;
	return append(p, rank, stream, k);
}

/* The index of the program's copy of *c: its GPU list and matrix
 * interned, the descriptor interned; UINT32_MAX when out of memory. */
static uint32_t copy_desc(struct prog *p, const struct coll_desc *c)
{
	struct coll_desc d = *c;

	if (c->ngpus == 0 || !c->gpus)
		BUG("prog_coll: a collective needs its GPU ids");
	d.gpus = prog_intern_group(p, c->gpus, c->ngpus);
	if (!d.gpus)
		return UINT32_MAX;
	/* A non-library path: the program keeps the last one copied and
	 * collectives with an equal one share it (so equal descriptors stay
	 * equal for interning). */
	if (c->path && !(p->path && memcmp(p->path, c->path,
					   sizeof(*c->path)) == 0)) {
		p->path = arena_alloc(&p->arena, sizeof(*p->path));
		if (!p->path)
			return UINT32_MAX;
		*p->path = *c->path;
	}
	if (c->path)
		d.path = p->path;
	if (c->a2a_B && !(d.a2a_B = prog_intern_matrix(p, c->a2a_B, c->ngpus)))
		return UINT32_MAX;
	return prog_intern_desc(p, &d);
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
	uint32_t k, i, di;

	if (n == 0 || !c || (unsigned)c->op >= COLL_OP_COUNT ||
	    stream >= p->nstreams)
		BUG("prog_coll: bad collective");
	for (i = 0; i < n; i++)
		if (ranks[i] >= p->nranks)
			BUG("prog_coll: rank out of range");
	k = prepare(p, n, 0.0, info, 0);
	if (k == UINT32_MAX)
		return TASK_NONE;
	if (p->ncolls >= KIND_COLL - 1 || grow_colls(p) ||
	    (di = copy_desc(p, c)) == UINT32_MAX) {
		p->failed = 1;
		return TASK_NONE;
	}
	pc = &p->colls[p->ncolls];
	pc->desc = di;
	pc->first = p->ntasks;
	pc->n = n;
	pc->kind = k;
	for (i = 0; i < n; i++)
		append(p, ranks[i], stream, KIND_COLL | p->ncolls);
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
	if (p->state || p->coll_time || p->critical || p->far)
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

void prog_set_progress(struct prog *p,
		       void (*fn)(void *arg, uint32_t done, uint32_t total,
				  double now_s),
		       void *arg)
{
	p->progress = fn;
	p->progress_arg = arg;
}

uint32_t prog_colls(const struct prog *p)
{
	return p->ncolls;
}

task_id prog_coll_first(const struct prog *p, uint32_t k)
{
	if (k >= p->ncolls)
		BUG("exec: unknown collective");
	return p->colls[k].first;
}

uint32_t prog_coll_members(const struct prog *p, uint32_t k)
{
	if (k >= p->ncolls)
		BUG("exec: unknown collective");
	return p->colls[k].n;
}

uint32_t prog_ranks(const struct prog *p)
{
	return p->nranks;
}

uint32_t prog_tasks(const struct prog *p)
{
	return p->ntasks;
}

/* Successors of t in the existing lists: *n of them from *v (t's one
 * successor is stored in place of a list). */
static const uint32_t *old_succ(const struct prog *p, task_id t, uint32_t *n)
{
	uint32_t s = t < p->ncsr ? p->succ1[t] : TASK_NONE;

	if (s == TASK_NONE) {
		*n = 0;
		return NULL;
	}
	if (!(s & KIND_COLL)) {
		*n = 1;
		return &p->succ1[t];
	}
	s &= ~KIND_COLL;
	*n = p->more_off[s + 1] - p->more_off[s];
	return p->more + p->more_off[s];
}

/* Give task t (being filled) successor s: its one successor, or the next
 * entry of its slot. */
static void put_succ(uint32_t *succ1, uint32_t *off, uint32_t *more,
		     task_id t, task_id s)
{
	uint32_t x = succ1[t];

	if (x != TASK_NONE && (x & KIND_COLL))
		more[off[x & ~KIND_COLL]++] = s;
	else
		succ1[t] = s;
}

/*
 * Successor lists from the pending edges and the lists of an earlier
 * build (those first, then the new edges in the order prog_dep added
 * them). A task with one successor keeps it in succ1; a task with several
 * gets a slot j in the CSR more_off/more. Peak memory: the edge pairs
 * (8 bytes an edge) and a count per task, reused as succ1.
 */
int prog_build_csr(struct prog *p)
{
	uint32_t n = p->ntasks, t, e, j = 0, nmore = 0, total = 0, k, deg;
	uint32_t *cnt, *off = NULL, *more = NULL;
	const uint32_t *v;

	if (p->nedges == 0 && p->succ1 && p->ncsr == n)
		return 0;
	/* Degrees: cnt[t] = t's successors, old and new. */
	cnt = mem_calloc((size_t)n + 1, sizeof(*cnt));
	if (!cnt)
		return -1;
	for (t = 0; t < p->ncsr; t++)
		(void)old_succ(p, t, &cnt[t]);
	for (e = 0; e < p->nedges; e++)
		cnt[p->edge[2 * e]]++;
	for (t = 0; t < n; t++)
		if (cnt[t] > 1) {
			nmore++;
			if (cnt[t] > UINT32_MAX - total)
				goto oom;
			total += cnt[t];
		}
	off = mem_alloc(((size_t)nmore + 1) * sizeof(*off));
	more = mem_alloc(((size_t)total + 1) * sizeof(*more));
	if (!off || !more)
		goto oom;
	/* Slots: off[j] is slot j's start, then its fill cursor. The
	 * degree-1 tasks' successor is filled in below; cnt becomes succ1. */
	off[0] = 0;
	for (t = 0; t < n; t++) {
		deg = cnt[t];
		if (deg == 0) {
			cnt[t] = TASK_NONE;
		} else if (deg == 1) {
			cnt[t] = 0;	/* filled below */
		} else {
			off[j + 1] = off[j] + deg;
			cnt[t] = KIND_COLL | j++;
		}
	}
	for (t = 0; t < p->ncsr; t++) {
		v = old_succ(p, t, &deg);
		for (k = 0; k < deg; k++)
			put_succ(cnt, off, more, t, v[k]);
	}
	for (e = 0; e < p->nedges; e++)
		put_succ(cnt, off, more, p->edge[2 * e], p->edge[2 * e + 1]);
	/* Each cursor now sits at the next slot's start: shift back. */
	for (j = nmore; j > 0; j--)
		off[j] = off[j - 1];
	off[0] = 0;
	mem_free(p->succ1);
	mem_free(p->more_off);
	mem_free(p->more);
	/* The edges' block becomes the spare (exec_run_alloc puts the task
	 * states there: 16 bytes a task, as 2 reserved edges a task take). */
	mem_free(p->spare);
	p->spare = p->edge;
	p->spare_cap = (size_t)p->capedges * 2 * sizeof(*p->edge);
	p->spare_used = (size_t)p->nedges * 2 * sizeof(*p->edge);
	p->succ1 = cnt;
	p->more_off = off;
	p->more = more;
	p->nmore = nmore;
	p->ncsr = n;
	p->edge = NULL;
	p->nedges = p->capedges = 0;
	return 0;
oom:
	mem_free(cnt);
	mem_free(off);
	mem_free(more);
	return -1;
}

void *prog_take_spare(struct prog *p, size_t bytes)
{
	void *s = p->spare;

	p->spare = NULL;
	if (s && bytes > 0 && p->spare_cap >= bytes &&
	    p->spare_used / 2 <= bytes) {
		memset(s, 0, bytes);
		return s;
	}
	mem_free(s);
	return NULL;
}

/* prog_task_tag() by binary search over the runs. */
const struct ptag *prog_task_tag_near(const struct prog *p, task_id t,
				      uint32_t *hint)
{
	uint32_t h = *hint, steps;

	/* From the run of a task a little before t (a lane's tasks come in
	 * id order, its next one mostly in the same run): a few steps on,
	 * else the binary search. */
	if (h < p->ntags && p->tags[h].first <= t && t < p->ntasks) {
		for (steps = 0; steps < 16; steps++) {
			if (h + 1 == p->ntags || p->tags[h + 1].first > t) {
				*hint = h;
				return &p->tags[h];
			}
			h++;
		}
	}
	h = (uint32_t)(prog_task_tag(p, t) - p->tags);
	*hint = h;
	return &p->tags[h];
}

const struct ptag *prog_task_tag(const struct prog *p, task_id t)
{
	uint32_t lo = 0, hi = p->ntags;

	if (t >= p->ntasks || p->ntags == 0)
		BUG("exec: unknown task");
	/* The last run that starts at or before t. */
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (p->tags[mid].first <= t)
			lo = mid;
		else
			hi = mid;
	}
	return &p->tags[lo];
}
