/* SPDX-License-Identifier: MIT */
/* The order of samples in time, kept for writers that draw a timeline. */
#include "profile/timeline.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

void timeline_init(struct timeline *tl)
{
	memset(tl, 0, sizeof(*tl));
}

void timeline_release(struct timeline *tl)
{
	free(tl->ticks);
	free(tl->entries);
	timeline_init(tl);
}

int timeline_tick(struct timeline *tl, uint64_t t_ns)
{
	struct timeline_tick *tick;

	if (tl->full || tl->nr_ticks >= TIMELINE_MAX_TICKS) {
		tl->full = 1;
		return -ENOSPC;
	}
	ALLOC_GROW(tl->ticks, tl->nr_ticks + 1, tl->alloc_ticks);
	tick = &tl->ticks[tl->nr_ticks++];
	tick->t_ns = t_ns;
	tick->first = tl->nr_entries;
	return 0;
}

int timeline_add(struct timeline *tl, uint32_t entry)
{
	if (tl->full || !tl->nr_ticks)
		return -ENOSPC;
	if (tl->nr_entries >= TIMELINE_MAX_ENTRIES) {
		/* Take the current tick back: it would be missing threads. */
		tl->nr_entries = tl->ticks[--tl->nr_ticks].first;
		tl->full = 1;
		return -ENOSPC;
	}
	ALLOC_GROW(tl->entries, tl->nr_entries + 1, tl->alloc_entries);
	tl->entries[tl->nr_entries++] = entry;
	return 0;
}

const uint32_t *timeline_tick_entries(const struct timeline *tl, size_t i,
				      size_t *nr)
{
	size_t end =
	    i + 1 < tl->nr_ticks ? tl->ticks[i + 1].first : tl->nr_entries;

	*nr = end - tl->ticks[i].first;
	return tl->entries + tl->ticks[i].first;
}
