/*
 * tests/redis_server.c - start, stop and clean up a throwaway redis-server
 * on a unix socket (see redis_server.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "redis_server.h"

static const char *server_binary(char *buf, size_t size)
{
	const char *env = getenv("RELAY_REDIS_SERVER");
	const char *path = getenv("PATH");
	const char *p, *end;

	if (env && *env)
		return access(env, X_OK) == 0 ? env : NULL;
	for (p = path ? path : "/usr/bin:/bin"; *p; p = end + (*end != 0)) {
		end = strchrnul(p, ':');
		snprintf(buf, size, "%.*s/redis-server", (int)(end - p), p);
		if (access(buf, X_OK) == 0)
			return buf;
	}
	return NULL;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* 1 when the socket answers PING with +PONG. */
static int answers(const char *sock)
{
	struct sockaddr_un sa;
	char buf[16] = { 0 };
	int fd, ok = 0;
	ssize_t n;

	if (strlen(sock) >= sizeof(sa.sun_path))
		return 0;
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0)
		return 0;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, sock, strlen(sock) + 1);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    write(fd, "PING\r\n", 6) == 6) {
		n = read(fd, buf, sizeof(buf) - 1);
		ok = n >= 5 && (strncmp(buf, "+PONG", 5) == 0 ||
				strncmp(buf, "-NOAUTH", 7) == 0);
	}
	close(fd);
	return ok;
}

static int spawn(rt_redis_server *s)
{
	char bin_buf[512], log[200];
	const char *bin = server_binary(bin_buf, sizeof(bin_buf));
	int i, devnull;
	pid_t pid;

	if (!bin)
		return RT_REDIS_SKIP;
	snprintf(log, sizeof(log), "%s/redis.log", s->dir);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		char port[16];
		const char *argv[24];
		int n = 0;

		devnull = open("/dev/null", O_RDWR);
		if (devnull >= 0) {
			dup2(devnull, 0);
			dup2(devnull, 1);
		}
		snprintf(port, sizeof(port), "%d", s->port);
		argv[n++] = bin;
		argv[n++] = "--port";
		argv[n++] = port;
		if (s->port) {
			argv[n++] = "--bind";
			argv[n++] = "127.0.0.1";
		}
		if (s->password[0]) {
			argv[n++] = "--requirepass";
			argv[n++] = s->password;
		}
		argv[n++] = "--unixsocket";
		argv[n++] = s->sock;
		argv[n++] = "--unixsocketperm";
		argv[n++] = "700";
		argv[n++] = "--save";
		argv[n++] = "";
		argv[n++] = "--appendonly";
		argv[n++] = "no";
		argv[n++] = "--dir";
		argv[n++] = s->dir;
		argv[n++] = "--logfile";
		argv[n++] = log;
		argv[n++] = "--daemonize";
		argv[n++] = "no";
		argv[n] = NULL;
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	s->pid = pid;
	for (i = 0; i < 500; i++) {
		if (answers(s->sock))
			return 0;
		if (waitpid(pid, NULL, WNOHANG) == pid) {
			s->pid = 0;
			return -1;
		}
		sleep_ms(10);
	}
	rt_redis_server_stop(s);
	return -1;
}

/* A TCP port that was free a moment ago (bind to 0, read, close). */
static int free_port(void)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = 0;

	if (fd < 0)
		return 0;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
		port = ntohs(sa.sin_port);
	close(fd);
	return port;
}

static int start(rt_redis_server *s);

int rt_redis_server_start(rt_redis_server *s)
{
	memset(s, 0, sizeof(*s));
	return start(s);
}

int rt_redis_server_start_tcp(rt_redis_server *s, const char *password)
{
	memset(s, 0, sizeof(*s));
	s->port = free_port();
	if (!s->port)
		return -1;
	snprintf(s->password, sizeof(s->password), "%s",
		 password ? password : "");
	return start(s);
}

static int start(rt_redis_server *s)
{
	char bin_buf[512];
	const char *tmp = getenv("TMPDIR");

	if (!server_binary(bin_buf, sizeof(bin_buf)))
		return RT_REDIS_SKIP;
	snprintf(s->dir, sizeof(s->dir), "%s/relay-redis.XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(s->dir))
		return -1;
	snprintf(s->sock, sizeof(s->sock), "%s/redis.sock", s->dir);
	snprintf(s->uri, sizeof(s->uri), "unix://%s", s->sock);
	if (spawn(s) != 0) {
		rt_redis_server_cleanup(s);
		return -1;
	}
	return 0;
}

int rt_redis_server_stop(rt_redis_server *s)
{
	int status;

	if (!s->pid)
		return 0;
	kill(s->pid, SIGCONT);
	kill(s->pid, SIGTERM);
	while (waitpid(s->pid, &status, 0) < 0 && errno == EINTR)
		;
	s->pid = 0;
	unlink(s->sock);
	return 0;
}

int rt_redis_server_restart(rt_redis_server *s)
{
	rt_redis_server_stop(s);
	return spawn(s) == 0 ? 0 : -1;
}

void rt_redis_server_pause(rt_redis_server *s)
{
	if (s->pid)
		kill(s->pid, SIGSTOP);
}

void rt_redis_server_resume(rt_redis_server *s)
{
	if (s->pid)
		kill(s->pid, SIGCONT);
}

void rt_redis_server_cleanup(rt_redis_server *s)
{
	char path[200];

	rt_redis_server_stop(s);
	if (!s->dir[0])
		return;
	snprintf(path, sizeof(path), "%s/redis.log", s->dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/dump.rdb", s->dir);
	unlink(path);
	rmdir(s->dir);
	s->dir[0] = '\0';
}
