/*
 * infer_dims.c - the dimensions of an inference step on one GPU: the
 * job's sizes, dtypes and engine rules resolved once (infer_dims_from_job)
 * for the op list of infer.c, whose header comment gives the notation.
 */
#include "infer_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "config/spec_fabric.h"
#include "config/spec_job.h"
#include "config/spec_system.h"
#include "layer.h"
#include "network/link.h"

/* Vocabulary-parallel tables pad each rank's share to a multiple of this
 * (vLLM vocab_parallel_embedding.py DEFAULT_VOCAB_PADDING_SIZE = 64;
 * SGLang the same). */
#define VOCAB_PAD 64.0

static double pad_up(double v, double multiple)
{
	return ceil(v / multiple) * multiple;
}

enum dtype infer_compute_dtype(const struct job_spec *j,
			       const struct gpu_spec *g)
{
	const struct serving_spec *s = &j->serving;
	enum dtype w = (enum dtype)s->dtype;

	if (s->activation_dtype >= 0)
		return (enum dtype)s->activation_dtype;
	if (gpu_peak_flops(g, w) > 0)
		return w;
	return DTYPE_BF16;
}

/* The engine's exceptions to quant_fusion (infer.c's header):
 * norm_quant tp_allreduce leaves a norm's output to a quantization kernel
 * unless the norm runs fused into the TP all-reduce, TP > 1 without
 * attention DP and hidden > norm_quant_hidden, and in a step only while
 * the all-reduce fits the fusion's workspace (norm_quant_ar_max, at TP 2
 * norm_quant_ar_max_tp2; norm_apart); act_quant per_tensor
 * leaves block-scaled SiLU-mul outputs (anything narrower than 16 bits
 * but per-tensor FP8) to one. */
static void quant_rules(const struct job_spec *j, struct infer_dims *d)
{
	const struct engine_spec *e = j->serving.engine;
	int ar_fused;

	if (!e)
		return;
	ar_fused = d->tp > 1 && !j->parallelism.attention_dp &&
		   d->hidden > (double)e->norm_quant_hidden;
	d->norm_quant_apart = e->norm_quant == ENGINE_NORMQ_TP_ALLREDUCE &&
			      !ar_fused;
	if (e->norm_quant == ENGINE_NORMQ_TP_ALLREDUCE && ar_fused)
		d->norm_quant_max_B = d->tp <= 2 ? e->norm_quant_ar_max_tp2_B
						 : e->norm_quant_ar_max_B;
	d->act_quant_apart = e->act_quant == ENGINE_ACTQ_PER_TENSOR &&
			     d->compute != DTYPE_FP8;
}

/* Whether TensorRT-LLM's attention op (engine prefill_kernel trtllm) runs
 * its context FMHA in 16 bits. The op takes its FP8 FMHA when it writes
 * a quantized output or reads an FP8 cache through the paged context
 * FMHA: mFP8ContextFMHA = is_fp8_out || is_fp4_out || (hasFp8KvCache()
 * && use_paged_context_fmha) (NVIDIA/TensorRT-LLM cpp/tensorrt_llm/thop/
 * attentionOp.cpp, stored versions of late 2025 and 2026). is_fp8_out /
 * is_fp4_out: the op writes o_proj's FP8 / NVFP4 input itself (an
 * out_scale from a quantized o_proj, modules/attention.py; here a GEMM
 * input narrower than 16 bits, the quantization fused, o_proj not
 * excluded). An FP8 cache forces the paged context FMHA at 1.3.0rc20
 * (attention_backend/trtllm.py, nvbug 5624818, as aiconfigurator's
 * collector notes; collector/trtllm/collect_attn.py @ 095f58a5) [?: not
 * read at 1.0]: its rows with an FP8 cache time as its FP8 ones. So the
 * 16-bit kernel runs with a 16-bit cache and an unquantized output
 * (gpt-oss on Hopper: bf16 attention, "kv_cache dtype auto"). MLA's
 * context (its own kernels and tables) is left out. */
static int ctx16(const struct job_spec *j, const struct infer_dims *d)
{
	const struct engine_spec *e = j->serving.engine;
	int out_quant = d->gemm_a_B < d->act_B &&
			d->quant_fusion >= ENGINE_QFUSE_ALL &&
			!(d->qexcl & QX_ATTN_OUT);

	return e && e->prefill_kernel == ENGINE_PREFILL_TRTLLM && !d->mla &&
	       d->kv_B >= d->act_B && !out_quant;
}

/* The block-table copy of vLLM V1 (engine block_table_copy;
 * vllm-project/vllm v1/worker/block_table.py, as in ROCm/vllm 0909_rc3
 * @ 6663000a: MultiGroupBlockTable gives each request a row of
 * cdiv(max_model_len, block_size) int32 block ids; gpu_model_runner.py
 * _prepare_inputs calls commit_block_table(num_reqs) first every step,
 * block_table[:num_reqs].copy_(block_table_cpu[:num_reqs],
 * non_blocking=True) from pinned memory on the current stream: whole
 * rows, however few blocks a request holds). max_model_len is the job's
 * serving.max_model_len, else the model's context. The copy runs at the
 * payload rate of the system's host port (PCIe); a system without a
 * host fabric (Grace's NVLink-C2C) is not costed. */
static void block_table_dims(const struct job_spec *j, struct infer_dims *d)
{
	const struct engine_spec *e = j->serving.engine;
	double ctx = j->serving.max_model_len > 0 ?
		     (double)j->serving.max_model_len :
		     (double)j->model->max_position_embeddings;

	if (!e || !e->block_table_copy || !(ctx > 0) || e->block_size < 1)
		return;
	d->block_row_B = ceil(ctx / (double)e->block_size) * 4;
	if (j->system && j->system->host && j->system->host->link)
		d->h2d_Bps = link_payload_rate_Bps(j->system->host->link) *
			     j->system->host->link->sustained;
}

/* vLLM's CUDA platform (platforms/cuda.py get_attn_backend_cls: "if
 * has_sink and not cls.is_device_capability(90): ... return
 * TRITON_ATTN_VLLM_V1", FlashInfer first on 10.0) sends a model with
 * attention sinks to its Triton backend on every other NVIDIA GPU, since
 * FlashAttentionImpl takes sinks only in FlashAttention 3 (Hopper): the
 * rows of that kernel's programs (engine sink_attn_block_m), 0 where the
 * GPU's own flash kernel runs. */
/* The compute capability of an NVIDIA GPU ("sm80" -> 80); -1 for any
 * other arch string (ROCm "gfx942", none). */
static long sm_cc(const struct gpu_spec *g)
{
	if (!g->arch || strncmp(g->arch, "sm", 2) != 0)
		return -1;
	return strtol(g->arch + 2, NULL, 10);
}

static double sink_rows(const struct model_spec *m,
			const struct engine_spec *e, const struct gpu_spec *g)
{
	long cc = sm_cc(g);
	size_t i;

	if (!e || e->sink_attn_block_m <= 0 || m->attention_sinks != 1 ||
	    cc < 0)
		return 0;
	for (i = 0; i < e->sink_attn_native_cc.n; i++)
		if (e->sink_attn_native_cc.v[i] == cc)
			return 0;
	return (double)e->sink_attn_block_m;
}

/* One varlen flash kernel for a step's prompt and decode tokens, the
 * decode tokens' query heads unpacked (vLLM V1 on FlashAttention 2; gpu.h
 * gpu_attention_mixed): its programs' rows (engine mixed_attn_block_m) on
 * a GPU in mixed_attn_unpacked_cc; 0 elsewhere, for MLA (own backends)
 * and under the sink rule (Triton). */
static double mixed_rows(const struct model_spec *m,
			 const struct engine_spec *e, const struct gpu_spec *g,
			 double sink)
{
	long cc = sm_cc(g);
	size_t i;

	if (!e || e->mixed_attn_block_m <= 0 || sink > 0 ||
	    model_is_mla(m) || cc < 0)
		return 0;
	for (i = 0; i < e->mixed_attn_unpacked_cc.n; i++)
		if (e->mixed_attn_unpacked_cc.v[i] == cc)
			return (double)e->mixed_attn_block_m;
	return 0;
}

void infer_dims_from_job(const struct job_spec *j, const struct gpu_spec *g,
			 struct infer_dims *d)
{
	const struct model_spec *m = j->model;
	const struct serving_spec *s = &j->serving;

	memset(d, 0, sizeof(*d));
	d->hidden = (double)m->hidden_size;
	d->heads = (double)m->num_attention_heads;
	d->kv_heads = (double)m->num_key_value_heads;
	d->head_dim = (double)m->head_dim;
	d->ffn = (double)m->intermediate_size;
	d->layers = (double)m->num_hidden_layers;
	d->tp = (double)j->parallelism.tp;
	d->vocab = pad_up((double)m->vocab_size / d->tp, VOCAB_PAD) * d->tp;
	d->gated = m->gated_mlp;
	d->rope = m->position_embedding == POS_ROPE;
	d->mla = model_is_mla(m);
	d->q_lora_rank = (double)m->q_lora_rank;
	d->kv_lora_rank = (double)m->kv_lora_rank;
	d->rope_dim = (double)m->qk_rope_head_dim;
	d->nope_dim = (double)m->qk_nope_head_dim;
	d->v_head_dim = (double)m->v_head_dim;
	if (model_is_dsa(m)) {
		d->index_heads = (double)m->index_n_heads;
		d->index_dim = (double)m->index_head_dim;
		d->index_topk = (double)m->index_topk;
		d->index_key_B = model_index_key_bytes(m);
		/* vLLM's FlashMLASparseImpl sends every token to FlashMLA's
		 * sparse kernels (no masked-MHA mode) and pads the query
		 * heads for the prefill kernel (engine dsa_kernel) */
		if (s->engine &&
		    s->engine->dsa_kernel == ENGINE_DSA_FLASHMLA_SPARSE)
			d->dsa_pad_heads = fmax(1, g->flashmla_sparse_heads);
	}
	d->sink_rows = sink_rows(m, s->engine, g);
	d->mixed_rows = mixed_rows(m, s->engine, g, d->sink_rows);
	d->base = layer_job_act_dtype(j);	/* bf16 */
	d->weight = (enum dtype)s->dtype;
	d->compute = infer_compute_dtype(j, g);
	d->kv = (enum dtype)s->kv_dtype;
	d->act_B = dtype_bytes(d->base);
	d->gemm_a_B = fmin(dtype_bytes(d->compute), d->act_B);
	d->weight_B = dtype_bytes(d->weight);
	d->kv_B = dtype_bytes(d->kv);
	d->qexcl = d->weight != d->base ? m->quantization.excluded : 0;
	d->quant_fusion = s->engine ? s->engine->quant_fusion
				    : ENGINE_QFUSE_ALL;
	d->rope_cache_fused = s->engine ? s->engine->rope_cache_fused : 1;
	d->mla_q_pe_fused = s->engine ? s->engine->mla_q_pe_fused : 0;
	/* without an engine, engine_schema's default (fla's chunk) */
	d->gdn_chunk = s->engine ? (double)s->engine->linear_attn_chunk : 64;
	d->qk_norm = m->qk_layernorm == 1 && !d->mla;
	d->qk_norm_rope_fused = s->engine ? s->engine->qk_norm_rope_fused : 0;
	d->attn_temp_eager = s->engine &&
			     s->engine->attn_temperature == ENGINE_ATEMP_EAGER;
	d->input_broadcasts = s->engine ? (int)s->engine->input_broadcasts : 0;
	d->graph_input_copies =
		s->engine ? (int)s->engine->graph_input_copies : 0;
	d->sampler_passes = !s->engine ? 1 :
			    s->greedy && s->engine->sampler_passes_greedy > 0 ?
			    (int)s->engine->sampler_passes_greedy :
			    (int)s->engine->sampler_passes;
	d->sampler_copies = s->engine ? (int)s->engine->sampler_copies : 0;
	block_table_dims(j, d);
	d->trtllm_decode = s->engine &&
			   s->engine->decode_kernel == ENGINE_DECODE_TRTLLM;
	d->decode_partition =
		s->engine ? (double)s->engine->decode_partition : 0;
	d->skinny_rows = s->engine ? (int)s->engine->skinny_gemm_rows : 0;
	d->skinny_rows_base =
		s->engine ? (int)s->engine->skinny_gemm_rows_base : 0;
	/* A block-scaled fp8 checkpoint (DeepSeek-V3's 128 x 128 scales)
	 * runs block-scaled kernels, which promote every k block. */
	d->fp8_fast_accum = s->engine && s->engine->fp8_fast_accum &&
			    m->quantization.method != QUANT_FP8;
	/* FP8 weights on a GPU without FP8 MMAs: vLLM's Fp8LinearMethod
	 * runs them through Marlin (use_marlin = not capability 8.9;
	 * apply_fp8_marlin_linear: gptq_marlin_gemm with float8_e4m3fn
	 * weights, bf16 inputs), the block scales as 128-wide groups
	 * (marlin_utils_fp8.py prepare_fp8_layer_for_marlin) */
	d->wo_linear_eff = s->engine && s->engine->weight_only_linear_kernel ==
					     ENGINE_WO_MOE_MARLIN ?
			   g->weight_only_linear_eff : 0;
	d->multi_step = s->engine ? (int)s->engine->multi_step : 1;
	d->moe_model = model_is_moe(m);
	if (d->moe_model)
		infer_moe_dims(j, g, d);
	if (m->hybrid_override_pattern && m->mamba_num_heads > 0) {
		d->m_heads = (double)m->mamba_num_heads;
		d->m_head_dim = (double)m->mamba_head_dim;
		d->m_state = (double)m->ssm_state_size;
		d->m_groups = (double)m->n_groups;
		d->m_conv = (double)m->conv_kernel;
		d->m_chunk = (double)m->chunk_size;
		d->ssm_B = model_mamba_ssm_B(m, d->act_B);
	}
	d->attn_gate = m->attn_output_gate == 1;
	if (model_is_gdn(m)) {
		d->gdn_k_heads = (double)m->linear_num_key_heads;
		d->gdn_v_heads = (double)m->linear_num_value_heads;
		d->gdn_dk = (double)m->linear_key_head_dim;
		d->gdn_dv = (double)m->linear_value_head_dim;
		d->gdn_conv = (double)m->linear_conv_kernel_dim;
	}
	quant_rules(j, d);
	d->trtllm_ctx16 = ctx16(j, d);
}
