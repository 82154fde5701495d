#!/usr/bin/env python3
"""The DLQ at incident scale: relayctl dlq summary / ls / rm / replay on
a 100,000-entry DLQ in a private redis-server (unix socket, temp dir),
and relayd's own throughput while a bulk replay runs.

usage: dlq-bench.py RELAYD RELAYCTL [ENTRIES] [ROUNDS]

The DLQ relay:events:dlq is written directly, pipelined, with the field
layout of doc/redis-layout.md R-5: ten apps app0..app9 (so --app app0
matches a tenth), handlers h0..h2, eight reasons with varying numbers.

  summary    `relayctl dlq summary` (text and --json) wall time over the
             whole DLQ (target < 2 s at 100,000)
  ls rss     max RSS of `relayctl dlq ls` (/usr/bin/time %M; text and
             --json, output to /dev/null) with a filter matching ENTRIES/10 (--app app0)
             and one matching all ENTRIES (--no-malformed): flat memory
             means the two agree
  rm rate    `dlq rm --app app1 --limit 5000 --rate R --yes`: the rate
             achieved, from XLEN sampled every 20 ms (first to last
             deletion), R = 500 (target 500 +- 10 %), and app4 at 1000
  replay     relayd (release, RELAY_SANDBOX=none, exec /bin/true for
             every app/handler) running; `dlq replay --app app2 --limit N
             --rate R --yes` at R = 500, 200, 100, 50: the rate achieved
             (relayd deletes each replayed entry; XLEN sampled), and the
             ceiling of the host (R = 1000)
  live       relayd's throughput on the live stream (2,000 events run
             by exec /bin/true, concurrency 8) with an idle DLQ, then
             while `dlq replay --rate 100` runs: events/s and the ratio
  redrive    `dlq replay --redrive --app app5 --limit 5000 --rate 500
             --yes`: the rate achieved (target 500 +- 10 %), and the live
             throughput while `--redrive --rate 100` puts app6's entries
             back into the stream relayd serves

RELAYD, RELAYCTL: a release build. Not a test; figures go to
doc/perf/dlq.md.
"""
import json
import os
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "daemon"))
import harness  # noqa: E402
from harness import Env  # noqa: E402

DLQ = "relay:events:dlq"
REASONS = [
    "timed out after {n}ms", "exit status {m}", "killed by signal 9",
    "spawn failed: No such file or directory",
    "memory limit exceeded ({n} KiB)", "exit status 1: connection to "
    "10.0.{m}.7:5432 refused", "handler output {n} bytes over the limit",
    "timed out after {n}ms (warm start)",
]


def exhausted(app, handler, i):
    last = REASONS[i % len(REASONS)].format(n=1000 + i % 5000, m=i % 7)
    return (f'invocation exhausted: app "{app}" handler "{handler}" '
            f"exhausted after 3 handler attempts: {last}")


def fill(env, n, batch=1000):
    """n entries, pipelined; R-5 field layout."""
    r = env.r
    if r.sock is None:
        r._connect()
    now = time.time()
    for lo in range(0, n, batch):
        out = []
        hi = min(n, lo + batch)
        for i in range(lo, hi):
            app, handler = f"app{i % 10}", f"h{i % 3}"
            t = now - (n - i) * 0.01
            ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + \
                f".{int(t * 1000) % 1000:03d}Z"
            args = ["XADD", DLQ, "*", "original_stream", "events",
                    "original_id", f"1796000000000-{i}", "group", "relay",
                    "consumer", "bench", "event",
                    json.dumps({"k": "x", "i": i}), "reason",
                    exhausted(app, handler, i), "app", app,
                    "handler", handler, "deliveries", "3",
                    "handler_attempts", "3", "timestamp", ts]
            out.append(b"*%d\r\n" % len(args))
            for a in args:
                a = a.encode()
                out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        r.sock.sendall(b"".join(out))
        for _ in range(lo, hi):
            r._reply()


def ctl_env(env, d=None):
    e = {k: v for k, v in os.environ.items() if k.startswith("PATH")}
    e.update({"REDIS_URI": env.redis.uri, "REDIS_STREAM": env.stream,
              "REDIS_GROUP": env.group, "REDIS_DLQ_RETENTION": "0"})
    if d:
        e["RELAY_RUN_DIR"] = d.run_dir
        e["RELAY_STATE_DIR"] = d.state_dir
    return e


def run(relayctl, env, args, d=None):
    """relayctl ARGS, stdout to /dev/null: (seconds, max RSS KiB, rc).
    The RSS is /usr/bin/time's (%M): a child forked from this Python
    would count the Python image it was forked from."""
    t0 = time.monotonic()
    p = subprocess.run(["/usr/bin/time", "-f", "maxrss %M", relayctl,
                        *args], env=ctl_env(env, d),
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE)
    dt = time.monotonic() - t0
    err = p.stderr.decode(errors="replace")
    rss = [int(ln.split()[1]) for ln in err.splitlines()
           if ln.startswith("maxrss ")]
    if p.returncode not in (0, 1):
        print(f"  relayctl {' '.join(args)}: exit {p.returncode}: {err}",
              file=sys.stderr)
    return dt, rss[-1] if rss else 0, p.returncode


def paced(relayctl, env, args, d=None):
    """Run a bulk command while sampling XLEN every 20 ms; the rate from
    the first to the last change of XLEN, and how many went."""
    samples = []
    done = threading.Event()

    def sample():
        r = harness.Redis(env.redis.sock)
        while not done.is_set():
            samples.append((time.monotonic(), r("XLEN", DLQ)))
            time.sleep(0.02)
        samples.append((time.monotonic(), r("XLEN", DLQ)))
        r.close()

    th = threading.Thread(target=sample)
    th.start()
    wall, _, rc = run(relayctl, env, args, d)
    done.set()
    th.join()
    start = samples[0][1]
    changes = [(t, n) for (t, n), (_, prev) in
               zip(samples[1:], samples[:-1]) if n != prev]
    if len(changes) < 2:
        return 0.0, start - samples[-1][1], wall
    (t0, n0), (t1, n1) = changes[0], changes[-1]
    # From the first change to the last: the entries gone in between.
    return (n0 - n1) / (t1 - t0), start - samples[-1][1], wall


def exec_app(env, name, handlers, pattern=None, concurrency=8):
    d = os.path.join(env.apps_dir, name)
    os.makedirs(d, exist_ok=True)
    lines = ["runtime: exec", "command: [/bin/true]",
             f"concurrency: {concurrency}", "events:"]
    for h in handlers:
        lines += [f"  - handler: {h}",
                  f"    pattern: {json.dumps(pattern or {'never': [h]})}",
                  "    retries: 0"]
    open(os.path.join(d, "template.yaml"), "w").write("\n".join(lines) +
                                                       "\n")


def live(env, n):
    """n events on the live stream, each run by exec /bin/true: events/s
    until every one is acknowledged."""
    base = int(harness.pairs(env.r("XINFO", "STREAM", env.stream))
               ["length"])
    t0 = time.monotonic()
    env.xadd_many([{"k": "x", "i": i} for i in range(n)], batch=500)
    env.wait(lambda: env.all_delivered(base + n), "live events done",
             timeout=600)
    return n / (time.monotonic() - t0)


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    relayctl = os.path.abspath(sys.argv[2])
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 100000
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    res = {}
    with Env() as env:
        t0 = time.monotonic()
        fill(env, n)
        mem = [ln for ln in env.r("INFO", "memory").splitlines()
               if ln.startswith("used_memory:")]
        print(f"filled {n} DLQ entries in {time.monotonic() - t0:.1f} s; "
              f"{mem[0] if mem else ''}", flush=True)
        for fmt in ([], ["--json"]):
            times = [run(relayctl, env, ["dlq", "summary", *fmt])[0]
                     for _ in range(rounds)]
            res[f"summary{' '.join(fmt)}"] = times
            print(f"summary {' '.join(fmt):6} {n} entries: "
                  f"{', '.join(f'{x:.2f}' for x in times)} s", flush=True)
        for fmt in ([], ["--json"]):
            for flt, what in ((["--app", "app0"], n // 10),
                              (["--no-malformed"], n)):
                rows = [run(relayctl, env, ["dlq", "ls", *flt, *fmt])
                        for _ in range(rounds)]
                res[f"ls {' '.join(flt + fmt)}"] = [r[1] for r in rows]
                print(f"ls {' '.join(flt + fmt):22} {what:6} matching: "
                      f"max RSS {', '.join(str(r[1]) for r in rows)} KiB, "
                      f"{', '.join(f'{r[0]:.2f}' for r in rows)} s",
                      flush=True)
        for rate, app in ((500, "app1"), (1000, "app4")):
            got, gone, wall = paced(relayctl, env, [
                "dlq", "rm", "--app", app, "--limit", "5000", "--rate",
                str(rate), "--yes"])
            res[f"rm {rate}"] = got
            print(f"rm --rate {rate}: {gone} removed, achieved "
                  f"{got:.1f}/s ({100 * (got - rate) / rate:+.1f} %), "
                  f"wall {wall:.1f} s", flush=True)

        # relayd: every app's handlers run /bin/true; a live app.
        for a in range(10):
            exec_app(env, f"app{a}", ["h0", "h1", "h2"])
        exec_app(env, "live", ["run"], pattern={"k": ["x"]})
        d = env.relayd(RELAY_SANDBOX="none", LOG_LEVEL="WARN",
                       REDIS_DLQ_RETENTION="0",
                       RELAY_TEST_TIME_SCALE=None)
        live(env, 200)  # warm-up
        idle = [live(env, 2000)]
        for rate, count in ((1000, 3000), (500, 2000), (200, 1000),
                            (100, 500), (50, 250)):
            got, gone, wall = paced(relayctl, env, [
                "dlq", "replay", "--app", "app2", "--limit", str(count),
                "--rate", str(rate), "--yes"], d)
            res[f"replay {rate}"] = got
            print(f"replay --rate {rate}: {gone} replayed, achieved "
                  f"{got:.1f}/s ({100 * (got - rate) / rate:+.1f} %), "
                  f"wall {wall:.1f} s", flush=True)
        busy = []
        for _ in range(rounds):
            th = threading.Thread(target=run, args=(relayctl, env, [
                "dlq", "replay", "--app", "app3", "--limit", "1500",
                "--rate", "100", "--yes"], d))
            th.start()
            time.sleep(0.5)
            busy.append(live(env, 2000))
            th.join()
            idle.append(live(env, 2000))
        # Redrive (--redrive): one script per entry, no handler in
        # relayctl's path; relayd then runs the redriven events.
        got, gone, wall = paced(relayctl, env, [
            "dlq", "replay", "--redrive", "--app", "app5", "--limit",
            "5000", "--rate", "500", "--yes"], d)
        res["redrive 500"] = got
        print(f"replay --redrive --rate 500: {gone} redriven, achieved "
              f"{got:.1f}/s ({100 * (got - 500) / 500:+.1f} %), "
              f"wall {wall:.1f} s", flush=True)
        redriving = []
        for _ in range(rounds):
            th = threading.Thread(target=run, args=(relayctl, env, [
                "dlq", "replay", "--redrive", "--app", "app6", "--limit",
                "1500", "--rate", "100", "--yes"], d))
            th.start()
            time.sleep(0.5)
            redriving.append(live(env, 2000))
            th.join()
        res["live redriving"] = redriving
        print(f"live events/s during replay --redrive --rate 100: "
              f"{', '.join(f'{x:.0f}' for x in redriving)}; ratio of "
              f"medians to idle {statistics.median(redriving) / statistics.median(idle):.2f}",
              flush=True)
        res["live idle"] = idle
        res["live replaying"] = busy
        print(f"live events/s, idle DLQ: "
              f"{', '.join(f'{x:.0f}' for x in idle)}; during replay "
              f"--rate 100: {', '.join(f'{x:.0f}' for x in busy)}; ratio "
              f"of medians {statistics.median(busy) / statistics.median(idle):.2f}",
              flush=True)
        d.stop()
    print(json.dumps({k: v if isinstance(v, float) else v
                      for k, v in res.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
