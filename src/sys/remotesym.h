/* SPDX-License-Identifier: MIT */
/* Where a library a target has mapped keeps a symbol, in the target. */
#ifndef SPYC_REMOTESYM_H
#define SPYC_REMOTESYM_H

#include <stdint.h>
#include <sys/types.h>

#include "sys/proc.h"

/*
 * The path of the first mapped file whose base name starts with prefix
 * and is followed by "." or "-" (so "libc" matches libc.so.6 and
 * libc-2.31.so, not libcrypt), or NULL.  Points into maps.
 */
const char *remotesym_library(const struct proc_maps *maps,
			      const char *prefix);

/*
 * The address in pid of symbol name of the mapped file path (as maps
 * names it), and its size (size may be NULL).  Returns 0, or -1 if the
 * file cannot be read or has no such symbol.  Reports nothing.
 */
int remotesym_lookup(pid_t pid, const struct proc_maps *maps, const char *path,
		     const char *name, uint64_t *addr, uint64_t *size);

#endif
