#!/usr/bin/env python3
"""doc/cli.md's output formats checked against relayctl's real output.

usage: test_cli_formats.py RELAYCTL [SOURCE_ROOT]

Each case reads a format straight out of doc/cli.md (a backticked
template such as `<app>/<handler> failed exit=<code> <N>ms`), turns it
into an exact pattern (a placeholder matches what it names: <N> digits,
<reason> any text, <app>/<handler> the very names of the case) and
checks the real output of the command against it, so the page and the
program cannot drift apart. The formats that need Redis or a running
relayd (dlq ls/inspect/replay/rm/summary, app invoke, health when
healthy) are checked the same way in tests/daemon/test_relayctl.py.
Output is TAP.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from clitap import Skip, case, check, eq, run_cases

RELAYCTL = os.path.abspath(sys.argv[1])
ROOT = sys.argv[2] if len(sys.argv) > 2 else os.environ.get(
    "RELAY_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
CONN = ("REDIS_URI", "REDIS_STREAM", "REDIS_GROUP", "RELAY_RUN_DIR",
        "RELAY_STATE_DIR", "RELAY_APPS_DIR", "RELAY_SANDBOX")

# What a placeholder of doc/cli.md matches when the case does not name it.
ANY = {"N": r"\d+", "code": r"\d+", "sig": r"\d+", "K": r"\d+",
       "line": r"\d+", "col": r"\d+", "reason": r".+", "message": r".+",
       "why": r".+", "status": r"failed|timeout|cancelled", "dir": r"/.+",
       "n": r"\d+", "OS error": r"[A-Z][a-z ]+", "detail": r".+",
       "k": r"\d+", "wait": r"(?:\d+[hms])+", "m": r"\d+", "r": r"\d+"}


def run(*args, env=None, stdin=None):
    e = {k: v for k, v in os.environ.items() if k not in CONN}
    e["RELAY_RUN_DIR"] = "/nonexistent-run"
    e.update(env or {})
    p = subprocess.run([RELAYCTL, *args], env=e, input=stdin,
                       capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def section(num):
    """The text of doc/cli.md's section L-<num>."""
    with open(os.path.join(ROOT, "doc", "cli.md")) as f:
        text = f.read()
    m = re.search(rf"^## L-{num}\. .*?(?=^## |\Z)", text, re.M | re.S)
    if not m:
        raise AssertionError(f"doc/cli.md has no section L-{num}")
    return m.group(0)


def templates(text, must_have):
    """Every backticked span of @text containing @must_have, with the
    line breaks of the page's wrapping undone."""
    spans = [re.sub(r"\s*\n\s*", " ", s)
             for s in re.findall(r"`([^`]+)`", text)]
    return [s for s in spans if must_have in s]


def pattern(template, **names):
    out = ""
    for part in re.split(r"(<[A-Za-z_ ]+>)", template.strip()):
        if part.startswith("<") and part.endswith(">"):
            key = part[1:-1]
            if key in names:
                out += re.escape(names[key])
            elif key in ANY:
                out += f"(?:{ANY[key]})"
            else:
                raise AssertionError(f"unknown placeholder {part} in "
                                     f"{template!r}")
        else:
            out += re.escape(part)
    return re.compile(out)


def which_template(line, temps, **names):
    """The documented templates @line matches exactly."""
    return [t for t in temps if pattern(t, **names).fullmatch(line)]


class Tmp:
    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="relay-cli-")
        return self.dir

    def __exit__(self, *exc):
        shutil.rmtree(self.dir)


def write_app(apps, name, text):
    os.makedirs(os.path.join(apps, name), exist_ok=True)
    with open(os.path.join(apps, name, "template.yaml"), "w") as f:
        f.write(text)


BEHAVE = """\
runtime: exec
command: [/bin/sh, -c, 'cat >/dev/null; case $RELAY_HANDLER in ok) exit 0;;
  bad) exit 3;; sig) kill -9 $$;; slow) sleep 5;; esac']
events:
  - handler: ok
    pattern: {k: [ok]}
  - handler: bad
    pattern: {k: [bad]}
  - handler: sig
    pattern: {k: [sig]}
  - handler: slow
    pattern: {k: [slow]}
    timeout: 300ms
"""


@case
def app_run_summary_lines_are_the_documented_ones():
    # app invoke's are indented; "[<app>/<handler>@manual] stdout: " is
    # the prefix of an output line, not a summary
    temps = [t for t in templates(section(4), "<app>/<handler>")
             if not t.startswith((" ", "["))]
    rows = [
        ("f", "ok", 0, "<app>/<handler> ok <N>ms"),
        ("f", "bad", 1, "<app>/<handler> failed exit=<code> <N>ms"),
        ("f", "sig", 1, "<app>/<handler> failed signal=<sig> <N>ms"),
        ("f", "slow", 1, "<app>/<handler> timeout <N>ms"),
        ("g", "ok", 1, "<app>/<handler> failed <N>ms (<reason>)"),
    ]
    eq(sorted(set(t for *_, t in rows)),
       sorted(set(t for t in temps if "warm start" not in t and
                  "app directory" not in t)),
       "every documented app run line has a case")
    with Tmp() as t:
        apps = os.path.join(t, "apps")
        write_app(apps, "f", BEHAVE)
        write_app(apps, "g", "runtime: exec\ncommand: [/nonexistent/x]\n"
                  "events:\n  - handler: ok\n    pattern: {k: [ok]}\n")
        for app, k, want_rc, want in rows:
            rc, out, err = run("app", "run", app, "--apps", apps,
                               "--sandbox", "none", "--event",
                               json.dumps({"k": k}))
            eq(rc, want_rc, f"{app}/{k} rc\n{err}")
            line = out.splitlines()[-1]
            eq(which_template(line, temps, app=app, handler=k), [want],
               f"{app}/{k}: {line!r}")
        # the reason of a run that could not start
        eq(line, "g/ok failed 0ms (spawn /nonexistent/x: No such file or "
           "directory)", "spawn failure")
        rc, out, err = run("app", "run", "f", "--apps", apps, "--sandbox",
                           "none", "--event", '{"k":"none"}')
        eq((rc, out), (0, "No matching handlers\n"), "no match")
        eq(templates(section(4), "No matching"), ["No matching handlers"],
           "documented")


# Fails until attempt $OKAT (a count kept in $CNT), saying which on
# stderr.
COUNTING = """\
runtime: exec
command: [/bin/sh, -c, 'cat >/dev/null; n=$(cat "$CNT" 2>/dev/null || echo 0);
  n=$((n + 1)); echo $n >"$CNT"; echo "try $n" >&2; [ "$n" -ge "$OKAT" ]']
env:
  CNT: {cnt}
  OKAT: "{okat}"
events:
  - handler: h
    pattern: {{k: [x]}}
    retries: 2
"""


@case
def app_run_attempts_lines_are_the_documented_ones():
    # issue 41: a dead letter without waiting 18 minutes
    text = section(4)
    temps = templates(text, "  attempt <k>/<n>")
    (done,) = [t for t in temps if "succeeded" in t]
    (retry,) = [t for t in temps if "retry after" in t]
    (last,) = [t for t in temps if "no attempts left" in t]
    (other,) = templates(text, "  (relayd makes <m>")
    summary = "<app>/<handler> failed exit=<code> <N>ms"
    env = {"REDIS_STREAM": "events", "REDIS_GROUP": "relay",
           "REDIS_CONSUMER": "c1"}
    with Tmp() as t:
        apps = os.path.join(t, "apps")
        cnt = os.path.join(t, "count")
        write_app(apps, "r", COUNTING.format(cnt=cnt, okat=2))
        args = ("app", "run", "r", "--apps", apps, "--sandbox", "none",
                "--event", '{"k":"x"}')
        rc, out, err = run(*args, "--attempts", "4", env=env)
        eq(rc, 0, "succeeds at attempt 2\n" + err)
        lines = out.splitlines()
        eq(len(lines), 4, out)
        check(pattern(summary, app="r", handler="h").fullmatch(lines[0]),
              lines[0])
        eq(lines[1], "  attempt 1/4 failed: relayd would retry after 1m",
           "retry line")
        check(pattern(retry).fullmatch(lines[1].lstrip()), (retry, lines[1]))
        check(re.fullmatch(r"r/h ok \d+ms", lines[2]), lines[2])
        eq(lines[3], "  attempt 2/4 succeeded: no more attempts", "done")
        check(pattern(done).fullmatch(lines[3].lstrip()), (done, lines[3]))
        eq(err, "[r/h] stderr: try 1\n[r/h] stderr: try 2\n", "stderr")
        with open(cnt) as f:
            eq(f.read(), "2\n", "ran twice, stopped at the success")

        os.unlink(cnt)
        write_app(apps, "r", COUNTING.format(cnt=cnt, okat=99))
        rc, out, err = run(*args, "--attempts", "3", env=env)
        eq(rc, 1, "all fail\n" + err)
        lines = out.splitlines()
        eq([ln for ln in lines if ln.startswith("  attempt")],
           ["  attempt 1/3 failed: relayd would retry after 1m",
            "  attempt 2/3 failed: relayd would retry after 2m",
            "  attempt 3/3 failed: no attempts left; relayd would write "
            "this DLQ entry (a preview, nothing is written to Redis):"],
           "attempt lines")
        check(pattern(last).fullmatch(lines[5].lstrip()), (last, lines[5]))
        entry = [re.split(r"\s{2,}", ln.strip(), maxsplit=1)
                 for ln in lines[6:]]
        eq([f for f, _ in entry],
           ["original_stream", "original_id", "group", "consumer", "event",
            "reason", "app", "handler", "deliveries", "handler_attempts",
            "timestamp", "stderr_tail"], "R-5 fields in order")
        got = dict(entry)
        eq((got["original_stream"], got["group"], got["consumer"],
            got["event"], got["app"], got["handler"],
            got["handler_attempts"], got["stderr_tail"]),
           ("events", "relay", "c1", '{"k":"x"}', "r", "h", "3", "try 3"),
           "fields (stderr_tail: the last attempt's only)")
        eq(got["reason"], 'invocation exhausted: app "r" handler "h" '
           'exhausted after 3 handler attempts: exit status 1', "reason")
        check(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z",
                           got["timestamp"]), got["timestamp"])
        check(got["original_id"].startswith("<"), "unknown here")

        # fewer attempts than the rule makes: said before the last line
        rc, out, err = run(*args, "--attempts", "2", env=env)
        lines = out.splitlines()
        eq(lines[3], "  (relayd makes 3 attempts of this rule: retries: 2)",
           "N differs")
        check(pattern(other).fullmatch(lines[3].lstrip()), (other, lines[3]))
        check("exhausted after 2 handler attempts" in out, out)

        for bad in ("0", "102", "x", "-1"):
            rc, out, err = run(*args, "--attempts", bad)
            eq((rc, out), (2, ""), f"--attempts {bad}")
            check(err.startswith("relayctl: app run: --attempts takes a "
                                 "number from 1 to 101"), err)


@case
def app_run_unreadable_app_dir_is_the_documented_text():
    if os.geteuid() != 0:
        raise Skip("needs root: only a root relayctl switches to the "
                   "sandbox user")
    if not shutil.which("bwrap"):
        raise Skip("bwrap not installed")
    text = section(4)
    (line,) = [t for t in templates(text, "app directory <dir>")
               if t.startswith("<app>")]
    (hint,) = templates(text, "relayctl: app run: make")
    with Tmp() as t:
        os.chmod(t, 0o700)
        apps = os.path.join(t, "apps")
        write_app(apps, "f", BEHAVE)
        rc, out, err = run("app", "run", "f", "--apps", apps, "--sandbox",
                           "bwrap", "--event", '{"k":"ok"}',
                           env={"RELAY_SANDBOX_USER": "65534"})
        if rc == 1 and out == "":
            raise Skip(f"no bwrap sandbox here: {err.strip()}")
        eq(rc, 1, "rc")
        d = os.path.join(apps, "f")
        check(pattern(line, app="f", handler="ok", dir=d)
              .fullmatch(out.rstrip("\n")), (line, out))
        check(pattern(hint, dir=d).fullmatch(err.rstrip("\n")), (hint, err))


@case
def validate_problem_line_is_the_documented_one():
    (temp,) = templates(section(2), "<file>:<line>:<col>")
    with Tmp() as t:
        write_app(t, "a", "runtime: python3\nbogus: 1\n")
        rc, out, err = run("validate", "--apps", t)
        eq((rc, out), (1, ""), "rc")
        check(pattern(temp, app="a", file=f"{t}/a/template.yaml")
              .fullmatch(err.rstrip("\n")), (temp, err))


@case
def match_line_is_the_documented_one():
    temps = sorted(set(templates(section(3), "<app>/<handler>")))
    eq(temps, ["<app>/<handler>", "<app>/<handler>: no match"],
       "L-3 formats (a match; a miss under --explain)")
    with Tmp() as t:
        write_app(t, "a", "runtime: python3\nevents:\n  - handler: m.h\n"
                  "    pattern: {k: [x]}\n")
        rc, out, err = run("match", "--apps", t, "-", stdin='{"k":"x"}')
        eq((rc, err), (0, ""), "rc")
        check(pattern(temps[0], app="a", handler="m.h")
              .fullmatch(out.rstrip("\n")), out)
        rc, out, err = run("match", "--apps", t, "--explain", "-",
                           stdin='{"k":"y"}')
        eq((rc, err), (0, ""), "rc")
        check(pattern(temps[1], app="a", handler="m.h")
              .fullmatch(out.splitlines()[0]), out)


@case
def stats_missing_file_message_is_the_documented_one():
    (temp,) = templates(section(8), "no stats file")
    with Tmp() as t:
        rc, out, err = run("stats", env={"RELAY_STATE_DIR": t})
        eq((rc, out), (1, ""), "rc")
        check(pattern(temp, RELAY_STATE_DIR=t, dir=t)
              .fullmatch(err.rstrip("\n")), (temp, err))


@case
def stats_lines_are_the_documented_ones():
    text = section(8)
    start = text.index("* `stats`: the lines")
    labels = templates(text[start:text.index("Read from", start)], "")
    labels = [x for x in labels if x != "stats"]
    with Tmp() as t:
        with open(os.path.join(t, "stats.json"), "w") as f:
            json.dump({"version": 1, "counters": {}, "gauges": {},
                       "written_at": "2026-01-01T00:00:00.000Z"}, f)
        rc, out, err = run("stats", "--state-dir", t)
        eq(rc, 0, err)
        got = [ln.split(":", 1)[0] for ln in out.splitlines()]
        eq([x for x in got if x in labels], labels,
           "the documented lines, in order")


@case
def health_unreachable_json_is_the_documented_one():
    (temp,) = templates(section(8), '{"ok":false')
    rc, out, err = run("health", "--json", "--run-dir", "/nonexistent-x")
    eq(rc, 1, "rc")
    check(pattern(temp).fullmatch(out.rstrip("\n")), (temp, out))


@case
def app_ls_header_is_the_documented_one():
    (temp,) = templates(section(7), "NAME RUNTIME")
    rc, out, err = run("app", "ls", "--apps",
                       os.path.join(ROOT, "doc", "examples", "apps"))
    eq(rc, 0, err)
    eq(out.splitlines()[0].split(), temp.split(), "header")


@case
def app_inspect_unknown_is_the_documented_one():
    (temp,) = templates(section(7), "unknown app")
    rc, out, err = run("app", "inspect", "nope", "--apps",
                       os.path.join(ROOT, "doc", "examples", "apps"))
    eq(rc, 1, "rc")
    check(pattern(temp, name="nope").search(err), (temp, err))


if __name__ == "__main__":
    sys.exit(run_cases())
