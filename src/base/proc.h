/*
 * proc.h - forked worker processes that end with their parent (validate's
 * training cases, plan's full runs, sweep's points). Depends on libc only.
 */
#ifndef LLMSIM_BASE_PROC_H
#define LLMSIM_BASE_PROC_H

#include <stddef.h>
#include <sys/types.h>

/* In a worker just forked from parent (getpid() before the fork): ask
 * the kernel to kill this process (SIGKILL) when its parent ends, however
 * it ends (SIGTERM, kill -9: Linux PR_SET_PDEATHSIG; elsewhere nothing,
 * and the worker ends at its next write to the parent's closed pipe).
 * 0, or -1 when the parent already ended before the call: the worker
 * should _exit at once. */
int proc_die_with_parent(pid_t parent);

/* Write all n bytes of buf to fd (a worker's pipe to its parent), again
 * after EINTR and short writes: 0, or -1 on an error. */
int proc_write_all(int fd, const void *buf, size_t n);

/* Read exactly n bytes from fd: 0, or -1 (an error, or the end first). */
int proc_read_all(int fd, void *buf, size_t n);

#endif
