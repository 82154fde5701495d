/*
 * scan.c - one pass over raw JSON bytes: strict validation plus matching.
 *
 * The scanner validates the whole text as RFC 8259 JSON (structure,
 * literals, number grammar, escapes including surrogate pairs, no raw
 * control characters, well-formed UTF-8 without overlongs or surrogates,
 * nesting at most RELAY__JSON_MAX_DEPTH) and, at the same time, walks the
 * ruleset's trie: an object member whose key is a trie child is visited
 * (its leaves are evaluated), everything else is only validated. Values no
 * rule looks at are never decoded; a string is unescaped (into the
 * matcher's scratch buffer) only when it contains a backslash and some
 * rule compares it. Numbers are converted only where a rule compares them.
 *
 * Every function takes the current position and returns the position after
 * what it consumed, or NULL after recording an error ("invalid literal at
 * offset 12"). The end of input reads as byte 0, which is invalid
 * everywhere outside strings, so most bounds checks fold into the grammar.
 *
 * Recursion follows the trie only (bounded by the pattern depth); values
 * off the trie are skipped by an iterative loop with a bit stack.
 */
#include <stdio.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "ruleset_int.h"

typedef unsigned char uchar;

typedef struct scan {
	relay_matcher *m;
	const relay__tnode *nodes;
	const uchar *base, *end;
	bool again;               /* a key repeated while not logging */
	bool oom;                 /* an unescape could not allocate */
} scan;

#define AT(s, p) ((p) < (s)->end ? *(p) : 0)

static const uchar *fail(scan *s, const uchar *p, const char *what)
{
	snprintf(s->m->errstr, sizeof(s->m->errstr), "%s at offset %zu", what,
		 (size_t)(p - s->base));
	return NULL;
}

/* Out of memory is not the event's fault: RELAY_ENOMEM, not a parse
 * error (which would dead-letter a valid event). */
static const uchar *oom(scan *s)
{
	snprintf(s->m->errstr, sizeof(s->m->errstr), "out of memory");
	s->oom = true;
	return NULL;
}

/* Skip whitespace. Compact JSON has none: one compare decides. */
static inline const uchar *ws(const scan *s, const uchar *p)
{
	if (p < s->end && *p > ' ')
		return p;
	while (p < s->end &&
	       (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
		p++;
	return p;
}

static int hexval(uchar c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static long hex4(const scan *s, const uchar *p)
{
	long v = 0;
	int i, d;

	if (s->end - p < 4)
		return -1;
	for (i = 0; i < 4; i++) {
		d = hexval(p[i]);
		if (d < 0)
			return -1;
		v = v * 16 + d;
	}
	return v;
}

/* p at a backslash: validate one escape, return what follows it. */
static const uchar *escape(scan *s, const uchar *p)
{
	long hi, lo;

	switch (AT(s, p + 1)) {
	case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r':
	case 't':
		return p + 2;
	case 'u':
		break;
	default:
		return fail(s, p, "invalid escape");
	}
	hi = hex4(s, p + 2);
	if (hi < 0)
		return fail(s, p, "invalid \\u escape");
	if (hi >= 0xdc00 && hi <= 0xdfff)
		return fail(s, p, "lone low surrogate");
	if (hi < 0xd800 || hi > 0xdbff)
		return p + 6;
	if (AT(s, p + 6) != '\\' || AT(s, p + 7) != 'u')
		return fail(s, p, "lone high surrogate");
	lo = hex4(s, p + 8);
	if (lo < 0xdc00 || lo > 0xdfff)
		return fail(s, p, "lone high surrogate");
	return p + 12;
}

/* p at a byte >= 0x80: validate one UTF-8 scalar value. */
static const uchar *utf8(scan *s, const uchar *p)
{
	uchar c = *p, lo = 0x80, hi = 0xbf;
	int n, i;

	if (c < 0xc2)
		return fail(s, p, "invalid UTF-8");
	if (c < 0xe0) {
		n = 1;
	} else if (c < 0xf0) {
		n = 2;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f; /* no UTF-16 surrogates */
	} else if (c < 0xf5) {
		n = 3;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f; /* nothing above U+10FFFF */
	} else {
		return fail(s, p, "invalid UTF-8");
	}
	if (s->end - p <= n)
		return fail(s, p, "invalid UTF-8");
	if (p[1] < lo || p[1] > hi)
		return fail(s, p, "invalid UTF-8");
	for (i = 2; i <= n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return fail(s, p, "invalid UTF-8");
	return p + n + 1;
}

/*
 * p just after an opening quote: find the closing quote, validating on the
 * way; *esc is set when a backslash was seen. The fast loop stops only on
 * '"', '\\', a control character or a non-ASCII byte (the signed compare
 * against 0x20 catches both of the last two).
 */
static const uchar *string_end_slow(scan *s, const uchar *p, int *esc)
{
	const uchar *end = s->end;
	uchar c;

	for (;;) {
#if defined(__SSE2__)
		const __m128i quote = _mm_set1_epi8('"');
		const __m128i bslash = _mm_set1_epi8('\\');
		const __m128i space = _mm_set1_epi8(0x20);

		while (end - p >= 16) {
			__m128i v = _mm_loadu_si128((const __m128i *)p);
			__m128i x = _mm_or_si128(
				_mm_or_si128(_mm_cmpeq_epi8(v, quote),
					     _mm_cmpeq_epi8(v, bslash)),
				_mm_cmplt_epi8(v, space));
			int mask = _mm_movemask_epi8(x);

			if (mask) {
				p += __builtin_ctz((unsigned)mask);
				goto special;
			}
			p += 16;
		}
#endif
		while (p < end && *p != '"' && *p != '\\' && *p >= 0x20 &&
		       *p < 0x80)
			p++;
		if (p >= end)
			return fail(s, p, "unterminated string");
#if defined(__SSE2__)
special:
#endif
		c = *p;
		if (c == '"')
			return p;
		if (c == '\\') {
			*esc = 1;
			p = escape(s, p);
		} else if (c < 0x20) {
			return fail(s, p, "control character in string");
		} else {
			p = utf8(s, p);
		}
		if (!p)
			return NULL;
	}
}

/*
 * A window: 64 bytes of input and which of them are special to a string
 * (quote, backslash, control, non-ASCII), a bit each. Finding a string's
 * end from the bytes alone makes each string wait for the previous one:
 * its position, a load, compares, a mask. With a window, the strings of
 * the next 64 bytes (a member or three in compact JSON) end by bit
 * operations on one mask, and the loads of the next window do not wait
 * for the compares of this one. The scanner keeps one in registers per
 * object (scan_object) and reloads it where a string starts outside it.
 */
typedef struct window {
	uintptr_t at;        /* address of its first byte */
	uint64_t special;    /* bit i: the byte at + i is special */
} window;

/* A window that holds nothing: every position is outside it. */
#define WINDOW_NONE ((window){ (uintptr_t)0 - 64, 0 })

#if defined(__SSE2__)
static inline uint64_t special16(const uchar *p)
{
	__m128i v = _mm_loadu_si128((const __m128i *)p);
	__m128i x = _mm_or_si128(
		_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
			     _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))),
		_mm_cmplt_epi8(v, _mm_set1_epi8(0x20)));

	return (uint64_t)(unsigned)_mm_movemask_epi8(x);
}

/* The window's mask of the 64 bytes at p. */
static inline uint64_t special64(const uchar *p)
{
	return special16(p) | special16(p + 16) << 16 |
	       special16(p + 32) << 32 | special16(p + 48) << 48;
}
#endif

/*
 * p just after an opening quote: the closing quote, found through window
 * @w (string_end_slow() from the first special byte, or past the
 * window). A string starting outside the window reloads it at p; within
 * 64 bytes of the end, from a copy of what is left (the bits past the
 * end cleared).
 */
static inline const uchar *string_end(scan *s, window *w, const uchar *p,
				      int *esc)
{
#if defined(__SSE2__)
	uintptr_t off = (uintptr_t)p - w->at;
	uint64_t m;

	if (off >= 64) {
		size_t left = (size_t)(s->end - p);

		if (left >= 64) {
			w->special = special64(p);
		} else {
			uchar tail[64];

			memset(tail, 0, sizeof(tail));
			memcpy(tail, p, left);
			w->special = special64(tail) & ((1ULL << left) - 1);
		}
		w->at = (uintptr_t)p;
		off = 0;
	}
	m = w->special >> off;
	if (m) {
		const uchar *q = p + __builtin_ctzll(m);

		if (*q == '"')
			return q;
		return string_end_slow(s, q, esc);
	}
	/* nothing special up to the window's end (or the input's) */
	off = 64 - off;
	if (off > (uintptr_t)(s->end - p))
		off = (uintptr_t)(s->end - p);
	return string_end_slow(s, p + off, esc);
#else
	(void)w;
	return string_end_slow(s, p, esc);
#endif
}

static void put_utf8(char *o, size_t *n, unsigned long cp)
{
	if (cp < 0x80) {
		o[(*n)++] = (char)cp;
	} else if (cp < 0x800) {
		o[(*n)++] = (char)(0xc0 | (cp >> 6));
		o[(*n)++] = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		o[(*n)++] = (char)(0xe0 | (cp >> 12));
		o[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[(*n)++] = (char)(0x80 | (cp & 0x3f));
	} else {
		o[(*n)++] = (char)(0xf0 | (cp >> 18));
		o[(*n)++] = (char)(0x80 | ((cp >> 12) & 0x3f));
		o[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[(*n)++] = (char)(0x80 | (cp & 0x3f));
	}
}

/*
 * Unescape a validated string body [p, q) into the scratch buffer. The
 * result is never longer than the input (\uXXXX is 6 bytes for at most 3,
 * a surrogate pair 12 for 4), so one reservation suffices; it grows only
 * when an event has a longer escaped string than any before.
 */
static const char *unescape(scan *s, const uchar *p, const uchar *q,
			    size_t *len)
{
	relay__buf *b = &s->m->scratch;
	size_t n = 0;
	unsigned long cp, lo;
	char *o;

	b->len = 0;
	if (relay__buf_reserve(b, (size_t)(q - p)))
		return NULL;
	o = b->data;
	while (p < q) {
		if (*p != '\\') {
			o[n++] = (char)*p++;
			continue;
		}
		switch (p[1]) {
		case 'b': o[n++] = '\b'; break;
		case 'f': o[n++] = '\f'; break;
		case 'n': o[n++] = '\n'; break;
		case 'r': o[n++] = '\r'; break;
		case 't': o[n++] = '\t'; break;
		case 'u':
			cp = (unsigned long)hex4(s, p + 2);
			if (cp >= 0xd800 && cp <= 0xdbff) {
				lo = (unsigned long)hex4(s, p + 8);
				cp = 0x10000 + ((cp - 0xd800) << 10) +
				     (lo - 0xdc00);
				p += 6;
			}
			put_utf8(o, &n, cp);
			p += 6;
			continue;
		default: o[n++] = (char)p[1]; break;
		}
		p += 2;
	}
	*len = n;
	return o;
}

static inline int is_digit(const scan *s, const uchar *q)
{
	return q < s->end && (uchar)(*q - '0') < 10;
}

/*
 * The end of a run of ASCII digits, eight bytes at a time. Per byte b,
 * (b - 0x30) has its high bit set for b < '0' (and b >= 0xb0), (b + 0x46)
 * for b > '9' (up to 0xb9); either way the byte is not a digit. Borrows
 * and carries only move towards later bytes, and every byte before the
 * first non-digit is a digit (no borrow, no carry), so the lowest flagged
 * byte is exactly the first non-digit.
 */
static inline const uchar *digits_end(const scan *s, const uchar *q)
{
	uint64_t x, t;

	while (s->end - q >= 8) {
		memcpy(&x, q, 8);
		t = ((x - 0x3030303030303030ULL) |
		     (x + 0x4646464646464646ULL)) & 0x8080808080808080ULL;
		if (t) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
			return q + (__builtin_ctzll(t) >> 3);
#else
			break;
#endif
		}
		q += 8;
	}
	while (is_digit(s, q))
		q++;
	return q;
}

/*
 * A plain integer at p, -?(0|[1-9][0-9]*) of at most 15 digits with no
 * fraction or exponent after it (most numbers events carry): its end,
 * with *v its value (exact, as relay__json_number() gives it), in one
 * pass; NULL for anything else, which number_end() then validates and
 * relay__json_number() converts.
 */
static inline const uchar *int_value(const scan *s, const uchar *p,
				     double *v)
{
	const uchar *q = p, *end = s->end;
	uint64_t mant = 0;
	int neg = 0, nd = 0;

	if (q < end && *q == '-') {
		neg = 1;
		q++;
	}
	if (q < end && *q == '0') {
		q++;
	} else {
		while (q < end && (uchar)(*q - '0') < 10 && nd < 16) {
			mant = mant * 10 + (uint64_t)(*q - '0');
			q++;
			nd++;
		}
		if (nd == 0 || nd > 15)
			return NULL;
	}
	if (q < end && ((uchar)(*q - '0') < 10 || *q == '.' ||
			(*q | 0x20) == 'e'))
		return NULL;
	*v = neg ? -(double)mant : (double)mant;
	return q;
}

/* RFC 8259 number grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static const uchar *number_end(scan *s, const uchar *p)
{
	const uchar *q = p;

	if (AT(s, q) == '-')
		q++;
	if (AT(s, q) == '0') {
		q++;
	} else if (is_digit(s, q)) {
		q = digits_end(s, q + 1);
	} else {
		return fail(s, p, "invalid number");
	}
	if (AT(s, q) == '.') {
		q++;
		if (!is_digit(s, q))
			return fail(s, p, "invalid number");
		q = digits_end(s, q + 1);
	}
	if ((AT(s, q) | 0x20) == 'e') {
		q++;
		if (AT(s, q) == '+' || AT(s, q) == '-')
			q++;
		if (!is_digit(s, q))
			return fail(s, p, "invalid number");
		q = digits_end(s, q + 1);
	}
	return q;
}

static const uchar *literal(scan *s, const uchar *p, const char *word,
			    size_t n)
{
	if ((size_t)(s->end - p) < n || memcmp(p, word, n) != 0)
		return fail(s, p, "invalid literal");
	return p + n;
}

/* p at a string key's opening quote: validate key and ':'; returns the
 * position of the value (whitespace skipped). */
static inline const uchar *member_key(scan *s, window *w, const uchar *p,
				      const uchar **k, const uchar **kend,
				      int *esc)
{
	if (AT(s, p) != '"')
		return fail(s, p, "expected string key");
	*k = p + 1;
	*esc = 0;
	p = string_end(s, w, p + 1, esc);
	if (!p)
		return NULL;
	*kend = p;
	/* compact JSON: the colon, then the value */
	if (s->end - p > 2 && p[1] == ':' && p[2] > ' ')
		return p + 2;
	p = ws(s, p + 1);
	if (AT(s, p) != ':')
		return fail(s, p, "expected ':'");
	return ws(s, p + 1);
}

/*
 * Validate one value of any shape at p (whitespace skipped), nested at
 * @depth, without looking at its contents. Containers are tracked in a
 * bit stack (1 = object) instead of recursion.
 */
static const uchar *skip_value(scan *s, const uchar *p, int depth)
{
	uint64_t stack[RELAY__JSON_MAX_DEPTH / 64 + 1];
	window w = WINDOW_NONE;
	const uchar *k, *kend;
	int sp = 0, esc, obj;

value:
	if (depth + sp > RELAY__JSON_MAX_DEPTH)
		return fail(s, p, "nesting too deep");
	switch (AT(s, p)) {
	case '"':
		esc = 0;
		p = string_end(s, &w, p + 1, &esc);
		if (!p)
			return NULL;
		p++;
		break;
	case '{':
	case '[':
		obj = *p == '{';
		if (obj)
			stack[sp / 64] |= 1ULL << (sp % 64);
		else
			stack[sp / 64] &= ~(1ULL << (sp % 64));
		sp++;
		p = ws(s, p + 1);
		if (AT(s, p) == (obj ? '}' : ']')) {
			sp--;
			p++;
			break;
		}
		if (obj) {
			p = member_key(s, &w, p, &k, &kend, &esc);
			if (!p)
				return NULL;
		}
		goto value;
	case 't':
		p = literal(s, p, "true", 4);
		break;
	case 'f':
		p = literal(s, p, "false", 5);
		break;
	case 'n':
		p = literal(s, p, "null", 4);
		break;
	case '-': case '0': case '1': case '2': case '3': case '4': case '5':
	case '6': case '7': case '8': case '9':
		p = number_end(s, p);
		break;
	case 0:
		return fail(s, p, p >= s->end ? "unexpected end of input" :
			    "unexpected character");
	default:
		return fail(s, p, "unexpected character");
	}
	if (!p)
		return NULL;
	while (sp > 0) {
		obj = (stack[(sp - 1) / 64] >> ((sp - 1) % 64)) & 1;
		p = ws(s, p);
		if (AT(s, p) == ',') {
			p = ws(s, p + 1);
			if (obj) {
				p = member_key(s, &w, p, &k, &kend, &esc);
				if (!p)
					return NULL;
			}
			goto value;
		}
		if (AT(s, p) != (obj ? '}' : ']'))
			return fail(s, p, obj ? "expected ',' or '}'" :
				    "expected ',' or ']'");
		sp--;
		p++;
	}
	return p;
}

static const uchar *scan_object(scan *s, const uchar *p, uint32_t node,
				int depth);

static RELAY__ALWAYS_INLINE const uchar *visit_value(scan *s, window *w,
							const uchar *p,
							uint32_t node,
							int depth);

/*
 * Visit the value at p of the member that leads to trie node @node. A
 * repeated key first forgets what its previous value fired (the last
 * occurrence wins); what this value fires is logged in [node_from,
 * node_to) for the next repetition. Without the log (the first scan), a
 * repeated key stops the scan to start it again with the log.
 *
 * Nesting needs no test here: trie nodes are at most
 * RELAY__PATTERN_MAX_DEPTH deep, and skip_value() tests what lies below.
 */
_Static_assert(RELAY__PATTERN_MAX_DEPTH + 2 < RELAY__JSON_MAX_DEPTH,
	       "the trie's depth bounds the scanner's recursion");

RELAY__COLD static const uchar *visit_logged(scan *s, const uchar *p,
					     uint32_t node, int depth)
{
	relay_matcher *m = s->m;
	window w = WINDOW_NONE;  /* its own: the caller's stays in registers */

	if (m->node_seen[node] == m->epoch) {
		if (!m->logging) {
			s->again = true;
			return NULL;
		}
		relay__node_forget(m, node);
	}
	m->node_seen[node] = m->epoch;
	relay__mlog(m, node | RELAY__LOG_NODE);
	m->node_from[node] = m->nlog;
	p = visit_value(s, &w, p, node, depth);
	m->node_to[node] = m->nlog;
	return p;
}

static inline const uchar *visit(scan *s, window *w, const uchar *p,
				 uint32_t node, int depth)
{
	relay_matcher *m = s->m;

	if (m->node_seen[node] == m->epoch || m->logging)
		return visit_logged(s, p, node, depth);
	m->node_seen[node] = m->epoch;
	return visit_value(s, w, p, node, depth);
}

static RELAY__ALWAYS_INLINE const uchar *visit_value(scan *s, window *w,
							const uchar *p,
							uint32_t node,
							int depth)
{
	double num;
	relay_matcher *m = s->m;
	const relay__tnode *n = &s->nodes[node];
	const uchar *q;
	const char *str;
	size_t len;
	int esc = 0;

	/* one test for the usual case, neither (NONE is all ones) */
	if ((n->present & n->scalar) != RELAY__NONE) {
		if (n->present != RELAY__NONE)
			relay__fire(m, n->present);
		if (n->scalar != RELAY__NONE && AT(s, p) != '{' &&
		    AT(s, p) != '[')
			relay__fire(m, n->scalar);
	}
	switch (AT(s, p)) {
	case '"':
		q = string_end(s, w, p + 1, &esc);
		if (!q || !n->want_str)
			return q ? q + 1 : NULL;
		str = (const char *)p + 1;
		len = (size_t)(q - p - 1);
		if (esc) {
			str = unescape(s, p + 1, q, &len);
			if (!str)
				return oom(s);
		}
		if (n->eq_only)
			relay__eval_eq_str(m, n, str, len);
		else
			relay__eval_string(m, n, node, str, len);
		return q + 1;
	case '{':
		if (n->kids.n)
			return scan_object(s, p, node, depth);
		return skip_value(s, p, depth);
	case 't':
		q = literal(s, p, "true", 4);
		if (q && n->eq_true != RELAY__NONE)
			relay__fire(m, n->eq_true);
		return q;
	case 'f':
		q = literal(s, p, "false", 5);
		if (q && n->eq_false != RELAY__NONE)
			relay__fire(m, n->eq_false);
		return q;
	case 'n':
		q = literal(s, p, "null", 4);
		if (q && n->eq_null != RELAY__NONE)
			relay__fire(m, n->eq_null);
		return q;
	case '-': case '0': case '1': case '2': case '3': case '4': case '5':
	case '6': case '7': case '8': case '9':
		if (!n->want_num)
			return number_end(s, p);
		q = int_value(s, p, &num);
		if (!q) {
			q = number_end(s, p);
			if (!q)
				return NULL;
			num = relay__json_number((const char *)p,
						 (size_t)(q - p));
		}
		relay__eval_number(m, n, node, num);
		return q;
	default:
		return skip_value(s, p, depth);
	}
}

/*
 * The child of the member named [key, klen) through @kids, using and
 * updating the prediction at *at (the matcher's kid_next): events of one
 * producer keep their keys in one order, and a key equal to the one that
 * came at this point last time is found by one compare instead of a hash.
 */
static inline uint32_t kid_of(const relay__smap *kids, uint32_t *next,
			      uint32_t *at, const char *key, size_t klen)
{
	uint32_t e = next[*at];
	uint64_t w0, w1;

	/* no key of this length here (most keys where rules are few) */
	if (!((kids->lenmask >> (klen < 63 ? klen : 63)) & 1))
		return RELAY__NONE;
	relay__key_words(key, klen, &w0, &w1);
	if (e >= kids->n || !relay__sent_is(&kids->ents[e], key, klen, w0,
					    w1)) {
		e = relay__smap_find_at(kids, key, klen, w0, w1);
		if (e == RELAY__NONE)
			return RELAY__NONE;  /* not a trie key: keep the guess */
		next[*at] = e;
	}
	*at = 1 + e;
	return kids->ents[e].val;
}

/* p at '{' of an object that trie node @node describes. */
static const uchar *scan_object(scan *s, const uchar *p, uint32_t node,
				int depth)
{
	const relay__smap *kids = &s->nodes[node].kids;
	uint32_t *next = s->m->kid_next + s->nodes[node].kbase, at = 0;
	const uchar *k, *kend;
	const char *key;
	size_t klen;
	uint32_t kid;
	window w = WINDOW_NONE;
	int esc;

	p = ws(s, p + 1);
	if (AT(s, p) == '}')
		return p + 1;
	for (;;) {
		p = member_key(s, &w, p, &k, &kend, &esc);
		if (!p)
			return NULL;
		key = (const char *)k;
		klen = (size_t)(kend - k);
		if (esc) {
			key = unescape(s, k, kend, &klen);
			if (!key)
				return oom(s);
		}
		kid = kid_of(kids, next, &at, key, klen);
		if (kid != RELAY__NONE) {
			p = visit(s, &w, p, kid, depth + 1);
		} else if (AT(s, p) == '"') {
			/* most skipped members are strings: no call */
			p = string_end(s, &w, p + 1, &esc);
			if (p)
				p++;
		} else {
			p = skip_value(s, p, depth + 1);
		}
		if (!p)
			return NULL;
		/* compact JSON: the comma, then the next key */
		if (s->end - p > 1 && p[0] == ',' && p[1] > ' ') {
			p++;
			continue;
		}
		p = ws(s, p);
		if (AT(s, p) == ',') {
			p = ws(s, p + 1);
			continue;
		}
		if (AT(s, p) == '}')
			return p + 1;
		return fail(s, p, "expected ',' or '}'");
	}
}

int relay__scan_event(relay_matcher *m, const char *json, size_t len)
{
	scan s = { m, m->rs->nodes, (const uchar *)json,
		   (const uchar *)json + len, false, false };
	const uchar *p = ws(&s, s.base);
	int object = AT(&s, p) == '{';

	if (p == s.end) {
		fail(&s, p, "empty input");
		return RELAY_EPARSE;
	}
	if (object) {
		const uchar *o = p;

		m->node_seen[0] = m->epoch;
		p = scan_object(&s, o, 0, 1);
		if (!p && s.again) {
			/* a key repeated: once more, from a new epoch, with
			 * the log that lets it forget the earlier value */
			relay__match_begin(m, m->now);
			m->logging = true;
			m->node_seen[0] = m->epoch;
			p = scan_object(&s, o, 0, 1);
		}
	} else {
		p = skip_value(&s, p, 1);
	}
	if (!p)
		return s.oom ? RELAY_ENOMEM : RELAY_EPARSE;
	p = ws(&s, p);
	if (p != s.end) {
		fail(&s, p, "trailing data");
		return RELAY_EPARSE;
	}
	if (!object) {
		snprintf(m->errstr, sizeof(m->errstr), "not a JSON object");
		return RELAY_ETYPE;
	}
	return 0;
}
