/*
 * test_config.c - loading configs from the fixture data root tests/data:
 * references (preset, path, inline with overrides) three deep, --set,
 * cycles, missing presets, the round trip show -> load for every kind,
 * the kind of a path or preset name, the hash, and an allocation-failure sweep over a nested load.
 */
#include <cJSON.h>
#include <criterion/criterion.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config/config.h"
#include "config_testutil.h"
#include "base/arena.h"
#include "base/mem.h"
#include "config/spec_job.h"

#define DATA "tests/data"

static void setup(void)
{
	fixture_cx_init(DATA);
}

TestSuite(config, .init = setup, .fini = fixture_fini);

static void *load_sets(const char *kind, const char *what,
		       const char *const *sets, size_t nsets)
{
	const struct schema *s = config_kind(kind);
	void *obj = arena_alloc(&A, s->size);

	cr_assert_eq(config_load(&CX, s, what, sets, nsets, obj), 0,
		     "%s: %s", what, capture_text(&C));
	return obj;
}

static void *load(const char *kind, const char *what)
{
	return load_sets(kind, what, NULL, 0);
}

static void load_fails(const char *kind, const char *what,
		       const char *const *sets, size_t nsets, const char *msg)
{
	const struct schema *s = config_kind(kind);
	void *obj = arena_alloc(&A, s->size);

	cr_assert_eq(config_load(&CX, s, what, sets, nsets, obj), -1,
		     "%s loaded", what);
	cr_assert_has(capture_text(&C), msg);
}

Test(config, preset_job_resolves_every_reference)
{
	const struct job_spec *j = load("job", "test-job");
	const struct system_spec *sys = j->system;

	cr_assert_str_eq(j->name, "test-job");
	cr_assert_str_eq(j->model->name, "test-llama");
	/* head_dim derived: hidden 2048 / 16 heads = 128. */
	cr_assert_eq(j->model->head_dim, 128);
	cr_assert_str_eq(sys->name, "test-sys");
	cr_assert_str_eq(sys->gpu->name, "test-amd");
	/* 2 nodes x 8 GPUs = 16; tp 8, pp = cp = 1 -> dp = 16 / 8 = 2. */
	cr_assert_eq(system_gpus(sys), 16);
	cr_assert_eq(j->parallelism.dp, 2);
	/* The library is the system's reference; NICs default to one per
	 * GPU. */
	cr_assert_str_eq(sys->collectives->name, "test-rccl");
	cr_assert_eq(sys->nics_per_node, 8);
	cr_assert_str_eq(sys->scale_up->name, "test-mesh");
	cr_assert_str_eq(sys->scale_out->name, "test-roce");
	/* 1307.4 TFLOP/s; 176 GiB = 176 * 2^30 B. */
	cr_assert_eq(sys->gpu->matrix_peak_flops[DTYPE_BF16], 1307.4e12);
	cr_assert_eq(sys->gpu->hbm_usable_B, 176.0 * 1073741824.0);
	cr_assert_eq(j->training.dtype, DTYPE_BF16);
	cr_assert_eq(j->parallelism.schedule, SCHED_1F1B);
	cr_assert_eq(j->parallelism.sequence_parallel, 1);
}

Test(config, nested_references_and_overrides)
{
	const struct job_spec *j = load("job", "test-job-nested");
	const struct system_spec *sys = j->system;
	const struct gpu_spec *g = sys->gpu;

	cr_assert_str_eq(j->name, "nested");
	/* The model is a Hugging Face config.json named by a relative path;
	 * it is named after its folder, unknown keys and nulls ignored. */
	cr_assert_str_eq(j->model->name, "hf-llama");
	cr_assert_eq(j->model->hidden_size, 2048);
	cr_assert_eq(j->model->head_dim, 64);
	cr_assert_eq(j->model->num_key_value_heads, 8);
	cr_assert_eq(j->model->tie_word_embeddings, 1);
	cr_assert_eq(j->model->q_lora_rank, 0);
	/* The preset system says nodes: 4; the job overrides it with 2. */
	cr_assert_str_eq(sys->name, "test-sys-inline");
	cr_assert_eq(sys->nodes, 2);
	/* gpu: {preset: test-nv, hbm: {capacity: 96 GB}} replaces the
	 * system's GPU: test-nv's bandwidth, the override's capacity. */
	cr_assert_str_eq(g->name, "test-nv");
	cr_assert_eq(g->hbm.capacity_B, 96e9);
	cr_assert_eq(g->hbm.bandwidth_Bps, 3.35e12);
	cr_assert_eq(g->hbm_usable_B, 96e9);
	cr_assert_str_eq(sys->collectives->name, "test-nccl");
	/* scale_up by relative path from configs/systems/; scale_out is
	 * written inline, so it has no name. */
	cr_assert_str_eq(sys->scale_up->name, "test-mesh");
	cr_assert_null(sys->scale_out->name);
	cr_assert_eq(sys->nics_per_node, 4);
	/* 2 x 8 = 16 GPUs; tp 4 x pp 2 = 8 -> dp 2. */
	cr_assert_eq(j->parallelism.dp, 2);
}

Test(config, preset_with_overrides_deep_merges)
{
	const struct system_spec *sys = load("system", "test-sys-inline");

	/* {preset: test-amd, hbm: {capacity: 256 GB}}: only the capacity
	 * changes; bandwidth and efficiency stay test-amd's. */
	cr_assert_eq(sys->gpu->hbm.capacity_B, 256e9);
	cr_assert_eq(sys->gpu->hbm.bandwidth_Bps, 5.3e12);
	cr_assert_eq(sys->gpu->hbm.efficiency, 0.85);
	cr_assert_str_eq(sys->gpu->name, "test-amd");
}

Test(config, set_after_resolution)
{
	static const char *const sets[] = {
		"system.nodes=4", "system.gpu=test-nv",
		"parallelism={tp: 4, pp: 2}", "system.gpu.hbm.capacity=96 GB",
		"training.dtype=fp8",
	};
	const struct job_spec *j = load_sets("job", "test-job", sets, 5);

	cr_assert_eq(j->system->nodes, 4);
	cr_assert_str_eq(j->system->gpu->name, "test-nv");
	/* The library is configured, not derived: swapping the GPU keeps
	 * the system's. */
	cr_assert_str_eq(j->system->collectives->name, "test-rccl");
	cr_assert_eq(j->system->gpu->hbm.capacity_B, 96e9);
	/* 4 x 8 = 32 GPUs over tp 4 x pp 2 -> dp 4; the mapping merged
	 * into parallelism, so sequence_parallel stays true. */
	cr_assert_eq(j->parallelism.dp, 4);
	cr_assert_eq(j->parallelism.sequence_parallel, 1);
	cr_assert_eq(j->training.dtype, DTYPE_FP8);
}

Test(config, set_a_reference_by_path)
{
	/* A path given by --set is relative to the current directory. */
	static const char *const sets[] = {
		"model=" DATA "/workloads/models/test-moe.yaml",
	};
	const struct job_spec *j = load_sets("job", "test-job", sets, 1);

	cr_assert_str_eq(j->model->name, "test-moe");
	/* num_local_experts is an alias of n_routed_experts. */
	cr_assert_eq(j->model->n_routed_experts, 8);
}

Test(config, set_errors_name_the_option)
{
	static const char *const sets[] = {
		"system.nodez=4", "training.seq_len=abc", "foo", "a..b=1",
		"training.seq_len=", "system.gpu=test-nvv",
	};

	load_fails("job", "test-job", sets, 6, "--set:1:8: error: "
		   "'system.nodez': unknown key, did you mean 'nodes'?");
	cr_assert_has(capture_text(&C), "--set:2:18: error: 'training.seq_len':"
		      " expected an integer such as 8, got 'abc'");
	cr_assert_has(capture_text(&C), "--set:3:1: error: expected dotted.key="
		      "value, got 'foo'");
	cr_assert_has(capture_text(&C), "--set:4:3: error: 'a..b': expected "
		      "dotted.key=value, got an empty key");
	cr_assert_has(capture_text(&C), "--set:5:18: error: 'training.seq_len'"
		      ": expected a value after '=', got nothing");
	cr_assert_has(capture_text(&C), "--set:6:12: error: 'system.gpu': no "
		      "gpu preset 'test-nvv', did you mean 'test-nv'?");
}

/* config_load_at: settings written in a table (validate's dispatch
 * cases) are named where they are written. Setting 1 at t.tsv:7:40:
 * "system.nodez" -> the key 'nodez' 7 characters on, column 47; setting
 * 2 at column 60: the value after "training.seq_len=" (17 characters),
 * column 77; setting 3 at 90: no '=', the setting's own column. */
Test(config, settings_at_a_place_are_named_there)
{
	static const char *const sets[] = {
		"system.nodez=4", "training.seq_len=abc", "foo",
	};
	static const int cols[] = { 40, 60, 90 };
	const struct schema *s = config_kind("job");
	void *obj = arena_alloc(&A, s->size);

	cr_assert_eq(config_load_at(&CX, s, "test-job", sets, 3, "t.tsv", 7,
				    cols, obj), -1);
	cr_assert_has(capture_text(&C), "t.tsv:7:47: error: 'system.nodez': "
		      "unknown key");
	cr_assert_has(capture_text(&C), "t.tsv:7:77: error: 'training.seq_len'"
		      ": expected an integer");
	cr_assert_has(capture_text(&C), "t.tsv:7:90: error: expected dotted.key"
		      "=value, got 'foo'");
	cr_assert_not(strstr(capture_text(&C), "--set:"));
}

Test(config, set_value_syntax_error_is_located)
{
	static const char *const sets[] = {"training.seq_len=[1,"};

	/* The value "[1," takes cols 18-20; libyaml stops at its end, col
	 * 21, and the flow sequence it was parsing is on the same line. */
	load_fails("job", "test-job", sets, 1, "--set:1:21: error: invalid "
		   "YAML: did not find expected node content (while parsing a "
		   "flow node at line 1)");
	cr_assert_has(capture_text(&C), "invalid YAML");
}

Test(config, missing_preset_suggests_and_lists)
{
	static const char *const sets[] = {"model=test-lama"};

	load_fails("job", "test-job", sets, 1, "--set:1:7: error: 'model': no "
		   "model preset 'test-lama', did you mean 'test-llama'?");
	cr_assert_has(capture_text(&C), "note: model presets: test-llama, "
		      "test-moe");
	load_fails("gpu", "nope", NULL, 0, "llmsim: error: no gpu preset "
		   "'nope'");
}

static char dir[64];

static const char *file(const char *name, const char *text)
{
	char *path = arena_alloc(&A, 256);

	write_file(path, dir, name, text, strlen(text));
	return path;
}

Test(config, reference_cycles_name_the_chain)
{
	const char *a, *x;

	tmpdir_make(dir);
	/* Two files: a (job) -> b (system) -> a again, as the system's GPU.
	 * The cycle closes at b's gpu: line 1, col 6. */
	a = file("a.yaml", "model: test-llama\nsystem: b.yaml\n");
	file("b.yaml", "gpu: a.yaml\nscale_up: test-mesh\n"
	     "scale_out: test-roce\n");
	load_fails("job", a, NULL, 0, "b.yaml:1:6: error: 'system.gpu': "
		   "reference cycle: ");
	cr_assert_has(capture_text(&C), "/a.yaml -> ");
	cr_assert_has(capture_text(&C), "/b.yaml -> ");
	/* Three files, each starting from the next: x -> y -> z -> x. */
	x = file("x.yaml", "preset: y.yaml\n");
	file("y.yaml", "preset: z.yaml\n");
	file("z.yaml", "preset: x.yaml\ncompute_units: 1\n");
	load_fails("gpu", x, NULL, 0, "z.yaml:1:9: error: reference cycle: ");
	cr_assert_has(capture_text(&C), "/x.yaml -> ");
	cr_assert_has(capture_text(&C), "/y.yaml -> ");
	cr_assert_has(capture_text(&C), "/z.yaml -> ");
	tmpdir_remove(dir);
}

Test(config, a_file_may_start_from_a_preset)
{
	const struct system_spec *sys;

	tmpdir_make(dir);
	sys = load("system", file("big.yaml", "preset: test-sys\nnodes: 64\n"));
	cr_assert_eq(sys->nodes, 64);
	cr_assert_str_eq(sys->gpu->name, "test-amd");
	/* The file's own name wins over the preset's. */
	cr_assert_str_eq(sys->name, "big");
	tmpdir_remove(dir);
}

Test(config, missing_file_and_directory_references)
{
	tmpdir_make(dir);
	load_fails("job", file("j.yaml", "model: nope.yaml\nsystem: sub/\n"),
		   NULL, 0, "j.yaml:1:8: error: 'model': cannot read '");
	cr_assert_has(capture_text(&C), "/nope.yaml': No such file or "
		      "directory");
	tmpdir_remove(dir);
	tmpdir_make(dir);
	file("x.yaml", "a: 1\n");
	cr_assert_eq(system("mkdir -p /tmp/llmsim-test-dirref"), 0);
	load_fails("job", file("k.yaml", "model: /tmp/llmsim-test-dirref/\n"),
		   NULL, 0, "k.yaml:1:8: error: 'model': "
		   "'/tmp/llmsim-test-dirref/' is a directory");
	cr_assert_eq(system("rmdir /tmp/llmsim-test-dirref"), 0);
	tmpdir_remove(dir);
}

Test(config, every_error_in_every_file)
{
	tmpdir_make(dir);
	/* Three problems in two places: a missing preset, a bad value in
	 * the inline system, a bad training value. */
	load_fails("job", file("j.yaml", "model: test-lama\n"
			       "system: {preset: test-sys, nodes: 0}\n"
			       "training: {seq_len: 4k, global_batch_size: 8}\n"),
		   NULL, 0, "j.yaml:1:8: error: 'model': no model preset");
	cr_assert_has(capture_text(&C), "j.yaml:2:");
	cr_assert_has(capture_text(&C), "'system.nodes': expected an integer "
		      "from 1 to 1000000, got '0'");
	cr_assert_has(capture_text(&C), "'training.seq_len': expected an "
		      "integer such as 8, got '4k'");
	cr_assert_eq(C.d.errors, 3, "%s", capture_text(&C));
	tmpdir_remove(dir);
}

Test(config, layout_checks_run_on_the_resolved_job)
{
	static const char *const sets[] = {"parallelism.tp=3"};

	/* tp 3 does not divide 16 GPUs. */
	load_fails("job", "test-job", sets, 1, "layout: tp*pp*cp = 3 does not "
		   "divide the 16 GPUs of the system");
}

Test(config, a_schedule_vpp_picks_names_where_vpp_is)
{
	static const char *const pp1[] = {"parallelism.pp=1"};
	const char *j;

	/*
	 * A job file with vpp 2 (the interleaved schedule by default) and
	 * pp 1 set over it (a sweep's grid value): refused at the --set,
	 * as before, and the message says vpp 2 is in force and where it
	 * is written (line 6 of the file: a sweep's base), which it did
	 * not ("needs pp >= 2, got pp 1" only). An explicit schedule is
	 * the user's own: no vpp there.
	 */
	tmpdir_make(dir);
	j = file("j.yaml", "model: test-llama\n"
		 "system: test-sys\n"
		 "training: {seq_len: 4096, global_batch_size: 64}\n"
		 "parallelism:\n"
		 "  pp: 2\n"
		 "  vpp: 2\n");
	load_fails("job", j, pp1, 1, "--set:1:16: error: layout: the "
		   "interleaved schedule needs pp >= 2, got pp 1 (vpp 2, ");
	cr_assert_has(capture_text(&C), "j.yaml:6, picks it: vpp 1 runs pp 1)");
	j = file("k.yaml", "model: test-llama\n"
		 "system: test-sys\n"
		 "training: {seq_len: 4096, global_batch_size: 64}\n"
		 "parallelism:\n"
		 "  pp: 1\n"
		 "  vpp: 2\n"
		 "  schedule: interleaved\n");
	load_fails("job", j, NULL, 0, "got pp 1\n");
	tmpdir_remove(dir);
}

Test(config, null_over_a_base_unsets_the_key)
{
	static const char *const unset[] = {"parallelism.tp=null",
					    "parallelism.dp=~"};
	static const char *const typo[] = {"parallelism.tpp=null"};
	const struct job_spec *j;
	const char *f;

	/*
	 * The file pins tp 8 and dp 2 on test-sys's 16 GPUs. null over
	 * them (a --set, a sweep's value) is as if the file left them out:
	 * tp its default 1, dp inferred 16 / 1 = 16. It was an error
	 * ("got null (remove the key...)"), so a sweep of system.nodes
	 * could not free the base's dp. An unknown key's null is still
	 * named; null in a file with no base under it is still an error.
	 */
	tmpdir_make(dir);
	f = file("j.yaml", "model: test-llama\n"
		 "system: test-sys\n"
		 "training: {seq_len: 4096, global_batch_size: 64}\n"
		 "parallelism: {tp: 8, dp: 2}\n");
	j = load_sets("job", f, unset, 2);
	cr_assert_eq(j->parallelism.tp, 1);
	cr_assert_eq(j->parallelism.dp, 16);
	load_fails("job", f, typo, 1, "parallelism.tpp");
	f = file("k.yaml", "model: test-llama\n"
		 "system: test-sys\n"
		 "training: {seq_len: 4096, global_batch_size: 64}\n"
		 "parallelism: {tp: null}\n");
	load_fails("job", f, NULL, 0, "got null");
	tmpdir_remove(dir);
}

Test(config, layout_errors_point_at_the_key_changed)
{
	static const char *const tp[] = {"parallelism.tp=3"};
	static const char *const tp_dp[] = {"parallelism.tp=4",
					    "parallelism.dp=3"};
	static const char *const gbs[] = {"training.global_batch_size=62"};

	/* A --set that breaks a rule is where the error points: column 16
	 * = strlen("parallelism.tp=") + 1, its value. */
	load_fails("job", "test-job", tp, 1, "--set:1:16: error: layout: "
		   "tp*pp*cp = 3 does not divide the 16 GPUs");
	/* Two --sets break the world size (4 * 3 = 12 of 16 GPUs): the
	 * rule names dp first, the second --set. */
	load_fails("job", "test-job", tp_dp, 2, "--set:2:16: error: layout: "
		   "tp*pp*cp*dp = 4*1*1*3 = 12");
	/* 62 sequences over micro_batch_size 2 * dp 2 = 4: at the --set,
	 * column 28 = strlen("training.global_batch_size=") + 1. */
	load_fails("job", "test-job", gbs, 1, "--set:1:28: error: layout: "
		   "global_batch_size 62 is not divisible");
	/* In one file: at the value of the key the rule reads (tp: 3 on
	 * line 6, column 7), not at the parallelism mapping (line 5). */
	tmpdir_make(dir);
	load_fails("job", file("j.yaml", "model: test-llama\n"
			       "system: test-sys\n"
			       "training: {seq_len: 4096, global_batch_size: 64}\n"
			       "parallelism:\n"
			       "  pp: 1\n"
			       "  tp: 3\n"),
		   NULL, 0, "j.yaml:6:7: error: layout: tp*pp*cp = 3");
	tmpdir_remove(dir);
}

Test(config, odd_seq_len_without_cp_loads)
{
	static const char *const odd[] = {"training.seq_len=4095",
					  "parallelism.sequence_parallel=false"};
	static const char *const cp2[] = {"training.seq_len=4094",
					  "parallelism.tp=4",
					  "parallelism.cp=2"};

	/* Load balancing splits a sequence into 2 cp chunks only when
	 * there is context parallelism (Megatron's get_batch_on_this_cp_rank
	 * runs for cp > 1); at cp 1 the sequence is whole, so an odd
	 * seq_len is a valid job (cp_load_balance defaults to true) when
	 * no sequence parallelism splits it over tp 8 (sp_seq, below). */
	cr_assert_eq(((const struct job_spec *)load_sets("job", "test-job",
		     odd, 2))->training.seq_len, 4095);
	/* cp 2, balanced: 4 chunks, and 4094 = 4 * 1023 + 2 does not
	 * divide. */
	load_fails("job", "test-job", cp2, 3, "layout: cp 2 does not divide "
		   "seq_len 4094 into 4 chunks");
}

Test(config, sequence_parallel_splits_seq_len_over_cp_tp)
{
	static const char *const tp8[] = {"training.seq_len=4100"};
	static const char *const no_sp[] = {"training.seq_len=4100",
					    "parallelism.sequence_parallel=false"};
	static const char *const cp2[] = {"training.seq_len=4100",
					  "parallelism.tp=4",
					  "parallelism.cp=2"};
	static const char *const cp2_ok[] = {"training.seq_len=4104",
					     "parallelism.tp=4",
					     "parallelism.cp=2"};

	/* test-job: tp 8 with sequence_parallel on 16 GPUs. Megatron
	 * scatters a CP rank's seq_len / cp tokens over tp: 4100 = 8 * 512
	 * + 4 does not split over 8. */
	load_fails("job", "test-job", tp8, 1, "layout: sequence_parallel "
		   "splits the seq_len 4100 tokens over cp*tp = 1*8 ranks");
	/* Without sequence parallelism nothing is split along the
	 * sequence: the same seq_len loads. */
	cr_assert_eq(((const struct job_spec *)load_sets("job", "test-job",
		     no_sp, 2))->training.seq_len, 4100);
	/* cp 2 x tp 4: 4100 / 2 = 2050 tokens a CP rank (4 balanced
	 * chunks of 1025: JR_CP_SEQ holds), 2050 = 4 * 512 + 2 does not
	 * split over tp 4; 4104 / 2 = 2052 = 4 * 513 does. */
	load_fails("job", "test-job", cp2, 3, "over cp*tp = 2*4 ranks");
	cr_assert_eq(((const struct job_spec *)load_sets("job", "test-job",
		     cp2_ok, 3))->parallelism.cp, 2);
}

Test(config, model_conflicts_point_at_the_key_changed)
{
	static const char *const heads[] = {"model.num_attention_heads=7"};

	/* test-llama: hidden 2048, 16 heads (4 KV heads). A --set of 7
	 * heads breaks both head rules; both errors are at the --set's
	 * value (column 27 = strlen("model.num_attention_heads=") + 1),
	 * not at the preset's mapping. */
	load_fails("job", "test-job", heads, 1, "--set:1:27: error: "
		   "'hidden_size' must be a multiple of 'num_attention_heads'");
	cr_assert_has(capture_text(&C), "--set:1:27: error: "
		      "'num_attention_heads' must be a multiple of "
		      "'num_key_value_heads'");
	/* In one file, at the first key of the conflict that is there:
	 * num_experts_per_tok on line 8 (its value at column 22), the
	 * experts given under Mixtral's alias num_local_experts. */
	tmpdir_make(dir);
	load_fails("model", file("m.yaml", "hidden_size: 1024\n"
		   "num_hidden_layers: 2\nnum_attention_heads: 8\n"
		   "intermediate_size: 3584\nvocab_size: 32000\n"
		   "num_local_experts: 8\nmoe_intermediate_size: 3584\n"
		   "num_experts_per_tok: 9\n"), NULL, 0,
		   "m.yaml:8:22: error: 'num_experts_per_tok' 9 exceeds "
		   "'n_routed_experts' 8");
	tmpdir_remove(dir);
}

Test(config, layer_types_length_points_at_the_list)
{
	static const char *const two[] = {"num_hidden_layers=2"};

	/* One entry for 3 layers: at the list (line 6, column 14). */
	tmpdir_make(dir);
	load_fails("model", file("lt.yaml", "hidden_size: 1024\n"
		   "num_hidden_layers: 3\nnum_attention_heads: 8\n"
		   "intermediate_size: 3584\nvocab_size: 32000\n"
		   "layer_types: [full_attention]\n"), NULL, 0,
		   "lt.yaml:6:14: error: 'layer_types' has 1 entries for 3 "
		   "layers");
	/* The layer count changed by --set: at the --set's value. */
	load_fails("model", file("lt2.yaml", "hidden_size: 1024\n"
		   "num_hidden_layers: 1\nnum_attention_heads: 8\n"
		   "intermediate_size: 3584\nvocab_size: 32000\n"
		   "layer_types: [full_attention]\n"), two, 1,
		   "--set:1:19: error: 'layer_types' has 1 entries for 2 "
		   "layers");
	tmpdir_remove(dir);
}

/* Print kind `what` as YAML into a file, load that back, and expect an
 * identical struct, JSON and hash. */
static void round_trip(const char *kind, const char *what)
{
	const struct schema *s = config_kind(kind);
	void *a = load(kind, what), *b;
	char *text = NULL, ha[65], hb[65];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	schema_print_yaml(f, s, a, 0);
	fclose(f);
	tmpdir_make(dir);
	b = load(kind, file("shown.yaml", text));
	tmpdir_remove(dir);
	assert_same(s, a, b);
	cr_assert_eq(config_hash(s, a, ha), 0);
	cr_assert_eq(config_hash(s, b, hb), 0);
	cr_assert_str_eq(ha, hb, "%s %s", kind, what);
	free(text);
}

Test(config, round_trip_every_kind)
{
	round_trip("gpu", "test-amd");
	round_trip("gpu", "test-nv");
	round_trip("fabric", "test-roce");
	round_trip("fabric", "test-mesh");
	round_trip("system", "test-sys");
	round_trip("system", "test-sys-inline");
	round_trip("model", "test-llama");
	round_trip("model", "test-moe");
	round_trip("model", DATA "/workloads/models/hf-llama/config.json");
	round_trip("job", "test-job");
	round_trip("job", "test-job-nested");
}

Test(config, hash_ignores_how_a_config_is_written)
{
	const struct schema *s = config_kind("gpu");
	char h1[65], h2[65], h3[65];
	static const char *const sets[] = {"kernel_launch=2 us"};

	tmpdir_make(dir);
	/* test-nv written differently: keys reordered, 1980 MHz as
	 * 1.98 GHz, 80 GB as 80000 MB, 3.35 TB/s as 3350 GB/s, defaults
	 * spelled out. */
	cr_assert_eq(config_hash(s, load("gpu", file("n.yaml",
		"name: test-nv\nhbm: {bandwidth: 3350 GB/s, capacity: 80000 MB}\n"
		"matrix_peak: {fp8: 1979 TFLOP/s, bf16: 989e12 FLOP/s}\n"
		"max_clock: 1.98 GHz\ncompute_units: 132\nvendor: nvidia\n"
		"gemm_efficiency: 1\nkernel_launch: 0 ns\n")), h1), 0);
	tmpdir_remove(dir);
	cr_assert_eq(config_hash(s, load("gpu", "test-nv"), h2), 0);
	cr_assert_str_eq(h1, h2);
	cr_assert_eq(strlen(h1), 64);
	cr_assert_eq(config_hash(s, load_sets("gpu", "test-nv", sets, 1), h3),
		     0);
	cr_assert_str_neq(h1, h3);
}

/* A test-only kind whose reference has a default preset. */
struct rig {
	const char *name;
	const struct gpu_spec *gpu;
};

static const struct schema_field rig_fields[] = {
	{ .key = "name", .type = ST_STRING, .offset = offsetof(struct rig, name),
	  .flags = SF_OPTIONAL },
	{ .key = "gpu", .type = ST_REF, .offset = offsetof(struct rig, gpu),
	  .sub = &gpu_schema, .def = "test-amd" },
};

static const struct schema rig_schema = {
	.kind = "rig", .help = "a test rig", .size = sizeof(struct rig),
	.fields = rig_fields, .nfields = SCHEMA_COUNT(rig_fields),
};

Test(config, a_reference_default_is_resolved_as_if_written)
{
	static const char *const sets[] = {"gpu=test-nv"};
	struct rig *a = arena_alloc(&A, sizeof(*a));
	struct rig *b = arena_alloc(&A, sizeof(*b));
	const char *path;

	cr_assert_eq(schema_check_table(&rig_schema, &C.d), 0);
	tmpdir_make(dir);
	path = file("rig.yaml", "name: r\n");
	cr_assert_eq(config_load(&CX, &rig_schema, path, NULL, 0, a), 0, "%s",
		     capture_text(&C));
	cr_assert_str_eq(a->gpu->name, "test-amd");
	cr_assert_eq(config_load(&CX, &rig_schema, path, sets, 1, b), 0);
	cr_assert_str_eq(b->gpu->name, "test-nv");
	tmpdir_remove(dir);
}

Test(config, list_presets)
{
	const char **gpus = config_list_presets(&CX, config_kind("gpu"));
	const char **models = config_list_presets(&CX, config_kind("model"));

	cr_assert_str_eq(gpus[0], "test-amd");
	cr_assert_str_eq(gpus[1], "test-nv");
	cr_assert_null(gpus[2]);
	/* hf-llama/ is a folder, not a preset file. */
	cr_assert_str_eq(models[0], "test-llama");
	cr_assert_str_eq(models[1], "test-moe");
	cr_assert_null(models[2]);
}

Test(config, kinds_registry)
{
	static const char *const names[] = {"gpu", "fabric", "system", "model",
					    "job", "link", "collectives",
					    "framework", "engine", "ep_comm"};
	size_t i;

	for (i = 0; i < 10; i++) {
		cr_assert_not_null(config_kinds[i]);
		cr_assert_str_eq(config_kinds[i]->kind, names[i]);
		cr_assert_eq(config_kind(names[i]), config_kinds[i]);
	}
	cr_assert_null(config_kinds[10]);
	cr_assert_null(config_kind("gpux"));
}

Test(config, data_root)
{
	char *saved = getenv("LLMSIM_DATA") ? strdup(getenv("LLMSIM_DATA"))
					    : NULL;

	setenv("LLMSIM_DATA", "/some/where", 1);
	cr_assert_str_eq(config_data_root(&A, "build/llmsim"), "/some/where");
	unsetenv("LLMSIM_DATA");
	/* tests/data/bin/llmsim: the folder above bin/ holds configs/. */
	cr_assert_str_eq(config_data_root(&A, DATA "/bin/llmsim"), DATA);
	/* Two levels up, as for build/asan/llmsim. */
	cr_assert_str_eq(config_data_root(&A, DATA "/a/b/llmsim"), DATA);
	cr_assert_str_eq(config_data_root(&A, "/nonexistent/bin/llmsim"), ".");
	if (saved)
		setenv("LLMSIM_DATA", saved, 1);
	free(saved);
}

/* Fail allocation n for n = 0, 1, 2, ... while loading a job with nested
 * references, a JSON model and --set: every failure must return -1 with
 * exactly one "out of memory" and nothing else reported; LeakSanitizer
 * (make check) sees that nothing leaked. */
Test(config, out_of_memory_sweep)
{
	static const char *const sets[] = {"system.nodes=2",
					   "training.dtype=bf16"};
	const struct schema *s = config_kind("job");
	char hex[65];
	long n;

	for (n = 0;; n++) {
		struct arena a;
		struct config_ctx cx = {&a, &C.d, DATA};
		void *obj;
		int rc = -1, hrc = -1;

		arena_init(&a);
		C.d.errors = C.d.oom = 0;
		mem_fail_after(n);
		obj = arena_alloc(&a, s->size);
		if (obj)
			rc = config_load(&cx, s, "test-job-nested", sets, 2, obj);
		if (rc == 0)
			hrc = config_hash(s, obj, hex);
		mem_fail_after(-1);
		arena_release(&a);
		if (rc == 0 && hrc == 0)
			break;
		if (!obj || rc == 0)
			continue;	/* before the load / inside the hash */
		cr_assert_eq(C.d.oom, 1, "n = %ld: %s", n, capture_text(&C));
		cr_assert_eq(C.d.errors, 1, "n = %ld: %s", n, capture_text(&C));
		cr_assert(n < 100000, "the sweep did not converge");
	}
	cr_assert_gt(n, 50);
	cr_assert_has(capture_text(&C), "llmsim: error: out of memory");
	assert_no_leaks();
}

/* Arena bytes a load of n --set options takes. */
static size_t set_cost(size_t n)
{
	const struct schema *s = config_kind("job");
	const char **sets = mem_calloc(n, sizeof(*sets));
	struct arena a;
	struct config_ctx cx = {&a, &C.d, DATA};
	size_t i, used;

	cr_assert_not_null(sets);
	arena_init(&a);
	for (i = 0; i < n; i++)
		sets[i] = i % 2 ? "training.seq_len=2048" : "system.nodes=4";
	cr_assert_eq(config_load(&cx, s, "test-job", sets, n,
				 arena_alloc(&a, s->size)), 0, "%s",
		     capture_text(&C));
	used = a.total_B;
	arena_release(&a);
	mem_free(sets);
	return used;
}

Test(config, set_options_cost_linear_memory)
{
	/* Issue 8: the k-th --set was parsed behind k-1 newlines (to put
	 * its nodes on line k), so n options took n^2/2 bytes: 20000 took
	 * 9.7 GB. Now each costs the same: 8000 options take at most 2.2x
	 * what 4000 take (exactly 2x plus the job's fixed part, which only
	 * lowers the ratio; quadratic would be 4x), and 20000 stay under
	 * 64 MB of arena. */
	size_t c4 = set_cost(4000), c8 = set_cost(8000);

	cr_assert_leq((double)c8, 2.2 * (double)c4, "4000: %zu B, 8000: %zu B",
		      c4, c8);
	cr_assert_lt(set_cost(20000), (size_t)64 << 20);
}

/* config_kind_of: a path is the kind whose preset folder holds it, else a
 * .json is a model and anything else a job; a preset name is the one kind
 * that has it (a job when none does); a name two kinds share is neither,
 * and both are named so the caller can ask which. */
Test(config, kind_of_a_path_or_a_preset_name)
{
	static const char *const sub[] = {"configs", "configs/links",
					  "configs/fabrics"};
	char root[64], path[256];
	const char *several = "unset";
	struct config_ctx cx = CX;
	size_t i;

	cr_assert_eq(config_kind_of(&CX, DATA "/configs/gpus/test-nv.yaml",
				    &several), config_kind("gpu"));
	cr_assert_null(several);
	cr_assert_eq(config_kind_of(&CX, "elsewhere/config.json", &several),
		     config_kind("model"));
	cr_assert_eq(config_kind_of(&CX, "elsewhere/run.yaml", &several),
		     config_kind("job"));
	cr_assert_eq(config_kind_of(&CX, "test-ib", &several),
		     config_kind("link"));
	cr_assert_eq(config_kind_of(&CX, "no-such-preset", &several),
		     config_kind("job"));
	cr_assert_null(several);

	tmpdir_make(root);
	for (i = 0; i < sizeof(sub) / sizeof(sub[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", root, sub[i]);
		cr_assert_eq(mkdir(path, 0700), 0);
	}
	write_file(path, root, "configs/links/twice.yaml", "{}\n", 3);
	write_file(path, root, "configs/fabrics/twice.yaml", "{}\n", 3);
	cx.data_root = root;
	cr_assert_null(config_kind_of(&cx, "twice", &several));
	/* in the registry's order (config_kinds.c): fabric before link */
	cr_assert_str_eq(several, "fabric, link");
	cr_assert_eq(C.d.errors, 0, "%s", capture_text(&C));
	tmpdir_remove(root);
}

/*
 * A section the job's phase does not read is a warning at each key
 * written there, not an error, with the other section's key of a near
 * name: the training section on a serving job (review8 finding 7:
 * `--set training.local_batch_size=8` was silently ignored), the serving
 * section on a training job. The serving job is tests/data/serve's,
 * whose presets are the repository's.
 */
Test(config, phase_foreign_section_warns)
{
	static const char *const serve_sets[] = {
		"training.local_batch_size=8", "training.dtype=fp8",
	};
	static const char *const train_sets[] = { "serving.dtype=fp8" };
	struct config_ctx cx = { &A, &C.d, "." };
	struct job_spec *j = arena_alloc(&A, sizeof(*j));
	const char *t;

	cr_assert_not_null(j);
	memset(j, 0, sizeof(*j));
	cr_assert_eq(config_load(&cx, &job_schema,
				 "tests/data/serve/l8-h100-tp1.yaml",
				 serve_sets, 2, j), 0, "%s", capture_text(&C));
	t = capture_text(&C);
	cr_assert_has(t, "--set:1:10: warning: 'training.local_batch_size': "
		      "key not read by a serving job and ignored (the "
		      "training section is for phase training)");
	cr_assert_has(t, "--set:2:10: warning: 'training.dtype': key not "
		      "read by a serving job and ignored (the training "
		      "section is for phase training); did you mean "
		      "'serving.dtype'?");
	cr_assert_eq(C.d.warnings, 2);
	cr_assert_eq(C.d.errors, 0);

	j = load_sets("job", "test-job", train_sets, 1);
	cr_assert_has(capture_text(&C), "--set:1:9: warning: 'serving.dtype': "
		      "key not read by a training job and ignored (the "
		      "serving section is for phases prefill, decode and "
		      "serving); did you mean 'training.dtype'?");
	cr_assert_eq(C.d.warnings, 3);
	cr_assert_eq(C.d.errors, 0);
	/* a job writing only its own phase's section: no word */
	load("job", "test-job");
	cr_assert_eq(C.d.warnings, 3);
}

/*
 * training.fp8_attention on a 16-bit job has no effect (Transformer
 * Engine's DotProductAttention runs FP8 only inside the fp8 autocast):
 * a warning at the key, as fp8_scaling's, and the model leaves it off;
 * on an fp8 or MX job, or written false, no word.
 */
Test(config, fp8_attention_off_fp8_warns)
{
	static const char *const bf16_on[] = { "training.fp8_attention=true" };
	static const char *const bf16_off[] = {
		"training.fp8_attention=false",
	};
	static const char *const mx_on[] = {
		"training.dtype=mxfp8", "training.fp8_attention=true",
	};
	struct job_spec *j;

	j = load_sets("job", "test-job", bf16_on, 1);
	cr_assert_has(capture_text(&C), "--set:1:24: warning: "
		      "'training.fp8_attention' has no effect: training.dtype "
		      "is bf16, not an fp8 or fp4 format");
	cr_assert_eq(C.d.warnings, 1);
	cr_assert_eq(C.d.errors, 0);
	cr_assert_eq(j->training.fp8_attention, 1);
	load_sets("job", "test-job", bf16_off, 1);
	cr_assert_eq(C.d.warnings, 1);
	load_sets("job", "test-job", mx_on, 2);
	cr_assert_eq(C.d.warnings, 1, "%s", capture_text(&C));
}

/*
 * The planner loads its job (job_plan_schema) through job_check's
 * warnings, not its errors: before, `llmsim plan` loaded with no check,
 * so the phase-section warnings above and the fp8_scaling one never
 * fired on a planned job (plan9's report). Expected: the serving job's
 * 2 foreign keys warn as under job_schema (2 warnings), fp8_scaling on a
 * bf16 training job warns once (3), and a written layout that run
 * refuses ("tp*pp*cp = 3 does not divide the 8 GPUs of the system")
 * still loads with no error: the planner searches the layout, its exit
 * status is as before.
 */
Test(config, plan_job_warns_as_run)
{
	static const char *const serve_sets[] = {
		"training.local_batch_size=8", "training.dtype=fp8",
	};
	static const char *const train_sets[] = {
		"training.dtype=bf16", "training.fp8_scaling=current",
		"parallelism.tp=3",
	};
	struct config_ctx cx = { &A, &C.d, "." };
	struct job_spec *j = arena_alloc(&A, sizeof(*j));
	const char *t;

	cr_assert_not_null(j);
	memset(j, 0, sizeof(*j));
	cr_assert_eq(config_load(&cx, &job_plan_schema,
				 "tests/data/serve/l8-h100-tp1.yaml",
				 serve_sets, 2, j), 0, "%s", capture_text(&C));
	t = capture_text(&C);
	cr_assert_has(t, "--set:1:10: warning: 'training.local_batch_size': "
		      "key not read by a serving job and ignored");
	cr_assert_has(t, "--set:2:10: warning: 'training.dtype': key not "
		      "read by a serving job and ignored");
	cr_assert_eq(C.d.warnings, 2);
	cr_assert_eq(C.d.errors, 0);

	memset(j, 0, sizeof(*j));
	cr_assert_eq(config_load(&cx, &job_plan_schema, "default", train_sets,
				 3, j), 0, "%s", capture_text(&C));
	cr_assert_has(capture_text(&C), "--set:2:22: warning: "
		      "'training.fp8_scaling' has no effect: training.dtype "
		      "is bf16, not fp8");
	cr_assert_eq(C.d.warnings, 3);
	cr_assert_eq(C.d.errors, 0, "%s", capture_text(&C));
}
