/*
 * dlq.c - the dead-letter queue over a Redis backend: the atomic persist
 * (DLQ_PERSIST: its key and argument list and its reply, here only), and
 * strict parsing of entries for relayctl dlq ls / inspect / rm. The entry
 * format itself is librelay/inv/dlq_entry.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "common.h"
#include "inv.h"
#include "invops.h"

/* The entry's fields, in the order written (librelay/inv/dlq_entry.c). */
#define NFIELDS RELAY__DLQ_NFIELDS
#define NREQUIRED RELAY__DLQ_NREQUIRED
#define F_EVENT RELAY__DLQ_F_EVENT
static const char *const *const field_names = relay__dlq_field_names;

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
	rc = relay__dlq_entry_check(e, event_len, NULL);
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
			sdel, shat, e->timestamp, e->source_fields,
			e->stderr_tail, e->trace,
		};

		for (i = 0; i < NFIELDS; i++) {
			if (!vals[i])
				continue;
			argv[argc++] = field_names[i];
			argv[argc++] = vals[i];
			/* The event may hold NUL bytes: its length is given. */
			lens[argc - 1] = i == F_EVENT ? event_len
						      : strlen(vals[i]);
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

static int parse_count(const relay_redis_reply *v, long long *out)
{
	int64_t n;

	if (relay__parse_i64(v->str, v->len, &n))
		return RELAY_EPARSE;
	*out = n;
	return 0;
}

/*
 * Strict: every required field exactly once, no unknown field (timeline,
 * optional, is accepted once and skipped), counts are plain decimals,
 * and the entry passes relay_dlq_entry_validate(). The
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
		(char **)&out->e.timestamp, (char **)&out->e.source_fields,
		(char **)&out->e.stderr_tail,
		(char **)&out->e.trace,
	};
	const relay_redis_reply *f, *name, *val;
	const char *id = "?";
	char **slot;
	size_t i, k;
	int rc = RELAY_EPARSE, seen[NFIELDS] = { 0 }, seen_tl = 0;

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
		/* The invocation's attempt timeline (optional): accepted,
		 * not kept in the record (a reader wanting it reads the
		 * entry's fields itself, as relayctl dlq inspect does). */
		if (name->str && strcmp(name->str, "timeline") == 0 &&
		    !seen_tl && val->type == RELAY_REDIS_REPLY_STRING) {
			seen_tl = 1;
			continue;
		}
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
