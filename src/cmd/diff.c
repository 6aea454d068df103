/* SPDX-License-Identifier: MIT */
/*
 * spyc diff: what changed from one profile to another.  The functions,
 * then the lines, whose share of the samples grew or shrank most, each
 * change with its sampling error (from both profiles' sample counts),
 * those within it marked: a change that chance alone could make.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/commands.h"
#include "cmd/options.h"
#include "out/output.h"
#include "profile/profile-read.h"
#include "profile/stacks.h"
#include "profile/tally.h"
#include "util.h"

#define DEFAULT_TOP 20
/*
 * A change is taken as real at this two-sided p-value or below: with
 * fewer than EXACT_MAX samples behind it in the two profiles, from the
 * exact test (how the samples would split between the profiles by
 * chance alone), where the normal approximation calls a function seen 4
 * times in one profile and never in the other a change; else from the
 * sampling error.
 */
#define P_REAL 0.05
#define EXACT_MAX 1000

static const char usage_text[] =
    "usage: spyc diff [options] BASE NEW\n"
    "\n"
    "Compare two profiles spyc wrote, in any format spyc report reads\n"
    "(speedscope, folded, pprof, Chrome trace, HTML; merged ranks too):\n"
    "the functions whose share of the samples grew or shrank most from\n"
    "BASE to NEW, then the lines.  A share is own time (the innermost frame)\n"
    "unless --sort total (anywhere on the stack).  Each change comes with\n"
    "its sampling error, the half-width of its 95% interval from both\n"
    "profiles' sample counts.  A change that chance alone could make\n"
    "(p > 0.05: from that error, or where few samples are behind it,\n"
    "from an exact test of how they split between the profiles) is\n"
    "marked '~'; one of a profile that does not say its sample count\n"
    "(a Chrome trace), '?'.\n"
    "\n"
    "  -o, --output FILE also draw a differential flame graph, an SVG:\n"
    "                    NEW's stacks, each coloured by how its share\n"
    "                    changed (red: larger than in BASE, blue:\n"
    "                    smaller); named .html, the same in a page\n"
    "  -n, --top N       rows in each table (default 20; 0: all)\n"
    "  -s, --sort KEY    own (default) or total\n"
    "      --gpu         the GPU profiles of spyc record --gpu instead\n"
    "      --gpu-idle    their GPU idle time by Python stack instead\n"
    "  -j, --json        print JSON instead of text\n"
    "  -h, --help        this help\n"
    "\n"
    "exit codes: 0 ok, 2 failed (a file cannot be read, is not a profile\n"
    "or holds no samples), 64 usage error\n";

struct diff_opts {
	const char *paths[2]; /* BASE, NEW */
	const char *output;   /* -o: the differential flame graph */
	size_t top;
	int total; /* --sort total */
	unsigned gpu; /* --gpu, --gpu-idle: the profile_read() flags; 0: CPU */
	int json;
};

/* One profile and its sums over every thread. */
struct side {
	struct profile prof;
	struct tally t;
	double samples; /* behind the shares; 0 where not known */
};

/* A function (line 0) or a line, as it is in either profile. */
struct row {
	const struct stack_frame *key;
	uint64_t count[2]; /* own or total, in BASE and NEW */
	double share[2];   /* of each profile's samples, 0 to 1 */
	double change;	   /* NEW's share less BASE's, in points */
	double error;	   /* of the change, in points; < 0: not known */
	/* 1: chance alone is unlikely to make the change, 0: it may; -1:
	 * not known (a profile that does not say its samples) */
	int real;
};

static void parse_options(struct diff_opts *o, int argc, char **argv)
{
	static const struct option options[] = {
	    {"output", required_argument, NULL, 'o'},
	    {"top", required_argument, NULL, 'n'},
	    {"sort", required_argument, NULL, 's'},
	    {"gpu", no_argument, NULL, OPT_GPU},
	    {"gpu-idle", no_argument, NULL, OPT_GPU_IDLE},
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->top = DEFAULT_TOP;
	while ((c = getopt_long(argc, argv, "o:n:s:jh", options, NULL)) != -1) {
		switch (c) {
		case 'o':
			o->output = optarg;
			break;
		case 'n':
			o->top = parse_top_arg(optarg);
			break;
		case 's':
			o->total = parse_sort_total(optarg);
			break;
		case OPT_GPU:
			o->gpu = PROFILE_READ_GPU;
			break;
		case OPT_GPU_IDLE:
			o->gpu = PROFILE_READ_GPU | PROFILE_READ_GPU_IDLE;
			break;
		case 'j':
			o->json = 1;
			break;
		default:
			usage_exit(c, usage_text);
		}
	}
	if (optind != argc - 2) {
		fprintf(stderr, "spyc: diff needs two profile files, BASE and "
				"NEW (see spyc diff --help)\n");
		exit(EXIT_USAGE);
	}
	o->paths[0] = argv[optind];
	o->paths[1] = argv[optind + 1];
}

/*
 * Add side s's counts (by function, or by line) to rows, keyed by
 * (name, file, line) in keys.
 */
static void add_side(struct row **rows, size_t *alloc, struct stacks *keys,
		     const struct side *s, int which, int lines, int total)
{
	const struct tally *t = &s->t;
	const struct stacks *from = lines ? &s->prof.stacks : &t->funcs;
	size_t i, n = from->nr_frames, old;
	uint32_t k;

	for (i = 0; i < n; i++) {
		const struct stack_frame *f = &from->frames[i];
		uint64_t v = lines
				 ? (total ? t->total_line[i] : t->own_line[i])
				 : (total ? t->total_func[i] : t->own_func[i]);

		if (!v)
			continue;
		old = keys->nr_frames;
		k = stacks_frame(keys, f->name, f->file, f->line);
		if (keys->nr_frames > old) {
			ALLOC_GROW(*rows, keys->nr_frames, *alloc);
			memset(&(*rows)[k], 0, sizeof(**rows));
		}
		(*rows)[k].count[which] = v;
	}
}

static double abs_change(const struct row *r)
{
	return fabs(r->change);
}

static int cmp_rows(const void *pa, const void *pb)
{
	const struct row *a = pa, *b = pb;
	int c;

	if (abs_change(a) != abs_change(b))
		return abs_change(a) < abs_change(b) ? 1 : -1;
	c = strcmp(a->key->name, b->key->name);
	if (!c)
		c = strcmp(a->key->file, b->key->file);
	if (!c)
		c = a->key->line - b->key->line;
	return c;
}

/* log P(X = x), X binomial: n trials of probability q. */
static double log_binomial(long x, long n, double q)
{
	return lgamma((double)n + 1) - lgamma((double)x + 1) -
	       lgamma((double)(n - x) + 1) + (double)x * log(q) +
	       (double)(n - x) * log1p(-q);
}

/*
 * The exact two-sided p-value of k[0] and k[1] samples of something in
 * profiles of n[0] and n[1] samples, were its share the same in both:
 * given k[0] + k[1], k[0] is binomial, of probability n[0] / (n[0] +
 * n[1]); the p-value sums the splits no likelier than the one seen.
 */
static double exact_p(const long k[2], const double n[2])
{
	long total = k[0] + k[1], x;
	double q = n[0] / (n[0] + n[1]), seen, p = 0, lx;

	if (!total)
		return 1.0;
	seen = log_binomial(k[0], total, q);
	for (x = 0; x <= total; x++) {
		lx = log_binomial(x, total, q);
		if (lx <= seen + 1e-7)
			p += exp(lx);
	}
	return p < 1.0 ? p : 1.0;
}

/* Whether r's change is unlikely to be chance: row's real. */
static int change_is_real(const struct row *r, const struct side s[2])
{
	long k[2];
	int w;

	if (r->error < 0)
		return -1;
	for (w = 0; w < 2; w++)
		k[w] = lround(r->share[w] * s[w].samples);
	if (k[0] + k[1] < EXACT_MAX)
		return exact_p(k, (const double[]){s[0].samples,
						   s[1].samples}) <= P_REAL;
	return fabs(r->change) > r->error;
}

/* The rows of both sides, by function or line, largest change first. */
static size_t make_rows(struct row **out, struct stacks *keys,
			const struct side s[2], int lines, int total)
{
	struct row *rows = NULL;
	size_t alloc = 0, n, i;
	int w;

	add_side(&rows, &alloc, keys, &s[0], 0, lines, total);
	add_side(&rows, &alloc, keys, &s[1], 1, lines, total);
	n = keys->nr_frames;
	for (i = 0; i < n; i++) {
		struct row *r = &rows[i];
		double v = 0;

		r->key = &keys->frames[i];
		for (w = 0; w < 2; w++) {
			double vw;

			r->share[w] = tally_share(&s[w].t, r->count[w]);
			vw = tally_share_variance(r->share[w], s[w].samples);
			v = v < 0 || vw < 0 ? -1.0 : v + vw;
		}
		r->change = 100.0 * (r->share[1] - r->share[0]);
		r->error = v < 0 ? -1.0 : 100.0 * TALLY_Z95 * sqrt(v);
		r->real = change_is_real(r, s);
	}
	qsort(rows, n, sizeof(*rows), cmp_rows);
	*out = rows;
	return n;
}

/* How many of rows have real as their verdict. */
static size_t count_real(const struct row *rows, size_t n, int real)
{
	size_t i, k = 0;

	for (i = 0; i < n; i++)
		k += rows[i].real == real;
	return k;
}

static const char *row_name(const struct row *r, int lines, char *buf,
			    size_t size)
{
	if (!*r->key->file)
		snprintf(buf, size, "%s", r->key->name);
	else if (lines && r->key->line > 0)
		snprintf(buf, size, "%s (%s:%d)", r->key->name, r->key->file,
			 r->key->line);
	else
		snprintf(buf, size, "%s (%s)", r->key->name, r->key->file);
	return buf;
}

static void print_table(const char *what, const struct row *rows, size_t n,
			size_t top, int lines)
{
	char name[1024], err[16];
	size_t i;

	printf("\n%s: %zu changed more than chance would, %zu within "
	       "chance",
	       what, count_real(rows, n, 1), count_real(rows, n, 0));
	if (count_real(rows, n, -1))
		printf(", %zu not known (no sample count)",
		       count_real(rows, n, -1));
	putchar('\n');
	if (!n)
		return;
	printf("   %8s %7s %7s %7s  %s\n", "CHANGE", "ERROR", "BASE", "NEW",
	       lines ? "LINE" : "FUNCTION");
	for (i = 0; i < n && i < top; i++) {
		const struct row *r = &rows[i];

		if (r->error < 0)
			snprintf(err, sizeof(err), "?");
		else
			snprintf(err, sizeof(err), "%.1f", r->error);
		printf(" %s %+7.1f%% %7s %6.1f%% %6.1f%%  %s\n",
		       r->real > 0 ? " "
		       : r->real   ? "?"
				   : "~",
		       r->change, err, 100.0 * r->share[0], 100.0 * r->share[1],
		       row_name(r, lines, name, sizeof(name)));
	}
}

static void print_side(const char *label, const char *path,
		       const struct side *s)
{
	printf("%s %s: ", label, path);
	if (s->samples >= 1)
		printf("%.0f samples\n", s->samples);
	else
		printf("sample count not known (no sample rate in the file): "
		       "no sampling error\n");
}

static int add_rows_json(cJSON *obj, const char *name, const struct row *rows,
			 size_t n, size_t top)
{
	cJSON *arr = cJSON_AddArrayToObject(obj, name), *o;
	size_t i;

	if (!arr)
		return -1;
	for (i = 0; i < n && i < top; i++) {
		const struct row *r = &rows[i];

		o = cJSON_CreateObject();
		if (!o || !cJSON_AddItemToArray(arr, o)) {
			cJSON_Delete(o);
			return -1;
		}
		if (!cJSON_AddStringToObject(o, "name", r->key->name) ||
		    !cJSON_AddStringToObject(o, "file", r->key->file) ||
		    !cJSON_AddNumberToObject(o, "line", r->key->line) ||
		    !cJSON_AddNumberToObject(o, "base_pct",
					     100.0 * r->share[0]) ||
		    !cJSON_AddNumberToObject(o, "new_pct",
					     100.0 * r->share[1]) ||
		    !cJSON_AddNumberToObject(o, "change", r->change) ||
		    !(r->error < 0
			  ? cJSON_AddNullToObject(o, "error")
			  : cJSON_AddNumberToObject(o, "error", r->error)) ||
		    !(r->real < 0 ? cJSON_AddNullToObject(o, "real")
				  : cJSON_AddBoolToObject(o, "real", r->real)))
			return -1;
	}
	return 0;
}

static int print_json(const struct diff_opts *o, const struct side s[2],
		      const struct row *funcs, size_t nf,
		      const struct row *lines, size_t nl)
{
	cJSON *root = cJSON_CreateObject(), *side;
	char *text = NULL;
	int w, ret = -1;

	if (!root ||
	    !cJSON_AddStringToObject(root, "sort", o->total ? "total" : "own"))
		goto out;
	for (w = 0; w < 2; w++) {
		side = cJSON_AddObjectToObject(root, w ? "new" : "base");
		if (!side ||
		    !cJSON_AddStringToObject(side, "file", o->paths[w]) ||
		    !(s[w].samples >= 1
			  ? cJSON_AddNumberToObject(side, "samples",
						    s[w].samples)
			  : cJSON_AddNullToObject(side, "samples")))
			goto out;
	}
	if (!cJSON_AddNumberToObject(root, "functions_changed",
				     (double)count_real(funcs, nf, 1)) ||
	    !cJSON_AddNumberToObject(root, "functions_within_chance",
				     (double)count_real(funcs, nf, 0)) ||
	    !cJSON_AddNumberToObject(root, "functions_not_known",
				     (double)count_real(funcs, nf, -1)) ||
	    add_rows_json(root, "functions", funcs, nf, o->top) ||
	    add_rows_json(root, "lines", lines, nl, o->top))
		goto out;
	text = cJSON_Print(root);
	if (!text)
		goto out;
	puts(text);
	ret = 0;
out:
	cJSON_free(text);
	cJSON_Delete(root);
	return ret;
}

/* e's samples: its count, or its time at the profile's rate. */
static uint64_t samples(const struct side *s, const struct stack_entry *e)
{
	if (s->prof.unit != PROFILE_UNIT_SECONDS || s->prof.rate_hz <= 0)
		return e->count;
	return (uint64_t)llround((double)e->count / 1e9 * s->prof.rate_hz);
}

/*
 * BASE's and NEW's stacks in one table, for the differential flame
 * graph: each profile's threads folded into one, BASE's first (thread
 * 0), the frames of both interned together.
 */
static void joint_stacks(struct stacks *j, const struct side s[2])
{
	uint32_t *ids = NULL, *path = NULL, th;
	size_t alloc_ids = 0, alloc_path = 0, i, k;
	int w;

	for (w = 0; w < 2; w++) {
		const struct stacks *st = &s[w].prof.stacks;

		th = stacks_thread(j, (uint64_t)w + 1, 0, w ? "NEW" : "BASE");
		ALLOC_GROW(ids, st->nr_frames + 1, alloc_ids);
		for (i = 0; i < st->nr_frames; i++)
			ids[i] = stacks_frame(j, st->frames[i].name,
					      st->frames[i].file,
					      st->frames[i].line);
		for (i = 0; i < st->nr_entries; i++) {
			const struct stack_entry *e = &st->entries[i];

			ALLOC_GROW(path, e->depth + 1, alloc_path);
			for (k = 0; k < e->depth; k++)
				path[k] = ids[e->frames[k]];
			stacks_add(j, th, path, e->depth, samples(&s[w], e));
		}
	}
	free(path);
	free(ids);
}

static int write_flame(FILE *fp, void *data)
{
	const struct stacks *j = data;
	struct profile_meta meta;

	memset(&meta, 0, sizeof(meta));
	meta.title = "spyc diff";
	return out_svg_write_diff(fp, j, 0, &meta);
}

/* The same as an HTML page: joint_stacks puts BASE first. */
static int write_page(FILE *fp, void *data)
{
	const struct stacks *j = data;
	struct profile_meta meta;

	memset(&meta, 0, sizeof(meta));
	meta.title = "spyc diff";
	meta.diff = 1;
	return out_html_write(fp, j, &meta);
}

int cmd_diff(int argc, char **argv)
{
	struct diff_opts o;
	struct side s[2];
	struct stacks fkeys, lkeys;
	struct row *funcs = NULL, *lines = NULL;
	size_t nf = 0, nl = 0;
	int w, ret = EXIT_OK;

	parse_options(&o, argc, argv);
	memset(s, 0, sizeof(s));
	stacks_init(&fkeys);
	stacks_init(&lkeys);
	for (w = 0; w < 2; w++)
		profile_init(&s[w].prof);
	for (w = 0; w < 2; w++) {
		if (profile_read(&s[w].prof, o.paths[w],
				 o.gpu ? o.gpu : PROFILE_READ_CPU)) {
			ret = EXIT_FAILED;
			goto out;
		}
		tally_init(&s[w].t, &s[w].prof);
		tally_count(&s[w].t, UINT32_MAX);
		s[w].samples = tally_samples(&s[w].t);
	}
	nf = make_rows(&funcs, &fkeys, s, 0, o.total);
	nl = make_rows(&lines, &lkeys, s, 1, o.total);
	if (o.output) {
		struct stacks j;

		stacks_init(&j);
		joint_stacks(&j, s);
		if (write_file_atomic(o.output,
				      output_format_from_path(o.output) ==
					      FORMAT_HTML
					  ? write_page
					  : write_flame,
				      &j))
			ret = EXIT_FAILED;
		stacks_release(&j);
		if (ret)
			goto out;
	}
	if (o.json) {
		if (print_json(&o, s, funcs, nf, lines, nl))
			die("out of memory building the JSON diff");
	} else {
		print_side("BASE", o.paths[0], &s[0]);
		print_side("NEW ", o.paths[1], &s[1]);
		printf("shares of %s time, in points; ERROR: the change's "
		       "sampling error (95%%); ~: chance alone could make "
		       "it; ?: not known\n",
		       o.total ? "total" : "own");
		print_table("Functions", funcs, nf, o.top, 0);
		print_table("Lines", lines, nl, o.top, 1);
	}
	if (fflush(stdout) || ferror(stdout)) {
		error("cannot write the diff: %s",
		      strerror(errno ? errno : EIO));
		ret = EXIT_FAILED;
	}
out:
	free(lines);
	free(funcs);
	stacks_release(&lkeys);
	stacks_release(&fkeys);
	for (w = 0; w < 2; w++) {
		tally_release(&s[w].t);
		profile_release(&s[w].prof);
	}
	return ret;
}
