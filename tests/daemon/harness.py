"""Black-box harness for relayd end-to-end tests (suite 'daemon').

Everything here talks to real processes: a throwaway redis-server on a
unix socket in a temp directory, the real relayd binary (built with
-Dtest_hooks=true so RELAY_TEST_TIME_SCALE works), and real handler
processes (a small sh script that records what it did into a file).

    with Env() as env:                  # temp dir, redis-server, cleanup
        env.app("a", rules=[("h1", {"kind": ["x"]})])
        d = env.relayd()                # starts, waits for health ready
        env.xadd({"kind": "x", "k": "e1"})
        wait_for(lambda: env.pel_count() == 0, "PEL drained")
        d.stop()                        # SIGTERM, expects exit 0

Every process started is killed and every directory removed at exit,
also when a test fails. TAP output via run_cases().
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request

RELAYD = os.environ.get("RELAYD") or (sys.argv[1] if len(sys.argv) > 1
                                      else "relayd")
REDIS_SERVER = os.environ.get("RELAY_REDIS_SERVER", "redis-server")
TIME_SCALE = 600  # 1m backoff / reclaim / MinPendingIdle -> 100 ms

# Generous deadlines: the suite must pass on a loaded 2-core machine
# with ASan builds. Waits poll; they never sleep their whole budget.
# RELAY_TEST_TIMEOUT_MULTIPLIER (tests/run.sh) scales every wait on a
# busy host, this default and a case's own bounds alike (wait_for).
TIME_MULT = float(os.environ.get("RELAY_TEST_TIMEOUT_MULTIPLIER", "1"))
DEADLINE = float(os.environ.get("RELAY_TEST_DEADLINE", "30")) * TIME_MULT


# The TAP runner and its helpers are tests/tap.py, shared with the CLI
# scripts (one set of rules: raise Skip to skip, RELAY_TEST_ONLY, ...).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                os.pardir))
from tap import CASES, Skip, case, check, eq, run_cases  # noqa: E402,F401


# ---- polling -------------------------------------------------------------

def wait_for(pred, what, timeout=None, interval=0.02):
    """Poll pred() until it returns a truthy value; return that value.
    A case's own @timeout is scaled like DEADLINE (None: DEADLINE, which
    is scaled already). A sentinel, not a comparison with DEADLINE: a
    case's own 60 s equals the default 30 s scaled by 2 and must be
    scaled all the same."""
    if timeout is None:
        timeout = DEADLINE
    else:
        timeout *= TIME_MULT
    end = time.monotonic() + timeout
    last_exc = None
    while True:
        try:
            v = pred()
            if v:
                return v
        except (OSError, RedisError) as e:  # not up yet
            last_exc = e
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {timeout}s waiting for "
                                 f"{what}" + (f" (last error: {last_exc})"
                                              if last_exc else ""))
        time.sleep(interval)
        interval = min(interval * 1.5, 0.2)




# ---- a tiny RESP2 client --------------------------------------------------

class RedisError(Exception):
    pass


class Redis:
    """Blocking RESP2 client over a unix socket; one command at a time."""

    def __init__(self, path, timeout=10):
        self.path = path
        self.timeout = timeout
        self.sock = None
        self.buf = b""

    def _connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.path)
        self.sock = s
        self.buf = b""

    def close(self):
        if self.sock:
            self.sock.close()
            self.sock = None

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise OSError("connection closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n):
        while len(self.buf) < n + 2:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise OSError("connection closed")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def _reply(self):
        line = self._line()
        t, rest = line[:1], line[1:]
        if t == b"+":
            return rest.decode()
        if t == b"-":
            return RedisError(rest.decode())
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n).decode(
                "utf-8", "surrogateescape")
        if t == b"*":
            n = int(rest)
            return None if n < 0 else [self._reply() for _ in range(n)]
        raise OSError(f"bad RESP type {line!r}")

    def __call__(self, *args):
        if self.sock is None:
            self._connect()
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            if not isinstance(a, bytes):
                a = str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        try:
            self.sock.sendall(b"".join(out))
            r = self._reply()
        except OSError:
            self.close()
            raise
        if isinstance(r, RedisError):
            raise r
        return r


def pairs(flat):
    """[k1, v1, k2, v2] -> {k1: v1, ...}"""
    return dict(zip(flat[0::2], flat[1::2])) if flat else {}


# ---- redis-server ---------------------------------------------------------

class RedisServer:
    def __init__(self, dirpath, port=0, password=None):
        self.dir = dirpath
        self.sock = os.path.join(dirpath, "redis.sock")
        self.uri = "unix://" + self.sock
        self.port = port          # also listen on 127.0.0.1:port if set
        self.password = password  # requirepass
        self.proc = None

    def start(self):
        if not shutil.which(REDIS_SERVER):
            raise Skip("redis-server not installed")
        args = [REDIS_SERVER, "--port", str(self.port), "--unixsocket",
                self.sock, "--unixsocketperm", "700", "--save", "",
                "--appendonly", "no", "--dir", self.dir, "--loglevel",
                "warning"]
        if self.port:
            args += ["--bind", "127.0.0.1"]
        if self.password:
            args += ["--requirepass", self.password]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        r = Redis(self.sock)

        def ping():
            if self.password:
                r("AUTH", self.password)
            return r("PING") == "PONG"
        wait_for(ping, "redis-server PING", timeout=20)
        r.close()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        try:
            os.unlink(self.sock)
        except FileNotFoundError:
            pass


# ---- relayd ---------------------------------------------------------------

class Relayd:
    def __init__(self, env, name, extra):
        self.env = env
        self.name = name
        self.run_dir = os.path.join(env.dir, f"run-{name}")
        self.state_dir = os.path.join(env.dir, f"state-{name}")
        self.log_path = os.path.join(env.dir, f"relayd-{name}.log")
        self.sock = os.path.join(self.run_dir, "relay.sock")
        self.vars = {
            "REDIS_URI": env.redis.uri,
            "REDIS_STREAM": env.stream,
            "REDIS_GROUP": env.group,
            "REDIS_CONSUMER": name,
            "RELAY_APPS_DIR": env.apps_dir,
            "RELAY_RUN_DIR": self.run_dir,
            "RELAY_STATE_DIR": self.state_dir,
            "RELAY_SANDBOX": "none",
            # A root relayd under bwrap refuses the shared nobody unless
            # told (doc/sandbox.md "Host user"); tests accept it.
            "RELAY_SANDBOX_USER": "nobody",
            "RELAY_TEST_TIME_SCALE": str(TIME_SCALE),
            "LOG_LEVEL": "DEBUG",
        }
        self.vars.update({k: v for k, v in extra.items() if v is not None})
        for k in [k for k, v in extra.items() if v is None]:
            self.vars.pop(k, None)
        self.run_dir = self.vars.get("RELAY_RUN_DIR", self.run_dir)
        self.state_dir = self.vars.get("RELAY_STATE_DIR", self.state_dir)
        self.sock = os.path.join(self.run_dir, "relay.sock")
        self.proc = None
        self.logf = None
        self.expect_running = False

    def assert_alive(self):
        if self.expect_running and self.proc.poll() is not None:
            raise AssertionError(
                f"relayd {self.name} died (status {self.proc.returncode}):"
                "\n" + self.crash_report())

    def start(self, wait_ready=True):
        env = {k: v for k, v in os.environ.items()
               if k.startswith(("ASAN_", "UBSAN_", "LSAN_", "PATH",
                                "RELAY_BOOTSTRAP_DIR"))}
        env.update(self.vars)
        self.logf = open(self.log_path, "ab")
        self.proc = subprocess.Popen([RELAYD], env=env,
                                     stdout=self.logf, stderr=self.logf)
        self.env.procs.append(self.proc)
        self.expect_running = True
        if wait_ready:
            self.wait_ready()
        return self

    def wait_ready(self, timeout=None):
        def ready():
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"relayd {self.name} exited {self.proc.returncode}:\n"
                    + self.crash_report())
            return self.control({"cmd": "health"}).get("ready")
        wait_for(ready, f"relayd {self.name} ready", timeout)

    def start_sandboxed(self):
        """start(), then wait until ready; a Skip, not a failure, when
        relayd exits 1 because bubblewrap cannot run here (its message
        "RELAY_SANDBOX=bwrap: the bubblewrap sandbox cannot run here",
        which no other error, RELAY_SANDBOX_UIDS's included, begins
        with). Returns self."""
        self.start(wait_ready=False)
        try:
            self.wait_ready()
        except AssertionError:
            if self.proc.poll() == 1 and "RELAY_SANDBOX=bwrap:" in self.log():
                raise Skip("bwrap unusable: " + self.log_tail(1))
            raise
        return self

    def control(self, req, timeout=30):
        """One request on the control socket; returns the reply."""
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        try:
            try:
                s.connect(self.sock)
            except OSError:
                if self.proc and self.proc.poll() is not None:
                    raise AssertionError(
                        f"relayd {self.name} died (status "
                        f"{self.proc.returncode}):\n" + self.crash_report())
                raise
            s.sendall(json.dumps(req).encode() + b"\n")
            buf = b""
            while b"\n" not in buf:
                chunk = s.recv(65536)
                if not chunk:
                    raise OSError("control socket closed")
                buf += chunk
            return json.loads(buf.split(b"\n", 1)[0])
        finally:
            s.close()

    def signal(self, sig):
        if sig in (signal.SIGTERM, signal.SIGINT, signal.SIGKILL):
            self.expect_running = False
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)

    def stop(self, expect=0, timeout=DEADLINE):
        """SIGTERM and wait; assert the exit status."""
        self.signal(signal.SIGTERM)
        rc = self.wait(timeout)
        eq(rc, expect, f"relayd {self.name} exit status\n" + self.log_tail())
        self.check_sanitizers()
        return rc

    def wait(self, timeout=DEADLINE):
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"relayd {self.name} did not exit in "
                                 f"{timeout}s\n" + self.log_tail())
        if self.logf:
            self.logf.close()
            self.logf = None
        return rc

    def kill9(self):
        self.expect_running = False
        self.proc.kill()
        self.proc.wait()
        if self.logf:
            self.logf.close()
            self.logf = None

    def log(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, n=40):
        return "\n".join(self.log().splitlines()[-n:])

    def crash_report(self):
        """The sanitizer report if there is one, else the log tail."""
        lines = self.log().splitlines()
        for i, ln in enumerate(lines):
            if "ERROR: AddressSanitizer" in ln or "runtime error:" in ln:
                return "\n".join(lines[i:i + 30])
        return self.log_tail()

    def check_sanitizers(self):
        text = self.log()
        for marker in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                       "runtime error:"):
            check(marker not in text,
                  f"relayd {self.name}: sanitizer report:\n"
                  + self.crash_report())

    def stats_file(self):
        with open(os.path.join(self.state_dir, "stats.json")) as f:
            return json.load(f)


# ---- the test environment ------------------------------------------------

HANDLER_SH = r"""#!/bin/sh
# Test handler: records start/end/fail lines into $OUT (one O_APPEND write
# each, so concurrent handlers never interleave within a line).
ev=$(cat)
k=${ev#*\"k\":\"}
k=${k%%\"*}
printf 'start %s %s %s %s\n' "$k" "$APP" "$RELAY_HANDLER" "$(date +%s%N)" >> "$OUT"
case "$ev" in *'"slow":true'*) sleep "${SLOW:-1}";; esac
if [ -n "${SLEEP:-}" ]; then sleep "$SLEEP"; fi
case " ${FAIL:-} " in
*" $RELAY_HANDLER "*)
	printf 'fail %s %s %s %s\n' "$k" "$APP" "$RELAY_HANDLER" "$(date +%s%N)" >> "$OUT"
	echo "failing on purpose" >&2
	exit 3;;
esac
printf 'end %s %s %s %s\n' "$k" "$APP" "$RELAY_HANDLER" "$(date +%s%N)" >> "$OUT"
echo "handled $k"
"""


def spans(env, app=None):
    """[(start_ns, end_ns)] of finished runs (of @app), from the records
    the test handlers write."""
    open_runs, out = {}, []
    for kind, key, a, h, ns in env.records():
        if app and a != app:
            continue
        if kind == "start":
            open_runs[(key, a, h)] = ns
        elif kind in ("end", "fail") and (key, a, h) in open_runs:
            out.append((open_runs.pop((key, a, h)), ns))
    return out


def peak_overlap(runs):
    """Largest number of runs (spans()) in progress at one instant."""
    edges = sorted([(s, 1) for s, _ in runs] + [(e, -1) for _, e in runs],
                   key=lambda x: (x[0], x[1]))
    cur = peak = 0
    for _, d in edges:
        cur += d
        peak = max(peak, cur)
    return peak


def yaml_value(v):
    return json.dumps(v)


class Env:
    """A temp dir with a redis-server, an apps dir and records; cleans up."""

    def __init__(self, stream="events", group="relay", port=0,
                 password=None):
        self.stream = stream
        self.group = group
        self.port = port
        self.password = password
        self.procs = []
        self.daemons = []

    prefix = "relayd-test."  # of the temp dir

    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix=self.prefix)
        self.apps_dir = os.path.join(self.dir, "apps")
        self.out = os.path.join(self.dir, "records")
        os.makedirs(self.apps_dir)
        open(self.out, "w").close()
        try:
            self.start_redis()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def start_redis(self):
        """The Redis the environment runs on: self.redis (relayd gets its
        .uri) and the client self.r. Overridden by the cluster tests."""
        self.redis = RedisServer(self.dir, self.port, self.password)
        self.redis.start()
        self.r = Redis(self.redis.sock)
        if self.password:
            self.r("AUTH", self.password)

    def stop_redis(self):
        if getattr(self, "redis", None):
            self.redis.stop()

    def __exit__(self, *exc):
        failed_check = None
        if exc[0] is None:
            # Every relayd of a passing case must be sanitizer-clean,
            # including those killed or never stopped by the case.
            for d in self.daemons:
                try:
                    d.check_sanitizers()
                except AssertionError as e:
                    failed_check = failed_check or e
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for d in self.daemons:
            if d.logf:
                d.logf.close()
        if getattr(self, "r", None):
            self.r.close()
        self.stop_redis()
        if os.environ.get("RELAY_TEST_KEEP"):
            sys.stderr.write(f"# kept {self.dir}\n")
        else:
            shutil.rmtree(self.dir, ignore_errors=True)
        if failed_check:
            raise failed_check
        return False

    # -- apps --
    def app(self, name, rules, env=None, concurrency=None, raw=None):
        """rules: [(handler, pattern dict[, extra dict])]."""
        d = os.path.join(self.apps_dir, name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "handler.sh"), "w") as f:
            f.write(HANDLER_SH)
        os.chmod(os.path.join(d, "handler.sh"), 0o755)
        if raw is not None:
            text = raw
        else:
            e = {"OUT": self.out, "APP": name}
            e.update(env or {})
            lines = ["runtime: exec", "command: [./handler.sh]"]
            if concurrency:
                lines.append(f"concurrency: {concurrency}")
            lines.append("env:")
            for k, v in e.items():
                lines.append(f"  {k}: {yaml_value(str(v))}")
            lines.append("events:")
            for rule in rules:
                h, pat = rule[0], rule[1]
                extra = rule[2] if len(rule) > 2 else {}
                lines.append(f"  - handler: {h}")
                lines.append(f"    pattern: {json.dumps(pat)}")
                for k, v in extra.items():
                    lines.append(f"    {k}: {v}")
            text = "\n".join(lines) + "\n"
        tmp = os.path.join(d, ".template.yaml.tmp")
        with open(tmp, "w") as f:
            f.write(text)
        os.rename(tmp, os.path.join(d, "template.yaml"))

    def relayd(self, name="r1", start=True, **vars):
        d = Relayd(self, name, vars)
        self.daemons.append(d)
        if start:
            d.start()
        return d

    def wait(self, pred, what, timeout=None):
        """wait_for(), failing at once if a running relayd died."""
        def checked():
            for d in self.daemons:
                d.assert_alive()
            return pred()
        return wait_for(checked, what, timeout)

    # -- the stream --
    def xadd(self, event=None, fields=None, stream=None):
        """event: a dict (JSON-encoded) or a raw string; fields: raw list."""
        if fields is None:
            fields = ["event", event if isinstance(event, str)
                      else json.dumps(event, separators=(",", ":"))]
        return self.r("XADD", stream or self.stream, "*", *fields)

    def pipe_conn(self, key):
        """The Redis connection serving @key, for pipelined writes."""
        return self.r

    def xadd_many(self, events, batch=200):
        ids = []
        s = self.pipe_conn(self.stream)
        for i in range(0, len(events), batch):
            chunk = events[i:i + batch]
            out = [b""]
            for ev in chunk:
                args = ["XADD", self.stream, "*", "event",
                        json.dumps(ev, separators=(",", ":"))]
                out.append(b"*%d\r\n" % len(args))
                for a in args:
                    a = a.encode()
                    out.append(b"$%d\r\n%s\r\n" % (len(a), a))
            if s.sock is None:
                s._connect()
            s.sock.sendall(b"".join(out))
            for _ in chunk:
                ids.append(s._reply())
        return ids

    def pel_count(self):
        try:
            return self.r("XPENDING", self.stream, self.group)[0]
        except RedisError as e:
            if "NOGROUP" in str(e):
                return 0
            raise

    def pel(self, consumer=None):
        args = ["XPENDING", self.stream, self.group, "-", "+", "100000"]
        if consumer:
            args.append(consumer)
        return [{"id": e[0], "consumer": e[1], "idle": e[2],
                 "deliveries": e[3]} for e in self.r(*args)]

    def group_info(self):
        for g in self.r("XINFO", "GROUPS", self.stream):
            g = pairs(g)
            if g["name"] == self.group:
                return g
        return None

    def all_delivered(self, n_added):
        """Every added entry was read by the group (last-delivered-id is
        the stream's last id) and nothing is pending."""
        g = self.group_info()
        if not g:
            return False
        info = pairs(self.r("XINFO", "STREAM", self.stream))
        return (g["last-delivered-id"] == info["last-generated-id"]
                and g["pending"] == 0)

    def dlq(self):
        out = []
        for eid, flat in self.r("XRANGE", f"relay:{self.stream}:dlq",
                                "-", "+"):
            e = pairs(flat)
            e["_id"] = eid
            out.append(e)
        return out

    def inv_key(self, msg_id):
        def enc(s):
            return s.replace("%", "%25").replace(":", "%3A")
        return (f"relay:invocation:{enc(self.stream)}:{enc(self.group)}:"
                f"{enc(msg_id)}")

    def inv(self, msg_id):
        return pairs(self.r("HGETALL", self.inv_key(msg_id)))

    # -- handler records --
    def records(self):
        """[(kind, key, app, handler, ns)] from the handler record file."""
        out = []
        with open(self.out) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 5:
                    out.append((parts[0], parts[1], parts[2], parts[3],
                                int(parts[4])))
        return out

    def count(self, kind, key=None, app=None, handler=None):
        return sum(1 for r in self.records()
                   if r[0] == kind and (key is None or r[1] == key)
                   and (app is None or r[2] == app)
                   and (handler is None or r[3] == handler))



# ---- local HTTP (METRICS_ADDR) --------------------------------------------

def have_metrics():
    """Whether relayd was built with GET /metrics (-Dmetrics)."""
    return os.environ.get("RELAY_HAVE_METRICS", "1") == "1"


def need_metrics():
    """Skip the case when relayd was built without GET /metrics."""
    if not have_metrics():
        raise Skip("relayd built without metrics support (-Dmetrics="
                   "disabled or no libmicrohttpd): no GET /metrics")


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def metrics_text(port):
    """The body of GET /metrics on 127.0.0.1:port."""
    return urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                  timeout=10).read().decode()


def metrics(port):
    """GET /metrics as {sample name with labels: value}."""
    out = {}
    for line in metrics_text(port).splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out
