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

#include "cmd/commands.h"
#include "py/pyasync.h"
#include "py/pysample.h"
#include "sys/proc.h"
#include "util.h"

/* A launched program that stays non-Python this long is not Python. */
#define LAUNCH_GIVE_UP_NS (10ULL * 1000000000ULL)
/*
 * How long attaching waits for a starting interpreter to tell its
 * version: the dynamic loader of a loaded machine can take seconds.
 */
#define ATTACH_WAIT_NS (10ULL * 1000000000ULL)
/* How long an "unsupported" answer must last while a program starts. */
#define LAUNCH_SETTLE_NS (500ULL * 1000000ULL)
/* How often to look for the interpreter while a program starts. */
#define LAUNCH_POLL_NS 500000L

/* What the child could not do, as it tells the parent through a pipe. */
enum launch_failure {
	LAUNCH_EXEC,
	LAUNCH_OUTPUT, /* open or redirect to the output file */
};

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

/* A launched program spyc gives up on must not run on without it. */
static void end_child(pid_t child)
{
	if (child <= 0)
		return;
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
}

void gil_option_or_die(const struct pyruntime *rt, pid_t child)
{
	if (!rt->free_threaded)
		return;
	end_child(child);
	fprintf(stderr,
		"spyc: --gil: Python %s in pid %d is a free-threaded build: "
		"there is no GIL for a thread to hold (leave out --gil)\n",
		rt->version, (int)rt->pid);
	exit(EXIT_FAILED);
}

int async_or_die(struct pyasync *pa, const struct pyruntime *rt, pid_t child)
{
	char msg[256];
	int r;

	memset(pa, 0, sizeof(*pa));
	if (pyasync_supported(rt, msg, sizeof(msg))) {
		end_child(child);
		fprintf(stderr, "spyc: %s\n", msg);
		exit(EXIT_FAILED);
	}
	r = pyasync_find(pa, rt);
	if (r < 0) {
		end_child(child);
		fprintf(stderr,
			"spyc: pid %d's _asyncio module describes its tasks "
			"in a way this spyc cannot read\n",
			(int)rt->pid);
		exit(EXIT_FAILED);
	}
	return r == PYASYNC_NOT_LOADED;
}

void async_sampler_or_die(struct py_sampler *ps, struct pyasync *pa,
			  const struct pyruntime *rt, pid_t child,
			  int all_tasks)
{
	async_or_die(pa, rt, child);
	ps->async = pa;
	ps->async_stacks = 1;
	ps->async_all = all_tasks;
}

/* The default file for a launched program's output: spyc-PID.out. */
static void default_program_output(char *buf, size_t size, pid_t pid)
{
	snprintf(buf, size, "spyc-%d.out", (int)pid);
}

/*
 * In the child, before exec: send standard output and error to the file
 * output says (see launch_or_die).  Returns 0 or an errno code.
 */
static int redirect_output(const struct strbuf *output)
{
	char name[64];
	const char *path = output->buf;
	int fd;

	if (!output->len) {
		default_program_output(name, sizeof(name), getpid());
		path = name;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0)
		return errno;
	/* The copies dup2() makes do not inherit O_CLOEXEC. */
	if (dup2(fd, STDOUT_FILENO) < 0 || dup2(fd, STDERR_FILENO) < 0)
		return errno;
	return 0;
}

pid_t launch_program_or_die(char **argv, struct strbuf *output)
{
	int pipefd[2];
	int failure[2] = {LAUNCH_EXEC, 0}; /* enum launch_failure, errno */
	int named = output && output->len; /* by the user */
	pid_t pid;
	ssize_t n;

	/*
	 * An ignored SIGCHLD, inherited from whoever started spyc, would
	 * have the kernel reap the child and lose its exit status.
	 */
	signal(SIGCHLD, SIG_DFL);
	if (pipe2(pipefd, O_CLOEXEC))
		die("cannot create a pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		die("cannot fork: %s", strerror(errno));
	if (pid == 0) {
		close(pipefd[0]);
		if (output && (failure[1] = redirect_output(output))) {
			failure[0] = LAUNCH_OUTPUT;
		} else {
			execvp(argv[0], argv);
			failure[1] = errno;
		}
		if (write(pipefd[1], failure, sizeof(failure)) < 0)
			_exit(127);
		_exit(127);
	}
	close(pipefd[1]);
	if (output && !output->len) {
		char name[64];

		default_program_output(name, sizeof(name), pid);
		strbuf_addstr(output, name);
	}
	do
		n = read(pipefd[0], failure, sizeof(failure));
	while (n < 0 && errno == EINTR);
	close(pipefd[0]);
	if (n == sizeof(failure)) {
		waitpid(pid, NULL, 0);
		/* Nothing ran: leave no empty file of spyc's naming behind. */
		if (failure[0] == LAUNCH_EXEC && output && !named)
			unlink(output->buf);
		if (failure[0] == LAUNCH_OUTPUT)
			die("cannot write the program's output to '%s': %s%s",
			    output->buf, strerror(failure[1]),
			    named ? "" : "; use --program-output");
		die("cannot run '%s': %s", argv[0], strerror(failure[1]));
	}
	return pid;
}

pid_t launch_or_die(struct pyruntime *rt, char **argv, struct strbuf *output)
{
	int status;
	pid_t pid = launch_program_or_die(argv, output);
	uint64_t exe_inode = 0, since = now_ns(), unsupported_since = 0;

	/* A wrapper (a pyenv shim, a shell script) may exec Python later. */
	for (;;) {
		struct timespec ts = {0, LAUNCH_POLL_NS};
		uint64_t inode;
		int ret;

		if (waitpid(pid, &status, WNOHANG) == pid)
			die("'%s' exited before a Python interpreter "
			    "started%s%s%s",
			    argv[0], output ? " (its output is in '" : "",
			    output ? output->buf : "", output ? "')" : "");
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
