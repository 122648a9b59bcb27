/*
 * cgroup.h - a group of collectives the library launches as one
 * (coll_desc.group): how it lays their traffic over its channels.
 *
 * NCCL (>= 2.19; NVIDIA/nccl v2.27.5-1 src/enqueue.cc, ncclPrepareTasks
 * and scheduleCollTasksToPlan) does not run the operations of a group
 * one after another: ncclGroupEnd turns them into one kernel plan. It
 * bins them by (function, reduction, type), picks the algorithm and
 * protocol of each bin on the bin's summed size (operations within 4x
 * of each other are aggregated; the tuner's latency counts once per
 * ceil(operations / channels)), and lays the traffic of every operation
 * over the channels one after another, each channel taking about the
 * group's total traffic / channels:
 *
 *   a channel's share   C = max(m, sum over ops of max(m, f b_i) / K)
 *   an operation        ceil(b / u) cells of u = 16-B-rounded m / f
 *                       bytes, from where the last one stopped, so it
 *                       spans several channels or shares one
 *
 * (m the library's least traffic per channel, f the protocol's traffic
 * per byte: NCCL's x4 for LL; K the channels). Each channel's thread
 * block then runs the parts it holds in turn, each a whole collective on
 * that channel. So the group moves its summed bytes at the bandwidth of
 * all channels, and only a channel holding several parts pays more than
 * one operation's latency. cgroup_channel_ops gives how many parts the
 * busiest channel holds (1: every channel one part at most).
 *
 * For equal operations (b_i = b), one per root in ring order (the order
 * NCCL keeps: its size sorter pushes each bin's equal tasks last-in
 * first-out and ncclPrepareTasks reverses them again), the next part on
 * a channel starts at the rank right after the previous part's root,
 * whose chain it trails by one step: a channel with j parts finishes
 * j - 1 steps after one operation would (algo_ring.c charges that).
 * The chains' pipeline fills as pipe.c group_fill counts: hidden when
 * every rank is a root, about one operation's fill for a few roots.
 *
 * Depends on spec_collectives.h.
 */
#ifndef LLMSIM_NETWORK_CGROUP_H
#define LLMSIM_NETWORK_CGROUP_H

#include <stdint.h>

#include "config/spec_collectives.h"

/* The parts (operations, whole or cut) the busiest of K channels holds
 * when lib lays a group of n operations of op_B bytes each with protocol
 * proto (traffic per byte 1 before the protocol's factor: broadcast,
 * reduce); 1 for n <= 1 or no bytes. */
uint32_t cgroup_channel_ops(const struct coll_group_spec *gs, int proto,
			    uint32_t n, double op_B, uint32_t K);

#endif
