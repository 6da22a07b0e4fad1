#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Run every libFuzzer harness (make fuzz builds them) for a bounded time,
# from its seed corpus tests/fuzz/<name>/ (read only: new inputs go to a
# scratch corpus).  Fails on any crash, leak, sanitizer report, timeout or
# oracle mismatch; the input that did it is kept under
# tests/fuzz/artifacts/ in the build tree (add it to the seed corpus as a
# regression case once fixed).  Prints each harness's executions and
# coverage.
# Usage: tests/fuzz/run.sh [SECONDS_EACH] [NAME...]   (default 45 s, all)
# FUZZ_SEED: libFuzzer's -seed (default 1, so that CI runs the same
# mutation sequence each time and a finding is not a matter of luck;
# 0 = a random seed, for exploring).
set -eu
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-.}
secs=${1:-${FUZZ_SECONDS:-45}}
seed=${FUZZ_SEED:-1}
[ $# -gt 0 ] && shift
names=${*:-decode parse etcdwire xtentry kubewire kubeconfig http kpconfig kubepb keepfile}
scratch=$(mktemp -d /tmp/svcnat-fuzz.XXXXXX)
trap 'rm -rf "$scratch"' EXIT INT TERM
keep=$top_builddir/tests/fuzz/artifacts
failed=

for h in $names; do
	bin=$top_builddir/tests/fuzz/fuzz-$h
	[ -x "$bin" ] || { echo "fuzz: $bin not built (make fuzz)" >&2; exit 1; }
	mkdir -p "$scratch/$h"
	log=$scratch/$h.log
	rc=0
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:symbolize=1 \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		"$bin" -seed="$seed" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$scratch/$h-" "$scratch/$h" "$top_srcdir/tests/fuzz/$h" \
		>"$log" 2>&1 || rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
	last=$(grep -E '^#[0-9]+.*cov:' "$log" | tail -n 1)
	cov=$(echo "$last" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
	ft=$(echo "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
	corp=$(echo "$last" | sed -n 's/.* corp: \([0-9]*\)\/.*/\1/p')
	if [ "$rc" != 0 ] || grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:' "$log"; then
		echo "fuzz-$h: FAILED (exit $rc) after ${execs:-?} executions:"
		grep -vE '^(INFO|#[0-9])' "$log" | head -n 60
		mkdir -p "$keep"
		for a in "$scratch/$h-"*; do
			[ -e "$a" ] && cp "$a" "$keep/" && echo "fuzz-$h: input kept as $keep/$(basename "$a")"
		done
		failed="$failed $h"
		continue
	fi
	echo "fuzz-$h: ok, $execs executions in ${secs}s ($rate/s), cov $cov, ft $ft, corpus $corp"
done
[ -z "$failed" ] || { echo "fuzz: failed:$failed"; exit 1; }
echo "fuzz: all harnesses ran ${secs}s each without a finding"
