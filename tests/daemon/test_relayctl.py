#!/usr/bin/env python3
"""relayctl against a real redis-server and a real relayd (issue #6,
doc/cli.md): dlq ls/inspect/replay/rm, app ls/inspect/invoke, health,
stats [reset]. DLQ entries are made by real paths (a handler that exits
non-zero with retries 0, a message that is not JSON); the malformed DLQ
entry case writes the DLQ stream directly.

usage: test_relayctl.py RELAYD RELAYCTL
"""
import json
import os
import pty
import re
import subprocess
import sys

from harness import Env, case, check, eq, run_cases, wait_for

RELAYCTL = os.environ.get("RELAYCTL") or (sys.argv[2] if len(sys.argv) > 2
                                          else "relayctl")


def ctl(d, *args, stdin=None, input=None, extra=None):
    """Run relayctl with relayd @d's environment; (rc, stdout, stderr)."""
    env = {k: v for k, v in os.environ.items()
           if k.startswith(("ASAN_", "UBSAN_", "LSAN_", "PATH"))}
    for k in ("REDIS_URI", "REDIS_STREAM", "REDIS_GROUP", "RELAY_RUN_DIR",
              "RELAY_STATE_DIR", "RELAY_APPS_DIR"):
        env[k] = d.vars[k]
    env.update(extra or {})
    p = subprocess.run([RELAYCTL, *args], env=env, stdin=stdin,
                       input=input, capture_output=True, text=True,
                       errors="replace", timeout=120)
    check("Sanitizer" not in p.stderr and "runtime error" not in p.stderr,
          f"relayctl {args}: sanitizer report:\n{p.stderr}")
    return p.returncode, p.stdout, p.stderr


def okfile_app(env, name, rules, okfile):
    """An exec app whose handler succeeds only while @okfile exists."""
    d = os.path.join(env.apps_dir, name)
    os.makedirs(d, exist_ok=True)
    lines = ["runtime: exec",
             'command: ["/bin/sh", "-c", "cat >/dev/null; '
             'test -e \\"$OKFILE\\" || { echo no okfile >&2; exit 3; }"]',
             "env:", f"  OKFILE: {json.dumps(okfile)}",
             "  SECRET_TOKEN: \"hunter2-do-not-show\"", "events:"]
    for h, pat in rules:
        lines += [f"  - handler: {h}", f"    pattern: {json.dumps(pat)}",
                  "    retries: 0", "    timeout: 5s"]
    with open(os.path.join(d, "template.yaml"), "w") as f:
        f.write("\n".join(lines) + "\n")


def table(out):
    """Rows of a relayctl table, split on runs of 2+ spaces; a blank line
    ends the table (dlq ls adds a retention footer)."""
    rows = []
    for ln in out.splitlines():
        if not ln.strip():
            break
        rows.append(re.split(r"\s{2,}", ln.rstrip()))
    return rows


def make_dlq(env, d):
    """Three DLQ entries: a/h1 (event e1), b/h2 (event e2), a placeholder
    (a message that is not JSON). Returns ([dlq ids], [message ids])."""
    m1 = env.xadd({"kind": "x", "k": "e1", "n": [1, 2]})
    env.wait(lambda: len(env.dlq()) == 1, "first DLQ entry")
    m2 = env.xadd({"kind": "y", "k": "e2"})
    env.wait(lambda: len(env.dlq()) == 2, "second DLQ entry")
    m3 = env.xadd("this is not json")
    env.wait(lambda: len(env.dlq()) == 3, "placeholder DLQ entry")
    return [e["_id"] for e in env.dlq()], [m1, m2, m3]


def dlq_env(env):
    ok = os.path.join(env.dir, "ok")
    okfile_app(env, "a", [("h1", {"kind": ["x"]})], ok)
    okfile_app(env, "b", [("h2", {"kind": ["y"]})], ok)
    return env.relayd(), ok


@case
def dlq_ls_table_json_and_filters():
    with Env() as env:
        d, _ = dlq_env(env)
        ids, msgs = make_dlq(env, d)
        rc, out, err = ctl(d, "dlq", "ls")
        eq(rc, 0, "dlq ls exit\n" + err)
        rows = table(out)
        eq(rows[0], ["ID", "ORIGINAL", "APP", "HANDLER", "ATTEMPTS",
                     "AGE", "EXPIRES"], "header")
        eq([r[:5] for r in rows[1:]],
           [[ids[0], f"events/{msgs[0]}", "a", "h1", "1"],
            [ids[1], f"events/{msgs[1]}", "b", "h2", "1"],
            [ids[2], f"events/{msgs[2]}", "-", "-", "0"]],
           "rows in stream order")
        for r in rows[1:]:
            check(re.fullmatch(r"\d+s|\d+m\d+s", r[5]), f"AGE {r[5]!r}")
        # The header's columns line up with the cells.
        lines = out.split("\n\n")[0].splitlines()
        for col in ("ORIGINAL", "APP", "AGE"):
            at = lines[0].index(col)
            check(all(ln[at - 2:at] == "  " and ln[at] != " "
                      for ln in lines[1:]), f"column {col} aligned:\n{out}")

        check(out.endswith("\n\nRetention: entries older than 7d0h are "
                           "trimmed (REDIS_DLQ_RETENTION).\n"),
              "retention footer:\n" + out)

        rc, out, err = ctl(d, "dlq", "ls", "--json")
        eq(rc, 0, "dlq ls --json exit\n" + err)
        got = json.loads(out)
        eq(len(got), 3, "one object per entry")
        want_keys = {"id", "original_stream", "original_id", "group",
                     "consumer", "app", "handler", "reason", "deliveries",
                     "handler_attempts", "timestamp", "trace",
                     "stderr_tail", "event", "expires_in_seconds"}
        raw = env.dlq()
        for o, r in zip(got, raw):
            eq(set(o), want_keys, "JSON members")
            eq(o["id"], r["_id"], "id")
            for k in ("original_stream", "original_id", "group",
                      "consumer", "app", "handler", "reason", "timestamp",
                      "event"):
                eq(o[k], r[k], f"JSON {k}")
            eq(o["handler_attempts"], int(r["handler_attempts"]),
               "attempts")
            eq(o["trace"], r.get("trace"), "trace")
            eq(o["stderr_tail"], r.get("stderr_tail"), "stderr_tail")

        rc, out, _ = ctl(d, "dlq", "ls", "--app", "a")
        eq([r[0] for r in table(out)[1:]], [ids[0]], "--app a")
        rc, out, _ = ctl(d, "dlq", "ls", "--limit", "2")
        eq([r[0] for r in table(out)[1:]], ids[:2], "--limit 2")
        rc, out, _ = ctl(d, "dlq", "ls", "--limit=1", "--app=b", "--json")
        eq([o["id"] for o in json.loads(out)], [ids[1]], "--app b --json")
        rc, _, err = ctl(d, "dlq", "ls", "--limit", "0")
        eq(rc, 2, "--limit 0 is a usage error")

        d.stop()


@case
def dlq_malformed_entry_shown_and_skipped():
    """One DLQ entry nobody can parse (written by hand, between two real
    ones, with a terminal escape in a field name) is a row of its own in
    ls, is shown as stored by inspect, and is skipped and counted by
    replay --all; the good entries around it are listed and replayed."""
    with Env() as env:
        d, ok = dlq_env(env)
        m1 = env.xadd({"kind": "x", "k": "e1"})
        env.wait(lambda: len(env.dlq()) == 1, "first DLQ entry")
        bad = env.r("XADD", "relay:events:dlq", "*", "original_stream",
                    "events", "app\x1b[2J", "a")
        m2 = env.xadd({"kind": "y", "k": "e2"})
        env.wait(lambda: len(env.dlq()) == 3, "second DLQ entry")
        ids = [e["_id"] for e in env.dlq()]
        eq(ids[1], bad, "the bad entry sits between the good ones")

        rc, out, err = ctl(d, "dlq", "ls")
        eq(rc, 0, "dlq ls goes on past a malformed entry\n" + err)
        rows = table(out)
        eq([r[:5] for r in rows[1:]],
           [[ids[0], f"events/{m1}", "a", "h1", "1"],
            [bad, "(malformed)", "?", "?", "?"],
            [ids[2], f"events/{m2}", "b", "h2", "1"]], "rows")
        check("1 malformed DLQ entry listed" in err, err)
        check("\x1b" not in out + err, "no raw escape")

        rc, out, _ = ctl(d, "dlq", "ls", "--app", "b")
        eq([r[0] for r in table(out)[1:]], [bad, ids[2]],
           "--app keeps the entry whose app is unknown")
        rc, out, err = ctl(d, "dlq", "ls", "--json")
        eq(rc, 0, "ls --json\n" + err)
        got = json.loads(out)
        eq([o["id"] for o in got], ids, "--json ids")
        check("unknown field" in got[1]["malformed"], got[1])
        eq(got[1]["fields"], {"original_stream": "events",
                              "app\x1b[2J": "a"},
           "fields as stored (JSON escapes them)")

        rc, out, err = ctl(d, "dlq", "inspect", bad)
        eq(rc, 1, "inspect of a malformed entry\n" + err)
        check(f"ID:" in out and bad in out and "Malformed:" in out and
              "  original_stream: events\n" in out and
              "  app?[2J: a\n" in out, out)
        check(bad in err and "unknown field" in err, err)
        check("\x1b" not in out + err, "no raw escape")
        rc, out, err = ctl(d, "dlq", "inspect", bad, "--json")
        eq((rc, json.loads(out)["id"]), (1, bad), "inspect --json")

        rc, out, err = ctl(d, "dlq", "replay", bad)
        eq(rc, 1, "replay of a malformed entry")
        check("malformed" in err, err)

        open(ok, "w").close()
        rc, out, err = ctl(d, "dlq", "replay", "--all", "--yes")
        eq(rc, 1, "replay --all with a malformed entry\n" + out + err)
        check(f"{ids[0]} a/h1 replayed\n" in out and
              f"{bad}: skipped (malformed: " in out and
              f"{ids[2]} b/h2 replayed\n" in out, out)
        check(out.endswith("Replayed 2 of 3 entries (0 failed, 1 skipped, "
                           "1 of them malformed)\n"), out)
        check("\x1b" not in out + err, "no raw escape")
        env.wait(lambda: [e["_id"] for e in env.dlq()] == [bad],
                 "only the malformed entry is left")
        eq(ctl(d, "dlq", "rm", bad)[0], 0, "rm removes it")
        d.stop()


@case
def dlq_inspect_replay_rm():
    with Env() as env:
        d, ok = dlq_env(env)
        ids, msgs = make_dlq(env, d)

        rc, out, err = ctl(d, "dlq", "inspect", ids[0])
        eq(rc, 0, "inspect exit\n" + err)
        head, _, event = out.partition("Event:\n")
        # The handler's stderr ("no okfile") comes before the event.
        head, _, tail = head.partition("Stderr tail:\n")
        # Then the invocation's attempts (R-5 timeline), before the event.
        tail, _, timeline = tail.partition("Timeline:\n")
        eq(tail, "  no okfile\n", "the stderr tail, indented")
        check(timeline.startswith("  #1 failed (exit 3)  "),
              f"the timeline after it: {timeline!r}")
        kv = {}
        for ln in head.splitlines():
            k, _, v = ln.partition(":")
            kv[k] = v.strip()
        eq(kv["ID"], ids[0], "ID line")
        eq(kv["Original ID"], msgs[0], "Original ID line")
        eq(kv["App"], "a", "App line")
        eq(kv["Handler"], "h1", "Handler line")
        eq(kv["Attempts"], "1", "Attempts line")
        check("Trace" not in kv, "no Trace line when the entry has none")
        check(re.search(r"Z \(\d+(s|m\d+s) ago\)$", kv["Timestamp"]),
              f"timestamp with relative age: {kv['Timestamp']!r}")
        vals = [ln.index(":") + 1 + len(ln[ln.index(":") + 1:]) -
                len(ln[ln.index(":") + 1:].lstrip())
                for ln in head.splitlines()]
        eq(len(set(vals)), 1, f"values aligned:\n{head}")
        eq(json.loads(event), {"kind": "x", "k": "e1", "n": [1, 2]},
           "event")
        check(event.startswith('{\n  "kind": "x",\n'),
              f"event pretty-printed: {event!r}")

        rc, out, err = ctl(d, "dlq", "inspect", ids[2])
        eq(rc, 0, "inspect placeholder")
        eq(out.partition("Event:\n")[2], "this is not json\n",
           "a non-JSON event is printed verbatim")
        rc, out, err = ctl(d, "dlq", "inspect", ids[1], "--json")
        eq(json.loads(out)["event"], '{"kind":"y","k":"e2"}', "--json")

        # An entry with a trace shows it.
        tid = env.r("XADD", "relay:events:dlq", "*", "original_stream",
                    "events", "original_id", "5-0", "group", "relay",
                    "consumer", "c", "event", "{}", "reason", "r", "app",
                    "a", "handler", "h1", "deliveries", "2",
                    "handler_attempts", "1", "timestamp",
                    "2026-01-02T03:04:05.678Z", "trace", "sched/q@123")
        rc, out, err = ctl(d, "dlq", "inspect", tid)
        eq(rc, 0, "inspect traced entry\n" + err)
        check("\nTrace:" + " " * 12 + "sched/q@123\n" in out, out)
        check("\nTimestamp:" + " " * 8 + "2026-01-02T03:04:05.678Z (" in out,
              out)
        eq(ctl(d, "dlq", "rm", tid)[0], 0, "rm traced entry")

        rc, out, err = ctl(d, "dlq", "inspect", "1-0")
        eq(rc, 1, "unknown id exit")
        check('unknown DLQ entry "1-0"' in err, err)

        # Placeholder refused before relayd is contacted: no socket.
        rc, out, err = ctl(d, "dlq", "replay", ids[2],
                           extra={"RELAY_RUN_DIR": "/nonexistent"})
        eq(rc, 1, "placeholder replay exit")
        check("not replayable" in err and "/nonexistent" not in err, err)

        # Failure keeps the entry and says why.
        rc, out, err = ctl(d, "dlq", "replay", ids[0])
        eq(rc, 1, "failed replay exit")
        check("a/h1 failed" in err and "kept" in err, err)
        eq(len(env.dlq()), 3, "entry kept after a failed replay")

        # Success deletes it.
        open(ok, "w").close()
        rc, out, err = ctl(d, "dlq", "replay", ids[0])
        eq((rc, out), (0, "Replayed handler successfully\n"),
           "replay success\n" + err)
        env.wait(lambda: ids[0] not in [e["_id"] for e in env.dlq()],
                 "replayed entry deleted")

        # --all --app b: replays b's entry only; placeholders untouched.
        rc, out, err = ctl(d, "dlq", "replay", "--all", "--app", "b",
                           "--yes")
        eq(rc, 0, "replay --all\n" + out + err)
        check(f"{ids[1]} b/h2 replayed\n" in out, out)
        env.wait(lambda: [e["_id"] for e in env.dlq()] == [ids[2]],
                 "only the placeholder left")
        rc, out, err = ctl(d, "dlq", "replay", "--all", "--yes")
        eq(rc, 0, "replay --all with only a placeholder")
        check("skipped" in out, out)
        rc, _, _ = ctl(d, "dlq", "replay", ids[0], "--all")
        eq(rc, 2, "ID and --all together")

        rc, out, err = ctl(d, "dlq", "rm", "1-0")
        eq(rc, 1, "rm unknown exit")
        check('unknown DLQ entry "1-0"' in err, err)
        rc, out, err = ctl(d, "dlq", "rm", ids[2])
        eq((rc, out), (0, "DLQ entry removed\n"), "rm\n" + err)
        eq(env.dlq(), [], "DLQ empty")
        rc, out, err = ctl(d, "dlq", "ls")
        eq((rc, out), (0, "ID  ORIGINAL  APP  HANDLER  ATTEMPTS  AGE  "
                          "EXPIRES\n\n"
                          "Retention: entries older than 7d0h are trimmed "
                          "(REDIS_DLQ_RETENTION).\n"),
           "empty listing is the header and the retention footer")

        # An event that is not UTF-8 still lists as JSON.
        env.xadd(fields=["event", b"\xff\xfe{"])
        env.wait(lambda: len(env.dlq()) == 1, "non-UTF-8 placeholder")
        rc, out, err = ctl(d, "dlq", "ls", "--json")
        eq(rc, 0, "dlq ls --json\n" + err)
        eq(json.loads(out)[0]["event"], "??{", "non-UTF-8 bytes as '?'")
        d.stop()


@case
def app_ls_and_inspect():
    with Env() as env:
        ok = os.path.join(env.dir, "ok")
        okfile_app(env, "zeta", [("z1", {"kind": ["z"]})], ok)
        okfile_app(env, "alpha", [("a1", {"kind": ["x"], "n": [{"gt": 5}]}),
                                  ("a2", {"user": {"id": [{"prefix":
                                                           "u_"}]}})], ok)
        os.makedirs(os.path.join(env.apps_dir, "broken"))
        with open(os.path.join(env.apps_dir, "broken", "template.yaml"),
                  "w") as f:
            f.write("runtime: cobol\n")
        os.makedirs(os.path.join(env.apps_dir, "py"))
        with open(os.path.join(env.apps_dir, "py", "template.yaml"),
                  "w") as f:
            f.write("runtime: python3\nevents:\n  - handler: m.h\n"
                    "    pattern: {kind: [p]}\n")
        # No python3 on relayd's PATH: app py is unavailable.
        nopath = os.path.join(env.dir, "empty-bin")
        os.makedirs(nopath)
        d = env.relayd(PATH=nopath)
        rc, out, err = ctl(d, "app", "ls")
        eq(rc, 0, "app ls exit\n" + err)
        rows = table(out)
        eq(rows[0], ["NAME", "RUNTIME", "STATUS", "RULES", "UPDATED"],
           "header")
        eq([r[:4] for r in rows[1:]],
           [["alpha", "exec", "ready", "2"], ["broken", "-", "invalid", "-"],
            ["py", "python3", "unavailable", "1"],
            ["zeta", "exec", "ready", "1"]], "sorted rows")
        check(re.fullmatch(r"\d+s ago", rows[1][4]), rows[1][4])
        check("broken: " in err and "must be one of" in err,
              f"invalid app's reason on stderr: {err!r}")
        check("py: runtime python3: python3 not found" in err,
              f"unavailable app's reason on stderr: {err!r}")
        rc, out, err = ctl(d, "app", "ls", "--json")
        got = json.loads(out)
        eq([(a["name"], a["status"], a["rules"]) for a in got],
           [("alpha", "ready", 2), ("broken", "invalid", None),
            ("py", "unavailable", 1), ("zeta", "ready", 1)], "JSON")
        check(all(set(a) == {"name", "runtime", "status", "rules",
                             "updated", "errors"} for a in got), got)
        check("must be one of" in got[1]["errors"][0], got[1])

        rc, out, err = ctl(d, "app", "inspect", "alpha")
        eq(rc, 0, "inspect exit\n" + err)
        for want in ("Status:       ready", "Runtime:      exec",
                     "Env:          OKFILE, SECRET_TOKEN",
                     "  - handler: a1\n    timeout: 5s\n    retries: 0\n"
                     "    pattern:\n      kind: [x]\n      n: [{gt: 5}]\n",
                     "  - handler: a2\n", "      user:\n"
                     "        id: [{prefix: u_}]\n", "Schedules:    none"):
            check(want in out, f"{want!r} in:\n{out}")
        check("hunter2" not in out, "env values never shown")
        rc, out, err = ctl(d, "app", "inspect", "alpha", "--json")
        j = json.loads(out)
        eq(j["env"], ["OKFILE", "SECRET_TOKEN"], "env names")
        eq(j["rules"][0]["pattern"], {"kind": ["x"], "n": [{"gt": 5}]},
           "pattern JSON")
        check("hunter2" not in out, "env values never shown (JSON)")
        rc, out, err = ctl(d, "app", "inspect", "broken")
        eq(rc, 0, "inspect invalid app")
        check("Status:       invalid" in out and "must be one of" in out, out)
        rc, out, err = ctl(d, "app", "inspect", "py")
        check("Status:       unavailable\n" in out and
              "Last error:   runtime python3: python3 not found" in out, out)
        rc, out, err = ctl(d, "app", "inspect", "nope")
        eq(rc, 1, "unknown app")
        check('unknown app "nope"' in err, err)

        d.stop()
        rc, out, err = ctl(d, "app", "ls")
        eq(rc, 0, "app ls offline\n" + err)
        eq([r[:4] for r in table(out)[1:]],
           [["alpha", "exec", "offline", "2"],
            ["broken", "-", "invalid", "-"],
            ["py", "python3", "offline", "1"],
            ["zeta", "exec", "offline", "1"]], "offline rows")
        rc, out, err = ctl(d, "app", "inspect", "zeta")
        check("Status:       offline" in out, out)


@case
def app_invoke():
    with Env() as env:
        ok = os.path.join(env.dir, "ok")
        okfile_app(env, "a", [("h1", {"kind": ["x"]}),
                              ("h2", {"kind": ["x", "y"]})], ok)
        d = env.relayd()
        ev = '{"kind":"x"}'
        evf = os.path.join(env.dir, "ev.json")
        with open(evf, "w") as f:
            f.write(ev)
        rc, _, err = ctl(d, "app", "invoke", "a", "--event", ev,
                         "--file", evf)
        eq(rc, 2, "--event and --file exclude each other")
        check("exclude" in err, err)
        # stdin only when it is not a terminal
        master, slave = pty.openpty()
        try:
            rc, _, err = ctl(d, "app", "invoke", "a", stdin=slave)
        finally:
            os.close(master)
            os.close(slave)
        eq(rc, 2, "no event and stdin a TTY")
        rc, _, err = ctl(d, "app", "invoke", "a", "--event", "[1]")
        eq(rc, 1, "not an object")
        check("not a JSON object" in err, err)
        rc, _, err = ctl(d, "app", "invoke", "a", "--event", "{bad")
        eq(rc, 1, "invalid JSON")
        rc, out, err = ctl(d, "app", "invoke", "a", "--event",
                           '{"kind":"q"}')
        eq((rc, out), (0, "No matching handlers\n"), "no match\n" + err)
        rc, out, err = ctl(d, "app", "invoke", "a", "--file", evf)
        eq(rc, 1, "failing handlers exit 1\n" + out + err)
        # doc/cli.md L-4: "Invoked <K> handler(s)", then per run, two
        # spaces in, "<app>/<handler> <status> <N>ms (<reason>)"
        lines = out.splitlines()
        eq(lines[0], "Invoked 2 handler(s)", "first line")
        check(len(lines) == 3 and all(
            re.fullmatch(rf"  a/{h} failed \d+ms \(exit status 3\)", ln)
            for h, ln in zip(("h1", "h2"), lines[1:])), out)
        open(ok, "w").close()
        rc, out, err = ctl(d, "app", "invoke", "a", input='{"kind":"y"}')
        eq(rc, 0, "stdin event\n" + err)
        check(re.fullmatch(r"Invoked 1 handler\(s\)\n  a/h2 ok \d+ms\n", out),
              out)
        # Integers beyond 64 bits are the handler's business, not ours.
        rc, out, err = ctl(d, "app", "invoke", "a", "--event",
                           '{"kind":"y","big":123456789012345678901234567890}')
        eq(rc, 0, "big integer event\n" + err)
        check(out.startswith("Invoked 1 handler(s)\n"), out)
        rc, out, err = ctl(d, "app", "invoke", "nope", "--event", ev)
        eq(rc, 1, "unknown app")
        check('unknown app "nope"' in err, err)
        eq(env.r("EXISTS", "relay:events:dlq"), 0, "invoke never DLQs")
        d.stop()


@case
def app_invoke_output_prints_the_handlers_lines():
    # issue 41: "ok 22ms" but not what the handler said; --output prints
    # it as dlq replay ID does (stdout lines on stdout, stderr on stderr).
    with Env() as env:
        d = os.path.join(env.apps_dir, "talk")
        os.makedirs(d)
        with open(os.path.join(d, "template.yaml"), "w") as f:
            f.write("runtime: exec\n"
                    "command: [/bin/sh, -c, 'read -r ev; echo \"got $ev\"; "
                    "echo oops >&2; exit ${CODE:-0}']\n"
                    "events:\n  - handler: h\n    pattern: {kind: [x]}\n"
                    "    retries: 0\n")
        rd = env.relayd()
        ev = '{"kind":"x"}'
        rc, out, err = ctl(rd, "app", "invoke", "talk", "--event", ev)
        eq(rc, 0, err)
        check(re.fullmatch(r"Invoked 1 handler\(s\)\n  talk/h ok \d+ms\n",
                           out), "without --output: as before: " + out)
        eq(err, "", "without --output: nothing on stderr")
        rc, out, err = ctl(rd, "app", "invoke", "talk", "--event", ev,
                           "--output")
        eq(rc, 0, err)
        check(re.fullmatch(r"\[talk/h@manual\] stdout: got \{\"kind\":\"x\"\}\n"
                           r"Invoked 1 handler\(s\)\n  talk/h ok \d+ms\n",
                           out), out)
        eq(err, "[talk/h@manual] stderr: oops\n", "stderr line")
        rd.stop()


@case
def health_down_up_redis_down():
    with Env() as env:
        d = env.relayd(start=False)
        rc, out, err = ctl(d, "health")
        eq(rc, 1, "relayd down")
        check(d.sock in err and "cannot reach" in err and
              len(err.strip().splitlines()) == 1, err)
        d.start()
        rc, out, err = ctl(d, "health")
        eq(rc, 0, "healthy\n" + err)
        check(out.startswith("healthy: ") and "ready" in out, out)
        rc, out, err = ctl(d, "health", "--json")
        j = json.loads(out)
        eq((rc, j["ok"], j["ready"], j["redis_up"]), (0, True, True, True),
           "JSON")
        env.redis.stop()

        def unhealthy():
            rc, out, err = ctl(d, "health")
            return rc == 1 and err
        err = wait_for(unhealthy, "health reports Redis down")
        check("redis" in err.lower() and len(err.strip().splitlines()) == 1,
              err)
        # --json: "ok" is that relayd answered, "ready" whether it is
        # healthy (doc/cli.md L-8); the exit status follows "ready"
        rc, out, err = ctl(d, "health", "--json")
        j = json.loads(out)
        eq((rc, j["ok"], j["ready"], j["redis_up"]), (1, True, False, False),
           "JSON while Redis is down")
        check(j["reason"].startswith("redis unavailable: ") and
              err == f"relayctl: health: relayd pid {j['pid']} is not "
              f"ready: {j['reason']}\n", (j, err))


@case
def stats_missing_then_counts_and_reset():
    with Env() as env:
        okfile_app(env, "a", [("h1", {"kind": ["x"]})],
                   os.path.join(env.dir, "ok"))
        d = env.relayd(start=False)
        rc, out, err = ctl(d, "stats")
        eq((rc, out), (1, ""), "stats before relayd ever ran\n" + err)
        check(err.startswith("relayctl: stats: no stats file ") and
              "/stats.json: relayd writes it into its RELAY_STATE_DIR" in err,
              err)
        rc, _, err = ctl(d, "stats", "reset")
        eq(rc, 1, "stats reset needs relayd")
        check("cannot reach" in err, err)

        d.start()
        env.xadd({"kind": "x", "k": "1"})
        env.xadd({"kind": "nomatch", "k": "2"})
        env.wait(lambda: len(env.dlq()) == 1 and env.pel_count() == 0,
                 "processed")
        d.stop()
        rc, out, err = ctl(d, "stats")
        eq(rc, 0, "stats\n" + err)
        eq([ln.split(":", 1)[0] for ln in out.splitlines()],
           ["Events received", "Events matched", "Events unmatched",
            "Handler successes", "Handler failures", "Message reclaims",
            "DLQ entries", "Pending entries", "Oldest pending age",
            "Stream length", "DLQ length", "Oldest entry age",
            "Stream trimmed", "DLQ trimmed", "Stream retention",
            "DLQ retention", "Retention", "Updated"], "stats lines")
        v = {k: x.strip() for k, x in
             (ln.split(":", 1) for ln in out.splitlines())}
        eq((v["Events received"], v["Events matched"],
            v["Events unmatched"], v["Handler failures"], v["DLQ entries"]),
           ("2", "1", "1", "1", "1"), "counts from the stats file")
        check(re.search(r"Z \(\d+s ago\)$", v["Updated"]), v["Updated"])
        j = json.loads(ctl(d, "stats", "--json")[1])
        eq((j["events_received"], j["dlq_entries"]), (2, 1), "JSON counts")

        d.start()
        rc, out, err = ctl(d, "stats", "reset")
        eq(rc, 0, "stats reset\n" + err)
        check(out.startswith("Statistics reset\n") and
              "Events received:    0\n" in out, out)
        eq(d.stats_file()["counters"]["events_received"], 0,
           "file rewritten at once")
        d.stop()


@case
def connection_flags_override_env():
    with Env() as env:
        d = env.relayd()
        bogus = {"RELAY_RUN_DIR": "/nonexistent", "REDIS_URI":
                 "unix:///nonexistent.sock", "REDIS_STREAM": "nope"}
        rc, out, err = ctl(d, "health", "--run-dir", d.run_dir,
                           extra=bogus)
        eq(rc, 0, "--run-dir\n" + err)
        env.r("XADD", "relay:events:dlq", "*", "x", "y")
        rc, out, err = ctl(d, "dlq", "ls", "--redis", d.vars["REDIS_URI"],
                           "--stream", "events", extra=bogus)
        eq(rc, 0, "--redis/--stream reach the real DLQ\n" + err)
        check("(malformed)" in out, "the hand-written entry\n" + out)
        rc, out, err = ctl(d, "dlq", "ls", extra={"REDIS_URI": ""})
        eq(rc, 2, "REDIS_URI unset is a usage error")
        check("REDIS_URI" in err, err)
        d.stop()


if __name__ == "__main__":
    sys.exit(run_cases())
