/*
 * dlqcli.h - what the relayctl dlq subcommands share (cmd_dlq*.c): the
 * command line of a subcommand, the Redis connection to the DLQ stream
 * relay:<REDIS_STREAM>:dlq, reading one entry, JSON of an entry.
 */
#ifndef RELAYCTL_DLQCLI_H
#define RELAYCTL_DLQCLI_H

#include <jansson.h>

#include "ctlconf.h"
#include "relay/dlq.h"

struct dlqcli {
	const char *cmd;           /* "dlq ls", ... for messages */
	struct relayctl_conf conf;
	const char *id;            /* the ID argument, or NULL */
	const char *app;           /* --app NAME, or NULL */
	long long limit;           /* --limit N, 0 = all */
	int all;                   /* --all */
	relay_redis_backend *b;    /* after dlqcli_open() */
	char *key;                 /* relay:<stream>:dlq: keys[0], or the
				      one dlqcli_get() found the entry in */
	const char *stream;        /* ... and its stream */
	char **streams;            /* the streams REDIS_STREAM / --stream
				      name (relay_stream_list_parse()) */
	char **keys;               /* their DLQ keys */
	size_t nkeys;              /* >= 1 after dlqcli_open() */
};

/* Which options a subcommand takes. */
enum {
	DLQCLI_ID = 1,      /* one ID argument */
	DLQCLI_JSON = 2,    /* --json */
	DLQCLI_FILTER = 4,  /* --app NAME, --limit N */
	DLQCLI_ALL = 8,     /* --all instead of ID (with --app) */
};

/*
 * Parse argv (argv[0] = the subcommand) into @d. Returns 0, -1 when help
 * was printed (exit 0), or RELAYCTL_USAGE after printing the problem and
 * @usage.
 */
int dlqcli_parse(struct dlqcli *d, const char *cmd, int argc, char **argv,
		 unsigned flags, void (*usage)(FILE *f));

/* Open Redis and build the DLQ key. Returns RELAYCTL_OK or an exit code. */
int dlqcli_open(struct dlqcli *d);

/*
 * dlqcli_parse(), then dlqcli_open(). Returns 0 (close with
 * dlqcli_close()), -1 when help was printed (exit 0), or an exit code.
 */
int dlqcli_start(struct dlqcli *d, const char *cmd, int argc, char **argv,
		 unsigned flags, void (*usage)(FILE *f));

/* Release what dlqcli_open() took. */
void dlqcli_close(struct dlqcli *d);

/*
 * Read entry @id into @rec from the first DLQ (in stream order) that
 * holds it; d->key and d->stream name that DLQ afterwards. Prints `unknown DLQ entry "<id>"` (exit 1)
 * when there is none, and any other problem. Returns an exit code.
 */
int dlqcli_get(struct dlqcli *d, const char *id, relay_dlq_record *rec);

/* Whether @id looks like a stream entry id ("<ms>-<seq>" or "<ms>"). */
int dlqcli_id_valid(const char *id);

/* Every field of @rec as a JSON object (new reference), or NULL (OOM). */
json_t *dlqcli_json(const relay_dlq_record *rec);

/* Print a store error for @d->cmd; returns RELAYCTL_FAIL. */
int dlqcli_store_error(const struct dlqcli *d, int rc,
		       const relay_error *err);

#endif /* RELAYCTL_DLQCLI_H */
