# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
#
# Sourced by tests/e2e/backend-*.sh: kernel-level tests of the two backends
# through tests/e2e/backend-driver.  Each script re-executes itself inside a
# fresh network namespace and mount namespace (unshare -n -m) with a private
# tmpfs on /run, so the iptables tables and the xtables lock it touches are
# its own; both vanish with the process, also on failure.
#
#   bk_init           root check, re-exec in the namespaces, temp dir, trap
#   bk_use BACKEND    libiptc | direct | restore-nft | restore-legacy | nft: sets DRV (the
#                     driver with the backend's flags), IPT and SAVE (the
#                     matching iptables tools), IPT6 and SAVE6 (ip6tables')
#   bk_writes_ipv6 BACKEND  whether svcnat --backend BACKEND writes ip6tables
#                     (BK_IPV6_BACKENDS; a writer adds its name with its IPv6 part)
#   bk_foreign        the save text without svcnat's chains and jump rules
#   bk_owned TABLE    svcnat's part of one table (declarations and rules),
#                     counters stripped, probabilities cut to 5 digits
#   bk_owned6 TABLE   the same of an ip6tables table
#   bk_plan TABLE SPEC  the same view of the driver's rendered plan
#   bk_run FN...      each FN BACKEND for every backend of $BK_BACKENDS (under
#                     set -e), then bk_reset and "PASS": a script's last line
#   fail MSG          print and exit 1
#   save_normalise, dry_part 4|6 FILE  from lib/savetext.sh

# shellcheck source=tests/e2e/lib/savetext.sh
. "$(dirname "$0")/lib/savetext.sh"

BK_BACKENDS=${BK_BACKENDS:-libiptc direct restore-nft restore-legacy nft}
BK_IPV6_BACKENDS=${BK_IPV6_BACKENDS:-libiptc direct restore-nft restore-legacy nft}
BK_OWNED_RE='KUBE-(SERVICES|NODEPORTS|POSTROUTING|MARK-MASQ|EXTERNAL-SERVICES|FORWARD|PROXY-FIREWALL|FIREWALL|(SVC|SVL|EXT|FW|SEP|XLB)-[A-Z0-9]+)'

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

bk_run() {
	local b fn
	set -e
	for b in $BK_BACKENDS; do
		for fn in "$@"; do
			"$fn" "$b"
		done
	done
	bk_reset
	echo "PASS"
}

bk_init() {
	if [ "$(id -u)" != 0 ]; then
		if [ "${CI:-}" = true ]; then
			echo "FAIL: $0 must run as root under CI" >&2
			exit 1
		fi
		echo "*** SKIPPED: $0 needs root (network namespaces, iptables) ***" >&2
		exit 77
	fi
	if [ -z "${BK_IN_NS:-}" ]; then
		export BK_IN_NS=1
		exec timeout 900 unshare -n -m bash "$0" "$@"
	fi
	mount -t tmpfs -o mode=0755 tmpfs /run || fail "cannot mount a private /run"
	: "${top_builddir:=$(cd "$(dirname "$0")/../.." && pwd)}"
	BK_DRIVER=${BK_DRIVER:-$top_builddir/tests/e2e/backend-driver}
	[ -x "$BK_DRIVER" ] || fail "no driver at $BK_DRIVER (make check builds it)"
	BK_TMP=$(mktemp -d)
	trap 'rm -rf "$BK_TMP"' EXIT
	# A fresh namespace has no tables until something asks for them.
	iptables-legacy -t nat -S >/dev/null 2>&1
	iptables-nft -t nat -S >/dev/null 2>&1
}

bk_use() {
	BK_NAME=$1
	case $1 in
	libiptc | direct)
		DRV="$BK_DRIVER --backend=$1"
		IPT="bk_quiet iptables-legacy" SAVE="bk_quiet iptables-legacy-save" ;;
	restore-nft)
		DRV="$BK_DRIVER --backend=restore --restore-cmd=iptables-nft-restore"
		IPT="bk_quiet iptables-nft" SAVE="bk_quiet iptables-nft-save" ;;
	restore-legacy)
		DRV="$BK_DRIVER --backend=restore --restore-cmd=iptables-legacy-restore"
		IPT="bk_quiet iptables-legacy" SAVE="bk_quiet iptables-legacy-save" ;;
	nft)
		DRV="$BK_DRIVER --backend=nft"
		IPT="bk_quiet iptables-nft" SAVE="bk_quiet iptables-nft-save" ;;
	*) fail "unknown backend $1" ;;
	esac
	IPT6=${IPT/iptables/ip6tables} SAVE6=${SAVE/iptables/ip6tables}
	echo "=== backend $1"
}

# Run an iptables tool without iptables-nft's note that legacy tables exist
# (this test has both on purpose).
bk_quiet() {
	local rc=0
	"$@" 2>"$BK_TMP/quiet.err" || rc=$?
	grep -v 'ip6\?tables-legacy tables present' "$BK_TMP/quiet.err" >&2 || true
	return $rc
}

bk_writes_ipv6() {
	case " $BK_IPV6_BACKENDS " in
	*" $1 "*) return 0 ;;
	esac
	return 1
}

# Remove every table's rules and chains of both iptables variants, IPv4
# and IPv6.
bk_reset() {
	local ipt t
	for ipt in iptables-legacy iptables-nft ip6tables-legacy ip6tables-nft; do
		for t in filter nat; do
			$ipt -t "$t" -F 2>/dev/null
			$ipt -t "$t" -X 2>/dev/null
		done
	done
}

_bk_strip() {
	grep -v '^#' | sed -e 's/ \[[0-9]*:[0-9]*\]$//'
}

# A rule line is svcnat's when its chain is owned, or when it is in a
# built-in chain and jumps to an owned chain.
bk_foreign() {
	$SAVE | _bk_strip | grep -Ev "^(:|-A )$BK_OWNED_RE( |\$)" |
		grep -Ev "^-A [A-Z]+ .*-[jg] $BK_OWNED_RE\$"
}

# Declarations sorted, then rules stably sorted by chain (iptables-nft-save
# lists chains in creation order, iptables-legacy-save by name).
_bk_owned_filter() {
	local in
	in=$(_bk_strip | grep -E "^((:|-A )$BK_OWNED_RE( |\$)|-A [A-Z]+ .*-[jg] $BK_OWNED_RE\$)" |
		sed -e 's/\(--probability [0-9]\.[0-9]\{5\}\)[0-9]*/\1/')
	printf '%s\n' "$in" | grep '^:' | LC_ALL=C sort
	printf '%s\n' "$in" | grep '^-A' | LC_ALL=C sort -s -t' ' -k2,2
}

bk_owned() {
	$SAVE -t "$1" | _bk_owned_filter
}

bk_owned6() {
	$SAVE6 -t "$1" | _bk_owned_filter
}

bk_plan() {
	$BK_DRIVER render "$2" | sed -n "/^\\*$1\$/,/^COMMIT\$/p" | _bk_owned_filter
}

# Count the lines of the live table equal to "-A CHAIN ARGS".
bk_count() {
	local table=$1 line=$2
	$SAVE -t "$table" | grep -cxF -- "$line"
}
