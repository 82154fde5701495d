#!/usr/bin/env python3
"""relayd and relayctl over TLS (issue #26, suite 'tls').

usage: test_tls.py RELAYD RELAYCTL

Generates a CA and certificates with the openssl command (a server
certificate for localhost and 127.0.0.1, one for another name, an expired
one, a client certificate), starts a redis-server with --tls-port (and a
plain port, and a unix socket for the test's own client), and runs relayd
and relayctl with REDIS_URI=rediss://127.0.0.1:<tls port>. Skips (with
the reason) when the build has no TLS, or openssl or a TLS-capable
redis-server is missing.
"""
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                os.pardir, "daemon"))
from harness import (REDIS_SERVER, Env, Redis, Skip, case, check,  # noqa
                     eq, free_port, run_cases, wait_for)

RELAYCTL = os.environ.get("RELAYCTL") or (sys.argv[2] if len(sys.argv) > 2
                                          else "relayctl")
SECRET = "Tz7-tlsPW"


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True,
                   capture_output=True, timeout=60)


def make_certs(d):
    """ca.pem; server.pem (localhost, 127.0.0.1), other.pem (CN/SAN
    elsewhere.test), expired.pem, cnonly.pem (CN=localhost, no
    subjectAltName): all with server.key; client.pem/.key."""
    if not shutil.which("openssl"):
        raise Skip("openssl not installed: no test certificates")
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
            "ca.key", "-out", "ca.pem", "-days", "2", "-subj",
            "/CN=relay-test-ca", cwd=d)
    for name, key, cn, san, days in (
            ("server", "server", "localhost",
             "DNS:localhost,IP:127.0.0.1", "2"),
            ("other", "server", "elsewhere.test", "DNS:elsewhere.test", "2"),
            ("expired", "server", "localhost",
             "DNS:localhost,IP:127.0.0.1", "0"),
            ("client", "client", "relay-client", "DNS:relay-client", "2"),
            ("cnonly", "server", "localhost", None, "2")):
        if not os.path.exists(os.path.join(d, f"{key}.key")):
            openssl("genrsa", "-out", f"{key}.key", "2048", cwd=d)
        with open(os.path.join(d, f"{name}.ext"), "w") as f:
            f.write(f"subjectAltName={san}\n" if san else
                    "basicConstraints=CA:FALSE\n")
        openssl("req", "-new", "-key", f"{key}.key", "-out", f"{name}.csr",
                "-subj", f"/CN={cn}", cwd=d)
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem",
                "-CAkey", "ca.key", "-CAcreateserial", "-days", days,
                "-extfile", f"{name}.ext", "-out", f"{name}.pem", cwd=d)


class TlsEnv(Env):
    """Env whose redis-server also listens with TLS (self.tls_port) and
    in plain text (self.plain_port); env.r is on the unix socket."""

    prefix = "relay-tls-test."

    def __init__(self, auth_clients="no", **kw):
        super().__init__(**kw)
        self.auth_clients = auth_clients

    def start_redis(self):
        self.certs = os.path.join(self.dir, "certs")
        os.makedirs(self.certs)
        make_certs(self.certs)
        self.tls_port, self.plain_port = free_port(), free_port()
        sock = os.path.join(self.dir, "redis.sock")
        c = self.certs
        args = [REDIS_SERVER, "--port", str(self.plain_port),
                "--bind", "127.0.0.1", "--tls-port", str(self.tls_port),
                "--tls-cert-file", f"{c}/server.pem",
                "--tls-key-file", f"{c}/server.key",
                "--tls-ca-cert-file", f"{c}/ca.pem",
                "--tls-auth-clients", self.auth_clients,
                "--unixsocket", sock, "--unixsocketperm", "700",
                "--save", "", "--appendonly", "no", "--dir", self.dir,
                "--logfile", os.path.join(self.dir, "redis.log")]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        self.r = Redis(sock)
        try:
            wait_for(lambda: self.r("PING") == "PONG", "redis-server",
                     timeout=20)
        except AssertionError:
            self.proc.kill()
            raise Skip("redis-server with --tls-port did not start "
                       "(built without TLS?)")
        self.uri = f"rediss://127.0.0.1:{self.tls_port}"
        self.redis = type("R", (), {"uri": self.uri})()

    def stop_redis(self):
        if getattr(self, "proc", None) and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def tls_vars(self, **extra):
        v = {"REDIS_TLS_CA_FILE": f"{self.certs}/ca.pem"}
        v.update(extra)
        return {k: x for k, x in v.items() if x is not None}


def ctl(env, *args, uri=None, **extra):
    e = {k: v for k, v in os.environ.items()
         if k.startswith(("ASAN_", "UBSAN_", "LSAN_", "PATH"))}
    e.update({"REDIS_URI": uri or env.uri, "REDIS_STREAM": env.stream,
              "REDIS_GROUP": env.group, "RELAY_APPS_DIR": env.apps_dir})
    e.update({k: v for k, v in extra.items() if v is not None})
    p = subprocess.run([RELAYCTL, *args], env=e, capture_output=True,
                       text=True, timeout=60)
    check("Sanitizer" not in p.stderr and "runtime error" not in p.stderr,
          f"relayctl {args}: sanitizer report:\n{p.stderr}")
    return p.returncode, p.stdout, p.stderr


def need_tls_build(env):
    rc, _, err = ctl(env, "dlq", "ls", **env.tls_vars())
    if "this build has no TLS" in err:
        raise Skip("relay built without TLS (no hiredict): rediss:// "
                   "refused, as documented")


def ctl_fails_with(env, text, what, **extra):
    rc, out, err = ctl(env, "dlq", "ls", **extra)
    check(rc != 0, f"{what}: relayctl failed:\n{out}{err}")
    check(text in err, f"{what}: want {text!r} in:\n{err}")
    return err


@case
def delivery_dlq_and_relayctl_over_tls():
    """relayd consumes, retries and dead-letters over TLS (certificate
    verified against REDIS_TLS_CA_FILE, name 127.0.0.1); relayctl lists
    and replays the DLQ over TLS."""
    with TlsEnv() as env:
        need_tls_build(env)
        env.app("a", [("h", {"kind": ["x"]}),
                      ("bad", {"kind": ["fail"]}, {"retries": 0})],
                env={"FAIL": "bad"})
        d = env.relayd(**env.tls_vars())
        for i in range(30):
            env.xadd({"kind": "x", "k": f"m{i}"})
        env.xadd({"kind": "fail", "k": "f0"})
        env.wait(lambda: all(env.count("end", f"m{i}") == 1
                             for i in range(30)) and env.pel_count() == 0,
                 "every event handled once")
        env.wait(lambda: len(env.dlq()) == 1, "the failure dead-lettered")
        rc, out, err = ctl(env, "dlq", "ls", **env.tls_vars())
        eq(rc, 0, f"relayctl dlq ls over TLS: {err}")
        check("bad" in out, f"the entry listed:\n{out}")
        clients = env.r("CLIENT", "LIST")
        check(f":{env.tls_port} " not in clients or "laddr=" in clients,
              "client list readable")
        d.stop()


@case
def schedules_over_tls():
    """A cron schedule is published and run over TLS: the publisher's
    marker and XADD and the occurrence's dispatch take the same rediss://
    connection as events (virtual schedule clock, a minute a second)."""
    with TlsEnv() as env:
        need_tls_build(env)
        d = os.path.join(env.apps_dir, "s")
        os.makedirs(d)
        with open(os.path.join(d, "tick.sh"), "w") as f:
            f.write('#!/bin/sh\ncat > /dev/null\n'
                    'echo "$RELAY_HANDLER" >> "$OUT"\n')
        os.chmod(os.path.join(d, "tick.sh"), 0o755)
        env.app("s", [], raw=(
            "runtime: exec\ncommand: [./tick.sh]\n"
            f"env:\n  OUT: \"{env.out}\"\n"
            "schedules:\n  - name: tick\n    handler: tick\n"
            "    cron: \"* * * * *\"\n"))
        v0 = 1772352030  # 2026-03-01T08:00:30Z
        clock = f"{v0}:{int(time.time())}:60"
        rd = env.relayd(RELAY_TEST_SCHEDULE_CLOCK=clock, **env.tls_vars())
        env.wait(lambda: os.path.exists(env.out) and
                 open(env.out).read().count("tick") >= 3,
                 "three occurrences ran over TLS")
        rd.stop()
        occ = [f for _, f in env.r("XRANGE", env.stream, "-", "+")
               if "relay.schedule" in dict(zip(f[::2], f[1::2]))["event"]]
        check(len(occ) >= 3, f"occurrences published: {len(occ)}")
        eq(env.pel_count(), 0, "every occurrence acknowledged")


@case
def system_trust_store_and_verify_off():
    """Without REDIS_TLS_CA_FILE the system trust store decides
    (SSL_CERT_FILE names it here); REDIS_TLS_VERIFY=off connects to an
    untrusted server and relayd warns."""
    with TlsEnv() as env:
        need_tls_build(env)
        rc, _, err = ctl(env, "dlq", "ls",
                         SSL_CERT_FILE=f"{env.certs}/ca.pem")
        eq(rc, 0, f"trusted through SSL_CERT_FILE: {err}")
        rc, _, err = ctl(env, "dlq", "ls", REDIS_TLS_VERIFY="off")
        eq(rc, 0, f"verification off: {err}")
        env.app("a", [("h", {"kind": ["x"]})])
        d = env.relayd(REDIS_TLS_VERIFY="off")
        env.xadd({"kind": "x", "k": "v1"})
        env.wait(lambda: env.count("end", "v1") == 1, "handled")
        check("RELAY-REDIS13" in d.log() and "verification is OFF"
              in d.log(), f"relayd warns:\n{d.log_tail()}")
        d.stop()
        d2 = env.relayd(name="bad", start=False, REDIS_TLS_VERIFY="maybe")
        d2.start(wait_ready=False)
        eq(d2.wait(), 1, "REDIS_TLS_VERIFY=maybe refused")
        check("REDIS_TLS_VERIFY" in d2.log(), "names the variable")


@case
def mutual_tls():
    """A server that requires client certificates: without one the
    handshake is refused (the error says a client certificate may be
    needed); with REDIS_TLS_CERT_FILE/KEY_FILE relayctl and relayd work;
    a certificate without its key is refused at once."""
    with TlsEnv(auth_clients="yes") as env:
        need_tls_build_mtls = ctl(env, "dlq", "ls", **env.tls_vars())[2]
        if "this build has no TLS" in need_tls_build_mtls:
            raise Skip("relay built without TLS")
        ctl_fails_with(env, "client certificate", "no client cert",
                       **env.tls_vars())
        c = env.certs
        mt = env.tls_vars(REDIS_TLS_CERT_FILE=f"{c}/client.pem",
                          REDIS_TLS_KEY_FILE=f"{c}/client.key")
        rc, _, err = ctl(env, "dlq", "ls", **mt)
        eq(rc, 0, f"with a client certificate: {err}")
        ctl_fails_with(env, "needs its key", "cert without key",
                       **env.tls_vars(
                           REDIS_TLS_CERT_FILE=f"{c}/client.pem"))
        ctl_fails_with(env, f"{c}/nope.pem", "unreadable CA file",
                       REDIS_TLS_CA_FILE=f"{c}/nope.pem")
        env.app("a", [("h", {"kind": ["x"]})])
        d = env.relayd(**mt)
        env.xadd({"kind": "x", "k": "mt1"})
        env.wait(lambda: env.count("end", "mt1") == 1, "handled over mTLS")
        d.stop()


@case
def certificate_errors_say_what_is_wrong():
    """Not trusted, name mismatch, expired: each error says which; relayd
    logs the same words."""
    with TlsEnv() as env:
        need_tls_build(env)
        ctl_fails_with(env, "certificate is not trusted", "untrusted",
                       SSL_CERT_FILE="/nonexistent")
        ctl_fails_with(env, "does not match the name elsewhere.test",
                       "name mismatch",
                       **env.tls_vars(REDIS_TLS_SERVER_NAME="elsewhere.test"))
        # The server now shows a certificate for another name.
        c = env.certs
        env.r("CONFIG", "SET", "tls-cert-file", f"{c}/other.pem")
        ctl_fails_with(env, "does not match the name 127.0.0.1",
                       "name mismatch (IP)", **env.tls_vars())
        rc, _, err = ctl(env, "dlq", "ls", **env.tls_vars(
            REDIS_TLS_SERVER_NAME="elsewhere.test"))
        eq(rc, 0, f"REDIS_TLS_SERVER_NAME fixes it: {err}")
        time.sleep(1.1)  # expired.pem's notAfter was its creation
        env.r("CONFIG", "SET", "tls-cert-file", f"{c}/expired.pem")
        ctl_fails_with(env, "certificate has expired", "expired",
                       **env.tls_vars())
        env.app("a", [("h", {"kind": ["x"]})])
        d = env.relayd(start=False, **env.tls_vars())
        d.start(wait_ready=False)
        env.wait(lambda: "certificate has expired" in d.log(),
                 "relayd says the certificate expired")
        d.stop()


@case
def a_subject_cn_is_not_a_name():
    """A certificate whose only name is its subject's CN (no
    subjectAltName) is refused: the SAN must name the host (issue 40;
    OpenSSL would fall back to the CN)."""
    with TlsEnv() as env:
        need_tls_build(env)
        rc, _, err = ctl(env, "dlq", "ls", **env.tls_vars(
            REDIS_TLS_SERVER_NAME="localhost"))
        eq(rc, 0, f"the SAN certificate names localhost: {err}")
        env.r("CONFIG", "SET", "tls-cert-file", f"{env.certs}/cnonly.pem")
        ctl_fails_with(env, "does not match the name localhost",
                       "CN only", **env.tls_vars(
                           REDIS_TLS_SERVER_NAME="localhost"))


@case
def wrong_port_or_scheme_says_so():
    """redis:// to the TLS port, and rediss:// to the plain port: the
    error says which."""
    with TlsEnv() as env:
        need_tls_build(env)
        ctl_fails_with(env, "a TLS port? use rediss://",
                       "plain text to the TLS port",
                       uri=f"redis://127.0.0.1:{env.tls_port}")
        ctl_fails_with(env, "does not speak TLS on this port",
                       "TLS to the plain port",
                       uri=f"rediss://127.0.0.1:{env.plain_port}",
                       **env.tls_vars())


@case
def passwords_over_tls_are_not_printed():
    """rediss:// with a password: refused forms and a failing handshake
    never show it (relayd and relayctl)."""
    with TlsEnv() as env:
        need_tls_build(env)
        uri = f"rediss://default:{SECRET}@127.0.0.1:{env.tls_port}"
        rc, out, err = ctl(env, "dlq", "ls", uri=uri,
                           SSL_CERT_FILE="/nonexistent")
        check(rc != 0 and SECRET not in out + err,
              f"relayctl hides the password:\n{err}")
        d = env.relayd(start=False, REDIS_URI=uri,
                       SSL_CERT_FILE="/nonexistent")
        d.start(wait_ready=False)
        env.wait(lambda: "not trusted" in d.log(), "relayd logs why")
        d.stop()
        check(SECRET not in d.log(), "relayd hides the password")
        check("default:***@127.0.0.1" in d.log(), "redacted URI logged")


if __name__ == "__main__":
    sys.exit(run_cases())
