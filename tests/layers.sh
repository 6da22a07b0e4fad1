#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The folders are the architecture (STYLE.md section 1).  Fails, naming the
# file and the include, when
#  - a file includes a higher layer: svcnat.c -> cli -> daemon -> pipeline ->
#    sources | backend -> sources/net -> sys -> core, util.h (sources/ and
#    backend/ are siblings and include nothing of each other);
#  - includes go around a cycle, between files or between folders (a folder
#    is one module: sources/net including sources/etcd while sources/etcd
#    includes sources/net is a cycle).
#
# Usage: tests/layers.sh [SRCDIR]   (default: $top_srcdir/src, else ./src)
set -eu

src=${1:-${top_srcdir:-.}/src}
[ -d "$src/core" ] || { echo "layers.sh: no source tree at '$src'" >&2; exit 2; }
cd "$src"

files=$(find . -name '*.[ch]' | sed 's|^\./||' | LC_ALL=C sort)
# shellcheck disable=SC2086
awk -v list="$files" '
function dir(p) { return p ~ /\// ? substr(p, 1, match(p, /\/[^\/]*$/) - 1) : "" }
# The layer of a file, by folder; a file may include its own layer or lower.
function layer(p) {
	if (p ~ /^core\// || p == "util.h") return 0
	if (p ~ /^sys\//) return 1
	if (p ~ /^sources\/net\//) return 2
	if (p ~ /^sources\// || p ~ /^backend\//) return 3
	if (p ~ /^pipeline\//) return 4
	if (p ~ /^daemon\//) return 5
	if (p ~ /^cli\//) return 6
	if (p == "svcnat.c") return 7
	return -1
}
function family(p) { return p ~ /^sources\// ? "sources" : p ~ /^backend\// ? "backend" : "" }
# A folder is one module; a file at the top (svcnat.c, util.h) is its own.
function module(p) { if (dir(p) != "") return dir(p); sub(/\.[ch]$/, "", p); return p }
function edge(a, b) {
	if (a == b || (a, b) in seen) return
	seen[a, b] = 1
	out[a, ++nout[a]] = b
	nodes[a] = 1; nodes[b] = 1
}
# Depth-first search; a node met again while still on the stack closes a cycle.
function visit(m,    i, j, to, path) {
	colour[m] = 1
	stack[++depth] = m
	for (i = 1; i <= nout[m]; i++) {
		to = out[m, i]
		if (colour[to] == 1) {
			path = substr(to, 3)
			for (j = depth; j >= 1 && stack[j] != to; j--)
				path = substr(stack[j], 3) " -> " path
			print "layers.sh: include cycle: " substr(to, 3) " -> " path
			bad = 1
		} else if (!colour[to]) {
			visit(to)
		}
	}
	depth--
	colour[m] = 2
}
function check(f, inc,    lf, li) {
	lf = layer(f); li = layer(inc)
	if (lf < 0 || li < 0) {
		print "layers.sh: " (lf < 0 ? f : inc) ": in no layer (add its folder to tests/layers.sh)"
		bad = 1
	} else if (li > lf || (li == 3 && lf == 3 && family(f) != family(inc))) {
		print "layers.sh: " f ": includes \"" inc "\", a higher or sibling layer"
		bad = 1
	}
	edge("f:" f, "f:" inc)
	edge("m:" module(f), "m:" module(inc))
}
BEGIN {
	n = split(list, all, "\n")
	for (i = 1; i <= n; i++) have[all[i]] = 1
	for (i = 1; i <= n; i++) {
		f = all[i]
		while ((getline line < f) > 0) {
			if (line !~ /^[ \t]*#[ \t]*include[ \t]*"/) continue
			inc = line
			sub(/^[^"]*"/, "", inc); sub(/".*/, "", inc)
			# Quoted includes resolve against the including file'"'"'s folder first.
			if (dir(f) != "" && ((dir(f) "/" inc) in have)) inc = dir(f) "/" inc
			else if (!(inc in have)) continue   # config.h, a system header
			check(f, inc)
		}
		close(f)
	}
	for (m in nodes)
		if (!colour[m])
			visit(m)
	exit bad
}'
