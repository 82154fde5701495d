/*
 * relay/invocation.h - per-message invocation state (doc/redis-layout.md
 *
 *
 * One Redis hash per stream message, one field per "<app>/<handler>":
 *
 *	ok
 *	running:<deadline_ms>:<attempt>:<token>
 *	next_attempt_at:<deadline_ms>:<attempt>:<token>
 *	exhausted:<attempt>:<token>[:dlq]
 *
 * plus the reserved fields __classification, __dlq_placeholder and
 * __terminal. Every transition is one atomic operation of the backend
 * (a Lua script on a real server). Fenced transitions succeed only for the
 * current claim (attempt and token match); a stale writer gets
 * RELAY_INV_STALE, not an error. After relay_inv_retain() the hash is
 * inert: every later transition reports RELAY_INV_RETAINED and writes
 * nothing.
 *
 * One invocation's life, as the consumer drives it (each step async):
 *
 *	try_start          → CLAIMED: run attempt o->attempt with o->token
 *	                     RUNNING/BACKOFF: skip, message stays pending
 *	                     OK: done; EXHAUSTED: persist the DLQ entry
 *	                     unless o->dlq; error: do not run (fail closed)
 *	handler succeeded  → mark_complete(attempt, token)
 *	handler failed     → record_failure(attempt, token) while attempts
 *	                     remain, else mark_exhausted + relay_dlq_persist
 *	all fields terminal→ XACK, then retain (after the message left the PEL)
 *
 * The pure helpers (parse, format, backoff, key) do no I/O and take "now"
 * as an argument and are safe from any thread; the transitions follow the
 * threading rule of their backend (relay/redis.h).
 */
#ifndef RELAY_INVOCATION_H
#define RELAY_INVOCATION_H

#include "common.h"
#include "clock.h"
#include "redis.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RELAY_INV_TOKEN_LEN 32            /* lowercase hex chars */
#define RELAY_INV_MAX_RUN_MS 300000       /* claim deadline cap: 5 min */
#define RELAY_INV_RETENTION_MS 604800000  /* default retention: 7 days */

/** enum relay_inv_kind - the state stored in one field. */
typedef enum relay_inv_kind {
	RELAY_INV_ABSENT = 0,    /* no field */
	RELAY_INV_INVALID = 1,   /* present but unparseable */
	RELAY_INV_OK = 2,
	RELAY_INV_RUNNING = 3,
	RELAY_INV_BACKOFF = 4,   /* next_attempt_at */
	RELAY_INV_EXHAUSTED = 5, /* dlq flag tells whether the entry exists */
} relay_inv_kind;

/** struct relay_inv_state - a parsed field value. */
typedef struct relay_inv_state {
	relay_inv_kind kind;
	int64_t deadline_ms;                  /* RUNNING, BACKOFF */
	unsigned int attempt;                 /* 1-based; 0 for OK/ABSENT */
	char token[RELAY_INV_TOKEN_LEN + 1];  /* "" when none */
	int dlq;                              /* EXHAUSTED with ":dlq" */
} relay_inv_state;

/**
 * relay_inv_state_parse() - parse a field value strictly.
 * @out: filled; kind is RELAY_INV_INVALID on failure.
 * @value: the value (need not be NUL-terminated), or NULL for absent.
 * @len: its length.
 * Returns: 0, or RELAY_EPARSE (a malformed value; callers treat it like
 * an absent one).
 */
RELAY_EXTERN int relay_inv_state_parse(relay_inv_state *out,
				       const char *value, size_t len);

/**
 * relay_inv_state_format() - render a state as its field value.
 * @buf: output; 96 bytes always suffice.
 * Returns: the length written, or RELAY_EINVAL for ABSENT/INVALID states
 * or a too-small buffer.
 */
RELAY_EXTERN int relay_inv_state_format(const relay_inv_state *s, char *buf,
					size_t size);

/**
 * relay_inv_backoff_ms() - the retry delay after failed attempt @attempt:
 * 1 → 1 min, 2 → 2 min, 3 → 5 min, 4 and later → 10 min.
 */
RELAY_EXTERN int64_t relay_inv_backoff_ms(unsigned int attempt);

/**
 * relay_inv_claim_deadline() - now + min(timeout, 5 min); a timeout <= 0
 * counts as 5 min.
 */
RELAY_EXTERN int64_t relay_inv_claim_deadline(relay_wall_ms now,
					      int64_t timeout_ms);

/**
 * relay_inv_token() - fill @out with 32 lowercase hex chars from the
 * kernel CSPRNG (getrandom(2)) and a NUL.
 * Returns: 0 or RELAY_ERROR.
 */
RELAY_EXTERN int relay_inv_token(char out[RELAY_INV_TOKEN_LEN + 1]);

/**
 * relay_inv_key() - the state hash key
 * "relay:invocation:<E(stream)>:<E(group)>:<E(id)>", where E replaces
 * "%" with "%25" and ":" with "%3A".
 * Returns: the key, or NULL on allocation failure. Ownership: new; free
 * with relay_free().
 */
RELAY_EXTERN char *relay_inv_key(const char *stream, const char *group,
				 const char *id);

/** enum relay_inv_result - what a transition did or found. */
typedef enum relay_inv_result {
	RELAY_INV_R_CLAIMED = 0,      /* try_start: run attempt o->attempt */
	RELAY_INV_R_RUNNING = 1,      /* protected: another claim is live */
	RELAY_INV_R_BACKOFF = 2,      /* protected: wait for o->deadline_ms */
	RELAY_INV_R_OK = 3,           /* terminal: succeeded */
	RELAY_INV_R_EXHAUSTED = 4,    /* terminal: exhausted (o->dlq) */
	RELAY_INV_R_RECORDED = 5,     /* the fenced write happened */
	RELAY_INV_R_STALE = 6,        /* the claim was not ours: no write */
	RELAY_INV_R_RETAINED = 7,     /* hash retained: inert, no write */
	RELAY_INV_R_ALREADY = 8,      /* already done: no write */
	RELAY_INV_R_ABSENT = 9,       /* retain: no hash, nothing created */
} relay_inv_result;

/** struct relay_inv_outcome - the result of a transition. */
typedef struct relay_inv_outcome {
	relay_inv_result result;
	unsigned int attempt;                 /* claim or current attempt */
	int64_t deadline_ms;                  /* claim/backoff deadline */
	char token[RELAY_INV_TOKEN_LEN + 1];  /* claim or current token */
	int dlq;                              /* EXHAUSTED: entry written */
} relay_inv_outcome;

/**
 * relay_inv_cb - completion of a transition.
 * @status: 0 (then @o is valid) or a store error (RELAY_EBACKEND,
 *   RELAY_ETIMEOUT, RELAY_ECLOSED, RELAY_EPARSE for an unexpected reply).
 *   A try_start error means "do not run" (fail closed).
 * @o: borrowed for the call; NULL when @status is nonzero.
 */
typedef void (*relay_inv_cb)(int status, const relay_inv_outcome *o,
			     void *payload);

/**
 * relay_inv_try_start() - claim the next attempt of one invocation.
 * @b: the backend. @key: the state hash (relay_inv_key()).
 * @field: "<app>/<handler>". @now: wall clock, Unix ms.
 * @timeout_ms: the handler's timeout (claim deadline is capped at 5 min).
 *
 * Terminal → R_OK / R_EXHAUSTED; running or backing off with a deadline
 * after @now → R_RUNNING / R_BACKOFF; otherwise (elapsed, absent,
 * unparseable) → R_CLAIMED with attempt n+1 and a fresh token. Never
 * exhausts by itself. All strings are borrowed for the call.
 * Returns: 0 (callback runs once) or a negative code (it never runs).
 */
RELAY_EXTERN int relay_inv_try_start(relay_redis_backend *b, const char *key,
				     const char *field, relay_wall_ms now,
				     int64_t timeout_ms, relay_inv_cb cb,
				     void *payload);

/**
 * relay_inv_record_failure() - record failed attempt @attempt of claim
 * @token: next_attempt_at = @now + relay_inv_backoff_ms(@attempt).
 * Result R_RECORDED (o->deadline_ms is the next attempt), R_STALE or
 * R_RETAINED. Returns: as relay_inv_try_start().
 */
RELAY_EXTERN int relay_inv_record_failure(relay_redis_backend *b,
					  const char *key, const char *field,
					  unsigned int attempt,
					  const char *token,
					  relay_wall_ms now, relay_inv_cb cb,
					  void *payload);

/**
 * relay_inv_mark_complete() - record success of the current claim.
 * Never overwrites an exhausted state. Result R_RECORDED, R_STALE or
 * R_RETAINED.
 */
RELAY_EXTERN int relay_inv_mark_complete(relay_redis_backend *b,
					 const char *key, const char *field,
					 unsigned int attempt,
					 const char *token, relay_inv_cb cb,
					 void *payload);

/**
 * relay_inv_mark_exhausted() - mark the current claim exhausted
 * ("exhausted:<attempt>:<token>"). Repeating it for the same claim is
 * R_RECORDED without a write. Result R_RECORDED, R_STALE or R_RETAINED.
 */
RELAY_EXTERN int relay_inv_mark_exhausted(relay_redis_backend *b,
					  const char *key, const char *field,
					  unsigned int attempt,
					  const char *token, relay_inv_cb cb,
					  void *payload);

/**
 * relay_inv_claim_classification() - count the message's classification
 * once across redeliveries and replicas. Result R_CLAIMED (count it),
 * R_ALREADY or R_RETAINED. The outcome carries no token (o->token is
 * ""; the script's admission pin, which the engine passes, is not part
 * of this call).
 */
RELAY_EXTERN int relay_inv_claim_classification(relay_redis_backend *b,
						const char *key,
						relay_inv_cb cb,
						void *payload);

/**
 * relay_inv_retain() - switch a hash to terminal retention after its
 * message left the PEL: set __terminal and a TTL of @ttl_ms, once.
 * Result R_RECORDED, R_ALREADY (TTL untouched) or R_ABSENT (nothing
 * created).
 */
RELAY_EXTERN int relay_inv_retain(relay_redis_backend *b, const char *key,
				  int64_t ttl_ms, relay_inv_cb cb,
				  void *payload);

/** relay_inv_result_name() - "claimed", "stale", ...; static string. */
RELAY_EXTERN const char *relay_inv_result_name(relay_inv_result r);

#ifdef __cplusplus
}
#endif

#endif /* RELAY_INVOCATION_H */
