#!/usr/bin/env python3
"""Pure CLI tests of relayctl's operator commands (issue #6): --help on
every command and subcommand, usage errors (exit 2), and what works with
neither Redis nor relayd: stats from a stats file, app ls / inspect from
the apps directory (offline), health with relayd down. The same commands
against a real redis-server and relayd: tests/daemon/test_relayctl.py.

usage: test_cli_ops.py RELAYCTL [SOURCE_ROOT]
"""
import datetime
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
EXAMPLES = os.path.join(ROOT, "doc", "examples", "apps")
CONN = ("REDIS_URI", "REDIS_STREAM", "REDIS_GROUP", "RELAY_RUN_DIR",
        "RELAY_STATE_DIR", "RELAY_APPS_DIR")


def run(*args, env=None, stdin=None):
    e = {k: v for k, v in os.environ.items() if k not in CONN}
    e["RELAY_RUN_DIR"] = "/nonexistent-run"
    e["RELAYCTL_DEFAULTS_FILE"] = "/nonexistent/relay-defaults"
    e.update(env or {})
    p = subprocess.run([RELAYCTL, *args], env=e, input=stdin,
                       capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


HELP = [
    ["dlq"], ["dlq", "ls"], ["dlq", "summary"], ["dlq", "inspect"],
    ["dlq", "replay"], ["dlq", "rm"], ["app"], ["app", "ls"], ["app", "inspect"],
    ["app", "invoke"], ["app", "run"], ["health"], ["stats"],
    ["stats", "reset"], ["state"], ["state", "leaks"], ["publish"],
]


@case
def help_everywhere():
    for words in HELP:
        for h in ("--help", "-h"):
            rc, out, err = run(*words, h)
            eq((rc, err), (0, ""), f"{words} {h}")
            check(out.startswith("usage: relayctl " + words[0]),
                  f"{words} {h}: {out!r}")
            check(len(words) == 1 or words[1] in "".join(out.splitlines()[:2]),
                  f"{words} {h} names the subcommand: {out!r}")


USAGE = [
    ["dlq"], ["dlq", "bogus"], ["dlq", "inspect"], ["dlq", "rm"],
    ["dlq", "replay"], ["dlq", "ls", "--limit", "x"],
    ["dlq", "ls", "--limit", "-3"], ["dlq", "ls", "extra"],
    ["dlq", "ls", "--bogus"], ["dlq", "replay", "--app", "a"],
    ["dlq", "replay", "1-0", "--all"], ["dlq", "inspect", "1-0", "2-0"],
    ["dlq", "rm", "--json", "1-0"], ["dlq", "ls", "--redis"],
    ["dlq", "summary", "extra"], ["dlq", "summary", "--since", "x"],
    ["dlq", "rm", "--app", "a"], ["dlq", "rm", "--all", "--rate", "0"],
    ["dlq", "rm", "1-0", "--yes"], ["dlq", "replay", "--reason", "("],
    ["app"], ["app", "bogus"], ["app", "ls", "x"], ["app", "ls", "--x"],
    ["app", "inspect"], ["app", "inspect", "a", "b"],
    ["app", "invoke"], ["app", "invoke", "a", "--event", "{}", "--file",
                        "f"],
    ["app", "invoke", "a", "--event", "{}", "--event", "{}"],
    ["app", "invoke", "a", "--json", "--event", "{}"],
    ["health", "x"], ["health", "--bogus"], ["stats", "bogus"],
    ["stats", "reset", "again"], ["stats", "--run-dir"],
    ["publish"], ["publish", "{}", "{}"], ["publish", "--file", "f", "{}"],
    ["publish", "--bogus", "{}"], ["publish", "--timeout", "x", "{}"],
    ["publish", "[1]"],
]


@case
def usage_errors_exit_2():
    for words in USAGE:
        rc, out, err = run(*words, stdin="{}")
        eq(rc, 2, f"{words} exit status ({err!r})")
        eq(out, "", f"{words} prints nothing on stdout")
        check(err.startswith("relayctl: ") or err.startswith("usage: "),
              f"{words}: {err!r}")


@case
def unknown_command_suggests_in_three_lines():
    # issue 41: the whole help for a typo; now the problem, one usage line
    # and where to read more.
    rc, out, err = run("dlq", "lss")
    eq((rc, out, err), (2, "", 'relayctl: dlq: unknown subcommand "lss"; '
                        'did you mean "ls"?\n'
                        "usage: relayctl dlq {ls|inspect|replay|summary|rm} "
                        "[ARGS]\ntry 'relayctl dlq --help'\n"), "dlq lss")
    rc, out, err = run("frobnicate")
    eq((rc, out, err), (2, "", 'relayctl: unknown command "frobnicate"\n'
                        "usage: relayctl [--env-file FILE] {validate|match|"
                        "publish|app|dlq|health|stats|state|event|tail} [ARGS]\n"
                        "try 'relayctl --help'\n"), "frobnicate")
    for words, meant in ((["valdiate"], "validate"),
                         (["app", "isnpect"], "inspect"),
                         (["app", "inv"], "invoke"),
                         (["state", "leak"], "leaks"),
                         (["stats", "rest"], "reset")):
        rc, out, err = run(*words)
        eq(rc, 2, f"{words}")
        check(err.splitlines()[0].endswith(f'; did you mean "{meant}"?'),
              f"{words}: {err!r}")
        eq(len(err.splitlines()), 3, f"{words}: three lines: {err!r}")
    rc, out, err = run("st")   # stats or state: no guess
    check('"st"\n' in err and "did you mean" not in err, err)


@case
def usage_errors_name_the_option():
    rc, out, err = run("app", "invoke", "a", "--event", "{}", "--event",
                       "{\"k\":1}")
    eq(rc, 2, "--event twice")
    check(err.startswith("relayctl: app invoke: --event given twice"), err)
    rc, out, err = run("app", "invoke", "a", "--file", "x", "--file", "y")
    eq(rc, 2, "--file twice")
    check(err.startswith("relayctl: app invoke: --file given twice"), err)
    rc, out, err = run("app", "inspect", "a", "--bogus")
    eq(rc, 2, "app inspect unknown option")
    check(err.startswith('relayctl: app inspect: unknown option "--bogus"'),
          err)


@case
def dlq_needs_redis_config():
    rc, out, err = run("dlq", "ls")
    eq(rc, 2, "no REDIS_URI")
    check("REDIS_URI" in err, err)
    rc, out, err = run("dlq", "ls", env={"REDIS_URI": "unix:///x.sock"})
    eq(rc, 2, "no REDIS_STREAM")
    check("REDIS_STREAM" in err, err)
    rc, out, err = run("dlq", "ls", "--redis",
                       "redis://u:s3cr3t-pass@host:notaport",
                       env={"REDIS_STREAM": "e"})
    eq(rc, 2, "malformed REDIS_URI")
    check("REDIS_URI" in err and "s3cr3t" not in err, err)
    rc, out, err = run("dlq", "ls", env={"REDIS_URI": "unix:///nonexistent"
                                         "/r.sock", "REDIS_STREAM": "e"})
    eq(rc, 1, "Redis unreachable")
    check(err.startswith("relayctl: dlq ls: Redis: "), err)


@case
def dlq_bad_id_is_unknown():
    for sub in ("rm", "inspect", "replay"):
        rc, out, err = run("dlq", sub, "not-an-id",
                           env={"REDIS_URI": "unix:///nonexistent/r.sock",
                                "REDIS_STREAM": "e"})
        eq(rc, 1, f"dlq {sub} bad id")
        check('unknown DLQ entry "not-an-id"' in err, err)


@case
def health_relayd_down_names_socket():
    rc, out, err = run("health", "--run-dir", "/nonexistent-x")
    eq(rc, 1, "health with no relayd")
    eq(out, "", "stdout")
    check(err.startswith("relayctl: health: cannot reach relayd control "
                         "socket /nonexistent-x/relay.sock: ") and
          err.count("\n") == 1, err)
    rc, out, err = run("health", "--json")
    eq(rc, 1, "health --json with no relayd")
    j = json.loads(out)
    eq((j["ok"], j["ready"]), (False, False), "JSON")
    check("/nonexistent-run/relay.sock" in j["reason"], j)


def ago(seconds):
    t = datetime.datetime.now(datetime.timezone.utc) - \
        datetime.timedelta(seconds=seconds)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + \
        f"{t.microsecond // 1000:03d}Z"


STATS = {
    "version": 1, "pid": 1, "stream": "events", "group": "relay",
    "consumer": "c", "started_at": "2026-01-01T00:00:00.000Z",
    "reset_at": None,
    "counters": {"events_received": 10, "events_matched": 6,
                 "events_unmatched": 4, "events_malformed": 1,
                 "handler_success": 5, "handler_failure": 3,
                 "reclaims": 2, "dlq_entries": 1, "future_counter": 9},
    "gauges": {"pending_entries": 7, "pending_oldest_age_seconds": 192.5,
               "redis_up": True},
    "handlers": [],
    "retention": {"stream_retention_seconds": 86400,
                  "dlq_retention_seconds": 0, "stream_trimmed": 42,
                  "dlq_trimmed": 0, "failures": 1, "stream_length": 1200,
                  "dlq_length": 3, "oldest_entry_age_seconds": 5000.5,
                  "oldest_pending_entry_age_seconds": 12.0,
                  "failing": True},
}


@case
def stats_from_file():
    d = tempfile.mkdtemp(prefix="relay-cli-")
    try:
        missing = (f"relayctl: stats: no stats file {d}/stats.json: relayd "
                   f"writes it into its RELAY_STATE_DIR (here {d}) while it "
                   "runs; start relayd, or point RELAY_STATE_DIR or "
                   "--state-dir at the directory relayd uses\n")
        eq(run("stats", "--state-dir", d), (1, "", missing),
           "no stats file: exit 1, says so")
        eq(run("stats", "--json", env={"RELAY_STATE_DIR": d}),
           (1, "", missing), "no stats file, --json")
        s = dict(STATS, written_at=ago(3720))
        with open(os.path.join(d, "stats.json"), "w") as f:
            json.dump(s, f)
        rc, out, err = run("stats", env={"RELAY_STATE_DIR": d})
        eq(rc, 0, "stats\n" + err)
        want = ("Events received:    10\n"
                "Events matched:     6\n"
                "Events unmatched:   4\n"
                "Handler successes:  5\n"
                "Handler failures:   3\n"
                "Message reclaims:   2\n"
                "DLQ entries:        1\n"
                "Pending entries:    7\n"
                "Oldest pending age: 3m12s\n"
                "Stream length:      1200\n"
                "DLQ length:         3\n"
                "Oldest entry age:   1h23m\n"
                "Stream trimmed:     42\n"
                "DLQ trimmed:        0\n"
                "Stream retention:   1d0h\n"
                "DLQ retention:      off\n"
                "Retention:          FAILING (see relayd's log, "
                "RELAYD-RET02)\n"
                f"Updated:            {s['written_at']} (1h2m ago)\n")
        eq(out, want, "stats lines")
        rc, out, err = run("stats", "--json", "--state-dir", d)
        eq(json.loads(out), {
            "events_received": 10, "events_matched": 6,
            "events_unmatched": 4, "handler_success": 5,
            "handler_failure": 3, "reclaims": 2, "dlq_entries": 1,
            "pending_entries": 7, "oldest_pending_age_seconds": 192.5,
            "stream_length": 1200, "dlq_length": 3, "stream_trimmed": 42,
            "dlq_trimmed": 0, "stream_retention_seconds": 86400,
            "dlq_retention_seconds": 0, "failures": 1,
            "oldest_entry_age_seconds": 5000.5, "retention_failing": True,
            "updated": s["written_at"]}, "stats --json")
        with open(os.path.join(d, "stats.json"), "w") as f:
            json.dump(dict(s, version=2), f)
        rc, out, err = run("stats", "--state-dir", d)
        eq(rc, 1, "unknown version")
        check("stats.json" in err and "version" in err, err)
        with open(os.path.join(d, "stats.json"), "w") as f:
            f.write('{"version": 1,')
        rc, out, err = run("stats", "--state-dir", d)
        eq(rc, 1, "truncated file")
        check(os.path.join(d, "stats.json") + ":1:" in err, err)
        rc, out, err = run("stats", "reset", "--state-dir", d)
        eq(rc, 1, "stats reset without relayd")
        check("cannot reach relayd control socket" in err, err)
    finally:
        shutil.rmtree(d)


@case
def app_ls_offline_examples():
    rc, out, err = run("app", "ls", "--apps", EXAMPLES)
    eq(rc, 0, "app ls\n" + err)
    lines = out.splitlines()
    eq(lines[0].split(), ["NAME", "RUNTIME", "STATUS", "RULES", "UPDATED"],
       "header")
    eq([ln.split()[:4] for ln in lines[1:]],
       [["audit", "exec", "offline", "2"],
        ["billing", "python3", "offline", "2"],
        ["notify", "node", "offline", "1"]], "rows")
    rc, out, err = run("app", "ls", "--json",
                       env={"RELAY_APPS_DIR": EXAMPLES})
    eq([a["name"] for a in json.loads(out)], ["audit", "billing", "notify"],
       "JSON names")
    rc, out, err = run("app", "ls", "--apps", "/nonexistent-apps")
    eq(rc, 1, "missing apps dir")
    check("/nonexistent-apps" in err, err)


@case
def app_inspect_offline_example():
    rc, out, err = run("app", "inspect", "billing", "--apps", EXAMPLES)
    eq(rc, 0, "inspect\n" + err)
    for want in ("Name:         billing\n", "Status:       offline\n",
                 "Last error:   none\n", "Runtime:      python3\n",
                 "Concurrency:  4\n", "Memory:       256MiB\n",
                 "CPUs:         0.5\n", "PIDs:         64\n",
                 "Env:          CURRENCY, APPROVAL_LIMIT\n",
                 "  - handler: invoices.paid.handle\n"
                 "    timeout: 20s\n"
                 "    retries: 2\n"
                 "    pattern:\n"
                 "      type: [invoice.paid]\n"
                 "      invoice:\n"
                 "        id: [{prefix: inv_}]\n"
                 "        amount: [{gt: 0}]\n"
                 "        refunded_at: [{exists: false}]\n",
                 "Schedules:\n"
                 "  - name: daily-report\n"
                 "    handler: reports.daily.run\n"
                 "    cron: \"0 6 * * *\"\n"
                 "    timezone: Europe/Berlin\n"
                 "    timeout: 6s\n"
                 "    retries: 4\n"):
        check(want in out, f"{want!r} in:\n{out}")
    nxt = re.findall(r"^      - (\d{4}-\d\d-\d\d) 06:00 \+0([12]):00  # "
                     r"(\d{4}-\d\d-\d\d)T0([45]):00:00\.000Z$", out, re.M)
    eq(len(nxt), 5, f"next five firing times:\n{out}")
    for loc_day, off, utc_day, utc_h in nxt:
        eq((loc_day, int(off) + int(utc_h)), (utc_day, 6),
           "06:00 Berlin time shown in the zone and in UTC")
    days = [datetime.date.fromisoformat(n[0]) for n in nxt]
    eq([(b - a).days for a, b in zip(days, days[1:])], [1] * 4,
       "daily firings")
    check("EUR" not in out and "10000" not in out, "env values hidden")
    rc, out, err = run("app", "inspect", "nope", "--apps", EXAMPLES)
    eq(rc, 1, "unknown app")
    check('unknown app "nope"' in err, err)


@case
def app_inspect_next_firings_utc():
    d = tempfile.mkdtemp(prefix="relay-cli-")
    try:
        os.makedirs(os.path.join(d, "s"))
        with open(os.path.join(d, "s", "template.yaml"), "w") as f:
            f.write("runtime: exec\ncommand: [./h]\nevents: []\n"
                    "schedules:\n  - name: q\n    handler: h\n"
                    "    cron: \"*/15 * * * *\"\n")

        def want():
            now = datetime.datetime.now(datetime.timezone.utc)
            t = now.replace(second=0, microsecond=0)
            t -= datetime.timedelta(minutes=t.minute % 15)
            return [(t + datetime.timedelta(minutes=15 * i)).strftime(
                "%Y-%m-%dT%H:%M:00.000Z") for i in range(1, 6)]
        before = want()
        rc, out, err = run("app", "inspect", "s", "--json", "--apps", d)
        after = want()
        eq(rc, 0, "inspect\n" + err)
        s = json.loads(out)["schedules"][0]
        eq((s["name"], s["handler"], s["cron"], s["timezone"]),
           ("q", "h", "*/15 * * * *", "UTC"), "schedule fields")
        check(s["next"] in (before, after),
              f"next five: {s['next']} (want {before})")
        rc, out, err = run("app", "inspect", "s", "--apps", d)
        check(re.search(r"    next:\n(      - \d{4}-\d\d-\d\d \d\d:\d\d "
                        r"\+00:00  # \S+Z\n){5}", out), out)
    finally:
        shutil.rmtree(d)


UNREADABLE_APP = """\
runtime: exec
command: [/bin/echo, hi]
events:
  - handler: echo
    pattern: {kind: [x]}
"""


def unreadable_app_run(sub):
    """app run of an app under a 0700 directory (root's own); returns
    (apps dir, app dir, rc, out, err)."""
    if os.geteuid() != 0:
        raise Skip("needs root: only a root relayctl switches to the "
                   "sandbox user (uid 65534)")
    if not shutil.which("bwrap"):
        raise Skip("bwrap not installed")
    top = tempfile.mkdtemp(prefix="relay-cli-")
    apps = os.path.join(top, sub, "apps")
    app = os.path.join(apps, "demo")
    os.makedirs(app)
    os.chmod(top, 0o700)
    with open(os.path.join(app, "template.yaml"), "w") as f:
        f.write(UNREADABLE_APP)
    try:
        rc, out, err = run("app", "run", "demo", "--apps", apps,
                           "--sandbox", "bwrap", "--event", '{"kind":"x"}',
                           env={"RELAY_SANDBOX_USER": "65534"})
    finally:
        shutil.rmtree(top)
    if rc == 1 and out == "":
        raise Skip(f"no bwrap sandbox here: {err.strip()}")
    return apps, app, rc, out, err


@case
def app_run_unreadable_app_dir_says_how_to_fix():
    _, app, rc, out, err = unreadable_app_run("x")
    eq(rc, 1, "rc")
    eq(out, f"demo/echo failed 0ms (app directory {app} is not readable "
       "by the sandbox user (uid 65534): Permission denied)\n", "stdout")
    eq(err, f"relayctl: app run: make {app} and its parents readable and "
       "searchable by the sandbox user, set RELAY_SANDBOX_USER to a user "
       "that can read it, or run with --sandbox none (no isolation)\n",
       "stderr")


@case
def app_run_unreadable_long_app_dir_is_never_cut():
    # a directory too long for the runtime's one-line error keeps its
    # start and its end around "...": the message itself stays whole
    _, app, rc, out, err = unreadable_app_run("d" * 40 + "/" + "e" * 60)
    eq(rc, 1, "rc")
    rest = " is not readable by the sandbox user (uid 65534): " \
           "Permission denied"
    room = 150 - len("app directory " + rest)
    head = (room - 3) // 3
    shown = app[:head] + "..." + app[len(app) - (room - 3 - head):]
    eq(out, f"demo/echo failed 0ms (app directory {shown}{rest})\n",
       "stdout")
    check(shown.endswith("/apps/demo") and len(shown) < len(app), shown)
    check(err.startswith(f"relayctl: app run: make {app} and its parents")
          and err.endswith("(no isolation)\n"), err)


# One app per runtime; each would load fine from a readable directory.
UNREADABLE_RUNTIMES = {
    "py": ("runtime: python3\nevents:\n  - handler: h.main\n"
           "    pattern: {kind: [x]}\n", "h.py", "def main(event):\n"
           "    pass\n"),
    "js": ("runtime: node\nevents:\n  - handler: h.main\n"
           "    pattern: {kind: [x]}\n", "h.js", "exports.main = () => {};\n"),
    "sh": ("runtime: exec\ncommand: [./run]\nevents:\n  - handler: h\n"
           "    pattern: {kind: [x]}\n", "run", "#!/bin/sh\n"),
}


@case
def validate_unreadable_app_dir_says_what_app_run_says():
    # issue 41: root cloning into its 0700 home; validate printed a line of
    # node's loader for one app and "ok" for the two others.
    if os.geteuid() != 0:
        raise Skip("needs root: only a root relayctl checks as the "
                   "sandbox user (uid 65534)")
    top = tempfile.mkdtemp(prefix="relay-cli-")
    apps = os.path.join(top, "home", "apps")
    try:
        for name, (tpl, fname, body) in UNREADABLE_RUNTIMES.items():
            os.makedirs(os.path.join(apps, name))
            with open(os.path.join(apps, name, "template.yaml"), "w") as f:
                f.write(tpl)
            path = os.path.join(apps, name, fname)
            with open(path, "w") as f:
                f.write(body)
            os.chmod(path, 0o755)
        os.chmod(top, 0o755)
        os.chmod(os.path.join(top, "home"), 0o755)
        rc, out, err = run("validate", "--apps", apps, "--verbose",
                           env={"RELAY_SANDBOX_USER": "65534"})
        eq((rc, err), (0, ""), "readable: every app loads")
        os.chmod(os.path.join(top, "home"), 0o700)
        rc, out, err = run("validate", "--apps", apps, "--verbose",
                           env={"RELAY_SANDBOX_USER": "65534"})
        eq(rc, 1, "rc")
        eq(out, "js: invalid\npy: invalid\nsh: invalid\n", "no app is ok")
        want = ""
        for name in sorted(UNREADABLE_RUNTIMES):
            d = os.path.join(apps, name)
            want += (f"{name}: {d}/template.yaml:1:1: app directory {d} is "
                     "not readable by the sandbox user (uid 65534): "
                     "Permission denied\n"
                     f"relayctl: validate: make {d} and its parents "
                     "readable and searchable by the sandbox user, or set "
                     "RELAY_SANDBOX_USER to a user that can read it (relayd "
                     "and app run need the same)\n")
        eq(err, want, "stderr")
        check("loader" not in err and "node:" not in err, err)
        # RELAY_SANDBOX=none: handlers run as relayd's user (root here),
        # which reads the directory: not this problem
        rc, out, err = run("validate", "--apps", apps,
                           env={"RELAY_SANDBOX_USER": "65534",
                                "RELAY_SANDBOX": "none"})
        check("not readable by the sandbox user" not in err, err)
    finally:
        shutil.rmtree(top)


def fake_relayd(answer):
    """A control socket answering one request with @answer; returns (run
    dir, thread, list that receives the request)."""
    import socket
    import threading
    d = tempfile.mkdtemp(prefix="relay-cli-")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(os.path.join(d, "relay.sock"))
    srv.listen(1)
    got = []

    def serve():
        c, _ = srv.accept()
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = c.recv(65536)
            if not chunk:
                break
            buf += chunk
        got.append(json.loads(buf))
        c.sendall(json.dumps(answer).encode() + b"\n")
        c.close()
        srv.close()
    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return d, t, got


@case
def app_invoke_output_asks_and_prints_the_lines():
    # issue 41: what the handler said, as dlq replay ID prints it; the
    # daemon side is tests/daemon/test_relayctl.py.
    answer = {"ok": True, "success": False, "results": [
        {"app": "a", "handler": "h", "status": "failed", "exit_code": 3,
         "reason": "exit status 3", "duration_ms": 22}],
        "output": [{"stream": "stdout", "text": "[a/h@manual] stdout: hi"},
                   {"stream": "stderr",
                    "text": "[a/h@manual] stderr: Traceback"}],
        "output_dropped": 2}
    d, t, got = fake_relayd(answer)
    try:
        rc, out, err = run("app", "invoke", "a", "--event", '{"k":1}',
                           "--output", env={"RELAY_RUN_DIR": d})
        t.join(10)
    finally:
        shutil.rmtree(d)
    eq(got[0].get("output"), True, "asks for the output")
    eq(rc, 1, "a failed run")
    eq(out, "[a/h@manual] stdout: hi\nInvoked 1 handler(s)\n"
       "  a/h failed 22ms (exit status 3)\n", "stdout")
    eq(err, "[a/h@manual] stderr: Traceback\nrelayctl: app invoke: 2 more "
       "output lines not shown (relayd's log has them)\n", "stderr")
    d, t, got = fake_relayd(answer)
    try:
        rc, out, err = run("app", "invoke", "a", "--event", '{"k":1}',
                           env={"RELAY_RUN_DIR": d})
        t.join(10)
    finally:
        shutil.rmtree(d)
    check("output" not in got[0], f"not asked without --output: {got}")
    eq((rc, out, err), (1, "Invoked 1 handler(s)\n  a/h failed 22ms (exit "
                        "status 3)\n", ""), "without --output")


@case
def templates_md_says_how_to_test_failures():
    # issue 41: an author is told how to see a dead letter quickly; every
    # knob the section names is one the code has.
    with open(os.path.join(ROOT, "doc", "templates.md")) as f:
        text = f.read()
    m = re.search(r"^## Testing failures\n(.*?)(?=^## )", text, re.M | re.S)
    check(m, "doc/templates.md has a 'Testing failures' section")
    sec = re.sub(r"\s+", " ", m.group(1))
    for want in ("relayctl app run", "--attempts N", "retries: 0",
                 "RELAY_TEST_TIME_SCALE", "-Dtest_hooks=true",
                 "1m, 2m, 5m, then 10m", "0 every handler succeeded",
                 "1 one failed", "2 a usage error"):
        check(want in sec, f"section lacks {want!r}")
    with open(os.path.join(ROOT, "relayd", "config.c")) as f:
        check('"RELAY_TEST_TIME_SCALE"' in f.read(),
              "relayd reads RELAY_TEST_TIME_SCALE")
    with open(os.path.join(ROOT, "meson_options.txt")) as f:
        check("option('test_hooks'" in f.read(), "the test_hooks option")
    rc, out, err = run("app", "run", "--help")
    check("--attempts N" in out, out)


@case
def app_invoke_needs_relayd():
    rc, out, err = run("app", "invoke", "billing", "--event", "{}")
    eq(rc, 1, "invoke without relayd")
    check("cannot reach relayd control socket" in err, err)
    rc, out, err = run("app", "invoke", "billing", stdin="[1,2]")
    eq(rc, 1, "stdin event not an object")
    check("stdin: the event is not a JSON object" in err, err)


@case
def man_page_names_every_command_and_flag():
    with open(os.path.join(ROOT, "doc", "man", "relayctl.1.scd")) as f:
        man = f.read()
    for words in HELP + [["validate"], ["match"]]:
        rc, out, err = run(*words, "--help")
        for flag in set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", out)):
            check(f"*{flag}*" in man, f"man page lacks {flag} "
                  f"({' '.join(words)})")
        check(f"*{' '.join(words)}" in man or f"*{words[0]}*" in man,
              f"man page lacks {words}")
    for section in ("# EXIT STATUS", "# EXAMPLES", "*0*", "*1*", "*2*"):
        check(section in man, section)


# ---- the defaults file (/etc/default/relay, --env-file) ----


def env_file(d, text, name="relay.env"):
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def apps_dir_seen(*args, env=None):
    """Where `validate` looked for the apps (named in its error)."""
    rc, out, err = run(*args, "validate", env=env)
    m = re.fullmatch(r"relayctl: validate: (.*): cannot open apps "
                     r"directory: No such file or directory\n", err)
    check(rc == 1 and out == "" and m, f"{args}: {rc} {out!r} {err!r}")
    return m.group(1)


@case
def env_file_syntax():
    # systemd EnvironmentFile lines: comments, blanks, CRLF, blanks
    # around '=', double quotes with escapes, single quotes literal.
    with tempfile.TemporaryDirectory() as d:
        f = env_file(d, "# comment\n; also a comment\n\n"
                     "  RELAY_APPS_DIR = \"/nonexistent/a \\\"b\\\" "
                     "\\$x\"\r\nOTHER=1\n")
        eq(apps_dir_seen("--env-file", f), '/nonexistent/a "b" $x',
           "double quotes")
        f = env_file(d, "RELAY_APPS_DIR='/nonexistent/c \\\"d'\n")
        eq(apps_dir_seen("--env-file=" + f), '/nonexistent/c \\"d',
           "single quotes")
        f = env_file(d, "RELAY_APPS_DIR=/nonexistent/one\n"
                     "RELAY_APPS_DIR=  /nonexistent/two  \n")
        eq(apps_dir_seen("--env-file", f), "/nonexistent/two",
           "bare value, the last assignment wins")


@case
def env_file_precedence():
    with tempfile.TemporaryDirectory() as d:
        f = env_file(d, "RELAY_APPS_DIR=/nonexistent/file\n")
        eq(apps_dir_seen("--env-file", f,
                         env={"RELAY_APPS_DIR": "/nonexistent/env"}),
           "/nonexistent/env", "the environment wins over the file")
        eq(apps_dir_seen("--env-file", f, env={"RELAY_APPS_DIR": ""}),
           "/nonexistent/file", "an empty variable counts as unset")
        rc, out, err = run("--env-file", f, "validate", "--apps",
                           EXAMPLES)
        eq((rc, out, err), (0, "", ""), "--apps wins over the file")
        # The default file (RELAYCTL_DEFAULTS_FILE stands for
        # /etc/default/relay) is read when present, skipped when absent,
        # and not read at all with --env-file.
        dflt = env_file(d, "RELAY_APPS_DIR=/nonexistent/default\n",
                        "default")
        eq(apps_dir_seen(env={"RELAYCTL_DEFAULTS_FILE": dflt}),
           "/nonexistent/default", "the default file")
        eq(apps_dir_seen("--env-file", f,
                         env={"RELAYCTL_DEFAULTS_FILE": dflt}),
           "/nonexistent/file", "--env-file instead of the default")
        bad = env_file(d, "oops\n", "bad-default")
        eq(apps_dir_seen("--env-file", f,
                         env={"RELAYCTL_DEFAULTS_FILE": bad}),
           "/nonexistent/file", "the default file is not even read")
        eq(apps_dir_seen(env={"RELAYCTL_DEFAULTS_FILE": d + "/absent"}),
           "/etc/relay/apps", "an absent default file is skipped")
        # Only REDIS_* and RELAY_* are taken: PATH stays the caller's.
        f = env_file(d, "PATH=/nonexistent\nREDIS_STREAM=s\n"
                     "REDIS_URI=redis://u:pw@127.0.0.1:1\n"
                     "RELAY_RUN_DIR=" + d + "\n")
        rc, out, err = run("--env-file", f, "health",
                           env={"RELAY_RUN_DIR": ""})
        eq((rc, out), (1, ""), "health from the file's RELAY_RUN_DIR")
        check(d + "/relay.sock" in err, err)


@case
def env_file_errors():
    secret = "s3cr3t-Pa55"
    with tempfile.TemporaryDirectory() as d:
        for text, line, why in [
                ("# ok\nREDIS_URI=redis://u:%s@h:1\nfoo %s\n", 3,
                 "expected KEY=VALUE"),
                ("REDIS_URI=\"redis://u:%s@h:1\nX=%s\n", 1,
                 "unterminated quote (a value spans one line)"),
                ("REDIS_URI='redis://u:%s@h:1' %s\n", 1,
                 "text after the closing quote"),
                ("\nexport REDIS_URI=%s%s\n", 2,
                 "the name before '=' is not a variable name (letters, "
                 "digits, '_')"),
                ("REDIS_URI=redis://u:%s@h:1%s\\\n", 1,
                 "a line continuation ('\\' at the end) is not "
                 "supported")]:
            f = env_file(d, text % (secret, secret))
            for args in (["--env-file", f], []):
                rc, out, err = run(*args, "validate", "--apps", EXAMPLES,
                                   env={"RELAYCTL_DEFAULTS_FILE": f})
                eq((rc, out, err), (1, "", f"relayctl: {f}:{line}: {why}\n"),
                   f"{text!r} {args}")
        rc, out, err = run("--env-file", d + "/absent", "validate")
        eq((rc, out, err), (1, "", f"relayctl: {d}/absent: No such file "
                            "or directory\n"), "a missing --env-file")
        for args in (["--env-file"], ["--env-file="], ["--env-file", ""]):
            rc, out, err = run(*args)
            eq((rc, out), (2, ""), f"{args}")
            check("usage: relayctl" in err, err)
        rc, out, _ = run("--help")
        eq(rc, 0, "--help")
        check("--env-file FILE" in out, out)
        bad = env_file(d, "oops\n", "bad")
        rc, out, _ = run("--env-file", bad, "--version")
        check(rc == 0 and out.startswith("relayctl "), out)


@case
def app_run_output_on_a_terminal_is_cleaned():
    """A handler's output lines reach a terminal with control bytes as
    '?' (it cannot drive the operator's terminal), and a pipe exactly."""
    import pty
    top = tempfile.mkdtemp(prefix="relay-cli-")
    app = os.path.join(top, "apps", "noisy")
    os.makedirs(app)
    with open(os.path.join(app, "say.sh"), "w") as f:
        f.write("#!/bin/sh\ncat >/dev/null\n"
                "printf 'a\\033]0;pwn\\007b\\302\\233c\\td\\n'\n")
    os.chmod(os.path.join(app, "say.sh"), 0o755)
    with open(os.path.join(app, "template.yaml"), "w") as f:
        f.write("runtime: exec\ncommand: [./say.sh]\nevents:\n"
                "  - handler: h\n    pattern: {kind: [x]}\n")
    args = [RELAYCTL, "app", "run", "noisy", "--apps",
            os.path.join(top, "apps"), "--sandbox", "none", "--event",
            '{"kind":"x"}']
    try:
        rc, out, err = run(*args[1:])
        eq(rc, 0, f"app run into a pipe: {err}")
        check("a\x1b]0;pwn\x07b\u009bc\td" in out,
              f"a pipe gets the bytes exactly: {out!r}")
        master, slave = pty.openpty()
        p = subprocess.Popen(args, stdout=slave, stderr=subprocess.PIPE,
                             stdin=subprocess.DEVNULL)
        os.close(slave)
        p.wait(timeout=60)
        got = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            got += chunk
        os.close(master)
        eq(p.returncode, 0, "app run onto a terminal")
        check(b"a?]0;pwn?b?c\td" in got, f"cleaned on a terminal: {got!r}")
        check(b"\x1b" not in got and b"\x07" not in got and
              b"\xc2\x9b" not in got, f"no control bytes: {got!r}")
    finally:
        shutil.rmtree(top)


if __name__ == "__main__":
    sys.exit(run_cases())
