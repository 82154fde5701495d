#!/usr/bin/env python3
"""relayd end to end: classification, ACK, retry, DLQ, invocation state,
metrics, control-socket runs and app reloads (doc/behaviour.md B-60 ... B-65,
B-70 ... B-81, B-90 ... B-94, B-100 ... B-104).

usage: test_delivery.py RELAYD [RELAYCTL]

Real redis-server, real relayd (RELAY_TEST_TIME_SCALE=600: the 1m/2m/5m/
10m backoff becomes 100/200/500/1000 ms, reclaim and MinPendingIdle 100 ms),
real handler processes that record each run into a file.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time

from harness import (Env, case, check, eq, free_port, metrics, need_metrics,
                     run_cases,
                     wait_for)

RELAYCTL = os.environ.get("RELAYCTL") or (sys.argv[2] if len(sys.argv) > 2
                                          else "relayctl")
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")


def drained(env):
    return env.pel_count() == 0


@case
def matched_runs_acks_and_retains():
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]})])
        d = env.relayd(REDIS_INVOCATION_RETENTION="1h", LOG_LEVEL="ERROR")
        mid = env.xadd({"kind": "x", "k": "e1"})
        env.wait(lambda: env.count("end", "e1") == 1 and drained(env),
                 "handled and acknowledged")
        h = env.inv(mid)
        eq(h.get("a/h"), "ok", "invocation state")
        eq(h.get("__terminal"), "1", "terminal retention marker")
        ttl = env.r("PTTL", env.inv_key(mid))
        check(0 < ttl <= 3600 * 1000, f"retention TTL {ttl} in (0, 1h]")
        # Output forwarded verbatim with its prefix even at LOG_LEVEL=ERROR.
        env.wait(lambda: f"[a/h@{mid}] stdout: handled e1" in d.log(),
                 "handler output line in the log")
        d.stop()
        eq(env.count("start", "e1"), 1, "ran exactly once")


@case
def unmatched_is_acked_without_running():
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]})])
        d = env.relayd()
        mid = env.xadd({"kind": "other", "k": "u1"})
        env.wait(lambda: env.group_info() and
                 env.group_info()["last-delivered-id"] == mid and
                 drained(env), "read and acknowledged")
        d.stop()
        eq(env.records(), [], "no handler ran")
        eq(env.dlq(), [], "no DLQ entry")


@case
def malformed_kinds_dead_lettered_once_then_acked():
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]})])
        d = env.relayd(MAX_EVENT_BYTES="1KiB")
        big = json.dumps({"kind": "x", "k": "big", "pad": "p" * 2000})
        ids = {
            "missing": env.xadd(fields=["data", "1", "note", "a\tb"]),
            "invalid": env.xadd("{not json"),
            "notobj": env.xadd("[1,2,3]"),
            "oversized": env.xadd(big),
        }
        env.wait(lambda: len(env.dlq()) >= 4 and drained(env),
                 "four DLQ entries and an empty PEL")
        time.sleep(0.3)  # a few reclaim cycles: still exactly four
        entries = {e["original_id"]: e for e in env.dlq()}
        eq(len(env.dlq()), 4, "one entry per malformed message")
        eq(sorted(entries), sorted(ids.values()), "attributed by id")
        for kind, mid in ids.items():
            e = entries[mid]
            eq((e["app"], e["handler"], e["handler_attempts"]),
               ("-", "-", "0"), f"{kind}: placeholder fields")
            eq(e["original_stream"], "events", f"{kind}: stream")
            eq(e["group"], "relay", f"{kind}: group")
            eq(e["consumer"], "r1", f"{kind}: consumer")
            check(RFC3339.match(e["timestamp"]), f"{kind}: timestamp")
            eq(env.inv(mid).get("__terminal"), "1", f"{kind}: retained")
        eq(entries[ids["missing"]]["event"], "-", "missing: event")
        eq(entries[ids["missing"]]["reason"], "missing 'event' field",
           "missing: reason")
        # Issue 41: the fields the entry had, escaped, in source_fields;
        # the other placeholders have their value as event.
        eq(entries[ids["missing"]].get("source_fields"),
           "data=1 note=a\\x09b", "missing: source_fields")
        for kind in ("invalid", "notobj", "oversized"):
            check("source_fields" not in entries[ids[kind]],
                  f"{kind}: no source_fields")
        # relayctl dlq inspect shows them and where the entry is.
        ctl_env = {k: v for k, v in os.environ.items()
                   if k.startswith(("ASAN_", "UBSAN_", "LSAN_", "PATH"))}
        for k in ("REDIS_URI", "REDIS_STREAM", "REDIS_GROUP",
                  "RELAY_RUN_DIR", "RELAY_STATE_DIR", "RELAY_APPS_DIR"):
            ctl_env[k] = d.vars[k]
        p = subprocess.run([RELAYCTL, "dlq", "inspect",
                            entries[ids["missing"]]["_id"]], env=ctl_env,
                           capture_output=True, text=True, timeout=60)
        eq(p.returncode, 0, f"dlq inspect: {p.stderr}")
        check("Source fields:    data=1 note=a\\x09b\n" in p.stdout,
              f"inspect shows source_fields:\n{p.stdout}")
        mid = ids["missing"]
        check(f"Source entry:     redis-cli XRANGE events {mid} {mid}\n"
              in p.stdout, f"inspect prints the XRANGE hint:\n{p.stdout}")
        eq(entries[ids["invalid"]]["event"], "{not json", "invalid: event")
        check(entries[ids["invalid"]]["reason"].startswith(
            "decode event: "), "invalid: reason")
        eq(entries[ids["notobj"]]["event"], "[1,2,3]", "notobj: event")
        eq(entries[ids["notobj"]]["reason"], "'event' is not a JSON object",
           "notobj: reason")
        ov = entries[ids["oversized"]]
        eq(ov["reason"], f"event oversized: raw event value is {len(big)} "
           "bytes, exceeds MAX_EVENT_BYTES 1024", "oversized: reason")
        summary = json.loads(ov["event"])
        eq(summary.get("event_bytes"), len(big), "oversized: summary")
        check("ppp" not in ov["event"], "oversized: payload not stored")
        st = d.control({"cmd": "stats"})["stats"]["counters"]
        eq(st["events_oversized"], 1, "oversized counted")
        eq(st["events_malformed"], 4, "malformed counted")
        d.stop()
        eq(env.records(), [], "no handler ran")


def check_exhausted_entry(env, e, mid, app, handler, attempts, event):
    eq(e["original_stream"], env.stream, "original_stream")
    eq(e["original_id"], mid, "original_id")
    eq(e["group"], env.group, "group")
    eq(e["consumer"], "r1", "consumer")
    eq(e["event"], event, "event stored verbatim")
    eq(e["reason"], f'invocation exhausted: app "{app}" handler '
       f'"{handler}" exhausted after {attempts} handler attempts: '
       "exit status 3", "reason")
    eq((e["app"], e["handler"]), (app, handler), "app/handler")
    eq(e["handler_attempts"], str(attempts), "handler_attempts")
    check(int(e["deliveries"]) >= 1, "deliveries")
    check(RFC3339.match(e["timestamp"]), f"timestamp {e['timestamp']}")


@case
def failing_handler_five_attempts_on_backoff_then_dlq():
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]})],
                env={"FAIL": "h", "API_KEY": "env-secret-4711"})
        d = env.relayd()
        ev = '{"kind":"x","k":"f1"}'
        mid = env.xadd(ev)
        env.wait(lambda: len(env.dlq()) == 1 and drained(env),
                 "dead-lettered and acknowledged")
        time.sleep(0.3)
        eq(env.count("fail", "f1"), 5, "5 attempts (retries 4)")
        eq(env.count("end", "f1"), 0, "never succeeded")
        dl = env.dlq()
        eq(len(dl), 1, "one DLQ entry")
        check_exhausted_entry(env, dl[0], mid, "a", "h", 5, ev)
        h = env.inv(mid)
        check(re.match(r"^exhausted:5:[0-9a-f]{32}:dlq$", h["a/h"]),
              f"marker {h['a/h']}")
        eq(h.get("__terminal"), "1", "retained")
        token = h["a/h"].split(":")[2]
        check(token not in d.log(), "claim token not logged")
        check("env-secret-4711" not in d.log(), "env value not logged")
        # The fixed backoff (1m, 2m, 5m, 10m) scaled by 600: the gap
        # between a failure and the next start is at least the backoff.
        recs = [r for r in env.records() if r[1] == "f1"]
        fails = [r[4] for r in recs if r[0] == "fail"]
        starts = [r[4] for r in recs if r[0] == "start"]
        for i, backoff_ms in enumerate((100, 200, 500, 1000)):
            gap_ms = (starts[i + 1] - fails[i]) / 1e6
            check(gap_ms >= backoff_ms * 0.95,
                  f"attempt {i + 2} started {gap_ms:.0f} ms after failure "
                  f"{i + 1}; backoff is {backoff_ms} ms")
        st = d.control({"cmd": "stats"})["stats"]["counters"]
        eq(st["handler_failure"], 5, "failures counted")
        eq(st["retries"], 4, "retries counted")
        eq(st["dlq_entries"], 1, "dlq entries counted")
        d.stop()


@case
def two_handlers_one_failing_other_runs_once():
    with Env() as env:
        env.app("a", [("good", {"kind": ["x"]}), ("bad", {"kind": ["x"]})],
                env={"FAIL": "bad"})
        d = env.relayd()
        mid = env.xadd({"kind": "x", "k": "t1"})
        env.wait(lambda: len(env.dlq()) == 1 and drained(env),
                 "dead-lettered and acknowledged")
        time.sleep(0.3)
        eq(env.count("start", "t1", handler="good"), 1,
           "the good handler ran exactly once across redeliveries")
        eq(env.count("fail", "t1", handler="bad"), 5, "bad: 5 attempts")
        dl = env.dlq()
        eq(len(dl), 1, "exactly one DLQ entry")
        eq((dl[0]["app"], dl[0]["handler"]), ("a", "bad"), "attributed")
        h = env.inv(mid)
        eq(h["a/good"], "ok", "good: ok")
        # Per message, invocations run one at a time in declaration
        # order: good's first run ended before bad's first start.
        recs = [r for r in env.records() if r[1] == "t1"]
        eq(recs[0][:4], ("start", "t1", "a", "good"), "good first")
        eq(recs[1][:4], ("end", "t1", "a", "good"), "good ended first")
        d.stop()


@case
def three_apps_exhausting_three_attributed_entries():
    with Env() as env:
        for name in ("a1", "a2", "a3"):
            env.app(name, [("h", {"kind": ["x"]}, {"retries": 0})],
                    env={"FAIL": "h"})
        d = env.relayd()
        ev = '{"kind":"x","k":"m3"}'
        mid = env.xadd(ev)
        env.wait(lambda: len(env.dlq()) == 3 and drained(env),
                 "three entries and an empty PEL")
        time.sleep(0.3)
        dl = env.dlq()
        eq(len(dl), 3, "three entries")
        eq([e["app"] for e in dl], ["a1", "a2", "a3"], "dispatch order")
        for e in dl:
            check_exhausted_entry(env, e, mid, e["app"], "h", 1, ev)
        d.stop()


@case
def redelivery_before_next_attempt_at_does_not_execute():
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]}, {"retries": 1})],
                env={"FAIL": "h"})
        d = env.relayd()
        mid = env.xadd({"kind": "x", "k": "r1"})
        env.wait(lambda: env.inv(mid).get("a/h", "").startswith(
            "next_attempt_at:"), "first failure recorded")
        # Push the deadline an hour ahead, keeping attempt and token.
        _, _, attempt, token = env.inv(mid)["a/h"].split(":")
        far = int(time.time() * 1000) + 3600 * 1000
        env.r("HSET", env.inv_key(mid), "a/h",
              f"next_attempt_at:{far}:{attempt}:{token}")
        deliveries0 = env.pel()[0]["deliveries"]
        # Reclaims every 100 ms redeliver it; none may execute.
        env.wait(lambda: env.pel()[0]["deliveries"] >= deliveries0 + 3,
                 "three more redeliveries")
        eq(env.count("start", "r1"), 1, "no execution before the deadline")
        eq(env.pel_count(), 1, "still pending")
        # Deadline passed: the next redelivery runs attempt 2.
        env.r("HSET", env.inv_key(mid), "a/h",
              f"next_attempt_at:{int(time.time() * 1000) - 1}:{attempt}:"
              f"{token}")
        env.wait(lambda: len(env.dlq()) == 1 and drained(env),
                 "attempt 2 ran, exhausted")
        eq(env.count("start", "r1"), 2, "two attempts in total")
        d.stop()


@case
def metrics_invariant_and_histogram():
    need_metrics()
    port = free_port()
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]})])
        d = env.relayd(METRICS_ADDR=f"127.0.0.1:{port}")
        for i in range(6):
            env.xadd({"kind": "x", "k": f"m{i}"})
        for i in range(4):
            env.xadd({"kind": "nope", "k": f"n{i}"})
        env.xadd("not json")
        env.wait(lambda: env.count("end") == 6 and drained(env) and
                 len(env.dlq()) == 1, "all handled")

        def settled():
            m = metrics(port)
            # /metrics is a snapshot refreshed on a timer: wait for
            # one taken after the last handler finished.
            return m if (m["relay_events_matched_total"] == 6 and
                         m["relay_events_unmatched_total"] == 4 and
                         m["relay_handler_success_total"] == 6 and
                         m["relay_dlq_entries_total"] == 1) else None
        m = wait_for(settled, "metrics refreshed")
        eq(m["relay_events_received_total"],
           m["relay_events_matched_total"] +
           m["relay_events_unmatched_total"], "received = matched + "
           "unmatched")
        eq(m["relay_events_received_total"], 10, "received")
        eq(m["relay_handler_success_total"], 6, "successes")
        eq(m["relay_handler_failure_total"], 0, "failures")
        eq(m['relay_handler_duration_seconds_count{app="a",handler="h"}'],
           6, "histogram count")
        eq(m['relay_handler_duration_seconds_bucket{app="a",handler="h",'
             'le="+Inf"}'], 6, "+Inf bucket")
        eq(m["relay_redis_up"], 1, "redis up")
        eq(m["relay_in_flight_invocations"], 0, "nothing running")
        # stats reset zeroes counters; the stats file follows.
        r = d.control({"cmd": "stats reset"})
        eq(r["stats"]["counters"]["events_matched"], 0, "reset")
        check(r["stats"]["reset_at"], "reset_at set")
        eq(d.stats_file()["counters"]["events_matched"], 0, "file reset")
        d.stop()
        st = d.stats_file()
        eq(st["consumer"], "r1", "stats file consumer")
        eq(st["counters"]["events_received"],
           st["counters"]["events_matched"] +
           st["counters"]["events_unmatched"], "invariant in the file")


@case
def gauges_follow_a_running_handler():
    need_metrics()
    port = free_port()
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]})], env={"SLOW": "2"})
        d = env.relayd(METRICS_ADDR=f"127.0.0.1:{port}")
        env.xadd({"kind": "x", "k": "g1", "slow": True})
        env.wait(lambda: env.count("start", "g1") == 1, "handler running")
        m = env.wait(lambda: (lambda m: m if (
            m["relay_in_flight_invocations"] == 1 and
            m["relay_pending_entries"] == 1) else None)(metrics(port)),
            "gauges while it runs")
        eq(m["relay_buffered_events"], 1, "one message in memory")
        check(m["relay_pending_oldest_age_seconds"] >= 0, "age")
        m = env.wait(lambda: (lambda m: m if (
            m["relay_in_flight_invocations"] == 0 and
            m["relay_pending_entries"] == 0 and
            m["relay_buffered_events"] == 0) else None)(metrics(port)),
            "gauges back to zero")
        eq(m["relay_handler_success_total"], 1, "one success")
        check(m['relay_handler_duration_seconds_bucket{app="a",'
                'handler="h",le="1"}'] == 0 and
              m['relay_handler_duration_seconds_bucket{app="a",'
                'handler="h",le="5"}'] == 1, "a ~2 s run in the 5 s bucket")
        d.stop()


@case
def sigterm_lets_running_handler_finish():
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]})], env={"SLOW": "1"})
        d = env.relayd()
        mid = env.xadd({"kind": "x", "k": "s1", "slow": True})
        env.wait(lambda: env.count("start", "s1") == 1, "handler started")
        d.signal(15)
        eq(d.wait(), 0, "exit status after SIGTERM")
        d.check_sanitizers()
        eq(env.count("end", "s1"), 1, "the running handler finished")
        eq(env.inv(mid).get("a/h"), "ok", "its outcome was recorded")
        # Whatever was left pending completes after a restart without a
        # second run.
        d2 = env.relayd("r1b")
        env.wait(lambda: drained(env), "PEL empty")
        eq(env.count("start", "s1"), 1, "not run again")
        d2.stop()


@case
def second_signal_stops_at_once():
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]}, {"timeout": "20s"})],
                env={"SLOW": "15"})
        d = env.relayd()
        mid = env.xadd({"kind": "x", "k": "q1", "slow": True})
        env.wait(lambda: env.count("start", "q1") == 1, "handler started")
        t0 = time.monotonic()
        d.signal(15)
        time.sleep(0.2)
        d.signal(15)
        eq(d.wait(), 0, "exit status")
        check(time.monotonic() - t0 < 10, "did not wait for the handler")
        eq(env.pel_count(), 1, "the message stays pending")
        check(env.inv(mid).get("a/h", "").startswith("running:"),
              "claim left to expire")


@case
def control_app_invoke_and_dlq_replay():
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]}, {"retries": 0}),
                      ("other", {"kind": ["y"]})], env={"FAIL": "h"})
        d = env.relayd()
        r = d.control({"cmd": "app invoke", "app": "a",
                       "event": {"kind": "y", "k": "inv1"}})
        eq(r["ok"], True, f"invoke: {r}")
        eq([(x["handler"], x["status"]) for x in r["results"]],
           [("other", "ok")], "invoke results")
        eq(r["success"], True, "invoke success")
        eq(env.count("end", "inv1", handler="other"), 1, "it ran")
        r = d.control({"cmd": "app invoke", "app": "nope", "event": {}})
        eq((r["ok"], r["error"]), (False, "not_found"), "unknown app")
        # A DLQ entry, then fix the handler (reload) and replay it.
        mid = env.xadd({"kind": "x", "k": "rp1"})
        env.wait(lambda: len(env.dlq()) == 1 and drained(env), "DLQ entry")
        dlq_id = env.dlq()[0]["_id"]
        env.app("a", [("h", {"kind": ["x"]}, {"retries": 0}),
                      ("other", {"kind": ["y"]})], env={"FAIL": ""})
        d.signal(1)  # SIGHUP: reload now
        env.wait(lambda: "RELAYD-APP06" in d.log(), "app reloaded")
        r = d.control({"cmd": "dlq replay", "id": dlq_id})
        eq(r["ok"], True, f"replay: {r}")
        eq(r["results"][0]["status"], "ok", "replayed handler succeeded")
        eq(r["removed"], True, "entry removed")
        env.wait(lambda: env.dlq() == [], "DLQ empty")
        eq(env.count("end", "rp1", handler="h"), 1, "replayed run")
        r = d.control({"cmd": "dlq replay", "id": dlq_id})
        eq((r["ok"], r["error"]), (False, "not_found"), "gone")
        check(mid, "")
        # A placeholder has no handler; "keep" leaves a replayed entry.
        env.xadd("not json")
        env.xadd({"kind": "x", "k": "rp2"})
        env.wait(lambda: len(env.dlq()) == 1 and drained(env),
                 "placeholder entry")
        r = d.control({"cmd": "dlq replay", "id": env.dlq()[0]["_id"]})
        eq((r["ok"], r["error"]), (False, "not_replayable"), "placeholder")
        d.stop()


@case
def invalid_template_keeps_previous_version():
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]})])
        d = env.relayd()
        env.app("a", [], raw="runtime: exec\ncommand: [./handler.sh]\n"
                "events:\n  - handler: h\n    pattern: {kind: x}\n")
        env.wait(lambda: "RELAYD-APP04" in d.log(), "invalid reload logged")
        check(re.search(r"template\.yaml:5:\d+: ", d.log()),
              "file:line:col in the log")
        env.xadd({"kind": "x", "k": "old1"})
        env.wait(lambda: env.count("end", "old1") == 1 and drained(env),
                 "previous version still serving")
        # A valid edit is picked up by the inotify watch alone.
        env.app("a", [("h", {"kind": ["x"]}), ("h2", {"kind": ["z"]})])
        env.wait(lambda: "RELAYD-APP06" in d.log(), "valid reload")
        env.xadd({"kind": "z", "k": "new1"})
        env.wait(lambda: env.count("end", "new1", handler="h2") == 1 and
                 drained(env), "new rule serving")
        d.stop()


@case
def json_logs():
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]}),
                      ("bad", {"kind": ["x"]}, {"retries": 0})],
                env={"FAIL": "bad"})
        d = env.relayd(LOG_FORMAT="json", LOG_LEVEL="INFO")
        mid = env.xadd({"kind": "x", "k": "j1", "secret": "payload-value"})
        env.wait(lambda: env.count("end", "j1") == 1 and drained(env),
                 "handled")
        d.stop()
        lines = [ln for ln in d.log().splitlines() if ln.strip()]
        objs = [json.loads(ln) for ln in lines]  # every line is JSON
        check(all("ts" in o and "level" in o and "msg" in o for o in objs),
              "ts, level, msg on every line")
        check(any(o.get("output") == "stdout" and
                  o["msg"] == f"[a/h@{mid}] stdout: handled j1"
                  for o in objs), "handler output forwarded verbatim")
        fails = [o for o in objs if o.get("msgid") == "RELAY-ENG04" and
                 o.get("level") == "WARN"]
        eq(len(fails), 1, "one handler-failure line")
        f = fails[0]
        eq((f.get("app"), f.get("handler"), f.get("message_id"),
            f.get("attempt"), f.get("exit_code")),
           ("a", "bad", mid, "1", "3"), "structured keys")
        check(f.get("duration_ms", "").isdigit(), "duration_ms")
        check("payload-value" not in "\n".join(
            ln for ln in lines if '"output"' not in ln),
            "no payload in relayd's own log lines")


@case
def redis_down_at_startup_then_up():
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]})])
        env.r.close()
        env.redis.stop()
        d = env.relayd(start=False)
        d.start(wait_ready=False)
        h = env.wait(lambda: d.control({"cmd": "health"}),
                     "control socket answers without Redis")
        eq((h["ready"], h["redis_up"]), (False, False), "not ready")
        check(h["reason"], "a reason is given")
        env.redis.start()
        d.wait_ready()
        env.xadd({"kind": "x", "k": "late"})
        env.wait(lambda: env.count("end", "late") == 1 and drained(env),
                 "handled once Redis is up")
        d.stop()


@case
def stats_file_flushed_periodically():
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]})])
        d = env.relayd()
        env.xadd({"kind": "x", "k": "p1"})
        # Every 5 s, scaled by RELAY_TEST_TIME_SCALE (floor 50 ms).
        st = env.wait(lambda: os.path.exists(os.path.join(
            d.state_dir, "stats.json")) and d.stats_file()["counters"]
            ["handler_success"] == 1 and d.stats_file(), "stats.json")
        eq(st["version"], 1, "format version")
        eq((st["stream"], st["group"], st["consumer"]),
           ("events", "relay", "r1"), "identity")
        eq(st["counters"]["events_matched"], 1, "matched")
        eq([(x["app"], x["handler"], x["attempts"]) for x in
            st["handlers"]], [("a", "h", 1)], "per-handler figures")
        leftovers = [n for n in os.listdir(d.state_dir) if n != "stats.json"]
        eq(leftovers, [], "no temporary files left behind")
        d.signal(2)  # SIGINT stops like SIGTERM
        eq(d.wait(), 0, "exit status after SIGINT")


@case
def app_added_at_runtime_is_served():
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]})])
        d = env.relayd()
        # The directory first, the template a moment later (as an editor
        # or a deploy tool would): the watch must still see the template.
        os.makedirs(os.path.join(env.apps_dir, "late"))
        time.sleep(0.3)
        env.app("late", [("h", {"kind": ["y"]})])
        env.wait(lambda: any(a["name"] == "late" and a["status"] == "ok"
                             for a in d.control({"cmd": "apps"})["apps"]),
                 "new app loaded without a signal")
        env.xadd({"kind": "y", "k": "n1"})
        env.wait(lambda: env.count("end", "n1", app="late") == 1 and
                 drained(env), "new app served")
        d.stop()


@case
def removed_app_stops_gating_the_ack():
    with Env() as env:
        env.app("keep", [("h", {"kind": ["x"]})])
        env.app("gone", [("h", {"kind": ["x"]})], env={"FAIL": "h"})
        d = env.relayd()
        mid = env.xadd({"kind": "x", "k": "g1"})
        env.wait(lambda: env.inv(mid).get("gone/h", "").startswith(
            "next_attempt_at:"), "first failure of the doomed app")
        # Hold its retry an hour away, then remove the app.
        _, _, attempt, token = env.inv(mid)["gone/h"].split(":")
        far = int(time.time() * 1000) + 3600 * 1000
        env.r("HSET", env.inv_key(mid), "gone/h",
              f"next_attempt_at:{far}:{attempt}:{token}")
        eq(env.pel_count(), 1, "pending while the app gates it")
        shutil.rmtree(os.path.join(env.apps_dir, "gone"))
        env.wait(lambda: drained(env), "acknowledged once the rule is gone")
        eq(env.count("start", "g1", app="keep"), 1, "keep ran once")
        eq(env.count("start", "g1", app="gone"), 1, "gone ran once")
        eq(env.dlq(), [], "no DLQ entry for a removed rule")
        d.stop()


if __name__ == "__main__":
    sys.exit(run_cases())
