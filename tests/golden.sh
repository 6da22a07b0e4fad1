#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Golden dry-run outputs.  For every shipped example contrib/examples/<f>.json,
#
#   svcnat --dry-run --config <f>.json --node-ip 198.18.0.1 --node-ip 2001:2::1 \
#          --hostname node-a --cluster-cidr 198.18.64.0/18,2001:2:0:100::/56
#
# (node-a of the address plan, dual-stack; with --nfacct off, as the default
# auto plans the nfacct matches by what the host's kernel answers) must exit
# 0 and print exactly
# tests/data/golden/<f>.rules: the iptables-save text, then the ip6tables-save
# text when the example has IPv6 services (tests/e2e/restore-test.sh feeds
# each part to iptables-restore/ip6tables-restore --test).  A difference
# fails the test and shows the diff.
#
# Besides, every tests/data/golden/NAME@VARIANT.args holds a config path
# (relative to the source tree) and extra arguments, e.g.
# "tests/data/golden/zones.json --zone zone-a": its output must be
# NAME@VARIANT.rules (cases that need settings of their own: --zone with
# topology hints).  Arguments after a lone "--" replace the default settings
# instead of adding to them (e.g. no --cluster-cidr).
#
# Regenerate deliberately, after a change that is meant to alter the rules:
#
#   REGEN=1 SVCNAT=/path/to/build/svcnat tests/golden.sh
#
# rewrites tests/data/golden/<f>.rules in the source tree; review the diff
# (git diff tests/data/golden) and commit it with the change.
#
# Environment (make check sets it): SVCNAT (the binary), top_srcdir.
# Needs no root, no kernel access; writes only to a temporary directory.

set -u

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
SVCNAT=${SVCNAT:-${top_builddir:-.}/svcnat}
golden_dir=$top_srcdir/tests/data/golden
settings="--node-ip 198.18.0.1 --node-ip 2001:2::1 --hostname node-a --cluster-cidr 198.18.64.0/18,2001:2:0:100::/56"

if [ ! -x "$SVCNAT" ]; then
	echo "FAIL: svcnat binary not found at '$SVCNAT' (set SVCNAT)" >&2
	exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/svcnat-golden.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM HUP

fail=0
n=0
# "NAME CONFIG EXTRA-ARGS...", one case a line
cases() {
	local json args
	for json in "$top_srcdir"/contrib/examples/*.json; do
		[ -e "$json" ] || { echo "FAIL: no examples in $top_srcdir/contrib/examples" >&2; exit 1; }
		echo "$(basename "$json" .json) $json"
	done
	for args in "$golden_dir"/*@*.args; do
		[ -e "$args" ] || continue
		read -r json extra <"$args"
		echo "$(basename "$args" .args) $top_srcdir/$json $extra"
	done
}

while read -r name json extra; do
	want=$golden_dir/$name.rules
	n=$((n + 1))

	use=$settings
	case $extra in -- | "-- "*) use= extra=${extra#--} ;; esac
	# shellcheck disable=SC2086 # settings and extra are word lists on purpose
	"$SVCNAT" --dry-run --config "$json" --nfacct off $use $extra >"$tmp/$name.out" 2>"$tmp/$name.err"
	rc=$?
	if [ $rc -ne 0 ]; then
		echo "FAIL: $name: svcnat --dry-run exited $rc:" >&2
		cat "$tmp/$name.err" >&2
		fail=1
		continue
	fi
	if [ ! -s "$tmp/$name.out" ] || ! grep -q '^COMMIT$' "$tmp/$name.out"; then
		echo "FAIL: $name: svcnat --dry-run printed no ruleset" >&2
		fail=1
		continue
	fi

	if [ -n "${REGEN:-}" ]; then
		cp "$tmp/$name.out" "$want" || exit 1
		echo "regenerated $want ($(wc -l <"$want") lines)"
		continue
	fi
	if [ ! -f "$want" ]; then
		echo "FAIL: $name: no golden file $want (create it with REGEN=1 $0)" >&2
		fail=1
		continue
	fi
	if diff -u "$want" "$tmp/$name.out" >"$tmp/$name.diff"; then
		echo "ok: $name ($(wc -l <"$want") lines)"
	else
		echo "FAIL: $name: dry-run output differs from $want" \
			"(REGEN=1 $0 rewrites it if the change is intended):" >&2
		cat "$tmp/$name.diff" >&2
		fail=1
	fi
	if [ -s "$tmp/$name.err" ]; then
		echo "  $name: stderr:"
		sed 's/^/    /' "$tmp/$name.err"
	fi
done < <(cases)

# A golden file whose example is gone is stale.
for want in "$golden_dir"/*.rules; do
	[ -e "$want" ] || continue
	name=$(basename "$want" .rules)
	case $name in *@*) [ -f "$golden_dir/$name.args" ] && continue ;; esac
	if [ ! -f "$top_srcdir/contrib/examples/$name.json" ]; then
		echo "FAIL: $want has no example contrib/examples/$name.json" >&2
		fail=1
	fi
done

[ $n -gt 0 ] || fail=1
exit $fail
