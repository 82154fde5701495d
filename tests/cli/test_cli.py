#!/usr/bin/env python3
"""Black-box tests of `relayctl validate` and `relayctl match` (doc/cli.md L-1 ... L-3).

usage: test_cli.py RELAYCTL [SOURCE_ROOT]

Each case builds its apps directory in a fresh temporary directory, runs
the real binary and asserts on the exit status and the exact stdout and
stderr. Output is TAP.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap

from clitap import case, eq, run_cases

RELAYCTL = os.path.abspath(sys.argv[1])
ROOT = sys.argv[2] if len(sys.argv) > 2 else os.environ.get(
    "RELAY_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
EXAMPLES = os.path.join(ROOT, "doc", "examples", "apps")


def run(*args, stdin=None, cwd=None):
    p = subprocess.run([RELAYCTL, *args], input=stdin, cwd=cwd,
                       capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def write_apps(root, apps):
    """apps: {name: template text}; creates root/name/template.yaml."""
    os.makedirs(root, exist_ok=True)
    for name, text in apps.items():
        os.makedirs(os.path.join(root, name), exist_ok=True)
        with open(os.path.join(root, name, "template.yaml"), "w") as f:
            f.write(textwrap.dedent(text))


RULES = """\
runtime: python3
events:
  - handler: m.orders
    pattern: {kind: [order]}
  - handler: m.big
    pattern: {amount: [{gt: 100}]}
  - handler: m.never
    pattern: {kind: [never]}
"""


class Tmp:
    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="relay-cli-")
        return self.dir

    def __exit__(self, *exc):
        shutil.rmtree(self.dir)


# ---- validate ----

@case
def validate_examples_ok():
    rc, out, err = run("validate", "--apps", EXAMPLES)
    eq((rc, out, err), (0, "", ""), "validate examples")


@case
def validate_verbose_summary():
    rc, out, err = run("validate", "--apps", EXAMPLES, "--verbose")
    eq(rc, 0, "rc")
    eq(out.splitlines(), [
        "audit: ok (exec, 2 rules, 0 schedules)",
        "billing: ok (python3, 2 rules, 1 schedule)",
        "notify: ok (node, 1 rule, 0 schedules)",
    ], "stdout")


@case
def validate_problem_lines_exact():
    with Tmp() as t:
        write_apps(os.path.join(t, "apps"), {
            "good": RULES,
            "bad": """\
                runtime: python3
                events:
                  - handler: nodot
                    pattern:
                      status: COMPLETED
                    timeout: 5m1s
                    retries: -1
                  - handler: a.b
                    patern: {x: [1]}
                """,
        })
        rc, out, err = run("validate", "--apps", "apps", cwd=t)
        eq(rc, 1, "rc")
        eq(out, "", "stdout")
        f = "apps/bad/template.yaml"
        eq(err.splitlines(), [
            f"bad: {f}:3:14: events[0].handler: invalid handler \"nodot\" "
            "(write module.function, e.g. events.created.handler)",
            f"bad: {f}:5:15: events[0].pattern: status: a condition must be "
            "a list of alternatives: write [COMPLETED]",
            f"bad: {f}:6:14: events[0].timeout: must be at most 5m, got 5m1s",
            f"bad: {f}:7:14: events[0].retries: must be between 0 and 100, "
            "got -1",
            f"bad: {f}:8:5: events[1]: missing key \"pattern\"",
            f"bad: {f}:9:5: events[1]: unknown key \"patern\" (did you mean "
            "\"pattern\"?)",
        ], "stderr")
        # the file is named as given under DIR, also with a trailing '/'
        rc, _, err = run("validate", "--apps", "apps/", cwd=t)
        eq(rc, 1, "rc with trailing slash")
        eq(err.splitlines()[0].split(":")[1].strip(), f, "file name")
        rc, _, err = run("validate", "--apps", os.path.join(t, "apps"))
        eq(err.splitlines()[0].split(": ")[1].split(":")[0],
           os.path.join(t, "apps", "bad", "template.yaml"), "absolute")


@case
def validate_line_format_regex():
    import re
    pat = re.compile(r"^([a-z0-9][a-z0-9._-]*|\S+): (\S+):(\d+):(\d+): (.+)$")
    with Tmp() as t:
        write_apps(t, {
            "a": "runtime: [\n",
            "b": "runtime: exec\n",
            "c": "",
            "d": "runtime: node\nbogus: 1\n",
        })
        rc, out, err = run("validate", "--apps", t)
        eq(rc, 1, "rc")
        lines = err.splitlines()
        eq([l.split(":")[0] for l in lines], ["a", "b", "c", "d"], "apps")
        for line in lines:
            if not pat.match(line):
                raise AssertionError(f"bad line format: {line!r}")


@case
def validate_every_pattern_error():
    # all the problems of one pattern in one run, each at its own place
    with Tmp() as t:
        write_apps(t, {"app": """\
            runtime: python3
            events:
              - handler: m.h
                pattern:
                  status: COMPLETED
                  id: [{prefx: a}, {suffix: 7}]
                  detail: {kind: []}
            """})
        rc, out, err = run("validate", "--apps", t)
        eq((rc, out), (1, ""), "rc")
        f = f"{t}/app/template.yaml"
        eq([l for l in err.splitlines() if ".pattern: " in l], [
            f"app: {f}:5:15: events[0].pattern: status: a condition must "
            "be a list of alternatives: write [COMPLETED]",
            f"app: {f}:6:13: events[0].pattern: id[0]: unknown operator "
            "\"prefx\" (did you mean \"prefix\"?)",
            f"app: {f}:6:33: events[0].pattern: id[1]: suffix takes a "
            "string, not a number (quote it)",
            f"app: {f}:7:22: events[0].pattern: detail.kind: empty list: a "
            "condition needs at least one alternative",
        ], "stderr")


@case
def validate_syntax_error_position():
    with Tmp() as t:
        write_apps(t, {"app": "runtime: python3\nenv:\n  X: \"\\q\"\n"})
        rc, _, err = run("validate", "--apps", t)
        eq(rc, 1, "rc")
        eq(err, f"app: {t}/app/template.yaml:3:7: YAML syntax error: "
           "invalid escape 'q' in double-quoted string\n", "stderr")


@case
def validate_bad_app_name():
    with Tmp() as t:
        write_apps(t, {"Billing": RULES, "ok": RULES})
        rc, out, err = run("validate", "--apps", t)
        eq(rc, 1, "rc")
        eq(err, f"relayctl: validate: {t}: skipping \"Billing\": not a "
           "valid app name (must match [a-z0-9][a-z0-9._-]*, at most 63 "
           "bytes)\n", "stderr")


@case
def validate_every_app_reported_in_name_order():
    with Tmp() as t:
        write_apps(t, {"zz": "runtime: x\n", "aa": "runtime: y\n",
                       "mm": RULES})
        rc, _, err = run("validate", "--apps", t)
        eq(rc, 1, "rc")
        eq([l.split(":")[0] for l in err.splitlines()], ["aa", "zz"],
           "order")


@case
def validate_ignores_dirs_without_template():
    with Tmp() as t:
        write_apps(t, {"a": RULES})
        os.makedirs(os.path.join(t, "notes"))
        with open(os.path.join(t, "README"), "w") as f:
            f.write("x")
        eq(run("validate", "--apps", t), (0, "", ""), "validate")


@case
def validate_empty_dir_ok():
    with Tmp() as t:
        eq(run("validate", "--apps", t), (0, "", ""), "validate")


@case
def validate_missing_dir():
    rc, out, err = run("validate", "--apps", "/nonexistent/apps")
    eq((rc, out), (1, ""), "rc/stdout")
    eq(err, "relayctl: validate: /nonexistent/apps: cannot open apps "
       "directory: No such file or directory\n", "stderr")


@case
def validate_help_and_usage():
    rc, out, err = run("validate", "--help")
    eq((rc, err), (0, ""), "--help")
    if not out.startswith("usage: relayctl validate --apps DIR"):
        raise AssertionError(out)
    eq(run("validate", "-h")[0], 0, "-h")
    for args in ([], ["--apps"], ["--bogus"], ["--apps", "x", "extra"],
                 ["--apps="]):
        rc, out, err = run("validate", *args)
        eq((rc, out), (2, ""), f"usage error {args}")
        if "usage: relayctl validate" not in err:
            raise AssertionError(f"{args}: no usage on stderr: {err!r}")


@case
def validate_equals_form():
    eq(run("validate", "--apps=" + EXAMPLES), (0, "", ""), "--apps=DIR")


@case
def doc_templates_examples_validate():
    """Every complete template in doc/templates.md is valid."""
    import re
    with open(os.path.join(ROOT, "doc", "templates.md")) as f:
        blocks = re.findall(r"```yaml\n(.*?)```", f.read(), re.S)
    full = [b for b in blocks if b.startswith("runtime:")]
    if not full:
        raise AssertionError("no complete template in doc/templates.md")
    with Tmp() as t:
        write_apps(t, {f"doc{i}": b for i, b in enumerate(full)})
        eq(run("validate", "--apps", t), (0, "", ""), "doc examples")


# ---- match ----

@case
def match_dispatch_order_across_apps():
    with Tmp() as t:
        write_apps(t, {"b": RULES, "a": RULES, "a-2": RULES, "A0": RULES})
        # "A0" is an invalid name; use a clean set for matching
        shutil.rmtree(os.path.join(t, "A0"))
        ev = json.dumps({"kind": "order", "amount": 101})
        rc, out, err = run("match", "--apps", t, "-", stdin=ev)
        eq((rc, err), (0, ""), "rc/stderr")
        eq(out.splitlines(), [
            "a/m.orders", "a/m.big",
            "a-2/m.orders", "a-2/m.big",
            "b/m.orders", "b/m.big",
        ], "stdout")


@case
def match_from_file_and_stdin_agree():
    with Tmp() as t:
        write_apps(os.path.join(t, "apps"), {"a": RULES})
        path = os.path.join(t, "event.json")
        with open(path, "w") as f:
            f.write('{"kind": "order"}')
        eq(run("match", "--apps", os.path.join(t, "apps"), path),
           (0, "a/m.orders\n", ""), "file")
        eq(run("match", "--apps", os.path.join(t, "apps"), "-",
               stdin='{"kind": "order"}'), (0, "a/m.orders\n", ""), "stdin")


@case
def match_every_rule_no_dedup():
    with Tmp() as t:
        write_apps(t, {"a": """\
            runtime: exec
            command: [./x]
            events:
              - handler: one
                pattern: {kind: [order]}
              - handler: two
                pattern: {kind: [order]}
            """})
        eq(run("match", "--apps", t, "-", stdin='{"kind":"order"}'),
           (0, "a/one\na/two\n", ""), "both rules")


@case
def match_nothing():
    with Tmp() as t:
        write_apps(t, {"a": RULES})
        eq(run("match", "--apps", t, "-", stdin='{"kind": "other"}'),
           (0, "", ""), "no match")
        eq(run("match", "--apps", t, "-", stdin='{}'), (0, "", ""), "{}")


@case
def match_examples():
    def m(ev):
        return run("match", "--apps", EXAMPLES, "-", stdin=json.dumps(ev))
    eq(m({"type": "invoice.paid",
          "invoice": {"id": "inv_7", "amount": 12000}}),
       (0, "billing/invoices.paid.handle\nbilling/invoices.large.review\n",
        ""), "big invoice")
    eq(m({"type": "invoice.paid", "invoice": {"id": "inv_7", "amount": 10,
                                             "refunded_at": None}}),
       (0, "", ""), "refunded: exists false fails on a present null")
    eq(m({"service": "db", "result": {"status": "DEGRADED", "attempts": 3}}),
       (0, "notify/alerts.send\n", ""), "degraded 3x")
    eq(m({"service": "db", "result": {"status": "DEGRADED", "attempts": 2}}),
       (0, "", ""), "degraded 2x")
    eq(m({"table_name": "users", "event_name": "DELETE",
          "new_image": {"email": "eve@example.com"}}),
       (0, "audit/user-change\n", ""), "suffix")


@case
def match_now_option():
    with Tmp() as t:
        write_apps(t, {"a": """\
            runtime: python3
            events:
              - handler: m.recent
                pattern: {at: [{gt: "now()-5m"}]}
            """})
        ev = '{"at": "2026-01-01T00:00:00Z"}'
        t0 = 1767225600000  # 2026-01-01T00:00:00Z
        eq(run("match", "--apps", t, "--now", str(t0 + 60000), "-",
               stdin=ev), (0, "a/m.recent\n", ""), "1m later")
        eq(run("match", "--apps", t, "--now=" + str(t0 + 600000), "-",
               stdin=ev), (0, "", ""), "10m later")
        eq(run("match", "--apps", t, "--now", "soon", "-", stdin=ev)[0], 2,
           "bad --now")


@case
def match_invalid_template_fails():
    with Tmp() as t:
        write_apps(t, {"a": RULES, "b": "runtime: python3\nevents: 3\n"})
        rc, out, err = run("match", "--apps", t, "-", stdin='{"kind":"order"}')
        eq((rc, out), (1, ""), "rc/stdout")
        eq(err, f"b: {t}/b/template.yaml:2:9: events: must be a list of "
           "rules\n", "stderr")


@case
def match_bad_events():
    with Tmp() as t:
        write_apps(t, {"a": RULES})
        for ev, want in (("[1, 2]", "not a JSON object"),
                         ('"x"', "not a JSON object"),
                         ("{bad", "invalid JSON"),
                         ("", "invalid JSON"),
                         ('{"a":1} {"b":2}', "invalid JSON")):
            rc, out, err = run("match", "--apps", t, "-", stdin=ev)
            eq((rc, out), (1, ""), f"event {ev!r}")
            if not err.startswith("relayctl: match: stdin: ") or \
                    want not in err or err.count("\n") != 1:
                raise AssertionError(f"{ev!r}: stderr {err!r}")
        rc, out, err = run("match", "--apps", t, os.path.join(t, "nope"))
        eq((rc, out), (1, ""), "missing event file")
        if "nope" not in err:
            raise AssertionError(err)


@case
def match_missing_apps_dir():
    rc, out, err = run("match", "--apps", "/nonexistent/apps", "-",
                       stdin="{}")
    eq((rc, out), (1, ""), "rc")
    if "/nonexistent/apps" not in err:
        raise AssertionError(err)


@case
def match_help_and_usage():
    rc, out, err = run("match", "--help")
    eq((rc, err), (0, ""), "--help")
    if not out.startswith("usage: relayctl match --apps DIR"):
        raise AssertionError(out)
    for args in ([], ["--apps", EXAMPLES], ["-"], ["--apps", EXAMPLES, "a",
                                                    "b"],
                 ["--apps", EXAMPLES, "--frob", "-"], ["--apps"]):
        rc, out, err = run("match", *args, stdin="{}")
        eq((rc, out), (2, ""), f"usage error {args}")
        if "usage: relayctl match" not in err:
            raise AssertionError(f"{args}: {err!r}")


if __name__ == "__main__":
    sys.exit(run_cases())
