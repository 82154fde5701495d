/*
 * timeline.c - the attempt timeline of an invocation (doc/redis-layout.md
 * R-3, field __timeline:<app>/<handler>): one entry per attempt, one
 * line the engine formats when the attempt is over, and the append that
 * keeps the last RELAY__TL_MAX of them. The line is words first (attempt,
 * times, outcome, warm/cold, replica, trace id) and a JSON object of the
 * free text last, only for an attempt that did not succeed: a succeeded
 * attempt's entry stays under 64 bytes for a short replica name, so the
 * hash keeps Redis' compact encoding on the common path. The scripts of
 * librelay/lua/ do the append themselves (relay_tl_push() in the
 * prelude); the memory backend calls relay__tl_push(), its twin.
 *
 * Every string of an entry is bounded before escaping can grow it (the
 * stderr tail keeps its end, the others their start), so an entry is
 * never longer than RELAY__TL_ENTRY_MAX bytes whatever the handler wrote.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "inv.h"

/* Bytes the escaped strings of an entry may take, at most. */
#define REPLICA_MAX 64
#define REASON_MAX 160
#define STDERR_MAX 256

typedef struct tl_buf {
	char *p;
	size_t size, len;
} tl_buf;

static void put(tl_buf *b, const char *s, size_t n)
{
	if (b->len + n >= b->size)
		n = b->len < b->size ? b->size - b->len - 1 : 0;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void put_lit(tl_buf *b, const char *s)
{
	put(b, s, strlen(s));
}

/* @v in decimal, without printf (an entry is formatted per attempt). */
static void put_u64(tl_buf *b, uint64_t v)
{
	char tmp[24];
	size_t i = sizeof(tmp);

	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	put(b, tmp + i, sizeof(tmp) - i);
}

static void put_i64(tl_buf *b, int64_t v)
{
	if (v < 0) {
		put(b, "-", 1);
		put_u64(b, (uint64_t)0 - (uint64_t)v);
		return;
	}
	put_u64(b, (uint64_t)v);
}

/* The escaped form of byte @c in JSON: its length, written to @out. */
static size_t esc(unsigned char c, char out[7])
{
	switch (c) {
	case '"':
		memcpy(out, "\\\"", 2);
		return 2;
	case '\\':
		memcpy(out, "\\\\", 2);
		return 2;
	case '\n':
		memcpy(out, "\\n", 2);
		return 2;
	case '\t':
		memcpy(out, "\\t", 2);
		return 2;
	default:
		break;
	}
	if (c < 0x20 || c == 0x7f) {
		snprintf(out, 7, "\\u%04x", c);
		return 6;
	}
	out[0] = (char)c;
	return 1;
}

/*
 * SEP"name":"value" with @s escaped to at most @max bytes: from its start,
 * or (@keep_end) its end; a cut never splits a UTF-8 sequence (bytes
 * outside valid UTF-8 are written \u00NN, so the entry stays valid).
 */
static void put_str(tl_buf *b, char sep, const char *name, const char *s,
		    size_t max, int keep_end)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n = strlen(s), from = 0, i, w, used = 0, seq;
	char e[7];

	if (keep_end) {
		/* Walk back while the escaped end still fits. */
		for (from = n; from > 0; from--) {
			w = u[from - 1] >= 0x80 ? 1 : esc(u[from - 1], e);
			if (used + w > max)
				break;
			used += w;
		}
		while (from < n && (u[from] & 0xc0) == 0x80)
			from++;
	}
	put(b, &sep, 1);
	put(b, "\"", 1);
	put_lit(b, name);
	put(b, "\":\"", 3);
	used = 0;
	for (i = from; i < n; i += seq) {
		seq = u[i] >= 0x80 ? relay__utf8_seq_len(u + i, n - i) : 1;
		if (seq == 0) {
			snprintf(e, sizeof(e), "\\u%04x", u[i]);
			w = 6;
			seq = 1;
		} else if (seq > 1) {
			w = seq;
			memcpy(e, s + i, seq);
		} else {
			w = esc(u[i], e);
		}
		if (used + w > max)
			break;
		put(b, e, w);
		used += w;
	}
	put(b, "\"", 1);
}

static const char *const outcome_names[] = {
	[RELAY__TL_OK] = "ok",
	[RELAY__TL_FAILED] = "failed",
	[RELAY__TL_TIMEOUT] = "timeout",
	[RELAY__TL_NOT_STARTED] = "not_started",
};

const char *relay__tl_outcome_name(relay__tl_outcome o)
{
	return (unsigned)o < RELAY__ARRAY_SIZE(outcome_names) ?
		       outcome_names[o] : "?";
}

/* A word of the entry's fixed part: at most @max bytes of @s, every byte
 * that is a space, below 0x21 or 0x7f written '_'; "-" when empty. */
static void put_word(tl_buf *b, const char *s, size_t max)
{
	size_t i;

	put(b, " ", 1);
	if (!*s) {
		put(b, "-", 1);
		return;
	}
	for (i = 0; s[i] && i < max; i++)
		put(b, (unsigned char)s[i] <= 0x20 || s[i] == 0x7f ? "_"
								   : s + i, 1);
}

size_t relay__tl_format(const relay__tl_attempt *a, char *buf, size_t size)
{
	tl_buf b = { buf, size, 0 };
	char sep;
	int failed = a->outcome == RELAY__TL_FAILED ||
		     a->outcome == RELAY__TL_TIMEOUT;
	int more = a->outcome != RELAY__TL_OK &&
		   ((a->reason && *a->reason) ||
		    (a->stderr_tail && *a->stderr_tail));

	if (!size)
		return 0;
	buf[0] = '\0';
	put_u64(&b, a->attempt);
	put(&b, " ", 1);
	put_i64(&b, a->start_ms);
	put(&b, " ", 1);
	put_i64(&b, a->end_ms - a->start_ms);
	put(&b, " ", 1);
	put_u64(&b, a->duration_ms);
	put(&b, " ", 1);
	put_lit(&b, relay__tl_outcome_name(a->outcome));
	if (failed && a->term_signal) {
		put_lit(&b, ":signal=");
		put_i64(&b, a->term_signal);
	} else if (failed) {
		put_lit(&b, ":exit=");
		put_i64(&b, a->exit_code);
	}
	put_lit(&b, a->outcome == RELAY__TL_NOT_STARTED ? " -" :
		    a->warm ? " warm" : " cold");
	put_word(&b, a->replica ? a->replica : "", REPLICA_MAX);
	put_word(&b, a->trace_id ? a->trace_id : "", 32);
	if (!more)
		return b.len;
	put(&b, " ", 1);
	sep = '{';
	if (a->reason && *a->reason) {
		put_str(&b, sep, a->outcome == RELAY__TL_NOT_STARTED ? "why"
								     : "reason",
			a->reason, REASON_MAX, 0);
		sep = ',';
	}
	if (a->stderr_tail && *a->stderr_tail)
		put_str(&b, sep, "stderr", a->stderr_tail, STDERR_MAX, 1);
	put(&b, "}", 1);
	return b.len;
}

char *relay__tl_push(const char *old, size_t old_len, const char *entry,
		     size_t len, size_t *out_len)
{
	size_t n = 1, i, from = 0;
	char *v;

	if (!old)
		old_len = 0;
	for (i = 0; i < old_len; i++)
		if (old[i] == '\n')
			n++;
	/* Drop the oldest entries until one more keeps RELAY__TL_MAX. */
	while (old_len && n >= RELAY__TL_MAX) {
		const char *nl = memchr(old + from, '\n', old_len - from);

		from = (size_t)(nl - old) + 1;
		n--;
	}
	*out_len = old_len ? old_len - from + 1 + len : len;
	v = relay__malloc(*out_len + 1);
	if (!v)
		return NULL;
	if (old_len) {
		memcpy(v, old + from, old_len - from);
		v[old_len - from] = '\n';
		memcpy(v + old_len - from + 1, entry, len);
	} else {
		memcpy(v, entry, len);
	}
	v[*out_len] = '\0';
	return v;
}

int relay__tl_entry_ok(const char *entry, size_t len)
{
	return len > 0 && len < RELAY__TL_ENTRY_MAX &&
	       !memchr(entry, '\n', len);
}
