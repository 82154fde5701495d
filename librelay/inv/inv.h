/*
 * librelay/inv/inv.h - private: the pure decision logic of the invocation
 * state transitions, shared by the memory backend (which runs it) and
 * mirrored line by line by the scripts in librelay/lua/ (which the
 * hiredis backend runs). The shared behavioural suite proves the two
 * agree.
 */
#ifndef RELAY__INV_H
#define RELAY__INV_H

#include "relay/invocation.h"
#include "relay/dlq.h"
#include "relay/sys/redis.h"

/* Reserved hash fields. */
#define RELAY__INV_F_CLASSIFICATION "__classification"
#define RELAY__INV_F_PLACEHOLDER "__dlq_placeholder"
#define RELAY__INV_F_TERMINAL "__terminal"
#define RELAY__INV_F_SCHEDULE "__schedule"  /* schedule admission pin */

/*
 * Each decide function looks at the current state of one field and fills
 * *out (what to report) and *next (what to store). Returns 1 when *next
 * must be written, 0 when nothing changes.
 */
int relay__inv_decide_try_start(const relay_inv_state *cur, int64_t now,
				int64_t timeout_ms, const char *token,
				relay_inv_outcome *out, relay_inv_state *next);
int relay__inv_decide_failure(const relay_inv_state *cur,
			      unsigned int attempt, const char *token,
			      int64_t now, int64_t backoff_ms,
			      relay_inv_outcome *out, relay_inv_state *next);
int relay__inv_decide_complete(const relay_inv_state *cur,
			       unsigned int attempt, const char *token,
			       relay_inv_outcome *out, relay_inv_state *next);
int relay__inv_decide_exhausted(const relay_inv_state *cur,
				unsigned int attempt, const char *token,
				relay_inv_outcome *out, relay_inv_state *next);

/*
 * DLQ persist decision for one exhausted field: 1 = write the entry and
 * store *next (the ":dlq" marker); 0 = *res says why not.
 */
int relay__inv_decide_dlq(const relay_inv_state *cur, unsigned int attempt,
			  const char *token, relay_dlq_persist_result *res,
			  relay_inv_state *next);

/*
 * relay_dlq_persist() with the event's length given: the raw value of a
 * malformed message is stored verbatim, NUL bytes included (the struct's
 * event is then not a C string of that length).
 */
int relay__dlq_persist_raw(relay_redis_backend *b, const char *inv_key,
			   const char *dlq_key, const char *field,
			   unsigned int attempt, const char *token,
			   const relay_dlq_entry *e, size_t event_len,
			   relay_dlq_persist_cb cb, void *payload);

/*
 * mark_complete + XACK @id of @stream for @group + retain (@ttl_ms) in one
 * script (RELAY_REDIS_SCRIPT_COMPLETE_ACK, backend version >= 3; else
 * RELAY_EBACKEND). The outcome is mark_complete's: recorded means the
 * message was also acknowledged and retained.
 */
int relay__inv_complete_ack(relay_redis_backend *b, const char *key,
			    const char *stream, const char *field,
			    unsigned int attempt, const char *token,
			    const char *group, const char *id,
			    int64_t ttl_ms, relay_inv_cb cb, void *payload);

/* Script result names on the wire (index = relay_inv_result). */
const char *relay__inv_result_wire(relay_inv_result r);
int relay__inv_result_parse(const char *s, relay_inv_result *out);

/*
 * Convert a 4-element transition reply to an outcome.
 * Returns 0, RELAY_EBACKEND/RELAY_ETYPE (error reply) or RELAY_EPARSE.
 */
int relay__inv_outcome_from_reply(const relay_redis_reply *r,
				  relay_inv_outcome *out);

/* Parse a decimal integer strictly (no sign unless @neg_ok). */
int relay__parse_i64(const char *s, size_t len, int64_t *out);

#endif /* RELAY__INV_H */
