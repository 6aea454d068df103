/* SPDX-License-Identifier: MIT */
/* Sampling the target's Python threads and frames, one sample at a time:
 * finding the interpreters and their threads, and what each thread is. */
#include "py/pysample.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "py/frameobj.h"
#include "sys/proc.h"
#include "py/pyasync.h"
#include "py/pyframe.h"
#include "py/pygil.h"
#include "py/pynames.h"
#include "py/pyresolve.h"
#include "py/pystate.h"
#include "py/pywalk.h"
#include "util.h"

/* Bytes of glibc's struct pthread searched for the tid field. */
#define PTHREAD_SCAN_BYTES 1024
/* Largest span of PyInterpreterState read for next and the threads. */
#define INTERP_HEAD_MAX 4096

static const char *const drop_names[DROP_NR] = {
    [DROP_NONE] = "none",	   [DROP_READ] = "failed reads",
    [DROP_INVALID] = "torn reads", [DROP_DEPTH] = "too deep",
    [DROP_GONE] = "process gone",
};

const char *thread_state_name(enum py_thread_state state)
{
	static const char *const names[] = {
	    [THREAD_UNKNOWN] = "unknown",
	    [THREAD_RUNNING] = "running",
	    [THREAD_IDLE] = "idle",
	    [THREAD_GIL_WAIT] = "waiting for the GIL",
	};

	if (state < 0 || state >= (int)ARRAY_SIZE(names))
		return "unknown";
	return names[state];
}

const char *drop_reason_name(enum drop_reason reason)
{
	if (reason < 0 || reason >= DROP_NR)
		return "unknown";
	return drop_names[reason];
}

void py_sampler_grow_iov(struct py_sampler *ps, size_t n)
{
	size_t a = ps->alloc_iov;

	ALLOC_GROW(ps->local, n, a);
	a = ps->alloc_iov;
	ALLOC_GROW(ps->remote, n, a);
	ps->alloc_iov = a;
}

void py_sampler_set_iov(struct py_sampler *ps, size_t i, void *buf,
			uint64_t addr, size_t len)
{
	ps->local[i].iov_base = buf;
	ps->local[i].iov_len = len;
	ps->remote[i].iov_base = (void *)(uintptr_t)addr;
	ps->remote[i].iov_len = len;
}

enum drop_reason py_read_error(int r)
{
	return r == -ESRCH ? DROP_GONE : DROP_READ;
}

void py_sample_release(struct py_sample *s)
{
	free(s->threads);
	free(s->frames);
	free(s->tasks);
	free(s->awaiters);
	memset(s, 0, sizeof(*s));
}

void py_sample_keep_states(struct py_sample *s, const struct py_thread *before,
			   size_t n)
{
	size_t i, j;

	for (i = 0; i < s->nr_threads; i++) {
		/* A waiting task's stack (--async): idle whatever its thread */
		if (s->threads[i].is_task)
			continue;
		for (j = 0; j < n; j++) {
			if (before[j].ident != s->threads[i].ident)
				continue;
			s->threads[i].state = before[j].state;
			s->threads[i].holds_gil = before[j].holds_gil;
		}
	}
}

void py_sampler_init(struct py_sampler *ps, const struct pyruntime *rt)
{
	const struct py_offsets *off = rt->off;
	long frame_len =
	    off->frame_size != OFF_NONE ? off->frame_size : off->iframe_size;

	memset(ps, 0, sizeof(*ps));
	ps->rt = rt;
	pycode_cache_init(&ps->codes, rt);
	ps->tstate_buf = xcalloc(1, (size_t)off->tstate_size);
	ps->fresh_tstate = xcalloc(1, (size_t)off->tstate_size);
	/* Room for what a generator keeps before its frame, too. */
	ps->frame_buf = xcalloc(1, (size_t)frame_len + PY_FRAME_PREFIX_MAX);
	ps->pthread_tid_at = -1;
	tidmap_init(&ps->tidmap, rt->pid);
	/* 3.11: nothing tells a frame being pushed (see calledge.h). */
	if (off->hexversion >= 0x030b0000 && off->hexversion < 0x030c0000)
		ps->call_edges.checks = CALL_EDGE_CHECKS_UNGUARDED;
	/* 3.14+: pairs read again until they hold (see there). */
	if (off->hexversion >= 0x030e0000) {
		ps->call_edges.checks = CALL_EDGE_CHECKS_POLLED;
		ps->call_edges.window = CALL_EDGE_WINDOW;
	}
}

void py_sampler_release(struct py_sampler *ps)
{
	size_t i;

	if (ps->gc_code)
		pycode_stand_in_free(ps->gc_code);
	pycode_cache_release(&ps->codes);
	free(ps->tstate_buf);
	free(ps->side_memos);
	free(ps->side_buf);
	free(ps->pre_tstates);
	free(ps->tstate_bufs);
	free(ps->pre_head);
	free(ps->fresh_tstate);
	free(ps->frame_buf);
	for (i = 0; i < ps->alloc_chunks; i++)
		free(ps->chunks[i].buf);
	for (i = 0; i < PY_WINDOWS; i++)
		free(ps->windows[i].buf);
	free(ps->chunks);
	free(ps->code_addrs);
	free(ps->frame_addrs);
	free(ps->addrqs);
	free(ps->entries);
	free(ps->tlbcs);
	free(ps->tlbc_arrays);
	free(ps->spare.code_addrs);
	free(ps->spare.frame_addrs);
	free(ps->spare.tlbc_arrays);
	free(ps->spare.addrqs);
	free(ps->spare.entries);
	free(ps->spare.gen_frames);
	free(ps->gen_frames);
	free(ps->stop_keys);
	free(ps->gen_callers);
	call_edges_release(&ps->gen_edges);
	free(ps->spare.tlbcs);
	free(ps->tlbc_words);
	free(ps->tlbc_slots);
	free(ps->headers);
	free(ps->codes_read);
	free(ps->pre_idents);
	free(ps->pre_tids);
	free(ps->local);
	free(ps->remote);
	free(ps->tids);
	frameobj_release(ps);
	free(ps->links);
	free(ps->link_buf);
	call_edges_release(&ps->call_edges);
	free(ps->edge_checks);
	free(ps->edge_buf);
	for (i = 0; i < ps->alloc_pre_chunks; i++) {
		free(ps->pre_chunks[i].fresh);
		free(ps->pre_chunks[i].buf);
		free(ps->pre_chunks[i].side);
	}
	free(ps->pre_chunks);
	free(ps->pre_walk);
	pystate_release(ps);
	tidmap_release(&ps->tidmap);
	free(ps->names);
	memset(ps, 0, sizeof(*ps));
}

void py_thread_set_tid(struct py_sampler *ps, struct py_thread *t,
		       long inner)
{
	t->tid = tidmap_outer(&ps->tidmap, inner);
	t->inner_tid = ps->tidmap.nested && t->tid ? inner : 0;
}

static int is_task(const long *tids, size_t n, long tid)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (tids[i] == tid)
			return 1;
	return 0;
}

/*
 * Up to 3.10 the thread state has no native id, but glibc's struct
 * pthread (at the address of pthread_t) holds the tid.  Its offset
 * varies between glibc builds: find the first offset at which every
 * thread's struct holds one of the process's task ids (as it sees them),
 * a different one for each thread.  A thread that exits while it is
 * looked at (its tid already cleared or reaped) may miss, so with three
 * threads or more one miss is allowed.
 *
 * In a container the ids are small (1 for its first process), and many
 * a field holds such a number: first the tid is looked for where glibc
 * keeps it, right after the thread's list node (two links to other
 * threads' nodes or to the list's head, never null); only where no such
 * place fits (another C library) anywhere that fits.
 */
static int after_list_node(const unsigned char *p, long at)
{
	uint64_t next, prev;

	if (at < 16)
		return 0;
	memcpy(&next, p + at - 16, 8);
	memcpy(&prev, p + at - 8, 8);
	return next && prev && !(next & 7) && !(prev & 7);
}

/* The offset, in n copies of struct pthread, -1 if none fits. */
static long scan_pthread_tid(const unsigned char *bufs, size_t n,
			     const long *tasks, size_t nr_tasks,
			     int after_node)
{
	size_t i, j;
	long at;

	for (at = 0; at + 4 <= PTHREAD_SCAN_BYTES; at += 4) {
		size_t misses = 0;

		for (i = 0; i < n; i++) {
			const unsigned char *p = bufs + i * PTHREAD_SCAN_BYTES;
			int32_t v, w;
			int miss;

			memcpy(&v, p + at, 4);
			miss = v <= 0 || !is_task(tasks, nr_tasks, v) ||
			       (after_node && !after_list_node(p, at));
			for (j = 0; !miss && j < i; j++) {
				memcpy(&w, bufs + j * PTHREAD_SCAN_BYTES + at,
				       4);
				miss = w == v;
			}
			if (miss && ++misses > (n >= 3 ? 1u : 0u))
				break;
		}
		if (i == n)
			return at;
	}
	return -1;
}

static void find_pthread_tid_offset(struct py_sampler *ps,
				    const struct py_sample *out,
				    const long *tasks, size_t nr_tasks)
{
	unsigned char *bufs;
	size_t i, n = out->nr_threads;

	if (!n || n > 64)
		return;
	bufs = xmalloc(n * PTHREAD_SCAN_BYTES);
	/* An unreadable struct (its thread gone) reads as zeros: a miss. */
	for (i = 0; i < n; i++)
		if (proc_read(ps->rt->pid, out->threads[i].ident,
			      bufs + i * PTHREAD_SCAN_BYTES,
			      PTHREAD_SCAN_BYTES))
			memset(bufs + i * PTHREAD_SCAN_BYTES, 0,
			       PTHREAD_SCAN_BYTES);
	ps->pthread_tid_at = scan_pthread_tid(bufs, n, tasks, nr_tasks, 1);
	if (ps->pthread_tid_at < 0)
		ps->pthread_tid_at =
		    scan_pthread_tid(bufs, n, tasks, nr_tasks, 0);
	free(bufs);
}

static void fill_native_tids(struct py_sampler *ps, struct py_sample *out)
{
	long tasks[PY_MAX_THREADS];
	size_t nr_tasks, i, nio = 0;
	int32_t tids[PY_MAX_THREADS];
	size_t slot[PY_MAX_THREADS];

	if (ps->pthread_tid_at < 0) {
		nr_tasks = tidmap_inner_tasks(&ps->tidmap, tasks,
					      ARRAY_SIZE(tasks));
		find_pthread_tid_offset(ps, out, tasks, nr_tasks);
		if (ps->pthread_tid_at < 0)
			return;
	}
	py_sampler_grow_iov(ps, out->nr_threads);
	for (i = 0; i < out->nr_threads && nio < PY_MAX_THREADS; i++) {
		/* known_idle() may have read this one already. */
		if (out->threads[i].tid)
			continue;
		slot[nio] = i;
		py_sampler_set_iov(
		    ps, nio, &tids[nio],
		    out->threads[i].ident + (uint64_t)ps->pthread_tid_at, 4);
		nio++;
	}
	if (!nio || proc_readv(ps->rt->pid, ps->local, ps->remote, nio) < 0)
		return;
	for (i = 0; i < nio; i++)
		py_thread_set_tid(ps, &out->threads[slot[i]],
				  tids[i] > 0 ? tids[i] : 0);
}

/*
 * Reads of a thread's stack before its sample is dropped as torn.  On
 * generator-heavy code at 1 kHz (tests/targets/fastgen.py), 2 dropped
 * 6-11% of samples, 6 under 0.3%; but CPython 3.13's own json tests
 * (python -m test test_json: json's generators, made anew for each
 * object, suspend between a read of the thread state and of their frame)
 * lost 11-15% with 6, 3-4% with 12, 1-3% with 16.  A read costs some
 * 15 us: a sample that tears every time costs 0.25 ms.
 */
#define WALK_TRIES 16

/* Move frames [from, from + n) of the walk arrays to index to. */
static void move_frames(struct py_sampler *ps, size_t to, size_t from,
			size_t n)
{
	memmove(ps->code_addrs + to, ps->code_addrs + from,
		n * sizeof(*ps->code_addrs));
	memmove(ps->frame_addrs + to, ps->frame_addrs + from,
		n * sizeof(*ps->frame_addrs));
	memmove(ps->addrqs + to, ps->addrqs + from, n * sizeof(*ps->addrqs));
	memmove(ps->entries + to, ps->entries + from,
		n * sizeof(*ps->entries));
	memmove(ps->gen_frames + to, ps->gen_frames + from,
		n * sizeof(*ps->gen_frames));
	memmove(ps->tlbcs + to, ps->tlbcs + from, n * sizeof(*ps->tlbcs));
	memmove(ps->tlbc_arrays + to, ps->tlbc_arrays + from,
		n * sizeof(*ps->tlbc_arrays));
}

/* Make room for frames up to index n - 1 in the walk arrays. */
static void walk_room(struct py_sampler *ps, struct py_sample *out, size_t n)
{
	size_t keep = out->nr_frames;

	if (n <= ps->alloc_walk)
		return;
	out->nr_frames = n - 1;
	pywalk_push(ps, out, 0, 0, 0, 0);
	out->nr_frames = keep;
}

static struct gen_callers *gen_callers_slot(struct py_sampler *ps,
					    uint64_t frame)
{
	/* Fibonacci hashing: frames inside objects of one size share low bits */
	size_t slot = (size_t)((frame * 0x9e3779b97f4a7c15ull) >> 56);

	if (!ps->gen_callers)
		ps->gen_callers = xcalloc(GEN_CALLERS_SLOTS,
					  sizeof(*ps->gen_callers));
	return &ps->gen_callers[slot % GEN_CALLERS_SLOTS];
}

/* Fill key from frame i of the walk arrays. */
static void key_from_walk(const struct py_sampler *ps, size_t i,
			  struct walk_key *key)
{
	key->frame = ps->frame_addrs[i];
	key->code = ps->code_addrs[i];
	key->addrq = ps->addrqs[i];
	key->tlbc = ps->tlbcs[i];
	key->tlbc_array = ps->tlbc_arrays[i];
	key->entry = ps->entries[i];
	key->line_known = 1;
}

/* Fill key from the frame the last walk tore at (ps->torn_at). */
static void key_from_torn_at(const struct py_sampler *ps, struct walk_key *key)
{
	memset(key, 0, sizeof(*key));
	key->frame = ps->torn_at;
	key->code = ps->torn_at_code;
	key->addrq = ps->torn_at_addrq;
	key->line_known = ps->torn_at_addrq >= 0;
}

/*
 * Learn the calls to and from generators' frames of t's stack, just
 * walked: a whole one, or the frames a torn walk took before it tore.
 */
static void learn_gen_edges(struct py_sampler *ps, const struct py_thread *t)
{
	size_t i, end = t->first + t->depth;

	for (i = t->first; i + 1 < end; i++) {
		struct call_edge e = {ps->code_addrs[i + 1], ps->code_addrs[i]};

		if ((!ps->gen_frames[i] && !ps->gen_frames[i + 1]) ||
		    !ps->frame_addrs[i] || !ps->frame_addrs[i + 1])
			continue;
		if (!call_edges_has(&ps->gen_edges, &e))
			call_edges_add(&ps->gen_edges, &e, ps->sample_stamp);
	}
}

/*
 * Remember what is under each generator's frame of t's stack, just
 * walked: a whole stack, or the frames a torn walk took before it tore
 * (each passed its own checks: a generator's frame links to its caller
 * only while it runs), where they reach a frame that is not a
 * generator's.  A torn walk whose frames are all generators' reaches
 * further through the frame it tore at (linked from the last it took)
 * and what was under that one when last remembered: in a `yield from`
 * chain the innermost generator runs for a microsecond, and a walk that
 * takes the whole chain while it runs may not come for seconds, while
 * one that takes it and its caller comes soon.
 */
static void remember_gen_callers(struct py_sampler *ps,
				 const struct py_thread *t, int torn)
{
	size_t i, j, end = t->first + t->depth, walked;

	for (walked = t->first; walked < end && ps->frame_addrs[walked];)
		walked++;
	for (i = t->first; i < walked; i++) {
		struct walk_key under[WALK_KEY_MAX - 1];
		struct gen_callers *gc;
		const struct gen_callers *next;
		size_t n = 0, k;
		int whole = 0, last_gen = 1;

		if (!ps->gen_frames[i])
			continue;
		for (j = i + 1; j < walked && n < WALK_KEY_MAX - 1; j++) {
			key_from_walk(ps, j, &under[n++]);
			if (!ps->gen_frames[j]) {
				whole = 1;
				break;
			}
		}
		if (!whole && j == walked && torn && ps->torn_at &&
		    ps->torn_at_code && n < WALK_KEY_MAX - 1) {
			key_from_torn_at(ps, &under[n++]);
			last_gen = ps->torn_at_gen;
			whole = !last_gen;
		}
		if (!whole && last_gen && n && j == walked) {
			next = gen_callers_slot(ps, under[n - 1].frame);
			if (next->nr && next->frame == under[n - 1].frame &&
			    next->code == under[n - 1].code &&
			    n + next->nr <= WALK_KEY_MAX - 1) {
				for (k = 0; k < next->nr; k++)
					under[n++] = next->under[k];
				whole = 1;
			}
		}
		if (!whole)
			continue;
		gc = gen_callers_slot(ps, ps->frame_addrs[i]);
		memcpy(gc->under, under, n * sizeof(*under));
		gc->frame = ps->frame_addrs[i];
		gc->code = ps->code_addrs[i];
		gc->nr = n;
	}
}

/*
 * Keep, as the key of t's torn read, its innermost frame and the
 * generators' frames under it, up to the first frame that is not a
 * generator's; returns how many.  A read that tore at a frame it had
 * read, past the frames it took, gives that frame too: it was the one
 * linked from the last of them when that was copied (a generator's link
 * to its caller is set only while it runs), whatever its copy held
 * later; on code that hands over faster than a read, most torn reads
 * end so.  Its line is the one its copy held.
 */
static size_t take_key(struct py_sampler *ps, const struct py_thread *t,
		       struct walk_key *key)
{
	size_t i, n = 0;

	for (i = t->first; i < t->first + t->depth && n < WALK_KEY_MAX; i++) {
		if (!ps->frame_addrs[i])
			break;
		key_from_walk(ps, i, &key[n++]);
		if (!ps->gen_frames[i])
			return n;
	}
	if (n < WALK_KEY_MAX && ps->torn_at && ps->torn_at_code) {
		key_from_torn_at(ps, &key[n++]);
		if (!ps->torn_at_gen)
			return n;
	}
	/* the last a generator's: what was under it when last read whole */
	if (n && n < WALK_KEY_MAX) {
		const struct gen_callers *gc =
			gen_callers_slot(ps, key[n - 1].frame);

		if (gc->nr && gc->frame == key[n - 1].frame &&
		    gc->code == key[n - 1].code) {
			for (i = 0; i < gc->nr && n < WALK_KEY_MAX; i++)
				key[n++] = gc->under[i];
		}
	}
	return n;
}

/*
 * Does t's stack, just walked whole, hold the key's innermost frame (at
 * the same place, running the same code), or the frame under the
 * key's generators?  If so, it is cut there and the key's frames above
 * it put back on top: the stack is what the thread ran when the sample
 * was asked, its callers read whole.  A generator's link to its caller
 * is set only while it runs: its frame, read with that link, was linked
 * so at that moment.
 */
static int cut_at_key(struct py_sampler *ps, struct py_thread *t,
		      struct py_sample *out, const struct walk_key *key,
		      size_t nr_key)
{
	size_t i = 0, j, k, end = t->first + t->depth, rest;

	for (j = 0; j < nr_key; j++) {
		for (i = t->first; i < end; i++)
			if (ps->frame_addrs[i] == key[j].frame &&
			    ps->code_addrs[i] == key[j].code)
				break;
		if (i < end)
			break;
	}
	if (j == nr_key)
		return 0;
	/* every call put back made by the program, as seen before */
	for (k = 0; k < j; k++) {
		struct call_edge e = {k + 1 < j ? key[k + 1].code
						: ps->code_addrs[i],
				      key[k].code};

		if (!call_edges_has(&ps->gen_edges, &e))
			return 0;
	}
	rest = end - i;
	walk_room(ps, out, t->first + j + rest);
	move_frames(ps, t->first + j, i, rest);
	for (i = 0; i < j; i++) {
		size_t at = t->first + i;

		ps->frame_addrs[at] = key[i].frame;
		ps->code_addrs[at] = key[i].code;
		ps->addrqs[at] = key[i].addrq;
		ps->entries[at] = key[i].entry;
		ps->gen_frames[at] = 1;
		ps->tlbcs[at] = key[i].tlbc;
		ps->tlbc_arrays[at] = key[i].tlbc_array;
	}
	/* the key's frame on the line it ran then */
	if (key[j].line_known) {
		ps->addrqs[t->first + j] = key[j].addrq;
		ps->tlbcs[t->first + j] = key[j].tlbc;
		ps->tlbc_arrays[t->first + j] = key[j].tlbc_array;
	}
	t->depth = j + rest;
	out->nr_frames = t->first + t->depth;
	return 1;
}

static void spare_grow(struct walk_spare *sp, size_t n)
{
	size_t a = sp->alloc;

	ALLOC_GROW(sp->code_addrs, n, a);
	a = sp->alloc;
	ALLOC_GROW(sp->frame_addrs, n, a);
	a = sp->alloc;
	ALLOC_GROW(sp->tlbc_arrays, n, a);
	a = sp->alloc;
	ALLOC_GROW(sp->addrqs, n, a);
	a = sp->alloc;
	ALLOC_GROW(sp->entries, n, a);
	a = sp->alloc;
	ALLOC_GROW(sp->gen_frames, n, a);
	a = sp->alloc;
	ALLOC_GROW(sp->tlbcs, n, a);
	sp->alloc = a;
}

/* Keep t's stack, just walked, in ps->spare. */
static void spare_keep(struct py_sampler *ps, const struct py_thread *t)
{
	struct walk_spare *sp = &ps->spare;
	size_t n = t->depth, f = t->first;

	spare_grow(sp, n + 1);
	memcpy(sp->code_addrs, ps->code_addrs + f, n * sizeof(*sp->code_addrs));
	memcpy(sp->frame_addrs, ps->frame_addrs + f,
	       n * sizeof(*sp->frame_addrs));
	memcpy(sp->tlbc_arrays, ps->tlbc_arrays + f,
	       n * sizeof(*sp->tlbc_arrays));
	memcpy(sp->addrqs, ps->addrqs + f, n * sizeof(*sp->addrqs));
	memcpy(sp->entries, ps->entries + f, n * sizeof(*sp->entries));
	memcpy(sp->gen_frames, ps->gen_frames + f, n * sizeof(*sp->gen_frames));
	memcpy(sp->tlbcs, ps->tlbcs + f, n * sizeof(*sp->tlbcs));
	sp->nr = n;
	sp->root_frame = t->root_frame;
	sp->omitted = t->omitted;
}

/* Put the stack kept in ps->spare back as t's, at t->first. */
static void spare_restore(struct py_sampler *ps, struct py_thread *t,
			  struct py_sample *out)
{
	const struct walk_spare *sp = &ps->spare;
	size_t n = sp->nr, f = t->first;

	walk_room(ps, out, f + n);
	memcpy(ps->code_addrs + f, sp->code_addrs, n * sizeof(*sp->code_addrs));
	memcpy(ps->frame_addrs + f, sp->frame_addrs,
	       n * sizeof(*sp->frame_addrs));
	memcpy(ps->tlbc_arrays + f, sp->tlbc_arrays,
	       n * sizeof(*sp->tlbc_arrays));
	memcpy(ps->addrqs + f, sp->addrqs, n * sizeof(*sp->addrqs));
	memcpy(ps->entries + f, sp->entries, n * sizeof(*sp->entries));
	memcpy(ps->gen_frames + f, sp->gen_frames, n * sizeof(*sp->gen_frames));
	memcpy(ps->tlbcs + f, sp->tlbcs, n * sizeof(*sp->tlbcs));
	out->nr_frames = f + n;
	t->depth = n;
	t->root_frame = sp->root_frame;
	t->omitted = sp->omitted;
}

/* Keep t's key for the read made once it is stopped. */
static void keep_stop_key(struct py_sampler *ps, const struct py_thread *t,
			  const struct walk_key *key, size_t nr_key)
{
	struct walk_stop_key *sk;

	ALLOC_GROW(ps->stop_keys, ps->nr_stop_keys + 1, ps->alloc_stop_keys);
	sk = &ps->stop_keys[ps->nr_stop_keys++];
	sk->ident = t->ident;
	sk->nr = nr_key;
	memcpy(sk->key, key, nr_key * sizeof(*key));
}

/* The key the first read of t's stack left, NULL if none. */
static const struct walk_stop_key *find_stop_key(const struct py_sampler *ps,
						 const struct py_thread *t)
{
	size_t i;

	for (i = 0; i < ps->nr_stop_keys; i++)
		if (ps->stop_keys[i].ident == t->ident)
			return &ps->stop_keys[i];
	return NULL;
}

/*
 * Walk t's frames, from the copy of its thread state in ps->tstate_buf,
 * onto the end of out.  A chain that was torn (it changed while it was
 * read) or could not be read through is read again from a fresh copy
 * of the thread state: the thread has moved on, and dropping the whole
 * sample instead would bias against code that calls a lot.
 *
 * Taking whatever a later read finds biases too: a generator resumed
 * for one item lives a few microseconds, tears most reads made while it
 * runs, and its later whole reads find its caller.  So the first torn
 * read that found a frame is the sample's key: the frame the thread ran
 * then, and the generators under it.  A later whole read that holds one
 * of them (same place, same code) is cut there, the key's frames above
 * it put back; only if none does is the first whole read taken.  On
 * generator-heavy code this moves shares towards those of stopped
 * reads (see tests/test_accuracy.py).
 *
 * With ps->stop_reads the thread is left to the read made while it is
 * stopped (t->torn), whole but of a later moment: --blocking's key is
 * kept for it, and that read cut at the key in the same way (not with
 * --native, whose native frames are of the moment stopped).
 */
static enum drop_reason walk_thread(struct py_sampler *ps, struct py_thread *t,
				    struct py_sample *out)
{
	struct walk_key key[WALK_KEY_MAX];
	size_t nr_key = 0;
	int have_spare = 0;
	enum drop_reason why;
	int attempt, r;

	ps->walks++;
	for (attempt = 0;; attempt++) {
		int torn;

		t->first = out->nr_frames;
		ps->root_frame = 0;
		ps->moved = attempt;
		why = pyframe_walk(ps, t->tstate, out);
		t->root_frame = ps->root_frame;
		t->omitted = ps->omitted;
		t->depth = out->nr_frames - t->first;
		torn = why == DROP_INVALID || why == DROP_READ;
		t->torn = 0;
		/*
		 * Up to 3.10 a torn walk's frames each held when taken; from
		 * 3.11 a walk may still be found torn once all are taken.
		 */
		if (!why || (torn && ps->rt->off->tstate_frame != OFF_NONE))
			learn_gen_edges(ps, t);
		if (!why || torn)
			remember_gen_callers(ps, t, torn);
		if (torn && ps->stop_reads) {
			if (ps->stop_reads == STOP_READS_TORN) {
				nr_key = take_key(ps, t, key);
				if (nr_key)
					keep_stop_key(ps, t, key, nr_key);
			}
			/* Read again, and exactly, once it is stopped. */
			out->nr_frames = t->first;
			t->depth = 0;
			t->torn = 1;
			return DROP_NONE;
		}
		if (!why && !attempt && ps->nr_stop_keys) {
			const struct walk_stop_key *sk = find_stop_key(ps, t);

			if (sk)
				cut_at_key(ps, t, out, sk->key, sk->nr);
			break;
		}
		if (torn && !nr_key)
			nr_key = take_key(ps, t, key);
		if (!why && nr_key) {
			if (cut_at_key(ps, t, out, key, nr_key))
				break;
			if (!have_spare) {
				spare_keep(ps, t);
				have_spare = 1;
			}
			why = DROP_INVALID;
			torn = 1;
		}
		if (attempt + 1 >= WALK_TRIES || !torn) {
			if (torn && have_spare) {
				spare_restore(ps, t, out);
				break;
			}
			if (!why)
				break;
			return why;
		}
		out->nr_frames = t->first;
		r = proc_read(ps->rt->pid, t->tstate, ps->tstate_buf,
			      (size_t)ps->rt->off->tstate_size);
		if (r)
			return py_read_error(r);
	}
	if (attempt)
		ps->walks_again++;
	return DROP_NONE;
}

/*
 * Does t's stack start where a thread's must?  A generator's or a
 * coroutine's frame is never a thread's first: reached as the last
 * frame, the chain was read while that generator was suspending or
 * resuming, and its link to its caller was missed.  (Frames past the
 * depth limit are not read: nothing to tell then.)
 */
static int starts_at_root(const struct py_sample *out,
			  const struct py_thread *t)
{
	const struct pycode *root;

	if (!t->depth || t->omitted)
		return 1;
	root = out->frames[t->first + t->depth - 1].code;
	return !(root->flags & PYCODE_SUSPENDABLE);
}

/*
 * Read again, once, the stacks of out's threads that do not start where
 * they must.  Returns DROP_INVALID if one still does not.
 */
static enum drop_reason check_roots(struct py_sampler *ps,
				    struct py_sample *out)
{
	size_t i, from = out->nr_frames;
	enum drop_reason why = DROP_NONE;
	int r;

	for (i = 0; i < out->nr_threads && !why; i++) {
		struct py_thread *t = &out->threads[i];

		if (starts_at_root(out, t))
			continue;
		r = proc_read(ps->rt->pid, t->tstate, ps->tstate_buf,
			      (size_t)ps->rt->off->tstate_size);
		why = r ? py_read_error(r) : walk_thread(ps, t, out);
		/* One stack, read again: not a second one. */
		ps->walks--;
		if (!why)
			ps->walks_again++;
	}
	if (!why && out->nr_frames > from)
		why = pyresolve_frames(ps, out, from);
	for (i = 0; i < out->nr_threads && !why; i++)
		if (!starts_at_root(out, &out->threads[i]))
			why = DROP_INVALID;
	return why;
}

/*
 * Leave the interpreter's own frames (pycode's hidden) out of out's
 * threads' stacks, with the walk's arrays kept beside them.  A frame
 * left out that started its C eval call hands that to its callee.
 */
static void drop_hidden_frames(struct py_sampler *ps, struct py_sample *out)
{
	size_t i, j, w;

	for (i = 0; i < out->nr_threads; i++) {
		struct py_thread *t = &out->threads[i];

		for (j = w = t->first; j < t->first + t->depth; j++) {
			const struct py_frame *fr = &out->frames[j];

			if (fr->code->hidden) {
				if (fr->entry && w > t->first) {
					out->frames[w - 1].entry = fr->entry;
					ps->entries[w - 1] = fr->entry;
				}
				continue;
			}
			if (w != j) {
				out->frames[w] = *fr;
				move_frames(ps, w, j, 1);
			}
			w++;
		}
		t->depth = w - t->first;
	}
}

/* Where the pointer to the first interpreter is, when one read gets it. */
static uint64_t interp_head_addr(const struct pyruntime *rt)
{
	if (rt->runtime)
		return rt->runtime +
		       (uint64_t)rt->off->runtime_interpreters_head;
	return rt->interp_head;
}

/* The interpreter fields read together: [lo, hi + 8) of it. */
static void interp_head_span(const struct py_offsets *off, long *lo, long *hi)
{
	*lo = off->interp_next < off->interp_threads_head
		  ? off->interp_next
		  : off->interp_threads_head;
	*hi = off->interp_next < off->interp_threads_head
		  ? off->interp_threads_head
		  : off->interp_next;
}

/* Where interp's cycle collector says whether it runs; 0 if unknown. */
static uint64_t gc_flag_addr(const struct py_sampler *ps, uint64_t interp)
{
	const struct pyruntime *rt = ps->rt;
	const struct py_offsets *off = rt->off;

	if (rt->gc_collecting)
		return rt->gc_collecting;
	if (off->runtime_gc_collecting != OFF_NONE && rt->runtime)
		return rt->runtime + (uint64_t)off->runtime_gc_collecting;
	if (off->interp_gc_collecting != OFF_NONE && interp)
		return interp + (uint64_t)off->interp_gc_collecting;
	return 0;
}

/*
 * Whether the cycle collector of interp runs (0 where it cannot be
 * told): as read with the thread states when prefetched (n of them).
 * CPython sets the flag to 1, nothing else: a word read wrong is seldom
 * that.
 */
static int gc_collecting(struct py_sampler *ps, uint64_t interp, size_t n)
{
	uint64_t at;
	int32_t collecting;

	if (!ps->want_gc)
		return 0;
	if (n && ps->pre_gc_read)
		return ps->pre_gc == 1;
	at = gc_flag_addr(ps, interp);
	if (!at || proc_read(ps->rt->pid, at, &collecting, sizeof(collecting)))
		return 0;
	return collecting == 1;
}

/*
 * Read the last sample's thread states again, with the pointer to the
 * interpreter and the interpreter's head, in one process_vm_readv: their
 * addresses are known in advance.  When every link still holds (the same
 * only interpreter, its first thread state, each one's next, the last
 * one's none, each one's interpreter), the sample needs no other read to
 * find its threads.  Returns how many thread states are in
 * ps->tstate_bufs, in order; 0 when they must be found one by one.
 */
static size_t prefetch_threads(struct py_sampler *ps)
{
	const struct py_offsets *off = ps->rt->off;
	size_t n = ps->nr_pre, size = (size_t)off->tstate_size, i;
	uint64_t head_addr = interp_head_addr(ps->rt), interp = 0, next, gc_at;
	size_t nio;
	long lo, hi;

	if (!n || !head_addr)
		return 0;
	interp_head_span(off, &lo, &hi);
	py_sampler_grow_iov(ps, 2 * n + 3);
	py_sampler_set_iov(ps, 0, &interp, head_addr, sizeof(interp));
	py_sampler_set_iov(ps, 1, ps->pre_head, ps->pre_interp + (uint64_t)lo,
			   (size_t)(hi + 8 - lo));
	for (i = 0; i < n; i++)
		py_sampler_set_iov(ps, i + 2, ps->tstate_bufs + i * size,
				   ps->pre_tstates[i], size);
	nio = n + 2;
	/*
	 * Up to 3.10, each thread's tid too, from its struct pthread: good
	 * when the thread state still names that pthread_t (new_thread).
	 */
	memset(ps->pre_tids, 0, n * sizeof(*ps->pre_tids));
	if (off->tstate_native_thread_id == OFF_NONE &&
	    ps->pthread_tid_at >= 0) {
		for (i = 0; i < n; i++) {
			if (ps->pre_idents[i])
				py_sampler_set_iov(
				    ps, nio++, &ps->pre_tids[i],
				    ps->pre_idents[i] +
					(uint64_t)ps->pthread_tid_at,
				    sizeof(ps->pre_tids[i]));
		}
	}
	/* The collector's flag, in the same read (a system call less). */
	ps->pre_gc = 0;
	gc_at = ps->want_gc ? gc_flag_addr(ps, ps->pre_interp) : 0;
	ps->pre_gc_read = gc_at != 0;
	if (gc_at)
		py_sampler_set_iov(ps, nio++, &ps->pre_gc, gc_at,
				   sizeof(ps->pre_gc));
	/* Regions that failed read as zeros: no tid, and no link holds. */
	if (proc_readv(ps->rt->pid, ps->local, ps->remote, nio) <
		(int)(n + 2) ||
	    interp != ps->pre_interp ||
	    load_u64(ps->pre_head, off->interp_next - lo) ||
	    load_u64(ps->pre_head, off->interp_threads_head - lo) !=
		ps->pre_tstates[0])
		return 0;
	for (i = 0; i < n; i++) {
		const unsigned char *buf = ps->tstate_bufs + i * size;

		next = i + 1 < n ? ps->pre_tstates[i + 1] : 0;
		if (load_u64(buf, off->tstate_interp) != interp ||
		    load_u64(buf, off->tstate_next) != next)
			return 0;
	}
	return n;
}

/* Keep this sample's thread states for prefetch_threads: nr of them. */
static void remember_threads(struct py_sampler *ps, uint64_t interp,
			     const struct py_sample *out, size_t nr)
{
	size_t i, size = (size_t)ps->rt->off->tstate_size;

	ps->nr_pre = 0;
	if (!interp || !nr)
		return;
	ALLOC_GROW(ps->pre_tstates, nr, ps->alloc_pre);
	ALLOC_GROW(ps->pre_idents, nr, ps->alloc_pre_idents);
	ALLOC_GROW(ps->pre_tids, nr, ps->alloc_pre_tids);
	if (ps->alloc_tstate_bufs < nr) {
		free(ps->tstate_bufs);
		ps->tstate_bufs = xmalloc(nr * size);
		ps->alloc_tstate_bufs = nr;
	}
	if (!ps->pre_head)
		ps->pre_head = xmalloc(INTERP_HEAD_MAX);
	for (i = 0; i < nr; i++) {
		ps->pre_tstates[i] = out->threads[i].tstate;
		ps->pre_idents[i] = out->threads[i].ident;
	}
	ps->pre_interp = interp;
	ps->nr_pre = nr;
}

static int compare_idents(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void py_sampler_walk_only(struct py_sampler *ps, uint64_t *idents, size_t n)
{
	if (idents)
		qsort(idents, n, sizeof(*idents), compare_idents);
	ps->walk_only = idents;
	ps->nr_walk_only = idents ? n : 0;
}

/* Whether ps->walk_only, if set, has the thread with this ident. */
static int walk_wanted(const struct py_sampler *ps, uint64_t ident)
{
	return !ps->walk_only ||
	       bsearch(&ident, ps->walk_only, ps->nr_walk_only,
		       sizeof(*ps->walk_only), compare_idents);
}

/*
 * Add the thread whose thread state, at tstate, ps->tstate_buf holds a
 * copy of, without walking it; it is marked skipped if it is idle and
 * its frames are not wanted, or ps->walk_only leaves it out.
 */
static struct py_thread *new_thread(struct py_sampler *ps, uint64_t tstate,
				    uint64_t ident, long tid,
				    struct py_sample *out)
{
	const struct py_offsets *off = ps->rt->off;
	struct py_thread *t;

	ALLOC_GROW(out->threads, out->nr_threads + 1, out->alloc_threads);
	t = &out->threads[out->nr_threads++];
	t->ident = load_u64(ps->tstate_buf, off->tstate_thread_id);
	py_thread_set_tid(
	    ps, t,
	    off->tstate_native_thread_id == OFF_NONE
		? 0
		: (long)load_u64(ps->tstate_buf, off->tstate_native_thread_id));
	/* A tid read beside this copy, of the struct pthread it names. */
	if (!t->tid && ident && ident == t->ident && tid > 0)
		py_thread_set_tid(ps, t, tid);
	t->tstate = tstate;
	t->state = THREAD_UNKNOWN;
	t->holds_gil = 0;
	t->name[0] = '\0';
	t->first = out->nr_frames;
	t->depth = t->omitted = 0;
	t->root_frame = 0;
	t->is_task = 0;
	t->torn = 0;
	t->sched = 0;
	t->attached = off->tstate_state == OFF_NONE
			  ? -1
			  : load_u32(ps->tstate_buf, off->tstate_state) ==
				(uint32_t)off->thread_attached;
	t->skipped =
	    !walk_wanted(ps, t->ident) ||
	    (ps->skip_idle && ps->want_state && pystate_known_idle(ps, t));
	return t;
}

/* new_thread, and walk its frames unless it is skipped. */
static enum drop_reason add_thread(struct py_sampler *ps, uint64_t tstate,
				   struct py_sample *out)
{
	struct py_thread *t = new_thread(ps, tstate, 0, 0, out);

	return t->skipped ? DROP_NONE : walk_thread(ps, t, out);
}

/*
 * The n threads prefetch_threads copied: added first, so that what each
 * walk reads first is read for all the threads walked at once, then
 * walked.
 */
static enum drop_reason add_prefetched(struct py_sampler *ps, size_t n,
				       struct py_sample *out)
{
	size_t tsize = (size_t)ps->rt->off->tstate_size, first, i;
	enum drop_reason why;

	first = out->nr_threads;
	ALLOC_GROW(ps->pre_walk, n, ps->alloc_pre_walk);
	for (i = 0; i < n; i++) {
		memcpy(ps->tstate_buf, ps->tstate_bufs + i * tsize, tsize);
		ps->pre_walk[i] =
		    !new_thread(ps, ps->pre_tstates[i], ps->pre_idents[i],
				ps->pre_tids[i], out)
			 ->skipped;
	}
	pyframe_prefetch(ps, ps->pre_tstates, ps->pre_walk, n);
	for (i = 0; i < n; i++) {
		struct py_thread *t = &out->threads[first + i];

		if (!ps->pre_walk[i])
			continue;
		memcpy(ps->tstate_buf, ps->tstate_bufs + i * tsize, tsize);
		why = walk_thread(ps, t, out);
		if (why)
			return why;
	}
	return DROP_NONE;
}

/*
 * Find the threads one by one: every interpreter's head, then each of
 * its thread states, walking each thread as it is found.
 */
static enum drop_reason find_threads(struct py_sampler *ps, uint64_t interp,
				     struct py_sample *out)
{
	const struct py_offsets *off = ps->rt->off;
	uint64_t first = interp;
	size_t interps = 0;
	enum drop_reason why;
	int r;

	while (interp) {
		/* Both fields in one read: they sit near the start. */
		unsigned char head[INTERP_HEAD_MAX];
		long lo, hi;
		uint64_t tstate, next_interp;
		size_t threads = 0;

		if (++interps > PY_MAX_INTERPS)
			return DROP_DEPTH;
		interp_head_span(off, &lo, &hi);
		if (hi + 8 - lo > INTERP_HEAD_MAX)
			return DROP_INVALID;
		r = proc_read(ps->rt->pid, interp + (uint64_t)lo, head,
			      (size_t)(hi + 8 - lo));
		if (r)
			return py_read_error(r);
		tstate = load_u64(head, off->interp_threads_head - lo);
		next_interp = load_u64(head, off->interp_next - lo);
		while (tstate) {
			if (++threads > PY_MAX_THREADS)
				return DROP_DEPTH;
			r = proc_read(ps->rt->pid, tstate, ps->tstate_buf,
				      (size_t)off->tstate_size);
			if (r)
				return py_read_error(r);
			if (load_u64(ps->tstate_buf, off->tstate_interp) !=
			    interp)
				return DROP_INVALID;
			why = add_thread(ps, tstate, out);
			if (why)
				return why;
			tstate = load_u64(ps->tstate_buf, off->tstate_next);
		}
		interp = next_interp;
	}
	/* One interpreter (nearly always): read its threads at once next. */
	remember_threads(ps, interps == 1 ? first : 0, out, out->nr_threads);
	return DROP_NONE;
}

/* Most threads of a sample whose tids are checked for one in two. */
#define DUP_TID_CHECK_MAX 256

/*
 * A thread with frames has a task: where its id can be read (the thread
 * state's native id, or glibc's struct pthread up to 3.10), one that
 * reads as none of the target's tasks (tidmap_outer) is a torn read,
 * not a thread to name by its pthread_t or to sample under no id.  In
 * another pid namespace a thread started in the last moments may not be
 * in the map yet: not checked there.
 */
static enum drop_reason check_tids(const struct py_sampler *ps,
				   const struct py_sample *out)
{
	size_t i, j, n = out->nr_threads;

	/*
	 * Two threads of one sample with one task: one of the two ids was
	 * read torn (a thread's id garbled into a sibling's).  Checked up
	 * to DUP_TID_CHECK_MAX threads: each against each.
	 */
	for (i = 0; n <= DUP_TID_CHECK_MAX && i < n; i++) {
		const struct py_thread *t = &out->threads[i];

		if (!t->tid || t->is_task)
			continue;
		for (j = i + 1; j < n; j++)
			if (out->threads[j].tid == t->tid &&
			    !out->threads[j].is_task)
				return DROP_INVALID;
	}
	if (ps->tidmap.nested ||
	    (ps->rt->off->tstate_native_thread_id == OFF_NONE &&
	     ps->pthread_tid_at < 0))
		return DROP_NONE;
	for (i = 0; i < n; i++) {
		const struct py_thread *t = &out->threads[i];

		if (t->depth && !t->tid && !t->is_task)
			return DROP_INVALID;
	}
	return DROP_NONE;
}

/*
 * The cycle collector runs in the thread that set it off, from start to
 * end: put a "<GC>" frame on top of that thread's stack while it runs.
 * Which thread that is is told when a collection is first seen: the
 * GIL's holder (the collector takes no GIL: it holds it); with no GIL
 * to tell (3.6 creates it with a process's second thread; a
 * free-threaded build has none), the only thread, or from 3.13 the only
 * thread attached to the interpreter (a free-threaded build's collector
 * stops every other attached thread for part of its work: until then,
 * not told).  It stays the collector while later samples see the
 * collection run: it may run Python code (gc.callbacks, finalizers),
 * and let the GIL go there, to another thread whose own code that
 * thread then runs, not the collector's; the collector's frame goes
 * back on it once it holds the GIL again.
 */
static void add_gc_frame(struct py_sampler *ps, const struct gil_view *gil,
			 struct py_sample *out)
{
	struct py_thread *holder = NULL, *attached = NULL, *only = NULL;
	size_t i, nr = 0, nr_attached = 0;

	for (i = 0; i < out->nr_threads; i++) {
		struct py_thread *t = &out->threads[i];

		if (t->is_task)
			continue;
		nr++;
		only = t;
		if (gil->locked && t->tstate == gil->holder)
			holder = t;
		if (t->attached > 0) {
			nr_attached++;
			attached = t;
		}
	}
	if (!ps->gc_collector) {
		if (gil->locked)
			ps->gc_collector = holder ? holder->tstate : 0;
		else if (nr == 1)
			ps->gc_collector = only->tstate;
		else if (nr_attached == 1)
			ps->gc_collector = attached->tstate;
	}
	holder = NULL;
	for (i = 0; ps->gc_collector && i < out->nr_threads; i++)
		if (!out->threads[i].is_task &&
		    out->threads[i].tstate == ps->gc_collector)
			holder = &out->threads[i];
	/* Holding the GIL, where there is one: else it waits for it. */
	if (holder && gil->locked && gil->holder != holder->tstate)
		holder = NULL;
	/* A thread whose frames were not read (idle, or not walked) keeps
	 * none: the frame goes over a stack, never alone. */
	if (!holder || !holder->depth)
		return;
	if (!ps->gc_code)
		ps->gc_code = pycode_stand_in("<GC>");
	/* Innermost first: it goes before the holder's first frame, in
	 * the walk's arrays too, which stay beside the frames. */
	walk_room(ps, out, out->nr_frames + 1);
	ALLOC_GROW(out->frames, out->nr_frames + 1, out->alloc_frames);
	memmove(&out->frames[holder->first + 1], &out->frames[holder->first],
		(out->nr_frames - holder->first) * sizeof(*out->frames));
	move_frames(ps, holder->first + 1, holder->first,
		    out->nr_frames - holder->first);
	out->frames[holder->first] = (struct py_frame){ps->gc_code, 0, 0};
	ps->code_addrs[holder->first] = 0;
	ps->frame_addrs[holder->first] = 0;
	ps->addrqs[holder->first] = -1;
	ps->entries[holder->first] = 0;
	ps->gen_frames[holder->first] = 0;
	ps->tlbcs[holder->first] = 0;
	ps->tlbc_arrays[holder->first] = 0;
	out->nr_frames++;
	for (i = 0; i < out->nr_threads; i++)
		if (&out->threads[i] != holder &&
		    out->threads[i].first > holder->first)
			out->threads[i].first++;
	holder->depth++;
}

enum drop_reason py_sampler_sample(struct py_sampler *ps, struct py_sample *out)
{
	const struct py_offsets *off = ps->rt->off;
	uint64_t interp;
	struct gil_view gil;
	enum drop_reason why;
	size_t n;
	int r, collecting;

	ps->sample_stamp++;
	/* The first read of a sample: keys left by the last are done with. */
	if (ps->stop_reads)
		ps->nr_stop_keys = 0;
	/* The previous sample is done with: its replaced code may go. */
	pycode_cache_collect(&ps->codes);
	/* Copies left by a sample that was dropped are stale now. */
	ps->nr_pre_chunks = 0;
	ps->nr_pre_frames = 0;
	out->nr_threads = 0;
	out->nr_frames = 0;
	out->nr_tasks = 0;
	out->nr_awaiters = 0;
	n = prefetch_threads(ps);
	if (n) {
		interp = ps->pre_interp;
	} else {
		r = pyruntime_interp_head(ps->rt, &interp);
		if (r)
			return py_read_error(r);
	}
	/* The main interpreter's GIL: the one Python threads share. */
	memset(&gil, 0, sizeof(gil));
	collecting = gc_collecting(ps, interp, n);
	if (!collecting)
		ps->gc_collector = 0;
	if ((ps->want_gil || collecting) && interp)
		pygil_read(ps, interp, &gil);
	if (n) {
		why = add_prefetched(ps, n, out);
		if (why)
			return why;
	} else {
		why = find_threads(ps, interp, out);
		if (why)
			return why;
	}
	why = pyresolve_frames(ps, out, 0);
	if (!why)
		why = check_roots(ps, out);
	if (why)
		return why;
	drop_hidden_frames(ps, out);
	if (collecting)
		add_gc_frame(ps, &gil, out);
	if (off->tstate_native_thread_id == OFF_NONE)
		fill_native_tids(ps, out);
	why = check_tids(ps, out);
	if (why)
		return why;
	if (ps->want_state || ps->want_gil)
		pystate_annotate(ps, out, &gil);
	if (ps->want_names)
		pynames_fill(ps, out);
	if (ps->async) {
		why = pyasync_read(ps, ps->async, out);
		if (why)
			return why;
		if (ps->async_stacks)
			pyasync_stacks(ps, ps->async, out, ps->async_all);
	}
	return DROP_NONE;
}
