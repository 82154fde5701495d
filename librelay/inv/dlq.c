/*
 * dlq.c - the dead-letter queue: entry format and validation, the fixed
 * reason texts (doc/redis-layout.md R-6), the atomic persist, and strict parsing for
 * relayctl dlq ls / inspect / rm.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "common.h"
#include "inv.h"

/* Field order of an entry as written (trace last, optional). */
static const char *const field_names[] = {
	"original_stream", "original_id", "group", "consumer", "event",
	"reason", "app", "handler", "deliveries", "handler_attempts",
	"timestamp", "trace",
};
#define NFIELDS 12
#define F_EVENT 4  /* index of "event" */
#define NREQUIRED 11

char *relay_dlq_key(const char *stream)
{
	return relay__sprintf("relay:%s:dlq", stream);
}

char *relay_dlq_timestamp(relay_wall_ms ms, char *buf, size_t size)
{
	time_t secs = (time_t)(ms / 1000);
	struct tm tm;
	char day[32];

	if (ms < 0)
		secs = 0;
	gmtime_r(&secs, &tm);
	strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, size, "%s.%03dZ", day, (int)((ms < 0 ? 0 : ms) % 1000));
	return buf;
}

/* RFC 3339 as we write it and as outside tools may: date 'T' time,
 * optional fraction, 'Z' or an offset. */
static int is_rfc3339(const char *s)
{
	static const char shape[] = "dddd-dd-ddTdd:dd:dd";
	size_t i;

	for (i = 0; shape[i]; i++) {
		if (shape[i] == 'd' ? (s[i] < '0' || s[i] > '9')
				    : s[i] != shape[i])
			return 0;
	}
	s += i;
	if (*s == '.') {
		s++;
		if (*s < '0' || *s > '9')
			return 0;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	if (strcmp(s, "Z") == 0)
		return 1;
	return (s[0] == '+' || s[0] == '-') && strlen(s) == 6 &&
	       s[1] >= '0' && s[1] <= '9' && s[2] >= '0' && s[2] <= '9' &&
	       s[3] == ':' && s[4] >= '0' && s[4] <= '9' && s[5] >= '0' &&
	       s[5] <= '9';
}

/*
 * @event_len: bytes of e->event, which may hold NUL bytes (a raw stream
 * value is stored byte-exact); the other strings are C strings.
 */
static int entry_validate(const relay_dlq_entry *e, size_t event_len,
			  relay_error *err)
{
	const char *str[] = { e->original_stream, e->original_id, e->group,
			      e->consumer, e->event, e->reason, e->app,
			      e->handler };
	size_t i;
	int dash_app, dash_handler;

	for (i = 0; i < RELAY__ARRAY_SIZE(str); i++) {
		/* The event is stored verbatim: an empty raw value (XADD s *
		 * event "") is a value, not a missing field. */
		if (!str[i] || (!*str[i] && str[i] != e->event))
			return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
						"DLQ field %s is empty",
						field_names[i]);
	}
	if (e->deliveries < 0)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"DLQ field deliveries is negative");
	if (!e->timestamp || !is_rfc3339(e->timestamp))
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"DLQ field timestamp is not RFC 3339");
	if (e->trace && !*e->trace)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"DLQ field trace is empty");
	if (strncmp(e->reason, "event oversized:", 16) == 0 &&
	    event_len > RELAY_DLQ_SUMMARY_MAX)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"DLQ field event of an oversized entry "
					"must be a summary of at most %d bytes",
					RELAY_DLQ_SUMMARY_MAX);
	dash_app = strcmp(e->app, "-") == 0;
	dash_handler = strcmp(e->handler, "-") == 0;
	if (dash_app != dash_handler)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"DLQ fields app and handler must both "
					"be \"-\" or neither");
	if (dash_app ? e->handler_attempts != 0 : e->handler_attempts < 1)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"DLQ field handler_attempts is %lld "
					"for a%s entry",
					e->handler_attempts,
					dash_app ? " placeholder"
						 : "n invocation");
	return 0;
}

int relay_dlq_entry_validate(const relay_dlq_entry *e, relay_error *err)
{
	return entry_validate(e, e->event ? strlen(e->event) : 0, err);
}

char *relay_dlq_reason_exhausted(const char *app, const char *handler,
				 unsigned int attempts,
				 const char *last_failure)
{
	return relay__sprintf("invocation exhausted: app \"%s\" handler "
			      "\"%s\" exhausted after %u handler attempts: %s",
			      app, handler, attempts,
			      last_failure ? last_failure : "");
}

char *relay_dlq_reason_malformed(relay_dlq_malformed kind,
				 const char *detail, size_t event_bytes,
				 size_t max_event_bytes)
{
	switch (kind) {
	case RELAY_DLQ_MISSING_EVENT:
		return relay__strdup("missing 'event' field");
	case RELAY_DLQ_NOT_STRING:
		return relay__strdup("'event' field is not a string");
	case RELAY_DLQ_DECODE:
		return relay__sprintf("decode event: %s",
				      detail ? detail : "");
	case RELAY_DLQ_NOT_OBJECT:
		return relay__strdup("'event' is not a JSON object");
	case RELAY_DLQ_OVERSIZED:
		return relay__sprintf("event oversized: raw event value is %zu "
				      "bytes, exceeds MAX_EVENT_BYTES %zu",
				      event_bytes, max_event_bytes);
	}
	return NULL;
}

char *relay_dlq_oversized_summary(size_t event_bytes, size_t max_event_bytes)
{
	return relay__sprintf("{\"relay_summary\":\"event_oversized\","
			      "\"event_bytes\":%zu,\"max_event_bytes\":%zu}",
			      event_bytes, max_event_bytes);
}

struct persist_call {
	relay_dlq_persist_cb cb;
	void *payload;
};

static void persist_reply(relay_redis_backend *b, int status,
			  relay_redis_reply *r, void *payload)
{
	static const char *const names[] = { "written", "already", "stale",
					     "retained" };
	struct persist_call *c = payload;
	relay_dlq_persist_result res = RELAY_DLQ_STALE;
	const char *id = NULL;
	size_t i;

	if (status == 0)
		status = relay_redis_reply_error(r);
	if (status == 0 &&
	    (r->type != RELAY_REDIS_REPLY_ARRAY || r->elements != 4 ||
	     r->element[0]->type != RELAY_REDIS_REPLY_STRING ||
	     r->element[3]->type != RELAY_REDIS_REPLY_STRING))
		status = RELAY_EPARSE;
	if (status == 0) {
		for (i = 0; i < RELAY__ARRAY_SIZE(names); i++) {
			if (strcmp(r->element[0]->str, names[i]) == 0)
				break;
		}
		if (i == RELAY__ARRAY_SIZE(names))
			status = RELAY_EPARSE;
		res = (relay_dlq_persist_result)i;
		if (res == RELAY_DLQ_WRITTEN)
			id = r->element[3]->str;
	}
	c->cb(status, res, status ? NULL : id, c->payload);
	relay_redis_reply_free(r);
	relay__free(c);
}

int relay_dlq_persist(relay_redis_backend *b, const char *inv_key,
		      const char *dlq_key, const char *field,
		      unsigned int attempt, const char *token,
		      const relay_dlq_entry *e, relay_dlq_persist_cb cb,
		      void *payload)
{
	return relay__dlq_persist_raw(b, inv_key, dlq_key, field, attempt,
				      token, e, e && e->event ?
				      strlen(e->event) : 0, cb, payload);
}

int relay__dlq_persist_raw(relay_redis_backend *b, const char *inv_key,
			   const char *dlq_key, const char *field,
			   unsigned int attempt, const char *token,
			   const relay_dlq_entry *e, size_t event_len,
			   relay_dlq_persist_cb cb, void *payload)
{
	const char *argv[5 + 2 * NFIELDS];
	size_t lens[5 + 2 * NFIELDS];
	char sat[16], sdel[24], shat[24];
	struct persist_call *c;
	int argc = 0, rc, i;

	if (!b || !inv_key || !dlq_key || !e || !cb)
		return RELAY_EINVAL;
	rc = entry_validate(e, event_len, NULL);
	if (rc)
		return rc;
	if (field && (!*field || attempt < 1 || !token ||
		      strlen(token) != RELAY_INV_TOKEN_LEN ||
		      strcmp(e->app, "-") == 0))
		return RELAY_EINVAL;
	if (!field && strcmp(e->app, "-") != 0)
		return RELAY_EINVAL;
	snprintf(sat, sizeof(sat), "%u", field ? attempt : 0);
	snprintf(sdel, sizeof(sdel), "%lld", e->deliveries);
	snprintf(shat, sizeof(shat), "%lld", e->handler_attempts);
	argv[argc++] = inv_key;
	argv[argc++] = dlq_key;
	argv[argc++] = field ? field : "";
	argv[argc++] = sat;
	argv[argc++] = field ? token : "";
	{
		const char *vals[NFIELDS] = {
			e->original_stream, e->original_id, e->group,
			e->consumer, e->event, e->reason, e->app, e->handler,
			sdel, shat, e->timestamp, e->trace,
		};

		for (i = 0; i < NFIELDS; i++) {
			if (!vals[i])
				continue;
			argv[argc++] = field_names[i];
			argv[argc++] = vals[i];
			/* The event may hold NUL bytes: its length is given. */
			lens[argc - 1] = i == 4 ? event_len : strlen(vals[i]);
		}
	}
	for (i = 0; i < 5; i++)
		lens[i] = strlen(argv[i]);
	for (i = 5; i < argc; i += 2)
		lens[i] = strlen(argv[i]);
	c = relay__malloc(sizeof(*c));
	if (!c)
		return RELAY_ENOMEM;
	c->cb = cb;
	c->payload = payload;
	rc = relay__redis_script(b, RELAY_REDIS_SCRIPT_DLQ_PERSIST, 2, argc,
				 argv, lens, persist_reply, c);
	if (rc)
		relay__free(c);
	return rc;
}

void relay_dlq_record_clear(relay_dlq_record *rec)
{
	char **s[] = {
		(char **)&rec->e.original_stream, (char **)&rec->e.original_id,
		(char **)&rec->e.group, (char **)&rec->e.consumer,
		(char **)&rec->e.event, (char **)&rec->e.reason,
		(char **)&rec->e.app, (char **)&rec->e.handler,
		(char **)&rec->e.timestamp, (char **)&rec->e.trace,
	};
	size_t i;

	if (!rec)
		return;
	for (i = 0; i < RELAY__ARRAY_SIZE(s); i++)
		relay__free(*s[i]);
	relay__free(rec->id);
	memset(rec, 0, sizeof(*rec));
}

void relay_dlq_records_free(relay_dlq_record *recs, size_t n)
{
	size_t i;

	for (i = 0; recs && i < n; i++)
		relay_dlq_record_clear(&recs[i]);
	relay__free(recs);
}

static int parse_count(const relay_redis_reply *v, long long *out)
{
	int64_t n;

	if (relay__parse_i64(v->str, v->len, &n))
		return RELAY_EPARSE;
	*out = n;
	return 0;
}

/*
 * Strict: every required field exactly once, no unknown field, counts are
 * plain decimals, and the entry passes relay_dlq_entry_validate(). The
 * error names the entry id and the field, for relayctl.
 */
int relay_dlq_parse(relay_dlq_record *out, const relay_redis_reply *r,
		    relay_error *err)
{
	char **slots[NFIELDS] = {
		(char **)&out->e.original_stream, (char **)&out->e.original_id,
		(char **)&out->e.group, (char **)&out->e.consumer,
		(char **)&out->e.event, (char **)&out->e.reason,
		(char **)&out->e.app, (char **)&out->e.handler, NULL, NULL,
		(char **)&out->e.timestamp, (char **)&out->e.trace,
	};
	const relay_redis_reply *f, *name, *val;
	const char *id = "?";
	char **slot;
	size_t i, k;
	int rc = RELAY_EPARSE, seen[NFIELDS] = { 0 };

	memset(out, 0, sizeof(*out));
	if (!r || r->type != RELAY_REDIS_REPLY_ARRAY || r->elements != 2 ||
	    r->element[0]->type != RELAY_REDIS_REPLY_STRING)
		return relay__error_set(err, RELAY_EPARSE, NULL, 0, 0,
					"DLQ entry: not a stream entry");
	id = r->element[0]->str;
	f = r->element[1];
	if (f->type != RELAY_REDIS_REPLY_ARRAY || f->elements % 2)
		return relay__error_set(err, RELAY_EPARSE, NULL, 0, 0,
					"DLQ entry %s: no field list", id);
	out->id = relay__strdup(id);
	if (!out->id) {
		rc = RELAY_ENOMEM;
		goto done;
	}
	for (i = 0; i < f->elements; i += 2) {
		name = f->element[i];
		val = f->element[i + 1];
		for (k = 0; k < NFIELDS; k++) {
			if (name->str && strcmp(name->str, field_names[k]) == 0)
				break;
		}
		if (k == NFIELDS || seen[k] ||
		    val->type != RELAY_REDIS_REPLY_STRING) {
			relay__error_set(err, rc, NULL, 0, 0,
					 "DLQ entry %s: %s field \"%.40s\"", id,
					 k == NFIELDS ? "unknown"
					 : seen[k]    ? "duplicate"
						      : "non-string",
					 name->str ? name->str : "");
			goto done;
		}
		seen[k] = 1;
		if (k == 8 || k == 9) {
			if (parse_count(val, k == 8 ? &out->e.deliveries
						    : &out->e.handler_attempts)) {
				relay__error_set(err, rc, NULL, 0, 0,
						 "DLQ entry %s: field %s is "
						 "not a count", id,
						 field_names[k]);
				goto done;
			}
			continue;
		}
		slot = slots[k];
		*slot = relay__strndup(val->str, val->len);
		if (!*slot) {
			rc = RELAY_ENOMEM;
			goto done;
		}
	}
	for (k = 0; k < NREQUIRED; k++) {
		if (!seen[k]) {
			relay__error_set(err, rc, NULL, 0, 0,
					 "DLQ entry %s: missing field %s", id,
					 field_names[k]);
			goto done;
		}
	}
	if (relay_dlq_entry_validate(&out->e, err)) {
		if (err) {
			char text[RELAY_ERROR_TEXT_MAX];

			snprintf(text, sizeof(text), "%s", err->text);
			relay__error_set(err, rc, NULL, 0, 0,
					 "DLQ entry %s: %s", id, text);
		}
		goto done;
	}
	rc = 0;
done:
	if (rc)
		relay_dlq_record_clear(out);
	return rc;
}

static int range_sync(relay_redis_backend *b, const char *dlq_key,
		      const char *start, const char *end, size_t count,
		      relay_dlq_record **out, size_t *n, relay_error *err)
{
	relay_redis_reply *r = NULL;
	relay_dlq_record *recs = NULL;
	char scount[24];
	const char *argv[6] = { "XRANGE", dlq_key, start, end, "COUNT",
				scount };
	size_t i = 0;
	int rc;

	*out = NULL;
	*n = 0;
	snprintf(scount, sizeof(scount), "%zu", count ? count : 1);
	rc = relay_redis_sync_command(b, &r, 6, argv, NULL);
	if (rc == 0)
		rc = relay_redis_reply_error(r);
	if (rc) {
		relay__error_set(err, rc, NULL, 0, 0, "XRANGE %s: %s", dlq_key,
				 r && r->str ? r->str
					     : relay_strerror(rc));
		goto done;
	}
	if (r->type != RELAY_REDIS_REPLY_ARRAY) {
		rc = relay__error_set(err, RELAY_EPARSE, NULL, 0, 0,
				      "XRANGE %s: unexpected reply", dlq_key);
		goto done;
	}
	recs = relay__calloc(r->elements ? r->elements : 1, sizeof(*recs));
	if (!recs) {
		rc = RELAY_ENOMEM;
		goto done;
	}
	for (i = 0; i < r->elements; i++) {
		rc = relay_dlq_parse(&recs[i], r->element[i], err);
		if (rc)
			goto done;
	}
	*out = recs;
	*n = r->elements;
	recs = NULL;
done:
	relay_dlq_records_free(recs, i);
	relay_redis_reply_free(r);
	return rc;
}

int relay_dlq_list_sync(relay_redis_backend *b, const char *dlq_key,
			const char *start, size_t count,
			relay_dlq_record **out, size_t *n, relay_error *err)
{
	return range_sync(b, dlq_key, start ? start : "-", "+", count, out, n,
			  err);
}

int relay_dlq_get_sync(relay_redis_backend *b, const char *dlq_key,
		       const char *id, relay_dlq_record *out, relay_error *err)
{
	relay_dlq_record *recs;
	size_t n;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = range_sync(b, dlq_key, id, id, 1, &recs, &n, err);
	if (rc)
		return rc;
	if (n == 0) {
		relay_dlq_records_free(recs, n);
		return relay__error_set(err, RELAY_ENOTFOUND, NULL, 0, 0,
					"DLQ entry %s not found", id);
	}
	*out = recs[0];
	relay__free(recs);
	return 0;
}

int relay_dlq_delete_sync(relay_redis_backend *b, const char *dlq_key,
			  const char *id, relay_error *err)
{
	const char *argv[3] = { "XDEL", dlq_key, id };
	relay_redis_reply *r = NULL;
	int rc;

	rc = relay_redis_sync_command(b, &r, 3, argv, NULL);
	if (rc == 0)
		rc = relay_redis_reply_error(r);
	if (rc == 0 && r->type != RELAY_REDIS_REPLY_INTEGER)
		rc = RELAY_EPARSE;
	if (rc)
		relay__error_set(err, rc, NULL, 0, 0, "XDEL %s %s: %s", dlq_key,
				 id, r && r->str ? r->str : relay_strerror(rc));
	else if (r->integer == 0)
		rc = relay__error_set(err, RELAY_ENOTFOUND, NULL, 0, 0,
				      "DLQ entry %s not found", id);
	relay_redis_reply_free(r);
	return rc;
}
