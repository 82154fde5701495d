#!/usr/bin/env python3
"""relayd end to end with warm parents (doc/sandbox.md, "Warm sandboxes"):
python3 handlers in the bwrap sandbox start warm by default, each
invocation one-shot; RELAY_WARM=0 and `warm: false` keep them cold; a
template edit starts a new generation; kill -9 of relayd leaves no warm
sandbox behind; the metrics count warm and cold starts.

usage: test_warm.py RELAYD
"""
import os
import shutil
import signal
import subprocess
import sys
import time

from harness import (Env, Skip, case, check, eq, free_port, metrics,
                     run_cases)

HANDLER = """import os
seen = 0
def h(event):
    global seen
    seen += 1
    print("seen", seen, event["k"], sorted(os.listdir("/tmp")))
    open("/tmp/mark", "w").write(event["k"])
"""


def bwrap_or_skip():
    if not shutil.which("bwrap") or not shutil.which("python3"):
        raise Skip("bwrap or python3 not installed")
    probe = subprocess.run(["bwrap", "--ro-bind", "/", "/", "--unshare-all",
                            "true"], capture_output=True)
    if probe.returncode != 0:
        raise Skip("bwrap cannot create namespaces here")


def py_app(env, name="py", extra=""):
    d = os.path.join(env.apps_dir, name)
    os.makedirs(d, exist_ok=True)
    os.chmod(env.dir, 0o755)
    os.chmod(env.apps_dir, 0o755)
    os.chmod(d, 0o755)
    with open(os.path.join(d, "mod.py"), "w") as f:
        f.write(HANDLER)
    os.chmod(os.path.join(d, "mod.py"), 0o644)
    env.app(name, [], raw="runtime: python3\n" + extra +
            "events:\n  - handler: mod.h\n    pattern: {kind: [x]}\n")


def ppid(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def descends(pid, root):
    for _ in range(16):
        if pid == root:
            return True
        if pid <= 1:
            return False
        pid = ppid(pid)
    return False


def _is_server_cmd(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read()
    except OSError:
        return False
    return cmd.startswith(b"python3\0") and \
        b"relay-bootstrap.py\0--serve" in cmd


def serve_processes(root):
    """Warm parents (the python3 server, not its invocation slots, which
    are its forks) under relayd @root."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or not _is_server_cmd(pid):
            continue
        if descends(int(pid), root) and \
                not _is_server_cmd(ppid(int(pid))):
            out.append(int(pid))
    return out


def start(env, **vars):
    port = free_port()
    d = env.relayd(start=False, RELAY_SANDBOX="bwrap",
                   METRICS_ADDR=f"127.0.0.1:{port}", **vars)
    d.start_sandboxed()
    return d, port


def parent_ready(env, port, app="py"):
    env.wait(lambda: metrics(port).get(
        f'relay_warm_parents{{app="{app}",state="ready"}}') == 1,
        "a ready warm parent", timeout=30)


def run_events(env, d, keys):
    ids = [env.xadd({"kind": "x", "k": k}) for k in keys]
    env.wait(lambda: env.pel_count() == 0 and
             all(env.inv(i).get("py/mod.h") == "ok" for i in ids),
             "handled and acknowledged", timeout=60)
    return ids


@case
def warm_by_default_and_one_shot():
    bwrap_or_skip()
    with Env() as env:
        py_app(env)
        d, port = start(env)
        run_events(env, d, ["a"])
        parent_ready(env, port)  # it starts with the first event
        run_events(env, d, ["b", "c", "d"])
        log = d.log()
        for k in "abcd":
            check(f"stdout: seen 1 {k} []" in log, f"one-shot run {k}")
        env.wait(lambda: metrics(port).get(
            'relay_handler_starts_total{path="warm"}', 0) >= 3,
            "warm starts counted", timeout=30)
        m = metrics(port)
        check(m.get('relay_handler_start_seconds_count{path="warm"}', 0)
              >= 3, "warm start latency histogram")
        check(m.get('relay_handler_start_seconds_bucket{path="warm",'
                    'le="+Inf"}', 0) >= 3, "histogram +Inf bucket")
        check(m.get("relay_warm_parents_memory_bytes", 0) > 0,
              "parent memory reported")
        check(serve_processes(d.proc.pid), "a warm parent runs")
        # kill -9: bwrap --die-with-parent takes the sandbox along.
        parents = serve_processes(d.proc.pid)
        d.kill9()
        deadline = time.monotonic() + 5
        while any(os.path.exists(f"/proc/{p}") for p in parents) and \
                time.monotonic() < deadline:
            time.sleep(0.05)
        eq([p for p in parents if os.path.exists(f"/proc/{p}")], [],
           "no warm sandbox left after kill -9")


@case
def load_failure_is_the_reason():
    # A handler that cannot be loaded fails like any other (retried, then
    # dead-lettered), with the error's first line as the reason, warm or
    # cold.
    bwrap_or_skip()
    for warm in ("1", "0"):
        with Env() as env:
            py_app(env)
            env.app("py", [], raw="runtime: python3\nevents:\n" +
                    "".join(f"  - handler: {h}\n    pattern: {{kind: [x]}}"
                            "\n    retries: 0\n"
                            for h in ("nomod.h", "mod.nosuch")))
            r, _ = start(env, RELAY_WARM=warm)
            env.xadd({"kind": "x", "k": "a"})
            env.wait(lambda: len(env.dlq()) == 2, "two dead letters",
                     timeout=60)
            why = {
                "nomod.h": "ModuleNotFoundError: No module named 'nomod'",
                "mod.nosuch": "AttributeError: module 'mod' has no "
                              "attribute 'nosuch'"}
            for e in env.dlq():
                eq(e["reason"], f'invocation exhausted: app "py" handler '
                   f'"{e["handler"]}" exhausted after 1 handler attempts: '
                   + why[e["handler"]], f"RELAY_WARM={warm} reason")
            log = [ln for ln in r.log().splitlines() if "stderr:" not in ln]
            for h, text in why.items():
                check(any(text in ln for ln in log),
                      f"RELAY_WARM={warm}: {h}'s reason logged")
            r.stop()


@case
def warm_off_by_env_and_by_template():
    bwrap_or_skip()
    with Env() as env:
        py_app(env)
        d, port = start(env, RELAY_WARM="0")
        run_events(env, d, ["a", "b"])
        m = metrics(port)
        eq(m.get('relay_handler_starts_total{path="warm"}'), 0.0,
           "no warm start with RELAY_WARM=0")
        eq(serve_processes(d.proc.pid), [], "no warm parent")
        d.stop()
    with Env() as env:
        py_app(env, extra="warm: false\n")
        d, port = start(env)
        run_events(env, d, ["a"])
        time.sleep(0.3)
        run_events(env, d, ["b"])
        m = metrics(port)
        eq(m.get('relay_handler_starts_total{path="warm"}'), 0.0,
           "no warm start for warm: false")
        d.stop()


@case
def template_edit_starts_a_new_generation():
    bwrap_or_skip()
    with Env() as env:
        py_app(env)
        d, port = start(env)
        run_events(env, d, ["a"])
        parent_ready(env, port)
        before = serve_processes(d.proc.pid)
        check(len(before) == 1, "one warm parent")
        # An edited template (same handler) is a new generation.
        py_app(env, extra="concurrency: 3\n")
        env.wait(lambda: "apps reloaded" in d.log(), "reloaded",
                 timeout=30)
        time.sleep(0.5)
        run_events(env, d, ["c"])
        env.wait(lambda: serve_processes(d.proc.pid) and
                 serve_processes(d.proc.pid) != before, "a new parent", timeout=30)
        parent_ready(env, port)   # the new one (the old one is gone)
        run_events(env, d, ["d"])
        after = serve_processes(d.proc.pid)
        check(len(after) == 1 and after != before,
              f"the old parent retired, a new one serves: {before} "
              f"-> {after}")
        check("stdout: seen 1 d []" in d.log(), "new generation one-shot")
        d.stop()
        w = d.stats_file()["warm"]
        check(w["warm_starts"] >= 1 and w["cold_starts"] >= 2,
              f"stats file warm object: {w}")
        eq(sorted(w["failures"]), ["cap", "crashed", "fork", "spawn",
                                   "unsupported", "wedged"],
           "failure reasons in the stats file")


@case
def removed_app_retires_its_parent():
    bwrap_or_skip()
    with Env() as env:
        py_app(env)
        py_app(env, name="other")
        d, port = start(env)
        run_events(env, d, ["a"])
        parent_ready(env, port, "py")
        parent_ready(env, port, "other")   # the event matched both
        eq(len(serve_processes(d.proc.pid)), 2, "two warm parents")
        shutil.rmtree(os.path.join(env.apps_dir, "py"))
        env.wait(lambda: metrics(port).get(
            'relay_warm_parents{app="py",state="ready"}') is None,
            "the removed app's parent retired", timeout=30)
        env.wait(lambda: len(serve_processes(d.proc.pid)) == 1,
                 "its process gone, the other app's kept", timeout=10)
        d.stop()


if __name__ == "__main__":
    sys.exit(run_cases())
