/*
 * dlqcli.h - what the relayctl dlq subcommands share (cmd_dlq*.c): the
 * command line of a subcommand, the Redis connection to the DLQ stream
 * relay:<REDIS_STREAM>:dlq, reading one entry, JSON of an entry.
 */
#ifndef RELAYCTL_DLQCLI_H
#define RELAYCTL_DLQCLI_H

#include <jansson.h>

#include "ctlconf.h"
#include "dlqfilter.h"
#include "relay/dlq.h"

struct dlqcli {
	const char *cmd;           /* "dlq ls", ... for messages */
	struct relayctl_conf conf;
	const char *id;            /* the ID argument, or NULL */
	struct dlqfilter filter;   /* --app, --handler, ... (dlqfilter.h) */
	long long limit;           /* --limit N (the first N matching
				      entries), 0 = all */
	int all;                   /* --all */
	int bulk;                  /* --all or a filter: many entries */
	int dry_run, yes;          /* --dry-run, --yes */
	long rate;                 /* --rate N, 0 = not given */
	int redrive;               /* --redrive (dlq replay) */
	int newest_first;          /* --newest-first */
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
	DLQCLI_FILTER = 4,  /* the filters of dlqfilter.h */
	DLQCLI_ALL = 8,     /* --all or filters instead of ID */
	DLQCLI_LIMIT = 16,  /* --limit N (with DLQCLI_ALL: only with --all
			       or a filter) */
	DLQCLI_BULK = 32,   /* --dry-run, --yes, --rate N (with --all or a
			       filter) */
	DLQCLI_REDRIVE = 64, /* --redrive */
	DLQCLI_ORDER = 128,  /* --newest-first */
};

/* --rate: the most entries per second relayctl accepts. */
#define DLQCLI_RATE_MAX 1000

/*
 * Parse argv (argv[0] = the subcommand) into @d. Returns 0, -1 when help
 * was printed (exit 0), or RELAYCTL_USAGE after printing the problem and
 * @usage. With DLQCLI_BULK, a bulk command whose standard input is not a
 * terminal needs --yes (or --dry-run): a usage error otherwise.
 */
int dlqcli_parse(struct dlqcli *d, const char *cmd, int argc, char **argv,
		 unsigned flags, void (*usage)(FILE *f));

/* Open Redis and build the DLQ key. Returns RELAYCTL_OK, or an exit code
 * after dlqcli_close(). */
int dlqcli_open(struct dlqcli *d);

/*
 * dlqcli_parse(), then dlqcli_open(). Returns 0 (close with
 * dlqcli_close()), -1 when help was printed (exit 0), or an exit code.
 */
int dlqcli_start(struct dlqcli *d, const char *cmd, int argc, char **argv,
		 unsigned flags, void (*usage)(FILE *f));

/* Release what dlqcli_parse() and dlqcli_open() took. */
void dlqcli_close(struct dlqcli *d);

/*
 * Read entry @id into @rec from the first DLQ (in stream order) that
 * holds it; d->key and d->stream name that DLQ afterwards. Prints `unknown DLQ entry "<id>"` (exit 1)
 * when there is none, `malformed ...` (exit 1) when it cannot be parsed,
 * and any other problem. Returns an exit code.
 */
int dlqcli_get(struct dlqcli *d, const char *id, relay_dlq_record *rec);

/*
 * One page of a DLQ where a malformed entry is a row, not a failure:
 * recs[i] is the parsed entry, or, when bad[i] is not NULL, only its id
 * (recs[i].id) with bad[i] saying what is wrong (text from Redis: clean
 * it before printing). raw is the XRANGE reply (raw->element[i] is entry
 * i). Everything is owned by the page (dlqcli_page_free()).
 */
struct dlqcli_page {
	relay_dlq_record *recs;
	char **bad;
	size_t n;
	relay_redis_reply *raw;
};
/*
 * Read up to @count entries of DLQ @key from @start to @end (XRANGE
 * bounds) into @p. Returns RELAYCTL_OK (free @p after), or an exit code
 * after printing the problem (@p is empty).
 */
int dlqcli_page(struct dlqcli *d, const char *key, const char *start,
		const char *end, size_t count, struct dlqcli_page *p);
/*
 * Call @fn for every item of the library iterator (relay_dlq_iter_open(),
 * relay/dlq.h) over every DLQ of @d (d->keys in order, each in @order)
 * with d->filter and --limit: a page at a time, constant memory. The
 * item is borrowed for the call; @fn returns 0 to go on, 1 to stop, -1
 * when out of memory. Returns an exit code after printing the problem
 * (RELAYCTL_OK also when @fn stopped).
 */
typedef int (*dlqcli_each_fn)(void *payload, const relay_dlq_item *it);
int dlqcli_each(struct dlqcli *d, relay_dlq_order order, dlqcli_each_fn fn,
		void *payload);
/* The id of the page's last entry, or NULL; borrowed from @p. */
const char *dlqcli_page_last(const struct dlqcli_page *p);
void dlqcli_page_free(struct dlqcli_page *p);
/*
 * Entry @id, well-formed or not, from the first DLQ that holds it, as a
 * page of one; d->key and d->stream name that DLQ. Prints `unknown DLQ
 * entry` (exit 1) when there is none. Returns an exit code.
 */
int dlqcli_find(struct dlqcli *d, const char *id, struct dlqcli_page *p);
/* Whether @id looks like a stream entry id ("<ms>-<seq>" or "<ms>"). */
int dlqcli_id_valid(const char *id);

/* A JSON string of @s (new reference, NULL for NULL or OOM); bytes that
 * are not UTF-8 become '?'. */
json_t *dlqcli_json_str(const char *s);

/* Every field of @rec as a JSON object (new reference), or NULL (OOM). */
json_t *dlqcli_json(const relay_dlq_record *rec);

/*
 * A malformed entry as JSON: {"id", "malformed": @bad, "fields": {name:
 * value as stored}} (@raw: its XRANGE element, or NULL). New reference,
 * or NULL (OOM).
 */
json_t *dlqcli_json_bad(const relay_dlq_record *rec, const char *bad,
			const relay_redis_reply *raw);
/*
 * The part of @reason worth a column next to APP and HANDLER: for an
 * exhausted invocation ('invocation exhausted: app "A" handler "H"
 * exhausted after N handler attempts: LAST') its last failure LAST, else
 * @reason itself. Points into @reason.
 */
const char *dlqcli_reason_short(const char *reason);

/* Print a store error for @d->cmd; returns RELAYCTL_FAIL. */
int dlqcli_store_error(const struct dlqcli *d, int rc,
		       const relay_error *err);

/* The --help lines of the filters (--reason, --since, --until, --id,
 * --original-id, --malformed, --no-malformed)
 * and of the bulk options (--limit, --dry-run, --yes, --rate; the last takes the
 * default and the cap as two %d and a note as %s), shared by the dlq
 * commands' usage texts. */
#define DLQCLI_FILTER_HELP                                              \
	"  --reason ERE       whose reason matches ERE (POSIX extended)\n" \
	"  --since WHEN       written at or after WHEN (RFC 3339, or 2h, "  \
	"30m ago)\n"                                                       \
	"  --until WHEN       written at or before WHEN\n"                 \
	"  --id ID            entry ID (repeatable)\n"                    \
	"  --original-id ID   whose original message is stream entry ID\n" \
	"                     (repeatable)\n"                             \
	"  --malformed        only malformed entries (not with --app,\n"   \
	"                     --handler, --reason or --original-id)\n"    \
	"  --no-malformed     no malformed entries\n"
#define DLQCLI_BULK_HELP                                                \
	"  --limit N          at most the first N matching entries (oldest " \
	"first)\n"                                                         \
	"  --dry-run          print how many entries match and a few of "  \
	"them\n"                                                           \
	"  --yes              do not ask (required when standard input is " \
	"not a\n"                                                          \
	"                     terminal)\n"                                 \
	"  --rate N           at most N entries per second (default %d, "   \
	"at most %d)\n"                                                     \
	"  --json             print what was done (or would be, with "     \
	"--dry-run)\n"                                                      \
	"                     as one JSON object: counts and every entry\n%s"

#endif /* RELAYCTL_DLQCLI_H */
