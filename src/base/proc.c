/*
 * proc.c - workers that end with their parent (proc.h).
 */
#include "proc.h"

#include <errno.h>
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

int proc_write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n > 0) {
		ssize_t k = write(fd, p, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

int proc_read_all(int fd, void *buf, size_t n)
{
	char *p = buf;

	while (n > 0) {
		ssize_t k = read(fd, p, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}
