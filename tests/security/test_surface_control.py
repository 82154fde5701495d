#!/usr/bin/env python3
"""Security: the control socket under a hostile local client (issue 14
item 10). Bounded per-connection memory, linear processing of queued
input, an idle timeout, and a spare connection that always serves health.

Runs against the real relayd and a real redis-server (tests/daemon's
harness). argv: relayd relayctl.
"""
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "daemon"))
from harness import (Env, case, check, eq, run_cases, wait_for)  # noqa: E402

import json  # noqa: E402


def connect(d):
    end = time.monotonic() + 10
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(30)
        try:
            s.connect(d.sock)
            return s
        except BlockingIOError:  # listen backlog full for a moment
            s.close()
            if time.monotonic() > end:
                raise
            time.sleep(0.01)


def read_line(s, buf=b""):
    while b"\n" not in buf:
        chunk = s.recv(65536)
        if not chunk:
            raise OSError("control socket closed")
        buf += chunk
    line, rest = buf.split(b"\n", 1)
    return json.loads(line), rest


def slow_app(env, seconds):
    env.app("slow", [("h", {"kind": ["x"]})], env={"SLEEP": str(seconds)})


def invoke(k="e1"):
    return (json.dumps({"cmd": "app invoke", "app": "slow",
                        "event": {"kind": "x", "k": k}}) + "\n").encode()


def push_nonblocking(s, data, quiet=1.5, limit=60):
    """Send as much of data as the peer takes; stop after @quiet seconds
    without progress. Returns the number of bytes accepted."""
    s.setblocking(False)
    sent = 0
    last = time.monotonic()
    end = last + limit
    while sent < len(data) and time.monotonic() < end:
        try:
            n = s.send(data[sent:sent + 65536])
            sent += n
            last = time.monotonic()
        except BlockingIOError:
            if time.monotonic() - last > quiet:
                break
            time.sleep(0.02)
        except (BrokenPipeError, ConnectionResetError):
            break  # relayd closed it (idle with answers unread)
    s.setblocking(True)
    s.settimeout(30)
    return sent


@case
def newlines_behind_a_busy_request_are_processed_in_linear_time():
    # 2 MiB of empty lines queued behind a 2 s app invoke, then health:
    # memmove per line made this ~40 s of frozen loop.
    with Env() as env:
        slow_app(env, 2)
        d = env.relayd()
        s = connect(d)
        payload = invoke() + b"\n" * (2 * 1024 * 1024) + \
            b'{"cmd":"health","id":"after"}\n'
        t0 = time.monotonic()
        th = threading.Thread(target=s.sendall, args=(payload,),
                              daemon=True)
        th.start()
        r1, rest = read_line(s)
        eq(r1.get("success"), True, "the invoke succeeded")
        r2, _ = read_line(s, rest)
        took = time.monotonic() - t0
        eq(r2.get("id"), "after", "the health behind the newlines")
        check(took < 15, f"2 MiB of newlines took {took:.1f}s")
        th.join(30)
        s.close()
        d.stop()


@case
def input_behind_a_busy_request_is_bounded():
    # While a request is outstanding relayd stops reading after a bounded
    # amount: the peer is pushed back instead of relayd buffering it all.
    with Env() as env:
        slow_app(env, 8)
        d = env.relayd()
        s = connect(d)
        s.sendall(invoke())
        time.sleep(0.3)
        line = b'{"cmd":"health"}\n'
        data = line * ((32 * 1024 * 1024) // len(line))
        sent = push_nonblocking(s, data)
        check(sent < 12 * 1024 * 1024,
              f"relayd took {sent} bytes behind a busy request")
        # Another connection is served meanwhile.
        eq(d.control({"cmd": "health"}).get("ok"), True, "health")
        s.close()
        d.stop()


@case
def unread_answers_are_bounded():
    # A client that sends requests and never reads the answers.
    with Env() as env:
        d = env.relayd()
        s = connect(d)
        # Each answer echoes a 100 KB id: 160 requests would leave 16 MB
        # of answers in relayd if it kept reading.
        line = json.dumps({"cmd": "health", "id": "x" * 100000}).encode() \
            + b"\n"
        data = line * 160
        sent = push_nonblocking(s, data)
        check(sent < 6 * 1024 * 1024,
              f"relayd took {sent} bytes while its answers went unread")
        eq(d.control({"cmd": "health"}).get("ok"), True, "health")
        s.close()
        d.stop()


@case
def idle_connections_cannot_lock_out_health_and_time_out():
    with Env() as env:
        d = env.relayd()
        idle = [connect(d) for _ in range(64)]
        time.sleep(0.2)
        # The spare slot answers health at once.
        t0 = time.monotonic()
        eq(d.control({"cmd": "health"}).get("ok"), True,
           "health with 64 idle connections")
        check(time.monotonic() - t0 < 0.9, "health answered at once")
        # ... and nothing else (once relayd has seen the last one go).
        time.sleep(0.2)
        r = d.control({"cmd": "apps"})
        eq((r.get("ok"), r.get("error")), (False, "busy"),
           "apps on the spare connection")
        # The idle ones are closed (1 s under the test time scale).
        for s in idle:
            s.settimeout(10)
            eq(s.recv(10), b"", "an idle connection is closed")
            s.close()
        eq(d.control({"cmd": "apps"}).get("ok"), True, "apps afterwards")
        d.stop()


@case
def a_busy_request_is_not_idle():
    with Env() as env:
        slow_app(env, 3)
        d = env.relayd()
        s = connect(d)
        s.sendall(invoke())
        r, _ = read_line(s)
        eq(r.get("success"), True, "a 3 s invoke outlives the idle timeout")
        s.close()
        d.stop()


sys.exit(run_cases())
