/*
 * plan_full.c - the planner's full tier: the chosen layouts simulated
 * with step_run_time (the event engine on the fabric model, as `llmsim
 * run` would, less the per-collective table, busy and memory stats a
 * plan does not read: ~3.5 % of a DeepSeek-V3 2048 run), in worker
 * processes when there are CPUs for them.
 *
 * Each worker shares one fabric model per node count across its runs
 * (net_attach: the topology and the collectives' plans are built once);
 * a run's result does not depend on what ran before it on the same
 * fabric model (the caches are pure), so the results are the same for
 * any number of workers. Workers are forked, each takes the next layout
 * not yet taken (a counter in shared memory: the layouts' run times
 * differ ~3x, DeepSeek-V3 2048's best 20 from 0.26 to 0.75 s, so fixed
 * strides i, i + W, ... left one of 2 workers 1 s behind the other),
 * and send back fixed-size records over a pipe; the parent waits for all
 * of them and fails if any failed, stopping the others as soon as one
 * ends without finishing (killed, or failed).
 *
 * Layouts whose step programs are the same are simulated once: ZeRO 1
 * and 2 differ only in memory (train_dp.c builds both alike: gradients
 * reduce-scattered, parameters all-gathered, the optimizer stepping the
 * shard; ZeRO 2 frees the gradients outside the shard, which
 * footprint.c counts), so a layout with ZeRO 2 takes the run of the same
 * layout with ZeRO 1 (tests/unit/plan: plan.zero1_and_zero2_step_alike
 * checks that the runs agree). Not where the optimizer step zeroes the
 * gradient buffer and ZeRO 2 shards it (framework zero_grad without
 * grad_buffer_full): zero_grad then writes the shard only.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/diag.h"
#include "base/mem.h"
#include "base/proc.h"
#include "network/net.h"
#include "run/step.h"
#include "plan_impl.h"

/* The fabric models the full tier shares across its runs, one per node
 * count: the topology and the collectives' plans are built once
 * (net_attach binds one to each run's engine). */
struct fabrics {
	struct system_spec sys[64];
	struct net *net[64];
	int n;
};

static int attach_shared(void *ctx, struct sim *sim)
{
	return net_attach(ctx, sim);
}

static const char *shared_failed(void *ctx)
{
	return net_failed(ctx) ? net_error(ctx) : NULL;
}

/* The shared fabric of node count `nodes` (its system in *sys), built on
 * first use; NULL after reporting to d. A node count past the table's
 * size gets none (NULL, nothing reported): the run builds its own. */
static struct net *fabric_of(struct fabrics *fb, const struct job_spec *j,
			     int64_t nodes, struct diag *d, int *err)
{
	int i;

	*err = 0;
	for (i = 0; i < fb->n; i++)
		if (fb->sys[i].nodes == nodes)
			return fb->net[i];
	if (fb->n == (int)(sizeof(fb->net) / sizeof(fb->net[0])))
		return NULL;
	fb->sys[fb->n] = *j->system;
	fb->sys[fb->n].nodes = nodes;
	fb->net[fb->n] = net_new(&fb->sys[fb->n], NULL, d);
	if (!fb->net[fb->n]) {
		*err = 1;
		return NULL;
	}
	return fb->net[fb->n++];
}

static void fabrics_release(struct fabrics *fb)
{
	int i;

	for (i = 0; i < fb->n; i++)
		net_free(fb->net[i]);
	fb->n = 0;
}

/* Simulate c in full and take the run's numbers. */
static int run_full(const struct job_spec *j, const struct plan_opts *o,
		    struct fabrics *fb, struct plan_cand *c, struct diag *d)
{
	struct system_spec sys;
	struct job_spec jj;
	struct step_result r;
	struct step_comm comm = { &net_comm_ops, NULL, attach_shared,
				  shared_failed };
	int rc, err;
	char *msg = NULL;
	size_t len = 0;
	FILE *f;
	struct diag ld;

	plan_job_for(j, &c->lay, &sys, &jj);
	comm.ctx = fabric_of(fb, j, c->lay.nodes, d, &err);
	if (err)
		return -1;
	/* the run's own diagnostics, kept: a layout the step program
	 * cannot simulate is warned about, not the end of the plan */
	if (!(f = open_memstream(&msg, &len))) {
		diag_oom(d);
		return -1;
	}
	diag_init(&ld, f);
	rc = step_run_time(&jj, o->full_fidelity, comm.ctx ? &comm : NULL,
			   &r, &ld);
	fclose(f);
	if (rc == 0) {
		c->full = 1;
		c->step_s = r.step_s;
		memcpy(c->part_s, r.part_s, sizeof(c->part_s));
		c->tokens_per_s = r.tokens_per_s;
		c->mfu = r.mfu;
		c->tflops_per_gpu = r.tflops_per_gpu;
	}
	step_result_release(&r);
	if (rc != 0 && ld.oom == 0) {
		char lay[160];

		plan_layout_str(&c->lay, lay, sizeof(lay));
		while (len > 0 && msg[len - 1] == '\n')
			msg[--len] = 0;
		diag_warn(d, NULL, 0, 0, "plan: the full simulation of %s on "
			  "%lld nodes failed (%s); it keeps its analytical "
			  "estimate and ranks last", lay, (long long)c->lay.nodes,
			  msg ? msg : "");
		c->full_failed = 1;
		rc = 0;
	} else if (rc != 0) {
		diag_oom(d);
	}
	free(msg);
	return rc == 0 ? 0 : -1;
}

/* What a worker sends back for one layout. */
struct rec {
	uint64_t idx;			/* index into c[] */
	double step_s;
	double part_s[EXEC_PART_COUNT];
	double tokens_per_s, mfu, tflops_per_gpu;
	int64_t failed;			/* the full run failed (full_failed) */
};

/* Read one record; 1, 0 at the end, -1 on error. */
static int read_rec(int fd, struct rec *r)
{
	char *p = (char *)r;
	size_t n = sizeof(*r);

	while (n > 0) {
		ssize_t k = read(fd, p, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -1;
		if (k == 0)
			return n == sizeof(*r) ? 0 : -1;
		p += k;
		n -= (size_t)k;
	}
	return 1;
}

/* The index of a worker's next layout: the shared counter's next, or
 * without one (no shared memory) w, w + W, ... */
static size_t next_layout(atomic_size_t *next, size_t prev, size_t w,
			  size_t nw, int first)
{
	if (next)
		return atomic_fetch_add(next, 1);
	return first ? w : prev + nw;
}

/* A worker: the layouts it takes (next_layout) into fd. Never returns. */
static void worker(const struct job_spec *j, const struct plan_opts *o,
		   struct plan_cand *c, size_t n, size_t w, size_t nw,
		   atomic_size_t *next, int fd, struct diag *d)
{
	struct fabrics fb = { .n = 0 };
	size_t i;
	int status = 0;

	for (i = next_layout(next, 0, w, nw, 1); i < n && status == 0;
	     i = next_layout(next, i, w, nw, 0)) {
		struct rec r = { .idx = i };

		if (run_full(j, o, &fb, &c[i], d) != 0) {
			status = 1;
			break;
		}
		r.failed = c[i].full_failed;
		r.step_s = c[i].step_s;
		memcpy(r.part_s, c[i].part_s, sizeof(r.part_s));
		r.tokens_per_s = c[i].tokens_per_s;
		r.mfu = c[i].mfu;
		r.tflops_per_gpu = c[i].tflops_per_gpu;
		if (proc_write_all(fd, &r, sizeof(r)) != 0)
			status = 1;
	}
	fabrics_release(&fb);
	_exit(status);
}

static void apply(struct plan_cand *c, const struct rec *r)
{
	if (r->failed) {
		c->full_failed = 1;
		return;
	}
	c->full = 1;
	c->step_s = r->step_s;
	memcpy(c->part_s, r->part_s, sizeof(c->part_s));
	c->tokens_per_s = r->tokens_per_s;
	c->mfu = r->mfu;
	c->tflops_per_gpu = r->tflops_per_gpu;
}

/* Progress on a long full tier: a line at most every PROGRESS_S once it
 * has run that long. */
#define PROGRESS_S 10.0

struct progress {
	double t0, last;	/* s, monotonic */
};

static void progress(struct progress *p, size_t done, size_t n,
		     struct diag *d)
{
	double t = clock_mono_s();

	if (t - p->t0 < PROGRESS_S || t - p->last < PROGRESS_S || done == n)
		return;
	p->last = t;
	diag_progress(d, "plan: %zu of %zu layouts simulated in full (%.0f s)",
		      done, n, t - p->t0);
}

static int in_process(const struct job_spec *j, const struct plan_opts *o,
		      struct plan_cand *c, size_t n, struct diag *d)
{
	struct fabrics fb = { .n = 0 };
	struct progress pr = { clock_mono_s(), 0 };
	size_t i;
	int rc = 0;

	for (i = 0; i < n && rc == 0; i++) {
		rc = run_full(j, o, &fb, &c[i], d);
		progress(&pr, i + 1, n, d);
	}
	fabrics_release(&fb);
	return rc;
}

static size_t workers(const struct plan_opts *o, size_t n)
{
	long cpus = o->jobs > 0 ? o->jobs : sysconf(_SC_NPROCESSORS_ONLN);

	if (cpus < 1)
		cpus = 1;
	return (size_t)cpus < n ? (size_t)cpus : n;
}

/* The workers of one full tier. */
struct crew {
	pid_t pid[256];
	int status[256];
	char reaped[256], stopped[256];
	size_t n;
};

/* Reap the workers that have ended, without waiting; 1 when one of them
 * ended other than by finishing its layouts (a signal, or a failure it
 * reported): the tier has failed. */
static int crew_reap(struct crew *cw)
{
	int bad = 0;
	size_t w;

	for (w = 0; w < cw->n; w++) {
		if (cw->reaped[w] ||
		    waitpid(cw->pid[w], &cw->status[w], WNOHANG) != cw->pid[w])
			continue;
		cw->reaped[w] = 1;
		if (!WIFEXITED(cw->status[w]) || WEXITSTATUS(cw->status[w]) != 0)
			bad = 1;
	}
	return bad;
}

/* End the workers still running: their records would not change the
 * outcome (the tier has failed), and a plan on thousands of layouts
 * should not make its user wait minutes to hear it. */
static size_t crew_stop(struct crew *cw)
{
	size_t w, k = 0;

	for (w = 0; w < cw->n; w++)
		if (!cw->reaped[w] && kill(cw->pid[w], SIGTERM) == 0) {
			cw->stopped[w] = 1;
			k++;
		}
	return k;
}

static int runs(const struct job_spec *j, const struct plan_opts *o,
		struct plan_cand *c, size_t n, struct diag *d)
{
	size_t nw = workers(o, n), w, got = 0, nstopped = 0;
	int fds[2], rc = 0, failed = 0;
	pid_t pid, parent = getpid();
	struct progress pr = { clock_mono_s(), 0 };
	struct crew cw;
	struct rec r;
	atomic_size_t *next;

	memset(&cw, 0, sizeof(cw));
	if (nw > sizeof(cw.pid) / sizeof(cw.pid[0]))
		nw = sizeof(cw.pid) / sizeof(cw.pid[0]);
	if (nw <= 1)
		return in_process(j, o, c, n, d);
	if (pipe(fds) != 0) {
		diag_error(d, NULL, 0, 0, "plan: cannot make a pipe for the "
			   "full runs: %s", strerror(errno));
		return -1;
	}
	next = mmap(NULL, sizeof(*next), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (next == MAP_FAILED)
		next = NULL;	/* fixed strides: the same results */
	else
		atomic_init(next, 0);
	fflush(NULL);	/* nothing buffered is written twice */
	for (w = 0; w < nw; w++) {
		pid = fork();
		if (pid == 0) {
			/* a SIGTERM or kill -9 to plan ends its workers too */
			if (proc_die_with_parent(parent) != 0)
				_exit(1);
			close(fds[0]);
			mem_after_fork();	/* not the parent's free heap */
			worker(j, o, c, n, w, nw, next, fds[1], d);
		}
		if (pid < 0) {
			diag_error(d, NULL, 0, 0, "plan: cannot start a worker: %s",
				   strerror(errno));
			rc = -1;
			break;
		}
		cw.pid[cw.n++] = pid;
	}
	close(fds[1]);
	if (rc != 0)
		nstopped = crew_stop(&cw);
	for (;;) {
		struct pollfd pf = { .fd = fds[0], .events = POLLIN };
		int k = poll(&pf, 1, 250);	/* ms: how soon a death is seen */

		if (k < 0 && errno != EINTR)
			break;
		if (k > 0) {
			int got_r = read_rec(fds[0], &r);

			if (got_r != 1)
				break;	/* every worker has ended */
			if (r.idx < n) {
				apply(&c[r.idx], &r);
				progress(&pr, ++got, n, d);
			}
		}
		if (!failed && crew_reap(&cw)) {
			failed = 1;
			nstopped += crew_stop(&cw);
		}
	}
	close(fds[0]);
	for (w = 0; w < cw.n; w++) {	/* only ours: the caller may have others */
		int *st = &cw.status[w];
		pid_t got_pid = cw.pid[w];	/* reaped already: its status */

		while (!cw.reaped[w] &&
		       (got_pid = waitpid(cw.pid[w], st, 0)) < 0 && errno == EINTR)
			;
		cw.reaped[w] = 1;
		if (got_pid < 0) {	/* no status to read (ECHILD) */
			rc = -1;
			continue;
		}
		if (!WIFEXITED(*st) || WEXITSTATUS(*st) != 0)
			rc = -1;
		/* a worker that failed said why; one killed (kill, the OOM
		 * killer) could not; the ones stopped here were told to */
		if (WIFSIGNALED(*st) && !cw.stopped[w])
			diag_error(d, NULL, 0, 0, "plan: a full-run worker (pid "
				   "%ld) was killed by signal %d (%s)",
				   (long)cw.pid[w], WTERMSIG(*st),
				   strsignal(WTERMSIG(*st)));
	}
	if (next)
		munmap(next, sizeof(*next));
	if (nstopped > 0)
		diag_error(d, NULL, 0, 0, "plan: stopped the other %zu "
			   "full-run worker%s: the full tier cannot complete",
			   nstopped, nstopped == 1 ? "" : "s");
	if (got != n) {
		diag_error(d, NULL, 0, 0, "plan: %zu of %zu full runs came back",
			   got, n);
		rc = -1;
	}
	return rc;
}

/* The layout whose step program l's is: ZeRO 2 as ZeRO 1 (see the top
 * of the file). */
static struct plan_layout step_class(const struct job_spec *j,
				     const struct plan_layout *l)
{
	const struct framework_spec *fw = j->framework;
	struct plan_layout k = *l;

	if (k.zero == 2 &&
	    (!fw->optimizer_step.zero_grad || fw->grad_buffer_full))
		k.zero = 1;
	return k;
}

static int same_layout(const struct plan_layout *a, const struct plan_layout *b)
{
	return a->nodes == b->nodes && a->tp == b->tp && a->cp == b->cp &&
	       a->pp == b->pp && a->vpp == b->vpp && a->ep == b->ep &&
	       a->etp == b->etp && a->dp == b->dp && a->mbs == b->mbs &&
	       a->recompute == b->recompute && a->zero == b->zero &&
	       a->sp == b->sp && a->schedule == b->schedule &&
	       a->tp_overlap == b->tp_overlap;
}

int full_runs(const struct job_spec *j, const struct plan_opts *o,
	      struct plan_cand *c, size_t n, struct diag *d)
{
	struct plan_cand *u;
	size_t *rep, nu = 0, i, k;
	int rc;

	if (n == 0)
		return 0;
	u = mem_alloc(n * sizeof(*u));
	rep = mem_alloc(n * sizeof(*rep));
	if (!u || !rep) {
		mem_free(u);
		mem_free(rep);
		diag_oom(d);
		return -1;
	}
	for (i = 0; i < n; i++) {
		struct plan_layout ki = step_class(j, &c[i].lay);

		for (k = 0; k < nu; k++) {
			struct plan_layout kk = step_class(j, &u[k].lay);

			if (same_layout(&ki, &kk))
				break;
		}
		if (k == nu)	/* the first of its class runs as itself */
			u[nu++] = c[i];
		rep[i] = k;
	}
	rc = runs(j, o, u, nu, d);
	for (i = 0; rc == 0 && i < n; i++) {
		const struct plan_cand *s = &u[rep[i]];

		c[i].full = s->full;
		c[i].step_s = s->step_s;
		memcpy(c[i].part_s, s->part_s, sizeof(c[i].part_s));
		c[i].tokens_per_s = s->tokens_per_s;
		c[i].mfu = s->mfu;
		c[i].tflops_per_gpu = s->tflops_per_gpu;
	}
	mem_free(u);
	mem_free(rep);
	return rc;
}
