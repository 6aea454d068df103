/* SPDX-License-Identifier: MIT */
/* Naming the frames a walk found, on every version: their code objects,
 * through the cache, confirmed in one read, and their lines. */
#include "py/pyresolve.h"

#include <stdlib.h>
#include <string.h>

#include "sys/proc.h"
#include "py/pyframe.h"
#include "py/pywalk.h"
#include "util.h"

/* Bytes of a page: headers on the same or the next page are read as one. */
#define PAGE_BYTES ((uint64_t)4096)
/* Most code objects pyresolve_frames sorts by insertion. */
#define CODES_SORTED_IN_PLACE 32

/* Recursion repeats a code object: is frame i's the one of frame i-1? */
static int repeats_code(const struct py_sampler *ps, size_t from, size_t i)
{
	return i > from && ps->code_addrs[i] == ps->code_addrs[i - 1] &&
	       ps->entries[i - 1] != PYWALK_PLACEHOLDER;
}

/* Same code and bytecode copy as frame i-1: read co_tlbc once for both. */
static int repeats_tlbc(const struct py_sampler *ps, size_t from, size_t i)
{
	return i > from && ps->code_addrs[i] == ps->code_addrs[i - 1] &&
	       ps->tlbcs[i] == ps->tlbcs[i - 1] &&
	       ps->tlbc_arrays[i] == ps->tlbc_arrays[i - 1];
}

/*
 * Free-threaded builds: the lines of the frames from from on that run a
 * thread-local copy of their code's bytecode (ps->tlbcs[i] > 0, their
 * instruction pointers in ps->addrqs).  Each copy is entries[tlbc] of
 * the code's co_tlbc array (pycore_code.h, _PyCode_GetTLBCFast), read
 * now in one process_vm_readv: the array's size and that entry.  A copy
 * lives as long as a thread holds its index (CPython frees the copies
 * of released indices only), so it is still the frame's if the frame
 * is still live; the instruction pointer must then lie inside it, a
 * check that a torn read (a wrong index, a replaced array, a frame
 * popped and reused) fails.  Returns DROP_NONE or why to drop.
 */
static enum drop_reason resolve_tlbc(struct py_sampler *ps,
				     struct py_sample *out, size_t from)
{
	const struct py_offsets *off = ps->rt->off;
	size_t n = out->nr_frames, i, nio = 0;
	int r;

	ALLOC_GROW(ps->tlbc_words, 2 * n, ps->alloc_tlbc_words);
	ALLOC_GROW(ps->tlbc_slots, n, ps->alloc_tlbc_slots);
	py_sampler_grow_iov(ps, 2 * n);
	for (i = from; i < n; i++) {
		uint64_t array = ps->tlbc_arrays[i];
		int32_t tlbc = ps->tlbcs[i];

		if (!tlbc || ps->entries[i] == PYWALK_PLACEHOLDER)
			continue;
		if (tlbc < 0 || tlbc > PY_TLBC_INDEX_MAX || !array)
			return DROP_INVALID;
		if (repeats_tlbc(ps, from, i)) {
			ps->tlbc_slots[i] = ps->tlbc_slots[i - 1];
			continue;
		}
		ps->tlbc_slots[i] = nio;
		py_sampler_set_iov(ps, nio, &ps->tlbc_words[nio],
				   array + (uint64_t)off->codearray_size, 8);
		nio++;
		py_sampler_set_iov(ps, nio, &ps->tlbc_words[nio],
				   array + (uint64_t)off->codearray_entries +
				       (uint64_t)tlbc * 8,
				   8);
		nio++;
	}
	if (!nio)
		return DROP_NONE;
	r = proc_readv(ps->rt->pid, ps->local, ps->remote, nio);
	if (r < 0)
		return py_read_error(r);
	for (i = from; i < n; i++) {
		struct py_frame *fr = &out->frames[i];
		uint64_t instr = (uint64_t)ps->addrqs[i], size, copy;

		if (!ps->tlbcs[i] || ps->entries[i] == PYWALK_PLACEHOLDER)
			continue;
		/* A region that could not be read is zeros: no size. */
		size = ps->tlbc_words[ps->tlbc_slots[i]];
		copy = ps->tlbc_words[ps->tlbc_slots[i] + 1];
		if ((uint64_t)ps->tlbcs[i] >= size || !copy || instr < copy ||
		    (fr->code->code_bytes &&
		     instr - copy >= (uint64_t)fr->code->code_bytes))
			return DROP_INVALID;
		fr->line =
		    pycode_line(&ps->codes, fr->code, (long)(instr - copy));
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
 * Point ps->local/remote at the headers of the nr code objects of
 * codes_read (sorted, distinct), and set where each lands in
 * ps->headers.  Each region of the read costs the kernel about as much
 * as a page, so headers on one page or on pages that follow one another
 * share a region: it spans only pages a header lies on, so it reads
 * whole exactly when each header alone would.  Returns how many regions.
 */
static size_t plan_header_reads(struct py_sampler *ps, size_t nr)
{
	struct py_code_read *cr = ps->codes_read;
	size_t hl = ps->codes.header_len, i, nio = 0, total = 0;
	uint64_t start = 0, end = 0;
	int open = 0;

	py_sampler_grow_iov(ps, nr);
	for (i = 0; i < nr; i++) {
		uint64_t a = cr[i].addr;
		/* An address at the very top is read alone (and fails). */
		int fits = a <= UINT64_MAX - hl;

		if (!nio || !open || !fits ||
		    a / PAGE_BYTES > (end - 1) / PAGE_BYTES + 1) {
			if (nio)
				total += ps->remote[nio - 1].iov_len;
			ps->remote[nio++].iov_base = (void *)(uintptr_t)a;
			start = end = a;
		}
		cr[i].at = total + (size_t)(a - start);
		open = fits;
		if (fits && a + hl > end)
			end = a + hl;
		ps->remote[nio - 1].iov_len = fits ? (size_t)(end - start) : hl;
	}
	if (nio)
		total += ps->remote[nio - 1].iov_len;
	if (total > ps->alloc_headers) {
		free(ps->headers);
		ps->alloc_headers = total * 2;
		ps->headers = xmalloc(ps->alloc_headers);
	}
	for (i = 0, total = 0; i < nio; i++) {
		ps->local[i].iov_base = ps->headers + total;
		ps->local[i].iov_len = ps->remote[i].iov_len;
		total += ps->remote[i].iov_len;
	}
	return nio;
}

enum drop_reason pyresolve_frames(struct py_sampler *ps, struct py_sample *out,
				  size_t from)
{
	const struct py_offsets *off = ps->rt->off;
	int tlbc = 0;
	size_t n = out->nr_frames, i, nr = 0, nio;
	int r;

	if (from >= n)
		return DROP_NONE;
	ALLOC_GROW(ps->codes_read, n - from, ps->alloc_codes_read);
	for (i = from; i < n; i++) {
		if (ps->entries[i] == PYWALK_PLACEHOLDER)
			continue;
		if (!ps->code_addrs[i])
			return DROP_INVALID;
		if (!repeats_code(ps, from, i))
			ps->codes_read[nr++].addr = ps->code_addrs[i];
	}
	nr = distinct_codes(ps->codes_read, nr);
	nio = plan_header_reads(ps, nr);
	r = proc_readv(ps->rt->pid, ps->local, ps->remote, nio);
	if (r < 0)
		return py_read_error(r);
	/*
	 * A frame's code object lives while the frame runs: one that
	 * cannot be read was named by a frame read as it was replaced.
	 */
	if ((size_t)r != nio)
		return DROP_INVALID;
	ALLOC_GROW(out->frames, n, out->alloc_frames);
	for (i = from; i < n; i++) {
		struct py_frame *fr = &out->frames[i];

		if (ps->entries[i] == PYWALK_PLACEHOLDER) {
			fr->code =
			    pycode_placeholder(&ps->codes, ps->code_addrs[i]);
			fr->entry = 0;
			fr->line = 0;
			continue;
		}
		if (repeats_code(ps, from, i)) {
			fr->code = out->frames[i - 1].code;
			ps->tlbc_arrays[i] = ps->tlbc_arrays[i - 1];
		} else {
			struct py_code_read *cr =
			    &ps->codes_read[code_read_find(ps->codes_read, nr,
							   ps->code_addrs[i])];
			const unsigned char *header = ps->headers + cr->at;

			/* One copy of the header: one verdict on it. */
			if (!cr->code)
				cr->code =
				    pycode_lookup(&ps->codes, cr->addr, header);
			fr->code = cr->code;
			if (!fr->code)
				return DROP_INVALID;
			if (off->code_tlbc != OFF_NONE)
				ps->tlbc_arrays[i] =
				    load_u64(header, off->code_tlbc);
		}
		fr->entry = ps->entries[i];
		if (ps->tlbcs[i]) {
			fr->line = 0; /* below, once its copy is known */
			tlbc = 1;
			continue;
		}
		fr->line = pycode_line(&ps->codes, fr->code, ps->addrqs[i]);
	}
	return tlbc ? resolve_tlbc(ps, out, from) : DROP_NONE;
}
