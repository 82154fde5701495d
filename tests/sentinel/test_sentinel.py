#!/usr/bin/env python3
"""relayd and relayctl behind Redis Sentinel (issue #26, suite 'sentinel').

usage: test_sentinel.py RELAYD RELAYCTL

Starts, on loopback with ports chosen at run time and temp dirs, one
redis-server master, one replica of it and three redis-sentinels
watching it (quorum 2, down-after 1 s). Every node also listens on a unix
socket, which the test's own client uses. relayd and relayctl get
REDIS_URI=redis+sentinel://127.0.0.1:<dead>,127.0.0.1:<s1>,.../<name>:
the first sentinel listed is down, so they must move on to the next.
Skips (with the reason) where redis-sentinel is missing or the set-up
cannot start.
"""
import datetime
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import types

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                os.pardir, "daemon"))
from harness import (REDIS_SERVER, Env, Redis, RedisError, Skip,  # noqa
                     case, check, eq, run_cases, wait_for)

RELAYCTL = os.environ.get("RELAYCTL") or (sys.argv[2] if len(sys.argv) > 2
                                          else "relayctl")
REDIS_SENTINEL = os.environ.get("RELAY_REDIS_SENTINEL", "redis-sentinel")
MASTER = "relaymaster"
CLAIM_S = 3  # the failover case's rule timeout = its claim lifetime
IN_FLIGHT = 16  # relayd's default MAX_BUFFERED_EVENTS


def free_ports(n):
    out = []
    while len(out) < n:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        p = s.getsockname()[1]
        s.close()
        if p not in out:
            out.append(p)
    return out


class SentinelSet:
    """1 master, 1 replica, 3 sentinels (quorum 2) on loopback."""

    def __init__(self, dirpath):
        self.dir = dirpath
        self.procs = {}
        self.socks = {}

    def _spawn(self, name, port, args, conf=None):
        d = os.path.join(self.dir, name)
        os.makedirs(d)
        sock = os.path.join(d, "redis.sock")
        self.socks[port] = sock
        common = ["--port", str(port), "--bind", "127.0.0.1",
                  "--unixsocket", sock, "--unixsocketperm", "700",
                  "--dir", d, "--logfile", os.path.join(d, "log")]
        if conf is not None:
            path = os.path.join(d, "sentinel.conf")
            with open(path, "w") as f:
                f.write(conf)
            cmd = [REDIS_SENTINEL, path, *common]
        else:
            cmd = [REDIS_SERVER, *common, "--save", "", "--appendonly",
                   "no", *args]
        self.procs[port] = subprocess.Popen(
            cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def start(self):
        for prog in (REDIS_SERVER, REDIS_SENTINEL):
            if not shutil.which(prog):
                raise Skip(f"{prog} not installed: no local sentinels")
        ports = free_ports(5)
        self.master, self.replica = ports[0], ports[1]
        self.sentinels = ports[2:]
        self._spawn("master", self.master, [])
        self._spawn("replica", self.replica,
                    ["--replicaof", "127.0.0.1", str(self.master)])
        for p in self.sentinels:
            self._spawn(f"s{p}", p, None, conf=(
                f"sentinel monitor {MASTER} 127.0.0.1 {self.master} 2\n"
                f"sentinel down-after-milliseconds {MASTER} 1000\n"
                f"sentinel failover-timeout {MASTER} 10000\n"
                f"sentinel parallel-syncs {MASTER} 1\n"))
        for p in self.procs:
            r = Redis(self.socks[p])
            try:
                wait_for(lambda: r("PING") == "PONG", f"node {p}",
                         timeout=20)
            except AssertionError as e:
                raise Skip(f"a node did not start: {e}")
            finally:
                r.close()
        wait_for(self.replica_synced, "the replica in sync", timeout=30)
        # Every sentinel knows the replica and the other sentinels (a
        # failover needs the quorum and a replica to promote).
        wait_for(lambda: all(self.sentinel_knows(s)
                             for s in self.sentinels),
                 "the sentinels see the replica and each other",
                 timeout=30)

    def node(self, port, timeout=10):
        return Redis(self.socks[port], timeout=timeout)

    def ask(self, port, *args):
        r = self.node(port, timeout=3)
        try:
            return r(*args)
        finally:
            r.close()

    def replica_synced(self):
        return "master_link_status:up" in self.ask(
            self.replica, "INFO", "replication")

    def sentinel_knows(self, s):
        m = self.ask(s, "SENTINEL", "MASTER", MASTER)
        info = dict(zip(m[0::2], m[1::2]))
        return (int(info.get("num-slaves", 0)) >= 1 and
                int(info.get("num-other-sentinels", 0)) >= 2)

    def master_port(self):
        """The master's port, as the live sentinels say."""
        for s in self.sentinels:
            try:
                a = self.ask(s, "SENTINEL", "GET-MASTER-ADDR-BY-NAME",
                             MASTER)
                return int(a[1])
            except (OSError, RedisError, TypeError):
                continue
        return None

    def role(self, port):
        return self.ask(port, "ROLE")[0]

    def kill(self, port):
        self.procs[port].kill()
        self.procs[port].wait()

    def stop(self):
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()


class MasterClient:
    """The harness's client, on whichever node is the master now (asking
    the sentinels again after an error)."""

    def __init__(self, ss):
        self.ss = ss
        self.port = None
        self.conn = None

    def close(self):
        if self.conn:
            self.conn.close()
            self.conn = None

    def __call__(self, *args, tries=200):
        last = None
        for _ in range(tries):
            try:
                if self.conn is None:
                    self.port = self.ss.master_port()
                    self.conn = self.ss.node(self.port)
                return self.conn(*args)
            except (OSError, TypeError, KeyError) as e:
                last = e
            except RedisError as e:
                if not str(e).startswith(("READONLY", "LOADING")):
                    raise
                last = e
            self.close()
            time.sleep(0.1)
        raise AssertionError(f"master command {args[:2]} failed: {last}")


class SentinelEnv(Env):
    """Env on a sentinel-watched master; env.uri names a dead sentinel,
    then the three live ones."""

    prefix = "relay-sentinel-test."

    def __init__(self, master=MASTER, **kw):
        super().__init__(**kw)
        self.master_name = master

    def start_redis(self):
        self.ss = SentinelSet(self.dir)
        self.ss.start()
        self.r = MasterClient(self.ss)
        dead = free_ports(1)[0]
        hosts = ",".join(f"127.0.0.1:{p}"
                         for p in [dead] + self.ss.sentinels)
        self.uri = f"redis+sentinel://{hosts}/{self.master_name}"
        self.redis = types.SimpleNamespace(uri=self.uri)

    def stop_redis(self):
        if getattr(self, "ss", None):
            self.ss.stop()

    def pipe_conn(self, key):
        self.r("PING")
        return self.r.conn


def ctl(env, *args, uri=None):
    e = {k: v for k, v in os.environ.items()
         if k.startswith(("ASAN_", "UBSAN_", "LSAN_", "PATH"))}
    e.update({"REDIS_URI": uri or env.uri, "REDIS_STREAM": env.stream,
              "REDIS_GROUP": env.group, "RELAY_APPS_DIR": env.apps_dir})
    p = subprocess.run([RELAYCTL, *args], env=e, capture_output=True,
                       text=True, timeout=60)
    check("Sanitizer" not in p.stderr and "runtime error" not in p.stderr,
          f"relayctl {args}: sanitizer report:\n{p.stderr}")
    return p.returncode, p.stdout, p.stderr


def log_ns(log, text):
    """The time (ns since the epoch) of the first log line holding
    @text: relayd's text log starts with an RFC 3339 UTC time."""
    for line in log.splitlines():
        if text in line:
            ts = line.split(" ", 1)[0]
            dt = datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ")
            dt = dt.replace(tzinfo=datetime.timezone.utc)
            return int(dt.timestamp() * 1e9)
    raise AssertionError(f"no log line with {text!r}")


def ends(env, key):
    return env.count("end", key)


@case
def delivery_dlq_and_relayctl_through_sentinels():
    """relayd finds the master through the sentinels (past a dead one) and
    delivers; a failing handler's event is dead-lettered; relayctl reads
    that DLQ through the same URI."""
    with SentinelEnv() as env:
        env.app("a", [("h", {"kind": ["x"]}),
                      ("bad", {"kind": ["fail"]}, {"retries": 0})],
                env={"FAIL": "bad"})
        d = env.relayd()
        for i in range(20):
            env.xadd({"kind": "x", "k": f"m{i}"})
        env.xadd({"kind": "fail", "k": "f0"})
        env.wait(lambda: all(ends(env, f"m{i}") == 1 for i in range(20))
                 and env.pel_count() == 0, "every event handled")
        env.wait(lambda: len(env.dlq()) == 1, "the failure dead-lettered")
        check(f"master '{MASTER}' is at 127.0.0.1:{env.ss.master}"
              in d.log(), f"relayd says where the master is:\n"
              f"{d.log_tail()}")
        rc, out, err = ctl(env, "dlq", "ls")
        eq(rc, 0, f"relayctl dlq ls through the sentinels: {err}")
        check("a/bad" in out or "bad" in out,
              f"relayctl lists the entry:\n{out}")
        d.stop()


@case
def failover_mid_load():
    """SIGKILL the master while events flow: the sentinels promote the
    replica, relayd follows on its own (asking the sentinels again), and
    every XADDed entry is acknowledged with its handler run. A handler
    runs a second time only if it was in flight at the kill and the dead
    master had not replicated its writes: at most the in-flight window,
    once."""
    with SentinelEnv() as env:
        env.app("a", [("h", {"kind": ["x"]}, {"timeout": f"{CLAIM_S}s"})])
        d = env.relayd()
        old = env.ss.master
        for n in range(150):
            env.xadd({"kind": "x", "k": f"m{n}"})
        env.wait(lambda: ends(env, "m20") == 1, "load under way")
        env.r("WAIT", "1", "2000")
        kill_ns = time.time_ns()
        env.ss.kill(old)
        env.r.close()
        t0 = time.monotonic()
        for n in range(150, 300):
            env.xadd({"kind": "x", "k": f"m{n}"})
        eq(env.ss.master_port(), env.ss.replica, "the replica promoted")
        env.wait(lambda: all(ends(env, f"m{i}") >= 1 for i in range(300))
                 and env.pel_count() == 0,
                 "every event handled and acknowledged", timeout=90)
        took = time.monotonic() - t0
        starts = {}
        for kind, key, _, _, ns in env.records():
            if kind == "start":
                starts.setdefault(key, []).append(ns)
        again = sorted(k for k, t in starts.items() if len(t) > 1)
        check(len(again) <= IN_FLIGHT,
              f"at most the in-flight window ran twice: {again}")
        # A first run was claimed on the old master (its start line may
        # come a little after the kill on a loaded machine); the second
        # was claimed on the new one, after relayd followed.
        moved_ns = log_ns(d.log(), "(it moved)")
        check(moved_ns > kill_ns, "relayd followed after the kill")
        for k in again:
            t = sorted(starts[k])
            eq(len(t), 2, f"{k} ran twice at most")
            check(t[0] < moved_ns < t[1],
                  f"{k}: first run before the failover, the second after")
        sys.stderr.write(f"# failover: all 300 handled {took:.1f}s after "
                         f"the kill; ran twice: {len(again)} {again}\n")
        eq(env.dlq(), [], "nothing dead-lettered")
        eq(env.r("XLEN", env.stream), 300, "every XADD kept")
        check(f"is at 127.0.0.1:{env.ss.replica} (it moved)" in d.log(),
              f"relayd followed the failover:\n{d.log_tail()}")
        eq(d.log().count("(it moved)"), 1, "followed once")
        rc, _, err = ctl(env, "dlq", "ls")
        eq(rc, 0, f"relayctl finds the new master: {err}")
        d.stop()


@case
def unknown_master_name_is_an_error_that_says_so():
    """A master name the sentinels do not watch: relayctl fails naming
    it; relayd logs it once and keeps trying."""
    with SentinelEnv(master="nosuchmaster") as env:
        rc, out, err = ctl(env, "dlq", "ls")
        check(rc != 0, "relayctl failed")
        check("knows no master named 'nosuchmaster'" in err,
              f"relayctl names the problem:\n{err}")
        env.app("a", [("h", {"kind": ["x"]})])
        d = env.relayd(start=False)
        d.start(wait_ready=False)
        env.wait(lambda: "RELAY-REDIS10" in d.log() and
                 "knows no master named 'nosuchmaster'" in d.log(),
                 "relayd says why")
        time.sleep(2.5)
        eq(d.log().count("no sentinel of 4 named master"), 1,
           f"said once per streak:\n{d.log_tail()}")
        d.stop()


@case
def unreachable_sentinels_are_an_error_that_says_so():
    """No sentinel answers: relayctl fails saying so, with the reason."""
    with Env() as env:
        a, b = free_ports(2)
        uri = f"redis+sentinel://127.0.0.1:{a},127.0.0.1:{b}/{MASTER}"
        rc, out, err = ctl(env, "dlq", "ls", uri=uri)
        check(rc != 0, "relayctl failed")
        check("no sentinel of 2 named master "
              f"'{MASTER}'" in err and
              f"redis sentinel 127.0.0.1:{b}: Connection refused" in err,
              f"relayctl says the sentinel cannot be reached:\n{err}")


def fake_sentinel(answer_port):
    """A TCP server answering every command with [127.0.0.1, port]: a
    sentinel that names a replica."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)

    def serve():
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            c.settimeout(5)
            try:
                c.recv(65536)
                p = str(answer_port).encode()
                c.sendall(b"*2\r\n$9\r\n127.0.0.1\r\n$%d\r\n%s\r\n"
                          % (len(p), p))
                c.recv(65536)
            except OSError:
                pass
            c.close()
    threading.Thread(target=serve, daemon=True).start()
    return srv


@case
def a_replica_named_as_master_is_refused():
    """A sentinel that names a replica (stale, or lying): the connection
    is refused after ROLE, nothing is read from or written to it."""
    with SentinelEnv() as env:
        srv = fake_sentinel(env.ss.replica)
        try:
            port = srv.getsockname()[1]
            uri = f"redis+sentinel://127.0.0.1:{port}/{MASTER}"
            rc, out, err = ctl(env, "dlq", "ls", uri=uri)
            check(rc != 0, f"relayctl failed:\n{out}")
            check(f"127.0.0.1:{env.ss.replica}, named master "
                  f"'{MASTER}', is a slave, not a master" in err,
                  f"relayctl says it is a replica:\n{err}")
        finally:
            srv.close()


if __name__ == "__main__":
    sys.exit(run_cases())
