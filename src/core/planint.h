/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The planner's inside, shared by its files: the planning context and the
 * rule-building helpers (plan.c: the driver; planport.c: one service
 * port; planshared.c: the chains every port shares; planstore.c: the
 * plan kept between syncs).  Not for use outside src/core/plan*.c.
 */
#ifndef SVCNAT_CORE_PLANINT_H
#define SVCNAT_CORE_PLANINT_H

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/chainname.h"
#include "core/plan.h"
#include "util.h"

/* The chains shared by all service ports; plan_port() appends to them
 * (the plan store points them at a port's own segments instead). */
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
	/* The target of nat KUBE-SERVICES' node-port jump (c->sh.nat_nodeports
	 * unless the plan store points that at a segment). */
	struct rs_chain *np_target;
	/* If set, the ruleset plan_port() creates its chains in (their strings
	 * still go to rs). */
	struct ruleset *crs;
	/* If set, every chain plan_port() creates is appended here. */
	struct plan_made {
		struct rs_chain **v;
		size_t n, cap;
	} *made;
};

static inline bool detect_local(const struct plan_ctx *c)
{
	return c->local_cidr || c->local_iface;
}

/* Add the detector's match (IfLocal, or with not_local IfNotLocal) to r. */
static inline void match_local(const struct plan_ctx *c, struct rs_rule *r, bool not_local)
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

static inline const char *zone_or_empty(const char *z)
{
	return z ? z : "";
}

static inline void set_host(struct ipnet *n, const struct ipaddr *a)
{
	n->addr = *a;
	n->plen = a->family == AF_INET ? 32 : 128;
}

static inline bool is_loopback(const struct ipaddr *a)
{
	static const uint8_t v6_lo[16] = { [15] = 1 };

	if (a->family == AF_INET)
		return a->u.b[0] == 127;
	return a->family == AF_INET6 && memcmp(a->u.b, v6_lo, 16) == 0;
}

static inline struct ipnet loopback_net(int family)
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
static inline const char *cat3(struct ruleset *rs, const char *a, const char *b, const char *d)
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

static inline char *put_dec(char *p, unsigned v)
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
static inline void fmt_endpoint(const struct ipaddr *a, uint16_t port, char *out, size_t len)
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

static inline struct rs_rule *rule_new(struct rs_chain *c)
{
	return rs_chain_append(c);
}

/* Every rule here has at most 3 matches (RS_MAX_MATCHES is 3), so adding a
 * match cannot fail; the checks keep that true if rules grow. */
static inline int m_comment(struct rs_rule *r, const char *text)
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

static inline int m_port(struct rs_rule *r, uint8_t proto, uint16_t dport)
{
	struct rs_match *m = rs_rule_add_match(r, RS_M_PORT);

	if (!m)
		return -E2BIG;
	r->proto = proto;
	m->u.port.dport = dport;
	return 0;
}

static inline int m_addrtype(struct rs_rule *r, bool src)
{
	struct rs_match *m = rs_rule_add_match(r, RS_M_ADDRTYPE);

	if (!m)
		return -E2BIG;
	m->u.addrtype.src = src;
	m->u.addrtype.type = RS_ADDRTYPE_LOCAL;
	return 0;
}

static inline int m_ctstate(struct rs_rule *r, bool invert, uint16_t states)
{
	struct rs_match *m = rs_rule_add_match(r, RS_M_CONNTRACK);

	if (!m)
		return -E2BIG;
	m->invert = invert;
	m->u.ct.states = states;
	return 0;
}

static inline int m_mark(struct rs_rule *r, bool invert, uint32_t value, uint32_t mask)
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

static inline int m_recent(struct rs_rule *r, const char *name, enum recent_op op, uint32_t seconds)
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

static inline int m_statistic(struct rs_rule *r, double p)
{
	struct rs_match *m = rs_rule_add_match(r, RS_M_STATISTIC);

	if (!m)
		return -E2BIG;
	m->u.stat.probability = p;
	return 0;
}

static inline int m_nfacct(struct rs_rule *r, const char *name)
{
	struct rs_match *m = rs_rule_add_match(r, RS_M_NFACCT);

	if (!m)
		return -E2BIG;
	m->u.nfacct.name = name;
	return 0;
}

static inline void t_jump(struct rs_rule *r, const struct rs_chain *to)
{
	r->t.kind = RS_T_JUMP;
	r->t.u.chain = to->name;
}

static inline void t_verdict(struct rs_rule *r, enum rs_target_kind k)
{
	r->t.kind = (uint8_t)k;
}

static inline void t_dnat(struct rs_rule *r, const struct endpoint *ep)
{
	r->t.kind = RS_T_DNAT;
	r->t.u.dnat.addr = ep->addr;
	r->t.u.dnat.port = ep->port;
}


static inline size_t count_family_eps(const struct svc_port *sp, int family)
{
	size_t k = 0;

	for (size_t i = 0; i < sp->n_endpoints; i++)
		k += sp->endpoints[i].addr.family == family;
	return k;
}

static inline const struct ipaddr *first_of_family(const struct ipaddr *a, size_t n, int family)
{
	for (size_t i = 0; i < n; i++)
		if (a[i].family == family)
			return &a[i];
	return NULL;
}

/* planport.c: everything one service port contributes (its chains, and its
 * rules in c->sh's chains).  Reads only c's settings-derived fields and
 * sp.  0 or -errno. */
int plan_port(struct plan_ctx *c, const struct svc_port *sp);

/* planshared.c */
/* The local-traffic detector (kube-proxy's getLocalDetectors()). */
int plan_setup_detector(struct plan_ctx *c);
/* The chains declared in every sync, c->sh, the jumps from the built-in
 * chains and the fixed rules. */
int plan_fixed_chains(struct plan_ctx *c);
/* Whether localhost node ports apply (IPv4, --nodeport-addresses). */
bool plan_localhost_nodeports(const struct plan_settings *s);
/* The last rule(s) of nat KUBE-SERVICES, appended to c->sh.nat_services. */
int plan_nodeports_jump(struct plan_ctx *c);
/* The chains dispatch may turn into trees, in plan order. */
#define PLAN_N_DISPATCHED 5
extern const struct plan_dispatched {
	uint8_t table;
	const char *name;
} plan_dispatched[PLAN_N_DISPATCHED];
/* ip6tables' spelling of REJECT and -m recent in one chain's rules. */
void plan_mark_ipv6(struct rs_rule *rules, size_t n);
/* plan.c: c->s and c->rs set: the settings-derived fields of c. */
int plan_setup_ctx(struct plan_ctx *c, const struct desired *d);
/* Whether a and b are the same service port (key and protocol). */
bool plan_same_port(const struct svc_port *a, const struct svc_port *b);

#endif
