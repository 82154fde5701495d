/*
 * config.c - the exporter's configuration from the standard OTEL_*
 * variables (doc/configuration.md, "Tracing").
 *
 * Export is off unless an endpoint is set (and OTEL_SDK_DISABLED is not
 * true). A number that is not one stops start-up, as relayd's own
 * variables do; a bad sampler name or bad OTEL_RESOURCE_ATTRIBUTES only
 * warns (the spec: fall back, discard), because tracing must never keep
 * events from being processed. No message quotes a header value.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "otlp.h"

static bool set(const char *v)
{
	return v && *v;
}

static int number(char *(*get)(const char *), const char *name,
		  int64_t def, int64_t min, int64_t *out, char *errbuf,
		  size_t size)
{
	const char *v = get(name);
	char *end;
	long long n;

	*out = def;
	if (!set(v))
		return 0;
	errno = 0;
	n = strtoll(v, &end, 10);
	if (errno || *end || end == v || n < min) {
		snprintf(errbuf, size, "%s: not a whole number >= %lld",
			 name, (long long)min);
		return -1;
	}
	*out = n;
	return 0;
}

static void warn(relay_otlp_config *c, const char *line)
{
	size_t old = c->warning ? strlen(c->warning) : 0;
	char *w;

	w = realloc(c->warning, old + strlen(line) + 3);
	if (!w)
		return;
	if (old)
		memcpy(w + old, "; ", 3);
	else
		w[0] = '\0';
	strcat(w, line);
	c->warning = w;
}

static char *endpoint(char *(*get)(const char *))
{
	const char *t = get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
	const char *b = get("OTEL_EXPORTER_OTLP_ENDPOINT");
	size_t n;
	char *e;

	if (set(t))
		return strdup(t);
	if (!set(b))
		return NULL;
	n = strlen(b);
	e = malloc(n + sizeof("/v1/traces"));
	if (!e)
		return NULL;
	memcpy(e, b, n);
	strcpy(e + n - (b[n - 1] == '/'), "/v1/traces");
	return e;
}

#define REDACTED "<redacted>"

char *relay_otlp_endpoint_redact(const char *url)
{
	const char *s = strstr(url, "://"), *auth, *end, *at, *p;
	size_t n = strlen(url), room;
	char *r, *o;

	/* Every query or fragment byte may become "<redacted>" at worst
	 * once per separator: bounded by n * (1 + sizeof REDACTED). */
	room = n * sizeof(REDACTED) + sizeof(REDACTED) + 2;
	r = malloc(room);
	if (!r)
		return NULL;
	auth = s && strcspn(url, "/?#") > (size_t)(s - url) ? s + 3 : url;
	end = auth + strcspn(auth, "/?#");
	for (at = NULL, p = auth; p < end; p++)
		if (*p == '@')
			at = p;
	o = r;
	memcpy(o, url, (size_t)(auth - url));
	o += auth - url;
	p = at ? at + 1 : auth;
	end = p + strcspn(p, "?#");  /* host, port and path */
	memcpy(o, p, (size_t)(end - p));
	o += end - p;
	p = end;
	if (*p == '?') {
		*o++ = '?';
		p++;
		while (*p && *p != '#') {
			size_t item = strcspn(p, "&#"), key;

			key = strcspn(p, "=&#");
			if (key < item) {
				memcpy(o, p, key + 1);   /* "key=" */
				o += key + 1;
			}
			if (item > 0) {
				memcpy(o, REDACTED, sizeof(REDACTED) - 1);
				o += sizeof(REDACTED) - 1;
			}
			p += item;
			if (*p == '&')
				*o++ = *p++;
		}
	}
	if (*p == '#') {
		memcpy(o, "#" REDACTED, sizeof(REDACTED));
		o += sizeof(REDACTED);
	}
	*o = '\0';
	return r;
}

int relay_otlp_config_load(relay_otlp_config *c,
			   char *(*get)(const char *),
			   char *errbuf, size_t size)
{
	const char *v, *hv;
	int64_t q, bsz;
	size_t i;
	int rc;

	memset(c, 0, sizeof(*c));
	errbuf[0] = '\0';
	v = get("OTEL_SDK_DISABLED");
	c->sdk_disabled = set(v) && strcasecmp(v, "true") == 0;
	if (number(get, "OTEL_EXPORTER_OTLP_TIMEOUT", 10000, 1,
		   &c->timeout_ms, errbuf, size) ||
	    number(get, "OTEL_BSP_SCHEDULE_DELAY", 5000, 0,
		   &c->schedule_delay_ms, errbuf, size) ||
	    number(get, "OTEL_BSP_EXPORT_TIMEOUT", 30000, 1,
		   &c->export_timeout_ms, errbuf, size) ||
	    number(get, "OTEL_BSP_MAX_QUEUE_SIZE", 2048, 1, &q, errbuf,
		   size) ||
	    number(get, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512, 1, &bsz,
		   errbuf, size))
		goto fail;
	if (q > 1000000)
		q = 1000000;
	if (bsz > q) {
		warn(c, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE is larger than "
		     "OTEL_BSP_MAX_QUEUE_SIZE; using the queue size");
		bsz = q;
	}
	c->max_queue = (size_t)q;
	c->max_batch = (size_t)bsz;
	if (relay_trace_sampler_parse(&c->sampler,
				      get("OTEL_TRACES_SAMPLER"),
				      get("OTEL_TRACES_SAMPLER_ARG")))
		warn(c, "OTEL_TRACES_SAMPLER or OTEL_TRACES_SAMPLER_ARG is "
		     "not valid; using parentbased_always_on");
	/* Secrets: a parse error names the variable, never the value. */
	hv = get("OTEL_EXPORTER_OTLP_TRACES_HEADERS");
	if (!set(hv))
		hv = get("OTEL_EXPORTER_OTLP_HEADERS");
	if (set(hv)) {
		rc = relay_otlp_kv_parse(hv, &c->headers, &c->nheaders);
		if (rc) {
			snprintf(errbuf, size, "%s: %s", "OTEL_EXPORTER_OTLP_"
				 "HEADERS", rc == RELAY_ENOMEM ? "out of memory"
				 : "not a list of key=value (values are "
				 "not shown)");
			goto fail;
		}
		for (i = 0; i < c->nheaders; i++) {
			const char *k = c->headers[i].key, *p;

			for (p = k; *p; p++)
				if (!isgraph((unsigned char)*p) || *p == ':')
					break;
			if (*p || strpbrk(c->headers[i].value, "\r\n")) {
				snprintf(errbuf, size, "OTEL_EXPORTER_OTLP_"
					 "HEADERS: a header name or value "
					 "holds a character HTTP does not "
					 "allow (values are not shown)");
				goto fail;
			}
		}
	}
	v = get("OTEL_RESOURCE_ATTRIBUTES");
	if (set(v) && relay_otlp_kv_parse(v, &c->resource, &c->nresource))
		warn(c, "OTEL_RESOURCE_ATTRIBUTES is not a list of "
		     "key=value; ignored");
	v = get("OTEL_SERVICE_NAME");
	if (set(v))
		c->service_name = strdup(v);
	for (i = 0; !c->service_name && i < c->nresource; i++)
		if (strcmp(c->resource[i].key, "service.name") == 0)
			c->service_name = strdup(c->resource[i].value);
	if (!c->service_name)
		c->service_name = strdup("unknown_service:relayd");
	c->endpoint = endpoint(get);
	if (!c->service_name || (!c->endpoint && (set(get(
	    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")) ||
	    set(get("OTEL_EXPORTER_OTLP_ENDPOINT"))))) {
		snprintf(errbuf, size, "OTEL_*: out of memory");
		goto fail;
	}
	/* Only OTLP/HTTP with protobuf bodies is spoken: another protocol
	 * (grpc, http/json) turns export off with a warning, rather than
	 * posting protobuf to a port that expects something else, and
	 * rather than refusing to start over an optional feature that a
	 * site may set for all of its services at once. */
	v = get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL");
	if (!set(v))
		v = get("OTEL_EXPORTER_OTLP_PROTOCOL");
	if (set(v) && strcmp(v, "http/protobuf") != 0) {
		c->protocol_unsupported = true;
		warn(c, "OTEL_EXPORTER_OTLP_PROTOCOL (or _TRACES_PROTOCOL) "
		     "is not http/protobuf, the one protocol relayd "
		     "exports with; trace export is off");
	}
	c->enabled = c->endpoint && !c->sdk_disabled &&
		     !c->protocol_unsupported;
	return 0;
fail:
	relay_otlp_config_clear(c);
	return -1;
}

void relay_otlp_config_clear(relay_otlp_config *c)
{
	free(c->endpoint);
	free(c->service_name);
	free(c->warning);
	relay_otlp_kv_free(c->resource, c->nresource);
	relay_otlp_kv_free(c->headers, c->nheaders);
	memset(c, 0, sizeof(*c));
}
