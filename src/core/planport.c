/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One service port's plan: endpoint selection (proxy.CategorizeEndpoints),
 * its own chains (writeServiceToEndpointRules and the rest of
 * syncProxyRules' per-port loop) and its rules in the shared chains.
 */
#include "core/planint.h"

/* --- endpoint categorization (proxy.CategorizeEndpoints) --- */

static bool has_name(char *const *v, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] && streq(v[i], name))
			return true;
	return false;
}

/* How cluster traffic is narrowed by the endpoints' hints. */
enum topo_mode {
	TOPO_NONE,      /* every ready endpoint */
	TOPO_SAME_NODE, /* those hinted for this node */
	TOPO_SAME_ZONE, /* those hinted for this node's zone */
};

/*
 * proxy.topologyModeFromHints (pkg/proxy/topology.go): node hints when every
 * ready endpoint has one and one is for this node; else zone hints when
 * every ready endpoint has one and one is for this node's zone; else none.
 * All or nothing: one ready endpoint without the hint turns it off.  The
 * PreferSameTrafficDistribution gate that guards the node hints is locked
 * on since Kubernetes 1.35.
 */
static enum topo_mode topology_mode(const struct ep_slot *eps, size_t n, const char *node,
				    const char *zone)
{
	bool any_ready = false, all_node = true, for_node = false, all_zone = true, for_zone = false;

	for (size_t i = 0; i < n; i++) {
		const struct endpoint *ep = eps[i].ep;

		if (!ep->ready)
			continue;
		any_ready = true;
		if (ep->n_hint_nodes == 0)
			all_node = false;
		else if (has_name(ep->hint_nodes, ep->n_hint_nodes, node))
			for_node = true;
		if (ep->n_hint_zones == 0)
			all_zone = false;
		else if (has_name(ep->hint_zones, ep->n_hint_zones, zone))
			for_zone = true;
	}
	if (!any_ready)
		return TOPO_NONE;
	if (all_node && for_node)
		return TOPO_SAME_NODE;
	if (all_zone && for_zone)
		return TOPO_SAME_ZONE;
	return TOPO_NONE;
}

/* proxy.availableForTopology: the mode's filter, without any fallback. */
static bool topo_available(const struct endpoint *ep, enum topo_mode mode, const char *node,
			   const char *zone)
{
	switch (mode) {
	case TOPO_NONE:
		return true;
	case TOPO_SAME_NODE:
		return has_name(ep->hint_nodes, ep->n_hint_nodes, node);
	case TOPO_SAME_ZONE:
		return has_name(ep->hint_zones, ep->n_hint_zones, zone);
	}
	return false;
}

struct categories {
	size_t n_cluster;
	size_t n_local;
	bool has_any; /* usable endpoints anywhere in the cluster */
};

static void categorize(struct ep_slot *eps, size_t n, bool uses_cluster, bool uses_local,
		       const char *node, const char *zone, struct categories *cat)
{
	memset(cat, 0, sizeof(*cat));

	if (uses_cluster) {
		enum topo_mode mode = topology_mode(eps, n, node, zone);

		for (size_t i = 0; i < n; i++) {
			const struct endpoint *ep = eps[i].ep;

			if (ep->ready && topo_available(ep, mode, node, zone)) {
				eps[i].cluster = true;
				cat->n_cluster++;
			}
		}
		/* No ready endpoint anywhere: fall back to serving terminating
		 * ones (topology would already have been ignored). */
		if (!cat->n_cluster) {
			for (size_t i = 0; i < n; i++) {
				const struct endpoint *ep = eps[i].ep;

				if (ep->serving && ep->terminating) {
					eps[i].cluster = true;
					cat->n_cluster++;
				}
			}
		}
		cat->has_any = cat->n_cluster > 0;
	}

	if (uses_local) {
		bool local_ready = false, local_term = false;

		for (size_t i = 0; i < n; i++) {
			const struct endpoint *ep = eps[i].ep;

			if (ep->ready) {
				cat->has_any = true;
				local_ready |= ep->is_local;
			} else if (ep->serving && ep->terminating) {
				cat->has_any = true;
				local_term |= ep->is_local;
			}
		}
		for (size_t i = 0; i < n; i++) {
			const struct endpoint *ep = eps[i].ep;
			bool use;

			if (!ep->is_local)
				continue;
			if (local_ready)
				use = ep->ready;
			else
				use = local_term && ep->serving && ep->terminating;
			if (use) {
				eps[i].local = true;
				cat->n_local++;
			}
		}
	}
}

static int ep_slot_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ep_slot *)a)->str, ((const struct ep_slot *)b)->str);
}

/* --- per service port --- */

static int other_family(int family)
{
	return family == AF_INET ? AF_INET6 : AF_INET;
}

static bool has_family(const struct ipaddr *a, size_t n, int family)
{
	for (size_t i = 0; i < n; i++)
		if (a[i].family == family)
			return true;
	return false;
}

/*
 * Entries of the other family that this run leaves out.  Dual-stack, the
 * other family's plan programs them when the port has a cluster IP of that
 * family (no note then); otherwise no run does.
 */
static int note_family(struct plan_ctx *c, const struct svc_port *sp, const char *field,
		       size_t skipped)
{
	const int fam = c->s->family, other = other_family(fam);
	char obj[512];

	if (!skipped || !c->diags)
		return 0;
	snprintf(obj, sizeof(obj), "%s/%s", sp->ns, sp->name);
	if (!c->s->dual_stack)
		return diag_add(c->diags, DIAG_NOTE, NULL, obj, field,
				"%zu IPv%d entr%s ignored in an IPv%d run", skipped,
				fam == AF_INET ? 6 : 4, skipped == 1 ? "y" : "ies",
				fam == AF_INET ? 4 : 6);
	if (has_family(sp->cluster_ips, sp->n_cluster_ips, other) || sp->origin == ORIGIN_LEGACY)
		return 0;
	return diag_add(c->diags, DIAG_NOTE, NULL, obj, field,
			"%zu IPv%d entr%s ignored: the service has no IPv%d cluster IP", skipped,
			other == AF_INET ? 4 : 6, skipped == 1 ? "y" : "ies", other == AF_INET ? 4 : 6);
}

static size_t count_family(const struct ipaddr *a, size_t n, int family)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		k += a[i].family == family;
	return k;
}

static size_t count_net_family(const struct ipnet *a, size_t n, int family)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		k += a[i].addr.family == family;
	return k;
}



/* Fill c->eps with the port's endpoints of the run's family, in kube-proxy's
 * order (by "ip:port" string, as its EndpointsMap sorts them). */
static int gather_endpoints(struct plan_ctx *c, const struct svc_port *sp, size_t *ret_n)
{
	size_t n = 0;
	int r;

	r = GROW(c->eps, c->cap_eps, sp->n_endpoints);
	if (r < 0)
		return r;
	for (size_t i = 0; i < sp->n_endpoints; i++) {
		const struct endpoint *ep = &sp->endpoints[i];
		struct ep_slot *e;

		if (ep->addr.family != c->s->family)
			continue;
		e = &c->eps[n++];
		e->ep = ep;
		e->comment = NULL;
		e->cluster = e->local = false;
		e->sep = NULL;
		e->recent = NULL;
		fmt_endpoint(&ep->addr, ep->port, e->str, sizeof(e->str));
	}
	qsort_safe(c->eps, n, sizeof(*c->eps), ep_slot_cmp);
	/* The model deduplicates endpoints; one KUBE-SEP- chain per ip:port
	 * must hold even if it did not. */
	if (n > 1) {
		size_t w = 1;

		for (size_t i = 1; i < n; i++)
			if (strcmp(c->eps[i].str, c->eps[w - 1].str) != 0)
				c->eps[w++] = c->eps[i];
		n = w;
	}
	r = note_family(c, sp, "endpoints", sp->n_endpoints - n);
	if (r < 0)
		return r;
	*ret_n = n;
	return 0;
}

static bool in_set(const struct ep_slot *ep, bool local_set)
{
	return local_set ? ep->local : ep->cluster;
}

/* Rules from a KUBE-SVC-/KUBE-SVL- chain to its endpoints
 * (writeServiceToEndpointRules): affinity checks first, then the random
 * spread with probability 1/(n-i), the last endpoint unconditional. */
static int write_svc_to_endpoints(struct plan_ctx *c, const struct svc_port *sp,
				  struct rs_chain *svc, size_t n_eps, bool local_set, size_t n_set)
{
	struct rs_rule *r;
	size_t i, k;
	int e;

	if (sp->affinity_client_ip) {
		for (i = 0; i < n_eps; i++) {
			const struct ep_slot *ep = &c->eps[i];

			if (!in_set(ep, local_set))
				continue;
			r = rule_new(svc);
			if (!r)
				return -ENOMEM;
			if ((e = m_comment(r, ep->comment)) < 0 ||
			    (e = m_recent(r, ep->sep->name, RECENT_CHECK, sp->affinity_timeout)) < 0)
				return e;
			t_jump(r, ep->sep);
		}
	}

	for (i = 0, k = 0; i < n_eps; i++) {
		const struct ep_slot *ep = &c->eps[i];

		if (!in_set(ep, local_set))
			continue;
		r = rule_new(svc);
		if (!r)
			return -ENOMEM;
		if ((e = m_comment(r, ep->comment)) < 0)
			return e;
		if (k + 1 < n_set && (e = m_statistic(r, 1.0 / (double)(n_set - k))) < 0)
			return e;
		t_jump(r, ep->sep);
		k++;
	}
	return 0;
}

/* The KUBE-SEP- chain of one endpoint: hairpin masquerade, then DNAT. */
static int write_sep(struct plan_ctx *c, const struct svc_port *sp, const struct ep_slot *ep,
		     const char *svc_comment)
{
	struct rs_rule *r;
	int e;

	r = rule_new(ep->sep);
	if (!r)
		return -ENOMEM;
	if ((e = m_comment(r, svc_comment)) < 0)
		return e;
	set_host(&r->src, &ep->ep->addr);
	t_jump(r, c->sh.nat_mark_masq);

	r = rule_new(ep->sep);
	if (!r)
		return -ENOMEM;
	if ((e = m_comment(r, svc_comment)) < 0)
		return e;
	if (sp->affinity_client_ip && (e = m_recent(r, ep->sep->name, RECENT_SET, 0)) < 0)
		return e;
	if ((e = m_port(r, sp->protocol, 0)) < 0)
		return e;
	t_dnat(r, ep->ep);
	return 0;
}

/*
 * Whether an endpoint's own traffic can reach a compact service chain
 * unmarked, so that chain needs its hairpin mark.  A pod's service traffic
 * goes through its own node's rules: a pod known to run on another node
 * arrives here only with an external destination (node port, external or
 * LB IP), which KUBE-EXT- has marked already, except for the short-circuit
 * of pod traffic into the cluster chain under Local external policy
 * (`remote`).  Endpoints without a node name may be here.
 */
static bool needs_hairpin(const struct endpoint *ep, bool remote)
{
	return remote || ep->is_local || !ep->node_name || !ep->node_name[0];
}

/*
 * The compact layout's endpoint rules (no KUBE-SEP- chains): the hairpin
 * marks, the affinity checks, then the spread, DNATing straight from the
 * service chain.  A source cannot be compared with the chosen destination
 * here, so traffic from an endpoint to its service is always masqueraded.
 * --update is kube-proxy's --rcheck plus the --set of the KUBE-SEP- chain
 * it jumps to; "-p" alone lets DNAT carry a port.
 */
static int write_svc_compact(struct plan_ctx *c, const struct svc_port *sp, struct rs_chain *svc,
			     size_t n_eps, bool local_set, size_t n_set, bool remote_hairpin)
{
	const bool affinity = sp->affinity_client_ip;
	struct rs_rule *r;
	size_t i, k;
	int e;

	for (i = 0; i < n_eps; i++) {
		const struct ep_slot *ep = &c->eps[i];

		if (!in_set(ep, local_set) || !needs_hairpin(ep->ep, remote_hairpin))
			continue;
		if (!(r = rule_new(svc)))
			return -ENOMEM;
		set_host(&r->src, &ep->ep->addr);
		t_jump(r, c->sh.nat_mark_masq);
	}

	for (i = 0; affinity && i < n_eps; i++) {
		const struct ep_slot *ep = &c->eps[i];

		if (!in_set(ep, local_set))
			continue;
		if (!(r = rule_new(svc)))
			return -ENOMEM;
		r->proto = sp->protocol;
		if ((e = m_recent(r, ep->recent, RECENT_UPDATE, sp->affinity_timeout)) < 0)
			return e;
		t_dnat(r, ep->ep);
	}

	for (i = 0, k = 0; i < n_eps; i++) {
		const struct ep_slot *ep = &c->eps[i];

		if (!in_set(ep, local_set))
			continue;
		if (!(r = rule_new(svc)))
			return -ENOMEM;
		r->proto = sp->protocol;
		/* statistic before --set: the kernel stops at the first match
		 * that fails, so only the chosen endpoint's list is set. */
		if (k + 1 < n_set && (e = m_statistic(r, 1.0 / (double)(n_set - k))) < 0)
			return e;
		if (affinity && (e = m_recent(r, ep->recent, RECENT_SET, 0)) < 0)
			return e;
		t_dnat(r, ep->ep);
		k++;
	}
	return 0;
}

/* A rule "-d ip -p proto --dport port" with a comment, in `chain`. */
static struct rs_rule *dst_rule(struct rs_chain *chain, const char *comment,
				const struct ipaddr *dst, uint8_t proto, uint16_t port)
{
	struct rs_rule *r = rule_new(chain);

	if (!r)
		return NULL;
	if (dst)
		set_host(&r->dst, dst);
	if (m_comment(r, comment) < 0 || m_port(r, proto, port) < 0)
		return NULL;
	return r;
}

/*
 * Size a new chain's rule array exactly.  rs_chain_append() grows by
 * doubling from 8 rules; for 100,000 two-rule KUBE-SEP- chains that alone
 * would be about 150 MB more.  Sets errno like ruleset_add_chain().
 */
static bool chain_reserve(struct rs_chain *ch, size_t n)
{
	struct rs_rule *r;

	if (ch->cap_rules >= n)
		return true;
	r = reallocarray_z(ch->rules, n, sizeof(*r));
	if (!r) {
		errno = ENOMEM;
		return false;
	}
	ch->rules = r;
	ch->cap_rules = n;
	return true;
}

static struct rs_chain *new_chain(struct plan_ctx *c, const char *name, size_t n_rules)
{
	struct rs_chain *ch = ruleset_add_chain(c->crs ? c->crs : c->rs, RS_NAT, name);

	if (!ch || !chain_reserve(ch, n_rules))
		return NULL;
	if (c->made && GROW(c->made->v, c->made->cap, c->made->n + 1) < 0) {
		errno = ENOMEM;
		return NULL;
	}
	if (c->made)
		c->made->v[c->made->n++] = ch;
	return ch;
}

static struct rs_chain *port_chain(struct plan_ctx *c, const char *prefix, const char *hash,
				   size_t n_rules)
{
	char name[RS_CHAIN_MAXLEN + 1];

	snprintf(name, sizeof(name), "%s%s", prefix, hash);
	return new_chain(c, name, n_rules);
}

/* What kube-proxy decides for one service port before writing rules. */
struct port_plan {
	const struct svc_port *sp;
	const char *key;
	const char *proto;         /* "tcp", "udp", "sctp" */
	const struct ipaddr *cip;  /* the cluster IP of the run's family */
	size_t n_eps;              /* endpoints of the family, in c->eps */
	struct categories cat;
	bool ext_access;           /* node port, external IPs or LB IPs */
	bool ext_local;            /* externalTrafficPolicy=Local applies */
	bool int_local;            /* internalTrafficPolicy=Local */
	bool has_internal;         /* cluster IP traffic has somewhere to go */
	bool has_external;         /* external traffic has somewhere to go */
	size_t n_ext_ips, n_lb, n_src;
	struct rs_chain *svc, *svl, *ext, *fw;
	struct rs_chain *int_chain, *ext_policy_chain, *lb_chain;
	const char *cip_comment, *key_comment, *lb_comment;
	const char *int_filter_comment, *ext_filter_comment;
	enum rs_target_kind int_filter, ext_filter;
};

/* Returns 1 to program the port, 0 to skip it (diagnosed), or -errno. */
static int port_decide(struct plan_ctx *c, const struct svc_port *sp, struct port_plan *pp)
{
	const int fam = c->s->family;
	bool uses_cluster, uses_local;
	char obj[512];
	int e;

	memset(pp, 0, sizeof(*pp));
	pp->sp = sp;
	pp->key = sp->key;
	if (sp->skipped)
		return 0;
	snprintf(obj, sizeof(obj), "%s/%s", sp->ns, sp->name);
	if (sp->protocol == PROTO_TCP || sp->protocol == PROTO_UDP || sp->protocol == PROTO_SCTP)
		pp->proto = proto_name(sp->protocol);
	if (!pp->proto || !pp->key) {
		if (!c->diags)
			return 0;
		if (!pp->key)
			e = diag_add(c->diags, DIAG_ERROR, NULL, obj, "spec.ports",
				     "service port without a name key; skipped");
		else
			e = diag_add(c->diags, DIAG_ERROR, NULL, obj, "spec.ports",
				     "protocol %u is not supported; service port skipped",
				     sp->protocol);
		return e < 0 ? e : 0;
	}
	/* A single-stack proxier sees only services with a cluster IP of its
	 * family; it uses the first one. */
	pp->cip = first_of_family(sp->cluster_ips, sp->n_cluster_ips, fam);
	/* The original (2014) format's services have no cluster IP: they are
	 * node ports only, the way that proxy listened on every address. */
	/* ... on IPv6 only with endpoints of that family (svcnat's choice:
	 * an IPv4 config of that format stays without ip6tables rules). */
	if (!pp->cip && sp->origin == ORIGIN_LEGACY && fam == AF_INET6 &&
	    !count_family_eps(sp, AF_INET6))
		return 0;
	if (!pp->cip && sp->origin != ORIGIN_LEGACY) {
		/* Dual-stack, the other family's run programs it. */
		if (!c->diags || c->s->dual_stack)
			return 0;
		e = diag_add(c->diags, DIAG_NOTE, NULL, obj, "spec.clusterIPs",
			     "no IPv%d cluster IP; %s not programmed in this run",
			     fam == AF_INET ? 4 : 6, pp->key);
		return e < 0 ? e : 0;
	}

	pp->n_ext_ips = count_family(sp->external_ips, sp->n_external_ips, fam);
	pp->n_lb = count_family(sp->lb_ips, sp->n_lb_ips, fam);
	pp->n_src = count_net_family(sp->lb_source_ranges, sp->n_lb_source_ranges, fam);
	if ((e = note_family(c, sp, "spec.externalIPs", sp->n_external_ips - pp->n_ext_ips)) < 0 ||
	    (e = note_family(c, sp, "status.loadBalancer.ingress", sp->n_lb_ips - pp->n_lb)) < 0 ||
	    (e = note_family(c, sp, "spec.loadBalancerSourceRanges",
			     sp->n_lb_source_ranges - pp->n_src)) < 0)
		return e;

	pp->ext_access = sp->node_port || pp->n_ext_ips || pp->n_lb;
	pp->ext_local = sp->ext_policy == POLICY_LOCAL &&
			(sp->type == SVC_NODE_PORT || sp->type == SVC_LOAD_BALANCER ||
			 (sp->type == SVC_CLUSTER_IP && sp->n_external_ips > 0));
	pp->int_local = sp->int_policy == POLICY_LOCAL;
	/* Local external policy still needs the Cluster set for the
	 * short-circuit of traffic from inside the cluster. */
	uses_cluster = !pp->int_local || pp->ext_access;
	uses_local = pp->int_local || (pp->ext_local && pp->ext_access);

	if ((e = gather_endpoints(c, sp, &pp->n_eps)) < 0)
		return e;
	categorize(c->eps, pp->n_eps, uses_cluster, uses_local, c->s->hostname ? c->s->hostname : "",
		   zone_or_empty(c->s->zone), &pp->cat);
	pp->has_internal = pp->cat.has_any && (!pp->int_local || pp->cat.n_local > 0);
	pp->has_external = pp->cat.has_any && (!pp->ext_local || pp->cat.n_local > 0);
	return 1;
}

/* The port's own chains, its endpoint chains and the comments it shares. */
static int port_chains(struct plan_ctx *c, struct port_plan *pp)
{
	const struct svc_port *sp = pp->sp;
	const char *key = pp->key;
	/* rules per endpoint in a service chain: the jump to its KUBE-SEP-
	 * chain, or the compact hairpin mark and DNAT; plus the affinity check */
	size_t per_ep = (c->compact ? 2 : 1) + (sp->affinity_client_ip ? 1 : 0);
	char hash[CHAIN_HASH_LEN + 1];

	chain_hasher_hash(c->hasher, key, pp->proto, NULL, hash);
	if (!hash[0])
		return -ENOMEM;
	if (pp->cat.n_cluster &&
	    !(pp->svc = port_chain(c, "KUBE-SVC-", hash, 1 + per_ep * pp->cat.n_cluster)))
		return -errno;
	if (pp->cat.n_local &&
	    !(pp->svl = port_chain(c, "KUBE-SVL-", hash, 1 + per_ep * pp->cat.n_local)))
		return -errno;
	if (pp->cat.has_any && pp->ext_access && !(pp->ext = port_chain(c, "KUBE-EXT-", hash, 4)))
		return -errno;
	if (pp->cat.has_any && pp->n_lb && pp->n_src &&
	    !(pp->fw = port_chain(c, "KUBE-FW-", hash, pp->n_src + pp->n_lb + 1)))
		return -errno;
	pp->int_chain = pp->int_local ? pp->svl : pp->svc;
	pp->ext_policy_chain = pp->ext_local ? pp->svl : pp->svc;
	pp->lb_chain = pp->fw ? pp->fw : pp->ext;

	pp->cip_comment = cat3(c->rs, key, " cluster IP", "");
	pp->key_comment = ruleset_strdup(c->rs, key);
	if (!pp->cip_comment || !pp->key_comment)
		return -ENOMEM;
	if (pp->n_lb && !(pp->lb_comment = cat3(c->rs, key, " loadbalancer IP", "")))
		return -ENOMEM;
	pp->int_filter = pp->ext_filter = RS_T_REJECT;
	if (!pp->cat.has_any) {
		pp->int_filter_comment = cat3(c->rs, key, " has no endpoints", "");
		pp->ext_filter_comment = pp->int_filter_comment;
		if (!pp->int_filter_comment)
			return -ENOMEM;
	} else if (!pp->has_internal || !pp->has_external) {
		const char *no_local = cat3(c->rs, key, " has no local endpoints", "");

		if (!no_local)
			return -ENOMEM;
		if (!pp->has_internal) {
			pp->int_filter = RS_T_DROP;
			pp->int_filter_comment = no_local;
			c->no_local_internal++;
		}
		if (!pp->has_external) {
			pp->ext_filter = RS_T_DROP;
			pp->ext_filter_comment = no_local;
			c->no_local_external++;
		}
	}

	for (size_t i = 0; i < pp->n_eps; i++) {
		struct ep_slot *ep = &c->eps[i];
		char name[RS_CHAIN_MAXLEN + 1];

		if (!ep->cluster && !ep->local)
			continue;
		c->n_seps++;
		/* The compact layout needs the name only as a recent list. */
		if (c->compact && !sp->affinity_client_ip)
			continue;
		memcpy(name, "KUBE-SEP-", 9);
		chain_hasher_hash(c->hasher, key, pp->proto, ep->str, name + 9);
		if (!name[9])
			return -ENOMEM;
		if (c->compact) {
			ep->recent = ruleset_strdup(c->rs, name);
			if (!ep->recent)
				return -ENOMEM;
			continue;
		}
		ep->sep = new_chain(c, name, 2);
		if (!ep->sep)
			return -errno;
		if (!c->large_cluster) {
			ep->comment = cat3(c->rs, key, " -> ", ep->str);
			if (!ep->comment)
				return -ENOMEM;
		}
	}
	return 0;
}

/* The cluster IP's rule: nat KUBE-SERVICES to the service chain, or
 * filter KUBE-SERVICES' verdict without endpoints. */
static int shared_cluster_ip(struct plan_ctx *c, const struct port_plan *pp)
{
	const struct svc_port *sp = pp->sp;
	struct rs_rule *r;

	if (!pp->cip)
		return 0; /* no cluster IP: nothing to capture or reject for it */
	if (pp->has_internal) {
		if (!(r = dst_rule(c->sh.nat_services, pp->cip_comment, pp->cip, sp->protocol,
				   sp->port)))
			return -ENOMEM;
		t_jump(r, pp->int_chain);
	} else {
		if (!(r = dst_rule(c->sh.f_services, pp->int_filter_comment, pp->cip, sp->protocol,
				   sp->port)))
			return -ENOMEM;
		t_verdict(r, pp->int_filter);
	}
	return 0;
}

/* The external IPs' rules of the plan's family. */
static int shared_external_ips(struct plan_ctx *c, const struct port_plan *pp)
{
	const struct svc_port *sp = pp->sp;
	const bool any = pp->cat.has_any;
	const char *cm = NULL;
	struct rs_rule *r;

	if (!pp->n_ext_ips)
		return 0;
	if (any && !(cm = cat3(c->rs, pp->key, " external IP", "")))
		return -ENOMEM;
	for (size_t i = 0; i < sp->n_external_ips; i++) {
		const struct ipaddr *a = &sp->external_ips[i];

		if (a->family != c->s->family)
			continue;
		if (any) {
			r = dst_rule(c->sh.nat_services, cm, a, sp->protocol, sp->port);
			if (!r)
				return -ENOMEM;
			t_jump(r, pp->ext);
		}
		if (!pp->has_external) {
			if (!(r = dst_rule(c->sh.f_ext_services, pp->ext_filter_comment, a,
					   sp->protocol, sp->port)))
				return -ENOMEM;
			t_verdict(r, pp->ext_filter);
		}
	}
	return 0;
}

/* The load balancer IPs' rules of the plan's family: nat, the firewall's,
 * then filter's without external endpoints. */
static int shared_lb_ips(struct plan_ctx *c, const struct port_plan *pp)
{
	const struct svc_port *sp = pp->sp;
	const int fam = c->s->family;
	const char *fw_cm = NULL;
	struct rs_rule *r;

	if (!pp->n_lb)
		return 0;
	if (pp->fw &&
	    !(fw_cm = ruleset_printf(c->rs, "%s traffic not accepted by %s", pp->key, pp->fw->name)))
		return -ENOMEM;
	for (size_t i = 0; i < sp->n_lb_ips; i++) {
		const struct ipaddr *a = &sp->lb_ips[i];

		if (a->family != fam)
			continue;
		if (pp->cat.has_any) {
			r = dst_rule(c->sh.nat_services, pp->lb_comment, a, sp->protocol, sp->port);
			if (!r)
				return -ENOMEM;
			t_jump(r, pp->lb_chain);
		}
		if (pp->fw) {
			r = dst_rule(c->sh.f_proxy_fw, fw_cm, a, sp->protocol, sp->port);
			if (!r)
				return -ENOMEM;
			t_verdict(r, RS_T_DROP);
		}
	}
	for (size_t i = 0; !pp->has_external && i < sp->n_lb_ips; i++) {
		const struct ipaddr *a = &sp->lb_ips[i];

		if (a->family != fam)
			continue;
		if (!(r = dst_rule(c->sh.f_ext_services, pp->ext_filter_comment, a, sp->protocol, sp->port)))
			return -ENOMEM;
		t_verdict(r, pp->ext_filter);
	}
	return 0;
}

/* The node port's rules, and the health check node port's. */
static int shared_node_ports(struct plan_ctx *c, const struct port_plan *pp)
{
	const struct svc_port *sp = pp->sp;
	struct rs_rule *r;
	int e;

	/* Node ports are not subject to loadBalancerSourceRanges (kube-proxy). */
	if (sp->node_port) {
		/* proxier.go counts what localhost node ports accept, with a
		 * rule of its own ahead, when its nfacct counter exists. */
		if (pp->cat.has_any && c->localhost_nodeports &&
		    (c->s->nfacct & PLAN_NFACCT_LOCALHOST_NP)) {
			if (!(r = dst_rule(c->sh.nat_nodeports, pp->key_comment, NULL, sp->protocol,
					   sp->node_port)))
				return -ENOMEM;
			r->dst = loopback_net(AF_INET);
			if ((e = m_nfacct(r, PLAN_NFACCT_LOCALHOST_NP_NAME)) < 0)
				return e;
			t_jump(r, pp->ext);
		}
		if (pp->cat.has_any) {
			if (!(r = dst_rule(c->sh.nat_nodeports, pp->key_comment, NULL, sp->protocol,
					   sp->node_port)))
				return -ENOMEM;
			t_jump(r, pp->ext);
		}
		if (!pp->has_external) {
			if (!(r = rule_new(c->sh.f_ext_services)))
				return -ENOMEM;
			if ((e = m_comment(r, pp->ext_filter_comment)) < 0 ||
			    (e = m_addrtype(r, false)) < 0 ||
			    (e = m_port(r, sp->protocol, sp->node_port)) < 0)
				return e;
			t_verdict(r, pp->ext_filter);
		}
	}

	/* The health check node port is open whether or not there are local
	 * endpoints; only LoadBalancers with Local policy have one. */
	if (sp->type == SVC_LOAD_BALANCER && pp->ext_local && sp->health_check_node_port) {
		const char *cm = cat3(c->rs, pp->key, " health check node port", "");

		if (!cm || !(r = dst_rule(c->sh.f_nodeports, cm, NULL, PROTO_TCP,
					  sp->health_check_node_port)))
			return -ENOMEM;
		t_verdict(r, RS_T_ACCEPT);
	}
	return 0;
}

/* The port's rules in the shared chains: nat KUBE-SERVICES and
 * KUBE-NODEPORTS, filter KUBE-SERVICES, KUBE-EXTERNAL-SERVICES,
 * KUBE-PROXY-FIREWALL and KUBE-NODEPORTS. */
static int port_shared_rules(struct plan_ctx *c, const struct port_plan *pp)
{
	int e;

	e = shared_cluster_ip(c, pp);
	if (e >= 0)
		e = shared_external_ips(c, pp);
	if (e >= 0)
		e = shared_lb_ips(c, pp);
	if (e >= 0)
		e = shared_node_ports(c, pp);
	return e < 0 ? e : 0;
}

static int comment_jump(struct plan_ctx *c, struct rs_chain *from, const char *pre,
			const char *key, const char *post, bool src_local,
			const struct rs_chain *to, struct rs_rule **ret)
{
	const char *cm;
	struct rs_rule *r;
	int e;

	/* The Cluster chain exists whenever KUBE-EXT- does (uses_cluster
	 * holds for externally reachable ports); never jump to nothing. */
	if (!to)
		return -EINVAL;
	cm = cat3(c->rs, pre, key, post);
	if (!cm || !(r = rule_new(from)))
		return -ENOMEM;
	if ((e = m_comment(r, cm)) < 0 || (src_local && (e = m_addrtype(r, true)) < 0))
		return e;
	t_jump(r, to);
	if (ret)
		*ret = r;
	return 0;
}

/* KUBE-EXT-: masquerade (Cluster policy) or short-circuit traffic from
 * pods and from the node (Local policy), then the policy chain. */
static int port_ext_chain(struct plan_ctx *c, const struct port_plan *pp)
{
	struct rs_rule *r;
	int e;

	if (!pp->ext_local) {
		e = comment_jump(c, pp->ext, "masquerade traffic for ", pp->key,
				 " external destinations", false, c->sh.nat_mark_masq, NULL);
		if (e < 0)
			return e;
	} else {
		if (detect_local(c)) {
			e = comment_jump(c, pp->ext, "pod traffic for ", pp->key,
					 " external destinations", false, pp->svc, &r);
			if (e < 0)
				return e;
			match_local(c, r, false);
		}
		/* The node's own traffic comes from a local address, which
		 * the endpoint could not answer directly. */
		e = comment_jump(c, pp->ext, "masquerade LOCAL traffic for ", pp->key,
				 " external destinations", true, c->sh.nat_mark_masq, NULL);
		if (e < 0)
			return e;
		e = comment_jump(c, pp->ext, "route LOCAL traffic for ", pp->key,
				 " external destinations", true, pp->svc, NULL);
		if (e < 0)
			return e;
	}
	if (pp->has_external) {
		if (!(r = rule_new(pp->ext)))
			return -ENOMEM;
		t_jump(r, pp->ext_policy_chain);
	}
	return 0;
}

/* KUBE-FW-: loadBalancerSourceRanges; what falls through is dropped by
 * filter KUBE-PROXY-FIREWALL. */
static int port_fw_chain(struct plan_ctx *c, const struct port_plan *pp)
{
	const struct svc_port *sp = pp->sp;
	const int fam = c->s->family;
	bool allow_from_node = false;
	const char *cm;
	struct rs_rule *r;
	int e;

	for (size_t i = 0; i < sp->n_lb_source_ranges; i++) {
		const struct ipnet *src = &sp->lb_source_ranges[i];

		if (src->addr.family != fam)
			continue;
		if (!(r = rule_new(pp->fw)))
			return -ENOMEM;
		if ((e = m_comment(r, pp->lb_comment)) < 0)
			return e;
		r->src = *src;
		t_jump(r, pp->ext);
		if (c->node_ip && ipnet_contains(src, c->node_ip))
			allow_from_node = true;
	}
	/* A VIP often is a local address too: the node's own requests then
	 * come from the VIP. */
	for (size_t i = 0; allow_from_node && i < sp->n_lb_ips; i++) {
		if (sp->lb_ips[i].family != fam)
			continue;
		if (!(r = rule_new(pp->fw)))
			return -ENOMEM;
		if ((e = m_comment(r, pp->lb_comment)) < 0)
			return e;
		set_host(&r->src, &sp->lb_ips[i]);
		t_jump(r, pp->ext);
	}
	cm = cat3(c->rs, "other traffic to ", pp->key, " will be dropped by KUBE-PROXY-FIREWALL");
	if (!cm || !(r = rule_new(pp->fw)))
		return -ENOMEM;
	if ((e = m_comment(r, cm)) < 0)
		return e;
	t_verdict(r, RS_T_NONE);
	return 0;
}

/* Its own chains: KUBE-SVC-, KUBE-SVL-, KUBE-EXT-, KUBE-FW-, KUBE-SEP-. */
int plan_port(struct plan_ctx *c, const struct svc_port *sp)
{
	struct port_plan pp;
	struct rs_rule *r;
	int e;

	e = port_decide(c, sp, &pp);
	if (e <= 0)
		return e;
	if ((e = port_chains(c, &pp)) < 0 || (e = port_shared_rules(c, &pp)) < 0)
		return e;

	/* Masquerade off-cluster traffic to the cluster IP (or all of it). */
	if (pp.cip && pp.has_internal && (c->s->masquerade_all || detect_local(c))) {
		if (!(r = dst_rule(pp.int_chain, pp.cip_comment, pp.cip, sp->protocol, sp->port)))
			return -ENOMEM;
		if (!c->s->masquerade_all)
			match_local(c, r, true);
		t_jump(r, c->sh.nat_mark_masq);
	}
	if (pp.ext && (e = port_ext_chain(c, &pp)) < 0)
		return e;
	if (pp.fw && (e = port_fw_chain(c, &pp)) < 0)
		return e;
	if (c->compact) {
		/* KUBE-EXT-'s "pod traffic" rule: pods of other nodes, unmarked */
		bool remote = pp.ext && pp.ext_local && detect_local(c);

		if (pp.svc && (e = write_svc_compact(c, sp, pp.svc, pp.n_eps, false,
						     pp.cat.n_cluster, remote)) < 0)
			return e;
		if (pp.svl && (e = write_svc_compact(c, sp, pp.svl, pp.n_eps, true,
						     pp.cat.n_local, false)) < 0)
			return e;
		c->n_ports++;
		return 0;
	}
	if (pp.svc && (e = write_svc_to_endpoints(c, sp, pp.svc, pp.n_eps, false,
						  pp.cat.n_cluster)) < 0)
		return e;
	if (pp.svl && (e = write_svc_to_endpoints(c, sp, pp.svl, pp.n_eps, true,
						  pp.cat.n_local)) < 0)
		return e;
	for (size_t i = 0; i < pp.n_eps; i++) {
		if (!c->eps[i].sep)
			continue;
		e = write_sep(c, sp, &c->eps[i], c->large_cluster ? NULL : pp.key_comment);
		if (e < 0)
			return e;
	}
	c->n_ports++;
	return 0;
}