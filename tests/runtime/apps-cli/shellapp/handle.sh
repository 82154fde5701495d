#!/bin/sh
# One script, three handlers (RELAY_HANDLER says which).
case "$RELAY_HANDLER" in
greet)
	echo "$GREETING from $(pwd)"
	cat
	echo
	echo "to stderr" >&2
	;;
fail)
	echo "failing" >&2
	exit 3
	;;
slow)
	exec sleep 30
	;;
esac
