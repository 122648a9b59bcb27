/*
 * test_attn_decode_split.c - how a decode attention kernel splits a
 * sequence's keys (src/gpu/gpu_attn_infer.c, gpu_attn_heads.split) on the
 * toy GPU of fixture.h: U = 100 units, HBM 10 TB/s x 0.5 = 5 TB/s (5e10
 * B/s a unit), block_q 128 keys a tile, no launch or tile overhead, no
 * MMA padding (mma_rows 0), attention 250 TFLOP/s.
 *
 * The shape every test uses: 8 query heads over 1 KV head of 128 (GQA 8),
 * bf16 Q/O, an FP8 KV cache (1 B an element), one new token a sequence
 * over kv = 32768 keys. A unit (sequence, KV head, split) of k keys reads
 * k x 256 B at 5e10 B/s and computes 8 x k x 2 x 256 FLOP at 2.5 TFLOP/s:
 *
 *   memory  k x 5.12 ns,  compute k x 1.638 ns: memory-bound
 *
 * A sequence's bytes, D_1 = 8 x 256 x 2 (Q, O) + 32768 x 256 (K, V) + 8 x
 * 4 (LSE) = 8,392,736 B. Split units leave partial outputs the merge
 * reads: 8 x (s x 129 x 4 + 128 x 2) B a sequence.
 */
#include <criterion/criterion.h>
#include <math.h>

#include "fixture.h"

#define KV 32768.0
#define UNIT_S(keys) ((keys) * 256.0 / 5e10)
#define SEQ_B (8.0 * 256 * 2 + KV * 256 + 8 * 4)
#define MERGE_B(seqs, s) ((seqs) * 8.0 * ((s) * 129 * 4 + 128 * 2))

/* The shape above under split rule `split` or, with part > 0, a
 * fixed-partition kernel of `part` keys a unit: `seqs` sequences of `kv`
 * keys. */
static double attn_s(int split, double part, double seqs, double kv)
{
	struct gpu_spec g;
	struct gpu_attn_heads h = {
		.heads_q = 8, .heads_kv = 1, .head_dim_qk = 128,
		.head_dim_v = 128, .kv_B = 1, .split = split,
		.partition = part,
	};
	struct gpu_attn_group grp = {seqs, 1, kv};

	gpu_fixture_toy(&g);
	return gpu_attention_decode(&g, DTYPE_BF16, &h, &grp, 1).time_s;
}

static double decode_s(int split, double seqs)
{
	return attn_s(split, 0, seqs, KV);
}

Test(gpu, decode_fill_rule_splits_to_fill_then_pays_a_partial_wave)
{
	/* 60 sequences: N0 = 60 units < U; s = min(ceil(100 / 60),
	 * ceil(32768 / 128)) = 2 -> 120 units of 16384 keys, 2 waves:
	 * 2 x 83.886 us = 167.77 us (D = 60 x 8.39 MB = 503.6 MB is
	 * 100.7 us at 5 TB/s), + the merge, 60 x 8 x 1288 B = 618 KB,
	 * 0.124 us. */
	double want = 2 * UNIT_S(KV / 2) + MERGE_B(60, 2) / 5e12;

	cr_assert(gpu_fixture_near(decode_s(GPU_TRTLLM_DECODE_NONE, 60), want,
				   1e-9), "%g vs %g", decode_s(0, 60), want);
}

Test(gpu, decode_xqa_splits_past_one_wave_to_eight)
{
	/* XQA: x = floor(32768 / 512) = 64 blocks, at most round(sqrt(8 x
	 * 64)) = round(22.6) = 23; waves 60 x 23 / 100 = 13.8 > 8, so
	 * floor(23 / (13.8 / 8)) = floor(13.33) = 13 blocks a sequence:
	 * 780 units of 32768 / 13 = 2520.6 keys (12.905 us) in 8 waves
	 * (7.8 rounded up) = 103.24 us, above D / B = 100.7 us; merge
	 * 60 x 8 x (13 x 516 + 256) B = 3.343 MB, 0.669 us. Against the
	 * fill rule's 167.9 us: 1.62x faster, the partial wave gone. */
	double want = 8 * UNIT_S(KV / 13) + MERGE_B(60, 13) / 5e12;
	double got = decode_s(GPU_TRTLLM_DECODE_XQA, 60);

	cr_assert(gpu_fixture_near(got, want, 1e-9), "%g vs %g", got, want);
	cr_assert(got < decode_s(GPU_TRTLLM_DECODE_NONE, 60) / 1.6);
}

Test(gpu, decode_xqa_keeps_one_block_past_eight_waves)
{
	/* 900 sequences: waves 900 x 23 / 100 = 207, floor(23 / 25.9) = 0
	 * -> 1 block: 900 units of all 32768 keys (167.77 us) in 9 waves =
	 * 1509.9 us, under the bytes' D / B = 900 x 8,392,736 B / 5e12 =
	 * 1510.7 us (Q, O and the LSE on top of the keys), which binds; no
	 * merge. The fill rule does not split either (N0 = 900 >= U), so
	 * both give the same. */
	double want = 900 * SEQ_B / 5e12;

	cr_assert(9 * UNIT_S(KV) < want);

	cr_assert(gpu_fixture_near(decode_s(GPU_TRTLLM_DECODE_XQA, 900), want,
				   1e-9));
	cr_assert(gpu_fixture_near(decode_s(GPU_TRTLLM_DECODE_NONE, 900),
				   want, 1e-9));
}

Test(gpu, decode_trtllm_gen_splits_by_the_floor_in_one_wave)
{
	/* 30 sequences: trtllm-gen's min(ceil(kv / 128), max(1, floor(100 /
	 * 30))) = 3 -> 90 units of 10922.7 keys, one wave: 55.92 us, above
	 * D / B = 50.36 us; merge 30 x 8 x (3 x 516 + 256) = 433 KB,
	 * 0.087 us. The fill rule's ceil(100 / 30) = 4 gives 120 units, two
	 * waves of 8192 keys: 2 x 41.94 = 83.89 us (+ 0.111 us merge). */
	double gen = 1 * UNIT_S(KV / 3) + MERGE_B(30, 3) / 5e12;
	double fill = 2 * UNIT_S(KV / 4) + MERGE_B(30, 4) / 5e12;

	cr_assert(gpu_fixture_near(decode_s(GPU_TRTLLM_DECODE_TRTLLM_GEN, 30),
				   gen, 1e-9));
	cr_assert(gpu_fixture_near(decode_s(GPU_TRTLLM_DECODE_NONE, 30), fill,
				   1e-9));
	/* D / B holds the floor from below: 30 x 8,392,736 B / 5e12 */
	cr_assert(gen > 30 * SEQ_B / 5e12);
}

/* The shape above under a fixed-partition kernel of `part` keys a unit
 * (AMD's ROCm paged attention: 256), `seqs` sequences of `kv` keys. */
static double partition_s(double part, double seqs, double kv)
{
	return attn_s(0, part, seqs, kv);
}

/* Partials of a fixed-partition kernel: bf16 tmp_out (128 x 2 B) and two
 * fp32 (exp_sum, max_logit) a head and partition, then the output. */
#define PART_MERGE_B(seqs, s) ((seqs) * 8.0 * ((s) * (128 * 2 + 8) + 128 * 2))

Test(gpu, decode_fixed_partition_splits_every_sequence)
{
	/* 60 sequences of 32768 keys in partitions of 256: s = 128 whatever
	 * the fill -> 7680 units of 256 keys (1.31072 us each) in
	 * ceil(76.8) = 77 waves = 100.92544 us, above D / B = 60 x 8,392,736
	 * B / 5e12 = 100.712832 us; the reduce reads 60 x 8 x (128 x 264 +
	 * 256) = 16,343,040 B, 3.268608 us: 104.194048 us in all. (The
	 * fill rule splits in 2 and pays a partial wave: 167.9 us.) */
	double want = 77 * UNIT_S(256) + PART_MERGE_B(60, 128) / 5e12;
	double got = partition_s(256, 60, KV);

	cr_assert(gpu_fixture_near(want, 104.194048e-6, 1e-9), "%g", want);
	cr_assert(gpu_fixture_near(got, want, 1e-9), "%g vs %g", got, want);
	cr_assert(got < decode_s(GPU_TRTLLM_DECODE_NONE, 60));
}

Test(gpu, decode_fixed_partition_reduces_past_one_wave_and_at_one_split)
{
	/* 900 sequences: the fill rule keeps one unit a sequence (N0 = 900
	 * >= U) and no merge; the partitioned kernel still makes 128 units
	 * of each (1152 waves, 1509.95 us, under D / B = 1510.69 us, which
	 * binds) and pays its reduce, 900 x 8 x 34,048 B / 5e12 = 49.03 us. */
	double want = 900 * SEQ_B / 5e12 + PART_MERGE_B(900, 128) / 5e12;
	/* 100 sequences of 200 keys: one partition each (s = 1), the reduce
	 * still runs: 100 x 8 x (264 + 256) = 416,000 B, 0.0832 us, on top
	 * of the one wave of 200-key units (1.024 us; D = 100 x (8 x 512 +
	 * 200 x 256 + 32) = 5,532,800 B, 1.10656 us, binds). */
	double one = 100 * (8 * 512.0 + 200 * 256 + 32) / 5e12 +
		     PART_MERGE_B(100, 1) / 5e12;

	cr_assert(gpu_fixture_near(partition_s(256, 900, KV), want, 1e-9));
	cr_assert(partition_s(256, 900, KV) >
		  decode_s(GPU_TRTLLM_DECODE_NONE, 900));
	cr_assert(gpu_fixture_near(partition_s(256, 100, 200), one, 1e-9),
		  "%g vs %g", partition_s(256, 100, 200), one);
}

/* XQA's mma.sync kernel (a 16-bit KV cache on Hopper) with the toy GPU's
 * attention.xqa_hmma_unit_time set to `floor_s`: `seqs` sequences of `kv`
 * keys, KV elements of kv_B bytes, under `split`. */
static double hmma_s(int split, double kv_B, double floor_s, double seqs,
		     double kv)
{
	struct gpu_spec g;
	struct gpu_attn_heads h = {
		.heads_q = 8, .heads_kv = 1, .head_dim_qk = 128,
		.head_dim_v = 128, .kv_B = kv_B, .split = split,
	};
	struct gpu_attn_group grp = {seqs, 1, kv};

	gpu_fixture_toy(&g);
	g.attention.xqa_hmma_unit_s = floor_s;
	return gpu_attention_decode(&g, DTYPE_BF16, &h, &grp, 1).time_s;
}

Test(gpu, decode_xqa_hmma_units_take_the_floor_with_a_16_bit_cache)
{
	/* 1000 sequences over 1 key: XQA's x = floor(1 / 512) = 0 -> one
	 * block, 1000 units of 1 key (a bf16 unit reads 512 B: 10.24 ns)
	 * in 10 waves of 100. With a 20 us floor and a bf16 (2 B) cache:
	 * 10 x 20 us = 200 us (the bytes, 1000 x (8 x 256 x 2 + 512 + 32)
	 * = 4.64 MB, are 0.93 us at 5 TB/s). An FP8 (1 B) cache runs the
	 * GMMA kernel: no floor, bytes-bound at 1000 x 4384 B / 5e12 =
	 * 0.877 us. The fill rule (not XQA) takes no floor either. */
	double bf16 = hmma_s(GPU_TRTLLM_DECODE_XQA, 2, 20e-6, 1000, 1);
	double fp8 = hmma_s(GPU_TRTLLM_DECODE_XQA, 1, 20e-6, 1000, 1);
	double fill = hmma_s(GPU_TRTLLM_DECODE_NONE, 2, 20e-6, 1000, 1);

	cr_assert(gpu_fixture_near(bf16, 200e-6, 1e-9), "%g", bf16);
	cr_assert(gpu_fixture_near(fp8, 1000 * 4384.0 / 5e12, 1e-9), "%g", fp8);
	cr_assert(fill < 2e-6, "%g", fill);
}

Test(gpu, decode_xqa_hmma_floor_hides_under_long_units)
{
	/* 60 sequences of 32768 keys, bf16 cache: XQA's 13 blocks a
	 * sequence (decode_xqa_splits_past_one_wave_to_eight), units of
	 * 2520.6 keys reading 2 x 2520.6 x 256 B = 1.29 MB, 25.8 us each:
	 * above a 20 us floor, so the floor changes nothing. */
	double with = hmma_s(GPU_TRTLLM_DECODE_XQA, 2, 20e-6, 60, KV);
	double without = hmma_s(GPU_TRTLLM_DECODE_XQA, 2, 0, 60, KV);

	cr_assert(gpu_fixture_near(with, without, 1e-12), "%g vs %g", with,
		  without);
	cr_assert(without > 8 * 25e-6, "%g", without);
}

/* TensorRT-LLM's MLA generation kernel (attention.trtllm_mla_*): absorbed
 * MLA, 128 query heads over the one 576-wide latent (values its first
 * 512), bf16 Q/O, on the toy GPU with the keys set to efficiency 0.8
 * (16-bit cache, of the clock-scaled bf16 peak 1000 x 1000 / 2000 = 500
 * TFLOP/s), 0.5 (FP8 cache, of the fp8 peak, 1000 TFLOP/s) and 20 us a
 * sequence; `split` the engine's decode rule. */
static double mla_s(int split, double kv_B, double eff, double seqs,
		    double kv)
{
	struct gpu_spec g;
	struct gpu_attn_heads h = {
		.heads_q = 128, .heads_kv = 1, .head_dim_qk = 576,
		.head_dim_v = 512, .kv_B = kv_B, .shared_kv = 1,
		.split = split,
	};
	struct gpu_attn_group grp = {seqs, 1, kv};

	gpu_fixture_toy(&g);
	g.attention.trtllm_mla_eff = 0.8 * eff;
	g.attention.trtllm_mla_fp8_eff = 0.5 * eff;
	g.attention.trtllm_mla_unit_s = 20e-6 * eff;
	return gpu_attention_decode(&g, DTYPE_BF16, &h, &grp, 1).time_s;
}

Test(gpu, decode_trtllm_mla_runs_at_its_rate_plus_a_time_a_sequence)
{
	/* 400 sequences of 4096 keys: 400 x 128 x 4096 pairs x 2 x (576 +
	 * 512) = 4.5634e11 FLOP. FP8 cache: at 0.5 x 1000 TFLOP/s 912.68 us,
	 * plus 400 x 20 us / 100 SMs = 80 us: 992.68 us (its bytes, 400 x
	 * (128 x 1088 x 2 + 4096 x 576 x 1 + 128 x 4) = 1.0553 GB, are 211 us
	 * at 5 TB/s). bf16 cache: at 0.8 x 500 TFLOP/s 1140.85 us + 80 us =
	 * 1220.85 us (bytes 1.9991 GB, 399.8 us). No waves: 400 sequences on
	 * 100 SMs and 401 differ by one sequence's share, not a wave. */
	double flops = 400.0 * 128 * 4096 * 2 * 1088;
	double fp8 = mla_s(GPU_TRTLLM_DECODE_XQA, 1, 1, 400, 4096);
	double bf16 = mla_s(GPU_TRTLLM_DECODE_TRTLLM_GEN, 2, 1, 400, 4096);
	double one_more = mla_s(GPU_TRTLLM_DECODE_XQA, 1, 1, 401, 4096) - fp8;

	cr_assert(gpu_fixture_near(fp8, flops / 5e14 + 80e-6, 1e-9), "%g", fp8);
	cr_assert(gpu_fixture_near(bf16, flops / 4e14 + 80e-6, 1e-9), "%g",
		  bf16);
	cr_assert(gpu_fixture_near(one_more, flops / 400 / 5e14 + 0.2e-6,
				   1e-6), "%g", one_more);
}

Test(gpu, decode_trtllm_mla_fixed_time_is_shared_by_the_sms)
{
	/* 1000 sequences over 1 key: 1000 x 128 x 2176 = 278.5 MFLOP, 0.557
	 * us at 500 TFLOP/s (FP8), and 1000 x 20 us / 100 = 200 us of the
	 * sequences' fixed time: 200.557 us (bytes 1000 x (278,528 + 576 +
	 * 512) B = 279.6 MB, 55.9 us). */
	double t = mla_s(GPU_TRTLLM_DECODE_XQA, 1, 1, 1000, 1);

	cr_assert(gpu_fixture_near(t, 200e-6 + 1000 * 128 * 2176.0 / 5e14,
				   1e-9), "%g", t);
}

Test(gpu, decode_trtllm_mla_keys_apply_to_tensorrt_llm_absorbed_mla_only)
{
	/* Without the keys, or outside TensorRT-LLM's decode rules (the
	 * fill rule: another engine's kernel), the flash rates: the same
	 * time with the keys set or not. */
	double none_set = mla_s(GPU_TRTLLM_DECODE_NONE, 1, 1, 400, 4096);
	double none_unset = mla_s(GPU_TRTLLM_DECODE_NONE, 1, 0, 400, 4096);
	double xqa_unset = mla_s(GPU_TRTLLM_DECODE_XQA, 1, 0, 400, 4096);
	double xqa_set = mla_s(GPU_TRTLLM_DECODE_XQA, 1, 1, 400, 4096);

	cr_assert(gpu_fixture_near(none_set, none_unset, 1e-12));
	cr_assert(!gpu_fixture_near(xqa_set, xqa_unset, 1e-3), "%g %g",
		  xqa_set, xqa_unset);
}

/* A fixed time fitted on tables timed at another clock (gpu fitted_clock;
 * src/gpu/gpu.c gpu_fitted_time) is a unit's cycles: at the step's matrix
 * clock (the toy GPU's sustained 1000 MHz) it takes table clock / 1000
 * MHz of its stated time. */
Test(gpu, decode_unit_times_scale_from_their_tables_clock)
{
	struct gpu_spec g;
	struct gpu_attn_heads xqa = {
		.heads_q = 8, .heads_kv = 1, .head_dim_qk = 128,
		.head_dim_v = 128, .kv_B = 2, .split = GPU_TRTLLM_DECODE_XQA,
	};
	struct gpu_attn_heads mla = {
		.heads_q = 128, .heads_kv = 1, .head_dim_qk = 576,
		.head_dim_v = 512, .kv_B = 1, .shared_kv = 1,
		.split = GPU_TRTLLM_DECODE_XQA,
	};
	struct gpu_attn_group grp = {1000, 1, 1};
	double t;

	/* XQA, 1000 sequences over 1 key (decode_xqa_hmma_units_take_the_
	 * floor_with_a_16_bit_cache): 10 waves of the 20 us floor, 200 us at
	 * its tables' clock; tables at 1500 MHz: 10 x 20 x 1.5 = 300 us. */
	gpu_fixture_toy(&g);
	g.attention.xqa_hmma_unit_s = 20e-6;
	g.fitted_clock.xqa_hmma_unit_hz = 1500e6;
	t = gpu_attention_decode(&g, DTYPE_BF16, &xqa, &grp, 1).time_s;
	cr_assert(gpu_fixture_near(t, 300e-6, 1e-9), "%g", t);
	/* MLA, the same 1000 sequences (decode_trtllm_mla_fixed_time_is_
	 * shared_by_the_sms): 1000 x 20 us x 1.5 / 100 SMs = 300 us plus
	 * 278.5 MFLOP at 500 TFLOP/s. */
	g.attention.trtllm_mla_eff = 0.8;
	g.attention.trtllm_mla_fp8_eff = 0.5;
	g.attention.trtllm_mla_unit_s = 20e-6;
	g.fitted_clock.trtllm_mla_unit_hz = 1500e6;
	t = gpu_attention_decode(&g, DTYPE_BF16, &mla, &grp, 1).time_s;
	cr_assert(gpu_fixture_near(t, 300e-6 + 1000 * 128 * 2176.0 / 5e14,
				   1e-9), "%g", t);
	/* a system holding the GPU at 750 MHz: the cycles take 1500 / 750 =
	 * 2 x the stated time, 1000 x 40 us / 100 = 400 us, the FLOPs at 0.5
	 * x 2000 x 750 / 2000 = 375 TFLOP/s */
	{
		struct gpu_spec slow;

		gpu_at_matrix_clock(&g, 750e6, &slow);
		t = gpu_attention_decode(&slow, DTYPE_BF16, &mla, &grp,
					 1).time_s;
		cr_assert(gpu_fixture_near(t, 400e-6 + 1000 * 128 * 2176.0 /
					   3.75e14, 1e-9), "%g", t);
	}
}
