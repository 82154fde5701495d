/*
 * output.c - split a handler's output stream into prefixed lines.
 *
 * Each stream keeps one buffer holding the prefix "[app/handler@id]
 * stdout: " followed by the bytes of the current line, so a complete line
 * is delivered without copying it again. Memory is bounded by max_line:
 * a longer line is delivered in max_line pieces marked partial. Bytes
 * after a newline-less end of stream form a final line.
 *
 * Volume: both streams of a run share one forwarding budget. When a line
 * would exceed it, that line and everything after it is counted as
 * dropped instead of forwarded, and one note line says so; reading goes
 * on, so the handler never blocks on a full pipe.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "runtime.h"

int relay__out_init(relay__out *o, const relay_exec_spec *spec,
		    relay_output_stream stream, size_t max_line,
		    uint64_t *budget, relay_output_fn fn, void *payload)
{
	const char *sname = stream == RELAY_OUTPUT_STDOUT ? "stdout"
							  : "stderr";
	int rc;

	memset(o, 0, sizeof(*o));
	o->stream = stream;
	o->max_line = max_line ? max_line : RELAY__RT_MAX_LINE;
	o->budget = budget;
	o->fn = fn;
	o->payload = payload;
	if (spec->message_id && *spec->message_id)
		rc = relay__buf_printf(&o->line, "[%s/%s@%s] %s: ", spec->app,
				       spec->handler, spec->message_id, sname);
	else
		rc = relay__buf_printf(&o->line, "[%s/%s] %s: ", spec->app,
				       spec->handler, sname);
	if (rc == 0)
		rc = relay__buf_reserve(&o->line, o->max_line + 1);
	o->prefix_len = o->line.len;
	return rc;
}

static void deliver(relay__out *o, const char *text, size_t len,
		    size_t prefix_len, int partial)
{
	relay_output_line l;

	l.stream = o->stream;
	l.text = text;
	l.len = len;
	l.prefix_len = prefix_len;
	l.partial = partial;
	o->fn(&l, o->payload);
}

/* Deliver the buffered line (or count it dropped). True if delivered. */
static bool emit(relay__out *o, int partial)
{
	bool sent = false;

	size_t content = o->line.len - o->prefix_len;

	if (o->fn && o->budget && !o->announced && content > *o->budget) {
		char note[200];
		int n;

		o->announced = true;
		*o->budget = 0;
		n = snprintf(note, sizeof(note), "%.*s[relay: output limit "
			     "reached, further output dropped]",
			     (int)o->prefix_len, o->line.data);
		if (n > 0 && (size_t)n < sizeof(note))
			deliver(o, note, (size_t)n, o->prefix_len, 0);
	}
	if (!o->fn || (o->budget && content > *o->budget) || o->announced) {
		o->dropped += content;
	} else {
		if (o->budget)
			*o->budget -= content;
		o->line.data[o->line.len] = '\0';
		deliver(o, o->line.data, o->line.len, o->prefix_len, partial);
		sent = true;
	}
	o->line.len = o->prefix_len;
	return sent;
}

/* Keep the last RELAY__OUT_TAIL bytes of the stream. */
static void keep_tail(relay__out *o, const char *p, size_t n)
{
	size_t keep;

	if (n >= sizeof(o->tail)) {
		memcpy(o->tail, p + n - sizeof(o->tail), sizeof(o->tail));
		o->tail_len = sizeof(o->tail);
		return;
	}
	keep = sizeof(o->tail) - n;
	if (o->tail_len > keep) {
		memmove(o->tail, o->tail + o->tail_len - keep, keep);
		o->tail_len = keep;
	}
	memcpy(o->tail + o->tail_len, p, n);
	o->tail_len += n;
}

bool relay__out_load_error(const relay__out *o, char *buf, size_t size)
{
	static const char mark[] = RELAY__LOAD_ERROR_MARK;
	const char *end = o->tail + o->tail_len, *start;
	size_t len, i, out = 0;

	if (end > o->tail && end[-1] == '\n')
		end--;
	for (start = end; start > o->tail && start[-1] != '\n'; start--)
		;
	/* The line must have started inside the tail, not before it. */
	if (start == o->tail && o->total > o->tail_len)
		return false;
	len = (size_t)(end - start);
	if (len < sizeof(mark) - 1 || memcmp(start, mark, sizeof(mark) - 1))
		return false;
	for (i = sizeof(mark) - 1; i < len && out + 1 < size; i++) {
		unsigned char c = (unsigned char)start[i];

		buf[out++] = c < 0x20 || c == 0x7f ? '?' : (char)c;
	}
	if (i < len) {
		/* Cut: no half of a UTF-8 sequence at the end. */
		while (out > 0 && ((unsigned char)buf[out - 1] & 0xc0) == 0x80)
			out--;
		if (out > 0 && (unsigned char)buf[out - 1] >= 0xc0)
			out--;
	}
	buf[out] = '\0';
	return out > 0;
}

void relay__out_feed(relay__out *o, const char *p, size_t n)
{
	o->total += n;
	keep_tail(o, p, n);
	if (o->announced) {
		o->dropped += n;
		return;
	}
	while (n > 0) {
		size_t room = o->max_line - (o->line.len - o->prefix_len);
		const char *nl = memchr(p, '\n', n < room ? n : room);
		size_t take = nl ? (size_t)(nl - p) : (n < room ? n : room);

		memcpy(o->line.data + o->line.len, p, take);
		o->line.len += take;
		p += take;
		n -= take;
		if (nl) {
			p++;
			n--;
			if (!emit(o, 0))
				o->dropped++;  /* its newline */
		} else if (o->line.len - o->prefix_len == o->max_line) {
			(void)emit(o, 1);
		}
		if (o->announced) {
			o->dropped += n;
			return;
		}
	}
}

void relay__out_finish(relay__out *o)
{
	if (o->line.len > o->prefix_len)
		(void)emit(o, 0);
}

void relay__out_free(relay__out *o)
{
	relay__buf_free(&o->line);
}
