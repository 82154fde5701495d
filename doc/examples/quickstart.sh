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
#
# Environment: RELAY_QUICKSTART_BUILD (default: build-quickstart, under the
# source tree), RELAY_SKIP_INSTALL=1 to never call apt-get.
set -euo pipefail

src=$(cd "$(dirname "$0")/../.." && pwd)
build=${RELAY_QUICKSTART_BUILD:-$src/build-quickstart}
apps=$src/doc/examples/apps
relayctl=$build/relayctl/relayctl

packages=(gcc meson ninja-build pkg-config libhiredis-dev libjansson-dev
	libfyaml-dev libev-dev python3)

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
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
	if [ ! -f "$build/build.ninja" ]; then
		run meson setup "$build" "$src" -Dbuildtype=release -Dtests=false \
			>/dev/null
	fi
	run ninja -C "$build" -j "$(nproc)" relayctl/relayctl >/dev/null
	echo "built $relayctl"
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
	say "done"
	echo "Next: doc/templates.md (template keys), doc/patterns.md (patterns)."
}

main "$@"
