/*
 * relay/app.h - app templates: load, validate, query; the app set.
 *
 * An app is a directory holding a template.yaml (relay-template(5),
 * doc/templates.md). relay_app_load() reads and validates one template and
 * reports every problem it finds, each with file:line:column, through a
 * diagnostic callback. A loaded relay_app is immutable.
 *
 * A relay_appset is every app under an apps directory, loaded in sorted
 * name order. Invalid apps are reported and kept out of matching, but stay
 * listed with their errors. The set compiles the rules of all valid apps
 * into ONE relay_ruleset in dispatch order (apps by name, rules in
 * declaration order) and maps each rule id back to its (app, rule).
 * relayctl match and relayd both match through relay_appset_match() or the
 * ruleset it exposes, so they share one code path.
 *
 * Thread-safety: loading is reentrant (no global state). Loaded apps and
 * sets are immutable and may be read from any number of threads at once;
 * matching additionally needs one relay_matcher per thread. Reloading
 * builds a new set (relay_appset_reload()) that shares unchanged apps
 * with the old one, so readers of the old set are never disturbed.
 */
#ifndef RELAY_APP_H
#define RELAY_APP_H

#include <stdbool.h>

#include "clock.h"
#include "common.h"
#include "kind.h"
#include "pattern.h"
#include "schedule.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct relay_app relay_app;
typedef struct relay_app_rule relay_app_rule;
typedef struct relay_app_schedule relay_app_schedule;
typedef struct relay_appset relay_appset;

/*
 * relay_app_runtime_kind - how an app's handlers are run: the one enum of
 * handler kinds, relay_runtime_kind (relay/kind.h). The RELAY_APP_RUNTIME_
 * names are kept for source compatibility; since soname 2 they are the
 * relay_runtime_kind values (RELAY_APP_RUNTIME_EXEC is 0, no longer 3:
 * doc/api-stability.md).
 */
typedef relay_runtime_kind relay_app_runtime_kind;
#define RELAY_APP_RUNTIME_PYTHON3 RELAY_RUNTIME_PYTHON3
#define RELAY_APP_RUNTIME_NODE RELAY_RUNTIME_NODE
#define RELAY_APP_RUNTIME_EXEC RELAY_RUNTIME_EXEC

/**
 * enum relay_app_tracing - the template's `tracing:` (doc/templates.md):
 * how a handler attempt's span relates to the producer's trace context
 * of the stream entry.
 */
typedef enum relay_app_tracing {
	RELAY_APP_TRACING_LINK = 0,  /* default: each attempt starts its own
					trace and links to the producer */
	RELAY_APP_TRACING_CHILD = 1, /* each attempt is a child of the
					producer's span */
} relay_app_tracing;

/* Limits and defaults of template values (doc/templates.md). */
#define RELAY_APP_NAME_MAX 63                /* bytes of an app name */
#define RELAY_APP_DEFAULT_CONCURRENCY 2
#define RELAY_APP_MAX_CONCURRENCY 1024
#define RELAY_APP_DEFAULT_TIMEOUT_MS 6000    /* 6s */
#define RELAY_APP_MAX_TIMEOUT_MS 300000      /* 5m */
#define RELAY_APP_DEFAULT_RETRIES 4
#define RELAY_APP_MAX_RETRIES 100
#define RELAY_APP_MIN_MEMORY (1024 * 1024)   /* 1Mi */
#define RELAY_APP_MAX_CPUS_MILLI 1024000     /* 1024 CPUs */
#define RELAY_APP_MAX_PIDS 4194304
#define RELAY_APP_DEFAULT_PIDS 128           /* resources.pids unset */
#define RELAY_APP_MIN_TMP (64 * 1024)        /* 64Ki */
#define RELAY_APP_MAX_TMP (1ull << 40)       /* 1Ti */
#define RELAY_APP_DEFAULT_TMP (64ull * 1024 * 1024)  /* 64Mi */

/**
 * relay_app_diag_fn - receives one problem found while loading.
 * @app: the app name (its directory name), or NULL for a problem of the
 *   apps directory itself (relay_appset_load() only).
 * @err: the problem (**borrowed** for the call): code, path (the template
 *   file as given, or the apps directory), 1-based line and column, text.
 *   Problems of the file as a whole (an invalid app name, an unreadable
 *   file) carry line 1, column 1.
 * @payload: the payload given to the load call.
 *
 * Called in document order, once per problem. It must not call back into
 * the object being loaded.
 */
typedef void (*relay_app_diag_fn)(const char *app, const relay_error *err,
				  void *payload);

/**
 * relay_app_name_valid() - whether @name is a valid app (or schedule) name:
 * `[a-z0-9][a-z0-9._-]*`, at most RELAY_APP_NAME_MAX bytes.
 * Returns: true or false. Thread-safety: safe from any thread.
 */
RELAY_EXTERN bool relay_app_name_valid(const char *name);

/**
 * relay_app_load() - load and validate <@app_dir>/template.yaml.
 * @out: receives the app on success (**new**; free with relay_app_free());
 *   set to NULL on failure.
 * @app_dir: the app directory; its last path component is the app name.
 *   Diagnostics name the file as "<@app_dir>/template.yaml" (as given);
 *   relay_app_dir() is its absolute form.
 * @fn: optional diagnostic callback, called once for EVERY problem found
 *   (not only the first).
 * @payload: passed to @fn.
 *
 * Returns: 0; RELAY_EPARSE when the template has problems (each already
 * reported through @fn); RELAY_ENOTFOUND when the file does not exist;
 * RELAY_ERROR for other I/O errors; RELAY_ENOMEM. Every failure other than
 * RELAY_ENOMEM is also reported through @fn.
 * Thread-safety: reentrant.
 */
RELAY_EXTERN int relay_app_load(relay_app **out, const char *app_dir,
				relay_app_diag_fn fn, void *payload);

/**
 * relay_app_load_buffer() - as relay_app_load() for a template in memory.
 * @out: receives the app (**new**), NULL on failure.
 * @name: the app name (validated like a directory name).
 * @app_dir: the directory the app would run from (made absolute if it
 *   exists; kept as given otherwise); may be NULL for ".".
 * @path: the file name used in diagnostics; NULL for "template.yaml".
 * @yaml: the template text (**borrowed**; need not be NUL-terminated).
 * @len: its length in bytes.
 * @fn, @payload: as for relay_app_load().
 *
 * Returns: 0, RELAY_EPARSE, RELAY_ENOMEM.
 * Thread-safety: reentrant.
 */
RELAY_EXTERN int relay_app_load_buffer(relay_app **out, const char *name,
				       const char *app_dir, const char *path,
				       const char *yaml, size_t len,
				       relay_app_diag_fn fn, void *payload);

/**
 * relay_app_ref() - take another reference to an app.
 * @app: the app (a loaded app, or one borrowed from a set).
 *
 * Apps are reference-counted so that a holder (an in-flight invocation)
 * can keep one alive after the set it came from is replaced or freed.
 * Returns: @app, to be released with relay_app_free().
 * Thread-safety: safe from any thread (atomic count).
 */
RELAY_EXTERN relay_app *relay_app_ref(const relay_app *app);

/**
 * relay_app_free() - release a reference; the last one frees the app and
 * its compiled patterns. NULL is a no-op.
 * Thread-safety: safe from any thread; no thread may use @app after
 * releasing its own reference.
 */
RELAY_EXTERN void relay_app_free(relay_app *app);

/*
 * Accessors. Every returned pointer is **borrowed** from the app and valid
 * until relay_app_free(). Safe to call from any thread.
 */

/** relay_app_name() - the app name (its directory name). */
RELAY_EXTERN const char *relay_app_name(const relay_app *app);

/** relay_app_dir() - the absolute path of the app directory. */
RELAY_EXTERN const char *relay_app_dir(const relay_app *app);

/** relay_app_template_path() - the template file as named in
 * diagnostics ("<app_dir as given>/template.yaml"). */
RELAY_EXTERN const char *relay_app_template_path(const relay_app *app);

/** relay_app_runtime() - the `runtime:` of the app. */
RELAY_EXTERN relay_app_runtime_kind relay_app_runtime(const relay_app *app);

/** relay_app_runtime_name() - "python3", "node", "exec"; "" if unknown.
 * Returns: a static string. */
RELAY_EXTERN const char *relay_app_runtime_name(relay_app_runtime_kind kind);

/**
 * relay_app_runtime_available() - whether the interpreter the app's
 * runtime needs is installed where the engine would look for it: python3
 * or node as an executable file in a directory of $PATH (an exec app
 * needs none: always true). The engine's default availability check
 * (relay_consumer_options.available) asks the same, with a five-second
 * cache; this call scans $PATH every time.
 * Returns: true or false.
 * Thread-safety: safe from any thread (reads $PATH; do not call
 * setenv() concurrently).
 */
RELAY_EXTERN bool relay_app_runtime_available(const relay_app *app);

/**
 * relay_app_command() - the `command:` argv of an exec app.
 * @argc: receives the number of arguments (0 for other runtimes); may be
 *   NULL.
 * Returns: a NULL-terminated argv (**borrowed**), or NULL when the runtime
 * is not exec.
 */
RELAY_EXTERN const char *const *relay_app_command(const relay_app *app,
						  size_t *argc);

/** relay_app_command_line() - 1-based line of the `command:` list's first
 * element in the template; 0 when the runtime is not exec. */
RELAY_EXTERN int relay_app_command_line(const relay_app *app);

/** relay_app_network() - whether the handler gets network access
 * (`network:`, default false). */
RELAY_EXTERN bool relay_app_network(const relay_app *app);

/** relay_app_warm() - whether invocations may start from a warm parent
 * (`warm:`, default true; see relay_exec_spec.warm). */
RELAY_EXTERN bool relay_app_warm(const relay_app *app);

/** relay_app_tracing_mode() - `tracing:` (link or child; default link). */
RELAY_EXTERN relay_app_tracing relay_app_tracing_mode(const relay_app *app);

/**
 * relay_app_generation() - a number distinct for every loaded template
 * (in this process): a reloaded app has a new one, so warm parents of
 * the old template are retired (relay_exec_spec.generation).
 */
RELAY_EXTERN uint64_t relay_app_generation(const relay_app *app);

/** relay_app_concurrency() - `concurrency:` (default 2, 1…1024); the
 * effective value is min(this, MAX_CONCURRENCY). */
RELAY_EXTERN int relay_app_concurrency(const relay_app *app);

/** relay_app_memory() - `resources.memory` in bytes; 0 when unset. */
RELAY_EXTERN uint64_t relay_app_memory(const relay_app *app);

/** relay_app_cpus_milli() - `resources.cpus` in thousandths of a CPU
 * (`0.5` → 500); 0 when unset. */
RELAY_EXTERN uint32_t relay_app_cpus_milli(const relay_app *app);

/** relay_app_pids() - `resources.pids`; 0 when unset (the runtime then
 * applies its default ceiling, RELAY_APP_DEFAULT_PIDS, where cgroups
 * serve pids: doc/sandbox.md). */
RELAY_EXTERN uint32_t relay_app_pids(const relay_app *app);

/** relay_app_tmp() - `resources.tmp` in bytes (the size of the sandbox's
 * /tmp); 0 when unset (the runtime's default, RELAY_APP_DEFAULT_TMP). */
RELAY_EXTERN uint64_t relay_app_tmp(const relay_app *app);

/** relay_app_env_count() - number of `env:` entries. */
RELAY_EXTERN size_t relay_app_env_count(const relay_app *app);

/**
 * relay_app_env_at() - one `env:` entry, in declaration order.
 * @i: index, < relay_app_env_count().
 * @name: receives the variable name (**borrowed**); may be NULL.
 * @value: receives its value as a string (**borrowed**); may be NULL.
 * Returns: 0, or RELAY_ENOTFOUND when @i is out of range.
 */
RELAY_EXTERN int relay_app_env_at(const relay_app *app, size_t i,
				  const char **name, const char **value);

/**
 * relay_app_envp() - the `env:` entries as "NAME=value" strings.
 * Returns: a NULL-terminated array (**borrowed**) in declaration order,
 * suitable as the start of an execve() environment. Never NULL.
 */
RELAY_EXTERN const char *const *relay_app_envp(const relay_app *app);

/** relay_app_rule_count() - number of `events:` rules. */
RELAY_EXTERN size_t relay_app_rule_count(const relay_app *app);

/** relay_app_rule_at() - rule @i in declaration order (**borrowed**), or
 * NULL when @i is out of range. */
RELAY_EXTERN const relay_app_rule *relay_app_rule_at(const relay_app *app,
						     size_t i);

/** relay_app_rule_find() - the rule whose handler is @handler
 * (**borrowed**), or NULL. */
RELAY_EXTERN const relay_app_rule *relay_app_rule_find(const relay_app *app,
						       const char *handler);

/** relay_app_rule_index() - the rule's position in `events:`, from 0. */
RELAY_EXTERN size_t relay_app_rule_index(const relay_app_rule *rule);

/** relay_app_rule_handler() - the handler name, unique within the app. */
RELAY_EXTERN const char *relay_app_rule_handler(const relay_app_rule *rule);

/** relay_app_rule_pattern() - the compiled pattern (**borrowed**). */
RELAY_EXTERN const relay_pattern *
relay_app_rule_pattern(const relay_app_rule *rule);

/** relay_app_rule_timeout_ms() - `timeout:` in ms (default 6000, at most
 * 300000). */
RELAY_EXTERN int64_t relay_app_rule_timeout_ms(const relay_app_rule *rule);

/** relay_app_rule_retries() - `retries:` (default 4, 0…100); total
 * attempts are retries + 1. */
RELAY_EXTERN int relay_app_rule_retries(const relay_app_rule *rule);

/** relay_app_rule_line() - 1-based line of the rule in the template. */
RELAY_EXTERN int relay_app_rule_line(const relay_app_rule *rule);

/**
 * relay_app_rule_pattern_yaml() - the `pattern:` of rule @index as
 * written in the app's template, rendered as YAML.
 * @app: the app.
 * @index: the rule's position in `events:` (relay_app_rule_index()).
 * @indent: spaces before each line (0 to 256).
 * @out: receives the text: a block mapping, one "key: value" per line,
 *   each line ending in '\n' (an empty or non-mapping pattern is one
 *   line). Scalars keep their template typing (a number prints as its
 *   literal); a string prints plain when YAML reads it back as the same
 *   string, else double-quoted; lists print in flow style ([a, {gt: 0}]).
 *   Control characters never appear raw (they are quoted), but the text
 *   may hold any other UTF-8 from the template: sanitise it before
 *   printing to a terminal.
 *
 * The compiled pattern keeps no source, so this reads
 * relay_app_template_path(@app) again: if the file changed since the app
 * was loaded, the text is the file's, now. An app loaded with
 * relay_app_load_buffer() has no such file unless its path names one.
 * Returns: 0; RELAY_ENOTFOUND (the file cannot be opened, or it has no
 * events[@index].pattern); RELAY_EPARSE (it no longer parses as YAML,
 * or it grew past the 1 MiB a template may have);
 * RELAY_EINVAL (@app or @out NULL, @indent out of range); RELAY_ENOMEM.
 * Ownership: *out is new (free with relay_free()); NULL on failure.
 * Thread-safety: safe from any thread.
 */
RELAY_EXTERN int relay_app_rule_pattern_yaml(const relay_app *app,
					     size_t index, int indent,
					     char **out);

/**
 * relay_app_rule_pattern_json() - the `pattern:` of rule @index as
 * written in the app's template, as compact JSON text (keys in template
 * order). A number whose YAML literal is not a JSON number (0x1F, .5)
 * becomes a string holding the literal; a string may hold "\u0000".
 * Everything else as relay_app_rule_pattern_yaml(), which reads the
 * file the same way.
 * Returns: as relay_app_rule_pattern_yaml().
 * Ownership: *out is new (free with relay_free()); NULL on failure.
 * Thread-safety: safe from any thread.
 */
RELAY_EXTERN int relay_app_rule_pattern_json(const relay_app *app,
					     size_t index, char **out);

/**
 * relay_app_format_duration() - @ms in the template's duration syntax,
 * compact: "1m30s", "500ms", "2h", "0s" (the form `timeout:` accepts and
 * relay_app_rule_timeout_ms() reports).
 * @ms: milliseconds, >= 0.
 * @buf: receives the text, always NUL-terminated when @size > 0 (cut to
 *   fit; 32 bytes always fit).
 * Returns: @buf, or "" for @size 0 or a negative @ms (borrowed: a static
 * empty string).
 * Thread-safety: reentrant.
 */
RELAY_EXTERN const char *relay_app_format_duration(int64_t ms, char *buf,
						   size_t size);

/** relay_app_schedule_count() - number of `schedules:` entries. */
RELAY_EXTERN size_t relay_app_schedule_count(const relay_app *app);

/** relay_app_schedule_at() - schedule @i in declaration order
 * (**borrowed**), or NULL when out of range. */
RELAY_EXTERN const relay_app_schedule *
relay_app_schedule_at(const relay_app *app, size_t i);

/** relay_app_schedule_find() - the schedule named @name (**borrowed**),
 * or NULL. */
RELAY_EXTERN const relay_app_schedule *
relay_app_schedule_find(const relay_app *app, const char *name);

/** relay_app_schedule_name() - its name, unique within the app. */
RELAY_EXTERN const char *
relay_app_schedule_name(const relay_app_schedule *s);

/** relay_app_schedule_handler() - the handler it runs. */
RELAY_EXTERN const char *
relay_app_schedule_handler(const relay_app_schedule *s);

/** relay_app_schedule_cron() - the cron expression, as written (valid:
 * a template with a bad expression does not load). */
RELAY_EXTERN const char *
relay_app_schedule_cron(const relay_app_schedule *s);

/**
 * relay_app_schedule_cron_compiled() - the expression parsed for the
 * schedule's time zone (**borrowed**, lives as long as the app; never
 * NULL when the app loaded without errors). Use it with
 * relay_cron_next()/relay_cron_prev() instead of parsing again; safe to
 * share across threads.
 */
RELAY_EXTERN const relay_cron *
relay_app_schedule_cron_compiled(const relay_app_schedule *s);

/** relay_app_schedule_timezone() - the IANA time zone (default "UTC"). */
RELAY_EXTERN const char *
relay_app_schedule_timezone(const relay_app_schedule *s);

/** relay_app_schedule_timeout_ms() - as relay_app_rule_timeout_ms(). */
RELAY_EXTERN int64_t
relay_app_schedule_timeout_ms(const relay_app_schedule *s);

/** relay_app_schedule_retries() - as relay_app_rule_retries(). */
RELAY_EXTERN int relay_app_schedule_retries(const relay_app_schedule *s);

/** relay_app_schedule_line() - 1-based line of the schedule in the
 * template. */
RELAY_EXTERN int relay_app_schedule_line(const relay_app_schedule *s);

/*
 * The app set.
 */

/**
 * relay_appset_load() - load every app under @apps_dir.
 * @out: receives the set (**new**; free with relay_appset_free()), also
 *   when some apps are invalid; NULL on failure.
 * @apps_dir: the apps directory. Each subdirectory holding a template.yaml
 *   is an app entry; other entries are ignored. Entries are sorted by name
 *   (bytewise).
 * @fn: optional diagnostic callback: every problem of every app, in entry
 *   order, and problems of @apps_dir itself (app NULL).
 * @payload: passed to @fn.
 *
 * Invalid apps (bad template or bad directory name) stay in the set with
 * their errors (relay_appset_entry_*) but have no rules in the ruleset.
 *
 * Returns: 0 when @apps_dir could be read (check
 * relay_appset_invalid_count()); RELAY_ENOTFOUND when it does not exist;
 * RELAY_ERROR when it cannot be read; RELAY_ENOMEM. Failures are also
 * reported through @fn.
 * Thread-safety: reentrant.
 */
RELAY_EXTERN int relay_appset_load(relay_appset **out, const char *apps_dir,
				   relay_app_diag_fn fn, void *payload);

/** relay_appset_free() - free the set and its ruleset and release its
 * references to its apps; NULL is a no-op. Every matcher made from its
 * ruleset must be freed first. */
RELAY_EXTERN void relay_appset_free(relay_appset *set);

/**
 * relay_appset_reload() - a new set with one app re-read from disk.
 * @out: receives the new set (**new**; free with relay_appset_free());
 *   NULL on failure.
 * @old: the current set (**borrowed**; not modified, stays valid and
 *   usable, and may be freed before or after the new one).
 * @name: the entry to re-read, a directory name under
 *   relay_appset_dir(@old). If it now holds a template.yaml, the entry is
 *   replaced (or added, in name order); if not, it is dropped.
 * @fn, @payload: as for relay_appset_load(), for that app's problems.
 *
 * The other entries, with their apps and errors, are shared with @old
 * (apps are reference-counted), so this costs one template load plus a
 * ruleset rebuild. The new set has its own ruleset: make new matchers.
 * A template that became invalid makes the entry invalid (its rules drop
 * out), exactly as in a full load.
 *
 * Returns: 0; RELAY_EINVAL if @name is not a plain directory name
 * (empty, ".", "..", or containing '/'); RELAY_ENOMEM.
 * Thread-safety: reentrant; @old may be in use by other threads.
 */
RELAY_EXTERN int relay_appset_reload(relay_appset **out,
				     const relay_appset *old,
				     const char *name, relay_app_diag_fn fn,
				     void *payload);

/**
 * relay_appset_change_fn - receives the name of one changed app entry.
 * @name: the directory name (**borrowed** for the call).
 * @payload: the payload given to relay_appset_scan().
 */
typedef void (*relay_appset_change_fn)(const char *name, void *payload);

/**
 * relay_appset_scan() - which apps changed on disk since the set was
 * loaded.
 * @set: the set.
 * @fn: called once per changed name, in name order: a template that was
 *   added, removed, or modified (mtime, size, inode or device differ from
 *   when the set read it). Pass each name to relay_appset_reload().
 * @payload: passed to @fn.
 *
 * The template is stamped before it is read, so an edit racing a load is
 * reported again by the next scan rather than missed. Cheap enough to
 * poll (one readdir plus one stat per app); an inotify watcher can call
 * it on any event instead.
 *
 * Returns: 0; RELAY_ENOTFOUND / RELAY_ERROR when the apps directory can
 * no longer be read (nothing reported); RELAY_ENOMEM.
 * Thread-safety: reentrant; read-only on @set.
 */
RELAY_EXTERN int relay_appset_scan(const relay_appset *set,
				   relay_appset_change_fn fn, void *payload);

/** relay_appset_dir() - the apps directory as given (**borrowed**). */
RELAY_EXTERN const char *relay_appset_dir(const relay_appset *set);

/** relay_appset_entry_count() - number of app entries, valid or not. */
RELAY_EXTERN size_t relay_appset_entry_count(const relay_appset *set);

/** relay_appset_invalid_count() - number of invalid entries. */
RELAY_EXTERN size_t relay_appset_invalid_count(const relay_appset *set);

/** relay_appset_entry_name() - the directory name of entry @i
 * (**borrowed**), or NULL when out of range. */
RELAY_EXTERN const char *relay_appset_entry_name(const relay_appset *set,
						 size_t i);

/** relay_appset_entry_app() - the loaded app of entry @i (**borrowed**),
 * or NULL when the entry is invalid or out of range. */
RELAY_EXTERN const relay_app *relay_appset_entry_app(const relay_appset *set,
						     size_t i);

/** relay_appset_entry_status() - 0 for a valid entry, else the load error
 * code (RELAY_EPARSE, …); RELAY_ENOTFOUND when out of range. */
RELAY_EXTERN int relay_appset_entry_status(const relay_appset *set,
					   size_t i);

/** relay_appset_entry_error_count() - problems recorded for entry @i. */
RELAY_EXTERN size_t relay_appset_entry_error_count(const relay_appset *set,
						   size_t i);

/** relay_appset_entry_error() - problem @j of entry @i (**borrowed**), in
 * the order reported, or NULL when out of range. */
RELAY_EXTERN const relay_error *
relay_appset_entry_error(const relay_appset *set, size_t i, size_t j);

/** relay_appset_find() - the valid app named @name (**borrowed**), or
 * NULL. */
RELAY_EXTERN const relay_app *relay_appset_find(const relay_appset *set,
						const char *name);

/**
 * relay_appset_ruleset() - the built ruleset over every valid app's rules,
 * in dispatch order (**borrowed**; never NULL, possibly empty). Make one
 * relay_matcher per thread from it.
 */
RELAY_EXTERN const relay_ruleset *
relay_appset_ruleset(const relay_appset *set);

/**
 * relay_appset_rule() - map a ruleset rule id to its app and rule.
 * @id: a rule id returned by a matcher of relay_appset_ruleset().
 * @app: receives the app (**borrowed**); may be NULL.
 * @rule: receives the rule (**borrowed**); may be NULL.
 * Returns: 0, or RELAY_ENOTFOUND when @id is out of range.
 */
RELAY_EXTERN int relay_appset_rule(const relay_appset *set, uint32_t id,
				   const relay_app **app,
				   const relay_app_rule **rule);

/** struct relay_app_match - one matching rule. */
typedef struct relay_app_match {
	const relay_app *app;       /* borrowed from the set */
	const relay_app_rule *rule; /* borrowed from the app */
	uint32_t id;                /* the rule id in the set's ruleset */
} relay_app_match;

/**
 * relay_appset_match() - the rules a raw JSON event matches.
 * @set: the set.
 * @m: a matcher of relay_appset_ruleset(@set), or NULL to use a temporary
 *   one (simple, slower).
 * @json: the event text; need not be NUL-terminated.
 * @len: its length in bytes.
 * @now: the instant now() stands for in temporal patterns.
 * @out: receives the matches in dispatch order (**new** array; free with
 *   relay_free(); NULL when there are none).
 * @count: receives how many.
 *
 * Returns: 0; RELAY_EPARSE when @json is not valid JSON, RELAY_ETYPE when
 * it is not an object (relay_matcher_errstr() of @m says why when @m was
 * given); RELAY_ENOMEM. On error *out is NULL and *count 0.
 * Thread-safety: safe on a shared set as long as each thread passes its
 * own matcher (or NULL).
 */
RELAY_EXTERN int relay_appset_match(const relay_appset *set, relay_matcher *m,
				    const char *json, size_t len,
				    relay_wall_ms now, relay_app_match **out,
				    size_t *count);

#ifdef __cplusplus
}
#endif

#endif /* RELAY_APP_H */
