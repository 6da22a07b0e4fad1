#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Regenerate this directory's fixtures (tests/unit/test-kubepb) from every
# JSON fixture and fuzz corpus file holding Services, EndpointSlices or a
# Node.  Run from the top of the source tree.
set -eu
files=$(grep -rlE '"kind": *"(Service|EndpointSlice|ServiceList|EndpointSliceList|List|Node)"' \
	tests/data tests/fuzz/decode tests/fuzz/kubewire | grep -v '^tests/data/kubepb/' | sort)
find tests/data/kubepb -name '*.pb' -delete
find tests/data/kubepb -name '*.json' -delete
python3 tests/kubeapi/kubepb.py fixtures tests/data/kubepb $files
