#!/bin/sh
# check-exports.sh LIB - the shared library exports only relay_* symbols
# (doc/api-stability.md). Prints each offending symbol; exit 1 if any.
set -eu
lib=$1
bad=$(nm -D --defined-only "$lib" | awk '{print $NF}' |
	grep -v -E '^(relay_[a-z0-9_]+|_init|_fini|_edata|_end|__bss_start)$' || true)
count=$(nm -D --defined-only "$lib" | awk '{print $NF}' | grep -c '^relay_' || true)
# Public functions backend authors depend on (relay/sys/*.h): each must be
# exported, not only declared.
required="relay_redis_reply_new relay_redis_malloc relay_redis_realloc
relay_redis_reply_set_str relay_redis_reply_set_elements
relay_redis_backend_check relay_redis_reply_free relay_free
relay_set_allocator"
missing=""
for s in $required; do
	nm -D --defined-only "$lib" | awk '{print $NF}' | grep -qx "$s" ||
		missing="$missing $s"
done
echo "TAP version 13"
echo "1..3"
if [ -n "$bad" ]; then
	echo "not ok 1 - only relay_* symbols exported"
	echo "$bad" | sed 's/^/# leaked: /'
else
	echo "ok 1 - only relay_* symbols exported"
fi
if [ "$count" -gt 0 ]; then
	echo "ok 2 - $count relay_* symbols exported"
else
	echo "not ok 2 - no relay_* symbols exported"
fi
if [ -z "$missing" ]; then
	echo "ok 3 - backend allocator and reply functions exported"
else
	echo "not ok 3 - not exported:$missing"
fi
[ -z "$bad" ] && [ "$count" -gt 0 ] && [ -z "$missing" ]
