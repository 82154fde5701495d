#!/usr/bin/env python3
"""The attempt timeline of an invocation and relayctl event show (issue 45
items 1 and 2; doc/redis-layout.md R-3 __timeline:<app>/<handler>, R-5
timeline; doc/cli.md "event show"):

* a handler that fails twice and then succeeds leaves three entries in
  its invocation's state hash, in order, with outcome, exit status,
  stderr of the failed ones, replica, warm/cold and times; relayctl
  event show lists them (text and --json), also once the entry is
  trimmed from the stream (from the retained state, saying so);
* an exhausted invocation's DLQ entry keeps the timeline (field
  timeline, before trace), and relayctl dlq inspect shows it, as text and
  as --json;
* relayctl tail --json (item 3; R-10 the outcome stream) prints the
  attempts of two events live, as they are recorded, filters by outcome,
  stops on SIGINT with exit 0, and exits 1 with a message when Redis goes
  away; RELAY_OUTCOMES=0 writes no outcome stream.

Real redis-server, real relayd, real relayctl, real handler processes.

usage: test_timeline.py RELAYD RELAYCTL
"""
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time

from harness import Env, case, check, eq, run_cases

RELAYCTL = os.environ.get("RELAYCTL") or (sys.argv[2] if len(sys.argv) > 2
                                          else "relayctl")

# Fails (exit status 1, a line on stderr) until it ran OK_AFTER times.
PY_HANDLER = r'''
import os, sys

def run(event):
    n = os.path.join(os.environ["COUNT_DIR"], "n-" + str(event.get("k")))
    k = int(open(n).read()) if os.path.exists(n) else 0
    open(n, "w").write(str(k + 1))
    if k + 1 > int(os.environ["OK_AFTER"]):
        return
    print("attempt %d went wrong" % (k + 1), file=sys.stderr)
    raise RuntimeError("no luck %d" % (k + 1))
'''


def ctl_env(d):
    env = {k: v for k, v in os.environ.items()
           if k.startswith(("ASAN_", "UBSAN_", "LSAN_", "PATH"))}
    for k in ("REDIS_URI", "REDIS_STREAM", "REDIS_GROUP", "RELAY_RUN_DIR",
              "RELAY_STATE_DIR", "RELAY_APPS_DIR"):
        env[k] = d.vars[k]
    return env


def ctl(d, *args):
    p = subprocess.run([RELAYCTL, *args], env=ctl_env(d),
                       stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, errors="replace", timeout=120)
    check("Sanitizer" not in p.stderr and "runtime error" not in p.stderr,
          f"relayctl {args}: sanitizer report:\n{p.stderr}")
    return p.returncode, p.stdout, p.stderr


def py_app(env, name, retries, ok_after):
    d = os.path.join(env.apps_dir, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "h.py"), "w") as f:
        f.write(PY_HANDLER)
    count = os.path.join(env.dir, "count-" + name)
    os.makedirs(count, exist_ok=True)
    env.app(name, [], raw=(
        "runtime: python3\n"
        f"env:\n  COUNT_DIR: {json.dumps(count)}\n"
        f"  OK_AFTER: '{ok_after}'\n"
        "events:\n  - handler: h.run\n    pattern: {kind: [tl]}\n"
        f"    retries: {retries}\n    timeout: 20s\n"))


def timeline(env, mid, field):
    """The stored entries, split into their words (R-3)."""
    v = env.inv(mid).get("__timeline:" + field)
    check(v is not None, f"timeline of {field} in the state hash")
    return [line.split(" ", 8) for line in v.split("\n")]


def shown(d, mid):
    rc, out, err = ctl(d, "event", "show", mid, "--json")
    eq(rc, 0, f"event show --json: {err}")
    return json.loads(out)


@case
def fails_twice_then_succeeds_three_entries():
    with Env() as env:
        py_app(env, "py", retries=3, ok_after=2)
        d = env.relayd(REDIS_CONSUMER="replica-a")
        mid = env.xadd('{"kind":"tl","k":1}')
        env.wait(lambda: env.inv(mid).get("py/h.run") == "ok" and
                 env.pel_count() == 0, "succeeded and acknowledged")
        raw = timeline(env, mid, "py/h.run")
        eq([w[0] for w in raw], ["1", "2", "3"], "three entries stored")
        eq([w[4] for w in raw], ["failed:exit=1", "failed:exit=1", "ok"],
           "stored outcomes")
        check(len(" ".join(raw[2])) < 64, f"an ok entry is short: {raw[2]}")
        j = shown(d, mid)
        eq(j["in_stream"], True, "still in the stream")
        eq(j["classified"], True, "classified")
        eq(j["event"], '{"kind":"tl","k":1}', "the event as stored")
        eq(len(j["invocations"]), 1, "one invocation")
        inv = j["invocations"][0]
        eq((inv["app"], inv["handler"], inv["status"]),
           ("py", "h.run", "succeeded"), "its status")
        tl = inv["timeline"]
        eq([a["attempt"] for a in tl], [1, 2, 3], "three attempts in order")
        eq([a["outcome"] for a in tl], ["failed", "failed", "ok"],
           "outcomes")
        for a in tl[:2]:
            eq(a.get("exit_code"), 1, "exit status of a failed attempt")
            check("RuntimeError: no luck" in a.get("stderr", ""),
                  f"stderr tail of a failed attempt: {a}")
            eq(a.get("reason"), "exit status 1", "runtime's reason")
        check("stderr" not in tl[2] and "exit_code" not in tl[2],
              "nothing of a failure in the ok attempt")
        for a in tl:
            eq(a["replica"], "replica-a", "replica is the consumer name")
            check(a["end_ms"] >= a["start_ms"] > 0, f"times {a}")
            check(isinstance(a["warm"], bool), "warm or cold")
            check(a["duration_ms"] >= 0, "duration")
        check(tl[1]["start_ms"] >= tl[0]["end_ms"], "after the first")
        rc, out, err = ctl(d, "event", "show", mid)
        eq(rc, 0, f"event show: {err}")
        for want in ("py/h.run  succeeded", "#1 failed (exit 1)",
                     "#2 failed (exit 1)", "#3 ok", "replica-a",
                     "| RuntimeError: no luck 2", '"kind": "tl"',
                     "in the stream"):
            check(want in out, f"{want!r} shown:\n{out}")
        # Trimmed from the stream: shown from the retained state.
        env.r("XDEL", env.stream, mid)
        rc, out, err = ctl(d, "event", "show", mid)
        eq(rc, 0, f"event show of a trimmed entry: {err}")
        check("trimmed from the stream" in out, f"says so:\n{out}")
        check("#3 ok" in out, f"timeline still shown:\n{out}")
        eq(shown(d, mid)["in_stream"], False, "--json says so too")
        rc, out, err = ctl(d, "event", "show", "1-1")
        eq(rc, 1, "unknown id")
        check("unknown event" in err, f"says why: {err}")
        eq(env.inv(mid).get("__terminal"), "1", "retained with the hash")
        d.stop()


@case
def dlq_entry_keeps_the_timeline():
    with Env() as env:
        py_app(env, "py", retries=1, ok_after=99)
        d = env.relayd()
        mid = env.xadd('{"kind":"tl","k":2}')
        env.wait(lambda: len(env.dlq()) == 1 and env.pel_count() == 0,
                 "dead-lettered and acknowledged")
        e = env.dlq()[0]
        eq([x.split(" ")[4] for x in e["timeline"].split("\n")],
           ["failed:exit=1", "failed:exit=1"],
           "both attempts in the DLQ entry")
        eq(e["timeline"], env.inv(mid)["__timeline:py/h.run"],
           "the hash's timeline, as stored")
        rc, out, err = ctl(d, "dlq", "inspect", e["_id"])
        eq(rc, 0, f"dlq inspect: {err}")
        check("Timeline:" in out, f"timeline shown:\n{out}")
        check("#1 failed (exit 1)" in out and "#2 failed (exit 1)" in out,
              f"one line per attempt:\n{out}")
        check("| RuntimeError: no luck 2" in out, f"stderr shown:\n{out}")
        rc, out, err = ctl(d, "dlq", "inspect", e["_id"], "--json")
        eq(rc, 0, f"dlq inspect --json: {err}")
        j = json.loads(out)
        eq([a["attempt"] for a in j["timeline"]], [1, 2], "--json timeline")
        eq(j["timeline"][1]["stderr"].endswith("RuntimeError: no luck 2"),
           True, "--json stderr of the last attempt")
        rc, out, err = ctl(d, "dlq", "ls", "--json")
        eq(rc, 0, f"dlq ls still parses the entry: {err}")
        inv = shown(d, mid)["invocations"][0]
        eq(inv["status"], "dead-lettered", "event show: dead-lettered")
        eq(inv["dlq_id"], e["_id"], "event show: its DLQ id")
        rc, out, err = ctl(d, "event", "show", mid)
        check(f"dead-lettered -> DLQ {e['_id']}" in out,
              f"DLQ id shown:\n{out}")
        d.stop()


def tail_proc(d, *args):
    p = subprocess.Popen([RELAYCTL, "tail", "--json", *args],
                         env=ctl_env(d), stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, errors="replace")
    p.lines = queue.Queue()

    def reader():
        for line in p.stdout:
            p.lines.put(line)
    threading.Thread(target=reader, daemon=True).start()
    return p


def tail_lines(p, want, what, timeout=30):
    lines, t0 = [], time.time()
    while len(lines) < want and time.time() - t0 < timeout:
        try:
            lines.append(json.loads(p.lines.get(timeout=0.2)))
        except queue.Empty:
            pass
    check(len(lines) >= want, f"{what}: {len(lines)} of {want} lines")
    return lines


@case
def tail_follows_attempts_live_and_stops_on_sigint():
    with Env() as env:
        py_app(env, "py", retries=3, ok_after=1)
        d = env.relayd(REDIS_CONSUMER="replica-t")
        p = tail_proc(d)
        pf = tail_proc(d, "--outcome", "failed")
        time.sleep(1.0)  # both follow the stream's end by now
        m1 = env.xadd('{"kind":"tl","k":11}')
        m2 = env.xadd('{"kind":"tl","k":12}')
        got = tail_lines(p, 4, "two events, two attempts each")
        by = {}
        for x in got:
            by.setdefault(x["id"], []).append(x)
        eq(sorted(by), sorted([m1, m2]), "both events seen")
        for mid in (m1, m2):
            eq([(x["attempt"], x["outcome"]) for x in by[mid]],
               [(1, "failed"), (2, "ok")], f"attempts of {mid} in order")
            for x in by[mid]:
                eq((x["app"], x["handler"], x["replica"]),
                   ("py", "h.run", "replica-t"), "who ran it")
                check(x["duration_ms"] >= 0 and x["entry"], "duration")
        fl = tail_lines(pf, 2, "--outcome failed")
        eq(sorted(x["id"] for x in fl), sorted([m1, m2]), "failures only")
        check(all(x["outcome"] == "failed" for x in fl), "filtered")
        rc, out, err = ctl(d, "tail", "--no-follow", "--json")
        eq(rc, 0, f"--no-follow: {err}")
        eq(len(out.splitlines()), 4, "--no-follow: the four kept")
        for q in (p, pf):
            q.send_signal(signal.SIGINT)
            eq(q.wait(timeout=10), 0, "SIGINT: exit 0")
            check("Sanitizer" not in q.stderr.read(), "no sanitizer report")
        # Redis goes away: a message, exit 1.
        p = tail_proc(d)
        time.sleep(0.5)
        env.stop_redis()
        rc = p.wait(timeout=30)
        err = p.stderr.read()
        eq(rc, 1, f"Redis gone: exit 1 ({err})")
        check("tail: Redis:" in err and "stopped" in err,
              f"says why: {err}")


@case
def outcomes_off_writes_no_outcome_stream():
    with Env() as env:
        py_app(env, "py", retries=1, ok_after=0)
        env.relayd(RELAY_OUTCOMES="0")
        # A follower's lease is there: only the switch keeps it empty.
        env.r("SET", "relay:events:outcomes:tail", "1")
        mid = env.xadd('{"kind":"tl","k":21}')
        env.wait(lambda: env.inv(mid).get("py/h.run") == "ok" and
                 env.pel_count() == 0, "succeeded")
        eq(env.r("EXISTS", "relay:events:outcomes"), 0, "no outcome stream")
        check(env.inv(mid).get("__timeline:py/h.run"), "timeline kept")


@case
def no_follower_no_outcome_stream():
    with Env() as env:
        py_app(env, "py", retries=1, ok_after=0)
        d = env.relayd()
        mid = env.xadd('{"kind":"tl","k":31}')
        env.wait(lambda: env.inv(mid).get("py/h.run") == "ok" and
                 env.pel_count() == 0, "succeeded")
        eq(env.r("EXISTS", "relay:events:outcomes"), 0,
           "nothing appended while nobody follows")
        rc, out, err = ctl(d, "tail", "--no-follow", "--json")
        eq((rc, out), (0, ""), f"--no-follow: nothing kept ({err})")


if __name__ == "__main__":
    run_cases()
