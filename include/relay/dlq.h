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
 * Filters (relay_dlq_filter) and the iterator (relay_dlq_iter) read a DLQ
 * the way relayctl's dlq commands do, so an embedder can build the same
 * tools.
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
 * Layout: stderr_tail was appended after trace, then source_fields after
 * stderr_tail (the soname moved with each, doc/api-stability.md); in
 * Redis both are written before trace, which stays the last field.
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
	const char *source_fields; /* optional, placeholders without an
				      event field only: the source entry's
				      fields, escaped and bounded, or
				      NULL */
} relay_dlq_entry;

#define RELAY_DLQ_SUMMARY_MAX 256 /* bytes of an oversized-event summary */
/* Bytes of the stderr_tail relayd writes: at most this many, after
 * escaping (a longer value written by another program still parses). */
#define RELAY_DLQ_STDERR_TAIL_MAX 4096
/* Bytes of the source_fields relayd writes, at most (after escaping). */
#define RELAY_DLQ_SOURCE_FIELDS_MAX 256

/**
 * relay_dlq_entry_validate() - check an entry before it is written.
 *
 * Every string present and non-empty (event may be empty: a malformed
 * message's raw value is stored verbatim), counts >= 0, timestamp RFC 3339,
 * app/handler both "-" with handler_attempts 0 or neither "-" with
 * handler_attempts >= 1, stderr_tail absent for a placeholder and never
 * empty, source_fields only in a placeholder and never empty, and an
 * oversized entry (reason "event
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

/**
 * relay_dlq_stderr_tail() - the stderr_tail field relayd writes for an
 * attempt that wrote @text to stderr (@len bytes: its lines joined by
 * '\n', as the engine keeps them; R-5): the last
 * RELAY_DLQ_STDERR_TAIL_MAX bytes, escaped and cut as the engine does.
 * So that a tool can show the entry before one is written (`relayctl app
 * run --attempts`).
 * Returns: new string (relay_free()), or NULL when it holds nothing but
 * line ends (relayd writes no field then) or on allocation failure.
 * Thread-safety: pure; safe from any thread.
 */
RELAY_EXTERN char *relay_dlq_stderr_tail(const char *text, size_t len);

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
 * The optional field timeline (the invocation's attempt timeline,
 * doc/redis-layout.md R-5) is accepted once and not kept in @out.
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


/* ---- Reading the DLQ: filters and a streaming iterator -------------- */

/**
 * relay_dlq_time_parse() - an RFC 3339 time into Unix milliseconds.
 * @s: "2026-12-04T10:00:00Z", "...T10:00:00.250+02:00" (fraction and
 *   offset optional as shown; 'T' may be 't' or ' ', 'Z' may be 'z').
 * @out: the time, when 0 is returned.
 * Returns: 0, or RELAY_EPARSE (not RFC 3339, or a day the month lacks).
 * Thread-safety: pure; safe from any thread.
 */
RELAY_EXTERN int relay_dlq_time_parse(const char *s, relay_wall_ms *out);

/**
 * relay_dlq_duration_parse() - a duration such as "2h", "1h30m", "90s",
 * "500ms", "2d", "1w" (digits and a unit, one or more of them; units ms
 * s m h d w) into milliseconds.
 * Returns: 0, or RELAY_EPARSE (empty, unknown unit, beyond ~31,000
 * years). Thread-safety: pure.
 */
RELAY_EXTERN int relay_dlq_duration_parse(const char *s, int64_t *out);

/**
 * relay_dlq_when_parse() - WHEN of the --since/--until filters: an RFC
 * 3339 time, or a duration ago, taken back from @now.
 * Returns: 0, or RELAY_EPARSE. Thread-safety: pure.
 */
RELAY_EXTERN int relay_dlq_when_parse(const char *s, relay_wall_ms now,
				      relay_wall_ms *out);

/**
 * relay_dlq_id_valid() - whether @id is a stream entry id ("MS" or
 * "MS-SEQ", 64-bit decimals). Returns: 1 or 0. Thread-safety: pure.
 */
RELAY_EXTERN int relay_dlq_id_valid(const char *id);

/**
 * relay_dlq_filter - which DLQ entries to read (opaque).
 *
 * Built with relay_dlq_filter_new() and the setters below; every
 * condition given must hold (AND). An empty filter matches every entry.
 * A filter is read, never changed, by the matching calls and by every
 * iterator opened over it, so one filter may serve several iterators at
 * once; changing it while an iterator uses it is not allowed.
 * Thread-safety: a filter is not locked; share a finished one between
 * threads only for reading, with a clock that is safe to read from them.
 */
typedef struct relay_dlq_filter relay_dlq_filter;

/** enum relay_dlq_malformed_mode - what a filter does with entries that
 * cannot be parsed (relay_dlq_filter_malformed()). */
typedef enum relay_dlq_malformed_mode {
	RELAY_DLQ_MALFORMED_ANY = 0,   /* well-formed and malformed */
	RELAY_DLQ_MALFORMED_ONLY = 1,  /* only the malformed ones */
	RELAY_DLQ_MALFORMED_NONE = 2,  /* only the well-formed ones */
} relay_dlq_malformed_mode;

/**
 * relay_dlq_filter_new() - an empty filter, the system clock.
 * @out: the filter (new: relay_dlq_filter_free()).
 * Returns: 0 or RELAY_ENOMEM.
 */
RELAY_EXTERN int relay_dlq_filter_new(relay_dlq_filter **out);

/** relay_dlq_filter_free() - free @f and what it holds; NULL-safe. */
RELAY_EXTERN void relay_dlq_filter_free(relay_dlq_filter *f);

/**
 * relay_dlq_filter_clock() - the clock durations ago ("2h") are taken
 * back from: read once per iterator, when it opens, and at each
 * relay_dlq_filter_match() call and relay_dlq_filter_check().
 * @clock: borrowed (must outlive @f); NULL: the system clock.
 */
RELAY_EXTERN void relay_dlq_filter_clock(relay_dlq_filter *f,
					 const relay_clock *clock);

/**
 * relay_dlq_filter_app(), relay_dlq_filter_handler() - only entries whose
 * app (handler) is exactly @name (copied).
 * Returns: 0, RELAY_EINVAL (@name NULL or empty, or already set) or
 * RELAY_ENOMEM.
 */
RELAY_EXTERN int relay_dlq_filter_app(relay_dlq_filter *f, const char *name);
RELAY_EXTERN int relay_dlq_filter_handler(relay_dlq_filter *f,
					  const char *name);

/**
 * relay_dlq_filter_reason() - only entries whose reason matches @ere, a
 * POSIX extended regular expression searched anywhere in it,
 * case-sensitive.
 * Returns: 0, RELAY_EINVAL (already set, NULL or empty), RELAY_EPARSE
 * (it does not compile: @err says why) or RELAY_ENOMEM.
 */
RELAY_EXTERN int relay_dlq_filter_reason(relay_dlq_filter *f,
					 const char *ere, relay_error *err);

/**
 * relay_dlq_filter_since(), relay_dlq_filter_until() - only entries
 * written at or after (at or before) @when: an RFC 3339 time or a
 * duration ago (relay_dlq_when_parse()), a duration measured back from
 * the filter's clock when it is read (above). An entry's time is its
 * timestamp field; a malformed entry's, the time in its id.
 * Returns: 0, RELAY_EINVAL (already set, NULL) or RELAY_EPARSE (neither
 * form; @err says so).
 */
RELAY_EXTERN int relay_dlq_filter_since(relay_dlq_filter *f,
					const char *when, relay_error *err);
RELAY_EXTERN int relay_dlq_filter_until(relay_dlq_filter *f,
					const char *when, relay_error *err);

/**
 * relay_dlq_filter_id() - add @id to the entry ids wanted (any of them);
 * "MS" stands for "MS-0". The iterator reads only the range between the
 * smallest and the largest id given.
 * relay_dlq_filter_original_id() - the same for the original message's
 * stream id recorded in the entry (field original_id).
 * Returns: 0, RELAY_EINVAL (not a stream entry id) or RELAY_ENOMEM.
 */
RELAY_EXTERN int relay_dlq_filter_id(relay_dlq_filter *f, const char *id);
RELAY_EXTERN int relay_dlq_filter_original_id(relay_dlq_filter *f,
					      const char *id);

/** relay_dlq_filter_malformed() - keep malformed entries (ANY, the
 * default), only them, or none of them. */
RELAY_EXTERN void relay_dlq_filter_malformed(relay_dlq_filter *f,
					     relay_dlq_malformed_mode mode);

/**
 * relay_dlq_filter_limit() - an iterator over @f ends after the first
 * @n matches (RELAY_DLQ_ITEM_ENTRY and RELAY_DLQ_ITEM_MALFORMED items,
 * over all its keys); 0 (the default): no limit. Undecided items
 * (below) never count.
 */
RELAY_EXTERN void relay_dlq_filter_limit(relay_dlq_filter *f, uint64_t n);

/**
 * relay_dlq_filter_on_fields() - whether @f tests an entry's fields
 * (app, handler, reason or original id): what a malformed entry cannot
 * be judged by. Returns: 1 or 0.
 */
RELAY_EXTERN int relay_dlq_filter_on_fields(const relay_dlq_filter *f);

/**
 * relay_dlq_filter_check() - what needs every condition: since later
 * than until (no entry can match), or RELAY_DLQ_MALFORMED_ONLY with a
 * filter on fields (a malformed entry has none to test).
 * Returns: 0 or RELAY_EINVAL with @err saying which.
 */
RELAY_EXTERN int relay_dlq_filter_check(const relay_dlq_filter *f,
					relay_error *err);

/** enum relay_dlq_verdict - what a filter says of one entry. */
typedef enum relay_dlq_verdict {
	RELAY_DLQ_NO = 0,         /* it does not match */
	RELAY_DLQ_MATCH = 1,      /* it matches */
	RELAY_DLQ_UNDECIDED = 2,  /* malformed, and only a filter on fields
				     could say: not a match, but worth
				     reporting */
} relay_dlq_verdict;

/**
 * relay_dlq_filter_match() - the verdict on well-formed entry @r (NO or
 * MATCH). relay_dlq_filter_match_malformed() - the verdict on the
 * malformed entry @id: --id, --since and --until judge it by its id;
 * when they pass and a filter on fields was given it is UNDECIDED.
 * Thread-safety: as the filter (reads the clock when a duration ago was
 * given).
 */
RELAY_EXTERN relay_dlq_verdict
relay_dlq_filter_match(const relay_dlq_filter *f, const relay_dlq_record *r);
RELAY_EXTERN relay_dlq_verdict
relay_dlq_filter_match_malformed(const relay_dlq_filter *f, const char *id);

/** enum relay_dlq_order - the order an iterator reads a DLQ in. */
typedef enum relay_dlq_order {
	RELAY_DLQ_OLDEST_FIRST = 0,
	RELAY_DLQ_NEWEST_FIRST = 1,
} relay_dlq_order;

/** enum relay_dlq_item_kind - what relay_dlq_iter_next() found. */
typedef enum relay_dlq_item_kind {
	RELAY_DLQ_ITEM_ENTRY = 0,      /* a well-formed entry that matches */
	RELAY_DLQ_ITEM_MALFORMED = 1,  /* an entry relay cannot parse, which
					  the filter matched by its id */
	RELAY_DLQ_ITEM_UNDECIDED = 2,  /* one it cannot parse and a filter
					  on fields cannot judge: not a
					  match (never counts against the
					  limit), reported so that no entry
					  goes unseen */
} relay_dlq_item_kind;

/**
 * struct relay_dlq_item - one entry found by an iterator. Everything is
 * borrowed from the iterator until the next relay_dlq_iter_next() or
 * relay_dlq_iter_close().
 */
typedef struct relay_dlq_item {
	relay_dlq_item_kind kind;
	size_t key;                   /* index of its DLQ in the keys given */
	const char *id;               /* the entry id */
	const relay_dlq_record *rec;  /* RELAY_DLQ_ITEM_ENTRY: the entry;
					 otherwise NULL */
	const char *error;            /* malformed: what is wrong (text
					 from Redis, may hold any byte);
					 otherwise NULL */
	const relay_redis_reply *raw; /* the entry as read, [id, [name,
					 value, ...]] */
} relay_dlq_item;

/** Entries read per XRANGE/XREVRANGE by default. */
#define RELAY_DLQ_ITER_PAGE 500

typedef struct relay_dlq_iter relay_dlq_iter;

/**
 * relay_dlq_iter_open() - iterate the DLQ streams @keys (in the order
 * given, each in @order) with filter @f, a page at a time: memory stays
 * that of one page however long the DLQ is. Nothing is read until the
 * first relay_dlq_iter_next(). Entries added or removed meanwhile may or
 * may not be seen; none is seen twice.
 * @out: the iterator (new: relay_dlq_iter_close()).
 * @b: the backend (borrowed; synchronous calls, relay/redis.h).
 * @keys, @nkeys: DLQ stream keys (relay_dlq_key()); borrowed, like @f,
 *   until the iterator is closed. @f: NULL matches everything.
 * Returns: 0, RELAY_EINVAL (no key) or RELAY_ENOMEM.
 * Thread-safety: one iterator per thread; the backend's rule applies.
 */
RELAY_EXTERN int relay_dlq_iter_open(relay_dlq_iter **out,
				     relay_redis_backend *b,
				     const char *const *keys, size_t nkeys,
				     const relay_dlq_filter *f,
				     relay_dlq_order order);

/**
 * relay_dlq_iter_page() - read @n entries per command (1 to 10000;
 * RELAY_DLQ_ITER_PAGE by default). Before the first
 * relay_dlq_iter_next(). Returns: 0 or RELAY_EINVAL.
 */
RELAY_EXTERN int relay_dlq_iter_page(relay_dlq_iter *it, size_t n);

/**
 * relay_dlq_iter_next() - the next item the filter keeps.
 * @item: filled when 1 is returned (borrowed, above).
 * @err: names the command and the problem on an error.
 * Returns: 1 (an item), 0 (the end: every key read, or the limit
 * reached), or a store error (RELAY_EBACKEND for a reply that is not a
 * stream range, RELAY_ETYPE-like Redis errors as the backend reports
 * them, RELAY_ENOMEM). A malformed entry is an item, never an error.
 * After an error or the end, it keeps returning the same.
 */
RELAY_EXTERN int relay_dlq_iter_next(relay_dlq_iter *it,
				     relay_dlq_item *item, relay_error *err);

/**
 * relay_dlq_iter_matched() - how many matches (items that count against
 * the limit) @it has returned so far.
 */
RELAY_EXTERN uint64_t relay_dlq_iter_matched(const relay_dlq_iter *it);

/** relay_dlq_iter_close() - free @it and its page; NULL-safe. */
RELAY_EXTERN void relay_dlq_iter_close(relay_dlq_iter *it);

#ifdef __cplusplus
}
#endif

#endif /* RELAY_DLQ_H */
