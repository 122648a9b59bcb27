/*
 * store_plan.c - a plan's ranking in the store (`llmsim plan`): its run
 * row (the job planned, the plan's JSON) and one plan_candidates row per
 * layout, in one transaction; and the rows alone, for a sweep point that
 * stores its plan in its own transaction (store_sweep.c).
 */
#include "store.h"

#include <stddef.h>

#include "store_impl.h"

struct plan_args {
	const struct store_run *run;
	const struct store_plan_row *rows;
	uint32_t nrows;
};

static const char put_plan_sql[] =
	"INSERT INTO plan_candidates(run_id, rank, gpus, nodes, tp, pp, vpp, "
	"cp, ep, etp, dp, micro_batch_size, zero_stage, est_rank, "
	"sequence_parallel, tp_comm_overlap, simulated, on_front, fits, "
	"recompute, schedule, bound, step_time_s, tokens_per_s, mfu, "
	"tflops_per_gpu, peak_bytes_per_gpu, compute_s, exposed_comm_s, "
	"bubble_s, optimizer_s, other_s, est_step_time_s) "
	"VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, "
	"?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, "
	"?29, ?30, ?31, ?32, ?33)";

static int bind_row(sqlite3_stmt *s, int64_t id, const struct store_plan_row *p)
{
	const int64_t ints[] = {
		id, p->rank, p->gpus, p->nodes, p->tp, p->pp, p->vpp, p->cp,
		p->ep, p->etp, p->dp, p->micro_batch_size, p->zero_stage,
		p->est_rank, p->sequence_parallel, p->tp_comm_overlap,
		p->simulated, p->on_front, p->fits,
	};
	const char *text[] = { p->recompute, p->schedule, p->bound };
	const double v[] = {
		p->step_time_s, p->tokens_per_s, p->mfu, p->tflops_per_gpu,
		p->peak_bytes_per_gpu, p->compute_s, p->exposed_comm_s,
		p->bubble_s, p->optimizer_s, p->other_s, p->est_step_time_s,
	};
	int rc = SQLITE_OK, i;

	for (i = 0; i < 19 && rc == SQLITE_OK; i++)
		rc = sqlite3_bind_int64(s, i + 1, ints[i]);
	if (rc == SQLITE_OK)
		rc = store_bind_texts(s, 20, text, 3);
	if (rc == SQLITE_OK)
		rc = store_bind_doubles(s, 23, v, 11);
	return rc;
}

int store_put_plan_rows(struct store *st, int64_t id,
			const struct store_plan_row *rows, uint32_t nrows,
			struct diag *d)
{
	sqlite3_stmt *s = NULL;
	uint32_t i;
	int rc = SQLITE_DONE;

	if (sqlite3_prepare_v3(st->db, put_plan_sql, -1, 0, &s, NULL) !=
	    SQLITE_OK) {
		store_report(st, d, "preparing the plan statement");
		sqlite3_finalize(s);
		return -1;
	}
	for (i = 0; i < nrows && rc == SQLITE_DONE; i++)
		rc = store_insert(s, bind_row(s, id, &rows[i]));
	if (rc != SQLITE_DONE)
		store_report(st, d, "storing layout %u of %u of the plan", i,
			     nrows);
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? 0 : -1;
}

static int64_t put_plan(struct store *st, const void *ctx, struct diag *d)
{
	const struct plan_args *a = ctx;
	int64_t id = store_put_run(st, a->run, d);

	if (id < 0)
		return -1;
	return store_put_plan_rows(st, id, a->rows, a->nrows, d) == 0 ? id : -1;
}

int64_t store_put_plan(struct store *st, const struct store_run *run,
		       const struct store_plan_row *rows, uint32_t nrows,
		       struct diag *d)
{
	struct plan_args a = { run, rows, nrows };

	return store_tx(st, put_plan, &a, d);
}
