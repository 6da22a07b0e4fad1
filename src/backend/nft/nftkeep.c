/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "backend/nft/nftkeep.h"
#include "core/owned.h"
#include "util.h"

/*
 * The payload, little endian, strings as length (u16) and bytes:
 *   per family (2): read u8; when read, per table (2):
 *     exists u8, chains u32, each chain:
 *       name, flags u8 (CH_*), handle u64, rules u32, [handles u64 each],
 *       bytes u32 of the rules that follow, each rule (rule_put())
 *     refs u32 + strings, others u32 + strings
 *   nothing after that
 */
enum {
	CH_BASE = 1 << 0,
	CH_HOOK_OK = 1 << 1,
	CH_HANDLES = 1 << 2,
};

enum {
	R_SRC = 1 << 0,
	R_DST = 1 << 1,
	R_SRC_INV = 1 << 2,
	R_DST_INV = 1 << 3,
	R_IFACE = 1 << 4,
	R_IFACE_PREFIX = 1 << 5,
	R_IFACE_INV = 1 << 6,
};

/* Bounds that keep a damaged file from asking for absurd allocations:
 * far above what the kernel takes (a chain holds at most a few hundred
 * thousand rules before the table's memory runs out). */
#define MAX_CHAINS (16u << 20)
#define MAX_RULES (16u << 20)
/* Longest string kept (comments, chain and interface names, recent
 * tables: the kernel's own limits are far below). */
#define MAX_STR 4096

static int addr_len(uint8_t family)
{
	return family == AF_INET ? 4 : family == AF_INET6 ? 16 : -1;
}

/* A string decoding takes back (longer ones make the state unkept). */
static void str_put(struct keepbuf *b, const char *s)
{
	if (strlen(s) > MAX_STR) {
		if (!b->err)
			b->err = -ENOTSUP;
		return;
	}
	keepbuf_str(b, s);
}

static void addr_put(struct keepbuf *b, const struct ipaddr *a)
{
	int n = addr_len(a->family);

	keepbuf_u8(b, a->family);
	if (n > 0)
		keepbuf_put(b, a->u.b, (size_t)n);
}

static int match_put(struct keepbuf *b, const struct rs_match *m)
{
	uint64_t bits;

	keepbuf_u8(b, m->kind);
	keepbuf_u8(b, m->invert);
	switch (m->kind) {
	case RS_M_COMMENT:
		str_put(b, m->u.comment ? m->u.comment : "");
		return 0;
	case RS_M_PORT:
		keepbuf_u16(b, m->u.port.dport);
		keepbuf_u16(b, m->u.port.dport_max);
		return 0;
	case RS_M_ADDRTYPE:
		keepbuf_u8(b, m->u.addrtype.src);
		keepbuf_u16(b, m->u.addrtype.type);
		return 0;
	case RS_M_MARK:
		keepbuf_u32(b, m->u.mark.value);
		keepbuf_u32(b, m->u.mark.mask);
		return 0;
	case RS_M_CONNTRACK:
		keepbuf_u16(b, m->u.ct.states);
		return 0;
	case RS_M_STATISTIC:
		memcpy(&bits, &m->u.stat.probability, sizeof(bits));
		keepbuf_u64(b, bits);
		return 0;
	case RS_M_RECENT:
		str_put(b, m->u.recent.name ? m->u.recent.name : "");
		keepbuf_u8(b, (uint8_t)(m->u.recent.set | m->u.recent.update << 1 |
					m->u.recent.reap << 2 | m->u.recent.ipv6 << 3));
		keepbuf_u32(b, m->u.recent.seconds);
		return 0;
	case RS_M_NFACCT:
		str_put(b, m->u.nfacct.name ? m->u.nfacct.name : "");
		return 0;
	}
	return -ENOTSUP;
}

static int target_put(struct keepbuf *b, const struct rs_target *t)
{
	keepbuf_u8(b, t->kind);
	switch (t->kind) {
	case RS_T_NONE:
	case RS_T_ACCEPT:
	case RS_T_DROP:
	case RS_T_RETURN:
	case OWNED_T_FOREIGN:
		return 0;
	case RS_T_JUMP:
	case RS_T_GOTO:
		str_put(b, t->u.chain ? t->u.chain : "");
		return 0;
	case RS_T_REJECT:
		keepbuf_u8(b, t->u.reject.icmp6);
		return 0;
	case RS_T_DNAT:
		addr_put(b, &t->u.dnat.addr);
		keepbuf_u16(b, t->u.dnat.port);
		return 0;
	case RS_T_MARK:
		keepbuf_u8(b, t->u.mark.op);
		keepbuf_u32(b, t->u.mark.value);
		keepbuf_u32(b, t->u.mark.mask);
		return 0;
	case RS_T_MASQUERADE:
		keepbuf_u8(b, t->u.masq.random_fully);
		return 0;
	}
	return -ENOTSUP;
}

static int rule_put(struct keepbuf *b, const struct rs_rule *r)
{
	uint8_t fl = (uint8_t)((r->src.addr.family ? R_SRC : 0) | (r->dst.addr.family ? R_DST : 0) |
			       (r->src_inv ? R_SRC_INV : 0) | (r->dst_inv ? R_DST_INV : 0) |
			       (r->in_iface ? R_IFACE : 0) |
			       (r->in_iface_prefix ? R_IFACE_PREFIX : 0) |
			       (r->in_iface_inv ? R_IFACE_INV : 0));
	int k;

	keepbuf_u8(b, fl);
	if (fl & R_SRC) {
		addr_put(b, &r->src.addr);
		keepbuf_u8(b, r->src.plen);
	}
	if (fl & R_DST) {
		addr_put(b, &r->dst.addr);
		keepbuf_u8(b, r->dst.plen);
	}
	if (fl & R_IFACE)
		str_put(b, r->in_iface);
	keepbuf_u8(b, r->proto);
	if (r->n_matches > RS_MAX_MATCHES)
		return -ENOTSUP;
	keepbuf_u8(b, r->n_matches);
	for (size_t i = 0; i < r->n_matches; i++)
		if ((k = match_put(b, &r->m[i])) < 0)
			return k;
	return target_put(b, &r->t);
}

/* Where the file holds a lazy chain's handles (handles_lazy): just
 * before the length of its rules' bytes. */
static const uint8_t *lazy_handles(const struct nftread_chain *ch)
{
	return ch->lazy - 4 - 8 * (size_t)ch->n_lazy;
}

static void strs_put(struct keepbuf *b, const char *const *s, size_t n)
{
	keepbuf_u32(b, (uint32_t)n);
	for (size_t i = 0; i < n; i++)
		str_put(b, s[i]);
}

static int table_put(struct keepbuf *b, const struct nftread_table *tb)
{
	size_t n = 0, at;
	int k;

	for (size_t i = 0; i < tb->n; i++)
		n += !tb->chains[i].gone;
	keepbuf_u8(b, tb->exists);
	keepbuf_u32(b, (uint32_t)n);
	for (size_t i = 0; i < tb->n; i++) {
		const struct nftread_chain *ch = &tb->chains[i];
		const struct rs_chain *c = ch->c;
		bool handles = !ch->stale && ((ch->lazy ? ch->n_lazy : c->n_rules) == 0 ||
					      ch->handles || ch->handles_lazy);

		if (ch->gone)
			continue;
		str_put(b, c->name);
		keepbuf_u8(b, (uint8_t)((ch->base ? CH_BASE : 0) | (ch->hook_ok ? CH_HOOK_OK : 0) |
					(handles ? CH_HANDLES : 0)));
		keepbuf_u64(b, ch->handle);
		n = ch->lazy ? ch->n_lazy : c->n_rules;
		keepbuf_u32(b, (uint32_t)n);
		if (handles && ch->handles_lazy)
			keepbuf_put(b, lazy_handles(ch), 8 * (size_t)n);
		for (size_t j = 0; handles && !ch->handles_lazy && j < n; j++)
			keepbuf_u64(b, ch->handles[j]);
		if (ch->lazy) {
			/* As the previous process wrote them, still undecoded. */
			keepbuf_u32(b, (uint32_t)ch->lazy_len);
			keepbuf_put(b, ch->lazy, ch->lazy_len);
			continue;
		}
		at = b->n;
		keepbuf_u32(b, 0);
		for (size_t j = 0; j < c->n_rules; j++)
			if ((k = rule_put(b, &c->rules[j])) < 0)
				return k;
		if (!b->err && b->n - at - 4 > UINT32_MAX)
			b->err = -ENOTSUP;
		if (!b->err)
			for (int q = 0; q < 4; q++)
				b->p[at + (size_t)q] = (uint8_t)((b->n - at - 4) >> (8 * q));
	}
	strs_put(b, tb->refs, tb->n_refs);
	strs_put(b, tb->others, tb->n_others);
	return 0;
}

int nftkeep_encode(const struct nftread_state *st, struct keepbuf *b)
{
	int k;

	for (int f = 0; f < 2; f++) {
		const struct nftread_family *fam = &st->f[f];

		keepbuf_u8(b, fam->read);
		for (int t = 0; fam->read && t < RS_NTABLES; t++)
			if ((k = table_put(b, &fam->t[t])) < 0)
				return k;
	}
	return b->err;
}

/* --- decoding --- */

struct rd {
	struct keepread r;
	struct ruleset *rs; /* the family's: strings go to its arena */
};

/* A string into rs's arena (NUL-terminated); NULL and bad on failure. */
static const char *str_get(struct rd *x, bool *ret_nomem)
{
	size_t len;
	const char *p = keepread_str(&x->r, &len);
	char buf[MAX_STR + 1];
	const char *s;

	if (!p || len > MAX_STR) {
		x->r.bad = true;
		return NULL;
	}
	memcpy(buf, p, len);
	buf[len] = '\0';
	s = ruleset_strdup(x->rs, buf);
	if (!s)
		*ret_nomem = true;
	return s;
}

static bool addr_get(struct rd *x, struct ipaddr *a)
{
	int n;

	memset(a, 0, sizeof(*a));
	a->family = keepread_u8(&x->r);
	n = addr_len(a->family);
	if (n < 0)
		return false;
	keepread_bytes(&x->r, a->u.b, (size_t)n);
	return true;
}

static bool net_get(struct rd *x, struct ipnet *n)
{
	if (!addr_get(x, &n->addr))
		return false;
	n->plen = keepread_u8(&x->r);
	return n->plen <= (n->addr.family == AF_INET ? 32 : 128);
}

static bool match_get(struct rd *x, struct rs_match *m, bool *nomem)
{
	uint64_t bits;
	uint8_t fl;

	memset(m, 0, sizeof(*m));
	m->kind = keepread_u8(&x->r);
	m->invert = keepread_u8(&x->r) != 0;
	switch (m->kind) {
	case RS_M_COMMENT:
		return (m->u.comment = str_get(x, nomem)) != NULL;
	case RS_M_PORT:
		m->u.port.dport = keepread_u16(&x->r);
		m->u.port.dport_max = keepread_u16(&x->r);
		return true;
	case RS_M_ADDRTYPE:
		m->u.addrtype.src = keepread_u8(&x->r) != 0;
		m->u.addrtype.type = keepread_u16(&x->r);
		return true;
	case RS_M_MARK:
		m->u.mark.value = keepread_u32(&x->r);
		m->u.mark.mask = keepread_u32(&x->r);
		return true;
	case RS_M_CONNTRACK:
		m->u.ct.states = keepread_u16(&x->r);
		return true;
	case RS_M_STATISTIC:
		bits = keepread_u64(&x->r);
		memcpy(&m->u.stat.probability, &bits, sizeof(bits));
		return m->u.stat.probability >= 0 && m->u.stat.probability <= 1;
	case RS_M_RECENT:
		if (!(m->u.recent.name = str_get(x, nomem)))
			return false;
		fl = keepread_u8(&x->r);
		m->u.recent.set = fl & 1;
		m->u.recent.update = fl & 2;
		m->u.recent.reap = fl & 4;
		m->u.recent.ipv6 = fl & 8;
		m->u.recent.seconds = keepread_u32(&x->r);
		return fl < 16;
	case RS_M_NFACCT:
		m->u.nfacct.name = str_get(x, nomem);
		return m->u.nfacct.name && strlen(m->u.nfacct.name) <= RS_NFACCT_NAME_MAXLEN;
	}
	return false;
}

static bool target_get(struct rd *x, struct rs_target *t, bool *nomem)
{
	memset(t, 0, sizeof(*t));
	t->kind = keepread_u8(&x->r);
	switch (t->kind) {
	case RS_T_NONE:
	case RS_T_ACCEPT:
	case RS_T_DROP:
	case RS_T_RETURN:
	case OWNED_T_FOREIGN:
		return true;
	case RS_T_JUMP:
	case RS_T_GOTO:
		return (t->u.chain = str_get(x, nomem)) != NULL;
	case RS_T_REJECT:
		t->u.reject.icmp6 = keepread_u8(&x->r) != 0;
		return true;
	case RS_T_DNAT:
		if (!addr_get(x, &t->u.dnat.addr))
			return false;
		t->u.dnat.port = keepread_u16(&x->r);
		return true;
	case RS_T_MARK:
		t->u.mark.op = keepread_u8(&x->r);
		t->u.mark.value = keepread_u32(&x->r);
		t->u.mark.mask = keepread_u32(&x->r);
		return t->u.mark.op <= RS_MARK_SET;
	case RS_T_MASQUERADE:
		t->u.masq.random_fully = keepread_u8(&x->r) != 0;
		return true;
	}
	return false;
}

static bool rule_get(struct rd *x, struct rs_rule *r, bool *nomem)
{
	uint8_t fl = keepread_u8(&x->r);

	memset(r, 0, sizeof(*r));
	if (fl >> 7)
		return false;
	if ((fl & R_SRC) && !net_get(x, &r->src))
		return false;
	if ((fl & R_DST) && !net_get(x, &r->dst))
		return false;
	r->src_inv = fl & R_SRC_INV;
	r->dst_inv = fl & R_DST_INV;
	r->in_iface_prefix = fl & R_IFACE_PREFIX;
	r->in_iface_inv = fl & R_IFACE_INV;
	if ((fl & R_IFACE) && !(r->in_iface = str_get(x, nomem)))
		return false;
	r->proto = keepread_u8(&x->r);
	r->n_matches = keepread_u8(&x->r);
	if (r->n_matches > RS_MAX_MATCHES)
		return false;
	for (size_t i = 0; i < r->n_matches; i++)
		if (!match_get(x, &r->m[i], nomem))
			return false;
	return target_get(x, &r->t, nomem) && !x->r.bad;
}

static int strs_get(struct rd *x, const char ***ret, size_t *n, size_t *cap)
{
	uint32_t k = keepread_u32(&x->r);
	bool nomem = false;

	if (k > MAX_CHAINS || k > x->r.n - x->r.at)
		return -EINVAL;
	for (uint32_t i = 0; i < k; i++) {
		const char *s = str_get(x, &nomem);

		if (!s)
			return nomem ? -ENOMEM : -EINVAL;
		if (*n && strcmp((*ret)[*n - 1], s) > 0)
			return -EINVAL; /* looked up by bsearch: sorted */
		if (GROW(*ret, *cap, *n + 1) < 0)
			return -ENOMEM;
		(*ret)[(*n)++] = s;
	}
	return 0;
}

/* n rules from the len bytes at p into ch->c (strings into rs's arena). */
static int rules_get(struct ruleset *rs, struct nftread_chain *ch, const uint8_t *p, size_t len,
		     uint32_t n)
{
	struct rd x = { .r = { .p = p, .n = len }, .rs = rs };
	bool nomem = false;

	ch->c->n_rules = 0;
	/* One allocation for the chain's rules, not one per doubling. */
	if (n && GROW(ch->c->rules, ch->c->cap_rules, n) < 0)
		return -ENOMEM;
	for (uint32_t j = 0; j < n; j++) {
		struct rs_rule *slot = rs_chain_append(ch->c);

		if (!slot)
			return -ENOMEM;
		if (!rule_get(&x, slot, &nomem)) {
			ch->c->n_rules = 0;
			return nomem ? -ENOMEM : -EINVAL;
		}
	}
	if (x.r.bad || x.r.at != x.r.n) {
		ch->c->n_rules = 0;
		return -EINVAL;
	}
	return 0;
}

static int chain_get(struct rd *x, struct nftread_table *tb, enum rs_table t)
{
	struct nftread_chain *ch;
	const char *name;
	uint32_t n;
	uint8_t fl;
	size_t len;
	int k;

	name = keepread_str(&x->r, &len);
	if (!name || len == 0 || len > RS_CHAIN_MAXLEN)
		return -EINVAL;
	if (GROW(tb->chains, tb->cap, tb->n + 1) < 0)
		return -ENOMEM;
	ch = &tb->chains[tb->n];
	memset(ch, 0, sizeof(*ch));
	{
		char buf[RS_CHAIN_MAXLEN + 1];

		memcpy(buf, name, len);
		buf[len] = '\0';
		if (tb->n && strcmp(tb->chains[tb->n - 1].c->name, buf) >= 0)
			return -EINVAL; /* found by bsearch: sorted, once each */
		/* Unique (sorted): found by bsearch in tb, never by the index. */
		ch->c = ruleset_add_chain_new(x->rs, t, buf);
	}
	if (!ch->c)
		return errno == ENOMEM ? -ENOMEM : -EINVAL;
	tb->n++;
	fl = keepread_u8(&x->r);
	ch->base = fl & CH_BASE;
	ch->hook_ok = fl & CH_HOOK_OK;
	ch->handle = keepread_u64(&x->r);
	n = keepread_u32(&x->r);
	/* Every rule takes at least 4 bytes: a count beyond what is left is damage. */
	if (fl >> 3 || n > MAX_RULES || n > (x->r.n - x->r.at) / 4 ||
	    (ch->hook_ok && (!ch->base || !ch->c->builtin)))
		return -EINVAL;
	ch->stale = !(fl & CH_HANDLES);
	if ((fl & CH_HANDLES) && !ch->c->builtin) {
		/* Decoded with the rules (nftkeep_chain_rules()): skipped here. */
		if (n > (x->r.n - x->r.at) / 8)
			return -EINVAL;
		x->r.at += 8 * (size_t)n;
		ch->handles_lazy = n > 0;
	} else if (fl & CH_HANDLES) {
		ch->handles = calloc(n ? n : 1, sizeof(*ch->handles));
		if (!ch->handles)
			return -ENOMEM;
		ch->cap_handles = n;
		for (uint32_t j = 0; j < n; j++)
			ch->handles[j] = keepread_u64(&x->r);
	}
	len = keepread_u32(&x->r);
	if (x->r.bad || len > x->r.n - x->r.at || n > len / 4)
		return -EINVAL; /* every rule takes at least 4 bytes */
	if (!ch->c->builtin) {
		/* Decoded when a sync needs them (nftkeep_chain_rules()). */
		ch->lazy = x->r.p + x->r.at;
		ch->lazy_len = len;
		ch->n_lazy = n;
		x->r.at += len;
		return 0;
	}
	k = rules_get(x->rs, ch, x->r.p + x->r.at, len, n);
	if (k < 0)
		return k;
	x->r.at += len;
	return 0;
}

static int table_get(struct rd *x, struct nftread_table *tb, enum rs_table t)
{
	uint8_t exists = keepread_u8(&x->r);
	uint32_t n = keepread_u32(&x->r);
	int k;

	if (exists > 1 || n > MAX_CHAINS || x->r.bad)
		return -EINVAL;
	tb->exists = exists;
	if (n > (x->r.n - x->r.at) / 8)
		return -EINVAL; /* a chain takes at least 8 bytes */
	if (n && (GROW(tb->chains, tb->cap, n) < 0 || ruleset_reserve(x->rs, t, n, false) < 0))
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		if ((k = chain_get(x, tb, t)) < 0)
			return k;
	k = strs_get(x, &tb->refs, &tb->n_refs, &tb->cap_refs);
	if (k >= 0)
		k = strs_get(x, &tb->others, &tb->n_others, &tb->cap_others);
	return k;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct nftread_state *, nftread_state_free)

int nftkeep_decode(void *buf, size_t off, size_t len, struct nftread_state **ret)
{
	_cleanup_(nftread_state_freep) struct nftread_state *st = nftread_state_new();
	struct rd x = { .r = { .p = (const uint8_t *)buf + off, .n = len } };
	int k;

	if (!st) {
		free(buf);
		return -ENOMEM;
	}
	st->keep_buf = buf;
	st->keep_len = off + len;
	for (int f = 0; f < 2; f++) {
		struct nftread_family *fam = &st->f[f];
		uint8_t read = keepread_u8(&x.r);

		if (read > 1 || x.r.bad)
			return -EINVAL;
		if (!read)
			continue;
		fam->rs = ruleset_new();
		if (!fam->rs)
			return -ENOMEM;
		x.rs = fam->rs;
		for (int t = 0; t < RS_NTABLES; t++)
			if ((k = table_get(&x, &fam->t[t], (enum rs_table)t)) < 0)
				return k;
		fam->read = true;
	}
	if (x.r.bad || x.r.at != x.r.n)
		return -EINVAL;
	*ret = TAKE_PTR(st);
	return 0;
}

int nftkeep_chain_same(const struct nftread_chain *ch, const struct rs_chain *pc,
		       struct keepbuf *scratch)
{
	if (!ch->lazy || pc->n_rules != ch->n_lazy)
		return 0;
	scratch->n = 0;
	scratch->err = 0;
	for (size_t j = 0; j < pc->n_rules && !scratch->err; j++)
		if (rule_put(scratch, &pc->rules[j]) < 0)
			return 0; /* nothing kept can be it */
	if (scratch->err)
		return scratch->err == -ENOMEM ? -ENOMEM : 0;
	return scratch->n == ch->lazy_len &&
	       (!ch->lazy_len || memcmp(scratch->p, ch->lazy, ch->lazy_len) == 0);
}

int nftkeep_chain_rules(struct nftread_state *st, enum writer_family f, struct nftread_chain *ch)
{
	int k;

	if (!ch->lazy)
		return 0;
	if (ch->handles_lazy) {
		struct keepread r = { .p = lazy_handles(ch), .n = 8 * (size_t)ch->n_lazy };

		if (GROW(ch->handles, ch->cap_handles, ch->n_lazy) < 0)
			return -ENOMEM;
		for (uint32_t j = 0; j < ch->n_lazy; j++)
			ch->handles[j] = keepread_u64(&r);
	}
	k = rules_get(st->f[f].rs, ch, ch->lazy, ch->lazy_len, ch->n_lazy);
	if (k < 0)
		return k;
	ch->handles_lazy = false;
	nftread_chain_unlazy(ch);
	st->unpacked = true;
	return 0;
}

/* pc's rules as bytes of ch's own (its decoded rules dropped). */
static int chain_pack_from(struct nftread_chain *ch, const struct rs_chain *pc,
			   struct keepbuf *scratch)
{
	uint8_t *own;
	int k;

	scratch->n = 0;
	scratch->err = 0;
	for (size_t j = 0; j < pc->n_rules && !scratch->err; j++)
		if ((k = rule_put(scratch, &pc->rules[j])) < 0)
			return k;
	if (scratch->err)
		return scratch->err == -ENOMEM ? -ENOMEM : -ENOTSUP;
	if (pc->n_rules > MAX_RULES || !scratch->n)
		return -ENOTSUP;
	own = malloc(scratch->n);
	if (!own)
		return -ENOMEM;
	memcpy(own, scratch->p, scratch->n);
	nftread_chain_unlazy(ch);
	ch->lazy_own = own;
	ch->lazy = own;
	ch->lazy_len = scratch->n;
	ch->n_lazy = (uint32_t)pc->n_rules;
	/* The rules live on as the bytes: the array goes (its strings stay in
	 * the family's arena until the state is read again). */
	ch->c->n_rules = 0;
	free(ch->c->rules);
	ch->c->rules = NULL;
	ch->c->cap_rules = 0;
	return 0;
}

int nftkeep_chain_pack(struct nftread_chain *ch, struct keepbuf *scratch)
{
	if (ch->lazy || ch->c->builtin || !ch->c->n_rules)
		return 0;
	return chain_pack_from(ch, ch->c, scratch);
}

int nftkeep_chain_take(struct nftread_chain *ch, const struct rs_chain *pc, struct keepbuf *scratch)
{
	if (ch->c->builtin || !pc->n_rules)
		return -ENOTSUP;
	return chain_pack_from(ch, pc, scratch);
}

void nftkeep_pack(struct nftread_state *st)
{
	struct keepbuf scratch = { 0 };

	if (!st->unpacked)
		return;
	st->unpacked = false;
	for (int f = 0; f < 2; f++)
		for (int t = 0; st->f[f].read && t < RS_NTABLES; t++)
			for (size_t i = 0; i < st->f[f].t[t].n; i++)
				(void)nftkeep_chain_pack(&st->f[f].t[t].chains[i], &scratch);
	keepbuf_done(&scratch);
	/* The decoded rules' strings are garbage now: kept state that only
	 * grew would keep every chain ever reloaded. */
	(void)nftread_compact(st);
}

int nftkeep_materialize(struct nftread_state *st)
{
	for (int f = 0; f < 2; f++)
		for (int t = 0; st->f[f].read && t < RS_NTABLES; t++)
			for (size_t i = 0; i < st->f[f].t[t].n; i++) {
				int k = nftkeep_chain_rules(st, (enum writer_family)f,
							    &st->f[f].t[t].chains[i]);

				if (k < 0)
					return k;
			}
	return 0;
}
