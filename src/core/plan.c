/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The layout follows kube-proxy's iptables proxier (syncProxyRules,
 * writeServiceToEndpointRules, iptablesJumpChains) and its endpoint
 * selection (proxy.CategorizeEndpoints).  Everything a service port needs is
 * written by plan_port(), which reads only the settings-derived context and
 * that port, so its output can later be cached per service port.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/chainname.h"
#include "core/owned.h"
#include "core/plan.h"
#include "util.h"

void plan_settings_init(struct plan_settings *s)
{
	memset(s, 0, sizeof(*s));
	s->family = AF_INET;
	s->localhost_nodeports = true;
	s->masquerade_bit = 14;
	s->random_fully = true;
	s->large_cluster_threshold = 1000;
	s->compact_endpoints_threshold = 250000;
	s->dispatch = DISPATCH_AUTO;
	s->dispatch_threshold = PLAN_DISPATCH_THRESHOLD;
	s->dispatch_leaf_max = 32;
}

/* The chains shared by all service ports; plan_port() appends to them. */
struct plan_shared {
	struct rs_chain *nat_services;
	struct rs_chain *nat_nodeports;
	struct rs_chain *nat_mark_masq;
	struct rs_chain *f_services;
	struct rs_chain *f_ext_services;
	struct rs_chain *f_nodeports;
	struct rs_chain *f_proxy_fw;
};

/* Scratch per endpoint of the service port being planned. */
struct ep_slot {
	const struct endpoint *ep;
	const char *comment;   /* "ns/svc:port -> ip:port" (NULL in large-cluster mode) */
	bool cluster;          /* in the Cluster-policy set */
	bool local;            /* in the Local-policy set */
	struct rs_chain *sep;  /* its KUBE-SEP- chain when reachable from here */
	const char *recent;    /* compact layout: the KUBE-SEP- name, as the
				* recent list name of an affinity service */
	char str[INET6_ADDRSTRLEN + 8];
};

struct plan_ctx {
	const struct plan_settings *s;
	struct ruleset *rs;
	struct chain_hasher *hasher;
	struct diag_list *diags;
	struct plan_shared sh;
	uint32_t masq_mark;
	bool large_cluster;            /* leave out per-endpoint comments */
	bool compact;                  /* no KUBE-SEP- chains (plan.h) */
	bool localhost_nodeports;      /* effective (needs IPv4 and a loopback node-port range) */
	/* The local-traffic detector (kube-proxy's LocalTrafficDetector):
	 * pods are "-s local_cidr" or "-i local_iface[+]"; neither: none. */
	const struct ipnet *local_cidr;
	const char *local_iface;
	bool local_iface_prefix;
	const struct ipaddr *node_ip;  /* primary node IP of the family, or NULL */
	struct ep_slot *eps;
	size_t cap_eps;
	size_t n_ports;
	size_t n_seps;
	size_t no_local_internal;      /* kube-proxy's serviceNoLocalEndpointsTotal{Internal,External} */
	size_t no_local_external;
};

static bool detect_local(const struct plan_ctx *c)
{
	return c->local_cidr || c->local_iface;
}

/* Add the detector's match (IfLocal, or with not_local IfNotLocal) to r. */
static void match_local(const struct plan_ctx *c, struct rs_rule *r, bool not_local)
{
	if (c->local_cidr) {
		r->src = *c->local_cidr;
		r->src_inv = not_local;
	} else if (c->local_iface) {
		r->in_iface = c->local_iface;
		r->in_iface_prefix = c->local_iface_prefix;
		r->in_iface_inv = not_local;
	}
}

static const char *zone_or_empty(const char *z)
{
	return z ? z : "";
}

static void set_host(struct ipnet *n, const struct ipaddr *a)
{
	n->addr = *a;
	n->plen = a->family == AF_INET ? 32 : 128;
}

static bool is_loopback(const struct ipaddr *a)
{
	static const uint8_t v6_lo[16] = { [15] = 1 };

	if (a->family == AF_INET)
		return a->u.b[0] == 127;
	return a->family == AF_INET6 && memcmp(a->u.b, v6_lo, 16) == 0;
}

static struct ipnet loopback_net(int family)
{
	struct ipnet n = { 0 };

	n.addr.family = (uint8_t)family;
	if (family == AF_INET) {
		n.addr.u.b[0] = 127;
		n.plen = 8;
	} else {
		n.addr.u.b[15] = 1;
		n.plen = 128;
	}
	return n;
}

/* Arena copy of a + b + d: the common comment shapes, without printf. */
static const char *cat3(struct ruleset *rs, const char *a, const char *b, const char *d)
{
	size_t la = strlen(a), lb = strlen(b), ld = strlen(d);
	char buf[512];

	if (la + lb + ld >= sizeof(buf))
		return ruleset_printf(rs, "%s%s%s", a, b, d);
	memcpy(buf, a, la);
	memcpy(buf + la, b, lb);
	memcpy(buf + la + lb, d, ld + 1);
	return ruleset_strdup(rs, buf);
}

static char *put_dec(char *p, unsigned v)
{
	char tmp[10];
	size_t n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*p++ = tmp[--n];
	return p;
}

/* "ip:port" or "[ip6]:port" as kube-proxy's endpoint String(). */
static void fmt_endpoint(const struct ipaddr *a, uint16_t port, char *out, size_t len)
{
	char *p = out;

	if (a->family == AF_INET) {
		for (int i = 0; i < 4; i++) {
			p = put_dec(p, a->u.b[i]);
			*p++ = i < 3 ? '.' : ':';
		}
		*put_dec(p, port) = '\0';
	} else {
		char ip6[INET6_ADDRSTRLEN];

		snprintf(out, len, "[%s]:%u", ipaddr_fmt(a, ip6, sizeof(ip6)), port);
	}
}

/* --- rule building: matches are added in kube-proxy's argument order --- */

static struct rs_rule *rule_new(struct rs_chain *c)
{
	return rs_chain_append(c);
}

/* Every rule here has at most 3 matches (RS_MAX_MATCHES is 5), so adding a
 * match cannot fail; the checks keep that true if rules grow. */
static int m_comment(struct rs_rule *r, const char *text)
{
	struct rs_match *m;

	if (!text)
		return 0;
	m = rs_rule_add_match(r, RS_M_COMMENT);
	if (!m)
		return -E2BIG;
	m->u.comment = text;
	return 0;
}

static int m_port(struct rs_rule *r, uint8_t proto, uint16_t dport)
{
	struct rs_match *m = rs_rule_add_match(r, RS_M_PORT);

	if (!m)
		return -E2BIG;
	r->proto = proto;
	m->u.port.dport = dport;
	return 0;
}

static int m_addrtype(struct rs_rule *r, bool src)
{
	struct rs_match *m = rs_rule_add_match(r, RS_M_ADDRTYPE);

	if (!m)
		return -E2BIG;
	m->u.addrtype.src = src;
	m->u.addrtype.type = RS_ADDRTYPE_LOCAL;
	return 0;
}

static int m_ctstate(struct rs_rule *r, bool invert, uint16_t states)
{
	struct rs_match *m = rs_rule_add_match(r, RS_M_CONNTRACK);

	if (!m)
		return -E2BIG;
	m->invert = invert;
	m->u.ct.states = states;
	return 0;
}

static int m_mark(struct rs_rule *r, bool invert, uint32_t value, uint32_t mask)
{
	struct rs_match *m = rs_rule_add_match(r, RS_M_MARK);

	if (!m)
		return -E2BIG;
	m->invert = invert;
	m->u.mark.value = value;
	m->u.mark.mask = mask;
	return 0;
}

enum recent_op {
	RECENT_SET,
	RECENT_CHECK,  /* --rcheck --seconds S --reap */
	RECENT_UPDATE, /* --update --seconds S --reap */
};

static int m_recent(struct rs_rule *r, const char *name, enum recent_op op, uint32_t seconds)
{
	struct rs_match *m = rs_rule_add_match(r, RS_M_RECENT);

	if (!m)
		return -E2BIG;
	m->u.recent.name = name;
	m->u.recent.set = op == RECENT_SET;
	m->u.recent.update = op == RECENT_UPDATE;
	if (op != RECENT_SET) {
		m->u.recent.seconds = seconds;
		m->u.recent.reap = true;
	}
	return 0;
}

static int m_statistic(struct rs_rule *r, double p)
{
	struct rs_match *m = rs_rule_add_match(r, RS_M_STATISTIC);

	if (!m)
		return -E2BIG;
	m->u.stat.probability = p;
	return 0;
}

static void t_jump(struct rs_rule *r, const struct rs_chain *to)
{
	r->t.kind = RS_T_JUMP;
	r->t.u.chain = to->name;
}

static void t_verdict(struct rs_rule *r, enum rs_target_kind k)
{
	r->t.kind = (uint8_t)k;
}

static void t_dnat(struct rs_rule *r, const struct endpoint *ep)
{
	r->t.kind = RS_T_DNAT;
	r->t.u.dnat.addr = ep->addr;
	r->t.u.dnat.port = ep->port;
}

/* --- endpoint categorization (proxy.CategorizeEndpoints) --- */

static bool ep_hinted_for(const struct endpoint *ep, const char *zone)
{
	for (size_t i = 0; i < ep->n_hint_zones; i++)
		if (ep->hint_zones[i] && streq(ep->hint_zones[i], zone))
			return true;
	return false;
}

/*
 * Zone hints are used only when every ready endpoint has some and at least
 * one is for this node's zone (all or nothing, as topologyModeFromHints).
 */
static bool use_zone_hints(const struct ep_slot *eps, size_t n, const char *zone)
{
	bool all_hinted = true, for_zone = false;

	for (size_t i = 0; i < n; i++) {
		const struct endpoint *ep = eps[i].ep;

		if (!ep->ready)
			continue;
		if (ep->n_hint_zones == 0)
			all_hinted = false;
		else if (ep_hinted_for(ep, zone))
			for_zone = true;
	}
	return all_hinted && for_zone;
}

struct categories {
	size_t n_cluster;
	size_t n_local;
	bool has_any; /* usable endpoints anywhere in the cluster */
};

static void categorize(struct ep_slot *eps, size_t n, bool uses_cluster, bool uses_local,
		       const char *zone, struct categories *cat)
{
	memset(cat, 0, sizeof(*cat));

	if (uses_cluster) {
		bool topo = use_zone_hints(eps, n, zone);

		for (size_t i = 0; i < n; i++) {
			const struct endpoint *ep = eps[i].ep;

			if (ep->ready && (!topo || ep_hinted_for(ep, zone))) {
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

static size_t count_family_eps(const struct svc_port *sp, int family)
{
	size_t k = 0;

	for (size_t i = 0; i < sp->n_endpoints; i++)
		k += sp->endpoints[i].addr.family == family;
	return k;
}

static const struct ipaddr *first_of_family(const struct ipaddr *a, size_t n, int family)
{
	for (size_t i = 0; i < n; i++)
		if (a[i].family == family)
			return &a[i];
	return NULL;
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
	struct rs_chain *ch = ruleset_add_chain(c->rs, RS_NAT, name);

	return ch && chain_reserve(ch, n_rules) ? ch : NULL;
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
	categorize(c->eps, pp->n_eps, uses_cluster, uses_local, zone_or_empty(c->s->zone),
		   &pp->cat);
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

/* The port's rules in the shared chains: nat KUBE-SERVICES and
 * KUBE-NODEPORTS, filter KUBE-SERVICES, KUBE-EXTERNAL-SERVICES,
 * KUBE-PROXY-FIREWALL and KUBE-NODEPORTS. */
static int port_shared_rules(struct plan_ctx *c, const struct port_plan *pp)
{
	const struct svc_port *sp = pp->sp;
	const int fam = c->s->family;
	const bool any = pp->cat.has_any;
	struct rs_rule *r;
	int e;

	if (!pp->cip) {
		/* no cluster IP: nothing to capture or reject for it */
	} else if (pp->has_internal) {
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

	if (pp->n_ext_ips) {
		const char *cm = NULL;

		if (any && !(cm = cat3(c->rs, pp->key, " external IP", "")))
			return -ENOMEM;
		for (size_t i = 0; i < sp->n_external_ips; i++) {
			const struct ipaddr *a = &sp->external_ips[i];

			if (a->family != fam)
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
	}

	if (pp->n_lb) {
		const char *fw_cm = NULL;

		if (pp->fw && !(fw_cm = ruleset_printf(c->rs, "%s traffic not accepted by %s",
						       pp->key, pp->fw->name)))
			return -ENOMEM;
		for (size_t i = 0; i < sp->n_lb_ips; i++) {
			const struct ipaddr *a = &sp->lb_ips[i];

			if (a->family != fam)
				continue;
			if (any) {
				r = dst_rule(c->sh.nat_services, pp->lb_comment, a, sp->protocol,
					     sp->port);
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
			if (!(r = dst_rule(c->sh.f_ext_services, pp->ext_filter_comment, a,
					   sp->protocol, sp->port)))
				return -ENOMEM;
			t_verdict(r, pp->ext_filter);
		}
	}

	/* Node ports are not subject to loadBalancerSourceRanges (kube-proxy). */
	if (sp->node_port) {
		if (any) {
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

/*
 * Everything one service port contributes: its own chains (KUBE-SVC-,
 * KUBE-SVL-, KUBE-EXT-, KUBE-FW-, KUBE-SEP-) and its rules in the shared
 * chains (c->sh).  Reads only c's settings-derived fields and sp.
 */
static int plan_port(struct plan_ctx *c, const struct svc_port *sp)
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
		if ((e = m_ctstate(r, false, RS_CT_INVALID)) < 0)
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
static int write_nodeports_jump(struct plan_ctx *c, const struct nodeport_addrs *npa)
{
	static const char comment[] =
		"kubernetes service nodeports; NOTE: this must be the last rule in this chain";
	const struct plan_settings *s = c->s;
	struct rs_chain *np = c->sh.nat_nodeports;
	struct rs_rule *r;
	int e;

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
static int setup_detector(struct plan_ctx *c)
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

/* ip6tables spells two rules differently: REJECT's ICMPv6 type and the
 * recent match's all-ones mask. */
static void mark_ipv6(struct ruleset *rs)
{
	for (size_t t = 0; t < RS_NTABLES; t++) {
		for (size_t i = 0; i < rs->t[t].n; i++) {
			struct rs_chain *ch = rs->t[t].chains[i];

			for (size_t j = 0; j < ch->n_rules; j++) {
				struct rs_rule *r = &ch->rules[j];

				if (r->t.kind == RS_T_REJECT)
					r->t.u.reject.icmp6 = true;
				for (size_t k = 0; k < r->n_matches; k++)
					if (r->m[k].kind == RS_M_RECENT)
						r->m[k].u.recent.ipv6 = true;
			}
		}
	}
}

static int setup_ctx(struct plan_ctx *c, const struct desired *d)
{
	const struct plan_settings *s = c->s;
	struct nodeport_addrs npa;
	size_t total = 0;
	int e;

	c->masq_mark = 1u << s->masquerade_bit;
	c->node_ip = first_of_family(s->node_ips, s->n_node_ips, s->family);

	e = setup_detector(c);
	if (e < 0)
		return e;

	nodeport_addrs_init(s, &npa);
	c->localhost_nodeports = s->localhost_nodeports && s->family == AF_INET &&
				 npa.contains_loopback;

	for (size_t i = 0; i < d->n_ports; i++) {
		const struct svc_port *sp = &d->ports[i];

		if (sp->skipped || !first_of_family(sp->cluster_ips, sp->n_cluster_ips, s->family))
			continue;
		total += count_family_eps(sp, s->family);
	}
	c->large_cluster = total > s->large_cluster_threshold;
	c->compact = s->compact_endpoints_threshold && total > s->compact_endpoints_threshold;
	return 0;
}

/* The chains kube-proxy fills with one rule per service IP or port. */
static const struct {
	uint8_t table;
	const char *name;
} dispatched[] = {
	{ RS_NAT, "KUBE-SERVICES" },
	{ RS_NAT, "KUBE-NODEPORTS" },
	{ RS_FILTER, "KUBE-SERVICES" },
	{ RS_FILTER, "KUBE-EXTERNAL-SERVICES" },
	{ RS_FILTER, "KUBE-NODEPORTS" },
};

static int write_dispatch(struct plan_ctx *c, struct dispatch_stats *st)
{
	const struct dispatch_params p = {
		.mode = c->s->dispatch,
		.threshold = c->s->dispatch_threshold,
		.leaf_max = c->s->dispatch_leaf_max,
	};

	for (size_t i = 0; i < ARRAY_SIZE(dispatched); i++) {
		int e = dispatch_chain(c->rs, c->hasher, dispatched[i].table, dispatched[i].name,
				       &p, st);

		if (e < 0)
			return e;
	}
	return 0;
}

static bool same_port(const struct svc_port *a, const struct svc_port *b)
{
	return a->key && b->key && streq(a->key, b->key) && a->protocol == b->protocol;
}

int plan_build(const struct desired *d, const struct plan_settings *s,
	       struct ruleset **ret, struct plan_stats *stats, struct diag_list *diags)
{
	struct plan_ctx c = { .s = s, .diags = diags };
	struct dispatch_stats dst = { 0 };
	struct nodeport_addrs npa;
	int e;

	if (s->masquerade_bit > 31 || (s->family != AF_INET && s->family != AF_INET6) ||
	    !s->dispatch_leaf_max)
		return -EINVAL;
	c.rs = ruleset_new();
	c.hasher = s->hasher ? s->hasher : chain_hasher_new();
	if (!c.rs || !c.hasher) {
		e = -ENOMEM;
		goto out;
	}

	e = setup_ctx(&c, d);
	if (e < 0)
		goto out;

	/* The chains kube-proxy declares in every sync, empty or not. */
	for (size_t i = 0; i < owned_n_fixed_chains; i++) {
		const struct owned_fixed *f = &owned_fixed_chains[i];

		if ((f->flags & OWNED_F_BASE) && !chain(&c, (enum rs_table)f->table, f->name)) {
			e = -ENOMEM;
			goto out;
		}
	}
	c.sh.nat_services = chain(&c, RS_NAT, "KUBE-SERVICES");
	c.sh.nat_nodeports = chain(&c, RS_NAT, "KUBE-NODEPORTS");
	c.sh.nat_mark_masq = chain(&c, RS_NAT, "KUBE-MARK-MASQ");
	c.sh.f_services = chain(&c, RS_FILTER, "KUBE-SERVICES");
	c.sh.f_ext_services = chain(&c, RS_FILTER, "KUBE-EXTERNAL-SERVICES");
	c.sh.f_nodeports = chain(&c, RS_FILTER, "KUBE-NODEPORTS");
	c.sh.f_proxy_fw = chain(&c, RS_FILTER, "KUBE-PROXY-FIREWALL");

	e = write_jumps(&c);
	if (e < 0)
		goto out;
	e = write_fixed_rules(&c);
	if (e < 0)
		goto out;
	for (size_t i = 0; i < d->n_ports; i++) {
		const struct svc_port *sp = &d->ports[i];

		/* Ports are sorted by (key, protocol): a repeat is adjacent. */
		if (i > 0 && same_port(sp, &d->ports[i - 1])) {
			e = diags ? diag_add(diags, DIAG_ERROR, NULL, sp->key, NULL,
					     "service port defined twice; the first is used")
				  : 0;
			if (e < 0)
				goto out;
			continue;
		}
		e = plan_port(&c, sp);
		if (e < 0)
			goto out;
	}
	nodeport_addrs_init(s, &npa);
	e = write_nodeports_jump(&c, &npa);
	if (e < 0)
		goto out;
	e = write_dispatch(&c, &dst);
	if (e < 0)
		goto out;

	if (s->family == AF_INET6)
		mark_ipv6(c.rs);
	ruleset_sort(c.rs);
	if (stats) {
		stats->services = c.n_ports;
		stats->endpoints = c.n_seps;
		stats->no_local_internal = c.no_local_internal;
		stats->no_local_external = c.no_local_external;
		stats->chains = ruleset_count_chains(c.rs);
		stats->rules = ruleset_count_rules(c.rs);
		stats->dispatch_chains = dst.chains;
		stats->dispatch_trees = dst.trees;
	}
	*ret = TAKE_PTR(c.rs);
	e = 0;
	if (s->hasher)
		chain_hasher_sweep(s->hasher); /* forget the names of ports gone */
out:
	ruleset_free(c.rs);
	if (c.hasher != s->hasher)
		chain_hasher_free(c.hasher);
	free(c.eps);
	return e;
}
