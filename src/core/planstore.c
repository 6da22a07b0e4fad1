/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The plan store (planstore.h).  It keeps the plan's ruleset and, per
 * service port, a record of what that port contributed: the chains it
 * created and its rules for each shared chain (a "segment", in the order
 * plan_port() wrote them).  A shared chain is the concatenation of its
 * segments in port order (plan_build()'s loop) and, for nat
 * KUBE-SERVICES, the node-port jump; a dispatched one is then made a tree
 * (core/dispatch.h).  An update takes over every record whose service the
 * changes do not affect, plans the others again, rebuilds only the shared
 * chains (and trees) a changed segment belongs to, and stamps only the
 * chains it made, carrying the stamp of the chain of that name it
 * replaced when the rules are equal.  A change of a setting the per-port
 * plan reads (or of the counts that pick the large-cluster or compact
 * layout) plans everything; a new node IP plans again the ports whose
 * KUBE-FW- chain reads it; node addresses otherwise only feed the
 * node-port jump, which is planned every time.
 */
#include "core/planint.h"
#include "core/planstore.h"

enum seg {
	SEG_NAT_SVC,  /* nat KUBE-SERVICES */
	SEG_NAT_NP,   /* nat KUBE-NODEPORTS */
	SEG_F_SVC,    /* filter KUBE-SERVICES */
	SEG_F_EXT,    /* filter KUBE-EXTERNAL-SERVICES */
	SEG_F_NP,     /* filter KUBE-NODEPORTS */
	SEG_F_FW,     /* filter KUBE-PROXY-FIREWALL */
	SEG_N,
};

/* The dispatch list (plan_dispatched[]) index of each segment's chain. */
static const int seg_dispatched[SEG_N] = { 0, 1, 2, 3, 4, -1 };

/* What one service port contributed to the plan. */
struct port_rec {
	char *key;                   /* owned copy; NULL: the port had none */
	uint8_t protocol;
	bool reads_node_ip;          /* has a KUBE-FW- chain (its rules read the node IP) */
	struct rs_chain **chains;    /* its own chains, in the store's ruleset */
	size_t n_chains;
	struct rs_rule *seg[SEG_N];  /* its rules in each shared chain */
	size_t n_seg[SEG_N];
	size_t n_ports, n_seps, no_local_internal, no_local_external;
};

/* The settings and derived flags that every port's plan reads. */
struct fingerprint {
	int family;
	bool dual_stack, masquerade_all, random_fully, conntrack_tcp_liberal;
	bool localhost_nodeports, large_cluster, compact, has_local_cidr, local_iface_prefix;
	unsigned masquerade_bit, nfacct;
	enum dispatch_mode dispatch;
	size_t dispatch_threshold, dispatch_leaf_max;
	struct ipnet local_cidr;
	char local_iface[16];
};

struct plan_store {
	struct ruleset *rs;          /* the current plan, or NULL */
	uint64_t last_stamp;         /* the last stamp given */
	struct port_rec *recs;       /* in the plan's port order */
	size_t n_recs;
	struct plan_shared sh;       /* the shared chains in rs */
	struct fingerprint fp;
	char *zone;                  /* the fingerprint's zone (owned) */
	char *hostname;              /* and node name, which node hints read (owned) */
	struct ipaddr node_ip;       /* family 0: none */
	struct rs_rule *tail;        /* nat KUBE-SERVICES' node-port jump */
	size_t n_tail;
	struct dispatch_stats dst[PLAN_N_DISPATCHED];
	size_t arena_after_full;     /* arena bytes after the last full plan */
	size_t n_rules[RS_NTABLES];  /* rules in rs, kept as it changes */
	struct chain_hasher *hasher; /* for plans without settings.hasher */
};

/* One update's state. */
struct run {
	struct plan_store *st;
	struct plan_ctx c;
	struct ruleset *grave;       /* the chains replaced (or the old plan) */
	bool full;
	bool dirty[SEG_N];
	/* Both versions of each shared chain's changed rules (for the tree). */
	struct {
		struct rs_rule *v;
		size_t n, cap;
	} chg[SEG_N];
	struct plan_made made;       /* chains to stamp */
	size_t changed, matched;
};

struct plan_store *plan_store_new(void)
{
	return calloc(1, sizeof(struct plan_store));
}

static void rec_done(struct port_rec *r)
{
	free(r->key);
	free(r->chains);
	for (size_t k = 0; k < SEG_N; k++)
		free(r->seg[k]);
	memset(r, 0, sizeof(*r));
}

static void store_clear(struct plan_store *st)
{
	for (size_t i = 0; i < st->n_recs; i++)
		rec_done(&st->recs[i]);
	free(st->recs);
	st->recs = NULL;
	st->n_recs = 0;
	ruleset_free(st->rs);
	st->rs = NULL;
	free(st->tail);
	st->tail = NULL;
	st->n_tail = 0;
	free(st->zone);
	st->zone = NULL;
	free(st->hostname);
	st->hostname = NULL;
}

void plan_store_free(struct plan_store *st)
{
	if (!st)
		return;
	store_clear(st);
	chain_hasher_free(st->hasher);
	free(st);
}

const struct ruleset *plan_store_ruleset(const struct plan_store *st)
{
	return st ? st->rs : NULL;
}

static void fingerprint_of(const struct plan_ctx *c, struct fingerprint *fp)
{
	const struct plan_settings *s = c->s;

	memset(fp, 0, sizeof(*fp));
	fp->family = s->family;
	fp->dual_stack = s->dual_stack;
	fp->masquerade_all = s->masquerade_all;
	fp->random_fully = s->random_fully;
	fp->conntrack_tcp_liberal = s->conntrack_tcp_liberal;
	fp->localhost_nodeports = c->localhost_nodeports;
	fp->large_cluster = c->large_cluster;
	fp->compact = c->compact;
	fp->masquerade_bit = s->masquerade_bit;
	fp->nfacct = s->nfacct;
	fp->dispatch = s->dispatch;
	fp->dispatch_threshold = s->dispatch_threshold;
	fp->dispatch_leaf_max = s->dispatch_leaf_max;
	if (c->local_cidr) {
		fp->has_local_cidr = true;
		fp->local_cidr = *c->local_cidr;
	}
	if (c->local_iface) {
		snprintf(fp->local_iface, sizeof(fp->local_iface), "%s", c->local_iface);
		fp->local_iface_prefix = c->local_iface_prefix;
	}
}

static bool fingerprint_equal(const struct fingerprint *a, const struct fingerprint *b)
{
	return a->family == b->family && a->dual_stack == b->dual_stack &&
	       a->masquerade_all == b->masquerade_all && a->random_fully == b->random_fully &&
	       a->conntrack_tcp_liberal == b->conntrack_tcp_liberal &&
	       a->localhost_nodeports == b->localhost_nodeports &&
	       a->large_cluster == b->large_cluster && a->compact == b->compact &&
	       a->masquerade_bit == b->masquerade_bit && a->nfacct == b->nfacct &&
	       a->dispatch == b->dispatch &&
	       a->dispatch_threshold == b->dispatch_threshold &&
	       a->dispatch_leaf_max == b->dispatch_leaf_max &&
	       a->has_local_cidr == b->has_local_cidr &&
	       (!a->has_local_cidr || (a->local_cidr.plen == b->local_cidr.plen &&
				       ipaddr_cmp(&a->local_cidr.addr, &b->local_cidr.addr) == 0)) &&
	       a->local_iface_prefix == b->local_iface_prefix &&
	       streq(a->local_iface, b->local_iface);
}

static bool rules_equal(const struct rs_rule *a, size_t na, const struct rs_rule *b, size_t nb)
{
	if (na != nb)
		return false;
	for (size_t i = 0; i < na; i++)
		if (!rs_rule_equal(&a[i], &b[i]))
			return false;
	return true;
}

/* The stamp of a chain made in this run: its predecessor's (in the grave)
 * when equal, else a new one. */
static void stamp(struct run *u, struct rs_chain *c)
{
	const struct rs_chain *o = ruleset_find_chain(u->grave, (enum rs_table)c->table, c->name);

	if (o && o->stamp && rs_chain_equal(o, c)) {
		c->stamp = o->stamp;
		u->matched++;
	} else {
		c->stamp = ++u->st->last_stamp;
		u->changed++;
	}
}

static int made_add(struct plan_made *m, struct rs_chain *c)
{
	if (GROW(m->v, m->cap, m->n + 1) < 0)
		return -ENOMEM;
	m->v[m->n++] = c;
	return 0;
}

/* Note rules[0..n) as changed in shared chain k (a failure only costs the
 * tree's reuse: see shared_rebuild()). */
static int note_changed(struct run *u, enum seg k, const struct rs_rule *rules, size_t n)
{
	if (!n || u->full)
		return 0;
	if (GROW(u->chg[k].v, u->chg[k].cap, u->chg[k].n + n) < 0)
		return -ENOMEM;
	memcpy(u->chg[k].v + u->chg[k].n, rules, n * sizeof(*rules));
	u->chg[k].n += n;
	return 0;
}

/* A key order that tolerates ports without a key (always planned anew). */
static int rec_cmp(const struct port_rec *r, const struct svc_port *sp)
{
	int x = strcmp(r->key ? r->key : "", sp->key ? sp->key : "");

	if (!x)
		x = r->protocol < sp->protocol ? -1 : r->protocol > sp->protocol;
	return x;
}

/* A port's record goes: its chains to the grave, its segments' chains
 * are to be rebuilt. */
static int rec_retire(struct run *u, struct port_rec *r)
{
	for (size_t k = 0; k < SEG_N; k++) {
		int e = note_changed(u, (enum seg)k, r->seg[k], r->n_seg[k]);

		if (e < 0)
			return e;
		if (r->n_seg[k])
			u->dirty[k] = true;
	}
	for (size_t i = 0; !u->full && i < r->n_chains; i++) {
		int e = ruleset_move_chain(u->grave, u->st->rs, r->chains[i]);

		if (e >= 0)
			u->st->n_rules[r->chains[i]->table] -= r->chains[i]->n_rules;

		if (e < 0)
			return e;
	}
	rec_done(r);
	return 0;
}

/* Shrink a detached chain's rules to a segment of their own. */
static int take_segment(struct rs_chain *seg, struct rs_rule **ret, size_t *ret_n)
{
	*ret = NULL;
	*ret_n = seg->n_rules;
	if (!seg->n_rules) {
		free(seg->rules);
		return 0;
	}
	*ret = reallocarray_z(seg->rules, seg->n_rules, sizeof(*seg->rules));
	if (!*ret) {
		free(seg->rules);
		return -ENOMEM;
	}
	return 0;
}

/* Exchange two chains' rules (the one in scratch is freed with it). */
static void swap_rules(struct plan_store *st, struct rs_chain *a, struct rs_chain *b)
{
	struct rs_rule *r = a->rules;
	size_t n = a->n_rules, cap = a->cap_rules;

	st->n_rules[a->table] += b->n_rules;
	st->n_rules[a->table] -= n;
	a->rules = b->rules;
	a->n_rules = b->n_rules;
	a->cap_rules = b->cap_rules;
	b->rules = r;
	b->n_rules = n;
	b->cap_rules = cap;
}

/* A rule's chain-name strings (jump target, recent list) that point into a
 * chain still in scratch now point at the kept chain of that name. */
static void repoint(struct ruleset *rs, struct ruleset *scratch, enum rs_table t, bool tree,
		    struct rs_rule *rules, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct rs_rule *r = &rules[i];
		const char **ps[RS_MAX_MATCHES + 1];
		size_t k = 0;

		if (r->t.kind == RS_T_JUMP || r->t.kind == RS_T_GOTO)
			ps[k++] = &r->t.u.chain;
		for (size_t j = 0; j < r->n_matches; j++)
			if (r->m[j].kind == RS_M_RECENT && r->m[j].u.recent.name)
				ps[k++] = &r->m[j].u.recent.name;
		for (size_t j = 0; j < k; j++) {
			const struct rs_chain *sc;

			/* a tree's scratch holds only tree chains */
			if (tree && strncmp(*ps[j], DISPATCH_PREFIX, sizeof(DISPATCH_PREFIX) - 1))
				continue;
			sc = ruleset_find_chain(scratch, t, *ps[j]);

			if (sc && sc->name == *ps[j])
				*ps[j] = ruleset_find_chain(rs, t, *ps[j])->name;
		}
	}
}

/*
 * Old chains (of table t) whose names scratch does not mark adopted
 * (stamp UINT64_MAX) leave the plan for the grave, with their rule counts.
 */
static int bury_unadopted(struct run *u, const struct ruleset *scratch, enum rs_table t,
			  struct rs_chain *const *old, size_t n)
{
	int e;

	for (size_t i = 0; i < n; i++) {
		struct rs_chain *co = old[i];
		const struct rs_chain *sc = ruleset_find_chain(scratch, t, co->name);

		if (sc && sc->stamp == UINT64_MAX)
			continue;
		if ((e = ruleset_move_chain(u->grave, u->st->rs, co)) < 0)
			return e;
		u->st->n_rules[co->table] -= co->n_rules;
	}
	return 0;
}

/*
 * The chains of a port planned again (in scratch) against those of its old
 * record: a chain of a name the old record had keeps its object (rules
 * and stamp too when equal; else it takes the new rules and a new stamp),
 * so whatever points at it stays valid; a new name joins the plan; the old
 * record's other chains go to the grave.  Every chain's pointer ends up in
 * r->chains.
 */
static int rec_adopt(struct run *u, struct port_rec *r, struct ruleset *scratch,
		     struct port_rec *old)
{
	struct ruleset *rs = u->st->rs;
	int e;

	/* New names move into the plan (their objects are kept). */
	for (size_t i = 0; i < r->n_chains; i++) {
		struct rs_chain *cn = r->chains[i];

		if (ruleset_find_chain(rs, RS_NAT, cn->name))
			continue;
		if ((e = ruleset_move_chain(rs, scratch, cn)) < 0 || (e = made_add(&u->made, cn)) < 0)
			return e;
		u->st->n_rules[RS_NAT] += cn->n_rules;
	}
	for (size_t i = 0; i < r->n_chains; i++)
		repoint(rs, scratch, RS_NAT, false, r->chains[i]->rules, r->chains[i]->n_rules);
	for (size_t k = 0; k < SEG_N; k++)
		repoint(rs, scratch, RS_NAT, false, r->seg[k], r->n_seg[k]);
	for (size_t i = 0; i < r->n_chains; i++) {
		struct rs_chain *cn = r->chains[i], *co;

		if (ruleset_find_chain(scratch, RS_NAT, cn->name) != cn)
			continue;
		co = ruleset_find_chain(rs, RS_NAT, cn->name);
		if (!co->stamp || !rules_equal(co->rules, co->n_rules, cn->rules, cn->n_rules)) {
			swap_rules(u->st, co, cn);
			co->stamp = ++u->st->last_stamp;
			u->changed++;
		}
		r->chains[i] = co;
		cn->stamp = UINT64_MAX; /* adopted: see below */
	}
	/* The old record's chains not adopted leave the plan. */
	return old ? bury_unadopted(u, scratch, RS_NAT, old->chains, old->n_chains) : 0;
}

/* Plan one service port into a new record; old: its previous record (or
 * NULL), whose chains it takes over or retires, and which it frees. */
static int rec_plan(struct run *u, struct port_rec *r, const struct svc_port *sp,
		    struct port_rec *old)
{
	struct plan_ctx *c = &u->c;
	const struct plan_shared real = c->sh;
	struct rs_chain seg[SEG_N];
	struct plan_made made = { 0 };
	struct ruleset *scratch = NULL;
	size_t n_ports = c->n_ports, n_seps = c->n_seps;
	size_t no_int = c->no_local_internal, no_ext = c->no_local_external;
	int e;

	memset(r, 0, sizeof(*r));
	memset(seg, 0, sizeof(seg));
	r->protocol = sp->protocol;
	if (sp->key && !(r->key = strdup(sp->key)))
		return -ENOMEM;
	/* Incremental: the port's chains are made apart, then matched with
	 * the old ones of the same names. */
	if (!u->full && !(scratch = ruleset_new()))
		return -ENOMEM;
	c->sh.nat_services = &seg[SEG_NAT_SVC];
	c->sh.nat_nodeports = &seg[SEG_NAT_NP];
	c->sh.f_services = &seg[SEG_F_SVC];
	c->sh.f_ext_services = &seg[SEG_F_EXT];
	c->sh.f_nodeports = &seg[SEG_F_NP];
	c->sh.f_proxy_fw = &seg[SEG_F_FW];
	c->made = &made;
	c->crs = scratch;
	e = plan_port(c, sp);
	c->sh = real;
	c->made = NULL;
	c->crs = NULL;
	r->chains = made.v;
	r->n_chains = made.n;
	for (size_t k = 0; k < SEG_N; k++) {
		int e2 = take_segment(&seg[k], &r->seg[k], &r->n_seg[k]);

		if (e >= 0)
			e = e2;
	}
	if (e < 0)
		goto out;
	r->n_ports = c->n_ports - n_ports;
	r->n_seps = c->n_seps - n_seps;
	r->no_local_internal = c->no_local_internal - no_int;
	r->no_local_external = c->no_local_external - no_ext;
	for (size_t i = 0; i < r->n_chains; i++) {
		struct rs_chain *ch = r->chains[i];

		if (!strncmp(ch->name, "KUBE-FW-", 8))
			r->reads_node_ip = true;
		if (c->s->family == AF_INET6)
			plan_mark_ipv6(ch->rules, ch->n_rules);
	}
	for (size_t k = 0; k < SEG_N; k++)
		if (r->n_seg[k] && c->s->family == AF_INET6)
			plan_mark_ipv6(r->seg[k], r->n_seg[k]);
	if (scratch && (e = rec_adopt(u, r, scratch, old)) < 0)
		goto out;
	/* A shared chain is rebuilt only when the port's part of it changed. */
	for (size_t k = 0; k < SEG_N && e >= 0; k++) {
		if (old ? rules_equal(r->seg[k], r->n_seg[k], old->seg[k], old->n_seg[k])
			: !r->n_seg[k])
			continue;
		u->dirty[k] = true;
		if ((e = note_changed(u, (enum seg)k, r->seg[k], r->n_seg[k])) >= 0 && old)
			e = note_changed(u, (enum seg)k, old->seg[k], old->n_seg[k]);
	}
out:
	ruleset_free(scratch);
	if (old)
		rec_done(old);
	return e;
}

static struct rs_chain *seg_chain(const struct plan_shared *sh, enum seg k)
{
	switch (k) {
	case SEG_NAT_SVC:
		return sh->nat_services;
	case SEG_NAT_NP:
		return sh->nat_nodeports;
	case SEG_F_SVC:
		return sh->f_services;
	case SEG_F_EXT:
		return sh->f_ext_services;
	case SEG_F_NP:
		return sh->f_nodeports;
	default:
		return sh->f_proxy_fw;
	}
}

static int ptr_cmp(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;

	return x < y ? -1 : x > y;
}

/* The tree chains (KUBE-DSP- jump targets, recursively) under rules[0..n)
 * of table t in rs, appended to m, but for the subtrees of the chains in
 * skip[0..n_skip) (sorted by pointer). */
static int tree_collect(struct ruleset *rs, enum rs_table t, const struct rs_rule *rules,
			size_t n, struct plan_made *m, struct rs_chain *const *skip, size_t n_skip)
{
	for (size_t i = 0; i < n; i++) {
		const struct rs_rule *r = &rules[i];
		struct rs_chain *to;
		int e;

		if (r->t.kind != RS_T_JUMP ||
		    strncmp(r->t.u.chain, DISPATCH_PREFIX, sizeof(DISPATCH_PREFIX) - 1) != 0)
			continue;
		to = ruleset_find_chain(rs, t, r->t.u.chain);
		if (!to || (n_skip && bsearch(&to, skip, n_skip, sizeof(*skip), ptr_cmp)))
			continue;
		if ((e = made_add(m, to)) < 0 ||
		    (e = tree_collect(rs, t, to->rules, to->n_rules, m, skip, n_skip)) < 0)
			return e;
	}
	return 0;
}

/*
 * The new tree (in scratch) against the old one: a chain whose name the
 * old tree had keeps its object (and its stamp when its rules are
 * equal), new names join the plan, the old tree's other chains go to the
 * grave.  Jumps naming scratch's chains are pointed at the kept objects.
 */
static int tree_adopt(struct run *u, struct rs_chain *root, struct ruleset *scratch,
		      const struct plan_made *oldtree)
{
	struct ruleset *rs = u->st->rs;
	const enum rs_table t = (enum rs_table)root->table;
	struct rs_chains *cs = &scratch->t[t];
	const size_t from = u->made.n;
	int e;

	for (size_t i = 0; i < cs->n;) {
		struct rs_chain *cn = cs->chains[i];

		if (ruleset_find_chain(rs, t, cn->name)) {
			i++;
			continue;
		}
		/* moves cs->chains[i] out: i stays */
		if ((e = ruleset_move_chain(rs, scratch, cn)) < 0 ||
		    (e = made_add(&u->made, cn)) < 0)
			return e;
		u->st->n_rules[t] += cn->n_rules;
	}
	for (size_t i = from; i < u->made.n; i++)
		repoint(rs, scratch, t, true, u->made.v[i]->rules, u->made.v[i]->n_rules);
	repoint(rs, scratch, t, true, root->rules, root->n_rules);
	for (size_t i = 0; i < cs->n; i++) {
		struct rs_chain *cn = cs->chains[i], *co = ruleset_find_chain(rs, t, cn->name);

		repoint(rs, scratch, t, true, cn->rules, cn->n_rules);
		if (!co->stamp || !rules_equal(co->rules, co->n_rules, cn->rules, cn->n_rules)) {
			swap_rules(u->st, co, cn);
			co->stamp = ++u->st->last_stamp;
			u->changed++;
		}
		cn->stamp = UINT64_MAX; /* adopted */
	}
	/* (oldtree has no chain of a subtree taken over as it was) */
	return bury_unadopted(u, scratch, t, oldtree->v, oldtree->n);
}

/* Rebuild shared chain k from the segments (and its tree). */
static int shared_rebuild(struct run *u, enum seg k)
{
	struct plan_store *st = u->st;
	struct rs_chain *root = seg_chain(&st->sh, k);
	struct rs_rule *old = root->rules;
	size_t n_old = root->n_rules, n = k == SEG_NAT_SVC ? st->n_tail : 0;
	const int di = seg_dispatched[k];
	struct plan_made oldtree = { 0 };
	struct ruleset *scratch = NULL;
	struct dispatch_reuse reuse = { .old = st->rs, .changed = u->chg[k].v,
					.n_changed = u->chg[k].n };
	int e = 0;

	for (size_t i = 0; i < st->n_recs; i++)
		n += st->recs[i].n_seg[k];
	root->rules = NULL;
	root->n_rules = root->cap_rules = 0;
	if (n && !(root->rules = reallocarray_z(NULL, n, sizeof(*root->rules)))) {
		e = -ENOMEM;
		goto out;
	}
	root->cap_rules = n;
	for (size_t i = 0; i < st->n_recs; i++) {
		const struct port_rec *r = &st->recs[i];

		if (r->n_seg[k])
			memcpy(root->rules + root->n_rules, r->seg[k],
			       r->n_seg[k] * sizeof(*r->seg[k]));
		root->n_rules += r->n_seg[k];
	}
	if (k == SEG_NAT_SVC && st->n_tail) {
		memcpy(root->rules + root->n_rules, st->tail, st->n_tail * sizeof(*st->tail));
		root->n_rules += st->n_tail;
	}
	if (di >= 0) {
		const struct dispatch_params p = {
			.mode = u->c.s->dispatch,
			.threshold = u->c.s->dispatch_threshold,
			.leaf_max = u->c.s->dispatch_leaf_max,
		};

		/* Incremental: the tree is built apart, taking over the old
		 * subtrees no change touched, and matched with the rest of the
		 * old one by name (tree_adopt()). */
		if (!u->full && !(scratch = ruleset_new())) {
			e = -ENOMEM;
			goto out;
		}
		st->dst[di] = (struct dispatch_stats){ 0 };
		e = dispatch_chain_into(st->rs, scratch ? scratch : st->rs, u->c.hasher,
					(enum rs_table)root->table, root->name, &p, &st->dst[di],
					scratch ? &reuse : NULL);
		if (e >= 0 && scratch) {
			qsort_safe(reuse.kept, reuse.n_kept, sizeof(*reuse.kept), ptr_cmp);
			e = tree_collect(st->rs, (enum rs_table)root->table, old, n_old, &oldtree,
					 reuse.kept, reuse.n_kept);
		}
		if (e >= 0 && scratch)
			e = tree_adopt(u, root, scratch, &oldtree);
		if (e < 0)
			goto out;
	}
	st->n_rules[root->table] += root->n_rules;
	st->n_rules[root->table] -= n_old;
	if (!u->full && (!root->stamp || !rules_equal(old, n_old, root->rules, root->n_rules))) {
		root->stamp = ++st->last_stamp;
		u->changed++;
	}
out:
	ruleset_free(scratch);
	free(oldtree.v);
	free(reuse.kept);
	free(old);
	return e;
}

/* nat KUBE-SERVICES' node-port jump, planned every time (it reads the
 * node's addresses); a change rebuilds that chain. */
static int plan_tail(struct run *u)
{
	struct plan_store *st = u->st;
	struct plan_ctx *c = &u->c;
	struct rs_chain *real = c->sh.nat_services, tail = { 0 };
	int e;

	c->sh.nat_services = &tail;
	e = plan_nodeports_jump(c);
	c->sh.nat_services = real;
	if (e < 0) {
		free(tail.rules);
		return e;
	}
	if (!rules_equal(tail.rules, tail.n_rules, st->tail, st->n_tail))
		u->dirty[SEG_NAT_SVC] = true;
	free(st->tail);
	st->tail = tail.rules;
	st->n_tail = tail.n_rules;
	return 0;
}

/* Lowest i with strcmp(d->ports[i].key, key) >= 0 (keyless ports first). */
static size_t port_lower_bound(const struct desired *d, const char *key)
{
	size_t lo = 0, hi = d->n_ports;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const char *k = d->ports[mid].key;

		if (strcmp(k ? k : "", key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * aff[i]: port i belongs to a service ch names, as merge_changes_affects()
 * says, found by binary search: the ports of ns/name have the key
 * "ns/name" or "ns/name:port", all after "ns/name" in key order (among
 * other services' keys with that prefix).  Keyless ports count as
 * affected.
 */
static void mark_affected(const struct desired *d, const struct merge_changes *ch, bool *aff)
{
	for (size_t i = 0; i < d->n_ports && !d->ports[i].key; i++)
		aff[i] = true;
	for (size_t a = 0; a < ch->n_affected; a++) {
		const char *key = ch->affected[a], *slash = strchr(key, '/');
		size_t len = strlen(key);

		if (!slash)
			continue;
		for (size_t i = port_lower_bound(d, key); i < d->n_ports; i++) {
			const struct svc_port *sp = &d->ports[i];

			if (!sp->key || strncmp(sp->key, key, len) != 0)
				break;
			if ((sp->key[len] == '\0' || sp->key[len] == ':') && sp->ns && sp->name &&
			    strlen(sp->ns) == (size_t)(slash - key) &&
			    !strncmp(sp->ns, key, (size_t)(slash - key)) && streq(sp->name, slash + 1))
				aff[i] = true;
		}
	}
}

/* The records of d's ports: taken over, or planned anew. */
static int plan_ports(struct run *u, const struct desired *d, const struct merge_changes *ch,
		      bool node_ip_moved, struct plan_store_info *info)
{
	struct plan_store *st = u->st;
	struct port_rec *old = st->recs, *recs;
	_cleanup_free_ bool *aff = NULL;
	size_t n_old = st->n_recs, j = 0, n = 0;
	int e = 0;

	recs = reallocarray_z(NULL, d->n_ports ? d->n_ports : 1, sizeof(*recs));
	aff = u->full ? NULL : calloc(d->n_ports ? d->n_ports : 1, sizeof(*aff));
	if (!recs || (!u->full && !aff)) {
		free(recs);
		return -ENOMEM;
	}
	if (aff)
		mark_affected(d, ch, aff);
	st->recs = recs;
	st->n_recs = 0;
	for (size_t i = 0; i < d->n_ports && e >= 0; i++) {
		const struct svc_port *sp = &d->ports[i];
		bool affected = u->full || aff[i];

		/* Ports are sorted by (key, protocol): a repeat is adjacent. */
		if (i > 0 && plan_same_port(sp, &d->ports[i - 1])) {
			if (affected && u->c.diags)
				e = diag_add(u->c.diags, DIAG_ERROR, NULL, sp->key, NULL,
					     "service port defined twice; the first is used");
			continue;
		}
		while (sp->key && j < n_old && rec_cmp(&old[j], sp) < 0 && e >= 0)
			e = rec_retire(u, &old[j++]);
		if (e < 0)
			break;
		if (sp->key && j < n_old && rec_cmp(&old[j], sp) == 0) {
			if (!affected && !(node_ip_moved && old[j].reads_node_ip)) {
				recs[n++] = old[j];
				memset(&old[j++], 0, sizeof(*old));
				st->n_recs = n;
				continue;
			}
			e = rec_plan(u, &recs[n], sp, &old[j++]);
		} else {
			e = rec_plan(u, &recs[n], sp, NULL);
		}
		/* A record planned halfway is freed as a whole. */
		st->n_recs = ++n;
		info->ports_planned++;
	}
	while (j < n_old && e >= 0)
		e = rec_retire(u, &old[j++]);
	for (; j < n_old; j++)
		rec_done(&old[j]);
	free(old);
	return e;
}

static void fill_stats(const struct plan_store *st, struct plan_stats *stats)
{
	memset(stats, 0, sizeof(*stats));
	for (size_t i = 0; i < st->n_recs; i++) {
		const struct port_rec *r = &st->recs[i];

		stats->services += r->n_ports;
		stats->endpoints += r->n_seps;
		stats->no_local_internal += r->no_local_internal;
		stats->no_local_external += r->no_local_external;
	}
	for (size_t t = 0; t < RS_NTABLES; t++) {
		const struct rs_chains *cs = &st->rs->t[t];
		size_t builtin = 0;

		/* sorted: the built-in chains come first */
		while (builtin < cs->n && cs->chains[builtin]->builtin)
			builtin++;
		stats->table_chains[t] = cs->n - builtin;
		stats->table_rules[t] = st->n_rules[t];
		stats->chains += stats->table_chains[t];
		stats->rules += st->n_rules[t];
	}
	for (size_t i = 0; i < PLAN_N_DISPATCHED; i++) {
		stats->dispatch_chains += st->dst[i].chains;
		stats->dispatch_trees += st->dst[i].trees;
	}
}

/* What one update's run allocates. */
static void run_done(struct run *u)
{
	ruleset_free(u->grave);
	free(u->made.v);
	for (size_t k = 0; k < SEG_N; k++)
		free(u->chg[k].v);
	free(u->c.eps);
}

/*
 * Whether the update is full (u->full): when the store has no plan, ch is
 * unknown, the arena has grown too much, or something every port reads
 * changed.  For an incremental one, u->c is set up on the store's plan.
 */
static int choose_full(struct run *u, const struct desired *d, const struct plan_settings *s,
		       const struct merge_changes *ch, bool full_only)
{
	struct plan_store *st = u->st;
	struct fingerprint fp;
	int e;

	u->full = full_only || !st->rs || !ch || ch->all ||
		ruleset_arena_bytes(st->rs) > 2 * st->arena_after_full + (1u << 20);
	if (u->full)
		return 0;
	u->c.rs = st->rs;
	e = plan_setup_ctx(&u->c, d);
	if (e < 0)
		return e;
	fingerprint_of(&u->c, &fp);
	u->full = !fingerprint_equal(&fp, &st->fp) || !streq_null(s->zone, st->zone) ||
		!streq_null(s->hostname, st->hostname);
	return 0;
}

/*
 * A full update's start: the old plan becomes the grave (the stamps are
 * carried from it), its records go, and a new plan holds the fixed chains.
 */
static int start_full(struct run *u, const struct desired *d, const struct plan_settings *s)
{
	struct plan_store *st = u->st;
	/* The old plan and records stay until the stamps are given. */
	struct port_rec *old = st->recs;
	size_t n_old = st->n_recs;
	int e;

	u->grave = st->rs;
	st->rs = NULL;
	st->recs = NULL;
	st->n_recs = 0;
	store_clear(st);
	for (size_t i = 0; i < n_old; i++)
		rec_done(&old[i]);
	free(old);
	st->rs = u->c.rs = ruleset_new();
	if (!st->rs)
		return -ENOMEM;
	u->c.eps = NULL;
	u->c.cap_eps = 0;
	u->c.local_cidr = NULL;
	u->c.local_iface = NULL;
	e = plan_setup_ctx(&u->c, d);
	if (e < 0)
		return e;
	fingerprint_of(&u->c, &st->fp);
	if ((s->zone && !(st->zone = strdup(s->zone))) ||
	    (s->hostname && !(st->hostname = strdup(s->hostname))))
		return -ENOMEM;
	e = plan_fixed_chains(&u->c);
	if (e < 0)
		return e;
	if (s->family == AF_INET6)
		for (size_t t = 0; t < RS_NTABLES; t++)
			for (size_t i = 0; i < st->rs->t[t].n; i++)
				plan_mark_ipv6(st->rs->t[t].chains[i]->rules,
					       st->rs->t[t].chains[i]->n_rules);
	st->sh = u->c.sh;
	for (size_t k = 0; k < SEG_N; k++)
		u->dirty[k] = true;
	return 0;
}

/* A full update's end: every chain stamped (from the grave when there is
 * one), the rule counts, and what the check compares. */
static void finish_full(struct run *u, const struct plan_settings *s, struct plan_store_info *info)
{
	struct plan_store *st = u->st;
	size_t n_grave = 0;

	for (size_t t = 0; u->grave && t < RS_NTABLES; t++)
		n_grave += u->grave->t[t].n;
	for (size_t t = 0; t < RS_NTABLES; t++) {
		for (size_t i = 0; i < st->rs->t[t].n; i++) {
			struct rs_chain *c = st->rs->t[t].chains[i];

			if (u->grave) {
				stamp(u, c);
			} else {
				c->stamp = ++st->last_stamp;
				u->changed++;
			}
		}
	}
	for (size_t t = 0; t < RS_NTABLES; t++) {
		st->n_rules[t] = 0;
		for (size_t i = 0; i < st->rs->t[t].n; i++)
			st->n_rules[t] += st->rs->t[t].chains[i]->n_rules;
	}
	/* For the check: chains on one side only or unequal. */
	info->mismatched = u->changed + (n_grave - u->matched);
	st->arena_after_full = ruleset_arena_bytes(st->rs);
	if (s->hasher)
		chain_hasher_sweep(s->hasher);
}

/* update()'s steps; on failure the store's plan is half made. */
static int update_run(struct run *u, const struct desired *d, const struct plan_settings *s,
		      const struct merge_changes *ch, bool full_only, struct plan_store_info *info,
		      struct diag_list *diags)
{
	struct plan_store *st = u->st;
	const struct ipaddr *nip;
	bool node_ip_moved;
	int e;

	u->c = (struct plan_ctx){ .s = s, .diags = diags };
	u->c.hasher = s->hasher ? s->hasher : st->hasher;
	nip = first_of_family(s->node_ips, s->n_node_ips, s->family);
	node_ip_moved = nip ? ipaddr_cmp(nip, &st->node_ip) != 0 : st->node_ip.family != 0;
	e = choose_full(u, d, s, ch, full_only);
	if (e < 0)
		return e;
	if (u->full)
		e = start_full(u, d, s);
	else if (!(u->grave = ruleset_new()))
		e = -ENOMEM;
	if (e < 0)
		return e;
	u->c.sh = st->sh;
	u->c.np_target = st->sh.nat_nodeports;
	info->full = u->full;
	e = plan_ports(u, d, ch, node_ip_moved, info);
	if (e < 0)
		return e;
	e = plan_tail(u);
	if (e < 0)
		return e;
	for (size_t k = 0; k < SEG_N; k++) {
		if (!u->dirty[k])
			continue;
		e = shared_rebuild(u, (enum seg)k);
		if (e < 0)
			return e;
	}
	ruleset_sort(st->rs);
	/* The rule arrays grew while the plan was made: what is kept until
	 * the next update needs no room to grow. */
	ruleset_compact(st->rs);
	if (u->full)
		finish_full(u, s, info);
	else
		for (size_t i = 0; i < u->made.n; i++)
			stamp(u, u->made.v[i]);
	info->chains_changed = u->changed;
	st->node_ip = nip ? *nip : (struct ipaddr){ 0 };
	return 0;
}

/*
 * One update: incremental when the store has a plan, ch is known and
 * nothing every port reads changed; else full (the old plan is the grave
 * the stamps are carried from).  full_only: full whatever.  A failed
 * update leaves the store without a plan (the next one is full).
 */
static int update(struct plan_store *st, const struct desired *d, const struct plan_settings *s,
		  const struct merge_changes *ch, bool full_only, struct plan_store_info *info,
		  struct diag_list *diags)
{
	_cleanup_(run_done) struct run u = { .st = st };
	int e;

	e = update_run(&u, d, s, ch, full_only, info, diags);
	if (e < 0)
		store_clear(st);
	return e;
}

int plan_store_update(struct plan_store *st, const struct desired *d,
		      const struct plan_settings *s, const struct merge_changes *ch, bool check,
		      struct plan_stats *stats, struct plan_store_info *info,
		      struct diag_list *diags)
{
	struct plan_store_info local = { 0 }, first = { 0 };
	bool incremental_first;
	int e;

	if (!st || !d || !s)
		return -EINVAL;
	if (s->masquerade_bit > 31 || (s->family != AF_INET && s->family != AF_INET6) ||
	    !s->dispatch_leaf_max)
		return -EINVAL;
	if (!info)
		info = &local;
	*info = (struct plan_store_info){ 0 };
	if (!s->hasher && !st->hasher && !(st->hasher = chain_hasher_new()))
		return -ENOMEM;
	/* The check: the incremental plan first (its diagnostics are the full
	 * one's), then a full one compared with it chain by chain. */
	incremental_first = check && st->rs && ch && !ch->all;
	if (incremental_first) {
		e = update(st, d, s, ch, false, &first, NULL);
		if (e < 0)
			return e;
	}
	e = update(st, d, s, ch, check, info, diags);
	if (e < 0)
		return e;
	if (incremental_first) {
		info->ports_planned += first.ports_planned;
	} else {
		info->mismatched = 0;
	}
	if (stats)
		fill_stats(st, stats);
	return 0;
}

size_t plan_store_bytes(const struct plan_store *st)
{
	size_t n;

	if (!st)
		return 0;
	n = sizeof(*st) + ruleset_bytes(st->rs) + st->n_recs * sizeof(*st->recs) +
	    st->n_tail * sizeof(*st->tail);
	for (size_t i = 0; i < st->n_recs; i++) {
		const struct port_rec *r = &st->recs[i];

		n += (r->key ? strlen(r->key) + 1 : 0) + r->n_chains * sizeof(*r->chains);
		for (size_t k = 0; k < SEG_N; k++)
			n += r->n_seg[k] * sizeof(*r->seg[k]);
	}
	return n;
}
