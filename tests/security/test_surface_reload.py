#!/usr/bin/env python3
"""Security: loading a huge template does not freeze relayd's loop
(issue 14 item 12, the loading part). A template with tens of thousands
of prefix/suffix alternatives takes a while to parse and compile; relayd
reloads it on a worker thread, so the control socket keeps answering
meanwhile, and the new version serves once built.

argv: relayd relayctl.
"""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "daemon"))
from harness import Env, case, check, eq, run_cases, wait_for  # noqa: E402

APPS = ["big1", "big2", "big3"]
N = 30000  # x2 alternatives: just under the 1 MiB template limit


def b36(i):
    d = "0123456789abcdefghijklmnopqrstuvwxyz"
    return d[i // 1296] + d[i // 36 % 36] + d[i % 36]


def big_template(env, marker, app):
    alts = ", ".join(f"{{prefix: a{b36(i)}}}" for i in range(N))
    sufs = ", ".join(f"{{suffix: z{b36(i)}}}" for i in range(N))
    return ("runtime: exec\ncommand: [./handler.sh]\n"
            f"env:\n  OUT: \"{env.out}\"\n  APP: {app}\n"
            "events:\n"
            f"  - handler: p\n    pattern: {{k: [{alts}]}}\n"
            f"  - handler: s\n    pattern: {{k: [{sufs}]}}\n"
            f"  - handler: {marker}\n    pattern: {{kind: [{marker}]}}\n")


@case
def a_huge_template_reloads_without_freezing_the_loop():
    with Env() as env:
        for a in APPS:
            env.app(a, [("h0", {"kind": ["first"]})])
        d = env.relayd()
        lat = []
        stop = threading.Event()

        def ping():
            while not stop.is_set():
                t0 = time.monotonic()
                d.control({"cmd": "health"})
                lat.append(time.monotonic() - t0)
                time.sleep(0.005)
        th = threading.Thread(target=ping, daemon=True)
        th.start()
        time.sleep(0.3)
        for a in APPS:
            env.app(a, None, raw=big_template(env, "second", a))
        wait_for(lambda: d.log().count("app reloaded") == len(APPS) or
                 "template invalid" in d.log(), "the reloads", 120)
        eq(d.log().count("app reloaded"), len(APPS), d.log_tail())
        time.sleep(0.2)
        stop.set()
        th.join(30)
        worst = max(lat)
        print(f"# worst health latency {worst * 1000:.0f} ms over "
              f"{len(lat)} requests", flush=True)
        # The reload itself takes far longer (two loads of 60,000
        # alternatives per app, three apps: over a second under ASan)
        # than any answer may.
        check(worst < 0.5, f"a health request waited {worst:.2f}s during "
              f"the reload ({len(lat)} requests)")
        apps = d.control({"cmd": "apps"})["apps"]
        for a in apps:
            eq([h["handler"] for h in a["handlers"]], ["p", "s", "second"],
               "the new version serves")
        env.xadd({"kind": "second", "k": "Q1"})
        wait_for(lambda: env.count("end", "Q1") == len(APPS), "it runs")
        d.stop()


sys.exit(run_cases())
