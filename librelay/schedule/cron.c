/*
 * cron.c - parsing cron expressions (see relay/schedule.h for the
 * language). Errors name the field and the 1-based character position.
 */
#include <string.h>
#include <strings.h>

#include "sched.h"

typedef struct field {
	const char *name;
	int lo, hi;
	const char *const *names; /* 3-letter names of lo.., or NULL */
} field;

static const char *const month_names[] = { "JAN", "FEB", "MAR", "APR",
	"MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC", NULL };
static const char *const day_names[] = { "SUN", "MON", "TUE", "WED", "THU",
	"FRI", "SAT", NULL };

static const field fields[5] = {
	{ "minute", 0, 59, NULL },
	{ "hour", 0, 23, NULL },
	{ "day-of-month", 1, 31, NULL },
	{ "month", 1, 12, month_names },
	{ "day-of-week", 0, 7, day_names },
};

static const struct {
	const char *name, *expr;
} macros[] = {
	{ "@yearly", "0 0 1 1 *" },  { "@annually", "0 0 1 1 *" },
	{ "@monthly", "0 0 1 * *" }, { "@weekly", "0 0 * * 0" },
	{ "@daily", "0 0 * * *" },   { "@midnight", "0 0 * * *" },
	{ "@hourly", "0 * * * *" },
};

typedef struct pctx {
	const char *expr;
	relay_error *err;
} pctx;

#define perr(x, at, ...)                                                  \
	relay__error_set((x)->err, RELAY_EPARSE, NULL, 0,                 \
			 (int)((at) - (x)->expr) + 1, __VA_ARGS__)

static bool blank(char ch)
{
	return ch == ' ' || ch == '\t';
}

static bool alpha(char ch)
{
	return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z');
}

static bool digit(char ch)
{
	return ch >= '0' && ch <= '9';
}

/* Why a character cannot appear here, for the usual non-standard forms. */
static int bad_char(pctx *x, const field *f, const char *p)
{
	switch (*p) {
	case '?':
		return perr(x, p, "%s field: '?' is not supported (use '*')",
			    f->name);
	case 'L':
	case 'l':
		return perr(x, p, "%s field: 'L' (last) is not supported",
			    f->name);
	case 'W':
	case 'w':
		return perr(x, p, "%s field: 'W' (nearest weekday) is not "
			    "supported", f->name);
	case '#':
		return perr(x, p, "%s field: '#' (nth weekday) is not "
			    "supported", f->name);
	case ',':
		return perr(x, p, "%s field: empty list item", f->name);
	case '\0':
	case ' ':
	case '\t':
		return perr(x, p, "%s field: value missing", f->name);
	default:
		return perr(x, p, "%s field: unexpected '%c'", f->name, *p);
	}
}

static int parse_value(pctx *x, const field *f, const char **pp, int *out)
{
	const char *p = *pp, *s = p;
	int v = 0, i;

	if (digit(*p)) {
		while (digit(*p)) {
			if (v < 1000)
				v = v * 10 + (*p - '0');
			p++;
		}
		if (v < f->lo || v > f->hi)
			return perr(x, s, "%s field: %.*s is out of range "
				    "%d-%d", f->name, (int)(p - s) > 9 ? 9 :
				    (int)(p - s), s, f->lo, f->hi);
		*out = v;
		*pp = p;
		return 0;
	}
	if (!alpha(*p))
		return bad_char(x, f, p);
	while (alpha(*p) || digit(*p))
		p++;
	if (f->names && p - s == 3)
		for (i = 0; f->names[i]; i++)
			if (!strncasecmp(s, f->names[i], 3)) {
				*out = f->lo + i;
				*pp = p;
				return 0;
			}
	if (p - s == 1 || (p - s == 2 && !strncasecmp(s, "LW", 2)))
		return bad_char(x, f, s);
	if (!f->names)
		return perr(x, s, "%s field: names like \"%.*s\" are only "
			    "allowed in the month and day-of-week fields",
			    f->name, (int)(p - s) > 12 ? 12 : (int)(p - s), s);
	return perr(x, s, "%s field: unknown name \"%.*s\" (use %s-%s)",
		    f->name, (int)(p - s) > 12 ? 12 : (int)(p - s), s,
		    f->names[0], f->names == month_names ? "DEC" : "SAT");
}

/* One field [s, e): sets *mask (bit per value) and *star. */
static int parse_field(pctx *x, const field *f, const char *s,
		       const char *e, uint64_t *mask, bool *star)
{
	const char *p = s;
	int rc;

	*mask = 0;
	*star = *s == '*';
	for (;;) {
		int lo, hi, step = 1, v;
		bool range = false;

		if (*p == '*') {
			lo = f->lo;
			hi = f->hi;
			range = true;
			p++;
		} else {
			const char *is = p;

			if ((rc = parse_value(x, f, &p, &lo)))
				return rc;
			hi = lo;
			if (*p == '-') {
				const char *r = ++p;

				if ((rc = parse_value(x, f, &p, &hi)))
					return rc;
				if (hi < lo)
					return perr(x, r, "%s field: reversed "
						    "range %.*s", f->name,
						    (int)(p - is) > 12 ? 12 :
						    (int)(p - is), is);
				range = true;
			}
		}
		if (*p == '/') {
			const char *n = ++p;

			if (!digit(*p))
				return perr(x, p, "%s field: step must be a "
					    "number", f->name);
			step = 0;
			while (digit(*p)) {
				if (step < 1000)
					step = step * 10 + (*p - '0');
				p++;
			}
			if (step == 0 || step > f->hi)
				return perr(x, n, "%s field: step %d is out of "
					    "range 1-%d", f->name, step,
					    f->hi);
			if (!range)
				hi = f->hi;
		}
		for (v = lo; v <= hi; v += step)
			*mask |= (uint64_t)1 << v;
		if (p == e)
			return 0;
		if (*p != ',')
			return bad_char(x, f, p);
		p++;
		if (p == e || *p == ',')
			return perr(x, p, "%s field: empty list item",
				    f->name);
	}
}

static int parse_fields(pctx *x, relay_cron *c, const char *p)
{
	const char *start[5], *end[5];
	uint64_t mask[5];
	bool star[5];
	int n = 0, i, rc;

	for (;;) {
		while (blank(*p))
			p++;
		if (!*p)
			break;
		if (n == 0 && *p != '@') {
			const char *q = p;

			while (*q && !blank(*q) && *q != '=')
				q++;
			if (*q == '=')
				return perr(x, p, "TZ= and CRON_TZ= prefixes "
					    "are not supported: set the "
					    "schedule's timezone instead");
		}
		if (n == 5) {
			int more = 1;
			const char *q = p;

			while (*q) {
				while (*q && !blank(*q))
					q++;
				while (blank(*q))
					q++;
				if (*q)
					more++;
			}
			return perr(x, p, "%d fields, expected 5 (minute "
				    "hour day-of-month month day-of-week); "
				    "seconds and year fields are not "
				    "supported", 5 + more);
		}
		start[n] = p;
		while (*p && !blank(*p))
			p++;
		end[n++] = p;
	}
	if (n < 5)
		return perr(x, p, "only %d field%s, expected 5 (minute hour "
			    "day-of-month month day-of-week)", n,
			    n == 1 ? "" : "s");
	for (i = 0; i < 5; i++) {
		const char *q;

		for (q = start[i]; q < end[i]; q++)
			if (*q == '=')
				return perr(x, q, "%s field: unexpected '='",
					    fields[i].name);
		rc = parse_field(x, &fields[i], start[i], end[i], &mask[i],
				 &star[i]);
		if (rc)
			return rc;
	}
	c->minute = mask[0];
	c->hour = (uint32_t)mask[1];
	c->dom = (uint32_t)mask[2];
	c->month = (uint16_t)mask[3];
	c->dow = (uint8_t)((mask[4] | mask[4] >> 7) & 0x7f); /* 7 = Sunday */
	c->dom_star = star[2];
	c->dow_star = star[4];
	c->wild = star[0] || star[1];
	return 0;
}

static int parse_expr(pctx *x, relay_cron *c)
{
	const char *p = x->expr, *s, *e;
	size_t i;

	while (blank(*p))
		p++;
	if (!*p)
		return perr(x, p, "empty cron expression");
	if (*p != '@')
		return parse_fields(x, c, p);
	s = p;
	while (*p && !blank(*p))
		p++;
	e = p;
	while (blank(*p))
		p++;
	if (!strncasecmp(s, "@every", 6) || !strncasecmp(s, "@reboot", 7))
		return perr(x, s, "%.*s is not supported: use a 5-field "
			    "expression or @hourly, @daily, @weekly, "
			    "@monthly, @yearly", (int)(e - s) > 8 ? 8 :
			    (int)(e - s), s);
	for (i = 0; i < RELAY__ARRAY_SIZE(macros); i++) {
		if (strlen(macros[i].name) != (size_t)(e - s) ||
		    strncasecmp(s, macros[i].name, (size_t)(e - s)))
			continue;
		if (*p)
			return perr(x, p, "unexpected text after %s",
				    macros[i].name);
		x->expr = macros[i].expr;
		return parse_fields(x, c, macros[i].expr);
	}
	return perr(x, s, "unknown macro \"%.*s\" (known: @hourly @daily "
		    "@midnight @weekly @monthly @yearly @annually)",
		    (int)(e - s) > 16 ? 16 : (int)(e - s), s);
}

int relay_cron_parse(relay_cron **out, const char *expr, const char *tz,
		     relay_error *err)
{
	relay_cron *c;
	pctx x = { expr, err };
	int rc;

	relay__error_clear(err);
	*out = NULL;
	if (!expr)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"no cron expression");
	if (!tz || !*tz)
		tz = "UTC";
	c = relay__calloc(1, sizeof(*c));
	if (!c)
		return relay__error_set(err, RELAY_ENOMEM, NULL, 0, 0,
					"out of memory");
	rc = parse_expr(&x, c);
	if (!rc) {
		c->tzname = relay__strdup(tz);
		rc = c->tzname ? relay__zone_load(&c->zone, tz, err)
			       : relay__error_set(err, RELAY_ENOMEM, NULL, 0,
						  0, "out of memory");
	}
	if (rc) {
		relay_cron_free(c);
		return rc;
	}
	*out = c;
	return 0;
}

void relay_cron_free(relay_cron *c)
{
	if (!c)
		return;
	relay__zone_clear(&c->zone);
	relay__free(c->tzname);
	relay__free(c);
}

const char *relay_cron_timezone(const relay_cron *c)
{
	return c->tzname;
}

int32_t relay_cron_utc_offset(const relay_cron *c, int64_t at_s)
{
	return relay__zone_offset(&c->zone, at_s);
}
