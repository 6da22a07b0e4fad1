#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The direct writer's ip6tables (issue 14), kernel level, on the shipped
# dual-stack example with the golden test's settings:
#   - after `svcnat --once --backend=direct`, ip6tables-legacy-save and
#     iptables-legacy-save print the dry-run's IPv6 and IPv4 parts (counters,
#     comment lines and the save tools' 11-digit probabilities aside), and
#     `--diff` finds nothing to do in either family;
#   - the bytes: every entry of the four tables (tests/e2e/xtdump: counters
#     and comefrom aside) equals what ip6tables-legacy-restore and
#     iptables-legacy-restore write for the dry-run's text in a fresh
#     namespace, jump offsets included; --diff shows a change in ip6 nat;
#   - tables the restore tools wrote from the dry-run's text (as kube-proxy
#     leaves them; also with --detect-local-mode=InterfaceNamePrefix, whose
#     "-i veth+" iptables stores with its "+") are what the direct writer
#     plans: its sync finds all four unchanged and writes nothing;
#   - another program's ip6tables rules (a chain, rules in built-in chains,
#     with packet counters) are identical through the sync, a second sync
#     (which writes nothing) and --cleanup, after which both ip6tables
#     tables hold exactly the bytes they held before svcnat ran;
#   - all four tables or none: the kernel refusing the ip6 nat table (DNAT
#     reachable from POSTROUTING through another program's chain) leaves
#     filter, ip6 filter, ip6 nat and nat as they were (counters of the
#     foreign rules too) with messages that say so; the same for a refused
#     nat table, after which both IPv6 tables are put back;
#   - --cleanup with --backend auto finds svcnat's chains in the legacy
#     ip6tables tables also where no legacy iptables table exists;
#   - EAGAIN: another program changing ip6 filter or ip6 nat between the
#     read and the replace (backend-driver --race) makes the kernel refuse
#     the replace; the tables committed before are put back, svcnat reads
#     and plans again, and the retry lands the plan beside the other
#     program's new rule.
# Every namespace is the test's own (backend-common.sh's re-exec).

. "$(dirname "$0")/backend-common.sh"
bk_init "$@"
# shellcheck source=tests/e2e/lib/k8s.sh
. "$(dirname "$0")/lib/k8s.sh"
: "${SVCNAT:=$top_builddir/svcnat}"
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
XTDUMP=${XTDUMP:-$top_builddir/tests/e2e/xtdump}
[ -x "$SVCNAT" ] || fail "no svcnat at $SVCNAT"
[ -x "$XTDUMP" ] || fail "no xtdump at $XTDUMP (make check builds it)"
command -v ip6tables-legacy-restore >/dev/null || fail "no ip6tables-legacy-restore"
ip link set lo up

EX=$top_srcdir/contrib/examples/dual-stack.json
# --nfacct off: the dry run is loaded by the restore tools into namespaces
# without kube-proxy's nfacct counters (auto would plan their matches).
SETTINGS=(--nfacct off --node-ip 198.18.0.1 --node-ip 2001:2::1 --hostname node-a
	--cluster-cidr 198.18.64.0/18,2001:2:0:100::/56)
IPT6="bk_quiet ip6tables-legacy" SAVE6="bk_quiet ip6tables-legacy-save"
IPT="bk_quiet iptables-legacy" SAVE="bk_quiet iptables-legacy-save"
T=$BK_TMP

# The four tables' entries, as xtdump prints them.
dump_all() {
	local t
	for t in filter nat; do
		echo "ip $t" && "$XTDUMP" 4 "$t" || return 1
		echo "ip6 $t" && "$XTDUMP" 6 "$t" || return 1
	done
}

# Both families' tables in the order of the dry-run (ip filter, ip nat,
# ip6 filter, ip6 nat), normalised.
saved_all() {
	{ $SAVE -t filter && $SAVE -t nat && $SAVE6 -t filter && $SAVE6 -t nat; } | save_normalise
}

flush_all() {
	local ipt t
	for ipt in iptables-legacy ip6tables-legacy; do
		for t in filter nat; do
			$ipt -t "$t" -F && $ipt -t "$t" -X
		done
	done
}

"$SVCNAT" --dry-run --config "$EX" "${SETTINGS[@]}" >"$T/dry" || fail "svcnat --dry-run failed"
grep -q '2001:2:0:f000::10/128' "$T/dry" || fail "the dry-run has no IPv6 part"
# The IPv4 part is the first two tables, the IPv6 part the rest.
awk '/^\*/ { n++ } { print > (n > 2 ? "'"$T"'/dry6" : "'"$T"'/dry4") }' "$T/dry"

echo "=== the dry-run's text, written by the legacy restore tools in a fresh namespace"
unshare -n sh -c 'iptables-legacy-restore <"$1" && ip6tables-legacy-restore <"$2" &&
	for t in filter nat; do
		echo "ip $t" && "$3" 4 "$t" && echo "ip6 $t" && "$3" 6 "$t" || exit 1
	done' sh "$T/dry4" "$T/dry6" "$XTDUMP" >"$T/restore.hex" 2>"$T/err" ||
	fail "the restore tools refused the dry-run: $(cat "$T/err")"

for extra in "" "--detect-local-mode=InterfaceNamePrefix --pod-interface-name-prefix veth"; do
	echo "=== tables the restore tools wrote${extra:+ ($extra)}: the direct writer leaves them be"
	# shellcheck disable=SC2086
	"$SVCNAT" --dry-run --config "$EX" "${SETTINGS[@]}" $extra >"$T/kp" || fail "--dry-run $extra"
	[ -z "$extra" ] || grep -q -- '-i veth+' "$T/kp" || fail "no '-i veth+' in the dry-run"
	awk '/^\*/ { n++ } { print > (n > 2 ? "'"$T"'/kp6" : "'"$T"'/kp4") }' "$T/kp"
	# shellcheck disable=SC2086
	unshare -n -m sh -c 'mount -t tmpfs tmpfs /run && iptables-legacy-restore <"$1" &&
		ip6tables-legacy-restore <"$2" && shift 2 && "$@"' sh "$T/kp4" "$T/kp6" \
		"$SVCNAT" --once -v --backend=direct --config "$EX" "${SETTINGS[@]}" $extra \
		>"$T/kp.out" 2>&1 || fail "the sync over the restore tools' tables: $(cat "$T/kp.out")"
	[ "$(grep -c 'direct: \(ip6 \)\?\(nat\|filter\): read .* unchanged$' "$T/kp.out")" = 4 ] ||
		fail "the direct writer rewrote what the restore tools wrote: $(grep 'direct:' "$T/kp.out")"
	echo "  all four tables unchanged"
done

echo "=== svcnat --once --backend=direct"
# Another program's rules first, with counters.
$IPT6 -t nat -N FOREIGN6
$IPT6 -t nat -A FOREIGN6 -i eth9 -j RETURN
$IPT6 -t nat -A PREROUTING -s 2001:2:1::99/128 -c 7 700 -j FOREIGN6
$IPT6 -t filter -A INPUT -s 2001:2:1::98/128 -p tcp -m tcp --dport 22 -c 5 500 -j ACCEPT
$IPT -t filter -A INPUT -s 198.18.1.8/32 -c 3 300 -j ACCEPT
dump_all >"$T/before.hex" || fail "xtdump failed"
{ $SAVE6 -c && $SAVE -c; } | grep -v '^#' >"$T/before.save"
"$SVCNAT" --once --backend=direct --config "$EX" "${SETTINGS[@]}" 2>"$T/err" ||
	fail "svcnat --once failed: $(cat "$T/err")"
grep -q 'ip6_tables\|IPv4 only\|iptables tables only' "$T/err" &&
	fail "the direct writer did not write IPv6: $(cat "$T/err")"

# The foreign rules (and their counters) are as they were.
foreign() {
	{ $SAVE6 -c && $SAVE -c; } | grep -v '^#' | grep -v 'KUBE-' |
		sed 's/^\(:[A-Z0-9-]* [A-Z-]*\) \[[0-9]*:[0-9]*\]$/\1/'
}
sed 's/^\(:[A-Z0-9-]* [A-Z-]*\) \[[0-9]*:[0-9]*\]$/\1/' "$T/before.save" >"$T/foreign.before"
foreign | diff -u "$T/foreign.before" - >&2 || fail "the sync changed another program's rules"

# With the foreign rules out of the way, the kernel holds the dry-run
# byte for byte.
$IPT6 -t nat -D PREROUTING -s 2001:2:1::99/128 -j FOREIGN6
$IPT6 -t nat -F FOREIGN6
$IPT6 -t nat -X FOREIGN6
$IPT6 -t filter -D INPUT -s 2001:2:1::98/128 -p tcp -m tcp --dport 22 -j ACCEPT
$IPT -t filter -D INPUT -s 198.18.1.8/32 -j ACCEPT
"$SVCNAT" --once --backend=direct --config "$EX" "${SETTINGS[@]}" 2>"$T/err" ||
	fail "svcnat --once failed: $(cat "$T/err")"
save_normalise <"$T/dry" >"$T/dry.norm"
saved_all | diff -u "$T/dry.norm" - >&2 ||
	fail "iptables-legacy-save / ip6tables-legacy-save differ from the dry-run"
echo "  the save tools print the dry-run (both families)"
dump_all >"$T/direct.hex" || fail "xtdump failed"
diff "$T/restore.hex" "$T/direct.hex" >"$T/hexdiff" ||
	fail "the direct writer's entries differ from the restore tools' ($(grep -c '^>' "$T/hexdiff") entries): $(head -c 600 "$T/hexdiff")"
echo "  byte for byte what iptables-/ip6tables-legacy-restore write ($(grep -vc '^ip' "$T/direct.hex") entries)"
"$SVCNAT" --dry-run --diff --backend=direct --config "$EX" "${SETTINGS[@]}" >"$T/diff" 2>&1 ||
	fail "--diff after the sync: $(cat "$T/diff")"
echo "  --diff: nothing to do"
# A rule of svcnat's gone from ip6 nat and one of another program's added
# to an owned chain: --diff says both, in the ip6tables part.
$IPT6 -t nat -D KUBE-SERVICES 1
$IPT6 -t nat -A KUBE-SVL-LAZP3OXVXH55PHB3 -j RETURN
if "$SVCNAT" --dry-run --diff --backend=direct --config "$EX" "${SETTINGS[@]}" >"$T/diff" 2>&1; then
	fail "--diff found nothing after two ip6 nat changes"
fi
sed -n '/^# ip6tables$/,$p' "$T/diff" >"$T/diff6"
grep -qx -- '+-A KUBE-SERVICES -d 2001:2:0:f000::80/128 -p tcp -m comment --comment "edge/gw:https cluster IP" -m tcp --dport 443 -j KUBE-SVC-LAZP3OXVXH55PHB3' "$T/diff6" &&
	grep -qx -- '--A KUBE-SVL-LAZP3OXVXH55PHB3 -j RETURN' "$T/diff6" ||
	fail "--diff does not show the ip6 nat changes: $(cat "$T/diff")"
"$SVCNAT" --once --backend=direct --config "$EX" "${SETTINGS[@]}" 2>"$T/err" ||
	fail "svcnat --once failed: $(cat "$T/err")"
echo "  --diff after two ip6 nat changes: both, in the ip6tables part"

echo "=== foreign ip6tables rules through a second sync and --cleanup"
flush_all
$IPT6 -t nat -N FOREIGN6
$IPT6 -t nat -A FOREIGN6 -i eth9 -j RETURN
$IPT6 -t nat -A PREROUTING -s 2001:2:1::99/128 -c 7 700 -j FOREIGN6
$IPT6 -t filter -A INPUT -s 2001:2:1::98/128 -p tcp -m tcp --dport 22 -c 5 500 -j ACCEPT
dump_all >"$T/before.hex" || fail "xtdump failed"
foreign >"$T/foreign.before"
for i in 1 2; do
	"$SVCNAT" --once --backend=direct -v --config "$EX" "${SETTINGS[@]}" 2>"$T/err.$i" ||
		fail "sync $i failed: $(cat "$T/err.$i")"
	foreign | diff -u "$T/foreign.before" - >&2 || fail "sync $i changed another program's rules"
done
grep -q 'ip6 nat.*unchanged' "$T/err.2" ||
	fail "the second sync rewrote ip6 nat: $(cat "$T/err.2")"
"$SVCNAT" --cleanup --backend=direct 2>"$T/err" || fail "--cleanup failed: $(cat "$T/err")"
# --cleanup leaves KUBE-FIREWALL and its jumps, as kube-proxy's does
# (kubelet shares the chain); take them out as kubelet would.
$SAVE6 | grep 'KUBE-' | grep -v 'KUBE-FIREWALL' && fail "svcnat's ip6tables chains left after --cleanup"
foreign | diff -u "$T/foreign.before" - >&2 || fail "--cleanup changed another program's rules"
for ipt in "$IPT" "$IPT6"; do
	$ipt -t filter -D INPUT -j KUBE-FIREWALL && $ipt -t filter -D OUTPUT -j KUBE-FIREWALL &&
		$ipt -t filter -F KUBE-FIREWALL && $ipt -t filter -X KUBE-FIREWALL ||
		fail "no KUBE-FIREWALL left by --cleanup"
done
dump_all >"$T/after.hex" || fail "xtdump failed"
diff -u "$T/before.hex" "$T/after.hex" >&2 ||
	fail "after --cleanup the tables are not byte for byte as before svcnat ran"
echo "  identical (counters too) through two syncs, and every byte back after --cleanup (KUBE-FIREWALL aside)"

# --- all four tables or none ---
# A config with the dual-stack service web, an endpoint per family that
# comes (A) and goes (B), and an IPv4 and an IPv6 service whose only
# endpoint does the same (B: filter and ip6 filter REJECT them).
CFG=$T/cluster.json
ARGS=(--config "$CFG" "${SETTINGS[@]}")
write_cfg() {
	local e4="198.18.65.10@node-a" e6="2001:2:0:101::10@node-a" a4="" a6=""
	if [ "$1" = A ]; then
		e4="$e4 198.18.65.11@node-a" e6="$e6 2001:2:0:101::11@node-a"
		a4="198.18.65.12@node-a" a6="2001:2:0:101::12@node-a"
	fi
	# shellcheck disable=SC2086
	k8s_list \
		"$(k8s_service e2e web '"type":"ClusterIP","clusterIP":"198.19.0.10",
			"clusterIPs":["198.19.0.10","2001:2:0:f000::10"],"ipFamilies":["IPv4","IPv6"],
			"ipFamilyPolicy":"RequireDualStack","ports":[
			{"name":"http","protocol":"TCP","port":80,"targetPort":8080}]')" \
		"$(k8s_slice e2e web '[{"name":"http","protocol":"TCP","port":8080}]' $e4)" \
		"$(k8s_slice6 e2e web '[{"name":"http","protocol":"TCP","port":8080}]' $e6)" \
		"$(k8s_service e2e api '"type":"ClusterIP","clusterIP":"198.19.0.20","ports":[
			{"name":"http","protocol":"TCP","port":80,"targetPort":8080}]')" \
		"$(k8s_slice e2e api '[{"name":"http","protocol":"TCP","port":8080}]' $a4)" \
		"$(k8s_service e2e api6 '"type":"ClusterIP","clusterIP":"2001:2:0:f000::20",
			"clusterIPs":["2001:2:0:f000::20"],"ipFamilies":["IPv6"],"ports":[
			{"name":"http","protocol":"TCP","port":80,"targetPort":8080}]')" \
		"$(k8s_slice6 e2e api6 '[{"name":"http","protocol":"TCP","port":8080}]' $a6)" \
		>"$CFG.tmp"
	mv "$CFG.tmp" "$CFG"
}

# All four tables, counters stripped.
snapshot() {
	{ $SAVE && $SAVE6; } | _bk_strip
}

# refused FAMILY: the nat table of FAMILY (4 or 6) refused by the kernel.
refused() {
	local fam=$1 ipt sep ep
	if [ "$fam" = 6 ]; then
		ipt=$IPT6 ep='\[2001:2:0:101::11\]:8080'
	else
		ipt=$IPT ep='198.18.65.11:8080'
	fi
	echo "=== the kernel refuses the $([ "$fam" = 6 ] && echo "ip6 ")nat table"
	flush_all
	write_cfg A
	"$SVCNAT" --once --backend=direct "${ARGS[@]}" 2>"$T/err" || fail "--once A: $(cat "$T/err")"
	sep=$("$SVCNAT" --dry-run "${ARGS[@]}" 2>/dev/null |
		sed -n "s/^-A \\(KUBE-SEP-[A-Z0-9]*\\) .*--to-destination $ep\$/\\1/p")
	[ -n "$sep" ] || fail "no endpoint chain for $ep in the plan"
	$ipt -t nat -N OTHER
	$ipt -t nat -A OTHER -i eth7 -j "$sep"
	write_cfg B
	"$SVCNAT" --once --backend=direct "${ARGS[@]}" 2>"$T/err" || fail "--once B: $(cat "$T/err")"
	$ipt -t nat -I POSTROUTING -o eth7 -j OTHER
	$IPT -t filter -A INPUT -s 198.18.1.8/32 -c 5 500 -j ACCEPT
	$IPT6 -t filter -A INPUT -s 2001:2:1::8/128 -c 6 600 -j ACCEPT
	snapshot >"$T/before"
	{ $SAVE -c -t filter && $SAVE6 -c -t filter; } | grep -- '-s 198.18.1.8/32\|-s 2001:2:1::8/128' >"$T/counters"
	grep -q 'KUBE-SERVICES .*198.19.0.20/32.*REJECT' "$T/before" &&
		grep -q 'KUBE-SERVICES .*2001:2:0:f000::20/128.*REJECT' "$T/before" ||
		fail "B has no REJECT for api and api6: the filter tables would not differ"

	write_cfg A
	if "$SVCNAT" --once --backend=direct "${ARGS[@]}" 2>"$T/err"; then
		fail "--once A succeeded with DNAT reachable from POSTROUTING"
	fi
	snapshot | diff -u "$T/before" - >&2 ||
		fail "a refused table changed the tables: $(cat "$T/err")"
	{ $SAVE -c -t filter && $SAVE6 -c -t filter; } | grep -- '-s 198.18.1.8/32\|-s 2001:2:1::8/128' |
		diff -u "$T/counters" - >&2 || fail "the counters of the filter tables changed"
	grep -q "$([ "$fam" = 6 ] && echo "ip6 nat: replacing the table (IP6T" ||
		echo "direct: nat: replacing the table (IPT")_SO_SET_REPLACE) failed" "$T/err" ||
		fail "no refusal named in: $(cat "$T/err")"
	grep -q 'the kernel keeps its previous rules' "$T/err" ||
		fail "no 'the kernel keeps its previous rules' in: $(cat "$T/err")"
	# Written before the refused table (the driver's order: filter, ip6
	# filter, ip6 nat, nat), so put back.
	grep -q ' filter: already written; put back as it was' "$T/err" &&
		grep -q 'ip6 filter: already written; put back as it was' "$T/err" ||
		fail "no put-back of filter and ip6 filter in: $(cat "$T/err")"
	if [ "$fam" = 4 ]; then
		grep -q 'ip6 nat: already written; put back as it was' "$T/err" ||
			fail "no put-back of ip6 nat in: $(cat "$T/err")"
	fi
	echo "  $(grep -m1 'error' "$T/err")"
	echo "  $(grep -c 'put back as it was' "$T/err") tables put back; all four as they were, counters too"
	# Once the other program's jump is gone, the sync lands.
	$ipt -t nat -D POSTROUTING -o eth7 -j OTHER
	"$SVCNAT" --once --backend=direct "${ARGS[@]}" 2>"$T/err" ||
		fail "--once A after the refusal: $(cat "$T/err")"
}

refused 6
refused 4
flush_all

echo "=== --cleanup (--backend auto) where only the ip6tables legacy tables exist"
unshare -n sh -c 'ip6tables-legacy-restore <"$1" && [ ! -s /proc/net/ip_tables_names ] &&
	"$2" --cleanup 2>"$3.err" && ip6tables-legacy-save | grep "KUBE-" | grep -v KUBE-FIREWALL' \
	sh "$T/dry6" "$SVCNAT" "$T/only6" >"$T/left" 2>&1
[ -s "$T/left" ] && fail "svcnat's ip6tables chains left: $(cat "$T/left" "$T/only6.err")"
grep -q 'error' "$T/only6.err" && fail "--cleanup: $(cat "$T/only6.err")"
echo "  removed"

# The driver takes its lock at a path of its own, so that the racing
# ip6tables-legacy (which takes /run/xtables.lock) does not wait for it.
for t in "ip6 filter" "ip6 nat"; do
	echo "=== another program changes $t while svcnat writes it"
	flush_all
	tbl=${t#ip6 }
	"$BK_DRIVER" --backend=direct --lock-path="$T/driver.lock" \
		"--race=$t=ip6tables-legacy -t $tbl -A OUTPUT -d 2001:2:1::77/128 -j ACCEPT" \
		apply "file:$T/dry" >"$T/out" 2>"$T/err" || fail "$t: the apply failed: $(cat "$T/err")"
	grep -q "^race: " "$T/err" || fail "$t: the race did not run: $(cat "$T/err")"
	grep -q "direct: $t: the table changed while svcnat wrote it; reading it again (retry 1 of 3)" \
		"$T/err" || fail "$t: no EAGAIN retry in: $(cat "$T/err")"
	$SAVE6 -t "$tbl" | grep -qx -- "-A OUTPUT -d 2001:2:1::77/128 -j ACCEPT" ||
		fail "$t: the other program's rule is gone"
	$IPT6 -t "$tbl" -D OUTPUT -d 2001:2:1::77/128 -j ACCEPT
	saved_all | diff -u "$T/dry.norm" - >&2 || fail "$t: after the retry the kernel does not hold the plan"
	echo "  $(grep -c 'put back as it was' "$T/err") table(s) put back, retried, the plan landed"
done
echo "PASS"
