#!/usr/bin/env python3
"""Security regressions of relayd and relayctl end to end (issue 14),
against a real redis-server and the real binaries (suite 'security').

usage: test_sec_daemon.py RELAYD RELAYCTL
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "daemon"))
from harness import Env, case, check, eq, run_cases, wait_for  # noqa: E402

RELAYCTL = sys.argv[2] if len(sys.argv) > 2 else "relayctl"


def ctl(d, *args, input=None):
    """Run relayctl with relayd @d's environment; (rc, stdout, stderr)."""
    env = {k: v for k, v in os.environ.items()
           if k.startswith(("ASAN_", "UBSAN_", "LSAN_", "PATH"))}
    for k in ("REDIS_URI", "REDIS_STREAM", "REDIS_GROUP", "RELAY_RUN_DIR",
              "RELAY_STATE_DIR", "RELAY_APPS_DIR"):
        env[k] = d.vars[k]
    p = subprocess.run([RELAYCTL, *args], env=env, input=input,
                       capture_output=True, text=True, errors="replace",
                       timeout=120)
    check("Sanitizer" not in p.stderr and "runtime error" not in p.stderr,
          f"relayctl {args}: sanitizer report:\n{p.stderr}")
    return p.returncode, p.stdout, p.stderr


def ctl_plain(*args, input=None):
    """relayctl without a daemon's environment; (rc, stdout, stderr)."""
    env = {k: v for k, v in os.environ.items()
           if k.startswith(("ASAN_", "UBSAN_", "LSAN_", "PATH"))}
    p = subprocess.run([RELAYCTL, *args], env=env, input=input,
                       capture_output=True, text=True, errors="replace",
                       timeout=120)
    check("Sanitizer" not in p.stderr and "runtime error" not in p.stderr,
          f"relayctl {args}: sanitizer report:\n{p.stderr}")
    return p.returncode, p.stdout, p.stderr


# ---- item 2: symlinks out of the apps directory, echoed content -------------

SECRET = "root:$6$SECRETHASHxyz:19000:0:99999:7:::"


@case
def symlinks_out_of_apps_dir_refused_unread():
    """A template.yaml or an app directory that is a symlink leading out of
    RELAY_APPS_DIR is refused without being read: no line of the target
    in validate, app ls or relayd's log; the linked app never runs."""
    with Env() as env:
        env.app("good", [("h", {"kind": ["x"]})])
        outside = os.path.join(env.dir, "outside")
        os.makedirs(outside)
        secret = os.path.join(outside, "shadow")
        with open(secret, "w") as f:
            f.write(SECRET + "\n")
        os.makedirs(os.path.join(env.apps_dir, "evil"))
        os.symlink(secret, os.path.join(env.apps_dir, "evil",
                                        "template.yaml"))
        # A real app outside, linked in as a directory.
        env.app("outapp", [("h", {"kind": ["x"]})])
        os.rename(os.path.join(env.apps_dir, "outapp"),
                  os.path.join(outside, "outapp"))
        os.symlink(os.path.join(outside, "outapp"),
                   os.path.join(env.apps_dir, "linked"))
        rc, out, err = ctl_plain("validate", "--apps", env.apps_dir,
                                 "--verbose")
        text = out + err
        eq(rc, 1, "validate: invalid apps")
        check("SECRET" not in text and "root:" not in text,
              f"validate echoes nothing of the target:\n{text}")
        check("template.yaml is a symlink out of the apps directory" in
              text, f"validate says why (template):\n{text}")
        check("app directory is a symlink out of the apps directory" in
              text, f"validate says why (directory):\n{text}")
        d = env.relayd()
        rc, out, err = ctl_plain("app", "ls", "--apps", env.apps_dir)
        check("SECRET" not in out + err, f"app ls:\n{out}{err}")
        env.xadd({"kind": "x", "k": "e1"})
        env.wait(lambda: env.pel_count() == 0 and
                 env.count("end") >= 1, "the good app ran")
        d.stop()
        check("SECRET" not in d.log(), "relayd log echoes nothing")
        eq(sorted(r[2] for r in env.records() if r[0] == "end"), ["good"],
           "only the app inside the apps dir ran")


@case
def unknown_key_excerpt_is_short_and_escaped():
    with Env() as env:
        key = "\x1b]0;pwned\x07" + "A" * 60
        d = os.path.join(env.apps_dir, "keys")
        os.makedirs(d)
        with open(os.path.join(d, "template.yaml"), "w") as f:
            f.write("runtime: exec\ncommand: [/bin/true]\n"
                    + json.dumps(key) + ": 1\nevents: []\n")
        rc, out, err = ctl_plain("validate", "--apps", env.apps_dir)
        eq(rc, 1, "validate exit")
        check("\x1b" not in err and "\x07" not in err, f"no raw ESC/BEL: {err!r}")
        check("unknown key" in err and "\\x1b]0;pwned\\x07" in err,
              f"escaped excerpt: {err!r}")
        check("A" * 30 not in err and "..." in err, f"cut short: {err!r}")


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



# ---- item 15: one answer for an id that is not a DLQ entry -------------------

BAD_IDS = ["abc", "99999999999999999999-0", "1-99999999999999999999",
           "18446744073709551616", "1-", "1-2-3"]


@case
def dlq_replay_invalid_id_is_not_found():
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]})])
        d = env.relayd()
        for bad in BAD_IDS:
            rc, out, err = ctl(d, "dlq", "replay", bad)
            eq(rc, 1, f"relayctl dlq replay {bad}: exit status")
            check("unknown DLQ entry" in err and "XRANGE" not in err,
                  f"relayctl dlq replay {bad}: not found: {err!r}")
            r = d.control({"cmd": "dlq replay", "id": bad})
            eq(r.get("error"), "not_found", f"socket dlq replay {bad}: {r}")
        d.stop()


@case
def json_log_message_id_has_no_trailing_colon():
    """The JSON log's message_id is the id, not "id:" (the text message
    "dead-lettering message_id=<id>: <why>" puts a colon after it)."""
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]})])
        d = env.relayd(LOG_FORMAT="json")
        mid = env.xadd("[1]")
        env.wait(lambda: len(env.dlq()) == 1, "malformed entry in the DLQ")
        d.stop()
        objs = [json.loads(ln) for ln in d.log().splitlines()
                if ln.startswith("{")]
        eng06 = [o for o in objs if o.get("msgid") == "RELAY-ENG06"]
        check(eng06, "a RELAY-ENG06 line:\n" + d.log())
        for o in eng06:
            eq(o.get("message_id"), mid, f"message_id of {o}")



@case
def match_classifies_schedule_events_like_relayd():
    """relayctl match and relayd agree on a schedule-looking external
    event: no rule matches it, and a malformed one is an error for
    relayctl exactly when relayd dead-letters it."""
    with Env() as env:
        env.app("a", [("h", {"a": [1]})])
        forged = '{"source":"relay.schedule","a":1}'
        rc, out, err = ctl_plain("match", "--apps", env.apps_dir, "-",
                                 input=forged)
        eq(out, "", "no rule printed")
        eq(rc, 1, "malformed occurrence: exit status")
        check("malformed schedule occurrence" in err, f"reason: {err!r}")
        rc, out, err = ctl_plain("match", "--apps", env.apps_dir, "-",
                                 input='{"source":"other","a":1}')
        eq((rc, out), (0, "a/h\n"), "an ordinary event still matches")
        d = env.relayd()
        mid = env.xadd(forged)
        env.wait(lambda: len(env.dlq()) == 1, "dead-lettered")
        e = env.dlq()[0]
        eq(e["original_id"], mid, "the forged event")
        check(e["reason"].startswith("malformed schedule occurrence"),
              f"relayd's reason: {e['reason']!r}")
        d.stop()
        eq(env.count("start"), 0, "no handler ran")



# ---- item 14: forged schedule runs -------------------------------------------

def sched_template(env):
    """App "a": schedule "nightly" runs handler "tick" at 03:00 on Feb 29
    only (the publisher itself publishes nothing near the test clock)."""
    return "\n".join([
        "runtime: exec", "command: [./handler.sh]", "env:",
        f"  OUT: {json.dumps(env.out)}", "  APP: a",
        "schedules:", "  - name: nightly", "    handler: tick",
        '    cron: "0 3 29 2 *"', ""])


def envelope(at):
    return json.dumps({"source": "relay.schedule", "app": "a",
                       "schedule": "nightly", "handler": "tick",
                       "scheduled_at": at,
                       "occurrence_id": f"schedule:a:nightly:{at}"},
                      separators=(",", ":"))


def marker(at):
    return f"relay:schedule:schedule:a:nightly:{at}"


@case
def forged_schedule_occurrences_never_run():
    """Only an occurrence at a firing time of its schedule, with relayd's
    publication marker, runs, and only once per occurrence_id; each
    forgery is dead-lettered with the reason and runs nothing."""
    with Env() as env:
        env.app("a", [], raw=sched_template(env))
        d = env.relayd(RELAY_TEST_SCHEDULE_CLOCK="1780272000")  # 2026-06-01
        # 1. Not a firing time (Feb 28), even with a marker planted.
        env.r("SET", marker("2026-02-28T03:00:00Z"), "1")
        m1 = env.xadd(envelope("2026-02-28T03:00:00Z"))
        # 2. A firing time, but never published: no marker.
        m2 = env.xadd(envelope("2024-02-29T03:00:00Z"))
        env.wait(lambda: len(env.dlq()) == 2, "two forgeries dead-lettered")
        # 3. A published occurrence runs once; re-adding it runs nothing.
        env.r("SET", marker("2028-02-29T03:00:00Z"), "1")
        m3 = env.xadd(envelope("2028-02-29T03:00:00Z"))
        env.wait(lambda: env.count("end", handler="tick") == 1
                 and env.pel_count() == 0, "the published occurrence ran")
        m4 = env.xadd(envelope("2028-02-29T03:00:00Z"))
        env.wait(lambda: len(env.dlq()) == 3 and env.pel_count() == 0,
                 "the re-added occurrence dead-lettered")
        d.stop()
        eq(env.count("start", handler="tick"), 1, "tick ran exactly once")
        reasons = {e["original_id"]: e["reason"] for e in env.dlq()}
        check("not a firing time" in reasons.get(m1, ""),
              f"not a firing time: {reasons}")
        check("no publication marker" in reasons.get(m2, ""),
              f"no marker: {reasons}")
        check(m3 not in reasons, "the published one is not dead-lettered")
        check(f"already dispatched as message {m3}" in reasons.get(m4, ""),
              f"duplicate: {reasons}")
        for e in env.dlq():
            eq((e["app"], e["handler"]), ("-", "-"), "placeholders")


if __name__ == "__main__":
    sys.exit(run_cases())
