#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Every golden dry-run output (tests/data/golden/<example>.rules) is what the
# kernel takes and gives back:
#   - iptables-legacy-restore --test and iptables-nft-restore --test accept it;
#   - loaded for real with iptables-legacy-restore (and iptables-nft-restore),
#     iptables-legacy-save (and iptables-nft-save) print it back unchanged,
#     after normalising what legitimately differs: "#" header/footer lines,
#     counters, and the statistic probability (kube-proxy's 10 digits in the
#     dry-run, the kernel's fixed-point value with 11 digits in the save
#     output; both are compared as the kernel's u32, round(p * 2^31)).
#
# Needs root: each file is checked in a fresh network namespace (the script
# re-executes itself under `unshare -n`), so the host's tables are never
# touched.  Without root it exits 77 (SKIP) loudly; under CI=true that is a
# failure.  Reads via $top_srcdir, writes only to a temporary directory.

set -u

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
golden_dir=$top_srcdir/tests/data/golden

cant_run() {
	if [ "${CI:-}" = true ]; then
		echo "FAIL: $1 (required under CI)" >&2
		exit 1
	fi
	echo "*** SKIPPED: $1 ***" >&2
	exit 77
}

# Normalise iptables-save text (stdin) for comparison.
normalise() {
	awk '
	/^#/ { next }
	{
		sub(/^\[[0-9]+:[0-9]+\] /, "")
		if ($0 ~ /^:/)
			sub(/\[[0-9]+:[0-9]+\]$/, "[0:0]")
		out = ""
		s = $0
		while (match(s, /--probability [0-9.]+/)) {
			v = substr(s, RSTART + 14, RLENGTH - 14) + 0
			out = out substr(s, 1, RSTART - 1) \
				sprintf("--probability ~%.0f/2^31", v * 2147483648)
			s = substr(s, RSTART + RLENGTH)
		}
		print out s
	}'
}

# The saved text of the tables the golden file has, in its order.
saved() {
	for t in $(sed -n 's/^\*//p' "$2"); do
		"$1" -t "$t" || return 1
	done
}

# Inside the namespace: check one file.
check_one() {
	f=$1
	tmp=$2
	name=$(basename "$f" .rules)
	rc=0

	for v in legacy nft; do
		if ! "iptables-$v-restore" --test <"$f" 2>"$tmp/$name.$v-test.err"; then
			echo "FAIL: $name: iptables-$v-restore --test rejects it:" >&2
			cat "$tmp/$name.$v-test.err" >&2
			rc=1
		fi
	done
	normalise <"$f" >"$tmp/$name.want"
	for v in legacy nft; do
		if ! "iptables-$v-restore" <"$f" 2>"$tmp/$name.$v.err"; then
			echo "FAIL: $name: iptables-$v-restore fails to load it:" >&2
			cat "$tmp/$name.$v.err" >&2
			rc=1
			continue
		fi
		if ! saved "iptables-$v-save" "$f" >"$tmp/$name.$v.save" 2>"$tmp/$name.$v.err"; then
			echo "FAIL: $name: iptables-$v-save failed:" >&2
			cat "$tmp/$name.$v.err" >&2
			rc=1
			continue
		fi
		normalise <"$tmp/$name.$v.save" >"$tmp/$name.$v.got"
		if ! diff -u "$tmp/$name.want" "$tmp/$name.$v.got" >"$tmp/$name.$v.diff"; then
			echo "FAIL: $name: iptables-$v-save after loading differs from the dry-run:" >&2
			cat "$tmp/$name.$v.diff" >&2
			rc=1
		fi
	done
	[ $rc -eq 0 ] && echo "ok: $name: accepted by legacy and nft restore, saved back identical" \
		"($(grep -c '^-A' "$f") rules)"
	return $rc
}

if [ "${1:-}" = --in-netns ]; then
	check_one "$2" "$3"
	exit $?
fi

[ "$(id -u)" = 0 ] || cant_run "needs root (network namespaces, iptables)"
for tool in unshare iptables-legacy-restore iptables-legacy-save iptables-nft-restore iptables-nft-save; do
	command -v "$tool" >/dev/null 2>&1 || cant_run "needs $tool"
done
unshare -n true 2>/dev/null || cant_run "cannot create a network namespace (unshare -n)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/svcnat-restore.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM HUP

fail=0
n=0
for json in "$top_srcdir"/contrib/examples/*.json; do
	[ -e "$json" ] || continue
	f=$golden_dir/$(basename "$json" .json).rules
	if [ ! -f "$f" ]; then
		echo "FAIL: no golden file $f (tests/golden.sh creates it with REGEN=1)" >&2
		fail=1
		continue
	fi
	n=$((n + 1))
	# A fresh namespace per file: nothing left over from the previous one.
	unshare -n -- sh "$0" --in-netns "$f" "$tmp" || fail=1
done
if [ $n -eq 0 ]; then
	echo "FAIL: no golden files found under $golden_dir" >&2
	fail=1
fi
exit $fail
