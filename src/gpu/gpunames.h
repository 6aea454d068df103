/* SPDX-License-Identifier: MIT */
/*
 * Kernel names too long for a kernel's record, put together from the
 * agent's GPU_REC_NAME pieces and found by the hash and length a kernel
 * record carries.  Pure: no channel.
 */
#ifndef SPYC_GPUNAMES_H
#define SPYC_GPUNAMES_H

#include <stddef.h>
#include <stdint.h>

#include "gpu/gpuchan-layout.h"

struct strbuf;

struct gpu_long_name {
	uint64_t hash;
	uint32_t len;
	uint32_t filled; /* bytes received (pieces may repeat: at most len) */
	char *text;	 /* len + 1 bytes, NUL-terminated */
	unsigned char *have; /* per piece: 1 once received */
};

struct gpu_names {
	struct gpu_long_name *names;
	size_t nr, alloc;
};

void gpu_names_init(struct gpu_names *n);
/* Free everything n owns; n is left empty. */
void gpu_names_release(struct gpu_names *n);

/* Keep a piece of a long name (a copy); a malformed one is ignored. */
void gpu_names_add(struct gpu_names *n, const struct gpu_name *piece);

/*
 * The whole name of a kernel whose record has only its start, or NULL
 * while some piece is missing (or n is NULL).  The string is n's.
 */
const char *gpu_names_find(const struct gpu_names *n,
			   const struct gpu_kernel *k);

/*
 * A kernel's mangled name as it was launched: the whole one when it was
 * inlined or all its pieces came, else its start and "...".  Appended to
 * sb.  Returns 1 when the name is whole, 0 when cut.
 */
int gpu_names_kernel(const struct gpu_names *n, const struct gpu_kernel *k,
		     struct strbuf *sb);

/*
 * A key that tells kernel k's name from any other (two names that share
 * their inline start differ by length or hash), NUL-terminated in buf.
 */
#define GPU_KERNEL_KEY_MAX (GPU_KERNEL_NAME_INLINE + 32)
void gpu_kernel_key(const struct gpu_kernel *k, char buf[GPU_KERNEL_KEY_MAX]);

#endif
