/* SPDX-License-Identifier: MIT */
/* spyc merge: one speedscope file from many (one per MPI rank or process),
 * and a report of the load imbalance between them. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "cmd/commands.h"
#include "out/output.h"
#include "profile/imbalance.h"
#include "profile/merge-read.h"
#include "profile/profile-read.h"
#include "profile/stacks.h"
#include "util.h"

/* From speedscope's file-format-schema.json, FileFormat.File.$schema. */
#define SPEEDSCOPE_SCHEMA "https://www.speedscope.app/file-format-schema.json"
#define DEFAULT_TOP 20

static const char usage_text[] =
    "usage: spyc merge [options] FILE... [-o OUT]\n"
    "\n"
    "Merge speedscope profiles written by spyc record (one per MPI rank or\n"
    "process, e.g. from 'spyc record -o prof.%r.json') and report the load\n"
    "imbalance between them: per function, its time in each process (total:\n"
    "with the function anywhere on the stack; own: running itself), the\n"
    "minimum, mean, maximum and standard deviation across processes, the\n"
    "slowest process and those that never ran it; largest max - mean first.\n"
    "Processes are named by the MPI rank record found in its environment,\n"
    "else by pid, else by file name.\n"
    "\n"
    "  -o, --output OUT  also write one speedscope file with every input's\n"
    "                    profiles, each named for its process, e.g.\n"
    "                    'rank 2 (pid 123): MainThread (tid 123)'; named\n"
    "                    .html, a page of their CPU samples with a group\n"
    "                    of threads per process, and of --gpu runs' GPU\n"
    "                    time and streams by process\n"
    "      --top N       report the N most imbalanced functions (default\n"
    "                    20; 0: all)\n"
    "      --json        print the report as JSON\n"
    "      --gpu         the imbalance of the GPU time by launching stack\n"
    "                    of spyc record --gpu runs instead of CPU samples\n"
    "  -h, --help        this help\n"
    "\n"
    "exit codes: 0 ok, 2 failed (a file unreadable or not spyc's), 64 usage\n"
    "error\n";

struct merge_opts {
	const char *output;
	size_t top;
	int json;
	int gpu; /* --gpu: the GPU time by launching stack, not CPU samples */
	char **files;
	size_t nr_files;
};

/* An input and the process it is of. */
struct unit {
	struct merge_input in;
	char label[128];     /* "rank 2", "pid 123" or the file name */
	size_t index;	     /* on the command line */
	uint32_t *frame_map; /* input frame -> merged frame */
	uint32_t *func_map;  /* input frame -> imbalance function */
};

/*
 * The same profile given twice (by two names or the same one) would
 * count its samples twice and make one rank look like two: a usage
 * error.  Files that cannot be read are left to the reader's error.
 */
static void refuse_repeated_files(char **files, size_t n)
{
	struct stat a, b;
	size_t i, j;

	for (i = 0; i < n; i++) {
		if (stat(files[i], &a) || !S_ISREG(a.st_mode))
			continue;
		for (j = 0; j < i; j++) {
			if (stat(files[j], &b) || a.st_dev != b.st_dev ||
			    a.st_ino != b.st_ino)
				continue;
			fprintf(stderr,
				"spyc: '%s' and '%s' are the same profile: "
				"give each once\n",
				files[j], files[i]);
			exit(EXIT_USAGE);
		}
	}
}

static void parse_options(struct merge_opts *o, int argc, char **argv)
{
	enum { OPT_TOP = 256, OPT_JSON, OPT_GPU };
	static const struct option options[] = {
	    {"output", required_argument, NULL, 'o'},
	    {"top", required_argument, NULL, OPT_TOP},
	    {"json", no_argument, NULL, OPT_JSON},
	    {"gpu", no_argument, NULL, OPT_GPU},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	char *end;
	int c;

	memset(o, 0, sizeof(*o));
	o->top = DEFAULT_TOP;
	while ((c = getopt_long(argc, argv, "o:h", options, NULL)) != -1) {
		switch (c) {
		case 'o':
			o->output = optarg;
			break;
		case OPT_TOP:
			errno = 0;
			o->top = strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || *optarg == '-') {
				fprintf(stderr,
					"spyc: --top '%s': not a whole number "
					"of 0 or more\n",
					optarg);
				exit(EXIT_USAGE);
			}
			break;
		case OPT_JSON:
			o->json = 1;
			break;
		case OPT_GPU:
			o->gpu = 1;
			break;
		case 'h':
			fputs(usage_text, stdout);
			exit(EXIT_OK);
		default:
			fputs(usage_text, stderr);
			exit(EXIT_USAGE);
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "spyc: merge needs at least one profile "
				"(FILE...)\n");
		exit(EXIT_USAGE);
	}
	o->files = argv + optind;
	o->nr_files = (size_t)(argc - optind);
	refuse_repeated_files(o->files, o->nr_files);
}

/* Ranked inputs first, by rank; then the rest in the order given. */
static int compare_units(const void *a, const void *b)
{
	const struct unit *x = a, *y = b;

	if (x->in.has_rank != y->in.has_rank)
		return x->in.has_rank ? -1 : 1;
	if (x->in.has_rank && x->in.rank != y->in.rank)
		return x->in.rank < y->in.rank ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

static void label_units(struct unit *u, size_t n)
{
	size_t i, j;

	for (i = 0; i < n; i++) {
		const struct merge_input *in = &u[i].in;
		const char *base = strrchr(in->path, '/');

		if (in->has_rank)
			snprintf(u[i].label, sizeof(u[i].label), "rank %ld",
				 in->rank);
		else if (in->pid)
			snprintf(u[i].label, sizeof(u[i].label), "pid %ld",
				 in->pid);
		else
			utf8_truncate(u[i].label, sizeof(u[i].label),
				      base ? base + 1 : in->path);
	}
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			if (u[i].in.has_rank && u[j].in.has_rank &&
			    u[i].in.rank == u[j].in.rank)
				warning("%s is in both '%s' and '%s'",
					u[i].label, u[i].in.path, u[j].in.path);
}

/* Read every file (sorted by rank) or die naming the first bad one. */
static struct unit *read_units(const struct merge_opts *o)
{
	struct unit *u = xcalloc(o->nr_files, sizeof(*u));
	char why[1024];
	size_t i;

	for (i = 0; i < o->nr_files; i++) {
		if (merge_input_read(&u[i].in, o->files[i], why, sizeof(why)))
			die("%s", why);
		u[i].index = i;
	}
	for (i = 1; i < o->nr_files; i++)
		if (u[i].in.unit && u[0].in.unit &&
		    strcmp(u[i].in.unit, u[0].in.unit))
			die("'%s' weighs samples in '%s', '%s' in '%s'; "
			    "record both with spyc record",
			    u[i].in.path, u[i].in.unit, u[0].in.path,
			    u[0].in.unit);
	qsort(u, o->nr_files, sizeof(*u), compare_units);
	label_units(u, o->nr_files);
	return u;
}

/* Each input's frames as merged frames and as functions. */
static void map_frames(struct unit *u, size_t n, struct stacks *frames,
		       struct imbalance *im)
{
	size_t i, f;

	for (i = 0; i < n; i++) {
		const struct merge_input *in = &u[i].in;

		u[i].frame_map =
		    xmalloc((in->nr_frames + 1) * sizeof(*u[i].frame_map));
		u[i].func_map =
		    xmalloc((in->nr_frames + 1) * sizeof(*u[i].func_map));
		for (f = 0; f < in->nr_frames; f++) {
			u[i].frame_map[f] = stacks_frame(
			    frames, in->frame_names[f], in->frame_files[f],
			    in->frame_lines[f]);
			u[i].func_map[f] = imbalance_function(
			    im, in->frame_names[f], in->frame_files[f]);
		}
	}
}

/*
 * Count every CPU sample of unit k into im; with gpu, its GPU time by
 * launching stack instead.  Whether it had any to count.
 */
static int count_unit(struct unit *u, size_t k, struct imbalance *im, int gpu)
{
	const struct merge_input *in = &u->in;
	uint32_t *funcs = NULL;
	size_t alloc = 0, p = 0;
	const cJSON *prof;
	int any = 0;

	cJSON_ArrayForEach(prof, in->profiles)
	{
		const cJSON *samples, *weights, *s, *w, *f;
		const char *name = cJSON_GetStringValue(
		    cJSON_GetObjectItemCaseSensitive(prof, "name"));
		const char *type = cJSON_GetStringValue(
		    cJSON_GetObjectItemCaseSensitive(prof, "type"));

		if (!gpu && p++ == in->cpu_profiles)
			break;
		if (gpu && (p++ < in->cpu_profiles || !name || !type ||
			    strcmp(type, "sampled") ||
			    strncmp(name, PROFILE_GPU_STACKS_NAME,
				    strlen(PROFILE_GPU_STACKS_NAME))))
			continue;
		any = 1;
		samples = cJSON_GetObjectItemCaseSensitive(prof, "samples");
		weights = cJSON_GetObjectItemCaseSensitive(prof, "weights");
		w = weights->child;
		cJSON_ArrayForEach(s, samples)
		{
			size_t depth = 0;

			ALLOC_GROW(funcs, (size_t)cJSON_GetArraySize(s) + 1,
				   alloc);
			cJSON_ArrayForEach(f, s)
			{
				funcs[depth++] =
				    u->func_map[(size_t)f->valuedouble];
			}
			imbalance_add(im, k, funcs, depth,
				      w ? w->valuedouble : 0);
			w = w ? w->next : NULL;
		}
	}
	free(funcs);
	return any;
}

/* The frames of a merged file: {name, file?, line?}, as record writes. */
static cJSON *frames_json(const struct stacks *frames)
{
	cJSON *arr = cJSON_CreateArray(), *f;
	size_t i;

	for (i = 0; arr && i < frames->nr_frames; i++) {
		const struct stack_frame *sf = &frames->frames[i];

		f = cJSON_CreateObject();
		if (!f || !cJSON_AddItemToArray(arr, f)) {
			cJSON_Delete(f);
			goto oom;
		}
		if (!cJSON_AddStringToObject(f, "name", sf->name) ||
		    (*sf->file &&
		     !cJSON_AddStringToObject(f, "file", sf->file)) ||
		    (sf->line && !cJSON_AddNumberToObject(f, "line", sf->line)))
			goto oom;
	}
	return arr;
oom:
	cJSON_Delete(arr);
	return NULL;
}

/* The label of u's process: "rank 2 (pid 123)", "pid 123" or a file's. */
static void process_label(const struct unit *u, struct strbuf *sb)
{
	strbuf_addstr(sb, u->label);
	if (u->in.has_rank && u->in.pid)
		strbuf_addf(sb, " (pid %ld)", u->in.pid);
}

/* A copy of profile prof of u, renamed for its process, frames remapped. */
static cJSON *merged_profile(const struct unit *u, const cJSON *prof)
{
	cJSON *copy = cJSON_Duplicate(prof, 1), *name, *s, *f, *e;
	struct strbuf sb = STRBUF_INIT;

	if (!copy)
		return NULL;
	name = cJSON_GetObjectItemCaseSensitive(copy, "name");
	process_label(u, &sb);
	if (cJSON_GetStringValue(name))
		strbuf_addf(&sb, ": %s", cJSON_GetStringValue(name));
	cJSON_DeleteItemFromObjectCaseSensitive(copy, "name");
	if (!cJSON_AddStringToObject(copy, "name", sb.buf)) {
		strbuf_release(&sb);
		cJSON_Delete(copy);
		return NULL;
	}
	strbuf_release(&sb);
	cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(copy, "samples"))
	{
		cJSON_ArrayForEach(f, s)
		{
			cJSON_SetNumberValue(
			    f, u->frame_map[(size_t)f->valuedouble]);
		}
	}
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(copy, "events"))
	{
		f = cJSON_GetObjectItemCaseSensitive(e, "frame");
		cJSON_SetNumberValue(f, u->frame_map[(size_t)f->valuedouble]);
	}
	return copy;
}

/* Where each profile came from: spyc_merge, one object per input. */
static cJSON *sources_json(const struct unit *u, size_t n)
{
	cJSON *arr = cJSON_CreateArray(), *o;
	size_t i;

	for (i = 0; arr && i < n; i++) {
		const struct merge_input *in = &u[i].in;

		o = cJSON_CreateObject();
		if (!o || !cJSON_AddItemToArray(arr, o)) {
			cJSON_Delete(o);
			goto oom;
		}
		if (!cJSON_AddStringToObject(o, "file", in->path) ||
		    !cJSON_AddStringToObject(o, "label", u[i].label) ||
		    !(in->has_rank
			  ? cJSON_AddNumberToObject(o, "rank", (double)in->rank)
			  : cJSON_AddNullToObject(o, "rank")) ||
		    (in->pid &&
		     !cJSON_AddNumberToObject(o, "pid", (double)in->pid)) ||
		    (in->host &&
		     !cJSON_AddStringToObject(o, "host", in->host)) ||
		    (in->command &&
		     !cJSON_AddStringToObject(o, "command", in->command)) ||
		    (in->rate_hz > 0 &&
		     !cJSON_AddNumberToObject(o, "rate_hz", in->rate_hz)) ||
		    !cJSON_AddNumberToObject(o, "profiles",
					     (double)in->nr_profiles) ||
		    !cJSON_AddNumberToObject(o, "cpu_profiles",
					     (double)in->cpu_profiles))
			goto oom;
	}
	return arr;
oom:
	cJSON_Delete(arr);
	return NULL;
}

/* The merged speedscope document; NULL if cJSON ran out of memory. */
static cJSON *merged_json(const struct unit *u, size_t n,
			  const struct stacks *frames)
{
	cJSON *root = cJSON_CreateObject(), *shared, *profiles, *item;
	const cJSON *prof;
	char title[256];
	size_t i;

	if (!root ||
	    !cJSON_AddStringToObject(root, "$schema", SPEEDSCOPE_SCHEMA))
		goto oom;
	shared = cJSON_AddObjectToObject(root, "shared");
	item = frames_json(frames);
	if (!shared || !item ||
	    !cJSON_AddItemToObject(shared, "frames", item)) {
		cJSON_Delete(item);
		goto oom;
	}
	profiles = cJSON_AddArrayToObject(root, "profiles");
	if (!profiles)
		goto oom;
	for (i = 0; i < n; i++)
		cJSON_ArrayForEach(prof, u[i].in.profiles)
		{
			item = merged_profile(&u[i], prof);
			if (!item || !cJSON_AddItemToArray(profiles, item)) {
				cJSON_Delete(item);
				goto oom;
			}
		}
	snprintf(title, sizeof(title), "spyc merge of %zu profiles", n);
	item = sources_json(u, n);
	if (!item || !cJSON_AddItemToObject(root, "spyc_merge", item)) {
		cJSON_Delete(item);
		goto oom;
	}
	if (!cJSON_AddStringToObject(root, "name", title) ||
	    !cJSON_AddNumberToObject(root, "activeProfileIndex", 0) ||
	    !cJSON_AddStringToObject(root, "exporter", "spyc"))
		goto oom;
	return root;
oom:
	cJSON_Delete(root);
	return NULL;
}

/*
 * The inputs' CPU samples as one set of stacks, for an HTML page: each
 * input a process, each of its CPU profiles a thread of it.  A weight
 * of seconds is made samples again at the input's rate (as record
 * wrote them); any other unit is taken as samples.
 */
static void merged_stacks(const struct unit *u, size_t n, struct stacks *st)
{
	struct strbuf label = STRBUF_INIT;
	uint32_t *ids = NULL, *map;
	size_t alloc = 0, i, f, p;

	for (i = 0; i < n; i++) {
		const struct merge_input *in = &u[i].in;
		int seconds =
		    in->unit && !strcmp(in->unit, "seconds") && in->rate_hz > 0;
		const cJSON *prof;

		strbuf_reset(&label);
		process_label(&u[i], &label);
		map = xmalloc((in->nr_frames + 1) * sizeof(*map));
		for (f = 0; f < in->nr_frames; f++)
			map[f] = stacks_frame(st, in->frame_names[f],
					      in->frame_files[f],
					      in->frame_lines[f]);
		p = 0;
		cJSON_ArrayForEach(prof, in->profiles)
		{
			const cJSON *s, *w, *fr;
			uint32_t thread;

			if (p++ == in->cpu_profiles)
				break;
			thread = stacks_thread_in(
			    st, label.buf, p, 0,
			    cJSON_GetStringValue(
				cJSON_GetObjectItemCaseSensitive(prof,
								 "name")));
			w = cJSON_GetObjectItemCaseSensitive(prof, "weights")
				->child;
			cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(
						  prof, "samples"))
			{
				double v = seconds
					       ? w->valuedouble * in->rate_hz
					       : w->valuedouble;
				size_t depth = 0;

				ALLOC_GROW(ids,
					   (size_t)cJSON_GetArraySize(s) + 1,
					   alloc);
				cJSON_ArrayForEach(fr, s)
				{
					ids[depth++] =
					    map[(size_t)fr->valuedouble];
				}
				if (v > 0)
					stacks_add(st, thread, ids, depth,
						   v < 1 ? 1
							 : (uint64_t)(v + 0.5));
				w = w->next;
			}
		}
		free(map);
	}
	free(ids);
	strbuf_release(&label);
}

/*
 * The inputs' GPU profiles (spyc record --gpu's), for an HTML page: in
 * gst, the frames of cpu (with their ids) and each input's GPU time by
 * launching stack under a root frame named as its process (nanoseconds);
 * in pg, a row of each input's GPU streams, a span per activity.
 * Whether any input had GPU profiles.
 */
static int merged_gpu(const struct unit *u, size_t n, const struct stacks *cpu,
		      struct stacks *gst, struct html_gpu *pg,
		      struct strbuf *labels)
{
	uint32_t *ids = NULL, *map;
	size_t alloc = 0, i, f, *label_at;
	int any = 0;

	for (f = 0; f < cpu->nr_frames; f++)
		stacks_frame(gst, cpu->frames[f].name, cpu->frames[f].file,
			     cpu->frames[f].line);
	label_at = xcalloc(n + 1, sizeof(*label_at));
	for (i = 0; i < n; i++) {
		label_at[i] = labels->len;
		process_label(&u[i], labels);
		strbuf_addch(labels, '\0');
	}
	for (i = 0; i < n; i++) {
		const struct merge_input *in = &u[i].in;
		const char *label = labels->buf + label_at[i];
		const cJSON *prof;
		size_t p = 0;
		uint32_t thread = stacks_thread(gst, 0, 0, NULL);

		map = xmalloc((in->nr_frames + 1) * sizeof(*map));
		for (f = 0; f < in->nr_frames; f++)
			map[f] = stacks_frame(gst, in->frame_names[f],
					      in->frame_files[f],
					      in->frame_lines[f]);
		cJSON_ArrayForEach(prof, in->profiles)
		{
			const char *name = cJSON_GetStringValue(
			    cJSON_GetObjectItemCaseSensitive(prof, "name"));
			const char *type = cJSON_GetStringValue(
			    cJSON_GetObjectItemCaseSensitive(prof, "type"));
			const cJSON *s, *w, *fr, *ev;
			unsigned device, stream;
			struct html_gpu_row *r;
			double open_at = -1;

			if (p++ < in->cpu_profiles || !name || !type)
				continue;
			if (!strcmp(type, "sampled") &&
			    !strncmp(name, PROFILE_GPU_STACKS_NAME,
				     strlen(PROFILE_GPU_STACKS_NAME))) {
				any = 1;
				w = cJSON_GetObjectItemCaseSensitive(prof,
								     "weights")
					->child;
				cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(
							  prof, "samples"))
				{
					size_t depth = 0;

					ALLOC_GROW(
					    ids,
					    (size_t)cJSON_GetArraySize(s) + 2,
					    alloc);
					ids[depth++] = stacks_frame(
					    gst, label, "", 0);
					cJSON_ArrayForEach(fr, s)
					    ids[depth++] =
						map[(size_t)fr->valuedouble];
					if (w && w->valuedouble > 0)
						stacks_add(gst, thread, ids,
							   depth,
							   (uint64_t)(w->valuedouble *
									  1e9 +
								      0.5));
					w = w ? w->next : NULL;
				}
				continue;
			}
			if (strcmp(type, "evented") ||
			    sscanf(name, "GPU %u stream %u", &device,
				   &stream) != 2)
				continue;
			any = 1;
			ALLOC_GROW(pg->rows, pg->nr_rows + 1, pg->alloc_rows);
			r = &pg->rows[pg->nr_rows++];
			memset(r, 0, sizeof(*r));
			r->process = label;
			r->device = device;
			r->stream = stream;
			cJSON_ArrayForEach(ev, cJSON_GetObjectItemCaseSensitive(
						   prof, "events"))
			{
				const char *t = cJSON_GetStringValue(
				    cJSON_GetObjectItemCaseSensitive(ev,
								     "type"));
				double at = cJSON_GetNumberValue(
				    cJSON_GetObjectItemCaseSensitive(ev, "at"));
				double frame = cJSON_GetNumberValue(
				    cJSON_GetObjectItemCaseSensitive(ev,
								     "frame"));

				if (t && !strcmp(t, "O")) {
					open_at = at;
				} else if (t && !strcmp(t, "C") &&
					   open_at >= 0 && frame >= 0 &&
					   frame < (double)in->nr_frames) {
					html_gpu_span(pg, r, open_at,
						      at - open_at,
						      map[(size_t)frame]);
					r->busy_ns += (uint64_t)(
					    (at - open_at) * 1e9 + 0.5);
					open_at = -1;
				}
			}
		}
		free(map);
	}
	free(ids);
	free(label_at);
	pg->stacks = gst;
	pg->name = PROFILE_GPU_STACKS_NAME ", by process";
	return any;
}

static int write_json(FILE *fp, void *data)
{
	char *text = cJSON_PrintUnformatted(data);
	size_t len;
	int ret = 0;

	if (!text)
		return -ENOMEM;
	len = strlen(text);
	if (fwrite(text, 1, len, fp) != len || putc('\n', fp) == EOF)
		ret = errno ? -errno : -EIO;
	cJSON_free(text);
	return ret;
}

/* "rank 1, rank 3": the units that never ran function f. */
static void list_none(const struct imbalance *im, const struct unit *u,
		      uint32_t f, struct strbuf *sb)
{
	size_t k, first = 1;

	for (k = 0; k < im->nr_units; k++) {
		if (im->total[f * im->nr_units + k] != 0)
			continue;
		strbuf_addf(sb, "%s%s", first ? "" : ", ", u[k].label);
		first = 0;
	}
}

static void print_text(const struct imbalance *im, const struct unit *u,
		       const uint32_t *order, size_t top, const char *unit,
		       int gpu)
{
	int seconds = unit && !strcmp(unit, "seconds");
	struct strbuf sb = STRBUF_INIT;
	struct imbalance_stats st, own;
	size_t i, k, n = im->nr_units;

	if (gpu)
		printf("%zu processes; GPU seconds by launching stack:", n);
	else
		printf("%zu processes; CPU %s sampled:", n,
		       seconds ? "seconds" : "samples");
	for (k = 0; k < n; k++)
		printf("%s %s %.*f", k ? "," : "", u[k].label, seconds ? 2 : 0,
		       im->unit_total[k]);
	printf("\n\nload imbalance, in %s: total = with the function on the "
	       "stack, own = running itself\n",
	       seconds ? "seconds" : "samples");
	printf("%9s %9s %9s %9s %9s  %-10s %9s  %s\n", "max-mean", "min",
	       "mean", "max", "stddev", "slowest", "own max", "function");
	for (i = 0; i < im->funcs.nr_frames && (!top || i < top); i++) {
		const struct stack_frame *fn = &im->funcs.frames[order[i]];

		imbalance_stats(im->total + order[i] * n, n, &st);
		imbalance_stats(im->self + order[i] * n, n, &own);
		printf("%9.3f %9.3f %9.3f %9.3f %9.3f  %-10s %9.3f  %s",
		       st.max - st.mean, st.min, st.mean, st.max, st.stddev,
		       u[st.slowest].label, own.max, fn->name);
		if (*fn->file)
			printf(" (%s)", fn->file);
		if (st.none) {
			strbuf_reset(&sb);
			list_none(im, u, order[i], &sb);
			printf("  [none in %s]", sb.buf);
		}
		putchar('\n');
	}
	strbuf_release(&sb);
}

/* {min, mean, max, stddev, slowest, values} of one function's times. */
static cJSON *stats_json(const double *v, size_t n)
{
	struct imbalance_stats st;
	cJSON *o = cJSON_CreateObject(), *values;

	imbalance_stats(v, n, &st);
	if (!o || !cJSON_AddNumberToObject(o, "min", st.min) ||
	    !cJSON_AddNumberToObject(o, "mean", st.mean) ||
	    !cJSON_AddNumberToObject(o, "max", st.max) ||
	    !cJSON_AddNumberToObject(o, "stddev", st.stddev) ||
	    !cJSON_AddNumberToObject(o, "slowest", (double)st.slowest))
		goto oom;
	values = cJSON_CreateDoubleArray(v, (int)n);
	if (!values || !cJSON_AddItemToObject(o, "values", values)) {
		cJSON_Delete(values);
		goto oom;
	}
	return o;
oom:
	cJSON_Delete(o);
	return NULL;
}

static cJSON *function_json(const struct imbalance *im, const struct unit *u,
			    uint32_t f)
{
	const struct stack_frame *fn = &im->funcs.frames[f];
	size_t k, n = im->nr_units;
	struct imbalance_stats st;
	cJSON *o = cJSON_CreateObject(), *item, *none;

	imbalance_stats(im->total + f * n, n, &st);
	if (!o || !cJSON_AddStringToObject(o, "name", fn->name) ||
	    !cJSON_AddStringToObject(o, "file", fn->file) ||
	    !cJSON_AddNumberToObject(o, "imbalance", st.max - st.mean) ||
	    !cJSON_AddStringToObject(o, "slowest", u[st.slowest].label))
		goto oom;
	item = stats_json(im->total + f * n, n);
	if (!item || !cJSON_AddItemToObject(o, "total", item)) {
		cJSON_Delete(item);
		goto oom;
	}
	item = stats_json(im->self + f * n, n);
	if (!item || !cJSON_AddItemToObject(o, "own", item)) {
		cJSON_Delete(item);
		goto oom;
	}
	none = cJSON_AddArrayToObject(o, "none");
	if (!none)
		goto oom;
	for (k = 0; k < n; k++) {
		if (im->total[f * n + k] != 0)
			continue;
		item = cJSON_CreateString(u[k].label);
		if (!item || !cJSON_AddItemToArray(none, item)) {
			cJSON_Delete(item);
			goto oom;
		}
	}
	return o;
oom:
	cJSON_Delete(o);
	return NULL;
}

static cJSON *report_json(const struct imbalance *im, const struct unit *u,
			  const uint32_t *order, size_t top, const char *unit,
			  int gpu)
{
	cJSON *root = cJSON_CreateObject(), *procs, *funcs, *o;
	size_t i, k;

	if (!root ||
	    !cJSON_AddStringToObject(root, "unit", unit ? unit : "none") ||
	    !cJSON_AddStringToObject(root, "time", gpu ? "gpu" : "cpu"))
		goto oom;
	procs = cJSON_AddArrayToObject(root, "processes");
	if (!procs)
		goto oom;
	for (k = 0; k < im->nr_units; k++) {
		const struct merge_input *in = &u[k].in;

		o = cJSON_CreateObject();
		if (!o || !cJSON_AddItemToArray(procs, o)) {
			cJSON_Delete(o);
			goto oom;
		}
		if (!cJSON_AddStringToObject(o, "label", u[k].label) ||
		    !cJSON_AddStringToObject(o, "file", in->path) ||
		    !(in->has_rank
			  ? cJSON_AddNumberToObject(o, "rank", (double)in->rank)
			  : cJSON_AddNullToObject(o, "rank")) ||
		    !(in->pid
			  ? cJSON_AddNumberToObject(o, "pid", (double)in->pid)
			  : cJSON_AddNullToObject(o, "pid")) ||
		    (in->host &&
		     !cJSON_AddStringToObject(o, "host", in->host)) ||
		    !cJSON_AddNumberToObject(o, "total", im->unit_total[k]))
			goto oom;
	}
	funcs = cJSON_AddArrayToObject(root, "functions");
	if (!funcs)
		goto oom;
	for (i = 0; i < im->funcs.nr_frames && (!top || i < top); i++) {
		o = function_json(im, u, order[i]);
		if (!o || !cJSON_AddItemToArray(funcs, o)) {
			cJSON_Delete(o);
			goto oom;
		}
	}
	return root;
oom:
	cJSON_Delete(root);
	return NULL;
}

int cmd_merge(int argc, char **argv)
{
	struct merge_opts opts;
	struct stacks frames;
	struct imbalance im;
	struct unit *u;
	uint32_t *order;
	const char *unit = NULL;
	cJSON *doc;
	size_t k;
	int ret, any_gpu = 0;

	parse_options(&opts, argc, argv);
	if (opts.output) {
		ret = file_replaceable(opts.output);
		if (ret)
			die("cannot write '%s': %s", opts.output,
			    strerror(-ret));
	}
	u = read_units(&opts);
	stacks_init(&frames);
	imbalance_init(&im, opts.nr_files);
	map_frames(u, opts.nr_files, &frames, &im);
	for (k = 0; k < opts.nr_files; k++) {
		any_gpu |= count_unit(&u[k], k, &im, opts.gpu);
		if (!unit)
			unit = opts.gpu ? "seconds" : u[k].in.unit;
	}
	if (opts.gpu && !any_gpu)
		die("--gpu: no input holds GPU time by launching stack "
		    "(spyc record --gpu's)");
	if (opts.output &&
	    output_format_from_path(opts.output) == FORMAT_HTML) {
		struct stacks all, gst;
		struct html_gpu pg = {0};
		struct strbuf labels = STRBUF_INIT;
		struct profile_meta meta;
		char title[64];

		snprintf(title, sizeof(title), "spyc merge of %zu profiles",
			 opts.nr_files);
		memset(&meta, 0, sizeof(meta));
		meta.title = title;
		stacks_init(&all);
		stacks_init(&gst);
		merged_stacks(u, opts.nr_files, &all);
		if (merged_gpu(u, opts.nr_files, &all, &gst, &pg, &labels))
			meta.html_gpu = &pg;
		ret = output_write(opts.output, FORMAT_HTML, &all, &meta);
		html_gpu_release(&pg);
		strbuf_release(&labels);
		stacks_release(&gst);
		stacks_release(&all);
		if (ret)
			exit(EXIT_FAILED);
	} else if (opts.output) {
		doc = merged_json(u, opts.nr_files, &frames);
		if (!doc)
			die("out of memory building '%s'", opts.output);
		ret = write_file_atomic(opts.output, write_json, doc);
		cJSON_Delete(doc);
		if (ret)
			exit(EXIT_FAILED);
	}
	order = imbalance_order(&im);
	if (opts.json) {
		char *text;

		doc = report_json(&im, u, order, opts.top, unit, opts.gpu);
		text = doc ? cJSON_PrintUnformatted(doc) : NULL;
		if (!text)
			die("out of memory building the report");
		puts(text);
		cJSON_free(text);
		cJSON_Delete(doc);
	} else {
		print_text(&im, u, order, opts.top, unit, opts.gpu);
	}
	ret = EXIT_OK;
	if (fflush(stdout) || ferror(stdout)) {
		error("cannot write the report: %s", strerror(errno));
		ret = EXIT_FAILED;
	}
	if (opts.output)
		fprintf(stderr, "spyc: %zu profiles merged -> %s\n",
			opts.nr_files, opts.output);
	free(order);
	for (k = 0; k < opts.nr_files; k++) {
		free(u[k].frame_map);
		free(u[k].func_map);
		merge_input_release(&u[k].in);
	}
	free(u);
	imbalance_release(&im);
	stacks_release(&frames);
	return ret;
}
