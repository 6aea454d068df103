/* SPDX-License-Identifier: MIT */
/* Unit tests of the writers: formats, speedscope, folded, SVG, atomicity. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "out/output.h"
#include "profile/stacks.h"
#include "util.h"

#include "check.h"

/* speedscope's own schema, installed by the live tests' npm step. */
#define SPEEDSCOPE_SCHEMA_FILE                                                 \
	"tests/build/node_modules/speedscope/dist/release/"                    \
	"file-format-schema.json"


static char tmpdir[] = "/tmp/spyc-test-output.XXXXXX";

/* Frame names chosen to break naive writers. */
#define NAME_SEMI "g;weird"
#define FILE_SEMI "b;c.py"
#define NAME_NL "h\nnl"
#define NAME_XML "<&\"'>"
#define NAME_UTF8 "na\xc3\xafve_\xe5\x87\xbd\xe6\x95\xb0"
#define THREAD_SEMI "Main;Thread"

struct fixture {
	struct stacks st;
	uint32_t t1, t2, t3;
	uint32_t main_fn, f, g, nl, xml, utf8, native;
};

static void fixture_init(struct fixture *fx)
{
	struct stacks *st = &fx->st;
	uint32_t s[3];

	stacks_init(st);
	fx->t1 = stacks_thread(st, 0x1000, 100, THREAD_SEMI);
	fx->t2 = stacks_thread(st, 0xdeadbeef, 0, NULL);
	fx->t3 = stacks_thread(st, 0x3000, 300, "idle"); /* no samples */
	fx->main_fn = stacks_frame(st, "main", "a.py", 1);
	fx->f = stacks_frame(st, "f", "a.py", 10);
	fx->g = stacks_frame(st, NAME_SEMI, FILE_SEMI, 3);
	fx->nl = stacks_frame(st, NAME_NL, "a.py", 20);
	fx->xml = stacks_frame(st, NAME_XML, "x.py", 5);
	fx->utf8 = stacks_frame(st, NAME_UTF8, "u.py", 7);
	fx->native = stacks_frame(st, "native", "", 0);

	s[0] = fx->main_fn;
	s[1] = fx->f;
	s[2] = fx->g;
	stacks_add(st, fx->t1, s, 2, 3);
	stacks_add(st, fx->t1, s, 3, 2);
	s[1] = fx->utf8;
	stacks_add(st, fx->t1, s, 2, 1);
	s[1] = fx->xml;
	stacks_add(st, fx->t2, s, 2, 4);
	stacks_add(st, fx->t2, &fx->native, 1, 1);
	s[1] = fx->nl;
	stacks_add(st, fx->t2, s, 2, 1);
}

static char *path_in_tmp(const char *name)
{
	struct strbuf sb = STRBUF_INIT;

	strbuf_addf(&sb, "%s/%s", tmpdir, name);
	return strbuf_detach(&sb);
}

/* Read a whole file; NULL if it cannot be read.  Caller frees. */
static char *read_all(const char *path, size_t *len)
{
	struct strbuf sb = STRBUF_INIT;
	char buf[4096];
	size_t n;
	FILE *fp = fopen(path, "r");

	if (!fp)
		return NULL;
	while ((n = fread(buf, 1, sizeof(buf), fp)) > 0)
		strbuf_add(&sb, buf, n);
	fclose(fp);
	if (len)
		*len = sb.len;
	return strbuf_detach(&sb);
}

/* Number of entries in tmpdir other than "." and "..". */
static int count_files(void)
{
	DIR *dir = opendir(tmpdir);
	struct dirent *de;
	int n = 0;

	if (!dir)
		return -1;
	while ((de = readdir(dir)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(dir);
	return n;
}

static int have_python_module(const char *module)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "python3 -c 'import %s' >/dev/null 2>&1",
		 module);
	return system(cmd) == 0;
}

static void test_formats(void)
{
	CHECK(output_format_parse("speedscope") == FORMAT_SPEEDSCOPE);
	CHECK(output_format_parse("folded") == FORMAT_FOLDED);
	CHECK(output_format_parse("svg") == FORMAT_SVG);
	CHECK(output_format_parse("json") == FORMAT_NONE);
	CHECK(output_format_parse("") == FORMAT_NONE);
	CHECK(output_format_parse(NULL) == FORMAT_NONE);

	CHECK(output_format_from_path("out.json") == FORMAT_SPEEDSCOPE);
	CHECK(output_format_from_path("/a/b/out.JSON") == FORMAT_SPEEDSCOPE);
	CHECK(output_format_from_path("out.txt") == FORMAT_FOLDED);
	CHECK(output_format_from_path("x.y.folded") == FORMAT_FOLDED);
	CHECK(output_format_from_path("graph.svg") == FORMAT_SVG);
	CHECK(output_format_from_path("profile") == FORMAT_NONE);
	CHECK(output_format_from_path("out.json.gz") == FORMAT_NONE);
	CHECK(output_format_from_path("dir.json/profile") == FORMAT_NONE);
	CHECK(output_format_from_path("/tmp/.json") == FORMAT_NONE);
	CHECK(output_format_from_path("") == FORMAT_NONE);
	CHECK(output_format_from_path(NULL) == FORMAT_NONE);
}

static void test_utf8_helper(void)
{
	struct strbuf tmp = STRBUF_INIT;
	const char *valid = "ok \xc3\xa9\xf0\x9f\x90\x8d";

	CHECK(output_utf8(valid, &tmp) == valid);
	CHECK(!strcmp(output_utf8("a\xff"
				  "b",
				  &tmp),
		      "a\xef\xbf\xbd"
		      "b"));
	/* Overlong, surrogate, truncated: each bad byte becomes U+FFFD. */
	CHECK(
	    !strcmp(output_utf8("\xc0\xaf", &tmp), "\xef\xbf\xbd\xef\xbf\xbd"));
	CHECK(!strcmp(output_utf8("\xed\xa0\x80", &tmp),
		      "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"));
	CHECK(!strcmp(output_utf8("x\xe4\xb8", &tmp),
		      "x\xef\xbf\xbd\xef\xbf\xbd"));
	strbuf_release(&tmp);
}

/* Check one profile's samples against the thread's entries, root first. */
static void check_profile(const struct stacks *st, uint32_t thread,
			  const cJSON *profile, double rate_hz)
{
	const cJSON *samples = cJSON_GetObjectItem(profile, "samples");
	const cJSON *weights = cJSON_GetObjectItem(profile, "weights");
	const cJSON *end = cJSON_GetObjectItem(profile, "endValue");
	const cJSON *unit = cJSON_GetObjectItem(profile, "unit");
	const cJSON *sample, *id;
	double sum = 0, expect;
	char label[256];
	int n = 0, j;
	size_t i;

	stacks_thread_label(&st->threads[thread], label, sizeof(label));
	CHECK(!strcmp(
	    cJSON_GetStringValue(cJSON_GetObjectItem(profile, "name")), label));
	CHECK(
	    !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(profile, "type")),
		    "sampled"));
	CHECK(cJSON_IsString(unit));
	CHECK(!strcmp(unit->valuestring, rate_hz > 0 ? "seconds" : "none"));
	CHECK(cJSON_GetNumberValue(
		  cJSON_GetObjectItem(profile, "startValue")) == 0);
	CHECK(cJSON_IsArray(samples) && cJSON_IsArray(weights));
	CHECK(cJSON_GetArraySize(samples) == cJSON_GetArraySize(weights));
	for (i = 0; i < st->nr_entries; i++) {
		const struct stack_entry *e = &st->entries[i];

		if (e->thread != thread || !e->count)
			continue;
		sample = cJSON_GetArrayItem(samples, n);
		CHECK(cJSON_IsArray(sample));
		CHECK(cJSON_GetArraySize(sample) == (int)e->depth);
		for (j = 0; j < (int)e->depth; j++) {
			id = cJSON_GetArrayItem(sample, j);
			CHECK(cJSON_IsNumber(id) &&
			      id->valuedouble == e->frames[j]);
		}
		expect = rate_hz > 0 ? e->count / rate_hz : (double)e->count;
		CHECK(
		    fabs(cJSON_GetNumberValue(cJSON_GetArrayItem(weights, n)) -
			 expect) < 1e-12);
		n++;
	}
	CHECK(cJSON_GetArraySize(samples) == n);
	for (j = 0; j < n; j++)
		sum += cJSON_GetNumberValue(cJSON_GetArrayItem(weights, j));
	expect = st->threads[thread].samples;
	if (rate_hz > 0)
		expect /= rate_hz;
	CHECK(fabs(sum - expect) < 1e-9);
	CHECK(cJSON_IsNumber(end) && fabs(end->valuedouble - sum) < 1e-9);
}

static void test_speedscope(void)
{
	struct profile_meta meta = {.title = "python app.py (pid 1)",
				    .python_version = "3.12",
				    .rate_hz = 100.0,
				    .duration_s = 1.5};
	struct fixture fx;
	char *path = path_in_tmp("profile.json");
	char *text, cmd[1024];
	const cJSON *frames, *frame, *profiles, *line, *file;
	cJSON *root;
	size_t i;

	fixture_init(&fx);
	CHECK(output_write(path, FORMAT_SPEEDSCOPE, &fx.st, &meta) == 0);
	CHECK(count_files() == 1);
	text = read_all(path, NULL);
	CHECK(text != NULL);
	root = cJSON_Parse(text ? text : "");
	CHECK(root != NULL);
	if (!root)
		goto out;

	CHECK(
	    !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(root, "$schema")),
		    "https://www.speedscope.app/file-format-schema.json"));
	CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(root, "name")),
		      meta.title));
	CHECK(
	    !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(root, "exporter")),
		    "spyc"));
	CHECK(cJSON_GetNumberValue(
		  cJSON_GetObjectItem(root, "activeProfileIndex")) == 0);

	frames =
	    cJSON_GetObjectItem(cJSON_GetObjectItem(root, "shared"), "frames");
	CHECK(cJSON_GetArraySize(frames) == (int)fx.st.nr_frames);
	for (i = 0; i < fx.st.nr_frames && frames; i++) {
		const struct stack_frame *f = &fx.st.frames[i];

		frame = cJSON_GetArrayItem(frames, (int)i);
		CHECK(!strcmp(
		    cJSON_GetStringValue(cJSON_GetObjectItem(frame, "name")),
		    f->name));
		line = cJSON_GetObjectItem(frame, "line");
		file = cJSON_GetObjectItem(frame, "file");
		if (f->line)
			CHECK(cJSON_GetNumberValue(line) == f->line);
		else
			CHECK(line == NULL);
		if (*f->file)
			CHECK(!strcmp(cJSON_GetStringValue(file), f->file));
		else
			CHECK(file == NULL);
	}
	CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(
			  cJSON_GetArrayItem(frames, (int)fx.utf8), "name")),
		      NAME_UTF8));

	/* One profile per thread with samples: the idle thread is left out. */
	profiles = cJSON_GetObjectItem(root, "profiles");
	CHECK(cJSON_GetArraySize(profiles) == 2);
	if (cJSON_GetArraySize(profiles) == 2) {
		check_profile(&fx.st, fx.t1, cJSON_GetArrayItem(profiles, 0),
			      meta.rate_hz);
		check_profile(&fx.st, fx.t2, cJSON_GetArrayItem(profiles, 1),
			      meta.rate_hz);
	}

	/* The real schema, when the tools to check it are here. */
	if (access(SPEEDSCOPE_SCHEMA_FILE, R_OK)) {
		printf("skip: speedscope schema check: %s not installed\n",
		       SPEEDSCOPE_SCHEMA_FILE);
	} else if (!have_python_module("jsonschema")) {
		printf(
		    "skip: speedscope schema check: no python3 jsonschema\n");
	} else {
		snprintf(cmd, sizeof(cmd),
			 "python3 -c 'import json, sys, jsonschema; "
			 "jsonschema.validate(json.load(open(sys.argv[1])), "
			 "json.load(open(sys.argv[2])))' '%s' '%s'",
			 path, SPEEDSCOPE_SCHEMA_FILE);
		CHECK(system(cmd) == 0);
	}
out:
	cJSON_Delete(root);
	free(text);
	unlink(path);
	free(path);
	stacks_release(&fx.st);
}

/* Without a rate, weights are raw sample counts. */
static void test_speedscope_counts(void)
{
	struct profile_meta meta = {.title = NULL};
	struct fixture fx;
	char *path = path_in_tmp("counts.json");
	char *text;
	cJSON *root;

	fixture_init(&fx);
	CHECK(output_write(path, FORMAT_SPEEDSCOPE, &fx.st, &meta) == 0);
	text = read_all(path, NULL);
	root = cJSON_Parse(text ? text : "");
	CHECK(root != NULL);
	if (root) {
		const cJSON *p = cJSON_GetObjectItem(root, "profiles");

		check_profile(&fx.st, fx.t1, cJSON_GetArrayItem(p, 0), 0);
		check_profile(&fx.st, fx.t2, cJSON_GetArrayItem(p, 1), 0);
	}
	cJSON_Delete(root);
	free(text);
	unlink(path);
	free(path);
	stacks_release(&fx.st);
}

/* The process record spyc merge reads back: there with one, not without. */
static void test_speedscope_process(void)
{
	struct profile_process proc = {4242, "python app.py", "node-7", "3",
				       "PMI_RANK"};
	struct profile_meta meta = {
	    .title = "t", .rate_hz = 100, .duration_s = 1, .process = &proc};
	struct fixture fx;
	char *path = path_in_tmp("process.json");
	char *text;
	cJSON *root;
	const cJSON *p;

	fixture_init(&fx);
	CHECK(output_write(path, FORMAT_SPEEDSCOPE, &fx.st, &meta) == 0);
	text = read_all(path, NULL);
	root = cJSON_Parse(text ? text : "");
	p = cJSON_GetObjectItem(root, "spyc_process");
	CHECK(cJSON_IsObject(p));
	CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(p, "pid")) == 4242);
	CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(p, "rank")) == 3);
	CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(p, "host")),
		      "node-7"));
	CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(p, "command")),
		      "python app.py"));
	CHECK(!strcmp(
	    cJSON_GetStringValue(cJSON_GetObjectItem(p, "rank_from")),
	    "PMI_RANK"));
	/* Both of the fixture's threads are CPU profiles. */
	CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(p, "cpu_profiles")) ==
	      2);
	cJSON_Delete(root);
	free(text);

	/* No rank: null; no process: no member. */
	proc.rank = NULL;
	CHECK(output_write(path, FORMAT_SPEEDSCOPE, &fx.st, &meta) == 0);
	text = read_all(path, NULL);
	root = cJSON_Parse(text ? text : "");
	p = cJSON_GetObjectItem(root, "spyc_process");
	CHECK(cJSON_IsNull(cJSON_GetObjectItem(p, "rank")));
	CHECK(!cJSON_GetObjectItem(p, "rank_from"));
	cJSON_Delete(root);
	free(text);
	meta.process = NULL;
	CHECK(output_write(path, FORMAT_SPEEDSCOPE, &fx.st, &meta) == 0);
	text = read_all(path, NULL);
	root = cJSON_Parse(text ? text : "");
	CHECK(root && !cJSON_GetObjectItem(root, "spyc_process"));
	cJSON_Delete(root);
	free(text);
	unlink(path);
	free(path);
	stacks_release(&fx.st);
}

/*
 * Parse folded output: every line "a;b;c N" must be one of expect[]
 * (each used once), with exactly `fields` ';'-separated frames.
 */
static void check_folded(const char *text, const char *const *expect,
			 const int *fields, int nr, uint64_t total)
{
	int used[16] = {0};
	const char *p = text, *nl, *space, *s;
	uint64_t sum = 0;
	int lines = 0, i, n;

	while (*p) {
		nl = strchr(p, '\n');
		CHECK(nl != NULL);
		if (!nl)
			break;
		space = p;
		for (s = p; s < nl; s++)
			if (*s == ' ')
				space = s;
		CHECK(space > p);
		sum += strtoull(space + 1, NULL, 10);
		n = 1;
		for (s = p; s < space; s++)
			n += *s == ';';
		for (i = 0; i < nr; i++)
			if (!used[i] && strlen(expect[i]) == (size_t)(nl - p) &&
			    !memcmp(expect[i], p, (size_t)(nl - p)))
				break;
		CHECK(i < nr);
		if (i < nr) {
			used[i] = 1;
			CHECK(n == fields[i]);
		} else {
			fprintf(stderr, "unexpected line: %.*s\n",
				(int)(nl - p), p);
		}
		lines++;
		p = nl + 1;
	}
	CHECK(lines == nr);
	CHECK(sum == total);
}

static void test_folded(void)
{
	static const char *const plain[] = {
	    "main (a.py:1);f (a.py:10) 3",
	    "main (a.py:1);f (a.py:10);g:weird (b:c.py:3) 2",
	    "main (a.py:1);" NAME_UTF8 " (u.py:7) 1",
	    "main (a.py:1);" NAME_XML " (x.py:5) 4",
	    "native 1",
	    "main (a.py:1);h nl (a.py:20) 1",
	};
	static const int plain_fields[] = {2, 3, 2, 2, 1, 2};
	static const char *const prefixed[] = {
	    "Main:Thread (tid 100);main (a.py:1);f (a.py:10) 3",
	    "Main:Thread (tid 100);main (a.py:1);f (a.py:10);"
	    "g:weird (b:c.py:3) 2",
	    "Main:Thread (tid 100);main (a.py:1);" NAME_UTF8 " (u.py:7) 1",
	    "thread 0xdeadbeef;main (a.py:1);" NAME_XML " (x.py:5) 4",
	    "thread 0xdeadbeef;native 1",
	    "thread 0xdeadbeef;main (a.py:1);h nl (a.py:20) 1",
	};
	static const int prefixed_fields[] = {3, 4, 3, 3, 2, 3};
	struct profile_meta meta = {
	    .title = "t", .rate_hz = 100, .duration_s = 1};
	struct fixture fx;
	char *path = path_in_tmp("stacks.folded");
	char *text;

	fixture_init(&fx);
	CHECK(output_write(path, FORMAT_FOLDED, &fx.st, &meta) == 0);
	text = read_all(path, NULL);
	CHECK(text != NULL);
	if (text)
		check_folded(text, plain, plain_fields, (int)ARRAY_SIZE(plain),
			     fx.st.total_samples);
	free(text);

	meta.thread_prefix = 1;
	CHECK(output_write(path, FORMAT_FOLDED, &fx.st, &meta) == 0);
	text = read_all(path, NULL);
	CHECK(text != NULL);
	if (text)
		check_folded(text, prefixed, prefixed_fields,
			     (int)ARRAY_SIZE(prefixed), fx.st.total_samples);
	free(text);
	unlink(path);
	free(path);
	stacks_release(&fx.st);
}

/*
 * A minimal well-formedness check: every start tag is closed, in order,
 * and there is one root element.  Skips the prolog, comments and CDATA.
 */
static int xml_balanced(const char *s)
{
	const char *stack[256];
	int depth = 0, roots = 0;
	const char *name, *end;
	size_t len;

	while ((s = strchr(s, '<'))) {
		if (!strncmp(s, "<?", 2)) {
			end = strstr(s, "?>");
		} else if (!strncmp(s, "<!--", 4)) {
			end = strstr(s, "-->");
		} else if (!strncmp(s, "<![CDATA[", 9)) {
			end = strstr(s, "]]>");
		} else if (s[1] == '/') {
			name = s + 2;
			len = strcspn(name, " \t\n>");
			if (!depth || strncmp(stack[depth - 1], name, len) ||
			    strcspn(stack[depth - 1], " \t\n/>") != len)
				return 0;
			depth--;
			end = strchr(s, '>');
		} else {
			end = strchr(s, '>');
			if (!end)
				return 0;
			if (!depth)
				roots++;
			if (end[-1] != '/') {
				if (depth == (int)ARRAY_SIZE(stack))
					return 0;
				stack[depth++] = s + 1;
			}
		}
		if (!end)
			return 0;
		s = end + 1;
	}
	return depth == 0 && roots == 1;
}

static void check_svg_file(const char *path)
{
	char cmd[1024];

	if (!have_python_module("xml.dom.minidom")) {
		printf("skip: XML parse of the SVG: no python3\n");
		return;
	}
	snprintf(cmd, sizeof(cmd),
		 "python3 -c 'import xml.dom.minidom, sys; "
		 "xml.dom.minidom.parse(sys.argv[1])' '%s'",
		 path);
	CHECK(system(cmd) == 0);
}

static void test_svg(void)
{
	struct profile_meta meta = {.title = "python <app> & \"x\" (pid 1)",
				    .python_version = "3.12",
				    .rate_hz = 100,
				    .duration_s = 2.5,
				    .thread_prefix = 1};
	struct fixture fx;
	char *path = path_in_tmp("flame.svg");
	char *text;
	uint32_t bad;

	fixture_init(&fx);
	CHECK(output_write(path, FORMAT_SVG, &fx.st, &meta) == 0);
	CHECK(count_files() == 1);
	text = read_all(path, NULL);
	CHECK(text != NULL);
	if (!text)
		goto out;
	CHECK(xml_balanced(text));
	CHECK(strstr(text, "<svg") != NULL);
	CHECK(strstr(text, "<script") && strstr(text, "<![CDATA["));
	CHECK(strstr(text, "python &lt;app&gt; &amp; &quot;x&quot; (pid 1)"));
	CHECK(strstr(text, "12 samples"));
	CHECK(strstr(text, "&lt;&amp;&quot;&apos;&gt; (x.py:5)"));
	CHECK(!strstr(text, NAME_XML));
	CHECK(strstr(text, NAME_UTF8 " (u.py:7)"));
	CHECK(strstr(text, "Main;Thread (tid 100)"));
	CHECK(strstr(text, "<title>main (a.py:1) \xe2\x80\x94 6 samples "
			   "(50.00%)</title>"));
	CHECK(strstr(text, "<title>all \xe2\x80\x94 12 samples (100.00%)"));
	/* Layout: children sorted by name, placed by samples to their left. */
	CHECK(strstr(text, "data-s=\"0\" data-n=\"6\"><title>Main;Thread"));
	CHECK(strstr(text, "data-s=\"6\" data-n=\"6\"><title>thread 0x"));
	CHECK(strstr(text, "data-s=\"0\" data-n=\"5\"><title>f (a.py:10)"));
	CHECK(strstr(text, "data-s=\"0\" data-n=\"2\"><title>g;weird"));
	CHECK(strstr(text, "data-s=\"5\" data-n=\"1\"><title>" NAME_UTF8));
	CHECK(strstr(text, "data-s=\"6\" data-n=\"4\"><title>&lt;&amp;"));
	CHECK(strstr(text, "data-s=\"10\" data-n=\"1\"><title>h nl (a.py"));
	CHECK(strstr(text, "data-s=\"11\" data-n=\"1\"><title>native \xe2"));
	/* Self-contained: the namespace is the only URL, nothing is linked. */
	CHECK(strstr(text, "http") == strstr(text, "http://www.w3.org/"));
	CHECK(!strstr(text, "href"));
	check_svg_file(path);
	free(text);

	/* Bytes that are not UTF-8, and control characters, stay legal. */
	bad = stacks_frame(&fx.st, "bad\xff\x01name", "b.py", 1);
	stacks_add(&fx.st, fx.t3, &bad, 1, 5);
	CHECK(output_write(path, FORMAT_SVG, &fx.st, &meta) == 0);
	text = read_all(path, NULL);
	CHECK(text && xml_balanced(text));
	CHECK(text && strstr(text, "bad\xef\xbf\xbd name"));
	check_svg_file(path);
out:
	free(text);
	unlink(path);
	free(path);
	stacks_release(&fx.st);
}

/* Narrow nodes are left out, and children come sorted by name. */
static void test_svg_layout(void)
{
	struct profile_meta meta = {.title = "layout"};
	struct stacks st;
	char *path = path_in_tmp("layout.svg");
	char *text, name[32];
	const char *b, *a;
	uint32_t t, f[2];
	int i;

	stacks_init(&st);
	t = stacks_thread(&st, 1, 1, "main");
	f[0] = stacks_frame(&st, "root", "r.py", 1);
	f[1] = stacks_frame(&st, "zzz_big", "r.py", 2);
	stacks_add(&st, t, f, 2, 5000);
	f[1] = stacks_frame(&st, "aaa_big", "r.py", 3);
	stacks_add(&st, t, f, 2, 5000);
	for (i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "tiny_%d", i);
		f[1] = stacks_frame(&st, name, "r.py", 4);
		stacks_add(&st, t, f, 2, 1);
	}
	CHECK(output_write(path, FORMAT_SVG, &st, &meta) == 0);
	text = read_all(path, NULL);
	CHECK(text && xml_balanced(text));
	if (text) {
		a = strstr(text, "<title>aaa_big");
		b = strstr(text, "<title>zzz_big");
		CHECK(a && b && a < b);
		CHECK(!strstr(text, "tiny_"));
		CHECK(strstr(text, "10100 samples"));
	}
	check_svg_file(path);
	free(text);

	/* An empty profile is still a valid document. */
	stacks_release(&st);
	CHECK(output_write(path, FORMAT_SVG, &st, &meta) == 0);
	text = read_all(path, NULL);
	CHECK(text && xml_balanced(text) && strstr(text, "0 samples"));
	check_svg_file(path);
	free(text);
	unlink(path);
	free(path);
}

static void test_empty(void)
{
	struct profile_meta meta = {
	    .title = "empty", .rate_hz = 100, .thread_prefix = 1};
	struct stacks st;
	char *path = path_in_tmp("empty.json");
	char *text;
	size_t len = 1;
	cJSON *root;

	stacks_init(&st);
	CHECK(output_write(path, FORMAT_SPEEDSCOPE, &st, &meta) == 0);
	text = read_all(path, NULL);
	root = cJSON_Parse(text ? text : "");
	CHECK(root &&
	      cJSON_GetArraySize(cJSON_GetObjectItem(root, "profiles")) == 0);
	cJSON_Delete(root);
	free(text);
	CHECK(output_write(path, FORMAT_FOLDED, &st, &meta) == 0);
	text = read_all(path, &len);
	CHECK(text && len == 0);
	free(text);
	unlink(path);
	free(path);
	stacks_release(&st);
}

static void test_write_failures(void)
{
	struct profile_meta meta = {.title = "fail", .rate_hz = 100};
	struct fixture fx;
	char *missing = path_in_tmp("no/such/dir/out.json");
	char *locked_dir = path_in_tmp("locked");
	char *locked = path_in_tmp("locked/out.svg");
	char *path = path_in_tmp("x.json");

	fixture_init(&fx);
	quiet = 1;
	CHECK(output_write(missing, FORMAT_SPEEDSCOPE, &fx.st, &meta) == -1);
	CHECK(output_write(path, FORMAT_NONE, &fx.st, &meta) == -1);
	CHECK(access(path, F_OK) && errno == ENOENT);
	CHECK(count_files() == 0);

	/* root ignores directory permissions, so this needs a normal user. */
	if (geteuid() == 0) {
		printf("skip: read-only directory check: running as root\n");
	} else {
		CHECK(mkdir(locked_dir, 0500) == 0);
		CHECK(output_write(locked, FORMAT_SVG, &fx.st, &meta) == -1);
		CHECK(access(locked, F_OK) && errno == ENOENT);
		rmdir(locked_dir);
	}
	quiet = 0;
	CHECK(count_files() == 0);

	/* A good write replaces the old file and leaves nothing else. */
	CHECK(output_write(path, FORMAT_FOLDED, &fx.st, &meta) == 0);
	CHECK(output_write(path, FORMAT_SPEEDSCOPE, &fx.st, &meta) == 0);
	CHECK(count_files() == 1);
	unlink(path);

	free(path);
	free(locked);
	free(locked_dir);
	free(missing);
	stacks_release(&fx.st);
}

/* The check record makes before it starts: nothing left behind. */
static void test_replaceable(void)
{
	char *missing = path_in_tmp("no/such/dir/out.json");
	char *dir = path_in_tmp("sub");
	char *under_file = path_in_tmp("plain/out.json");
	char *plain = path_in_tmp("plain");
	char *path = path_in_tmp("ok.json");
	FILE *fp;

	CHECK(file_replaceable(missing) == -ENOENT);
	CHECK(file_replaceable("") == -ENOENT);
	CHECK(mkdir(dir, 0700) == 0);
	CHECK(file_replaceable(dir) == -EISDIR);
	rmdir(dir);
	fp = fopen(plain, "w");
	CHECK(fp && fclose(fp) == 0);
	CHECK(file_replaceable(under_file) == -ENOTDIR);
	/* An existing file may be replaced, and is left as it was. */
	CHECK(file_replaceable(plain) == 0);
	CHECK(access(plain, F_OK) == 0);
	unlink(plain);
	CHECK(file_replaceable(path) == 0);
	CHECK(count_files() == 0);
	free(path);
	free(plain);
	free(under_file);
	free(dir);
	free(missing);
}

int main(void)
{
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	test_formats();
	test_utf8_helper();
	test_speedscope();
	test_speedscope_counts();
	test_speedscope_process();
	test_folded();
	test_svg();
	test_svg_layout();
	test_empty();
	test_write_failures();
	test_replaceable();
	CHECK(count_files() == 0);
	if (rmdir(tmpdir))
		fprintf(stderr, "cannot remove %s: %s\n", tmpdir,
			strerror(errno));
	if (!failed)
		printf("test-output: all checks passed\n");
	return failed;
}
