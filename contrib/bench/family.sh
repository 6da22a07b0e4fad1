#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# IPv6 and dual-stack against IPv4 (issue 14), every writer side by side in
# one run: the same generator (gen.py --family) at 10,000 x 10 IPv4 and
# IPv6-only, 5,000 x 10 IPv4 and dual-stack (about the 10,000 x 10 rule
# count, in two families).  For each config:
#   - --dry-run (resolve, plan, render; no kernel), REPS runs;
#   - for each backend in BACKENDS (default: every one of restore, libiptc,
#     direct, nft that writes ip6tables here, asked of svcnat itself with a
#     one-service IPv6 --once), a full --once sync into empty tables (each in
#     a fresh network namespace: unshare -n -m, a private /run), SYNC_REPS
#     runs (default REPS), and the rules the kernel then holds (iptables-save
#     plus ip6tables-save lines, of the flavour the backend writes).
# Prints one table: median (range) seconds per cell, then each backend's
# IPv6-only / IPv4 and dual-stack / IPv4-at-5,000 ratios.  Needs root for the
# syncs (without it only the dry-runs).  Short runs: on a shared machine take
# the figures as what they are (docs/performance.md says how they were measured).
#
#   [BACKENDS="restore libiptc ..."] [FLAVOUR=legacy|nft] [SYNC_REPS=N] [SIZE_DIV=N] \
#       contrib/bench/family.sh [BUILDDIR] [REPS]
#   (FLAVOUR: the tools the restore backend runs, legacy by default:
#   iptables-nft-restore took minutes a sync at 10,000 x 10; libiptc and
#   direct write legacy xtables, nft nf_tables)
#   (BUILDDIR: a build without --enable-sanitizers)
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-.}
reps=${2:-3}
svcnat=$build/svcnat
[ -x "$svcnat" ] || { echo "no svcnat in $build" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/svcnat-family.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
# svcnat's kept state (nft-*.keep) in $tmp, not in the host's /run/svcnat
export SVCNAT_RUNTIME_DIR=$tmp/run

v4=(--node-ip 198.18.0.1 --cluster-cidr 198.18.64.0/18)
v6=(--node-ip 2001:2::c612:1 --cluster-cidr 2001:2::c612:4000/114)
flavour=${FLAVOUR:-legacy}
mkdir -p "$tmp/bin" && ln -s "$(command -v "iptables-$flavour")" "$tmp/bin/iptables" &&
	PATH=$tmp/bin:$PATH

# median (range); of an even count, the mean of the two middle values
median() {
	sort -n | awk '{a[NR]=$1} END {m = NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2
		printf "%.2f (%.2f-%.2f)", m, a[1], a[NR]}'
}

secs() { # CMD...: wall seconds of CMD (its output discarded)
	local t0 t1
	t0=$(date +%s.%N)
	"$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; return 1; }
	t1=$(date +%s.%N)
	echo "$t1 - $t0" | bc
}

# save_flavour BACKEND: the iptables-*-save flavour that shows its rules
save_flavour() {
	case $1 in
	restore) echo "$flavour" ;;
	nft) echo nft ;;
	*) echo legacy ;;
	esac
}

# sync_once BACKEND CONFIG ARGS...: one --once into empty tables in a fresh
# namespace; prints "SECONDS RULES": the rules of both families it left, as
# iptables-save and ip6tables-save count them; for nft, whose save tools take
# minutes on such a table (iptables-nft-save at 10,000 x 10), the rules
# svcnat reports having planned for both families, with a "*"
sync_once() {
	local b=$1
	shift
	unshare -n -m bash -c '
		mount -t tmpfs tmpfs /run || exit 1
		sv=$1 b=$2 fl=$3 log=$(mktemp)
		shift 3
		t0=$(date +%s.%N)
		"$sv" --once -v --backend="$b" --hostname node-a --config "$@" >"$log" 2>&1 ||
			{ rm -f "$log"; exit 1; }
		t1=$(date +%s.%N)
		if [ "$b" = nft ]; then
			n=$(sed -n "s/.*synced .* chains, \([0-9]*\) rules;.*/\1/p; s/.*and IPv6 (ip6tables): .* chains, \([0-9]*\) rules.*/\1/p" "$log" |
				awk "{ s += \$1 } END { printf \"%d*\", s }")
		else
			n=$({ iptables-$fl-save; ip6tables-$fl-save; } 2>/dev/null | grep -c "^-A")
		fi
		rm -f "$log"
		echo "$(echo "$t1 - $t0" | bc) $n"' sh "$svcnat" "$b" "$(save_flavour "$b")" "$@"
}

# writes_ipv6 BACKEND: one IPv6 service --once lands in ip6tables
writes_ipv6() {
	local cfg=$tmp/probe6.json
	[ -s "$cfg" ] || python3 "$here/gen.py" -n 1 -m 1 --family ipv6 -o "$cfg" || return 1
	unshare -n -m bash -c 'mount -t tmpfs tmpfs /run &&
		"$0" --once --backend="$1" --hostname node-a --config "$2" --node-ip 2001:2::c612:1 \
			>/dev/null 2>&1 && ip6tables-$3-save -t nat 2>/dev/null | grep -q "^-A KUBE-SVC-"' \
		"$svcnat" "$1" "$cfg" "$(save_flavour "$1")"
}

backends=()
if [ -n "${BACKENDS:-}" ]; then
	read -ra backends <<<"$BACKENDS"
elif [ "$(id -u)" = 0 ]; then
	for b in restore libiptc direct nft; do
		if writes_ipv6 "$b"; then
			backends+=("$b")
		else
			echo "# $b: writes no ip6tables here, left out"
		fi
	done
fi
[ "$(id -u)" = 0 ] || backends=()

declare -A cell rules
configs=("10,000 x 10 IPv4" "10,000 x 10 IPv6-only" "5,000 x 10 IPv4" "5,000 x 10 dual-stack")

run() { # NAME N M FAMILY ARGS...
	local name=$1 n=$2 m=$3 fam=$4 cfg=$tmp/cfg.json b i out dry=() once=()
	shift 4
	# SIZE_DIV=N: every config N times smaller (a quick check of the script)
	python3 "$here/gen.py" -n $((n / ${SIZE_DIV:-1})) -m "$m" --family "$fam" -o "$cfg" || exit 1
	for ((i = 0; i < reps; i++)); do
		dry+=("$(secs "$svcnat" --dry-run --hostname node-a --config "$cfg" "$@")")
	done
	cell[$name,dry]=$(printf '%s\n' "${dry[@]}" | median)
	for b in "${backends[@]}"; do
		once=()
		for ((i = 0; i < ${SYNC_REPS:-$reps}; i++)); do
			out=$(sync_once "$b" "$cfg" "$@") || { echo "# $name: $b sync failed" >&2; out="nan 0"; }
			once+=("${out% *}")
			rules[$name,$b]=${out#* }
		done
		cell[$name,$b]=$(printf '%s\n' "${once[@]}" | median)
	done
	echo "# done: $name" >&2
}

echo "# svcnat $("$svcnat" --version 2>&1 | head -1); $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg) at start; dry-runs $reps, syncs ${SYNC_REPS:-$reps} each; restore flavour $flavour"
[ "${SIZE_DIV:-1}" = 1 ] || echo "# SIZE_DIV=$SIZE_DIV: every config $SIZE_DIV times fewer services than its name says"
run "${configs[0]}" 10000 10 ipv4 "${v4[@]}"
run "${configs[1]}" 10000 10 ipv6 "${v6[@]}"
run "${configs[2]}" 5000 10 ipv4 "${v4[@]}"
run "${configs[3]}" 5000 10 dual "${v4[@]}" "${v6[@]}"

printf '| config | --dry-run |'
for b in "${backends[@]}"; do printf ' full sync %s (%s) | rules |' "$b" "$(save_flavour "$b")"; done
printf '\n|---|---|'
for b in "${backends[@]}"; do printf -- '---|---|'; done
echo
for c in "${configs[@]}"; do
	printf '| %s | %s s |' "$c" "${cell[$c,dry]}"
	for b in "${backends[@]}"; do printf ' %s s | %s |' "${cell[$c,$b]}" "${rules[$c,$b]}"; done
	echo
done
# ratio A B: median A / median B
ratio() { awk -v a="${1%% *}" -v b="${2%% *}" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else printf "-" }'; }
echo
printf '| ratio | --dry-run |'
for b in "${backends[@]}"; do printf ' %s |' "$b"; done
printf '\n|---|---|'
for b in "${backends[@]}"; do printf -- '---|'; done
echo
printf '| IPv6-only / IPv4 at 10,000 x 10 | %s |' "$(ratio "${cell[${configs[1]},dry]}" "${cell[${configs[0]},dry]}")"
for b in "${backends[@]}"; do printf ' %s |' "$(ratio "${cell[${configs[1]},$b]}" "${cell[${configs[0]},$b]}")"; done
echo
printf '| dual-stack 5,000 / IPv4 10,000 (same rules) | %s |' "$(ratio "${cell[${configs[3]},dry]}" "${cell[${configs[0]},dry]}")"
for b in "${backends[@]}"; do printf ' %s |' "$(ratio "${cell[${configs[3]},$b]}" "${cell[${configs[0]},$b]}")"; done
echo
echo "# load $(cut -d' ' -f1-3 /proc/loadavg) at the end"
_in_backends() { local b; for b in "${backends[@]}"; do [ "$b" = "$1" ] && return 0; done; return 1; }
_in_backends nft && echo "# *: nft's rule count is svcnat's planned rules of both families (the save tools take minutes at this size)"
