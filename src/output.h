/* SPDX-License-Identifier: MIT */
/* Profile writers: speedscope JSON, folded stacks, SVG flame graph. */
#ifndef SPYC_OUTPUT_H
#define SPYC_OUTPUT_H

#include <stdio.h>

#include "stacks.h"

struct strbuf;

/* What outputs say about the whole profile. */
struct profile_meta {
	const char *title; /* e.g. "python train.py (pid 123)" */
	const char *python_version;
	double rate_hz;	   /* requested sampling rate */
	double duration_s; /* wall time sampled */
	int thread_prefix; /* folded/SVG: put the thread as the root */
};

/*
 * Writers.  Each returns 0, or -1 after reporting an error.  They write
 * to fp but do not close it; write_file_atomic() checks the stream.
 */
int out_speedscope_write(FILE *fp, const struct stacks *st,
			 const struct profile_meta *meta);
int out_folded_write(FILE *fp, const struct stacks *st,
		     const struct profile_meta *meta);
int out_svg_write(FILE *fp, const struct stacks *st,
		  const struct profile_meta *meta);

enum output_format {
	FORMAT_NONE = 0,
	FORMAT_SPEEDSCOPE,
	FORMAT_FOLDED,
	FORMAT_SVG,
};

/* Parse "speedscope", "folded" or "svg"; FORMAT_NONE if unknown. */
enum output_format output_format_parse(const char *name);
/* Guess from a file name: .json, .txt/.folded, .svg; FORMAT_NONE if none. */
enum output_format output_format_from_path(const char *path);
/* Write st to path in fmt, atomically.  0, or -1 after reporting. */
int output_write(const char *path, enum output_format fmt,
		 const struct stacks *st, const struct profile_meta *meta);

/*
 * For the writers: return s when it is valid UTF-8, else tmp->buf holding
 * a copy of s with each invalid byte replaced by U+FFFD, so that JSON and
 * XML outputs stay well-formed whatever bytes the target held.  tmp is
 * reset first; the result lives until s or tmp changes.
 */
const char *output_utf8(const char *s, struct strbuf *tmp);

#endif
