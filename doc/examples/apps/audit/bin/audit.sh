#!/bin/sh
# audit.sh - append one audit line per event.
#
# Relay runs this with the event JSON on stdin and RELAY_HANDLER set to the
# rule's handler name. Exit 0 = success.
set -eu
event=$(cat)
if [ -z "$event" ]; then
	echo "audit: empty event" >&2
	exit 2
fi
printf '[%s] %s: %s\n' "${AUDIT_LABEL:-audit}" "${RELAY_HANDLER:-?}" "$event"
