/*
 * test_measure_stream.c - the backends' JSON-lines read as a stream of
 * runs (src/cli/measure_proto.c), on copies of the first real CUDA
 * backend output (an H200, 2026-12-04; tests/measure/, from
 * results/reference/device/). Before, a file was one run: the 8
 * backend runs of the collective file were stored as one (its summary
 * averaged all-reduce with broadcast), the copy stream cut at the 4 GiB
 * point was stored as whole, and an error line was dropped.
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "base/mem.h"
#include "cli/cli.h"
#include "cli/measure.h"
#include "../config/config_testutil.h"

static void quiet(void)
{
	cr_redirect_stderr();
}

TestSuite(measure_stream, .init = quiet);

/* Read tests/measure/NAME into s; the count of bad lines. */
static int read_fixture(const char *name, struct measure_stream *s)
{
	char path[256], *line = NULL;
	size_t cap = 0;
	struct diag d;
	FILE *f;
	int bad = 0, opened;

	snprintf(path, sizeof(path), "tests/measure/%s", name);
	f = fopen(path, "r");
	cr_assert_not_null(f, "%s", path);
	diag_init(&d, stderr);
	cr_assert_eq(measure_stream_init(s, &d), 0);
	while (getline(&line, &cap, f) > 0)
		bad += measure_stream_line(s, line, path, &opened, &d) ==
		       MEASURE_BAD;
	free(line);
	fclose(f);
	return bad;
}

/* 114 lines: 7 collectives (all-reduce ... reduce) of 15 lines each (a
 * hello, 13 sizes 8 B - 256 MiB by x4, an end) = lines 1-105; line 106
 * the error of a send/recv that refused one GPU before its hello; a
 * copy run (hello 107, 6 points, end 114). 9 runs, 7 x 13 + 6 = 97
 * points. */
Test(measure_stream, collective_file_is_nine_runs)
{
	static const char *const ops[] = {
		"allreduce", "allgather", "reducescatter", "alltoall",
		"alltoallv", "broadcast", "reduce",
	};
	struct measure_stream s;
	char err[256];
	size_t i;

	cr_assert_eq(read_fixture("h200-backend-cuda-coll-1gpu-2026-12-04"
				  ".jsonl", &s), 0);
	cr_assert_eq(s.n, 9);
	cr_assert_eq(s.lines, 114);
	cr_assert_eq(measure_stream_points(&s), 97);
	for (i = 0; i < 7; i++) {
		const struct measure_log *m = s.runs[i];

		cr_assert(m->have_hello && m->ended, "run %zu", i);
		cr_assert_eq(m->npts, 13);
		cr_assert_eq(m->hello_line, 15 * i + 1);
		cr_assert_eq(m->end_line, 15 * i + 15);
		cr_assert_eq(m->end_points, 13);
		cr_assert_str_eq(m->pts[0].op, ops[i]);
		cr_assert_str_eq(m->pts[12].op, ops[i]);
		cr_assert_not(measure_run_incomplete(m));
	}
	/* The run that failed before its hello: nothing measured, its
	 * error kept. */
	cr_assert_not(s.runs[7]->have_hello);
	cr_assert_eq(s.runs[7]->npts, 0);
	cr_assert_eq(s.runs[7]->err_line, 106);
	measure_run_error(s.runs[7], err, sizeof(err));
	cr_assert_str_eq(err, "status 2 (bad_input): sendrecv needs at least "
			 "2 GPUs");
	cr_assert_eq(s.runs[8]->hello_line, 107);
	cr_assert_eq(s.runs[8]->npts, 6);
	cr_assert_str_eq(s.runs[8]->pts[0].op, "copy");
	cr_assert_eq(s.runs[8]->end_line, 114);
	measure_stream_release(&s);
}

/* 13 lines: a hello and 12 copies (1 MiB - 2 GiB by x2); the 4 GiB
 * point ran past the call's limit, so no end line: incomplete. */
Test(measure_stream, copy_file_cut_is_incomplete)
{
	struct measure_stream s;
	char err[64];

	cr_assert_eq(read_fixture("h200-backend-cuda-copy-2026-12-04.jsonl",
				  &s), 0);
	cr_assert_eq(s.n, 1);
	cr_assert_eq(s.runs[0]->npts, 12);
	cr_assert_not(s.runs[0]->ended);
	cr_assert(measure_run_incomplete(s.runs[0]));
	measure_run_error(s.runs[0], err, sizeof(err));
	cr_assert_str_eq(err, "");
	/* the last point: 2 GiB in 1047.57 us */
	cr_assert_float_eq(s.runs[0]->pts[11].size_B, 2147483648.0, 0.5);
	cr_assert_float_eq(s.runs[0]->pts[11].time_s, 1047.57e-6, 1e-12);
	measure_stream_release(&s);
}

/* 25 lines, 6 runs from two device calls: squares 1k-16k (5 points),
 * four single expert/layer shapes (1 each), squares 1k-8k (4): 13. */
Test(measure_stream, gemm_file_is_six_runs)
{
	static const uint32_t npts[] = { 5, 1, 1, 1, 1, 4 };
	struct measure_stream s;
	size_t i;

	cr_assert_eq(read_fixture("h200-backend-cuda-gemm-2026-12-04.jsonl",
				  &s), 0);
	cr_assert_eq(s.n, 6);
	cr_assert_eq(measure_stream_points(&s), 13);
	for (i = 0; i < 6; i++) {
		cr_assert_eq(s.runs[i]->npts, npts[i], "run %zu", i);
		cr_assert(s.runs[i]->ended);
		cr_assert_str_eq(s.runs[i]->info.library, "cuBLAS");
	}
	/* run 2: one expert's fc1 forward, 2048 x 768 x 2048 */
	cr_assert_eq(s.runs[1]->pts[0].m, 2048);
	cr_assert_eq(s.runs[1]->pts[0].n, 768);
	measure_stream_release(&s);
}

/* The unfixed all-reduce: 18 points (8 B - 1 MiB by x2), the last
 * checked wrong, then the backend's error line instead of an end. */
Test(measure_stream, error_line_ends_a_run_incomplete)
{
	struct measure_stream s;
	char err[256];

	cr_assert_eq(read_fixture("h200-backend-cuda-allreduce-unfixed-"
				  "2026-12-04.jsonl", &s), 0);
	cr_assert_eq(s.n, 1);
	cr_assert_eq(s.runs[0]->npts, 18);
	cr_assert_str_eq(s.runs[0]->pts[17].check, "wrong");
	cr_assert_eq(s.runs[0]->err_line, 20);
	cr_assert(measure_run_incomplete(s.runs[0]));
	measure_run_error(s.runs[0], err, sizeof(err));
	cr_assert_str_eq(err, "status 1 (failed): allreduce of 1048576 B: 85 "
			 "elements wrong");
	measure_stream_release(&s);
}

/* After an end (or an error), a point or an end opens a run of its own
 * (which has no hello: refused by the import); so does a second hello
 * with no end between (a cut run followed by the next). */
Test(measure_stream, lines_after_an_end_open_the_next_run)
{
	static const char *const lines[] = {
		"{\"type\":\"hello\",\"protocol\":1,\"backend\":\"mpi\","
		"\"ranks\":2,\"nodes\":1,\"devices_per_node\":2}",
		"{\"type\":\"end\",\"points\":0}",
		"{\"type\":\"end\",\"points\":0}",
		"{\"type\":\"hello\",\"protocol\":1,\"backend\":\"mpi\","
		"\"ranks\":2,\"nodes\":1,\"devices_per_node\":2}",
		"{\"type\":\"hello\",\"protocol\":1,\"backend\":\"mpi\","
		"\"ranks\":2,\"nodes\":1,\"devices_per_node\":2}",
	};
	struct measure_stream s;
	struct diag d;
	size_t i;
	int opened[5];

	diag_init(&d, stderr);
	cr_assert_eq(measure_stream_init(&s, &d), 0);
	for (i = 0; i < 5; i++)
		cr_assert_eq(measure_stream_line(&s, lines[i], "t", &opened[i],
						 &d), MEASURE_TAKEN);
	cr_assert_eq(s.n, 4);
	cr_assert_eq(opened[0] + opened[1], 0);
	cr_assert_eq(opened[2] + opened[3] + opened[4], 3);
	cr_assert(s.runs[1]->ended && !s.runs[1]->have_hello);
	cr_assert_eq(s.runs[1]->end_line, 3);
	cr_assert_eq(s.runs[2]->hello_line, 4);
	cr_assert(measure_run_incomplete(s.runs[2]));
	cr_assert_eq(s.runs[3]->first_line, 5);
	measure_stream_release(&s);
}

/* A point's numbers as the backend writes them (bk_main.c print_point):
 * whole counts in range, a GEMM's sizes and its rate, a copy's or a
 * collective's bandwidths. Before, m -5 or 1e30 was stored and `validate
 * --kind measured` stopped on a BUG in the GPU model (a crash); iters
 * 1e13 wrapped to a negative int (the store said "CHECK constraint
 * failed: iters >= 1"); iters 1.5, ranks 2.5 and m 2.5 were cut to whole
 * numbers without a word; a GEMM without tflops was stored with a NaN
 * rate and shown as "1 rank: nothing to move". */
Test(measure_stream, point_numbers_out_of_range_are_bad)
{
	static const char *const hello = "{\"type\":\"hello\",\"protocol\":1,"
		"\"backend\":\"cuda\",\"ranks\":1,\"nodes\":1,"
		"\"devices_per_node\":1}";
#define GEMM(x, y) "{\"type\":\"point\",\"op\":\"gemm\",\"dtype\":" \
	"\"bfloat16\",\"bytes\":6,\"count\":1," x "\"iters\":20," \
	"\"time_us\":19.5,\"time_min_us\":17.8,\"time_max_us\":35.8," y \
	"\"check\":\"ok\",\"wrong\":0}"
#define SIZES "\"ranks\":1,\"m\":1024,\"n\":1024,\"k\":1024,"
#define ITERS(it) "{\"type\":\"point\",\"op\":\"gemm\",\"dtype\":" \
	"\"bfloat16\",\"bytes\":6,\"count\":1," SIZES "\"iters\":" it "," \
	"\"time_us\":19.5,\"time_min_us\":17.8,\"time_max_us\":35.8," \
	"\"tflops\":109.9,\"check\":\"ok\",\"wrong\":0}"
#define COPY(x) "{\"type\":\"point\",\"op\":\"copy\",\"dtype\":\"float\"," \
	"\"bytes\":1048576,\"count\":262144,\"ranks\":1,\"iters\":20," \
	"\"time_us\":6.4,\"time_min_us\":5.5,\"time_max_us\":8.2," x \
	"\"check\":\"ok\",\"wrong\":0}"
#define BCAST(x, y) "{\"type\":\"point\",\"op\":\"broadcast\",\"dtype\":" \
	"\"float\",\"bytes\":8,\"count\":2,\"ranks\":1," x "\"iters\":20," \
	"\"time_us\":5.9,\"time_min_us\":5.2,\"time_max_us\":8.7," y \
	"\"check\":\"ok\",\"wrong\":0}"
#define BW "\"algbw_GBps\":0.0014,\"busbw_GBps\":0.0014,"
	static const char *const good[] = {
		GEMM(SIZES, "\"tflops\":109.9,"),
		COPY("\"GBps\":329.3,"),
		BCAST("\"root\":0,", BW),
	};
	static const char *const bad[] = {
		GEMM("\"ranks\":1,\"m\":-5,\"n\":1024,\"k\":1024,",
		     "\"tflops\":109.9,"),
		GEMM("\"ranks\":1,\"m\":1e30,\"n\":1024,\"k\":1024,",
		     "\"tflops\":109.9,"),
		GEMM("\"ranks\":1,\"m\":2.5,\"n\":1024,\"k\":1024,",
		     "\"tflops\":109.9,"),
		GEMM("\"ranks\":1,\"m\":0,\"n\":1024,\"k\":1024,",
		     "\"tflops\":109.9,"),
		GEMM("\"ranks\":1,\"n\":1024,\"k\":1024,", "\"tflops\":109.9,"),
		GEMM(SIZES, ""),
		GEMM(SIZES, "\"tflops\":-1,"),
		GEMM("\"ranks\":2.5,\"m\":1024,\"n\":1024,\"k\":1024,",
		     "\"tflops\":109.9,"),
		GEMM("\"ranks\":1e20,\"m\":1024,\"n\":1024,\"k\":1024,",
		     "\"tflops\":109.9,"),
		COPY(""),
		BCAST("\"root\":1,", BW),	/* of 1 rank */
		BCAST("\"root\":-7,", BW),
		BCAST("\"root\":0,", "\"algbw_GBps\":0.0014,"),
		ITERS("1.5"), ITERS("1e13"), ITERS("0"),
	};
	struct measure_stream s;
	struct diag d;
	size_t i;
	int opened;

	diag_init(&d, stderr);
	cr_assert_eq(measure_stream_init(&s, &d), 0);
	cr_assert_eq(measure_stream_line(&s, hello, "t", &opened, &d),
		     MEASURE_TAKEN);
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		cr_assert_eq(measure_stream_line(&s, good[i], "t", &opened, &d),
			     MEASURE_POINT, "good %zu", i);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(measure_stream_line(&s, bad[i], "t", &opened, &d),
			     MEASURE_BAD, "bad %zu: %s", i, bad[i]);
	cr_assert_eq(s.runs[0]->npts, 3);
	measure_stream_release(&s);
	/* a hello of 1e12 ranks (past an int) or 2.5 nodes */
	cr_assert_eq(measure_stream_init(&s, &d), 0);
	cr_assert_eq(measure_stream_line(&s, "{\"type\":\"hello\","
		"\"protocol\":1,\"backend\":\"mpi\",\"ranks\":1e12,"
		"\"nodes\":1,\"devices_per_node\":1}", "t", &opened, &d),
		MEASURE_BAD);
	cr_assert_eq(measure_stream_line(&s, "{\"type\":\"hello\","
		"\"protocol\":1,\"backend\":\"mpi\",\"ranks\":2,"
		"\"nodes\":2.5,\"devices_per_node\":1}", "t", &opened, &d),
		MEASURE_BAD);
	measure_stream_release(&s);
#undef GEMM
#undef SIZES
#undef ITERS
#undef COPY
#undef BCAST
#undef BW
}

/* Protocol 1's points in protocol 2's terms (measure_proto.c
 * from_protocol1): on 4 ranks an all-gather of 4096 B float had count
 * 1024 (the buffer's elements), now 1024 / 4 = 256 a rank; an
 * all-to-all-v of "4096 B" sent 1024 B from each rank in all: size 1024,
 * count 1024 / 4 / 4 = 64, algbw 0.4 / 4 = 0.1 GB/s, busbw 0.3 / 4 =
 * 0.075 (and the line --json prints with them); an all-reduce keeps its
 * 1024. The same points under protocol 2 are stored as written; a
 * protocol 3 hello is another program's. */
Test(measure_stream, protocol_1_counts_are_put_per_rank)
{
#define HELLO(v) "{\"type\":\"hello\",\"protocol\":" v ",\"backend\":" \
	"\"mpi\",\"ranks\":4,\"nodes\":1,\"devices_per_node\":4}"
#define PT(op) "{\"type\":\"point\",\"op\":\"" op "\",\"dtype\":" \
	"\"float\",\"bytes\":4096,\"count\":1024,\"ranks\":4,\"iters\":5," \
	"\"time_us\":10,\"time_min_us\":9,\"time_max_us\":11," \
	"\"algbw_GBps\":0.4,\"busbw_GBps\":0.3,\"check\":\"ok\"," \
	"\"wrong\":0}"
	static const char *const pts[3] = {
		PT("allgather"), PT("alltoallv"), PT("allreduce"),
	};
	static const double v1[3][4] = {
		{ 4096, 256, 0.4e9, 0.3e9 },
		{ 1024, 64, 0.1e9, 0.075e9 },
		{ 4096, 1024, 0.4e9, 0.3e9 },
	};
	struct measure_stream s;
	struct diag d;
	int v, i, opened;

	diag_init(&d, stderr);
	for (v = 1; v <= 2; v++) {
		cr_assert_eq(measure_stream_init(&s, &d), 0);
		cr_assert_eq(measure_stream_line(&s, v == 1 ? HELLO("1") :
			     HELLO("2"), "t", &opened, &d), MEASURE_TAKEN);
		for (i = 0; i < 3; i++) {
			const struct store_meas_row *r;
			const cJSON *o;

			cr_assert_eq(measure_stream_line(&s, pts[i], "t",
				     &opened, &d), MEASURE_POINT);
			r = &s.runs[0]->pts[i];	/* grown as points come */
			o = cJSON_GetArrayItem(s.runs[0]->points, i);
			cr_assert_float_eq(r->size_B, v == 1 ? v1[i][0] : 4096,
					   1e-9);
			cr_assert_float_eq(r->count, v == 1 ? v1[i][1] : 1024,
					   1e-9);
			cr_assert_float_eq(r->algbw_Bps, v == 1 ? v1[i][2] :
					   0.4e9, 1);
			cr_assert_float_eq(r->busbw_Bps, v == 1 ? v1[i][3] :
					   0.3e9, 1);
			cr_assert_float_eq(cJSON_GetObjectItem(o, "count")->
					   valuedouble, r->count, 1e-9);
			cr_assert_float_eq(cJSON_GetObjectItem(o, "bytes")->
					   valuedouble, r->size_B, 1e-9);
			cr_assert_float_eq(cJSON_GetObjectItem(o, "busbw_GBps")->
					   valuedouble, r->busbw_Bps / 1e9, 1e-12);
		}
		measure_stream_release(&s);
	}
	cr_assert_eq(measure_stream_init(&s, &d), 0);
	cr_assert_eq(measure_stream_line(&s, HELLO("3"), "t", &opened, &d),
		     MEASURE_BAD);
	cr_assert(s.runs[0]->foreign);
	measure_stream_release(&s);
#undef HELLO
#undef PT
}

static void quiet_all(void)
{
	setenv("LLMSIM_DATA", "tests/data", 1);
	cr_redirect_stdout();
	cr_redirect_stderr();
}

TestSuite(measure_import, .init = quiet_all);

/* Fail allocation n = 0, 1, 2, ... inside `measure --import` of the six
 * GEMM runs (a table each): every failure is exit status 1, not bad
 * input, with nothing leaked, until the import succeeds. */
Test(measure_import, out_of_memory_is_exit_1)
{
	static const char *argv[] = {
		"measure", "--import",
		"tests/measure/h200-backend-cuda-gemm-2026-12-04.jsonl",
		"--no-store",
	};
	long n;
	int rc;

	for (n = 0;; n++) {
		mem_fail_after(n);
		rc = cli_measure(4, (char **)argv, "build/llmsim");
		mem_fail_after(-1);
		if (rc == CLI_OK)
			break;
		cr_assert_eq(rc, CLI_FAIL, "n = %ld: exit status %d", n, rc);
		cr_assert(n < 100000, "the sweep did not converge");
	}
	cr_assert_gt(n, 6 * 3);		/* a run, a log and its strings each */
	assert_no_leaks();
}

/*
 * A run holds MEASURE_MAX_POINTS (65536) points, grown as they come: a
 * hello and 300 copy points (more than the fixed 256 of before, which
 * refused the 257th) are one run of 300; 65536 + 3 more: 65536 kept,
 * the 3 refused (MEASURE_BAD) and said once, at the first one's line
 * (1 + 65537 = 65538), not at each.
 */
Test(measure_stream, a_run_grows_past_256_points_and_says_its_most_once)
{
	static const char hello[] = "{\"type\":\"hello\",\"protocol\":2,"
		"\"backend\":\"cuda\",\"ranks\":1,\"nodes\":1,"
		"\"devices_per_node\":1,\"iters\":20,\"warmup\":5}";
	static const char pt[] = "{\"type\":\"point\",\"op\":\"copy\","
		"\"dtype\":\"float\",\"bytes\":1048576,\"count\":262144,"
		"\"ranks\":1,\"iters\":20,\"time_us\":6.416,\"time_min_us\":"
		"5.504,\"time_max_us\":9.376,\"GBps\":326.863,\"check\":"
		"\"ok\",\"wrong\":0}";
	struct measure_stream s;
	char *msg = NULL;
	size_t len = 0;
	FILE *err = open_memstream(&msg, &len);
	struct diag d;
	int opened, bad = 0;
	uint32_t i;

	cr_assert_not_null(err);
	diag_init(&d, err);
	cr_assert_eq(measure_stream_init(&s, &d), 0);
	cr_assert_eq(measure_stream_line(&s, hello, "t", &opened, &d),
		     MEASURE_TAKEN);
	for (i = 0; i < 300; i++)
		cr_assert_eq(measure_stream_line(&s, pt, "t", &opened, &d),
			     MEASURE_POINT, "point %u", i + 1);
	cr_assert_eq(s.n, 1);
	cr_assert_eq(s.runs[0]->npts, 300);
	cr_assert_float_eq(s.runs[0]->pts[299].time_s, 6.416e-6, 1e-15);
	for (; i < MEASURE_MAX_POINTS + 3; i++)
		bad += measure_stream_line(&s, pt, "t", &opened, &d) ==
		       MEASURE_BAD;
	fclose(err);
	cr_assert_eq(s.n, 1);
	cr_assert_eq(s.runs[0]->npts, 65536);
	cr_assert_eq(bad, 3);
	cr_assert_eq(d.errors, 1, "%s", msg);
	cr_assert(strstr(msg, "t:65538: error: more than 65536 points in one "
			 "run") != NULL, "%s", msg);
	free(msg);
	measure_stream_release(&s);
}
