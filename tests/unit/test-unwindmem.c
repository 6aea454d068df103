/* SPDX-License-Identifier: MIT */
/* Unit tests of the unwinder's page cache (unwindmem), on this process. */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "sys/proc.h"
#include "sys/unwindmem.h"

#include "check.h"

/* In .rodata: a read-only private mapping of this test's own file. */
static const uint64_t read_only_word = 0x1122334455667788ULL;
/* In .data: writable, may change between stops. */
static uint64_t writable_word = 0x0102030405060708ULL;

static void test_read_only_ranges(void)
{
	struct proc_maps maps = {0};
	static const char text[] =
	    "1000-3000 r--p 00000000 08:01 11 /usr/lib/libx.so\n"
	    "3000-5000 r-xp 00002000 08:01 11 /usr/lib/libx.so\n"
	    "8000-9000 r--p 00000000 08:01 12 /usr/lib/liby.so\n";

	CHECK(proc_maps_parse(&maps, text) == 3);
	CHECK(unwindmem_read_only(&maps, 0x1000, 0x2000));
	CHECK(unwindmem_read_only(&maps, 0x4000, 0x5000));
	CHECK(unwindmem_read_only(&maps, 0x8000, 0x9000));
	/* Below, between and above the mappings. */
	CHECK(!unwindmem_read_only(&maps, 0x0, 0x1000));
	CHECK(!unwindmem_read_only(&maps, 0x5000, 0x6000));
	CHECK(!unwindmem_read_only(&maps, 0x9000, 0xa000));
	/* Across two mappings: each is looked at alone. */
	CHECK(!unwindmem_read_only(&maps, 0x2000, 0x4000));
	proc_maps_release(&maps);
}

static void test_reads_this_process(void)
{
	struct unwindmem um;
	const volatile uint64_t *ro = &read_only_word;
	volatile uint64_t *rw = &writable_word;
	uint64_t v = 0, misses;

	unwindmem_init(&um, getpid());
	/* Only file mappings that cannot be written are kept. */
	CHECK(unwindmem_read_only(&um.ro, (uint64_t)(uintptr_t)ro,
				  (uint64_t)(uintptr_t)ro + 8));
	CHECK(!unwindmem_read_only(&um.ro, (uint64_t)(uintptr_t)rw,
				   (uint64_t)(uintptr_t)rw + 8));
	CHECK(!unwindmem_read(&um, (uint64_t)(uintptr_t)ro, &v));
	CHECK(v == *ro);
	CHECK(!unwindmem_read(&um, (uint64_t)(uintptr_t)rw, &v));
	CHECK(v == *rw);

	/* Within one stop, a page is read once: a change is not seen. */
	*rw = 42;
	CHECK(!unwindmem_read(&um, (uint64_t)(uintptr_t)rw, &v));
	CHECK(v == 0x0102030405060708ULL);
	/* The next stop reads writable pages again, not read-only ones. */
	unwindmem_new_stop(&um);
	misses = um.misses;
	CHECK(!unwindmem_read(&um, (uint64_t)(uintptr_t)rw, &v));
	CHECK(v == 42);
	CHECK(um.misses == misses + 1);
	CHECK(!unwindmem_read(&um, (uint64_t)(uintptr_t)ro, &v));
	CHECK(v == *ro);
	CHECK(um.misses == misses + 1);

	/* Unmapped memory: an error, not a crash. */
	CHECK(unwindmem_read(&um, 8, &v) < 0);
	CHECK(unwindmem_read(&um, 0xfffffffffff000ULL, &v) < 0);
	unwindmem_release(&um);
}

int main(void)
{
	test_read_only_ranges();
	test_reads_this_process();
	return failed;
}
