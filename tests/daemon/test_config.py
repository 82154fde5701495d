#!/usr/bin/env python3
"""relayd black-box tests: configuration, the run-dir lock, the control
socket and /metrics (doc/configuration.md, doc/protocol.md).

usage: test_config.py RELAYD
"""
import json
import os
import socket
import stat
import subprocess
import sys
import time
import urllib.request

from harness import (RELAYD, Env, Skip, case, check, eq, free_port,
                     have_metrics, need_metrics, run_cases, wait_for)

BASE = {
    "REDIS_URI": "unix:///nonexistent/redis.sock",
    "REDIS_STREAM": "events",
    "REDIS_GROUP": "relay",
}


def run_relayd(vars, args=()):
    env = {k: v for k, v in os.environ.items()
           if k.startswith(("ASAN_", "UBSAN_", "LSAN_", "PATH"))}
    env.update(vars)
    p = subprocess.run([RELAYD, *args], env=env, capture_output=True,
                       text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


BAD = [
    # (variable, value, words the one error line must contain)
    ("REDIS_URI", "redis://user:s3cr3t-pass@host:notaport", ["REDIS_URI"]),
    ("REDIS_URI", "http://localhost:6379", ["REDIS_URI"]),
    ("REDIS_URI", "memory://", ["REDIS_URI"]),
    ("MAX_CONCURRENCY", "0", ["MAX_CONCURRENCY", "\"0\""]),
    ("MAX_CONCURRENCY", "eight", ["MAX_CONCURRENCY"]),
    ("MAX_BUFFERED_EVENTS", "-1", ["MAX_BUFFERED_EVENTS"]),
    ("MAX_EVENT_BYTES", "2MiB", ["MAX_EVENT_BYTES", "1MiB"]),
    ("MAX_EVENT_BYTES", "1048577", ["MAX_EVENT_BYTES"]),
    ("MAX_EVENT_BYTES", "12KB", ["MAX_EVENT_BYTES"]),
    ("MAX_EVENT_BYTES", "0", ["MAX_EVENT_BYTES"]),
    ("METRICS_ADDR", "localhost", ["METRICS_ADDR"]),
    ("METRICS_ADDR", "127.0.0.1:70000", ["METRICS_ADDR"]),
    ("LOG_LEVEL", "verbose", ["LOG_LEVEL", "verbose"]),
    ("LOG_FORMAT", "xml", ["LOG_FORMAT", "xml"]),
    ("RELAY_SANDBOX", "docker", ["RELAY_SANDBOX", "docker"]),
    ("RELAY_WARM", "yes", ["RELAY_WARM", "\"yes\"", "1 (on) or 0 (off)"]),
    ("RELAY_WARM_MAX_PARENTS", "0", ["RELAY_WARM_MAX_PARENTS", "1 to 4096"]),
    ("RELAY_OUTCOMES", "off", ["RELAY_OUTCOMES", "\"off\"",
                               "1 (on) or 0 (off)"]),
    ("RELAY_WARM_IDLE", "0s", ["RELAY_WARM_IDLE", "1s to 24h"]),
    ("RELAY_WARM_IDLE", "2d", ["RELAY_WARM_IDLE"]),
    ("RELAY_WARM_START_TIMEOUT_MS", "50",
     ["RELAY_WARM_START_TIMEOUT_MS", "100 to 600000"]),
    ("RELAY_WARM_START_TIMEOUT_MS", "2s", ["RELAY_WARM_START_TIMEOUT_MS"]),
    ("REDIS_INVOCATION_RETENTION", "7 days",
     ["REDIS_INVOCATION_RETENTION"]),
    ("REDIS_INVOCATION_RETENTION", "0h", ["REDIS_INVOCATION_RETENTION"]),
    ("RELAY_TEST_TIME_SCALE", "fast", ["RELAY_TEST_TIME_SCALE"]),
    ("RELAY_TEST_SCHEDULE_CLOCK", "soon", ["RELAY_TEST_SCHEDULE_CLOCK"]),
    ("RELAY_TEST_SCHEDULE_CLOCK", "100:5:0", ["RELAY_TEST_SCHEDULE_CLOCK"]),
    ("RELAY_TEST_SCHEDULE_CLOCK", "100:5:60x",
     ["RELAY_TEST_SCHEDULE_CLOCK"]),
]


@case
def invalid_values_one_line_exit_1():
    for var, value, words in BAD:
        vars = dict(BASE)
        vars[var] = value
        rc, out, err = run_relayd(vars)
        what = f"{var}={value!r}"
        eq(rc, 1, f"{what}: exit status (stderr {err!r})")
        lines = err.splitlines()
        eq(len(lines), 1, f"{what}: one error line")
        for w in words:
            check(w in lines[0], f"{what}: {w!r} in {lines[0]!r}")
        check("s3cr3t" not in err, f"{what}: password echoed: {err!r}")


@case
def stream_lists_that_collide_or_share_a_slot_are_refused():
    """A listed stream that is another listed stream's DLQ (or any key
    Relay keeps for it) is refused naming both: retention would trim it
    by age and the engine would write DLQ entries into it. A partition
    shorthand whose prefix already holds a hash tag is refused: every
    partition would hash to that tag, one cluster slot. Control bytes in
    the value never reach the terminal raw."""
    cases = [
        ("x,relay:x:dlq", ['"relay:x:dlq" is a key Relay keeps for '
                           'stream "x"']),
        ("relay:x:dlq,x", ['"relay:x:dlq"', 'stream "x"']),
        ("ev{0..1},relay:ev:{p0}:dlq", ['"relay:ev:{p0}:dlq"',
                                        'stream "ev:{p0}"']),
        ("a,relay:a:schedule:m", ['"relay:a:schedule:m"', 'stream "a"']),
        ("a%:b,relay:invocation:a%25%3Ab:relay:1-0",
         ['stream "a%:b"', "state hashes"]),
        ("a{0..3}{0..3}", ['"a{0..3}{0..3}"', "hash tag", "one slot"]),
        ("{t}x{0..1},y", ['"{t}x{0..1}"', "hash tag"]),
    ]
    for value, words in cases:
        vars = dict(BASE)
        vars["REDIS_STREAM"] = value
        rc, out, err = run_relayd(vars)
        eq(rc, 1, f"REDIS_STREAM={value!r}: exit 1 ({err!r})")
        lines = err.splitlines()
        eq(len(lines), 1, f"{value!r}: one line ({err!r})")
        check(lines[0].startswith(f'relayd: REDIS_STREAM: invalid value '
                                  f'"{value}": '), lines[0])
        for w in words:
            check(w in lines[0], f"{value!r}: {w!r} in {lines[0]!r}")
    # Escape, BEL, DEL, a C1 CSI and a '"' in the value: escaped as \xNN
    # in the value and in the library's text alike.
    vars = dict(BASE)
    vars["REDIS_STREAM"] = 'a,b\x1b]0;pwn\x07\x7f\u009b"c'
    rc, out, err = run_relayd(vars)
    eq(rc, 1, f"control bytes: exit 1 ({err!r})")
    eq(len(err.splitlines()), 1, f"one line: {err!r}")
    for raw in ("\x1b", "\x07", "\x7f", "\u009b"):
        check(raw not in err, f"raw {raw!r} in {err!r}")
    check('invalid value "a,b\\x1b]0;pwn\\x07\\x7f\\xc2\\x9b\\x22c": '
          'stream name "b\\x1b]0;pwn\\x07\\x7f\\xc2\\x9b\\x22c" contains '
          'a blank or control character' in err, err)


# A relayd built without metrics support refuses METRICS_ADDR with one
# clear line instead of running without the endpoint it was asked for.
@case
def metrics_addr_refused_without_metrics_support():
    if have_metrics():
        raise Skip("relayd built with metrics support")
    vars = dict(BASE)
    vars["METRICS_ADDR"] = "127.0.0.1:9464"
    rc, out, err = run_relayd(vars)
    eq(rc, 1, f"exit status (stderr {err!r})")
    eq(len(err.splitlines()), 1, f"one line: {err!r}")
    check("METRICS_ADDR" in err and "without libmicrohttpd" in err,
          f"names the variable and the cause: {err!r}")


@case
def required_variables():
    for var in ("REDIS_URI", "REDIS_STREAM", "REDIS_GROUP"):
        vars = dict(BASE)
        del vars[var]
        rc, out, err = run_relayd(vars)
        eq(rc, 1, f"without {var}: exit status")
        eq(err, f"relayd: {var}: not set (required)\n", f"without {var}")


@case
def password_never_printed():
    # A valid URI with a password whose server is unreachable: whatever
    # relayd logs about it must not contain the password.
    with Env() as env:
        d = env.relayd(start=False,
                       REDIS_URI="redis://admin:hunter2-pw@127.0.0.1:1/0")
        d.start(wait_ready=False)
        wait_for(lambda: "REDIS_URI" in d.log() or "RELAYD01" in d.log(),
                 "startup line")
        d.stop()
        check("hunter2" not in d.log(), "password in the log:\n" + d.log())
        check("admin:***@127.0.0.1:1" in d.log(), "redacted URI logged")


@case
def redis_uri_tcp_with_password():
    port = free_port()
    with Env(port=port, password="pw-9f3a77") as env:
        env.app("a", [("h", {"kind": ["x"]})])
        # redis://user:pass@host:port/db with the default user.
        d = env.relayd(REDIS_URI=f"redis://default:pw-9f3a77@127.0.0.1:"
                       f"{port}/0")
        env.xadd({"kind": "x", "k": "tcp1"})
        env.wait(lambda: env.count("end", "tcp1") == 1 and
                 env.pel_count() == 0, "handled over TCP with AUTH")
        d.stop()
        check("pw-9f3a77" not in d.log(), "password not logged")
        # host:port without a password: refused by the server, so never
        # ready, and says why.
        d2 = env.relayd("r2", start=False, REDIS_URI=f"127.0.0.1:{port}")
        d2.start(wait_ready=False)
        h = env.wait(lambda: (lambda h: h if h["reason"] not in
                              ("", "starting") else None)(
            d2.control({"cmd": "health"})), "a reason")
        eq(h["ready"], False, "not ready without the password")
        time.sleep(0.3)
        eq(d2.control({"cmd": "health"})["ready"], False, "still not ready")
        d2.stop()


@case
def help_and_version():
    rc, out, err = run_relayd({}, ["--version"])
    eq(rc, 0, "--version status")
    check(out.startswith("relayd "), "--version output")
    rc, out, err = run_relayd({}, ["--help"])
    eq(rc, 0, "--help status")
    for var in ("REDIS_URI", "MAX_EVENT_BYTES", "RELAY_SANDBOX"):
        check(var in out, f"--help mentions {var}")
    rc, out, err = run_relayd({}, ["--bogus"])
    eq(rc, 2, "unknown flag is a usage error")


@case
def apps_dir_missing():
    with Env() as env:
        d = env.relayd(start=False, RELAY_APPS_DIR=env.dir + "/nope")
        d.start(wait_ready=False)
        eq(d.wait(), 1, "exit status")
        check("RELAY_APPS_DIR" in d.log(), "names the variable")


@case
def second_daemon_refused_by_lock():
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]})])
        d1 = env.relayd("r1")
        d2 = env.relayd("r2", start=False, RELAY_RUN_DIR=d1.run_dir)
        d2.start(wait_ready=False)
        eq(d2.wait(), 1, "second daemon exit status")
        text = [ln for ln in d2.log().splitlines()
                if ln.startswith("relayd:")]
        eq(len(text), 1, "one error line:\n" + d2.log())
        check("another relayd" in text[0] and d1.run_dir in text[0],
              f"clear message: {text[0]!r}")
        # The first one is unaffected and still answers.
        check(d1.control({"cmd": "health"})["ready"], "first still ready")
        d1.stop()
        # Once it is gone, the run dir is free again.
        d3 = env.relayd("r3", RELAY_RUN_DIR=d1.run_dir)
        d3.stop()


@case
def control_socket_protocol():
    with Env() as env:
        env.app("a", [("h1", {"kind": ["x"]}), ("h2", {"kind": ["y"]})])
        env.app("broken", [], raw="runtime: exec\ncommand: [./x]\n"
                "events:\n  - handler: h\n    pattern: {a: b}\n")
        d = env.relayd()
        mode = stat.S_IMODE(os.stat(d.sock).st_mode)
        eq(mode, 0o600, "socket mode")
        h = d.control({"cmd": "health", "id": 42})
        eq(h["ok"], True, "health ok")
        eq(h["ready"], True, "ready")
        eq(h["redis_up"], True, "redis_up")
        eq(h["id"], 42, "id echoed")
        eq(h["consumer"], "r1", "consumer")
        eq(h["apps"], 2, "app entries")
        eq(h["invalid_apps"], 1, "invalid apps")
        apps = d.control({"cmd": "apps"})["apps"]
        eq([a["name"] for a in apps], ["a", "broken"], "apps in order")
        eq([x["handler"] for x in apps[0]["handlers"]], ["h1", "h2"],
           "handlers")
        eq(apps[1]["status"], "invalid", "invalid app listed")
        check(any("template.yaml:5:" in e for e in apps[1]["errors"]),
              f"error with file:line:col: {apps[1]['errors']}")
        # Several requests on one connection, answered in order; errors.
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(30)
        s.connect(d.sock)
        s.sendall(b'{"cmd":"health","id":1}\nnot json\n[1]\n'
                  b'{"cmd":"nope","id":2}\n{"id":3}\n'
                  b'{"cmd":"app invoke","id":4}\n{"cmd":"health","id":5}\n')
        f = s.makefile("rb")
        replies = [json.loads(f.readline()) for _ in range(7)]
        s.close()
        eq(replies[0]["id"], 1, "first reply first")
        eq([r["ok"] for r in replies],
           [True, False, False, False, False, False, True], "ok flags")
        eq(replies[1]["error"], "bad_request", "not json")
        eq(replies[3]["error"], "unknown_command", "unknown command")
        eq(replies[5]["error"], "bad_request", "invoke without app")
        eq(replies[6]["id"], 5, "last reply last")
        # Half-close after the requests: every reply, then EOF.
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(30)
        s.connect(d.sock)
        s.sendall(b'{"cmd":"health","id":"a"}\n{"cmd":"apps","id":"b"}\n')
        s.shutdown(socket.SHUT_WR)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        s.close()
        eq([json.loads(x)["id"] for x in data.splitlines()], ["a", "b"],
           "replies before EOF")
        # The same behind a request answered later (app invoke waits for
        # its handler): the following line is still answered.
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(30)
        s.connect(d.sock)
        s.sendall(b'{"cmd":"app invoke","app":"a","id":"inv",'
                  b'"event":{"kind":"x","k":"c1"}}\n'
                  b'{"cmd":"health","id":"after"}\n')
        s.shutdown(socket.SHUT_WR)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        s.close()
        replies = [json.loads(x) for x in data.splitlines()]
        eq([r["id"] for r in replies], ["inv", "after"], "both answered")
        eq(replies[0]["results"][0]["status"], "ok", "invoke ran")
        # A request line over 4 MiB: an error, then the socket closes.
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(30)
        s.connect(d.sock)
        try:
            s.sendall(b'{"cmd":"health","pad":"' + b"x" * (5 << 20))
        except OSError:
            pass  # relayd may close while we are still sending
        data = b""
        while True:
            try:
                chunk = s.recv(65536)
            except OSError:
                break
            if not chunk:
                break
            data += chunk
        s.close()
        eq(json.loads(data.splitlines()[0])["error"], "bad_request",
           "overlong line")
        check(d.control({"cmd": "health"})["ok"], "still serving")
        d.stop()
        check(not os.path.exists(d.sock), "socket removed at exit")


@case
def metrics_endpoint():
    need_metrics()
    port = free_port()
    with Env() as env:
        env.app("a", [("h1", {"kind": ["x"]})])
        d = env.relayd(METRICS_ADDR=f"127.0.0.1:{port}")
        url = f"http://127.0.0.1:{port}/metrics"
        body = urllib.request.urlopen(url, timeout=10).read().decode()
        for name in ("relay_events_received_total",
                     "relay_events_matched_total",
                     "relay_events_unmatched_total",
                     "relay_handler_success_total",
                     "relay_handler_failure_total", "relay_retries_total",
                     "relay_dlq_entries_total",
                     "relay_events_oversized_total",
                     "relay_missing_payload_total",
                     "relay_concurrency_waits_total",
                     "relay_handler_duration_seconds",
                     "relay_pending_entries",
                     "relay_pending_oldest_age_seconds",
                     "relay_in_flight_invocations",
                     "relay_buffered_events", "relay_redis_up"):
            check(f"# TYPE {name} " in body, f"{name} in /metrics")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/other",
                                   timeout=10)
            raise AssertionError("/other answered 200")
        except urllib.error.HTTPError as e:
            eq(e.code, 404, "other paths")
        try:
            urllib.request.urlopen(urllib.request.Request(
                url, data=b"x", method="POST"), timeout=10)
            raise AssertionError("POST answered 200")
        except urllib.error.HTTPError as e:
            eq(e.code, 405, "POST /metrics")
        d.stop()


if __name__ == "__main__":
    sys.exit(run_cases())
