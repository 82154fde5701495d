/*
 * relay/occurrence.h - schedule occurrences: the envelope an occurrence
 * travels in, how the engine recognises and checks it, and its
 * publication.
 *
 * A template schedule fires at instants given by its cron expression
 * (relay/schedule.h). Each instant is one *occurrence*, published into
 * the source stream as an ordinary entry whose "event" field holds the
 * envelope (doc/redis-layout.md R-7):
 *
 *	{"source":"relay.schedule","app":A,"schedule":S,"handler":H,
 *	 "scheduled_at":"YYYY-MM-DDTHH:MM:SSZ",
 *	 "occurrence_id":"schedule:A:S:YYYY-MM-DDTHH:MM:SSZ"}
 *
 * The engine (relay/engine.h) never pattern-matches an envelope: it runs
 * the named schedule's handler, or dead-letters an envelope that
 * relay_schedule_occurrence_parse() refuses. relayd runs the scheduler
 * (evaluate every schedule once a minute, publish what fell due); an
 * embedder can run its own with relay_cron_next() and
 * relay_schedule_publish(). Publication is deduplicated cluster-wide by a
 * marker key, so any number of publishers may publish the same
 * occurrence and the stream gets one entry.
 *
 * Thread-safety: every function here is reentrant; relay_schedule_publish()
 * follows the rules of the backend it is given (relay/redis.h).
 */
#ifndef RELAY_OCCURRENCE_H
#define RELAY_OCCURRENCE_H

#include "common.h"
#include "redis.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Length of a "YYYY-MM-DDTHH:MM:SSZ" time, without the NUL. */
#define RELAY_SCHEDULE_TIME_LEN 20

/**
 * relay_schedule_time_format() - Unix seconds as the envelope's
 * "scheduled_at" text, "YYYY-MM-DDTHH:MM:SSZ" (RFC 3339, UTC, seconds).
 * @t: Unix seconds, 0 (1970-01-01T00:00:00Z) to 253402300799
 *   (9999-12-31T23:59:59Z).
 * @buf: receives the text and its NUL.
 * @size: at least RELAY_SCHEDULE_TIME_LEN + 1.
 *
 * Returns: 0, or RELAY_EINVAL (@t out of range, @size too small; @buf
 * untouched).
 */
RELAY_EXTERN int relay_schedule_time_format(int64_t t, char *buf,
					    size_t size);

/**
 * relay_schedule_is_occurrence() - does @event (@len bytes of raw JSON)
 * carry a schedule occurrence: a JSON object whose top-level "source" is
 * the string "relay.schedule"? The engine's own classification rule:
 * such an event is never pattern-matched, whether its envelope is valid
 * or not.
 * Returns: 1 or 0 (also for invalid JSON and on allocation failure of the
 * decoder, when the engine would not decode it either).
 */
RELAY_EXTERN int relay_schedule_is_occurrence(const char *event,
					      size_t len);

/**
 * struct relay_schedule_occurrence - a checked envelope. Allocated by
 * relay_schedule_occurrence_parse(); every string is NUL-terminated and
 * lives as long as the struct. The library may append fields.
 */
typedef struct relay_schedule_occurrence {
	const char *app;            /* a valid app name */
	const char *schedule;       /* a valid schedule name */
	const char *handler;        /* non-empty */
	const char *scheduled_at;   /* "YYYY-MM-DDTHH:MM:SSZ" */
	const char *occurrence_id;  /* "schedule:<app>:<schedule>:<at>" */
	int64_t at;                 /* scheduled_at as Unix seconds */
} relay_schedule_occurrence;

/**
 * relay_schedule_occurrence_parse() - check an envelope the way the engine
 * does before it runs one.
 * @out: receives the occurrence; NULL on failure.
 * @event: @len bytes of JSON.
 * @err: optional detail. On RELAY_EPARSE err->text is the reason, one
 *   line (e.g. "missing \"handler\"", "\"occurrence_id\" is not
 *   schedule:<app>:<schedule>:<scheduled_at>"): the reason the engine
 *   writes into the DLQ entry of a malformed occurrence.
 *
 * Checks: a JSON object whose "source" is "relay.schedule"; "app",
 * "schedule", "handler", "scheduled_at" and "occurrence_id" are
 * non-empty strings without NUL bytes; app and schedule are valid names
 * (relay_app_name_valid()); scheduled_at is a real calendar time in
 * exactly the form above; occurrence_id is the one those fields give.
 * Other members are ignored.
 * Returns: 0, RELAY_EPARSE (not JSON, or not a valid envelope) or
 * RELAY_ENOMEM.
 * Ownership: *out is new; free it with relay_schedule_occurrence_free().
 */
RELAY_EXTERN int relay_schedule_occurrence_parse(
	relay_schedule_occurrence **out, const char *event, size_t len,
	relay_error *err);

/** relay_schedule_occurrence_free() - free an occurrence; NULL is a no-op. */
RELAY_EXTERN void relay_schedule_occurrence_free(
	relay_schedule_occurrence *o);

/**
 * relay_schedule_publish_cb - completion of relay_schedule_publish().
 * @b: the backend.
 * @status: 0 when the occurrence is in the stream, otherwise
 *   RELAY_EBACKEND or RELAY_ETYPE (an ERROR reply: the stream key holds
 *   another type, a script error), RELAY_EPARSE (an unexpected reply),
 *   RELAY_ETIMEOUT, RELAY_ECLOSED or RELAY_ENOMEM.
 * @message_id: with @status 0, the id of the new stream entry when this
 *   call published it, or NULL when the occurrence was published already
 *   (its marker exists: another publisher, or an earlier call, did it).
 *   Borrowed for the duration of the call.
 * @detail: with a nonzero @status, one line saying what failed (the
 *   server's error text for an ERROR reply, "unexpected reply", or
 *   relay_strerror(@status)); NULL with @status 0. Borrowed for the call.
 * @payload: the caller's payload.
 */
typedef void (*relay_schedule_publish_cb)(relay_redis_backend *b,
					  int status, const char *message_id,
					  const char *detail, void *payload);

/**
 * relay_schedule_publish() - publish one occurrence, at most once.
 * @b: the backend (relay_redis_open_libev() or any backend of vtable
 *   version 2 or later).
 * @stream: the source stream the engine consumes (RELAY_STREAM).
 * @app: the app's name (a valid name).
 * @schedule: the schedule's name within the app (a valid name).
 * @handler: the handler the occurrence runs (non-empty); the engine
 *   still runs the handler the current template names for the schedule.
 * @scheduled_at: the occurrence's instant, Unix seconds (as
 *   relay_schedule_time_format() accepts), normally a value of
 *   relay_cron_next() or relay_cron_prev().
 * @cb: completion; runs exactly once when this returns 0.
 * @payload: passed to @cb.
 *
 * One atomic server-side step (RELAY_REDIS_SCRIPT_SCHEDULE_PUBLISH,
 * doc/redis-layout.md ): if the marker
 * "relay:<stream>:schedule:<occurrence_id>" (in @stream's hash slot;
 * on a single node the older "relay:schedule:<occurrence_id>" too,
 * written during the upgrade window) exists nothing is written and @cb
 * reports "already published"; otherwise the envelope is added to
 * @stream as the field "event" (XADD @stream *) and the marker is set
 * with a time to live of seven days. Publishing the same (app, schedule,
 * scheduled_at) again within those seven days, from any process, never
 * adds a second entry; a caller that failed (nonzero @status) may simply
 * try again.
 * Returns: 0 (@cb will run), or a negative code and @cb never runs:
 * RELAY_EINVAL (a NULL or invalid argument), RELAY_EBACKEND (the backend
 * predates SCHEDULE_PUBLISH), RELAY_ENOMEM, or what the backend's
 * script slot returned.
 * Ownership: every argument is borrowed for the call only.
 * Thread-safety: as every call on @b.
 */
RELAY_EXTERN int relay_schedule_publish(relay_redis_backend *b,
					const char *stream, const char *app,
					const char *schedule,
					const char *handler,
					int64_t scheduled_at,
					relay_schedule_publish_cb cb,
					void *payload);

#ifdef __cplusplus
}
#endif

#endif /* RELAY_OCCURRENCE_H */
