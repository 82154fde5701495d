#!/usr/bin/env python3
"""relayd end to end: misuse found by black-box testing (issue 13) --
hostile producer values and a Redis step that keeps failing.

usage: test_hardening.py RELAYD RELAYCTL

Real redis-server, real relayd (RELAY_TEST_TIME_SCALE=600: reclaim
interval and MinPendingIdle 100 ms, a stuck message's backoff 100 ms
doubling to 3 s), real handler processes recording into a file.
"""
import os
import subprocess
import sys
import time

from harness import Env, case, check, eq, run_cases

RELAYCTL = os.environ.get("RELAYCTL") or (sys.argv[2] if len(sys.argv) > 2
                                          else None)


def ctl(d, *args):
    env = {k: v for k, v in os.environ.items()
           if k.startswith(("ASAN_", "UBSAN_", "LSAN_", "PATH"))}
    for k in ("REDIS_URI", "REDIS_STREAM", "REDIS_GROUP", "RELAY_RUN_DIR",
              "RELAY_STATE_DIR", "RELAY_APPS_DIR"):
        env[k] = d.vars[k]
    p = subprocess.run([RELAYCTL, *args], env=env, capture_output=True,
                       text=True, errors="replace", timeout=120)
    return p.returncode, p.stdout, p.stderr


# `XADD s * event ""` and an event whose first byte is NUL: one DLQ
# entry each with the raw value, placeholder marker, ACK, retention.
@case
def empty_and_nul_events_are_dead_lettered():
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]})])
        d = env.relayd()
        m1 = env.r("XADD", "events", "*", "event", "")
        m2 = env.r("XADD", "events", "*", "event", b"\0{}")
        env.wait(lambda: len(env.dlq()) == 2 and env.pel_count() == 0 and
                 env.inv(m2).get("__terminal") == "1",
                 "both dead-lettered and acknowledged")
        dlq = env.dlq()
        eq(len(dlq), 2, "two DLQ entries")
        by_id = {e["original_id"]: e for e in dlq}
        eq(by_id[m1]["event"], "", "the empty value, verbatim")
        check(by_id[m1]["reason"].startswith("decode event: "),
              "empty: " + by_id[m1]["reason"])
        eq(by_id[m2]["reason"], "'event' field is not a string",
           "NUL first byte")
        eq(by_id[m2]["app"], "-", "placeholder app")
        for m in (m1, m2):
            inv = env.inv(m)
            eq(inv.get("__dlq_placeholder"), "1", "placeholder marker")
            eq(inv.get("__terminal"), "1", "retained")
        d.stop()


# A message whose state hash key holds a string: every step on it fails
# with WRONGTYPE. relayctl health lists it as stuck with its reason, the
# metrics count it, it is retried only per its backoff, and it completes
# once the key is repaired.
@case
def stuck_message_is_reported_and_backs_off():
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]})])
        key = env.inv_key("5-1")
        env.r("SET", key, "not a hash")
        env.r("XADD", "events", "5-1", "event", '{"kind":"x"}')
        d = env.relayd()
        env.wait(lambda: d.control({"cmd": "health"}).get("stuck"),
                 "a stuck message in health")
        h = d.control({"cmd": "health"})
        eq(len(h["stuck"]), 1, "one stuck message")
        eq(h["stuck"][0]["message_id"], "5-1", "its id")
        eq(h["stuck"][0]["reason"], "claim_classification: wrong type",
           "its reason")
        rc, out, err = ctl(d, "health")
        eq(rc, 0, "still healthy: " + err)
        check("stuck: message 5-1: claim_classification: wrong type" in
              out, "relayctl health shows it: " + out)
        # Reclaims come every 100 ms; tries only per backoff.
        time.sleep(1.5)
        warns = [l for l in d.log().splitlines()
                 if "claim_classification" in l and "5-1" in l and
                 "WARN" in l]
        check(2 <= len(warns) <= 6, f"one line per backoff step: "
              f"{len(warns)}")
        eq(env.pel_count(), 1, "kept pending")
        eq(env.count("start"), 0, "nothing ran")
        env.r("DEL", key)
        env.wait(lambda: env.pel_count() == 0, "completes once repaired",
                 timeout=20)
        env.wait(lambda: not d.control({"cmd": "health"}).get("stuck"),
                 "no longer stuck")
        d.stop()


if __name__ == "__main__":
    sys.exit(run_cases())
