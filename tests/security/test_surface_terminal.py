#!/usr/bin/env python3
"""Security: producer- and author-controlled bytes never drive the
operator's terminal or forge log lines (issue 14 items 6 and 7).

6: relayctl's human-readable output shows control characters (C0, DEL,
   C1) and bytes that are not UTF-8 as '?'; --json stays exact.
7: an apps-directory entry whose name is not a valid app name (here one
   holding a newline) is skipped with an escaped mention, in relayd's log
   (text and JSON) and in relayctl validate / app ls.
Issue 40 item 9: a handler's output lines reach relayd's text log with
   C0 controls (TAB aside), DEL, C1 and bytes that are not UTF-8 as \\xNN;
   the JSON log keeps them exact.
Issue 40 item 11: a future-version traceparent is checked to its end; a
   tail of control bytes never reaches the DLQ entry's trace lineage.

argv: relayd relayctl.
"""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "daemon"))
from harness import Env, case, check, eq, run_cases, wait_for  # noqa: E402

RELAYCTL = sys.argv[2]

# ESC ] 0 ; title BEL, a screen clear, DEL, C1 CSI (U+009B), a carriage
# return that would overwrite the line: valid UTF-8, so --json can carry
# it exactly. A lone 0x9b byte (not UTF-8) goes in the reason.
NASTY = (b"\x1b]0;pwned\x07\x1b[2J\x1b[1;31mFAKE\x7f\xc2\x9b31m"
         b"\rok\x08")
BAD_BYTES = [b"\x1b", b"\x07", b"\x7f", b"\xc2\x9b", b"\x9b", b"\r", b"\x08"]


def ctl(env, *args, extra=None):
    e = {k: v for k, v in os.environ.items()
         if k.startswith(("ASAN_", "UBSAN_", "LSAN_", "PATH"))}
    e.update({"REDIS_URI": env.redis.uri, "REDIS_STREAM": env.stream,
              "REDIS_GROUP": env.group, "RELAY_APPS_DIR": env.apps_dir,
              "RELAY_RUN_DIR": os.path.join(env.dir, "norun"),
              "RELAY_STATE_DIR": os.path.join(env.dir, "nostate")})
    e.update(extra or {})
    p = subprocess.run([RELAYCTL, *args], env=e, capture_output=True,
                       timeout=120)
    check(b"Sanitizer" not in p.stderr, p.stderr.decode("utf-8", "replace"))
    return p.returncode, p.stdout, p.stderr


def assert_clean(what, data):
    for b in BAD_BYTES:
        check(b not in data, f"{what}: raw {b!r} in output:\n{data!r}")


@case
def dlq_inspect_and_ls_escape_producer_bytes():
    with Env() as env:
        tid = env.r("XADD", f"relay:{env.stream}:dlq", "*",
                    "original_stream", env.stream, "original_id", "5-0",
                    "group", "relay", "consumer", b"c" + NASTY,
                    "event", b"not json " + NASTY,
                    "reason", b"r\x9b" + NASTY, "app", b"a" + NASTY,
                    "handler", b"h" + NASTY, "deliveries", "2",
                    "handler_attempts", "1",
                    "timestamp", "2026-01-02T03:04:05.678Z",
                    "trace", b"t" + NASTY)
        jid = env.r("XADD", f"relay:{env.stream}:dlq", "*",
                    "original_stream", env.stream, "original_id", "6-0",
                    "group", "relay", "consumer", "c",
                    "event", '{"k":"\\u001b[2J\\u009b\\u007f","n":1}',
                    "reason", "r", "app", "a", "handler", "h",
                    "deliveries", "1", "handler_attempts", "1",
                    "timestamp", "2026-01-02T03:04:05.678Z")
        rc, out, err = ctl(env, "dlq", "inspect", tid)
        eq(rc, 0, "inspect\n" + err.decode("utf-8", "replace"))
        assert_clean("dlq inspect (raw event)", out)
        check(b"not json ?]0;pwned?" in out, out)
        rc, out, err = ctl(env, "dlq", "inspect", jid)
        eq(rc, 0, "inspect JSON event")
        assert_clean("dlq inspect (JSON event)", out)
        rc, out, err = ctl(env, "dlq", "ls")
        eq(rc, 0, "dlq ls")
        assert_clean("dlq ls", out + err)
        # --json stays exact.
        rc, out, err = ctl(env, "dlq", "inspect", tid, "--json")
        eq(rc, 0, "inspect --json")
        j = json.loads(out)
        eq(j["event"].encode("utf-8", "surrogateescape"),
           b"not json " + NASTY, "--json event")
        rc, out, err = ctl(env, "dlq", "inspect", jid, "--json")
        eq(json.loads(out)["event"], '{"k":"\\u001b[2J\\u009b\\u007f",'
           '"n":1}', "--json JSON event")
        # A malformed entry is listed and shown as stored: cleaned too.
        bid = env.r("XADD", f"relay:{env.stream}:dlq", "*",
                    b"f" + NASTY, b"v" + NASTY, "app", b"a" + NASTY)
        rc, out, err = ctl(env, "dlq", "ls")
        eq(rc, 0, "dlq ls with a malformed entry")
        check(bid.encode() in out, out)
        assert_clean("dlq ls (malformed entry)", out + err)
        rc, out, err = ctl(env, "dlq", "inspect", bid)
        eq(rc, 1, "inspect of a malformed entry")
        check(b"Malformed:" in out, out)
        assert_clean("dlq inspect (malformed entry)", out + err)
        rc, out, err = ctl(env, "dlq", "ls", "--json")
        eq(json.loads(out)[-1]["id"], bid, "ls --json lists it")


@case
def a_malformed_message_reaches_the_dlq_and_inspect_is_clean():
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]})])
        d = env.relayd()
        env.xadd(fields=["event", b"{" + NASTY])
        wait_for(lambda: len(env.dlq()) == 1, "dead-lettered")
        tid = env.dlq()[0]["_id"]
        rc, out, err = ctl(env, "dlq", "inspect", tid)
        eq(rc, 0, "inspect")
        assert_clean("dlq inspect", out)
        rc, out, err = ctl(env, "dlq", "inspect", tid, "--json")
        eq(json.loads(out)["event"].encode("utf-8", "surrogateescape"),
           b"{" + NASTY, "--json exact")
        d.stop()


EVIL = "evil\n2026-12-03T00:00:00.000Z INFO RELAYD01 forged line"


def evil_apps(env):
    env.app("ok", [("h", {"kind": ["x"]})])
    env.app(EVIL, [("h", {"kind": ["x"]})])
    env.app("Billing", [("h", {"kind": ["x"]})])


@case
def relayd_skips_invalid_app_names_with_an_escaped_mention():
    for fmt in ("text", "json"):
        with Env() as env:
            evil_apps(env)
            d = env.relayd(LOG_FORMAT=fmt)
            r = d.control({"cmd": "apps"})
            names = [a["name"] for a in r["apps"]]
            eq(names, ["ok"], "only the valid app is an entry")
            d.stop()
            log = d.log()
            for line in log.splitlines():
                check(not line.startswith("2026-12-03T00:00:00.000Z"),
                      f"{fmt}: a forged log line:\n{log}")
                if fmt == "json":
                    json.loads(line)
            check("skipping" in log and "evil\\\\x0a2026" in log
                  if fmt == "json" else "evil\\x0a2026" in log,
                  f"{fmt}: escaped mention:\n{log}")


@case
def relayctl_skips_invalid_app_names_with_an_escaped_mention():
    with Env() as env:
        evil_apps(env)
        # As the harness's relayd runs (RELAY_SANDBOX=none): the sandbox
        # user could not read the 0700 temp dir, and validate would say
        # so instead of "ok".
        rc, out, err = ctl(env, "validate", "--apps", env.apps_dir, "-v",
                           extra={"RELAY_SANDBOX": "none"})
        eq(rc, 1, "validate exit status")
        eq(out, b"ok: ok (exec, 1 rule, 0 schedules)\n", "validate -v")
        lines = err.decode().splitlines()
        eq(len(lines), 2, f"two mentions:\n{err!r}")
        check(any('skipping "evil\\x0a2026-12-03' in ln for ln in lines),
              err)
        check(any('skipping "Billing"' in ln for ln in lines), err)
        rc, out, err = ctl(env, "app", "ls")
        eq(rc, 0, "app ls")
        eq([ln.split()[0] for ln in out.decode().splitlines()],
           ["NAME", "ok"], "app ls rows")
        check(b"\n2026-12-03" not in err and b"evil\\x0a" in err, err)


# Output a handler writes on stdout and stderr: an OSC title, a screen
# clear, BEL, DEL, C1 CSI as UTF-8, a CR meant to overwrite the line with
# a forged record, a TAB (kept), valid UTF-8 (kept); then a line with a
# lone 0x9b and a truncated UTF-8 sequence (not UTF-8).
OUT_NASTY = (b"x\x1b]0;pwned\x07\x1b[2J\x7f\xc2\x9b31m|a\tb|caf\xc3\xa9"
             b"\r2026-12-03T00:00:00.000Z INFO RELAYD01 forged\x08")
OUT_BAD_UTF8 = b"y\x9b[31m\xe2\x82"
LOUD_SH = """#!/bin/sh
cat >/dev/null
cat ./nasty.bin
cat ./nasty.bin >&2
cat ./bad.bin
"""


def loud_app(env, name):
    d = os.path.join(env.apps_dir, name)
    os.makedirs(d, exist_ok=True)
    for fn, data in (("nasty.bin", OUT_NASTY + b"\n"),
                     ("bad.bin", OUT_BAD_UTF8 + b"\n"),
                     ("h.sh", LOUD_SH.encode())):
        with open(os.path.join(d, fn), "wb") as f:
            f.write(data)
    os.chmod(os.path.join(d, "h.sh"), 0o755)
    with open(os.path.join(d, "template.yaml"), "w") as f:
        f.write("runtime: exec\ncommand: [./h.sh]\n"
                "events:\n  - handler: h\n    pattern: {kind: [x]}\n")


def raw_log(d):
    with open(d.log_path, "rb") as f:
        return f.read()


@case
def handler_output_is_escaped_in_the_text_log():
    with Env() as env:
        loud_app(env, "loud")
        d = env.relayd()
        env.xadd({"kind": "x", "k": "t1"})
        env.wait(lambda: raw_log(d).count(b"] stdout: y") == 1 and
                 raw_log(d).count(b"] stderr: x") == 1, "the output lines")
        env.wait(lambda: env.all_delivered(1), "the message acked")
        d.stop()
        log = raw_log(d)
        out = [ln for ln in log.split(b"\n") if b"[loud/h@" in ln]
        eq(len(out), 3, f"three output records:\n{log!r}")
        for ln in out:
            for b in BAD_BYTES + [b"\x9b", b"\xe2\x82"]:
                check(b not in ln, f"raw {b!r} in a text record: {ln!r}")
        want = (b"x\\x1b]0;pwned\\x07\\x1b[2J\\x7f\\xc2\\x9b31m|a\tb|"
                b"caf\xc3\xa9\\x0d2026-12-03T00:00:00.000Z INFO RELAYD01 "
                b"forged\\x08")
        check(out[0].endswith(b"] stdout: " + want) or
              out[1].endswith(b"] stdout: " + want), f"escaped:\n{out!r}")
        check(any(ln.endswith(b"] stderr: " + want) for ln in out),
              f"stderr escaped too:\n{out!r}")
        check(any(ln.endswith(b"] stdout: y\\x9b[31m\\xe2\\x82")
                  for ln in out), f"bytes not UTF-8 escaped:\n{out!r}")
        for ln in log.split(b"\n"):
            check(not ln.startswith(b"2026-12-03T00:00:00.000Z"),
                  f"a forged log line:\n{log!r}")


@case
def handler_output_stays_exact_in_the_json_log():
    with Env() as env:
        loud_app(env, "loud")
        d = env.relayd(LOG_FORMAT="json")
        env.xadd({"kind": "x", "k": "j1"})
        env.wait(lambda: raw_log(d).count(b'"output"') >= 3,
                 "the output records")
        env.wait(lambda: env.all_delivered(1), "the message acked")
        d.stop()
        recs = [json.loads(ln) for ln in raw_log(d).split(b"\n")
                if ln.startswith(b"{") and b'"output"' in ln]
        msgs = [(r["output"], r["msg"].split(": ", 1)[1]) for r in recs]
        want = OUT_NASTY.decode()
        check(("stdout", want) in msgs and ("stderr", want) in msgs,
              f"exact in JSON:\n{msgs!r}")
        for r in recs:
            check(r["app"] == "loud" and r["handler"] == "h", repr(r))


TP_ID = "4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7"


@case
def a_future_traceparent_with_a_bad_tail_is_not_kept():
    # The first 55 bytes are a valid future-version prefix; the rest is
    # not fields. A good tail is kept (the lineage is verbatim).
    good = "cc-" + TP_ID + "-01-what-the-future-will-be-like"
    bad = ["cc-" + TP_ID + "-01-\x1b]0;pwned\x07\x1b[2J",
           "cc-" + TP_ID + "-01-ok\rFORGED",
           "cc-" + TP_ID + "-01-UPPER case"]
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]}, {"retries": 0})],
                env={"FAIL": "h"})
        d = env.relayd()
        for i, tp in enumerate([good] + bad):
            env.xadd(fields=["event", json.dumps({"kind": "x",
                                                  "k": f"t{i}"}),
                             "traceparent", tp])
        env.wait(lambda: len(env.dlq()) == 1 + len(bad), "dead-lettered")
        by_key = {json.loads(e["event"])["k"]: e for e in env.dlq()}
        eq(json.loads(by_key["t0"]["trace"])["traceparent"], good,
           "a valid future value is kept verbatim")
        for i, tp in enumerate(bad, 1):
            e = by_key[f"t{i}"]
            trace = json.loads(e["trace"]) if e.get("trace") else {}
            for k, v in trace.items():
                check(tp[55:] not in v and not re.search(
                      r"[\x00-\x1f\x7f]", v),
                      f"{tp!r}: kept in the DLQ lineage: {k}={v!r}")
            check("traceparent" not in trace,
                  f"{tp!r}: an invalid traceparent kept: {trace!r}")
        d.stop()


sys.exit(run_cases())
