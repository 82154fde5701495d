/*
 * dlqfilter.c - parse and apply the DLQ entry filters (dlqfilter.h).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlqfilter.h"
#include "fmt.h"

/* Durations and times beyond this (about 31,000 years) are refused. */
#define MAX_MS INT64_C(1000000000000000)

void dlqfilter_init(struct dlqfilter *f)
{
	memset(f, 0, sizeof(*f));
}

void dlqfilter_free(struct dlqfilter *f)
{
	if (f->reason_ere)
		regfree(&f->reason);
	free(f->ids);
	free(f->orig_ids);
	dlqfilter_init(f);
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

int dlqfilter_id_valid(const char *id)
{
	const char *p = u64_part(id, NULL);

	if (!p)
		return 0;
	if (*p == '\0')
		return 1;
	if (*p != '-' || !(p = u64_part(p + 1, NULL)))
		return 0;
	return *p == '\0';
}

/* "2h", "1h30m", "500ms", ... into ms. Returns 0 or -1. */
static int parse_duration(const char *s, int64_t *ms)
{
	static const struct {
		const char *name;
		int64_t ms;
	} units[] = {
		{ "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 },
		{ "d", 86400000 }, { "w", 604800000 },
	};
	int64_t total = 0;

	if (!*s)
		return -1;
	while (*s) {
		uint64_t n;
		const char *p = u64_part(s, &n);
		size_t i, len;

		if (!p || n > (uint64_t)MAX_MS)
			return -1;
		for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
			len = strlen(units[i].name);
			/* "ms" is tried before "m" and "s". */
			if (strncmp(p, units[i].name, len) == 0)
				break;
		}
		if (i == sizeof(units) / sizeof(units[0]))
			return -1;
		if ((int64_t)n > (MAX_MS - total) / units[i].ms)
			return -1;
		total += (int64_t)n * units[i].ms;
		s = p + strlen(units[i].name);
	}
	*ms = total;
	return 0;
}

int dlqfilter_parse_when(const char *s, int64_t now_ms, int64_t *ms)
{
	int64_t d;

	if (relayctl_parse_time(s, ms) == 0)
		return *ms > -MAX_MS && *ms < MAX_MS ? 0 : -1;
	if (parse_duration(s, &d) == 0) {
		*ms = now_ms - d;
		return 0;
	}
	return -1;
}

/*
 * argv[*i] as "--NAME VALUE" or "--NAME=VALUE": 1 and *value, 0 when it
 * is another argument, -1 when the value is missing.
 */
static int opt(int argc, char **argv, int *i, const char *name,
	       const char **value)
{
	size_t n = strlen(name);

	if (strncmp(argv[*i], name, n) != 0)
		return 0;
	if (argv[*i][n] == '=') {
		*value = argv[*i] + n + 1;
		return 1;
	}
	if (argv[*i][n] != '\0')
		return 0;
	if (*i + 1 >= argc)
		return -1;
	*value = argv[++*i];
	return 1;
}

static int once(const char *cur, const char *name, char *err, size_t size)
{
	if (!cur)
		return 0;
	snprintf(err, size, "%s: given twice (filters combine with AND; "
		 "only --id and --original-id repeat)", name);
	return -1;
}

static int take_reason(struct dlqfilter *f, const char *v, char *err,
		       size_t size)
{
	char why[200];
	int rc;

	if (once(f->reason_ere, "--reason", err, size))
		return -1;
	rc = regcomp(&f->reason, v, REG_EXTENDED | REG_NOSUB);
	if (rc) {
		regerror(rc, &f->reason, why, sizeof(why));
		regfree(&f->reason);
		snprintf(err, size, "--reason: not a POSIX extended regular "
			 "expression: %s", why);
		return -1;
	}
	f->reason_ere = v;
	return 0;
}

static int take_time(const char **text, int64_t *ms, const char *name,
		     const char *v, int64_t now_ms, char *err, size_t size)
{
	if (once(*text, name, err, size))
		return -1;
	if (dlqfilter_parse_when(v, now_ms, ms)) {
		snprintf(err, size, "%s: \"%.60s\" is neither an RFC 3339 time "
			 "(2026-01-31T12:00:00Z) nor a duration ago (2h, "
			 "30m, 1d12h)", name, v);
		return -1;
	}
	*text = v;
	return 0;
}

/* One more id in the list *@list of *@n (--id, --original-id). */
static int take_id(const char ***list, size_t *n, const char *name,
		   const char *v, char *err, size_t size)
{
	const char **ids;

	if (!dlqfilter_id_valid(v)) {
		snprintf(err, size, "%s: \"%.60s\" is not a stream entry id "
			 "(MS or MS-SEQ)", name, v);
		return -1;
	}
	ids = realloc(*list, (*n + 1) * sizeof(*ids));
	if (!ids) {
		snprintf(err, size, "%s: out of memory", name);
		return -1;
	}
	ids[(*n)++] = v;
	*list = ids;
	return 0;
}

/* --malformed or --no-malformed, which take no value. Returns 1 taken,
 * 0 not one of them, -1 bad (@err). */
static int flag(struct dlqfilter *f, const char *arg, char *err,
		size_t size)
{
	static const char *const names[] = { "--malformed",
					     "--no-malformed" };
	size_t k, n;

	for (k = 0; k < 2; k++) {
		n = strlen(names[k]);
		if (strncmp(arg, names[k], n) == 0 &&
		    (arg[n] == '\0' || arg[n] == '='))
			break;
	}
	if (k == 2)
		return 0;
	if (arg[n] == '=') {
		snprintf(err, size, "%s takes no value", names[k]);
		return -1;
	}
	if (f->malformed) {
		snprintf(err, size, "%s: given with %s already", names[k],
			 f->malformed > 0 ? names[0] : names[1]);
		return -1;
	}
	f->malformed = k == 0 ? 1 : -1;
	return 1;
}

int dlqfilter_arg(struct dlqfilter *f, int argc, char **argv, int *i,
		  int64_t now_ms, char *err, size_t size)
{
	static const char *const names[] = { "--app", "--handler", "--reason",
					     "--since", "--until", "--id",
					     "--original-id" };
	const char *v = NULL;
	size_t k;
	int m = flag(f, argv[*i], err, size);

	if (m)
		return m;
	for (k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
		m = opt(argc, argv, i, names[k], &v);
		if (m)
			break;
	}
	if (m == 0)
		return 0;
	if (m < 0 || !*v) {
		snprintf(err, size, "%s needs a%s value", names[k],
			 m < 0 ? "" : " non-empty");
		return -1;
	}
	switch (k) {
	case 0:
		if (once(f->app, "--app", err, size))
			return -1;
		f->app = v;
		return 1;
	case 1:
		if (once(f->handler, "--handler", err, size))
			return -1;
		f->handler = v;
		return 1;
	case 2:
		return take_reason(f, v, err, size) ? -1 : 1;
	case 3:
		return take_time(&f->since_text, &f->since_ms, "--since", v,
				 now_ms, err, size) ? -1 : 1;
	case 4:
		return take_time(&f->until_text, &f->until_ms, "--until", v,
				 now_ms, err, size) ? -1 : 1;
	case 5:
		return take_id(&f->ids, &f->nids, "--id", v, err,
			       size) ? -1 : 1;
	default:
		return take_id(&f->orig_ids, &f->norig, "--original-id", v,
			       err, size) ? -1 : 1;
	}
}

int dlqfilter_finish(const struct dlqfilter *f, char *err, size_t size)
{
	if (f->since_text && f->until_text && f->since_ms > f->until_ms) {
		snprintf(err, size, "--since %.60s is later than --until "
			 "%.60s: no entry can match", f->since_text, f->until_text);
		return -1;
	}
	if (f->malformed > 0 && dlqfilter_on_fields(f)) {
		/* A malformed entry has no fields to test. */
		snprintf(err, size, "--malformed cannot be combined with %s "
			 "(a malformed entry's fields cannot be read; --id, "
			 "--since and --until can)",
			 f->app ? "--app" : f->handler ? "--handler"
			 : f->reason_ere ? "--reason" : "--original-id");
		return -1;
	}
	return 0;
}

int dlqfilter_active(const struct dlqfilter *f)
{
	return dlqfilter_on_fields(f) || f->since_text || f->until_text ||
	       f->nids || f->malformed;
}

int dlqfilter_on_fields(const struct dlqfilter *f)
{
	return f->app || f->handler || f->reason_ere || f->norig;
}

/* The ms part of a stream entry id, or -1. */
static int64_t id_ms(const char *id)
{
	uint64_t v;

	if (!u64_part(id, &v) || v > (uint64_t)MAX_MS)
		return -1;
	return (int64_t)v;
}

static int in_range(const struct dlqfilter *f, int64_t ms)
{
	if (f->since_text && ms < f->since_ms)
		return 0;
	if (f->until_text && ms > f->until_ms)
		return 0;
	return 1;
}

/* Whether @id is one of the @n @ids (any id when there are none). */
static int id_listed(const char *const *ids, size_t n, const char *id)
{
	size_t i;

	if (!n)
		return 1;
	for (i = 0; i < n; i++) {
		/* "5" names the entry "5-0", as XRANGE reads it. */
		size_t len = strlen(ids[i]);

		if (strcmp(ids[i], id) == 0 ||
		    (!strchr(ids[i], '-') && strncmp(ids[i], id, len) == 0
		     && strcmp(id + len, "-0") == 0))
			return 1;
	}
	return 0;
}

int dlqfilter_match_id(const struct dlqfilter *f, const char *id)
{
	if (f->malformed < 0 || !id_listed(f->ids, f->nids, id))
		return 0;
	if (f->since_text || f->until_text)
		return in_range(f, id_ms(id));
	return 1;
}

int dlqfilter_match(const struct dlqfilter *f, const relay_dlq_record *r)
{
	const relay_dlq_entry *e = &r->e;
	int64_t ms;

	if (f->malformed > 0)
		return 0;
	if (f->app && strcmp(e->app, f->app) != 0)
		return 0;
	if (f->handler && strcmp(e->handler, f->handler) != 0)
		return 0;
	if (!id_listed(f->ids, f->nids, r->id))
		return 0;
	if (!id_listed(f->orig_ids, f->norig, e->original_id))
		return 0;
	if (f->since_text || f->until_text) {
		/* The timestamp field; its id's time if that is unreadable. */
		if (relayctl_parse_time(e->timestamp, &ms))
			ms = id_ms(r->id);
		if (!in_range(f, ms))
			return 0;
	}
	if (f->reason_ere && regexec(&f->reason, e->reason, 0, NULL, 0) != 0)
		return 0;
	return 1;
}
