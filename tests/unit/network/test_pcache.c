/*
 * test_pcache.c - the plan cache keeps every entry of a simulation: a
 * step with more distinct collectives than the first table size must not
 * lose (and so recompute) any of them.
 */
#include <criterion/criterion.h>

#include "network/pcache.h"

/* A choice entry for a group of 8 GPUs starting at g0 and a size. */
static struct pkey key8(uint32_t *gpus, uint32_t g0, double bytes)
{
	uint32_t i;

	for (i = 0; i < 8; i++)
		gpus[i] = g0 + i;
	return (struct pkey){ PK_CHOICE, 0, -1, -1, 8, 1, 1, bytes, gpus, NULL, NULL };
}

Test(net_pcache, keeps_every_entry_past_its_first_size)
{
	/* 64 groups x 320 sizes = 20,480 entries, ten times the 2,048 the
	 * first table holds before it grows (half of 4,096 slots). */
	struct pcache *pc = pcache_new();
	uint32_t gpus[8], g, s;

	cr_assert_not_null(pc);
	for (g = 0; g < 64; g++)
		for (s = 0; s < 320; s++) {
			struct pkey k = key8(gpus, 8 * g, 1024.0 * (s + 1));
			struct pval v = { NULL, NULL, (int)g, (int)s, 0, NULL, NULL };

			cr_assert_eq(pcache_put(pc, &k, &v), 0);
		}
	for (g = 0; g < 64; g++)
		for (s = 0; s < 320; s++) {
			struct pkey k = key8(gpus, 8 * g, 1024.0 * (s + 1));
			const struct pval *v = pcache_get(pc, &k);

			cr_assert_not_null(v, "group %u size %u lost", g, s);
			cr_assert_eq(v->algo, (int)g);
			cr_assert_eq(v->proto, (int)s);
		}
	pcache_free(pc);
}

Test(net_pcache, keys_differ_by_members_size_and_kind)
{
	struct pcache *pc = pcache_new();
	uint32_t a[8], b[8];
	struct pkey ka = key8(a, 0, 4096), kb = key8(b, 0, 4096);
	struct pval v = { NULL, NULL, 1, 2, 0, NULL, NULL };

	cr_assert_eq(pcache_put(pc, &ka, &v), 0);
	/* Same members and size: found, whatever array holds them. */
	cr_assert_not_null(pcache_get(pc, &kb));
	/* One member swapped for another GPU: a different group. */
	b[7] = 99;
	cr_assert_null(pcache_get(pc, &kb));
	/* Another size, or another kind of entry: not found. */
	kb = key8(b, 0, 8192);
	cr_assert_null(pcache_get(pc, &kb));
	kb = key8(b, 0, 4096);
	kb.kind = PK_TIME;
	cr_assert_null(pcache_get(pc, &kb));
	pcache_free(pc);
}

/* The key rule for what else shapes a plan: an uneven all-to-all's
 * matrix and a GPU-initiated path count by value (every per-peer size,
 * every number of the path), never by the caller's pointer. */
Test(net_pcache, matrix_and_path_count_by_value)
{
	struct pcache *pc = pcache_new();
	uint32_t a[8], b[8];
	double ma[64], mb[64];
	struct coll_path pa = { .mode = COLL_PATH_FORWARD, .setup_s = 5e-6,
				.hop_scale_up_s = 1e-6, .hop_scale_out_s = 3e-6,
				.eff_scale_up = 0.8, .eff_scale_out = 0.9,
				.node_share = 0.5, .name = "deepep" }, pb = pa;
	struct pkey ka = key8(a, 0, 4096), kb = key8(b, 0, 4096);
	struct pval v = { NULL, NULL, 1, 2, 0, NULL, NULL };
	int i;

	for (i = 0; i < 64; i++)
		ma[i] = mb[i] = 100.0 * i;
	ka.a2a = ma;
	ka.path = &pa;
	kb.a2a = mb;
	kb.path = &pb;
	cr_assert_eq(pcache_put(pc, &ka, &v), 0);
	/* equal matrices and paths in other arrays: found */
	cr_assert_not_null(pcache_get(pc, &kb));
	/* the cache holds copies: the caller's arrays may change */
	ma[5] = -1;
	pa.setup_s = 1;
	cr_assert_not_null(pcache_get(pc, &kb));
	/* one peer's size: another collective */
	mb[9] += 1;
	cr_assert_null(pcache_get(pc, &kb));
	mb[9] -= 1;
	/* one number of the path, or the library's instead */
	pb.eff_scale_out = 0.6;
	cr_assert_null(pcache_get(pc, &kb));
	pb.eff_scale_out = 0.9;
	/* the chunk rounds and the direction shape the phases */
	pb.rounds = 2;
	cr_assert_null(pcache_get(pc, &kb));
	pb.rounds = 0;
	pb.combine = 1;
	cr_assert_null(pcache_get(pc, &kb));
	pb.combine = 0;
	pb.name = "another name";
	cr_assert_not_null(pcache_get(pc, &kb));
	kb.path = NULL;
	cr_assert_null(pcache_get(pc, &kb));
	/* even instead of the matrix */
	kb.path = &pb;
	kb.a2a = NULL;
	cr_assert_null(pcache_get(pc, &kb));
	pcache_free(pc);
}
