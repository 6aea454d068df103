/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the frame walkers (pyframe.c 3.11+, frameobj.c up to
 * 3.10) on frames of a real CPython embedded in this process: each
 * shared CPython found is loaded in a child of its own, made to call
 * back into C at a known point, and its thread walked there through a
 * walk context of the test's own (the walker alone, without the
 * sampler's reads again), a target perfectly stopped; then its memory
 * is made to lie as a torn read would, case by case, and the walk must
 * be dropped for the expected reason (or keep the right frames), the
 * memory put back after.
 */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "py/frameobj.h"
#include "py/pyframe.h"
#include "py/pyresolve.h"
#include "py/pyruntime.h"
#include "py/pywalk.h"
#include "util.h"

#include "check.h"

/* CPython's PyMethodDef (Include/methodobject.h), the same in 3.6+. */
struct py_method_def {
	const char *name;
	void *meth;
	int flags;
	const char *doc;
};

/* METH_O in Include/methodobject.h: one argument, passed as it is. */
#define PY_METH_O 0x0008

/* The few functions of the C API the test calls, found with dlsym. */
static struct {
	void (*initialize)(void);
	int (*run_simple_string)(const char *);
	void *(*cfunction_new)(struct py_method_def *, void *, void *);
	void *(*import_add_module)(const char *);
	void *(*module_get_dict)(void *);
	int (*dict_set_item_string)(void *, const char *, void *);
	const char *(*unicode_as_utf8)(void *);
	void *(*long_from_long)(long);
	void *(*thread_state_get)(void);
} api;

static const char *slot_id; /* the version slot this child tests */
static struct pyruntime rt;
static struct pywalk walk;
static int walk_ready;
static struct py_sample sample;
static uint64_t probe_arg; /* the probe's argument: a str, not code */
static int probes;	   /* how many scenarios called back */

/* The frames of the one thread sampled, as "name|line|file\n" lines. */
static char *stack_text(const struct py_sample *s)
{
	struct strbuf sb;
	const struct py_thread *t;
	size_t i;

	strbuf_init(&sb, 0);
	if (s->nr_threads != 1)
		return strbuf_detach(&sb);
	t = &s->threads[0];
	for (i = 0; i < t->depth; i++) {
		const struct py_frame *fr = &s->frames[t->first + i];

		char line[1024];

		/* the interpreter's own frames, which the sampler leaves out */
		if (fr->code->hidden)
			continue;
		snprintf(line, sizeof(line), "%s|%d|%s\n", fr->code->name,
			 fr->line, fr->code->filename);
		strbuf_addstr(&sb, line);
	}
	return strbuf_detach(&sb);
}

/*
 * One walk of this thread's frames with walk context w, as the sampler
 * makes it; the stack it found in *text (freed by the caller), "" when
 * dropped.
 */
static enum drop_reason take(struct pywalk *w, char **text)
{
	const struct py_offsets *off = rt.off;
	uint64_t tstate = (uint64_t)(uintptr_t)api.thread_state_get();
	struct py_thread *t;
	enum drop_reason why;

	w->sample_stamp++;
	pycode_cache_collect(&w->codes);
	sample.nr_threads = sample.nr_frames = 0;
	ALLOC_GROW(sample.threads, 1, sample.alloc_threads);
	t = &sample.threads[sample.nr_threads++];
	memset(t, 0, sizeof(*t));
	memcpy(w->tstate_buf, (void *)(uintptr_t)tstate,
	       (size_t)off->tstate_size);
	w->omitted = 0;
	w->torn_at = 0;
	w->root_frame = 0;
	why = w->ops->walk(w, tstate, &sample);
	t->depth = sample.nr_frames;
	if (!why)
		why = pyresolve_frames(w, &sample, 0);
	/* Up to 3.10 the walker cannot tell; the sampler reads it again. */
	if (!why && !pywalk_starts_at_root(&sample, t))
		why = DROP_INVALID;
	*text = why ? xstrdup("") : stack_text(&sample);
	return why;
}

/* Where frame i of the last whole walk (0: the innermost) is. */
static uint64_t frame_at(size_t i)
{
	return walk.frame_addrs[sample.threads[0].first + i];
}

/* Memory of this process made to lie, and put back. */
struct lie {
	uint64_t addr;
	size_t len;
	unsigned char old[8];
};

static struct lie lie_u64(uint64_t addr, uint64_t value)
{
	struct lie l = {addr, 8, {0}};

	memcpy(l.old, (void *)(uintptr_t)addr, 8);
	memcpy((void *)(uintptr_t)addr, &value, 8);
	return l;
}

static struct lie lie_u8(uint64_t addr, unsigned char value)
{
	struct lie l = {addr, 1, {0}};

	l.old[0] = *(unsigned char *)(uintptr_t)addr;
	*(unsigned char *)(uintptr_t)addr = value;
	return l;
}

static struct lie lie_i32(uint64_t addr, int32_t value)
{
	struct lie l = {addr, 4, {0}};

	memcpy(l.old, (void *)(uintptr_t)addr, 4);
	memcpy((void *)(uintptr_t)addr, &value, 4);
	return l;
}

static void undo(const struct lie *l)
{
	memcpy((void *)(uintptr_t)l->addr, l->old, l->len);
}

/*
 * Sample with the memory lying (l, already made): the sample must be
 * dropped for reason want, or with want DROP_NONE keep the frames
 * expected.  The memory is put back, and a sample after must find the
 * expected frames again.
 */
static void expect(const char *scenario, const char *what, const struct lie *l,
		   size_t n, struct pywalk *p, enum drop_reason want,
		   const char *expected)
{
	char *text;
	enum drop_reason why = take(p, &text);
	size_t i;

	for (i = n; i > 0; i--)
		undo(&l[i - 1]);
	if (why != want || (!want && strcmp(text, expected))) {
		fprintf(stderr,
			"%s: %s: %s: dropped as '%s', expected '%s'\n"
			"  stack:\n%s",
			slot_id, scenario, what, drop_reason_name(why),
			drop_reason_name(want), text);
		failed = 1;
	}
	free(text);
	why = take(&walk, &text);
	if (why || strcmp(text, expected)) {
		fprintf(stderr, "%s: %s: after %s: '%s', stack:\n%s", slot_id,
			scenario, what, drop_reason_name(why), text);
		failed = 1;
	}
	free(text);
}

/*
 * An address nothing is mapped at: a pointer a torn read made up.
 * above: past every mapping (past any code object, so a frame's
 * instruction reads as before its code's start), else below them all.
 */
static uint64_t unmapped_at(int above)
{
	const uint64_t user_end = 1ULL << 47, page = 4096;
	uint64_t lo, hi, low_gap = 0, high_end = 0, prev_end = 16 * page;
	char line[512];
	FILE *maps = fopen("/proc/self/maps", "r");

	if (!maps)
		abort();
	while (fgets(line, sizeof(line), maps)) {
		if (sscanf(line, "%" SCNx64 "-%" SCNx64, &lo, &hi) != 2 ||
		    lo >= user_end)
			continue;
		if (!low_gap && lo >= prev_end + 2 * page)
			low_gap = prev_end;
		if (hi > prev_end)
			prev_end = hi;
		if (hi > high_end)
			high_end = hi;
	}
	fclose(maps);
	if (above) {
		if (high_end + 2 * page > user_end)
			abort();
		return high_end + page + 64 * 8;
	}
	if (!low_gap)
		abort();
	return low_gap + 64 * 8;
}

static uint64_t unmapped(void)
{
	return unmapped_at(0);
}

/*
 * Bytes no interpreter wrote, for a link to point at: 0x5a everywhere,
 * with a null link to a caller so that the walk ends there.
 */
static uint64_t garbage_frame(const struct py_offsets *off)
{
	static unsigned char buf[1024] __attribute__((aligned(16)));
	long back = off->frame_back != OFF_NONE ? off->frame_back
						: off->iframe_previous;

	memset(buf, 0x5a, sizeof(buf));
	memset(buf + 512 + back, 0, 8);
	return (uint64_t)(uintptr_t)(buf + 512);
}

/* The calls the walks learnt, kept aside while forget_calls holds. */
static struct call_edges calls_known;

/* Make the walks know the code objects but no call yet. */
static void forget_calls(void)
{
	calls_known = walk.call_edges;
	walk.call_edges.slots = NULL;
	walk.call_edges.nr = walk.call_edges.cap = 0;
}

/* Give the walks back the calls they learnt. */
static void remember_calls(void)
{
	call_edges_release(&walk.call_edges);
	walk.call_edges = calls_known;
}

/* Cases of the 3.11+ walker (pyframe.c): interpreter frames. */
static void lies_iframes(const char *scenario, const char *expected)
{
	const struct py_offsets *off = rt.off;
	uint64_t f0 = frame_at(0), f1 = frame_at(1), f2 = frame_at(2);
	struct lie l[1];

	if (!strcmp(scenario, "plain")) {
		uint64_t outer = frame_at(sample.threads[0].depth - 1);

		/* A callee linked past its caller: the frame sizes tell. */
		l[0] = lie_u64(f0 + off->iframe_previous, f2);
		expect(scenario, "frame skipped", l, 1, &walk, DROP_INVALID,
		       expected);
		/*
		 * The innermost linked to what is under the thread's first
		 * frame (the bottom shim, 3.15's base frame, nothing on
		 * 3.11): a chain that ends as a thread's does, but from a
		 * frame that is not where a thread's first frame goes.
		 */
		l[0] = lie_u64(f0 + off->iframe_previous,
			       *(uint64_t *)(uintptr_t)(outer +
							off->iframe_previous));
		expect(scenario, "linked to the thread's bottom", l, 1, &walk,
		       DROP_INVALID, expected);
		/* A chunk frame not the thread's own: popped, reused. */
		l[0] = lie_u8(f1 + off->iframe_owner,
			      (unsigned char)off->owner_generator);
		expect(scenario, "owner generator", l, 1, &walk, DROP_INVALID,
		       expected);
		/* A link to nothing mapped: the read fails. */
		l[0] = lie_u64(f0 + off->iframe_previous, unmapped());
		expect(scenario, "link unmapped", l, 1, &walk, DROP_READ,
		       expected);
		/* A chain ending at a frame no thread starts with. */
		l[0] = lie_u64(f0 + off->iframe_previous, garbage_frame(off));
		expect(scenario, "link to garbage", l, 1, &walk, DROP_INVALID,
		       expected);
		/* A frame of no code: popped (3.14 clears it). */
		l[0] = lie_u64(f1 + off->iframe_code, 0);
		expect(scenario, "no code", l, 1, &walk, DROP_INVALID, expected);
		/* A code pointer at another object (a str). */
		l[0] = lie_u64(f1 + off->iframe_code, probe_arg);
		expect(scenario, "code is a str", l, 1, &walk, DROP_INVALID,
		       expected);
		/*
		 * A code pointer at nothing mapped, below the frame's
		 * instruction or above it: code that cannot be read is no
		 * running frame's.
		 */
		l[0] = lie_u64(f1 + off->iframe_code, unmapped_at(0));
		expect(scenario, "code unmapped below", l, 1, &walk, DROP_INVALID,
		       expected);
		l[0] = lie_u64(f1 + off->iframe_code, unmapped_at(1));
		expect(scenario, "code unmapped above", l, 1, &walk, DROP_INVALID,
		       expected);
		if (off->iframe_stacktop != OFF_NONE &&
		    off->hexversion < 0x030e0000) {
			/*
			 * 3.12, 3.13: the caller runs again, its callee
			 * returned: what is in the callee's place is taken
			 * only for a call seen before.
			 */
			forget_calls();
			l[0] = lie_i32(f1 + off->iframe_stacktop, -1);
			expect(scenario, "caller running, pair never seen", l,
			       1, &walk, DROP_INVALID, expected);
			remember_calls();
			l[0] = lie_i32(f1 + off->iframe_stacktop, -1);
			expect(scenario, "caller running, pair seen", l, 1, &walk,
			       DROP_NONE, expected);
		}
		if (off->hexversion >= 0x030e0000) {
			/*
			 * 3.14+: the innermost frame returned (its code
			 * cleared): named by its instruction, for a call
			 * seen before only.
			 */
			forget_calls();
			l[0] = lie_u64(f0 + off->iframe_code, 0);
			expect(scenario, "callee returned, pair never seen", l,
			       1, &walk, DROP_INVALID, expected);
			remember_calls();
			l[0] = lie_u64(f0 + off->iframe_code, 0);
			expect(scenario, "callee returned, pair seen", l, 1,
			       &walk, DROP_NONE, expected);
		}
	}
	if (!strcmp(scenario, "gen") || !strcmp(scenario, "coro")) {
		/* Frames 0-4 are generators' (0-1 coroutines'). */
		size_t mid = !strcmp(scenario, "gen") ? 2 : 1;
		uint64_t g = frame_at(mid);

		/* A generator suspended while the chain was read. */
		l[0] = lie_u8(g + off->gen_state_at,
			      (unsigned char)(off->gen_executing - 1));
		expect(scenario, "generator not running", l, 1, &walk,
		       DROP_INVALID, expected);
	}
	if (!strcmp(scenario, "gen")) {
		uint64_t g1 = frame_at(4), g2 = frame_at(3), g4 = frame_at(1);

		/* Generators' frames linked into a loop. */
		l[0] = lie_u64(g2 + off->iframe_previous, g4);
		expect(scenario, "loop of generators", l, 1, &walk, DROP_INVALID,
		       expected);
		/* The chain cut at a generator: no thread starts there. */
		l[0] = lie_u64(g1 + off->iframe_previous, 0);
		expect(scenario, "ends at a generator", l, 1, &walk, DROP_INVALID,
		       expected);
	}
}

/* Cases of the walker up to 3.10 (frameobj.c): frame objects. */
static void lies_frame_objects(const char *scenario, const char *expected)
{
	const struct py_offsets *off = rt.off;
	uint64_t f0 = frame_at(0), f1 = frame_at(1), f2 = frame_at(2);
	unsigned char running = (unsigned char)off->frame_executing_value;
	struct lie l[1];

	if (!strcmp(scenario, "plain")) {
		/* A caller held once: freed and reused mid-read. */
		l[0] = lie_u64(f1 + off->frame_refcnt, 1);
		expect(scenario, "caller held once", l, 1, &walk, DROP_INVALID,
		       expected);
		/* A caller that does not run. */
		l[0] = lie_u8(f1 + off->frame_executing,
			      (unsigned char)(running + 1));
		expect(scenario, "caller not running", l, 1, &walk, DROP_INVALID,
		       expected);
		/* Frames linked into a loop. */
		l[0] = lie_u64(f2 + off->frame_back, f1);
		expect(scenario, "loop", l, 1, &walk, DROP_INVALID, expected);
		/* A link to nothing mapped: reads as zeros, not a frame. */
		l[0] = lie_u64(f0 + off->frame_back, unmapped());
		expect(scenario, "link unmapped", l, 1, &walk, DROP_INVALID,
		       expected);
		/* A link to bytes that are no frame. */
		l[0] = lie_u64(f0 + off->frame_back, garbage_frame(off));
		expect(scenario, "link to garbage", l, 1, &walk, DROP_INVALID,
		       expected);
		/* A code pointer at another object (a str). */
		l[0] = lie_u64(f1 + off->frame_code, probe_arg);
		expect(scenario, "code is a str", l, 1, &walk, DROP_INVALID,
		       expected);
		/* A code pointer at nothing mapped: no running frame's. */
		l[0] = lie_u64(f1 + off->frame_code, unmapped_at(0));
		expect(scenario, "code unmapped below", l, 1, &walk, DROP_INVALID,
		       expected);
		l[0] = lie_u64(f1 + off->frame_code, unmapped_at(1));
		expect(scenario, "code unmapped above", l, 1, &walk, DROP_INVALID,
		       expected);
	}
	if (!strcmp(scenario, "gen") || !strcmp(scenario, "coro")) {
		size_t mid = !strcmp(scenario, "gen") ? 2 : 1;

		/* A generator suspended while the chain was read. */
		l[0] = lie_u8(frame_at(mid) + off->frame_executing,
			      (unsigned char)(running + 1));
		expect(scenario, "generator not running", l, 1, &walk,
		       DROP_INVALID, expected);
	}
	if (!strcmp(scenario, "gen")) {
		/* The chain cut at a generator: no thread starts there. */
		l[0] = lie_u64(frame_at(4) + off->frame_back, 0);
		expect(scenario, "ends at a generator", l, 1, &walk, DROP_INVALID,
		       expected);
	}
}

/*
 * spyc_probe(text), called by the scenarios at their innermost point:
 * text is the scenario's name, a newline and the stack as the
 * interpreter sees it (see SCRIPT).
 */
static void *probe(void *self, void *arg)
{
	const char *text = api.unicode_as_utf8(arg);
	const char *expected = strchr(text, '\n');
	char scenario[32], *got;
	enum drop_reason why;
	int i, failed_before = failed;

	probes++;
	failed = 0;
	probe_arg = (uint64_t)(uintptr_t)arg;
	if (!expected || expected - text >= (long)sizeof(scenario))
		abort();
	memcpy(scenario, text, (size_t)(expected - text));
	scenario[expected - text] = 0;
	expected++;
	if (!walk_ready) {
		pywalk_init(&walk, &rt,
			    rt.off->tstate_frame != OFF_NONE ? &frameobj_walker
							     : &chunk_walker);
		walk_ready = 1;
	}
	/* Taken whole every time: calls are learnt in two samples (3.11). */
	for (i = 0; i < 3; i++) {
		why = take(&walk, &got);
		if (why || strcmp(got, expected)) {
			fprintf(stderr,
				"%s: %s: sample %d: '%s'\n  spyc:\n%s"
				"  python:\n%s",
				slot_id, scenario, i, drop_reason_name(why),
				got, expected);
			failed = 1;
			free(got);
			return api.long_from_long(0);
		}
		free(got);
	}
	if (rt.off->tstate_frame != OFF_NONE)
		lies_frame_objects(scenario, expected);
	else
		lies_iframes(scenario, expected);
	if (!failed)
		printf("%s: %s: %zu frames as the interpreter says, lies "
		       "caught\n",
		       slot_id, scenario, sample.threads[0].depth);
	failed |= failed_before;
	return api.long_from_long(0);
}

/*
 * The scenarios: each calls spyc_probe at its innermost point with the
 * stack as the interpreter sees it, innermost first.  3.11+ name
 * frames by qualified name, as spyc does there.
 */
static const char SCRIPT[] =
    "import sys\n"
    "def stack():\n"
    "    f = sys._getframe(1)\n"
    "    out = []\n"
    "    while f is not None:\n"
    "        c = f.f_code\n"
    "        out.append('%s|%d|%s\\n' % (getattr(c, 'co_qualname',\n"
    "                   c.co_name), f.f_lineno, c.co_filename))\n"
    "        f = f.f_back\n"
    "    return ''.join(out)\n"
    "def plain_a():\n"
    "    return plain_b()\n"
    "def plain_b():\n"
    "    return plain_c()\n"
    "def plain_c():\n"
    "    return spyc_probe('plain\\n' + stack())\n"
    "plain_a()\n"
    "def gen1():\n"
    "    yield from gen2()\n"
    "def gen2():\n"
    "    yield from gen3()\n"
    "def gen3():\n"
    "    yield from gen4()\n"
    "def gen4():\n"
    "    yield from gen5()\n"
    "def gen5():\n"
    "    yield spyc_probe('gen\\n' + stack())\n"
    "def gen_driver():\n"
    "    return list(gen1())\n"
    "gen_driver()\n"
    "def genexpr():\n"
    "    return list(spyc_probe('genexpr\\n' + stack()) for _ in [0])\n"
    "genexpr()\n"
    "async def coro_inner():\n"
    "    return spyc_probe('coro\\n' + stack())\n"
    "async def coro_outer():\n"
    "    return await coro_inner()\n"
    "def coro_driver():\n"
    "    c = coro_outer()\n"
    "    try:\n"
    "        c.send(None)\n"
    "    except StopIteration:\n"
    "        pass\n"
    "coro_driver()\n";

static int load_api(void *lib)
{
#define SYM(field, name)                                                       \
	do {                                                                   \
		*(void **)&api.field = dlsym(lib, name);                       \
		if (!api.field) {                                              \
			fprintf(stderr, "%s: no %s\n", slot_id, name);         \
			return -1;                                             \
		}                                                              \
	} while (0)
	SYM(initialize, "Py_Initialize");
	SYM(run_simple_string, "PyRun_SimpleString");
	SYM(cfunction_new, "PyCFunction_NewEx");
	SYM(import_add_module, "PyImport_AddModule");
	SYM(module_get_dict, "PyModule_GetDict");
	SYM(dict_set_item_string, "PyDict_SetItemString");
	SYM(unicode_as_utf8, "PyUnicode_AsUTF8");
	SYM(long_from_long, "PyLong_FromLong");
	SYM(thread_state_get, "PyThreadState_Get");
#undef SYM
	return 0;
}

/* In a child: load libpython at lib (home: its prefix), run the script. */
static int run_version(const char *lib, const char *home)
{
	static struct py_method_def def = {"spyc_probe", (void *)probe,
					   PY_METH_O, NULL};
	void *handle, *fn, *globals;
	int r;

	setenv("PYTHONHOME", home, 1);
	unsetenv("PYTHONPATH");
	unsetenv("PYTHONSTARTUP");
	setenv("PYTHONNOUSERSITE", "1", 1);
	setenv("PYTHONDONTWRITEBYTECODE", "1", 1);
	/* Global: its extension modules find the C API there. */
	handle = dlopen(lib, RTLD_NOW | RTLD_GLOBAL);
	if (!handle) {
		fprintf(stderr, "%s: %s\n", slot_id, dlerror());
		return 1;
	}
	if (load_api(handle))
		return 1;
	api.initialize();
	r = pyruntime_find(&rt, getpid());
	if (r) {
		fprintf(stderr, "%s: pyruntime_find: %s\n", slot_id,
			rt.message);
		return 1;
	}
	fn = api.cfunction_new(&def, NULL, NULL);
	globals = api.module_get_dict(api.import_add_module("__main__"));
	if (!fn || !globals ||
	    api.dict_set_item_string(globals, "spyc_probe", fn)) {
		fprintf(stderr, "%s: cannot define spyc_probe\n", slot_id);
		return 1;
	}
	if (api.run_simple_string(SCRIPT)) {
		fprintf(stderr, "%s: the script failed\n", slot_id);
		return 1;
	}
	CHECK(probes == 4);
	return failed;
}

/* Run argv, its stdout into a string (freed by the caller); NULL if it failed.
 */
static char *capture(char *const argv[])
{
	struct strbuf sb;
	char buf[4096];
	int fds[2], status;
	ssize_t n;
	pid_t pid;

	if (pipe(fds))
		return NULL;
	pid = fork();
	if (pid < 0)
		return NULL;
	if (!pid) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(fds[1]);
	strbuf_init(&sb, 0);
	while ((n = read(fds[0], buf, sizeof(buf))) > 0 ||
	       (n < 0 && errno == EINTR))
		if (n > 0)
			strbuf_add(&sb, buf, (size_t)n);
	close(fds[0]);
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		strbuf_release(&sb);
		return NULL;
	}
	return strbuf_detach(&sb);
}

/*
 * Each test slot (tests/pyfind.py): its id, then either its libpython
 * and prefix, or why it is skipped; tab-separated, a line each.
 */
static const char SLOTS[] =
    "import subprocess, sys\n"
    "sys.path.insert(0, 'tests')\n"
    "import pyfind\n"
    "q = ('import os, sys, sysconfig as c\\n'\n"
    "     'n = c.get_config_var(\"LDLIBRARY\")\\n'\n"
    "     'lib = os.path.join(sys.base_prefix, \"lib\", n)\\n'\n"
    "     'if not os.path.exists(lib):\\n'\n"
    "     '    lib = os.path.join(c.get_config_var(\"LIBDIR\"), n)\\n'\n"
    "     'print(lib); print(sys.base_prefix)')\n"
    "for s in pyfind.slots():\n"
    "    i = s.interpreter\n"
    "    why = s.skip_reason\n"
    "    if i and i.free_threaded:\n"
    "        why = 'free-threaded: not embedded here'\n"
    "    elif i and not i.shared:\n"
    "        why = 'a static build: no libpython to load'\n"
    "    if why:\n"
    "        print('%s\\tskip\\t%s' % (s.id, why))\n"
    "        continue\n"
    "    r = subprocess.run([i.path, '-S', '-c', q], stdout=subprocess.PIPE,\n"
    "                       universal_newlines=True)\n"
    "    lib, home = r.stdout.split()\n"
    "    print('%s\\t%s\\t%s' % (s.id, lib, home))\n";

int main(void)
{
	char *argv[] = {"/usr/bin/python3", "-c", (char *)SLOTS, NULL};
	char *slots, *line, *save = NULL;
	int tested = 0;

	if (access(argv[0], X_OK))
		argv[0] = "python3";
	slots = capture(argv);
	if (!slots) {
		fprintf(stderr, "cannot list the CPythons with tests/pyfind.py "
				"(run from the repository root)\n");
		return 1;
	}
	for (line = strtok_r(slots, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *id = line, *lib = strchr(line, '\t'), *home;
		int status;
		pid_t pid;

		if (!lib)
			continue;
		*lib++ = 0;
		home = strchr(lib, '\t');
		if (!home)
			continue;
		*home++ = 0;
		if (!strcmp(lib, "skip")) {
			printf("skip %s: %s\n", id, home);
			continue;
		}
		fflush(stdout);
		fflush(stderr);
		pid = fork();
		if (pid < 0) {
			failed = 1;
			break;
		}
		if (!pid) {
			int r;

			slot_id = id;
			/* The last child's failure is the parent's, not ours.
			 */
			failed = 0;
			alarm(60);
			r = run_version(lib, home);
			fflush(stdout);
			fflush(stderr);
			/* Not Py_Finalize, nor a leak check of the interpreter.
			 */
			_exit(r ? 1 : 0);
		}
		if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
		    WEXITSTATUS(status)) {
			fprintf(stderr, "%s: failed (status 0x%x)\n", id,
				status);
			failed = 1;
		}
		tested++;
	}
	free(slots);
	if (!tested) {
		fprintf(stderr, "no shared CPython found to embed\n");
		return failed;
	}
	return failed;
}
