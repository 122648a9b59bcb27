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
};

/*
 * The memory of an instance running job j (layers per stage in split,
 * pp entries) with engine e whose largest step has max_tokens tokens and
 * max_seqs sequences; seq_tokens: the tokens of one sequence for the
 * capacity in sequences (0: not reported). d: the dims of one GPU.
 */
void infer_mem_job(const struct job_spec *j, const struct engine_spec *e,
		   const struct infer_dims *d, const int64_t *split,
		   double max_tokens, double max_seqs, double seq_tokens,
		   struct infer_mem *out);

#endif
