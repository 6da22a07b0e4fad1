#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Both tables or neither, through svcnat itself (issue 11): a sync whose
# filter table differs from the kernel's and whose nat table the kernel
# refuses leaves both tables byte for byte as they were (counters aside),
# with --once and in the daemon, on every backend; the daemon's next sync,
# once the kernel takes it, lands.  The same for a refused ip6 nat table
# (run_backend6) on the backends that write ip6tables.
#
# The refusal is the kernel's own and needs nothing but iptables: another
# program's nat chain OTHER jumps to an endpoint chain (KUBE-SEP-) that
# svcnat keeps, emptied, while the endpoint is gone; POSTROUTING then
# jumps to OTHER.  When the endpoint comes back, its DNAT rule would be
# reachable from POSTROUTING, where DNAT is not allowed: x_tables and
# nf_tables refuse the nat table (EINVAL), after filter was written.

. "$(dirname "$0")/backend-common.sh"
bk_init "$@"
# shellcheck source=tests/e2e/lib/k8s.sh
. "$(dirname "$0")/lib/k8s.sh"
: "${SVCNAT:=$top_builddir/svcnat}"
[ -x "$SVCNAT" ] || fail "no svcnat at $SVCNAT"
ip link set lo up

CFG=$BK_TMP/cluster.json
ARGS=(--config "$CFG" --hostname node-a --node-ip 198.18.0.1 --cluster-cidr 198.18.64.0/18)

# web has 198.18.65.11 (A) or not (B); api has an endpoint (A) or none
# (B: filter REJECTs it).  So A and B differ in both tables.
write_cfg() {
	local web_eps api_eps
	if [ "$1" = A ]; then
		web_eps="198.18.65.10@node-a 198.18.65.11@node-a" api_eps="198.18.65.12@node-a"
	else
		web_eps="198.18.65.10@node-a" api_eps=""
	fi
	# shellcheck disable=SC2086
	k8s_list \
		"$(k8s_service e2e web '"type":"ClusterIP","clusterIP":"198.19.0.10","ports":[
			{"name":"http","protocol":"TCP","port":80,"targetPort":8080}]')" \
		"$(k8s_slice e2e web '[{"name":"http","protocol":"TCP","port":8080}]' $web_eps)" \
		"$(k8s_service e2e api '"type":"ClusterIP","clusterIP":"198.19.0.20","ports":[
			{"name":"http","protocol":"TCP","port":80,"targetPort":8080}]')" \
		"$(k8s_slice e2e api '[{"name":"http","protocol":"TCP","port":8080}]' $api_eps)" \
		>"$CFG.tmp"
	mv "$CFG.tmp" "$CFG"
}

# Both tables, counters stripped.
snapshot() {
	$SAVE | _bk_strip
}

# The plan's part of both tables equals what the kernel holds.
check_plan() {
	local t
	"$SVCNAT" --dry-run "${ARGS[@]}" >"$BK_TMP/dry" 2>/dev/null || fail "svcnat --dry-run failed"
	for t in filter nat; do
		sed -n "/^\\*$t\$/,/^COMMIT\$/p" "$BK_TMP/dry" | _bk_owned_filter >"$BK_TMP/plan.$t"
		bk_owned "$t" | diff -u "$BK_TMP/plan.$t" - >&2 ||
			fail "$BK_NAME: $1: the kernel does not hold the plan ($t)"
	done
}

run_backend() {
	local kind=$1 sep i
	bk_use "$1"
	bk_reset
	case $1 in
	restore-*) kind=restore ;;
	esac
	# The restore backend picks its tool by `iptables --version`.
	mkdir -p "$BK_TMP/bin"
	case $1 in
	restore-legacy) ln -sf "$(command -v iptables-legacy)" "$BK_TMP/bin/iptables" ;;
	*) ln -sf "$(command -v iptables-nft)" "$BK_TMP/bin/iptables" ;;
	esac
	local svcnat=(env "PATH=$BK_TMP/bin:$PATH" "$SVCNAT" --backend "$kind" "${ARGS[@]}")

	write_cfg A
	"${svcnat[@]}" --once 2>"$BK_TMP/err" || fail "$BK_NAME: --once A: $(cat "$BK_TMP/err")"
	sep=$("$SVCNAT" --dry-run "${ARGS[@]}" 2>/dev/null |
		sed -n 's/^-A \(KUBE-SEP-[A-Z0-9]*\) .*--to-destination 198.18.65.11:8080$/\1/p')
	[ -n "$sep" ] || fail "no endpoint chain for 198.18.65.11 in the plan"
	$IPT -t nat -N OTHER
	$IPT -t nat -A OTHER -s 198.18.1.7/32 -j "$sep"
	write_cfg B
	"${svcnat[@]}" --once 2>"$BK_TMP/err" || fail "$BK_NAME: --once B: $(cat "$BK_TMP/err")"
	$IPT -t nat -I POSTROUTING -s 198.18.1.7/32 -j OTHER
	$IPT -t filter -A INPUT -s 198.18.1.8/32 -c 5 500 -j ACCEPT
	snapshot >"$BK_TMP/before"
	$SAVE -c -t filter | grep -- '-s 198.18.1.8/32' >"$BK_TMP/counters"
	grep -q 'KUBE-SERVICES .*198.19.0.20/32.*REJECT' "$BK_TMP/before" ||
		fail "$BK_NAME: B has no REJECT for api: filter would not differ"

	# --once with A: nat refused, filter (which differs) put back.
	write_cfg A
	if "${svcnat[@]}" --once 2>"$BK_TMP/err"; then
		fail "$BK_NAME: --once A succeeded with DNAT reachable from POSTROUTING"
	fi
	snapshot | diff -u "$BK_TMP/before" - >&2 ||
		fail "$BK_NAME: --once: a refused nat table changed the tables: $(cat "$BK_TMP/err")"
	$SAVE -c -t filter | grep -- '-s 198.18.1.8/32' | diff -u "$BK_TMP/counters" - >&2 ||
		fail "$BK_NAME: --once: the counters of filter changed"
	grep -q 'the kernel keeps its previous rules' "$BK_TMP/err" ||
		fail "$BK_NAME: --once: no 'the kernel keeps its previous rules' in: $(cat "$BK_TMP/err")"
	# (nft sends both tables in one batch: the kernel refuses it whole.)
	[ "$1" = nft ] || grep -q 'filter: already written; put back as it was' "$BK_TMP/err" ||
		fail "$BK_NAME: --once: no put-back note in: $(cat "$BK_TMP/err")"
	echo "  --once: $(grep -m1 'error' "$BK_TMP/err")"

	# The daemon: the same refusal, then a sync that lands once the other
	# program's jump is gone.
	: >"$BK_TMP/daemon.log"
	timeout --kill-after=10 60 "${svcnat[@]}" --min-sync-period 100ms --v=2 \
		--healthz-bind-address 127.0.0.1:0 --metrics-bind-address 127.0.0.1:0 \
		</dev/null >>"$BK_TMP/daemon.log" 2>&1 &
	local daemon=$!
	for i in $(seq 1 100); do
		grep -q 'sync (initial) failed' "$BK_TMP/daemon.log" && break
		sleep 0.1
	done
	grep -q 'sync (initial) failed' "$BK_TMP/daemon.log" ||
		{ kill "$daemon"; fail "$BK_NAME: daemon: no failed sync: $(tail -n 20 "$BK_TMP/daemon.log")"; }
	grep -q 'the kernel keeps its previous rules' "$BK_TMP/daemon.log" ||
		{ kill "$daemon"; fail "$BK_NAME: daemon: $(tail -n 20 "$BK_TMP/daemon.log")"; }
	snapshot | diff -u "$BK_TMP/before" - >&2 ||
		{ kill "$daemon"; fail "$BK_NAME: daemon: a refused nat table changed the tables"; }
	$IPT -t nat -D POSTROUTING -s 198.18.1.7/32 -j OTHER
	for i in $(seq 1 150); do
		grep -q 'sync (retry):\|sync ([a-z]*): .* rules' "$BK_TMP/daemon.log" && break
		sleep 0.1
	done
	kill -TERM "$daemon"
	wait "$daemon" || true
	grep -q 'sync ([a-z]*): [0-9]* service ports' "$BK_TMP/daemon.log" ||
		fail "$BK_NAME: daemon: no sync landed after the refusal: $(tail -n 20 "$BK_TMP/daemon.log")"
	# (OTHER's jump would count as svcnat's in the comparison.)
	$IPT -t nat -F OTHER
	check_plan "daemon's sync after the refusal"
	echo "  daemon: $(grep -m1 'failed' "$BK_TMP/daemon.log"); then $(grep -m1 'service ports' "$BK_TMP/daemon.log" | cut -c1-60)..."
	"${svcnat[@]}" --cleanup 2>/dev/null || true
	$IPT -t nat -X OTHER
	echo "  ok"
}

# The same for a refused ip6 nat table (issue 14), on the backends that
# write ip6tables: a dual-stack sync whose filter, ip6 filter and nat
# tables differ from the kernel's and whose ip6 nat table the kernel
# refuses (another program's ip6tables chain makes an IPv6 endpoint's DNAT
# reachable from POSTROUTING) leaves all four tables as they were, counters
# kept; the tables written before the refusal are said to be put back; the
# next sync, once the other program's jump is gone, lands in all four.
write_cfg6() {
	local web_eps api_eps web6 api6
	if [ "$1" = A ]; then
		web_eps="198.18.65.10@node-a 198.18.65.11@node-a" api_eps="198.18.65.12@node-a"
		web6="2001:2:0:65::10@node-a 2001:2:0:65::11@node-a" api6="2001:2:0:65::12@node-a"
	else
		web_eps="198.18.65.10@node-a" api_eps="" web6="2001:2:0:65::10@node-a" api6=""
	fi
	# shellcheck disable=SC2086
	k8s_list \
		"$(k8s_service e2e web '"type":"ClusterIP","clusterIP":"198.19.0.10",
			"clusterIPs":["198.19.0.10","2001:2:0:f000::10"],"ipFamilies":["IPv4","IPv6"],
			"ipFamilyPolicy":"RequireDualStack","ports":[
			{"name":"http","protocol":"TCP","port":80,"targetPort":8080}]')" \
		"$(k8s_slice e2e web '[{"name":"http","protocol":"TCP","port":8080}]' $web_eps)" \
		"$(k8s_slice6 e2e web '[{"name":"http","protocol":"TCP","port":8080}]' $web6)" \
		"$(k8s_service e2e api '"type":"ClusterIP","clusterIP":"198.19.0.20",
			"clusterIPs":["198.19.0.20","2001:2:0:f000::20"],"ipFamilies":["IPv4","IPv6"],
			"ipFamilyPolicy":"RequireDualStack","ports":[
			{"name":"http","protocol":"TCP","port":80,"targetPort":8080}]')" \
		"$(k8s_slice e2e api '[{"name":"http","protocol":"TCP","port":8080}]' $api_eps)" \
		"$(k8s_slice6 e2e api '[{"name":"http","protocol":"TCP","port":8080}]' $api6)" \
		>"$CFG.tmp"
	mv "$CFG.tmp" "$CFG"
}

# All four tables, counters stripped.
snapshot6() {
	$SAVE | _bk_strip
	echo "# ip6tables"
	$SAVE6 | _bk_strip
}

run_backend6() {
	local kind=$1 sep t
	bk_use "$1"
	if ! bk_writes_ipv6 "$1"; then
		echo "  ip6tables: not written by $1 yet: not run"
		return 0
	fi
	bk_reset
	case $1 in
	restore-*) kind=restore ;;
	esac
	mkdir -p "$BK_TMP/bin"
	case $1 in
	restore-legacy) ln -sf "$(command -v iptables-legacy)" "$BK_TMP/bin/iptables" ;;
	*) ln -sf "$(command -v iptables-nft)" "$BK_TMP/bin/iptables" ;;
	esac
	local args6=("${ARGS[@]}" --node-ip 2001:2::1 --cluster-cidr 2001:2:0:100::/56)
	local svcnat=(env "PATH=$BK_TMP/bin:$PATH" "$SVCNAT" --backend "$kind" "${args6[@]}")

	write_cfg6 A
	"${svcnat[@]}" --once 2>"$BK_TMP/err" || fail "$BK_NAME: --once A (dual-stack): $(cat "$BK_TMP/err")"
	sep=$("$SVCNAT" --dry-run "${args6[@]}" 2>/dev/null |
		sed -n 's/^-A \(KUBE-SEP-[A-Z0-9]*\) .*--to-destination \[2001:2:0:65::11\]:8080$/\1/p')
	[ -n "$sep" ] || fail "no endpoint chain for 2001:2:0:65::11 in the plan"
	$IPT6 -t nat -N OTHER6
	$IPT6 -t nat -A OTHER6 -s 2001:2:1::7/128 -j "$sep"
	write_cfg6 B
	"${svcnat[@]}" --once 2>"$BK_TMP/err" || fail "$BK_NAME: --once B (dual-stack): $(cat "$BK_TMP/err")"
	$IPT6 -t nat -I POSTROUTING -s 2001:2:1::7/128 -j OTHER6
	$IPT -t filter -A INPUT -s 198.18.1.8/32 -c 5 500 -j ACCEPT
	$IPT6 -t filter -A INPUT -s 2001:2:1::8/128 -c 6 600 -j ACCEPT
	snapshot6 >"$BK_TMP/before6"
	{ $SAVE -c -t filter; $SAVE6 -c -t filter; } | grep -- '-s 198.18.1.8/32\|-s 2001:2:1::8/128' \
		>"$BK_TMP/counters6"
	grep -q 'KUBE-SERVICES .*198.19.0.20/32.*REJECT' "$BK_TMP/before6" ||
		fail "$BK_NAME: B has no REJECT for api: filter would not differ"
	grep -q 'KUBE-SERVICES .*2001:2:0:f000::20/128.*REJECT' "$BK_TMP/before6" ||
		fail "$BK_NAME: B has no IPv6 REJECT for api: ip6 filter would not differ"

	# --once with A: ip6 nat refused; filter and ip6 filter, which differ
	# and come before it, put back; nat, after it, never written.
	write_cfg6 A
	if "${svcnat[@]}" --once 2>"$BK_TMP/err"; then
		fail "$BK_NAME: --once A succeeded with DNAT reachable from ip6 POSTROUTING"
	fi
	snapshot6 | diff -u "$BK_TMP/before6" - >&2 ||
		fail "$BK_NAME: --once: a refused ip6 nat table changed the tables: $(cat "$BK_TMP/err")"
	{ $SAVE -c -t filter; $SAVE6 -c -t filter; } | grep -- '-s 198.18.1.8/32\|-s 2001:2:1::8/128' |
		diff -u "$BK_TMP/counters6" - >&2 || fail "$BK_NAME: --once: the counters of filter changed"
	# (restore names the tool that refused, not the table; nft the table
	# and chain of the message the kernel refused in its one batch.)
	grep -q 'libiptc: ip6 nat: committing the table failed\|direct: ip6 nat: replacing the table (IP6T_SO_SET_REPLACE) failed\|ip6tables-[a-z]*-restore: exit status\|nf_tables: ip6 nat: .* refused' \
		"$BK_TMP/err" || fail "$BK_NAME: --once: no ip6 nat refusal in: $(cat "$BK_TMP/err")"
	grep -q 'the kernel keeps its previous rules' "$BK_TMP/err" ||
		fail "$BK_NAME: --once: no 'the kernel keeps its previous rules' in: $(cat "$BK_TMP/err")"
	# nft sends all four tables in one batch: nothing to put back.
	if [ "$1" = nft ]; then
		grep -q 'the kernel applied none of the batch: every table keeps its previous rules' \
			"$BK_TMP/err" || fail "$BK_NAME: --once: no 'none of the batch' in: $(cat "$BK_TMP/err")"
	else
		grep -q 'ip6 filter: already written; put back as it was' "$BK_TMP/err" ||
			fail "$BK_NAME: --once: no ip6 filter put-back note in: $(cat "$BK_TMP/err")"
	fi
	# libiptc and direct commit table by table in the driver's order
	# (filter, ip6 filter, ip6 nat, nat); restore runs ip6tables-restore
	# before iptables-restore, so its IPv4 filter was never written.
	if [ "$1" = libiptc ] || [ "$1" = direct ]; then
		grep -q "$1: filter: already written; put back as it was" "$BK_TMP/err" ||
			fail "$BK_NAME: --once: no filter put-back note in: $(cat "$BK_TMP/err")"
	fi
	! grep -q '[^6] nat: already written' "$BK_TMP/err" ||
		fail "$BK_NAME: --once: nat written after the refused ip6 nat: $(cat "$BK_TMP/err")"
	echo "  --once (ip6 nat refused): $(grep -m1 'error' "$BK_TMP/err")"

	# The other program's jump gone, the same sync lands in all four.
	$IPT6 -t nat -D POSTROUTING -s 2001:2:1::7/128 -j OTHER6
	$IPT6 -t nat -F OTHER6
	"${svcnat[@]}" --once 2>"$BK_TMP/err" || fail "$BK_NAME: --once A after: $(cat "$BK_TMP/err")"
	"$SVCNAT" --dry-run "${args6[@]}" >"$BK_TMP/dry" 2>/dev/null || fail "svcnat --dry-run failed"
	dry_part 4 "$BK_TMP/dry" >"$BK_TMP/dry.4"
	dry_part 6 "$BK_TMP/dry" >"$BK_TMP/dry.6"
	for t in filter nat; do
		sed -n "/^\\*$t\$/,/^COMMIT\$/p" "$BK_TMP/dry.4" | _bk_owned_filter >"$BK_TMP/plan.$t"
		bk_owned "$t" | diff -u "$BK_TMP/plan.$t" - >&2 ||
			fail "$BK_NAME: the sync after the refusal: the kernel does not hold the plan ($t)"
		sed -n "/^\\*$t\$/,/^COMMIT\$/p" "$BK_TMP/dry.6" | _bk_owned_filter >"$BK_TMP/plan6.$t"
		[ -s "$BK_TMP/plan6.$t" ] || fail "the dry-run's ip6 $t view is empty"
		bk_owned6 "$t" | diff -u "$BK_TMP/plan6.$t" - >&2 ||
			fail "$BK_NAME: the sync after the refusal: the kernel does not hold the plan (ip6 $t)"
	done
	"${svcnat[@]}" --cleanup 2>/dev/null || true
	$IPT6 -t nat -X OTHER6
	echo "  ok (ip6 nat refused: all four tables as before; then all four written)"
}

bk_run run_backend run_backend6
