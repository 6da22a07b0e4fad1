#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# make check: every harness over its seed corpus and kept regression
# inputs (tests/fuzz/<name>/), built without libFuzzer (tests/fuzz/replay.c).
set -eu
for h in decode parse etcdwire xtentry kubewire kubeconfig http kpconfig kubepb keepfile; do
	"$top_builddir/tests/fuzz/replay-$h" "$top_srcdir/tests/fuzz/$h"
done
