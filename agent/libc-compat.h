/* SPDX-License-Identifier: MIT */
/*
 * The agent runs inside its target, whose C library may be older than
 * the one the agent was built on: a container's (glibc 2.31 on Debian 11
 * and Ubuntu 20.04, 2.28 on RHEL 8, 2.17 on CentOS 7).  Built against
 * glibc 2.34 or later, each of dlopen, dlsym, dlclose, pthread_create,
 * pthread_sigmask and pthread_once would take the version of it that
 * glibc moved into libc, which an older loader refuses ("version
 * `GLIBC_2.34' not found").  They are bound here to their first
 * versions instead, which every glibc still exports (libc's compat
 * symbols from 2.34, libdl's and libpthread's before, which the agent
 * also names as needed).  The calls glibc exports late (gettid from
 * 2.30, fstat from 2.33) are made as system calls.
 * tests/test_agent_glibc.py loads the agent with Debian 11's glibc and
 * checks that it needs no version past 2.17.
 *
 * Included by the agent's files only (SPYC_AGENT): spyc itself runs
 * where it was built.
 */
#ifndef SPYC_AGENT_LIBC_COMPAT_H
#define SPYC_AGENT_LIBC_COMPAT_H

#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#if defined(SPYC_AGENT) && defined(__GLIBC__)
#if defined(__x86_64__)
#define LIBC_COMPAT_BASE "GLIBC_2.2.5"
#elif defined(__aarch64__)
#define LIBC_COMPAT_BASE "GLIBC_2.17"
#endif
#ifdef LIBC_COMPAT_BASE
#define LIBC_COMPAT_BIND(fn)                                                   \
	__asm__(".symver " #fn "," #fn "@" LIBC_COMPAT_BASE)
LIBC_COMPAT_BIND(dlopen);
LIBC_COMPAT_BIND(dlsym);
LIBC_COMPAT_BIND(dlclose);
LIBC_COMPAT_BIND(pthread_create);
LIBC_COMPAT_BIND(pthread_sigmask);
LIBC_COMPAT_BIND(pthread_once);
#endif
#endif

static inline pid_t compat_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* The kernel's struct stat is the C library's on x86-64 and arm64. */
static inline int compat_fstat(int fd, struct stat *st)
{
	return (int)syscall(SYS_fstat, fd, st);
}

#endif
