/* SPDX-License-Identifier: MIT */
/* A private directory under a target's own root: made, filled, removed. */
#include "sys/targetdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "util.h"

/* Where the directory may go, in the order tried (as the target sees). */
static const char *const candidates[] = {"/tmp", "/var/tmp", "/dev/shm"};
/* Names tried before giving up on a directory (another file has each). */
#define NAME_TRIES 16
/* Directories made and not yet removed, for spyc's exit. */
#define LIVE_MAX 4

static struct targetdir *live[LIVE_MAX];
static int exit_hook;

static void remove_live(void)
{
	size_t i;

	for (i = 0; i < LIVE_MAX; i++)
		if (live[i])
			targetdir_remove(live[i]);
}

static void track(struct targetdir *d, int on)
{
	size_t i;

	if (on && !exit_hook) {
		atexit(remove_live);
		exit_hook = 1;
	}
	for (i = 0; i < LIVE_MAX; i++) {
		if (on && !live[i]) {
			live[i] = d;
			return;
		}
		if (!on && live[i] == d)
			live[i] = NULL;
	}
}

/*
 * Open the directory path (absolute, as the target sees it) under root,
 * one component at a time, never following a symbolic link.  Returns a
 * descriptor, or -errno.
 */
static int open_under(int root, const char *path)
{
	char part[256];
	int fd = dup(root);

	if (fd < 0)
		return -errno;
	while (*path) {
		size_t len;
		int next;

		path += strspn(path, "/");
		len = strcspn(path, "/");
		if (!len)
			break;
		if (len >= sizeof(part)) {
			close(fd);
			return -ENAMETOOLONG;
		}
		memcpy(part, path, len);
		part[len] = '\0';
		path += len;
		next = openat(fd, part,
			      O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		if (next < 0)
			return -errno;
		fd = next;
	}
	return fd;
}

/* A new name for the directory: "spyc-PID-" and 8 random letters. */
static void new_name(char *buf, size_t size)
{
	static const char letters[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	unsigned char r[8];
	size_t i, len;

	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
		uint64_t t = now_ns();

		memcpy(r, &t, sizeof(r));
	}
	len = (size_t)snprintf(buf, size, "spyc-%d-", (int)getpid());
	for (i = 0; i < sizeof(r) && len + 1 < size; i++)
		buf[len++] = letters[r[i] % (sizeof(letters) - 1)];
	buf[len] = '\0';
}

/* Make a directory in parent: 0 with d's fd and name set, or -errno. */
static int make_in(struct targetdir *d, int parent)
{
	char name[64];
	int tries, fd;

	for (tries = 0; tries < NAME_TRIES; tries++) {
		new_name(name, sizeof(name));
		if (!mkdirat(parent, name, 0700))
			break;
		if (errno != EEXIST)
			return -errno;
	}
	if (tries == NAME_TRIES)
		return -EEXIST;
	fd = openat(parent, name,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		int err = -errno;

		unlinkat(parent, name, AT_REMOVEDIR);
		return err;
	}
	d->fd = fd;
	d->name = xstrdup(name);
	return 0;
}

int targetdir_make(struct targetdir *d, pid_t pid, int exec, uid_t uid,
		   gid_t gid, char *why, size_t size)
{
	struct strbuf tried = STRBUF_INIT, sb = STRBUF_INIT;
	char root_path[64];
	int root, err = -ENOENT;
	size_t i;

	memset(d, 0, sizeof(*d));
	d->parent_fd = d->fd = -1;
	snprintf(root_path, sizeof(root_path), "/proc/%d/root", (int)pid);
	root = open(root_path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0) {
		err = -errno;
		snprintf(why, size, "cannot open %s: %s", root_path,
			 strerror(errno));
		return err;
	}
	for (i = 0; i < ARRAY_SIZE(candidates); i++) {
		struct statvfs vfs;
		int parent = open_under(root, candidates[i]);

		if (parent < 0) {
			err = parent;
			strbuf_addf(&tried, "%s%s: %s", tried.len ? ", " : "",
				    candidates[i],
				    err == -ELOOP || err == -ENOTDIR
					? "a symbolic link"
					: strerror(-err));
			continue;
		}
		if (exec && !fstatvfs(parent, &vfs) &&
		    (vfs.f_flag & ST_NOEXEC)) {
			err = -EACCES;
			strbuf_addf(&tried, "%s%s: mounted noexec",
				    tried.len ? ", " : "", candidates[i]);
			close(parent);
			continue;
		}
		err = make_in(d, parent);
		if (err) {
			strbuf_addf(&tried, "%s%s: %s", tried.len ? ", " : "",
				    candidates[i], strerror(-err));
			close(parent);
			continue;
		}
		d->parent_fd = parent;
		break;
	}
	close(root);
	if (d->fd < 0) {
		snprintf(why, size,
			 "no directory of pid %d's root takes a file of "
			 "spyc's (%s)",
			 (int)pid, tried.buf);
		strbuf_release(&tried);
		return err;
	}
	strbuf_release(&tried);
	strbuf_addf(&sb, "%s/%s", candidates[i], d->name);
	d->inner = strbuf_detach(&sb);
	strbuf_addf(&sb, "/proc/self/fd/%d", d->fd);
	d->outer = strbuf_detach(&sb);
	track(d, 1);
	/* Last: the target's user must be able to read and rename in it. */
	if (uid != (uid_t)-1 && fchown(d->fd, uid, gid)) {
		err = -errno;
		snprintf(why, size,
			 "cannot give %s in pid %d's root to uid "
			 "%d: %s",
			 d->inner, (int)pid, (int)uid, strerror(errno));
		targetdir_remove(d);
		return err;
	}
	return 0;
}

int targetdir_copy(struct targetdir *d, const char *name, const char *src)
{
	char buf[65536];
	int in, out, err = 0;
	ssize_t n;

	in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	out =
	    openat(d->fd, name,
		   O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (out < 0) {
		err = -errno;
		close(in);
		return err;
	}
	/* Not the umask's: the target's user must read it. */
	if (fchmod(out, 0644))
		err = -errno;
	while (!err && (n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
		} else if (write(out, buf, (size_t)n) != n) {
			err = -EIO;
		}
	}
	if (close(out) && !err)
		err = -errno;
	close(in);
	if (err)
		unlinkat(d->fd, name, 0);
	return err;
}

void targetdir_remove(struct targetdir *d)
{
	if (d->fd >= 0) {
		int fd = dup(d->fd);
		DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
		struct dirent *de;

		if (!dir && fd >= 0)
			close(fd);
		while (dir && (de = readdir(dir))) {
			if (!strcmp(de->d_name, ".") ||
			    !strcmp(de->d_name, ".."))
				continue;
			if (unlinkat(d->fd, de->d_name, 0) &&
			    (errno == EISDIR || errno == EPERM))
				unlinkat(d->fd, de->d_name, AT_REMOVEDIR);
		}
		if (dir)
			closedir(dir);
		close(d->fd);
	}
	if (d->parent_fd >= 0) {
		if (d->name)
			unlinkat(d->parent_fd, d->name, AT_REMOVEDIR);
		close(d->parent_fd);
	}
	track(d, 0);
	free(d->name);
	free(d->inner);
	free(d->outer);
	memset(d, 0, sizeof(*d));
	d->parent_fd = d->fd = -1;
}
