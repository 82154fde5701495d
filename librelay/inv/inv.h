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
/* The attempt timeline of invocation field F is the field PREFIX F. */
#define RELAY__INV_F_TIMELINE "__timeline:"

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

/*
 * The attempt timeline (timeline.c; R-3 __timeline:<field>): one entry per
 * attempt of an invocation, one line of at most RELAY__TL_ENTRY_MAX - 1
 * bytes, entries joined by '\n', the last RELAY__TL_MAX kept. Written by
 * the script that records the attempt's outcome (record_failure,
 * mark_complete, mark_exhausted, complete_ack) when it writes the field,
 * and copied into the DLQ entry (timeline).
 */
#define RELAY__TL_MAX 16
#define RELAY__TL_ENTRY_MAX 1024

typedef enum relay__tl_outcome {
	RELAY__TL_OK = 0,       /* exit status 0 */
	RELAY__TL_FAILED,       /* exit status or signal */
	RELAY__TL_TIMEOUT,      /* killed at its timeout */
	RELAY__TL_NOT_STARTED,  /* the run could not start: why */
} relay__tl_outcome;

/* One attempt as the engine saw it; strings borrowed, NULL or "" when
 * unknown. */
typedef struct relay__tl_attempt {
	unsigned int attempt;
	int64_t start_ms, end_ms;    /* wall clock */
	uint64_t duration_ms;
	const char *replica;         /* the consumer name */
	relay__tl_outcome outcome;
	int exit_code, term_signal;  /* failed, timeout */
	int warm;                    /* a warm parent ran it */
	const char *trace_id;        /* the attempt span's, 32 hex */
	const char *reason;          /* failed, timeout: the runtime's
					words; not_started: why */
	const char *stderr_tail;     /* failed, timeout: as stored in the
					DLQ (relay__tail_text()) */
} relay__tl_attempt;

/* "ok", "failed", "timeout", "not_started"; "?" out of range. */
const char *relay__tl_outcome_name(relay__tl_outcome o);
/* Format @a as one entry into @buf (@size bytes; RELAY__TL_ENTRY_MAX is
 * always enough): "ATTEMPT START_MS ELAPSED_MS DURATION_MS OUTCOME WARM
 * REPLICA TRACE [JSON]" as R-3 says. Returns the length (cut to fit
 * @size). */
size_t relay__tl_format(const relay__tl_attempt *a, char *buf, size_t size);
/* The timeline @old (@old_len bytes, NULL: none) with @entry appended and
 * the oldest entries dropped to keep RELAY__TL_MAX (twin of
 * relay_tl_push() of librelay/lua/prelude.lua). Returns: new string
 * (relay__free()), its length in *out_len, or NULL (no memory). */
char *relay__tl_push(const char *old, size_t old_len, const char *entry,
		     size_t len, size_t *out_len);
/* 1 when @entry may be appended: not empty, shorter than
 * RELAY__TL_ENTRY_MAX, no line end (the scripts check the same). */
int relay__tl_entry_ok(const char *entry, size_t len);

#endif /* RELAY__INV_H */
