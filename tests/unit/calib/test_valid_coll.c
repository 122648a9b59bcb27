/*
 * test_valid_coll.c - a collective reference table measured through an
 * engine's own all-reduce op (engine_kernel_max_B): rows up to that size
 * ran the engine's kernels (TensorRT-LLM's AUTO strategy: one-/two-shot
 * up to the size its strategy table gives, NCCL above), so they are shown
 * with the library's prediction and not scored; larger rows are scored as
 * before. Bad values are named, not read as 0.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../config/config_testutil.h"
#include "calib/valid.h"
#include "config/config.h"

/* The same three rows twice: with the key (rows of 2 and 4 MiB ran the
 * engine's kernels) and without it. Measured times are aiconfigurator's
 * 4 x H200 TensorRT-LLM 1.3.0rc20 rows (21.93, 35.94, 57.75 us); busbw =
 * 2 (n - 1) / n x size / time = 1.5 x 2097152 B / 21.93 us = 143.44 GB/s
 * etc. (the files' third column, as nccl-tests prints it). */
#define ROWS                                                              \
	"rows:\n"                                                         \
	"  - [2097152, 21.93, 143.46]\n"                                  \
	"  - [4194304, 35.94, 175.07]\n"                                  \
	"  - [8388608, 57.75, 217.87]\n"

#define HEAD                                                              \
	"system: dgx-h200\n"                                              \
	"op: allreduce\n"                                                 \
	"ranks: 4\n"                                                      \
	"type: bfloat16\n"                                                \
	"gated: false\n"

TestSuite(valid_coll, .init = fixture_init, .fini = fixture_fini);

/* Tables heads[i] + body as files names[i] of a fresh directory dir,
 * read as validate reads a table directory: valid_collectives' return. */
static int read_tables(struct valid_set *set, char dir[64], int n,
		       const char *const names[], const char *const heads[],
		       const char *body)
{
	struct config_ctx cx = {&A, &C.d, "."};
	char path[256], doc[1024];
	int i, len;

	memset(set, 0, sizeof(*set));
	tmpdir_make(dir);
	for (i = 0; i < n; i++) {
		len = snprintf(doc, sizeof(doc), "%s%s", heads[i], body);
		cr_assert(len > 0 && (size_t)len < sizeof(doc));
		write_file(path, dir, names[i], doc, (size_t)len);
	}
	return valid_collectives(set, &cx, dir);
}

/* One table, bad.yaml = head + body: refused with msg in the text. */
static void expect_bad(const char *head, const char *body, const char *msg)
{
	static const char *const name[1] = {"bad.yaml"};
	const char *h[1] = {head};
	struct valid_set set;
	char dir[64];

	cr_assert_eq(read_tables(&set, dir, 1, name, h, body), -1, "%s", head);
	cr_assert_has(capture_text(&C), msg);
	valid_set_release(&set);
	tmpdir_remove(dir);
}

/* Tables a.yaml and b.yaml: heads ha and hb, the same body. */
static void read_pair(struct valid_set *set, char dir[64], const char *ha,
		      const char *hb, const char *body)
{
	static const char *const name[2] = {"a.yaml", "b.yaml"};
	const char *h[2] = {ha, hb};

	cr_assert_eq(read_tables(set, dir, 2, name, h, body), 0, "%s",
		     capture_text(&C));
	cr_assert_eq(set->n, 2);
}

Test(valid_coll, engine_kernel_rows_are_shown_not_scored)
{
	struct valid_set set;
	char dir[64];
	const struct valid_table *e, *l;
	int i;

	read_pair(&set, dir, "id: A-ENGINE\nengine_kernel_max_B: 4194304\n",
		  "id: B-LIBRARY\n", HEAD ROWS);
	e = &set.t[0];
	l = &set.t[1];
	cr_assert_str_eq(e->id, "A-ENGINE");
	cr_assert_str_eq(l->id, "B-LIBRARY");
	cr_assert_eq(e->n, 3);
	cr_assert_eq(l->n, 3);
	/* 2 and 4 MiB <= 4194304: the engine's kernels, not scored; 8 MiB
	 * scored. Without the key every row is scored. */
	cr_assert_eq(e->rows[0].scored, 0);
	cr_assert_eq(e->rows[1].scored, 0);
	cr_assert_eq(e->rows[2].scored, 1);
	for (i = 0; i < 3; i++)
		cr_assert_eq(l->rows[i].scored, 1, "row %d", i);
	cr_assert_has(e->rows[0].note, "engine kernel, not scored");
	/* The prediction shown is the library's, the same with or without
	 * the key, and its error stays defined (predicted / measured - 1). */
	for (i = 0; i < 3; i++) {
		cr_assert(isfinite(e->rows[i].predicted) &&
			  e->rows[i].predicted > 0);
		cr_assert_float_eq(e->rows[i].predicted, l->rows[i].predicted,
				   0);
		cr_assert_float_eq(e->rows[i].error, l->rows[i].error, 0);
	}
	cr_assert_float_eq(e->rows[0].measured, 143.46, 0);
	valid_set_release(&set);
	tmpdir_remove(dir);
}

/* '8 MiB' is not a whole number of bytes, and a list is not a number:
 * both are errors at the key, not 8 or 0. */
Test(valid_coll, bad_engine_kernel_max_is_named)
{
	expect_bad("id: BAD\nengine_kernel_max_B: 8 MiB\n", HEAD ROWS,
		   "'engine_kernel_max_B': expected a whole number of bytes");
	expect_bad("id: BAD\nengine_kernel_max_B: [1, 2]\n", HEAD ROWS,
		   "'engine_kernel_max_B': expected a whole number of bytes");
}

/* 16 MiB all-reduce on 2 x 8 H100, nccl-tests #309's row (185.4 us,
 * busbw 169.68 GB/s). */
#define H100_2N                                                           \
	"system: dgx-h100\n"                                              \
	"nodes: 2\n"                                                      \
	"op: allreduce\n"                                                 \
	"ranks: 16\n"                                                     \
	"rows:\n"                                                         \
	"  - [16777216, 185.4, 169.68]\n"

/* `collectives: nccl-2.26` runs the table on that release's preset, the
 * system's own keys kept. On 2 x 8 H100 a 16 MiB all-reduce is NVLSTree
 * under both releases (collectives/README.md, Round 43 mnode43); NCCL's
 * NVLSTree latency is hwLat NVLink 25 us + 2 log2(nNodes) x hwLat NET
 * NVLSTree, 20.9 us at 5067397c (nccl.yaml) and 14 us in v2.26.2-1
 * (nccl-2.26.yaml): 2 x 1 x (20.9 - 14) = 13.8 us less, the rest of the
 * run (links, cap, fill) the same. The row's measured time is nccl-tests
 * #309's (185.4 us, busbw 169.68 GB/s). */
Test(valid_coll, the_release_preset_is_the_tables)
{
	struct valid_set set;
	char dir[64], t_cur[32], t_old[32];
	double t0, t1;

	read_pair(&set, dir, "id: A-CURRENT\n",
		  "id: B-NCCL226\ncollectives: nccl-2.26\n", H100_2N);
	cr_assert_str_eq(set.t[1].id, "B-NCCL226");
	cr_assert_has(set.t[0].rows[0].note, "nvls_tree/simple");
	cr_assert_has(set.t[1].rows[0].note, "nvls_tree/simple");
	/* the note reads "nvls_tree/simple, T us (measured ...)" */
	cr_assert_eq(sscanf(strchr(set.t[0].rows[0].note, ',') + 2, "%31s",
			    t_cur), 1);
	cr_assert_eq(sscanf(strchr(set.t[1].rows[0].note, ',') + 2, "%31s",
			    t_old), 1);
	t0 = atof(t_cur);
	t1 = atof(t_old);
	cr_assert_float_eq(t0 - t1, 13.8, 0.011, "%.2f - %.2f us", t0, t1);
	valid_set_release(&set);
	tmpdir_remove(dir);
}

/* A release that has no preset is an error at the table's key naming
 * the presets there are (not a run on the current release). */
Test(valid_coll, an_unknown_release_is_named)
{
	expect_bad("id: BAD\ncollectives: nccl-2.99\n", HEAD ROWS,
		   "bad.yaml:2:14: error: 'collectives': no collectives preset "
		   "'nccl-2.99' (presets: ");
	cr_assert_has(capture_text(&C), "nccl-2.26, ");
}

/* `disabled_algorithms: [nvls, nvls_tree]` is a run with NCCL_NVLS_ENABLE
 * =0: the library picks among the others. 16 MiB on 2 x 8 H100 is
 * NVLSTree by default (the_release_preset_is_the_tables); with NVLS off it
 * Tree or Ring (the choice's view of them, not their run, lost to
 * NVLSTree: tree/LL128 runs 133 us here), never nvls / nvls_tree. */
Test(valid_coll, disabled_algorithms_are_not_picked)
{
	struct valid_set set;
	char dir[64];

	read_pair(&set, dir, "id: A-ON\n",
		  "id: B-OFF\ndisabled_algorithms: [nvls, nvls_tree]\n",
		  H100_2N);
	cr_assert_has(set.t[0].rows[0].note, "nvls_tree/simple");
	cr_assert(strstr(set.t[1].rows[0].note, "nvls") == NULL, "%s",
		  set.t[1].rows[0].note);
	cr_assert(strncmp(set.t[1].rows[0].note, "tree/", 5) == 0 ||
		  strncmp(set.t[1].rows[0].note, "ring/", 5) == 0, "%s",
		  set.t[1].rows[0].note);
	valid_set_release(&set);
	tmpdir_remove(dir);
}

/* Not a list, an unknown name, a name twice, the forced algorithm: each
 * an error at the value. */
Test(valid_coll, bad_disabled_algorithms_are_named)
{
	static const char *const bad[4][2] = {
		{"disabled_algorithms: nvls\n", "expected a list"},
		{"disabled_algorithms: [nvlss]\n", "got 'nvlss'"},
		{"disabled_algorithms: [nvls, nvls]\n", "each once"},
		{"algorithm: ring\ndisabled_algorithms: [ring]\n",
		 "not the forced 'algorithm'"},
	};
	char head[128];
	int k;

	for (k = 0; k < 4; k++) {
		snprintf(head, sizeof(head), "id: BAD\n%s", bad[k][0]);
		expect_bad(head, HEAD ROWS, bad[k][1]);
		cr_assert_has(capture_text(&C), "bad.yaml:2:");
	}
}

/* A release keeps the system's own collectives keys: dgx-b200 states
 * NCCL's Blackwell ring LL128 cap (protocols.ll128.select_channel_busbw
 * 34.5 GB/s a channel, 16 x 34.5 = 552 < 0.92 x 720: LL128 never beats
 * Simple on 4 GPUs, collectives/README.md Round 41 nvls41), so a 16 MiB
 * all-reduce on 4 B200 is ring/Simple (90.2 us) with or without
 * `collectives: nccl-2.26`; nccl-2.26 over nccl.yaml's keys alone (the
 * system's dropped, as a whole-preset swap did) runs ring/LL128, 62.6 us.
 * The row's measured values are aiconfigurator's (NCCL 2.29.2 table). */
Test(valid_coll, a_release_keeps_the_systems_keys)
{
	static const char rows[] =
		"system: dgx-b200\n"
		"op: allreduce\n"
		"ranks: 4\n"
		"rows:\n"
		"  - [16777216, 99.0, 254.2]\n";
	struct valid_set set;
	char dir[64];

	read_pair(&set, dir, "id: A-CURRENT\n",
		  "id: B-NCCL226\ncollectives: nccl-2.26\n", rows);
	cr_assert_has(set.t[0].rows[0].note, "ring/simple");
	cr_assert_has(set.t[1].rows[0].note, "ring/simple");
	cr_assert_float_eq(set.t[1].rows[0].predicted,
			   set.t[0].rows[0].predicted, 0);
	valid_set_release(&set);
	tmpdir_remove(dir);
}

/* A release may start from another release: nccl-2.26-blackwell starts
 * from nccl-2.26, which starts from nccl (dgx-b200's library); the table
 * runs on both files' keys, the named one's last. Its one key that binds
 * here is NVLS_NCHANNELS_SM100 32 (v2.26.3-1 nvls.cc), where dgx-b200
 * keeps 24 (2.27.3+): an 8-rank 1 GiB all-reduce is NVLS with 64 KiB
 * chunks either way (enqueue.cc: 1 GiB < 64 x 8 heads x C x 128 KiB for
 * C = 24 and 32), so a loop moves 8 x C x 64 KiB (12 / 16 MiB): 85.3 /
 * 64 loops of 1.2 us sync (nccl.yaml nvls), 25.6 us less with 32, and a
 * 2-loop fill of 24 / 32 MiB at ~440 GB/s, 57.2 / 76.3 us, 19.1 us more:
 * 32 channels are ~6.5 us faster on ~2440 us (the CLI with channels=32
 * reads 2434.0 vs 2442.7 us), so a higher bus bandwidth than nccl-2.26
 * with the system's 24. Before chains were read the table was an error
 * ("starts from 'nccl-2.26', but dgx-b200 runs 'nccl'"). */
Test(valid_coll, a_release_may_start_from_a_release)
{
	static const char rows[] =
		"system: dgx-b200\n"
		"op: allreduce\n"
		"ranks: 8\n"
		"rows:\n"
		"  - [1073741824, 2400.0, 782.9]\n";
	struct valid_set set;
	char dir[64];

	read_pair(&set, dir, "id: A-NCCL226\ncollectives: nccl-2.26\n",
		  "id: B-NCCL226BW\ncollectives: nccl-2.26-blackwell\n", rows);
	cr_assert_has(set.t[0].rows[0].note, "nvls/simple");
	cr_assert_has(set.t[1].rows[0].note, "nvls/simple");
	cr_assert_gt(set.t[1].rows[0].predicted, set.t[0].rows[0].predicted);
	valid_set_release(&set);
	tmpdir_remove(dir);
}

/* A release of another library than the system's is an error at the
 * key: nccl-2.26 starts from nccl, mi300x-roce runs rccl. */
Test(valid_coll, a_release_of_another_library_is_named)
{
	expect_bad("id: BAD\ncollectives: nccl-2.26\n",
		   "system: mi300x-roce\nop: allreduce\nranks: 8\n" ROWS,
		   "bad.yaml:2:14: error: 'collectives': release 'nccl-2.26' "
		   "starts from 'nccl', but mi300x-roce runs 'rccl'");
}

/* A data root in a fresh directory root: configs/ as the repository's,
 * with one more collectives preset, NAME.yaml = text. */
static void release_root(char root[64], const char *name, const char *text)
{
	char cwd[512], cmd[2048], path[256];

	tmpdir_make(root);
	cr_assert_not_null(getcwd(cwd, sizeof(cwd)));
	snprintf(cmd, sizeof(cmd), "cd '%s' && mkdir -p configs/collectives && "
		 "for d in '%s'/configs/*; do [ \"${d##*/}\" = collectives ] || "
		 "ln -s \"$d\" configs/; done && ln -s '%s'/configs/collectives/* "
		 "configs/collectives/", root, cwd, cwd);
	cr_assert_eq(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "configs/collectives/%s.yaml", name);
	write_file(path, root, cmd, text, strlen(text));
}

/* Table bad.yaml (head + HEAD ROWS, on dgx-h200) read against a data
 * root with release NAME = text: valid_collectives' return. */
static int read_release(const char *head, const char *text)
{
	char root[64], dir[64], path[256], doc[1024];
	struct config_ctx cx = {&A, &C.d, NULL};
	struct valid_set set;
	int len, rc;

	release_root(root, "t-rel", text);
	cx.data_root = root;
	memset(&set, 0, sizeof(set));
	tmpdir_make(dir);
	len = snprintf(doc, sizeof(doc), "%s" HEAD ROWS, head);
	write_file(path, dir, "bad.yaml", doc, (size_t)len);
	rc = valid_collectives(&set, &cx, dir);
	valid_set_release(&set);
	tmpdir_remove(dir);
	tmpdir_remove(root);
	return rc;
}

/* A release's quoted scalar stays a string: pxn "false" is refused as
 * in a system file (--set 'collectives.pxn="false"': "expected true or
 * false, got 'false' (a quoted string"); it went into the --set
 * unquoted and ran as pxn false. A quoted list item with a comma stays
 * one item: ["ring, tree"] is one unknown name, not two known ones. */
Test(valid_coll, a_releases_quoted_scalars_stay_strings)
{
	cr_assert_eq(read_release("id: Q\ncollectives: t-rel\n",
				  "preset: nccl\nname: t-rel\n"
				  "pxn: \"false\"\n"), -1);
	cr_assert_has(capture_text(&C), "expected true or false, got 'false' "
		      "(a quoted string");
	cr_assert_eq(read_release("id: L\ncollectives: t-rel\n",
				  "preset: nccl\nname: t-rel\n"
				  "pxn: false\n"), 0, "%s", capture_text(&C));
	/* nccl.yaml's sm90SpeedArrayIntra with "40, 30" quoted as one
	 * item: refused as one, not read as 40 and 30 */
	cr_assert_eq(read_release("id: S\ncollectives: t-rel\n",
				  "preset: nccl\nname: t-rel\nalgorithms:\n"
				  "  nvls:\n    select_speeds: [60, 50, \"40, "
				  "30\", 24, 20, 15, 12, 11, 6, 3]\n"), -1);
	cr_assert_has(capture_text(&C), "select_speeds[2]': expected an "
		      "integer such as 8, got '40, 30'");
}

/* The key limit is what the message says: 64 keys are read (here
 * unknown ones, refused by the schema), 65 are "more than 64" (the
 * message said 60 while 63 or 64 were taken). */
Test(valid_coll, a_releases_key_limit_is_the_messages)
{
	char text[2048];
	int k, len, n;

	for (n = 64; n <= 65; n++) {
		len = snprintf(text, sizeof(text), "preset: nccl\n"
			       "name: t-rel\n");
		for (k = 0; k < n; k++)
			len += snprintf(text + len, sizeof(text) - (size_t)len,
					"k%d: 1\n", k);
		cr_assert_eq(read_release("id: K\nnodes: 1\ncollectives: "
					  "t-rel\n", text), -1);
		if (n == 64)
			cr_assert(strstr(capture_text(&C), "more than") == NULL,
				  "%s", capture_text(&C));
		else
			cr_assert_has(capture_text(&C), "a release preset of "
				      "more than 64 keys");
	}
}

/* Every algorithm NCCL runs an all-reduce with off (ring, tree, nvls,
 * nvls_tree; nccl.yaml offers it no other): exit 2 with the fabric's
 * error, and a note at the table's key says whose list left none (it
 * named no file). */
Test(valid_coll, disabled_algorithms_leaving_none_are_named)
{
	expect_bad("id: BAD\ndisabled_algorithms: [ring, tree, nvls, "
		   "nvls_tree]\n", HEAD ROWS, "bad.yaml:2:22: note: "
		   "'disabled_algorithms' of this table leaves the library "
		   "none it runs this op with");
}

Test(valid_coll, disabled_algorithms_are_not_blamed_for_other_failures)
{
	/*
	 * dgx-h200 has 8 GPUs: 9 ranks fail ("a member's GPU id is past
	 * the system's GPUs") and send/recv over 4 ranks fails ("needs
	 * exactly two members") with or without [nvls] disabled. The note
	 * said the list left the library no algorithm; it names the row.
	 */
	static const char *const heads[2] = {
		"id: BAD\nsystem: dgx-h200\nop: allreduce\nranks: 9\n"
		"type: bfloat16\ngated: false\ndisabled_algorithms: [nvls]\n",
		"id: BAD\nsystem: dgx-h200\nop: sendrecv\nranks: 4\n"
		"type: bfloat16\ngated: false\ndisabled_algorithms: [nvls]\n",
	};
	static const char *const name[1] = {"bad.yaml"};
	int i;

	for (i = 0; i < 2; i++) {
		const char *h[1] = {heads[i]};
		struct valid_set set;
		char dir[64];

		cr_assert_eq(read_tables(&set, dir, 1, name, h, ROWS), -1);
		cr_assert_has(capture_text(&C), "bad.yaml: note: row 1 of this "
			      "table (2097152 B, ");
		cr_assert_null(strstr(capture_text(&C), "'disabled_algorithms'"),
			       "%s", capture_text(&C));
		valid_set_release(&set);
		tmpdir_remove(dir);
	}
}

/* 2 KiB on 4 MI300X, the first row of vllm-project/vllm PR #19744's TP=4
 * table (7.18 us; busbw 1.5 x 2048 B / 7.18 us = 0.43 GB/s). */
#define MI300X_4G                                                         \
	"system: mi300x-roce\n"                                           \
	"op: allreduce\n"                                                 \
	"ranks: 4\n"                                                      \
	"rows:\n"                                                         \
	"  - [2048, 7.18, 0.43]\n"

/* `engine_collectives: vllm-custom-allreduce` prices every row with that
 * preset in place of the system's library (RCCL here), as the vllm-rocm
 * engine prices its TP all-reduces: its direct algorithm (two all-pairs
 * phases), base 10.0 us launch included, the phases' 2 x 3/4 x 2048 B =
 * 3072 B at <= 90 GB/s adding 0.03 us and the xGMI hops' latency a little
 * more: 10.0-10.2 us. RCCL's own at 2 KiB on these 4 GPUs is MSCCL's
 * all-pairs program (rccl.yaml direct, LL): base 12 us + one 0.8 us hop
 * for each of its two shots = 13.6 us before the bandwidth term: more
 * than 13 us. The row is scored (it is the engine's kernel the table
 * measured). */
Test(valid_coll, an_engines_own_allreduce_prices_every_row)
{
	struct valid_set set;
	char dir[64];
	double t_eng, t_lib;

	read_pair(&set, dir, "id: A-VLLM-CR\nengine_collectives: "
		  "vllm-custom-allreduce\n", "id: B-RCCL\n", MI300X_4G);
	cr_assert_has(set.t[0].title, "engine's own: vllm-custom-allreduce");
	cr_assert_has(set.t[0].rows[0].note, "direct/simple, ");
	cr_assert_eq(sscanf(strchr(set.t[0].rows[0].note, ',') + 2, "%lf",
			    &t_eng), 1);
	cr_assert_eq(sscanf(strchr(set.t[1].rows[0].note, ',') + 2, "%lf",
			    &t_lib), 1);
	cr_assert(t_eng > 10.0 && t_eng < 10.2, "%.3f us", t_eng);
	cr_assert(t_lib > 13.0, "%.3f us", t_lib);
	cr_assert_eq(set.t[0].rows[0].scored, 1);
	/* busbw 1.5 x 2048 B / t_eng us */
	cr_assert_float_eq(set.t[0].rows[0].predicted,
			   1.5 * 2048 / t_eng / 1e3, 2e-3);
	valid_set_release(&set);
	tmpdir_remove(dir);
}

/* Both keys, a bad name, a preset that is not there: each an error at
 * the table's key. */
Test(valid_coll, bad_engine_collectives_are_named)
{
	expect_bad("id: BAD\ncollectives: rccl\nengine_collectives: "
		   "vllm-custom-allreduce\n", MI300X_4G,
		   "'engine_collectives' and 'collectives' both name");
	expect_bad("id: BAD\nengine_collectives: ../x\n", MI300X_4G,
		   "'engine_collectives': expected a collectives preset name");
	expect_bad("id: BAD\nengine_collectives: vllm-custom-allreduce-x\n",
		   MI300X_4G, "'engine_collectives: vllm-custom-allreduce-x' of "
		   "this table");
	/* vLLM's custom kernel is an all-reduce only (the engine calls the
	 * library for every other op) */
	expect_bad("id: BAD\nengine_collectives: vllm-custom-allreduce\n",
		   "system: mi300x-roce\nop: allgather\nranks: 4\nrows:\n"
		   "  - [2048, 7.18, 0.43]\n", "'engine_collectives' needs "
		   "'op: allreduce' (an engine's own kernel is an all-reduce "
		   "only), got 'op: allgather'");
	/* a library (rccl.yaml has ring, tree, ... besides direct) or a
	 * release (nccl-2.26.yaml's `preset: nccl`) is not an engine's
	 * kernel */
	expect_bad("id: BAD\nengine_collectives: rccl\n", MI300X_4G,
		   "'engine_collectives': 'rccl' is a library");
	expect_bad("id: BAD\nengine_collectives: openmpi\n", MI300X_4G,
		   "'engine_collectives': 'openmpi' is a library");
	expect_bad("id: BAD\nengine_collectives: nccl-2.26\n", MI300X_4G,
		   "'engine_collectives': 'nccl-2.26' is a release of a "
		   "library");
}

/* A release that starts from itself is a cycle, named as one (it was
 * "more than 4 deep" after following it 5 times). */
Test(valid_coll, a_release_chain_cycle_is_named)
{
	cr_assert_eq(read_release("id: CY\ncollectives: t-rel\n",
				  "preset: t-rel\nname: t-rel\n"), -1);
	cr_assert_has(capture_text(&C), "'collectives': release chain "
		      "t-rel -> t-rel is a cycle");
	cr_assert(!strstr(capture_text(&C), "deep"), "%s",
		  capture_text(&C));
}
