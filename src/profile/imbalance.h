/* SPDX-License-Identifier: MIT */
/* Load imbalance: each function's time in each process, and its spread. */
#ifndef SPYC_IMBALANCE_H
#define SPYC_IMBALANCE_H

#include <stddef.h>
#include <stdint.h>

#include "profile/stacks.h"

/*
 * Per function (a name in a file, any line) and unit (a process, or an
 * MPI rank): total time (samples with the function anywhere on the
 * stack, counted once however often it recurses) and own time (samples
 * with it as the leaf).
 */
struct imbalance {
	size_t nr_units;
	struct stacks funcs; /* functions interned as frames at line 0 */
	size_t alloc;	     /* functions total and self have room for */
	double *total;	     /* [function * nr_units + unit] */
	double *self;
	double *unit_total; /* [unit]: all the unit's samples */
	uint64_t *seen;	    /* [function]: last sample that counted it */
	uint64_t sample;
};

void imbalance_init(struct imbalance *im, size_t nr_units);
void imbalance_release(struct imbalance *im);

/* The id of function (name, file), adding it if new. */
uint32_t imbalance_function(struct imbalance *im, const char *name,
			    const char *file);

/*
 * Count one sample of weight for unit: function ids funcs[0..depth-1],
 * root first.  An empty stack counts only to the unit's total.
 */
void imbalance_add(struct imbalance *im, size_t unit, const uint32_t *funcs,
		   size_t depth, double weight);

/* The spread of n values; slowest is the first index holding max. */
struct imbalance_stats {
	double min, mean, max, stddev; /* stddev of the population */
	size_t slowest;
	size_t none; /* how many values are 0 */
};

void imbalance_stats(const double *v, size_t n, struct imbalance_stats *out);

/*
 * The functions ordered by how much the slowest unit spends over the mean
 * (max - mean of total time), largest first; ties by larger max, then
 * id.  Returns an array of im->funcs.nr_frames ids; the caller frees.
 */
uint32_t *imbalance_order(const struct imbalance *im);

#endif
