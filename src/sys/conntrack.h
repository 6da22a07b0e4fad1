/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Stale UDP conntrack entries, cleaned as kube-proxy's conntrack
 * reconciler does (pkg/proxy/conntrack/cleanup.go), through libnl-3 nf
 * (ctnetlink), not the conntrack command.
 *
 * UDP has no connection to reset: a conntrack entry that DNATs a client's
 * flow to an endpoint that is gone keeps sending its datagrams there (and
 * an entry made while a service had no endpoints keeps them from being
 * DNATed at all).  After a sync, for every UDP service port of the plan,
 * keyed by its frontends (cluster IPs, external IPs, load-balancer IPs
 * with the port; the node port on any address):
 *  - with serving endpoints: an entry whose original destination is the
 *    frontend and whose reply source is not one of them is stale (it
 *    points to a removed endpoint, or was made while the service rejected:
 *    reply source = the frontend itself);
 *  - with no serving endpoint: an entry for the frontend that was DNATed
 *    (reply source != original destination) points to a removed endpoint
 *    and is stale.  Un-NATed entries are left alone, as kube-proxy does.
 * Deleting an entry makes the client's next datagram go through the
 * rules again and reach a live endpoint.
 */
#ifndef SVCNAT_SYS_CONNTRACK_H
#define SVCNAT_SYS_CONNTRACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/model.h"

/* The parts of a conntrack entry the decision needs. */
struct ct_entry {
	uint8_t family;
	uint8_t proto;
	struct ipaddr orig_dst;
	uint16_t orig_dport;
	struct ipaddr reply_src;
};

struct conntrack_index;

/*
 * Index the UDP frontends of d (service ports of `family`, or of both
 * families with 0 as the dual-stack daemon wants; skipped ones excluded)
 * with their serving endpoint IPs.  Pure.  0 or -ENOMEM.
 */
int conntrack_index_build(const struct desired *d, int family, struct conntrack_index **ret);
void conntrack_index_free(struct conntrack_index *ix);
/* Number of UDP frontends indexed (0: no UDP service, nothing to clean). */
size_t conntrack_index_size(const struct conntrack_index *ix);

/* Whether e is stale by the rules above.  Pure. */
bool conntrack_entry_stale(const struct conntrack_index *ix, const struct ct_entry *e);

struct conntrack_result {
	size_t scanned;
	size_t deleted;
	size_t failed; /* deletions that failed (other than already gone) */
	size_t deleted6; /* of deleted, the IPv6 entries */
};

/*
 * Dump the conntrack table and delete the stale entries.  Needs
 * CAP_NET_ADMIN.  0 (some deletions may have failed: res->failed) or
 * -errno when the table could not be read.
 */
int conntrack_cleanup(const struct conntrack_index *ix, struct conntrack_result *res);

#endif
