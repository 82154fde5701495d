#!/usr/bin/env python3
"""relayd under a service manager: the NOTIFY_SOCKET protocol (READY=1,
STATUS=, STOPPING=1), checked with a real unix datagram socket bound here;
log lines for the journal (JOURNAL_STREAM); and the members JSON log lines
of handler output carry (relayd(8) "LOGGING", doc/operations.md).

argv: relayd relayctl.
"""
import json
import os
import re
import signal
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import DEADLINE, Env, case, check, eq, run_cases  # noqa: E402


class Notify:
    """A bound AF_UNIX datagram socket standing in for the manager."""

    def __init__(self, path=None, abstract=None):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        if abstract:
            self.sock.bind("\0" + abstract)
            self.name = "@" + abstract
        else:
            self.sock.bind(path)
            self.name = path
        self.got = []   # [(monotonic time, {var: value})]

    def recv(self, timeout=DEADLINE):
        """The next datagram as {var: value}; fails after @timeout."""
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(4096)
        except socket.timeout:
            raise AssertionError(f"no notification in {timeout}s; got "
                                 f"{self.got}")
        text = data.decode()
        check(not text.endswith("\n") or "\n\n" not in text,
              f"one assignment per line: {text!r}")
        msg = {}
        for line in text.split("\n"):
            if not line:
                continue
            k, sep, v = line.partition("=")
            check(sep == "=" and re.fullmatch(r"[A-Z_]+", k),
                  f"an assignment: {line!r} in {text!r}")
            check(k not in msg, f"{k} twice in {text!r}")
            msg[k] = v
        self.got.append((time.monotonic(), msg))
        return msg

    def until(self, pred, what, timeout=DEADLINE):
        """Receive until @pred(msg) holds; that message."""
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{what}: not in {self.got}")
            msg = self.recv(left)
            if pred(msg):
                return msg

    def close(self):
        self.sock.close()


@case
def notify_ready_status_and_stopping():
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]}, {"timeout": "30s"})],
                env={"SLOW": "3"})
        n = Notify(path=os.path.join(env.dir, "notify.sock"))
        d = env.relayd(start=False, NOTIFY_SOCKET=n.name)
        d.start(wait_ready=False)
        msg = n.until(lambda m: "READY" in m, "READY=1")
        eq(msg["READY"], "1", "READY=1")
        # READY=1 only once relayd is ready (its group exists, it reads);
        # before it, at most STATUS=starting.
        eq(d.control({"cmd": "health"})["ready"], True, "ready at READY=1")
        for _, m in n.got[:-1]:
            eq(m, {"STATUS": "starting"}, "before READY=1")
        eq(msg.get("STATUS"), "running: 1 app, 0 in flight", "status")
        # STATUS= follows what runs.
        env.xadd({"kind": "x", "k": "s1", "slow": True})
        n.until(lambda m: m.get("STATUS") == "running: 1 app, 1 in flight",
                "a running handler in STATUS")
        d.signal(signal.SIGTERM)
        msg = n.until(lambda m: "STOPPING" in m, "STOPPING=1")
        eq(msg["STOPPING"], "1", "STOPPING=1")
        eq(msg.get("STATUS"), "stopping: letting 1 running handler finish",
           "status while draining")
        eq(d.wait(), 0, "exit status")
        eq(env.count("end", "s1"), 1, "the running handler finished")
        eq(sum(1 for _, m in n.got if "READY" in m), 1, "READY=1 once")
        n.close()


@case
def notify_abstract_socket():
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]})])
        n = Notify(abstract=f"relay-test-notify-{os.getpid()}")
        d = env.relayd(start=False, NOTIFY_SOCKET=n.name)
        d.start(wait_ready=False)
        n.until(lambda m: m.get("READY") == "1",
                "READY=1 on an abstract socket")
        d.stop()
        n.until(lambda m: m.get("STOPPING") == "1", "STOPPING=1")
        n.close()


@case
def notify_socket_unusable_is_a_warning():
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]})])
        d = env.relayd(NOTIFY_SOCKET="relative/notify.sock")
        check("RELAYD-NOTIFY01" in d.log(), "warned about NOTIFY_SOCKET")
        d.stop()
        # A socket that went away: one warning, relayd runs on.
        with Env() as env2:
            env2.app("a", [("h", {"kind": ["x"]})])
            d2 = env2.relayd(NOTIFY_SOCKET=os.path.join(env2.dir, "gone"))
            env2.wait(lambda: "RELAYD-NOTIFY02" in d2.log(),
                      "warned about the failed send")
            env2.xadd({"kind": "x", "k": "g1"})
            env2.wait(lambda: env2.count("end", "g1") == 1, "still runs")
            d2.stop()
            eq(d2.log().count("RELAYD-NOTIFY02"), 1, "warned once")


def journal_relayd(env, journal_stream=True, **vars):
    """A relayd whose stderr file JOURNAL_STREAM names (as systemd sets
    it for a journal stream), or names wrongly."""
    d = env.relayd(start=False, **vars)
    open(d.log_path, "ab").close()
    st = os.stat(d.log_path)
    d.vars["JOURNAL_STREAM"] = (f"{st.st_dev}:{st.st_ino}" if journal_stream
                                else f"{st.st_dev}:{st.st_ino + 1}")
    return d.start()


PRIORITY = {"<3>": "ERROR", "<4>": "WARN", "<6>": "INFO", "<7>": "DEBUG"}
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z ")


@case
def journal_lines_carry_priorities():
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]}, {"retries": 0}),
                      ("bad", {"kind": ["x"]}, {"retries": 0})],
                env={"FAIL": "bad"})
        d = journal_relayd(env)
        mid = env.xadd({"kind": "x", "k": "<3>j1"})
        env.wait(lambda: env.count("end", "<3>j1") == 1 and
                 env.count("fail", "<3>j1") == 1 and
                 "handler failed" in d.log(), "both handlers ran")
        d.stop()
        seen = set()
        for line in d.log().splitlines():
            check(not TIMESTAMP.match(line), f"no own timestamp: {line}")
            prio = line[:3]
            check(prio in PRIORITY, f"a priority prefix: {line!r}")
            if line[3:4] == "[":
                eq(prio, "<6>", f"handler output at info: {line}")
                seen.add("output")
                continue
            eq(line[3:].split(" ", 1)[0], PRIORITY[prio],
               f"the prefix matches the level: {line}")
            seen.add(PRIORITY[prio])
        eq(seen >= {"INFO", "WARN", "DEBUG", "output"}, True,
           f"lines of each kind: {seen}")
        check(f"<6>[a/h@{mid}] stdout: handled <3>j1\n" in d.log(),
              "the handler's own <3> stays text")
        check(f"<6>[a/bad@{mid}] stderr: failing on purpose\n" in d.log(),
              "stderr output")


@case
def journal_stream_of_another_file_changes_nothing():
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]})])
        d = journal_relayd(env, journal_stream=False)
        d.stop()
        lines = d.log().splitlines()
        check(lines, "logged")
        for line in lines:
            check(TIMESTAMP.match(line), f"timestamped as usual: {line}")


@case
def json_output_lines_name_app_handler_message_and_stream():
    with Env() as env:
        env.app("a", [("h", {"kind": ["x"]}, {"retries": 0}),
                      ("bad", {"kind": ["x"]}, {"retries": 0})],
                env={"FAIL": "bad"})
        # Under the journal too: JSON lines get no prefix.
        d = journal_relayd(env, LOG_FORMAT="json")
        mid = env.xadd({"kind": "x", "k": "o1"})
        env.wait(lambda: env.count("end", "o1") == 1 and
                 "failing on purpose" in d.log(), "both handlers ran")
        d.stop()
        outs = {}
        for line in d.log().splitlines():
            obj = json.loads(line)
            if "output" in obj:
                outs[obj["output"]] = obj
        eq(sorted(outs), ["stderr", "stdout"], "both output streams")
        eq({k: outs["stdout"].get(k) for k in
            ("app", "handler", "message_id", "stream", "msg")},
           {"app": "a", "handler": "h", "message_id": mid,
            "stream": env.stream,
            "msg": f"[a/h@{mid}] stdout: handled o1"}, "stdout line")
        eq({k: outs["stderr"].get(k) for k in
            ("app", "handler", "message_id", "stream")},
           {"app": "a", "handler": "bad", "message_id": mid,
            "stream": env.stream}, "stderr line")


sys.exit(run_cases())
