/* SPDX-License-Identifier: MIT */
/* --gpu for a command: the channel, the agent in the target, draining, stop. */
#include "gpu/gpusession.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd/commands.h"
#include "sys/proc.h"
#include "util.h"

/* How long spyc waits for the agent to stop and flush at the end. */
#define STOP_WAIT_NS (2 * 1000000000ULL)
/* How often it looks whether the agent has stopped meanwhile. */
#define STOP_POLL_NS (5 * 1000000L)

/* The channel file to remove however spyc exits (die() included). */
static struct gpuchan *channel_to_unlink;

static void unlink_channel(void)
{
	if (channel_to_unlink)
		gpuchan_unlink(channel_to_unlink);
}

char *gpusession_agent_or_die(void)
{
	char why[512], real[PATH_MAX];
	char *agent = gpu_agent_path(why, sizeof(why));

	if (!agent)
		die("--gpu: %s", why);
	if (!realpath(agent, real))
		die("--gpu: cannot resolve '%s': %s", agent, strerror(errno));
	free(agent);
	return xstrdup(real);
}

void gpusession_init(struct gpusession *gs, gpusession_fn *fn, void *ctx)
{
	memset(gs, 0, sizeof(*gs));
	gs->fn = fn;
	gs->ctx = ctx;
}

void gpusession_release(struct gpusession *gs)
{
	if (channel_to_unlink == &gs->chan)
		channel_to_unlink = NULL;
	gpuchan_release(&gs->chan);
	tidmap_release(&gs->tids);
	free(gs->nvtx_other);
	gs->nvtx_other = NULL;
	free(gs->buf);
	gs->buf = NULL;
	gs->on = 0;
}

void gpusession_launch_setup(struct gpusession *gs, const char *agent,
			     int nvtx_ranges)
{
	const char *nvtx;

	if (gpuchan_create(&gs->chan, GPUCHAN_DEFAULT_SLOTS, (uid_t)-1,
			   (gid_t)-1))
		exit(EXIT_FAILED);
	channel_to_unlink = &gs->chan;
	atexit(unlink_channel);
	/* NVTX's loader takes one tool: one the user named stays. */
	nvtx = getenv("NVTX_INJECTION64_PATH");
	if (nvtx_ranges && nvtx && *nvtx)
		gs->nvtx_other = xstrdup(nvtx);
	if (setenv("CUDA_INJECTION64_PATH", agent, 1) ||
	    setenv(GPUCHAN_ENV, gs->chan.path, 1) ||
	    (nvtx_ranges && !gs->nvtx_other &&
	     setenv("NVTX_INJECTION64_PATH", agent, 1)))
		die("--gpu: cannot set the environment: %s", strerror(errno));
	gs->buf = xmalloc(GPUSESSION_BATCH * sizeof(*gs->buf));
	gs->on = 1;
}

void gpusession_launched(struct gpusession *gs, pid_t pid)
{
	gpuchan_set_target(&gs->chan, pid);
}

int gpusession_attach(struct gpusession *gs, pid_t pid, const char *agent,
		      int *status, char *msg, size_t size)
{
	struct gpuchan_state st;

	*status = -1;
	if (gpu_attach(pid, agent, &gs->chan, &st, &gs->how, msg, size))
		return -1;
	*status = (int)st.status;
	if (st.status != GPU_AGENT_RUNNING) {
		snprintf(msg, size, "pid %d: %s (%s; agent loaded through %s)",
			 (int)pid, st.message, gpu_agent_status_name(st.status),
			 gpu_load_way_name(gs->how.way));
		gpuchan_release(&gs->chan);
		return -1;
	}
	gs->buf = xmalloc(GPUSESSION_BATCH * sizeof(*gs->buf));
	gs->on = 1;
	gs->attached = 1;
	tidmap_init(&gs->tids, pid);
	return 0;
}

void gpusession_describe_load(const struct gpusession *gs, pid_t pid,
			      struct strbuf *sb)
{
	const struct gpu_attach_result *how = &gs->how;

	if (how->way == GPU_LOADED_PTRACE && how->why_not_pep768[0])
		strbuf_addf(sb,
			    "agent loaded into pid %d through ptrace (not PEP "
			    "768: %s)",
			    (int)pid, how->why_not_pep768);
	else
		strbuf_addf(sb, "agent loaded into pid %d through %s", (int)pid,
			    gpu_load_way_name(how->way));
}

/*
 * A record's thread and process ids, the target's own (CUPTI's gettid()
 * and getpid() in its pid namespace), as spyc's: what samples go by.  An
 * id no task of the target has any more is left as it is.
 */
static void map_ids(struct tidmap *m, struct gpu_record *rec)
{
	uint32_t *tid = NULL;
	long outer;

	if (rec->type == GPU_REC_API) {
		tid = &rec->u.api.tid;
		if (rec->u.api.pid == (uint32_t)m->inner_pid)
			rec->u.api.pid = (uint32_t)m->pid;
	} else if (rec->type == GPU_REC_STACK) {
		tid = &rec->u.stack.tid;
	} else if (rec->type == GPU_REC_RANGE) {
		tid = &rec->u.range.tid;
	}
	if (tid && (outer = tidmap_outer(m, (long)*tid)) > 0)
		*tid = (uint32_t)outer;
}

size_t gpusession_drain(struct gpusession *gs, size_t max)
{
	size_t done = 0;

	while (gs->on && done < max) {
		int i, n = gpuchan_read(&gs->chan, gs->buf, GPUSESSION_BATCH);

		if (n < 0) {
			gs->broken = gpuchan_invalid(&gs->chan);
			if (gs->warn)
				warning(
				    "--gpu: the GPU channel was overwritten "
				    "(%s); GPU records from here on are "
				    "lost",
				    gs->broken);
			gs->on = 0;
			break;
		}
		for (i = 0; i < n; i++) {
			if (gs->tids.nested)
				map_ids(&gs->tids, &gs->buf[i]);
			gs->fn(gs->ctx, &gs->buf[i]);
		}
		done += (size_t)n;
		if (n < GPUSESSION_BATCH)
			break;
	}
	return done;
}

void gpusession_stop(struct gpusession *gs, pid_t pid)
{
	const struct timespec tick = {0, STOP_POLL_NS};
	uint64_t deadline = now_ns() + STOP_WAIT_NS;
	struct gpuchan_state st;

	if (!gs->chan.mem)
		return;
	gpusession_drain(gs, SIZE_MAX);
	gpuchan_control(&gs->chan, GPU_CONTROL_STOP);
	while (gs->on && !gpuchan_state(&gs->chan, &st) &&
	       st.status == GPU_AGENT_RUNNING && proc_alive(pid) &&
	       now_ns() < deadline) {
		nanosleep(&tick, NULL);
		gpusession_drain(gs, SIZE_MAX);
	}
	gpusession_drain(gs, SIZE_MAX);
}
