#!/usr/bin/env python3
"""The error travels with the DLQ entry, and an entry can be redriven
(issue 24 items 4 and 5; doc/redis-layout.md R-5, doc/cli.md L-6, L-9,
doc/protocol.md "dlq replay"):

* an exhausted invocation's entry keeps the end of its last attempt's
  stderr in the optional field stderr_tail (bounded, escaped), shown by
  dlq inspect, carried by dlq ls --json, grouped by dlq summary --by error;
* dlq replay ID prints the handler's output lines as app run does;
* dlq replay --redrive moves the stored event back into the source stream
  (one atomic script: the new entry names the DLQ entry in
  relay_redrive_of, and the DLQ entry is gone), where relayd matches it
  against today's templates with retries and DLQ bookkeeping as usual;
  --dry-run changes nothing; a bulk redrive killed at random points and
  run again redrives every entry exactly once; partitions.

Real redis-server, real relayd, real relayctl, real handler processes.

usage: test_dlq_errors.py RELAYD RELAYCTL
"""
import json
import os
import random
import shutil
import subprocess
import sys
import time

from harness import Env, case, check, eq, run_cases

RELAYCTL = os.environ.get("RELAYCTL") or (sys.argv[2] if len(sys.argv) > 2
                                          else "relayctl")
TAIL_MAX = 4096
REDRIVE_FIELD = "relay_redrive_of"

# Attempt 1 writes a marker to stderr and fails; attempt 2 prints to
# stdout, then raises: only attempt 2's stderr is kept.
PY_HANDLER = r'''
import os, sys

def run(event):
    n = os.path.join(os.environ["COUNT_DIR"], "n")
    k = int(open(n).read()) if os.path.exists(n) else 0
    open(n, "w").write(str(k + 1))
    if event.get("ok") or os.path.exists(os.environ["OK_FILE"]):
        print("all fine for", event.get("k"))
        return
    if k == 0:
        print("first attempt marker", file=sys.stderr)
        raise RuntimeError("first attempt 1")
    print("hello from the handler", event.get("k"))
    raise ValueError("bad invoice %d" % event.get("n", 0))
'''


def ctl_env(d, extra=None):
    env = {k: v for k, v in os.environ.items()
           if k.startswith(("ASAN_", "UBSAN_", "LSAN_", "PATH"))}
    for k in ("REDIS_URI", "REDIS_STREAM", "REDIS_GROUP", "RELAY_RUN_DIR",
              "RELAY_STATE_DIR", "RELAY_APPS_DIR"):
        env[k] = d.vars[k]
    env.update(extra or {})
    return env


def ctl(d, *args, extra=None):
    p = subprocess.run([RELAYCTL, *args], env=ctl_env(d, extra),
                       stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, errors="replace", timeout=120)
    check("Sanitizer" not in p.stderr and "runtime error" not in p.stderr,
          f"relayctl {args}: sanitizer report:\n{p.stderr}")
    return p.returncode, p.stdout, p.stderr


def py_app(env, name="py", retries=1):
    d = os.path.join(env.apps_dir, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "h.py"), "w") as f:
        f.write(PY_HANDLER)
    count = os.path.join(env.dir, "count-" + name)
    os.makedirs(count, exist_ok=True)
    okf = os.path.join(env.dir, "ok-" + name)
    env.app(name, [], raw=(
        "runtime: python3\n"
        f"env:\n  COUNT_DIR: {json.dumps(count)}\n"
        f"  OK_FILE: {json.dumps(okf)}\n"
        "events:\n  - handler: h.run\n    pattern: {kind: [inv]}\n"
        f"    retries: {retries}\n    timeout: 20s\n"))
    return okf


def raw_fields(env, dlq_id, stream="events"):
    r = env.r("XRANGE", f"relay:{stream}:dlq", dlq_id, dlq_id)
    return r[0][1] if r else None


@case
def stderr_tail_kept_shown_and_grouped():
    with Env() as env:
        py_app(env)
        d = env.relayd()
        env.xadd({"kind": "inv", "k": "a", "n": 1234})
        env.wait(lambda: len(env.dlq()) == 1, "DLQ entry")
        e = env.dlq()[0]
        tail = e.get("stderr_tail")
        check(tail is not None, f"stderr_tail written: {e}")
        lines = tail.split("\n")
        eq(lines[-1], "ValueError: bad invoice 1234", "the exception line")
        check(lines[0].startswith("Traceback"), f"starts at a line: {tail}")
        check("first attempt marker" not in tail,
              f"only the last attempt's stderr: {tail}")
        check(e["reason"].endswith("exit status 1"), e["reason"])
        # Optional fields after timestamp (stderr_tail, then the
        # invocation's timeline), trace (when any) last.
        names = raw_fields(env, e["_id"])[0::2]
        eq(names[-3:], ["timestamp", "stderr_tail", "timeline"],
           f"order {names}")

        rc, out, err = ctl(d, "dlq", "inspect", e["_id"])
        eq(rc, 0, err)
        check("Stderr tail:\n" in out and
              "\n  ValueError: bad invoice 1234\n" in out, out)
        check(out.index("Stderr tail:") < out.index("Event:"), out)
        rc, out, err = ctl(d, "dlq", "ls", "--json")
        eq(json.loads(out)[0]["stderr_tail"], tail, "ls --json")

        # A second failure with another number, and an entry without a
        # tail (an older relayd, or a handler silent on stderr).
        os.unlink(os.path.join(env.dir, "count-py", "n"))
        env.xadd({"kind": "inv", "k": "b", "n": 77})
        env.wait(lambda: len(env.dlq()) == 2, "second DLQ entry")
        env.r("XADD", "relay:events:dlq", "*", "original_stream", "events",
              "original_id", "1-1", "group", "relay", "consumer", "c",
              "event", "{}", "reason", 'invocation exhausted: app "py" '
              'handler "h.run" exhausted after 2 handler attempts: '
              "exit status 1", "app", "py", "handler", "h.run",
              "deliveries", "1", "handler_attempts", "2",
              "timestamp", "2026-01-01T00:00:00.000Z")
        rc, out, err = ctl(d, "dlq", "summary", "--json")
        eq(rc, 0, err)
        eq([(g["reason"], g["count"]) for g in json.loads(out)],
           [("exit status N", 3)], "by reason: one group")
        rc, out, err = ctl(d, "dlq", "summary", "--by", "error", "--json")
        eq(rc, 0, err)
        eq([(g["reason"], g["from"], g["count"]) for g in json.loads(out)],
           [("ValueError: bad invoice N", "stderr", 2),
            ("exit status N", "reason", 1)], "by error")
        rc, out, err = ctl(d, "dlq", "summary", "--by", "error")
        check(out.split("\n")[0].split()[-1] == "ERROR", out)
        rc, _, err = ctl(d, "dlq", "summary", "--by", "age")
        eq(rc, 2, "bad --by is a usage error")
        d.stop()


@case
def stderr_tail_bounded_and_escaped():
    with Env() as env:
        # 900 kB of stderr (under the runtime's 1 MiB forwarding limit),
        # then control bytes and a byte that is not UTF-8.
        script = ("cat >/dev/null; head -c 900000 /dev/zero | tr '\\0' a "
                  "| fold -w 1000 >&2; echo >&2; printf '\\033[31mred\\007 caf\\303"
                  "\\251 \\377 end\\r\\n\\n' >&2; exit 3")
        env.app("big", [], raw=(
            "runtime: exec\n"
            f"command: [\"/bin/sh\", \"-c\", {json.dumps(script)}]\n"
            "events:\n  - handler: h\n    pattern: {kind: [big]}\n"
            "    retries: 0\n"))
        env.relayd()
        env.xadd({"kind": "big"})
        env.xadd("not json")
        env.wait(lambda: len(env.dlq()) == 2, "DLQ entries")
        e, ph = sorted(env.dlq(), key=lambda x: x["app"] == "-")
        tail = e["stderr_tail"]
        raw = tail.encode()
        check(len(raw) <= TAIL_MAX, f"bounded: {len(raw)} bytes")
        check(len(raw) > 2000, f"not cut short: {len(raw)}")
        check(tail.endswith("\n\\x1b[31mred\\x07 caf\u00e9 \\xff end\\x0d"),
              f"escaped end: {tail[-80:]!r}")
        check(all(c >= 0x20 or c in (0x0a, 0x09) for c in raw), "no controls")
        check(tail.split("\n")[0] == "a" * 1000, "begins at a whole line")
        check("stderr_tail" not in ph, f"placeholder has none: {ph}")


@case
def replay_prints_handler_output():
    with Env() as env:
        okf = py_app(env, retries=0)
        d = env.relayd()
        env.xadd({"kind": "inv", "k": "r", "n": 5})
        env.wait(lambda: len(env.dlq()) == 1, "DLQ entry")
        dlq_id = env.dlq()[0]["_id"]
        # The counter is past attempt 1: a replay raises ValueError.
        rc, out, err = ctl(d, "dlq", "replay", dlq_id)
        eq(rc, 1, f"failed replay\n{out}\n{err}")
        check("[py/h.run@manual] stdout: hello from the handler r\n" in out,
              f"stdout lines on stdout: {out!r}")
        check("[py/h.run@manual] stderr: ValueError: bad invoice 5\n" in err,
              f"stderr lines on stderr: {err!r}")
        check("failed (exit status 1); the DLQ entry is kept" in err, err)
        open(okf, "w").close()
        rc, out, err = ctl(d, "dlq", "replay", dlq_id)
        eq(rc, 0, err)
        eq(out, "[py/h.run@manual] stdout: all fine for r\n"
           "Replayed handler successfully\n", "output, then the summary")
        env.wait(lambda: env.dlq() == [], "entry removed")


def sh_app(env, name, handler, script, pattern=None):
    """An exec app with one rule (retries 0) running /bin/sh -c @script."""
    env.app(name, [], raw=(
        "runtime: exec\n"
        f"command: [\"/bin/sh\", \"-c\", {json.dumps(script)}]\n"
        f"env:\n  LOG: {json.dumps(os.path.join(env.dir, 'runs.log'))}\n"
        f"events:\n  - handler: {handler}\n"
        f"    pattern: {json.dumps(pattern or {'kind': ['r']})}\n"
        "    retries: 0\n"))


def runs(env):
    p = os.path.join(env.dir, "runs.log")
    if not os.path.exists(p):
        return []
    with open(p) as f:
        return [ln.rstrip("\n") for ln in f if ln.strip()]


def put(env, app="a", handler="h", event=None, trace=None, stream="events"):
    """A well-formed DLQ entry written by hand; returns its id."""
    extra = ["trace", trace] if trace else []
    return env.r("XADD", f"relay:{stream}:dlq", "*", "original_stream",
                 stream, "original_id", "1-1", "group", "relay", "consumer",
                 "c", "event", json.dumps(event or {"kind": "r"}), "reason",
                 f'invocation exhausted: app "{app}" handler "{handler}" '
                 "exhausted after 1 handler attempts: exit status 3",
                 "app", app, "handler", handler, "deliveries", "1",
                 "handler_attempts", "0" if app == "-" else "1",
                 "timestamp", "2026-01-01T00:00:00.000Z", *extra)


def redriven(env, stream="events"):
    """{relay_redrive_of value: [fields]} of the stream's redriven entries;
    fails on a DLQ id redriven twice."""
    got = {}
    for eid, flat in env.r("XRANGE", stream, "-", "+"):
        f = dict(zip(flat[0::2], flat[1::2]))
        if REDRIVE_FIELD in f:
            check(f[REDRIVE_FIELD] not in got,
                  f"{f[REDRIVE_FIELD]} redriven twice")
            got[f[REDRIVE_FIELD]] = (eid, flat)
    return got


@case
def redrive_matches_todays_templates():
    with Env() as env:
        sh_app(env, "a", "h1", 'ev=$(cat); echo "h1 $ev" >> "$LOG"; exit 3')
        d = env.relayd()
        msg = env.xadd({"kind": "r", "k": 1})
        env.wait(lambda: len(env.dlq()) == 1, "DLQ entry")
        dlq_id = env.dlq()[0]["_id"]
        eq(runs(env), ['h1 {"kind":"r","k":1}'], "the old rule ran")
        # Today's template: h1 is gone, h2 matches the same event.
        sh_app(env, "a", "h2", 'ev=$(cat); echo "h2 $ev" >> "$LOG"')

        def serving():
            """{app: [handler, ...]} of the apps that serve as they are
            on disk (status ok; a stale app's errors may quote text of
            the new template, so no substring of the answer will do)."""
            return {a["name"]: [h["handler"] for h in a["handlers"]]
                    for a in d.control({"cmd": "apps"})["apps"]
                    if a["status"] == "ok"}

        def reloaded():
            return serving().get("a") == ["h2"]
        env.wait(reloaded, "template reloaded")

        rc, out, err = ctl(d, "dlq", "replay", "--redrive", "--all",
                           "--dry-run")
        eq(rc, 0, err)
        check(out.startswith("1 matching DLQ entry (dry run: nothing "
                             "redriven)"), out)
        eq(redriven(env), {}, "dry run: nothing added")
        eq(len(env.dlq()), 1, "dry run: entry kept")

        rc, out, err = ctl(d, "dlq", "replay", "--redrive", dlq_id)
        eq(rc, 0, err)
        got = redriven(env)
        eq(list(got), [dlq_id], "one new stream entry naming the DLQ entry")
        new_id, flat = got[dlq_id]
        eq(out, f"Redriven into events as {new_id}\n", "stdout")
        eq(flat, ["event", '{"kind":"r","k":1}', REDRIVE_FIELD, dlq_id],
           "the stored event and the naming field")
        check(new_id != msg, "a new message")
        eq(env.dlq(), [], "the DLQ entry is gone")
        env.wait(lambda: len(runs(env)) == 2, "today's rule ran")
        eq(runs(env)[1], 'h2 {"kind":"r","k":1}', "h2, not h1")
        env.wait(lambda: env.pel_count() == 0, "acknowledged")

        # A failing handler: a new DLQ entry with the usual bookkeeping.
        shutil.rmtree(os.path.join(env.apps_dir, "a"))
        sh_app(env, "b", "hb", 'cat >/dev/null; echo boom >&2; exit 4')

        def swapped():
            return serving() == {"b": ["hb"]}
        env.wait(swapped, "templates reloaded")
        second = env.xadd({"kind": "r", "k": 2})
        env.wait(lambda: len(env.dlq()) == 1, "DLQ entry of k 2")
        dlq2 = env.dlq()[0]["_id"]
        rc, out, err = ctl(d, "dlq", "replay", "--redrive", dlq2)
        eq(rc, 0, err)
        new2 = redriven(env)[dlq2][0]
        env.wait(lambda: len(env.dlq()) == 1 and
                 env.dlq()[0]["original_id"] == new2, "new DLQ entry")
        e = env.dlq()[0]
        eq((e["app"], e["handler"], e["handler_attempts"],
            e["stderr_tail"]), ("b", "hb", "1", "boom"), "bookkeeping")
        check(e["reason"].endswith("exit status 4"), e["reason"])
        check(second != new2, "ids")
        env.wait(lambda: env.pel_count() == 0, "acknowledged")


@case
def redrive_trace_placeholder_claim_schedule():
    with Env() as env:
        d = env.relayd(start=False)
        tp = "00-" + "ab" * 16 + "-" + "cd" * 8 + "-01"
        t1 = put(env, trace=f"lineage producer={tp} attempt=3")
        t2 = put(env, trace=json.dumps({"traceparent": tp,
                                        "tracestate": "k=v"}))
        t3 = put(env, trace="no context here 00-zz")
        ph = put(env, app="-", handler="-")
        held = put(env)
        sched = put(env, event={
            "source": "relay.schedule", "app": "a", "schedule": "s",
            "handler": "h", "scheduled_at": "2026-01-01T00:00:00Z",
            "occurrence_id": "schedule:a:s:2026-01-01T00:00:00Z"})
        env.r("SET", f"relay:events:dlq:replaying:{held}", "x", "PX",
              "600000")
        rc, out, err = ctl(d, "dlq", "replay", "--redrive", ph)
        eq(rc, 1, out)
        check("placeholder" in err, err)
        rc, out, err = ctl(d, "dlq", "replay", "--redrive", "--all",
                           "--yes")
        eq(rc, 1, "a claimed entry makes the run exit 1\n" + out + err)
        got = redriven(env)
        eq(sorted(got), sorted([t1, t2, t3]), "redriven: " + out)
        f1 = got[t1][1]
        eq(f1[4:], ["traceparent", tp], "traceparent from text")
        eq(got[t2][1][4:], ["traceparent", tp, "tracestate", "k=v"],
           "trace context from JSON")
        eq(len(got[t3][1]), 4, "no context: no extra field")
        left = [e["_id"] for e in env.dlq()]
        eq(left, [ph, held, sched], "placeholder, claimed, schedule kept")
        check(f"{held} a/h skipped (being replayed" in out, out)
        check(f"{sched} a/h skipped (a schedule occurrence" in out, out)
        check("Redriven 3 of 6 entries (0 failed, 3 skipped" in out, out)


@case
def lineage_inspected_and_redriven_with_link():
    """dlq inspect shows the trace lineage (R-5) member by member, control
    bytes as '?'; --json carries it as stored; dlq replay --redrive adds
    relay_trace_link = the lineage's attempt (a valid version-00
    traceparent only), beside the producer's traceparent/tracestate."""
    with Env() as env:
        d = env.relayd(start=False)
        tp = "00-" + "ab" * 16 + "-" + "cd" * 8 + "-01"
        at = "00-" + "12" * 16 + "-" + "34" * 8 + "-01"
        ln = "00-" + "56" * 16 + "-" + "78" * 8 + "-00"
        compact = (",", ":")
        full_trace = json.dumps({"traceparent": tp, "tracestate": "k=v",
                                 "baggage": "a=1", "attempt": at,
                                 "link": ln}, separators=compact)
        full = put(env, trace=full_trace)
        only_attempt = put(env, trace=json.dumps({"attempt": at},
                                                  separators=compact))
        bad_attempt = put(env, trace=json.dumps(
            {"traceparent": tp, "attempt": "01-" + at[3:]},
            separators=compact))
        upper_attempt = put(env, trace=json.dumps(
            {"attempt": tp.upper()},
            separators=compact))
        hostile = put(env, trace=json.dumps(
            {"traceparent": tp + "\x1b[2J", "attempt": at,
             "link": "\x07bell", "x-extra": {"n": "\x1b"}},
            separators=compact))

        rc, out, err = ctl(d, "dlq", "inspect", full)
        eq(rc, 0, err)
        want = ("Trace:\n"
                "  trace id:    " + "12" * 16 + "\n"
                "  producer:    " + tp + "\n"
                "  tracestate:  k=v\n"
                "  baggage:     a=1\n"
                "  attempt:     " + at + "\n"
                "  link:        " + ln + "\n")
        check(want in out, out)
        check(out.index("Timestamp:") < out.index("Trace:") <
              out.index("Event:"), out)
        rc, out, err = ctl(d, "dlq", "inspect", hostile)
        eq(rc, 0, err)
        check("\x1b" not in out and "\x07" not in out, repr(out))
        check("  producer:    " + tp + "?[2J\n" in out, out)
        check("  link:        ?bell\n" in out, out)
        check('  x-extra:     {"n":"\\u001b"}\n' in out.lower(), out)
        rc, out, err = ctl(d, "dlq", "inspect", full, "--json")
        eq(rc, 0, err)
        eq(json.loads(out)["trace"], full_trace, "--json: as stored")

        rc, out, err = ctl(d, "dlq", "replay", "--redrive", "--all",
                           "--yes")
        eq(rc, 0, out + err)
        got = redriven(env)
        eq(got[full][1][4:], ["traceparent", tp, "tracestate", "k=v",
                              "relay_trace_link", at], "full lineage")
        eq(got[only_attempt][1][4:], ["relay_trace_link", at],
           "an attempt alone is a link, never the producer's context")
        eq(got[bad_attempt][1][4:], ["traceparent", tp],
           "not version 00: no link")
        eq(got[upper_attempt][1][4:], [], "invalid: no link")
        eq(got[hostile][1][4:], ["relay_trace_link", at],
           "invalid producer context dropped, link kept")


@case
def redrive_killed_never_twice_never_lost():
    with Env() as env:
        d = env.relayd(start=False)
        want = [put(env, event={"kind": "r", "i": i}) for i in range(80)]
        rng = random.Random(24)
        for _ in range(6):
            p = subprocess.Popen(
                [RELAYCTL, "dlq", "replay", "--redrive", "--all", "--yes",
                 "--rate", "200"], env=ctl_env(d), stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(rng.uniform(0.02, 0.12))
            p.kill()
            p.wait()
            got = redriven(env)  # fails on a duplicate
            left = [e["_id"] for e in env.dlq()]
            eq(sorted(list(got) + left), sorted(want),
               "every entry either redriven or still in the DLQ")
        rc, out, err = ctl(d, "dlq", "replay", "--redrive", "--all",
                           "--yes", "--rate", "1000")
        eq(rc, 0, err)
        eq(sorted(redriven(env)), sorted(want), "all redriven, once each")
        eq(env.dlq(), [], "DLQ empty")
        for dlq_id, (_, flat) in redriven(env).items():
            eq(json.loads(flat[1])["i"], want.index(dlq_id), "its event")


@case
def redrive_every_partition_into_its_own_stream():
    with Env() as env:
        d = env.relayd(start=False, REDIS_STREAM="ev:{p0},ev:{p1}")
        a = put(env, stream="ev:{p0}", event={"kind": "r", "p": 0})
        b = put(env, stream="ev:{p1}", event={"kind": "r", "p": 1})
        rc, out, err = ctl(d, "dlq", "replay", "--redrive", "--all",
                           "--yes")
        eq(rc, 0, err)
        eq(list(redriven(env, "ev:{p0}")), [a], "p0")
        eq(list(redriven(env, "ev:{p1}")), [b], "p1")
        eq(env.r("XLEN", "relay:ev:{p0}:dlq"), 0, "p0 DLQ")
        eq(env.r("XLEN", "relay:ev:{p1}:dlq"), 0, "p1 DLQ")


if __name__ == "__main__":
    sys.exit(run_cases())
