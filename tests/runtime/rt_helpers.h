/*
 * rt_helpers.h - shared helpers of the runtime and sandbox tests: an
 * output collector and one-call runners over relay_runtime_run_sync().
 */
#ifndef RT_HELPERS_H
#define RT_HELPERS_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "relay/runtime.h"
#include "relay/sys/runtime.h"
#include "relay_config.h"
#include "relaytest.h"

typedef struct cap {
	char **text;      /* full lines (prefix + content), NUL-terminated */
	int *stream;      /* RELAY_OUTPUT_* per line */
	int *partial;     /* partial flag per line */
	size_t *prefix;   /* prefix length per line */
	size_t n, size;
	size_t bytes;     /* content bytes received */
} cap;

static void cap_cb(const relay_output_line *l, void *payload)
{
	cap *c = payload;

	if (c->n == c->size) {
		c->size = c->size ? c->size * 2 : 64;
		c->text = realloc(c->text, c->size * sizeof(*c->text));
		c->stream = realloc(c->stream, c->size * sizeof(*c->stream));
		c->partial = realloc(c->partial, c->size * sizeof(int));
		c->prefix = realloc(c->prefix, c->size * sizeof(size_t));
	}
	c->text[c->n] = malloc(l->len + 1);
	memcpy(c->text[c->n], l->text, l->len + 1);
	c->stream[c->n] = (int)l->stream;
	c->partial[c->n] = l->partial;
	c->prefix[c->n] = l->prefix_len;
	c->bytes += l->len - l->prefix_len;
	c->n++;
}

static void cap_free(cap *c)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		free(c->text[i]);
	free(c->text);
	free(c->stream);
	free(c->partial);
	free(c->prefix);
	memset(c, 0, sizeof(*c));
}

/* Whole line @i (prefix included); never NULL, even past the end. */
static inline const char *cap_text(const cap *c, size_t i)
{
	return i < c->n ? c->text[i] : "(no such line)";
}

/* Content (after the prefix) of line @i. */
static const char *cap_line(const cap *c, size_t i)
{
	return i < c->n ? c->text[i] + c->prefix[i] : "(no such line)";
}

/* Does any line's content equal @s? */
static bool cap_has(const cap *c, const char *s)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		if (strcmp(cap_line(c, i), s) == 0)
			return true;
	return false;
}

/* Does any line's content contain @s? */
static bool cap_contains(const cap *c, const char *s)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		if (strstr(cap_line(c, i), s))
			return true;
	return false;
}

static const char *src_root(void)
{
	const char *r = getenv("RELAY_SOURCE_ROOT");

	return r && *r ? r : RELAY_SOURCE_ROOT;
}

static const char *demo_app_dir(void)
{
	static char buf[1024];

	snprintf(buf, sizeof(buf), "%s/tests/runtime/apps/demo", src_root());
	return buf;
}

static const char *bootstrap_dir(void)
{
	static char buf[1024];

	snprintf(buf, sizeof(buf), "%s/sandbox/bootstrap",
		 src_root());
	return buf;
}

/* A spec for @argv (exec runtime) in the demo app. */
static relay_exec_spec sh_spec(const char *const *argv, uint32_t timeout_ms)
{
	relay_exec_spec s = RELAY_EXEC_SPEC_INIT;

	s.app = "demo";
	s.handler = "h";
	s.message_id = "1-0";
	s.app_dir = demo_app_dir();
	s.runtime = RELAY_RUNTIME_EXEC;
	s.argv = argv;
	s.timeout_ms = timeout_ms;
	return s;
}

/* Run a shell snippet; returns run_sync's code. */
static inline int run_sh(relay_runtime *rt, const char *script, uint32_t timeout_ms,
		  cap *c, relay_run_outcome *o)
{
	const char *argv[] = { "/bin/sh", "-c", script, NULL };
	relay_exec_spec s = sh_spec(argv, timeout_ms);

	memset(o, 0, sizeof(*o));
	return relay_runtime_run_sync(rt, &s, cap_cb, c, o, NULL);
}

static inline relay_runtime *make_rt(const char *backend, relay_limits_mode lim,
			      uint32_t grace_ms, relay_error *err)
{
	relay_runtime_options o = RELAY_RUNTIME_OPTIONS_INIT;
	relay_runtime *rt = NULL;

	o.backend = backend;
	o.bootstrap_dir = bootstrap_dir();
	o.limits = lim;
	o.kill_grace_ms = grace_ms;
	if (relay_runtime_new(&rt, &o, err) != 0)
		return NULL;
	return rt;
}

static bool have_prog(const char *path)
{
	return access(path, X_OK) == 0;
}

/*
 * main() of a suite that needs bwrap: the whole program reports a TAP skip,
 * with bwrap's complaint, when the sandbox cannot run here (meson's TAP
 * parser reads the empty plan as a skipped test).
 */
static inline int rt_bwrap_main(int argc, char **argv, const rt_case *cases,
				size_t n)
{
	relay_error err;
	relay_runtime *probe = make_rt("bwrap", RELAY_LIMITS_NONE, 0, &err);

	if (!probe) {
		printf("TAP version 13\n1..0 # SKIP bwrap cannot run: %s\n",
		       err.text);
		return 0;
	}
	relay_runtime_free(probe);
	return rt_main(argc, argv, cases, n);
}

#endif /* RT_HELPERS_H */
