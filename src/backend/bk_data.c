/*
 * bk_data.c - the data every backend puts in its buffers and the values
 * it must find after the call: the check, as rccl-tests does it.
 *
 * Element i of rank r's input is v(r, i) = (r + i) mod 3, so every sum
 * over ranks is a small integer, exact in every dtype (int8 up to 42
 * ranks; above that the check skips reductions on int8). All-to-all
 * blocks carry v(src + dst, i), so a block that lands at the wrong
 * place reads wrong.
 *
 * Buffer shapes, in elements, for n = count and p ranks:
 *   allreduce, reduce       send n, recv n
 *   allgather               send n/p, recv n
 *   reducescatter           send n, recv n/p
 *   alltoall                send n, recv n (blocks of n/p per peer)
 *   alltoallv               send n, recv n (bk_a2av_count's skew; n/p
 *                           a peer on average, as the testers' count)
 *   broadcast               recv n (in place; the root's data)
 *   sendrecv, copy          send n, recv n
 */
#include "bk.h"

#include <stddef.h>

void bk_buf_counts(const struct bk_case *c, int p, size_t *send_n,
		   size_t *recv_n)
{
	size_t n = c->count, per = n / (size_t)p;

	*send_n = *recv_n = n;
	if (c->op == BK_ALLGATHER)
		*send_n = per;
	else if (c->op == BK_REDUCESCATTER)
		*recv_n = per;
	else if (c->op == BK_BROADCAST)
		*send_n = 0;
}

size_t bk_a2av_displ(size_t n, int p, int rank, int peer, int sending)
{
	size_t d = 0;
	int j;

	for (j = 0; j < peer; j++)
		d += sending ? bk_a2av_count(n, p, rank, j)
			     : bk_a2av_count(n, p, j, rank);
	return d;
}

void bk_fill(const struct bk_case *c, int rank, int p, void *send,
	     size_t send_n, void *recv, size_t recv_n)
{
	size_t i, per = c->count / (size_t)p, b;
	enum bk_dtype dt = c->dtype;
	int j;

	for (i = 0; i < send_n; i++)
		bk_store(send, dt, i, c->op == BK_ALLTOALL ?
			 bk_fill_value(rank + (int)(i / per), i % per) :
			 bk_fill_value(rank, i));
	for (i = 0; i < recv_n; i++)
		bk_store(recv, dt, i, c->op == BK_BROADCAST && rank == c->root
			 ? bk_fill_value(rank, i) : 0);
	if (c->op != BK_ALLTOALLV)
		return;
	for (j = 0, b = 0; j < p; j++) {
		size_t cnt = bk_a2av_count(c->count, p, rank, j);

		for (i = 0; i < cnt; i++)
			bk_store(send, dt, b + i, bk_fill_value(rank + j, i));
		b += cnt;
	}
}

/* Sum over p ranks of v(r, i): depends on i mod 3 only. */
static double rank_sum(int p, size_t i)
{
	double s = 0;
	int r;

	for (r = 0; r < p; r++)
		s += bk_fill_value(r, i);
	return s;
}

/* What recv[i] must hold on rank after the call. */
static double expect(const struct bk_case *c, int rank, int p, size_t i,
		     const double *sum3)
{
	size_t per = c->count / (size_t)p, d = 0;
	int j;

	switch (c->op) {
	case BK_ALLREDUCE:
	case BK_REDUCE:
		return sum3[i % 3];
	case BK_ALLGATHER:
		return bk_fill_value((int)(i / per), i % per);
	case BK_REDUCESCATTER:
		return sum3[((size_t)rank * per + i) % 3];
	case BK_ALLTOALL:
		return bk_fill_value((int)(i / per) + rank, i % per);
	case BK_ALLTOALLV:
		for (j = 0; j < p; j++) {
			size_t cnt = bk_a2av_count(c->count, p, j, rank);

			if (i < d + cnt)
				return bk_fill_value(j + rank, i - d);
			d += cnt;
		}
		return -1;
	case BK_BROADCAST:
		return bk_fill_value(c->root, i);
	case BK_SENDRECV:
		return bk_fill_value((rank + p - 1) % p, i);
	default:
		return bk_fill_value(rank, i);
	}
}

int bk_checkable(const struct bk_case *c, int p)
{
	int reduction = c->op == BK_ALLREDUCE || c->op == BK_REDUCE ||
			c->op == BK_REDUCESCATTER;

	/* 2 p must fit the type: int8 sums up to 127. */
	return !(reduction && (c->dtype == BK_INT8 || c->dtype == BK_UINT8) &&
		 2 * p > 127);
}

long bk_count_wrong(const struct bk_case *c, int rank, int p,
		    const void *recv, size_t recv_n)
{
	double sum3[3];
	long wrong = 0;
	size_t i;

	if (c->op == BK_REDUCE && rank != c->root)
		return 0;
	for (i = 0; i < 3; i++)
		sum3[i] = rank_sum(p, i);
	for (i = 0; i < recv_n; i++)
		wrong += bk_load(recv, c->dtype, i) != expect(c, rank, p, i, sum3);
	return wrong;
}
