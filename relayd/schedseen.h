/*
 * schedseen.h - when this relayd first saw each schedule (schedseen.c),
 * so that the start-up catch-up never publishes an occurrence from
 * before a schedule existed (doc/schedules.md, "Missed occurrences").
 *
 * Kept in RELAY_STATE_DIR/schedule-seen.json:
 *	{"version":1,"seen":{"<app>/<schedule>":<Unix seconds>, ...}}
 * written atomically when it changes. Single-threaded (the loop).
 */
#ifndef RELAYD_SCHEDSEEN_H
#define RELAYD_SCHEDSEEN_H

#include <stdint.h>

/* At most this many schedules are remembered; past it a schedule is
 * treated as new at every start (no catch-up), with a warning. */
#define RELAYD_SCHEDSEEN_MAX 10000

typedef struct relayd_schedseen relayd_schedseen;

/* Read @state_dir's file (missing: empty; corrupt: logged RELAYD-SCHED03,
 * empty, rewritten at the next change). NULL only without memory. */
relayd_schedseen *relayd_schedseen_load(const char *state_dir);

/*
 * The instant @app/@schedule was first seen. One not seen before is
 * recorded as seen at @now (written by the next relayd_schedseen_flush())
 * and *@is_new set to 1; else *@is_new is 0. Without memory or past
 * RELAYD_SCHEDSEEN_MAX the answer is @now with *@is_new 1, unrecorded.
 */
int64_t relayd_schedseen_first(relayd_schedseen *s, const char *app,
			       const char *schedule, int64_t now,
			       int *is_new);

/* Write the file if something was recorded since the last write. */
void relayd_schedseen_flush(relayd_schedseen *s);

void relayd_schedseen_free(relayd_schedseen *s);

#endif /* RELAYD_SCHEDSEEN_H */
