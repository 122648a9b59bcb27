/*
 * cgroup.c - a group of collectives laid over the library's channels
 * (cgroup.h). The walk follows NVIDIA/nccl v2.27.5-1 src/enqueue.cc
 * scheduleCollTasksToPlan (its non-CollNet branch) for n equal tasks of
 * one-byte elements: the channel a task starts on, the cells it puts
 * there ("lo"), on whole channels after ("mid") and on its last channel
 * ("hi"), and where the next task starts.
 */
#include "cgroup.h"

#include <math.h>

#define CGROUP_MAX_CHANNELS 1024

static double up16(double b)
{
	return ceil(b / 16) * 16;
}

uint32_t cgroup_channel_ops(const struct coll_group_spec *gs, int proto,
			    uint32_t n, double op_B, uint32_t K)
{
	uint32_t items[CGROUP_MAX_CHANNELS] = { 0 }, most = 1, i, c;
	double f = gs->traffic.r[proto] > 1 ? gs->traffic.r[proto] : 1;
	double m = gs->channel_min_B > 0 ? gs->channel_min_B : 0;
	double task, per_chan, cell, cells, cell_traffic, per_cells, cur = 0;
	int64_t ch = 0, nK;

	if (n <= 1 || !(op_B > 0) || K == 0)
		return 1;
	if (K > CGROUP_MAX_CHANNELS)
		K = CGROUP_MAX_CHANNELS;
	nK = (int64_t)K;
	/* the estimate of the plan's traffic, every task at least m */
	task = fmax(m, f * op_B);
	per_chan = fmax(m, floor(n * task / K));
	/* cells of m traffic (16-B aligned), at least one byte's worth */
	cell = m > 0 ? up16(ceil(m / f)) : 16;
	cells = ceil(op_B / cell);
	cell_traffic = cell * f;
	per_cells = fmin(cells, ceil(per_chan / cell_traffic));
	if (per_cells < 1)
		per_cells = 1;
	for (i = 0; i < n; i++) {
		double lo, hi, pc = per_cells;
		int64_t mid, used, k;

		if (ch + 1 == nK)	/* the last channel takes the rest */
			lo = cells;
		else
			lo = fmin(cells, ceil((per_chan - cur) / cell_traffic));
		if (lo < 0)
			lo = 0;
		mid = (int64_t)floor((cells - lo) / pc);
		hi = fmod(cells - lo, pc);
		used = (lo > 0) + mid + (hi > 0);
		if (nK < ch + used) {	/* past the channels: spread anew */
			mid = nK - ch - 2;
			if (mid < 0)
				mid = 0;
			pc = floor((cells - lo) / (double)(mid + 1));
			hi = pc + fmod(cells - lo, (double)(mid + 1));
		}
		if (hi == 0 && mid != 0) {
			hi = pc;
			mid--;
		}
		if (lo == 0) {	/* no room left here: start on the next */
			ch++;
			if (mid == 0) {
				lo = hi;
				hi = 0;
			} else {
				lo = pc;
				mid--;
			}
		}
		used = (lo > 0) + mid + (hi > 0);
		for (k = 0; k < used && ch + k < nK; k++)
			items[ch + k]++;
		if (hi > 0) {
			ch += used - 1;
			cur = hi * cell_traffic;
		} else if (mid != 0) {
			ch += used;
			cur = 0;
		} else {
			cur += lo * cell_traffic;
		}
		if (cur >= per_chan && ch + 1 != nK) {
			ch++;
			cur = 0;
		}
		if (ch >= nK)
			ch = nK - 1;
	}
	for (c = 0; c < K; c++)
		if (items[c] > most)
			most = items[c];
	return most;
}
