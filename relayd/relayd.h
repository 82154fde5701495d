/*
 * relayd/relayd.h - private declarations shared by relayd's files.
 *
 * relayd is a thin host around librelay: config.c reads the environment
 * (doc/configuration.md C-2), log.c is the stderr logger, control.c serves the
 * control socket, http.c serves /metrics, stats.c renders metrics and the
 * stats file, main.c orders the start-up (args.c: the command line;
 * startup.c: the steps and the shutdown; signals.c: signals, timers and
 * the stop; publish.c: stats file, /metrics and tracing).
 */
#ifndef RELAYD_H
#define RELAYD_H

#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>

#include "relay/log.h"
#include "otlp/otlp.h"

/* ---- config.c --------------------------------------------------------- */

typedef struct relayd_config {
	char *redis_uri;          /* REDIS_URI, as given (holds secrets) */
	char *redis_uri_safe;     /* the same with the password replaced */
	char *tls_ca_file;        /* REDIS_TLS_CA_FILE, or NULL */
	char *tls_ca_dir;         /* REDIS_TLS_CA_DIR, or NULL */
	char *tls_cert_file;      /* REDIS_TLS_CERT_FILE, or NULL */
	char *tls_key_file;       /* REDIS_TLS_KEY_FILE, or NULL */
	char *tls_server_name;    /* REDIS_TLS_SERVER_NAME, or NULL */
	int tls_no_verify;        /* REDIS_TLS_VERIFY=off */
	char *stream;             /* REDIS_STREAM, as given */
	char **streams;           /* ... the streams it names
				     (relay_stream_list_parse()) */
	size_t nstreams;          /* >= 1 */
	char *group;              /* REDIS_GROUP */
	char *consumer;           /* REDIS_CONSUMER or the hostname */
	char *apps_dir;           /* RELAY_APPS_DIR */
	char *run_dir;            /* RELAY_RUN_DIR */
	char *state_dir;          /* RELAY_STATE_DIR */
	int max_concurrency;      /* MAX_CONCURRENCY */
	int max_buffered;         /* MAX_BUFFERED_EVENTS */
	size_t max_event_bytes;   /* MAX_EVENT_BYTES */
	char *metrics_host;       /* METRICS_ADDR host, NULL = off */
	int metrics_port;         /* METRICS_ADDR port */
	relay_log_level log_level;/* LOG_LEVEL */
	bool log_json;            /* LOG_FORMAT=json */
	char *sandbox;            /* RELAY_SANDBOX: "bwrap" or "none" */
	bool warm;                /* RELAY_WARM (default on) */
	bool no_outcomes;         /* RELAY_OUTCOMES=0 (default: on) */
	unsigned int warm_max_parents; /* RELAY_WARM_MAX_PARENTS */
	int64_t warm_idle_ms;     /* RELAY_WARM_IDLE */
	unsigned int warm_start_timeout_ms; /* RELAY_WARM_START_TIMEOUT_MS */
	char *sandbox_user;       /* RELAY_SANDBOX_USER, NULL = nobody */
	char *sandbox_uids;       /* RELAY_SANDBOX_UIDS "LO-HI", NULL = off */
	int64_t retention_ms;     /* REDIS_INVOCATION_RETENTION */
	int64_t stream_retention_ms; /* REDIS_STREAM_RETENTION, 0 = off */
	int64_t dlq_retention_ms; /* REDIS_DLQ_RETENTION, 0 = off */
	uint64_t output_budget;   /* OUTPUT_BUDGET, bytes/app/minute; 0 off */
	unsigned int time_scale;  /* RELAY_TEST_TIME_SCALE (1 = off) */
	bool time_scale_ignored;  /* set in a release build: say so */
	/* RELAY_TEST_SCHEDULE_CLOCK=V[:A[:R]] (test builds only): the
	 * schedule clock reads V at real Unix time A (default: start-up)
	 * and advances R virtual seconds per real second (default 1). */
	bool sched_clock_set;
	bool sched_clock_ignored; /* set in a release build: say so */
	int64_t sched_clock_v;        /* virtual Unix seconds at anchor */
	int64_t sched_clock_anchor_ms;/* real Unix ms */
	int64_t sched_clock_rate;     /* virtual s per real s */
	relay_otlp_config otlp;   /* OTEL_*: trace export (otlp/otlp.h) */
} relayd_config;

#define RELAYD_MAX_EVENT_BYTES_LIMIT (1024u * 1024u)

/*
 * Read the configuration from the environment. On failure, @errbuf holds
 * one line naming the variable and the problem (never a secret) and the
 * return value is -1.
 */
int relayd_config_load(relayd_config *c, char *errbuf, size_t size);
/* Set @o's TLS fields (borrowed from @c) from REDIS_TLS_*. */
struct relay_redis_options;
void relayd_config_tls(const relayd_config *c,
		       struct relay_redis_options *o);

/* ---- the list of variables (vars.c) ---- */

typedef struct relayd_var {
	const char *name;
	const char *help;         /* one line for --help */
	bool library;             /* read by librelay or its helpers
				     (configuration.md C-6), not config.c */
} relayd_var;

/* Every variable relayd reads, NULL-terminated (the one list: --help,
 * the unknown-variable warning and the docs' test use it). */
extern const relayd_var relayd_vars[];
/* Is @name[0..@len) one of relayd_vars, or read by the library? */
bool relayd_var_known(const char *name, size_t len);
/* The Levenshtein distance of @a[0..@al) and @b; (size_t)-1 when
 * either has 63 bytes or more. */
size_t relayd_edit_distance(const char *a, size_t al, const char *b);
/* The entry of relayd_vars closest to @name[0..@len) (edit distance). */
/* (NULL for a name of 63 bytes or more, too long to compare.) */
const char *relayd_var_closest(const char *name, size_t len);
/* Log RELAYD-CFG01 for each variable of the environment that is not
 * known and starts RELAY_, REDIS_, METRICS_, LOG_ or MAX_ or is within a
 * typo of a known one (edit distance); how many. */
size_t relayd_vars_warn_unknown(void);
/* Print relayd_vars, one "  NAME  help" line each. */
void relayd_vars_usage(FILE *f);

/* relayd --check (check.c): check apps, sandbox, Redis and metrics for
 * the loaded @c, print one line each on stdout; the exit status (0 ok,
 * 1 not). Blocking (Redis PING bounded by 2 s + 3 s). */
int relayd_check(const relayd_config *c);
void relayd_config_clear(relayd_config *c);

/* Parsers, exposed for reuse. Return 0 or -1. */
int relayd_parse_size(const char *s, size_t *out);
int relayd_parse_duration_ms(const char *s, int64_t *out);

/* ---- log.c ------------------------------------------------------------ */

/* Install the stderr logger; @json selects LOG_FORMAT=json. */
void relayd_log_init(relay_log_level level, bool json);
/* The librelay logger that forwards to stderr. */
relay_logger relayd_logger(void);
/* The same, adding stream=@stream (borrowed; must outlive the logger)
 * to every line: one stream's engine when relayd reads several. */
relay_logger relayd_logger_stream(const char *stream);
bool relayd_log_enabled(relay_log_level lvl);
/*
 * Log one line. @kv is a NULL-terminated list of key, value pairs (values
 * already strings) rendered as key=value (text) or JSON members. Returns
 * the bytes written to stderr: 0 when @lvl is filtered out (or memory ran
 * out).
 */
size_t relayd_logkv(relay_log_level lvl, const char *msgid,
		    const char *const *kv, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
#define relayd_log(lvl, msgid, ...) relayd_logkv(lvl, msgid, NULL, __VA_ARGS__)
/*
 * The log record of a handler output line @text (@len bytes, its prefix
 * of @prefix_len bytes included), exactly as relayd_log_write() would put
 * it on stderr in the active LOG_FORMAT, newline included: malloc'd (the
 * caller frees it), its length in *@n; NULL on ENOMEM. In json mode the
 * record also names the line's app, handler and message_id (from the
 * prefix) and @stream (when not NULL). Output lines are logged at every
 * level.
 */
char *relayd_log_output_record(const char *text, size_t len,
			       size_t prefix_len, bool is_stderr,
			       const char *stream, size_t *n);
/* Write @n bytes of @rec (a record) to stderr in one go. */
void relayd_log_write(const char *rec, size_t n);
/*
 * Copy @src into @dst (@size bytes, NUL-terminated, cut to fit) with the
 * bytes a terminal would act on written as \xNN: C0 controls, DEL and
 * the UTF-8 encodings of the C1 controls (U+0080..U+009F, e.g. CSI).
 * Everything else, UTF-8 included, is copied as is. For the lines relayd
 * prints before its logger exists (configuration errors, --check), which
 * echo environment values, paths and texts from Redis or templates.
 * Returns @dst.
 */
char *relayd_escape_ctl(const char *src, char *dst, size_t size);
/*
 * A JSON string (a json_t *) of @len bytes of @text, bytes not UTF-8 as
 * '?' (jansson refuses them). New reference; "" when memory ran short,
 * NULL only when even that failed.
 */
void *relayd_json_lossy(const char *text, size_t len);

/* ---- stats.c ---------------------------------------------------------- */

#include "relay/engine.h"

/* The schedule publisher's counters (schedpub.c), since start-up. */
typedef struct relayd_schedpub_counts {
	uint64_t published;   /* occurrences this daemon appended */
	uint64_t duplicate;   /* ... already published (by anyone) */
	uint64_t failures;    /* failed publication attempts */
	uint64_t catchup;     /* published by the start-up catch-up */
	uint64_t pending;     /* gauge: occurrences waiting (outbox) */
} relayd_schedpub_counts;

/* The retention scheduler's counters and gauges (retention.c). */
typedef struct relayd_retention_counts {
	uint64_t stream_trimmed;      /* entries trimmed from the stream */
	uint64_t dlq_trimmed;         /* ... from the DLQ */
	uint64_t failures;            /* failed retention steps */
	int64_t stream_retention_ms;  /* 0 = off */
	int64_t dlq_retention_ms;     /* 0 = off */
	int64_t stream_length;        /* gauges as of the last step; */
	int64_t dlq_length;           /* -1 = not known yet */
	int64_t oldest_entry_age_ms;  /* first stream entry; 0 = empty */
	int64_t oldest_pending_age_ms;/* oldest PEL entry of any group */
	bool failing;                 /* the last step failed */
} relayd_retention_counts;

/* The app set's gauges (relay/daemon_metrics.h RELAY_APPS_FIGURES). */
typedef struct relayd_apps_counts {
	uint64_t loaded;      /* entries with a loaded app */
	uint64_t invalid;     /* entries that never loaded */
	uint64_t stale;       /* loaded, serving a previous version */
} relayd_apps_counts;

typedef struct relayd_hist {
	char *app;
	char *handler;
	uint64_t buckets[RELAY_CONSUMER_DURATION_NBUCKETS]; /* cumulative */
	uint64_t count;
	double sum_s;
	uint64_t succeeded, failed, timed_out, exhausted; /* outcomes */
} relayd_hist;

/* A point-in-time copy of everything /metrics and the stats file show,
 * taken on the loop thread. */
/* ---- warmstats.c ------------------------------------------------------ */

typedef struct relayd_warm_parent {
	char *app;
	char state[12];
	unsigned int inflight;
	uint64_t rss_bytes;
} relayd_warm_parent;

typedef struct relayd_warm_snap {
	relay_runtime_warm_stats st;
	relayd_warm_parent *parents;
	size_t nparents;
} relayd_warm_snap;

void relayd_warm_take(relayd_warm_snap *w, const relay_runtime *rt);
void relayd_warm_clear(relayd_warm_snap *w);
void relayd_warm_prometheus(FILE *f, const relayd_warm_snap *w);
/* {"warm_starts":…, "cold_starts":…, "failures":{…}, "parents":[…]} */
void *relayd_warm_json(const relayd_warm_snap *w);

/* One stream's own figures (several streams only). */
typedef struct relayd_stream_stats {
	const char *name;          /* borrowed from the config */
	relay_consumer_metrics m;
} relayd_stream_stats;

typedef struct relayd_stats {
	relay_consumer_metrics m;  /* the engine's counters and gauges,
				      summed over the streams */
	relayd_stream_stats *streams; /* per stream, when nstreams > 1 */
	size_t nstreams;           /* 0 with one stream */
	relayd_warm_snap warm;     /* the runtime's warm path */
	relayd_hist *hists;        /* per app/handler durations */
	size_t nhists;
	int64_t started_at_ms;     /* wall clock */
	int64_t reset_at_ms;       /* last `stats reset`, 0 = never */
	relayd_schedpub_counts sp; /* the schedule publisher */
	relayd_retention_counts ret; /* stream and DLQ retention */
	relayd_apps_counts apps;   /* the app set */
} relayd_stats;

/* Fill @s from the @n consumers of streams @names (0 or -1 on
 * allocation failure): s->m sums them (counters and gauges; redis_up is
 * 1 only when every consumer's is; the oldest pending age is the
 * largest), the histograms are merged per app/handler, and with more
 * than one stream s->streams holds each stream's own figures. */
int relayd_stats_take(relayd_stats *s, relay_consumer *const *c,
		      char *const *names, size_t n);
void relayd_stats_clear(relayd_stats *s);
/* A Prometheus label value with \\, \" and newline escaped. */
void relayd_prom_label(FILE *f, const char *v);
/* A sample value: the shortest decimal that reads back as @v exactly
 * (integers without a fraction), or NaN, +Inf, -Inf. */
void relayd_prom_double(FILE *f, double v);
/* procmetrics.c: the process_* families (CPU, memory, descriptors, start
 * time) of relayd itself, read from /proc/self; a figure that cannot be
 * read is left out. */
void relayd_process_prometheus(FILE *f);
/* Prometheus text exposition (0.0.4). Returns a malloc'd string or NULL. */
char *relayd_stats_prometheus(const relayd_stats *s, size_t *len);
/* The stats file body (doc/protocol.md): a json_t object (new). */
void *relayd_stats_json(const relayd_stats *s, const relayd_config *c);
/* Write @data to @dir/@name atomically (temp + fsync + rename). The temp
 * file is created with O_EXCL|O_NOFOLLOW: nothing planted at its name is
 * ever followed or overwritten. */
int relayd_write_atomic(const char *dir, const char *name, const char *data,
			size_t len);

/* ---- http.c ----------------------------------------------------------- */

typedef struct relayd_http relayd_http;

/* The readiness /readyz answers with from now on (the loop sets it with
 * each /metrics publication): 200 "ready" or 503 "not ready: WORD", WORD
 * one of "starting", "stopping", "redis: unreachable", "redis: auth
 * failed" read from @reason (a relayd_health() reason, which stays out
 * of the answer). When the answer changes to one that hides a detail,
 * @reason is logged once (RELAYD-MET02). /healthz answers 200 while the
 * server runs. Any thread. */
void relayd_http_set_ready(relayd_http *h, bool ready, const char *reason);

/* Start the /metrics server; NULL on failure with @errbuf set. */
relayd_http *relayd_http_start(const char *host, int port, char *errbuf,
			       size_t size);
/* Replace the served text (steals @text, a malloc'd string). */
void relayd_http_publish(relayd_http *h, char *text, size_t len);
void relayd_http_stop(relayd_http *h);
/* Whether metrics support was built in (libmicrohttpd). */
bool relayd_http_available(void);

/* ---- outbudget.c ------------------------------------------------------ */

/* The per-app budget of handler output over time (OUTPUT_BUDGET). */
typedef struct relayd_outbudget relayd_outbudget;

/* @per_minute bytes per app per minute; 0 = no budget. NULL on ENOMEM. */
relayd_outbudget *relayd_outbudget_new(uint64_t per_minute);
void relayd_outbudget_free(relayd_outbudget *b);
/*
 * Whether the output line @text (@len bytes, "[app/handler…] stream: "
 * prefix of @prefix_len bytes), whose log record is @cost bytes, fits its
 * app's budget. The budget is charged @cost (what relayd writes, not the
 * handler's bytes) and the RELAYD-OUT01/02 notices it logs; a line that
 * does not fit counts its handler bytes (text after the prefix plus the
 * newline) as dropped.
 */
bool relayd_outbudget_take(relayd_outbudget *b, const char *text,
			   size_t len, size_t prefix_len, size_t cost);
/* The relay_output_dropped_bytes_total samples (malloc'd), or NULL. */
char *relayd_outbudget_prometheus(const relayd_outbudget *b, size_t *len);

/* ---- control.c -------------------------------------------------------- */

struct ev_loop;
typedef struct relayd_control relayd_control;
typedef struct relayd_request relayd_request;

/*
 * A request handler: gets the decoded request (a json_t object, borrowed)
 * and answers, now or later, with relayd_request_reply() exactly once.
 */
typedef void (*relayd_control_fn)(relayd_request *req, void *req_json,
				  void *payload);

/*
 * Listen on @path (mode 0600). A connection with no request outstanding
 * for @idle_s seconds is closed. NULL on failure with @errbuf set.
 */
relayd_control *relayd_control_start(struct ev_loop *loop, const char *path,
				     double idle_s, relayd_control_fn fn,
				     void *payload, char *errbuf, size_t size);
/* Stop listening and drop clients; pending requests are answered never
 * (their replies are discarded). */
void relayd_control_stop(relayd_control *c);
/* Answer a request; steals @resp (a json_t object). */
void relayd_request_reply(relayd_request *req, void *resp);
/* Convenience: {"ok":false,"error":@msg}. */
void relayd_request_fail(relayd_request *req, const char *code,
			 const char *msg);

/* ---- notify.c: the service manager's NOTIFY_SOCKET ------------------- */

/* Read NOTIFY_SOCKET; 0 (also when unset: notifying is then off), or -1
 * after a logged warning (off). Before any thread starts. */
int relayd_notify_init(void);
bool relayd_notify_enabled(void);
/* Send @msg (VAR=value lines) as one datagram; no-op when off. */
void relayd_notify(const char *msg);
/* Send @prefix (assignments ending in a newline, or "") and then
 * STATUS=@status, control characters of @status written as '?'. */
void relayd_notify_status(const char *prefix, const char *status);
void relayd_notify_close(void);

/* ---- the daemon (main.c, startup.c, signals.c, publish.c, apps.c,
 *      commands.c) --------------------------------------------------- */

#include <ev.h>

typedef struct relayd {
	relayd_config cfg;
	struct ev_loop *loop;
	int lock_fd;                 /* holds flock(RELAY_RUN_DIR/relay.lock) */
	relay_redis_backend **sredis; /* on loop, one per stream: its
					consumer's, and its keys' (retention,
					schedules; relayd_stream_redis()); a
					blocked XREADGROUP holds up no other
					stream */
	relay_redis_backend **credis; /* on loop, one per stream, opened
					like sredis but connected only on
					first use: dlq replay's XRANGE and
					XDEL (relayd_ctl_redis()), never
					queued behind the stream's blocked
					XREADGROUP */
	relay_runtime *rt;           /* attached to loop */
	relay_appset *apps;          /* the set the consumer uses */
	void *stale;                 /* json_t object, app -> [error, ...]:
					the apps serving a previous version
					(apps.c); NULL: none */
	relay_consumer **consumers;  /* one per cfg.streams[i], NULL once
					closed */
	size_t nconsumers;           /* cfg.nstreams */
	size_t nopen;                /* not closed yet */
	size_t nstopped;             /* reported stopped */
	relay_slots *slots;          /* shared by every consumer */
	relayd_control *ctl;
	relayd_http *http;
	relayd_outbudget *outbudget; /* per-app handler output budget */
	relay_otlp *otlp;            /* trace exporter, NULL = off */
	ev_timer otlp_drain;         /* the last spans' export at exit */
	double otlp_drain_until;     /* ... given up then (ev_now) */
	struct relayd_outctx *outctx; /* output payloads, one per stream */
	struct relayd_schedpub *schedpub; /* schedule publisher */
	struct relayd_retention *retention; /* stream/DLQ retention */
	ev_signal sig_term, sig_int, sig_hup;
	ev_timer metrics_timer;      /* re-render /metrics */
	ev_timer stats_timer;        /* flush the stats file */
	ev_timer notify_timer;       /* READY=1 and STATUS= (NOTIFY_SOCKET) */
	bool notified_ready;         /* READY=1 sent */
	char notified_status[256];   /* the last STATUS= sent */
	ev_io inotify_io;            /* apps directory watch */
	ev_timer reload_timer;       /* debounce of inotify events */
	int inotify_fd;              /* -1 when not watching */
	int signals;                 /* stop signals received */
	int64_t started_at_ms;
	int64_t reset_at_ms;
	int exit_code;
} relayd;

/* The first stream's consumer not closed yet (app invoke and dlq replay
 * run through it), or NULL once every one is closed: consumers close one
 * by one at shutdown. */
static inline relay_consumer *relayd_consumer(const relayd *d)
{
	size_t i;

	for (i = 0; d->consumers && i < d->nconsumers; i++)
		if (d->consumers[i])
			return d->consumers[i];
	return NULL;
}

/* The connection for the keys of @stream (one of cfg.streams): its
 * consumer's, which on Redis Cluster stays on the master owning that
 * stream's slot, so that work on several streams (retention, schedule
 * publishing, dlq replay) does not move one connection from master to
 * master. The first stream's for any other name. */
relay_redis_backend *relayd_stream_redis(const relayd *d, const char *stream);

/* The control connection for the keys of @stream (one of cfg.streams):
 * for commands a control request waits on (dlq replay), which on the
 * stream's own connection would wait up to the BLOCK time of an idle
 * stream's XREADGROUP. Opened like the stream's (URI, TLS), it connects
 * on first use and, on a cluster, follows the stream's slot to its
 * master by itself. NULL before start-up, after shutdown or for another
 * name. */
relay_redis_backend *relayd_ctl_redis(const relayd *d, const char *stream);

/* Scale a fixed relayd duration (seconds) by RELAY_TEST_TIME_SCALE. */
double relayd_scaled(const relayd *d, double seconds);
int64_t relayd_wall_ms(void);

/* args.c: the command line. 0 or 2 when relayd is to exit with that
 * status (--help, --version, a usage error, all printed), -1 to run;
 * *@check_only is set by --check. */
int relayd_parse_args(int argc, char **argv, bool *check_only);

/* publish.c: the stats file, /metrics, tracing and NOTIFY_SOCKET. */
/* Write the stats file now (also used at exit and by `stats reset`). */
int relayd_flush_stats(relayd *d);
/* Take a stats snapshot as a json_t object (new), or NULL. */
void *relayd_stats_snapshot(relayd *d);
/* Re-render /metrics and /readyz (no-op without METRICS_ADDR). */
void relayd_publish_metrics(relayd *d);
/* Start the trace exporter when OTEL_* asks for it; logs either way. */
void relayd_start_tracing(relayd *d);
/* The timers' callbacks (w->data is the daemon). */
void relayd_on_metrics_timer(struct ev_loop *loop, ev_timer *w,
			     int revents);
void relayd_on_stats_timer(struct ev_loop *loop, ev_timer *w, int revents);
void relayd_on_notify_timer(struct ev_loop *loop, ev_timer *w, int revents);

/* signals.c: the watchers and the stop sequence. */
/* Ignore SIGPIPE; block SIGTERM, SIGINT and SIGHUP until the watchers
 * exist (a stop asked for during start-up is then a graceful one).
 * Remembers @d, the one daemon, for the consumers' close callbacks. */
void relayd_signals_block(relayd *d);
/* Start the signal watchers (unblocking the signals) and the timers,
 * and watch the apps directory. */
void relayd_start_watchers(relayd *d);
/* Close every consumer not closed yet; the loop ends with the last. */
void relayd_close_consumers(relayd *d);

/* startup.c: the start-up steps; each 0, or -1 with @errbuf set to one
 * line. relayd_shutdown() undoes what was done, in any state. */
int relayd_take_lock(relayd *d, char *errbuf, size_t size);
int relayd_state_dir(relayd *d, char *errbuf, size_t size);
int relayd_open_backends(relayd *d, char *errbuf, size_t size);
int relayd_open_consumers(relayd *d, char *errbuf, size_t size);
int relayd_open_servers(relayd *d, char *errbuf, size_t size);
void relayd_shutdown(relayd *d);

/* apps.c: the app set, its reloads and the inotify watch. */
int relayd_apps_load(relayd *d, char *errbuf, size_t size);
/* Give the apps of @set their host uids (RELAY_SANDBOX_UIDS; a no-op
 * without it) and, as root with the shared default user instead, warn
 * (RELAYD-SBX01, once). 0, or -1 with the reason in @errbuf. */
int relayd_apps_uids(relayd *d, const relay_appset *set, char *errbuf,
		     size_t size);
int relayd_apps_watch(relayd *d);
void relayd_apps_unwatch(relayd *d);
/* Re-read every changed app (SIGHUP, inotify). */
void relayd_apps_reload(relayd *d, const char *why);
/* How many apps are stale: serving their previous version because the
 * template on disk became invalid (as of the last reload). */
size_t relayd_apps_stale_count(const relayd *d);
/* The template errors of stale app @name (a json_t array of strings,
 * borrowed until the next reload), or NULL when it is not stale. */
const void *relayd_apps_stale_errors(const relayd *d, const char *name);

/* schedpub.c: the schedule publisher (every relayd, deduplicated in
 * Redis). */
#define RELAYD_OUTBOX_MAX 1000
typedef struct relayd_schedpub relayd_schedpub;
/* Load the outbox, publish the catch-up, start the minute tick; NULL on
 * allocation failure. */
relayd_schedpub *relayd_schedpub_start(relayd *d);
/* Stop ticking and retrying (stop signal). */
void relayd_schedpub_stop(relayd_schedpub *p);
/* After the Redis backend is freed: write what is pending to the
 * outbox and free. NULL is a no-op. */
void relayd_schedpub_free(relayd_schedpub *p);
void relayd_schedpub_counts_get(const relayd_schedpub *p,
				relayd_schedpub_counts *out);
/* `stats reset`: zero the counters (the pending gauge stays). */
void relayd_schedpub_counts_reset(relayd_schedpub *p);
/* The schedule clock: Unix seconds (virtual under
 * RELAY_TEST_SCHEDULE_CLOCK). */
int64_t relayd_schedule_now(const relayd *d);

/* retention.c: REDIS_STREAM_RETENTION and REDIS_DLQ_RETENTION, one
 * relay_redis_stream_trim() step per target and tick. */
typedef struct relayd_retention relayd_retention;
/* Log what is in effect and start ticking; NULL on allocation failure. */
relayd_retention *relayd_retention_start(relayd *d);
/* Stop ticking (stop signal); a step in flight completes harmlessly. */
void relayd_retention_stop(relayd_retention *r);
/* After the Redis backend is freed. NULL is a no-op. */
void relayd_retention_free(relayd_retention *r);
void relayd_retention_counts_get(const relayd_retention *r,
				 relayd_retention_counts *out);
/* `stats reset`: zero the counters (gauges stay). */
void relayd_retention_counts_reset(relayd_retention *r);
/* The tick for a retention: @ms / 24 within [1m, 1h] (before the time
 * scale); exposed for the start-up log and tests. */
int64_t relayd_retention_tick_ms(int64_t ms);

/* commands.c: the control-socket requests. */
void relayd_command(relayd_request *req, void *req_json, void *payload);

/* commands.c: relayd's health, as `relayctl health` shows it: ready when
 * every stream's consumer is; @reason (NUL-terminated, at most @size)
 * says why not ("" when ready). Loop thread. */
void relayd_health(relayd *d, relay_consumer_health *out, char *reason,
		   size_t size);

#endif /* RELAYD_H */
