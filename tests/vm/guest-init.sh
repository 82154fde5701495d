#!/bin/sh
# tests/vm/guest-init.sh - PID 1 of the vm suite's user-mode Linux guest.
#
# The guest's root is the host's, read-only over hostfs; the kernel hands
# the command line's RELAY_VM_OUT (a host directory, mounted read-write)
# and RELAY_VM_GUEST (tests/vm/guest.py) to us as environment variables.
# Everything writable lives on a tmpfs at /run. guest.py mounts cgroup2
# itself (each case shapes the hierarchy it needs), writes TAP to
# $RELAY_VM_OUT/tap.txt, and we power off.
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t tmpfs -o mode=755 tmpfs /run
mkdir -p /run/out /run/tmp
chmod 1777 /run/tmp
mount -t hostfs -o "$RELAY_VM_OUT" hostfs /run/out
echo booted >/run/out/booted
TMPDIR=/run/tmp HOME=/run/tmp python3 "$RELAY_VM_GUEST" /run/out \
	>/run/out/guest.log 2>&1
echo "guest.py exited $?" >>/run/out/guest.log
sync
poweroff -f 2>/dev/null
echo o >/proc/sysrq-trigger
