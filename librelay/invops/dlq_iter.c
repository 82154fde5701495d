/*
 * dlq_iter.c - read DLQ streams through a filter, a page at a time
 * (relay/dlq.h, relay_dlq_iter): what relayctl's dlq ls, summary, rm and
 * replay are built on, and what an embedder builds the same tools on.
 *
 * One page (XRANGE key start + COUNT n, or XREVRANGE key end - COUNT n)
 * is held at a time, with the one record parsed from it that the caller
 * is looking at: memory does not grow with the DLQ. The next page starts
 * after the last id read ("(" id), so an entry added or removed between
 * pages moves nothing: none is seen twice, and none that stays is
 * missed.
 *
 * Every entry is parsed on its own: one that cannot be parsed is an item
 * (RELAY_DLQ_ITEM_MALFORMED or _UNDECIDED), never an error, so one bad
 * entry cannot hide the others. The limit rule, in one place for every
 * command: matches count, undecided items do not (a malformed entry that
 * only a filter on fields could judge is not known to match, so it takes
 * no one's place, but it is still reported).
 */
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "common.h"
#include "dlq_filter.h"
#include "inv.h"
#include "invops.h"

#define PAGE_MAX 10000

struct relay_dlq_iter {
	relay_redis_backend *b;
	const char *const *keys;
	size_t nkeys, k;             /* the key being read */
	const relay_dlq_filter *f;   /* borrowed, or NULL */
	relay_dlq_order order;
	size_t page;                 /* entries per command */
	int64_t lo, hi;              /* the time window, resolved at open */
	char first[48], last[48];    /* XRANGE bounds from the --id list */
	char from[64];               /* where the next page starts */
	relay_redis_reply *r;        /* the page */
	size_t i;                    /* next element of the page */
	int key_done;                /* the page is the key's last */
	relay_dlq_record rec;        /* the item's record */
	char *error;                 /* the item's parse error */
	uint64_t matched;
	int status;                  /* 1 going, 0 ended, < 0 failed */
};

int relay_dlq_iter_open(relay_dlq_iter **out, relay_redis_backend *b,
			const char *const *keys, size_t nkeys,
			const relay_dlq_filter *f, relay_dlq_order order)
{
	relay_dlq_iter *it;

	*out = NULL;
	if (!b || !keys || !nkeys)
		return RELAY_EINVAL;
	it = relay__calloc(1, sizeof(*it));
	if (!it)
		return RELAY_ENOMEM;
	it->b = b;
	it->keys = keys;
	it->nkeys = nkeys;
	it->f = f;
	it->order = order;
	it->page = RELAY_DLQ_ITER_PAGE;
	it->lo = INT64_MIN;
	it->hi = INT64_MAX;
	if (f)
		relay__dlq_filter_window(f, relay_clock_wall_ms(
			f->clock ? f->clock : relay_clock_system()),
			&it->lo, &it->hi);
	relay__dlq_filter_id_bounds(f, it->first, it->last,
				    sizeof(it->first));
	it->status = it->lo > it->hi ? 0 : 1;
	*out = it;
	return 0;
}

int relay_dlq_iter_page(relay_dlq_iter *it, size_t n)
{
	if (!it || n < 1 || n > PAGE_MAX)
		return RELAY_EINVAL;
	it->page = n;
	return 0;
}

uint64_t relay_dlq_iter_matched(const relay_dlq_iter *it)
{
	return it ? it->matched : 0;
}

static void item_clear(relay_dlq_iter *it)
{
	relay_dlq_record_clear(&it->rec);
	relay__free(it->error);
	it->error = NULL;
}

void relay_dlq_iter_close(relay_dlq_iter *it)
{
	if (!it)
		return;
	item_clear(it);
	relay_redis_reply_free(it->r);
	relay__free(it);
}

/* The id of XRANGE element @e, or NULL when it has none. */
static const char *elem_id(const relay_redis_reply *e)
{
	if (e && e->type == RELAY_REDIS_REPLY_ARRAY && e->elements >= 1 &&
	    e->element[0]->type == RELAY_REDIS_REPLY_STRING)
		return e->element[0]->str;
	return NULL;
}

/* Read the next page of key it->k into it->r. Returns 0 or an error. */
static int read_page(relay_dlq_iter *it, relay_error *err)
{
	int rev = it->order == RELAY_DLQ_NEWEST_FIRST;
	const char *key = it->keys[it->k];
	char count[24];
	const char *argv[6];
	relay_redis_reply *r = NULL;
	int rc;

	snprintf(count, sizeof(count), "%zu", it->page);
	argv[0] = rev ? "XREVRANGE" : "XRANGE";
	argv[1] = key;
	/* XRANGE key from last; XREVRANGE key from first. */
	argv[2] = it->from[0] ? it->from : rev ? it->last : it->first;
	argv[3] = rev ? it->first : it->last;
	argv[4] = "COUNT";
	argv[5] = count;
	rc = relay_redis_sync_command(it->b, &r, 6, argv, NULL);
	if (rc == 0)
		rc = relay_redis_reply_error(r);
	if (rc == 0 && r->type != RELAY_REDIS_REPLY_ARRAY)
		rc = RELAY_EBACKEND;
	if (rc) {
		/* A lost or refused connection: the backend's reason (what
		 * the sentinels said, a TLS verdict), never the URI. */
		const char *why = relay_redis_errstr(it->b);

		relay__error_set(err, rc, NULL, 0, 0, "%s %s: %s", argv[0],
				 key, r && r->str ? r->str
				 : why && *why ? why : relay_strerror(rc));
		relay_redis_reply_free(r);
		return rc == RELAY_EPARSE ? RELAY_EBACKEND : rc;
	}
	relay_redis_reply_free(it->r);
	it->r = r;
	it->i = 0;
	it->key_done = r->elements < it->page;
	/* The next page starts after this one's last id. */
	if (r->elements) {
		const char *last = elem_id(r->element[r->elements - 1]);

		if (last && strlen(last) < sizeof(it->from) - 1)
			snprintf(it->from, sizeof(it->from), "(%s", last);
		else
			it->key_done = 1;
	}
	return 0;
}

/* Whether the limit has been reached. */
static int full(const relay_dlq_iter *it)
{
	return it->f && it->f->limit && it->matched >= it->f->limit;
}

/* The verdict on element @e, with it->rec / it->error filled. Returns a
 * relay_dlq_item_kind, -1 to skip, or a negative code - 1 on failure. */
static int judge(relay_dlq_iter *it, const relay_redis_reply *e, int *rcp)
{
	relay_error perr;
	relay_dlq_verdict v;
	const char *id;
	int rc;

	perr.text[0] = '\0';
	rc = relay_dlq_parse(&it->rec, e, &perr);
	if (rc == 0) {
		v = it->f ? relay__dlq_filter_match_at(it->f, &it->rec, it->lo,
						       it->hi)
			  : RELAY_DLQ_MATCH;
		return v == RELAY_DLQ_MATCH ? RELAY_DLQ_ITEM_ENTRY : -1;
	}
	if (rc != RELAY_EPARSE) {
		*rcp = rc;
		return -1;
	}
	id = elem_id(e);
	it->rec.id = relay__strdup(id ? id : "?");
	it->error = relay__strdup(perr.text[0] ? perr.text
						: "unreadable entry");
	if (!it->rec.id || !it->error) {
		*rcp = RELAY_ENOMEM;
		return -1;
	}
	v = it->f ? relay__dlq_filter_malformed_at(it->f, it->rec.id, it->lo,
						   it->hi)
		  : RELAY_DLQ_MATCH;
	if (v == RELAY_DLQ_NO)
		return -1;
	return v == RELAY_DLQ_MATCH ? RELAY_DLQ_ITEM_MALFORMED
				    : RELAY_DLQ_ITEM_UNDECIDED;
}

int relay_dlq_iter_next(relay_dlq_iter *it, relay_dlq_item *item,
			relay_error *err)
{
	int rc;

	memset(item, 0, sizeof(*item));
	if (err)
		err->text[0] = '\0';
	item_clear(it);
	while (it->status == 1) {
		const relay_redis_reply *e;
		int kind;

		if (full(it)) {
			it->status = 0;
			break;
		}
		if (!it->r || it->i == it->r->elements) {
			if (it->r && it->key_done) {
				/* The next key, from its start. */
				relay_redis_reply_free(it->r);
				it->r = NULL;
				it->from[0] = '\0';
				if (++it->k == it->nkeys) {
					it->status = 0;
					break;
				}
			}
			rc = read_page(it, err);
			if (rc) {
				it->status = rc;
				break;
			}
			continue;
		}
		e = it->r->element[it->i++];
		rc = 0;
		kind = judge(it, e, &rc);
		if (rc) {
			it->status = rc;
			break;
		}
		if (kind < 0) {
			item_clear(it);
			continue;
		}
		if (kind != RELAY_DLQ_ITEM_UNDECIDED)
			it->matched++;
		item->kind = (relay_dlq_item_kind)kind;
		item->key = it->k;
		item->id = it->rec.id;
		item->rec = kind == RELAY_DLQ_ITEM_ENTRY ? &it->rec : NULL;
		item->error = it->error;
		item->raw = e;
		return 1;
	}
	if (it->status < 0 && err && !err->text[0])
		/* Repeated after the first report. */
		relay__error_set(err, it->status, NULL, 0, 0, "%s",
				 relay_strerror(it->status));
	return it->status < 0 ? it->status : 0;
}
