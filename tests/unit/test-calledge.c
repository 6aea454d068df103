/* SPDX-License-Identifier: MIT */
/* Unit tests of the set of calls seen (calledge): add, find, grow, bound. */
#include <stdint.h>

#include "py/calledge.h"

#include "check.h"

/* An edge of a made-up program: code objects 16 bytes apart, as real. */
static struct call_edge edge(uint64_t caller, uint64_t callee)
{
	struct call_edge e = {0x7f0000000000ULL + caller * 16,
			      0x7f0000000000ULL + callee * 16};

	return e;
}

static void test_add_find(void)
{
	struct call_edges ce = {0};
	struct call_edge ab = edge(1, 2), ba = edge(2, 1), zero = {0, 5};

	CHECK(!call_edges_has(&ce, &ab));
	/* By default one check holds a pair. */
	call_edges_add(&ce, &ab, 1);
	CHECK(call_edges_has(&ce, &ab));
	/* A pair is directed: who calls whom. */
	CHECK(!call_edges_has(&ce, &ba));
	/* Added again, held once. */
	call_edges_add(&ce, &ab, 3);
	CHECK(ce.nr == 1);
	CHECK(call_edges_has(&ce, &ab));
	/* Code 0 is no code (an empty slot): never held. */
	call_edges_add(&ce, &zero, 1);
	call_edges_add(&ce, &zero, 2);
	CHECK(!call_edges_has(&ce, &zero));
	CHECK(ce.nr == 1);
	call_edges_release(&ce);
	CHECK(!ce.slots && !ce.nr && !ce.cap);
}

/* Where a version needs more checks: one per sample counts. */
static void test_checks_per_sample(void)
{
	struct call_edges ce = {0};
	struct call_edge ab = edge(1, 2);

	ce.checks = CALL_EDGE_CHECKS_UNGUARDED;
	call_edges_add(&ce, &ab, 1);
	call_edges_add(&ce, &ab, 1);
	CHECK(!call_edges_has(&ce, &ab));
	call_edges_add(&ce, &ab, 2);
	CHECK(call_edges_has(&ce, &ab));
	CHECK(ce.nr == 1);
	call_edges_release(&ce);
}

/*
 * With a window: two checks held a pair only when they came at most
 * window samples apart; a check later than that counts as the first.
 */
static void test_checks_within_window(void)
{
	struct call_edges ce = {0};
	struct call_edge ab = edge(1, 2);

	ce.checks = CALL_EDGE_CHECKS_POLLED;
	ce.window = 10;
	call_edges_add(&ce, &ab, 1);
	call_edges_add(&ce, &ab, 12);
	CHECK(!call_edges_has(&ce, &ab));
	call_edges_add(&ce, &ab, 22);
	CHECK(call_edges_has(&ce, &ab));
	/* Held, it stays held however long the program goes without it. */
	call_edges_add(&ce, &ab, 5000);
	CHECK(call_edges_has(&ce, &ab));
	call_edges_release(&ce);
}

static void test_grow_keeps_all(void)
{
	struct call_edges ce = {0};
	uint64_t i, n = 5000;
	int all = 1;

	for (i = 0; i < n; i++) {
		struct call_edge e = edge(i, i + 1);

		call_edges_add(&ce, &e, 1);
		call_edges_add(&ce, &e, 2);
	}
	CHECK(ce.nr == n);
	/* At most half full after growing. */
	CHECK(2 * ce.nr <= ce.cap);
	for (i = 0; i < n; i++) {
		struct call_edge e = edge(i, i + 1), f = edge(i + 1, i);

		all &= call_edges_has(&ce, &e) && !call_edges_has(&ce, &f);
	}
	CHECK(all);
	call_edges_release(&ce);
}

/* Past its bound the set is emptied and learnt again: memory bounded. */
static void test_bounded(void)
{
	struct call_edges ce = {0};
	struct call_edge last = edge(0, 0);
	size_t most = 0;
	uint64_t i;

	for (i = 0; i < (1u << 20) + 10; i++) {
		last = edge(i, 7);
		call_edges_add(&ce, &last, 1);
		call_edges_add(&ce, &last, 2);
		if (ce.cap > most)
			most = ce.cap;
	}
	CHECK(most <= (1u << 20));
	CHECK(ce.nr < (1u << 20) / 2 + 1);
	CHECK(call_edges_has(&ce, &last));
	call_edges_release(&ce);
}

int main(void)
{
	test_add_find();
	test_checks_per_sample();
	test_checks_within_window();
	test_grow_keeps_all();
	test_bounded();
	return failed;
}
