/*
 * train_estimate.c - how many tasks and collective calls a step program
 * will hold, before it is built: the job's shape and costed blocks
 * (train.c), counted by train_count.c, which has the formula.
 */
#include "base/diag.h"
#include "train_impl.h"

#include <string.h>

int train_estimate(const struct job_spec *j, int full,
		   struct train_estimate *e, struct diag *d)
{
	struct train t;
	struct train_plan plan;
	int rc = -1, p2p;

	memset(&t, 0, sizeof(t));
	memset(e, 0, sizeof(*e));
	arena_init(&t.arena);
	train_layout(&t.lay, j, full);
	t.prog = prog_new(1, TRAIN_ST_COUNT);	/* for the blocks' names */
	if (!t.prog || train_shape(&t, j, &plan, d) != 0)
		goto fail;
	p2p = train_host_init(&t);
	if (train_cost_blocks(&t) != 0)
		goto fail;
	train_count(&t, p2p, e);
	rc = 0;
	goto out;
fail:
	if (!d->oom)
		diag_oom(d);
out:
	prog_free(t.prog);
	arena_release(&t.arena);
	return rc;
}
