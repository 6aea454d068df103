/* SPDX-License-Identifier: MIT */
/* Output file name templates, so that each MPI rank writes its own file. */
#include "out/outname.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

const char *const outname_rank_vars[] = {
    "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID", NULL,
};

const char *outname_rank_from_env(const char **var)
{
	size_t i;

	for (i = 0; outname_rank_vars[i]; i++) {
		const char *v = getenv(outname_rank_vars[i]);

		if (v && *v) {
			if (var)
				*var = outname_rank_vars[i];
			return v;
		}
	}
	return NULL;
}

int outname_rank_valid(const char *rank)
{
	/* Ranks are ints: 10 digits is more than any job has. */
	size_t n = strspn(rank, "0123456789");

	return n > 0 && n <= 10 && !rank[n];
}

int outname_uses(const char *template, int c)
{
	const char *p;

	for (p = template; *p; p++) {
		if (*p != '%')
			continue;
		if (!p[1])
			return 0;
		if (p[1] == c)
			return 1;
		p++; /* skip the escape's letter, %% included */
	}
	return 0;
}

int outname_expand(const char *template, const struct outname_vars *vars,
		   struct strbuf *out, char *why, size_t size)
{
	const char *p;

	strbuf_reset(out);
	for (p = template; *p; p++) {
		if (*p != '%') {
			strbuf_addch(out, *p);
			continue;
		}
		switch (p[1]) {
		case '%':
			strbuf_addch(out, '%');
			break;
		case 'p':
			if (vars->pid > 0)
				strbuf_addf(out, "%d", (int)vars->pid);
			else
				strbuf_addstr(out, "%p");
			break;
		case 'r':
			if (!vars->rank) {
				snprintf(why, size,
					 "%%r in '%s' needs an MPI rank, but "
					 "none of OMPI_COMM_WORLD_RANK, "
					 "PMI_RANK, PMIX_RANK, SLURM_PROCID "
					 "is set",
					 template);
				return -1;
			}
			strbuf_addstr(out, vars->rank);
			break;
		case 'h':
			if (!vars->host || !*vars->host) {
				snprintf(why, size,
					 "%%h in '%s': the host name is not "
					 "known",
					 template);
				return -1;
			}
			strbuf_addstr(out, vars->host);
			break;
		case '\0':
			snprintf(why, size,
				 "'%s' ends in a lone '%%' (write %%%% for "
				 "a '%%')",
				 template);
			return -1;
		default:
			snprintf(why, size,
				 "unknown escape '%%%c' in '%s' (%%p pid, %%r "
				 "MPI rank, %%h host, %%%% a '%%')",
				 p[1], template);
			return -1;
		}
		p++;
	}
	return 0;
}
