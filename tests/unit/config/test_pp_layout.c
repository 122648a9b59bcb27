/*
 * test_pp_layout.c - Megatron's pipeline_model_parallel_layout strings.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "config/pp_layout.h"

Test(pp_layout, deepseek_v3_pp16_recipe)
{
	struct pp_layout l;
	int64_t c[16];
	char why[160];
	int i;

	/* Megatron-Bridge's DeepSeek-V3 layout for 16 stages: "Et*4" = E
	 * tttt, "(t*4|)*14" = 14 stages of tttt, then "tmL": 16 stages,
	 * 4 x 15 + 1 = 61 layers, one MTP module on the last stage. */
	cr_assert_eq(pp_layout_parse("Et*4|(t*4|)*14tmL", &l, c, 16, why,
				     sizeof(why)), 0, "%s", why);
	cr_assert_eq(l.stages, 16);
	cr_assert_eq(l.layers, 61);
	cr_assert_eq(l.mtp, 1);
	cr_assert_eq(l.mtp_stage, 15);
	cr_assert(l.mtp_one_stage && l.mtp_after_layers);
	cr_assert(l.embeddings == 1 && l.embedding_first);
	cr_assert(l.losses == 1 && l.loss_last);
	cr_assert_eq(l.empty_stage, -1);
	for (i = 0; i < 15; i++)
		cr_assert_eq(c[i], 4);
	cr_assert_eq(c[15], 1);
}

Test(pp_layout, thirty_two_chunks_commas_and_an_empty_last_stage)
{
	struct pp_layout l;
	int64_t c[32];
	char why[160];
	int i;

	/* "Et|(tt|)*30mL" (pp 8 x vp 4): E t | 30 x (t t |) | m L: 32
	 * stages, 1 + 60 = 61 layers, none on the last. Megatron's own
	 * example "Ettt|(tt|)*29,m|L" (commas cosmetic): 1 + 29 + 2 = 32
	 * stages, 3 + 58 = 61 layers, the MTP module alone on stage 30 and
	 * the loss alone on 31. */
	cr_assert_eq(pp_layout_parse("Et|(tt|)*30mL", &l, c, 32, why,
				     sizeof(why)), 0, "%s", why);
	cr_assert(l.stages == 32 && l.layers == 61 && l.mtp_stage == 31);
	cr_assert_eq(c[0], 1);
	for (i = 1; i < 31; i++)
		cr_assert_eq(c[i], 2);
	cr_assert_eq(c[31], 0);
	cr_assert_eq(l.empty_stage, -1);	/* only the last is empty */
	cr_assert_eq(pp_layout_parse("Ettt|(tt|)*29,m|L", &l, NULL, 0, why,
				     sizeof(why)), 0, "%s", why);
	cr_assert(l.stages == 32 && l.layers == 61 && l.mtp_stage == 30);
	cr_assert_eq(l.empty_stage, 30);	/* "m" alone: a middle stage */
	cr_assert_eq(pp_layout_stages("Ettt|(tt|)*29,m|L"), 32);
}

Test(pp_layout, not_a_layout)
{
	struct pp_layout l;
	char why[160];

	cr_assert_eq(pp_layout_parse("Et|tx|L", &l, NULL, 0, why, sizeof(why)), -1);
	cr_assert(strstr(why, "'x' is not a layer"), "%s", why);
	cr_assert_eq(pp_layout_parse("Et|(tt|L", &l, NULL, 0, why, sizeof(why)), -1);
	cr_assert(strstr(why, "not closed"), "%s", why);
	cr_assert_eq(pp_layout_parse("E(t|)t|L", &l, NULL, 0, why, sizeof(why)), -1);
	cr_assert(strstr(why, "needs '*n'"), "%s", why);
	cr_assert_eq(pp_layout_parse("E((t)*2|)*2L", &l, NULL, 0, why, sizeof(why)), -1);
	cr_assert(strstr(why, "do not nest"), "%s", why);
	cr_assert_eq(pp_layout_parse("Et*|L", &l, NULL, 0, why, sizeof(why)), -1);
	cr_assert(strstr(why, "needs a count"), "%s", why);
	cr_assert_eq(pp_layout_parse("E*3t", &l, NULL, 0, why, sizeof(why)), 0);
	cr_assert_eq(l.embeddings, 3);	/* parses; the job check refuses it */
	/* 10^6 layers unrolled: over PP_LAYOUT_MAX_CHARS (10^5) */
	cr_assert_eq(pp_layout_parse("E(t*1000|)*1000L", &l, NULL, 0, why,
				     sizeof(why)), -1);
	cr_assert(strstr(why, "more than"), "%s", why);
	cr_assert_eq(pp_layout_stages("E)t"), -1);
}

Test(pp_layout, counts_of_zero_and_bare_stages_as_megatron)
{
	struct pp_layout l;
	int64_t c[3];
	char why[160];

	/* Megatron's "(.)\*(\d+)" takes 0: "t*0" and "(t|)*0" are
	 * nothing. "Ett*0|(t|)*0t,m|L" = "Et|tm|L": 3 stages of 1, 1 and 0
	 * layers, the MTP module in stage 1, no stage bare. */
	cr_assert_eq(pp_layout_parse("Ett*0|(t|)*0t,m|L", &l, c, 3, why,
				     sizeof(why)), 0, "%s", why);
	cr_assert(l.stages == 3 && l.layers == 2 && l.mtp_stage == 1);
	cr_assert(c[0] == 1 && c[1] == 1 && c[2] == 0);
	cr_assert_eq(l.bare_stage, -1);
	cr_assert_eq(l.empty_stage, -1);
	/* "Et||mL": stage 1 holds nothing at all (bare); the m-only stage
	 * of "Et|m|L" has no t (empty) but is not bare. */
	cr_assert_eq(pp_layout_parse("Et||mL", &l, NULL, 0, why,
				     sizeof(why)), 0, "%s", why);
	cr_assert(l.bare_stage == 1 && l.stages == 3);
	cr_assert_eq(pp_layout_parse("Et|m|L", &l, NULL, 0, why,
				     sizeof(why)), 0, "%s", why);
	cr_assert(l.bare_stage == -1 && l.empty_stage == 1 && l.mtp_stage == 1);
}
