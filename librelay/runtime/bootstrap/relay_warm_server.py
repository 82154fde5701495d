# relay_warm_server.py - the python3 warm fork server (run by
# "relay-bootstrap.py --serve" inside a sandbox relayd started for one app
# generation; see doc/sandbox.md, "Warm sandboxes").
#
# The interpreter, json and this module are loaded once. Each invocation is
# a fresh fork of this pristine process, so it sees no state left by an
# earlier one; the app's handler module is imported in the invocation, as a
# cold start does (import-time side effects run once per invocation and an
# edited handler is picked up at once).
#
# One invocation is three processes:
#   I  (fork of the server)  setsid, joins its cgroups (relayd moves it
#      before sending "go"), sets rlimits, new mount and pid namespaces,
#      a private tmpfs /tmp; waits for N and exits with its status
#   N  (pid 1 of the new pid namespace)  mounts a fresh /proc, reaps; when
#      H exits it exits with H's status (128+signal when killed), which
#      takes every leftover process of the invocation down with it
#   H  (pid 2)  drops every capability, restores the interpreter's start-up
#      signal dispositions, the clean environment and stdio, reseeds
#      random, then runs the handler exactly as a cold bootstrap would.
# relayd signals the process group of I (SIGTERM at the timeout reaches H;
# I and N outlive it) and SIGKILL ends all three.
#
# Control socket (fd 3, SOCK_SEQPACKET), fields NUL-separated:
#   relayd -> server  R id wait_go as_limit nproc_limit handler env... +
#                       3 fds (stdin, stdout, stderr of the invocation)
#                     G id           (the invocation joined its cgroups)
#   server -> relayd  Y              ready (a probe invocation worked)
#                     N reason       this sandbox cannot run invocations
#                     S id + pidfd   invocation process I forked
#                     X id status    I exited (raw wait status)
#                     E id reason    could not fork
import array
import ctypes
import os
import random
import resource
import select
import signal
import socket
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWPID = 0x20000000
MS_NOSUID, MS_NODEV, MS_NOEXEC = 2, 4, 8
MS_REC, MS_PRIVATE = 0x4000, 1 << 18
PR_SET_PDEATHSIG = 1
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
CAP_VERSION_3 = 0x20080522

libc = ctypes.CDLL(None, use_errno=True)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32),
                ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def _check(rc, what):
    if rc != 0:
        e = ctypes.get_errno()
        raise OSError(e, "%s: %s" % (what, os.strerror(e)))


def _status_code(st):
    if os.WIFEXITED(st):
        return os.WEXITSTATUS(st)
    if os.WIFSIGNALED(st):
        return 128 + os.WTERMSIG(st)
    return 255


class Server:
    def __init__(self, run):
        self.run = run
        self.pid = os.getpid()
        # bwrap sets PWD (over the app's env) for a cold start too.
        self.pwd = os.environ.get("PWD")
        self.sock = socket.socket(fileno=3)
        # What an interpreter has at start-up, restored in every handler.
        self.sigs = {}
        for s in signal.valid_signals():
            try:
                self.sigs[s] = signal.getsignal(s)
            except (OSError, ValueError):
                pass
        self.wake_r, self.wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.children = {}   # pid of I -> id
        self.go = {}         # id -> write end of I's go pipe
        self.bootstrap = os.path.join(
            os.path.dirname(os.path.abspath(__file__)), "relay-bootstrap.py")

    def send(self, fields, fds=()):
        data = b"\0".join(fields) + b"\0"
        anc = []
        if fds:
            anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                    array.array("i", fds))]
        self.sock.sendmsg([data], anc)

    # ---- in the invocation's processes ----------------------------

    def _leave_server(self, keep):
        """In I: drop what belongs to the server, keep fds in keep."""
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.close(self.sock.detach())
        os.close(self.wake_r)
        os.close(self.wake_w)
        for fd in self.go.values():
            os.close(fd)
        lo = 3
        for fd in sorted(keep) + [1 << 20]:
            if fd >= lo:
                os.closerange(lo, fd)
                lo = fd + 1

    def _handler(self, fds, handler, env):
        """H: become a clean one-shot handler process and run it."""
        hdr = _CapHeader(CAP_VERSION_3, 0)
        data = (_CapData * 2)()
        _check(libc.capset(ctypes.byref(hdr), data), "capset")
        libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
        for s, h in self.sigs.items():
            try:
                signal.signal(s, h if h is not None else signal.SIG_DFL)
            except (OSError, ValueError, TypeError):
                pass
        for i, fd in enumerate(fds):
            os.dup2(fd, i)
            os.close(fd)
        os.environ.clear()
        os.environ.update(env)
        if self.pwd is not None:
            os.environ["PWD"] = self.pwd
        sys.argv = [self.bootstrap, handler]
        sys.path[0] = os.getcwd()
        sys.modules.pop("relay_warm_server", None)
        random.seed()
        code = 1
        try:
            code = self.run(handler, sys.stdin.buffer.read())
            code = self._exit_funcs(code)
        except SystemExit as e:
            code = self._exit_funcs(self._system_exit(e))
        except BaseException:
            pass
        return code

    @staticmethod
    def _system_exit(e):
        c = e.code
        if c is None:
            return 0
        if isinstance(c, int):
            return c & 0xff
        print(c, file=sys.stderr)
        return 1

    @staticmethod
    def _exit_funcs(code):
        """What interpreter shutdown does before exiting: wait for
        non-daemon threads, run atexit functions, flush stdio."""
        try:
            t = sys.modules.get("threading")
            if t is not None:
                t._shutdown()
            import atexit
            atexit._run_exitfuncs()
        except SystemExit as e:
            code = Server._system_exit(e)
        except BaseException:
            pass
        for f in (sys.stdout, sys.stderr):
            try:
                f.flush()
            except BaseException:
                pass
        return code

    def _init(self, fds, handler, env):
        """N: pid 1 of the invocation's pid namespace."""
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        try:
            _check(libc.mount(b"proc", b"/proc", b"proc",
                              MS_NOSUID | MS_NODEV | MS_NOEXEC, None),
                   "mount /proc")
        except OSError as e:
            os.write(2, ("relay: warm invocation setup: %s\n" % e).encode())
            os._exit(255)
        h = os.fork()
        if h == 0:
            code = 1
            try:
                code = self._handler(fds, handler, env) if handler else 0
            finally:
                os._exit(code)
        for fd in fds:
            os.close(fd)
        while True:
            try:
                pid, st = os.waitpid(-1, 0)
            except ChildProcessError:
                os._exit(255)
            if pid == h:
                os._exit(_status_code(st))

    def _invocation(self, fds, go_r, limits, handler, env):
        """I: the invocation's own session, limits and namespaces."""
        self._leave_server(set(fds) | ({go_r} if go_r is not None else set()))
        os.setsid()
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != self.pid:
            os._exit(255)
        if go_r is not None:
            if os.read(go_r, 1) != b"g":
                os._exit(255)
            os.close(go_r)
        for res, val in limits:
            resource.setrlimit(res, (val, val))
        # I and N outlive a SIGTERM to the group: it is H's to handle.
        for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP,
                  signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2,
                  signal.SIGALRM, signal.SIGPIPE):
            signal.signal(s, signal.SIG_IGN)
        _check(libc.unshare(CLONE_NEWNS | CLONE_NEWPID), "unshare")
        _check(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None),
               "mount --make-rprivate /")
        _check(libc.mount(b"tmpfs", b"/tmp", b"tmpfs", MS_NOSUID | MS_NODEV,
                          b"mode=1777"), "mount /tmp")
        n = os.fork()
        if n == 0:
            try:
                self._init(fds, handler, env)
            finally:
                os._exit(255)
        for fd in fds:
            os.close(fd)
        while True:
            try:
                pid, st = os.waitpid(n, 0)
            except InterruptedError:
                continue
            os._exit(_status_code(st))

    # ---- in the server --------------------------------------------

    def fork(self, fds, wait_go, limits, handler, env):
        go_r = go_w = None
        if wait_go:
            go_r, go_w = os.pipe2(os.O_CLOEXEC)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            try:
                self._invocation(fds, go_r, limits, handler, env)
            except BaseException as e:
                try:
                    os.write(2, ("relay: warm invocation setup: %s\n"
                                 % e).encode())
                finally:
                    os._exit(255)
            os._exit(255)
        if go_r is not None:
            os.close(go_r)
        return pid, go_w

    def probe(self):
        """Run one empty invocation: can this sandbox make namespaces?"""
        null = [os.open("/dev/null", os.O_RDWR | os.O_CLOEXEC)
                for _ in range(3)]
        r, w = os.pipe2(os.O_CLOEXEC)
        null[2] = w
        pid, _ = self.fork(null, False, (), None, {})
        for fd in null:
            os.close(fd)
        _, st = os.waitpid(pid, 0)
        msg = os.read(r, 300).decode(errors="replace").strip()
        os.close(r)
        if _status_code(st) != 0:
            return msg or "probe invocation exited %d" % _status_code(st)
        return None

    def request(self, fields, fds):
        rid = fields[1]
        try:
            wait_go = fields[2] == b"1"
            limits = []
            if int(fields[3]):
                limits.append((resource.RLIMIT_AS, int(fields[3])))
            if int(fields[4]):
                limits.append((resource.RLIMIT_NPROC, int(fields[4])))
            handler = fields[5].decode()
            env = {}
            for kv in fields[6:]:
                k, _, v = kv.decode("utf-8", "surrogateescape").partition("=")
                env[k] = v
            if len(fds) != 3:
                raise ValueError("expected 3 descriptors, got %d" % len(fds))
            pid, go_w = self.fork(fds, wait_go, limits, handler, env)
        except Exception as e:
            for fd in fds:
                os.close(fd)
            self.send([b"E", rid, str(e).encode()])
            return
        for fd in fds:
            os.close(fd)
        self.children[pid] = rid
        if go_w is not None:
            self.go[rid] = go_w
        pidfd = os.pidfd_open(pid)
        try:
            self.send([b"S", rid], [pidfd])
        finally:
            os.close(pidfd)

    def go_ahead(self, rid):
        fd = self.go.pop(rid, None)
        if fd is not None:
            try:
                os.write(fd, b"g")
            finally:
                os.close(fd)

    def reap(self):
        try:
            while os.read(self.wake_r, 512):
                pass
        except BlockingIOError:
            pass
        while self.children:
            try:
                pid, st = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            rid = self.children.pop(pid, None)
            if rid is None:
                continue
            fd = self.go.pop(rid, None)
            if fd is not None:
                os.close(fd)
            self.send([b"X", rid, str(st).encode()])

    def serve(self):
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda s, f: None)
        why = self.probe()
        if why:
            self.send([b"N", why.encode()])
            return 0
        self.send([b"Y"])
        fdsize = socket.CMSG_SPACE(3 * array.array("i").itemsize)
        while True:
            try:
                ready, _, _ = select.select([self.sock, self.wake_r], [], [])
            except InterruptedError:
                continue
            if self.wake_r in ready:
                self.reap()
            if self.sock not in ready:
                continue
            msg, anc, _, _ = self.sock.recvmsg(1 << 20, fdsize)
            if not msg:
                return 0   # relayd closed the socket: retire
            fds = []
            for level, typ, data in anc:
                if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
                    a = array.array("i")
                    a.frombytes(data[:len(data) - len(data) % a.itemsize])
                    fds.extend(a)
            fields = msg.split(b"\0")
            if fields and fields[-1] == b"":
                fields.pop()
            if fields and fields[0] == b"R" and len(fields) >= 6:
                self.request(fields, fds)
            elif fields and fields[0] == b"G" and len(fields) == 2:
                self.go_ahead(fields[1])
            else:
                for fd in fds:
                    os.close(fd)


def serve(run):
    return Server(run).serve()
