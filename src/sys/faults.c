/* SPDX-License-Identifier: MIT */
/*
 * Fault injection for the reliability tests (make FAULTS=1 only): what a
 * target that changes, unmaps and exits under spyc does to its reads and
 * ptrace calls, at rates high enough to reach every error path.
 */
#ifdef SPYC_FAULTS

#include "sys/faults.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* This file calls the real ones. */
#undef process_vm_readv
#undef ptrace

/* Stale data: this many reads are remembered, each up to STALE_MAX bytes. */
#define STALE_SLOTS 256
#define STALE_MAX (16u << 10)

struct stale_entry {
	pid_t pid;
	uint64_t addr;
	size_t len;
	unsigned char *data; /* STALE_MAX bytes once used */
};

static struct {
	int ready;
	double read, garbage, stale, ptrace;
	uint64_t rng;
	struct stale_entry cache[STALE_SLOTS];
	/* how many of each were injected, and where to say so at exit */
	unsigned long nr_read, nr_garbage, nr_stale, nr_ptrace;
	char *counts_path;
} faults;

/* counts=PATH: the tests check that the faults they asked for happened. */
static void write_counts(void)
{
	FILE *f = fopen(faults.counts_path, "w");

	if (!f)
		return;
	fprintf(f, "read=%lu garbage=%lu stale=%lu ptrace=%lu\n",
		faults.nr_read, faults.nr_garbage, faults.nr_stale,
		faults.nr_ptrace);
	fclose(f);
}

static void bad_spec(const char *spec, const char *why)
{
	fprintf(stderr, "spyc: SPYC_FAULTS='%s': %s\n", spec, why);
	exit(2);
}

static void parse_spec(const char *spec)
{
	char *copy = strdup(spec), *save = NULL, *item;

	faults.rng = 1;
	if (!copy)
		bad_spec(spec, "out of memory");
	for (item = strtok_r(copy, ",", &save); item;
	     item = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(item, '='), *end;
		double p;

		if (!eq)
			bad_spec(spec, "expected NAME=VALUE items");
		*eq++ = '\0';
		if (!strcmp(item, "counts")) {
			if (!*eq)
				bad_spec(spec, "counts needs a file name");
			free(faults.counts_path);
			faults.counts_path = strdup(eq);
			if (!faults.counts_path)
				bad_spec(spec, "out of memory");
			continue;
		}
		if (!strcmp(item, "seed")) {
			faults.rng = strtoull(eq, &end, 0);
			if (end == eq || *end)
				bad_spec(spec, "seed is not a number");
			continue;
		}
		p = strtod(eq, &end);
		if (end == eq || *end || !(p >= 0 && p <= 1))
			bad_spec(spec, "a rate is a number from 0 to 1");
		if (!strcmp(item, "read"))
			faults.read = p;
		else if (!strcmp(item, "garbage"))
			faults.garbage = p;
		else if (!strcmp(item, "stale"))
			faults.stale = p;
		else if (!strcmp(item, "ptrace"))
			faults.ptrace = p;
		else
			bad_spec(spec,
				 "names are read, garbage, stale, ptrace, "
				 "seed and counts");
	}
	free(copy);
	if (faults.counts_path)
		atexit(write_counts);
}

static void init(void)
{
	const char *spec = getenv("SPYC_FAULTS");

	if (faults.ready)
		return;
	faults.ready = 1;
	if (spec && *spec)
		parse_spec(spec);
}

/* splitmix64: small, and its own, so that spyc's other randomness is not
 * disturbed. */
static uint64_t next_random(void)
{
	uint64_t z = (faults.rng += 0x9E3779B97F4A7C15ULL);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

/* 1 with probability p. */
static int chance(double p)
{
	return p > 0 && (double)(next_random() >> 11) * 0x1.0p-53 < p;
}

static void fill_random(void *buf, size_t len)
{
	unsigned char *p = buf;

	while (len) {
		uint64_t r = next_random();
		size_t n = len < sizeof(r) ? len : sizeof(r);

		memcpy(p, &r, n);
		p += n;
		len -= n;
	}
}

/*
 * Garbage: half the time random bytes (pointers that lead nowhere), half
 * the time the real bytes with a few bits flipped: values that look right
 * but are not (a length, a count, a pointer a little off), which is what
 * tests bounds and checks.
 */
static void flip_or_fill(void *buf, size_t len)
{
	unsigned char *p = buf;
	int flips;

	if (next_random() & 1) {
		fill_random(buf, len);
		return;
	}
	for (flips = 1 + (int)(next_random() % 3); flips > 0; flips--) {
		uint64_t r = next_random();

		p[(r >> 3) % len] ^= (unsigned char)(1u << (r & 7));
	}
}

static struct stale_entry *stale_slot(pid_t pid, uint64_t addr, size_t len)
{
	uint64_t h = (addr ^ ((uint64_t)len << 40) ^ (uint64_t)pid) *
		     0x9E3779B97F4A7C15ULL;

	return &faults.cache[h >> 56 & (STALE_SLOTS - 1)];
}

/*
 * A region that was read whole: maybe replace it with garbage or with
 * what an earlier read of it returned; else remember it for later.
 */
static void after_read(pid_t pid, const struct iovec *local,
		       const struct iovec *remote)
{
	uint64_t addr = (uint64_t)(uintptr_t)remote->iov_base;
	size_t len = local->iov_len;
	struct stale_entry *e;

	if (chance(faults.garbage)) {
		faults.nr_garbage++;
		flip_or_fill(local->iov_base, len);
		return;
	}
	if (len > STALE_MAX || !(faults.stale > 0))
		return;
	e = stale_slot(pid, addr, len);
	if (e->data && e->pid == pid && e->addr == addr && e->len == len &&
	    chance(faults.stale)) {
		faults.nr_stale++;
		memcpy(local->iov_base, e->data, len);
		return;
	}
	if (!e->data && !(e->data = malloc(STALE_MAX)))
		return;
	e->pid = pid;
	e->addr = addr;
	e->len = len;
	memcpy(e->data, local->iov_base, len);
}

ssize_t faults_process_vm_readv(pid_t pid, const struct iovec *local,
				unsigned long liovcnt,
				const struct iovec *remote,
				unsigned long riovcnt, unsigned long flags)
{
	size_t i, left;
	ssize_t got;

	init();
	got = process_vm_readv(pid, local, liovcnt, remote, riovcnt, flags);
	if (got <= 0)
		return got;
	if (chance(faults.read)) {
		faults.nr_read++;
		/* Half fail outright; half stop short, as at an unmapped page.
		 */
		if (next_random() & 1) {
			errno = EFAULT;
			return -1;
		}
		got = (ssize_t)(next_random() % (uint64_t)got);
		if (!got) {
			errno = EFAULT;
			return -1;
		}
	}
	/* Regions are paired one to one in spyc's reads; else leave them. */
	if (liovcnt != riovcnt)
		return got;
	left = (size_t)got;
	for (i = 0; i < liovcnt; i++) {
		if (local[i].iov_len != remote[i].iov_len ||
		    left < local[i].iov_len)
			break;
		after_read(pid, &local[i], &remote[i]);
		left -= local[i].iov_len;
	}
	return got;
}

long faults_ptrace(int request, pid_t pid, void *addr, void *data)
{
	init();
	switch (request) {
	case PTRACE_SEIZE:
	case PTRACE_ATTACH:
	case PTRACE_INTERRUPT:
	case PTRACE_GETREGS:
	case PTRACE_GETFPREGS:
	case PTRACE_GETREGSET:
	case PTRACE_PEEKDATA:
	case PTRACE_PEEKTEXT:
	case PTRACE_PEEKUSER:
		if (chance(faults.ptrace)) {
			faults.nr_ptrace++;
			errno =
			    request == PTRACE_SEIZE || request == PTRACE_ATTACH
				? EPERM
				: ESRCH;
			return -1;
		}
		break;
	default:
		break;
	}
	return ptrace((enum __ptrace_request)request, pid, addr, data);
}

#endif /* SPYC_FAULTS */
