/*
 * librelay/inv/inv.h - private: the pure part of the invocation state and
 * the DLQ (no I/O): the reserved hash fields, the decision of every
 * invocation-state transition, the script result names, the DLQ entry's
 * fields. The memory backend (librelay/redis/memory_script.c) runs the
 * decisions; the scripts in librelay/lua/ mirror them line by line for a
 * real server; the operations over a Redis backend are
 * librelay/invops/. The shared behavioural suite proves the two agree.
 */
#ifndef RELAY__INV_H
#define RELAY__INV_H

#include "relay/invocation.h"
#include "relay/dlq.h"

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

/* Script result names on the wire (index = relay_inv_result). */
const char *relay__inv_result_wire(relay_inv_result r);
int relay__inv_result_parse(const char *s, relay_inv_result *out);

/* Parse a decimal integer strictly: 1 to 18 digits, no sign. */
int relay__parse_i64(const char *s, size_t len, int64_t *out);

/* A DLQ entry's fields in the order they are written (source_fields,
 * stderr_tail and trace optional, trace last; the first
 * RELAY__DLQ_NREQUIRED are required). */
#define RELAY__DLQ_NFIELDS 14
#define RELAY__DLQ_NREQUIRED 11
#define RELAY__DLQ_F_EVENT 4  /* index of "event" */
extern const char *const relay__dlq_field_names[RELAY__DLQ_NFIELDS];

/*
 * relay_dlq_entry_validate() with the event's length given: @event_len
 * bytes of e->event, which may hold NUL bytes (a raw stream value is
 * stored byte-exact); the other strings are C strings.
 */
int relay__dlq_entry_check(const relay_dlq_entry *e, size_t event_len,
			   relay_error *err);

/*
 * relay__dlq_source_fields() - the source_fields value of a placeholder
 * (dlq_source.c; R-5): the entry's @n fields as "NAME=VALUE" separated by
 * spaces, each value cut to its first 64 bytes ("..." marks a cut), every
 * byte below 0x20, 0x7f and every byte outside valid UTF-8 written \xNN;
 * at most RELAY_DLQ_SOURCE_FIELDS_MAX bytes, whole pairs only (" ..."
 * when the rest was left out). Returns: new string, or NULL (no memory,
 * or @n is 0).
 */
char *relay__dlq_source_fields(char *const *names, char *const *values,
			       const size_t *value_lens, size_t n);

/* Bytes of the valid UTF-8 sequence at @p (at most @n bytes), or 0. */
size_t relay__utf8_seq_len(const unsigned char *p, size_t n);

/*
 * The stderr tail of one attempt (dlq_tail.c; R-5 stderr_tail): the last
 * RELAY_DLQ_STDERR_TAIL_MAX raw bytes of the lines the handler wrote to
 * stderr, joined by '\n'. buf is allocated on the first byte (2 * MAX, so
 * keeping the window costs O(1) per byte) and freed by _reset(); a zeroed
 * struct is an empty tail.
 */
typedef struct relay__tail {
	char *buf;      /* raw bytes, or NULL */
	size_t len;     /* bytes in buf */
	int open;       /* the last line had no end yet (partial) */
	int cut;        /* bytes were dropped before buf */
} relay__tail;

/* Add one output line (or a piece of one, @partial). 0 or RELAY_ENOMEM
 * (the tail is then left empty: it is diagnostic only). */
int relay__tail_add(relay__tail *t, const char *bytes, size_t len,
		    int partial);
/* Empty the tail and free its buffer. */
void relay__tail_reset(relay__tail *t);
/*
 * The tail as stored: valid UTF-8 of at most RELAY_DLQ_STDERR_TAIL_MAX
 * bytes, starting at a line start when anything was cut; every byte below
 * 0x20 but '\n' and '\t', 0x7f, and every byte that is not part of valid
 * UTF-8 is written \xNN (lowercase hex). Trailing line ends are dropped.
 * Returns: new string (relay__free()), or NULL when the tail holds
 * nothing but line ends (no field is written) or on allocation failure.
 */
char *relay__tail_text(const relay__tail *t);

#endif /* RELAY__INV_H */
