/* SPDX-License-Identifier: MIT */
/* spyc's end of the GPU channel: create it, read records, read the status. */
#ifndef SPYC_GPUCHAN_H
#define SPYC_GPUCHAN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gpu/gpuchan-layout.h"

struct gpuchan {
	char *path; /* the file, until gpuchan_unlink(); else NULL */
	/*
	 * Made by gpuchan_create_in(): its name in dir_fd (spyc's way to it),
	 * path being the target's; else NULL.
	 */
	char *name;
	int dir_fd;
	void *mem;    /* the mapping (or the caller's memory) */
	size_t size;  /* its length */
	int owns_map; /* mem was mapped here */
	uint32_t nr_slots;
	uint64_t next; /* next position to read: spyc's own count */
	uint64_t bad;  /* published records refused as garbage */
};

/* The agent's state as the header tells it. */
struct gpuchan_state {
	enum gpu_agent_status status;
	int detail;
	uint32_t agent_pid;
	uint32_t cupti_version;
	uint64_t lost; /* dropped by the agent: the ring was full */
	char message[GPUCHAN_MESSAGE_SIZE];
	/* enum gpu_launch_stacks (GPU_STACKS_UNKNOWN if out of range) */
	uint32_t launch_stacks;
	uint64_t zero_time;	/* records with no time, dropped by the agent */
	uint64_t cupti_dropped; /* records CUPTI dropped (no buffer space) */
	uint64_t bad_buffers;	/* buffers cut short at an invalid record */
	uint64_t captured_launches; /* launches into a stream capture */
	uint64_t other_processes;   /* that inherited the channel: not served */
	uint32_t clock;		    /* enum gpu_agent_clock */
	uint32_t api_records;	    /* enum gpu_api_records */
	uint32_t nvtx;		    /* enum gpu_nvtx_state */
};

/*
 * Ring size: 65536 records of 256 bytes, 16 MiB.  CUPTI hands over a
 * buffer of some 5000 records at once, and an agent that stops flushes
 * everything it holds: the ring takes several such bursts between two
 * of spyc's drains.
 */
#define GPUCHAN_DEFAULT_SLOTS (1u << 16)

/*
 * Create a channel file of nr_slots (a power of two) under /dev/shm
 * (else $TMPDIR, /tmp), mode 0600, lay it out and map it.  With uid not
 * (uid_t)-1 the file is given to uid:gid, so that a target of another
 * user may open it.  Its blocks are reserved (a full file system fails
 * here, not as the agent writes).  Returns 0, or a negative errno after
 * reporting.
 */
int gpuchan_create(struct gpuchan *c, uint32_t nr_slots, uid_t uid, gid_t gid);
/*
 * The same in the directory dir_fd, which the target sees as dir (a
 * directory under its own root: see targetdir.h), as "channel": path is
 * then the target's path, and dir_fd is duplicated until
 * gpuchan_unlink().  Returns 0, or a negative errno after reporting.
 */
int gpuchan_create_in(struct gpuchan *c, uint32_t nr_slots, uid_t uid,
		      gid_t gid, int dir_fd, const char *dir);
/*
 * Lay a channel of nr_slots out in the caller's memory (size bytes, at
 * least gpuchan_size(nr_slots)), which stays the caller's.  For unit
 * tests.  Returns 0, or -EINVAL.
 */
int gpuchan_init_mem(struct gpuchan *c, void *mem, size_t size,
		     uint32_t nr_slots);
/* Bytes a channel of nr_slots takes. */
size_t gpuchan_size(uint32_t nr_slots);
/* Remove the file (the mappings stay valid).  Safe to repeat. */
void gpuchan_unlink(struct gpuchan *c);
/* Unlink, unmap, and clear c. */
void gpuchan_release(struct gpuchan *c);

/*
 * Whether the header is still a valid channel.  Returns NULL if so,
 * else why not (a constant string).
 */
const char *gpuchan_invalid(const struct gpuchan *c);

/*
 * Copy up to max published records into out, in order, and free their
 * slots for the agent.  A record of an unknown type or size is skipped
 * and counted in c->bad.  Returns how many were copied, or -EINVAL if
 * the header is no longer valid (nothing is read then).
 */
int gpuchan_read(struct gpuchan *c, struct gpu_record *out, size_t max);

/*
 * Name pid (as the target sees it: spyc launched it) the one process
 * whose agent may report here.
 */
void gpuchan_set_target(struct gpuchan *c, pid_t pid);

/*
 * The agent's status, detail, message and lost count.  Returns 0, or
 * -EINVAL if the header is invalid or holds an unknown status.
 */
int gpuchan_state(const struct gpuchan *c, struct gpuchan_state *st);

/* Why the agent copies no launch stacks, for a launch_stacks value. */
const char *gpu_launch_stacks_why(uint32_t launch_stacks);

/* Ask the agent to run or to go quiet (enum gpu_agent_control). */
void gpuchan_control(struct gpuchan *c, enum gpu_agent_control control);

/*
 * Hand the agent the layout of the target's frames, so that it copies
 * the Python stack of each launch: everything first, ready last.  Once.
 */
void gpuchan_set_py_layout(struct gpuchan *c,
			   const struct gpu_py_layout *layout);

/* A short name for a status: "waiting", "no-cuda", ...  Never NULL. */
const char *gpu_agent_status_name(int status);

#endif
