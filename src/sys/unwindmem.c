/* SPDX-License-Identifier: MIT */
/* Target memory an unwinder reads beside the stack: cached by page. */
#include "sys/unwindmem.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

#define PAGE_BYTES 4096u
/* How often the maps are read again, for libraries loaded or unloaded. */
#define MAPS_REFRESH_NS 1000000000ULL

/* Keep only the mappings whose pages cannot change: see unwindmem. */
static void keep_read_only(struct proc_maps *maps)
{
	size_t i, n = 0;

	for (i = 0; i < maps->nr; i++) {
		struct proc_map *m = &maps->maps[i];

		/* Private, not writable, of a file ("[vvar]" changes). */
		if (m->perms[0] == 'r' && m->perms[1] != 'w' &&
		    m->perms[3] == 'p' && m->path && m->path[0] == '/') {
			maps->maps[n++] = *m;
			continue;
		}
		free(m->path);
	}
	maps->nr = n;
}

static int same_mappings(const struct proc_maps *a, const struct proc_maps *b)
{
	size_t i;

	if (a->nr != b->nr)
		return 0;
	for (i = 0; i < a->nr; i++)
		if (a->maps[i].start != b->maps[i].start ||
		    a->maps[i].end != b->maps[i].end ||
		    a->maps[i].inode != b->maps[i].inode ||
		    a->maps[i].offset != b->maps[i].offset)
			return 0;
	return 1;
}

static void forget_kept(struct unwindmem *um)
{
	memset(um->kept_addr, 0, sizeof(um->kept_addr));
}

/* Read the read-only mappings again; forget kept pages if they moved. */
static void load_maps(struct unwindmem *um)
{
	struct proc_maps now = {0};

	um->maps_at = now_ns();
	if (proc_maps_load(&now, um->pid)) {
		proc_maps_release(&now);
		return;
	}
	keep_read_only(&now);
	if (!same_mappings(&now, &um->ro))
		forget_kept(um);
	proc_maps_release(&um->ro);
	um->ro = now;
}

void unwindmem_init(struct unwindmem *um, pid_t pid)
{
	memset(um, 0, sizeof(*um));
	um->pid = pid;
	um->kept_data = xmalloc(UNWINDMEM_KEPT_PAGES * PAGE_BYTES);
	um->stop_data = xmalloc(UNWINDMEM_STOP_PAGES * PAGE_BYTES);
	load_maps(um);
}

void unwindmem_release(struct unwindmem *um)
{
	proc_maps_release(&um->ro);
	free(um->stop_data);
	free(um->kept_data);
	memset(um, 0, sizeof(*um));
}

void unwindmem_new_stop(struct unwindmem *um)
{
	memset(um->stop_addr, 0, sizeof(um->stop_addr));
	if (now_ns() - um->maps_at > MAPS_REFRESH_NS)
		load_maps(um);
}

int unwindmem_read_only(const struct proc_maps *maps, uint64_t start,
			uint64_t end)
{
	const struct proc_map *m = proc_maps_find(maps, start);

	return m && end <= m->end;
}

/* The slot of page in the cache of kept pages (direct-mapped). */
static size_t kept_slot(uint64_t page)
{
	return (size_t)(((page / PAGE_BYTES) * 0x9E3779B97F4A7C15ULL) >> 32) %
	       UNWINDMEM_KEPT_PAGES;
}

/* A copy of the page at page, or NULL when it cannot be read. */
static const unsigned char *page_copy(struct unwindmem *um, uint64_t page)
{
	unsigned char *data;
	size_t i;

	if (unwindmem_read_only(&um->ro, page, page + PAGE_BYTES)) {
		i = kept_slot(page);
		data = um->kept_data + i * PAGE_BYTES;
		if (um->kept_addr[i] == page) {
			um->hits++;
			return data;
		}
		um->misses++;
		um->kept_addr[i] = 0;
		if (proc_read(um->pid, page, data, PAGE_BYTES))
			return NULL;
		um->kept_addr[i] = page;
		return data;
	}
	for (i = 0; i < UNWINDMEM_STOP_PAGES; i++)
		if (um->stop_addr[i] == page) {
			um->hits++;
			return um->stop_data + i * PAGE_BYTES;
		}
	um->misses++;
	i = um->next_stop++ % UNWINDMEM_STOP_PAGES;
	data = um->stop_data + i * PAGE_BYTES;
	um->stop_addr[i] = 0;
	if (proc_read(um->pid, page, data, PAGE_BYTES))
		return NULL;
	um->stop_addr[i] = page;
	return data;
}

int unwindmem_read(struct unwindmem *um, uint64_t addr, uint64_t *val)
{
	uint64_t page = addr & ~(uint64_t)(PAGE_BYTES - 1);
	const unsigned char *data;

	/* Across a page boundary, or in a page that cannot be read whole. */
	if (addr - page > PAGE_BYTES - 8 || !page ||
	    !(data = page_copy(um, page)))
		return proc_read(um->pid, addr, val, 8);
	memcpy(val, data + (addr - page), 8);
	return 0;
}
