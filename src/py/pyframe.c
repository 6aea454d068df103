/* SPDX-License-Identifier: MIT */
/* From CPython 3.11: walking one thread's interpreter frames, through its
 * data-stack chunks and the generators' frames off them. */
#include "py/pyframe.h"

#include <stdlib.h>
#include <string.h>

#include "sys/proc.h"
#include "py/pywalk.h"
#include "util.h"

/*
 * Most bytes read before a frame that is read on its own, where its
 * generator keeps its state: the walk's frame buffer has room for them.
 */
#define PY_FRAME_PREFIX_MAX 64

/* Largest data-stack chunk copied whole (CPython's are 16 KiB and up). */
#define CHUNK_MAX_BYTES (4u << 20)
/* Bytes of a page: data-stack chunks are mapped in whole ones. */
#define PAGE_BYTES ((uint64_t)4096)
/* Bytes of a window copied around a frame off the data stack: a pool of
 * CPython's small-object allocator, all mapped when one object is. */
#define WINDOW_BYTES ((uint64_t)16384)
/* Walks in a row a window is copied again for though none took a frame
 * from it. */
#define WINDOW_IDLE_WALKS 4
/* Most data-stack chunks followed per thread. */
#define CHUNKS_MAX 64
/* Room for the fields pycode reads of a code object (its first 144 bytes). */
#define CODE_HEADER_MAX 1024

/*
 * Frames off the data stack (generators', C-stack shims) per thread
 * copied with its chunk (3.11+).
 */
#define PY_SIDE_KEPT 24
/*
 * Walks in a row a side frame is copied again for though none went
 * through it (see remember_side).
 */
#define SIDE_IDLE_WALKS 8
/* Windows of memory a 3.11+ walk keeps copied around its frames off
 * the data stack (see chunk_walk_state.windows). */
#define PY_WINDOWS 32

/* A memory region copied from the target for this sample. */
struct py_region {
	uint64_t addr;
	size_t len;
	unsigned char *buf;
	size_t alloc;
	unsigned read; /* the read that copied it (chunk_walk_state.reads) */
};

/* Slots of the memo of returned frames' code (a power of 2). */
#define PY_RETURNED_MEMO 256

/* What the walks of interpreter frames keep between samples. */
struct chunk_walk_state {
	unsigned char *frame_buf;
	struct py_region *chunks;
	size_t nr_chunks, alloc_chunks;
	uint64_t next_chunk; /* older chunk not read yet, 0 when none */
	/*
	 * 3.11+: the memory around frames the walk found off every chunk
	 * (generators' frames, most), copied a window at a time: a chain
	 * of generators nested thousands deep sits in a few allocator
	 * pools.  Good for one walk; the oldest one read is replaced.
	 */
	struct py_region windows[PY_WINDOWS];
	unsigned char window_used[PY_WINDOWS]; /* a frame was taken from it */
	/* how many walks in a row each was copied for and none took one */
	unsigned char window_idle[PY_WINDOWS];
	/* the bytes of each the walk took frames from: [lo, hi) */
	uint64_t window_lo[PY_WINDOWS], window_hi[PY_WINDOWS];
	size_t nr_windows, next_window;
	/*
	 * 3.11+: the chunk frames reached from a frame read at another
	 * time (a generator's, or one in another chunk), with the fields
	 * the walk used, and where the walk started: read again at its end.
	 */
	struct py_link_check {
		uint64_t addr, code, previous, instr;
		/*
		 * its callee when that is a generator's frame, else 0; and
		 * the C-stack shim between them (3.12+), else 0
		 */
		uint64_t gen, shim;
	} * links;
	size_t nr_links, alloc_links;
	unsigned char *link_buf;
	size_t alloc_link_buf;
	uint64_t walk_cframe, walk_frame;
	/*
	 * 3.11+: the links from a frame to its caller off the chunk (a
	 * generator's frame, most) where the two were copied by different
	 * reads, with what the walk found in each: read again at its end
	 * (see side_links_hold).
	 */
	struct py_side_link {
		/* shim: the one between them, 0 if none or more than one */
		uint64_t callee, shim, caller;
		uint64_t callee_code, callee_previous;
		uint64_t caller_code, caller_previous, caller_instr;
		long callee_owner, caller_owner;
		/* the callee returned before it was copied: not read again */
		int callee_returned;
	} * side_links;
	size_t nr_side_links, alloc_side_links;
	unsigned char *side_link_buf;
	size_t alloc_side_link_buf;
	/*
	 * The calls such links were found to hold in: learnt from one
	 * check (one read, where the chunk's calls on 3.14+ are read until
	 * they hold, and need two).
	 */
	struct call_edges side_edges;
	/*
	 * Each process_vm_readv of the walk's copies counted, so that a
	 * frame says which read copied it: side_read, that of the side
	 * frames; pre_read, that of the prefetched copies.
	 */
	unsigned reads, side_read, pre_read;
	struct py_edge_check {
		uint64_t caller, callee; /* the frames' addresses */
		struct call_edge edge;
		uint64_t caller_instr, caller_previous;
		uint64_t callee_instr; /* as the walk found it */
		int callee_innermost;  /* the walk's first frame */
		/* 3.11-3.13: the code units at the two instructions */
		uint8_t caller_unit[2], callee_unit[2];
	} * edge_checks;
	size_t nr_edge_checks, alloc_edge_checks;
	unsigned char *edge_buf;
	size_t alloc_edge_buf;
	/* 3.14+: the code objects found for returned frames' instructions */
	struct py_returned_memo {
		uint64_t instr, code;
	} returned[PY_RETURNED_MEMO];
	/*
	 * 3.11+: per thread state, the frames off the data stack its last
	 * walk went through (generators', and 3.12+ the C-stack shims, the
	 * one at the bottom there for the thread's life), copied again with
	 * its chunk (side_buf, in the same process_vm_readv) so that the
	 * walk need not read them on their own.
	 */
	struct py_side_memo {
		uint64_t tstate;
		uint64_t addrs[PY_SIDE_KEPT];
		/* how many walks in a row since went through each */
		unsigned char idle[PY_SIDE_KEPT];
		size_t nr;
		/*
		 * the windows its last walks took frames from, each with
		 * how many walks in a row since took none
		 */
		uint64_t win_addrs[PY_WINDOWS];
		size_t win_lens[PY_WINDOWS];
		unsigned char win_idle[PY_WINDOWS];
		size_t nr_win;
	} * side_memos;
	size_t nr_side_memos, alloc_side_memos;
	struct py_side_memo *side_now; /* the walked thread's, or NULL */
	uint64_t side_addrs[PY_SIDE_KEPT];
	size_t nr_side;
	unsigned char *side_buf;
	/*
	 * 3.11+, when the thread states were prefetched: each thread's
	 * fresh thread state, C frame's current frame, newest chunk and
	 * shims, read for all the threads walked in one process_vm_readv
	 * (chunk_prefetch); each taken by the thread's walk.
	 */
	struct py_chunk_pre {
		uint64_t tstate, cframe, current, chunk, top;
		size_t len; /* of the chunk's copy, 0 when none */
		unsigned char *fresh, *buf, *side;
		size_t alloc; /* of buf */
		uint64_t side_addrs[PY_SIDE_KEPT];
		size_t nr_side;
		int ready; /* read, not taken yet */
	} * pre_chunks;
	size_t nr_pre_chunks, alloc_pre_chunks;
	/* the side frames the walk went through off the chunk, for side_now */
	uint64_t walk_side[PY_SIDE_KEPT];
	size_t nr_walk_side;
};

/* Exchange two buffers of the same size. */
static void swap_buf(unsigned char **a, unsigned char **b)
{
	unsigned char *t = *a;

	*a = *b;
	*b = t;
}

/* Exchange two buffers and their sizes. */
static void swap_sized_buf(unsigned char **a, size_t *alloc_a,
			   unsigned char **b, size_t *alloc_b)
{
	size_t t = *alloc_a;

	swap_buf(a, b);
	*alloc_a = *alloc_b;
	*alloc_b = t;
}

static struct py_region *new_region(struct pywalk *w)
{
	struct chunk_walk_state *cw = w->chunk_walk;
	size_t old = cw->alloc_chunks;
	struct py_region *rg;

	ALLOC_GROW(cw->chunks, cw->nr_chunks + 1, cw->alloc_chunks);
	if (cw->alloc_chunks > old)
		memset(cw->chunks + old, 0,
		       (cw->alloc_chunks - old) * sizeof(*cw->chunks));
	rg = &cw->chunks[cw->nr_chunks];
	rg->len = 0;
	return rg;
}

/* Copy [addr, addr+len) of the target into a new region; 0 or -errno. */
static int read_region(struct pywalk *w, uint64_t addr, size_t len)
{
	struct chunk_walk_state *cw = w->chunk_walk;
	struct py_region *rg = new_region(w);
	int r;

	if (len > rg->alloc) {
		free(rg->buf);
		rg->buf = xmalloc(len);
		rg->alloc = len;
	}
	r = proc_read(w->rt->pid, addr, rg->buf, len);
	if (r)
		return r;
	rg->addr = addr;
	rg->len = len;
	rg->read = ++cw->reads;
	cw->nr_chunks++;
	return 0;
}

/* The side frames remembered for tstate, made if new (3.11+). */
static struct py_side_memo *side_memo(struct pywalk *w, uint64_t tstate)
{
	struct chunk_walk_state *cw = w->chunk_walk;
	size_t i;

	for (i = 0; i < cw->nr_side_memos; i++)
		if (cw->side_memos[i].tstate == tstate)
			return &cw->side_memos[i];
	/* Threads come and go: forget them all now and then. */
	if (cw->nr_side_memos >= PY_MAX_THREADS)
		cw->nr_side_memos = 0;
	ALLOC_GROW(cw->side_memos, cw->nr_side_memos + 1, cw->alloc_side_memos);
	memset(&cw->side_memos[cw->nr_side_memos], 0, sizeof(*cw->side_memos));
	cw->side_memos[cw->nr_side_memos].tstate = tstate;
	return &cw->side_memos[cw->nr_side_memos++];
}

/*
 * 3.11+: frames that live off the data stack and are copied with the
 * chunk, in the same process_vm_readv, where the thread's last walk
 * found them: generators' frames (in their generator objects, freed and
 * made again all the time, mostly at the addresses the allocator just
 * freed) and on 3.12+ the C-stack shims that start each eval call.  A
 * generator that had suspended is seen so (its state, in the bytes
 * before its frame, is copied with it); the links from them to the
 * chunk are checked again after the walk (links_still_hold): the copies
 * are a moment apart all the same.
 */
static int side_frames_on(const struct py_offsets *off)
{
	return off->owner_cstack != OFF_NONE ||
	       (off->owner_generator != OFF_NONE &&
		off->gen_state_at != OFF_NONE);
}

/* Bytes copied before a side frame: where a generator keeps its state. */
static size_t side_pre(const struct py_offsets *off)
{
	if (off->gen_state_at == OFF_NONE || off->gen_state_at >= 0 ||
	    -off->gen_state_at > PY_FRAME_PREFIX_MAX)
		return 0;
	return ((size_t)-off->gen_state_at + 7) & ~(size_t)7;
}

/* Bytes of one side frame's copy, the bytes before it included. */
static size_t side_stride(const struct py_offsets *off)
{
	return side_pre(off) + (size_t)off->iframe_size;
}

/*
 * The copy, made with the chunk, of the side frame at addr, if it is
 * one there still (a shim, or a generator's frame: *state_ok set);
 * else NULL.
 */
static const unsigned char *side_frame(struct pywalk *w, uint64_t addr,
				       int *state_ok)
{
	struct chunk_walk_state *cw = w->chunk_walk;
	const struct py_offsets *off = w->rt->off;
	size_t i, stride = side_stride(off);

	for (i = 0; i < cw->nr_side; i++) {
		const unsigned char *f =
		    cw->side_buf + i * stride + side_pre(off);

		if (cw->side_addrs[i] != addr)
			continue;
		if (off->owner_cstack != OFF_NONE &&
		    f[off->iframe_owner] == off->owner_cstack) {
			*state_ok = 0;
			return f;
		}
		if (off->owner_generator != OFF_NONE &&
		    f[off->iframe_owner] == off->owner_generator &&
		    side_pre(off)) {
			*state_ok = 1;
			return f;
		}
	}
	return NULL;
}

/* The walk went through the side frame at addr, found off the chunk. */
static void note_side(struct pywalk *w, uint64_t addr)
{
	struct chunk_walk_state *cw = w->chunk_walk;
	size_t i;

	for (i = 0; i < cw->nr_walk_side; i++)
		if (cw->walk_side[i] == addr)
			return;
	if (cw->nr_walk_side < PY_SIDE_KEPT)
		cw->walk_side[cw->nr_walk_side++] = addr;
}

/* Make *buf hold at least len bytes (its size in *alloc). */
static void ensure_buf(unsigned char **buf, size_t *alloc, size_t len)
{
	if (len > *alloc) {
		free(*buf);
		*buf = xmalloc(len);
		*alloc = len;
	}
}

/*
 * Was the side frame at addr, as the last walk's copy with the chunk
 * holds it (side_frame), still a frame: a C-stack shim, or a
 * generator's frame with code that had not finished?
 */
static int side_copy_alive(struct pywalk *w, uint64_t addr)
{
	const struct py_offsets *off = w->rt->off;
	int is_gen;
	const unsigned char *f = side_frame(w, addr, &is_gen);

	if (!f || !is_gen)
		return f != NULL;
	return (load_u64(f, off->iframe_code) & ~PY_STACKREF_TAG_MASK) &&
	       (signed char)f[off->gen_state_at] <= off->gen_executing;
}

/*
 * Keep the n side frames at addrs the last walk went through in the
 * thread's memo m, first, then those of the walks before it that it did
 * not go through, for SIDE_IDLE_WALKS walks while they are still frames
 * (see side_copy_alive).  A `yield from` chain's innermost generator
 * runs for a tenth of a microsecond at a time: a walk that finds it
 * there must copy it and its callers with the thread state, in one
 * process_vm_readv, to read them while it runs, yet most walks tear at
 * it (it had yielded) or find its callers innermost, and go through
 * none or only some of them.  Kept only from the last walk, the chain
 * was then copied whole too seldom for its calls ever to be learnt in
 * some attaches (see walk_thread in pysample.c), and its innermost
 * generator lost its share.  A generator that finished is let go at
 * once: free-threaded builds' allocator puts each new one elsewhere,
 * and copies of dead ones made the read longer and tore more.  The
 * older frames go last: one freed since (its memory unmapped) ends the
 * read there.
 */
static void keep_side_addrs(struct pywalk *w, struct py_side_memo *m,
			    const uint64_t *addrs, size_t n)
{
	uint64_t old[PY_SIDE_KEPT];
	unsigned char old_idle[PY_SIDE_KEPT];
	size_t i, j, nr_old = m->nr;

	memcpy(old, m->addrs, nr_old * sizeof(*old));
	memcpy(old_idle, m->idle, nr_old * sizeof(*old_idle));
	memcpy(m->addrs, addrs, n * sizeof(*m->addrs));
	memset(m->idle, 0, n * sizeof(*m->idle));
	m->nr = n;
	for (i = 0; i < nr_old && m->nr < PY_SIDE_KEPT; i++) {
		if (old_idle[i] + 1 >= SIDE_IDLE_WALKS)
			continue;
		for (j = 0; j < n && addrs[j] != old[i]; j++)
			;
		if (j < n || !side_copy_alive(w, old[i]))
			continue;
		m->addrs[m->nr] = old[i];
		m->idle[m->nr++] = (unsigned char)(old_idle[i] + 1);
	}
}

/*
 * Keep the side frames the last walk found, and the windows it took
 * frames from, for the thread's next one.
 */
static void remember_side(struct pywalk *w)
{
	struct chunk_walk_state *cw = w->chunk_walk;
	struct py_side_memo *m = cw->side_now;
	size_t i;

	if (!m)
		return;
	keep_side_addrs(w, m, cw->walk_side, cw->nr_walk_side);
	m->nr_win = 0;
	for (i = 0; i < cw->nr_windows; i++) {
		unsigned idle = cw->window_used[i] ? 0 : cw->window_idle[i] + 1;

		/*
		 * A walk cut short (torn) used only the windows of the
		 * frames it came to: keep the others a few walks more.
		 */
		if (idle >= WINDOW_IDLE_WALKS)
			continue;
		/*
		 * Next time only the bytes frames were taken from: a
		 * window copied whole costs far more than the frames in it,
		 * and the longer the copy, the likelier the thread moves on
		 * during it.
		 */
		if (cw->window_used[i]) {
			m->win_addrs[m->nr_win] = cw->window_lo[i];
			m->win_lens[m->nr_win] =
			    (size_t)(cw->window_hi[i] - cw->window_lo[i]);
		} else {
			m->win_addrs[m->nr_win] = cw->windows[i].addr;
			m->win_lens[m->nr_win] = cw->windows[i].len;
		}
		m->win_idle[m->nr_win++] = (unsigned char)idle;
	}
}

/* Does [base, base + size) hold [addr, addr + len)?  (no overflow) */
static int holds(uint64_t base, size_t size, uint64_t addr, size_t len)
{
	return addr >= base && size >= len && addr - base <= size - len;
}

/*
 * The window of memory that holds [from, to): the allocator pool around
 * it, [*start, *end), page-rounded where it reaches past the pool.
 */
static void pool_window(uint64_t from, uint64_t to, uint64_t *start,
			uint64_t *end)
{
	uint64_t pages = (to + PAGE_BYTES - 1) & ~(PAGE_BYTES - 1);

	*start = from & ~(WINDOW_BYTES - 1);
	*end = pages > *start + WINDOW_BYTES ? pages : *start + WINDOW_BYTES;
}

/* Window n of this walk: len bytes at addr, to come with read read. */
static void window_slot(struct pywalk *w, size_t n, uint64_t addr, size_t len,
			unsigned char idle, unsigned read)
{
	struct chunk_walk_state *cw = w->chunk_walk;
	struct py_region *win = &cw->windows[n];

	ensure_buf(&win->buf, &win->alloc, len);
	win->addr = addr;
	win->len = len;
	win->read = read;
	cw->window_used[n] = 0;
	cw->window_idle[n] = idle;
	pywalk_set_iov(w, n, win->buf, addr, len);
}

/*
 * Where the innermost frame at frame is, if it is off the chunk just
 * copied and not a side frame copied with it (a generator's made since
 * the last walk, most): the window to copy around it, [*from, *to).
 */
static int innermost_window(struct pywalk *w, uint64_t frame, uint64_t *from,
			    uint64_t *to)
{
	struct chunk_walk_state *cw = w->chunk_walk;
	const struct py_offsets *off = w->rt->off;
	size_t len = (size_t)off->iframe_size, pre = side_pre(off), i;
	int state_ok;

	if (off->owner_generator == OFF_NONE || !frame || frame <= pre ||
	    frame > UINT64_MAX - len - WINDOW_BYTES)
		return 0;
	for (i = 0; i < cw->nr_chunks; i++)
		if (holds(cw->chunks[i].addr, cw->chunks[i].len, frame, len))
			return 0;
	if (side_frame(w, frame, &state_ok))
		return 0;
	pool_window(frame - pre, frame + len, from, to);
	return 1;
}

/*
 * Copy again, at once, the windows the thread's last walk took frames
 * from: a deep chain of generators read in one process_vm_readv, not a
 * window at a time as the walk comes to them.  None if any failed
 * (memory freed since): the walk reads what it needs.
 *
 * First in that read, the window around the innermost frame (at frame)
 * when it is off the chunk and no window of the memo holds it: a
 * generator made since the last walk, which may live for microseconds
 * (where the allocator puts each new one elsewhere, free-threaded
 * builds' mimalloc, every one): read as soon as its address is known,
 * not after the memo's windows.  A window of the memo that holds it is
 * read first instead.
 */
static void copy_memo_windows(struct pywalk *w, uint64_t frame)
{
	struct chunk_walk_state *cw = w->chunk_walk;
	const struct py_side_memo *m = cw->side_now;
	size_t i, nr_win = m ? m->nr_win : 0, n = 0, lead = nr_win;
	uint64_t from = 0, to = 0;
	int early;
	unsigned read;

	early = innermost_window(w, frame, &from, &to);
	for (i = 0; early && i < nr_win; i++)
		if (holds(m->win_addrs[i], m->win_lens[i], frame,
			  (size_t)w->rt->off->iframe_size)) {
			lead = i;
			early = 0;
		}
	if (!early && !nr_win)
		return;
	/*
	 * Right after the chunk's read, with none between (a thread whose
	 * copies were prefetched with others' may come to this much later),
	 * taken as one moment with it, as the chunk's own pages are: a
	 * frame and its caller, one in each, are not read again.
	 */
	read = cw->reads == cw->side_read ? cw->side_read : ++cw->reads;
	if (early && nr_win == PY_WINDOWS)
		nr_win--;
	pywalk_grow_iov(w, nr_win + 1);
	/* Not kept for the next walk unless a frame is taken from it. */
	if (early)
		window_slot(w, n++, from, (size_t)(to - from),
			    WINDOW_IDLE_WALKS - 1, read);
	if (lead < nr_win)
		window_slot(w, n++, m->win_addrs[lead], m->win_lens[lead],
			    m->win_idle[lead], read);
	for (i = 0; i < nr_win; i++)
		if (i != lead)
			window_slot(w, n++, m->win_addrs[i], m->win_lens[i],
				    m->win_idle[i], read);
	/*
	 * A window that failed reads as zeros, no frame's owner: the early
	 * one is then read again as the walk comes to its frame.
	 */
	if (proc_readv(w->rt->pid, w->local, w->remote, n) != (int)n)
		n = early;
	cw->nr_windows = n;
	cw->next_window = n % PY_WINDOWS;
}

/*
 * How much of the data-stack chunk at chunk, used up to top, to copy:
 * up to the end of top's page (chunks are mapped whole pages: a stack
 * that grew since the thread state was copied is there too).  0 when
 * there is no chunk or it is too big to copy whole.
 */
static size_t chunk_copy_len(uint64_t chunk, uint64_t top)
{
	if (!chunk || top <= chunk || top - chunk > CHUNK_MAX_BYTES)
		return 0;
	return (size_t)(((top + PAGE_BYTES - 1) & ~(PAGE_BYTES - 1)) - chunk);
}

/* Forget the last walk's chunks and side frames (keeping their memo). */
static void start_current_chunk(struct pywalk *w)
{
	struct chunk_walk_state *cw = w->chunk_walk;
	cw->nr_chunks = 0;
	cw->next_chunk = 0;
	remember_side(w);
	cw->nr_side = 0;
	cw->nr_walk_side = 0;
	cw->side_now = NULL;
	cw->nr_windows = 0;
	cw->next_window = 0;
}

/*
 * The fresh thread state names a data-stack chunk other than the one
 * copied with it: the thread crossed a chunk's end between the two
 * copies of its state (a deep recursion, often, that goes on doing so).
 * Copy the chunk it names now, whole: its frames read one by one take
 * a read each, and a walk that slow is torn more often than not.  The
 * chunk copied before stays when it is the new one's previous (the
 * thread went deeper); else it is no longer on the thread's chain.
 */
static void copy_moved_chunk(struct pywalk *w)
{
	struct chunk_walk_state *cw = w->chunk_walk;
	const struct py_offsets *off = w->rt->off;
	uint64_t chunk = load_u64(w->tstate_buf, off->tstate_datastack_chunk);
	uint64_t top = load_u64(w->tstate_buf, off->tstate_datastack_top);
	size_t len = chunk_copy_len(chunk, top);
	struct py_region *fresh, swap;

	if (!len || (cw->nr_chunks && cw->chunks[0].addr == chunk))
		return;
	if (read_region(w, chunk, len))
		return;
	fresh = &cw->chunks[cw->nr_chunks - 1];
	if (load_u64(fresh->buf, off->chunk_size) < top - chunk) {
		cw->nr_chunks--;
		return;
	}
	if (cw->nr_chunks == 2 &&
	    load_u64(fresh->buf, off->chunk_previous) == cw->chunks[0].addr)
		return;
	/* The fresh copy first and alone; the walk reads older ones. */
	swap = cw->chunks[0];
	cw->chunks[0] = *fresh;
	*fresh = swap;
	cw->nr_chunks = 1;
	cw->next_chunk = load_u64(cw->chunks[0].buf, off->chunk_previous);
}

/*
 * After read_current_chunk's copies arrived: take the fresh thread
 * state, and the chunk when its copy holds all of its used part; *frame
 * is the innermost frame per the new copy.  Returns 0 or -errno.
 */
static int finish_current_chunk(struct pywalk *w, struct py_region *rg,
				uint64_t chunk, uint64_t top, size_t len,
				uint64_t cframe, uint64_t current,
				uint64_t *frame)
{
	struct chunk_walk_state *cw = w->chunk_walk;
	const struct py_offsets *off = w->rt->off;
	uint64_t fresh_cframe;
	int r;

	pywalk_take_fresh_tstate(w);
	/* A region that failed reads as zeros: no size, not taken. */
	if (rg && load_u64(rg->buf, off->chunk_size) >= top - chunk) {
		rg->addr = chunk;
		rg->len = len;
		cw->nr_chunks = 1;
		cw->next_chunk = load_u64(rg->buf, off->chunk_previous);
	}
	copy_moved_chunk(w);
	cw->walk_cframe = 0;
	if (off->tstate_cframe == OFF_NONE) {
		*frame = load_u64(w->tstate_buf, off->tstate_current_frame);
		copy_memo_windows(w, *frame);
		return 0;
	}
	/* 3.11, 3.12: through the C frame, which may have changed too. */
	fresh_cframe = load_u64(w->tstate_buf, off->tstate_cframe);
	cw->walk_cframe = fresh_cframe;
	if (fresh_cframe != cframe || !current) {
		current = 0;
		if (fresh_cframe &&
		    (r = proc_read(w->rt->pid,
				   fresh_cframe +
				       (uint64_t)off->cframe_current_frame,
				   &current, sizeof(current))))
			return r;
	}
	*frame = current;
	/*
	 * After the innermost frame is known: a generator's frame copied
	 * before it was resumed would read as suspended (3.11 resumes each
	 * generator of a `yield from` chain in a C frame of its own).
	 */
	copy_memo_windows(w, current);
	return 0;
}

/*
 * The copies chunk_prefetch made for the thread at tstate, moved
 * to where read_current_chunk puts its own; 1 if there were any (for the
 * same chunk and top as w->tstate_buf's), else 0.  The read was shared
 * with the other threads: whether all its regions came says nothing of
 * this thread's, and a region that failed reads as zeros, so the copy's
 * own chunk size tells.
 */
static int take_pre_chunk(struct pywalk *w, uint64_t tstate, uint64_t chunk,
			  uint64_t top, struct py_region **rgp,
			  uint64_t *cframe, uint64_t *current)
{
	struct chunk_walk_state *cw = w->chunk_walk;
	const struct py_offsets *off = w->rt->off;
	size_t i;
	struct py_chunk_pre *pc = NULL;
	struct py_region *rg;

	for (i = 0; i < cw->nr_pre_chunks && !pc; i++)
		if (cw->pre_chunks[i].tstate == tstate &&
		    cw->pre_chunks[i].ready)
			pc = &cw->pre_chunks[i];
	if (!pc)
		return 0;
	pc->ready = 0;
	if (pc->chunk != chunk || pc->top != top)
		return 0;
	/* The copies change hands: the prefetch reads into the old ones. */
	swap_buf(&w->fresh_tstate, &pc->fresh);
	*cframe = pc->cframe;
	*current = pc->current;
	*rgp = NULL;
	if (pc->len) {
		rg = new_region(w);
		swap_sized_buf(&rg->buf, &rg->alloc, &pc->buf, &pc->alloc);
		rg->read = cw->pre_read;
		*rgp = rg;
	}
	cw->side_read = cw->pre_read;
	if (side_frames_on(off)) {
		cw->side_now = side_memo(w, tstate);
		if (!cw->side_buf)
			cw->side_buf = xmalloc(PY_SIDE_KEPT * side_stride(off));
		cw->nr_side = pc->nr_side;
		memcpy(cw->side_addrs, pc->side_addrs,
		       pc->nr_side * sizeof(*cw->side_addrs));
		swap_buf(&cw->side_buf, &pc->side);
	}
	return 1;
}

/*
 * 3.11+: copy the thread state again, and right after it (one
 * process_vm_readv, so the two agree as closely as they can) the used
 * part of its newest data-stack chunk, where most of its frames live,
 * up to the end of the page (a stack that grew since the first copy),
 * and on 3.12+ the shim frames its last walk found off the chunk.
 * chunk_prefetch may have made these copies already, for every
 * thread at once.  *frame is the innermost frame per the new copy.
 * Returns 0 or -errno.
 */
static int read_current_chunk(struct pywalk *w, uint64_t tstate,
			      uint64_t *frame)
{
	struct chunk_walk_state *cw = w->chunk_walk;
	const struct py_offsets *off = w->rt->off;
	uint64_t chunk, top, cframe = 0, current = 0;
	struct py_region *rg = NULL;
	size_t n = 0, len;
	int r;

	start_current_chunk(w);
	chunk = load_u64(w->tstate_buf, off->tstate_datastack_chunk);
	top = load_u64(w->tstate_buf, off->tstate_datastack_top);
	len = chunk_copy_len(chunk, top);
	if (take_pre_chunk(w, tstate, chunk, top, &rg, &cframe, &current))
		return finish_current_chunk(w, rg, chunk, top, len, cframe,
					    current, frame);
	cw->side_read = ++cw->reads;
	pywalk_grow_iov(w, 4 + PY_SIDE_KEPT);
	pywalk_set_iov(w, n++, w->fresh_tstate, tstate,
		       (size_t)off->tstate_size);
	/* The innermost frame before the frames: not newer than they. */
	if (off->tstate_cframe != OFF_NONE &&
	    (cframe = load_u64(w->tstate_buf, off->tstate_cframe)))
		pywalk_set_iov(w, n++, &current,
			       cframe + (uint64_t)off->cframe_current_frame,
			       sizeof(current));
	if (len) {
		rg = new_region(w);
		ensure_buf(&rg->buf, &rg->alloc, len);
		rg->read = cw->side_read;
		pywalk_set_iov(w, n++, rg->buf, chunk, len);
	}
	if (side_frames_on(off)) {
		size_t i, stride = side_stride(off);

		cw->side_now = side_memo(w, tstate);
		if (!cw->side_buf)
			cw->side_buf = xmalloc(PY_SIDE_KEPT * stride);
		for (i = 0; i < cw->side_now->nr; i++) {
			cw->side_addrs[i] = cw->side_now->addrs[i];
			pywalk_set_iov(w, n++, cw->side_buf + i * stride,
				       cw->side_addrs[i] - side_pre(off),
				       stride);
		}
		cw->nr_side = cw->side_now->nr;
		/* A copy that failed reads as zeros: no side frame's owner. */
		memset(cw->side_buf, 0, cw->nr_side * stride);
	}
	r = proc_readv(w->rt->pid, w->local, w->remote, n);
	if (r < 0)
		return r;
	return finish_current_chunk(w, rg, chunk, top, len, cframe, current,
				    frame);
}

/* Most threads whose chunks chunk_prefetch reads at once. */
#define PREFETCH_THREADS_MAX 64

/*
 * Before walking threads whose thread states are copied at copies (the n
 * at tstates[i] for which walk[i] is set): copy what each walk reads
 * first (the thread state again, its newest data-stack chunk, its shims)
 * for all of them in one process_vm_readv.
 */
static void chunk_prefetch(struct pywalk *w, const unsigned char *copies,
			   const uint64_t *tstates, const int *walk, size_t n)
{
	struct chunk_walk_state *cw = w->chunk_walk;
	const struct py_offsets *off = w->rt->off;
	size_t tsize = (size_t)off->tstate_size, stride, i, k = 0, nr_iov = 0;
	int r;

	cw->nr_pre_chunks = 0;
	if (off->tstate_datastack_chunk == OFF_NONE ||
	    off->iframe_size == OFF_NONE || n > PREFETCH_THREADS_MAX ||
	    cw->nr_side_memos + n >= PY_MAX_THREADS)
		return;
	stride = side_stride(off);
	/*
	 * Grown once, before any iovec points into it (&pc->current): a
	 * move would have the read write into freed memory.
	 */
	if (n > cw->alloc_pre_chunks) {
		size_t old = cw->alloc_pre_chunks;

		ALLOC_GROW(cw->pre_chunks, n, cw->alloc_pre_chunks);
		memset(cw->pre_chunks + old, 0,
		       (cw->alloc_pre_chunks - old) * sizeof(*cw->pre_chunks));
	}
	/* Keep the last walk's side frames before memos move (they grow). */
	start_current_chunk(w);
	pywalk_grow_iov(w, n * (4 + PY_SIDE_KEPT));
	for (i = 0; i < n; i++) {
		const unsigned char *copy = copies + i * tsize;
		struct py_chunk_pre *pc;

		if (!walk[i])
			continue;
		pc = &cw->pre_chunks[k++];
		if (!pc->fresh)
			pc->fresh = xmalloc(tsize);
		pc->tstate = tstates[i];
		pc->chunk = load_u64(copy, off->tstate_datastack_chunk);
		pc->top = load_u64(copy, off->tstate_datastack_top);
		pc->len = chunk_copy_len(pc->chunk, pc->top);
		pc->cframe = pc->current = 0;
		pc->nr_side = 0;
		pywalk_set_iov(w, nr_iov++, pc->fresh, pc->tstate, tsize);
		if (off->tstate_cframe != OFF_NONE &&
		    (pc->cframe = load_u64(copy, off->tstate_cframe)))
			pywalk_set_iov(w, nr_iov++, &pc->current,
				       pc->cframe +
					   (uint64_t)off->cframe_current_frame,
				       sizeof(pc->current));
		if (pc->len) {
			ensure_buf(&pc->buf, &pc->alloc, pc->len);
			pywalk_set_iov(w, nr_iov++, pc->buf, pc->chunk,
				       pc->len);
		}
		if (side_frames_on(off)) {
			const struct py_side_memo *m = side_memo(w, pc->tstate);
			size_t j;

			if (!pc->side)
				pc->side = xmalloc(PY_SIDE_KEPT * stride);
			pc->nr_side = m->nr;
			for (j = 0; j < m->nr; j++) {
				pc->side_addrs[j] = m->addrs[j];
				pywalk_set_iov(
				    w, nr_iov++, pc->side + j * stride,
				    m->addrs[j] - side_pre(off), stride);
			}
			/* A copy that failed reads as zeros: no owner. */
			memset(pc->side, 0, pc->nr_side * stride);
		}
	}
	if (!k)
		return;
	cw->pre_read = ++cw->reads;
	r = proc_readv(w->rt->pid, w->local, w->remote, nr_iov);
	if (r < 0)
		return;
	for (i = 0; i < k; i++)
		cw->pre_chunks[i].ready = 1;
	cw->nr_pre_chunks = k;
}

/* Copy the next older chunk, up to its saved top; 0 or -1. */
static int read_older_chunk(struct pywalk *w)
{
	struct chunk_walk_state *cw = w->chunk_walk;
	const struct py_offsets *off = w->rt->off;
	unsigned char head[64];
	uint64_t chunk = cw->next_chunk, top;
	size_t len;

	cw->next_chunk = 0;
	if (!chunk || cw->nr_chunks >= CHUNKS_MAX ||
	    (size_t)off->chunk_data > sizeof(head) ||
	    proc_read(w->rt->pid, chunk, head, (size_t)off->chunk_data))
		return -1;
	/* The saved top counts PyObject * slots after data[]. */
	top = load_u64(head, off->chunk_top);
	len = (size_t)off->chunk_data + (size_t)top * 8;
	if (top > CHUNK_MAX_BYTES / 8 || read_region(w, chunk, len))
		return -1;
	cw->next_chunk = load_u64(head, off->chunk_previous);
	return 0;
}

/* iframe_bytes' region of a frame copied with the chunk, off it. */
#define REGION_SIDE (-2)

/* The walk takes a frame from [lo, hi) of window i. */
static void note_window_use(struct pywalk *w, size_t i, uint64_t lo,
			    uint64_t hi)
{
	struct chunk_walk_state *cw = w->chunk_walk;
	if (!cw->window_used[i] || lo < cw->window_lo[i])
		cw->window_lo[i] = lo;
	if (!cw->window_used[i] || hi > cw->window_hi[i])
		cw->window_hi[i] = hi;
	cw->window_used[i] = 1;
}

/*
 * The window copied this walk that holds [addr, addr + len), or NULL.
 */
static const struct py_region *window_with(struct pywalk *w, uint64_t addr,
					   size_t len)
{
	struct chunk_walk_state *cw = w->chunk_walk;
	size_t i;

	for (i = 0; i < cw->nr_windows; i++) {
		const struct py_region *win = &cw->windows[i];

		if (holds(win->addr, win->len, addr, len))
			return win;
	}
	return NULL;
}

/*
 * Copy a window of memory that holds [from, to): the allocator pool
 * around it, or failing that (memory malloc gave, at the end of its
 * mapping) its own pages.  Returns the window, or NULL if neither read.
 */
static const struct py_region *read_window(struct pywalk *w, uint64_t from,
					   uint64_t to)
{
	struct chunk_walk_state *cw = w->chunk_walk;
	struct py_region *win = &cw->windows[cw->next_window];
	uint64_t start[2], end[2];
	int k;

	/* Torn pointers can be anything: no overflow. */
	if (to > UINT64_MAX - WINDOW_BYTES)
		return NULL;
	pool_window(from, to, &start[0], &end[0]);
	start[1] = from & ~(PAGE_BYTES - 1);
	end[1] = (to + PAGE_BYTES - 1) & ~(PAGE_BYTES - 1);
	ensure_buf(&win->buf, &win->alloc, (size_t)(end[0] - start[0]));
	for (k = 0; k < 2; k++)
		if (!proc_read(w->rt->pid, start[k], win->buf,
			       (size_t)(end[k] - start[k])))
			break;
	if (k == 2)
		return NULL;
	win->addr = start[k];
	win->len = (size_t)(end[k] - start[k]);
	win->read = ++cw->reads;
	cw->window_used[cw->next_window] = 0;
	/* Not kept for the next walk unless a generator's frame is taken. */
	cw->window_idle[cw->next_window] = WINDOW_IDLE_WALKS - 1;
	cw->next_window = (cw->next_window + 1) % PY_WINDOWS;
	if (cw->nr_windows < PY_WINDOWS)
		cw->nr_windows++;
	return win;
}

/*
 * The bytes of the interpreter frame at addr, from a chunk (*region is
 * its index), a side frame copied with the newest chunk (REGION_SIDE)
 * or a read of its own (*region is -1); *read says which read copied
 * them.  A frame read on its own is read with the bytes before it
 * where a generator keeps its state (gen_state_at), and *state_ok says
 * whether they came.
 */
static const unsigned char *iframe_bytes(struct pywalk *w, uint64_t addr,
					 long *region, unsigned *read,
					 int *state_ok, int *err)
{
	struct chunk_walk_state *cw = w->chunk_walk;
	const struct py_offsets *off = w->rt->off;
	size_t len = (size_t)off->iframe_size, pre = 0;
	const struct py_region *win;
	const unsigned char *f;
	size_t i;

	for (;;) {
		for (i = 0; i < cw->nr_chunks; i++) {
			const struct py_region *rg = &cw->chunks[i];

			/* Torn pointers can be anything: no overflow. */
			if (holds(rg->addr, rg->len, addr, len)) {
				*region = (long)i;
				*read = rg->read;
				*state_ok = 0;
				return rg->buf + (addr - rg->addr);
			}
		}
		/* Copied with the chunk: no older chunk holds it. */
		f = side_frame(w, addr, state_ok);
		if (f) {
			*region = REGION_SIDE;
			*read = cw->side_read;
			note_side(w, addr);
			return f;
		}
		/* Frames of generators live outside the chunks. */
		if (!cw->next_chunk || read_older_chunk(w))
			break;
	}
	*region = -1;
	if (off->gen_state_at != OFF_NONE && off->gen_state_at < 0 &&
	    -off->gen_state_at <= PY_FRAME_PREFIX_MAX &&
	    addr > PY_FRAME_PREFIX_MAX)
		pre = (size_t)-off->gen_state_at;
	/*
	 * Windows are for generators' frames: any other frame is taken
	 * from a read made now, as the walk comes to it.
	 */
	win = NULL;
	if (addr > pre && addr < UINT64_MAX - len &&
	    off->owner_generator != OFF_NONE) {
		win = window_with(w, addr - pre, len + pre);
		if (win && win->buf[addr - win->addr + off->iframe_owner] !=
			       off->owner_generator)
			win = NULL;
		if (!win)
			win = read_window(w, addr - pre, addr + len);
	}
	if (win) {
		f = win->buf + (addr - win->addr);
		*read = win->read;
		*state_ok = pre > 0;
		if (f[off->iframe_owner] == off->owner_generator)
			note_window_use(w, (size_t)(win - cw->windows),
					addr - pre, addr + len);
	} else {
		*err =
		    proc_read(w->rt->pid, addr - pre, cw->frame_buf, len + pre);
		if (*err && pre) {
			pre = 0;
			*err = proc_read(w->rt->pid, addr, cw->frame_buf, len);
		}
		*state_ok = pre > 0;
		*read = ++cw->reads;
		if (*err)
			return NULL;
		f = cw->frame_buf + pre;
	}
	/*
	 * A shim or a generator's frame read on its own: copy it with the
	 * chunk next time.
	 */
	if ((off->owner_cstack != OFF_NONE &&
	     f[off->iframe_owner] == off->owner_cstack) ||
	    (off->owner_generator != OFF_NONE &&
	     f[off->iframe_owner] == off->owner_generator))
		note_side(w, addr);
	return f;
}

/* One interpreter frame of a 3.11+ walk, and where it was found. */
struct iframe_seen {
	uint64_t addr;
	long region;   /* chunk index, or -1 */
	int direct;    /* called its callee itself, no C call between */
	unsigned read; /* the read that copied it (iframe_bytes) */
};

/*
 * Does the code object at code, as it is now, put a callee of its frame
 * at self at callee?  The cache may be out of date: the code object it
 * had there freed and another made at its address since.  A size from
 * the cache would then reject every sample, and samples rejected in the
 * walk never reach pyresolve_frames, which would bring the cache up to
 * date: so before rejecting, one read tells the size now.
 */
static int size_now_fits(struct pywalk *w, uint64_t code, uint64_t self,
			 uint64_t callee)
{
	unsigned char header[CODE_HEADER_MAX];
	size_t len = w->codes.header_len;
	long words;

	if (len > sizeof(header) || proc_read(w->rt->pid, code, header, len))
		return 0;
	words = pycode_framesize(&w->codes, header);
	return words && callee == self + (uint64_t)words * 8;
}

/*
 * 3.11+: can frame f, found at addr (region: see iframe_bytes), be
 * part of the thread's live chain, with callee (the frame walked just
 * before it, addr 0 if none) called by it?  Frames on the data stack
 * are the thread's own and sit end to end, each callee right after its
 * caller's co_framesize words: a frame popped and its place reused
 * while the chain was read breaks that.  A generator's frame is in the
 * chain only while the generator runs; one that suspended mid-read has
 * its previous link cleared and would end the chain early.  On 3.12 and
 * 3.13 a frame that called a Python function directly saved its stack
 * depth, and sets it to -1 again when it runs: a frame found running
 * where its callee should be had that callee return (*running is set;
 * see the walk for what is then taken).
 *
 * 3.14 saves a stack pointer instead and clears it on resuming only in
 * debug builds (_PyFrame_GetStackPointer, pycore_interpframe.h), so a
 * caller that runs again looks like one that calls.  But 3.14 clears a
 * returning frame's code (PyStackRef_CLEAR of f_executable in ceval.c's
 * clear_thread_frame), which 3.12 and 3.13 did not, and that serves
 * the same end: a chunk is copied from low addresses up (one iovec of
 * process_vm_readv, page by page in order) and each callee sits above
 * its caller, so a callee that returned before its caller was copied
 * is copied with no code, which the walk takes as torn (in a
 * free-threaded build too: the cleared reference, PyStackRef_NULL, is
 * the bare deferred tag, which PY_STACKREF_TAG_MASK clears to 0).  A
 * frame found there with code is a call the caller has made since: the
 * link is real, the caller's line at most a statement early.  A caller
 * copied after its callee (in an older chunk, or a generator's frame)
 * is followed by a chunk frame noted for links_still_hold, which finds
 * the thread no longer in the walk's first frame if the callee returned.
 */
static int iframe_live(struct pywalk *w, const unsigned char *f, uint64_t code,
		       const struct iframe_seen *self,
		       const struct iframe_seen *callee, int state_ok,
		       int *running)
{
	const struct py_offsets *off = w->rt->off;
	long owner = f[off->iframe_owner];
	int32_t stacktop;

	*running = 0;
	if (callee->addr && self->direct && off->iframe_stacktop != OFF_NONE) {
		memcpy(&stacktop, f + off->iframe_stacktop, sizeof(stacktop));
		*running = stacktop < 0;
	}
	if (self->region >= 0) {
		const struct pycode *c;

		if (off->owner_thread != OFF_NONE && owner != off->owner_thread)
			return 0;
		/* Only a code object seen before says its size: no read. */
		if (callee->addr && callee->region == self->region &&
		    (c = pycode_peek(&w->codes, code)) && c->framesize &&
		    callee->addr != self->addr + (uint64_t)c->framesize * 8 &&
		    !size_now_fits(w, code, self->addr, callee->addr))
			return 0;
		return 1;
	}
	if (off->owner_generator != OFF_NONE && owner == off->owner_generator &&
	    state_ok && (callee->addr || !load_u64(f, off->iframe_previous)))
		return (signed char)f[off->gen_state_at] == off->gen_executing;
	return 1;
}

/*
 * 3.13+: is code the trampoline that runs a class's __init__ (pycode's
 * hidden), the one frame that calls from its first instruction?  Read
 * once per code object, as the walk's resolve would.
 */
static int trampoline_code(struct pywalk *w, uint64_t code)
{
	const struct pycode *c = pycode_known(&w->codes, code);

	return c && c->hidden;
}

/*
 * Where interpreter frame f (running code) is: the byte offset of its
 * instruction in the code's bytecode (-1: unknown), with *tlbc 0.
 * Free-threaded, a frame may run its thread's own copy of the bytecode
 * (*tlbc > 0, the copy's index in the code's co_tlbc): then the
 * instruction's address, made an offset once the copy is read with the
 * code (pyresolve_frames).
 */
static long iframe_where(const struct py_offsets *off, const unsigned char *f,
			 uint64_t code, int32_t *tlbc)
{
	uint64_t instr = load_u64(f, off->iframe_instr);
	uint64_t start = code + (uint64_t)off->code_code_adaptive;

	*tlbc = 0;
	if (off->iframe_tlbc_index != OFF_NONE)
		memcpy(tlbc, f + off->iframe_tlbc_index, sizeof(*tlbc));
	if (*tlbc)
		return (long)instr;
	return instr >= start ? (long)(instr - start) : -1;
}

/*
 * 3.11+: does the thread's data stack hold frames, per the thread state
 * copy?  The first chunk keeps its first slot unused (push_chunk in
 * CPython's Python/pystate.c), so anything past it is a frame.  -1 when
 * the offsets do not say (_Py_DebugOffsets has no top).
 */
static int datastack_in_use(const struct pywalk *w)
{
	const struct py_offsets *off = w->rt->off;
	uint64_t chunk, top;

	if (off->tstate_datastack_top == OFF_NONE ||
	    off->tstate_datastack_chunk == OFF_NONE ||
	    off->chunk_data == OFF_NONE)
		return -1;
	chunk = load_u64(w->tstate_buf, off->tstate_datastack_chunk);
	top = load_u64(w->tstate_buf, off->tstate_datastack_top);
	return chunk && top > chunk &&
	       top - chunk > (uint64_t)off->chunk_data + 8;
}

/*
 * Note chunk frame f at addr for links_still_hold (see py_link_check);
 * gen: its callee, when that is a generator's frame, else 0; shim: the
 * C-stack shim between them, else 0.
 */
static void note_link(struct pywalk *w, const unsigned char *f, uint64_t addr,
		      uint64_t gen, uint64_t shim)
{
	struct chunk_walk_state *cw = w->chunk_walk;
	const struct py_offsets *off = w->rt->off;
	struct py_link_check *l;

	ALLOC_GROW(cw->links, cw->nr_links + 1, cw->alloc_links);
	l = &cw->links[cw->nr_links++];
	l->addr = addr;
	l->code = load_u64(f, off->iframe_code);
	l->previous = load_u64(f, off->iframe_previous);
	l->instr = load_u64(f, off->iframe_instr);
	l->gen = gen;
	l->shim = gen ? shim : 0;
}

/*
 * A chain that crosses a frame read on its own, or copied beside the
 * chunk, was read over a span of time, not at once: a generator's frame
 * read apart from the chunk may have been freed and its memory reused
 * by a generator another caller runs, linking to a chunk frame that, in
 * the chunk's copy, was a different call.  So, once, after the walk,
 * every chunk frame reached from such a frame must still hold the code,
 * caller and instruction it was read with, and the link to it must
 * still be there: a generator's frame that still runs (its state, read
 * with it, says so; only a running generator is on a thread's chain)
 * and still has it as its caller; else (a shim on the C stack, a frame
 * of a newer chunk, which can be left over from a call that returned)
 * the thread must still be in the frame the walk started from.  One
 * read, only for chains that cross; 1 when it holds.
 */
static int links_still_hold(struct pywalk *w, uint64_t tstate)
{
	struct chunk_walk_state *cw = w->chunk_walk;
	const struct py_offsets *off = w->rt->off;
	size_t hlen = (size_t)off->iframe_size, stride = side_stride(off);
	size_t pre = side_pre(off), n = 0, i, strict = 0;
	uint64_t where = 0, cframe_now = 0;
	unsigned char *b, *g, *sh;

	if (!cw->nr_links)
		return 1;
	pywalk_grow_iov(w, 3 * cw->nr_links + 2);
	ensure_buf(&cw->link_buf, &cw->alloc_link_buf,
		   cw->nr_links * (2 * hlen + stride));
	/* Two shims in a row (1): not a link this check can follow. */
	for (i = 0; i < cw->nr_links; i++)
		strict += !cw->links[i].gen || cw->links[i].shim == 1;
	if (strict && cw->walk_cframe)
		pywalk_set_iov(w, n++, &cframe_now,
			       tstate + (uint64_t)off->tstate_cframe,
			       sizeof(cframe_now));
	if (strict)
		pywalk_set_iov(
		    w, n++, &where,
		    cw->walk_cframe
			? cw->walk_cframe + (uint64_t)off->cframe_current_frame
			: tstate + (uint64_t)off->tstate_current_frame,
		    sizeof(where));
	b = cw->link_buf;
	g = cw->link_buf + cw->nr_links * hlen;
	sh = g + cw->nr_links * stride;
	/* Generators' frames first: each is its caller's callee. */
	for (i = 0; i < cw->nr_links; i++)
		if (cw->links[i].gen)
			pywalk_set_iov(w, n++, g + i * stride,
				       cw->links[i].gen - pre, stride);
	for (i = 0; i < cw->nr_links; i++)
		if (cw->links[i].gen && cw->links[i].shim > 1)
			pywalk_set_iov(w, n++, sh + i * hlen, cw->links[i].shim,
				       hlen);
	for (i = 0; i < cw->nr_links; i++)
		pywalk_set_iov(w, n++, b + i * hlen, cw->links[i].addr, hlen);
	if (proc_readv(w->rt->pid, w->local, w->remote, n) < 0)
		return 0;
	if (strict &&
	    (cframe_now != cw->walk_cframe || where != cw->walk_frame))
		return 0;
	for (i = 0; i < cw->nr_links; i++, b += hlen) {
		const struct py_link_check *l = &cw->links[i];
		const unsigned char *gf = g + i * stride + pre;
		const unsigned char *sf = sh + i * hlen;

		if (load_u64(b, off->iframe_code) != l->code ||
		    load_u64(b, off->iframe_previous) != l->previous ||
		    load_u64(b, off->iframe_instr) != l->instr)
			return 0;
		/*
		 * A generator that suspended since says nothing of its copy:
		 * its caller held the same call from before that copy to
		 * now (checked above), and the copy linked the two.
		 */
		if (!l->gen || gf[off->iframe_owner] != off->owner_generator ||
		    (signed char)gf[off->gen_state_at] != off->gen_executing)
			continue;
		if (load_u64(gf, off->iframe_previous) !=
		    (l->shim > 1 ? l->shim : l->addr))
			return 0;
		if (l->shim > 1 &&
		    (sf[off->iframe_owner] != off->owner_cstack ||
		     load_u64(sf, off->iframe_previous) != l->addr))
			return 0;
	}
	return 1;
}

/*
 * Note the link from the walk's last frame, callee (its code
 * callee_code, its owner callee_owner; callee_returned: see the walk),
 * to frame f at addr, running code, which calls it through the C-stack shim at
 * shim (0 if none; shim_more: more shims after it), for side_links_hold.
 */
static void note_side_link(struct pywalk *w, const unsigned char *f,
			   uint64_t addr, uint64_t code, uint64_t callee,
			   uint64_t callee_code, long callee_owner,
			   int callee_returned, uint64_t shim, int shim_more)
{
	struct chunk_walk_state *cw = w->chunk_walk;
	const struct py_offsets *off = w->rt->off;
	struct py_side_link *l;
	struct call_edge e;

	e.code = code;
	e.callee = callee_code;
	if (call_edges_has(&cw->side_edges, &e) ||
	    call_edges_has(&w->call_edges, &e))
		return;
	ALLOC_GROW(cw->side_links, cw->nr_side_links + 1, cw->alloc_side_links);
	l = &cw->side_links[cw->nr_side_links++];
	l->callee = callee;
	l->callee_code = callee_code;
	l->callee_owner = callee_owner;
	l->callee_returned = callee_returned;
	l->callee_previous = shim ? shim : addr;
	l->shim = shim_more ? 0 : shim;
	l->caller = addr;
	l->caller_owner = f[off->iframe_owner];
	l->caller_code = code;
	l->caller_previous = load_u64(f, off->iframe_previous);
	l->caller_instr = load_u64(f, off->iframe_instr);
}

/* Bytes of a side link's frame at addr, the bytes before it included. */
static size_t link_frame_len(const struct py_offsets *off, long owner)
{
	return owner == off->owner_generator ? side_stride(off)
					     : (size_t)off->iframe_size;
}

/*
 * Does the frame copied at buf (its generator's state before it when
 * owner says it is one) still run, with code and previous link?
 */
static int link_frame_runs(const struct py_offsets *off,
			   const unsigned char *buf, long owner, uint64_t code,
			   uint64_t previous)
{
	const unsigned char *f =
	    buf + (owner == off->owner_generator ? side_pre(off) : 0);

	if (f[off->iframe_owner] != owner ||
	    (load_u64(f, off->iframe_code) & ~PY_STACKREF_TAG_MASK) != code ||
	    load_u64(f, off->iframe_previous) != previous)
		return 0;
	return owner != off->owner_generator || !side_pre(off) ||
	       (signed char)f[off->gen_state_at] == off->gen_executing;
}

/*
 * A frame and its caller off the chunk copied by different reads (a
 * generator's frame found in a window read as the walk came to it, its
 * caller's in another) were each true at its own moment, not
 * necessarily together: a generator freed between the two reads has its
 * memory taken by the next one made, mostly at once (CPython's
 * allocators hand out what was just freed), so a callee's copy can link
 * to the address of a caller that, by the time it is copied, is another
 * generator of another chain.  On free-threaded 3.14, json's encoder
 * was seen so, a list's generator under another list's, and on 3.12 a
 * coroutine under its caller's caller, in about one dump in 15,000.  So
 * each such link is read again after the walk, in one process_vm_readv:
 * the callee must still run with its code and its link to the caller
 * (through the shim between them, if one), and the caller must still be
 * where the walk found it (code, instruction, its own caller), running
 * (only the caller, for a callee that had returned when it was copied:
 * see the walk).  Then the link held from the first of the two copies
 * through the second, and the frames copied are true together.  The
 * innermost generator of a chain mostly yields before that read, so,
 * as for the chunk's calls (edges_still_hold), only a call not seen
 * yet is read again: one that holds is learnt (the allocator's swaps
 * put a generator under a caller of another code, a call the program
 * does not make).  1 when every link holds.
 */
static int side_links_hold(struct pywalk *w)
{
	struct chunk_walk_state *cw = w->chunk_walk;
	const struct py_offsets *off = w->rt->off;
	size_t hlen = (size_t)off->iframe_size, max = side_stride(off);
	size_t i, n = 0;
	unsigned char *b;

	if (!cw->nr_side_links)
		return 1;
	if (max < hlen)
		max = hlen;
	pywalk_grow_iov(w, 3 * cw->nr_side_links);
	ensure_buf(&cw->side_link_buf, &cw->alloc_side_link_buf,
		   cw->nr_side_links * 3 * max);
	for (i = 0, b = cw->side_link_buf; i < cw->nr_side_links;
	     i++, b += 3 * max) {
		const struct py_side_link *l = &cw->side_links[i];
		size_t clen = link_frame_len(off, l->callee_owner);
		size_t ylen = link_frame_len(off, l->caller_owner);

		pywalk_set_iov(w, n++, b, l->callee - (clen - hlen), clen);
		if (l->shim)
			pywalk_set_iov(w, n++, b + max, l->shim, hlen);
		pywalk_set_iov(w, n++, b + 2 * max, l->caller - (ylen - hlen),
			       ylen);
	}
	if (proc_readv(w->rt->pid, w->local, w->remote, n) != (int)n)
		return 0;
	for (i = 0, b = cw->side_link_buf; i < cw->nr_side_links;
	     i++, b += 3 * max) {
		const struct py_side_link *l = &cw->side_links[i];
		const unsigned char *caller =
		    b + 2 * max +
		    (l->caller_owner == off->owner_generator ? side_pre(off)
							     : 0);

		if ((!l->callee_returned &&
		     !link_frame_runs(off, b, l->callee_owner, l->callee_code,
				      l->callee_previous)) ||
		    !link_frame_runs(off, b + 2 * max, l->caller_owner,
				     l->caller_code, l->caller_previous) ||
		    load_u64(caller, off->iframe_instr) != l->caller_instr)
			return 0;
		if (l->shim && !l->callee_returned &&
		    (b[max + off->iframe_owner] != off->owner_cstack ||
		     load_u64(b + max, off->iframe_previous) != l->caller))
			return 0;
	}
	for (i = 0; i < cw->nr_side_links; i++) {
		struct call_edge e = {.code = cw->side_links[i].caller_code,
				      .callee = cw->side_links[i].callee_code};

		call_edges_add(&cw->side_edges, &e, w->sample_stamp);
	}
	return 1;
}

/*
 * 3.14+: reads of the calls not learnt yet before a sample is given up
 * (see edges_still_hold); up to 3.13, one.
 */
#define EDGE_POLLS 16
/* Most bytes from a caller's frame to its callee's end read at once. */
#define EDGE_SPAN_MAX 65536

/* Bytes from c's caller's frame to the end of its callee's. */
static size_t pair_span(const struct py_offsets *off,
			const struct py_edge_check *c)
{
	return (size_t)(c->callee - c->caller) + (size_t)off->iframe_size;
}

/* 3.11-3.13: is op (a code unit's first byte) one that returns? */
static int returns_at(const struct py_offsets *off, uint8_t op)
{
	return op == off->op_return_value || op == off->op_return_const ||
	       op == off->op_instrumented_return_value ||
	       op == off->op_instrumented_return_const;
}

/*
 * Does span, a copy of the caller's frame up to the end of its callee's
 * (one iovec: copied at once, from low addresses up), show the call c,
 * with top_now the lowest of the thread's data-stack tops read before
 * and after it?  The caller must be where the walk found it (code,
 * instruction, its own caller) and not just pushed (up to 3.12 before
 * its first instruction, with the bytes of an older frame above it;
 * 3.13+ start at the first, where the trampoline that runs a class's
 * __init__ stays while it calls); on 3.12 and 3.13 it must still be
 * calling (its saved stack depth is -1 once it runs again).  The callee
 * must be the same code, called by it, and under the top (a frame that
 * returned keeps its bytes; 3.14+ clears its code).
 */
static int call_holds(const struct py_offsets *off,
		      const struct py_edge_check *c, const unsigned char *span,
		      uint64_t top_now)
{
	size_t hlen = (size_t)off->iframe_size;
	const unsigned char *callee = span + (c->callee - c->caller);
	int32_t stacktop, tlbc;

	if ((load_u64(span, off->iframe_code) & ~PY_STACKREF_TAG_MASK) !=
		c->edge.code ||
	    load_u64(span, off->iframe_instr) != c->caller_instr ||
	    load_u64(span, off->iframe_previous) != c->caller_previous ||
	    (iframe_where(off, span, c->edge.code, &tlbc) < 0 && !tlbc) ||
	    (load_u64(callee, off->iframe_code) & ~PY_STACKREF_TAG_MASK) !=
		c->edge.callee ||
	    load_u64(callee, off->iframe_previous) != c->caller)
		return 0;
	if (off->iframe_stacktop != OFF_NONE) {
		memcpy(&stacktop, span + off->iframe_stacktop,
		       sizeof(stacktop));
		if (stacktop < 0)
			return 0;
	}
	/*
	 * 3.11-3.13: a frame that returned keeps its bytes, its instruction
	 * at the return, and no read of the top can tell it from a callee
	 * caught there (the top moves on while the pair is copied).  So a
	 * pair is not learnt from an innermost callee that the walk and this
	 * read both found at a return (one that moved ran: it is no leftover;
	 * up to 3.12 a frame that calls points past the call, into data, so
	 * only the innermost, which points at an instruction, is judged), nor
	 * on 3.13 from a caller at a return (it saves its stack depth there,
	 * as it does to call, and then calls nothing).
	 */
	if (off->op_return_value != OFF_NONE &&
	    ((c->callee_innermost &&
	      load_u64(callee, off->iframe_instr) == c->callee_instr &&
	      returns_at(off, c->callee_unit[0])) ||
	     (off->hexversion >= 0x030d0000 &&
	      returns_at(off, c->caller_unit[0]))))
		return 0;
	/*
	 * A frame ends where its locals and stack do: a function with no
	 * locals and no stack (3.11, 3.12: `while True: pass`) ends at
	 * localsplus, before the end of the struct (localsplus[1]).
	 */
	return top_now >= c->callee + (off->iframe_localsplus != OFF_NONE
					   ? (size_t)off->iframe_localsplus
					   : hlen);
}

/*
 * A caller and its callee copied with the chunk may not have been a
 * caller and callee at once: the walk starts from the innermost frame
 * read before the chunk, which may have returned since, leaving its
 * bytes above a caller that runs again or another call made in its
 * caller's place; and between the copies of a caller and its callee the
 * caller may return and another call of the same size take its place
 * and its callee's.  Such a pair is most often of two functions that
 * never call each other.  So a pair of the newest chunk whose caller's
 * code was never seen calling the callee's is read again after the
 * walk, in one process_vm_readv: the thread's data-stack chunk and top,
 * each pair from the caller's frame to the end of its callee's (3.11-3.13:
 * and the code units at the two frames' instructions), and the top
 * again (see call_holds).  A pair that holds is taken for the
 * samples after; a known call costs nothing more.
 *
 * A short call has most often returned by the time the walk is done:
 * its sample is dropped and the thread read again, which leaves short
 * calls out for as long as the program's calls are being learnt.  On
 * 3.14+, where a frame that returned has no code, pairs that did not
 * hold are read again, up to EDGE_POLLS times, each counted as soon as
 * it holds (a program's short calls come back within microseconds) and
 * held after two samples (calledge.h): callgraph.py's calls are learnt
 * within a second or so, where one read took tens of seconds.  Up to
 * 3.13 a frame that returned cannot be told from one that runs, and
 * reading again and again let in, on callgraph.py, a caller that had
 * returned with the bytes of an older callee above it several times a
 * minute, too often for two checks to keep out: one read there.  Only
 * samples with calls not learnt yet pay for this.  1 when every pair
 * held, at some read.
 */
static int edges_still_hold(struct pywalk *w, uint64_t tstate)
{
	struct chunk_walk_state *cw = w->chunk_walk;
	const struct py_offsets *off = w->rt->off;
	size_t left = cw->nr_edge_checks, total = 0, n, i, kept, poll, at;
	/* Polled where two checks close together hold a pair (3.14+). */
	size_t polls = w->call_edges.window ? EDGE_POLLS : 1;
	int ops = off->op_return_value != OFF_NONE;
	long lo, hi;
	unsigned char head[64], after[64];
	uint64_t top_now, top_after;

	if (!left)
		return 1;
	if (!cw->nr_chunks || off->tstate_datastack_chunk == OFF_NONE ||
	    off->tstate_datastack_top == OFF_NONE)
		return 0;
	/* Both fields in one region: they sit side by side. */
	lo = off->tstate_datastack_chunk < off->tstate_datastack_top
		 ? off->tstate_datastack_chunk
		 : off->tstate_datastack_top;
	hi = off->tstate_datastack_chunk > off->tstate_datastack_top
		 ? off->tstate_datastack_chunk
		 : off->tstate_datastack_top;
	if (hi + 8 - lo > (long)sizeof(head))
		return 0;
	for (i = 0; i < left; i++) {
		const struct py_edge_check *c = &cw->edge_checks[i];

		/* Torn addresses can be anything: the callee comes after. */
		if (c->callee - c->caller > EDGE_SPAN_MAX)
			return 0;
		total += pair_span(off, c);
	}
	pywalk_grow_iov(w, 3 * left + 2);
	ensure_buf(&cw->edge_buf, &cw->alloc_edge_buf, total);
	for (poll = 0; poll < polls && left; poll++) {
		n = 0;
		pywalk_set_iov(w, n++, head, tstate + (uint64_t)lo,
			       (size_t)(hi + 8 - lo));
		for (i = 0, at = 0; i < left; i++) {
			const struct py_edge_check *c = &cw->edge_checks[i];
			size_t len = pair_span(off, c);

			pywalk_set_iov(w, n++, cw->edge_buf + at, c->caller,
				       len);
			at += len;
		}
		/* The code units at the instructions, for call_holds. */
		for (i = 0; ops && i < left; i++) {
			struct py_edge_check *c = &cw->edge_checks[i];

			pywalk_set_iov(w, n++, c->caller_unit, c->caller_instr,
				       sizeof(c->caller_unit));
			pywalk_set_iov(w, n++, c->callee_unit, c->callee_instr,
				       sizeof(c->callee_unit));
		}
		pywalk_set_iov(w, n++, after, tstate + (uint64_t)lo,
			       (size_t)(hi + 8 - lo));
		if (proc_readv(w->rt->pid, w->local, w->remote, n) != (int)n ||
		    load_u64(head, off->tstate_datastack_chunk - lo) !=
			cw->chunks[0].addr ||
		    load_u64(after, off->tstate_datastack_chunk - lo) !=
			cw->chunks[0].addr)
			return 0;
		top_now = load_u64(head, off->tstate_datastack_top - lo);
		top_after = load_u64(after, off->tstate_datastack_top - lo);
		if (top_after < top_now)
			top_now = top_after;
		/* Pairs that held leave the list: the others are read again. */
		for (i = 0, kept = 0, at = 0; i < left; i++) {
			struct py_edge_check *c = &cw->edge_checks[i];
			size_t len = pair_span(off, c);

			if (call_holds(off, c, cw->edge_buf + at, top_now))
				call_edges_add(&w->call_edges, &c->edge,
					       w->sample_stamp);
			else
				cw->edge_checks[kept++] = *c;
			at += len;
		}
		left = kept;
	}
	return !left;
}

/*
 * Note the pair of chunk frames caller (at self, running code) and
 * callee (its code callee_code) for edges_still_hold, unless the call
 * is known.
 */
static void note_edge(struct pywalk *w, const unsigned char *f, uint64_t self,
		      uint64_t code, uint64_t callee, uint64_t callee_code,
		      uint64_t callee_instr, int callee_innermost)
{
	struct chunk_walk_state *cw = w->chunk_walk;
	const struct py_offsets *off = w->rt->off;
	struct py_edge_check *c;
	struct call_edge e;

	e.code = code;
	e.callee = callee_code;
	if (call_edges_has(&w->call_edges, &e))
		return;
	ALLOC_GROW(cw->edge_checks, cw->nr_edge_checks + 1,
		   cw->alloc_edge_checks);
	c = &cw->edge_checks[cw->nr_edge_checks++];
	c->caller = self;
	c->callee = callee;
	c->edge = e;
	c->caller_instr = load_u64(f, off->iframe_instr);
	c->caller_previous = load_u64(f, off->iframe_previous);
	c->callee_instr = callee_instr;
	c->callee_innermost = callee_innermost;
}

/*
 * Can frame, the outermost Python frame of a chain that ended as a
 * thread's does, be the thread's first?  The first
 * frame a thread pushes goes to the second slot of its first data-stack
 * chunk (CPython's push_chunk skips the first, so that the chunk is never
 * freed), and stays there while the thread runs.  A chain that reached
 * the thread's bottom from any other frame was read torn: on
 * free-threaded 3.13, asyncio's Handle.__init__ (called through C) was
 * seen so, linked to the bottom shim, in 0.1-0.2% of an asyncio loop's
 * reads.  Told only when frame was read from a chunk's copy (region),
 * which holds the chunk's header.
 */
static int thread_first_frame(struct pywalk *w, uint64_t frame, long region)
{
	struct chunk_walk_state *cw = w->chunk_walk;
	const struct py_offsets *off = w->rt->off;
	const struct py_region *rg;

	if (!frame || region < 0 || (size_t)region >= cw->nr_chunks ||
	    off->chunk_data == OFF_NONE || off->chunk_previous == OFF_NONE)
		return 1;
	rg = &cw->chunks[region];
	return !load_u64(rg->buf, off->chunk_previous) &&
	       frame == rg->addr + (uint64_t)off->chunk_data + sizeof(uint64_t);
}

/*
 * 3.14+: the code of frame f, which returned before it was copied, or 0.
 * Returning clears a frame's code (clear_thread_frame in CPython's
 * Python/ceval.c), but leaves its instruction pointing into its code's
 * bytecode, at the return: the code object seen before that holds it.
 * A program made of short calls has most of its innermost frames return
 * within a read; dropping them would keep the long calls only.  The
 * same holds for a generator's frame once the generator is freed.
 */
static uint64_t returned_code(struct pywalk *w, const unsigned char *f)
{
	struct chunk_walk_state *cw = w->chunk_walk;
	uint64_t instr = load_u64(f, w->rt->off->iframe_instr);
	struct py_returned_memo *r =
	    &cw->returned[(instr * 0x9e3779b97f4a7c15ULL) >> 56 &
			  (PY_RETURNED_MEMO - 1)];
	const struct pycode *c;

	if (r->instr == instr && instr)
		return r->code;
	c = pycode_find_instr(&w->codes, instr);
	if (!c)
		return 0;
	r->instr = instr;
	r->code = c->addr;
	return c->addr;
}

/* 3.11+: _PyInterpreterFrames linked by previous, mostly in chunks. */
static enum drop_reason walk_interpreter_frames(struct pywalk *w,
						uint64_t tstate,
						struct py_sample *out)
{
	struct chunk_walk_state *cw = w->chunk_walk;
	size_t first = out->nr_frames;
	const struct py_offsets *off = w->rt->off;
	struct iframe_seen callee = {0, -1, 0, 0};
	uint64_t callee_code = 0, callee_instr = 0;
	/* 3.14+: frames that returned before they were copied (see there) */
	int returned = 0, callee_returned = 0, returned_above = 1;
	int callee_gen = 0; /* the callee is a generator's frame */
	long callee_owner = 0;
	uint64_t shim_addr = 0; /* the shim since the callee, if one */
	/* the shim nearest the callee, if any, and the read that copied it */
	uint64_t shim_near = 0;
	unsigned shim_read = 0;
	size_t depth = 0;
	struct pywalk_loop lc;
	long owner = -1;
	int shim = 0; /* a C-stack shim since the last Python frame */
	uint64_t frame, base = 0;
	int at_base = 0, last_entry = 0;
	/* the outermost Python frame so far, and the chunk copy it is in */
	uint64_t first_frame = 0;
	long first_region = -1;
	int r = read_current_chunk(w, tstate, &frame);

	if (r)
		return pywalk_read_error(r);
	/* 3.15: where the thread's own sentinel frame is (in its state). */
	if (off->tstate_base_frame != OFF_NONE)
		base = load_u64(w->tstate_buf, off->tstate_base_frame);
	cw->walk_frame = frame;
	cw->nr_links = 0;
	cw->nr_side_links = 0;
	cw->nr_edge_checks = 0;
	pywalk_loop_init(&lc);
	while (frame) {
		struct iframe_seen self = {frame, -1, 1, 0};
		const unsigned char *f;
		uint64_t code;
		int err = 0, state_ok;

		enum drop_reason why = pywalk_loop_step(&lc, frame);

		w->torn_at = 0;
		if (why)
			return why;
		/* 3.15's base frame ends every chain: no need to read it. */
		if (frame == base) {
			at_base = 1;
			break;
		}
		f = iframe_bytes(w, frame, &self.region, &self.read, &state_ok,
				 &err);
		if (!f)
			return pywalk_read_error(err);
		owner = f[off->iframe_owner];
		code = load_u64(f, off->iframe_code) & ~PY_STACKREF_TAG_MASK;
		/*
		 * 3.14+: the innermost frames may have returned since, the
		 * callees first: those above every frame that still runs.
		 */
		returned = 0;
		if (!code && returned_above && self.region == 0 &&
		    off->hexversion >= 0x030e0000) {
			code = returned_code(w, f);
			returned = 1;
		}
		returned_above = returned;
		/*
		 * Innermost, a generator's frame with no code: the generator
		 * ran when the thread state was copied, and finished and was
		 * freed before its frame was (its dealloc clears the code,
		 * not the instruction).  Where the allocator puts every new
		 * generator elsewhere (free-threaded builds' mimalloc) and
		 * the generators live for microseconds (a `yield from`
		 * chain made anew for each round of a loop), a fifth of all
		 * first reads end so.  Its code, known by its instruction,
		 * is what the thread ran: the sample's key (the walk tears
		 * here all the same), where it had none, so that a later
		 * read of its caller was taken (on 3.14t, the chain's caller
		 * got twice its share).
		 */
		if (!code && !depth && self.region < 0 &&
		    off->owner_generator != OFF_NONE &&
		    owner == off->owner_generator)
			code = returned_code(w, f);
		if (off->owner_cstack != OFF_NONE &&
		    owner == off->owner_cstack) {
			/*
			 * Innermost, a shim was read as the eval call it
			 * starts ended (it is the last frame that call runs):
			 * on 3.12, mostly read through that call's C frame
			 * after it returned, which leaves its current frame
			 * the shim.  The thread was in that call when its
			 * state was read: read again.
			 */
			if (!depth)
				return DROP_INVALID;
			/* 3.12+: a C-stack shim starts each eval call. */
			if (out->nr_frames > first && !w->omitted)
				w->entries[out->nr_frames - 1] = 1;
			/* Only one between two Python frames is checked. */
			shim_addr = shim ? 1 : frame;
			if (!shim) {
				shim_near = frame;
				shim_read = self.read;
			}
			shim = 1;
		} else {
			int32_t tlbc;
			long addrq = iframe_where(off, f, code, &tlbc);
			int running;

			first_frame = frame;
			first_region = self.region;
			w->torn_at = frame;
			w->torn_at_code = code;
			w->torn_at_addrq = tlbc ? -1 : addrq;
			w->torn_at_gen = off->owner_generator != OFF_NONE &&
					 owner == off->owner_generator;
			w->torn_at_with_callee =
			    callee.addr && self.read == callee.read;
			self.direct = !shim;
			shim = 0;
			/*
			 * No code: it returned (3.14+ clears it, see
			 * iframe_live) below a frame that still runs, or its
			 * code is not known.  Said here, the thread is read
			 * again.
			 */
			if (!code || !iframe_live(w, f, code, &self, &callee,
						  state_ok, &running))
				return DROP_INVALID;
			/*
			 * A frame calls only once it runs.  3.11 and 3.12 push
			 * a frame (code set, instruction before its first, so
			 * no offset) before it runs and before the caller's
			 * link to it is set: one read in that moment, under a
			 * frame left above it by an older call, is no caller.
			 * 3.13+ push a frame at its first instruction, where
			 * only the trampoline that runs __init__ for a class
			 * call stays while it calls (pycode's hidden): any
			 * other frame there with a callee of its own, not one
			 * reached through a shim (the eval breaker's calls
			 * from RESUME), was just pushed over an older call's
			 * bytes.
			 */
			if (callee.addr && addrq < 0 &&
			    off->hexversion < 0x030d0000)
				return DROP_INVALID;
			if (off->hexversion >= 0x030d0000 && callee.addr &&
			    self.direct && addrq == 0 &&
			    !trampoline_code(w, code))
				return DROP_INVALID;
			/*
			 * 3.12, 3.13: running again, its callee returned
			 * before it was copied; what the callee's place holds
			 * is that call, or one made since.  3.14+: it or its
			 * callee returned, and is known by its instruction.
			 * Taken when this code was seen calling that one:
			 * another frame of the same size may have taken this
			 * one's place.
			 */
			if (running ||
			    (callee.addr && (returned || callee_returned))) {
				struct call_edge e = {.code = code,
						      .callee = callee_code};

				if (!call_edges_has(&w->call_edges, &e))
					return DROP_INVALID;
			}
			/*
			 * A side frame copied with the chunk was copied a
			 * moment apart from it all the same: checked too.
			 */
			if (callee.addr && self.region >= 0 &&
			    callee.region != self.region)
				note_link(w, f, frame,
					  callee_gen && side_pre(off)
					      ? callee.addr
					      : 0,
					  shim_addr);
			/*
			 * So is a frame off the chunk and its callee, or the
			 * shim between them, copied by another read; and one
			 * in a memo window, copied right after the chunk,
			 * whose callee is a chunk frame.  That callee's bytes
			 * stay as they were once it returns (a generator
			 * function's frame at its first instruction is popped
			 * as its generator is made): its caller, copied a
			 * moment later, may have finished and its memory been
			 * taken by another generator.  On free-threaded 3.14,
			 * json's list generator was so put under another
			 * list's, in one sample of 10,000.
			 */
			if (callee.addr && self.region < 0 &&
			    (callee.read != self.read ||
			     (shim_addr && shim_read != self.read) ||
			     shim_addr == 1 ||
			     (callee.region >= 0 && self.region == -1)))
				note_side_link(
				    w, f, frame, code, callee.addr, callee_code,
				    callee_owner, callee_returned,
				    shim_addr ? shim_near : 0, shim_addr == 1);
			if (callee.addr && self.direct && self.region == 0 &&
			    callee.region == 0 && !running && !returned &&
			    !callee_returned)
				note_edge(w, f, frame, code, callee.addr,
					  callee_code, callee_instr,
					  depth == 1);
			last_entry = off->iframe_is_entry != OFF_NONE &&
				     f[off->iframe_is_entry];
			if (!pywalk_past_limit(w, depth)) {
				pywalk_push(w, out, frame, code, addrq,
					    last_entry);
				w->tlbcs[out->nr_frames - 1] = tlbc;
				w->gen_frames[out->nr_frames - 1] =
				    off->owner_generator != OFF_NONE &&
				    owner == off->owner_generator;
			}
			depth++;
			callee = self;
			shim_addr = 0;
			callee_gen = off->owner_generator != OFF_NONE &&
				     owner == off->owner_generator;
			callee_owner = owner;
			shim_near = 0;
			callee_code = code;
			callee_returned = returned;
			callee_instr = load_u64(f, off->iframe_instr);
			w->root_frame = frame;
			w->torn_at = 0;
		}
		frame = load_u64(f, off->iframe_previous);
	}
	w->torn_at = 0;
	/*
	 * The chain of a thread ends at its first frame: the shim of its
	 * first eval call (3.12+), or a frame of its own (3.11), and on
	 * 3.15 at the base frame below that shim, the thread's own.  Ending
	 * anywhere else, such as at a generator, it was cut mid-read.  On
	 * 3.11 that first frame is an entry frame (_PyEval_EvalFrameDefault
	 * sets is_entry): a frame just pushed has is_entry cleared and its
	 * previous link not yet set, so it holds what the slot held before,
	 * 0 where a local of an older frame was unbound (owner 0 is the
	 * thread's, so the owner cannot tell).
	 */
	if (depth) {
		long root = off->owner_cstack != OFF_NONE ? off->owner_cstack
							  : off->owner_thread;

		if (root != OFF_NONE && owner != root)
			return DROP_INVALID;
		if (off->owner_cstack == OFF_NONE &&
		    off->iframe_is_entry != OFF_NONE && !last_entry)
			return DROP_INVALID;
		if (base && !at_base)
			return DROP_INVALID;
		if (!thread_first_frame(w, first_frame, first_region))
			return DROP_INVALID;
	}
	/*
	 * No frame, yet frames on its data stack: the innermost frame was
	 * read in the moment a new C frame is linked in before it says
	 * which frame it runs (3.11, 3.12's _PyEval_EvalFrameDefault).
	 */
	if (!depth && datastack_in_use(w) == 1)
		return DROP_INVALID;
	if (!links_still_hold(w, tstate) || !side_links_hold(w) ||
	    !edges_still_hold(w, tstate))
		return DROP_INVALID;
	pywalk_push_omitted(w, out);
	return DROP_NONE;
}

void pyframe_push(struct pywalk *w, struct py_sample *out, uint64_t frame,
		  const unsigned char *f)
{
	const struct py_offsets *off = w->rt->off;
	uint64_t code = load_u64(f, off->iframe_code) & ~PY_STACKREF_TAG_MASK;
	int32_t tlbc;
	long addrq = iframe_where(off, f, code, &tlbc);

	pywalk_push(w, out, frame, code, addrq, 0);
	w->tlbcs[out->nr_frames - 1] = tlbc;
}

static void chunk_init(struct pywalk *w)
{
	const struct py_offsets *off = w->rt->off;

	w->chunk_walk = xcalloc(1, sizeof(*w->chunk_walk));
	/* Room for what a generator keeps before its frame, too. */
	w->chunk_walk->frame_buf =
	    xcalloc(1, (size_t)off->iframe_size + PY_FRAME_PREFIX_MAX);
}

static void chunk_forget_prefetched(struct pywalk *w)
{
	w->chunk_walk->nr_pre_chunks = 0;
}

static void chunk_release(struct pywalk *w)
{
	struct chunk_walk_state *cw = w->chunk_walk;
	size_t i;

	free(cw->frame_buf);
	for (i = 0; i < cw->alloc_chunks; i++)
		free(cw->chunks[i].buf);
	free(cw->chunks);
	for (i = 0; i < PY_WINDOWS; i++)
		free(cw->windows[i].buf);
	free(cw->side_memos);
	free(cw->side_buf);
	free(cw->links);
	free(cw->link_buf);
	free(cw->side_links);
	free(cw->side_link_buf);
	call_edges_release(&cw->side_edges);
	free(cw->edge_checks);
	free(cw->edge_buf);
	for (i = 0; i < cw->alloc_pre_chunks; i++) {
		free(cw->pre_chunks[i].fresh);
		free(cw->pre_chunks[i].buf);
		free(cw->pre_chunks[i].side);
	}
	free(cw->pre_chunks);
	free(cw);
	w->chunk_walk = NULL;
}

const struct pywalk_ops chunk_walker = {
    .init = chunk_init,
    .walk = walk_interpreter_frames,
    .prefetch = chunk_prefetch,
    .forget_prefetched = chunk_forget_prefetched,
    .release = chunk_release,
};
