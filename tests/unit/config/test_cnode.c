/*
 * test_cnode.c - the parsed config tree: positions, aliases, and every
 * kind of bad input the YAML and JSON front ends must refuse cleanly.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "config/cnode.h"
#include "config_testutil.h"
#include "base/arena.h"
#include "base/mem.h"


TestSuite(cnode, .init = fixture_init, .fini = fixture_fini);

static struct cnode *yaml(const char *text)
{
	return cnode_parse_yaml(&A, text, strlen(text), "t.yaml", &C.d);
}

static void yaml_fails(const char *text, const char *msg)
{
	cr_assert_null(yaml(text), "'%s' should be refused", text);
	cr_assert_has(capture_text(&C), msg);
}

Test(cnode, positions_are_one_based)
{
	/* "b:" is line 2 col 1; its sequence's first item "- x" starts at
	 * line 3 col 3 (the '-'), the scalar x at col 5; the flow mapping
	 * {c: 'd'} opens at line 4 col 5 and 'd' sits at col 9. */
	struct cnode *r = yaml("a: 1\nb:\n  - x\n  - {c: 'd'}\n");
	struct cnode *b, *m;

	cr_assert_not_null(r);
	cr_assert_eq(r->kind, CNODE_MAP);
	cr_assert_eq(r->npairs, 2);
	cr_assert_eq(r->pairs[1].key->line, 2);
	cr_assert_eq(r->pairs[1].key->col, 1);
	b = cnode_get(r, "b");
	cr_assert_eq(b->kind, CNODE_SEQ);
	cr_assert_eq(b->nitems, 2);
	cr_assert_eq(b->items[0]->line, 3);
	cr_assert_eq(b->items[0]->col, 5);
	m = b->items[1];
	cr_assert_eq(m->line, 4);
	cr_assert_eq(m->col, 5);
	cr_assert_str_eq(cnode_get(m, "c")->text, "d");
	cr_assert_eq(cnode_get(m, "c")->col, 9);
	cr_assert(cnode_get(m, "c")->quoted);
	cr_assert_not(cnode_get(r, "a")->quoted);
	cr_assert_str_eq(r->file, "t.yaml");
}

Test(cnode, columns_count_characters)
{
	/* "é" is two bytes but one character: the value after "k: é, " in
	 * a flow sequence "[é, x]" at col 4 starts x at col 8. */
	struct cnode *r = yaml("k: [\xc3\xa9, x]\n");

	cr_assert_not_null(r);
	cr_assert_eq(cnode_get(r, "k")->items[1]->col, 8);
}

Test(cnode, aliases_share_the_anchored_node)
{
	struct cnode *r = yaml("base: &b {x: 1}\nuse: *b\nn: &n 5\nm: *n\n");

	cr_assert_not_null(r);
	cr_assert_eq(cnode_get(r, "use"), cnode_get(r, "base"));
	cr_assert_str_eq(cnode_get(r, "m")->text, "5");
}

Test(cnode, alias_to_unknown_anchor)
{
	yaml_fails("a: *nope\n", "t.yaml:1:4: error: alias '*nope' names no "
		   "earlier anchor");
}

Test(cnode, an_anchor_cannot_alias_itself)
{
	/* The anchor is defined when its node ends, so a self-reference
	 * finds nothing and the tree has no cycle. */
	yaml_fails("a: &x [1, *x]\n", "names no earlier anchor");
}

Test(cnode, billion_laughs_is_refused)
{
	/* Nine levels of ten aliases each would expand to 10^9 nodes.
	 * Subtree sizes: a = 11, b = 1 + 10*11 = 111, c = 1111, d = 11111.
	 * Root map + 4 keys + a..d = 1 + 4 + 12344 = 12349 nodes; e's key
	 * and sequence make 12351, and each alias of d adds 11111: the 8th
	 * passes CNODE_MAX_NODES = 100000 (12351 + 8*11111 = 101239). It is
	 * on line 5 at col 8 + 7*4 = 36 ("e: &e [" then "*d, " per alias). */
	static const char *text =
		"a: &a [x, x, x, x, x, x, x, x, x, x]\n"
		"b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
		"c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
		"d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
		"e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
		"f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
		"g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n"
		"h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]\n"
		"i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h, *h]\n";

	yaml_fails(text, "t.yaml:5:36:");
	cr_assert_has(capture_text(&C), "expands to more than 100000 nodes");
}

Test(cnode, modest_alias_use_is_fine)
{
	/* a has 11 nodes (sequence + 10 scalars); b aliases it 10 times:
	 * 1 + 11 + 1 + 10 * 11 = 123 nodes plus keys, far below the cap. */
	struct cnode *r = yaml("a: &a [x, x, x, x, x, x, x, x, x, x]\n"
			       "b: [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n");

	cr_assert_not_null(r);
	cr_assert_eq(cnode_get(r, "b")->nitems, 10);
}

static char *nested(int depth)
{
	char *s = mem_alloc((size_t)depth * 2 + 8);
	int i;

	cr_assert_not_null(s);
	strcpy(s, "a: ");
	for (i = 0; i < depth - 1; i++)
		strcat(s, "[");
	for (i = 0; i < depth - 1; i++)
		strcat(s, "]");
	strcat(s, "\n");
	return s;
}

Test(cnode, nesting_limit)
{
	/* The root mapping is level 1, so depth - 1 brackets make depth
	 * levels: 64 is allowed, 65 is one too many. */
	char *ok = nested(CNODE_MAX_DEPTH), *deep = nested(CNODE_MAX_DEPTH + 1);

	cr_assert_not_null(yaml(ok));
	yaml_fails(deep, "nesting deeper than 64 levels");
	mem_free(ok);
	mem_free(deep);
}

Test(cnode, merge_keys_are_refused)
{
	yaml_fails("base: &b {x: 1}\nuse:\n  <<: *b\n  y: 2\n",
		   "t.yaml:3:3: error: merge keys ('<<') are not supported");
}

Test(cnode, quoted_merge_key_is_an_ordinary_key)
{
	struct cnode *r = yaml("\"<<\": 1\n");

	cr_assert_not_null(r);
	cr_assert_not_null(cnode_get(r, "<<"));
}

Test(cnode, duplicate_keys)
{
	yaml_fails("a: 1\nb: 2\na: 3\n",
		   "t.yaml:3:1: error: 'a': duplicate key; give each key once");
	cr_assert_has(capture_text(&C), "t.yaml:1:1: note: 'a' was first "
		      "given here");
}

Test(cnode, duplicate_keys_in_a_large_mapping)
{
	/* 20 keys takes the sorted path (more than 16); k7 repeats at
	 * line 21. */
	char text[512] = "";
	int i;

	for (i = 0; i < 20; i++)
		sprintf(text + strlen(text), "k%d: %d\n", i, i);
	strcat(text, "k7: again\n");
	yaml_fails(text, "t.yaml:21:1: error: 'k7': duplicate key");
	cr_assert_has(capture_text(&C), "t.yaml:8:1: note");
}

Test(cnode, keys_must_be_scalars)
{
	/* Keys around it, so the duplicate check walks a mapping that
	 * once kept the refused key (and crashed on its missing text). */
	yaml_fails("a: 1\n? [a, b]\n: 1\nb: 2\n", "t.yaml:2:3: error: a "
		   "mapping key must be a plain name, got a sequence");
}

Test(cnode, one_document_only)
{
	yaml_fails("a: 1\n---\nb: 2\n", "t.yaml:2:1: error: a second "
		   "document");
}

Test(cnode, syntax_error_has_a_position)
{
	/* libyaml stops at the end of input, line 2, looking for ']'. */
	yaml_fails("a: [1, 2\n", "t.yaml:2:1: error: invalid YAML");
}

Test(cnode, tabs_get_a_hint)
{
	yaml_fails("a:\n\tb: 1\n", "t.yaml:2:1: error: invalid YAML: found "
		   "character that cannot start any token");
	cr_assert_has(capture_text(&C), "tabs cannot indent YAML");
}

Test(cnode, invalid_utf8)
{
	/* 0xff can start no UTF-8 sequence; it is the 4th character. */
	yaml_fails("a: \xff\n", "t.yaml:1:4: error: invalid UTF-8 (byte 0xff)");
}

Test(cnode, overlong_utf8)
{
	/* 0xc0 0xaf is an overlong '/', which UTF-8 forbids. */
	yaml_fails("a: x\nb: \xc0\xaf\n", "t.yaml:2:4: error: invalid UTF-8");
}

Test(cnode, nul_byte)
{
	/* The NUL is the 5th character of line 1. */
	cr_assert_null(cnode_parse_yaml(&A, "a: 1\0b", 6, "t.yaml", &C.d));
	cr_assert_has(capture_text(&C), "t.yaml:1:5: error: NUL byte");
}

Test(cnode, escaped_nul_in_a_string)
{
	yaml_fails("a: \"x\\0y\"\n", "t.yaml:1:4: error: a NUL character");
}

Test(cnode, control_characters)
{
	yaml_fails("a: \x01\n", "t.yaml:1:4: error: control character U+0001");
}

Test(cnode, empty_text_is_a_null_scalar)
{
	/* For --set values and tests: YAML reads nothing as null. */
	struct cnode *r = yaml("");

	cr_assert_not_null(r);
	cr_assert_eq(r->kind, CNODE_SCALAR);
	cr_assert_str_eq(r->text, "");
}

static struct cnode *load_file(const char *name, const char *text,
			       size_t len, int json)
{
	char dir[64], path[256];
	struct cnode *r;

	tmpdir_make(dir);
	write_file(path, dir, name, text, len);
	r = json ? cnode_load_json(&A, path, &C.d)
		 : cnode_load_yaml(&A, path, &C.d);
	tmpdir_remove(dir);
	return r;
}

Test(cnode, empty_files_are_empty_documents)
{
	static const char *const texts[] = {"", "  \n\n", "# only a comment\n",
					    "---\n", "---\n...\n"};
	size_t i;

	for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
		cr_assert_null(load_file("e.yaml", texts[i], strlen(texts[i]),
					 0));
	cr_assert_null(load_file("e.json", " \n", 2, 1));
	cr_assert_has(capture_text(&C), "e.yaml:1:1: error: expected a "
		      "mapping, got an empty document");
	cr_assert_has(capture_text(&C), "e.json:1:1: error: expected a "
		      "mapping, got an empty document");
}

Test(cnode, missing_file_and_directory)
{
	cr_assert_null(cnode_load_yaml(&A, "/nonexistent/x.yaml", &C.d));
	cr_assert_has(capture_text(&C), "/nonexistent/x.yaml: error: cannot "
		      "read: No such file or directory");
	cr_assert_null(cnode_load_json(&A, "/tmp", &C.d));
	cr_assert_has(capture_text(&C), "/tmp: error: is a directory");
}

static struct cnode *json(const char *text)
{
	return load_file("m.json", text, strlen(text), 1);
}

static void json_fails(const char *text, const char *msg)
{
	cr_assert_null(json(text), "'%s' should be refused", text);
	cr_assert_has(capture_text(&C), msg);
}

Test(cnode, json_positions_and_values)
{
	/* Line 2: `  "hidden_size": 4096,` - key at col 3, value at col
	 * 18. Line 3: `  "act": "silu",` - value at col 10. */
	struct cnode *r = json("{\n  \"hidden_size\": 4096,\n  \"act\": \"silu\","
			       "\n  \"eps\": 1e-05,\n  \"tie\": true,\n  \"q\":"
			       " null,\n  \"list\": [1, {\"a\": 2}]\n}\n");
	struct cnode *v;

	cr_assert_not_null(r, "%s", capture_text(&C));
	cr_assert_eq(r->kind, CNODE_MAP);
	cr_assert_eq(r->line, 1);
	cr_assert_eq(r->col, 1);
	cr_assert_eq(r->pairs[0].key->line, 2);
	cr_assert_eq(r->pairs[0].key->col, 3);
	v = cnode_get(r, "hidden_size");
	cr_assert_str_eq(v->text, "4096");
	cr_assert_not(v->quoted);
	cr_assert_eq(v->line, 2);
	cr_assert_eq(v->col, 18);
	v = cnode_get(r, "act");
	cr_assert(v->quoted);
	cr_assert_eq(v->col, 10);
	/* Numbers keep their source text, not cJSON's double. */
	cr_assert_str_eq(cnode_get(r, "eps")->text, "1e-05");
	cr_assert_str_eq(cnode_get(r, "tie")->text, "true");
	cr_assert_str_eq(cnode_get(r, "q")->text, "null");
	v = cnode_get(r, "list");
	cr_assert_eq(v->kind, CNODE_SEQ);
	cr_assert_eq(v->items[1]->kind, CNODE_MAP);
	/* Line 7: `  "list": [1, {"a": 2}]`: the inner object is at col
	 * 15, its value 2 at col 21. */
	cr_assert_eq(v->items[1]->col, 15);
	cr_assert_eq(cnode_get(v->items[1], "a")->col, 21);
}

Test(cnode, json_escapes_decode)
{
	/* \u00e9 is é (UTF-8 c3 a9); a surrogate pair \ud83d\ude00 is
	 * U+1F600 (f0 9f 98 80). */
	struct cnode *r = json("{\"a\": \"caf\\u00e9\", \"b\": \"\\ud83d\\ude00\"}");

	cr_assert_not_null(r);
	cr_assert_str_eq(cnode_get(r, "a")->text, "caf\xc3\xa9");
	cr_assert_str_eq(cnode_get(r, "b")->text, "\xf0\x9f\x98\x80");
}

Test(cnode, json_syntax_errors)
{
	json_fails("{\n  \"a\": 1\n  \"b\": 2\n}\n", "m.json:3:3: error: "
		   "invalid JSON: expected ',' or '}' after a member, got '\"'");
	json_fails("{\"a\": 1,}", "m.json:1:9: error: invalid JSON: expected "
		   "a key in double quotes, got '}'");
	json_fails("{\"a\": \"x", "m.json:1:9: error: invalid JSON: expected "
		   "'\"' to close the string, got the end of the file");
	json_fails("{\"a\": 01}", "m.json:1:8: error: invalid JSON: expected "
		   "',' or '}' after a member, got '1'");
	json_fails("{\"a\": tru}", "m.json:1:10: error: invalid JSON");
	json_fails("{} {}", "m.json:1:4: error: invalid JSON: expected the "
		   "end of the file");
	json_fails("{\"a\": \"\\ud800\"}", "expected '\\u' and a low surrogate");
	json_fails("{\"a\": \"\\u0000\"}", "other than \\u0000");
}

Test(cnode, json_limits)
{
	/* 64 characters of number: one more than cJSON reads. */
	char text[128];

	snprintf(text, sizeof(text), "{\"a\": 1%063d}", 0);
	json_fails(text, "a number of at most 63 characters");
	json_fails("{\"a\": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
		   "[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"
		   "]]]]]]]]]]]]]]]]]]]]]]]]]}", "nesting deeper than 64");
}

Test(cnode, json_duplicate_keys)
{
	json_fails("{\"a\": 1,\n \"a\": 2}", "m.json:2:2: error: 'a': "
		   "duplicate key");
}

Test(cnode, json_bad_bytes)
{
	json_fails("{\"a\": \"\xfe\"}", "m.json:1:8: error: invalid UTF-8");
}

Test(cnode, print)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	struct cnode *r = yaml("a: 1\nb: [x, 'y z']\nc: {d: {}}\ne: []\n");

	cr_assert_not_null(r);
	cnode_print(f, r, 0);
	fclose(f);
	cr_assert_str_eq(out, "a: 1\nb:\n  - x\n  - \"y z\"\nc:\n  d: {}\n"
			 "e: []\n");
	free(out);
}

/* Fail the n-th allocation for n = 0, 1, 2, ... until parsing succeeds:
 * every failure must come back NULL with "out of memory" reported. */
static void sweep(struct cnode *(*parse)(void))
{
	long n;

	for (n = 0;; n++) {
		struct cnode *r;

		arena_release(&A);
		C.d.errors = C.d.oom = 0;
		mem_fail_after(n);
		r = parse();
		mem_fail_after(-1);
		if (r)
			break;
		cr_assert_eq(C.d.oom, 1, "n = %ld: %u oom reports", n, C.d.oom);
		cr_assert_eq(C.d.errors, 1, "n = %ld: %s", n, capture_text(&C));
		cr_assert(n < 10000, "allocation sweep did not converge");
	}
	cr_assert_gt(n, 0);
	assert_no_leaks();
}

static struct cnode *parse_yaml_sample(void)
{
	return yaml("a: &x {b: [1, 2, {c: d}]}\ne: *x\nf: 'g'\n");
}

Test(cnode, yaml_out_of_memory_sweep)
{
	sweep(parse_yaml_sample);
}

static char json_dir[64], json_path[256];

static struct cnode *parse_json_sample(void)
{
	return cnode_load_json(&A, json_path, &C.d);
}

Test(cnode, json_out_of_memory_sweep)
{
	static const char text[] = "{\"a\": [1, 2, {\"b\": \"c\"}], \"d\": 1e3}";

	tmpdir_make(json_dir);
	write_file(json_path, json_dir, "s.json", text, strlen(text));
	sweep(parse_json_sample);
	tmpdir_remove(json_dir);
}
