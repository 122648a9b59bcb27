/*
 * test_split.c - layers per pipeline stage.
 */
#include <criterion/criterion.h>

#include "fixture.h"
#include "models/split.h"

Test(split, even_when_divisible)
{
	int64_t s[8];
	int i;

	/* 80 layers / 8 stages = 10 each. */
	split_even(80, 8, s);
	for (i = 0; i < 8; i++)
		cr_assert_eq(s[i], 10);
}

Test(split, llama_405b_on_16_stages)
{
	int64_t s[16];
	int i;

	/* 126 + 2 = 128 units / 16 = 8: 7 layers on the first and last
	 * stages (they hold the embedding and the head), 8 elsewhere. */
	split_even(126, 16, s);
	cr_assert_eq(s[0], 7);
	cr_assert_eq(s[15], 7);
	for (i = 1; i < 15; i++)
		cr_assert_eq(s[i], 8);
}

Test(split, recipe_layout_when_neither_divides)
{
	int64_t s[4];

	/* 31 layers, 4 stages: 31 and 31 + 2 = 33 are not multiples of 4,
	 * so Megatron-Core has no split; the recipes' rule: c = ceil(31/4)
	 * = 8 a stage, surplus d = 32 - 31 = 1 off the last: 8 8 8 7. */
	split_even(31, 4, s);
	cr_assert(s[0] == 8 && s[1] == 8 && s[2] == 8 && s[3] == 7);
	/* 30 + 2 = 32 / 4 = 8 units: account_for_embedding and _loss,
	 * 7 8 8 7. */
	split_even(30, 4, s);
	cr_assert(s[0] == 7 && s[1] == 8 && s[2] == 8 && s[3] == 7);
}

Test(split, deepseek_v3_recipe_layouts)
{
	int64_t s[32];
	int i;

	/* DeepSeek-V3's 61 layers; 61 + 2 = 63 is odd, so no power-of-two
	 * stage count divides it. Megatron-Bridge's layouts
	 * (recipes/deepseek/h100/deepseek_v3.py):
	 * pp 16: c = ceil(61/16) = 4, d = 64 - 61 = 3 <= 4 off the last:
	 * 4 x 15 then 1 ("E" + 4 | 4 x 14 | 1 + mtp + loss). */
	split_even(61, 16, s);
	for (i = 0; i < 15; i++)
		cr_assert_eq(s[i], 4);
	cr_assert_eq(s[15], 1);
	/* pp 8: c = 8, d = 3: 8 x 7 then 5. */
	split_even(61, 8, s);
	for (i = 0; i < 7; i++)
		cr_assert_eq(s[i], 8);
	cr_assert_eq(s[7], 5);
	/* pp 4: c = 16, d = 3: 16 16 16 13. */
	split_even(61, 4, s);
	cr_assert(s[0] == 16 && s[1] == 16 && s[2] == 16 && s[3] == 13);
	/* 32 chunks (pp 8 vp 4, "Et|(tt|)*30mL"): c = 2, d = 64 - 61 = 3
	 * > 2: the last gives up its 2 (none left: loss and MTP only), the
	 * first the other 1: 1, 2 x 30, 0. */
	split_even(61, 32, s);
	cr_assert_eq(s[0], 1);
	for (i = 1; i < 31; i++)
		cr_assert_eq(s[i], 2);
	cr_assert_eq(s[31], 0);
}

Test(split, units_spread_when_the_ends_cannot_give_up_enough)
{
	int64_t s[8];

	/* 10 layers, 8 stages: c = 2, d = 16 - 10 = 6 > 2 c = 4, so the
	 * 12 units are spread: 1 each, the 4 extra to stages 1-4 ->
	 * units 1 2 2 2 2 1 1 1 -> layers 0 2 2 2 2 1 1 0 (sum 10). */
	split_even(10, 8, s);
	cr_assert(s[0] == 0 && s[1] == 2 && s[2] == 2 && s[3] == 2 &&
		  s[4] == 2 && s[5] == 1 && s[6] == 1 && s[7] == 0);
}

Test(split, front_gives_the_remainder_to_the_first_stages)
{
	int64_t s[32];
	int i;

	/* AutoModel, 61 layers over 32 stages: floor 1, 61 mod 32 = 29
	 * stages with one more: 2 x 29 then 1 1 1. */
	split_front(61, 32, s);
	for (i = 0; i < 29; i++)
		cr_assert_eq(s[i], 2);
	cr_assert(s[29] == 1 && s[30] == 1 && s[31] == 1);
	/* 126 over 16: floor 7, 14 stages of 8, then 7 7 (no account for
	 * the embedding and head). */
	split_front(126, 16, s);
	for (i = 0; i < 14; i++)
		cr_assert_eq(s[i], 8);
	cr_assert(s[14] == 7 && s[15] == 7);
}

Test(split, job_takes_its_frameworks_rule)
{
	struct fixture f;
	int64_t s[4];

	/* 30 layers over pp 4: megatron counts the embedding and head
	 * (32 units, 7 8 8 7); front gives the 30 mod 4 = 2 extra layers
	 * to the first two stages: 8 8 7 7. */
	fixture_gpt(&f, 30, 1024, 16, 51200, 2048, 1, 8, 1, 2, 4);
	split_layers(&f.job, s);
	cr_assert(s[0] == 7 && s[1] == 8 && s[2] == 8 && s[3] == 7);
	f.fw.pp_split = PP_SPLIT_FRONT;
	split_layers(&f.job, s);
	cr_assert(s[0] == 8 && s[1] == 8 && s[2] == 7 && s[3] == 7);
}

Test(split, explicit_split_wins)
{
	struct fixture f;
	int64_t given[4] = {5, 11, 11, 5}, s[4];

	fixture_gpt(&f, 32, 1024, 16, 51200, 2048, 1, 8, 1, 2, 4);
	f.job.parallelism.pp_layers.v = given;
	f.job.parallelism.pp_layers.n = 4;
	split_layers(&f.job, s);
	cr_assert(s[0] == 5 && s[1] == 11 && s[2] == 11 && s[3] == 5);
	cr_assert_eq(split_first_layer(s, 2), 16);
}
