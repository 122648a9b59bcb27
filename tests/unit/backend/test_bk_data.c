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
