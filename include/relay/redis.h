/*
 * relay/redis.h - Redis backends: open by URI, issue commands, read replies.
 *
 * A relay_redis_backend is an asynchronous connection-like handle. Two
 * implementations ship with librelay: "hiredis" (a real server, driven by a
 * libev loop, see relay/relay_libev.h) and "memory" (an in-process store
 * with the same observable semantics, for tests). Backend authors implement
 * the vtable in relay/sys/redis.h.
 *
 * Every asynchronous call follows one rule: a nonzero return means the
 * callback will never run; zero means it runs exactly once, with
 * RELAY_ECLOSED if the backend is freed or disconnects first, and
 * RELAY_ETIMEOUT if the reply takes longer than the command timeout
 * (plus the BLOCK time of an XREAD/XREADGROUP; give such reads a finite
 * BLOCK).
 *
 * The synchronous wrappers (relay_redis_sync_*) run the backend's private
 * loop until the reply arrives; they are meant for relayctl and tests and
 * fail with RELAY_EINVAL on a backend attached to a host loop.
 *
 * Thread-safety: a backend, its callbacks and every reply are confined to
 * the thread that drives it; distinct backends are independent.
 * Logging: the hiredis backend reports through opts.logger with message
 * ids RELAY-REDIS01 (connect failed: the socket path or host:port and the
 * OS error, once per streak of failures), 02 (connection lost), 03
 * (restored),
 * 04 (reconnect scheduled, debug), 05 (command timed out), 06/07
 * (cluster redirect followed, debug/info), 08 (CLUSTER SLOTS entries
 * ignored, warning; the whole map refused, error), 09 (a redirect not
 * followed, warning).
 */
#ifndef RELAY_REDIS_H
#define RELAY_REDIS_H

#include "common.h"
#include "clock.h"
#include "log.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct relay_redis_backend relay_redis_backend;

/**
 * enum relay_redis_reply_type - the RESP2 type of a reply element.
 */
typedef enum relay_redis_reply_type {
	RELAY_REDIS_REPLY_NIL = 0,
	RELAY_REDIS_REPLY_INTEGER = 1,
	RELAY_REDIS_REPLY_STRING = 2,  /* bulk string */
	RELAY_REDIS_REPLY_STATUS = 3,  /* +OK style */
	RELAY_REDIS_REPLY_ERROR = 4,   /* -ERR style; str holds the text */
	RELAY_REDIS_REPLY_ARRAY = 5,
} relay_redis_reply_type;

/**
 * struct relay_redis_reply - an owned copy of a server reply.
 *
 * A transparent value type, like hiredis' redisReply, but owned by librelay
 * allocation: free the root with relay_redis_reply_free(). str is
 * NUL-terminated (len excludes the NUL) for STRING, STATUS and ERROR.
 */
typedef struct relay_redis_reply {
	relay_redis_reply_type type;
	long long integer;                   /* INTEGER */
	char *str;                           /* STRING, STATUS, ERROR */
	size_t len;                          /* bytes in str */
	size_t elements;                     /* ARRAY */
	struct relay_redis_reply **element;  /* ARRAY */
} relay_redis_reply;

/**
 * relay_redis_reply_cb - completion of an asynchronous command.
 * @b: the backend.
 * @status: 0 when a reply arrived (it may be an ERROR reply), otherwise
 *   RELAY_ETIMEOUT, RELAY_ECLOSED, RELAY_EBACKEND or RELAY_ENOMEM.
 * @reply: the reply when @status is 0, else NULL. Ownership: new; the
 *   callback owns it and frees it with relay_redis_reply_free().
 * @payload: the caller's payload.
 */
typedef void (*relay_redis_reply_cb)(relay_redis_backend *b, int status,
				     relay_redis_reply *reply, void *payload);

/** relay_redis_reply_free() - free a reply tree; NULL is a no-op. */
RELAY_EXTERN void relay_redis_reply_free(relay_redis_reply *r);

/**
 * struct relay_redis_options - how to open a backend (versioned).
 *
 * Initialise with RELAY_REDIS_OPTIONS_INIT and set what you need.
 */
typedef struct relay_redis_options {
	unsigned int version;          /* RELAY_REDIS_OPTIONS_VERSION */
	const relay_clock *clock;      /* borrowed; NULL = system clock */
	relay_logger logger;           /* copied; NULL fn discards */
	int connect_timeout_ms;        /* 0 = default 2000 */
	int command_timeout_ms;        /* 0 = default 5000; <0 = none */
	int reconnect_min_ms;          /* 0 = default 1000 */
	int reconnect_max_ms;          /* 0 = default 30000 */
	/* version 1 ends here; later versions append only */
	/*
	 * version 2: TLS, for rediss:// URIs (read by a build with TLS
	 * only, relay_redis_tls_available(); ignored for other URIs).
	 * Paths are read while the backend is opened (borrowed for the
	 * call); an unreadable file fails the open with RELAY_EINVAL.
	 */
	const char *tls_ca_file;       /* PEM CA bundle; NULL and no
					  tls_ca_dir: the system trust
					  store (OpenSSL's default paths,
					  SSL_CERT_FILE/SSL_CERT_DIR) */
	const char *tls_ca_dir;        /* hashed CA directory, or NULL */
	const char *tls_cert_file;     /* client certificate chain (PEM)
					  for mutual TLS, with... */
	const char *tls_key_file;      /* ...its private key; both or
					  neither */
	const char *tls_server_name;   /* SNI and the name verified;
					  NULL: each node's host */
	int tls_no_verify;             /* 1: accept any certificate (a
					  warning is logged at open) */
} relay_redis_options;

#define RELAY_REDIS_OPTIONS_VERSION 2
#define RELAY_REDIS_OPTIONS_INIT { RELAY_REDIS_OPTIONS_VERSION, NULL, \
		{ NULL, NULL, RELAY_LOG_INFO }, 0, 0, 0, 0, NULL, NULL, NULL, \
		NULL, NULL, 0 }

/**
 * relay_redis_open() - open a backend by URI, for synchronous use.
 * @out: set to the new backend on success.
 * @uri: "host:port", "redis://[user:pass@]host:port[/db]",
 *   "unix:///path/to/sock" (hiredis backend) or "memory://" (a fresh,
 *   empty memory backend). The TCP forms may list several "host:port"
 *   seeds separated by ',' (Redis Cluster).
 *   "rediss://[user:pass@]host:port[,host:port...][/db]" is the redis
 *   form over TLS (to every node of a cluster; a build with TLS only,
 *   relay_redis_tls_available(); settings in @opts version 2): the
 *   server's certificate is verified unless opts->tls_no_verify.
 *   "redis+sentinel://[user:pass@]host:port[,host:port...]/master[/db]"
 *   names Redis Sentinels and the master they watch: every connection
 *   first asks every sentinel where the master is and connects only to
 *   an address a majority of them names, checks with ROLE (right after
 *   AUTH, before anything else) that the node is a master (a replica is
 *   refused), and asks again after a lost connection or a READONLY
 *   reply (doc/operations.md, "Redis Sentinel").
 * @opts: options, or NULL for defaults.
 * @err: optional error detail.
 *
 * A hiredis backend opened this way owns a private libev loop, which the
 * synchronous wrappers run; to drive it from the host's loop, use
 * relay_redis_open_libev() instead. Connection happens lazily on the
 * first command. On a Redis Cluster the hiredis backend follows MOVED
 * and ASK replies to nodes of the cluster's topology only (a command
 * redirected elsewhere fails with RELAY_EBACKEND; on a single node the
 * reply is an ordinary ERROR reply), resends TRYAGAIN/CLUSTERDOWN ones,
 * and tries the next known node when one is lost (doc/operations.md,
 * "Redis Cluster"); all keys of one command must share a slot.
 * Returns: 0, RELAY_EINVAL (bad URI or options) or RELAY_ENOMEM.
 * Ownership: *out is new; free with relay_redis_free().
 * Thread-safety: a backend is used from one thread at a time.
 */
RELAY_EXTERN int relay_redis_open(relay_redis_backend **out, const char *uri,
				  const relay_redis_options *opts,
				  relay_error *err);

/**
 * relay_redis_tls_available() - whether this build speaks TLS to Redis.
 *
 * A build with TLS (meson -Dtls, on hiredict) accepts "rediss://" URIs;
 * one without (hiredis 0.14) refuses them with an error naming the build.
 * Returns: 1 or 0. Thread-safety: reentrant.
 */
RELAY_EXTERN int relay_redis_tls_available(void);

/**
 * relay_redis_cluster_check() - the start-up check for Redis Cluster.
 * @uri: as relay_redis_open() (a seed list included).
 * @streams, @nstreams: the streams to be read; @group: their consumer
 *   group (may be NULL).
 * @opts: as relay_redis_open() (timeouts); may be NULL.
 * @errbuf, @size: receive the one-line error, naming the fix.
 *
 * Opens one private connection to @uri; when the server answers and runs
 * in cluster mode, checks for each stream that every key Relay derives
 * from it lands in the stream's hash slot (a hash tag without ':' or '%';
 * doc/redis-layout.md R-8).
 * Returns: 0 (a single node, every stream fits, no answer, or a @uri
 * relay_redis_open() refuses: connect as usual and let that report or
 * retry); RELAY_EINVAL with @errbuf set (a stream that does not fit);
 * RELAY_ENOMEM with @errbuf "out of memory"; RELAY_EINVAL with @errbuf
 * untouched for a NULL @uri, @errbuf or a zero @size.
 * Blocking: one PING (and the CLUSTER SLOTS the connection sends);
 * with a seed list, one connect per seed tried until one answers, each
 * bounded by @opts' timeouts.
 * Thread-safety: reentrant (uses only its own connection).
 */
RELAY_EXTERN int relay_redis_cluster_check(const char *uri,
					   const char *const *streams,
					   size_t nstreams,
					   const char *group,
					   const relay_redis_options *opts,
					   char *errbuf, size_t size);

/**
 * enum relay_redis_uri_kind - what a REDIS_URI names (relay_redis_uri_check()).
 */
typedef enum relay_redis_uri_kind {
	RELAY_REDIS_URI_TCP = 1,     /* host:port, the redis or rediss
					scheme */
	RELAY_REDIS_URI_UNIX = 2,    /* the unix scheme: a socket path */
	RELAY_REDIS_URI_MEMORY = 3,  /* the memory scheme (tests) */
	RELAY_REDIS_URI_SENTINEL = 4, /* redis+sentinel: sentinels and a
					 master name */
} relay_redis_uri_kind;

/**
 * relay_redis_uri_check() - validate a URI the way relay_redis_open() and
 * relay_redis_open_libev() read it, without opening anything.
 * @uri: as relay_redis_open() (doc/configuration.md C-2).
 * @kind: receives what @uri names on success; may be NULL.
 * @err: optional error detail; its text shows @uri redacted
 *   (relay_redis_uri_redact()), never a password.
 *
 * For a program that reads the URI from its configuration and wants to
 * refuse a bad one (or a kind it does not support, e.g. "memory://" in a
 * daemon) before it connects.
 * Returns: 0, RELAY_EINVAL (not a URI relay_redis_open() accepts; @uri
 * NULL or "") or RELAY_ENOMEM.
 * Thread-safety: reentrant.
 */
RELAY_EXTERN int relay_redis_uri_check(const char *uri,
				       relay_redis_uri_kind *kind,
				       relay_error *err);

/**
 * relay_redis_uri_redact() - a form of @uri safe to print or log.
 * @uri: any string (NULL is taken as "").
 * @buf: receives the text, always NUL-terminated, cut to fit.
 * @size: bytes of @buf (strlen(@uri) + 4 always fits).
 *
 * Whatever the scheme (or with none), the user information before the
 * last '@' keeps only its user name: "user:pass@host:6379" becomes
 * "user:***@host:6379", and "pass@host:6379" (no ':') becomes
 * "***@host:6379"; the scheme is kept. Control bytes become '?'.
 * Returns: @buf (borrowed: the caller's buffer).
 * Thread-safety: reentrant.
 */
RELAY_EXTERN char *relay_redis_uri_redact(const char *uri, char *buf,
					  size_t size);

/**
 * relay_redis_memory_new() - create an empty in-process memory backend.
 * @out: set to the new backend.
 * @clock: clock used for TTLs and PEL idle times (borrowed, must outlive
 *   the backend); NULL = system clock.
 *
 * Commands complete before the call returns (the callback runs inside
 * relay_redis_command()). XREADGROUP BLOCK never waits: an empty read
 * returns a nil reply at once. For asynchronous delivery and blocking
 * reads, open "memory://" with relay_redis_open_libev() instead.
 * Returns: 0 or RELAY_ENOMEM. Ownership: *out is new.
 */
RELAY_EXTERN int relay_redis_memory_new(relay_redis_backend **out,
					const relay_clock *clock);

/**
 * relay_redis_memory_set_down() - simulate an outage of a memory backend
 * (for tests): while @down, every command and transition completes with
 * RELAY_ECLOSED and changes nothing.
 * Returns: 0, or RELAY_EINVAL if @b is not a memory backend.
 */
RELAY_EXTERN int relay_redis_memory_set_down(relay_redis_backend *b,
					     int down);

/**
 * relay_redis_free() - close and free a backend.
 * @b: the backend, or NULL (no-op).
 *
 * Callbacks of commands still in flight run with RELAY_ECLOSED before this
 * returns.
 */
RELAY_EXTERN void relay_redis_free(relay_redis_backend *b);

/** relay_redis_name() - the backend's registry name ("hiredis", "memory"). */
RELAY_EXTERN const char *relay_redis_name(const relay_redis_backend *b);

/**
 * relay_redis_errstr() - the last error message of a backend.
 * Returns: a borrowed string valid until the next call on @b; "" if none.
 */
RELAY_EXTERN const char *relay_redis_errstr(const relay_redis_backend *b);

/**
 * relay_redis_command() - send one command asynchronously.
 * @b: the backend.
 * @argc: number of arguments (>= 1).
 * @argv: the arguments (command name first); borrowed for the call.
 * @argvlen: their lengths, or NULL to use strlen().
 * @cb: completion callback (may be NULL to ignore the reply).
 * @payload: passed to @cb.
 *
 * Returns: 0 (the callback will run exactly once) or a negative code (it
 * never runs).
 */
RELAY_EXTERN int relay_redis_command(relay_redis_backend *b, int argc,
				     const char *const *argv,
				     const size_t *argvlen,
				     relay_redis_reply_cb cb, void *payload);

/**
 * relay_redis_sync_command() - send one command and wait for its reply.
 * @b: a backend opened with relay_redis_open() or relay_redis_memory_new().
 * @out: set to the reply (which may be an ERROR reply) on success.
 * Other parameters as relay_redis_command().
 *
 * Returns: 0, or the failure status (RELAY_ETIMEOUT, RELAY_ECLOSED,
 * RELAY_EBACKEND, RELAY_EINVAL when @b is attached to a host loop).
 * Ownership: *out is new.
 */
RELAY_EXTERN int relay_redis_sync_command(relay_redis_backend *b,
					  relay_redis_reply **out, int argc,
					  const char *const *argv,
					  const size_t *argvlen);

/**
 * relay_redis_sync_wait() - run the backend's private loop until *@done
 * becomes nonzero.
 * @b: a backend opened for synchronous use.
 * @done: flag set by the caller's callback.
 *
 * The building block of every relay_*_sync function: issue asynchronous
 * calls, then wait. Returns: 0, or RELAY_EINVAL on a host-loop backend.
 */
RELAY_EXTERN int relay_redis_sync_wait(relay_redis_backend *b,
				       const int *done);

/**
 * relay_redis_reply_error() - classify a reply as an error.
 * Returns: RELAY_ETYPE for a WRONGTYPE error, RELAY_EBACKEND for any other
 * ERROR reply, 0 otherwise (including NULL).
 */
RELAY_EXTERN int relay_redis_reply_error(const relay_redis_reply *r);

/* ---- typed stream operations ----------------------------------------
 *
 * Thin wrappers over relay_redis_command() for what the consumer engine
 * and relayctl send, converting replies to owned C data. Each follows the
 * callback rule above; an ERROR reply becomes RELAY_EBACKEND (RELAY_ETYPE
 * for WRONGTYPE, RELAY_ENOTFOUND for NOGROUP) with relay_redis_errstr()
 * unchanged.
 */

/** struct relay_stream_entry - one stream entry; every pointer owned. */
typedef struct relay_stream_entry {
	char *id;             /* "ms-seq" */
	size_t nfields;       /* name/value pairs */
	char **names;         /* nfields NUL-terminated names */
	char **values;        /* nfields values (NUL-terminated) */
	size_t *value_lens;   /* their lengths (values may hold NULs) */
	int deleted;          /* PEL reference whose entry is gone */
} relay_stream_entry;

/** relay_stream_entries_free() - free @n entries and the array. */
RELAY_EXTERN void relay_stream_entries_free(relay_stream_entry *e, size_t n);

/**
 * relay_stream_entry_get() - a field's value by name.
 * Returns: the borrowed value (its length in *@len if non-NULL), or NULL.
 */
RELAY_EXTERN const char *relay_stream_entry_get(const relay_stream_entry *e,
						const char *name, size_t *len);

/**
 * relay_stream_entries_parse() - convert an array of [id, [name, value,
 * ...] | nil] elements (XRANGE, XREADGROUP per-stream, XCLAIM) to entries.
 * Returns: 0, RELAY_EPARSE or RELAY_ENOMEM. Ownership: *out is new.
 */
RELAY_EXTERN int relay_stream_entries_parse(const relay_redis_reply *r,
					    relay_stream_entry **out,
					    size_t *n);

/** Completion with entries (new: free with relay_stream_entries_free). */
typedef void (*relay_redis_entries_cb)(relay_redis_backend *b, int status,
				       relay_stream_entry *entries, size_t n,
				       void *payload);
/** Completion with an integer result. */
typedef void (*relay_redis_int_cb)(relay_redis_backend *b, int status,
				   long long value, void *payload);
/** Completion with ids (new: free with relay_redis_strings_free). */
typedef void (*relay_redis_ids_cb)(relay_redis_backend *b, int status,
				   char **ids, size_t n, void *payload);

/** relay_redis_strings_free() - free an array of @n strings. */
RELAY_EXTERN void relay_redis_strings_free(char **s, size_t n);

/**
 * relay_redis_group_create() - XGROUP CREATE @stream @group @start
 * MKSTREAM. value: 1 created, 0 already existed (BUSYGROUP is success).
 */
RELAY_EXTERN int relay_redis_group_create(relay_redis_backend *b,
					  const char *stream,
					  const char *group,
					  const char *start,
					  relay_redis_int_cb cb,
					  void *payload);

/**
 * relay_redis_xreadgroup() - XREADGROUP GROUP @group @consumer COUNT
 * @count [BLOCK @block_ms] STREAMS @stream @id (">" for new entries).
 * @block_ms: < 0 for no BLOCK. An empty read completes with n = 0.
 */
RELAY_EXTERN int relay_redis_xreadgroup(relay_redis_backend *b,
					const char *stream, const char *group,
					const char *consumer, size_t count,
					int block_ms, const char *id,
					relay_redis_entries_cb cb,
					void *payload);

/** relay_redis_xack() - XACK; value: number acknowledged. */
RELAY_EXTERN int relay_redis_xack(relay_redis_backend *b, const char *stream,
				  const char *group, const char *const *ids,
				  size_t nids, relay_redis_int_cb cb,
				  void *payload);

/** relay_redis_xdel() - XDEL; value: number deleted. */
RELAY_EXTERN int relay_redis_xdel(relay_redis_backend *b, const char *stream,
				  const char *const *ids, size_t nids,
				  relay_redis_int_cb cb, void *payload);

/**
 * relay_redis_xadd() - XADD @stream * name value ...; the new id is the
 * single element of the ids callback.
 * @value_lens: lengths of @values, or NULL for strlen().
 */
RELAY_EXTERN int relay_redis_xadd(relay_redis_backend *b, const char *stream,
				  size_t nfields, const char *const *names,
				  const char *const *values,
				  const size_t *value_lens,
				  relay_redis_ids_cb cb, void *payload);

/** relay_redis_xrange() - XRANGE @stream @start @end COUNT @count. */
RELAY_EXTERN int relay_redis_xrange(relay_redis_backend *b,
				    const char *stream, const char *start,
				    const char *end, size_t count,
				    relay_redis_entries_cb cb, void *payload);

/** struct relay_autoclaim - an XAUTOCLAIM result; every pointer owned. */
typedef struct relay_autoclaim {
	char *next;                   /* cursor; "0-0" when the scan ended */
	relay_stream_entry *entries;  /* claimed entries */
	size_t n;
	char **deleted;               /* PEL ids whose entry was deleted */
	size_t ndeleted;
} relay_autoclaim;

/** relay_autoclaim_free() - free a result; NULL is a no-op. */
RELAY_EXTERN void relay_autoclaim_free(relay_autoclaim *a);

/** Completion of relay_redis_xautoclaim(); @a is new (or NULL). */
typedef void (*relay_redis_autoclaim_cb)(relay_redis_backend *b, int status,
					 relay_autoclaim *a, void *payload);

/**
 * relay_redis_xautoclaim() - XAUTOCLAIM @stream @group @consumer
 * @min_idle_ms @start COUNT @count (Redis 7 reply with deleted ids).
 */
RELAY_EXTERN int relay_redis_xautoclaim(relay_redis_backend *b,
					const char *stream, const char *group,
					const char *consumer,
					int64_t min_idle_ms, const char *start,
					size_t count,
					relay_redis_autoclaim_cb cb,
					void *payload);

/**
 * relay_redis_xclaim_justid() - renew ownership: XCLAIM @stream @group
 * @consumer @min_idle_ms ids... JUSTID. The callback gets the ids now
 * owned by @consumer (a missing id was lost or deleted).
 */
RELAY_EXTERN int relay_redis_xclaim_justid(relay_redis_backend *b,
					   const char *stream,
					   const char *group,
					   const char *consumer,
					   int64_t min_idle_ms,
					   const char *const *ids, size_t nids,
					   relay_redis_ids_cb cb,
					   void *payload);

/** struct relay_pending - one XPENDING (extended) element; owned. */
typedef struct relay_pending {
	char *id;
	char *consumer;
	int64_t idle_ms;
	long long deliveries;  /* diagnostic delivery count */
} relay_pending;

/** relay_pending_free() - free @n elements and the array. */
RELAY_EXTERN void relay_pending_free(relay_pending *p, size_t n);

/** Completion of relay_redis_xpending(); @p is new. */
typedef void (*relay_redis_pending_cb)(relay_redis_backend *b, int status,
				       relay_pending *p, size_t n,
				       void *payload);

/**
 * relay_redis_xpending() - XPENDING @stream @group [IDLE @min_idle_ms]
 * @start @end @count [@consumer]. @min_idle_ms 0 omits IDLE; @consumer
 * NULL for all consumers.
 */
RELAY_EXTERN int relay_redis_xpending(relay_redis_backend *b,
				      const char *stream, const char *group,
				      int64_t min_idle_ms, const char *start,
				      const char *end, size_t count,
				      const char *consumer,
				      relay_redis_pending_cb cb,
				      void *payload);

/** relay_redis_xpending_count() - XPENDING summary; value: PEL size. */
RELAY_EXTERN int relay_redis_xpending_count(relay_redis_backend *b,
					    const char *stream,
					    const char *group,
					    relay_redis_int_cb cb,
					    void *payload);

/* ---- retention -------------------------------------------------------- */

/**
 * struct relay_stream_trim - what one retention step did and saw; every
 * pointer owned (free with relay_stream_trim_free()).
 */
typedef struct relay_stream_trim {
	long long trimmed;        /* entries this step removed */
	long long length;         /* entries left (XLEN after the trim) */
	char *bound;              /* entries below this id were eligible;
				   * "" when the stream does not exist */
	char *first_id;           /* oldest entry left, "" when empty */
	char *oldest_pending_id;  /* oldest PEL entry over every group, ""
				   * when none (always "" with
				   * RELAY_TRIM_AGE_ONLY) */
	long long groups;         /* consumer groups on the stream */
} relay_stream_trim;

/** relay_stream_trim_free() - free a result; NULL is a no-op. */
RELAY_EXTERN void relay_stream_trim_free(relay_stream_trim *t);

/** Completion of relay_redis_stream_trim(); @t is new (NULL on failure). */
typedef void (*relay_redis_trim_cb)(relay_redis_backend *b, int status,
				    relay_stream_trim *t, void *payload);

/* relay_redis_stream_trim() flags. */
#define RELAY_TRIM_AGE_ONLY 1u  /* ignore consumer groups (the DLQ) */

/**
 * relay_redis_stream_trim() - one safe retention step on a stream, as one
 * atomic server-side script (REDIS_STREAM_RETENTION, REDIS_DLQ_RETENTION).
 * @b: the backend (version 3 or later; RELAY_EBACKEND otherwise).
 * @stream: the stream key.
 * @cutoff_ms: Unix ms; only entries whose id time is below it may go
 *   (the age cutoff: now - retention).
 * @limit: at most this many entries removed (XTRIM LIMIT), so one step
 *   never blocks Redis for long; 0 only observes (nothing is removed).
 * @flags: 0, or RELAY_TRIM_AGE_ONLY.
 * @cb: completion; @payload passed to it.
 *
 * The bound is the smallest of "@cutoff_ms-0" and, for every consumer
 * group on the stream (unless RELAY_TRIM_AGE_ONLY), the group's oldest
 * pending id and its last-delivered id + 1. Entries below the bound are
 * removed with XTRIM MINID ~ bound LIMIT @limit, which removes whole
 * nodes only: never an entry at or above the bound, so never an entry
 * any group still has pending or has not read yet, however the trim
 * interleaves with XREADGROUP, XAUTOCLAIM, XACK or XADD. A stream with
 * no group is trimmed by age alone. With RELAY_TRIM_AGE_ONLY the trim
 * is exact: the entries still below the bound after the whole nodes
 * (those sharing a node with newer ones) are removed as well, by an
 * exact XTRIM MINID in the same script, @limit in all. A missing stream is not an error
 * (everything zero). Works on Redis 6.2 and later.
 * Returns: 0 (@cb runs once) or a negative code (it never runs). The
 * callback's status is RELAY_EBACKEND (RELAY_ETYPE for a key that is
 * not a stream) on an ERROR reply, RELAY_EPARSE on an unexpected reply.
 * Ownership: the callback owns @t.
 * Thread-safety: as every call on @b.
 */
RELAY_EXTERN int relay_redis_stream_trim(relay_redis_backend *b,
					 const char *stream,
					 int64_t cutoff_ms, size_t limit,
					 unsigned int flags,
					 relay_redis_trim_cb cb,
					 void *payload);

/**
 * relay_stream_id_ms() - the time part of a stream id ("ms-seq" or
 * "ms"). Returns: the milliseconds, or -1 if @id is not an id.
 */
RELAY_EXTERN int64_t relay_stream_id_ms(const char *id);

#ifdef __cplusplus
}
#endif

#endif /* RELAY_REDIS_H */
