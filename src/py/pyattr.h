/* SPDX-License-Identifier: MIT */
/* An object's attributes, read from outside: dicts, shared keys, values. */
#ifndef SPYC_PYATTR_H
#define SPYC_PYATTR_H

#include <stdint.h>
#include <sys/types.h>

#include "offsets.h"
#include "util.h"

/* Does this offset table describe where instance attributes live? */
int pyattr_supported(const struct py_offsets *off);

/*
 * Append the str attribute `name` of the object at obj in pid, as
 * UTF-8, to out: from its instance dict, or (3.11+) from the values its
 * type's shared keys index.  Returns 0, -ENOENT if the object has no
 * such str attribute, or another negative errno (-EINVAL for data that
 * makes no sense: a torn read).
 */
int pyattr_str(pid_t pid, const struct py_offsets *off, uint64_t obj,
	       const char *name, struct strbuf *out);

#endif
