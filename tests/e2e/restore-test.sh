#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Every golden dry-run output (tests/data/golden/<example>.rules) is what the
# kernel takes and gives back, its iptables part with the iptables tools and
# its ip6tables part (a dual-stack example's second half) with ip6tables':
#   - iptables-legacy-restore --test and iptables-nft-restore --test accept it;
#   - loaded for real with iptables-legacy-restore (and iptables-nft-restore),
#     iptables-legacy-save (and iptables-nft-save) print it back unchanged,
#     after normalising what legitimately differs: "#" header/footer lines,
#     counters, and the statistic probability (kube-proxy's 10 digits in the
#     dry-run, the kernel's fixed-point value with 11 digits in the save
#     output; both are compared as the kernel's u32, round(p * 2^31)).
#
# The same for svcnat's dispatch tree (issue 13): each example's dry-run with
# --dispatch=tree, and 2,000 generated services (contrib/bench/gen.py, when
# python3 is there) with --dispatch=auto, which is the tree there
# (KUBE-DSP- chains over address and port ranges, several levels deep).
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

# Split a dry-run (stdin) into its iptables part ($1.4) and its ip6tables
# part ($1.6, empty when none): a "*filter" after a "*nat" starts the second.
split_families() {
	awk -v o4="$1.4" -v o6="$1.6" '
	BEGIN { out = o4; printf "" > o6 }
	/^\*nat$/ { seen_nat = 1 }
	/^\*filter$/ && seen_nat { out = o6 }
	{ print > out }'
}

# Inside the namespace: check one family's part ($3: "" or 6).
check_part() {
	f=$1
	tmp=$2
	fam=$3
	name=$(basename "$f" .rules)${fam:+.ipv6}
	rc=0

	for v in legacy nft; do
		if ! "ip${fam}tables-$v-restore" --test <"$f" 2>"$tmp/$name.$v-test.err"; then
			echo "FAIL: $name: ip${fam}tables-$v-restore --test rejects it:" >&2
			cat "$tmp/$name.$v-test.err" >&2
			rc=1
		fi
	done
	normalise <"$f" >"$tmp/$name.want"
	for v in legacy nft; do
		if ! "ip${fam}tables-$v-restore" <"$f" 2>"$tmp/$name.$v.err"; then
			echo "FAIL: $name: ip${fam}tables-$v-restore fails to load it:" >&2
			cat "$tmp/$name.$v.err" >&2
			rc=1
			continue
		fi
		if ! saved "ip${fam}tables-$v-save" "$f" >"$tmp/$name.$v.save" 2>"$tmp/$name.$v.err"; then
			echo "FAIL: $name: ip${fam}tables-$v-save failed:" >&2
			cat "$tmp/$name.$v.err" >&2
			rc=1
			continue
		fi
		normalise <"$tmp/$name.$v.save" >"$tmp/$name.$v.got"
		if ! diff -u "$tmp/$name.want" "$tmp/$name.$v.got" >"$tmp/$name.$v.diff"; then
			echo "FAIL: $name: ip${fam}tables-$v-save after loading differs from the dry-run:" >&2
			cat "$tmp/$name.$v.diff" >&2
			rc=1
		fi
	done
	[ $rc -eq 0 ] && echo "ok: $name: accepted by legacy and nft restore, saved back identical" \
		"($(grep -c '^-A' "$f") rules)"
	return $rc
}

# Inside the namespace: check one file, each family's part with its tools.
check_one() {
	base=$2/$(basename "$1" .rules).part
	split_families "$base" <"$1"
	cp "$base.4" "$base.4.rules"
	rc=0
	check_part "$base.4.rules" "$2" "" || rc=1
	if [ -s "$base.6" ]; then
		cp "$base.6" "$base.6.rules"
		check_part "$base.6.rules" "$2" 6 || rc=1
	fi
	return $rc
}

if [ "${1:-}" = --in-netns ]; then
	check_one "$2" "$3"
	exit $?
fi

[ "$(id -u)" = 0 ] || cant_run "needs root (network namespaces, iptables)"
for tool in unshare iptables-legacy-restore iptables-legacy-save iptables-nft-restore \
	iptables-nft-save ip6tables-legacy-restore ip6tables-legacy-save ip6tables-nft-restore \
	ip6tables-nft-save; do
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
# The tree layout: generated by this build's svcnat (make check sets SVCNAT).
SVCNAT=${SVCNAT:-${top_builddir:-.}/svcnat}
settings="--node-ip 198.18.0.1 --node-ip 2001:2::1 --hostname node-a --cluster-cidr 198.18.64.0/18,2001:2:0:100::/56"
if [ ! -x "$SVCNAT" ]; then
	echo "FAIL: svcnat binary not found at '$SVCNAT' (set SVCNAT)" >&2
	fail=1
else
	for json in "$top_srcdir"/contrib/examples/*.json; do
		[ -e "$json" ] || continue
		f=$tmp/$(basename "$json" .json).tree.rules
		# shellcheck disable=SC2086 # settings is a word list on purpose
		if ! "$SVCNAT" --dry-run --dispatch=tree --config "$json" $settings >"$f"; then
			echo "FAIL: svcnat --dry-run --dispatch=tree --config $json failed" >&2
			fail=1
			continue
		fi
		grep -q '^:KUBE-DSP-' "$f" || { echo "FAIL: $f: no tree chains" >&2; fail=1; }
		unshare -n -- sh "$0" --in-netns "$f" "$tmp" || fail=1
	done
	if command -v python3 >/dev/null 2>&1; then
		f=$tmp/generated-2000.tree.rules
		# shellcheck disable=SC2086
		if python3 "$top_srcdir/contrib/bench/gen.py" -n 2000 -m 2 -o "$tmp/gen.json" &&
			"$SVCNAT" --dry-run --dispatch=auto --config "$tmp/gen.json" $settings >"$f"; then
			[ "$(grep -c '^:KUBE-DSP-' "$f")" -gt 20 ] ||
				{ echo "FAIL: $f: the auto layout made no tree" >&2; fail=1; }
			unshare -n -- sh "$0" --in-netns "$f" "$tmp" || fail=1
		else
			echo "FAIL: generating or planning 2,000 services failed" >&2
			fail=1
		fi
	else
		echo "note: no python3: the generated 2,000-service tree is not checked" >&2
	fi
fi
if [ $n -eq 0 ]; then
	echo "FAIL: no golden files found under $golden_dir" >&2
	fail=1
fi
exit $fail
