#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# svcnat runs itself once more with GLIBC_TUNABLES=glibc.malloc.hugetlb=1
# (malloc's heap on transparent huge pages; see heap_hugepages() in
# src/svcnat.c), says so at -v, prints the same rules either way, and leaves
# a GLIBC_TUNABLES of the user's (or SVCNAT_NO_REEXEC) alone.
#
# Environment (make check sets it): SVCNAT (the binary), top_srcdir.
# Needs no root, no kernel access; writes only to a temporary directory.

set -u

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
SVCNAT=${SVCNAT:-${top_builddir:-.}/svcnat}
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
run() { # NAME [VAR=VALUE...]: dry-run of the shipped example at -v
	name=$1
	shift
	env "$@" "$SVCNAT" -v --dry-run --config "$top_srcdir/contrib/examples/cluster.json" \
		--node-ip 198.18.0.1 --hostname node-a --cluster-cidr 198.18.64.0/18 \
		>"$tmp/$name.out" 2>"$tmp/$name.err" || fail "$name: svcnat exited $?: $(cat "$tmp/$name.err")"
}

[ -x "$SVCNAT" ] || fail "svcnat binary not found at '$SVCNAT' (set SVCNAT)"
MSG='heap on transparent huge pages (GLIBC_TUNABLES=glibc.malloc.hugetlb=1)'
run default -u GLIBC_TUNABLES -u SVCNAT_NO_REEXEC
grep -qF "$MSG" "$tmp/default.err" || fail "no re-execution with the tunable: $(cat "$tmp/default.err")"
run optout -u GLIBC_TUNABLES SVCNAT_NO_REEXEC=1
! grep -qF "$MSG" "$tmp/optout.err" || fail "SVCNAT_NO_REEXEC=1 did not stop the re-execution"
run user -u SVCNAT_NO_REEXEC GLIBC_TUNABLES=glibc.malloc.check=0
! grep -qF "$MSG" "$tmp/user.err" || fail "the user's GLIBC_TUNABLES was overridden"
cmp -s "$tmp/default.out" "$tmp/optout.out" && cmp -s "$tmp/default.out" "$tmp/user.out" ||
	fail "the rules differ with and without the re-execution"
[ -s "$tmp/default.out" ] || fail "no rules printed"

# The tunable is svcnat's own: the programs it runs do not get it (a user's
# GLIBC_TUNABLES they do).  As root, in a network namespace of its own,
# with stand-ins for iptables that record their environment.
if [ "$(id -u)" = 0 ] && unshare -n true 2>/dev/null; then
	mkdir "$tmp/bin"
	printf '#!/bin/sh\nenv >"$FK_DIR/env.iptables"\necho "iptables v1.8.9 (nf_tables)"\n' \
		>"$tmp/bin/iptables"
	printf '#!/bin/sh\nenv >"$FK_DIR/env.save"\n' >"$tmp/bin/iptables-nft-save"
	printf '#!/bin/sh\nenv >"$FK_DIR/env.restore"\ncat >/dev/null\n' >"$tmp/bin/iptables-nft-restore"
	chmod +x "$tmp/bin/"*
	once() {
		FK_DIR=$tmp PATH=$tmp/bin:$PATH unshare -n env "$@" "$SVCNAT" --once --backend restore \
			--config "$top_srcdir/contrib/examples/cluster.json" --node-ip 198.18.0.1 \
			--hostname node-a >"$tmp/once.log" 2>&1 || fail "svcnat --once: $(cat "$tmp/once.log")"
		[ -s "$tmp/env.restore" ] || fail "svcnat --once did not run the stand-in restore"
	}
	once -u GLIBC_TUNABLES -u SVCNAT_NO_REEXEC
	! grep -q 'GLIBC_TUNABLES\|SVCNAT_REEXECED' "$tmp"/env.* ||
		fail "svcnat handed its tunable on: $(grep -h 'GLIBC_TUNABLES\|SVCNAT_REEXECED' "$tmp"/env.*)"
	rm -f "$tmp"/env.*
	once -u SVCNAT_NO_REEXEC GLIBC_TUNABLES=glibc.malloc.check=0
	grep -qx 'GLIBC_TUNABLES=glibc.malloc.check=0' "$tmp/env.restore" ||
		fail "the user's GLIBC_TUNABLES did not reach the programs svcnat runs"
fi
echo "PASS: reexec"
