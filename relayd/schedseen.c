/*
 * schedseen.c - the first-seen instant of each schedule (schedseen.h).
 *
 * The start-up catch-up publishes the latest missed occurrence of a
 * schedule only if it is not older than the instant this relayd first
 * saw the schedule: a schedule deployed at 14:16 with a 06:00 cron does
 * not fire at 14:16, while one that was there before a restart still gets
 * the occurrence it missed. The map lives in a jansson object: one
 * integer per "<app>/<schedule>", bounded by RELAYD_SCHEDSEEN_MAX.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "relayd.h"
#include "schedseen.h"

#define SEEN_FILE "schedule-seen.json"

struct relayd_schedseen {
	char *dir;
	json_t *seen;      /* "<app>/<schedule>" -> Unix seconds */
	int dirty;
	int full_logged;
};

static json_t *load_map(const char *path, char *why, size_t size)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	json_error_t jerr;
	json_t *root, *m, *v;
	const char *k;

	*why = '\0';
	if (fd < 0) {
		if (errno != ENOENT)
			snprintf(why, size, "cannot read it: %s",
				 strerror(errno));
		return NULL;
	}
	root = json_loadfd(fd, 0, &jerr);
	close(fd);
	if (!root) {
		snprintf(why, size, "not JSON: %s (line %d)", jerr.text,
			 jerr.line);
		return NULL;
	}
	m = json_object_get(root, "seen");
	if (!json_is_object(root) || !json_is_object(m) ||
	    json_integer_value(json_object_get(root, "version")) != 1) {
		snprintf(why, size, "not a version 1 file");
		json_decref(root);
		return NULL;
	}
	json_object_foreach(m, k, v) {
		if (!json_is_integer(v) || !strchr(k, '/')) {
			snprintf(why, size, "entry \"%.60s\" is invalid", k);
			json_decref(root);
			return NULL;
		}
	}
	json_incref(m);
	json_decref(root);
	return m;
}

relayd_schedseen *relayd_schedseen_load(const char *state_dir)
{
	relayd_schedseen *s = calloc(1, sizeof(*s));
	char path[4096], why[200];

	if (!s)
		return NULL;
	s->dir = strdup(state_dir);
	snprintf(path, sizeof(path), "%s/%s", state_dir, SEEN_FILE);
	s->seen = load_map(path, why, sizeof(why));
	if (!s->seen && *why) {
		relayd_log(RELAY_LOG_ERROR, "RELAYD-SCHED03",
			   "schedule first-seen file %s is corrupt (%s): "
			   "ignored, every schedule counts as new", path,
			   why);
		s->dirty = 1;  /* overwrite it at the next flush */
	}
	if (!s->seen)
		s->seen = json_object();
	if (!s->dir || !s->seen) {
		relayd_schedseen_free(s);
		return NULL;
	}
	return s;
}

int64_t relayd_schedseen_first(relayd_schedseen *s, const char *app,
			       const char *schedule, int64_t now,
			       int *is_new)
{
	char key[512];
	json_t *v;

	*is_new = 1;
	if (!s)
		return now;
	snprintf(key, sizeof(key), "%s/%s", app, schedule);
	v = json_object_get(s->seen, key);
	if (v) {
		*is_new = 0;
		return (int64_t)json_integer_value(v);
	}
	if (json_object_size(s->seen) >= RELAYD_SCHEDSEEN_MAX) {
		if (!s->full_logged)
			relayd_log(RELAY_LOG_WARN, "RELAYD-SCHED08",
				   "schedule first-seen file full (%d "
				   "schedules): %s counts as new",
				   RELAYD_SCHEDSEEN_MAX, key);
		s->full_logged = 1;
		return now;
	}
	if (json_object_set_new(s->seen, key, json_integer(now)) == 0)
		s->dirty = 1;
	return now;
}

void relayd_schedseen_flush(relayd_schedseen *s)
{
	json_t *root;
	char *text;

	if (!s || !s->dirty)
		return;
	root = json_pack("{s:i, s:O}", "version", 1, "seen", s->seen);
	text = root ? json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	if (text && relayd_write_atomic(s->dir, SEEN_FILE, text,
					strlen(text)) == 0)
		s->dirty = 0;
	else
		relayd_log(RELAY_LOG_WARN, "RELAYD-SCHED03",
			   "cannot write %s/%s: %s (retried)", s->dir,
			   SEEN_FILE, strerror(errno));
	free(text);
	json_decref(root);
}

void relayd_schedseen_free(relayd_schedseen *s)
{
	if (!s)
		return;
	json_decref(s->seen);
	free(s->dir);
	free(s);
}
