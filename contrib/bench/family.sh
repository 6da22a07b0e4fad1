#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# IPv6 and dual-stack against IPv4 (issue 14): the same generator
# (gen.py --family) at 10,000 x 10 IPv4 and IPv6-only, 5,000 x 10 IPv4 and
# dual-stack (about the 10,000 x 10 rule count, in two families).  For each:
#   - --dry-run (resolve, plan, render; no kernel), REPS runs;
#   - a full --once sync with --backend=$BACKEND (default restore; libiptc,
#     direct, ...) into empty tables (each run in a fresh network namespace:
#     unshare -n -m, a private /run), REPS runs, and the rules the kernel
#     then holds (iptables-save + ip6tables-save).
# Prints the median and the range in seconds.  Needs root for the syncs
# (without it only the dry-runs).  Short runs: on a shared machine take the
# figures as what they are (the README says how they were measured).
#
#   [BACKEND=restore|libiptc|direct] [FLAVOUR=legacy|nft] [SYNC_REPS=N] \
#       contrib/bench/family.sh [BUILDDIR] [REPS]
#   (FLAVOUR also names the save tools that count the rules: legacy for
#   libiptc and direct)
#   (BUILDDIR: a build without --enable-sanitizers)
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-.}
reps=${2:-3}
svcnat=$build/svcnat
[ -x "$svcnat" ] || { echo "no svcnat in $build" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/svcnat-family.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

v4=(--node-ip 198.18.0.1 --cluster-cidr 198.18.64.0/18)
v6=(--node-ip 2001:2::c612:1 --cluster-cidr 2001:2::c612:4000/114)
# The restore writer takes the flavour `iptables --version` names; FLAVOUR=legacy
# (the default here: iptables-nft-restore took minutes a sync at 10,000 x 10)
# or nft picks it through an `iptables` on PATH.
flavour=${FLAVOUR:-legacy}
backend=${BACKEND:-restore}
mkdir -p "$tmp/bin" && ln -s "$(command -v "iptables-$flavour")" "$tmp/bin/iptables" &&
	PATH=$tmp/bin:$PATH

median() { sort -n | awk '{a[NR]=$1} END {printf "%.2f (%.2f-%.2f)", a[int((NR+1)/2)], a[1], a[NR]}'; }

secs() { # CMD...: wall seconds of CMD (its output discarded)
	local t0 t1
	t0=$(date +%s.%N)
	"$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; return 1; }
	t1=$(date +%s.%N)
	echo "$t1 - $t0" | bc
}

sync_once() { # CONFIG ARGS...: one --once into empty tables, in a namespace
	unshare -n -m sh -c 'mount -t tmpfs tmpfs /run && exec "$@"' sh \
		"$svcnat" --once --backend="$backend" --hostname node-a --config "$@"
}

rules_after() {
	unshare -n -m sh -c 'mount -t tmpfs tmpfs /run && "$0" --once --backend='"$backend"' --hostname node-a --config "$@" >/dev/null 2>&1 &&
		{ iptables-'$flavour'-save; ip6tables-'$flavour'-save; } | grep -c "^-A"' "$svcnat" "$@"
}

run() { # NAME N M FAMILY ARGS...
	local name=$1 n=$2 m=$3 fam=$4 cfg=$tmp/$1.json
	shift 4
	python3 "$here/gen.py" -n "$n" -m "$m" --family "$fam" -o "$cfg" || exit 1
	local dry=() once=() i
	for ((i = 0; i < reps; i++)); do
		dry+=("$(secs "$svcnat" --dry-run --hostname node-a --config "$cfg" "$@")")
	done
	printf '%-22s dry-run %s s' "$name" "$(printf '%s\n' "${dry[@]}" | median)"
	if [ "$(id -u)" = 0 ]; then
		for ((i = 0; i < ${SYNC_REPS:-$reps}; i++)); do
			once+=("$(secs sync_once "$cfg" "$@")")
		done
		printf '   full sync (%s, %s) %s s   %s rules' "$backend" "$flavour" \
			"$(printf '%s\n' "${once[@]}" | median)" "$(rules_after "$cfg" "$@")"
	fi
	echo
}

echo "svcnat $("$svcnat" --version 2>&1 | head -1); $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $reps runs each"
run "10,000 x 10 IPv4" 10000 10 ipv4 "${v4[@]}"
run "10,000 x 10 IPv6-only" 10000 10 ipv6 "${v6[@]}"
run "5,000 x 10 IPv4" 5000 10 ipv4 "${v4[@]}"
run "5,000 x 10 dual-stack" 5000 10 dual "${v4[@]}" "${v6[@]}"
