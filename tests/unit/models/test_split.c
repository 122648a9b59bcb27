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

Test(split, remainder_to_the_middle)
{
	int64_t s[4];

	/* 31 + 2 = 33 units / 4 = 8 rem 1 -> units 8 9 8 8 -> layers
	 * 7 9 8 7 (sum 31). */
	split_even(31, 4, s);
	cr_assert(s[0] == 7 && s[1] == 9 && s[2] == 8 && s[3] == 7);
	/* 30 + 2 = 32 / 4 = 8: 7 8 8 7. */
	split_even(30, 4, s);
	cr_assert(s[0] == 7 && s[1] == 8 && s[2] == 8 && s[3] == 7);
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
