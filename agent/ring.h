/* SPDX-License-Identifier: MIT */
/* The agent's end of the GPU channel: map it, write records, set status. */
#ifndef SPYC_AGENT_RING_H
#define SPYC_AGENT_RING_H

#include <stddef.h>
#include <stdint.h>

#include "gpu/gpuchan-layout.h"

struct ring_writer {
	struct gpuchan_header *header; /* NULL when not open */
	struct gpuchan_slot *slots;
	uint32_t mask;
	size_t map_size; /* 0 when the memory is not ours to unmap */
};

/*
 * Map the channel file at path and check its header.  Returns 0, or a
 * negative errno (-EINVAL for a header that is not a valid channel).
 * Never prints; the writer stays closed on failure.
 */
int ring_writer_open(struct ring_writer *w, const char *path);
/*
 * Use len bytes at mem (a channel spyc laid out) without mapping
 * anything: for unit tests.  Returns 0, or -EINVAL.
 */
int ring_writer_attach(struct ring_writer *w, void *mem, size_t len);
/* Unmap (if mapped here) and mark closed.  Safe on a closed writer. */
void ring_writer_close(struct ring_writer *w);

/*
 * Append a copy of rec.  Never waits: returns 0, or -ENOSPC when the
 * ring is full (or contended past a few retries), after counting the
 * record as lost.  Safe from any number of threads at once.
 */
int ring_write(struct ring_writer *w, const struct gpu_record *rec);

/*
 * Whether this process is the one the channel is for (header.target_pid;
 * before spyc has set it, a process spyc started itself).  If not, count
 * it in other_processes and return 0: a child of the target that
 * inherited the environment naming the channel.
 */
int ring_for_this_process(struct ring_writer *w);
/* The same, counting nothing. */
int ring_is_for_this_process(const struct ring_writer *w);

/*
 * Publish the agent's status: detail and a one-line message (may be
 * NULL) first, the status word last, so that a reader who sees the
 * status sees its message.
 */
void ring_set_status(struct ring_writer *w, enum gpu_agent_status status,
		     int detail, const char *message);

/* What spyc asks (enum gpu_agent_control). */
uint32_t ring_control(const struct ring_writer *w);

#endif
