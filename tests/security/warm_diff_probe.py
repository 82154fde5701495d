#!/usr/bin/python3
"""warm_diff_probe.py - the poisoner and the fingerprint of sec-warm-diff.

One program for every runtime: the python3 runtime imports it as the
handler module (`probe.run`), an exec app runs `python3 /app/probe.py`, a
node app's module runs that from its handler. The event says what to do:
{"mode": "poison"} changes everything an invocation can reach, anything
else prints a fingerprint: one line per observable fact, in a fixed
order, sorted where the source has no order of its own.

The fingerprint prints what an invocation can see, raw: values that are
different on every invocation by nature (host pids, namespace inodes) are
printed as they are and removed by the test, which lists them. Only the
mount and key serial numbers, which no invocation can choose, are
replaced here by their order of appearance.
"""
import ctypes
import errno
import json
import os
import re
import resource
import signal
import socket
import stat
import sys
import time

LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.syscall.restype = ctypes.c_long

# x86_64 and aarch64 system call numbers.
if os.uname().machine == 'aarch64':
    SYS_ADD_KEY, SYS_KEYCTL, SYS_IOPRIO_SET, SYS_IOPRIO_GET = 217, 219, 30, 31
else:
    SYS_ADD_KEY, SYS_KEYCTL, SYS_IOPRIO_SET, SYS_IOPRIO_GET = 248, 250, 251, 252

KEY_SPEC = {'@t': -1, '@p': -2, '@s': -3, '@u': -4, '@us': -5}
KEYCTL_GET_KEYRING_ID, KEYCTL_JOIN_SESSION_KEYRING = 0, 1
KEYCTL_DESCRIBE, KEYCTL_LINK, KEYCTL_READ = 6, 8, 11
KEYCTL_SETPERM, KEYCTL_GET_PERSISTENT = 5, 22

MARK = 'relay-poison'
TAG = 'none'  # the test case, from the event


def out(*words):
    print(*words)


def err_name(e):
    return errno.errorcode.get(e, str(e))


def keyctl(op, *args):
    a = [ctypes.c_ulong(x & 0xffffffffffffffff) if isinstance(x, int)
         else x for x in args]
    r = LIBC.syscall(ctypes.c_long(SYS_KEYCTL), ctypes.c_long(op), *a)
    return r if r >= 0 else -ctypes.get_errno()


def add_key(ktype, desc, payload, ring):
    r = LIBC.syscall(ctypes.c_long(SYS_ADD_KEY), ctypes.c_char_p(ktype),
                     ctypes.c_char_p(desc), ctypes.c_char_p(payload),
                     ctypes.c_size_t(len(payload)),
                     ctypes.c_long(ring))
    return r if r >= 0 else -ctypes.get_errno()


def read_text(path):
    try:
        with open(path, 'rb') as f:
            return f.read().decode('utf-8', 'replace')
    except OSError as e:
        return '<%s>' % err_name(e.errno)


def mounts():
    """(mountpoint, fstype, options, line) of /proc/self/mountinfo."""
    res = []
    for line in read_text('/proc/self/mountinfo').splitlines():
        f = line.split()
        if len(f) < 7:
            continue
        sep = f.index('-')
        res.append((f[4].replace('\\040', ' '), f[sep + 1],
                    f[5].split(','), f))
    return res


def rw_roots():
    """Mount points an invocation may write below (no proc, no sysfs)."""
    return sorted({m for m, t, o, _ in mounts()
                   if 'ro' not in o and t not in ('proc', 'sysfs')})


def skip_dir(path, ro_points, rw_points):
    if path in ('/proc', '/sys'):
        return True
    if path in ro_points:
        inner = path.rstrip('/') + '/'
        return not any(p.startswith(inner) for p in rw_points)
    return False


def writable_dirs():
    """Every directory below / the invocation may create entries in."""
    ms = mounts()
    ro_points = {m for m, t, o, _ in ms if 'ro' in o}
    rw_points = {m for m, t, o, _ in ms if 'ro' not in o}
    found = []
    for top, dirs, _files in os.walk('/'):
        if os.access(top, os.W_OK | os.X_OK):
            found.append(top)
        keep = []
        for d in dirs:
            p = os.path.join(top, d)
            if not skip_dir(p, ro_points, rw_points) and \
                    not os.path.islink(p):
                keep.append(d)
        dirs[:] = keep
    return sorted(found)


# ---------------------------------------------------------------- poison


def poison_fs(report):
    dirs = writable_dirs()
    report('writable', ' '.join(dirs))
    for d in dirs:
        base = os.path.join(d, MARK)
        for what, fn in (('file', lambda p: open(p, 'w').write('x' * 100)),
                         ('dir', lambda p: os.mkdir(p, 0o777)),
                         ('fifo', lambda p: os.mkfifo(p, 0o666)),
                         ('link', lambda p: os.symlink('/' + MARK, p))):
            try:
                fn(base + '-' + what)
            except OSError as e:
                report('create', d, what, err_name(e.errno))
        try:
            os.chmod(d, 0o777)
        except OSError as e:
            report('chmod', d, err_name(e.errno))
    # Replace /dev's entries (links, devices) with links of ours.
    for name in sorted(os.listdir('/dev')):
        p = '/dev/' + name
        if os.path.isdir(p) and not os.path.islink(p):
            continue
        try:
            os.unlink(p)
            os.symlink('/tmp/' + MARK, p)
            report('replaced', p)
        except OSError as e:
            report('replace', p, err_name(e.errno))
    # chmod everything we own below the writable mounts.
    for root in rw_roots():
        for top, ds, fs in os.walk(root):
            for n in ds + fs:
                p = os.path.join(top, n)
                try:
                    if not os.path.islink(p):
                        os.chmod(p, 0o777)
                except OSError:
                    pass


def poison_keys(report):
    # Keys are visible host-wide (/proc/keys): their names carry the
    # test case's tag, so that each case sees its own poisoner's only.
    name = MARK + '-' + TAG
    for ring in ('@u', '@s', '@us'):
        r = add_key(b'user', (name + ring).encode(), b'secret',
                    KEY_SPEC[ring])
        report('add_key', ring, r if r < 0 else 'ok')
        if r >= 0:  # readable by every process of our (host) user
            report('setperm', ring, keyctl(KEYCTL_SETPERM, r, 0x3f3f0000))
        r = add_key(b'keyring', (name + '-ring' + ring).encode(), b'',
                    KEY_SPEC[ring])
        report('add_keyring', ring, r if r < 0 else 'ok')
    r = keyctl(KEYCTL_GET_PERSISTENT, -1, KEY_SPEC['@s'])
    report('persistent', r if r < 0 else 'ok')
    if r >= 0:
        r = add_key(b'user', (name + '@persistent').encode(), b'x', r)
        report('add_key @persistent', r if r < 0 else 'ok')
    # Last (our keys above are possessed through the old one): a new,
    # named session keyring, open to everyone.
    r = keyctl(KEYCTL_JOIN_SESSION_KEYRING,
               ctypes.c_char_p((name + '-ses').encode()))
    report('join session keyring', r if r < 0 else 'ok')
    if r >= 0:  # open it to everyone
        report('setperm ses', keyctl(KEYCTL_SETPERM, r, 0x3f3f3f3f))


def poison_ipc(report):
    LIBC.shmget.restype = ctypes.c_int
    for name, call in (('shm', lambda k: LIBC.shmget(k, 4096, 0o1666)),
                       ('sem', lambda k: LIBC.semget(k, 3, 0o1666)),
                       ('msg', lambda k: LIBC.msgget(k, 0o1666))):
        for key in (0, 0x52454c59):
            r = call(key)
            report('sysv', name, key, 'ok' if r >= 0 else
                   err_name(ctypes.get_errno()))
    q = LIBC.msgget(0x52454c59, 0o666)
    if q >= 0:
        buf = ctypes.create_string_buffer(b'\x01\0\0\0\0\0\0\0poison')
        LIBC.msgsnd(q, buf, 6, 0o4000)
    try:
        mq_open = LIBC.mq_open
    except AttributeError:
        mq_open = ctypes.CDLL('librt.so.1', use_errno=True).mq_open
    mq_open.restype = ctypes.c_int
    mq_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int,
                        ctypes.c_void_p]
    r = mq_open(('/' + MARK).encode(), os.O_CREAT | os.O_RDWR, 0o666, None)
    report('mq_open', 'ok' if r >= 0 else err_name(ctypes.get_errno()))
    try:
        fd = os.open('/dev/shm/' + MARK + '-posix', os.O_CREAT | os.O_RDWR,
                     0o666)
        os.close(fd)
        report('shm_open', 'ok')
    except OSError as e:
        report('shm_open', err_name(e.errno))


def poison_proc(report):
    """Write every attribute of pid 1 and of ourselves we are let."""
    values = {
        'oom_score_adj': '1000', 'oom_adj': '15', 'coredump_filter': '0x7f',
        'comm': MARK, 'timerslack_ns': '1000000', 'autogroup': '19',
        'loginuid': '1234', 'sessionid': '1', 'clear_refs': '5',
        'attr/current': 'x', 'setgroups': 'deny', 'make-it-fail': '1',
        'fail-nth': '1', 'projid_map': '0 0 1', 'sched': '0',
    }
    for pid in ('1', 'self'):
        for name, val in sorted(values.items()):
            p = '/proc/%s/%s' % (pid, name)
            try:
                with open(p, 'w') as f:
                    f.write(val)
                report('proc write', p, 'ok')
            except OSError as e:
                report('proc write', p, err_name(e.errno))
    # What pid 1 exposes to us: a slot process we could take over?
    for name in ('mem', 'environ', 'maps', 'fd', 'cwd', 'root'):
        p = '/proc/1/' + name
        try:
            if name == 'fd':
                n = len(os.listdir(p))
            elif name in ('cwd', 'root'):
                n = os.readlink(p)
            else:
                with open(p, 'rb') as f:
                    n = len(f.read(64))
            report('proc read', p, 'ok', n)
        except OSError as e:
            report('proc read', p, err_name(e.errno))
    for p in ('/proc/sys/kernel/ns_last_pid', '/proc/sys/kernel/hostname',
              '/proc/sys/kernel/shmmax', '/proc/sys/fs/mqueue/msg_max',
              '/proc/sys/kernel/msgmax'):
        try:
            with open(p, 'w') as f:
                f.write('1000')
            report('sysctl write', p, 'ok')
        except OSError as e:
            report('sysctl write', p, err_name(e.errno))
    for who in (0, 1):
        try:
            os.setpriority(os.PRIO_PROCESS, who, 19)
            report('nice', who, 'ok')
        except OSError as e:
            report('nice', who, err_name(e.errno))
        try:
            os.sched_setaffinity(who, {min(os.sched_getaffinity(0))})
            report('affinity', who, 'ok')
        except OSError as e:
            report('affinity', who, err_name(e.errno))
        # IOPRIO_WHO_PROCESS, class idle.
        r = LIBC.syscall(ctypes.c_long(SYS_IOPRIO_SET), ctypes.c_long(1),
                         ctypes.c_long(who), ctypes.c_long(3 << 13))
        report('ioprio', who, 'ok' if r == 0 else
               err_name(ctypes.get_errno()))


def poison_limits(report):
    for name in sorted(n for n in dir(resource) if n.startswith('RLIMIT_')):
        res = getattr(resource, name)
        for pid in (1, 0):
            try:
                soft, hard = resource.prlimit(pid, res)
                low = 1 if name != 'RLIMIT_NOFILE' else 64
                if name in ('RLIMIT_AS', 'RLIMIT_DATA', 'RLIMIT_STACK',
                            'RLIMIT_NPROC', 'RLIMIT_CPU', 'RLIMIT_FSIZE'):
                    low = hard if pid == 0 else low
                new = (min(soft, low) if soft != resource.RLIM_INFINITY
                       else low,
                       min(hard, low) if hard != resource.RLIM_INFINITY
                       else low)
                if pid == 0 and name in ('RLIMIT_AS', 'RLIMIT_DATA',
                                         'RLIMIT_STACK', 'RLIMIT_NPROC',
                                         'RLIMIT_CPU', 'RLIMIT_FSIZE'):
                    continue
                resource.prlimit(pid, res, new)
                report('prlimit', pid, name, 'ok')
            except (OSError, ValueError) as e:
                report('prlimit', pid, name,
                       err_name(e.errno) if isinstance(e, OSError) else e)


def poison_signals(report):
    LIBC.sigqueue.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
    n = 0
    for i in range(64):
        sig = signal.SIGRTMIN + (i % 8)
        if LIBC.sigqueue(1, sig, ctypes.c_void_p(i + 1)) != 0:
            report('sigqueue 1 stopped', i, err_name(ctypes.get_errno()))
            break
        n += 1
    report('sigqueue 1', n)
    for sig in (signal.SIGUSR1, signal.SIGHUP, signal.SIGINT,
                signal.SIGTERM, signal.SIGCHLD, signal.SIGPIPE,
                signal.SIGALRM, signal.SIGWINCH, signal.SIGTSTP):
        try:
            os.kill(1, sig)
            report('kill 1', sig.name, 'ok')
        except OSError as e:
            report('kill 1', sig.name, err_name(e.errno))


def poison_background(report):
    """Leave daemons holding an abstract socket, a named one, a pty."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        if os.fork() != 0:
            os._exit(0)
        os.setsid()
        if os.fork() != 0:
            os._exit(0)
        for s in range(1, 32):
            if s not in (signal.SIGKILL, signal.SIGSTOP):
                try:
                    signal.signal(s, signal.SIG_IGN)
                except (OSError, ValueError):
                    pass
        held = []
        for addr in ('\0' + MARK, '/tmp/' + MARK + '.sock'):
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.bind(addr)
                s.listen(1)
                held.append(s)
            except OSError:
                pass
        try:
            held.append(os.open('/dev/ptmx', os.O_RDWR | os.O_NOCTTY))
        except OSError:
            pass
        try:
            with open('/proc/self/comm', 'w') as f:
                f.write(MARK + '-bg')
        except OSError:
            pass
        os.write(w, b'%d' % len(held))
        os.close(w)
        devnull = os.open('/', os.O_RDONLY)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        while True:
            time.sleep(3600)
    os.close(w)
    os.waitpid(pid, 0)
    report('background holds', os.read(r, 16).decode() or 'nothing')
    os.close(r)
    # Move the pid counter: many short-lived processes.
    for _ in range(300):
        p = os.fork()
        if p == 0:
            os._exit(0)
        os.waitpid(p, 0)
    report('forked', 300)


def poison(only=None):
    """Run every poison step, or those named in @only (e.g. "limits")."""
    def report(*words):
        out('poison', *words)

    for ns in ('pid', 'net'):
        out('ns', ns, os.readlink('/proc/self/ns/' + ns))
    os.umask(0)
    os.environ['RELAY_POISONED'] = '1'
    for step in (poison_fs, poison_keys, poison_ipc, poison_proc,
                 poison_signals, poison_background, poison_limits):
        if only and step.__name__[len('poison_'):] not in only:
            continue
        try:
            step(report)
        except Exception as e:  # report and go on with the next step
            report(step.__name__, 'raised', type(e).__name__, e)
    os.chdir('/tmp')
    out('poison done')
    sys.stdout.flush()


# ----------------------------------------------------------- fingerprint


def list_tree(root, prefix='fs', deep=True):
    """Names, types, modes, owners, sizes and targets below @root (only
    its own entries unless @deep)."""
    try:
        st = os.lstat(root)
    except OSError as e:
        out(prefix, root, err_name(e.errno))
        return
    entries = [(root, st)]
    if stat.S_ISDIR(st.st_mode):
        for top, ds, fs in os.walk(root):
            ds.sort()
            for n in sorted(ds + fs):
                p = os.path.join(top, n)
                try:
                    entries.append((p, os.lstat(p)))
                except OSError:
                    pass
            if not deep:
                break
            ds[:] = [d for d in ds if not os.path.islink(os.path.join(top,
                                                                      d))]
    for p, st in sorted(entries):
        extra = ''
        if stat.S_ISLNK(st.st_mode):
            extra = '-> ' + os.readlink(p)
        elif stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
            extra = 'dev %d:%d' % (os.major(st.st_rdev),
                                   os.minor(st.st_rdev))
        elif stat.S_ISREG(st.st_mode):
            extra = 'size %d' % st.st_size
        out(prefix, p, stat.filemode(st.st_mode), '%o' % st.st_mode,
            st.st_uid, st.st_gid, 'nlink', st.st_nlink, extra)


STATUS_KEEP = (
    'Name', 'Umask', 'State', 'Tgid', 'Ngid', 'Pid', 'PPid', 'TracerPid',
    'Uid', 'Gid', 'FDSize', 'Groups', 'NStgid', 'NSpid', 'NSpgid', 'NSsid',
    'Kthread', 'Threads', 'SigQ', 'SigPnd', 'ShdPnd', 'SigBlk', 'SigIgn',
    'SigCgt', 'CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb',
    'NoNewPrivs', 'Seccomp', 'Seccomp_filters', 'Speculation_Store_Bypass',
    'SpeculationIndirectBranch', 'Cpus_allowed', 'Cpus_allowed_list',
    'Mems_allowed', 'Mems_allowed_list', 'THP_enabled', 'untag_mask',
    'x86_Thread_features', 'x86_Thread_features_locked',
)


def status(pid):
    for line in read_text('/proc/%s/status' % pid).splitlines():
        k, _, v = line.partition(':')
        if k in STATUS_KEEP:
            out('status', pid, k, ' '.join(v.split()))


def proc_attrs(pid):
    for name in ('comm', 'cmdline', 'oom_score_adj', 'oom_adj',
                 'coredump_filter', 'timerslack_ns', 'autogroup',
                 'loginuid', 'sessionid', 'personality', 'cgroup',
                 'setgroups', 'uid_map', 'gid_map', 'limits', 'wchan'):
        text = read_text('/proc/%s/%s' % (pid, name))
        if name == 'autogroup':  # "/autogroup-N nice M": N is global
            text = ' '.join(text.split()[1:])
        if name == 'cgroup':  # an invocation's cgroup is relayd's Nth
            text = re.sub(r'(/relay-\d+-\d+)/\d+$', r'\1/N', text,
                          flags=re.M)
        for line in text.replace('\0', ' ').splitlines() or ['']:
            out('proc', pid, name, ' '.join(line.split()))
    for who in ('prio', 'affinity', 'ioprio', 'sched'):
        p = 0 if pid == 'self' else int(pid)
        try:
            if who == 'prio':
                v = os.getpriority(os.PRIO_PROCESS, p)
            elif who == 'affinity':
                v = sorted(os.sched_getaffinity(p))
            elif who == 'sched':
                v = (os.sched_getscheduler(p), os.sched_getparam(p))
            else:
                v = LIBC.syscall(ctypes.c_long(SYS_IOPRIO_GET),
                                 ctypes.c_long(1), ctypes.c_long(p))
        except OSError as e:
            v = err_name(e.errno)
        out('proc', pid, who, v)


def keyring(name, ring, depth=0):
    if depth > 3:
        return
    buf = ctypes.create_string_buffer(4096)
    n = keyctl(KEYCTL_READ, ring, ctypes.addressof(buf), 4096)
    if n < 0:
        out('key', name, 'read', err_name(-n))
        return
    ids = [int.from_bytes(buf.raw[i:i + 4], sys.byteorder)
           for i in range(0, min(n, 4096), 4)]
    descs = []
    for k in ids:
        d = ctypes.create_string_buffer(512)
        m = keyctl(KEYCTL_DESCRIBE, k, ctypes.addressof(d), 512)
        descs.append((d.value.decode('utf-8', 'replace') if m >= 0
                      else err_name(-m), k))
    for d, k in sorted(descs):
        out('key', name, d)
        if d.startswith('keyring;'):
            keyring(name + '/' + d.split(';')[-1], k, depth + 1)


def keys():
    for name in ('@s', '@u', '@us', '@p', '@t'):
        ring = keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC[name], 0)
        if ring < 0:
            out('key', name, err_name(-ring))
            continue
        d = ctypes.create_string_buffer(512)
        m = keyctl(KEYCTL_DESCRIBE, ring, ctypes.addressof(d), 512)
        out('key', name, 'is', d.value.decode() if m >= 0 else
            err_name(-m))
        keyring(name, ring)
    ring = keyctl(KEYCTL_GET_PERSISTENT, -1, 0)
    out('key @persistent', ring if ring < 0 else 'exists')
    for line in sorted(read_text('/proc/keys').splitlines()):
        f = line.split()
        # serial flags usage timeout perm uid gid type desc: no serial,
        # no timeout (it counts down), no usage count (held references).
        if len(f) >= 9:
            desc = ' '.join(f[8:])
            read = ''
            if desc.startswith(MARK) and not \
                    desc.startswith(MARK + '-' + TAG):
                continue  # another test case's poisoner
            if desc.startswith(MARK):  # can we read another's key?
                buf = ctypes.create_string_buffer(256)
                n = keyctl(KEYCTL_READ, int(f[0], 16),
                           ctypes.addressof(buf), 256)
                if n < 0:
                    read = 'read ' + err_name(-n)
                elif f[7] == 'keyring':  # serial numbers: count them
                    read = 'read %d keys' % (n // 4)
                else:
                    read = 'read ' + buf.raw[:min(n, 256)].decode(
                        'utf-8', 'replace')
            out('proc keys', f[1], f[4], f[5], f[6], f[7], desc, read)
    for line in read_text('/proc/key-users').splitlines():
        out('proc key-users', ' '.join(line.split()))


def sysvipc():
    drop = {'cpid', 'lpid', 'atime', 'dtime', 'ctime', 'otime', 'stime',
            'rtime', 'lspid', 'lrpid', 'rss', 'swap'}
    for kind in ('shm', 'sem', 'msg'):
        text = read_text('/proc/sysvipc/' + kind).splitlines()
        if not text:
            continue
        head = text[0].split()
        for line in sorted(text[1:]):
            f = line.split()
            out('sysvipc', kind, ' '.join('%s=%s' % (h, v) for h, v in
                                          zip(head, f) if h not in drop))


def unix_sockets():
    names = []
    unnamed = 0
    for line in read_text('/proc/net/unix').splitlines()[1:]:
        f = line.split()
        if len(f) >= 8:
            names.append(f[7] + ' type ' + f[4] + ' st ' + f[5])
        else:
            unnamed += 1
    for n in sorted(names):
        out('unix', n)
    out('unix unnamed', unnamed)


def mountinfo():
    ids = {}
    anon = {}

    def norm_id(x):
        return ids.setdefault(x, 'm%d' % len(ids))

    # In mount point order, ids numbered in that order: a mount made
    # again (a slot remounts /tmp an invocation changed) gets a newer
    # kernel id and would move in mountinfo's own order; which mounts,
    # where, of what and how stays compared.
    # Mounts stacked on one point go lowest first (by parent, not by
    # id: the kernel's ids say nothing of the order once one is redone).
    ms = mounts()
    by_id = {f[0]: (m, f[1]) for m, _t, _o, f in ms}

    def depth(mid, seen=0):
        point, parent = by_id[mid]
        if seen > 64 or parent not in by_id or by_id[parent][0] != point:
            return 0
        return depth(parent, seen + 1) + 1

    ms = sorted(ms, key=lambda m: (m[0], depth(m[3][0])))
    for m, _t, _o, f in ms:
        norm_id(f[0])
    for m, _t, _o, f in ms:
        sep = f.index('-')
        dev = f[2]
        if dev.startswith('0:'):
            dev = anon.setdefault(dev, '0:a%d' % len(anon))
        opt = ['%s:*' % o.split(':')[0] for o in f[6:sep]]
        out('mount', norm_id(f[0]), norm_id(f[1]), dev, f[3], f[4], f[5],
            ' '.join(opt), '-', ' '.join(f[sep + 1:]))


def processes():
    for p in sorted((p for p in os.listdir('/proc') if p.isdigit()),
                    key=int):
        st = read_text('/proc/%s/stat' % p)
        fields = st[st.rfind(')') + 2:].split()
        out('process', p, read_text('/proc/%s/comm' % p).strip(),
            fields[0] if fields else '?',
            read_text('/proc/%s/cmdline' % p).replace('\0', ' ').strip())


def fingerprint(event):
    out('event', json.dumps(event, sort_keys=True))
    out('id', os.getresuid(), os.getresgid(), sorted(os.getgroups()))
    out('pid', os.getpid(), 'ppid', os.getppid(), 'pgid', os.getpgid(0),
        'sid', os.getsid(0))
    out('ns_last_pid', read_text('/proc/sys/kernel/ns_last_pid').strip())
    child = os.fork()
    if child == 0:
        os._exit(0)
    os.waitpid(child, 0)
    out('child pid', child)
    # The slot's identity (pid namespace) and the sandbox's (network
    # namespace): printed for the test, which removes them.
    for ns in ('pid', 'net', 'ipc', 'mnt', 'uts', 'user', 'cgroup',
               'time'):
        try:
            out('ns', ns, os.readlink('/proc/self/ns/' + ns))
        except OSError as e:
            out('ns', ns, err_name(e.errno))
    out('uname', *os.uname())
    out('domainname', read_text('/proc/sys/kernel/domainname').strip())
    old = os.umask(0o22)
    os.umask(old)
    out('umask', '%04o' % old)
    out('cwd', os.getcwd())
    for k, v in sorted(os.environ.items()):
        out('env', '%s=%s' % (k, v))
    out('fds', sorted(int(x) for x in os.listdir('/proc/self/fd')))
    for fd in sorted(int(x) for x in os.listdir('/proc/self/fd')):
        try:
            out('fd', fd, os.readlink('/proc/self/fd/%d' % fd))
        except OSError:
            pass
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    out('sigmask', sorted(int(s) for s in mask))
    out('sigpending', sorted(int(s) for s in signal.sigpending()))
    out('sigdisp', [s for s in range(1, 65)
                    if s not in (9, 19) and s in range(1, signal.NSIG) and
                    _disp(s)])
    for name in sorted(n for n in dir(resource) if n.startswith('RLIMIT_')):
        out('rlimit', name, resource.getrlimit(getattr(resource, name)))
    status('self')
    status('1')
    proc_attrs('self')
    proc_attrs('1')
    for p in ('kernel/hostname', 'kernel/ns_last_pid', 'kernel/shmmax',
              'kernel/shmall', 'kernel/shmmni', 'kernel/msgmax',
              'kernel/msgmnb', 'kernel/msgmni', 'kernel/sem',
              'kernel/pid_max', 'kernel/keys/maxkeys',
              'kernel/keys/maxbytes', 'fs/mqueue/msg_max',
              'fs/mqueue/msgsize_max', 'fs/mqueue/queues_max',
              'fs/mqueue/msg_default', 'fs/mqueue/msgsize_default',
              'user/max_user_namespaces', 'user/max_pid_namespaces',
              'user/max_ipc_namespaces', 'user/max_mnt_namespaces',
              'user/max_net_namespaces', 'kernel/overflowuid'):
        out('sysctl', p, read_text('/proc/sys/' + p).strip())
    keys()
    sysvipc()
    try:
        mq_open = LIBC.mq_open
    except AttributeError:
        mq_open = ctypes.CDLL('librt.so.1', use_errno=True).mq_open
    mq_open.restype = ctypes.c_int
    mq_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int,
                        ctypes.c_void_p]
    r = mq_open(('/' + MARK).encode(), os.O_RDONLY, 0, None)
    out('mq', '/' + MARK, 'exists' if r >= 0 else
        err_name(ctypes.get_errno()))
    unix_sockets()
    processes()
    mountinfo()
    out('writable', ' '.join(writable_dirs()))
    list_tree('/', 'top', deep=False)
    for root in ['/dev'] + [m for m in rw_roots() if m != '/dev' and
                            not m.startswith('/dev/')]:
        list_tree(root)
    sys.stdout.flush()


def _disp(s):
    try:
        h = signal.getsignal(s)
    except (OSError, ValueError):
        return False
    return h not in (signal.SIG_DFL, None)


def run(event):
    """The handler: the python3 runtime calls it with the decoded event."""
    global TAG
    if isinstance(event, dict) and event.get('tag'):
        TAG = str(event['tag'])
    if isinstance(event, dict) and event.get('mode') == 'poison':
        poison(event.get('only'))
    else:
        fingerprint(event)


if __name__ == '__main__':
    data = sys.stdin.read()
    run(json.loads(data) if data.strip() else None)
