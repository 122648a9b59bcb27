/*
 * infer_gdn.c - a Gated DeltaNet (linear_attention) layer's mixer in an
 * inference step (Qwen3-Next, Qwen3.5), as vLLM runs it
 * (vllm-project/vllm@002d6073 vllm/model_executor/models/qwen3_next.py:
 * Qwen3NextDecoderLayer builds QwenGatedDeltaNetAttention for a
 * linear_attention layer, Qwen3NextAttention (q_proj with the gate,
 * attn_output * torch.sigmoid(gate)) for a full one;
 * Qwen3NextGatedDeltaNet: in_proj_qkvz and in_proj_ba, the q/k/v/z
 * reordering, causal_conv1d_fn over the prompt tokens and
 * causal_conv1d_update over the decode tokens, fused_gdn_gating, fla's
 * chunk_gated_delta_rule over the prompts and
 * fused_recurrent_gated_delta_rule over the decode tokens, RMSNormGated,
 * out_proj; SGLang's qwen3_next the same kernels).
 *
 * Notation of infer.c and gdn.c: T tokens of the step on one GPU (T_p of
 * prompts, T_d decoding, S_p and S_d their sequences), t = tp, H = H_v / t
 * value heads on one GPU, qk = H_k d_k / t, v = H d_v, c = 2 qk + v, W
 * the conv width, C the chunk of fla's kernels (the engine's
 * linear_attn_chunk: 64), B bytes per activation element.
 *
 *   in_proj      GEMMs (T, 2 qk + 2 v, h) and (T, 2 H, h)
 *   reorder      the q, k, v, z split out of the grouped layout: read
 *                and write T (c + v) B
 *   conv         prompts: read and write T_p c B and write each
 *                sequence's last W - 1 inputs, S_p (W - 1) c B; decode:
 *                read and write T_d c B and the state, read and write
 *                S_d (W - 1) c B; 2 W FLOPs a channel and token
 *   gating       fused_gdn_gating: read T 2 H B, write T 2 H 4 B
 *   core         prompts: the chunk kernels of gdn.c's forward over the
 *                G = sum S_p ceil(q / C) H (chunk, head) pairs (at the
 *                chunk kernels' measured rate, src/gpu/gpu_chunk.c),
 *                each sequence's state read and
 *                written, S_p H d_k d_v 4 B each way; decode: the
 *                recurrent update, per token and head the state read
 *                and written once a sequence, S_d H d_k d_v 4 B each
 *                way, q, k, v read and o written, 6 d_k d_v FLOPs a
 *                token and head (S^T k, the rank-1 update, S q)
 *   gated norm   read 2 T v B, write T v B
 *   out_proj     GEMM (T, h, v)
 * The fixed state a sequence keeps in each such layer replaces the
 * layer's KV cache: model_gdn_state_B / t on one GPU (infer_mem.c).
 */
#include "infer_impl.h"

#include <math.h>

#include "config/spec_job.h"

static double v_heads(const struct infer_dims *d)
{
	return d->gdn_v_heads / d->tp;
}

static double qk_width(const struct infer_dims *d)
{
	return d->gdn_k_heads * d->gdn_dk / d->tp;
}

static double v_width(const struct infer_dims *d)
{
	return v_heads(d) * d->gdn_dv;
}

double infer_gdn_params(const struct infer_dims *d)
{
	double h = d->hidden, qk = qk_width(d), v = v_width(d);
	double H = v_heads(d);

	/* in_proj_qkvz, in_proj_ba, conv1d, dt_bias, A_log, out_proj (the
	 * gated norm's d_v weights replicated) */
	return h * (2 * qk + 2 * v + 2 * H) + (2 * qk + v) * d->gdn_conv +
	       2 * H + d->gdn_dv + v * h;
}

double infer_gdn_state_B(const struct infer_dims *d)
{
	double c = 2 * qk_width(d) + v_width(d);

	return v_heads(d) * d->gdn_dk * d->gdn_dv * 4 +
	       (d->gdn_conv - 1) * c * d->act_B;
}

/* Prompt and decode tokens and sequences, and the prompts' chunks. */
static void split(const struct infer_batch *b, double C, double *tp,
		  double *sp, double *td, double *sd, double *chunks)
{
	int i;

	*tp = *sp = *td = *sd = *chunks = 0;
	for (i = 0; i < b->n; i++) {
		const struct infer_seqs *g = &b->g[i];

		if (g->pad || g->count <= 0 || g->q <= 0)
			continue;
		if (g->prefill) {
			*tp += g->count * g->q;
			*sp += g->count;
			*chunks += g->count * ceil(g->q / C);
		} else {
			*td += g->count * g->q;
			*sd += g->count;
		}
	}
}

/* One of fla's chunk kernels (gpu_chunk.c): the pairs' products of (C,
 * n, k), 16-bit operands, results of out_B bytes an element (4: the fp32
 * A = beta K K^T). */
static void chunk_gemm(struct infer_ops *o, const struct infer_dims *d,
		       const char *name, double pairs, double n, double k,
		       double out_B)
{
	infer_op_chunk(o, name, d->gdn_chunk, n, k, pairs, d->act_B, out_B);
}

void infer_gdn_ops(const struct infer_dims *d, const struct infer_batch *b,
		   double t, struct infer_ops *o)
{
	double qk = qk_width(d), v = v_width(d), H = v_heads(d);
	double c = 2 * qk + v, B = d->act_B, W = d->gdn_conv;
	double dk = d->gdn_dk, dv = d->gdn_dv, C = d->gdn_chunk;
	double state = H * dk * dv * 4;
	double tp, sp, td, sd, chunks;
	struct infer_op *op;

	split(b, C, &tp, &sp, &td, &sd, &chunks);
	infer_op_gemm_q(o, d, QX_ATTN, "in_proj_qkvz", t, 2 * qk + 2 * v,
			d->hidden);
	infer_op_gemm_q(o, d, QX_ATTN, "in_proj_ba", t, 2 * H, d->hidden);
	infer_op_mem(o, "gdn_reorder", t * (c + v) * B, t * (c + v) * B, 0);
	if (tp > 0)
		infer_op_mem(o, "gdn_conv1d", tp * c * B,
			     tp * c * B + sp * (W - 1) * c * B,
			     2 * W * tp * c);
	if (td > 0)
		infer_op_mem(o, "gdn_conv1d_update",
			     td * c * B + sd * (W - 1) * c * B,
			     td * c * B + sd * (W - 1) * c * B,
			     2 * W * td * c);
	infer_op_mem(o, "gdn_gating", t * 2 * H * B, t * 2 * H * 4,
		     8 * t * H);
	if (tp > 0) {
		double G = chunks * H;

		op = infer_op_mem(o, "gdn_state_io", sp * state,
				  sp * state, 0);
		if (op)
			op->attention = 1;
		chunk_gemm(o, d, "gdn_kkt", G, C, dk, 4);
		chunk_gemm(o, d, "gdn_solve_tril", G, C, C / 6, B);
		chunk_gemm(o, d, "gdn_w_u", G, dk + dv, C, B);
		chunk_gemm(o, d, "gdn_h", G, dv, 2 * dk, B);
		chunk_gemm(o, d, "gdn_o", G, dv, dk + C + C * dk / dv, B);
	}
	if (td > 0) {
		op = infer_op_mem(o, "gdn_recurrent",
				  sd * state + td * (2 * qk + v) * B,
				  sd * state + td * v * B,
				  6 * td * H * dk * dv);
		if (op)
			op->attention = 1;
	}
	infer_op_mem(o, "gdn_gated_norm", 2 * t * v * B, t * v * B,
		     (NORM_FLOPS + ACT_FLOPS) * t * v);
	infer_op_gemm_q(o, d, QX_ATTN, "out_proj", t, d->hidden, v);
}
