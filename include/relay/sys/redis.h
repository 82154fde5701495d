/*
 * relay/sys/redis.h - the Redis backend vtable, for backend authors.
 *
 * A backend implements generic commands (RESP2 semantics of Redis 7 for the
 * commands librelay sends: streams, consumer groups, hashes, TTLs) and the
 * atomic invocation-state transitions listed in enum relay_redis_script.
 * The hiredis backend runs each transition as one EVALSHA of the script in
 * librelay/lua/; the memory backend runs C code. Both must agree; the
 * shared behavioural suite in tests/redis/ proves it.
 *
 * Callback rule: a slot that returns nonzero never runs
 * the callback; zero means it runs exactly once (RELAY_ECLOSED when the
 * backend is freed first).
 */
#ifndef RELAY_SYS_REDIS_H
#define RELAY_SYS_REDIS_H

#include "../redis.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * enum relay_redis_script - the atomic transitions (doc/redis-layout.md
 *
 *
 * Every transition replies with an ARRAY of four elements
 * [result (string), attempt (integer), deadline_ms (integer), token
 * (string)]; elements that do not apply are 0 or "". Arguments are passed
 * as strings; integers in decimal. KEYS[1] is the invocation hash unless
 * the op says otherwise.
 *
 * TRY_START      ARGV field now_ms timeout_ms token
 *                result claimed|running|backoff|ok|exhausted|exhausted_dlq|
 *                retained; attempt/deadline/token describe the new claim
 *                (claimed) or the current state.
 * RECORD_FAILURE ARGV field attempt token now_ms backoff_ms
 *                result recorded|stale|retained; deadline = next attempt.
 * MARK_COMPLETE  ARGV field attempt token       result recorded|stale|retained
 * MARK_EXHAUSTED ARGV field attempt token       result recorded|stale|retained
 * CLAIM_CLASSIFICATION [ARGV pin]              result claimed|already|retained
 *                a non-empty pin (a schedule occurrence's admission:
 *                handler, timeout, retries) is stored in the reserved
 *                field __schedule unless one is stored already; the
 *                stored pin (or "") is the token element. A version 1
 *                backend may ignore the pin and reply "": the engine
 *                then uses the current template (no pinning).
 * RETAIN         ARGV ttl_ms                    result recorded|already|absent
 * DLQ_PERSIST    KEYS[2] the DLQ stream; ARGV field attempt token
 *                name value [name value ...]; field "" = placeholder
 *                entry. result written (token = new entry id)|already|
 *                stale|retained; an ERROR reply (e.g. WRONGTYPE) when the
 *                XADD fails, with the marker untouched.
 * SCHEDULE_PUBLISH (version 2) KEYS[1] the occurrence marker
 *                relay:<stream>:schedule:<occurrence_id>, KEYS[2] the
 *                source stream, optional KEYS[3] (numkeys 3; sent only
 *                to the built-in backends, on a single node) the
 *                pre-cluster marker
 *                relay:schedule:<occurrence_id>; ARGV ttl_ms envelope. If
 *                a marker exists: result duplicate; else XADD KEYS[2] *
 *                event <envelope>, SET the marker(s) with the TTL, result
 *                published (token =
 *                the new entry id). Not a state-hash transition: KEYS[1]
 *                is a string key.
 * COMPLETE_ACK   (version 3) KEYS[2] the source stream; ARGV field
 *                attempt token group id ttl_ms. MARK_COMPLETE's decision;
 *                when recorded: HSET field ok, PERSIST, then XACK stream
 *                group id, then (only if the XACK did not fail) set
 *                __terminal and PEXPIRE ttl_ms. result recorded|stale|
 *                retained (stale/retained: nothing written, nothing
 *                acknowledged); an ERROR reply when the XACK fails, with
 *                the field already "ok" and no retention.
 * STREAM_TRIM    (version 3) KEYS[1] a stream; ARGV cutoff_ms limit mode
 *                (mode "groups" or "age"). Not a state-hash transition:
 *                the retention step behind relay_redis_stream_trim()
 *                (relay/redis.h), which documents the bound. Replies
 *                [trimmed (integer), length (integer), bound, first
 *                entry id or "", oldest pending id or "", groups
 *                (integer)]; an absent key replies [0, 0, "", "", "", 0].
 *                A backend may trim fewer entries than the bound allows
 *                (whole nodes only), never more; limit 0 trims nothing.
 * CLAIM_START    (version 4) ARGV field now_ms timeout_ms token, as
 *                TRY_START. CLAIM_CLASSIFICATION (without a pin) and
 *                TRY_START of @field in one step: the reply is
 *                TRY_START's four elements plus a fifth, the
 *                classification's result claimed|already; a retained
 *                hash replies [retained, 0, 0, "", retained] and writes
 *                nothing. The classification is recorded in the same
 *                step as the claim, never after it.
 *
 * Versioning: values are only ever appended. A backend declaring
 * version N is never asked for an op added in a later version
 * (SCHEDULE_PUBLISH: 2, STREAM_TRIM: 3, CLAIM_START: 4): the wrapper answers
 * RELAY_EBACKEND without calling its script slot, so a backend built
 * against an older header keeps working for everything else.
 */
typedef enum relay_redis_script {
	RELAY_REDIS_SCRIPT_TRY_START = 0,
	RELAY_REDIS_SCRIPT_RECORD_FAILURE = 1,
	RELAY_REDIS_SCRIPT_MARK_COMPLETE = 2,
	RELAY_REDIS_SCRIPT_MARK_EXHAUSTED = 3,
	RELAY_REDIS_SCRIPT_CLAIM_CLASSIFICATION = 4,
	RELAY_REDIS_SCRIPT_RETAIN = 5,
	RELAY_REDIS_SCRIPT_DLQ_PERSIST = 6,
	/* version 2 */
	RELAY_REDIS_SCRIPT_SCHEDULE_PUBLISH = 7,
	/* version 3: mark_complete + XACK + retain in one step; KEYS state
	 * hash, stream; ARGV field attempt token group id ttl_ms */
	RELAY_REDIS_SCRIPT_COMPLETE_ACK = 8,
	/* version 3: the safe retention step (relay_redis_stream_trim()) */
	RELAY_REDIS_SCRIPT_STREAM_TRIM = 9,
	/* version 4: claim_classification + try_start in one step; ARGV
	 * as TRY_START */
	RELAY_REDIS_SCRIPT_CLAIM_START = 10,
	RELAY_REDIS_SCRIPT_COUNT_ = 11
} relay_redis_script;

/**
 * struct relay_redis_backend - a Redis backend (versioned vtable).
 *
 * Implementations embed this struct first, initialise it with
 * RELAY_REDIS_BACKEND_INIT or relay_redis_backend_init() (the version
 * comes first, as in relay/sys/runtime.h), and fill every slot of the
 * version they declare. Core code calls the slots only through the
 * relay_redis_* and relay__redis_* wrappers.
 */
struct relay_redis_backend {
	unsigned int version;  /* RELAY_REDIS_BACKEND_VERSION */
	const char *name;      /* registry key: "hiredis", "memory" */

	/* One command; argv/argvlen borrowed for the call. */
	int (*command)(relay_redis_backend *b, int argc,
		       const char *const *argv, const size_t *argvlen,
		       relay_redis_reply_cb cb, void *payload);

	/* One atomic transition; the first @numkeys of argv are keys. */
	int (*script)(relay_redis_backend *b, relay_redis_script op,
		      int numkeys, int argc, const char *const *argv,
		      const size_t *argvlen, relay_redis_reply_cb cb,
		      void *payload);

	/*
	 * Drive private I/O until *done is nonzero; RELAY_EINVAL when the
	 * backend is driven by a host loop. NULL: replies are immediate.
	 */
	int (*wait)(relay_redis_backend *b, const int *done);

	/* Last error message, borrowed; never NULL. */
	const char *(*errstr)(const relay_redis_backend *b);

	/* Fail in-flight callbacks with RELAY_ECLOSED, then free. */
	void (*free)(relay_redis_backend *b);
	/* version 1 ends here; later versions append only. Version 2 adds
	 * no slot: it declares that script() implements
	 * RELAY_REDIS_SCRIPT_SCHEDULE_PUBLISH. Version 3 adds no slot: it
	 * declares RELAY_REDIS_SCRIPT_COMPLETE_ACK (the engine uses
	 * MARK_COMPLETE, XACK and RETAIN apart with an older backend) and
	 * RELAY_REDIS_SCRIPT_STREAM_TRIM. Version 4 adds no slot: it
	 * declares RELAY_REDIS_SCRIPT_CLAIM_START (the engine sends
	 * CLAIM_CLASSIFICATION and TRY_START apart with an older
	 * backend). */
};

#define RELAY_REDIS_BACKEND_VERSION 4
#define RELAY_REDIS_BACKEND_INIT \
	{ .version = RELAY_REDIS_BACKEND_VERSION }

/**
 * relay_redis_backend_init() - initialise a backend table.
 * @b: caller-owned table (usually the first member of the backend).
 * @version: RELAY_REDIS_BACKEND_VERSION (or an older version the backend
 *   implements).
 *
 * Zeroes @b and sets its version; the backend then fills name and the
 * slots of that version, and relay_redis_backend_check() accepts it.
 * Like RELAY_REDIS_BACKEND_INIT, it leaves every slot added later NULL,
 * so a backend built against this header keeps meaning what it meant.
 * Returns: 0, or RELAY_EINVAL for version 0 or a version newer than
 * RELAY_REDIS_BACKEND_VERSION (@b untouched).
 * Thread-safety: reentrant.
 */
RELAY_EXTERN int relay_redis_backend_init(relay_redis_backend *b,
					  unsigned int version);

/**
 * relay_redis_backend_check() - validate a backend's version and slots.
 * Returns: 0 or RELAY_EINVAL (version 0, too new, or a missing slot).
 */
RELAY_EXTERN int relay_redis_backend_check(const relay_redis_backend *b);

/**
 * relay_redis_reply_new() - allocate a reply element for a backend to fill.
 * @type: its type. Returns: a zeroed reply, or NULL. Ownership: new.
 */
RELAY_EXTERN relay_redis_reply *relay_redis_reply_new(
	relay_redis_reply_type type);

/*
 * The library's allocator for backends. A reply handed to a callback is
 * freed by relay_redis_reply_free(), which frees every part (the element
 * array, str, the nodes) through the allocator installed with
 * relay_set_allocator(). So everything a backend puts into a reply must
 * come from these functions (or relay_redis_reply_new()), never from
 * malloc(): with a custom allocator the two would not match. Safe from
 * any thread, like the allocator installed.
 */

/**
 * relay_redis_malloc() - @n bytes from the library's allocator.
 * Returns: the block (free with relay_free(), or as part of a reply), or
 * NULL on allocation failure. Ownership: new.
 */
RELAY_EXTERN void *relay_redis_malloc(size_t n);

/**
 * relay_redis_realloc() - resize a block of relay_redis_malloc() (NULL:
 * allocate). Returns: the block, or NULL (then @p is unchanged).
 */
RELAY_EXTERN void *relay_redis_realloc(void *p, size_t n);

/**
 * relay_redis_reply_set_str() - copy @len bytes of @s (NUL bytes kept, a
 * NUL appended) into r->str and set r->len, replacing and freeing any
 * previous str. For STRING, STATUS and ERROR replies.
 * Returns: 0, RELAY_EINVAL (@r or @s NULL), or RELAY_ENOMEM (@r unchanged).
 */
RELAY_EXTERN int relay_redis_reply_set_str(relay_redis_reply *r,
					   const char *s, size_t len);

/**
 * relay_redis_reply_set_elements() - give an ARRAY reply @n zeroed element
 * slots (r->element, r->elements = @n) for the backend to fill with
 * relay_redis_reply_new() nodes; a slot left NULL is freed as nothing.
 * Replaces and frees any previous elements.
 * Returns: 0, RELAY_EINVAL (@r NULL), or RELAY_ENOMEM (@r unchanged).
 */
RELAY_EXTERN int relay_redis_reply_set_elements(relay_redis_reply *r,
						size_t n);

#ifdef __cplusplus
}
#endif

#endif /* RELAY_SYS_REDIS_H */
