/*
 * apps.c - the app set relayd serves, and its reloads.
 *
 * A reload (SIGHUP, or an inotify event under RELAY_APPS_DIR) asks
 * relay_appset_scan() which apps changed on disk and replaces each one
 * alone with relay_appset_reload(). A template that became invalid is
 * logged with file:line:col and, when a valid version of that app is
 * serving, the previous version keeps serving: the changed entry is not
 * swapped in (the next scan reports it again, so fixing the file is
 * picked up). Such an app is "stale": every scan lists the stale apps
 * with their template's errors (each scan reports every one of them
 * again, so its list is complete) and the loop keeps the last list in
 * d->stale, which the control socket (`apps`, `health`), the stats file
 * and /metrics show. An app that never loaded stays unavailable with its
 * errors. Every reload ends with one line (RELAYD-APP09) giving the
 * count of apps, of changed ones and of stale ones; a reload that
 * inotify started and that changed nothing logs it at DEBUG only.
 * The consumer gets the new set with relay_consumer_set_apps(); the old
 * set is freed after that (in-flight invocations hold their app refs).
 *
 * inotify watches the apps directory and every app directory in it;
 * events are debounced (100 ms) so an editor's rename dance is one
 * reload.
 *
 * A reload reads and compiles templates, which for a template with tens
 * of thousands of alternatives takes a noticeable time: it runs on a
 * worker thread, so the loop keeps serving events, the control socket
 * and /metrics meanwhile. Sets are immutable and shared read-only; the
 * thread builds the next set from the current one and the loop swaps it
 * in when the thread is done (ev_async). One reload runs at a time; a
 * request during one runs again after it. The first load, at start-up,
 * is synchronous (relayd is not ready before it).
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "relayd.h"

/* The errors kept for a stale app (its template's first ones). */
#define STALE_ERRORS_MAX 8

static void diag(const char *app, const relay_error *err, void *payload)
{
	char buf[RELAY_ERROR_PATH_MAX + RELAY_ERROR_TEXT_MAX + 32];
	const char *kv[] = { "app", app ? app : "-", NULL };

	(void)payload;
	relay_error_format(err, buf, sizeof(buf));
	relayd_logkv(RELAY_LOG_ERROR, "RELAYD-APP01", kv, "%s: %s",
		     app ? app : "-", buf);
}

static void log_set(const relay_appset *set)
{
	size_t i, n = relay_appset_entry_count(set);

	for (i = 0; i < n; i++) {
		const relay_app *app = relay_appset_entry_app(set, i);
		const char *kv[] = { "app", relay_appset_entry_name(set, i),
				     NULL };

		if (app)
			relayd_logkv(RELAY_LOG_INFO, "RELAYD-APP02", kv,
				     "app loaded: %zu rule(s), runtime %s",
				     relay_app_rule_count(app),
				     relay_app_runtime_name(
					     relay_app_runtime(app)));
		else
			relayd_logkv(RELAY_LOG_WARN, "RELAYD-APP03", kv,
				     "app invalid: unavailable until its "
				     "template is fixed");
	}
}

int relayd_apps_load(relayd *d, char *errbuf, size_t size)
{
	int rc;

	rc = relay_appset_load(&d->apps, d->cfg.apps_dir, diag, NULL);
	if (rc == RELAY_ENOTFOUND) {
		snprintf(errbuf, size, "RELAY_APPS_DIR: \"%s\" does not "
			 "exist", d->cfg.apps_dir);
		return -1;
	}
	if (rc) {
		snprintf(errbuf, size, "RELAY_APPS_DIR: \"%s\" cannot be "
			 "read: %s", d->cfg.apps_dir, relay_strerror(rc));
		return -1;
	}
	log_set(d->apps);
	return 0;
}

int relayd_apps_uids(relayd *d, const relay_appset *set, char *errbuf,
		     size_t size)
{
	static bool warned;
	size_t i, n = relay_appset_entry_count(set);
	const char **names = calloc(n ? n : 1, sizeof(*names));
	relay_error err;
	uint32_t uid;
	int rc;

	if (!names) {
		snprintf(errbuf, size, "out of memory");
		return -1;
	}
	for (i = 0; i < n; i++)
		names[i] = relay_appset_entry_name(set, i);
	memset(&err, 0, sizeof(err));
	rc = relay_runtime_sandbox_assign(d->rt, names, n, &err);
	free(names);
	if (rc) {
		snprintf(errbuf, size, "RELAY_SANDBOX_UIDS: %s", err.text);
		return -1;
	}
	if (!warned && d->cfg.sandbox_uids &&
	    (geteuid() != 0 || strcmp(d->cfg.sandbox, "bwrap") != 0)) {
		warned = true;
		relayd_log(RELAY_LOG_WARN, "RELAYD-SBX03", "RELAY_SANDBOX_UIDS "
			   "is ignored: only a root relayd with "
			   "RELAY_SANDBOX=bwrap switches uids");
	}
	if (!warned && !d->cfg.sandbox_uids &&
	    relay_runtime_sandbox_uid(d->rt, "", &uid) == 0 &&
	    uid == 65534) {
		warned = true;
		relayd_log(RELAY_LOG_WARN, "RELAYD-SBX01", "handlers run as "
			   "host uid 65534 (nobody), which other software on "
			   "this host may share: any process of that uid can "
			   "read every handler's environment and ptrace it; "
			   "set RELAY_SANDBOX_UIDS (a uid per app) or "
			   "RELAY_SANDBOX_USER=relay-sandbox (doc/sandbox.md, "
			   "\"Host user\")");
	}
	return 0;
}

typedef struct reload_ctx {
	relayd *d;
	relay_appset *base;  /* d->apps when the reload started */
	relay_appset *set;   /* the set being built (starts as base) */
	int changed;         /* entries swapped in */
	int err;             /* relay_appset_scan()'s result */
	json_t *stale;       /* app -> [error, ...]: kept at their previous
				version (NULL until the first one) */
} reload_ctx;

/* A template problem of a changed app: logged, and kept for its stale
 * entry. */
typedef struct probe_diag {
	json_t *errors;      /* array of strings, or NULL (ENOMEM) */
} probe_diag;

static void diag_keep(const char *app, const relay_error *err,
		      void *payload)
{
	probe_diag *pd = payload;
	char buf[RELAY_ERROR_PATH_MAX + RELAY_ERROR_TEXT_MAX + 32];

	diag(app, err, NULL);
	if (pd->errors && json_array_size(pd->errors) < STALE_ERRORS_MAX)
		json_array_append_new(pd->errors, json_string(
			relay_error_format(err, buf, sizeof(buf))));
}

/* The reload worker's state (one per daemon; loop thread unless said). */
static struct {
	pthread_t th;
	bool running;        /* a worker was started and not joined */
	bool again;          /* asked again while running */
	char why[32];        /* what asked (for the log line) */
	reload_ctx rc;       /* written by the worker until it signals */
	ev_async done;
	relayd *d;
} reloader;

static bool template_exists(const relayd *d, const char *name)
{
	char path[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s/template.yaml", d->cfg.apps_dir,
		 name);
	return stat(path, &st) == 0;
}

/* One changed entry: validate, then swap in or keep the old version. */
static void on_changed(const char *name, void *payload)
{
	reload_ctx *rc = payload;
	relayd *d = rc->d;
	const char *kv[] = { "app", name, NULL };
	relay_appset *next = NULL;
	relay_app *probe = NULL;
	char dir[PATH_MAX];
	int err;

	if (template_exists(d, name)) {
		probe_diag pd = { json_array() };

		snprintf(dir, sizeof(dir), "%s/%s", d->cfg.apps_dir, name);
		err = relay_app_load(&probe, dir, diag_keep, &pd);
		relay_app_free(probe);
		if (err && relay_appset_find(rc->set, name)) {
			relayd_logkv(RELAY_LOG_ERROR, "RELAYD-APP04", kv,
				     "template invalid: the previous version "
				     "keeps serving");
			if (!rc->stale)
				rc->stale = json_object();
			if (pd.errors && !json_array_size(pd.errors))
				json_array_append_new(pd.errors, json_string(
					relay_strerror(err)));
			if (rc->stale && pd.errors)
				json_object_set(rc->stale, name, pd.errors);
			json_decref(pd.errors);
			return;
		}
		json_decref(pd.errors);
	}
	if (relay_appset_reload(&next, rc->set, name, NULL, NULL)) {
		relayd_logkv(RELAY_LOG_ERROR, "RELAYD-APP05", kv,
			     "reload failed (out of memory)");
		return;
	}
	if (rc->set != rc->base)
		relay_appset_free(rc->set);
	rc->set = next;
	rc->changed++;
	if (relay_appset_find(next, name))
		relayd_logkv(RELAY_LOG_INFO, "RELAYD-APP06", kv,
			     "app reloaded");
	else if (template_exists(d, name))
		relayd_logkv(RELAY_LOG_WARN, "RELAYD-APP03", kv,
			     "app invalid: unavailable until its template "
			     "is fixed");
	else
		relayd_logkv(RELAY_LOG_INFO, "RELAYD-APP07", kv,
			     "app removed");
}

/*
 * Watch the apps directory and every directory in it (not only the
 * loaded entries: an app directory created before its template.yaml must
 * be watched for the template to be noticed). inotify_add_watch() on a
 * path already watched just returns its descriptor, so this runs after
 * every reload.
 */
static void add_watches(relayd *d)
{
	const uint32_t mask = IN_CREATE | IN_DELETE | IN_MOVED_FROM |
			      IN_MOVED_TO | IN_CLOSE_WRITE | IN_ATTRIB |
			      IN_ONLYDIR;
	char dir[PATH_MAX];
	struct dirent *e;
	DIR *dp;

	if (d->inotify_fd < 0)
		return;
	inotify_add_watch(d->inotify_fd, d->cfg.apps_dir, mask);
	dp = opendir(d->cfg.apps_dir);
	if (!dp)
		return;
	while ((e = readdir(dp)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", d->cfg.apps_dir,
			 e->d_name);
		/* IN_ONLYDIR makes this fail harmlessly for files. */
		inotify_add_watch(d->inotify_fd, dir, mask);
	}
	closedir(dp);
}

/* The worker: compute the next set from the base; never touches the
 * consumer or d->apps. */
static void *reload_main(void *arg)
{
	reload_ctx *rc = arg;

	rc->err = relay_appset_scan(rc->base, on_changed, rc);
	ev_async_send(rc->d->loop, &reloader.done);
	return NULL;
}

static void start_reload(relayd *d)
{
	memset(&reloader.rc, 0, sizeof(reloader.rc));
	reloader.rc.d = d;
	reloader.rc.base = reloader.rc.set = d->apps;
	if (pthread_create(&reloader.th, NULL, reload_main,
			   &reloader.rc) != 0) {
		relayd_log(RELAY_LOG_ERROR, "RELAYD-APP11",
			   "cannot start the reload thread; reloading on the "
			   "loop");
		reload_main(&reloader.rc);
		ev_invoke(d->loop, &reloader.done, EV_ASYNC);
		return;
	}
	reloader.running = true;
}

/* The warm parents of an app that is gone (or no longer valid) are
 * retired now rather than at the idle timeout; a changed app's go when
 * its new generation first runs. */
struct gone {
	relayd *d;
	char names[16][64];
	int n;
};

static void note_gone(const char *app, const char *state,
		      unsigned int inflight, uint64_t rss, void *payload)
{
	struct gone *g = payload;

	(void)state;
	(void)inflight;
	(void)rss;
	if (g->n < 16 && !relay_appset_find(g->d->apps, app))
		snprintf(g->names[g->n++], sizeof(g->names[0]), "%s", app);
}

static void retire_gone(relayd *d)
{
	struct gone g;
	int i;

	if (!d->rt)
		return;
	memset(&g, 0, sizeof(g));
	g.d = d;
	relay_runtime_warm_foreach(d->rt, note_gone, &g);
	for (i = 0; i < g.n; i++)
		relay_runtime_warm_retire(d->rt, g.names[i]);
}

/*
 * The one line of a reload: "apps reloaded (SIGHUP): 3 apps, none
 * changed", with the stale ones when there are ("; 1 stale: a, serving
 * its previous version (template invalid)"). At INFO, but at DEBUG for an
 * inotify reload that changed nothing (an editor's temporary file).
 */
static void log_reload(relayd *d, int changed)
{
	size_t n = relay_appset_entry_count(d->apps);
	size_t nstale = relayd_apps_stale_count(d), len = 0;
	char names[200] = "", count[32], stale[300] = "";
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)d->stale, key, v) {
		int w = snprintf(names + len, sizeof(names) - len, "%s%s",
				 len ? ", " : "", key);

		if (w < 0 || (size_t)w >= sizeof(names) - len) {
			memcpy(names + sizeof(names) - 4, "...", 4);
			break;
		}
		len += (size_t)w;
	}
	if (changed)
		snprintf(count, sizeof(count), "%d changed", changed);
	else
		snprintf(count, sizeof(count), "none changed");
	if (nstale)
		snprintf(stale, sizeof(stale), "; %zu stale (%s): the previous "
			 "version serves, the template is invalid", nstale,
			 names);
	relayd_log(changed || nstale || strcmp(reloader.why, "inotify") != 0
		   ? RELAY_LOG_INFO : RELAY_LOG_DEBUG, "RELAYD-APP09",
		   "apps reloaded (%s): %zu app%s, %s%s", reloader.why, n,
		   n == 1 ? "" : "s", count, stale);
}

size_t relayd_apps_stale_count(const relayd *d)
{
	return json_object_size((const json_t *)d->stale);
}

const void *relayd_apps_stale_errors(const relayd *d, const char *name)
{
	return d->stale ? json_object_get((const json_t *)d->stale, name)
			: NULL;
}

/* Swap in what the worker built (loop thread). */
static void finish_reload(relayd *d)
{
	reload_ctx rc = reloader.rc;

	if (rc.err) {
		relayd_log(RELAY_LOG_ERROR, "RELAYD-APP08",
			   "apps directory %s cannot be read (%s); keeping "
			   "the loaded apps", d->cfg.apps_dir,
			   relay_strerror(rc.err));
	}
	if (rc.set != rc.base) {
		char why[512];
		size_t i, j;

		/* New apps need their uids before anything runs them. */
		if (relayd_apps_uids(d, rc.set, why, sizeof(why))) {
			relayd_log(RELAY_LOG_ERROR, "RELAYD-SBX02",
				   "reload refused: %s; keeping the loaded "
				   "apps", why);
			relay_appset_free(rc.set);
			return;
		}

		/* Every stream's consumer; on a failure the ones already
		 * switched go back to the loaded set (which stays). */
		for (i = 0; i < d->nconsumers; i++) {
			if (!d->consumers[i] ||
			    !relay_consumer_set_apps(d->consumers[i], rc.set))
				continue;
			for (j = 0; j < i; j++)
				if (d->consumers[j] &&
				    relay_consumer_set_apps(d->consumers[j],
							    d->apps))
					abort();  /* cannot keep both sets */
			relayd_log(RELAY_LOG_ERROR, "RELAYD-APP05",
				   "reload failed (out of memory)");
			relay_appset_free(rc.set);
			json_decref(rc.stale);
			return;
		}
		relay_appset_free(d->apps);
		d->apps = rc.set;
		retire_gone(d);
	}
	if (!rc.err) {
		/* The scan saw every stale app again: its list is whole. */
		json_decref(d->stale);
		d->stale = rc.stale;
	} else {
		json_decref(rc.stale);
	}
	log_reload(d, rc.changed);
	add_watches(d);
}

static void on_reload_done(struct ev_loop *loop, ev_async *w, int revents)
{
	relayd *d = w->data;

	(void)loop;
	(void)revents;
	if (reloader.running) {
		pthread_join(reloader.th, NULL);
		reloader.running = false;
	}
	finish_reload(d);
	if (reloader.again) {
		reloader.again = false;
		snprintf(reloader.why, sizeof(reloader.why), "queued");
		start_reload(d);
	}
}

void relayd_apps_reload(relayd *d, const char *why)
{
	if (reloader.d != d) {
		/* Not watching (no loop integration yet): on the spot. */
		reload_ctx rc = { d, d->apps, d->apps, 0, 0, NULL };

		rc.err = relay_appset_scan(d->apps, on_changed, &rc);
		reloader.rc = rc;
		snprintf(reloader.why, sizeof(reloader.why), "%s", why);
		finish_reload(d);
		return;
	}
	if (reloader.running) {
		reloader.again = true;
		return;
	}
	snprintf(reloader.why, sizeof(reloader.why), "%s", why);
	start_reload(d);
}

static void on_reload_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	relayd_apps_reload(w->data, "inotify");
}

static void on_inotify(struct ev_loop *loop, ev_io *w, int revents)
{
	relayd *d = w->data;
	char buf[4096] __attribute__((aligned(__alignof__(struct
							   inotify_event))));

	(void)revents;
	while (read(d->inotify_fd, buf, sizeof(buf)) > 0)
		;
	ev_timer_stop(loop, &d->reload_timer);
	ev_timer_set(&d->reload_timer, 0.1, 0.);
	ev_timer_start(loop, &d->reload_timer);
}

int relayd_apps_watch(relayd *d)
{
	reloader.d = d;
	ev_async_init(&reloader.done, on_reload_done);
	reloader.done.data = d;
	ev_async_start(d->loop, &reloader.done);
	d->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (d->inotify_fd < 0) {
		relayd_log(RELAY_LOG_WARN, "RELAYD-APP10",
			   "inotify unavailable (%s): reload apps with "
			   "SIGHUP", strerror(errno));
		return -1;
	}
	add_watches(d);
	ev_io_init(&d->inotify_io, on_inotify, d->inotify_fd, EV_READ);
	d->inotify_io.data = d;
	ev_io_start(d->loop, &d->inotify_io);
	ev_timer_init(&d->reload_timer, on_reload_timer, 0.1, 0.);
	d->reload_timer.data = d;
	return 0;
}

void relayd_apps_unwatch(relayd *d)
{
	if (reloader.d == d) {
		/* Wait for a reload in progress; drop what it built. */
		if (reloader.running) {
			pthread_join(reloader.th, NULL);
			reloader.running = false;
			if (reloader.rc.set != reloader.rc.base)
				relay_appset_free(reloader.rc.set);
			json_decref(reloader.rc.stale);
			reloader.rc.stale = NULL;
		}
		ev_async_stop(d->loop, &reloader.done);
		reloader.d = NULL;
	}
	if (d->inotify_fd < 0)
		return;
	ev_io_stop(d->loop, &d->inotify_io);
	ev_timer_stop(d->loop, &d->reload_timer);
	close(d->inotify_fd);
	d->inotify_fd = -1;
}
