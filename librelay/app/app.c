/*
 * app.c - loading one app: read template.yaml, parse, validate, report;
 * the relay_app accessors.
 *
 * Loading collects problems into a relay__diags list first and reports
 * them only at the end, sorted by (line, column): the schema walk finds
 * some problems late (a duplicate handler is only known at the second
 * rule, a missing `command:` after the whole file), and users read
 * diagnostics top to bottom. The sort is stable, so problems at the same
 * position keep the order they were found in.
 *
 * A template is read whole into memory with a 1 MiB cap: templates are
 * hand-written and small, and the cap keeps a stray symlink to a huge
 * file from stalling relayd's reload.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "runtime/kind.h"

#define TEMPLATE_MAX_BYTES (1024 * 1024)

int relay__diags_add(relay__diags *d, int code, const char *path, int line,
		     int column, const char *fmt, ...)
{
	relay_error *e;
	va_list ap;
	char *p;

	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 8;
		relay_error *v = relay__realloc(d->v, cap * sizeof(*v));

		if (!v) {
			d->oom = 1;
			return RELAY_ENOMEM;
		}
		d->v = v;
		d->cap = cap;
	}
	e = &d->v[d->n++];
	memset(e, 0, sizeof(*e));
	e->code = code;
	snprintf(e->path, sizeof(e->path), "%s", path ? path : "");
	/* Positions are 1-based; anything unknown is the file's start. */
	e->line = line > 0 ? line : 1;
	e->column = line > 0 && column > 0 ? column : 1;
	va_start(ap, fmt);
	vsnprintf(e->text, sizeof(e->text), fmt, ap);
	va_end(ap);
	/* Messages quote template text; keep them one printable line. */
	for (p = e->text; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	return 0;
}

void relay__diags_sort(relay__diags *d)
{
	size_t i, j;

	/* Insertion sort: stable, and lists are short. */
	for (i = 1; i < d->n; i++) {
		relay_error t = d->v[i];

		for (j = i; j > 0; j--) {
			const relay_error *p = &d->v[j - 1];

			if (p->line < t.line ||
			    (p->line == t.line && p->column <= t.column))
				break;
			d->v[j] = d->v[j - 1];
		}
		d->v[j] = t;
	}
}

void relay__diags_free(relay__diags *d)
{
	relay__free(d->v);
	d->v = NULL;
	d->n = d->cap = 0;
}

/* Every loaded template gets the next number (relay_app_generation()). */
static uint64_t generations;

static void free_strv(char **v, size_t n)
{
	size_t i;

	if (!v)
		return;
	for (i = 0; i < n; i++)
		relay__free(v[i]);
	relay__free(v);
}

relay_app *relay_app_ref(const relay_app *app)
{
	relay_app *a = (relay_app *)app; /* the count is not the contents */

	__atomic_add_fetch(&a->refs, 1, __ATOMIC_RELAXED);
	return a;
}

void relay_app_free(relay_app *app)
{
	size_t i;

	if (!app || __atomic_sub_fetch(&app->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	relay__free(app->name);
	relay__free(app->dir);
	relay__free(app->path);
	free_strv(app->command, app->ncommand);
	free_strv(app->env_names, app->env_n);
	free_strv(app->env_values, app->env_n);
	free_strv(app->envp, app->env_n);
	for (i = 0; i < app->nrules; i++) {
		relay__free(app->rules[i].handler);
		relay_pattern_free(app->rules[i].pattern);
	}
	relay__free(app->rules);
	for (i = 0; i < app->nschedules; i++) {
		relay__free(app->schedules[i].name);
		relay__free(app->schedules[i].handler);
		relay__free(app->schedules[i].cron);
		relay__free(app->schedules[i].timezone);
		relay_cron_free(app->schedules[i].compiled);
	}
	relay__free(app->schedules);
	relay__free(app);
}

static char *absolute_dir(const char *dir)
{
	char *real = realpath(dir, NULL);
	char *copy;

	if (!real)
		return relay__strdup(dir);
	copy = relay__strdup(real);
	free(real); /* realpath() allocates with malloc() */
	return copy;
}

int relay__app_load_diags(relay_app **out, const char *name,
			  const char *app_dir, const char *path,
			  const char *yaml, size_t len, relay__diags *d)
{
	relay__pnode *root = NULL;
	relay_app *app;
	int rc = RELAY_ENOMEM, bad_name;
	char esc[300];

	*out = NULL;
	app = relay__calloc(1, sizeof(*app));
	if (!app)
		return RELAY_ENOMEM;
	app->refs = 1;
	app->generation = __atomic_add_fetch(&generations, 1,
					     __ATOMIC_RELAXED);
	app->name = relay__strdup(name ? name : "");
	app->dir = absolute_dir(app_dir ? app_dir : ".");
	app->path = relay__strdup(path ? path : "template.yaml");
	app->envp = relay__calloc(1, sizeof(char *));
	if (!app->name || !app->dir || !app->path || !app->envp)
		goto done;
	bad_name = !relay_app_name_valid(app->name);
	if (bad_name &&
	    relay__diags_add(d, RELAY_EINVAL, app->path, 1, 1,
			     "invalid app name \"%s\" (directory name "
			     "must match [a-z0-9][a-z0-9._-]* and be at most "
			     "63 bytes)", relay__escape(app->name, 64, esc,
							sizeof(esc))))
		goto done;
	rc = relay__yaml_parse(&root, yaml, len, app->path, d);
	if (rc == 0)
		rc = relay__app_from_tree(app, root, d);
	if (rc == 0 && bad_name)
		rc = RELAY_EINVAL;
	if (d->oom)
		rc = RELAY_ENOMEM;
done:
	relay__pnode_free(root);
	if (rc) {
		relay_app_free(app);
		return rc;
	}
	*out = app;
	return 0;
}

int relay__app_read_file(const char *path, char **data, size_t *len,
			 relay__diags *d)
{
	relay__buf b = { 0 };
	char chunk[8192];
	FILE *f;
	size_t n;
	int rc = 0;

	f = fopen(path, "rb");
	if (!f) {
		rc = errno == ENOENT ? RELAY_ENOTFOUND : RELAY_ERROR;
		relay__diags_add(d, rc, path, 1, 1, "cannot open: %s",
				 strerror(errno));
		return rc;
	}
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		if (b.len + n > TEMPLATE_MAX_BYTES) {
			rc = relay__diags_add(d, RELAY_EINVAL, path, 1, 1,
					      "file is larger than 1 MiB")
				     ? RELAY_ENOMEM : RELAY_EINVAL;
			goto done;
		}
		rc = relay__buf_append(&b, chunk, n);
		if (rc)
			goto done;
	}
	if (ferror(f)) {
		rc = RELAY_ERROR;
		relay__diags_add(d, rc, path, 1, 1, "cannot read: %s",
				 strerror(errno));
	}
done:
	fclose(f);
	if (rc) {
		relay__buf_free(&b);
		return rc;
	}
	*data = b.data;
	*len = b.len;
	return 0;
}

int relay__app_load_dir(relay_app **out, const char *name,
			const char *app_dir, relay__diags *d)
{
	size_t dl = strlen(app_dir), len = 0;
	char *path, *data = NULL;
	int rc;

	*out = NULL;
	path = relay__sprintf("%s%stemplate.yaml", app_dir,
			      dl && app_dir[dl - 1] == '/' ? "" : "/");
	if (!path)
		return RELAY_ENOMEM;
	rc = relay__app_read_file(path, &data, &len, d);
	if (!rc)
		rc = relay__app_load_diags(out, name, app_dir, path, data, len,
					   d);
	relay__free(data);
	relay__free(path);
	return rc;
}

static void report(const relay__diags *d, const char *name,
		   relay_app_diag_fn fn, void *payload)
{
	size_t i;

	if (!fn)
		return;
	for (i = 0; i < d->n; i++)
		fn(name, &d->v[i], payload);
}

/* The last path component of @dir, ignoring trailing slashes. */
static char *base_name(const char *dir)
{
	size_t end = strlen(dir), start;

	while (end > 1 && dir[end - 1] == '/')
		end--;
	start = end;
	while (start > 0 && dir[start - 1] != '/')
		start--;
	return relay__strndup(dir + start, end - start);
}

int relay_app_load(relay_app **out, const char *app_dir,
		   relay_app_diag_fn fn, void *payload)
{
	relay__diags d = { 0 };
	char *name = base_name(app_dir);
	int rc;

	*out = NULL;
	if (!name)
		return RELAY_ENOMEM;
	rc = relay__app_load_dir(out, name, app_dir, &d);
	relay__diags_sort(&d);
	report(&d, name, fn, payload);
	relay__diags_free(&d);
	relay__free(name);
	return rc == RELAY_EINVAL ? RELAY_EPARSE : rc;
}

int relay_app_load_buffer(relay_app **out, const char *name,
			  const char *app_dir, const char *path,
			  const char *yaml, size_t len, relay_app_diag_fn fn,
			  void *payload)
{
	relay__diags d = { 0 };
	int rc;

	rc = relay__app_load_diags(out, name, app_dir, path, yaml, len, &d);
	relay__diags_sort(&d);
	report(&d, name ? name : "", fn, payload);
	relay__diags_free(&d);
	return rc == RELAY_EINVAL ? RELAY_EPARSE : rc;
}

const char *relay_app_runtime_name(relay_app_runtime_kind kind)
{
	const relay__kind *d = relay__kind_get(kind);

	return d ? d->name : "";
}

bool relay_app_runtime_available(const relay_app *app)
{
	const relay__kind *d = relay__kind_get(app->runtime);

	return !d || !d->program || relay__on_path(d->program);
}

const char *relay_app_name(const relay_app *app) { return app->name; }
const char *relay_app_dir(const relay_app *app) { return app->dir; }
const char *relay_app_template_path(const relay_app *app) { return app->path; }
relay_app_runtime_kind relay_app_runtime(const relay_app *app)
{
	return app->runtime;
}
bool relay_app_network(const relay_app *app) { return app->network; }

bool relay_app_warm(const relay_app *app) { return !app->no_warm; }

relay_app_tracing relay_app_tracing_mode(const relay_app *app)
{
	return app->tracing;
}

uint64_t relay_app_generation(const relay_app *app)
{
	return app->generation;
}
int relay_app_concurrency(const relay_app *app) { return app->concurrency; }
uint64_t relay_app_memory(const relay_app *app) { return app->memory; }
uint32_t relay_app_cpus_milli(const relay_app *app) { return app->cpus_milli; }
uint32_t relay_app_pids(const relay_app *app) { return app->pids; }
uint64_t relay_app_tmp(const relay_app *app) { return app->tmp; }
size_t relay_app_env_count(const relay_app *app) { return app->env_n; }
size_t relay_app_rule_count(const relay_app *app) { return app->nrules; }

const char *const *relay_app_command(const relay_app *app, size_t *argc)
{
	if (argc)
		*argc = app->command ? app->ncommand : 0;
	return (const char *const *)app->command;
}

int relay_app_command_line(const relay_app *app)
{
	return app->command ? app->command_line : 0;
}

int relay_app_env_at(const relay_app *app, size_t i, const char **name,
		     const char **value)
{
	if (i >= app->env_n)
		return RELAY_ENOTFOUND;
	if (name)
		*name = app->env_names[i];
	if (value)
		*value = app->env_values[i];
	return 0;
}

const char *const *relay_app_envp(const relay_app *app)
{
	return (const char *const *)app->envp;
}

const relay_app_rule *relay_app_rule_at(const relay_app *app, size_t i)
{
	return i < app->nrules ? &app->rules[i] : NULL;
}

const relay_app_rule *relay_app_rule_find(const relay_app *app,
					  const char *handler)
{
	size_t i;

	for (i = 0; i < app->nrules; i++)
		if (strcmp(app->rules[i].handler, handler) == 0)
			return &app->rules[i];
	return NULL;
}

size_t relay_app_rule_index(const relay_app_rule *r) { return r->index; }
const char *relay_app_rule_handler(const relay_app_rule *r)
{
	return r->handler;
}
const relay_pattern *relay_app_rule_pattern(const relay_app_rule *r)
{
	return r->pattern;
}
int64_t relay_app_rule_timeout_ms(const relay_app_rule *r)
{
	return r->timeout_ms;
}
int relay_app_rule_retries(const relay_app_rule *r) { return r->retries; }
int relay_app_rule_line(const relay_app_rule *r) { return r->line; }

size_t relay_app_schedule_count(const relay_app *app)
{
	return app->nschedules;
}

const relay_app_schedule *relay_app_schedule_at(const relay_app *app,
						size_t i)
{
	return i < app->nschedules ? &app->schedules[i] : NULL;
}

const relay_app_schedule *relay_app_schedule_find(const relay_app *app,
						  const char *name)
{
	size_t i;

	for (i = 0; i < app->nschedules; i++)
		if (strcmp(app->schedules[i].name, name) == 0)
			return &app->schedules[i];
	return NULL;
}

const char *relay_app_schedule_name(const relay_app_schedule *s)
{
	return s->name;
}
const char *relay_app_schedule_handler(const relay_app_schedule *s)
{
	return s->handler;
}
const char *relay_app_schedule_cron(const relay_app_schedule *s)
{
	return s->cron;
}
const char *relay_app_schedule_timezone(const relay_app_schedule *s)
{
	return s->timezone;
}
const relay_cron *
relay_app_schedule_cron_compiled(const relay_app_schedule *s)
{
	return s->compiled;
}

int64_t relay_app_schedule_timeout_ms(const relay_app_schedule *s)
{
	return s->timeout_ms;
}
int relay_app_schedule_retries(const relay_app_schedule *s)
{
	return s->retries;
}
int relay_app_schedule_line(const relay_app_schedule *s) { return s->line; }
