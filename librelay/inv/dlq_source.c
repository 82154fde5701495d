/*
 * dlq_source.c - the source_fields of a placeholder: what an entry
 * without an event field held, so its DLQ record still shows it
 * (doc/redis-layout.md R-5).
 *
 * "NAME=VALUE" per field, in the entry's order, separated by one space.
 * Each value is cut to its first VALUE_MAX raw bytes (at a character;
 * "..." marks the cut). Names and values are escaped as stderr_tail is,
 * and tab and line feed too (the field is one line): every byte below
 * 0x20, 0x7f and every byte outside valid UTF-8 is written \xNN. Whole
 * pairs only: when the next pair would pass RELAY_DLQ_SOURCE_FIELDS_MAX
 * bytes (with room for the " ..." that then ends the text), it and the
 * rest are left out. A first pair longer than the bound keeps what fits
 * (escapes and characters whole) and ends in " ..." too. Bounded memory: the output buffer is MAX + 1.
 */
#include <string.h>

#include "common.h"
#include "inv.h"

#define MAX RELAY_DLQ_SOURCE_FIELDS_MAX
#define VALUE_MAX 64
#define MORE " ..."

struct out {
	char buf[MAX + 1];
	size_t len;
};

/* Append @n bytes of @p escaped, stopping before @limit; returns the raw
 * bytes taken. */
static size_t put_escaped(struct out *o, const char *p, size_t n,
			  size_t limit)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)p;
	size_t i = 0, k;

	while (i < n) {
		unsigned char ch = u[i];

		k = ch >= 0x20 && ch < 0x7f ? 1 :
		    ch >= 0x80 ? relay__utf8_seq_len(u + i, n - i) : 0;
		if (k) {
			if (o->len + k > limit)
				break;
			memcpy(o->buf + o->len, u + i, k);
			o->len += k;
			i += k;
			continue;
		}
		if (o->len + 4 > limit)
			break;
		o->buf[o->len++] = '\\';
		o->buf[o->len++] = 'x';
		o->buf[o->len++] = hex[ch >> 4];
		o->buf[o->len++] = hex[ch & 15];
		i++;
	}
	return i;
}

static void put(struct out *o, const char *s, size_t limit)
{
	put_escaped(o, s, strlen(s), limit);
}

/* One "NAME=VALUE" at o->len, within @limit; returns 1 when whole. */
static int put_pair(struct out *o, const char *name, const char *value,
		    size_t len, size_t limit)
{
	size_t vlen = len > VALUE_MAX ? VALUE_MAX : len, took;

	if (put_escaped(o, name, strlen(name), limit) < strlen(name))
		return 0;
	if (o->len + 1 > limit)
		return 0;
	o->buf[o->len++] = '=';
	/* Cut at a character: never inside a UTF-8 sequence. */
	while (vlen < len && vlen > 0 &&
	       ((unsigned char)value[vlen] & 0xc0) == 0x80)
		vlen--;
	took = put_escaped(o, value, vlen, limit);
	if (took < vlen)
		return 0;
	if (vlen < len) {
		if (o->len + 3 > limit)
			return 0;
		put(o, "...", limit);
	}
	return 1;
}

char *relay__dlq_source_fields(char *const *names, char *const *values,
			       const size_t *value_lens, size_t n)
{
	struct out o;
	size_t i, mark;

	if (!n)
		return NULL;
	o.len = 0;
	for (i = 0; i < n; i++) {
		const char *v = values[i] ? values[i] : "";
		size_t vl = value_lens ? value_lens[i] : strlen(v);
		/* Room for " ..." unless this is the last pair. */
		size_t limit = i + 1 < n ? MAX - strlen(MORE) : MAX;

		mark = o.len;
		if (i && o.len + 1 <= limit)
			o.buf[o.len++] = ' ';
		if (put_pair(&o, names[i] ? names[i] : "", v, vl, limit))
			continue;
		o.len = mark;
		if (i == 0)  /* one long pair: what fits, at a character */
			(void)put_pair(&o, names[0] ? names[0] : "", v, vl,
				       MAX - strlen(MORE));
		put(&o, MORE, MAX);
		break;
	}
	o.buf[o.len] = '\0';
	return relay__strndup(o.buf, o.len);
}
