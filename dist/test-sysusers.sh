#!/bin/sh
# test-sysusers.sh SYSUSERS_FILE - relay.sysusers creates the dedicated
# sandbox user: systemd-sysusers applied to an empty root makes a system
# user relay-sandbox (uid below 1000, not 0, not 65534) and its group.
# TAP; skipped without systemd-sysusers.
file=$1
echo "TAP version 13"
if ! command -v systemd-sysusers >/dev/null 2>&1; then
	echo "1..0 # SKIP systemd-sysusers not installed"
	exit 0
fi
echo "1..2"
root=$(mktemp -d) || exit 1
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/etc"
for f in passwd group shadow gshadow; do : >"$root/etc/$f"; done
case $file in /*) ;; *) file=$PWD/$file ;; esac
if systemd-sysusers --root="$root" "$file" >"$root/log" 2>&1; then
	echo "ok 1 - systemd-sysusers accepts it"
else
	echo "not ok 1 - systemd-sysusers accepts it"
	sed 's/^/# /' "$root/log"
fi
line=$(grep '^relay-sandbox:' "$root/etc/passwd")
uid=$(echo "$line" | cut -d: -f3)
shell=$(echo "$line" | cut -d: -f7)
if [ -n "$uid" ] && [ "$uid" -gt 0 ] && [ "$uid" -lt 1000 ] &&
   [ "$shell" = /usr/sbin/nologin ] &&
   grep -q '^relay-sandbox:' "$root/etc/group"; then
	echo "ok 2 - a system user relay-sandbox (uid $uid) and its group"
else
	echo "not ok 2 - a system user relay-sandbox and its group"
	echo "# passwd: $line"
fi
