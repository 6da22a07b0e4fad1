#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The HTTP servers under a flood, measured: tests/e2e/http-flood.sh (1,000
# slowloris + 1,000 idle connections from one client namespace, probes every
# 0.25 s from another) run with a build without sanitizers and a longer flood,
# printing each probe set's latency (p50, p99, max; the goal: every probe
# within 1 s) and the daemon's peak RSS.  Needs root (network namespaces).
#
#   contrib/bench/http-flood.sh [BUILDDIR] [SECONDS]
#   (BUILDDIR: a build without --enable-sanitizers; SECONDS per flood, default 30)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-.}" && pwd)
[ -x "$build/svcnat" ] || { echo "no svcnat in $build" >&2; exit 1; }
[ -x "$build/tests/e2e/namesrv" ] || { echo "no tests/e2e/namesrv in $build (make)" >&2; exit 1; }
SVCNAT=$build/svcnat top_builddir=$build top_srcdir=$here/../.. \
	HTTP_FLOOD_SECONDS=${2:-30} E2E_SCRIPT_TIMEOUT=900 \
	"$here/../../tests/e2e/http-flood.sh"
