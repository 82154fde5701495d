/*
 * tests/lib/rt_fixture.c - the runtime tests' fixture (rt_fixture.h):
 * the per-suite set-up and tear-down, the runtime constructor, and the
 * host process scans. Public headers only.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "relay_config.h"
#include "lib/rt_fixture.h"

void rtf_setup(rtf_suite *f, const char *name)
{
	memset(f, 0, sizeof(*f));
	f->loop = ev_loop_new(EVFLAG_AUTO);
	if (!name)
		return;
	snprintf(f->app_dir, sizeof(f->app_dir), "/tmp/relay-test-%s-%ld",
		 name, (long)getpid());
	if (mkdir(f->app_dir, 0755) != 0 || chmod(f->app_dir, 0755) != 0) {
		perror(f->app_dir);
		exit(1);
	}
	f->made_dir = true;
}

int rtf_teardown(rtf_suite *f, bool keep)
{
	char cmd[sizeof(f->app_dir) + 16];
	int rc = 0;

	if (f->rt)
		relay_runtime_free(f->rt);
	f->rt = NULL;
	if (f->loop)
		ev_loop_destroy(f->loop);
	f->loop = NULL;
	if (keep || !f->made_dir)
		return 0;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->app_dir);
	if (system(cmd) != 0)
		rc = -1;
	return rc;
}

void rtf_write(const char *dir, const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(1);
	}
	fputs(text, f);
	fclose(f);
	chmod(path, 0644);
}

relay_exec_spec rtf_spec(const rtf_suite *f, const char *app,
			 relay_runtime_kind kind, const char *handler)
{
	relay_exec_spec s = RELAY_EXEC_SPEC_INIT;

	s.app = app;
	s.handler = handler;
	s.message_id = "7-0";
	s.app_dir = f->app_dir;
	s.runtime = kind;
	s.timeout_ms = 20000;
	s.event = "{\"n\":1}";
	s.event_len = 7;
	s.warm = RELAY_WARM_REQUIRE;
	s.generation = 1;
	return s;
}

const char *rtf_bootstrap_dir(void)
{
	static char buf[1024];
	const char *r = getenv("RELAY_SOURCE_ROOT");

	snprintf(buf, sizeof(buf), "%s/sandbox/bootstrap",
		 r && *r ? r : RELAY_SOURCE_ROOT);
	return buf;
}

relay_runtime *rtf_runtime_new(struct ev_loop *loop, const rtf_rt_opts *ro)
{
	relay_runtime_options o = RELAY_RUNTIME_OPTIONS_INIT;
	relay_runtime *r = NULL;
	relay_error err;

	o.backend = ro->backend ? ro->backend : "bwrap";
	o.bootstrap_dir = rtf_bootstrap_dir();
	o.kill_grace_ms = 1500;
	o.warm = ro->warm;
	o.warm_idle_ms = ro->warm_idle_ms ? ro->warm_idle_ms : 60000;
	o.warm_max_parents = ro->warm_max_parents ? ro->warm_max_parents : 8;
	o.warm_start_timeout_ms = ro->warm_start_timeout_ms;
	if (relay_runtime_new(&r, &o, &err) != 0) {
		if (ro->say_error)
			printf("# %s: %s\n", o.backend, err.text);
		return NULL;
	}
	relay_runtime_libev_attach(r, loop);
	return r;
}

pid_t parent_of(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p ? (pid_t)atol(p + 4) : 0;
}

bool ours(pid_t pid)
{
	int i;

	for (i = 0; i < 16 && pid > 1; i++) {
		pid = parent_of(pid);
		if (pid == getpid())
			return true;
	}
	return false;
}

/* The processes whose command line holds @needle: ours only unless
 * @anyone (see host_processes_into()). */
static int scan(const char *needle, bool anyone, pid_t *pid, int sig,
		pid_t *all, int max)
{
	bool anchored = needle[0] == '^';
	DIR *d = opendir("/proc");
	struct dirent *e;
	int found = 0;

	while (d && (e = readdir(d))) {
		char path[300], buf[4096];
		pid_t p = (pid_t)atol(e->d_name);
		FILE *f;
		size_t n, i;

		if (p <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		for (i = 0; i < n; i++)
			if (buf[i] == '\0')
				buf[i] = ' ';
		buf[n] = '\0';
		if (!(anchored ? strncmp(buf, needle + 1, strlen(needle + 1))
				 == 0 : strstr(buf, needle) != NULL) ||
		    (!anyone && !ours(p)))
			continue;
		if (all && found < max)
			all[found] = p;
		if (found++ == 0 && pid)
			*pid = p;
		if (sig)
			kill(p, sig);
	}
	if (d)
		closedir(d);
	return found;
}

int host_processes_into(const char *needle, pid_t *pid, int sig,
			pid_t *all, int max)
{
	return scan(needle, false, pid, sig, all, max);
}

bool host_has_any(const char *needle)
{
	return scan(needle, true, NULL, 0, NULL, 0) > 0;
}

int host_processes(const char *needle, pid_t *pid, int sig)
{
	return host_processes_into(needle, pid, sig, NULL, 0);
}

bool host_has_process(const char *needle, pid_t *pid)
{
	return host_processes(needle, pid, 0) > 0;
}

int host_pids(const char *needle, pid_t *all, int max)
{
	int n = host_processes_into(needle, NULL, 0, all, max);

	return n < max ? n : max;
}

bool host_pids_has(const pid_t *all, int n, pid_t pid)
{
	int i;

	for (i = 0; i < n; i++)
		if (all[i] == pid)
			return true;
	return false;
}

void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}
