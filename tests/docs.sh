#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# README.md stays a landing page (under 250 lines) that links every
# document in docs/, and the links hold: every relative Markdown link or
# image in README.md and docs/*.md names a file that exists, every
# '"Section" in [file.md](file.md)' names a heading of that file, and every
# docs/NAME.md that the sources, the manual page, contrib/ or the tests name
# exists.
set -u

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$top_srcdir" || exit 1
bad=0
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; bad=1; }

n=$(wc -l < README.md)
[ "$n" -lt 250 ] || fail "README.md has $n lines (a landing page stays under 250: move text to docs/)"

for d in docs/*.md; do
	grep -q "]($d)" README.md || fail "README.md does not link $d"
done

# Relative link targets, per file: "](target)" with no scheme.
for f in README.md docs/*.md; do
	dir=$(dirname "$f")
	grep -o '](\([^)#]*\)[^)]*)' "$f" | sed 's/^](\([^)#]*\).*/\1/' | while read -r t; do
		case $t in
		'' | http://* | https://* | mailto:*) continue ;;
		esac
		[ -e "$dir/$t" ] || echo "$f: link to '$t': no such file"
	done
done > "$tmp/links" 2>&1
[ -s "$tmp/links" ] && fail "$(cat "$tmp/links")"

# '"Heading" in [x.md](x.md)': the heading is in x.md.
for f in README.md docs/*.md; do
	dir=$(dirname "$f")
	tr '\n' ' ' < "$f" | grep -o '"[^"]*" in \[[a-z/.-]*\.md\]' |
		sed 's/^"\([^"]*\)" in \[\([^]]*\)\]$/\1|\2/' | while IFS='|' read -r h t; do
			h=$(printf '%s' "$h" | tr -s ' ')
			grep -q "^##* $h\( (.*)\)\{0,1\}\$" "$dir/$t" 2>/dev/null ||
				grep -q "\*\*$h\.\*\*" "$dir/$t" 2>/dev/null ||
				echo "$f: \"$h\" is not a heading of $t"
		done
done > "$tmp/heads" 2>&1
[ -s "$tmp/heads" ] && fail "$(cat "$tmp/heads")"

for t in $(grep -rhoE 'docs/[a-z-]+\.md' src contrib tests/*.sh tests/unit tests/e2e Makefile.am \
	2>/dev/null | sort -u); do
	[ -f "$t" ] || fail "$t is named (grep -rn '$t' src contrib tests) but does not exist"
done

[ $bad = 0 ] || exit 1
echo "PASS: README.md ($n lines) and docs/ links hold"
