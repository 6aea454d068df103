/* SPDX-License-Identifier: MIT */
/* Reading speedscope JSON and folded stacks, as spyc writes them, into
 * struct stacks. */
#include "profile/profile-read.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <zlib.h>

#include "profile.pb-c.h"

#include "py/framename.h"
#include "out/output.h"
#include "util.h"

/* What out/folded.c writes for a sample with no frames. */
#define FOLDED_EMPTY_STACK "[empty]"
/* The label of the one thread of a folded file without thread prefixes. */
#define ALL_THREADS "all threads"
/* Bytes of a bad folded line quoted in an error. */
#define QUOTE_MAX 60

void profile_add_root(struct profile *p, const char *dir)
{
	if (!*dir || p->nr_roots >= SOURCE_ROOTS_MAX)
		return;
	ALLOC_GROW(p->roots, p->nr_roots + 1, p->alloc_roots);
	p->roots[p->nr_roots++] = xstrdup(dir);
}

/* The source roots a JSON profile lists (spyc's, optional: else none). */
static void read_roots(struct profile *p, const cJSON *roots)
{
	const cJSON *r;

	if (!cJSON_IsArray(roots))
		return;
	cJSON_ArrayForEach(r, roots) if (cJSON_IsString(r))
	    profile_add_root(p, r->valuestring);
}

/* spyc_sources: {file: {"id": source_id_format's, "text": ...}}. */
static void read_sources(struct profile *p, const cJSON *sources)
{
	const cJSON *f;

	if (!cJSON_IsObject(sources))
		return;
	cJSON_ArrayForEach(f, sources)
	{
		const cJSON *text = cJSON_GetObjectItemCaseSensitive(f, "text");
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(f, "id");
		struct profile_source_file *s;

		if (!f->string || !cJSON_IsObject(f))
			continue;
		ALLOC_GROW(p->sources, p->nr_sources + 1, p->alloc_sources);
		s = &p->sources[p->nr_sources++];
		memset(s, 0, sizeof(*s));
		s->file = xstrdup(f->string);
		if (cJSON_IsString(text))
			s->text = xstrdup(text->valuestring);
		s->has_id = cJSON_IsString(id) &&
			    !source_id_parse(id->valuestring, &s->id);
	}
}

const struct profile_source_file *profile_source(const struct profile *p,
						 const char *file)
{
	size_t i;

	for (i = 0; i < p->nr_sources; i++)
		if (!strcmp(p->sources[i].file, file))
			return &p->sources[i];
	return NULL;
}

/* A positive rate_hz member of obj, else 0. */
static double rate_of(const cJSON *obj)
{
	const cJSON *rate = cJSON_GetObjectItemCaseSensitive(obj, "rate_hz");

	if (!cJSON_IsNumber(rate) || !isfinite(rate->valuedouble) ||
	    rate->valuedouble <= 0)
		return 0;
	return rate->valuedouble;
}

/*
 * spyc_process.rate_hz of a speedscope file spyc record wrote, or the
 * rate every input of one spyc merge wrote was sampled at (spyc_merge:
 * one each), else 0.  Its CPU profiles' weights are samples at that
 * rate, not its GPU ones'.
 */
static double read_rate(const cJSON *root, unsigned flags)
{
	const cJSON *merged =
	    cJSON_GetObjectItemCaseSensitive(root, "spyc_merge");
	const cJSON *in;
	double rate = 0;

	if (flags & (PROFILE_READ_GPU | PROFILE_READ_GPU_IDLE))
		return 0;
	if (!cJSON_IsArray(merged))
		return rate_of(
		    cJSON_GetObjectItemCaseSensitive(root, "spyc_process"));
	cJSON_ArrayForEach(in, merged)
	{
		if (!rate_of(in) || (rate && rate_of(in) != rate))
			return 0;
		rate = rate_of(in);
	}
	return rate;
}

void profile_init(struct profile *p)
{
	memset(p, 0, sizeof(*p));
	stacks_init(&p->stacks);
}

void profile_release(struct profile *p)
{
	size_t i;

	for (i = 0; i < p->nr_roots; i++)
		free(p->roots[i]);
	free(p->roots);
	for (i = 0; i < p->nr_sources; i++) {
		free(p->sources[i].file);
		free(p->sources[i].text);
	}
	free(p->sources);
	free(p->title);
	stacks_release(&p->stacks);
	profile_init(p);
}

double profile_value(const struct profile *p, uint64_t count)
{
	return p->unit == PROFILE_UNIT_SECONDS ? (double)count / 1e9
					       : (double)count;
}

/* Parse a whole decimal number of at most 19 digits; -1 if s is not one. */
static int parse_count(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (!len || len > 19)
		return -1;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = v;
	return 0;
}

/*
 * Whether s[0..len-1] ends in "OPEN N)" (OPEN e.g. " (tid "), N a whole
 * number: then *at is where OPEN starts and *n is N.
 */
static int ends_with_number(const char *s, size_t len, const char *open,
			    size_t *at, uint64_t *n)
{
	size_t k, olen = strlen(open);

	if (!len || s[len - 1] != ')')
		return 0;
	for (k = len - 1; k > 0 && s[k - 1] >= '0' && s[k - 1] <= '9'; k--)
		;
	if (k == len - 1 || k < olen || memcmp(s + k - olen, open, olen) ||
	    parse_count(s + k, len - 1 - k, n))
		return 0;
	*at = k - olen;
	return 1;
}

/*
 * Where the thread label starts in a speedscope profile's name: after a
 * process label "COMMAND (pid N): " (spyc record --subprocesses), else
 * 0.  *proc_len: the process label's length.
 */
static size_t split_process(const char *s, size_t len, size_t *proc_len)
{
	const char *p = s, *end = s + len, *colon;
	size_t at;
	uint64_t pid;

	while ((colon = memmem(p, (size_t)(end - p), "): ", 3)) != NULL) {
		if (ends_with_number(s, (size_t)(colon + 1 - s), "(pid ", &at,
				     &pid)) {
			*proc_len = (size_t)(colon + 1 - s);
			return *proc_len + 2;
		}
		p = colon + 1;
	}
	return 0;
}

/* Whether s[0..len-1] is a process label "COMMAND (pid N)". */
static int looks_like_process(const char *s, size_t len)
{
	size_t at;
	uint64_t pid;

	return ends_with_number(s, len, "(pid ", &at, &pid);
}

/*
 * Whether s[0..len-1] is a thread label: "thread 0xHEX", else anything
 * ending in " (tid N)".
 */
static int looks_like_label(const char *s, size_t len)
{
	static const char anon[] = "thread 0x";
	size_t at, i;
	uint64_t tid;

	if (ends_with_number(s, len, " (tid ", &at, &tid))
		return 1;
	if (len <= sizeof(anon) - 1 || strncmp(s, anon, sizeof(anon) - 1))
		return 0;
	for (i = sizeof(anon) - 1; i < len; i++)
		if (!strchr("0123456789abcdefABCDEF", s[i]))
			return 0;
	return 1;
}

/*
 * Add (or find) the thread labelled label[0..len-1] of process (NULL:
 * none), as stacks_thread_label() writes labels: "thread 0xHEX" or NAME,
 * then " (tid N)" or nothing.  order: the ident to give a named thread.
 * Returns its id.
 */
static uint32_t add_thread_label(struct stacks *st, const char *process,
				 const char *label, size_t len, uint64_t order)
{
	static const char anon[] = "thread 0x";
	char *name = xstrndup(label, len);
	uint64_t tid = 0, v;
	size_t n = len, k;
	uint32_t id;

	if (ends_with_number(name, n, " (tid ", &k, &v) && v <= LONG_MAX) {
		tid = v;
		n = k;
		name[n] = '\0';
	}
	if (n > sizeof(anon) - 1 && !strncmp(name, anon, sizeof(anon) - 1) &&
	    strspn(name + sizeof(anon) - 1, "0123456789abcdefABCDEF") ==
		n - (sizeof(anon) - 1)) {
		v = strtoull(name + sizeof(anon) - 1, NULL, 16);
		id = stacks_thread_in(st, process, v, (long)tid, NULL);
		free(name);
		return id;
	}
	/* A named thread: found again by its label, else a new one. */
	for (k = 0; k < st->nr_threads; k++) {
		const struct stack_thread *t = &st->threads[k];

		if (t->name && !strcmp(t->name, name) && t->tid == (long)tid &&
		    (t->process && process ? !strcmp(t->process, process)
					   : t->process == process)) {
			free(name);
			return (uint32_t)k;
		}
	}
	id = stacks_thread_in(st, process, order, (long)tid, name);
	free(name);
	return id;
}

/*
 * Add the folded frame text s[0..len-1]: "name (file:line)", "name
 * (file)" or "name".  The file is what follows the first " (" of a text
 * ending in ')': names (Python qualified names, C++ symbols) have no
 * " (", while paths may.
 */
static uint32_t add_folded_frame(struct stacks *st, const char *s, size_t len,
				 struct strbuf *tmp)
{
	const char *open = NULL, *colon;
	size_t name_len = len, file_len;
	uint64_t line = 0;
	char *name, *file;
	uint32_t id;
	size_t i;

	if (len > 2 && s[len - 1] == ')')
		for (i = 0; i + 1 < len - 1; i++)
			if (s[i] == ' ' && s[i + 1] == '(') {
				open = s + i;
				break;
			}
	if (!open) {
		strbuf_reset(tmp);
		strbuf_add(tmp, s, len);
		return stacks_frame(st, tmp->buf, "", 0);
	}
	name_len = (size_t)(open - s);
	file_len = len - name_len - 3; /* " (" and ")" */
	colon = memrchr(open + 2, ':', file_len);
	if (colon &&
	    !parse_count(colon + 1, (size_t)(s + len - 1 - (colon + 1)),
			 &line) &&
	    line <= INT32_MAX)
		file_len = (size_t)(colon - (open + 2));
	else
		line = 0;
	name = xstrndup(s, name_len);
	file = xstrndup(open + 2, file_len);
	id = stacks_frame(st, name, file, (int)line);
	free(file);
	free(name);
	return id;
}

/* One folded line: where its stack ends and its count. */
struct folded_line {
	const char *start;
	size_t stack_len; /* bytes before the space and count */
	uint64_t count;
	int prefix; /* elements before the frames: see folded_prefix() */
};

/*
 * How many elements of line l are not frames: 1 for a thread label, 2
 * for a process label and a thread label, 0 when it begins with neither.
 */
static int folded_prefix(const struct folded_line *l)
{
	const char *s = l->start, *end = s + l->stack_len, *semi, *next;

	semi = memchr(s, ';', l->stack_len);
	if (!semi)
		return looks_like_label(s, l->stack_len) ? 1 : 0;
	next = memchr(semi + 1, ';', (size_t)(end - (semi + 1)));
	if (!next)
		next = end;
	if (looks_like_process(s, (size_t)(semi - s)) &&
	    looks_like_label(semi + 1, (size_t)(next - (semi + 1))))
		return 2;
	return looks_like_label(s, (size_t)(semi - s)) ? 1 : 0;
}

static int bad_line(const char *name, size_t nr, const char *s, size_t len,
		    const char *why)
{
	char quote[QUOTE_MAX + 1];
	size_t i, n = len < QUOTE_MAX ? len : QUOTE_MAX;

	for (i = 0; i < n; i++)
		quote[i] = (unsigned char)s[i] < 0x20 ? '?' : s[i];
	quote[n] = '\0';
	return error("'%s' is not a profile: line %zu %s: '%s%s'", name, nr,
		     why, quote, len > n ? "..." : "");
}

/*
 * Split data into lines "STACK COUNT", skipping blank ones.  Returns the
 * lines (caller frees) with their number in *nr, or NULL after reporting.
 */
static struct folded_line *split_folded(const char *name, const char *data,
					size_t len, size_t *nr)
{
	struct folded_line *lines = NULL, *l;
	size_t alloc = 0, n = 0, nr_line = 0, line_len;
	const char *p = data, *end = data + len, *eol, *space;

	while (p < end) {
		eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			eol = end;
		line_len = (size_t)(eol - p);
		nr_line++;
		if (line_len && p[line_len - 1] == '\r')
			line_len--;
		if (!line_len) {
			p = eol + 1;
			continue;
		}
		ALLOC_GROW(lines, n + 1, alloc);
		l = &lines[n];
		space = memrchr(p, ' ', line_len);
		if (!space || space == p) {
			bad_line(name, nr_line, p, line_len,
				 "is not 'STACK COUNT'");
			goto fail;
		}
		if (parse_count(space + 1, line_len - (size_t)(space + 1 - p),
				&l->count)) {
			bad_line(name, nr_line, p, line_len,
				 "does not end in a count");
			goto fail;
		}
		l->start = p;
		l->stack_len = (size_t)(space - p);
		n++;
		p = eol + 1;
	}
	*nr = n;
	return lines;
fail:
	free(lines);
	return NULL;
}

static int read_folded(struct profile *p, const char *name, const char *data,
		       size_t len)
{
	struct stacks *st = &p->stacks;
	struct strbuf tmp = STRBUF_INIT;
	struct folded_line *lines;
	uint32_t *ids = NULL, thread = 0;
	size_t nr, i, alloc_ids = 0, depth;
	const char *s, *end, *semi;
	int ret = -1;

	if (memchr(data, '\0', len))
		return error("'%s' is not a profile: it holds binary data",
			     name);
	lines = split_folded(name, data, len, &nr);
	if (!lines)
		return -1;
	p->source = PROFILE_FOLDED;
	p->unit = PROFILE_UNIT_SAMPLES;
	/*
	 * Prefixed when every line begins with a thread label, or with a
	 * process label and then a thread label (--subprocesses).
	 */
	p->thread_prefix = nr > 0;
	for (i = 0; i < nr && p->thread_prefix; i++) {
		lines[i].prefix = folded_prefix(&lines[i]);
		p->thread_prefix = lines[i].prefix > 0;
	}
	if (!p->thread_prefix)
		thread = stacks_thread(st, 0, 0, ALL_THREADS);
	for (i = 0; i < nr; i++) {
		s = lines[i].start;
		end = s + lines[i].stack_len;
		depth = 0;
		if (p->thread_prefix) {
			char *process = NULL;

			semi = memchr(s, ';', (size_t)(end - s));
			if (!semi)
				semi = end;
			if (lines[i].prefix == 2) {
				process = xstrndup(s, (size_t)(semi - s));
				s = semi + 1;
				semi = memchr(s, ';', (size_t)(end - s));
				if (!semi)
					semi = end;
			}
			thread =
			    add_thread_label(st, process, s, (size_t)(semi - s),
					     st->nr_threads + 1);
			free(process);
			s = semi < end ? semi + 1 : end;
		} else if ((size_t)(end - s) == strlen(FOLDED_EMPTY_STACK) &&
			   !memcmp(s, FOLDED_EMPTY_STACK, (size_t)(end - s))) {
			s = end;
		}
		while (s < end) {
			semi = memchr(s, ';', (size_t)(end - s));
			if (!semi)
				semi = end;
			if (semi == s) {
				bad_line(name, i + 1, lines[i].start,
					 lines[i].stack_len,
					 "has an empty frame");
				goto out;
			}
			ALLOC_GROW(ids, depth + 1, alloc_ids);
			ids[depth++] =
			    add_folded_frame(st, s, (size_t)(semi - s), &tmp);
			s = semi + 1;
		}
		if (stacks_add(st, thread, ids, depth, lines[i].count) ==
		    STACKS_NO_ENTRY)
			goto out;
	}
	ret = 0;
out:
	free(ids);
	free(lines);
	strbuf_release(&tmp);
	return ret;
}

/* Nanoseconds per speedscope unit; 0 for counts ("none", "bytes"). */
static int unit_scale(const char *unit, double *ns)
{
	static const struct {
		const char *name;
		double ns;
	} units[] = {
	    {"none", 0},	   {"bytes", 0},	  {"nanoseconds", 1},
	    {"microseconds", 1e3}, {"milliseconds", 1e6}, {"seconds", 1e9},
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(units); i++)
		if (!strcmp(unit, units[i].name)) {
			*ns = units[i].ns;
			return 0;
		}
	return -1;
}

/* A weight in the profile's unit as a count; -1 if it is not one. */
static int weight_count(double w, double ns, uint64_t *count)
{
	double v = ns ? w * ns : w;

	if (!isfinite(v) || v < 0 || v >= 1.8e19)
		return -1;
	*count = (uint64_t)llround(v);
	return 0;
}

/* A speedscope file's frames: the stacks frame id of each index. */
struct frame_map {
	uint32_t *ids;
	size_t nr;
};

/* Frame ids of a sample array; -1 when it is not one. */
static int sample_ids(const cJSON *sample, const struct frame_map *map,
		      uint32_t **ids, size_t *alloc, size_t *depth)
{
	const cJSON *item;
	size_t n = 0;
	double v;

	if (!cJSON_IsArray(sample))
		return -1;
	cJSON_ArrayForEach(item, sample)
	{
		if (!cJSON_IsNumber(item))
			return -1;
		v = item->valuedouble;
		if (!(v >= 0) || v >= (double)map->nr || v != floor(v))
			return -1;
		ALLOC_GROW(*ids, n + 1, *alloc);
		(*ids)[n++] = map->ids[(size_t)v];
	}
	*depth = n;
	return 0;
}

static int read_sampled(struct profile *p, const char *name, size_t index,
			const cJSON *prof, const struct frame_map *map,
			uint32_t thread, double ns)
{
	const cJSON *samples =
	    cJSON_GetObjectItemCaseSensitive(prof, "samples");
	const cJSON *weights =
	    cJSON_GetObjectItemCaseSensitive(prof, "weights");
	const cJSON *s, *w;
	uint32_t *ids = NULL;
	size_t alloc = 0, depth, i = 0;
	uint64_t count;
	int ret = -1;

	if (!cJSON_IsArray(samples) || !cJSON_IsArray(weights) ||
	    cJSON_GetArraySize(samples) != cJSON_GetArraySize(weights))
		return error("'%s' is not a profile: profile %zu has no "
			     "samples and weights of one length",
			     name, index);
	for (s = samples->child, w = weights->child; s && w;
	     s = s->next, w = w->next, i++) {
		if (sample_ids(s, map, &ids, &alloc, &depth)) {
			error("'%s' is not a profile: sample %zu of profile "
			      "%zu is not a list of frame indexes",
			      name, i, index);
			goto out;
		}
		if (!cJSON_IsNumber(w) ||
		    weight_count(w->valuedouble, ns, &count)) {
			error("'%s' is not a profile: weight %zu of profile "
			      "%zu is not a number of at least 0",
			      name, i, index);
			goto out;
		}
		if (stacks_add(&p->stacks, thread, ids, depth, count) ==
		    STACKS_NO_ENTRY)
			goto out;
	}
	ret = 0;
out:
	free(ids);
	return ret;
}

/*
 * An evented profile: "O" opens a frame, "C" closes the innermost one,
 * at times that never decrease.  Between two events, the frames open
 * then weigh the time that passed.
 */
static int read_evented(struct profile *p, const char *name, size_t index,
			const cJSON *prof, const struct frame_map *map,
			uint32_t thread, double ns)
{
	const cJSON *events = cJSON_GetObjectItemCaseSensitive(prof, "events");
	const cJSON *ev, *type, *frame, *at;
	uint32_t *open = NULL, id;
	size_t alloc = 0, depth = 0, i = 0;
	double last = 0;
	uint64_t count;
	int ret = -1;

	if (!cJSON_IsArray(events))
		return error("'%s' is not a profile: evented profile %zu has "
			     "no events",
			     name, index);
	cJSON_ArrayForEach(ev, events)
	{
		type = cJSON_GetObjectItemCaseSensitive(ev, "type");
		frame = cJSON_GetObjectItemCaseSensitive(ev, "frame");
		at = cJSON_GetObjectItemCaseSensitive(ev, "at");
		if (!cJSON_IsString(type) || !cJSON_IsNumber(frame) ||
		    !cJSON_IsNumber(at) || !isfinite(at->valuedouble) ||
		    !(frame->valuedouble >= 0) ||
		    frame->valuedouble >= (double)map->nr ||
		    frame->valuedouble != floor(frame->valuedouble) ||
		    (i && at->valuedouble < last))
			goto bad;
		if (depth && at->valuedouble > last) {
			if (weight_count(at->valuedouble - last, ns, &count))
				goto bad;
			if (stacks_add(&p->stacks, thread, open, depth,
				       count) == STACKS_NO_ENTRY)
				goto out;
		}
		last = at->valuedouble;
		id = map->ids[(size_t)frame->valuedouble];
		if (!strcmp(type->valuestring, "O")) {
			ALLOC_GROW(open, depth + 1, alloc);
			open[depth++] = id;
		} else if (!strcmp(type->valuestring, "C") && depth &&
			   open[depth - 1] == id) {
			depth--;
		} else {
			goto bad;
		}
		i++;
	}
	ret = 0;
	goto out;
bad:
	error("'%s' is not a profile: event %zu of profile %zu is not an "
	      "open or close in order",
	      name, i, index);
out:
	free(open);
	return ret;
}

static int read_frames(struct profile *p, const char *name, const cJSON *frames,
		       struct frame_map *map)
{
	const cJSON *f, *fname, *file, *line;
	size_t i = 0;
	double v;

	cJSON_ArrayForEach(f, frames)
	{
		fname = cJSON_GetObjectItemCaseSensitive(f, "name");
		file = cJSON_GetObjectItemCaseSensitive(f, "file");
		line = cJSON_GetObjectItemCaseSensitive(f, "line");
		v = cJSON_IsNumber(line) ? line->valuedouble : 0;
		if (!cJSON_IsString(fname) || (file && !cJSON_IsString(file)) ||
		    (line && !cJSON_IsNumber(line)) || !(v >= 0) ||
		    v > INT32_MAX)
			return error("'%s' is not a profile: frame %zu has no "
				     "name, or a bad file or line",
				     name, i);
		/* Interned: two equal frames of the file get one id. */
		map->ids[i++] =
		    stacks_frame(&p->stacks, fname->valuestring,
				 file ? file->valuestring : "", (int)v);
	}
	return 0;
}

/*
 * The thread of a speedscope profile named name: stacks_thread_full_label()
 * made it, "PROCESS: LABEL" or "LABEL".
 */
static uint32_t add_profile_thread(struct stacks *st, const char *name)
{
	size_t len = strlen(name), proc_len = 0;
	size_t at = split_process(name, len, &proc_len);
	char *process = at ? xstrndup(name, proc_len) : NULL;
	uint32_t id;

	id = add_thread_label(st, process, name + at, len - at,
			      st->nr_threads + 1);
	free(process);
	return id;
}

/* One "X" event of a Chrome trace's stack rows: a frame open [ts, end). */
struct chrome_slice {
	double pid, tid;
	int64_t ts, end; /* microseconds */
	uint32_t frame;
};

/* A thread of a Chrome trace: its (pid, tid) and its name, if given. */
struct chrome_row {
	double pid, tid;
	const char *name, *process;
};

static int cmp_slice(const void *a, const void *b)
{
	const struct chrome_slice *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	/* Outer frames first: the longer of two that start together. */
	return x->end > y->end ? -1 : x->end < y->end;
}

static const char *json_str(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double json_num(const cJSON *obj, const char *key, int *ok)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) {
		*ok = 0;
		return 0;
	}
	return v->valuedouble;
}

/*
 * The thread of a Chrome trace's row (pid, tid), named as its M events;
 * after its process's name when the trace has several with stack rows.
 */
static uint32_t chrome_thread(struct profile *p, const struct chrome_row *rows,
			      size_t nr_rows, size_t nr_processes, double pid,
			      double tid)
{
	const char *process = NULL, *label = NULL;
	char fallback[64];
	size_t i;

	for (i = 0; i < nr_rows; i++) {
		if (rows[i].pid != pid)
			continue;
		if (rows[i].process)
			process = rows[i].process;
		if (rows[i].tid == tid && rows[i].name)
			label = rows[i].name;
	}
	if (!label) {
		snprintf(fallback, sizeof(fallback), "thread %.0f", tid);
		label = fallback;
	}
	/* One process: its title names the trace, not each thread. */
	if (nr_processes < 2)
		process = NULL;
	return add_thread_label(&p->stacks, process, label, strlen(label),
				p->stacks.nr_threads + 1);
}

/*
 * Push the stack open[0..depth-1] over [*at, until) as a sample of that
 * many nanoseconds, and move *at to until.  0, or -1 (reported).
 */
static int chrome_span(struct profile *p, uint32_t thread, const uint32_t *open,
		       size_t depth, int64_t *at, int64_t until)
{
	if (depth && until > *at &&
	    stacks_add(&p->stacks, thread, open, depth,
		       (uint64_t)(until - *at) * 1000) == STACKS_NO_ENTRY)
		return -1;
	if (until > *at)
		*at = until;
	return 0;
}

/*
 * A Chrome trace spyc record wrote (--format chrome): each thread's row
 * of "X" events of category "spyc", one per stretch of time a function
 * was on its stack (nested: a callee inside its caller), with the line
 * it was at when first seen.  The time each stack was open is its
 * weight; rows are named by their "thread_name" events.  Its GPU rows
 * are not read.
 */
static int read_chrome(struct profile *p, const char *name, const cJSON *root,
		       unsigned flags)
{
	const cJSON *events =
	    cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
	const cJSON *other =
	    cJSON_GetObjectItemCaseSensitive(root, "otherData");
	const cJSON *ev, *args;
	struct chrome_slice *slices = NULL;
	struct chrome_row *rows = NULL;
	size_t nr = 0, alloc = 0, nr_rows = 0, alloc_rows = 0, i, index = 0;
	size_t depth = 0, nr_processes = 0, alloc_open = 0;
	uint32_t *open = NULL, thread = 0;
	int64_t *ends = NULL, at = 0;
	int ret = -1;

	p->source = PROFILE_CHROME;
	p->unit = PROFILE_UNIT_SECONDS;
	if (!(flags & PROFILE_READ_CPU))
		return error("'%s': no profile of the kind asked for (report "
			     "reads a Chrome trace's CPU rows only)",
			     name);
	read_roots(
	    p, cJSON_GetObjectItemCaseSensitive(other, OUTPUT_SOURCE_ROOTS));
	cJSON_ArrayForEach(ev, events)
	{
		const char *ph = json_str(ev, "ph"), *cat = json_str(ev, "cat");
		const char *fname = json_str(ev, "name");
		int ok = 1;
		double pid = json_num(ev, "pid", &ok);
		double tid = json_num(ev, "tid", &ok);

		index++;
		if (!ph || !ok)
			continue;
		args = cJSON_GetObjectItemCaseSensitive(ev, "args");
		if (!strcmp(ph, "M") && fname &&
		    (!strcmp(fname, "thread_name") ||
		     !strcmp(fname, "process_name"))) {
			ALLOC_GROW(rows, nr_rows + 1, alloc_rows);
			rows[nr_rows].pid = pid;
			rows[nr_rows].tid = tid;
			rows[nr_rows].name = rows[nr_rows].process = NULL;
			if (!strcmp(fname, "thread_name")) {
				rows[nr_rows].name = json_str(args, "name");
			} else {
				rows[nr_rows].process = json_str(args, "name");
			}
			nr_rows++;
			continue;
		}
		if (strcmp(ph, "X") || !cat || strcmp(cat, "spyc"))
			continue;
		{
			double ts = json_num(ev, "ts", &ok);
			double dur = json_num(ev, "dur", &ok);
			const char *file = json_str(args, "file");
			double line = json_num(args, "line", &ok);

			if (!ok || !fname || ts < 0 || dur < 0 ||
			    ts + dur > 9e15 || line < 0 || line > INT_MAX) {
				error("'%s' is not a profile: trace event %zu "
				      "is not a stack slice (name, ts, dur, "
				      "args.line)",
				      name, index - 1);
				goto out;
			}
			ALLOC_GROW(slices, nr + 1, alloc);
			slices[nr].pid = pid;
			slices[nr].tid = tid;
			slices[nr].ts = (int64_t)llround(ts);
			slices[nr].end = (int64_t)llround(ts + dur);
			slices[nr].frame = stacks_frame(
			    &p->stacks, fname, file ? file : "", (int)line);
			nr++;
		}
	}
	if (nr)
		qsort(slices, nr, sizeof(*slices), cmp_slice);
	/* The processes with stack rows (not the GPU's). */
	for (i = 0; i < nr; i++)
		nr_processes += !i || slices[i].pid != slices[i - 1].pid;
	for (i = 0; i < nr; i++) {
		const struct chrome_slice *s = &slices[i];

		if (!i || s->pid != slices[i - 1].pid ||
		    s->tid != slices[i - 1].tid) {
			/* A new row: the last one's frames close. */
			for (; depth; depth--)
				if (chrome_span(p, thread, open, depth, &at,
						ends[depth - 1]))
					goto out;
			thread = chrome_thread(p, rows, nr_rows, nr_processes,
					       s->pid, s->tid);
			at = s->ts;
		}
		/* The frames that ended before this one began close. */
		while (depth && ends[depth - 1] <= s->ts) {
			if (chrome_span(p, thread, open, depth, &at,
					ends[depth - 1]))
				goto out;
			depth--;
		}
		if (chrome_span(p, thread, open, depth, &at, s->ts))
			goto out;
		if (depth && s->end > ends[depth - 1]) {
			error("'%s' is not a profile: a stack slice ends after "
			      "the one it is inside",
			      name);
			goto out;
		}
		if (depth == alloc_open) {
			ALLOC_GROW(open, depth + 1, alloc_open);
			ends = xrealloc(ends, alloc_open * sizeof(*ends));
		}
		open[depth] = s->frame;
		ends[depth++] = s->end;
	}
	for (; depth; depth--)
		if (chrome_span(p, thread, open, depth, &at, ends[depth - 1]))
			goto out;
	p->nr_profiles = 1;
	ret = 0;
out:
	free(slices);
	free(rows);
	free(open);
	free(ends);
	return ret;
}

/* What a speedscope profile spyc wrote holds (profile_kinds()). */
enum profile_kind {
	KIND_CPU,
	KIND_GPU,	  /* GPU time by launching stack, or another's */
	KIND_GPU_STREAM,  /* a GPU stream's timeline */
	KIND_GPU_IDLE,	  /* GPU idle time by Python stack */
	KIND_GPU_CAPTURE, /* graph kernels by capturing stack: never read */
};

/* Whether name is what, or ends in ": " and what (a merged profile's). */
static int named(const char *name, const char *what)
{
	size_t n = strlen(name), w = strlen(what);

	return !strcmp(name, what) ||
	       (n > w + 2 && !strcmp(name + n - w, what) &&
		!strncmp(name + n - w - 2, ": ", 2));
}

/*
 * The kind of each of root's nr profiles: CPU threads are the first
 * spyc_process.cpu_profiles of a file record wrote, and of each input
 * of one merge wrote (spyc_merge: profiles, cpu_profiles); in a file
 * that does not say, the profiles whose names begin with "GPU" are the
 * GPU's.  Of those, the ones with PROFILE_GPU_IDLE_NAME hold idle time
 * and the evented ones streams' timelines.  The caller frees.
 */
static enum profile_kind *profile_kinds(const cJSON *root,
					const cJSON *profiles, size_t nr)
{
	const cJSON *merged =
	    cJSON_GetObjectItemCaseSensitive(root, "spyc_merge");
	const cJSON *process =
	    cJSON_GetObjectItemCaseSensitive(root, "spyc_process");
	const cJSON *cpu =
	    cJSON_GetObjectItemCaseSensitive(process, "cpu_profiles");
	enum profile_kind *kind = xcalloc(nr + 1, sizeof(*kind));
	const cJSON *prof, *in;
	size_t i = 0, at = 0;
	int told = 0;

	if (cJSON_IsArray(merged)) {
		told = 1;
		cJSON_ArrayForEach(in, merged)
		{
			const cJSON *n =
			    cJSON_GetObjectItemCaseSensitive(in, "profiles");
			const cJSON *c = cJSON_GetObjectItemCaseSensitive(
			    in, "cpu_profiles");
			size_t j;

			if (!cJSON_IsNumber(n) || !cJSON_IsNumber(c) ||
			    n->valuedouble < c->valuedouble) {
				told = 0;
				break;
			}
			for (j = 0; j < (size_t)n->valuedouble && at < nr;
			     j++, at++)
				kind[at] = j < (size_t)c->valuedouble
					       ? KIND_CPU
					       : KIND_GPU;
		}
		told &= at == nr;
	} else if (cJSON_IsNumber(cpu) && cpu->valuedouble >= 0) {
		told = 1;
		for (at = 0; at < nr; at++)
			kind[at] =
			    at < (size_t)cpu->valuedouble ? KIND_CPU : KIND_GPU;
	}
	cJSON_ArrayForEach(prof, profiles)
	{
		const char *pname = cJSON_GetStringValue(
		    cJSON_GetObjectItemCaseSensitive(prof, "name"));
		const char *type = cJSON_GetStringValue(
		    cJSON_GetObjectItemCaseSensitive(prof, "type"));

		if (i >= nr)
			break;
		if (!told)
			kind[i] = pname && !strncmp(pname, "GPU", 3) ? KIND_GPU
								     : KIND_CPU;
		if (kind[i] == KIND_GPU && pname &&
		    named(pname, PROFILE_GPU_IDLE_NAME))
			kind[i] = KIND_GPU_IDLE;
		else if (kind[i] == KIND_GPU && pname &&
			 named(pname, PROFILE_GPU_CAPTURE_NAME))
			kind[i] = KIND_GPU_CAPTURE;
		else if (kind[i] == KIND_GPU && type &&
			 !strcmp(type, "evented"))
			kind[i] = KIND_GPU_STREAM;
		i++;
	}
	return kind;
}

static int read_speedscope(struct profile *p, const char *name,
			   const char *data, size_t len, unsigned flags)
{
	const cJSON *shared, *frames, *profiles, *prof, *pname, *type, *unit;
	struct frame_map map = {NULL, 0};
	const char *unit_name = NULL;
	double ns = 0;
	size_t index = 0;
	uint32_t thread;
	cJSON *root;
	enum profile_kind *kinds = NULL;
	int ret = -1, gpu_stacks = 0;

	root = cJSON_ParseWithLength(data, len);
	if (!root)
		return error("'%s' is not a profile: not valid JSON", name);
	if (cJSON_IsArray(
		cJSON_GetObjectItemCaseSensitive(root, "traceEvents"))) {
		ret = read_chrome(p, name, root, flags);
		goto out;
	}
	p->source = PROFILE_SPEEDSCOPE;
	shared = cJSON_GetObjectItemCaseSensitive(root, "shared");
	frames = cJSON_GetObjectItemCaseSensitive(shared, "frames");
	profiles = cJSON_GetObjectItemCaseSensitive(root, "profiles");
	if (!cJSON_IsObject(root) || !cJSON_IsArray(frames) ||
	    !cJSON_IsArray(profiles)) {
		error("'%s' is not a profile: JSON without speedscope's "
		      "shared.frames and profiles",
		      name);
		goto out;
	}
	pname = cJSON_GetObjectItemCaseSensitive(root, "name");
	if (cJSON_IsString(pname))
		p->title = xstrdup(pname->valuestring);
	p->rate_hz = read_rate(root, flags);
	read_roots(p,
		   cJSON_GetObjectItemCaseSensitive(root, OUTPUT_SOURCE_ROOTS));
	read_sources(p, cJSON_GetObjectItemCaseSensitive(root, OUTPUT_SOURCES));
	map.nr = (size_t)cJSON_GetArraySize(frames);
	map.ids = xmalloc((map.nr ? map.nr : 1) * sizeof(*map.ids));
	if (read_frames(p, name, frames, &map))
		goto out;
	kinds =
	    profile_kinds(root, profiles, (size_t)cJSON_GetArraySize(profiles));
	/*
	 * GPU time by launching stack holds the time the streams' timelines
	 * hold too: with it, those are not read (their time counted twice).
	 */
	cJSON_ArrayForEach(prof, profiles) gpu_stacks |=
	    kinds[index++] == KIND_GPU;
	index = 0;
	cJSON_ArrayForEach(prof, profiles)
	{
		char label[32];
		/* With PROFILE_READ_GPU_IDLE, idle time only. */
		int take = kinds[index] == KIND_CPU
			       ? (flags & PROFILE_READ_CPU) != 0
			   : kinds[index] == KIND_GPU_IDLE
			       ? (flags & PROFILE_READ_GPU_IDLE) != 0
			   : kinds[index] == KIND_GPU_CAPTURE
			       ? 0
			       : (flags & PROFILE_READ_GPU) &&
				     !(flags & PROFILE_READ_GPU_IDLE);

		pname = cJSON_GetObjectItemCaseSensitive(prof, "name");
		type = cJSON_GetObjectItemCaseSensitive(prof, "type");
		unit = cJSON_GetObjectItemCaseSensitive(prof, "unit");
		if (take && gpu_stacks && kinds[index] == KIND_GPU_STREAM) {
			p->nr_streams_skipped++;
			index++;
			continue;
		}
		if (!take) {
			p->nr_idle_skipped += kinds[index] == KIND_GPU_IDLE;
			p->nr_skipped++;
			index++;
			continue;
		}
		if (!cJSON_IsString(type) || !cJSON_IsString(unit) ||
		    unit_scale(unit->valuestring, &ns)) {
			error("'%s' is not a profile: profile %zu has no type "
			      "or a unit speedscope does not define",
			      name, index);
			goto out;
		}
		if (unit_name && !!ns != (p->unit == PROFILE_UNIT_SECONDS)) {
			error("'%s': profile %zu is in %s, an earlier one in "
			      "%s; cannot add them up",
			      name, index, unit->valuestring, unit_name);
			goto out;
		}
		unit_name = unit->valuestring;
		p->unit = ns ? PROFILE_UNIT_SECONDS : PROFILE_UNIT_SAMPLES;
		if (cJSON_IsString(pname))
			thread =
			    add_profile_thread(&p->stacks, pname->valuestring);
		else {
			snprintf(label, sizeof(label), "profile %zu", index);
			thread = add_profile_thread(&p->stacks, label);
		}
		if (!strcmp(type->valuestring, "sampled")) {
			if (read_sampled(p, name, index, prof, &map, thread,
					 ns))
				goto out;
		} else if (!strcmp(type->valuestring, "evented")) {
			if (read_evented(p, name, index, prof, &map, thread,
					 ns))
				goto out;
		} else {
			error("'%s' is not a profile: profile %zu has type "
			      "'%s'",
			      name, index, type->valuestring);
			goto out;
		}
		p->nr_profiles++;
		index++;
	}
	ret = 0;
out:
	free(kinds);
	free(map.ids);
	cJSON_Delete(root);
	return ret;
}

/* Where spyc's HTML page holds its data (out/html.c). */
#define HTML_DATA_OPEN "<script id=\"spyc-data\" type=\"application/json\">"

/* A whole number in [0, below) at item, else -1. */
static double html_index(const cJSON *item, double below)
{
	double v = cJSON_IsNumber(item) ? item->valuedouble : -1;

	return v >= 0 && v < below && v == (double)(uint64_t)v ? v : -1;
}

/*
 * The stacks of an HTML page's data: [thread, count, [frame, ...]],
 * threads and frames mapped by tmap and fmap; 0 or -1 after reporting.
 */
static int read_html_stacks(struct profile *p, const char *name,
			    const cJSON *stacks, const uint32_t *tmap,
			    size_t nr_threads, const uint32_t *fmap,
			    size_t nr_frames)
{
	const cJSON *s, *f;
	uint32_t *ids = NULL;
	size_t alloc = 0, n = 0, depth;
	int ret = -1;

	if (!cJSON_IsArray(stacks))
		return error("'%s' is not a profile: the page's stacks are "
			     "not a list",
			     name);
	cJSON_ArrayForEach(s, stacks)
	{
		const cJSON *th = cJSON_GetArrayItem(s, 0);
		const cJSON *count = cJSON_GetArrayItem(s, 1);
		const cJSON *frames = cJSON_GetArrayItem(s, 2);
		double t = html_index(th, (double)nr_threads);
		double c = html_index(count, 1e18);

		if (!cJSON_IsArray(s) || t < 0 || c < 0 ||
		    !cJSON_IsArray(frames)) {
			error("'%s' is not a profile: the page's stack %zu is "
			      "not [thread, count, [frame, ...]]",
			      name, n);
			goto out;
		}
		depth = 0;
		ALLOC_GROW(ids, (size_t)cJSON_GetArraySize(frames) + 1, alloc);
		cJSON_ArrayForEach(f, frames)
		{
			double id = html_index(f, (double)nr_frames);

			if (id < 0) {
				error("'%s' is not a profile: the page's stack "
				      "%zu names no frame of the page",
				      name, n);
				goto out;
			}
			ids[depth++] = fmap[(size_t)id];
		}
		if (c > 0)
			stacks_add(&p->stacks, tmap[(size_t)t], ids, depth,
				   (uint64_t)c);
		n++;
	}
	ret = 0;
out:
	free(ids);
	return ret;
}

/*
 * spyc's HTML page (-o FILE.html): the profile is the JSON in its
 * spyc-data element.  Its CPU stacks count samples; with gpu_only, its
 * GPU stacks (nanoseconds) are read instead, with idle too its GPU idle
 * time's.
 */
static int read_html(struct profile *p, const char *name, const char *data,
		     size_t len, int gpu_only, int idle)
{
	size_t open_len = strlen(HTML_DATA_OPEN), i, nr_threads, nr_frames;
	const char *at = memmem(data, len, HTML_DATA_OPEN, open_len), *end;
	const cJSON *threads, *frames, *procs, *of, *item, *stacks, *gpu;
	uint32_t *tmap = NULL, *fmap = NULL;
	cJSON *root;
	int ret = -1;

	p->source = PROFILE_HTML;
	if (!at)
		return error("'%s' is not a profile: an HTML page without "
			     "spyc's data",
			     name);
	at += open_len;
	end = memmem(at, len - (size_t)(at - data), "</script>", 9);
	root = end ? cJSON_ParseWithLength(at, (size_t)(end - at)) : NULL;
	if (!root)
		return error("'%s' is not a profile: the page's data is not "
			     "valid JSON",
			     name);
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "diff"))) {
		error("'%s' is spyc diff's page, not a profile", name);
		goto out;
	}
	threads = cJSON_GetObjectItemCaseSensitive(root, "threads");
	frames = cJSON_GetObjectItemCaseSensitive(root, "frames");
	procs = cJSON_GetObjectItemCaseSensitive(root, "processes");
	of = cJSON_GetObjectItemCaseSensitive(root, "thread_process");
	if (!cJSON_IsArray(threads) || !cJSON_IsArray(frames)) {
		error("'%s' is not a profile: the page's data has no threads "
		      "and frames",
		      name);
		goto out;
	}
	item = cJSON_GetObjectItemCaseSensitive(root, "title");
	if (cJSON_IsString(item))
		p->title = xstrdup(item->valuestring);
	item = cJSON_GetObjectItemCaseSensitive(root, "rate_hz");
	if (cJSON_IsNumber(item) && item->valuedouble > 0)
		p->rate_hz = item->valuedouble;
	nr_frames = (size_t)cJSON_GetArraySize(frames);
	fmap = xmalloc((nr_frames + 1) * sizeof(*fmap));
	i = 0;
	cJSON_ArrayForEach(item, frames)
	{
		const cJSON *fname = cJSON_GetArrayItem(item, 0);
		const cJSON *file = cJSON_GetArrayItem(item, 1);
		const cJSON *line = cJSON_GetArrayItem(item, 2);

		if (!cJSON_IsString(fname) || !cJSON_IsString(file) ||
		    !cJSON_IsNumber(line) || line->valuedouble < 0 ||
		    line->valuedouble > INT_MAX) {
			error("'%s' is not a profile: the page's frame %zu is "
			      "not [name, file, line]",
			      name, i);
			goto out;
		}
		fmap[i++] =
		    stacks_frame(&p->stacks, fname->valuestring,
				 file->valuestring, (int)line->valuedouble);
	}
	nr_threads = (size_t)cJSON_GetArraySize(threads);
	tmap = xmalloc((nr_threads + 1) * sizeof(*tmap));
	i = 0;
	cJSON_ArrayForEach(item, threads)
	{
		double k = html_index(cJSON_GetArrayItem(of, (int)i),
				      (double)cJSON_GetArraySize(procs));
		const cJSON *proc =
		    k >= 0 ? cJSON_GetArrayItem(procs, (int)k) : NULL;

		if (!cJSON_IsString(item)) {
			error("'%s' is not a profile: the page's thread %zu "
			      "has no name",
			      name, i);
			goto out;
		}
		tmap[i] = add_thread_label(
		    &p->stacks, cJSON_IsString(proc) ? proc->valuestring : NULL,
		    item->valuestring, strlen(item->valuestring), i + 1);
		i++;
	}
	gpu = cJSON_GetObjectItemCaseSensitive(root, "gpu");
	/* The GPU idle time: a GPU profile of its own. */
	if (idle)
		gpu = cJSON_GetObjectItemCaseSensitive(gpu, "idle");
	if (!gpu_only) {
		stacks = cJSON_GetObjectItemCaseSensitive(root, "stacks");
		p->unit = PROFILE_UNIT_SAMPLES;
		p->nr_skipped = cJSON_IsObject(gpu);
	} else if (!cJSON_IsObject(gpu)) {
		/* No GPU profile: profile_read_mem says so. */
		p->nr_skipped = 1;
		ret = 0;
		goto out;
	} else {
		uint32_t all;

		/* All threads together, as the page draws them. */
		item = cJSON_GetObjectItemCaseSensitive(gpu, "name");
		all = add_profile_thread(&p->stacks, cJSON_IsString(item)
							 ? item->valuestring
							 : "GPU");
		for (i = 0; i < nr_threads; i++)
			tmap[i] = all;
		stacks = cJSON_GetObjectItemCaseSensitive(gpu, "stacks");
		p->unit = PROFILE_UNIT_SECONDS;
		p->rate_hz = 0;
	}
	p->nr_profiles = 1;
	ret = read_html_stacks(p, name, stacks, tmap, nr_threads, fmap,
			       nr_frames);
out:
	free(tmap);
	free(fmap);
	cJSON_Delete(root);
	return ret;
}

/* Most bytes a gzipped pprof profile may inflate to. */
#define PPROF_MAX_BYTES (1ul << 30)

/* data[0..len-1], gunzipped into *out (freed by the caller); 0 or -1. */
static int gunzip(const char *data, size_t len, unsigned char **out,
		  size_t *out_len)
{
	z_stream zs;
	size_t alloc = len * 4 + 4096, n = 0;
	unsigned char *buf = xmalloc(alloc);
	int r = Z_OK;

	memset(&zs, 0, sizeof(zs));
	if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) {
		free(buf);
		return -1;
	}
	zs.next_in = (Bytef *)data;
	zs.avail_in = (uInt)len;
	while (r != Z_STREAM_END) {
		if (n == alloc) {
			if (alloc >= PPROF_MAX_BYTES)
				break;
			alloc *= 2;
			buf = xrealloc(buf, alloc);
		}
		zs.next_out = buf + n;
		zs.avail_out = (uInt)(alloc - n);
		r = inflate(&zs, Z_NO_FLUSH);
		n = alloc - zs.avail_out;
		if (r != Z_OK && r != Z_STREAM_END)
			break;
	}
	inflateEnd(&zs);
	if (r != Z_STREAM_END) {
		free(buf);
		return -1;
	}
	*out = buf;
	*out_len = n;
	return 0;
}

/* pprof's string i, or "" when out of range. */
static const char *pb_string(const Perftools__Profiles__Profile *pb, int64_t i)
{
	return i >= 0 && (size_t)i < pb->n_string_table ? pb->string_table[i]
							: "";
}

static int cmp_function_id(const void *a, const void *b)
{
	uint64_t x = (*(Perftools__Profiles__Function *const *)a)->id;
	uint64_t y = (*(Perftools__Profiles__Function *const *)b)->id;

	return x < y ? -1 : x > y;
}

static int cmp_location_id(const void *a, const void *b)
{
	uint64_t x = (*(Perftools__Profiles__Location *const *)a)->id;
	uint64_t y = (*(Perftools__Profiles__Location *const *)b)->id;

	return x < y ? -1 : x > y;
}

/* pprof: the function, or the location, of id (sorted by id), or NULL. */
static Perftools__Profiles__Function *
pb_function(Perftools__Profiles__Function **fns, size_t n, uint64_t id)
{
	Perftools__Profiles__Function key = {.id = id}, *k = &key, **f;

	f = bsearch(&k, fns, n, sizeof(*fns), cmp_function_id);
	return f ? *f : NULL;
}

static Perftools__Profiles__Location *
pb_location(Perftools__Profiles__Location **locs, size_t n, uint64_t id)
{
	Perftools__Profiles__Location key = {.id = id}, *k = &key, **l;

	l = bsearch(&k, locs, n, sizeof(*locs), cmp_location_id);
	return l ? *l : NULL;
}

/*
 * Which of a pprof profile's values to read: one in nanoseconds (the
 * time spyc writes second, samples x period), else the first.
 */
static size_t pb_value_index(const Perftools__Profiles__Profile *pb,
			     enum profile_unit *unit)
{
	size_t i;

	*unit = PROFILE_UNIT_SAMPLES;
	for (i = 0; i < pb->n_sample_type; i++)
		if (!strcmp(pb_string(pb, pb->sample_type[i]->unit),
			    "nanoseconds")) {
			*unit = PROFILE_UNIT_SECONDS;
			return i;
		}
	return 0;
}

/* The thread a pprof sample's labels name ("thread": spyc's label). */
static uint32_t pb_thread(struct profile *p,
			  const Perftools__Profiles__Profile *pb,
			  const Perftools__Profiles__Sample *s)
{
	size_t i;

	for (i = 0; i < s->n_label; i++)
		if (!strcmp(pb_string(pb, s->label[i]->key), "thread"))
			return add_profile_thread(
			    &p->stacks, pb_string(pb, s->label[i]->str));
	return stacks_thread(&p->stacks, 0, 0, ALL_THREADS);
}

/*
 * pprof's profile.proto, gzipped (spyc record --format pprof, or any
 * pprof CPU profile): each sample's locations, leaf first, each
 * location's lines, inlined callee first, give the stack; the value in
 * nanoseconds, else the first, its weight.  Comments spyc wrote name
 * the source roots.
 */
static int read_pprof(struct profile *p, const char *name, const char *data,
		      size_t len)
{
	Perftools__Profiles__Profile *pb;
	Perftools__Profiles__Function **fns = NULL;
	Perftools__Profiles__Location **locs = NULL;
	unsigned char *raw = NULL;
	size_t raw_len, vi, i, j, k, depth, alloc = 0;
	uint32_t *ids = NULL;
	int ret = -1;

	if (gunzip(data, len, &raw, &raw_len))
		return error("'%s' is not a profile: gzip data that does not "
			     "inflate",
			     name);
	pb = perftools__profiles__profile__unpack(NULL, raw_len, raw);
	free(raw);
	if (!pb)
		return error("'%s' is not a profile: gzip data that is not "
			     "pprof's profile.proto",
			     name);
	p->source = PROFILE_PPROF;
	vi = pb_value_index(pb, &p->unit);
	/* Times that are samples of period nanoseconds each. */
	if (p->unit == PROFILE_UNIT_SECONDS && pb->period > 0 &&
	    pb->period_type &&
	    !strcmp(pb_string(pb, pb->period_type->unit), "nanoseconds"))
		p->rate_hz = 1e9 / (double)pb->period;
	for (i = 0; i < pb->n_comment; i++) {
		const char *c = pb_string(pb, pb->comment[i]);

		if (!strncmp(c, OUTPUT_SOURCE_ROOT_COMMENT,
			     strlen(OUTPUT_SOURCE_ROOT_COMMENT)))
			profile_add_root(
			    p, c + strlen(OUTPUT_SOURCE_ROOT_COMMENT));
		else if (!strncmp(c, "spyc: ", 6) && !p->title)
			p->title = xstrdup(c + 6);
	}
	fns = xmalloc((pb->n_function + 1) * sizeof(*fns));
	memcpy(fns, pb->function, pb->n_function * sizeof(*fns));
	qsort(fns, pb->n_function, sizeof(*fns), cmp_function_id);
	locs = xmalloc((pb->n_location + 1) * sizeof(*locs));
	memcpy(locs, pb->location, pb->n_location * sizeof(*locs));
	qsort(locs, pb->n_location, sizeof(*locs), cmp_location_id);
	for (i = 0; i < pb->n_sample; i++) {
		const Perftools__Profiles__Sample *s = pb->sample[i];
		int64_t v = vi < s->n_value ? s->value[vi] : 0;
		uint32_t thread;

		if (v < 0) {
			error("'%s' is not a profile: sample %zu has a "
			      "negative value",
			      name, i);
			goto out;
		}
		depth = 0;
		/* Root first: the last location, its last line, first. */
		for (j = s->n_location_id; j-- > 0;) {
			const Perftools__Profiles__Location *l = pb_location(
			    locs, pb->n_location, s->location_id[j]);

			if (!l) {
				error("'%s' is not a profile: sample %zu names "
				      "location %" PRIu64
				      ", which is not there",
				      name, i, s->location_id[j]);
				goto out;
			}
			for (k = l->n_line; k-- > 0;) {
				const Perftools__Profiles__Function *f =
				    pb_function(fns, pb->n_function,
						l->line[k]->function_id);

				ALLOC_GROW(ids, depth + 1, alloc);
				ids[depth++] = stacks_frame(
				    &p->stacks,
				    f ? pb_string(pb, f->name) : "[unknown]",
				    f ? pb_string(pb, f->filename) : "",
				    (int)l->line[k]->line);
			}
		}
		thread = pb_thread(p, pb, s);
		if (stacks_add(&p->stacks, thread, ids, depth, (uint64_t)v) ==
		    STACKS_NO_ENTRY)
			goto out;
	}
	ret = 0;
out:
	free(ids);
	free(fns);
	free(locs);
	perftools__profiles__profile__free_unpacked(pb, NULL);
	return ret;
}

int profile_read_mem(struct profile *p, const char *name, const char *data,
		     size_t len, unsigned flags)
{
	size_t i = 0;

	if (!flags)
		flags = PROFILE_READ_CPU;
	while (i < len && (data[i] == ' ' || data[i] == '\t' ||
			   data[i] == '\n' || data[i] == '\r'))
		i++;
	if (i == len)
		return error("'%s' is empty: not a profile", name);
	/* gzip's magic: pprof. */
	if (len >= 2 && (unsigned char)data[0] == 0x1f &&
	    (unsigned char)data[1] == 0x8b) {
		if (!(flags & PROFILE_READ_CPU))
			return error("'%s': no profile of the kind asked for "
				     "(pprof holds CPU samples only)",
				     name);
		if (read_pprof(p, name, data, len))
			return -1;
	} else if (data[i] == '{') {
		if (read_speedscope(p, name, data, len, flags))
			return -1;
	} else if ((len - i >= 14 &&
		    !strncasecmp(data + i, "<!doctype html", 14)) ||
		   (len - i >= 5 && !strncasecmp(data + i, "<html", 5))) {
		/* (A folded line may begin with "<module>": not a page.) */
		if (read_html(p, name, data + i, len - i,
			      !(flags & PROFILE_READ_CPU),
			      (flags & PROFILE_READ_GPU_IDLE) != 0))
			return -1;
	} else if (read_folded(p, name, data, len)) {
		return -1;
	}
	if (!p->stacks.total_samples) {
		if (p->nr_skipped && !p->nr_profiles)
			return error("'%s': no profile of the kind asked for "
				     "(%zu other%s)",
				     name, p->nr_skipped,
				     p->nr_skipped == 1 ? "" : "s");
		return error("'%s': empty profile (no samples)", name);
	}
	return 0;
}

int profile_read(struct profile *p, const char *path, unsigned flags)
{
	struct strbuf sb = STRBUF_INIT;
	char buf[65536];
	size_t n;
	FILE *fp;
	int fd, fl, ret = -1;

	/*
	 * Opened without blocking, so that a FIFO no one writes to reads as
	 * empty instead of hanging; reads block again (a pipe being
	 * written, /dev/stdin).
	 */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return error("cannot open '%s': %s", path, strerror(errno));
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0 ||
	    !(fp = fdopen(fd, "rb"))) {
		error("cannot read '%s': %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	while ((n = fread(buf, 1, sizeof(buf), fp)) > 0)
		strbuf_add(&sb, buf, n);
	if (ferror(fp)) {
		error("cannot read '%s': %s", path,
		      strerror(errno ? errno : EIO));
		goto out;
	}
	ret = profile_read_mem(p, path, sb.buf, sb.len, flags);
out:
	fclose(fp);
	strbuf_release(&sb);
	return ret;
}
