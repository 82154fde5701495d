/*
 * ops.c - value tests of the EventBridge-style operators (doc/patterns.md
 * section 3b): case-insensitive compare, wildcard, IP addresses and CIDR.
 * Shared by the reference evaluator (match.c) and the ruleset matcher
 * (matcher.c), so both paths answer alike by construction. None of them
 * allocates.
 */
#include <string.h>

#include "pattern_int.h"

/*
 * One pattern element at @w: returns its byte and sets *adv to the
 * pattern bytes it takes (2 for an escape). The compiler accepted only
 * "\*" and "\\" as escapes and no "**".
 */
static unsigned char wchar(const char *w, size_t wlen, size_t i, size_t *adv)
{
	if (w[i] == '\\' && i + 1 < wlen) {
		*adv = 2;
		return (unsigned char)w[i + 1];
	}
	*adv = 1;
	return (unsigned char)w[i];
}

/*
 * Greedy matching with one resume point: a star first matches nothing;
 * on a mismatch the last star takes one more byte and matching resumes
 * after it. Earlier stars never need to move again (a later star can
 * absorb anything they would), so the work is at most len(s) x len(w).
 */
bool relay__wild_match(const char *w, size_t wlen, const char *s, size_t len,
		       uint64_t *steps)
{
	size_t wi = 0, si = 0, star_w = (size_t)-1, star_s = 0, adv;
	uint64_t n = 0;
	bool ok;

	for (;;) {
		n++;
		if (wi < wlen && w[wi] == '*') {
			star_w = ++wi;
			star_s = si;
			continue;
		}
		if (wi < wlen && si < len &&
		    wchar(w, wlen, wi, &adv) == (unsigned char)s[si]) {
			wi += adv;
			si++;
			continue;
		}
		if (wi == wlen && si == len) {
			ok = true;
			break;
		}
		if (star_w == (size_t)-1 || star_s >= len) {
			ok = false;
			break;
		}
		/* the last star takes one more byte */
		wi = star_w;
		si = ++star_s;
	}
	if (steps)
		*steps += n;
	return ok;
}

bool relay__wild_split(const char *w, size_t wlen, size_t *pre, size_t *suf)
{
	size_t i = 0, first = wlen, last_end = 0;

	while (i < wlen) {
		if (w[i] == '*' || (w[i] == '\\' && i + 1 < wlen)) {
			if (first == wlen)
				first = i;
			i += w[i] == '*' ? 1 : 2;
			last_end = i;
		} else {
			i++;
		}
	}
	*pre = first;
	*suf = first == wlen ? 0 : wlen - last_end;
	return wlen - *pre - *suf == 1 && w[*pre] == '*';
}

/* memchr() without its call for the short spans a wildcard segment's
 * first byte is looked for in (event values), memchr() past 32 bytes. */
static inline const char *find_byte(const char *s, char c, size_t n)
{
	size_t i;

	if (n > 32)
		return memchr(s, c, n);
	for (i = 0; i < n; i++)
		if (s[i] == c)
			return s + i;
	return NULL;
}

bool relay__wild_stars(const char *w, size_t wlen, const char *s, size_t len,
		       uint64_t *steps)
{
	size_t wi = 1, si = 0, seg, k;
	uint64_t n = 0;
	const char *q, *st;
	bool ok = true;

	while (wi < wlen) {
		/* patterns are short: no call to find the next star */
		for (st = w + wi; st < w + wlen && *st != '*'; st++)
			;
		seg = (size_t)(st - w) - wi;
		if (!seg) {  /* "**" (the compiler refuses it) */
			wi++;
			continue;
		}
		/* the leftmost w[wi, wi + seg) in s[si, len) */
		for (;;) {
			n++;
			if (len - si < seg) {
				ok = false;
				goto out;
			}
			q = find_byte(s + si, w[wi], len - si - seg + 1);
			if (!q) {
				ok = false;
				goto out;
			}
			n += (uint64_t)(q - (s + si)) + seg;
			si = (size_t)(q - s);
			for (k = 1; k < seg && q[k] == w[wi + k]; k++)
				;
			if (k == seg)
				break;
			si++;
		}
		si += seg;
		wi += seg + 1;
	}
out:
	if (steps)
		*steps += n;
	return ok;
}

/* A decimal octet 0-255 without leading zeros; returns bytes used or 0. */
static size_t octet(const char *s, size_t len, unsigned *out)
{
	size_t i = 0;
	unsigned v = 0;

	while (i < len && i < 3 && s[i] >= '0' && s[i] <= '9')
		v = v * 10 + (unsigned)(s[i++] - '0');
	if (i == 0 || (i > 1 && s[0] == '0') || v > 255)
		return 0;
	if (i < len && s[i] >= '0' && s[i] <= '9')
		return 0;
	*out = v;
	return i;
}

static int ipv4_parse(const char *s, size_t len, unsigned char *ip)
{
	size_t at = 0, k, q;
	unsigned v;

	for (q = 0; q < 4; q++) {
		if (q) {
			if (at >= len || s[at] != '.')
				return -1;
			at++;
		}
		k = octet(s + at, len - at, &v);
		if (!k)
			return -1;
		ip[q] = (unsigned char)v;
		at += k;
	}
	return at == len ? 0 : -1;
}

static int hexdig(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int ipv6_parse(const char *s, size_t len, unsigned char *ip)
{
	unsigned char g[16];
	size_t at = 0, ng = 0, gap = (size_t)-1, k;
	int d;

	if (len < 2)
		return -1;
	if (s[0] == ':') {
		if (s[1] != ':')
			return -1;
		gap = 0;
		at = 2;
		if (at == len)
			goto fill;
	}
	for (;;) {
		unsigned v = 0;

		/* a dotted IPv4 tail in the last 32 bits */
		for (k = at; k < len && s[k] != ':' && s[k] != '.'; k++)
			;
		if (k < len && s[k] == '.') {
			if (ng > 12 || ipv4_parse(s + at, len - at, g + ng))
				return -1;
			ng += 4;
			break;
		}
		for (k = 0; k < 4 && at < len && (d = hexdig(s[at])) >= 0;
		     k++, at++)
			v = v * 16 + (unsigned)d;
		if (k == 0 || ng >= 16)
			return -1;
		if (at < len && hexdig(s[at]) >= 0)
			return -1;
		g[ng++] = (unsigned char)(v >> 8);
		g[ng++] = (unsigned char)v;
		if (at == len)
			break;
		if (s[at] != ':')
			return -1;
		at++;
		if (at < len && s[at] == ':') {
			if (gap != (size_t)-1)
				return -1;
			gap = ng;
			at++;
			if (at == len)
				break;
		} else if (at == len) {
			return -1;
		}
	}
fill:
	if (gap == (size_t)-1) {
		if (ng != 16)
			return -1;
		memcpy(ip, g, 16);
		return 0;
	}
	if (ng > 14)
		return -1; /* "::" stands for at least one group */
	memset(ip, 0, 16);
	memcpy(ip, g, gap);
	memcpy(ip + 16 - (ng - gap), g + gap, ng - gap);
	return 0;
}

int relay__ip_parse(const char *s, size_t len, unsigned char ip[16])
{
	if (len == 0 || len > 45)
		return 0;
	if (memchr(s, ':', len))
		return ipv6_parse(s, len, ip) == 0 ? 6 : 0;
	return ipv4_parse(s, len, ip) == 0 ? 4 : 0;
}

bool relay__cidr_has(const relay__pat_alt *a, int ver,
		     const unsigned char ip[16])
{
	unsigned full = a->bits / 8u, rest = a->bits % 8u;
	unsigned char mask;

	if (ver != a->ipver)
		return false;
	if (full && memcmp(ip, a->ip, full) != 0)
		return false;
	if (!rest)
		return true;
	mask = (unsigned char)(0xff00u >> rest);
	return (ip[full] & mask) == a->ip[full];
}
