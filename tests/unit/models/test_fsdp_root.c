/*
 * test_fsdp_root.c - torchtitan's FSDP units on one stage (train_dp.c
 * fsdp_role, footprint.c): the root unit (framework fsdp_root_unit: the
 * embedding, the final norm and the output layer gathered together before
 * the embedding's forward, kept gathered into the backward, reduce-
 * scattered together after the embedding's backward) and the last layer
 * kept gathered from its forward to its backward (fsdp_last_layer_held).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "base/diag.h"
#include "engine/exec.h"
#include "fixture.h"
#include "mockcomm.h"
#include "models/footprint.h"
#include "models/train.h"

/* Rank 0's FSDP all-gathers and reduce-scatters: how many, and how many
 * of them move exactly `bytes` (all-gathers) or `rbytes` (reduce-
 * scatters). */
struct fsdp_seen {
	int ag, rs, ag_at, rs_at;
};

static void fsdp_seen(struct fixture *f, double bytes, double rbytes,
		      struct fsdp_seen *s)
{
	struct train_plan plan;
	struct diag d;
	struct prog *p;
	enum task_cat cat;
	uint32_t t;

	memset(s, 0, sizeof(*s));
	diag_init(&d, stderr);
	p = train_build(&f->job, 0, &plan, &d);
	cr_assert_not_null(p);
	for (t = 0; t < prog_tasks(p); t++) {
		const char *name = exec_task_name(p, t, &cat);
		const struct coll_desc *c = exec_task_coll(p, t);

		if (exec_task_rank(p, t) != 0 || !c)
			continue;
		if (strcmp(name, "fsdp_param_allgather") == 0) {
			s->ag++;
			s->ag_at += fabs(c->bytes - bytes) <= 1e-6 * bytes;
		} else if (strcmp(name, "fsdp_grad_reducescatter") == 0) {
			s->rs++;
			s->rs_at += fabs(c->bytes - rbytes) <= 1e-6 * rbytes;
		}
	}
	prog_free(p);
}

Test(fsdp_root, the_root_gathers_and_reduces_once_a_microbatch)
{
	struct fixture f;
	struct fsdp_seen s;
	/* 4 layers, h 1024, V 1024, s 1024 (learned positions), dp 8, ZeRO
	 * 3, pp 1, 2 microbatches (gbs 32 / dp 8 / mbs 2). The root's
	 * parameters: the embedding with its positions (V + s) h =
	 * 2,097,152 and the head (final layernorm's weight and bias, then
	 * the output layer) V h + 2 h = 1,050,624: 3,147,776, gathered in
	 * bf16 (2 B: 6,295,552 B) and reduced in fp32 (grad_dtype, 4 B:
	 * 12,591,104 B). */
	double h = 1024, V = 1024, sq = 1024;
	double root = (V + sq) * h + V * h + 2 * h;

	fixture_gpt(&f, 4, 1024, 16, 1024, 1024, 2, 32, 1, 1, 1);
	f.job.training.zero_stage = 3;
	/* Six units (embedding, 4 layers, head), each gathered before its
	 * forward and its backward and reduced after its backward: 12
	 * gathers and 6 reductions a microbatch, 24 and 12; none moves the
	 * root's bytes. */
	fsdp_seen(&f, root * 2, root * 4, &s);
	cr_assert(s.ag == 24 && s.rs == 12, "%d gathers, %d reductions",
		  s.ag, s.rs);
	cr_assert(s.ag_at == 0 && s.rs_at == 0);
	/* The root unit: a forward gathers the root and 4 layers (5), a
	 * backward the 4 layers (the head and the embedding still gathered
	 * since the forward): 9 a microbatch, 18; the backward reduces the 4
	 * layers and the root: 5, 10. One root gather and one root
	 * reduction a microbatch. */
	f.fw.fsdp_root_unit = 1;
	fsdp_seen(&f, root * 2, root * 4, &s);
	cr_assert(s.ag == 18 && s.rs == 10, "%d gathers, %d reductions",
		  s.ag, s.rs);
	cr_assert(s.ag_at == 2 && s.rs_at == 2, "%d root gathers, %d root "
		  "reductions", s.ag_at, s.rs_at);
	/* And the last layer kept from its forward to its backward: one
	 * gather less a backward, 16; reductions as before, 10. */
	f.fw.fsdp_last_layer_held = 1;
	fsdp_seen(&f, root * 2, root * 4, &s);
	cr_assert(s.ag == 16 && s.rs == 10, "%d gathers, %d reductions",
		  s.ag, s.rs);
}

Test(fsdp_root, the_last_layer_alone_and_its_conditions)
{
	struct fixture f;
	struct fsdp_seen s;

	/* The job above with only the last layer held: 24 - 2 = 22
	 * gathers, 12 reductions. Without reshard after forward every
	 * backward after its forward gathers nothing already (4 + 2 units a
	 * forward, 6 + 6 = 12 gathers in all; reductions 12), and the key
	 * changes nothing. */
	fixture_gpt(&f, 4, 1024, 16, 1024, 1024, 2, 32, 1, 1, 1);
	f.job.training.zero_stage = 3;
	f.fw.fsdp_last_layer_held = 1;
	fsdp_seen(&f, 1, 1, &s);
	cr_assert(s.ag == 22 && s.rs == 12, "%d gathers, %d reductions",
		  s.ag, s.rs);
	f.fw.fsdp_reshard_after_forward = 0;
	fsdp_seen(&f, 1, 1, &s);
	cr_assert(s.ag == 12 && s.rs == 12, "%d gathers, %d reductions",
		  s.ag, s.rs);
}

Test(fsdp_root, a_pipeline_keeps_its_units)
{
	struct fixture f;
	struct fsdp_seen off, on;

	/* pp 2 (1F1B), 8 layers, 16 microbatches a replica: each stage is
	 * a root of its own part (the embedding on the first, the head on
	 * the second), so neither key changes the program: the same counts
	 * on rank 0. */
	fixture_gpt(&f, 8, 1024, 16, 1024, 1024, 1, 32, 1, 1, 2);
	f.job.training.zero_stage = 3;
	fsdp_seen(&f, 1, 1, &off);
	f.fw.fsdp_root_unit = 1;
	f.fw.fsdp_last_layer_held = 1;
	fsdp_seen(&f, 1, 1, &on);
	cr_assert(off.ag == on.ag && off.rs == on.rs, "gathers %d / %d, "
		  "reductions %d / %d", off.ag, on.ag, off.rs, on.rs);
	cr_assert_gt(off.ag, 0);
}

Test(fsdp_root, the_root_stays_gathered_in_the_footprint)
{
	struct fixture f;
	struct footprint fp;
	double h = 1024, V = 51200, s = 2048, W = 2;
	double embed = (V + s) * h, head = V * h + 2 * h;
	double layer = 12 * h * h + 4 * h;

	/* 8 layers, V 51200, s 2048, one GPU's worth (dp 8), ZeRO 3: two
	 * units gathered at once, each the largest, the embedding with its
	 * positions: 1 GiB + 2 x 54,525,952 x 2 B. With the root unit the
	 * embedding and the head stay gathered beside the two layers of the
	 * prefetch: (54,525,952 + 52,430,848 + 2 x 12,587,008) x 2 B =
	 * 264,261,632 B over the workspace, more than 218,103,808. */
	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 1, 64, 1, 1, 1);
	f.job.training.zero_stage = 3;
	cr_assert_eq(footprint_job(&f.job, 80e9, &fp), 0);
	fixture_assert_close(fp.workspace_B, 1073741824.0 + 2 * embed * W);
	f.fw.fsdp_root_unit = 1;
	cr_assert_eq(footprint_job(&f.job, 80e9, &fp), 0);
	fixture_assert_close(fp.workspace_B,
			     1073741824.0 + (embed + head + 2 * layer) * W);
}
