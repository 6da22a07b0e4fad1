/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Kernel entries -> rules, the decoding half of the xt entry codec
 * (xtentry.h; the encoder is xtentry.c): one decoder per kernel match and
 * target (name, revision), each in a table.  A rule using anything the
 * model has no place for does not decode: it is not svcnat's.
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

/* -EINVAL when the kernel mask has a state the model lacks. */
static int ct_states_from_kernel(uint16_t k)
{
	static const struct {
		uint16_t k, rs;
	} map[] = {
		{ XT_CONNTRACK_STATE_INVALID, RS_CT_INVALID },
		{ XT_CONNTRACK_STATE_BIT(IP_CT_ESTABLISHED), RS_CT_ESTABLISHED },
		{ XT_CONNTRACK_STATE_BIT(IP_CT_RELATED), RS_CT_RELATED },
		{ XT_CONNTRACK_STATE_BIT(IP_CT_NEW), RS_CT_NEW },
		{ XT_CONNTRACK_STATE_SNAT, RS_CT_SNAT },
		{ XT_CONNTRACK_STATE_DNAT, RS_CT_DNAT },
	};
	int rs = 0;

	for (size_t i = 0; i < ARRAY_SIZE(map); i++) {
		if (k & map[i].k) {
			rs |= map[i].rs;
			k &= (uint16_t)~map[i].k;
		}
	}
	return k ? -EINVAL : rs;
}

/* --- kernel entry -> rule (for comparing and for --diff) --- */

/* A port or a range N:M with 1 <= N <= M, or the bare match (0:65535). */
static bool port_single(const uint16_t dpts[2], bool invert)
{
	if (dpts[0] == 0 && dpts[1] == 0xffff)
		return !invert;
	return dpts[0] <= dpts[1] && dpts[0] != 0;
}

static void port_decode(const uint16_t dpts[2], struct rs_match *rm)
{
	rm->u.port.dport = dpts[1] == 0xffff && !dpts[0] ? 0 : dpts[0];
	rm->u.port.dport_max = rm->u.port.dport && dpts[1] != dpts[0] ? dpts[1] : 0;
}

static const char *entry_str(const char *s, size_t max)
{
	return memchr(s, '\0', max) ? s : NULL;
}

/* --- one decoder per kernel match: false for options svcnat does not
 * write --- */

static bool dec_comment(const struct rs_rule *r, const void *data, struct rs_match *rm)
{
	const struct xt_comment_info *ci = data;

	(void)r;
	rm->kind = RS_M_COMMENT;
	return (rm->u.comment = entry_str(ci->comment, sizeof(ci->comment))) != NULL;
}

static bool dec_tcp(const struct rs_rule *r, const void *data, struct rs_match *rm)
{
	const struct xt_tcp *tp = data;

	if (r->proto != IPPROTO_TCP || tp->spts[0] != 0 || tp->spts[1] != 0xffff ||
	    !port_single(tp->dpts, tp->invflags & XT_TCP_INV_DSTPT) || tp->option ||
	    tp->flg_mask || tp->flg_cmp || (tp->invflags & ~XT_TCP_INV_DSTPT))
		return false;
	rm->kind = RS_M_PORT;
	port_decode(tp->dpts, rm);
	rm->invert = tp->invflags & XT_TCP_INV_DSTPT;
	return true;
}

static bool dec_udp(const struct rs_rule *r, const void *data, struct rs_match *rm)
{
	const struct xt_udp *up = data;

	if (r->proto != IPPROTO_UDP || up->spts[0] != 0 || up->spts[1] != 0xffff ||
	    !port_single(up->dpts, up->invflags & XT_UDP_INV_DSTPT) ||
	    (up->invflags & ~XT_UDP_INV_DSTPT))
		return false;
	rm->kind = RS_M_PORT;
	port_decode(up->dpts, rm);
	rm->invert = up->invflags & XT_UDP_INV_DSTPT;
	return true;
}

static bool dec_sctp(const struct rs_rule *r, const void *data, struct rs_match *rm)
{
	const struct xt_sctp_info *sp = data;

	if (r->proto != IPPROTO_SCTP || (sp->flags != XT_SCTP_DEST_PORTS && sp->flags != 0) ||
	    (sp->flags && (sp->dpts[0] > sp->dpts[1] || !sp->dpts[0])) ||
	    (sp->invflags & ~sp->flags))
		return false;
	rm->kind = RS_M_PORT;
	if (sp->flags)
		port_decode(sp->dpts, rm);
	rm->invert = sp->invflags & XT_SCTP_DEST_PORTS;
	return true;
}

static bool dec_addrtype(const struct rs_rule *r, const void *data, struct rs_match *rm)
{
	const struct xt_addrtype_info_v1 *ai = data;

	(void)r;
	rm->kind = RS_M_ADDRTYPE;
	rm->u.addrtype.type = RS_ADDRTYPE_LOCAL;
	if (ai->source == XT_ADDRTYPE_LOCAL && !ai->dest &&
	    !(ai->flags & ~XT_ADDRTYPE_INVERT_SOURCE)) {
		rm->u.addrtype.src = true;
		rm->invert = ai->flags & XT_ADDRTYPE_INVERT_SOURCE;
		return true;
	}
	if (ai->dest == XT_ADDRTYPE_LOCAL && !ai->source && !(ai->flags & ~XT_ADDRTYPE_INVERT_DEST)) {
		rm->invert = ai->flags & XT_ADDRTYPE_INVERT_DEST;
		return true;
	}
	return false;
}

static bool dec_mark(const struct rs_rule *r, const void *data, struct rs_match *rm)
{
	const struct xt_mark_mtinfo1 *mi = data;

	(void)r;
	if (mi->invert > 1)
		return false;
	rm->kind = RS_M_MARK;
	rm->u.mark.value = mi->mark;
	rm->u.mark.mask = mi->mask;
	rm->invert = mi->invert;
	return true;
}

static bool dec_conntrack(const struct rs_rule *r, const void *data, struct rs_match *rm)
{
	const struct xt_conntrack_mtinfo3 *ct = data;
	int states;

	(void)r;
	if (ct->match_flags != XT_CONNTRACK_STATE || (ct->invert_flags & ~XT_CONNTRACK_STATE) ||
	    (states = ct_states_from_kernel(ct->state_mask)) < 0)
		return false;
	rm->kind = RS_M_CONNTRACK;
	rm->u.ct.states = (uint16_t)states;
	rm->invert = ct->invert_flags & XT_CONNTRACK_STATE;
	return true;
}

static bool dec_statistic(const struct rs_rule *r, const void *data, struct rs_match *rm)
{
	const struct xt_statistic_info *si = data;

	(void)r;
	if (si->mode != XT_STATISTIC_MODE_RANDOM || (si->flags & ~XT_STATISTIC_INVERT))
		return false;
	rm->kind = RS_M_STATISTIC;
	rm->u.stat.probability = si->u.random.probability / 2147483648.0;
	rm->invert = si->flags & XT_STATISTIC_INVERT;
	return true;
}

/* recent with the all-ones mask of family af. */
static bool dec_recent_af(const void *data, int af, struct rs_match *rm)
{
	static const uint8_t ones[16] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
					  0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	const struct xt_recent_mtinfo_v1 *ri = data;
	uint8_t op;

	if (ri->hit_count || ri->invert > 1 || ri->side != XT_RECENT_SOURCE ||
	    (af == AF_INET6 ? memcmp(&ri->mask.in6, ones, 16) != 0 : ri->mask.ip != 0xffffffffu) ||
	    !(rm->u.recent.name = entry_str(ri->name, sizeof(ri->name))))
		return false;
	op = ri->check_set & (uint8_t)~XT_RECENT_REAP;
	if (op == XT_RECENT_SET && !(ri->check_set & XT_RECENT_REAP) && !ri->seconds)
		rm->u.recent.set = true;
	else if (op == XT_RECENT_UPDATE)
		rm->u.recent.update = true;
	else if (op != XT_RECENT_CHECK)
		return false;
	rm->kind = RS_M_RECENT;
	rm->u.recent.ipv6 = af == AF_INET6;
	rm->u.recent.reap = ri->check_set & XT_RECENT_REAP;
	rm->u.recent.seconds = ri->seconds;
	rm->invert = ri->invert;
	return true;
}

static bool dec_recent(const struct rs_rule *r, const void *data, struct rs_match *rm)
{
	(void)r;
	return dec_recent_af(data, AF_INET, rm);
}

static bool dec_recent6(const struct rs_rule *r, const void *data, struct rs_match *rm)
{
	(void)r;
	return dec_recent_af(data, AF_INET6, rm);
}

/* The object pointer is the kernel's (zero in what it shows back). */
static bool dec_nfacct(const struct rs_rule *r, const void *data, struct rs_match *rm)
{
	const struct xt_nfacct_match_info_v1 *ni = data;

	(void)r;
	if (!(rm->u.nfacct.name = entry_str(ni->name, sizeof(ni->name))) || !ni->name[0])
		return false;
	rm->kind = RS_M_NFACCT;
	return true;
}

/* The kernel matches svcnat reads back, at the revisions it writes
 * (af 0: the same blob in both families). */
static const struct {
	const char *name;
	uint8_t rev;
	int af;
	size_t size; /* of the match data */
	bool (*decode)(const struct rs_rule *r, const void *data, struct rs_match *rm);
} match_decoders[] = {
	{ "comment", 0, 0, sizeof(struct xt_comment_info), dec_comment },
	{ "tcp", 0, 0, sizeof(struct xt_tcp), dec_tcp },
	{ "udp", 0, 0, sizeof(struct xt_udp), dec_udp },
	{ "sctp", 0, 0, sizeof(struct xt_sctp_info), dec_sctp },
	{ "addrtype", 1, 0, sizeof(struct xt_addrtype_info_v1), dec_addrtype },
	{ "mark", 1, 0, sizeof(struct xt_mark_mtinfo1), dec_mark },
	{ "conntrack", 3, 0, sizeof(struct xt_conntrack_mtinfo3), dec_conntrack },
	{ "statistic", 0, 0, sizeof(struct xt_statistic_info), dec_statistic },
	{ "recent", 1, AF_INET, sizeof(struct xt_recent_mtinfo_v1), dec_recent },
	{ "recent", 1, AF_INET6, sizeof(struct xt_recent_mtinfo_v1), dec_recent6 },
	{ "nfacct", 1, 0, sizeof(struct xt_nfacct_match_info_v1), dec_nfacct },
};

/* Decode the match at m into the next slot of r; -EINVAL with a reason. */
static int decode_match(const struct xt_entry_match *m, int af, struct rs_rule *r, char *why,
			size_t whylen)
{
	const char *name = m->u.user.name;
	uint8_t rev = m->u.user.revision;

	for (size_t i = 0; i < ARRAY_SIZE(match_decoders); i++) {
		if (match_decoders[i].rev != rev || (match_decoders[i].af && match_decoders[i].af != af) ||
		    !streq(match_decoders[i].name, name))
			continue;
		if (m->u.match_size < XT_ALIGN(sizeof(*m) + match_decoders[i].size) ||
		    !match_decoders[i].decode(r, m->data, &r->m[r->n_matches])) {
			snprintf(why, whylen, "options of match '%.29s' that svcnat does not write",
				 name);
			return -EINVAL;
		}
		r->n_matches++;
		return 0;
	}
	snprintf(why, whylen, "match '%.29s' revision %u", name, rev);
	return -EINVAL;
}

/* --- one decoder per kernel target (the standard one aside) --- */

static bool dec_reject(const void *data, struct rs_target *t)
{
	const struct ipt_reject_info *ri = data;

	t->kind = RS_T_REJECT;
	return ri->with == IPT_ICMP_PORT_UNREACHABLE;
}

static bool dec_reject6(const void *data, struct rs_target *t)
{
	const struct ip6t_reject_info *ri = data;

	t->kind = RS_T_REJECT;
	t->u.reject.icmp6 = true;
	return ri->with == IP6T_ICMP6_PORT_UNREACH;
}

static bool dec_dnat_af(const void *data, int af, struct rs_target *t)
{
	const struct nf_nat_range2 *nr = data;

	if (!(nr->flags & NF_NAT_RANGE_MAP_IPS) ||
	    (nr->flags & ~(NF_NAT_RANGE_MAP_IPS | NF_NAT_RANGE_PROTO_SPECIFIED)) ||
	    memcmp(&nr->min_addr, &nr->max_addr, sizeof(nr->min_addr)) != 0)
		return false;
	t->kind = RS_T_DNAT;
	t->u.dnat.addr.family = (uint8_t)af;
	if (af == AF_INET6)
		t->u.dnat.addr.u.v6 = nr->min_addr.in6;
	else
		t->u.dnat.addr.u.v4.s_addr = nr->min_addr.ip;
	if (nr->flags & NF_NAT_RANGE_PROTO_SPECIFIED) {
		if (nr->min_proto.all != nr->max_proto.all || !nr->min_proto.all)
			return false;
		t->u.dnat.port = ntohs(nr->min_proto.all);
	}
	return true;
}

static bool dec_dnat(const void *data, struct rs_target *t)
{
	return dec_dnat_af(data, AF_INET, t);
}

static bool dec_dnat6(const void *data, struct rs_target *t)
{
	return dec_dnat_af(data, AF_INET6, t);
}

static bool dec_mark_target(const void *data, struct rs_target *t)
{
	const struct xt_mark_tginfo2 *mt = data;

	t->kind = RS_T_MARK;
	t->u.mark.op = RS_MARK_SET;
	t->u.mark.value = mt->mark;
	t->u.mark.mask = mt->mask;
	return true;
}

static bool dec_masquerade(const void *data, struct rs_target *t)
{
	const struct nf_nat_ipv4_multi_range_compat *mr = data;

	if (mr->rangesize != 1 || (mr->range[0].flags & ~NF_NAT_RANGE_PROTO_RANDOM_FULLY) ||
	    mr->range[0].min_ip || mr->range[0].max_ip || mr->range[0].min.all ||
	    mr->range[0].max.all)
		return false;
	t->kind = RS_T_MASQUERADE;
	t->u.masq.random_fully = mr->range[0].flags & NF_NAT_RANGE_PROTO_RANDOM_FULLY;
	return true;
}

static bool dec_masquerade6(const void *data, struct rs_target *t)
{
	static const struct nf_nat_range zero;
	const struct nf_nat_range *nr = data;
	struct nf_nat_range rest = *nr;

	rest.flags &= ~(unsigned)NF_NAT_RANGE_PROTO_RANDOM_FULLY;
	if (memcmp(&rest, &zero, sizeof(zero)) != 0)
		return false;
	t->kind = RS_T_MASQUERADE;
	t->u.masq.random_fully = nr->flags & NF_NAT_RANGE_PROTO_RANDOM_FULLY;
	return true;
}

/* (af 0: the same blob in both families.) */
static const struct {
	const char *name;
	uint8_t rev;
	int af;
	size_t size; /* of the target data */
	bool (*decode)(const void *data, struct rs_target *t);
} target_decoders[] = {
	{ "REJECT", 0, AF_INET, sizeof(struct ipt_reject_info), dec_reject },
	{ "REJECT", 0, AF_INET6, sizeof(struct ip6t_reject_info), dec_reject6 },
	{ "DNAT", 2, AF_INET, sizeof(struct nf_nat_range2), dec_dnat },
	{ "DNAT", 2, AF_INET6, sizeof(struct nf_nat_range2), dec_dnat6 },
	{ "MARK", 2, 0, sizeof(struct xt_mark_tginfo2), dec_mark_target },
	{ "MASQUERADE", 0, AF_INET, sizeof(struct nf_nat_ipv4_multi_range_compat), dec_masquerade },
	{ "MASQUERADE", 0, AF_INET6, sizeof(struct nf_nat_range), dec_masquerade6 },
};

/* An entry of either family as the shared decoders see it. */
struct entry_view {
	int af;
	const unsigned char *base; /* the entry */
	size_t hdr;                /* sizeof its header: where the matches start */
	uint16_t target_offset, next_offset;
	bool goto_flag;
	xt_label_fn label4;
	xt_label6_fn label6;
	void *ctx;
};

/* The standard target: a verdict, a fall-through, a jump or a goto. */
static int decode_standard(const struct entry_view *v, struct rs_rule *r, char *why, size_t whylen)
{
	const char *label = v->af == AF_INET6 ? v->label6((const void *)v->base, v->ctx)
					      : v->label4((const void *)v->base, v->ctx);

	if (!label) {
		snprintf(why, whylen, "unresolvable target");
		return -EINVAL;
	}
	if (streq(label, "ACCEPT")) {
		r->t.kind = RS_T_ACCEPT;
	} else if (streq(label, "DROP")) {
		r->t.kind = RS_T_DROP;
	} else if (streq(label, "RETURN")) {
		r->t.kind = RS_T_RETURN;
	} else if (!label[0]) {
		r->t.kind = RS_T_NONE;
	} else if (streq(label, "QUEUE")) {
		snprintf(why, whylen, "target '%s'", label);
		return -EINVAL;
	} else {
		r->t.kind = v->goto_flag ? RS_T_GOTO : RS_T_JUMP;
		r->t.u.chain = label;
	}
	if (r->t.kind != RS_T_GOTO && v->goto_flag) {
		snprintf(why, whylen, "goto to a verdict");
		return -EINVAL;
	}
	return 0;
}

static int decode_target(const struct entry_view *v, struct rs_rule *r, char *why, size_t whylen)
{
	const struct xt_entry_target *t = (const void *)(v->base + v->target_offset);

	if (v->target_offset + sizeof(*t) > v->next_offset || t->u.target_size < sizeof(*t) ||
	    v->target_offset + t->u.target_size > v->next_offset) {
		snprintf(why, whylen, "malformed target");
		return -EINVAL;
	}
	if (!t->u.user.name[0] || streq(t->u.user.name, XT_STANDARD_TARGET))
		return decode_standard(v, r, why, whylen);
	if (v->goto_flag) {
		snprintf(why, whylen, "goto flag on target '%.29s'", t->u.user.name);
		return -EINVAL;
	}
	for (size_t i = 0; i < ARRAY_SIZE(target_decoders); i++) {
		if (target_decoders[i].rev != t->u.user.revision ||
		    (target_decoders[i].af && target_decoders[i].af != v->af) ||
		    !streq(target_decoders[i].name, t->u.user.name))
			continue;
		if (t->u.target_size < XT_ALIGN(sizeof(*t) + target_decoders[i].size) ||
		    !target_decoders[i].decode(t->data, &r->t)) {
			snprintf(why, whylen, "options of target '%.29s' that svcnat does not write",
				 t->u.user.name);
			return -EINVAL;
		}
		return 0;
	}
	snprintf(why, whylen, "target '%.29s' revision %u", t->u.user.name, t->u.user.revision);
	return -EINVAL;
}

/* The matches and the target, after the header was decoded into r. */
static int decode_body(const struct entry_view *v, struct rs_rule *r, char *why, size_t whylen)
{
	for (size_t off = v->hdr; off < v->target_offset;) {
		const struct xt_entry_match *m = (const void *)(v->base + off);

		if (m->u.match_size < sizeof(*m) || off + m->u.match_size > v->target_offset) {
			snprintf(why, whylen, "malformed match");
			return -EINVAL;
		}
		off += m->u.match_size;
		if (r->n_matches >= RS_MAX_MATCHES) {
			snprintf(why, whylen, "more than %d matches", RS_MAX_MATCHES);
			return -EINVAL;
		}
		if (decode_match(m, v->af, r, why, whylen) < 0)
			return -EINVAL;
	}
	return decode_target(v, r, why, whylen);
}

/* -i as build_iface() writes it. */
static int decode_iface(const char name[IFNAMSIZ], const unsigned char mask[IFNAMSIZ], bool inv,
			struct rs_rule *r, char *why, size_t whylen)
{
	const char *nul = memchr(name, '\0', IFNAMSIZ);
	size_t n = nul ? (size_t)(nul - name) : IFNAMSIZ, i, masked;
	bool prefix = n < IFNAMSIZ && !mask[n];

	/* "veth+" under a mask of "veth" as iptables writes it (the name then
	 * keeps its "+"; rs_rule_equal() compares without it), else "veth"
	 * under its own mask as earlier svcnat wrote a prefix. */
	if (n && name[n - 1] == '+' && !mask[n - 1])
		prefix = true, masked = n - 1;
	else
		masked = prefix ? n : n + 1;
	for (i = 0; i < IFNAMSIZ; i++)
		if (mask[i] != (i < masked ? 0xff : 0))
			break;
	if (!nul || i < IFNAMSIZ) {
		snprintf(why, whylen, "input interface with an unusual mask");
		return -EINVAL;
	}
	r->in_iface = name;
	r->in_iface_prefix = prefix;
	r->in_iface_inv = inv;
	return 0;
}

int xt_entry_decode(const struct ipt_entry *e, xt_label_fn label_of, void *ctx,
		    struct rs_rule *r, char *why, size_t whylen)
{
	struct entry_view v = {
		.af = AF_INET,
		.base = (const void *)e,
		.hdr = sizeof(*e),
		.target_offset = e->target_offset,
		.next_offset = e->next_offset,
		.goto_flag = e->ip.flags & IPT_F_GOTO,
		.label4 = label_of,
		.ctx = ctx,
	};

	memset(r, 0, sizeof(*r));
	if (e->ip.outiface[0] || (e->ip.flags & ~IPT_F_GOTO) ||
	    (e->ip.invflags & ~(IPT_INV_SRCIP | IPT_INV_DSTIP | IPT_INV_VIA_IN))) {
		snprintf(why, whylen, "output interface, fragment or protocol-inversion options");
		return -EINVAL;
	}
	if (e->ip.iniface[0]) {
		if (decode_iface(e->ip.iniface, e->ip.iniface_mask, e->ip.invflags & IPT_INV_VIA_IN,
				 r, why, whylen) < 0)
			return -EINVAL;
	} else if (e->ip.invflags & IPT_INV_VIA_IN) {
		snprintf(why, whylen, "'! -i' without an interface");
		return -EINVAL;
	}
	if (e->ip.smsk.s_addr || e->ip.src.s_addr || (e->ip.invflags & IPT_INV_SRCIP)) {
		uint32_t m = ntohl(e->ip.smsk.s_addr);
		int plen = __builtin_popcount(m);

		if (plen != 32 && (m & (0xffffffffu >> plen))) {
			snprintf(why, whylen, "non-contiguous source mask");
			return -EINVAL;
		}
		r->src.addr.family = AF_INET;
		r->src.addr.u.v4 = e->ip.src;
		r->src.plen = (uint8_t)plen;
	}
	if (e->ip.dmsk.s_addr || e->ip.dst.s_addr || (e->ip.invflags & IPT_INV_DSTIP)) {
		uint32_t m = ntohl(e->ip.dmsk.s_addr);
		int plen = __builtin_popcount(m);

		if (plen != 32 && (m & (0xffffffffu >> plen))) {
			snprintf(why, whylen, "non-contiguous destination mask");
			return -EINVAL;
		}
		r->dst.addr.family = AF_INET;
		r->dst.addr.u.v4 = e->ip.dst;
		r->dst.plen = (uint8_t)plen;
	}
	r->src_inv = e->ip.invflags & IPT_INV_SRCIP;
	r->dst_inv = e->ip.invflags & IPT_INV_DSTIP;
	r->proto = (uint8_t)e->ip.proto;
	return decode_body(&v, r, why, whylen);
}

/* The prefix length of a contiguous IPv6 mask, or -EINVAL. */
static int plen6(const struct in6_addr *m)
{
	struct in6_addr want;
	int plen = 0;

	for (unsigned i = 0; i < 16; i++)
		plen += __builtin_popcount(m->s6_addr[i]);
	xt_plen_mask6((uint8_t)plen, &want);
	return memcmp(&want, m, sizeof(want)) ? -EINVAL : plen;
}

/* "! -s ::/0" (an inverted zero mask) keeps its address family. */
static int decode_addr6(const struct in6_addr *a, const struct in6_addr *m, bool inv,
			struct ipnet *n)
{
	static const struct in6_addr zero;
	int plen;

	if (!inv && !memcmp(a, &zero, sizeof(zero)) && !memcmp(m, &zero, sizeof(zero)))
		return 0;
	plen = plen6(m);
	if (plen < 0)
		return -EINVAL;
	n->addr.family = AF_INET6;
	n->addr.u.v6 = *a;
	n->plen = (uint8_t)plen;
	return 0;
}

int xt_entry_decode6(const struct ip6t_entry *e, xt_label6_fn label_of, void *ctx,
		     struct rs_rule *r, char *why, size_t whylen)
{
	struct entry_view v = {
		.af = AF_INET6,
		.base = (const void *)e,
		.hdr = sizeof(*e),
		.target_offset = e->target_offset,
		.next_offset = e->next_offset,
		.goto_flag = e->ipv6.flags & IP6T_F_GOTO,
		.label6 = label_of,
		.ctx = ctx,
	};

	memset(r, 0, sizeof(*r));
	if (e->ipv6.outiface[0] || e->ipv6.tos || (e->ipv6.flags & ~(IP6T_F_GOTO | IP6T_F_PROTO)) ||
	    (e->ipv6.invflags & ~(IP6T_INV_SRCIP | IP6T_INV_DSTIP | IP6T_INV_VIA_IN)) ||
	    !(e->ipv6.flags & IP6T_F_PROTO) != !e->ipv6.proto) {
		snprintf(why, whylen, "output interface, tos, fragment or protocol options");
		return -EINVAL;
	}
	if (e->ipv6.iniface[0]) {
		if (decode_iface(e->ipv6.iniface, e->ipv6.iniface_mask,
				 e->ipv6.invflags & IP6T_INV_VIA_IN, r, why, whylen) < 0)
			return -EINVAL;
	} else if (e->ipv6.invflags & IP6T_INV_VIA_IN) {
		snprintf(why, whylen, "'! -i' without an interface");
		return -EINVAL;
	}
	if (decode_addr6(&e->ipv6.src, &e->ipv6.smsk, e->ipv6.invflags & IP6T_INV_SRCIP, &r->src) < 0) {
		snprintf(why, whylen, "non-contiguous source mask");
		return -EINVAL;
	}
	if (decode_addr6(&e->ipv6.dst, &e->ipv6.dmsk, e->ipv6.invflags & IP6T_INV_DSTIP, &r->dst) < 0) {
		snprintf(why, whylen, "non-contiguous destination mask");
		return -EINVAL;
	}
	r->src_inv = e->ipv6.invflags & IP6T_INV_SRCIP;
	r->dst_inv = e->ipv6.invflags & IP6T_INV_DSTIP;
	r->proto = (uint8_t)e->ipv6.proto;
	return decode_body(&v, r, why, whylen);
}
