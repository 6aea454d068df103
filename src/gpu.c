/* SPDX-License-Identifier: MIT */
/* The GPU agent seen from spyc: where it is, and loading it into a target. */
#include "gpu.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "inject.h"
#include "util.h"

/* The agent's attach entry point (agent/agent.c). */
#define AGENT_ATTACH "spyc_agent_attach"
#define AGENT_FILE "spyc-agent.so"

char *gpu_agent_path(char *why, size_t size)
{
	const char *env = getenv("SPYC_AGENT");
	char exe[PATH_MAX];
	struct strbuf sb = STRBUF_INIT;
	ssize_t n;
	char *slash;

	if (env && *env) {
		if (!access(env, R_OK))
			return xstrdup(env);
		snprintf(why, size, "SPYC_AGENT=%s: %s", env, strerror(errno));
		return NULL;
	}
#ifndef HAVE_CUPTI
	snprintf(why, size,
		 "this spyc was built without the GPU agent (no CUPTI "
		 "headers were found)");
	return NULL;
#endif
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0) {
		snprintf(why, size, "cannot tell where spyc is: %s",
			 strerror(errno));
		return NULL;
	}
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	/* In the build tree, beside spyc; installed, in ../lib/spyc/. */
	strbuf_add(&sb, exe, slash ? (size_t)(slash - exe) + 1 : 0);
	strbuf_addstr(&sb, AGENT_FILE);
	if (!access(sb.buf, R_OK))
		return strbuf_detach(&sb);
	strbuf_reset(&sb);
	strbuf_add(&sb, exe, slash ? (size_t)(slash - exe) + 1 : 0);
	strbuf_addstr(&sb, "../lib/spyc/" AGENT_FILE);
	if (!access(sb.buf, R_OK))
		return strbuf_detach(&sb);
	strbuf_reset(&sb);
	strbuf_add(&sb, exe, slash ? (size_t)(slash - exe) + 1 : 0);
	strbuf_addstr(&sb, AGENT_FILE);
	snprintf(why, size,
		 "the GPU agent %s is missing (nor is it in ../lib/spyc/)",
		 sb.buf);
	strbuf_release(&sb);
	return NULL;
}

int gpu_attach(pid_t pid, const char *agent, struct gpuchan *chan,
	       struct gpuchan_state *st, char *msg, size_t size)
{
	struct inject_result res;
	char proc[64];
	struct stat pst;
	uid_t uid = (uid_t)-1;
	gid_t gid = (gid_t)-1;
	int err, saved_quiet = quiet;

	/* As root, give the channel to the target's user: it opens it. */
	snprintf(proc, sizeof(proc), "/proc/%d", (int)pid);
	if (!geteuid() && !stat(proc, &pst) && pst.st_uid) {
		uid = pst.st_uid;
		gid = pst.st_gid;
	}
	quiet = 1;
	err = gpuchan_create(chan, GPUCHAN_DEFAULT_SLOTS, uid, gid);
	quiet = saved_quiet;
	if (err) {
		snprintf(msg, size, "cannot create a channel for the GPU agent");
		return -EIO;
	}
	err = inject_library(pid, agent, AGENT_ATTACH, chan->path, &res);
	if (err) {
		snprintf(msg, size, "%s", res.message);
		goto fail;
	}
	if (res.entry_ret < 0) {
		err = (int)res.entry_ret;
		snprintf(msg, size, "the GPU agent in pid %d cannot open %s: %s",
			 (int)pid, chan->path, strerror((int)-res.entry_ret));
		goto fail;
	}
	/* Both sides have it mapped now: the name is no longer needed. */
	gpuchan_unlink(chan);
	if (gpuchan_state(chan, st)) {
		err = -EINVAL;
		snprintf(msg, size, "the GPU agent in pid %d wrote garbage",
			 (int)pid);
		goto fail;
	}
	return 0;
fail:
	gpuchan_release(chan);
	return err;
}
