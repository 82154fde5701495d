#!/usr/bin/env python3
"""Security: METRICS_ADDR under hostile clients (issue 14 items 8, 11),
and what /metrics says, read by a strict parser of the text format.

8: libmicrohttpd's own messages go through relayd's logger: with
   LOG_FORMAT=json every stderr line stays one JSON object.
11: half-sent requests neither fill the connection table nor hold it
   for long: scraping stays available, and they are closed after a few
   seconds.
The exposition: every line parses under the text format's grammar, with
no duplicate series, families contiguous and typed once, histograms
cumulative, every value written as its shortest exact decimal; the
outcome counters, relay_build_info and the process_* families hold what
real handler runs and the kernel say.

argv: relayd relayctl.
"""
import json
import math
import os
import re
import resource
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "daemon"))
from harness import (RELAYD, Env, case, check, eq, free_port,  # noqa
                     metrics_text, need_metrics, run_cases, wait_for)

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


# ---- a strict parser of the Prometheus text format (version 0.0.4) -------

METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
FLOAT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
                   r"(?:[eE][+-]?[0-9]+)?$")
TYPES = ("counter", "gauge", "histogram", "summary", "untyped")


def parse_value(text, where):
    """A sample value as the format allows it; also that it is written
    as its shortest exact decimal (integers without a fraction)."""
    if text in ("NaN", "+Inf", "-Inf"):
        return float(text.replace("Inf", "inf").replace("NaN", "nan"))
    if not FLOAT.match(text):
        raise AssertionError(f"{where}: bad value {text!r}")
    v = float(text)
    if v == int(v) and abs(v) < 2 ** 53:
        want = str(int(v))
    else:
        want = repr(v)
    if text != want:
        raise AssertionError(f"{where}: value {text!r} is not the "
                             f"shortest exact form {want!r}")
    return v


def parse_labels(text, i, where):
    """Labels from text[i] == '{'; returns (tuple of pairs, index after
    '}')."""
    labels = []
    i += 1
    while True:
        if text[i] == "}":
            return tuple(labels), i + 1
        m = LABEL_NAME.match(text, i)
        if not m:
            raise AssertionError(f"{where}: bad label name at {i}")
        name = m.group(0)
        if name.startswith("__"):
            raise AssertionError(f"{where}: reserved label {name}")
        i = m.end()
        if text[i:i + 2] != '="':
            raise AssertionError(f'{where}: expected =\" after {name}')
        i += 2
        val = []
        while text[i] != '"':
            c = text[i]
            if c == "\\":
                nxt = text[i + 1]
                if nxt not in ('\\', '"', "n"):
                    raise AssertionError(f"{where}: bad escape \\{nxt}")
                val.append("\n" if nxt == "n" else nxt)
                i += 2
                continue
            if c == "\n":
                raise AssertionError(f"{where}: raw newline in a label")
            val.append(c)
            i += 1
        i += 1
        if name in (n for n, _ in labels):
            raise AssertionError(f"{where}: label {name} twice")
        labels.append((name, "".join(val)))
        if text[i] == ",":
            i += 1
        elif text[i] != "}":
            raise AssertionError(f"{where}: expected , or }} at {i}")


def parse_exposition(body):
    """{family: {"type", "help", "samples": {(name, labels): value}}};
    raises AssertionError on anything the format does not allow."""
    check(body.endswith("\n"), "the body ends with a newline")
    body.encode("utf-8")
    families, order, current = {}, [], None

    def family_of(name):
        for suffix in ("_bucket", "_sum", "_count"):
            base = name[:-len(suffix)]
            if name.endswith(suffix) and \
                    families.get(base, {}).get("type") == "histogram":
                return base
        return name

    def enter(fam, where):
        nonlocal current
        if fam != current:
            if fam in order:
                raise AssertionError(f"{where}: family {fam} is not "
                                     "contiguous")
            order.append(fam)
            current = fam
        return families.setdefault(fam, {"type": None, "help": None,
                                         "samples": {}})

    for n, line in enumerate(body.split("\n")[:-1], 1):
        where = f"line {n} {line!r}"
        if line == "":
            raise AssertionError(f"{where}: empty line")
        if line.startswith("#"):
            parts = line.split(" ", 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                if not METRIC_NAME.fullmatch(parts[2]):
                    raise AssertionError(f"{where}: bad name")
                fam = enter(parts[2], where)
                if fam["samples"]:
                    raise AssertionError(f"{where}: after samples")
                key = parts[1].lower()
                if fam[key] is not None:
                    raise AssertionError(f"{where}: second {parts[1]}")
                text = parts[3] if len(parts) > 3 else ""
                if key == "type" and text not in TYPES:
                    raise AssertionError(f"{where}: unknown type")
                if key == "help" and re.search(r"\\[^\\n]", text):
                    raise AssertionError(f"{where}: bad escape in HELP")
                fam[key] = text
            continue
        m = METRIC_NAME.match(line)
        if not m:
            raise AssertionError(f"{where}: bad metric name")
        name, i = m.group(0), m.end()
        labels = ()
        if i < len(line) and line[i] == "{":
            labels, i = parse_labels(line, i, where)
        if line[i:i + 1] != " ":
            raise AssertionError(f"{where}: expected a space")
        rest = line[i + 1:].split(" ")
        if len(rest) not in (1, 2) or (len(rest) == 2 and
                                       not re.fullmatch(r"-?[0-9]+",
                                                        rest[1])):
            raise AssertionError(f"{where}: bad value/timestamp")
        value = parse_value(rest[0], where)
        fam_name = family_of(name)
        fam = enter(fam_name, where)
        key = (name, tuple(sorted(labels)))
        if key in fam["samples"]:
            raise AssertionError(f"{where}: duplicate series")
        ftype = fam["type"] or "untyped"
        if ftype == "histogram":
            check(name != fam_name, f"{where}: bare histogram sample")
            check(("le" in dict(labels)) == name.endswith("_bucket"),
                  f"{where}: le only on _bucket")
        elif ftype == "counter":
            check(value >= 0 and not math.isnan(value),
                  f"{where}: negative counter")
        fam["samples"][key] = value
    for fname, fam in families.items():
        if fam["type"] != "histogram":
            continue
        series = {}
        for (name, labels), v in fam["samples"].items():
            rest = tuple(p for p in labels if p[0] != "le")
            series.setdefault(rest, {"b": [], "count": None})
            if name.endswith("_bucket"):
                le = dict(labels)["le"]
                series[rest]["b"].append((float(le.replace(
                    "+Inf", "inf")), v))
            elif name.endswith("_count"):
                series[rest]["count"] = v
        for rest, h in series.items():
            b = sorted(h["b"])
            check(b and b[-1][0] == math.inf, f"{fname}{rest}: +Inf")
            for (_, x), (_, y) in zip(b, b[1:]):
                check(x <= y, f"{fname}{rest}: not cumulative")
            eq(b[-1][1], h["count"], f"{fname}{rest}: +Inf = _count")
    return families


def sample(fams, family, name=None, **labels):
    """The value of one series, or None."""
    fam = fams.get(family)
    if not fam:
        return None
    return fam["samples"].get((name or family,
                               tuple(sorted(labels.items()))))


def proc_start_time(pid):
    """A process's start time (Unix seconds) computed the way the
    kernel documents it: btime of /proc/stat plus field 22 of
    /proc/<pid>/stat in clock ticks."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    with open("/proc/stat") as f:
        btime = next(int(x.split()[1]) for x in f
                     if x.startswith("btime "))
    return btime + int(fields[22 - 3]) / os.sysconf("SC_CLK_TCK")


@case
def exposition_is_strict_and_counts_outcomes():
    need_metrics()
    with Env() as env:
        port = free_port()
        env.app("ok", [("h", {"kind": ["x"]})])
        env.app("bad", [("h", {"kind": ["x"]}, {"retries": 0})],
                env={"FAIL": "h"})
        env.app("slow", [("h", {"kind": ["x"]},
                          {"retries": 0, "timeout": "300ms"})],
                env={"SLEEP": "20"})
        t0 = time.time()
        d = env.relayd(METRICS_ADDR=f"127.0.0.1:{port}")
        env.xadd({"kind": "x", "k": "o1"})

        def settled():
            fams = parse_exposition(metrics_text(port))
            done = (sample(fams, "relay_handler_outcomes_total",
                           app="slow", handler="h",
                           outcome="exhausted") == 1 and
                    sample(fams, "relay_handler_outcomes_total",
                           app="bad", handler="h",
                           outcome="exhausted") == 1 and
                    sample(fams, "relay_handler_outcomes_total",
                           app="ok", handler="h",
                           outcome="succeeded") == 1 and
                    sample(fams, "relay_acks_total") == 1)
            return fams if done else None
        fams = env.wait(settled, "three outcomes on /metrics")
        eq(fams["relay_handler_outcomes_total"]["type"], "counter", "type")
        want = {("ok", "succeeded"): 1, ("ok", "failed"): 0,
                ("ok", "timed_out"): 0, ("ok", "exhausted"): 0,
                ("bad", "succeeded"): 0, ("bad", "failed"): 1,
                ("bad", "timed_out"): 0, ("bad", "exhausted"): 1,
                ("slow", "succeeded"): 0, ("slow", "failed"): 0,
                ("slow", "timed_out"): 1, ("slow", "exhausted"): 1}
        for (app, outcome), v in want.items():
            eq(sample(fams, "relay_handler_outcomes_total", app=app,
                      handler="h", outcome=outcome), v,
               f"{app} {outcome}")
        eq(len(fams["relay_handler_outcomes_total"]["samples"]), 12,
           "four outcomes for each of three handlers")
        eq(sample(fams, "relay_handler_timeouts_total"), 1, "timeouts")
        eq(sample(fams, "relay_invocations_exhausted_total"), 2,
           "exhausted")
        eq(sample(fams, "relay_handler_failure_total"), 2, "failures")
        eq(len(env.dlq()), 2, "a DLQ entry per exhausted invocation")
        # The duration sums are fractions: written exactly (checked by
        # the parser), and the timed-out attempt took its timeout.
        slow = sample(fams, "relay_handler_duration_seconds",
                      "relay_handler_duration_seconds_sum", app="slow",
                      handler="h")
        check(0.3 <= slow < 15, f"slow's duration {slow}")
        # relay_build_info names the version `relayd --version` prints.
        version = subprocess.run([RELAYD, "--version"], check=True,
                                 capture_output=True,
                                 text=True).stdout.split()[1]
        eq(fams["relay_build_info"]["type"], "gauge", "build_info type")
        eq(fams["relay_build_info"]["samples"],
           {("relay_build_info", (("version", version),)): 1},
           "build_info")
        # process_*: relayd's own figures, against the kernel's.
        pid = d.proc.pid
        start = sample(fams, "process_start_time_seconds")
        check(abs(start - proc_start_time(pid)) < 0.05,
              f"start time {start} vs {proc_start_time(pid)}")
        check(t0 - 2 <= start <= time.time(), "started during the case")
        eq(sample(fams, "process_max_fds"),
           resource.getrlimit(resource.RLIMIT_NOFILE)[0], "max fds")
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        check(abs(sample(fams, "process_open_fds") - fds) <= 4,
              f"open fds {sample(fams, 'process_open_fds')} vs {fds}")
        with open(f"/proc/{pid}/status") as f:
            rss = next(int(x.split()[1]) * 1024 for x in f
                       if x.startswith("VmRSS:"))
        got = sample(fams, "process_resident_memory_bytes")
        check(rss / 2 <= got <= rss * 2, f"rss {got} vs {rss}")
        cpu = sample(fams, "process_cpu_seconds_total")
        check(cpu > 0, f"cpu {cpu}")
        for name, ftype in (("process_cpu_seconds_total", "counter"),
                            ("process_resident_memory_bytes", "gauge"),
                            ("process_open_fds", "gauge"),
                            ("process_max_fds", "gauge"),
                            ("process_start_time_seconds", "gauge")):
            eq(fams[name]["type"], ftype, f"{name} type")
        # The stats snapshot (relayctl stats, the stats file) has them.
        st = d.control({"cmd": "stats"})["stats"]
        eq({h["app"]: h["outcomes"] for h in st["handlers"]},
           {"ok": {"succeeded": 1, "failed": 0, "timed_out": 0,
                   "exhausted": 0},
            "bad": {"succeeded": 0, "failed": 1, "timed_out": 0,
                    "exhausted": 1},
            "slow": {"succeeded": 0, "failed": 0, "timed_out": 1,
                     "exhausted": 1}}, "stats outcomes")
        eq((st["counters"]["handler_timeouts"],
            st["counters"]["invocations_exhausted"]), (1, 2),
           "stats totals")
        # stats reset zeroes the outcome counters too.
        d.control({"cmd": "stats reset"})
        env.wait(lambda: sample(parse_exposition(metrics_text(port)),
                                "relay_handler_outcomes_total", app="bad",
                                handler="h", outcome="failed") == 0,
                 "outcomes reset")
        d.stop()


@case
def parser_rejects_what_the_format_forbids():
    """The parser above is strict: it refuses each of these."""
    good = "# TYPE a counter\na 1\n"
    parse_exposition(good)
    for bad in ("# TYPE a counter\na 60.881999999999998\n",
                "# TYPE a counter\na 1.0\n",
                "# TYPE a counter\na{x=\"\\q\"} 1\n",
                "# TYPE a counter\na 1\na 2\n",
                "# TYPE a counter\na 1\n# TYPE b gauge\nb 1\na{x=\"y\"} 1\n",
                "# TYPE a counter\na -1\n",
                "# TYPE a counter\na 1",
                "a{x=\"y\",x=\"z\"} 1\n",
                "# TYPE h histogram\nh_bucket{le=\"1\"} 2\n"
                "h_bucket{le=\"+Inf\"} 1\nh_count 1\n"):
        try:
            parse_exposition(bad)
        except AssertionError:
            continue
        raise AssertionError(f"accepted {bad!r}")


sys.exit(run_cases())
