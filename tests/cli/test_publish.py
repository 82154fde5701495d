#!/usr/bin/env python3
"""relayctl publish (doc/cli.md L-10) against a real redis-server and,
for --wait, a real relayd: the entry it XADDs (fields "event" and
"traceparent", as relayd reads them), the events it refuses (exit 2,
nothing written), --explain (match --explain's lines), partitions
(--key), and --wait's outcomes and exit codes (0 succeeded, 1
dead-lettered naming the DLQ entry, 3 timed out).

usage: test_publish.py RELAYD RELAYCTL
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                os.pardir, "daemon"))
from harness import Env, case, check, run_cases  # noqa: E402
from harness import eq as tap_eq  # noqa: E402

RELAYCTL = os.environ.get("RELAYCTL") or (sys.argv[2] if len(sys.argv) > 2
                                          else "relayctl")


def eq(got, want, what="value"):
    tap_eq(got, want, what)


TP = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def ctl(env, *args, input=None, extra=None):
    """relayctl with @env's Redis, stream, group and apps; (rc, out, err)."""
    e = {k: v for k, v in os.environ.items()
         if k.startswith(("ASAN_", "UBSAN_", "LSAN_", "PATH"))}
    e.update({"REDIS_URI": env.redis.uri, "REDIS_STREAM": env.stream,
              "REDIS_GROUP": env.group, "RELAY_APPS_DIR": env.apps_dir,
              "RELAYCTL_DEFAULTS_FILE": "/nonexistent/relay-defaults"})
    e.update(extra or {})
    p = subprocess.run([RELAYCTL, "publish", *args], env=e, input=input,
                       capture_output=True, text=True, errors="replace",
                       timeout=120)
    check("Sanitizer" not in p.stderr and "runtime error" not in p.stderr,
          f"relayctl publish {args}: sanitizer report:\n{p.stderr}")
    return p.returncode, p.stdout, p.stderr


def entries(env, stream=None):
    return [(i, f) for i, f in env.r("XRANGE", stream or env.stream,
                                     "-", "+")]


@case
def publish_prints_the_id_and_writes_the_event_field():
    with Env() as env:
        ev = '{"kind":"x","k":"p1","n":[1,2]}'
        rc, out, err = ctl(env, ev)
        eq(rc, 0, err)
        eid = out.strip()
        eq(entries(env), [(eid, ["event", ev])])
        # stdin, --file, and --traceparent as relayd's trace field
        rc, out2, err = ctl(env, "-", input='{"k":"p2"}')
        eq(rc, 0, err)
        path = os.path.join(env.dir, "ev.json")
        with open(path, "w") as f:
            f.write('{"k":"p3"}\n')
        rc, out3, err = ctl(env, "--file", path, "--traceparent", TP)
        eq(rc, 0, err)
        got = entries(env)
        eq(got[1], (out2.strip(), ["event", '{"k":"p2"}']))
        eq(got[2], (out3.strip(), ["event", '{"k":"p3"}\n',
                                   "traceparent", TP]))


@case
def events_relayd_would_dead_letter_are_refused():
    with Env() as env:
        big = os.path.join(env.dir, "big.json")
        with open(big, "w") as f:
            f.write('{"a":"' + "x" * (256 * 1024) + '"}')
        nul = os.path.join(env.dir, "nul.json")
        with open(nul, "wb") as f:
            f.write(b'{"a":"\x00"}')
        for args, extra, want in [
                (['{"a":'], None, "invalid JSON"),
                (["not json"], None, "invalid JSON"),
                (["[1,2]"], None, "not a JSON object"),
                (['"s"'], None, "not a JSON object"),
                (["--file", big], None, "more than MAX_EVENT_BYTES "
                 "(262144 bytes)"),
                (['{"a":"0123456789"}'], {"MAX_EVENT_BYTES": "16B"},
                 "more than MAX_EVENT_BYTES (16 bytes)"),
                (["--file", nul], None, "NUL byte"),
                (["--traceparent", "00-zz", "{}"], None,
                 "not a W3C traceparent"),
                (["{}"], {"MAX_EVENT_BYTES": "2MiB"}, "at most 1MiB"),
                ([], None, "no event")]:
            rc, out, err = ctl(env, *args, extra=extra)
            eq(rc, 2, f"{args}: {err}")
            check(want in err, f"{args}: wanted {want!r} in {err!r}")
            eq(out, "", f"{args}")
        eq(env.r("EXISTS", env.stream), 0, "nothing was XADDed")
        # exactly at the limit is accepted, as by relayd
        ev = '{"a":"012345678901"}'
        rc, out, err = ctl(env, ev,
                           extra={"MAX_EVENT_BYTES": str(len(ev))})
        eq(rc, 0, err)


@case
def explain_prints_match_explain_first():
    with Env() as env:
        env.app("a", rules=[("h1", {"kind": ["x"]}),
                            ("h2", {"kind": ["y"]})])
        ev = '{"kind":"x","k":"e1"}'
        path = os.path.join(env.dir, "ev.json")
        with open(path, "w") as f:
            f.write(ev)
        m = subprocess.run([RELAYCTL, "match", "--apps", env.apps_dir,
                            "--explain", path], capture_output=True,
                           text=True)
        eq(m.returncode, 0, m.stderr)
        check("a/h2: no match" in m.stdout, m.stdout)
        rc, out, err = ctl(env, "--explain", ev)
        eq(rc, 0, err)
        lines = out.splitlines()
        eq("\n".join(lines[:-1]) + "\n", m.stdout)
        eq(entries(env), [(lines[-1], ["event", ev])])
        # no rule matches: said so, still published
        rc, out, err = ctl(env, "--explain", '{"kind":"z"}')
        eq(rc, 0, err)
        check("no rule matches" in out, out)
        eq(len(entries(env)), 2)


@case
def partitions_need_a_key():
    with Env(stream="orders{0..3}") as env:
        rc, out, err = ctl(env, '{"order":"order-42"}')
        eq(rc, 2, err)
        check("names 4 streams" in err and "--key KEY" in err, err)
        for i in range(4):
            eq(env.r("EXISTS", f"orders:{{p{i}}}"), 0)
        # FNV-1a-32("order-42") mod 4 = 0 (doc/configuration.md C-8)
        rc, out, err = ctl(env, "--key", "order-42", '{"order":"order-42"}')
        eq(rc, 0, err)
        eq([i for i, _ in entries(env, "orders:{p0}")], [out.strip()])
        # --stream names one partition directly
        rc, out, err = ctl(env, "--stream", "orders:{p2}", '{"o":1}')
        eq(rc, 0, err)
        eq([i for i, _ in entries(env, "orders:{p2}")], [out.strip()])


@case
def wait_succeeded_exits_0():
    with Env() as env:
        env.app("a", rules=[("h1", {"kind": ["x"]})])
        env.app("b", rules=[("h2", {"kind": ["x"]})])
        env.relayd()
        rc, out, err = ctl(env, "--wait", '{"kind":"x","k":"w1"}')
        eq(rc, 0, err)
        lines = out.splitlines()
        eq(lines[1:], ["a/h1: succeeded", "b/h2: succeeded"])
        eq(env.pel_count(), 0)
        # an event no rule matches is terminal once acknowledged
        rc, out, err = ctl(env, "--wait", '{"kind":"none"}')
        eq(rc, 0, err)
        eq(out.splitlines()[1:],
           ["no rule matched: acknowledged without running anything"])


@case
def wait_dead_lettered_exits_1_and_names_the_dlq_entry():
    with Env() as env:
        env.app("a", rules=[("h1", {"kind": ["x"]}, {"retries": 0})],
                env={"FAIL": "h1"})
        env.app("b", rules=[("h2", {"kind": ["x"]})])
        env.relayd()
        rc, out, err = ctl(env, "--wait", '{"kind":"x","k":"f1"}')
        eq(rc, 1, err)
        lines = out.splitlines()
        eid = lines[0]
        dlq = env.dlq()
        eq(len(dlq), 1)
        eq(dlq[0]["original_id"], eid)
        eq(lines[1:], [f"a/h1: dead-lettered after 1 attempt: DLQ entry "
                       f"{dlq[0]['_id']} (relayctl dlq inspect "
                       f"{dlq[0]['_id']})", "b/h2: succeeded"])


@case
def wait_times_out_with_exit_3():
    with Env() as env:
        env.app("a", rules=[("h1", {"kind": ["x"]})])
        rc, out, err = ctl(env, "--wait", "--timeout", "300ms",
                           '{"kind":"x"}')
        eq(rc, 3, err)
        check("not acknowledged after 300 ms" in err, err)
        eq(out.splitlines()[1:], ["no invocation has started yet"])
        eq(len(entries(env)), 1)
        # --wait needs the group; a bad --timeout is a usage error
        rc, out, err = ctl(env, "--wait", "{}", extra={"REDIS_GROUP": ""})
        eq(rc, 2, err)
        rc, out, err = ctl(env, "--wait", "--timeout", "soon", "{}")
        eq(rc, 2, err)
        eq(len(entries(env)), 1)


if __name__ == "__main__":
    sys.exit(run_cases())
