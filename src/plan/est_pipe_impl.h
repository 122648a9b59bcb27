/*
 * est_pipe_impl.h - what est_pipe.c (the pipeline recurrence) and
 * est_pipe_order.c (the orders it runs along) share. Private to
 * src/plan.
 */
#ifndef LLMSIM_PLAN_EST_PIPE_IMPL_H
#define LLMSIM_PLAN_EST_PIPE_IMPL_H

#include <stdint.h>

#include "models/sched.h"
#include "est_impl.h"

/* One action of an order (below), with everything the recurrence needs
 * precomputed: where its end goes (end[at]: forwards at s m + i,
 * backwards at S m + s m + i), its input (sent[src] plus the transfer
 * x[xin] on the stream slot sin; src = -1 none, -2 its own forward's end
 * end[own]), its duration (dur[d]), its rank, and its output (a send on
 * slot sout over x[xout]; sout = -1 none). */
struct pstep {
	int32_t at, src, own, d;
	int32_t kept;		/* its end is read: the last stage's forward
				 * (own), a run's last backward (chunk_end) */
	int32_t hd;		/* its duration when its chunk is still
				 * gathered (dur[hd], in->f_held), or -1 */
	int32_t r, sin, xin;
	int32_t sout, xout;
};

/* A step as run_once() reads it: every operand an index into one array
 * of values (the layout of run_once's scratch, which the order's shape
 * fixes), the absent ones pointing at cells that make them no-ops (a
 * missing input reads 0 and adds no transfer), so the recurrence runs
 * without a branch per step. Alone that measured no faster; with the
 * order by rounds (below) a round's independent steps overlap without a
 * mispredicted kind of action cutting the overlap short.
 *
 * A missing stream (no input from another stage, or no send) is the
 * rank's dummy cell, read and written like a stream: it only ever holds
 * what the rank's own steps put there (-inf at first, then a ready time
 * max(got, dummy) with got 0 or the rank's own earlier end, or an end),
 * none later than the rank's free time when the next step reads it,
 * since with durations >= 0 a rank's ends never decrease. So where the
 * step takes max(ready, free), or max(end, slot) with end >= free, the
 * dummy changes nothing, bit for bit, as the -inf it replaces (read)
 * and the cell nothing read (written) did: one index where there were
 * two, and sent[at] is found from at. Durations that are not all >= 0
 * (none the estimator makes) take run_once's exact branchy loop.
 *
 * A step's end (end[at]) is read only where it is some step's input (the
 * last stage's backward reads its own forward's) or a chunk's end (a
 * run's last backward); every other step writes it to one junk cell
 * (ae). The values are the same; what changes is that a round of a
 * deep pipeline touched four lines a rank (both ends and both sents of
 * its forward and backward cells), two of them never read again: at pp
 * 128 that was past L1 (48 KiB) and a step cost ~3x one at pp 8; the
 * llama3.1-405b-16k search's warm estimates run 14 % faster without. */
struct pflat {
	int32_t in;		/* its input: sent[src], end[own] or ZERO */
	int32_t sin;		/* its input's stream slot, or the dummy */
	int32_t xin;		/* the input's transfer, or ZERO */
	int32_t r;		/* its rank's free time */
	int32_t d, hd;		/* its duration; held (hd = d without) */
	int32_t at;		/* sent[at] */
	int32_t ae;		/* end[at] where that is read (struct
				 * pstep kept), else the junk cell */
	int32_t sout;		/* its output's stream slot, or the dummy */
	int32_t xout;		/* the output's transfer, or ZERO */
};

/* A step of struct pflat in 24 bytes where it can be (pack()): what
 * run_steps() streams through is the order, 36-40 bytes a step of
 * 8,000 for a 128-stage 1F1B pipeline, and a search's orders (one per
 * shape) do not stay in L2 together. The cells of free times, streams,
 * durations, transfers, dummies, ZERO and the junk cell are at l.fr and
 * after, a few thousand: 16 bits from l.fr, four to a 64-bit word (the
 * PCOMP_ shifts). at keeps pflat's, its top bit set where ae is at (else
 * ae is the junk cell).
 *
 * Words, not seven 16-bit fields: the recurrence is bound by its loads
 * (two a cycle), and a field each was nine loads of indices a step
 * beside its seven of values; three words and shifts (the ALU has ports
 * to spare) took the llama3.1-405b-16k search's warm estimates ~10 %
 * faster, the same steps on the same cells. */
struct pcomp {
	int32_t in;		/* a sent value's pool cell (est_pipe_order.c
				 * pool_cells), else pflat's */
	uint32_t at;
	uint64_t rd;		/* sin, xin, r, d */
	uint64_t out;		/* hd, sout, xout, snd: the pool cell (or
				 * the junk cell) the step's sent value goes
				 * to, for sent[at] */
};

#define PCOMP_KEPT 0x80000000u
#define PCOMP_SIN 0	/* in rd */
#define PCOMP_XIN 16
#define PCOMP_R 32
#define PCOMP_D 48
#define PCOMP_HD 0	/* in out */
#define PCOMP_SOUT 16
#define PCOMP_XOUT 32
#define PCOMP_SND 48

/* A rank's transfer streams: per direction (forward activations F,
 * backward gradients B) the one to its neighbours, the interleaved
 * wrap's between the last rank and the first (W), and, where the
 * schedule's transfers are point-to-point calls of their own
 * (est_pipe_split), the one to the neighbour whose pair's lower rank is odd
 * (O): models/train_pp.c's pp_fwd / pp_fwd_wrap / pp_fwd_odd and the
 * pp_bwd ones. */
enum { ST_F, ST_FW, ST_FO, ST_B, ST_BW, ST_BO, ST_N };

/* run_once's scratch, in doubles, for S stages, p ranks and m
 * microbatches: end[2 S m], sent[2 S m], free[p], stream[ST_N p],
 * dur[6 S], x[p], dummy[p] (struct pflat), then the cell ZERO (0). */
struct playout {
	int64_t sent, fr, stream, dur, x, dummy, zero, junk, n;
};


/* Every rank's actions in an order each action comes after its input's
 * producer (and after its rank's earlier actions), by rounds: in each
 * round every rank in turn places its next action if that action's
 * input was placed in an earlier round. The actions of a round depend on
 * none of each other, so the processor overlaps them (placed as far as
 * each rank could advance, a rank's actions came one after another, each
 * waiting for the one before: the recurrence ran at the latency of that
 * chain). Every action reads the same values in any such order (a rank's
 * free time and streams change in its own action order), so the times
 * are the same bit for bit. It depends on (schedule, p, v, m) only, so it
 * is built once and every layout of that shape runs along it. */
struct porder {
	int64_t n;
	struct pflat *v;
	struct pcomp *c;	/* v in 24 bytes a step (pack()), or NULL */
	/* est_pipe_run's three runs (m0, m0 + g, m0 + 2g microbatches) as
	 * one order (build_three): v holds the steps the three share, then
	 * each run's own; part[] counts them, laid out with stride M (the
	 * largest m). Unused (0) in an order of one run. */
	int64_t part[4], M;
	/* cells after the layout's n that c's sent values go to (0 with
	 * c NULL): the scratch is n + pool cells */
	int64_t pool;
};

/* run_once's scratch laid out for p ranks, S stages, m microbatches. */
struct playout est_pipe_layout(int64_t p, int64_t S, int64_t m);

/* Rank r's stream slot for a transfer of direction bwd (0 forward, 1
 * backward) with a neighbour: wrap, the interleaved wrap between ranks
 * p - 1 and 0; else lower, the pair's lower rank (est_pipe_order.c). */
int32_t est_pipe_slot(int64_t r, int bwd, int wrap, int64_t lower,
		      int split);

/* Whether the schedule's transfers are point-to-point calls of their own,
 * on a stream per pair of neighbours (est_pipe_order.c). */
int est_pipe_split(const struct est_pipe *in);

/* The step of action x of rank r in one run's layout (stride m); held[]
 * per chunk, updated (est_pipe_order.c). */
struct pstep est_pipe_step(struct sched_action x, int64_t r, int64_t p,
			   int64_t S, int64_t m, int split, uint8_t *held);

/* The order of (schedule, p, v, m), split or not, remembered in e; with
 * g > 0 the order of est_pipe_run's three runs from m0 = m. NULL when out
 * of memory. */
const struct porder *est_pipe_order(struct est *e, int schedule, int64_t p,
				    int64_t v, int64_t m, int64_t g,
				    int split);

#endif
