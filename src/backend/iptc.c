/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The libiptc backend: one iptc_init .. iptc_commit transaction per table,
 * written only when the kernel differs from the plan.  The only file that
 * includes libiptc.
 *
 * Entries are built with the match and target revisions iptables 1.8.9
 * picks on current kernels (comment 0, tcp/udp/sctp 0, addrtype 1, mark 1,
 * conntrack 3, statistic 0, recent 1, DNAT 2, MARK 2, MASQUERADE 0,
 * REJECT 0), so iptables-legacy-save prints back what the renderer prints
 * and rules written by iptables-restore (kube-proxy) compare equal.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libiptc/libiptc.h>
#include <linux/netfilter/nf_nat.h>
#include <linux/netfilter/xt_addrtype.h>
#include <linux/netfilter/xt_comment.h>
#include <linux/netfilter/xt_conntrack.h>
#include <linux/netfilter/xt_mark.h>
#include <linux/netfilter/xt_recent.h>
#include <linux/netfilter/xt_sctp.h>
#include <linux/netfilter/xt_statistic.h>
#include <linux/netfilter/xt_tcpudp.h>
#include <linux/netfilter_ipv4/ipt_REJECT.h>

#include "backend/internal.h"
#include "util.h"

/* Big enough for an entry with RS_MAX_MATCHES of the largest match. */
#define ENTRY_MAX 2048

struct entry_buf {
	union {
		struct ipt_entry e;
		unsigned char b[ENTRY_MAX];
	};
} __attribute__((aligned(8)));

static void iptc_freep(struct xtc_handle **h)
{
	if (*h)
		iptc_free(*h);
}

/* --- plan rule -> kernel entry --- */

static void *add_match(struct entry_buf *buf, size_t *off, const char *name, uint8_t rev,
		       size_t datalen)
{
	size_t sz = XT_ALIGN(sizeof(struct xt_entry_match) + datalen);
	struct xt_entry_match *m;

	if (*off + sz > ENTRY_MAX)
		return NULL;
	m = (struct xt_entry_match *)(buf->b + *off);
	memset(m, 0, sz);
	m->u.match_size = (uint16_t)sz;
	snprintf(m->u.user.name, sizeof(m->u.user.name), "%s", name);
	m->u.user.revision = rev;
	*off += sz;
	return m->data;
}

static void *add_target(struct entry_buf *buf, size_t *off, const char *name, uint8_t rev,
			size_t datalen)
{
	size_t sz = XT_ALIGN(sizeof(struct xt_entry_target) + datalen);
	struct xt_entry_target *t;

	if (*off + sz > ENTRY_MAX)
		return NULL;
	t = (struct xt_entry_target *)(buf->b + *off);
	memset(t, 0, sz);
	t->u.target_size = (uint16_t)sz;
	snprintf(t->u.user.name, sizeof(t->u.user.name), "%s", name);
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

/* -1 when the kernel mask has a state the model lacks. */
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
	return k ? -1 : rs;
}

static uint32_t probability_to_kernel(double p)
{
	/* As libxt_statistic: lround(0x80000000 * p). */
	if (!(p > 0))
		return 0;
	if (p >= 1.0)
		return 0x80000000u;
	return (uint32_t)lround(2147483648.0 * p);
}

/*
 * Build the kernel entry of rule r into buf.  Returns 0, or -EINVAL with a
 * static reason in *ret_why.
 */
static int build_entry(const struct rs_rule *r, struct entry_buf *buf, const char **ret_why)
{
	struct ipt_entry *e = &buf->e;
	size_t off = sizeof(*e);
	void *data;

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
	e->ip.proto = r->proto;

	for (size_t i = 0; i < r->n_matches && i < RS_MAX_MATCHES; i++) {
		const struct rs_match *m = &r->m[i];

		switch (m->kind) {
		case RS_M_COMMENT: {
			struct xt_comment_info *ci;

			if (!m->u.comment || strlen(m->u.comment) >= XT_MAX_COMMENT_LEN) {
				*ret_why = "comment missing or longer than 255 bytes";
				return -EINVAL;
			}
			ci = add_match(buf, &off, "comment", 0, sizeof(*ci));
			if (!ci)
				goto too_big;
			memcpy(ci->comment, m->u.comment, strlen(m->u.comment));
			break;
		}
		case RS_M_PORT:
			if (r->proto == IPPROTO_TCP) {
				struct xt_tcp *tp = add_match(buf, &off, "tcp", 0, sizeof(*tp));

				if (!tp)
					goto too_big;
				tp->spts[1] = 0xffff;
				tp->dpts[0] = tp->dpts[1] = m->u.port.dport;
				if (!m->u.port.dport)
					tp->dpts[1] = 0xffff; /* bare -m tcp */
				if (m->invert)
					tp->invflags = XT_TCP_INV_DSTPT;
			} else if (r->proto == IPPROTO_UDP) {
				struct xt_udp *up = add_match(buf, &off, "udp", 0, sizeof(*up));

				if (!up)
					goto too_big;
				up->spts[1] = 0xffff;
				up->dpts[0] = up->dpts[1] = m->u.port.dport;
				if (!m->u.port.dport)
					up->dpts[1] = 0xffff;
				if (m->invert)
					up->invflags = XT_UDP_INV_DSTPT;
			} else if (r->proto == IPPROTO_SCTP) {
				struct xt_sctp_info *sp = add_match(buf, &off, "sctp", 0, sizeof(*sp));

				if (!sp)
					goto too_big;
				if (m->u.port.dport) {
					sp->dpts[0] = sp->dpts[1] = m->u.port.dport;
					sp->flags = XT_SCTP_DEST_PORTS;
					if (m->invert)
						sp->invflags = XT_SCTP_DEST_PORTS;
				}
			} else {
				*ret_why = "port match on a rule without -p tcp/udp/sctp";
				return -EINVAL;
			}
			break;
		case RS_M_ADDRTYPE: {
			struct xt_addrtype_info_v1 *ai;

			if (m->u.addrtype.type != RS_ADDRTYPE_LOCAL) {
				*ret_why = "addrtype other than LOCAL";
				return -EINVAL;
			}
			ai = add_match(buf, &off, "addrtype", 1, sizeof(*ai));
			if (!ai)
				goto too_big;
			if (m->u.addrtype.src) {
				ai->source = XT_ADDRTYPE_LOCAL;
				if (m->invert)
					ai->flags = XT_ADDRTYPE_INVERT_SOURCE;
			} else {
				ai->dest = XT_ADDRTYPE_LOCAL;
				if (m->invert)
					ai->flags = XT_ADDRTYPE_INVERT_DEST;
			}
			break;
		}
		case RS_M_MARK: {
			struct xt_mark_mtinfo1 *mi = add_match(buf, &off, "mark", 1, sizeof(*mi));

			if (!mi)
				goto too_big;
			mi->mark = m->u.mark.value;
			mi->mask = m->u.mark.mask;
			mi->invert = m->invert;
			break;
		}
		case RS_M_CONNTRACK: {
			struct xt_conntrack_mtinfo3 *ct =
				add_match(buf, &off, "conntrack", 3, sizeof(*ct));

			if (!ct)
				goto too_big;
			ct->match_flags = XT_CONNTRACK_STATE;
			ct->state_mask = ct_states_to_kernel(m->u.ct.states);
			if (m->invert)
				ct->invert_flags = XT_CONNTRACK_STATE;
			break;
		}
		case RS_M_STATISTIC: {
			struct xt_statistic_info *si =
				add_match(buf, &off, "statistic", 0, sizeof(*si));

			if (!si)
				goto too_big;
			si->mode = XT_STATISTIC_MODE_RANDOM;
			if (m->invert)
				si->flags = XT_STATISTIC_INVERT;
			si->u.random.probability = probability_to_kernel(m->u.stat.probability);
			/* libxt_statistic sets count = every - packet for any mode. */
			si->u.nth.count = si->u.nth.every - si->u.nth.packet;
			break;
		}
		case RS_M_RECENT: {
			struct xt_recent_mtinfo_v1 *ri;

			if (!m->u.recent.name || !m->u.recent.name[0] ||
			    strlen(m->u.recent.name) >= XT_RECENT_NAME_LEN) {
				*ret_why = "recent name empty or longer than 199 bytes";
				return -EINVAL;
			}
			ri = add_match(buf, &off, "recent", 1, sizeof(*ri));
			if (!ri)
				goto too_big;
			ri->check_set = m->u.recent.set ? XT_RECENT_SET : XT_RECENT_CHECK;
			if (!m->u.recent.set) {
				ri->seconds = m->u.recent.seconds;
				if (m->u.recent.reap)
					ri->check_set |= XT_RECENT_REAP;
			}
			ri->invert = m->invert;
			memcpy(ri->name, m->u.recent.name, strlen(m->u.recent.name));
			ri->side = XT_RECENT_SOURCE;
			ri->mask.ip = 0xffffffffu;
			break;
		}
		default:
			*ret_why = "unknown match kind";
			return -EINVAL;
		}
	}

	e->target_offset = (uint16_t)off;
	switch (r->t.kind) {
	case RS_T_NONE:
		/* An empty standard target: libiptc makes it fall through. */
		if (!add_target(buf, &off, "", 0, sizeof(int)))
			goto too_big;
		break;
	case RS_T_JUMP:
	case RS_T_GOTO:
	case RS_T_ACCEPT:
	case RS_T_DROP:
	case RS_T_RETURN: {
		const char *name = r->t.kind == RS_T_ACCEPT ? IPTC_LABEL_ACCEPT
				   : r->t.kind == RS_T_DROP ? IPTC_LABEL_DROP
				   : r->t.kind == RS_T_RETURN ? IPTC_LABEL_RETURN
							       : r->t.u.chain;

		if (!name || !name[0] || strlen(name) > RS_CHAIN_MAXLEN) {
			*ret_why = "jump without a valid chain name";
			return -EINVAL;
		}
		/* libiptc maps the name to a verdict or a jump offset. */
		data = add_target(buf, &off, name, 0, sizeof(int));
		if (!data)
			goto too_big;
		if (r->t.kind == RS_T_GOTO)
			e->ip.flags |= IPT_F_GOTO;
		break;
	}
	case RS_T_REJECT: {
		struct ipt_reject_info *ri = add_target(buf, &off, "REJECT", 0, sizeof(*ri));

		if (!ri)
			goto too_big;
		ri->with = IPT_ICMP_PORT_UNREACHABLE;
		break;
	}
	case RS_T_DNAT: {
		struct nf_nat_range2 *nr;

		if (r->t.u.dnat.addr.family != AF_INET) {
			*ret_why = "DNAT to a non-IPv4 address";
			return -EINVAL;
		}
		nr = add_target(buf, &off, "DNAT", 2, sizeof(*nr));
		if (!nr)
			goto too_big;
		nr->flags = NF_NAT_RANGE_MAP_IPS;
		nr->min_addr.ip = nr->max_addr.ip = r->t.u.dnat.addr.u.v4.s_addr;
		if (r->t.u.dnat.port) {
			nr->flags |= NF_NAT_RANGE_PROTO_SPECIFIED;
			nr->min_proto.all = nr->max_proto.all = htons(r->t.u.dnat.port);
		}
		break;
	}
	case RS_T_MARK: {
		struct xt_mark_tginfo2 *mt = add_target(buf, &off, "MARK", 2, sizeof(*mt));

		if (!mt)
			goto too_big;
		backend_mark_encode(&r->t, &mt->mark, &mt->mask);
		break;
	}
	case RS_T_MASQUERADE: {
		struct nf_nat_ipv4_multi_range_compat *mr =
			add_target(buf, &off, "MASQUERADE", 0, sizeof(*mr));

		if (!mr)
			goto too_big;
		mr->rangesize = 1;
		if (r->t.u.masq.random_fully)
			mr->range[0].flags = NF_NAT_RANGE_PROTO_RANDOM_FULLY;
		break;
	}
	default:
		*ret_why = "unknown target kind";
		return -EINVAL;
	}
	e->next_offset = (uint16_t)off;
	return 0;

bad_addr:
	*ret_why = "address is not IPv4";
	return -EINVAL;
too_big:
	*ret_why = "rule too large";
	return -EINVAL;
}

/* --- kernel entry -> rule (for comparing and for --diff) --- */

/* A single destination port, or the whole range of a bare -m tcp/udp. */
static bool port_single(const uint16_t dpts[2], bool invert)
{
	if (dpts[0] == 0 && dpts[1] == 0xffff)
		return !invert;
	return dpts[0] == dpts[1] && dpts[0] != 0;
}

static const char *entry_str(const char *s, size_t max)
{
	return memchr(s, '\0', max) ? s : NULL;
}

#define MATCH_DATA(m, type) \
	((m)->u.match_size >= XT_ALIGN(sizeof(*(m)) + sizeof(type)) ? (const type *)(m)->data : NULL)

/*
 * Decode entry e into *r.  Strings point into e (or into libiptc's chain
 * names) and live as long as the handle.  Returns 0, or -1 with a reason
 * in why when the rule uses something the model has no place for.
 */
static int decode_entry(const struct ipt_entry *e, struct xtc_handle *h, struct rs_rule *r,
			char *why, size_t whylen)
{
	const struct xt_entry_target *t;
	size_t off;

	memset(r, 0, sizeof(*r));
	if (e->ip.iniface[0] || e->ip.outiface[0] || (e->ip.flags & ~IPT_F_GOTO) ||
	    (e->ip.invflags & ~(IPT_INV_SRCIP | IPT_INV_DSTIP))) {
		snprintf(why, whylen, "interface, fragment or protocol-inversion options");
		return -1;
	}
	if (e->ip.smsk.s_addr || e->ip.src.s_addr) {
		uint32_t m = ntohl(e->ip.smsk.s_addr);
		int plen = __builtin_popcount(m);

		if (plen != 32 && (m & (0xffffffffu >> plen))) {
			snprintf(why, whylen, "non-contiguous source mask");
			return -1;
		}
		r->src.addr.family = AF_INET;
		r->src.addr.u.v4 = e->ip.src;
		r->src.plen = (uint8_t)plen;
	}
	if (e->ip.dmsk.s_addr || e->ip.dst.s_addr) {
		uint32_t m = ntohl(e->ip.dmsk.s_addr);
		int plen = __builtin_popcount(m);

		if (plen != 32 && (m & (0xffffffffu >> plen))) {
			snprintf(why, whylen, "non-contiguous destination mask");
			return -1;
		}
		r->dst.addr.family = AF_INET;
		r->dst.addr.u.v4 = e->ip.dst;
		r->dst.plen = (uint8_t)plen;
	}
	r->src_inv = e->ip.invflags & IPT_INV_SRCIP;
	r->dst_inv = e->ip.invflags & IPT_INV_DSTIP;
	r->proto = (uint8_t)e->ip.proto;

	for (off = sizeof(*e); off < e->target_offset;) {
		const struct xt_entry_match *m = (const void *)((const char *)e + off);
		const char *name = m->u.user.name;
		uint8_t rev = m->u.user.revision;
		struct rs_match *rm;

		if (m->u.match_size < sizeof(*m) || off + m->u.match_size > e->target_offset) {
			snprintf(why, whylen, "malformed match");
			return -1;
		}
		off += m->u.match_size;
		if (r->n_matches >= RS_MAX_MATCHES) {
			snprintf(why, whylen, "more than %d matches", RS_MAX_MATCHES);
			return -1;
		}
		rm = &r->m[r->n_matches];
		if (streq(name, "comment") && rev == 0) {
			const struct xt_comment_info *ci = MATCH_DATA(m, struct xt_comment_info);

			if (!ci || !(rm->u.comment = entry_str(ci->comment, sizeof(ci->comment))))
				goto bad_match;
			rm->kind = RS_M_COMMENT;
		} else if (streq(name, "tcp") && rev == 0) {
			const struct xt_tcp *tp = MATCH_DATA(m, struct xt_tcp);

			if (!tp || r->proto != IPPROTO_TCP || tp->spts[0] != 0 ||
			    tp->spts[1] != 0xffff || !port_single(tp->dpts, tp->invflags & XT_TCP_INV_DSTPT) ||
			    tp->option || tp->flg_mask || tp->flg_cmp ||
			    (tp->invflags & ~XT_TCP_INV_DSTPT))
				goto bad_match;
			rm->kind = RS_M_PORT;
			rm->u.port.dport = tp->dpts[1] == 0xffff && !tp->dpts[0] ? 0 : tp->dpts[0];
			rm->invert = tp->invflags & XT_TCP_INV_DSTPT;
		} else if (streq(name, "udp") && rev == 0) {
			const struct xt_udp *up = MATCH_DATA(m, struct xt_udp);

			if (!up || r->proto != IPPROTO_UDP || up->spts[0] != 0 ||
			    up->spts[1] != 0xffff || !port_single(up->dpts, up->invflags & XT_UDP_INV_DSTPT) ||
			    (up->invflags & ~XT_UDP_INV_DSTPT))
				goto bad_match;
			rm->kind = RS_M_PORT;
			rm->u.port.dport = up->dpts[1] == 0xffff && !up->dpts[0] ? 0 : up->dpts[0];
			rm->invert = up->invflags & XT_UDP_INV_DSTPT;
		} else if (streq(name, "sctp") && rev == 0) {
			const struct xt_sctp_info *sp = MATCH_DATA(m, struct xt_sctp_info);

			if (!sp || r->proto != IPPROTO_SCTP ||
			    (sp->flags != XT_SCTP_DEST_PORTS && sp->flags != 0) ||
			    (sp->flags && (sp->dpts[0] != sp->dpts[1] || !sp->dpts[0])) ||
			    (sp->invflags & ~sp->flags))
				goto bad_match;
			rm->kind = RS_M_PORT;
			rm->u.port.dport = sp->flags ? sp->dpts[0] : 0;
			rm->invert = sp->invflags & XT_SCTP_DEST_PORTS;
		} else if (streq(name, "addrtype") && rev == 1) {
			const struct xt_addrtype_info_v1 *ai =
				MATCH_DATA(m, struct xt_addrtype_info_v1);

			if (!ai)
				goto bad_match;
			rm->kind = RS_M_ADDRTYPE;
			rm->u.addrtype.type = RS_ADDRTYPE_LOCAL;
			if (ai->source == XT_ADDRTYPE_LOCAL && !ai->dest &&
			    !(ai->flags & ~XT_ADDRTYPE_INVERT_SOURCE)) {
				rm->u.addrtype.src = true;
				rm->invert = ai->flags & XT_ADDRTYPE_INVERT_SOURCE;
			} else if (ai->dest == XT_ADDRTYPE_LOCAL && !ai->source &&
				   !(ai->flags & ~XT_ADDRTYPE_INVERT_DEST)) {
				rm->invert = ai->flags & XT_ADDRTYPE_INVERT_DEST;
			} else {
				goto bad_match;
			}
		} else if (streq(name, "mark") && rev == 1) {
			const struct xt_mark_mtinfo1 *mi = MATCH_DATA(m, struct xt_mark_mtinfo1);

			if (!mi || mi->invert > 1)
				goto bad_match;
			rm->kind = RS_M_MARK;
			rm->u.mark.value = mi->mark;
			rm->u.mark.mask = mi->mask;
			rm->invert = mi->invert;
		} else if (streq(name, "conntrack") && rev == 3) {
			const struct xt_conntrack_mtinfo3 *ct =
				MATCH_DATA(m, struct xt_conntrack_mtinfo3);
			int states;

			if (!ct || ct->match_flags != XT_CONNTRACK_STATE ||
			    (ct->invert_flags & ~XT_CONNTRACK_STATE) ||
			    (states = ct_states_from_kernel(ct->state_mask)) < 0)
				goto bad_match;
			rm->kind = RS_M_CONNTRACK;
			rm->u.ct.states = (uint16_t)states;
			rm->invert = ct->invert_flags & XT_CONNTRACK_STATE;
		} else if (streq(name, "statistic") && rev == 0) {
			const struct xt_statistic_info *si = MATCH_DATA(m, struct xt_statistic_info);

			if (!si || si->mode != XT_STATISTIC_MODE_RANDOM ||
			    (si->flags & ~XT_STATISTIC_INVERT))
				goto bad_match;
			rm->kind = RS_M_STATISTIC;
			rm->u.stat.probability = si->u.random.probability / 2147483648.0;
			rm->invert = si->flags & XT_STATISTIC_INVERT;
		} else if (streq(name, "recent") && rev == 1) {
			const struct xt_recent_mtinfo_v1 *ri =
				MATCH_DATA(m, struct xt_recent_mtinfo_v1);
			uint8_t op;

			if (!ri || ri->hit_count || ri->invert > 1 || ri->side != XT_RECENT_SOURCE ||
			    ri->mask.ip != 0xffffffffu ||
			    !(rm->u.recent.name = entry_str(ri->name, sizeof(ri->name))))
				goto bad_match;
			op = ri->check_set & (uint8_t)~XT_RECENT_REAP;
			if (op == XT_RECENT_SET && !(ri->check_set & XT_RECENT_REAP) && !ri->seconds)
				rm->u.recent.set = true;
			else if (op != XT_RECENT_CHECK)
				goto bad_match;
			rm->kind = RS_M_RECENT;
			rm->u.recent.reap = ri->check_set & XT_RECENT_REAP;
			rm->u.recent.seconds = ri->seconds;
			rm->invert = ri->invert;
		} else {
			snprintf(why, whylen, "match '%.29s' revision %u", name, rev);
			return -1;
		}
		r->n_matches++;
		continue;
bad_match:
		snprintf(why, whylen, "options of match '%.29s' that svcnat does not write", name);
		return -1;
	}

	t = (const void *)((const char *)e + e->target_offset);
	if (e->target_offset + sizeof(*t) > e->next_offset || t->u.target_size < sizeof(*t) ||
	    e->target_offset + t->u.target_size > e->next_offset) {
		snprintf(why, whylen, "malformed target");
		return -1;
	}
	if (!t->u.user.name[0] || streq(t->u.user.name, XT_STANDARD_TARGET)) {
		const char *label = iptc_get_target(e, h);

		if (!label) {
			snprintf(why, whylen, "unresolvable target");
			return -1;
		}
		if (streq(label, IPTC_LABEL_ACCEPT)) {
			r->t.kind = RS_T_ACCEPT;
		} else if (streq(label, IPTC_LABEL_DROP)) {
			r->t.kind = RS_T_DROP;
		} else if (streq(label, IPTC_LABEL_RETURN)) {
			r->t.kind = RS_T_RETURN;
		} else if (!label[0]) {
			r->t.kind = RS_T_NONE;
		} else if (streq(label, IPTC_LABEL_QUEUE)) {
			snprintf(why, whylen, "target '%s'", label);
			return -1;
		} else {
			r->t.kind = (e->ip.flags & IPT_F_GOTO) ? RS_T_GOTO : RS_T_JUMP;
			r->t.u.chain = label;
		}
		if (r->t.kind != RS_T_GOTO && (e->ip.flags & IPT_F_GOTO)) {
			snprintf(why, whylen, "goto to a verdict");
			return -1;
		}
		return 0;
	}
	if (e->ip.flags & IPT_F_GOTO) {
		snprintf(why, whylen, "goto flag on target '%.29s'", t->u.user.name);
		return -1;
	}
#define TARGET_DATA(type) \
	(t->u.target_size >= XT_ALIGN(sizeof(*t) + sizeof(type)) ? (const type *)t->data : NULL)
	if (streq(t->u.user.name, "REJECT") && t->u.user.revision == 0) {
		const struct ipt_reject_info *ri = TARGET_DATA(struct ipt_reject_info);

		if (!ri || ri->with != IPT_ICMP_PORT_UNREACHABLE)
			goto bad_target;
		r->t.kind = RS_T_REJECT;
	} else if (streq(t->u.user.name, "DNAT") && t->u.user.revision == 2) {
		const struct nf_nat_range2 *nr = TARGET_DATA(struct nf_nat_range2);

		if (!nr || !(nr->flags & NF_NAT_RANGE_MAP_IPS) ||
		    (nr->flags & ~(NF_NAT_RANGE_MAP_IPS | NF_NAT_RANGE_PROTO_SPECIFIED)) ||
		    nr->min_addr.ip != nr->max_addr.ip)
			goto bad_target;
		r->t.kind = RS_T_DNAT;
		r->t.u.dnat.addr.family = AF_INET;
		r->t.u.dnat.addr.u.v4.s_addr = nr->min_addr.ip;
		if (nr->flags & NF_NAT_RANGE_PROTO_SPECIFIED) {
			if (nr->min_proto.all != nr->max_proto.all || !nr->min_proto.all)
				goto bad_target;
			r->t.u.dnat.port = ntohs(nr->min_proto.all);
		}
	} else if (streq(t->u.user.name, "MARK") && t->u.user.revision == 2) {
		const struct xt_mark_tginfo2 *mt = TARGET_DATA(struct xt_mark_tginfo2);

		if (!mt)
			goto bad_target;
		r->t.kind = RS_T_MARK;
		r->t.u.mark.op = RS_MARK_SET;
		r->t.u.mark.value = mt->mark;
		r->t.u.mark.mask = mt->mask;
	} else if (streq(t->u.user.name, "MASQUERADE") && t->u.user.revision == 0) {
		const struct nf_nat_ipv4_multi_range_compat *mr =
			TARGET_DATA(struct nf_nat_ipv4_multi_range_compat);

		if (!mr || mr->rangesize != 1 ||
		    (mr->range[0].flags & ~NF_NAT_RANGE_PROTO_RANDOM_FULLY) ||
		    mr->range[0].min_ip || mr->range[0].max_ip || mr->range[0].min.all ||
		    mr->range[0].max.all)
			goto bad_target;
		r->t.kind = RS_T_MASQUERADE;
		r->t.u.masq.random_fully = mr->range[0].flags & NF_NAT_RANGE_PROTO_RANDOM_FULLY;
	} else {
		snprintf(why, whylen, "target '%.29s' revision %u", t->u.user.name,
			 t->u.user.revision);
		return -1;
	}
#undef TARGET_DATA
	return 0;
bad_target:
	snprintf(why, whylen, "options of target '%.29s' that svcnat does not write",
		 t->u.user.name);
	return -1;
}

static bool entry_same(const struct ipt_entry *e, struct xtc_handle *h, const struct rs_rule *r)
{
	struct rs_rule k;
	char why[96];

	if (decode_entry(e, h, &k, why, sizeof(why)) < 0)
		return false;
	return backend_rule_same(&k, r);
}

/* --- errors --- */

static const char *errno_meaning(int err, bool commit)
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

static int iptc_fail(struct diag_list *d, const char *table, const char *what, const char *chain,
		     int err, bool commit)
{
	const char *mean = errno_meaning(err, commit);

	if (!err)
		err = EIO;
	diag_add(d, DIAG_ERROR, "libiptc", table, chain, "%s failed: errno %d (%s)%s%s", what, err,
		 iptc_strerror(err), mean ? ": " : "", mean ? mean : "");
	return -err;
}

/* --- the sync of one table --- */

struct kchain {
	xt_chainlabel name;
	bool builtin;
	bool planned;
};

enum cop_kind {
	COP_NEW,
	COP_REPLACE, /* replace rules [prefix, nk - suffix) */
};

struct cop {
	const struct rs_chain *pc;
	uint8_t kind;
	size_t prefix, suffix, nk;
};

struct jump_fix {
	xt_chainlabel chain;             /* the built-in chain */
	const struct rs_chain *pc;       /* plan (NULL: no jumps planned) */
	size_t *del;                     /* positions to delete, ascending */
	size_t n_del;
	long *kpos;                      /* per plan jump: position after deletions, -1 missing */
};

struct tsync {
	struct xtc_handle *h;
	enum rs_table t;
	const char *table;
	const struct ruleset *rs;
	struct apply_result *res;
	struct diag_list *d;

	struct kchain *kc;
	size_t n_kc, cap_kc;
	struct cop *ops;
	size_t n_ops, cap_ops;
	size_t *stale; /* indices into kc */
	size_t n_stale, cap_stale;
	struct jump_fix jf[4];
	size_t n_jf;
	const struct ipt_entry **ke; /* scratch: one chain's kernel entries */
	size_t cap_ke;
	bool changed;
};

static void tsync_done(struct tsync *s)
{
	free(s->kc);
	free(s->ops);
	free(s->stale);
	free(s->ke);
	for (size_t i = 0; i < s->n_jf; i++) {
		free(s->jf[i].del);
		free(s->jf[i].kpos);
	}
	if (s->h)
		iptc_free(s->h);
	memset(s, 0, sizeof(*s));
}

static int kc_cmp(const void *a, const void *b)
{
	return strcmp(((const struct kchain *)a)->name, ((const struct kchain *)b)->name);
}

static struct kchain *kc_find(struct tsync *s, const char *name)
{
	struct kchain key;

	if (!s->n_kc)
		return NULL;
	snprintf(key.name, sizeof(key.name), "%s", name);
	return bsearch(&key, s->kc, s->n_kc, sizeof(*s->kc), kc_cmp);
}

static int load_entries(struct tsync *s, const char *chain, size_t *ret_n)
{
	size_t n = 0;

	for (const struct ipt_entry *e = iptc_first_rule(chain, s->h); e;
	     e = iptc_next_rule(e, s->h)) {
		if (GROW(s->ke, s->cap_ke, n + 1) < 0)
			return -ENOMEM;
		s->ke[n++] = e;
	}
	*ret_n = n;
	return 0;
}

/* Compare an existing planned chain; queue a replace when it differs. */
static int plan_chain(struct tsync *s, const struct rs_chain *pc, struct kchain *k)
{
	size_t nk, p = 0, sfx = 0;
	int r;

	if (!k) {
		if (GROW(s->ops, s->cap_ops, s->n_ops + 1) < 0)
			return -ENOMEM;
		s->ops[s->n_ops++] = (struct cop){ .pc = pc, .kind = COP_NEW };
		return 0;
	}
	k->planned = true;
	r = load_entries(s, k->name, &nk);
	if (r < 0)
		return r;
	while (p < nk && p < pc->n_rules && entry_same(s->ke[p], s->h, &pc->rules[p]))
		p++;
	if (p == nk && p == pc->n_rules)
		return 0;
	while (sfx < nk - p && sfx < pc->n_rules - p &&
	       entry_same(s->ke[nk - 1 - sfx], s->h, &pc->rules[pc->n_rules - 1 - sfx]))
		sfx++;
	if (GROW(s->ops, s->cap_ops, s->n_ops + 1) < 0)
		return -ENOMEM;
	s->ops[s->n_ops++] =
		(struct cop){ .pc = pc, .kind = COP_REPLACE, .prefix = p, .suffix = sfx, .nk = nk };
	return 0;
}

/*
 * svcnat's jump rules in a built-in chain: every rule whose target is one
 * of our chains.  They must be the plan's jumps, each once, in plan order;
 * one already in place stays where it is (kube-proxy's -C then -I 1), a
 * missing one goes right after its planned predecessor or at the top.
 */
static int plan_jumps(struct tsync *s, const char *builtin)
{
	const struct rs_chain *pc = ruleset_find_chain(s->rs, s->t, builtin);
	size_t np = pc ? pc->n_rules : 0, nk, n_ours = 0;
	struct jump_fix *jf;
	bool *used = NULL, in_order = true, need = false;
	size_t *ours = NULL;
	long *match = NULL, last = -1;
	int r;

	if (s->n_jf >= ARRAY_SIZE(s->jf))
		return -EINVAL;
	r = load_entries(s, builtin, &nk);
	if (r < 0)
		return r;
	jf = &s->jf[s->n_jf++];
	memset(jf, 0, sizeof(*jf));
	snprintf(jf->chain, sizeof(jf->chain), "%s", builtin);
	jf->pc = pc;

	used = calloc(np + 1, sizeof(*used));
	ours = calloc(nk + 1, sizeof(*ours));
	match = calloc(nk + 1, sizeof(*match));
	jf->kpos = calloc(np + 1, sizeof(*jf->kpos));
	jf->del = calloc(nk + 1, sizeof(*jf->del));
	if (!used || !ours || !match || !jf->kpos || !jf->del) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nk; i++) {
		const char *tgt = iptc_get_target(s->ke[i], s->h);

		if (!tgt || !backend_chain_ours(s->rs, s->t, tgt))
			continue;
		match[n_ours] = -1;
		for (size_t j = 0; j < np; j++) {
			if (!used[j] && entry_same(s->ke[i], s->h, &pc->rules[j])) {
				used[j] = true;
				match[n_ours] = (long)j;
				break;
			}
		}
		if (match[n_ours] >= 0) {
			if (match[n_ours] < last)
				in_order = false;
			last = match[n_ours];
		}
		ours[n_ours++] = i;
	}
	for (size_t j = 0; j < np; j++)
		jf->kpos[j] = -1;
	for (size_t k = 0; k < n_ours; k++) {
		if (match[k] < 0 || !in_order) {
			jf->del[jf->n_del++] = ours[k];
			need = true;
		}
	}
	for (size_t k = 0; k < n_ours; k++) {
		size_t before = 0;

		if (match[k] < 0 || !in_order)
			continue;
		for (size_t x = 0; x < jf->n_del; x++)
			if (jf->del[x] < ours[k])
				before++;
		jf->kpos[match[k]] = (long)(ours[k] - before);
	}
	for (size_t j = 0; j < np; j++)
		if (jf->kpos[j] < 0)
			need = true;
	if (!need)
		s->n_jf--;
	r = 0;
out:
	if (r < 0 || !need) {
		free(jf->del);
		free(jf->kpos);
		jf->del = NULL;
		jf->kpos = NULL;
	}
	free(used);
	free(ours);
	free(match);
	return r;
}

static int put_rule(struct tsync *s, const char *chain, const struct rs_rule *rule, size_t idx,
		    bool insert, size_t pos)
{
	struct entry_buf buf;
	const char *why = NULL;
	xt_chainlabel label;
	int ok;

	if (build_entry(rule, &buf, &why) < 0) {
		diag_add(s->d, DIAG_ERROR, "libiptc", s->table, chain, "rule %zu: %s", idx + 1,
			 why ? why : "cannot be encoded");
		return -EINVAL;
	}
	snprintf(label, sizeof(label), "%s", chain);
	if (insert)
		ok = iptc_insert_entry(label, &buf.e, (unsigned)pos, s->h);
	else
		ok = iptc_append_entry(label, &buf.e, s->h);
	if (!ok)
		return iptc_fail(s->d, s->table, insert ? "inserting a rule" : "appending a rule",
				 chain, errno, false);
	s->res->rules_written++;
	return 0;
}

static int cop_cmp(const void *a, const void *b)
{
	return strcmp(((const struct cop *)a)->pc->name, ((const struct cop *)b)->pc->name);
}

static int execute(struct tsync *s)
{
	xt_chainlabel label;
	int r;

	/* Sorted, so libiptc's sorted chain list mostly appends. */
	if (s->n_ops > 1)
		qsort(s->ops, s->n_ops, sizeof(*s->ops), cop_cmp);
	for (size_t i = 0; i < s->n_ops; i++) {
		if (s->ops[i].kind != COP_NEW)
			continue;
		snprintf(label, sizeof(label), "%s", s->ops[i].pc->name);
		if (!iptc_create_chain(label, s->h))
			return iptc_fail(s->d, s->table, "creating the chain", label, errno, false);
		s->res->chains_created++;
	}
	for (size_t i = 0; i < s->n_ops; i++) {
		const struct cop *op = &s->ops[i];
		const struct rs_chain *pc = op->pc;
		size_t from = 0, to = pc->n_rules;
		bool insert = false;

		snprintf(label, sizeof(label), "%s", pc->name);
		if (op->kind == COP_REPLACE) {
			size_t ndel = op->nk - op->prefix - op->suffix;
			size_t nins = pc->n_rules - op->prefix - op->suffix;

			s->res->chains_replaced++;
			/* Deleting by number walks the list: beyond a few rules in
			 * the middle, flushing and appending is cheaper. */
			if (op->prefix + op->suffix == 0 || ndel + nins > 64) {
				if (!iptc_flush_entries(label, s->h))
					return iptc_fail(s->d, s->table, "flushing the chain",
							 label, errno, false);
			} else {
				for (size_t k = 0; k < ndel; k++)
					if (!iptc_delete_num_entry(label, (unsigned)op->prefix, s->h))
						return iptc_fail(s->d, s->table, "deleting a rule",
								 label, errno, false);
				from = op->prefix;
				to = op->prefix + nins;
				insert = op->suffix > 0;
			}
		}
		for (size_t k = from; k < to; k++) {
			r = put_rule(s, pc->name, &pc->rules[k], k, insert, k);
			if (r < 0)
				return r;
		}
	}
	for (size_t i = 0; i < s->n_jf; i++) {
		struct jump_fix *jf = &s->jf[i];
		size_t cursor = 0, inserted = 0;

		for (size_t x = jf->n_del; x-- > 0;)
			if (!iptc_delete_num_entry(jf->chain, (unsigned)jf->del[x], s->h))
				return iptc_fail(s->d, s->table, "deleting a jump rule", jf->chain,
						 errno, false);
		for (size_t j = 0; jf->pc && j < jf->pc->n_rules; j++) {
			if (jf->kpos[j] >= 0) {
				cursor = (size_t)jf->kpos[j] + inserted + 1;
				continue;
			}
			r = put_rule(s, jf->chain, &jf->pc->rules[j], j, true, cursor);
			if (r < 0)
				return r;
			cursor++;
			inserted++;
			s->res->jumps_added++;
		}
	}
	/* Flush every stale chain first: they may jump to each other. */
	for (size_t i = 0; i < s->n_stale; i++) {
		const char *name = s->kc[s->stale[i]].name;

		if (iptc_first_rule(name, s->h) && !iptc_flush_entries(name, s->h))
			return iptc_fail(s->d, s->table, "flushing the chain", name, errno, false);
	}
	for (size_t i = 0; i < s->n_stale; i++) {
		const char *name = s->kc[s->stale[i]].name;
		unsigned refs = 0;

		if (!iptc_get_references(&refs, name, s->h))
			return iptc_fail(s->d, s->table, "counting references", name, errno, false);
		if (refs) {
			diag_add(s->d, DIAG_WARNING, "libiptc", s->table, name,
				 "not deleted: %u rule(s) of another program still jump to it", refs);
			continue;
		}
		if (!iptc_delete_chain(name, s->h))
			return iptc_fail(s->d, s->table, "deleting the chain", name, errno, false);
		s->res->chains_deleted++;
	}
	return 0;
}

/*
 * References to kernel chain k from rules that this sync removes anyway:
 * rules in owned chains (stale ones are flushed, planned ones never jump
 * to a stale chain) and jump rules in built-in chains.
 */
static unsigned refs_from_ours(struct tsync *s, const char *name)
{
	unsigned n = 0;

	for (size_t i = 0; i < s->n_kc; i++) {
		const struct kchain *k = &s->kc[i];

		if (!k->builtin && !backend_chain_owned(s->t, k->name))
			continue;
		for (const struct ipt_entry *e = iptc_first_rule(k->name, s->h); e;
		     e = iptc_next_rule(e, s->h)) {
			const char *tgt = iptc_get_target(e, s->h);

			if (tgt && streq(tgt, name))
				n++;
		}
	}
	return n;
}

/* Is there anything to change for a stale chain?  Not when it is empty
 * and another program's rule still jumps to it: we may not delete it. */
static bool stale_needs_work(struct tsync *s, const char *name)
{
	unsigned refs = 0;

	if (iptc_first_rule(name, s->h))
		return true;
	if (!iptc_get_references(&refs, name, s->h) || refs == 0)
		return true;
	return refs_from_ours(s, name) > 0;
}

static int check_plan_targets(const struct ruleset *rs, enum rs_table t, struct diag_list *d)
{
	const struct rs_chains *cs = &rs->t[t];

	for (size_t i = 0; i < cs->n; i++) {
		const struct rs_chain *c = cs->chains[i];

		for (size_t j = 0; j < c->n_rules; j++) {
			const struct rs_target *tg = &c->rules[j].t;
			const struct rs_chain *dst;

			if (tg->kind != RS_T_JUMP && tg->kind != RS_T_GOTO)
				continue;
			dst = tg->u.chain ? ruleset_find_chain(rs, t, tg->u.chain) : NULL;
			if (!dst || dst->builtin) {
				diag_add(d, DIAG_ERROR, "plan", rs_table_name(t), c->name,
					 "rule %zu jumps to '%s', which is not a planned chain", j + 1,
					 tg->u.chain ? tg->u.chain : "");
				return -EINVAL;
			}
		}
	}
	return 0;
}

static int sync_table(struct tsync *s, bool *ret_committed)
{
	const struct rs_chains *cs = &s->rs->t[s->t];
	int r;

	s->h = iptc_init(s->table);
	if (!s->h)
		return iptc_fail(s->d, s->table, "reading the table (iptc_init)", NULL, errno, false);

	for (const char *c = iptc_first_chain(s->h); c; c = iptc_next_chain(s->h)) {
		if (GROW(s->kc, s->cap_kc, s->n_kc + 1) < 0)
			return -ENOMEM;
		memset(&s->kc[s->n_kc], 0, sizeof(s->kc[0]));
		snprintf(s->kc[s->n_kc].name, sizeof(s->kc[0].name), "%s", c);
		s->kc[s->n_kc].builtin = iptc_builtin(c, s->h);
		s->n_kc++;
	}
	if (s->n_kc > 1)
		qsort(s->kc, s->n_kc, sizeof(*s->kc), kc_cmp);

	for (size_t i = 0; i < cs->n; i++) {
		const struct rs_chain *pc = cs->chains[i];
		struct kchain *k;

		if (pc->builtin)
			continue;
		k = kc_find(s, pc->name);
		if (k && k->builtin) {
			diag_add(s->d, DIAG_ERROR, "plan", s->table, pc->name,
				 "a user chain with the name of a built-in chain");
			return -EINVAL;
		}
		r = plan_chain(s, pc, k);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < s->n_kc; i++) {
		struct kchain *k = &s->kc[i];

		if (k->builtin || k->planned || !backend_chain_owned(s->t, k->name))
			continue;
		if (!stale_needs_work(s, k->name))
			continue;
		if (GROW(s->stale, s->cap_stale, s->n_stale + 1) < 0)
			return -ENOMEM;
		s->stale[s->n_stale++] = i;
	}
	for (size_t i = 0; i < s->n_kc; i++) {
		if (!s->kc[i].builtin)
			continue;
		r = plan_jumps(s, s->kc[i].name);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < cs->n; i++) {
		if (cs->chains[i]->builtin && cs->chains[i]->n_rules &&
		    !kc_find(s, cs->chains[i]->name)) {
			diag_add(s->d, DIAG_ERROR, "plan", s->table, cs->chains[i]->name,
				 "the kernel's %s table has no such built-in chain", s->table);
			return -EINVAL;
		}
	}

	*ret_committed = false;
	if (!s->n_ops && !s->n_stale && !s->n_jf)
		return 0;
	r = execute(s);
	if (r < 0)
		return r;
	if (!iptc_commit(s->h)) {
		int err = errno;

		if (err == EAGAIN)
			return -EAGAIN;
		return iptc_fail(s->d, s->table, "committing the table", NULL, err, true);
	}
	*ret_committed = true;
	return 0;
}

static int iptc_apply(struct backend *b, const struct ruleset *rs, struct apply_result *res,
		      struct diag_list *d)
{
	_cleanup_close_ int lock = -1;
	double t0 = backend_now();
	int r;

	memset(res, 0, sizeof(*res));
	for (int t = 0; t < RS_NTABLES; t++) {
		r = check_plan_targets(rs, (enum rs_table)t, d);
		if (r < 0)
			return r;
	}
	r = backend_xtables_lock(b->o.lock_path, b->o.lock_wait_ms, &lock, d);
	if (r < 0)
		return r;
	for (int t = 0; t < RS_NTABLES; t++) {
		unsigned attempt = 0;

		for (;;) {
			struct apply_result saved = *res;
			struct tsync s = {
				.t = (enum rs_table)t,
				.table = rs_table_name((enum rs_table)t),
				.rs = rs,
				.res = res,
				.d = d,
			};
			bool committed = false;

			r = sync_table(&s, &committed);
			tsync_done(&s);
			if (r == -EAGAIN && attempt < b->o.commit_retries) {
				*res = saved;
				attempt++;
				diag_add(d, DIAG_NOTE, "libiptc", rs_table_name((enum rs_table)t), NULL,
					 "the table changed while svcnat wrote it; reading it again "
					 "(retry %u of %u)", attempt, b->o.commit_retries);
				continue;
			}
			if (r == -EAGAIN) {
				iptc_fail(d, rs_table_name((enum rs_table)t), "committing the table",
					  NULL, EAGAIN, true);
				diag_add(d, DIAG_ERROR, "libiptc", rs_table_name((enum rs_table)t), NULL,
					 "gave up after %u retries; the table keeps its previous rules",
					 b->o.commit_retries);
				return -EAGAIN;
			}
			if (r < 0)
				return r;
			res->committed[t] = committed;
			break;
		}
	}
	res->seconds = backend_now() - t0;
	return 0;
}

/* --- reading the live owned state (--diff) --- */

static int copy_rule_strings(struct ruleset *rs, struct rs_rule *r)
{
	for (size_t i = 0; i < r->n_matches; i++) {
		struct rs_match *m = &r->m[i];
		const char **sp = m->kind == RS_M_COMMENT  ? &m->u.comment
				  : m->kind == RS_M_RECENT ? &m->u.recent.name
							   : NULL;

		if (sp && *sp && !(*sp = ruleset_strdup(rs, *sp)))
			return -ENOMEM;
	}
	if ((r->t.kind == RS_T_JUMP || r->t.kind == RS_T_GOTO) &&
	    !(r->t.u.chain = ruleset_strdup(rs, r->t.u.chain)))
		return -ENOMEM;
	return 0;
}

static int read_table(struct ruleset *out, const struct ruleset *plan, enum rs_table t,
		      struct diag_list *d)
{
	_cleanup_(iptc_freep) struct xtc_handle *h = iptc_init(rs_table_name(t));
	char **names = NULL;
	size_t n = 0, cap = 0;
	int r = 0;

	if (!h)
		return iptc_fail(d, rs_table_name(t), "reading the table (iptc_init)", NULL, errno,
				 false);
	for (const char *c = iptc_first_chain(h); c; c = iptc_next_chain(h)) {
		if (GROW(names, cap, n + 1) < 0) {
			r = -ENOMEM;
			goto out;
		}
		names[n++] = (char *)c;
	}
	for (size_t i = 0; i < n; i++) {
		bool builtin = iptc_builtin(names[i], h);
		struct rs_chain *c;
		size_t idx = 0;

		if (!builtin && !backend_chain_ours(plan, t, names[i]))
			continue;
		c = ruleset_add_chain(out, t, names[i]);
		if (!c) {
			r = -errno;
			goto out;
		}
		for (const struct ipt_entry *e = iptc_first_rule(names[i], h); e;
		     e = iptc_next_rule(e, h), idx++) {
			struct rs_rule dec, *nr;
			char why[160];

			if (builtin) {
				const char *tgt = iptc_get_target(e, h);

				if (!tgt || !backend_chain_ours(plan, t, tgt))
					continue;
			}
			if (decode_entry(e, h, &dec, why, sizeof(why)) < 0) {
				memset(&dec, 0, sizeof(dec));
				dec.t.kind = BACKEND_T_FOREIGN;
				dec.n_matches = 1;
				dec.m[0].kind = RS_M_COMMENT;
				dec.m[0].u.comment = ruleset_printf(out, "rule %zu uses %s", idx + 1,
								    why);
				if (!dec.m[0].u.comment) {
					r = -ENOMEM;
					goto out;
				}
			} else if (copy_rule_strings(out, &dec) < 0) {
				r = -ENOMEM;
				goto out;
			}
			nr = rs_chain_append(c);
			if (!nr) {
				r = -ENOMEM;
				goto out;
			}
			*nr = dec;
		}
	}
out:
	free(names);
	return r;
}

static int iptc_read(struct backend *b, const struct ruleset *plan, struct ruleset **ret,
		     struct diag_list *d)
{
	struct ruleset *rs = ruleset_new();
	int r = 0;

	/* A read takes no lock, as iptables-save takes none. */
	(void)b;
	if (!rs)
		return -ENOMEM;
	for (int t = 0; r >= 0 && t < RS_NTABLES; t++)
		r = read_table(rs, plan, (enum rs_table)t, d);
	if (r < 0) {
		ruleset_free(rs);
		return r;
	}
	ruleset_sort(rs);
	*ret = rs;
	return 0;
}

static void iptc_done(struct backend *b)
{
	(void)b;
}

static const struct backend_ops iptc_ops_impl = {
	.apply = iptc_apply,
	.read = iptc_read,
	.done = iptc_done,
};

int backend_iptc_init(struct backend *b, struct diag_list *d)
{
	(void)d;
	b->ops = &iptc_ops_impl;
	return 0;
}
