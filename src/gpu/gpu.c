/* SPDX-License-Identifier: MIT */
/* The GPU agent seen from spyc: where it is, and loading it into a target. */
#include "gpu/gpu.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sys/inject.h"
#include "sys/proc.h"
#include "py/remoteexec.h"
#include "sys/targetdir.h"
#include "util.h"

/* The agent's attach entry point (agent/agent.c). */
#define AGENT_ATTACH "spyc_agent_attach"
#define AGENT_FILE "spyc-agent.so"

/*
 * PEP 768: how long the target's main thread has to take the script (it
 * does at its next eval-breaker check: a thread blocked in C code or a
 * system call never does); then how long the script has to claim the
 * token; then how long the agent's entry point may take, as long as
 * inject.c lets a call take.
 */
#define REMOTE_TAKE_MS 2000
#define REMOTE_CLAIM_NS (2ULL * 1000000000ULL)
#define REMOTE_CALL_NS (60ULL * 1000000000ULL)
#define REMOTE_POLL_NS (5ULL * 1000000ULL)

/*
 * The files of a PEP 768 load, in a directory of their own that the
 * target's user owns: the script; the token, which whoever renames it
 * first (the script, to token.target; spyc, to token.spyc) loads the
 * agent; and what the agent's entry point returned, written by the
 * script (result.tmp, renamed to result).
 */
#define REMOTE_SCRIPT "load-agent.py"
#define REMOTE_TOKEN "token"
#define REMOTE_TOKEN_SPYC "token.spyc"
#define REMOTE_TOKEN_TARGET "token.target"
#define REMOTE_RESULT "result"
#define REMOTE_RESULT_TMP "result.tmp"
#define REMOTE_RESULT_MAX 256

/*
 * The script.  It runs in the target's main thread with the GIL held,
 * in a namespace of its own: it must never raise (the target would
 * print the exception) nor print.  Imports come before the claim, so
 * that a Python without ctypes leaves the token to spyc.  Filled in with
 * the directory, the agent and the channel as bytes literals.
 */
static const char remote_script_fmt[] =
    "# spyc record --gpu --pid: load spyc's GPU agent, once.\n"
    "try:\n"
    "    import os\n"
    "    import ctypes\n"
    "    d = os.fsdecode(%s)\n"
    "    os.rename(d + '/" REMOTE_TOKEN "', d + '/" REMOTE_TOKEN_TARGET "')\n"
    "except BaseException:\n"
    "    pass\n"
    "else:\n"
    "    try:\n"
    "        r = 'ok %%d' %% ctypes.CDLL(os.fsdecode(%s))."
    "spyc_agent_attach(%s)\n"
    "    except BaseException as e:\n"
    "        try:\n"
    "            r = 'error %%s: %%s' %% (type(e).__name__, e)\n"
    "        except BaseException:\n"
    "            r = 'error'\n"
    "    try:\n"
    "        with open(d + '/" REMOTE_RESULT_TMP "', 'w') as f:\n"
    "            f.write(r)\n"
    "        os.rename(d + '/" REMOTE_RESULT_TMP "', d + '/" REMOTE_RESULT
    "')\n"
    "    except BaseException:\n"
    "        pass\n";

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

const char *gpu_load_way_name(enum gpu_load_way way)
{
	return way == GPU_LOADED_PEP768 ? "PEP 768" : "ptrace";
}

/* s as a Python bytes literal: anything but a few safe characters as \xNN. */
static void add_bytes_literal(struct strbuf *sb, const char *s)
{
	strbuf_addstr(sb, "b'");
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || strchr("/._-+,=@", c))
			strbuf_addch(sb, c);
		else
			strbuf_addf(sb, "\\x%02x", c);
	}
	strbuf_addch(sb, '\'');
}

/* A new file name in dir holding data, of mode.  Returns 0 or -errno. */
static int create_file(const char *dir, const char *name, const char *data,
		       mode_t mode)
{
	char path[PATH_MAX];
	size_t len = strlen(data);
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  mode);
	if (fd < 0)
		return -errno;
	/* Not the umask's: the target's user must read it. */
	if (fchmod(fd, mode))
		err = -errno;
	else if (len && write(fd, data, len) != (ssize_t)len)
		err = -EIO;
	if (close(fd) && !err)
		err = -errno;
	return err;
}

/* Rename dir/from to dir/to.  Returns 0 or -errno. */
static int rename_in(const char *dir, const char *from, const char *to)
{
	char a[PATH_MAX], b[PATH_MAX];

	snprintf(a, sizeof(a), "%s/%s", dir, from);
	snprintf(b, sizeof(b), "%s/%s", dir, to);
	return rename(a, b) ? -errno : 0;
}

static int exists_in(const char *dir, const char *name)
{
	char path[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return !lstat(path, &st);
}

/*
 * What the script wrote in dir/result ("ok N" or "error ..."), which
 * the target's user could have made anything: read as data, a regular
 * file only, its first line at most.  Returns 0 or -errno.
 */
static int read_result(const char *dir, char *buf, size_t size)
{
	char path[PATH_MAX];
	struct stat st;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, REMOTE_RESULT);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -EIO;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* Remove the script's files from dir, and dir itself with rm_dir. */
static void remove_remote_files(const char *dir, int rm_dir)
{
	static const char *const names[] = {
	    REMOTE_SCRIPT,	 REMOTE_TOKEN,	REMOTE_TOKEN_SPYC,
	    REMOTE_TOKEN_TARGET, REMOTE_RESULT, REMOTE_RESULT_TMP};
	char path[PATH_MAX];
	size_t i;

	for (i = 0; i < ARRAY_SIZE(names); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	if (rm_dir)
		rmdir(dir);
}

/* Where the script goes: shared memory if there is any, as the channel. */
static const char *remote_parent_dir(void)
{
	const char *tmp = getenv("TMPDIR");

	if (!access("/dev/shm", W_OK | X_OK))
		return "/dev/shm";
	return tmp && *tmp ? tmp : "/tmp";
}

/*
 * Write the token and the script for loading agent into pid through PEP
 * 768 into dir (spyc's path to it; inner, the target's), and set script
 * to the script's path as the target sees it.  Returns 0 or -errno.
 */
static int prepare_remote_files(const char *dir, const char *inner,
				struct strbuf *script, const char *agent,
				const char *channel)
{
	struct strbuf text = STRBUF_INIT, lit_dir = STRBUF_INIT;
	struct strbuf lit_agent = STRBUF_INIT, lit_chan = STRBUF_INIT;
	int err;

	add_bytes_literal(&lit_dir, inner);
	add_bytes_literal(&lit_agent, agent);
	add_bytes_literal(&lit_chan, channel);
	strbuf_addf(&text, remote_script_fmt, lit_dir.buf, lit_agent.buf,
		    lit_chan.buf);
	strbuf_addf(script, "%s/%s", inner, REMOTE_SCRIPT);
	err = create_file(dir, REMOTE_TOKEN, "", 0644);
	if (!err)
		err = create_file(dir, REMOTE_SCRIPT, text.buf, 0644);
	strbuf_release(&text);
	strbuf_release(&lit_dir);
	strbuf_release(&lit_agent);
	strbuf_release(&lit_chan);
	return err;
}

/*
 * Make a directory of spyc's root, with the token and the script for
 * loading agent into pid through PEP 768.  Returns 0 with dir set (the
 * caller removes it), or -errno.
 */
static int prepare_remote_dir(struct strbuf *dir, struct strbuf *script,
			      pid_t pid, const char *agent, const char *channel,
			      uid_t uid, gid_t gid)
{
	int err;

	strbuf_addf(dir, "%s/spyc-load-%d-XXXXXX", remote_parent_dir(),
		    (int)pid);
	if (!mkdtemp(dir->buf)) {
		err = -errno;
		strbuf_reset(dir);
		return err;
	}
	err = prepare_remote_files(dir->buf, dir->buf, script, agent, channel);
	/* Last: the target's user must be able to rename in it. */
	if (!err && uid != (uid_t)-1 && chown(dir->buf, uid, gid))
		err = -errno;
	if (err) {
		remove_remote_files(dir->buf, 1);
		strbuf_reset(dir);
	}
	return err;
}

static void sleep_poll(void)
{
	struct timespec ts = {0, (long)REMOTE_POLL_NS};

	nanosleep(&ts, NULL);
}

/*
 * Once the target has taken the script: wait for the script's result,
 * or for the channel to show the agent's final status.  Returns 0 with
 * *entry_ret set, or -errno with msg set.
 */
static int wait_remote_result(pid_t pid, const char *dir,
			      const struct gpuchan *chan, long *entry_ret,
			      char *msg, size_t size)
{
	uint64_t deadline = now_ns() + REMOTE_CALL_NS;
	char result[REMOTE_RESULT_MAX];
	struct gpuchan_state st;

	for (;;) {
		if (!read_result(dir, result, sizeof(result))) {
			if (sscanf(result, "ok %ld", entry_ret) == 1)
				return 0;
			snprintf(msg, size,
				 "the GPU agent could not be loaded into pid "
				 "%d through PEP 768: %s",
				 (int)pid,
				 strncmp(result, "error ", 6) ? result
							      : result + 6);
			return -ELIBBAD;
		}
		/* The entry returns the status it reached. */
		if (!gpuchan_state(chan, &st) &&
		    st.status != GPU_AGENT_WAITING &&
		    st.status != GPU_AGENT_STARTING) {
			*entry_ret = st.status;
			return 0;
		}
		if (!proc_exists(pid)) {
			snprintf(msg, size, "pid %d exited during injection",
				 (int)pid);
			return -ESRCH;
		}
		if (now_ns() > deadline) {
			snprintf(
			    msg, size,
			    "the GPU agent's entry point in pid %d did not "
			    "return in %llu s",
			    (int)pid, REMOTE_CALL_NS / 1000000000ULL);
			return -ETIMEDOUT;
		}
		sleep_poll();
	}
}

/*
 * Load agent into pid through PEP 768, the script in a directory of
 * spyc's (in, NULL), or in the one under the target's root (in, where
 * agent and the channel are the target's paths).  Returns 0 with
 * *entry_ret set (it was loaded); 1 with why set when it was not and
 * will not be (the token is spyc's: load it another way); or -errno with
 * msg set when the script has the token but the load failed.
 */
static int load_by_remote_exec(pid_t pid, const char *agent,
			       const struct targetdir *in,
			       const struct gpuchan *chan, uid_t uid, gid_t gid,
			       long *entry_ret, char *why, size_t why_size,
			       char *msg, size_t size)
{
	struct strbuf dir = STRBUF_INIT, script = STRBUF_INIT;
	char real[PATH_MAX];
	uint64_t deadline;
	int err, ret = 1;

	if (in) {
		strbuf_addstr(&dir, in->outer);
		err = prepare_remote_files(dir.buf, in->inner, &script, agent,
					   chan->path);
	} else if (!realpath(agent, real)) {
		return 1; /* inject_library() says why */
	} else {
		err = prepare_remote_dir(&dir, &script, pid, real, chan->path,
					 uid, gid);
	}
	if (err) {
		snprintf(why, why_size,
			 "cannot write a script for pid %d to run: %s",
			 (int)pid, strerror(-err));
		goto out;
	}
	err =
	    remote_exec_script(pid, script.buf, REMOTE_TAKE_MS, why, why_size);
	if (err && err != -EINPROGRESS) {
		/* It will not run: the token is spyc's. */
		if (!rename_in(dir.buf, REMOTE_TOKEN, REMOTE_TOKEN_SPYC))
			goto out;
		/* (It cannot be gone: nothing else renames it.) */
		ret = err;
		snprintf(msg, size, "%s", why);
		goto out;
	}
	why[0] = '\0';
	/* Taken: the script claims the token first thing. */
	deadline = now_ns() + REMOTE_CLAIM_NS;
	while (exists_in(dir.buf, REMOTE_TOKEN) && now_ns() < deadline)
		sleep_poll();
	if (!rename_in(dir.buf, REMOTE_TOKEN, REMOTE_TOKEN_SPYC)) {
		/* The thread took an emptied path, or the script is late. */
		snprintf(why, why_size,
			 "pid %d took the script but did not start it in "
			 "%llu s",
			 (int)pid, REMOTE_CLAIM_NS / 1000000000ULL);
		goto out;
	}
	ret = wait_remote_result(pid, dir.buf, chan, entry_ret, msg, size);
out:
	if (dir.len)
		remove_remote_files(dir.buf, !in);
	strbuf_release(&dir);
	strbuf_release(&script);
	return ret;
}

/*
 * The path (as pid sees it) of a spyc agent pid has already loaded, its
 * file since removed or not, or NULL.  The caller frees it.  Loading
 * that path again gives the library already loaded (the loader knows it
 * by its name), as loading spyc's own agent again does for a target of
 * spyc's root; a new copy would be a second agent.
 */
static char *loaded_agent(pid_t pid)
{
	static const char deleted[] = " (deleted)";
	struct proc_maps maps = {0};
	char *found = NULL;
	size_t i;

	if (proc_maps_load(&maps, pid))
		return NULL;
	for (i = 0; i < maps.nr && !found; i++) {
		const char *path = maps.maps[i].path, *base;
		size_t len;

		if (!path || path[0] != '/')
			continue;
		base = strrchr(path, '/') + 1;
		len = strlen(base);
		if (len >= sizeof(deleted) - 1 &&
		    !strcmp(base + len - (sizeof(deleted) - 1), deleted))
			len -= sizeof(deleted) - 1;
		if (len == strlen(AGENT_FILE) &&
		    !strncmp(base, AGENT_FILE, len))
			found = xstrndup(path, (size_t)(base - path) + len);
	}
	proc_maps_release(&maps);
	return found;
}

int gpu_attach(pid_t pid, const char *agent, struct gpuchan *chan,
	       struct gpuchan_state *st, struct gpu_attach_result *how,
	       char *msg, size_t size)
{
	struct targetdir dir = TARGETDIR_INIT;
	struct strbuf path = STRBUF_INIT;
	struct inject_result res;
	char proc[64], why[384];
	struct stat pst;
	uid_t uid = (uid_t)-1;
	gid_t gid = (gid_t)-1;
	long entry_ret = 0;
	char *load = NULL;
	int err, saved_quiet = quiet;
	/*
	 * A target with a root of its own (a container's) has neither
	 * spyc's agent nor its /dev/shm: the agent, the channel and the
	 * script go into a directory under its root, by their paths there.
	 */
	int contained = proc_has_other_root(pid);

	memset(chan, 0, sizeof(*chan));
	memset(how, 0, sizeof(*how));
	how->way = GPU_LOADED_PTRACE;
	/* As root, give the channel to the target's user: it opens it. */
	snprintf(proc, sizeof(proc), "/proc/%d", (int)pid);
	if (!geteuid() && !stat(proc, &pst) && pst.st_uid) {
		uid = pst.st_uid;
		gid = pst.st_gid;
	}
	if (contained) {
		load = loaded_agent(pid);
		err = targetdir_make(&dir, pid, !load, uid, gid, why,
				     sizeof(why));
		if (err) {
			snprintf(msg, size, "pid %d runs in a container: %s",
				 (int)pid, why);
			goto fail;
		}
		if (!load) {
			err = targetdir_copy(&dir, AGENT_FILE, agent);
			if (err) {
				snprintf(msg, size,
					 "cannot copy the GPU agent into "
					 "pid %d's root (%s): %s",
					 (int)pid, dir.inner, strerror(-err));
				goto fail;
			}
			strbuf_addf(&path, "%s/%s", dir.inner, AGENT_FILE);
			load = strbuf_detach(&path);
		}
	} else {
		load = xstrdup(agent);
	}
	quiet = 1;
	err = contained ? gpuchan_create_in(chan, GPUCHAN_DEFAULT_SLOTS, uid,
					    gid, dir.fd, dir.inner)
			: gpuchan_create(chan, GPUCHAN_DEFAULT_SLOTS, uid, gid);
	quiet = saved_quiet;
	if (err) {
		snprintf(msg, size,
			 "cannot create a channel for the GPU agent%s%s: %s",
			 contained ? " in " : "", contained ? dir.inner : "",
			 strerror(-err));
		err = -EIO;
		goto fail;
	}
	err = load_by_remote_exec(pid, load, contained ? &dir : NULL, chan, uid,
				  gid, &entry_ret, how->why_not_pep768,
				  sizeof(how->why_not_pep768), msg, size);
	if (err < 0)
		goto fail;
	if (!err) {
		how->way = GPU_LOADED_PEP768;
	} else {
		err = contained ? inject_library_as_seen(
				      pid, load, AGENT_ATTACH, chan->path, &res)
				: inject_library(pid, load, AGENT_ATTACH,
						 chan->path, &res);
		if (err) {
			snprintf(msg, size, "%s", res.message);
			goto fail;
		}
		entry_ret = res.entry_ret;
	}
	if (entry_ret < 0) {
		err = (int)entry_ret;
		snprintf(msg, size,
			 "the GPU agent in pid %d cannot open %s: %s", (int)pid,
			 chan->path, strerror((int)-entry_ret));
		goto fail;
	}
	/*
	 * Both sides have them mapped now: the names are no longer needed,
	 * nor anything spyc put under the target's root.
	 */
	gpuchan_unlink(chan);
	targetdir_remove(&dir);
	free(load);
	if (gpuchan_state(chan, st)) {
		snprintf(msg, size, "the GPU agent in pid %d wrote garbage",
			 (int)pid);
		gpuchan_release(chan);
		return -EINVAL;
	}
	return 0;
fail:
	gpuchan_release(chan);
	targetdir_remove(&dir);
	free(load);
	return err;
}
