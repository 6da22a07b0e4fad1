/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * How many objects changed between two merge snapshots: kube-proxy's
 * sync_proxy_rules_{service,endpoint}_changes_{total,pending} count one
 * change per Service or EndpointSlice added, replaced or removed.  Items
 * are immutable and shared between snapshots, so an unchanged object is
 * the same pointer in both.  Pure.
 */
#ifndef SVCNAT_CORE_CHANGES_H
#define SVCNAT_CORE_CHANGES_H

#include <stddef.h>

#include "core/merge.h"

struct snapshot_changes {
	size_t services;  /* Services added, replaced or removed */
	size_t slices;    /* EndpointSlices (and Endpoints) likewise */
};

/* old may be NULL (everything in new is added). */
void snapshot_changes_count(const struct merge_snapshot *old, const struct merge_snapshot *new,
			    struct snapshot_changes *ret);

#endif
