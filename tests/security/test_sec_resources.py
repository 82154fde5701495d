#!/usr/bin/env python3
"""Resources shared between apps (issue 40, items 1 and 2), end to end
against a real redis-server, the real relayd and the bwrap sandbox
(suite 'security'):

  * a fork bomb fails its own invocation and nothing else: relayd under
    `prlimit --nproc=300`, a hog app forking sleepers, a victim app with
    retries: 0 (default pids ceiling; and a start the kernel refuses is
    left pending, not charged);
  * every tmpfs of a sandbox has a size: /tmp is resources.tmp (64 MiB by
    default), /dev/shm 1 MiB, /dev read-only, cold and warm; handlers run
    with oom_score_adj 1000;
  * a /tmp hog inside relayd's own memory cgroup fails alone (ENOSPC):
    relayd lives, another app's invocation succeeds.

usage: test_sec_resources.py RELAYD RELAYCTL
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "daemon"))
import harness  # noqa: E402
from harness import Env, Skip, case, check, eq, run_cases  # noqa: E402

RELAYD = sys.argv[1] if len(sys.argv) > 1 else "relayd"
RELAYCTL = sys.argv[2] if len(sys.argv) > 2 else "relayctl"


def bwrap_or_skip():
    if os.geteuid() != 0:
        raise Skip("needs root (the sandbox user's process quota)")
    if not shutil.which("bwrap") or not shutil.which("python3"):
        raise Skip("bwrap or python3 not installed")
    probe = subprocess.run(["bwrap", "--ro-bind", "/", "/", "--unshare-all",
                            "true"], capture_output=True)
    if probe.returncode != 0:
        raise Skip("bwrap cannot create namespaces here")


def wrapper(env, name, body):
    """A script that runs relayd after @body (sh); harness.RELAYD is set
    to it for the daemons started next."""
    path = os.path.join(env.dir, name)
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + body + "\n")
    os.chmod(path, 0o755)
    return path


def readable(env):
    os.chmod(env.dir, 0o755)
    os.chmod(env.apps_dir, 0o755)


def raw_app(env, name, text):
    env.app(name, [], raw=text)
    os.chmod(os.path.join(env.apps_dir, name), 0o755)


def exec_app(env, name, argv, extra="", retries=0, timeout="30s"):
    raw_app(env, name, f"runtime: exec\ncommand: {json.dumps(argv)}\n"
            f"{extra}"
            "events:\n  - handler: h\n"
            f"    pattern: {{app: [{name}]}}\n"
            f"    retries: {retries}\n    timeout: {timeout}\n")


def start(env, relayd_path, **vars):
    old = harness.RELAYD
    harness.RELAYD = relayd_path
    try:
        d = env.relayd(start=False, RELAY_SANDBOX="bwrap", **vars)
        d.start_sandboxed()
    finally:
        harness.RELAYD = old
    return d


def dlq_apps(env):
    return [e.get("app") for e in env.dlq()]


# Forks `sleep` until the system says no (or 400 of them), prints how
# many it got, holds them 6 s, exits 1 when it was stopped (limited).
HOG = r"""
import os, subprocess, sys, time
if "noop" in sys.stdin.read():
    sys.exit(0)
kids, limited = [], False
for i in range(400):
    try:
        kids.append(subprocess.Popen(["/usr/bin/sleep", "6"]))
    except OSError as e:
        limited = True
        break
print("hog forked %d limited=%s" % (len(kids), limited), flush=True)
time.sleep(6)
sys.exit(1 if limited else 0)
"""


def hog_started(d):
    m = re.search(r"hog forked (\d+) limited=(\w+)", d.log())
    return m and (int(m.group(1)), m.group(2) == "True")


# The fork-bomb cases' sandbox user: a host uid no other test (and no
# host software) runs processes as, so the sandbox user's process count,
# which RLIMIT_NPROC (prlimit --nproc=300) limits, is the hog's and the
# victim's alone. Under the shared "nobody", a concurrent test's exiting
# sandboxes free slots at random moments: the victim's bwrap then gets
# its namespaces and fails only at its second fork ("Can't fork for pid
# 1"), which is a failure of the victim (the handler could print those
# words itself: doc/sandbox.md), not the refusal these cases test.
FORK_BOMB_UID = "64998"


def fork_bomb_env(env, hog_extra):
    readable(env)
    exec_app(env, "hog", ["/usr/bin/python3", "-c", HOG], hog_extra)
    exec_app(env, "victim", ["/bin/true"])
    return wrapper(env, "relayd-nproc",
                   f'exec prlimit --nproc=300 -- "{RELAYD}"')


def victim_ok(env, d, vid):
    env.wait(lambda: env.inv(vid).get("victim/h") == "ok",
             "the victim's invocation succeeded", timeout=60)
    check("victim" not in dlq_apps(env),
          f"no DLQ entry for the victim: {env.dlq()}")
    m = re.search(r"handler succeeded app=victim handler=h \S+ attempt=(\d+)",
                  d.log())
    check(m, "the victim's success is logged:\n" + d.log_tail(30))
    eq(m.group(1), "1", "the victim's first (and only) attempt")


def fork_bomb_capped(warm):
    """An app without resources.pids is held to the default ceiling (128
    processes a sandbox): its fork loop stops there, its own invocation
    fails, the victim (retries: 0) started during the bomb succeeds at its
    first attempt. Without a default the hog takes the sandbox user's
    whole quota and the victim is dead-lettered."""
    bwrap_or_skip()
    if not os.path.isdir("/sys/fs/cgroup/pids") and \
            not os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
        raise Skip("no cgroup pids controller")
    with Env() as env:
        path = fork_bomb_env(env, "")
        d = start(env, path, RELAY_WARM=warm,
                  RELAY_SANDBOX_USER=FORK_BOMB_UID)
        if "pids:rlimit" in d.log() or "limits rlimit" in d.log():
            raise Skip("no writable cgroup serves pids here")
        if warm == "1":  # the first invocation runs cold
            env.xadd({"app": "hog", "noop": 1})
            env.wait(lambda: "warm parent for app hog ready" in d.log(),
                     "the hog's warm parent", timeout=30)
        env.xadd({"app": "hog"})
        got = env.wait(lambda: hog_started(d), "the hog's fork loop",
                       timeout=30)
        vid = env.xadd({"app": "victim"})
        victim_ok(env, d, vid)
        check(got[1] and got[0] <= 128,
              f"the hog stopped at the default ceiling: {got}")
        env.wait(lambda: "hog" in dlq_apps(env),
                 "the hog's own invocation failed (dead-lettered)",
                 timeout=60)
        env.wait(lambda: env.pel_count() == 0, "both acknowledged")
        if warm == "1":
            check(re.search(r"started hog/h warm", d.log()),
                  "the hog ran warm:\n" + d.log_tail(30))
        d.stop()


@case
def fork_bomb_capped_by_default_pids():
    """A cold sandbox: see fork_bomb_capped()."""
    fork_bomb_capped("0")


@case
def fork_bomb_capped_by_default_pids_warm():
    """A warm exec invocation (relay-warm-exec): see fork_bomb_capped()."""
    fork_bomb_capped("1")


@case
def refused_start_is_not_an_attempt():
    """A hog allowed many processes (resources.pids: 1000) exhausts the
    sandbox user's quota (relayd under prlimit --nproc=300): the victim's
    sandbox cannot be created (EAGAIN). That start is no attempt: the
    invocation stays pending (RELAY-ENG16, relay_handler_starts_refused),
    and once the hog's processes are gone it runs, at attempt 1, and
    succeeds; nothing is dead-lettered for the victim."""
    bwrap_or_skip()
    with Env() as env:
        path = fork_bomb_env(env, "resources:\n  pids: 1000\n")
        d = start(env, path, RELAY_WARM="0",
                  RELAY_SANDBOX_USER=FORK_BOMB_UID)
        env.xadd({"app": "hog"})
        got = env.wait(lambda: hog_started(d), "the hog's fork loop",
                       timeout=30)
        check(got[1], f"the hog hit the quota: {got}")
        vid = env.xadd({"app": "victim"})
        env.wait(lambda: "RELAY-ENG16" in d.log(),
                 "the refused start is logged", timeout=30)
        victim_ok(env, d, vid)
        env.wait(lambda: env.pel_count() == 0, "both acknowledged",
                 timeout=60)
        d.stop()
        st = d.stats_file()
        check(st["counters"].get("starts_refused", 0) >= 1,
              f"starts_refused counted: {st['counters']}")
        check(d.log().count("RELAY-ENG16") <= 3,
              "RELAY-ENG16 once per burst:\n" +
              "\n".join(line for line in d.log().splitlines()
                        if "RELAY-ENG16" in line))


# ---- item 2: tmpfs sizes ---------------------------------------------------

PROBE = r"""
import os
def size(p):
    s = os.statvfs(p)
    return s.f_blocks * s.f_frsize
ro = bool(os.statvfs("/dev").f_flag & os.ST_RDONLY)
adj = open("/proc/self/oom_score_adj").read().strip()
print("probe tmp=%d shm=%d devro=%s adj=%s" % (size("/tmp"), size("/dev/shm"),
                                              ro, adj))
"""


def ctl_run(env, app, warm):
    e = {k: v for k, v in os.environ.items()
         if k.startswith(("ASAN_", "UBSAN_", "LSAN_", "PATH",
                          "RELAY_BOOTSTRAP_DIR"))}
    args = [RELAYCTL, "app", "run", app, "--apps", env.apps_dir,
            "--sandbox", "bwrap", "--event", '{"app":"%s"}' % app]
    if warm:
        args.append("--warm")
    p = subprocess.run(args, env=e, capture_output=True, text=True,
                       errors="replace", timeout=120)
    eq(p.returncode, 0, f"app run {app} warm={warm}:\n{p.stdout}{p.stderr}")
    m = re.search(r"probe tmp=(\d+) shm=(\d+) devro=(\w+) adj=(-?\d+)",
                  p.stdout)
    check(m, f"the probe's line:\n{p.stdout}")
    return int(m.group(1)), int(m.group(2)), m.group(3), m.group(4)


@case
def sandbox_tmpfs_sized():
    """/tmp has the size of resources.tmp (64 MiB when unset), /dev/shm
    1 MiB and /dev is read-only, in a cold and in a warm sandbox, for an
    exec and a python3 app; the handler's oom_score_adj is 1000."""
    bwrap_or_skip()
    with Env() as env:
        readable(env)
        exec_app(env, "dflt", ["/usr/bin/python3", "-c", PROBE])
        exec_app(env, "small", ["/usr/bin/python3", "-c", PROBE],
                 "resources:\n  tmp: 8Mi\n")
        d = os.path.join(env.apps_dir, "py")
        os.makedirs(d)
        with open(os.path.join(d, "mod.py"), "w") as f:
            f.write("def h(event):\n" +
                    "".join("    " + line + "\n"
                            for line in PROBE.strip().splitlines()))
        raw_app(env, "py", "runtime: python3\nresources:\n  tmp: 16Mi\n"
                "events:\n  - handler: mod.h\n    pattern: {app: [py]}\n")
        os.chmod(os.path.join(d, "mod.py"), 0o644)
        mib = 1024 * 1024
        for warm in (False, True):
            for app, want in (("dflt", 64 * mib), ("small", 8 * mib),
                              ("py", 16 * mib)):
                tmp, shm, devro, adj = ctl_run(env, app, warm)
                eq(tmp, want, f"{app} warm={warm}: /tmp size")
                eq(shm, mib, f"{app} warm={warm}: /dev/shm size")
                eq(devro, "True", f"{app} warm={warm}: /dev read-only")
                eq(adj, "1000", f"{app} warm={warm}: oom_score_adj")


def memory_cgroup(env):
    """A memory cgroup (v1) of the test's own, 256 MiB without swap, or
    Skip. Removed by the caller."""
    own = None
    with open("/proc/self/cgroup") as f:
        for line in f:
            parts = line.rstrip("\n").split(":", 2)
            if len(parts) == 3 and "memory" in parts[1].split(","):
                own = parts[2]
    base = "/sys/fs/cgroup/memory"
    if own is None or not os.path.isdir(base):
        raise Skip("no cgroup v1 memory hierarchy (the vm suite covers v2)")
    cg = os.path.join(base + own.rstrip("/"), f"relay-test-{os.getpid()}")
    try:
        os.mkdir(cg)
        with open(os.path.join(cg, "memory.limit_in_bytes"), "w") as f:
            f.write(str(256 * 1024 * 1024))
    except OSError as e:
        raise Skip(f"cannot make a memory cgroup: {e}")
    try:
        with open(os.path.join(cg, "memory.memsw.limit_in_bytes"), "w") as f:
            f.write(str(256 * 1024 * 1024))
    except OSError:
        pass  # no swap accounting: nothing to swap to either way
    return cg


def remove_cgroup(cg):
    for _ in range(50):
        try:
            os.rmdir(cg)
            return
        except OSError:
            time.sleep(0.1)


@case
def tmp_hog_fails_alone_in_relayds_memory_cgroup():
    """relayd in a 256 MiB memory cgroup; a handler without
    resources.memory writes 400 MiB into /tmp: the write ends with ENOSPC
    at /tmp's 64 MiB, its invocation fails, relayd is alive and another
    app's invocation succeeds. Without a size the tmpfs pages fill the
    cgroup and the OOM killer takes relayd."""
    bwrap_or_skip()
    with Env() as env:
        cg = memory_cgroup(env)
        try:
            readable(env)
            exec_app(env, "tmphog", ["/bin/sh", "-c",
                                     "dd if=/dev/zero of=/tmp/fill bs=1M "
                                     "count=400; r=$?; sleep 1; exit $r"])
            exec_app(env, "other", ["/bin/sh", "-c", "sleep 2; echo fine"])
            path = wrapper(env, "relayd-memcg",
                           f'echo $$ > "{cg}/cgroup.procs" || exit 99\n'
                           f'exec "{RELAYD}"')
            d = start(env, path, RELAY_WARM="0")
            oid = env.xadd({"app": "other"})
            hid = env.xadd({"app": "tmphog"})
            env.wait(lambda: "tmphog" in dlq_apps(env),
                     "the hog's invocation failed", timeout=60)
            env.wait(lambda: env.inv(oid).get("other/h") == "ok",
                     "the other app's invocation succeeded", timeout=60)
            d.assert_alive()
            e = [x for x in env.dlq() if x.get("app") == "tmphog"][0]
            check("exit status 1" in e.get("reason", ""),
                  f"dd failed (ENOSPC), not killed: {e}")
            check("No space left on device" in d.log(),
                  "dd says ENOSPC:\n" + d.log_tail(30))
            check("other" not in dlq_apps(env), "other app not in the DLQ")
            eq(env.inv(hid).get("tmphog/h", "").startswith("exhausted"),
               True, "the hog's invocation is exhausted")
            d.stop()
        finally:
            remove_cgroup(cg)


if __name__ == "__main__":
    sys.exit(run_cases())
