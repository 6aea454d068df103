/* SPDX-License-Identifier: MIT */
/* Folded-stacks writer: "root;...;leaf COUNT" lines for flamegraph.pl. */
#include "output.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

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

int out_folded_write(FILE *fp, const struct stacks *st,
		     const struct profile_meta *meta)
{
	struct strbuf names = STRBUF_INIT, line = STRBUF_INIT;
	int prefix = meta && meta->thread_prefix;
	size_t *offset = render_frames(st, &names);
	char label[256];
	uint32_t id;
	size_t i, j;
	int ret = 0;

	for (i = 0; i < st->nr_entries; i++) {
		const struct stack_entry *e = &st->entries[i];

		if (!e->count)
			continue;
		strbuf_reset(&line);
		if (prefix) {
			stacks_thread_label(&st->threads[e->thread], label,
					    sizeof(label));
			add_clean(&line, label);
		} else if (!e->depth) {
			strbuf_addstr(&line, EMPTY_STACK);
		}
		for (j = 0; j < e->depth; j++) {
			if (j || prefix)
				strbuf_addch(&line, ';');
			id = e->frames[j];
			strbuf_add(&line, names.buf + offset[id],
				   offset[id + 1] - offset[id]);
		}
		strbuf_addf(&line, " %" PRIu64 "\n", e->count);
		if (fwrite(line.buf, 1, line.len, fp) != line.len) {
			ret = error("cannot write folded stacks: %s",
				    strerror(errno));
			goto out;
		}
	}
out:
	free(offset);
	strbuf_release(&line);
	strbuf_release(&names);
	return ret;
}
