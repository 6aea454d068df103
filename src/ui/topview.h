/* SPDX-License-Identifier: MIT */
/*
 * spyc top's two views, the full screen (curses) and the plain-text
 * snapshots, drawn from a model that the command fills in at each
 * refresh.  Nothing here samples, or knows how the numbers were taken.
 */
#ifndef SPYC_TOPVIEW_H
#define SPYC_TOPVIEW_H

#include <stdint.h>
#include <stdio.h>

#include "gpu/gputop.h"
#include "ui/toptable.h"

/* What one refresh shows; the strings and tables belong to the caller. */
struct top_model {
	/* The header. */
	int pid;
	const char *cmdline;
	const char *program_output; /* launch mode: where its output goes */
	const char *python;	    /* the target's version */
	int free_threaded;	    /* no GIL to show */
	int subprocesses;	    /* following a tree: processes shown */
	unsigned processes;	    /* Python processes in the last sample */
	unsigned threads;	    /* Python threads in the last sample */
	const char *rate; /* samples a second in words; NULL: not known */
	int paused;
	const char *errors; /* what was dropped, in words */
	double elapsed;	    /* seconds since sampling started */
	/* The table, as view looks at it. */
	const struct toptable *tt;
	const struct top_view *view;
	const struct top_snapshot *snap;
	/* --gpu: the section (gpu is 0 without it). */
	int gpu;
	int gpu_collecting; /* else gpu_why says why not */
	const char *gpu_why;
	const char *gpu_how; /* how the agent came into the target, or "" */
	const char *gpu_way; /* the same in a word or two, or NULL */
	const struct gputop_view *gpu_window; /* the last interval */
	const struct gputop_view *gpu_shown;  /* what the screen shows */
	int gpu_lost_known;		      /* gpu_lost was read */
	uint64_t gpu_lost;		      /* records the agent lost */
	int gpu_rows_seen; /* the most rows a GPU view had, for the screen */
};

/*
 * Print one plain-text snapshot, numbered snapshot, to fp: "key: value"
 * header lines, a blank line, the table (and the GPU table).  Returns 0,
 * or -1 with errno set when fp could not be written.
 */
int toptext_print(FILE *fp, const struct top_model *m, uint64_t snapshot);

/* The screen: curses on standard input and output. */
struct topscreen {
	void *screen; /* curses' SCREEN */
};

/* What the keys typed asked for (topscreen_keys), as bits. */
enum {
	TOPKEY_CHANGED = 1, /* the view changed: draw again */
	TOPKEY_PAUSE = 2,   /* pause or resume sampling */
	TOPKEY_QUIT = 4,
};

/*
 * Take over the terminal; fails (an error printed) when it cannot be
 * driven or cannot move its cursor.
 */
int topscreen_open(struct topscreen *ts);
/* Give the terminal back, as it was; nothing if it was not taken. */
void topscreen_close(struct topscreen *ts);
void topscreen_draw(struct topscreen *ts, const struct top_model *m);
/*
 * Read the keys typed so far, and change view as they ask (following a
 * tree, 't' cycles per thread, per process, summed); returns TOPKEY_*
 * bits.
 */
int topscreen_keys(struct topscreen *ts, struct top_view *view, int tree);

#endif
