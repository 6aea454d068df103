/* SPDX-License-Identifier: MIT */
/* Target memory an unwinder reads beside the stack: cached by page. */
#ifndef SPYC_UNWINDMEM_H
#define SPYC_UNWINDMEM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sys/proc.h"

/* Pages kept for the whole run: unwind tables of read-only mappings. */
#define UNWINDMEM_KEPT_PAGES 256u
/* Pages kept for one stop: memory that may change while threads run. */
#define UNWINDMEM_STOP_PAGES 16u

/*
 * Unwinding reads the modules' unwind tables (.eh_frame_hdr, .eh_frame)
 * through the target's memory.  They sit in read-only file mappings,
 * which do not change while the mapping stays: their pages are read
 * once for the run.  Any other page may change between stops.
 */
struct unwindmem {
	pid_t pid;
	struct proc_maps ro; /* read-only mappings of a file, by address */
	uint64_t maps_at;    /* when ro was read (now_ns()) */
	uint64_t kept_addr[UNWINDMEM_KEPT_PAGES];
	unsigned char *kept_data;
	uint64_t stop_addr[UNWINDMEM_STOP_PAGES];
	unsigned char *stop_data;
	unsigned int next_stop;
	/* What the cache saved, for SPYC_STATS: reads answered, reads made. */
	uint64_t hits, misses;
};

/* Start caching pid's memory; reads its maps.  Never fails. */
void unwindmem_init(struct unwindmem *um, pid_t pid);
void unwindmem_release(struct unwindmem *um);
/*
 * A new stop: forget the pages that may have changed since the last,
 * and now and then read the maps again, forgetting kept pages when the
 * read-only mappings changed (a library unloaded, another loaded).
 */
void unwindmem_new_stop(struct unwindmem *um);
/*
 * Read the 8 bytes at addr into *val: 0, or a negative errno when the
 * target cannot be read there.
 */
int unwindmem_read(struct unwindmem *um, uint64_t addr, uint64_t *val);
/*
 * Is [start, end) inside one of maps' mappings that is read-only and
 * backed by a file?  maps is sorted by address, as /proc lists it.
 */
int unwindmem_read_only(const struct proc_maps *maps, uint64_t start,
			uint64_t end);

#endif
