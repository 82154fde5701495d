/*
 * ptime.c - RFC3339 instants, now() expressions and JSON numbers.
 *
 * These three parsers sit on the match path (every temporal comparison
 * parses an event string; every numeric condition parses an event number),
 * so they are written to be exact first and cheap second: no locale, no
 * libc time functions, no allocation.
 */
#include <float.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>

#include "pattern_int.h"

/* The two decimal digits at s as 0..99, or 100 when either byte is not a
 * digit (every caller's range test then fails). */
static inline unsigned d2(const char *s)
{
	unsigned a = (unsigned char)s[0] - '0', b = (unsigned char)s[1] - '0';

	return a > 9 || b > 9 ? 100 : a * 10 + b;
}

/*
 * Fixed layout: YYYY-MM-DD T HH:MM:SS, then an optional fraction of one or
 * more digits, then Z or a numeric offset. Any number of fraction digits
 * is accepted; the first three give milliseconds and any nonzero digit
 * after them sets `sub` so that comparisons stay exact.
 *
 * The fixed part is read as two-digit groups whose validity is tested
 * once (d2() returns 100 or more for a non-digit): an event's timestamp is
 * parsed on the match path, and a test per digit was most of its cost.
 */
int relay__rfc3339_parse(const char *s, size_t len, relay__instant *out)
{
	unsigned yh, yl, mo, d, h, mi, sec, oh = 0, om = 0, bad;
	int ms = 0, sub = 0, sign = 0;
	size_t i;
	int64_t t;

	if (len < 20)
		return -1;
	yh = d2(s);
	yl = d2(s + 2);
	mo = d2(s + 5);
	d = d2(s + 8);
	h = d2(s + 11);
	mi = d2(s + 14);
	sec = d2(s + 17);
	bad = (yh > 99) | (yl > 99) | (mo - 1 > 11) | (d - 1 > 30) |
	      (h > 23) | (mi > 59) | (sec > 59) | (s[4] != '-') |
	      (s[7] != '-') | ((s[10] | 0x20) != 't') | (s[13] != ':') |
	      (s[16] != ':');
	if (bad)
		return -1;
	i = 19;
	if (s[i] == '.') {
		size_t start = ++i;

		while (i < len && s[i] >= '0' && s[i] <= '9') {
			if (i - start < 3)
				ms = ms * 10 + (s[i] - '0');
			else if (s[i] != '0')
				sub = 1;
			i++;
		}
		if (i == start)
			return -1;
		for (size_t k = i - start; k < 3; k++)
			ms *= 10;
	}
	if (i >= len)
		return -1;
	if (s[i] == 'Z' || s[i] == 'z') {
		i++;
	} else if (s[i] == '+' || s[i] == '-') {
		sign = s[i] == '-' ? -1 : 1;
		if (len - i < 6 || s[i + 3] != ':')
			return -1;
		oh = d2(s + i + 1);
		om = d2(s + i + 4);
		if (oh > 23 || om > 59)
			return -1;
		i += 6;
	} else {
		return -1;
	}
	if (i != len)
		return -1;
	if ((int)d > relay__days_in_month(yh * 100 + yl, (int)mo))
		return -1;
	t = relay__days_from_civil(yh * 100 + yl, (int)mo, (int)d) * 86400 +
	    h * 3600 + mi * 60 + sec;
	t -= sign * (int64_t)(oh * 3600 + om * 60);
	out->ms = t * 1000 + ms;
	out->sub = sub;
	return 0;
}

/* Durations are bounded so that now ± offset can never overflow. */
#define MAX_DURATION_PART 999999999LL

int relay__now_parse(const char *s, size_t len, int64_t *offset_ms)
{
	static const char units[3] = { 'h', 'm', 's' };
	static const int64_t unit_ms[3] = { 3600000, 60000, 1000 };
	int64_t total = 0;
	size_t i = 5;
	int u = 0, parts = 0, neg;

	if (len < 5 || memcmp(s, "now()", 5) != 0)
		return -1;
	if (len == 5) {
		*offset_ms = 0;
		return 0;
	}
	if (s[5] != '+' && s[5] != '-')
		return -1;
	neg = s[5] == '-';
	i = 6;
	while (i < len) {
		int64_t v = 0;
		size_t start = i;

		while (i < len && s[i] >= '0' && s[i] <= '9') {
			v = v * 10 + (s[i] - '0');
			if (v > MAX_DURATION_PART)
				return -1;
			i++;
		}
		if (i == start || i == len)
			return -1;
		while (u < 3 && units[u] != s[i])
			u++;
		if (u == 3)
			return -1;
		total += v * unit_ms[u];
		u++;
		i++;
		parts++;
	}
	if (!parts)
		return -1;
	*offset_ms = neg ? -total : total;
	return 0;
}

bool relay__instant_cmp(const relay__instant *t, int64_t cutoff,
			enum relay__pat_op op)
{
	switch (op) {
	case RELAY__OP_GT:
		return t->ms > cutoff || (t->ms == cutoff && t->sub);
	case RELAY__OP_GTE:
		return t->ms >= cutoff;
	case RELAY__OP_LT:
		return t->ms < cutoff;
	default:
		return t->ms < cutoff || (t->ms == cutoff && !t->sub);
	}
}

static const double pow10_exact[] = {
	1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

/*
 * Clinger's fast path: when the decimal mantissa is below 2^53 and the
 * power of ten is at most 22, both are exact doubles and one IEEE
 * multiplication or division rounds correctly. Everything else goes to
 * strtod on a NUL-terminated copy with the locale's decimal point (as
 * jansson does), so both match paths see the same value.
 */
double relay__json_number(const char *s, size_t len)
{
	uint64_t mant = 0;
	int ndig = 0, exp10 = 0, neg = 0, eneg = 0, e = 0;
	size_t i = 0;
	char stackbuf[256], *buf = stackbuf, *dst;
	const char *point;
	double v;

	if (i < len && s[i] == '-') {
		neg = 1;
		i++;
	}
	while (i < len && s[i] >= '0' && s[i] <= '9') {
		if (mant || s[i] != '0') {
			mant = mant * 10 + (uint64_t)(s[i] - '0');
			ndig++;
		}
		if (ndig > 15)
			goto slow;
		i++;
	}
	if (i < len && s[i] == '.') {
		i++;
		while (i < len && s[i] >= '0' && s[i] <= '9') {
			if (mant || s[i] != '0') {
				mant = mant * 10 + (uint64_t)(s[i] - '0');
				ndig++;
			}
			if (ndig > 15)
				goto slow;
			exp10--;
			i++;
		}
	}
	if (i < len && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < len && (s[i] == '+' || s[i] == '-'))
			eneg = s[i++] == '-';
		while (i < len && s[i] >= '0' && s[i] <= '9') {
			e = e * 10 + (s[i] - '0');
			if (e > 10000)
				goto slow;
			i++;
		}
		exp10 += eneg ? -e : e;
	}
	if (i != len)
		goto slow;
	v = (double)mant;
	if (mant == 0)
		return neg ? -0.0 : 0.0;
	if (exp10 < -22 || exp10 > 22)
		goto slow;
	v = exp10 < 0 ? v / pow10_exact[-exp10] : v * pow10_exact[exp10];
	return neg ? -v : v;
slow:
	if (len >= sizeof(stackbuf)) {
		/* absurdly long numbers only: not the steady state */
		buf = relay__malloc(len + 1);
		if (!buf)
			return 0.0;
	}
	memcpy(buf, s, len);
	buf[len] = '\0';
	point = localeconv()->decimal_point;
	if (point[0] != '.' && point[0] && !point[1]) {
		dst = strchr(buf, '.');
		if (dst)
			*dst = point[0];
	}
	v = strtod(buf, NULL);
	if (buf != stackbuf)
		relay__free(buf);
	return v;
}
