/*
 * tzrule.c - POSIX TZ strings as found in the footer of TZif files
 * (RFC 8536 section 3.3, POSIX.1-2017 section 8.3 with the RFC's
 * extensions: hours up to 167 in rule times, negative rule times).
 *
 *	std offset [dst [offset] [,start[/time],end[/time]]]
 *
 * Offsets are written west-positive ("EST5"); they are stored here as
 * seconds east of UTC. A DST part without rules uses the US rules
 * M3.2.0,M11.1.0.
 */
#include <string.h>

#include "sched.h"

typedef struct cur {
	const char *p, *end;
} cur;

static bool at_end(const cur *c)
{
	return c->p >= c->end;
}

static int peek(const cur *c)
{
	return at_end(c) ? -1 : (unsigned char)*c->p;
}

static bool is_alpha(int ch)
{
	return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z');
}

static bool is_digit(int ch)
{
	return ch >= '0' && ch <= '9';
}

/* A zone abbreviation: <[A-Za-z0-9+-]{3,}> or [A-Za-z]{3,}. */
static bool parse_name(cur *c)
{
	const char *s = c->p;

	if (peek(c) == '<') {
		c->p++;
		s = c->p;
		while (!at_end(c) && *c->p != '>') {
			int ch = peek(c);

			if (!is_alpha(ch) && !is_digit(ch) && ch != '+' &&
			    ch != '-')
				return false;
			c->p++;
		}
		if (at_end(c) || c->p - s < 3)
			return false;
		c->p++;
		return true;
	}
	while (is_alpha(peek(c)))
		c->p++;
	return c->p - s >= 3;
}

static bool parse_num(cur *c, int max, int *out)
{
	int v = 0, n = 0;

	while (is_digit(peek(c)) && n < 4) {
		v = v * 10 + (*c->p - '0');
		c->p++;
		n++;
	}
	if (n == 0 || v > max)
		return false;
	*out = v;
	return true;
}

/* [+-]hh[:mm[:ss]] with hh <= @maxh; returns seconds, sign applied. */
static bool parse_hms(cur *c, int maxh, int32_t *out)
{
	int sign = 1, h, m = 0, s = 0;

	if (peek(c) == '+' || peek(c) == '-') {
		sign = *c->p == '-' ? -1 : 1;
		c->p++;
	}
	if (!parse_num(c, maxh, &h))
		return false;
	if (peek(c) == ':') {
		c->p++;
		if (!parse_num(c, 59, &m))
			return false;
		if (peek(c) == ':') {
			c->p++;
			if (!parse_num(c, 59, &s))
				return false;
		}
	}
	*out = sign * (h * 3600 + m * 60 + s);
	return true;
}

static bool parse_date(cur *c, relay__tzdate *d)
{
	d->time = 7200;
	if (peek(c) == 'J') {
		c->p++;
		d->kind = 'J';
		if (!parse_num(c, 365, &d->a) || d->a < 1)
			return false;
	} else if (peek(c) == 'M') {
		c->p++;
		d->kind = 'M';
		if (!parse_num(c, 12, &d->a) || d->a < 1 || peek(c) != '.')
			return false;
		c->p++;
		if (!parse_num(c, 5, &d->b) || d->b < 1 || peek(c) != '.')
			return false;
		c->p++;
		if (!parse_num(c, 6, &d->c))
			return false;
	} else {
		d->kind = 'n';
		if (!parse_num(c, 365, &d->a))
			return false;
	}
	if (peek(c) == '/') {
		c->p++;
		if (!parse_hms(c, 167, &d->time))
			return false;
	}
	return true;
}

int relay__tzrule_parse(relay__tzrule *r, const char *s, size_t len)
{
	cur c = { s, s + len };
	int32_t v;

	memset(r, 0, sizeof(*r));
	if (!parse_name(&c) || !parse_hms(&c, 24, &v))
		return RELAY_EPARSE;
	r->std_off = -v;
	if (at_end(&c))
		return 0;
	if (!parse_name(&c))
		return RELAY_EPARSE;
	r->has_dst = true;
	r->dst_off = r->std_off + 3600;
	if (!at_end(&c) && peek(&c) != ',') {
		if (!parse_hms(&c, 24, &v))
			return RELAY_EPARSE;
		r->dst_off = -v;
	}
	if (at_end(&c)) {
		r->start = (relay__tzdate){ 'M', 3, 2, 0, 7200 };
		r->end = (relay__tzdate){ 'M', 11, 1, 0, 7200 };
		return 0;
	}
	if (peek(&c) != ',')
		return RELAY_EPARSE;
	c.p++;
	if (!parse_date(&c, &r->start) || peek(&c) != ',')
		return RELAY_EPARSE;
	c.p++;
	if (!parse_date(&c, &r->end) || !at_end(&c))
		return RELAY_EPARSE;
	return 0;
}

/* The day number of rule date @d in year @y. */
static int64_t rule_day(const relay__tzdate *d, int64_t y)
{
	int64_t jan1 = relay__days_from_civil(y, 1, 1), first, day;
	int wd, dim;

	switch (d->kind) {
	case 'J':
		day = jan1 + d->a - 1;
		if (relay__leap_year(y) && d->a >= 60)
			day++;
		return day;
	case 'n':
		return jan1 + d->a;
	default:
		first = relay__days_from_civil(y, d->a, 1);
		wd = relay__weekday(first);
		dim = relay__days_in_month(y, d->a);
		day = (d->c - wd + 7) % 7 + (int64_t)(d->b - 1) * 7;
		while (day >= dim)
			day -= 7;
		return first + day;
	}
}

bool relay__tzrule_year(const relay__tzrule *r, int64_t y, int64_t *start,
			int64_t *end)
{
	if (!r->has_dst)
		return false;
	*start = rule_day(&r->start, y) * RELAY__SECS_PER_DAY +
		 r->start.time - r->std_off;
	*end = rule_day(&r->end, y) * RELAY__SECS_PER_DAY + r->end.time -
	       r->dst_off;
	return true;
}

int32_t relay__tzrule_offset(const relay__tzrule *r, int64_t t)
{
	int64_t y, start = 0, end = 0;
	int m, d;
	bool dst;

	if (!r->has_dst)
		return r->std_off;
	relay__civil_from_days(relay__floordiv(t + r->std_off,
					       RELAY__SECS_PER_DAY),
			       &y, &m, &d);
	relay__tzrule_year(r, y, &start, &end);
	if (start < end)
		dst = t >= start && t < end;
	else
		dst = !(t >= end && t < start);
	return dst ? r->dst_off : r->std_off;
}
