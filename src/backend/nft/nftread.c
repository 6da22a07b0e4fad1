/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libmnl/libmnl.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>

#include <libnftnl/chain.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>

#include "core/owned.h"
#include "backend/nft/nftenc.h"
#include "backend/nft/nftread.h"
#include "backend/xt/xtentry.h"
#include "util.h"

#define MAX_EXPRS 64
/* Reads of both tables (or of one chain) tried before giving up on a
 * ruleset that keeps changing under us. */
#define READ_TRIES 10

/* --- one rule --- */

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

/* --- whole tables --- */

static int chain_cmp(const void *a, const void *b)
{
	return strcmp(((const struct nftread_chain *)a)->c->name,
		      ((const struct nftread_chain *)b)->c->name);
}

static struct nftread_chain *find_in(const struct nftread_family *fam, enum rs_table t, const char *name)
{
	const struct nftread_table *tb = &fam->t[t];
	size_t lo = 0, hi = tb->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(name, tb->chains[mid].c->name);

		if (!c)
			return &tb->chains[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

struct nftread_chain *nftread_find(const struct nftread_state *st, enum writer_family f,
				   enum rs_table t, const char *name)
{
	return find_in(&st->f[f], t, name);
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

bool nftread_other(const struct nftread_state *st, enum writer_family f, enum rs_table t, const char *name)
{
	const struct nftread_table *tb = &st->f[f].t[t];

	return tb->n_others &&
	       bsearch(&name, tb->others, tb->n_others, sizeof(*tb->others), str_cmp);
}

bool nftread_referenced(const struct nftread_state *st, enum writer_family f, enum rs_table t,
			const char *name)
{
	const struct nftread_table *tb = &st->f[f].t[t];

	return tb->n_refs && bsearch(&name, tb->refs, tb->n_refs, sizeof(*tb->refs), str_cmp);
}

struct read_ctx {
	struct nftread_family *fam;
	enum writer_family f;
	const struct ruleset *plan;
	enum rs_table t;
	struct nftread_chain *last; /* rules come chain by chain */
	struct diag_list *d;
	int err;
};

DEFINE_TRIVIAL_CLEANUP_FUNC(struct nftnl_chain *, nftnl_chain_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(struct nftnl_rule *, nftnl_rule_free)

static int chain_cb(const struct nlmsghdr *nlh, void *data)
{
	struct read_ctx *x = data;
	struct nftread_table *tb = &x->fam->t[x->t];
	_cleanup_(nftnl_chain_freep) struct nftnl_chain *nc = nftnl_chain_alloc();
	const struct nftenc_hook *h;
	struct nftread_chain *ch;
	const char *name;
	bool base;

	if (!nc)
		return -ENOMEM;
	if (nftnl_chain_nlmsg_parse(nlh, nc) < 0)
		return -EINVAL;
	/* Chain dumps are not filtered by table in the kernel. */
	if (!streq_null(nftnl_chain_get_str(nc, NFTNL_CHAIN_TABLE), rs_table_name(x->t)))
		return 0;
	name = nftnl_chain_get_str(nc, NFTNL_CHAIN_NAME);
	base = nftnl_chain_is_set(nc, NFTNL_CHAIN_HOOKNUM);
	h = nftenc_builtin(x->t, name);
	tb->exists = true;
	if (!name || strlen(name) > RS_CHAIN_MAXLEN ||
	    (!h && (base || !owned_chain_ours(x->plan, x->t, name)))) {
		const char *copy = name ? ruleset_strdup(x->fam->rs, name) : "";

		if (!copy || GROW(tb->others, tb->cap_others, tb->n_others + 1) < 0)
			return -ENOMEM;
		tb->others[tb->n_others++] = copy;
		return 0;
	}
	if (GROW(tb->chains, tb->cap, tb->n + 1) < 0)
		return -ENOMEM;
	ch = &tb->chains[tb->n];
	memset(ch, 0, sizeof(*ch));
	ch->c = ruleset_add_chain(x->fam->rs, x->t, name);
	if (!ch->c)
		return -errno;
	tb->n++;
	ch->handle = nftnl_chain_get_u64(nc, NFTNL_CHAIN_HANDLE);
	ch->base = base;
	ch->hook_ok = h && base && nftnl_chain_get_u32(nc, NFTNL_CHAIN_HOOKNUM) == h->hooknum &&
		      nftnl_chain_get_s32(nc, NFTNL_CHAIN_PRIO) == h->prio &&
		      nftnl_chain_is_set(nc, NFTNL_CHAIN_TYPE) &&
		      streq(nftnl_chain_get_str(nc, NFTNL_CHAIN_TYPE), h->type);
	ch->handles = NULL;
	return 0;
}

static int add_ref(struct nftread_table *tb, const char *name)
{
	if (GROW(tb->refs, tb->cap_refs, tb->n_refs + 1) < 0)
		return -ENOMEM;
	tb->refs[tb->n_refs++] = name;
	return 0;
}

static int rule_cb(const struct nlmsghdr *nlh, void *data)
{
	struct read_ctx *x = data;
	struct nftread_table *tb = &x->fam->t[x->t];
	_cleanup_(nftnl_rule_freep) struct nftnl_rule *nr = nftnl_rule_alloc();
	struct nftread_chain *ch;
	const char *chain, *jump;
	struct rs_rule rule, *slot;
	int k;

	if (!nr)
		return -ENOMEM;
	if (nftnl_rule_nlmsg_parse(nlh, nr) < 0)
		return -EINVAL;
	chain = nftnl_rule_get_str(nr, NFTNL_RULE_CHAIN);
	if (!chain)
		return 0;
	ch = x->last && streq(x->last->c->name, chain) ? x->last : find_in(x->fam, x->t, chain);
	k = nftread_rule(nr, x->f, x->fam->rs, &rule, &jump);
	if (k < 0)
		return k;
	if (!ch || (ch->c->builtin && (k || !jump || !owned_chain_ours(x->plan, x->t, jump)))) {
		/* Another program's rule: keep only whom it jumps to. */
		if (jump && owned_chain_ours(x->plan, x->t, jump))
			return add_ref(tb, jump);
		return 0;
	}
	x->last = ch;
	if (GROW(ch->handles, ch->cap_handles, ch->c->n_rules + 1) < 0 ||
	    !(slot = rs_chain_append(ch->c)))
		return -ENOMEM;
	*slot = rule;
	ch->handles[ch->c->n_rules - 1] = nftnl_rule_get_u64(nr, NFTNL_RULE_HANDLE);
	return 0;
}

/* Forget what fam holds. */
static void family_done(struct nftread_family *fam)
{
	for (int t = 0; t < RS_NTABLES; t++) {
		for (size_t i = 0; i < fam->t[t].n; i++) {
			free(fam->t[t].chains[i].handles);
			free(fam->t[t].chains[i].lazy_own);
		}
		free(fam->t[t].chains);
		free(fam->t[t].refs);
		free(fam->t[t].others);
		free(fam->t[t].touched);
	}
	ruleset_free(fam->rs);
	memset(fam, 0, sizeof(*fam));
}

void nftread_chain_unlazy(struct nftread_chain *ch)
{
	free(ch->lazy_own);
	ch->lazy_own = NULL;
	ch->lazy = NULL;
	ch->lazy_len = 0;
	ch->n_lazy = 0;
}

struct nftread_state *nftread_state_new(void)
{
	return calloc(1, sizeof(struct nftread_state));
}

void nftread_state_free(struct nftread_state *st)
{
	if (!st)
		return;
	for (int f = 0; f < 2; f++)
		family_done(&st->f[f]);
	free(st->keep_buf);
	free(st);
}

size_t nftread_state_bytes(const struct nftread_state *st)
{
	size_t n;

	if (!st)
		return 0;
	n = sizeof(*st) + (st->keep_buf ? st->keep_len : 0);
	for (int f = 0; f < 2; f++) {
		const struct nftread_family *fam = &st->f[f];

		n += ruleset_bytes(fam->rs);
		for (size_t t = 0; t < RS_NTABLES; t++) {
			const struct nftread_table *tb = &fam->t[t];

			n += tb->cap * sizeof(*tb->chains) + tb->cap_refs * sizeof(*tb->refs) +
			     tb->cap_touched * sizeof(*tb->touched) +
			     tb->cap_others * sizeof(*tb->others);
			for (size_t i = 0; i < tb->n; i++)
				n += tb->chains[i].cap_handles * sizeof(*tb->chains[i].handles) +
				     (tb->chains[i].lazy_own ? tb->chains[i].lazy_len : 0);
		}
	}
	return n;
}

#define ARENA_SLACK (4u << 20)

DEFINE_TRIVIAL_CLEANUP_FUNC(struct ruleset *, ruleset_free)

/* Names of list s (n of them) copied into rs, into *ret (malloc'ed). */
static int names_copy(struct ruleset *rs, const char *const *s, size_t n, const char ***ret)
{
	const char **c = calloc(n ? n : 1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (!(c[i] = ruleset_strdup(rs, s[i]))) {
			free(c);
			return -ENOMEM;
		}
	*ret = c;
	return 0;
}

static int family_compact(struct nftread_family *fam)
{
	_cleanup_(ruleset_freep) struct ruleset *rs = ruleset_new();
	struct rs_chain **c[RS_NTABLES] = { NULL };
	const char **refs[RS_NTABLES] = { NULL }, **others[RS_NTABLES] = { NULL };
	int r = rs ? 0 : -ENOMEM;

	for (int t = 0; r >= 0 && t < RS_NTABLES; t++) {
		struct nftread_table *tb = &fam->t[t];

		c[t] = calloc(tb->n ? tb->n : 1, sizeof(*c[t]));
		if (!c[t])
			r = -ENOMEM;
		for (size_t i = 0; r >= 0 && i < tb->n; i++)
			if (!(c[t][i] = ruleset_copy_chain(rs, tb->chains[i].c)))
				r = -ENOMEM;
		if (r >= 0)
			r = names_copy(rs, tb->refs, tb->n_refs, &refs[t]);
		if (r >= 0)
			r = names_copy(rs, tb->others, tb->n_others, &others[t]);
	}
	for (int t = 0; t < RS_NTABLES; t++) {
		struct nftread_table *tb = &fam->t[t];

		if (r >= 0) {
			for (size_t i = 0; i < tb->n; i++)
				tb->chains[i].c = c[t][i];
			free(tb->refs);
			tb->refs = refs[t];
			tb->cap_refs = tb->n_refs;
			free(tb->others);
			tb->others = others[t];
			tb->cap_others = tb->n_others;
			refs[t] = others[t] = NULL;
		}
		free(c[t]);
		free(refs[t]);
		free(others[t]);
	}
	if (r < 0)
		return r;
	ruleset_free(fam->rs);
	fam->rs = TAKE_PTR(rs);
	fam->arena_kept = ruleset_arena_bytes(fam->rs);
	return 0;
}

int nftread_compact(struct nftread_state *st)
{
	for (int f = 0; f < 2; f++) {
		struct nftread_family *fam = &st->f[f];
		int r;

		if (!fam->read || !fam->rs ||
		    ruleset_arena_bytes(fam->rs) <= 2 * fam->arena_kept + ARENA_SLACK)
			continue;
		r = family_compact(fam);
		if (r < 0)
			return r;
	}
	return 0;
}

static const char *family_word(enum writer_family f)
{
	return f == WRITER_IPV6 ? "ip6" : "ip";
}

/* Read family f's tables into fam (empty) at one generation: *genid. */
static int read_once(struct nftsock *s, enum writer_family f, const struct ruleset *plan,
		     struct nftread_family *fam, uint32_t *genid, struct diag_list *d)
{
	uint8_t nfproto = nftenc_nfproto(f);
	uint32_t gen2;
	int r;

	fam->rs = ruleset_new();
	if (!fam->rs)
		return -ENOMEM;
	r = nftsock_getgen(s, genid);
	for (int t = 0; r >= 0 && t < RS_NTABLES; t++) {
		struct read_ctx x = { .fam = fam, .f = f, .plan = plan, .t = (enum rs_table)t, .d = d };
		struct nftread_table *tb = &fam->t[t];

		r = nftsock_dump(s, nfproto, NFT_MSG_GETCHAIN, rs_table_name((enum rs_table)t),
				 NULL, chain_cb, &x);
		if (r == -ENOENT) {
			r = 0;
			continue;
		}
		if (r < 0)
			break;
		qsort_safe(tb->chains, tb->n, sizeof(*tb->chains), chain_cmp);
		qsort_safe(tb->others, tb->n_others, sizeof(*tb->others), str_cmp);
		/*
		 * Rules chain by chain, as iptables-nft reads them: the kernel
		 * resumes a dump by skipping the rules it already sent from the
		 * start of the table, so one dump of a table of 400,000 rules
		 * costs minutes (quadratic), one per chain stays linear.
		 */
		for (size_t i = 0; r >= 0 && i < tb->n + tb->n_others; i++) {
			const char *chain = i < tb->n ? tb->chains[i].c->name : tb->others[i - tb->n];

			x.last = i < tb->n ? &tb->chains[i] : NULL;
			r = nftsock_dump(s, nfproto, NFT_MSG_GETRULE,
					 rs_table_name((enum rs_table)t), chain, rule_cb, &x);
			if (r == -ENOENT)
				r = -EINTR; /* deleted since the chain dump: read again */
		}
		if (r >= 0)
			qsort_safe(tb->refs, tb->n_refs, sizeof(*tb->refs), str_cmp);
	}
	if (r >= 0) {
		r = nftsock_getgen(s, &gen2);
		if (r >= 0 && gen2 != *genid)
			r = -EINTR;
	}
	return r;
}

int nftread_family(struct nftsock *s, struct nftread_state *st, enum writer_family f,
		   const struct ruleset *plan, struct diag_list *d)
{
	/* Another family read already fixes the generation. */
	bool fixed = st->f[!f].read;
	uint32_t gen = 0;
	int r = -EINTR;

	family_done(&st->f[f]);
	for (int k = 0; k < READ_TRIES && r == -EINTR; k++) {
		family_done(&st->f[f]);
		r = read_once(s, f, plan, &st->f[f], &gen, d);
		if (fixed && (r == -EINTR || (r >= 0 && gen != st->genid))) {
			family_done(&st->f[f]);
			return -EAGAIN; /* the ruleset moved since the other family was read */
		}
	}
	if (r == -EINTR) {
		family_done(&st->f[f]);
		diag_add(d, DIAG_ERROR, "nf_tables", NULL, NULL,
			 "the ruleset changed during each of %d reads; not writing", READ_TRIES);
		return -EAGAIN;
	}
	if (r < 0) {
		family_done(&st->f[f]);
		diag_add(d, DIAG_ERROR, "nf_tables", NULL, NULL, "reading tables %s filter and %s nat: %s",
			 family_word(f), family_word(f), strerror(-r));
		return r;
	}
	st->f[f].read = true;
	st->genid = gen;
	st->unpacked = true;
	return 0;
}

int nftread_chain_reload(struct nftsock *s, struct nftread_state *st, const struct ruleset *plan,
			 enum writer_family f, enum rs_table t, struct nftread_chain *ch)
{
	struct read_ctx x = { .fam = &st->f[f], .f = f, .plan = plan, .t = t, .last = ch };
	int r;

	/* Another program's write during the dump: that chain's rules again
	 * (whether the write mattered, the batch's generation tells). */
	r = -EINTR;
	nftread_chain_unlazy(ch);
	for (int k = 0; k < READ_TRIES && r == -EINTR; k++) {
		ch->c->n_rules = 0;
		x.last = ch;
		r = nftsock_dump(s, nftenc_nfproto(f), NFT_MSG_GETRULE, rs_table_name(t),
				 ch->c->name, rule_cb, &x);
	}
	if (r >= 0)
		ch->stale = false;
	st->unpacked = true;
	return r;
}

/* --- notifications --- */

static int table_attr_cb(const struct nlattr *a, void *data)
{
	/* Attribute 1 names the table in every nf_tables object message
	 * (NFTA_TABLE_NAME, NFTA_CHAIN_TABLE, NFTA_RULE_TABLE, NFTA_SET_TABLE ...). */
	if (mnl_attr_get_type(a) == 1 && mnl_attr_validate(a, MNL_TYPE_NUL_STRING) >= 0)
		*(const char **)data = mnl_attr_get_str(a);
	return MNL_CB_OK;
}

/* Whether rule nr (of a chain that is not svcnat's) jumps anywhere but to
 * another program's chain, or may through a set or an object. */
static bool rule_may_jump_in(const struct nftread_state *st, enum writer_family f, enum rs_table t,
			     const struct nftnl_rule *nr)
{
	struct nftnl_expr_iter *it = nftnl_expr_iter_create(nr);
	const struct nftnl_expr *e;
	bool in = false;

	if (!it)
		return true;
	while (!in && (e = nftnl_expr_iter_next(it))) {
		const char *name = nftnl_expr_get_str(e, NFTNL_EXPR_NAME);

		if (!name)
			in = true;
		else if (streq(name, "immediate") && nftnl_expr_is_set(e, NFTNL_EXPR_IMM_CHAIN))
			in = !nftread_other(st, f, t, nftnl_expr_get_str(e, NFTNL_EXPR_IMM_CHAIN));
		else if (streq(name, "lookup") || streq(name, "dynset") || streq(name, "objref"))
			in = true;
	}
	nftnl_expr_iter_destroy(it);
	return in;
}

bool nftread_event_matters(const struct nftread_state *st, const struct nlmsghdr *nlh)
{
	const struct nfgenmsg *g = mnl_nlmsg_get_payload(nlh);
	struct nftnl_rule *nr;
	const char *table = NULL, *chain;
	struct nftread_chain *ch;
	enum writer_family f;
	uint8_t type;
	bool matters = true, gone_ref;
	int t;

	if (NFNL_SUBSYS_ID(nlh->nlmsg_type) != NFNL_SUBSYS_NFTABLES)
		return false;
	type = NFNL_MSG_TYPE(nlh->nlmsg_type);
	if (type == NFT_MSG_NEWGEN)
		return false;
	if (nlh->nlmsg_len < NLMSG_LENGTH(sizeof(*g)))
		return true;
	/* iptables-nft's tables are of family ip and ip6 only: an inet,
	 * bridge, arp or netdev table of the same name is another table. */
	if (g->nfgen_family == NFPROTO_IPV4)
		f = WRITER_IPV4;
	else if (g->nfgen_family == NFPROTO_IPV6)
		f = WRITER_IPV6;
	else
		return false;
	if (mnl_attr_parse(nlh, sizeof(*g), table_attr_cb, &table) < 0 || !table)
		return true;
	for (t = 0; t < RS_NTABLES && !streq(table, rs_table_name((enum rs_table)t)); t++)
		;
	if (t == RS_NTABLES)
		return false; /* mangle, raw, security, another program's own table */
	/* A family not read is read whole when it is needed. */
	if (!st->f[f].read)
		return false;
	/* Chains, sets, the table itself: whatever it is, read again. */
	if (type != NFT_MSG_NEWRULE && type != NFT_MSG_DELRULE)
		return true;
	nr = nftnl_rule_alloc();
	if (!nr)
		return true;
	if (nftnl_rule_nlmsg_parse(nlh, nr) < 0 || !(chain = nftnl_rule_get_str(nr, NFTNL_RULE_CHAIN)))
		goto out;
	/* A deletion's notification may come without the rule's expressions:
	 * while other programs' rules jump to svcnat's chains, any of theirs
	 * deleted may have been such a jump. */
	gone_ref = type == NFT_MSG_DELRULE && st->f[f].t[t].n_refs > 0;
	if (nftread_other(st, f, (enum rs_table)t, chain)) {
		/* Another program's chain: only a jump to svcnat's matters
		 * (it keeps the chain from being deleted). */
		matters = rule_may_jump_in(st, f, (enum rs_table)t, nr) || gone_ref;
		goto out;
	}
	ch = nftread_find(st, f, (enum rs_table)t, chain);
	if (ch && ch->c->builtin && !ch->stale && !ch->gone) {
		/* A built-in chain keeps only svcnat's jumps, by handle: another
		 * rule there matters only if it is one of them or jumps in. */
		uint64_t h = nftnl_rule_get_u64(nr, NFTNL_RULE_HANDLE);

		matters = !nftnl_rule_is_set(nr, NFTNL_RULE_HANDLE) || gone_ref ||
			  rule_may_jump_in(st, f, (enum rs_table)t, nr);
		for (size_t i = 0; !matters && i < ch->c->n_rules; i++)
			matters = ch->handles[i] == h;
	}
out:
	nftnl_rule_free(nr);
	return matters;
}
