#!/usr/bin/env python3
"""relayd end to end: stream and DLQ retention (REDIS_STREAM_RETENTION,
REDIS_DLQ_RETENTION; relayd(8), doc/operations.md). What every consumer
group is done with and is older than the retention goes; what any group
still has pending or has not read stays, whatever its age; the DLQ is
trimmed by age alone.

Redis trims the stream by whole macro nodes ("~"), so the stream cases
set stream-node-max-entries to 1: a node is an entry and the trim is
exact. The DLQ trim is exact with any node size.
Under the harness' RELAY_TEST_TIME_SCALE the trim tick (at least 1m) is
0.1s.

usage: test_retention.py RELAYD [RELAYCTL]
"""
import json
import os
import subprocess
import sys
import time

from harness import (Env, case, check, eq, free_port, metrics, run_cases,
                     wait_for)

RELAYCTL = sys.argv[2] if len(sys.argv) > 2 else "relayctl"


def small_nodes(env):
    eq(env.r("CONFIG", "SET", "stream-node-max-entries", "1"), "OK",
       "CONFIG SET")


def ids(env, stream=None):
    return [e[0] for e in env.r("XRANGE", stream or env.stream, "-", "+")]


def dlq_entry(reason):
    """The fields of a well-formed DLQ entry (doc/protocol.md)."""
    return ["original_stream", "events", "original_id", "1-0", "group",
            "relay", "consumer", "c", "event", "{}", "reason", reason,
            "app", "a", "handler", "h", "deliveries", "1",
            "handler_attempts", "1", "timestamp", "2026-01-01T00:00:00Z"]


def ret(d):
    """The stats file's retention object (written every 5s/600)."""
    path = os.path.join(d.state_dir, "stats.json")
    wait_for(lambda: os.path.exists(path), "stats file")
    return d.stats_file()["retention"]


@case
def acked_entries_go_running_and_unread_stay():
    with Env() as env:
        small_nodes(env)
        env.app("a", [("h", {"kind": ["x"]}, {"timeout": "60s"})],
                env={"SLOW": "10"})
        # A second reader of the same stream: it has read (and holds,
        # like a crashed consumer) the first entry, nothing else.
        first = env.xadd({"kind": "x", "k": "e0"})
        env.r("XGROUP", "CREATE", env.stream, "analytics", "0")
        env.r("XREADGROUP", "GROUP", "analytics", "dead", "COUNT", "1",
              "STREAMS", env.stream, ">")
        d = env.relayd(REDIS_STREAM_RETENTION="1s")
        slow = env.xadd({"kind": "x", "k": "e1", "slow": True})
        rest = [env.xadd({"kind": "x", "k": f"e{i}"}) for i in range(2, 6)]
        env.wait(lambda: env.count("end") == 5 and
                 env.count("start", "e1") == 1, "5 handled, e1 running")
        time.sleep(2.0)  # older than the retention, many ticks
        # analytics holds e0 (pending) and has not read the rest.
        eq(ids(env), [first, slow] + rest, "nothing trimmed")
        # analytics acknowledges e0 and reads + acknowledges the rest:
        # relay still runs e1, so e1 and everything after it stays.
        env.r("XACK", env.stream, "analytics", first)
        env.r("XREADGROUP", "GROUP", "analytics", "a1", "COUNT", "100",
              "STREAMS", env.stream, ">")
        env.r("XACK", env.stream, "analytics", slow, *rest)
        env.wait(lambda: ids(env) == [slow] + rest, "e0 trimmed")
        time.sleep(1.0)
        eq(ids(env), [slow] + rest, "running entry and later stay")
        check(d.stats_file()["counters"]["missing_payload"] == 0,
              "no missing payload")
        eq(ret(d)["stream_trimmed"], 1, "stream_trimmed")
        check(ret(d)["oldest_pending_entry_age_seconds"] > 1.0,
              f"oldest pending age: {ret(d)}")
        d.stop()


@case
def entries_in_backoff_stay_then_go_once_acked():
    with Env() as env:
        small_nodes(env)
        env.app("a", [("h", {"kind": ["x"]}, {"retries": 6})],
                env={"FAIL": "h"})
        env.app("b", [("ok", {"kind": ["y"]})])
        d = env.relayd(REDIS_STREAM_RETENTION="1s")
        bad = env.xadd({"kind": "x", "k": "bad"})
        good = [env.xadd({"kind": "y", "k": f"g{i}"}) for i in range(3)]
        env.wait(lambda: env.count("end", app="b") == 3, "good handled")
        # backoff 1m, 2m, 5m, 10m (/600): 'bad' stays pending ~4s.
        env.wait(lambda: ids(env) == [bad] + good and
                 env.count("fail", "bad") >= 2, "bad in backoff")
        time.sleep(1.5)
        check(bad in ids(env), "entry in backoff kept")
        eq(env.pel_count(), 1, "bad still pending")
        env.wait(lambda: len(env.dlq()) == 1, "bad dead-lettered",
                 timeout=60)
        env.wait(lambda: ids(env) == [good[-1]] or ids(env) == [],
                 "all trimmed once acknowledged")
        eq(env.pel_count(), 0, "nothing pending")
        d.stop()


@case
def dlq_trims_by_age_only():
    with Env() as env:
        small_nodes(env)
        env.app("a", [("h", {"kind": ["x"]})])
        dlq = f"relay:{env.stream}:dlq"
        old_ms = int(time.time() * 1000) - 10000
        old = env.r("XADD", dlq, f"{old_ms}-0", *dlq_entry("old"))
        # A group on the DLQ that read nothing does not protect it.
        env.r("XGROUP", "CREATE", dlq, "audit", "0")
        new = env.r("XADD", dlq, "*", *dlq_entry("new"))
        d = env.relayd(REDIS_DLQ_RETENTION="5s",
                       REDIS_STREAM_RETENTION="0")
        env.wait(lambda: ids(env, dlq) == [new], "old DLQ entry trimmed")
        check(old not in ids(env, dlq), "old entry gone")
        env.wait(lambda: ret(d)["dlq_trimmed"] == 1 and
                 ret(d)["dlq_length"] == 1, "stats: dlq_trimmed 1")
        eq(ret(d)["stream_retention_seconds"], 0, "stream retention off")
        eq(ret(d)["dlq_retention_seconds"], 5, "dlq retention")
        out = subprocess.run(
            [RELAYCTL, "dlq", "ls", "--redis", env.redis.uri, "--stream",
             env.stream, "--state-dir", d.state_dir],
            capture_output=True, text=True, timeout=30)
        eq(out.returncode, 0, "dlq ls: " + out.stderr)
        check(out.stdout.endswith("\n\nRetention: entries older than 5s "
                                  "are trimmed (REDIS_DLQ_RETENTION).\n"),
              "dlq ls says how long entries are kept:\n" + out.stdout)
        d.stop()


@case
def dlq_trim_is_exact_within_a_node():
    with Env() as env:
        # Redis' default nodes (100 entries): "~" alone would keep every
        # old entry that shares a node with a newer one.
        eq(env.r("CONFIG", "GET", "stream-node-max-entries")[1], "100",
           "default node size")
        env.app("a", [("h", {"kind": ["x"]})])
        dlq = f"relay:{env.stream}:dlq"
        old_ms = int(time.time() * 1000) - 20000
        # 250 old entries: two whole nodes and half of a third, which the
        # new entries share.
        for i in range(250):
            env.r("XADD", dlq, f"{old_ms}-{i}", *dlq_entry(f"old {i}"))
        new = [env.r("XADD", dlq, "*", *dlq_entry(f"new {i}"))
               for i in range(3)]
        d = env.relayd(REDIS_DLQ_RETENTION="10s",
                       REDIS_STREAM_RETENTION="0")
        env.wait(lambda: ret(d)["dlq_trimmed"] > 0, "a DLQ trim")
        time.sleep(0.5)  # several more ticks
        eq(ids(env, dlq), new, "every old entry gone, the new ones kept")
        env.wait(lambda: ret(d)["dlq_trimmed"] == 250 and
                 ret(d)["dlq_length"] == 3, "stats: dlq_trimmed 250")
        d.stop()


@case
def retention_off_trims_nothing_and_says_so():
    with Env() as env:
        small_nodes(env)
        env.app("a", [("h", {"kind": ["x"]})])
        d = env.relayd(REDIS_STREAM_RETENTION="0", REDIS_DLQ_RETENTION="0")
        added = [env.xadd({"kind": "x", "k": f"e{i}"}) for i in range(3)]
        env.wait(lambda: env.count("end") == 3 and env.pel_count() == 0,
                 "handled")
        time.sleep(1.5)
        eq(ids(env), added, "nothing trimmed")
        env.wait(lambda: ret(d)["stream_length"] == 3, "length gauge")
        check("REDIS_STREAM_RETENTION=0" in d.log() and
              "REDIS_DLQ_RETENTION=0" in d.log(),
              "start-up log says retention is off:\n" + d.log_tail())
        d.stop()


@case
def invalid_values_one_line_exit_1():
    with Env() as env:
        for var, val in [("REDIS_STREAM_RETENTION", "abc"),
                         ("REDIS_STREAM_RETENTION", "-1h"),
                         ("REDIS_STREAM_RETENTION", "500ms"),
                         ("REDIS_DLQ_RETENTION", "7"),
                         ("REDIS_DLQ_RETENTION", "1x")]:
            d = env.relayd(name=f"bad{len(env.daemons)}", start=False,
                           **{var: val})
            d.start(wait_ready=False)
            eq(d.wait(), 1, f"{var}={val!r} exit status")
            lines = d.log().strip().splitlines()
            eq(len(lines), 1, f"{var}={val!r}: one line: {lines}")
            check(var in lines[0] and "invalid value" in lines[0],
                  lines[0])
            d.expect_running = False


@case
def startup_logs_retention_in_effect():
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]})])
        d = env.relayd()
        log = d.log()
        check("RELAYD-RET01" in log and "older than 86400s" in log and
              "older than 604800s" in log and
              f"relay:{env.stream}:dlq" in log, "defaults logged:\n" + log)
        eq(log.count("RELAYD-RET01"), 1, "logged once")
        st = ret(d)
        eq((st["stream_retention_seconds"], st["dlq_retention_seconds"]),
           (86400, 604800), "defaults")
        d.stop()


@case
def two_replicas_trim_at_once_lose_nothing():
    with Env() as env:
        small_nodes(env)
        env.app("a", [("h", {"kind": ["x"]})])
        port = free_port()
        d1 = env.relayd("r1", REDIS_STREAM_RETENTION="1s",
                        METRICS_ADDR=f"127.0.0.1:{port}")
        d2 = env.relayd("r2", REDIS_STREAM_RETENTION="1s")
        n = 300
        env.xadd_many([{"kind": "x", "k": f"e{i}"} for i in range(n)])
        env.wait(lambda: env.count("end") >= n and env.pel_count() == 0,
                 "all handled", timeout=120)
        env.wait(lambda: env.r("XLEN", env.stream) == 0, "all trimmed",
                 timeout=60)
        keys = {r[1] for r in env.records() if r[0] == "end"}
        eq(len(keys), n, "every event handled")
        trimmed = ret(d1)["stream_trimmed"] + ret(d2)["stream_trimmed"]
        wait_for(lambda: ret(d1)["stream_trimmed"] +
                 ret(d2)["stream_trimmed"] == n, "stats files flushed")
        for d in (d1, d2):
            eq(d.stats_file()["counters"]["missing_payload"], 0,
               f"{d.name} missing payload")
        m = metrics(port)
        check("relay_stream_trimmed_total" in m and
              m["relay_stream_retention_seconds"] == 1.0 and
              m["relay_retention_failing"] == 0.0, f"metrics: {m}")
        d1.stop()
        d2.stop()
        del trimmed


@case
def redis_restart_between_ticks():
    with Env() as env:
        small_nodes(env)
        env.app("a", [("h", {"kind": ["x"]})])
        d = env.relayd(REDIS_STREAM_RETENTION="1s")
        env.xadd({"kind": "x", "k": "before"})
        env.wait(lambda: env.r("XLEN", env.stream) == 0, "trimmed")
        env.r.close()
        env.redis.stop()
        wait_for(lambda: ret(d)["failing"] and ret(d)["failures"] > 0,
                 "retention failing while Redis is down")
        env.redis.start()  # empty: no script cached, no group
        env.r("CONFIG", "SET", "stream-node-max-entries", "1")
        # relayd recreates its group; the next tick loads the script.
        env.wait(lambda: env.group_info() is not None, "group recreated")
        added = [env.xadd({"kind": "x", "k": f"a{i}"}) for i in range(3)]
        env.wait(lambda: env.count("end") == 4, "handled after restart")
        env.wait(lambda: env.r("XLEN", env.stream) == 0,
                 "trimmed after restart")
        wait_for(lambda: not ret(d)["failing"], "retention recovered")
        check("RELAYD-RET02" in d.log() and "RELAYD-RET03" in d.log(),
              "failure and recovery logged")
        eq(d.stats_file()["counters"]["missing_payload"], 0,
           "missing payload")
        del added
        d.stop()


@case
def relayctl_stats_shows_retention():
    with Env() as env:
        small_nodes(env)
        env.app("a", [("h", {"kind": ["x"]})])
        d = env.relayd(REDIS_STREAM_RETENTION="1s")
        env.xadd({"kind": "x", "k": "e"})
        env.wait(lambda: ret(d)["stream_trimmed"] == 1, "trimmed")
        out = subprocess.run([RELAYCTL, "stats", "--state-dir",
                              d.state_dir], capture_output=True,
                             text=True, timeout=30)
        eq(out.returncode, 0, "relayctl stats: " + out.stderr)
        for want in ("Stream retention:", "1s", "Stream length:",
                     "DLQ retention:", "7d", "Stream trimmed:",
                     "Oldest entry age:", "Retention:"):
            check(want in out.stdout, f"{want!r} in:\n{out.stdout}")
        d.stop()


def ctl(env, *args):
    p = subprocess.run([RELAYCTL, *args, "--redis", env.redis.uri,
                        "--stream", env.stream, "--group", env.group],
                       capture_output=True, text=True, timeout=30,
                       env={k: v for k, v in os.environ.items()
                            if k.startswith(("ASAN_", "UBSAN_", "PATH"))})
    return p.returncode, p.stdout, p.stderr


@case
def state_leaks_dry_run_then_retain():
    with Env() as env:
        s = env.stream
        env.r("XGROUP", "CREATE", s, env.group, "0", "MKSTREAM")
        e = [env.xadd({"kind": "x", "k": f"e{i}"}) for i in range(4)]
        env.r("XREADGROUP", "GROUP", env.group, "c", "COUNT", "10",
              "STREAMS", s, ">")
        env.r("XACK", s, env.group, e[0], e[1], e[3])
        for i in range(4):
            env.r("HSET", env.inv_key(e[i]), "a/h", "ok")
        env.r("HSET", env.inv_key(e[3]), "__terminal", "1")
        other = env.inv_key(e[0]).replace(f":{env.group}:", ":other:")
        env.r("HSET", other, "a/h", "ok")
        # e0: acked, trimmed, never retained (the crash window): leaked.
        # e1: acked, still in the stream: not (yet) reported.
        # e2: pending, its entry deleted: in the PEL, not leaked.
        # e3: acked and trimmed but retained: fine.
        env.r("XDEL", s, e[0], e[2], e[3])
        rc, out, err = ctl(env, "state", "leaks")
        eq((rc, err), (0, ""), "dry run")
        eq(out, f"{e[0]}  {env.inv_key(e[0])}\n1 leaked state hash (dry "
           "run: nothing changed; --retain gives them the retention "
           "TTL)\n", "dry run output")
        eq(env.r("TTL", env.inv_key(e[0])), -1, "dry run changed nothing")
        rc, out, err = ctl(env, "state", "leaks", "--retain", "--ttl", "2h",
                           "--json")
        eq(rc, 0, "retain: " + err)
        j = json.loads(out)
        eq((j["leaked"], j["retained"], j["dry_run"]),
           ([{"id": e[0], "key": env.inv_key(e[0])}], 1, False), "JSON")
        eq(env.r("HGET", env.inv_key(e[0]), "__terminal"), "1", "marker")
        ttl = env.r("TTL", env.inv_key(e[0]))
        check(7000 < ttl <= 7200, f"TTL {ttl}")
        for k in (env.inv_key(e[1]), env.inv_key(e[2]), other):
            eq(env.r("TTL", k), -1, f"{k} untouched")
        rc, out, err = ctl(env, "state", "leaks")
        eq((rc, out.splitlines()[-1].split()[0]), (0, "0"), "none left")
        rc, out, err = ctl(env, "state", "leaks", "--ttl", "1x")
        eq(rc, 2, "bad --ttl is a usage error")
        check("--ttl" in err, err)


if __name__ == "__main__":
    sys.exit(run_cases())
