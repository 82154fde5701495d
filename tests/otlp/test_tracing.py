#!/usr/bin/env python3
"""test_tracing.py RELAYD RELAYCTL RECEIVER_JS - relayd's spans end to end.

The real relayd, a throwaway redis-server (tests/daemon/harness.py) and
a local OTLP/HTTP receiver (receiver.js) that decodes every body with the
OpenTelemetry project's own generated protobuf code (npm package
@opentelemetry/otlp-transformer, installed into the build tree as
test_otlp.py does; every case skips, saying why, when npm cannot install
it). Cases: parent, links, attributes and status of a success, a failure
with its retry and DLQ lineage, a timeout, a dlq replay, an app invoke,
hostile trace values on stream entries, a collector that is down,
answering 500 or hanging (no event lost, drops counted), spans of
finished attempts exported on a clean stop, and a handler that joins the
attempt's span through TRACEPARENT.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                os.pardir, "daemon"))
import harness  # noqa: E402
import otlp_npm  # noqa: E402
from harness import (DEADLINE, Env, Skip, case, check, eq,  # noqa: E402
                     free_port, have_metrics, metrics, run_cases)

RECEIVER = sys.argv[3]
BUILD = os.environ.get("RELAY_BUILD_ROOT", tempfile.gettempdir())
MODS = os.path.join(BUILD, "tests", "otlp", "npm")
TP_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
TP_SPAN = "00f067aa0ba902b7"
TP = f"00-{TP_TRACE}-{TP_SPAN}-01"
_install_error = []


def need_decoder():
    """Skip unless node and the OpenTelemetry generated code are there
    (installed once, under a lock shared with test_otlp.py)."""
    if not _install_error:
        _install_error.append(otlp_npm.install(MODS))
    if _install_error[0]:
        raise Skip(_install_error[0])


class Receiver:
    """receiver.js in @mode (ok, 500, hang); .spans() decoded."""

    def __init__(self, env, mode="ok"):
        need_decoder()
        self.port_file = os.path.join(env.dir, f"otlp-port-{mode}")
        self.out = os.path.join(env.dir, f"otlp-out-{mode}")
        open(self.out, "w").close()
        self.proc = subprocess.Popen(["node", RECEIVER, MODS, mode,
                                      self.port_file, self.out])
        env.procs.append(self.proc)
        harness.wait_for(lambda: os.path.exists(self.port_file) and
                         open(self.port_file).read(), "receiver started")
        self.endpoint = "http://127.0.0.1:" + open(self.port_file).read()

    def requests(self):
        with open(self.out) as f:
            return [json.loads(line) for line in f if line.strip()]

    def spans(self, name=None):
        out = []
        for r in self.requests():
            if "error" in r:
                raise AssertionError("undecodable body: " + r["error"])
            for rs in r["request"].get("resourceSpans", []):
                res = {a["key"]: a["value"] for a in
                       rs.get("resource", {}).get("attributes", [])}
                for ss in rs.get("scopeSpans", []):
                    for s in ss.get("spans", []):
                        s["_resource"] = res
                        if name is None or s["name"] == name:
                            out.append(s)
        return out


def attrs(obj):
    """{key: python value} of a decoded span's or link's attributes."""
    out = {}
    for a in obj.get("attributes", []):
        v = a["value"]
        if "stringValue" in v:
            out[a["key"]] = v["stringValue"]
        elif "intValue" in v:
            out[a["key"]] = int(v["intValue"])
        elif "boolValue" in v:
            out[a["key"]] = v["boolValue"]
    return out


def otel_vars(endpoint, **more):
    v = {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
         "OTEL_SERVICE_NAME": "relayd-e2e",
         "OTEL_BSP_SCHEDULE_DELAY": "50"}
    v.update(more)
    return v


def tp_of(span):
    return f"00-{span['traceId']}-{span['spanId']}-01"


def parent(span):
    return span.get("parentSpanId") or ""


def raw_app(env, name, lines, rules, envvars=None):
    """A template of the harness's handler.sh with extra top lines."""
    e = {"OUT": env.out, "APP": name}
    e.update(envvars or {})
    text = ["runtime: exec", "command: [./handler.sh]"] + lines + ["env:"]
    text += [f"  {k}: {harness.yaml_value(str(v))}" for k, v in e.items()]
    text.append("events:")
    for h, pat, extra in rules:
        text.append(f"  - handler: {h}")
        text.append(f"    pattern: {json.dumps(pat)}")
        text += [f"    {k}: {v}" for k, v in extra.items()]
    env.app(name, rules=[], raw="\n".join(text) + "\n")


@case
def success_link_mode():
    """Link mode (the default): the attempt span is a root of its own
    trace linking to the producer, with the messaging attributes."""
    with Env() as env:
        rc = Receiver(env)
        env.app("a", rules=[("h1", {"kind": ["x"]})])
        env.relayd(**otel_vars(rc.endpoint))
        mid = env.xadd(fields=["event", '{"kind":"x","k":"e1"}',
                               "traceparent", TP,
                               "tracestate", "vendor=abc"])
        env.wait(lambda: env.pel_count() == 0 and rc.spans("a/h1"),
                 "span exported")
        s = rc.spans("a/h1")[0]
        eq(s["kind"], 5, "kind CONSUMER")
        eq(parent(s), "", "a root")
        check(s["traceId"] != TP_TRACE, "a trace of its own")
        eq(len(s.get("links", [])), 1, "one link")
        ln = s["links"][0]
        eq((ln["traceId"], ln["spanId"]), (TP_TRACE, TP_SPAN),
           "link to the producer")
        eq(attrs(ln).get("relay.link"), "producer", "link kind")
        eq(ln.get("traceState"), "vendor=abc", "producer's tracestate")
        a = attrs(s)
        eq(a.get("messaging.destination.name"), env.stream, "stream")
        eq(a.get("messaging.message.id"), mid, "message id")
        eq(a.get("messaging.consumer.group.name"), env.group, "group")
        eq(a.get("messaging.operation.type"), "process", "operation")
        eq(a.get("relay.attempt"), 1, "attempt")
        eq(a.get("relay.outcome"), "succeeded", "outcome")
        eq(a.get("process.exit.code"), 0, "exit code")
        eq(s.get("status", {}).get("code", 0), 0, "status unset")
        eq(s["_resource"].get("service.name", {}).get("stringValue"),
           "relayd-e2e", "service.name")
        check(int(s["endTimeUnixNano"]) >= int(s["startTimeUnixNano"]) >
              1.7e18, "wall-clock times")


@case
def failure_retry_dlq_child_mode():
    """Child mode: both attempts are children of the producer's span;
    the retry links to the first attempt; the DLQ entry's trace holds the
    producer's traceparent verbatim and the last attempt's context."""
    with Env() as env:
        rc = Receiver(env)
        raw_app(env, "c", ["tracing: child"],
                [("h", {"kind": ["x"]}, {"retries": 1})],
                envvars={"FAIL": "h"})
        env.relayd(**otel_vars(rc.endpoint))
        env.xadd(fields=["event", '{"kind":"x","k":"e1"}',
                         "traceparent", TP, "baggage", "user=7"])
        env.wait(lambda: len(env.dlq()) == 1 and env.pel_count() == 0 and
                 len(rc.spans("c/h")) == 2, "two attempts, one DLQ entry",
                 timeout=60)
        s1, s2 = sorted(rc.spans("c/h"),
                        key=lambda s: attrs(s)["relay.attempt"])
        for s in (s1, s2):
            eq(s["traceId"], TP_TRACE, "in the producer's trace")
            eq(parent(s), TP_SPAN, "child of the producer's span")
            eq(s["status"]["code"], 2, "ERROR")
            eq(attrs(s)["relay.outcome"], "failed", "outcome")
            eq(attrs(s)["process.exit.code"], 3, "exit code")
        eq(attrs(s2).get("relay.exhausted"), True, "exhausted")
        prev = [ln for ln in s2.get("links", [])
                if attrs(ln).get("relay.link") == "previous_attempt"]
        eq(len(prev), 1, "retry links to the attempt before")
        eq((prev[0]["traceId"], prev[0]["spanId"]),
           (s1["traceId"], s1["spanId"]), "the first attempt")
        d = env.dlq()[0]
        check(TP in d["trace"], "producer traceparent verbatim in DLQ")
        t = json.loads(d["trace"])
        eq(t["traceparent"], TP, "traceparent")
        eq(t["baggage"], "user=7", "baggage")
        eq(t["attempt"], tp_of(s2), "the failed attempt's context")


@case
def timeout_replay_and_invoke():
    """A timed-out attempt is an ERROR span; dlq replay's run links to the
    DLQ entry's attempt; app invoke's run is a new root."""
    with Env() as env:
        rc = Receiver(env)
        env.app("t", rules=[("h", {"kind": ["x"]},
                             {"retries": 0, "timeout": "1s"})],
                env={"SLEEP": "30"})
        env.app("v", rules=[("h", {"kind": ["y"]})])
        d = env.relayd(**otel_vars(rc.endpoint))
        env.xadd(fields=["event", '{"kind":"x","k":"e1"}',
                         "traceparent", TP])
        env.wait(lambda: len(env.dlq()) == 1 and rc.spans("t/h"),
                 "timed out and dead-lettered", timeout=60)
        s = rc.spans("t/h")[0]
        eq(attrs(s)["relay.outcome"], "timed_out", "outcome")
        eq(attrs(s).get("error.type"), "timeout", "error.type")
        eq(s["status"]["code"], 2, "ERROR")
        dl = env.dlq()[0]
        eq(json.loads(dl["trace"])["attempt"], tp_of(s), "lineage")
        # Replay (the handler times out again: the span is what counts).
        r = d.control({"cmd": "dlq replay", "id": dl["_id"]}, timeout=60)
        check(r.get("ok"), f"replay answered: {r}")
        env.wait(lambda: len(rc.spans("t/h")) == 2, "replay span")
        rs = [x for x in rc.spans("t/h")
              if attrs(x).get("relay.manual") == "dlq_replay"]
        eq(len(rs), 1, "one replay span")
        links = rs[0].get("links", [])
        eq(len(links), 1, "one link")
        eq((links[0]["traceId"], links[0]["spanId"]),
           (s["traceId"], s["spanId"]), "links to the failed attempt")
        eq(attrs(links[0]).get("relay.link"), "dlq_attempt", "link kind")
        r = d.control({"cmd": "app invoke", "app": "v",
                       "event": {"kind": "y", "k": "i1"}}, timeout=60)
        check(r.get("ok") and r.get("success"), f"invoke: {r}")
        env.wait(lambda: rc.spans("v/h"), "invoke span")
        iv = rc.spans("v/h")[0]
        eq(attrs(iv).get("relay.manual"), "invoke", "manual kind")
        eq(parent(iv), "", "a root")
        eq(len(iv.get("links", [])), 0, "no link")


@case
def hostile_values():
    """Huge, control-byte and many-member values are ignored and counted;
    the messages are processed as if they were absent."""
    with Env() as env:
        rc = Receiver(env)
        env.app("a", rules=[("h", {"kind": ["x"]})])
        port = free_port()
        extra = {"METRICS_ADDR": f"127.0.0.1:{port}"} \
            if have_metrics() else {}
        d = env.relayd(**otel_vars(rc.endpoint, **extra))
        many = ",".join(f"k{i}=v" for i in range(200))
        env.xadd(fields=["event", '{"kind":"x","k":"e1"}',
                         "traceparent", "00-" + "a" * 20000])
        env.xadd(fields=["event", '{"kind":"x","k":"e2"}',
                         "traceparent", TP, "baggage", "a=\x01\x02",
                         "tracestate", "x=\x7f"])
        env.xadd(fields=["event", '{"kind":"x","k":"e3"}',
                         "baggage", many])
        env.wait(lambda: env.count("end") == 3 and env.pel_count() == 0,
                 "all three processed")
        eq(len(env.dlq()), 0, "nothing dead-lettered")
        env.wait(lambda: len(rc.spans("a/h")) == 3, "three spans")
        if have_metrics():
            env.wait(lambda: metrics(port).get(
                "relay_trace_context_invalid_total") == 4,
                "relay_trace_context_invalid_total 4 on /metrics")
        d.stop()
        st = d.stats_file()
        n = st.get("counters", {}).get("trace_context_invalid")
        eq(n, 4, "invalid values counted (stats file)")


def outage(mode):
    """No event lost while the collector is down / answers 500 / hangs;
    drops counted; relayd stops promptly."""
    with Env() as env:
        if mode == "down":
            endpoint = f"http://127.0.0.1:{free_port()}"
        else:
            endpoint = Receiver(env, mode).endpoint
        env.app("a", rules=[("h", {"kind": ["x"]})])
        port = free_port()
        extra = {"OTEL_BSP_MAX_QUEUE_SIZE": "8",
                 "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "4",
                 "OTEL_EXPORTER_OTLP_TIMEOUT": "2000"}
        if have_metrics():
            extra["METRICS_ADDR"] = f"127.0.0.1:{port}"
        d = env.relayd(**otel_vars(endpoint, **extra))
        n = 40
        for i in range(n):
            env.xadd(fields=["event", '{"kind":"x","k":"e%d"}' % i,
                             "traceparent", TP])
        env.wait(lambda: env.count("end") == n and env.pel_count() == 0,
                 "every event processed", timeout=90)
        eq(len(env.dlq()), 0, "no DLQ entry")
        if have_metrics():
            m = env.wait(lambda: (lambda x: x if x.get(
                "relay_trace_spans_dropped_total", 0) > 0 else None)(
                    metrics(port)), "drops counted")
            eq(m.get("relay_trace_spans_exported_total", 0), 0,
               "nothing exported")
        t0 = time.monotonic()
        d.stop()
        check(time.monotonic() - t0 < 15 * harness.TIME_MULT,
              "a clean stop is not held up by the collector")


@case
def collector_down():
    outage("down")


@case
def collector_500():
    outage("500")


@case
def collector_hanging():
    outage("hang")


@case
def clean_stop_exports_finished_spans():
    """With a long schedule delay, the spans of finished attempts still
    reach the collector when relayd stops cleanly."""
    with Env() as env:
        rc = Receiver(env)
        env.app("a", rules=[("h", {"kind": ["x"]})])
        d = env.relayd(**otel_vars(rc.endpoint,
                                   OTEL_BSP_SCHEDULE_DELAY="600000"))
        for i in range(3):
            env.xadd({"kind": "x", "k": f"e{i}"})
        env.wait(lambda: env.count("end") == 3 and env.pel_count() == 0,
                 "processed")
        eq(len(rc.spans()), 0, "nothing exported yet")
        d.stop()
        eq(len(rc.spans("a/h")), 3, "exported at the clean stop")


@case
def schedule_occurrences_are_roots():
    """Each schedule occurrence's attempt is the root of a trace of its
    own (relayd publishes occurrences without a context)."""
    with Env() as env:
        rc = Receiver(env)
        d = os.path.join(env.apps_dir, "s")
        os.makedirs(d)
        with open(os.path.join(d, "handler.sh"), "w") as f:
            f.write(harness.HANDLER_SH)
        os.chmod(os.path.join(d, "handler.sh"), 0o755)
        with open(os.path.join(d, "template.yaml"), "w") as f:
            f.write("runtime: exec\ncommand: [./handler.sh]\nenv:\n"
                    f"  OUT: {harness.yaml_value(env.out)}\n"
                    "  APP: s\nschedules:\n  - name: tick\n"
                    "    handler: tick\n    cron: \"* * * * *\"\n")
        v0 = 1772352030  # 2026-03-01T08:00:30Z; a minute per second
        env.relayd(**otel_vars(rc.endpoint, RELAY_TEST_SCHEDULE_CLOCK=
                               f"{v0}:{int(time.time())}:60"))
        env.wait(lambda: len(rc.spans("s/tick")) >= 2, "two occurrences",
                 timeout=60)
        ss = rc.spans("s/tick")[:2]
        for s in ss:
            eq(parent(s), "", "a root")
            eq(len(s.get("links", [])), 0, "no link")
            eq(attrs(s).get("relay.outcome"), "succeeded", "outcome")
        check(ss[0]["traceId"] != ss[1]["traceId"],
              "a trace per occurrence")
        check(attrs(ss[0])["messaging.message.id"] !=
              attrs(ss[1])["messaging.message.id"], "distinct entries")


JOIN_SH = r"""#!/bin/sh
cat >/dev/null
printf '%s\n' "${TRACEPARENT:-none}" >> "$TPOUT"
"""


@case
def handler_joins_the_attempt_span():
    """A handler reading TRACEPARENT (the OpenTelemetry environment
    carrier) gets the exported attempt span as its parent."""
    with Env() as env:
        rc = Receiver(env)
        tpout = os.path.join(env.dir, "tp")
        os.makedirs(os.path.join(env.apps_dir, "j"))
        with open(os.path.join(env.apps_dir, "j", "join.sh"), "w") as f:
            f.write(JOIN_SH)
        os.chmod(os.path.join(env.apps_dir, "j", "join.sh"), 0o755)
        with open(os.path.join(env.apps_dir, "j", "template.yaml"),
                  "w") as f:
            f.write("runtime: exec\ncommand: [./join.sh]\nenv:\n"
                    f"  TPOUT: {harness.yaml_value(tpout)}\n"
                    "events:\n  - handler: h\n"
                    "    pattern: {\"kind\": [\"x\"]}\n")
        env.relayd(**otel_vars(rc.endpoint))
        env.xadd(fields=["event", '{"kind":"x"}', "traceparent", TP])
        env.wait(lambda: os.path.exists(tpout) and open(tpout).read() and
                 rc.spans("j/h"), "handler ran, span exported")
        seen = open(tpout).read().split()[0]
        if seen == "none":
            raise Skip("this runtime does not pass TRACEPARENT to "
                       "handlers yet")
        s = rc.spans("j/h")[0]
        v, trace, parent_id, flags = seen.split("-")
        eq((trace, parent_id), (s["traceId"], s["spanId"]),
           "the handler's parent is the attempt span")
        eq(flags, "01", "sampled")


if __name__ == "__main__":
    run_cases()
