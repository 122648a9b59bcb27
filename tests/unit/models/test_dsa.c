/*
 * test_dsa.c - DeepSeek Sparse Attention (DeepSeek-V3.2-Exp): the
 * lightning indexer's parameters, cache bytes and ops in training and
 * serving, the core as a causal window of index_topk keys; and the
 * parameter counts of the round-31 MoE presets against their sums.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "base/arena.h"
#include "config/spec_job.h"
#include "config/spec_model.h"
#include "fixture.h"
#include "models/footprint.h"
#include "models/infer.h"
#include "models/layer.h"
#include "models/layer_impl.h"
#include "run/infer_run.h"

#define Q30 "tests/data/serve/q30-h100.yaml"

static double preset_params(const char *model)
{
	char m[64];
	const char *sets[] = { m };
	struct arena a;
	struct job_spec *j;
	double p;

	snprintf(m, sizeof(m), "model=%s", model);
	arena_init(&a);
	j = fixture_load_job(&a, Q30, sets, 1);
	p = footprint_model_params(j);
	arena_release(&a);
	return p;
}

/*
 * Parameters as llmsim counts them (the embedding and LM head, padded
 * to 128 rows where needed, each layer's attention, two norms and MLP or
 * experts with the router, the final norm; no MTP module, no QK-norm
 * weights).
 * DeepSeek-V3 (h 7168, 61 layers, 3 dense): MLA a layer 7168 x 1536 +
 * 1536 + 1536 x 128 x 192 + 7168 x 576 + 512 + 512 x 128 x 256 + 128 x
 * 128 x 7168 = 187,107,840, norms 14,336; dense MLP 3 x 7168 x 18432 =
 * 396,361,728; MoE 257 x 3 x 7168 x 2048 + 256 x 7168 = 11,320,164,352;
 * 61 x 187,122,176 + 3 x 396,361,728 + 58 x 11,320,164,352 + 2 x 129280
 * x 7168 + 7168 = 671,026,404,352.
 * DeepSeek-V3.2-Exp adds the indexer in every layer: wq_b 1536 x 64 x
 * 128 = 12,582,912, wk 7168 x 128 = 917,504, k_norm 2 x 128 = 256,
 * weights_proj 7168 x 64 = 458,752: 13,959,424, x 61 = 851,524,864:
 * 671,877,929,216.
 * Kimi K2 (64 heads, 384 experts, 1 dense layer, vocab 163840): MLA
 * 7168 x 1536 + 1536 + 1536 x 64 x 192 + 7168 x 576 + 512 + 512 x 64 x
 * 256 + 64 x 128 x 7168 = 101,124,096 (+ 14,336 norms); MoE 385 x 3 x
 * 7168 x 2048 + 384 x 7168 = 16,958,226,432; 61 x 101,138,432 +
 * 396,361,728 + 60 x 16,958,226,432 + 2 x 163840 x 7168 + 7168 =
 * 1,026,408,209,408 (Kimi K2's card: 1 T total).
 * MiniMax-M2 (h 3072, 62 layers, 48 / 8 heads of 128, 256 experts of
 * 1536, no shared expert, vocab 200064): attention 3072 x 64 x 128 + 48
 * x 128 x 3072 = 44,040,192 (+ 6,144 norms); MoE 256 x 3 x 3072 x 1536
 * + 256 x 3072 = 3,624,665,088; 62 x 3,668,711,424 + 2 x 200064 x 3072
 * + 3072 = 228,689,304,576 (the card: 230 B).
 * Qwen3-32B (h 5120, 64 layers, 64 / 8 heads of 128, f 25600, vocab
 * 151936): 5120 x 80 x 128 + 64 x 128 x 5120 + 10,240 + 3 x 5120 x
 * 25600 = 488,253,440 a layer; x 64 + 2 x 151936 x 5120 + 5120 =
 * 32,762,106,880 (the card: 32.8 B).
 */
Test(dsa, preset_parameters_match_their_sums)
{
	cr_assert_float_eq(preset_params("deepseek-v3"), 671026404352.0, 0.5);
	cr_assert_float_eq(preset_params("deepseek-v3.2-exp"),
			   671877929216.0, 0.5);
	cr_assert_float_eq(preset_params("kimi-k2"), 1026408209408.0, 0.5);
	cr_assert_float_eq(preset_params("minimax-m2"), 228689304576.0, 0.5);
	cr_assert_float_eq(preset_params("qwen3-32b"), 32762106880.0, 0.5);
}

/* The core attends to index_topk keys (a window); the cache keeps the
 * latent (512 + 64) and the indexer key (128 fp8 + one fp32 scale =
 * 132 B) a layer: at 1 B an element 61 x (576 + 132) = 43,188 B a
 * token (DeepSeek-V3: 61 x 576 = 35,136). */
Test(dsa, window_is_the_top_k_and_the_cache_keeps_the_indexer_key)
{
	const char *v32[] = { "model=deepseek-v3.2-exp" };
	const char *v3[] = { "model=deepseek-v3" };
	struct arena a;
	struct job_spec *j;

	arena_init(&a);
	j = fixture_load_job(&a, Q30, v32, 1);
	cr_assert(model_is_dsa(j->model));
	cr_assert_eq(model_layer_window(j->model, 0), 2048);
	cr_assert_eq(model_layer_window(j->model, 60), 2048);
	cr_assert_float_eq(model_index_key_bytes(j->model), 132.0, 1e-9);
	cr_assert_float_eq(model_kv_bytes_per_token(j->model, 1), 43188.0,
			   1e-9);
	j = fixture_load_job(&a, Q30, v3, 1);
	cr_assert(!model_is_dsa(j->model));
	cr_assert_eq(model_layer_window(j->model, 0), 0);
	cr_assert_float_eq(model_kv_bytes_per_token(j->model, 1), 35136.0,
			   1e-9);
	arena_release(&a);
}

/* A small MLA layer with an indexer: h 1024, 16 heads, s 2048, b 2
 * (T = 4096), q_lora 256, kv_lora 128, H_I 4 heads of d_I 32, top-k
 * 512. */
static void dsa_dims(struct fixture *f, struct layer_dims *d)
{
	fixture_gpt(f, 4, 1024, 16, 128, 2048, 2, 16, 1, 1, 1);
	f->model.q_lora_rank = 256;
	f->model.kv_lora_rank = 128;
	f->model.qk_nope_head_dim = 64;
	f->model.qk_rope_head_dim = 32;
	f->model.v_head_dim = 64;
	f->model.index_n_heads = 4;
	f->model.index_head_dim = 32;
	f->model.index_topk = 512;
	layer_dims_from_job(&f->job, d);
}

static double op_flops(const struct layer_ops *o, const char *name)
{
	const struct layer_op *op = fixture_op(o, name);

	cr_assert_not_null(op, "no op %s", name);
	return layer_kern_model_flops(&op->k);
}

/*
 * Training forward: idx_wq 2 T (H_I d_I) r_q = 2 x 4096 x 128 x 256 =
 * 268,435,456; idx_wk 2 T d_I h = 2 x 4096 x 32 x 1024 = 268,435,456;
 * idx_w 2 T H_I h = 33,554,432; the logits 2 b (s H_I) ((s + 1)/2) d_I
 * = 2 x 2 x 8192 x 1024.5 x 32 = 1,074,266,112 (each query against the
 * keys before it). Backward: the logits' dq and dk, each as many FLOPs,
 * and the three weight gradients as their forward GEMMs; the core a
 * window of 512 keys. Parameters: the indexer's 256 x 128 + 1024 x 32 +
 * 64 + 1024 x 4 = 69,696 on top of MLA's.
 */
Test(dsa, training_indexer_ops)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_kind k = { .moe = 0, .window = 512 };
	struct layer_ops fw, bw;
	double with, without;

	dsa_dims(&f, &d);
	layer_fwd(&d, &k, &fw);
	fixture_assert_close(op_flops(&fw, "idx_wq"), 268435456.0);
	fixture_assert_close(op_flops(&fw, "idx_wk"), 268435456.0);
	fixture_assert_close(op_flops(&fw, "idx_w"), 33554432.0);
	fixture_assert_close(op_flops(&fw, "idx_logits"), 1074266112.0);
	cr_assert_not_null(fixture_op(&fw, "idx_topk"));
	cr_assert_eq(fixture_op(&fw, "attn")->k.attn.window, 512);
	layer_bwd(&d, &k, LREC_NONE, &bw);
	fixture_assert_close(op_flops(&bw, "idx_logits_dq"), 1074266112.0);
	fixture_assert_close(op_flops(&bw, "idx_logits_dk"), 1074266112.0);
	fixture_assert_close(op_flops(&bw, "idx_wq_wgrad"), 268435456.0);
	fixture_assert_close(op_flops(&bw, "idx_wk_wgrad"), 268435456.0);
	fixture_assert_close(op_flops(&bw, "idx_w_wgrad"), 33554432.0);
	with = attn_params(&d, 0);
	d.mla_d.idx_heads = 0;
	without = attn_params(&d, 0);
	fixture_assert_close(with - without, 69696.0);
}

/* The serving ops of one DSA layer of job sets (DeepSeek-V3.2-Exp on
 * the Q30 fixture's one H100, bf16). */
static void serve_ops(const char *const *sets, size_t n,
		      struct infer_ops *o, struct infer_dims *d,
		      struct infer_batch *b)
{
	struct arena a;
	struct job_spec *j;

	arena_init(&a);
	j = fixture_load_job(&a, Q30, sets, n);
	infer_dims_from_job(j, j->system->gpu, d);
	infer_job_batch(j, b);
	infer_layer_ops(d, b, NULL, NULL, o);
	arena_release(&a);
}

/* One DeepSeek-V3.2-Exp prompt of 4096 tokens (the MHA mode) and one of
 * 32768 (the sparse mode), the base job's cache as it is. */
static const char *const short_p[] = {
	"model=deepseek-v3.2-exp", "phase=prefill", "serving.batch=1",
	"serving.input_len=4096" };
static const char *const long_p[] = {
	"model=deepseek-v3.2-exp", "phase=prefill", "serving.batch=1",
	"serving.input_len=32768" };

/*
 * Decode, 4 sequences of 8192 cached tokens (each step's query sees
 * 8193 keys): the indexer's logits read 4 x 8193 x 132 = 4,325,904 B of
 * cached keys, write 4 x 8193 x 4 = 131,088 B of fp32 logits, 2 x 64 x
 * 128 x 32,772 = 536,936,448 FLOPs; the top-k reads them and writes 4 x
 * 2048 x 4 = 32,768 B. The core: absorbed, a window of 2048.
 */
Test(dsa, decode_indexer_reads_the_key_cache)
{
	const char *sets[] = { "model=deepseek-v3.2-exp", "serving.batch=4",
			       "serving.context_len=8192" };
	struct infer_ops o;
	struct infer_dims d;
	struct infer_batch b;
	const struct infer_op *op;

	serve_ops(sets, 3, &o, &d, &b);
	cr_assert_eq(b.n, 1);
	cr_assert_float_eq(b.g[0].ctx, 8192, 1e-9);
	op = fixture_infer_op(&o, "idx_logits_decode");
	cr_assert_not_null(op);
	fixture_assert_close(op->read_B, 4325904.0);
	fixture_assert_close(op->write_B, 131088.0);
	fixture_assert_close(op->vec_flops, 536936448.0);
	op = fixture_infer_op(&o, "idx_topk");
	fixture_assert_close(op->write_B, 32768.0);
	op = fixture_infer_op(&o, "idx_wq");
	cr_assert_float_eq(op->m, 4, 1e-9);
	cr_assert_float_eq(op->n, 8192, 1e-9);
	cr_assert_float_eq(op->k, 1536, 1e-9);
	cr_assert_eq(fixture_infer_count(&o, "kv_b"), 0);
	cr_assert_eq(fixture_infer_count(&o, "q_absorb"), 1);
}

/*
 * Prefill of one fresh prompt of s tokens: per token the sparse MQA
 * mode costs 2 a r (d_n + d_v) + 2 a (2 r + d_r) min(2048, K) and the
 * masked MHA mode 2 a r (d_n + d_v) + 2 a (d_n + d_r + d_v) K, K = (s +
 * 1)/2 the mean causal keys (a = 128, r = 512): equal near K = 6,963.
 * s = 4096 (K 2048.5): MHA (kv_b decompresses, the core dense); s =
 * 32768 (K 16384.5): sparse (no kv_b, every token absorbed).
 */
Test(dsa, prefill_mode_by_work)
{
	struct infer_ops o;
	struct infer_dims d;
	struct infer_batch b;
	const struct infer_op *op;

	serve_ops(short_p, 4, &o, &d, &b);
	op = fixture_infer_op(&o, "attn_prefill");
	cr_assert_not_null(op);
	cr_assert(op->dense_mha);
	cr_assert_eq(fixture_infer_count(&o, "kv_b"), 1);
	cr_assert_eq(fixture_infer_count(&o, "q_absorb"), 0);
	serve_ops(long_p, 4, &o, &d, &b);
	op = fixture_infer_op(&o, "attn_prefill");
	cr_assert(!op->dense_mha);
	cr_assert_eq(fixture_infer_count(&o, "kv_b"), 0);
	op = fixture_infer_op(&o, "q_absorb");
	cr_assert_float_eq(op->m, 32768, 1e-9);
}

/*
 * The MHA mode's Q and K are assembled per head before the kernel
 * (infer.c attn_mla, qk_assemble): one H100, a = 128 heads, d_n 128,
 * d_r 64, bf16; a prompt of 4096 tokens over the fixture's 512 cached
 * ones decompresses 4608 keys. The fixture's engine is TensorRT-LLM
 * (mla_q_pe_fused: q_pe reaches Q in the RoPE / cache kernel, no
 * write-back); with a cached prefix K is built whole: reads 4608 x (128
 * x 128 + 64) x 2 = 151,584,768 B (k_nope, and k_pe once; the bf16
 * cache's k_pe at kv_B 2 too), writes 4608 x 128 x 192 x 2 =
 * 226,492,416 B. The sparse mode (32768 tokens) decompresses none and
 * builds no K.
 */
Test(dsa, mha_prefill_builds_the_per_head_keys)
{
	struct infer_ops o;
	struct infer_dims d;
	struct infer_batch b;
	const struct infer_op *op;

	serve_ops(short_p, 4, &o, &d, &b);
	cr_assert_eq(fixture_infer_count(&o, "qk_assemble"), 1);
	op = fixture_infer_op(&o, "qk_assemble");
	fixture_assert_close(op->read_B, 151584768.0);
	fixture_assert_close(op->write_B, 226492416.0);
	serve_ops(long_p, 4, &o, &d, &b);
	cr_assert_eq(fixture_infer_count(&o, "qk_assemble"), 0);
}

/* The attention FLOPs of a step's attn_prefill op (costed on the job's
 * GPU). */
static double infer_op_flops(const char *const *sets, size_t n,
			     struct infer_dims *d, const char *name)
{
	struct arena a;
	struct job_spec *j;
	struct infer_batch b;
	struct infer_ops o;
	struct infer_unit u;
	double f = -1;
	int i;

	arena_init(&a);
	j = fixture_load_job(&a, Q30, sets, n);
	infer_dims_from_job(j, j->system->gpu, d);
	infer_job_batch(j, &b);
	infer_layer_ops(d, &b, NULL, NULL, &o);
	infer_cost(&o, d, &b, NULL, j->system->gpu, IGRAPH_FULL, &u);
	for (i = 0; i < u.n; i++)
		if (strcmp(u.op[i].name, name) == 0)
			f = u.op[i].flops;
	arena_release(&a);
	return f;
}

static double attn_prefill_flops(const char *const *sets, size_t n,
				 struct infer_dims *d)
{
	return infer_op_flops(sets, n, d, "attn_prefill");
}

/*
 * vLLM's FLASHMLA_SPARSE backend (engine dsa_kernel flashmla_sparse):
 * a 4,096-token prompt, which the auto rule runs in the masked-MHA mode
 * (prefill_mode_by_work), goes through the sparse kernel (no kv_b, every
 * token absorbed), and at TP 8 (128 / 8 = 16 heads a rank) the kernel
 * computes the H100's flashmla_sparse_heads = 64: 64 / 16 = 4x the
 * attention FLOPs of the unpadded kernel (flashmla_sparse_heads 0, one
 * head a tile). Heads already a multiple (TP 1: 128) are not padded.
 */
Test(dsa, flashmla_sparse_pads_the_heads)
{
	const char *pad[] = { "model=deepseek-v3.2-exp", "phase=prefill",
			      "serving.batch=1", "serving.input_len=4096",
			      "system.gpus_per_node=8", "parallelism.tp=8",
			      "serving.engine.dsa_kernel=flashmla_sparse" };
	const char *nopad[] = { "model=deepseek-v3.2-exp", "phase=prefill",
				"serving.batch=1", "serving.input_len=4096",
				"system.gpus_per_node=8", "parallelism.tp=8",
				"serving.engine.dsa_kernel=flashmla_sparse",
				"system.gpu.flashmla_sparse_heads=0" };
	const char *tp1[] = { "model=deepseek-v3.2-exp", "phase=prefill",
			      "serving.batch=1", "serving.input_len=4096",
			      "serving.engine.dsa_kernel=flashmla_sparse" };
	const char *tp1_nopad[] = { "model=deepseek-v3.2-exp", "phase=prefill",
				    "serving.batch=1",
				    "serving.input_len=4096",
				    "serving.engine.dsa_kernel=flashmla_sparse",
				    "system.gpu.flashmla_sparse_heads=0" };
	struct infer_ops o;
	struct infer_dims d;
	struct infer_batch b;
	const struct infer_op *op;
	double padded, plain;

	serve_ops(pad, 7, &o, &d, &b);
	cr_assert_float_eq(d.dsa_pad_heads, 64, 1e-12);
	op = fixture_infer_op(&o, "attn_prefill");
	cr_assert_not_null(op);
	cr_assert(!op->dense_mha);
	cr_assert_eq(fixture_infer_count(&o, "kv_b"), 0);
	op = fixture_infer_op(&o, "q_absorb");
	cr_assert_not_null(op);
	cr_assert_float_eq(op->m, 4096, 1e-9);
	padded = attn_prefill_flops(pad, 7, &d);
	plain = attn_prefill_flops(nopad, 8, &d);
	cr_assert_float_eq(d.dsa_pad_heads, 1, 1e-12);
	cr_assert_gt(plain, 0);
	cr_assert_float_eq(padded / plain, 4.0, 1e-9, "%g / %g", padded,
			   plain);
	padded = attn_prefill_flops(tp1, 5, &d);
	plain = attn_prefill_flops(tp1_nopad, 6, &d);
	cr_assert_float_eq(padded / plain, 1.0, 1e-12);
}

/*
 * FlashMLA's sparse kernel computes every one of a query's index_topk
 * slots, its invalid (past-causal) indices masked, not skipped
 * (csrc/sm90/prefill/sparse/fwd.cu: num_topk_blocks = topk / B_TOPK): a
 * fresh 1,024-token prompt at TP 8 costs 1024 x 2048 slots x 64 padded
 * heads x 2 (576 + 512) = 292,057,776,128 FLOPs, though its queries see
 * 1..1024 causal keys (a causal window would count 1024 x 1025 / 2 =
 * 524,800 pairs, a quarter of them). Decode tokens with a bf16 cache go
 * through the same kernel (FlashMLASparseImpl._forward_bf16_kv): 4
 * sequences at 8,192 cached, 4 x 2048 x 64 x 2176 = 1,140,850,688 FLOPs;
 * with an fp8 cache they keep the decode kernel: 16 unpadded heads over
 * the keys it reads (this harness costs without a layer kind, so without
 * the 2,048-key window: 4 x 16 x 8193 x 2176 = 1,140,989,952).
 */
Test(dsa, flashmla_sparse_costs_every_topk_slot)
{
	const char *pre[] = { "model=deepseek-v3.2-exp", "phase=prefill",
			      "serving.batch=1", "serving.input_len=1024",
			      "system.gpus_per_node=8", "parallelism.tp=8",
			      "serving.engine.dsa_kernel=flashmla_sparse" };
	const char *dec[] = { "model=deepseek-v3.2-exp", "serving.batch=4",
			      "serving.context_len=8192",
			      "system.gpus_per_node=8", "parallelism.tp=8",
			      "serving.engine.dsa_kernel=flashmla_sparse" };
	const char *dec8[] = { "model=deepseek-v3.2-exp", "serving.batch=4",
			       "serving.context_len=8192",
			       "system.gpus_per_node=8", "parallelism.tp=8",
			       "serving.engine.dsa_kernel=flashmla_sparse",
			       "serving.kv_dtype=fp8" };
	struct infer_dims d;
	double f;

	cr_assert_float_eq(infer_op_flops(pre, 7, &d, "attn_prefill"),
			   292057776128.0, 1);
	cr_assert_float_eq(infer_op_flops(dec, 6, &d, "attn_decode"),
			   1140850688.0, 1);
	f = infer_op_flops(dec8, 7, &d, "attn_decode");
	cr_assert_float_eq(f, 1140989952.0, 1, "%.1f", f);
}
