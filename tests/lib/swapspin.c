/* SPDX-License-Identifier: MIT */
/*
 * A library replaced on disk under a running target, as an upgrade (pip,
 * apt) replaces one: tests/test_native.py has a target load this build,
 * renames swapspin2.so (this source laid out otherwise, its innermost
 * function named otherwise and moved) over its path, and wants --native
 * to name and unwind the target's frames from the file that is mapped,
 * not from the one now at its path.  The innermost function is static:
 * only the whole file (its symbol table, its DWARF) names it.
 */
static volatile int stop;

#ifdef SWAPSPIN_SECOND
#define SWAP_INNER spyc_swap_inner_second
#define SWAP_ALIGN __attribute__((aligned(65536)))
#else
#define SWAP_INNER spyc_swap_inner_first
#define SWAP_ALIGN
#endif

static void __attribute__((noinline, noclone)) SWAP_ALIGN
SWAP_INNER(volatile unsigned long *n)
{
	while (!stop)
		(*n)++;
}

__attribute__((visibility("default"))) void spyc_swap_spin(void);

/* Spins in SWAP_INNER, called from here (no tail call). */
void spyc_swap_spin(void)
{
	volatile unsigned long n = 0;

	SWAP_INNER(&n);
	__asm__ volatile("" ::: "memory");
}
