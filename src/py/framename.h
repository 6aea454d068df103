/* SPDX-License-Identifier: MIT */
/* Naming sampled frames for people: shorter file names, and a per-line id
 * cached on each code object. */
#ifndef SPYC_FRAMENAME_H
#define SPYC_FRAMENAME_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "py/pycode.h"

/* The target's working directory into buf ("" when it cannot be read). */
void target_cwd(pid_t pid, char *buf, size_t size);

/*
 * A shorter name for file: the part after site-packages/ (or
 * dist-packages/) or the standard library directory, else relative to
 * cwd (the target's working directory, may be ""), else file itself.
 * Returns a pointer into file.  Pure.
 */
const char *short_filename(const char *file, const char *cwd);

/* Most directories a profile's short file names are said to be under. */
#define SOURCE_ROOTS_MAX 64

/*
 * The directories short_filename() took off the file names of a
 * profile, in the order first seen: where `spyc report` looks for a
 * short name's source (a target's standard library, its site-packages,
 * its working directory).
 */
struct source_roots {
	char *dirs[SOURCE_ROOTS_MAX];
	size_t nr;
};

/* Note the directory short_filename() took off file to give short. */
void source_roots_note(struct source_roots *sr, const char *file,
		       const char *short_name);
void source_roots_release(struct source_roots *sr);

/* Makes the id of (code, line) for pycode_line_id(). */
typedef uint32_t (*line_id_fn)(void *ctx, const struct pycode *code, int line);

/*
 * The id of line of code: make(ctx, code, line) the first time, then the
 * same id, cached in code->lines.  The cache lives and dies with the code
 * object, so an address that comes to hold another code object starts
 * afresh.  No allocation once a line has been seen.
 */
uint32_t pycode_line_id(struct pycode *code, int line, line_id_fn make,
			void *ctx);

#endif
