#!/usr/bin/env python3
"""relayd black-box tests: what a newcomer's first hour tripped over
(issue 41): an app whose new template is invalid is "stale" (it serves
its previous version) everywhere an operator looks, a reload says what it
did, and a Redis that cannot be reached is named.

  * `apps` and `relayctl app ls` say stale, with the template's errors;
    `health` counts it (`relayctl health` exit 3, "degraded:"); the stats
    snapshot and /metrics have the gauge relay_apps_stale
    (doc/protocol.md, doc/cli.md L-7 and L-8, doc/operations.md);
  * SIGHUP with nothing changed logs one RELAYD-APP09 line with the count;
  * relayctl's and relayd --check's Redis errors name the address.

usage: test_firsthour.py RELAYD RELAYCTL
"""
import json
import os
import re
import signal
import subprocess
import sys

from harness import (RELAYD, Env, case, check, eq, free_port, have_metrics,
                     metrics, run_cases, wait_for)

RELAYCTL = os.environ.get("RELAYCTL") or (sys.argv[2] if len(sys.argv) > 2
                                          else None)

BROKEN = ("runtime: exec\ncommand: [./handler.sh]\nevents:\n"
          "  - handler: h\n    pattern: {kind: [}\n")


def ctl(d, *args, extra=None):
    env = {k: v for k, v in os.environ.items()
           if k.startswith(("ASAN_", "UBSAN_", "LSAN_", "PATH"))}
    for k in ("REDIS_URI", "REDIS_STREAM", "REDIS_GROUP", "RELAY_RUN_DIR",
              "RELAY_STATE_DIR", "RELAY_APPS_DIR"):
        env[k] = d.vars[k]
    env.update(extra or {})
    p = subprocess.run([RELAYCTL, *args], env=env, capture_output=True,
                       text=True, errors="replace", timeout=120)
    check("Sanitizer" not in p.stderr, f"relayctl {args}: {p.stderr}")
    return p.returncode, p.stdout, p.stderr


def app_status(d, name):
    for a in d.control({"cmd": "apps"})["apps"]:
        if a["name"] == name:
            return a
    return None


@case
def sighup_with_nothing_changed_logs_the_count():
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]})])
        env.app("b", [("h", {"kind": ["y"]})])
        env.app("c", [("h", {"kind": ["z"]})])
        d = env.relayd()
        d.signal(signal.SIGHUP)
        env.wait(lambda: "RELAYD-APP09" in d.log(), "a reload line")
        line = [ln for ln in d.log().splitlines() if "RELAYD-APP09" in ln]
        eq(len(line), 1, f"one line: {line}")
        check(line[0].endswith("INFO RELAYD-APP09 apps reloaded (SIGHUP): "
                               "3 apps, none changed"), line[0])
        d.stop()


@case
def invalid_template_makes_the_app_stale_everywhere():
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]})])
        env.app("b", [("h", {"kind": ["y"]})])
        port = free_port() if have_metrics() else None
        d = env.relayd(**({"METRICS_ADDR": f"127.0.0.1:{port}"}
                          if port else {}))
        rc, out, err = ctl(d, "health")
        eq(rc, 0, f"healthy first: {out} {err}")
        check("0 stale" in out, out)
        env.app("a", [], raw=BROKEN)
        env.wait(lambda: "RELAYD-APP04" in d.log(), "invalid reload logged")
        a = wait_for(lambda: (app_status(d, "a") or {}).get("status") ==
                     "stale" and app_status(d, "a"), "apps: stale")
        check(a["handlers"] and a["handlers"][0]["handler"] == "h",
              f"the previous version's handlers: {a}")
        check(len(a["errors"]) >= 1 and
              re.search(r"template\.yaml:5:\d+: ", a["errors"][0]),
              f"the template's error, file:line:col: {a}")
        eq(app_status(d, "b")["status"], "ok", "the other app")
        check(re.search(r"RELAYD-APP09 apps reloaded \(inotify\): 2 apps, "
                        r"none changed; 1 stale \(a\)", d.log()),
              d.log_tail(5))
        # relayctl app ls: STATUS stale, the error on stderr; --json.
        rc, out, err = ctl(d, "app", "ls")
        eq(rc, 0, f"app ls: {err}")
        row = [ln.split() for ln in out.splitlines()[1:]]
        eq([(r[0], r[2]) for r in row], [("a", "stale"), ("b", "ready")],
           out)
        check(re.search(r"^relayctl: app ls: a: .*template\.yaml:5:", err,
                        re.M), err)
        rc, out, err = ctl(d, "app", "ls", "--json")
        j = {x["name"]: x for x in json.loads(out)}
        eq(j["a"]["status"], "stale", "--json status")
        eq(j["a"]["errors"], a["errors"], "--json errors")
        eq(j["b"]["errors"], [], "--json: none for b")
        # health: counted, degraded, exit 3.
        h = d.control({"cmd": "health"})
        eq((h["ready"], h["stale_apps"], h["invalid_apps"]), (True, 1, 0),
           "health reply")
        eq([x["app"] for x in h["stale"]], ["a"], "health names it")
        rc, out, err = ctl(d, "health")
        eq(rc, 3, f"degraded: {out} {err}")
        lines = out.splitlines()
        check(lines[0].startswith("degraded: relayd ") and
              "2 apps, 0 invalid, 1 stale)" in lines[0], out)
        check(lines[1].startswith("stale: app a serves its previous "
                                  "version; its template is invalid: ") and
              "template.yaml:5:" in lines[1], out)
        rc, out, err = ctl(d, "health", "--json")
        eq((rc, json.loads(out)["stale_apps"]), (3, 1), "health --json")
        # The stats snapshot (the stats file's body) and /metrics.
        g = d.control({"cmd": "stats"})["stats"]["gauges"]
        eq((g["apps_loaded"], g["apps_invalid"], g["apps_stale"]),
           (2, 0, 1), f"gauges: {g}")
        if port:
            wait_for(lambda: metrics(port).get("relay_apps_stale") == 1.0,
                     "relay_apps_stale 1")
        # Fixed: no longer stale.
        env.app("a", [("h", {"kind": ["x"]})])
        env.wait(lambda: app_status(d, "a")["status"] == "ok", "fixed")
        eq("errors" in app_status(d, "a"), False, "no errors once fixed")
        rc, out, err = ctl(d, "health")
        eq(rc, 0, f"healthy again: {out}")
        eq(d.control({"cmd": "stats"})["stats"]["gauges"]["apps_stale"], 0,
           "gauge back to 0")
        if port:
            wait_for(lambda: metrics(port).get("relay_apps_stale") == 0.0,
                     "relay_apps_stale 0")
        d.stop()


@case
def redis_errors_name_the_address():
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]})])
        port = free_port()
        d = env.relayd(start=False)
        rc, out, err = ctl(d, "dlq", "ls", extra={
            "REDIS_URI": f"redis://127.0.0.1:{port}"})
        eq(rc, 1, f"dlq ls: {err}")
        check(f"cannot connect to Redis at 127.0.0.1:{port}: Connection "
              "refused" in err, err)
        sock = os.path.join(env.dir, "nothing.sock")
        e = {k: v for k, v in os.environ.items()
             if k.startswith(("ASAN_", "UBSAN_", "LSAN_", "PATH"))}
        e.update(d.vars, REDIS_URI=f"unix://{sock}")
        p = subprocess.run([RELAYD, "--check"], env=e, capture_output=True,
                           text=True, timeout=60)
        eq(p.returncode, 1, p.stdout)
        check(f"cannot connect to Redis at unix socket {sock}: No such "
              "file or directory" in p.stdout, p.stdout)


if __name__ == "__main__":
    run_cases()
