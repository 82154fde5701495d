#!/bin/sh
# check-headers.sh SRCROOT CC CXX [GENINC] - every public header compiles on
# its own as C99 -pedantic and as C++ (doc/api-stability.md), GENINC's
# generated ones (relay/version.h) too. TAP output.
set -u
root=$1 cc=$2 cxx=$3 gen=${4:-}
inc="-I$root/include ${gen:+-I$gen }$(pkg-config --cflags jansson 2>/dev/null)"
headers=$( (cd "$root/include" && find relay -name '*.h'
	[ -n "$gen" ] && cd "$gen" && find relay -name '*.h') | sort)
n=0 fail=0
echo "TAP version 13"
echo "1..$(($(echo "$headers" | wc -l) * 2))"
for h in $headers; do
	n=$((n + 1))
	if printf '#include <%s>\n#include <%s>\nint relay_check_(void);\n' \
		"$h" "$h" | $cc -std=c99 -pedantic -Wall -Wextra -Werror \
		$inc -fsyntax-only -x c - 2>/tmp/hdr.$$; then
		echo "ok $n - $h as C99"
	else
		echo "not ok $n - $h as C99"; sed 's/^/# /' /tmp/hdr.$$
		fail=1
	fi
	n=$((n + 1))
	if printf '#include <%s>\nint relay_check_();\n' "$h" |
		$cxx -std=c++11 -pedantic -Wall -Wextra -Werror $inc \
		-fsyntax-only -x c++ - 2>/tmp/hdr.$$; then
		echo "ok $n - $h as C++"
	else
		echo "not ok $n - $h as C++"; sed 's/^/# /' /tmp/hdr.$$
		fail=1
	fi
done
rm -f /tmp/hdr.$$
exit $fail
