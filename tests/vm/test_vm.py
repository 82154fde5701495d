#!/usr/bin/env python3
"""Suite 'vm': resource limits on a real cgroup v2 kernel.

Boots Debian's user-mode Linux kernel (package user-mode-linux, a Linux
6.1 that runs as an ordinary process: no virtualisation support needed)
with the host's root file system read-only over hostfs, and runs
tests/vm/guest.py in it as root: relayd (this build) with a redis-server
of its own, in a sub-tree delegated as systemd's Delegate=yes delegates
it, checking the memory, pids and cpus limits of cold and warm handlers,
what is left in the hierarchy, and each refusal path's message.

usage: test_vm.py RELAYD RELAYCTL

The guest's TAP (OUTDIR/tap.txt) is this test's TAP. ASan builds cannot
run in the guest, so a sanitized RELAYD is replaced by RELAY_VM_BUILD's
(tests/run.sh's release build) or a plain build of our own. Skips, saying why,
when the kernel is not installed, when the guest does not boot (or not
within RELAY_VM_BOOT_TIMEOUT) or has no cgroup2. The whole run is bounded
(RELAY_VM_TIMEOUT): a guest still running then is killed and the cases it
did not finish fail; nothing here waits without a bound.
Environment: RELAY_VM=0 skips the suite, RELAY_VM_KERNEL (default
linux.uml, else linux), RELAY_VM_MEM (default 512M),
RELAY_VM_BOOT_TIMEOUT (seconds, default 60 times
RELAY_TEST_TIMEOUT_MULTIPLIER), RELAY_VM_TIMEOUT (seconds for the whole
guest run, the suite's hard bound: default 240 times
RELAY_TEST_TIMEOUT_MULTIPLIER).
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
MULT = float(os.environ.get("RELAY_TEST_TIMEOUT_MULTIPLIER", "1"))


def skip(why):
    print("1..0 # SKIP " + why, flush=True)
    sys.exit(0)


def kernel():
    k = os.environ.get("RELAY_VM_KERNEL")
    if k:
        return k if os.access(k, os.X_OK) else None
    for name in ("linux.uml", "linux"):
        p = shutil.which(name, path=os.environ.get("PATH", "") +
                         ":/usr/bin:/usr/local/bin")
        if p:
            return p
    return None


def sanitized(exe):
    with open(exe, "rb") as f:
        return b"__asan_init" in f.read()


def plain_build(relayd):
    """relayd and relayctl without ASan, which cannot map its shadow
    memory in a user-mode Linux process (its address space ends at
    512 GiB): tests/run.sh's release build (RELAY_VM_BUILD), else one of
    our own next to the test build. None, why when there is none."""
    b = os.environ.get("RELAY_VM_BUILD")
    if not b:
        root = os.environ.get("RELAY_BUILD_ROOT") or os.path.dirname(
            os.path.dirname(relayd))
        b = os.path.join(root, "vm-build")
        if not os.path.exists(os.path.join(b, "build.ninja")):
            r = subprocess.run(["meson", "setup", b, SRC,
                                "-Dbuildtype=release", "-Dtests=false"],
                               capture_output=True, text=True)
            if r.returncode != 0:
                return None, "meson setup of a plain build: " + \
                    r.stdout[-300:] + r.stderr[-300:]
        # Everything: relayd also needs its warm helpers (the slot
        # library), not only the two programs.
        r = subprocess.run(["ninja", "-C", b], capture_output=True,
                           text=True)
        if r.returncode != 0:
            return None, "plain build: " + r.stdout[-500:]
    exes = (os.path.join(b, "relayd", "relayd"),
            os.path.join(b, "relayctl", "relayctl"))
    if not all(os.access(e, os.X_OK) for e in exes):
        return None, f"no relayd and relayctl in {b}"
    return exes, None


def tail(path, n=30):
    try:
        with open(path, errors="replace") as f:
            return f.read().splitlines()[-n:]
    except OSError:
        return []


def main():
    relayd = os.path.abspath(sys.argv[1])
    relayctl = os.path.abspath(sys.argv[2])
    if os.environ.get("RELAY_VM") == "0":
        skip("RELAY_VM=0")
    k = kernel()
    if not k:
        skip("user-mode-linux is not installed (apt-get install "
             "user-mode-linux; tests/run.sh installs it as root)")
    redis = shutil.which("redis-server")
    if not redis:
        skip("redis-server not installed")
    if sanitized(relayd):
        exes, why = plain_build(relayd)
        if not exes:
            print("1..1")
            print("not ok 1 - a relayd the guest can run # " + why)
            return 1
        relayd, relayctl = exes
    out = tempfile.mkdtemp(prefix="relay-vm.")
    os.chmod(out, 0o777)
    cfg = {
        "source_root": SRC,
        "relayd": relayd,
        "relayctl": relayctl,
        "redis_server": redis,
        "bootstrap_dir": os.environ.get(
            "RELAY_BOOTSTRAP_DIR",
            os.path.join(SRC, "sandbox", "bootstrap")),
        # tap.py's filter, for the cases in the guest
        "only": os.environ.get("RELAY_TEST_ONLY", ""),
    }
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f)
    # UML keeps its pid file under $HOME/.uml and its memory in $TMPDIR.
    env = dict(os.environ, HOME=out, TMPDIR=out)
    args = [k, "mem=" + os.environ.get("RELAY_VM_MEM", "512M"),
            "root=/dev/root", "rootfstype=hostfs", "rootflags=/", "ro",
            "init=" + os.path.join(HERE, "guest-init.sh"),
            "con=null", "con0=fd:0,fd:1", "quiet",
            "RELAY_VM_OUT=" + out,
            "RELAY_VM_GUEST=" + os.path.join(HERE, "guest.py")]
    console = open(os.path.join(out, "console.log"), "wb")
    t0 = time.monotonic()
    limit = float(os.environ.get("RELAY_VM_TIMEOUT", 240 * MULT))
    boot_limit = float(os.environ.get("RELAY_VM_BOOT_TIMEOUT", 60 * MULT))
    booted_file = os.path.join(out, "booted")
    try:
        p = subprocess.Popen(args, stdin=subprocess.DEVNULL,
                             stdout=console, stderr=subprocess.STDOUT,
                             env=env, start_new_session=True)
    except OSError as e:
        shutil.rmtree(out, ignore_errors=True)
        skip(f"cannot start the user-mode Linux kernel {k}: {e}")
    # Booted means guest-init.sh ran; a guest that is not there within
    # boot_limit is killed and the suite skips.
    no_boot = False
    while p.poll() is None and not os.path.exists(booted_file):
        if time.monotonic() - t0 > boot_limit:
            no_boot = True
            break
        time.sleep(0.2)
    if not no_boot:
        try:
            p.wait(max(1.0, limit - (time.monotonic() - t0)))
        except subprocess.TimeoutExpired:
            pass
    timed_out = p.poll() is None and not no_boot
    # UML's helper processes share its session: kill them all, also
    # after a clean power-off.
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait()
    took = time.monotonic() - t0
    tap = os.path.join(out, "tap.txt")
    booted = os.path.exists(booted_file)
    keep = os.environ.get("RELAY_TEST_KEEP") == "1"
    try:
        if not booted:
            why = " / ".join(l.strip() for l in tail(
                os.path.join(out, "console.log"), 5))
            skip(f"the user-mode Linux guest did not boot ({k}"
                 + (f", not within {boot_limit:.0f}s" if no_boot else "")
                 + f"): {why or 'no console output'}")
        lines = tail(tap, 100000)
        plan = [l for l in lines if l.startswith("1..")]
        for l in lines:
            print(l)
        failed = any(l.startswith("not ok") for l in lines)
        if not plan:
            print("1..1")
            print("not ok 1 - the guest ran no cases" +
                  (" (timed out)" if timed_out else ""))
            failed = True
        n_done = sum(1 for l in lines if l.startswith(("ok ", "not ok ")))
        if plan and n_done < int(plan[0][3:].split()[0]):
            print(f"# the guest stopped after {n_done} case(s)" +
                  (f" (timed out after {limit:.0f}s)" if timed_out else ""))
            failed = True
        print(f"# guest run {took:.0f}s")
        if failed or keep:
            for name in sorted(os.listdir(out)):
                if name.endswith(".log"):
                    print(f"# ---- {name} (last lines)")
                    for l in tail(os.path.join(out, name), 40):
                        print("#   " + l)
        return 1 if failed else 0
    finally:
        if not keep:
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
