#!/bin/sh
# tls-bench.sh BENCH_PIPELINE [EVENTS] - bench-pipeline (the whole engine
# lifecycle per event, default limits) against one local redis-server,
# three ways in the same run: rediss:// on loopback, redis:// on
# loopback, and the unix socket; prints each rate and TLS/TCP. Needs a
# build with TLS (meson -Dtls), openssl and a redis-server with TLS.
# Certificates are made in a temp dir; ports chosen at run time.
set -eu
bench=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
events=${2:-50000}
dir=$(mktemp -d /tmp/relay-tls-bench.XXXXXX)
trap 'kill "$pid" 2>/dev/null; rm -rf "$dir"' EXIT
cd "$dir"
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem \
	-days 1 -subj /CN=bench-ca 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout s.key -out s.csr \
	-subj /CN=localhost 2>/dev/null
echo 'subjectAltName=IP:127.0.0.1' >s.ext
openssl x509 -req -in s.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
	-days 1 -extfile s.ext -out s.pem 2>/dev/null
port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
tp=$(port)
pp=$(port)
redis-server --port "$pp" --bind 127.0.0.1 --tls-port "$tp" \
	--tls-cert-file s.pem --tls-key-file s.key --tls-ca-cert-file ca.pem \
	--tls-auth-clients no --unixsocket "$dir/r.sock" --save "" \
	--appendonly no --dir "$dir" >/dev/null 2>&1 &
pid=$!
i=0
until redis-cli -s "$dir/r.sock" ping >/dev/null 2>&1; do
	i=$((i + 1)); [ $i -lt 100 ] || exit 77; sleep 0.1
done
run() {
	redis-cli -s "$dir/r.sock" flushall >/dev/null
	RELAY_BENCH_QUICK=1 RELAY_BENCH_SOCK="$dir/r.sock" "$@" "$bench" \
		"$events" | sed -n 's/.*: \([0-9]*\) events\/s.*/\1/p'
}
tls=$(run env RELAY_BENCH_URI="rediss://127.0.0.1:$tp" \
	REDIS_TLS_CA_FILE="$dir/ca.pem")
tcp=$(run env RELAY_BENCH_URI="redis://127.0.0.1:$pp")
unix=$(run env)
echo "tls-bench: $events events, default limits: rediss:// $tls/s," \
	"redis:// (TCP) $tcp/s, unix socket $unix/s;" \
	"TLS costs $(python3 -c "print(f'{$tcp / $tls:.2f}')")x TCP"
