/* SPDX-License-Identifier: MIT */
/*
 * Kernel names too long for a kernel's record, put together from the
 * agent's pieces.
 */
#include "gpu/gpunames.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

void gpu_names_init(struct gpu_names *n)
{
	memset(n, 0, sizeof(*n));
}

void gpu_names_release(struct gpu_names *n)
{
	size_t i;

	for (i = 0; i < n->nr; i++) {
		free(n->names[i].text);
		free(n->names[i].have);
	}
	free(n->names);
	gpu_names_init(n);
}

static struct gpu_long_name *lookup(const struct gpu_names *n, uint64_t hash,
				    uint32_t len)
{
	size_t i;

	/* A few hundred distinct long names in a run: the newest first. */
	for (i = n->nr; i-- > 0;)
		if (n->names[i].hash == hash && n->names[i].len == len)
			return &n->names[i];
	return NULL;
}

void gpu_names_add(struct gpu_names *n, const struct gpu_name *piece)
{
	struct gpu_long_name *l;
	uint32_t index;

	/* The channel is the target's memory too: check every field. */
	if (!piece->len || piece->len > GPU_NAME_MAX ||
	    piece->offset >= piece->len || piece->offset % GPU_NAME_PIECE ||
	    piece->count != (piece->len - piece->offset < GPU_NAME_PIECE
				 ? piece->len - piece->offset
				 : GPU_NAME_PIECE))
		return;
	l = lookup(n, piece->hash, piece->len);
	if (!l) {
		ALLOC_GROW(n->names, n->nr + 1, n->alloc);
		l = &n->names[n->nr++];
		l->hash = piece->hash;
		l->len = piece->len;
		l->filled = 0;
		l->text = xcalloc(piece->len + 1, 1);
		l->have = xcalloc(piece->len / GPU_NAME_PIECE + 1, 1);
	}
	index = piece->offset / GPU_NAME_PIECE;
	if (l->have[index])
		return;
	l->have[index] = 1;
	memcpy(l->text + piece->offset, piece->text, piece->count);
	l->filled += piece->count;
}

const char *gpu_names_find(const struct gpu_names *n,
			   const struct gpu_kernel *k)
{
	const struct gpu_long_name *l;

	if (!n)
		return NULL;
	l = lookup(n, k->name_hash, k->name_len);
	/* A name with a NUL inside is not the one the kernel has. */
	if (!l || l->filled != l->len || strlen(l->text) != l->len)
		return NULL;
	return l->text;
}

int gpu_names_kernel(const struct gpu_names *n, const struct gpu_kernel *k,
		     struct strbuf *sb)
{
	const char *whole;

	if (k->name_len < sizeof(k->name)) {
		strbuf_addstr(sb, k->name);
		return !k->name_truncated;
	}
	whole = gpu_names_find(n, k);
	if (whole) {
		strbuf_addstr(sb, whole);
		return !k->name_truncated;
	}
	strbuf_addstr(sb, k->name);
	return 0;
}

void gpu_kernel_key(const struct gpu_kernel *k, char buf[GPU_KERNEL_KEY_MAX])
{
	snprintf(buf, GPU_KERNEL_KEY_MAX, "k%d %u %016llx %.*s",
		 k->name_truncated ? 1 : 0, (unsigned)k->name_len,
		 (unsigned long long)k->name_hash, (int)sizeof(k->name) - 1,
		 k->name);
}
