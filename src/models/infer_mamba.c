/*
 * infer_mamba.c - the Mamba-2 mixer of a hybrid model's 'M' layer in a
 * serving step (Nemotron-H, Nemotron 3), as vLLM runs it (vllm/
 * model_executor/layers/mamba/mamba_mixer2.py MambaMixer2.forward_cuda:
 * in_proj, causal_conv1d_fn over the prompt tokens and
 * causal_conv1d_update over the decoding ones, mamba_chunk_scan_combined
 * for the prompts (its Triton SSD kernels, ops/ssd_combined.py) and
 * selective_state_update for the decoding tokens, the gated RMSNorm,
 * out_proj). Notation as mamba.c's: H' = H/t heads of P, N state, G' =
 * G/t groups, K taps, Q chunk; d_inner' = H' P, c = d_inner' + 2 G' N,
 * w = 2 d_inner' + 2 G' N + H'.
 *
 *   norm       the layer's fused add + RMSNorm (T h)
 *   in_proj    GEMM m = T, n = w, k = h (weights in the serving dtype)
 *   conv1d     prompts: read/write T_p c B; decoding: read the conv state
 *              (K - 1) c B a sequence and x, write both: memory-bound
 *   SSD        prompts: the chunk kernels of mamba.c's forward over nc
 *              chunks (ceil(q/Q) a sequence), bf16 operands, at the chunk
 *              kernels' measured rate (src/gpu/gpu_chunk.c), and the fp32
 *              chunk states read and written (nc H' P N 4)
 *   state      decoding: selective_state_update reads and writes the
 *              sequence's SSM state H' P N ssm_B, 6 FLOPs an element
 *              (decay, dt B x, C h, D x); the state's bytes at the GPU's
 *              ssm_update_bandwidth (below), the rest streaming
 *   gate+norm  y silu(z) and the grouped RMSNorm: read 2 T d_inner' B,
 *              write T d_inner' B
 *   out_proj   GEMM m = T, n = h, k = d_inner', its TP all-reduce
 *
 * The state update is one Triton kernel (mamba_ssm's
 * _selective_scan_update_kernel, which vLLM, SGLang and TensorRT-LLM's
 * PyTorch backend each carry a copy of: vllm/model_executor/layers/
 * mamba/ops/mamba_ssm.py, tensorrt_llm/_torch/modules/mamba/
 * selective_state_update.py), a grid of (ceil(P / BLOCK_SIZE_M), sequences,
 * H') programs, each loading a BLOCK_SIZE_M x N tile of fp32 state,
 * updating it and storing it back. Its launch configuration is fixed by
 * N (BLOCK_SIZE_M 4 and 4 warps for N = 128: a 2 KiB tile a 128-thread
 * program), and at that configuration vLLM's own benchmark measured it
 * well below the streaming rate on H200 (vllm-project/vllm pull 44251:
 * 2.84 TB/s, configs/gpus/h200.yaml ssm_update_bandwidth); later vLLM
 * releases load tuned per-GPU configurations (pulls 43083, 44251) that
 * reach ~3.7 TB/s there, not modelled: the engine presets are 0.9-0.10.
 *
 * The scan and the state update are marked attention: like the attention
 * kernels they take per-sequence state, and vLLM's piecewise CUDA graphs
 * split around them (its mamba_mixer2 op is a splitting op).
 */
#include "infer_impl.h"

#include <math.h>

#include "config/spec_model.h"

double infer_mamba_state_layer_B(const struct infer_dims *d)
{
	double H = d->m_heads / d->tp, G = d->m_groups / d->tp;
	double c = H * d->m_head_dim + 2 * G * d->m_state;

	return H * d->m_head_dim * d->m_state * d->ssm_B +
	       c * (d->m_conv - 1) * d->act_B;
}

double infer_mamba_params(const struct infer_dims *d)
{
	double di = d->m_heads * d->m_head_dim;
	double c = di + 2 * d->m_groups * d->m_state;
	double w = 2 * di + 2 * d->m_groups * d->m_state + d->m_heads;

	return (d->hidden * w + di * d->hidden + c * (d->m_conv + 1) +
		3 * d->m_heads + di) / d->tp;
}

/* A Triton kernel of the scan (gpu_chunk.c): `batch` products of (m, n,
 * k) over 16-bit operands, results of out_B bytes an element (4: the fp32
 * chunk states and C B^T). */
static void chunk_gemm(struct infer_ops *o, const struct infer_dims *d,
		       const char *name, double m, double n, double k,
		       double batch, double out_B)
{
	infer_op_chunk(o, name, m, n, k, batch, d->act_B, out_B);
}

void infer_mamba_ops(const struct infer_dims *d, const struct infer_batch *b,
		     struct infer_ops *o)
{
	double H = d->m_heads / d->tp, G = d->m_groups / d->tp;
	double P = d->m_head_dim, N = d->m_state, K = d->m_conv;
	double di = H * P, c = di + 2 * G * N, w = di + c + H;
	double t = 0, B = d->act_B;
	double tp = 0, nc = 0, Q = d->m_chunk, seqs = 0, S;
	struct infer_op *op;
	int i;

	for (i = 0; i < b->n; i++) {	/* infer_batch_tokens' count, here:
					 * infer.c calls this file (no cycle) */
		const struct infer_seqs *g = &b->g[i];

		t += g->count * g->q;
		if (g->pad)
			continue;
		if (g->prefill) {
			tp += g->count * g->q;
			nc += g->count * ceil(g->q / Q);
		} else {
			seqs += g->count;
		}
	}
	op = infer_op_mem(o, "add_norm", 2 * t * d->hidden * B,
			  2 * t * d->hidden * B, NORM_FLOPS * t * d->hidden);
	infer_op_gemm(o, "in_proj", t, w, d->hidden);
	if (tp > 0)
		infer_op_mem(o, "conv1d", tp * c * B, tp * c * B,
			     2 * K * tp * c);
	if (seqs > 0)
		infer_op_mem(o, "conv1d_update", seqs * c * K * B,
			     seqs * c * K * B, 2 * K * seqs * c);
	if (tp > 0) {
		double Qe = fmin(Q, tp);

		S = nc * H * P * N * 4;
		chunk_gemm(o, d, "ssd_bmm_chunk", Qe, Qe, N, nc * G, 4);
		chunk_gemm(o, d, "ssd_chunk_state", P, N, Qe, nc * H, 4);
		op = infer_op_mem(o, "ssd_state_passing", S, S, nc * H * P * N);
		if (op)
			op->attention = 1;
		chunk_gemm(o, d, "ssd_chunk_scan", Qe, P, Qe + N, nc * H, B);
	}
	if (seqs > 0) {
		S = seqs * H * P * N * d->ssm_B;
		op = infer_op_mem(o, "selective_state_update",
				  S + seqs * c * B, S + seqs * di * B,
				  6 * seqs * H * P * N);
		if (op) {
			op->attention = 1;
			op->ssm_state_B = 2 * S;
		}
	}
	infer_op_mem(o, "gated_norm", 2 * t * di * B, t * di * B,
		     (ACT_FLOPS + NORM_FLOPS) * t * di);
	infer_op_gemm(o, "out_proj", t, d->hidden, di);
	infer_op_coll(o, "mamba_tp_allreduce", IOP_TP, d->tp, COLL_ALLREDUCE,
		      t * d->hidden * B);
}
