/*
 * dlq_tail.c - the end of a handler's stderr, kept for its DLQ entry
 * (doc/redis-layout.md R-5, field stderr_tail).
 *
 * The engine feeds every stderr line of the current attempt here and
 * resets the tail when an attempt starts and when it ends without
 * exhausting the invocation, so only running invocations and exhausted
 * ones waiting for their DLQ write hold a buffer: 2 * MAX bytes each,
 * allocated on the first stderr byte. The raw window is the last MAX
 * bytes; the stored text is escaped, and escaping can only grow it, so
 * the text is cut from the front again (at a character, preferably at a
 * line start) to stay within MAX bytes.
 *
 * Edge cases: a single line longer than MAX keeps its end; a window that
 * starts inside a UTF-8 sequence escapes the orphan bytes unless a line
 * start follows; output of only line ends gives no field. Nothing but the
 * handler's own bytes is stored (no environment, no prefix of ours).
 */
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "inv.h"

#define MAX RELAY_DLQ_STDERR_TAIL_MAX

/* Append @n raw bytes, keeping at least the last MAX. */
static int tail_put(relay__tail *t, const char *p, size_t n)
{
	if (!t->buf) {
		t->buf = relay__malloc(2 * MAX);
		if (!t->buf)
			return RELAY_ENOMEM;
	}
	if (n >= MAX) {
		memcpy(t->buf, p + n - MAX, MAX);
		t->cut = 1;
		t->len = MAX;
		return 0;
	}
	if (t->len + n > 2 * MAX) {
		memmove(t->buf, t->buf + t->len - MAX, MAX);
		t->len = MAX;
		t->cut = 1;
	}
	memcpy(t->buf + t->len, p, n);
	t->len += n;
	return 0;
}

int relay__tail_add(relay__tail *t, const char *bytes, size_t len,
		    int partial)
{
	int rc = 0;

	if (t->len && !t->open)
		rc = tail_put(t, "\n", 1);
	if (!rc && len)
		rc = tail_put(t, bytes, len);
	t->open = partial;
	if (rc)
		relay__tail_reset(t);
	return rc;
}

void relay__tail_reset(relay__tail *t)
{
	relay__free(t->buf);
	memset(t, 0, sizeof(*t));
}

size_t relay__utf8_seq_len(const unsigned char *p, size_t n)
{
	unsigned int c = p[0], cp;
	size_t k, i;

	if (c >= 0xc2 && c <= 0xdf)
		k = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		k = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		k = 4, cp = c & 0x07;
	else
		return 0;
	if (n < k)
		return 0;
	for (i = 1; i < k; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((k == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (k == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return k;
}

/* The token at @p: *raw bytes it takes, returns the bytes it becomes. */
static size_t token(const unsigned char *p, size_t n, size_t *raw)
{
	size_t k;

	*raw = 1;
	if (p[0] == '\n' || p[0] == '\t')
		return 1;
	if (p[0] < 0x20 || p[0] == 0x7f)
		return 4;
	if (p[0] < 0x80)
		return 1;
	k = relay__utf8_seq_len(p, n);
	if (!k)
		return 4;
	*raw = k;
	return k;
}

char *relay__tail_text(const relay__tail *t)
{
	const unsigned char *p = (const unsigned char *)t->buf;
	size_t start, end, i, raw, total = 0, o = 0;
	int cut = t->cut;
	char *out;

	if (!p || !t->len)
		return NULL;
	end = t->len;
	while (end && p[end - 1] == '\n')
		end--;
	start = end > MAX ? end - MAX : 0;
	if (start)
		cut = 1;
	for (i = start; i < end; i += raw)
		total += token(p + i, end - i, &raw);
	/* Drop tokens from the front until the escaped text fits. */
	for (i = start; total > MAX; i += raw) {
		total -= token(p + i, end - i, &raw);
		cut = 1;
	}
	start = i;
	if (cut) {
		/* Begin at a line start when one follows. */
		const unsigned char *nl = memchr(p + start, '\n', end - start);

		if (nl && nl + 1 < p + end)
			start = (size_t)(nl + 1 - p);
	}
	while (start < end && p[start] == '\n')
		start++;
	if (start == end)
		return NULL;
	out = relay__malloc(MAX + 1);
	if (!out)
		return NULL;
	for (i = start; i < end; i += raw) {
		size_t k = token(p + i, end - i, &raw);

		if (k == 4)
			snprintf(out + o, 5, "\\x%02x", p[i]);
		else
			memcpy(out + o, p + i, k);
		o += k;
	}
	out[o] = '\0';
	return out;
}

char *relay_dlq_stderr_tail(const char *text, size_t len)
{
	relay__tail t;
	char *out;

	memset(&t, 0, sizeof(t));
	if (!text || relay__tail_add(&t, text, len, 0))
		return NULL;
	out = relay__tail_text(&t);
	relay__tail_reset(&t);
	return out;
}
