/* SPDX-License-Identifier: MIT */
/*
 * The calling thread's Python stack, copied in-process at a CUDA launch.
 *
 * This runs inside the target, on the thread that launches, in CUPTI's
 * callback: the thread is in a C call made from its innermost Python
 * frame, so its chain of frames cannot change while it is read, and it
 * is read with plain loads, as faulthandler reads it.  What makes that
 * safe is the layout: spyc hands it over only for the exact CPython it
 * reads from outside, and the thread state comes from the interpreter
 * itself (PyGILState_GetThisThreadState, a thread-local read that takes
 * no lock and needs no GIL).  Each pointer is still checked to be a
 * plausible address, and the walk is bounded, so that a bad layout
 * gives a short or empty stack rather than a wild read.
 */
#include "pystack.h"

#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

#include "libc-compat.h"

/* The lowest and highest addresses a frame can be at (x86-64 user space). */
#define LOWEST_ADDR 0x10000ULL
#define HIGHEST_ADDR 0x800000000000ULL

typedef void *(*get_tstate_fn)(void);

static get_tstate_fn get_tstate;

int pystack_init(void)
{
	void *f = dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");

	memcpy(&get_tstate, &f, sizeof(f));
	return get_tstate ? 0 : -1;
}

/* Whether p can be where a frame or thread state is: aligned, user space. */
static int plausible(uintptr_t p)
{
	return p >= LOWEST_ADDR && p < HIGHEST_ADDR && !(p & 7);
}

static uintptr_t word_at(uintptr_t base, int32_t offset)
{
	uintptr_t v;

	memcpy(&v, (const void *)(base + (uintptr_t)(intptr_t)offset),
	       sizeof(v));
	return v;
}

size_t pystack_copy(const struct gpu_py_layout *l, struct gpu_stack_frame *out,
		    size_t max, int *cut)
{
	uintptr_t tstate, frame, base = 0;
	size_t n = 0, steps = 0;

	*cut = 0;
	if (!get_tstate || l->kind == GPU_PY_NONE)
		return 0;
	if (l->max_frames < max)
		max = l->max_frames;
	tstate = (uintptr_t)get_tstate();
	if (!plausible(tstate))
		return 0;
	frame = word_at(tstate, l->tstate_frame);
	if (l->kind == GPU_PY_CFRAME)
		frame =
		    plausible(frame) ? word_at(frame, l->cframe_current) : 0;
	if (l->tstate_base >= 0)
		base = word_at(tstate, l->tstate_base);
	/* Twice as many steps as frames kept: shims are steps too. */
	while (plausible(frame) && frame != base && steps++ < 2 * max + 8) {
		const unsigned char *f = (const unsigned char *)frame;

		if (l->frame_owner >= 0 && l->owner_skip >= 0 &&
		    f[l->frame_owner] == (unsigned char)l->owner_skip) {
			frame = word_at(frame, l->frame_back);
			continue;
		}
		if (n == max) {
			*cut = 1;
			break;
		}
		out[n].code = word_at(frame, l->frame_code);
		if (l->kind == GPU_PY_FRAME_OBJECTS) {
			int32_t lasti;

			memcpy(&lasti, f + l->frame_pos, sizeof(lasti));
			out[n].pos = (uint64_t)(int64_t)lasti;
		} else {
			out[n].pos = word_at(frame, l->frame_pos);
		}
		n++;
		frame = word_at(frame, l->frame_back);
	}
	return n;
}
