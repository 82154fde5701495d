/*
 * librelay/consumer/sched.h - private: schedule occurrence envelopes
 * (doc/redis-layout.md R-7), shared by the engine's dispatch path
 * (consumer_sched.c) and the public relay/occurrence.h (occurrence.c),
 * which relayd's publisher and relayctl match use. Never installed.
 *
 *	{"source":"relay.schedule","app":A,"schedule":S,"handler":H,
 *	 "scheduled_at":"YYYY-MM-DDTHH:MM:SSZ",
 *	 "occurrence_id":"schedule:A:S:YYYY-MM-DDTHH:MM:SSZ"}
 */
#ifndef RELAY__CONSUMER_SCHED_H
#define RELAY__CONSUMER_SCHED_H

#include <stddef.h>
#include <stdint.h>

#define RELAY__SCHED_SOURCE "relay.schedule"
/* Publication marker TTL (doc/redis-layout.md R-7). */
#define RELAY__SCHED_MARKER_TTL_MS (7LL * 24 * 3600 * 1000)
/* The pre-cluster marker name, "relay:schedule:<occurrence_id>": read
 * (and written) on a single node during the upgrade window. */
#define RELAY__SCHED_LEGACY_PREFIX "relay:schedule:"

/* The publication marker of @occ on @stream,
 * "relay:<stream>:schedule:<occ>", in the stream's hash slot (new
 * string), or NULL. */
char *relay__sched_marker_key(const char *stream, const char *occ);
#define RELAY__SCHED_TIME_LEN 20  /* "YYYY-MM-DDTHH:MM:SSZ" */

/* Format Unix seconds @t as RFC 3339 UTC seconds into @buf (at least
 * RELAY__SCHED_TIME_LEN + 1 bytes). Returns 0 or RELAY_EINVAL. */
int relay__sched_time_fmt(int64_t t, char *buf, size_t size);

/* Parse exactly "YYYY-MM-DDTHH:MM:SSZ" (a real calendar time). Returns 0
 * or RELAY_EPARSE. */
int relay__sched_time_parse(const char *s, int64_t *out);

/* "schedule:<app>:<schedule>:<at>" (new string), or NULL. */
char *relay__sched_occurrence_id(const char *app, const char *schedule,
				 const char *at);

/* The envelope JSON, compact, keys in the order above (new string), or
 * NULL. */
char *relay__sched_envelope(const char *app, const char *schedule,
			    const char *handler, int64_t at);

/*
 * Is @ev (@len bytes of raw JSON) a schedule occurrence: a JSON object
 * whose top-level "source" is the string "relay.schedule"? Then it is
 * never pattern-matched: it is dispatched to its schedule, or
 * dead-lettered as a malformed occurrence when
 * relay__sched_envelope_check() refuses it. The one rule of the engine
 * and relayctl match. Returns 1 or 0.
 */
int relay__sched_is_envelope(const char *ev, size_t len);

/*
 * Check a decoded envelope (a json_t object whose source is
 * "relay.schedule"). On success returns 0 and points *app, *schedule,
 * *handler, *at into @root (borrowed). Otherwise RELAY_EPARSE and @why
 * says what is wrong (one line).
 */
int relay__sched_envelope_check(const void *root, const char **app,
				const char **schedule, const char **handler,
				const char **at, char *why, size_t size);

#endif /* RELAY__CONSUMER_SCHED_H */
