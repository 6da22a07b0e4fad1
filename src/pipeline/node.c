/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/node.h"
#include "util.h"

/*
 * The given node-port addresses and kube-proxy's "primary": the first IP
 * of each family in ips; a family without one gets an address no node has
 * (0.0.0.0/32, ::/128), so none of its node ports answers.
 */
static int nodeport_with_primary(const struct plan_settings *given, const struct ipaddr *ips,
				 size_t m, struct ipnet **ret, size_t *ret_n)
{
	size_t k = given->n_nodeport_addresses;
	struct ipnet *np = malloc((k + 2) * sizeof(*np));
	bool have4 = false, have6 = false;

	if (!np)
		return -ENOMEM;
	if (k)
		memcpy(np, given->nodeport_addresses, k * sizeof(*np));
	for (size_t i = 0; i < m; i++) {
		bool v4 = ips[i].family == AF_INET;

		if (v4 ? have4 : have6)
			continue;
		np[k++] = (struct ipnet){ .addr = ips[i], .plen = v4 ? 32 : 128 };
		*(v4 ? &have4 : &have6) = true;
	}
	if (!have4)
		np[k++] = (struct ipnet){ .addr = { .family = AF_INET }, .plen = 32 };
	if (!have6)
		np[k++] = (struct ipnet){ .addr = { .family = AF_INET6 }, .plen = 128 };
	*ret = np;
	*ret_n = k;
	return 0;
}

static int set_nodeport(struct node *n, const struct ipaddr *ips, size_t m)
{
	struct ipnet *np;
	size_t k;
	int r;

	r = nodeport_with_primary(n->g->plan, ips, m, &np, &k);
	if (r < 0)
		return r;
	free(n->nodeport);
	n->nodeport = np;
	n->s->nodeport_addresses = np;
	n->s->n_nodeport_addresses = k;
	return 0;
}

int node_init(struct node *n, const struct node_given *g, struct plan_settings *s)
{
	*n = (struct node){ .g = g, .s = s };
	s->hostname = g->hostname;
	s->zone = g->zone;
	/* Until addresses are learnt, the given node IPs double as the
	 * local ones. */
	s->node_ips = g->plan->node_ips;
	s->n_node_ips = g->plan->n_node_ips;
	s->local_addrs = g->plan->node_ips;
	s->n_local_addrs = g->plan->n_node_ips;
	s->nodeport_addresses = g->plan->nodeport_addresses;
	s->n_nodeport_addresses = g->plan->n_nodeport_addresses;
	s->node_pod_cidrs = g->plan->node_pod_cidrs;
	s->n_node_pod_cidrs = g->plan->n_node_pod_cidrs;
	/* "primary" until the Node object names it. */
	return g->nodeport_primary ? set_nodeport(n, NULL, 0) : 0;
}

void node_done(struct node *n)
{
	free(n->learnt);
	free(n->ips);
	free(n->pod_cidrs);
	free(n->nodeport);
	free(n->zone);
	*n = (struct node){ 0 };
}

static int set_zone(struct node *n, const char *zone)
{
	char *z;

	if (n->g->zone || streq(zone ? zone : "", n->zone ? n->zone : ""))
		return 0;
	z = zone && *zone ? strdup(zone) : NULL;
	if (zone && *zone && !z)
		return -ENOMEM;
	free(n->zone);
	n->zone = z;
	n->s->zone = z;
	return 1;
}

int node_set_object(struct node *n, const char *zone, const struct ipaddr *ips, size_t k)
{
	/* --bind-address (kube-proxy's) overrides the Node's primary IP. */
	const struct ipaddr *bind = n->g->bind_address_set ? &n->g->bind_address : NULL;
	struct ipaddr *copy;
	size_t m = 0;
	int changed, r;

	changed = set_zone(n, zone);
	if (changed < 0 || n->g->node_ips_given)
		return changed;
	copy = malloc((k + 1) * sizeof(*copy));
	if (!copy)
		return -ENOMEM;
	if (bind)
		copy[m++] = *bind;
	for (size_t i = 0; i < k; i++)
		if (!bind || ipaddr_cmp(&ips[i], bind) != 0)
			copy[m++] = ips[i];
	if (m == n->s->n_node_ips &&
	    (!m || memcmp(copy, n->s->node_ips, m * sizeof(*copy)) == 0)) {
		free(copy);
		return changed;
	}
	free(n->ips);
	n->ips = copy;
	n->s->node_ips = copy;
	n->s->n_node_ips = m;
	if (n->g->nodeport_primary) {
		r = set_nodeport(n, copy, m);
		if (r < 0)
			return r;
	}
	return 1;
}

int node_set_pod_cidrs(struct node *n, const struct ipnet *cidrs, size_t k)
{
	struct ipnet *copy;

	if (n->g->plan->detect_local_mode != DETECT_LOCAL_NODE_CIDR || n->g->plan->n_node_pod_cidrs)
		return 0;
	if (k == n->s->n_node_pod_cidrs &&
	    (!k || memcmp(cidrs, n->s->node_pod_cidrs, k * sizeof(*cidrs)) == 0))
		return 0;
	copy = malloc((k ? k : 1) * sizeof(*copy));
	if (!copy)
		return -ENOMEM;
	if (k)
		memcpy(copy, cidrs, k * sizeof(*cidrs));
	free(n->pod_cidrs);
	n->pod_cidrs = copy;
	n->s->node_pod_cidrs = copy;
	n->s->n_node_pod_cidrs = k;
	return 1;
}

int node_set_addresses(struct node *n, const struct ipaddr *a, size_t k)
{
	struct ipaddr *copy;

	if (n->learnt && k == n->s->n_local_addrs && (!k || memcmp(a, n->learnt, k * sizeof(*a)) == 0))
		return 0;
	copy = malloc((k ? k : 1) * sizeof(*copy));
	if (!copy)
		return -ENOMEM;
	if (k)
		memcpy(copy, a, k * sizeof(*a));
	free(n->learnt);
	n->learnt = copy;
	n->s->local_addrs = copy;
	n->s->n_local_addrs = k;
	return 1;
}

bool node_addresses_matter(const struct plan_settings *s)
{
	/* Without a CIDR of some length node ports answer on every local
	 * address (addrtype LOCAL), whatever they are. */
	for (size_t i = 0; i < s->n_nodeport_addresses; i++)
		if (s->nodeport_addresses[i].plen > 0)
			return true;
	return false;
}

static bool node_has_family(const struct plan_settings *s, int family)
{
	for (size_t i = 0; i < s->n_local_addrs; i++)
		if (s->local_addrs[i].family == family)
			return true;
	for (size_t i = 0; i < s->n_node_ips; i++)
		if (s->node_ips[i].family == family)
			return true;
	return false;
}

bool node_has_global6(const struct plan_settings *s)
{
	const struct ipaddr *v[2] = { s->local_addrs, s->node_ips };
	const size_t n[2] = { s->n_local_addrs, s->n_node_ips };

	for (size_t k = 0; k < 2; k++)
		for (size_t i = 0; i < n[k]; i++)
			if (v[k][i].family == AF_INET6 && !IN6_IS_ADDR_LOOPBACK(&v[k][i].u.v6) &&
			    !IN6_IS_ADDR_LINKLOCAL(&v[k][i].u.v6) &&
			    !IN6_IS_ADDR_UNSPECIFIED(&v[k][i].u.v6))
				return true;
	return false;
}

static void warn_families(const struct plan_settings *s, const char *what, const struct ipnet *v,
			  size_t n, struct diag_list *d)
{
	char buf[INET6_ADDRSTRLEN];

	for (size_t i = 0; i < n; i++) {
		int fam = v[i].addr.family;

		static const uint8_t zero[16];

		/* "all" adds ::/0 and 0.0.0.0/0, a "primary" still unknown
		 * ::/128 and 0.0.0.0/32: no complaint about those. */
		if (!v[i].plen || !memcmp(v[i].addr.u.b, zero, sizeof(zero)) ||
		    node_has_family(s, fam))
			continue;
		diag_add(d, DIAG_WARNING, NULL, NULL, what,
			 "%s/%u is IPv%d, but the node has no IPv%d address (neither learnt "
			 "nor --node-ip)",
			 ipaddr_fmt(&v[i].addr, buf, sizeof(buf)), v[i].plen, fam == AF_INET ? 4 : 6,
			 fam == AF_INET ? 4 : 6);
	}
}

void node_check_families(const struct plan_settings *s, struct diag_list *d)
{
	/* Nothing known of the node's addresses (a --dry-run without
	 * --node-ip): nothing to compare with. */
	if (!s->n_local_addrs && !s->n_node_ips)
		return;
	warn_families(s, "--cluster-cidr", s->cluster_cidrs, s->n_cluster_cidrs, d);
	warn_families(s, "--nodeport-addresses", s->nodeport_addresses, s->n_nodeport_addresses, d);
	if (s->detect_local_mode == DETECT_LOCAL_NODE_CIDR)
		warn_families(s, "--node-pod-cidr", s->node_pod_cidrs, s->n_node_pod_cidrs, d);
}
