/* SPDX-License-Identifier: MIT */
/* Reading back the speedscope files spyc record writes, for spyc merge. */
#ifndef SPYC_MERGE_READ_H
#define SPYC_MERGE_READ_H

#include <stddef.h>

#include <cjson/cJSON.h>

/*
 * One profile file, checked: every sample and event names a frame of
 * shared.frames, samples and weights pair up.  The pointers point into
 * root, which the struct owns.
 */
struct merge_input {
	const char *path;
	cJSON *root;
	cJSON *frames;	 /* shared.frames: {name, file?, line?} */
	cJSON *profiles; /* speedscope profiles, CPU threads first */
	size_t nr_frames;
	/* Frame i's name, file ("" if none), line (0 if none). */
	const char **frame_names;
	const char **frame_files;
	int *frame_lines;
	size_t nr_profiles;
	size_t cpu_profiles; /* the first this many are CPU threads */
	const char *unit;    /* the CPU profiles' unit; NULL if none */
	/* From spyc_process, when record wrote one. */
	int has_process;
	int has_rank;
	long rank;
	long pid;
	const char *host;    /* or NULL */
	const char *command; /* or NULL */
	double rate_hz;	     /* the CPU samples' rate; 0 if not said */
};

/*
 * Read and check path (a speedscope file written by spyc record) into in.
 * Returns 0; or -1 with a one-line reason naming path (no "spyc: ") in
 * why[size], and in left empty.  merge_input_release() frees.
 */
int merge_input_read(struct merge_input *in, const char *path, char *why,
		     size_t size);

void merge_input_release(struct merge_input *in);

#endif
