#!/bin/sh
# check-install.sh - install the build into a temporary DESTDIR, check the
# layout, then build and run an out-of-tree program against the installed
# package using only `pkg-config --cflags --libs librelay`. TAP output.
#
# Arguments (from tests/install/meson.build):
#   BUILD_ROOT CC VERSION SOVERSION SANITIZE CONSUMER_C
# and the install directories in the environment: RELAY_PREFIX,
# RELAY_BINDIR, RELAY_SBINDIR, RELAY_LIBDIR, RELAY_INCLUDEDIR,
# RELAY_LIBEXECDIR, RELAY_DATADIR, RELAY_MANDIR, RELAY_MAN (1 when man
# pages are built), RELAY_SOURCE_ROOT. Exit 77 (skip) without meson or
# pkg-config.
set -u
build=$1 cc=$2 version=$3 soversion=$4 sanitize=$5 consumer=$6

skip() { echo "1..0 # SKIP $*"; exit 77; }
command -v pkg-config >/dev/null 2>&1 || skip "pkg-config not found"
meson=${MESON:-meson}
command -v "$meson" >/dev/null 2>&1 || skip "meson not found"

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
dest=$tmp/dest
n=0 fail=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); echo "not ok $n - $*"; fail=1; }
abs() { case $1 in /*) echo "$1" ;; *) echo "$RELAY_PREFIX/$1" ;; esac; }

echo "TAP version 13"
if "$meson" install -C "$build" --destdir "$dest" --no-rebuild \
	>"$tmp/install.log" 2>&1; then
	ok "meson install --destdir"
else
	notok "meson install --destdir"
	sed 's/^/# /' "$tmp/install.log"
	echo "1..$n"
	exit 1
fi

# The layout the package promises (issue 8, doc/api-stability.md).
bindir=$dest$(abs "$RELAY_BINDIR")
sbindir=$dest$(abs "$RELAY_SBINDIR")
libdir=$dest$(abs "$RELAY_LIBDIR")
incdir=$dest$(abs "$RELAY_INCLUDEDIR")
libexecdir=$dest$(abs "$RELAY_LIBEXECDIR")
datadir=$dest$(abs "$RELAY_DATADIR")
mandir=$dest$(abs "$RELAY_MANDIR")
files="$bindir/relayctl $sbindir/relayd
$libdir/librelay.so.$soversion $libdir/librelay.so
$incdir/relay/relay.h $incdir/relay/sys/runtime.h $incdir/relay/sys/redis.h
$libdir/pkgconfig/librelay.pc $libdir/pkgconfig/librelay-ev.pc
$incdir/relay/version.h
$libexecdir/relay/relay-bootstrap.py $libexecdir/relay/relay-bootstrap.js
$libexecdir/relay/relay_warm_server.py $libexecdir/relay/relay-warm-exec
$libexecdir/relay/relay-warm-slot.so
$dest$RELAY_PREFIX/lib/systemd/system/relayd.service
$dest$RELAY_PREFIX/lib/sysusers.d/relay.conf
$datadir/bash-completion/completions/relayctl
$datadir/relay/relay-alerts.rules.yml $datadir/relay/relay-dashboard.json"
if [ "$RELAY_MAN" = 1 ]; then
	files="$files $mandir/man1/relayctl.1 $mandir/man8/relayd.8
$mandir/man5/relay-template.5 $mandir/man3/librelay.3"
fi
for f in $files; do
	if [ -e "$f" ]; then ok "installed ${f#"$dest"}"
	else notok "installed ${f#"$dest"}"; fi
done
for h in "$(dirname "$0")"/../../include/relay/*.h; do
	if [ -f "$incdir/relay/$(basename "$h")" ]; then :
	else notok "header $(basename "$h") not installed"; fi
done
if grep -q "^ExecStart=$(abs "$RELAY_SBINDIR")/relayd\$" \
	"$dest$RELAY_PREFIX/lib/systemd/system/relayd.service"; then
	ok "relayd.service runs the installed relayd"
else
	notok "relayd.service runs the installed relayd"
fi

# Build against the installed package: pkg-config only. The sysroot makes
# pkg-config prefix -I and -L with the DESTDIR.
PKG_CONFIG_PATH=$libdir/pkgconfig
PKG_CONFIG_SYSROOT_DIR=$dest
export PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR
flags=$(pkg-config --cflags --libs librelay 2>"$tmp/pc.err")
if [ $? -eq 0 ]; then
	ok "pkg-config --cflags --libs librelay: $flags"
else
	notok "pkg-config --cflags --libs librelay"
	sed 's/^/# /' "$tmp/pc.err"
fi
if [ "$(pkg-config --modversion librelay)" = "$version" ]; then
	ok "pkg-config --modversion librelay is $version"
else
	notok "pkg-config --modversion librelay is $version"
fi

# Issue 41: librelay.pc requires the Redis client library the build
# really links (NEEDED of the installed library), never the other one.
needed=$(readelf -d "$libdir/librelay.so.$soversion" 2>/dev/null |
	sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
case $needed in
*libhiredict.so*) client=hiredict other=hiredis ;;
*libhiredis.so*) client=hiredis other=hiredict ;;
*) client="" other="" ;;
esac
req=$(pkg-config --print-requires-private librelay 2>&1)
if [ -n "$client" ] && printf '%s\n' "$req" | grep -q "^$client\( \|\$\)" &&
	! printf '%s\n' "$req" | grep -q "^$other\( \|\$\)"; then
	ok "librelay.pc Requires.private names $client, what the library links"
else
	notok "librelay.pc Requires.private names the linked client (${client:-none found in NEEDED})"
	printf '%s\n' "$req" | sed 's/^/# /'
fi
# The soname, the library file and doc/api-stability.md agree.
soname=$(readelf -d "$libdir/librelay.so.$soversion" 2>/dev/null |
	sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
real=$(basename "$(readlink -f "$libdir/librelay.so.$soversion")")
minpatch=${version#*.}
if [ "$soname" = "librelay.so.$soversion" ] &&
	[ "$real" = "librelay.so.$soversion.$minpatch" ]; then
	ok "soname $soname, file $real"
else
	notok "soname $soname (want librelay.so.$soversion), file $real (want librelay.so.$soversion.$minpatch)"
fi
if grep -q "^relay_soversion = '$soversion'\$" \
	"$RELAY_SOURCE_ROOT/doc/api-stability.md"; then
	ok "doc/api-stability.md shows relay_soversion = '$soversion'"
else
	notok "doc/api-stability.md shows relay_soversion = '$soversion'"
fi

# A sanitized build installs a sanitized library: the program must link
# the same runtime. That is the build's choice, not a pkg-config flag.
san=""
[ "$sanitize" != none ] && san="-fsanitize=$sanitize"
# shellcheck disable=SC2086
if $cc -std=c99 -pedantic -Wall -Wextra -Werror $san -o "$tmp/consumer" \
	"$consumer" $flags >"$tmp/cc.log" 2>&1; then
	ok "consumer.c compiles as C99 and links against the installed library"
else
	notok "consumer.c compiles as C99 and links against the installed library"
	sed 's/^/# /' "$tmp/cc.log"
fi
if [ -x "$tmp/consumer" ] && LD_LIBRARY_PATH=$libdir "$tmp/consumer" \
	"$version" >"$tmp/run.log" 2>&1; then
	ok "consumer runs against the installed library"
else
	notok "consumer runs against the installed library"
	sed 's/^/# /' "$tmp/run.log" 2>/dev/null
fi
# It must have loaded the installed copy, not the build tree's.
if [ -x "$tmp/consumer" ] && LD_LIBRARY_PATH=$libdir ldd "$tmp/consumer" |
	grep -q "librelay.so.$soversion => $libdir/"; then
	ok "the consumer resolves librelay.so.$soversion in DESTDIR"
else
	notok "the consumer resolves librelay.so.$soversion in DESTDIR"
fi
# The embedding examples build the same way, and match.c works from the
# installed library.
for ex in match custom-backend; do
	# shellcheck disable=SC2086
	if $cc -std=c99 -pedantic -Wall -Wextra -Werror $san \
		-o "$tmp/$ex" "$RELAY_SOURCE_ROOT/doc/examples/$ex.c" $flags \
		>"$tmp/cc.log" 2>&1; then
		ok "doc/examples/$ex.c builds against the installed package"
	else
		notok "doc/examples/$ex.c builds against the installed package"
		sed 's/^/# /' "$tmp/cc.log"
	fi
done
# The compile-time version (relay/version.h) is the package's, and the
# library loaded at run time says the same.
num=$(echo "$version" | awk -F. '{ print $1 * 1000000 + $2 * 1000 + $3 }')
cat >"$tmp/vnum.c" <<EOF2
#include <stdio.h>
#include <string.h>
#include <relay/relay.h>
#if RELAY_VERSION_NUM != $num
#error "RELAY_VERSION_NUM is not $num"
#endif
int main(void)
{
	printf("%s %d\\n", RELAY_VERSION, RELAY_VERSION_NUM);
	return strcmp(RELAY_VERSION, "$version") != 0 ||
	       strcmp(relay_version(), RELAY_VERSION) != 0;
}
EOF2
# shellcheck disable=SC2086
if $cc -std=c99 -pedantic -Wall -Wextra -Werror $san -o "$tmp/vnum" \
	"$tmp/vnum.c" $flags >"$tmp/cc.log" 2>&1 &&
	LD_LIBRARY_PATH=$libdir "$tmp/vnum" >"$tmp/run.log" 2>&1; then
	ok "RELAY_VERSION_NUM $num and RELAY_VERSION $version match the library"
else
	notok "RELAY_VERSION_NUM $num and RELAY_VERSION $version match the library"
	sed 's/^/# /' "$tmp/cc.log" "$tmp/run.log" 2>/dev/null
fi
# librelay-ev.pc: an engine on the host's libev loop builds with it alone.
evflags=$(pkg-config --cflags --libs librelay-ev 2>"$tmp/pc.err")
# shellcheck disable=SC2086
if [ $? -eq 0 ] && $cc -std=c99 -Wall -Werror $san -o "$tmp/engine" \
	"$RELAY_SOURCE_ROOT/doc/examples/engine.c" $evflags \
	>"$tmp/cc.log" 2>&1; then
	ok "doc/examples/engine.c builds with pkg-config librelay-ev: $evflags"
else
	notok "doc/examples/engine.c builds with pkg-config librelay-ev"
	sed 's/^/# /' "$tmp/pc.err" "$tmp/cc.log"
fi
got=$(echo '{"type":"invoice.paid","invoice":{"id":"inv_1","amount":5}}' |
	LD_LIBRARY_PATH=$libdir "$tmp/match" \
	"$RELAY_SOURCE_ROOT/doc/examples/apps" 2>&1)
if [ "$got" = "billing/invoices.paid.handle" ]; then
	ok "installed match example: $got"
else
	notok "installed match example: $got"
fi

# relayd and relayctl are embedders too: linked against librelay.so.N
# (in the build tree and once installed), and the installed ones find the
# installed library through their $ORIGIN-relative RPATH alone, no
# LD_LIBRARY_PATH, wherever the tree is unpacked.
for prog in "$build/relayd/relayd" "$build/relayctl/relayctl"; do
	if ldd "$prog" 2>&1 | grep -q "librelay.so.$soversion => $build/"; then
		ok "${prog#"$build/"} links the build tree's librelay.so.$soversion"
	else
		notok "${prog#"$build/"} links the build tree's librelay.so.$soversion"
		ldd "$prog" 2>&1 | sed 's/^/# /'
	fi
done
for prog in "$bindir/relayctl" "$sbindir/relayd"; do
	name=$(basename "$prog")
	got=$(env -u LD_LIBRARY_PATH ldd "$prog" 2>/dev/null |
		sed -n "s|^[[:space:]]*librelay.so.$soversion => \([^ ]*\) .*|\1|p")
	if [ -n "$got" ] && [ "$(readlink -f "$(dirname "$got")")" = \
		"$(readlink -f "$libdir")" ]; then
		ok "installed $name resolves librelay.so.$soversion in DESTDIR by its RPATH"
	else
		notok "installed $name resolves librelay.so.$soversion in DESTDIR by its RPATH"
		env -u LD_LIBRARY_PATH ldd "$prog" 2>&1 | sed 's/^/# /'
	fi
	# The first line (relayd's second lists the build's features).
	out=$(env -u LD_LIBRARY_PATH "$prog" --version 2>&1 | head -n 1)
	if [ "$out" = "$name $version" ]; then
		ok "installed $name --version: $out"
	else
		notok "installed $name --version: $out"
	fi
done
echo "1..$n"
exit $fail
