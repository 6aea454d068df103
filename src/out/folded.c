/* SPDX-License-Identifier: MIT */
/* Folded-stacks writer: "root;...;leaf COUNT" lines for flamegraph.pl. */
#include "out/output.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpuprof.h"
#include "util.h"

/* Shown for a sample with no frames, so that no line starts with a count. */
#define EMPTY_STACK "[empty]"

/*
 * Append s with the characters that would split a folded line replaced:
 * ';' separates frames and a newline ends the record.
 */
static void add_clean(struct strbuf *sb, const char *s)
{
	size_t n;

	while (*s) {
		n = strcspn(s, ";\n\r");
		strbuf_add(sb, s, n);
		s += n;
		if (!*s)
			break;
		strbuf_addch(sb, *s == ';' ? ':' : ' ');
		s++;
	}
}

static void add_frame(struct strbuf *sb, const struct stack_frame *f)
{
	add_clean(sb, f->name);
	if (!*f->file && !f->line)
		return;
	strbuf_addstr(sb, " (");
	add_clean(sb, f->file);
	if (f->line)
		strbuf_addf(sb, ":%d", f->line);
	strbuf_addch(sb, ')');
}

/*
 * Render every frame once, into names: frame i is the bytes from
 * offset[i] to offset[i + 1].  Stacks repeat frames many times over.
 */
static size_t *render_frames(const struct stacks *st, struct strbuf *names)
{
	size_t *offset = xmalloc((st->nr_frames + 1) * sizeof(*offset));
	size_t i;

	for (i = 0; i < st->nr_frames; i++) {
		offset[i] = names->len;
		add_frame(names, &st->frames[i]);
	}
	offset[st->nr_frames] = names->len;
	return offset;
}

/*
 * Write st's stacks, each weighing count * scale rounded (at least 1 if
 * count is not 0).  names and offset: st's frames, rendered.
 */
static int write_stacks(FILE *fp, const struct stacks *st, int prefix,
			double scale, const struct strbuf *names,
			const size_t *offset)
{
	struct strbuf line = STRBUF_INIT;
	char label[256];
	uint64_t weight;
	uint32_t id;
	size_t i, j;
	int ret = 0;

	for (i = 0; i < st->nr_entries; i++) {
		const struct stack_entry *e = &st->entries[i];

		if (!e->count)
			continue;
		strbuf_reset(&line);
		if (prefix) {
			const struct stack_thread *t = &st->threads[e->thread];

			/* Following several processes: process;thread;... */
			if (t->process) {
				add_clean(&line, t->process);
				strbuf_addch(&line, ';');
			}
			stacks_thread_label(t, label, sizeof(label));
			add_clean(&line, label);
		} else if (!e->depth) {
			strbuf_addstr(&line, EMPTY_STACK);
		}
		for (j = 0; j < e->depth; j++) {
			if (j || prefix)
				strbuf_addch(&line, ';');
			id = e->frames[j];
			strbuf_add(&line, names->buf + offset[id],
				   offset[id + 1] - offset[id]);
		}
		weight = scale == 1.0
			     ? e->count
			     : (uint64_t)((double)e->count * scale + 0.5);
		strbuf_addf(&line, " %" PRIu64 "\n", weight ? weight : 1);
		if (fwrite(line.buf, 1, line.len, fp) != line.len) {
			ret = errno ? -errno : -EIO;
			break;
		}
	}
	strbuf_release(&line);
	return ret;
}

int out_folded_write(FILE *fp, const struct stacks *st,
		     const struct profile_meta *meta)
{
	const struct gpuprof *gpu = meta ? meta->gpu : NULL;
	/* With GPU stacks, whose frames include the CPU ones: all of them. */
	const struct stacks *frames = gpu ? &gpu->stacks : st;
	struct strbuf names = STRBUF_INIT;
	int prefix = meta && meta->thread_prefix;
	size_t *offset = render_frames(frames, &names);
	int ret;

	/*
	 * With GPU time, CPU samples and GPU nanoseconds share one unit,
	 * the microsecond, so that a flame graph compares them fairly.
	 */
	ret = write_stacks(fp, st, prefix,
			   gpu && meta->rate_hz > 0 ? 1e6 / meta->rate_hz : 1.0,
			   &names, offset);
	if (!ret && gpu)
		ret = write_stacks(fp, &gpu->stacks, prefix, 1e-3, &names,
				   offset);
	free(offset);
	strbuf_release(&names);
	return ret;
}
