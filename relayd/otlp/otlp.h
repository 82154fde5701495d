/*
 * relayd/otlp/otlp.h - relayd's OTLP/HTTP trace exporter.
 *
 * A separate module (doc/architecture.md, `otlp`) that relayd links and
 * librelay does not: it takes relay_span records (relay/trace.h) and
 * posts them as protobuf ExportTraceServiceRequest bodies to an
 * OpenTelemetry collector, from a bounded queue, in batches, on the
 * caller's libev loop, never blocking it (libcurl's multi-socket
 * interface; doc/operations.md "Tracing" says why).
 *
 * Three parts:
 *  - encode.c: the protobuf encoder and the OTEL_* value parsers (pure,
 *    always built);
 *  - config.c: the exporter's configuration from the OTEL_* variables;
 *  - exporter.c: the batch span processor and the HTTP client (with
 *    libcurl), or a stub saying "unavailable" (without).
 *
 * Header values (OTEL_EXPORTER_OTLP_HEADERS: tokens) are never logged,
 * never put in an error message, never in a counter's label.
 *
 * Thread-safety: one exporter belongs to one loop thread; the pure
 * functions are reentrant.
 */
#ifndef RELAYD_OTLP_H
#define RELAYD_OTLP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "relay/log.h"
#include "relay/trace.h"

struct ev_loop;

/* One "key=value" of OTEL_RESOURCE_ATTRIBUTES or _HEADERS, decoded. */
typedef struct relay_otlp_kv {
	char *key;
	char *value;
} relay_otlp_kv;

/**
 * relay_otlp_kv_parse() - a comma-separated list of key=value (W3C
 * Baggage's form, without properties): keys and values trimmed of spaces,
 * values percent-decoded.
 * @s: the text (NUL-terminated); "" is an empty list
 * @out, @n: receive a new array (free with relay_otlp_kv_free())
 *
 * Returns: 0; RELAY_EPARSE for a member without '=', an empty key or a
 * bad %-escape (nothing is returned: the whole value is discarded, as the
 * OpenTelemetry spec asks); RELAY_ENOMEM.
 */
int relay_otlp_kv_parse(const char *s, relay_otlp_kv **out, size_t *n);
void relay_otlp_kv_free(relay_otlp_kv *kv, size_t n);

/* A growing buffer of protobuf bytes (realloc'd; free with
 * relay_otlp_buf_free()). */
typedef struct relay_otlp_buf {
	uint8_t *p;
	size_t n, cap;
	bool oom;                 /* a growth failed; the bytes are partial */
} relay_otlp_buf;

void relay_otlp_buf_free(relay_otlp_buf *b);

/* The parts of every request that never change, encoded once. */
typedef struct relay_otlp_parts {
	relay_otlp_buf resource;  /* a Resource message's body */
	relay_otlp_buf scope;     /* an InstrumentationScope's body */
} relay_otlp_parts;

/**
 * relay_otlp_parts_init() - encode the resource (@resource, @nresource:
 * its attributes, service.name first) and the instrumentation scope
 * (@scope; @scope_version may be NULL).
 *
 * Returns: 0 or RELAY_ENOMEM (@p then holds nothing).
 */
int relay_otlp_parts_init(relay_otlp_parts *p,
			  const relay_trace_attr *resource, size_t nresource,
			  const char *scope, const char *scope_version);
void relay_otlp_parts_clear(relay_otlp_parts *p);

/** relay_otlp_head_max() - the room a request's head needs before its
 * spans. */
size_t relay_otlp_head_max(const relay_otlp_parts *p);

/**
 * relay_otlp_span_append() - append @s to @b, encoded as one `spans`
 * field of a ScopeSpans message. Nothing of @s is kept.
 * @max: the most bytes the span may take
 *
 * Returns: the bytes appended; 0 when the span would take more than @max
 * or memory ran out (@b is then as before).
 */
size_t relay_otlp_span_append(relay_otlp_buf *b, const relay_span *s,
			      size_t max);

/**
 * relay_otlp_head_put() - make @b one ExportTraceServiceRequest: write
 * the request's head (one ResourceSpans of @p's resource, one ScopeSpans
 * of its scope) into the @gap bytes kept in front of the spans, which
 * run from b->p + @gap to b->p + b->n. @gap must be at least
 * relay_otlp_head_max(@p).
 *
 * Returns: the body's offset in b->p (the body ends at b->n).
 */
size_t relay_otlp_head_put(const relay_otlp_parts *p, relay_otlp_buf *b,
			   size_t gap);

/**
 * relay_otlp_encode() - an ExportTraceServiceRequest in one call (the
 * pieces above).
 * @resource, @nresource: the resource's attributes (service.name first)
 * @scope: the instrumentation scope name; @scope_version may be NULL
 * @spans, @n: the spans, all of this resource and scope
 * @out, @outlen: receive the body (new, free())
 *
 * Returns: 0 or RELAY_ENOMEM.
 */
int relay_otlp_encode(const relay_trace_attr *resource, size_t nresource,
		      const char *scope, const char *scope_version,
		      relay_span *const *spans, size_t n,
		      uint8_t **out, size_t *outlen);

/* ---- configuration ---------------------------------------------------- */

typedef struct relay_otlp_config {
	bool enabled;             /* an endpoint is set, SDK not disabled */
	bool sdk_disabled;        /* OTEL_SDK_DISABLED=true */
	bool protocol_unsupported;/* OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL
				     set to other than http/protobuf:
				     export off (with a warning) */
	char *endpoint;           /* the full URL of /v1/traces */
	char *service_name;       /* service.name */
	relay_otlp_kv *resource;  /* OTEL_RESOURCE_ATTRIBUTES */
	size_t nresource;
	relay_otlp_kv *headers;   /* OTEL_EXPORTER_OTLP_HEADERS: secrets */
	size_t nheaders;
	relay_trace_sampler sampler; /* OTEL_TRACES_SAMPLER(_ARG) */
	int64_t timeout_ms;       /* OTEL_EXPORTER_OTLP_TIMEOUT, 10000 */
	int64_t schedule_delay_ms;/* OTEL_BSP_SCHEDULE_DELAY, 5000 */
	size_t max_queue;         /* OTEL_BSP_MAX_QUEUE_SIZE, 2048 */
	size_t max_batch;         /* OTEL_BSP_MAX_EXPORT_BATCH_SIZE, 512 */
	int64_t export_timeout_ms;/* OTEL_BSP_EXPORT_TIMEOUT, 30000 */
	char *warning;            /* a problem worth a start-up warning (a
				     bad sampler, bad resource attributes,
				     a batch over the queue); never holds a
				     header value; NULL = none */
} relay_otlp_config;

/**
 * relay_otlp_config_load() - the exporter configuration from the
 * environment (the OTEL_* variables of doc/configuration.md).
 * @c: receives it (free with relay_otlp_config_clear())
 * @getenv_fn: getenv, or a test's stand-in
 * @errbuf, @size: one line naming the variable on an error; it never
 * quotes a header value
 *
 * Returns: 0 (c->enabled says whether to export); -1 for a value that
 * must stop start-up (a number that is not one, a header list that does
 * not parse).
 */
int relay_otlp_config_load(relay_otlp_config *c,
			   char *(*getenv_fn)(const char *),
			   char *errbuf, size_t size);
void relay_otlp_config_clear(relay_otlp_config *c);

/**
 * relay_otlp_endpoint_redact() - @url as it may be logged: without its
 * userinfo (all of the authority up to its last '@'), each query value
 * as "<redacted>" (keys kept: "?api_key=<redacted>&x=<redacted>"; an
 * item without '=' as a whole) and any fragment as "#<redacted>".
 * Scheme, host, port and path are kept. A URL without "://" is read as
 * curl reads it, from its authority.
 *
 * Returns: a malloc'd string (the caller frees it), NULL on ENOMEM.
 * Thread-safety: pure.
 */
char *relay_otlp_endpoint_redact(const char *url);

/* ---- the exporter ----------------------------------------------------- */

typedef struct relay_otlp relay_otlp;

typedef struct relay_otlp_counts {
	uint64_t spans_exported;  /* accepted by the collector (2xx) */
	uint64_t spans_dropped;   /* queue full, too big, or given up */
	uint64_t exports_failed;  /* requests that did not succeed */
	uint64_t queued;          /* gauge: spans waiting */
} relay_otlp_counts;

/* A span whose encoding is larger than this is dropped (and counted): it
 * bounds the queue's memory to max_queue times this. */
#define RELAY_OTLP_SPAN_MAX_BYTES (64 * 1024)
/* Attempts of one batch (the first and its retries). */
#define RELAY_OTLP_MAX_ATTEMPTS 5

/** relay_otlp_available() - whether this build can export (libcurl). */
bool relay_otlp_available(void);

/**
 * relay_otlp_new() - an exporter on @loop.
 * @out: receives it (free with relay_otlp_free())
 * @loop: the libev loop it runs on (borrowed; must outlive it)
 * @c: the configuration (copied); c->enabled must be true
 * @lg: the logger (copied): failures are logged at WARN once per change
 *      from working to failing, recoveries at INFO
 *
 * Returns: 0; RELAY_EINVAL when the build has no exporter or @c is not
 * enabled; RELAY_ENOMEM.
 */
int relay_otlp_new(relay_otlp **out, struct ev_loop *loop,
		   const relay_otlp_config *c, relay_logger lg);

/**
 * relay_otlp_submit() - queue @s for export: it is encoded at once, so
 * nothing of @s is kept.
 *
 * Never blocks and never fails the caller: when the queue is full or the
 * span too big the span is dropped and counted. A full batch starts an
 * export at once (on the next loop iteration); otherwise the schedule
 * delay does.
 *
 * Returns: true when queued.
 */
bool relay_otlp_submit(relay_otlp *x, const relay_span *s);

/** relay_otlp_flush() - start an export now if none is in flight. */
void relay_otlp_flush(relay_otlp *x);

/** relay_otlp_counts_get() - the counters since relay_otlp_new(). */
void relay_otlp_counts_get(const relay_otlp *x, relay_otlp_counts *out);

/** relay_otlp_idle() - no span queued and no request in flight. */
bool relay_otlp_idle(const relay_otlp *x);

/**
 * relay_otlp_free() - stop at once: an export in flight is abandoned,
 * queued spans are freed (counted as dropped). NULL is a no-op.
 */
void relay_otlp_free(relay_otlp *x);

#endif /* RELAYD_OTLP_H */
