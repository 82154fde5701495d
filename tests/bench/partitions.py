"""Shared by partitions-bench.py and cluster-partitions-bench.py: one
relayd run over P partitions of one stream, at the default limits with
RELAY_SANDBOX=none and one app, timed until every partition is drained.

  unmatched  EVENTS events that match no rule, XADDed at once (pipelined,
             round robin over the partitions): the engine's own path
             (read, classify, ACK)
  exec       EVENTS / 10 (at least 100) events run by an exec handler
             /bin/true (app concurrency 8): the same, with a process per
             event
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "daemon"))
import harness  # noqa: E402
from harness import Env, pairs  # noqa: E402,F401 (Env for the scripts)

KINDS = ("unmatched", "exec")
PARTITIONS = (1, 2, 4)


def command_line(argv, doc):
    """RELAYD [EVENTS] [ROUNDS] of a partitions benchmark: sets the relayd
    the runs use; returns (events, rounds), or None after printing @doc
    when RELAYD is missing."""
    if len(argv) < 2:
        print(doc)
        return None
    harness.RELAYD = argv[1]
    return (int(argv[2]) if len(argv) > 2 else 20000,
            int(argv[3]) if len(argv) > 3 else 1)


def streams(p, single="ev"):
    """The stream names REDIS_STREAM=spec(p) reads."""
    return [single] if p == 1 else [f"ev:{{p{i}}}" for i in range(p)]


def spec(p, single="ev"):
    return single if p == 1 else f"ev{{0..{p - 1}}}"


def events(kind, n):
    """How many events a run of @kind gets for EVENTS=@n."""
    return n if kind == "unmatched" else max(n // 10, 100)


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


def one(make_env, p, kind, n, single="ev"):
    """events/s of one relayd on a fresh make_env() (an Env or
    ClusterEnv) reading @p partitions, @n events of @kind."""
    with make_env() as env:
        d = os.path.join(env.apps_dir, "bench")
        os.makedirs(d)
        open(os.path.join(d, "template.yaml"), "w").write(
            "runtime: exec\ncommand: [/bin/true]\nconcurrency: 8\n"
            "events:\n  - handler: noop\n    pattern: {k: [x]}\n"
            "    retries: 0\n")
        names = streams(p, single)
        rd = env.relayd(REDIS_STREAM=spec(p, single), RELAY_SANDBOX="none",
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
