/*
 * test_fsdp2_copy.c - FSDP2's copy passes on the compute stream
 * (framework fsdp2_copy_passes, layer.c fsdp2_copy): the all-gather
 * copy-out before a layer unit's forward (and its backward when it
 * reshards after forward), the reduce-scatter copy-in after its backward.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "fixture.h"
#include "models/layer.h"

/* Ops named name in o. */
static const struct layer_op *find(const struct layer_ops *o,
				   const char *name, int *count)
{
	const struct layer_op *op = NULL;
	int i;

	*count = 0;
	for (i = 0; i < o->n; i++)
		if (strcmp(o->op[i].name, name) == 0) {
			op = &o->op[i];
			(*count)++;
		}
	return op;
}

Test(fsdp2_copy, a_layer_unit_copies_out_and_in)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops o;
	const struct layer_op *op;
	int n;
	/* GPT fixture: h 1024, f 4096 (ungated), LayerNorm, no biases, tp 1:
	 * P = 4 h^2 (attention) + 2 h f (MLP) + 2 x 2 h (two LayerNorms) =
	 * 4194304 + 8388608 + 4096 = 12587008 parameters, W = 2 B, fp32
	 * gradients (G = 4 B) */
	double P = 12587008, W = 2, G = 4;

	fixture_gpt(&f, 4, 1024, 16, 128, 2048, 2, 16, 1, 1, 1);
	f.job.training.zero_stage = 3;
	f.fw.fsdp_reshard_after_forward = 0;
	layer_dims_from_job(&f.job, &d);
	layer_fwd(&d, NULL, &o);
	cr_assert_null(find(&o, "fsdp_gather_copy_out", &n));	/* off */
	f.fw.fsdp2_copy_passes = 1;
	layer_dims_from_job(&f.job, &d);
	/* forward: the copy-out first, read and write P W = 25174016 B */
	layer_fwd(&d, NULL, &o);
	op = find(&o, "fsdp_gather_copy_out", &n);
	cr_assert_eq(n, 1);
	cr_assert_eq(op, &o.op[0]);
	cr_assert_float_eq(op->k.read_B, P * W, 1e-3);
	cr_assert_float_eq(op->k.write_B, P * W, 1e-3);
	/* backward, kept gathered since the forward: no copy-out; the
	 * copy-in last, read P W, write P G = 50348032 B */
	layer_bwd(&d, NULL, LREC_NONE, &o);
	cr_assert_null(find(&o, "fsdp_gather_copy_out", &n));
	op = find(&o, "fsdp_reduce_copy_in", &n);
	cr_assert_eq(n, 1);
	cr_assert_eq(op, &o.op[o.n - 1]);
	cr_assert_float_eq(op->k.read_B, P * W, 1e-3);
	cr_assert_float_eq(op->k.write_B, P * G, 1e-3);
	/* resharded after forward: gathered again, copied out again first */
	f.fw.fsdp_reshard_after_forward = 1;
	layer_dims_from_job(&f.job, &d);
	layer_bwd(&d, NULL, LREC_NONE, &o);
	op = find(&o, "fsdp_gather_copy_out", &n);
	cr_assert_eq(n, 1);
	cr_assert_eq(op, &o.op[0]);
	/* ZeRO 1: no FSDP units, nothing copied */
	f.job.training.zero_stage = 1;
	layer_dims_from_job(&f.job, &d);
	layer_bwd(&d, NULL, LREC_NONE, &o);
	cr_assert_null(find(&o, "fsdp_reduce_copy_in", &n));
}
