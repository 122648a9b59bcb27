/*
 * sweep_run.c - the worker pool (sweep_run.h): fork -j workers that take
 * points from a shared counter and report each outcome on a pipe; show
 * progress; print the summary table from the database.
 *
 * Processes, not threads: a worker is a fork of this process, so the
 * loaded sweep and resolved base are simply there, each worker has its
 * own SQLite connection (SQLite connections must not cross a fork: the
 * parent closes its own before forking) and its own simulation, and a
 * crash in one point takes one worker down, not the sweep. Workers ask
 * the kernel to kill them when the parent dies (Linux PR_SET_PDEATHSIG),
 * so `kill -9` of the sweep stops everything, leaving every finished
 * point stored.
 *
 * A record on the pipe is smaller than PIPE_BUF, so each write is atomic
 * and records from different workers never interleave.
 */
#include "base/clock.h"
#include "sweep_impl.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/diag.h"
#include "base/arena.h"
#include "base/mem.h"
#include "base/proc.h"
#include "config/cnode.h"
#include "config/config.h"
#include "config/spec_job.h"
#include "store/store.h"

/* Progress redraws at most this often on a terminal. */
#define REDRAW_S 0.2

/* SIGINT or SIGTERM received while the points run (0: none). The sweep
 * stops taking points, stops its workers, prints what it stored and
 * dies of the signal; a second one kills it at once (SA_RESETHAND). */
static volatile sig_atomic_t stop_sig;

static void on_stop(int sig)
{
	static const char msg[] = "\nllmsim sweep: stopping (a second "
				  "signal stops it at once)\n";
	ssize_t n;

	stop_sig = sig;
	n = write(STDERR_FILENO, msg, sizeof(msg) - 1);
	(void)n;
}

static const int stop_sigs[] = { SIGINT, SIGTERM };

/* Catch the stop signals (a signal ignored when we started, as in a
 * background job or under nohup, stays ignored); old[] to restore. */
static void catch_stops(struct sigaction *old)
{
	struct sigaction sa;
	size_t i;

	stop_sig = 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sa.sa_flags = (int)SA_RESETHAND; /* no SA_RESTART: poll returns */
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < 2; i++) {
		sigaction(stop_sigs[i], NULL, &old[i]);
		if (old[i].sa_handler != SIG_IGN)
			sigaction(stop_sigs[i], &sa, NULL);
	}
}

/* In a worker: the stop signals the parent catches die at once;
 * ignored ones stay ignored. */
static void worker_stops(void)
{
	struct sigaction sa;
	size_t i;

	for (i = 0; i < 2; i++)
		if (sigaction(stop_sigs[i], NULL, &sa) == 0 &&
		    sa.sa_handler != SIG_IGN)
			signal(stop_sigs[i], SIG_DFL);
}

static void restore_stops(const struct sigaction *old)
{
	size_t i;

	for (i = 0; i < 2; i++)
		sigaction(stop_sigs[i], &old[i], NULL);
}

struct rec {
	uint64_t k;			/* position in the shard's point list */
	uint32_t outcome;		/* enum sweep_outcome */
	char hash[65];
};

struct pool {
	struct sweep_ctx *c;
	uint64_t *idx;			/* [count] the shard's point indices */
	uint64_t count;
	unsigned char *outcome;		/* [count] */
	char (*hash)[65];		/* [count] */
	struct sweep_tally *t;
	double t0, last_draw;
	int drawn;			/* a live line is on the screen */
};

/* ---- progress ------------------------------------------------------- */

static void eta_text(double s, char *buf, size_t len)
{
	if (!(s >= 0) || s > 1e7)
		snprintf(buf, len, "?");
	else if (s >= 3600)
		snprintf(buf, len, "%dh%02dm", (int)(s / 3600),
			 (int)(s / 60) % 60);
	else if (s >= 60)
		snprintf(buf, len, "%dm%02ds", (int)(s / 60), (int)s % 60);
	else
		snprintf(buf, len, "%.0fs", s);
}

static uint64_t done_count(const struct sweep_tally *t)
{
	uint64_t n = 0;
	int i;

	for (i = 0; i < SWEEP_OUTCOMES; i++)
		n += t->n[i];
	return n;
}

/* The live line: done/total, rate, ETA, the outcomes so far. */
static void draw(struct pool *p, int force)
{
	const struct sweep_tally *t = p->t;
	double el = clock_mono_s() - p->t0, rate;
	uint64_t done = done_count(t);
	char eta[32];

	if (!p->c->o->progress || (!force && clock_mono_s() - p->last_draw < REDRAW_S))
		return;
	p->last_draw = clock_mono_s();
	rate = el > 0 ? (double)done / el : 0;
	eta_text(rate > 0 ? (double)(p->count - done) / rate : -1, eta,
		 sizeof(eta));
	fprintf(stderr, "\r\033[Ksweep %s: %llu/%llu points, %.1f/s, ETA %s "
		"(%llu ran, %llu invalid, %llu failed, %llu resumed)",
		p->c->sw->name, (unsigned long long)done,
		(unsigned long long)p->count, rate, eta,
		(unsigned long long)t->n[SWEEP_RAN],
		(unsigned long long)t->n[SWEEP_INVALID],
		(unsigned long long)t->n[SWEEP_FAILED],
		(unsigned long long)t->n[SWEEP_RESUMED]);
	fflush(stderr);
	p->drawn = 1;
}

static void record(struct pool *p, const struct rec *r)
{
	if (r->k >= p->count || r->outcome >= SWEEP_OUTCOMES)
		return;		/* cannot happen: we wrote it */
	p->outcome[r->k] = (unsigned char)r->outcome;
	memcpy(p->hash[r->k], r->hash, sizeof(r->hash));
	p->t->n[r->outcome]++;
	draw(p, 0);
}

/* ---- workers -------------------------------------------------------- */

/* Take points until none is left, handing each outcome to emit. */
static void work(struct pool *p, atomic_uint_fast64_t *next,
		 void (*emit)(void *ctx, const struct rec *r), void *ctx,
		 struct diag *d)
{
	struct rec r;
	uint64_t k;

	while (!stop_sig && (k = atomic_fetch_add(next, 1)) < p->count) {
		memset(&r, 0, sizeof(r));
		r.k = k;
		r.outcome = sweep_point_run(p->c, p->idx[k], r.hash, d);
		emit(ctx, &r);	/* stops held since the point's store */
		sweep_free_stops();
	}
}

static void emit_local(void *ctx, const struct rec *r)
{
	record(ctx, r);
}

static void emit_pipe(void *ctx, const struct rec *r)
{
	int fd = *(int *)ctx;
	ssize_t n;

	do
		n = write(fd, r, sizeof(*r));
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(*r))
		_exit(3);	/* the parent is gone */
}

/* A forked worker: its own connection, then work; never returns. */
static void worker(struct pool *p, atomic_uint_fast64_t *next, int fd,
		   pid_t parent)
{
	struct diag d;

	if (proc_die_with_parent(parent) != 0)
		_exit(3);	/* the parent died before the call */
	signal(SIGPIPE, SIG_DFL);
	/* A worker stopped while it simulates loses that point only (its
	 * transaction is all or nothing): it dies at once, as before the
	 * parent caught the signals; stopped while it stores, it dies
	 * after reporting the point (sweep_hold_stops). A signal the sweep was started
	 * ignoring (nohup, a script's background job) stays ignored here
	 * as in the parent (catch_stops), or a group signal would kill the
	 * workers of a sweep that goes on. */
	worker_stops();
	diag_init(&d, stderr);
	p->c->st = store_open(p->c->o->db, &d);
	if (!p->c->st)
		_exit(1);
	work(p, next, emit_pipe, &fd, &d);
	store_close(p->c->st);
	_exit(0);
}

/* Read records until every worker closed its end. On a stop signal,
 * pass it on to the workers (SIGTERM or kill's reaches this process
 * only) and read on until they are gone. */
static void collect(struct pool *p, int fd, const pid_t *pid, int started)
{
	unsigned char buf[sizeof(struct rec) * 64];
	size_t have = 0, off;
	struct pollfd pfd = { fd, POLLIN, 0 };
	ssize_t n;
	int i, passed = 0, rc;

	for (;;) {
		if (stop_sig && !passed) {
			for (i = 0; i < started; i++)
				kill(pid[i], SIGTERM);
			passed = 1;
		}
		rc = poll(&pfd, 1, (int)(REDRAW_S * 1000));
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc == 0) {
			draw(p, 1);
			continue;
		}
		n = read(fd, buf + have, sizeof(buf) - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		have += (size_t)n;
		for (off = 0; off + sizeof(struct rec) <= have;
		     off += sizeof(struct rec)) {
			struct rec r;

			memcpy(&r, buf + off, sizeof(r));
			record(p, &r);
		}
		memmove(buf, buf + off, have - off);
		have -= off;
	}
}

/* Fork the workers, collect, reap. 0, or -1 when a worker could not
 * start or died (reported). */
static int run_pool(struct pool *p, int jobs, struct diag *d)
{
	atomic_uint_fast64_t *next;
	pid_t *pid, parent = getpid();
	int fds[2], i, started = 0, rc = 0, status;

	next = mmap(NULL, sizeof(*next), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid = mem_calloc((size_t)jobs, sizeof(*pid));
	if (next == MAP_FAILED || !pid || pipe(fds) != 0) {
		diag_error(d, NULL, 0, 0, "cannot start the sweep's workers: %s",
			   strerror(errno));
		if (next != MAP_FAILED)
			munmap(next, sizeof(*next));
		mem_free(pid);
		return -1;
	}
	atomic_init(next, 0);
	fflush(NULL);	/* nothing buffered may be written twice */
	for (i = 0; i < jobs; i++) {
		pid[i] = fork();
		if (pid[i] == 0) {
			close(fds[0]);
			worker(p, next, fds[1], parent);
		}
		if (pid[i] < 0) {
			diag_error(d, NULL, 0, 0, "cannot start worker %d: %s",
				   i + 1, strerror(errno));
			rc = -1;
			break;
		}
		started++;
	}
	close(fds[1]);
	collect(p, fds[0], pid, started);
	close(fds[0]);
	for (i = 0; i < started; i++) {
		while (waitpid(pid[i], &status, 0) < 0 && errno == EINTR)
			;
		if (stop_sig && WIFSIGNALED(status))
			continue;	/* stopped: said once, by sweep_run */
		if (WIFSIGNALED(status) || WEXITSTATUS(status) != 0) {
			if (p->drawn)
				fputc('\n', stderr), p->drawn = 0;
			diag_error(d, NULL, 0, 0, "sweep worker %d %s %d; the "
				   "points it had finished are stored: run the "
				   "sweep again to finish it", i + 1,
				   WIFSIGNALED(status) ? "was killed by signal" :
				   "exited with status", WIFSIGNALED(status) ?
				   WTERMSIG(status) : WEXITSTATUS(status));
			rc = -1;
		}
	}
	munmap(next, sizeof(*next));
	mem_free(pid);
	return rc;
}

/* -j 1: in this process, with its own connection. */
static int run_here(struct pool *p, struct diag *d)
{
	atomic_uint_fast64_t next;

	atomic_init(&next, 0);
	p->c->st = store_open(p->c->o->db, d);
	if (!p->c->st)
		return -1;
	work(p, &next, emit_local, p, d);
	store_close(p->c->st);
	p->c->st = NULL;
	return 0;
}

/* ---- setup ---------------------------------------------------------- */

/* The shard's point indices. 0 or -1 (OOM). */
static int shard_points(struct pool *p, const struct sweep *sw,
			const struct sweep_opts *o)
{
	uint64_t first = o->shard - 1, i;

	p->count = sw->npoints > first ?
		(sw->npoints - first + o->nshards - 1) / o->nshards : 0;
	p->idx = mem_calloc(p->count + 1, sizeof(*p->idx));
	p->outcome = mem_calloc(p->count + 1, 1);
	p->hash = mem_calloc(p->count + 1, sizeof(*p->hash));
	if (!p->idx || !p->outcome || !p->hash)
		return -1;
	for (i = 0; i < p->count; i++) {
		p->idx[i] = first + i * o->nshards;
		p->outcome[i] = SWEEP_OUTCOMES;	/* not reached (yet) */
	}
	return 0;
}

static void pool_release(struct pool *p)
{
	mem_free(p->idx);
	mem_free(p->outcome);
	mem_free(p->hash);
}

/* Resolve the base job once (every point starts from it) and record the
 * sweep in the database. 0; 1 runtime failure; 2 bad input. */
static int prepare(struct sweep_ctx *c, struct arena *a, struct diag *d)
{
	struct config_ctx cx = { a, d, c->o->data_root };
	int rc;

	c->base = config_resolve_node(&cx, &job_schema, c->sw->base);
	if (!c->base)
		return d->oom ? 1 : 2;
	c->st = store_open(c->o->db, d);
	if (!c->st)
		return 1;
	rc = sweep_store_begin(c, d);
	store_close(c->st);
	c->st = NULL;
	return rc == 0 ? 0 : rc == -2 ? 2 : 1;
}

static void totals(const struct pool *p, const struct sweep_opts *o)
{
	const struct sweep_tally *t = p->t;
	int i;

	if (done_count(t) < p->count)	/* stopped: what it got to */
		fprintf(stderr, "sweep %s: %llu of %llu points in %.1f s "
			"(%.1f points/s):", p->c->sw->name,
			(unsigned long long)done_count(t),
			(unsigned long long)p->count, t->seconds,
			t->seconds > 0 ? (double)done_count(t) / t->seconds : 0);
	else
		fprintf(stderr, "sweep %s: %llu points in %.1f s (%.1f "
			"points/s):", p->c->sw->name,
			(unsigned long long)p->count, t->seconds,
			t->seconds > 0 ? (double)done_count(t) / t->seconds : 0);
	for (i = 0; i < SWEEP_OUTCOMES; i++)
		fprintf(stderr, "%s %llu %s", i ? "," : "",
			(unsigned long long)t->n[i], sweep_outcome_names[i]);
	if (o->throwaway)
		fprintf(stderr, "; not stored (--no-store)\n");
	else
		fprintf(stderr, "; stored in %s\n", o->db);
}

int sweep_run(const struct sweep *sw, const struct sweep_opts *o,
	      struct sweep_tally *t, struct diag *d)
{
	struct sweep_ctx c = { sw, o, NULL, 0, NULL };
	struct pool p = { &c, NULL, 0, NULL, NULL, t, 0, 0, 0 };
	struct sigaction old[2];
	struct arena a;
	int rc, jobs = o->jobs;

	memset(t, 0, sizeof(*t));
	arena_init(&a);
	rc = prepare(&c, &a, d);
	if (rc != 0)
		goto out;
	rc = 1;
	if (shard_points(&p, sw, o) != 0) {
		diag_oom(d);
		goto out;
	}
	t->points = p.count;
	p.t0 = clock_mono_s();
	if ((uint64_t)jobs > p.count)
		jobs = p.count ? (int)p.count : 1;
	catch_stops(old);
	rc = jobs == 1 ? run_here(&p, d) : run_pool(&p, jobs, d);
	restore_stops(old);
	t->stopped = stop_sig;
	t->seconds = clock_mono_s() - p.t0;
	if (p.drawn)
		fputc('\n', stderr);
	if (o->out && sweep_summary(&c, p.idx, p.outcome, p.hash, p.count,
				    d) != 0)
		rc = -1;
	totals(&p, o);
	if (t->stopped && o->throwaway)
		fprintf(stderr, "sweep %s: interrupted by %s after %llu of %llu "
			"points; nothing is kept (--no-store)\n", sw->name,
			t->stopped == SIGINT ? "INT" : "TERM",
			(unsigned long long)done_count(t),
			(unsigned long long)p.count);
	else if (t->stopped)
		fprintf(stderr, "sweep %s: interrupted by %s after %llu of %llu "
			"points; every finished point is stored in %s: run the "
			"same command again to resume\n", sw->name,
			t->stopped == SIGINT ? "INT" : "TERM",
			(unsigned long long)done_count(t),
			(unsigned long long)p.count, o->db);
	rc = rc != 0 || t->n[SWEEP_FAILED] || done_count(t) < p.count ? 1 : 0;
out:
	pool_release(&p);
	arena_release(&a);
	return rc;
}
