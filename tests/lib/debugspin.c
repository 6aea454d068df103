/* SPDX-License-Identifier: MIT */
/*
 * A library whose innermost function keeps no symbol once the library is
 * stripped (it is static: not in the dynamic symbol table), so that only
 * its separate debug info names it.  tests/test_containers.py strips it
 * into an image and puts that debug info under the image's
 * /usr/lib/debug/.build-id: --native must name spyc_hidden_spin from
 * the container's debug info.
 */
static volatile int stop;

static void __attribute__((noinline, noclone))
spyc_hidden_spin(volatile unsigned long *n)
{
	while (!stop)
		(*n)++;
}

__attribute__((visibility("default"))) void spyc_debug_spin(void);

/* Spins in spyc_hidden_spin, called from here (no tail call). */
void spyc_debug_spin(void)
{
	volatile unsigned long n = 0;

	spyc_hidden_spin(&n);
	__asm__ volatile("" ::: "memory");
}
