/* SPDX-License-Identifier: MIT */
/* Naming the frames a walk found, on every version: their code objects,
 * through the cache, confirmed in one read, and their lines. */
#include "py/pyresolve.h"

#include <stdlib.h>
#include <string.h>

#include "sys/proc.h"
#include "py/pywalk.h"
#include "util.h"

/* Bytes of a page: headers on the same or the next page are read as one. */
#define PAGE_BYTES ((uint64_t)4096)
/* Most code objects pyresolve_frames sorts by insertion. */
#define CODES_SORTED_IN_PLACE 32

/* Recursion repeats a code object: is frame i's the one of frame i-1? */
/* What naming the frames keeps between samples: scratch for its reads. */
struct pyresolve_state {
	/* pyresolve_frames's reads of co_tlbc arrays: two words a frame */
	uint64_t *tlbc_words;
	size_t *tlbc_slots;
	size_t alloc_tlbc_words, alloc_tlbc_slots;
	/*
	 * pyresolve_frames: the distinct code objects of the frames it
	 * resolves, by address, each one's header read once however many
	 * frames run it; headers holds the copies.
	 */
	unsigned char *headers;
	size_t alloc_headers;
	struct py_code_read {
		uint64_t addr;
		size_t at;	     /* its header's offset in headers */
		struct pycode *code; /* once looked up, else NULL */
	} * codes_read;
	size_t alloc_codes_read;
};

static int repeats_code(const struct pywalk *w, size_t from, size_t i)
{
	return i > from && w->code_addrs[i] == w->code_addrs[i - 1] &&
	       w->entries[i - 1] != PYWALK_PLACEHOLDER;
}

/* Same code and bytecode copy as frame i-1: read co_tlbc once for both. */
static int repeats_tlbc(const struct pywalk *w, size_t from, size_t i)
{
	return i > from && w->code_addrs[i] == w->code_addrs[i - 1] &&
	       w->tlbcs[i] == w->tlbcs[i - 1] &&
	       w->tlbc_arrays[i] == w->tlbc_arrays[i - 1];
}

/*
 * Free-threaded builds: the lines of the frames from from on that run a
 * thread-local copy of their code's bytecode (w->tlbcs[i] > 0, their
 * instruction pointers in w->addrqs).  Each copy is entries[tlbc] of
 * the code's co_tlbc array (pycore_code.h, _PyCode_GetTLBCFast), read
 * now in one process_vm_readv: the array's size and that entry.  A copy
 * lives as long as a thread holds its index (CPython frees the copies
 * of released indices only), so it is still the frame's if the frame
 * is still live; the instruction pointer must then lie inside it, a
 * check that a torn read (a wrong index, a replaced array, a frame
 * popped and reused) fails.  Returns DROP_NONE or why to drop.
 */
static enum drop_reason resolve_tlbc(struct pywalk *w,
				     struct py_sample *out, size_t from)
{
	struct pyresolve_state *rs = w->resolve;
	const struct py_offsets *off = w->rt->off;
	size_t n = out->nr_frames, i, nio = 0;
	int r;

	ALLOC_GROW(rs->tlbc_words, 2 * n, rs->alloc_tlbc_words);
	ALLOC_GROW(rs->tlbc_slots, n, rs->alloc_tlbc_slots);
	pywalk_grow_iov(w, 2 * n);
	for (i = from; i < n; i++) {
		uint64_t array = w->tlbc_arrays[i];
		int32_t tlbc = w->tlbcs[i];

		if (!tlbc || w->entries[i] == PYWALK_PLACEHOLDER)
			continue;
		if (tlbc < 0 || tlbc > PY_TLBC_INDEX_MAX || !array)
			return DROP_INVALID;
		if (repeats_tlbc(w, from, i)) {
			rs->tlbc_slots[i] = rs->tlbc_slots[i - 1];
			continue;
		}
		rs->tlbc_slots[i] = nio;
		pywalk_set_iov(w, nio, &rs->tlbc_words[nio],
				   array + (uint64_t)off->codearray_size, 8);
		nio++;
		pywalk_set_iov(w, nio, &rs->tlbc_words[nio],
				   array + (uint64_t)off->codearray_entries +
				       (uint64_t)tlbc * 8,
				   8);
		nio++;
	}
	if (!nio)
		return DROP_NONE;
	r = proc_readv(w->rt->pid, w->local, w->remote, nio);
	if (r < 0)
		return pywalk_read_error(r);
	for (i = from; i < n; i++) {
		struct py_frame *fr = &out->frames[i];
		uint64_t instr = (uint64_t)w->addrqs[i], size, copy;

		if (!w->tlbcs[i] || w->entries[i] == PYWALK_PLACEHOLDER)
			continue;
		/* A region that could not be read is zeros: no size. */
		size = rs->tlbc_words[rs->tlbc_slots[i]];
		copy = rs->tlbc_words[rs->tlbc_slots[i] + 1];
		if ((uint64_t)w->tlbcs[i] >= size || !copy || instr < copy ||
		    (fr->code->code_bytes &&
		     instr - copy >= (uint64_t)fr->code->code_bytes))
			return DROP_INVALID;
		fr->line =
		    pycode_line(&w->codes, fr->code, (long)(instr - copy));
	}
	return DROP_NONE;
}

static int code_read_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct py_code_read *)a)->addr;
	uint64_t y = ((const struct py_code_read *)b)->addr;

	return x < y ? -1 : x > y;
}

/* Sort the nr addresses of codes_read, drop repeats; how many are left. */
static size_t distinct_codes(struct py_code_read *cr, size_t nr)
{
	size_t i, u = 0;

	/* A handful as a rule: sorted in place, qsort past that. */
	if (nr > CODES_SORTED_IN_PLACE) {
		qsort(cr, nr, sizeof(*cr), code_read_cmp);
	} else {
		for (i = 1; i < nr; i++) {
			uint64_t a = cr[i].addr;

			for (u = i; u && cr[u - 1].addr > a; u--)
				cr[u].addr = cr[u - 1].addr;
			cr[u].addr = a;
		}
		u = 0;
	}
	for (i = 0; i < nr; i++) {
		if (u && cr[u - 1].addr == cr[i].addr)
			continue;
		cr[u].addr = cr[i].addr;
		cr[u].code = NULL;
		u++;
	}
	return u;
}

/* The index of addr in the sorted, distinct codes_read[0..nr). */
static size_t code_read_find(const struct py_code_read *cr, size_t nr,
			     uint64_t addr)
{
	size_t lo = 0, hi = nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cr[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Point w->local/remote at the headers of the nr code objects of
 * codes_read (sorted, distinct), and set where each lands in
 * rs->headers.  Each region of the read costs the kernel about as much
 * as a page, so headers on one page or on pages that follow one another
 * share a region: it spans only pages a header lies on, so it reads
 * whole exactly when each header alone would.  Returns how many regions.
 */
static size_t plan_header_reads(struct pywalk *w, size_t nr)
{
	struct pyresolve_state *rs = w->resolve;
	struct py_code_read *cr = rs->codes_read;
	size_t hl = w->codes.header_len, i, nio = 0, total = 0;
	uint64_t start = 0, end = 0;
	int open = 0;

	pywalk_grow_iov(w, nr);
	for (i = 0; i < nr; i++) {
		uint64_t a = cr[i].addr;
		/* An address at the very top is read alone (and fails). */
		int fits = a <= UINT64_MAX - hl;

		if (!nio || !open || !fits ||
		    a / PAGE_BYTES > (end - 1) / PAGE_BYTES + 1) {
			if (nio)
				total += w->remote[nio - 1].iov_len;
			w->remote[nio++].iov_base = (void *)(uintptr_t)a;
			start = end = a;
		}
		cr[i].at = total + (size_t)(a - start);
		open = fits;
		if (fits && a + hl > end)
			end = a + hl;
		w->remote[nio - 1].iov_len = fits ? (size_t)(end - start) : hl;
	}
	if (nio)
		total += w->remote[nio - 1].iov_len;
	if (total > rs->alloc_headers) {
		free(rs->headers);
		rs->alloc_headers = total * 2;
		rs->headers = xmalloc(rs->alloc_headers);
	}
	for (i = 0, total = 0; i < nio; i++) {
		w->local[i].iov_base = rs->headers + total;
		w->local[i].iov_len = w->remote[i].iov_len;
		total += w->remote[i].iov_len;
	}
	return nio;
}

enum drop_reason pyresolve_frames(struct pywalk *w, struct py_sample *out,
				  size_t from)
{
	struct pyresolve_state *rs = w->resolve
					 ? w->resolve
					 : (w->resolve = xcalloc(1, sizeof(*rs)));
	const struct py_offsets *off = w->rt->off;
	int tlbc = 0;
	size_t n = out->nr_frames, i, nr = 0, nio;
	int r;

	if (from >= n)
		return DROP_NONE;
	ALLOC_GROW(rs->codes_read, n - from, rs->alloc_codes_read);
	for (i = from; i < n; i++) {
		if (w->entries[i] == PYWALK_PLACEHOLDER)
			continue;
		if (!w->code_addrs[i])
			return DROP_INVALID;
		if (!repeats_code(w, from, i))
			rs->codes_read[nr++].addr = w->code_addrs[i];
	}
	nr = distinct_codes(rs->codes_read, nr);
	nio = plan_header_reads(w, nr);
	r = proc_readv(w->rt->pid, w->local, w->remote, nio);
	if (r < 0)
		return pywalk_read_error(r);
	/*
	 * A frame's code object lives while the frame runs: one that
	 * cannot be read was named by a frame read as it was replaced.
	 */
	if ((size_t)r != nio)
		return DROP_INVALID;
	ALLOC_GROW(out->frames, n, out->alloc_frames);
	for (i = from; i < n; i++) {
		struct py_frame *fr = &out->frames[i];

		if (w->entries[i] == PYWALK_PLACEHOLDER) {
			fr->code =
			    pycode_placeholder(&w->codes, w->code_addrs[i]);
			fr->entry = 0;
			fr->line = 0;
			continue;
		}
		if (repeats_code(w, from, i)) {
			fr->code = out->frames[i - 1].code;
			w->tlbc_arrays[i] = w->tlbc_arrays[i - 1];
		} else {
			struct py_code_read *cr =
			    &rs->codes_read[code_read_find(rs->codes_read, nr,
							   w->code_addrs[i])];
			const unsigned char *header = rs->headers + cr->at;

			/* One copy of the header: one verdict on it. */
			if (!cr->code)
				cr->code =
				    pycode_lookup(&w->codes, cr->addr, header);
			fr->code = cr->code;
			if (!fr->code)
				return DROP_INVALID;
			if (off->code_tlbc != OFF_NONE)
				w->tlbc_arrays[i] =
				    load_u64(header, off->code_tlbc);
		}
		fr->entry = w->entries[i];
		if (w->tlbcs[i]) {
			fr->line = 0; /* below, once its copy is known */
			tlbc = 1;
			continue;
		}
		fr->line = pycode_line(&w->codes, fr->code, w->addrqs[i]);
	}
	return tlbc ? resolve_tlbc(w, out, from) : DROP_NONE;
}

void pyresolve_release(struct pywalk *w)
{
	struct pyresolve_state *rs = w->resolve;

	if (!rs)
		return;
	free(rs->tlbc_words);
	free(rs->tlbc_slots);
	free(rs->headers);
	free(rs->codes_read);
	free(rs);
	w->resolve = NULL;
}
