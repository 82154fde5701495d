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
# Invocations run in slots. A slot is a process N, forked from the server
# (so as pristine as it) as pid 1 of its own pid namespace and mount
# namespace, with a private tmpfs /tmp, its own /dev and a fresh /proc. It
# runs one invocation at a time; the server keeps one slot free, so there
# are as many slots as the most invocations the app had in flight, plus
# one, for the life of the server:
#   H  (forked by N ahead of its request, pid 2 of the namespace, in its
#      own IPC namespace and session) drops every capability and waits
#      for its request; then it waits until relayd has moved it into the
#      invocation's cgroups ("go"), sets the rlimits, takes the clean
#      environment and stdio (the interpreter's start-up signal
#      dispositions it has from N), reseeds random, then runs the handler
#      exactly as a cold bootstrap would.
#   When H exits, N kills and reaps every process left in the namespace
#   (kill(-1) from a pid 1), reports H's status, and, if the invocation
#   changed /tmp or /dev, mounts fresh ones again before the next.
# So an invocation never pays for making and tearing down namespaces, and
# still sees nothing an earlier one left: not a process, a file, an IPC
# object, or a byte of its memory (H is a fork of N, which never runs
# handler code).
# N sets itself up here, then runs its loop in C (warm_slot.c, loaded from
# /run/relay-warm-slot.so): the loop and H's steps up to the request in
# Python copied pages in every fork and cost a third of an invocation's
# CPU. H comes back to Python (_invocation) with its capabilities
# dropped and takes its request from there.
# relayd signals H's process group (SIGTERM at the timeout, then SIGKILL);
# N is not in it (and, as a pid 1, no signal it has no handler for reaches
# it from inside its namespace). If the server dies, the sandbox's init
# exits and the kernel kills every slot and invocation with it.
#
# The protocol (the control socket to relayd, the messages between a slot
# and the server, struct relay_warm_slot) is specified once, with its
# version, in sandbox/warm_proto.h (installed programs: the header of the
# source tree they were built from). WARM_PROTO_VERSION below is that
# version; a slot loop of another one is refused (N), so the app's
# invocations run cold instead of misreading each other.
import array
import ctypes
import gc
import json
import os
import random
import select
import signal
import socket
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWPID = 0x20000000
SYS_CLONE3 = 435      # the same number on every architecture
MS_NOSUID, MS_NODEV, MS_NOEXEC = 2, 4, 8
MS_REC, MS_PRIVATE = 0x4000, 1 << 18
# Writable in the sandbox, so private to each slot and emptied after an
# invocation that changed them. /dev (and /dev/shm in it) the slot loop
# rebuilds as bwrap made it (warm_fresh.h).
SCRATCH = ("/tmp",)
# Slots of one server at most (relayd keeps an app's invocations in
# flight to its concurrency; the server keeps one slot more free).
MAX_SLOTS = 256
MAX_SETUP_FAILURES = 3
# The dispositions N sets back to the interpreter's start-up ones (the
# server handles SIGCHLD), so that every H has them as a cold start does.
RESTORED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT,
           signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM, signal.SIGPIPE)

libc = ctypes.CDLL(None, use_errno=True)
# Calls through PyDLL keep the GIL held: clone3 must not race a release.
_raw = ctypes.PyDLL(None, use_errno=True)


class _CloneArgs(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in (
        "flags", "pidfd", "child_tid", "parent_tid", "exit_signal", "stack",
        "stack_size", "tls", "set_tid", "set_tid_size", "cgroup")]


def _clone3(flags):
    """clone3(2) like fork(2) (SIGCHLD to the parent), with @flags."""
    args = _CloneArgs()
    args.flags = flags
    args.exit_signal = signal.SIGCHLD
    return _raw.syscall(SYS_CLONE3, ctypes.byref(args),
                        ctypes.c_size_t(ctypes.sizeof(args)))


# The slot loop (warm_slot.c), bound into the sandbox by relayd.
SLOT_LIB = "/run/relay-warm-slot.so"
# RELAY_WARM_PROTO_VERSION of warm_proto.h, which this file follows.
WARM_PROTO_VERSION = 2


class ProtocolMismatch(OSError):
    """The slot loop speaks another warm protocol than this server."""


class _SlotArgs(ctypes.Structure):
    """struct relay_warm_slot of warm_proto.h (its version:
    WARM_PROTO_VERSION)."""
    _fields_ = [("ctl_fd", ctypes.c_int), ("srv_fd", ctypes.c_int),
                ("nscratch", ctypes.c_int),
                ("scratch", ctypes.c_char_p * 2),
                ("scratch_mode", ctypes.c_int * 2)]


def _load_slot_lib(path):
    # PyDLL: the GIL stays held through the call, which never returns
    # in N and returns in each H it forks.
    lib = ctypes.PyDLL(path, use_errno=True)
    lib.relay_warm_slot_run.argtypes = [ctypes.POINTER(_SlotArgs)]
    lib.relay_warm_slot_run.restype = ctypes.c_int
    lib.relay_warm_slot_request.argtypes = [
        ctypes.POINTER(ctypes.POINTER(ctypes.c_char))]
    lib.relay_warm_slot_request.restype = ctypes.c_long
    check_proto(lib)
    return lib


def check_proto(lib):
    """Refuse (ProtocolMismatch) a slot library @lib that does not speak
    WARM_PROTO_VERSION or whose struct relay_warm_slot is not _SlotArgs."""
    try:
        version = lib.relay_warm_slot_proto_version
        size = lib.relay_warm_slot_args_size
    except AttributeError:
        raise ProtocolMismatch("the slot loop states no warm protocol "
                               "version (this server speaks %d)"
                               % WARM_PROTO_VERSION) from None
    version.argtypes = []
    version.restype = ctypes.c_int
    size.argtypes = []
    size.restype = ctypes.c_size_t
    v = version()
    if v != WARM_PROTO_VERSION:
        raise ProtocolMismatch("the slot loop speaks warm protocol version "
                               "%d, this server %d" % (v, WARM_PROTO_VERSION))
    n = size()
    if n != ctypes.sizeof(_SlotArgs):
        raise ProtocolMismatch("the slot loop's argument block has %d "
                               "bytes, this server's %d"
                               % (n, ctypes.sizeof(_SlotArgs)))


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


def _after_fork_child():
    """In H, forked by a raw clone3() from inside N's slot loop (N is
    single-threaded and forks outside any Python code): what Python's own
    after-fork work (PyOS_AfterFork_Child) changes there. Its locks and
    thread states need no repair without other threads; what remains is
    its at-fork hooks of the modules a server may load: random's reseed
    (this process's own sequence, not the parent's) and, when a site
    hook imported threading, its main thread's native id (now this
    process's). The full call made 6 % fewer invocations per second at
    concurrency 8 (doc/perf/warm.md), and about 140 page faults more
    per invocation where threading is loaded: its locks made anew."""
    random.seed()
    t = sys.modules.get("threading")
    if t is not None:
        t.main_thread()._set_native_id()


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
        # bwrap sets PWD (over the app's env) for a cold start too.
        self.pwd = os.environ.get("PWD")
        # The parent's environment ("K=V", PWD aside): an invocation's
        # differs only by its per-invocation variables (_set_env).
        self.env_base = frozenset(k + b"=" + v for k, v in os.environb.items()
                                  if k != b"PWD")
        self.env_base_keys = frozenset(kv.partition(b"=")[0]
                                       for kv in self.env_base)
        self.sock = socket.socket(fileno=3)
        # What an interpreter has at start-up, restored in every handler.
        self.sigs = {s: signal.getsignal(s)
                     for s in (signal.SIGCHLD,) + RESTORED}
        self.wake_r, self.wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.scratch_mode = {}
        self.slots = {}      # pid of N -> Slot
        self.by_sock = {}    # fd of the server's end -> Slot (alive)
        self.idle = 0        # slots waiting for a request
        self.starting = 0    # slots not set up yet
        self.failed = 0      # slots in a row that could not set up
        self.poller = select.poll()  # relayd's socket, wake_r, slots
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
        """In N: drop what belongs to the server but the control socket
        (N reports on it), keep fds in @keep."""
        signal.set_wakeup_fd(-1)
        keep = set(keep) | {self.sock.fileno()}
        os.close(self.wake_r)
        os.close(self.wake_w)
        lo = 3
        for fd in sorted(keep) + [1 << 20]:
            if fd >= lo:
                os.closerange(lo, fd)
                lo = fd + 1

    def _handler(self, handler, env_raw):
        """H, given its request (its stdio in place): become a clean
        one-shot handler process and run it. What is alike for every
        invocation N did once (_prepare_slot), and the slot loop did
        before the request came (warm_slot.c)."""
        self._set_env(env_raw)
        gc.enable()          # N disabled it; a handler has it on
        if self.command:
            return self._exec(self.command)
        sys.argv = [self.bootstrap, handler]
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

    def _slot(self, ssock):
        """N: pid 1 of a slot's own pid and mount namespaces. Sets the
        slot up, then runs its loop in C (warm_slot.c): one invocation at
        a time, each in a fresh fork H of this pristine process, cleaned
        up after. Returns only in an H, which runs its invocation and
        exits."""
        self._leave_server({ssock.fileno()})
        gc.disable()
        os.setsid()
        try:
            _check(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None),
                   "mount --make-rprivate /")
            for d in SCRATCH:
                self._mount_scratch(d)
            _check(libc.mount(b"proc", b"/proc", b"proc",
                              MS_NOSUID | MS_NODEV | MS_NOEXEC, None),
                   "mount /proc")
            self._prepare_slot()
        except OSError as e:
            ssock.sendmsg([b"F\0" + str(e).encode() + b"\0"])
            os._exit(255)
        args = _SlotArgs()
        args.ctl_fd = self.sock.fileno()
        args.srv_fd = ssock.fileno()
        args.nscratch = len(SCRATCH)
        for i, d in enumerate(SCRATCH):
            args.scratch[i] = d.encode()
            args.scratch_mode[i] = self.scratch_mode.get(d, -1)
        sys.stdout.flush()
        sys.stderr.flush()
        self.slotlib.relay_warm_slot_run(ctypes.byref(args))
        self._invocation(ssock)

    def _invocation(self, ssock):
        """H, back from the slot loop with its capabilities dropped, in
        its own session, with no descriptor of N's but the socket its
        request comes on: wait for the request and run it. Never
        returns."""
        code = 1
        try:
            _after_fork_child()
            # The slot loop closed them in H: forget them.
            self.sock.detach()
            ssock.detach()
            # The pages every call touches copied now, not after the
            # event came: nothing here runs app code.
            json.loads(b'{"a": [1, "b"]}')
            msg = ctypes.POINTER(ctypes.c_char)()
            n = self.slotlib.relay_warm_slot_request(ctypes.byref(msg))
            f = _fields(ctypes.string_at(msg, n))
            code = self._handler(f[5].decode(), f[6:])
        finally:
            os._exit(code)

    def _prepare_slot(self):
        """In N, once: what every H would otherwise do alike. N runs no
        handler code, so H still starts from a pristine copy."""
        # N is not in H's process group: relayd never signals it, and
        # H inherits the interpreter's start-up dispositions.
        for s in (signal.SIGCHLD,) + RESTORED:
            h = self.sigs.get(s)
            signal.signal(s, h if h is not None else signal.SIG_DFL)
        if self.command:
            return
        sys.path[0] = os.getcwd()
        if self.codecache:
            _use_code_cache(self.codecache)
        # The path finders' directory listings, made once (they are
        # checked against each directory's mtime on use).
        from importlib.machinery import PathFinder
        PathFinder.find_spec("relay-warm-no-such-module")
        sys.modules.pop("relay_warm_server", None)

    def _set_env(self, raw):
        """The handler's clean environment from the request's "K=V"
        fields @raw (bwrap sets PWD over the app's env for a cold start
        too). H starts with the parent's, which is the app's without the
        per-invocation variables: when the request is exactly the
        parent's variables plus new ones (each field once, no new name
        the parent has), only those are set; else the whole environment
        is replaced."""
        if self.pwd is not None:
            raw = [kv for kv in raw if not kv.startswith(b"PWD=")]
        new = [kv for kv in raw if kv not in self.env_base]
        names = [kv.partition(b"=")[0] for kv in new]
        if (len(raw) - len(new) == len(self.env_base)
                and len(set(raw)) == len(raw)
                and len(set(names)) == len(names)
                and self.env_base_keys.isdisjoint(names)):
            for kv in new:
                k, _, v = kv.decode("utf-8", "surrogateescape").partition("=")
                os.environ[k] = v
            return
        env = {}
        for kv in raw:
            k, _, v = kv.decode("utf-8", "surrogateescape").partition("=")
            env[k] = v
        if self.pwd is not None:
            env["PWD"] = self.pwd
        os.environ.clear()
        os.environ.update(env)

    def _mount_scratch(self, d):
        """A private, empty tmpfs on @d with the mode and size bwrap gave the
        original (a cold sandbox's), kept for the slot loop's remounts."""
        try:
            self.scratch_mode[d] = os.stat(d).st_mode & 0o7777
        except OSError:
            return
        opts = "mode=%o" % self.scratch_mode[d]
        # bwrap's size too (resources.tmp): every tmpfs is bounded.
        st = os.statvfs(d)
        opts += ",size=%d" % (st.f_blocks * st.f_frsize)
        _check(libc.mount(b"tmpfs", d.encode(), b"tmpfs",
                          MS_NOSUID | MS_NODEV, opts.encode()), "mount " + d)

    # ---- in the server --------------------------------------------

    def new_slot(self):
        """Start a slot N with clone3(): pid 1 of a new pid namespace, in
        a new mount namespace, talking to the server over a socket pair."""
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = _clone3(CLONE_NEWNS | CLONE_NEWPID)
        if pid == 0:
            try:
                os.close(mine.detach())
                self._slot(theirs)
            except BaseException as e:
                try:
                    os.write(2, ("relay: warm slot: %s\n" % e).encode())
                finally:
                    os._exit(255)
            os._exit(255)
        theirs.close()
        if pid < 0:
            mine.close()
            _check(-1, "clone3")
        slot = Slot(mine)
        self.slots[pid] = slot
        self.by_sock[mine.fileno()] = slot
        self.poller.register(mine, select.POLLIN)
        self.starting += 1
        return slot

    def probe(self):
        """Start the first slot: can this sandbox run invocations?"""
        slot = self.new_slot()
        while True:
            try:
                msg = slot.sock.recv(4096)
            except InterruptedError:
                continue
            f = _fields(msg)
            if f and f[0] == b"I":
                slot.ready = True
                self.starting -= 1
                self.idle += 1
                return None
            return (f[-1].decode(errors="replace") if f
                    else "the first invocation slot exited")

    def from_slot(self, slot):
        """What a slot tells the server: it took a request ("B id"), it
        is free again ("I id"), it could not start ("F why"), or it exits
        (EOF)."""
        while True:
            try:
                msg = slot.sock.recv(4096, socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                msg = b""
            f = _fields(msg)
            if not f:
                self.drop_slot(slot)
                return
            if f[0] == b"B" and len(f) == 2:
                slot.rid = f[1]
                self.idle -= 1
            elif f[0] == b"I" and len(f) == 2:
                if not slot.ready:
                    slot.ready = True    # its first "I": set up
                    self.starting -= 1
                    self.failed = 0
                slot.rid = None
                self.idle += 1
            elif f[0] == b"F":
                self.failed += 1
                os.write(2, b"relay: warm slot: " + f[-1] + b"\n")

    def drop_slot(self, slot, why="its slot exited"):
        """A slot is gone: an invocation it had is lost (relayd runs it
        again cold)."""
        if self.by_sock.pop(slot.sock.fileno(), None) is None:
            return
        self.poller.unregister(slot.sock)
        if slot.rid is not None:
            self.send([b"E", slot.rid, why.encode()])
            slot.rid = None
        elif slot.ready:
            self.idle -= 1
        else:
            self.starting -= 1
        slot.sock.close()

    def reap(self):
        try:
            while os.read(self.wake_r, 512):
                pass
        except BlockingIOError:
            pass
        while True:
            try:
                pid, st = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            slot = self.slots.pop(pid, None)
            if slot is None:
                continue
            # What it said before it died comes first.
            if slot.sock.fileno() in self.by_sock:
                self.from_slot(slot)
            self.drop_slot(slot, "invocation slot died (status %d)"
                           % _status_code(st))

    def serve(self):
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda s, f: None)
        try:
            self.slotlib = _load_slot_lib(SLOT_LIB)
        except OSError as e:
            self.send([b"N", ("cannot load the slot loop: %s" % e).encode()])
            return 0
        self.codecache = {} if self.command else _precompile(os.getcwd())
        # Objects of the server are never freed: keep the collector from
        # touching (and so copying) their pages in every fork.
        gc.freeze()
        why = self.probe()
        if why:
            self.send([b"N", why.encode()])
            return 0
        me = os.pidfd_open(os.getpid())
        self.send([b"Y"], [me])
        os.close(me)
        # The slots read relayd's requests; the server only watches for
        # relayd hanging up, its slots' news and their exits.
        self.poller.register(self.sock, select.POLLRDHUP)
        self.poller.register(self.wake_r, select.POLLIN)
        while True:
            try:
                ready = self.poller.poll()
            except InterruptedError:
                continue
            for fd, ev in ready:
                if fd == self.sock.fileno():
                    return 0   # relayd closed the socket: retire
                if fd == self.wake_r:
                    self.reap()
                slot = self.by_sock.get(fd)
                if slot is not None:
                    self.from_slot(slot)
            # Keep one slot free (or on its way) for the next request,
            # once every slot's news of this round is in; not after
            # MAX_SETUP_FAILURES slots in a row failed to set up (no
            # fork loop: requests wait for the slots there are, and one
            # that waits too long is relayd's wedge, run cold).
            if (self.idle + self.starting <= 0
                    and len(self.by_sock) < MAX_SLOTS
                    and self.failed < MAX_SETUP_FAILURES):
                self.new_slot()


class Slot:
    """The server's end of one invocation slot."""
    __slots__ = ("sock", "rid", "ready")

    def __init__(self, sock):
        self.sock = sock
        self.rid = None     # the invocation it runs, if any
        self.ready = False  # it said its first "I"


def _fields(msg):
    fields = msg.split(b"\0")
    if fields and fields[-1] == b"":
        fields.pop()
    return fields


def serve(run, command=None):
    """Serve invocations of python3 handlers (@run), or of the exec
    command @command (an argv list)."""
    return Server(run, command).serve()
