/*
 * trim.c - relay_redis_stream_trim(): the retention step as one atomic
 * transition (RELAY_REDIS_SCRIPT_STREAM_TRIM, librelay/lua/stream_trim.lua
 * on a server, memory_trim.c on the memory backend), with its reply
 * converted to an owned relay_stream_trim before the callback runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "common.h"

struct trim_call {
	relay_redis_trim_cb cb;
	void *payload;
};

void relay_stream_trim_free(relay_stream_trim *t)
{
	if (!t)
		return;
	relay__free(t->bound);
	relay__free(t->first_id);
	relay__free(t->oldest_pending_id);
	relay__free(t);
}

int64_t relay_stream_id_ms(const char *id)
{
	int64_t v = 0;
	const char *p;

	if (!id || *id < '0' || *id > '9')
		return -1;
	for (p = id; *p >= '0' && *p <= '9'; p++) {
		if (v > (INT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (*p - '0');
	}
	if (*p && *p != '-')
		return -1;
	return v;
}

static char *dup_str(const relay_redis_reply *r)
{
	if (r->type != RELAY_REDIS_REPLY_STRING &&
	    r->type != RELAY_REDIS_REPLY_STATUS)
		return NULL;
	return relay__strndup(r->str, r->len);
}

/* The script's reply: [trimmed, length, bound, first, oldest, groups]. */
static int convert(const relay_redis_reply *r, relay_stream_trim **out)
{
	relay_stream_trim *t;

	*out = NULL;
	if (r->type != RELAY_REDIS_REPLY_ARRAY || r->elements != 6 ||
	    r->element[0]->type != RELAY_REDIS_REPLY_INTEGER ||
	    r->element[1]->type != RELAY_REDIS_REPLY_INTEGER ||
	    r->element[5]->type != RELAY_REDIS_REPLY_INTEGER)
		return RELAY_EPARSE;
	t = relay__calloc(1, sizeof(*t));
	if (!t)
		return RELAY_ENOMEM;
	t->trimmed = r->element[0]->integer;
	t->length = r->element[1]->integer;
	t->groups = r->element[5]->integer;
	t->bound = dup_str(r->element[2]);
	t->first_id = dup_str(r->element[3]);
	t->oldest_pending_id = dup_str(r->element[4]);
	if (!t->bound || !t->first_id || !t->oldest_pending_id) {
		relay_stream_trim_free(t);
		return RELAY_EPARSE;
	}
	*out = t;
	return 0;
}

static void on_trim(relay_redis_backend *b, int status,
		    relay_redis_reply *reply, void *payload)
{
	struct trim_call *tc = payload;
	relay_stream_trim *t = NULL;

	if (!status) {
		status = relay_redis_reply_error(reply);
		if (!status)
			status = convert(reply, &t);
	}
	relay_redis_reply_free(reply);
	tc->cb(b, status, t, tc->payload);
	relay__free(tc);
}

int relay_redis_stream_trim(relay_redis_backend *b, const char *stream,
			    int64_t cutoff_ms, size_t limit,
			    unsigned int flags, relay_redis_trim_cb cb,
			    void *payload)
{
	char cutoff[24], lim[24];
	const char *argv[4];
	struct trim_call *tc;
	int rc;

	if (!b || !stream || !cb || cutoff_ms < 0 ||
	    cutoff_ms > 999999999999999LL || (flags & ~RELAY_TRIM_AGE_ONLY))
		return RELAY_EINVAL;
	tc = relay__calloc(1, sizeof(*tc));
	if (!tc)
		return RELAY_ENOMEM;
	tc->cb = cb;
	tc->payload = payload;
	snprintf(cutoff, sizeof(cutoff), "%lld", (long long)cutoff_ms);
	snprintf(lim, sizeof(lim), "%zu", limit);
	argv[0] = stream;
	argv[1] = cutoff;
	argv[2] = lim;
	argv[3] = (flags & RELAY_TRIM_AGE_ONLY) ? "age" : "groups";
	rc = relay__redis_script(b, RELAY_REDIS_SCRIPT_STREAM_TRIM, 1, 4, argv,
				 NULL, on_trim, tc);
	if (rc)
		relay__free(tc);
	return rc;
}
