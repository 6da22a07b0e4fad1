/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The rule planner: desired state + node settings -> the complete ruleset
 * svcnat owns (nat and filter), laid out as kube-proxy's iptables proxier
 * lays it out.  Pure: no I/O, no globals; the same input gives the same
 * output, byte for byte once rendered.  One family per plan, as one
 * kube-proxy proxier per family: the IPv6 plan is what kube-proxy's
 * ip6tables proxier writes (same chain names and hashes; REJECT with
 * icmp6-port-unreachable; no localhost node ports and no KUBE-FIREWALL
 * localnet guard, which need IPv4's route_localnet).
 */
#ifndef SVCNAT_CORE_PLAN_H
#define SVCNAT_CORE_PLAN_H

#include <stdbool.h>
#include <stddef.h>

#include "core/diag.h"
#include "core/dispatch.h"
#include "core/model.h"
#include "core/ruleset.h"

struct chain_hasher;

/*
 * kube-proxy's nfacct counters (pkg/proxy/metrics/metrics.go,
 * IPTablesCTStateInvalidDroppedNFAcctCounter and
 * LocalhostNodePortAcceptedNFAcctCounter): the nfnetlink_acct objects its
 * "-m nfacct" rules count into.
 */
#define PLAN_NFACCT_CT_INVALID_NAME "ct_state_invalid_dropped_pkts"
#define PLAN_NFACCT_LOCALHOST_NP_NAME "localhost_nps_accepted_pkts"

/* Which of those counters exist in the namespace the plan is written to. */
enum plan_nfacct {
	PLAN_NFACCT_CT_INVALID = 1 << 0,
	PLAN_NFACCT_LOCALHOST_NP = 1 << 1,
	PLAN_NFACCT_ALL = PLAN_NFACCT_CT_INVALID | PLAN_NFACCT_LOCALHOST_NP,
};

/* kube-proxy's --detect-local-mode: how pod traffic is told from other traffic. */
enum detect_local_mode {
	DETECT_LOCAL_CLUSTER_CIDR,  /* source in cluster_cidrs (default) */
	DETECT_LOCAL_NODE_CIDR,     /* source in node_pod_cidrs (the Node's spec.podCIDRs) */
	DETECT_LOCAL_BRIDGE,        /* arrived on pod_bridge_interface */
	DETECT_LOCAL_IFACE_PREFIX,  /* arrived on an interface named pod_interface_prefix* */
};

struct plan_settings {
	int family;                    /* AF_INET (iptables) or AF_INET6 (ip6tables) */
	/* A plan of the other family is built too, from the same desired
	 * state (the dual-stack pipeline): entries of the other family that
	 * its plan programs are left out without a note. */
	bool dual_stack;
	const char *hostname;          /* the node name: node hints; locality is resolved already */
	const char *zone;              /* the node's topology zone, or NULL */
	struct ipaddr *node_ips;       /* --node-ip; the first is the primary */
	size_t n_node_ips;
	struct ipaddr *local_addrs;    /* every address of the node (for --nodeport-addresses) */
	size_t n_local_addrs;
	struct ipnet *cluster_cidrs;   /* --cluster-cidr; none = no local-traffic detector */
	size_t n_cluster_cidrs;
	enum detect_local_mode detect_local_mode;
	struct ipnet *node_pod_cidrs;  /* NodeCIDR mode: this node's pod CIDRs */
	size_t n_node_pod_cidrs;
	const char *pod_bridge_interface;      /* BridgeInterface mode (-i NAME) */
	const char *pod_interface_prefix;      /* InterfaceNamePrefix mode (-i NAME+) */
	struct ipnet *nodeport_addresses; /* --nodeport-addresses; none = all local (addrtype LOCAL) */
	size_t n_nodeport_addresses;
	bool masquerade_all;
	bool localhost_nodeports;      /* default true */
	unsigned masquerade_bit;       /* default 14 -> mark 0x4000 */
	bool random_fully;             /* MASQUERADE --random-fully */
	/* Above this many endpoints in total, per-endpoint comments are left
	 * out, as kube-proxy's large-cluster mode does (default 1000). */
	size_t large_cluster_threshold;
	/*
	 * Above this many endpoints in total (counted as for
	 * large_cluster_threshold; 0 = never; default 250000) the layout
	 * is compact: no KUBE-SEP- chains, no per-endpoint comments.  Each
	 * KUBE-SVC-/KUBE-SVL- chain holds, after kube-proxy's leading rules:
	 *  - "-s EP/32 -j KUBE-MARK-MASQ" (hairpin) for each endpoint whose
	 *    own traffic can arrive here unmarked: endpoints on this node or
	 *    without a node name, and, in the cluster chain of a port with
	 *    Local external policy and a cluster CIDR, every endpoint (pods
	 *    of other nodes short-circuit through KUBE-EXT-);
	 *  - with ClientIP affinity, per endpoint "-p P -m recent --update
	 *    --seconds T --reap --name KUBE-SEP-... -j DNAT";
	 *  - per endpoint "-p P [-m statistic ...] [-m recent --set --name
	 *    KUBE-SEP-...] -j DNAT", kube-proxy's probabilities and order.
	 * Recent list names are the KUBE-SEP- names kube-proxy would use.
	 * Deviation from kube-proxy: an endpoint's traffic to its own service
	 * is masqueraded wherever it lands, not only when it lands on itself
	 * (one chain cannot compare the source with the chosen destination).
	 * Packets go where kube-proxy's layout sends them; the kernel table
	 * is about a third to a half the size (docs/performance.md).
	 */
	size_t compact_endpoints_threshold;
	/* net.netfilter.nf_conntrack_tcp_be_liberal is set: kube-proxy then
	 * leaves out its KUBE-FORWARD "--ctstate INVALID -j DROP" rule
	 * (default false: the rule is there). */
	bool conntrack_tcp_liberal;
	/*
	 * enum plan_nfacct bits: the counters that exist (default 0, none).
	 * As kube-proxy's proxier.go syncProxyRules with its nfAcctCounters:
	 * with CT_INVALID the KUBE-FORWARD INVALID drop also carries
	 * "-m nfacct --nfacct-name ct_state_invalid_dropped_pkts"; with
	 * LOCALHOST_NP (and localhost node ports in effect) each node port
	 * with endpoints gets, before its nat KUBE-NODEPORTS rule, the same
	 * rule for "-d 127.0.0.0/8" with "-m nfacct --nfacct-name
	 * localhost_nps_accepted_pkts".  The kernel refuses a rule naming a
	 * counter that does not exist: set a bit only for a counter made.
	 */
	unsigned nfacct;
	/*
	 * The dispatch layout of nat KUBE-SERVICES and KUBE-NODEPORTS and
	 * filter KUBE-SERVICES, KUBE-EXTERNAL-SERVICES and KUBE-NODEPORTS
	 * (core/dispatch.h): kube-proxy's linear chains, or a tree of
	 * KUBE-DSP- chains; auto (the default) builds the tree for each of
	 * these chains that has dispatch_threshold service rules or more
	 * (default PLAN_DISPATCH_THRESHOLD).  dispatch_leaf_max: the most
	 * rules in a tree's leaf (default 32; tests use less).
	 */
	enum dispatch_mode dispatch;
	size_t dispatch_threshold;
	size_t dispatch_leaf_max;
	/*
	 * Borrowed; NULL (the default): each plan hashes every chain name
	 * afresh.  A hasher with a memo (chain_hasher_new_memo()) keeps the
	 * names between plans, so that a plan after a small change hashes
	 * only the new names (the daemon's); plan_build() sweeps it after
	 * each plan.  The plan is the same either way.
	 */
	struct chain_hasher *hasher;
};

/* From this many service rules in a chain on, auto dispatches it as a tree
 * (docs/performance.md). */
#define PLAN_DISPATCH_THRESHOLD 1000

/* Fill in kube-proxy's defaults. */
void plan_settings_init(struct plan_settings *s);

struct plan_stats {
	size_t services;   /* service ports programmed */
	size_t endpoints;  /* endpoints programmed (KUBE-SEP- chains, or their
			    * compact equivalents) */
	size_t chains;
	size_t rules;
	size_t table_chains[RS_NTABLES]; /* chains (built-in ones not counted) and rules per table */
	size_t table_rules[RS_NTABLES];
	size_t dispatch_chains; /* KUBE-DSP- chains (both tables) */
	size_t dispatch_trees;  /* chains dispatched as a tree (0 to 5) */
	/* Service ports with endpoints, none of them usable under their Local
	 * internal / external traffic policy (kube-proxy's
	 * sync_proxy_rules_no_local_endpoints_total{traffic_policy}). */
	size_t no_local_internal;
	size_t no_local_external;
};

/*
 * Build the ruleset.  *ret is sorted (ruleset_sort) and owned by the
 * caller.  Returns 0, -ENOMEM, or -EINVAL for unusable settings
 * (masquerade_bit > 31, family neither AF_INET nor AF_INET6, an interface
 * mode without a valid interface name, dispatch_leaf_max 0); nothing in
 * *ret then.  Problems with
 * single service ports (e.g. an IPv6 address no run programs) are appended
 * to diags (may be NULL) and do not fail the build.
 */
int plan_build(const struct desired *d, const struct plan_settings *s,
	       struct ruleset **ret, struct plan_stats *stats, struct diag_list *diags);

#endif
