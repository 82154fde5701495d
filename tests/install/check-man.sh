#!/bin/sh
# check-man.sh OPERATIONS_MD PAGE... - what scdoc made of the man pages
# (issue 41): no path lost its "*" to a font change
# (/etc/relay/apps//template.yaml), the examples use Debian's
# redis-server socket, and the FILES sections name the files the programs
# read; doc/operations.md's examples write the unit's EnvironmentFile.
# TAP output.
set -u
ops=$1
shift
n=0 fail=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); echo "not ok $n - $*"; fail=1; }
# The text a reader sees, near enough: without font changes and \&.
text() { sed -e 's/\\f[BIRP]//g' -e 's/\\&//g' -e 's/\\-/-/g' "$1"; }
# One section's text: from ".SH NAME" to the next ".SH".
section() { text "$1" | awk -v s="$2" '
	/^\.SH / { on = ($2 == s); next } on'; }

echo "TAP version 13"
# The unit reads /etc/default/relay; no other environment file exists.
bad=$(grep -n 'relayd\.env' "$ops" | head -3)
if [ -z "$bad" ]; then ok "operations.md: no relayd.env (the unit's file is /etc/default/relay)"
else notok "operations.md: names relayd.env, not the unit's EnvironmentFile: $bad"; fi
for page in "$@"; do
	name=$(basename "$page")
	# A doubled slash inside a path (not after "scheme:" in a URI).
	bad=$(text "$page" | grep -n '[^:/]//[^/ ]' | head -3)
	if [ -z "$bad" ]; then ok "$name: no path with a doubled slash"
	else notok "$name: a path with a doubled slash: $bad"; fi
	bad=$(text "$page" | grep -n '/run/redis/redis\.sock' | head -3)
	if [ -z "$bad" ]; then ok "$name: no /run/redis/redis.sock"
	else notok "$name: /run/redis/redis.sock (Debian's socket is redis-server.sock): $bad"; fi
	case $name in
	relayd.8)
		for f in '/etc/relay/apps/*/template.yaml' \
			/etc/default/relay /var/lib/relay/schedule-outbox.json \
			/var/lib/relay/schedule-seen.json; do
			if section "$page" FILES | grep -qF "$f"; then
				ok "$name: FILES names $f"
			else
				notok "$name: FILES names $f"
			fi
		done ;;
	relayctl.1)
		if section "$page" FILES | grep -qF /etc/default/relay; then
			ok "$name: FILES names /etc/default/relay"
		else
			notok "$name: FILES names /etc/default/relay"
		fi ;;
	relay-template.5)
		if section "$page" FILES |
			grep -qF '/etc/relay/apps/*/template.yaml'; then
			ok "$name: FILES names /etc/relay/apps/*/template.yaml"
		else
			notok "$name: FILES names /etc/relay/apps/*/template.yaml"
		fi ;;
	esac
done
echo "1..$n"
exit $fail
