/* SPDX-License-Identifier: MIT */
/*
 * A private directory under a target's own root, for the files it must
 * open that spyc makes from outside its mount namespace (a container's):
 * the GPU agent, its channel, the PEP 768 script.
 */
#ifndef SPYC_TARGETDIR_H
#define SPYC_TARGETDIR_H

#include <stddef.h>
#include <sys/types.h>

struct targetdir {
	int parent_fd; /* the directory it was made in, -1 when none */
	int fd;	       /* the directory itself, -1 when none */
	char *name;    /* its name in parent_fd */
	char *inner;   /* its path as the target sees it: "/tmp/spyc-..." */
	/*
	 * Its path as spyc reaches it, "/proc/self/fd/N": through the
	 * directory spyc opened, so that no symbolic link the target's
	 * files hold (an absolute one would be followed in spyc's root)
	 * is ever taken on the way.
	 */
	char *outer;
};

#define TARGETDIR_INIT                                                         \
	{                                                                      \
		-1, -1, NULL, NULL, NULL                                       \
	}

/*
 * Make a directory of mode 0700 in the first of the target's /tmp,
 * /var/tmp and /dev/shm (as pid's root has them, reached through
 * /proc/PID/root without following symbolic links) that takes a new
 * directory and, with exec, a library to run (not mounted noexec); it is
 * given to uid:gid unless uid is (uid_t)-1.  It is removed at spyc's exit
 * should targetdir_remove() not have been called.  Returns 0, or a
 * negative errno with why set to one line saying why none would do.
 */
int targetdir_make(struct targetdir *d, pid_t pid, int exec, uid_t uid,
		   gid_t gid, char *why, size_t size);

/*
 * Copy the file src into d as name, mode 0644 (the target's user reads
 * it).  Returns 0 or a negative errno.
 */
int targetdir_copy(struct targetdir *d, const char *name, const char *src);

/*
 * Remove d and what is in it (whatever the target put there too, files
 * and empty directories), and release d.  Safe to repeat, and on a d
 * that is TARGETDIR_INIT or whose targetdir_make() failed.
 */
void targetdir_remove(struct targetdir *d);

#endif
