/* SPDX-License-Identifier: MIT */
/* Native stacks: stopping a thread briefly, unwinding it with libunwind, naming
 * frames with libdw, and merging with Python frames. */
#ifndef SPYC_NATIVE_H
#define SPYC_NATIVE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "py/framename.h"
#include "py/pysample.h"
#include "py/pyruntime.h"
#include "sys/unwindmem.h"

/* Deepest native stack followed. */
#define NATIVE_MAX_DEPTH 512

/* A named native address.  Owned by the unwinder's cache. */
struct native_sym {
	uint64_t ip;
	char *name; /* "func", or "module+0xOFFSET" with no symbol */
	char *file; /* source file from DWARF, or NULL */
	int line;
	/*
	 * Where DWARF says the function holding ip is declared, or NULL
	 * and 0 (file differs from it inside inlined code: a header).
	 * Only once native_describe_function() has looked.
	 */
	char *func_file;
	int func_line;
	int func_described;
	int is_eval;   /* _PyEval_EvalFrameDefault: runs Python frames */
	int in_interp; /* inside the interpreter's own binary */
	long user_id;  /* for callers to cache a number on; starts at -1 */
};

/* One stopped thread: its registers and a copy of the top of its stack. */
struct native_thread {
	long tid;
	int stopped;	    /* held by spyc right now */
	int captured;	    /* registers and stack copied: can be unwound */
	int pending_signal; /* a signal that arrived while we held it */
	struct user_regs_struct regs;
	uint64_t stack_lo;
	size_t stack_len;
	unsigned char *stack;
	size_t stack_alloc;
};

struct native_unwinder {
	pid_t pid;
	const struct pyruntime *rt;
	void *as;   /* unw_addr_space_t */
	void *dwfl; /* Dwfl * */
	struct native_sym **syms;
	size_t syms_size, nr_syms;
	struct native_thread *threads;
	size_t nr_threads, alloc_threads;
	struct native_thread *current; /* being unwound */
	void *upt;	    /* _UPT_create(): finds the unwind tables */
	struct unwindmem mem; /* the target's memory beside the stacks */
	uint64_t last_report; /* when the module list was last refreshed */
	int other_root; /* the target sees another root: a container's */
	/* libdw's callbacks, kept as long as dwfl, and where they look for
	 * separate debug info. */
	void *dwfl_callbacks; /* Dwfl_Callbacks * */
	char *debuginfo_path;
};

/*
 * Prepare to unwind pid's threads.  Returns 0, or -1 after reporting
 * (in one line naming the cause, if the kernel refuses spyc to trace
 * them).  Frames in rt's binary are the interpreter's own.
 */
int native_init(struct native_unwinder *nu, const struct pyruntime *rt);
/*
 * Prepare only to stop and resume pid's threads (--blocking): nothing
 * is unwound, and no stack is copied.  Returns 0, or -1 after
 * reporting, as native_init.
 */
int native_init_stopper(struct native_unwinder *nu, const struct pyruntime *rt);
void native_release(struct native_unwinder *nu);

/*
 * Stop the threads tids[0..n-1] (only those), capturing registers and
 * the top of each stack.  Threads that are gone are skipped.  Returns
 * how many are stopped; they must be resumed with native_resume_all()
 * as soon as possible.
 */
size_t native_stop(struct native_unwinder *nu, const long *tids, size_t n);
/*
 * Let every stopped thread run again, delivering any signal held back.
 * Their copies stay, to be unwound after.
 */
void native_resume_all(struct native_unwinder *nu);

/*
 * Stops that find a thread handing over from one frame to the next
 * before its sample is given up: a generator that yielded and has
 * cleared its link to its caller, but not yet made the caller its
 * thread's current frame; a frame pushed whose link to its caller is
 * not set yet (a read through it can fail).  No read can give such a
 * stack whole, so the threads run on a little (native_run_on) and are
 * stopped again.
 */
#define NATIVE_STOP_TRIES 6

/*
 * Before stop number tries (1, 2, ...) of one sample, with every
 * thread resumed: let them run 20 us, then 4, 16, ... times that (about
 * 7 ms in all, time enough for a thread of a loaded machine to be run).
 */
void native_run_on(int tries);

/*
 * Unwind a thread captured by the last native_stop() into ips (innermost
 * first), from its copied registers and stack: it need not be stopped
 * any more.  Returns the number of frames, 0 if tid was not captured or
 * cannot be unwound.
 */
size_t native_unwind(struct native_unwinder *nu, long tid, uint64_t *ips,
		     size_t max);

/* The name of a native address, cached.  Never NULL. */
const struct native_sym *native_symbolize(struct native_unwinder *nu,
					  uint64_t ip);

/*
 * Fill in s->func_file and s->func_line, the first time only.  It looks
 * through the DWARF of s's compilation unit, so it is not done for every
 * symbol named: only for those a caller shows per function.
 */
void native_describe_function(struct native_unwinder *nu, struct native_sym *s);

/* One frame of a merged stack. */
struct merged_frame {
	const struct py_frame *py;	 /* a Python frame, or NULL */
	const struct native_sym *native; /* else a native one */
};

/*
 * Merge a thread's Python frames (innermost first, with entry marks)
 * and native frames (innermost first) into out, ROOT FIRST: each
 * _PyEval_EvalFrameDefault is replaced by the Python frames it ran, and
 * the interpreter's own frames between Python frames are left out.
 * Returns the number of frames; *merged is 0 when the two did not line
 * up, and then out holds the Python frames followed by the native ones
 * above the innermost eval call.
 */
size_t native_merge(struct native_unwinder *nu, const struct py_frame *py,
		    size_t nr_py, const uint64_t *ips, size_t nr_ips,
		    struct merged_frame *out, size_t max, int *merged);

/*
 * Thread t's stack in sample s, ROOT FIRST, into out (max frames): merged
 * with its native frames when nu is not NULL and t was captured by the
 * last native_stop(), else its Python frames alone.  Returns the number
 * of frames; *unmerged is 1 when native and Python frames did not line
 * up (see native_merge), else 0.
 */
size_t native_thread_frames(struct native_unwinder *nu,
			    const struct py_sample *s,
			    const struct py_thread *t, struct merged_frame *out,
			    size_t max, int *unmerged);

/* How a command names the frames of its stacks (native_thread_ids). */
struct frame_namer {
	/* A Python (code, line): once, then from pycode_line_id's cache. */
	line_id_fn python;
	/* A native symbol: once, then from the symbol's user_id. */
	uint32_t (*native)(void *ctx, struct native_sym *sym);
	void *ctx;
};

/*
 * Thread t's stack in sample s as the ids fn gives its frames, ROOT
 * FIRST, into ids (max of them), merged as native_thread_frames() does,
 * through scratch (max frames).  Returns the number of frames; *unmerged
 * as native_thread_frames() sets it.
 */
size_t native_thread_ids(struct native_unwinder *nu, const struct py_sample *s,
			 const struct py_thread *t,
			 struct merged_frame *scratch, size_t max,
			 const struct frame_namer *fn, uint32_t *ids,
			 int *unmerged);

#endif
