/* SPDX-License-Identifier: MIT */
/* Thread names: threading's, read from the Thread object, else the OS's. */
#include "py/pynames.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys/proc.h"
#include "py/pyattr.h"
#include "py/pywalk.h"
#include "py/pystate.h"
#include "util.h"

/* Reads of a thread's name that may fail before it is given up on. */
#define NAME_TRIES 3

/* Is code threading's Thread._bootstrap or _bootstrap_inner? */
static int is_thread_bootstrap(const struct pycode *code)
{
	const char *name = strrchr(code->name, '.');
	const char *file = strrchr(code->filename, '/');

	name = name ? name + 1 : code->name;
	file = file ? file + 1 : code->filename;
	return (!strcmp(name, "_bootstrap") ||
		!strcmp(name, "_bootstrap_inner")) &&
	       !strcmp(file, "threading.py");
}

/*
 * The name threading gave each thread it started: the Thread object is
 * the first local (self) of the outermost frame, threading's
 * _bootstrap, and its name the str attribute _name.  Looked up once per
 * thread: a new thread can reuse an old one's thread state and frame
 * memory, but not (for a long while) its tid.
 */
static void python_names(struct pynames *nm, struct py_sample *out)
{
	const struct py_offsets *off = nm->rt->off;
	long locals = off->frame_localsplus != OFF_NONE
			  ? off->frame_localsplus
			  : off->iframe_localsplus;
	size_t i, j;

	if (locals == OFF_NONE || !pyattr_supported(off))
		return;
	for (i = 0; i < out->nr_threads; i++) {
		struct py_thread *t = &out->threads[i];
		struct py_name_memo *memo = NULL;
		struct strbuf sb = STRBUF_INIT;
		uint64_t self;
		int r;

		if (!t->root_frame || !t->depth)
			continue;
		/* Threads keep their order between samples: try i first. */
		for (j = 0; j < nm->nr_names && !memo; j++) {
			size_t k = (i + j) % nm->nr_names;

			if (nm->names[k].tstate == t->tstate &&
			    nm->names[k].root_frame == t->root_frame &&
			    nm->names[k].tid == t->tid)
				memo = &nm->names[k];
		}
		/*
		 * A stack cut at the depth limit does not show _bootstrap:
		 * keep what is known, look when the thread is shallower.
		 */
		if (t->omitted && (!memo || memo->tries < NAME_TRIES))
			continue;
		if (!memo) {
			/* Threads come and go: start over, not grow forever. */
			if (nm->nr_names >= PY_MAX_THREADS)
				nm->nr_names = 0;
			ALLOC_GROW(nm->names, nm->nr_names + 1,
				   nm->alloc_names);
			memo = &nm->names[nm->nr_names++];
			memset(memo, 0, sizeof(*memo));
			memo->tstate = t->tstate;
			memo->root_frame = t->root_frame;
			memo->tid = t->tid;
		}
		if (memo->tries < NAME_TRIES &&
		    is_thread_bootstrap(
			out->frames[t->first + t->depth - 1].code)) {
			r = proc_read(nm->rt->pid,
				      t->root_frame + (uint64_t)locals, &self,
				      sizeof(self));
			/* 3.14+: a _PyStackRef, maybe tagged. */
			self &= ~PY_STACKREF_TAG_MASK;
			if (!r)
				r = pyattr_str(nm->rt->pid, off, self, "_name",
					       &sb);
			/* A torn read: try again next sample, a few times. */
			if (r && r != -ENOENT) {
				memo->tries++;
				strbuf_release(&sb);
				continue;
			}
			utf8_truncate(memo->name, sizeof(memo->name), sb.buf);
			strbuf_release(&sb);
		}
		memo->tries = NAME_TRIES;
		memcpy(t->name, memo->name, sizeof(t->name));
	}
}

/* OS thread names that say more than the process's own name. */
static void name_threads(struct pynames *nm, struct pystate *tasks,
			 struct py_sample *out)
{
	size_t i;

	if (!nm->process_name[0]) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/%d/comm", (int)nm->rt->pid);
		proc_read_text(path, nm->process_name,
			       sizeof(nm->process_name));
		nm->process_name[strcspn(nm->process_name, "\n")] = '\0';
	}
	for (i = 0; i < out->nr_threads; i++) {
		struct py_thread *t = &out->threads[i];
		struct py_task_file *tf = t->tid ? pystate_task(tasks, t->tid) : NULL;

		/* A name from threading comes first. */
		if (t->name[0])
			continue;
		if (tf && tf->comm[0] && strcmp(tf->comm, nm->process_name))
			memcpy(t->name, tf->comm, sizeof(tf->comm));
		/*
		 * The process's first thread, where Python starts: threading
		 * calls it MainThread (its object holds no name spyc reads).
		 */
		else if (t->tid == nm->rt->pid)
			snprintf(t->name, sizeof(t->name), "MainThread");
	}
}

void pynames_init(struct pynames *nm, const struct pyruntime *rt)
{
	memset(nm, 0, sizeof(*nm));
	nm->rt = rt;
}

void pynames_fill(struct pynames *nm, struct pystate *tasks,
		  struct py_sample *out)
{
	python_names(nm, out);
	name_threads(nm, tasks, out);
}

void pynames_release(struct pynames *nm)
{
	free(nm->names);
	memset(nm, 0, sizeof(*nm));
}
