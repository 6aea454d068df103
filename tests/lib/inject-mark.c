/* SPDX-License-Identifier: MIT */
/*
 * A library the injection tests load into a running target: it proves it
 * ran by appending to the file $SPYC_TEST_MARK (set in the target's
 * environment), once when loaded and once per call of its entry point.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int spyc_test_entry(const char *arg);

static void mark(const char *what)
{
	const char *path = getenv("SPYC_TEST_MARK");
	char line[512];
	int fd, n;

	if (!path)
		return;
	n = snprintf(line, sizeof(line), "%s pid=%d tid=%ld\n", what,
		     (int)getpid(), (long)syscall(SYS_gettid));
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (write(fd, line, (size_t)n) != n)
		n = -1;
	close(fd);
}

__attribute__((constructor)) static void loaded(void)
{
	mark("loaded");
}

/* Called by the injector with a string: marks it, returns a known value. */
int spyc_test_entry(const char *arg)
{
	char what[300];

	snprintf(what, sizeof(what), "entry arg=%s", arg ? arg : "(null)");
	mark(what);
	return 42;
}
