#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Files small, functions short (STYLE.md section 10).  Fails, naming the
# file and its line count, when
#  - a src/**/*.c file is over 1,000 lines, except the cohesive algorithm
#    files core/parse.c, core/planstore.c, core/merge.c and backend/direct.c;
#  - a function is over 100 lines, except the tables allowed below.  A
#    function runs from the line at column 0 that starts its definition
#    (its name and an opening parenthesis, no ';' after it) to its closing
#    '}' at column 0, both counted.
#
# Usage: tests/limits.sh SRCDIR       check the tree at SRCDIR
#        tests/limits.sh --self-check  check that the check fails on copies
#                                      of the tree with one file or one
#                                      function made too long
#        tests/limits.sh               both, on $top_srcdir/src (else ./src):
#                                      what make check runs
set -eu

FILE_MAX=1000
FUNC_MAX=100
# Files allowed past FILE_MAX: cohesive algorithm files (one concern, two
# halves would only call each other).
LONG_FILES="core/parse.c core/planstore.c core/merge.c backend/direct.c"
# Functions allowed past FUNC_MAX, as FILE:FUNCTION, each a table (one
# entry per line, no logic to split).  None today.
TABLE_FUNCS=""

check_tree() {
	src=$1
	[ -d "$src/core" ] || { echo "limits.sh: no source tree at '$src'" >&2; return 2; }
	(
	cd "$src"
	files=$(find . -name '*.c' | sed 's|^\./||' | LC_ALL=C sort)
	# shellcheck disable=SC2086
	awk -v long_files="$LONG_FILES" -v tables="$TABLE_FUNCS" \
	    -v file_max="$FILE_MAX" -v func_max="$FUNC_MAX" '
	BEGIN {
		n = split(long_files, a, " "); for (i = 1; i <= n; i++) longok[a[i]] = 1
		n = split(tables, a, " "); for (i = 1; i <= n; i++) tableok[a[i]] = 1
	}
	FNR == 1 {
		if (prev != "") done_file()
		prev = FILENAME; head = 0; body = 0
	}
	{ lines[FILENAME] = FNR }
	# A definition starts at column 0: a name followed by "(", not a
	# declaration (";"), a preprocessor line, a comment or a brace.
	!body && /^[A-Za-z_][A-Za-z0-9_ \t*,]*\(/ && !/;[ \t]*$/ && !/^(typedef|struct [A-Za-z_0-9]+ \{|enum|union)/ {
		head = FNR; name = $0
		sub(/\(.*/, "", name); sub(/.*[ \t*]/, "", name)
	}
	head && !body && /;[ \t]*$/ { head = 0 }
	head && !body && /^\{/ { body = 1; next }
	body && /^\}/ {
		len = FNR - head + 1
		if (len > func_max && !((FILENAME ":" name) in tableok)) {
			print "limits.sh: " FILENAME ":" head ": function " name "() is " len " lines (limit " func_max ")"
			bad = 1
		}
		body = 0; head = 0
	}
	function done_file() {
		if (lines[prev] > file_max && !(prev in longok)) {
			print "limits.sh: " prev ": " lines[prev] " lines (limit " file_max ")"
			bad = 1
		}
	}
	END { if (prev != "") done_file(); exit bad }
	' $files
	)
}

self_check() {
	top=${top_srcdir:-.}
	[ -d "$top/src/core" ] || { echo "limits.sh: no source tree at '$top/src'" >&2; exit 2; }
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	cp -R "$top/src" "$tmp/ok"
	check_tree "$tmp/ok" >"$tmp/out" || { cat "$tmp/out"; echo "limits.sh: self-check: today's tree fails"; exit 1; }

	# One file made too long: a short file padded past the limit with comments.
	cp -R "$tmp/ok" "$tmp/file"
	awk 'BEGIN { for (i = 0; i < 1001; i++) print "/* pad */" }' >>"$tmp/file/svcnat.c"
	if check_tree "$tmp/file" >"$tmp/out"; then
		echo "limits.sh: self-check: a 1,000+ line svcnat.c passed"; exit 1
	fi
	grep -q '^limits.sh: svcnat.c: [0-9]* lines (limit 1000)$' "$tmp/out" ||
		{ cat "$tmp/out"; echo "limits.sh: self-check: svcnat.c not named"; exit 1; }
	# A long file that is allowed stays allowed.
	cp -R "$tmp/ok" "$tmp/allowed"
	awk 'BEGIN { for (i = 0; i < 1001; i++) print "/* pad */" }' >>"$tmp/allowed/core/merge.c"
	check_tree "$tmp/allowed" >"$tmp/out" ||
		{ cat "$tmp/out"; echo "limits.sh: self-check: core/merge.c is allowed"; exit 1; }

	# One function made too long: 101 lines from its head to its brace.
	cp -R "$tmp/ok" "$tmp/func"
	{
		printf 'static int limits_long(int x)\n{\n'
		awk 'BEGIN { for (i = 0; i < 98; i++) print "\tx++;" }'
		printf '}\n'
	} >>"$tmp/func/svcnat.c"
	if check_tree "$tmp/func" >"$tmp/out"; then
		echo "limits.sh: self-check: a 101-line function passed"; exit 1
	fi
	grep -q '^limits.sh: svcnat.c:[0-9]*: function limits_long() is 101 lines (limit 100)$' "$tmp/out" ||
		{ cat "$tmp/out"; echo "limits.sh: self-check: limits_long() not named"; exit 1; }
	# Exactly 100 lines, and a head split over two lines, pass.
	cp -R "$tmp/ok" "$tmp/edge"
	{
		printf 'static int limits_edge(int x,\n\t\t       int y)\n{\n'
		awk 'BEGIN { for (i = 0; i < 96; i++) print "\tx++;" }'
		printf '}\n'
	} >>"$tmp/edge/svcnat.c"
	check_tree "$tmp/edge" >"$tmp/out" ||
		{ cat "$tmp/out"; echo "limits.sh: self-check: a 100-line function failed"; exit 1; }
	echo "limits.sh: self-check passed"
}

case ${1:-} in
--self-check) self_check ;;
'') check_tree "${top_srcdir:-.}/src" && self_check ;;
*) check_tree "$1" ;;
esac
