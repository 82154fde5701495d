#!/usr/bin/env python3
"""Retention under sustained load: the stream and Redis memory stay
bounded and nothing is lost.

usage: retention-bench.py RELAYD [EVENTS] [RETENTION] [MATCHED_EVERY]
                          [INVOCATION_RETENTION] [RATE]

Starts a private redis-server and RELAYD (a build with -Dtest_hooks=true,
ideally optimised and without sanitizers: RELAY_TEST_TIME_SCALE=60 turns
the 1-minute minimum trim tick into 1 s) with REDIS_STREAM_RETENTION =
RETENTION (default 5s) and one exec app (/bin/true) that every
MATCHED_EVERY-th event matches (default 100; the rest are unmatched and
acknowledged without a handler, so the run measures the stream, not
process spawning). Every message gets a small state hash (its
classification), kept REDIS_INVOCATION_RETENTION after the ACK: that is
set to INVOCATION_RETENTION (default 10s), or the hashes, not the stream,
would dominate used_memory. A producer XADDs EVENTS events (default 1000000) at
RATE events/s (default 20000, below what relayd sustains here, so the
stream does not just hold a backlog; 0 = as fast as pipelining allows)
while the stream length (XLEN), Redis
used_memory and relayd's counters are sampled every second.

At the end, once relayd has read and acknowledged everything:
  lost = EVENTS - events relayd classified (received + ... counts every
  XADDed entry once) + missing_payload; it must be 0.
Then one retention step is timed on its own: a stream of 200,000 entries
that its group has read and acknowledged, trimmed with the same script
and LIMIT relayd uses (10,000), and an observe-only step (LIMIT 0).

Not a test (it takes minutes); numbers go to doc/performance.md.
"""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "daemon"))
import harness  # noqa: E402
from harness import Env, Redis, pairs  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def produce(sock, stream, n, every, done, added, rate):
    r = Redis(sock)
    batch = 1000
    i = 0
    t0 = time.monotonic()
    while i < n:
        if rate:
            ahead = i / rate - (time.monotonic() - t0)
            if ahead > 0:
                time.sleep(ahead)
        out = []
        k = min(batch, n - i)
        for j in range(i, i + k):
            ev = b'{"kind":"x","k":"%d"}' % j if j % every == 0 else \
                b'{"kind":"y","k":"%d"}' % j
            args = [b"XADD", stream.encode(), b"*", b"event", ev]
            out.append(b"*%d\r\n" % len(args))
            for a in args:
                out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        if r.sock is None:
            r._connect()
        r.sock.sendall(b"".join(out))
        for _ in range(k):
            r._reply()
        i += k
        added[0] = i
    r.close()
    done.set()


def info_mem(r):
    for line in r("INFO", "memory").splitlines():
        if line.startswith("used_memory:"):
            return int(line.split(":")[1])
    return 0


def trim_script():
    """stream_trim.lua as librelay embeds it (comments dropped)."""
    with open(os.path.join(ROOT, "librelay", "lua", "stream_trim.lua")) as f:
        return "\n".join(ln for ln in f.read().splitlines()
                         if not ln.lstrip().startswith("--"))


def time_one_step(r):
    """Cost of one retention step on a 200k-entry stream."""
    s = "bench:trim"
    r("DEL", s)
    n = 200000
    for i in range(0, n, 5000):
        out = []
        for j in range(5000):
            args = [b"XADD", s.encode(), b"*", b"event",
                    b'{"kind":"y","k":"%d"}' % (i + j)]
            out.append(b"*%d\r\n" % len(args))
            for a in args:
                out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        r.sock.sendall(b"".join(out))
        for _ in range(5000):
            r._reply()
    r("XGROUP", "CREATE", s, "g", "$")  # read and acknowledged all
    sha = r("SCRIPT", "LOAD", trim_script())
    cutoff = str(int(time.time() * 1000) + 60000)
    res = {}
    for limit, name in ((0, "observe"), (10000, "trim")):
        t0 = time.perf_counter()
        rep = r("EVALSHA", sha, "1", s, cutoff, str(limit), "groups")
        res[name] = ((time.perf_counter() - t0) * 1000, rep[0])
    # A full drain: steps until nothing is left, as one tick does.
    t0 = time.perf_counter()
    steps = 0
    while True:
        rep = r("EVALSHA", sha, "1", s, cutoff, "10000", "groups")
        steps += 1
        if rep[0] < 10000:
            break
    res["drain"] = ((time.perf_counter() - t0) * 1000, steps)
    r("DEL", s)
    return res


def main():
    relayd = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000000
    retention = sys.argv[3] if len(sys.argv) > 3 else "5s"
    every = int(sys.argv[4]) if len(sys.argv) > 4 else 100
    inv_ret = sys.argv[5] if len(sys.argv) > 5 else "10s"
    rate = int(sys.argv[6]) if len(sys.argv) > 6 else 20000
    harness.RELAYD = relayd
    with Env() as env:
        env.app("t", [], raw="runtime: exec\ncommand: [/bin/true]\n"
                "concurrency: 8\nevents:\n"
                "  - handler: h\n    pattern: {kind: [x]}\n")
        d = env.relayd("bench", LOG_LEVEL="WARN", RELAY_TEST_TIME_SCALE="60",
                       MAX_BUFFERED_EVENTS="256", MAX_CONCURRENCY="16",
                       REDIS_STREAM_RETENTION=retention,
                       REDIS_INVOCATION_RETENTION=inv_ret)
        mem0 = info_mem(env.r)
        done = threading.Event()
        added = [0]
        th = threading.Thread(target=produce, args=(
            env.redis.sock, env.stream, n, every, done, added, rate))
        t0 = time.monotonic()
        th.start()
        samples = []
        while True:
            time.sleep(1)
            xlen = env.r("XLEN", env.stream)
            mem = info_mem(env.r)
            g = env.group_info() or {}
            keys = env.r("DBSIZE")
            samples.append((time.monotonic() - t0, added[0], xlen, mem,
                            g.get("pending", 0), keys))
            print(f"# t={samples[-1][0]:6.1f}s added={added[0]:8d} "
                  f"xlen={xlen:8d} used_memory={mem / 1048576:7.1f}MiB "
                  f"keys={keys:7d} pending={samples[-1][4]}", flush=True)
            if done.is_set() and env.all_delivered(n):
                break
        elapsed = time.monotonic() - t0
        th.join()
        # Let a few more ticks pass: the tail must go too.
        time.sleep(12)
        xlen_end = env.r("XLEN", env.stream)
        keys_end = env.r("DBSIZE")
        mem_end = info_mem(env.r)
        d.stop()
        st = d.stats_file()
        c = st["counters"]
        classified = (c["events_received"] + c["events_malformed"] +
                      c["events_schedule"])
        lost = n - classified + c["missing_payload"]
        cost = time_one_step(env.r)
        half = [s for s in samples if s[1] >= n // 2]
        print(f"events={n} retention={retention} matched_every={every} "
              f"target_rate={rate}/s elapsed={elapsed:.1f}s rate={n / elapsed:.0f}/s")
        print(f"xlen max={max(s[2] for s in samples)} "
              f"second-half max={max((s[2] for s in half), default=0)} "
              f"end={xlen_end}")
        print(f"used_memory start={mem0 / 1048576:.1f}MiB "
              f"max={max(s[3] for s in samples) / 1048576:.1f}MiB "
              f"second-half max="
              f"{max((s[3] for s in half), default=0) / 1048576:.1f}MiB "
              f"end={mem_end / 1048576:.1f}MiB; keys max="
              f"{max(s[5] for s in samples)} end={keys_end}")
        print(f"trimmed={st['retention']['stream_trimmed']} "
              f"classified={classified} missing_payload="
              f"{c['missing_payload']} lost={lost}")
        print(f"one step on 200000 entries: observe {cost['observe'][0]:.2f} "
              f"ms; trim LIMIT 10000 {cost['trim'][0]:.2f} ms "
              f"({cost['trim'][1]} entries); full drain "
              f"{cost['drain'][0]:.1f} ms in {cost['drain'][1]} steps")
        return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
