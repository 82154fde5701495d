#!/usr/bin/env python3
"""A host uid per app (RELAY_SANDBOX_UIDS, doc/sandbox.md "Host user"),
end to end against the real relayd in the bwrap sandbox, as root (suite
'security'; skipped elsewhere).

With one shared sandbox user every app's sandboxes belong to the same
host uid, which owns their user namespaces: a process of that uid reads
any handler's /proc/PID/environ (the template's env: values) and
PTRACE_ATTACHes any warm parent. With a uid per app, a process of app
A's uid can do neither to app B's.

usage: test_sec_uids.py RELAYD RELAYCTL
"""
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "daemon"))
from harness import (RELAYD, Env, Skip, case, check, eq,  # noqa: E402
                     run_cases)

# Far above any uid of a Debian host (no passwd or group entry in it),
# below bubblewrap's limit (2^31 - 1).
RANGE_LO, RANGE_HI = 1900000000, 1900000063

HANDLER = """import time
def h(event):
    print("running", flush=True)
    time.sleep(float(event.get("s", 0)))
"""

# Run as app A's uid: read each environ, PTRACE_ATTACH each target (and
# detach again if it worked); one JSON object of what happened.
PROBE = r"""
import ctypes, errno, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_void_p,
                        ctypes.c_void_p]
out = {"uid": os.getuid(), "environ": {}, "attach": {}}
read, attach = sys.argv[1].split(","), sys.argv[2].split(",")
for pid in read:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            data = f.read()
        out["environ"][pid] = "read: " + (
            "secret" if b"UIDTEST_SECRET=" in data else "other")
    except OSError as e:
        out["environ"][pid] = errno.errorcode.get(e.errno, str(e.errno))
for pid in attach:
    if libc.ptrace(16, int(pid), None, None) == 0:     # PTRACE_ATTACH
        os.waitpid(int(pid), 0x40000000)                 # __WALL
        libc.ptrace(17, int(pid), None, None)            # PTRACE_DETACH
        out["attach"][pid] = "attached"
    else:
        e = ctypes.get_errno()
        out["attach"][pid] = errno.errorcode.get(e, str(e))
print(json.dumps(out))
"""


def need_root_bwrap():
    if os.geteuid() != 0:
        raise Skip("needs root: only a root relayd switches host uids")
    for tool in ("bwrap", "python3", "setpriv"):
        if not shutil.which(tool):
            raise Skip(f"{tool} not installed")
    probe = subprocess.run(["bwrap", "--ro-bind", "/", "/", "--unshare-all",
                            "true"], capture_output=True)
    if probe.returncode != 0:
        raise Skip("bwrap cannot create namespaces here")


def py_app(env, name, kind):
    d = os.path.join(env.apps_dir, name)
    os.makedirs(d, exist_ok=True)
    for p in (env.dir, env.apps_dir, d):
        os.chmod(p, 0o755)
    with open(os.path.join(d, "mod.py"), "w") as f:
        f.write(HANDLER)
    os.chmod(os.path.join(d, "mod.py"), 0o644)
    env.app(name, [], raw="runtime: python3\n"
            "env:\n"
            f"  UIDTEST_APP: {name}\n"
            f"  UIDTEST_SECRET: secret-of-{name}\n"
            "events:\n  - handler: mod.h\n"
            f"    pattern: {{kind: [{kind}]}}\n"
            "    timeout: 60s\n")


def read(path, mode="r"):
    try:
        with open(path, mode) as f:
            return f.read()
    except OSError:
        return None


def ppid(pid):
    st = read(f"/proc/{pid}/stat")
    try:
        return int(st.rsplit(")", 1)[1].split()[1])
    except (AttributeError, ValueError, IndexError):
        return 0


def descends(pid, root):
    for _ in range(20):
        if pid == root:
            return True
        if pid <= 1:
            return False
        pid = ppid(pid)
    return False


def host_uid(pid):
    for line in (read(f"/proc/{pid}/status") or "").splitlines():
        if line.startswith("Uid:"):
            return int(line.split()[1])
    return None


def app_procs(root, app):
    """The python3 processes of @app's sandboxes under relayd @root: pid ->
    whether it is a warm parent (the server, not one of its forks)."""
    out = {}
    mark = f"UIDTEST_APP={app}".encode()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        cmd = read(f"/proc/{pid}/cmdline", "rb") or b""
        envb = read(f"/proc/{pid}/environ", "rb") or b""
        if not cmd.startswith(b"python3\0") or mark not in envb.split(b"\0"):
            continue
        if not descends(int(pid), root):
            continue
        # The server's parent is bwrap; its forks' is the server.
        parent_cmd = read(f"/proc/{ppid(int(pid))}/cmdline", "rb") or b""
        out[int(pid)] = b"--serve" in cmd and \
            not parent_cmd.startswith(b"python3\0")
    return out


@case
def app_uid_cannot_read_or_trace_another_apps_sandbox():
    need_root_bwrap()
    with Env() as env:
        py_app(env, "appa", "a")
        py_app(env, "appb", "b")
        d = env.relayd(start=False, RELAY_SANDBOX="bwrap",
                       RELAY_SANDBOX_UIDS=f"{RANGE_LO}-{RANGE_HI}")
        d.start_sandboxed()
        # A first event each starts the app's warm parent; then a long
        # one each keeps a handler running.
        first = [env.xadd({"kind": k}) for k in ("a", "b")]
        env.wait(lambda: env.inv(first[0]).get("appa/mod.h") == "ok" and
                 env.inv(first[1]).get("appb/mod.h") == "ok",
                 "first invocations done", timeout=60)
        env.wait(lambda: any(app_procs(d.proc.pid, "appa").values()) and
                 any(app_procs(d.proc.pid, "appb").values()),
                 "a warm parent per app", timeout=60)
        for k in ("a", "b"):
            env.xadd({"kind": k, "s": "20"})
        env.wait(lambda: all(len(app_procs(d.proc.pid, a)) >= 2
                             for a in ("appa", "appb")),
                 "a long handler per app beside its warm parent",
                 timeout=60)
        pa, pb = app_procs(d.proc.pid, "appa"), app_procs(d.proc.pid, "appb")
        ua = {host_uid(p) for p in pa}
        ub = {host_uid(p) for p in pb}
        parents_b = [p for p, server in pb.items() if server]
        probe = subprocess.run(
            ["setpriv", f"--reuid={min(ua)}", f"--regid={min(ua)}",
             "--clear-groups", "python3", "-c", PROBE,
             ",".join(map(str, pb)), ",".join(map(str, parents_b))],
            capture_output=True, text=True, timeout=60)
        eq(probe.returncode, 0, f"probe ran: {probe.stderr}")
        got = json.loads(probe.stdout)
        # What a process of app A's uid got from app B's sandbox: first,
        # so that a failure shows it.
        # A fork of B's server may be gone by now (ENOENT); B's warm
        # parent and its long handler are not.
        gone = {p for p, r in got["environ"].items() if r == "ENOENT" and
                not os.path.exists(f"/proc/{p}")}
        eq({p: r for p, r in got["environ"].items() if p not in gone},
           {str(p): "EACCES" for p in pb if str(p) not in gone},
           f"app A's uid {got['uid']} reads no environ of app B's "
           f"processes {sorted(pb)}")
        check(len(pb) - len(gone) >= 2, f"B's processes stayed: {gone}")
        eq(got["attach"], {str(p): "EPERM" for p in parents_b},
           "app A's uid cannot attach to app B's warm parent")
        eq(len(ua), 1, f"app A's processes have one host uid: {ua}")
        eq(len(ub), 1, f"app B's processes have one host uid: {ub}")
        check(ua != ub, f"a host uid per app: {ua} {ub}")
        for u in ua | ub:
            check(RANGE_LO <= u <= RANGE_HI, f"uid {u} is of the range")
        for app, uids in (("appa", ua), ("appb", ub)):
            check(f"RELAY-RT10 runtime: app {app} runs as host uid "
                  f"{min(uids)}" in d.log(), d.log_tail(20))
        check("RELAYD-SBX01" not in d.log(), "no warning about nobody")
        d.stop(timeout=90)       # the long handlers finish first


REFUSE_NOBODY = (
    "relayd: RELAY_SANDBOX_USER: not set, and a root relayd will not run "
    "handlers as the shared user nobody (uid 65534) by default: set "
    "RELAY_SANDBOX_UIDS=LO-HI (a uid per app), "
    "RELAY_SANDBOX_USER=relay-sandbox (the dedicated user meson install "
    "provides; systemd-sysusers creates it), or RELAY_SANDBOX_USER=nobody "
    "to accept sharing it (doc/sandbox.md, Host user)")


@case
def default_nobody_is_refused_as_root():
    """As root under bwrap with neither RELAY_SANDBOX_USER (unset or
    empty) nor RELAY_SANDBOX_UIDS, relayd and relayd --check exit 1 with
    one message naming the three ways out; RELAY_SANDBOX=none is
    unaffected, and so is a uid range (no RELAYD-SBX01)."""
    if os.geteuid() != 0:
        raise Skip("needs root: only a root relayd refuses nobody")
    with Env() as env:
        py_app(env, "appa", "a")
        for user in (None, ""):
            d = env.relayd(name=f"r-{user!r}", start=False,
                           RELAY_SANDBOX="bwrap", RELAY_SANDBOX_USER=user)
            d.start(wait_ready=False)
            eq(d.wait(), 1, f"RELAY_SANDBOX_USER={user!r}: exit status")
            d.expect_running = False
            check(REFUSE_NOBODY + "\n" in d.log(), d.log_tail(5))
            eq(d.log().count("relayd: "), 1, "one message")
            envv = {k: v for k, v in os.environ.items()
                    if k.startswith(("ASAN_", "UBSAN_", "LSAN_", "PATH"))}
            envv.update({k: v for k, v in d.vars.items()
                         if k != "RELAY_SANDBOX_USER"})
            if user is not None:
                envv["RELAY_SANDBOX_USER"] = user
            p = subprocess.run([RELAYD, "--check"], env=envv,
                               capture_output=True, text=True, timeout=60)
            eq(p.returncode, 1, "--check: exit status " + p.stderr)
            check(REFUSE_NOBODY in p.stderr, p.stderr)
        # RELAY_SANDBOX=none: nothing is refused (handlers keep root's uid,
        # the documented choice of that setting).
        d = env.relayd(name="r-none", start=False, RELAY_SANDBOX="none",
                       RELAY_SANDBOX_USER=None)
        d.start()
        check("RELAY_SANDBOX_USER: not set" not in d.log(), d.log_tail(5))
        d.stop()
        need_root_bwrap()
        # A uid per app: starts, and says nothing about nobody.
        d = env.relayd(name="r-uids", start=False, RELAY_SANDBOX="bwrap",
                       RELAY_SANDBOX_USER=None,
                       RELAY_SANDBOX_UIDS=f"{RANGE_LO}-{RANGE_HI}")
        d.start_sandboxed()
        check("RELAYD-SBX01" not in d.log(), d.log_tail(20))
        check("RELAY_SANDBOX_USER: not set" not in d.log(), d.log_tail(5))
        d.stop()


@case
def shared_nobody_is_warned_about():
    """As root with RELAY_SANDBOX_USER=nobody set explicitly (the default
    is refused), relayd starts and says that uid 65534 is shared and what
    to set (a stable log id)."""
    need_root_bwrap()
    with Env() as env:
        py_app(env, "appa", "a")
        d = env.relayd(start=False, RELAY_SANDBOX="bwrap",
                       RELAY_SANDBOX_USER="nobody")
        d.start_sandboxed()
        check("WARN RELAYD-SBX01 handlers run as host uid 65534 (nobody)"
              in d.log(), d.log_tail(20))
        eq(d.log().count("RELAYD-SBX01"), 1, "warned once")
        d.stop()


@case
def too_small_range_is_refused_naming_the_variable():
    """Fewer uids than apps: relayd exits 1 at start, and a reload that
    would need more keeps the loaded apps, both naming RELAY_SANDBOX_UIDS.
    A malformed value is refused whether root or not."""
    with Env() as env:
        py_app(env, "appa", "a")
        d = env.relayd(start=False, RELAY_SANDBOX="none",
                       RELAY_SANDBOX_UIDS="100-x")
        d.start(wait_ready=False)
        eq(d.wait(), 1, "malformed: exit status")
        d.expect_running = False
        check('relayd: RELAY_SANDBOX_UIDS: invalid value "100-x": expected '
              'LO-HI, two uids such as 100000-165535' in d.log(),
              d.log_tail(5))
        for bad, why in (("0-10", "LO must be at least 1 (uid 0 is root)"),
                         ("20-10", "LO must not be above HI"),
                         ("100000-2147483648", "HI must be at most "
                          "2147483647 (bubblewrap maps no larger uid)"),
                         ("60000-70000", "the range must not hold 65534 "
                          "(nobody, shared with other software)")):
            d2 = env.relayd(name="r-" + bad, start=False,
                            RELAY_SANDBOX="none", RELAY_SANDBOX_UIDS=bad)
            d2.start(wait_ready=False)
            eq(d2.wait(), 1, f"{bad}: exit status")
            d2.expect_running = False
            check(f'RELAY_SANDBOX_UIDS: invalid value "{bad}": {why}' in
                  d2.log(), d2.log_tail(5))
        need_root_bwrap()
        # A range holding a host user: that user's files would be an app's.
        user = next(p for p in pwd.getpwall() if 1 <= p.pw_uid <= 60000)
        d5 = env.relayd(name="r5", start=False, RELAY_SANDBOX="bwrap",
                        RELAY_SANDBOX_UIDS="1-60000")
        d5.start(wait_ready=False)
        eq(d5.wait(), 1, "a host user in the range: exit status")
        d5.expect_running = False
        check("relayd: RELAY_SANDBOX_UIDS: sandbox uid range 1-60000 holds "
              f'uid {user.pw_uid} of user "{user.pw_name}"' in d5.log(),
              d5.log_tail(5))
        py_app(env, "appb", "b")
        lo = RANGE_LO
        d3 = env.relayd(name="r3", start=False, RELAY_SANDBOX="bwrap",
                        RELAY_SANDBOX_UIDS=f"{lo}-{lo}")
        d3.start(wait_ready=False)
        eq(d3.wait(), 1, "one uid for two apps: exit status")
        d3.expect_running = False
        check(f"relayd: RELAY_SANDBOX_UIDS: sandbox uid range {lo}-{lo} has "
              "1 uids, 0 given out, too few for 2 more app(s)" in d3.log(),
              d3.log_tail(5))
        # Two uids, two apps; a third app on reload is refused.
        d4 = env.relayd(name="r4", start=False, RELAY_SANDBOX="bwrap",
                        RELAY_SANDBOX_UIDS=f"{lo}-{lo + 1}")
        d4.start_sandboxed()
        py_app(env, "appc", "c")
        d4.signal(signal.SIGHUP)
        env.wait(lambda: "RELAYD-SBX02" in d4.log(), "reload refused")
        check(f"reload refused: RELAY_SANDBOX_UIDS: sandbox uid range "
              f"{lo}-{lo + 1} has 2 uids, 2 given out, too few for 1 more "
              "app(s); keeping the loaded apps" in d4.log(), d4.log_tail(5))
        d4.stop()


if __name__ == "__main__":
    sys.exit(run_cases())
