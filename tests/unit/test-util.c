/* SPDX-License-Identifier: MIT */
/* Unit tests of util helpers: cutting UTF-8 names to a buffer. */
#include <string.h>

#include "util.h"

#include "check.h"

static void test_utf8_truncate(void)
{
	char buf[8];
	/* "ab" then U+540D (3 bytes) then U+015D (2 bytes): 7 bytes */
	const char *s = "ab\xe5\x90\x8d\xc5\x9d";

	memset(buf, 'x', sizeof(buf));
	utf8_truncate(buf, sizeof(buf), s);
	CHECK(!strcmp(buf, s));
	/* 6 bytes of room would cut U+015D in half: it goes whole. */
	utf8_truncate(buf, 6, s);
	CHECK(!strcmp(buf, "ab\xe5\x90\x8d"));
	/* 4 bytes of room would cut U+540D: only "ab" fits. */
	utf8_truncate(buf, 4, s);
	CHECK(!strcmp(buf, "ab"));
	utf8_truncate(buf, 3, s);
	CHECK(!strcmp(buf, "ab"));
	utf8_truncate(buf, 1, s);
	CHECK(buf[0] == '\0');
	utf8_truncate(buf, sizeof(buf), NULL);
	CHECK(buf[0] == '\0');
	/* A name that starts with a character too wide for the room. */
	utf8_truncate(buf, 3, "\xe5\x90\x8d");
	CHECK(buf[0] == '\0');
}

int main(void)
{
	test_utf8_truncate();
	return failed;
}
