#!/bin/sh
# check-output.sh - run an example and compare what it prints.
#
#   check-output.sh EXPECTED_STATUS EXPECTED_STDOUT STDIN_FILE -- CMD [ARGS]
#
# Runs CMD with STDIN_FILE (or /dev/null for "-") as standard input and
# fails unless it exits with EXPECTED_STATUS and its standard output equals
# the file EXPECTED_STDOUT byte for byte. Prints a diff on mismatch.
set -u
status=$1 expected=$2 input=$3
shift 3
[ "$1" = "--" ] && shift
[ "$input" = "-" ] && input=/dev/null

out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT
"$@" <"$input" >"$out"
rc=$?
fail=0
if [ "$rc" -ne "$status" ]; then
	echo "exit status $rc, expected $status" >&2
	fail=1
fi
if ! diff -u "$expected" "$out" >&2; then
	echo "standard output differs from $expected" >&2
	fail=1
fi
exit $fail
