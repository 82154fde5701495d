#!/bin/sh
# test_app_run.sh RELAYCTL - black-box tests of `relayctl app run` (TAP).
# Uses bwrap when it can run here, else only the --sandbox none cases.
set -u
relayctl=$1
root=${RELAY_SOURCE_ROOT:?}
apps=$root/tests/runtime/apps-cli
export RELAY_BOOTSTRAP_DIR=$root/sandbox/bootstrap
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
failed=0

ok() { n=$((n + 1)); echo "ok $n - $1"; }
fail() { n=$((n + 1)); failed=1; echo "not ok $n - $1"; sed 's/^/# /' "$tmp/out" "$tmp/err"; }
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
# run NAME EXPECTED_RC ARGS... (stdout → $tmp/out, stderr → $tmp/err)
run() {
	name=$1 want=$2
	shift 2
	"$relayctl" app run "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
	rc=$?
	if [ "$rc" != "$want" ]; then
		echo "# $name: exit $rc, want $want"
		return 1
	fi
	return 0
}
has() { grep -qxF -- "$1" "$tmp/$2"; }
matches() { grep -qE -- "$1" "$tmp/$2"; }

echo "TAP version 13"
if "$relayctl" app run shellapp --apps "$apps" --sandbox bwrap \
	--event '{}' >/dev/null 2>&1; then
	sandboxes="none bwrap"
else
	sandboxes="none"
fi
ev='{"event_name":"INSERT"}'

for sb in $sandboxes; do
	if [ "$sb" = bwrap ]; then appdir=/app; else appdir=$apps/shellapp; fi
	if run ok 0 shellapp --apps "$apps" --sandbox "$sb" --event "$ev" &&
		has "[shellapp/greet] stdout: hello from $appdir" out &&
		has "[shellapp/greet] stdout: $ev" out &&
		has "[shellapp/greet] stderr: to stderr" err &&
		matches '^shellapp/greet ok [0-9]+ms$' out; then
		ok "$sb: matching handler runs, output forwarded, ok summary"
	else fail "$sb: ok"; fi

	if run fail 1 shellapp --apps "$apps" --sandbox "$sb" \
		--event '{"event_name":"INSERT","table_name":"users"}' &&
		matches '^shellapp/greet ok [0-9]+ms$' out &&
		has "[shellapp/fail] stderr: failing" err &&
		matches '^shellapp/fail failed exit=3 [0-9]+ms$' out &&
		[ "$(grep -c '^shellapp/' "$tmp/out")" = 2 ]; then
		ok "$sb: every match runs in order; one failure exits 1"
	else fail "$sb: failure"; fi

	if run timeout 1 shellapp --apps "$apps" --sandbox "$sb" \
		--event '{"event_name":"SLOW"}' &&
		matches '^shellapp/slow timeout [0-9]+ms$' out; then
		ok "$sb: rule timeout is enforced"
	else fail "$sb: timeout"; fi

	for lang in pyapp nodeapp; do
		word=python; [ "$lang" = nodeapp ] && word=node
		if [ "$lang" = nodeapp ] && ! [ -x /usr/bin/node ]; then
			skip "$sb: $lang" "node not installed"; continue
		fi
		if run "$lang" 0 "$lang" --apps "$apps" --sandbox "$sb" \
			--event "$ev" &&
			has "[$lang/events.created.handler] stdout: $word got INSERT" out &&
			matches "^$lang/events.created.handler ok [0-9]+ms\$" out; then
			ok "$sb: $lang runtime through the bootstrap"
		else fail "$sb: $lang"; fi
	done
done

# --warm: the same event through the warm path gives the same output.
if [ "${sandboxes#*bwrap}" != "$sandboxes" ]; then
	for lang in pyapp shellapp; do
		if run "cold-$lang" 0 "$lang" --apps "$apps" --event "$ev" &&
			grep '^\[' "$tmp/out" >"$tmp/cold" &&
			run "warm-$lang" 0 "$lang" --apps "$apps" --event "$ev" \
				--warm &&
			grep '^\[' "$tmp/out" >"$tmp/warm" &&
			[ -s "$tmp/warm" ] && cmp -s "$tmp/cold" "$tmp/warm"; then
			ok "app run --warm: $lang output identical to cold"
		else fail "--warm $lang"; fi
	done
	if run usage5 2 shellapp --apps "$apps" --sandbox none --warm
	then ok "--warm with --sandbox none: usage error"
	else fail "--warm none"; fi
fi

if run nomatch 0 shellapp --apps "$apps" --sandbox none \
	--event '{"event_name":"DELETE"}' && has "No matching handlers" out
then ok "no match: 'No matching handlers', exit 0"; else fail "no match"; fi

echo "$ev" >"$tmp/event.json"
if run file 0 shellapp --apps "$apps" --sandbox none --file "$tmp/event.json" &&
	matches '^shellapp/greet ok' out
then ok "--file PATH"; else fail "--file"; fi

if "$relayctl" app run shellapp --apps "$apps" --sandbox none \
	<"$tmp/event.json" >"$tmp/out" 2>"$tmp/err" &&
	matches '^shellapp/greet ok' out
then ok "event from stdin"; else fail "stdin"; fi

# Only app run's own --sandbox none turns the sandbox off: as root the
# variable's none is refused (tests/security/test_sec_relayctl.py), as
# another user it is ignored with a note.
if [ "$(id -u)" = 0 ]; then
	if RELAY_SANDBOX=none "$relayctl" app run shellapp --apps "$apps" \
		--event "$ev" >"$tmp/out" 2>"$tmp/err"; [ $? = 1 ] &&
		matches 'refusing RELAY_SANDBOX=none \(set in the environment\) as root' err
	then ok "RELAY_SANDBOX=none is refused as root"; else fail "RELAY_SANDBOX"; fi
else
	if RELAY_SANDBOX=none "$relayctl" app run shellapp --apps "$apps" \
		--event "$ev" >"$tmp/out" 2>"$tmp/err";
		matches 'RELAY_SANDBOX=none \(set in the environment\) ignored' err
	then ok "RELAY_SANDBOX=none is ignored"; else fail "RELAY_SANDBOX"; fi
fi

if RELAY_SANDBOX=docker "$relayctl" app run shellapp --apps "$apps" \
	--event "$ev" >"$tmp/out" 2>"$tmp/err"; [ $? = 1 ] &&
	matches 'RELAY_SANDBOX must be bwrap or none' err
then ok "invalid RELAY_SANDBOX: exit 1"; else fail "bad RELAY_SANDBOX"; fi

if run badjson 1 shellapp --apps "$apps" --sandbox none --event '{oops' &&
	matches 'invalid JSON' err
then ok "invalid JSON event: exit 1"; else fail "bad json"; fi

if run noapp 1 nosuchapp --apps "$apps" --sandbox none --event "$ev" &&
	matches 'no valid app "nosuchapp"' err
then ok "unknown app: exit 1"; else fail "unknown app"; fi

if run usage1 2 shellapp --apps= --event "$ev" && run usage2 2 --apps "$apps" &&
	run usage3 2 shellapp --apps "$apps" --sandbox docker &&
	run usage4 2 shellapp --apps "$apps" --bogus
then ok "usage errors: exit 2"; else fail "usage"; fi

echo "1..$n"
exit $failed
