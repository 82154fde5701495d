#!/usr/bin/env python3
"""relayd and relayctl on a real Redis Cluster (issue #16, suite 'cluster').

usage: test_cluster.py RELAYD RELAYCTL

Starts a local cluster on loopback: 6 redis-servers (cluster-enabled,
ports chosen at run time, temp dirs), joined by `redis-cli --cluster
create ... --cluster-replicas 1` into 3 masters with a replica each. Each
node also listens on a unix socket, which the test's own client uses
(following MOVED like any cluster client). relayd and relayctl get a
seed list whose first seed is down and whose second does NOT own the
stream's slot, so they must move on to the next seed and then meet a
MOVED. Skips (with the reason) where the cluster cannot start.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                os.pardir, "daemon"))
from harness import (REDIS_SERVER, Env, Redis, RedisError, Skip,  # noqa
                     case, check, eq, run_cases, wait_for)

RELAYCTL = os.environ.get("RELAYCTL") or (sys.argv[2] if len(sys.argv) > 2
                                          else "relayctl")
REDIS_CLI = os.environ.get("RELAY_REDIS_CLI", "redis-cli")
STREAM = "{ev}"
CLAIM_S = 3  # the failover case's rule timeout = its claim lifetime


def crc16(data):
    crc = 0
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021 if crc & 0x8000 else crc << 1) & 0xFFFF
    return crc


def key_slot(key):
    k = key.encode()
    i = k.find(b"{")
    if i >= 0:
        j = k.find(b"}", i + 1)
        if j > i + 1:
            k = k[i + 1:j]
    return crc16(k) % 16384


def port_pair_free(port):
    for p in (port, port + 10000):
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", p))
        except OSError:
            return False
        finally:
            s.close()
    return True


def free_ports(n):
    """n ports p whose cluster bus port p + 10000 is free as well."""
    out = []
    while len(out) < n:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        p = s.getsockname()[1]
        s.close()
        if p < 55535 and p not in out and port_pair_free(p):
            out.append(p)
    return out


class ClusterClient:
    """The harness's client over the nodes' unix sockets, following MOVED
    and ASK and going round the nodes while one is down."""

    def __init__(self, cluster):
        self.c = cluster
        self.conns = {}
        self.cur = None

    def _conn(self, port):
        if port not in self.conns:
            self.conns[port] = Redis(self.c.sock(port), timeout=5)
        return self.conns[port]

    def close(self):
        for r in self.conns.values():
            r.close()

    def __call__(self, *args, tries=300):
        port = self.cur or self.c.live_ports()[0]
        asking = False
        last = None
        for _ in range(tries):
            r = self._conn(port)
            try:
                if asking:
                    r("ASKING")
                    asking = False
                out = r(*args)
                self.cur = port
                return out
            except RedisError as e:
                msg = str(e)
                if msg.startswith(("MOVED ", "ASK ")):
                    port = int(msg.rsplit(":", 1)[1])
                    asking = msg.startswith("ASK ")
                    continue
                if msg.startswith(("CLUSTERDOWN", "TRYAGAIN")):
                    last = e
                    time.sleep(0.2)
                    continue
                raise
            except OSError as e:
                last = e
                live = self.c.live_ports()
                port = live[(live.index(port) + 1) % len(live)
                            if port in live else 0]
                time.sleep(0.1)
        raise AssertionError(f"cluster command {args[:2]} failed: {last}")


class Cluster:
    def __init__(self, dirpath):
        self.dir = dirpath
        self.ports = []
        self.procs = {}

    def sock(self, port):
        return os.path.join(self.dir, f"n{port}", "redis.sock")

    def live_ports(self):
        return [p for p in self.ports if self.procs[p].poll() is None]

    def start(self):
        for prog in (REDIS_SERVER, REDIS_CLI):
            if not shutil.which(prog):
                raise Skip(f"{prog} not installed: no local cluster")
        self.ports = free_ports(6)
        for p in self.ports:
            d = os.path.join(self.dir, f"n{p}")
            os.makedirs(d)
            self.procs[p] = subprocess.Popen(
                [REDIS_SERVER, "--port", str(p), "--bind", "127.0.0.1",
                 "--cluster-enabled", "yes",
                 "--cluster-config-file", os.path.join(d, "nodes.conf"),
                 "--cluster-node-timeout", "1000",
                 "--cluster-replica-validity-factor", "0",
                 "--unixsocket", self.sock(p), "--unixsocketperm", "700",
                 "--save", "", "--appendonly", "no", "--dir", d,
                 "--loglevel", "notice",
                 "--logfile", os.path.join(d, "log")],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for p in self.ports:
            r = Redis(self.sock(p))
            try:
                wait_for(lambda: r("PING") == "PONG", f"node {p}",
                         timeout=20)
            except AssertionError as e:
                raise Skip(f"cluster node did not start: {e}")
            finally:
                r.close()
        cmd = [REDIS_CLI, "--cluster", "create",
               *[f"127.0.0.1:{p}" for p in self.ports],
               "--cluster-replicas", "1", "--cluster-yes"]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            raise Skip(f"redis-cli --cluster create failed: "
                       f"{(p.stdout + p.stderr)[-300:]}")
        self.wait_ok()
        self.wait_replicas()

    def wait_replicas(self, timeout=30):
        """Every replica has its link to its master up (a master killed
        before that has no replica to take over)."""
        def synced():
            n = 0
            for p in self.live_ports():
                r = Redis(self.sock(p), timeout=2)
                try:
                    text = r("INFO", "replication")
                finally:
                    r.close()
                if "role:slave" in text:
                    if "master_link_status:up" not in text:
                        return False
                    n += 1
            return n == 3
        wait_for(synced, "3 replicas in sync", timeout=timeout)

    def info(self, port):
        r = Redis(self.sock(port), timeout=2)
        try:
            text = r("CLUSTER", "INFO")
        finally:
            r.close()
        return dict(ln.split(":", 1) for ln in text.split("\r\n")
                    if ":" in ln)

    def wait_ok(self, timeout=30):
        def ok():
            return all(self.info(p).get("cluster_state") == "ok"
                       for p in self.live_ports())
        wait_for(ok, "cluster_state:ok on every node", timeout=timeout)

    def owner(self, slot):
        """The port of the master serving @slot, by CLUSTER SLOTS."""
        r = Redis(self.sock(self.live_ports()[0]), timeout=2)
        try:
            for start, end, master, *_ in r("CLUSTER", "SLOTS"):
                if start <= slot <= end:
                    return master[1]
        finally:
            r.close()
        return None

    def node(self, port):
        return Redis(self.sock(port), timeout=10)

    def myid(self, port):
        r = self.node(port)
        try:
            return r("CLUSTER", "MYID")
        finally:
            r.close()

    def masters(self):
        r = self.node(self.live_ports()[0])
        try:
            return sorted({m[1] for _, _, m, *_ in r("CLUSTER", "SLOTS")})
        finally:
            r.close()

    def migrate_slot(self, slot, src, dst, between=None, batch=20):
        """Move @slot from master @src to master @dst the way
        redis-cli --cluster reshard does (IMPORTING/MIGRATING, MIGRATE
        the keys in batches, then SETSLOT NODE everywhere), calling
        between() after each batch so work goes on mid-migration."""
        sid, did = self.myid(src), self.myid(dst)
        rs, rd = self.node(src), self.node(dst)
        try:
            rd("CLUSTER", "SETSLOT", slot, "IMPORTING", sid)
            rs("CLUSTER", "SETSLOT", slot, "MIGRATING", did)
            moved = 0
            while True:
                keys = rs("CLUSTER", "GETKEYSINSLOT", slot, batch)
                if not keys:
                    break
                rs("MIGRATE", "127.0.0.1", dst, "", 0, 10000, "REPLACE",
                   "KEYS", *keys)
                moved += len(keys)
                if between:
                    between()
            for p in self.masters():
                r = self.node(p)
                try:
                    r("CLUSTER", "SETSLOT", slot, "NODE", did)
                finally:
                    r.close()
            return moved
        finally:
            rs.close()
            rd.close()

    def kill(self, port):
        self.procs[port].kill()
        self.procs[port].wait()

    def stop(self):
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()


class ClusterEnv(Env):
    """Env (apps, records, relayd) on a local cluster instead of one
    redis-server. env.r follows the cluster; env.uri lists a dead seed,
    then a TCP node that does not own the stream's slot."""

    def __init__(self, stream=STREAM, group="relay"):
        super().__init__(stream=stream, group=group)

    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="relay-cluster-test.")
        self.apps_dir = os.path.join(self.dir, "apps")
        self.out = os.path.join(self.dir, "records")
        os.makedirs(self.apps_dir)
        open(self.out, "w").close()
        self.cluster = Cluster(self.dir)
        try:
            self.cluster.start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        self.r = ClusterClient(self.cluster)
        owner = self.cluster.owner(key_slot(self.stream))
        other = [p for p in self.cluster.ports if p != owner][0]
        # A seed list whose first seed is down (nothing listens there):
        # start-up goes on with the next one (configuration.md C-2).
        dead = free_ports(1)[0]
        self.uri = f"127.0.0.1:{dead},127.0.0.1:{other}"

        class _Uri:  # what Relayd reads as env.redis.uri
            uri = self.uri
        self.redis = _Uri
        return self

    def __exit__(self, *exc):
        self.redis = None
        try:
            return super().__exit__(*exc)
        finally:
            if getattr(self, "cluster", None):
                self.cluster.stop()


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
    start-up with one error line naming the fix."""
    with ClusterEnv() as env:
        env.app("a", [("h", {"kind": ["x"]})])
        d = env.relayd(start=False, REDIS_STREAM="events")
        d.start(wait_ready=False)
        rc = d.wait(30)
        eq(rc, 1, "exit status\n" + d.log_tail())
        log = d.log()
        check("no hash tag" in log and 'REDIS_STREAM="{events}"' in log,
              "error names the fix:\n" + d.log_tail())
        d.check_sanitizers()


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
        occ = [json.loads(dict(zip(f[::2], f[1::2]))["event"])
               for _, f in env.r("XRANGE", env.stream, "-", "+")
               if "relay.schedule" in f[1]]
        oids = [o["occurrence_id"] for o in occ]
        eq(len(oids), len(set(oids)), "one entry per occurrence")
        eq(len(open(env.out + ".sched").read().split()), len(oids),
           "each occurrence ran once")
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
def failover_mid_load():
    """Kill the master owning the stream's slot while events flow: after
    the replica takes over, every XADDed entry is acknowledged with its
    handler done, none ran twice while its claim was live, and relayd
    followed on its own."""
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
        # A handler whose completion the dead master took with it runs
        # again, but only once its claim (the rule's 3 s timeout) is
        # over: never twice while a claim is live.
        starts = {}
        for kind, key, _, _, ns in env.records():
            if kind == "start":
                starts.setdefault(key, []).append(ns)
        for key, ts in starts.items():
            ts.sort()
            check(len(ts) <= 2, f"{key} started {len(ts)} times")
            if len(ts) == 2:
                check(ts[1] - ts[0] >= CLAIM_S * 1e9 - 5e7,
                      f"{key} ran again {(ts[1] - ts[0]) / 1e9:.2f}s "
                      "after its first start, while its claim was live")
        again = sorted(k for k, t in starts.items() if len(t) > 1)
        sys.stderr.write(f"# ran again after the claim expired: {again}\n")
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
        check(moved > 20, f"keys migrated in batches ({moved})")
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
