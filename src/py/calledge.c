/* SPDX-License-Identifier: MIT */
/* The set of calls seen (see calledge.h). */
#include "py/calledge.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

/* Slots the set starts with, and the most it grows to (24 MiB). */
#define CALL_EDGES_FIRST 1024
#define CALL_EDGES_MAX (1u << 20)

static size_t edge_hash(const struct call_edge *e)
{
	uint64_t h = e->code * 0x9e3779b97f4a7c15ULL;

	h ^= e->callee * 0xc2b2ae3d27d4eb4fULL + (h << 6) + (h >> 2);
	return (size_t)(h ^ (h >> 31));
}

static int edge_eq(const struct call_edge *a, const struct call_edge *b)
{
	return a->code == b->code && a->callee == b->callee;
}

/* The slot of e, or the empty one where it would go (code 0: empty). */
static struct call_edge_slot *edge_slot(const struct call_edges *ce,
					const struct call_edge *e)
{
	size_t i = edge_hash(e) & (ce->cap - 1);

	while (ce->slots[i].edge.code && !edge_eq(&ce->slots[i].edge, e))
		i = (i + 1) & (ce->cap - 1);
	return &ce->slots[i];
}

int call_edges_has(const struct call_edges *ce, const struct call_edge *e)
{
	return ce->cap && e->code &&
	       edge_slot(ce, e)->checks >= (ce->checks ? ce->checks : 1);
}

static void grow(struct call_edges *ce)
{
	struct call_edge_slot *old = ce->slots;
	size_t i, old_cap = ce->cap;

	ce->cap = old_cap ? old_cap * 2 : CALL_EDGES_FIRST;
	ce->slots = xcalloc(ce->cap, sizeof(*ce->slots));
	for (i = 0; i < old_cap; i++)
		if (old[i].edge.code)
			*edge_slot(ce, &old[i].edge) = old[i];
	free(old);
}

void call_edges_add(struct call_edges *ce, const struct call_edge *e,
		    uint32_t stamp)
{
	struct call_edge_slot *s;

	if (!e->code)
		return;
	/* At most half full. */
	if (2 * (ce->nr + 1) > ce->cap) {
		if (ce->cap >= CALL_EDGES_MAX) {
			memset(ce->slots, 0, ce->cap * sizeof(*ce->slots));
			ce->nr = 0;
		} else {
			grow(ce);
		}
	}
	s = edge_slot(ce, e);
	if (!s->edge.code) {
		s->edge = *e;
		s->checks = 1;
		s->stamp = stamp;
		ce->nr++;
	} else if (s->stamp != stamp) {
		if (ce->window && s->checks < ce->checks &&
		    stamp - s->stamp > ce->window)
			s->checks = 0;
		s->stamp = stamp;
		if (s->checks < UINT32_MAX)
			s->checks++;
	}
}

void call_edges_release(struct call_edges *ce)
{
	free(ce->slots);
	memset(ce, 0, sizeof(*ce));
}
