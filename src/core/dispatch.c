/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The dispatch tree (dispatch.h).  Keys are bit strings: an address's 32 or
 * 128 bits, or a port's 16 bits within one protocol.  Entries are sorted by
 * key, so each range of the tree is a run of the array.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dispatch.h"
#include "util.h"

#define STRIDE 4 /* bits per level: fan-out 16 */

int dispatch_mode_parse(const char *s, enum dispatch_mode *ret)
{
	if (streq(s, "auto"))
		*ret = DISPATCH_AUTO;
	else if (streq(s, "linear"))
		*ret = DISPATCH_LINEAR;
	else if (streq(s, "tree"))
		*ret = DISPATCH_TREE;
	else
		return -EINVAL;
	return 0;
}

const char *dispatch_mode_name(enum dispatch_mode m)
{
	switch (m) {
	case DISPATCH_AUTO:
		return "auto";
	case DISPATCH_LINEAR:
		return "linear";
	case DISPATCH_TREE:
		return "tree";
	}
	return "unknown";
}

enum key_kind {
	KEY_NONE,
	KEY_ADDR,
	KEY_PORT,
};

struct entry {
	uint8_t bits[16]; /* the address, or the port in network order */
	uint8_t proto;
	uint16_t port;
	size_t idx;       /* position in the original chain */
};

struct tree {
	struct ruleset *rs;       /* the dispatched chain's, and the strings' */
	struct ruleset *crs;      /* where tree chains are created */
	struct chain_hasher *h;
	enum rs_table table;
	const char *chain;        /* the dispatched chain's name */
	const struct rs_rule *rules; /* the original rules */
	size_t leaf_max;
	enum key_kind kind;
	uint8_t family;           /* KEY_ADDR */
	uint8_t proto;            /* KEY_PORT: the protocol of this subtree */
	unsigned maxbits;
	struct dispatch_stats *stats;
	size_t *scratch;          /* leaf rule indices, leaf_max or more */
	size_t cap_scratch;
	/* Reuse of an unchanged subtree (dispatch_reuse): the keys that
	 * changed, sorted as the entries. */
	struct dispatch_reuse *reuse;
	struct entry *ch_addr, *ch_port;
	size_t n_ch_addr, n_ch_port;
};

static const struct rs_match *port_match(const struct rs_rule *r)
{
	const struct rs_match *found = NULL;

	for (size_t i = 0; i < r->n_matches; i++) {
		if (r->m[i].kind != RS_M_PORT)
			continue;
		if (found)
			return NULL;
		found = &r->m[i];
	}
	if (!found || found->invert || !found->u.port.dport || found->u.port.dport_max)
		return NULL;
	return found;
}

static enum key_kind rule_key(const struct rs_rule *r, struct entry *e)
{
	const struct rs_match *pm;

	if (r->src_inv || (r->proto != IPPROTO_TCP && r->proto != IPPROTO_UDP &&
			   r->proto != IPPROTO_SCTP))
		return KEY_NONE;
	pm = port_match(r);
	if (!pm)
		return KEY_NONE;
	memset(e, 0, sizeof(*e));
	e->proto = r->proto;
	e->port = pm->u.port.dport;
	if (!r->dst.addr.family) {
		if (r->dst_inv)
			return KEY_NONE;
		e->bits[0] = (uint8_t)(e->port >> 8);
		e->bits[1] = (uint8_t)e->port;
		return KEY_PORT;
	}
	/* A wider prefix only narrows a port rule (kube-proxy's counted
	 * 127.0.0.0/8 node-port rule): keyed by its port, in chain order. */
	if (!r->dst_inv && r->dst.plen < (r->dst.addr.family == AF_INET ? 32 : 128)) {
		e->bits[0] = (uint8_t)(e->port >> 8);
		e->bits[1] = (uint8_t)e->port;
		return KEY_PORT;
	}
	if (r->dst_inv)
		return KEY_NONE;
	memcpy(e->bits, r->dst.addr.u.b, r->dst.addr.family == AF_INET ? 4 : 16);
	return KEY_ADDR;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	int c = (int)x->proto - (int)y->proto;

	if (c)
		return c;
	c = memcmp(x->bits, y->bits, sizeof(x->bits));
	if (c)
		return c;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int idx_cmp(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return x < y ? -1 : x > y;
}

/* The STRIDE bits of e's key at bit offset `at` (a multiple of STRIDE). */
static unsigned nibble(const struct entry *e, unsigned at)
{
	uint8_t byte = e->bits[at / 8];

	return at % 8 ? byte & 0x0f : byte >> 4;
}

/* "<range>" of the run starting at e, prefix length plen. */
static void range_text(const struct tree *t, const struct entry *e, unsigned plen, char *out,
		       size_t len, uint16_t *ret_lo, uint16_t *ret_hi, struct ipnet *ret_net)
{
	if (t->kind == KEY_ADDR) {
		struct ipnet n = { .addr = { .family = t->family }, .plen = (uint8_t)plen };
		char buf[INET6_ADDRSTRLEN];
		unsigned bytes = t->family == AF_INET ? 4 : 16;

		for (unsigned i = 0; i < bytes; i++) {
			unsigned keep = plen >= 8 * (i + 1) ? 8 : plen > 8 * i ? plen - 8 * i : 0;

			n.addr.u.b[i] = (uint8_t)(e->bits[i] & (0xff00u >> keep));
		}
		snprintf(out, len, "%s/%u", ipaddr_fmt(&n.addr, buf, sizeof(buf)), plen);
		*ret_net = n;
	} else {
		unsigned span = 1u << (16 - plen);
		unsigned lo = e->port & ~(span - 1), hi = lo + span - 1;

		/* port 0 is never a service port; "--dport 0:N" is no range
		 * svcnat writes */
		if (!lo)
			lo = 1;
		snprintf(out, len, "%s:%u-%u", proto_name(t->proto), lo, hi);
		*ret_lo = (uint16_t)lo;
		*ret_hi = (uint16_t)hi;
	}
}

/* A jump from `from` to `to` matching the range (net, or lo..hi). */
static int add_jump(struct tree *t, struct rs_chain *from, const struct rs_chain *to,
		    const char *range, uint16_t lo, uint16_t hi, const struct ipnet *net)
{
	struct rs_rule *r = rs_chain_append(from);
	struct rs_match *m;
	const char *cm;

	if (!r)
		return -ENOMEM;
	cm = ruleset_printf(t->rs, "%s %s", t->chain, range);
	if (!cm)
		return -ENOMEM;
	if (t->kind == KEY_ADDR)
		r->dst = *net;
	else
		r->proto = t->proto;
	m = rs_rule_add_match(r, RS_M_COMMENT);
	m->u.comment = cm;
	if (t->kind == KEY_PORT) {
		m = rs_rule_add_match(r, RS_M_PORT);
		m->u.port.dport = lo;
		m->u.port.dport_max = hi > lo ? hi : 0;
	}
	r->t.kind = RS_T_JUMP;
	r->t.u.chain = to->name;
	return 0;
}

/* The tree chain name of a range; false on ENOMEM. */
static bool tree_name(struct tree *t, const char *range, char name[RS_CHAIN_MAXLEN + 1])
{
	char text[128];

	snprintf(text, sizeof(text), "%s/%s/%s", rs_table_name(t->table), t->chain, range);
	memcpy(name, DISPATCH_PREFIX, sizeof(DISPATCH_PREFIX) - 1);
	chain_hasher_hash(t->h, text, "", NULL, name + sizeof(DISPATCH_PREFIX) - 1);
	return name[sizeof(DISPATCH_PREFIX) - 1] != '\0';
}

static struct rs_chain *tree_chain(struct tree *t, const char *name)
{
	struct rs_chain *c = ruleset_add_chain(t->crs, t->table, name);

	if (c && t->stats)
		t->stats->chains++;
	return c;
}

static int build_node(struct tree *t, struct rs_chain *parent, const struct entry *e, size_t n,
		      unsigned plen);

/* Whether a changed key lies in the range of length plen holding e. */
static bool range_changed(const struct tree *t, const struct entry *e, unsigned plen)
{
	const struct entry *v = t->kind == KEY_ADDR ? t->ch_addr : t->ch_port;
	size_t n = t->kind == KEY_ADDR ? t->n_ch_addr : t->n_ch_port, lo = 0, hi = n;
	struct entry key = { .proto = t->kind == KEY_ADDR ? 0 : t->proto };

	for (unsigned b = 0; b < plen; b += 8) {
		unsigned keep = plen - b >= 8 ? 8 : plen - b;

		key.bits[b / 8] = (uint8_t)(e->bits[b / 8] & (0xff00u >> keep));
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (entry_cmp(&v[mid], &key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == n || v[lo].proto != key.proto)
		return false;
	for (unsigned b = 0; b < plen; b += 8) {
		unsigned keep = plen - b >= 8 ? 8 : plen - b;
		uint8_t mask = (uint8_t)(0xff00u >> keep);

		if ((v[lo].bits[b / 8] & mask) != key.bits[b / 8])
			return false;
	}
	return true;
}

/* Tree chains in the subtree of c (c included). */
static size_t subtree_chains(const struct ruleset *rs, const struct rs_chain *c)
{
	size_t n = 1;

	for (size_t i = 0; i < c->n_rules; i++) {
		const struct rs_rule *r = &c->rules[i];
		const struct rs_chain *to;

		if (r->t.kind == RS_T_JUMP &&
		    !strncmp(r->t.u.chain, DISPATCH_PREFIX, sizeof(DISPATCH_PREFIX) - 1) &&
		    (to = ruleset_find_chain(rs, (enum rs_table)c->table, r->t.u.chain)))
			n += subtree_chains(rs, to);
	}
	return n;
}

/* Jumps from `c` to the sub-ranges of the run e[0..n) at plen + STRIDE. */
static int build_children(struct tree *t, struct rs_chain *c, const struct entry *e, size_t n,
			  unsigned plen)
{
	size_t i = 0;

	while (i < n) {
		unsigned nb = nibble(&e[i], plen);
		size_t j = i + 1;
		int r;

		while (j < n && nibble(&e[j], plen) == nb)
			j++;
		r = build_node(t, c, &e[i], j - i, plen + STRIDE);
		if (r < 0)
			return r;
		i = j;
	}
	return 0;
}

/* The node for the run e[0..n), all within one range of length plen:
 * a leaf, a split chain, or (one non-empty sub-range) its sub-range. */
static int build_node(struct tree *t, struct rs_chain *parent, const struct entry *e, size_t n,
		      unsigned plen)
{
	char range[96], name[RS_CHAIN_MAXLEN + 1];
	uint16_t lo = 0, hi = 0;
	struct ipnet net;
	struct rs_chain *c;
	int r;

	if (n > t->leaf_max && plen < t->maxbits &&
	    nibble(&e[0], plen) == nibble(&e[n - 1], plen))
		return build_node(t, parent, e, n, plen + STRIDE);

	range_text(t, e, plen, range, sizeof(range), &lo, &hi, &net);
	if (!tree_name(t, range, name))
		return -ENOMEM;
	/* No key in the range changed: the old subtree is this one. */
	if (t->reuse && !range_changed(t, e, plen)) {
		struct rs_chain *o = ruleset_find_chain(t->reuse->old, t->table, name);

		if (o) {
			struct dispatch_reuse *u = t->reuse;

			if ((r = GROW(u->kept, u->cap_kept, u->n_kept + 1)) < 0)
				return r;
			u->kept[u->n_kept++] = o;
			if (t->stats)
				t->stats->chains += subtree_chains(t->reuse->old, o);
			return add_jump(t, parent, o, range, lo, hi, &net);
		}
	}
	c = tree_chain(t, name);
	if (!c)
		return -errno;
	r = add_jump(t, parent, c, range, lo, hi, &net);
	if (r < 0)
		return r;
	if (n > t->leaf_max && plen < t->maxbits)
		return build_children(t, c, e, n, plen);

	/* A leaf: its rules in chain order. */
	r = GROW(t->scratch, t->cap_scratch, n);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		t->scratch[i] = e[i].idx;
	qsort_safe(t->scratch, n, sizeof(*t->scratch), idx_cmp);
	r = GROW(c->rules, c->cap_rules, n);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		c->rules[c->n_rules++] = t->rules[t->scratch[i]];
	return 0;
}

int dispatch_chain(struct ruleset *rs, struct chain_hasher *h, enum rs_table table,
		   const char *name, const struct dispatch_params *p, struct dispatch_stats *stats)
{
	return dispatch_chain_into(rs, rs, h, table, name, p, stats, NULL);
}

static size_t pn_bit(uint8_t proto, uint16_t port)
{
	return (size_t)(proto == IPPROTO_TCP ? 0 : proto == IPPROTO_UDP ? 1 : 2) * 65536 + port;
}

static int add_key(struct entry **v, size_t *n, size_t *cap, const struct entry *e)
{
	if (GROW(*v, *cap, *n + 1) < 0)
		return -ENOMEM;
	(*v)[(*n)++] = *e;
	return 0;
}

/* An entry's address key (proto 0) and port key, for the changed lists. */
static void split_key(const struct rs_rule *r, const struct entry *e, struct entry *a,
		      struct entry *pk)
{
	*a = (struct entry){ 0 };
	memcpy(a->bits, r->dst.addr.u.b, r->dst.addr.family == AF_INET ? 4 : 16);
	*pk = (struct entry){ .proto = e->proto };
	pk->bits[0] = (uint8_t)(e->port >> 8);
	pk->bits[1] = (uint8_t)e->port;
}

static void bit_set(uint8_t *bits, size_t bit)
{
	bits[bit / 8] |= (uint8_t)(1u << (bit % 8));
}

static bool bit_test(const uint8_t *bits, size_t bit)
{
	return bits[bit / 8] & (1u << (bit % 8));
}

/* The tree's own allocations (not its rules, which the chain owns). */
static void tree_done(struct tree *t)
{
	free(t->scratch);
	free(t->ch_addr);
	free(t->ch_port);
}

/* The length of c's leading run of keyed rules, one address family
 * (*ret_family, 0 when it holds port rules alone). */
static size_t keyed_run(const struct rs_chain *c, uint8_t *ret_family)
{
	uint8_t family = 0;
	size_t n = 0;

	for (; n < c->n_rules; n++) {
		struct entry e;
		enum key_kind k = rule_key(&c->rules[n], &e);

		if (k == KEY_NONE)
			break;
		if (k == KEY_ADDR) {
			if (family && family != c->rules[n].dst.addr.family)
				break;
			family = c->rules[n].dst.addr.family;
		}
	}
	*ret_family = family;
	return n;
}

/* Capacities of a tree's changed-key lists. */
struct changed_caps {
	size_t addr, port;
};

/* Entry e of rule r as a changed key: by its address and by its port. */
static int add_changed(struct tree *t, struct changed_caps *caps, const struct rs_rule *r,
		       const struct entry *e, bool by_addr)
{
	struct entry a, pk;
	int ret;

	split_key(r, e, &a, &pk);
	if (by_addr) {
		ret = add_key(&t->ch_addr, &t->n_ch_addr, &caps->addr, &a);
		if (ret < 0)
			return ret;
	}
	return add_key(&t->ch_port, &t->n_ch_port, &caps->port, &pk);
}

/*
 * The changed keys: of the changed rules (an address rule also by its port
 * key: it may sit in the port subtree), and, for each port rule that
 * changed, its (protocol, port) bit in ch_pn: every address rule of it is
 * changed too (sort_entries() adds them), as that rule decides their
 * subtree.  Unkeyed or other-family changes could move the end of the
 * keyed run: no reuse then (t->reuse NULL).
 */
static int changed_keys(struct tree *t, struct changed_caps *caps, uint8_t family, uint8_t *ch_pn)
{
	for (size_t i = 0; i < t->reuse->n_changed; i++) {
		const struct rs_rule *cr = &t->reuse->changed[i];
		struct entry e;
		enum key_kind k = rule_key(cr, &e);
		int r;

		if (k == KEY_NONE || (k == KEY_ADDR && family && cr->dst.addr.family != family)) {
			t->reuse = NULL;
			return 0;
		}
		if (k == KEY_PORT)
			bit_set(ch_pn, pn_bit(e.proto, e.port));
		r = add_changed(t, caps, cr, &e, k != KEY_PORT);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The keyed run's entries as the address and port subtrees'. */
struct keyed {
	struct entry *addr, *port;
	size_t n_addr, n_port;
};

static void keyed_done(struct keyed *k)
{
	free(k->addr);
	free(k->port);
}

/*
 * The first n rules of c (the keyed run) into kd's address and port
 * entries, each sorted by key, and the changed keys sorted likewise.
 */
static int sort_entries(struct tree *t, struct changed_caps *caps, const struct rs_chain *c,
			size_t n, const uint8_t *ch_pn, struct keyed *kd)
{
	_cleanup_free_ uint8_t *port_seen = NULL; /* bit per (protocol, port) in the port subtree */
	int r;

	kd->addr = calloc(n, sizeof(*kd->addr));
	kd->port = calloc(n, sizeof(*kd->port));
	port_seen = calloc(3, 65536 / 8);
	if (!kd->addr || !kd->port || !port_seen)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct entry e;
		enum key_kind k = rule_key(&c->rules[i], &e);
		size_t bit = pn_bit(e.proto, e.port);

		e.idx = i;
		if (t->reuse && k == KEY_ADDR && bit_test(ch_pn, bit)) {
			r = add_changed(t, caps, &c->rules[i], &e, true);
			if (r < 0)
				return r;
		}
		/* An address rule after a port rule of its (protocol, port)
		 * keeps its place after it: into the port subtree. */
		if (k == KEY_PORT || bit_test(port_seen, bit)) {
			bit_set(port_seen, bit);
			memset(e.bits, 0, sizeof(e.bits));
			e.bits[0] = (uint8_t)(e.port >> 8);
			e.bits[1] = (uint8_t)e.port;
			kd->port[kd->n_port++] = e;
		} else {
			e.proto = 0; /* addresses sort by address alone */
			kd->addr[kd->n_addr++] = e;
		}
	}
	qsort_safe(kd->addr, kd->n_addr, sizeof(*kd->addr), entry_cmp);
	qsort_safe(kd->port, kd->n_port, sizeof(*kd->port), entry_cmp);
	qsort_safe(t->ch_addr, t->n_ch_addr, sizeof(*t->ch_addr), entry_cmp);
	qsort_safe(t->ch_port, t->n_ch_port, sizeof(*t->ch_port), entry_cmp);
	return 0;
}

/* c's new top: the address subtree, then a port subtree per protocol. */
static int build_top(struct tree *t, struct rs_chain *c, const struct keyed *kd, uint8_t family)
{
	int r;

	if (kd->n_addr) {
		t->kind = KEY_ADDR;
		t->family = family;
		t->maxbits = family == AF_INET ? 32 : 128;
		r = build_children(t, c, kd->addr, kd->n_addr, 0);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < kd->n_port;) {
		size_t j = i + 1;

		while (j < kd->n_port && kd->port[j].proto == kd->port[i].proto)
			j++;
		t->kind = KEY_PORT;
		t->proto = kd->port[i].proto;
		t->maxbits = 16;
		r = build_children(t, c, &kd->port[i], j - i, 0);
		if (r < 0)
			return r;
		i = j;
	}
	return 0;
}

int dispatch_chain_into(struct ruleset *rs, struct ruleset *crs, struct chain_hasher *h,
			enum rs_table table, const char *name, const struct dispatch_params *p,
			struct dispatch_stats *stats, struct dispatch_reuse *reuse)
{
	_cleanup_free_ uint8_t *ch_pn = NULL; /* bit per (protocol, port) of a changed port rule */
	_cleanup_(keyed_done) struct keyed kd = { 0 };
	_cleanup_(tree_done) struct tree t = { 0 };
	_cleanup_free_ struct rs_rule *old = NULL;
	struct rs_chain *c = ruleset_find_chain(rs, table, name);
	struct changed_caps caps = { 0 };
	size_t n_keyed, n_old;
	uint8_t family;
	int r;

	if (!p->leaf_max)
		return -EINVAL;
	if (!c || p->mode == DISPATCH_LINEAR)
		return 0;
	n_keyed = keyed_run(c, &family);
	if (!n_keyed || (p->mode == DISPATCH_AUTO && n_keyed < p->threshold))
		return 0;

	t.reuse = reuse;
	if (reuse) {
		ch_pn = calloc(3, 65536 / 8);
		if (!ch_pn)
			return -ENOMEM;
		r = changed_keys(&t, &caps, family, ch_pn);
		if (r < 0)
			return r;
	}
	r = sort_entries(&t, &caps, c, n_keyed, ch_pn, &kd);
	if (r < 0)
		return r;

	/* The chain is rebuilt: the tree's top jumps, then the rest. */
	old = c->rules;
	n_old = c->n_rules;
	c->rules = NULL;
	c->n_rules = c->cap_rules = 0;

	t.rs = rs;
	t.crs = crs;
	t.h = h;
	t.table = table;
	t.chain = c->name;
	t.rules = old;
	t.leaf_max = p->leaf_max;
	t.stats = stats;
	r = build_top(&t, c, &kd, family);
	if (r < 0)
		return r;
	r = GROW(c->rules, c->cap_rules, c->n_rules + (n_old - n_keyed));
	if (r < 0)
		return r;
	for (size_t i = n_keyed; i < n_old; i++)
		c->rules[c->n_rules++] = old[i];
	if (stats)
		stats->trees++;
	return 0;
}
