/*
 * test_store_plan.c - a plan's ranking in the store: stored with its run
 * in one transaction, read back through v_plans as a dashboard reads it,
 * refused whole when a number is not a number.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "store_fixture.h"

TestSuite(store_plan, .init = sf_setup, .fini = sf_teardown);

/* Two layouts of a plan: the second slower by 0.5 s. */
static void rows(struct store_plan_row r[2])
{
	memset(r, 0, 2 * sizeof(*r));
	r[0] = (struct store_plan_row){
		.rank = 1, .gpus = 64, .nodes = 8, .tp = 4, .pp = 2, .vpp = 10,
		.cp = 1, .ep = 1, .etp = 4, .dp = 8, .micro_batch_size = 1,
		.recompute = "none", .zero_stage = 2, .sequence_parallel = 1,
		.schedule = "interleaved", .tp_comm_overlap = 1, .simulated = 1,
		.on_front = 0, .step_time_s = 8.5, .tokens_per_s = 123456,
		.mfu = 0.47, .tflops_per_gpu = 465, .peak_bytes_per_gpu = 74e9,
		.fits = 1, .compute_s = 7.5, .exposed_comm_s = 0.4,
		.bubble_s = 0.5, .optimizer_s = 0.1, .other_s = 0,
		.bound = "compute", .est_step_time_s = 8.4, .est_rank = 3,
	};
	r[1] = r[0];
	r[1].rank = 2;
	r[1].vpp = 20;
	r[1].step_time_s = 9.0;
	r[1].est_rank = 1;
}

Test(store_plan, stored_and_read_back_through_the_view)
{
	struct store *st = sf_open_ok(sf_db_path);
	struct sf_capture c;
	struct store_plan_row r[2];
	sqlite3 *db;
	sqlite3_stmt *q;
	int64_t id;

	rows(r);
	sf_cap_init(&c);
	id = store_put_plan(st, &RUN, r, 2, &c.d);
	cr_assert_gt(id, 0, "%s", sf_cap_text(&c));
	store_close(st);
	cr_assert_eq(sf_count_rows(sf_db_path, "plan_candidates"), 2);
	db = sf_raw_open(sf_db_path);
	q = sf_query_row(db, "SELECT rank, tp, vpp, schedule, step_time_s, "
			 "est_rank FROM v_plans ORDER BY rank DESC");
	cr_assert_eq(sqlite3_column_int(q, 0), 2);
	cr_assert_eq(sqlite3_column_int(q, 1), 4);
	cr_assert_eq(sqlite3_column_int(q, 2), 20);
	cr_assert_str_eq((const char *)sqlite3_column_text(q, 3), "interleaved");
	sf_assert_near(sqlite3_column_double(q, 4), 9.0, "step_time_s");
	cr_assert_eq(sqlite3_column_int(q, 5), 1);
	sqlite3_finalize(q);
	sqlite3_close(db);
	sf_cap_release(&c);
	sf_assert_no_leaks();
}

Test(store_plan, a_nan_refuses_the_whole_plan)
{
	struct store *st = sf_open_ok(sf_db_path);
	struct sf_capture c;
	struct store_plan_row r[2];

	rows(r);
	r[1].mfu = NAN;	/* binds as NULL: the NOT NULL refuses it */
	sf_cap_init(&c);
	cr_assert_eq(store_put_plan(st, &RUN, r, 2, &c.d), -1);
	sf_assert_says(&c, "storing layout 2 of 2 of the plan");
	store_close(st);
	/* rolled back: neither the run nor the first row stayed */
	cr_assert_eq(sf_count_rows(sf_db_path, "runs"), 0);
	cr_assert_eq(sf_count_rows(sf_db_path, "plan_candidates"), 0);
	sf_cap_release(&c);
	sf_assert_no_leaks();
}
