/* SPDX-License-Identifier: MIT */
/*
 * A program that loads spyc's GPU agent as a target would, to run under
 * another C library than the one it was built on (tests/test_agent_glibc.py
 * runs it with Debian 11's glibc 2.31 through that glibc's own loader).
 *
 * Usage: spyc-agent-load AGENT CHANNEL
 * Prints "glibc V", the C library it runs with; loads AGENT with every
 * symbol bound at once (RTLD_NOW), calls its spyc_agent_attach(CHANNEL)
 * and prints "attach N", N what it returned (a negative errno for a
 * channel that cannot be opened).  Exits 1 with the loader's error when
 * AGENT cannot be loaded.
 *
 * It binds the C library calls it makes to their first versions, as the
 * agent does (agent/libc-compat.h), and starts itself (x86-64 only):
 * the start files of a glibc from 2.34 call __libc_start_main at the
 * version that glibc added, which an older one does not have.
 */
#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../agent/libc-compat.h"

#ifdef LIBC_COMPAT_BASE
LIBC_COMPAT_BIND(dlerror);
LIBC_COMPAT_BIND(__libc_start_main);
#endif

int main(int argc, char **argv);

int main(int argc, char **argv)
{
	int (*attach)(const char *);
	void *h, *f;

	if (argc != 3) {
		fprintf(stderr, "usage: spyc-agent-load AGENT CHANNEL\n");
		return 2;
	}
	printf("glibc %s\n", gnu_get_libc_version());
	fflush(stdout);
	h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "spyc-agent-load: %s\n", dlerror());
		return 1;
	}
	f = dlsym(h, "spyc_agent_attach");
	if (!f) {
		fprintf(stderr, "spyc-agent-load: %s\n", dlerror());
		return 1;
	}
	memcpy(&attach, &f, sizeof(f));
	printf("attach %d\n", attach(argv[2]));
	fflush(stdout);
	return 0;
}

#if defined(__x86_64__) && defined(LIBC_COMPAT_BASE)
/*
 * The System V x86-64 entry: argc at the stack pointer, argv above it,
 * rdx the loader's finalizer; __libc_start_main(main, argc, argv, init,
 * fini, rtld_fini, stack_end), no init or fini of our own.
 */
__asm__(".text\n"
	".globl _start\n"
	".type _start,@function\n"
	"_start:\n"
	"	xor %ebp, %ebp\n"
	"	mov %rdx, %r9\n"
	"	pop %rsi\n"
	"	mov %rsp, %rdx\n"
	"	and $-16, %rsp\n"
	"	push %rax\n"
	"	push %rsp\n"
	"	xor %r8d, %r8d\n"
	"	xor %ecx, %ecx\n"
	"	lea main(%rip), %rdi\n"
	"	call *__libc_start_main@GOTPCREL(%rip)\n"
	"	hlt\n");
#endif
