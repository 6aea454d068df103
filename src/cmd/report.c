/* SPDX-License-Identifier: MIT */
/* spyc report: a text (or JSON) report of a profile spyc wrote: the top
 * functions by own and total time, and the lines of the hottest ones. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/commands.h"
#include "cmd/options.h"
#include "gpu/gpunvtx.h"
#include "out/output.h"
#include "profile/profile-read.h"
#include "profile/source.h"
#include "profile/stacks.h"
#include "profile/tally.h"
#include "util.h"

#define DEFAULT_TOP 20
/* Functions given a line table when --function does not pick them. */
#define DEFAULT_DETAIL 3
/*
 * A line table shows every line from the first sampled one to the last
 * when they are at most this many lines apart (a function, most likely),
 * else only the sampled lines.
 */
#define MAX_SPAN 80
/* A source file larger than this is not read (no source is 64 MiB). */
#define MAX_SOURCE_SIZE (64 << 20)

static const char usage_text[] =
    "usage: spyc report [options] FILE\n"
    "\n"
    "Print a report of a profile spyc record wrote, speedscope JSON\n"
    "(-o out.json), folded stacks (-o out.txt), pprof (-o out.pb.gz),\n"
    "a Chrome trace (-o out.trace.json) or an HTML page (-o out.html):\n"
    "the functions with the most own time (innermost frame) and total\n"
    "time (anywhere on the stack, once per sample), then line by line\n"
    "the hottest functions, with their source where the file can be\n"
    "read.  Times are seconds where the profile has them (speedscope,\n"
    "pprof, Chrome), else samples (folded, HTML).\n"
    "\n"
    "  -n, --top N          functions in the table (default 20; 0: all)\n"
    "  -s, --sort KEY       own (default) or total\n"
    "  -f, --function NAME  a line table for the functions named NAME\n"
    "                       (the qualified name, else those whose name\n"
    "                       contains NAME); may be given again (default:\n"
    "                       the 3 with the most own time)\n"
    "  -t, --threads        a report per thread (speedscope: per profile;\n"
    "                       folded: recorded with --threads)\n"
    "      --gpu            the GPU profiles of spyc record --gpu (names\n"
    "                       that start with 'GPU') instead of the CPU ones\n"
    "      --gpu-idle       its GPU idle time by what the launching\n"
    "                       threads ran meanwhile instead\n"
    "  -j, --json           print JSON instead of text\n"
    "  -h, --help           this help\n"
    "\n"
    "File names are as recorded: shortened, unless spyc record kept them\n"
    "whole (its full-filenames option); a source file is looked for at\n"
    "that path, as is, from the current directory, then under each\n"
    "directory record took off the names (the target's standard\n"
    "library, site-packages, working directory), which speedscope,\n"
    "pprof and Chrome trace profiles list.\n"
    "\n"
    "exit codes: 0 ok, 2 failed (the file cannot be read, is not a\n"
    "profile or holds no samples, no function matches --function),\n"
    "64 usage error\n";

enum sort_key { SORT_OWN, SORT_TOTAL };

struct report_opts {
	const char *path;
	size_t top;
	enum sort_key sort;
	const char **functions; /* --function, nr_functions of them */
	size_t nr_functions, alloc_functions;
	int threads;
	int gpu;
	int gpu_idle; /* --gpu-idle */
	int json;
};

/* A source file's lines, read once. */
struct source {
	const char *file;
	char *text;   /* NULL when it could not be read */
	int changed;  /* the file at its path is not the one recorded */
	char **lines; /* lines[i] is line i + 1, NUL-terminated in text */
	size_t nr_lines;
};

struct report {
	struct report_opts *opts;
	struct profile prof;
	struct tally t;	       /* of prof: one section's sums */
	unsigned char *picked; /* by function: chosen by --function */
	uint32_t *order;       /* function ids, sorted */
	struct source *sources;
	size_t nr_sources, alloc_sources;
};

static void parse_options(struct report_opts *o, int argc, char **argv)
{
	static const struct option options[] = {
	    {"top", required_argument, NULL, 'n'},
	    {"sort", required_argument, NULL, 's'},
	    {"function", required_argument, NULL, 'f'},
	    {"threads", no_argument, NULL, 't'},
	    {"gpu", no_argument, NULL, OPT_GPU},
	    {"gpu-idle", no_argument, NULL, OPT_GPU_IDLE},
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->top = DEFAULT_TOP;
	while ((c = getopt_long(argc, argv, "n:s:f:tjh", options, NULL)) !=
	       -1) {
		switch (c) {
		case 'n':
			o->top = parse_top_arg(optarg);
			break;
		case 's':
			o->sort =
			    parse_sort_total(optarg) ? SORT_TOTAL : SORT_OWN;
			break;
		case 'f':
			if (!*optarg) {
				fprintf(stderr,
					"spyc: --function needs a name\n");
				exit(EXIT_USAGE);
			}
			ALLOC_GROW(o->functions, o->nr_functions + 1,
				   o->alloc_functions);
			o->functions[o->nr_functions++] = optarg;
			break;
		case 't':
			o->threads = 1;
			break;
		case OPT_GPU:
			o->gpu = 1;
			break;
		case OPT_GPU_IDLE:
			o->gpu_idle = 1;
			break;
		case 'j':
			o->json = 1;
			break;
		case 'h':
			fputs(usage_text, stdout);
			exit(EXIT_OK);
		default:
			fputs(usage_text, stderr);
			exit(EXIT_USAGE);
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "spyc: report needs exactly one profile "
				"file (see spyc report --help)\n");
		exit(EXIT_USAGE);
	}
	o->path = argv[optind];
}

/* The source of file, read on first use; its text is NULL if unreadable. */
static const struct source *get_source(struct report *r, const char *file)
{
	struct strbuf sb = STRBUF_INIT;
	const struct profile_source_file *ps;
	struct source *s;
	char *p, *nl;
	size_t i, n, alloc = 0;
	int rc;

	for (i = 0; i < r->nr_sources; i++)
		if (!strcmp(r->sources[i].file, file))
			return &r->sources[i];
	ALLOC_GROW(r->sources, r->nr_sources + 1, r->alloc_sources);
	s = &r->sources[r->nr_sources++];
	memset(s, 0, sizeof(*s));
	s->file = file;
	/* As the profile holds it; else the very file the target ran. */
	ps = profile_source(&r->prof, file);
	if (ps && ps->text) {
		strbuf_addstr(&sb, ps->text);
	} else if ((rc = source_read(file, r->prof.roots, r->prof.nr_roots,
				     NULL, ps && ps->has_id ? &ps->id : NULL,
				     MAX_SOURCE_SIZE, &sb))) {
		/* Not found, another file, or not text: none to show. */
		s->changed = rc == SOURCE_CHANGED;
		strbuf_release(&sb);
		return s;
	}
	s->text = strbuf_detach(&sb);
	for (p = s->text; *p; p = nl + 1) {
		ALLOC_GROW(s->lines, s->nr_lines + 1, alloc);
		s->lines[s->nr_lines++] = p;
		nl = strchr(p, '\n');
		if (!nl)
			break;
		*nl = '\0';
	}
	/* Trailing white space (and a CRLF's CR) is not the line's text. */
	for (i = 0; i < s->nr_lines; i++) {
		n = strlen(s->lines[i]);
		while (n && (s->lines[i][n - 1] == '\r' ||
			     s->lines[i][n - 1] == ' ' ||
			     s->lines[i][n - 1] == '\t'))
			s->lines[i][--n] = '\0';
	}
	return s;
}

/* The text of line of src, or NULL when there is no such line. */
static const char *source_line(const struct source *src, int line)
{
	if (!src->text || line < 1 || (size_t)line > src->nr_lines)
		return NULL;
	return src->lines[line - 1];
}

static void map_functions(struct report *r)
{
	tally_init(&r->t, &r->prof);
	r->picked = xcalloc(r->t.funcs.nr_frames + 1, 1);
	r->order = xmalloc((r->t.funcs.nr_frames + 1) * sizeof(*r->order));
}

/*
 * --function: mark the functions each NAME picks, the qualified name
 * first, else those whose name contains it.  Dies naming a NAME that
 * picks none.
 */
static void pick_functions(struct report *r)
{
	const struct report_opts *o = r->opts;
	size_t i, f, hits;
	int exact;

	for (i = 0; i < o->nr_functions; i++) {
		hits = 0;
		for (exact = 1; exact >= 0 && !hits; exact--)
			for (f = 0; f < r->t.funcs.nr_frames; f++) {
				const char *name = r->t.funcs.frames[f].name;

				if (exact ? !strcmp(name, o->functions[i])
					  : !!strstr(name, o->functions[i])) {
					r->picked[f] = 1;
					hits++;
				}
			}
		if (!hits)
			die("no function in '%s' matches '%s'", o->path,
			    o->functions[i]);
	}
}

/* What cmp_func() sorts on: qsort_r()'s context. */
struct sort_ctx {
	const struct report *r;
	enum sort_key key;
};

static int cmp_u64_desc(uint64_t a, uint64_t b)
{
	return a < b ? 1 : a > b ? -1 : 0;
}

static int cmp_func(const void *pa, const void *pb, void *arg)
{
	uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
	const struct sort_ctx *ctx = arg;
	const struct report *r = ctx->r;
	int c;

	if (ctx->key == SORT_TOTAL)
		c = cmp_u64_desc(r->t.total_func[a], r->t.total_func[b]);
	else
		c = cmp_u64_desc(r->t.own_func[a], r->t.own_func[b]);
	if (!c && ctx->key == SORT_TOTAL)
		c = cmp_u64_desc(r->t.own_func[a], r->t.own_func[b]);
	if (!c)
		c = cmp_u64_desc(r->t.total_func[a], r->t.total_func[b]);
	if (!c)
		c = strcmp(r->t.funcs.frames[a].name,
			   r->t.funcs.frames[b].name);
	if (!c)
		c = strcmp(r->t.funcs.frames[a].file,
			   r->t.funcs.frames[b].file);
	return c;
}

/* Order the functions seen in the section on key; returns how many. */
static size_t sort_functions(struct report *r, enum sort_key key)
{
	struct sort_ctx ctx = {r, key};
	size_t f, n = 0;

	for (f = 0; f < r->t.funcs.nr_frames; f++)
		if (r->t.total_func[f])
			r->order[n++] = (uint32_t)f;
	qsort_r(r->order, n, sizeof(*r->order), cmp_func, &ctx);
	return n;
}

static double pct(const struct report *r, uint64_t count)
{
	return 100.0 * tally_share(&r->t, count);
}

/*
 * The sampling error of a share p (0 to 1) of the section, in points
 * (the half-width of its 95% interval, tally_share_variance).
 * Negative where the samples are not known.
 */
static double share_error(const struct report *r, double p)
{
	double v = tally_share_variance(p, tally_samples(&r->t));

	return v < 0 ? -1.0 : 100.0 * TALLY_Z95 * sqrt(v);
}

/* The sampling error of count's share of the section (share_error). */
static double pct_error(const struct report *r, uint64_t count)
{
	if (!r->t.section_total)
		return -1.0;
	return share_error(r, (double)count / (double)r->t.section_total);
}

/* A count as the report shows it: "0.970s" or "97". */
static const char *fmt_value(const struct report *r, uint64_t count, char *buf,
			     size_t size)
{
	if (r->prof.unit == PROFILE_UNIT_SECONDS)
		snprintf(buf, size, "%.3fs", profile_value(&r->prof, count));
	else
		snprintf(buf, size, "%" PRIu64, count);
	return buf;
}

static void print_function_name(const struct stack_frame *fn)
{
	if (*fn->file)
		printf("%s (%s)", fn->name, fn->file);
	else
		printf("%s", fn->name);
}

/* The frame ids of function f's lines with samples, by line number. */
static size_t function_lines(const struct report *r, uint32_t f,
			     uint32_t *lines)
{
	const struct stacks *st = &r->prof.stacks;
	size_t i, j, n = 0;
	uint32_t t;

	for (i = 0; i < st->nr_frames; i++)
		if (r->t.func_of[i] == f && r->t.total_line[i])
			lines[n++] = (uint32_t)i;
	/* Few lines per function: an insertion sort. */
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && st->frames[lines[j - 1]].line >
					 st->frames[lines[j]].line;
		     j--) {
			t = lines[j];
			lines[j] = lines[j - 1];
			lines[j - 1] = t;
		}
	return n;
}

/* The functions given a line table, in r->order's order; returns how many. */
static size_t detail_functions(const struct report *r, size_t nr_order,
			       uint32_t *out)
{
	size_t i, n = 0;
	uint32_t f;

	for (i = 0; i < nr_order; i++) {
		f = r->order[i];
		if (r->opts->nr_functions
			? r->picked[f]
			: r->t.own_func[f] && n < DEFAULT_DETAIL)
			out[n++] = f;
	}
	return n;
}

static void print_line_row(const struct report *r, int line, uint32_t id,
			   const char *text)
{
	char own[32], total[32];

	if (id == UINT32_MAX) {
		printf("  %6d %10s %6s %10s %6s%s%s\n", line, "", "", "", "",
		       text ? "  " : "", text ? text : "");
		return;
	}
	printf("  %6d %10s %5.1f%% %10s %5.1f%%%s%s\n", line,
	       fmt_value(r, r->t.own_line[id], own, sizeof(own)),
	       pct(r, r->t.own_line[id]),
	       fmt_value(r, r->t.total_line[id], total, sizeof(total)),
	       pct(r, r->t.total_line[id]), text ? "  " : "", text ? text : "");
}

static void print_line_table(struct report *r, uint32_t f, uint32_t *lines)
{
	const struct stacks *st = &r->prof.stacks;
	const struct stack_frame *fn = &r->t.funcs.frames[f];
	const struct source *src = get_source(r, fn->file);
	char own[32], total[32];
	size_t n = function_lines(r, f, lines), i;
	int line, first, last;
	int known = 0; /* some line has a line number */

	printf("\nLines of ");
	print_function_name(fn);
	printf(": own %s (%.1f%%), total %s (%.1f%%)%s\n",
	       fmt_value(r, r->t.own_func[f], own, sizeof(own)),
	       pct(r, r->t.own_func[f]),
	       fmt_value(r, r->t.total_func[f], total, sizeof(total)),
	       pct(r, r->t.total_func[f]),
	       src->text || !*fn->file ? ""
	       : src->changed
		   ? " (source changed since it was recorded: not shown)"
		   : " (source not found)");
	for (i = 0; i < n; i++)
		known |= st->frames[lines[i]].line > 0;
	if (!known) {
		printf("  (no line numbers)\n");
		return;
	}
	printf("  %6s %10s %6s %10s %6s%s\n", "LINE", "OWN", "OWN%", "TOTAL",
	       "TOTAL%", src->text ? "  SOURCE" : "");
	/* Lines sort first when 0 (not known); some line is known. */
	for (i = 0; st->frames[lines[i]].line <= 0; i++)
		;
	first = st->frames[lines[i]].line;
	last = st->frames[lines[n - 1]].line;
	if (!src->text || last - first > MAX_SPAN) {
		for (i = 0; i < n; i++) {
			line = st->frames[lines[i]].line;
			if (line > 0)
				print_line_row(r, line, lines[i],
					       source_line(src, line));
		}
		return;
	}
	/* Every line of the span, the sampled ones with their numbers. */
	for (line = first; line <= last; line++) {
		uint32_t id = UINT32_MAX;

		if (i < n && st->frames[lines[i]].line == line)
			id = lines[i++];
		print_line_row(r, line, id, source_line(src, line));
		if (id == UINT32_MAX && !source_line(src, line))
			break;
	}
	for (; i < n; i++)
		print_line_row(r, st->frames[lines[i]].line, lines[i], NULL);
}

static int cmp_total(const void *a, const void *b, void *ctx)
{
	const uint64_t *total = ctx;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	if (total[x] != total[y])
		return total[x] > total[y] ? -1 : 1;
	return x < y ? -1 : 1;
}

/*
 * The functions that are NVTX ranges (spyc record --gpu puts a kernel
 * under the ranges open at its launch), by total time, the most first:
 * a range's total is the GPU time launched inside it.  Returns how many
 * there are in out (room for every function); 0 in a CPU profile.
 */
static size_t nvtx_ranges(const struct report *r, uint32_t *out)
{
	const struct stacks *funcs = &r->t.funcs;
	size_t n = 0, f;

	for (f = 0; f < funcs->nr_frames; f++)
		if (r->t.total_func[f] && gpunvtx_frame(funcs->frames[f].name))
			out[n++] = (uint32_t)f;
	qsort_r(out, n, sizeof(*out), cmp_total, r->t.total_func);
	return n;
}

static void print_nvtx_ranges(struct report *r)
{
	uint32_t *ranges =
	    xmalloc((r->t.funcs.nr_frames + 1) * sizeof(*ranges));
	size_t n = nvtx_ranges(r, ranges), i;
	char total[32];

	if (n)
		printf("\nNVTX ranges by the GPU time launched inside them "
		       "(%zu of %zu):\n  %10s %6s  %s\n",
		       n < r->opts->top ? n : r->opts->top, n, "TOTAL",
		       "TOTAL%", "RANGE");
	for (i = 0; i < n && i < r->opts->top; i++)
		printf("  %10s %5.1f%%  %s\n",
		       fmt_value(r, r->t.total_func[ranges[i]], total,
				 sizeof(total)),
		       pct(r, r->t.total_func[ranges[i]]),
		       r->t.funcs.frames[ranges[i]].name +
			   strlen(GPU_NVTX_PREFIX));
	free(ranges);
}

static void print_section(struct report *r, const char *label)
{
	char own[32], total[32];
	uint32_t *detail, *lines;
	size_t n, i, nr_detail;

	n = sort_functions(r, r->opts->sort);
	printf("\n== %s: %s %s ==\n", label,
	       fmt_value(r, r->t.section_total, total, sizeof(total)),
	       r->prof.unit == PROFILE_UNIT_SECONDS ? "sampled" : "samples");
	if (share_error(r, 0.5) >= 0)
		printf(
		    "Sampling error (95%%, %.0f samples): \u00b1%.1f points "
		    "on a 50%% share, \u00b1%.1f on 10%%, \u00b1%.1f on 1%%\n",
		    tally_samples(&r->t), share_error(r, 0.5),
		    share_error(r, 0.1), share_error(r, 0.01));
	if (share_error(r, 0.5) >= 0)
		printf("Real difference (95%%) from a profile as large: "
		       "%.1f points on a 50%% share, %.1f on 10%%, %.1f on "
		       "1%%; 1 point on 10%% needs %.0f samples a profile\n",
		       M_SQRT2 * share_error(r, 0.5),
		       M_SQRT2 * share_error(r, 0.1),
		       M_SQRT2 * share_error(r, 0.01),
		       ceil(tally_samples_for_difference(0.1, 0.01)));
	printf("\nFunctions by %s time (%zu of %zu):\n",
	       r->opts->sort == SORT_TOTAL ? "total" : "own",
	       n < r->opts->top ? n : r->opts->top, n);
	printf("  %10s %6s %10s %6s  %s\n", "OWN", "OWN%", "TOTAL", "TOTAL%",
	       "FUNCTION");
	for (i = 0; i < n && i < r->opts->top; i++) {
		uint32_t f = r->order[i];

		printf("  %10s %5.1f%% %10s %5.1f%%  ",
		       fmt_value(r, r->t.own_func[f], own, sizeof(own)),
		       pct(r, r->t.own_func[f]),
		       fmt_value(r, r->t.total_func[f], total, sizeof(total)),
		       pct(r, r->t.total_func[f]));
		print_function_name(&r->t.funcs.frames[f]);
		putchar('\n');
	}
	print_nvtx_ranges(r);
	/* Line tables go by own time whatever the table's order. */
	n = sort_functions(r, SORT_OWN);
	detail = xmalloc((n + 1) * sizeof(*detail));
	lines = xmalloc((r->prof.stacks.nr_frames + 1) * sizeof(*lines));
	nr_detail = detail_functions(r, n, detail);
	for (i = 0; i < nr_detail; i++)
		print_line_table(r, detail[i], lines);
	free(lines);
	free(detail);
}

/* JSON: the value of count, a whole number of samples or seconds. */
static cJSON *add_value(cJSON *obj, const char *key, const struct report *r,
			uint64_t count)
{
	return cJSON_AddNumberToObject(obj, key,
				       profile_value(&r->prof, count));
}

/*
 * JSON: the smallest real difference (95%) from a profile of as many
 * samples, in points, on a 50%, 10% and 1% share ("real_difference_pct",
 * null where the samples are not known); 0 or -1.
 */
static int add_difference(cJSON *sec, const struct report *r)
{
	static const double shares[] = {0.5, 0.1, 0.01};
	static const char *const keys[] = {"50", "10", "1"};
	cJSON *d;
	size_t i;

	if (share_error(r, 0.5) < 0)
		return cJSON_AddNullToObject(sec, "real_difference_pct") ? 0
									 : -1;
	d = cJSON_AddObjectToObject(sec, "real_difference_pct");
	for (i = 0; d && i < ARRAY_SIZE(shares); i++)
		if (!cJSON_AddNumberToObject(
			d, keys[i], M_SQRT2 * share_error(r, shares[i])))
			return -1;
	return d ? 0 : -1;
}

/* JSON: a share's sampling error (pct_error), null where there is none. */
static cJSON *add_error(cJSON *obj, const char *key, double err)
{
	return err < 0 ? cJSON_AddNullToObject(obj, key)
		       : cJSON_AddNumberToObject(obj, key, err);
}

/* Add a string made valid UTF-8 (NULL: JSON null); NULL if cJSON ran out. */
static cJSON *add_str(cJSON *obj, const char *key, const char *s,
		      struct strbuf *tmp)
{
	if (!s)
		return cJSON_AddNullToObject(obj, key);
	return cJSON_AddStringToObject(obj, key, output_utf8(s, tmp));
}

static int add_func_json(cJSON *arr, const struct report *r, uint32_t f,
			 struct strbuf *tmp)
{
	const struct stack_frame *fn = &r->t.funcs.frames[f];
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return -1;
	if (!cJSON_AddItemToArray(arr, o)) {
		cJSON_Delete(o);
		return -1;
	}
	return add_str(o, "name", fn->name, tmp) &&
		       add_str(o, "file", fn->file, tmp) &&
		       add_value(o, "own", r, r->t.own_func[f]) &&
		       cJSON_AddNumberToObject(o, "own_pct",
					       pct(r, r->t.own_func[f])) &&
		       add_error(o, "own_pct_error",
				 pct_error(r, r->t.own_func[f])) &&
		       add_value(o, "total", r, r->t.total_func[f]) &&
		       cJSON_AddNumberToObject(o, "total_pct",
					       pct(r, r->t.total_func[f])) &&
		       add_error(o, "total_pct_error",
				 pct_error(r, r->t.total_func[f]))
		   ? 0
		   : -1;
}

static int add_line_table_json(cJSON *arr, struct report *r, uint32_t f,
			       uint32_t *lines, struct strbuf *tmp)
{
	const struct stacks *st = &r->prof.stacks;
	const struct source *src = get_source(r, r->t.funcs.frames[f].file);
	size_t n = function_lines(r, f, lines), i;
	cJSON *o, *rows, *row;

	if (add_func_json(arr, r, f, tmp))
		return -1;
	o = cJSON_GetArrayItem(arr, cJSON_GetArraySize(arr) - 1);
	if (!cJSON_AddBoolToObject(o, "source_found", src->text != NULL) ||
	    !cJSON_AddBoolToObject(o, "source_changed", src->changed))
		return -1;
	rows = cJSON_AddArrayToObject(o, "lines");
	if (!rows)
		return -1;
	for (i = 0; i < n; i++) {
		uint32_t id = lines[i];
		int line = st->frames[id].line;

		row = cJSON_CreateObject();
		if (!row)
			return -1;
		if (!cJSON_AddItemToArray(rows, row)) {
			cJSON_Delete(row);
			return -1;
		}
		if (!cJSON_AddNumberToObject(row, "line", line) ||
		    !add_value(row, "own", r, r->t.own_line[id]) ||
		    !cJSON_AddNumberToObject(row, "own_pct",
					     pct(r, r->t.own_line[id])) ||
		    !add_value(row, "total", r, r->t.total_line[id]) ||
		    !cJSON_AddNumberToObject(row, "total_pct",
					     pct(r, r->t.total_line[id])) ||
		    !add_str(row, "source", source_line(src, line), tmp))
			return -1;
	}
	return 0;
}

/* JSON: "nvtx_ranges", each range's name and total; 0 or -1. */
static int add_nvtx_json(cJSON *sec, const struct report *r, struct strbuf *tmp)
{
	uint32_t *ranges =
	    xmalloc((r->t.funcs.nr_frames + 1) * sizeof(*ranges));
	size_t n = nvtx_ranges(r, ranges), i;
	cJSON *arr = cJSON_AddArrayToObject(sec, "nvtx_ranges"), *o;
	int ret = arr ? 0 : -1;

	for (i = 0; !ret && i < n && i < r->opts->top; i++) {
		uint32_t f = ranges[i];

		o = cJSON_CreateObject();
		if (!o || !cJSON_AddItemToArray(arr, o)) {
			cJSON_Delete(o);
			ret = -1;
			break;
		}
		if (!add_str(o, "name",
			     r->t.funcs.frames[f].name +
				 strlen(GPU_NVTX_PREFIX),
			     tmp) ||
		    !add_value(o, "total", r, r->t.total_func[f]) ||
		    !cJSON_AddNumberToObject(o, "total_pct",
					     pct(r, r->t.total_func[f])))
			ret = -1;
	}
	free(ranges);
	return ret;
}

static int add_section_json(cJSON *sections, struct report *r,
			    const struct stack_thread *t, const char *label,
			    struct strbuf *tmp)
{
	cJSON *sec = cJSON_CreateObject(), *funcs, *tables;
	uint32_t *detail = NULL, *lines = NULL;
	size_t n, i, nr_detail;
	int ret = -1;

	if (!sec)
		return -1;
	if (!cJSON_AddItemToArray(sections, sec)) {
		cJSON_Delete(sec);
		return -1;
	}
	n = sort_functions(r, r->opts->sort);
	if (!add_str(sec, "thread", label, tmp) ||
	    !add_str(sec, "process", t ? t->process : NULL, tmp) ||
	    !add_value(sec, "total", r, r->t.section_total) ||
	    !(tally_samples(&r->t) >= 1
		  ? cJSON_AddNumberToObject(sec, "samples",
					    tally_samples(&r->t))
		  : cJSON_AddNullToObject(sec, "samples")) ||
	    !cJSON_AddNumberToObject(sec, "nr_functions", (double)n) ||
	    add_difference(sec, r))
		return -1;
	funcs = cJSON_AddArrayToObject(sec, "functions");
	if (!funcs)
		return -1;
	for (i = 0; i < n && i < r->opts->top; i++)
		if (add_func_json(funcs, r, r->order[i], tmp))
			return -1;
	if (add_nvtx_json(sec, r, tmp))
		return -1;
	tables = cJSON_AddArrayToObject(sec, "line_tables");
	if (!tables)
		return -1;
	n = sort_functions(r, SORT_OWN);
	detail = xmalloc((n + 1) * sizeof(*detail));
	lines = xmalloc((r->prof.stacks.nr_frames + 1) * sizeof(*lines));
	nr_detail = detail_functions(r, n, detail);
	for (i = 0; i < nr_detail; i++)
		if (add_line_table_json(tables, r, detail[i], lines, tmp))
			goto out;
	ret = 0;
out:
	free(lines);
	free(detail);
	return ret;
}

static const char *source_name(const struct profile *p)
{
	switch (p->source) {
	case PROFILE_SPEEDSCOPE:
		return "speedscope";
	case PROFILE_PPROF:
		return "pprof";
	case PROFILE_CHROME:
		return "chrome";
	case PROFILE_HTML:
		return "html";
	default:
		return "folded";
	}
}

/* Returns 0, or -1 when cJSON ran out of memory. */
static int report_json(struct report *r)
{
	const struct stacks *st = &r->prof.stacks;
	struct strbuf tmp = STRBUF_INIT;
	cJSON *root = cJSON_CreateObject(), *sections;
	char label[256];
	char *text = NULL;
	size_t t;
	int ret = -1;

	if (!root)
		goto out;
	if (!add_str(root, "file", r->opts->path, &tmp) ||
	    !cJSON_AddStringToObject(root, "format", source_name(&r->prof)) ||
	    !cJSON_AddStringToObject(
		root, "unit",
		r->prof.unit == PROFILE_UNIT_SECONDS ? "seconds" : "samples") ||
	    !add_str(root, "title", r->prof.title, &tmp) ||
	    !cJSON_AddStringToObject(
		root, "sort", r->opts->sort == SORT_TOTAL ? "total" : "own") ||
	    !cJSON_AddNumberToObject(root, "profiles",
				     (double)r->prof.nr_profiles) ||
	    !cJSON_AddNumberToObject(root, "profiles_skipped",
				     (double)r->prof.nr_skipped) ||
	    !cJSON_AddNumberToObject(root, "streams_skipped",
				     (double)r->prof.nr_streams_skipped) ||
	    !cJSON_AddBoolToObject(root, "thread_prefix",
				   r->prof.thread_prefix) ||
	    !cJSON_AddNumberToObject(
		root, "total", profile_value(&r->prof, st->total_samples)))
		goto out;
	sections = cJSON_AddArrayToObject(root, "sections");
	if (!sections)
		goto out;
	if (!r->opts->threads) {
		tally_count(&r->t, UINT32_MAX);
		if (add_section_json(sections, r, NULL, NULL, &tmp))
			goto out;
	} else {
		for (t = 0; t < st->nr_threads; t++) {
			if (!st->threads[t].samples)
				continue;
			stacks_thread_full_label(&st->threads[t], label,
						 sizeof(label));
			tally_count(&r->t, (uint32_t)t);
			if (add_section_json(sections, r, &st->threads[t],
					     label, &tmp))
				goto out;
		}
	}
	text = cJSON_Print(root);
	if (!text)
		goto out;
	fputs(text, stdout);
	putchar('\n');
	ret = 0;
out:
	cJSON_free(text);
	cJSON_Delete(root);
	strbuf_release(&tmp);
	return ret;
}

static void report_text(struct report *r)
{
	const struct stacks *st = &r->prof.stacks;
	char label[256], total[32];
	size_t t;

	size_t idle = r->prof.nr_idle_skipped;
	size_t others = r->prof.nr_skipped - idle;

	printf("%s: %s", r->opts->path, source_name(&r->prof));
	if (r->prof.source == PROFILE_SPEEDSCOPE)
		printf(", %zu %s profile%s", r->prof.nr_profiles,
		       r->opts->gpu_idle ? "GPU idle"
		       : r->opts->gpu	 ? "GPU"
					 : "CPU",
		       r->prof.nr_profiles == 1 ? "" : "s");
	printf(", %zu thread%s, %s %s\n", st->nr_threads,
	       st->nr_threads == 1 ? "" : "s",
	       fmt_value(r, st->total_samples, total, sizeof(total)),
	       r->prof.unit == PROFILE_UNIT_SECONDS ? "sampled" : "samples");
	if (r->prof.title)
		printf("title: %s\n", r->prof.title);
	if (r->opts->gpu_idle && others)
		printf("not shown: %zu CPU and GPU profile%s (without "
		       "--gpu-idle)\n",
		       others, others == 1 ? "" : "s");
	else if (others)
		printf("not shown: %zu %s profile%s (%s)\n", others,
		       r->opts->gpu ? "CPU" : "GPU", others == 1 ? "" : "s",
		       r->opts->gpu ? "without --gpu" : "see --gpu");
	if (idle)
		printf("not shown: %zu GPU idle profile%s (see --gpu-idle)\n",
		       idle, idle == 1 ? "" : "s");
	if (r->prof.nr_streams_skipped)
		printf("not shown: %zu GPU stream timeline%s (the same time, "
		       "by stream)\n",
		       r->prof.nr_streams_skipped,
		       r->prof.nr_streams_skipped == 1 ? "" : "s");
	if (!r->opts->threads) {
		tally_count(&r->t, UINT32_MAX);
		print_section(r, "all threads");
		return;
	}
	for (t = 0; t < st->nr_threads; t++) {
		if (!st->threads[t].samples)
			continue;
		stacks_thread_full_label(&st->threads[t], label, sizeof(label));
		tally_count(&r->t, (uint32_t)t);
		print_section(r, label);
	}
}

static void report_release(struct report *r)
{
	size_t i;

	for (i = 0; i < r->nr_sources; i++) {
		free(r->sources[i].lines);
		free(r->sources[i].text);
	}
	free(r->sources);
	free(r->order);
	free(r->picked);
	tally_release(&r->t);
	profile_release(&r->prof);
}

int cmd_report(int argc, char **argv)
{
	struct report_opts opts;
	struct report r;
	int ret = EXIT_OK;

	parse_options(&opts, argc, argv);
	memset(&r, 0, sizeof(r));
	r.opts = &opts;
	profile_init(&r.prof);
	if (profile_read(&r.prof, opts.path,
			 opts.gpu_idle
			     ? PROFILE_READ_GPU | PROFILE_READ_GPU_IDLE
			 : opts.gpu ? PROFILE_READ_GPU
				    : PROFILE_READ_CPU)) {
		ret = EXIT_FAILED;
		goto out;
	}
	if (opts.threads && r.prof.source == PROFILE_FOLDED &&
	    !r.prof.thread_prefix)
		warning("'%s' has no thread prefixes (spyc record --threads "
			"writes them): one report for all threads",
			opts.path);
	map_functions(&r);
	pick_functions(&r);
	if (opts.json) {
		if (report_json(&r))
			die("out of memory building the JSON report");
	} else {
		report_text(&r);
	}
	if (fflush(stdout) || ferror(stdout)) {
		error("cannot write the report: %s",
		      strerror(errno ? errno : EIO));
		ret = EXIT_FAILED;
	}
out:
	report_release(&r);
	free(opts.functions);
	return ret;
}
