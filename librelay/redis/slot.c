/*
 * slot.c - Redis Cluster key slots (doc/redis-layout.md R-8): CRC16
 * (XMODEM: polynomial 0x1021, initial value 0, no reflection) of the key,
 * or of its hash tag, modulo 16384; and the check that every key Relay
 * derives from a stream shares the stream's slot.
 */
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "common.h"
#include "relay/dlq.h"
#include "relay/invocation.h"

uint16_t relay__redis_crc16(const char *buf, size_t len)
{
	uint16_t crc = 0;
	size_t i;
	int bit;

	for (i = 0; i < len; i++) {
		crc ^= (uint16_t)((unsigned char)buf[i] << 8);
		for (bit = 0; bit < 8; bit++)
			crc = crc & 0x8000 ? (uint16_t)((crc << 1) ^ 0x1021)
					   : (uint16_t)(crc << 1);
	}
	return crc;
}

/*
 * The hash tag: the bytes between the first '{' and the first '}' after
 * it, when there are any. Returns 1 and the tag, or 0 (no tag: the whole
 * key is hashed).
 */
int relay__redis_hash_tag(const char *key, size_t len, const char **tag,
			  size_t *tag_len)
{
	const char *open = memchr(key, '{', len), *close;

	if (!open)
		return 0;
	close = memchr(open + 1, '}', len - (size_t)(open + 1 - key));
	if (!close || close == open + 1)
		return 0;
	*tag = open + 1;
	*tag_len = (size_t)(close - open - 1);
	return 1;
}

unsigned int relay__redis_key_slot(const char *key, size_t len)
{
	const char *tag;
	size_t n;

	if (relay__redis_hash_tag(key, len, &tag, &n))
		return relay__redis_crc16(tag, n) & 16383;
	return relay__redis_crc16(key, len) & 16383;
}

static unsigned int slot_of(const char *key)
{
	return relay__redis_key_slot(key, strlen(key));
}

int relay__redis_stream_slot_check(const char *stream, const char *group,
				   char *errbuf, size_t size)
{
	const char *tag;
	size_t n;
	char *keys[2];
	unsigned int slot;
	int i, rc = 0;

	if (!relay__redis_hash_tag(stream, strlen(stream), &tag, &n)) {
		char q[300];

		/* The name comes from the environment: escaped. */
		relay__escape(stream, 64, q, sizeof(q));
		snprintf(errbuf, size, "REDIS_STREAM \"%s\" has no hash tag, "
			 "but the Redis server runs in cluster mode: every key "
			 "Relay derives from the stream must share its hash "
			 "slot; name the stream with a hash tag, e.g. "
			 "REDIS_STREAM=\"{%s}\"", q, q);
		return RELAY_EINVAL;
	}
	/* "relay:<stream>:…" (DLQ, schedule markers) and the state hashes. */
	keys[0] = relay_dlq_key(stream);
	keys[1] = relay_inv_key(stream, group, "0-0");
	slot = slot_of(stream);
	for (i = 0; i < 2; i++) {
		if (!keys[i])
			rc = RELAY_ENOMEM;
		else if (!rc && slot_of(keys[i]) != slot)
			rc = RELAY_EINVAL;
	}
	for (i = 0; i < 2; i++)
		relay__free(keys[i]);
	if (rc == RELAY_EINVAL) {
		char q[300];

		relay__escape(stream, 64, q, sizeof(q));
		snprintf(errbuf, size, "REDIS_STREAM \"%s\": its hash tag "
			 "holds ':' or '%%', which the state-hash key encoding "
			 "rewrites, so the keys Relay derives would land in "
			 "another hash slot; use a tag without them, e.g. "
			 "\"{orders}\"", q);
	}
	else if (rc)
		snprintf(errbuf, size, "out of memory");
	return rc;
}

int relay_redis_cluster_check(const char *uri, const char *const *streams,
			      size_t nstreams, const char *group,
			      const relay_redis_options *opts, char *errbuf,
			      size_t size)
{
	static const char *const ping[] = { "PING" };
	relay_redis_backend *b;
	relay_redis_reply *r = NULL;
	size_t i;
	int rc;

	if (!uri || (!streams && nstreams) || !errbuf || size == 0)
		return RELAY_EINVAL;
	if (relay_redis_open(&b, uri, opts, NULL))
		return 0;  /* the caller's own open reports it */
	/* One PING: a seed that cannot be reached passes it on to the next
	 * (redis_async.c), so a dead first seed does not skip the check. */
	rc = relay_redis_sync_command(b, &r, 1, ping, NULL);
	relay_redis_reply_free(r);
	if (rc == 0 && relay__redis_cluster_mode(b) == 1) {
		for (i = 0; rc == 0 && i < nstreams; i++)
			rc = relay__redis_stream_slot_check(streams[i], group,
							    errbuf, size);
	} else {
		rc = 0;
	}
	relay_redis_free(b);
	return rc;
}
