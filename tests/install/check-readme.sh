#!/bin/sh
# check-readme.sh README MESON_OPTIONS - README.md's Install section names
# each optional package with the meson option it feeds, and every
# feature option of meson_options.txt appears there (issue 41: on a stock
# box TLS and OTLP were silently off). TAP output.
set -u
readme=$1 opts=$2
n=0 fail=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); echo "not ok $n - $*"; fail=1; }
echo "TAP version 13"
for pair in libhiredict-dev:-Dtls libssl-dev:-Dtls \
	libcurl4-openssl-dev:-Dotlp libmicrohttpd-dev:-Dmetrics \
	bookworm-backports:-Dtls; do
	pkg=${pair%%:*} opt=${pair#*:}
	if grep -F -- "$pkg" "$readme" | grep -qF -- "$opt"; then
		ok "README names $pkg with $opt"
	else
		notok "README names $pkg with $opt"
	fi
done
for o in $(sed -n "s/^option('\([a-z_]*\)', type: 'feature'.*/\1/p" "$opts"); do
	[ "$o" = node_warm ] && continue  # a run-time package (nodejs)
	if grep -qF -- "-D$o" "$readme"; then ok "README mentions -D$o"
	else notok "README mentions the feature option -D$o"; fi
done
echo "1..$n"
exit $fail
