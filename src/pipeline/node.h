/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * This node as the planner sees it: its zone, node IPs, local addresses,
 * pod CIDRs and the node-port addresses, from what was given, the Node
 * object (the API source) and the kernel's addresses.  Pure: no system
 * call; the caller reads the kernel and the API.
 *
 * A node keeps the node fields of one struct plan_settings (given at
 * node_init()) pointing at its own copies: after each node_set_*() the
 * settings are ready to plan with.
 */
#ifndef SVCNAT_PIPELINE_NODE_H
#define SVCNAT_PIPELINE_NODE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/diag.h"
#include "core/model.h"
#include "core/plan.h"

/* What was given about the node (borrowed; must outlive the node). */
struct node_given {
	const struct plan_settings *plan; /* node_ips, nodeport_addresses, node_pod_cidrs,
					   * detect_local_mode as configured */
	const char *hostname;
	const char *zone;                 /* NULL: the Node object's */
	bool node_ips_given;              /* plan->node_ips are final: none learnt, none
					   * taken from the Node object */
	bool nodeport_primary;            /* the node-port addresses lack "primary" */
	bool bind_address_set;            /* bind_address is the primary IP, first */
	struct ipaddr bind_address;
};

struct node {
	const struct node_given *g;
	struct plan_settings *s;     /* the settings kept in step */
	struct ipaddr *learnt;       /* owned: local_addrs learnt from the kernel */
	struct ipaddr *ips;          /* owned: node_ips from the Node object */
	struct ipnet *pod_cidrs;     /* owned: the Node's spec.podCIDRs (NodeCIDR mode) */
	struct ipnet *nodeport;      /* owned: node-port addresses with the primary IPs */
	char *zone;                  /* owned: the Node's zone */
};

/*
 * Set s's node fields from g: the hostname and zone, the given node IPs
 * (which double as the local addresses until some are learnt), and with
 * g->nodeport_primary a placeholder for each family's primary IP that no
 * node has (0.0.0.0/32, ::/128: no node port answers until the Node
 * object names it).  0 or -ENOMEM.
 */
int node_init(struct node *n, const struct node_given *g, struct plan_settings *s);
void node_done(struct node *n);

/*
 * The Node object's zone (unless one was given) and addresses (unless
 * node IPs were given; the bind address first when set), and with them
 * each family's primary IP for the node-port addresses.  Copies.  1 if
 * something changed, 0 if not, -ENOMEM.
 */
int node_set_object(struct node *n, const char *zone, const struct ipaddr *ips, size_t k);

/* The Node object's pod CIDRs, for NodeCIDR mode unless some were given.
 * Copies.  1 if they changed, 0 if not (or not used), -ENOMEM. */
int node_set_pod_cidrs(struct node *n, const struct ipnet *cidrs, size_t k);

/* The addresses learnt from the kernel as the local ones.  Copies.  1 if
 * they changed, 0 if not, -ENOMEM. */
int node_set_addresses(struct node *n, const struct ipaddr *a, size_t k);

/* Whether the local addresses change any rule or listener: only through
 * node-port CIDRs of some length. */
bool node_addresses_matter(const struct plan_settings *s);

/* Whether the node has an IPv6 address beyond loopback, link-local and
 * unspecified ones (which every IPv6 host has). */
bool node_has_global6(const struct plan_settings *s);

/*
 * Warn (in d) about each cluster CIDR, node-port address (and, in NodeCIDR
 * mode, pod CIDR) of a family the node has no address of (neither learnt
 * nor given).  Silent when nothing is known of the node's addresses.
 */
void node_check_families(const struct plan_settings *s, struct diag_list *d);

#endif
