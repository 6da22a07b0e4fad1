/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Rules -> nf_tables expressions as iptables-nft 1.8.9 writes them (see
 * nftenc.h for the layout).  The xt blobs of the compat expressions come
 * from xt_entry_build(), the same codec the legacy writers use: one xt
 * match per rs_match, in the rule's order, so match i of the entry is the
 * blob of r->m[i].
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter_ipv4.h>

#include <stdio.h>

#include <libnftnl/expr.h>

#include "backend/nft/nftenc.h"
#include "backend/xt/xtentry.h"
#include "util.h"

static const struct nftenc_hook hooks_filter[] = {
	{ "INPUT", NF_INET_LOCAL_IN, NF_IP_PRI_FILTER, "filter" },
	{ "FORWARD", NF_INET_FORWARD, NF_IP_PRI_FILTER, "filter" },
	{ "OUTPUT", NF_INET_LOCAL_OUT, NF_IP_PRI_FILTER, "filter" },
};

static const struct nftenc_hook hooks_nat[] = {
	{ "PREROUTING", NF_INET_PRE_ROUTING, NF_IP_PRI_NAT_DST, "nat" },
	{ "INPUT", NF_INET_LOCAL_IN, NF_IP_PRI_NAT_SRC, "nat" },
	{ "OUTPUT", NF_INET_LOCAL_OUT, NF_IP_PRI_NAT_DST, "nat" },
	{ "POSTROUTING", NF_INET_POST_ROUTING, NF_IP_PRI_NAT_SRC, "nat" },
};

uint8_t nftenc_nfproto(enum writer_family f)
{
	return f == WRITER_IPV6 ? NFPROTO_IPV6 : NFPROTO_IPV4;
}

const struct nftenc_hook *nftenc_builtin(enum rs_table t, const char *name)
{
	const struct nftenc_hook *h = t == RS_NAT ? hooks_nat : hooks_filter;
	size_t n = t == RS_NAT ? ARRAY_SIZE(hooks_nat) : ARRAY_SIZE(hooks_filter);

	for (size_t i = 0; name && i < n; i++)
		if (streq(h[i].name, name))
			return &h[i];
	return NULL;
}

/* Each helper appends one expression; false on ENOMEM. */
static bool add_expr(struct nftnl_rule *r, struct nftnl_expr *e)
{
	if (!e)
		return false;
	nftnl_rule_add_expr(r, e);
	return true;
}

static bool add_meta(struct nftnl_rule *r, uint32_t key)
{
	struct nftnl_expr *e = nftnl_expr_alloc("meta");

	if (!e)
		return false;
	nftnl_expr_set_u32(e, NFTNL_EXPR_META_KEY, key);
	nftnl_expr_set_u32(e, NFTNL_EXPR_META_DREG, NFT_REG_1);
	return add_expr(r, e);
}

static bool add_payload(struct nftnl_rule *r, uint32_t base, uint32_t off, uint32_t len)
{
	struct nftnl_expr *e = nftnl_expr_alloc("payload");

	if (!e)
		return false;
	nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_BASE, base);
	nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_DREG, NFT_REG_1);
	nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_OFFSET, off);
	nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_LEN, len);
	return add_expr(r, e);
}

static bool add_bitwise(struct nftnl_rule *r, const void *mask, uint32_t len)
{
	static const uint8_t zero[16];
	struct nftnl_expr *e = nftnl_expr_alloc("bitwise");

	if (!e)
		return false;
	nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_SREG, NFT_REG_1);
	nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_DREG, NFT_REG_1);
	nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_LEN, len);
	nftnl_expr_set(e, NFTNL_EXPR_BITWISE_MASK, mask, len);
	nftnl_expr_set(e, NFTNL_EXPR_BITWISE_XOR, zero, len);
	return add_expr(r, e);
}

static bool add_cmp(struct nftnl_rule *r, uint32_t op, const void *data, uint32_t len)
{
	struct nftnl_expr *e = nftnl_expr_alloc("cmp");

	if (!e)
		return false;
	nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_SREG, NFT_REG_1);
	nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_OP, op);
	nftnl_expr_set(e, NFTNL_EXPR_CMP_DATA, data, len);
	return add_expr(r, e);
}

static bool add_range(struct nftnl_rule *r, bool inv, const void *from, const void *to,
		      uint32_t len)
{
	struct nftnl_expr *e = nftnl_expr_alloc("range");

	if (!e)
		return false;
	nftnl_expr_set_u32(e, NFTNL_EXPR_RANGE_SREG, NFT_REG_1);
	nftnl_expr_set_u32(e, NFTNL_EXPR_RANGE_OP, inv ? NFT_RANGE_NEQ : NFT_RANGE_EQ);
	nftnl_expr_set(e, NFTNL_EXPR_RANGE_FROM_DATA, from, len);
	nftnl_expr_set(e, NFTNL_EXPR_RANGE_TO_DATA, to, len);
	return add_expr(r, e);
}

/*
 * iptables-nft's add_addr(): load only the bytes the mask covers fully,
 * unless it ends inside a byte, then the whole address (4 or 16 bytes) and
 * a bitwise mask.
 */
static bool add_addr(struct nftnl_rule *r, uint32_t off, const struct ipnet *n, bool inv)
{
	uint8_t mask[16] = { 0 }, addr[16];
	uint32_t op = inv ? NFT_CMP_NEQ : NFT_CMP_EQ;
	uint32_t size = n->addr.family == AF_INET6 ? 16 : 4, len, i;
	bool bitwise = false;

	for (i = 0; i < size && i * 8 < n->plen; i++)
		mask[i] = n->plen >= (i + 1) * 8 ? 0xff : (uint8_t)(0xff00u >> (n->plen - i * 8));
	for (i = 0; i < size; i++)
		addr[i] = n->addr.u.b[i] & mask[i];
	for (i = 0; i < size; i++) {
		if (mask[i] != 0xff) {
			bitwise = mask[i] != 0;
			break;
		}
	}
	len = bitwise ? size : i;
	if (!add_payload(r, NFT_PAYLOAD_NETWORK_HEADER, off, len))
		return false;
	if (bitwise && !add_bitwise(r, mask, len))
		return false;
	return add_cmp(r, op, addr, len);
}

static bool add_compat(struct nftnl_rule *r, bool match, const char *name, uint32_t rev,
		       const void *info, uint32_t len)
{
	struct nftnl_expr *e = nftnl_expr_alloc(match ? "match" : "target");
	void *copy = malloc(len ? len : 1);

	if (!e || !copy) {
		nftnl_expr_free(e);
		free(copy);
		return false;
	}
	/* libnftnl takes the info buffer over (and frees it), not a copy. */
	memcpy(copy, info, len);
	nftnl_expr_set_u32(e, match ? NFTNL_EXPR_MT_REV : NFTNL_EXPR_TG_REV, rev);
	if (nftnl_expr_set(e, match ? NFTNL_EXPR_MT_NAME : NFTNL_EXPR_TG_NAME, name,
			   strlen(name)) < 0 ||
	    nftnl_expr_set(e, match ? NFTNL_EXPR_MT_INFO : NFTNL_EXPR_TG_INFO, copy, len) < 0) {
		nftnl_expr_free(e);
		return false;
	}
	return add_expr(r, e);
}

static bool add_verdict(struct nftnl_rule *r, int verdict, const char *chain)
{
	struct nftnl_expr *e = nftnl_expr_alloc("immediate");

	if (!e)
		return false;
	nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, NFT_REG_VERDICT);
	nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_VERDICT, (uint32_t)verdict);
	if (chain && nftnl_expr_set_str(e, NFTNL_EXPR_IMM_CHAIN, chain) < 0) {
		nftnl_expr_free(e);
		return false;
	}
	return add_expr(r, e);
}

static bool add_counter(struct nftnl_rule *r)
{
	struct nftnl_expr *e = nftnl_expr_alloc("counter");

	if (!e)
		return false;
	nftnl_expr_set_u64(e, NFTNL_EXPR_CTR_PACKETS, 0);
	nftnl_expr_set_u64(e, NFTNL_EXPR_CTR_BYTES, 0);
	return add_expr(r, e);
}

/* The rule's native part for match m, or false (with *native false) when
 * it goes as an xt blob. */
static bool add_native_match(struct nftnl_rule *r, const struct rs_rule *rr,
			     const struct rs_match *m, bool *native)
{
	uint32_t op = m->invert ? NFT_CMP_NEQ : NFT_CMP_EQ;

	*native = false;
	if (m->kind == RS_M_PORT && m->u.port.dport &&
	    (rr->proto == IPPROTO_TCP || rr->proto == IPPROTO_UDP)) {
		uint16_t port = htons(m->u.port.dport), max = htons(m->u.port.dport_max);

		*native = true;
		if (!add_payload(r, NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2))
			return false;
		return m->u.port.dport_max ? add_range(r, m->invert, &port, &max, 2)
					   : add_cmp(r, op, &port, 2);
	}
	if (m->kind == RS_M_MARK) {
		uint32_t mask = m->u.mark.mask, value = m->u.mark.value;

		*native = true;
		return add_meta(r, NFT_META_MARK) &&
		       (mask == 0xffffffffu || add_bitwise(r, &mask, 4)) &&
		       add_cmp(r, op, &value, 4);
	}
	return true;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct nftnl_rule *, nftnl_rule_free)

/* Whether rr's addresses fit the family: 0, or -EINVAL with *ret_why. */
static int check_addrs(const struct rs_rule *rr, bool v6, const char **ret_why)
{
	int af = v6 ? AF_INET6 : AF_INET, maxlen = v6 ? 128 : 32;

	if ((rr->src.addr.family && (rr->src.addr.family != af || rr->src.plen > maxlen)) ||
	    (rr->dst.addr.family && (rr->dst.addr.family != af || rr->dst.plen > maxlen))) {
		*ret_why = v6 ? "address is not IPv6" : "address is not IPv4";
		return -EINVAL;
	}
	if ((rr->src.addr.family && !rr->src.plen && rr->src_inv) ||
	    (rr->dst.addr.family && !rr->dst.plen && rr->dst_inv)) {
		*ret_why = "negated /0 address";
		return -EINVAL;
	}
	return 0;
}

/* The rule's header matches: input interface, protocol, addresses. */
static bool add_header(struct nftnl_rule *r, const struct rs_rule *rr, bool v6)
{
	/* Where the addresses sit in the network header. */
	uint32_t src_off = v6 ? 8 : 12, dst_off = v6 ? 24 : 16;
	bool ok = true;

	if (rr->in_iface) {
		/* -i IFACE compares the name with its NUL, "IFACE+" only the prefix. */
		size_t n = strlen(rr->in_iface);

		ok = add_meta(r, NFT_META_IIFNAME) &&
		     add_cmp(r, rr->in_iface_inv ? NFT_CMP_NEQ : NFT_CMP_EQ, rr->in_iface,
			     (uint32_t)(rr->in_iface_prefix ? n : n + 1));
	}
	if (ok && rr->proto)
		ok = add_meta(r, NFT_META_L4PROTO) && add_cmp(r, NFT_CMP_EQ, &rr->proto, 1);
	if (ok && rr->src.addr.family && (rr->src.plen || rr->src_inv))
		ok = add_addr(r, src_off, &rr->src, rr->src_inv);
	if (ok && rr->dst.addr.family && (rr->dst.plen || rr->dst_inv))
		ok = add_addr(r, dst_off, &rr->dst, rr->dst_inv);
	return ok;
}

/* The matches, native where nf_tables has them, else the xt blobs of buf. */
static bool add_matches(struct nftnl_rule *r, const struct rs_rule *rr,
			const struct xt_entry_buf *buf, bool v6)
{
	size_t off = v6 ? sizeof(buf->e6) : sizeof(buf->e);
	bool ok = true;

	for (size_t i = 0; ok && i < rr->n_matches; i++) {
		const struct xt_entry_match *xm = (const void *)(buf->b + off);
		bool native;

		off += xm->u.match_size;
		ok = add_native_match(r, rr, &rr->m[i], &native);
		if (ok && !native)
			ok = add_compat(r, true, xm->u.user.name, xm->u.user.revision, xm->data,
					xm->u.match_size - (uint32_t)sizeof(*xm));
	}
	return ok;
}

/* The verdict, or the target's xt blob of buf. */
static bool add_target(struct nftnl_rule *r, const struct rs_rule *rr,
		       const struct xt_entry_buf *buf, bool v6)
{
	const struct xt_entry_target *xt =
		(const void *)(buf->b + (v6 ? buf->e6.target_offset : buf->e.target_offset));

	switch (rr->t.kind) {
	case RS_T_NONE:
		return true;
	case RS_T_ACCEPT:
		return add_verdict(r, NF_ACCEPT, NULL);
	case RS_T_DROP:
		return add_verdict(r, NF_DROP, NULL);
	case RS_T_RETURN:
		return add_verdict(r, NFT_RETURN, NULL);
	case RS_T_JUMP:
		return add_verdict(r, NFT_JUMP, rr->t.u.chain);
	case RS_T_GOTO:
		return add_verdict(r, NFT_GOTO, rr->t.u.chain);
	default:
		return add_compat(r, false, xt->u.user.name, xt->u.user.revision, xt->data,
				  xt->u.target_size - (uint32_t)sizeof(*xt));
	}
}

int nftenc_rule(const struct rs_rule *rr, enum writer_family f, enum rs_table t, const char *chain,
		struct nftnl_rule **ret, const char **ret_why)
{
	_cleanup_(nftnl_rule_freep) struct nftnl_rule *r = NULL;
	bool v6 = f == WRITER_IPV6;
	struct xt_entry_buf buf;
	int k;

	k = check_addrs(rr, v6, ret_why);
	if (k < 0)
		return k;
	/* The blobs, and the same checks the legacy writers make. */
	k = v6 ? xt_entry_build6(rr, true, &buf, ret_why) : xt_entry_build(rr, true, &buf, ret_why);
	if (k < 0)
		return k;

	r = nftnl_rule_alloc();
	if (!r)
		return -ENOMEM;
	nftnl_rule_set_u32(r, NFTNL_RULE_FAMILY, nftenc_nfproto(f));
	if (nftnl_rule_set_str(r, NFTNL_RULE_TABLE, rs_table_name(t)) < 0 ||
	    nftnl_rule_set_str(r, NFTNL_RULE_CHAIN, chain) < 0)
		return -ENOMEM;
	/* iptables-nft always sends it; compat matches are checked against it
	 * (xt_tcpudp wants -p tcp). */
	nftnl_rule_set_u32(r, NFTNL_RULE_COMPAT_PROTO, rr->proto);
	nftnl_rule_set_u32(r, NFTNL_RULE_COMPAT_FLAGS, 0);
	if (!add_header(r, rr, v6) || !add_matches(r, rr, &buf, v6) || !add_counter(r) ||
	    !add_target(r, rr, &buf, v6))
		return -ENOMEM;
	*ret = TAKE_PTR(r);
	return 0;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct nftnl_chain *, nftnl_chain_free)

struct nftnl_chain *nftenc_chain(enum writer_family f, enum rs_table t, const char *name)
{
	const struct nftenc_hook *h = nftenc_builtin(t, name);
	_cleanup_(nftnl_chain_freep) struct nftnl_chain *c = nftnl_chain_alloc();

	if (!c)
		return NULL;
	nftnl_chain_set_u32(c, NFTNL_CHAIN_FAMILY, nftenc_nfproto(f));
	if (nftnl_chain_set_str(c, NFTNL_CHAIN_TABLE, rs_table_name(t)) < 0 ||
	    nftnl_chain_set_str(c, NFTNL_CHAIN_NAME, name) < 0)
		return NULL;
	if (h) {
		nftnl_chain_set_u32(c, NFTNL_CHAIN_HOOKNUM, h->hooknum);
		nftnl_chain_set_s32(c, NFTNL_CHAIN_PRIO, h->prio);
		nftnl_chain_set_u32(c, NFTNL_CHAIN_POLICY, NF_ACCEPT);
		if (nftnl_chain_set_str(c, NFTNL_CHAIN_TYPE, h->type) < 0)
			return NULL;
	}
	return TAKE_PTR(c);
}

struct nftnl_table *nftenc_table(enum writer_family f, enum rs_table t)
{
	struct nftnl_table *tb = nftnl_table_alloc();

	if (!tb)
		return NULL;
	nftnl_table_set_u32(tb, NFTNL_TABLE_FAMILY, nftenc_nfproto(f));
	if (nftnl_table_set_str(tb, NFTNL_TABLE_NAME, rs_table_name(t)) < 0) {
		nftnl_table_free(tb);
		return NULL;
	}
	return tb;
}
