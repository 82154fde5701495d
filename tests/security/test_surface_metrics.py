#!/usr/bin/env python3
"""Security: METRICS_ADDR under hostile clients (issue 14 items 8, 11).

8: libmicrohttpd's own messages go through relayd's logger: with
   LOG_FORMAT=json every stderr line stays one JSON object.
11: half-sent requests neither fill the connection table nor hold it
   for long: scraping stays available, and they are closed after a few
   seconds.

argv: relayd relayctl.
"""
import json
import os
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "daemon"))
from harness import (Env, case, check, eq, free_port, metrics_text,  # noqa
                     run_cases, wait_for)

BAD_REQUESTS = [
    b"GET /metrics HTTP/9.9\r\n\r\n",
    b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-A: " + b"a" * 40000 +
    b"\r\n\r\n",
    b"\x1b[2J\x00\x01 / HTTP/1.1\r\n\r\n",
]


@case
def http_library_messages_stay_json_lines():
    with Env() as env:
        port = free_port()
        d = env.relayd(METRICS_ADDR=f"127.0.0.1:{port}", LOG_FORMAT="json")
        for payload in BAD_REQUESTS:
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(payload)
            try:
                s.recv(100)
            except OSError:
                pass
            s.close()
        wait_for(lambda: "rror processing request" in d.log(),
                 "the library's message")
        d.stop()
        check("RELAYD-HTTP01" in d.log(), "logged by relayd's logger")
        for line in d.log().splitlines():
            try:
                obj = json.loads(line)
            except ValueError:
                raise AssertionError(f"not a JSON line: {line!r}")
            check(isinstance(obj, dict), f"not an object: {line!r}")


@case
def half_sent_requests_do_not_lock_out_scrapes():
    with Env() as env:
        port = free_port()
        d = env.relayd(METRICS_ADDR=f"127.0.0.1:{port}")
        wait_for(lambda: "relay_" in metrics_text(port), "metrics up")
        held = []
        for _ in range(80):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
            held.append(s)
        time.sleep(0.3)
        t0 = time.monotonic()
        text = metrics_text(port)
        took = time.monotonic() - t0
        check("relay_" in text, "a scrape with 80 half-sent requests")
        check(took < 2, f"the scrape took {took:.1f}s")
        # ... and the half-sent ones are closed after a few seconds.
        t0 = time.monotonic()
        for s in held:
            s.settimeout(15)
            try:
                data = s.recv(100)
            except ConnectionResetError:
                data = b""
            eq(data, b"", "a half-sent request is closed")
            s.close()
        took = time.monotonic() - t0
        check(took < 8, f"half-sent requests held for {took:.1f}s")
        d.stop()


sys.exit(run_cases())
