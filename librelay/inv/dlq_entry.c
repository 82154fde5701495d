/*
 * dlq_entry.c - the dead-letter queue's entry format: the field names and
 * their order, validation, the key, the timestamp, the fixed reason texts
 * and the oversized summary (doc/redis-layout.md ). Nothing here
 * does I/O; writing and reading entries over a Redis backend is
 * librelay/invops/dlq.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"
#include "inv.h"

/* Field order of an entry as written (source_fields, stderr_tail and
 * trace optional, trace last). */
const char *const relay__dlq_field_names[RELAY__DLQ_NFIELDS] = {
	"original_stream", "original_id", "group", "consumer", "event",
	"reason", "app", "handler", "deliveries", "handler_attempts",
	"timestamp", "source_fields", "stderr_tail", "trace",
};
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

int relay__dlq_entry_check(const relay_dlq_entry *e, size_t event_len,
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
						relay__dlq_field_names[i]);
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
	if (e->stderr_tail && !*e->stderr_tail)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"DLQ field stderr_tail is empty");
	if (e->source_fields && !*e->source_fields)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"DLQ field source_fields is empty");
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
	if (!dash_app && e->source_fields)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"DLQ field source_fields in an "
					"invocation's entry (placeholders "
					"only)");
	if (dash_app && e->stderr_tail)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"DLQ field stderr_tail in a placeholder "
					"(no handler ran)");
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
	return relay__dlq_entry_check(e, e->event ? strlen(e->event) : 0, err);
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

void relay_dlq_record_clear(relay_dlq_record *rec)
{
	char **s[] = {
		(char **)&rec->e.original_stream, (char **)&rec->e.original_id,
		(char **)&rec->e.group, (char **)&rec->e.consumer,
		(char **)&rec->e.event, (char **)&rec->e.reason,
		(char **)&rec->e.app, (char **)&rec->e.handler,
		(char **)&rec->e.timestamp, (char **)&rec->e.trace,
		(char **)&rec->e.stderr_tail,
		(char **)&rec->e.source_fields,
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

