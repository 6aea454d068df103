/* SPDX-License-Identifier: MIT */
/*
 * make bench's measure of what sleeping costs on this machine: spyc's
 * pacing (src/cmd/sampleloop.c: its timer slack, its slice, slots on one grid
 * of absolute deadlines) with nothing done between wakeups.  Not
 * installed, not part of spyc's command line.
 *
 *   spyc-sleeploop RATE SECONDS
 *
 * Prints "wakeups N cpu_us U": how many times it woke up, and its CPU
 * time (user + system) in microseconds over the whole loop.  Exit codes
 * as spyc's: 0 ok, 64 usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "cmd/commands.h"
#include "cmd/sampleloop.h"
#include "util.h"

static double cpu_us(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec * 1e6 + (double)ru.ru_utime.tv_usec +
	       (double)ru.ru_stime.tv_sec * 1e6 + (double)ru.ru_stime.tv_usec;
}

int main(int argc, char **argv)
{
	struct sampleloop sl;
	double rate, secs, before;
	uint64_t end, wakeups = 0;

	if (argc != 3 || (rate = atof(argv[1])) <= 0 ||
	    (secs = atof(argv[2])) <= 0) {
		fprintf(stderr, "usage: spyc-sleeploop RATE SECONDS\n");
		return EXIT_USAGE;
	}
	memset(&sl, 0, sizeof(sl));
	sampleloop_init(&sl, rate);
	end = sl.next + (uint64_t)(secs * 1e9);
	before = cpu_us();
	while (sampleloop_schedule(&sl) < end) {
		sleep_until(sl.next);
		wakeups++;
	}
	printf("wakeups %llu cpu_us %.0f\n", (unsigned long long)wakeups,
	       cpu_us() - before);
	sampleloop_release(&sl);
	return 0;
}
