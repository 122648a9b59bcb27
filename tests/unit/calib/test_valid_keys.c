/*
 * test_valid_keys.c - the key and flag checks the reference readers share
 * (valid_check_keys, valid_get_bool): a key a table or row does not take
 * is an error at its line:col with the closest known key; a flag is true
 * or false and nothing else. Before them a typo ('weigths: cold',
 * 'scord: false', 'engine_kernel_max_b') was read as absent and 'flase'
 * as not false: the rows scored or priced as if the key were not there.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "../config/config_testutil.h"
#include "calib/valid.h"
#include "config/cnode.h"

TestSuite(valid_keys, .init = fixture_init, .fini = fixture_fini);

static const char *const keys[] = {"weights", "scored", "kind", NULL};

static struct cnode *parse(const char *text)
{
	struct cnode *n = cnode_parse_yaml(&A, text, strlen(text), "t.yaml",
					   &C.d);

	cr_assert_not_null(n, "%s", capture_text(&C));
	return n;
}

Test(valid_keys, known_keys_pass)
{
	cr_assert_eq(valid_check_keys(parse("{weights: cold, kind: gemm}"),
				      keys, "kernel file", &C.d), 0);
	cr_assert_eq(C.d.errors, 0, "%s", capture_text(&C));
}

/* Two unknown keys: both reported (not only the first), each at its own
 * column; 'weigths' is one transposition from 'weights' (suggested),
 * 'zzz' is near nothing (no suggestion). "{kind: gemm, weigths: cold,
 * zzz: 1}": 'weigths' starts at column 14, 'zzz' at column 29. */
Test(valid_keys, unknown_keys_named_at_their_column)
{
	const char *out;

	cr_assert_eq(valid_check_keys(parse("{kind: gemm, weigths: cold, "
					    "zzz: 1}"), keys, "kernel file",
				      &C.d), -1);
	cr_assert_eq(C.d.errors, 2);
	out = capture_text(&C);
	cr_assert(strstr(out, "t.yaml:1:14: error: 'weigths': unknown key "
			 "in a kernel file; did you mean 'weights'?"), "%s", out);
	cr_assert(strstr(out, "t.yaml:1:29: error: 'zzz': unknown key in a "
			 "kernel file\n"), "%s", out);
}

/* A flag: true 1, false 0, absent the default; 'flase', 'yes' and a
 * list are errors at the value (-1). "{a: true, b: false, c: flase,
 * d: [1]}": c's value at column 24, d's at 34. */
Test(valid_keys, flags_true_or_false_only)
{
	struct cnode *m = parse("{a: true, b: false, c: flase, d: [1]}");
	const char *out;

	cr_assert_eq(valid_get_bool(m, "a", 0, &C.d), 1);
	cr_assert_eq(valid_get_bool(m, "b", 1, &C.d), 0);
	cr_assert_eq(valid_get_bool(m, "absent", 1, &C.d), 1);
	cr_assert_eq(valid_get_bool(m, "absent", 0, &C.d), 0);
	cr_assert_eq(C.d.errors, 0);
	cr_assert_eq(valid_get_bool(m, "c", 0, &C.d), -1);
	cr_assert_eq(valid_get_bool(m, "d", 0, &C.d), -1);
	out = capture_text(&C);
	cr_assert(strstr(out, "t.yaml:1:24: error: 'c': expected true or "
			 "false, got 'flase'"), "%s", out);
	cr_assert(strstr(out, "t.yaml:1:34: error: 'd': expected true or "
			 "false, got a list"), "%s", out);
}
