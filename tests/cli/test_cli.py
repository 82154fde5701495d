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

from clitap import Skip, case, check, eq, run_cases

RELAYCTL = os.path.abspath(sys.argv[1])
ROOT = sys.argv[2] if len(sys.argv) > 2 else os.environ.get(
    "RELAY_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
EXAMPLES = os.path.join(ROOT, "doc", "examples", "apps")


def run(*args, stdin=None, cwd=None, env=None):
    """relayctl ARGS with RELAY_APPS_DIR unset unless @env sets it, and no
    defaults file (RELAYCTL_DEFAULTS_FILE names one that does not exist)."""
    e = {k: v for k, v in os.environ.items()
         if not k.startswith(("RELAY_", "REDIS_"))}
    e["RELAYCTL_DEFAULTS_FILE"] = "/nonexistent/relay-defaults"
    e.update(env or {})
    p = subprocess.run([RELAYCTL, *args], input=stdin, cwd=cwd, env=e,
                       capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def write_apps(root, apps, stubs=True):
    """apps: {name: template text}; creates root/name/template.yaml and,
    with @stubs, a module defining every handler the template names (or
    the exec command), so that `validate` checks the template alone."""
    os.makedirs(root, exist_ok=True)
    for name, text in apps.items():
        d = os.path.join(root, name)
        os.makedirs(d, exist_ok=True)
        text = textwrap.dedent(text)
        with open(os.path.join(d, "template.yaml"), "w") as f:
            f.write(text)
        if stubs:
            stub_handlers(d, text)


def stub_handlers(d, text):
    import re
    rt = re.search(r"^runtime: *(\S+)", text, re.M)
    rt = rt and rt.group(1)
    for h in re.findall(r"handler: *([A-Za-z_][\w.]*)", text):
        mod, _, fn = h.rpartition(".")
        if rt not in ("python3", "node") or not mod:
            continue
        path = os.path.join(d, *mod.split(".")) + \
            (".py" if rt == "python3" else ".js")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "a") as f:
            f.write(f"def {fn}(event):\n    pass\n" if rt == "python3"
                    else f"exports.{fn} = () => {{}};\n")
    cmd = re.search(r"^command: *\[\s*([^\s,\]]+)", text, re.M)
    if rt == "exec" and cmd and "/" in cmd.group(1):
        path = os.path.join(d, cmd.group(1))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write("#!/bin/sh\n")
        os.chmod(path, 0o755)


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
        # validate compiles handlers as the sandbox user when root.
        os.chmod(self.dir, 0o755)
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
    if not out.startswith("usage: relayctl validate [--apps DIR]"):
        raise AssertionError(out)
    eq(run("validate", "-h")[0], 0, "-h")
    for args in (["--apps"], ["--bogus"], ["--apps", "x", "extra"],
                 ["--apps="]):
        rc, out, err = run("validate", *args)
        eq((rc, out), (2, ""), f"usage error {args}")
        if "usage: relayctl validate" not in err:
            raise AssertionError(f"{args}: no usage on stderr: {err!r}")


@case
def validate_apps_dir_from_environment():
    # RELAY_APPS_DIR stands for --apps; the flag wins; unset means
    # /etc/relay/apps (named in the error when it is missing here).
    with Tmp() as t:
        write_apps(os.path.join(t, "bad"), {"x": "runtime: cobol\n"})
        env = {"RELAY_APPS_DIR": EXAMPLES}
        eq(run("validate", env=env), (0, "", ""), "from RELAY_APPS_DIR")
        rc, _, err = run("validate", env={"RELAY_APPS_DIR": t + "/bad"})
        eq(rc, 1, "invalid apps from RELAY_APPS_DIR")
        check(err.startswith("x: " + t + "/bad/x/template.yaml:1:"), err)
        eq(run("validate", "--apps", EXAMPLES,
               env={"RELAY_APPS_DIR": t + "/bad"}), (0, "", ""),
           "--apps wins")
        eq(run("validate", env={"RELAY_APPS_DIR": ""})[0] in (0, 1), True,
           "empty = unset")
    if not os.path.isdir("/etc/relay/apps"):
        rc, out, err = run("validate")
        eq((rc, out, err), (1, "", "relayctl: validate: /etc/relay/apps: "
                            "cannot open apps directory: No such file or "
                            "directory\n"), "default directory")


@case
def match_apps_dir_from_environment():
    with Tmp() as t:
        write_apps(t, {"a": RULES})
        eq(run("match", "-", stdin='{"kind":"order"}',
               env={"RELAY_APPS_DIR": t}), (0, "a/m.orders\n", ""),
           "from RELAY_APPS_DIR")
        eq(run("match", "--apps", t, "-", stdin='{"kind":"order"}',
               env={"RELAY_APPS_DIR": "/nonexistent/apps"}),
           (0, "a/m.orders\n", ""), "--apps wins")


@case
def app_run_apps_dir_from_environment():
    with Tmp() as t:
        write_apps(t, {"a": RULES})
        rc, out, err = run("app", "run", "nope", "--event", "{}",
                           env={"RELAY_APPS_DIR": t})
        eq((rc, out), (1, ""), "app run from RELAY_APPS_DIR")
        check(f'no valid app "nope" in {t}' in err, err)


def need(prog):
    if not shutil.which(prog):
        raise Skip(f"{prog} not installed")


def write_files(d, files):
    for rel, text in files.items():
        path = os.path.join(d, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(textwrap.dedent(text))


def rules(*handlers, runtime="python3", head=""):
    return f"runtime: {runtime}\n{head}events:\n" + "".join(
        f"  - handler: {h}\n    pattern: {{kind: [x]}}\n" for h in handlers)


@case
def validate_python_handlers():
    # validate loads nothing: it finds the module file, compiles it and
    # reads its top-level names. Problems: template line of the rule (or
    # schedule), or the file and position the compiler reports.
    need("python3")
    with Tmp() as t:
        marker = os.path.join(t, "ran")
        write_apps(t, {"py": rules(
            "nomod.h", "mod.missing", "mod.ok", "bad.h", "dyn.anything",
            "pkg.sub.h", "json.dumps", "nosuchmodule_xyz.h", "cond.h",
            "warn.h") +
            "schedules:\n  - name: s\n    handler: nothere.run\n"
            "    cron: \"0 6 * * *\"\n"}, stubs=False)
        write_files(os.path.join(t, "py"), {
            "mod.py": f"open({marker!r}, 'w')\ndef ok(event):\n"
                      "    pass\n",
            "bad.py": "import os\n\ndef h(e)\n    pass\n",
            "dyn.py": "globals()['anything'] = print\n",
            "pkg/sub.py": "async def h(event):\n    pass\n",
            "cond.py": "try:\n    from json import loads as h\n"
                       "except ImportError:\n    h = None\n",
            # a SyntaxWarning is no problem
            "warn.py": "x = '\\d'\ndef h(event):\n    pass\n",
            # the checker's own imports never come from the app
            "ast.py": f"open({marker!r}, 'w')\n",
            "os.py": f"open({marker!r}, 'w')\n",
        })
        rc, out, err = run("validate", "--apps", t)
        f = f"{t}/py/template.yaml"
        eq((rc, out), (1, ""), "rc, stdout")
        eq(err.splitlines(), [
            f'py: {f}:3:1: handler "nomod.h": module not found: no '
            'nomod.py or nomod/__init__.py in the app directory, and '
            'python3 has no module "nomod"',
            f'py: {f}:5:1: handler "mod.missing": mod.py defines no '
            '"missing" at top level',
            f"py: {t}/py/bad.py:3:9: SyntaxError: expected ':'",
            f'py: {f}:17:1: handler "nosuchmodule_xyz.h": module not found:'
            ' no nosuchmodule_xyz.py or nosuchmodule_xyz/__init__.py in the'
            ' app directory, and python3 has no module "nosuchmodule_xyz"',
            f'py: {f}:24:1: handler "nothere.run": module not found: no '
            'nothere.py or nothere/__init__.py in the app directory, and '
            'python3 has no module "nothere"',
        ], "stderr")
        check(not os.path.exists(marker), "no module code ran")
        rc, out, err = run("validate", "--apps", t, "--verbose")
        eq((rc, out), (1, "py: invalid\n"), "--verbose")


@case
def validate_node_handlers():
    need("node")
    with Tmp() as t:
        marker = os.path.join(t, "ran")
        write_apps(t, {"js": rules("nomod.h", "ok.h", "bad.h", "sub.m.h",
                                   "esm.h", runtime="node")}, stubs=False)
        write_files(os.path.join(t, "js"), {
            "ok.js": f"require('fs').writeFileSync({marker!r}, 'x');\n"
                     "exports.h = () => {};\n",
            "bad.js": "const a = 1;\nconst b = ;\n",
            "sub/m/index.js": "exports.h = () => {};\n",
            "esm.mjs": "export function h() {}\n",
        })
        rc, out, err = run("validate", "--apps", t)
        lines = err.splitlines()
        eq((rc, out, len(lines)), (1, "", 2), "rc, stdout, two problems")
        eq(lines[0], f'js: {t}/js/template.yaml:3:1: handler "nomod.h": '
           "module not found: no nomod.js, nomod.cjs, nomod.mjs or "
           "nomod/index.js in the app directory", "missing module")
        check(lines[1].startswith(f"js: {t}/js/bad.js:2:11: SyntaxError: "),
              lines[1])
        check(not os.path.exists(marker), "no module code ran")


@case
def validate_exec_command():
    with Tmp() as t:
        write_apps(t, {
            "a": "runtime: exec\ncommand: [./nope.sh]\n",
            "b": "runtime: exec\ncommand:\n  - ./plain.sh\n",
            "c": "runtime: exec\ncommand: [no-such-command-xyz, x]\n",
            "d": "runtime: exec\ncommand: [sh, -c, exit]\n",
            "e": "runtime: exec\nenv: {PATH: /opt/bin}\n"
                 "command: [no-such-command-xyz]\n",
            "f": "runtime: exec\ncommand: [./bin/run]\n",
        }, stubs=False)
        write_files(t, {"b/plain.sh": "#!/bin/sh\n", "f/bin/run": "#!/bin/sh\n"})
        os.chmod(os.path.join(t, "f", "bin", "run"), 0o755)
        rc, out, err = run("validate", "--apps", t)
        eq((rc, out), (1, ""), "rc, stdout")
        eq(err.splitlines(), [
            f'a: {t}/a/template.yaml:2:1: command "./nope.sh": no such '
            "file in the app directory",
            f'b: {t}/b/template.yaml:3:1: command "./plain.sh": not an '
            "executable file",
            f'c: {t}/c/template.yaml:2:1: command "no-such-command-xyz": '
            "not found in the sandbox's PATH (/usr/local/bin:/usr/bin:/bin)",
        ], "stderr")


@case
def validate_problems_by_app():
    # One app's problems together, apps in name order, whether they are
    # template or handler problems.
    need("python3")
    with Tmp() as t:
        write_apps(t, {"a": rules("nomod.h"), "b": "runtime: cobol\n",
                       "c": rules("nomod.h")}, stubs=False)
        rc, _, err = run("validate", "--apps", t)
        eq(rc, 1, "rc")
        eq([ln.split(":")[0] for ln in err.splitlines()], ["a", "b", "c"],
           "order")


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
        # issue 41: RFC 3339 too, as the DLQ filters' --since takes it
        eq(run("match", "--apps", t, "--now", "2026-01-01T00:01:00Z", "-",
               stdin=ev), (0, "a/m.recent\n", ""), "RFC 3339, 1m later")
        eq(run("match", "--apps", t, "--now", "2026-01-01T01:10:00+01:00",
               "-", stdin=ev), (0, "", ""), "RFC 3339 with offset, 10m later")
        rc, out, err = run("match", "--apps", t, "--now", "2026-02-30T00:00:00Z",
                           "-", stdin=ev)
        eq((rc, out), (2, ""), "no such day")
        check(err.startswith('relayctl: match: --now takes Unix milliseconds '
                             'or an RFC 3339 time'), err)


@case
def match_explain_says_why_a_rule_missed():
    # issue 41: --explain printed nothing on a miss; now every rule, and
    # under a miss the first condition that failed.
    with Tmp() as t:
        write_apps(t, {"a": """\
            runtime: python3
            events:
              - handler: m.paid
                pattern: {kind: [invoice], status: [PAID, {prefix: REF}]}
              - handler: m.big
                pattern: {kind: [invoice], detail: {amount: [{numeric: [">", 100]}]}}
              - handler: m.either
                pattern: {$or: [{a: [1]}, {b: [{exists: true}]}]}
            """, "b": """\
            runtime: python3
            events:
              - handler: m.any
                pattern: {kind: [invoice]}
              - handler: m.recent
                pattern: {at: [{gt: "now()-5m"}]}
            """})
        ev = ('{"kind":"invoice","status":"PENDING","detail":{"amount":5},'
              '"a":2,"at":"2026-01-01T00:00:00Z"}')
        eq(run("match", "--apps", t, "--explain", "--now",
               "2026-01-01T00:10:00Z", "-", stdin=ev),
           (0, "a/m.paid: no match\n"
               '  status: got "PENDING"; wanted "PAID" or prefix "REF"\n'
               "a/m.big: no match\n"
               "  detail.amount: got 5; wanted numeric > 100\n"
               "a/m.either: no match\n"
               "  $or[0].a: got 2; wanted 1\n"
               "  $or[1].b: got missing; wanted exists true\n"
               "b/m.any\n"
               '  kind[0]: "invoice"\n'
               "b/m.recent: no match\n"
               '  at: got "2026-01-01T00:00:00Z"; wanted time > '
               "now()-300000ms\n", ""), "--explain")
        # without --explain: the matches only, as before
        eq(run("match", "--apps", t, "-", stdin=ev), (0, "b/m.any\n", ""),
           "plain")


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
    if not out.startswith("usage: relayctl match [--apps DIR]"):
        raise AssertionError(out)
    for args in ([], ["--apps", EXAMPLES], ["--apps=", "-"],
                 ["--apps", EXAMPLES, "a",
                                                    "b"],
                 ["--apps", EXAMPLES, "--frob", "-"], ["--apps"]):
        rc, out, err = run("match", *args, stdin="{}")
        eq((rc, out), (2, ""), f"usage error {args}")
        if "usage: relayctl match" not in err:
            raise AssertionError(f"{args}: {err!r}")


if __name__ == "__main__":
    sys.exit(run_cases())
