/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the pure parts of the reader: string decoding, maps
 * parsing, version parsing, offset selection, _Py_DebugOffsets.  With
 * "--vectors FILE", checks line-table vectors that tests/test_linetable.py
 * took from real interpreters instead.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys/elfsym.h"
#include "sys/proc.h"
#include "py/pycode.h"
#include "py/pyruntime.h"
#include "util.h"

#include "check.h"


/*
 * A 3.12 module just started stands at its RESUME, line 0 in the line
 * table (compile("x=1\ny=2", "m", "exec")): shown at its first line.
 */
static void test_module_start_line(void)
{
	static const unsigned char table[] = {0xf0, 0x03, 0x01, 0x01, 0x01,
					      0x01, 0xd8, 0x02, 0x03, 0x80,
					      0x01, 0xd8, 0x02, 0x03, 0x81,
					      0x01};
	struct pycode_cache cache;
	struct pycode code;

	memset(&cache, 0, sizeof(cache));
	memset(&code, 0, sizeof(code));
	cache.kind = LINETABLE_LOCATIONS;
	code.linetable = (unsigned char *)table;
	code.linetable_len = sizeof(table);
	code.firstlineno = 1;
	code.last_addrq = -2;
	CHECK(linetable_addr2line(cache.kind, table, sizeof(table), 1, 0) ==
	      0);
	CHECK(pycode_line(&cache, &code, 0) == 1);
	CHECK(pycode_line(&cache, &code, 2) == 1);
	CHECK(pycode_line(&cache, &code, 6) == 2);
}

static void test_utf8(void)
{
	struct strbuf sb = STRBUF_INIT;
	const unsigned char latin1[] = {'c', 'a', 'f', 0xE9};
	const uint16_t ucs2[] = {0x51FD, 0x6570};
	const uint32_t ucs4[] = {0x1D523, 'x', 0xD800};

	CHECK(unicode_to_utf8(&sb, 1, latin1, 4) == 0);
	CHECK(!strcmp(sb.buf, "caf\xC3\xA9"));
	strbuf_reset(&sb);
	CHECK(unicode_to_utf8(&sb, 2, ucs2, 2) == 0);
	CHECK(!strcmp(sb.buf, "\xE5\x87\xBD\xE6\x95\xB0"));
	strbuf_reset(&sb);
	CHECK(unicode_to_utf8(&sb, 4, ucs4, 3) == 0);
	/* U+1D523, 'x', and a lone surrogate replaced by U+FFFD */
	CHECK(!strcmp(sb.buf, "\xF0\x9D\x94\xA3x\xEF\xBF\xBD"));
	CHECK(unicode_to_utf8(&sb, 3, ucs4, 1) == -1);
	strbuf_release(&sb);
}

static void test_maps(void)
{
	struct proc_maps maps = {0};
	const char *text =
	    "55d0c0a00000-55d0c0a01000 r--p 00000000 fd:01 1234   "
	    "/usr/bin/python3.11\n"
	    "7f0000000000-7f0000021000 rw-p 00000000 00:00 0 \n"
	    "7ffd1000-7ffd2000 rw-p 00000000 00:00 0     [stack]\n"
	    "7f1000000000-7f1000001000 r-xp 00001000 fd:01 99 "
	    "/lib/with space/libpython3.9.so.1.0 (deleted)\n";

	CHECK(proc_maps_parse(&maps, text) == 4);
	CHECK(maps.maps[0].start == 0x55d0c0a00000ULL);
	CHECK(maps.maps[0].end == 0x55d0c0a01000ULL);
	CHECK(maps.maps[0].inode == 1234);
	CHECK(!strcmp(maps.maps[0].path, "/usr/bin/python3.11"));
	CHECK(!strcmp(maps.maps[0].perms, "r--p"));
	CHECK(maps.maps[1].path == NULL);
	CHECK(!strcmp(maps.maps[2].path, "[stack]"));
	CHECK(maps.maps[3].offset == 0x1000);
	CHECK(!strcmp(maps.maps[3].path,
		      "/lib/with space/libpython3.9.so.1.0 (deleted)"));
	CHECK(proc_maps_parse(&maps, "garbage\n") == -1);
	proc_maps_release(&maps);
}

static void test_versions(void)
{
	CHECK(py_version_parse("3.11.7") == 0x030B07F0UL);
	CHECK(py_version_parse("3.12.0rc1") == 0x030C00C1UL);
	CHECK(py_version_parse("3.13.0a4") == 0x030D00A4UL);
	CHECK(py_version_parse("3.x") == 0);
	CHECK(is_version_string("3.9.18", 6));
	CHECK(is_version_string("3.12.0rc1", 9));
	CHECK(is_version_string("2.7.18+", 7));
	CHECK(!is_version_string("3.9", 3));
	CHECK(!is_version_string("1.2.3", 5));
	CHECK(!is_version_string("3.9.18 (main", 12));
}

static void test_select(void)
{
	size_t i;

	/*
	 * Every table's own version selects it, or a narrower table (a
	 * patch release's) inside its range; and so does a later patch.
	 */
	for (i = 0; i < py_offset_tables_count; i++) {
		const struct py_offsets *t = py_offset_tables[i];
		unsigned long probes[2] = {t->hexversion,
					   t->first_hex | (t->last_hex & 0x1FF0)};
		size_t k;

		CHECK(t->first_hex <= t->hexversion &&
		      t->hexversion <= t->last_hex);
		for (k = 0; k < 2; k++) {
			const struct py_offsets *got =
			    py_offsets_select(py_offset_tables,
					      py_offset_tables_count, probes[k],
					      (int)t->free_threaded);

			CHECK(got && got->first_hex <= probes[k] &&
			      probes[k] <= got->last_hex &&
			      got->free_threaded == t->free_threaded &&
			      got->first_hex >= t->first_hex &&
			      got->last_hex <= t->last_hex);
		}
	}
	CHECK(py_offsets_select(py_offset_tables, py_offset_tables_count,
				0x020712F0UL, 0) == NULL);
	/* No free-threaded build before 3.13: never a table for one. */
	CHECK(py_offsets_select(py_offset_tables, py_offset_tables_count,
				0x030C01F0UL, 1) == NULL);
	{
		/* A patch release's own table wins inside its range only. */
		struct py_offsets minor = {.first_hex = 0x030B0000UL,
					   .last_hex = 0x030BFFFFUL};
		struct py_offsets patch = {.first_hex = 0x030B0700UL,
					   .last_hex = 0x030B07FFUL};
		const struct py_offsets *both[] = {&minor, &patch};

		CHECK(py_offsets_select(both, 2, 0x030B07F0UL, 0) == &patch);
		CHECK(py_offsets_select(both, 2, 0x030B06F0UL, 0) == &minor);
		CHECK(py_offsets_select(both, 2, 0x030B08F0UL, 0) == &minor);
		CHECK(py_offsets_select(both, 2, 0x030C00F0UL, 0) == NULL);
	}
	{
		/* A free-threaded build's table serves only such builds. */
		struct py_offsets gil = {.first_hex = 0x030E0000UL,
					 .last_hex = 0x030EFFFFUL};
		struct py_offsets ft = {.first_hex = 0x030E0000UL,
					.last_hex = 0x030EFFFFUL,
					.free_threaded = 1};
		const struct py_offsets *both[] = {&gil, &ft};

		CHECK(py_offsets_select(both, 2, 0x030E07F0UL, 0) == &gil);
		CHECK(py_offsets_select(both, 2, 0x030E07F0UL, 1) == &ft);
		CHECK(py_offsets_select(both, 1, 0x030E07F0UL, 1) == NULL);
	}
}

/*
 * Build a raw _Py_DebugOffsets from table t, as a target of hexversion
 * laid out like t would hold it.
 */
static void debug_raw(const struct py_offsets *t, unsigned long hexversion,
		      unsigned char *raw, size_t len)
{
	uint64_t v = hexversion;
	size_t i;

	memset(raw, 0, len);
	memcpy(raw, "xdebugpy", 8);
	memcpy(raw + t->debug_version_at, &v, 8);
	for (i = 0; i < t->nr_debug_fields; i++) {
		long val;

		memcpy(&val, (const char *)t + t->debug_fields[i].field_at,
		       sizeof(val));
		/* The target gives the GIL's fields from the interpreter. */
		if (t->debug_fields[i].field_at ==
			    offsetof(struct py_offsets, gil_locked) ||
		    t->debug_fields[i].field_at ==
			    offsetof(struct py_offsets, gil_last_holder))
			val += t->interp_gil;
		v = (uint64_t)val;
		memcpy(raw + t->debug_fields[i].debug_at, &v, 8);
	}
}

/* The raw table's entry for the py_offsets field at field_at. */
static long debug_at_of(const struct py_offsets *t, size_t field_at)
{
	size_t i;

	for (i = 0; i < t->nr_debug_fields; i++)
		if (t->debug_fields[i].field_at == field_at)
			return t->debug_fields[i].debug_at;
	return -1;
}

static void put_u64(unsigned char *raw, long at, uint64_t v)
{
	if (at >= 0)
		memcpy(raw + at, &v, 8);
}

/* One known layout: read back whole, and each kind of damage refused. */
static void check_debug_layout(const struct py_offsets *t)
{
	unsigned char raw[4096], bad[4096];
	struct py_offsets out;
	size_t len = (size_t)t->debug_size;
	long at;

	CHECK(len <= sizeof(raw));
	if (len > sizeof(raw))
		return;
	debug_raw(t, t->hexversion, raw, sizeof(raw));
	CHECK(py_offsets_from_debug(&out, t, raw, len) == 0);
	CHECK(out.hexversion == t->hexversion);
	CHECK(out.tstate_next == t->tstate_next);
	CHECK(out.tstate_current_frame == t->tstate_current_frame);
	CHECK(out.code_qualname == t->code_qualname);
	CHECK(out.code_linetable == t->code_linetable);
	CHECK(out.iframe_previous == t->iframe_previous);
	/* 3.15 publishes where each thread's base frame is. */
	CHECK(out.tstate_base_frame == t->tstate_base_frame);
	CHECK(out.iframe_code == t->iframe_code);
	CHECK(out.tstate_datastack_top == OFF_NONE);
	CHECK(out.compact_size == t->compact_size);
	CHECK(out.interp_gil == t->interp_gil);
	CHECK(out.gil_locked == t->gil_locked);
	CHECK(out.gil_last_holder == t->gil_last_holder);
	CHECK(out.interp_gil_ptr == OFF_NONE);

	/* A wrong cookie. */
	memcpy(bad, raw, sizeof(bad));
	bad[0] = 'X';
	CHECK(py_offsets_from_debug(&out, t, bad, len) == -1);
	/* A copy shorter than the layout. */
	CHECK(py_offsets_from_debug(&out, t, raw, len - 8) == -1);
	/* An absurd value (a torn read, or a layout not understood). */
	memcpy(bad, raw, sizeof(bad));
	put_u64(bad, t->debug_fields[0].debug_at, 1ULL << 40);
	CHECK(py_offsets_from_debug(&out, t, bad, len) == -1);
	/* An offset past the end of its struct. */
	memcpy(bad, raw, sizeof(bad));
	at = debug_at_of(t, offsetof(struct py_offsets, tstate_next));
	CHECK(at >= 0);
	put_u64(bad, at, (uint64_t)t->tstate_size);
	CHECK(py_offsets_from_debug(&out, t, bad, len) == -1);
	memcpy(bad, raw, sizeof(bad));
	at = debug_at_of(t, offsetof(struct py_offsets, iframe_previous));
	CHECK(at >= 0);
	put_u64(bad, at, (uint64_t)t->iframe_size + 64);
	CHECK(py_offsets_from_debug(&out, t, bad, len) == -1);
	/* Garbage throughout, past the cookie. */
	memset(bad + 8, 0xa5, len - 8);
	CHECK(py_offsets_from_debug(&out, t, bad, len) == -1);
}

/*
 * Every table that knows a _Py_DebugOffsets layout (3.13+): each reads
 * back from a raw table laid out as its version lays it out, and refuses
 * damage.  A version newer than every table is read with the newest
 * table's layout; each known version with its own.
 */
static void test_debug_offsets(void)
{
	const struct py_offsets *newest =
	    py_offset_tables[py_offset_tables_count - 1];
	unsigned long later = (newest->hexversion & 0xFFFF0000UL) + 0x10000UL;
	unsigned char raw[4096];
	struct py_offsets out;
	size_t i, layouts = 0;

	for (i = 0; i < py_offset_tables_count; i++) {
		const struct py_offsets *t = py_offset_tables[i];

		if (t->debug_size == OFF_NONE)
			continue;
		layouts++;
		check_debug_layout(t);
		CHECK(py_offsets_newest_upto(py_offset_tables,
					     py_offset_tables_count,
					     t->hexversion,
					     t->free_threaded) == t);
	}
	if (!layouts) {
		printf("skip: no table has a _Py_DebugOffsets layout\n");
		return;
	}
	CHECK(py_offsets_newest_upto(py_offset_tables, py_offset_tables_count,
				     later, newest->free_threaded) == newest);
	CHECK(py_offsets_newest_upto(py_offset_tables, py_offset_tables_count,
				     0x02070000UL, 0) == NULL);
	/* A later version, laid out as the newest: read as the newest. */
	if (newest->debug_size != OFF_NONE) {
		debug_raw(newest, later, raw, sizeof(raw));
		CHECK(py_offsets_from_debug(&out, newest, raw,
					    (size_t)newest->debug_size) == 0);
		CHECK(out.hexversion == later);
		CHECK(out.tstate_current_frame ==
		      newest->tstate_current_frame);
	}
	printf("test-pycode: %zu _Py_DebugOffsets layouts checked\n", layouts);
}

static int hexval(int c)
{
	return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
}

/*
 * Each line: KIND FIRSTLINENO HEXTABLE then pairs OFFSET:LINE.
 * KIND is lnotab, 310 or locations.
 */
static int check_vectors(const char *path)
{
	FILE *fp = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0, codes = 0, points = 0;

	if (!fp) {
		perror(path);
		return 2;
	}
	while (getline(&line, &cap, fp) > 0) {
		char kind[16], *p, *hex;
		int first, n = 0;
		enum linetable_kind k;
		unsigned char *table;
		size_t len, i;

		if (sscanf(line, "%15s %d %n", kind, &first, &n) < 2)
			continue;
		k = !strcmp(kind, "lnotab") ? LINETABLE_LNOTAB
		    : !strcmp(kind, "310")  ? LINETABLE_310
					    : LINETABLE_LOCATIONS;
		hex = line + n;
		p = strchr(hex, ' ');
		if (!p)
			continue;
		*p++ = '\0';
		if (!strcmp(hex, "-"))
			hex[0] = '\0';
		len = strlen(hex) / 2;
		table = xmalloc(len + 1);
		for (i = 0; i < len; i++)
			table[i] = (unsigned char)(hexval(hex[2 * i]) << 4 |
						   hexval(hex[2 * i + 1]));
		codes++;
		while (*p) {
			long off;
			int want, got, used = 0;

			if (sscanf(p, "%ld:%d %n", &off, &want, &used) < 2)
				break;
			p += used;
			got = linetable_addr2line(k, table, len, first, off);
			points++;
			if (got != want) {
				fprintf(stderr,
					"%s table (first line %d) at offset "
					"%ld: got line %d, want %d\n",
					kind, first, off, got, want);
				failed++;
			}
		}
		free(table);
	}
	free(line);
	fclose(fp);
	printf("checked %zu offsets in %zu code objects\n", points, codes);
	if (!codes)
		failed++;
	return failed ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--vectors"))
		return check_vectors(argv[2]);
	test_utf8();
	test_module_start_line();
	test_maps();
	test_versions();
	test_select();
	test_debug_offsets();
	if (failed) {
		fprintf(stderr, "test-pycode: %d checks failed\n", failed);
		return 1;
	}
	printf("test-pycode: all checks passed\n");
	return 0;
}
