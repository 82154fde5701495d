#!/usr/bin/env python3
"""The DLQ at incident scale (doc/cli.md L-6): the shared filters of
relayctl dlq ls / summary / replay / rm (--app --handler --reason --since
--until --id), dlq summary (text and --json), bulk rm and replay with
--dry-run / --yes / --rate, the confirmation on a terminal, and
interrupted bulk replays (SIGKILL, SIGINT) that never replay an entry
twice and never lose one. Real redis-server, real relayd, real relayctl.
DLQ entries are written by hand (well-formed, with chosen timestamps),
so that their app, handler, reason and age are known.

usage: test_dlq_bulk.py RELAYD RELAYCTL
"""
import datetime
import json
import os
import pty
import re
import signal
import subprocess
import sys
import time

from harness import Env, case, check, eq, run_cases

RELAYCTL = os.environ.get("RELAYCTL") or (sys.argv[2] if len(sys.argv) > 2
                                          else "relayctl")
DLQ = "relay:events:dlq"


def ctl_env(d, extra=None):
    env = {k: v for k, v in os.environ.items()
           if k.startswith(("ASAN_", "UBSAN_", "LSAN_", "PATH"))}
    for k in ("REDIS_URI", "REDIS_STREAM", "REDIS_GROUP", "RELAY_RUN_DIR",
              "RELAY_STATE_DIR", "RELAY_APPS_DIR"):
        env[k] = d.vars[k]
    env.update(extra or {})
    return env


def ctl(d, *args, stdin=subprocess.DEVNULL, extra=None):
    """relayctl with relayd @d's environment, stdin not a terminal."""
    p = subprocess.run([RELAYCTL, *args], env=ctl_env(d, extra), stdin=stdin,
                       capture_output=True, text=True, errors="replace",
                       timeout=120)
    check("Sanitizer" not in p.stderr and "runtime error" not in p.stderr,
          f"relayctl {args}: sanitizer report:\n{p.stderr}")
    return p.returncode, p.stdout, p.stderr


def ctl_tty(d, *args, answer):
    """relayctl with a terminal on stdin, @answer typed into it."""
    master, slave = pty.openpty()
    p = subprocess.Popen([RELAYCTL, *args], env=ctl_env(d), stdin=slave,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, errors="replace")
    os.close(slave)
    os.write(master, answer.encode())
    out, err = p.communicate(timeout=120)
    os.close(master)
    check("Sanitizer" not in err, err)
    return p.returncode, out, err


def ts(ago_s):
    t = datetime.datetime.now(datetime.timezone.utc) - \
        datetime.timedelta(seconds=ago_s)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def exhausted(app, handler, n, last):
    return (f'invocation exhausted: app "{app}" handler "{handler}" '
            f"exhausted after {n} handler attempts: {last}")


def put(env, app, handler, reason, ago_s, event=None, dlq=DLQ, orig="1-1"):
    """Write one well-formed DLQ entry; returns its id."""
    placeholder = app == "-"
    return env.r("XADD", dlq, "*", "original_stream", "events",
                 "original_id", orig, "group", "relay", "consumer", "c1",
                 "event", json.dumps(event or {"k": "x"}), "reason", reason,
                 "app", app, "handler", handler, "deliveries", "1",
                 "handler_attempts", "0" if placeholder else "1",
                 "timestamp", ts(ago_s))


def put_bad(env):
    """A malformed entry (most fields missing)."""
    return env.r("XADD", DLQ, "*", "original_stream", "events", "app", "a")


def ids(env, dlq=DLQ):
    return [e[0] for e in env.r("XRANGE", dlq, "-", "+")]


def sample(env):
    """E1..E5 and a malformed entry, oldest first."""
    e1 = put(env, "a", "h1", exhausted("a", "h1", 3,
                                       "timed out after 6000ms"), 3 * 3600)
    e2 = put(env, "a", "h1", exhausted("a", "h1", 2,
                                       "timed out after 5000ms"), 2 * 3600)
    e3 = put(env, "a", "h2", exhausted("a", "h2", 1, "exit status 3"), 1800)
    e4 = put(env, "b", "h2", exhausted("b", "h2", 1, "exit status 4"), 600)
    e5 = put(env, "-", "-", "decode event: unexpected byte 7 at 12", 300)
    bad = put_bad(env)
    return [e1, e2, e3, e4, e5, bad]


def ls_ids(d, *filters):
    rc, out, err = ctl(d, "dlq", "ls", "--json", *filters)
    eq(rc, 0, f"dlq ls {filters}\n{err}")
    return [e["id"] for e in json.loads(out)]


@case
def filters_select_in_ls():
    with Env() as env:
        d = env.relayd(start=False)
        e1, e2, e3, e4, e5, bad = sample(env)
        # A malformed entry's app is unknown: listed whatever the filters
        # on fields say; --id, --since and --until judge it by its id.
        eq(ls_ids(d, "--app", "a"), [e1, e2, e3, bad], "--app")
        eq(ls_ids(d, "--app=b"), [e4, bad], "--app=")
        eq(ls_ids(d, "--handler", "h2"), [e3, e4, bad], "--handler")
        eq(ls_ids(d, "--reason", "timed out after [0-9]+ms$"),
           [e1, e2, bad], "--reason")
        eq(ls_ids(d, "--reason", "^decode"), [e5, bad], "--reason anchored")
        eq(ls_ids(d, "--since", "1h"), [e3, e4, e5, bad], "--since 1h")
        eq(ls_ids(d, "--until", "1h"), [e1, e2], "--until 1h")
        eq(ls_ids(d, "--since", "150m", "--until", "20m"), [e2, e3],
           "--since and --until")
        eq(ls_ids(d, "--since", ts(2 * 3600 + 600)), [e2, e3, e4, e5, bad],
           "--since RFC 3339")
        eq(ls_ids(d, "--id", e2, "--id", e4), [e2, e4], "--id twice")
        eq(ls_ids(d, "--id", bad), [bad], "--id of a malformed entry")
        eq(ls_ids(d, "--app", "a", "--since", "150m"), [e2, e3, bad],
           "--app AND --since")
        eq(ls_ids(d, "--app", "a", "--handler", "h2", "--reason", "exit"),
           [e3, bad], "three filters")
        eq(ls_ids(d, "--app", "nobody", "--until", "1h"), [],
           "nothing matches")
        rc, out, _ = ctl(d, "dlq", "ls", "--handler", "h1", "--limit", "1")
        rows = out.split("\n\n")[0].splitlines()
        eq((rc, len(rows), rows[1].split()[0]), (0, 2, e1),
           "table: the header and one row (--limit after the filter)")


BAD_FILTERS = [
    (["--reason", "("], "--reason"),
    (["--reason", "a{2,1}"], "--reason"),
    (["--since", "yesterday"], "--since"),
    (["--since", "-2h"], "--since"),
    (["--until", "2026-13-01T00:00:00Z"], "--until"),
    (["--until", "2026-01-01T00:00:00"], "--until"),
    (["--id", "abc"], "--id"),
    (["--id"], "--id"),
    (["--app", ""], "--app"),
    (["--app", "a", "--app", "b"], "--app"),
    (["--handler", "x", "--handler", "y"], "--handler"),
    (["--since", "1h", "--until", "2h"], "--since"),
    (["--original-id", "x-1"], "--original-id"),
    (["--original-id"], "--original-id"),
    (["--malformed=1"], "--malformed"),
    (["--no-malformed", "--malformed"], "--malformed"),
    (["--malformed", "--app", "a"], "--malformed"),
    (["--original-id", "5-0", "--malformed"], "--malformed"),
]


@case
def bad_filter_is_usage_error_naming_the_flag():
    with Env() as env:
        d = env.relayd(start=False)
        put(env, "a", "h1", "r", 10)
        before = ids(env)
        for sub in ("ls", "summary", "rm", "replay"):
            for args, flag in BAD_FILTERS:
                extra = ["--yes"] if sub in ("rm", "replay") else []
                rc, out, err = ctl(d, "dlq", sub, *args, *extra)
                eq(rc, 2, f"dlq {sub} {args}: exit\n{err}")
                eq(out, "", f"dlq {sub} {args}: nothing on stdout")
                check(err.startswith(f"relayctl: dlq {sub}: {flag}"),
                      f"dlq {sub} {args}: names {flag}:\n{err}")
        eq(ids(env), before, "nothing changed")
        for args in (["rm", "1-0", "--app", "a"],
                     ["replay", "1-0", "--all"],
                     ["rm", "1-0", "--dry-run"],
                     ["rm", "--all", "--yes", "--rate", "0"],
                     ["rm", "--all", "--yes", "--rate", "1001"],
                     ["replay", "--all", "--yes", "--rate", "x"],
                     ["summary", "--limit", "0"],
                     ["rm", "--all", "--yes", "--limit", "-1"],
                     ["rm", "1-0", "--limit", "1"],
                     ["replay", "1-0", "--limit", "2"]):
            rc, out, err = ctl(d, "dlq", *args)
            eq((rc, out), (2, ""), f"dlq {args}\n{err}")
        # Bulk without --yes while stdin is not a terminal: refused.
        for sub in ("rm", "replay"):
            rc, out, err = ctl(d, "dlq", sub, "--app", "a")
            eq((rc, out), (2, ""), f"dlq {sub} --app a without --yes")
            check("--yes" in err and "not a terminal" in err, err)
        eq(ids(env), before, "still nothing changed")


@case
def original_id_and_malformed_filters():
    with Env() as env:
        d = env.relayd(start=False)
        e1 = put(env, "a", "h1", "r1", 600, orig="1700000000000-4")
        e2 = put(env, "a", "h1", "r2", 500, orig="1700000000001-0")
        bad = put_bad(env)
        e3 = put(env, "b", "h2", "r3", 400, orig="1700000000000-4")
        # ls: a filter on fields still lists the malformed entry.
        eq(ls_ids(d, "--original-id", "1700000000000-4"), [e1, bad, e3],
           "--original-id")
        eq(ls_ids(d, "--original-id", "1700000000001"), [e2, bad],
           "--original-id MS")
        eq(ls_ids(d, "--malformed"), [bad], "--malformed")
        eq(ls_ids(d, "--no-malformed"), [e1, e2, e3], "--no-malformed")
        eq(ls_ids(d, "--no-malformed", "--original-id", "1700000000000-4"),
           [e1, e3], "--no-malformed --original-id")
        rc, out, err = ctl(d, "dlq", "ls", "--malformed", "--app", "a")
        eq((rc, out), (2, ""), "--malformed --app\n" + err)
        check("--malformed" in err and "--app" in err, err)
        # summary
        rc, out, err = ctl(d, "dlq", "summary", "--json", "--no-malformed")
        eq((rc, sum(g["count"] for g in json.loads(out))), (0, 3),
           "summary --no-malformed\n" + err)
        check("malformed" not in err, err)
        rc, out, err = ctl(d, "dlq", "summary", "--json", "--original-id",
                           "1700000000001-0")
        eq([(g["app"], g["count"]) for g in json.loads(out)], [("a", 1)],
           "summary --original-id")
        rc, out, err = ctl(d, "dlq", "summary", "--json", "--malformed")
        eq((rc, out), (0, "[]\n"), "summary --malformed groups nothing")
        check("1 malformed DLQ entry not counted" in err, err)
        # replay and rm
        for sub in ("replay", "rm"):
            rc, out, err = ctl(d, "dlq", sub, "--malformed", "--dry-run")
            eq(rc, 0, f"{sub} --malformed --dry-run\n" + err)
            eq([ln.split()[0] for ln in out.splitlines()[2:]], [bad],
               f"{sub} --malformed selects the malformed entry")
            rc, out, err = ctl(d, "dlq", sub, "--original-id",
                               "1700000000000-4", "--dry-run")
            eq([ln.split()[0] for ln in out.splitlines()[2:]], [e1, e3],
               f"{sub} --original-id\n" + err)
        rc, out, err = ctl(d, "dlq", "rm", "--no-malformed",
                           "--original-id", "1700000000000-4", "--yes")
        eq((rc, out), (0, "Removed 2 of 2 DLQ entries (0 already gone)\n"),
           "rm --original-id\n" + err)
        check("malformed" not in err, err)
        rc, out, err = ctl(d, "dlq", "rm", "--malformed", "--yes")
        eq((rc, out), (0, "Removed 1 of 1 DLQ entry (0 already gone)\n"),
           "rm --malformed\n" + err)
        eq(ids(env), [e2], "only the other original's entry left")


@case
def limit_in_summary_replay_rm():
    with Env() as env:
        d = env.relayd(start=False)
        e1, e2, e3, e4, e5, bad = sample(env)
        rc, out, err = ctl(d, "dlq", "summary", "--json", "--limit", "2")
        eq((rc, [(g["app"], g["handler"], g["count"])
                 for g in json.loads(out)]), (0, [("a", "h1", 2)]),
           "summary --limit 2: the two oldest\n" + err)
        rc, out, err = ctl(d, "dlq", "summary", "--json", "--since", "1h",
                           "--limit=3")
        eq(sum(g["count"] for g in json.loads(out)), 3, "--limit=3 " + out)
        eq(err, "", "the malformed entry is past the limit")
        rc, out, err = ctl(d, "dlq", "summary", "--limit", "4", "--since",
                           "1h")
        check(out.endswith("Total: 3 entries in 3 groups\n") and
              "1 malformed DLQ entry not counted" in err, out + err)
        for sub, verb in (("replay", "replayed"), ("rm", "removed")):
            rc, out, err = ctl(d, "dlq", sub, "--app", "a", "--limit", "2",
                               "--dry-run")
            lines = out.splitlines()
            eq((rc, lines[0]),
               (0, f"2 matching DLQ entries (dry run: nothing {verb})"),
               f"{sub} --limit --dry-run\n" + err)
            eq([ln.split()[0] for ln in lines[2:]], [e1, e2],
               f"{sub}: the oldest two")
        rc, out, err = ctl(d, "dlq", "rm", "--handler", "h2", "--limit", "1",
                           "--yes")
        eq((rc, out), (0, "Removed 1 of 1 DLQ entry (0 already gone)\n"),
           "rm --limit 1\n" + err)
        eq(ids(env), [e1, e2, e4, e5, bad], "only the oldest h2 entry gone")
        rc, out, err = ctl(d, "dlq", "rm", "--all", "--limit", "10",
                           "--yes")
        eq((rc, out), (0, "Removed 5 of 5 DLQ entries (0 already gone)\n"),
           "a limit above the count\n" + err)
        eq(ids(env), [], "all gone")


@case
def malformed_under_field_filter_one_rule():
    """doc/cli.md L-9: a malformed entry that only a filter on fields
    could judge is undecided: every command reports it (ls as a row, the
    others on stderr), none acts on it, and none counts it against
    --limit. Without a filter on fields it is a match and counts."""
    with Env() as env:
        d = env.relayd(start=False)
        a1 = put(env, "a", "h1", "r", 600)
        bad1 = put_bad(env)
        a2 = put(env, "a", "h1", "r", 500)
        bad2 = put_bad(env)
        a3 = put(env, "a", "h1", "r", 400)
        # ls: listed, but the limit is two matches.
        eq(ls_ids(d, "--app", "a", "--limit", "2"), [a1, bad1, a2],
           "ls --app --limit 2")
        # summary: two grouped, the undecided one counted on stderr.
        rc, out, err = ctl(d, "dlq", "summary", "--json", "--app", "a",
                           "--limit", "2")
        eq((rc, [g["count"] for g in json.loads(out)]), (0, [2]),
           "summary --app --limit 2\n" + err)
        check("1 malformed DLQ entry not counted" in err, err)
        # rm and replay: the same two selected, the malformed left alone.
        for sub in ("rm", "replay"):
            rc, out, err = ctl(d, "dlq", sub, "--app", "a", "--limit", "2",
                               "--dry-run")
            eq((rc, [ln.split()[0] for ln in out.splitlines()[2:]]),
               (0, [a1, a2]), f"{sub} --app --limit 2\n" + err)
            check("1 malformed DLQ entry left alone" in err, err)
        rc, out, err = ctl(d, "dlq", "rm", "--app", "a", "--limit", "2",
                           "--yes")
        eq((rc, out), (0, "Removed 2 of 2 DLQ entries (0 already gone)\n"),
           "rm --app --limit 2\n" + err)
        eq(ids(env), [bad1, bad2, a3], "the malformed entries stay")
        # No filter on fields: a malformed entry is a match and counts.
        eq(ls_ids(d, "--since", "1h", "--limit", "2"), [bad1, bad2],
           "ls --since --limit 2")
        rc, out, err = ctl(d, "dlq", "summary", "--json", "--since", "1h",
                           "--limit", "2")
        eq((rc, out), (0, "[]\n"), "summary: both taken by the limit")
        check("2 malformed DLQ entries not counted" in err, err)
        for sub in ("rm", "replay"):
            rc, out, err = ctl(d, "dlq", sub, "--since", "1h", "--limit",
                               "2", "--dry-run")
            eq([ln.split()[0] for ln in out.splitlines()[2:]],
               [bad1, bad2], f"{sub} --since --limit 2\n" + err)


@case
def ls_newest_first_and_expires():
    """dlq ls --newest-first, and EXPIRES / expires_in_seconds from
    REDIS_DLQ_RETENTION as relayd reads it (doc/cli.md L-5)."""
    with Env() as env:
        d = env.relayd(start=False)
        now = int(time.time() * 1000)
        old = env.r("XADD", DLQ, f"{now - 3 * 3600 * 1000}-0",
                    "original_stream", "events", "app", "a")  # malformed
        e1 = put(env, "a", "h1", "r1", 600)
        e2 = put(env, "b", "h2", "r2", 500)
        eq(ls_ids(d, "--newest-first"), [e2, e1, old], "newest first")
        eq(ls_ids(d, "--newest-first", "--limit", "1"), [e2],
           "--newest-first --limit 1: the newest")
        eq(ls_ids(d, "--newest-first", "--app", "a"), [e1, old],
           "--newest-first with a filter")
        # Text: the EXPIRES column, by the entry id's time (R-9).
        rc, out, err = ctl(d, "dlq", "ls", extra={"REDIS_DLQ_RETENTION":
                                                  "2h"})
        eq(rc, 0, err)
        lines = out.splitlines()
        eq(lines[0].split(), ["ID", "ORIGINAL", "APP", "HANDLER",
                              "ATTEMPTS", "AGE", "EXPIRES"], "header")
        exp = {ln.split()[0]: ln.split()[-1] for ln in lines[1:4]}
        eq(exp[old], "due", "past its retention: due")
        check(re.fullmatch(r"1h5\dm|2h0m", exp[e1]),
              f"e1 EXPIRES {exp[e1]!r}")
        check(out.endswith("Retention: entries older than 2h0m are "
                           "trimmed (REDIS_DLQ_RETENTION).\n"), out)
        rc, out, err = ctl(d, "dlq", "ls", "--json",
                           extra={"REDIS_DLQ_RETENTION": "2h"})
        got = {e["id"]: e["expires_in_seconds"] for e in json.loads(out)}
        eq(got[old], 0, "JSON: due is 0")
        check(7000 < got[e1] <= 7200 and got[e2] >= got[e1],
              f"JSON expires_in_seconds {got}")
        # Off: kept, null.
        rc, out, err = ctl(d, "dlq", "ls", extra={"REDIS_DLQ_RETENTION":
                                                  "0"})
        eq([ln.split()[-1] for ln in out.splitlines()[1:4]],
           ["kept"] * 3, "REDIS_DLQ_RETENTION=0: kept\n" + out)
        rc, out, err = ctl(d, "dlq", "ls", "--json",
                           extra={"REDIS_DLQ_RETENTION": "0"})
        eq([e["expires_in_seconds"] for e in json.loads(out)],
           [None] * 3, "JSON: null when kept")
        # Unset, no stats file: relayd's default, 168h.
        rc, out, err = ctl(d, "dlq", "ls")
        # 168h less the seconds since the entry was written, rounded up:
        # "7d0h" within a second of the write, "6d23h" after.
        check(out.splitlines()[2].split()[-1] in ("6d23h", "7d0h"),
              "default 168h\n" + out)
        # A value relayd refuses too.
        for bad in ("1w", "500ms", "soon"):
            rc, out, err = ctl(d, "dlq", "ls",
                               extra={"REDIS_DLQ_RETENTION": bad})
            eq((rc, out), (2, ""), f"REDIS_DLQ_RETENTION={bad}\n" + err)
            check("REDIS_DLQ_RETENTION" in err, err)
        rc, out, err = ctl(d, "dlq", "summary", "--newest-first")
        eq(rc, 2, "--newest-first is dlq ls's\n" + err)


@case
def summary_groups_by_app_handler_reason():
    with Env() as env:
        d = env.relayd(start=False)
        e1, e2, e3, e4, e5, bad = sample(env)
        rc, out, err = ctl(d, "dlq", "summary", "--json")
        eq(rc, 0, "summary --json\n" + err)
        got = json.loads(out)
        t1 = env.dlq()[0]["timestamp"]
        t2 = env.dlq()[1]["timestamp"]
        eq(got[0], {"app": "a", "handler": "h1",
                    "reason": "timed out after Nms", "count": 2,
                    "oldest": t1, "newest": t2}, "the two timeouts: one")
        eq([(g["app"], g["handler"], g["reason"], g["count"])
            for g in got[1:]],
           [("-", "-", "decode event: unexpected byte N at N", 1),
            ("a", "h2", "exit status N", 1),
            ("b", "h2", "exit status N", 1)], "the other groups")
        check("1 malformed DLQ entry not counted" in err, err)

        rc, out, err = ctl(d, "dlq", "summary")
        eq(rc, 0, "summary\n" + err)
        lines = out.splitlines()
        eq(re.split(r"\s{2,}", lines[0]),
           ["COUNT", "APP", "HANDLER", "OLDEST", "NEWEST", "REASON"],
           "header")
        row = re.split(r"\s{2,}", lines[1])
        eq((row[0], row[1], row[2], row[5]),
           ("2", "a", "h1", "timed out after Nms"), "first row")
        check(re.match(r"3h0m|2h59m", row[3]) and
              re.match(r"2h0m|1h59m", row[4]), row)
        eq(lines[-1], "Total: 5 entries in 4 groups", "total")

        rc, out, _ = ctl(d, "dlq", "summary", "--json", "--app", "b")
        eq([(g["app"], g["count"]) for g in json.loads(out)], [("b", 1)],
           "filtered summary")
        rc, out, _ = ctl(d, "dlq", "summary", "--json", "--id", "1-0")
        eq((rc, out), (0, "[]\n"), "nothing matches: []")
        # A name with digits keeps them; only numbers standing alone go.
        put(env, "a", "h1", exhausted("a", "h1", 1, "h3 failed: code 42"),
            5)
        rc, out, _ = ctl(d, "dlq", "summary", "--json", "--since", "1m")
        eq([g["reason"] for g in json.loads(out)], ["h3 failed: code N"],
           "numbers in names kept")


@case
def rm_bulk_dry_run_yes_rate():
    with Env() as env:
        d = env.relayd(start=False)
        e1, e2, e3, e4, e5, bad = sample(env)
        rc, out, err = ctl(d, "dlq", "rm", "--app", "a", "--dry-run")
        eq(rc, 0, "dry run\n" + err)
        lines = out.splitlines()
        eq(lines[0], "3 matching DLQ entries (dry run: nothing removed)",
           "count")
        eq([ln.split()[0] for ln in lines[2:]], [e1, e2, e3], "sample ids")
        eq(re.split(r"\s{2,}", lines[2])[1:],
           ["events", "a", "h1", "3h0m", "timed out after 6000ms"],
           "sample row: its last failure as REASON")
        eq(len(ids(env)), 6, "dry run changes nothing")

        rc, out, err = ctl(d, "dlq", "rm", "--app", "a", "--yes")
        eq((rc, out), (0, "Removed 3 of 3 DLQ entries (0 already gone)\n"),
           "rm --app a --yes\n" + err)
        check("1 malformed DLQ entry left alone" in err, err)
        eq(ids(env), [e4, e5, bad], "a's entries gone, malformed kept")

        rc, out, err = ctl(d, "dlq", "rm", "--id", bad, "--yes")
        eq((rc, out), (0, "Removed 1 of 1 DLQ entry (0 already gone)\n"),
           "a malformed entry named by --id is removed\n" + err)
        eq(ids(env), [e4, e5], "malformed entry removed")

        # --rate: 6 entries at 5 per second take at least a second.
        for i in range(6):
            put(env, "c", "h", "r", 10)
        t0 = time.monotonic()
        rc, out, err = ctl(d, "dlq", "rm", "--app", "c", "--yes",
                           "--rate", "5")
        took = time.monotonic() - t0
        eq((rc, out), (0, "Removed 6 of 6 DLQ entries (0 already gone)\n"),
           "rm --rate 5\n" + err)
        check(took >= 1.0, f"--rate 5 took {took:.2f}s for 6 entries")
        eq(ids(env), [e4, e5], "only c's entries removed")

        rc, out, err = ctl(d, "dlq", "rm", "--all", "--yes")
        eq((rc, out), (0, "Removed 2 of 2 DLQ entries (0 already gone)\n"),
           "rm --all\n" + err)
        eq(ids(env), [], "DLQ empty")


@case
def bulk_json_says_what_was_done():
    """--json of bulk rm and replay --redrive: one JSON object with the
    counts and every entry's result; with --dry-run every selected entry
    and nothing changed; refused for a single ID (a usage error)."""
    with Env() as env:
        d = env.relayd(start=False)
        e1, e2, e3, e4, e5, bad = sample(env)
        rc, out, err = ctl(d, "dlq", "rm", "--all", "--dry-run", "--json")
        eq(rc, 0, "dry run --json\n" + err)
        j = json.loads(out)
        eq((j["command"], j["matched"], j["dry_run"], j["counts"]),
           ("dlq rm", 6, True, {}), "dry run header")
        eq([(x["id"], x["result"]) for x in j["entries"]],
           [(e, "selected") for e in (e1, e2, e3, e4, e5, bad)],
           "every selected entry")
        check(j["entries"][5]["app"] is None and
              "missing field" in j["entries"][5]["detail"],
              f"the malformed one says why: {j['entries'][5]}")
        eq(len(ids(env)), 6, "dry run changes nothing")

        rc, out, err = ctl(d, "dlq", "replay", "--redrive", "--app", "a",
                           "--yes", "--json")
        eq(rc, 0, "redrive --json\n" + err)
        j = json.loads(out)
        eq((j["command"], j["matched"], j["interrupted"]),
           ("dlq replay --redrive", 3, False), "redrive header")
        eq(j["counts"]["redriven"], 3, f"counts {j['counts']}")
        eq([(x["id"], x["stream"], x["app"], x["result"])
            for x in j["entries"]],
           [(e, "events", "a", "redriven") for e in (e1, e2, e3)],
           "each entry redriven")
        for x in j["entries"]:
            check(x["detail"].startswith("as "), x["detail"])

        rc, out, err = ctl(d, "dlq", "rm", "--all", "--yes", "--json")
        eq(rc, 0, "rm --json\n" + err)
        j = json.loads(out)
        eq(j["counts"], {"removed": 3, "gone": 0}, "rm counts")
        eq(sorted(x["id"] for x in j["entries"]), sorted([e4, e5, bad]),
           "the rest removed")
        eq(ids(env), [], "DLQ empty")

        for cmd in (["rm", e1], ["replay", e1]):
            rc, out, err = ctl(d, "dlq", *cmd, "--json")
            eq((rc, out), (2, ""), f"dlq {cmd[0]} ID --json: usage\n{err}")
            check("--json goes with --all or filters" in err, err)


def fill(env, n, app="m"):
    """@n well-formed DLQ entries of @app, written by Redis itself."""
    env.r("EVAL", """
        for i = 1, tonumber(ARGV[1]) do
          redis.call('XADD', KEYS[1], '*', 'original_stream', 'events',
            'original_id', '1-' .. i, 'group', 'relay', 'consumer', 'c1',
            'event', '{"k":"x"}', 'reason', 'exit status 1', 'app',
            ARGV[2], 'handler', 'h', 'deliveries', '1',
            'handler_attempts', '1', 'timestamp', ARGV[3])
        end
        return 1""", "1", DLQ, str(n), app, ts(60))


@case
def bulk_memory_does_not_grow_with_the_selection():
    """rm --all --dry-run --json over 2,000 and over 50,000 entries (the
    count, then every entry read again and reported, as a real run reads
    them): relayctl's peak RSS differs by less than 4 MiB. The selection
    and the report are never held whole (about 100 bytes an entry would
    be 4.7 MiB, more under the sanitizers)."""
    peaks = {}
    for n in (2000, 50000):
        with Env() as env:
            d = env.relayd(start=False)
            fill(env, n)
            out = os.path.join(env.dir, "rm.json")
            with open(out, "w") as f:
                pid = os.fork()
                if pid == 0:
                    # wait4() gives this child's own peak RSS
                    try:
                        os.dup2(f.fileno(), 1)
                        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
                        env = ctl_env(d)
                        # ASan keeps freed memory in a quarantine (256 MiB
                        # by default): RSS would measure the churn
                        env["ASAN_OPTIONS"] = ":".join(filter(None, (
                            env.get("ASAN_OPTIONS"),
                            "quarantine_size_mb=0")))
                        os.execve(RELAYCTL, [RELAYCTL, "dlq", "rm", "--all",
                                             "--dry-run", "--json"], env)
                    finally:
                        os._exit(127)
                _, status, ru = os.wait4(pid, 0)
            eq(os.waitstatus_to_exitcode(status), 0, f"rm of {n}")
            j = json.load(open(out))
            eq((j["matched"], len(j["entries"])), (n, n), "every entry")
            eq(int(env.r("XLEN", DLQ)), n, "a dry run removes nothing")
            peaks[n] = ru.ru_maxrss
    print(f"# peak RSS (KiB) by selection size: {peaks}", flush=True)
    check(peaks[50000] - peaks[2000] < 4096,
          f"peak RSS (KiB) by selection size: {peaks}")


@case
def bulk_entries_gone_before_their_turn_and_new_ones():
    """An entry removed by someone else after the count is "already
    gone"; one added after the count is not touched."""
    with Env() as env:
        d = env.relayd(start=False)
        mine = [put(env, "g", "h", "r", 60) for _ in range(10)]
        p = subprocess.Popen([RELAYCTL, "dlq", "rm", "--app", "g", "--yes",
                              "--rate", "4", "--json"], env=ctl_env(d),
                             stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        # the first removal says the count is done
        env.wait(lambda: int(env.r("XLEN", DLQ)) < 10, "first removal")
        for e in mine[7:]:
            env.r("XDEL", DLQ, e)
        late = put(env, "g", "h", "r", 1)
        out, err = p.communicate(timeout=120)
        eq(p.returncode, 0, err)
        j = json.loads(out)
        eq((j["matched"], j["counts"]), (10, {"removed": 7, "gone": 3}),
           out)
        eq([x["id"] for x in j["entries"] if x["result"] == "removed"],
           mine[:7], "removed in order")
        eq(ids(env), [late], "the entry added after the count stays")


@case
def bulk_confirmation_on_a_terminal():
    with Env() as env:
        d = env.relayd(start=False)
        for i in range(12):
            put(env, "a", "h", "r", 10)
        rc, out, err = ctl_tty(d, "dlq", "rm", "--app", "a", answer="n\n")
        eq((rc, out), (1, ""), "answer n\n" + err)
        check("Remove 12 DLQ entries? [y/N]" in err and "aborted" in err,
              err)
        eq(len(ids(env)), 12, "nothing removed")
        rc, out, err = ctl_tty(d, "dlq", "rm", "--app", "a", answer="y\n")
        eq((rc, out), (0, "Removed 12 of 12 DLQ entries (0 already gone)\n"),
           "answer y\n" + err)
        eq(ids(env), [], "all removed")
        # At or below the threshold: no question.
        for i in range(3):
            put(env, "a", "h", "r", 10)
        rc, out, err = ctl_tty(d, "dlq", "rm", "--all", answer="")
        eq((rc, err), (0, ""), "3 entries: no question\n" + out)
        eq(ids(env), [], "removed without asking")


def replay_app(env, gate):
    """App a, handlers h1 and h2: log the event's k to runs.log; h1 fails
    while the file 'fail' exists; an event with "slow" waits for @gate."""
    d = os.path.join(env.apps_dir, "a")
    os.makedirs(d, exist_ok=True)
    log = os.path.join(env.dir, "runs.log")
    fail = os.path.join(env.dir, "fail")
    script = ('ev=$(cat); echo "$ev" >> "$LOG.start"; '
              'case "$ev" in *slow*) while [ ! -e "$GATE" ]; do '
              'sleep 0.05; done;; esac; '
              'test -e "$FAIL" && { echo failing >&2; exit 3; }; '
              'echo "$ev" >> "$LOG"')
    lines = ["runtime: exec",
             f"command: [\"/bin/sh\", \"-c\", {json.dumps(script)}]",
             "env:", f"  LOG: {json.dumps(log)}",
             f"  GATE: {json.dumps(gate)}", f"  FAIL: {json.dumps(fail)}",
             "events:"]
    for h in ("h1", "h2"):
        lines += [f"  - handler: {h}",
                  f"    pattern: {{\"never\": [\"{h}\"]}}",
                  "    retries: 0", "    timeout: 60s"]
    with open(os.path.join(d, "template.yaml"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return log, fail


def runs(log):
    """The k of every finished (or started: log + '.start') run."""
    if not os.path.exists(log):
        return []
    with open(log) as f:
        return [json.loads(ln)["k"] for ln in f if ln.strip()]


@case
def replay_not_held_up_by_an_idle_stream():
    """relayd answers a dlq replay on a connection of its own: on an idle
    stream its consumer's XREADGROUP blocks for a second at a time, and a
    replay queued behind it waited for it (about one entry per second,
    whatever --rate said)."""
    with Env() as env:
        gate = os.path.join(env.dir, "gate")
        log, _ = replay_app(env, gate)
        # Real time: the BLOCK of an idle read is 1 s, not scaled down.
        d = env.relayd(RELAY_TEST_TIME_SCALE=None)
        for i in range(6):
            put(env, "a", "h1", "r", 60, {"k": f"e{i}"})
        time.sleep(1.5)  # the consumer is blocked on the idle stream
        t0 = time.monotonic()
        rc, out, err = ctl(d, "dlq", "replay", "--all", "--rate", "1000",
                           "--yes")
        took = time.monotonic() - t0
        eq(rc, 0, "replay --all\n" + out + err)
        eq(len(runs(log)), 6, "six runs")
        # Held up: at least 6 x ~1 s; not: well under a second each.
        check(took < 3.0, f"6 replays took {took:.2f} s")
        env.wait(lambda: ids(env) == [], "every entry deleted")


@case
def replay_not_held_up_by_idle_partitions():
    """The same over two partitions: each partition's replays go on its
    own control connection, not behind its idle read."""
    with Env() as env:
        gate = os.path.join(env.dir, "gate")
        log, _ = replay_app(env, gate)
        d = env.relayd(REDIS_STREAM="ev{0..1}", RELAY_TEST_TIME_SCALE=None)
        q0, q1 = "relay:ev:{p0}:dlq", "relay:ev:{p1}:dlq"
        for i in range(6):
            put(env, "a", "h1", "r", 60, {"k": f"e{i}"},
                dlq=q1 if i % 2 else q0)
        time.sleep(1.5)  # both consumers are blocked on idle streams
        t0 = time.monotonic()
        rc, out, err = ctl(d, "dlq", "replay", "--all", "--rate", "1000",
                           "--yes")
        took = time.monotonic() - t0
        eq(rc, 0, "replay --all\n" + out + err)
        eq(len(runs(log)), 6, "six runs")
        check(took < 3.0, f"6 replays took {took:.2f} s")
        env.wait(lambda: (ids(env, q0), ids(env, q1)) == ([], []),
                 "every entry deleted")
        d.stop()


@case
def replay_bulk_filters_dry_run_and_claims():
    with Env() as env:
        gate = os.path.join(env.dir, "gate")
        log, fail = replay_app(env, gate)
        d = env.relayd()
        r1 = exhausted("a", "h1", 1, "exit status 3")
        e1 = put(env, "a", "h1", r1, 3600, {"k": "e1"})
        e2 = put(env, "a", "h1", r1, 1800, {"k": "e2"})
        e3 = put(env, "a", "h2", r1, 60, {"k": "e3"})
        e4 = put(env, "-", "-", "decode event: x", 60)

        rc, out, err = ctl(d, "dlq", "replay", "--app", "a", "--dry-run")
        eq(rc, 0, "dry run\n" + err)
        eq(out.splitlines()[0],
           "3 matching DLQ entries (dry run: nothing replayed)", out)
        eq((runs(log), len(ids(env))), ([], 4), "dry run runs nothing")

        # A failing run keeps the entry and drops the claim.
        open(fail, "w").close()
        rc, out, err = ctl(d, "dlq", "replay", "--handler", "h2", "--yes")
        eq(rc, 1, "failed replay\n" + out + err)
        check(f"{e3} a/h2 failed (exit status 3); the DLQ entry is kept\n"
              in out, out)
        check("Replayed 0 of 1 entries (1 failed, 0 skipped)" in out, out)
        eq(env.r("EXISTS", f"{DLQ}:replaying:{e3}"), 0, "claim dropped")
        os.unlink(fail)

        # An entry claimed by someone else is skipped, not run.
        env.r("SET", f"{DLQ}:replaying:{e3}", "other", "PX", "60000")
        rc, out, err = ctl(d, "dlq", "replay", "--id", e3, "--yes")
        eq(rc, 1, "claimed entry\n" + out + err)
        check(f"{e3} a/h2 skipped (being replayed" in out, out)
        check("(0 failed, 1 skipped, 1 of them being replayed elsewhere)"
              in out, out)
        rc, out, err = ctl(d, "dlq", "replay", e3)
        eq(rc, 1, "claimed entry, by ID\n" + out + err)
        check("being replayed" in err, err)
        eq(env.r("GET", f"{DLQ}:replaying:{e3}"), "other", "claim kept")
        env.r("DEL", f"{DLQ}:replaying:{e3}")

        # An app relayd does not know (not_found): a failure, not "gone".
        z = put(env, "zzz", "h", r1, 60, {"k": "z"})
        rc, out, err = ctl(d, "dlq", "replay", "--app", "zzz", "--yes")
        eq(rc, 1, "unknown app\n" + out + err)
        check(f"{z} " in out and "(not_found)" in out and
              "(1 failed, 0 skipped)" in out, out)
        check(z in ids(env), "its entry is kept")
        eq(env.r("EXISTS", f"{DLQ}:replaying:{z}"), 0, "claim dropped")
        env.r("XDEL", DLQ, z)

        # --handler h1 --since 45m: e2 only.
        rc, out, err = ctl(d, "dlq", "replay", "--handler", "h1", "--since",
                           "45m", "--yes", "--rate", "1000")
        eq((rc, out), (0, f"{e2} a/h1 replayed\n"
                          "Replayed 1 of 1 entries (0 failed, 0 skipped)\n"),
           "filtered replay\n" + err)
        env.wait(lambda: ids(env) == [e1, e3, e4], "e2 deleted by relayd")
        pttl = env.r("PTTL", f"{DLQ}:replaying:{e2}")
        check(0 < pttl <= 60000, f"claim of a success expires soon: {pttl}")

        # --limit 1: the oldest matching entry only.
        rc, out, err = ctl(d, "dlq", "replay", "--all", "--limit", "1",
                           "--yes")
        eq((rc, out), (0, f"{e1} a/h1 replayed\n"
                          "Replayed 1 of 1 entries (0 failed, 0 skipped)\n"),
           "replay --limit 1\n" + err)
        env.wait(lambda: ids(env) == [e3, e4], "e1 deleted by relayd")

        # --all: the rest; the placeholder is skipped.
        rc, out, err = ctl(d, "dlq", "replay", "--all", "--yes")
        eq(rc, 0, "replay --all\n" + out + err)
        eq(out, f"{e3} a/h2 replayed\n"
                f"{e4} -/-: skipped (placeholder of a malformed message, "
                "not replayable)\n"
                "Replayed 1 of 2 entries (0 failed, 1 skipped)\n", out)
        env.wait(lambda: ids(env) == [e4], "only the placeholder left")
        eq(sorted(runs(log)), ["e1", "e2", "e3"], "each ran once")
        d.stop()


@case
def interrupted_replay_never_twice_never_lost():
    with Env() as env:
        gate = os.path.join(env.dir, "gate")
        log, _ = replay_app(env, gate)
        d = env.relayd()
        r1 = exhausted("a", "h1", 1, "exit status 3")
        s1 = put(env, "a", "h1", r1, 60, {"k": "s1", "slow": 1})
        f1 = put(env, "a", "h1", r1, 50, {"k": "f1"})
        f2 = put(env, "a", "h2", r1, 40, {"k": "f2"})

        # SIGKILL while relayd runs s1: relayd finishes it anyway.
        p = subprocess.Popen([RELAYCTL, "dlq", "replay", "--all", "--yes",
                              "--rate", "1000"], env=ctl_env(d),
                             stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        env.procs.append(p)
        env.wait(lambda: runs(log + ".start") == ["s1"], "s1 started")
        p.kill()
        p.wait()
        # The same command again: s1 is claimed (still running), skipped.
        rc, out, err = ctl(d, "dlq", "replay", "--all", "--yes")
        eq(rc, 1, "second run\n" + out + err)
        check(f"{s1} a/h1 skipped (being replayed" in out, out)
        check(f"{f1} a/h1 replayed\n{f2} a/h2 replayed\n" in out, out)
        open(gate, "w").close()
        env.wait(lambda: ids(env) == [], "s1 finished and deleted")
        rc, out, err = ctl(d, "dlq", "replay", "--all", "--yes")
        eq((rc, out), (0, "Replayed 0 of 0 entries (0 failed, 0 skipped)\n"),
           "third run: nothing left\n" + err)
        eq(sorted(runs(log)), ["f1", "f2", "s1"], "each ran exactly once")
        eq(sorted(runs(log + ".start")), ["f1", "f2", "s1"],
           "each started exactly once")

        # SIGINT: the entry in hand is finished, the rest stays.
        os.unlink(gate)
        os.unlink(log)
        os.unlink(log + ".start")
        s2 = put(env, "a", "h1", r1, 30, {"k": "s2", "slow": 1})
        g1 = put(env, "a", "h1", r1, 20, {"k": "g1"})
        g2 = put(env, "a", "h1", r1, 10, {"k": "g2"})
        p = subprocess.Popen([RELAYCTL, "dlq", "replay", "--app", "a",
                              "--yes", "--rate", "1000"], env=ctl_env(d),
                             stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        env.procs.append(p)
        env.wait(lambda: runs(log + ".start") == ["s2"], "s2 started")
        p.send_signal(signal.SIGINT)
        open(gate, "w").close()
        out, err = p.communicate(timeout=120)
        eq(p.returncode, 1, "interrupted run\n" + out + err)
        eq(out, f"{s2} a/h1 replayed\n"
                "Replayed 1 of 3 entries (0 failed, 0 skipped)\n", out)
        check("interrupted: 2 matching entries not replayed" in err, err)
        env.wait(lambda: ids(env) == [g1, g2], "s2 gone, the rest kept")
        rc, out, err = ctl(d, "dlq", "replay", "--app", "a", "--yes")
        eq(rc, 0, "go on\n" + out + err)
        env.wait(lambda: ids(env) == [], "all replayed")
        eq(sorted(runs(log)), ["g1", "g2", "s2"], "each ran exactly once")
        d.stop()


@case
def every_stream_in_turn():
    """REDIS_STREAM names two partitions: the bulk commands go through
    both DLQs in list order, and replay tells relayd each entry's stream."""
    with Env() as env:
        gate = os.path.join(env.dir, "gate")
        log, _ = replay_app(env, gate)
        d = env.relayd(REDIS_STREAM="ev{0..1}")
        q0, q1 = "relay:ev:{p0}:dlq", "relay:ev:{p1}:dlq"
        r1 = exhausted("a", "h1", 1, "exit status 3")
        b1 = put(env, "a", "h1", r1, 60, {"k": "b1"}, dlq=q1)
        a1 = put(env, "a", "h1", r1, 50, {"k": "a1"}, dlq=q0)
        a2 = put(env, "b", "h1", r1, 40, {"k": "a2"}, dlq=q0)
        rc, out, err = ctl(d, "dlq", "summary", "--json")
        eq([(g["app"], g["count"]) for g in json.loads(out)],
           [("a", 2), ("b", 1)], "summary over both DLQs\n" + err)
        rc, out, err = ctl(d, "dlq", "replay", "--app", "a", "--dry-run")
        eq([re.split(r"\s{2,}", ln)[:2] for ln in out.splitlines()[2:]],
           [[a1, "ev:{p0}"], [b1, "ev:{p1}"]], "list order, STREAM column")
        rc, out, err = ctl(d, "dlq", "replay", "--app", "a", "--yes")
        eq((rc, out), (0, f"{a1} a/h1 replayed\n{b1} a/h1 replayed\n"
                          "Replayed 2 of 2 entries (0 failed, 0 skipped)\n"),
           "replay over both\n" + err)
        env.wait(lambda: (ids(env, q0), ids(env, q1)) == ([a2], []),
                 "each deleted from its own DLQ")
        eq(sorted(runs(log)), ["a1", "b1"], "each ran once")
        put(env, "c", "h", r1, 30, dlq=q1)
        rc, out, err = ctl(d, "dlq", "rm", "--all", "--yes")
        eq((rc, out), (0, "Removed 2 of 2 DLQ entries (0 already gone)\n"),
           "rm over both\n" + err)
        eq((ids(env, q0), ids(env, q1)), ([], []), "both empty")
        d.stop()


@case
def terminal_output_is_clean_and_shows_progress():
    with Env() as env:
        d = env.relayd(start=False)
        put(env, "a", "h", exhausted("a", "h", 1, "bad \x1b[31mred\x07"), 9)
        rc, out, err = ctl(d, "dlq", "summary")
        check("\x1b" not in out and "\x07" not in out and
              "bad ?[Nmred?" in out, repr(out))
        rc, out, err = ctl(d, "dlq", "rm", "--all", "--dry-run")
        check("\x1b" not in out and "bad ?[31mred?" in out, repr(out))
        rc, out, err = ctl(d, "dlq", "ls", "--reason", "\x1b")
        eq(rc, 0, "an ESC in a regex is fine")
        rc, out, err = ctl(d, "dlq", "ls", "--app", "\x1b[2J", "--app", "x")
        eq(rc, 2, "twice")
        rc, out, err = ctl(d, "dlq", "ls", "--since", "\x1b[2J")
        check("\x1b" not in err and "?[2J" in err, repr(err))
        # stderr a terminal: a progress line, cleared at the end.
        master, slave = pty.openpty()
        p = subprocess.Popen([RELAYCTL, "dlq", "rm", "--all", "--yes"],
                             env=ctl_env(d), stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=slave)
        os.close(slave)
        out, _ = p.communicate(timeout=120)
        tty = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            tty += chunk
        os.close(master)
        eq(p.returncode, 0, "rm with a terminal on stderr")
        check(b"\rremoving 1/1\x1b[K" in tty and tty.endswith(b"\r\x1b[K"),
              repr(tty))
        eq(out, b"Removed 1 of 1 DLQ entry (0 already gone)\n", "stdout")


if __name__ == "__main__":
    sys.exit(run_cases())
