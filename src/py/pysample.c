/* SPDX-License-Identifier: MIT */
/* Sampling the target's Python threads and frames, one sample at a time:
 * finding the interpreters and their threads, and what each thread is. */
#include "py/pysample.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "py/calledge.h"
#include "py/frameobj.h"
#include "py/pyasync.h"
#include "py/pyframe.h"
#include "py/pygil.h"
#include "py/pynames.h"
#include "py/pyresolve.h"
#include "py/pystate.h"
#include "py/pywalk.h"
#include "sys/proc.h"
#include "util.h"

/* Bytes of glibc's struct pthread searched for the tid field. */
#define PTHREAD_SCAN_BYTES 1024
/* Largest span of PyInterpreterState read for next and the threads. */
#define INTERP_HEAD_MAX 4096

/*
 * Frames of a torn read kept as its key (see walk_thread in pysample.c):
 * the innermost, the generators' frames under it and the first frame
 * that is not a generator's.  A chain of `yield from` deeper than this
 * is keyed by its innermost frames only.
 */
#define WALK_KEY_MAX 16

/* A frame of a torn read, as the walk arrays held it. */
struct walk_key {
	uint64_t frame, code, tlbc_array;
	long addrq;
	int32_t tlbc;
	unsigned char entry;
	unsigned char line_known; /* addrq and tlbc are the frame's then */
};

/*
 * What was under a generator's frame when a stack holding it was last
 * read whole: its callers down to the first frame that is not a
 * generator's (in a `yield from` chain, those that delegate to it).  A
 * torn read that found the generator running, linked to nothing by the
 * time its frame was copied, takes them as its key's (see take_key in
 * pysample.c).  Slots by frame address, the newest kept.
 */
#define GEN_CALLERS_SLOTS 256
/*
 * Torn walks that must find a call to a generator's frame before it is
 * learnt, and the most samples between two of them (see
 * learn_torn_gen_edge).
 */
#define GEN_EDGE_TORN_CHECKS 3
#define GEN_EDGE_TORN_WINDOW 256

struct gen_callers {
	uint64_t frame, code; /* the generator's frame */
	size_t nr;
	struct walk_key under[WALK_KEY_MAX - 1];
};

/*
 * What was under a generator code's frames when last read whole, by
 * code: a generator made anew for each round of a loop (a `yield from`
 * chain built per item, json's encoder per object) has its frame at a
 * new place each time where the allocator does not hand the last one's
 * memory back at once (free-threaded builds' mimalloc; any build after
 * other work ran in between), and gen_callers, by frame, knows none of
 * them.  Kept only for code whose callers were always the same codes:
 * a code seen under two chains, or under itself (a recursive chain,
 * whose depth its code does not tell), is marked ambiguous for good
 * and never put back so.  Up to GEN_CODE_PROBE slots from its hash.
 */
#define GEN_CODE_SLOTS 512
#define GEN_CODE_PROBE 4

struct gen_code_callers {
	uint64_t code; /* 0: a free slot */
	int ambiguous;
	size_t nr;
	struct walk_key under[WALK_KEY_MAX - 1];
};

/* A thread's key, for the read made once it is stopped. */
struct walk_stop_key {
	uint64_t ident;
	size_t nr;
	struct walk_key key[WALK_KEY_MAX];
};

/* The sampler's own state: what py_sampler.state points to. */
struct py_sampler_state {
	/* the walk context, and the version's walker in it */
	struct pywalk walk;
	struct pystate tasks;  /* the target's threads' /proc files */
	struct pynames names;  /* the names known of its threads */
	/*
	 * The last sample's interpreter (when it was the only one) and its
	 * thread states, in order: read again all at once in the next
	 * sample (see prefetch_threads), into tstate_bufs.
	 */
	uint64_t pre_interp;
	uint64_t *pre_tstates;
	size_t nr_pre, alloc_pre;
	/* With want_gc, the collector's flag, read with them (pre_gc_read) */
	int32_t pre_gc;
	int pre_gc_read;
	/*
	 * Up to 3.10 (no native id in the thread state): each one's
	 * pthread_t as last seen, and the tid its struct pthread held when
	 * read again with the thread states; 0 when not read.
	 */
	uint64_t *pre_idents;
	int32_t *pre_tids;
	size_t alloc_pre_idents, alloc_pre_tids;
	unsigned char *tstate_bufs;
	size_t alloc_tstate_bufs;
	unsigned char *pre_head;
	/*
	 * A whole read of a torn stack that did not hold the frame the
	 * first read found innermost, kept while later reads look for that
	 * frame (see walk_thread): its frames as the arrays above hold them.
	 */
	struct walk_spare {
		uint64_t *code_addrs, *frame_addrs, *tlbc_arrays;
		long *addrqs;
		unsigned char *entries, *gen_frames;
		int32_t *tlbcs;
		size_t nr, alloc;
		uint64_t root_frame;
		size_t omitted;
	} spare;
	struct gen_callers *gen_callers;   /* GEN_CALLERS_SLOTS, or NULL */
	struct gen_code_callers *gen_code; /* GEN_CODE_SLOTS, or NULL */
	/*
	 * Calls to or from a generator's frame (caller's code, callee's)
	 * seen in stacks read whole: a key's frames are put back only on
	 * such calls (a generator's object, freed, can come back at the
	 * same place under another caller).
	 */
	struct call_edges gen_edges;
	/*
	 * 3.11+: calls from a generator's frame to the frame its torn walk
	 * tore at (see learn_torn_gen_edge), each held after
	 * GEN_EDGE_TORN_CHECKS checks, then put in gen_edges.
	 */
	struct call_edges torn_gen_edges;
	int *pre_walk; /* of the prefetched threads, those walked */
	size_t alloc_pre_walk;
	/* the "<GC>" frame's stand-in code object (see want_gc) */
	struct pycode *gc_code;
	/*
	 * The thread state of the thread running the collection seen last
	 * (0: none seen yet, or not told), kept while samples see it run:
	 * a collection runs in one thread from start to end.
	 */
	uint64_t gc_collector;
	/*
	 * STOP_READS_TORN: the keys of the threads whose first read tore
	 * (see walk_thread in pysample.c), for the read made while they are
	 * stopped: that read is of a later moment.
	 */
	struct walk_stop_key *stop_keys;
	size_t nr_stop_keys, alloc_stop_keys;
	/* py_sampler_walk_only's idents, sorted; NULL: every thread */
	const uint64_t *walk_only;
	size_t nr_walk_only;
	/* glibc's struct pthread: where it keeps the tid (up to 3.10) */
	long pthread_tid_at;
	/* the target's thread ids, as it sees them, to spyc's */
	struct tidmap tidmap;
	struct {
		uint64_t ident;
		long tid;
	} * tids;
	size_t nr_tids, alloc_tids;
};

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
	struct py_sampler_state *st = xcalloc(1, sizeof(*st));

	memset(ps, 0, sizeof(*ps));
	ps->rt = rt;
	ps->state = st;
	/* The version's walker, chosen once: frame objects up to 3.10. */
	pywalk_init(&st->walk, rt,
		    rt->off->tstate_frame != OFF_NONE ? &frameobj_walker
						      : &chunk_walker);
	pystate_init(&st->tasks, rt->pid);
	pynames_init(&st->names, rt);
	st->pthread_tid_at = -1;
	st->torn_gen_edges.checks = GEN_EDGE_TORN_CHECKS;
	st->torn_gen_edges.window = GEN_EDGE_TORN_WINDOW;
	tidmap_init(&st->tidmap, rt->pid);
}

void py_sampler_release(struct py_sampler *ps)
{
	struct py_sampler_state *st = ps->state;

	if (!st)
		return;
	if (st->gc_code)
		pycode_stand_in_free(st->gc_code);
	free(st->pre_tstates);
	free(st->pre_idents);
	free(st->pre_tids);
	free(st->tstate_bufs);
	free(st->pre_head);
	free(st->pre_walk);
	free(st->spare.code_addrs);
	free(st->spare.frame_addrs);
	free(st->spare.tlbc_arrays);
	free(st->spare.addrqs);
	free(st->spare.entries);
	free(st->spare.gen_frames);
	free(st->spare.tlbcs);
	free(st->stop_keys);
	free(st->gen_callers);
	free(st->gen_code);
	call_edges_release(&st->gen_edges);
	call_edges_release(&st->torn_gen_edges);
	free(st->tids);
	tidmap_release(&st->tidmap);
	pynames_release(&st->names);
	pystate_release(&st->tasks);
	pyresolve_release(&st->walk);
	pywalk_release(&st->walk);
	free(st);
	memset(ps, 0, sizeof(*ps));
}

const struct tidmap *py_sampler_tidmap(const struct py_sampler *ps)
{
	return &ps->state->tidmap;
}

/* Give t the native id inner, read from the target's memory (its id as
 * the target sees it): t->tid becomes spyc's id of that thread, 0 if the
 * target has no such thread (see tidmap_outer). */
static void set_tid(struct py_sampler *ps, struct py_thread *t, long inner)
{
	struct py_sampler_state *st = ps->state;
	t->tid = tidmap_outer(&st->tidmap, inner);
	t->inner_tid = st->tidmap.nested && t->tid ? inner : 0;
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
	struct py_sampler_state *st = ps->state;
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
	st->pthread_tid_at = scan_pthread_tid(bufs, n, tasks, nr_tasks, 1);
	if (st->pthread_tid_at < 0)
		st->pthread_tid_at =
		    scan_pthread_tid(bufs, n, tasks, nr_tasks, 0);
	free(bufs);
}

static void fill_native_tids(struct py_sampler *ps, struct py_sample *out)
{
	struct py_sampler_state *st = ps->state;
	struct pywalk *w = &st->walk;
	long tasks[PY_MAX_THREADS];
	size_t nr_tasks, i, nio = 0;
	int32_t tids[PY_MAX_THREADS];
	size_t slot[PY_MAX_THREADS];

	if (st->pthread_tid_at < 0) {
		nr_tasks = tidmap_inner_tasks(&st->tidmap, tasks,
					      ARRAY_SIZE(tasks));
		find_pthread_tid_offset(ps, out, tasks, nr_tasks);
		if (st->pthread_tid_at < 0)
			return;
	}
	pywalk_grow_iov(w, out->nr_threads);
	for (i = 0; i < out->nr_threads && nio < PY_MAX_THREADS; i++) {
		/* known_idle() may have read this one already. */
		if (out->threads[i].tid)
			continue;
		slot[nio] = i;
		pywalk_set_iov(
		    w, nio, &tids[nio],
		    out->threads[i].ident + (uint64_t)st->pthread_tid_at, 4);
		nio++;
	}
	if (!nio || proc_readv(ps->rt->pid, w->local, w->remote, nio) < 0)
		return;
	for (i = 0; i < nio; i++)
		set_tid(ps, &out->threads[slot[i]],
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
	struct py_sampler_state *st = ps->state;
	struct pywalk *w = &st->walk;
	memmove(w->code_addrs + to, w->code_addrs + from,
		n * sizeof(*w->code_addrs));
	memmove(w->frame_addrs + to, w->frame_addrs + from,
		n * sizeof(*w->frame_addrs));
	memmove(w->addrqs + to, w->addrqs + from, n * sizeof(*w->addrqs));
	memmove(w->entries + to, w->entries + from,
		n * sizeof(*w->entries));
	memmove(w->gen_frames + to, w->gen_frames + from,
		n * sizeof(*w->gen_frames));
	memmove(w->tlbcs + to, w->tlbcs + from, n * sizeof(*w->tlbcs));
	memmove(w->tlbc_arrays + to, w->tlbc_arrays + from,
		n * sizeof(*w->tlbc_arrays));
}

/* Make room for frames up to index n - 1 in the walk arrays. */
static void walk_room(struct py_sampler *ps, struct py_sample *out, size_t n)
{
	struct py_sampler_state *st = ps->state;
	struct pywalk *w = &st->walk;
	size_t keep = out->nr_frames;

	if (n <= w->alloc_walk)
		return;
	out->nr_frames = n - 1;
	pywalk_push(w, out, 0, 0, 0, 0);
	out->nr_frames = keep;
}

static struct gen_callers *gen_callers_slot(struct py_sampler *ps,
					    uint64_t frame)
{
	struct py_sampler_state *st = ps->state;
	/* Fibonacci hashing: frames inside objects of one size share low bits */
	size_t slot = (size_t)((frame * 0x9e3779b97f4a7c15ull) >> 56);

	if (!st->gen_callers)
		st->gen_callers = xcalloc(GEN_CALLERS_SLOTS,
					  sizeof(*st->gen_callers));
	return &st->gen_callers[slot % GEN_CALLERS_SLOTS];
}

/*
 * The slot that holds code's callers, or where they may go: a free one,
 * else the first not marked ambiguous (an ambiguous code stays known as
 * such while it can); NULL when every slot it may take is ambiguous.
 */
static struct gen_code_callers *gen_code_slot(struct py_sampler *ps,
					      uint64_t code)
{
	struct py_sampler_state *st = ps->state;
	size_t slot = (size_t)((code * 0x9e3779b97f4a7c15ull) >> 55), i;
	struct gen_code_callers *take = NULL;

	if (!st->gen_code)
		st->gen_code = xcalloc(GEN_CODE_SLOTS, sizeof(*st->gen_code));
	for (i = 0; i < GEN_CODE_PROBE; i++) {
		struct gen_code_callers *cc =
		    &st->gen_code[(slot + i) % GEN_CODE_SLOTS];

		if (cc->code == code)
			return cc;
		if (!take && (!cc->code || !cc->ambiguous))
			take = cc;
	}
	return take;
}

/* The slot that holds code's callers (ambiguous or not), or NULL. */
static struct gen_code_callers *gen_code_find(struct py_sampler *ps,
					      uint64_t code)
{
	struct gen_code_callers *cc = gen_code_slot(ps, code);

	return cc && cc->code == code ? cc : NULL;
}

/* Code's callers when they are known and not ambiguous, else NULL. */
static const struct gen_code_callers *gen_code_known(struct py_sampler *ps,
						     uint64_t code)
{
	const struct gen_code_callers *cc = gen_code_find(ps, code);

	return cc && !cc->ambiguous ? cc : NULL;
}

/* Remember under[0..n) as what was under a frame of code, whole. */
static void remember_code_callers(struct py_sampler *ps, uint64_t code,
				  const struct walk_key *under, size_t n)
{
	struct gen_code_callers *cc = gen_code_slot(ps, code);
	int ambiguous = 0;
	size_t k;

	if (!cc)
		return;
	for (k = 0; k < n; k++)
		if (under[k].code == code)
			ambiguous = 1;
	if (cc->code == code && !ambiguous) {
		ambiguous = cc->ambiguous || cc->nr != n;
		for (k = 0; k < n && !ambiguous; k++)
			if (cc->under[k].code != under[k].code)
				ambiguous = 1;
	}
	cc->code = code;
	cc->ambiguous = ambiguous;
	cc->nr = ambiguous ? 0 : n;
	memcpy(cc->under, under, cc->nr * sizeof(*under));
}

/* Fill key from frame i of the walk arrays. */
static void key_from_walk(const struct py_sampler *ps, size_t i,
			  struct walk_key *key)
{
	const struct py_sampler_state *st = ps->state;
	const struct pywalk *w = &st->walk;
	key->frame = w->frame_addrs[i];
	key->code = w->code_addrs[i];
	key->addrq = w->addrqs[i];
	key->tlbc = w->tlbcs[i];
	key->tlbc_array = w->tlbc_arrays[i];
	key->entry = w->entries[i];
	key->line_known = 1;
}

/* Fill key from the frame the last walk tore at (w->torn_at). */
static void key_from_torn_at(const struct py_sampler *ps, struct walk_key *key)
{
	const struct py_sampler_state *st = ps->state;
	const struct pywalk *w = &st->walk;
	memset(key, 0, sizeof(*key));
	key->frame = w->torn_at;
	key->code = w->torn_at_code;
	key->addrq = w->torn_at_addrq;
	key->line_known = w->torn_at_addrq >= 0;
}

/*
 * Learn the calls to and from generators' frames of t's stack, just
 * walked: a whole one, or the frames a torn walk took before it tore.
 */
static void learn_gen_edges(struct py_sampler *ps, const struct py_thread *t)
{
	struct py_sampler_state *st = ps->state;
	struct pywalk *w = &st->walk;
	size_t i, end = t->first + t->depth;

	for (i = t->first; i + 1 < end; i++) {
		struct call_edge e = {w->code_addrs[i + 1], w->code_addrs[i]};

		if ((!w->gen_frames[i] && !w->gen_frames[i + 1]) ||
		    !w->frame_addrs[i] || !w->frame_addrs[i + 1])
			continue;
		if (!call_edges_has(&st->gen_edges, &e))
			call_edges_add(&st->gen_edges, &e, w->sample_stamp);
	}
}

/*
 * 3.11+: learn the call from the frame t's torn walk tore at to the
 * last frame it took, a generator's, when one read copied both.  A
 * generator's frame links to its caller only while it runs, and its
 * copy said it ran: the frame it linked to was its caller then, and the
 * code that frame's copy holds, in the same process_vm_readv, its
 * caller's (the walk tore there because the caller had suspended since,
 * the chain having yielded in between).  Copied by a later read, the
 * caller may have returned and its memory been taken by a frame of
 * another code: on free-threaded 3.14, json's list generator was so
 * learnt under a list's, six samples in 20,000.  A `yield from` chain's
 * innermost generator runs for a tenth of a microsecond at a time, and a
 * walk that takes it and its caller both while they run, the one that
 * learns the call in learn_gen_edges, may not come in the seconds of an
 * attach: then no sample of it is put back (see walk_thread), and it
 * loses its share.  Its walks torn at its caller come a hundred times a
 * second at 1 kHz.  A call seen so is learnt after GEN_EDGE_TORN_CHECKS such
 * walks, each within GEN_EDGE_TORN_WINDOW samples of the one before.
 */
static void learn_torn_gen_edge(struct py_sampler *ps,
				const struct py_thread *t)
{
	struct py_sampler_state *st = ps->state;
	struct pywalk *w = &st->walk;
	size_t last = t->first + t->depth - 1;
	struct call_edge e;

	if (!t->depth || !w->torn_at || !w->torn_at_code ||
	    !w->torn_at_with_callee || !w->gen_frames[last] ||
	    !w->frame_addrs[last])
		return;
	e.code = w->torn_at_code;
	e.callee = w->code_addrs[last];
	if (call_edges_has(&st->gen_edges, &e))
		return;
	call_edges_add(&st->torn_gen_edges, &e, w->sample_stamp);
	if (call_edges_has(&st->torn_gen_edges, &e))
		call_edges_add(&st->gen_edges, &e, w->sample_stamp);
}

/*
 * A generator's frame i, the last a torn walk took, whose code's
 * callers are not known: they are under[0], the generator's frame the
 * walk tore at (one read copied both, and the call was learnt: see
 * learn_torn_gen_edge), then what was under that one's code.  The
 * innermost generator of a `yield from` chain runs for a tenth of a
 * microsecond at a time, and a walk that takes it whole may not come
 * in the first seconds; its walks torn at its caller come at once.
 */
static void compose_code_callers(struct py_sampler *ps, size_t i,
				 const struct walk_key *under)
{
	struct py_sampler_state *st = ps->state;
	struct pywalk *w = &st->walk;
	struct walk_key chain[WALK_KEY_MAX - 1];
	struct call_edge e = {under[0].code, w->code_addrs[i]};
	const struct gen_code_callers *caller;

	if (!w->torn_at_with_callee || !call_edges_has(&st->gen_edges, &e) ||
	    gen_code_find(ps, w->code_addrs[i]))
		return;
	caller = gen_code_known(ps, under[0].code);
	if (!caller || caller->nr + 1 > WALK_KEY_MAX - 1)
		return;
	chain[0] = under[0];
	memcpy(chain + 1, caller->under, caller->nr * sizeof(*chain));
	remember_code_callers(ps, w->code_addrs[i], chain, caller->nr + 1);
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
	struct py_sampler_state *st = ps->state;
	struct pywalk *w = &st->walk;
	size_t i, j, end = t->first + t->depth, walked;

	for (walked = t->first; walked < end && w->frame_addrs[walked];)
		walked++;
	for (i = t->first; i < walked; i++) {
		struct walk_key under[WALK_KEY_MAX - 1];
		struct gen_callers *gc;
		const struct gen_callers *next;
		size_t n = 0, k;
		int whole = 0, last_gen = 1, read = 0;

		if (!w->gen_frames[i])
			continue;
		for (j = i + 1; j < walked && n < WALK_KEY_MAX - 1; j++) {
			key_from_walk(ps, j, &under[n++]);
			if (!w->gen_frames[j]) {
				whole = read = 1;
				break;
			}
		}
		if (!whole && j == walked && torn && w->torn_at &&
		    w->torn_at_code && n < WALK_KEY_MAX - 1) {
			key_from_torn_at(ps, &under[n++]);
			last_gen = w->torn_at_gen;
			whole = !last_gen;
		}
		if (!whole && last_gen && n == 1 && i + 1 == walked)
			compose_code_callers(ps, i, under);
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
		gc = gen_callers_slot(ps, w->frame_addrs[i]);
		memcpy(gc->under, under, n * sizeof(*under));
		gc->frame = w->frame_addrs[i];
		gc->code = w->code_addrs[i];
		gc->nr = n;
		/*
		 * By code, only from a stack read whole: on free-threaded
		 * 3.14 a torn walk's frames once put g2 under g5 of a
		 * `yield from` chain (memory of a generator freed and
		 * taken again while read), which marked the code
		 * ambiguous for good.
		 */
		if (read && !torn)
			remember_code_callers(ps, w->code_addrs[i], under, n);
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
	struct py_sampler_state *st = ps->state;
	struct pywalk *w = &st->walk;
	size_t i, n = 0;

	for (i = t->first; i < t->first + t->depth && n < WALK_KEY_MAX; i++) {
		if (!w->frame_addrs[i])
			break;
		key_from_walk(ps, i, &key[n++]);
		if (!w->gen_frames[i])
			return n;
	}
	if (n < WALK_KEY_MAX && w->torn_at && w->torn_at_code) {
		key_from_torn_at(ps, &key[n++]);
		if (!w->torn_at_gen)
			return n;
	}
	/* the last a generator's: what was under it when last read whole */
	if (n && n < WALK_KEY_MAX) {
		const struct gen_callers *gc =
			gen_callers_slot(ps, key[n - 1].frame);
		const struct gen_code_callers *cc;

		if (gc->nr && gc->frame == key[n - 1].frame &&
		    gc->code == key[n - 1].code) {
			for (i = 0; i < gc->nr && n < WALK_KEY_MAX; i++)
				key[n++] = gc->under[i];
			return n;
		}
		/* a generator made anew: what was under its code's */
		cc = gen_code_known(ps, key[n - 1].code);
		for (i = 0; cc && i < cc->nr && n < WALK_KEY_MAX; i++)
			key[n++] = cc->under[i];
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
	struct py_sampler_state *st = ps->state;
	struct pywalk *w = &st->walk;
	size_t i = 0, j, k, end = t->first + t->depth, rest;

	for (j = 0; j < nr_key; j++) {
		for (i = t->first; i < end; i++)
			if (w->frame_addrs[i] == key[j].frame &&
			    w->code_addrs[i] == key[j].code)
				break;
		if (i < end)
			break;
	}
	if (j == nr_key)
		return 0;
	/* every call put back made by the program, as seen before */
	for (k = 0; k < j; k++) {
		struct call_edge e = {k + 1 < j ? key[k + 1].code
						: w->code_addrs[i],
				      key[k].code};

		if (!call_edges_has(&st->gen_edges, &e))
			return 0;
	}
	rest = end - i;
	walk_room(ps, out, t->first + j + rest);
	move_frames(ps, t->first + j, i, rest);
	for (i = 0; i < j; i++) {
		size_t at = t->first + i;

		w->frame_addrs[at] = key[i].frame;
		w->code_addrs[at] = key[i].code;
		w->addrqs[at] = key[i].addrq;
		w->entries[at] = key[i].entry;
		w->gen_frames[at] = 1;
		w->tlbcs[at] = key[i].tlbc;
		w->tlbc_arrays[at] = key[i].tlbc_array;
	}
	/* the key's frame on the line it ran then */
	if (key[j].line_known) {
		w->addrqs[t->first + j] = key[j].addrq;
		w->tlbcs[t->first + j] = key[j].tlbc;
		w->tlbc_arrays[t->first + j] = key[j].tlbc_array;
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

/* Keep t's stack, just walked, in st->spare. */
static void spare_keep(struct py_sampler *ps, const struct py_thread *t)
{
	struct py_sampler_state *st = ps->state;
	struct pywalk *w = &st->walk;
	struct walk_spare *sp = &st->spare;
	size_t n = t->depth, f = t->first;

	spare_grow(sp, n + 1);
	memcpy(sp->code_addrs, w->code_addrs + f, n * sizeof(*sp->code_addrs));
	memcpy(sp->frame_addrs, w->frame_addrs + f,
	       n * sizeof(*sp->frame_addrs));
	memcpy(sp->tlbc_arrays, w->tlbc_arrays + f,
	       n * sizeof(*sp->tlbc_arrays));
	memcpy(sp->addrqs, w->addrqs + f, n * sizeof(*sp->addrqs));
	memcpy(sp->entries, w->entries + f, n * sizeof(*sp->entries));
	memcpy(sp->gen_frames, w->gen_frames + f, n * sizeof(*sp->gen_frames));
	memcpy(sp->tlbcs, w->tlbcs + f, n * sizeof(*sp->tlbcs));
	sp->nr = n;
	sp->root_frame = t->root_frame;
	sp->omitted = t->omitted;
}

/* Put the stack kept in st->spare back as t's, at t->first. */
static void spare_restore(struct py_sampler *ps, struct py_thread *t,
			  struct py_sample *out)
{
	struct py_sampler_state *st = ps->state;
	struct pywalk *w = &st->walk;
	const struct walk_spare *sp = &st->spare;
	size_t n = sp->nr, f = t->first;

	walk_room(ps, out, f + n);
	memcpy(w->code_addrs + f, sp->code_addrs, n * sizeof(*sp->code_addrs));
	memcpy(w->frame_addrs + f, sp->frame_addrs,
	       n * sizeof(*sp->frame_addrs));
	memcpy(w->tlbc_arrays + f, sp->tlbc_arrays,
	       n * sizeof(*sp->tlbc_arrays));
	memcpy(w->addrqs + f, sp->addrqs, n * sizeof(*sp->addrqs));
	memcpy(w->entries + f, sp->entries, n * sizeof(*sp->entries));
	memcpy(w->gen_frames + f, sp->gen_frames, n * sizeof(*sp->gen_frames));
	memcpy(w->tlbcs + f, sp->tlbcs, n * sizeof(*sp->tlbcs));
	out->nr_frames = f + n;
	t->depth = n;
	t->root_frame = sp->root_frame;
	t->omitted = sp->omitted;
}

/* Keep t's key for the read made once it is stopped. */
static void keep_stop_key(struct py_sampler *ps, const struct py_thread *t,
			  const struct walk_key *key, size_t nr_key)
{
	struct py_sampler_state *st = ps->state;
	struct walk_stop_key *sk;

	ALLOC_GROW(st->stop_keys, st->nr_stop_keys + 1, st->alloc_stop_keys);
	sk = &st->stop_keys[st->nr_stop_keys++];
	sk->ident = t->ident;
	sk->nr = nr_key;
	memcpy(sk->key, key, nr_key * sizeof(*key));
}

/* The key the first read of t's stack left, NULL if none. */
static const struct walk_stop_key *find_stop_key(const struct py_sampler *ps,
						 const struct py_thread *t)
{
	const struct py_sampler_state *st = ps->state;
	size_t i;

	for (i = 0; i < st->nr_stop_keys; i++)
		if (st->stop_keys[i].ident == t->ident)
			return &st->stop_keys[i];
	return NULL;
}

/*
 * Walk t's frames, from the copy of its thread state in w->tstate_buf,
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
	struct py_sampler_state *st = ps->state;
	struct pywalk *w = &st->walk;
	struct walk_key key[WALK_KEY_MAX];
	size_t nr_key = 0;
	int have_spare = 0;
	enum drop_reason why;
	int attempt, r;

	ps->walks++;
	for (attempt = 0;; attempt++) {
		int torn;

		t->first = out->nr_frames;
		w->root_frame = 0;
		w->moved = attempt;
		w->omitted = 0;
		w->torn_at = 0;
		w->torn_at_with_callee = 0;
		why = w->ops->walk(w, t->tstate, out);
		t->root_frame = w->root_frame;
		t->omitted = w->omitted;
		t->depth = out->nr_frames - t->first;
		torn = why == DROP_INVALID || why == DROP_READ;
		t->torn = 0;
		/*
		 * Up to 3.10 a torn walk's frames each held when taken; from
		 * 3.11 a walk may still be found torn once all are taken.
		 */
		if (!why || (torn && ps->rt->off->tstate_frame != OFF_NONE))
			learn_gen_edges(ps, t);
		else if (torn)
			learn_torn_gen_edge(ps, t);
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
		if (!why && !attempt && st->nr_stop_keys) {
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
		r = proc_read(ps->rt->pid, t->tstate, w->tstate_buf,
			      (size_t)ps->rt->off->tstate_size);
		if (r)
			return pywalk_read_error(r);
	}
	if (attempt)
		ps->walks_again++;
	return DROP_NONE;
}


/*
 * Read again, once, the stacks of out's threads that do not start where
 * they must.  Returns DROP_INVALID if one still does not.
 */
static enum drop_reason check_roots(struct py_sampler *ps,
				    struct py_sample *out)
{
	struct py_sampler_state *st = ps->state;
	struct pywalk *w = &st->walk;
	size_t i, from = out->nr_frames;
	enum drop_reason why = DROP_NONE;
	int r;

	for (i = 0; i < out->nr_threads && !why; i++) {
		struct py_thread *t = &out->threads[i];

		if (pywalk_starts_at_root(out, t))
			continue;
		r = proc_read(ps->rt->pid, t->tstate, w->tstate_buf,
			      (size_t)ps->rt->off->tstate_size);
		why = r ? pywalk_read_error(r) : walk_thread(ps, t, out);
		/* One stack, read again: not a second one. */
		ps->walks--;
		if (!why)
			ps->walks_again++;
	}
	if (!why && out->nr_frames > from)
		why = pyresolve_frames(w, out, from);
	for (i = 0; i < out->nr_threads && !why; i++)
		if (!pywalk_starts_at_root(out, &out->threads[i]))
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
	struct pywalk *w = &ps->state->walk;
	size_t i, j, kept;

	for (i = 0; i < out->nr_threads; i++) {
		struct py_thread *t = &out->threads[i];

		for (j = kept = t->first; j < t->first + t->depth; j++) {
			const struct py_frame *fr = &out->frames[j];

			if (fr->code->hidden) {
				if (fr->entry && kept > t->first) {
					out->frames[kept - 1].entry = fr->entry;
					w->entries[kept - 1] = fr->entry;
				}
				continue;
			}
			if (kept != j) {
				out->frames[kept] = *fr;
				move_frames(ps, kept, j, 1);
			}
			kept++;
		}
		t->depth = kept - t->first;
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
	struct py_sampler_state *st = ps->state;
	uint64_t at;
	int32_t collecting;

	if (!ps->want_gc)
		return 0;
	if (n && st->pre_gc_read)
		return st->pre_gc == 1;
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
 * st->tstate_bufs, in order; 0 when they must be found one by one.
 */
static size_t prefetch_threads(struct py_sampler *ps)
{
	struct py_sampler_state *st = ps->state;
	struct pywalk *w = &st->walk;
	const struct py_offsets *off = ps->rt->off;
	size_t n = st->nr_pre, size = (size_t)off->tstate_size, i;
	uint64_t head_addr = interp_head_addr(ps->rt), interp = 0, next, gc_at;
	size_t nio;
	long lo, hi;

	if (!n || !head_addr)
		return 0;
	interp_head_span(off, &lo, &hi);
	pywalk_grow_iov(w, 2 * n + 3);
	pywalk_set_iov(w, 0, &interp, head_addr, sizeof(interp));
	pywalk_set_iov(w, 1, st->pre_head, st->pre_interp + (uint64_t)lo,
			   (size_t)(hi + 8 - lo));
	for (i = 0; i < n; i++)
		pywalk_set_iov(w, i + 2, st->tstate_bufs + i * size,
				   st->pre_tstates[i], size);
	nio = n + 2;
	/*
	 * Up to 3.10, each thread's tid too, from its struct pthread: good
	 * when the thread state still names that pthread_t (new_thread).
	 */
	memset(st->pre_tids, 0, n * sizeof(*st->pre_tids));
	if (off->tstate_native_thread_id == OFF_NONE &&
	    st->pthread_tid_at >= 0) {
		for (i = 0; i < n; i++) {
			if (st->pre_idents[i])
				pywalk_set_iov(
				    w, nio++, &st->pre_tids[i],
				    st->pre_idents[i] +
					(uint64_t)st->pthread_tid_at,
				    sizeof(st->pre_tids[i]));
		}
	}
	/* The collector's flag, in the same read (a system call less). */
	st->pre_gc = 0;
	gc_at = ps->want_gc ? gc_flag_addr(ps, st->pre_interp) : 0;
	st->pre_gc_read = gc_at != 0;
	if (gc_at)
		pywalk_set_iov(w, nio++, &st->pre_gc, gc_at,
				   sizeof(st->pre_gc));
	/* Regions that failed read as zeros: no tid, and no link holds. */
	if (proc_readv(ps->rt->pid, w->local, w->remote, nio) <
		(int)(n + 2) ||
	    interp != st->pre_interp ||
	    load_u64(st->pre_head, off->interp_next - lo) ||
	    load_u64(st->pre_head, off->interp_threads_head - lo) !=
		st->pre_tstates[0])
		return 0;
	for (i = 0; i < n; i++) {
		const unsigned char *buf = st->tstate_bufs + i * size;

		next = i + 1 < n ? st->pre_tstates[i + 1] : 0;
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
	struct py_sampler_state *st = ps->state;
	size_t i, size = (size_t)ps->rt->off->tstate_size;

	st->nr_pre = 0;
	if (!interp || !nr)
		return;
	ALLOC_GROW(st->pre_tstates, nr, st->alloc_pre);
	ALLOC_GROW(st->pre_idents, nr, st->alloc_pre_idents);
	ALLOC_GROW(st->pre_tids, nr, st->alloc_pre_tids);
	if (st->alloc_tstate_bufs < nr) {
		free(st->tstate_bufs);
		st->tstate_bufs = xmalloc(nr * size);
		st->alloc_tstate_bufs = nr;
	}
	if (!st->pre_head)
		st->pre_head = xmalloc(INTERP_HEAD_MAX);
	for (i = 0; i < nr; i++) {
		st->pre_tstates[i] = out->threads[i].tstate;
		st->pre_idents[i] = out->threads[i].ident;
	}
	st->pre_interp = interp;
	st->nr_pre = nr;
}

static int compare_idents(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void py_sampler_walk_only(struct py_sampler *ps, uint64_t *idents, size_t n)
{
	struct py_sampler_state *st = ps->state;
	if (idents)
		qsort(idents, n, sizeof(*idents), compare_idents);
	st->walk_only = idents;
	st->nr_walk_only = idents ? n : 0;
}

/* Whether st->walk_only, if set, has the thread with this ident. */
static int walk_wanted(const struct py_sampler *ps, uint64_t ident)
{
	const struct py_sampler_state *st = ps->state;
	return !st->walk_only ||
	       bsearch(&ident, st->walk_only, st->nr_walk_only,
		       sizeof(*st->walk_only), compare_idents);
}

/*
 * Add the thread whose thread state, at tstate, w->tstate_buf holds a
 * copy of, without walking it; it is marked skipped if it is idle and
 * its frames are not wanted, or st->walk_only leaves it out.
 */
static struct py_thread *new_thread(struct py_sampler *ps, uint64_t tstate,
				    uint64_t ident, long tid,
				    struct py_sample *out)
{
	struct py_sampler_state *st = ps->state;
	struct pywalk *w = &st->walk;
	const struct py_offsets *off = ps->rt->off;
	struct py_thread *t;

	ALLOC_GROW(out->threads, out->nr_threads + 1, out->alloc_threads);
	t = &out->threads[out->nr_threads++];
	t->ident = load_u64(w->tstate_buf, off->tstate_thread_id);
	set_tid(
	    ps, t,
	    off->tstate_native_thread_id == OFF_NONE
		? 0
		: (long)load_u64(w->tstate_buf, off->tstate_native_thread_id));
	/* A tid read beside this copy, of the struct pthread it names. */
	if (!t->tid && ident && ident == t->ident && tid > 0)
		set_tid(ps, t, tid);
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
			  : load_u32(w->tstate_buf, off->tstate_state) ==
				(uint32_t)off->thread_attached;
	t->skipped = !walk_wanted(ps, t->ident);
	if (!t->skipped && ps->skip_idle && ps->want_state) {
		/* Up to 3.10 its tid is where glibc keeps it. */
		if (!t->tid && st->pthread_tid_at >= 0) {
			int32_t id = 0;

			if (!proc_read(ps->rt->pid,
				       t->ident + (uint64_t)st->pthread_tid_at,
				       &id, sizeof(id)) &&
			    id > 0)
				set_tid(ps, t, id);
		}
		t->skipped = pystate_known_idle(&st->tasks, t);
	}
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
	struct py_sampler_state *st = ps->state;
	struct pywalk *w = &st->walk;
	size_t tsize = (size_t)ps->rt->off->tstate_size, first, i;
	enum drop_reason why;

	first = out->nr_threads;
	ALLOC_GROW(st->pre_walk, n, st->alloc_pre_walk);
	for (i = 0; i < n; i++) {
		memcpy(w->tstate_buf, st->tstate_bufs + i * tsize, tsize);
		st->pre_walk[i] =
		    !new_thread(ps, st->pre_tstates[i], st->pre_idents[i],
				st->pre_tids[i], out)
			 ->skipped;
	}
	w->ops->prefetch(w, st->tstate_bufs,
				      st->pre_tstates, st->pre_walk, n);
	for (i = 0; i < n; i++) {
		struct py_thread *t = &out->threads[first + i];

		if (!st->pre_walk[i])
			continue;
		memcpy(w->tstate_buf, st->tstate_bufs + i * tsize, tsize);
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
	struct py_sampler_state *st = ps->state;
	struct pywalk *w = &st->walk;
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
			return pywalk_read_error(r);
		tstate = load_u64(head, off->interp_threads_head - lo);
		next_interp = load_u64(head, off->interp_next - lo);
		while (tstate) {
			if (++threads > PY_MAX_THREADS)
				return DROP_DEPTH;
			r = proc_read(ps->rt->pid, tstate, w->tstate_buf,
				      (size_t)off->tstate_size);
			if (r)
				return pywalk_read_error(r);
			if (load_u64(w->tstate_buf, off->tstate_interp) !=
			    interp)
				return DROP_INVALID;
			why = add_thread(ps, tstate, out);
			if (why)
				return why;
			tstate = load_u64(w->tstate_buf, off->tstate_next);
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
	const struct py_sampler_state *st = ps->state;
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
	if (st->tidmap.nested ||
	    (ps->rt->off->tstate_native_thread_id == OFF_NONE &&
	     st->pthread_tid_at < 0))
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
	struct py_sampler_state *st = ps->state;
	struct pywalk *w = &st->walk;
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
	if (!st->gc_collector) {
		if (gil->locked)
			st->gc_collector = holder ? holder->tstate : 0;
		else if (nr == 1)
			st->gc_collector = only->tstate;
		else if (nr_attached == 1)
			st->gc_collector = attached->tstate;
	}
	holder = NULL;
	for (i = 0; st->gc_collector && i < out->nr_threads; i++)
		if (!out->threads[i].is_task &&
		    out->threads[i].tstate == st->gc_collector)
			holder = &out->threads[i];
	/* Holding the GIL, where there is one: else it waits for it. */
	if (holder && gil->locked && gil->holder != holder->tstate)
		holder = NULL;
	/* A thread whose frames were not read (idle, or not walked) keeps
	 * none: the frame goes over a stack, never alone. */
	if (!holder || !holder->depth)
		return;
	if (!st->gc_code)
		st->gc_code = pycode_stand_in("<GC>");
	/* Innermost first: it goes before the holder's first frame, in
	 * the walk's arrays too, which stay beside the frames. */
	walk_room(ps, out, out->nr_frames + 1);
	ALLOC_GROW(out->frames, out->nr_frames + 1, out->alloc_frames);
	memmove(&out->frames[holder->first + 1], &out->frames[holder->first],
		(out->nr_frames - holder->first) * sizeof(*out->frames));
	move_frames(ps, holder->first + 1, holder->first,
		    out->nr_frames - holder->first);
	out->frames[holder->first] = (struct py_frame){st->gc_code, 0, 0};
	w->code_addrs[holder->first] = 0;
	w->frame_addrs[holder->first] = 0;
	w->addrqs[holder->first] = -1;
	w->entries[holder->first] = 0;
	w->gen_frames[holder->first] = 0;
	w->tlbcs[holder->first] = 0;
	w->tlbc_arrays[holder->first] = 0;
	out->nr_frames++;
	for (i = 0; i < out->nr_threads; i++)
		if (&out->threads[i] != holder &&
		    out->threads[i].first > holder->first)
			out->threads[i].first++;
	holder->depth++;
}

enum drop_reason py_sampler_sample(struct py_sampler *ps, struct py_sample *out)
{
	struct py_sampler_state *st = ps->state;
	struct pywalk *w = &st->walk;
	const struct py_offsets *off = ps->rt->off;
	uint64_t interp;
	struct gil_view gil;
	enum drop_reason why;
	size_t n;
	int r, collecting;

	w->sample_stamp++;
	w->max_depth = ps->max_depth;
	/* The first read of a sample: keys left by the last are done with. */
	if (ps->stop_reads)
		st->nr_stop_keys = 0;
	/* The previous sample is done with: its replaced code may go. */
	pycode_cache_collect(&w->codes);
	/* Copies left by a sample that was dropped are stale now. */
	w->ops->forget_prefetched(w);
	out->nr_threads = 0;
	out->nr_frames = 0;
	out->nr_tasks = 0;
	out->nr_awaiters = 0;
	n = prefetch_threads(ps);
	if (n) {
		interp = st->pre_interp;
	} else {
		r = pyruntime_interp_head(ps->rt, &interp);
		if (r)
			return pywalk_read_error(r);
	}
	/* The main interpreter's GIL: the one Python threads share. */
	memset(&gil, 0, sizeof(gil));
	collecting = gc_collecting(ps, interp, n);
	if (!collecting)
		st->gc_collector = 0;
	if ((ps->want_gil || collecting) && interp)
		pygil_read(ps->rt, interp, &gil);
	if (n) {
		why = add_prefetched(ps, n, out);
		if (why)
			return why;
	} else {
		why = find_threads(ps, interp, out);
		if (why)
			return why;
	}
	why = pyresolve_frames(w, out, 0);
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
		pystate_annotate(&st->tasks, out, &gil, ps->want_state,
				 ps->want_gil);
	if (ps->want_names)
		pynames_fill(&st->names, &st->tasks, out);
	if (ps->async) {
		why = pyasync_read(w, ps->async, out);
		if (why)
			return why;
		if (ps->async_stacks)
			pyasync_stacks(w, ps->async, out,
				       ps->async_all);
	}
	return DROP_NONE;
}

void py_sampler_push_copied(struct py_sampler *ps, struct py_sample *out,
			    uint64_t code_word, uint64_t pos_word)
{
	const struct py_offsets *off = ps->rt->off;
	struct pywalk *w = &ps->state->walk;
	uint64_t code, start;

	if (off->tstate_frame != OFF_NONE) {
		int32_t lasti = (int32_t)pos_word;
		int units = w->codes.kind == LINETABLE_310 ? 2 : 1;

		pywalk_push(w, out, 0, code_word,
			    lasti < 0 ? -1 : (long)lasti * units, 1);
		return;
	}
	code = code_word & ~PY_STACKREF_TAG_MASK;
	start = code + (uint64_t)off->code_code_adaptive;
	pywalk_push(w, out, 0, code,
		    pos_word >= start ? (long)(pos_word - start) : -1, 0);
}

enum drop_reason py_sampler_name_frames(struct py_sampler *ps,
					struct py_sample *out)
{
	return pyresolve_frames(&ps->state->walk, out, 0);
}
