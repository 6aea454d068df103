/* SPDX-License-Identifier: MIT */
/* Profile writers: speedscope JSON, folded stacks, SVG flame graph, pprof,
 * Chrome trace, HTML viewer. */
#ifndef SPYC_OUTPUT_H
#define SPYC_OUTPUT_H

#include <stdio.h>
#include <sys/types.h>

#include "profile/stacks.h"

struct cJSON;
struct strbuf;
struct gpuprof;
struct source_roots;
struct source_files;
struct source_id;
struct timeline;

/*
 * The process a profile is of: speedscope's "spyc_process" member, which
 * spyc merge reads.  command and host may be NULL; rank is a decimal MPI
 * rank taken from the environment variable rank_var, or NULL.
 */
struct profile_process {
	pid_t pid;
	const char *command;
	const char *host;
	const char *rank;
	const char *rank_var;
};

/* What outputs say about the whole profile. */
struct profile_meta {
	const char *title; /* e.g. "python train.py (pid 123)" */
	const char *python_version;
	double rate_hz;	   /* requested sampling rate */
	double duration_s; /* wall time sampled */
	int thread_prefix; /* folded/SVG: put the thread as the root */
	/*
	 * --gpu, when the agent collected: activities attributed
	 * (gpuprof_attribute() done with the same stacks), else NULL.
	 * Speedscope adds its profiles; folded adds its stacks and gives
	 * every weight in microseconds.
	 */
	const struct gpuprof *gpu;
	/* HTML: the GPU part of a page where gpu is NULL (spyc merge's). */
	const struct html_gpu *html_gpu;
	/* Speedscope: who was profiled, for spyc merge; NULL: not said. */
	const struct profile_process *process;
	long pid;		/* the target's; 0 when unknown */
	uint64_t start_unix_ns; /* sampling began (CLOCK_REALTIME); 0 */
	int idle;		/* idle threads kept: time is wall time */
	/*
	 * spyc diff's HTML page: thread 0's stacks are BASE's, the other
	 * thread's NEW's, drawn coloured by the change (out/html.c).
	 */
	int diff;
	/*
	 * The samples in time order (cmd/record.c keeps it for the Chrome
	 * trace only, which cannot be written without it), else NULL.
	 */
	const struct timeline *timeline;
	/*
	 * The directories the short file names are under (framename.h),
	 * for spyc report to find their sources; NULL or none: not said.
	 */
	const struct source_roots *source_roots;
	/*
	 * Which file each Python file name was when the target ran it
	 * (record's), for the sources outputs carry; NULL: not known.
	 */
	const struct source_files *source_files;
};

/*
 * Writers.  Each returns 0, or a negative errno code (-ENOMEM when the
 * profile could not be built), and reports nothing: write_file_atomic()
 * names the file.  They write to fp but do not close it;
 * write_file_atomic() checks the stream.
 */
int out_speedscope_write(FILE *fp, const struct stacks *st,
			 const struct profile_meta *meta);
int out_folded_write(FILE *fp, const struct stacks *st,
		     const struct profile_meta *meta);
int out_svg_write(FILE *fp, const struct stacks *st,
		  const struct profile_meta *meta);
/*
 * The GPU part of an HTML page: GPU time by stack (counts nanoseconds;
 * frames the CPU stacks' first, with the same ids, then the GPU ones;
 * all threads are drawn as one), and a row per process, device and
 * stream of the activities, each a span of time named by a frame of
 * those stacks.
 */
struct html_gpu_span {
	double start, seconds; /* from the start of sampling */
	uint32_t frame;
};

struct html_gpu_row {
	const char *process; /* a thread's process label; NULL: the target */
	uint32_t device, stream;
	uint64_t busy_ns;
	struct html_gpu_span *spans; /* by start */
	size_t nr_spans, alloc_spans;
};

struct html_gpu {
	const struct stacks *stacks;
	/* GPU idle time by stack (frames those of stacks), or NULL */
	const struct stacks *idle;
	const char *name;    /* of the GPU profile */
	const char *summary; /* the GPU summary's lines, or NULL */
	struct html_gpu_row *rows;
	size_t nr_rows, alloc_rows;
	size_t nr_spans; /* in all rows */
	double span_s;	 /* the latest end of a span */
};

/* Add a span to row r of pg (the rows' spans and span_s too). */
void html_gpu_span(struct html_gpu *pg, struct html_gpu_row *r, double start,
		   double seconds, uint32_t frame);
/* Free pg's rows and spans; pg is left empty. */
void html_gpu_release(struct html_gpu *pg);

/* A self-contained HTML page with an interactive viewer (out/html.c). */
int out_html_write(FILE *fp, const struct stacks *st,
		   const struct profile_meta *meta);
/*
 * A differential flame graph (spyc diff): st holds two profiles, BASE's
 * stacks as thread base_thread and NEW's as any other; NEW's are drawn,
 * each coloured by how its share changed from BASE's.
 */
int out_svg_write_diff(FILE *fp, const struct stacks *st, uint32_t base_thread,
		       const struct profile_meta *meta);
/* pprof's profile.proto, gzipped.  CPU samples only (no --gpu data). */
int out_pprof_write(FILE *fp, const struct stacks *st,
		    const struct profile_meta *meta);
/*
 * Chrome's Trace Event Format (JSON): each thread's stacks over time.
 * Needs meta->timeline (-EINVAL without one).
 */
int out_chrome_write(FILE *fp, const struct stacks *st,
		     const struct profile_meta *meta);

enum output_format {
	FORMAT_NONE = 0,
	FORMAT_SPEEDSCOPE,
	FORMAT_FOLDED,
	FORMAT_SVG,
	FORMAT_PPROF,
	FORMAT_CHROME,
	FORMAT_HTML,
};

/*
 * Parse "speedscope", "folded", "svg", "pprof", "chrome" or "html";
 * FORMAT_NONE if unknown.
 */
enum output_format output_format_parse(const char *name);
/*
 * Guess from a file name: .json, .txt/.folded, .svg, .pb.gz/.pprof,
 * .trace.json, .html/.htm; FORMAT_NONE if none.
 */
enum output_format output_format_from_path(const char *path);
/* Write st to path in fmt, atomically.  0, or -1 after reporting. */
int output_write(const char *path, enum output_format fmt,
		 const struct stacks *st, const struct profile_meta *meta);

/*
 * For the writers: return s when it is valid UTF-8, else tmp->buf holding
 * a copy of s with each invalid byte replaced by U+FFFD, so that JSON and
 * XML outputs stay well-formed whatever bytes the target held.  tmp is
 * reset first; the result lives until s or tmp changes.
 */
const char *output_utf8(const char *s, struct strbuf *tmp);

/*
 * For the writers: the function of each of st's frames, frames with the
 * same name and file being one function (at different lines): returns
 * an array of st->nr_frames function numbers, 0 to *nr_functions - 1 in
 * the order first seen, which the caller frees.  *first_frame (the
 * caller frees it too) gets each function's first frame, where its name
 * and file are.
 */
uint32_t *output_frame_functions(const struct stacks *st, size_t *nr_functions,
				 uint32_t **first_frame);

/* The member JSON outputs say meta->source_roots in; and pprof's comment. */
#define OUTPUT_SOURCE_ROOTS "spyc_source_roots"
#define OUTPUT_SOURCE_ROOT_COMMENT "spyc source root: "

/*
 * For the JSON writers: add meta's source roots to obj as the array
 * OUTPUT_SOURCE_ROOTS (nothing when there are none).  0, or -1 out of
 * memory.
 */
int output_add_source_roots(struct cJSON *obj, const struct profile_meta *meta,
			    struct strbuf *tmp);

/* The member speedscope says its sources in: {file: {"text", ids}}. */
#define OUTPUT_SOURCES "spyc_sources"

/* A source file of a profile's frames (output_sources). */
struct output_source {
	const char *file;	    /* as the frames name it */
	uint64_t samples;	    /* of the stacks through it */
	const struct source_id *id; /* as the target saw it, or NULL */
	int changed;		    /* found, but not the file the target ran */
	char *text; /* NULL: not read (not found, over the budget) */
};

/*
 * The source files of st's frames, busiest first, each read while the
 * texts stay within budget bytes (at most a MiB each), as report finds
 * them: through the target's root first while it runs (its own files,
 * in a container too), and only the very file the target ran where
 * meta->source_files knows it.  Returns how many; *out is freed with
 * output_sources_free().
 */
size_t output_sources(const struct stacks *st, const struct profile_meta *meta,
		      size_t budget, struct output_source **out);
void output_sources_free(struct output_source *src, size_t nr);

#endif
