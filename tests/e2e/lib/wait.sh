# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
#
# Bounded polling for the e2e tests (sourced by lib/topology.sh and
# lib/daemon-ns.sh; the sourcing script provides fail MSG).
#
#   wait_for SECONDS DESC CMD...  run CMD (output discarded) every 0.1 s until
#                     it succeeds, for at most SECONDS; else fail "DESC: not
#                     within SECONDSs" followed by what wait_for_context prints
#   wait_for_context  a test redefines it to add what helps to read a failure
#                     (the last probe, the daemon's log); by default nothing

wait_for_context() { :; }

wait_for() {
	local max=$1 desc=$2
	shift 2
	for _ in $(seq 1 $((max * 10))); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	fail "$desc: not within ${max}s$(wait_for_context)"
}
