/*
 * relayctl/timeline.h - an invocation's attempt timeline as relayctl
 * shows it (doc/redis-layout.md R-3 __timeline:<field>, R-5 timeline):
 * parsed from its stored form (one JSON object per line) and printed one
 * line per attempt. Single-threaded, as relayctl.
 */
#ifndef RELAYCTL_TIMELINE_H
#define RELAYCTL_TIMELINE_H

#include <stdio.h>

#include <jansson.h>

#include "relay/redis.h"

/*
 * The attempts of timeline @v (@len bytes) as a JSON array of objects,
 * oldest first (members attempt, start_ms, end_ms, duration_ms, outcome,
 * exit_code or signal, warm, replica, trace_id, reason or why, stderr: as
 * they apply); a line not of the entry's form is kept as
 * {"unparsed": LINE}.
 * Returns: new reference, or NULL on no memory.
 */
json_t *relayctl_timeline_parse(const char *v, size_t len);

/*
 * The value of field @name of a raw stream entry @raw ([id, [name, value,
 * ...]]), borrowed from @raw; NULL when absent.
 */
const relay_redis_reply *relayctl_entry_field(const relay_redis_reply *raw,
					      const char *name);

/*
 * One line per attempt of @tl (relayctl_timeline_parse()), each after
 * @indent: "#N outcome detail, duration, start time, replica, warm|cold,
 * trace id", and the stderr tail of a failed one on the next lines.
 * Every value is cleaned of control bytes (relayctl_c()).
 */
void relayctl_timeline_print(FILE *f, const json_t *tl, const char *indent);

#endif /* RELAYCTL_TIMELINE_H */
