#!/usr/bin/env python3
"""Security regressions of relayd and relayctl end to end (issue 14),
against a real redis-server and the real binaries (suite 'security').

usage: test_sec_daemon.py RELAYD RELAYCTL
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "daemon"))
from harness import Env, case, check, eq, run_cases, wait_for  # noqa: E402

RELAYCTL = sys.argv[2] if len(sys.argv) > 2 else "relayctl"


# ---- item 3: files in the run and state directories -------------------------

@case
def stats_temp_file_never_follows_a_symlink():
    """A symlink planted at the stats temp name is not followed: its target
    keeps its content and stats.json is written as a regular file."""
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]})])
        d = env.relayd()
        target = os.path.join(env.dir, "victim")
        with open(target, "w") as f:
            f.write("KEEP\n")
        link = os.path.join(d.state_dir, f".stats.json.{d.proc.pid}.tmp")
        os.symlink(target, link)
        d.stop()  # flushes the stats file
        with open(target) as f:
            eq(f.read(), "KEEP\n", "symlink target untouched")
        path = os.path.join(d.state_dir, "stats.json")
        check(not os.path.islink(path), "stats.json is not a link")
        with open(path) as f:
            check("counters" in json.load(f), "stats.json written")
        check(not os.path.lexists(link), "planted link removed")


@case
def group_or_world_writable_dirs_refused():
    for var, sub in (("RELAY_STATE_DIR", "state"), ("RELAY_RUN_DIR", "run")):
        with Env() as env:
            env.app("a", [("h", {"kind": ["x"]})])
            path = os.path.join(env.dir, sub)
            os.mkdir(path)
            os.chmod(path, 0o777)
            d = env.relayd(start=False, **{var: path})
            d.start(wait_ready=False)
            eq(d.wait(), 1, f"{var} 0777: exit status")
            lines = [ln for ln in d.log().splitlines()
                     if ln.startswith("relayd:")]
            check(len(lines) == 1 and var in lines[0] and path in lines[0]
                  and "writable by group or others" in lines[0],
                  f"{var}: one clear error line:\n{d.log()}")
            os.chmod(path, 0o755)
            d2 = env.relayd("r2", **{var: path})
            d2.stop()


if __name__ == "__main__":
    sys.exit(run_cases())
