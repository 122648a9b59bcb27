/*
 * exec_stall.c - explaining a run that did not finish (exec_run.c calls
 * it when the engine ran dry with tasks left over) and naming tasks in
 * the executor's messages. A task finished while running is marked in
 * the critical bitmap, so a task still waits when it is unmarked with a
 * pending count. The first explanation that holds goes to p->why: a
 * collective the comm backend started and never completed, a rendezvous
 * some members reached and another never does, else a dependency cycle
 * (the first waiting task named). Reads the run, changes nothing in it.
 */
#include "exec_run.h"

#include "base/diag.h"

#include <stdio.h>

/* Name of a task for messages: "'name' (layer L, microbatch M) on rank R,
 * stream S". */
void exec_describe_task(const struct prog *p, task_id t, char *buf,
			size_t len)
{
	struct task_info in;
	uint32_t stream = lane_stream(p, p->task[t].lane);
	const char *sname = p->stream_name[stream];
	char sbuf[16];

	exec_task_info(p, t, &in);
	if (!sname) {
		snprintf(sbuf, sizeof(sbuf), "%u", stream);
		sname = sbuf;
	}
	snprintf(buf, len, "'%s' (%s, layer %d, microbatch %d) on rank %u, "
		 "stream %s", in.name, exec_cat_name(in.cat), in.layer,
		 in.microbatch, task_rank(p, t), sname);
}

/* Whether task t still waits for a predecessor (after a run that did
 * not finish): not finished, with a pending count. */
static int waiting(const struct prog *p, task_id t)
{
	return !(p->critical[t / 64] >> (t % 64) & 1) && p->state[t].aux > 0;
}

/* A collective some members reached and another never did. */
static int stuck_rendezvous(struct run *r)
{
	struct prog *p = r->p;
	char what[200];
	uint32_t k, i;

	for (k = 0; k < p->ncolls; k++) {
		const struct pcoll *pc = &p->colls[k];

		if (r->colls[k].state != 0 || r->colls[k].arrived == 0)
			continue;
		for (i = 0; i < pc->n; i++)
			if (waiting(p, pc->first + i))
				break;
		exec_describe_task(p, pc->first + i, what, sizeof(what));
		snprintf(p->why, sizeof(p->why), "deadlock: %u of %u members "
			 "reached collective %s; that member never does",
			 r->colls[k].arrived, pc->n, what);
		return 1;
	}
	return 0;
}

/* Why tasks are left over after the engine ran dry. */
void exec_run_diagnose(struct run *r)
{
	struct prog *p = r->p;
	char what[200];
	uint32_t k, t;

	for (k = 0; k < p->ncolls; k++) {
		if (r->colls[k].state != 1)
			continue;
		exec_describe_task(p, p->colls[k].first, what, sizeof(what));
		snprintf(p->why, sizeof(p->why), "collective %s started but "
			 "never completed: the comm backend did not call done",
			 what);
		return;
	}
	if (stuck_rendezvous(r))
		return;
	for (t = 0; t < p->ntasks && !waiting(p, t); t++)
		;
	if (t == p->ntasks)
		BUG("exec: tasks left over but none waiting");
	exec_describe_task(p, t, what, sizeof(what));
	snprintf(p->why, sizeof(p->why), "deadlock: %u of %u tasks never ran "
		 "(a dependency cycle); the first waits for %u more: task %s",
		 p->ntasks - r->nfinished, p->ntasks, p->state[t].aux,
		 what);
}
