/*
 * dlq_filter.c - which DLQ entries a reader wants (relay/dlq.h,
 * relay_dlq_filter): the times and durations of --since/--until, the
 * builder, and the verdict on one entry. Pure: the only outside input is
 * the filter's clock, read for a duration ago. The iterator that applies
 * a filter to a DLQ over a backend is librelay/invops/dlq_iter.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "dlq_filter.h"

/* Durations and times beyond this (about 31,000 years) are refused. */
#define MAX_MS INT64_C(1000000000000000)

/* ---- times, durations, ids ------------------------------------------ */

/* @n digits at @s into *v. Returns 0 or -1. */
static int digits(const char *s, int n, int *v)
{
	int i;

	*v = 0;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		*v = *v * 10 + (s[i] - '0');
	}
	return 0;
}

/* "YYYY-MM-DD(T|t| )HH:MM:SS[.frac](Z|z|+HH:MM|-HH:MM)". */
int relay_dlq_time_parse(const char *s, relay_wall_ms *out)
{
	int y, mo, d, h, mi, sec, oh = 0, om = 0, frac = 0, scale = 1000;
	int sign = 0;
	const char *p;

	if (!s || strlen(s) < 20 || digits(s, 4, &y) || s[4] != '-' ||
	    digits(s + 5, 2, &mo) || s[7] != '-' || digits(s + 8, 2, &d) ||
	    (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
	    digits(s + 11, 2, &h) || s[13] != ':' || digits(s + 14, 2, &mi) ||
	    s[16] != ':' || digits(s + 17, 2, &sec))
		return RELAY_EPARSE;
	if (mo < 1 || mo > 12 || d < 1 || d > relay__days_in_month(y, mo) ||
	    h > 23 || mi > 59 || sec > 60)
		return RELAY_EPARSE;
	p = s + 19;
	if (*p == '.') {
		if (p[1] < '0' || p[1] > '9')
			return RELAY_EPARSE;
		for (p++; *p >= '0' && *p <= '9'; p++)
			if (scale > 1) {
				scale /= 10;
				frac += (*p - '0') * scale;
			}
	}
	if ((*p == 'Z' || *p == 'z') && p[1] == '\0') {
		sign = 0;
	} else if ((*p == '+' || *p == '-') && strlen(p) == 6 &&
		   !digits(p + 1, 2, &oh) && p[3] == ':' &&
		   !digits(p + 4, 2, &om) && oh <= 23 && om <= 59) {
		sign = *p == '+' ? 1 : -1;
	} else {
		return RELAY_EPARSE;
	}
	/* A leap second counts as the last second of its minute. */
	if (sec == 60)
		sec = 59;
	*out = ((relay__days_from_civil(y, mo, d) * 86400 + h * 3600 +
		 mi * 60 + sec - sign * (oh * 3600 + om * 60)) * 1000) + frac;
	return 0;
}

/* Digits of one 64-bit unsigned part; the end, or NULL. */
static const char *u64_part(const char *p, uint64_t *out)
{
	uint64_t v = 0;

	if (*p < '0' || *p > '9')
		return NULL;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned int dg = (unsigned int)(*p - '0');

		if (v > (UINT64_MAX - dg) / 10)
			return NULL;
		v = v * 10 + dg;
	}
	if (out)
		*out = v;
	return p;
}

int relay_dlq_id_valid(const char *id)
{
	const char *p = id ? u64_part(id, NULL) : NULL;

	if (!p)
		return 0;
	if (*p == '\0')
		return 1;
	if (*p != '-' || !(p = u64_part(p + 1, NULL)))
		return 0;
	return *p == '\0';
}

int relay_dlq_duration_parse(const char *s, int64_t *out)
{
	static const struct {
		const char *name;
		int64_t ms;
	} units[] = {
		{ "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 },
		{ "d", 86400000 }, { "w", 604800000 },
	};
	int64_t total = 0;

	if (!s || !*s)
		return RELAY_EPARSE;
	while (*s) {
		uint64_t n;
		const char *p = u64_part(s, &n);
		size_t i, len = 0;

		if (!p || n > (uint64_t)MAX_MS)
			return RELAY_EPARSE;
		for (i = 0; i < RELAY__ARRAY_SIZE(units); i++) {
			len = strlen(units[i].name);
			/* "ms" is tried before "m" and "s". */
			if (strncmp(p, units[i].name, len) == 0)
				break;
		}
		if (i == RELAY__ARRAY_SIZE(units))
			return RELAY_EPARSE;
		if ((int64_t)n > (MAX_MS - total) / units[i].ms)
			return RELAY_EPARSE;
		total += (int64_t)n * units[i].ms;
		s = p + len;
	}
	*out = total;
	return 0;
}

int relay_dlq_when_parse(const char *s, relay_wall_ms now,
			 relay_wall_ms *out)
{
	int64_t d;

	if (relay_dlq_time_parse(s, out) == 0)
		return *out > -MAX_MS && *out < MAX_MS ? 0 : RELAY_EPARSE;
	if (relay_dlq_duration_parse(s, &d) == 0) {
		*out = now - d;
		return 0;
	}
	return RELAY_EPARSE;
}

/* ---- the builder ---------------------------------------------------- */

int relay_dlq_filter_new(relay_dlq_filter **out)
{
	relay_dlq_filter *f = relay__calloc(1, sizeof(*f));

	*out = f;
	return f ? 0 : RELAY_ENOMEM;
}

static void free_list(char **list, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		relay__free(list[i]);
	relay__free(list);
}

void relay_dlq_filter_free(relay_dlq_filter *f)
{
	if (!f)
		return;
	relay__free(f->app);
	relay__free(f->handler);
	if (f->reason_ere)
		regfree(&f->reason);
	relay__free(f->reason_ere);
	free_list(f->ids, f->nids);
	free_list(f->orig_ids, f->norig);
	relay__free(f);
}

void relay_dlq_filter_clock(relay_dlq_filter *f, const relay_clock *clock)
{
	f->clock = clock;
}

static int set_name(char **slot, const char *name)
{
	if (*slot || !name || !*name)
		return RELAY_EINVAL;
	*slot = relay__strdup(name);
	return *slot ? 0 : RELAY_ENOMEM;
}

int relay_dlq_filter_app(relay_dlq_filter *f, const char *name)
{
	return set_name(&f->app, name);
}

int relay_dlq_filter_handler(relay_dlq_filter *f, const char *name)
{
	return set_name(&f->handler, name);
}

int relay_dlq_filter_reason(relay_dlq_filter *f, const char *ere,
			    relay_error *err)
{
	char why[200];
	int rc;

	if (f->reason_ere || !ere || !*ere)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"reason: %s", f->reason_ere
					? "already set" : "empty");
	rc = regcomp(&f->reason, ere, REG_EXTENDED | REG_NOSUB);
	if (rc) {
		regerror(rc, &f->reason, why, sizeof(why));
		regfree(&f->reason);
		return relay__error_set(err, RELAY_EPARSE, NULL, 0, 0,
					"not a POSIX extended regular "
					"expression: %s", why);
	}
	f->reason_ere = relay__strdup(ere);
	if (!f->reason_ere) {
		regfree(&f->reason);
		return RELAY_ENOMEM;
	}
	return 0;
}

static int set_when(struct relay__dlq_when *w, const char *when,
		    relay_error *err)
{
	int64_t ms;

	if (w->kind || !when)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0, "%s",
					w->kind ? "already set" : "no time");
	if (relay_dlq_time_parse(when, &ms) == 0 && ms > -MAX_MS &&
	    ms < MAX_MS) {
		w->kind = 1;
	} else if (relay_dlq_duration_parse(when, &ms) == 0) {
		w->kind = 2;
	} else {
		return relay__error_set(err, RELAY_EPARSE, NULL, 0, 0,
					"\"%.60s\" is neither an RFC 3339 time "
					"(2026-01-31T12:00:00Z) nor a duration "
					"ago (2h, 30m, 1d12h)", when);
	}
	w->ms = ms;
	return 0;
}

int relay_dlq_filter_since(relay_dlq_filter *f, const char *when,
			   relay_error *err)
{
	return set_when(&f->since, when, err);
}

int relay_dlq_filter_until(relay_dlq_filter *f, const char *when,
			   relay_error *err)
{
	return set_when(&f->until, when, err);
}

static int add_id(char ***list, size_t *n, const char *id)
{
	char **l, *c;

	if (!relay_dlq_id_valid(id))
		return RELAY_EINVAL;
	c = relay__strdup(id);
	l = c ? relay__realloc(*list, (*n + 1) * sizeof(*l)) : NULL;
	if (!l) {
		relay__free(c);
		return RELAY_ENOMEM;
	}
	l[(*n)++] = c;
	*list = l;
	return 0;
}

int relay_dlq_filter_id(relay_dlq_filter *f, const char *id)
{
	return add_id(&f->ids, &f->nids, id);
}

int relay_dlq_filter_original_id(relay_dlq_filter *f, const char *id)
{
	return add_id(&f->orig_ids, &f->norig, id);
}

void relay_dlq_filter_malformed(relay_dlq_filter *f,
				relay_dlq_malformed_mode mode)
{
	f->malformed = mode;
}

void relay_dlq_filter_limit(relay_dlq_filter *f, uint64_t n)
{
	f->limit = n;
}

int relay_dlq_filter_on_fields(const relay_dlq_filter *f)
{
	return f->app || f->handler || f->reason_ere || f->norig;
}

static relay_wall_ms now_of(const relay_dlq_filter *f)
{
	return relay_clock_wall_ms(f->clock ? f->clock : relay_clock_system());
}

void relay__dlq_filter_window(const relay_dlq_filter *f, relay_wall_ms now,
			      int64_t *lo, int64_t *hi)
{
	*lo = f->since.kind == 1 ? f->since.ms
	      : f->since.kind == 2 ? now - f->since.ms : INT64_MIN;
	*hi = f->until.kind == 1 ? f->until.ms
	      : f->until.kind == 2 ? now - f->until.ms : INT64_MAX;
}

int relay_dlq_filter_check(const relay_dlq_filter *f, relay_error *err)
{
	int64_t lo, hi;

	relay__dlq_filter_window(f, now_of(f), &lo, &hi);
	if (lo > hi)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"since is later than until: no entry "
					"can match");
	if (f->malformed == RELAY_DLQ_MALFORMED_ONLY &&
	    relay_dlq_filter_on_fields(f))
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"only malformed entries, with a filter "
					"on fields a malformed entry does not "
					"have");
	return 0;
}

/* ---- verdicts ------------------------------------------------------- */

/* The ms part of a stream entry id, or -1. */
static int64_t id_ms(const char *id)
{
	uint64_t v;

	if (!u64_part(id, &v) || v > (uint64_t)MAX_MS)
		return -1;
	return (int64_t)v;
}

/* Whether @id is one of the @n @ids (any id when there are none). */
static int id_listed(char *const *ids, size_t n, const char *id)
{
	size_t i;

	if (!n)
		return 1;
	for (i = 0; i < n; i++) {
		/* "5" names the entry "5-0", as XRANGE reads it. */
		size_t len = strlen(ids[i]);

		if (strcmp(ids[i], id) == 0 ||
		    (!strchr(ids[i], '-') && strncmp(ids[i], id, len) == 0 &&
		     strcmp(id + len, "-0") == 0))
			return 1;
	}
	return 0;
}

relay_dlq_verdict relay__dlq_filter_malformed_at(const relay_dlq_filter *f,
						 const char *id, int64_t lo,
						 int64_t hi)
{
	int64_t ms;

	if (f->malformed == RELAY_DLQ_MALFORMED_NONE ||
	    !id_listed(f->ids, f->nids, id))
		return RELAY_DLQ_NO;
	ms = id_ms(id);
	if (ms < lo || ms > hi)
		return RELAY_DLQ_NO;
	return relay_dlq_filter_on_fields(f) ? RELAY_DLQ_UNDECIDED
					     : RELAY_DLQ_MATCH;
}

relay_dlq_verdict relay__dlq_filter_match_at(const relay_dlq_filter *f,
					     const relay_dlq_record *r,
					     int64_t lo, int64_t hi)
{
	const relay_dlq_entry *e = &r->e;
	int64_t ms;

	if (f->malformed == RELAY_DLQ_MALFORMED_ONLY)
		return RELAY_DLQ_NO;
	if (f->app && strcmp(e->app, f->app) != 0)
		return RELAY_DLQ_NO;
	if (f->handler && strcmp(e->handler, f->handler) != 0)
		return RELAY_DLQ_NO;
	if (!id_listed(f->ids, f->nids, r->id) ||
	    !id_listed(f->orig_ids, f->norig, e->original_id))
		return RELAY_DLQ_NO;
	if (lo != INT64_MIN || hi != INT64_MAX) {
		/* The timestamp field; its id's time if that is unreadable. */
		if (relay_dlq_time_parse(e->timestamp, &ms))
			ms = id_ms(r->id);
		if (ms < lo || ms > hi)
			return RELAY_DLQ_NO;
	}
	if (f->reason_ere && regexec(&f->reason, e->reason, 0, NULL, 0) != 0)
		return RELAY_DLQ_NO;
	return RELAY_DLQ_MATCH;
}

relay_dlq_verdict relay_dlq_filter_match(const relay_dlq_filter *f,
					 const relay_dlq_record *r)
{
	int64_t lo, hi;

	relay__dlq_filter_window(f, now_of(f), &lo, &hi);
	return relay__dlq_filter_match_at(f, r, lo, hi);
}

relay_dlq_verdict relay_dlq_filter_match_malformed(const relay_dlq_filter *f,
						   const char *id)
{
	int64_t lo, hi;

	relay__dlq_filter_window(f, now_of(f), &lo, &hi);
	return relay__dlq_filter_malformed_at(f, id, lo, hi);
}

/* "MS" as the XRANGE bound "MS-0"; else as given. */
static void bound(const char *id, char *out, size_t size)
{
	snprintf(out, size, "%s%s", id, strchr(id, '-') ? "" : "-0");
}

/* Compare two valid ids ("MS" is "MS-0"). */
static int id_cmp(const char *a, const char *b)
{
	uint64_t am = 0, as = 0, bm = 0, bs = 0;
	const char *p = u64_part(a, &am), *q = u64_part(b, &bm);

	if (*p == '-')
		u64_part(p + 1, &as);
	if (*q == '-')
		u64_part(q + 1, &bs);
	if (am != bm)
		return am < bm ? -1 : 1;
	return as < bs ? -1 : as > bs;
}

void relay__dlq_filter_id_bounds(const relay_dlq_filter *f, char *lo,
				 char *hi, size_t size)
{
	size_t i, min = 0, max = 0;

	if (!f || !f->nids) {
		snprintf(lo, size, "-");
		snprintf(hi, size, "+");
		return;
	}
	for (i = 1; i < f->nids; i++) {
		if (id_cmp(f->ids[i], f->ids[min]) < 0)
			min = i;
		if (id_cmp(f->ids[i], f->ids[max]) > 0)
			max = i;
	}
	bound(f->ids[min], lo, size);
	bound(f->ids[max], hi, size);
}
