/*
 * dlqcli.c - shared parts of the relayctl dlq subcommands.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "relay/engine.h"

#include "cmdutil.h"
#include "dlqcli.h"
#include "fmt.h"
#include "relayctl.h"

static int parse_limit(const char *s, long long *v)
{
	char *end;

	if (!*s || *s == '-')
		return -1;
	*v = strtoll(s, &end, 10);
	return *end || *v <= 0 ? -1 : 0;
}

/* --limit N, --rate N. Returns 1 taken, 0 not it, -1 usage error. */
static int number_opt(struct dlqcli *d, int argc, char **argv, int *i,
		      unsigned flags)
{
	const char *v;
	long long n;
	int m = 0;

	if (flags & DLQCLI_LIMIT) {
		m = relayctl_opt_value(argc, argv, i, "--limit", d->cmd, &v);
		if (m > 0 && parse_limit(v, &d->limit)) {
			relayctl_error(RELAYCTL_USAGE, "%s: --limit takes a "
				       "positive number, got \"%s\"", d->cmd,
				       relayctl_c(v));
			return -1;
		}
		if (m)
			return m;
	}
	if (flags & DLQCLI_BULK) {
		m = relayctl_opt_value(argc, argv, i, "--rate", d->cmd, &v);
		if (m > 0 && (parse_limit(v, &n) || n > DLQCLI_RATE_MAX)) {
			relayctl_error(RELAYCTL_USAGE, "%s: --rate takes a "
				       "number of entries per second from 1 to "
				       "%d, got \"%s\"", d->cmd,
				       DLQCLI_RATE_MAX, relayctl_c(v));
			return -1;
		}
		if (m > 0)
			d->rate = (long)n;
	}
	return m;
}

static int flag_opt(struct dlqcli *d, const char *arg, unsigned flags)
{
	if ((flags & DLQCLI_ALL) && strcmp(arg, "--all") == 0)
		d->all = 1;
	else if ((flags & DLQCLI_BULK) && strcmp(arg, "--dry-run") == 0)
		d->dry_run = 1;
	else if ((flags & DLQCLI_BULK) && strcmp(arg, "--yes") == 0)
		d->yes = 1;
	else if ((flags & DLQCLI_REDRIVE) && strcmp(arg, "--redrive") == 0)
		d->redrive = 1;
	else if ((flags & DLQCLI_ORDER) && strcmp(arg, "--newest-first") == 0)
		d->newest_first = 1;
	else
		return 0;
	return 1;
}

/* What depends on several options. Returns 0 or RELAYCTL_USAGE. */
static int parse_check(struct dlqcli *d, unsigned flags)
{
	char err[300];
	int filtered = dlqfilter_active(&d->filter);

	if (dlqfilter_finish(&d->filter, err, sizeof(err)))
		return relayctl_error(RELAYCTL_USAGE, "%s: %s", d->cmd, err);
	/* --limit is the iterator's: matches count, undecided entries
	 * (malformed, under a filter on fields) do not. */
	relay_dlq_filter_limit(d->filter.lib, (uint64_t)d->limit);
	if (!(flags & DLQCLI_ALL))
		return 0;
	d->bulk = d->all || filtered;
	if (d->bulk && d->id)
		return relayctl_error(RELAYCTL_USAGE, "%s: give an ID, or "
				      "--all or filters, not both", d->cmd);
	if ((flags & DLQCLI_ID) && !d->id && !d->bulk)
		return relayctl_error(RELAYCTL_USAGE, "%s: ID is required (or "
				      "--all, or filters such as --app NAME)",
				      d->cmd);
	if (!d->bulk && (d->dry_run || d->yes || d->rate || d->limit))
		return relayctl_error(RELAYCTL_USAGE, "%s: --dry-run, --yes, "
				      "--rate and --limit go with --all or "
				      "filters", d->cmd);
	if (d->bulk && !d->dry_run && !d->yes && !isatty(STDIN_FILENO))
		return relayctl_error(RELAYCTL_USAGE, "%s: standard input is "
				      "not a terminal: give --yes to act on "
				      "every matching entry (--dry-run shows "
				      "them first)", d->cmd);
	return 0;
}

int dlqcli_parse(struct dlqcli *d, const char *cmd, int argc, char **argv,
		 unsigned flags, void (*usage)(FILE *f))
{
	int64_t now = relayctl_now_ms();
	char err[300];
	int i;

	memset(d, 0, sizeof(*d));
	d->cmd = cmd;
	dlqfilter_init(&d->filter);
	relayctl_conf_init(&d->conf);
	for (i = 1; i < argc; i++) {
		int m = relayctl_conf_arg(&d->conf, argc, argv, &i, cmd,
					  flags & DLQCLI_JSON, usage);

		if (m == RELAYCTL_ARG_HELP) {
			dlqfilter_free(&d->filter);
			return -1;
		}
		if (m == RELAYCTL_ARG_BAD)
			goto usage_error;
		if (m == RELAYCTL_ARG_TAKEN)
			continue;
		if (flags & DLQCLI_FILTER) {
			m = dlqfilter_arg(&d->filter, argc, argv, &i, now, err,
					  sizeof(err));
			if (m < 0) {
				relayctl_error(RELAYCTL_USAGE, "%s: %s", cmd,
					       relayctl_c(err));
				goto usage_error;
			}
			if (m > 0)
				continue;
		}
		m = number_opt(d, argc, argv, &i, flags);
		if (m < 0)
			goto usage_error;
		if (m > 0 || flag_opt(d, argv[i], flags))
			continue;
		if (relayctl_positional(cmd, argv[i],
					flags & DLQCLI_ID ? &d->id : NULL))
			goto usage_error;
	}
	if (parse_check(d, flags) == 0)
		return 0;
usage_error:
	dlqfilter_free(&d->filter);
	usage(stderr);
	return RELAYCTL_USAGE;
}

int dlqcli_open(struct dlqcli *d)
{
	int rc = relayctl_redis_open(&d->conf, d->cmd, &d->b);

	relay_error err;
	size_t i;

	if (rc) {
		dlqcli_close(d);  /* the filter; closing again is harmless */
		return rc;
	}
	memset(&err, 0, sizeof(err));
	rc = relay_stream_list_parse(d->conf.stream, &d->streams, &d->nkeys,
				     &err);
	if (rc == RELAY_EINVAL) {
		dlqcli_close(d);
		return relayctl_error(RELAYCTL_USAGE, "%s: REDIS_STREAM "
				      "(--stream): invalid value \"%s\": %s",
				      d->cmd, d->conf.stream, err.text);
	}
	d->keys = rc ? NULL : calloc(d->nkeys, sizeof(*d->keys));
	for (i = 0; d->keys && i < d->nkeys; i++)
		if (!(d->keys[i] = relay_dlq_key(d->streams[i])))
			break;
	if (!d->keys || i < d->nkeys) {
		dlqcli_close(d);
		return relayctl_error(RELAYCTL_FAIL, "%s: out of memory",
				      d->cmd);
	}
	d->key = d->keys[0];
	d->stream = d->streams[0];
	return RELAYCTL_OK;
}

int dlqcli_start(struct dlqcli *d, const char *cmd, int argc, char **argv,
		 unsigned flags, void (*usage)(FILE *f))
{
	int rc = dlqcli_parse(d, cmd, argc, argv, flags, usage);

	return rc ? rc : dlqcli_open(d);
}

void dlqcli_close(struct dlqcli *d)
{
	size_t i;

	relay_redis_free(d->b);
	for (i = 0; d->keys && i < d->nkeys; i++)
		relay_free(d->keys[i]);
	free(d->keys);
	relay_stream_list_free(d->streams);
	dlqfilter_free(&d->filter);
	d->b = NULL;
	d->key = NULL;
	d->keys = NULL;
	d->streams = NULL;
	d->stream = NULL;
	d->nkeys = 0;
}

int dlqcli_store_error(const struct dlqcli *d, int rc,
		       const relay_error *err)
{
	if (rc == RELAY_EPARSE)
		return relayctl_error(RELAYCTL_FAIL, "%s: malformed %s", d->cmd,
				      err->text);
	return relayctl_error(RELAYCTL_FAIL, "%s: Redis: %s", d->cmd,
			      err->text[0] ? err->text : relay_strerror(rc));
}

const char *dlqcli_reason_short(const char *reason)
{
	static const char exhausted[] = "invocation exhausted: ";
	static const char attempts[] = " handler attempts: ";
	const char *q;

	if (strncmp(reason, exhausted, sizeof(exhausted) - 1) == 0 &&
	    (q = strstr(reason, attempts)))
		return q + sizeof(attempts) - 1;
	return reason;
}

int dlqcli_id_valid(const char *id)
{
	return dlqfilter_id_valid(id);
}

void dlqcli_page_free(struct dlqcli_page *p)
{
	size_t i;

	for (i = 0; p->bad && i < p->n; i++)
		free(p->bad[i]);
	free(p->bad);
	relay_dlq_records_free(p->recs, p->n);
	relay_redis_reply_free(p->raw);
	memset(p, 0, sizeof(*p));
}

/* The id of raw XRANGE element @e, or NULL when it has none. */
static const char *raw_id(const relay_redis_reply *e)
{
	if (e && e->type == RELAY_REDIS_REPLY_ARRAY && e->elements >= 1 &&
	    e->element[0]->type == RELAY_REDIS_REPLY_STRING)
		return e->element[0]->str;
	return NULL;
}

/*
 * XRANGE and relay_dlq_parse() per element, so that one entry nobody can
 * parse costs its own row and not the whole listing (the library's list
 * call refuses the page). Returns 0, or a relay code with @err set.
 */
static int page_read(struct dlqcli *d, const char *key, const char *start,
		     const char *end, size_t count, struct dlqcli_page *p,
		     relay_error *err)
{
	char scount[24];
	const char *argv[6] = { "XRANGE", key, start, end, "COUNT", scount };
	relay_redis_reply *r = NULL;
	size_t i;
	int rc;

	snprintf(scount, sizeof(scount), "%zu", count ? count : 1);
	rc = relay_redis_sync_command(d->b, &r, 6, argv, NULL);
	if (rc == 0)
		rc = relay_redis_reply_error(r);
	if (rc == 0 && r->type != RELAY_REDIS_REPLY_ARRAY)
		rc = RELAY_EPARSE;
	if (rc) {
		/* A lost or refused connection: the backend's reason
		 * (e.g. what the sentinels said), never the URI. */
		snprintf(err->text, sizeof(err->text), "XRANGE %s: %s", key,
			 r && r->str ? r->str
			 : *relay_redis_errstr(d->b) ? relay_redis_errstr(d->b)
			 : relay_strerror(rc));
		relay_redis_reply_free(r);
		return rc == RELAY_EPARSE ? RELAY_EBACKEND : rc;
	}
	p->raw = r;
	p->recs = calloc(r->elements ? r->elements : 1, sizeof(*p->recs));
	p->bad = calloc(r->elements ? r->elements : 1, sizeof(*p->bad));
	if (!p->recs || !p->bad)
		return RELAY_ENOMEM;
	for (i = 0; i < r->elements; i++) {
		relay_error perr;
		const char *id = raw_id(r->element[i]);

		perr.text[0] = '\0';
		p->n = i + 1;
		rc = relay_dlq_parse(&p->recs[i], r->element[i], &perr);
		if (rc == RELAY_EPARSE) {
			p->bad[i] = strdup(perr.text[0] ? perr.text
					   : "unreadable entry");
			p->recs[i].id = strdup(id ? id : "?");
			if (!p->bad[i] || !p->recs[i].id)
				return RELAY_ENOMEM;
		} else if (rc) {
			return rc;
		}
	}
	return 0;
}

int dlqcli_each(struct dlqcli *d, relay_dlq_order order, dlqcli_each_fn fn,
		void *payload)
{
	relay_dlq_iter *it;
	relay_dlq_item item;
	relay_error err;
	int rc = 0, r = 0;

	if (relay_dlq_iter_open(&it, d->b, (const char *const *)d->keys,
				d->nkeys, d->filter.lib, order))
		return relayctl_error(RELAYCTL_FAIL, "%s: out of memory",
				      d->cmd);
	err.text[0] = '\0';
	while (r == 0 && (rc = relay_dlq_iter_next(it, &item, &err)) == 1)
		r = fn(payload, &item);
	relay_dlq_iter_close(it);
	if (r < 0 || rc == RELAY_ENOMEM)
		return relayctl_error(RELAYCTL_FAIL, "%s: out of memory",
				      d->cmd);
	if (r == 0 && rc < 0)
		return dlqcli_store_error(d, rc == RELAY_EPARSE
					  ? RELAY_EBACKEND : rc, &err);
	return RELAYCTL_OK;
}

int dlqcli_page(struct dlqcli *d, const char *key, const char *start,
		const char *end, size_t count, struct dlqcli_page *p)
{
	relay_error err;
	int rc;

	memset(p, 0, sizeof(*p));
	err.text[0] = '\0';
	rc = page_read(d, key, start, end, count, p, &err);
	if (rc) {
		dlqcli_page_free(p);
		if (rc == RELAY_ENOMEM)
			return relayctl_error(RELAYCTL_FAIL, "%s: out of "
					      "memory", d->cmd);
		return dlqcli_store_error(d, rc, &err);
	}
	return RELAYCTL_OK;
}

/* The last id of a page (to start the next one after it), or NULL. */
const char *dlqcli_page_last(const struct dlqcli_page *p)
{
	size_t i = p->n;

	while (i--) {
		const char *id = raw_id(p->raw->element[i]);

		if (id)
			return id;
	}
	return NULL;
}

int dlqcli_find(struct dlqcli *d, const char *id, struct dlqcli_page *p)
{
	size_t i;
	int rc;

	memset(p, 0, sizeof(*p));
	if (!dlqcli_id_valid(id))
		return relayctl_error(RELAYCTL_FAIL, "%s: unknown DLQ entry "
				      "\"%s\" (not a stream entry id)", d->cmd,
				      id);
	for (i = 0; i < d->nkeys; i++) {
		rc = dlqcli_page(d, d->keys[i], id, id, 1, p);
		if (rc)
			return rc;
		if (p->n) {
			d->key = d->keys[i];
			d->stream = d->streams[i];
			return RELAYCTL_OK;
		}
		dlqcli_page_free(p);
	}
	return relayctl_error(RELAYCTL_FAIL, "%s: unknown DLQ entry \"%s\"",
			      d->cmd, id);
}

int dlqcli_get(struct dlqcli *d, const char *id, relay_dlq_record *rec)
{
	struct dlqcli_page p;
	int rc;

	memset(rec, 0, sizeof(*rec));
	rc = dlqcli_find(d, id, &p);
	if (rc)
		return rc;
	if (p.bad[0])
		rc = relayctl_error(RELAYCTL_FAIL, "%s: malformed %s", d->cmd,
				    p.bad[0]);
	else
		*rec = p.recs[0];
	if (!rc)
		memset(&p.recs[0], 0, sizeof(p.recs[0]));
	dlqcli_page_free(&p);
	return rc;
}

json_t *dlqcli_json_str(const char *s)
{
	json_t *j = json_string(s);
	char *c;
	size_t i;

	if (j || !s)
		return j;
	c = strdup(s);
	if (!c)
		return NULL;
	for (i = 0; c[i]; i++)
		if ((unsigned char)c[i] >= 0x80)
			c[i] = '?';
	j = json_string(c);
	free(c);
	return j;
}

json_t *dlqcli_json(const relay_dlq_record *rec)
{
	const relay_dlq_entry *e = &rec->e;
	json_t *o = json_object();

	if (!o)
		return NULL;
	json_object_set_new(o, "id", dlqcli_json_str(rec->id));
	json_object_set_new(o, "original_stream",
			    dlqcli_json_str(e->original_stream));
	json_object_set_new(o, "original_id", dlqcli_json_str(e->original_id));
	json_object_set_new(o, "group", dlqcli_json_str(e->group));
	json_object_set_new(o, "consumer", dlqcli_json_str(e->consumer));
	json_object_set_new(o, "app", dlqcli_json_str(e->app));
	json_object_set_new(o, "handler", dlqcli_json_str(e->handler));
	json_object_set_new(o, "reason", dlqcli_json_str(e->reason));
	json_object_set_new(o, "deliveries", json_integer(e->deliveries));
	json_object_set_new(o, "handler_attempts",
			    json_integer(e->handler_attempts));
	json_object_set_new(o, "timestamp", dlqcli_json_str(e->timestamp));
	json_object_set_new(o, "trace", e->trace ? dlqcli_json_str(e->trace)
						 : json_null());
	json_object_set_new(o, "stderr_tail", e->stderr_tail ?
			    dlqcli_json_str(e->stderr_tail) : json_null());
	json_object_set_new(o, "event", dlqcli_json_str(e->event));
	return o;
}

/* A JSON string of a reply element that may not be a string at all. */
static json_t *raw_str(const relay_redis_reply *v)
{
	char buf[32];

	if (v->type == RELAY_REDIS_REPLY_STRING ||
	    v->type == RELAY_REDIS_REPLY_STATUS)
		return dlqcli_json_str(v->str);
	if (v->type == RELAY_REDIS_REPLY_INTEGER) {
		snprintf(buf, sizeof(buf), "%lld", v->integer);
		return json_string(buf);
	}
	return json_null();
}

json_t *dlqcli_json_bad(const relay_dlq_record *rec, const char *bad,
			const relay_redis_reply *raw)
{
	json_t *o = json_object(), *f = json_object();
	const relay_redis_reply *l;
	size_t i;

	if (!o || !f) {
		json_decref(o);
		json_decref(f);
		return NULL;
	}
	json_object_set_new(o, "id", dlqcli_json_str(rec->id));
	json_object_set_new(o, "malformed", dlqcli_json_str(bad));
	l = raw && raw->type == RELAY_REDIS_REPLY_ARRAY && raw->elements == 2
		    ? raw->element[1] : NULL;
	/* Name/value pairs as stored; a repeated name keeps its last. */
	for (i = 0; l && l->type == RELAY_REDIS_REPLY_ARRAY &&
		    i + 1 < l->elements; i += 2) {
		json_t *k = raw_str(l->element[i]);

		if (json_is_string(k))
			json_object_set_new(f, json_string_value(k),
					    raw_str(l->element[i + 1]));
		json_decref(k);
	}
	json_object_set_new(o, "fields", f);
	return o;
}
