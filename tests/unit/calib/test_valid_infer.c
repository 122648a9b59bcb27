/*
 * test_valid_infer.c - the inference reference folder's two files:
 * cases.tsv makes gated tables, extra-cases.tsv (published runs outside
 * the reference set) tables of their own, shown and not gated. Before
 * round 27 validate read cases.tsv only, so an extra file was ignored.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "../config/config_testutil.h"
#include "calib/valid.h"
#include "config/config.h"

/* A small serving job (Llama 3 8B on one H100, vLLM, 16 fixed-length
 * requests): what it predicts does not matter here, only that each file's
 * rows carry it. */
static const char JOB[] =
	"name: test-valid-infer\n"
	"model: llama3-8b\n"
	"system: {preset: dgx-h100, gpus_per_node: 1}\n"
	"phase: serving\n"
	"serving:\n"
	"  engine: vllm\n"
	"  requests: 16\n"
	"  input_len: 128\n"
	"  output_len: 16\n";

static const char CASES[] =
	"# id\tjob\tmetric\tmeasured\tkind\tgate\tnote\n"
	"I-GATED\tjob.yaml\tserving.output_tokens_per_s\t1000\tthroughput"
	"\tscored\tgated row\n";

static const char EXTRA[] =
	"I-EXTRA-TPUT\tjob.yaml\tserving.output_tokens_per_s\t2000\tthroughput"
	"\tscored\textra row\n"
	"I-EXTRA-LAT\tjob.yaml\tserving.duration_s\t4\tlatency\tscored"
	"\textra latency row\n";

TestSuite(valid_infer, .init = fixture_init, .fini = fixture_fini);

Test(valid_infer, extra_cases_are_their_own_tables_not_gated)
{
	struct valid_set set;
	struct config_ctx cx = {&A, &C.d, "."};
	char dir[64], path[256];
	const struct valid_table *g, *x, *l;

	memset(&set, 0, sizeof(set));
	tmpdir_make(dir);
	write_file(path, dir, "job.yaml", JOB, strlen(JOB));
	write_file(path, dir, "cases.tsv", CASES, strlen(CASES));
	write_file(path, dir, "extra-cases.tsv", EXTRA, strlen(EXTRA));
	cr_assert_eq(valid_inference(&set, &cx, dir, 1, 1, 1), 0, "%s",
		     capture_text(&C));
	/* cases.tsv: one throughput table (no latency rows: no table);
	 * extra-cases.tsv: a throughput and a latency table. */
	cr_assert_eq(set.n, 3);
	g = &set.t[0];
	x = &set.t[1];
	l = &set.t[2];
	cr_assert_str_eq(g->id, "inference/cases.tsv");
	cr_assert_eq(g->kind, VK_INFERENCE);
	cr_assert_eq(g->gated, 1);
	cr_assert_str_eq(x->id, "inference/extra-cases.tsv");
	cr_assert_eq(x->kind, VK_INFERENCE);
	cr_assert_eq(x->gated, 0);
	cr_assert_has(x->title, "extra (not gated)");
	cr_assert_str_eq(l->id, "inference/extra-cases.tsv");
	cr_assert_eq(l->kind, VK_LATENCY);
	cr_assert_eq(l->gated, 0);
	cr_assert_eq(l->is_time, 1);
	cr_assert_eq(g->n, 1);
	cr_assert_eq(x->n, 1);
	cr_assert_eq(l->n, 1);
	cr_assert_str_eq(x->rows[0].label, "I-EXTRA-TPUT");
	cr_assert_str_eq(l->rows[0].label, "I-EXTRA-LAT");
	/* The same job and metric: the extra row predicts what the gated
	 * one does, against its own measurement (2000 tok/s, twice the
	 * gated row's 1000): error = p / 2000 - 1. */
	cr_assert(isfinite(g->rows[0].predicted) && g->rows[0].predicted > 0);
	cr_assert_float_eq(x->rows[0].predicted, g->rows[0].predicted, 0);
	cr_assert_float_eq(x->rows[0].measured, 2000, 0);
	cr_assert_float_eq(x->rows[0].error,
			   g->rows[0].predicted / 2000 - 1, 1e-12);
	cr_assert_eq(x->rows[0].scored, 1);
	cr_assert_eq(x->rows[0].failed, 0);
	/* The latency row: the run's duration (s) against 4 s. */
	cr_assert(isfinite(l->rows[0].predicted) && l->rows[0].predicted > 0);
	cr_assert_float_eq(l->rows[0].measured, 4, 0);
	/* Not gated: printing the extra table with a gate that every row
	 * misses (max |error| <= 0) reports no miss; the gated table
	 * misses it (its error is not exactly 0). */
	{
		struct valid_gate none = {NAN, NAN, NAN, 0};
		FILE *devnull = fopen("/dev/null", "w");

		cr_assert_not_null(devnull);
		cr_assert_eq(valid_print_table(devnull, x, &none), 0);
		cr_assert_eq(valid_print_table(devnull, l, &none), 0);
		cr_assert_eq(valid_print_table(devnull, g, &none), 1);
		fclose(devnull);
	}
	valid_set_release(&set);
	tmpdir_remove(dir);
}

/* A malformed extra-cases.tsv line is bad input, named by file and line,
 * like one of cases.tsv. */
Test(valid_infer, bad_extra_line_is_named)
{
	static const char BAD[] =
		"# header\n"
		"I-X\tjob.yaml\tserving.output_tokens_per_s\t12 tok/s"
		"\tthroughput\tscored\tnote\n";
	struct valid_set set;
	struct config_ctx cx = {&A, &C.d, "."};
	char dir[64], path[256];

	memset(&set, 0, sizeof(set));
	tmpdir_make(dir);
	write_file(path, dir, "job.yaml", JOB, strlen(JOB));
	write_file(path, dir, "extra-cases.tsv", BAD, strlen(BAD));
	cr_assert_eq(valid_inference(&set, &cx, dir, 2, 1, 1), -1);
	cr_assert_has(capture_text(&C), "extra-cases.tsv:2:1: error: expected");
	valid_set_release(&set);
	tmpdir_remove(dir);
}

/* validate --jobs 2: the extra file's two cases run in two worker
 * processes (case i in worker i mod 2) and come back over a pipe as
 * %.17g text, which reads back as the very double: every prediction is
 * bit for bit the one process's. */
Test(valid_infer, workers_predict_what_one_process_does)
{
	struct valid_set one, two;
	struct config_ctx cx = {&A, &C.d, "."};
	char dir[64], path[256];
	size_t t, r;

	memset(&one, 0, sizeof(one));
	memset(&two, 0, sizeof(two));
	tmpdir_make(dir);
	write_file(path, dir, "job.yaml", JOB, strlen(JOB));
	write_file(path, dir, "cases.tsv", CASES, strlen(CASES));
	write_file(path, dir, "extra-cases.tsv", EXTRA, strlen(EXTRA));
	cr_assert_eq(valid_inference(&one, &cx, dir, 1, 1, 1), 0, "%s",
		     capture_text(&C));
	cr_assert_eq(valid_inference(&two, &cx, dir, 2, 1, 1), 0, "%s",
		     capture_text(&C));
	cr_assert_eq(one.n, 3);
	cr_assert_eq(two.n, 3);
	for (t = 0; t < 3; t++) {
		cr_assert_eq(one.t[t].n, two.t[t].n);
		for (r = 0; r < one.t[t].n; r++) {
			cr_assert(isfinite(two.t[t].rows[r].predicted));
			cr_assert(memcmp(&one.t[t].rows[r].predicted,
					 &two.t[t].rows[r].predicted,
					 sizeof(double)) == 0,
				  "%s: %.17g with 1 process, %.17g with 2",
				  one.t[t].rows[r].label,
				  one.t[t].rows[r].predicted,
				  two.t[t].rows[r].predicted);
		}
	}
	valid_set_release(&one);
	valid_set_release(&two);
	tmpdir_remove(dir);
}
