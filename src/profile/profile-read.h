/* SPDX-License-Identifier: MIT */
/* Reading a profile spyc wrote (speedscope JSON, folded stacks, pprof, a
 * Chrome trace or an HTML page) back into struct stacks, for commands that
 * work on files: report, diff. */
#ifndef SPYC_PROFILE_READ_H
#define SPYC_PROFILE_READ_H

#include <stddef.h>

#include "profile/source.h"
#include "profile/stacks.h"

/* What the counts of a profile's stacks stand for. */
enum profile_unit {
	PROFILE_UNIT_SAMPLES, /* counts are samples (or weights without unit) */
	PROFILE_UNIT_SECONDS, /* counts are nanoseconds */
};

/* Which speedscope profiles to read (flags for profile_read()). */
#define PROFILE_READ_CPU 1u /* profiles whose name does not start "GPU" */
#define PROFILE_READ_GPU 2u /* spyc --gpu's: names that start "GPU" */
/* spyc --gpu's GPU idle time by Python stack (PROFILE_GPU_IDLE_NAME),
 * which PROFILE_READ_GPU leaves out */
#define PROFILE_READ_GPU_IDLE 4u

/*
 * How the name of spyc record --gpu's profile of GPU time by launching
 * stack begins (gpuprof_stacks_name()).
 */
#define PROFILE_GPU_STACKS_NAME "GPU time by launching stack"
/* The name of its profile of GPU idle time by Python stack. */
#define PROFILE_GPU_IDLE_NAME "GPU idle by Python stack"
/*
 * spyc --gpu's GPU time of CUDA graph kernels by the Python stack that
 * made their node (a stream capture), beside their launch's: the same
 * time again, which report leaves out.
 */
#define PROFILE_GPU_CAPTURE_NAME "GPU time of graph kernels by capturing stack"

/* Where the profile came from. */
enum profile_source {
	PROFILE_SPEEDSCOPE,
	PROFILE_FOLDED,
	PROFILE_PPROF,
	PROFILE_CHROME,
	PROFILE_HTML, /* spyc's HTML page: the data inside it */
};

/*
 * A profile read from a file.
 *
 * Threads: a speedscope profile, or a folded file's thread prefix (spyc
 * record --threads), is a thread of stacks.  Its label is parsed back
 * into what stacks_thread_label() made it from: "thread 0xIDENT (tid N)"
 * gives ident and tid; "NAME (tid N)" gives name and tid, and an ident
 * that is the thread's order in the file (1, 2, ...).  So
 * stacks_thread_label() gives the label as the file has it.  After
 * spyc record --subprocesses a label begins with the process's,
 * "COMMAND (pid N)" (speedscope: "COMMAND (pid N): LABEL"; folded: an
 * element of its own before the thread's), which becomes the thread's
 * process, so that stacks_thread_full_label() gives the profile's name.
 * A folded file without prefixes has one thread, named "all threads",
 * ident 0.
 *
 * Frames: "name (file:line)", "name (file)" and "name" in folded files;
 * speedscope's name, file and line.  Stand-ins such as "[K frames not
 * read]" are frames with no file and line 0.  Folded's "[empty]" is a
 * stack of no frames.
 *
 * Counts: samples for folded files and speedscope unit "none" (weights
 * rounded to whole numbers); nanoseconds for speedscope time units.  A
 * folded file of spyc record --gpu weighs microseconds, which the file
 * does not say: it reads as samples.
 *
 * Speedscope "evented" profiles (spyc's GPU streams) become stacks too:
 * the time between two events counts for the frames open then.
 */
struct profile {
	struct stacks stacks;
	enum profile_source source;
	enum profile_unit unit;
	int thread_prefix; /* folded: lines begin with the thread */
	char *title;	   /* speedscope's "name", or NULL */
	/*
	 * The rate a time profile's samples were taken at, where the file
	 * says it (speedscope: spyc_process.rate_hz; pprof: its period in
	 * nanoseconds): a CPU sample weighs 1 / rate_hz seconds, so the
	 * samples behind a time are known.  0 where unknown.
	 */
	double rate_hz;
	size_t nr_profiles; /* speedscope: profiles read */
	size_t nr_skipped;  /* speedscope: profiles not selected by flags */
	/*
	 * speedscope: GPU streams' timelines not read, whose time the GPU
	 * time by launching stack holds (read with PROFILE_READ_GPU)
	 */
	size_t nr_streams_skipped;
	size_t nr_idle_skipped; /* of nr_skipped, GPU idle time profiles */
	/*
	 * The directories spyc record took off the file names (what it
	 * wrote as spyc_source_roots, or pprof's comments), where a short
	 * name's source is: *roots[0..nr_roots - 1].
	 */
	char **roots;
	size_t nr_roots, alloc_roots;
	/*
	 * speedscope's spyc_sources: the source files as the target ran
	 * them, each with its text where the file holds it, and which file
	 * it was (so that another at its path is not taken for it).
	 */
	struct profile_source_file {
		char *file;
		char *text; /* NULL: not in the profile */
		struct source_id id;
		int has_id;
	} * sources;
	size_t nr_sources, alloc_sources;
};

/* p's spyc_sources entry for file, or NULL. */
const struct profile_source_file *profile_source(const struct profile *p,
						 const char *file);

void profile_init(struct profile *p);
/* Note dir as one of p's source roots (up to SOURCE_ROOTS_MAX). */
void profile_add_root(struct profile *p, const char *dir);
/* Free everything p owns; p is left empty and may be reused. */
void profile_release(struct profile *p);

/*
 * Read the profile at path into p (initialised, empty), telling the
 * format from the content: JSON for speedscope, else folded lines.
 * flags: PROFILE_READ_CPU and/or PROFILE_READ_GPU (0 means CPU) select
 * speedscope profiles; folded files have no GPU marks and are read whole.
 * Returns 0, or -1 after reporting one line that names path: cannot be
 * read, not a profile (with the line or member at fault), or no samples
 * in the profiles selected.  On error p holds what was read so far;
 * profile_release() it either way.
 */
int profile_read(struct profile *p, const char *path, unsigned flags);

/*
 * As profile_read(), from len bytes of data (need not be NUL-terminated);
 * name is what error lines call it.
 */
int profile_read_mem(struct profile *p, const char *name, const char *data,
		     size_t len, unsigned flags);

/* A count of p's stacks in p's unit: seconds or samples. */
double profile_value(const struct profile *p, uint64_t count);

#endif
