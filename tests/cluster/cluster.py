"""A local Redis Cluster for tests and benchmarks: 6 redis-servers on
loopback (cluster-enabled, ports chosen at run time, a temp dir), joined
by `redis-cli --cluster create ... --cluster-replicas 1` into 3 masters
with a replica each; a client that follows MOVED and ASK; and ClusterEnv,
the daemon harness's Env on such a cluster. Used by test_cluster.py
(suite 'cluster') and tests/bench/cluster-partitions-bench.py.
"""
import os
import shutil
import socket
import subprocess
import sys
import types
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                os.pardir, "daemon"))
from harness import (REDIS_SERVER, Env, Redis, RedisError, Skip,  # noqa
                     wait_for)

REDIS_CLI = os.environ.get("RELAY_REDIS_CLI", "redis-cli")
STREAM = "{ev}"


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

    prefix = "relay-cluster-test."

    def __init__(self, stream=STREAM, group="relay"):
        super().__init__(stream=stream, group=group)

    def start_redis(self):
        self.cluster = Cluster(self.dir)
        self.cluster.start()
        self.r = ClusterClient(self.cluster)
        owner = self.cluster.owner(key_slot(self.stream))
        other = [p for p in self.cluster.ports if p != owner][0]
        # A seed list whose first seed is down (nothing listens there):
        # start-up goes on with the next one (configuration.md C-2).
        dead = free_ports(1)[0]
        self.uri = f"127.0.0.1:{dead},127.0.0.1:{other}"
        self.redis = types.SimpleNamespace(uri=self.uri)  # what Relayd reads

    def stop_redis(self):
        if getattr(self, "cluster", None):
            self.cluster.stop()

    def pipe_conn(self, key):
        """The connection to the master serving @key's slot (pipelined
        writes cannot follow MOVED)."""
        return self.r._conn(self.cluster.owner(key_slot(key)))

