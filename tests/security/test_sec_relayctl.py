#!/usr/bin/env python3
"""Security: relayctl on the operator's side of the boundary (issue 40).

5: `relayctl app run` is sandboxed unless its own command line says
   `--sandbox none`. As root, RELAY_SANDBOX=none from the defaults file
   (or from the environment) is refused, saying where it came from and
   why; `--sandbox none` on the command line still runs the handler.
7: `relayctl validate` hands no handler file bigger than its cap (16 MiB
   by default, --max-file-size) to a compiler: a 512 MiB sparse h.py is a
   problem naming the file, and no process of validate grows with it.

argv: relayd relayctl (relayd unused: the same arguments as the other
security scripts).
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                os.pardir))
from tap import Skip, case, check, eq, run_cases  # noqa: E402

RELAYCTL = os.path.abspath(sys.argv[2])
CONN = ("REDIS_URI", "REDIS_STREAM", "REDIS_GROUP", "RELAY_RUN_DIR",
        "RELAY_STATE_DIR", "RELAY_APPS_DIR", "RELAY_SANDBOX",
        "RELAY_SANDBOX_USER")

# An exec app that says which uid ran it.
WHOAMI = ("runtime: exec\ncommand: [/bin/sh, -c, 'echo uid=$(id -u)']\n"
          "events:\n  - handler: who\n    pattern: {kind: [x]}\n")


def ctl(*args, env=None, cwd=None):
    e = {k: v for k, v in os.environ.items() if k not in CONN}
    e["RELAYCTL_DEFAULTS_FILE"] = "/nonexistent/relay-defaults"
    e.update(env or {})
    p = subprocess.run([RELAYCTL, *args], env=e, capture_output=True,
                       text=True, timeout=120, cwd=cwd)
    check("Sanitizer" not in p.stderr, p.stderr)
    return p.returncode, p.stdout, p.stderr


def need_root():
    if os.geteuid() != 0:
        raise Skip("needs root: the refusal is root's")


class Apps:
    """A temporary apps directory (world-readable: the sandbox user must
    read it) with one app 'w' and a defaults file."""

    def __enter__(self):
        self.top = tempfile.mkdtemp(prefix="relay-sec-ctl-")
        os.chmod(self.top, 0o755)
        self.apps = os.path.join(self.top, "apps")
        os.makedirs(os.path.join(self.apps, "w"))
        with open(os.path.join(self.apps, "w", "template.yaml"), "w") as f:
            f.write(WHOAMI)
        self.defaults = os.path.join(self.top, "relay")
        with open(self.defaults, "w") as f:
            f.write("# as on an unprivileged relayd's host\n"
                    "RELAY_SANDBOX=none\n")
        return self

    def __exit__(self, *exc):
        shutil.rmtree(self.top, ignore_errors=True)


REFUSED = ("relayctl: app run: refusing RELAY_SANDBOX=none ({}) as root: "
           "the app's code would run as uid 0 with every capability; only "
           "--sandbox none on app run's own command line runs it "
           "unsandboxed\n")


@case
def app_run_as_root_refuses_sandbox_none_from_the_defaults_file():
    need_root()
    with Apps() as a:
        run = ("app", "run", "w", "--apps", a.apps, "--event",
               '{"kind":"x"}')
        rc, out, err = ctl(*run, env={"RELAYCTL_DEFAULTS_FILE": a.defaults})
        eq((rc, out, err), (1, "", REFUSED.format("from " + a.defaults)),
           "RELAY_SANDBOX=none from the defaults file")
        rc, out, err = ctl("--env-file", a.defaults, *run)
        eq((rc, out, err), (1, "", REFUSED.format("from " + a.defaults)),
           "RELAY_SANDBOX=none from --env-file")


@case
def app_run_as_root_refuses_sandbox_none_from_the_environment():
    # The environment is inherited (a shell profile, `set -a; .
    # /etc/default/relay`, sudo's env_keep, a container's ENV): no more a
    # decision made for this run than the file is.
    need_root()
    with Apps() as a:
        rc, out, err = ctl("app", "run", "w", "--apps", a.apps, "--event",
                           '{"kind":"x"}', env={"RELAY_SANDBOX": "none"})
        eq((rc, out, err),
           (1, "", REFUSED.format("set in the environment")),
           "RELAY_SANDBOX=none from the environment")


@case
def app_run_sandbox_none_on_the_command_line_runs_unsandboxed():
    need_root()
    with Apps() as a:
        rc, out, err = ctl("app", "run", "w", "--apps", a.apps,
                           "--sandbox", "none", "--event", '{"kind":"x"}',
                           env={"RELAYCTL_DEFAULTS_FILE": a.defaults})
        eq((rc, err), (0, ""), "--sandbox none runs")
        lines = out.splitlines()
        eq(lines[0], "[w/who] stdout: uid=0", "unsandboxed: root's uid")
        check(lines[1].startswith("w/who ok "), out)


@case
def app_run_sandbox_bwrap_from_the_file_is_taken():
    need_root()
    if not shutil.which("bwrap"):
        raise Skip("bwrap not installed")
    with Apps() as a:
        with open(a.defaults, "w") as f:
            f.write("RELAY_SANDBOX=bwrap\n")
        rc, out, err = ctl("app", "run", "w", "--apps", a.apps, "--event",
                           '{"kind":"x"}',
                           env={"RELAYCTL_DEFAULTS_FILE": a.defaults})
        if rc == 1 and out == "":
            raise Skip(f"no bwrap sandbox here: {err.strip()}")
        eq(rc, 0, err)
        check(out.startswith("[w/who] stdout: uid="), out)
        check("uid=0\n" not in out, "sandboxed, not root: " + out)


@case
def app_run_as_another_user_ignores_sandbox_none_from_the_environment():
    # Not root: the run stays sandboxed (pid 1 is bwrap in its own pid
    # namespace, init otherwise) and stderr says why none was not taken.
    need_root()   # to become uid 65534
    if not shutil.which("bwrap"):
        raise Skip("bwrap not installed")
    with Apps() as a:
        with open(os.path.join(a.apps, "w", "template.yaml"), "w") as f:
            f.write("runtime: exec\ncommand: [/bin/sh, -c, "
                    "'echo pid1=$(cat /proc/1/comm)']\n"
                    "events:\n  - handler: who\n    pattern: {kind: [x]}\n")
        os.chmod(os.path.join(a.apps, "w", "template.yaml"), 0o644)
        os.chmod(os.path.join(a.apps, "w"), 0o755)
        os.chmod(a.apps, 0o755)

        def nobody():
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
        e = {k: v for k, v in os.environ.items() if k not in CONN}
        e.update({"RELAYCTL_DEFAULTS_FILE": "/nonexistent/relay-defaults",
                  "RELAY_SANDBOX": "none"})
        p = subprocess.run([RELAYCTL, "app", "run", "w", "--apps", a.apps,
                            "--event", '{"kind":"x"}'], env=e,
                           preexec_fn=nobody, capture_output=True,
                           text=True, timeout=120, cwd="/")
        first = p.stderr.splitlines()[0] if p.stderr else ""
        eq(first, "relayctl: app run: RELAY_SANDBOX=none (set in the "
           "environment) ignored: app run is sandboxed unless --sandbox "
           "none is on its command line", "the note")
        if p.returncode == 1 and "--sandbox none runs without" in p.stderr:
            raise Skip("bwrap cannot run as uid 65534 here (it was "
                       "chosen: the sandbox stayed on)")
        eq(p.returncode, 0, p.stderr)
        eq(p.stdout.splitlines()[0], "[w/who] stdout: pid1=bwrap",
           "sandboxed")


# A child of this script's: relayctl's own peak RSS and that of every
# process it waited for (the compilers), in KiB.
RSS_PROBE = r"""
import resource, subprocess, sys
p = subprocess.run(sys.argv[1:], capture_output=True, text=True)
sys.stdout.write("%d\n%d\n" % (p.returncode,
    resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.stdout.write(p.stderr)
"""


def validate_rss(apps, *extra):
    e = {k: v for k, v in os.environ.items() if k not in CONN}
    e["RELAYCTL_DEFAULTS_FILE"] = "/nonexistent/relay-defaults"
    p = subprocess.run([sys.executable, "-c", RSS_PROBE, RELAYCTL,
                        "validate", "--apps", apps, *extra],
                       env=e, capture_output=True, text=True, timeout=300)
    rc, rss, err = p.stdout.split("\n", 2)
    return int(rc), int(rss), err


@case
def validate_does_not_compile_a_512mib_sparse_handler():
    if not shutil.which("python3"):
        raise Skip("python3 not installed")
    with Apps() as a:
        app = os.path.join(a.apps, "big")
        os.makedirs(app)
        with open(os.path.join(app, "template.yaml"), "w") as f:
            f.write("runtime: python3\nevents:\n  - handler: h.main\n"
                    "    pattern: {kind: [x]}\n")
        h = os.path.join(app, "h.py")
        with open(h, "w") as f:
            f.write("def main(event):\n    pass\n")
        os.chmod(h, 0o644)
        os.truncate(h, 512 << 20)   # sparse: no disk used
        shutil.rmtree(os.path.join(a.apps, "w"))
        rc, rss, err = validate_rss(a.apps)
        eq((rc, err),
           (1, f"big: {a.apps}/big/h.py:1:1: file of 536870912 bytes is "
            "larger than the 16777216 bytes validate compiles "
            "(--max-file-size)\n"), "validate")
        check(rss < 100 * 1024, f"peak RSS of validate's processes: "
              f"{rss} KiB (the file is 512 MiB)")
        # The cap is the operator's: a smaller one catches a small file.
        os.truncate(h, 0)
        with open(h, "w") as f:
            f.write("def main(event):\n    pass\n" + "#" * 2000 + "\n")
        rc, out, err = ctl("validate", "--apps", a.apps,
                           "--max-file-size", "1K")
        eq((rc, err),
           (1, f"big: {a.apps}/big/h.py:1:1: file of 2027 bytes is larger "
            "than the 1024 bytes validate compiles (--max-file-size)\n"),
           "--max-file-size 1K")
        rc, out, err = ctl("validate", "--apps", a.apps)
        eq((rc, err), (0, ""), "under the default cap")
        rc, out, err = ctl("validate", "--apps", a.apps,
                           "--max-file-size", "12X")
        eq(rc, 2, "a bad size is a usage error")
        check(err.startswith('relayctl: validate: --max-file-size: '
                             'expected a size'), err)


@case
def validate_does_not_check_a_too_big_node_handler():
    if not shutil.which("node"):
        raise Skip("node not installed")
    with Apps() as a:
        app = os.path.join(a.apps, "big")
        os.makedirs(app)
        with open(os.path.join(app, "template.yaml"), "w") as f:
            f.write("runtime: node\nevents:\n  - handler: h.main\n"
                    "    pattern: {kind: [x]}\n")
        h = os.path.join(app, "h.js")
        with open(h, "w") as f:
            f.write("exports.main = () => {};\n")
        os.truncate(h, 64 << 20)
        shutil.rmtree(os.path.join(a.apps, "w"))
        rc, rss, err = validate_rss(a.apps)
        eq((rc, err),
           (1, f"big: {a.apps}/big/h.js:1:1: file of 67108864 bytes is "
            "larger than the 16777216 bytes validate compiles "
            "(--max-file-size)\n"), "validate")
        check(rss < 100 * 1024, f"peak RSS: {rss} KiB")


if __name__ == "__main__":
    sys.exit(run_cases())
