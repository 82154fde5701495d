/*
 * matchexplain.h - relayctl match --explain's listing, shared with
 * relayctl publish --explain (cmd_match.c).
 */
#ifndef RELAYCTL_MATCHEXPLAIN_H
#define RELAYCTL_MATCHEXPLAIN_H

#include <stddef.h>

#include <jansson.h>

#include "relay/app.h"

/*
 * Print every rule of every app of @set on stdout, in dispatch order: a
 * rule among the @n matches @v as "<app>/<handler>" and the conditions
 * that decided it, any other as "<app>/<handler>: no match" and the first
 * condition that failed (doc/cli.md L-3). @ev is the decoded event, or
 * NULL (then only the rule lines are printed); @now is now().
 * Ownership: everything is borrowed. Thread-safety: one caller at a time
 * (stdout).
 */
void relayctl_match_explain(const relay_appset *set,
			    const relay_app_match *v, size_t n,
			    const json_t *ev, relay_wall_ms now);

#endif /* RELAYCTL_MATCHEXPLAIN_H */
