#!/usr/bin/env python3
"""relayd end to end with real no-op handlers in the default (bwrap)
sandbox, warm parents on and off, in one run.

usage: relayd-warm-bench.py RELAYD [EVENTS] [KINDS] [ROUNDS]

For each kind (python3,node,exec by default; node is node with
RELAY_WARM_NODE=prestart, pre-started processes, and node-fork node with
RELAY_WARM_NODE=fork, the node warm fork server, in the warm mode) and each mode (RELAY_WARM=0,
then 1; ROUNDS times, alternating, so machine noise hits both), a private
redis-server and RELAYD at the default limits (MAX_CONCURRENCY 8,
MAX_BUFFERED_EVENTS 16, app concurrency 8) with one app whose no-op
handler matches every event:

  throughput  EVENTS events XADDed at once (pipelined); invocations/s is
              EVENTS / (time until every one is acknowledged); before
              it, one event starts the app's warm parent and, warm, the
              bench waits until relayd's stats file shows it ready
  latency     200 events XADDed one at a time, 20 ms apart; each carries
              CLOCK_MONOTONIC at its XADD and the handler prints "L
              <now - then>" as its first act (python3, node): XADD ->
              handler code running, p50/p99. exec (/bin/true) prints
              nothing: no latency figure.
  lost        EVENTS + 200 - handler runs seen ok (must be 0)
  rss         relayd's own VmRSS at the end (warm parents are separate
              processes)
  faults/inv  page faults of the whole machine during the throughput
              phase, per invocation (/proc/vmstat pgfault): the figure
              that does not depend on what a fault costs on the host
  cpu/inv     CPU time of the whole machine (user + system, /proc/stat)
              during the throughput phase, per invocation, in ms: on a
              shared host it includes other load

RELAYD: a release build (-Dbuildtype=release). Not a test; figures go to
doc/performance.md.
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "daemon"))
import harness  # noqa: E402
from harness import Env  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")

PY = """import time
def handle(event):
    print("L", time.monotonic() - event["t"])
"""
JS = """exports.handle = (event) => {
  const now = Number(process.hrtime.bigint()) / 1e9;
  process.stdout.write("L " + (now - event.t) + "\\n");
};
"""


def make_app(env, kind):
    d = os.path.join(env.apps_dir, "bench")
    os.makedirs(d, exist_ok=True)
    os.chmod(env.dir, 0o755)
    os.chmod(env.apps_dir, 0o755)
    os.chmod(d, 0o755)
    if kind == "python3":
        open(os.path.join(d, "noop.py"), "w").write(PY)
        head = "runtime: python3\n"
        handler = "noop.handle"
    elif kind == "node":
        open(os.path.join(d, "noop.js"), "w").write(JS)
        head = "runtime: node\n"
        handler = "noop.handle"
    else:
        head = "runtime: exec\ncommand: [/bin/true]\n"
        handler = "noop"
    for f in os.listdir(d):
        os.chmod(os.path.join(d, f), 0o644)
    open(os.path.join(d, "template.yaml"), "w").write(
        head + "concurrency: 8\nevents:\n"
        f"  - handler: {handler}\n    pattern: {{k: [x]}}\n"
        "    retries: 0\n")


def cpu_ms():
    """User + system CPU time of the whole machine so far, in ms."""
    with open("/proc/stat") as f:
        v = f.readline().split()[1:]
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(v[0]) + int(v[1]) + int(v[2])) * 1000.0 / ticks


def pgfaults():
    """Page faults of the whole machine so far (/proc/vmstat): over
    the throughput phase, divided by its invocations, the faults one
    invocation costs (everything it makes run: relayd, redis, bwrap, the
    handler, the warm slot). The portable figure: it does not depend on
    what a fault costs on this host."""
    for line in open("/proc/vmstat"):
        if line.startswith("pgfault "):
            return int(line.split()[1])
    return 0


def rss_kb(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def parent_ready(d):
    """Whether relayd's stats file (written every 5 s) shows a warm
    parent of the bench app ready."""
    try:
        parents = d.stats_file().get("warm", {}).get("parents", [])
    except (OSError, ValueError):
        return False
    return any(p.get("app") == "bench" and p.get("state") == "ready"
               for p in parents)


def one(kind, warm, n):
    extra = {}
    label = kind
    if kind == "node-fork":
        kind = "node"
        extra["RELAY_WARM_NODE"] = "fork"
    elif kind == "node":
        extra["RELAY_WARM_NODE"] = "prestart"
    with Env() as env:
        make_app(env, kind)
        d = env.relayd(RELAY_SANDBOX="bwrap", RELAY_WARM=str(warm),
                       LOG_LEVEL="INFO", RELAY_TEST_TIME_SCALE=None,
                       **extra)
        # Let warm parents (if any) start before timing: one event
        # (which starts cold and starts the app's warm parent), then,
        # warm, until the stats file shows the parent ready: a node
        # fork server takes a second or more to come up, and events
        # sent before it is ready start cold (the throughput figure
        # then mixes the one-time start-up of the parent with the
        # steady state).
        env.xadd({"k": "x", "t": time.monotonic()})
        env.wait(lambda: env.all_delivered(1), "warm-up",
                 timeout=60)
        if warm:
            env.wait(lambda: parent_ready(d), "warm parent ready",
                     timeout=60)
        t0 = time.monotonic()
        f0 = pgfaults()
        c0 = cpu_ms()
        env.xadd_many([{"k": "x", "t": time.monotonic()}
                       for _ in range(n)], batch=500)
        env.wait(lambda: env.all_delivered(n + 1),
                 "all acknowledged", timeout=600)
        rate = n / (time.monotonic() - t0)
        faults = (pgfaults() - f0) / n
        cpu = (cpu_ms() - c0) / n
        for _ in range(200):
            env.xadd({"k": "x", "t": time.monotonic()})
            time.sleep(0.02)
        env.wait(lambda: env.all_delivered(n + 201),
                 "latency events acknowledged", timeout=120)
        time.sleep(0.2)
        log = d.log()
        lines = [l for l in log.splitlines() if "stdout: L " in l]
        lat = sorted(float(l.rsplit("L ", 1)[1]) * 1e3
                     for l in lines[-200:]) if kind != "exec" else []
        rss = rss_kb(d.proc.pid)
        failed = log.count("handler failed") + log.count("exhausted")
        if "invalid" in log or (kind != "exec" and "stdout: L " not in log):
            raise SystemExit("the bench app did not run: " + d.log_tail(5))
        d.stop()
        p50 = lat[len(lat) // 2] if lat else float("nan")
        p99 = lat[min(len(lat) - 1, len(lat) * 99 // 100)] if lat else \
            float("nan")
        print(f"{label:9} warm={warm} {rate:9.1f} inv/s  start p50 "
              f"{p50:7.2f} ms p99 {p99:7.2f} ms  relayd rss {rss} KiB  "
              f"faults/inv {faults:7.0f}  cpu/inv {cpu:6.2f} ms  "
              f"failed {failed}", flush=True)
        return rate, p50, rss, faults, cpu


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    harness.RELAYD = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    kinds = (sys.argv[3] if len(sys.argv) > 3 else
             "python3,node,exec").split(",")
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    os.environ.setdefault("RELAY_BOOTSTRAP_DIR", os.path.join(
        ROOT, "librelay", "runtime", "bootstrap"))
    for kind in kinds:
        for _ in range(rounds):
            cold = one(kind, 0, n)
            warm = one(kind, 1, n)
            print(f"{kind:8} warm/cold {warm[0] / cold[0]:.1f}x  "
                  f"rss warm/cold {warm[2] / max(cold[2], 1):.2f}  "
                  f"faults/inv warm/cold {warm[3]:.0f}/{cold[3]:.0f}  "
                  f"cpu/inv warm/cold {warm[4]:.2f}/{cold[4]:.2f} ms",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
