#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The traffic tests again with svcnat's dispatch tree (--dispatch=tree,
# issue 13): ClusterIP, NodePort, externalIPs, LoadBalancer source ranges,
# no endpoints, session affinity, hairpin and traffic policy Local, every
# backend (SVCNAT_E2E_BACKENDS).  Each test's svcnat_sync checks that the
# kernel then holds KUBE-DSP- chains.  Skips (77) as the tests it runs do.
set -u
dir=$(dirname "$0")
rc=0
skipped=0
for t in clusterip nodeport externalip loadbalancer no-endpoints affinity hairpin local-policy; do
	echo "=== traffic-$t.sh with --dispatch=tree ==="
	SVCNAT_E2E_DISPATCH=tree bash "$dir/traffic-$t.sh"
	r=$?
	case $r in
	0) ;;
	77) skipped=$((skipped + 1)) ;;
	*) echo "FAIL: traffic-$t.sh with --dispatch=tree (exit $r)" >&2; rc=1 ;;
	esac
done
[ $rc -eq 0 ] && [ $skipped -eq 8 ] && exit 77
exit $rc
