/* SPDX-License-Identifier: MIT */
/* Attaching commands to a target: by pid, or by launching a program. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "proc.h"
#include "util.h"

/* A launched program that stays non-Python this long is not Python. */
#define LAUNCH_GIVE_UP_NS (10ULL * 1000000000ULL)
/* How long attaching waits for a starting interpreter to tell its version. */
#define ATTACH_WAIT_NS (2ULL * 1000000000ULL)
/* How long an "unsupported" answer must last while a program starts. */
#define LAUNCH_SETTLE_NS (500ULL * 1000000ULL)
/* How often to look for the interpreter while a program starts. */
#define LAUNCH_POLL_NS 500000L

pid_t parse_pid(const char *arg)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || *end || end == arg || v <= 0 || v > INT_MAX) {
		fprintf(stderr, "spyc: invalid pid '%s'\n", arg);
		exit(EXIT_USAGE);
	}
	return (pid_t)v;
}

static void print_notice(const struct pyruntime *rt)
{
	if (rt->notice[0])
		fprintf(stderr, "spyc: notice: %s\n", rt->notice);
}

void attach_or_die(struct pyruntime *rt, pid_t pid)
{
	uint64_t give_up = now_ns() + ATTACH_WAIT_NS;
	int ret;

	/* A process that is just starting may not know its version yet. */
	while ((ret = pyruntime_find(rt, pid)) == PYRT_NOT_READY &&
	       now_ns() < give_up) {
		struct timespec ts = {0, LAUNCH_POLL_NS};

		nanosleep(&ts, NULL);
	}
	if (ret != PYRT_OK) {
		fprintf(stderr, "spyc: %s\n", rt->message);
		exit(EXIT_FAILED);
	}
	print_notice(rt);
}

pid_t launch_or_die(struct pyruntime *rt, char **argv)
{
	int pipefd[2], err = 0, status;
	pid_t pid;
	ssize_t n;
	uint64_t exe_inode = 0, since = now_ns(), unsupported_since = 0;

	if (pipe2(pipefd, O_CLOEXEC))
		die("cannot create a pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		die("cannot fork: %s", strerror(errno));
	if (pid == 0) {
		close(pipefd[0]);
		execvp(argv[0], argv);
		err = errno;
		if (write(pipefd[1], &err, sizeof(err)) < 0)
			_exit(127);
		_exit(127);
	}
	close(pipefd[1]);
	do
		n = read(pipefd[0], &err, sizeof(err));
	while (n < 0 && errno == EINTR);
	close(pipefd[0]);
	if (n == sizeof(err)) {
		waitpid(pid, NULL, 0);
		die("cannot run '%s': %s", argv[0], strerror(err));
	}

	/* A wrapper (a pyenv shim, a shell script) may exec Python later. */
	for (;;) {
		struct timespec ts = {0, LAUNCH_POLL_NS};
		uint64_t inode;
		int ret;

		if (waitpid(pid, &status, WNOHANG) == pid)
			die("'%s' exited before a Python interpreter started",
			    argv[0]);
		ret = pyruntime_find(rt, pid);
		if (ret == PYRT_OK)
			break;
		/*
		 * While the loader maps libraries, a half-mapped one can
		 * look unsupported: believe it only once it stays so.
		 */
		if (ret != PYRT_UNSUPPORTED)
			unsupported_since = 0;
		else if (!unsupported_since)
			unsupported_since = now_ns();
		if ((unsupported_since &&
		     now_ns() - unsupported_since > LAUNCH_SETTLE_NS) ||
		    ret == PYRT_NO_PERMISSION) {
			kill(pid, SIGTERM);
			waitpid(pid, NULL, 0);
			die("%s", rt->message);
		}
		inode = proc_exe_inode(pid);
		if (inode != exe_inode) {
			exe_inode = inode;
			since = now_ns();
		} else if (now_ns() - since > LAUNCH_GIVE_UP_NS) {
			die("%s; spyc leaves it running", rt->message);
		}
		nanosleep(&ts, NULL);
	}
	print_notice(rt);
	return pid;
}
