/*
 * plan_split.c - the analytical tier's walk of one node count shared by
 * processes (space_walk in `procs` processes: this one and forked
 * helpers), merged into what one walk would have left.
 *
 * Why: the walk costs every valid layout that fits (est_bound: the
 * collectives timed on the fabric model, the memory of each schedule),
 * 1.3-1.6 s of one CPU for DeepSeek-V3 on 2,048 GPUs, while the other
 * CPUs wait for the full tier to start.
 *
 * How: the walk's units (plan_impl.h struct split: one (tp, cp, pp, etp,
 * ep, vpp) and everything below it) are numbered in walk order. A first
 * pass here counts them and records the levels above them (rule checks
 * only: 0.5 ms for DeepSeek-V3 2048's 9,945 units). Each process then
 * takes a range of units, 1/procs of them in walk order, one unit at a
 * time from its slot in shared memory (lo << 32 | hi, compare-and-swap,
 * so a process that dies holds no lock), walking again (cheap) for each
 * range; one whose range is done takes the back half of the largest
 * range left (its owner stops where the range now ends). Ranges keep a
 * process on neighbouring layouts, which share the estimator's memos
 * (the same TP and expert collectives, the same schedules); taking unit
 * after unit from one counter spread neighbours over the processes and
 * timed 1.5x the collectives in all. The units take from microseconds to
 * tens of milliseconds (the tp 8 ones the most), which the stealing
 * evens out. The estimator's memos (est.c) and the schedules' live
 * vectors are pure caches: a layout's bound and memory do not depend on
 * what the process costed before.
 *
 * The merge. What a walk records is a sum (the pruned counts), a first
 * (rule_miss: the first layout pruned for each reason; min_mem: the first
 * of the smallest peaks) or a list (the kept layouts, in walk order).
 * Each record carries the place it was made at, seq = 2 u before unit u
 * (the first pass) and 2 u + 1 inside unit u (its taker); a first is
 * the one of least seq (min_mem: the least peak, then the least seq),
 * sums add, and the kept layouts sort by unit, stably (one process
 * walked all of a unit, in walk order). That is the one walk's state, bit
 * for bit, so the ranking that follows (space_estimate) is the same.
 *
 * Anything else than a clean walk everywhere (a diagnostic in any
 * process, a helper that died or could not be started, a short record)
 * and the walk is done again here alone with the caller's diagnostics:
 * the errors and warnings a user sees are the serial walk's, once. The
 * estimator's counters (est_stats) add up every process's work.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/diag.h"
#include "base/mem.h"
#include "base/proc.h"
#include "plan_impl.h"

enum { MAX_HELPERS = 63 };

/* What a helper sends first. */
struct head {
	int64_t ok;			/* 1: walked without a diagnostic */
	uint64_t nkept;			/* struct kept records after this */
	uint64_t pruned[PR_COUNT];
	struct miss miss[PR_COUNT];
	uint64_t miss_seq[PR_COUNT];
	struct footprint min_mem;
	struct plan_layout min_mem_lay;
	int64_t have_min_mem;
	uint64_t min_seq;
	struct est_stats stats;		/* the helper's work */
};

/* Then each layout it kept, in walk order. */
struct kept {
	uint64_t unit;
	struct plan_layout lay;
	double lb_s;			/* s */
	double peak_B;			/* B */
};

/* One helper's records, read back. */
struct share {
	struct head h;
	struct kept *k;			/* [h.nkept] */
};

/* Zero what a walk records (s fresh from space_init has it so). */
static void clear_records(struct search *s)
{
	memset(s->pruned, 0, sizeof(s->pruned));
	memset(s->rule_miss, 0, sizeof(s->rule_miss));
	memset(&s->min_mem, 0, sizeof(s->min_mem));
	memset(&s->min_mem_lay, 0, sizeof(s->min_mem_lay));
	s->have_min_mem = 0;
	s->n = 0;
}

static uint64_t pack(uint64_t lo, uint64_t hi)
{
	return lo << 32 | hi;
}

/* Take the back half of the largest range left into this process's
 * slot; 0 when none is left. */
static int steal(struct split *sp, _Atomic uint64_t *slots, size_t n)
{
	for (;;) {
		uint64_t best = 0, cur = 0, lo, hi, t;
		size_t i, v = n;

		for (i = 0; i < n; i++) {
			uint64_t c = atomic_load(&slots[i]);
			uint64_t l = c >> 32, h = c & 0xffffffffu;

			if (h > l && h - l > best) {
				best = h - l;
				v = i;
				cur = c;
			}
		}
		if (v == n)
			return 0;
		lo = cur >> 32;
		hi = cur & 0xffffffffu;
		t = (hi - lo + 1) / 2;
		if (!atomic_compare_exchange_strong(&slots[v], &cur,
						    pack(lo, hi - t)))
			continue;	/* it moved: look again */
		/* nobody takes from an ended range: a plain store */
		atomic_store(sp->slot, pack(hi - t, hi));
		sp->from = hi - t;
		return 1;
	}
}

/* This process's share of the units: its range, then what it takes from
 * the others. 0, or -1 (the walk failed). */
static int walk_share(struct search *s, _Atomic uint64_t *slots, size_t n)
{
	struct split *sp = &s->split;

	do {
		sp->unit = 0;
		sp->stopped = 0;
		if (space_walk(s) != 0)
			return -1;
	} while (steal(sp, slots, n));
	return 0;
}

/* A helper: its share of the walk into fd. Never returns. */
static void helper(struct search *s, _Atomic uint64_t *slots, size_t n,
		   int fd)
{
	struct est_stats st0, st1;
	struct diag quiet;
	struct head h;
	size_t i;

	diag_init(&quiet, NULL);	/* the serial walk says it, if any */
	s->d = &quiet;
	clear_records(s);		/* the first pass's are the parent's */
	est_get_stats(s->est, &st0);
	memset(&h, 0, sizeof(h));
	h.ok = walk_share(s, slots, n) == 0 && quiet.errors == 0 &&
	       quiet.warnings == 0;
	if (h.ok) {
		est_get_stats(s->est, &st1);
		h.nkept = s->n;
		memcpy(h.pruned, s->pruned, sizeof(h.pruned));
		memcpy(h.miss, s->rule_miss, sizeof(h.miss));
		memcpy(h.miss_seq, s->split.miss_seq, sizeof(h.miss_seq));
		h.min_mem = s->min_mem;
		h.min_mem_lay = s->min_mem_lay;
		h.have_min_mem = s->have_min_mem;
		h.min_seq = s->split.min_seq;
		h.stats.steps = st1.steps - st0.steps;
		h.stats.block_sets = st1.block_sets - st0.block_sets;
		h.stats.colls = st1.colls - st0.colls;
		h.stats.coll_lookups = st1.coll_lookups - st0.coll_lookups;
	}
	if (proc_write_all(fd, &h, sizeof(h)) != 0)
		_exit(1);
	for (i = 0; h.ok && i < s->n; i++) {
		struct kept k;

		memset(&k, 0, sizeof(k));
		k.unit = s->split.vunit[i];
		k.lay = s->v[i].lay;
		k.lb_s = s->v[i].lb_s;
		k.peak_B = s->v[i].peak_B;
		if (proc_write_all(fd, &k, sizeof(k)) != 0)
			_exit(1);
	}
	_exit(h.ok ? 0 : 1);
}

/* Read a helper's records into *sh; 0, or -1. */
static int read_share(int fd, struct share *sh)
{
	if (proc_read_all(fd, &sh->h, sizeof(sh->h)) != 0 || !sh->h.ok)
		return -1;
	if (sh->h.nkept > SIZE_MAX / sizeof(*sh->k))
		return -1;
	sh->k = mem_alloc(sh->h.nkept ? sh->h.nkept * sizeof(*sh->k) : 1);
	if (!sh->k)
		return -1;
	return proc_read_all(fd, sh->k, sh->h.nkept * sizeof(*sh->k));
}

/* Add a helper's counts and firsts to s (the parent's). */
static void merge_records(struct search *s, const struct head *h)
{
	struct split *sp = &s->split;
	int r;

	for (r = 0; r < PR_COUNT; r++) {
		s->pruned[r] += h->pruned[r];
		s->rule_miss[r].count += h->miss[r].count;
		if (h->miss[r].have && (!s->rule_miss[r].have ||
					h->miss_seq[r] < sp->miss_seq[r])) {
			s->rule_miss[r].lay = h->miss[r].lay;
			s->rule_miss[r].have = 1;
			sp->miss_seq[r] = h->miss_seq[r];
		}
	}
	if (h->have_min_mem &&
	    (!s->have_min_mem || h->min_mem.peak_B < s->min_mem.peak_B ||
	     (h->min_mem.peak_B == s->min_mem.peak_B &&
	      h->min_seq < sp->min_seq))) {
		s->min_mem = h->min_mem;
		s->min_mem_lay = h->min_mem_lay;
		s->have_min_mem = 1;
		sp->min_seq = h->min_seq;
	}
	est_add_stats(s->est, &h->stats);
}

/* A kept layout of one process: source 0 the parent's s->v, 1 + i
 * helper i's. */
struct ref {
	uint64_t unit;
	size_t src, idx;
};

static int by_unit(const void *a, const void *b)
{
	const struct ref *x = a, *y = b;

	/* a unit is one process's, its layouts in walk order */
	if (x->unit != y->unit)
		return x->unit < y->unit ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* The kept layouts of s (the parent's) and of the helpers, in walk order
 * into a new s->v. 0, or -1 out of memory. */
static int merge_kept(struct search *s, const struct share *sh, size_t nsh)
{
	size_t total = s->n, i, k, o = 0;
	struct scored *v;
	struct ref *r;

	for (i = 0; i < nsh; i++)
		total += sh[i].h.nkept;
	v = mem_alloc((total ? total : 1) * sizeof(*v));
	r = mem_alloc((total ? total : 1) * sizeof(*r));
	if (!v || !r) {
		mem_free(v);
		mem_free(r);
		return -1;
	}
	for (k = 0; k < s->n; k++)
		r[o++] = (struct ref){ s->split.vunit[k], 0, k };
	for (i = 0; i < nsh; i++)
		for (k = 0; k < sh[i].h.nkept; k++)
			r[o++] = (struct ref){ sh[i].k[k].unit, i + 1, k };
	qsort(r, total, sizeof(*r), by_unit);
	for (o = 0; o < total; o++) {
		if (r[o].src == 0) {
			v[o] = s->v[r[o].idx];
		} else {
			const struct kept *kp = &sh[r[o].src - 1].k[r[o].idx];

			memset(&v[o], 0, sizeof(v[o]));
			space_kept(s, &kp->lay, kp->lb_s, kp->peak_B, &v[o]);
		}
	}
	mem_free(r);
	mem_free(s->v);
	s->v = v;
	s->n = s->cap = total;
	return 0;
}

static void stop(const pid_t *pid, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		(void)kill(pid[i], SIGTERM);
}

/* Wait for the helpers; 0 when every one exited 0. */
static int reap(const pid_t *pid, size_t n)
{
	int bad = 0, st;
	size_t i;

	for (i = 0; i < n; i++) {
		pid_t got;

		while ((got = waitpid(pid[i], &st, 0)) < 0 && errno == EINTR)
			;
		if (got < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			bad = 1;
	}
	return bad ? -1 : 0;
}

/* Processes to share the walk: --jobs, else one per CPU. */
static int walk_procs(const struct plan_opts *o)
{
	long cpus = o->jobs > 0 ? o->jobs : sysconf(_SC_NPROCESSORS_ONLN);

	return cpus < 1 ? 1 : cpus > 64 ? 64 : (int)cpus;
}

int space_search(struct search *s)
{
	int procs = walk_procs(s->o);

	space_count(s);
	return procs > 1 ? split_walk(s, procs) : space_walk(s);
}

int split_walk(struct search *s, int procs)
{
	pid_t pid[MAX_HELPERS], parent = getpid();
	int fd[MAX_HELPERS];
	struct share sh[MAX_HELPERS];
	struct diag quiet, *d = s->d;
	size_t nh = 0, want, np, i;
	_Atomic uint64_t *slots;
	struct est_share *share;
	uint64_t units;
	int ok, rc;

	s->walkers = 1;
	if (procs <= 1)
		return space_walk(s);
	if (s->n != 0)
		BUG("split_walk: a search walked already");
	want = procs - 1 > MAX_HELPERS ? MAX_HELPERS : (size_t)(procs - 1);
	np = want + 1;
	/* the first pass: the levels above the units, here (no diagnostic
	 * can come of it: rule checks) */
	memset(&s->split, 0, sizeof(s->split));
	s->split.on = 1;
	s->split.above = 1;
	if (space_walk(s) != 0)
		goto alone;
	units = s->split.unit;
	s->split.above = 0;
	if (units < 2 * np || units > 0xffffffffu)
		goto alone;	/* not worth a process; or past a slot */
	slots = mmap(NULL, np * sizeof(*slots), PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (slots == MAP_FAILED)
		goto alone;
	share = est_share_new();	/* NULL: each times its own */
	est_set_share(s->est, share);
	for (i = 0; i < np; i++)	/* 1/np of the units each, in order */
		atomic_init(&slots[i], pack(units * i / np,
					    units * (i + 1) / np));
	memset(sh, 0, sizeof(sh));
	fflush(NULL);	/* nothing buffered is written twice */
	for (i = 0; i < want; i++) {
		int p[2];

		if (pipe(p) != 0)
			break;
		pid[nh] = fork();
		if (pid[nh] == 0) {
			close(p[0]);
			if (proc_die_with_parent(parent) != 0)
				_exit(1);
			s->split.slot = &slots[nh + 1];
			s->split.from = units * (nh + 1) / np;
			helper(s, slots, np, p[1]);
		}
		close(p[1]);
		if (pid[nh] < 0) {
			close(p[0]);
			break;
		}
		fd[nh++] = p[0];
	}
	/* a helper not started leaves its range to the others' stealing */
	diag_init(&quiet, NULL);
	s->d = &quiet;
	s->split.slot = &slots[0];
	s->split.from = 0;
	rc = walk_share(s, slots, np);
	s->d = d;
	ok = rc == 0 && quiet.errors == 0 && quiet.warnings == 0;
	if (!ok)
		stop(pid, nh);
	for (i = 0; i < nh; i++) {
		if (ok && read_share(fd[i], &sh[i]) != 0) {
			ok = 0;
			stop(pid, nh);
		}
		close(fd[i]);
	}
	if (reap(pid, nh) != 0)
		ok = 0;
	if (ok) {
		for (i = 0; i < nh; i++)
			merge_records(s, &sh[i].h);
		ok = merge_kept(s, sh, nh) == 0;
	}
	for (i = 0; i < nh; i++)
		mem_free(sh[i].k);
	munmap(slots, np * sizeof(*slots));
	est_set_share(s->est, NULL);
	est_share_free(share);
	if (ok) {
		mem_free(s->split.vunit);
		memset(&s->split, 0, sizeof(s->split));
		s->walkers = (int)nh + 1;
		return 0;
	}
alone:	/* the walk again, alone, saying what goes wrong */
	mem_free(s->split.vunit);
	memset(&s->split, 0, sizeof(s->split));
	clear_records(s);
	s->walkers = 1;
	return space_walk(s);
}
