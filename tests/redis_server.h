/*
 * tests/redis_server.h - a throwaway redis-server for integration tests.
 *
 *	rt_redis_server srv;
 *	int rc = rt_redis_server_start(&srv);
 *	if (rc == RT_REDIS_SKIP) ... report SKIP (redis-server not installed)
 *	... use srv.uri ("unix:///tmp/relay-redis.XXXXXX/redis.sock") ...
 *	rt_redis_server_cleanup(&srv);
 *
 * The server listens only on a unix socket in a fresh temp directory
 * (--port 0 --save '' --appendonly no). stop/start/pause/resume let tests
 * simulate outages; cleanup stops it and removes the directory. The
 * binary is $RELAY_REDIS_SERVER or redis-server from PATH.
 */
#ifndef RT_REDIS_SERVER_H
#define RT_REDIS_SERVER_H

#include <sys/types.h>

#define RT_REDIS_SKIP 77

typedef struct rt_redis_server {
	pid_t pid;       /* 0 when not running */
	int port;        /* TCP port on 127.0.0.1, 0 = none */
	char password[64]; /* requirepass, "" = none */
	char dir[128];   /* temp directory */
	char sock[160];  /* unix socket path */
	char uri[176];   /* "unix://" + sock */
} rt_redis_server;

/* Create the temp dir and start the server; wait until it answers PING.
 * Returns 0, RT_REDIS_SKIP when redis-server is absent, -1 on failure. */
int rt_redis_server_start(rt_redis_server *s);

/* Like rt_redis_server_start(), and also listen on a free TCP port of
 * 127.0.0.1 (s->port), requiring @password if not NULL. */
int rt_redis_server_start_tcp(rt_redis_server *s, const char *password);

/* Stop the server (SIGTERM, wait); the directory stays for a restart. */
int rt_redis_server_stop(rt_redis_server *s);

/* Start again on the same socket after stop. Returns 0 or -1. */
int rt_redis_server_restart(rt_redis_server *s);

/* SIGSTOP / SIGCONT: an unresponsive server that keeps its socket. */
void rt_redis_server_pause(rt_redis_server *s);
void rt_redis_server_resume(rt_redis_server *s);

/* Stop if running and remove the directory. Safe to call twice. */
void rt_redis_server_cleanup(rt_redis_server *s);

#endif /* RT_REDIS_SERVER_H */
