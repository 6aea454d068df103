/* SPDX-License-Identifier: MIT */
/* --gpu for a command: the channel, the agent in the target, draining, stop. */
#ifndef SPYC_GPUSESSION_H
#define SPYC_GPUSESSION_H

#include <stddef.h>
#include <sys/types.h>

#include "gpu/gpu.h"
#include "gpu/gpuchan.h"
#include "sys/tidmap.h"

struct strbuf;

/* Records read from the channel per batch. */
#define GPUSESSION_BATCH 256

/* What a command does with each record drained (gpuprof_add, ...). */
typedef void gpusession_fn(void *ctx, const struct gpu_record *rec);

struct gpusession {
	struct gpuchan chan;
	struct gpu_record *buf; /* GPUSESSION_BATCH records, once set up */
	gpusession_fn *fn;
	void *ctx;
	int on;	      /* the channel is there to drain */
	int attached; /* --pid: the agent collects in the target */
	/* launched: the NVTX tool the user named, left in place (or NULL) */
	char *nvtx_other;
	struct gpu_attach_result how;
	/*
	 * --pid: the target's ids, which CUPTI and the agent write as the
	 * target sees them (a container's), mapped to spyc's.
	 */
	struct tidmap tids;
	/* Why the channel stopped being read (it was overwritten), or NULL. */
	const char *broken;
	/* Say so on standard error when the channel breaks (not top). */
	int warn;
};

/*
 * --gpu: the agent's absolute path (the CUDA driver and the injected
 * dlopen() need one), or die in one line (exit 2) before anything is
 * attached or launched.  The caller frees it.
 */
char *gpusession_agent_or_die(void);

/* A session that hands each record drained to fn(ctx, record). */
void gpusession_init(struct gpusession *gs, gpusession_fn *fn, void *ctx);
/* Release the channel (unlinked and unmapped) and the buffer. */
void gpusession_release(struct gpusession *gs);

/*
 * Launch mode: create the channel (removed however spyc exits) and name
 * it and the agent in the environment the program will inherit, so
 * that the CUDA driver loads the agent (CUDA_INJECTION64_PATH) as the
 * program first uses CUDA; with nvtx_ranges, NVTX's loader too
 * (NVTX_INJECTION64_PATH, unless it names another tool already) at its
 * first NVTX call.  Dies (exit 2) on failure.
 */
void gpusession_launch_setup(struct gpusession *gs, const char *agent,
			     int nvtx_ranges);

/*
 * Launch mode, once the program runs as pid: only its agent reports; its
 * children inherit the environment, and theirs only count themselves.
 */
void gpusession_launched(struct gpusession *gs, pid_t pid);

/*
 * --pid: load the agent into the running pid (gpu_attach()).  Returns 0
 * once the agent collects; else -1 with msg set to one line saying why
 * not (a failed load, or "pid N: MESSAGE (STATUS; agent loaded through
 * WAY)"), and *status the agent's status (-1 if it never reported one);
 * the channel is then released.
 */
int gpusession_attach(struct gpusession *gs, pid_t pid, const char *agent,
		      int *status, char *msg, size_t size);

/*
 * How the agent came into pid after gpusession_attach() succeeded:
 * "agent loaded into pid N through PEP 768", or "... through ptrace (not
 * PEP 768: why)", appended to sb.
 */
void gpusession_describe_load(const struct gpusession *gs, pid_t pid,
			      struct strbuf *sb);

/*
 * Hand what the agent has written so far to fn: at most max records
 * (rounded up to a batch), so that a burst never holds the sampler up
 * for long.  Never waits.  A channel that is no longer valid stops
 * being read (gs->broken says why; with gs->warn, one warning).
 * Returns the records handed over.
 */
size_t gpusession_drain(struct gpusession *gs, size_t max);

/*
 * Ask the agent to stop (disable CUPTI's activities, flush what CUPTI
 * still buffers) and wait until it says it has, at most 2 s, draining
 * meanwhile: its flush holds the work of the last moments before spyc
 * stopped, which reaches spyc otherwise only with the agent's next
 * 200 ms flush, or never.  No wait for a pid
 * that is gone, or an agent that is not collecting.  Does nothing
 * without a channel.
 */
void gpusession_stop(struct gpusession *gs, pid_t pid);

#endif
