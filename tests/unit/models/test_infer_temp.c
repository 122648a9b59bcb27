/*
 * test_infer_temp.c - Llama 4's attention temperature tuning: which
 * layers scale their queries (model attn_temperature_tuning on the NoPE
 * layers) and the kernels an engine with attn_temperature eager runs for
 * it (TensorRT-LLM's Llama4Attention, infer_ops.c).
 *
 * Base job: tests/data/serve/l70-h100-tp8.yaml with Llama 4 Maverick
 * (workloads/models/llama4-maverick.yaml: 48 layers, 40 query and 8 KV
 * heads of 128, attn_temperature_tuning 4, nope_layer_interval 4) at
 * TP 8, a decode step of 64 sequences.
 */
#include <criterion/criterion.h>

#include "base/arena.h"
#include "config/spec_job.h"
#include "config/spec_model.h"
#include "models/infer.h"
#include "run/infer_run.h"

#include "fixture.h"

#define L70 "tests/data/serve/l70-h100-tp8.yaml"

/* Whether layer i of the job's model scales its queries. */
static int temp_of(const struct job_spec *j, int64_t i)
{
	struct infer_kind k;

	infer_kind_of(j, i, &k);
	return k.temperature;
}

/*
 * Maverick's NoPE layers are 3, 7, ..., 47 ((i + 1) % 4 == 0): those
 * scale their queries, the RoPE layers (0 dense, 1 MoE, 2 dense) do not.
 * attn_temperature_tuning 0 or false turns it off; true reads 1 (the
 * HF default, True) and turns it on. A model with the key and neither
 * attention_chunk_size nor a NoPE list (Llama 3 70B told 4) takes
 * transformers' no_rope_layer_interval 4: layer 3 scales, layer 0 does
 * not, and nothing is chunked.
 */
Test(infer_temp, nope_layers_scale_their_queries)
{
	const char *mav[] = {"model=llama4-maverick", "parallelism.tp=8"};
	const char *off[] = {"model=llama4-maverick", "parallelism.tp=8",
			     "model.attn_temperature_tuning=0"};
	const char *no[] = {"model=llama4-maverick", "parallelism.tp=8",
			    "model.attn_temperature_tuning=false"};
	const char *yes[] = {"model=llama4-maverick", "parallelism.tp=8",
			     "model.attn_temperature_tuning=true"};
	const char *l70[] = {"model.attn_temperature_tuning=4"};
	struct arena a;
	struct job_spec *j;
	struct infer_kind k;

	arena_init(&a);
	j = fixture_load_job(&a, L70, mav, 2);
	cr_assert_float_eq(j->model->attn_temperature_tuning, 4, 0);
	cr_assert_eq(temp_of(j, 0), 0);
	cr_assert_eq(temp_of(j, 1), 0);
	cr_assert_eq(temp_of(j, 2), 0);
	cr_assert_eq(temp_of(j, 3), 1);
	cr_assert_eq(temp_of(j, 47), 1);
	j = fixture_load_job(&a, L70, off, 3);
	cr_assert_eq(temp_of(j, 3), 0);
	j = fixture_load_job(&a, L70, no, 3);
	cr_assert_float_eq(j->model->attn_temperature_tuning, 0, 0);
	cr_assert_eq(temp_of(j, 3), 0);
	j = fixture_load_job(&a, L70, yes, 3);
	cr_assert_float_eq(j->model->attn_temperature_tuning, 1, 0);
	cr_assert_eq(temp_of(j, 3), 1);
	j = fixture_load_job(&a, L70, l70, 1);
	cr_assert_eq(j->model->nope_layer_interval, 4);
	cr_assert_eq(temp_of(j, 0), 0);
	cr_assert_eq(temp_of(j, 3), 1);
	infer_kind_of(j, 3, &k);
	cr_assert_float_eq(k.chunk, 0, 0);
	arena_release(&a);
}

static void bytes_eq(const struct infer_op *op, const char *name,
		     double read_B, double write_B)
{
	cr_assert_str_eq(op->name, name);
	cr_assert_eq(op->kern, IK_MEM, "%s is not a memory kernel", name);
	cr_assert_float_eq(op->read_B, read_B, 1e-6, "%s read %g, want %g",
			   name, op->read_B, read_B);
	cr_assert_float_eq(op->write_B, write_B, 1e-6, "%s write %g, want %g",
			   name, op->write_B, write_B);
}

/*
 * A dense layer with the temperature (kind.temperature) on TensorRT-LLM
 * (trtllm.yaml attn_temperature eager), 64 decode tokens at TP 8: q =
 * 40/8 x 128 = 640 and kv = 8/8 x 128 = 128 elements a token, bf16.
 * Right after the QKV GEMM, ten kernels:
 *   seven over the 64 positions, each reading and writing 64 x 4 = 256 B
 *   temp_q_scale reads 64 x 640 x 2 + 256 = 82,176 B, writes fp32
 *     64 x 640 x 4 = 163,840 B
 *   temp_q_cast reads 163,840 B, writes 64 x 640 x 2 = 81,920 B
 *   qkv_concat reads and writes 64 x (640 + 2 x 128) x 2 = 114,688 B
 * The same layer without the temperature has ten ops fewer; on vLLM
 * (attn_temperature fused, the default) the temperature adds none.
 */
Test(infer_temp, trtllm_runs_ten_eager_kernels)
{
	const char *trt[] = {"model=llama4-maverick", "parallelism.tp=8",
			     "phase=decode", "serving.batch=64",
			     "serving.engine=trtllm"};
	const char *vllm[] = {"model=llama4-maverick", "parallelism.tp=8",
			      "phase=decode", "serving.batch=64"};
	static const char *const pos[] = {
		"temp_pos_add", "temp_pos_div", "temp_floor", "temp_add",
		"temp_log", "temp_mul", "temp_add",
	};
	struct infer_kind plain = {0, 0, 0, 0, 0, 0, 0, 0}, temp = {0, 0, 0, 1, 0, 0, 0, 0};
	struct infer_ops o;
	struct infer_dims d;
	struct infer_batch b;
	struct arena a;
	struct job_spec *j;
	int n, q, i;

	arena_init(&a);
	j = fixture_load_job(&a, L70, trt, 5);
	infer_dims_from_job(j, j->system->gpu, &d);
	cr_assert(d.attn_temp_eager);
	infer_job_batch(j, &b);
	infer_layer_ops(&d, &b, &plain, NULL, &o);
	n = o.n;
	cr_assert_eq(fixture_infer_op_index(&o, "qkv_concat"), -1);
	infer_layer_ops(&d, &b, &temp, NULL, &o);
	cr_assert_eq(o.n, n + 10);
	q = fixture_infer_op_index(&o, "qkv");
	cr_assert_geq(q, 0);
	for (i = 0; i < 7; i++)
		bytes_eq(&o.op[q + 1 + i], pos[i], 256, 256);
	bytes_eq(&o.op[q + 8], "temp_q_scale", 82176, 163840);
	bytes_eq(&o.op[q + 9], "temp_q_cast", 163840, 81920);
	bytes_eq(&o.op[q + 10], "qkv_concat", 114688, 114688);

	j = fixture_load_job(&a, L70, vllm, 4);
	infer_dims_from_job(j, j->system->gpu, &d);
	cr_assert(!d.attn_temp_eager);
	infer_job_batch(j, &b);
	infer_layer_ops(&d, &b, &plain, NULL, &o);
	n = o.n;
	infer_layer_ops(&d, &b, &temp, NULL, &o);
	cr_assert_eq(o.n, n);
	cr_assert_eq(fixture_infer_op_index(&o, "temp_q_scale"), -1);
	arena_release(&a);
}
