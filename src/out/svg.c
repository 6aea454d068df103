/* SPDX-License-Identifier: MIT */
/*
 * SVG writer: a self-contained interactive flame graph, root at the
 * bottom; or a differential one (spyc diff), NEW's stacks coloured by
 * how each one's share changed from BASE's.
 */
#include "out/output.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* Geometry, in SVG user units (pixels at 100% zoom). */
#define IMAGE_WIDTH 1200
#define PAD_X 10
#define PAD_TOP 60
#define PAD_BOTTOM 34
#define FRAME_HEIGHT 16
#define FONT_SIZE 12
/* Average advance of a monospace glyph: about 0.6 em. */
#define CHAR_WIDTH (FONT_SIZE * 0.6)
/* Nodes under 1/MIN_WIDTH_DIVISOR of all samples (0.1%) are not drawn. */
#define MIN_WIDTH_DIVISOR 1000
/*
 * A differential graph's colours: white for no change, to full red (a
 * larger share in NEW) or blue (smaller) at the largest change drawn, or
 * at DIFF_FULL_POINTS if that is larger (small changes stay pale).
 */
#define DIFF_FULL_POINTS 5.0

enum node_kind {
	NODE_ROOT,
	NODE_PROCESS, /* --subprocesses with --threads: above its threads */
	NODE_THREAD,
	NODE_FRAME,
};

/* One node of the flame graph, as the walk meets it. */
struct node {
	enum node_kind kind;
	uint32_t id;	/* frame id, or a thread's id for the others */
	uint32_t depth; /* 0 for the root */
	uint64_t x;	/* samples left of this node */
	uint64_t total; /* samples in this node and below */
	uint64_t base;	/* differential: BASE's samples of the same path */
};

/*
 * The call tree is never built.  Sorting the entries by path (thread,
 * then frames, each in name order) puts the children of every node in
 * consecutive runs, in name order, so one walk over the sorted entries
 * meets the nodes depth first and sizes them from prefix sums of the
 * counts.  Memory stays proportional to the entries, not to the nodes,
 * which for deep and varied stacks can be a hundred times more.
 */
struct flame {
	const struct stacks *st;
	/* levels above the frames: 0, 1 (thread), 2 (process, thread) */
	int prefix;
	uint32_t *frame_rank;	/* frame id -> its place in name order */
	uint32_t *thread_rank;	/* thread id -> its place in label order */
	uint32_t *process_rank; /* thread id -> its process's, dense */
	uint32_t *order;	/* the entries with samples, by path */
	uint64_t *cum;		/* cum[i]: samples in order[0 .. i - 1] */
	size_t nr;
	uint64_t all;
	/*
	 * Differential: the entries of thread base_thread are BASE's, not
	 * drawn but summed apart (cum_base, all_base) for the colours.
	 */
	int diff;
	uint32_t base_thread;
	uint64_t *cum_base;
	uint64_t all_base;
	double full_points; /* the change drawn at full colour */
};

/* Called for each drawn node, parents before children. */
typedef void visit_fn(const struct flame *fl, const struct node *n, void *data);

static int compare_frames(const void *a, const void *b, void *data)
{
	const struct stacks *st = data;
	uint32_t ia = *(const uint32_t *)a, ib = *(const uint32_t *)b;
	const struct stack_frame *fa = &st->frames[ia], *fb = &st->frames[ib];
	int c = strcmp(fa->name, fb->name);

	if (!c)
		c = strcmp(fa->file, fb->file);
	if (!c && fa->line != fb->line)
		c = fa->line < fb->line ? -1 : 1;
	if (!c && ia != ib)
		c = ia < ib ? -1 : 1;
	return c;
}

static int compare_threads(const void *a, const void *b, void *data)
{
	const struct stacks *st = data;
	uint32_t ia = *(const uint32_t *)a, ib = *(const uint32_t *)b;
	const char *pa = st->threads[ia].process, *pb = st->threads[ib].process;
	char la[256], lb[256];
	int c;

	/* By process, then by thread: a process's threads side by side. */
	c = pa && pb ? strcmp(pa, pb) : (pb != NULL) - (pa != NULL);
	if (c)
		return c;
	stacks_thread_label(&st->threads[ia], la, sizeof(la));
	stacks_thread_label(&st->threads[ib], lb, sizeof(lb));
	c = strcmp(la, lb);
	if (!c && ia != ib)
		c = ia < ib ? -1 : 1;
	return c;
}

/* rank[id] = place of id when 0 .. nr - 1 are sorted by compare. */
static uint32_t *make_rank(size_t nr,
			   int (*compare)(const void *, const void *, void *),
			   const struct stacks *st)
{
	uint32_t *ids = xmalloc((nr ? nr : 1) * sizeof(*ids));
	uint32_t *rank = xmalloc((nr ? nr : 1) * sizeof(*rank));
	size_t i;

	for (i = 0; i < nr; i++)
		ids[i] = (uint32_t)i;
	qsort_r(ids, nr, sizeof(*ids), compare, (void *)st);
	for (i = 0; i < nr; i++)
		rank[ids[i]] = (uint32_t)i;
	free(ids);
	return rank;
}

/*
 * rank[id] = place of thread id's process among the processes in label
 * order: the same for every thread of one process.
 */
static uint32_t *make_process_rank(const struct stacks *st,
				   const uint32_t *thread_rank)
{
	size_t nr = st->nr_threads, i;
	uint32_t *ids = xmalloc((nr ? nr : 1) * sizeof(*ids));
	uint32_t *rank = xmalloc((nr ? nr : 1) * sizeof(*rank));
	uint32_t r = 0;

	/* Threads sort by process first: their order groups them. */
	for (i = 0; i < nr; i++)
		ids[thread_rank[i]] = (uint32_t)i;
	for (i = 0; i < nr; i++) {
		if (i && st->threads[ids[i]].process !=
			     st->threads[ids[i - 1]].process)
			r++;
		rank[ids[i]] = r;
	}
	free(ids);
	return rank;
}

static size_t path_len(const struct flame *fl, const struct stack_entry *e)
{
	return e->depth + (size_t)fl->prefix;
}

/* The i-th step of e's path from the root, as a rank. */
static uint32_t path_key(const struct flame *fl, const struct stack_entry *e,
			 size_t i)
{
	if (i + 2 == (size_t)fl->prefix)
		return fl->process_rank[e->thread];
	if (i < (size_t)fl->prefix)
		return fl->thread_rank[e->thread];
	return fl->frame_rank[e->frames[i - (size_t)fl->prefix]];
}

/* Paths in order; a path sorts before every longer path it begins. */
static int compare_entries(const void *a, const void *b, void *data)
{
	const struct flame *fl = data;
	const struct stack_entry *ea = &fl->st->entries[*(const uint32_t *)a];
	const struct stack_entry *eb = &fl->st->entries[*(const uint32_t *)b];
	size_t la = path_len(fl, ea), lb = path_len(fl, eb), i;
	uint32_t ka, kb;

	for (i = 0; i < la && i < lb; i++) {
		ka = path_key(fl, ea, i);
		kb = path_key(fl, eb, i);
		if (ka != kb)
			return ka < kb ? -1 : 1;
	}
	if (la != lb)
		return la < lb ? -1 : 1;
	return 0;
}

static void flame_init(struct flame *fl, const struct stacks *st, int prefix)
{
	size_t i;

	fl->st = st;
	/* Differential: the two profiles' threads are not levels. */
	if (fl->diff)
		prefix = 0;
	fl->prefix = !!prefix;
	for (i = 0; prefix && i < st->nr_threads; i++)
		if (st->threads[i].process)
			fl->prefix = 2;
	fl->frame_rank = make_rank(st->nr_frames, compare_frames, st);
	fl->thread_rank = make_rank(st->nr_threads, compare_threads, st);
	fl->process_rank = make_process_rank(st, fl->thread_rank);
	fl->order =
	    xmalloc((st->nr_entries ? st->nr_entries : 1) * sizeof(*fl->order));
	fl->nr = 0;
	for (i = 0; i < st->nr_entries; i++)
		if (st->entries[i].count)
			fl->order[fl->nr++] = (uint32_t)i;
	qsort_r(fl->order, fl->nr, sizeof(*fl->order), compare_entries, fl);
	fl->cum = xmalloc((fl->nr + 1) * sizeof(*fl->cum));
	fl->cum_base = xmalloc((fl->nr + 1) * sizeof(*fl->cum_base));
	fl->cum[0] = fl->cum_base[0] = 0;
	for (i = 0; i < fl->nr; i++) {
		const struct stack_entry *e = &st->entries[fl->order[i]];
		int base = fl->diff && e->thread == fl->base_thread;

		fl->cum[i + 1] = fl->cum[i] + (base ? 0 : e->count);
		fl->cum_base[i + 1] = fl->cum_base[i] + (base ? e->count : 0);
	}
	fl->all = fl->cum[fl->nr];
	fl->all_base = fl->cum_base[fl->nr];
}

static void flame_release(struct flame *fl)
{
	free(fl->cum_base);
	free(fl->cum);
	free(fl->order);
	free(fl->thread_rank);
	free(fl->process_rank);
	free(fl->frame_rank);
}

/* The first of order[i .. end - 1] whose path is longer than len. */
static size_t skip_ended(const struct flame *fl, size_t i, size_t end,
			 size_t len)
{
	while (i < end && path_len(fl, &fl->st->entries[fl->order[i]]) == len)
		i++;
	return i;
}

/* A run of sorted entries that share their path down to a drawn node. */
struct walk_level {
	size_t next, end; /* entries not yet grouped, and the run's end */
	uint64_t x;	  /* samples left of the next child */
};

/*
 * Visit the root and every node of at least 1/MIN_WIDTH_DIVISOR of the
 * samples, depth first, children in name order.  The levels live on the
 * heap: Python stacks can be deeper than the C stack would like.
 */
static void flame_walk(const struct flame *fl, visit_fn *visit, void *data)
{
	struct walk_level *levels = NULL, *lv;
	size_t alloc = 0, nr = 0, i, j, level;
	const struct stack_entry *e;
	struct node n = {NODE_ROOT, 0, 0, 0, fl->all, fl->all_base};
	uint32_t key;

	if (!fl->all)
		return;
	visit(fl, &n, data);
	ALLOC_GROW(levels, 1, alloc);
	levels[0].next = skip_ended(fl, 0, fl->nr, 0);
	levels[0].end = fl->nr;
	levels[0].x = 0;
	nr = 1;
	while (nr) {
		lv = &levels[nr - 1];
		level = nr - 1;
		if (lv->next >= lv->end) {
			nr--;
			continue;
		}
		i = lv->next;
		e = &fl->st->entries[fl->order[i]];
		key = path_key(fl, e, level);
		for (j = i + 1; j < lv->end; j++)
			if (path_key(fl, &fl->st->entries[fl->order[j]],
				     level) != key)
				break;
		n.total = fl->cum[j] - fl->cum[i];
		n.base = fl->cum_base[j] - fl->cum_base[i];
		n.x = lv->x;
		lv->x += n.total;
		lv->next = j;
		if (n.total * MIN_WIDTH_DIVISOR < fl->all)
			continue;
		n.kind = level + 2 == (size_t)fl->prefix ? NODE_PROCESS
			 : level < (size_t)fl->prefix	 ? NODE_THREAD
							 : NODE_FRAME;
		n.id = n.kind != NODE_FRAME
			   ? e->thread
			   : e->frames[level - (size_t)fl->prefix];
		n.depth = (uint32_t)level + 1;
		visit(fl, &n, data);
		ALLOC_GROW(levels, nr + 1, alloc);
		levels[nr].next = skip_ended(fl, i, j, level + 1);
		levels[nr].end = j;
		levels[nr].x = n.x;
		nr++;
	}
	free(levels);
}

/*
 * Append s escaped for XML text and attribute values.  Control
 * characters (not allowed in XML 1.0 even as references) become spaces,
 * and the noncharacters U+FFFE/U+FFFF become U+FFFD.  s is valid UTF-8.
 */
static void add_xml(struct strbuf *sb, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	const unsigned char *end = p + len;

	for (; p < end; p++) {
		switch (*p) {
		case '&':
			strbuf_addstr(sb, "&amp;");
			break;
		case '<':
			strbuf_addstr(sb, "&lt;");
			break;
		case '>':
			strbuf_addstr(sb, "&gt;");
			break;
		case '"':
			strbuf_addstr(sb, "&quot;");
			break;
		case '\'':
			strbuf_addstr(sb, "&apos;");
			break;
		default:
			if (*p < 0x20) {
				strbuf_addch(sb, ' ');
			} else if (*p == 0xef && end - p >= 3 && p[1] == 0xbf &&
				   (p[2] == 0xbe || p[2] == 0xbf)) {
				strbuf_addstr(sb, "\xef\xbf\xbd");
				p += 2;
			} else {
				strbuf_addch(sb, *p);
			}
		}
	}
}

/* Append any string (maybe not UTF-8) escaped for XML. */
static void add_xml_str(struct strbuf *sb, const char *s, struct strbuf *tmp)
{
	s = output_utf8(s, tmp);
	add_xml(sb, s, strlen(s));
}

/* Number of characters (code points) in valid UTF-8 s. */
static size_t utf8_chars(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/* Byte length of the first chars characters of valid UTF-8 s. */
static size_t utf8_prefix(const char *s, size_t chars)
{
	size_t i = 0;

	for (; s[i]; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80 && !chars--)
			break;
	return i;
}

/* The node's label, as shown in its box, into sb (valid UTF-8). */
static void node_label(const struct flame *fl, const struct node *n,
		       struct strbuf *sb, struct strbuf *tmp)
{
	const struct stack_frame *f;
	char label[256];

	strbuf_reset(sb);
	switch (n->kind) {
	case NODE_ROOT:
		strbuf_addstr(sb, "all");
		return;
	case NODE_PROCESS:
		strbuf_addstr(sb,
			      output_utf8(fl->st->threads[n->id].process, tmp));
		return;
	case NODE_THREAD:
		/* Under its process's node, or on its own. */
		if (fl->prefix == 2)
			stacks_thread_label(&fl->st->threads[n->id], label,
					    sizeof(label));
		else
			stacks_thread_full_label(&fl->st->threads[n->id], label,
						 sizeof(label));
		strbuf_addstr(sb, output_utf8(label, tmp));
		return;
	case NODE_FRAME:
		break;
	}
	f = &fl->st->frames[n->id];
	strbuf_addstr(sb, output_utf8(f->name, tmp));
	if (!*f->file && !f->line)
		return;
	strbuf_addstr(sb, " (");
	strbuf_addstr(sb, output_utf8(f->file, tmp));
	if (f->line)
		strbuf_addf(sb, ":%d", f->line);
	strbuf_addch(sb, ')');
}

/* Differential: the change of n's share from BASE to NEW, in points. */
static double node_change(const struct flame *fl, const struct node *n)
{
	double now = fl->all ? (double)n->total / (double)fl->all : 0;
	double before =
	    fl->all_base ? (double)n->base / (double)fl->all_base : 0;

	return 100.0 * (now - before);
}

/* White for no change, towards red for a larger share, blue smaller. */
static void diff_colour(const struct flame *fl, const struct node *n,
			struct strbuf *sb)
{
	double c = node_change(fl, n), t = fabs(c) / fl->full_points;
	int pale = 250 - (int)(200 * (t < 1 ? t : 1));

	if (c >= 0)
		strbuf_addf(sb, "rgb(250,%d,%d)", pale, pale);
	else
		strbuf_addf(sb, "rgb(%d,%d,250)", pale, pale);
}

/* A warm colour (reds to yellows) chosen by a hash of the function name. */
static void node_colour(const struct flame *fl, const struct node *n,
			struct strbuf *sb)
{
	const char *name;
	uint64_t h;

	if (fl->diff) {
		diff_colour(fl, n, sb);
		return;
	}
	if (n->kind == NODE_ROOT) {
		strbuf_addstr(sb, "rgb(200,200,200)");
		return;
	}
	if (n->kind == NODE_PROCESS) {
		strbuf_addstr(sb, "rgb(205,190,160)");
		return;
	}
	if (n->kind == NODE_THREAD) {
		strbuf_addstr(sb, "rgb(225,205,170)");
		return;
	}
	name = fl->st->frames[n->id].name;
	h = fnv1a(FNV_INIT, name, strlen(name));
	strbuf_addf(sb, "rgb(%d,%d,%d)", 205 + (int)(50 * (h & 0xff) / 255),
		    (int)(230 * ((h >> 8) & 0xff) / 255),
		    (int)(55 * ((h >> 16) & 0xff) / 255));
}

/* What the emitting walk carries from node to node. */
struct emit {
	FILE *fp;
	struct strbuf out, label, tmp;
	uint32_t height;
};

static void add_node(const struct flame *fl, const struct node *n, void *data)
{
	struct emit *em = data;
	struct strbuf *out = &em->out, *label = &em->label;
	double all = (double)fl->all;
	double plot = IMAGE_WIDTH - 2 * PAD_X;
	double x = PAD_X + (double)n->x / all * plot;
	double w = (double)n->total / all * plot;
	double y =
	    em->height - PAD_BOTTOM - (double)(n->depth + 1) * FRAME_HEIGHT;
	size_t fit, len;

	node_label(fl, n, label, &em->tmp);
	strbuf_addf(out,
		    "<g class=\"f\" data-s=\"%" PRIu64 "\" data-n=\"%" PRIu64
		    "\"><title>",
		    n->x, n->total);
	add_xml(out, label->buf, label->len);
	strbuf_addf(out, " \xe2\x80\x94 %" PRIu64 " sample%s (%.2f%%)",
		    n->total, n->total == 1 ? "" : "s",
		    100.0 * (double)n->total / all);
	if (fl->diff)
		strbuf_addf(out, ", BASE %.2f%%, %+.2f points",
			    fl->all_base
				? 100.0 * (double)n->base / (double)fl->all_base
				: 0.0,
			    node_change(fl, n));
	strbuf_addstr(out, "</title>");
	strbuf_addf(out,
		    "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" "
		    "rx=\"2\" fill=\"",
		    x, y, w, FRAME_HEIGHT - 1);
	node_colour(fl, n, out);
	strbuf_addf(out, "\"/><text x=\"%.2f\" y=\"%.1f\">", x + 3,
		    y + FRAME_HEIGHT - 4.5);
	/* Truncate to what fits; the script does the same after a zoom. */
	fit = w > 6 ? (size_t)((w - 6) / CHAR_WIDTH) : 0;
	if (fit >= 3) {
		if (utf8_chars(label->buf) <= fit) {
			add_xml(out, label->buf, label->len);
		} else {
			len = utf8_prefix(label->buf, fit - 2);
			add_xml(out, label->buf, len);
			strbuf_addstr(out, "..");
		}
	}
	strbuf_addstr(out, "</text></g>\n");
	/* Flush now and then: a big graph need not sit in memory. */
	if (out->len > 64 * 1024) {
		fwrite(out->buf, 1, out->len, em->fp);
		strbuf_reset(out);
	}
}

/* What the first walk learns: the depth, and the largest change. */
struct extent {
	uint32_t depth;
	double change; /* differential: the largest |change|, in points */
};

static void max_depth(const struct flame *fl, const struct node *n, void *data)
{
	struct extent *ex = data;

	if (n->depth > ex->depth)
		ex->depth = n->depth;
	if (fl->diff && fabs(node_change(fl, n)) > ex->change)
		ex->change = fabs(node_change(fl, n));
}

/*
 * The interactive part.  Each frame's <g> carries data-s (samples to its
 * left) and data-n (its samples), so zooming is exact arithmetic on
 * sample counts; the full label is its <title> up to the " \u2014 ".
 */
static const char script[] =
    "var frames = [], total = 0, searching = false, zoomed = false;\n"
    "var details, matched, searchbtn, unzoombtn;\n"
    "function fit(o, x, w) {\n"
    "  o.r.setAttribute('x', x.toFixed(2));\n"
    "  o.r.setAttribute('width', w.toFixed(2));\n"
    "  o.t.setAttribute('x', (x + 3).toFixed(2));\n"
    "  var c = Math.floor((w - 6) / CHAR_W), s = o.name;\n"
    "  if (c < 3) s = '';\n"
    "  else if (s.length > c) s = s.substring(0, c - 2) + '..';\n"
    "  o.t.textContent = s;\n"
    "}\n"
    "function show(o, on) {\n"
    "  if (on) o.g.classList.remove('hide');\n"
    "  else o.g.classList.add('hide');\n"
    "}\n"
    "function zoom(f) {\n"
    "  frames.forEach(function (o) {\n"
    "    o.g.classList.remove('parent');\n"
    "    if (o.y > f.y) {\n"
    "      var anc = o.s <= f.s && o.s + o.n >= f.s + f.n;\n"
    "      show(o, anc);\n"
    "      if (anc) { o.g.classList.add('parent'); fit(o, PAD, WIDTH); }\n"
    "    } else if (o.s >= f.s && o.s + o.n <= f.s + f.n && f.n > 0) {\n"
    "      show(o, true);\n"
    "      fit(o, PAD + (o.s - f.s) / f.n * WIDTH, o.n / f.n * WIDTH);\n"
    "    } else {\n"
    "      show(o, false);\n"
    "    }\n"
    "  });\n"
    "  zoomed = true;\n"
    "  unzoombtn.classList.remove('hide');\n"
    "}\n"
    "function unzoom() {\n"
    "  frames.forEach(function (o) {\n"
    "    o.g.classList.remove('parent');\n"
    "    show(o, true);\n"
    "    fit(o, PAD + o.s / total * WIDTH, o.n / total * WIDTH);\n"
    "  });\n"
    "  zoomed = false;\n"
    "  unzoombtn.classList.add('hide');\n"
    "}\n"
    "function reset_search() {\n"
    "  frames.forEach(function (o) { o.r.setAttribute('fill', o.fill); });\n"
    "  matched.textContent = '';\n"
    "  searchbtn.textContent = 'Search';\n"
    "  searching = false;\n"
    "}\n"
    "function search(term) {\n"
    "  var re = null, hits = [], sum = 0, end = -1;\n"
    "  try { re = new RegExp(term); } catch (e) { re = null; }\n"
    "  frames.forEach(function (o) {\n"
    "    var m = re ? re.test(o.name) : o.name.indexOf(term) >= 0;\n"
    "    o.r.setAttribute('fill', m ? 'rgb(230,0,230)' : o.fill);\n"
    "    if (m) hits.push(o);\n"
    "  });\n"
    "  /* Count nested matches once: only those outside the last one. */\n"
    "  hits.sort(function (a, b) { return a.s - b.s || b.n - a.n; });\n"
    "  hits.forEach(function (o) {\n"
    "    if (o.s >= end) { sum += o.n; end = o.s + o.n; }\n"
    "  });\n"
    "  matched.textContent = 'Matched: ' +\n"
    "    (total ? 100 * sum / total : 0).toFixed(1) + '%';\n"
    "  searchbtn.textContent = 'Reset Search';\n"
    "  searching = true;\n"
    "}\n"
    "function search_prompt() {\n"
    "  if (searching) { reset_search(); return; }\n"
    "  var term = window.prompt('Search for (regular expression):', '');\n"
    "  if (term) search(term);\n"
    "}\n"
    "function init(evt) {\n"
    "  details = document.getElementById('details');\n"
    "  matched = document.getElementById('matched');\n"
    "  searchbtn = document.getElementById('search');\n"
    "  unzoombtn = document.getElementById('unzoom');\n"
    "  var gs = document.getElementsByClassName('f');\n"
    "  for (var i = 0; i < gs.length; i++) {\n"
    "    var g = gs[i], r = g.getElementsByTagName('rect')[0];\n"
    "    var title = g.getElementsByTagName('title')[0].textContent;\n"
    "    var o = { g: g, r: r, t: g.getElementsByTagName('text')[0],\n"
    "      s: +g.getAttribute('data-s'), n: +g.getAttribute('data-n'),\n"
    "      y: +r.getAttribute('y'), fill: r.getAttribute('fill'),\n"
    "      title: title,\n"
    "      name: title.substring(0, title.lastIndexOf(' \\u2014 ')) };\n"
    "    if (o.n > total) total = o.n;\n"
    "    frames.push(o);\n"
    "    g.addEventListener('click', zoom.bind(null, o));\n"
    "    g.addEventListener('mouseover', function () {\n"
    "      details.textContent = this.title;\n"
    "    }.bind(o));\n"
    "    g.addEventListener('mouseout', function () {\n"
    "      details.textContent = '';\n"
    "    });\n"
    "  }\n"
    "  unzoombtn.addEventListener('click', unzoom);\n"
    "  searchbtn.addEventListener('click', search_prompt);\n"
    "  /* Open on the root, at the bottom, where the work is: not on the\n"
    "     thin towers of deep start-up imports at the top. */\n"
    "  if (document.documentElement === evt.target)\n"
    "    window.scrollTo(0, document.documentElement.getBoundingClientRect()\n"
    "      .height);\n"
    "  window.addEventListener('keydown', function (e) {\n"
    "    if ((e.ctrlKey || e.metaKey) && (e.key === 'f' || e.key === 'F')) {\n"
    "      e.preventDefault();\n"
    "      search_prompt();\n"
    "    } else if (e.key === 'Escape') {\n"
    "      if (searching) reset_search();\n"
    "      else if (zoomed) unzoom();\n"
    "    }\n"
    "  });\n"
    "}\n";

static const char style[] =
    "text { font-family: monospace; fill: rgb(0,0,0); }\n"
    "#title { font-size: 17px; text-anchor: middle; }\n"
    "#subtitle { text-anchor: middle; fill: rgb(80,80,80); }\n"
    ".btn { cursor: pointer; fill: rgb(0,0,160); }\n"
    ".btn:hover { text-decoration: underline; }\n"
    "#search, #matched { text-anchor: end; }\n"
    ".f { cursor: pointer; }\n"
    ".f:hover rect { stroke: rgb(0,0,0); stroke-width: 0.5; }\n"
    ".parent { opacity: 0.5; }\n"
    ".hide { display: none; }\n";

static void add_header(struct strbuf *out, const struct flame *fl,
		       const struct profile_meta *meta, uint32_t height,
		       struct strbuf *tmp)
{
	const char *title = meta && meta->title ? meta->title : "spyc";

	strbuf_addf(
	    out,
	    "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
	    "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" "
	    "width=\"%d\" height=\"%" PRIu32 "\" "
	    "viewBox=\"0 0 %d %" PRIu32 "\" onload=\"init(evt)\">\n",
	    IMAGE_WIDTH, height, IMAGE_WIDTH, height);
	strbuf_addf(out,
		    "<defs><linearGradient id=\"background\" y1=\"0\" y2=\"1\" "
		    "x1=\"0\" x2=\"0\"><stop stop-color=\"#eeeeee\" "
		    "offset=\"5%%\"/><stop stop-color=\"#eeeeb0\" "
		    "offset=\"95%%\"/></linearGradient></defs>\n"
		    "<style type=\"text/css\"><![CDATA[\n"
		    "text { font-size: %dpx; }\n%s]]></style>\n"
		    "<script type=\"text/ecmascript\"><![CDATA[\n"
		    "var PAD = %d, WIDTH = %d, CHAR_W = %g;\n%s]]></script>\n",
		    FONT_SIZE, style, PAD_X, IMAGE_WIDTH - 2 * PAD_X,
		    CHAR_WIDTH, script);
	strbuf_addf(out,
		    "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%" PRIu32 "\" "
		    "fill=\"url(#background)\"/>\n",
		    IMAGE_WIDTH, height);
	strbuf_addf(out, "<text id=\"title\" x=\"%d\" y=\"24\">",
		    IMAGE_WIDTH / 2);
	add_xml_str(out, title, tmp);
	strbuf_addf(out, "</text>\n<text id=\"subtitle\" x=\"%d\" y=\"44\">",
		    IMAGE_WIDTH / 2);
	if (fl->diff)
		strbuf_addf(out,
			    "NEW's stacks; red: a larger share than in BASE, "
			    "blue: smaller (full at %.1f points)",
			    fl->full_points);
	else
		strbuf_addf(out, "%" PRIu64 " sample%s", fl->all,
			    fl->all == 1 ? "" : "s");
	if (meta && meta->rate_hz > 0)
		strbuf_addf(out, ", %g Hz", meta->rate_hz);
	if (meta && meta->duration_s > 0)
		strbuf_addf(out, ", %.1f s", meta->duration_s);
	if (meta && meta->python_version) {
		strbuf_addstr(out, ", Python ");
		add_xml_str(out, meta->python_version, tmp);
	}
	strbuf_addf(out,
		    "</text>\n"
		    "<text id=\"unzoom\" class=\"btn hide\" x=\"%d\" y=\"24\">"
		    "Reset Zoom</text>\n"
		    "<text id=\"search\" class=\"btn\" x=\"%d\" y=\"24\">"
		    "Search</text>\n"
		    "<text id=\"matched\" x=\"%d\" y=\"%" PRIu32 "\"></text>\n"
		    "<text id=\"details\" x=\"%d\" y=\"%" PRIu32 "\"></text>\n",
		    PAD_X, IMAGE_WIDTH - PAD_X, IMAGE_WIDTH - PAD_X,
		    height - 12, PAD_X, height - 12);
}

static int svg_write(FILE *fp, struct flame *fl, const struct stacks *st,
		     const struct profile_meta *meta)
{
	struct emit em = {fp, STRBUF_INIT, STRBUF_INIT, STRBUF_INIT, 0};
	struct extent ex = {0, 0};
	int ret = 0;

	flame_init(fl, st, meta && meta->thread_prefix);
	flame_walk(fl, max_depth, &ex);
	fl->full_points =
	    ex.change > DIFF_FULL_POINTS ? ex.change : DIFF_FULL_POINTS;
	em.height = PAD_TOP + (ex.depth + 1) * FRAME_HEIGHT + PAD_BOTTOM;

	add_header(&em.out, fl, meta, em.height, &em.tmp);
	strbuf_addstr(&em.out, "<g id=\"frames\">\n");
	flame_walk(fl, add_node, &em);
	strbuf_addstr(&em.out, "</g>\n</svg>\n");
	if (fwrite(em.out.buf, 1, em.out.len, fp) != em.out.len || ferror(fp))
		ret = errno ? -errno : -EIO;

	strbuf_release(&em.tmp);
	strbuf_release(&em.label);
	strbuf_release(&em.out);
	flame_release(fl);
	return ret;
}

int out_svg_write(FILE *fp, const struct stacks *st,
		  const struct profile_meta *meta)
{
	struct flame fl;

	memset(&fl, 0, sizeof(fl));
	return svg_write(fp, &fl, st, meta);
}

int out_svg_write_diff(FILE *fp, const struct stacks *st, uint32_t base_thread,
		       const struct profile_meta *meta)
{
	struct flame fl;

	memset(&fl, 0, sizeof(fl));
	fl.diff = 1;
	fl.base_thread = base_thread;
	return svg_write(fp, &fl, st, meta);
}
