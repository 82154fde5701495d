#!/usr/bin/env bash
# quickstart.sh - build Relay-C and try the example apps, on Debian 12.
#
#   sudo doc/examples/quickstart.sh        # installs missing packages
#   doc/examples/quickstart.sh             # as a user, if they are there
#
# Steps, each a function below so later steps (starting redis-server and
# relayd, publishing events, watching the DLQ) slot in after them:
#   1. install_packages  apt-get install what the build needs (root only)
#   2. build             meson setup + ninja into $RELAY_QUICKSTART_BUILD
#   3. validate          relayctl validate --apps doc/examples/apps
#   4. match             relayctl match for a few sample events
#   5. run_handlers      run two example handlers the way Relay runs them
#   6-12. run_relayd     the real thing: a private redis-server (unix socket
#                        in a temp dir) and relayd on doc/examples/apps;
#                        publish matching, unmatched, malformed and failing
#                        events; show handler output, /metrics, and the
#                        operator's view through relayctl (health, app ls,
#                        stats, dlq ls/inspect/rm); shut everything down
#
# Environment: RELAY_QUICKSTART_BUILD (default: build-quickstart, under the
# source tree), RELAY_SKIP_INSTALL=1 to never call apt-get,
# RELAY_QUICKSTART_KEEP=1 to keep the readable copy (see below), NO_COLOR
# to never colour the headings (they are coloured only on a terminal).
set -euo pipefail

src=$(cd "$(dirname "$0")/../.." && pwd)

# Under root the handlers run as the sandbox user "nobody" (uid 65534),
# which must read the app directories and the warm helpers in the build
# tree. From a checkout it cannot read (a clone under root's home, mode
# 0700), the quickstart moves to a readable copy of the source in a
# temporary directory, builds there, and removes it afterwards
# (RELAY_QUICKSTART_KEEP=1 keeps it).
if [ "$(id -u)" = 0 ] && [ -z "${RELAY_QUICKSTART_COPY_OF:-}" ] &&
	command -v setpriv >/dev/null &&
	! setpriv --reuid=65534 --regid=65534 --clear-groups \
		test -r "$src/doc/examples/apps/notify/alerts.js" 2>/dev/null
then
	copy=$(mktemp -d /tmp/relay-quickstart-src.XXXXXX)
	chmod 755 "$copy"
	echo "quickstart.sh: the sandbox user (uid 65534) cannot read $src;" \
		"running from a readable copy in $copy"
	tar -C "$src" --exclude='./build*' --exclude='./.git' -cf - . |
		tar -C "$copy" -xf -
	chmod -R a+rX "$copy"
	set +e
	RELAY_QUICKSTART_COPY_OF=$src "$copy/doc/examples/quickstart.sh" "$@"
	rc=$?
	set -e
	if [ "${RELAY_QUICKSTART_KEEP:-0}" = 1 ]; then
		echo "quickstart.sh: kept the copy in $copy"
	else
		rm -rf "$copy"
	fi
	exit "$rc"
fi

build=${RELAY_QUICKSTART_BUILD:-$src/build-quickstart}
apps=$src/doc/examples/apps
relayctl=$build/relayctl/relayctl
relayd=$build/relayd/relayd

packages=(gcc meson ninja-build pkg-config libhiredis-dev libjansson-dev
	libfyaml-dev libev-dev libmicrohttpd-dev python3 redis-server bubblewrap
	tzdata)

# Bold headings only on a terminal (a log file gets plain text), and
# never with NO_COLOR set (https://no-color.org).
if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then
	bold=$'\033[1m' plain=$'\033[0m'
else
	bold= plain=
fi
say() { printf '\n%s== %s%s\n' "$bold" "$*" "$plain"; }
run() { printf '$ %s\n' "$*"; "$@"; }

install_packages() {
	local missing=() p
	for p in "${packages[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
			grep -q 'install ok installed' || missing+=("$p")
	done
	if [ ${#missing[@]} -eq 0 ]; then
		echo "all build dependencies are installed"
		return 0
	fi
	if [ "${RELAY_SKIP_INSTALL:-0}" = 1 ] || [ "$(id -u)" != 0 ]; then
		echo "missing packages: ${missing[*]}" >&2
		echo "run as root, or: apt-get install ${missing[*]}" >&2
		exit 1
	fi
	echo "installing: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" \
		>/dev/null
}

build() {
	# test_hooks: lets the demo below compress the retry schedule with
	# RELAY_TEST_TIME_SCALE (a demo build; production builds leave it off).
	if [ ! -f "$build/build.ninja" ]; then
		run meson setup "$build" "$src" -Dbuildtype=release -Dtests=false \
			-Dtest_hooks=true >/dev/null
	else
		meson configure "$build" -Dtest_hooks=true >/dev/null
	fi
	# The warm path's helpers too (relay-warm-slot.so for python3 apps,
	# relay-warm-exec for exec apps): without them every invocation
	# starts cold. relayd finds them in this build tree.
	run ninja -C "$build" -j "$(nproc)" relayctl/relayctl relayd/relayd \
		sandbox/relay-warm-slot.so sandbox/relay-warm-exec >/dev/null
	echo "built $relayctl and $relayd (and the warm sandbox helpers)"
}

validate() {
	run "$relayctl" validate --apps "$apps" --verbose
	echo "exit status $? (0 = every template is valid)"

	# A broken copy shows what problems look like.
	local bad
	bad=$(mktemp -d)
	mkdir "$bad/shop"
	cat >"$bad/shop/template.yaml" <<-'EOF'
	runtime: python3
	events:
	  - handler: orders.created
	    pattern:
	      status: COMPLETED
	    timeout: 10m
	    retires: 3
	EOF
	set +e
	run "$relayctl" validate --apps "$bad"
	echo "exit status $? (1 = problems, one line each on stderr)"
	set -e
	rm -rf "$bad"
}

match() {
	local name event
	while IFS='|' read -r name event; do
		[ -n "$name" ] || continue
		echo
		echo "# $name"
		printf "\$ echo '%s' | relayctl match --apps %s -\n" "$event" \
			"${apps#"$src"/}"
		out=$(printf '%s' "$event" | "$relayctl" match --apps "$apps" -)
		if [ -n "$out" ]; then
			printf '%s\n' "$out"
		else
			echo "(no rule matches: the event would be acknowledged)"
		fi
	done <<-EOF
	paid invoice, large: two billing rules|{"type":"invoice.paid","invoice":{"id":"inv_1001","amount":12000},"customer":{"email":"ann@example.org"}}
	paid invoice, refunded: nothing|{"type":"invoice.paid","invoice":{"id":"inv_1002","amount":40,"refunded_at":"2026-01-02T00:00:00Z"}}
	staff user updated: audit|{"table_name":"users","event_name":"UPDATE","new_image":{"email":"bob@example.com"}}
	login just now: audit (now()-5m)|{"event_name":"LOGIN","at":"$(date -u +%Y-%m-%dT%H:%M:%SZ)"}
	login last year: nothing|{"event_name":"LOGIN","at":"2025-01-01T00:00:00Z"}
	service degraded 3 times: notify|{"service":"db","result":{"status":"DEGRADED","attempts":3}}
	unrelated event: nothing|{"event_name":"INSERT","table_name":"orders"}
	EOF
}

run_handlers() {
	# What the python3 runtime does: import the module from the app
	# directory, call the function with the decoded event. relayd does
	# this in a sandbox with a clean environment and a timeout.
	local boot='import importlib, json, sys
mod, fn = sys.argv[1].rsplit(".", 1)
sys.path.insert(0, ".")
getattr(importlib.import_module(mod), fn)(json.load(sys.stdin))'
	echo '{"invoice":{"id":"inv_1003","amount":250}}' |
		(cd "$apps/billing" && env -i PATH="$PATH" CURRENCY=EUR \
			PYTHONDONTWRITEBYTECODE=1 \
			RELAY_HANDLER=invoices.paid.handle \
			python3 -c "$boot" invoices.paid.handle)
	echo "exit status $?"
	set +e
	echo '{"invoice":{"id":"inv_1001","amount":12000}}' |
		(cd "$apps/billing" && env -i PATH="$PATH" CURRENCY=EUR \
			PYTHONDONTWRITEBYTECODE=1 \
			RELAY_HANDLER=invoices.paid.handle \
			python3 -c "$boot" invoices.paid.handle)
	echo "exit status $? (a failure: Relay retries it, then dead-letters it)"
	set -e
	echo '{"table_name":"users","event_name":"DELETE"}' |
		(cd "$apps/audit" && env -i PATH="$PATH" AUDIT_LABEL=production \
			RELAY_HANDLER=user-change ./bin/audit.sh)
}

# ---- 6. the real thing: redis-server + relayd on the example apps --------
#
# A private redis-server (unix socket in a temp dir, no persistence) and
# relayd on doc/examples/apps. The quickstart build has test hooks on so
# RELAY_TEST_TIME_SCALE=60 can compress the fixed retry schedule (1m, 2m
# becomes 1 s, 2 s) and the failing invoice reaches the dead-letter queue in
# seconds; a production build ignores the variable.

demo_dir=
redis_pid=
relayd_pid=

demo_cleanup() {
	[ -n "$relayd_pid" ] && kill -9 "$relayd_pid" 2>/dev/null || true
	[ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null || true
	[ -n "$demo_dir" ] && rm -rf "$demo_dir"
	return 0
}

rcli() { command redis-cli -s "$demo_dir/redis.sock" "$@"; }

wait_until() { # SECONDS DESCRIPTION COMMAND...
	local deadline=$((SECONDS + $1)) what=$2
	shift 2
	until "$@" >/dev/null 2>&1; do
		if [ "$SECONDS" -ge "$deadline" ]; then
			echo "timed out waiting for $what" >&2
			return 1
		fi
		sleep 0.2
	done
}

pel_empty() { [ "$(rcli XPENDING events relay | head -1)" = 0 ]; }
dlq_has() { [ "$(rcli XLEN relay:events:dlq)" -ge "$1" ]; }
relayd_ready() { ctl health; }

# relayctl reads the same variables as relayd.
ctl() {
	env REDIS_URI="unix://$demo_dir/redis.sock" REDIS_STREAM=events \
		REDIS_GROUP=relay RELAY_APPS_DIR="$apps" \
		RELAY_RUN_DIR="$demo_dir/run" RELAY_STATE_DIR="$demo_dir/state" \
		"$relayctl" "$@"
}

metrics_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start_services() {
	demo_dir=$(mktemp -d /tmp/relay-quickstart.XXXXXX)
	trap demo_cleanup EXIT
	run redis-server --port 0 --unixsocket "$demo_dir/redis.sock" \
		--unixsocketperm 700 --save '' --appendonly no \
		--dir "$demo_dir" --daemonize no --loglevel warning \
		>"$demo_dir/redis.log" 2>&1 &
	redis_pid=$!
	wait_until 20 "redis-server" rcli PING

	sandbox=none
	if command -v bwrap >/dev/null &&
	   bwrap --ro-bind / / --unshare-all true 2>/dev/null; then
		sandbox=bwrap
	else
		echo "(bubblewrap cannot run here: RELAY_SANDBOX=none," \
			"handlers run as plain processes)"
	fi
	# As root under bwrap relayd refuses to run handlers as the shared
	# nobody unless told: a demo accepts it (a host would set
	# RELAY_SANDBOX_UIDS or RELAY_SANDBOX_USER=relay-sandbox instead;
	# doc/sandbox.md, "Host user").
	export RELAY_SANDBOX_USER="${RELAY_SANDBOX_USER:-nobody}"
	port=$(metrics_port)
	# meson's -Dmetrics=auto builds GET /metrics only with libmicrohttpd;
	# without it relayd refuses METRICS_ADDR, so it is left unset.
	metrics_env="METRICS_ADDR=127.0.0.1:$port"
	if ! pkg-config --exists libmicrohttpd 2>/dev/null; then
		metrics_env=""
		port=""
	fi
	echo "\$ REDIS_URI=unix://\$tmp/redis.sock REDIS_STREAM=events" \
		"REDIS_GROUP=relay RELAY_APPS_DIR=${apps#"$src"/}" \
		"RELAY_SANDBOX=$sandbox ${port:+$metrics_env }relayd &"
	env REDIS_URI="unix://$demo_dir/redis.sock" REDIS_STREAM=events \
		REDIS_GROUP=relay REDIS_CONSUMER=quickstart \
		RELAY_APPS_DIR="$apps" RELAY_RUN_DIR="$demo_dir/run" \
		RELAY_STATE_DIR="$demo_dir/state" RELAY_SANDBOX=$sandbox \
		${metrics_env:+"$metrics_env"} RELAY_TEST_TIME_SCALE=60 \
		"$relayd" >"$demo_dir/relayd.log" 2>&1 &
	relayd_pid=$!
	wait_until 30 "relayd to be ready" relayd_ready
	sed 's/^/  | /' "$demo_dir/relayd.log"
}

xadd() { # EVENT-TEXT
	printf "\$ redis-cli XADD events '*' event '%s'\n" "$1"
	rcli XADD events '*' event "$1"
}

publish() {
	echo "# a paid invoice: billing books it"
	xadd '{"type":"invoice.paid","invoice":{"id":"inv_2001","amount":250}}'
	echo "# a staff user change: the audit app (exec) logs it"
	xadd '{"table_name":"users","event_name":"UPDATE","new_image":{"email":"bob@example.com"}}'
	echo "# matches no rule: acknowledged, nothing runs"
	xadd '{"event_name":"INSERT","table_name":"orders"}'
	echo "# not JSON: dead-lettered at once, no handler"
	xadd 'this is not json'
	echo "# a large invoice: the review runs; booking fails (exit 3),"
	echo "# is retried twice (retries: 2) and then dead-lettered"
	xadd '{"type":"invoice.paid","invoice":{"id":"inv_2002","amount":12000},"customer":{"email":"ann@example.org"}}'
	wait_until 60 "the DLQ entries" dlq_has 2
	wait_until 60 "every message to be acknowledged" pel_empty
}

show_results() {
	say "8. what relayd logged (handler output is prefixed per handler)"
	echo "# billing's daily-report schedule (06:00 Europe/Berlin) is new"
	echo "# to this relayd: its last occurrence, before the schedule was"
	echo "# first seen, is not caught up (it runs at the next 06:00)"
	grep -E 'stdout:|stderr:|RELAY-ENG0[456]|RELAYD-SCHED0[18]' "$demo_dir/relayd.log" |
		sed -E 's/^[0-9TZ:.-]+ //' | cut -c1-160
	say "9. metrics (GET /metrics)"
	if [ -z "$port" ]; then
		echo "(relayd built without libmicrohttpd: no GET /metrics;" \
			"relayctl stats below has the counters)"
	else
	python3 -c 'import sys, urllib.request
print(urllib.request.urlopen(sys.argv[1]).read().decode())' \
		"http://127.0.0.1:$port/metrics" |
		grep -E '^relay_(events|handler_(success|failure)|retries|dlq|redis_up|pending_entries|schedule_occurrences_published)' |
		grep -v _bucket
	fi
	say "10. the operator's view: relayctl (same environment as relayd)"
	echo "\$ relayctl health"
	ctl health
	echo "\$ relayctl app ls"
	ctl app ls
	echo "\$ relayctl stats"
	ctl stats
	say "11. the dead-letter queue (relay:events:dlq)"
	echo "\$ relayctl dlq ls"
	ctl dlq ls
	local id
	id=$(ctl dlq ls --app billing --json |
		python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["id"])')
	echo "\$ relayctl dlq inspect $id"
	ctl dlq inspect "$id"
	echo "# the handler still fails for this invoice, so a replay would"
	echo "# fail and keep the entry; once the handler is fixed:"
	echo "#   relayctl dlq replay $id"
	echo "\$ relayctl dlq rm $id"
	ctl dlq rm "$id"
	echo
	echo "# every message was acknowledged: the PEL is empty"
	echo "\$ redis-cli XPENDING events relay"
	rcli --no-raw XPENDING events relay | head -1
}

stop_services() {
	say "12. shut down"
	echo "\$ kill -TERM relayd   # graceful: running handlers finish"
	kill -TERM "$relayd_pid"
	wait "$relayd_pid" && echo "relayd exited 0"
	relayd_pid=
	rcli SHUTDOWN NOSAVE >/dev/null 2>&1 || true
	wait "$redis_pid" 2>/dev/null || true
	redis_pid=
	echo "redis-server stopped; $demo_dir removed"
}

run_relayd() {
	if ! command -v redis-server >/dev/null ||
	   ! command -v redis-cli >/dev/null; then
		echo "redis-server/redis-cli not installed: skipping the relayd" \
			"demo (apt-get install redis-server)"
		return 0
	fi
	say "6. start a private redis-server and relayd"
	start_services
	say "7. publish events"
	publish
	show_results
	stop_services
}

main() {
	say "1. build dependencies"
	install_packages
	say "2. build"
	build
	say "3. validate the example apps"
	validate
	say "4. match sample events (apps in name order, rules in order)"
	match
	say "5. run handlers by hand"
	run_handlers
	run_relayd
	say "done"
	echo "Next: doc/templates.md (template keys), doc/patterns.md (patterns)."
}

main "$@"
