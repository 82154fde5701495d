/*
 * runtime.c - the runtime object, the backend registry, and what both
 * built-in backends share: the clean environment, and the command line of
 * a run as its kind's driver gives it (kind.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "relay/trace.h"
#include "relay_config.h"
#include "runtime.h"

/* ---- environment and command line -------------------------------- */

static bool env_has_key(const relay__strv *sv, const char *kv)
{
	size_t kl = strcspn(kv, "="), i;

	for (i = 0; i < sv->n; i++)
		if (strncmp(sv->v[i], kv, kl) == 0 && sv->v[i][kl] == '=')
			return true;
	return false;
}

/* Does "KEY=VALUE" @kv (or a bare "KEY") name @key? */
static bool kv_is(const char *kv, const char *key)
{
	size_t n = strlen(key);

	return strncmp(kv, key, n) == 0 && (kv[n] == '=' || kv[n] == '\0');
}

bool relay__runtime_trace_var(const char *kv)
{
	return kv_is(kv, "TRACEPARENT") || kv_is(kv, "TRACESTATE") ||
	       kv_is(kv, "BAGGAGE");
}

bool relay__runtime_per_invocation_var(const char *kv)
{
	return kv_is(kv, "RELAY_HANDLER") || kv_is(kv, "RELAY_MESSAGE_ID") ||
	       relay__runtime_trace_var(kv);
}

/* Printable ASCII only: no control byte (tab included) reaches an
 * environment variable, whatever the W3C grammar allows around it. */
static bool printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
			return false;
	return true;
}

/*
 * The attempt's W3C context as TRACEPARENT, TRACESTATE and BAGGAGE,
 * each only when set and valid. The caller (relayd's consumer, or an
 * embedder) already parsed them; this is defence in depth, so a value
 * that is not what the handler's tracing SDK could parse, or that could
 * smuggle a control byte into its environment, never gets there: the
 * strict parsers of relay/trace.h decide, plus printable ASCII only. An
 * invalid value is left out and the run goes on without it. tracestate
 * is passed normalised (its parser drops empty members and truncates
 * past RELAY_TRACESTATE_MAX the spec's way), the others verbatim. No
 * TRACESTATE or BAGGAGE without a valid TRACEPARENT: an SDK ignores
 * them then anyway.
 */
static int push_trace_env(const relay_exec_spec *spec, relay__strv *out)
{
	relay_trace_context c;
	const char *tp, *ts, *bg;
	int rc = 0;

	if (spec->version < 3)
		return 0;
	tp = spec->traceparent;
	ts = spec->tracestate;
	bg = spec->baggage;
	if (!tp || !*tp || !printable(tp) ||
	    relay_trace_parent_parse(&c, tp, strlen(tp)) != 0)
		return 0;
	rc = relay__strv_pushf(out, "TRACEPARENT=%s", tp);
	if (rc == 0 && ts && *ts && printable(ts) &&
	    relay_trace_state_parse(&c, ts, strlen(ts)) == 0 &&
	    c.tracestate[0])
		rc = relay__strv_pushf(out, "TRACESTATE=%s", c.tracestate);
	if (rc == 0 && bg && *bg && printable(bg) &&
	    relay_trace_baggage_check(bg, strlen(bg), NULL) == 0)
		rc = relay__strv_pushf(out, "BAGGAGE=%s", bg);
	return rc;
}

/*
 * Order matters only for duplicates: the RELAY_* variables come first and
 * win, then the attempt's trace context, then the app's env (which may
 * override PATH, HOME or LANG, but never set TRACEPARENT, TRACESTATE or
 * BAGGAGE: those are the attempt's or absent), then the defaults for
 * whatever the app left unset. Nothing is taken from the host's own
 * environment.
 */
int relay__runtime_env(const relay_exec_spec *spec, relay__strv *out)
{
	static const char path_kv[] = "PATH=" RELAY__RT_PATH;
	static const char *const defaults[] = {
		path_kv, "HOME=/tmp", "LANG=C.UTF-8",
	};
	size_t i;
	int rc;

	rc = relay__strv_pushf(out, "RELAY_HANDLER=%s", spec->handler);
	if (rc == 0)
		rc = relay__strv_pushf(out, "RELAY_APP=%s", spec->app);
	if (rc == 0 && spec->message_id && *spec->message_id)
		rc = relay__strv_pushf(out, "RELAY_MESSAGE_ID=%s",
				       spec->message_id);
	if (rc == 0)
		rc = push_trace_env(spec, out);
	for (i = 0; rc == 0 && spec->env && spec->env[i]; i++)
		if (strchr(spec->env[i], '=') &&
		    !relay__runtime_trace_var(spec->env[i]) &&
		    !env_has_key(out, spec->env[i]))
			rc = relay__strv_push(out, spec->env[i]);
	for (i = 0; rc == 0 && i < RELAY__ARRAY_SIZE(defaults); i++)
		if (!env_has_key(out, defaults[i]))
			rc = relay__strv_push(out, defaults[i]);
	return rc;
}

int relay__runtime_argv(const relay_exec_spec *spec, const char *bootstrap_dir,
			relay__strv *out, relay_error *err)
{
	const relay__kind *d = relay__kind_get(spec->runtime);
	relay__kind_cmd c = { 0 };

	if (!d)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"unknown runtime %d",
					(int)spec->runtime);
	c.handler = spec->handler;
	c.command = spec->argv;
	c.bootstrap_dir = bootstrap_dir;
	if (d->cold_argv(&c, out) != 0)
		return relay__error_set(err, RELAY_ENOMEM, NULL, 0, 0,
					"out of memory");
	return 0;
}

char *relay__runtime_which(const char *name, const char *path)
{
	const char *p = path ? path : RELAY__RT_PATH;

	while (*p) {
		size_t l = strcspn(p, ":");
		char *cand = relay__sprintf("%.*s/%s", (int)l, p, name);

		if (cand && access(cand, X_OK) == 0)
			return cand;
		relay__free(cand);
		p += l;
		if (*p == ':')
			p++;
	}
	return NULL;
}

const char *relay__runtime_bootstrap_dir(const char *opt)
{
	const char *env;

	if (opt && *opt)
		return opt;
	env = getenv("RELAY_BOOTSTRAP_DIR");
	if (env && *env)
		return env;
	/*
	 * An uninstalled build (relayctl run from the build tree, the
	 * quickstart) has no installed bootstraps: fall back to the source
	 * tree it was built from, and only then.
	 */
	if (access(RELAY_LIBEXECDIR "/relay-bootstrap.py", R_OK) != 0 &&
	    access(RELAY_SOURCE_ROOT "/sandbox/bootstrap"
				     "/relay-bootstrap.py", R_OK) == 0)
		return RELAY_SOURCE_ROOT "/sandbox/bootstrap";
	return RELAY_LIBEXECDIR;
}

int relay__runtime_check_spec(const relay_exec_spec *spec, relay_error *err)
{
	struct stat st;
	const relay__kind *d;

	if (!spec || spec->version == 0 ||
	    spec->version > RELAY_EXEC_SPEC_VERSION)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"unsupported exec spec version");
	if (!spec->app || !*spec->app || !spec->handler || !*spec->handler)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"app and handler are required");
	if (!spec->app_dir || spec->app_dir[0] != '/')
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"app directory must be absolute");
	if (stat(spec->app_dir, &st) != 0)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"app directory %s: %s", spec->app_dir,
					strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"app directory %s: not a directory",
					spec->app_dir);
	if (spec->timeout_ms > RELAY_RUNTIME_TIMEOUT_MAX_MS)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"timeout %ums exceeds 5m",
					spec->timeout_ms);
	if (spec->event_len && !spec->event)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"event bytes missing");
	d = relay__kind_get(spec->runtime);
	if (!d)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"unknown runtime %d",
					(int)spec->runtime);
	if (d->command && (!spec->argv || !spec->argv[0] || !*spec->argv[0]))
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"%s runtime needs a command", d->name);
	if (d->spec_handler_ok && !d->spec_handler_ok(spec->handler))
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"handler \"%s\" is not %s",
					spec->handler, d->spec_handler_why);
	return 0;
}

/* One allocation holding @spec and every string it points at. */
relay_exec_spec *relay__spec_dup(const relay_exec_spec *spec)
{
	const char *const *lists[2] = { spec->argv, spec->env };
	const char *strs[7] = { spec->app, spec->handler, spec->message_id,
				spec->app_dir,
				spec->version >= 3 ? spec->traceparent : NULL,
				spec->version >= 3 ? spec->tracestate : NULL,
				spec->version >= 3 ? spec->baggage : NULL };
	size_t size = sizeof(*spec), n[2] = { 0, 0 }, i, k;
	relay_exec_spec *c;
	char **vec;
	char *p;

	for (i = 0; i < RELAY__ARRAY_SIZE(strs); i++)
		size += strs[i] ? strlen(strs[i]) + 1 : 0;
	for (k = 0; k < 2; k++) {
		for (i = 0; lists[k] && lists[k][i]; i++)
			size += strlen(lists[k][i]) + 1;
		n[k] = i;
		size += lists[k] ? (i + 1) * sizeof(char *) : 0;
	}
	c = relay__malloc(size);
	if (!c)
		return NULL;
	/* A caller built against an older header has a shorter struct:
	 * copy only what its version has, and default the rest. */
	memset(c, 0, sizeof(*c));
	memcpy(c, spec, spec->version >= 4 ? sizeof(*spec)
			: spec->version == 3
			? offsetof(relay_exec_spec, tmp_bytes)
			: spec->version == 2
			? offsetof(relay_exec_spec, traceparent)
			: offsetof(relay_exec_spec, warm));
	c->version = RELAY_EXEC_SPEC_VERSION;
	if (spec->version < 2)
		c->warm = RELAY_WARM_AUTO;
	c->event = NULL;
	c->event_len = 0;
	vec = (char **)(c + 1);
	p = (char *)(vec + (spec->argv ? n[0] + 1 : 0) +
		     (spec->env ? n[1] + 1 : 0));
	for (k = 0; k < 2; k++) {
		char **v = vec;

		if (!lists[k])
			continue;
		for (i = 0; i < n[k]; i++) {
			v[i] = p;
			p = stpcpy(p, lists[k][i]) + 1;
		}
		v[n[k]] = NULL;
		if (k == 0)
			c->argv = (const char *const *)v;
		else
			c->env = (const char *const *)v;
		vec += n[k] + 1;
	}
	for (i = 0; i < RELAY__ARRAY_SIZE(strs); i++) {
		const char **dsts[7] = { &c->app, &c->handler, &c->message_id,
					 &c->app_dir, &c->traceparent,
					 &c->tracestate, &c->baggage };
		const char **dst = dsts[i];

		*dst = NULL;
		if (!strs[i])
			continue;
		*dst = p;
		p = stpcpy(p, strs[i]) + 1;
	}
	return c;
}

/* ---- warm fallback reasons --------------------------------------- */

static const char *const warm_fail_names[RELAY_WARM_FAIL_COUNT] = {
	"unsupported", "crashed", "wedged", "spawn", "fork", "cap",
};

const char *relay_warm_fail_name(relay_warm_fail f)
{
	return (unsigned int)f < RELAY_WARM_FAIL_COUNT ? warm_fail_names[f]
						       : "unknown";
}

/* ---- registry ---------------------------------------------------- */

static const struct {
	const char *name;
	int (*ctor)(relay_runtime_backend **, const relay_runtime_options *,
		    relay_error *);
} builtins[] = {
	{ "bwrap", relay__runtime_bwrap_new },
	{ "process", relay__runtime_process_new },
	{ "none", relay__runtime_process_new },  /* RELAY_SANDBOX=none */
};

int relay_runtime_backend_init(relay_runtime_backend *rb,
			       unsigned int version)
{
	if (version == 0 || version > RELAY_RUNTIME_BACKEND_VERSION)
		return RELAY_EINVAL;
	/* A caller built against version 1 has the version 1 table only. */
	memset(rb, 0, version >= 2 ? sizeof(*rb)
				   : offsetof(relay_runtime_backend, warm));
	rb->version = version;
	rb->proc_size = sizeof(relay_proc);
	return 0;
}

int relay_runtime_backend_new(relay_runtime_backend **out, const char *name,
			      const relay_runtime_options *opts,
			      relay_error *err)
{
	size_t i;

	if (!name || !*name)
		name = "bwrap";
	for (i = 0; i < RELAY__ARRAY_SIZE(builtins); i++)
		if (strcmp(name, builtins[i].name) == 0)
			return builtins[i].ctor(out, opts, err);
	return relay__error_set(err, RELAY_ENOTFOUND, NULL, 0, 0,
				"unknown runtime backend \"%s\"", name);
}

static void backend_free(relay_runtime_backend *rb)
{
	if (rb && rb->free)
		rb->free(rb);
}

int relay__runtime_create(relay_runtime **out, relay_runtime_backend *rb,
			  bool builtin, const relay_runtime_options *opts,
			  relay_error *err)
{
	relay_runtime_options def = RELAY_RUNTIME_OPTIONS_INIT;
	relay_runtime *rt;

	if (!opts)
		opts = &def;
	if (!rb || rb->version == 0 ||
	    rb->version > RELAY_RUNTIME_BACKEND_VERSION || !rb->spawn ||
	    !rb->signal || rb->proc_size < sizeof(relay_proc)) {
		backend_free(rb);
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"invalid runtime backend table");
	}
	rt = relay__calloc(1, sizeof(*rt));
	if (!rt) {
		backend_free(rb);
		return relay__error_set(err, RELAY_ENOMEM, NULL, 0, 0,
					"out of memory");
	}
	rt->rb = rb;
	rt->builtin = builtin;
	rt->grace_ms = opts->kill_grace_ms ? opts->kill_grace_ms
					   : RELAY__RT_GRACE_MS;
	rt->max_line = opts->max_line_bytes ? opts->max_line_bytes
					    : RELAY__RT_MAX_LINE;
	rt->max_output = opts->max_output_bytes ? opts->max_output_bytes
						: RELAY__RT_MAX_OUTPUT;
	rt->logger = opts->logger;
	*out = rt;
	return 0;
}

int relay_runtime_new_with_backend(relay_runtime **out,
				   relay_runtime_backend *rb,
				   const relay_runtime_options *opts,
				   relay_error *err)
{
	return relay__runtime_create(out, rb, false, opts, err);
}

void relay__runtime_destroy(relay_runtime *rt)
{
	backend_free(rt->rb);
	relay__free(rt);
}

const char *relay_runtime_backend_name(const relay_runtime *rt)
{
	return rt->rb->name ? rt->rb->name : "";
}

relay_limits_mode relay_runtime_limits_mode(const relay_runtime *rt)
{
	if (!rt->builtin)
		return RELAY_LIMITS_NONE;
	return relay__limits_mode(((relay__builtin *)rt->rb)->limits);
}

unsigned int relay_runtime_active(const relay_runtime *rt)
{
	return rt->nactive;
}

/* ---- C6 wrappers ------------------------------------------------- */

int relay__runtime_spawn(relay_runtime *rt, const relay_exec_spec *spec,
			 relay_proc **out, relay_error *err)
{
	relay_proc *proc = relay__calloc(1, rt->rb->proc_size);
	int rc;

	if (!proc)
		return relay__error_set(err, RELAY_ENOMEM, NULL, 0, 0,
					"out of memory");
	proc->stdin_fd = proc->stdout_fd = proc->stderr_fd = -1;
	rc = rt->rb->spawn(rt->rb, spec, proc, err);
	if (rc != 0) {
		relay__free(proc);
		return rc;
	}
	relay__log(&rt->logger, RELAY_LOG_DEBUG, "RELAY-RT02",
		   "runtime: started %s/%s pid %ld", spec->app, spec->handler,
		   (long)proc->pid);
	*out = proc;
	return 0;
}

int relay__runtime_signal(relay_runtime *rt, relay_proc *proc, int sig)
{
	/* A warm invocation whose pid is not known yet: never kill(0). */
	if (proc->pid <= 0)
		return 0;
	return rt->rb->signal(rt->rb, proc, sig);
}

void relay__runtime_release(relay_runtime *rt, relay_proc *proc)
{
	if (rt->rb->release)
		rt->rb->release(rt->rb, proc);
}

const relay_runtime_warm_iface *relay__runtime_warm_iface(relay_runtime *rt)
{
	relay_runtime_backend *rb = rt->rb;
	const relay_runtime_warm_iface *wi;

	if (rb->version < 2 || !rb->warm)
		return NULL;
	wi = rb->warm(rb, RELAY__WARM_IFACE_VERSION);
	return wi && wi->version == RELAY__WARM_IFACE_VERSION ? wi : NULL;
}
