#!/bin/bash
# test-completion.sh COMPLETION_FILE APPS_DIR - drive the relayctl bash
# completion function with fixed command lines and compare the candidates.
# Works without the bash-completion package (the script falls back to
# plain compgen). TAP output.
set -u
# shellcheck source=/dev/null
source "$1" || exit 1
apps=$2
n=0 fail=0

check()
{
	local want=$1 got
	shift
	COMP_WORDS=("$@")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMPREPLY=()
	_relayctl
	got="${COMPREPLY[*]}"
	n=$((n + 1))
	if [[ $got == "$want" ]]; then
		echo "ok $n - [$*] -> $got"
	else
		echo "not ok $n - [$*]: got \"$got\", want \"$want\""
		fail=1
	fi
}

echo "TAP version 13"
check "validate match publish app dlq health stats state event tail --env-file --help --version" relayctl ""
check "run ls inspect invoke --help" relayctl app ""
check "ls summary inspect replay rm --help" relayctl dlq ""
check "audit billing notify" relayctl app run --apps "$apps" ""
check "billing" relayctl app inspect --apps "$apps" b
# Once NAME is given, only options are left.
check "--event --file --output --redis --stream --group --run-dir --state-dir --apps --help" relayctl app invoke notify ""
check "bwrap none" relayctl app run billing --apps "$apps" --sandbox ""
check "--apps --event --file --sandbox --warm --attempts --help" relayctl app run billing -
check "reset" relayctl stats ""
check "--json --redis --stream --group --run-dir --state-dir --apps --help" relayctl stats reset -
check "--apps --max-file-size --verbose --help" relayctl validate -
check "--apps --now --explain --help" relayctl match -
check "--file --key --traceparent --explain --wait --timeout --redis --stream --group --run-dir --state-dir --apps --help" relayctl publish -
check "-" relayctl publish --key k1 --timeout 5s ""
check "--wait" relayctl publish --traceparent x --wa
check "--app --handler --reason --since --until --id --limit --json --redis --stream --group --run-dir --state-dir --apps --help" relayctl dlq ls -
check "--app --handler --reason --since --until --id --json --redis --stream --group --run-dir --state-dir --apps --help" relayctl dlq summary -
check "--all --app --handler --reason --since --until --id --dry-run --yes --rate --redis --stream --group --run-dir --state-dir --apps --help" relayctl dlq replay -
check "--all --app --handler --reason --since --until --id --dry-run --yes --rate --redis --stream --group --run-dir --state-dir --apps --help" relayctl dlq rm 1-0 -
check "--rate" relayctl dlq rm --reason 'x y' --since 2h --ra
check "--json --redis --stream --group --run-dir --state-dir --apps --help" relayctl health -
check "audit" relayctl dlq replay --all --apps "$apps" --app a
check "--all" relayctl dlq replay --app billing --al
check "--json" relayctl app ls --run-dir /tmp --j
check "leaks --help" relayctl state ""
check "--retain --ttl --json --redis --stream --group --run-dir --state-dir --apps --help" relayctl state leaks -
check "--retain" relayctl state leaks --ttl 2h --ret
check "show --help" relayctl event ""
check "--json --redis --stream --group --run-dir --state-dir --apps --help" relayctl event show 1-0 -
check "--app --handler --outcome --follow --no-follow --json --redis --stream --group --run-dir --state-dir --apps --help" relayctl tail -
check "ok failed timeout not_started" relayctl tail --outcome ""
check "audit" relayctl tail --apps "$apps" --app a
echo "1..$n"
exit $fail
