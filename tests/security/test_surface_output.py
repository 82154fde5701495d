#!/usr/bin/env python3
"""Security: handler output has a per-app budget over time (issue 14
item 13). The runtime caps one invocation's output; OUTPUT_BUDGET caps
an app's output across invocations and retries, drops what is over,
says so once, and counts the dropped bytes on /metrics.

argv: relayd relayctl.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "daemon"))
from harness import (Env, case, check, eq, free_port, metrics,  # noqa: E402
                     run_cases, wait_for)

LOUD = r"""#!/bin/sh
cat >/dev/null
i=0
while [ $i -lt 2000 ]; do
	echo "loud-line-$i-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
	i=$((i + 1))
done
echo done >> "$OUT"
exit 1
"""


def loud_app(env, name):
    d = os.path.join(env.apps_dir, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "loud.sh"), "w") as f:
        f.write(LOUD)
    os.chmod(os.path.join(d, "loud.sh"), 0o755)
    with open(os.path.join(d, "template.yaml"), "w") as f:
        f.write("runtime: exec\ncommand: [./loud.sh]\n"
                f"env:\n  OUT: \"{env.out}\"\n"
                "events:\n  - handler: h\n    pattern: {kind: [loud]}\n"
                "    retries: 2\n")


@case
def output_over_the_budget_is_dropped_and_counted():
    with Env() as env:
        loud_app(env, "loud")
        env.app("quiet", [("h", {"kind": ["quiet"]})])
        port = free_port()
        d = env.relayd(OUTPUT_BUDGET="16KiB",
                       METRICS_ADDR=f"127.0.0.1:{port}")
        env.xadd({"kind": "loud", "k": "l1"})
        # 3 attempts x ~190 KB of output each.
        wait_for(lambda: open(env.out).read().count("done") == 3,
                 "three attempts")
        env.xadd({"kind": "quiet", "k": "q1"})
        wait_for(lambda: "handled q1" in d.log(), "the quiet app's output")
        log = d.log()
        shown = sum(len(ln) - ln.index("] stdout: ") - 9
                    for ln in log.splitlines()
                    if ln.startswith("[loud/h@") and "] stdout: " in ln)
        check(shown <= 17 * 1024, f"{shown} bytes of loud output logged")
        # One warning per run of drops (a line may pass between attempts
        # as the budget refills), not one per line.
        n = log.count("RELAYD-OUT01")
        check(1 <= n <= 3, f"{n} over-budget warnings")

        def dropped():
            m = metrics(port)
            return m.get('relay_output_dropped_bytes_total{app="loud"}')
        wait_for(lambda: (dropped() or 0) > 500000, "dropped bytes counted")
        check(dropped() + shown < 3 * 2000 * 100,
              "dropped + shown within the output")
        d.stop()


EMPTY = r"""#!/bin/sh
cat >/dev/null
i=0
while [ $i -lt 20000 ]; do
	echo
	i=$((i + 1))
done
echo done >> "$OUT"
"""


def empty_app(env, name):
    d = os.path.join(env.apps_dir, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "empty.sh"), "w") as f:
        f.write(EMPTY)
    os.chmod(os.path.join(d, "empty.sh"), 0o755)
    with open(os.path.join(d, "template.yaml"), "w") as f:
        f.write("runtime: exec\ncommand: [./empty.sh]\n"
                f"env:\n  OUT: \"{env.out}\"\n"
                "events:\n  - handler: h\n    pattern: {kind: [empty]}\n")


def logged_for_app(log, fmt, app):
    """Bytes of relayd's stderr spent on @app's handler output: its output
    records and the RELAYD-OUT01/02 notices, newlines included."""
    out = notices = 0
    for ln in log.splitlines():
        if "RELAYD-OUT0" in ln:
            notices += len(ln.encode()) + 1
        elif fmt == "text" and ln.startswith(f"[{app}/"):
            out += len(ln.encode()) + 1
        elif fmt == "json" and ln.startswith("{") and '"output"' in ln:
            rec = json.loads(ln)
            if "output" in rec and rec["msg"].startswith(f"[{app}/"):
                out += len(ln.encode()) + 1
    return out, notices


@case
def output_budget_bounds_what_is_logged():
    # The budget is charged what relayd writes, not the handler's bytes:
    # 20000 empty lines (20000 handler bytes, ~40 or ~120 log bytes each)
    # under 2KiB a minute leave at most 2KiB plus what refills meanwhile
    # (plus one notice's overdraw) in the log, in either format.
    budget = 2048
    for fmt in ("text", "json"):
        with Env() as env:
            empty_app(env, "empty")
            t0 = time.monotonic()
            d = env.relayd(OUTPUT_BUDGET="2KiB", LOG_FORMAT=fmt)
            env.xadd({"kind": "empty", "k": "e1"})
            env.wait(lambda: "done" in open(env.out).read(), "the run")
            env.wait(lambda: env.all_delivered(1), "the message acked")
            log = d.log()
            elapsed = time.monotonic() - t0
            out, notices = logged_for_app(log, fmt, "empty")
            bound = budget + elapsed * budget / 60 + 400
            print(f"# {fmt}: {out} bytes of output records and {notices} "
                  f"of notices in {elapsed:.1f}s")
            check(out > 0, f"{fmt}: some output logged")
            check("RELAYD-OUT01" in log, f"{fmt}: the drop is said")
            check(out + notices <= bound,
                  f"{fmt}: {out} + {notices} bytes logged in "
                  f"{elapsed:.1f}s, bound {bound:.0f}")
            d.stop()


@case
def output_budget_is_validated():
    import subprocess
    env = {k: v for k, v in os.environ.items()
           if k.startswith(("ASAN_", "UBSAN_", "LSAN_", "PATH"))}
    env.update({"REDIS_URI": "unix:///nonexistent/redis.sock",
                "REDIS_STREAM": "events", "REDIS_GROUP": "relay",
                "OUTPUT_BUDGET": "12"})
    p = subprocess.run([sys.argv[1]], env=env, capture_output=True,
                       text=True, timeout=60)
    eq(p.returncode, 1, "exit status")
    check("OUTPUT_BUDGET" in p.stderr, p.stderr)


sys.exit(run_cases())
