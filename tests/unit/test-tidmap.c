/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of tidmap.c: the NSpid line of /proc status files, and this
 * process seen through the map (it shares spyc's pid namespace: its ids
 * are its own).
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sys/tidmap.h"

#include "check.h"

static void test_parse(void)
{
	size_t nr;

	/* A task in a container: the host's id, then the container's. */
	CHECK(tidmap_parse_nspid("Name:\tpython3\nTgid:\t4419\nPid:\t4432\n"
				 "NSpid:\t4432\t9\nNSpgid:\t4419\t1\n",
				 &nr) == 9 &&
	      nr == 2);
	/* Nested twice: the innermost id counts. */
	CHECK(tidmap_parse_nspid("Pid:\t70\nNSpid:\t70\t12\t3\n", &nr) == 3 &&
	      nr == 3);
	/* Not in a namespace of its own: one id. */
	CHECK(tidmap_parse_nspid("Pid:\t812\nNSpid:\t812\nNSpgid:\t1\n",
				 &nr) == 812 &&
	      nr == 1);
	/* NSpgid is not NSpid; a kernel before 4.1 has neither. */
	CHECK(tidmap_parse_nspid("Pid:\t812\nNSpgid:\t812\t1\n", &nr) == 0 &&
	      nr == 0);
	CHECK(tidmap_parse_nspid("", &nr) == 0 && nr == 0);
	/* A torn or odd line gives what it holds up to the oddity. */
	CHECK(tidmap_parse_nspid("NSpid:\t5\tx\t6\n", &nr) == 5 && nr == 1);
	CHECK(tidmap_parse_nspid("\nNSpid:\t0\t1\n", &nr) == 0 && nr == 0);
}

static void test_self(void)
{
	struct tidmap m;
	long ids[64];
	size_t n, i;
	int found = 0;

	tidmap_init(&m, getpid());
	CHECK(!m.nested);
	CHECK(m.inner_pid == getpid());
	CHECK(tidmap_outer(&m, getpid()) == getpid());
	CHECK(tidmap_outer(&m, 0) == 0 && tidmap_outer(&m, -3) == 0);
	n = tidmap_inner_tasks(&m, ids, 64);
	for (i = 0; i < n; i++)
		found |= ids[i] == getpid();
	CHECK(n >= 1 && found);
	tidmap_release(&m);
}

int main(void)
{
	test_parse();
	test_self();
	if (failed) {
		fprintf(stderr, "test-tidmap: %d checks failed\n", failed);
		return 1;
	}
	printf("test-tidmap: all checks passed\n");
	return 0;
}
