#!/usr/bin/env python3
"""Security: the Redis password never reaches a message (issue 14 item 5),
whatever the form of REDIS_URI: rediss:// and other schemes, no scheme,
a password holding '@', text and JSON logs, relayd and relayctl.

argv: relayd relayctl.
"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "daemon"))
from harness import Env, case, check, eq, run_cases, wait_for  # noqa: E402

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


sys.exit(run_cases())
