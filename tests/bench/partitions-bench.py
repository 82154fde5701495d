#!/usr/bin/env python3
"""relayd end to end with 1, 2 and 4 partitions of one stream on one
Redis node, in one run.

usage: partitions-bench.py RELAYD [EVENTS] [ROUNDS]

For each partition count P (1, 2, 4; ROUNDS times, interleaved so machine
noise hits every P alike), a private redis-server and RELAYD reading
REDIS_STREAM=ev (P = 1) or ev{0..P-1} at the default limits
(MAX_CONCURRENCY 8, MAX_BUFFERED_EVENTS 16 per stream) with
RELAY_SANDBOX=none and one app:

  unmatched  EVENTS events that match no rule, XADDed at once (pipelined,
             round robin over the partitions): the engine's own path
             (read, classify, ACK); events/s = EVENTS / time until every
             partition is drained
  exec       EVENTS events run by an exec handler /bin/true (app
             concurrency 8): the same, with a process per event

RELAYD: a release build (-Dbuildtype=release). Not a test; figures go to
doc/performance.md.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "daemon"))
import harness  # noqa: E402
from harness import Env, pairs  # noqa: E402


def streams(p):
    return ["ev"] if p == 1 else [f"ev:{{p{i}}}" for i in range(p)]


def drained(env, names, n):
    got = 0
    for s in names:
        g = [pairs(x) for x in env.r("XINFO", "GROUPS", s)]
        if not g or g[0]["pending"] != 0:
            return False
        info = pairs(env.r("XINFO", "STREAM", s))
        if g[0]["last-delivered-id"] != info["last-generated-id"]:
            return False
        got += info["length"]
    return got >= n


def one(p, kind, n):
    with Env() as env:
        d = os.path.join(env.apps_dir, "bench")
        os.makedirs(d)
        open(os.path.join(d, "template.yaml"), "w").write(
            "runtime: exec\ncommand: [/bin/true]\nconcurrency: 8\n"
            "events:\n  - handler: noop\n    pattern: {k: [x]}\n"
            "    retries: 0\n")
        names = streams(p)
        spec = "ev" if p == 1 else f"ev{{0..{p - 1}}}"
        rd = env.relayd(REDIS_STREAM=spec, RELAY_SANDBOX="none",
                        LOG_LEVEL="WARN", RELAY_TEST_TIME_SCALE=None)
        k = "x" if kind == "exec" else "y"
        per = {s: [] for s in names}
        for i in range(n):
            per[names[i % p]].append({"k": k, "i": i})
        t0 = time.monotonic()
        for s in names:
            env.stream = s
            env.xadd_many(per[s], batch=500)
        env.wait(lambda: drained(env, names, n), "drained", timeout=600)
        rate = n / (time.monotonic() - t0)
        rd.stop()
        return rate


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    harness.RELAYD = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    res = {}
    for _ in range(rounds):
        for kind in ("unmatched", "exec"):
            for p in (1, 2, 4):
                m = n if kind == "unmatched" else max(n // 10, 100)
                r = one(p, kind, m)
                res.setdefault((kind, p), []).append(r)
                print(f"{kind:9} partitions={p} events={m:6} "
                      f"{r:9.1f} events/s", flush=True)
    print(json.dumps({f"{k}/{p}": [round(x) for x in v]
                      for (k, p), v in res.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
