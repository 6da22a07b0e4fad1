/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The chains every service port shares: the jumps from the built-in
 * chains (kube-proxy's iptablesJumpChains), the fixed rules of
 * KUBE-POSTROUTING, KUBE-MARK-MASQ, KUBE-FORWARD and KUBE-FIREWALL, the
 * node-port jump at the end of nat KUBE-SERVICES, and the local-traffic
 * detector.
 */
#include "core/owned.h"
#include "core/planint.h"
/* --- the shared chains and the jumps from the built-in chains --- */

struct jump_spec {
	uint8_t table;
	const char *from;     /* built-in chain */
	const char *to;
	const char *comment;  /* NULL: none */
	bool ct_new;          /* -m conntrack --ctstate NEW before the comment */
};

/*
 * kube-proxy's iptablesJumpChains followed by iptablesKubeletJumpChains.
 * It inserts each rule at the top of its built-in chain, in this order, so
 * the built-in chains end up holding them in reverse.
 */
#define EXT_PORTALS "kubernetes externally-visible service portals"

static const struct jump_spec jump_specs[] = {
	{ RS_FILTER, "INPUT", "KUBE-EXTERNAL-SERVICES", EXT_PORTALS, true },
	{ RS_FILTER, "FORWARD", "KUBE-EXTERNAL-SERVICES", EXT_PORTALS, true },
	{ RS_FILTER, "INPUT", "KUBE-NODEPORTS", "kubernetes health check service ports", false },
	{ RS_FILTER, "FORWARD", "KUBE-SERVICES", "kubernetes service portals", true },
	{ RS_FILTER, "OUTPUT", "KUBE-SERVICES", "kubernetes service portals", true },
	{ RS_FILTER, "FORWARD", "KUBE-FORWARD", "kubernetes forwarding rules", false },
	{ RS_FILTER, "INPUT", "KUBE-PROXY-FIREWALL", "kubernetes load balancer firewall", true },
	{ RS_FILTER, "OUTPUT", "KUBE-PROXY-FIREWALL", "kubernetes load balancer firewall", true },
	{ RS_FILTER, "FORWARD", "KUBE-PROXY-FIREWALL", "kubernetes load balancer firewall", true },
	{ RS_NAT, "OUTPUT", "KUBE-SERVICES", "kubernetes service portals", false },
	{ RS_NAT, "PREROUTING", "KUBE-SERVICES", "kubernetes service portals", false },
	{ RS_NAT, "POSTROUTING", "KUBE-POSTROUTING", "kubernetes postrouting rules", false },
	{ RS_FILTER, "INPUT", "KUBE-FIREWALL", NULL, false },
	{ RS_FILTER, "OUTPUT", "KUBE-FIREWALL", NULL, false },
};

static struct rs_chain *chain(struct plan_ctx *c, enum rs_table t, const char *name)
{
	return ruleset_get_chain(c->rs, t, name);
}

static int write_jumps(struct plan_ctx *c)
{
	for (size_t i = ARRAY_SIZE(jump_specs); i-- > 0;) {
		const struct jump_spec *j = &jump_specs[i];
		struct rs_chain *from = chain(c, j->table, j->from);
		struct rs_chain *to = chain(c, j->table, j->to);
		struct rs_rule *r;
		int e;

		if (!from || !to || !(r = rule_new(from)))
			return -ENOMEM;
		if (j->ct_new && (e = m_ctstate(r, false, RS_CT_NEW)) < 0)
			return e;
		if ((e = m_comment(r, j->comment)) < 0)
			return e;
		t_jump(r, to);
	}
	return 0;
}

static int write_fixed_rules(struct plan_ctx *c)
{
	struct rs_chain *post = chain(c, RS_NAT, "KUBE-POSTROUTING");
	struct rs_chain *fwd = chain(c, RS_FILTER, "KUBE-FORWARD");
	struct rs_chain *kfw = chain(c, RS_FILTER, "KUBE-FIREWALL");
	const uint32_t mark = c->masq_mark;
	struct rs_rule *r;
	int e;

	if (!post || !fwd || !kfw)
		return -ENOMEM;

	/* KUBE-POSTROUTING: only marked packets, clear the mark, masquerade. */
	if (!(r = rule_new(post)))
		return -ENOMEM;
	if ((e = m_mark(r, true, mark, mark)) < 0)
		return e;
	t_verdict(r, RS_T_RETURN);
	if (!(r = rule_new(post)))
		return -ENOMEM;
	r->t.kind = RS_T_MARK;
	r->t.u.mark.op = RS_MARK_XOR;
	r->t.u.mark.value = mark;
	if (!(r = rule_new(post)))
		return -ENOMEM;
	if ((e = m_comment(r, "kubernetes service traffic requiring SNAT")) < 0)
		return e;
	r->t.kind = RS_T_MASQUERADE;
	r->t.u.masq.random_fully = c->s->random_fully;

	/* KUBE-MARK-MASQ */
	if (!(r = rule_new(c->sh.nat_mark_masq)))
		return -ENOMEM;
	r->t.kind = RS_T_MARK;
	r->t.u.mark.op = RS_MARK_OR;
	r->t.u.mark.value = mark;

	/* route_localnet, which localhost node ports need, would also let
	 * outside packets reach 127/8; kube-proxy blocks those here. */
	if (c->localhost_nodeports) {
		struct ipnet lo = loopback_net(AF_INET);

		if (!(r = rule_new(kfw)))
			return -ENOMEM;
		if ((e = m_comment(r, "block incoming localnet connections")) < 0 ||
		    (e = m_ctstate(r, true, RS_CT_RELATED | RS_CT_ESTABLISHED | RS_CT_DNAT)) < 0)
			return e;
		r->dst = lo;
		r->src = lo;
		r->src_inv = true;
		t_verdict(r, RS_T_DROP);
	}

	/* KUBE-FORWARD */
	if (!c->s->conntrack_tcp_liberal) {
		if (!(r = rule_new(fwd)))
			return -ENOMEM;
		if ((e = m_ctstate(r, false, RS_CT_INVALID)) < 0 ||
		    ((c->s->nfacct & PLAN_NFACCT_CT_INVALID) &&
		     (e = m_nfacct(r, PLAN_NFACCT_CT_INVALID_NAME)) < 0))
			return e;
		t_verdict(r, RS_T_DROP);
	}
	if (!(r = rule_new(fwd)))
		return -ENOMEM;
	if ((e = m_comment(r, "kubernetes forwarding rules")) < 0 ||
	    (e = m_mark(r, false, mark, mark)) < 0)
		return e;
	t_verdict(r, RS_T_ACCEPT);
	if (!(r = rule_new(fwd)))
		return -ENOMEM;
	if ((e = m_comment(r, "kubernetes forwarding conntrack rule")) < 0 ||
	    (e = m_ctstate(r, false, RS_CT_RELATED | RS_CT_ESTABLISHED)) < 0)
		return e;
	t_verdict(r, RS_T_ACCEPT);
	return 0;
}

/* --nodeport-addresses as kube-proxy's NodePortAddresses reads it. */
struct nodeport_addrs {
	bool match_all;
	bool contains_loopback;
};

static void nodeport_addrs_init(const struct plan_settings *s, struct nodeport_addrs *npa)
{
	size_t n = 0;

	npa->match_all = false;
	npa->contains_loopback = false;
	for (size_t i = 0; i < s->n_nodeport_addresses; i++) {
		const struct ipnet *cidr = &s->nodeport_addresses[i];
		struct ipaddr lo = { .family = AF_INET, .u.b = { 127 } };

		if (cidr->addr.family != s->family)
			continue;
		n++;
		if (cidr->addr.family == AF_INET &&
		    (is_loopback(&cidr->addr) || ipnet_contains(cidr, &lo)))
			npa->contains_loopback = true;
		if (cidr->plen == 0)
			npa->match_all = true;
	}
	if (!n || npa->match_all) {
		npa->match_all = true;
		npa->contains_loopback = true;
	}
}

static bool nodeport_ip_seen(const struct plan_settings *s, size_t upto, const struct ipaddr *a)
{
	for (size_t i = 0; i < upto; i++)
		if (ipaddr_cmp(&s->local_addrs[i], a) == 0)
			return true;
	return false;
}

/* The last rule(s) of nat KUBE-SERVICES: hand local destinations to
 * KUBE-NODEPORTS. */
int plan_nodeports_jump(struct plan_ctx *c)
{
	struct nodeport_addrs npa_s, *npa = &npa_s;

	static const char comment[] =
		"kubernetes service nodeports; NOTE: this must be the last rule in this chain";
	const struct plan_settings *s = c->s;
	struct rs_chain *np = c->np_target;
	struct rs_rule *r;
	int e;

	nodeport_addrs_init(s, npa);
	if (npa->match_all) {
		if (!(r = rule_new(c->sh.nat_services)))
			return -ENOMEM;
		if ((e = m_comment(r, comment)) < 0 || (e = m_addrtype(r, false)) < 0)
			return e;
		if (s->family == AF_INET6 || !c->localhost_nodeports) {
			r->dst = loopback_net(s->family);
			r->dst_inv = true;
		}
		t_jump(r, np);
		return 0;
	}

	for (size_t k = 0; k < s->n_nodeport_addresses; k++) {
		const struct ipnet *cidr = &s->nodeport_addresses[k];

		if (cidr->addr.family != s->family)
			continue;
		for (size_t i = 0; i < s->n_local_addrs; i++) {
			const struct ipaddr *a = &s->local_addrs[i];
			bool earlier = false;

			if (a->family != s->family || !ipnet_contains(cidr, a))
				continue;
			/* Emitted already for an earlier CIDR or a duplicate entry? */
			for (size_t j = 0; j < k && !earlier; j++)
				earlier = s->nodeport_addresses[j].addr.family == s->family &&
					  ipnet_contains(&s->nodeport_addresses[j], a);
			if (earlier || nodeport_ip_seen(s, i, a))
				continue;
			if (is_loopback(a) && (s->family == AF_INET6 || !c->localhost_nodeports)) {
				char buf[INET6_ADDRSTRLEN];

				e = c->diags ? diag_add(c->diags, DIAG_WARNING, NULL, NULL,
							"--nodeport-addresses",
							"includes localhost (%s) but localhost node ports are %s; ignored",
							ipaddr_fmt(a, buf, sizeof(buf)),
							s->family == AF_INET6 ? "not supported on IPv6"
									      : "disabled")
					     : 0;
				if (e < 0)
					return e;
				continue;
			}
			if (!(r = rule_new(c->sh.nat_services)))
				return -ENOMEM;
			if ((e = m_comment(r, comment)) < 0)
				return e;
			set_host(&r->dst, a);
			t_jump(r, np);
		}
	}
	return 0;
}

/* A name iptables takes for -i (the prefix mode adds its '+'). */
static bool iface_name_ok(const char *n)
{
	size_t len = n ? strlen(n) : 0;

	return len > 0 && len < 16 && !strpbrk(n, "+/ \t\n!") && !streq(n, ".") && !streq(n, "..");
}

/*
 * kube-proxy's getLocalDetectors(): one CIDR per family from the cluster
 * CIDRs (ClusterCIDR) or the node's pod CIDRs (NodeCIDR); the others
 * match the input interface.  -EINVAL for an interface mode without a
 * usable name.
 */
int plan_setup_detector(struct plan_ctx *c)
{
	const struct plan_settings *s = c->s;
	const struct ipnet *cidrs = s->cluster_cidrs;
	size_t n = s->n_cluster_cidrs;
	const char *what = "--cluster-cidr";
	int e;

	switch (s->detect_local_mode) {
	case DETECT_LOCAL_BRIDGE:
	case DETECT_LOCAL_IFACE_PREFIX:
		c->local_iface_prefix = s->detect_local_mode == DETECT_LOCAL_IFACE_PREFIX;
		c->local_iface = c->local_iface_prefix ? s->pod_interface_prefix
						       : s->pod_bridge_interface;
		if (!iface_name_ok(c->local_iface))
			return -EINVAL;
		/* Rules' strings live in the ruleset's arena. */
		c->local_iface = ruleset_strdup(c->rs, c->local_iface);
		return c->local_iface ? 0 : -ENOMEM;
	case DETECT_LOCAL_NODE_CIDR:
		cidrs = s->node_pod_cidrs;
		n = s->n_node_pod_cidrs;
		what = "the node's pod CIDRs";
		break;
	case DETECT_LOCAL_CLUSTER_CIDR:
		break;
	}
	for (size_t i = 0; i < n; i++) {
		const struct ipnet *net = &cidrs[i];

		if (net->addr.family != s->family)
			continue;
		if (!c->local_cidr) {
			c->local_cidr = net;
		} else if (c->diags) {
			char buf[INET6_ADDRSTRLEN];

			e = diag_add(c->diags, DIAG_WARNING, NULL, NULL, what,
				     "only one CIDR per address family is used; %s/%u ignored",
				     ipaddr_fmt(&net->addr, buf, sizeof(buf)), net->plen);
			if (e < 0)
				return e;
		}
	}
	return 0;
}





bool plan_localhost_nodeports(const struct plan_settings *s)
{
	struct nodeport_addrs npa;

	nodeport_addrs_init(s, &npa);
	return s->localhost_nodeports && s->family == AF_INET && npa.contains_loopback;
}

const struct plan_dispatched plan_dispatched[PLAN_N_DISPATCHED] = {
	{ RS_NAT, "KUBE-SERVICES" },
	{ RS_NAT, "KUBE-NODEPORTS" },
	{ RS_FILTER, "KUBE-SERVICES" },
	{ RS_FILTER, "KUBE-EXTERNAL-SERVICES" },
	{ RS_FILTER, "KUBE-NODEPORTS" },
};

/* ip6tables spells two rules differently: REJECT's ICMPv6 type and the
 * recent match's all-ones mask. */
void plan_mark_ipv6(struct rs_rule *rules, size_t n)
{
	for (size_t j = 0; j < n; j++) {
		struct rs_rule *r = &rules[j];

		if (r->t.kind == RS_T_REJECT)
			r->t.u.reject.icmp6 = true;
		for (size_t k = 0; k < r->n_matches; k++)
			if (r->m[k].kind == RS_M_RECENT)
				r->m[k].u.recent.ipv6 = true;
	}
}

int plan_fixed_chains(struct plan_ctx *c)
{
	int e;

	/* The chains kube-proxy declares in every sync, empty or not. */
	for (size_t i = 0; i < owned_n_fixed_chains; i++) {
		const struct owned_fixed *f = &owned_fixed_chains[i];

		if ((f->flags & OWNED_F_BASE) && !chain(c, (enum rs_table)f->table, f->name))
			return -ENOMEM;
	}
	c->sh.nat_services = chain(c, RS_NAT, "KUBE-SERVICES");
	c->sh.nat_nodeports = chain(c, RS_NAT, "KUBE-NODEPORTS");
	c->sh.nat_mark_masq = chain(c, RS_NAT, "KUBE-MARK-MASQ");
	c->sh.f_services = chain(c, RS_FILTER, "KUBE-SERVICES");
	c->sh.f_ext_services = chain(c, RS_FILTER, "KUBE-EXTERNAL-SERVICES");
	c->sh.f_nodeports = chain(c, RS_FILTER, "KUBE-NODEPORTS");
	c->sh.f_proxy_fw = chain(c, RS_FILTER, "KUBE-PROXY-FIREWALL");
	c->np_target = c->sh.nat_nodeports;
	e = write_jumps(c);
	if (e < 0)
		return e;
	return write_fixed_rules(c);
}
