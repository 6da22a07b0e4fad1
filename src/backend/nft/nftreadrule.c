/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>

#include <libnftnl/expr.h>
#include <libnftnl/rule.h>

#include "core/owned.h"
#include "backend/nft/nftenc.h"
#include "backend/nft/nftreadrule.h"
#include "backend/xt/xtentry.h"
#include "util.h"

#define MAX_EXPRS 64

struct dec {
	const struct nftnl_expr *e[MAX_EXPRS];
	size_t n, i;
	bool v6; /* an ip6 family rule */
	struct rs_rule *r;
	struct ruleset *rs;
	char why[160];
};

static bool is(const struct nftnl_expr *e, const char *name)
{
	const char *n = nftnl_expr_get_str(e, NFTNL_EXPR_NAME);

	return n && streq(n, name);
}

static bool u32_is(const struct nftnl_expr *e, uint16_t attr, uint32_t v)
{
	return nftnl_expr_is_set(e, attr) && nftnl_expr_get_u32(e, attr) == v;
}

/* cmp on register 1 with op EQ or NEQ and len bytes of data. */
static const void *cmp_data(const struct nftnl_expr *e, uint32_t len, bool *ret_neq)
{
	uint32_t dl = 0, op;
	const void *data;

	if (!e || !is(e, "cmp") || !u32_is(e, NFTNL_EXPR_CMP_SREG, NFT_REG_1))
		return NULL;
	op = nftnl_expr_get_u32(e, NFTNL_EXPR_CMP_OP);
	data = nftnl_expr_get_data(e, NFTNL_EXPR_CMP_DATA, &dl);
	if (!data || dl != len || (op != NFT_CMP_EQ && op != NFT_CMP_NEQ))
		return NULL;
	*ret_neq = op == NFT_CMP_NEQ;
	return data;
}

/* bitwise reg 1 = (reg 1 & mask) ^ 0 over len bytes; the mask or NULL. */
static const void *bitwise_mask(const struct nftnl_expr *e, uint32_t len)
{
	static const uint8_t zero[16];
	uint32_t ml = 0, xl = 0;
	const void *mask, *x;

	if (!e || !is(e, "bitwise") || !u32_is(e, NFTNL_EXPR_BITWISE_SREG, NFT_REG_1) ||
	    !u32_is(e, NFTNL_EXPR_BITWISE_DREG, NFT_REG_1) ||
	    !u32_is(e, NFTNL_EXPR_BITWISE_LEN, len) ||
	    (nftnl_expr_is_set(e, NFTNL_EXPR_BITWISE_OP) &&
	     nftnl_expr_get_u32(e, NFTNL_EXPR_BITWISE_OP) != NFT_BITWISE_BOOL))
		return NULL;
	mask = nftnl_expr_get_data(e, NFTNL_EXPR_BITWISE_MASK, &ml);
	x = nftnl_expr_get_data(e, NFTNL_EXPR_BITWISE_XOR, &xl);
	if (!mask || !x || ml != len || xl != len || memcmp(x, zero, len) != 0)
		return NULL;
	return mask;
}

static const struct nftnl_expr *peek(struct dec *d, size_t k)
{
	return d->i + k < d->n ? d->e[d->i + k] : NULL;
}

static bool payload_at(const struct nftnl_expr *e, uint32_t base, uint32_t off)
{
	return e && is(e, "payload") && u32_is(e, NFTNL_EXPR_PAYLOAD_BASE, base) &&
	       u32_is(e, NFTNL_EXPR_PAYLOAD_OFFSET, off) &&
	       u32_is(e, NFTNL_EXPR_PAYLOAD_DREG, NFT_REG_1);
}

static bool meta_key(const struct nftnl_expr *e, uint32_t key)
{
	return e && is(e, "meta") && u32_is(e, NFTNL_EXPR_META_KEY, key) &&
	       u32_is(e, NFTNL_EXPR_META_DREG, NFT_REG_1);
}

/* The mask of a prefix of plen bits over size bytes. */
static void prefix_mask(unsigned plen, uint8_t *m, uint32_t size)
{
	for (uint32_t i = 0; i < size; i++)
		m[i] = plen >= (i + 1) * 8 ? 0xff
			: plen > i * 8     ? (uint8_t)(0xff00u >> (plen - i * 8))
					   : 0;
}

/* [!] -s/-d as add_addr() writes it; false if it is not that. */
static bool dec_addr(struct dec *d, uint32_t off, struct ipnet *n, bool *inv)
{
	const struct nftnl_expr *p = peek(d, 0);
	uint32_t size = d->v6 ? 16 : 4, len;
	uint8_t mask[16] = { 0 }, want[16], addr[16] = { 0 };
	const void *data;
	unsigned plen = 0;
	bool neq;

	if (!payload_at(p, NFT_PAYLOAD_NETWORK_HEADER, off))
		return false;
	len = nftnl_expr_get_u32(p, NFTNL_EXPR_PAYLOAD_LEN);
	if (len < 1 || len > size)
		return false;
	if (len == size && (data = bitwise_mask(peek(d, 1), size))) {
		memcpy(mask, data, size);
		for (uint32_t i = 0; i < size; i++)
			plen += (unsigned)__builtin_popcount(mask[i]);
		prefix_mask(plen, want, size);
		/* A byte-aligned prefix would have been a shorter load. */
		if (plen % 8 == 0 || memcmp(mask, want, size) != 0)
			return false;
		d->i++;
	} else {
		plen = len * 8;
		prefix_mask(plen, mask, size);
	}
	data = cmp_data(peek(d, 1), len, &neq);
	if (!data)
		return false;
	memcpy(addr, data, len);
	for (uint32_t i = 0; i < size; i++)
		if ((addr[i] & mask[i]) != addr[i])
			return false;
	memset(&n->addr, 0, sizeof(n->addr));
	n->addr.family = d->v6 ? AF_INET6 : AF_INET;
	memcpy(n->addr.u.b, addr, size);
	n->plen = (uint8_t)plen;
	*inv = neq;
	d->i += 2;
	return true;
}

static const char *empty_label(const struct ipt_entry *e, void *ctx)
{
	(void)e;
	(void)ctx;
	return "";
}

static const char *empty_label6(const struct ip6t_entry *e, void *ctx)
{
	(void)e;
	(void)ctx;
	return "";
}

/*
 * An xt blob through xt_entry_decode() (ip6: xt_entry_decode6()), wrapped
 * in an entry of its own (with the rule's protocol, which tcp/udp/sctp
 * check): a match with an empty standard target, or a target alone.  The
 * result lands in *tmp.
 */
static int dec_xt(struct dec *d, const struct nftnl_expr *e, bool match, struct rs_rule *tmp)
{
	struct xt_entry_buf buf;
	uint32_t len = 0, rev;
	const char *name = nftnl_expr_get_str(e, match ? NFTNL_EXPR_MT_NAME : NFTNL_EXPR_TG_NAME);
	const void *info = nftnl_expr_get_data(e, match ? NFTNL_EXPR_MT_INFO : NFTNL_EXPR_TG_INFO,
					       &len);
	size_t off = d->v6 ? sizeof(buf.e6) : sizeof(buf.e), sz;
	uint16_t *target_offset = d->v6 ? &buf.e6.target_offset : &buf.e.target_offset;
	uint16_t *next_offset = d->v6 ? &buf.e6.next_offset : &buf.e.next_offset;
	int k;

	rev = nftnl_expr_get_u32(e, match ? NFTNL_EXPR_MT_REV : NFTNL_EXPR_TG_REV);
	if (!name || !info || strlen(name) >= XT_EXTENSION_MAXNAMELEN)
		goto bad;
	sz = XT_ALIGN(sizeof(struct xt_entry_match) + len);
	if (off + sz + XT_ALIGN(sizeof(struct xt_entry_target) + sizeof(int)) > sizeof(buf))
		goto bad;
	memset(&buf, 0, off + sz + XT_ALIGN(sizeof(struct xt_entry_target) + sizeof(int)));
	if (d->v6) {
		buf.e6.ipv6.proto = d->r->proto;
		if (d->r->proto)
			buf.e6.ipv6.flags = IP6T_F_PROTO;
	} else {
		buf.e.ip.proto = d->r->proto;
	}
	if (match) {
		struct xt_entry_match *m = (void *)(buf.b + off);

		m->u.match_size = (uint16_t)sz;
		memcpy(m->u.user.name, name, strlen(name));
		m->u.user.revision = (uint8_t)rev;
		memcpy(m->data, info, len);
		off += sz;
		*target_offset = (uint16_t)off;
		sz = XT_ALIGN(sizeof(struct xt_entry_target) + sizeof(int));
		((struct xt_entry_target *)(buf.b + off))->u.target_size = (uint16_t)sz;
	} else {
		struct xt_entry_target *t = (void *)(buf.b + off);

		*target_offset = (uint16_t)off;
		sz = XT_ALIGN(sizeof(struct xt_entry_target) + len);
		t->u.target_size = (uint16_t)sz;
		memcpy(t->u.user.name, name, strlen(name));
		t->u.user.revision = (uint8_t)rev;
		memcpy(t->data, info, len);
	}
	*next_offset = (uint16_t)(off + sz);
	k = d->v6 ? xt_entry_decode6(&buf.e6, empty_label6, NULL, tmp, d->why, sizeof(d->why))
		  : xt_entry_decode(&buf.e, empty_label, NULL, tmp, d->why, sizeof(d->why));
	if (k < 0)
		return 1;
	if (match && tmp->n_matches != 1)
		goto bad;
	/* The decoded strings (a comment, a recent list's name) point into
	 * buf, which ends with this call: copy them while it lives. */
	return owned_rule_copy_strings(d->rs, tmp);
bad:
	snprintf(d->why, sizeof(d->why), "malformed %s expression", match ? "match" : "target");
	return 1;
}

static int add_match(struct dec *d, const struct rs_match *m)
{
	struct rs_match *slot;

	if (d->r->n_matches >= RS_MAX_MATCHES) {
		snprintf(d->why, sizeof(d->why), "more than %d matches", RS_MAX_MATCHES);
		return 1;
	}
	/* Strings in m are already in d->rs's arena (dec_xt copies them). */
	slot = &d->r->m[d->r->n_matches++];
	*slot = *m;
	return 0;
}

static bool is_range(const struct nftnl_expr *e)
{
	return e && is(e, "range");
}

/* One match of the rule (native or compat); 1 = not one svcnat writes. */
static int dec_match(struct dec *d)
{
	const struct nftnl_expr *e = peek(d, 0);
	struct rs_match m = { 0 };
	struct rs_rule tmp;
	const void *data;
	bool neq;
	int r;

	if (payload_at(e, NFT_PAYLOAD_TRANSPORT_HEADER, 2) &&
	    u32_is(e, NFTNL_EXPR_PAYLOAD_LEN, 2) && is_range(peek(d, 1))) {
		const struct nftnl_expr *g = peek(d, 1);
		uint32_t fl = 0, tl = 0, op = nftnl_expr_get_u32(g, NFTNL_EXPR_RANGE_OP);
		const void *from = nftnl_expr_get_data(g, NFTNL_EXPR_RANGE_FROM_DATA, &fl);
		const void *to = nftnl_expr_get_data(g, NFTNL_EXPR_RANGE_TO_DATA, &tl);
		uint16_t lo, hi;

		if (!from || !to || fl != 2 || tl != 2 ||
		    !u32_is(g, NFTNL_EXPR_RANGE_SREG, NFT_REG_1) ||
		    (op != NFT_RANGE_EQ && op != NFT_RANGE_NEQ) ||
		    (d->r->proto != IPPROTO_TCP && d->r->proto != IPPROTO_UDP))
			goto native_bad;
		memcpy(&lo, from, 2);
		memcpy(&hi, to, 2);
		lo = ntohs(lo);
		hi = ntohs(hi);
		if (!lo || lo >= hi)
			goto native_bad;
		m.kind = RS_M_PORT;
		m.invert = op == NFT_RANGE_NEQ;
		m.u.port.dport = lo;
		m.u.port.dport_max = hi;
		d->i += 2;
		return add_match(d, &m);
	}
	if (payload_at(e, NFT_PAYLOAD_TRANSPORT_HEADER, 2) &&
	    u32_is(e, NFTNL_EXPR_PAYLOAD_LEN, 2) && (data = cmp_data(peek(d, 1), 2, &neq))) {
		uint16_t port;

		memcpy(&port, data, 2);
		if ((d->r->proto != IPPROTO_TCP && d->r->proto != IPPROTO_UDP) || !port)
			goto native_bad;
		m.kind = RS_M_PORT;
		m.invert = neq;
		m.u.port.dport = ntohs(port);
		d->i += 2;
		return add_match(d, &m);
	}
	if (meta_key(e, NFT_META_MARK)) {
		const void *mask = bitwise_mask(peek(d, 1), 4);
		uint32_t v;

		m.u.mark.mask = 0xffffffffu;
		if (mask) {
			memcpy(&m.u.mark.mask, mask, 4);
			if (m.u.mark.mask == 0xffffffffu)
				goto native_bad;
		}
		data = cmp_data(peek(d, mask ? 2 : 1), 4, &neq);
		if (!data)
			goto native_bad;
		memcpy(&v, data, 4);
		m.kind = RS_M_MARK;
		m.invert = neq;
		m.u.mark.value = v;
		d->i += mask ? 3 : 2;
		return add_match(d, &m);
	}
	if (e && is(e, "match")) {
		r = dec_xt(d, e, true, &tmp);
		if (r)
			return r;
		d->i++;
		return add_match(d, &tmp.m[0]);
	}
	snprintf(d->why, sizeof(d->why), "expression '%s'",
		 e ? nftnl_expr_get_str(e, NFTNL_EXPR_NAME) : "?");
	return 1;
native_bad:
	snprintf(d->why, sizeof(d->why), "a native match svcnat does not write");
	return 1;
}

static int dec_verdict(struct dec *d)
{
	const struct nftnl_expr *e = peek(d, 0);
	struct rs_rule tmp;
	int r;

	if (!e)
		return 0; /* RS_T_NONE */
	if (is(e, "immediate") && u32_is(e, NFTNL_EXPR_IMM_DREG, NFT_REG_VERDICT)) {
		int v = (int)nftnl_expr_get_u32(e, NFTNL_EXPR_IMM_VERDICT);
		const char *chain = nftnl_expr_is_set(e, NFTNL_EXPR_IMM_CHAIN)
					    ? nftnl_expr_get_str(e, NFTNL_EXPR_IMM_CHAIN)
					    : NULL;

		if (v == NF_ACCEPT)
			d->r->t.kind = RS_T_ACCEPT;
		else if (v == NF_DROP)
			d->r->t.kind = RS_T_DROP;
		else if (v == NFT_RETURN)
			d->r->t.kind = RS_T_RETURN;
		else if ((v == NFT_JUMP || v == NFT_GOTO) && chain && chain[0] &&
			 strlen(chain) <= RS_CHAIN_MAXLEN) {
			d->r->t.kind = v == NFT_JUMP ? RS_T_JUMP : RS_T_GOTO;
			if (!(d->r->t.u.chain = ruleset_strdup(d->rs, chain)))
				return -ENOMEM;
		} else {
			snprintf(d->why, sizeof(d->why), "verdict %d", v);
			return 1;
		}
	} else if (is(e, "target")) {
		r = dec_xt(d, e, false, &tmp);
		if (r)
			return r;
		d->r->t = tmp.t;
	} else {
		snprintf(d->why, sizeof(d->why), "expression '%s' after the counter",
			 nftnl_expr_get_str(e, NFTNL_EXPR_NAME));
		return 1;
	}
	d->i++;
	if (d->i != d->n) {
		snprintf(d->why, sizeof(d->why), "expressions after the verdict");
		return 1;
	}
	return 0;
}

static int collect(const struct nftnl_rule *nr, struct dec *d)
{
	struct nftnl_expr_iter *it = nftnl_expr_iter_create(nr);
	struct nftnl_expr *e;

	if (!it)
		return -ENOMEM;
	while ((e = nftnl_expr_iter_next(it))) {
		if (d->n == MAX_EXPRS) {
			nftnl_expr_iter_destroy(it);
			return 1;
		}
		d->e[d->n++] = e;
	}
	nftnl_expr_iter_destroy(it);
	return 0;
}

/* The chain a rule jumps or goes to, whatever else it holds. */
static const char *rule_jump(struct dec *d)
{
	for (size_t k = d->n; k-- > 0;) {
		const struct nftnl_expr *e = d->e[k];

		if (is(e, "immediate") && u32_is(e, NFTNL_EXPR_IMM_DREG, NFT_REG_VERDICT) &&
		    nftnl_expr_is_set(e, NFTNL_EXPR_IMM_CHAIN))
			return nftnl_expr_get_str(e, NFTNL_EXPR_IMM_CHAIN);
	}
	return NULL;
}

static int decode(struct dec *d)
{
	struct rs_rule *r = d->r;
	const void *data;
	bool neq;
	int k;

	if (meta_key(peek(d, 0), NFT_META_IIFNAME)) {
		const struct nftnl_expr *c = peek(d, 1);
		uint32_t len = 0, op;
		const char *name;

		if (!c || !is(c, "cmp") || !u32_is(c, NFTNL_EXPR_CMP_SREG, NFT_REG_1))
			goto iface_bad;
		op = nftnl_expr_get_u32(c, NFTNL_EXPR_CMP_OP);
		name = nftnl_expr_get_data(c, NFTNL_EXPR_CMP_DATA, &len);
		if (!name || !len || len > 16 || (op != NFT_CMP_EQ && op != NFT_CMP_NEQ) ||
		    memchr(name, '\0', len - 1))
			goto iface_bad;
		/* With its NUL: the whole name; without: a prefix ("name+"). */
		r->in_iface_prefix = name[len - 1] != '\0';
		r->in_iface = ruleset_printf(d->rs, "%.*s", (int)(r->in_iface_prefix ? len : len - 1),
					     name);
		if (!r->in_iface)
			return -ENOMEM;
		if (!r->in_iface[0])
			goto iface_bad;
		r->in_iface_inv = op == NFT_CMP_NEQ;
		d->i += 2;
	}
	if (meta_key(peek(d, 0), NFT_META_L4PROTO)) {
		data = cmp_data(peek(d, 1), 1, &neq);
		if (!data || neq || !*(const uint8_t *)data) {
			snprintf(d->why, sizeof(d->why), "a protocol match svcnat does not write");
			return 1;
		}
		r->proto = *(const uint8_t *)data;
		d->i += 2;
	}
	dec_addr(d, d->v6 ? 8 : 12, &r->src, &r->src_inv);
	dec_addr(d, d->v6 ? 24 : 16, &r->dst, &r->dst_inv);
	while (peek(d, 0) && !is(peek(d, 0), "counter") && !is(peek(d, 0), "immediate") &&
	       !is(peek(d, 0), "target")) {
		k = dec_match(d);
		if (k)
			return k;
	}
	if (!peek(d, 0) || !is(peek(d, 0), "counter")) {
		snprintf(d->why, sizeof(d->why), "no counter (not written by iptables-nft)");
		return 1;
	}
	d->i++;
	return dec_verdict(d);
iface_bad:
	snprintf(d->why, sizeof(d->why), "an interface match svcnat does not write");
	return 1;
}

int nftread_rule(const struct nftnl_rule *nr, enum writer_family f, struct ruleset *rs,
		 struct rs_rule *out, const char **ret_jump)
{
	struct dec d = { .r = out, .rs = rs, .v6 = f == WRITER_IPV6 };
	const char *jump;
	int k;

	memset(out, 0, sizeof(*out));
	if (ret_jump)
		*ret_jump = NULL;
	k = collect(nr, &d);
	if (k < 0)
		return k;
	jump = rule_jump(&d);
	if (ret_jump && jump && !(*ret_jump = ruleset_strdup(rs, jump)))
		return -ENOMEM;
	if (k > 0)
		snprintf(d.why, sizeof(d.why), "more than %d expressions", MAX_EXPRS);
	else if (nftnl_rule_is_set(nr, NFTNL_RULE_USERDATA))
		snprintf(d.why, sizeof(d.why), "user data (an nft comment?)"), k = 1;
	else
		k = decode(&d);
	if (k <= 0)
		return k;
	memset(out, 0, sizeof(*out));
	out->t.kind = OWNED_T_FOREIGN;
	out->n_matches = 1;
	out->m[0].kind = RS_M_COMMENT;
	if (!(out->m[0].u.comment = ruleset_strdup(rs, d.why)))
		return -ENOMEM;
	return 1;
}
