/*
 * sched.h - pipeline schedules as pure functions: the order in which one
 * pipeline rank runs the forward and backward passes of its model chunks
 * over the microbatches of a step.
 *
 * A rank r of pp holds vpp model chunks; chunk c of rank r is virtual
 * stage c * pp + r, so the layers flow 0 -> 1 -> ... -> pp-1 -> 0 (next
 * chunk) -> ... Each rank runs 2 * m * vpp actions for m microbatches.
 *
 * Depends on libc only.
 */
#ifndef LLMSIM_MODELS_SCHED_H
#define LLMSIM_MODELS_SCHED_H

#include <stdint.h>

struct sched_action {
	uint8_t bwd;		/* 0 forward, 1 backward */
	uint32_t chunk;		/* model chunk on this rank (0..vpp-1) */
	uint32_t mb;		/* microbatch (0..m-1) */
};

/* Actions per rank: 2 m vpp. */
int64_t sched_actions(int64_t m, int64_t vpp);

/*
 * The actions of rank (0..pp-1) under schedule (enum pp_schedule of
 * spec_job.h) into out[0 .. sched_actions(m, vpp)-1]. The interleaved
 * schedule needs m % pp == 0 (checked by the job schema); gpipe and 1f1b
 * need vpp == 1.
 */
void sched_rank(int schedule, int64_t pp, int64_t vpp, int64_t m,
		int64_t rank, struct sched_action *out);

/* The same with `extra` more warm-up forwards on every rank when pp > 1
 * (at most all of them; 1F1B and interleaved): the combined 1F1B of MoE
 * all-to-all overlap. */
void sched_rank_ex(int schedule, int64_t pp, int64_t vpp, int64_t m,
		   int64_t rank, int64_t extra, struct sched_action *out);

/*
 * The microbatches a rank holds activations for, per chunk, at the
 * moments their total can peak. The activations in flight on a rank are
 * those of every (chunk, microbatch) whose forward has run and backward
 * has not; with w[c] >= 0 bytes per microbatch of chunk c, the peak over
 * the schedule is the largest sum_c count[c] w[c] over these vectors:
 * the live counts right after each forward that a backward follows,
 * duplicates and vectors another dominates (no larger in any chunk)
 * dropped. 1F1B gives one vector, min(p - r, m); GPipe one, m.
 */
struct sched_live {
	int64_t vpp;		/* counts per vector (chunks) */
	int64_t n;		/* vectors */
	int32_t *count;		/* n * vpp: vector i at count[i * vpp] */
};

/* The live vectors of rank `rank` (arguments as sched_rank_ex). Returns
 * 0, or -1 when out of memory. Release with sched_live_release. */
int sched_live_init(struct sched_live *l, int schedule, int64_t pp,
		    int64_t vpp, int64_t m, int64_t rank, int64_t extra);
void sched_live_release(struct sched_live *l);

/* The peak of sum_c count[c] w[c] over l's vectors (w[0..vpp-1] >= 0). */
double sched_live_peak(const struct sched_live *l, const double *w);

/* Forward passes a rank runs before its first backward. */
int64_t sched_warmup(int schedule, int64_t pp, int64_t vpp, int64_t m,
		     int64_t rank);

/* The warm-up forwards of sched_rank_ex (with `extra`), w: actions
 * 0..w-1 are forwards, then the steady state's m vpp - w (forward,
 * backward) steps at actions w + 2k and w + 2k + 1, then the cool-down
 * backwards. When w reaches m vpp (every forward in warm-up) there is
 * no steady state: the last forward and the first backward are
 * neighbours but not a step (Megatron's are_all_microbatches_in_warmup:
 * its combined 1F1B runs them apart). */
int64_t sched_warmup_ex(int schedule, int64_t pp, int64_t vpp, int64_t m,
			int64_t rank, int64_t extra);

struct job_spec;

/* Whether job j's pipeline runs in lock step (framework pp_lockstep:
 * torch.distributed.pipelining's ScheduleInterleaved1F1B, models/
 * train_pp.c) with mg microbatches a schedule run: pp > 1, the
 * interleaved schedule, no all-to-all overlap, mg a multiple of pp. The
 * step program and the planner's estimate both ask it. */
int sched_lockstep(const struct job_spec *j, int64_t mg);

/* The time step of action k (0-based, within one schedule run of n
 * actions) of pipeline rank `rank` in torch's lock-step table
 * (_get_1f1b_rank_ops): its w warm-up forwards from step rank; the
 * steady state from step max(rank + w, vpp pp + 2 (pp - 1 - rank))
 * (rank + w when w is 0), an action a step; in the cool-down (its last
 * w actions, backwards) a None before each. */
int64_t sched_lock_step(int64_t pp, int64_t vpp, int64_t n, int64_t w,
			int64_t rank, int64_t k);

#endif
