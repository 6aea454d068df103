/* SPDX-License-Identifier: MIT */
/* The walk context: its scratch, and what every frame walk shares. */
#include "py/pywalk.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

void pywalk_init(struct pywalk *w, const struct pyruntime *rt,
		 const struct pywalk_ops *ops)
{
	const struct py_offsets *off = rt->off;

	memset(w, 0, sizeof(*w));
	w->rt = rt;
	pycode_cache_init(&w->codes, rt);
	w->tstate_buf = xcalloc(1, (size_t)off->tstate_size);
	w->fresh_tstate = xcalloc(1, (size_t)off->tstate_size);
	/* 3.11: nothing tells a frame being pushed (see calledge.h). */
	if (off->hexversion >= 0x030b0000 && off->hexversion < 0x030c0000)
		w->call_edges.checks = CALL_EDGE_CHECKS_UNGUARDED;
	/* 3.14+: pairs read again until they hold (see there). */
	if (off->hexversion >= 0x030e0000) {
		w->call_edges.checks = CALL_EDGE_CHECKS_POLLED;
		w->call_edges.window = CALL_EDGE_WINDOW;
	}
	w->ops = ops;
	ops->init(w);
}

void pywalk_release(struct pywalk *w)
{
	if (w->ops)
		w->ops->release(w);
	pycode_cache_release(&w->codes);
	free(w->tstate_buf);
	free(w->fresh_tstate);
	free(w->code_addrs);
	free(w->frame_addrs);
	free(w->addrqs);
	free(w->entries);
	free(w->gen_frames);
	free(w->tlbcs);
	free(w->tlbc_arrays);
	free(w->local);
	free(w->remote);
	call_edges_release(&w->call_edges);
	memset(w, 0, sizeof(*w));
}

void pywalk_grow_iov(struct pywalk *w, size_t n)
{
	size_t a = w->alloc_iov;

	ALLOC_GROW(w->local, n, a);
	a = w->alloc_iov;
	ALLOC_GROW(w->remote, n, a);
	w->alloc_iov = a;
}

void pywalk_set_iov(struct pywalk *w, size_t i, void *buf, uint64_t addr,
		    size_t len)
{
	w->local[i].iov_base = buf;
	w->local[i].iov_len = len;
	w->remote[i].iov_base = (void *)(uintptr_t)addr;
	w->remote[i].iov_len = len;
}

enum drop_reason pywalk_read_error(int r)
{
	return r == -ESRCH ? DROP_GONE : DROP_READ;
}

void pywalk_loop_init(struct pywalk_loop *lc)
{
	lc->mark = 0;
	lc->power = 1;
	lc->since = lc->steps = 0;
}

enum drop_reason pywalk_loop_step(struct pywalk_loop *lc, uint64_t addr)
{
	if (++lc->steps > PY_WALK_LIMIT)
		return DROP_DEPTH;
	if (addr == lc->mark)
		return DROP_INVALID;
	if (++lc->since == lc->power) {
		lc->mark = addr;
		lc->power *= 2;
		lc->since = 0;
	}
	return DROP_NONE;
}

void pywalk_push(struct pywalk *w, struct py_sample *out, uint64_t frame,
		 uint64_t code, long addrq, int entry)
{
	if (out->nr_frames >= w->alloc_walk) {
		size_t n = w->alloc_walk;

		ALLOC_GROW(w->code_addrs, out->nr_frames + 1, n);
		n = w->alloc_walk;
		ALLOC_GROW(w->addrqs, out->nr_frames + 1, n);
		n = w->alloc_walk;
		ALLOC_GROW(w->entries, out->nr_frames + 1, n);
		n = w->alloc_walk;
		ALLOC_GROW(w->tlbcs, out->nr_frames + 1, n);
		n = w->alloc_walk;
		ALLOC_GROW(w->tlbc_arrays, out->nr_frames + 1, n);
		n = w->alloc_walk;
		ALLOC_GROW(w->gen_frames, out->nr_frames + 1, n);
		n = w->alloc_walk;
		ALLOC_GROW(w->frame_addrs, out->nr_frames + 1, n);
		w->alloc_walk = n;
	}
	w->frame_addrs[out->nr_frames] = frame;
	w->code_addrs[out->nr_frames] = code;
	w->addrqs[out->nr_frames] = addrq;
	w->entries[out->nr_frames] = (unsigned char)entry;
	w->gen_frames[out->nr_frames] = 0;
	w->tlbcs[out->nr_frames] = 0;
	w->tlbc_arrays[out->nr_frames] = 0;
	out->nr_frames++;
}

int pywalk_past_limit(struct pywalk *w, size_t depth)
{
	size_t max = w->max_depth ? w->max_depth : PY_DEFAULT_MAX_DEPTH;

	if (depth < max)
		return 0;
	w->omitted++;
	return 1;
}

void pywalk_push_omitted(struct pywalk *w, struct py_sample *out)
{
	if (w->omitted)
		pywalk_push(w, out, 0, w->omitted, -1, PYWALK_PLACEHOLDER);
}

void pywalk_take_fresh_tstate(struct pywalk *w)
{
	long at = w->rt->off->tstate_interp;

	if (load_u64(w->fresh_tstate, at) == load_u64(w->tstate_buf, at))
		memcpy(w->tstate_buf, w->fresh_tstate,
		       (size_t)w->rt->off->tstate_size);
}

int pywalk_starts_at_root(const struct py_sample *out,
			  const struct py_thread *t)
{
	const struct pycode *root;

	if (!t->depth || t->omitted)
		return 1;
	root = out->frames[t->first + t->depth - 1].code;
	return !(root->flags & PYCODE_SUSPENDABLE);
}
