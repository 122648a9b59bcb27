/*
 * test_learned_pos.c - a learned position table bounds the training
 * sequence (spec_job_layout.c check_training, JR_LEARNED_POS: Megatron-LM
 * arguments.py asserts max_position_embeddings >= seq_length; nn.Embedding
 * has no row past its table), while rotary positions take any length.
 */
#include <criterion/criterion.h>

#include "config/spec_job.h"
#include "fixture.h"

static int broken(struct fixture *f)
{
	return (job_layout_check(&f->job, JOB_RULES_ALL, NULL, NULL) &
		JR_BIT(JR_LEARNED_POS)) != 0;
}

Test(learned_pos, seq_len_within_the_table)
{
	struct fixture f;

	/* the fixture's GPT: learned positions, a table of s = 2048 rows,
	 * seq_len 2048: the last token takes row 2047 */
	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 2, 64, 1, 1, 1);
	cr_assert_eq(f.model.position_embedding, POS_LEARNED);
	cr_assert_eq(f.model.max_position_embeddings, 2048);
	cr_assert_not(broken(&f));
	/* 2049 tokens: token 2048 has no row */
	f.job.training.seq_len = 2049;
	cr_assert(broken(&f));
	/* rotary: no table, any length */
	f.model.position_embedding = POS_ROPE;
	cr_assert_not(broken(&f));
	/* no max_position_embeddings given: nothing to check against */
	f.model.position_embedding = POS_LEARNED;
	f.model.max_position_embeddings = 0;
	cr_assert_not(broken(&f));
}
