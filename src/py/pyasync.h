/* SPDX-License-Identifier: MIT */
/* asyncio tasks of a 3.14+ target (--async): each thread's tasks, their
 * names, coroutine chains and awaiters, and stacks that read like them. */
#ifndef SPYC_PYASYNC_H
#define SPYC_PYASYNC_H

#include <stddef.h>
#include <stdint.h>

#include "py/pywalk.h"

/* The first CPython whose interpreter keeps task lists for outside tools. */
#define PYASYNC_SINCE 0x030E0000UL

/* Bytes of a task's name kept, with its NUL; longer ones are cut. */
#define PY_TASK_NAME_MAX 128

/* One asyncio.Task of the target, as one sample saw it. */
struct py_task {
	uint64_t addr;
	char name[PY_TASK_NAME_MAX]; /* UTF-8; "Task-N" when unnamed */
	long thread; /* index into the sample's threads, -1: exited */
	int running; /* the task its thread is running right now */
	/*
	 * Its coroutine chain, innermost first: frames[first .. first +
	 * depth) of the sample.  A running task's is its thread's frames
	 * from the innermost down to its coroutine's.
	 */
	size_t first, depth;
	/* The tasks awaiting it: awaiters[awaiters_first ..] of the sample */
	size_t awaiters_first, nr_awaiters;
};

/*
 * Where the _asyncio module says its tasks keep things
 * (_Py_AsyncioModuleDebugOffsets in CPython's Modules/_asynciomodule.c,
 * placed in its own ELF section "AsyncioDebug" for outside tools).
 */
struct py_async_offsets {
	long task_size, task_name, task_awaited_by, task_is_task;
	long task_awaited_by_is_set, task_coro, task_node;
	long interp_tasks_head;
	long tstate_running_loop, tstate_running_task, tstate_tasks_head;
};

/* Task names confirmed by two reads, kept (pyasync.c). */
#define PYASYNC_NAMES_KEPT 64

/* A task's name as last confirmed: the task, its name object, the name. */
struct pyasync_name {
	uint64_t task, obj;
	char name[PY_TASK_NAME_MAX];
};

/* What --async knows about a target. */
struct pyasync {
	int found; /* 1 once the offsets are read */
	struct py_async_offsets off;
	/* stand-in code objects naming tasks in stacks (see pyasync_stacks) */
	struct pycode **markers;
	size_t nr_markers, alloc_markers;
	uint64_t next_look; /* when to look for _asyncio again (now_ns()) */
	struct pyasync_name names[PYASYNC_NAMES_KEPT]; /* by task address */
};

/* pyasync_find's answers besides 0. */
enum {
	PYASYNC_NOT_LOADED = 1, /* the target has not imported asyncio */
};

/*
 * Can --async read this target at all?  Returns 0, or -1 with a one-line
 * reason in msg (a Python older than 3.14, or offsets spyc lacks).
 */
int pyasync_supported(const struct pyruntime *rt, char *msg, size_t size);

/*
 * Find the target's _asyncio module (an extension in lib-dynload, or
 * built into libpython or the executable) and read its debug offsets
 * into pa.  Returns 0, PYASYNC_NOT_LOADED if no mapped file has them
 * yet, or -1 if they are there but make no sense.
 */
int pyasync_find(struct pyasync *pa, const struct pyruntime *rt);

/* Free what pa holds. */
void pyasync_release(struct pyasync *pa);

/*
 * Read the tasks of every thread of out (already sampled and resolved)
 * and of threads that have exited into out->tasks, with their chains and
 * awaiters.  Nothing when pa has not found _asyncio.  Returns DROP_NONE
 * or why the sample must be dropped.
 */
enum drop_reason pyasync_read(struct pywalk *w, struct pyasync *pa,
			      struct py_sample *out);

/*
 * Turn out's stacks into task stacks: a thread running a task gets, root
 * first, the chain of tasks awaiting it (each a "<task>" frame named for
 * the task, then its coroutine chain, outermost first) and then the
 * frames its own coroutine runs, without the event loop's frames below
 * them.  With all_tasks, every task that is waiting and awaits no other
 * task also gets a stack of its own, in the same form, as an extra
 * thread entry (its is_task set, state idle) of its thread.
 */
void pyasync_stacks(struct pywalk *w, struct pyasync *pa,
		    struct py_sample *out, int all_tasks);

#endif
