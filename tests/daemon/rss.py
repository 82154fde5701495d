#!/usr/bin/env python3
"""Measure relayd's resident memory idle and under sustained load.

usage: rss.py RELAYD [EVENTS] [MATCHED_EVERY]

Starts a private redis-server and the given relayd (use a release build),
with one exec app whose handler is /bin/true. Samples VmRSS idle for 5 s,
then publishes EVENTS events (default 100000; every MATCHED_EVERY-th one
matches, default 1 = all), sampling VmRSS once per second until the group
has read and acknowledged everything, then idles again. Prints a table and
a summary line. Not part of the test suite (it takes minutes); the numbers
go to doc/perf/relayd.md.
"""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import Env, Redis  # noqa: E402


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def main():
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 100000
    every = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    with Env() as env:
        env.app("t", [], raw="runtime: exec\ncommand: [/bin/true]\n"
                "concurrency: 8\nevents:\n"
                "  - handler: h\n    pattern: {kind: [x]}\n")
        d = env.relayd("bench", LOG_LEVEL="WARN",
                       RELAY_TEST_TIME_SCALE=None)
        pid = d.proc.pid
        samples = []
        t0 = time.monotonic()

        def sample(phase):
            samples.append((time.monotonic() - t0, phase, rss_kb(pid)))

        for _ in range(5):
            sample("idle")
            time.sleep(1)
        idle_before = samples[-1][2]
        done = threading.Event()

        prod_env = Env.__new__(Env)
        prod_env.__dict__.update(env.__dict__)
        prod_env.r = Redis(env.redis.sock)
        th = threading.Thread(target=prod_env_produce, args=(prod_env, n,
                                                              every, done))
        th.start()
        start = time.monotonic()
        last = 0
        while True:
            time.sleep(1)
            sample("load")
            info = harness.pairs(env.r("XINFO", "STREAM", env.stream))
            g = env.group_info()
            if (done.is_set() and g and g["pending"] == 0 and
                    g["last-delivered-id"] == info["last-generated-id"]):
                break
            if time.monotonic() - last > 10:
                last = time.monotonic()
                sys.stderr.write(f"# {samples[-1]} pending "
                                 f"{g['pending'] if g else '?'}\n")
        elapsed = time.monotonic() - start
        th.join()
        for _ in range(5):
            sample("after")
            time.sleep(1)
        st = d.control({"cmd": "stats"})["stats"]
        d.stop()
        load = [s[2] for s in samples if s[1] == "load"]
        q = len(load) // 4 or 1
        print("t_s phase rss_kb")
        for t, phase, kb in samples:
            print(f"{t:7.1f} {phase:5s} {kb}")
        print(f"# events {n}, matched every {every}: {elapsed:.1f} s "
              f"({n / elapsed:.0f} events/s); handler runs "
              f"{st['counters']['handler_success']}")
        print(f"# RSS idle {idle_before} KiB; load first quarter max "
              f"{max(load[:q])} KiB, last quarter max {max(load[-q:])} "
              f"KiB, overall max {max(load)} KiB; after {samples[-1][2]} "
              f"KiB")


def prod_env_produce(env, n, every, done):
    batch = []
    for i in range(n):
        kind = "x" if i % every == 0 else "y"
        batch.append({"kind": kind, "k": f"e{i}"})
        if len(batch) == 1000:
            env.xadd_many(batch)
            batch = []
    if batch:
        env.xadd_many(batch)
    env.r.close()
    done.set()


if __name__ == "__main__":
    main()
