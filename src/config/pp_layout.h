/*
 * pp_layout.h - Megatron-Core's pipeline_model_parallel_layout string
 * (parallelism.pp_layout): which layers each virtual stage holds, one
 * character a layer: E the embedding, t a decoder layer, m an MTP module,
 * L the loss (with the final norm and LM head); '|' ends a virtual stage,
 * in Megatron's order (chunk * pp + rank); commas are cosmetic; "(...)*n"
 * repeats a group and "x*n" a character, groups first (Megatron-LM
 * megatron/core/transformer/pipeline_parallel_layer_layout.py
 * parse_str_to_list). "Et*4|(t*4|)*14tmL" is the embedding and 4 layers,
 * 14 stages of 4, then 1 layer, the MTP module and the loss;
 * Megatron-Bridge's "Ettt|(tt|)*29,m|L" gives the MTP module and the
 * loss a stage each (what Megatron accepts: spec_job_layout.c).
 *
 * Depends on base/mem.h and libc.
 */
#ifndef LLMSIM_CONFIG_PP_LAYOUT_H
#define LLMSIM_CONFIG_PP_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

/* Longest layout after unrolling, in characters. */
#define PP_LAYOUT_MAX_CHARS 100000

/* What a layout string holds. */
struct pp_layout {
	int64_t stages;		/* virtual stages ('|' + 1) */
	int64_t layers;		/* t */
	int64_t mtp;		/* m */
	int64_t embeddings;	/* E */
	int64_t losses;		/* L */
	int embedding_first;	/* E is the first character of all */
	int loss_last;		/* L is the last character of all */
	int64_t mtp_stage;	/* virtual stage of the first m, -1 if none */
	int mtp_one_stage;	/* every m in mtp_stage */
	int mtp_after_layers;	/* no t after the first m */
	int64_t empty_stage;	/* first stage other than the first and
				 * last with no t, -1 if none */
	int64_t bare_stage;	/* first stage with no E, t, m or L at all,
				 * -1 if none */
};

/*
 * Parse s. With counts non-NULL, counts[i] is the number of t of virtual
 * stage i for i < max_stages. Returns 0, or -1 with a sentence in why
 * (why_len bytes) for a string that is not a layout: a character other
 * than E t m L | , ( ) * and digits, a group not followed by *n, a
 * nested or unclosed group, above PP_LAYOUT_MAX_CHARS characters
 * unrolled; -2 when out of memory. A count may be 0, as in Megatron
 * ("t*0" and "(t|)*0" are nothing).
 */
int pp_layout_parse(const char *s, struct pp_layout *out, int64_t *counts,
		    int64_t max_stages, char *why, size_t why_len);

/* The virtual stages of layout s, or -1 when s is not a layout (or out
 * of memory). */
int64_t pp_layout_stages(const char *s);

#endif
