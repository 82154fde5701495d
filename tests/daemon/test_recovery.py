#!/usr/bin/env python3
"""relayd end to end: crashes, replicas, Redis outages, backpressure and
recovery (doc/behaviour.md B-70 ... B-81, B-120 ... B-122).

usage: test_recovery.py RELAYD
"""
import os
import shutil
import subprocess
import sys
import time

from harness import (Env, RedisServer, Skip, case, check, eq, free_port,
                     run_cases, wait_for)


def drained(env):
    return env.pel_count() == 0


def executions(env):
    """{(key, app, handler): [(start_ns, end_ns or None)]}"""
    runs = {}
    open_runs = {}
    for kind, key, app, handler, ns in env.records():
        k = (key, app, handler)
        if kind == "start":
            open_runs.setdefault(k, []).append(ns)
        elif kind in ("end", "fail"):
            st = open_runs.get(k, [])
            start = st.pop(0) if st else None
            runs.setdefault(k, []).append((start, ns))
    for k, starts in open_runs.items():
        for s in starts:
            runs.setdefault(k, []).append((s, None))
    return runs


def overlapping(runs):
    """Keys with two executions whose [start, end] intervals overlap."""
    bad = []
    for k, spans in runs.items():
        spans = sorted(spans, key=lambda s: s[0] or 0)
        for a, b in zip(spans, spans[1:]):
            if a[1] is None or b[0] is None or b[0] < a[1]:
                bad.append(k)
    return bad


@case
def kill9_during_handler_reclaimed_after_restart():
    with Env() as env:
        # timeout 2s: the dead run's claim protects it for 2s (a rule's
        # own timeout is never scaled), then attempt 2 runs.
        env.app("a", [("h", {"kind": ["x"]}, {"timeout": "2s"})],
                env={"SLOW": "1"})
        d = env.relayd()
        mid = env.xadd({"kind": "x", "k": "k9", "slow": True})
        other = env.xadd({"kind": "x", "k": "k9b"})
        env.wait(lambda: env.count("start", "k9") == 1, "handler running")
        d.kill9()
        check(env.inv(mid)["a/h"].startswith("running:"), "claim held")
        eq(env.pel_count() >= 1, True, "still pending")
        # Restarted as the same consumer on the same run dir (a service
        # manager restart): the dead process's lock is gone with it.
        d2 = env.relayd("r1")
        env.wait(lambda: drained(env) and env.inv(mid).get("a/h") == "ok",
                 "reclaimed and completed", timeout=40)
        check(env.count("end", "k9") >= 1, "completed")
        # The dead run's claim (deadline = start + 2 s timeout) protected
        # it: a second execution only after the deadline.
        starts = sorted(r[4] for r in env.records()
                        if r[0] == "start" and r[1] == "k9")
        eq(len(starts), 2, "run again exactly once after the claim expired")
        check((starts[1] - starts[0]) / 1e9 >= 1.9,
              f"second run {(starts[1] - starts[0]) / 1e9:.2f}s after the "
              "first; the claim held for 2s")
        check(env.count("end", "k9b") >= 1, "the other message too")
        eq(env.dlq(), [], "no DLQ entry")
        eq(env.inv(other).get("__terminal"), "1", "other retained")
        d2.stop()


@case
def two_replicas_thousand_events():
    n = 1000
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]})], concurrency=8)
        d1 = env.relayd("r1", LOG_LEVEL="INFO")
        d2 = env.relayd("r2", LOG_LEVEL="INFO")
        env.xadd_many([{"kind": "x", "k": f"e{i}"} for i in range(n)])
        env.wait(lambda: env.count("end") >= n and drained(env),
                 f"{n} events handled by two replicas", timeout=120)
        runs = executions(env)
        keys = {k[0] for k, spans in runs.items()
                if any(e is not None for _, e in spans)}
        eq(len(keys), n, "every event handled")
        eq(overlapping(runs), [], "no invocation ran twice concurrently")
        st1 = d1.control({"cmd": "stats"})["stats"]["counters"]
        st2 = d2.control({"cmd": "stats"})["stats"]["counters"]
        eq(st1["events_received"] + st2["events_received"], n,
           "each message classified once across replicas")
        check(st1["handler_success"] > 0 and st2["handler_success"] > 0,
              f"both replicas worked ({st1['handler_success']}, "
              f"{st2['handler_success']})")
        d1.stop()
        d2.stop()
        eq(env.pel_count(), 0, "PEL empty at the end")
        eq(env.dlq(), [], "no DLQ entries")


@case
def redis_restart_mid_run_nothing_lost():
    with Env() as env:
        # Restart with persistence: the AOF keeps the stream and PEL.
        env.redis.stop()
        env.r.close()
        env.redis = PersistentRedis(env.dir)
        env.redis.start()
        env.app("a", [("h", {"kind": ["x"]})], env={"SLEEP": "0.05"})
        d = env.relayd()
        env.xadd_many([{"kind": "x", "k": f"a{i}"} for i in range(30)])
        env.wait(lambda: env.count("end") >= 3, "some handled")
        env.r.close()
        env.redis.stop()
        env.wait(lambda: d.control({"cmd": "health"})["redis_up"] is False,
                 "health reports Redis down")
        h = d.control({"cmd": "health"})
        eq(h["ready"], False, "not ready while Redis is down")
        time.sleep(0.5)
        env.redis.start()
        env.xadd_many([{"kind": "x", "k": f"b{i}"} for i in range(30)])
        env.wait(lambda: d.control({"cmd": "health"})["ready"],
                 "ready again", timeout=60)
        env.wait(lambda: drained(env) and
                 len({r[1] for r in env.records() if r[0] == "end"}) == 60,
                 "all 60 handled after recovery", timeout=60)
        log = d.log()
        eq(log.count("RELAY-ENG02"), 1, "outage logged once")
        eq(log.count("RELAY-ENG03"), 1, "recovery logged once")
        d.stop()


class PersistentRedis(RedisServer):
    """A redis-server with an fsync-always AOF that survives restarts."""

    def start(self):
        if not shutil.which("redis-server"):
            raise Skip("redis-server not installed")
        from harness import Redis, REDIS_SERVER
        self.proc = subprocess.Popen(
            [REDIS_SERVER, "--port", "0", "--unixsocket", self.sock,
             "--unixsocketperm", "700", "--save", "", "--appendonly",
             "yes", "--appendfsync", "always", "--dir", self.dir,
             "--loglevel", "warning"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        r = Redis(self.sock)
        wait_for(lambda: r("PING") == "PONG", "redis-server PING",
                 timeout=20)
        wait_for(lambda: pairs_info(r).get("loading") == "0",
                 "AOF loaded", timeout=20)
        r.close()


def pairs_info(r):
    out = {}
    for line in r("INFO", "persistence").splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            out[k] = v.strip()
    return out


@case
def slot_saturation_leaves_pending_then_drains():
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]})], concurrency=1,
                env={"SLEEP": "0.3"})
        d = env.relayd(MAX_CONCURRENCY="1")
        env.xadd_many([{"kind": "x", "k": f"s{i}"} for i in range(6)])
        env.wait(lambda: env.count("end") >= 6 and drained(env),
                 "all drained", timeout=60)
        runs = executions(env)
        eq(len({k[0] for k in runs}), 6, "every message handled")
        spans = sorted(s for v in runs.values() for s in v)
        for a, b in zip(spans, spans[1:]):
            check(b[0] >= a[1], "never two handlers at once "
                  "(MAX_CONCURRENCY=1)")
        st = d.control({"cmd": "stats"})["stats"]["counters"]
        check(st["concurrency_waits"] > 0, "slot waits counted")
        eq(st["handler_failure"], 0, "no attempt charged for waiting")
        eq(env.count("fail"), 0, "no failures")
        eq(env.dlq(), [], "no DLQ")
        d.stop()


@case
def buffer_limit_bounds_the_pel():
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]})], concurrency=8,
                env={"SLEEP": "0.2"})
        d = env.relayd(MAX_BUFFERED_EVENTS="3", MAX_CONCURRENCY="8")
        env.xadd_many([{"kind": "x", "k": f"b{i}"} for i in range(15)])
        peak = 0
        stop = time.monotonic() + 60
        while time.monotonic() < stop:
            per = {}
            for e in env.pel():
                per[e["consumer"]] = per.get(e["consumer"], 0) + 1
            peak = max([peak] + list(per.values()))
            if env.count("end") >= 15 and drained(env):
                break
            time.sleep(0.01)
        check(peak <= 3, f"XPENDING per consumer peaked at {peak} > 3")
        check(peak >= 2, f"reads were batched (peak {peak})")
        eq(len({r[1] for r in env.records() if r[0] == "end"}), 15,
           "all handled")
        d.stop()


@case
def missing_payload_counted_acked_no_dlq():
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]})])
        env.r("XGROUP", "CREATE", env.stream, env.group, "0", "MKSTREAM")
        mid = env.xadd({"kind": "x", "k": "gone"})
        env.r("XREADGROUP", "GROUP", env.group, "ghost", "COUNT", "1",
              "STREAMS", env.stream, ">")
        eq(env.r("XDEL", env.stream, mid), 1, "body deleted")
        eq(env.pel_count(), 1, "dangling PEL reference")
        d = env.relayd()
        env.wait(lambda: drained(env), "dangling reference cleared")
        st = env.wait(lambda: d.control({"cmd": "stats"})["stats"]
                      ["counters"], "stats")
        eq(st["missing_payload"], 1, "missing_payload_total")
        eq(env.dlq(), [], "no DLQ entry")
        eq(env.records(), [], "no handler ran")
        d.stop()


@case
def bwrap_sandbox_end_to_end():
    if not shutil.which("bwrap"):
        raise Skip("bwrap not installed")
    probe = subprocess.run(["bwrap", "--ro-bind", "/", "/", "--unshare-all",
                            "true"], capture_output=True)
    if probe.returncode != 0:
        raise Skip("bwrap cannot create namespaces here")
    with Env() as env:
        # As root, the sandbox runs as nobody (RELAY_SANDBOX_USER), which
        # must be able to reach the app directory: open the temp dir up.
        os.chmod(env.dir, 0o755)
        env.app("sb", [], raw="runtime: exec\n"
                "command: [/bin/sh, -c, 'cat >/dev/null; echo in-sandbox "
                "$(id -u) $RELAY_HANDLER']\n"
                "events:\n  - handler: h\n    pattern: {kind: [x]}\n")
        d = env.relayd(start=False, RELAY_SANDBOX="bwrap")
        d.start_sandboxed()
        eq(d.control({"cmd": "health"})["sandbox"], "bwrap", "backend")
        mid = env.xadd({"kind": "x", "k": "bw"})
        env.wait(lambda: drained(env) and env.inv(mid).get("sb/h") == "ok",
                 "ran in bwrap and acknowledged")
        check(f"[sb/h@{mid}] stdout: in-sandbox" in d.log(), "output")
        d.stop()


@case
def bwrap_unreadable_app_dir_dead_letters_with_the_fix():
    # The DLQ reason and the log name the directory, the uid and the ways
    # out, whole (they used to be cut at 160 bytes, or said only
    # "backend error").
    if os.geteuid() != 0:
        raise Skip("needs root: only a root relayd switches to the sandbox "
                   "user (uid 65534)")
    if not shutil.which("bwrap"):
        raise Skip("bwrap not installed")
    with Env() as env:
        # env.dir is mkdtemp's 0700: uid 65534 cannot reach the apps.
        env.app("sb", [], raw="runtime: exec\ncommand: [/bin/true]\n"
                "events:\n  - handler: h\n    pattern: {kind: [x]}\n"
                "    retries: 0\n")
        d = env.relayd(start=False, RELAY_SANDBOX="bwrap",
                       RELAY_SANDBOX_USER="65534")
        d.start_sandboxed()
        env.xadd({"kind": "x"})
        env.wait(lambda: len(env.dlq()) == 1, "dead-lettered")
        why = (f"start: app directory {env.apps_dir}/sb is not readable by "
               "the sandbox user (uid 65534): Permission denied; make it "
               "and its parents readable and searchable by that uid, set "
               "RELAY_SANDBOX_USER to a user that can read it, or set "
               "RELAY_SANDBOX=none (no isolation)")
        eq(env.dlq()[0]["reason"], 'invocation exhausted: app "sb" handler '
           f'"h" exhausted after 1 handler attempts: {why}', "DLQ reason")
        check(f'reason="{why}"' in d.log(), d.log_tail(5))
        d.stop()


@case
def missing_unix_socket_is_named_once_per_streak():
    # Debian's /run/redis/redis-server.sock with unixsocket off: relayd
    # must say which socket and why, once, and that it keeps trying.
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]})])
        env.stop_redis()
        d = env.relayd(start=False)
        d.start(wait_ready=False)
        line = ("WARN RELAY-REDIS01 redis connect to unix socket "
                f"{env.redis.sock} failed: No such file or directory; "
                "retrying (backoff up to 30000 ms) until it answers")
        env.wait(lambda: line in d.log() and "RELAYD01" in d.log(),
                 "the connect failure names the socket")

        def errors():
            return d.control({"cmd": "stats"})["stats"]["counters"][
                "redis_errors"]
        env.wait(lambda: errors() >= 4, "several failed tries")
        eq(d.log().count("RELAY-REDIS01"), 1, "one line per streak")
        env.start_redis()
        d.wait_ready()
        check("RELAY-REDIS03 redis connection restored" in d.log(),
              d.log_tail(5))
        # a new streak (Redis gone again) is reported again, once
        env.stop_redis()
        env.wait(lambda: d.log().count(line) == 2, "the second streak")
        n = errors()
        env.wait(lambda: errors() >= n + 3, "more failed tries")
        eq(d.log().count("RELAY-REDIS01"), 2, "one line per streak")
        d.stop()


@case
def refused_tcp_connect_names_host_port_not_password():
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]})])
        port = free_port()
        d = env.relayd(start=False,
                       REDIS_URI=f"redis://:s3cretpw@127.0.0.1:{port}/0")
        d.start(wait_ready=False)
        line = (f"WARN RELAY-REDIS01 redis connect to 127.0.0.1:{port} "
                "failed: Connection refused; retrying (backoff up to 30000 "
                "ms) until it answers")
        env.wait(lambda: line in d.log() and "RELAYD01" in d.log(),
                 "the connect failure names host:port")
        env.wait(lambda: d.control({"cmd": "stats"})["stats"]["counters"][
            "redis_errors"] >= 4, "several failed tries")
        eq(d.log().count("RELAY-REDIS01"), 1, "one line per streak")
        check("s3cretpw" not in d.log(), "no password in the log")
        d.stop()


NODE_HANDLER = r"""
const fs = require('fs');
exports.h = function (ev) {
  const line = (kind) => fs.appendFileSync(process.env.OUT,
    `${kind} ${ev.k} nd mod.h ${BigInt(Date.now()) * 1000000n}\n`);
  line('start');
  line('end');
};
"""


@case
def unavailable_app_keeps_message_pending_without_attempts():
    if not shutil.which("node"):
        raise Skip("node not installed")
    with Env() as env:
        env.app("ex", [("h", {"kind": ["x"]})])
        d = os.path.join(env.apps_dir, "nd")
        os.makedirs(d)
        with open(os.path.join(d, "mod.js"), "w") as f:
            f.write(NODE_HANDLER)
        with open(os.path.join(d, "template.yaml"), "w") as f:
            f.write("runtime: node\n"
                    f"env:\n  OUT: {env.out}\n"
                    "events:\n  - handler: mod.h\n"
                    "    pattern: {kind: [x]}\n")
        # No node on relayd's PATH: the node app is unavailable.
        nopath = os.path.join(env.dir, "empty-bin")
        os.makedirs(nopath)
        r1 = env.relayd("r1", PATH=nopath)
        mid = env.xadd({"kind": "x", "k": "u1"})
        env.wait(lambda: env.count("end", "u1", app="ex") == 1,
                 "the available app ran")
        d0 = env.pel()[0]["deliveries"]
        env.wait(lambda: env.pel()[0]["deliveries"] >= d0 + 3,
                 "three more redeliveries")
        eq(env.pel_count(), 1, "kept pending")
        check("nd/mod.h" not in env.inv(mid), "no attempt counted")
        eq(env.dlq(), [], "never dead-lettered for unavailability")
        eq(env.count("start", "u1", app="ex"), 1, "ex not re-run")
        r1.stop()
        # With node available the pending message completes.
        r2 = env.relayd("r2")
        env.wait(lambda: drained(env) and
                 env.count("end", "u1", app="nd") == 1, "completed")
        eq(env.inv(mid).get("nd/mod.h"), "ok", "nd ok")
        eq(env.count("start", "u1", app="ex"), 1, "ex still once")
        r2.stop()


if __name__ == "__main__":
    sys.exit(run_cases())
