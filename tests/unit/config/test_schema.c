/*
 * test_schema.c - the schema walk on small test-only tables: every field
 * type, defaults, bounds, enums, aliases, unknown keys, and the exact
 * diagnostics; printing back and the table checker.
 */
#include <cJSON.h>
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "config/cnode.h"
#include "config/config.h"
#include "config_testutil.h"
#include "base/arena.h"
#include "base/mem.h"
#include "config/schema.h"

struct inner {
	int64_t depth;			/* levels */
	double weight;			/* ratio */
};

struct thing {
	const char *name;
	int64_t count;
	double ratio;
	int flag;
	int color;
	double size_B;
	double bw_Bps;
	double time_s;
	double rate_flops;
	double clock_hz;
	struct schema_int_list sizes;
	struct inner inner;
	struct inner extra;
	int opt_flag;
	int opt_color;
	int64_t big;
	int checks;			/* times thing_check ran (not a key) */
};

static const char *const colors[] = {"red", "green", "blue", NULL};
static const char *const count_aliases[] = {"num_things", NULL};
static const char *const skipped[] = {"torch_dtype", NULL};

static const struct schema_field inner_fields[] = {
	{ .key = "depth", .type = ST_INT, .offset = offsetof(struct inner, depth),
	  .def = "2", .min = 1, .max = 10, .help = "levels" },
	{ .key = "weight", .type = ST_NUM,
	  .offset = offsetof(struct inner, weight), .def = "1", .help = "w" },
};

static const struct schema inner_schema = {
	.kind = "thing.inner", .help = "inner settings",
	.size = sizeof(struct inner), .fields = inner_fields,
	.nfields = SCHEMA_COUNT(inner_fields),
};

#define OFF(m) offsetof(struct thing, m)

static const struct schema_field thing_fields[] = {
	{ .key = "name", .type = ST_STRING, .offset = OFF(name),
	  .flags = SF_OPTIONAL, .help = "a name" },
	{ .key = "count", .type = ST_INT, .offset = OFF(count), .def = "4",
	  .min = 1, .max = 64, .aliases = count_aliases, .help = "how many" },
	{ .key = "ratio", .type = ST_NUM, .offset = OFF(ratio), .def = "0.5",
	  .min = 0, .max = 1, .flags = SF_MIN_EXCL, .help = "a fraction" },
	{ .key = "flag", .type = ST_BOOL, .offset = OFF(flag), .def = "false",
	  .help = "on or off" },
	{ .key = "color", .type = ST_ENUM, .offset = OFF(color),
	  .values = colors, .def = "green", .help = "a color" },
	{ .key = "size", .type = ST_BYTES, .offset = OFF(size_B),
	  .flags = SF_REQUIRED, .help = "a size" },
	{ .key = "bw", .type = ST_BANDWIDTH, .offset = OFF(bw_Bps),
	  .flags = SF_OPTIONAL | SF_MIN_EXCL, .help = "a bandwidth" },
	{ .key = "time", .type = ST_TIME, .offset = OFF(time_s), .def = "1 us",
	  .max = 1e-3, .help = "a time" },
	{ .key = "rate", .type = ST_FLOPS, .offset = OFF(rate_flops),
	  .flags = SF_OPTIONAL, .help = "a rate" },
	{ .key = "clock", .type = ST_FREQ, .offset = OFF(clock_hz),
	  .flags = SF_OPTIONAL, .help = "a clock" },
	{ .key = "sizes", .type = ST_INT_LIST, .offset = OFF(sizes),
	  .min = 1, .max = 1024, .flags = SF_OPTIONAL, .help = "a list" },
	{ .key = "inner", .type = ST_SECTION, .offset = OFF(inner),
	  .sub = &inner_schema, .help = "a section" },
	{ .key = "extra", .type = ST_SECTION, .offset = OFF(extra),
	  .sub = &inner_schema, .flags = SF_OPTIONAL, .help = "optional" },
	{ .key = "opt_flag", .type = ST_BOOL, .offset = OFF(opt_flag),
	  .flags = SF_OPTIONAL, .help = "unset = -1" },
	{ .key = "opt_color", .type = ST_ENUM, .offset = OFF(opt_color),
	  .values = colors, .flags = SF_OPTIONAL, .help = "unset = -1" },
	{ .key = "big", .type = ST_INT, .offset = OFF(big),
	  .flags = SF_OPTIONAL, .help = "unbounded" },
};

/* Counts its runs; refuses a red thing with more than 32 of them. */
static int thing_check(void *obj, const struct schema_at *at, struct diag *d)
{
	const struct cnode *node = at->map;
	struct thing *t = obj;

	t->checks++;
	if (t->color == 0 && t->count > 32) {
		diag_error(d, node->file, node->line, node->col,
			   "'count': at most 32 red things");
		return -1;
	}
	return 0;
}

static const struct schema thing_schema = {
	.kind = "thing", .help = "a test thing", .size = sizeof(struct thing),
	.fields = thing_fields, .nfields = SCHEMA_COUNT(thing_fields),
	.check = thing_check, .ignored_keys = skipped,
};

struct holder {
	const struct thing *thing;
};

static const struct schema_field holder_fields[] = {
	{ .key = "thing", .type = ST_REF, .offset = offsetof(struct holder, thing),
	  .sub = &thing_schema, .flags = SF_REQUIRED, .help = "a reference" },
};

static const struct schema holder_schema = {
	.kind = "holder", .help = "holds a thing", .size = sizeof(struct holder),
	.fields = holder_fields, .nfields = SCHEMA_COUNT(holder_fields),
};


TestSuite(schema, .init = fixture_init, .fini = fixture_fini);

/* Load text as a thing (or any kind s into obj); returns schema_load's
 * status. */
static int load_as(const struct schema *s, const char *text, void *obj)
{
	struct cnode *n = cnode_parse_yaml(&A, text, strlen(text), "t.yaml",
					   &C.d);

	cr_assert_not_null(n, "%s", capture_text(&C));
	memset(obj, 0, s->size);
	return schema_load(s, n, &A, &C.d, obj);
}

static void load_ok(const char *text, struct thing *t)
{
	cr_assert_eq(load_as(&thing_schema, text, t), 0, "%s",
		     capture_text(&C));
}

static void load_err(const char *text, const char *msg)
{
	struct thing t;

	cr_assert_eq(load_as(&thing_schema, text, &t), -1, "'%s' loaded", text);
	cr_assert_has(capture_text(&C), msg);
}

Test(schema, defaults_apply_when_absent)
{
	struct thing t;

	load_ok("size: 80 GB\n", &t);
	cr_assert_null(t.name);
	cr_assert_eq(t.count, 4);
	cr_assert_eq(t.ratio, 0.5);
	cr_assert_eq(t.flag, 0);
	cr_assert_eq(t.color, 1);		/* green */
	/* "1 us" parsed as the user's text: 1 / 1e6 s. */
	cr_assert_eq(t.time_s, 1.0 / 1e6);
	cr_assert_eq(t.bw_Bps, 0);
	cr_assert_eq(t.sizes.n, 0);
	cr_assert_eq(t.inner.depth, 2);		/* section defaults apply */
	cr_assert_eq(t.inner.weight, 1);
	cr_assert_eq(t.extra.depth, 2);
	cr_assert_eq(t.opt_flag, -1);		/* optional bool unset */
	cr_assert_eq(t.opt_color, -1);		/* optional enum unset */
	cr_assert_eq(t.checks, 1);
}

Test(schema, worked_values)
{
	struct thing t;

	load_ok("name: x\ncount: 8\nratio: 0.25\nflag: true\ncolor: blue\n"
		"size: 64 GiB\nbw: 400 Gbit/s\ntime: 600 ns\nrate: 989 TFLOP/s\n"
		"clock: 2100 MHz\nsizes: [1, 2, 1024]\ninner: {depth: 10}\n"
		"opt_flag: false\nopt_color: red\nbig: -9223372036854775808\n",
		&t);
	cr_assert_str_eq(t.name, "x");
	cr_assert_eq(t.count, 8);
	cr_assert_eq(t.ratio, 0.25);
	cr_assert_eq(t.flag, 1);
	cr_assert_eq(t.color, 2);
	/* 64 GiB = 64 * 2^30 = 68719476736 B. */
	cr_assert_eq(t.size_B, 68719476736.0);
	/* 400 Gbit/s = 400e9 / 8 = 50e9 B/s. */
	cr_assert_eq(t.bw_Bps, 50e9);
	/* 600 ns = 600 / 1e9 s. */
	cr_assert_eq(t.time_s, 600.0 / 1e9);
	cr_assert_eq(t.rate_flops, 989e12);
	cr_assert_eq(t.clock_hz, 2.1e9);
	cr_assert_eq(t.sizes.n, 3);
	cr_assert_eq(t.sizes.v[2], 1024);
	cr_assert_eq(t.inner.depth, 10);
	cr_assert_eq(t.opt_flag, 0);
	cr_assert_eq(t.opt_color, 0);
	cr_assert_eq(t.big, INT64_MIN);
}

Test(schema, quoted_quantities_are_fine)
{
	struct thing t;

	load_ok("size: \"80 GB\"\n", &t);
	cr_assert_eq(t.size_B, 80e9);
}

Test(schema, integer_errors)
{
	/* "count: abc": the value starts at col 8. The example is the
	 * default, 4. */
	load_err("size: 1 GB\ncount: abc\n", "t.yaml:2:8: error: 'count': "
		 "expected an integer such as 4, got 'abc'");
	load_err("size: 1 GB\ncount: \"8\"\n", "t.yaml:2:8: error: 'count': "
		 "expected an integer such as 4, got '8' (a quoted string; "
		 "write it without quotes)");
	/* a plain 8 tagged !!str, and a block scalar ("|-": the text "8"
	 * without its newline), are strings too, but not quoted ones */
	load_err("size: 1 GB\ncount: !!str 8\n", "got '8' (tagged !!str, "
		 "which makes it a string; drop the tag)");
	load_err("size: 1 GB\ncount: |-\n  8\n", "got '8' (a block scalar, "
		 "| or >, which is a string; write the value plain after the "
		 "key)");
	load_err("size: 1 GB\ncount: 0\n", "'count': expected an integer from "
		 "1 to 64, got '0'");
	load_err("size: 1 GB\ncount: 65\n", "from 1 to 64, got '65'");
	load_err("size: 1 GB\ncount: 2.5\n", "got '2.5'");
	load_err("size: 1 GB\ncount: 0x10\n", "got '0x10'");
	load_err("size: 1 GB\ncount: 010\n", "got '010' (no leading zeros");
	load_err("size: 1 GB\ncount: {a: 1}\n", "got a mapping");
	load_err("size: 1 GB\ncount: [1]\n", "got a sequence");
	/* INT64_MAX + 1 = 9223372036854775808 does not fit. */
	load_err("size: 1 GB\nbig: 9223372036854775808\n", "'big': expected an "
		 "integer that fits in 64 bits, got '9223372036854775808'");
	load_err("size: 1 GB\nbig: 99999999999999999999999999\n",
		 "fits in 64 bits");
}

Test(schema, number_errors)
{
	load_err("size: 1 GB\nratio: 1e400\n", "'ratio': expected a number "
		 "such as 0.5, got '1e400' (out of range)");
	/* ratio is in (0, 1]: 0 is out, 1 is in. */
	load_err("size: 1 GB\nratio: 0\n", "'ratio': expected a number greater "
		 "than 0 and at most 1, got '0'");
	load_err("size: 1 GB\nratio: .inf\n", "got '.inf'");
	load_err("size: 1 GB\nratio: nan\n", "got 'nan'");
	load_err("size: 1 GB\nratio: '0.5'\n", "(a quoted string");
}

/* A ST_NUM field flagged SF_WHOLE (a count kept in a double, as a GPU's
 * per-dtype cutlass_moe_tile_m) takes whole numbers only: a fraction is
 * an error at the value (col 7 of "tile: 64.5"), named by the type. */
static const struct schema_field whole_fields[] = {
	{ .key = "tile", .type = ST_NUM, .offset = 0, .min = 1,
	  .max = 65536, .flags = SF_OPTIONAL | SF_WHOLE, .help = "rows" },
};

static const struct schema whole_schema = {
	.kind = "whole", .help = "a whole number", .size = sizeof(double),
	.fields = whole_fields, .nfields = SCHEMA_COUNT(whole_fields),
};

Test(schema, whole_numbers)
{
	double v;

	cr_assert_eq(load_as(&whole_schema, "tile: 64\n", &v), 0, "%s",
		     capture_text(&C));
	cr_assert_eq(v, 64);
	cr_assert_eq(load_as(&whole_schema, "tile: 6.4e1\n", &v), 0);
	cr_assert_eq(v, 64);
	cr_assert_eq(load_as(&whole_schema, "tile: 64.5\n", &v), -1);
	cr_assert_has(capture_text(&C), "t.yaml:1:7: error: 'tile': expected "
		      "a whole number such as 8, got '64.5'");
	cr_assert_eq(load_as(&whole_schema, "tile: 0\n", &v), -1);
	cr_assert_has(capture_text(&C), "'tile': expected a whole number from "
		      "1 to 65536, got '0'");
	cr_assert_eq(load_as(&whole_schema, "tile: nan\n", &v), -1);
}

/* SF_ZERO_OFF: a "0 = none" rate whose other values have a floor (the
 * collective libraries' channel rates, a system's host copy rates: 1
 * GB/s). 0 loads, as does the floor itself; 999 MB/s and 1 B/s are
 * range errors at the value (col 5 of "bw: 1 B/s") that say 0 is
 * allowed; the ceiling still holds. A flag without a positive min is a
 * table error. */
static const struct schema_field floor_fields[] = {
	{ .key = "bw", .type = ST_BANDWIDTH, .offset = 0, .def = "0 B/s",
	  .min = 1e9, .max = 1e12, .flags = SF_ZERO_OFF, .help = "a rate" },
};

static const struct schema floor_schema = {
	.kind = "floor", .help = "a rate, 0 or >= 1 GB/s",
	.size = sizeof(double), .fields = floor_fields,
	.nfields = SCHEMA_COUNT(floor_fields),
};

static const struct schema_field floorless_fields[] = {
	{ .key = "bw", .type = ST_BANDWIDTH, .offset = 0, .def = "0 B/s",
	  .max = 1e12, .flags = SF_ZERO_OFF, .help = "a rate" },
};

static const struct schema floorless_schema = {
	.kind = "floorless", .help = "SF_ZERO_OFF without a floor",
	.size = sizeof(double), .fields = floorless_fields,
	.nfields = SCHEMA_COUNT(floorless_fields),
};

Test(schema, zero_off_floor)
{
	double v = -1;

	cr_assert_eq(load_as(&floor_schema, "{}\n", &v), 0, "%s",
		     capture_text(&C));
	cr_assert_eq(v, 0);
	cr_assert_eq(load_as(&floor_schema, "bw: 0 GB/s\n", &v), 0);
	cr_assert_eq(v, 0);
	cr_assert_eq(load_as(&floor_schema, "bw: 1 GB/s\n", &v), 0);
	cr_assert_eq(v, 1e9);
	cr_assert_eq(load_as(&floor_schema, "bw: 1 B/s\n", &v), -1);
	/* the 0 with a unit: the bare "0" the text said is "missing unit"
	 * to the unit parser */
	cr_assert_has(capture_text(&C), "t.yaml:1:5: error: 'bw': expected 0 "
		      "GB/s (none) or a bandwidth from 1 GB/s to 1000 GB/s, "
		      "got '1 B/s'");
	cr_assert_eq(load_as(&floor_schema, "bw: 0\n", &v), -1);
	cr_assert_has(capture_text(&C), "missing unit");
	cr_assert_eq(load_as(&floor_schema, "bw: 999 MB/s\n", &v), -1);
	cr_assert_eq(load_as(&floor_schema, "bw: 2 TB/s\n", &v), -1);
	cr_assert_eq(schema_check_table(&floor_schema, &C.d), 0);
	cr_assert_neq(schema_check_table(&floorless_schema, &C.d), 0);
}

Test(schema, numbers_in_yaml_float_forms)
{
	struct thing t;

	load_ok("size: 1 GB\nratio: .5\ninner: {weight: -2.5e-3}\n", &t);
	cr_assert_eq(t.ratio, 0.5);
	cr_assert_eq(t.inner.weight, -2.5e-3);
}

Test(schema, bool_and_enum_errors)
{
	load_err("size: 1 GB\nflag: yes\n", "'flag': expected true or false, "
		 "got 'yes'");
	load_err("size: 1 GB\nflag: 'true'\n", "(a quoted string");
	load_err("size: 1 GB\ncolor: bleu\n", "'color': expected one of red, "
		 "green, blue, got 'bleu'; did you mean 'blue'?");
	load_err("size: 1 GB\ncolor: Red\n", "did you mean 'red'?");
	load_err("size: 1 GB\ncolor: purple\n", "got 'purple'\n");
}

Test(schema, quantity_errors)
{
	load_err("size: 80\n", "t.yaml:1:7: error: 'size': expected a size such "
		 "as '80 GB', got '80': missing unit");
	load_err("size: 80 GBs\n", "got '80 GBs': unknown size unit");
	load_err("size: -1 GB\n", "got '-1 GB': must not be negative");
	load_err("size: 1 GB\nbw: 400 GBps\n", "'bw': expected a bandwidth "
		 "such as '450 GB/s', got '400 GBps': unknown bandwidth unit");
	load_err("size: 1 GB\nbw: 400 GBps\n", "write 'GB/s' for bytes per "
		 "second or 'Gbit/s' for bits per second");
	/* time has max 1 ms and the implicit lower bound 0. */
	load_err("size: 1 GB\ntime: 5 ms\n", "'time': expected a time from 0 s "
		 "to 1 ms, got '5 ms'");
	/* bw > 0: its bound is printed as units_format(0) = "0 GB/s". */
	load_err("size: 1 GB\nbw: 0 GB/s\n", "'bw': expected a bandwidth "
		 "greater than 0 GB/s, got '0 GB/s'");
	load_err("size: 1 GB\nrate: 1e40 FLOP/s\n", "out of range");
}

Test(schema, bits_for_a_size_warn)
{
	struct thing t;

	/* 80 Gb = 80e9 bits = 10e9 B = 10 GB: legal but suspicious. */
	load_ok("size: 80 Gb\n", &t);
	cr_assert_eq(t.size_B, 10e9);
	cr_assert_eq(C.d.warnings, 1);
	cr_assert_has(capture_text(&C), "t.yaml:1:7: warning: 'size': '80 Gb' "
		      "is in bits, which is 10 GB; write B for bytes");
}

Test(schema, nulls_are_errors)
{
	load_err("size: 1 GB\ncount: ~\n", "'count': expected an integer such as "
		 "4, got null (remove the key to use the default '4')");
	load_err("size:\n", "'size': expected a size such as '80 GB', got null "
		 "(the key is required)");
	load_err("size: 1 GB\nname: null\n", "'name': expected a string, got "
		 "null (remove the key to leave it unset)");
}

Test(schema, required_keys)
{
	load_err("count: 2\n", "t.yaml:1:1: error: 'size': expected a size such "
		 "as '80 GB', got nothing (the key is required)");
}

Test(schema, unknown_keys)
{
	load_err("size: 1 GB\nszie: 2 GB\n", "t.yaml:2:1: error: 'szie': "
		 "unknown key, did you mean 'size'?");
	load_err("size: 1 GB\ninner: {dpeth: 3}\n", "t.yaml:2:9: error: "
		 "'inner.dpeth': unknown key, did you mean 'depth'?");
	load_err("size: 1 GB\nzzzzzz: 1\n", "'zzzzzz': unknown key\n");
	cr_assert_has(capture_text(&C), "t.yaml:2:1: note: valid keys here: "
		      "name, count, ratio");
	load_err("size: 1 GB\npreset: x\n", "'preset: NAME' works only");
}

Test(schema, aliases_and_ignored_keys)
{
	struct thing t;

	load_ok("size: 1 GB\nnum_things: 3\ntorch_dtype: bfloat16\n", &t);
	cr_assert_eq(t.count, 3);
	load_err("size: 1 GB\ncount: 3\nnum_things: 4\n", "t.yaml:3:1: error: "
		 "'num_things': sets 'count' again (given as 'count' at line "
		 "2); give it once");
}

Test(schema, sections_and_lists)
{
	load_err("size: 1 GB\ninner: 5\n", "'inner': expected a mapping (inner "
		 "settings), got '5'");
	load_err("size: 1 GB\ninner: {depth: x}\n", "'inner.depth': expected "
		 "an integer such as 2, got 'x'");
	load_err("size: 1 GB\nsizes: [1, x]\n", "'sizes[1]': expected an "
		 "integer such as 8, got 'x'");
	load_err("size: 1 GB\nsizes: [1, 2048]\n", "'sizes[1]': expected an "
		 "integer from 1 to 1024, got '2048'");
	load_err("size: 1 GB\nsizes: 5\n", "'sizes': expected a list of "
		 "integers such as [1, 2, 4], got '5'");
}

Test(schema, not_a_mapping)
{
	load_err("- a\n- b\n", "t.yaml:1:1: error: expected a mapping (a test "
		 "thing), got a sequence");
}

Test(schema, every_error_reported_and_check_skipped)
{
	struct thing t;

	/* Four independent mistakes: four errors, and no check() on a
	 * half-loaded object. */
	cr_assert_eq(load_as(&thing_schema, "size: 80\ncount: 0\ncolor: x\n"
			     "nope: 1\n", &t), -1);
	cr_assert_eq(C.d.errors, 4, "%s", capture_text(&C));
	cr_assert_eq(t.checks, 0);
}

Test(schema, check_runs_after_fields)
{
	struct thing t;

	cr_assert_eq(load_as(&thing_schema, "size: 1 GB\ncolor: red\n"
			     "count: 33\n", &t), -1);
	cr_assert_eq(t.checks, 1);
	cr_assert_has(capture_text(&C), "at most 32 red things");
}

Test(schema, error_count_is_capped)
{
	char text[4096] = "size: 1 GB\n";
	struct thing t;
	int i;

	/* 150 unknown keys: the first 100 are reported, then a note. */
	for (i = 0; i < 150; i++)
		sprintf(text + strlen(text), "bad%d: 1\n", i);
	cr_assert_eq(load_as(&thing_schema, text, &t), -1);
	cr_assert_eq(C.d.errors, 100);
	cr_assert_has(capture_text(&C), "too many errors; stopped after 100");
}

Test(schema, references_are_mappings_by_now)
{
	struct holder h;

	cr_assert_eq(load_as(&holder_schema, "thing: {size: 2 GB}\n", &h), 0);
	cr_assert_eq(h.thing->size_B, 2e9);
	cr_assert_eq(h.thing->count, 4);
	/* A scalar is a reference config_load could not resolve and has
	 * reported: the load fails without another message. */
	cr_assert_eq(load_as(&holder_schema, "thing: some-preset\n", &h), -1);
	cr_assert_eq(C.d.errors, 0);
	/* Errors inside name the whole path. */
	cr_assert_eq(load_as(&holder_schema, "thing: {size: 2}\n", &h), -1);
	cr_assert_has(capture_text(&C), "'thing.size': expected a size");
}

static int load_json(const char *text, struct thing *t)
{
	char dir[64], path[256];
	struct cnode *n;

	tmpdir_make(dir);
	write_file(path, dir, "t.json", text, strlen(text));
	n = cnode_load_json(&A, path, &C.d);
	tmpdir_remove(dir);
	cr_assert_not_null(n, "%s", capture_text(&C));
	memset(t, 0, sizeof(*t));
	return schema_load(&thing_schema, n, &A, &C.d, t);
}

Test(schema, json_is_lenient_for_a_foreign_format)
{
	struct thing t;

	/* The kind has ignored_keys, so a JSON file (Hugging Face's format)
	 * may carry keys we do not know and nulls for "absent". */
	cr_assert_eq(load_json("{\"size\": \"1 GB\", \"other\": {\"x\": 1}, "
			       "\"count\": null}", &t), 0, "%s",
		     capture_text(&C));
	cr_assert_eq(t.count, 4);
	/* Known keys are still checked, at their JSON position. */
	cr_assert_eq(load_json("{\n  \"size\": \"1 GB\",\n  \"count\": \"8\"\n}",
			       &t), -1);
	cr_assert_has(capture_text(&C), "t.json:3:12: error: 'count': expected "
		      "an integer such as 4, got '8' (a quoted string");
}

Test(schema, did_you_mean)
{
	static const char *const keys[] = {"nodes", "gpus_per_node", "tp",
					    "bf16", "scale_out"};

	/* One substitution, one transposition, case only. */
	cr_assert_str_eq(schema_closest("nodez", keys, 5), "nodes");
	cr_assert_str_eq(schema_closest("bf61", keys, 5), "bf16");
	cr_assert_str_eq(schema_closest("TP", keys, 5), "tp");
	cr_assert_str_eq(schema_closest("gpu_per_node", keys, 5),
			 "gpus_per_node");
	/* Too far: 'xyz' is 3 edits from 'tp' and short words allow 1. */
	cr_assert_null(schema_closest("xyz", keys, 5));
	cr_assert_null(schema_closest("anything", keys, 0));
}

static char *yaml_of(const struct schema *s, const void *obj)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	schema_print_yaml(f, s, obj, 0);
	fclose(f);
	return out;
}

Test(schema, yaml_round_trip)
{
	struct thing a, b;
	char *text;

	/* Awkward values on purpose: a string with a word YAML reads as a
	 * bool and the characters YAML reads as line breaks even inside
	 * quotes (NEL, LS, PS), a third that needs 17 digits, a time that
	 * is not a round ns. */
	load_ok("name: \"yes \\N\\L\\P\\uFEFF\\t\\\\ \\\"\"\ncount: 7\nratio: 0.3333333333333333\nflag: true\n"
		"size: 1.5 GiB\nbw: 12.5 Gbit/s\ntime: 333.3 ns\nclock: 1.7 GHz\n"
		"sizes: [3, 1]\nextra: {weight: 0.1}\nopt_color: blue\n"
		"big: -42\n", &a);
	text = yaml_of(&thing_schema, &a);
	load_ok(text, &b);
	assert_same(&thing_schema, &a, &b);
	/* The optional extra section is printed because it differs from
	 * its defaults; unset optionals (rate) are left out. */
	cr_assert_has(text, "extra:\n  depth: 2\n  weight: 0.1\n");
	cr_assert(strstr(text, "rate") == NULL);
	cr_assert_has(text, "name: \"yes \\N\\L\\P\\uFEFF\\t\\\\ \\\"\"\n");
	free(text);
}

Test(schema, json_is_si_in_schema_order)
{
	struct thing t;
	cJSON *j;
	char *s;

	load_ok("size: 2 GiB\ntime: 1.5 us\ncolor: blue\n", &t);
	j = schema_to_json(&thing_schema, &t);
	cr_assert_not_null(j);
	s = cJSON_PrintUnformatted(j);
	/* 2 GiB = 2147483648 B; 1.5 us = 1.5e-06 s; unset optionals and the
	 * all-default optional section are left out; schema order. */
	cr_assert_str_eq(s, "{\"count\":4,\"ratio\":0.5,\"flag\":false,"
			 "\"color\":\"blue\",\"size\":2147483648,"
			 "\"time\":1.5e-06,\"inner\":{\"depth\":2,\"weight\":1}}");
	cJSON_free(s);
	cJSON_Delete(j);
}

Test(schema, help_lists_every_key)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	schema_print_help(f, &thing_schema);
	fclose(f);
	cr_assert_has(out, "thing: a test thing\n");
	cr_assert_has(out, "  count                        integer (default 4; "
		      "an integer from 1 to 64)\n");
	cr_assert_has(out, "also accepted as 'num_things'");
	cr_assert_has(out, "  inner.depth ");
	cr_assert_has(out, "color                        choice (default green; "
		      "one of red, green, blue)");
	cr_assert_has(out, "torch_dtype");
	free(out);
}

Test(schema, every_shipped_table_is_sound)
{
	size_t i;

	for (i = 0; config_kinds[i]; i++)
		cr_assert_eq(schema_check_table(config_kinds[i], &C.d), 0,
			     "%s: %s", config_kinds[i]->kind, capture_text(&C));
	cr_assert_eq(schema_check_table(&thing_schema, &C.d), 0);
}

static const struct schema_field broken_fields[] = {
	{ .key = "a", .type = ST_INT, .offset = 0, .def = "four" },
	{ .key = "b", .type = ST_ENUM, .offset = 8 },
	{ .key = "a", .type = ST_INT, .offset = 16 },
	{ .key = "c", .type = ST_INT, .offset = 64 },
	{ .key = "d", .type = ST_INT, .offset = 24, .def = "100", .min = 1,
	  .max = 10 },
};

static const struct schema broken = {
	.kind = "broken", .help = "broken", .size = 32,
	.fields = broken_fields, .nfields = SCHEMA_COUNT(broken_fields),
};

Test(schema, table_checker_finds_mistakes)
{
	cr_assert_eq(schema_check_table(&broken, &C.d), -1);
	cr_assert_has(capture_text(&C), "schema broken: 'a': key or alias "
		      "listed twice");
	cr_assert_has(capture_text(&C), "the default 'four' of 'a' does not "
		      "parse");
	cr_assert_has(capture_text(&C), "'b': an enum without values");
	cr_assert_has(capture_text(&C), "'c': offset past the end");
	/* A default outside the bounds is as wrong as one that does not
	 * parse. */
	cr_assert_has(capture_text(&C), "the default '100' of 'd'");
}

static const struct schema_field bad_default_fields[] = {
	{ .key = "n", .type = ST_INT, .offset = 0, .def = "lots" },
};

static const struct schema bad_default = {
	.kind = "bad", .help = "bad", .size = sizeof(int64_t),
	.fields = bad_default_fields, .nfields = 1,
};

/* The BUG message is expected: keep it out of the test output. */
static void setup_quiet(void)
{
	fixture_init();
	cr_redirect_stderr();
}

Test(schema, a_bad_default_is_a_bug, .signal = SIGABRT, .init = setup_quiet)
{
	int64_t n;
	struct cnode *m = cnode_parse_yaml(&A, "{}", 2, "t.yaml", &C.d);

	schema_load(&bad_default, m, &A, &C.d, &n);
}

Test(schema, out_of_memory_sweep)
{
	static const char text[] = "name: x\nsize: 1 GB\nsizes: [1, 2]\n"
				   "inner: {depth: 3}\n";

	struct thing t;
	struct cnode *n;
	long k;
	int rc;

	n = cnode_parse_yaml(&A, text, strlen(text), "t.yaml", &C.d);
	cr_assert_not_null(n);
	for (k = 0;; k++) {
		struct arena a;

		arena_init(&a);
		C.d.errors = C.d.oom = 0;
		memset(&t, 0, sizeof(t));
		mem_fail_after(k);
		rc = schema_load(&thing_schema, n, &a, &C.d, &t);
		mem_fail_after(-1);
		arena_release(&a);
		if (rc == 0)
			break;
		cr_assert_eq(C.d.oom, 1, "k = %ld: %s", k, capture_text(&C));
		cr_assert_eq(C.d.errors, 1, "k = %ld: %s", k, capture_text(&C));
	}
	cr_assert_gt(k, 0);
	assert_no_leaks();
}
