/*
 * librelay/redis/backend.h - private: the wrappers every caller of a Redis
 * backend goes through (one place checks versions and callbacks), reply
 * builders for backends, and
 * URI parsing. Never installed.
 */
#ifndef RELAY__REDIS_BACKEND_H
#define RELAY__REDIS_BACKEND_H

#include "common.h"
#include "relay/redis.h"
#include "relay/sys/redis.h"

struct ev_loop;

/* The one place that calls b->script (C6). */
int relay__redis_script(relay_redis_backend *b, relay_redis_script op,
			int numkeys, int argc, const char *const *argv,
			const size_t *argvlen, relay_redis_reply_cb cb,
			void *payload);

/* Number of keys each transition takes. */
int relay__redis_script_numkeys(relay_redis_script op);

/* Reply builders; NULL on allocation failure. */
relay_redis_reply *relay__reply_str(relay_redis_reply_type type,
				    const char *s, size_t len);
relay_redis_reply *relay__reply_int(long long v);
relay_redis_reply *relay__reply_nil(void);
relay_redis_reply *relay__reply_array(size_t n);
relay_redis_reply *relay__reply_errorf(const char *fmt, ...)
	RELAY__PRINTF(1, 2);

/* One "host:port" of a cluster seed list. */
typedef struct relay__redis_node {
	char *host;
	int port;
} relay__redis_node;

/* A parsed REDIS_URI (doc/configuration.md C-2). */
typedef struct relay__redis_uri {
	char *host;  /* NULL for unix sockets; the first seed */
	int port;
	relay__redis_node *seeds;  /* further "host:port"s after a ',' */
	size_t nseeds;
	char *path;  /* unix socket path, or NULL */
	char *user;  /* NULL when absent */
	char *pass;  /* NULL when absent */
	int db;      /* 0 unless /db given */
	int memory;  /* "memory://" */
	int tls;     /* "rediss://" */
	char *master; /* redis+sentinel://: the master's name; host, port
			 and seeds are then the sentinels */
} relay__redis_uri;

int relay__redis_uri_parse(relay__redis_uri *out, const char *uri,
			   relay_error *err);
void relay__redis_uri_clear(relay__redis_uri *u);
/*
 * A form of @uri safe to print, into @buf (always terminated, cut to
 * fit): whatever the scheme, or with none, the user information before
 * the last '@' keeps only its user name ("user:***@", "***@" when there
 * is no ':'); control bytes become '?'. Returns @buf.
 */
char *relay__redis_uri_redact(const char *uri, char *buf, size_t size);

/* The hiredis backend (redis_async.c). @loop NULL = private loop. */
int relay__redis_hiredis_new(relay_redis_backend **out,
			     const relay__redis_uri *uri,
			     const relay_redis_options *opts,
			     struct ev_loop *loop, relay_error *err);

/* Deliver @inner's replies from @loop (redis_defer_libev.c); steals
 * @inner, even on failure. */
int relay__redis_defer_new(relay_redis_backend **out,
			   relay_redis_backend *inner, struct ev_loop *loop);

/* The backend a defer decorator wraps, or NULL if @b is not one. */
relay_redis_backend *relay__redis_defer_inner(relay_redis_backend *b);

/* ---- Redis Cluster (slot.c, doc/redis-layout.md R-8) ---- */

/* CRC16/XMODEM of @buf ("123456789" gives 0x31C3). */
uint16_t relay__redis_crc16(const char *buf, size_t len);

/* The hash tag of @key: the bytes between the first '{' and the first
 * '}' after it, when not empty. Returns 1 and points *tag into @key, or
 * 0 (the whole key is hashed). */
int relay__redis_hash_tag(const char *key, size_t len, const char **tag,
			  size_t *tag_len);

/* The cluster slot (0..16383) of @key. */
unsigned int relay__redis_key_slot(const char *key, size_t len);

/*
 * Whether every key Relay derives from @stream (and @group) shares the
 * stream's slot: the stream needs a hash tag that the state-hash
 * encoding leaves alone. Returns 0, or RELAY_EINVAL with a one-line
 * error naming the fix in @errbuf (RELAY_ENOMEM on allocation failure).
 */
int relay__redis_stream_slot_check(const char *stream, const char *group,
				   char *errbuf, size_t size);

/*
 * Does the server @b talks to run in cluster mode? 1 yes, 0 no, -1 not
 * known yet (no connection has answered). The memory backend and custom
 * backends say 0; a defer decorator answers for the backend it wraps.
 */
int relay__redis_cluster_mode(relay_redis_backend *b);

/*
 * May SCHEDULE_PUBLISH be sent its optional third key, the pre-cluster
 * marker (doc/redis-layout.md R-7)? 1 for a built-in backend (hiredis or
 * memory, also behind a defer decorator) on a single node; 0 on a
 * cluster, while the mode is not known yet, and for custom backends
 * (include/relay/sys/redis.h promises them two keys).
 */
int relay__redis_legacy_marker_ok(relay_redis_backend *b);

/* The transition scripts as embedded Lua source (lua_scripts.c). */
extern const char *const relay__lua_source[RELAY_REDIS_SCRIPT_COUNT_];

#endif /* RELAY__REDIS_BACKEND_H */
