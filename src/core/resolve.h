/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * resolve: merged snapshot -> desired state (one svc_port per service port,
 * with its endpoints), the way kube-proxy's change trackers build their
 * ServicePortMap and EndpointsMap:
 *  - a Service yields one svc_port per spec.ports[] entry;
 *  - endpoints come from the EndpointSlices labelled with the service name,
 *    matched to the service port by port name and protocol; several slices
 *    per service are merged and deduplicated (same ip:port -> the first);
 *  - v1 Endpoints objects are used for a service only when no EndpointSlice
 *    names that service ("the slices win");
 *  - with a family, only addresses of that family are kept (others: a
 *    DIAG_NOTE); with family 0 (the dual-stack pipeline) every address is
 *    kept, the first cluster IP of each family (in spec.clusterIPs order),
 *    and the planner takes each family's share;
 *  - endpoint.is_local = (node_name == hostname);
 *  - headless, ExternalName and service-proxy-name services are kept with
 *    skipped = true and a reason, so --dump-state can show them.
 * Pure: no I/O.
 */
#ifndef SVCNAT_CORE_RESOLVE_H
#define SVCNAT_CORE_RESOLVE_H

#include "core/diag.h"
#include "core/merge.h"
#include "core/model.h"

struct resolve_opts {
	const char *hostname; /* which endpoints are local; may be NULL (none are) */
	int family;           /* AF_INET, AF_INET6, or 0: both (opts NULL: both) */
};

/* Build *ret (caller frees with desired_free()).  0 or -ENOMEM. */
int resolve_build(const struct merge_snapshot *snap, const struct resolve_opts *opts,
		  struct desired *ret, struct diag_list *diags);

/* Print the desired state, one line per service port (--dump-state). */
void resolve_dump(const struct desired *d, FILE *f);

#endif
