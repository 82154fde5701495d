/*
 * config.c - relayd's configuration, read from the environment
 * (doc/configuration.md C-1, C-2: the names, defaults, limits and error
 * texts are a contract).
 *
 * Every problem becomes ONE line naming the variable and what is wrong
 * with its value; main() prints it and exits 1. An empty variable counts
 * as unset. The Redis password never appears in a message: a URI is shown
 * only in its redacted form (user:***@host).
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "relay/engine.h"
#include "relay/redis.h"
#include "relay_config.h"
#include "relayd.h"

static int fail(char *errbuf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(char *errbuf, size_t size, const char *fmt, ...)
{
	char raw[1024];
	va_list ap;

	/* The message echoes values from the environment: print them so
	 * that they cannot drive the terminal or split the line. */
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	relayd_escape_ctl(raw, errbuf, size);
	return -1;
}

/*
 * @s for an error line that goes to a terminal or a log: bytes outside
 * printable ASCII, '"' and '\\' as \xNN (the library's rule for names in
 * its error texts), at most 200 bytes shown. Returns @buf.
 */
static const char *quote_safe(const char *s, char *buf, size_t size)
{
	size_t n = 0, i;

	for (i = 0; s[i] && n + 5 < size; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (i == 200) {
			snprintf(buf + n, size - n, "...");
			return buf;
		}
		if (ch < 0x20 || ch >= 0x7f || ch == '"' || ch == '\\')
			n += (size_t)snprintf(buf + n, size - n, "\\x%02x",
					      ch);
		else
			buf[n++] = (char)ch;
	}
	buf[n] = '\0';
	return buf;
}

static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

static char *xstrdup(const char *s)
{
	char *p = strdup(s);

	if (!p)
		abort();
	return p;
}

/*
 * A copy of @uri safe to print: the password is replaced by "***" in
 * every form (redis://, rediss://, any scheme or none; also when there is
 * no user part), and control bytes by '?'.
 */
static char *redact_uri(const char *uri)
{
	size_t n = strlen(uri) + 8;
	char *out = malloc(n);

	if (!out)
		abort();
	return relay_redis_uri_redact(uri, out, n);
}

/* A decimal integer in [lo, hi], nothing else. */
static int parse_int(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;

	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

int relayd_parse_size(const char *s, size_t *out)
{
	unsigned long long v, mul = 1;
	char *end;

	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	if (strcmp(end, "") == 0 || strcmp(end, "B") == 0)
		mul = 1;
	else if (strcmp(end, "KiB") == 0)
		mul = 1024;
	else if (strcmp(end, "MiB") == 0)
		mul = 1024 * 1024;
	else
		return -1;
	if (v > SIZE_MAX / mul)
		return -1;
	*out = (size_t)(v * mul);
	return 0;
}

/*
 * Go-style durations: one or more <number><unit> with units ms, s, m, h
 * and d (a day: 24h), e.g. "168h", "1h30m", "7d". Zero is rejected by the
 * caller where it makes no sense.
 */
int relayd_parse_duration_ms(const char *s, int64_t *out)
{
	int64_t total = 0;

	if (!*s)
		return -1;
	while (*s) {
		unsigned long long v;
		int64_t unit;
		char *end;

		if (!isdigit((unsigned char)*s))
			return -1;
		errno = 0;
		v = strtoull(s, &end, 10);
		if (errno || v > INT64_MAX / 86400000LL)
			return -1;
		s = end;
		if (strncmp(s, "ms", 2) == 0) {
			unit = 1;
			s += 2;
		} else if (*s == 's') {
			unit = 1000;
			s++;
		} else if (*s == 'm') {
			unit = 60000;
			s++;
		} else if (*s == 'h') {
			unit = 3600000;
			s++;
		} else if (*s == 'd') {
			unit = 86400000;
			s++;
		} else {
			return -1;
		}
		if (total > INT64_MAX - (int64_t)v * unit)
			return -1;
		total += (int64_t)v * unit;
	}
	*out = total;
	return 0;
}

static int check_uri(relayd_config *c, const char *v, char *errbuf,
		     size_t size)
{
	relay_redis_uri_kind kind;
	relay_error err;
	int rc;

	c->redis_uri = xstrdup(v);
	c->redis_uri_safe = redact_uri(v);
	memset(&err, 0, sizeof(err));
	rc = relay_redis_uri_check(v, &kind, &err);
	if (rc == 0 && kind == RELAY_REDIS_URI_MEMORY)
		rc = -1;
	if (rc && strncmp(err.text, "rediss://", 9) == 0)  /* no TLS here */
		return fail(errbuf, size, "REDIS_URI: invalid value \"%s\": "
			    "%s", c->redis_uri_safe, err.text);
	if (rc)
		return fail(errbuf, size,
			    "REDIS_URI: invalid value \"%s\": expected "
			    "host:port, redis://[user:pass@]host:port[/db], "
			    "redis+sentinel://[user:pass@]host:port"
			    "[,host:port...]/master[/db] or unix:///path",
			    c->redis_uri_safe);
	return 0;
}

/* METRICS_ADDR: host:port or [v6]:port, port 1..65535. */
static int check_metrics(relayd_config *c, const char *v, char *errbuf,
			 size_t size)
{
	const char *colon, *host = v;
	size_t hlen;
	long port;

	colon = strrchr(v, ':');
	if (!colon)
		goto bad;
	/* ":port": every interface (the listener binds the wildcard). */
	hlen = (size_t)(colon - v);
	if (v[0] == '[') {
		if (hlen < 3 || v[hlen - 1] != ']')
			goto bad;
		host = v + 1;
		hlen -= 2;
	} else if (memchr(v, ':', hlen)) {
		goto bad;
	}
	if (parse_int(colon + 1, 1, 65535, &port))
		goto bad;
	c->metrics_host = strndup(host, hlen);
	if (!c->metrics_host)
		abort();
	c->metrics_port = (int)port;
	return 0;
bad:
	return fail(errbuf, size,
		    "METRICS_ADDR: invalid value \"%s\": expected host:port "
		    "or :port with a port from 1 to 65535", v);
}

/* REDIS_STREAM_RETENTION, REDIS_DLQ_RETENTION: "0" (or any zero
 * duration) turns retention off; anything else is a duration of at least
 * 1s. */
static int load_retention(const char *name, int64_t *out, char *errbuf,
			  size_t size)
{
	const char *v = env(name);

	if (!v)
		return 0;
	if (strcmp(v, "0") == 0) {
		*out = 0;
		return 0;
	}
	if (relayd_parse_duration_ms(v, out) || (*out > 0 && *out < 1000))
		return fail(errbuf, size,
			    "%s: invalid value \"%s\": expected 0 (off) or "
			    "a duration of at least 1s such as 24h, 30m or "
			    "7d", name, v);
	return 0;
}

static int load_numbers(relayd_config *c, char *errbuf, size_t size)
{
	const char *v;
	long n;

	/* MAX_CONCURRENT_INVOCATIONS is another name for it; both set,
	 * they must agree. */
	for (int k = 0; k < 2; k++) {
		const char *name = k ? "MAX_CONCURRENT_INVOCATIONS"
				     : "MAX_CONCURRENCY";

		if (!(v = env(name)))
			continue;
		if (parse_int(v, 1, 4096, &n))
			return fail(errbuf, size,
				    "%s: invalid value \"%s\": expected an "
				    "integer from 1 to 4096", name, v);
		if (k && env("MAX_CONCURRENCY") && n != c->max_concurrency)
			return fail(errbuf, size,
				    "MAX_CONCURRENT_INVOCATIONS: invalid value "
				    "\"%s\": MAX_CONCURRENCY, the same setting, "
				    "says %d", v, c->max_concurrency);
		c->max_concurrency = (int)n;
	}
	if ((v = env("MAX_BUFFERED_EVENTS"))) {
		if (parse_int(v, 1, 100000, &n))
			return fail(errbuf, size,
				    "MAX_BUFFERED_EVENTS: invalid value \"%s\""
				    ": expected an integer from 1 to 100000",
				    v);
		c->max_buffered = (int)n;
	}
	if ((v = env("MAX_EVENT_BYTES"))) {
		if (relayd_parse_size(v, &c->max_event_bytes) ||
		    c->max_event_bytes == 0)
			return fail(errbuf, size,
				    "MAX_EVENT_BYTES: invalid value \"%s\": "
				    "expected a positive byte count, "
				    "optionally with a B, KiB or MiB suffix",
				    v);
		if (c->max_event_bytes > RELAYD_MAX_EVENT_BYTES_LIMIT)
			return fail(errbuf, size,
				    "MAX_EVENT_BYTES: invalid value \"%s\": "
				    "at most 1MiB (1048576 bytes)", v);
	}
	if ((v = env("REDIS_INVOCATION_RETENTION"))) {
		if (relayd_parse_duration_ms(v, &c->retention_ms) ||
		    c->retention_ms < 1000)
			return fail(errbuf, size,
				    "REDIS_INVOCATION_RETENTION: invalid "
				    "value \"%s\": expected a duration of at "
				    "least 1s such as 168h, 30m or 7d", v);
	}
	if (load_retention("REDIS_STREAM_RETENTION", &c->stream_retention_ms,
			   errbuf, size) ||
	    load_retention("REDIS_DLQ_RETENTION", &c->dlq_retention_ms,
			   errbuf, size))
		return -1;
	return 0;
}

static int load_enums(relayd_config *c, char *errbuf, size_t size)
{
	const char *v;

	if ((v = env("LOG_LEVEL")) &&
	    relay_log_level_parse(v, &c->log_level))
		return fail(errbuf, size,
			    "LOG_LEVEL: invalid value \"%s\": expected DEBUG, "
			    "INFO, WARN or ERROR", v);
	if ((v = env("LOG_FORMAT"))) {
		if (strcmp(v, "json") == 0)
			c->log_json = true;
		else if (strcmp(v, "text") == 0)
			c->log_json = false;
		else
			return fail(errbuf, size,
				    "LOG_FORMAT: invalid value \"%s\": "
				    "expected text or json", v);
	}
	if ((v = env("RELAY_SANDBOX"))) {
		if (strcmp(v, "bwrap") != 0 && strcmp(v, "none") != 0)
			return fail(errbuf, size,
				    "RELAY_SANDBOX: invalid value \"%s\": "
				    "expected bwrap or none", v);
		free(c->sandbox);
		c->sandbox = xstrdup(v);
	}
	/* Checked (exists, not uid/gid 0) when the runtime is created. */
	if ((v = env("RELAY_SANDBOX_USER"))) {
		free(c->sandbox_user);
		c->sandbox_user = xstrdup(v);
	}
	/* The form here, always; the host's users (none in the range) and
	 * the number of apps when the runtime takes it. */
	if ((v = env("RELAY_SANDBOX_UIDS"))) {
		relay_error e;

		if (relay_runtime_uid_range_parse(v, NULL, NULL, &e))
			return fail(errbuf, size, "RELAY_SANDBOX_UIDS: invalid "
				    "value \"%s\": %s", v, e.text);
		free(c->sandbox_uids);
		c->sandbox_uids = xstrdup(v);
	}
	return 0;
}

/* RELAY_WARM, RELAY_WARM_MAX_PARENTS, RELAY_WARM_IDLE,
 * RELAY_WARM_START_TIMEOUT_MS (warm parents). */
static int load_warm(relayd_config *c, char *errbuf, size_t size)
{
	const char *v;
	long n;

	if ((v = env("RELAY_WARM"))) {
		if (strcmp(v, "1") == 0)
			c->warm = true;
		else if (strcmp(v, "0") == 0)
			c->warm = false;
		else
			return fail(errbuf, size,
				    "RELAY_WARM: invalid value \"%s\": "
				    "expected 1 (on) or 0 (off)", v);
	}
	if ((v = env("RELAY_OUTCOMES"))) {
		if (strcmp(v, "1") == 0)
			c->no_outcomes = false;
		else if (strcmp(v, "0") == 0)
			c->no_outcomes = true;
		else
			return fail(errbuf, size,
				    "RELAY_OUTCOMES: invalid value \"%s\": "
				    "expected 1 (on) or 0 (off)", v);
	}
	if ((v = env("RELAY_WARM_MAX_PARENTS"))) {
		if (parse_int(v, 1, 4096, &n))
			return fail(errbuf, size,
				    "RELAY_WARM_MAX_PARENTS: invalid value "
				    "\"%s\": expected an integer from 1 to "
				    "4096", v);
		c->warm_max_parents = (unsigned int)n;
	}
	if ((v = env("RELAY_WARM_IDLE"))) {
		if (relayd_parse_duration_ms(v, &c->warm_idle_ms) ||
		    c->warm_idle_ms < 1000 ||
		    c->warm_idle_ms > 24LL * 3600 * 1000)
			return fail(errbuf, size,
				    "RELAY_WARM_IDLE: invalid value \"%s\": "
				    "expected a duration from 1s to 24h such "
				    "as 5m", v);
	}
	if ((v = env("RELAY_WARM_START_TIMEOUT_MS"))) {
		if (parse_int(v, 100, 600000, &n))
			return fail(errbuf, size,
				    "RELAY_WARM_START_TIMEOUT_MS: invalid "
				    "value \"%s\": expected an integer from "
				    "100 to 600000 (milliseconds)", v);
		c->warm_start_timeout_ms = (unsigned int)n;
	}
	return 0;
}

static int load_time_scale(relayd_config *c, char *errbuf, size_t size)
{
	const char *v = env("RELAY_TEST_TIME_SCALE");
	long n;

	if (!v)
		return 0;
#if RELAY_TEST_HOOKS
	if (parse_int(v, 1, 1000000, &n))
		return fail(errbuf, size,
			    "RELAY_TEST_TIME_SCALE: invalid value \"%s\": "
			    "expected an integer from 1 to 1000000", v);
	c->time_scale = (unsigned int)n;
#else
	(void)n;
	(void)errbuf;
	(void)size;
	c->time_scale_ignored = true;
#endif
	return 0;
}

/*
 * RELAY_TEST_SCHEDULE_CLOCK=V[:A[:R]] - test builds only: the schedule
 * clock reads V (Unix seconds) at real Unix time A (default: now) and
 * advances R virtual seconds per real second (default 1, at most 3600).
 */
static int load_sched_clock(relayd_config *c, char *errbuf, size_t size)
{
	const char *v = env("RELAY_TEST_SCHEDULE_CLOCK");
	long long vv = 0, a = -1, r = 1;
	int n = 0, k;

	if (!v)
		return 0;
#if RELAY_TEST_HOOKS
	k = sscanf(v, "%lld%n:%lld%n:%lld%n", &vv, &n, &a, &n, &r, &n);
	if (k < 1 || (size_t)n != strlen(v) || vv < 0 ||
	    vv > 253402300799LL || (k >= 2 && a < 0) || r < 1 || r > 3600)
		return fail(errbuf, size,
			    "RELAY_TEST_SCHEDULE_CLOCK: invalid value \"%s\": "
			    "expected V[:A[:R]] (virtual Unix seconds, real "
			    "Unix seconds, rate 1-3600)", v);
	c->sched_clock_set = true;
	c->sched_clock_v = vv;
	c->sched_clock_rate = r;
	if (k >= 2) {
		c->sched_clock_anchor_ms = a * 1000;
	} else {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		c->sched_clock_anchor_ms = (int64_t)ts.tv_sec * 1000 +
					   ts.tv_nsec / 1000000;
	}
#else
	(void)vv;
	(void)a;
	(void)r;
	(void)n;
	(void)k;
	(void)errbuf;
	(void)size;
	c->sched_clock_ignored = true;
#endif
	return 0;
}

/* OUTPUT_BUDGET: a byte count per app per minute, or "off". */
static int load_output_budget(relayd_config *c, char *errbuf, size_t size)
{
	const char *v = env("OUTPUT_BUDGET");
	size_t n;

	if (!v)
		return 0;
	if (strcmp(v, "off") == 0) {
		c->output_budget = 0;
		return 0;
	}
	if (relayd_parse_size(v, &n) || n < 1024)
		return fail(errbuf, size,
			    "OUTPUT_BUDGET: invalid value \"%s\": expected "
			    "a byte count of at least 1KiB (per app per "
			    "minute, optionally with a B, KiB or MiB suffix) "
			    "or off", v);
	c->output_budget = n;
	return 0;
}

static void set_defaults(relayd_config *c)
{
	char host[256];

	memset(c, 0, sizeof(*c));
	c->max_concurrency = 8;
	c->max_buffered = 16;
	c->max_event_bytes = 256 * 1024;
	c->log_level = RELAY_LOG_INFO;
	c->retention_ms = 168LL * 3600 * 1000;
	c->stream_retention_ms = 24LL * 3600 * 1000;
	c->dlq_retention_ms = 168LL * 3600 * 1000;
	c->output_budget = 8u * 1024 * 1024;
	c->time_scale = 1;
	c->sandbox = xstrdup("bwrap");
	c->warm = true;
	c->warm_max_parents = 32;
	c->warm_idle_ms = 5LL * 60 * 1000;
	c->warm_start_timeout_ms = 2000;
	c->apps_dir = xstrdup("/etc/relay/apps");
	c->run_dir = xstrdup("/run/relay");
	c->state_dir = xstrdup("/var/lib/relay");
	if (gethostname(host, sizeof(host)) != 0)
		snprintf(host, sizeof(host), "relayd");
	host[sizeof(host) - 1] = '\0';
	c->consumer = xstrdup(host);
}

static void set_str(char **dst, const char *v)
{
	free(*dst);
	*dst = xstrdup(v);
}

/* REDIS_TLS_*: paths are checked when the connection is opened (the
 * error names the file); REDIS_TLS_VERIFY is on or off. */
static int load_tls(relayd_config *c, char *errbuf, size_t size)
{
	const char *v;

	if ((v = env("REDIS_TLS_CA_FILE")))
		set_str(&c->tls_ca_file, v);
	if ((v = env("REDIS_TLS_CA_DIR")))
		set_str(&c->tls_ca_dir, v);
	if ((v = env("REDIS_TLS_CERT_FILE")))
		set_str(&c->tls_cert_file, v);
	if ((v = env("REDIS_TLS_KEY_FILE")))
		set_str(&c->tls_key_file, v);
	if ((v = env("REDIS_TLS_SERVER_NAME")))
		set_str(&c->tls_server_name, v);
	v = env("REDIS_TLS_VERIFY");
	if (v && strcmp(v, "on") && strcmp(v, "off"))
		return fail(errbuf, size, "REDIS_TLS_VERIFY: invalid value "
			    "\"%s\": expected on or off", v);
	c->tls_no_verify = v && strcmp(v, "off") == 0;
	return 0;
}

/* A root relayd does not fall back on the shared nobody silently: any
 * other process of that uid could read and ptrace handlers. An explicit
 * RELAY_SANDBOX_USER=nobody accepts it (RELAYD-SBX01, relayd/apps.c).
 * Checked last, so that a malformed variable is named first. */
static int check_sandbox_user(const relayd_config *c, char *errbuf,
			      size_t size)
{
	if (geteuid() == 0 && strcmp(c->sandbox, "bwrap") == 0 &&
	    !c->sandbox_user && !c->sandbox_uids)
		return fail(errbuf, size,
			    "RELAY_SANDBOX_USER: not set, and a root relayd "
			    "will not run handlers as the shared user nobody "
			    "(uid 65534) by default: set RELAY_SANDBOX_UIDS="
			    "LO-HI (a uid per app), RELAY_SANDBOX_USER="
			    "relay-sandbox (the dedicated user meson install "
			    "provides; systemd-sysusers creates it), or "
			    "RELAY_SANDBOX_USER=nobody to accept sharing it "
			    "(doc/sandbox.md, Host user)");
	return 0;
}

int relayd_config_load(relayd_config *c, char *errbuf, size_t size)
{
	static const char *const required[] = {
		"REDIS_URI", "REDIS_STREAM", "REDIS_GROUP",
	};
	const char *v;
	size_t i;

	set_defaults(c);
	for (i = 0; i < sizeof(required) / sizeof(required[0]); i++)
		if (!env(required[i]))
			return fail(errbuf, size,
				    "%s: not set (required)", required[i]);
	if (check_uri(c, env("REDIS_URI"), errbuf, size))
		return -1;
	c->stream = xstrdup(env("REDIS_STREAM"));
	{
		relay_error err;
		char q[1024];

		memset(&err, 0, sizeof(err));
		if (relay_stream_list_parse(c->stream, &c->streams,
					    &c->nstreams, &err))
			return fail(errbuf, size, "REDIS_STREAM: invalid "
				    "value \"%s\": %s",
				    quote_safe(c->stream, q, sizeof(q)),
				    err.text);
	}
	c->group = xstrdup(env("REDIS_GROUP"));
	if ((v = env("REDIS_CONSUMER")))
		set_str(&c->consumer, v);
	if ((v = env("RELAY_APPS_DIR")))
		set_str(&c->apps_dir, v);
	if ((v = env("RELAY_RUN_DIR")))
		set_str(&c->run_dir, v);
	if ((v = env("RELAY_STATE_DIR")))
		set_str(&c->state_dir, v);
	if (strlen(c->run_dir) > 90)
		return fail(errbuf, size,
			    "RELAY_RUN_DIR: invalid value \"%s\": longer than "
			    "90 bytes (the control socket path would not "
			    "fit)", c->run_dir);
	if (load_numbers(c, errbuf, size) || load_enums(c, errbuf, size) ||
	    load_warm(c, errbuf, size) ||
	    load_time_scale(c, errbuf, size) ||
	    load_sched_clock(c, errbuf, size) ||
	    load_output_budget(c, errbuf, size))
		return -1;
	if ((v = env("METRICS_ADDR")) && check_metrics(c, v, errbuf, size))
		return -1;
	/* OTEL_*: the exporter's own reader (relayd/otlp/config.c); its
	 * errors name the variable, never a header value. */
	if (relay_otlp_config_load(&c->otlp, getenv, errbuf, size))
		return -1;
	if (load_tls(c, errbuf, size))
		return -1;
	return check_sandbox_user(c, errbuf, size);
}

void relayd_config_tls(const relayd_config *c, relay_redis_options *o)
{
	o->tls_ca_file = c->tls_ca_file;
	o->tls_ca_dir = c->tls_ca_dir;
	o->tls_cert_file = c->tls_cert_file;
	o->tls_key_file = c->tls_key_file;
	o->tls_server_name = c->tls_server_name;
	o->tls_no_verify = c->tls_no_verify;
}

void relayd_config_clear(relayd_config *c)
{
	if (!c)
		return;
	relay_otlp_config_clear(&c->otlp);
	free(c->redis_uri);
	free(c->redis_uri_safe);
	free(c->stream);
	relay_stream_list_free(c->streams);
	free(c->group);
	free(c->consumer);
	free(c->apps_dir);
	free(c->run_dir);
	free(c->state_dir);
	free(c->metrics_host);
	free(c->sandbox);
	free(c->sandbox_user);
	free(c->sandbox_uids);
	free(c->tls_ca_file);
	free(c->tls_ca_dir);
	free(c->tls_cert_file);
	free(c->tls_key_file);
	free(c->tls_server_name);
	memset(c, 0, sizeof(*c));
}
