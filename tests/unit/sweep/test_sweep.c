/*
 * test_sweep.c - sweep files: the points a file expands to, counted by
 * hand; the overrides of a point; its axis values as JSON; the errors a
 * bad file gets, at file:line:col; a stop signal after a point's store
 * waits for its report.
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../config/config_testutil.h"
#include "config/cnode.h"
#include "config/config.h"
#include "config/spec_job.h"
#include "store/store.h"
#include "sweep/sweep.h"
#include "sweep/sweep_impl.h"

TestSuite(sweep);

/* Write text to a temporary file; its path in path (64 bytes). */
static void write_tmp(char *path, const char *text)
{
	FILE *f;
	int fd;

	snprintf(path, 64, "/tmp/llmsim-sweep-XXXXXX");
	fd = mkstemp(path);
	cr_assert(fd >= 0);
	f = fdopen(fd, "w");
	fputs(text, f);
	fclose(f);
}

static int load(struct arena *a, const char *text, struct sweep *sw,
		struct capture *c)
{
	char path[64];
	int rc;

	write_tmp(path, text);
	rc = sweep_load(a, path, &job_schema, sw, &c->d);
	unlink(path);
	return rc;
}

Test(sweep, expansion_counted_by_hand)
{
	/* cases (2) x grid a (3) x grid b (2) x zip (2 lists of 2) = 24
	 * points. Dimensions: cases, system.nodes, training.seq_len, the
	 * zip group; the last varies fastest. */
	static const char text[] =
		"base: default\n"
		"cases:\n"
		"  - {system.scale_out: roce-400g}\n"
		"  - {system.scale_out: roce-800g}\n"
		"grid:\n"
		"  system.nodes: [1, 2, 4]\n"
		"  training.seq_len: [1024, 2048]\n"
		"zip:\n"
		"  parallelism.tp: [2, 4]\n"
		"  training.micro_batch_size: [1, 2]\n";
	struct arena a;
	struct capture c;
	struct sweep sw;
	const struct cnode *v[8];

	arena_init(&a);
	capture_begin(&c);
	cr_assert_eq(load(&a, text, &sw, &c), 0, "%s", capture_text(&c));
	cr_assert_eq(sw.npoints, 24);
	cr_assert_eq(sw.ndims, 4);
	cr_assert_eq(sw.naxes, 5);
	cr_assert_str_eq(sw.axes[0].key, "system.scale_out");
	cr_assert_str_eq(sw.axes[1].key, "system.nodes");
	cr_assert_str_eq(sw.axes[4].column, "training_micro_batch_size");
	/* Point 13 = 13 in radix (2, 3, 2, 2): zip 13 % 2 = 1, seq_len
	 * (13 / 2) % 2 = 0, nodes (13 / 4) % 3 = 0, case 13 / 12 = 1. */
	sweep_point_values(&sw, 13, v);
	cr_assert_str_eq(v[0]->text, "roce-800g");
	cr_assert_str_eq(v[1]->text, "1");
	cr_assert_str_eq(v[2]->text, "1024");
	cr_assert_str_eq(v[3]->text, "4");
	cr_assert_str_eq(v[4]->text, "2");
	/* Point 23, the last: every dimension at its last position. */
	sweep_point_values(&sw, 23, v);
	cr_assert_str_eq(v[1]->text, "4");
	cr_assert_str_eq(v[2]->text, "2048");
	capture_end(&c);
	arena_release(&a);
}

Test(sweep, overrides_apply_shallow_keys_first)
{
	/* A case sets system (a whole preset) and the grid system.nodes:
	 * system must come first or it would undo the nodes. */
	static const char text[] =
		"base: default\n"
		"set:\n"
		"  training.seq_len: 4096\n"
		"grid:\n"
		"  system.nodes: [2]\n"
		"cases:\n"
		"  - {system: dgx-h200}\n";
	struct arena a;
	struct capture c;
	struct sweep sw;
	struct cnode **t;
	size_t n;

	arena_init(&a);
	capture_begin(&c);
	cr_assert_eq(load(&a, text, &sw, &c), 0, "%s", capture_text(&c));
	cr_assert_eq(sweep_point_overrides(&a, &sw, 0, &t, &n, &c.d), 0);
	/* depth 0: system; depth 1: training.seq_len (set), system.nodes */
	cr_assert_eq(n, 3);
	cr_assert_str_eq(t[0]->pairs[0].key->text, "system");
	cr_assert_eq(t[0]->pairs[0].value->kind, CNODE_SCALAR);
	cr_assert_str_eq(t[1]->pairs[0].key->text, "training");
	cr_assert_str_eq(t[2]->pairs[0].key->text, "system");
	cr_assert_str_eq(t[2]->pairs[0].value->pairs[0].key->text, "nodes");
	capture_end(&c);
	arena_release(&a);
}

Test(sweep, axis_values_as_json)
{
	static const char text[] =
		"base: default\n"
		"cases:\n"
		"  - {system.nodes: 2, system.scale_out: roce-400g}\n"
		"  - {system.gpu.hbm.capacity: 141 GB}\n";
	struct arena a;
	struct capture c;
	struct sweep sw;
	cJSON *j;
	char *s;

	arena_init(&a);
	capture_begin(&c);
	cr_assert_eq(load(&a, text, &sw, &c), 0, "%s", capture_text(&c));
	/* Numbers as numbers, names and quantities as text; an axis a case
	 * leaves out is absent. */
	j = sweep_point_json(&sw, 0);
	s = cJSON_PrintUnformatted(j);
	cr_assert_str_eq(s, "{\"system.nodes\":2,"
			 "\"system.scale_out\":\"roce-400g\"}");
	cJSON_free(s);
	cJSON_Delete(j);
	j = sweep_point_json(&sw, 1);
	s = cJSON_PrintUnformatted(j);
	cr_assert_str_eq(s, "{\"system.gpu.hbm.capacity\":\"141 GB\"}");
	cJSON_free(s);
	cJSON_Delete(j);
	capture_end(&c);
	arena_release(&a);
	assert_no_leaks();
}

/* The error a file gets, after "FILE:". */
static void expect_error(const char *text, const char *want)
{
	struct arena a;
	struct capture c;
	struct sweep sw;

	arena_init(&a);
	capture_begin(&c);
	cr_assert_neq(load(&a, text, &sw, &c), 0);
	cr_assert(strstr(capture_text(&c), want), "got: %s", capture_text(&c));
	capture_end(&c);
	arena_release(&a);
}

Test(sweep, errors_at_their_place)
{
	/* Line 3, column 10: the segment "nodez" of "system.nodez" (which
	 * starts at column 3). */
	expect_error("base: default\ngrid:\n  system.nodez: [1]\n",
		     ":3:10: error: 'system.nodez': the job has no key "
		     "'system.nodez', did you mean 'nodes'?");
	/* The second list (line 4), its '[' at column 19. */
	expect_error("base: default\nzip:\n  parallelism.tp: [1, 2]\n"
		     "  parallelism.pp: [1]\n",
		     ":4:19: error: 'parallelism.pp': zip lists must have equal "
		     "lengths: 1 values here, 2 in 'parallelism.tp' (line 3)");
	expect_error("base: default\ngrid: {}\n", ":2:7: error: 'grid': empty");
	expect_error("base: default\ngrid:\n  system.nodes: []\n",
		     ":3:17: error: 'system.nodes': an empty list");
	expect_error("grid:\n  system.nodes: [1]\n",
		     ":1:1: error: a sweep needs 'base:'");
	expect_error("base: default\n", ":1:1: error: nothing to sweep");
}

/*
 * A stop signal between a point's commit and its report waits for the
 * report (round 31: a -j 2 worker killed there left a stored point
 * that the summary showed "not run", 1 interrupt in 6). A child runs
 * one point as a worker does (SIGTERM at SIG_DFL, its own connection),
 * then sends itself SIGTERM: held since the point's store, it must not
 * kill the child before the child's pipe write, and must kill it at
 * sweep_free_stops. Without the hold the child dies at the kill and
 * the pipe reads 0 bytes; a hold never freed lets it _exit(0).
 */
struct held_rec {
	int32_t outcome;
	int64_t sweep_id;
	char hash[65];
};

Test(sweep, stop_between_store_and_report_waits_for_the_report)
{
	/* tp 3 does not divide the default model's heads: an invalid
	 * point, stored with its reason at once (no simulation). */
	static const char text[] =
		"name: held\n"
		"base: default\n"
		"grid:\n"
		"  parallelism.tp: [3]\n";
	char db[] = "/tmp/llmsim-sweep-db-XXXXXX", side[64];
	struct held_rec r;
	struct arena a;
	struct capture c;
	struct sweep sw;
	sqlite3 *q;
	sqlite3_stmt *s;
	int fds[2], fd, status;
	ssize_t n;
	pid_t pid;

	fd = mkstemp(db);
	cr_assert(fd >= 0);
	close(fd);
	unlink(db);	/* store_open creates it */
	arena_init(&a);
	capture_begin(&c);
	cr_assert_eq(load(&a, text, &sw, &c), 0, "%s", capture_text(&c));
	cr_assert_eq(pipe(fds), 0);
	fflush(NULL);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		struct sweep_opts o = { .db = db, .data_root = ".",
					.version = "test",
					.jobs = 2, .shard = 1,
					.nshards = 1 };
		struct sweep_ctx x = { &sw, &o, NULL, 0, NULL };
		struct config_ctx cx = { &a, &c.d, "." };

		close(fds[0]);
		signal(SIGTERM, SIG_DFL);
		memset(&r, 0, sizeof(r));
		x.base = config_resolve_node(&cx, &job_schema, sw.base);
		x.st = x.base ? store_open(db, &c.d) : NULL;
		if (!x.st || sweep_store_begin(&x, &c.d) != 0)
			_exit(3);
		r.outcome = (int32_t)sweep_point_run(&x, 0, r.hash, &c.d);
		r.sweep_id = x.sweep_id;
		store_close(x.st);
		kill(getpid(), SIGTERM);	/* the stop, after the commit */
		if (write(fds[1], &r, sizeof(r)) != (ssize_t)sizeof(r))
			_exit(4);
		sweep_free_stops();		/* the held stop ends it here */
		_exit(0);
	}
	close(fds[1]);
	n = read(fds[0], &r, sizeof(r));
	close(fds[0]);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert_eq(n, (ssize_t)sizeof(r), "the stop killed the point "
		     "before its report (read %zd bytes, status %d)", n,
		     status);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM,
		  "the held stop was never delivered (status %d)", status);
	cr_assert_eq(r.outcome, SWEEP_INVALID);
	/* what it reported is what the database holds: one invalid row */
	cr_assert_eq(sqlite3_open_v2(db, &q, SQLITE_OPEN_READONLY, NULL),
		     SQLITE_OK);
	cr_assert_eq(sqlite3_prepare_v2(q, "SELECT count(*) FROM "
					"sweep_points WHERE sweep_id = ?1 AND "
					"point_hash = ?2 AND status = "
					"'invalid'", -1, &s, NULL), SQLITE_OK);
	sqlite3_bind_int64(s, 1, r.sweep_id);
	sqlite3_bind_text(s, 2, r.hash, -1, SQLITE_STATIC);
	cr_assert_eq(sqlite3_step(s), SQLITE_ROW);
	cr_assert_eq(sqlite3_column_int(s, 0), 1);
	sqlite3_finalize(s);
	sqlite3_close(q);
	unlink(db);
	snprintf(side, sizeof(side), "%s-wal", db);
	unlink(side);
	snprintf(side, sizeof(side), "%s-shm", db);
	unlink(side);
	capture_end(&c);
	arena_release(&a);
}

/*
 * The table's reason cell: a line of at most max characters is kept
 * whole; a longer one keeps max - 3 characters and "...", cut between
 * characters. "é" is 2 bytes (C3 A9), "€" 3 (E2 82 AC).
 *   10 x "é" (20 bytes, 10 characters), max 10: whole, 20 bytes.
 *   11 x "é", max 10: 7 characters (14 bytes) + "..." = 17 bytes. The
 *   byte cut of before ("%.7s") ended inside the 4th "é" (C3 alone).
 *   "a" + 5 x "€" (16 bytes, 6 characters), max 5: 2 characters, "a€"
 *   (4 bytes), + "..." (the byte cut "%.2s" ended inside the "€").
 *   "abc\n..." with len 3 (the caller's first line): "abc".
 */
Test(sweep, a_cut_reason_ends_between_characters)
{
	struct arena a;
	char ten[32] = "", eleven[32] = "";
	const char *r;
	int k;

	arena_init(&a);
	for (k = 0; k < 10; k++)
		strcat(ten, "\xc3\xa9");
	strcpy(eleven, ten);
	strcat(eleven, "\xc3\xa9");
	r = sweep_cut_text(&a, ten, strlen(ten), 10);
	cr_assert_str_eq(r, ten);
	r = sweep_cut_text(&a, eleven, strlen(eleven), 10);
	cr_assert_str_eq(r, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
			 "\xc3\xa9...");
	cr_assert_eq(strlen(r), 17);
	r = sweep_cut_text(&a, "a\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac"
			   "\xe2\x82\xac\xe2\x82\xac", 16, 5);
	cr_assert_str_eq(r, "a\xe2\x82\xac...");
	r = sweep_cut_text(&a, "abc\ndef", 3, 160);
	cr_assert_str_eq(r, "abc");
	arena_release(&a);
}
