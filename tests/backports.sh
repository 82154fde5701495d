#!/bin/sh
# tests/backports.sh - make Debian 12's bookworm-backports suite available
# and install hiredict from it (TLS to Redis, meson -Dtls; doc/operations.md
# "TLS"). The suite's address is derived from the Debian source this
# machine is already configured with (its mirror or snapshot), never
# typed here. Root only; does nothing off bookworm, or when hiredict is
# installed. Exit 0 even when it cannot: the build then has no TLS (the
# tls suite skips, saying so).
set -eu
[ "$(id -u)" = 0 ] || exit 0
dpkg-query -W -f='${Status}' libhiredict-dev 2>/dev/null |
	grep -q 'install ok installed' && exit 0
. /etc/os-release 2>/dev/null || exit 0
[ "${VERSION_CODENAME:-}" = bookworm ] || exit 0
list=/etc/apt/sources.list.d/relay-bookworm-backports.sources
if [ ! -f "$list" ]; then
	uri=""
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		# The first URIs line of a stanza naming the bookworm suite.
		uri=$(awk '/^URIs:/ { u = $2 }
			/^Suites:/ && / bookworm( |$)/ && u != "" { print u; exit }
			/^$/ { u = "" }' "$f")
		[ -n "$uri" ] && break
	done
	if [ -z "$uri" ] && [ -f /etc/apt/sources.list ]; then
		uri=$(awk '$1 == "deb" && $3 == "bookworm" { print $2; exit }' \
			/etc/apt/sources.list)
	fi
	[ -n "$uri" ] || { echo "backports.sh: no Debian source found" >&2; exit 0; }
	printf 'Types: deb\nURIs: %s\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
		"$uri" >"$list"
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq || true
apt-get install -y -qq --no-install-recommends -t bookworm-backports \
	libhiredict-dev >/dev/null ||
	echo "backports.sh: libhiredict-dev not installed: no TLS" >&2
