/*
 * occurrence.c - the public face of schedule occurrences
 * (relay/occurrence.h): time format, classification and checking of an
 * envelope with the engine's own helpers (sched.h, consumer_sched.c),
 * and publication through the SCHEDULE_PUBLISH transition.
 */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "common.h"
#include "redis/backend.h"
#include "relay/app.h"
#include "relay/occurrence.h"
#include "sched.h"

#if RELAY_SCHEDULE_TIME_LEN != RELAY__SCHED_TIME_LEN
#error "RELAY_SCHEDULE_TIME_LEN and RELAY__SCHED_TIME_LEN disagree"
#endif

int relay_schedule_time_format(int64_t t, char *buf, size_t size)
{
	if (!buf)
		return RELAY_EINVAL;
	return relay__sched_time_fmt(t, buf, size);
}

int relay_schedule_is_occurrence(const char *event, size_t len)
{
	return event ? relay__sched_is_envelope(event, len) : 0;
}

/* The struct and the strings it points to, in one block. */
typedef struct occ_block {
	relay_schedule_occurrence pub;
	char text[];
} occ_block;

int relay_schedule_occurrence_parse(relay_schedule_occurrence **out,
				    const char *event, size_t len,
				    relay_error *err)
{
	const char *f[5];  /* app, schedule, handler, scheduled_at, id */
	const char *src;
	char why[160];
	json_error_t jerr;
	json_t *root;
	occ_block *o;
	size_t n[5], total = 0, i;
	char *p;
	int64_t t;
	int rc;

	if (!out)
		return RELAY_EINVAL;
	*out = NULL;
	if (!event)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"no event");
	relay__error_clear(err);
	root = json_loadb(event, len, 0, &jerr);
	if (!root)
		return json_error_code(&jerr) == json_error_out_of_memory
		       ? relay__error_set(err, RELAY_ENOMEM, NULL, 0, 0,
					  "out of memory")
		       : relay__error_set(err, RELAY_EPARSE, NULL, 0, 0,
					  "not JSON: %s", jerr.text);
	src = json_string_value(json_object_get(root, "source"));
	if (!json_is_object(root) || !src ||
	    strcmp(src, RELAY__SCHED_SOURCE) != 0) {
		json_decref(root);
		return relay__error_set(err, RELAY_EPARSE, NULL, 0, 0,
					"not a schedule occurrence (no "
					"\"source\":\"%s\")",
					RELAY__SCHED_SOURCE);
	}
	rc = relay__sched_envelope_check(root, &f[0], &f[1], &f[2], &f[3],
					 why, sizeof(why));
	if (rc) {
		json_decref(root);
		return relay__error_set(err, rc, NULL, 0, 0, "%s", why);
	}
	f[4] = json_string_value(json_object_get(root, "occurrence_id"));
	if (relay__sched_time_parse(f[3], &t)) {  /* checked above */
		json_decref(root);
		return relay__error_set(err, RELAY_EPARSE, NULL, 0, 0,
					"bad \"scheduled_at\"");
	}
	for (i = 0; i < 5; i++) {
		n[i] = strlen(f[i]) + 1;
		total += n[i];
	}
	o = relay__malloc(sizeof(*o) + total);
	if (!o) {
		json_decref(root);
		return relay__error_set(err, RELAY_ENOMEM, NULL, 0, 0,
					"out of memory");
	}
	p = o->text;
	for (i = 0; i < 5; i++) {
		memcpy(p, f[i], n[i]);
		f[i] = p;
		p += n[i];
	}
	json_decref(root);
	o->pub.app = f[0];
	o->pub.schedule = f[1];
	o->pub.handler = f[2];
	o->pub.scheduled_at = f[3];
	o->pub.occurrence_id = f[4];
	o->pub.at = t;
	*out = &o->pub;
	return 0;
}

void relay_schedule_occurrence_free(relay_schedule_occurrence *o)
{
	relay__free(o);  /* the first member of its occ_block */
}

/* ---- publication --------------------------------------------------------- */

typedef struct publish_call {
	relay_schedule_publish_cb cb;
	void *payload;
	/* Kept while a PING learns the server's mode (publish_later). */
	char *stream, *app, *schedule, *handler;
	int64_t at;
} publish_call;

static void call_free(publish_call *c)
{
	if (!c)
		return;
	relay__free(c->stream);
	relay__free(c->app);
	relay__free(c->schedule);
	relay__free(c->handler);
	relay__free(c);
}

/* SCHEDULE_PUBLISH replies [result, 0, 0, entry id] (relay/sys/redis.h). */
static void publish_done(relay_redis_backend *b, int status,
			 relay_redis_reply *r, void *payload)
{
	publish_call call = *(publish_call *)payload;
	const char *res = NULL, *detail = NULL, *id = NULL;

	relay__free(payload);  /* its strings were freed when it was sent */
	if (status == 0 && r && r->type == RELAY_REDIS_REPLY_ERROR) {
		status = relay_redis_reply_error(r);
		detail = r->str ? r->str : "error reply";
	} else if (status == 0) {
		if (r && r->type == RELAY_REDIS_REPLY_ARRAY &&
		    r->elements == 4 && r->element[0] &&
		    r->element[0]->type == RELAY_REDIS_REPLY_STRING)
			res = r->element[0]->str;
		if (res && strcmp(res, "published") == 0 && r->element[3] &&
		    r->element[3]->type == RELAY_REDIS_REPLY_STRING &&
		    r->element[3]->len > 0)
			id = r->element[3]->str;
		else if (!res || strcmp(res, "duplicate") != 0) {
			status = RELAY_EPARSE;
			detail = "unexpected reply";
		}
	} else {
		detail = relay_strerror(status);
	}
	call.cb(b, status, status ? NULL : id, status ? detail : NULL,
		call.payload);
	relay_redis_reply_free(r);
}

/*
 * The SCHEDULE_PUBLISH itself (doc/redis-layout.md R-7): the
 * stream-scoped marker; on a single node also the pre-cluster one, so an
 * occurrence an older version published is not published again and an
 * older version still running sees this one. Takes @call.
 */
static int publish_now(relay_redis_backend *b, publish_call *call)
{
	char ts[RELAY__SCHED_TIME_LEN + 1], ttl[24];
	char *env = NULL, *id = NULL, *marker = NULL, *legacy = NULL;
	char *stream = call->stream;
	const char *argv[5];
	int rc = RELAY_ENOMEM;

	if (relay__sched_time_fmt(call->at, ts, sizeof(ts))) {
		call_free(call);
		return RELAY_EINVAL;
	}
	env = relay__sched_envelope(call->app, call->schedule, call->handler,
				    call->at);
	id = relay__sched_occurrence_id(call->app, call->schedule, ts);
	marker = id ? relay__sched_marker_key(stream, id) : NULL;
	legacy = id ? relay__sprintf("%s%s", RELAY__SCHED_LEGACY_PREFIX, id)
		    : NULL;
	snprintf(ttl, sizeof(ttl), "%lld", RELAY__SCHED_MARKER_TTL_MS);
	/* From here the call is only its callback (publish_done frees it,
	 * maybe before relay__redis_script() returns). */
	call->stream = NULL;
	relay__free(call->app);
	relay__free(call->schedule);
	relay__free(call->handler);
	call->app = call->schedule = call->handler = NULL;
	if (env && marker && legacy) {
		int nk = relay__redis_legacy_marker_ok(b) ? 3 : 2;

		argv[0] = marker;
		argv[1] = stream;
		argv[2] = legacy;
		argv[nk] = ttl;
		argv[nk + 1] = env;
		rc = relay__redis_script(b, RELAY_REDIS_SCRIPT_SCHEDULE_PUBLISH,
					 nk, nk + 2, argv, NULL, publish_done,
					 call);
	}
	if (rc)
		call_free(call);
	relay__free(stream);
	relay__free(env);
	relay__free(id);
	relay__free(marker);
	relay__free(legacy);
	return rc;
}

/* The reply to the PING sent while the server's mode was unknown: by now
 * the connection's CLUSTER SLOTS has answered. */
static void publish_later(relay_redis_backend *b, int status,
			  relay_redis_reply *r, void *payload)
{
	publish_call *call = payload;
	relay_schedule_publish_cb cb = call->cb;
	void *cb_payload = call->payload;

	relay_redis_reply_free(r);
	if (status == 0 && relay__redis_cluster_mode(b) < 0)
		status = RELAY_EBACKEND;
	if (status == 0)
		status = publish_now(b, call);
	else
		call_free(call);
	if (status)
		cb(b, status, NULL, relay_strerror(status), cb_payload);
}

int relay_schedule_publish(relay_redis_backend *b, const char *stream,
			   const char *app, const char *schedule,
			   const char *handler, int64_t scheduled_at,
			   relay_schedule_publish_cb cb, void *payload)
{
	static const char *const ping[] = { "PING" };
	char ts[RELAY__SCHED_TIME_LEN + 1];
	publish_call *call;
	int rc;

	if (!b || !stream || !*stream || !cb || !app ||
	    !relay_app_name_valid(app) || !schedule ||
	    !relay_app_name_valid(schedule) || !handler || !*handler ||
	    relay__sched_time_fmt(scheduled_at, ts, sizeof(ts)))
		return RELAY_EINVAL;
	call = relay__calloc(1, sizeof(*call));
	if (!call)
		return RELAY_ENOMEM;
	call->cb = cb;
	call->payload = payload;
	call->at = scheduled_at;
	call->stream = relay__strdup(stream);
	call->app = relay__strdup(app);
	call->schedule = relay__strdup(schedule);
	call->handler = relay__strdup(handler);
	if (!call->stream || !call->app || !call->schedule || !call->handler) {
		call_free(call);
		return RELAY_ENOMEM;
	}
	/* Until a connection has told whether the server is a cluster (and
	 * so which marker keys one script may touch), a PING comes first. */
	if (relay__redis_cluster_mode(b) < 0) {
		rc = relay_redis_command(b, 1, ping, NULL, publish_later, call);
		if (rc)
			call_free(call);
		return rc;
	}
	return publish_now(b, call);
}
