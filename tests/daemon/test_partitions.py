#!/usr/bin/env python3
"""relayd end to end: partitioned streams - one relayd reading several
streams named by REDIS_STREAM (a list, or PREFIX{A..B}), each with its own
consumer group reading, recovery and DLQ, all sharing MAX_CONCURRENCY and
the per-app limits; schedules publish each occurrence to one deterministic
partition (doc/configuration.md C-2, REDIS_STREAM; doc/schedules.md).

usage: test_partitions.py RELAYD [RELAYCTL]

Real redis-server, real relayd (RELAY_TEST_TIME_SCALE=600), real handler
processes recording into a file.
"""
import calendar
import json
import os
import subprocess
import sys
import time

from harness import (RELAYD, Env, case, check, eq, have_metrics,
                     metrics_text, free_port, pairs, peak_overlap, run_cases,
                     spans)

RELAYCTL = sys.argv[2] if len(sys.argv) > 2 else None
PARTS4 = [f"ev:{{p{i}}}" for i in range(4)]


def fnv1a(s):
    """The documented partition hash (relay_stream_hash()), written out
    here independently: 32-bit FNV-1a."""
    h = 2166136261
    for b in s.encode():
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h


def part_of(key, streams):
    return streams[fnv1a(key) % len(streams)]


def xadd(env, stream, event):
    if not isinstance(event, str):
        event = json.dumps(event, separators=(",", ":"))
    return env.r("XADD", stream, "*", "event", event)


def pending(env, stream):
    try:
        return env.r("XPENDING", stream, env.group)[0]
    except Exception as e:  # NOGROUP before the group exists
        if "NOGROUP" in str(e):
            return 0
        raise


def done(env, stream):
    """Every entry of @stream read by the group and nothing pending."""
    groups = [pairs(g) for g in env.r("XINFO", "GROUPS", stream)]
    g = [x for x in groups if x["name"] == env.group]
    if not g:
        return False
    info = pairs(env.r("XINFO", "STREAM", stream))
    return (g[0]["last-delivered-id"] == info["last-generated-id"] and
            g[0]["pending"] == 0)


def dlq(env, stream):
    return env.r("XRANGE", f"relay:{stream}:dlq", "-", "+")


@case
def partitions_deliver_every_event_once():
    """ev{0..3}: events XADDed to the partition of their key (the
    documented hash) all end acknowledged, each handler run once; each
    stream's own figures in the stats file and on /metrics."""
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]})])
        port = free_port() if have_metrics() else None
        extra = {"METRICS_ADDR": f"127.0.0.1:{port}"} if port else {}
        d = env.relayd(REDIS_STREAM="ev{0..3}", LOG_LEVEL="INFO", **extra)
        want = {s: 0 for s in PARTS4}
        for i in range(40):
            key = f"order-{i}"
            s = part_of(key, PARTS4)
            want[s] += 1
            xadd(env, s, {"kind": "x", "k": key})
        check(all(n > 0 for n in want.values()),
              f"the hash spreads 40 keys over 4 partitions ({want})")
        env.wait(lambda: env.count("end") >= 40 and
                 all(done(env, s) for s in PARTS4),
                 "40 handled, every partition drained")
        for i in range(40):
            eq(env.count("start", f"order-{i}"), 1, f"order-{i} ran once")
        for s in PARTS4:
            eq(dlq(env, s), [], f"{s}: no DLQ entry")
        if port:
            lines = [f'relay_acks_total{{stream="{s}"}} {want[s]}'
                     for s in PARTS4]
            # /metrics is re-rendered on a timer: wait for the figures.
            env.wait(lambda: all(x in metrics_text(port) for x in lines),
                     f"/metrics has {lines}")
            check("\nrelay_acks_total " not in metrics_text(port),
                  "no unlabelled sample with several streams")
        d.stop()
        st = d.stats_file()
        eq(st["counters"]["acks"], 40, "stats file: total acks")
        eq(sorted(st["streams"]), sorted(PARTS4), "stats file: streams")
        for s in PARTS4:
            eq(st["streams"][s]["acks"], want[s], f"stats file: {s} acks")
        # Each partition has its own group.
        for s in PARTS4:
            eq([pairs(g)["name"] for g in env.r("XINFO", "GROUPS", s)],
               [env.group], f"{s}: its consumer group")


@case
def list_form_and_malformed_goes_to_its_partition_dlq():
    """A comma list "ev:{p0}, ev:{p1},other" is three streams; a
    malformed entry in one goes to that stream's own DLQ, and only
    there."""
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]})])
        streams = ["ev:{p0}", "ev:{p1}", "other"]
        d = env.relayd(REDIS_STREAM="ev:{p0}, ev:{p1},other")
        bad = xadd(env, "ev:{p1}", "this is not JSON")
        for i, s in enumerate(streams):
            xadd(env, s, {"kind": "x", "k": f"k{i}"})
        env.wait(lambda: env.count("end") >= 3 and
                 all(done(env, s) for s in streams),
                 "three handled, the malformed entry acknowledged")
        q = dlq(env, "ev:{p1}")
        eq(len(q), 1, "one DLQ entry in ev:{p1}'s DLQ")
        e = pairs(q[0][1])
        eq(e.get("original_id"), bad, "it is the malformed entry")
        eq(dlq(env, "ev:{p0}") + dlq(env, "other"), [],
           "the other DLQs stay empty")
        # Message ids repeat across streams: engine lines name theirs.
        lines = [l for l in d.log().splitlines()
                 if "RELAY-ENG06" in l and bad in l]
        check(lines and all(l.endswith(" stream=ev:{p1}") for l in lines),
              f"the dead-letter log line names its stream: {lines}")
        d.stop()


@case
def global_concurrency_holds_across_partitions():
    """MAX_CONCURRENCY=3 with 4 partitions and a slow app of concurrency
    8: at most (and, with 12 waiting, exactly) 3 handlers at once - not 3
    per partition."""
    with Env() as env:
        env.app("slow", [("h", {"kind": ["x"]})], concurrency=8,
                env={"SLEEP": "0.5"})
        d = env.relayd(REDIS_STREAM="ev{0..3}", MAX_CONCURRENCY="3",
                       LOG_LEVEL="INFO")
        for i in range(12):
            xadd(env, PARTS4[i % 4], {"kind": "x", "k": f"s{i}"})
        env.wait(lambda: env.count("end") >= 12 and
                 all(done(env, s) for s in PARTS4), "twelve handled",
                 timeout=60)
        eq(peak_overlap(spans(env, "slow")), 3,
           "exactly MAX_CONCURRENCY handlers in flight across partitions")
        for i in range(12):
            eq(env.count("start", f"s{i}"), 1, f"s{i} ran once")
        d.stop()


@case
def app_concurrency_holds_across_partitions():
    """An app of concurrency 2 under MAX_CONCURRENCY=8 runs at most 2 at
    once over all partitions; another app runs beside it."""
    with Env() as env:
        env.app("two", [("h", {"kind": ["y"]})], concurrency=2,
                env={"SLEEP": "0.4"})
        env.app("other", [("h", {"kind": ["z"]})], concurrency=4,
                env={"SLEEP": "0.4"})
        d = env.relayd(REDIS_STREAM="ev{0..3}", MAX_CONCURRENCY="8",
                       LOG_LEVEL="INFO")
        for i in range(8):
            xadd(env, PARTS4[i % 4], {"kind": "y", "k": f"y{i}"})
            xadd(env, PARTS4[(i + 1) % 4], {"kind": "z", "k": f"z{i}"})
        env.wait(lambda: env.count("end") >= 16 and
                 all(done(env, s) for s in PARTS4), "sixteen handled",
                 timeout=60)
        eq(peak_overlap(spans(env, "two")), 2,
           "app concurrency 2 across four partitions")
        check(peak_overlap(spans(env, "other")) >= 2,
              "the other app ran beside it")
        d.stop()


@case
def idle_partitions_do_not_delay_a_busy_one():
    """Real time (no time scale): idle partitions block in XREADGROUP
    for 1 s each; an event XADDed to another partition is still handled
    at once (each stream reads on its own Redis connection, so a blocked
    read never holds up another stream's commands)."""
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]})])
        d = env.relayd(REDIS_STREAM="ev{0..3}", LOG_LEVEL="INFO",
                       RELAY_TEST_TIME_SCALE="1")
        time.sleep(1.5)  # every partition is idle, blocking
        worst = 0.0
        for i in range(5):
            t0 = time.monotonic()
            xadd(env, PARTS4[0], {"kind": "x", "k": f"l{i}"})
            env.wait(lambda: env.count("end", f"l{i}") == 1 and
                     pending(env, PARTS4[0]) == 0, f"l{i} handled")
            worst = max(worst, time.monotonic() - t0)
            time.sleep(0.3)
        print(f"# worst XADD -> handled latency {worst:.3f}s", flush=True)
        check(worst < 0.9, f"worst latency {worst:.2f}s < 0.9s (a read "
              "blocked on another partition would add up to 1s each)")
        d.stop()


SCHED_SH = r"""#!/bin/sh
ev=$(cat)
at=${ev#*\"scheduled_at\":\"}
at=${at%%\"*}
printf '%s %s\n' "$RELAY_HANDLER" "$at" >> "$OUT"
exit 0
"""


def sched_app(env):
    d = os.path.join(env.apps_dir, "a")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "sched.sh"), "w") as f:
        f.write(SCHED_SH)
    os.chmod(os.path.join(d, "sched.sh"), 0o755)
    env.app("a", [], raw="runtime: exec\ncommand: [./sched.sh]\nenv:\n"
            f"  OUT: {json.dumps(env.out)}\nschedules:\n"
            "  - name: tick\n    handler: tick\n    cron: \"* * * * *\"\n")


@case
def schedule_occurrences_dedupe_across_daemons_with_partitions():
    """Two relayds reading ev{0..1} on one virtual clock (a minute per
    real second) publish each occurrence once, into the partition of
    relay_stream_partition(occurrence id), and it runs once."""
    with Env() as env:
        sched_app(env)
        streams = ["ev:{p0}", "ev:{p1}"]
        v0 = calendar.timegm(time.strptime("2026-03-01T08:00:30Z",
                                           "%Y-%m-%dT%H:%M:%SZ"))
        clock = f"{v0}:{int(time.time())}:60"
        ds = [env.relayd(f"r{i}", REDIS_STREAM="ev{0..1}", LOG_LEVEL="INFO",
                         RELAY_TEST_SCHEDULE_CLOCK=clock) for i in range(2)]

        def occ():
            out = []
            for s in streams:
                for _, flat in env.r("XRANGE", s, "-", "+"):
                    out.append((s, json.loads(pairs(flat)["event"])))
            return out
        env.wait(lambda: len(occ()) >= 6, "6 occurrences")
        for d in ds:
            d.stop()
        got = occ()
        ids = [e["occurrence_id"] for _, e in got]
        eq(len(ids), len(set(ids)), "one entry per occurrence over all "
           "partitions")
        for s, e in got:
            eq(s, part_of(e["occurrence_id"], streams),
               f"{e['occurrence_id']} in its partition")
        check(len({s for s, _ in got}) == 2,
              "occurrences went to both partitions")
        for s in streams:
            eq(pending(env, s), 0, f"{s}: all acknowledged")
        with open(env.out) as f:
            ran = sorted(line.split()[1] for line in f if line.strip())
        eq(ran, sorted(e["scheduled_at"] for _, e in got),
           "each occurrence ran once")


def run_relayd(vars):
    env = {k: v for k, v in os.environ.items()
           if k.startswith(("ASAN_", "UBSAN_", "LSAN_", "PATH"))}
    env.update({"REDIS_URI": "unix:///nonexistent/redis.sock",
                "REDIS_GROUP": "relay"})
    env.update(vars)
    p = subprocess.run([RELAYD], env=env, capture_output=True, text=True,
                       timeout=60)
    return p.returncode, p.stderr


@case
def bad_stream_lists_are_refused_at_start_up():
    bad = [
        ("a,,b", "empty stream name"),
        ("a,", "empty stream name"),
        ("a, b c", "blank or control"),
        ("ev{3..1}", "A <= B"),
        ("ev{a..b}", "expected PREFIX{A..B}"),
        ("ev{0..64}", "more than 64"),
        ("a,b,a", "\"a\" named twice"),
        ("ev{0..1},ev:{p1}", "\"ev:{p1}\" named twice"),
    ]
    for value, words in bad:
        rc, err = run_relayd({"REDIS_STREAM": value})
        eq(rc, 1, f"REDIS_STREAM={value!r}: exit 1")
        lines = err.strip().splitlines()
        eq(len(lines), 1, f"{value!r}: one line ({err!r})")
        check(lines[0].startswith(f'relayd: REDIS_STREAM: invalid value '
                                  f'"{value}": '),
              f"{value!r}: names the variable and value ({lines[0]!r})")
        check(words in lines[0], f"{value!r}: says {words!r}")


@case
def relayctl_reads_every_partition():
    """relayctl dlq ls lists every partition's DLQ (with its stream) and
    --stream picks one; dlq replay finds the entry's partition."""
    if not RELAYCTL:
        from harness import Skip
        raise Skip("no relayctl given")
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]})])
        d = env.relayd(REDIS_STREAM="ev{0..1}", LOG_LEVEL="INFO")
        xadd(env, "ev:{p1}", "not json")
        env.wait(lambda: len(dlq(env, "ev:{p1}")) == 1, "dead-lettered")
        base = {k: v for k, v in os.environ.items()
                if k.startswith(("ASAN_", "UBSAN_", "LSAN_", "PATH"))}
        base.update({"REDIS_URI": env.redis.uri, "REDIS_STREAM": "ev{0..1}",
                     "REDIS_GROUP": env.group, "RELAY_RUN_DIR": d.run_dir,
                     "RELAY_APPS_DIR": env.apps_dir,
                     "RELAY_STATE_DIR": d.state_dir})

        def ctl(*args):
            p = subprocess.run([RELAYCTL, *args], env=base,
                               capture_output=True, text=True, timeout=60)
            return p.returncode, p.stdout, p.stderr
        rc, out, err = ctl("dlq", "ls", "--json")
        eq(rc, 0, f"dlq ls ({err})")
        rows = json.loads(out)
        eq(len(rows), 1, "one entry over both partitions")
        eq(rows[0].get("stream"), "ev:{p1}", "it names its stream")
        rc, out, err = ctl("dlq", "ls", "--json", "--stream", "ev:{p0}")
        eq((rc, json.loads(out)), (0, []), "--stream ev:{p0}: none")
        dlq_id = rows[0]["id"]
        rc, out, err = ctl("dlq", "inspect", dlq_id)
        eq(rc, 0, f"dlq inspect finds the entry in ev:{{p1}}'s DLQ ({err})")
        check("ev:{p1}" in out, "inspect shows its stream")
        rc, out, err = ctl("dlq", "inspect", dlq_id, "--stream", "ev:{p0}")
        eq(rc, 1, "not in ev:{p0}'s DLQ")
        # relayd's dlq replay request names the stream when there are
        # several (relayctl adds it; a bare request is refused).
        r = d.control({"cmd": "dlq replay", "id": dlq_id})
        eq((r["ok"], r.get("error")), (False, "bad_request"),
           f"no stream named: {r}")
        r = d.control({"cmd": "dlq replay", "id": dlq_id,
                       "stream": "nope"})
        eq((r["ok"], r.get("error")), (False, "not_found"), f"{r}")
        rc, out, err = ctl("state", "leaks", "--json")
        eq(rc, 0, f"state leaks over both partitions ({err})")
        h = d.control({"cmd": "health"})
        eq(h.get("streams"), ["ev:{p0}", "ev:{p1}"], "health lists them")
        d.stop()
        rc, out, err = ctl("stats")
        eq(rc, 0, f"stats ({err})")
        check("Stream ev:{p1}" in out and "DLQ entries 1" in out,
              f"stats shows each stream's figures:\n{out}")


if __name__ == "__main__":
    sys.exit(run_cases())
