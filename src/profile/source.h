/* SPDX-License-Identifier: MIT */
/* The source file a profile's frame names, found and read. */
#ifndef SPYC_SOURCE_H
#define SPYC_SOURCE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "profile/stacks.h"

struct strbuf;

/*
 * Which file a source is: a path names another file once it is replaced
 * (a checkout, an upgrade) and, in a container, the host's file at the
 * same path is another one.
 */
struct source_id {
	uint64_t dev, ino, size;
	int64_t mtime_ns;
};

/* id as text, "DEV:INO:SIZE:MTIME_NS" (decimal), into buf. */
void source_id_format(const struct source_id *id, char *buf, size_t size);
/* The other way round: 0, or -1 for text that is not one. */
int source_id_parse(const char *text, struct source_id *id);

/* What source_read() returns when files were found, none of them id. */
#define SOURCE_CHANGED (-2)

/*
 * Read the text of file, a frame's file name, into sb (reset first): as
 * named, else, a short name, under one of roots[0..nr_roots - 1] (the
 * directories record took off the names), in order.  With prefix (a
 * target's "/proc/PID/root": its files as it sees them, in a container
 * too), each path is tried under it first.  With id, only that very file
 * is taken.  0; -1 when there is no regular file there of at most max
 * bytes, or it is not text (it holds a NUL); SOURCE_CHANGED when every
 * one found was another file than id.  sb is then empty.
 */
int source_read(const char *file, char *const *roots, size_t nr_roots,
		const char *prefix, const struct source_id *id, size_t max,
		struct strbuf *sb);

/*
 * The files a recording's Python frames name, each by the name the
 * profile gives it, with its identity as the target saw it when its
 * first frame was named (through /proc/PID/root).
 */
struct source_files {
	struct stacks index; /* frame i: files[i]'s name */
	struct source_file {
		const char *name; /* index's */
		struct source_id id;
		int known; /* 0: the target's file could not be looked at */
	} * files;
	size_t nr_files, alloc_files;
};

void source_files_init(struct source_files *sf);
void source_files_release(struct source_files *sf);

/*
 * Note the file path (as process pid opened it, cwd its working
 * directory then), named name in the profile: the first time, its
 * identity.  Names such as "<string>" are no files.
 */
void source_files_note(struct source_files *sf, pid_t pid, const char *cwd,
		       const char *path, const char *name);

/* The identity noted for name, or NULL. */
const struct source_id *source_files_find(const struct source_files *sf,
					  const char *name);

#endif
