/*
 * exec_task.c - what a run left for each task: its times (the start
 * kept as a stretch past its duration, or in the run's far list), its
 * description, rank, collective and whether it lies on the critical
 * path. Read by reports and traces after exec_run(); calls nothing of
 * the executor, so those readers do not depend on it.
 */
#include "exec_impl.h"

#include "base/diag.h"

static const char *const cat_names[TASK_CAT_COUNT] = {
	"compute", "comm", "optimizer", "other",
};

units_ns_t exec_far_start(const struct prog *p, task_id t)
{
	uint32_t lo = 0, hi = p->nfar;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (p->far[mid].t < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == p->nfar || p->far[lo].t != t)
		BUG("exec: a far-stretched task without its start");
	return p->far[lo].start;
}


static void check_ran(const struct prog *p, task_id t)
{
	if (!p->ran)
		BUG("exec: results asked for before a successful exec_run");
	if (t >= p->ntasks)
		BUG("exec: unknown task");
}

double exec_task_start_s(const struct prog *p, task_id t)
{
	check_ran(p, t);
	return units_ns_to_s(task_start_ns(p, t));
}

double exec_task_end_s(const struct prog *p, task_id t)
{
	check_ran(p, t);
	return units_ns_to_s(task_end_ns(p, t));
}

double exec_task_dur_s(const struct prog *p, task_id t)
{
	check_ran(p, t);
	return units_ns_to_s(task_end_ns(p, t)) -
	       units_ns_to_s(task_start_ns(p, t));
}

double exec_task_sm_wait_s(const struct prog *p, task_id t)
{
	uint32_t k;

	check_ran(p, t);
	k = task_coll(p, t);
	return k == UINT32_MAX || !p->sm_wait ? 0 :
	       units_ns_to_s(p->sm_wait[k]);
}

void exec_task_info(const struct prog *p, task_id t, struct task_info *out)
{
	const struct pkind *k;
	const struct ptag *g;

	if (t >= p->ntasks)
		BUG("exec: unknown task");
	k = task_kind(p, t);
	g = prog_task_tag(p, t);
	*out = (struct task_info){ k->name, (enum task_cat)k->cat, g->layer,
				   g->microbatch, (enum task_phase)g->phase };
}

const char *exec_task_name(const struct prog *p, task_id t,
			   enum task_cat *cat)
{
	const struct pkind *k;

	if (t >= p->ntasks)
		BUG("exec: unknown task");
	k = task_kind(p, t);
	*cat = (enum task_cat)k->cat;
	return k->name;
}

uint32_t exec_task_rank(const struct prog *p, task_id t)
{
	if (t >= p->ntasks)
		BUG("exec: unknown task");
	return task_rank(p, t);
}

uint32_t exec_task_coll_id(const struct prog *p, task_id t)
{
	if (t >= p->ntasks)
		BUG("exec: unknown task");
	return task_coll(p, t);
}

const struct coll_desc *exec_task_coll(const struct prog *p, task_id t)
{
	uint32_t k;

	if (t >= p->ntasks)
		BUG("exec: unknown task");
	k = task_coll(p, t);
	return k == UINT32_MAX ? NULL : coll_desc_of(p, k);
}

uint32_t exec_task_stream(const struct prog *p, task_id t)
{
	if (t >= p->ntasks)
		BUG("exec: unknown task");
	return p->task[t].lane % p->nstreams;
}

const char *exec_stream_name(const struct prog *p, uint32_t stream)
{
	return stream < p->nstreams ? p->stream_name[stream] : NULL;
}

int exec_task_critical(const struct prog *p, task_id t)
{
	check_ran(p, t);
	return (int)(p->critical[t / 64] >> (t % 64) & 1);
}

const char *exec_cat_name(enum task_cat cat)
{
	return cat_names[cat];
}
