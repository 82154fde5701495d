#!/usr/bin/env python3
"""Whom relayd and relayctl trust with the master's password behind
Redis Sentinel (issue 40, item 6; suites 'sentinel' and 'security').

usage: test_sentinel_trust.py RELAYD RELAYCTL

Fake sentinels and a fake node, written here: small RESP servers on
127.0.0.1 with ports chosen by the kernel, in threads of this script.
Each records every connection and every byte it receives. A fake
sentinel answers SENTINEL get-master-addr-by-name with the address it
was given; the fake node answers AUTH with +OK and ROLE with `slave`
(a replica, or a host that pretends to be one), everything else with
an error. The real master is a redis-server with requirepass on a
loopback port chosen at run time. Needs no redis-sentinel.
"""
import os
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                os.pardir, "daemon"))
from harness import Env, case, check, eq, run_cases, wait_for  # noqa

RELAYCTL = os.environ.get("RELAYCTL") or (sys.argv[2] if len(sys.argv) > 2
                                          else "relayctl")
MASTER = "relaymaster"
SECRET = "Pw-9f3c1e7a-not-for-fakes"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def bulk(b):
    return b"$%d\r\n%s\r\n" % (len(b), b)


def parse(buf):
    """One RESP array of bulk strings off the front of @buf:
    (argv, rest), or (None, buf) while incomplete."""
    if not buf.startswith(b"*"):
        if buf:
            raise ValueError(f"not a RESP array: {buf[:40]!r}")
        return None, buf
    nl = buf.find(b"\r\n")
    if nl < 0:
        return None, buf
    n, pos, argv = int(buf[1:nl]), nl + 2, []
    for _ in range(n):
        nl = buf.find(b"\r\n", pos)
        if nl < 0:
            return None, buf
        ln = int(buf[pos + 1:nl])
        if len(buf) < nl + 2 + ln + 2:
            return None, buf
        argv.append(buf[nl + 2:nl + 2 + ln])
        pos = nl + 2 + ln + 2
    return argv, buf[pos:]


class Fake:
    """A RESP server on 127.0.0.1:<port>: @answer(argv) -> reply bytes.
    conns: one list of commands (argv lists) per connection accepted;
    raw: every byte received."""

    def __init__(self, answer):
        self.answer = answer
        self.lock = threading.Lock()
        self.conns = []
        self.raw = b""
        self.srv = socket.socket()
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(64)
        self.port = self.srv.getsockname()[1]
        self.addr = f"127.0.0.1:{self.port}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.srv.accept()
            except OSError:
                return
            cmds = []
            with self.lock:
                self.conns.append(cmds)
            threading.Thread(target=self._serve, args=(c, cmds),
                             daemon=True).start()

    def _serve(self, c, cmds):
        buf = b""
        c.settimeout(30)
        try:
            while True:
                data = c.recv(65536)
                if not data:
                    break
                with self.lock:
                    self.raw += data
                buf += data
                while True:
                    argv, buf = parse(buf)
                    if argv is None:
                        break
                    with self.lock:
                        cmds.append(argv)
                    c.sendall(self.answer(argv))
        except (OSError, ValueError):
            pass
        c.close()

    def commands(self):
        with self.lock:
            return [list(c) for c in self.conns]

    def close(self):
        self.srv.close()


def sentinel(port, delay=0):
    """A fake sentinel that names 127.0.0.1:@port as the master, @delay
    seconds after the question."""
    def answer(argv):
        if (len(argv) == 3 and argv[0].upper() == b"SENTINEL" and
                argv[1].lower() == b"get-master-addr-by-name"):
            time.sleep(delay)
            return b"*2\r\n" + bulk(b"127.0.0.1") + bulk(b"%d" % port)
        return b"-ERR unknown command\r\n"
    return Fake(answer)


def slave_node():
    """A fake node that takes any password and says it is a replica."""
    def answer(argv):
        if argv[0].upper() == b"AUTH":
            return b"+OK\r\n"
        if argv[0].upper() == b"ROLE":
            return (b"*5\r\n" + bulk(b"slave") + bulk(b"127.0.0.1") +
                    b":6379\r\n" + bulk(b"connected") + b":0\r\n")
        return b"-ERR not for you\r\n"
    return Fake(answer)


def ctl(env, uri, *args):
    e = {k: v for k, v in os.environ.items()
         if k.startswith(("ASAN_", "UBSAN_", "LSAN_", "PATH"))}
    e.update({"REDIS_URI": uri, "REDIS_STREAM": env.stream,
              "REDIS_GROUP": env.group, "RELAY_APPS_DIR": env.apps_dir})
    p = subprocess.run([RELAYCTL, *args], env=e, capture_output=True,
                       text=True, timeout=60)
    check("Sanitizer" not in p.stderr and "runtime error" not in p.stderr,
          f"relayctl {args}: sanitizer report:\n{p.stderr}")
    return p.returncode, p.stdout, p.stderr


def sentinels_asked_only_where(fakes):
    """What went to the sentinels: SENTINEL get-master-addr-by-name
    <master> on each connection, nothing else, never the password."""
    for s in fakes:
        check(SECRET.encode() not in s.raw,
              f"sentinel {s.addr} got the password: {s.raw!r}")
        for cmds in s.commands():
            for argv in cmds:
                eq(argv, [b"SENTINEL", b"get-master-addr-by-name",
                          MASTER.encode()], f"sentinel {s.addr} was sent")


def untouched(node):
    check(SECRET.encode() not in node.raw,
          f"the password reached the fake node {node.addr}: {node.raw!r}")
    eq(node.commands(), [], f"connections to the fake node {node.addr} "
       "(and what they sent)")


@case
def one_lying_sentinel_of_three_gets_no_password_to_its_node():
    """Three sentinels, the first naming a fake replica, the other two
    the real master (requirepass): relayctl and relayd end on the real
    master; the fake node is never connected to, so the password never
    reaches it, and the sentinels get nothing but the question."""
    port = free_port()
    with Env(port=port, password=SECRET) as env:
        node = slave_node()
        liar = sentinel(node.port)
        # The honest ones answer last: the lie is heard, and outvoted.
        good = [sentinel(port, delay=0.3), sentinel(port, delay=0.3)]
        fakes = [liar] + good
        try:
            hosts = ",".join(s.addr for s in fakes)
            uri = f"redis+sentinel://:{SECRET}@{hosts}/{MASTER}"
            rc, out, err = ctl(env, uri, "dlq", "ls")
            untouched(node)
            eq(rc, 0, f"relayctl dlq ls on the real master: {err}")
            check(all(len(s.commands()) == 1 for s in fakes),
                  "relayctl asked each sentinel once: "
                  f"{[s.commands() for s in fakes]}")

            env.app("a", [("h", {"kind": ["x"]})])
            d = env.relayd(REDIS_URI=uri)
            env.xadd({"kind": "x", "k": "m0"})
            env.wait(lambda: env.count("end", "m0") == 1 and
                     env.pel_count() == 0, "the event handled on the "
                     "real master")
            log = d.log()
            check(f"master '{MASTER}' is at 127.0.0.1:{port}, named by "
                  "2 of 3 sentinels" in log,
                  f"relayd says where the master is:\n{d.log_tail()}")
            check(f"redis sentinel {liar.addr} names "
                  f"127.0.0.1:{node.port} for master '{MASTER}', not "
                  f"127.0.0.1:{port} as the majority does" in log,
                  f"relayd names the sentinel that disagreed:\n"
                  f"{d.log_tail()}")
            d.stop()
            check(SECRET not in d.log(), "relayd logged the password")
            untouched(node)
            sentinels_asked_only_where(fakes)
        finally:
            for f in fakes + [node]:
                f.close()


@case
def sentinels_without_a_majority_are_an_error_and_nothing_is_sent():
    """Three sentinels naming three different nodes: no address has a
    majority, relayctl fails saying so, relayd says it once and keeps
    trying; no node is ever connected to."""
    with Env() as env:
        nodes = [slave_node() for _ in range(3)]
        fakes = [sentinel(n.port) for n in nodes]
        try:
            hosts = ",".join(s.addr for s in fakes)
            uri = f"redis+sentinel://:{SECRET}@{hosts}/{MASTER}"
            rc, out, err = ctl(env, uri, "dlq", "ls")
            check(rc != 0, f"relayctl failed:\n{out}")
            want = (f"no majority for master '{MASTER}' (2 of 3 "
                    "sentinels needed)")
            check(want in err, f"relayctl says why:\n{err}")
            check(all(n.addr in err for n in nodes),
                  f"relayctl names what each said:\n{err}")
            check(SECRET not in err, "relayctl printed the password")
            for n in nodes:
                untouched(n)

            env.app("a", [("h", {"kind": ["x"]})])
            d = env.relayd(REDIS_URI=uri, start=False)
            d.start(wait_ready=False)
            env.wait(lambda: "RELAY-REDIS10" in d.log() and
                     want in d.log(), "relayd says why")
            time.sleep(2.5)
            d.stop()
            eq(d.log().count(want), 1, f"said once per streak:\n"
               f"{d.log_tail()}")
            check(SECRET not in d.log(), "relayd logged the password")
            for n in nodes:
                untouched(n)
            check(all(len(s.commands()) >= 2 for s in fakes),
                  "relayd kept asking every sentinel")
            sentinels_asked_only_where(fakes)
        finally:
            for f in fakes + nodes:
                f.close()


@case
def a_replica_gets_auth_then_role_and_nothing_more():
    """A single sentinel is all there is to trust (no TLS in sentinel
    mode): its node gets AUTH, then ROLE, and when ROLE says `slave`,
    nothing more (no SELECT, no CLUSTER SLOTS, no command of relayctl's
    or relayd's), on every connection."""
    with Env() as env:
        node = slave_node()
        s = sentinel(node.port)
        try:
            uri = f"redis+sentinel://:{SECRET}@{s.addr}/{MASTER}/3"
            rc, out, err = ctl(env, uri, "dlq", "ls")
            check(rc != 0, f"relayctl failed:\n{out}")
            check(f"{node.addr}, named master '{MASTER}', is a slave, "
                  "not a master" in err, f"relayctl says why:\n{err}")
            auth_role = [[b"AUTH", SECRET.encode()], [b"ROLE"]]
            eq(node.commands(), [auth_role], "what the replica got")

            env.app("a", [("h", {"kind": ["x"]})])
            d = env.relayd(REDIS_URI=uri, start=False)
            d.start(wait_ready=False)
            env.wait(lambda: d.log().count("RELAY-REDIS12") >= 2,
                     "relayd refused the replica twice")
            d.stop()
            conns = node.commands()
            check(len(conns) >= 3, f"connections: {conns}")
            for cmds in conns:
                eq(cmds, auth_role[:len(cmds)], "what the replica got")
            eq(conns[1], auth_role, "what the replica got from relayd")
            sentinels_asked_only_where([s])
        finally:
            s.close()
            node.close()


if __name__ == "__main__":
    sys.exit(run_cases())
