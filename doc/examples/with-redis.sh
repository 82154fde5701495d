#!/bin/sh
# with-redis.sh - run an example against a throwaway redis-server.
#
#   with-redis.sh N -- CMD [ARGS]
#
# Starts redis-server on a unix socket in a fresh temporary directory (no
# TCP port, no persistence), runs CMD ARGS REDIS_URI ... with the literal
# argument @URI@ replaced by unix://<socket>, stops the server and removes
# the directory. Then checks CMD's standard output: exit status 0, exactly
# N lines starting "handled billing/invoices.paid.handle ", and a summary
# line saying N were published, handled, succeeded and acknowledged with
# no failures and nothing dead-lettered. Reports the result as TAP (the
# output as "# " comments, then "ok 1" or "not ok 1").
# Prints TAP "1..0 # SKIP" (and exits 0) when redis-server is absent.
set -u
n=$1
shift
[ "$1" = "--" ] && shift

if ! command -v redis-server >/dev/null 2>&1; then
	echo "1..0 # SKIP redis-server not installed"
	exit 0
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/relay-example.XXXXXX") || exit 1
cleanup() {
	pid=$(cat "$dir/redis.pid" 2>/dev/null)
	if [ -n "$pid" ]; then
		kill "$pid" 2>/dev/null
		i=0
		while kill -0 "$pid" 2>/dev/null && [ $i -lt 50 ]; do
			sleep 0.1; i=$((i + 1))
		done
	fi
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

redis-server --port 0 --unixsocket "$dir/redis.sock" --save '' \
	--appendonly no --daemonize yes --pidfile "$dir/redis.pid" \
	--dir "$dir" --logfile "$dir/redis.log" >/dev/null || {
	echo "redis-server failed to start" >&2; exit 1; }
i=0
while [ ! -S "$dir/redis.sock" ]; do
	i=$((i + 1))
	if [ $i -gt 100 ]; then
		echo "redis-server socket did not appear" >&2
		cat "$dir/redis.log" >&2
		exit 1
	fi
	sleep 0.1
done
# The pidfile may be written just after the socket appears.
while [ ! -s "$dir/redis.pid" ] && [ $i -le 100 ]; do
	sleep 0.1; i=$((i + 1))
done

# Replace @URI@ in the arguments.
uri="unix://$dir/redis.sock"
cmd=$1
shift
for a in "$@"; do
	shift
	[ "$a" = "@URI@" ] && a=$uri
	set -- "$@" "$a"
done

"$cmd" "$@" >"$dir/out"
rc=$?
# TAP: the example's output as comments, then one test point.
echo "1..1"
sed 's/^/# /' "$dir/out"
fail=0
if [ $rc -ne 0 ]; then
	echo "exit status $rc, expected 0" >&2
	fail=1
fi
got=$(grep -c '^handled billing/invoices\.paid\.handle ' "$dir/out")
if [ "$got" -ne "$n" ] || [ "$(grep -c '^handled ' "$dir/out")" -ne "$n" ]
then
	echo "expected $n handled lines, got $got" >&2
	fail=1
fi
want="summary: published $n, received $n, matched $n, handler calls $n,"
want="$want succeeded $n, failed 0, acked $n, dead-lettered 0"
if [ "$(tail -n 1 "$dir/out")" != "$want" ]; then
	echo "expected last line: $want" >&2
	fail=1
fi
if [ $fail -eq 0 ]; then
	echo "ok 1 - $n handled lines and the summary"
else
	echo "not ok 1 - see the messages above"
fi
exit $fail
