/*
 * test_bk_data.c - the backends' data and check (src/backend/bk_data.c,
 * bk_main.c's helpers), simulated in one process: each op's result built
 * by hand from every rank's input must check clean, and one wrong
 * element must be found. (The live runs in tests/backend.sh only show
 * that right results pass.)
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "backend/bk.h"

#define P 3
#define N 24			/* elements: a multiple of P */

static struct bk_case make(enum bk_op op)
{
	struct bk_case c;

	memset(&c, 0, sizeof(c));
	c.op = op;
	c.dtype = BK_FLOAT;
	c.count = N;
	c.bytes = N * 4;
	return c;
}

/* The all-to-all-v skew: every rank sends and receives exactly n. */
Test(backend, a2av_counts_balance)
{
	size_t n = 1000, s, r;
	int i, j;

	for (i = 0; i < P; i++) {
		for (j = 0, s = r = 0; j < P; j++) {
			s += bk_a2av_count(n, P, i, j);
			r += bk_a2av_count(n, P, j, i);
		}
		/* Shares (i + j mod 3) + 1 of 6: 166 + 333 + 500 = 999 by
		 * flooring; the largest share takes the 1 left over. */
		cr_assert_eq(s, n, "rank %d sends %zu", i, s);
		cr_assert_eq(r, n, "rank %d receives %zu", i, r);
	}
	/* Rank 0 to rank 2: (0 + 2) mod 3 + 1 = 3 of 6, plus the rest. */
	cr_assert_eq(bk_a2av_count(n, P, 0, 2), 500 + 1);
}

/* Every rank's allreduce output is the elementwise sum of the inputs. */
Test(backend, allreduce_check_finds_one_wrong_element)
{
	struct bk_case c = make(BK_ALLREDUCE);
	float send[P][N], recv[P][N], out[N];
	size_t sn, rn, i;
	int r;

	bk_buf_counts(&c, P, &sn, &rn);
	cr_assert_eq(sn, N);
	cr_assert_eq(rn, N);
	for (r = 0; r < P; r++)
		bk_fill(&c, r, P, send[r], sn, recv[r], rn);
	for (i = 0; i < N; i++)
		out[i] = send[0][i] + send[1][i] + send[2][i];
	for (r = 0; r < P; r++)
		cr_assert_eq(bk_count_wrong(&c, r, P, out, N), 0);
	/* Element 5 holds (0+5)%3 + (1+5)%3 + (2+5)%3 = 2 + 0 + 1 = 3. */
	cr_assert_float_eq(out[5], 3, 0);
	out[5] = 4;
	cr_assert_eq(bk_count_wrong(&c, 0, P, out, N), 1);
}

/* All-gather: rank r's block of N/P lands at r * N/P. */
Test(backend, allgather_check_finds_a_misplaced_block)
{
	struct bk_case c = make(BK_ALLGATHER);
	float send[P][N / P], recv[N], dummy[N];
	size_t sn, rn;
	int r;

	bk_buf_counts(&c, P, &sn, &rn);
	cr_assert_eq(sn, N / P);
	for (r = 0; r < P; r++)
		bk_fill(&c, r, P, send[r], sn, dummy, rn);
	for (r = 0; r < P; r++)
		memcpy(recv + (size_t)r * sn, send[r], sn * sizeof(float));
	cr_assert_eq(bk_count_wrong(&c, 1, P, recv, rn), 0);
	/* Blocks 0 and 1 swapped: every element whose values differ. */
	memcpy(recv, send[1], sn * sizeof(float));
	cr_assert_gt(bk_count_wrong(&c, 1, P, recv, rn), 0);
}

/* All-to-all: block j of rank i's send is block i of rank j's recv. */
Test(backend, alltoall_check)
{
	struct bk_case c = make(BK_ALLTOALL);
	float send[P][N], recv[P][N], dummy[N];
	size_t sn, rn, per = N / P;
	int i, j;

	bk_buf_counts(&c, P, &sn, &rn);
	for (i = 0; i < P; i++)
		bk_fill(&c, i, P, send[i], sn, dummy, rn);
	for (i = 0; i < P; i++)
		for (j = 0; j < P; j++)
			memcpy(&recv[j][(size_t)i * per], &send[i][(size_t)j * per],
			       per * sizeof(float));
	for (j = 0; j < P; j++)
		cr_assert_eq(bk_count_wrong(&c, j, P, recv[j], rn), 0);
	/* Rank 2 given rank 1's block from rank 0 instead of its own. */
	memcpy(&recv[2][0], &send[0][per], per * sizeof(float));
	cr_assert_gt(bk_count_wrong(&c, 2, P, recv[2], rn), 0);
}

/* Send/recv: rank r receives rank r - 1's data. */
Test(backend, sendrecv_check)
{
	struct bk_case c = make(BK_SENDRECV);
	float send[P][N], dummy[N];
	int r;

	for (r = 0; r < P; r++)
		bk_fill(&c, r, P, send[r], N, dummy, N);
	cr_assert_eq(bk_count_wrong(&c, 1, P, send[0], N), 0);
	/* Its own data instead: (1 + i) % 3 differs from (0 + i) % 3 at
	 * every i. */
	cr_assert_eq(bk_count_wrong(&c, 1, P, send[1], N), N);
}

/* half and bfloat16 hold the check's small integers exactly. */
Test(backend, small_integers_round_trip_in_every_dtype)
{
	unsigned char buf[64];
	int t, v;

	for (t = 0; t < BK_DTYPE_COUNT; t++)
		for (v = 0; v <= 12; v++) {
			bk_store(buf, (enum bk_dtype)t, 1, v);
			cr_assert_eq(bk_load(buf, (enum bk_dtype)t, 1), v, "%s %d",
				     bk_dtype_names[t], v);
		}
}

/* The testers' per-rank counts (bk_param_count), from their sources:
 * nccl-tests v2.19.6 rounds count / nranks down to 16 B, rccl-tests
 * @ ae3e635 all-gather / reduce-scatter to 4 elements, all-to-all to
 * one, all-to-all-v to 0 below nranks^2 / 2 elements.
 *   1 MiB bf16 over 6 ranks: 524288 elements, 87381 a rank; nccl-tests
 *   87381 & ~7 = 87376 (the size it prints: 87376 x 6 x 2 = 1048512 B);
 *   rccl-tests all-gather 87381 / 4 x 4 = 87380, all-to-all 87381.
 *   32 B float over 8 ranks: 8 elements, 1 a rank: nccl-tests 1 & ~3 =
 *   0, rccl-tests all-gather 0, all-to-all 1, all-to-all-v 0 (8 < 32).
 *   double: 16 / 8 = 2 elements (7 -> 6); int8: 16 (31 -> 16).
 *   all-reduce and the rest: the count itself. */
Test(backend, param_count_is_the_testers)
{
	cr_assert_eq(bk_param_count(BK_NCCL_TESTS, BK_ALLGATHER, BK_BFLOAT16,
				    524288, 6), 87376);
	cr_assert_eq(bk_param_count(BK_NCCL_TESTS, BK_ALLTOALL, BK_BFLOAT16,
				    524288, 6), 87376);
	cr_assert_eq(bk_param_count(BK_RCCL_TESTS, BK_ALLGATHER, BK_BFLOAT16,
				    524288, 6), 87380);
	cr_assert_eq(bk_param_count(BK_RCCL_TESTS, BK_REDUCESCATTER,
				    BK_BFLOAT16, 524288, 6), 87380);
	cr_assert_eq(bk_param_count(BK_RCCL_TESTS, BK_ALLTOALL, BK_BFLOAT16,
				    524288, 6), 87381);
	cr_assert_eq(bk_param_count(BK_NCCL_TESTS, BK_REDUCESCATTER, BK_FLOAT,
				    8, 8), 0);
	cr_assert_eq(bk_param_count(BK_RCCL_TESTS, BK_ALLGATHER, BK_FLOAT, 8,
				    8), 0);
	cr_assert_eq(bk_param_count(BK_RCCL_TESTS, BK_ALLTOALL, BK_FLOAT, 8,
				    8), 1);
	cr_assert_eq(bk_param_count(BK_RCCL_TESTS, BK_ALLTOALLV, BK_FLOAT, 8,
				    8), 0);
	cr_assert_eq(bk_param_count(BK_RCCL_TESTS, BK_ALLTOALLV, BK_FLOAT, 32,
				    8), 4);
	cr_assert_eq(bk_param_count(BK_NCCL_TESTS, BK_ALLGATHER, BK_DOUBLE,
				    14, 2), 6);
	cr_assert_eq(bk_param_count(BK_NCCL_TESTS, BK_ALLGATHER, BK_INT8, 62,
				    2), 16);
	cr_assert_eq(bk_param_count(BK_NCCL_TESTS, BK_ALLREDUCE, BK_FLOAT, 7,
				    6), 7);
	cr_assert_eq(bk_param_count(BK_RCCL_TESTS, BK_BROADCAST, BK_INT8, 7,
				    6), 7);
}

/* All-to-all-v: every rank sends and receives the case's count in all,
 * as the testers' alltoallv (rccl-tests: the per-peer counts sum to
 * count x nranks of its paramcount), in bk_a2av_count's blocks. */
Test(backend, alltoallv_check_sends_the_whole_count)
{
	struct bk_case c = make(BK_ALLTOALLV);
	float send[P][N], recv[P][N], dummy[N];
	size_t sn, rn;
	int i, j;

	bk_buf_counts(&c, P, &sn, &rn);
	cr_assert_eq(sn, N);
	cr_assert_eq(rn, N);
	for (i = 0; i < P; i++)
		bk_fill(&c, i, P, send[i], sn, dummy, rn);
	for (i = 0; i < P; i++)
		for (j = 0; j < P; j++)
			memcpy(&recv[j][bk_a2av_displ(N, P, j, i, 0)],
			       &send[i][bk_a2av_displ(N, P, i, j, 1)],
			       bk_a2av_count(N, P, i, j) * sizeof(float));
	for (j = 0; j < P; j++) {
		cr_assert_eq(bk_a2av_displ(N, P, j, P - 1, 0) +
			     bk_a2av_count(N, P, P - 1, j), N);
		cr_assert_eq(bk_count_wrong(&c, j, P, recv[j], rn), 0);
	}
	/* rank 1's first block from rank 0 overwritten by rank 2's */
	memcpy(&recv[1][0], &send[2][bk_a2av_displ(N, P, 2, 1, 1)],
	       bk_a2av_count(N, P, 0, 1) * sizeof(float));
	cr_assert_gt(bk_count_wrong(&c, 1, P, recv[1], rn), 0);
}
