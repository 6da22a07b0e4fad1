/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Rules <-> kernel entries (struct ipt_entry, or struct ip6t_entry for
 * ip6tables, with its matches and target), shared by the libiptc, direct
 * and nf_tables backends.  Entries use the
 * match and target revisions iptables 1.8.9 picks on current kernels
 * (comment 0, tcp/udp/sctp 0, addrtype 1, mark 1, conntrack 3, statistic 0,
 * recent 1, DNAT 2, MARK 2, MASQUERADE 0, REJECT 0), so iptables-legacy-save
 * prints back what the renderer prints and rules written by
 * iptables-restore (kube-proxy) compare equal.  The IPv6 entries differ
 * only where ip6tables' blobs do: REJECT is ip6t_REJECT
 * (icmp6-port-unreachable), DNAT carries an IPv6 address, MASQUERADE is
 * nf_nat_range, recent's mask is the all-ones IPv6 one.  One builder per match and
 * target kind of the model, each in a table; the decoders, one per kernel
 * match and target (name, revision), are xtdecode.c.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <linux/netfilter.h>
#include <linux/netfilter/nf_nat.h>
#include <linux/netfilter/xt_addrtype.h>
#include <linux/netfilter/xt_comment.h>
#include <linux/netfilter/xt_conntrack.h>
#include <linux/netfilter/xt_mark.h>
#include <linux/netfilter/xt_nfacct.h>
#include <linux/netfilter/xt_recent.h>
#include <linux/netfilter/xt_sctp.h>
#include <linux/netfilter/xt_statistic.h>
#include <linux/netfilter/xt_tcpudp.h>
#include <linux/netfilter_ipv4/ipt_REJECT.h>
#include <linux/netfilter_ipv6/ip6t_REJECT.h>

#include "core/owned.h"
#include "backend/xt/xtentry.h"
#include "util.h"

const struct xt_fam xt_fam4 = {
	.af = AF_INET,
	.level = SOL_IP,
	.size = sizeof(struct ipt_entry),
	.target_at = offsetof(struct ipt_entry, target_offset),
	.next_at = offsetof(struct ipt_entry, next_offset),
	.counters_at = offsetof(struct ipt_entry, counters),
	.tool = "iptables",
	.so = "IPT",
};

const struct xt_fam xt_fam6 = {
	.af = AF_INET6,
	.level = SOL_IPV6,
	.size = sizeof(struct ip6t_entry),
	.target_at = offsetof(struct ip6t_entry, target_offset),
	.next_at = offsetof(struct ip6t_entry, next_offset),
	.counters_at = offsetof(struct ip6t_entry, counters),
	.tool = "ip6tables",
	.so = "IP6T",
};

/* --- plan rule -> kernel entry --- */

/* Into a zeroed name field; cut to fit as snprintf would, without its cost
 * (it showed in a 373k-rule build). */
static void put_name(char *dst, const char *src)
{
	memcpy(dst, src, strnlen(src, XT_EXTENSION_MAXNAMELEN - 1));
}

static void *add_match(struct xt_entry_buf *buf, size_t *off, const char *name, uint8_t rev,
		       size_t datalen)
{
	size_t sz = XT_ALIGN(sizeof(struct xt_entry_match) + datalen);
	struct xt_entry_match *m;

	if (*off + sz > XT_ENTRY_MAX)
		return NULL;
	m = (struct xt_entry_match *)(buf->b + *off);
	memset(m, 0, sz);
	m->u.match_size = (uint16_t)sz;
	put_name(m->u.user.name, name);
	m->u.user.revision = rev;
	*off += sz;
	return m->data;
}

/* --dport N as N:N, a range N:M as it is. */
static void port_encode(const struct rs_match *m, uint16_t dpts[2])
{
	dpts[0] = m->u.port.dport;
	dpts[1] = m->u.port.dport_max ? m->u.port.dport_max : m->u.port.dport;
}

static void *add_target(struct xt_entry_buf *buf, size_t *off, const char *name, uint8_t rev,
			size_t datalen)
{
	size_t sz = XT_ALIGN(sizeof(struct xt_entry_target) + datalen);
	struct xt_entry_target *t;

	if (*off + sz > XT_ENTRY_MAX)
		return NULL;
	t = (struct xt_entry_target *)(buf->b + *off);
	memset(t, 0, sz);
	t->u.target_size = (uint16_t)sz;
	put_name(t->u.user.name, name);
	t->u.user.revision = rev;
	*off += sz;
	return t->data;
}

static uint32_t plen_mask(uint8_t plen)
{
	return plen == 0 ? 0 : htonl(0xffffffffu << (32 - plen));
}

static uint16_t ct_states_to_kernel(uint16_t s)
{
	uint16_t k = 0;

	if (s & RS_CT_INVALID)
		k |= XT_CONNTRACK_STATE_INVALID;
	if (s & RS_CT_ESTABLISHED)
		k |= XT_CONNTRACK_STATE_BIT(IP_CT_ESTABLISHED);
	if (s & RS_CT_RELATED)
		k |= XT_CONNTRACK_STATE_BIT(IP_CT_RELATED);
	if (s & RS_CT_NEW)
		k |= XT_CONNTRACK_STATE_BIT(IP_CT_NEW);
	if (s & RS_CT_SNAT)
		k |= XT_CONNTRACK_STATE_SNAT;
	if (s & RS_CT_DNAT)
		k |= XT_CONNTRACK_STATE_DNAT;
	return k;
}

static uint32_t xt_probability_to_kernel(double p)
{
	/* As libxt_statistic: lround(0x80000000 * p). */
	if (!(p > 0))
		return 0;
	if (p >= 1.0)
		return 0x80000000u;
	return (uint32_t)lround(2147483648.0 * p);
}

/* --- one builder per match kind: m of rule r, appended at *off, for
 * address family `af` (AF_INET, AF_INET6) --- */

static int too_big(const char **why)
{
	*why = "rule too large";
	return -EINVAL;
}

static int build_comment(const struct rs_rule *r, int af, const struct rs_match *m,
			 struct xt_entry_buf *buf, size_t *off, const char **why)
{
	struct xt_comment_info *ci;

	(void)r, (void)af;
	if (!m->u.comment || strlen(m->u.comment) >= XT_MAX_COMMENT_LEN) {
		*why = "comment missing or longer than 255 bytes";
		return -EINVAL;
	}
	ci = add_match(buf, off, "comment", 0, sizeof(*ci));
	if (!ci)
		return too_big(why);
	memcpy(ci->comment, m->u.comment, strlen(m->u.comment));
	return 0;
}

static int build_port(const struct rs_rule *r, int af, const struct rs_match *m,
		      struct xt_entry_buf *buf, size_t *off, const char **why)
{
	(void)af;
	if (r->proto == IPPROTO_TCP) {
		struct xt_tcp *tp = add_match(buf, off, "tcp", 0, sizeof(*tp));

		if (!tp)
			return too_big(why);
		tp->spts[1] = 0xffff;
		port_encode(m, tp->dpts);
		if (!m->u.port.dport)
			tp->dpts[1] = 0xffff; /* bare -m tcp */
		if (m->invert)
			tp->invflags = XT_TCP_INV_DSTPT;
	} else if (r->proto == IPPROTO_UDP) {
		struct xt_udp *up = add_match(buf, off, "udp", 0, sizeof(*up));

		if (!up)
			return too_big(why);
		up->spts[1] = 0xffff;
		port_encode(m, up->dpts);
		if (!m->u.port.dport)
			up->dpts[1] = 0xffff;
		if (m->invert)
			up->invflags = XT_UDP_INV_DSTPT;
	} else if (r->proto == IPPROTO_SCTP) {
		struct xt_sctp_info *sp = add_match(buf, off, "sctp", 0, sizeof(*sp));

		if (!sp)
			return too_big(why);
		/* As libxt_sctp's init: no flag chunk types. */
		for (size_t k = 0; k < XT_NUM_SCTP_FLAGS; k++)
			sp->flag_info[k].chunktype = 0xff;
		if (m->u.port.dport) {
			port_encode(m, sp->dpts);
			sp->flags = XT_SCTP_DEST_PORTS;
			if (m->invert)
				sp->invflags = XT_SCTP_DEST_PORTS;
		}
	} else {
		*why = "port match on a rule without -p tcp/udp/sctp";
		return -EINVAL;
	}
	return 0;
}

static int build_addrtype(const struct rs_rule *r, int af, const struct rs_match *m,
			  struct xt_entry_buf *buf, size_t *off, const char **why)
{
	struct xt_addrtype_info_v1 *ai;

	(void)r, (void)af;
	if (m->u.addrtype.type != RS_ADDRTYPE_LOCAL) {
		*why = "addrtype other than LOCAL";
		return -EINVAL;
	}
	ai = add_match(buf, off, "addrtype", 1, sizeof(*ai));
	if (!ai)
		return too_big(why);
	if (m->u.addrtype.src) {
		ai->source = XT_ADDRTYPE_LOCAL;
		if (m->invert)
			ai->flags = XT_ADDRTYPE_INVERT_SOURCE;
	} else {
		ai->dest = XT_ADDRTYPE_LOCAL;
		if (m->invert)
			ai->flags = XT_ADDRTYPE_INVERT_DEST;
	}
	return 0;
}

static int build_mark(const struct rs_rule *r, int af, const struct rs_match *m,
		      struct xt_entry_buf *buf, size_t *off, const char **why)
{
	struct xt_mark_mtinfo1 *mi = add_match(buf, off, "mark", 1, sizeof(*mi));

	(void)r, (void)af;
	if (!mi)
		return too_big(why);
	mi->mark = m->u.mark.value;
	mi->mask = m->u.mark.mask;
	mi->invert = m->invert;
	return 0;
}

static int build_conntrack(const struct rs_rule *r, int af, const struct rs_match *m,
			   struct xt_entry_buf *buf, size_t *off, const char **why)
{
	struct xt_conntrack_mtinfo3 *ct = add_match(buf, off, "conntrack", 3, sizeof(*ct));

	(void)r, (void)af;
	if (!ct)
		return too_big(why);
	ct->match_flags = XT_CONNTRACK_STATE;
	ct->state_mask = ct_states_to_kernel(m->u.ct.states);
	if (m->invert)
		ct->invert_flags = XT_CONNTRACK_STATE;
	return 0;
}

static int build_statistic(const struct rs_rule *r, int af, const struct rs_match *m,
			   struct xt_entry_buf *buf, size_t *off, const char **why)
{
	struct xt_statistic_info *si = add_match(buf, off, "statistic", 0, sizeof(*si));

	(void)r, (void)af;
	if (!si)
		return too_big(why);
	si->mode = XT_STATISTIC_MODE_RANDOM;
	if (m->invert)
		si->flags = XT_STATISTIC_INVERT;
	si->u.random.probability = xt_probability_to_kernel(m->u.stat.probability);
	/* libxt_statistic sets count = every - packet for any mode. */
	si->u.nth.count = si->u.nth.every - si->u.nth.packet;
	return 0;
}

static int build_recent(const struct rs_rule *r, int af, const struct rs_match *m,
			struct xt_entry_buf *buf, size_t *off, const char **why)
{
	struct xt_recent_mtinfo_v1 *ri;

	(void)r;
	if (m->u.recent.ipv6 != (af == AF_INET6)) {
		*why = "recent --mask of the other family";
		return -EINVAL;
	}
	if (!m->u.recent.name || !m->u.recent.name[0] ||
	    strlen(m->u.recent.name) >= XT_RECENT_NAME_LEN) {
		*why = "recent name empty or longer than 199 bytes";
		return -EINVAL;
	}
	if (m->u.recent.set && m->u.recent.update) {
		*why = "recent --set and --update together";
		return -EINVAL;
	}
	ri = add_match(buf, off, "recent", 1, sizeof(*ri));
	if (!ri)
		return too_big(why);
	if (m->u.recent.set)
		ri->check_set = XT_RECENT_SET;
	else if (m->u.recent.update)
		ri->check_set = XT_RECENT_UPDATE;
	else
		ri->check_set = XT_RECENT_CHECK;
	if (!m->u.recent.set) {
		ri->seconds = m->u.recent.seconds;
		if (m->u.recent.reap)
			ri->check_set |= XT_RECENT_REAP;
	}
	ri->invert = m->invert;
	memcpy(ri->name, m->u.recent.name, strlen(m->u.recent.name));
	ri->side = XT_RECENT_SOURCE;
	/* As libxt_recent: the whole address of the family. */
	if (af == AF_INET6)
		memset(&ri->mask.in6, 0xff, sizeof(ri->mask.in6));
	else
		ri->mask.ip = 0xffffffffu;
	return 0;
}

/* Revision 1, as iptables 1.8.9 writes it (the kernel has 0 and 1); the
 * kernel fills in the object pointer and never shows it back. */
static int build_nfacct(const struct rs_rule *r, int af, const struct rs_match *m,
			struct xt_entry_buf *buf, size_t *off, const char **why)
{
	struct xt_nfacct_match_info_v1 *ni;

	(void)r, (void)af;
	if (m->invert || !m->u.nfacct.name || !m->u.nfacct.name[0] ||
	    strlen(m->u.nfacct.name) > RS_NFACCT_NAME_MAXLEN) {
		*why = "nfacct name empty or longer than 31 bytes, or negated";
		return -EINVAL;
	}
	ni = add_match(buf, off, "nfacct", 1, sizeof(*ni));
	if (!ni)
		return too_big(why);
	memcpy(ni->name, m->u.nfacct.name, strlen(m->u.nfacct.name));
	return 0;
}

typedef int (*match_build_fn)(const struct rs_rule *r, int af, const struct rs_match *m,
			      struct xt_entry_buf *buf, size_t *off, const char **why);

static const match_build_fn match_builders[] = {
	[RS_M_COMMENT] = build_comment,     [RS_M_PORT] = build_port,
	[RS_M_ADDRTYPE] = build_addrtype,   [RS_M_MARK] = build_mark,
	[RS_M_CONNTRACK] = build_conntrack, [RS_M_STATISTIC] = build_statistic,
	[RS_M_RECENT] = build_recent,       [RS_M_NFACCT] = build_nfacct,
};

/* --- one builder per target kind --- */

/* A verdict, a jump or a goto: the standard target.  With labels the
 * name of the chain or verdict, as libiptc takes it. */
static int build_standard(const struct rs_rule *r, int af, bool labels, struct xt_entry_buf *buf,
			  size_t *off, const char **why)
{
	const char *name = r->t.kind == RS_T_ACCEPT ? "ACCEPT"
			   : r->t.kind == RS_T_DROP ? "DROP"
			   : r->t.kind == RS_T_RETURN ? "RETURN"
						       : r->t.u.chain;
	int *verdict;

	if (!name || !name[0] || strlen(name) > RS_CHAIN_MAXLEN) {
		*why = "jump without a valid chain name";
		return -EINVAL;
	}
	/* libiptc maps the name to a verdict or a jump offset; the kernel
	 * wants the standard target and the verdict itself. */
	verdict = add_target(buf, off, labels ? name : XT_STANDARD_TARGET, 0, sizeof(int));
	if (!verdict)
		return too_big(why);
	if (!labels)
		*verdict = r->t.kind == RS_T_ACCEPT ? -NF_ACCEPT - 1
			   : r->t.kind == RS_T_DROP ? -NF_DROP - 1
			   : r->t.kind == RS_T_RETURN ? XT_RETURN
						       : 0;
	if (r->t.kind == RS_T_GOTO && af == AF_INET6)
		buf->e6.ipv6.flags |= IP6T_F_GOTO;
	else if (r->t.kind == RS_T_GOTO)
		buf->e.ip.flags |= IPT_F_GOTO;
	return 0;
}

static int build_none(const struct rs_rule *r, int af, bool labels, struct xt_entry_buf *buf,
		      size_t *off, const char **why)
{
	(void)r, (void)af, (void)labels;
	/* An empty standard target: libiptc makes it fall through. */
	if (!add_target(buf, off, "", 0, sizeof(int)))
		return too_big(why);
	return 0;
}

static int build_reject(const struct rs_rule *r, int af, bool labels, struct xt_entry_buf *buf,
			size_t *off, const char **why)
{
	(void)labels;
	/* The model says which ICMP type the rule's text names. */
	if (r->t.u.reject.icmp6 != (af == AF_INET6)) {
		*why = "REJECT with the other family's ICMP type";
		return -EINVAL;
	}
	if (af == AF_INET6) {
		struct ip6t_reject_info *ri6 = add_target(buf, off, "REJECT", 0, sizeof(*ri6));

		if (!ri6)
			return too_big(why);
		ri6->with = IP6T_ICMP6_PORT_UNREACH;
		return 0;
	}
	struct ipt_reject_info *ri = add_target(buf, off, "REJECT", 0, sizeof(*ri));

	if (!ri)
		return too_big(why);
	ri->with = IPT_ICMP_PORT_UNREACHABLE;
	return 0;
}

static int build_dnat(const struct rs_rule *r, int af, bool labels, struct xt_entry_buf *buf,
		      size_t *off, const char **why)
{
	struct nf_nat_range2 *nr;

	(void)labels;
	if (r->t.u.dnat.addr.family != af) {
		*why = af == AF_INET6 ? "DNAT to a non-IPv6 address" : "DNAT to a non-IPv4 address";
		return -EINVAL;
	}
	nr = add_target(buf, off, "DNAT", 2, sizeof(*nr));
	if (!nr)
		return too_big(why);
	nr->flags = NF_NAT_RANGE_MAP_IPS;
	if (af == AF_INET6)
		nr->min_addr.in6 = nr->max_addr.in6 = r->t.u.dnat.addr.u.v6;
	else
		nr->min_addr.ip = nr->max_addr.ip = r->t.u.dnat.addr.u.v4.s_addr;
	if (r->t.u.dnat.port) {
		nr->flags |= NF_NAT_RANGE_PROTO_SPECIFIED;
		nr->min_proto.all = nr->max_proto.all = htons(r->t.u.dnat.port);
	}
	return 0;
}

static int build_mark_target(const struct rs_rule *r, int af, bool labels, struct xt_entry_buf *buf,
			     size_t *off, const char **why)
{
	struct xt_mark_tginfo2 *mt = add_target(buf, off, "MARK", 2, sizeof(*mt));

	(void)af, (void)labels;
	if (!mt)
		return too_big(why);
	owned_mark_encode(&r->t, &mt->mark, &mt->mask);
	return 0;
}

static int build_masquerade(const struct rs_rule *r, int af, bool labels, struct xt_entry_buf *buf,
			    size_t *off, const char **why)
{
	struct nf_nat_ipv4_multi_range_compat *mr;

	(void)labels;
	if (af == AF_INET6) {
		/* ip6tables' MASQUERADE carries a plain nf_nat_range. */
		struct nf_nat_range *r6 = add_target(buf, off, "MASQUERADE", 0, sizeof(*r6));

		if (!r6)
			return too_big(why);
		if (r->t.u.masq.random_fully)
			r6->flags = NF_NAT_RANGE_PROTO_RANDOM_FULLY;
		return 0;
	}
	mr = add_target(buf, off, "MASQUERADE", 0, sizeof(*mr));
	if (!mr)
		return too_big(why);
	mr->rangesize = 1;
	if (r->t.u.masq.random_fully)
		mr->range[0].flags = NF_NAT_RANGE_PROTO_RANDOM_FULLY;
	return 0;
}

typedef int (*target_build_fn)(const struct rs_rule *r, int af, bool labels,
			       struct xt_entry_buf *buf, size_t *off, const char **why);

static const target_build_fn target_builders[] = {
	[RS_T_NONE] = build_none,         [RS_T_JUMP] = build_standard,
	[RS_T_GOTO] = build_standard,     [RS_T_ACCEPT] = build_standard,
	[RS_T_DROP] = build_standard,     [RS_T_RETURN] = build_standard,
	[RS_T_REJECT] = build_reject,     [RS_T_DNAT] = build_dnat,
	[RS_T_MARK] = build_mark_target,  [RS_T_MASQUERADE] = build_masquerade,
};

/* The matches and the target of r after the header (hdr bytes), for
 * family af; *ret_target and *ret_next: the entry's two offsets. */
static int build_body(const struct rs_rule *r, int af, bool labels, struct xt_entry_buf *buf,
		      size_t hdr, uint16_t *ret_target, uint16_t *ret_next, const char **ret_why)
{
	size_t off = hdr;
	int k;

	for (size_t i = 0; i < r->n_matches && i < RS_MAX_MATCHES; i++) {
		const struct rs_match *m = &r->m[i];

		if (m->kind >= ARRAY_SIZE(match_builders) || !match_builders[m->kind]) {
			*ret_why = "unknown match kind";
			return -EINVAL;
		}
		k = match_builders[m->kind](r, af, m, buf, &off, ret_why);
		if (k < 0)
			return k;
	}

	*ret_target = (uint16_t)off;
	if (r->t.kind >= ARRAY_SIZE(target_builders) || !target_builders[r->t.kind]) {
		*ret_why = "unknown target kind";
		return -EINVAL;
	}
	k = target_builders[r->t.kind](r, af, labels, buf, &off, ret_why);
	if (k < 0)
		return k;
	*ret_next = (uint16_t)off;
	return 0;
}

/* As iptables (xtables_parse_interface): "br0" masks its NUL too;
 * "veth+" masks only "veth" and keeps the "+" in the name. */
static int build_iface(const struct rs_rule *r, char name[IFNAMSIZ], unsigned char mask[IFNAMSIZ],
		       const char **ret_why)
{
	size_t n = strlen(r->in_iface);

	/* A decoded rule's prefix may carry its "+" already. */
	if (r->in_iface_prefix && n && r->in_iface[n - 1] == '+')
		n--;
	if (!n || n + r->in_iface_prefix >= IFNAMSIZ) {
		*ret_why = "interface name empty or longer than 15 bytes (with a prefix's '+')";
		return -EINVAL;
	}
	memcpy(name, r->in_iface, n);
	if (r->in_iface_prefix)
		name[n] = '+';
	memset(mask, 0xff, r->in_iface_prefix ? n : n + 1);
	return 0;
}

int xt_entry_build(const struct rs_rule *r, bool labels, struct xt_entry_buf *buf,
		   const char **ret_why)
{
	struct ipt_entry *e = &buf->e;
	int k;

	memset(e, 0, sizeof(*e));
	if (r->src.addr.family) {
		if (r->src.addr.family != AF_INET || r->src.plen > 32)
			goto bad_addr;
		e->ip.smsk.s_addr = plen_mask(r->src.plen);
		e->ip.src.s_addr = r->src.addr.u.v4.s_addr & e->ip.smsk.s_addr;
		if (r->src_inv)
			e->ip.invflags |= IPT_INV_SRCIP;
	}
	if (r->dst.addr.family) {
		if (r->dst.addr.family != AF_INET || r->dst.plen > 32)
			goto bad_addr;
		e->ip.dmsk.s_addr = plen_mask(r->dst.plen);
		e->ip.dst.s_addr = r->dst.addr.u.v4.s_addr & e->ip.dmsk.s_addr;
		if (r->dst_inv)
			e->ip.invflags |= IPT_INV_DSTIP;
	}
	if (r->in_iface) {
		k = build_iface(r, e->ip.iniface, e->ip.iniface_mask, ret_why);
		if (k < 0)
			return k;
		if (r->in_iface_inv)
			e->ip.invflags |= IPT_INV_VIA_IN;
	}
	e->ip.proto = r->proto;
	return build_body(r, AF_INET, labels, buf, sizeof(*e), &e->target_offset, &e->next_offset,
			  ret_why);

bad_addr:
	*ret_why = "address is not IPv4";
	return -EINVAL;
}

void xt_plen_mask6(uint8_t plen, struct in6_addr *m)
{
	memset(m, 0, sizeof(*m));
	for (unsigned i = 0; i < 16 && plen; i++) {
		unsigned bits = plen >= 8 ? 8 : plen;

		m->s6_addr[i] = (uint8_t)(0xff00u >> bits);
		plen = (uint8_t)(plen - bits);
	}
}

static int build_addr6(const struct ipnet *n, struct in6_addr *a, struct in6_addr *m)
{
	if (n->addr.family != AF_INET6 || n->plen > 128)
		return -EINVAL;
	xt_plen_mask6(n->plen, m);
	for (unsigned i = 0; i < 16; i++)
		a->s6_addr[i] = n->addr.u.v6.s6_addr[i] & m->s6_addr[i];
	return 0;
}

int xt_entry_build6(const struct rs_rule *r, bool labels, struct xt_entry_buf *buf,
		    const char **ret_why)
{
	struct ip6t_entry *e = &buf->e6;
	int k;

	memset(e, 0, sizeof(*e));
	if (r->src.addr.family) {
		if (build_addr6(&r->src, &e->ipv6.src, &e->ipv6.smsk) < 0)
			goto bad_addr;
		if (r->src_inv)
			e->ipv6.invflags |= IP6T_INV_SRCIP;
	}
	if (r->dst.addr.family) {
		if (build_addr6(&r->dst, &e->ipv6.dst, &e->ipv6.dmsk) < 0)
			goto bad_addr;
		if (r->dst_inv)
			e->ipv6.invflags |= IP6T_INV_DSTIP;
	}
	if (r->in_iface) {
		k = build_iface(r, e->ipv6.iniface, e->ipv6.iniface_mask, ret_why);
		if (k < 0)
			return k;
		if (r->in_iface_inv)
			e->ipv6.invflags |= IP6T_INV_VIA_IN;
	}
	/* ip6tables sets IP6T_F_PROTO with -p: ip6_tables matches the
	 * protocol only then (it has to walk the extension headers). */
	e->ipv6.proto = r->proto;
	if (r->proto)
		e->ipv6.flags |= IP6T_F_PROTO;
	return build_body(r, AF_INET6, labels, buf, sizeof(*e), &e->target_offset, &e->next_offset,
			  ret_why);

bad_addr:
	*ret_why = "address is not IPv6";
	return -EINVAL;
}

/* --- errors --- */

const char *xt_verdict_name(int verdict)
{
	switch (verdict) {
	case -NF_ACCEPT - 1:
		return "ACCEPT";
	case -NF_DROP - 1:
		return "DROP";
	case -NF_QUEUE - 1:
		return "QUEUE";
	case XT_RETURN:
		return "RETURN";
	default:
		return NULL;
	}
}

const char *xt_errno_meaning(int err, bool commit)
{
	switch (err) {
	case EPERM:
	case EACCES:
		return "svcnat needs CAP_NET_ADMIN (run it as root)";
	case EAGAIN:
		return "another program changed the table while svcnat was writing it";
	case ENOENT:
		return commit ? "the kernel lacks a match or target this ruleset uses "
				"(a missing xt_* module?)"
			      : "the table or chain does not exist (is ip_tables / iptable_nat loaded?)";
	case EINVAL:
		return commit ? "the kernel refused a rule (an option it does not take, or a "
				"target used in the wrong table or chain; dmesg has x_tables' reason)"
			      : "the kernel refused the request";
	case ENOMEM:
		return "the table is too large for the kernel (legacy xtables stops at 512 MiB) "
		       "or memory is short";
	case ELOOP:
		return "the chains would form a loop";
	case ENOPROTOOPT:
	case EAFNOSUPPORT:
	case ENOSYS:
		return "this kernel has no legacy iptables (ip_tables) support; try --backend=restore";
	case EMLINK:
		return "the chain is still referenced by a rule";
	default:
		return NULL;
	}
}
