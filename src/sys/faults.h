/* SPDX-License-Identifier: MIT */
/*
 * Fault injection for the reliability tests (make FAULTS=1 only): remote
 * reads that fail, return random bytes or stale data, and ptrace calls
 * that fail, at the rates SPYC_FAULTS sets.  In a normal build this
 * header defines nothing and the calls are libc's own.
 */
#ifndef SPYC_FAULTS_H
#define SPYC_FAULTS_H

#ifdef SPYC_FAULTS

/*
 * Declared before the macros below rename the calls, so that the system
 * headers' own prototypes are not renamed: include this header last.
 */
#include <stdint.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/uio.h>

/*
 * SPYC_FAULTS is a comma-separated list of NAME=VALUE:
 *   read=P     a process_vm_readv call fails (EFAULT) or reads short
 *   garbage=P  a region read whole is overwritten with random bytes, or
 *              has a few of its bits flipped
 *   stale=P    a region read whole gets the bytes an earlier read of the
 *              same address and length returned (a small cache keeps them)
 *   ptrace=P   a ptrace call that stops or inspects a thread (SEIZE,
 *              INTERRUPT, GETREGS, GETREGSET, PEEK*) fails before it is
 *              made (EPERM for SEIZE, else ESRCH, as when the thread is
 *              gone); calls that give a thread back are never failed
 *   seed=N     the random sequence (default 1)
 *   counts=PATH at exit, write how many of each were injected to PATH
 *              ("read=N garbage=N stale=N ptrace=N")
 * P is a probability from 0 to 1.  An unset or empty SPYC_FAULTS injects
 * nothing; a malformed one ends spyc with one error line and exit 2.
 */

/* process_vm_readv(2), with faults injected as SPYC_FAULTS says. */
ssize_t faults_process_vm_readv(pid_t pid, const struct iovec *local,
				unsigned long liovcnt,
				const struct iovec *remote,
				unsigned long riovcnt, unsigned long flags);

/* ptrace(2), with faults injected as SPYC_FAULTS says. */
long faults_ptrace(int request, pid_t pid, void *addr, void *data);

#define process_vm_readv faults_process_vm_readv
#define ptrace(request, pid, addr, data)                                       \
	faults_ptrace((request), (pid), (void *)(uintptr_t)(addr),             \
		      (void *)(uintptr_t)(data))

#endif /* SPYC_FAULTS */

#endif
