#!/bin/sh
# check-paths.sh [SRCROOT] - no file of the repository depends on a file
# outside it. TAP output; exit 1 when a line breaks a rule.
#
# The repository must be readable on its own: every contract it relies on
# is written in doc/. So no tracked file (git ls-files; without git, every
# file below SRCROOT except build*/ and dot-directories) may contain:
#
#   1. the sibling directory "../shared" (any path through it);
#   2. the upstream design notes by name: "DESIGN.md", or "DESIGN" followed
#      by a section sign or a section number;
#   3. the upstream behaviour spec by path: "spec/events";
#   4. the upstream style notes: "CONVENTIONS.md", "CONVENTIONS C<n>" or
#      "(CONVENTIONS)" - the word alone is fine (librelay(3) has a
#      CONVENTIONS section of its own);
#   5. an absolute path into a machine's own tree: "/work" as a path
#      component, or a path below /home/, /root/, /Users/, /mnt/ or
#      /media/ (a user's or a build machine's files). The bare directories
#      /home and /root stay legal (the sandbox tests and the systemd unit
#      name them as system directories), and so are the system paths
#      /usr, /etc, /run, /var, /tmp, /dev, /proc, /sys, /bin, /lib, /opt
#      and the sandbox's /app: they mean the same on every machine.
#
# A path counts only where it starts a word (after a space, quote, "(",
# "=", ":" or ","), so URLs and relative paths such as doc/work/ do not
# match. A line may opt out with the marker "check-paths: allow" (none
# does today). This file states the rules, so it is not scanned.
set -u
root=${1:-.}
cd "$root" || exit 2

list_files() {
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		git ls-files
	else
		find . -type f ! -path './build*' ! -path './.*' | sed 's|^\./||'
	fi
}

b='(^|[^A-Za-z0-9_.~/-])'
rules='\.\./shared([^A-Za-z0-9_]|$)
DESIGN(\.md|[ ]?§|[ ][0-9])
spec/events
CONVENTIONS(\.md|[ ]C[0-9])|\(CONVENTIONS[),]
'"$b"'/work(/|[^A-Za-z0-9_-]|$)
'"$b"'/(home|root|Users|mnt|media)/[A-Za-z0-9_.-]'
names='the sibling ../shared directory
the upstream design notes
the upstream behaviour spec
the upstream style notes
a /work path
a path below a home or mount directory'

files=$(list_files | grep -v -x 'tests/check-paths.sh')
echo "TAP version 13"
echo "1..6"
n=0 rc=0
while IFS= read -r re; do
	n=$((n + 1))
	what=$(printf '%s\n' "$names" | sed -n "${n}p")
	hits=$(printf '%s\n' "$files" | tr '\n' '\0' |
		xargs -0 grep -I -n -E -e "$re" -- 2>/dev/null |
		grep -v 'check-paths: allow')
	if [ -n "$hits" ]; then
		echo "not ok $n - no file names $what"
		printf '%s\n' "$hits" | sed 's/^/# /'
		rc=1
	else
		echo "ok $n - no file names $what"
	fi
done <<EOF
$rules
EOF
exit $rc
