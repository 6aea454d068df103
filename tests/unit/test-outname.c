/* SPDX-License-Identifier: MIT */
/* Unit tests of output name templates: %p, %r, %h, %% and bad escapes. */
#include <stdlib.h>
#include <string.h>

#include "out/outname.h"
#include "util.h"

#include "check.h"

/* Expand t; returns the result (static buffer) or NULL with why set. */
static const char *expand(const char *t, const struct outname_vars *v,
			  char *why, size_t size)
{
	static struct strbuf sb = STRBUF_INIT;

	why[0] = '\0';
	if (outname_expand(t, v, &sb, why, size))
		return NULL;
	return sb.buf;
}

static void test_expand(void)
{
	struct outname_vars v = {1234, "7", "node-3"};
	char why[256];
	const char *s;

	s = expand("prof.%r.json", &v, why, sizeof(why));
	CHECK(s && !strcmp(s, "prof.7.json"));
	s = expand("%h/%p-%r.svg", &v, why, sizeof(why));
	CHECK(s && !strcmp(s, "node-3/1234-7.svg"));
	s = expand("100%%.json", &v, why, sizeof(why));
	CHECK(s && !strcmp(s, "100%.json"));
	s = expand("%%r%%p", &v, why, sizeof(why));
	CHECK(s && !strcmp(s, "%r%p"));
	s = expand("plain.json", &v, why, sizeof(why));
	CHECK(s && !strcmp(s, "plain.json"));
	s = expand("", &v, why, sizeof(why));
	CHECK(s && !strcmp(s, ""));

	/* The pid of a program not launched yet stays a %p. */
	v.pid = 0;
	s = expand("a.%p.%r.json", &v, why, sizeof(why));
	CHECK(s && !strcmp(s, "a.%p.7.json"));
}

static void test_errors(void)
{
	struct outname_vars v = {99, NULL, NULL};
	char why[256];

	CHECK(!expand("p.%r.json", &v, why, sizeof(why)));
	CHECK(strstr(why, "OMPI_COMM_WORLD_RANK") &&
	      strstr(why, "SLURM_PROCID") && strstr(why, "p.%r.json"));
	CHECK(!expand("p.%h.json", &v, why, sizeof(why)));
	CHECK(strstr(why, "host"));
	CHECK(!expand("p.%x.json", &v, why, sizeof(why)));
	CHECK(strstr(why, "'%x'"));
	CHECK(!expand("p.json%", &v, why, sizeof(why)));
	CHECK(strstr(why, "lone"));
	/* Without %r or %h, no rank or host is needed. */
	CHECK(expand("p.%p.json", &v, why, sizeof(why)) != NULL);
}

static void test_uses(void)
{
	CHECK(outname_uses("a%rb", 'r'));
	CHECK(!outname_uses("a%%rb", 'r'));
	CHECK(outname_uses("a%%%rb", 'r'));
	CHECK(!outname_uses("a%", 'r'));
	CHECK(outname_uses("%p", 'p'));
	CHECK(!outname_uses("%h", 'p'));
}

static void test_rank_env(void)
{
	const char *var = NULL, *r;
	size_t i;

	for (i = 0; outname_rank_vars[i]; i++)
		unsetenv(outname_rank_vars[i]);
	CHECK(outname_rank_from_env(&var) == NULL);
	setenv("SLURM_PROCID", "5", 1);
	r = outname_rank_from_env(&var);
	CHECK(r && !strcmp(r, "5") && !strcmp(var, "SLURM_PROCID"));
	/* Open MPI's comes first; an empty one counts as unset. */
	setenv("PMI_RANK", "", 1);
	setenv("OMPI_COMM_WORLD_RANK", "2", 1);
	r = outname_rank_from_env(&var);
	CHECK(r && !strcmp(r, "2") && !strcmp(var, "OMPI_COMM_WORLD_RANK"));

	CHECK(outname_rank_valid("0"));
	CHECK(outname_rank_valid("12"));
	CHECK(!outname_rank_valid(""));
	CHECK(!outname_rank_valid("-1"));
	CHECK(!outname_rank_valid("1/2"));
	CHECK(!outname_rank_valid("12345678901"));
}

int main(void)
{
	test_expand();
	test_errors();
	test_uses();
	test_rank_env();
	return failed;
}
