/*
 * relay/dlq.h - the dead-letter queue (doc/redis-layout.md ).
 *
 * Stream "relay:<stream>:dlq"; one entry per exhausted invocation, or one
 * placeholder per malformed/oversized message. An entry is appended and
 * the invocation's marker upgraded to "exhausted:<n>:<token>:dlq" (or
 * __dlq_placeholder set) in one atomic operation, so a redelivery writes
 * only the entries still missing.
 *
 * The text helpers are pure and safe from any thread; persist, list, get
 * and delete follow the threading rule of their backend (relay/redis.h).
 */
#ifndef RELAY_DLQ_H
#define RELAY_DLQ_H

#include "common.h"
#include "clock.h"
#include "redis.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * struct relay_dlq_entry - the fields of one DLQ entry.
 *
 * Strings are borrowed when passed to relay_dlq_persist(); in a
 * relay_dlq_record they are owned by the record. trace and stderr_tail are
 * NULL when absent. Placeholders use app = handler = "-",
 * handler_attempts = 0 and no stderr_tail.
 *
 * Layout: stderr_tail was appended after trace (the soname moved with
 * it, doc/api-stability.md); in Redis it is written before trace, which
 * stays the last field.
 */
typedef struct relay_dlq_entry {
	const char *original_stream;
	const char *original_id;
	const char *group;
	const char *consumer;
	const char *event;      /* event JSON, "-", or an oversized summary */
	const char *reason;
	const char *app;
	const char *handler;
	long long deliveries;        /* diagnostic PEL delivery count */
	long long handler_attempts;  /* real executions */
	const char *timestamp;  /* RFC 3339 UTC */
	const char *trace;      /* optional lineage, or NULL */
	const char *stderr_tail; /* optional: the end of the last attempt's
				    stderr, escaped, or NULL */
} relay_dlq_entry;

#define RELAY_DLQ_SUMMARY_MAX 256 /* bytes of an oversized-event summary */
/* Bytes of the stderr_tail relayd writes: at most this many, after
 * escaping (a longer value written by another program still parses). */
#define RELAY_DLQ_STDERR_TAIL_MAX 4096

/**
 * relay_dlq_entry_validate() - check an entry before it is written.
 *
 * Every string present and non-empty (event may be empty: a malformed
 * message's raw value is stored verbatim), counts >= 0, timestamp RFC 3339,
 * app/handler both "-" with handler_attempts 0 or neither "-" with
 * handler_attempts >= 1, stderr_tail absent for a placeholder and never
 * empty, and an oversized entry (reason "event
 * oversized: ...") carries a summary of at most RELAY_DLQ_SUMMARY_MAX
 * bytes as its event, never the payload.
 * Returns: 0 or RELAY_EINVAL with @err naming the field.
 */
RELAY_EXTERN int relay_dlq_entry_validate(const relay_dlq_entry *e,
					  relay_error *err);

/**
 * relay_dlq_key() - "relay:<stream>:dlq".
 * Returns: new string (relay_free()), or NULL on allocation failure.
 */
RELAY_EXTERN char *relay_dlq_key(const char *stream);

/**
 * relay_dlq_timestamp() - format @ms as "YYYY-MM-DDTHH:MM:SS.mmmZ".
 * @buf: at least 32 bytes. Returns: @buf.
 */
RELAY_EXTERN char *relay_dlq_timestamp(relay_wall_ms ms, char *buf,
				       size_t size);

/**
 * relay_dlq_reason_exhausted() - the exhaustion reason text:
 * 'invocation exhausted: app "A" handler "H" exhausted after N handler
 * attempts: <last failure>'.
 * Returns: new string (relay_free()), or NULL.
 */
RELAY_EXTERN char *relay_dlq_reason_exhausted(const char *app,
					      const char *handler,
					      unsigned int attempts,
					      const char *last_failure);

/** enum relay_dlq_malformed - why a message could not be decoded. */
typedef enum relay_dlq_malformed {
	RELAY_DLQ_MISSING_EVENT = 0,  /* "missing 'event' field" */
	RELAY_DLQ_NOT_STRING = 1,     /* "'event' field is not a string" */
	RELAY_DLQ_DECODE = 2,         /* "decode event: <detail>" */
	RELAY_DLQ_NOT_OBJECT = 3,     /* "'event' is not a JSON object" */
	RELAY_DLQ_OVERSIZED = 4,      /* "event oversized: raw event ..." */
} relay_dlq_malformed;

/**
 * relay_dlq_reason_malformed() - the reason text of a placeholder.
 * @kind: the problem.
 * @detail: the JSON parser's message (RELAY_DLQ_DECODE), else ignored.
 * @event_bytes, @max_event_bytes: sizes (RELAY_DLQ_OVERSIZED).
 * Returns: new string, or NULL.
 */
RELAY_EXTERN char *relay_dlq_reason_malformed(relay_dlq_malformed kind,
					      const char *detail,
					      size_t event_bytes,
					      size_t max_event_bytes);

/**
 * relay_dlq_oversized_summary() - the event stored for an oversized
 * message: {"relay_summary":"event_oversized","event_bytes":N,
 * "max_event_bytes":M} (never longer than RELAY_DLQ_SUMMARY_MAX).
 * Returns: new string, or NULL.
 */
RELAY_EXTERN char *relay_dlq_oversized_summary(size_t event_bytes,
					       size_t max_event_bytes);

/** enum relay_dlq_persist_result - what relay_dlq_persist() did. */
typedef enum relay_dlq_persist_result {
	RELAY_DLQ_WRITTEN = 0,   /* entry appended, marker upgraded */
	RELAY_DLQ_ALREADY = 1,   /* marker already upgraded: no write */
	RELAY_DLQ_STALE = 2,     /* the marker is not our exhausted claim */
	RELAY_DLQ_RETAINED = 3,  /* hash retained: inert, no write */
} relay_dlq_persist_result;

/**
 * relay_dlq_persist_cb - completion of relay_dlq_persist().
 * @status: 0, RELAY_ETYPE (the DLQ key holds another type; nothing was
 *   written), or a store error.
 * @id: the new entry's id when RELAY_DLQ_WRITTEN, else NULL; borrowed.
 */
typedef void (*relay_dlq_persist_cb)(int status,
				     relay_dlq_persist_result result,
				     const char *id, void *payload);

/**
 * relay_dlq_persist() - validate and write one DLQ entry atomically.
 * @b: the backend.
 * @inv_key: the message's state hash. @dlq_key: relay_dlq_key(stream).
 * @field: "<app>/<handler>" of the exhausted invocation, or NULL for a
 *   placeholder (malformed/oversized message).
 * @attempt, @token: the exhausted claim (ignored for placeholders).
 * @e: the entry; borrowed for the call.
 *
 * Returns: 0 (callback runs once), RELAY_EINVAL (invalid entry; the
 * callback never runs) or another negative code.
 */
RELAY_EXTERN int relay_dlq_persist(relay_redis_backend *b,
				   const char *inv_key, const char *dlq_key,
				   const char *field, unsigned int attempt,
				   const char *token,
				   const relay_dlq_entry *e,
				   relay_dlq_persist_cb cb, void *payload);

/** struct relay_dlq_record - one parsed entry; every string owned. */
typedef struct relay_dlq_record {
	char *id;           /* stream entry id */
	relay_dlq_entry e;  /* fields; strings owned by the record */
} relay_dlq_record;

/**
 * relay_dlq_parse() - parse one XRANGE element [id, [name, value, ...]].
 * @out: filled on success; free with relay_dlq_record_clear().
 * @r: the reply element (borrowed).
 * @err: names the entry id and the offending field on failure.
 * Returns: 0 or RELAY_EPARSE (missing, duplicate, unknown or malformed
 * field).
 */
RELAY_EXTERN int relay_dlq_parse(relay_dlq_record *out,
				 const relay_redis_reply *r,
				 relay_error *err);

/** relay_dlq_record_clear() - free a record's strings; NULL-safe. */
RELAY_EXTERN void relay_dlq_record_clear(relay_dlq_record *rec);

/** relay_dlq_records_free() - free an array of @n records; NULL-safe. */
RELAY_EXTERN void relay_dlq_records_free(relay_dlq_record *recs, size_t n);

/**
 * relay_dlq_list_sync() - read up to @count entries from @start, oldest
 * first. @start: "-" (the beginning), an id (inclusive), or "(" and an id
 * (exclusive: the next page after the last id shown).
 * @out, @n: new array of parsed records (relay_dlq_records_free()).
 * Returns: 0, RELAY_EPARSE (a malformed entry, named in @err) or a store
 * error.
 */
RELAY_EXTERN int relay_dlq_list_sync(relay_redis_backend *b,
				     const char *dlq_key, const char *start,
				     size_t count, relay_dlq_record **out,
				     size_t *n, relay_error *err);

/**
 * relay_dlq_get_sync() - read the entry @id.
 * Returns: 0, RELAY_ENOTFOUND, RELAY_EPARSE or a store error.
 * Ownership: @out filled with owned strings (relay_dlq_record_clear()).
 */
RELAY_EXTERN int relay_dlq_get_sync(relay_redis_backend *b,
				    const char *dlq_key, const char *id,
				    relay_dlq_record *out, relay_error *err);

/**
 * relay_dlq_delete_sync() - delete the entry @id.
 * Returns: 0, RELAY_ENOTFOUND or a store error.
 */
RELAY_EXTERN int relay_dlq_delete_sync(relay_redis_backend *b,
				       const char *dlq_key, const char *id,
				       relay_error *err);

#ifdef __cplusplus
}
#endif

#endif /* RELAY_DLQ_H */
