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
# One invocation is two processes:
#   N  (fork of the server, pid 1 of a new pid namespace)  its own session;
#      joins its cgroups (relayd moves it, then sends "go"), sets rlimits,
#      a new mount namespace with a private tmpfs /tmp and a fresh /proc;
#      reaps, and when H exits it exits with H's status (128+signal when
#      killed), which takes every leftover process of the invocation down
#      with it
#   H  (pid 2)  drops every capability, restores the interpreter's start-up
#      signal dispositions, the clean environment and stdio, reseeds
#      random, then runs the handler exactly as a cold bootstrap would.
# relayd signals the process group of N (SIGTERM at the timeout reaches H;
# N, a pid 1, ignores it) and SIGKILL ends both. If the server dies, the
# sandbox's init exits and the kernel kills every invocation with it.
#
# Control socket (fd 3, SOCK_SEQPACKET), fields NUL-separated:
#   relayd -> server  R id wait_go as_limit nproc_limit handler env... +
#                       3 fds (stdin, stdout, stderr of the invocation)
#                     G id           (the invocation joined its cgroups)
#   server -> relayd  Y + pidfd      ready (a probe invocation worked;
#                                    the server's own pidfd, for its RSS)
#                     N reason       this sandbox cannot run invocations
#                     S id + pidfd   invocation process N forked
#                     X id status    N exited (raw wait status)
#                     E id reason    could not fork
import array
import ctypes
import gc
import os
import random
import resource
import select
import signal
import socket
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWPID = 0x20000000
CLONE_PIDFD = 0x00001000
SYS_CLONE3 = 435      # the same number on every architecture
MS_NOSUID, MS_NODEV, MS_NOEXEC = 2, 4, 8
MS_REC, MS_PRIVATE = 0x4000, 1 << 18
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
CAP_VERSION_3 = 0x20080522
# What N ignores (and H restores): a SIGTERM to the invocation's process
# group is H's to handle.
IGNORED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT,
           signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM, signal.SIGPIPE)

libc = ctypes.CDLL(None, use_errno=True)
# Calls through PyDLL keep the GIL held: clone3 must not race a release.
_raw = ctypes.PyDLL(None, use_errno=True)


class _CloneArgs(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in (
        "flags", "pidfd", "child_tid", "parent_tid", "exit_signal", "stack",
        "stack_size", "tls", "set_tid", "set_tid_size", "cgroup")]


def _clone3(flags, pidfd=None):
    """clone3(2) like fork(2) (SIGCHLD to the parent), with @flags; the
    child's pidfd goes to @pidfd (a c_int) with CLONE_PIDFD."""
    args = _CloneArgs()
    args.flags = flags
    args.exit_signal = signal.SIGCHLD
    if pidfd is not None:
        args.pidfd = ctypes.addressof(pidfd)
    return _raw.syscall(SYS_CLONE3, ctypes.byref(args),
                        ctypes.c_size_t(ctypes.sizeof(args)))


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


# Compiled app modules, kept by the server: the app directory is
# read-only, so a cold start compiles every handler module from source on
# every import. The server compiles them once (never executes them) and an
# invocation's import uses the cached code while the file's size and mtime
# are unchanged, as a bytecode cache would. Bounded.
CODE_CACHE_FILES = 512
CODE_CACHE_BYTES = 8 << 20


def _precompile(root):
    from importlib.machinery import SourceFileLoader
    cache, total = {}, 0
    for top, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for f in sorted(files):
            if not f.endswith(".py") or len(cache) >= CODE_CACHE_FILES:
                continue
            path = os.path.join(top, f)
            try:
                st = os.stat(path)
                if total + st.st_size > CODE_CACHE_BYTES:
                    continue
                with open(path, "rb") as fh:
                    src = fh.read()
                code = SourceFileLoader("_", path).source_to_code(src, path)
            except (OSError, SyntaxError, ValueError):
                continue    # the import in the invocation reports it
            total += st.st_size
            cache[path] = ((st.st_mtime_ns, st.st_size), code)
    return cache


def _use_code_cache(cache):
    """In H: app modules import through the cache (stdlib ones miss it)."""
    from importlib import machinery

    class CachedSourceLoader(machinery.SourceFileLoader):
        def get_code(self, fullname):
            ent = cache.get(self.path)
            if ent is not None:
                try:
                    st = os.stat(self.path)
                    if (st.st_mtime_ns, st.st_size) == ent[0]:
                        return ent[1]
                except OSError:
                    pass
            return super().get_code(fullname)

    details = [(machinery.ExtensionFileLoader,
                machinery.EXTENSION_SUFFIXES),
               (CachedSourceLoader, machinery.SOURCE_SUFFIXES),
               (machinery.SourcelessFileLoader, machinery.BYTECODE_SUFFIXES)]
    sys.path_hooks.insert(0, machinery.FileFinder.path_hook(*details))
    sys.path_importer_cache.clear()


def _status_code(st):
    if os.WIFEXITED(st):
        return os.WEXITSTATUS(st)
    if os.WIFSIGNALED(st):
        return 128 + os.WTERMSIG(st)
    return 255


class Server:
    def __init__(self, run, command=None):
        self.run = run
        self.command = command  # exec apps: the argv each invocation execs
        self.codecache = {}
        self.pid = os.getpid()
        # bwrap sets PWD (over the app's env) for a cold start too.
        self.pwd = os.environ.get("PWD")
        self.sock = socket.socket(fileno=3)
        # What an interpreter has at start-up, restored in every handler.
        self.sigs = {s: signal.getsignal(s)
                     for s in (signal.SIGCHLD,) + IGNORED}
        self.wake_r, self.wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        # Resolve the C functions once, not in every invocation.
        for name in ("capset", "prctl", "mount"):
            getattr(libc, name)
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
        # Only the server (SIGCHLD) and N (IGNORED) changed any.
        for s in (signal.SIGCHLD,) + IGNORED:
            h = self.sigs.get(s)
            signal.signal(s, h if h is not None else signal.SIG_DFL)
        for i, fd in enumerate(fds):
            os.dup2(fd, i)
            os.close(fd)
        gc.enable()          # N disabled it; a handler has it on
        os.environ.clear()
        os.environ.update(env)
        if self.pwd is not None:
            os.environ["PWD"] = self.pwd
        if self.command:
            return self._exec(self.command)
        sys.argv = [self.bootstrap, handler]
        sys.path[0] = os.getcwd()
        if self.codecache:
            _use_code_cache(self.codecache)
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
    def _exec(argv):
        """H of an exec app: the command, as bwrap would exec it: every
        signal at its default (the interpreter ignores SIGPIPE), no
        blocked ones, the handler's PATH."""
        for s in signal.valid_signals():
            if s in (signal.SIGKILL, signal.SIGSTOP):
                continue
            try:
                signal.signal(s, signal.SIG_DFL)
            except (OSError, ValueError):
                pass
        signal.pthread_sigmask(signal.SIG_SETMASK, ())
        try:
            os.execvpe(argv[0], argv, os.environ)
        except OSError as e:
            os.write(2, ("relay: exec %s: %s\n"
                         % (argv[0], e.strerror)).encode())
        return 127

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

    def _init(self, fds, go_r, limits, handler, env):
        """N: pid 1 of the invocation's own pid namespace."""
        self._leave_server(set(fds) | ({go_r} if go_r is not None else set()))
        gc.disable()
        os.setsid()
        if go_r is not None:
            if os.read(go_r, 1) != b"g":
                os._exit(255)
            os.close(go_r)
        for res, val in limits:
            resource.setrlimit(res, (val, val))
        # N outlives a SIGTERM to the group: it is H's to handle (a pid 1
        # ignores it anyway; H restores the start-up dispositions).
        for s in IGNORED:
            signal.signal(s, signal.SIG_IGN)
        _check(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None),
               "mount --make-rprivate /")
        _check(libc.mount(b"tmpfs", b"/tmp", b"tmpfs", MS_NOSUID | MS_NODEV,
                          b"mode=1777"), "mount /tmp")
        _check(libc.mount(b"proc", b"/proc", b"proc",
                          MS_NOSUID | MS_NODEV | MS_NOEXEC, None),
               "mount /proc")
        # os.fork() here would pay for before-fork work N does not need;
        # H gets the after-fork half, as from os.fork().
        h = _clone3(0)
        if h == 0:
            ctypes.pythonapi.PyOS_AfterFork_Child()
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
            except InterruptedError:
                continue
            if pid == h:
                os._exit(_status_code(st))

    # ---- in the server --------------------------------------------

    def fork(self, fds, wait_go, limits, handler, env):
        """Start N with clone3(): pid 1 of a new pid namespace, in a new
        mount namespace, and its pidfd. Returns (pid, pidfd, go_w)."""
        go_r = go_w = None
        if wait_go:
            go_r, go_w = os.pipe2(os.O_CLOEXEC)
        sys.stdout.flush()
        sys.stderr.flush()
        pidfd = ctypes.c_int(-1)
        # Like os.fork() without Python's after-fork hooks: N runs only
        # this module's code; H, its child, gets them.
        pid = _clone3(CLONE_NEWNS | CLONE_NEWPID | CLONE_PIDFD, pidfd)
        if pid == 0:
            try:
                self._init(fds, go_r, limits, handler, env)
            except BaseException as e:
                try:
                    os.write(2, ("relay: warm invocation setup: %s\n"
                                 % e).encode())
                finally:
                    os._exit(255)
            os._exit(255)
        if go_r is not None:
            os.close(go_r)
        if pid < 0:
            if go_w is not None:
                os.close(go_w)
            _check(-1, "clone3")
        return pid, pidfd.value, go_w

    def probe(self):
        """Run one empty invocation: can this sandbox make namespaces?"""
        null = [os.open("/dev/null", os.O_RDWR | os.O_CLOEXEC)
                for _ in range(3)]
        r, w = os.pipe2(os.O_CLOEXEC)
        null[2] = w
        pid, pidfd, _ = self.fork(null, False, (), None, {})
        os.close(pidfd)
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
            pid, pidfd, go_w = self.fork(fds, wait_go, limits, handler, env)
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
        self.codecache = {} if self.command else _precompile(os.getcwd())
        # Objects of the server are never freed: keep the collector from
        # touching (and so copying) their pages in every fork.
        gc.freeze()
        me = os.pidfd_open(os.getpid())
        self.send([b"Y"], [me])
        os.close(me)
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


def serve(run, command=None):
    """Serve invocations of python3 handlers (@run), or of the exec
    command @command (an argv list)."""
    return Server(run, command).serve()
