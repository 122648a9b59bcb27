/*
 * attn_mla.c - DeepSeek's attention ops of attn.c: multi-head latent
 * attention's down and up projections and its torch.cat assembly of q
 * and k (notation and the MLA projections: the top of attn.c), and
 * DeepSeek Sparse Attention's lightning indexer (DeepSeek-V3.2), its
 * forward, backward and parameters. attn.c runs them in order with the
 * rest of the attention; declared in layer_impl.h.
 */
#include "layer_impl.h"

#include <math.h>

/* MLA assembled by torch.cat (framework mla_concat; NeMo AutoModel's
 * deepseek_v3 MLA.forward @ 8d9bfb90e): q = cat(q_nope, q_pe) and k =
 * cat(k_nope, k_pe expanded to the hq heads), n_q = T hq (nope + rope)
 * elements each: read n_q and T hq nope + T rope (the expanded k_pe is
 * one head re-read), write 2 n_q. Backward the cats' gradients are views,
 * but torch.split's backward cats the q up-projection's gradient (read
 * and write n_q) and the kv up-projection's (n_kv = T hq (nope + v)), and
 * the expand's backward sums T hq rope into T rope. */
void attn_mla_concat(struct layer_ops *o, enum layer_pass pass,
		     const struct layer_dims *d)
{
	const struct mla_dims *m = &d->mla_d;
	double t = layer_tokens(d), hq = d->heads / d->tp, B = d->act_B;
	double nq = t * hq * (m->nope + m->rope), nkv = t * hq * (m->nope + m->v);
	struct layer_op *op;

	if (!d->mla || !d->mla_concat)
		return;
	if (pass != PASS_BWD) {
		op = lop_memop(o, "mla_concat", pass,
			       (nq + t * hq * m->nope + t * m->rope) * B,
			       2 * nq * B, 0);
		op->k.launches = 2;
		return;
	}
	op = lop_memop(o, "mla_concat_bwd", pass,
		       (nq + nkv + t * hq * m->rope) * B,
		       (nq + nkv + t * m->rope) * B, t * hq * m->rope);
	op->k.launches = 3;
}

/* MLA down projections on the SP shard (duplicated over TP). */
void attn_mla_down_fwd(struct layer_ops *o, enum layer_pass pass,
		       const struct layer_dims *d)
{
	const struct mla_dims *m = &d->mla_d;
	double ts = layer_sp_tokens(d), h = d->hidden;
	int16_t in = lop_tail(o);

	lop_cast(o, "mla_down_cast", pass, d, d->lowp, ts * h);
	if (m->q_lora > 0) {
		lop_swizzle(o, pass, d, d->lowp, m->q_lora * h, ts * h, 1, 1);
		lop_gemm(o, "q_down", pass, ts, m->q_lora, h, d->lowp);
		lop_memop(o, "q_norm", pass, ts * m->q_lora * d->act_B,
			  ts * m->q_lora * d->act_B, NORM_FLOPS * ts * m->q_lora);
	}
	lop_swizzle(o, pass, d, d->lowp, (m->kv_lora + m->rope) * h, ts * h,
		    1, 1);
	lop_gemm(o, "kv_down", pass, ts, m->kv_lora + m->rope, h, d->lowp)
		->dep[0] = d->lowp ? in + 1 : in;	/* the cast */
	lop_memop(o, "kv_norm", pass, ts * m->kv_lora * d->act_B,
		  ts * m->kv_lora * d->act_B, NORM_FLOPS * ts * m->kv_lora);
}

/* MLA's up projections over the gathered tokens (recomputed whole with
 * mla_up_proj, RoPE after them). */
void attn_mla_up_fwd(struct layer_ops *o, enum layer_pass pass,
		     const struct layer_dims *d)
{
	const struct mla_dims *m = &d->mla_d;
	double hq = d->heads / d->tp, t = layer_tokens(d);

	if (m->q_lora > 0)
		lop_column_fwd(o, "q_up_cast", "q_up_allgather", "q_up", pass,
			       d, hq * (m->nope + m->rope), m->q_lora, d->lowp);
	else
		lop_column_fwd(o, "q_cast", "q_allgather", "q_proj", pass, d,
			       hq * (m->nope + m->rope), d->hidden, d->lowp);
	lop_column_fwd(o, "kv_up_cast", "kv_up_allgather", "kv_up", pass, d,
		       hq * (m->nope + m->v), m->kv_lora, d->lowp);
	lop_tpcoll(o, "k_rope_allgather", pass, d, COLL_ALLGATHER,
		   d->sp ? t * m->rope * d->act_B : 0);
}

/* ---- DeepSeek Sparse Attention's lightning indexer ---- */

/* Indexer parameters (DeepSeek-V3.2-Exp inference/model.py Indexer):
 * wq_b (r_q -> H_I d_I), wk (h -> d_I), k_norm's LayerNorm weight and
 * bias (2 d_I), weights_proj (h -> H_I); 0 without DSA. */
double attn_indexer_params(const struct mla_dims *m, double h)
{
	if (!(m->idx_heads > 0))
		return 0;
	return m->q_lora * m->idx_heads * m->idx_dim + h * m->idx_dim +
	       2 * m->idx_dim + h * m->idx_heads;
}

/* The indexer's forward over a microbatch on one GPU (d->mla_d.idx_heads
 * > 0), its weights replicated over TP (deepseek-ai/DeepSeek-V3.2-Exp @
 * 6d8cb70 inference/model.py Indexer: plain Linear layers; the whole
 * H_I heads on every rank), on the T gathered tokens:
 *   idx_wq   GEMM (T, H_I d_I, r_q)   on MLA's normed query latent
 *   idx_wk   GEMM (T, d_I, h)         idx_w GEMM (T, H_I, h)
 *   idx_prep k's LayerNorm, rotary and the Hadamard rotation of q and
 *            k: read and write T (H_I + 1) d_I
 *   idx_logits  per sequence, s queries against the keys before them,
 *            the H_I heads summed in the kernel (one logit a pair, not a
 *            head): a GEMM of m = s, n = (s + 1)/2 (the mean keys a query
 *            sees: the causal half), k = H_I d_I, batch b; its FLOPs
 *            2 b H_I d_I s (s + 1)/2 (the reference's fp8_index, DeepGEMM
 *            fp8_mqa_logits, skip the masked keys), in 16 bits [?: the
 *            reference quantizes q and k to fp8; a training indexer's
 *            dtype is not published]
 *   idx_topk read the b s (s + 1)/2 fp32 logits, write b s k int32
 * The core then attends to index_topk keys a query: a causal window of
 * index_topk (model_layer_window; the flash kernel's rate for the
 * sparse kernel's [?]). Backward (DeepSeek-V3.2 trains the indexer by a
 * KL loss on its own, its input detached from the model: DeepSeek-AI
 * 2025, "DeepSeek-V3.2", section 2.1): the logits' two gradient GEMMs
 * (dq, dk) and the three projections' weight gradients; no input
 * gradient into the model. The KL target (the core's attention summed
 * over heads) is not costed [?]. */
void attn_indexer_fwd(struct layer_ops *o, enum layer_pass pass,
		      const struct layer_dims *d)
{
	const struct mla_dims *m = &d->mla_d;
	double t = layer_tokens(d), s = d->seq, b = d->batch, B = d->act_B;
	double hi = m->idx_heads, di = m->idx_dim, keys = (s + 1) / 2;
	struct layer_op *op;

	if (!(hi > 0))
		return;
	lop_gemm(o, "idx_wq", pass, t, hi * di, m->q_lora, 0);
	lop_gemm(o, "idx_wk", pass, t, di, d->hidden, 0);
	lop_gemm(o, "idx_w", pass, t, hi, d->hidden, 0);
	lop_memop(o, "idx_prep", pass, t * (hi + 1) * di * B,
		  t * (hi + 1) * di * B, NORM_FLOPS * t * (hi + 1) * di);
	op = lop_gemm(o, "idx_logits", pass, s, keys, hi * di, 0);
	op->k.batch = b;
	lop_memop(o, "idx_topk", pass, b * s * keys * 4,
		  b * s * fmin(m->idx_topk, s) * 4, 0);
}

void attn_indexer_bwd(struct layer_ops *o, const struct layer_dims *d)
{
	const struct mla_dims *m = &d->mla_d;
	double t = layer_tokens(d), s = d->seq, b = d->batch;
	double hi = m->idx_heads, di = m->idx_dim, keys = (s + 1) / 2;
	struct layer_op *op;

	if (!(hi > 0))
		return;
	/* dq = dS K per head (m = s, n = H_I d_I, k = keys), dk = dS^T Q
	 * summed over heads (m = keys, n = H_I d_I, k = s) */
	op = lop_gemm(o, "idx_logits_dq", PASS_BWD, s, hi * di, keys, 0);
	op->k.batch = b;
	op = lop_gemm(o, "idx_logits_dk", PASS_BWD, keys, hi * di, s, 0);
	op->k.batch = b;
	lop_wgrad(o, "idx_wq_wgrad", m->q_lora, hi * di, t, 0);
	lop_wgrad(o, "idx_wk_wgrad", d->hidden, di, t, 0);
	lop_wgrad(o, "idx_w_wgrad", d->hidden, hi, t, 0);
}
