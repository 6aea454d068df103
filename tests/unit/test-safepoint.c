/* SPDX-License-Identifier: MIT */
/* Unit tests of the safe-point check's call recognizer. */
#include <string.h>

#include "sys/safepoint.h"

#include "check.h"

/* code as the bytes that end just before a return address. */
static int ends_with(const unsigned char *insn, size_t len)
{
	unsigned char code[8];

	memset(code, 0x90, sizeof(code)); /* nop */
	memcpy(code + 8 - len, insn, len);
	return follows_call(code);
}

int main(void)
{
	static const unsigned char direct[] = {0xe8, 0x10, 0x20, 0x30, 0x40};
	static const unsigned char reg[] = {0xff, 0xd0};	  /* *%rax */
	static const unsigned char rex_reg[] = {0x41, 0xff, 0xd3}; /* *%r11 */
	static const unsigned char mem8[] = {0xff, 0x50, 0x18};	  /* 0x18(%rax) */
	static const unsigned char rip[] = {0xff, 0x15, 1, 2, 3, 4};
	static const unsigned char mem[] = {0xff, 0x10};	  /* *(%rax) */
	static const unsigned char jmp_reg[] = {0xff, 0xe0};	  /* jmp *%rax */
	static const unsigned char mov[] = {0x48, 0x89, 0xc7};	  /* mov */
	static const unsigned char push[] = {0xff, 0x30};	  /* push (%rax) */

	CHECK(ends_with(direct, sizeof(direct)));
	CHECK(ends_with(reg, sizeof(reg)));
	CHECK(ends_with(rex_reg, sizeof(rex_reg)));
	CHECK(ends_with(mem8, sizeof(mem8)));
	CHECK(ends_with(rip, sizeof(rip)));
	CHECK(ends_with(mem, sizeof(mem)));
	CHECK(!ends_with(jmp_reg, sizeof(jmp_reg)));
	CHECK(!ends_with(mov, sizeof(mov)));
	CHECK(!ends_with(push, sizeof(push)));
	return failed;
}
