#!/usr/bin/env python3
"""relayd and relayctl on a real Redis Cluster (issue #16, suite 'cluster').

usage: test_cluster.py RELAYD RELAYCTL

Starts a local cluster on loopback (cluster.py): 6 redis-servers
(cluster-enabled, ports chosen at run time, temp dirs), joined by
`redis-cli --cluster create ... --cluster-replicas 1` into 3 masters with
a replica each. Each node also listens on a unix socket, which the test's
own client uses (following MOVED like any cluster client). relayd and
relayctl get a seed list whose first seed is down and whose second does
NOT own the stream's slot, so they must move on to the next seed and then
meet a MOVED. Skips (with the reason) where the cluster cannot start.
"""
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                os.pardir, "daemon"))
from harness import case, check, eq, run_cases  # noqa: E402
from cluster import ClusterEnv, key_slot  # noqa: E402

RELAYCTL = os.environ.get("RELAYCTL") or (sys.argv[2] if len(sys.argv) > 2
                                          else "relayctl")
CLAIM_S = 3  # the failover case's rule timeout = its claim lifetime
IN_FLIGHT = 16  # relayd's default MAX_BUFFERED_EVENTS: messages in flight at once


def ctl(env, *args, extra=None):
    e = {k: v for k, v in os.environ.items()
         if k.startswith(("ASAN_", "UBSAN_", "LSAN_", "PATH"))}
    e.update({"REDIS_URI": env.uri, "REDIS_STREAM": env.stream,
              "REDIS_GROUP": env.group, "RELAY_APPS_DIR": env.apps_dir})
    e.update(extra or {})
    p = subprocess.run([RELAYCTL, *args], env=e, capture_output=True,
                       text=True, timeout=60)
    check("Sanitizer" not in p.stderr and "runtime error" not in p.stderr,
          f"relayctl {args}: sanitizer report:\n{p.stderr}")
    return p.returncode, p.stdout, p.stderr


def drained(env):
    return env.pel_count() == 0


def ends(env, key):
    return env.count("end", key)


@case
def untagged_stream_refused():
    """A stream name without a hash tag on a cluster: relayd exits 1 at
    start-up with one error line naming the fix; also when it is not the
    first stream of the list (every stream is checked)."""
    with ClusterEnv() as env:
        env.app("a", [("h", {"kind": ["x"]})])
        for i, streams in enumerate(("events", "{ok},events")):
            d = env.relayd(name=f"r{i}", start=False, REDIS_STREAM=streams)
            d.start(wait_ready=False)
            rc = d.wait(30)
            eq(rc, 1, f"{streams}: exit status\n" + d.log_tail())
            log = d.log()
            check("no hash tag" in log and 'REDIS_STREAM="{events}"' in log,
                  f"{streams}: error names the fix:\n" + d.log_tail())
            d.check_sanitizers()


@case
def dlq_redrive_on_the_owner():
    """relayctl dlq replay --redrive on the cluster: its script (DLQ,
    stream and claim key, one slot) runs on the slot's owner, reached
    through MOVED; the events are back in the stream, the DLQ empty."""
    with ClusterEnv() as env:
        dlq = f"relay:{env.stream}:dlq"
        ids = [env.r("XADD", dlq, "*", "original_stream", env.stream,
                     "original_id", "1-1", "group", "relay", "consumer",
                     "c", "event", json.dumps({"kind": "x", "i": i}),
                     "reason", "r", "app", "a", "handler", "h",
                     "deliveries", "1", "handler_attempts", "1",
                     "timestamp", "2026-01-01T00:00:00.000Z")
               for i in range(3)]
        rc, out, err = ctl(env, "dlq", "replay", "--redrive", "--all",
                           "--yes")
        eq(rc, 0, f"redrive: {out} {err}")
        got = [dict(zip(f[::2], f[1::2]))
               for _, f in env.r("XRANGE", env.stream, "-", "+")]
        eq([g["relay_redrive_of"] for g in got], ids, "redriven in order")
        eq([json.loads(g["event"])["i"] for g in got], [0, 1, 2], "events")
        eq(env.r("XLEN", dlq), 0, "DLQ empty")


@case
def replay_not_held_up_by_an_idle_stream():
    """dlq replay on the cluster goes through relayd's control connection
    of the stream (the first seed dead, the second not the slot's
    owner), not behind the idle consumer's XREADGROUP BLOCK 1000: before,
    each replay waited up to a second."""
    with ClusterEnv() as env:
        env.app("a", [("h", {"kind": ["never"]})])
        dlq = f"relay:{env.stream}:dlq"
        n = 10
        for i in range(n):
            env.r("XADD", dlq, "*", "original_stream", env.stream,
                  "original_id", "1-1", "group", "relay", "consumer", "c",
                  "event", json.dumps({"kind": "x", "k": f"r{i}"},
                                      separators=(",", ":")),
                  "reason", "r", "app", "a", "handler", "h",
                  "deliveries", "1", "handler_attempts", "1",
                  "timestamp", "2026-01-01T00:00:00.000Z")
        # Real time: the BLOCK of an idle read is 1 s, not scaled down.
        d = env.relayd(RELAY_TEST_TIME_SCALE=None)
        time.sleep(1.5)  # the consumer is blocked on the idle stream
        t0 = time.monotonic()
        rc, out, err = ctl(env, "dlq", "replay", "--all", "--rate", "1000",
                           "--yes", extra={"RELAY_RUN_DIR": d.run_dir})
        took = time.monotonic() - t0
        eq(rc, 0, f"dlq replay --all: {out} {err}")
        eq(sum(ends(env, f"r{i}") for i in range(n)), n, "each ran once")
        # Held up: about n s. The control connection's first connect
        # meets the dead seed and waits its reconnect (1 s, jittered);
        # those replays go on the stream's connection meanwhile.
        check(took < n / 2, f"{n} replays took {took:.2f} s")
        env.wait(lambda: env.r("XLEN", dlq) == 0, "DLQ empty")
        d.stop()


@case
def delivery_dlq_schedule_replay():
    """On the cluster, through a node that does not own the stream's
    slot: events run and are acknowledged, an exhausted handler is
    dead-lettered, a schedule occurrence is published once (its marker in
    the stream's slot) and runs once, and relayctl replays the DLQ entry."""
    with ClusterEnv() as env:
        sched = os.path.join(env.apps_dir, "s")
        env.app("a", [("ok", {"kind": ["x"]}),
                      ("bad", {"kind": ["y"]}, {"retries": 1})],
                env={"FAIL": "bad"})
        os.makedirs(sched)
        with open(os.path.join(sched, "template.yaml"), "w") as f:
            f.write("runtime: exec\n"
                    'command: ["/bin/sh", "-c", "cat >/dev/null; '
                    'echo tick >> \\"$OUT2\\""]\n'
                    f"env:\n  OUT2: {json.dumps(env.out + '.sched')}\n"
                    "schedules:\n  - name: tick\n    handler: tick\n"
                    '    cron: "* * * * *"\n')
        # The schedule clock: 08:00:30, one minute per real second.
        v0 = 1772352030
        d = env.relayd(RELAY_TEST_SCHEDULE_CLOCK=f"{v0}:{int(time.time())}"
                                                 ":60")
        ids = [env.xadd({"kind": "x", "k": f"e{i}"}) for i in range(20)]
        bad = env.xadd({"kind": "y", "k": "b1"})
        env.wait(lambda: all(ends(env, f"e{i}") == 1 for i in range(20)),
                 "20 events handled")
        env.wait(lambda: len(env.dlq()) == 1 and drained(env),
                 "the failing event dead-lettered, PEL empty")
        dl = env.dlq()[0]
        eq((dl["original_id"], dl["app"], dl["handler"]),
           (bad, "a", "bad"), "DLQ entry")
        eq(env.count("start", "b1"), 2, "2 attempts (retries 1)")
        for i in ids[:3]:
            eq(env.inv(i).get("a/ok"), "ok", "state hash in the slot")
        env.wait(lambda: os.path.exists(env.out + ".sched") and
                 len(open(env.out + ".sched").read().split()) >= 3,
                 "3 schedule occurrences ran")
        # relayctl on the cluster: list (its own connection) and replay
        # (through relayd), the handler fixed first.
        rc, out, err = ctl(env, "dlq", "ls", "--json")
        eq(rc, 0, f"dlq ls: {err}")
        eq([e["original_id"] for e in json.loads(out)], [bad], "dlq ls")
        env.app("a", [("ok", {"kind": ["x"]}),
                      ("bad", {"kind": ["y"]}, {"retries": 1})],
                env={"FAIL": ""})
        d.signal(signal.SIGHUP)
        env.wait(lambda: "RELAYD-APP06" in d.log(), "app reloaded")
        rc, out, err = ctl(env, "dlq", "replay", dl["_id"],
                           extra={"RELAY_RUN_DIR": d.run_dir})
        eq(rc, 0, f"dlq replay: {out} {err}")
        eq(env.count("end", "b1"), 1, "replayed handler ran")
        d.stop()
        entries = env.r("XRANGE", env.stream, "-", "+")
        occ = [json.loads(dict(zip(f[::2], f[1::2]))["event"])
               for _, f in entries if "relay.schedule" in f[1]]
        oids = [o["occurrence_id"] for o in occ]
        eq(len(oids), len(set(oids)), "one entry per occurrence")
        # An occurrence published just before the stop may be unread:
        # every one relayd read ran exactly once, none is left pending.
        g = env.r("XINFO", "GROUPS", env.stream)[0]
        last = dict(zip(g[::2], g[1::2]))["last-delivered-id"]

        def sid(i):
            return tuple(int(x) for x in i.split("-"))
        read = [e for e, f in entries if "relay.schedule" in f[1] and
                sid(e) <= sid(last)]
        eq(env.pel_count(), 0, "nothing left pending")
        eq(len(open(env.out + ".sched").read().split()), len(read),
           "each occurrence read ran once")
        check(len(read) >= 3, f"occurrences read: {len(read)}")
        for o in oids:
            key = f"relay:{env.stream}:schedule:{o}"
            eq(env.r("EXISTS", key), 1, f"marker {key}")
            eq(key_slot(key), key_slot(env.stream), "marker in the slot")
            eq(env.r("EXISTS", f"relay:schedule:{o}"), 0,
               "no pre-cluster marker on a cluster")
        eq(drained(env), True, "all acknowledged")
        # relayctl state leaks scans the node owning the stream's slot.
        leak = env.inv_key("1-1")
        env.r("HSET", leak, "a/ok", "ok")
        rc, out, err = ctl(env, "state", "leaks", "--json")
        eq(rc, 0, f"state leaks: {err}")
        eq(json.loads(out)["found"], 1, f"one leaked hash found: {out}")
        eq(env.dlq(), [], "DLQ entry removed")


@case
def leaks_each_partition_on_its_owner():
    """relayctl state leaks with a list of streams whose slots are on
    different masters scans each stream's state hashes on the master
    that owns that stream's slot."""
    with ClusterEnv() as env:
        first = "{p0}"
        owner = env.cluster.owner(key_slot(first))
        other = next(f"{{p{i}}}" for i in range(1, 200)
                     if env.cluster.owner(key_slot(f"{{p{i}}}")) != owner)
        for s in (first, other):
            env.r("XGROUP", "CREATE", s, env.group, "$", "MKSTREAM")
        leak = f"relay:invocation:{other}:{env.group}:1-1"
        env.r("HSET", leak, "a/ok", "ok")
        rc, out, err = ctl(env, "state", "leaks", "--json",
                           extra={"REDIS_STREAM": f"{first},{other}"})
        eq(rc, 0, f"state leaks: {err}")
        eq(json.loads(out)["found"], 1,
           f"the leak of {other}, on another master, found: {out}")


@case
def partitions_on_two_masters_stay_put():
    """relayd with two partitioned streams whose slots are on different
    masters: each stream's consumer connection settles on its owner and
    stays there, although retention observes both streams every tick
    (100 ms here): that work goes through each stream's own connection,
    so no connection is moved from master to master over and over."""
    with ClusterEnv() as env:
        first = "{p0}"
        owner = env.cluster.owner(key_slot(first))
        other = next(f"{{p{i}}}" for i in range(1, 200)
                     if env.cluster.owner(key_slot(f"{{p{i}}}")) != owner)
        env.app("a", [("h", {"kind": ["x"]})])
        d = env.relayd(REDIS_STREAM=f"{first},{other}")
        for i, s in enumerate((first, other)):
            env.xadd({"kind": "x", "k": f"m{i}"}, stream=s)
        env.wait(lambda: ends(env, "m0") == 1 and ends(env, "m1") == 1,
                 "both streams handled")
        time.sleep(2)    # about 20 retention ticks
        moves = d.log().count("slot moved")
        # At most one move per connection (the seed it starts on may
        # not own its stream's slot).
        check(moves <= 2, f"{moves} connection moves:\n{d.log_tail()}")
        d.stop()


@case
def failover_mid_load():
    """Kill the master owning the stream's slot while events flow: after
    the replica takes over, every XADDed entry is acknowledged and its
    handler has run, and relayd followed on its own. A handler runs a
    second time only if it was in flight at the kill and the dead master
    had not replicated its writes: at most the in-flight window, once."""
    with ClusterEnv() as env:
        env.app("a", [("h", {"kind": ["x"]}, {"timeout": f"{CLAIM_S}s"})])
        d = env.relayd()
        owner = env.cluster.owner(key_slot(env.stream))
        n = 0
        for n in range(150):
            env.xadd({"kind": "x", "k": f"m{n}"})
        env.wait(lambda: ends(env, "m20") == 1, "load under way")
        # The producer's writes are on the replica before the kill (an
        # acknowledged write a master dies with is lost in any case).
        env.r("WAIT", "1", "2000")
        kill_ns = time.time_ns()
        env.cluster.kill(owner)
        t0 = time.monotonic()
        for n in range(150, 300):
            env.xadd({"kind": "x", "k": f"m{n}"})
        env.cluster.wait_ok(timeout=60)
        eq(env.cluster.owner(key_slot(env.stream)) != owner, True,
           "a replica took the slot")
        env.wait(lambda: all(ends(env, f"m{i}") >= 1 for i in range(300))
                 and drained(env), "every event handled and acknowledged",
                 timeout=90)
        took = time.monotonic() - t0
        # A completion whose reply the dead master took with it is resent
        # (same claim) until the replica answers, so that alone never
        # runs a handler twice. What the dead master had not replicated
        # (replication is asynchronous: relayd's claim, its completion,
        # its XREADGROUP) is lost with it, and such a handler runs again
        # (doc/operations.md, "Redis Cluster"): only one that was in
        # flight when the master died, at most the in-flight window
        # (IN_FLIGHT), and once more only.
        starts = {}
        for kind, key, _, _, ns in env.records():
            if kind == "start":
                starts.setdefault(key, []).append(ns)
        again = sorted(k for k, t in starts.items() if len(t) > 1)
        check(len(again) <= IN_FLIGHT,
              f"at most the in-flight window ran twice: "
              f"{again}")
        for k in again:
            t = sorted(starts[k])
            eq(len(t), 2, f"{k} ran twice at most")
            # The second run comes after the kill. The first was claimed
            # before it, but its handler may start (and write its record)
            # a moment after it: only the second is bound by kill_ns.
            check(kill_ns < t[1], f"{k}: the second run after the "
                  f"failover: starts {t}, kill {kill_ns}")
        if again:
            print(f"# ran again after the failover (unreplicated writes): "
                  f"{again}", file=sys.stderr)
        eq(env.dlq(), [], "nothing dead-lettered")
        xlen = env.r("XLEN", env.stream)
        eq(xlen, 300, "every XADD kept")
        check("slot moved" in d.log() or "RELAY-REDIS07" in d.log(),
              "relayd followed MOVED")
        sys.stderr.write(f"# failover: all 300 handled {took:.1f}s after "
                         "the kill\n")
        d.stop()


@case
def resharding_mid_load():
    """Migrate the stream's slot to another master while events flow
    (ASK while migrating, MOVED after): every XADDed entry is
    acknowledged with its handler run exactly once, nothing dead-lettered,
    and relayd ends on the new owner."""
    with ClusterEnv() as env:
        env.app("a", [("h", {"kind": ["x"]})])
        d = env.relayd()
        slot = key_slot(env.stream)
        src = env.cluster.owner(slot)
        dst = [p for p in env.cluster.masters() if p != src][0]
        for i in range(100):
            env.xadd({"kind": "x", "k": f"m{i}"})
        env.wait(lambda: ends(env, "m50") == 1, "load under way")
        nxt = [100]

        def more():
            for i in range(nxt[0], min(nxt[0] + 20, 300)):
                env.xadd({"kind": "x", "k": f"m{i}"})
            nxt[0] = min(nxt[0] + 20, 300)
            time.sleep(0.1)
        moved = env.cluster.migrate_slot(slot, src, dst, between=more,
                                         batch=10)
        # More than one batch of 10: the stream, its DLQ and the state
        # hashes alive then (their count depends on how fast the host
        # ran the first 50 and on the test time scale's retention).
        check(moved > 10, f"keys migrated in batches ({moved})")
        while nxt[0] < 300:
            more()
        eq(env.cluster.owner(slot), dst, "the slot moved")
        env.wait(lambda: all(ends(env, f"m{i}") >= 1 for i in range(300))
                 and drained(env), "every event handled and acknowledged",
                 timeout=60)
        starts = {}
        for kind, key, *_ in env.records():
            if kind == "start":
                starts[key] = starts.get(key, 0) + 1
        eq(sorted(k for k, c in starts.items() if c != 1), [],
           "each handler started exactly once")
        eq(env.dlq(), [], "nothing dead-lettered")
        eq(env.r("XLEN", env.stream), 300, "every XADD kept")
        check(f"slot moved to 127.0.0.1:{dst}" in d.log(),
              "relayd followed to the new owner")
        sys.stderr.write(f"# resharding: {moved} keys migrated, ASK "
                         f"replies followed: {d.log().count('cluster ask')}"
                         "\n")
        d.stop()


if __name__ == "__main__":
    sys.exit(run_cases())
