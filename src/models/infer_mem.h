/*
 * infer_mem.h - memory of a serving engine instance per GPU: weights,
 * activations of its largest step, workspace and the KV cache that the
 * engine's memory rule leaves; KV capacity in tokens and sequences.
 *
 * The arithmetic is in infer_mem.c's header. Depends on infer.h and the
 * job/engine specs; the usable memory comes from the GPU spec.
 */
#ifndef LLMSIM_MODELS_INFER_MEM_H
#define LLMSIM_MODELS_INFER_MEM_H

#include <stdint.h>

#include "infer.h"

struct job_spec;
struct engine_spec;

struct infer_mem {
	double weights_B;	/* B, weights on the fullest GPU */
	double activations_B;	/* B, peak of the largest step's forward */
	double workspace_B;	/* B, engine workspace (graphs, libraries) */
	double kv_cache_B;	/* B, KV cache per GPU */
	double peak_B;		/* B, sum of the above */
	double usable_B;	/* B, what the job may use on the GPU */
	int fits;		/* weights + activations + workspace fit and the
				 * KV cache holds at least one page */
	int64_t rank;		/* pipeline rank that limits the capacity */
	double params;		/* parameters on that rank's GPU */
	double kv_token_B;	/* B, KV bytes of one token on that GPU (its layers) */
	double kv_tokens;	/* tokens the cache holds (whole pages) */
	double kv_pages;	/* pages of block_size tokens */
	double kv_sequences;	/* sequences of seq_tokens that fit */
	double state_pages;	/* pages a sequence's fixed recurrent states
				 * (Gated DeltaNet, Mamba-2) take besides its
				 * KV pages (0: none) */
	double draft_weights_B;	/* B, the speculative draft's weights on that
				 * GPU (in weights_B; 0 without a draft) */
	double draft_kv_token_B; /* B, the draft's KV of one token on that GPU
				  * (in kv_token_B) */
	double state_seq_B;	/* B, the recurrent state one sequence keeps on
				 * that GPU (a hybrid's Mamba-2 layers:
				 * infer_mamba_state_layer_B each); 0: none */
	/* Pages by layer group (engine window_kv_groups; infer_mem.c): a
	 * page is block_size tokens of one group's layers; a sequence of n
	 * tokens holds full_groups x ceil(n / block) pages plus
	 * window_groups x min(ceil(n / block), window_pages). Without
	 * grouping: one group of every layer, full_groups 1. */
	double full_groups;
	double window_groups;
	double window_pages;	/* pages a sliding-window group holds at most */
	double window_tokens;	/* the sliding window, tokens (0: none) */
};

/* Pages of block tokens a sequence of `tokens` tokens holds in m's pool:
 * its groups' pages and, when it has any token, its recurrent states'
 * state_pages. */
double infer_mem_seq_pages(const struct infer_mem *m, double block,
			   double tokens);

/* A speculative draft's memory on each GPU of the instance (its last
 * pipeline rank): weights, parameters and KV bytes of one token. */
struct infer_mem_draft {
	double weights_B;
	double params;
	double kv_token_B;
};

/*
 * The memory of the draft of job dj (serve_setup.c's draft job: its model
 * is the draft's) with dims dd: its layers, and either its own embedding,
 * LM head and final norm (a draft model) or, for an MTP/EAGLE head
 * (dd->draft_in > 0), the input projection and norms, the embedding and
 * LM head being the target's (infer_mem.c).
 */
/*
 * B of the model's vision encoder (model vision_params, engine
 * vision_encoder and vision_encoder_B) on the GPU of pipeline rank r: on
 * every GPU when the workers hold it; on the instance's first GPU (rank 0)
 * when the front-end process does, plus that process's CUDA context (the
 * GPU's capacity less its usable memory). 0 without one.
 */
double infer_mem_vision_B(const struct job_spec *j,
			  const struct engine_spec *e, int64_t r);

/*
 * B per GPU the engine holds outside torch for communication when it sizes
 * its KV cache (infer_mem.c's header): on an instance of g > 1 GPUs
 * (g = tp, times dp under attention DP) nccl_channels x
 * nccl_channel_buffers, plus with custom_allreduce allreduce_ipc_copies x
 * g x the fusion workspace (norm_quant_ar_max, norm_quant_ar_max_tp2 at
 * g <= 2). 0 on one GPU.
 */
double infer_mem_comm_B(const struct job_spec *j,
			const struct engine_spec *e);

/*
 * Rows of logits the engine's KV sizing counts (engine estimate_logits):
 * max_seqs, or for a dry run of dummy context requests of min(max_tokens,
 * seq_tokens - 1) tokens filling max_tokens, one a request:
 * ceil(max_tokens / max(1, min(max_tokens, seq_tokens - 1))); max_seqs
 * when seq_tokens is not known (0).
 */
double infer_mem_logit_rows(const struct engine_spec *e, double max_tokens,
			    double max_seqs, double seq_tokens);

void infer_mem_draft_of(const struct job_spec *dj,
			const struct infer_dims *dd,
			struct infer_mem_draft *out);

/*
 * The memory of an instance running job j (layers per stage in split,
 * pp entries) with engine e whose largest step has max_tokens tokens and
 * max_seqs sequences; seq_tokens: the tokens of one sequence for the
 * capacity in sequences (0: not reported) and, unless
 * serving.max_model_len is set, TensorRT-LLM's dry run. d: the dims of
 * one GPU. draft:
 * the speculative draft the instance also holds (NULL: none).
 */
void infer_mem_job(const struct job_spec *j, const struct engine_spec *e,
		   const struct infer_dims *d, const int64_t *split,
		   double max_tokens, double max_seqs, double seq_tokens,
		   const struct infer_mem_draft *draft, struct infer_mem *out);

#endif
