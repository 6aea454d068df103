/* SPDX-License-Identifier: MIT */
/* Up to CPython 3.10: walking a thread's chain of frame objects. */
#include "py/frameobj.h"

#include <stdlib.h>
#include <string.h>

#include "sys/proc.h"
#include "py/pycode.h"
#include "py/pywalk.h"
#include "util.h"

/*
 * Reads one walk makes for its innermost frame before the thread is
 * taken as torn (then read once more, from a new sample of it): each
 * one copies the thread state again, with the frame it names.
 */
#define INNERMOST_READS_MAX 4
/*
 * Walks a frame must have been in, always with the same code, before it
 * is taken for a code object's spare frame (see spare_frame).
 */
#define SPARE_RUNS 4
/* Known frames kept per thread beyond the depth of its deepest recent
 * walk. */
#define KNOWN_EXTRA 32
/*
 * Walks a thread's deepest one counts as recent for: a stack that goes
 * deep and back all the time (a chain of generators hundreds deep that
 * passes every item up) keeps its deep frames known, not only those of
 * its last, shallow walk (the deep ones read one by one instead, a read
 * each, tear more often than not).
 */
#define PEAK_WALKS 64
/* Height given to frames of a walk that did not reach the outermost. */
#define HEIGHT_UNKNOWN (1u << 30)
/*
 * Slots of the table of frames seen, with their code (a power of two).
 * CPython's free list holds at most 200 frames (PyFrame_MAXFREELIST),
 * and each code object keeps one spare frame; the table is emptied when
 * three quarters full, and learnt again.
 */
#define FRAMES_SEEN_SLOTS 4096
/*
 * Most bytes between two known frames copied in one region, gap and
 * all: each region of a process_vm_readv costs the kernel about as much
 * as copying a kilobyte or two (it pins the region's pages anew).
 */
#define SPAN_GAP_MAX 1024

/* What the walks of frame objects keep between samples. */
struct frameobj_state {
	/*
	 * Up to 3.10: per thread, the frame objects its recent walks went
	 * through, read again in one batch by the next walk (frameobj.c).
	 */
	struct py_frame_memo {
		uint64_t tstate;
		/*
		 * the frames of its recent walks, by height above its
		 * outermost frame, highest first: callees before callers
		 */
		struct py_known_frame {
			uint64_t addr;
			/* its two copies' offsets in the spans' bytes */
			size_t at, at2;
			uint32_t height;
			uint32_t seen; /* walks, the last one it was in */
		} * known;
		size_t nr, alloc;
		uint32_t walks;
		/* the depth of its deepest recent walk, and that walk */
		size_t peak;
		uint32_t peak_walk;
		/*
		 * the known frames grouped by address into the regions read
		 * (frames close together share one): planned again only when
		 * the set of frames changed
		 */
		struct py_span {
			uint64_t addr;
			size_t len;
			size_t from, nr;  /* its frames, in by_addr */
			uint32_t highest, lowest; /* its frames' heights */
		} * spans;
		size_t nr_spans, alloc_spans, span_bytes;
		int plan_stale;
	} * memos;
	size_t nr_memos, alloc_memos;
	/* One batch read of a walk of frame objects: see frameobj.c. */
	struct py_frame_batch {
		unsigned char *buf; /* the copies */
		uint64_t *addrs;    /* where each frame was copied from */
		/*
		 * where in buf its copies are (copies are made in the order
		 * of buf): at2 is SIZE_MAX for the first frame of a read,
		 * copied once
		 */
		size_t *at, *at2;
		long *known; /* its index in the memo's known, or -1 */
		size_t n, alloc_buf, alloc_addrs, alloc_at, alloc_at2;
		size_t alloc_known;
	} batch;
	unsigned char *anchor_buf; /* the frame a batch read starts from */
	/*
	 * Up to 3.10: frame objects seen, any thread's, each with its code
	 * (a frame seen with several is of the free list, not one code
	 * object's spare frame): an open-addressing table (see frameobj.c),
	 * address 0 for an empty slot.
	 */
	struct py_frame_seen {
		uint64_t addr, code;
		uint32_t runs; /* times seen with that code, up to a bound */
		uint32_t free; /* seen with another code: of the free list */
	} * frames_seen;
	size_t nr_frames_seen;
	/* scratch for planning spans: known frames by address */
	struct py_addr_index {
		uint64_t addr;
		size_t index;
	} * by_addr;
	size_t alloc_by_addr;
	/*
	 * Up to 3.10, when the thread states were prefetched: each walked
	 * thread's first batch read (its thread state again, its known
	 * frames), made for all of them in one process_vm_readv
	 * (frameobj_prefetch); each taken by the thread's walk.
	 */
	struct py_frames_pre {
		uint64_t tstate;
		unsigned char *fresh;
		struct py_frame_batch batch;
		int ready; /* read, not taken yet */
	} * pre_frames;
	size_t nr_pre_frames, alloc_pre_frames;
	/* Up to 3.10: the frames of the walk being done, innermost first */
	uint64_t *walk_frames;
	long *walk_known;     /* index in the memo's known frames, or -1 */
	uint64_t *walk_codes; /* each one's code */
	size_t alloc_walk_frames, alloc_walk_known, alloc_walk_codes;
};

static struct py_frame_memo *frame_memo(struct pywalk *w, uint64_t tstate)
{
	struct frameobj_state *fo = w->frameobj;
	struct py_frame_memo *m;
	size_t i;

	for (i = 0; i < fo->nr_memos; i++)
		if (fo->memos[i].tstate == tstate)
			return &fo->memos[i];
	/* Threads come and go: bound the memos, recycling the oldest. */
	if (fo->nr_memos >= PY_MAX_THREADS) {
		m = &fo->memos[0];
	} else {
		ALLOC_GROW(fo->memos, fo->nr_memos + 1, fo->alloc_memos);
		m = &fo->memos[fo->nr_memos++];
		memset(m, 0, sizeof(*m));
	}
	m->tstate = tstate;
	m->nr = 0;
	m->walks = 0;
	m->peak = 0;
	m->peak_walk = 0;
	m->plan_stale = 1;
	return m;
}

/*
 * Can the frame object f, depth frames out from the innermost, be part
 * of the thread's live chain?  Every caller is running (its f_executing
 * or f_state says so) and held twice: by its own call and by its
 * callee's f_back.  A frame freed and reused while the chain was read
 * fails one of these; so does a generator that suspended mid-read (no
 * longer running, its f_back cleared), which would otherwise end the
 * chain early.  The innermost frame is held once, by its call, and must
 * be running too: one starting or ending (at the edge of its call, as
 * the thread state was copied a moment before it) may still hold a link
 * to a caller that is no longer its own, left in a code object's spare
 * frame since its last call.
 */
static int frame_object_live(const struct py_offsets *off,
			     const unsigned char *f, size_t depth)
{
	int64_t refcnt = (int64_t)load_u64(f, off->frame_refcnt);
	int running =
	    (signed char)f[off->frame_executing] == off->frame_executing_value;

	return refcnt >= (depth ? 2 : 1) && running;
}

/* Where addr is, or would go, in the table of frames seen. */
static size_t frame_seen_slot(const struct pywalk *w, uint64_t addr)
{
	const struct frameobj_state *fo = w->frameobj;
	/* Frame objects are 16-byte aligned: mix the bits above. */
	size_t i = (size_t)((addr >> 4) * 0x9e3779b97f4a7c15ULL >> 52);

	while (fo->frames_seen[i].addr && fo->frames_seen[i].addr != addr)
		i = (i + 1) & (FRAMES_SEEN_SLOTS - 1);
	return i;
}

/* What the table says of the frame object at addr, or NULL. */
static const struct py_frame_seen *frame_seen(const struct pywalk *w,
					      uint64_t addr)
{
	const struct frameobj_state *fo = w->frameobj;
	const struct py_frame_seen *e;

	if (!fo->frames_seen || !addr)
		return NULL;
	e = &fo->frames_seen[frame_seen_slot(w, addr)];
	return e->addr == addr ? e : NULL;
}

/* Is the frame object at addr known to be of the free list? */
static int is_free_frame(const struct pywalk *w, uint64_t addr)
{
	const struct py_frame_seen *e = frame_seen(w, addr);

	return e && e->free;
}

/*
 * The frame object at addr was seen running code (or having run it): a
 * frame seen with two codes is of the free list, for good.
 */
static void note_frame_code(struct pywalk *w, uint64_t addr, uint64_t code)
{
	struct frameobj_state *fo = w->frameobj;
	struct py_frame_seen *e;

	if (!addr || !code)
		return;
	if (!fo->frames_seen)
		fo->frames_seen =
		    xcalloc(FRAMES_SEEN_SLOTS, sizeof(*fo->frames_seen));
	if (fo->nr_frames_seen >= FRAMES_SEEN_SLOTS / 4 * 3) {
		memset(fo->frames_seen, 0,
		       FRAMES_SEEN_SLOTS * sizeof(*fo->frames_seen));
		fo->nr_frames_seen = 0;
	}
	e = &fo->frames_seen[frame_seen_slot(w, addr)];
	if (!e->addr) {
		e->addr = addr;
		e->code = code;
		e->runs = 1;
		fo->nr_frames_seen++;
	} else if (e->code != code) {
		e->code = code;
		e->free = 1;
	} else if (e->runs < SPARE_RUNS) {
		e->runs++;
	}
}

static int addr_index_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct py_addr_index *)a)->addr;
	uint64_t y = ((const struct py_addr_index *)b)->addr;

	return x < y ? -1 : x > y;
}

/* Spans with higher frames (callees) first. */
static int span_cmp(const void *a, const void *b)
{
	uint32_t x = ((const struct py_span *)a)->highest;
	uint32_t y = ((const struct py_span *)b)->highest;

	return x > y ? -1 : x < y;
}

/*
 * Would a frame at height h keep span sp's heights a run with no gap
 * (repeats allowed)?  Spans of runs, ordered highest first, put each
 * caller in its callee's span or a later one.
 */
static int heights_dense(const struct py_span *sp, uint32_t h)
{
	uint32_t lo = h < sp->lowest ? h : sp->lowest;
	uint32_t hi = h > sp->highest ? h : sp->highest;

	return (uint64_t)(hi - lo) + 1 <= (uint64_t)sp->nr + 1;
}

/*
 * Group m's known frames by address into the regions a batch read
 * copies (m->spans): frames at most SPAN_GAP_MAX bytes apart, whose
 * heights make a run, share one.  Each span is copied twice in a row,
 * and the spans go callees first
 * (by their highest frame), so that a caller is mostly in the same span
 * as its callee or a later one.  Each known frame's two copies are then
 * at its at and at2 in the spans' bytes.  Only when the set of frames
 * changed.
 */
static void plan_spans(struct pywalk *w, struct py_frame_memo *m)
{
	struct frameobj_state *fo = w->frameobj;
	size_t fs = (size_t)w->rt->off->frame_size, i, j, at = 0;
	struct py_addr_index *ix;
	uint64_t end = 0;

	if (!m->plan_stale)
		return;
	m->plan_stale = 0;
	m->nr_spans = 0;
	m->span_bytes = 0;
	if (!m->nr)
		return;
	ALLOC_GROW(fo->by_addr, m->nr, fo->alloc_by_addr);
	ix = fo->by_addr;
	for (i = 0; i < m->nr; i++) {
		ix[i].addr = m->known[i].addr;
		ix[i].index = i;
	}
	qsort(ix, m->nr, sizeof(*ix), addr_index_cmp);
	for (i = 0; i < m->nr; i++) {
		uint64_t a = ix[i].addr;
		uint32_t h = m->known[ix[i].index].height;
		/* Torn addresses can be anything: no overflow. */
		int fits = a <= UINT64_MAX - fs;
		struct py_span *sp;

		sp = m->nr_spans ? &m->spans[m->nr_spans - 1] : NULL;
		if (!sp || !fits || end > UINT64_MAX - fs ||
		    (a > end && a - end > SPAN_GAP_MAX) ||
		    !heights_dense(sp, h)) {
			ALLOC_GROW(m->spans, m->nr_spans + 1, m->alloc_spans);
			sp = &m->spans[m->nr_spans++];
			sp->addr = a;
			sp->len = fs;
			sp->from = i;
			sp->nr = 0;
			sp->highest = sp->lowest = h;
			end = fits ? a + fs : UINT64_MAX;
		} else {
			if (a + fs > end)
				end = a + fs;
			sp->len = (size_t)(end - sp->addr);
			if (h > sp->highest)
				sp->highest = h;
			if (h < sp->lowest)
				sp->lowest = h;
		}
		sp->nr++;
	}
	qsort(m->spans, m->nr_spans, sizeof(*m->spans), span_cmp);
	for (i = 0; i < m->nr_spans; i++) {
		const struct py_span *sp = &m->spans[i];

		for (j = sp->from; j < sp->from + sp->nr; j++) {
			struct py_known_frame *k = &m->known[ix[j].index];

			k->at = at + (size_t)(ix[j].addr - sp->addr);
			k->at2 = k->at + sp->len;
		}
		at += 2 * sp->len;
	}
	m->span_bytes = at;
}

/*
 * The frames a batch read copies, each twice in a row: first (unless
 * 0), then with_known m's known frames, into b (addresses, where each one's copies land,
 * each one's index in m->known or -1 for first; grown as needed).
 * Returns how many.  Without the known frames, first must not be 0.
 */
static size_t plan_frame_batch(struct pywalk *w, struct py_frame_memo *m,
			       uint64_t first, int with_known,
			       struct py_frame_batch *b)
{
	size_t fs = (size_t)w->rt->off->frame_size, n = 0, i;
	size_t base = first ? 2 * fs : 0, nk, bytes;

	plan_spans(w, m);
	nk = with_known ? m->nr : 0;
	bytes = base + (with_known ? m->span_bytes : 0);
	ALLOC_GROW(b->addrs, nk + 1, b->alloc_addrs);
	ALLOC_GROW(b->at, nk + 1, b->alloc_at);
	ALLOC_GROW(b->at2, nk + 1, b->alloc_at2);
	ALLOC_GROW(b->known, nk + 1, b->alloc_known);
	if (bytes > b->alloc_buf) {
		free(b->buf);
		b->alloc_buf = bytes * 2;
		b->buf = xmalloc(b->alloc_buf);
	}
	if (first) {
		b->addrs[n] = first;
		b->at[n] = 0;
		b->at2[n] = fs;
		b->known[n++] = -1;
	}
	for (i = 0; i < nk; i++) {
		b->addrs[n] = m->known[i].addr;
		b->at[n] = base + m->known[i].at;
		b->at2[n] = base + m->known[i].at2;
		b->known[n++] = (long)i;
	}
	b->n = n;
	return n;
}

/*
 * Point w->local/remote from index nio on at the regions of batch b
 * that plan_frame_batch made (first, then with_known each of m's spans,
 * each twice); returns the index after them.  w->local/remote must have
 * room for 2 + 2 * m->nr_spans.
 */
static size_t set_batch_iov(struct pywalk *w, size_t nio,
			    const struct py_frame_memo *m, uint64_t first,
			    int with_known, struct py_frame_batch *b)
{
	size_t fs = (size_t)w->rt->off->frame_size, at = 0, i, pass;

	if (first) {
		pywalk_set_iov(w, nio++, b->buf, first, fs);
		pywalk_set_iov(w, nio++, b->buf + fs, first, fs);
		at = 2 * fs;
	}
	for (i = 0; with_known && i < m->nr_spans; i++)
		for (pass = 0; pass < 2; pass++) {
			pywalk_set_iov(w, nio++, b->buf + at,
					   m->spans[i].addr, m->spans[i].len);
			at += m->spans[i].len;
		}
	return nio;
}

/* Where the frame object at addr is among m's known frames, or -1. */
static long known_index(const struct py_frame_memo *m, uint64_t addr)
{
	size_t i;

	for (i = 0; i < m->nr; i++)
		if (m->known[i].addr == addr)
			return (long)i;
	return -1;
}

/*
 * One process_vm_readv of a walk.  First the anchor: the thread state
 * (anchor 0: before any frame was taken) or the frame taken last, whose
 * link leads to the first frame wanted; then that frame (twice in a
 * row), unless it is 0; then the frames of the thread's recent walks (m's known frames), its
 * likely callers, unless that frame is new below the frame taken last
 * (a stack that grew since: its callers are read one by one until the
 * chain reaches frames seen before).  Copies land in fo->batch; returns
 * how many frames there are, 0 when the read failed.  A region that
 * failed reads as zeros: it will not link up.
 */
static size_t read_frame_batch(struct pywalk *w, uint64_t tstate,
			       struct py_frame_memo *m, uint64_t anchor,
			       uint64_t first)
{
	struct frameobj_state *fo = w->frameobj;
	const struct py_offsets *off = w->rt->off;
	size_t fs = (size_t)off->frame_size, nio = 0;
	int with_known = !anchor || known_index(m, first) >= 0;

	fo->batch.n = 0;
	if (!first && !m->nr)
		return 0;
	plan_frame_batch(w, m, first, with_known, &fo->batch);
	if (!fo->anchor_buf)
		fo->anchor_buf = xmalloc(fs);
	pywalk_grow_iov(w, 2 * m->nr_spans + 3);
	if (anchor)
		pywalk_set_iov(w, nio++, fo->anchor_buf, anchor, fs);
	else
		pywalk_set_iov(w, nio++, w->fresh_tstate, tstate,
				   (size_t)off->tstate_size);
	nio = set_batch_iov(w, nio, m, first, with_known, &fo->batch);
	if (proc_readv(w->rt->pid, w->local, w->remote, nio) <= 0) {
		memset(fo->anchor_buf, 0, fs);
		memset(w->fresh_tstate, 0, (size_t)off->tstate_size);
		fo->batch.n = 0;
	}
	return fo->batch.n;
}

/*
 * The batch frameobj_prefetch made for the thread at tstate (its thread
 * state again and its known frames), moved to where read_frame_batch
 * puts its own; how many frames, 0 if there were none.
 */
static size_t take_pre_frames(struct pywalk *w, uint64_t tstate)
{
	struct frameobj_state *fo = w->frameobj;
	size_t i;

	for (i = 0; i < fo->nr_pre_frames; i++) {
		struct py_frames_pre *pf = &fo->pre_frames[i];
		struct py_frame_batch b;
		unsigned char *t;

		if (pf->tstate != tstate || !pf->ready)
			continue;
		pf->ready = 0;
		/* The copies change hands: the prefetch reads into the old. */
		t = w->fresh_tstate;
		w->fresh_tstate = pf->fresh;
		pf->fresh = t;
		b = fo->batch;
		fo->batch = pf->batch;
		pf->batch = b;
		return fo->batch.n;
	}
	return 0;
}

/*
 * Before walking threads (the n at tstates[i] for which walk[i] is set):
 * make each walk's first read (its thread state again, the frames of its
 * recent walks) for all of them in one process_vm_readv.  The thread
 * states' copies are not needed: the frames read are those of the
 * thread's recent walks.
 */
static void frameobj_prefetch(struct pywalk *w, const unsigned char *copies,
			      const uint64_t *tstates, const int *walk,
			      size_t n)
{
	struct frameobj_state *fo = w->frameobj;
	size_t tsize = (size_t)w->rt->off->tstate_size, i, k = 0, nio = 0;
	size_t regions = 0;

	fo->nr_pre_frames = 0;
	/* First find (or make) every memo: making one may move them. */
	for (i = 0; i < n; i++)
		if (walk[i]) {
			struct py_frame_memo *m = frame_memo(w, tstates[i]);

			plan_spans(w, m);
			regions += 1 + 2 * m->nr_spans;
		}
	if (n > fo->alloc_pre_frames) {
		size_t old = fo->alloc_pre_frames;

		ALLOC_GROW(fo->pre_frames, n, fo->alloc_pre_frames);
		memset(fo->pre_frames + old, 0,
		       (fo->alloc_pre_frames - old) * sizeof(*fo->pre_frames));
	}
	pywalk_grow_iov(w, regions);
	for (i = 0; i < n; i++) {
		struct py_frame_memo *m;
		struct py_frames_pre *pf;

		if (!walk[i])
			continue;
		m = frame_memo(w, tstates[i]);
		if (!m->nr)
			continue;
		pf = &fo->pre_frames[k++];
		pf->tstate = tstates[i];
		if (!pf->fresh)
			pf->fresh = xmalloc(tsize);
		plan_frame_batch(w, m, 0, 1, &pf->batch);
		/* A copy that failed reads as zeros: not taken, no links. */
		pywalk_set_iov(w, nio++, pf->fresh, pf->tstate, tsize);
		nio = set_batch_iov(w, nio, m, 0, 1, &pf->batch);
	}
	if (!k || proc_readv(w->rt->pid, w->local, w->remote, nio) < 0)
		return;
	for (i = 0; i < k; i++)
		fo->pre_frames[i].ready = 1;
	fo->nr_pre_frames = k;
}

/*
 * Where frame is among the copies of the batch, trying hint first; -1
 * if it is not there.
 */
static long batch_find(const struct py_frame_batch *b, size_t hint,
		       uint64_t frame)
{
	size_t i;

	if (hint < b->n && b->addrs[hint] == frame)
		return (long)hint;
	for (i = 0; i < b->n; i++)
		if (b->addrs[i] == frame)
			return (long)i;
	return -1;
}

/* No copy, or no bound on a window of copies. */
#define NO_COPY SIZE_MAX

/*
 * Where a walked frame's link to its caller is known to have held, as
 * offsets of copies in the batch's buffer, whose order is the order they
 * were made in: from lo, its copy that was followed, to hi, its other
 * copy, if both agree (NO_COPY if not, or if it has one copy).  A copy
 * of the caller made in between is of the frame that made the call.
 */
struct link_window {
	size_t lo, hi;
};

/* Do two copies of a frame object show the same call, calling? */
static int copies_agree(const struct py_offsets *off, const unsigned char *f,
			const unsigned char *g, int caller)
{
	return load_u64(f, off->frame_code) == load_u64(g, off->frame_code) &&
	       load_u64(f, off->frame_back) == load_u64(g, off->frame_back) &&
	       (!caller ||
		!memcmp(f + off->frame_lasti, g + off->frame_lasti, 4));
}

/*
 * Which copy of the batch's frame idx to take as the caller of the frame
 * whose link window is w: one inside the window, else the first made
 * after w.lo (*inside 0); NO_COPY if both were made before.  A known
 * frame's two copies are made in a row, span by span, so that a caller
 * in its callee's span has one inside the callee's window.
 */
static size_t caller_copy(const struct py_frame_batch *b, long idx,
			  const struct link_window *w, int *inside)
{
	size_t c1 = b->at[idx], c2 = b->at2[idx];

	*inside = 1;
	if (w->hi != NO_COPY) {
		if (c1 > w->lo && c1 < w->hi)
			return c1;
		if (c2 != NO_COPY && c2 > w->lo && c2 < w->hi)
			return c2;
	}
	*inside = 0;
	if (c1 > w->lo)
		return c1;
	if (c2 != NO_COPY && c2 > w->lo)
		return c2;
	return NO_COPY;
}

/*
 * Does the copy at offset at of the batch's frame idx hold the same call
 * (code and caller) as the frame's other copy, if it has one?  Code and
 * caller stay put for a call's life: two copies made in a row that
 * disagree say that the frame changed hands in between, or that one of
 * them was read wrong (a code pointer read wrong can name another real
 * function).  Either way the frame is read again.
 */
static int copy_confirmed(const struct pywalk *w, long idx, size_t at)
{
	const struct frameobj_state *fo = w->frameobj;
	const struct py_frame_batch *b = &fo->batch;
	size_t other = at == b->at[idx] ? b->at2[idx] : b->at[idx];

	return other == NO_COPY ||
	       copies_agree(w->rt->off, b->buf + at, b->buf + other, 0);
}

/*
 * The link window of the batch's frame idx, taken from its copy at
 * offset at, depth frames out from the innermost: both its copies agree
 * and are live, or only the one taken counts.
 */
static struct link_window frame_window(const struct pywalk *w, long idx,
				       size_t at, size_t depth)
{
	const struct frameobj_state *fo = w->frameobj;
	const struct py_offsets *off = w->rt->off;
	const struct py_frame_batch *b = &fo->batch;
	struct link_window win = {at, NO_COPY};
	size_t other = at == b->at[idx] ? b->at2[idx] : b->at[idx];

	if (other != NO_COPY &&
	    copies_agree(off, b->buf + at, b->buf + other, depth > 0) &&
	    frame_object_live(off, b->buf + other, depth)) {
		win.lo = at < other ? at : other;
		win.hi = at < other ? other : at;
	}
	return win;
}

/*
 * Is the copy at batch index idx (-1: none) of an innermost frame that
 * can be taken: running, its link to its caller its own?
 */
static int innermost_usable(const struct pywalk *w, long idx)
{
	const struct frameobj_state *fo = w->frameobj;
	return idx >= 0 &&
	       frame_object_live(w->rt->off, fo->batch.buf + fo->batch.at[idx],
				 0) &&
	       copy_confirmed(w, idx, fo->batch.at[idx]);
}

/*
 * The innermost frame, named by the thread state the sample began with
 * and copied at batch index idx, cannot be taken (its copies disagree,
 * or it was not running when copied): if its code is a generator's (as
 * last read), it is noted as the frame the walk tore at, with its code
 * and instruction as copied, and 1 returned.  A generator resumed for
 * one item runs for microseconds: the thread is read again, and the
 * frame put back on a later read that holds what called it (take_key
 * and cut_at_key in pysample.c), where taking that later read alone
 * would leave out the generators that run most.
 */
static int innermost_generator(struct pywalk *w, uint64_t frame,
			       long idx);

/*
 * Where frame object copy f stands: the byte offset of its instruction
 * (3.10 counts f_lasti in 2-byte instructions, before bytes), -1 if
 * it has not started.
 */
static long frame_addrq(const struct pywalk *w, const unsigned char *f)
{
	int lasti;

	memcpy(&lasti, f + w->rt->off->frame_lasti, sizeof(lasti));
	if (lasti < 0)
		return -1;
	return (long)lasti * (w->codes.kind == LINETABLE_310 ? 2 : 1);
}

/*
 * Is code a generator's or coroutine's?  As last read, or read now if
 * never read before: a generator's frame that tears every read made
 * while it runs would otherwise never be known as one, and its samples
 * would go to whatever the thread ran next, for the whole run.
 */
static int generator_code(struct pywalk *w, uint64_t code)
{
	const struct pycode *pc = pycode_known(&w->codes, code);

	return pc && (pc->flags & PYCODE_SUSPENDABLE);
}

static int innermost_generator(struct pywalk *w, uint64_t frame,
			       long idx)
{
	struct frameobj_state *fo = w->frameobj;
	const struct py_offsets *off = w->rt->off;
	const unsigned char *f = fo->batch.buf + fo->batch.at[idx];
	uint64_t code = load_u64(f, off->frame_code);

	if (!generator_code(w, code))
		return 0;
	w->torn_at = frame;
	w->torn_at_code = code;
	w->torn_at_addrq = frame_addrq(w, f);
	w->torn_at_gen = 1;
	return 1;
}

/* A torn walk's last frame taken linked to frame: noted, if known. */
static void note_torn_link(struct pywalk *w, uint64_t frame)
{
	const struct py_frame_seen *e = frame_seen(w, frame);

	if (!e || e->free || e->runs < SPARE_RUNS)
		return;
	w->torn_at = frame;
	w->torn_at_code = e->code;
	w->torn_at_addrq = -1;
	w->torn_at_gen = generator_code(w, e->code);
}

/*
 * Learn from the depth frames of the walk just done (fo->walk_frames,
 * innermost first; fo->walk_known, each one's index in m->known or -1;
 * fo->walk_codes, each one's code), whole when it reached the thread's
 * outermost frame: each frame's height and code (a frame seen with
 * another code than before is of the free list, for good), new frames
 * added, the frames least recently seen forgotten past the depth plus
 * KNOWN_EXTRA (of its deepest recent walk), and the rest sorted
 * highest first.
 */
static void learn_frames(struct pywalk *w, struct py_frame_memo *m,
			 size_t depth, int whole)
{
	struct frameobj_state *fo = w->frameobj;
	size_t i, cap;
	uint32_t base = whole || !depth ? 0 : HEIGHT_UNKNOWN;

	m->walks++;
	if (depth >= m->peak || m->walks - m->peak_walk > PEAK_WALKS) {
		m->peak = depth;
		m->peak_walk = m->walks;
	}
	cap = m->peak + KNOWN_EXTRA;
	if (!whole && depth && fo->walk_known[depth - 1] >= 0)
		base = m->known[fo->walk_known[depth - 1]].height;
	for (i = 0; i < depth; i++) {
		struct py_known_frame *k;
		long at = fo->walk_known[i];

		/* A frame read on its own may be known too. */
		if (at < 0)
			for (at = 0; (size_t)at < m->nr; at++)
				if (m->known[at].addr == fo->walk_frames[i])
					break;
		if ((size_t)at < m->nr) {
			k = &m->known[at];
		} else {
			ALLOC_GROW(m->known, m->nr + 1, m->alloc);
			k = &m->known[m->nr++];
			k->addr = fo->walk_frames[i];
			m->plan_stale = 1;
		}
		note_frame_code(w, k->addr, fo->walk_codes[i]);
		k->height = base + (uint32_t)(depth - 1 - i);
		k->seen = m->walks;
	}
	while (m->nr > cap) {
		size_t oldest = 0;

		for (i = 1; i < m->nr; i++)
			if (m->known[i].seen < m->known[oldest].seen)
				oldest = i;
		m->known[oldest] = m->known[--m->nr];
		m->plan_stale = 1;
	}
	/* Insertion: nearly sorted already. */
	for (i = 1; i < m->nr; i++) {
		struct py_known_frame k = m->known[i];
		size_t j = i;

		for (; j && m->known[j - 1].height < k.height; j--)
			m->known[j] = m->known[j - 1];
		m->known[j] = k;
	}
}

/* Note frame, found at batch index idx, as the walk's next (depth). */
static void note_walked(struct pywalk *w, size_t depth, uint64_t frame,
			long idx, uint64_t code)
{
	struct frameobj_state *fo = w->frameobj;
	ALLOC_GROW(fo->walk_frames, depth + 1, fo->alloc_walk_frames);
	ALLOC_GROW(fo->walk_known, depth + 1, fo->alloc_walk_known);
	ALLOC_GROW(fo->walk_codes, depth + 1, fo->alloc_walk_codes);
	fo->walk_frames[depth] = frame;
	fo->walk_known[depth] = fo->batch.known[idx];
	fo->walk_codes[depth] = code;
}

/*
 * Is the copy f of the frame object at frame (batch index idx) one of a
 * code object's spare frame, which only ever runs that code?  Such a
 * frame's code is known from its address, whatever the moment it was
 * copied at, and so is its caller's when the caller is one too: a link
 * between two of them read at any moment is a call the program makes.
 * A frame seen SPARE_RUNS times (walked, or named by the thread state),
 * always with the code the copy holds, and never with another (not of
 * the free list, which any call takes frames from; a generator's frame,
 * which runs one code, passes too).
 */
static int spare_frame(const struct pywalk *w, uint64_t frame,
		       const unsigned char *f)
{
	const struct py_frame_seen *e = frame_seen(w, frame);

	return e && !e->free && e->runs >= SPARE_RUNS &&
	       load_u64(f, w->rt->off->frame_code) == e->code;
}

/*
 * The innermost frame, at frame, whose copy is the batch's idx: noted
 * as seen, taken or not (frames of short calls are seldom taken, and
 * must become known all the same); 1 if it is a spare frame.
 */
static int note_innermost(struct pywalk *w, uint64_t frame, long idx)
{
	struct frameobj_state *fo = w->frameobj;
	const unsigned char *f = fo->batch.buf + fo->batch.at[idx];

	note_frame_code(w, frame, load_u64(f, w->rt->off->frame_code));
	return spare_frame(w, frame, f);
}

/*
 * Frame objects live each on its own in the heap, and are recycled
 * between calls: each code object keeps a spare frame for its next call,
 * and other frames go to a free list, for any call.  So a frame read at
 * one moment may be another call's at the next, and a caller is taken
 * only from a copy made while its callee's link to it held: between the
 * callee's two copies if they agree (same code, caller and, for a
 * caller, instruction, which stays put while it waits), else after the
 * copy of the callee that was followed.  In the latter case, a frame
 * known to be of the free list (seen running other code before) is
 * taken only from a read that copies it right after its callee.
 *
 * Each read holds the anchor (the thread state, or the frame taken
 * last), the frame its link leads to, and the frames of the thread's
 * recent walks, each region twice in a row, so that a stack made of
 * frames seen before costs one read (and, from frameobj_prefetch, one
 * read for all the threads).  When the chain leaves what a read holds,
 * the next read copies the frame taken last again, then its caller: the
 * frame must be the same call still (same code and caller, live), else
 * the thread has moved on and the chain is torn.  The thread state as
 * anchor may move on freely a few times: no frame was taken yet.  A
 * frame's copy is taken only if its other copy holds the same call
 * (copy_confirmed).
 */
static enum drop_reason frameobj_walk(struct pywalk *w, uint64_t tstate,
			       struct py_sample *out)
{
	struct frameobj_state *fo = w->frameobj;
	const struct py_offsets *off = w->rt->off;
	size_t depth = 0, first_frame = out->nr_frames;
	struct py_frame_memo *m = frame_memo(w, tstate);
	uint64_t frame, last = 0, last_code = 0, last_back = 0;
	enum drop_reason why = DROP_NONE;
	long at = -1; /* the batch index of the frame taken last */
	/* that frame's link window; the thread state's: every copy */
	struct link_window win = {0, NO_COPY};
	unsigned restarts = 0; /* reads for the innermost frame */
	/* the frame taken last had returned when copied; this one has */
	int stale = 0, now_stale = 0;
	struct pywalk_loop lc;
	int gen0 = 0; /* the first innermost frame is a generator's */
	int looked0 = 0; /* that was looked at */

	if (!take_pre_frames(w, tstate))
		read_frame_batch(w, tstate, m, 0, 0);
	if (fo->batch.n)
		pywalk_take_fresh_tstate(w);
	frame = load_u64(w->tstate_buf, off->tstate_frame);
	pywalk_loop_init(&lc);
	while (frame) {
		const unsigned char *f;
		size_t copy = NO_COPY;
		uint64_t code;
		long idx;
		int inside = 0, spare;

		why = pywalk_loop_step(&lc, frame);
		if (why)
			break;
		idx = batch_find(&fo->batch, (size_t)(at + 1), frame);
		/* The sample's own innermost frame, as first copied. */
		if (!depth && !w->moved && !restarts && idx >= 0) {
			gen0 = innermost_generator(w, frame, idx);
			looked0 = 1;
		}
		spare = idx >= 0 &&
			(depth ? spare_frame(w, frame,
					     fo->batch.buf + fo->batch.at[idx])
			       : note_innermost(w, frame, idx));
		/*
		 * A spare frame's copy, made at any moment, says its call
		 * (running or, above every running frame, returned: see
		 * below).  Another frame whose callee returned may have
		 * returned too, and been reused by any call.
		 */
		if (spare) {
			copy = fo->batch.at[idx];
		} else if (stale) {
			why = DROP_INVALID;
			break;
		} else if (!depth && !innermost_usable(w, idx)) {
			if (gen0) {
				why = DROP_INVALID;
				break;
			}
			idx = -1;
		}
		if (idx >= 0 && !spare) {
			/* The innermost: its first copy, after the state's. */
			copy = depth ? caller_copy(&fo->batch, idx, &win, &inside)
				     : fo->batch.at[idx];
			/*
			 * Of the free list, outside a window: only right
			 * after its callee, or it may be another call's.
			 */
			if (copy == NO_COPY ||
			    (depth && !inside && fo->batch.known[idx] >= 0 &&
			     is_free_frame(w, frame)) ||
			    (depth && !copy_confirmed(w, idx, copy)))
				idx = -1;
		}
		while (idx < 0) {
			if (!depth && ++restarts > INNERMOST_READS_MAX) {
				why = DROP_INVALID;
				goto done;
			}
			if (!read_frame_batch(w, tstate, m, last, frame)) {
				why = DROP_READ;
				goto done;
			}
			if (last) {
				const unsigned char *a = fo->anchor_buf;

				if (load_u64(a, off->frame_code) != last_code ||
				    load_u64(a, off->frame_back) != last_back ||
				    !frame_object_live(off, a, depth - 1) ||
				    !copy_confirmed(w, 0, fo->batch.at[0])) {
					why = DROP_INVALID;
					goto done;
				}
				idx = 0;
				copy = fo->batch.at[0];
				break;
			}
			/*
			 * No frame taken yet: the one the thread state named,
			 * copied again (first in the batch), if it can be
			 * taken now; else start from the new copy of the
			 * thread state.
			 */
			spare = note_innermost(w, frame, 0);
			if (spare || innermost_usable(w, 0)) {
				idx = 0;
				copy = fo->batch.at[0];
				break;
			}
			/* Not in the first batch: its first copy is this. */
			if (!looked0 && !w->moved) {
				gen0 = innermost_generator(w, frame, 0);
				looked0 = 1;
				if (gen0) {
					why = DROP_INVALID;
					goto done;
				}
			}
			pywalk_take_fresh_tstate(w);
			w->moved = 1;
			frame = load_u64(w->tstate_buf, off->tstate_frame);
			if (!frame)
				goto done;
			idx = batch_find(&fo->batch, 0, frame);
			if (!innermost_usable(w, idx))
				idx = -1;
			else
				copy = fo->batch.at[idx];
			pywalk_loop_init(&lc);
			why = pywalk_loop_step(&lc, frame);
			if (why)
				goto done;
		}
		f = fo->batch.buf + copy;
		/*
		 * A frame that returned is taken only above every running one
		 * (callers outlive their callees), and only when it is a
		 * spare frame, which still says what it ran and for whom.
		 */
		if (spare && (!depth || stale) &&
		    !frame_object_live(off, f, 0)) {
			/* It returned: a caller is left to say who it was. */
			if (!load_u64(f, off->frame_back)) {
				/* or it is a generator's, suspended since */
				if (!depth && !looked0 && !w->moved)
					innermost_generator(w, frame, idx);
				why = DROP_INVALID;
				break;
			}
			now_stale = 1;
		} else if (!frame_object_live(off, f, stale ? 0 : depth)) {
			/* Running: held by its call and its callee's link. */
			why = DROP_INVALID;
			break;
		}
		code = load_u64(f, off->frame_code);
		if (!pywalk_past_limit(w, depth)) {
			pywalk_push(w, out, frame, code, frame_addrq(w, f), 1);
			/* as last read: a generator's, for torn reads' keys */
			w->gen_frames[out->nr_frames - 1] =
			    generator_code(w, code);
		}
		win = frame_window(w, idx, copy, depth);
		/* The sample's own, taken: the walk did not tear at it. */
		if (!restarts)
			w->torn_at = 0;
		stale = now_stale;
		now_stale = 0;
		note_walked(w, depth++, frame, idx, code);
		w->root_frame = frame;
		at = idx;
		last = frame;
		last_code = code;
		last_back = load_u64(f, off->frame_back);
		frame = last_back;
	}
done:
	/*
	 * Torn past the innermost: the frame the last one taken linked to
	 * when it was copied, for the key (see take_key), if its code is
	 * known from its address (a code object's spare frame, or a
	 * generator's, which runs one code for its life).
	 */
	if (why == DROP_INVALID && depth && frame && !w->torn_at)
		note_torn_link(w, frame);
	/* Learn from this walk for the next ones, even a failed one. */
	learn_frames(w, m, depth, !why);
	/*
	 * Torn, the frames taken before are left for the caller's key
	 * (see walk_thread): each was taken while its callee's link to it
	 * held.
	 */
	if (why) {
		/*
		 * Frames of a later moment than the sample's (the thread
		 * state read again) say less than its own innermost frame.
		 */
		if ((why != DROP_INVALID && why != DROP_READ) ||
		    (gen0 && restarts))
			out->nr_frames = first_frame;
		return why;
	}
	pywalk_push_omitted(w, out);
	return DROP_NONE;
}

static void batch_release(struct py_frame_batch *b)
{
	free(b->buf);
	free(b->addrs);
	free(b->at);
	free(b->at2);
	free(b->known);
}

static void frameobj_init(struct pywalk *w)
{
	w->frameobj = xcalloc(1, sizeof(*w->frameobj));
}

static void frameobj_forget_prefetched(struct pywalk *w)
{
	w->frameobj->nr_pre_frames = 0;
}

static void frameobj_release(struct pywalk *w)
{
	struct frameobj_state *fo = w->frameobj;
	size_t i;

	for (i = 0; i < fo->nr_memos; i++) {
		free(fo->memos[i].known);
		free(fo->memos[i].spans);
	}
	free(fo->memos);
	batch_release(&fo->batch);
	free(fo->anchor_buf);
	free(fo->by_addr);
	free(fo->frames_seen);
	free(fo->walk_frames);
	free(fo->walk_known);
	free(fo->walk_codes);
	for (i = 0; i < fo->alloc_pre_frames; i++) {
		free(fo->pre_frames[i].fresh);
		batch_release(&fo->pre_frames[i].batch);
	}
	free(fo->pre_frames);
	free(fo);
	w->frameobj = NULL;
}

const struct pywalk_ops frameobj_walker = {
    .init = frameobj_init,
    .walk = frameobj_walk,
    .prefetch = frameobj_prefetch,
    .forget_prefetched = frameobj_forget_prefetched,
    .release = frameobj_release,
};
