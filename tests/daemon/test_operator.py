#!/usr/bin/env python3
"""relayd black-box tests: the operator's first hour (doc/configuration.md
C-1, C-2; relayd(8) "CHECKING A CONFIGURATION", "METRICS"): misspelt
variables, the MAX_CONCURRENT_INVOCATIONS alias, relayd --check, the
start-up line about metrics, METRICS_ADDR=:port, /healthz and /readyz,
and one list of variables in --help, doc/configuration.md and relayd(8).

usage: test_operator.py RELAYD
"""
import os
import re
import subprocess
import urllib.error
import urllib.request

from harness import (RELAYD, Env, case, check, eq, free_port, need_metrics,
                     peak_overlap, run_cases, spans, wait_for)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, os.pardir, os.pardir))


def run_relayd(vars, args=()):
    env = {k: v for k, v in os.environ.items()
           if k.startswith(("ASAN_", "UBSAN_", "LSAN_", "PATH",
                            "RELAY_BOOTSTRAP_DIR"))}
    env.update(vars)
    p = subprocess.run([RELAYD, *args], env=env, capture_output=True,
                       text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def base(env, **extra):
    v = {
        "REDIS_URI": env.redis.uri,
        "REDIS_STREAM": env.stream,
        "REDIS_GROUP": env.group,
        "RELAY_APPS_DIR": env.apps_dir,
        "RELAY_RUN_DIR": os.path.join(env.dir, "run"),
        "RELAY_STATE_DIR": os.path.join(env.dir, "state"),
        "RELAY_SANDBOX": "none",
    }
    v.update(extra)
    return v


@case
def check_ok_and_exit_0():
    with Env() as env:
        env.app("a", rules=[("h1", {"kind": ["x"]})])
        rc, out, err = run_relayd(base(env), ["--check"])
        eq(rc, 0, f"exit status; stdout {out!r} stderr {err!r}")
        for line in ("apps: ok (1 in", "sandbox: ok (process)",
                     "redis: ok", "metrics: off", "relayd --check: ok"):
            check(line in out, f"{line!r} in {out!r}")
        # Nothing was started: no control socket, no group.
        check(not os.path.exists(os.path.join(env.dir, "run",
                                              "relay.sock")),
              "--check made a control socket")
        eq(env.r("EXISTS", env.stream), 0, "--check touched the stream")


@case
def check_reports_every_problem_exit_1():
    with Env() as env:
        env.app("good", rules=[("h1", {"kind": ["x"]})])
        env.app("bad", rules=[], raw="runtime: exec\ncommand: [x]\n"
                "events:\n  - handler: h\n    pattern: {kind: [}\n")
        vars = base(env, REDIS_URI="unix://" + os.path.join(
            env.dir, "nothing-here.sock"))
        rc, out, err = run_relayd(vars, ["--check"])
        eq(rc, 1, f"exit status; stdout {out!r}")
        check("apps: FAILED: 1 of 2 app(s)" in out, out)
        check(re.search(r"^bad: .*template\.yaml:\d+:\d+: ", err, re.M),
              f"app problem as app: file:line:col: {err!r}")
        check("redis: FAILED" in out and "nothing-here.sock" in out, out)
        check("relayd --check: 2 problem(s)" in out, out)


@case
def check_bad_configuration_one_line():
    with Env() as env:
        rc, out, err = run_relayd(base(env, MAX_CONCURRENCY="zero"),
                                  ["--check"])
        eq(rc, 1, "exit status")
        eq(len(err.splitlines()), 1, f"one error line: {err!r}")
        check("MAX_CONCURRENCY" in err, err)


# What relayd echoes before its logger exists (a bad value of any
# variable, RELAY_APPS_DIR and the Redis answer in --check) cannot drive
# the terminal: ESC, BEL, DEL and a C1 CSI come out as \\xNN, one line.
@case
def config_errors_and_check_escape_control_bytes():
    evil = "x\x1b]0;pwn\x07\x7f\u009by"
    shown = "x\\x1b]0;pwn\\x07\\x7f\\xc2\\x9by"
    raws = ("\x1b", "\x07", "\x7f", "\u009b")
    with Env() as env:
        for var in ("LOG_LEVEL", "MAX_CONCURRENCY", "RELAY_WARM_IDLE"):
            rc, out, err = run_relayd(base(env, **{var: evil}), ["--check"])
            eq(rc, 1, f"{var}: exit status ({err!r})")
            eq(len(err.splitlines()), 1, f"{var}: one line: {err!r}")
            check(shown in err, f"{var}: escaped value in {err!r}")
            for raw in raws:
                check(raw not in err, f"{var}: raw {raw!r} in {err!r}")
        apps = os.path.join(env.dir, evil)
        rc, out, err = run_relayd(base(env, RELAY_APPS_DIR=apps),
                                  ["--check"])
        eq(rc, 1, f"missing apps dir: exit status ({out!r})")
        check("apps: FAILED: RELAY_APPS_DIR" in out and shown in out, out)
        for raw in raws:
            check(raw not in out + err, f"--check: raw {raw!r} in {out!r}")


@case
def unknown_variable_warns_with_closest():
    with Env() as env:
        env.app("a", rules=[("h1", {"kind": ["x"]})])
        vars = base(env, RELAY_SANBOX="none", METRICS_ADR="127.0.0.1:1",
                    LOG_LEVLE="DEBUG", MAX_CONCURENCY="3",
                    REDIS_STREEM="x\x1b[31m", OTHER_THING="1")
        rc, out, err = run_relayd(vars, ["--check"])
        eq(rc, 0, f"warnings are not errors: {err!r}")
        for bad, good in (("RELAY_SANBOX", "RELAY_SANDBOX"),
                          ("METRICS_ADR", "METRICS_ADDR"),
                          ("LOG_LEVLE", "LOG_LEVEL"),
                          ("MAX_CONCURENCY", "MAX_CONCURRENCY"),
                          ("REDIS_STREEM", "REDIS_STREAM")):
            check(re.search(rf"RELAYD-CFG01.*unknown variable {bad} is "
                            rf"ignored; did you mean {good}\?", err),
                  f"{bad} -> {good} in {err!r}")
        check("OTHER_THING" not in err, "only our prefixes are checked")
        # A name too long to compare is still named, without a guess.
        long = "RELAY_" + "X" * 70
        rc, out, err = run_relayd(dict(vars, **{long: "1"}), ["--check"])
        check(re.search(rf"unknown variable {long} is ignored "
                        r"\(relayd --help", err), err)
        check("(null)" not in err, err)
        check("\x1b" not in err, "a control byte was echoed")
        # Known variables, and those the library reads, are not warned.
        rc, out, err = run_relayd(base(env, RELAY_BOOTSTRAP_DIR="/x",
                                       RELAY_WARM="0"), ["--check"])
        check("RELAYD-CFG01" not in err, err)


@case
def near_miss_variable_of_any_prefix_warns():
    # A typo that changes the prefix (METRIC_ADDR) was silent: only the
    # prefixes were checked. Now the whole name is compared with every
    # known variable; the environment's own short names never match.
    with Env() as env:
        env.app("a", rules=[("h1", {"kind": ["x"]})])
        vars = base(env, METRIC_ADDR="127.0.0.1:1",
                    OTEL_SERVICE_NAM="x", RELAYWARM="0", HOME="/root",
                    TERM="xterm", LANG="C", PWD="/", SHLVL="1",
                    OTEL_LOGS_EXPORTER="none", TZ="UTC", PATHS="x")
        rc, out, err = run_relayd(vars, ["--check"])
        eq(rc, 0, f"warnings are not errors: {err!r}")
        for bad, good in (("METRIC_ADDR", "METRICS_ADDR"),
                          ("OTEL_SERVICE_NAM", "OTEL_SERVICE_NAME"),
                          ("RELAYWARM", "RELAY_WARM")):
            check(re.search(rf"RELAYD-CFG01.*unknown variable {bad} is "
                            rf"ignored; did you mean {good}\?", err),
                  f"{bad} -> {good} in {err!r}")
        for name in ("HOME", "TERM", "LANG", "PWD", "SHLVL", "TZ",
                     "OTEL_LOGS_EXPORTER", "PATHS"):
            check(f"variable {name} " not in err, f"{name} warned: {err!r}")
        eq(err.count("RELAYD-CFG01"), 3, f"three warnings: {err!r}")


@case
def check_missing_apps_dir_says_it_once():
    # --check printed "-: DIR: cannot open apps directory" on stderr as
    # well as the FAILED line: one line only, on stdout.
    with Env() as env:
        apps = os.path.join(env.dir, "no-apps-here")
        rc, out, err = run_relayd(base(env, RELAY_APPS_DIR=apps),
                                  ["--check"])
        eq(rc, 1, f"exit status ({out!r})")
        eq([ln for ln in (out + err).splitlines() if apps in ln],
           [f'apps: FAILED: RELAY_APPS_DIR "{apps}": does not exist'],
           f"one line naming the directory: {out!r} {err!r}")
        check("cannot open apps directory" not in err, err)


@case
def unknown_argument_is_three_lines_with_a_suggestion():
    # `relayd --chek` printed the whole help (60 lines) on stderr.
    for arg, near in (("--chek", "--check"), ("--verison", "--version"),
                      ("-help", "--help"), ("check", "--check"),
                      ("--frobnicate", None)):
        rc, out, err = run_relayd({}, [arg])
        eq(rc, 2, f"{arg}: usage error")
        eq(out, "", f"{arg}: nothing on stdout")
        first = f"relayd: unknown argument: {arg}" + (
            f" (did you mean {near}?)" if near else "")
        eq(err.splitlines(), [
            first, "usage: relayd [--check] [--help] [--version]",
            "try 'relayd --help' for more information"], f"{arg}: stderr")


@case
def version_lists_the_build_features():
    # Like `redis-server --version`: what this build can do, so that an
    # operator sees at once why rediss:// or tracing is refused.
    rc, out, err = run_relayd({}, ["--version"])
    eq(rc, 0, "--version status")
    lines = out.splitlines()
    eq(len(lines), 2, f"two lines: {out!r}")
    check(re.fullmatch(r"relayd \d+\.\d+\.\d+\S*", lines[0]), lines[0])
    m = re.fullmatch(r"features: tls=(yes|no) otlp=(yes|no) "
                     r"metrics=(yes|no) node-fork-server=(yes|no)", lines[1])
    check(m, f"the features line: {lines[1]!r}")
    if m:
        eq(m.group(3), "yes" if os.environ.get("RELAY_HAVE_METRICS") == "1"
           else "no", "metrics= as the build (RELAY_HAVE_METRICS)")


@case
def max_concurrent_invocations_alias():
    """MAX_CONCURRENT_INVOCATIONS=2 bounds handlers in flight as
    MAX_CONCURRENCY=2 does (an app of concurrency 8, 6 slow events)."""
    with Env() as env:
        env.app("slow", [("h", {"kind": ["x"]})], concurrency=8,
                env={"SLEEP": "0.4"})
        d = env.relayd(MAX_CONCURRENT_INVOCATIONS="2", LOG_LEVEL="INFO")
        for i in range(6):
            env.xadd({"kind": "x", "k": f"s{i}"})
        env.wait(lambda: env.count("end") >= 6, "six handled", timeout=60)
        eq(peak_overlap(spans(env, "slow")), 2, "the alias bounds handlers")
        check("RELAYD-CFG01" not in d.log(), "the alias is a known name")
        d.stop()
        rc, out, err = run_relayd(base(env, MAX_CONCURRENCY="4",
                                       MAX_CONCURRENT_INVOCATIONS="5"),
                                  ["--check"])
        eq(rc, 1, "disagreeing alias")
        check("MAX_CONCURRENT_INVOCATIONS" in err and "says 4" in err, err)
        rc, out, err = run_relayd(base(env, MAX_CONCURRENT_INVOCATIONS="0"),
                                  ["--check"])
        eq(rc, 1, "alias validated")
        check("MAX_CONCURRENT_INVOCATIONS" in err, err)


@case
def sigterm_during_start_up_is_graceful():
    """A SIGTERM that comes while relayd starts (right after the
    runtime's RELAY-RT01 line, before the loop runs) is a graceful stop:
    exit 0 and RELAYD03, not death by the signal's default action."""
    with Env() as env:
        env.app("a", rules=[("h1", {"kind": ["x"]})])
        vars = {k: v for k, v in os.environ.items()
                if k.startswith(("ASAN_", "UBSAN_", "LSAN_", "PATH",
                                 "RELAY_BOOTSTRAP_DIR"))}
        vars.update(base(env, LOG_LEVEL="INFO"))
        p = subprocess.Popen([RELAYD], env=vars, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        seen = []
        for line in p.stdout:
            seen.append(line)
            if "RELAY-RT01" in line:
                p.terminate()
                break
        rest, _ = p.communicate(timeout=120)
        log = "".join(seen) + rest
        check(any("RELAY-RT01" in x for x in seen), log)
        eq(p.returncode, 0, "exit status after SIGTERM at start-up")
        check("RELAYD03" in log, log)


@case
def metrics_startup_line_off():
    with Env() as env:
        env.app("a", rules=[("h1", {"kind": ["x"]})])
        d = env.relayd()
        check(re.search(r"RELAYD-MET01.*metrics: off", d.log()), d.log())
        d.stop()


def get(port, path):
    try:
        r = urllib.request.urlopen(f"http://127.0.0.1:{port}{path}",
                                   timeout=10)
        return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


@case
def healthz_readyz_and_colon_port():
    need_metrics()
    with Env() as env:
        env.app("a", rules=[("h1", {"kind": ["x"]})])
        port = free_port()
        d = env.relayd(METRICS_ADDR=f":{port}")
        check(re.search(rf"RELAYD-MET01.*on \*:{port} \(every interface\)",
                        d.log()), d.log())
        eq(get(port, "/healthz"), (200, "ok\n"), "/healthz")
        wait_for(lambda: get(port, "/readyz") == (200, "ready\n"),
                 "/readyz 200 once ready")
        # Redis gone: live, not ready, saying why.
        env.stop_redis()
        wait_for(lambda: get(port, "/readyz")[0] == 503, "/readyz 503")
        code, body = get(port, "/readyz")
        check(body.startswith("not ready: "), body)
        eq(get(port, "/healthz")[0], 200, "/healthz while not ready")
        eq(get(port, "/nothing")[0], 404, "unknown path")
        d.stop()


def names_help():
    rc, out, err = run_relayd({}, ["--help"])
    eq(rc, 0, "--help")
    return set(re.findall(r"^  ([A-Z][A-Z0-9_]+) ", out, re.M))


def names_configuration_md():
    text = open(os.path.join(ROOT, "doc", "configuration.md")).read()
    # C-2 (relayd's variables), C-4 (test hooks) and C-6 (read by the
    # library: relayd knows them too, and --help must list them; without
    # C-6 here, RELAY_WARM_NODE was missing from all three unnoticed):
    # first table column.
    names = set()
    for sec in ("## C-2.", "## C-4.", "## C-6."):
        part = text.split(sec, 1)[1].split("\n## ", 1)[0]
        names |= set(re.findall(r"^\| `([A-Z][A-Z0-9_]+)` \|", part, re.M))
    return names


def names_man():
    text = open(os.path.join(ROOT, "doc", "man", "relayd.8.scd")).read()
    part = text.split("# CONFIGURATION", 1)[1].split("\n# ", 1)[0]
    names = set()
    # A variable's entry starts a line with its name(s) alone:
    # "*NAME*", "*A*, *B* (required)".
    head = re.compile(r"^\*[A-Z][A-Z0-9_]*\*(, \*[A-Z][A-Z0-9_]*\*)*"
                      r"( \(.*\))?$")
    for line in part.splitlines():
        if head.match(line):
            names |= set(re.findall(r"\*([A-Z][A-Z0-9_]+)\*", line))
    return names


@case
def one_list_of_variables():
    h, c, m = names_help(), names_configuration_md(), names_man()
    check(len(h) > 20, f"--help lists the variables: {sorted(h)}")
    eq(sorted(c ^ h), [], "doc/configuration.md vs relayd --help")
    eq(sorted(m ^ h), [], "relayd(8) vs relayd --help")


if __name__ == "__main__":
    run_cases()
