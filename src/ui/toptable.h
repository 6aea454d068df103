/* SPDX-License-Identifier: MIT */
/* spyc top's numbers: own and total time per line or function, per thread,
 * over the whole run and over a decaying recent window; no screen. */
#ifndef SPYC_TOPTABLE_H
#define SPYC_TOPTABLE_H

#include <stddef.h>
#include <stdint.h>

#include "profile/stacks.h"

/* A row's thread in a view that adds the threads up. */
#define TOP_ALL_THREADS UINT32_MAX
/* top_view.per_thread */
#define TOP_PER_THREAD 1
#define TOP_PER_PROCESS 2

/* The columns, left to right; each can be sorted on. */
enum top_column {
	TOP_COL_OWN_PCT,
	TOP_COL_TOTAL_PCT,
	TOP_COL_OWN_TIME,
	TOP_COL_TOTAL_TIME,
	TOP_COL_FUNCTION, /* by name, then file and line, ascending */
	TOP_COL_NR,
};

/* What a sampler could tell about the threads of one sample. */
struct top_sample_info {
	unsigned threads; /* Python threads seen */
	unsigned known;	  /* of which the state was known */
	unsigned idle;	  /* of those, how many were not running */
	int gil_held;	  /* some thread held the GIL */
};

/* Sums over the samples of one view, in (weighted) seconds. */
struct top_totals {
	double wall;	     /* sampled time */
	double thread_known; /* thread time whose state was known */
	double thread_idle;  /* of that, not running */
	double gil_known;    /* sampled time when the GIL's holder was known */
	double gil_held;     /* of that, some thread held the GIL */
};

struct top_cell;

struct toptable {
	/*
	 * Interned names: a site (function at a line) is a frame (name,
	 * file, line); a function is the frame (name, file, 0), with its
	 * own id.  Threads too.
	 */
	struct stacks names;
	double half_life; /* seconds, of the recent view's weights */
	struct top_totals whole, recent;
	uint64_t samples; /* samples counted */
	/* private */
	uint32_t *func_of;     /* by site id: its function's id */
	int *func_line;	       /* by function id: the line it is shown at */
	unsigned char *native; /* by site or function id: a native frame */
	size_t alloc_func_of, alloc_func_line, alloc_native;
	struct top_cell *cells;
	size_t nr_cells, alloc_cells;
	uint32_t *index; /* cell + 1 by hash of key, 0 when empty */
	size_t index_size;
	uint64_t seq;	 /* thread-samples counted */
	double weight;	 /* of the sample being counted */
	double lambda;	 /* ln 2 / half_life */
	double epoch;	 /* time at which grow was 1 */
	double grow;	 /* exp(lambda * (now - epoch)) */
	double last;	 /* time of the last sample */
	double *scratch; /* snapshot sums, 4 per name id */
	size_t alloc_scratch;
};

/* How to look at a toptable. */
struct top_view {
	int per_line;	/* a row per line, else per function */
	/*
	 * A row per thread and function (TOP_PER_THREAD), per process
	 * (TOP_PER_PROCESS: the threads of one process summed, the row's
	 * thread being its first), else summed over all (0).
	 */
	int per_thread;
	int recent;	/* the decaying window, else the whole run */
	enum top_column sort;
};

/* One row of a snapshot; the strings belong to the toptable. */
struct top_row {
	const char *name;
	const char *file; /* "" for a native frame without DWARF */
	int line;	  /* 0 when not known (native frames) */
	int native;	  /* a native frame's row, not a Python one's */
	uint32_t thread;  /* index into tt->names.threads, or TOP_ALL_THREADS */
	double own_pct, total_pct;   /* of sampled time */
	double own_time, total_time; /* seconds (weighted in recent views) */
};

struct top_snapshot {
	struct top_row *rows;
	size_t nr_rows, alloc_rows;
	double wall;	 /* sampled seconds (weighted in recent views) */
	double idle_pct; /* of thread time; negative when unknown */
	double gil_pct;	 /* of sampled time; negative when unknown */
};

/*
 * Set up an empty table whose recent view weighs a sample half as much
 * every half_life seconds.
 */
void toptable_init(struct toptable *tt, double half_life);
/* Free everything tt owns; the snapshots' strings go with it. */
void toptable_release(struct toptable *tt);

/*
 * The id of a site: function name of file at line.  first_line is where
 * the function is shown in per-function rows (its definition), taken from
 * the first site of that function.  Strings are copied.  Allocates only
 * for a site not seen before: cache the id (see framename.h).
 */
uint32_t toptable_site(struct toptable *tt, const char *name, const char *file,
		       int line, int first_line);

/*
 * The id of a native frame's site: function name, with file and line
 * where DWARF gives them (else "" and 0).  Per function it counts as
 * name of func_file, shown at func_line: where DWARF says the function
 * is declared (else file, and 0: not known), for inside inlined code
 * file is the inlined function's header.  Its rows are marked native.
 */
uint32_t toptable_native_site(struct toptable *tt, const char *name,
			      const char *file, int line, const char *func_file,
			      int func_line);

/* The id of a thread, named name (NULL: none known): see stacks_thread(). */
uint32_t toptable_thread(struct toptable *tt, uint64_t ident, long tid,
			 const char *name);
/* The same for a thread of the process labelled process (NULL: none). */
uint32_t toptable_thread_in(struct toptable *tt, const char *process,
			    uint64_t ident, long tid, const char *name);

/*
 * Start counting one sample taken at now (seconds, never decreasing) that
 * stands for weight seconds of the target's time.  Its threads' stacks
 * follow with toptable_add().
 */
void toptable_sample(struct toptable *tt, double now, double weight,
		     const struct top_sample_info *info);

/*
 * Count one thread's stack in the current sample: sites[0..depth-1],
 * innermost first.  The innermost site and function get own time; every
 * site and function on the stack gets total time once, however often it
 * recurs.  No allocation once every (thread, site) has been seen.
 */
void toptable_add(struct toptable *tt, uint32_t thread, const uint32_t *sites,
		  size_t depth);

/*
 * Fill snap (its rows reused) with view's rows: one for every line or
 * function (per thread, with per_thread) seen so far, sorted on
 * view->sort, largest first (names: A to Z), ties broken by the other
 * columns so that the order is stable.
 */
void toptable_snapshot(struct toptable *tt, const struct top_view *view,
		       struct top_snapshot *snap);
void top_snapshot_release(struct top_snapshot *snap);

/* The column's short name as headers show it, e.g. "%OWN". */
const char *top_column_name(enum top_column col);

#endif
