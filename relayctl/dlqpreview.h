/*
 * dlqpreview.h - the DLQ entry relayd would write, shown without Redis
 * (`relayctl app run --attempts N` when every attempt failed; doc/cli.md
 * L-4, the fields of doc/redis-layout.md R-5).
 */
#ifndef RELAYCTL_DLQPREVIEW_H
#define RELAYCTL_DLQPREVIEW_H

#include <stddef.h>

#include "relay/dlq.h"

/* What one attempt wrote to stderr, as the engine keeps it: the
 * handler's bytes of each line (no prefix), joined by '\n', the last
 * 2 * RELAY_DLQ_STDERR_TAIL_MAX bytes (enough for the field). A zeroed
 * struct is empty. */
struct relayctl_errtail {
	char buf[2 * RELAY_DLQ_STDERR_TAIL_MAX];
	size_t len;
	int open;        /* the last line continues (a partial piece) */
};

/* Add one line (or piece of one, @partial) of @n bytes. */
void relayctl_errtail_add(struct relayctl_errtail *t, const char *p,
			  size_t n, int partial);

/*
 * Print on stdout, indented by four spaces, one "name  value" line per
 * field of the entry relayd would write for invocation @app/@handler
 * exhausted after @attempts attempts, the last failing for
 * @last_failure, with event @event (@len bytes) and the last attempt's
 * stderr @tail. What only relayd knows (the stream entry's id, its
 * delivery count) is shown as <...>; stream, group and consumer come from
 * REDIS_STREAM, REDIS_GROUP and REDIS_CONSUMER (else the host name, as
 * relayd). Values are cleaned for the terminal.
 */
void relayctl_dlq_preview(const char *app, const char *handler,
			  unsigned int attempts, const char *last_failure,
			  const char *event, size_t len,
			  const struct relayctl_errtail *tail);

#endif /* RELAYCTL_DLQPREVIEW_H */
