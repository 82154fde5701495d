#!/usr/bin/env bash
# tests/run.sh - build Relay-C with ASan/UBSan and run every test suite.
#
# On a fresh Debian 12 machine this installs what it needs (as root, with
# apt-get), configures build-tests/ with -Db_sanitize=address,undefined and
# test hooks, runs `meson test`, then runs each libFuzzer target for a short
# bounded time when clang is present; checks that no tracked file names a
# path outside the repository (tests/check-paths.sh) and that the include
# graph obeys the module map (tests/check-layering.py). The last line is
# "N passed, M failed";
# the exit status is non-zero on any failure.
#
# Environment: RELAY_BUILD_DIR (default: build-tests),
# RELAY_TEST_TIMEOUT_MULTIPLIER (default 2: every test's time limit and
# the daemon harness's waits are multiplied by it), RELAY_FUZZ_SECONDS
# (default 20 per target; 0 skips fuzzing), RELAY_TEST_SUITES (meson
# --suite list, default: all), RELAY_SKIP_INSTALL=1 to skip apt-get,
# RELAY_SKIP_RELEASE_BUILD=1 to skip the -O3 release compile check,
# RELAY_SKIP_QUICKSTART=1 to skip running doc/examples/quickstart.sh,
# RELAY_VM=0 to skip the vm suite's user-mode Linux guest (tests/vm/),
# RELAY_FUZZ_SEED (default 1: the CI run explores the same inputs every
# time, so a red run is reproducible; long exploratory runs are done by
# hand with another seed, see tests/fuzz/README.md), RELAY_MESON_ARGS
# (extra options for a new build dir, e.g. -Dmetrics=disabled).
#
# Every build here treats warnings as errors (-Dwerror=true); a user's
# build does not by default.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
build=${RELAY_BUILD_DIR:-build-tests}
fuzz_seconds=${RELAY_FUZZ_SECONDS:-20}
fuzz_seed=${RELAY_FUZZ_SEED:-1}

packages=(gcc g++ clang libclang-rt-14-dev meson ninja-build pkg-config
	libhiredis-dev libjansson-dev libfyaml-dev libev-dev libmicrohttpd-dev
	libcurl4-openssl-dev
	redis-server redis-tools redis-sentinel openssl libssl-dev bubblewrap
	python3 nodejs scdoc procps tzdata user-mode-linux
	prometheus python3-yaml graphviz)

install_packages() {
	local missing=()
	for p in "${packages[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
			grep -q 'install ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	if [ "$(id -u)" != 0 ]; then
		echo "tests/run.sh: missing packages (run as root to install):" \
			"${missing[*]}" >&2
		return 0
	fi
	echo "tests/run.sh: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# hiredict (TLS to Redis, meson -Dtls) from bookworm-backports, enabled
# from this machine's own Debian source; without it the build has no TLS
# and the tls suite skips.
install_backports() {
	[ "$(id -u)" = 0 ] && "$here/tests/backports.sh"
	return 0
}

[ "${RELAY_SKIP_INSTALL:-0}" = 1 ] || { install_packages; install_backports; }

# Under root the sandboxes run as "nobody" (uid 65534), which must read
# the test fixtures (app directories, bootstraps, the warm helpers in the
# build tree). From a checkout it cannot read (under root's home, say),
# the whole run moves to a readable copy in a temporary directory, which
# is removed afterwards (RELAY_TEST_KEEP=1 keeps it).
if [ "$(id -u)" = 0 ] && [ -z "${RELAY_TESTS_COPY_OF:-}" ] &&
	command -v setpriv >/dev/null &&
	! setpriv --reuid=65534 --regid=65534 --clear-groups \
		test -r "$here/tests/runtime/apps/demo/hello.sh" 2>/dev/null
then
	copy=$(mktemp -d /tmp/relay-tests.XXXXXX)
	chmod 755 "$copy"
	echo "tests/run.sh: the sandbox user (uid 65534) cannot read $here;" \
		"running from a readable copy in $copy"
	tar -C "$here" --exclude='./build*' -cf - . |
		tar -C "$copy" -xf -
	chmod -R a+rX "$copy"
	set +e
	RELAY_TESTS_COPY_OF=$here "$copy/tests/run.sh" "$@"
	rc=$?
	set -e
	[ "${RELAY_TEST_KEEP:-0}" = 1 ] || rm -rf "$copy"
	exit "$rc"
fi

if [ ! -f "$build/build.ninja" ]; then
	# shellcheck disable=SC2086
	meson setup "$build" -Db_sanitize=address,undefined -Db_lundef=false \
		-Dtest_hooks=true -Dbuildtype=debug -Dwerror=true \
		${RELAY_MESON_ARGS:-}
else
	# A build dir made before werror stopped being the default.
	meson configure "$build" -Dwerror=true >/dev/null
fi
ninja -C "$build"

# Release build: gcc -O3 sees warnings (format truncation, maybe
# uninitialised) that the debug build does not, and quickstart.sh and
# packagers build this way. Warnings are errors, so this must compile.
# Built before the tests: the vm suite's guest cannot run ASan binaries
# and runs these (RELAY_VM_BUILD).
release_ok=
if [ "${RELAY_SKIP_RELEASE_BUILD:-0}" != 1 ]; then
	rbuild="$build-release"
	if [ ! -f "$rbuild/build.ninja" ]; then
		meson setup "$rbuild" -Dbuildtype=release -Dtests=false \
			-Dwerror=true >/dev/null
	else
		meson configure "$rbuild" -Dwerror=true >/dev/null
	fi
	if ninja -C "$rbuild" >"$rbuild.log" 2>&1; then
		release_ok=1
		case "$rbuild" in
		/*) export RELAY_VM_BUILD="$rbuild" ;;
		*) export RELAY_VM_BUILD="$here/$rbuild" ;;
		esac
	else
		release_ok=0
	fi
fi

suite_args=()
if [ -n "${RELAY_TEST_SUITES:-}" ]; then
	for s in $RELAY_TEST_SUITES; do suite_args+=(--suite "$s"); done
fi
# Time limits scale on a loaded machine: meson's per-test limits and the
# black-box harness's waits (tests/daemon/harness.py) both read this.
export RELAY_TEST_TIMEOUT_MULTIPLIER=${RELAY_TEST_TIMEOUT_MULTIPLIER:-2}
set +e
meson test -C "$build" --num-processes 2 \
	--timeout-multiplier "$RELAY_TEST_TIMEOUT_MULTIPLIER" "${suite_args[@]}"
meson_rc=$?
set -e

# What failed and why, on the console: each failing test's failed TAP
# lines with their diagnostics (the whole output is in meson's testlog).
python3 - "$build/meson-logs/testlog.json" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["result"] in ("OK", "EXPECTEDFAIL", "SKIP"):
        continue
    print(f"---- FAILED: {r['name']} ({r['result']})")
    out = (r.get("stdout") or "").splitlines()
    shown, keep = 0, False
    for l in out:
        if l.startswith("not ok"):
            keep = True
        elif l.startswith("ok ") or l.startswith("1.."):
            keep = False
        if keep and shown < 60:
            print("  " + l)
            shown += 1
    err = (r.get("stderr") or "").splitlines()
    if err:
        print("  stderr (last lines):")
        for l in err[-15:]:
            print("    " + l)
PY

read -r passed failed skipped < <(python3 - "$build/meson-logs/testlog.json" <<'PY'
import json, sys
p = f = s = 0
for line in open(sys.argv[1]):
    r = json.loads(line)["result"]
    if r in ("OK", "EXPECTEDFAIL"): p += 1
    elif r == "SKIP": s += 1
    else: f += 1
print(p, f, s)
PY
)

# The repository stands alone: no tracked file names a path outside it,
# and the include graph obeys doc/architecture.md's module map. Run here
# as well as in the unit suite, so a RELAY_TEST_SUITES without unit still
# checks them (rules: the headers of both scripts).
if sh tests/check-paths.sh "$here" >"$build/check-paths.log" 2>&1; then
	echo "paths: ok"
	passed=$((passed + 1))
else
	echo "paths: FAILED"; grep -v '^ok' "$build/check-paths.log"
	failed=$((failed + 1))
fi
if python3 tests/check-layering.py "$here" >"$build/check-layering.log" 2>&1; then
	echo "layering: ok"
	passed=$((passed + 1))
else
	echo "layering: FAILED"; grep -v '^ok' "$build/check-layering.log"
	failed=$((failed + 1))
fi

if [ -n "$release_ok" ]; then
	if [ "$release_ok" = 1 ]; then
		echo "release build: ok"
		passed=$((passed + 1))
	else
		echo "release build: FAILED"; grep -E 'error|FAILED' \
			"$rbuild.log" | head -20
		failed=$((failed + 1))
	fi
fi

# README's first command: doc/examples/quickstart.sh end to end (its own
# release build with test hooks, a private redis-server and relayd).
if [ "${RELAY_SKIP_QUICKSTART:-0}" != 1 ] && command -v redis-server \
	>/dev/null && command -v redis-cli >/dev/null; then
	qlog=$(mktemp)
	case "$build" in
	/*) qbuild="$build-quickstart" ;;
	*) qbuild="$here/$build-quickstart" ;;
	esac
	if RELAY_SKIP_INSTALL=1 RELAY_QUICKSTART_BUILD="$qbuild" \
		doc/examples/quickstart.sh >"$qlog" 2>&1 &&
	   grep -q '^relayd exited 0$' "$qlog" &&
	   grep -q '^DLQ entry removed$' "$qlog"; then
		echo "quickstart: ok"
		passed=$((passed + 1))
	else
		echo "quickstart: FAILED"; tail -40 "$qlog"
		failed=$((failed + 1))
	fi
	rm -f "$qlog"
fi

# Fuzzers: a separate clang build, each target for a bounded time.
if [ "$fuzz_seconds" != 0 ] && command -v clang >/dev/null; then
	fbuild="$build-fuzz"
	if [ ! -f "$fbuild/build.ninja" ]; then
		CC=clang meson setup "$fbuild" -Dfuzz=true -Dbench=false \
			-Db_sanitize=address,undefined -Db_lundef=false \
			-Dc_args=-fsanitize=fuzzer-no-link \
			-Dbuildtype=debugoptimized -Dwerror=true >/dev/null
	fi
	if ninja -C "$fbuild" >/dev/null; then
		for t in "$fbuild"/tests/fuzz/fuzz-*; do
			[ -f "$t" ] && [ -x "$t" ] || continue
			name=$(basename "$t")
			corpus="tests/fuzz/corpus/${name#fuzz-}"
			work=$(mktemp -d)
			[ -d "$corpus" ] && cp -r "$corpus"/. "$work"/
			mkdir -p "$fbuild/artifacts"
			if "$t" -max_total_time="$fuzz_seconds" -rss_limit_mb=2048 \
				-timeout=10 -seed="$fuzz_seed" -artifact_prefix="$fbuild/artifacts/" \
				"$work" >"$work.log" 2>&1; then
				echo "fuzz $name: ok (${fuzz_seconds}s)"
				passed=$((passed + 1))
			else
				echo "fuzz $name: FAILED"; tail -40 "$work.log"
				failed=$((failed + 1))
			fi
			rm -rf "$work" "$work.log"
		done
	else
		echo "fuzz build: FAILED"; failed=$((failed + 1))
	fi
fi

echo "${skipped} skipped"
echo "${passed} passed, ${failed} failed"
[ "$failed" = 0 ] && [ "$meson_rc" = 0 ]
