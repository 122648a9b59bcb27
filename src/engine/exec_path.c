/*
 * exec_path.c - the critical path of an executed program, and the step
 * time split along it.
 *
 * Causes. A task became ready at time r (its start; for a collective
 * member, its arrival at the rendezvous). Its cause is a predecessor that
 * finished exactly at r: a dependency or its stream predecessor; for a
 * collective member, the cause of a member that arrived last (the
 * collective started when that member arrived). Ties prefer a cause on
 * the task's own rank, then the lower task id. A task ready at 0 with no
 * such predecessor has no cause. The run records causes as tasks finish
 * (exec_run.c); this file walks them.
 *
 * Path. Walking causes back from the task that finished last (ties: the
 * lower id) gives the critical path; its rank is the final rank. Each
 * task on the path contributes its segment [start, end], and each gap
 * [end(cause), start] a segment of its own (the executor leaves none, but
 * they are accounted). The segments tile [0, step].
 *
 * Split. Time in a segment during which the final rank was computing (any
 * of its compute tasks, on the path or not, overlaps counted once) is
 * compute; the rest of the segment goes by what the path was doing:
 *
 *   compute task on another rank   bubble: the final rank waited for
 *                                  another pipeline stage
 *   communication task             exposed communication: the part no
 *                                  computation hid
 *   optimizer task                 optimizer
 *   other task, gap                other
 *
 * So compute is all the final rank's compute time, and the rest of the
 * step is its waiting, named after what it waited for. The five parts sum
 * to the step time exactly (integer ns; asserted).
 *
 * Worked example (times in us; two ranks; S is a send/recv collective
 * from rank 0 to rank 1 with members S0 and S1; F1 depends on S1; rank 1
 * also runs G and H, which nothing waits for):
 *
 *   rank 0  compute  F0 [0,3)
 *           comm               S0 [3,5)
 *   rank 1  compute  G [0,1)   H [3,4)  F1 [5,9)
 *           comm               S1 [3,5)
 *
 * F1 finished last: final rank 1, step 9. F1 became ready at 5 when S1
 * finished (H finished at 4: not a cause). S1 arrived at 0 but S0 at 3,
 * so the collective started at 3 and S1's cause is S0's cause, F0 (ended
 * at 3). F0 was ready at 0: no cause. Path F0 -> S1 -> F1; rank 1
 * computed during [0,1), [3,4) and [5,9):
 *
 *   F0 [0,3) compute on rank 0      compute 1 (G), bubble 2
 *   S1 [3,5) communication          compute 1 (H), exposed comm 1
 *   F1 [5,9) compute on rank 1      compute 4
 *                                   sum 6 + 2 + 1 = 9 = step
 */
#include "exec_impl.h"

#include "base/diag.h"
#include "base/mem.h"

#include <stdlib.h>

/* A time interval [start, end) in ns. */
struct span {
	units_ns_t start;
	units_ns_t end;
};

struct path {
	const struct prog *p;
	uint32_t final_rank;
	struct span *busy;	/* the final rank's compute, merged, sorted */
	uint32_t nbusy;
	uint32_t cursor;	/* busy[] index for the backward walk */
};

/* The task that finished last; ties go to the lower id. */
static task_id last_task(const struct prog *p)
{
	task_id t, best = TASK_NONE;
	units_ns_t end = -1;

	for (t = 0; t < p->ntasks; t++) {
		if (task_end_ns(p, t) > end) {
			end = task_end_ns(p, t);
			best = t;
		}
	}
	return best;
}

/* What a segment of task t is when the final rank is not computing. */
static enum exec_part part_of(const struct path *pa, task_id t)
{
	const struct prog *p = pa->p;

	switch (task_cat(p, t)) {
	case TASK_COMPUTE:
		return task_rank(p, t) == pa->final_rank ? EXEC_COMPUTE
							 : EXEC_BUBBLE;
	case TASK_COMM:
		return EXEC_EXPOSED_COMM;
	case TASK_OPTIMIZER:
		return EXEC_OPTIMIZER;
	default:
		return EXEC_OTHER;
	}
}

static int span_cmp(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return (x->end > y->end) - (x->end < y->end);
}

/* Append [start, end) to pa->busy (cap entries allocated), or extend the
 * last span when from_lane says it is of the same lane and [start, end)
 * starts within it (a lane's tasks come in time order); 0 or -1. */
static int push_span(struct path *pa, uint32_t *cap, int same_lane,
		     units_ns_t start, units_ns_t end)
{
	struct span *top = pa->nbusy ? &pa->busy[pa->nbusy - 1] : NULL;

	if (same_lane && top && start <= top->end) {
		if (end > top->end)
			top->end = end;
		return 0;
	}
	if (pa->nbusy == *cap) {
		uint32_t ncap = *cap ? 2 * *cap : 64;
		struct span *nb = mem_realloc(pa->busy, ncap * sizeof(*nb));

		if (!nb)
			return -1;
		pa->busy = nb;
		*cap = ncap;
	}
	pa->busy[pa->nbusy++] = (struct span){ start, end };
	return 0;
}

/* Collect the final rank's compute tasks as sorted disjoint spans; 0 or
 * -1 when out of memory. Each lane's tasks run in order, so touching
 * ones merge as they come: memory goes with the rank's idle gaps, not
 * its tasks (a one-rank program of 10^8 tasks has a few spans). */
static int collect_busy(struct path *pa)
{
	const struct prog *p = pa->p;
	uint32_t lane = pa->final_rank * p->nstreams, s, n, i, cap = 0;
	task_id t;

	pa->nbusy = 0;
	for (s = 0; s < p->nstreams; s++) {
		uint32_t first = pa->nbusy;

		for (t = p->lane_head[lane + s]; t != TASK_NONE;
		     t = p->task[t].next)
			if (task_cat(p, t) == TASK_COMPUTE &&
			    task_end_ns(p, t) > task_start_ns(p, t) &&
			    push_span(pa, &cap, pa->nbusy > first,
				      task_start_ns(p, t),
				      task_end_ns(p, t)) != 0)
				return -1;
	}
	n = pa->nbusy;
	if (n > 1)
		qsort(pa->busy, n, sizeof(*pa->busy), span_cmp);
	/* Merge overlapping or touching spans in place. */
	for (i = 0, pa->nbusy = 0; i < n; i++) {
		struct span *top = pa->nbusy ? &pa->busy[pa->nbusy - 1] : NULL;

		if (top && pa->busy[i].start <= top->end) {
			if (pa->busy[i].end > top->end)
				top->end = pa->busy[i].end;
		} else {
			pa->busy[pa->nbusy++] = pa->busy[i];
		}
	}
	pa->cursor = pa->nbusy;
	return 0;
}

/* Compute time of the final rank within [s, e). Segments come in
 * decreasing time order, so the cursor only moves back. */
static units_ns_t busy_within(struct path *pa, units_ns_t s, units_ns_t e)
{
	units_ns_t sum = 0;
	uint32_t i;

	while (pa->cursor > 0 && pa->busy[pa->cursor - 1].start >= e)
		pa->cursor--;
	for (i = pa->cursor; i > 0 && pa->busy[i - 1].end > s; i--) {
		units_ns_t lo = pa->busy[i - 1].start, hi = pa->busy[i - 1].end;

		sum += (hi < e ? hi : e) - (lo > s ? lo : s);
	}
	return sum;
}

/* Add segment [s, e) of kind k to the parts; the time it adds to k
 * (the segment less the final rank's compute in it). */
static units_ns_t account(struct path *pa, int64_t part[], units_ns_t s,
			  units_ns_t e, enum exec_part k)
{
	units_ns_t busy = busy_within(pa, s, e);

	part[EXEC_COMPUTE] += busy;
	part[k] += e - s - busy;
	return e - s - busy;
}

/* Walk back from last, mark the path and sum its parts (ns), and the
 * exposed communication and the other tasks' part by stream. */
static void walk(struct prog *p, struct path *pa, task_id last,
		 int64_t part[], int64_t by_stream[], int64_t other_by[])
{
	task_id t = last;

	while (t != TASK_NONE) {
		task_id c = p->state[t].cause;
		units_ns_t start = task_start_ns(p, t);
		units_ns_t from = c == TASK_NONE ? 0 : task_end_ns(p, c);
		enum exec_part k = part_of(pa, t);
		units_ns_t added;
		uint32_t s = p->task[t].lane % p->nstreams;

		if (from > start)
			BUG("exec: critical path goes back in time");
		p->critical[t / 64] |= (uint64_t)1 << (t % 64);
		added = account(pa, part, start, task_end_ns(p, t), k);
		if (k == EXEC_EXPOSED_COMM)
			by_stream[s < EXEC_MAX_STREAMS ? s : EXEC_MAX_STREAMS - 1]
				+= added;
		else if (k == EXEC_OTHER)
			other_by[s < EXEC_MAX_STREAMS ? s : EXEC_MAX_STREAMS - 1]
				+= added;
		account(pa, part, from, start, EXEC_OTHER);
		t = c;
	}
}

int exec_path(struct prog *p, struct exec_result *out)
{
	struct path pa = { .p = p };
	int64_t part[EXEC_PART_COUNT] = { 0 }, sum = 0;
	int64_t by_stream[EXEC_MAX_STREAMS] = { 0 };
	int64_t other_by[EXEC_MAX_STREAMS] = { 0 };
	task_id last = last_task(p);
	int i, rc = -1;

	if (last == TASK_NONE)
		return 0;
	pa.final_rank = task_rank(p, last);
	if (collect_busy(&pa) != 0)
		goto out;
	walk(p, &pa, last, part, by_stream, other_by);
	for (i = 0; i < EXEC_PART_COUNT; i++) {
		sum += part[i];
		out->part_s[i] = units_ns_to_s(part[i]);
	}
	for (i = 0; i < EXEC_MAX_STREAMS; i++) {
		out->exposed_by_stream_s[i] = units_ns_to_s(by_stream[i]);
		out->other_by_stream_s[i] = units_ns_to_s(other_by[i]);
	}
	if (sum != task_end_ns(p, last))
		BUG("exec: critical path parts do not sum to the step time");
	out->step_s = units_ns_to_s(task_end_ns(p, last));
	out->final_rank = pa.final_rank;
	rc = 0;
out:
	mem_free(pa.busy);
	return rc;
}

/* The final rank's compute time within [s, e) by binary search (no
 * cursor: calls come in any order). */
static units_ns_t busy_in(const struct path *pa, units_ns_t s, units_ns_t e)
{
	uint32_t lo = 0, hi = pa->nbusy;
	units_ns_t sum = 0;

	while (lo < hi) {	/* first span ending after s */
		uint32_t mid = lo + (hi - lo) / 2;

		if (pa->busy[mid].end <= s)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < pa->nbusy && pa->busy[lo].start < e; lo++) {
		units_ns_t a = pa->busy[lo].start, b = pa->busy[lo].end;

		sum += (b < e ? b : e) - (a > s ? a : s);
	}
	return sum;
}

int exec_coll_overlap(const struct prog *p, double *overlap)
{
	struct path pa = { .p = p };
	uint32_t r, s, k;
	int rc = 0;

	for (k = 0; k < p->ncolls; k++)
		overlap[k] = 0;
	for (r = 0; r < p->nranks && rc == 0; r++) {
		pa.final_rank = r;
		if (collect_busy(&pa) != 0) {
			rc = -1;
			break;
		}
		for (s = 0; s < p->nstreams; s++) {
			task_id t;

			for (t = p->lane_head[r * p->nstreams + s];
			     t != TASK_NONE; t = p->task[t].next) {
				if (task_cat(p, t) != TASK_COMM)
					continue;
				k = task_coll(p, t);
				if (k >= p->ncolls || p->colls[k].first != t)
					continue;
				overlap[k] = units_ns_to_s(busy_in(&pa,
					task_start_ns(p, t), task_end_ns(p, t)));
			}
		}
	}
	mem_free(pa.busy);
	return rc;
}
