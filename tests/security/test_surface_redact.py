#!/usr/bin/env python3
"""Security: the Redis password never reaches a message (issue 14 item 5),
whatever the form of REDIS_URI: rediss:// and other schemes, no scheme,
a password holding '@', text and JSON logs, relayd and relayctl.

Issue 40 item 8: the OTLP endpoint's userinfo (to the last '@'), query
values and fragment never reach RELAYD-OTLP01.
Issue 40 item 10: /readyz says "redis: auth failed" or "redis:
unreachable", never Redis's own error reply; the detail is logged once.

argv: relayd relayctl.
"""
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "daemon"))
from harness import (Env, case, check, eq, free_port,  # noqa: E402
                     need_metrics, run_cases, wait_for)

RELAYD = sys.argv[1]
RELAYCTL = sys.argv[2]
SECRET = "Sx9-secretPW"


def base_env(uri, **extra):
    env = {k: v for k, v in os.environ.items()
           if k.startswith(("ASAN_", "UBSAN_", "LSAN_", "PATH"))}
    env.update({"REDIS_URI": uri, "REDIS_STREAM": "events",
                "REDIS_GROUP": "relay"})
    env.update(extra)
    return env


# URIs relayd rejects: the error line shows the redacted form.
INVALID = [
    (f"rediss://default:{SECRET}@127.0.0.1:0",
     "rediss://default:***@127.0.0.1:0"),
    (f"rediss://default:{SECRET}@127.0.0.1:1,127.0.0.1/3",
     "rediss://default:***@127.0.0.1:1,127.0.0.1/3"),
    (f"default:{SECRET}@127.0.0.1:6379", "default:***@127.0.0.1:6379"),
    (f"redis://default:{SECRET}@127.0.0.1:notaport",
     "redis://default:***@127.0.0.1:notaport"),
    (f"http://{SECRET}@127.0.0.1:6379", "http://***@127.0.0.1:6379"),
    (f"redis://u:{SECRET}@x@127.0.0.1:nope", "redis://u:***@127.0.0.1:nope"),
    (f"rediss://default:{SECRET}\n@evil:0", "rediss://default:***@evil:0"),
    # Sentinel (issue 26): a bad master name, a missing one, a bad port.
    (f"redis+sentinel://default:{SECRET}@127.0.0.1:1,127.0.0.1:2/bad name",
     "redis+sentinel://default:***@127.0.0.1:1,127.0.0.1:2/bad name"),
    (f"redis+sentinel://{SECRET}@127.0.0.1:26379",
     "redis+sentinel://***@127.0.0.1:26379"),
    (f"redis+sentinel://u:{SECRET}@x@127.0.0.1:0/m",
     "redis+sentinel://u:***@127.0.0.1:0/m"),
]


@case
def invalid_uris_are_redacted_in_relayd_errors():
    for fmt in ("text", "json"):
        for uri, shown in INVALID:
            p = subprocess.run([RELAYD], env=base_env(uri, LOG_FORMAT=fmt),
                               capture_output=True, text=True, timeout=60)
            out = p.stdout + p.stderr
            eq(p.returncode, 1, f"{uri!r}: exit status")
            check(SECRET not in out and SECRET[:6] not in out,
                  f"{uri!r}: the password is printed:\n{out}")
            check(shown in out, f"{uri!r}: want {shown!r} in:\n{out}")
            eq(out.count("\n"), 1, f"{uri!r}: one line")


@case
def invalid_uris_are_redacted_in_relayctl_errors():
    for uri, _ in INVALID:
        for args in (["dlq", "ls"], ["dlq", "ls", "--redis", uri]):
            p = subprocess.run([RELAYCTL, *args], env=base_env(uri),
                               capture_output=True, text=True, timeout=60)
            out = p.stdout + p.stderr
            check(p.returncode != 0, f"{uri!r}: relayctl failed")
            check(SECRET[:6] not in out,
                  f"{uri!r}: relayctl prints the password:\n{out}")


@case
def unreachable_redis_with_a_password_is_logged_redacted():
    for fmt in ("text", "json"):
        with Env() as env:
            for i, uri in enumerate((
                    f"redis://default:{SECRET}@127.0.0.1:1",
                    f"redis://:{SECRET}@127.0.0.1:1/0",
                    f"redis://u:{SECRET}@x@127.0.0.1:1",
                    # no sentinel listens: the sentinel's address is
                    # logged, never the master's password
                    f"redis+sentinel://u:{SECRET}@127.0.0.1:1/m")):
                d = env.relayd(name=f"{fmt}{i}", start=False,
                               REDIS_URI=uri, LOG_FORMAT=fmt)
                d.start(wait_ready=False)
                wait_for(lambda: "127.0.0.1:1" in d.log(), "a log line")
                time.sleep(0.5)
                d.stop()
                log = d.log()
                check(log, "relayd wrote something")
                check(SECRET[:6] not in log,
                      f"{uri!r} ({fmt}): the password is logged:\n{log}")


# OTLP endpoints to a closed port: (endpoint, what the log shows).
OTLP_SECRETS = ["Pw7tail", "Qk7key", "Fr9frag", "Us3r"]


def otlp_endpoints(port):
    host = f"127.0.0.1:{port}"
    return [
        (f"https://u:p@ss{OTLP_SECRETS[0]}@{host}/v1/traces"
         f"?api_key={OTLP_SECRETS[1]}&x=1",
         f"https://{host}/v1/traces?api_key=<redacted>&x=<redacted>"),
        (f"http://{OTLP_SECRETS[3]}:a@b@{OTLP_SECRETS[0]}@{host}/v1/traces"
         f"?{OTLP_SECRETS[1]}&token={OTLP_SECRETS[1]}#{OTLP_SECRETS[2]}",
         f"http://{host}/v1/traces?<redacted>&token=<redacted>"
         "#<redacted>"),
        # no scheme: curl reads it as http://
        (f"{OTLP_SECRETS[3]}:{OTLP_SECRETS[0]}@{host}/v1/traces",
         f"{host}/v1/traces"),
    ]


@case
def otlp_endpoint_secrets_are_not_logged():
    port = free_port()  # nothing listens: every export fails
    for fmt in ("text", "json"):
        for i, (endpoint, shown) in enumerate(otlp_endpoints(port)):
            if fmt == "json" and i:
                continue
            with Env() as env:
                env.app("a", [("h", {"kind": ["x"]})])
                d = env.relayd(name=f"o{fmt}{i}", LOG_FORMAT=fmt,
                               OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=endpoint,
                               OTEL_BSP_SCHEDULE_DELAY="20",
                               OTEL_EXPORTER_OTLP_TIMEOUT="2000")
                env.xadd({"kind": "x", "k": "o1"})
                env.wait(lambda: "RELAYD-OTLP01" in d.log(),
                         "the export failure logged")
                d.stop()
                log = d.log()
                line = [ln for ln in log.splitlines()
                        if "RELAYD-OTLP01" in ln][0]
                for secret in OTLP_SECRETS + ["p@ss", "u:p", "a@b"]:
                    check(secret not in log,
                          f"{endpoint!r} ({fmt}): {secret!r} logged:\n"
                          f"{line}")
                check(f"to {shown} failed" in line,
                      f"{endpoint!r} ({fmt}): want {shown!r} in:\n{line}")


def http_get(port, path):
    try:
        r = urllib.request.urlopen(f"http://127.0.0.1:{port}{path}",
                                   timeout=10)
        return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


@case
def readyz_does_not_quote_redis_errors():
    need_metrics()
    right, wrong = "Rt4-rightPW", "Wr0-wrongPW"
    with Env(port=free_port(), password=right) as env:
        env.app("a", [("h", {"kind": ["x"]})])
        for name, uri, want, detail in (
                ("wrongpw", f"redis://:{wrong}@127.0.0.1:{env.port}",
                 "redis: auth failed", "WRONGPASS"),
                ("nopw", f"redis://127.0.0.1:{env.port}",
                 "redis: auth failed", "NOAUTH"),
                ("down", f"redis://127.0.0.1:{free_port()}",
                 "redis: unreachable", "refused")):
            mport = free_port()
            d = env.relayd(name=name, start=False, REDIS_URI=uri,
                           METRICS_ADDR=f"127.0.0.1:{mport}")
            d.start(wait_ready=False)
            env.wait(lambda: http_get(mport, "/readyz") ==
                     (503, f"not ready: {want}\n"), f"{name}: /readyz")
            time.sleep(2.5)  # a few publications and reconnects later
            for _ in range(5):
                code, body = http_get(mport, "/readyz")
                eq((code, body), (503, f"not ready: {want}\n"),
                   f"{name}: /readyz")
            d.stop()
            log = d.log()
            met = [ln for ln in log.splitlines() if "RELAYD-MET02" in ln]
            eq(len(met), 1, f"{name}: the detail once:\n{log}")
            check(detail in met[0] and want in met[0],
                  f"{name}: want {detail!r} in:\n{met[0]}")
            for pw in (right, wrong):
                check(pw not in log, f"{name}: a password logged")


sys.exit(run_cases())
