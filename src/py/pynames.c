/* SPDX-License-Identifier: MIT */
/* Thread names: threading's, read from the Thread object, else the OS's. */
#include "py/pynames.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sys/proc.h"
#include "py/pyattr.h"
#include "py/pyframe.h"
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
static void python_names(struct py_sampler *ps, struct py_sample *out)
{
	const struct py_offsets *off = ps->rt->off;
	long locals = off->frame_localsplus != OFF_NONE
			  ? off->frame_localsplus
			  : off->iframe_localsplus;
	size_t i, j;

	if (locals == OFF_NONE || !pyattr_supported(off))
		return;
	for (i = 0; i < out->nr_threads; i++) {
		struct py_thread *t = &out->threads[i];
		struct py_name_memo *nm = NULL;
		struct strbuf sb = STRBUF_INIT;
		uint64_t self;
		int r;

		if (!t->root_frame || !t->depth)
			continue;
		/* Threads keep their order between samples: try i first. */
		for (j = 0; j < ps->nr_names && !nm; j++) {
			size_t k = (i + j) % ps->nr_names;

			if (ps->names[k].tstate == t->tstate &&
			    ps->names[k].root_frame == t->root_frame &&
			    ps->names[k].tid == t->tid)
				nm = &ps->names[k];
		}
		/*
		 * A stack cut at the depth limit does not show _bootstrap:
		 * keep what is known, look when the thread is shallower.
		 */
		if (t->omitted && (!nm || nm->tries < NAME_TRIES))
			continue;
		if (!nm) {
			/* Threads come and go: start over, not grow forever. */
			if (ps->nr_names >= PY_MAX_THREADS)
				ps->nr_names = 0;
			ALLOC_GROW(ps->names, ps->nr_names + 1,
				   ps->alloc_names);
			nm = &ps->names[ps->nr_names++];
			memset(nm, 0, sizeof(*nm));
			nm->tstate = t->tstate;
			nm->root_frame = t->root_frame;
			nm->tid = t->tid;
		}
		if (nm->tries < NAME_TRIES &&
		    is_thread_bootstrap(
			out->frames[t->first + t->depth - 1].code)) {
			r = proc_read(ps->rt->pid,
				      t->root_frame + (uint64_t)locals, &self,
				      sizeof(self));
			/* 3.14+: a _PyStackRef, maybe tagged. */
			self &= ~PY_STACKREF_TAG_MASK;
			if (!r)
				r = pyattr_str(ps->rt->pid, off, self, "_name",
					       &sb);
			/* A torn read: try again next sample, a few times. */
			if (r && r != -ENOENT) {
				nm->tries++;
				strbuf_release(&sb);
				continue;
			}
			utf8_truncate(nm->name, sizeof(nm->name), sb.buf);
			strbuf_release(&sb);
		}
		nm->tries = NAME_TRIES;
		memcpy(t->name, nm->name, sizeof(t->name));
	}
}

/* OS thread names that say more than the process's own name. */
static void name_threads(struct py_sampler *ps, struct py_sample *out)
{
	size_t i;

	if (!ps->process_name[0]) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/%d/comm", (int)ps->rt->pid);
		proc_read_text(path, ps->process_name,
			       sizeof(ps->process_name));
		ps->process_name[strcspn(ps->process_name, "\n")] = '\0';
	}
	for (i = 0; i < out->nr_threads; i++) {
		struct py_thread *t = &out->threads[i];
		struct py_task_file *tf = t->tid ? pystate_task(ps, t->tid) : NULL;

		/* A name from threading comes first. */
		if (t->name[0])
			continue;
		if (tf && tf->comm[0] && strcmp(tf->comm, ps->process_name))
			memcpy(t->name, tf->comm, sizeof(tf->comm));
		/*
		 * The process's first thread, where Python starts: threading
		 * calls it MainThread (its object holds no name spyc reads).
		 */
		else if (t->tid == ps->rt->pid)
			snprintf(t->name, sizeof(t->name), "MainThread");
	}
}

void pynames_fill(struct py_sampler *ps, struct py_sample *out)
{
	python_names(ps, out);
	name_threads(ps, out);
}
