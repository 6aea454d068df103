/* SPDX-License-Identifier: MIT */
/*
 * The calls seen, on CPython 3.11+: which code was seen calling which,
 * each pair checked by reads that found both frames still the same, in
 * two samples.
 */
#ifndef SPYC_CALLEDGE_H
#define SPYC_CALLEDGE_H

#include <stddef.h>
#include <stdint.h>

struct call_edge {
	uint64_t code;	 /* the caller's code object */
	uint64_t callee; /* the callee's code object */
};

/*
 * Checks a pair needs, in as many samples, before it is held, where a
 * version gives a read no way to tell a frame being pushed (3.11: the
 * top is raised before the frame is written, and the caller's saved
 * depth is not cleared while it runs).  A thread kept off its CPU right
 * then shows an older frame in the new one's place to every read for as
 * long as it waits: one sample's check, however many reads, can be
 * fooled by that (after a walk that spanned the push); two such moments
 * agreeing on a false pair are far rarer.  Elsewhere one check does.
 */
#define CALL_EDGE_CHECKS_UNGUARDED 2

/*
 * Where a pair is read again and again until it holds (3.14+: see
 * edges_still_hold), now and then a read made across a moment when the
 * caller's place changed, the target held off its CPU or the copy
 * interrupted, finds a false one whole: about one a minute on a program
 * made of short calls, each time in a sample of its own.  So there a
 * pair is held after two checks, in samples at most CALL_EDGE_WINDOW
 * apart: a call the program makes comes back within a few samples, a
 * false pair's second check would have to come that soon.
 */
#define CALL_EDGE_CHECKS_POLLED 2
#define CALL_EDGE_WINDOW 1024

struct call_edge_slot {
	struct call_edge edge;
	uint32_t checks; /* samples whose check it passed */
	uint32_t stamp;	 /* the last of them */
};

/* An open-addressing set of call_edge; zeroed is empty. */
struct call_edges {
	struct call_edge_slot *slots;
	size_t nr, cap;	 /* cap is 0 or a power of two */
	uint32_t checks; /* checks needed to hold a pair; 0 means 1 */
	/*
	 * A check more than window samples after the one before starts
	 * the count again (0: never), until the pair is held.
	 */
	uint32_t window;
};

/* 1 if the set holds the edge (checked often enough), else 0. */
int call_edges_has(const struct call_edges *ce, const struct call_edge *e);

/*
 * Count a check of the edge passed in the sample stamp (one per stamp);
 * at ce->checks it is held.  The set grows to a bound, then is
 * emptied and learnt again, so that code objects freed and their
 * addresses reused do not pile up.
 */
void call_edges_add(struct call_edges *ce, const struct call_edge *e,
		    uint32_t stamp);

void call_edges_release(struct call_edges *ce);

#endif
