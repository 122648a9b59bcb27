/*
 * proc.c - workers that end with their parent (proc.h).
 */
#include "proc.h"

#include <signal.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

int proc_die_with_parent(pid_t parent)
{
#ifdef __linux__
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
	/* A parent that ended between fork and prctl made init (or a
	 * subreaper) the parent, and no death signal will come. */
	return getppid() == parent ? 0 : -1;
}
