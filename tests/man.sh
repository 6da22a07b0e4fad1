#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# contrib/svcnat.8 is clean under `mandoc -Tlint` (not even style
# messages), its .TH date parses, and it has the sections a reader of a
# kube-proxy replacement needs (FILES, METRICS, EXIT STATUS).  Skips (77)
# without mandoc (contrib/install-deps installs it).
set -u

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
man=$top_srcdir/contrib/svcnat.8
fail() { echo "FAIL: $*" >&2; exit 1; }
if ! command -v mandoc >/dev/null 2>&1; then
	[ "${CI:-}" = true ] && fail "mandoc missing (contrib/install-deps installs it)"
	echo "SKIP: mandoc not installed" >&2
	exit 77
fi
out=$(mandoc -Tlint -W style "$man" 2>&1)
[ -z "$out" ] || fail "mandoc -Tlint -W style: $out"
date=$(sed -n 's/^\.TH [^ ]* [^ ]* "\([^"]*\)".*/\1/p' "$man")
case $date in
[A-Z][a-z]*" "[0-9]*", "[0-9][0-9][0-9][0-9]) ;;
[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]) ;;
*) fail ".TH date '$date' is not a date mandoc parses (Month D, YYYY or YYYY-MM-DD)" ;;
esac
for s in FILES METRICS "EXIT STATUS" "KUBE-PROXY COMPATIBILITY"; do
	grep -q "^\.SH \"*$s\"*\$" "$man" || fail "no $s section"
done
echo "PASS: svcnat(8) lint-clean"
