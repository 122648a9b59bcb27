/*
 * maxmin.h - max-min fair sharing of capacities among variables, solved
 * by progressive filling, incrementally by connected component.
 *
 * A constraint is a capacity (a link direction, B/s). A variable is a rate
 * (a flow, or a group of flows that must progress together) that uses
 * constraints with coefficients: x_j puts a_ij * x_j on constraint i.
 * The solution is the max-min fair allocation: no rate can grow without
 * shrinking one that is no larger (the mathematics is in maxmin.c).
 *
 * Changes (a variable added or removed) mark their constraints dirty;
 * mm_solve() re-solves only the connected components that contain dirty
 * constraints and reports every variable whose rate changed.
 *
 * Depends on mem.h only. Knows nothing of links, flows or time.
 */
#ifndef LLMSIM_NETWORK_MAXMIN_H
#define LLMSIM_NETWORK_MAXMIN_H

#include <stdint.h>

struct mm;

typedef uint32_t mm_id;
#define MM_NONE UINT32_MAX

/* Called by mm_solve() for each live variable whose rate changed, before
 * the new rate is visible through mm_rate() (so old_Bps can be used to
 * account for progress made at the old rate). */
typedef void (*mm_change_fn)(mm_id var, double old_Bps, double new_Bps,
			     void *data, void *arg);

/* An empty system; NULL when out of memory. */
struct mm *mm_new(void);
void mm_free(struct mm *m);

/* A constraint of capacity cap_Bps > 0. MM_NONE when out of memory. */
mm_id mm_cons_add(struct mm *m, double cap_Bps);

/* Room for n constraints in all (ids and results as without: only the
 * growth of the arrays, one at a time doubling, is skipped). 0, or -1
 * out of memory. */
int mm_cons_reserve(struct mm *m, uint32_t n);

/*
 * A variable using cons[i] with coefficient coef[i] > 0 for i < n (a
 * constraint may appear once), with rate at most bound_Bps (0 = no bound;
 * n == 0 needs a bound). data is handed back to the change callback.
 * Its rate is 0 until the next mm_solve(). MM_NONE when out of memory.
 */
mm_id mm_var_add(struct mm *m, const mm_id *cons, const double *coef,
		 uint32_t n, double bound_Bps, void *data);

/* Remove a variable; its constraints become dirty. */
void mm_var_remove(struct mm *m, mm_id var);

/*
 * Re-solve every component with a dirty constraint or a new variable;
 * call fn for each variable whose rate changed. Returns the number of
 * variables re-solved (the work done), or -1 when out of memory.
 */
long mm_solve(struct mm *m, mm_change_fn fn, void *arg);

/* The variable's current rate (B/s). */
double mm_rate(const struct mm *m, mm_id var);

/* Set a new variable's rate before it is first solved: the rate it had
 * where it was timed apart (a replayed collective becoming flows), which
 * must be part of a max-min fair allocation of links it had alone (the
 * variables preset together). A re-solve compares with it and reports a
 * change only if its component gives another; a batch settled without a
 * re-solve keeps it. */
void mm_preset_rate(struct mm *m, mm_id var, double rate_Bps);

/*
 * A guest: a variable kept outside the system (flow.c: a flow on the
 * links of a replayed collective, whose own variables are not in it)
 * for as long as these say the system with it added would give the
 * same rates as without. For each of its n constraints i the caller
 * gives what mm_local() would read there had the others been added
 * before it, in list order: cap[i] (C_i), left[i] (C_i minus the others'
 * a_k r_k, subtracted one by one in list order), cnt[i] (how many) and
 * maxr[i] (the fastest of them; 0 for none).
 *
 * mm_guest_settle(): whether a solve now would settle the guest as
 * mm_local() settles a new variable (the batch has no other new
 * variable and needs no re-solve; *walk and *added carry mm_local()'s
 * counts from one guest to the next of the same batch, 0 for the
 * first), and its rate then in *rate_Bps (the same bits). 0 when the
 * system must have it as a variable instead.
 *
 * mm_guest_leave(): whether its removal now, at rate_Bps, would leave
 * every other rate as it is without a re-solve (mm_local_remove()'s
 * test, and no re-solve pending).
 */
int mm_guest_settle(const struct mm *m, uint32_t n, const double *coef,
		    const double *cap, const double *left,
		    const uint32_t *cnt, const double *maxr, double bound_Bps,
		    uint32_t *walk, uint32_t *added, double *rate_Bps);
int mm_guest_leave(const struct mm *m, uint32_t n, const double *coef,
		   const double *cap, const double *left,
		   const uint32_t *cnt, const double *maxr, double rate_Bps);

/* Whether mm_solve() sets aside constraints that cannot bind (on by
 * default; off solves with every constraint in the heap, for tests: the
 * rates are the same bit for bit), and how often a solve had to put them
 * back. */
void mm_set_prune(struct mm *m, int on);
uint64_t mm_spills(const struct mm *m);

/* Whether mm_solve() settles a small batch of changes without a
 * re-solve when it provably moves no other rate (on by default; off for
 * tests: the rates are the re-solve's to rounding), and how many solves
 * it settled so. */
void mm_set_local(struct mm *m, int on);
uint64_t mm_locals(const struct mm *m);

/* Whether mm_var_remove() leaves the unlinking of variables removed
 * while the batch needs a re-solve to the next mm_var_add() or
 * mm_solve(), emptying at once a constraint all of whose variables go
 * (on by default; off for tests: every list and rate is the same), and
 * how many constraints it emptied so. */
void mm_set_batch(struct mm *m, int on);
uint64_t mm_cleared(const struct mm *m);

/* Whether no live variable uses any of c[0..n-1] (a dense scan). */
int mm_cons_idle(const struct mm *m, const mm_id *c, uint32_t n);

/* The live variables of every constraint, indexed by its id (the dense
 * array mm_cons_idle() scans; valid until the next mm_cons_add). */
const uint32_t *mm_cons_busy(const struct mm *m);

/* Live variables using constraint c. */
uint32_t mm_cons_vars(const struct mm *m, mm_id c);

/* Live variables. */
uint32_t mm_vars(const struct mm *m);

#endif
