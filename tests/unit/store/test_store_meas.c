/*
 * test_store_meas.c - measurements and validation rows in the results
 * store (store_meas.c): stored as given, read back by
 * store_each_measure(), the views' units, NaN as NULL where a column
 * does not apply. (Suite `store`, set up in test_store.c.)
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "store_fixture.h"

static const struct store_meas_info INFO = {
	"mpi", "cpu-host", "[\"nodes=1\"]", "vm", "AMD EPYC (2 CPUs)",
	"Open MPI", "Open MPI v4.1.4", "", "MPI 3.1", 2, 1, 2, 2,
	"mpirun -n 2 llmsim-backend-mpi --op allreduce", 0, NULL,
};

/* An all-reduce of 1 MiB in 100 us on 2 ranks: algbw = 2^20 / 1e-4 =
 * 10.49 GB/s, busbw = algbw x 2(2-1)/2 = the same; then a copy of 1 MiB
 * in 50 us: 2 x 2^20 / 5e-5 = 41.9 GB/s of traffic. */
static const struct store_meas_row POINTS[2] = {
	{ "allreduce", "float", 1048576, 262144, 2, -1, 0, 0, 0, 20,
	  100e-6, 95e-6, 130e-6, 1048576 / 100e-6, 1048576 / 100e-6, NAN,
	  "ok" },
	{ "copy", "float", 1048576, 262144, 1, -1, 0, 0, 0, 10,
	  50e-6, 49e-6, 60e-6, NAN, NAN, 2 * 1048576 / 50e-6, "ok" },
};

struct seen {
	int runs;
	int64_t id;
	char system[32], first_op[32];
	uint32_t n;
	double busbw, copy_rate, copy_busbw;
};

static int collect(void *ctx, const struct store_meas_run *r)
{
	struct seen *s = ctx;

	s->runs++;
	s->id = r->id;
	snprintf(s->system, sizeof(s->system), "%s", r->info.system);
	snprintf(s->first_op, sizeof(s->first_op), "%s", r->rows[0].op);
	s->n = r->nrows;
	s->busbw = r->rows[0].busbw_Bps;
	s->copy_rate = r->rows[1].rate;
	s->copy_busbw = r->rows[1].busbw_Bps;
	return 0;
}

Test(store, measurements_round_trip)
{
	struct store *st = sf_open_ok(sf_db_path);
	struct store_run run = RUN;
	struct seen s;
	int64_t id;

	memset(&s, 0, sizeof(s));
	run.command = "measure";
	run.kind = "system";
	id = store_put_measure(st, &run, &INFO, POINTS, 2, NULL);
	cr_assert_eq(id, 1);
	cr_assert_eq(store_each_measure(st, 0, collect, &s, NULL), 1);
	cr_assert_eq(s.runs, 1);
	cr_assert_eq(s.n, 2);
	cr_assert_str_eq(s.system, "cpu-host");
	cr_assert_str_eq(s.first_op, "allreduce");
	sf_assert_near(s.busbw, 1048576 / 100e-6, "busbw back");
	sf_assert_near(s.copy_rate, 2 * 1048576 / 50e-6, "copy rate back");
	/* Not applicable to a copy: stored as NULL, read back as NaN. */
	cr_assert(isnan(s.copy_busbw));
	store_close(st);
	/* The view in its units: 100 us, 10.49 GB/s (2^20 B / 100 us). */
	sf_assert_near((double)sf_sql_int(sf_db_path, "SELECT round(time_us) "
		       "FROM v_measurements WHERE idx = 0"), 100, "time_us");
	cr_assert_eq(sf_sql_int(sf_db_path, "SELECT round(busbw_GBps * 100) "
			     "FROM v_measurements WHERE idx = 0"), 1049);
	cr_assert_eq(sf_sql_int(sf_db_path, "SELECT count(*) FROM "
			     "v_measurements WHERE busbw_GBps IS NULL"), 1);
	sf_assert_no_leaks();
}

struct flags {
	int n, incomplete[2];
	char error[2][96];
};

static int collect_flags(void *ctx, const struct store_meas_run *r)
{
	struct flags *f = ctx;

	if (f->n < 2) {
		f->incomplete[f->n] = r->info.incomplete;
		snprintf(f->error[f->n], sizeof(f->error[0]), "%s",
			 r->info.error);
	}
	f->n++;
	return 0;
}

/* A run whose stream stopped at the backend's error line (the H200's
 * first all-reduce: 85 elements wrong at 1 MiB) is stored incomplete
 * with the error; a run that ended is complete with none (NULL). */
Test(store, measure_run_incomplete_and_error)
{
	struct store *st = sf_open_ok(sf_db_path);
	struct store_run run = RUN;
	struct store_meas_info bad = INFO;
	struct flags f;

	memset(&f, 0, sizeof(f));
	run.command = "measure";
	run.kind = "system";
	bad.incomplete = 1;
	bad.error = "status 1 (failed): allreduce of 1048576 B: 85 elements "
		    "wrong";
	cr_assert_eq(store_put_measure(st, &run, &INFO, POINTS, 2, NULL), 1);
	cr_assert_eq(store_put_measure(st, &run, &bad, POINTS, 1, NULL), 2);
	cr_assert_eq(store_each_measure(st, 0, collect_flags, &f, NULL), 2);
	cr_assert_eq(f.incomplete[0], 0);
	cr_assert_str_eq(f.error[0], "");
	cr_assert_eq(f.incomplete[1], 1);
	cr_assert_str_eq(f.error[1], bad.error);
	store_close(st);
	/* The view: run 1's 2 points complete, run 2's 1 point not. */
	cr_assert_eq(sf_sql_int(sf_db_path, "SELECT count(*) FROM "
			     "v_measurements WHERE complete = 1 AND "
			     "backend_error IS NULL"), 2);
	cr_assert_eq(sf_sql_int(sf_db_path, "SELECT count(*) FROM "
			     "v_measurements WHERE complete = 0 AND "
			     "backend_error LIKE '%85 elements wrong'"), 1);
	sf_assert_no_leaks();
}

/* A run stored before schema 9 has complete NULL: not known to be cut,
 * read back as complete. */
Test(store, measure_run_before_schema_9_reads_complete)
{
	struct store *st = sf_open_ok(sf_db_path);
	struct store_run run = RUN;
	struct flags f;

	memset(&f, 0, sizeof(f));
	run.command = "measure";
	run.kind = "system";
	cr_assert_eq(store_put_measure(st, &run, &INFO, POINTS, 2, NULL), 1);
	store_close(st);
	{
		sqlite3 *db = sf_raw_open(sf_db_path);

		sf_raw_exec(db, "UPDATE measure_runs SET complete = NULL");
		sqlite3_close(db);
	}
	st = sf_open_ok(sf_db_path);
	cr_assert_eq(store_each_measure(st, 0, collect_flags, &f, NULL), 1);
	cr_assert_eq(f.incomplete[0], 0);
	store_close(st);
	sf_assert_no_leaks();
}

/* The same points from the same device for the same system are found
 * (the oldest run); other points, another host or another system's sets
 * are not. */
Test(store, find_measure_same_points_same_place)
{
	struct store *st = sf_open_ok(sf_db_path);
	struct store_run run = RUN, other = RUN;
	struct store_meas_info host = INFO, sets = INFO;

	run.command = other.command = "measure";
	run.kind = other.kind = "system";
	run.result_json = "[{\"op\":\"allreduce\"}]";
	other.result_json = "[{\"op\":\"copy\"}]";
	host.host = "other-host";
	sets.sets_json = "[\"nodes=2\"]";
	cr_assert_eq(store_find_measure(st, &run, &INFO, NULL), 0);
	cr_assert_eq(store_put_measure(st, &run, &INFO, POINTS, 2, NULL), 1);
	cr_assert_eq(store_put_measure(st, &run, &INFO, POINTS, 2, NULL), 2);
	cr_assert_eq(store_find_measure(st, &run, &INFO, NULL), 1);
	cr_assert_eq(store_find_measure(st, &other, &INFO, NULL), 0);
	cr_assert_eq(store_find_measure(st, &run, &host, NULL), 0);
	cr_assert_eq(store_find_measure(st, &run, &sets, NULL), 0);
	store_close(st);
	sf_assert_no_leaks();
}

Test(store, each_measure_refuses_a_run_that_is_not_one)
{
	struct store *st = sf_open_ok(sf_db_path);
	struct sf_capture c;
	struct seen s;

	memset(&s, 0, sizeof(s));
	cr_assert_eq(sf_put_ok(st), 1);		/* a `run`, not a measure */
	sf_cap_init(&c);
	cr_assert_eq(store_each_measure(st, 1, collect, &s, &c.d), -1);
	sf_assert_says(&c, "not a measure run");
	sf_cap_release(&c);
	/* No measure run at all: 0 visited, not an error. */
	cr_assert_eq(store_each_measure(st, 0, collect, &s, NULL), 0);
	store_close(st);
	sf_assert_no_leaks();
}

Test(store, validation_rows_and_view)
{
	/* Predicted 110 against 100 measured: error +10 %, inside [105,
	 * 115]? No: the measured 100 is outside, so inside = 0. */
	const struct store_valid_row rows[2] = {
		{ "measured", "measure run 1", "allreduce 1048576 B", "GB/s",
		  100, 110, 0.1, 1, 0, 105, 115 },
		{ "training", "cases.tsv", "T-X", "s", 2, 1.8, -0.1, 1, 1,
		  NAN, NAN },
	};
	struct store *st = sf_open_ok(sf_db_path);
	struct store_run run = RUN;

	run.command = "validate";
	run.kind = "validate";
	cr_assert_eq(store_put_validation(st, &run, rows, 2, NULL), 1);
	store_close(st);
	cr_assert_eq(sf_sql_int(sf_db_path, "SELECT inside FROM v_validation "
			     "WHERE idx = 0"), 0);
	cr_assert_eq(sf_sql_int(sf_db_path, "SELECT count(*) FROM v_validation "
			     "WHERE idx = 1 AND inside IS NULL AND in_sample = 1"),
		     1);
	/* abs_error of -0.1 is 0.1. */
	cr_assert_eq(sf_sql_int(sf_db_path, "SELECT round(abs_error * 10) FROM "
			     "v_validation WHERE idx = 1"), 1);
	sf_assert_no_leaks();
}

/* The first three points of a run: size, count, algbw, busbw. */
struct rows3 {
	double r[3][4];
};

static int take3(void *ctx, const struct store_meas_run *run)
{
	struct rows3 *g = ctx;
	uint32_t i;

	for (i = 0; i < 3 && i < run->nrows; i++) {
		g->r[i][0] = run->rows[i].size_B;
		g->r[i][1] = run->rows[i].count;
		g->r[i][2] = run->rows[i].algbw_Bps;
		g->r[i][3] = run->rows[i].busbw_Bps;
	}
	return 0;
}

/* Rows stored before schema 10 are protocol 1's (src/store/
 * store_schema.c, migration 10): on 2 ranks, an all-gather of 8 KiB
 * float carried count 2048 (the buffer's elements) and reads 1024 (per
 * rank, nccl-tests' paramcount); an all-to-all-v of "8 KiB" sent 4 KiB
 * from each rank in all (the old pattern), in 100 us: it reads size
 * 4096 B, count 4096 / 4 / 2 = 512, algbw 4096 B / 100 us = 40.96 MB/s
 * and busbw half that ((2 - 1) / 2); the all-reduce's 262144 is kept. */
Test(store, schema_10_puts_old_counts_per_rank)
{
	static const struct store_meas_row old[3] = {
		{ "allgather", "float", 8192, 2048, 2, -1, 0, 0, 0, 20,
		  100e-6, 95e-6, 130e-6, 8192 / 100e-6, 4096 / 100e-6, NAN,
		  "ok" },
		{ "alltoallv", "float", 8192, 2048, 2, -1, 0, 0, 0, 20,
		  100e-6, 95e-6, 130e-6, 8192 / 100e-6, 4096 / 100e-6, NAN,
		  "ok" },
		POINTS[0],
	};
	struct store *st = sf_open_ok(sf_db_path);
	struct store_run run = RUN;
	char text[256];

	run.command = "measure";
	run.kind = "system";
	cr_assert_eq(store_put_measure(st, &run, &INFO, old, 3, NULL), 1);
	store_close(st);
	{
		sqlite3 *db = sf_raw_open(sf_db_path);

		sf_raw_exec(db, "UPDATE meta SET value = '9' WHERE key = "
			    "'schema_version'");
		sqlite3_close(db);
	}
	/* A reader leaves the file at 9 and reads the rows as migrated. */
	{
		struct sf_capture c;
		struct rows3 got;

		sf_cap_init(&c);
		memset(&got, 0, sizeof(got));
		st = store_open_readonly(sf_db_path, &c.d);
		cr_assert_not_null(st);
		cr_assert_eq(store_each_measure(st, 0, take3, &got, &c.d), 1);
		store_close(st);
		sf_cap_release(&c);
		cr_assert_eq(sf_sql_int(sf_db_path, "SELECT count FROM "
					"measurements WHERE idx = 0"), 2048);
		cr_assert_float_eq(got.r[0][1], 1024, 1e-9);
		cr_assert_float_eq(got.r[1][0], 4096, 1e-9);
		cr_assert_float_eq(got.r[1][1], 512, 1e-9);
		cr_assert_float_eq(got.r[1][2], 4096 / 100e-6, 1e-3);
		cr_assert_float_eq(got.r[1][3], 2048 / 100e-6, 1e-3);
		cr_assert_float_eq(got.r[2][1], 262144, 1e-9);
	}
	store_close(sf_open_ok(sf_db_path));	/* migrates 9 -> 10 */
	sf_sql_text(sf_db_path, "SELECT group_concat(op || ' ' || size_B || "
		    "' ' || count || ' ' || algbw_Bps || ' ' || busbw_Bps, "
		    "'; ') FROM (SELECT * FROM measurements ORDER BY idx)",
		    text, sizeof(text));
	cr_assert_str_eq(text, "allgather 8192.0 1024.0 81920000.0 40960000.0; "
			 "alltoallv 4096.0 512.0 40960000.0 20480000.0; "
			 "allreduce 1048576.0 262144.0 10485760000.0 "
			 "10485760000.0");
	sf_assert_no_leaks();
}
