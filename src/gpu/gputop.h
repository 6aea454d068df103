/* SPDX-License-Identifier: MIT */
/*
 * top --gpu: the kernels, copies and memsets reported over each refresh
 * interval and since the start, by GPU time, and how busy the GPU was.
 * Pure: no target, no channel.
 */
#ifndef SPYC_GPUTOP_H
#define SPYC_GPUTOP_H

#include <stddef.h>
#include <stdint.h>

#include "gpu/gpuchan-layout.h"
#include "gpu/gpunames.h"

/* How many sites a window names for the GPU's idle time. */
#define GPUTOP_IDLE_TOP 3
/* How many launching threads are told apart (more count as the last). */
#define GPUTOP_LAUNCH_TIDS 64

/* One name's work over a window: a row of top's GPU section. */
struct gputop_row {
	const char
	    *name; /* as gpuprof_activity_name() gives it; the gputop's */
	uint64_t calls;
	uint64_t ns; /* GPU time: the sum of its activities' durations */
};

/* What a window (or the whole run) holds, rows by GPU time, largest first. */
struct gputop_view {
	struct gputop_row *rows;
	size_t nr_rows, alloc_rows;
	uint64_t ns;	  /* all activities' GPU time */
	uint64_t kernels; /* activities of each kind */
	uint64_t copies;
	uint64_t memsets;
	/* the union of the activities' spans within the window's interval */
	uint64_t busy_ns;
	uint64_t wall_ns; /* the window's length (the run's: the sum) */
	/*
	 * The window's GPU idle time the launching threads' samples stood
	 * for (gputop_tick), and the sites (top's frames) with the most of
	 * it, most first.
	 */
	uint64_t idle_ns;
	struct gputop_idle {
		uint32_t site;
		uint64_t ns;
	} idle_top[GPUTOP_IDLE_TOP];
	size_t nr_idle_top;
};

/* One distinct activity name, and its counts. */
struct gputop_name {
	char *key;		  /* type, then the raw name or copy kind */
	char *name;		  /* what rows show */
	uint64_t calls[2], ns[2]; /* [0]: this window, [1]: the run */
};

struct gputop {
	struct gputop_name *names;
	size_t nr_names, alloc_names;
	uint32_t *index; /* open addressing: name index + 1, 0 for none */
	size_t index_size;
	/*
	 * Each activity's start and end on spyc's clock, kept until a
	 * closed window's interval has passed its end.
	 */
	uint64_t (*spans)[2];
	size_t nr_spans, alloc_spans;
	/* CLOCK_MONOTONIC = CUPTI + offset_ns, from the agent's first pair */
	int64_t offset_ns;
	int clock_known;
	uint64_t counts[3]; /* kernels, copies, memsets of the window */
	/* what gputop_close_window() made */
	struct gputop_view window, run;
	size_t windows;		     /* closed so far */
	struct gpu_names long_names; /* kernel names too long for a record */
	/* the threads that launched work (its API calls' thread ids) */
	long launch_tids[GPUTOP_LAUNCH_TIDS];
	size_t nr_launch_tids;
	/* samples not yet charged: their interval's records may be late */
	struct gputop_tick {
		uint64_t t_ns, weight_ns;
		long tid;
		uint32_t site;
	} * ticks;
	size_t nr_ticks, alloc_ticks;
	struct gputop_idle *idle; /* the window's idle time by site */
	size_t nr_idle, alloc_idle;
};

void gputop_init(struct gputop *g);
/* Free everything g owns; g is left as after gputop_init(). */
void gputop_release(struct gputop *g);

/*
 * Count a record from the channel in the current window: kernels,
 * copies and memsets; pieces of long kernel names are kept for them;
 * anything else is ignored.  At most
 * GPUTOP_MAX_NAMES distinct names are kept: the rest count under
 * "[other kernels]".
 */
#define GPUTOP_MAX_NAMES 65536
void gputop_add(struct gputop *g, const struct gpu_record *rec);

/*
 * End the current window: it becomes g->window, and counts in g->run; a
 * new, empty window starts.  Its rows are the records read since the
 * last close; its busy time is by each activity's own start and end,
 * the time within [from_ns, to_ns) (spyc's clock) that some ran: the
 * caller sets that interval back by how late records arrive.  The ticks
 * up to to_ns are charged with the idle time of the spans they stand
 * for.
 */
void gputop_close_window(struct gputop *g, uint64_t from_ns, uint64_t to_ns);

/*
 * A sample of thread tid at t_ns (spyc's clock) that stands for
 * weight_ns (the time since the sample before) centred on it, its
 * innermost frame the caller's site.  When the window that holds t_ns
 * closes, the GPU's idle time in that span goes to the site, if tid
 * launched GPU work.
 */
void gputop_tick(struct gputop *g, uint64_t t_ns, uint64_t weight_ns, long tid,
		 uint32_t site);

/* Forget what the current window holds (after a pause). */
void gputop_reset_window(struct gputop *g);

/* busy_ns over wall_ns of a view in percent, at most 100; -1 if no time. */
double gputop_busy_pct(const struct gputop_view *v);

#endif
