#!/usr/bin/env python3
"""relayd end to end: doc/behaviour.md statements the coverage audit
(tests/SPEC-COVERAGE.md, "Audit") found without a test that could fail.

usage: test_spec_gaps.py RELAYD

Real redis-server, real relayd (RELAY_TEST_TIME_SCALE=600: backoff
100/200/500/1000 ms, reclaim interval and MinPendingIdle 100 ms, slot
wait 50 ms), real handler processes recording into a file.
"""
import os
import shutil
import subprocess
import sys
import time

from harness import Env, case, check, eq, peak_overlap, run_cases, spans


def drained(env):
    return env.pel_count() == 0


def overlaps(a, b):
    return any(s1 < e2 and s2 < e1 for s1, e1 in a for s2, e2 in b)


# "Any producer can append to the stream. With redis-cli against the
# configured stream: redis-cli XADD events '*' event '{...}'";
# "Relay never assumes where events originate; it only reads the stream";
# the handler gets the external event JSON on stdin; "Relay's own ACKED
# retention never trims an unacknowledged entry" (relayd trims nothing).
@case
def producer_redis_cli_xadd_is_handled():
    with Env() as env:
        got = os.path.join(env.dir, "stdin")
        env.app("cdc", [], raw="runtime: exec\n"
                "command: [/bin/sh, -c, 'cat > \"$GOT.$RELAY_MESSAGE_ID\"']\n"
                f"env:\n  GOT: {got}\n"
                "events:\n  - handler: events.created.handler\n"
                "    pattern:\n      event_name: [INSERT]\n"
                "      table_name: [users]\n    timeout: 20s\n"
                "    retries: 2\n"
                "  - handler: never\n    retries: 0\n"
                "    pattern:\n      event_name: [DELETE]\n")
        d = env.relayd()
        ev = '{"event_name":"INSERT","table_name":"users"}'
        if shutil.which("redis-cli"):
            p = subprocess.run(["redis-cli", "-s", env.redis.sock, "XADD",
                                "events", "*", "event", ev],
                               capture_output=True, text=True, timeout=20)
            eq(p.returncode, 0, "redis-cli XADD: " + p.stderr)
            mid = p.stdout.strip()
        else:
            mid = env.xadd(ev)
        # Another producer adds fields of its own around "event".
        ev2 = '{"event_name":"INSERT","table_name":"users","id":2}'
        mid2 = env.xadd(fields=["origin", "billing-svc", "event", ev2,
                                "trace", "abc"])
        env.wait(lambda: drained(env) and
                 env.inv(mid2).get("cdc/events.created.handler") == "ok",
                 "both handled and acknowledged")
        eq(env.inv(mid).get("cdc/events.created.handler"), "ok",
           "redis-cli entry handled")
        for m, want in ((mid, ev), (mid2, ev2)):
            with open(f"{got}.{m}", "rb") as f:
                eq(f.read(), want.encode(), "the event JSON on stdin, "
                   "byte for byte")
        check("cdc/never" not in env.inv(mid), "the DELETE rule never ran")
        eq(env.dlq(), [], "no DLQ entry")
        eq(env.r("XLEN", "events"), 2, "relayd trims nothing")
        d.stop()


# "Events may also be created by relay app invoke (manual, synchronous,
# not part of the stream lifecycle)".
@case
def app_invoke_is_outside_the_stream_lifecycle():
    with Env() as env:
        env.app("a", [("ok", {"kind": ["x"]}),
                      ("bad", {"kind": ["x"]}, {"retries": 3})],
                env={"FAIL": "bad"})
        d = env.relayd()
        r = d.control({"cmd": "app invoke", "app": "a",
                       "event": {"kind": "x", "k": "man1"}})
        # Synchronous: both ran before the reply came back.
        eq([(x["handler"], x["status"]) for x in r["results"]],
           [("ok", "ok"), ("bad", "failed")], f"results {r}")
        eq(env.count("end", "man1", handler="ok"), 1, "ok ran")
        eq(env.count("fail", "man1", handler="bad"), 1, "bad ran")
        time.sleep(0.5)  # several reclaim cycles and backoff periods
        eq(env.count("start", "man1"), 2, "a failed invoke is not retried")
        eq(env.r("XLEN", "events"), 0, "nothing written to the stream")
        eq(env.pel_count(), 0, "nothing pending")
        eq(env.r("KEYS", "relay:invocation:*"), [], "no invocation state")
        eq(env.r("EXISTS", "relay:events:dlq"), 0, "no DLQ entry")
        d.stop()


# "Unmatched external events and malformed external-event messages are
# acknowledged (malformed ones only after a DLQ entry is persisted)";
# "Entries are written before the XACK. If a write fails, the original
# stays pending".
@case
def malformed_acked_only_after_dlq_entry_persisted():
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]})])
        dlq = "relay:events:dlq"
        env.r("SET", dlq, "not a stream")  # every DLQ write fails
        d = env.relayd()
        mid = env.xadd("{not json")
        env.wait(lambda: env.pel() and env.pel()[0]["deliveries"] >= 3,
                 "redelivered while the DLQ write fails")
        eq(env.pel_count(), 1, "not acknowledged without a DLQ entry")
        check("__terminal" not in env.inv(mid), "not retained")
        eq(env.r("TYPE", dlq), "string", "nothing written")
        env.r("DEL", dlq)
        env.wait(lambda: drained(env), "acknowledged once the entry exists")
        entries = env.dlq()
        eq([(e["original_id"], e["app"], e["handler"]) for e in entries],
           [(mid, "-", "-")], "exactly one placeholder entry")
        eq(env.inv(mid).get("__terminal"), "1", "retained after the ACK")
        eq(env.records(), [], "no handler ran")
        d.stop()


# "Retry/exhaustion/backoff and the reclaim interval are fixed internals,
# not environment variables."
@case
def retry_backoff_reclaim_not_configurable_by_environment():
    knobs = {}
    for name in ("RETRIES", "MAX_RETRIES", "BACKOFF", "RETRY_BACKOFF",
                 "RECLAIM_INTERVAL", "MIN_PENDING_IDLE", "MAX_ATTEMPTS"):
        knobs[name] = "0"
        knobs["RELAY_" + name] = "0"
    knobs["MIN_PENDING_IDLE"] = knobs["RELAY_RECLAIM_INTERVAL"] = "1h"
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]})], env={"FAIL": "h"})
        d = env.relayd(**knobs)
        env.xadd({"kind": "x", "k": "fx"})
        env.wait(lambda: len(env.dlq()) == 1 and drained(env),
                 "dead-lettered on the built-in schedule")
        eq(env.count("fail", "fx"), 5, "default retries 4: 5 attempts")
        eq(env.dlq()[0]["handler_attempts"], "5", "handler_attempts")
        recs = [r for r in env.records() if r[1] == "fx"]
        fails = [r[4] for r in recs if r[0] == "fail"]
        starts = [r[4] for r in recs if r[0] == "start"]
        for i, backoff_ms in enumerate((100, 200, 500, 1000)):
            gap = (starts[i + 1] - fails[i]) / 1e6
            check(gap >= backoff_ms * 0.95, f"attempt {i + 2} after "
                  f"{gap:.0f} ms; the fixed backoff is {backoff_ms} ms")
        d.stop()


# "Across messages, invocations run concurrently. Distinct events ...
# execute simultaneously, bounded by the worker-global MAX_CONCURRENCY
# and the per-app effective concurrency (min(concurrency,
# MAX_CONCURRENCY))."
@case
def per_app_concurrency_is_min_of_app_and_global():
    with Env() as env:
        env.app("one", [("h", {"kind": ["x"]})], concurrency=1,
                env={"SLEEP": "0.4"})
        env.app("two", [("h", {"kind": ["y"]})], concurrency=2,
                env={"SLEEP": "0.4"})
        env.app("wide", [("h", {"kind": ["z"]})], concurrency=8,
                env={"SLEEP": "0.4"})
        d = env.relayd(MAX_CONCURRENCY="8")
        env.xadd_many([{"kind": "x", "k": f"x{i}"} for i in range(3)] +
                      [{"kind": "y", "k": f"y{i}"} for i in range(4)])
        env.wait(lambda: env.count("end") >= 7 and drained(env),
                 "seven handled")
        one, two = spans(env, "one"), spans(env, "two")
        eq(peak_overlap(one), 1, "app concurrency 1: one at a time")
        eq(peak_overlap(two), 2, "app concurrency 2: two at once, never 3")
        check(overlaps(one, two), "distinct events of two apps ran "
              "simultaneously")
        eq(env.count("fail"), 0, "no failures")
        d.stop()
        # concurrency 8 under MAX_CONCURRENCY=2: effective 2.
        open(env.out, "w").close()
        d = env.relayd("r2", MAX_CONCURRENCY="2")
        env.xadd_many([{"kind": "z", "k": f"z{i}"} for i in range(5)])
        env.wait(lambda: env.count("end") >= 5 and drained(env),
                 "five handled")
        eq(peak_overlap(spans(env, "wide")), 2, "min(8, 2) = 2 at once")
        eq(env.dlq(), [], "waiting charged nothing")
        d.stop()


# "Relay consumes external events from the configured Redis Stream with a
# consumer group"; "The DLQ stream is relay:<REDIS_STREAM>:dlq" (every
# other daemon case runs on the names "events"/"relay").
@case
def configured_stream_group_and_dlq_key():
    with Env(stream="orders:eu", group="g-1") as env:
        env.app("a", [("h", {"kind": ["x"]}, {"retries": 0})],
                env={"FAIL": "h"})
        env.app("ok", [("h", {"kind": ["y"]})])
        d = env.relayd()
        other = env.xadd({"kind": "y", "k": "elsewhere"}, stream="events")
        okid = env.xadd({"kind": "y", "k": "s1"})
        ev = '{"kind":"x","k":"s2"}'
        bad = env.xadd(ev)
        env.wait(lambda: len(env.dlq()) == 1 and drained(env),
                 "handled on the configured stream")
        eq(env.count("end", "s1"), 1, "event on the configured stream ran")
        eq(env.count("start", "elsewhere"), 0, "another stream is not read")
        check(other, "")
        eq([g[1] for g in env.r("XINFO", "GROUPS", "orders:eu")], ["g-1"],
           "the configured group")
        e = env.dlq()[0]
        eq((e["original_stream"], e["original_id"], e["group"], e["app"],
            e["event"]), ("orders:eu", bad, "g-1", "a", ev),
           "entry in relay:orders:eu:dlq")
        eq(env.r("EXISTS", "relay:events:dlq"), 0, "no default DLQ key")
        eq(env.r("HGET", "relay:invocation:orders%3Aeu:g-1:" +
                 okid.replace(":", "%3A"), "ok/h"), "ok",
           "state hash under the configured names")
        d.stop()


if __name__ == "__main__":
    sys.exit(run_cases())
