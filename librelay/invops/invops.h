/*
 * librelay/invops/invops.h - private: the invocation-state and DLQ
 * operations over a Redis backend beyond the public ones of
 * relay/invocation.h and relay/dlq.h. Every transition script's key and
 * argument list is built in this part and nowhere else, and its reply is
 * parsed here and nowhere else (inv_ops.c, dlq.c); the decisions the
 * scripts make are librelay/inv/. Never installed.
 */
#ifndef RELAY__INVOPS_H
#define RELAY__INVOPS_H

#include "relay/invocation.h"
#include "relay/dlq.h"
#include "relay/sys/redis.h"

/*
 * What a finishing transition records beside the state (doc/redis-layout.md
 * the attempt's timeline entry (relay__tl_format(); NULL: none,
 * and then nothing else either) and, when @outcomes is set, the outcome
 * stream it is also appended to (XADD MAXLEN ~ @outcomes_max), naming the
 * message @id. Borrowed for the call.
 */
typedef struct relay__inv_note {
	const char *entry;
	const char *outcomes;       /* "relay:<stream>:outcomes", or NULL */
	long long outcomes_max;     /* its approximate length bound */
	const char *id;             /* the message id (with outcomes) */
} relay__inv_note;

/*
 * relay_inv_record_failure() with the backoff given: next_attempt_at =
 * @now + @backoff_ms (>= 1). relay_inv_record_failure() passes
 * relay_inv_backoff_ms(@attempt); the engine passes it divided by its
 * time scale (test hooks). @note: the attempt's timeline entry and
 * outcome stream (NULL: none), written in the same script when the
 * failure is recorded (an entry that relay__tl_entry_ok() refuses, or
 * outcomes without an id, is RELAY_EINVAL).
 */
int relay__inv_record_failure_ms(relay_redis_backend *b, const char *key,
				 const char *field, unsigned int attempt,
				 const char *token, relay_wall_ms now,
				 int64_t backoff_ms,
				 const relay__inv_note *note,
				 relay_inv_cb cb, void *payload);

/* relay_inv_mark_complete() and relay_inv_mark_exhausted() with the
 * attempt's @note, as relay__inv_record_failure_ms(). */
int relay__inv_mark_complete_tl(relay_redis_backend *b, const char *key,
				const char *field, unsigned int attempt,
				const char *token,
				const relay__inv_note *note,
				relay_inv_cb cb, void *payload);
int relay__inv_mark_exhausted_tl(relay_redis_backend *b, const char *key,
				 const char *field, unsigned int attempt,
				 const char *token,
				 const relay__inv_note *note,
				 relay_inv_cb cb, void *payload);

/*
 * Completion of relay__inv_claim_classification_pin(): as relay_inv_cb,
 * plus the admission pin stored in the hash (@pin, @pin_len bytes,
 * borrowed for the call; "" when none is stored). @pin is NULL when
 * @status is nonzero.
 */
typedef void (*relay__inv_pin_cb)(int status, const relay_inv_outcome *o,
				  const char *pin, size_t pin_len,
				  void *payload);

/*
 * claim_classification with a schedule occurrence's admission pin
 * ("<timeout_ms>:<retries>:<handler>"; NULL or "" for none): the script
 * stores it in __schedule unless one is stored already, and always
 * answers the stored one. relay_inv_claim_classification() is this
 * without a pin. Returns: as relay_inv_try_start().
 */
int relay__inv_claim_classification_pin(relay_redis_backend *b,
					const char *key, const char *pin,
					relay__inv_pin_cb cb, void *payload);

/*
 * Completion of relay__inv_claim_start(): @cls is the classification's
 * outcome (claimed, already or retained; only result is set), @start
 * try_start's (as relay_inv_try_start()). Both are NULL when @status is
 * nonzero: an error reply or a reply that does not parse fails both.
 */
typedef void (*relay__inv_claim_start_cb)(int status,
					  const relay_inv_outcome *cls,
					  const relay_inv_outcome *start,
					  void *payload);

/*
 * claim_classification (no pin) and try_start of @field in one script
 * (RELAY_REDIS_SCRIPT_CLAIM_START, backend version >= 4; else
 * RELAY_EBACKEND without calling @cb). Arguments as
 * relay_inv_try_start(). Returns: 0 (@cb is called exactly once, later
 * or during the call as the backend does), or an error without a call.
 */
int relay__inv_claim_start(relay_redis_backend *b, const char *key,
			   const char *field, relay_wall_ms now,
			   int64_t timeout_ms, relay__inv_claim_start_cb cb,
			   void *payload);

/*
 * mark_complete + XACK @id of @stream for @group + retain (@ttl_ms) in one
 * script (RELAY_REDIS_SCRIPT_COMPLETE_ACK, backend version >= 3; else
 * RELAY_EBACKEND). The outcome is mark_complete's: recorded means the
 * message was also acknowledged and retained. @note: as
 * relay__inv_record_failure_ms() (its id, when given, must be @id).
 */
int relay__inv_complete_ack(relay_redis_backend *b, const char *key,
			    const char *stream, const char *field,
			    unsigned int attempt, const char *token,
			    const char *group, const char *id,
			    int64_t ttl_ms, const relay__inv_note *note,
			    relay_inv_cb cb, void *payload);

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

#endif /* RELAY__INVOPS_H */
