/*
 * encode.c - a small protobuf encoder for OTLP's ExportTraceServiceRequest
 * and the parser of OTEL_*'s key=value lists.
 *
 * Hand-written rather than generated: the request uses a dozen fields of
 * six messages, and the encoder has no dependency to carry. The field
 * numbers are those of opentelemetry-proto (collector/trace/v1,
 * trace/v1, common/v1, resource/v1):
 *
 *   ExportTraceServiceRequest: resource_spans 1
 *   ResourceSpans: resource 1, scope_spans 2
 *   Resource: attributes 1
 *   ScopeSpans: scope 1, spans 2
 *   InstrumentationScope: name 1, version 2
 *   Span: trace_id 1, span_id 2, trace_state 3, parent_span_id 4,
 *         name 5, kind 6, start_time_unix_nano 7 (fixed64),
 *         end_time_unix_nano 8 (fixed64), attributes 9, links 13,
 *         status 15, flags 16 (fixed32)
 *   Span.Link: trace_id 1, span_id 2, trace_state 3, attributes 4,
 *         flags 6 (fixed32)
 *   Status: message 2, code 3
 *   KeyValue: key 1, value 2
 *   AnyValue: string_value 1, bool_value 2, int64_value 3
 *
 * Spans are encoded one by one as they end (relay_otlp_span_append())
 * into a buffer that keeps room in front for the request's head; the
 * head, whose lengths are known only when the batch is, is written into
 * that room when the batch is posted (relay_otlp_head_put()). The
 * resource and the scope never change and are encoded once
 * (relay_otlp_parts_init()).
 *
 * A nested message is written in place after a 5-byte gap for its length
 * and moved back once its length is known (every body is far below the
 * 4 GiB a 5-byte varint holds); an attribute, the most frequent message,
 * has its lengths computed first and is written straight.
 */
#include <stdlib.h>
#include <string.h>

#include "otlp.h"

typedef relay_otlp_buf pb;

enum { VARINT = 0, I64 = 1, LEN = 2, I32 = 5 };

static bool reserve(pb *b, size_t extra)
{
	size_t cap;
	uint8_t *np;

	if (b->oom)
		return false;
	if (b->n + extra <= b->cap)
		return true;
	cap = b->cap ? b->cap : 1024;
	while (cap < b->n + extra)
		cap *= 2;
	np = realloc(b->p, cap);
	if (!np) {
		b->oom = true;
		return false;
	}
	b->p = np;
	b->cap = cap;
	return true;
}

static size_t varint_at(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

static void varint(pb *b, uint64_t v)
{
	if (reserve(b, 10))
		b->n += varint_at(b->p + b->n, v);
}

static void tag(pb *b, uint32_t field, int wire)
{
	varint(b, (uint64_t)field << 3 | (uint32_t)wire);
}

static void bytes(pb *b, uint32_t field, const void *p, size_t n)
{
	tag(b, field, LEN);
	varint(b, n);
	if (reserve(b, n)) {
		memcpy(b->p + b->n, p, n);
		b->n += n;
	}
}

/* A string field; proto3 omits an empty one. */
static void string(pb *b, uint32_t field, const char *s)
{
	if (s && *s)
		bytes(b, field, s, strlen(s));
}

static void fixed(pb *b, uint32_t field, uint64_t v, size_t width)
{
	size_t i;

	tag(b, field, width == 8 ? I64 : I32);
	if (!reserve(b, width))
		return;
	for (i = 0; i < width; i++)
		b->p[b->n++] = (uint8_t)(v >> (8 * i));
}

/* Open a nested message: the tag and a 5-byte gap. */
static size_t open_msg(pb *b, uint32_t field)
{
	tag(b, field, LEN);
	if (!reserve(b, 5))
		return 0;
	b->n += 5;
	return b->n;
}

static void close_msg(pb *b, size_t body)
{
	uint8_t len[10];
	size_t n, ln;

	if (b->oom)
		return;
	n = b->n - body;
	ln = varint_at(len, n);
	memmove(b->p + body - 5 + ln, b->p + body, n);
	memcpy(b->p + body - 5, len, ln);
	b->n -= 5 - ln;
}

static size_t varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static uint8_t *put_bytes(uint8_t *p, uint8_t tagbyte, const void *s,
			  size_t n)
{
	*p++ = tagbyte;
	p += varint_at(p, n);
	memcpy(p, s, n);
	return p + n;
}

/* A KeyValue (field @field < 16) with its lengths computed first: no gap,
 * no move. An empty key is omitted as proto3 omits an empty string; an
 * empty string value is written (it is a value, not an absent one). */
static void attr(pb *b, uint32_t field, const relay_trace_attr *a)
{
	size_t klen = strlen(a->key), slen = 0, val, kv;
	const char *sv = "";
	uint8_t *p;

	switch (a->type) {
	case RELAY_TRACE_ATTR_STRING:
		if (a->s) {
			sv = a->s;
			slen = strlen(sv);
		}
		val = 1 + varint_len(slen) + slen;
		break;
	case RELAY_TRACE_ATTR_INT:
		val = 1 + varint_len((uint64_t)a->i);
		break;
	case RELAY_TRACE_ATTR_BOOL:
		val = 2;
		break;
	default:
		val = 0;
		break;
	}
	kv = (klen ? 1 + varint_len(klen) + klen : 0) +
	     1 + varint_len(val) + val;
	if (!reserve(b, 1 + varint_len(kv) + kv))
		return;
	p = b->p + b->n;
	*p++ = (uint8_t)(field << 3 | LEN);
	p += varint_at(p, kv);
	if (klen)
		p = put_bytes(p, 1 << 3 | LEN, a->key, klen);
	*p++ = 2 << 3 | LEN;
	p += varint_at(p, val);
	switch (a->type) {
	case RELAY_TRACE_ATTR_STRING:
		p = put_bytes(p, 1 << 3 | LEN, sv, slen);
		break;
	case RELAY_TRACE_ATTR_INT:
		*p++ = 3 << 3 | VARINT;
		p += varint_at(p, (uint64_t)a->i);
		break;
	case RELAY_TRACE_ATTR_BOOL:
		*p++ = 2 << 3 | VARINT;
		*p++ = a->b ? 1 : 0;
		break;
	default:
		break;
	}
	b->n = (size_t)(p - b->p);
}

static void attrs(pb *b, uint32_t field, const relay_trace_attr *a, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (a[i].key)
			attr(b, field, &a[i]);
}

static bool zero(const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static void span(pb *b, const relay_span *s)
{
	size_t m = open_msg(b, 2), i;

	bytes(b, 1, s->trace_id, RELAY_TRACE_ID_SIZE);
	bytes(b, 2, s->span_id, RELAY_SPAN_ID_SIZE);
	string(b, 3, s->tracestate);
	if (!zero(s->parent_span_id, RELAY_SPAN_ID_SIZE))
		bytes(b, 4, s->parent_span_id, RELAY_SPAN_ID_SIZE);
	string(b, 5, s->name);
	if (s->kind) {
		tag(b, 6, VARINT);
		varint(b, (uint64_t)s->kind);
	}
	fixed(b, 7, (uint64_t)s->start_unix_ns, 8);
	fixed(b, 8, (uint64_t)s->end_unix_ns, 8);
	attrs(b, 9, s->attrs, s->nattrs);
	for (i = 0; i < s->nlinks; i++) {
		const relay_span_link *l = &s->links[i];
		size_t lm = open_msg(b, 13);

		bytes(b, 1, l->trace_id, RELAY_TRACE_ID_SIZE);
		bytes(b, 2, l->span_id, RELAY_SPAN_ID_SIZE);
		string(b, 3, l->tracestate);
		attrs(b, 4, l->attrs, l->nattrs);
		fixed(b, 6, l->flags, 4);
		close_msg(b, lm);
	}
	if (s->status || (s->status_message && *s->status_message)) {
		size_t st = open_msg(b, 15);

		string(b, 2, s->status_message);
		if (s->status) {
			tag(b, 3, VARINT);
			varint(b, (uint64_t)s->status);
		}
		close_msg(b, st);
	}
	fixed(b, 16, s->flags, 4);
	close_msg(b, m);
}

/* ---- requests --------------------------------------------------------- */

void relay_otlp_buf_free(relay_otlp_buf *b)
{
	free(b->p);
	*b = (relay_otlp_buf){ NULL, 0, 0, false };
}

int relay_otlp_parts_init(relay_otlp_parts *p,
			  const relay_trace_attr *resource, size_t nresource,
			  const char *scope, const char *scope_version)
{
	memset(p, 0, sizeof(*p));
	/* Both may be empty: reserve() makes them non-NULL. */
	reserve(&p->resource, 1);
	attrs(&p->resource, 1, resource, nresource);
	reserve(&p->scope, 1);
	string(&p->scope, 1, scope);
	string(&p->scope, 2, scope_version);
	if (p->resource.oom || p->scope.oom) {
		relay_otlp_parts_clear(p);
		return RELAY_ENOMEM;
	}
	return 0;
}

void relay_otlp_parts_clear(relay_otlp_parts *p)
{
	relay_otlp_buf_free(&p->resource);
	relay_otlp_buf_free(&p->scope);
}

size_t relay_otlp_head_max(const relay_otlp_parts *p)
{
	/* four tags, four lengths of at most 10 bytes, the two parts */
	return 4 * 11 + p->resource.n + p->scope.n;
}

size_t relay_otlp_span_append(relay_otlp_buf *b, const relay_span *s,
			      size_t max)
{
	size_t n0 = b->n;

	span(b, s);
	if (b->oom || b->n - n0 > max) {
		b->n = n0;
		b->oom = false;
		return 0;
	}
	return b->n - n0;
}

size_t relay_otlp_head_put(const relay_otlp_parts *p, relay_otlp_buf *b,
			   size_t gap)
{
	size_t r = p->resource.n, sc = p->scope.n;
	size_t rmsg = 1 + varint_len(r) + r;
	size_t smsg = 1 + varint_len(sc) + sc;
	size_t ss = smsg + (b->n - gap);
	size_t rs = rmsg + 1 + varint_len(ss) + ss;
	size_t head = 1 + varint_len(rs) + rmsg + 1 + varint_len(ss) + smsg;
	uint8_t *q = b->p + gap - head;

	*q++ = 1 << 3 | LEN;                    /* resource_spans */
	q += varint_at(q, rs);
	q = put_bytes(q, 1 << 3 | LEN, p->resource.p, r);   /* resource */
	*q++ = 2 << 3 | LEN;                    /* scope_spans */
	q += varint_at(q, ss);
	put_bytes(q, 1 << 3 | LEN, p->scope.p, sc);         /* scope */
	return gap - head;
}

int relay_otlp_encode(const relay_trace_attr *resource, size_t nresource,
		      const char *scope, const char *scope_version,
		      relay_span *const *spans, size_t n,
		      uint8_t **out, size_t *outlen)
{
	relay_otlp_parts parts;
	pb b = { NULL, 0, 0, false };
	size_t gap, at, i;

	*out = NULL;
	*outlen = 0;
	if (relay_otlp_parts_init(&parts, resource, nresource, scope,
				  scope_version))
		return RELAY_ENOMEM;
	gap = relay_otlp_head_max(&parts);
	if (reserve(&b, gap))
		b.n = gap;
	for (i = 0; i < n && !b.oom; i++)
		span(&b, spans[i]);
	if (b.oom) {
		relay_otlp_parts_clear(&parts);
		free(b.p);
		return RELAY_ENOMEM;
	}
	at = relay_otlp_head_put(&parts, &b, gap);
	relay_otlp_parts_clear(&parts);
	memmove(b.p, b.p + at, b.n - at);
	*out = b.p;
	*outlen = b.n - at;
	return 0;
}

/* ---- key=value lists -------------------------------------------------- */

static int hexv(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* s[0..n) trimmed, %-decoded if @decode; NULL on a bad escape or ENOMEM
 * (*bad tells which). */
static char *piece(const char *s, size_t n, bool decode, bool *bad)
{
	char *d;
	size_t i, j = 0;

	while (n && (*s == ' ' || *s == '\t')) {
		s++;
		n--;
	}
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	d = malloc(n + 1);
	if (!d)
		return NULL;
	for (i = 0; i < n; i++) {
		if (decode && s[i] == '%') {
			int hi = i + 2 < n ? hexv(s[i + 1]) : -1;
			int lo = hi >= 0 ? hexv(s[i + 2]) : -1;

			if (hi < 0 || lo < 0) {
				*bad = true;
				free(d);
				return NULL;
			}
			d[j++] = (char)(hi << 4 | lo);
			i += 2;
		} else {
			d[j++] = s[i];
		}
	}
	d[j] = '\0';
	return d;
}

void relay_otlp_kv_free(relay_otlp_kv *kv, size_t n)
{
	size_t i;

	for (i = 0; kv && i < n; i++) {
		free(kv[i].key);
		free(kv[i].value);
	}
	free(kv);
}

int relay_otlp_kv_parse(const char *s, relay_otlp_kv **out, size_t *n)
{
	relay_otlp_kv *kv = NULL;
	size_t count = 0, at = 0, len = strlen(s);
	bool bad = false;

	*out = NULL;
	*n = 0;
	while (at < len) {
		const char *comma = memchr(s + at, ',', len - at);
		size_t end = comma ? (size_t)(comma - s) : len;
		const char *eq = memchr(s + at, '=', end - at);
		relay_otlp_kv *grown;
		size_t b = at;

		at = end + 1;
		while (b < end && (s[b] == ' ' || s[b] == '\t'))
			b++;
		if (b == end)
			continue;       /* an empty member */
		if (!eq)
			goto parse_error;
		grown = realloc(kv, (count + 1) * sizeof(*kv));
		if (!grown)
			goto nomem;
		kv = grown;
		kv[count].key = piece(s + b, (size_t)(eq - (s + b)), false,
				      &bad);
		kv[count].value = kv[count].key ?
				  piece(eq + 1, (size_t)(s + end - eq - 1),
					true, &bad) : NULL;
		count++;
		if (bad || (kv[count - 1].key && !*kv[count - 1].key))
			goto parse_error;
		if (!kv[count - 1].key || !kv[count - 1].value)
			goto nomem;
	}
	*out = kv;
	*n = count;
	return 0;
parse_error:
	relay_otlp_kv_free(kv, count);
	return RELAY_EPARSE;
nomem:
	relay_otlp_kv_free(kv, count);
	return RELAY_ENOMEM;
}
