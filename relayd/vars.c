/*
 * vars.c - the one list of relayd's environment variables.
 *
 * `relayd --help` prints it, start-up warns about a variable that looks
 * like ours but is not in it (RELAYD-CFG01, naming the closest known
 * one: any name with our prefixes, and any name a typo away from one of
 * ours), and tests/daemon/test_operator.py (one_list_of_variables)
 * checks that doc/configuration.md (C-2, C-4, C-6) and relayd(8) list
 * exactly these names. config.c reads the values; a variable added there
 * must be added here (the test fails otherwise: the docs would not list
 * it). The variables the library reads (C-6) are rows too, marked
 * `library`: they are known, and --help lists them under their own
 * heading.
 *
 * Thread-safety: constant data; relayd_vars_warn_unknown() reads environ
 * and runs once, before any thread exists.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "relayd.h"

extern char **environ;

const relayd_var relayd_vars[] = {
	{ "REDIS_URI", "required: host:port, redis://[user:pass@]host:port"
	  "[/db], rediss://... (TLS), redis+sentinel://[user:pass@]host:port"
	  "[,...]/master[/db], unix:///path", false },
	{ "REDIS_TLS_CA_FILE", "rediss://: CA bundle (default: the system "
	  "trust store)", false },
	{ "REDIS_TLS_CA_DIR", "rediss://: hashed CA directory", false },
	{ "REDIS_TLS_CERT_FILE", "rediss://: client certificate (mutual "
	  "TLS), with REDIS_TLS_KEY_FILE", false },
	{ "REDIS_TLS_KEY_FILE", "rediss://: the client certificate's key",
	  false },
	{ "REDIS_TLS_SERVER_NAME", "rediss://: SNI and verified name "
	  "(default: the host)", false },
	{ "REDIS_TLS_VERIFY", "rediss://: on (default) or off (warns)", false },
	{ "REDIS_STREAM", "required: the stream, a comma-separated list or "
	  "PREFIX{A..B}", false },
	{ "REDIS_GROUP", "required: the consumer group", false },
	{ "REDIS_CONSUMER", "default: the host name", false },
	{ "RELAY_APPS_DIR", "default: /etc/relay/apps", false },
	{ "RELAY_RUN_DIR", "default: /run/relay (relay.sock, relay.lock)",
	  false },
	{ "RELAY_STATE_DIR", "default: /var/lib/relay (stats.json, "
	  "schedule-outbox.json)", false },
	{ "MAX_CONCURRENCY", "default: 8 (alias: MAX_CONCURRENT_INVOCATIONS)",
	  false },
	{ "MAX_CONCURRENT_INVOCATIONS", "the same as MAX_CONCURRENCY", false },
	{ "MAX_BUFFERED_EVENTS", "default: 16", false },
	{ "MAX_EVENT_BYTES", "default: 256KiB (at most 1MiB)", false },
	{ "METRICS_ADDR", "host:port or :port of /metrics, /healthz, /readyz "
	  "(unset: off)", false },
	{ "LOG_LEVEL", "DEBUG, INFO (default), WARN, ERROR", false },
	{ "LOG_FORMAT", "text (default) or json", false },
	{ "RELAY_SANDBOX", "bwrap (default) or none", false },
	{ "RELAY_SANDBOX_USER", "host user of the sandbox when root (unset: "
	  "refused, set nobody to accept it)", false },
	{ "RELAY_SANDBOX_UIDS", "LO-HI: a host uid per app when root (default: "
	  "off, every app as RELAY_SANDBOX_USER)", false },
	{ "RELAY_WARM", "1 (default) or 0: warm sandboxes", false },
	{ "RELAY_OUTCOMES", "1 (default) or 0: each attempt's outcome on "
	  "relay:<stream>:outcomes (relayctl tail)", false },
	{ "RELAY_WARM_MAX_PARENTS", "default: 32", false },
	{ "RELAY_WARM_IDLE", "default: 5m", false },
	{ "RELAY_WARM_START_TIMEOUT_MS", "default: 2000 (a starting parent "
	  "gets 5000 more)", false },
	{ "OUTPUT_BUDGET", "log bytes of handler output per app per minute "
	  "(default: 8MiB; off)", false },
	{ "REDIS_INVOCATION_RETENTION", "default: 168h", false },
	{ "REDIS_STREAM_RETENTION", "default: 24h (0: off)", false },
	{ "REDIS_DLQ_RETENTION", "default: 168h (0: off)", false },
	{ "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "trace export URL (unset: "
	  "OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces; neither: off)", false },
	{ "OTEL_EXPORTER_OTLP_ENDPOINT", "OTLP/HTTP base URL (unset: no "
	  "trace export)", false },
	{ "OTEL_EXPORTER_OTLP_HEADERS", "key=value,... sent with every "
	  "export (never logged)", false },
	{ "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "the same, for traces; wins "
	  "over OTEL_EXPORTER_OTLP_HEADERS", false },
	{ "OTEL_EXPORTER_OTLP_TIMEOUT", "ms per export request (default: "
	  "10000)", false },
	{ "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf (the only one; "
	  "another value turns export off)", false },
	{ "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "the same, for traces; wins "
	  "over OTEL_EXPORTER_OTLP_PROTOCOL", false },
	{ "OTEL_SDK_DISABLED", "true: no trace export", false },
	{ "OTEL_SERVICE_NAME", "service.name (default: unknown_service:"
	  "relayd)", false },
	{ "OTEL_RESOURCE_ATTRIBUTES", "key=value,... resource attributes",
	  false },
	{ "OTEL_TRACES_SAMPLER", "default: parentbased_always_on", false },
	{ "OTEL_TRACES_SAMPLER_ARG", "the ratio of *traceidratio (default: "
	  "1.0)", false },
	{ "OTEL_BSP_SCHEDULE_DELAY", "ms between exports (default: 5000)",
	  false },
	{ "OTEL_BSP_MAX_QUEUE_SIZE", "spans waiting at most (default: 2048)",
	  false },
	{ "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "spans per export (default: 512)",
	  false },
	{ "OTEL_BSP_EXPORT_TIMEOUT", "ms an export may take (default: "
	  "30000)", false },
	{ "NOTIFY_SOCKET", "set by systemd (Type=notify): READY=1, STATUS=, "
	  "STOPPING=1 go there", false },
	{ "JOURNAL_STREAM", "set by systemd: stderr is the journal (priority "
	  "prefixes, no timestamp)", false },
	{ "RELAY_TEST_TIME_SCALE", "test builds only: divide fixed internal "
	  "durations", false },
	{ "RELAY_TEST_SCHEDULE_CLOCK", "test builds only: a virtual schedule "
	  "clock", false },
	/* Read by the library or its helpers rather than by relayd's
	 * config (doc/configuration.md C-6); --help lists them apart. */
	{ "RELAY_WARM_NODE", "node apps' warm start: fork (the fork server) "
	  "or prestart (default: fork where built)", true },
	{ "RELAY_BOOTSTRAP_DIR", "where the python3/node bootstraps are "
	  "(default: the installed ones)", true },
	{ "RELAY_WARM_SLOT", "another relay-warm-slot.so (default: the "
	  "installed one)", true },
	{ "RELAY_WARM_EXEC", "another relay-warm-exec (default: the installed "
	  "one)", true },
	{ "TZDIR", "where schedules' zone files are (default: "
	  "/usr/share/zoneinfo)", true },
	{ "PATH", "where handlers' interpreters and commands are found",
	  true },
	{ NULL, NULL, false },
};

static const char *const prefixes[] = {
	"RELAY_", "REDIS_", "METRICS_", "LOG_", "MAX_", NULL,
};

bool relayd_var_known(const char *name, size_t len)
{
	size_t i;

	for (i = 0; relayd_vars[i].name; i++)
		if (strlen(relayd_vars[i].name) == len &&
		    memcmp(relayd_vars[i].name, name, len) == 0)
			return true;
	return false;
}

/* Levenshtein distance of @a[0..@al) and @b (both short: names). */
size_t relayd_edit_distance(const char *a, size_t al, const char *b)
{
	size_t bl = strlen(b), i, j, row[64], prev, tmp;

	if (al >= 63 || bl >= 63)
		return (size_t)-1;
	for (j = 0; j <= bl; j++)
		row[j] = j;
	for (i = 1; i <= al; i++) {
		prev = row[0];
		row[0] = i;
		for (j = 1; j <= bl; j++) {
			size_t best = prev + (a[i - 1] != b[j - 1]);

			tmp = row[j];
			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			prev = tmp;
		}
	}
	return row[bl];
}

/* The closest entry and its distance (*@dist); NULL for a name too long
 * to compare (63 bytes or more). */
static const char *closest(const char *name, size_t len, size_t *dist)
{
	const char *best = NULL;
	size_t d, bestd = (size_t)-1, i;

	for (i = 0; relayd_vars[i].name; i++) {
		d = relayd_edit_distance(name, len, relayd_vars[i].name);
		if (d < bestd) {
			bestd = d;
			best = relayd_vars[i].name;
		}
	}
	*dist = bestd;
	return best;
}

const char *relayd_var_closest(const char *name, size_t len)
{
	size_t d;

	return closest(name, len, &d);
}

/*
 * A near miss: a name that is not ours but within a typo of one of ours,
 * whatever its prefix (METRIC_ADDR, OTEL_SERVICE_NAM, RELAYWARM). One
 * edit for a name of 6 or 7 bytes, two from 8 on; a shorter name is
 * never taken for ours, so the environment's usual short names (HOME,
 * TERM, LANG, PWD, PATHS) are left alone.
 */
static bool near_miss(size_t len, size_t dist)
{
	if (len < 6)
		return false;
	return dist > 0 && dist <= (len >= 8 ? 2u : 1u);
}

/* Printable for a log line: control bytes and non-ASCII become '?'. */
static void safe_name(char *dst, size_t size, const char *s, size_t len)
{
	size_t i;

	if (len >= size)
		len = size - 1;
	for (i = 0; i < len; i++)
		dst[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	dst[len] = '\0';
}

size_t relayd_vars_warn_unknown(void)
{
	size_t n = 0, i;
	char **e;

	for (e = environ; e && *e; e++) {
		const char *eq = strchr(*e, '='), *best;
		size_t len = eq ? (size_t)(eq - *e) : strlen(*e), dist;
		char name[80];

		if (relayd_var_known(*e, len))
			continue;
		best = closest(*e, len, &dist);
		for (i = 0; prefixes[i]; i++)
			if (strncmp(*e, prefixes[i], strlen(prefixes[i])) == 0)
				break;
		if (!prefixes[i] && !(best && near_miss(len, dist)))
			continue;
		safe_name(name, sizeof(name), *e, len);
		relayd_log(RELAY_LOG_WARN, "RELAYD-CFG01",
			   "unknown variable %s is ignored%s%s%s "
			   "(relayd --help lists every variable)", name,
			   best ? "; did you mean " : "", best ? best : "",
			   best ? "?" : "");
		n++;
	}
	return n;
}

void relayd_vars_usage(FILE *f)
{
	size_t i;

	for (i = 0; relayd_vars[i].name; i++)
		if (!relayd_vars[i].library)
			fprintf(f, "  %-28s %s\n", relayd_vars[i].name,
				relayd_vars[i].help);
	fprintf(f, "Read by the library and its helpers:\n");
	for (i = 0; relayd_vars[i].name; i++)
		if (relayd_vars[i].library)
			fprintf(f, "  %-28s %s\n", relayd_vars[i].name,
				relayd_vars[i].help);
}
