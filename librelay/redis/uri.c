/*
 * uri.c - the public face of REDIS_URI parsing (relay_redis_uri_check(),
 * relay_redis_uri_redact()): programs validate and print a URI with the
 * same code relay_redis_open() reads it with (redis.c).
 */
#include "backend.h"
#include "common.h"

int relay_redis_uri_check(const char *uri, relay_redis_uri_kind *kind,
			  relay_error *err)
{
	relay__redis_uri u;
	int rc = relay__redis_uri_parse(&u, uri, err);

	if (rc)
		return rc;
	if (kind)
		*kind = u.memory ? RELAY_REDIS_URI_MEMORY
			: u.path ? RELAY_REDIS_URI_UNIX
			: u.master ? RELAY_REDIS_URI_SENTINEL
			: RELAY_REDIS_URI_TCP;
	relay__redis_uri_clear(&u);
	return 0;
}

char *relay_redis_uri_redact(const char *uri, char *buf, size_t size)
{
	return relay__redis_uri_redact(uri, buf, size);
}
