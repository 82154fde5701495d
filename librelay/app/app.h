/*
 * app.h - private structures of the app module (templates, app set).
 *
 * Split: yaml.c turns template text into a relay__pnode tree with marks
 * (the only file that includes libfyaml); values.c parses durations, sizes
 * and names; template.c walks the tree against the template schema and
 * fills a relay_app; app.c owns loading, the diagnostic list and the
 * accessors; appset.c loads a directory of apps and builds the ruleset.
 */
#ifndef RELAY__APP_H
#define RELAY__APP_H

#include <stdbool.h>
#include <stdint.h>

#include "common.h"
#include "pnode.h"
#include "relay/app.h"

/* Deepest nesting accepted in a template (mappings and sequences). */
#define RELAY__APP_MAX_DEPTH 64

/*
 * A list of problems, kept in the order found, sorted by position before
 * they are reported so that callers see them in document order.
 */
typedef struct relay__diags {
	relay_error *v;
	size_t n, cap;
	int oom;            /* an allocation failed while recording */
} relay__diags;

int relay__diags_add(relay__diags *d, int code, const char *path, int line,
		     int column, const char *fmt, ...) RELAY__PRINTF(6, 7);
void relay__diags_sort(relay__diags *d);
void relay__diags_free(relay__diags *d);

struct relay_app_rule {
	size_t index;            /* position in events: */
	char *handler;
	relay_pattern *pattern;
	int64_t timeout_ms;
	int retries;
	int line;                /* of the rule's mapping */
};

struct relay_app_schedule {
	char *name;
	char *handler;
	char *cron;
	char *timezone;
	relay_cron *compiled;    /* cron in timezone; NULL if invalid */
	int64_t timeout_ms;
	int retries;
	int line;
};

struct relay_app {
	int refs;                /* atomic; relay_app_ref / relay_app_free */
	char *name;
	char *dir;               /* absolute when it exists */
	char *path;              /* template path as named in diagnostics */
	relay_app_runtime_kind runtime;
	char **command;          /* NULL-terminated; NULL unless exec */
	size_t ncommand;
	int command_line;         /* of command[0] in the template */
	bool network;
	bool no_warm;            /* warm: false */
	relay_app_tracing tracing; /* tracing: (0 = link) */
	uint64_t generation;     /* distinct for every loaded template */
	int concurrency;
	uint64_t memory;
	uint32_t cpus_milli;
	uint32_t pids;
	uint64_t tmp;            /* resources.tmp bytes, 0 = default */
	char **env_names;        /* env_n entries each */
	char **env_values;
	char **envp;             /* "NAME=value", NULL-terminated */
	size_t env_n;
	relay_app_rule *rules;
	size_t nrules;
	relay_app_schedule *schedules;
	size_t nschedules;
};

/* yaml.c */

/*
 * Parse @len bytes of YAML into a pnode tree (the single document's root)
 * with 1-based marks and YAML 1.2 core-schema typing of plain scalars.
 * Syntax errors, aliases, tags, non-scalar or duplicate keys and excess
 * depth are recorded in @d (path @path). Returns 0 and sets *out (free with
 * relay__pnode_free()), or RELAY_EPARSE / RELAY_ENOMEM with *out NULL. An
 * empty document gives RELAY_EPARSE with "template is empty".
 */
int relay__yaml_parse(relay__pnode **out, const char *yaml, size_t len,
		      const char *path, relay__diags *d);
void relay__pnode_free(relay__pnode *root);

/* The YAML 1.2 core-schema kind of a plain scalar. */
enum relay__pnode_kind relay__yaml_plain_kind(const char *s, size_t len);

/* app.c: read a whole template file (at most 1 MiB) into *data (a
 * relay__malloc'd string of *len bytes, the caller's). Returns 0, or
 * RELAY_ENOTFOUND / RELAY_EINVAL (too large) / RELAY_ERROR / RELAY_ENOMEM
 * with the reason added to @d. */
int relay__app_read_file(const char *path, char **data, size_t *len,
			 relay__diags *d);

/* values.c */

/*
 * Parse a duration: one or more <digits><unit> with units h, m, s, ms
 * ("20s", "1m30s", "500ms"). Returns 0 and *ms, or RELAY_EINVAL.
 */
int relay__app_parse_duration(const char *s, int64_t *ms);
/* Format @ms compactly ("1m30s", "500ms", "0s") into @buf. */
char *relay__app_format_duration(int64_t ms, char *buf, size_t size);
/*
 * Parse a memory size: <digits>[unit] where unit is one of B, k/K/KB, M/MB,
 * G/GB, T/TB (powers of 1000) or Ki/KiB, Mi/MiB, Gi/GiB, Ti/TiB (powers of
 * 1024). Returns 0 and *bytes, or RELAY_EINVAL (also on overflow).
 */
int relay__app_parse_memory(const char *s, uint64_t *bytes);
/* Parse "0.5", "2", "1.25" (at most 3 decimals) into milli-CPUs. */
int relay__app_parse_cpus(const char *s, uint32_t *milli);
/* Parse a plain decimal integer with optional '-' into *v (no overflow). */
int relay__app_parse_int(const char *s, long long *v);
/* Handler syntax of kind @rt (its driver's: python3/node "a.b[.c…]"
 * identifiers; exec [A-Za-z0-9_.-]+); false for a value that is no kind. */
bool relay__app_handler_valid(relay_app_runtime_kind rt, const char *h);
/* Environment variable name: [A-Za-z_][A-Za-z0-9_]* */
bool relay__app_env_name_valid(const char *s);
/* The closest of @words to @s within edit distance 2, or NULL. */
const char *relay__app_suggest(const char *s, const char *const *words);

/* template.c */

/*
 * Fill @app (name, dir, path already set) from the template tree @root.
 * Problems go to @d. Returns 0 when none were found.
 */
int relay__app_from_tree(relay_app *app, const relay__pnode *root,
			 relay__diags *d);

/* app.c */

/*
 * Load an app from a buffer, recording every problem in @d (unsorted)
 * instead of reporting it. Returns 0 and *out, or an error with *out NULL.
 */
int relay__app_load_diags(relay_app **out, const char *name,
			  const char *app_dir, const char *path,
			  const char *yaml, size_t len, relay__diags *d);
/* As above, reading <app_dir>/template.yaml. */
int relay__app_load_dir(relay_app **out, const char *name,
			const char *app_dir, relay__diags *d);

#endif /* RELAY__APP_H */
