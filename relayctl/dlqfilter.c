/*
 * dlqfilter.c - parse the DLQ entry filters (dlqfilter.h) into a library
 * filter (relay_dlq_filter, relay/dlq.h), which matches.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlqfilter.h"
#include "fmt.h"

void dlqfilter_init(struct dlqfilter *f)
{
	memset(f, 0, sizeof(*f));
	relay_clock_fixed_init(&f->clock, 0);
}

void dlqfilter_free(struct dlqfilter *f)
{
	relay_dlq_filter_free(f->lib);
	dlqfilter_init(f);
}

int dlqfilter_id_valid(const char *id)
{
	return relay_dlq_id_valid(id);
}

int dlqfilter_parse_when(const char *s, int64_t now_ms, int64_t *ms)
{
	return relay_dlq_when_parse(s, now_ms, ms) ? -1 : 0;
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

static int oom(const char *name, char *err, size_t size)
{
	snprintf(err, size, "%s: out of memory", name);
	return -1;
}

/* The library filter, made on first use with the filter's clock. */
static int lib(struct dlqfilter *f, const char *name, char *err,
	       size_t size)
{
	if (f->lib)
		return 0;
	if (relay_dlq_filter_new(&f->lib))
		return oom(name, err, size);
	relay_dlq_filter_clock(f->lib, &f->clock.parent);
	return 0;
}

static int take_reason(struct dlqfilter *f, const char *v, char *err,
		       size_t size)
{
	relay_error e;
	int rc;

	if (once(f->reason_ere, "--reason", err, size))
		return -1;
	e.text[0] = '\0';
	rc = relay_dlq_filter_reason(f->lib, v, &e);
	if (rc == RELAY_ENOMEM)
		return oom("--reason", err, size);
	if (rc) {
		snprintf(err, size, "--reason: %s", e.text);
		return -1;
	}
	f->reason_ere = v;
	return 0;
}

static int take_time(struct dlqfilter *f, int until, const char *v,
		     char *err, size_t size)
{
	const char *name = until ? "--until" : "--since";
	const char **text = until ? &f->until_text : &f->since_text;
	int64_t *ms = until ? &f->until_ms : &f->since_ms, t;
	const char *when = v;
	char rfc[40];
	relay_error e;

	if (once(*text, name, err, size))
		return -1;
	/* Unix milliseconds, as match --now takes them: the library reads
	 * the same instant written in RFC 3339. */
	if (strspn(v, "0123456789") == strlen(v) && *v &&
	    relayctl_parse_when_ms(v, &t) == 0)
		when = relayctl_fmt_time(t, rfc, sizeof(rfc));
	e.text[0] = '\0';
	if ((until ? relay_dlq_filter_until : relay_dlq_filter_since)(
		    f->lib, when, &e) ||
	    dlqfilter_parse_when(when, f->clock.wall, ms)) {
		snprintf(err, size, "%s: %s", name, e.text);
		return -1;
	}
	*text = v;
	return 0;
}

/* One more id (--id, --original-id). */
static int take_id(struct dlqfilter *f, int orig, const char *v, char *err,
		   size_t size)
{
	const char *name = orig ? "--original-id" : "--id";
	int rc = orig ? relay_dlq_filter_original_id(f->lib, v)
		      : relay_dlq_filter_id(f->lib, v);

	if (rc == RELAY_ENOMEM)
		return oom(name, err, size);
	if (rc) {
		snprintf(err, size, "%s: \"%.60s\" is not a stream entry id "
			 "(MS or MS-SEQ)", name, v);
		return -1;
	}
	if (orig)
		f->norig++;
	else
		f->nids++;
	return 0;
}

/* --malformed or --no-malformed, which take no value. Returns 1 taken,
 * 0 not one of them, -1 bad (@err). */
static int flag(struct dlqfilter *f, const char *arg, char *err,
		size_t size)
{
	static const char *const names[] = { "--malformed",
					     "--no-malformed" };
	size_t k, n = 0;

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
	if (lib(f, names[k], err, size))
		return -1;
	f->malformed = k == 0 ? 1 : -1;
	relay_dlq_filter_malformed(f->lib, k == 0 ? RELAY_DLQ_MALFORMED_ONLY
						  : RELAY_DLQ_MALFORMED_NONE);
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
	int m;

	if (!f->lib)
		relay_clock_fixed_init(&f->clock, now_ms);
	m = flag(f, argv[*i], err, size);
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
	if (lib(f, names[k], err, size))
		return -1;
	switch (k) {
	case 0:
	case 1:
		if (once(k ? f->handler : f->app, names[k], err, size))
			return -1;
		if ((k ? relay_dlq_filter_handler
		       : relay_dlq_filter_app)(f->lib, v))
			return oom(names[k], err, size);
		*(k ? &f->handler : &f->app) = v;
		return 1;
	case 2:
		return take_reason(f, v, err, size) ? -1 : 1;
	case 3:
	case 4:
		return take_time(f, k == 4, v, err, size) ? -1 : 1;
	default:
		return take_id(f, k == 6, v, err, size) ? -1 : 1;
	}
}

int dlqfilter_finish(struct dlqfilter *f, char *err, size_t size)
{
	if (f->since_text && f->until_text && f->since_ms > f->until_ms) {
		snprintf(err, size, "--since %.60s is later than --until "
			 "%.60s: no entry can match", f->since_text,
			 f->until_text);
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
	return lib(f, "filters", err, size);
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
