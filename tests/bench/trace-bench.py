#!/usr/bin/env python3
"""Tracing's cost, in one run: tracing off, on (100 % sampled, exported to
a local OTLP/HTTP sink) and configured but the collector unreachable.

usage: trace-bench.py BENCH_PIPELINE RELAYD [EVENTS] [RELAYD_EVENTS] [ROUNDS]

  pipeline  bench-pipeline (tests/bench/bench-pipeline.c) at the default
            limits (MAX_BUFFERED 16, MAX_CONCURRENCY 8), EVENTS events
            (default 20000; 0 skips it), each with a producer traceparent:
            off   no span callback
            on    relayd's exporter on the loop, endpoint = the sink
            down  the same, endpoint = a closed local port
  relayd    the real relayd, python3 app with warm parents in the default
            (bwrap) sandbox, RELAY_EVENTS events (default 1000) with a
            traceparent XADDed at once; invocations/s until every one is
            acknowledged (0 events skips it), and relayd's VmRSS at the
            end; off / on / down
            as above (OTEL_EXPORTER_OTLP_ENDPOINT, default batch settings,
            OTEL_TRACES_SAMPLER=always_on).

RELAY_BENCH_CPUS=0 (a comma-separated CPU list) pins bench-pipeline and
its redis-server to those CPUs. On a shared two-CPU machine the unpinned
pipeline's rate is bimodal (where the scheduler puts the two processes
matters more than tracing); pinned to one CPU it is CPU-bound and steady,
the harshest case for tracing's cost.

Each round runs every mode once, interleaved (the order rotating from
round to round), so noise hits all of them;
the medians and their ratios to "off" are printed. The sink is a separate
process that reads each body and answers 200 (it does not decode: the
decoding tests are tests/otlp/). Not a test; figures go to
doc/perf/trace.md. Both programs should be release builds.
"""
import http.server
import os
import socket
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "daemon"))

TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


class Sink(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        self.rfile.read(n)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *a):
        pass


def sink_main(port_file):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Sink)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(port_file + ".tmp", port_file)
    srv.serve_forever()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def pipeline(bench, mode, n, sink, down):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["RELAY_BENCH_QUICK"] = "1"
    env["RELAY_BENCH_TRACEPARENT"] = "1"
    if mode != "off":
        env["RELAY_BENCH_OTLP"] = sink if mode == "on" else down
        env["OTEL_TRACES_SAMPLER"] = "always_on"
    cpus = os.environ.get("RELAY_BENCH_CPUS")
    pin = None
    if cpus:
        # bench-pipeline and the redis-server it starts share these CPUs
        pin = lambda: os.sched_setaffinity(
            0, {int(c) for c in cpus.split(",")})
    out = subprocess.run([bench, str(n)], env=env, capture_output=True,
                         text=True, timeout=600, preexec_fn=pin).stdout
    rate = rss = cpu = None
    extra = ""
    for line in out.splitlines():
        if "events/s" in line:
            rate = float(line.split(" events/s")[0].rsplit(" ", 1)[1])
            cpu = float(line.split(" us CPU/event")[0].rsplit(" ", 1)[1])
        if "tracing:" in line:
            extra = line.split("tracing: ", 1)[1]
            rss = int(line.rsplit("max RSS ", 1)[1].split()[0])
    if rate is None:
        raise SystemExit("bench-pipeline failed:\n" + out)
    print(f"pipeline {mode:5} {rate:9.0f} events/s  {cpu:6.1f} us CPU/"
          f"event  {extra}", flush=True)
    return rate, rss, cpu


def cpu_s(pid):
    """User + system CPU seconds of process @pid so far."""
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def rss_kb(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


PY = "def handle(event):\n    pass\n"


def xadd_traced(env, n, batch=500):
    """n events with a producer traceparent, pipelined (RESP by hand)."""
    s = env.pipe_conn(env.stream)
    args = ["XADD", env.stream, "*", "event", '{"k":"x"}', "traceparent",
            TP]
    one = b"*%d\r\n" % len(args) + b"".join(
        b"$%d\r\n%s\r\n" % (len(a), a.encode()) for a in args)
    sent = 0
    while sent < n:
        k = min(batch, n - sent)
        if s.sock is None:
            s._connect()
        s.sock.sendall(one * k)
        for _ in range(k):
            s._reply()
        sent += k


def relayd_one(mode, n, sink, down):
    import harness
    from harness import Env
    with Env() as env:
        d = os.path.join(env.apps_dir, "bench")
        os.makedirs(d)
        os.chmod(env.dir, 0o755)
        os.chmod(env.apps_dir, 0o755)
        os.chmod(d, 0o755)
        open(os.path.join(d, "noop.py"), "w").write(PY)
        open(os.path.join(d, "template.yaml"), "w").write(
            "runtime: python3\nconcurrency: 8\nevents:\n"
            "  - handler: noop.handle\n    pattern: {k: [x]}\n"
            "    retries: 0\n")
        for f in os.listdir(d):
            os.chmod(os.path.join(d, f), 0o644)
        otel = {}
        if mode != "off":
            otel = {"OTEL_EXPORTER_OTLP_ENDPOINT":
                    sink if mode == "on" else down,
                    "OTEL_TRACES_SAMPLER": "always_on"}
        rd = env.relayd(RELAY_SANDBOX="bwrap", RELAY_WARM="1",
                        LOG_LEVEL="INFO", RELAY_TEST_TIME_SCALE=None,
                        **otel)
        env.xadd(fields=["event", '{"k":"x"}', "traceparent", TP])
        env.wait(lambda: env.all_delivered(1), "warm-up", timeout=60)
        t0 = time.monotonic()
        c0 = cpu_s(rd.proc.pid)
        xadd_traced(env, n)
        env.wait(lambda: env.all_delivered(n + 1), "all acknowledged",
                 timeout=900)
        rate = n / (time.monotonic() - t0)
        cpu = (cpu_s(rd.proc.pid) - c0) * 1e6 / n
        rss = rss_kb(rd.proc.pid)
        log = rd.log()
        failed = log.count("handler failed")
        rd.stop()
        print(f"relayd   {mode:5} {rate:9.1f} inv/s  {cpu:6.0f} us relayd "
              f"CPU/inv  relayd rss {rss} KiB  failed {failed}",
              flush=True)
        return rate, rss, cpu


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--sink":
        sink_main(sys.argv[2])
        return 0
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    bench, relayd = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 20000
    rn = int(sys.argv[4]) if len(sys.argv) > 4 else 1000
    rounds = int(sys.argv[5]) if len(sys.argv) > 5 else 3
    import harness
    harness.RELAYD = relayd
    os.environ.setdefault("RELAY_BOOTSTRAP_DIR", os.path.join(
        ROOT, "sandbox", "bootstrap"))
    pf = f"/tmp/trace-bench-sink.{os.getpid()}"
    sp = subprocess.Popen([sys.executable, os.path.abspath(__file__),
                           "--sink", pf])
    try:
        while not os.path.exists(pf):
            time.sleep(0.05)
        sink = "http://127.0.0.1:" + open(pf).read()
        down = f"http://127.0.0.1:{free_port()}"
        res = {}
        # The order rotates each round, so a trend in the host's load
        # does not favour one mode.
        orders = [("off", "on", "down"), ("on", "down", "off"),
                  ("down", "off", "on")]
        for i in range(rounds if n > 0 else 0):
            for mode in orders[i % 3]:
                res.setdefault(("pipeline", mode), []).append(
                    pipeline(bench, mode, n, sink, down))
        for i in range(rounds if rn > 0 else 0):
            for mode in orders[i % 3]:
                res.setdefault(("relayd", mode), []).append(
                    relayd_one(mode, rn, sink, down))
        for what in ("pipeline", "relayd"):
            if (what, "off") not in res:
                continue
            off = statistics.median(r[0] for r in res[(what, "off")])
            coff = statistics.median(r[2] for r in res[(what, "off")])
            for mode in ("off", "on", "down"):
                rates = [r[0] for r in res[(what, mode)]]
                rss = [r[1] for r in res[(what, mode)] if r[1]]
                cpus = [r[2] for r in res[(what, mode)]]
                med = statistics.median(rates)
                cmed = statistics.median(cpus)
                print(f"{what:8} {mode:5} median {med:9.1f}/s  "
                      f"ratio to off {med / off:.3f}  CPU/event median "
                      f"{cmed:.1f} us (x{cmed / coff:.3f} of off)  runs "
                      f"{', '.join('%.0f' % r for r in rates)}  rss KiB "
                      f"{', '.join(str(s) for s in rss) or '-'}",
                      flush=True)
    finally:
        sp.kill()
        sp.wait()
        try:
            os.unlink(pf)
        except OSError:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
