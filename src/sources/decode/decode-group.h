/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Endpoint groups, for the kinds that list endpoints with their ports
 * rather than slices.  An epslice's ports apply to every endpoint in it,
 * so endpoints whose port sets differ go to different epslices.  Both a v1
 * Endpoints object (its subsets) and an original-format endpoint list
 * ("ip:port" strings) are grouped by (port set, address family): the first
 * group is named like the service, the k-th further group "<service>#k"
 * ('#' cannot occur in a Kubernetes name, so these never collide with real
 * slice names).
 */
#ifndef SVCNAT_SOURCES_DECODE_GROUP_H
#define SVCNAT_SOURCES_DECODE_GROUP_H

#include "sources/decode/decode.h"

struct epgroup {
	struct epslice *e; /* ports sorted; endpoints appended */
	size_t cap_endpoints;
};

/* The groups of one object; zero-initialise, free with epgroups_done(). */
struct epgroups {
	struct epgroup *g;
	size_t n, cap;
};

/* Unref every group's epslice (those not yet emitted) and free the array. */
void epgroups_done(struct epgroups *gs);

/* qsort order of epslice ports: name, protocol, port. */
int epgroup_port_cmp(const void *a, const void *b);

/* The group for (ports, family) of service ns/svc, created if needed.
 * ports must be sorted; their names are copied.  0 or -ENOMEM. */
int epgroup_get(struct epgroups *gs, enum item_origin origin, const char *ns,
		const char *svc, const struct epslice_port *ports, size_t n_ports,
		uint8_t family, struct epgroup **ret);

/* Append an endpoint; its strings are taken over by the group and *ep
 * zeroed.  0 or -ENOMEM. */
int epgroup_add(struct epgroup *g, struct epslice_endpoint *ep);

/* Hand the groups' epslices to out (gs keeps none); with no group, one
 * empty epslice (the service has an endpoints object, with no endpoints).
 * 0 or -ENOMEM. */
int epgroups_emit(struct epgroups *gs, enum item_origin origin, const char *ns,
		  const char *svc, struct decoded *out);

#endif
