/* SPDX-License-Identifier: MIT */
/* The source file a profile's frame names, found and read. */
#ifndef SPYC_SOURCE_H
#define SPYC_SOURCE_H

#include <stddef.h>

struct strbuf;

/*
 * Read the text of file, a frame's file name, into sb (reset first): as
 * named, else, a short name, under one of roots[0..nr_roots - 1] (the
 * directories record took off the names), in order.  With prefix (a
 * target's "/proc/PID/root": its files as it sees them, in a container
 * too), each path is tried under it first.  0, or -1 when there is no
 * regular file there of at most max bytes, or it is not text (it holds
 * a NUL); sb is then empty.
 */
int source_read(const char *file, char *const *roots, size_t nr_roots,
		const char *prefix, size_t max, struct strbuf *sb);

#endif
