/*
 * librelay/redis/memory.h - private: the memory backend's keyspace, shared
 * by the command implementations (memory.c, memory_stream.c) and the
 * transition scripts (memory_script.c). Never installed.
 */
#ifndef RELAY__REDIS_MEMORY_H
#define RELAY__REDIS_MEMORY_H

#include "backend.h"
#include "relay/clock.h"

enum mem_type { MEM_STRING = 1, MEM_HASH = 2, MEM_STREAM = 3 };

typedef struct mem_str {
	char *s;     /* NUL-terminated copy */
	size_t len;
} mem_str;

typedef struct mem_sid {
	uint64_t ms, seq;
} mem_sid;

#define SID_MAX ((mem_sid){ UINT64_MAX, UINT64_MAX })

typedef struct mem_entry {
	mem_sid id;
	size_t nfv;   /* names + values */
	mem_str *fv;
} mem_entry;

typedef struct mem_nack {
	mem_sid id;
	char *consumer;
	int64_t delivery_ms;
	long long count;
} mem_nack;

typedef struct mem_group {
	char *name;
	mem_sid last;
	mem_nack *pel;  /* sorted by id */
	size_t npel, cap;
	char **consumers;  /* known consumer names */
	size_t nconsumers;
} mem_group;

typedef struct mem_stream {
	mem_entry *e;  /* sorted by id */
	size_t n, cap;
	mem_sid last;
	mem_group *g;
	size_t ng;
} mem_stream;

typedef struct mem_hash {
	mem_str *fv;  /* name, value, name, value, ... */
	size_t n, cap;  /* n counts pairs */
} mem_hash;

typedef struct mem_key {
	struct mem_key *next;
	mem_str name;
	enum mem_type type;
	int64_t expire_at;  /* Unix ms; 0 = persistent */
	union {
		mem_str str;
		mem_hash hash;
		mem_stream stream;
	} u;
} mem_key;

#define MEM_BUCKETS 4096

typedef struct mem_backend {
	relay_redis_backend parent;  /* must be first */
	const relay_clock *clock;
	mem_key *bucket[MEM_BUCKETS];
	char errstr[128];
	int down;                    /* simulated outage (tests) */
} mem_backend;

/* A command's arguments as seen by an implementation. */
typedef struct mem_args {
	int argc;
	const char *const *argv;
	const size_t *len;
} mem_args;

int64_t relay__mem_now(mem_backend *m);
mem_key *relay__mem_lookup(mem_backend *m, const char *name, size_t len);
mem_key *relay__mem_create(mem_backend *m, const char *name, size_t len,
			   enum mem_type type);
void relay__mem_delete(mem_backend *m, mem_key *k);

/* Hash helpers: value or NULL; set returns 1 if new, <0 on ENOMEM. */
const mem_str *relay__mem_hget(const mem_key *k, const char *f, size_t flen);
int relay__mem_hset(mem_key *k, const char *f, size_t flen, const char *v,
		    size_t vlen);

/* Stream helpers. */
int relay__mem_sid_parse(const char *s, size_t len, mem_sid *out);
int relay__mem_sid_fmt(mem_sid id, char *buf, size_t size);
int relay__mem_xadd(mem_key *k, mem_sid id, const mem_args *a, int first,
		    int64_t now, relay_redis_reply **out);
/* Remove the entry the last relay__mem_xadd() appended (for scripts that
 * must not leave half their writes behind). */
void relay__mem_xadd_undo(mem_key *k, mem_sid prev_last);

/* Shared by memory_stream.c and memory_pel.c. */
int relay__mem_sid_cmp(mem_sid a, mem_sid b);
relay_redis_reply *relay__mem_sid_reply(mem_sid id);
relay_redis_reply *relay__mem_bad_id(void);
relay_redis_reply *relay__mem_not_integer(void);
int relay__mem_num_arg(const mem_args *a, int i, long long *out);
int relay__mem_parse_bound(const char *s, size_t len, int is_end,
			   mem_sid *out);
mem_entry *relay__mem_find_entry(mem_stream *st, mem_sid id, size_t *pos);
relay_redis_reply *relay__mem_entry_reply(const mem_entry *e, mem_sid id);
mem_group *relay__mem_find_group(mem_stream *st, const char *name,
				 size_t len);
relay_redis_reply *relay__mem_nogroup(const mem_args *a, int ki, int gi,
				      const char *cmd);
int relay__mem_note_consumer(mem_group *g, const char *c, size_t len);
mem_nack *relay__mem_assign_nack(mem_group *g, mem_sid id, const char *c,
				 size_t clen, int64_t now);

/* Command groups: each returns the reply (NULL = ENOMEM). */
relay_redis_reply *relay__mem_stream_cmd(mem_backend *m, const mem_args *a,
					 const char *cmd);
relay_redis_reply *relay__mem_pel_cmd(mem_backend *m, mem_key *k,
				      const mem_args *a, const char *cmd);
/* RELAY_REDIS_SCRIPT_STREAM_TRIM (memory_trim.c). */
relay_redis_reply *relay__mem_stream_trim(mem_backend *m, const mem_args *a);
relay_redis_reply *relay__mem_script_run(mem_backend *m,
					 relay_redis_script op,
					 const mem_args *a);

#endif /* RELAY__REDIS_MEMORY_H */
