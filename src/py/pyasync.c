/* SPDX-License-Identifier: MIT */
/* asyncio tasks of a 3.14+ target (--async): each thread's tasks, their
 * names, coroutine chains and awaiters, and stacks that read like them. */
#include "py/pyasync.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys/elfsym.h"
#include "sys/proc.h"
#include "py/pyframe.h"
#include "py/pyresolve.h"
#include "util.h"

/* The section _asyncio puts its debug offsets in (GENERATE_DEBUG_SECTION
 * in CPython's Include/internal/pycore_debug_offsets.h). */
#define ASYNCIO_SECTION ".AsyncioDebug"
/* _Py_AsyncioModuleDebugOffsets: 13 uint64_t (task: 7, interpreter: 2,
 * thread: 4), in this order, in 3.14 and 3.15. */
#define ASYNCIO_DEBUG_WORDS 13
/* No struct the offsets describe is anywhere near this big. */
#define PLAUSIBLE_SIZE (1L << 20)
/* Py_TPFLAGS_LONG_SUBCLASS, Py_TPFLAGS_UNICODE_SUBCLASS (Include/object.h) */
#define TPFLAGS_LONG (1UL << 24)
#define TPFLAGS_UNICODE (1UL << 28)
/* _PyLong_NON_SIZE_BITS and PyLong_SHIFT (Include/cpython/longintrepr.h) */
#define LONG_NON_SIZE_BITS 3
#define LONG_SHIFT 30
/*
 * Most tasks read per sample, coroutines per chain, tasks per chain of
 * awaiters, and awaiters per task: torn data can link anything.
 */
#define TASKS_MAX 65536
#define CHAIN_MAX 1024
#define AWAITERS_MAX 65536
/* Distinct task names kept as stand-in code objects before starting over. */
#define MARKERS_MAX 4096
/* How often to look again for an _asyncio not yet imported. */
#define LOOK_AGAIN_NS 1000000000ULL

/* Most bytes of a thread state read for its asyncio fields. */
#define TSTATE_SPAN_MAX 256
/* Most bytes of a generator read: its header and embedded frame. */
#define GEN_BYTES_MAX 1024

int pyasync_supported(const struct pyruntime *rt, char *msg, size_t size)
{
	const struct py_offsets *off = rt->off;

	if (rt->hexversion < PYASYNC_SINCE) {
		snprintf(msg, size,
			 "--async needs CPython 3.14 or later: pid %d runs "
			 "Python %s",
			 (int)rt->pid, rt->version);
		return -1;
	}
	/* gen_yield_from is -1 in 3.14: OFF_NONE's value, so not tested. */
	if (off->gen_iframe == OFF_NONE || off->gen_cleared == OFF_NONE ||
	    off->iframe_stackpointer == OFF_NONE ||
	    off->type_flags == OFF_NONE || off->long_tag == OFF_NONE ||
	    off->set_table == OFF_NONE || off->gen_state_at == OFF_NONE) {
		snprintf(msg, size,
			 "--async cannot read Python %s in pid %d: spyc has "
			 "no offset table for its coroutines and tasks",
			 rt->version, (int)rt->pid);
		return -1;
	}
	return 0;
}

/* Take raw (the section's words) as offsets if they are plausible: 0. */
static int parse_offsets(struct py_async_offsets *o, const uint64_t *w)
{
	size_t i;

	for (i = 0; i < ASYNCIO_DEBUG_WORDS; i++)
		if (w[i] >= (uint64_t)PLAUSIBLE_SIZE)
			return -1;
	o->task_size = (long)w[0];
	o->task_name = (long)w[1];
	o->task_awaited_by = (long)w[2];
	o->task_is_task = (long)w[3];
	o->task_awaited_by_is_set = (long)w[4];
	o->task_coro = (long)w[5];
	o->task_node = (long)w[6];
	/* w[7], w[9]: the sizes of the interpreter and thread states */
	o->interp_tasks_head = (long)w[8];
	o->tstate_running_loop = (long)w[10];
	o->tstate_running_task = (long)w[11];
	o->tstate_tasks_head = (long)w[12];
	if (o->task_size > 4096 || o->task_name + 8 > o->task_size ||
	    o->task_awaited_by + 8 > o->task_size ||
	    o->task_is_task >= o->task_size ||
	    o->task_awaited_by_is_set >= o->task_size ||
	    o->task_coro + 8 > o->task_size ||
	    o->task_node + 16 > o->task_size || !o->tstate_tasks_head ||
	    !o->interp_tasks_head)
		return -1;
	return 0;
}

/* Is the mapped file at path one that may hold _asyncio? */
static int may_hold_asyncio(const struct pyruntime *rt, const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "_asyncio.", 9) || !strcmp(path, rt->binary);
}

/*
 * Look for the section in the file mapped at path (first mapped at
 * base) and read it from the target: 0, 1 if the file has none, -1.
 */
static int read_section(struct pyasync *pa, const struct pyruntime *rt,
			const struct proc_maps *maps, const char *path,
			uint64_t base)
{
	struct elfsym es;
	char *file = proc_mapped_file(rt->pid, maps, path);
	uint64_t words[ASYNCIO_DEBUG_WORDS], addr, size, bias;
	int saved_quiet = quiet, ret = 1;

	quiet = 1;
	if (!file || elfsym_open(&es, file)) {
		quiet = saved_quiet;
		free(file);
		return 1;
	}
	quiet = saved_quiet;
	if (elfsym_section(&es, ASYNCIO_SECTION, &addr, &size))
		goto out;
	ret = -1;
	bias = es.is_exec ? 0 : base - es.first_vaddr;
	if (size < sizeof(words) ||
	    proc_read(rt->pid, addr + bias, words, sizeof(words)) ||
	    parse_offsets(&pa->off, words))
		goto out;
	pa->found = 1;
	ret = 0;
out:
	elfsym_close(&es);
	free(file);
	return ret;
}

int pyasync_find(struct pyasync *pa, const struct pyruntime *rt)
{
	struct proc_maps maps = {0};
	size_t i;
	int ret = PYASYNC_NOT_LOADED;

	if (pa->found)
		return 0;
	if (proc_maps_load(&maps, rt->pid))
		return PYASYNC_NOT_LOADED;
	for (i = 0; i < maps.nr && ret == PYASYNC_NOT_LOADED; i++) {
		const struct proc_map *m = &maps.maps[i];

		if (!m->path || m->offset || !may_hold_asyncio(rt, m->path))
			continue;
		/* A file is mapped several times: look at its first only. */
		if (i && maps.maps[i - 1].path &&
		    !strcmp(maps.maps[i - 1].path, m->path))
			continue;
		ret = read_section(pa, rt, &maps, m->path, m->start);
	}
	proc_maps_release(&maps);
	return ret < 0 ? -1 : ret;
}

static void free_markers(struct pyasync *pa)
{
	size_t i;

	for (i = 0; i < pa->nr_markers; i++) {
		free(pa->markers[i]->name);
		free(pa->markers[i]->filename);
		free(pa->markers[i]->lines);
		free(pa->markers[i]);
	}
	pa->nr_markers = 0;
}

void pyasync_release(struct pyasync *pa)
{
	free_markers(pa);
	free(pa->markers);
	memset(pa, 0, sizeof(*pa));
}

/* Cut s to at most max bytes, NUL included, at a UTF-8 character start. */
static void copy_name(char *dst, size_t max, const char *s)
{
	size_t n = strlen(s);

	if (n >= max) {
		n = max - 1;
		while (n && ((unsigned char)s[n] & 0xC0) == 0x80)
			n--;
	}
	memcpy(dst, s, n);
	dst[n] = '\0';
}

/*
 * A task's name: a str, or an int N that asyncio shows as "Task-N"
 * (tasks made without a name are numbered; the string is made only when
 * asked for).  0, or a negative errno.
 */
static int read_task_name(struct pywalk *w, uint64_t obj, char *name,
			  size_t size)
{
	const struct py_offsets *off = w->rt->off;
	pid_t pid = w->rt->pid;
	uint64_t type = 0, flags = 0, tag = 0, value = 0;
	uint32_t digits[2] = {0, 0};
	struct strbuf sb = STRBUF_INIT;
	size_t ndigits;
	int r;

	if (!obj)
		return -EINVAL;
	r = proc_read(pid, obj + (uint64_t)off->object_type, &type,
		      sizeof(type));
	if (!r)
		r = proc_read(pid, type + (uint64_t)off->type_flags, &flags,
			      sizeof(flags));
	if (r)
		return r;
	if (flags & TPFLAGS_UNICODE) {
		r = pystring_read(pid, off, obj, &sb);
		if (!r)
			copy_name(name, size, sb.buf);
		strbuf_release(&sb);
		return r;
	}
	if (!(flags & TPFLAGS_LONG))
		return -EINVAL;
	r = proc_read(pid, obj + (uint64_t)off->long_tag, &tag, sizeof(tag));
	if (r)
		return r;
	ndigits = (size_t)(tag >> LONG_NON_SIZE_BITS);
	/*
	 * asyncio numbers its tasks from 1: zero (sign bits 1), a negative
	 * (2), or more digits than a counter reaches is a tag read wrong.
	 */
	if (!ndigits || ndigits > 2 || (tag & 3))
		return -EINVAL;
	r = proc_read(pid, obj + (uint64_t)off->long_digits, digits,
		      ndigits * sizeof(digits[0]));
	if (r)
		return r;
	/* Digits hold LONG_SHIFT bits, and the top one is never 0. */
	if ((digits[0] | digits[1]) >> LONG_SHIFT || !digits[ndigits - 1])
		return -EINVAL;
	value = (uint64_t)digits[0] | (uint64_t)digits[1] << LONG_SHIFT;
	snprintf(name, size, "Task-%llu", (unsigned long long)value);
	return 0;
}

/*
 * The name of the task at addr, whose copy (read once) names obj: taken
 * from one read when the task, its name object and the name read are
 * those last confirmed, else only if the task's link to obj and the name
 * read again agree.  A read gone wrong (a link or a few bits garbled on
 * their way) would otherwise put a task the target does not have in the
 * stack; names are read in every sample, so a name seen before costs no
 * more reads than one unconfirmed.  0, -EAGAIN if the reads disagree, or
 * read_task_name's error.
 */
static int task_name_confirmed(struct pywalk *w, struct pyasync *pa,
			       uint64_t addr, uint64_t obj, char *name,
			       size_t size)
{
	struct pyasync_name *kept =
	    &pa->names[(addr >> 4) % PYASYNC_NAMES_KEPT];
	char again[PY_TASK_NAME_MAX];
	uint64_t link = 0;
	int r = read_task_name(w, obj, name, size);

	if (r || (kept->task == addr && kept->obj == obj &&
		  !strcmp(kept->name, name)))
		return r;
	r = proc_read(w->rt->pid, addr + (uint64_t)pa->off.task_name, &link,
		      sizeof(link));
	if (!r)
		r = read_task_name(w, obj, again, sizeof(again));
	if (r)
		return r;
	if (link != obj || strcmp(again, name))
		return -EAGAIN;
	kept->task = addr;
	kept->obj = obj;
	copy_name(kept->name, sizeof(kept->name), name);
	return 0;
}

/* Reverse frames [from, to) of the walk, before they are resolved. */
static void reverse_walk(struct pywalk *w, size_t from, size_t to)
{
	while (from + 1 < to) {
		uint64_t a;
		long q;
		unsigned char e;

		to--;
		a = w->code_addrs[from];
		w->code_addrs[from] = w->code_addrs[to];
		w->code_addrs[to] = a;
		a = w->frame_addrs[from];
		w->frame_addrs[from] = w->frame_addrs[to];
		w->frame_addrs[to] = a;
		q = w->addrqs[from];
		w->addrqs[from] = w->addrqs[to];
		w->addrqs[to] = q;
		e = w->entries[from];
		w->entries[from] = w->entries[to];
		w->entries[to] = e;
		from++;
	}
}

/*
 * Where a coroutine suspended in an await keeps the object it awaits:
 * the top of its frame's value stack (_PyGen_yf in CPython's
 * Objects/genobject.c), one slot below the stack pointer in 3.14 and
 * two from 3.15, whose SEND keeps a second value above it.
 */
static uint64_t awaited_slot(const struct pyruntime *rt)
{
	return rt->hexversion >= 0x030F0000UL ? 2 : 1;
}

/*
 * Is the coroutine at coro, copied into buf, still as copied: its state
 * and instruction read again the same?  A copy is made in address order
 * over some microseconds, and a coroutine that runs on meanwhile reads
 * as suspended (its state, first) at the line it ran on to (its
 * instruction, later): a waiting task at a line that is no await.
 */
static int coro_still(struct pywalk *w, uint64_t coro,
		      const unsigned char *buf)
{
	const struct py_offsets *off = w->rt->off;
	size_t from = (size_t)(off->gen_iframe + off->gen_state_at);
	size_t to = (size_t)(off->gen_iframe + off->iframe_instr) + 8;
	unsigned char again[GEN_BYTES_MAX];

	if (to <= from || to - from > sizeof(again) ||
	    proc_read(w->rt->pid, coro + from, again, to - from))
		return 0;
	return again[0] == buf[from] &&
	       !memcmp(again + (to - 8 - from), buf + to - 8, 8);
}

/*
 * Push the frames of the coroutine at coro and of the coroutines it
 * awaits, outermost first: each one suspended in an await of another
 * coroutine (of the same type) leads to it; waiting: of a task that is
 * not running, none of whose coroutines may be.  Returns DROP_NONE, or
 * DROP_INVALID for data that makes no sense (a torn read).
 */
static enum drop_reason push_coro_chain(struct pywalk *w,
					struct py_sample *out, uint64_t coro,
					int waiting)
{
	const struct py_offsets *off = w->rt->off;
	pid_t pid = w->rt->pid;
	size_t len = (size_t)(off->gen_iframe + off->iframe_size), n;
	long state_at = off->gen_iframe + off->gen_state_at;
	unsigned char buf[GEN_BYTES_MAX];

	if (len > sizeof(buf) || state_at < 0)
		return DROP_INVALID;
	for (n = 0; coro && n < CHAIN_MAX; n++) {
		const unsigned char *f = buf + off->gen_iframe;
		uint64_t sp, awaited = 0, type = 0;
		long state;

		if (proc_read(pid, coro, buf, len))
			return DROP_READ;
		state = (signed char)buf[state_at];
		/* Done (completed, or cleared since): it says nothing more. */
		if (state == off->gen_cleared || state > off->gen_executing)
			return DROP_NONE;
		/*
		 * A waiting task's coroutine running now was read as its
		 * thread moved on, at a line that is no await; and one that
		 * an await leads to has started (the await started it):
		 * one not started yet (FRAME_CREATED, just below
		 * FRAME_SUSPENDED, just below FRAME_SUSPENDED_YIELD_FROM in
		 * pycore_frame.h) was read as it was made, before or after
		 * the await that made it.  A task's own may not have
		 * started: it is shown at its first line.
		 */
		if (f[off->iframe_owner] != off->owner_generator ||
		    (waiting && state == off->gen_executing) ||
		    (n && state < off->gen_yield_from - 1))
			return DROP_INVALID;
		if (waiting && !coro_still(w, coro, buf))
			return DROP_INVALID;
		pyframe_push(w, out, coro + (uint64_t)off->gen_iframe, f);
		if (state != off->gen_yield_from &&
		    state != off->gen_yield_from_locked)
			return DROP_NONE;
		sp = load_u64(f, off->iframe_stackpointer) & ~PY_STACKREF_TAG_MASK;
		if (sp < 8 * awaited_slot(w->rt) ||
		    proc_read(pid, sp - 8 * awaited_slot(w->rt), &awaited,
			      sizeof(awaited)))
			return DROP_NONE;
		awaited &= ~PY_STACKREF_TAG_MASK;
		/* Only a coroutine leads on: a future or iterator ends it. */
		if (!awaited ||
		    proc_read(pid, awaited + (uint64_t)off->object_type, &type,
			      sizeof(type)) ||
		    type != load_u64(buf, off->object_type))
			return DROP_NONE;
		coro = awaited;
	}
	return n < CHAIN_MAX ? DROP_NONE : DROP_DEPTH;
}

/* Scratch of one pyasync_read: awaiter addresses, before they are indexes. */
struct task_scan {
	uint64_t *raw;
	size_t nr_raw, alloc_raw;
	size_t *raw_first, *raw_count; /* per task */
	size_t alloc_per_task;
};

/* Note the tasks awaiting the task (read into buf): its awaited_by. */
static void note_awaiters(struct pywalk *w, const struct pyasync *pa,
			  struct task_scan *sc, size_t task,
			  const unsigned char *buf)
{
	const struct py_offsets *off = w->rt->off;
	uint64_t by = load_u64(buf, pa->off.task_awaited_by);
	unsigned char head[256];
	unsigned char *table;
	int64_t used, mask;
	size_t i, hlen;

	sc->raw_first[task] = sc->nr_raw;
	sc->raw_count[task] = 0;
	if (!by)
		return;
	if (!buf[pa->off.task_awaited_by_is_set]) {
		ALLOC_GROW(sc->raw, sc->nr_raw + 1, sc->alloc_raw);
		sc->raw[sc->nr_raw++] = by;
		sc->raw_count[task] = 1;
		return;
	}
	/* A set of awaiters: its table of (key, hash) entries. */
	hlen = (size_t)off->set_table + 8;
	if (off->set_used + 8 > (long)hlen)
		hlen = (size_t)off->set_used + 8;
	if (off->set_mask + 8 > (long)hlen)
		hlen = (size_t)off->set_mask + 8;
	if (hlen > sizeof(head) || proc_read(w->rt->pid, by, head, hlen))
		return;
	used = (int64_t)load_u64(head, off->set_used);
	mask = (int64_t)load_u64(head, off->set_mask);
	if (mask < 0 || mask >= AWAITERS_MAX || used < 0 || used > mask + 1)
		return;
	table = xmalloc((size_t)(mask + 1) * (size_t)off->set_entry_size);
	if (!proc_read(w->rt->pid, load_u64(head, off->set_table), table,
		       (size_t)(mask + 1) * (size_t)off->set_entry_size)) {
		/* setentry's key comes first (Include/cpython/setobject.h);
		 * a removed key's dummy is no task, and is left out later. */
		for (i = 0; i <= (size_t)mask; i++) {
			uint64_t key = load_u64(
			    table, (long)(i * (size_t)off->set_entry_size));

			if (!key)
				continue;
			ALLOC_GROW(sc->raw, sc->nr_raw + 1, sc->alloc_raw);
			sc->raw[sc->nr_raw++] = key;
			sc->raw_count[task]++;
		}
	}
	free(table);
}

/*
 * Read the tasks of the list whose head is at head (a thread's, or the
 * interpreter's for threads that exited): thread is the thread's index
 * or -1, running its running task's address or 0.
 */
static enum drop_reason read_task_list(struct pywalk *w,
				       struct pyasync *pa,
				       struct py_sample *out,
				       struct task_scan *sc, uint64_t head,
				       long thread, uint64_t running)
{
	unsigned char buf[4096];
	uint64_t node, prev = head;
	size_t tsize = (size_t)pa->off.task_size;
	int r;

	r = proc_read(w->rt->pid, head, &node, sizeof(node));
	if (r)
		return pywalk_read_error(r);
	while (node != head) {
		struct py_task *task;
		uint64_t addr;
		size_t i;

		if (!node || out->nr_tasks >= TASKS_MAX)
			return DROP_INVALID;
		addr = node - (uint64_t)pa->off.task_node;
		r = proc_read(w->rt->pid, addr, buf, tsize);
		if (r)
			return pywalk_read_error(r);
		/*
		 * The list is linked both ways: a node whose link back is not
		 * to the node that led to it was read as it changed, or is
		 * not a node (a link garbled): another object's name and
		 * coroutine would be taken as a task's.
		 */
		if (load_u64(buf, pa->off.task_node + 8) != prev)
			return DROP_INVALID;
		prev = node;
		ALLOC_GROW(out->tasks, out->nr_tasks + 1, out->alloc_tasks);
		if (out->nr_tasks + 1 > sc->alloc_per_task) {
			size_t n = sc->alloc_per_task;

			ALLOC_GROW(sc->raw_first, out->nr_tasks + 1, n);
			n = sc->alloc_per_task;
			ALLOC_GROW(sc->raw_count, out->nr_tasks + 1, n);
			sc->alloc_per_task = n;
		}
		task = &out->tasks[out->nr_tasks];
		memset(task, 0, sizeof(*task));
		task->addr = addr;
		task->thread = thread;
		task->running = running && addr == running;
		/* Named wrong, the sample would show a task not there. */
		r = task_name_confirmed(w, pa, addr,
					load_u64(buf, pa->off.task_name),
					task->name, sizeof(task->name));
		if (r)
			return r == -EAGAIN || r == -EINVAL ? DROP_INVALID
							     : pywalk_read_error(r);
		task->first = out->nr_frames;
		if (task->running) {
			const struct py_thread *t = &out->threads[thread];
			uint64_t frame = load_u64(buf, pa->off.task_coro) +
					 (uint64_t)w->rt->off->gen_iframe;

			for (i = t->first; i < t->first + t->depth; i++)
				if (w->frame_addrs[i] == frame)
					break;
			if (i < t->first + t->depth) {
				task->first = t->first;
				task->depth = i - t->first + 1;
			}
		}
		if (!task->depth) {
			enum drop_reason why = push_coro_chain(
			    w, out, load_u64(buf, pa->off.task_coro),
			    !task->running);

			if (why)
				return why;
			task->depth = out->nr_frames - task->first;
			reverse_walk(w, task->first, out->nr_frames);
		}
		note_awaiters(w, pa, sc, out->nr_tasks, buf);
		out->nr_tasks++;
		node = load_u64(buf, pa->off.task_node);
	}
	return DROP_NONE;
}

struct addr_index {
	uint64_t addr;
	size_t index;
};

static int addr_index_cmp(const void *a, const void *b)
{
	const struct addr_index *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Turn the awaiters' addresses into indexes of tasks read. */
static void link_awaiters(struct py_sample *out, const struct task_scan *sc)
{
	struct addr_index *idx = xmalloc((out->nr_tasks + 1) * sizeof(*idx));
	size_t i, j;

	for (i = 0; i < out->nr_tasks; i++) {
		idx[i].addr = out->tasks[i].addr;
		idx[i].index = i;
	}
	qsort(idx, out->nr_tasks, sizeof(*idx), addr_index_cmp);
	for (i = 0; i < out->nr_tasks; i++) {
		struct py_task *task = &out->tasks[i];

		task->awaiters_first = out->nr_awaiters;
		for (j = 0; j < sc->raw_count[i]; j++) {
			struct addr_index key = {sc->raw[sc->raw_first[i] + j],
						 0};
			const struct addr_index *hit =
			    bsearch(&key, idx, out->nr_tasks, sizeof(*idx),
				    addr_index_cmp);

			if (!hit || hit->index == i)
				continue;
			ALLOC_GROW(out->awaiters, out->nr_awaiters + 1,
				   out->alloc_awaiters);
			out->awaiters[out->nr_awaiters++] = hit->index;
		}
		task->nr_awaiters = out->nr_awaiters - task->awaiters_first;
	}
	free(idx);
}

enum drop_reason pyasync_read(struct pywalk *w, struct pyasync *pa,
			      struct py_sample *out)
{
	const struct py_async_offsets *ao = &pa->off;
	struct task_scan sc;
	size_t i, from = out->nr_frames;
	enum drop_reason why = DROP_NONE;
	long lo, hi;
	uint64_t interp;
	int r;

	out->nr_tasks = 0;
	out->nr_awaiters = 0;
	if (!pa->found) {
		uint64_t now = now_ns();

		if (now < pa->next_look)
			return DROP_NONE;
		pa->next_look = now + LOOK_AGAIN_NS;
		if (pyasync_find(pa, w->rt))
			return DROP_NONE;
	}
	memset(&sc, 0, sizeof(sc));
	lo = ao->tstate_running_loop;
	if (ao->tstate_running_task < lo)
		lo = ao->tstate_running_task;
	if (ao->tstate_tasks_head < lo)
		lo = ao->tstate_tasks_head;
	hi = ao->tstate_running_loop;
	if (ao->tstate_running_task > hi)
		hi = ao->tstate_running_task;
	if (ao->tstate_tasks_head > hi)
		hi = ao->tstate_tasks_head;
	if (hi + 8 - lo > TSTATE_SPAN_MAX)
		return DROP_INVALID;
	for (i = 0; i < out->nr_threads && !why; i++) {
		unsigned char span[TSTATE_SPAN_MAX];
		uint64_t tstate = out->threads[i].tstate, running;

		r = proc_read(w->rt->pid, tstate + (uint64_t)lo, span,
			      (size_t)(hi + 8 - lo));
		if (r) {
			why = pywalk_read_error(r);
			break;
		}
		running = load_u64(span, ao->tstate_running_loop - lo)
			      ? load_u64(span, ao->tstate_running_task - lo)
			      : 0;
		why = read_task_list(w, pa, out, &sc,
				     tstate + (uint64_t)ao->tstate_tasks_head,
				     (long)i, running);
	}
	if (!why && !(r = pyruntime_interp_head(w->rt, &interp)) && interp)
		why = read_task_list(w, pa, out, &sc,
				     interp + (uint64_t)ao->interp_tasks_head,
				     -1, 0);
	if (!why && out->nr_frames > from)
		why = pyresolve_frames(w, out, from);
	/*
	 * What a task's coroutine chain leads to runs coroutine code (or a
	 * generator's, under a yield from): any other code is not the
	 * chain, but a link read wrong.
	 */
	for (i = from; !why && i < out->nr_frames; i++)
		if (out->frames[i].code &&
		    !(out->frames[i].code->flags & PYCODE_SUSPENDABLE))
			why = DROP_INVALID;
	if (!why)
		link_awaiters(out, &sc);
	free(sc.raw);
	free(sc.raw_first);
	free(sc.raw_count);
	return why;
}

/* The stand-in code object naming a task in stacks: "<task>" its file. */
static struct pycode *task_marker(struct pyasync *pa, const char *name)
{
	struct pycode *code;
	size_t i;

	for (i = 0; i < pa->nr_markers; i++)
		if (!strcmp(pa->markers[i]->name, name))
			return pa->markers[i];
	code = xcalloc(1, sizeof(*code));
	code->name = xstrdup(name);
	code->filename = xstrdup("<task>");
	code->last_addrq = -2;
	ALLOC_GROW(pa->markers, pa->nr_markers + 1, pa->alloc_markers);
	pa->markers[pa->nr_markers++] = code;
	return code;
}

static void append_frame(struct py_sample *out, struct py_frame fr)
{
	ALLOC_GROW(out->frames, out->nr_frames + 1, out->alloc_frames);
	out->frames[out->nr_frames++] = fr;
}

/*
 * The task that awaits task, to go on with: the one at the lowest
 * address when several do (a task awaited by a gather() and others), so
 * that samples agree; -1 if none does.
 */
static long parent_task(const struct py_sample *out, size_t task)
{
	const struct py_task *t = &out->tasks[task];
	long best = -1;
	size_t i;

	for (i = 0; i < t->nr_awaiters; i++) {
		size_t p = out->awaiters[t->awaiters_first + i];

		if (best < 0 || out->tasks[p].addr < out->tasks[best].addr)
			best = (long)p;
	}
	return best;
}

/*
 * Append the stack of task, innermost first: its chain and its marker,
 * then each awaiting task's the same way up to one nobody awaits.
 * Returns where it starts.
 */
static size_t append_task_stack(struct pyasync *pa, struct py_sample *out,
				size_t task)
{
	size_t start = out->nr_frames, n, j;
	long at = (long)task;

	for (n = 0; at >= 0 && n < CHAIN_MAX; n++) {
		const struct py_task *t = &out->tasks[at];
		struct py_frame marker = {task_marker(pa, t->name), 0, 0};

		for (j = 0; j < t->depth; j++)
			append_frame(out, out->frames[t->first + j]);
		append_frame(out, marker);
		/* A loop of awaiters (torn data) stops where it closes. */
		if (n && (size_t)at == task)
			break;
		at = parent_task(out, (size_t)at);
	}
	return start;
}

void pyasync_stacks(struct pywalk *w, struct pyasync *pa,
		    struct py_sample *out, int all_tasks)
{
	size_t i;

	if (!out->nr_tasks)
		return;
	/* Names that vary without end: start over, as the code cache does. */
	if (pa->nr_markers >= MARKERS_MAX)
		free_markers(pa);
	for (i = 0; i < out->nr_tasks; i++) {
		const struct py_task *task = &out->tasks[i];
		struct py_thread *t;
		size_t start;

		if (task->thread < 0 || !task->running)
			continue;
		start = append_task_stack(pa, out, i);
		t = &out->threads[task->thread];
		t->first = start;
		t->depth = out->nr_frames - start;
		t->omitted = 0;
	}
	if (!all_tasks)
		return;
	for (i = 0; i < out->nr_tasks; i++) {
		const struct py_task *task = &out->tasks[i];
		struct py_thread *t;
		size_t j, start;
		int leaf = 1;

		if (task->thread < 0 || task->running)
			continue;
		/* A task that awaits another is in that one's stack. */
		for (j = 0; j < out->nr_awaiters && leaf; j++)
			leaf = out->awaiters[j] != i;
		if (!leaf)
			continue;
		start = append_task_stack(pa, out, i);
		ALLOC_GROW(out->threads, out->nr_threads + 1,
			   out->alloc_threads);
		t = &out->threads[out->nr_threads++];
		*t = out->threads[task->thread];
		t->is_task = 1;
		t->state = THREAD_IDLE;
		t->holds_gil = 0;
		t->skipped = 0;
		t->omitted = 0;
		t->first = start;
		t->depth = out->nr_frames - start;
	}
}
