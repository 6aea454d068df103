/* SPDX-License-Identifier: MIT */
/*
 * The calls seen, on CPython 3.11+: which code was seen calling which,
 * each pair checked once by a read that found both frames still the
 * same.
 */
#ifndef SPYC_CALLEDGE_H
#define SPYC_CALLEDGE_H

#include <stddef.h>
#include <stdint.h>

struct call_edge {
	uint64_t code;	 /* the caller's code object */
	uint64_t callee; /* the callee's code object */
};

/* An open-addressing set of call_edge; zeroed is empty. */
struct call_edges {
	struct call_edge *slots;
	size_t nr, cap; /* cap is 0 or a power of two */
};

/* 1 if the set holds the edge, else 0. */
int call_edges_has(const struct call_edges *ce, const struct call_edge *e);

/*
 * Add the edge (nothing if held).  The set grows to a bound, then is
 * emptied and learnt again, so that code objects freed and their
 * addresses reused do not pile up.
 */
void call_edges_add(struct call_edges *ce, const struct call_edge *e);

void call_edges_release(struct call_edges *ce);

#endif
