/* SPDX-License-Identifier: MIT */
/* The GIL as one sample sees it: held or not, by whom, where waiters block. */
#include "py/pygil.h"

#include <string.h>

#include "sys/proc.h"
#include "util.h"

/* Bytes of a pthread mutex or condition variable, at most. */
#define GIL_SYNC_SIZE 64

void pygil_read(const struct pyruntime *rt, uint64_t interp,
		struct gil_view *g)
{
	const struct py_offsets *off = rt->off;
	unsigned char buf[64];
	uint64_t gil = 0;
	int32_t locked;
	long span;
	size_t i;

	memset(g, 0, sizeof(*g));
	/*
	 * A free-threaded build has no GIL: its threads run at once.  (Its
	 * struct _gil_runtime_state is there, enabled only while a module
	 * not marked safe for free threading loads, or for good with
	 * PYTHON_GIL=1; spyc does not read it: no thread is said to hold
	 * or wait for a GIL.)
	 */
	if (rt->free_threaded)
		return;
	if (rt->gil_locked && rt->gil_last_holder) {
		/* 3.6: static variables in ceval_gil.h */
		if (proc_read(rt->pid, rt->gil_locked, &locked,
			      sizeof(locked)) ||
		    proc_read(rt->pid, rt->gil_last_holder, &g->holder,
			      sizeof(g->holder)))
			return;
		g->locked = locked > 0;
		/*
		 * A waiter blocks on gil_mutex or gil_cond; a thread asked to
		 * drop the GIL waits on switch_cond until another takes it.
		 * The four sit side by side: one span covers them.
		 */
		for (i = 0; i < ARRAY_SIZE(rt->gil_sync); i++) {
			uint64_t a = rt->gil_sync[i];

			if (!a)
				continue;
			if (!g->lo || a < g->lo)
				g->lo = a;
			if (a + GIL_SYNC_SIZE > g->hi)
				g->hi = a + GIL_SYNC_SIZE;
		}
		/* Not side by side after all: no guess. */
		if (g->hi - g->lo > 4 * GIL_SYNC_SIZE)
			g->lo = g->hi = 0;
		return;
	}
	if (off->gil_locked == OFF_NONE || off->gil_last_holder == OFF_NONE)
		return;
	if (off->runtime_gil != OFF_NONE && rt->runtime)
		gil = rt->runtime + (uint64_t)off->runtime_gil;
	else if (off->interp_gil_ptr != OFF_NONE)
		proc_read(rt->pid, interp + (uint64_t)off->interp_gil_ptr, &gil,
			  sizeof(gil));
	else if (off->interp_gil != OFF_NONE)
		gil = interp + (uint64_t)off->interp_gil;
	span = (off->gil_locked > off->gil_last_holder ? off->gil_locked
						       : off->gil_last_holder) +
	       8;
	if (!gil || span > (long)sizeof(buf) ||
	    proc_read(rt->pid, gil, buf, (size_t)span))
		return;
	memcpy(&locked, buf + off->gil_locked, sizeof(locked));
	g->locked = locked > 0;
	g->holder = load_u64(buf, off->gil_last_holder);
	g->lo = gil;
	g->hi =
	    gil + (uint64_t)(off->gil_size != OFF_NONE ? off->gil_size : span);
}
