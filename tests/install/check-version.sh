#!/bin/sh
# check-version.sh VERSION RELAYCTL RELAYD PROBE - relayctl --version,
# relayd --version and relay_version() all say the meson project version.
set -u
version=$1 relayctl=$2 relayd=$3 probe=$4
n=0 fail=0
echo "TAP version 13"
echo "1..3"
for pair in "relayctl|$relayctl --version|relayctl $version" \
	"relayd|$relayd --version|relayd $version" \
	"relay_version()|$probe|$version"; do
	name=${pair%%|*} rest=${pair#*|}
	cmd=${rest%%|*} want=${rest#*|}
	n=$((n + 1))
	got=$($cmd 2>&1 | head -n 1)
	if [ "$got" = "$want" ]; then
		echo "ok $n - $name: $got"
	else
		echo "not ok $n - $name: got \"$got\", want \"$want\""
		fail=1
	fi
done
exit $fail
