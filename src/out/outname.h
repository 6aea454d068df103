/* SPDX-License-Identifier: MIT */
/* Output file name templates: %p pid, %r MPI rank, %h host, %% a '%'. */
#ifndef SPYC_OUTNAME_H
#define SPYC_OUTNAME_H

#include <stddef.h>
#include <sys/types.h>

struct strbuf;

/*
 * The environment variables that hold a process's rank, in the order
 * they are tried: Open MPI, MPICH/Intel MPI (PMI), PMIx, Slurm's srun.
 * A NULL-terminated list, also for error messages.
 */
extern const char *const outname_rank_vars[];

/* What a template's escapes stand for. */
struct outname_vars {
	pid_t pid;	  /* %p; 0: not known yet, %p is kept as it is */
	const char *rank; /* %r, digits only; NULL: no rank known */
	const char *host; /* %h; NULL: no host name known */
};

/*
 * The rank of this process from the first of outname_rank_vars set in
 * its environment, or NULL if none is set.  *var (if var is not NULL)
 * is set to that variable's name.  The value is returned as found; see
 * outname_rank_valid().
 */
const char *outname_rank_from_env(const char **var);

/* Whether a rank value is a decimal number (what a file name may hold). */
int outname_rank_valid(const char *rank);

/* Whether template uses escape c ('p', 'r' or 'h'), %% not counted. */
int outname_uses(const char *template, int c);

/*
 * Expand template into out (reset first).  Returns 0; or -1 with a
 * one-line reason (no "spyc: ", no newline) in why[size] for an escape
 * other than %p %r %h %%, a lone '%' at the end, %r with no rank or %h
 * with no host.
 */
int outname_expand(const char *template, const struct outname_vars *vars,
		   struct strbuf *out, char *why, size_t size);

#endif
