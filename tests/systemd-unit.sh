#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# contrib/svcnat.service.in, as `make install` installs it (sbindir
# substituted, here the built binary): `systemd-analyze verify` takes it
# without a word, and it has what the daemon relies on: Type=notify (READY=1
# after the first sync, WATCHDOG=1), kube-proxy's OOMScoreAdjust=-999, no
# restart on exit 2 (bad configuration).  Skips (77) without systemd-analyze
# (contrib/install-deps installs Debian's systemd, which has it).
set -u

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
SVCNAT=${SVCNAT:-${top_builddir:-.}/svcnat}
fail() { echo "FAIL: $*" >&2; exit 1; }
if ! command -v systemd-analyze >/dev/null 2>&1; then
	[ "${CI:-}" = true ] && fail "systemd-analyze missing (contrib/install-deps installs systemd)"
	echo "SKIP: systemd-analyze not installed" >&2
	exit 77
fi
[ -x "$SVCNAT" ] || fail "svcnat binary not found at '$SVCNAT' (set SVCNAT)"
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
bin=$(cd "$(dirname "$SVCNAT")" && pwd)
sed -e "s|@sbindir[@]|$bin|g" "$top_srcdir/contrib/svcnat.service.in" >"$tmp/svcnat.service"
# ExecStart must name the binary by its file name.
[ "$(basename "$SVCNAT")" = svcnat ] || fail "the binary is not named svcnat: $SVCNAT"

systemd-analyze verify --man=no "$tmp/svcnat.service" >"$tmp/out" 2>&1 ||
	fail "systemd-analyze verify exited $?: $(cat "$tmp/out")"
# It exits 0 on unknown keys and bad values too, printing them: nothing may be printed.
[ ! -s "$tmp/out" ] || fail "systemd-analyze verify: $(cat "$tmp/out")"
for want in Type=notify NotifyAccess=main OOMScoreAdjust=-999 RestartPreventExitStatus=2 \
	'WatchdogSec=' "ExecStart=$bin/svcnat"; do
	grep -q "^$want" "$tmp/svcnat.service" || fail "the unit lacks $want"
done
echo "PASS: systemd-analyze verify svcnat.service"
