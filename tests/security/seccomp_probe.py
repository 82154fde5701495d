"""seccomp_probe.py - the python3 handler of sec-seccomp: the calls of
seccomp_probe.c, made from the handler's own interpreter with ctypes
(every group of the sandbox's system-call profile), one "NAME RESULT"
line each, RESULT "ok" or the errno's name. Each call runs in a forked
child. The i386 entry is the C probe's alone (no way to reach it from
here)."""
import ctypes
import errno
import os
import threading

LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.syscall.restype = ctypes.c_long

# x86_64 and aarch64 numbers (the unified ones from 424 on are shared).
X86 = os.uname().machine != 'aarch64'
NR = {
    'unshare': 272 if X86 else 97, 'clone': 56 if X86 else 220,
    'clone3': 435, 'setns': 308 if X86 else 268,
    'mount': 165 if X86 else 40, 'umount2': 166 if X86 else 39,
    'pivot_root': 155 if X86 else 41, 'open_tree': 428, 'move_mount': 429,
    'fsopen': 430, 'fsconfig': 431, 'fsmount': 432, 'fspick': 433,
    'mount_setattr': 442, 'io_uring_setup': 425, 'io_uring_enter': 426,
    'io_uring_register': 427, 'userfaultfd': 323 if X86 else 282,
    'bpf': 321 if X86 else 280, 'perf_event_open': 298 if X86 else 241,
    'kexec_load': 246 if X86 else 104, 'kexec_file_load': 320 if X86 else 294,
    'init_module': 175 if X86 else 105, 'finit_module': 313 if X86 else 273,
    'delete_module': 176 if X86 else 106,
    'open_by_handle_at': 304 if X86 else 265, 'ptrace': 101 if X86 else 117,
    'process_vm_readv': 310 if X86 else 270,
    'process_vm_writev': 311 if X86 else 271,
    'personality': 135 if X86 else 92, 'keyctl': 250 if X86 else 219,
}
CLONE_NEWUSER, CLONE_NEWNET, SIGCHLD = 0x10000000, 0x40000000, 17
AT_FDCWD, O_CLOEXEC = -100, 0o2000000
BAD = ctypes.c_void_p(1)  # an address nothing is mapped at


def sc(name, *args):
    a = []
    for x in args:
        if isinstance(x, int):
            a.append(ctypes.c_long(x))
        elif isinstance(x, bytes):
            a.append(ctypes.c_char_p(x))
        else:
            a.append(x)
    return LIBC.syscall(ctypes.c_long(NR[name]), *a)


def clone_user():
    r = sc('clone', CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0)
    if r == 0:
        os._exit(0)
    if r > 0:
        os.waitpid(r, 0)
    return r


def setns_user():
    fd = os.open('/proc/self/ns/user', os.O_RDONLY)
    return sc('setns', fd, CLONE_NEWUSER)


def io_uring_setup():
    params = ctypes.create_string_buffer(120)
    return sc('io_uring_setup', 1, params)


def thread():
    t = threading.Thread(target=lambda: None)
    t.start()
    t.join()
    return 0


def fork():
    p = os.fork()
    if p == 0:
        os._exit(0)
    os.waitpid(p, 0)
    return 0


CALLS = [
    ('unshare-user', lambda: sc('unshare', CLONE_NEWUSER)),
    ('unshare-user-net', lambda: sc('unshare', CLONE_NEWUSER | CLONE_NEWNET)),
    ('clone-user', clone_user),
    ('clone3', lambda: sc('clone3', None, 0)),
    ('setns-user', setns_user),
    ('mount', lambda: sc('mount', None, b'/tmp', BAD, 0, None)),
    ('umount2', lambda: sc('umount2', b'/tmp', 0x80000000)),
    ('pivot_root', lambda: sc('pivot_root', b'/tmp', b'/tmp')),
    ('open_tree', lambda: sc('open_tree', AT_FDCWD, b'/', O_CLOEXEC)),
    ('move_mount', lambda: sc('move_mount', -1, b'', -1, b'', 0)),
    ('fsopen', lambda: sc('fsopen', b'tmpfs', 0)),
    ('fsconfig', lambda: sc('fsconfig', -1, 6, None, None, 0)),
    ('fsmount', lambda: sc('fsmount', -1, 0, 0)),
    ('fspick', lambda: sc('fspick', AT_FDCWD, b'/', 0)),
    ('mount_setattr', lambda: sc('mount_setattr', -1, b'', 0, None, 0)),
    ('io_uring_setup', io_uring_setup),
    ('io_uring_enter', lambda: sc('io_uring_enter', -1, 0, 0, 0, None, 0)),
    ('io_uring_register', lambda: sc('io_uring_register', -1, 0, None, 0)),
    ('userfaultfd', lambda: sc('userfaultfd', O_CLOEXEC | 1)),
    ('bpf', lambda: sc('bpf', 0x7fff, None, 0)),
    ('perf_event_open', lambda: sc('perf_event_open', BAD, 0, -1, -1, 0)),
    ('kexec_load', lambda: sc('kexec_load', 0, 0, None, 0)),
    ('kexec_file_load', lambda: sc('kexec_file_load', -1, -1, 0, b'', 0)),
    ('init_module', lambda: sc('init_module', None, 0, b'')),
    ('finit_module', lambda: sc('finit_module', -1, b'', 0)),
    ('delete_module', lambda: sc('delete_module', b'relay-none', 0)),
    ('open_by_handle_at', lambda: sc('open_by_handle_at', -1, BAD, 0)),
    ('ptrace', lambda: sc('ptrace', 2, os.getppid(), 0, 0)),
    ('process_vm_readv', lambda: sc('process_vm_readv', os.getpid(), None,
                                    0, None, 0, 0)),
    ('process_vm_writev', lambda: sc('process_vm_writev', os.getpid(), None,
                                     0, None, 0, 0)),
    ('personality-aslr', lambda: sc('personality', 0x0040000)),
    ('personality-query', lambda: sc('personality', 0xffffffff)),
    ('personality-linux', lambda: sc('personality', 0)),
    ('keyctl', lambda: sc('keyctl', 0, -3, 0)),
    ('fork', fork),
    ('thread', thread),
]


def one(fn):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        code = 255
        try:
            ctypes.set_errno(0)
            res = fn()
            code = 0 if res >= 0 else ctypes.get_errno()
        except OSError as e:
            code = e.errno
        finally:
            os.write(w, code.to_bytes(4, 'little'))
            os._exit(0)
    os.close(w)
    data = os.read(r, 4)
    os.close(r)
    os.waitpid(pid, 0)
    if len(data) != 4:
        return 'lost'
    e = int.from_bytes(data, 'little')
    return 'ok' if e == 0 else errno.errorcode.get(e, str(e))


def run(event):
    for name, fn in CALLS:
        print(name, one(fn), flush=True)
