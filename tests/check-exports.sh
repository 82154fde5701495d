#!/bin/sh
# check-exports.sh LIB - the shared library exports only relay_* symbols
# (doc/api-stability.md). Prints each offending symbol; exit 1 if any.
set -eu
lib=$1
bad=$(nm -D --defined-only "$lib" | awk '{print $NF}' |
	grep -v -E '^(relay_[a-z0-9_]+|_init|_fini|_edata|_end|__bss_start)$' || true)
count=$(nm -D --defined-only "$lib" | awk '{print $NF}' | grep -c '^relay_' || true)
echo "TAP version 13"
echo "1..2"
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
[ -z "$bad" ] && [ "$count" -gt 0 ]
