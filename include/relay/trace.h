/*
 * relay/trace.h - W3C Trace Context and Baggage, ids, sampling, span
 * records: the tracing seam of librelay.
 *
 * A stream entry may carry `traceparent` (and `tracestate`, `baggage`)
 * beside `event` (doc/operations.md, "Tracing"). This module parses those
 * values strictly (W3C Trace Context level 1, W3C Baggage), makes the
 * context of a child span (one per handler attempt), decides sampling the
 * way the OpenTelemetry SDK samplers do, and defines relay_span: the
 * record of one finished span that an exporter (relayd's OTLP exporter,
 * or an embedder's own tracer) receives. Nothing here does I/O except
 * reading the kernel's random source for new ids.
 *
 * An invalid or oversized header is never an error of the message that
 * carried it: the parsers only say "not valid" and the caller ignores
 * the value (and counts it).
 *
 * Thread-safety: every function is reentrant and keeps no state; the
 * structs are plain values owned by the caller.
 */
#ifndef RELAY_TRACE_H
#define RELAY_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RELAY_TRACE_ID_SIZE 16          /* bytes of a trace id */
#define RELAY_SPAN_ID_SIZE 8            /* bytes of a span id */
#define RELAY_TRACEPARENT_LEN 55        /* "00-<32>-<16>-<2>" */
#define RELAY_TRACE_FLAG_SAMPLED 0x01   /* trace-flags bit 0 */
/* tracestate: at most 32 list members; what we keep and propagate is at
 * most 512 characters (longer values are truncated as the spec says). */
#define RELAY_TRACESTATE_MAX_MEMBERS 32
#define RELAY_TRACESTATE_MAX 512
/* A tracestate input longer than this is not even looked at (32 members
 * of a 256-character key and a 256-character value, with separators). */
#define RELAY_TRACESTATE_INPUT_MAX 16896
/* baggage: W3C Baggage limits. */
#define RELAY_BAGGAGE_MAX_MEMBERS 64
#define RELAY_BAGGAGE_MAX_BYTES 8192

/*
 * The context of one span: what `traceparent` and `tracestate` carry.
 * A valid context has a trace id and a span id that are not all zeros.
 */
typedef struct relay_trace_context {
	uint8_t trace_id[RELAY_TRACE_ID_SIZE];
	uint8_t span_id[RELAY_SPAN_ID_SIZE];
	uint8_t flags;                  /* trace-flags; bit 0: sampled */
	bool remote;                    /* parsed from a producer's header */
	char tracestate[RELAY_TRACESTATE_MAX + 1]; /* "" = none */
} relay_trace_context;

/**
 * relay_trace_parent_parse() - parse a `traceparent` value.
 * @out: the context (its tracestate is set to ""; remote to true)
 * @s: the value, not necessarily NUL-terminated
 * @len: its length in bytes
 *
 * Version 00 must be exactly 55 characters. Version ff is invalid. Any
 * other version (a future one) is parsed by the level-1 prefix: its first
 * 55 characters must have the version-00 layout, and what follows, if
 * anything, must be '-' and then lowercase letters, digits and '-' only
 * (the whole value is checked: no control byte, space or upper case
 * anywhere). Hex digits must be lowercase; an
 * all-zero trace id or span id is invalid. Flags other than bit 0 are
 * kept as given for version 00 (the spec says to propagate them unchanged
 * by a parent of the same version) and cleared for a future version.
 *
 * Returns: 0; RELAY_EPARSE for a value that is not a valid traceparent;
 * RELAY_EINVAL for a value longer than 512 bytes (not looked at).
 * Ownership: @out is caller-owned; nothing is allocated.
 */
RELAY_EXTERN int relay_trace_parent_parse(relay_trace_context *out,
					  const char *s, size_t len);

/**
 * relay_trace_parent_format() - the version-00 `traceparent` of @c.
 * @c: a valid context
 * @out: RELAY_TRACEPARENT_LEN + 1 bytes; receives a NUL-terminated value
 *
 * Returns: 0; RELAY_EINVAL when @c's trace id or span id is all zeros
 * (@out is then "").
 */
RELAY_EXTERN int relay_trace_parent_format(const relay_trace_context *c,
					   char out[RELAY_TRACEPARENT_LEN + 1]);

/**
 * relay_trace_state_parse() - validate a `tracestate` value into @c.
 * @c: receives the normalized value in @c->tracestate (members without
 *     surrounding spaces, empty members dropped, joined by ",")
 * @s: the value, not necessarily NUL-terminated
 * @len: its length
 *
 * Keys: `simple-key` or `tenant@system` (multi-tenant); values of 1 to
 * 256 printable ASCII characters without ',' or '=' and not ending in a
 * space; at most 32 members; no key twice. A valid value longer than
 * RELAY_TRACESTATE_MAX after normalizing is truncated the spec's way:
 * members longer than 128 characters go first, then members from the
 * end, until it fits.
 *
 * Returns: 0 (also for an empty or all-blank value: @c->tracestate is
 * ""); RELAY_EPARSE for an invalid value (@c->tracestate is then "");
 * RELAY_EINVAL for more than RELAY_TRACESTATE_INPUT_MAX bytes.
 * Ownership: nothing is allocated.
 */
RELAY_EXTERN int relay_trace_state_parse(relay_trace_context *c,
					 const char *s, size_t len);

/**
 * relay_trace_baggage_check() - validate a W3C `baggage` value.
 * @s: the value, not necessarily NUL-terminated
 * @len: its length
 * @members: if not NULL, receives the number of list members
 *
 * Grammar: members `key OWS "=" OWS value *(OWS ";" OWS property)`
 * separated by `OWS "," OWS`; a key is an RFC 7230 token, a value a
 * run of baggage-octets (printable ASCII except space, '"', ',', ';'
 * and '\'), percent-encoding allowed but not checked (the spec has
 * decoders replace bad sequences). Empty members are invalid.
 *
 * Returns: 0; RELAY_EPARSE for an invalid value; RELAY_EINVAL for more
 * than RELAY_BAGGAGE_MAX_BYTES bytes or RELAY_BAGGAGE_MAX_MEMBERS members.
 */
RELAY_EXTERN int relay_trace_baggage_check(const char *s, size_t len,
					   size_t *members);

/**
 * relay_trace_random_ids() - new random ids from the kernel's CSPRNG.
 * @trace_id: if not NULL, RELAY_TRACE_ID_SIZE bytes, never all zeros
 * @span_id: if not NULL, RELAY_SPAN_ID_SIZE bytes, never all zeros
 *
 * Returns: 0; RELAY_ERROR when the random source fails (getrandom(2)
 * unavailable and /dev/urandom unreadable).
 */
RELAY_EXTERN int relay_trace_random_ids(uint8_t *trace_id, uint8_t *span_id);

/**
 * relay_trace_context_child() - the context of a new span.
 * @out: receives the child's context
 * @parent: the parent's context, or NULL for a new trace (root span)
 * @sampled: the sampling decision for the child (relay_trace_sample())
 *
 * The child keeps the parent's trace id and tracestate, gets a new span
 * id, has remote false, and flags = the parent's flags with bit 0 set to
 * @sampled. Without a parent it gets a new trace id too.
 *
 * Returns: 0; RELAY_ERROR when the random source fails.
 */
RELAY_EXTERN int relay_trace_context_child(relay_trace_context *out,
					   const relay_trace_context *parent,
					   bool sampled);

/**
 * relay_trace_hex() - lowercase hex of @n bytes of @id into @out.
 * @out: 2 * @n + 1 bytes; NUL-terminated. Returns @out.
 */
RELAY_EXTERN char *relay_trace_hex(const uint8_t *id, size_t n, char *out);

/* ---- sampling --------------------------------------------------------- */

typedef enum relay_trace_sampler_kind {
	RELAY_SAMPLER_ALWAYS_ON = 0,
	RELAY_SAMPLER_ALWAYS_OFF,
	RELAY_SAMPLER_TRACEIDRATIO,
	RELAY_SAMPLER_PARENTBASED_ALWAYS_ON,    /* the OTel default */
	RELAY_SAMPLER_PARENTBASED_ALWAYS_OFF,
	RELAY_SAMPLER_PARENTBASED_TRACEIDRATIO,
} relay_trace_sampler_kind;

typedef struct relay_trace_sampler {
	relay_trace_sampler_kind kind;
	double ratio;                   /* 0..1, for the *traceidratio kinds */
} relay_trace_sampler;

/**
 * relay_trace_sampler_parse() - a sampler from OTEL_TRACES_SAMPLER and
 * OTEL_TRACES_SAMPLER_ARG.
 * @out: receives the sampler
 * @name: always_on, always_off, traceidratio, parentbased_always_on,
 *        parentbased_always_off, parentbased_traceidratio; NULL or "" is
 *        the default parentbased_always_on
 * @arg: the ratio for the traceidratio kinds (0 to 1); NULL or "" is 1.0
 *
 * Returns: 0; RELAY_EINVAL for an unknown name or a bad ratio (@out is
 * then the default, so a caller may warn and go on).
 */
RELAY_EXTERN int relay_trace_sampler_parse(relay_trace_sampler *out,
					   const char *name, const char *arg);

/**
 * relay_trace_sample() - the sampling decision for a new span.
 * @s: the sampler
 * @parent: the parent context, or NULL for a root span
 * @trace_id: the new span's trace id (the parent's, or a new one)
 *
 * traceidratio follows the OpenTelemetry rule on the trace id's
 * randomness: the least significant 56 bits R of @trace_id are sampled
 * when R >= (1 - ratio) * 2^56, so every participant with the same ratio
 * decides the same for a trace, and a higher ratio samples a superset.
 * The parentbased kinds follow the parent's sampled flag when there is a
 * parent and use their root sampler otherwise.
 *
 * Returns: true to record and export the span.
 */
RELAY_EXTERN bool relay_trace_sample(const relay_trace_sampler *s,
				     const relay_trace_context *parent,
				     const uint8_t trace_id[RELAY_TRACE_ID_SIZE]);

/* ---- span records ----------------------------------------------------- */

/* OTLP's numbering (Span.SpanKind), so exporters copy it as is. */
typedef enum relay_span_kind {
	RELAY_SPAN_KIND_UNSPECIFIED = 0,
	RELAY_SPAN_KIND_INTERNAL = 1,
	RELAY_SPAN_KIND_SERVER = 2,
	RELAY_SPAN_KIND_CLIENT = 3,
	RELAY_SPAN_KIND_PRODUCER = 4,
	RELAY_SPAN_KIND_CONSUMER = 5,
} relay_span_kind;

/* OTLP's Status.StatusCode. */
typedef enum relay_span_status {
	RELAY_SPAN_STATUS_UNSET = 0,
	RELAY_SPAN_STATUS_OK = 1,
	RELAY_SPAN_STATUS_ERROR = 2,
} relay_span_status;

typedef enum relay_trace_attr_type {
	RELAY_TRACE_ATTR_STRING = 0,
	RELAY_TRACE_ATTR_INT,
	RELAY_TRACE_ATTR_BOOL,
} relay_trace_attr_type;

/* One attribute: a key and a string, integer or boolean value. */
typedef struct relay_trace_attr {
	const char *key;
	relay_trace_attr_type type;
	const char *s;                  /* RELAY_TRACE_ATTR_STRING */
	int64_t i;                      /* RELAY_TRACE_ATTR_INT */
	bool b;                         /* RELAY_TRACE_ATTR_BOOL */
} relay_trace_attr;

/* A link to another span (a retry's earlier attempt, a producer). */
typedef struct relay_span_link {
	uint8_t trace_id[RELAY_TRACE_ID_SIZE];
	uint8_t span_id[RELAY_SPAN_ID_SIZE];
	uint8_t flags;
	const char *tracestate;         /* NULL or "" = none */
	const relay_trace_attr *attrs;
	size_t nattrs;
} relay_span_link;

/*
 * One finished span. Every pointer is borrowed from whoever fills the
 * record, for the duration of the call it is passed to; a consumer of
 * the record that keeps it copies it (relay_span_dup()).
 */
typedef struct relay_span {
	unsigned int version;           /* RELAY_SPAN_VERSION */
	const char *name;
	relay_span_kind kind;
	uint8_t trace_id[RELAY_TRACE_ID_SIZE];
	uint8_t span_id[RELAY_SPAN_ID_SIZE];
	uint8_t parent_span_id[RELAY_SPAN_ID_SIZE]; /* all zeros: a root */
	uint8_t flags;                  /* trace-flags of the span */
	const char *tracestate;         /* NULL or "" = none */
	int64_t start_unix_ns;
	int64_t end_unix_ns;
	const relay_trace_attr *attrs;
	size_t nattrs;
	const relay_span_link *links;
	size_t nlinks;
	relay_span_status status;
	const char *status_message;     /* NULL or "" = none; for ERROR */
	/* version 1 ends here; later versions append only */
} relay_span;

#define RELAY_SPAN_VERSION 1
#define RELAY_SPAN_INIT { RELAY_SPAN_VERSION, NULL, RELAY_SPAN_KIND_INTERNAL, \
	{ 0 }, { 0 }, { 0 }, 0, NULL, 0, 0, NULL, 0, NULL, 0,             \
	RELAY_SPAN_STATUS_UNSET, NULL }

/**
 * relay_span_dup() - a deep copy of @s in one allocation.
 * @out: receives the copy (new; free with relay_span_free())
 * @s: the record; its version must be 1..RELAY_SPAN_VERSION
 *
 * NULL strings stay NULL. The copy's size is returned in *@size when
 * @size is not NULL, so a queue can bound its memory.
 *
 * Returns: 0; RELAY_EINVAL for a bad version or a NULL name;
 * RELAY_ENOMEM.
 */
RELAY_EXTERN int relay_span_dup(relay_span **out, const relay_span *s,
				size_t *size);

/** relay_span_free() - free a copy made by relay_span_dup(); NULL is a
 * no-op. */
RELAY_EXTERN void relay_span_free(relay_span *s);

#ifdef __cplusplus
}
#endif

#endif /* RELAY_TRACE_H */
