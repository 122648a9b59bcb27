/*
 * sweep_stops.c - hold the stop signals while a point is stored
 * (sweep_impl.h sweep_hold_stops / sweep_free_stops): a leaf that both
 * the pool (sweep_run.c) and one point (sweep_exec.c) call, so that
 * neither calls the other back.
 */
#include "sweep_impl.h"

#include <signal.h>

/* The signal mask before sweep_hold_stops (valid while held). */
static sigset_t unheld;
static int held;

/*
 * Hold the stop signals from the moment a point may touch the database
 * until its outcome is on the pipe: a worker (stop signals at SIG_DFL)
 * killed between its commit and its pipe write left a stored point that
 * the summary showed "not run" and the totals did not count (1 in 6
 * interrupts, round 31). A held signal stays pending and is delivered,
 * killing the worker, at sweep_free_stops after the write. Only the
 * simulation itself (seconds) runs with them free, so a stop still ends
 * a worker at once there and loses that point only (its transaction is
 * all or nothing). The mask before the first hold is what a free
 * restores (a signal blocked when the sweep started stays blocked).
 */
void sweep_hold_stops(void)
{
	sigset_t s;

	if (held)
		return;
	sigemptyset(&s);
	sigaddset(&s, SIGINT);
	sigaddset(&s, SIGTERM);
	if (sigprocmask(SIG_BLOCK, &s, &unheld) == 0)
		held = 1;
}

void sweep_free_stops(void)
{
	if (!held)
		return;
	held = 0;
	sigprocmask(SIG_SETMASK, &unheld, NULL);
}
