/*
 * test_moe_latent.c - latent MoE (Nemotron 3 Super's moe_latent_size):
 * the experts and the dispatch in the latent width, the two projections'
 * parameters and FLOPs forward and backward, against derived numbers.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "fixture.h"
#include "moe_case.h"
#include "models/layer.h"

/* Sum of the model FLOPs of o's ops named name (any pass). */
static double named_flops(const struct layer_ops *o, const char *name)
{
	double sum = 0;
	int i;

	for (i = 0; i < o->n; i++)
		if (o->op[i].kind == LOP_KERNEL &&
		    strcmp(o->op[i].name, name) == 0)
			sum += layer_kern_model_flops(&o->op[i].k);
	return sum;
}

Test(moe, latent_experts_work_in_the_latent_width)
{
	struct moe_case m;
	double T = 4096, h = 1024, l = 256, E = 8, k = 2, fe = 512;
	double dense0, experts0, dense, experts, f0;

	/* Nemotron 3 Super's latent MoE (Megatron-Core moe_layer.py
	 * fc1_latent_proj / fc2_latent_proj) with l = 256 of h = 1024:
	 * the experts' fc1 and fc2 are l x fe each, 8 x 2 x 256 x 512 =
	 * 2.10e6 parameters (a quarter of h's 8.39e6), the two projections
	 * 2 h l = 524288 more dense ones. */
	moe_case_init(&m, 8, 2, 512, 1);
	moe_case_dims(&m);
	layer_kind_params(&m.d, &m.kind, 0, 1, &dense0, &experts0);
	layer_fwd(&m.d, &m.kind, &m.o);
	f0 = layer_ops_flops(&m.o, PASS_FWD);
	m.f.model.moe_latent_size = 256;
	moe_case_fwd(&m);
	layer_kind_params(&m.d, &m.kind, 0, 1, &dense, &experts);
	cr_assert(fixture_near(experts, E * 2 * l * fe, 1e-12), "%.6g", experts);
	cr_assert(fixture_near(dense - dense0, 2 * h * l, 1e-12), "%.6g",
		  dense - dense0);
	/* the dispatch moves T k rows of l 16-bit elements:
	 * 4096 x 2 x 256 x 2 B = 4.19 MB (h's 16.8 MB / 4) */
	cr_assert(fixture_near(m.d.moe.dispatch_B, T * k * l * 2, 1e-12));
	/* projections 2 T h l each way; the experts' 4 T k h fe become
	 * 4 T k l fe: forward FLOPs change by 2 x 2 T h l - 4 T k fe (h - l)
	 * = 4.29e9 - 1.29e10 = -8.59e9 */
	cr_assert(fixture_near(named_flops(&m.o, "moe_latent_fc1"), 2 * T * h * l,
			       1e-12));
	cr_assert(fixture_near(named_flops(&m.o, "moe_latent_fc2"), 2 * T * l * h,
			       1e-12));
	cr_assert(fixture_near(layer_ops_flops(&m.o, PASS_FWD) - f0,
			       4 * T * h * l - 4 * T * k * fe * (h - l), 1e-9),
		  "%.6g", layer_ops_flops(&m.o, PASS_FWD) - f0);
	/* backward: each projection's dgrad and wgrad, 2 T h l each */
	moe_case_bwd(&m);
	cr_assert(fixture_near(named_flops(&m.o, "moe_latent_fc1_dgrad") +
			       named_flops(&m.o, "moe_latent_fc1_wgrad") +
			       named_flops(&m.o, "moe_latent_fc2_dgrad") +
			       named_flops(&m.o, "moe_latent_fc2_wgrad"),
			       4 * 2 * T * h * l, 1e-12));
	moe_case_release(&m);
}
