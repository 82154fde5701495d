/*
 * template.c - the template.yaml schema: walk a pnode tree, fill a
 * relay_app, record every problem with its position.
 *
 * The walk never stops at the first problem: each key is checked on its
 * own, so one run of `relayctl validate` lists everything a user has to
 * fix. Messages start with the key path they are about ("events[1].
 * timeout: …") and the position is the offending value's (or, for unknown
 * and missing keys, the key's or the enclosing mapping's).
 *
 * Decisions (doc/templates.md is the user-facing form):
 *   - unknown keys are errors at every level, with a "did you mean" hint;
 *   - `events:` and `schedules:` may be absent, null or empty; an app with
 *     neither is valid and does nothing;
 *   - handler syntax depends on the runtime, so it is checked after the
 *     walk, and not at all when the runtime itself is missing or invalid
 *     (one root cause, one message);
 *   - env values: strings and numbers keep their text, booleans become
 *     "true"/"false", null is an error (write "" for empty).
 */
#include <stdarg.h>
#include <string.h>

#include "app.h"
#include "runtime/kind.h"

typedef struct walker {
	relay_app *app;
	relay__diags *d;
	int errors;
	int oom;
	const relay__kind *kind;  /* the runtime's driver; NULL while the
				     runtime is missing or invalid */
} walker;

static const char *const top_keys[] = { "runtime", "command", "network",
	"concurrency", "resources", "env", "warm", "tracing", "events",
	"schedules", NULL };
static const char *const resource_keys[] = { "memory", "cpus", "pids",
					       "tmp", NULL };
static const char *const rule_keys[] = { "handler", "pattern", "timeout",
					   "retries", NULL };
static const char *const schedule_keys[] = { "name", "handler", "cron",
	"timezone", "timeout", "retries", NULL };

static void RELAY__PRINTF(5, 0) vreport(walker *w, int line, int col,
					 const char *where, const char *fmt,
					 va_list ap)
{
	char msg[RELAY_ERROR_TEXT_MAX];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (relay__diags_add(w->d, RELAY_EPARSE, w->app->path,
			     line > 0 ? line : 1, col > 0 ? col : 1, "%s%s%s",
			     where ? where : "", where ? ": " : "", msg))
		w->oom = 1;
	w->errors++;
}

/* A problem with the value of @n (at its mark). */
static void RELAY__PRINTF(4, 5) bad(walker *w, const relay__pnode *n,
				    const char *where, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(w, n->line, n->column, where, fmt, ap);
	va_end(ap);
}

/* A problem with the key of @n (at the key's mark). */
static void RELAY__PRINTF(4, 5) bad_key(walker *w, const relay__pnode *n,
					const char *where, const char *fmt,
					...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(w, n->key_line, n->key_column, where, fmt, ap);
	va_end(ap);
}

static const char *kind_name(enum relay__pnode_kind k)
{
	switch (k) {
	case RELAY__PNODE_NULL: return "null";
	case RELAY__PNODE_BOOL: return "a boolean";
	case RELAY__PNODE_NUMBER: return "a number";
	case RELAY__PNODE_STRING: return "a string";
	case RELAY__PNODE_MAP: return "a mapping";
	case RELAY__PNODE_SEQ: return "a list";
	}
	return "?";
}

static int key_is(const relay__pnode *n, const char *k)
{
	return n->key && strlen(k) == n->key_len &&
	       memcmp(n->key, k, n->key_len) == 0;
}

/*
 * A short, escaped excerpt of an unknown key for messages: at most
 * KEY_EXCERPT bytes of it, printable ASCII as is (but '"' and '\\'),
 * every other byte as \xNN, "..." when cut. A "template" that is really
 * some other file (a symlink to a secret) must not be echoed into logs.
 */
#define KEY_EXCERPT 24
static const char *key_excerpt(const char *k, size_t len, char *buf,
			       size_t size)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, o = 0;

	for (i = 0; i < len && i < KEY_EXCERPT && o + 5 < size; i++) {
		unsigned char c = (unsigned char)k[i];

		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
			buf[o++] = (char)c;
		} else {
			buf[o++] = '\\';
			buf[o++] = 'x';
			buf[o++] = hex[c >> 4];
			buf[o++] = hex[c & 15];
		}
	}
	if (i < len && o + 4 <= size) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o] = '\0';
	return buf;
}

static void unknown_key(walker *w, const relay__pnode *n, const char *where,
			const char *const *known)
{
	const char *hint = NULL;
	char ex[KEY_EXCERPT * 4 + 8];

	if (strlen(n->key) == n->key_len)
		hint = relay__app_suggest(n->key, known);
	key_excerpt(n->key, n->key_len, ex, sizeof(ex));
	if (hint)
		bad_key(w, n, where, "unknown key \"%s\" (did you mean "
			"\"%s\"?)", ex, hint);
	else
		bad_key(w, n, where, "unknown key \"%s\"", ex);
}

/* A non-empty string without NUL bytes; reports and returns NULL if not. */
static const char *want_string(walker *w, const relay__pnode *n,
			       const char *where)
{
	if (n->kind != RELAY__PNODE_STRING) {
		bad(w, n, where, "must be a string, not %s",
		    kind_name(n->kind));
		return NULL;
	}
	if (n->text_len == 0) {
		bad(w, n, where, "must not be empty");
		return NULL;
	}
	if (strlen(n->text) != n->text_len) {
		bad(w, n, where, "must not contain NUL bytes");
		return NULL;
	}
	return n->text;
}

static char *dup_or_oom(walker *w, const char *s)
{
	char *d = relay__strdup(s);

	if (!d)
		w->oom = 1;
	return d;
}

/* An integer in [lo, hi]; returns 0 and *v, or reports. */
static int want_int(walker *w, const relay__pnode *n, const char *where,
		    long long lo, long long hi, long long *v)
{
	if (n->kind != RELAY__PNODE_NUMBER ||
	    relay__app_parse_int(n->text, v)) {
		bad(w, n, where, "must be an integer, not %s%s%.30s%s",
		    n->kind == RELAY__PNODE_NUMBER ? "" : kind_name(n->kind),
		    n->kind == RELAY__PNODE_NUMBER ? "\"" : "",
		    n->kind == RELAY__PNODE_NUMBER ? n->text : "",
		    n->kind == RELAY__PNODE_NUMBER ? "\"" : "");
		return -1;
	}
	if (*v < lo || *v > hi) {
		bad(w, n, where, "must be between %lld and %lld, got %lld", lo,
		    hi, *v);
		return -1;
	}
	return 0;
}

static void want_timeout(walker *w, const relay__pnode *n, const char *where,
			 int64_t *ms)
{
	char max[32], got[32];
	int64_t v;

	if (n->kind == RELAY__PNODE_NUMBER) {
		bad(w, n, where, "a duration needs a unit, e.g. %.20ss",
		    n->text);
		return;
	}
	if (!want_string(w, n, where))
		return;
	if (relay__app_parse_duration(n->text, &v)) {
		bad(w, n, where, "invalid duration \"%.40s\" (write e.g. 20s, "
			"1m30s, 500ms)", n->text);
		return;
	}
	if (v <= 0) {
		bad(w, n, where, "must be greater than 0");
		return;
	}
	if (v > RELAY_APP_MAX_TIMEOUT_MS) {
		bad(w, n, where, "must be at most %s, got %s",
		    relay__app_format_duration(RELAY_APP_MAX_TIMEOUT_MS, max,
					       sizeof(max)),
		    relay__app_format_duration(v, got, sizeof(got)));
		return;
	}
	*ms = v;
}

static void want_retries(walker *w, const relay__pnode *n, const char *where,
			 int *retries)
{
	long long v;

	if (!want_int(w, n, where, 0, RELAY_APP_MAX_RETRIES, &v))
		*retries = (int)v;
}

static void do_command(walker *w, const relay__pnode *n)
{
	relay_app *app = w->app;
	size_t i;

	if (n->kind != RELAY__PNODE_SEQ || n->nchildren == 0) {
		bad(w, n, "command", "must be a non-empty list of strings "
			"(argv), e.g. [./handler.sh]");
		return;
	}
	app->command = relay__calloc(n->nchildren + 1, sizeof(char *));
	if (!app->command) {
		w->oom = 1;
		return;
	}
	app->command_line = n->children[0].line ? n->children[0].line :
						  n->line;
	for (i = 0; i < n->nchildren; i++) {
		const relay__pnode *a = &n->children[i];
		char where[32];

		snprintf(where, sizeof(where), "command[%zu]", i);
		if (a->kind == RELAY__PNODE_NUMBER) {
			app->command[app->ncommand++] = dup_or_oom(w, a->text);
			continue;
		}
		if (want_string(w, a, where))
			app->command[app->ncommand++] = dup_or_oom(w, a->text);
	}
}

static void do_resources(walker *w, const relay__pnode *n)
{
	relay_app *app = w->app;
	long long v;
	size_t i;

	if (n->kind != RELAY__PNODE_MAP) {
		bad(w, n, "resources", "must be a mapping with memory, cpus, "
			"pids, tmp");
		return;
	}
	for (i = 0; i < n->nchildren; i++) {
		const relay__pnode *c = &n->children[i];
		const char *t = c->kind == RELAY__PNODE_STRING ||
						c->kind == RELAY__PNODE_NUMBER
					? c->text : NULL;

		if (key_is(c, "memory")) {
			uint64_t b;

			if (!t || relay__app_parse_memory(t, &b))
				bad(w, c, "resources.memory", "invalid size "
				    "(write e.g. 512Mi, 1Gi, 256MiB, 64M or "
				    "bytes)");
			else if (b < RELAY_APP_MIN_MEMORY)
				bad(w, c, "resources.memory", "must be at "
				    "least 1Mi, got %llu bytes",
				    (unsigned long long)b);
			else
				app->memory = b;
		} else if (key_is(c, "cpus")) {
			uint32_t m;

			if (!t || relay__app_parse_cpus(t, &m) || m == 0 ||
			    m > RELAY_APP_MAX_CPUS_MILLI)
				bad(w, c, "resources.cpus", "must be a "
				    "positive number of CPUs up to 1024 with "
				    "at most 3 decimals, e.g. 0.5");
			else
				app->cpus_milli = m;
		} else if (key_is(c, "pids")) {
			if (!want_int(w, c, "resources.pids", 1,
				      RELAY_APP_MAX_PIDS, &v))
				app->pids = (uint32_t)v;
		} else if (key_is(c, "tmp")) {
			uint64_t b;

			if (!t || relay__app_parse_memory(t, &b))
				bad(w, c, "resources.tmp", "invalid size "
				    "(write e.g. 64Mi, 1Gi, 256MiB, 64M or "
				    "bytes)");
			else if (b < RELAY_APP_MIN_TMP || b > RELAY_APP_MAX_TMP)
				bad(w, c, "resources.tmp", "must be from 64Ki "
				    "to 1Ti, got %llu bytes",
				    (unsigned long long)b);
			else
				app->tmp = b;
		} else {
			unknown_key(w, c, "resources", resource_keys);
		}
	}
}

static void do_env_entry(walker *w, const relay__pnode *c)
{
	relay_app *app = w->app;
	const char *val;
	char where[80];
	size_t i = app->env_n;

	snprintf(where, sizeof(where), "env.%.60s", c->key);
	if (strlen(c->key) != c->key_len ||
	    !relay__app_env_name_valid(c->key)) {
		bad_key(w, c, "env", "invalid variable name \"%.40s\" "
			"(letters, digits, _; not starting with a digit)",
			c->key);
		return;
	}
	if (strncmp(c->key, "RELAY_", 6) == 0) {
		bad_key(w, c, where, "RELAY_* variables are reserved for the "
			"runtime");
		return;
	}
	switch (c->kind) {
	case RELAY__PNODE_STRING:
		if (strlen(c->text) != c->text_len) {
			bad(w, c, where, "must not contain NUL bytes");
			return;
		}
		val = c->text;
		break;
	case RELAY__PNODE_NUMBER:
		val = c->text;
		break;
	case RELAY__PNODE_BOOL:
		val = c->boolean ? "true" : "false";
		break;
	default:
		bad(w, c, where, "must be a string, number or boolean, not "
		    "%s%s", kind_name(c->kind), c->kind == RELAY__PNODE_NULL
			? " (write \"\" for an empty value)" : "");
		return;
	}
	app->env_names[i] = dup_or_oom(w, c->key);
	app->env_values[i] = dup_or_oom(w, val);
	app->envp[i] = relay__sprintf("%s=%s", c->key, val);
	if (!app->envp[i])
		w->oom = 1;
	app->env_n++;
}

static void do_env(walker *w, const relay__pnode *n)
{
	relay_app *app = w->app;
	size_t i;

	if (n->kind == RELAY__PNODE_NULL)
		return;
	if (n->kind != RELAY__PNODE_MAP) {
		bad(w, n, "env", "must be a mapping of NAME: value");
		return;
	}
	app->env_names = relay__calloc(n->nchildren + 1, sizeof(char *));
	app->env_values = relay__calloc(n->nchildren + 1, sizeof(char *));
	relay__free(app->envp);
	app->envp = relay__calloc(n->nchildren + 1, sizeof(char *));
	if (!app->env_names || !app->env_values || !app->envp) {
		w->oom = 1;
		return;
	}
	for (i = 0; i < n->nchildren; i++)
		do_env_entry(w, &n->children[i]);
}

/*
 * Check a handler name against the runtime's syntax (skipped when the
 * runtime is missing or invalid: that is reported once, at runtime:) and
 * keep a copy.
 */
static void check_handler(walker *w, const relay__pnode *n, const char *where,
			  char **out)
{
	if (w->kind && !w->kind->handler_valid(n->text)) {
		bad(w, n, where, "invalid handler \"%.60s\" (%s)", n->text,
		    w->kind->handler_hint);
		return;
	}
	*out = dup_or_oom(w, n->text);
}

struct pattern_report {
	walker *w;
	const relay__pnode *pattern;
	const char *where;
};

/* One pattern error, as a template problem at its own line:col. */
static void pattern_problem(void *arg, const relay_error *e)
{
	struct pattern_report *r = arg;
	walker *w = r->w;
	const char *text = e->text;
	int line = e->line ? e->line : r->pattern->line;
	int col = e->line ? e->column : r->pattern->column;

	/* The compiler names the root "pattern"; we say where it is. */
	if (strncmp(text, "pattern: ", 9) == 0)
		text += 9;
	if (relay__diags_add(w->d, RELAY_EPARSE, w->app->path, line, col,
			     "%s.pattern: %s", r->where, text))
		w->oom = 1;
	w->errors++;
}

/* Compile a rule's pattern; every problem in it is reported, not just
 * the first. */
static void compile_pattern(walker *w, const relay__pnode *pattern,
			    const char *where, relay_pattern **out)
{
	struct pattern_report r = { w, pattern, where };
	int rc;

	rc = relay__pattern_compile_all(out, pattern, w->app->path, NULL,
					pattern_problem, &r);
	if (rc == RELAY_ENOMEM)
		w->oom = 1;
}

static void do_rule(walker *w, const relay__pnode *n, size_t idx)
{
	relay_app_rule *r = &w->app->rules[w->app->nrules];
	const relay__pnode *pattern = NULL, *handler = NULL;
	char where[48], wk[64];
	size_t i;

	snprintf(where, sizeof(where), "events[%zu]", idx);
	if (n->kind != RELAY__PNODE_MAP) {
		bad(w, n, where, "must be a mapping with handler and pattern");
		return;
	}
	r->index = w->app->nrules;
	r->line = n->line;
	r->timeout_ms = RELAY_APP_DEFAULT_TIMEOUT_MS;
	r->retries = RELAY_APP_DEFAULT_RETRIES;
	for (i = 0; i < n->nchildren; i++) {
		const relay__pnode *c = &n->children[i];

		snprintf(wk, sizeof(wk), "%s.%.12s", where, c->key);
		if (key_is(c, "handler"))
			handler = c;
		else if (key_is(c, "pattern"))
			pattern = c;
		else if (key_is(c, "timeout"))
			want_timeout(w, c, wk, &r->timeout_ms);
		else if (key_is(c, "retries"))
			want_retries(w, c, wk, &r->retries);
		else
			unknown_key(w, c, where, rule_keys);
	}
	snprintf(wk, sizeof(wk), "%s.handler", where);
	if (!handler)
		bad(w, n, where, "missing key \"handler\"");
	else if (want_string(w, handler, wk))
		check_handler(w, handler, wk, &r->handler);
	if (!pattern)
		bad(w, n, where, "missing key \"pattern\"");
	else
		compile_pattern(w, pattern, where, &r->pattern);
	w->app->nrules++;
}

static void check_duplicate_handler(walker *w, const relay__pnode *n,
				    size_t idx)
{
	relay_app *app = w->app;
	const char *h = app->rules[idx].handler;
	size_t j;

	if (!h)
		return;
	for (j = 0; j < idx; j++) {
		const char *o = app->rules[j].handler;

		if (o && strcmp(o, h) == 0) {
			bad(w, n, NULL, "events[%zu].handler: duplicate "
			    "handler \"%.60s\" (first in events[%zu], line %d)",
			    idx, h, j, app->rules[j].line);
			return;
		}
	}
}

static const relay__pnode *child(const relay__pnode *map, const char *key)
{
	size_t i;

	for (i = 0; i < map->nchildren; i++)
		if (key_is(&map->children[i], key))
			return &map->children[i];
	return NULL;
}

static void do_events(walker *w, const relay__pnode *n)
{
	relay_app *app = w->app;
	size_t i;

	if (n->kind == RELAY__PNODE_NULL)
		return;
	if (n->kind != RELAY__PNODE_SEQ) {
		bad(w, n, "events", "must be a list of rules");
		return;
	}
	app->rules = relay__calloc(n->nchildren + 1, sizeof(*app->rules));
	if (!app->rules) {
		w->oom = 1;
		return;
	}
	for (i = 0; i < n->nchildren; i++) {
		const relay__pnode *c = &n->children[i];

		do_rule(w, c, i);
		if (c->kind == RELAY__PNODE_MAP && child(c, "handler"))
			check_duplicate_handler(w, child(c, "handler"),
						app->nrules - 1);
	}
}

/*
 * Check the cron expression and the time zone of @s (each reported at its
 * own value) and keep the compiled form. @cron is NULL when the
 * expression is missing or already reported; @tz NULL means "UTC" by
 * default.
 */
static void compile_cron(walker *w, relay_app_schedule *s,
			 const relay__pnode *n, const relay__pnode *cron,
			 const relay__pnode *tz, const char *where)
{
	relay_cron *c = NULL;
	relay_error e;
	int64_t t;
	int rc;

	if (cron) {
		rc = relay_cron_parse(&c, cron->text, "UTC", &e);
		if (rc == RELAY_ENOMEM) {
			w->oom = 1;
			return;
		}
		if (rc) {
			bad(w, cron, NULL, "%s.cron: %s (at character %d)",
			    where, e.text, e.column);
		} else if (relay_cron_next(c, 946684800 /* 2000-01-01 */,
					   &t)) {
			bad(w, cron, NULL, "%s.cron: never fires (no month "
			    "has such a day)", where);
			rc = RELAY_ENOTFOUND;
		}
		relay_cron_free(c);
		c = NULL;
		if (rc)
			cron = NULL;
	}
	if (!s->timezone)
		return; /* reported already */
	rc = relay_cron_parse(&c, cron ? cron->text : "@daily", s->timezone,
			      &e);
	if (rc == RELAY_ENOMEM) {
		w->oom = 1;
	} else if (rc) {
		bad(w, tz ? tz : n, NULL, "%s.timezone: %s", where, e.text);
	} else if (cron) {
		s->compiled = c;
		c = NULL;
	}
	relay_cron_free(c);
}

static void do_schedule(walker *w, const relay__pnode *n, size_t idx)
{
	relay_app *app = w->app;
	relay_app_schedule *s = &app->schedules[app->nschedules];
	const relay__pnode *name = NULL, *handler = NULL, *cron = NULL;
	const relay__pnode *tz = NULL;
	char where[48], wk[64];
	size_t i;

	snprintf(where, sizeof(where), "schedules[%zu]", idx);
	if (n->kind != RELAY__PNODE_MAP) {
		bad(w, n, where, "must be a mapping with name, handler, cron");
		return;
	}
	s->line = n->line;
	s->timeout_ms = RELAY_APP_DEFAULT_TIMEOUT_MS;
	s->retries = RELAY_APP_DEFAULT_RETRIES;
	app->nschedules++;
	for (i = 0; i < n->nchildren; i++) {
		const relay__pnode *c = &n->children[i];

		snprintf(wk, sizeof(wk), "%s.%.12s", where, c->key);
		if (key_is(c, "name"))
			name = c;
		else if (key_is(c, "handler"))
			handler = c;
		else if (key_is(c, "cron"))
			cron = c;
		else if (key_is(c, "timezone")) {
			if (want_string(w, c, wk)) {
				s->timezone = dup_or_oom(w, c->text);
				tz = c;
			}
		} else if (key_is(c, "timeout"))
			want_timeout(w, c, wk, &s->timeout_ms);
		else if (key_is(c, "retries"))
			want_retries(w, c, wk, &s->retries);
		else
			unknown_key(w, c, where, schedule_keys);
	}
	if (!child(n, "timezone"))
		s->timezone = dup_or_oom(w, "UTC");
	snprintf(wk, sizeof(wk), "%s.name", where);
	if (!name) {
		bad(w, n, where, "missing key \"name\"");
	} else if (want_string(w, name, wk)) {
		if (!relay_app_name_valid(name->text)) {
			bad(w, name, wk, "invalid name \"%.60s\" (lowercase "
			    "letters, digits, . _ -; at most 63)", name->text);
		} else {
			for (i = 0; i + 1 < app->nschedules; i++)
				if (app->schedules[i].name &&
				    !strcmp(app->schedules[i].name, name->text))
					break;
			if (i + 1 < app->nschedules)
				bad(w, name, wk, "duplicate schedule name "
				    "\"%.60s\" (first at line %d)", name->text,
				    app->schedules[i].line);
			else
				s->name = dup_or_oom(w, name->text);
		}
	}
	snprintf(wk, sizeof(wk), "%s.handler", where);
	if (!handler)
		bad(w, n, where, "missing key \"handler\"");
	else if (want_string(w, handler, wk))
		check_handler(w, handler, wk, &s->handler);
	snprintf(wk, sizeof(wk), "%s.cron", where);
	if (!cron)
		bad(w, n, where, "missing key \"cron\"");
	else if (want_string(w, cron, wk))
		s->cron = dup_or_oom(w, cron->text);
	compile_cron(w, s, n, s->cron ? cron : NULL, tz, where);
}

static void do_schedules(walker *w, const relay__pnode *n)
{
	size_t i;

	if (n->kind == RELAY__PNODE_NULL)
		return;
	if (n->kind != RELAY__PNODE_SEQ) {
		bad(w, n, "schedules", "must be a list of schedules");
		return;
	}
	w->app->schedules = relay__calloc(n->nchildren + 1,
					  sizeof(*w->app->schedules));
	if (!w->app->schedules) {
		w->oom = 1;
		return;
	}
	for (i = 0; i < n->nchildren; i++)
		do_schedule(w, &n->children[i], i);
}

static void do_runtime(walker *w, const relay__pnode *n)
{
	const char *words[RELAY__KIND_COUNT + 1] = { 0 };
	const char *hint;
	char names[128];
	size_t i;

	if (n->kind == RELAY__PNODE_STRING)
		w->kind = relay__kind_find(n->text);
	if (w->kind) {
		w->app->runtime = w->kind->kind;
		return;
	}
	for (i = 0; i < RELAY__KIND_COUNT && relay__kind_at(i); i++)
		words[i] = relay__kind_at(i)->name;
	hint = n->kind == RELAY__PNODE_STRING
		       ? relay__app_suggest(n->text, words) : NULL;
	relay__kind_names(names, sizeof(names), ", ");
	if (hint)
		bad(w, n, "runtime", "must be one of %s (did you mean "
		    "\"%s\"?)", names, hint);
	else
		bad(w, n, "runtime", "must be one of %s", names);
}

/* `tracing: link | child` (doc/templates.md). */
static void do_tracing(walker *w, const relay__pnode *n)
{
	static const char *const names[] = { "link", "child", NULL };
	const char *hint;

	if (n->kind == RELAY__PNODE_STRING) {
		if (strcmp(n->text, "link") == 0) {
			w->app->tracing = RELAY_APP_TRACING_LINK;
			return;
		}
		if (strcmp(n->text, "child") == 0) {
			w->app->tracing = RELAY_APP_TRACING_CHILD;
			return;
		}
	}
	hint = n->kind == RELAY__PNODE_STRING
		       ? relay__app_suggest(n->text, names) : NULL;
	if (hint)
		bad(w, n, "tracing", "must be link or child (did you mean "
		    "\"%s\"?)", hint);
	else if (n->kind == RELAY__PNODE_STRING)
		bad(w, n, "tracing", "must be link or child");
	else
		bad(w, n, "tracing", "must be link or child, not %s",
		    kind_name(n->kind));
}

/* The name of the kind that takes a `command:` (exec). */
static const char *command_kind(void)
{
	const relay__kind *d;
	size_t i;

	for (i = 0; (d = relay__kind_at(i)) != NULL; i++)
		if (d->command)
			return d->name;
	return "";
}

static void do_top(walker *w, const relay__pnode *c)
{
	long long v;

	if (key_is(c, "runtime"))
		return; /* done first */
	if (key_is(c, "command")) {
		if (w->kind && !w->kind->command)
			bad_key(w, c, "command", "only allowed with runtime "
				"%s (%s runs the handler module)",
				command_kind(), w->kind->name);
		else
			do_command(w, c);
	} else if (key_is(c, "network")) {
		if (c->kind != RELAY__PNODE_BOOL)
			bad(w, c, "network", "must be true or false, not %s",
			    kind_name(c->kind));
		else
			w->app->network = c->boolean;
	} else if (key_is(c, "warm")) {
		if (c->kind != RELAY__PNODE_BOOL)
			bad(w, c, "warm", "must be true or false, not %s",
			    kind_name(c->kind));
		else
			w->app->no_warm = !c->boolean;
	} else if (key_is(c, "tracing")) {
		do_tracing(w, c);
	} else if (key_is(c, "concurrency")) {
		if (!want_int(w, c, "concurrency", 1,
			      RELAY_APP_MAX_CONCURRENCY, &v))
			w->app->concurrency = (int)v;
	} else if (key_is(c, "resources")) {
		do_resources(w, c);
	} else if (key_is(c, "env")) {
		do_env(w, c);
	} else if (key_is(c, "events")) {
		do_events(w, c);
	} else if (key_is(c, "schedules")) {
		do_schedules(w, c);
	} else {
		unknown_key(w, c, NULL, top_keys);
	}
}

int relay__app_from_tree(relay_app *app, const relay__pnode *root,
			 relay__diags *d)
{
	walker w = { app, d, 0, 0, NULL };
	const relay__pnode *rt;
	char names[128];
	size_t i;

	app->concurrency = RELAY_APP_DEFAULT_CONCURRENCY;
	if (root->kind != RELAY__PNODE_MAP) {
		bad(&w, root, NULL, "a template must be a mapping (runtime:, "
		    "events:, …), not %s", kind_name(root->kind));
		goto done;
	}
	rt = child(root, "runtime");
	if (rt)
		do_runtime(&w, rt);
	else
		bad(&w, root, NULL, "missing key \"runtime\" (%s)",
		    relay__kind_names(names, sizeof(names), " or "));
	for (i = 0; i < root->nchildren; i++)
		do_top(&w, &root->children[i]);
	if (w.kind && w.kind->command && !child(root, "command"))
		bad(&w, rt, "command", "required when runtime is %s",
		    w.kind->name);
done:
	if (w.oom)
		return RELAY_ENOMEM;
	return w.errors ? RELAY_EPARSE : 0;
}
