/* SPDX-License-Identifier: MIT */
/*
 * A profile's samples summed by function and by line: own time (the
 * innermost frame) and total time (anywhere on the stack, once per
 * sample), over every thread or one, with the sampling error of a share.
 * What spyc report tables, and spyc diff compares.
 */
#ifndef SPYC_TALLY_H
#define SPYC_TALLY_H

#include <stdint.h>

#include "profile/profile-read.h"
#include "profile/stacks.h"

/* z of a two-sided 95% interval. */
#define TALLY_Z95 1.96

struct tally {
	const struct profile *prof;
	/* Functions: (name, file) interned as frames of line 0. */
	struct stacks funcs;
	uint32_t *func_of; /* by frame (line) id of prof: its function */
	/* One section's sums, by function and by frame (line) id. */
	uint64_t *own_func, *total_func, *own_line, *total_line;
	uint64_t *seen_func, *seen_line; /* stamp of the last entry counted */
	uint64_t section_total;
};

/* Map prof's frames to its functions; prof must outlive t. */
void tally_init(struct tally *t, const struct profile *prof);
void tally_release(struct tally *t);
/* Sum the samples of thread (UINT32_MAX: all threads). */
void tally_count(struct tally *t, uint32_t thread);
/*
 * The samples behind the section: its count, or its time at the rate
 * the file says it was sampled at; 0 where they are not known.
 */
double tally_samples(const struct tally *t);
/* count's share of the section, 0 to 1 (0 for an empty section). */
double tally_share(const struct tally *t, uint64_t count);
/*
 * The variance of a share p (0 to 1) of n samples taken at random
 * moments: p (1 - p) / n.  (Samples at a steady rate err less, unless
 * the program runs in step with them.)  Negative where n is not known.
 */
double tally_share_variance(double p, double n);
/*
 * The samples each of two profiles needs for a difference of d (0 to 1)
 * in a share p to be real (95%): d beyond TALLY_Z95 times the error of
 * the difference of two such shares, 2 Z^2 p (1 - p) / d^2 (as spyc
 * diff judges a change of many samples).
 */
double tally_samples_for_difference(double p, double d);

#endif
