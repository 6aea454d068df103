/* SPDX-License-Identifier: MIT */
/* The order of samples in time, kept for writers that draw a timeline. */
#ifndef SPYC_TIMELINE_H
#define SPYC_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

/*
 * What a timeline may hold: 2^26 thread stacks (256 MiB of entry
 * indexes) and 2^24 sampling ticks (256 MiB of times and offsets): at
 * 100 Hz that is 46 hours of one thread, or 7 hours of 25 threads at
 * once.  The aggregated stacks have no such limit; only the timeline
 * stops there.
 */
#define TIMELINE_MAX_ENTRIES (1u << 26)
#define TIMELINE_MAX_TICKS (1u << 24)

/* One sampling tick: when it was taken, where its stacks start. */
struct timeline_tick {
	uint64_t t_ns; /* monotonic clock (now_ns()) */
	size_t first;  /* index into timeline.entries */
};

/*
 * The samples in the order taken: for each tick, the stacks entries
 * (indexes into struct stacks' entries, which name the thread) of every
 * thread that had a stack then.  A tick with no entries is a sample in
 * which no thread was kept (all idle, say): every stack ended.  Costs
 * 16 bytes a tick and 4 bytes a thread's stack, no more.
 */
struct timeline {
	uint64_t t0_ns; /* when sampling started, monotonic */
	struct timeline_tick *ticks;
	size_t nr_ticks, alloc_ticks;
	uint32_t *entries;
	size_t nr_entries, alloc_entries;
	int full; /* a limit was reached: the timeline ends early */
};

void timeline_init(struct timeline *tl);
/* Free what tl holds; tl is left empty and may be reused. */
void timeline_release(struct timeline *tl);

/*
 * Start a tick taken at t_ns.  Returns 0, or -ENOSPC once the timeline
 * is full (the tick and all later ones are not recorded).
 */
int timeline_tick(struct timeline *tl, uint64_t t_ns);

/*
 * Add a stacks entry to the current tick.  Returns 0, or -ENOSPC when
 * the timeline is full: the current tick is then taken back whole, so
 * that the timeline never holds half a tick.
 */
int timeline_add(struct timeline *tl, uint32_t entry);

/* The entries of tick i: *nr of them; valid until tl changes. */
const uint32_t *timeline_tick_entries(const struct timeline *tl, size_t i,
				      size_t *nr);

#endif
