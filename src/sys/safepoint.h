/* SPDX-License-Identifier: MIT */
/*
 * Whether a stopped thread may be made to call dlopen: not while it runs
 * (or is called from) the dynamic loader, the allocator, or the other
 * libc functions that hold the locks dlopen takes.
 */
#ifndef SPYC_SAFEPOINT_H
#define SPYC_SAFEPOINT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sys/proc.h"

/* Code a thread must not be in: [start, end). */
struct code_range {
	uint64_t start, end;
	const char *what; /* a function or library name, static */
};

struct safepoint {
	pid_t pid;
	struct code_range *ranges; /* sorted by start */
	size_t nr, alloc;
	void *as; /* libunwind's unw_addr_space_t, or NULL */
};

/*
 * Collect pid's unsafe code from its maps: the dynamic loader and libdl
 * whole, allocator libraries (jemalloc, tcmalloc, mimalloc) whole, and
 * from libc (and an older libpthread) the malloc family, fork,
 * pthread_create, the dl* functions and dl_iterate_phdr.  Returns 0, or
 * -ENOENT if not even the loader could be found (then nothing is safe).
 */
int safepoint_init(struct safepoint *sp, pid_t pid,
		   const struct proc_maps *maps);
void safepoint_release(struct safepoint *sp);

/*
 * Whether thread tid, held stopped by spyc at ip with stack pointer rsp,
 * is at a safe point: NULL if so, else what it is inside (a static
 * string).  Its native stack is unwound (libunwind, through ptrace) and
 * each frame checked; a stack that cannot be unwound is searched
 * instead, conservatively, for any word that is a return address into
 * unsafe code (follows a call instruction), from rsp to the end of its
 * mapping (at most 8 MiB).  Too little room below rsp is unsafe.
 */
const char *safepoint_check(const struct safepoint *sp,
			    const struct proc_maps *maps, pid_t tid,
			    uint64_t ip, uint64_t rsp);

/*
 * Whether code[0..7], the 8 bytes before an address, end with an x86-64
 * call instruction (direct, or indirect through a register or memory),
 * so that the address is a plausible return address.  Pure; for tests.
 */
int follows_call(const unsigned char code[8]);

#endif
