/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>

#include <libnftnl/chain.h>
#include <libnftnl/rule.h>
#include <libnftnl/table.h>

#include "core/owned.h"
#include "backend/nft/nftdiff.h"
#include "backend/nft/nftenc.h"
#include "backend/nft/nftkeep.h"
#include "util.h"

struct diffctx {
	struct nftsock *s;
	struct nftread_state *st;
	const struct ruleset *plan;
	struct nftbatch *b;
	struct nftdiff_par *par; /* NULL: one part */
	struct apply_result *res;
	struct diag_list *d;
	enum writer_family f;
	enum rs_table t;
	uint8_t nfproto;
	struct keepbuf scratch; /* nftkeep_chain_same()'s */
	/* The chains the batch writes, in order: the table's touched list, or
	 * a part's own (encode_parts()), joined to the table's after it. */
	const char ***touched;
	size_t *n_touched, *cap_touched;
};

/* "nat", "ip6 filter", ...: for messages. */
static const char *tname(const struct diffctx *x)
{
	struct writer_table tab = { x->f, x->t };

	return writer_table_name(&tab);
}

static int push(struct diffctx *x, uint8_t op, const char *chain, long rule)
{
	struct nftmsg_ctx c = {
		.op = op, .family = (uint8_t)x->f, .table = (uint8_t)x->t, .chain = chain, .rule = rule
	};
	size_t n = *x->n_touched;

	if (x->f == WRITER_IPV6)
		x->res->committed6[x->t] = true;
	else
		x->res->committed[x->t] = true;
	/* Messages come chain by chain (but for the phases): note each once
	 * in a row, nftdiff_committed() takes duplicates. */
	if (chain && (!n || (*x->touched)[n - 1] != chain)) {
		if (GROW(*x->touched, *x->cap_touched, n + 1) < 0)
			return -ENOMEM;
		(*x->touched)[n] = chain;
		*x->n_touched = n + 1;
	}
	return nftbatch_push(x->b, &c);
}

static int msg_table(struct diffctx *x)
{
	struct nftnl_table *tb = nftenc_table(x->f, x->t);
	struct nlmsghdr *nlh;

	if (!tb || !(nlh = nftbatch_msg(x->b, x->nfproto, NFT_MSG_NEWTABLE, NLM_F_CREATE))) {
		nftnl_table_free(tb);
		return -ENOMEM;
	}
	nftnl_table_nlmsg_build_payload(nlh, tb);
	nftnl_table_free(tb);
	return push(x, NFTMSG_TABLE_ADD, NULL, -1);
}

static int msg_chain(struct diffctx *x, uint16_t type, const char *name, uint8_t op)
{
	struct nftnl_chain *c = type == NFT_MSG_NEWCHAIN ? nftenc_chain(x->f, x->t, name) : NULL;
	struct nlmsghdr *nlh;

	if (type != NFT_MSG_NEWCHAIN && (c = nftnl_chain_alloc())) {
		nftnl_chain_set_u32(c, NFTNL_CHAIN_FAMILY, x->nfproto);
		if (nftnl_chain_set_str(c, NFTNL_CHAIN_TABLE, rs_table_name(x->t)) < 0 ||
		    nftnl_chain_set_str(c, NFTNL_CHAIN_NAME, name) < 0) {
			nftnl_chain_free(c);
			c = NULL;
		}
	}
	if (!c ||
	    !(nlh = nftbatch_msg(x->b, x->nfproto, type, type == NFT_MSG_NEWCHAIN ? NLM_F_CREATE : 0))) {
		nftnl_chain_free(c);
		return -ENOMEM;
	}
	nftnl_chain_nlmsg_build_payload(nlh, c);
	nftnl_chain_free(c);
	return push(x, op, name, -1);
}

/* Delete live rule `handle` (0: every rule of the chain, a flush). */
static int msg_delrule(struct diffctx *x, const char *chain, uint64_t handle, long idx)
{
	struct nftnl_rule *r = nftnl_rule_alloc();
	struct nlmsghdr *nlh;

	if (!r)
		return -ENOMEM;
	nftnl_rule_set_u32(r, NFTNL_RULE_FAMILY, x->nfproto);
	if (nftnl_rule_set_str(r, NFTNL_RULE_TABLE, rs_table_name(x->t)) < 0 ||
	    nftnl_rule_set_str(r, NFTNL_RULE_CHAIN, chain) < 0 ||
	    !(nlh = nftbatch_msg(x->b, x->nfproto, NFT_MSG_DELRULE, 0))) {
		nftnl_rule_free(r);
		return -ENOMEM;
	}
	if (handle)
		nftnl_rule_set_u64(r, NFTNL_RULE_HANDLE, handle);
	nftnl_rule_nlmsg_build_payload(nlh, r);
	nftnl_rule_free(r);
	return push(x, handle ? NFTMSG_RULE_DEL : NFTMSG_CHAIN_FLUSH, chain, handle ? idx : -1);
}

enum where {
	AT_END,    /* append */
	AT_TOP,    /* insert at the head */
	BEFORE,    /* insert before rule `pos` */
	AFTER,     /* insert after rule `pos` */
};

static int msg_addrule(struct diffctx *x, const char *chain, const struct rs_rule *rr, long idx,
		       enum where w, uint64_t pos)
{
	struct nftnl_rule *r = NULL;
	struct nlmsghdr *nlh;
	const char *why = NULL;
	uint16_t flags = NLM_F_CREATE;
	int k;

	k = nftenc_rule(rr, x->f, x->t, chain, &r, &why);
	if (k == -EINVAL)
		diag_add(x->d, DIAG_ERROR, "plan", tname(x), chain,
			 "rule %ld cannot be written to nf_tables: %s", idx + 1, why);
	if (k < 0)
		return k;
	if (w == AT_END || w == AFTER)
		flags |= NLM_F_APPEND;
	if (w == BEFORE || w == AFTER)
		nftnl_rule_set_u64(r, NFTNL_RULE_POSITION, pos);
	nlh = nftbatch_msg(x->b, x->nfproto, NFT_MSG_NEWRULE, flags);
	if (!nlh) {
		nftnl_rule_free(r);
		return -ENOMEM;
	}
	nftnl_rule_nlmsg_build_payload(nlh, r);
	nftnl_rule_free(r);
	x->res->rules_written++;
	return push(x, NFTMSG_RULE_ADD, chain, idx);
}

static int ensure_handles(struct diffctx *x, struct nftread_chain *ch)
{
	return ch->stale ? nftread_chain_reload(x->s, x->st, x->plan, x->f, x->t, ch) : 0;
}

/* A user chain present on both sides: replace the differing middle. */
static int diff_rules(struct diffctx *x, struct nftread_chain *ch, const struct rs_chain *pc)
{
	const struct rs_chain *lc = ch->c;
	size_t nl, np = pc->n_rules, p = 0, s = 0;
	int r;

	/* The live state is the kernel's (the generation says nobody else
	 * wrote, or the notifications that nothing they wrote mattered), and
	 * the plan store's stamp says the rules are the ones committed or
	 * found equal before. */
	if (pc->stamp && ch->stamp == pc->stamp)
		return 0;
	if (ch->lazy) {
		/* Kept by the previous process, still as bytes: the plan's
		 * rules as the same bytes are the same rules. */
		r = nftkeep_chain_same(ch, pc, &x->scratch);
		if (r < 0)
			return r;
		if (r) {
			ch->stamp = pc->stamp;
			return 0;
		}
		r = nftkeep_chain_rules(x->st, x->f, ch);
		if (r < 0)
			return r == -ENOMEM ? r : -EINTR; /* damaged: read everything */
	}
	nl = lc->n_rules;
	while (p < nl && p < np && owned_rule_same(&lc->rules[p], &pc->rules[p]))
		p++;
	while (s < nl - p && s < np - p &&
	       owned_rule_same(&lc->rules[nl - 1 - s], &pc->rules[np - 1 - s]))
		s++;
	if (p == nl && p == np) {
		ch->stamp = pc->stamp;
		return 0;
	}
	r = ensure_handles(x, ch);
	if (r < 0)
		return r;
	if (ch->c->n_rules != nl)
		return -EINTR; /* changed under us: read again */
	x->res->chains_replaced++;
	for (size_t i = p; i < nl - s; i++)
		if ((r = msg_delrule(x, pc->name, ch->handles[i], (long)i)) < 0)
			return r;
	/* In plan order, before the first kept rule after them, else at the end. */
	for (size_t j = p; j < np - s; j++) {
		r = s ? msg_addrule(x, pc->name, &pc->rules[j], (long)j, BEFORE, ch->handles[nl - s])
		      : msg_addrule(x, pc->name, &pc->rules[j], (long)j, AT_END, 0);
		if (r < 0)
			return r;
	}
	return 0;
}

struct pair {
	const struct rs_chain *live, *plan;
};

static bool pair_same(void *ctx, size_t i, size_t j)
{
	const struct pair *p = ctx;

	return owned_rule_same(&p->live->rules[i], &p->plan->rules[j]);
}

/* A built-in chain: svcnat's jumps, each planned one once and in order. */
static int diff_jumps(struct diffctx *x, struct nftread_chain *ch, const struct rs_chain *pc,
		      const char *name)
{
	size_t nl = ch ? ch->c->n_rules : 0, np = pc ? pc->n_rules : 0;
	_cleanup_free_ long *match = calloc(nl + 1, sizeof(long));
	_cleanup_free_ long *kept = calloc(np + 1, sizeof(long));
	struct pair pr = { ch ? ch->c : NULL, pc };
	int r;

	if (!match || !kept)
		return -ENOMEM;
	r = owned_jumps_match(nl, np, pair_same, &pr, match, kept);
	if (r <= 0)
		return r;
	if (ch) {
		r = ensure_handles(x, ch);
		if (r < 0)
			return r;
		if (ch->c->n_rules != nl)
			return -EINTR;
	}
	for (size_t i = 0; i < nl; i++)
		if (match[i] < 0 && (r = msg_delrule(x, name, ch->handles[i], (long)i)) < 0)
			return r;
	/*
	 * Missing jumps go after their nearest kept predecessor, else at the
	 * top.  Runs sharing an anchor are inserted last first, each right
	 * after the anchor (or at the head), which leaves them in plan order.
	 */
	for (size_t j = np; j-- > 0;) {
		long anchor = -1;

		if (kept[j] >= 0)
			continue;
		for (size_t k = j; k-- > 0;) {
			if (kept[k] >= 0) {
				anchor = kept[k];
				break;
			}
		}
		r = anchor >= 0 ? msg_addrule(x, name, &pc->rules[j], (long)j, AFTER,
					      ch->handles[anchor])
				: msg_addrule(x, name, &pc->rules[j], (long)j, AT_TOP, 0);
		if (r < 0)
			return r;
		x->res->jumps_added++;
	}
	return 0;
}

static bool live(const struct nftread_chain *ch)
{
	return ch && !ch->gone;
}

/*
 * The live chain of each planned chain (NULL: none) into at[], and every
 * live chain's `planned`: the plan's user chains (sorted by name) and the
 * live chains (sorted by name) walked side by side, instead of a search
 * by name per chain and phase (most of a one-change sync at 100,000
 * chains).
 */
static void pair_chains(struct diffctx *x, struct nftread_chain **at)
{
	const struct rs_chains *pcs = &x->plan->t[x->t];
	struct nftread_table *tb = &x->st->f[x->f].t[x->t];
	size_t j = 0;

	for (size_t i = 0; i < tb->n; i++)
		tb->chains[i].planned = false;
	for (size_t i = 0; i < pcs->n; i++) {
		const struct rs_chain *pc = pcs->chains[i];
		int c = 1;

		if (!pcs->sorted || pc->builtin) {
			at[i] = nftread_find(x->st, x->f, x->t, pc->name);
		} else {
			while (j < tb->n && (c = strcmp(tb->chains[j].c->name, pc->name)) < 0)
				j++;
			at[i] = j < tb->n && c == 0 ? &tb->chains[j++] : NULL;
		}
		if (at[i])
			at[i]->planned = true;
	}
}

/* Phase 2 of diff_table() for planned chains [from, to). */
static int encode_range(struct diffctx *x, struct nftread_chain **at, size_t from, size_t to)
{
	const struct rs_chains *pcs = &x->plan->t[x->t];
	int r = 0;

	for (size_t i = from; i < to; i++) {
		const struct rs_chain *pc = pcs->chains[i];
		struct nftread_chain *ch = at[i];

		if (pc->builtin) {
			r = diff_jumps(x, live(ch) ? ch : NULL, pc, pc->name);
		} else if (!live(ch)) {
			for (size_t j = 0; r >= 0 && j < pc->n_rules; j++)
				r = msg_addrule(x, pc->name, &pc->rules[j], (long)j, AT_END, 0);
		} else {
			r = diff_rules(x, ch, pc);
		}
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * Phase 2 split in parts encoded at once.  A planned user chain the
 * kernel does not hold is only appended to: its messages need the plan
 * and nothing else (no live state, no socket).  The table's last chains,
 * from where every one is such a chain, are cut in ranges of about equal
 * rules; part 0 (on the calling thread) encodes everything before the
 * second range into the batch itself, each other part its range into a
 * batch part of its own (own result counts, diags and touched list),
 * joined after it in order: the batch, its sequence numbers, the touched
 * list and the first error are the same as one part's.
 */
struct part {
	struct diffctx *x;
	struct diffctx own; /* parts 1.. */
	struct apply_result res;
	struct diag_list d;
	const char **touched;
	size_t n_touched, cap_touched;
	struct nftread_chain **at;
	size_t from, to;
	int r;
};

struct parts {
	struct part p[NFTDIFF_MAX_PARTS];
	unsigned n;
};

static void part_run(void *arg, unsigned i)
{
	struct part *p = &((struct parts *)arg)->p[i];

	p->r = encode_range(p->x, p->at, p->from, p->to);
}

/* The parts' bounds: ps->p[i].from and .to; ps->n parts (1: no split). */
static void split_parts(const struct diffctx *x, struct nftread_chain **at, struct parts *ps)
{
	const struct rs_chains *pcs = &x->plan->t[x->t];
	size_t s = pcs->n, total = 0, tail = 0, sum = 0, i = 0;
	unsigned n = x->par ? x->par->parts : 1;

	while (s > 0 && !pcs->chains[s - 1]->builtin && !live(at[s - 1]))
		tail += pcs->chains[--s]->n_rules;
	for (size_t k = 0; k < pcs->n; k++)
		total += pcs->chains[k]->n_rules;
	if (n > NFTDIFF_MAX_PARTS)
		n = NFTDIFF_MAX_PARTS;
	if (x->par && x->par->min_rules && n > tail / x->par->min_rules)
		n = (unsigned)(tail / x->par->min_rules);
	if (n < 2 || !x->par->run)
		n = 1;
	ps->n = n;
	ps->p[0].from = 0;
	for (unsigned k = 1; k < n; k++) {
		/* Range k starts where the rules before it reach k/n of all. */
		while (i < pcs->n && (i < s || sum * n < total * k))
			sum += pcs->chains[i++]->n_rules;
		ps->p[k - 1].to = ps->p[k].from = i;
	}
	ps->p[n - 1].to = pcs->n;
}

/* Part i's messages, counts and chains after the table's (part 0's). */
static int join_part(struct diffctx *x, struct part *p)
{
	struct apply_result *res = x->res;
	int r;

	r = nftbatch_join(x->b, p->own.b);
	if (r < 0)
		return r;
	for (size_t k = 0; k < p->n_touched; k++) {
		size_t n = *x->n_touched;

		if (n && (*x->touched)[n - 1] == p->touched[k])
			continue;
		if (GROW(*x->touched, *x->cap_touched, n + 1) < 0)
			return -ENOMEM;
		(*x->touched)[n] = p->touched[k];
		*x->n_touched = n + 1;
	}
	/* A part only appends rules to new chains. */
	res->rules_written += p->res.rules_written;
	res->committed[x->t] |= p->res.committed[x->t];
	res->committed6[x->t] |= p->res.committed6[x->t];
	return 0;
}

static void parts_done(struct parts *ps)
{
	for (unsigned i = 1; i < ps->n; i++) {
		nftbatch_free(ps->p[i].own.b);
		diag_list_done(&ps->p[i].d);
		free(ps->p[i].touched);
	}
}

static int encode_parts(struct diffctx *x, struct nftread_chain **at)
{
	_cleanup_(parts_done) struct parts ps = { .n = 1 };
	int r;

	split_parts(x, at, &ps);
	if (x->par && x->par->used < ps.n)
		x->par->used = ps.n;
	for (unsigned i = 0; i < ps.n; i++) {
		struct part *p = &ps.p[i];

		p->at = at;
		p->x = x;
		if (i == 0)
			continue;
		diag_list_init(&p->d);
		p->own = (struct diffctx){ .s = x->s, .st = x->st, .plan = x->plan,
					   .res = &p->res, .d = &p->d, .f = x->f, .t = x->t,
					   .nfproto = x->nfproto, .touched = &p->touched,
					   .n_touched = &p->n_touched, .cap_touched = &p->cap_touched };
		p->own.b = nftbatch_new_part();
		if (!p->own.b) {
			ps.n = i + 1;
			return -ENOMEM;
		}
		p->x = &p->own;
	}
	par_call(x->par ? x->par->run : NULL, ps.n, part_run, &ps);
	for (unsigned i = 0; i < ps.n; i++) {
		r = ps.p[i].r;
		if (r >= 0 && i > 0)
			r = join_part(x, &ps.p[i]);
		if (r < 0) {
			if (i > 0)
				diag_list_move(x->d, &ps.p[i].d);
			return r;
		}
	}
	return 0;
}

static int diff_table(struct diffctx *x)
{
	const struct rs_chains *pcs = &x->plan->t[x->t];
	struct nftread_table *tb = &x->st->f[x->f].t[x->t];
	_cleanup_free_ struct nftread_chain **at = calloc(pcs->n + 1, sizeof(*at));
	int r = 0;

	if (!at)
		return -ENOMEM;
	pair_chains(x, at);

	/* 1. The table, missing built-in chains, new chains. */
	if (pcs->n && !tb->exists && (r = msg_table(x)) < 0)
		return r;
	for (size_t i = 0; i < pcs->n; i++) {
		const struct rs_chain *pc = pcs->chains[i];
		struct nftread_chain *ch = at[i];

		if (pc->builtin && live(ch) && !ch->hook_ok) {
			diag_add(x->d, DIAG_ERROR, "nf_tables", tname(x), pc->name,
				 "chain %s of table %s %s is not the base chain iptables-nft "
				 "makes (another hook, priority or type): another program made "
				 "the table incompatible; not writing",
				 pc->name, x->f == WRITER_IPV6 ? "ip6" : "ip", rs_table_name(x->t));
			return -EINVAL;
		}
		if (live(ch))
			continue;
		r = msg_chain(x, NFT_MSG_NEWCHAIN, pc->name, NFTMSG_CHAIN_ADD);
		if (r < 0)
			return r;
		if (!pc->builtin)
			x->res->chains_created++;
	}
	/* 2. Rules of changed chains, and svcnat's jumps in the built-in ones. */
	r = encode_parts(x, at);
	if (r < 0)
		return r;
	for (size_t i = 0; i < tb->n; i++) {
		struct nftread_chain *ch = &tb->chains[i];

		if (live(ch) && ch->c->builtin && !ch->planned &&
		    (r = diff_jumps(x, ch, NULL, ch->c->name)) < 0)
			return r;
	}
	/* 3. Stale owned chains: flush all, then delete those nobody else jumps to. */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < tb->n; i++) {
			struct nftread_chain *ch = &tb->chains[i];
			const char *name = ch->c->name;
			bool held;

			if (!live(ch) || ch->c->builtin || ch->planned ||
			    !owned_chain(x->t, name))
				continue;
			held = nftread_referenced(x->st, x->f, x->t, name);
			if (pass == 0 && (ch->c->n_rules || ch->n_lazy))
				r = msg_delrule(x, name, 0, -1);
			else if (pass == 1 && !held)
				r = msg_chain(x, NFT_MSG_DELCHAIN, name, NFTMSG_CHAIN_DEL);
			if (r < 0)
				return r;
			if (pass == 1 && held)
				diag_add(x->d, DIAG_WARNING, "nf_tables", tname(x), name,
					 "stale chain kept, emptied: another program's rule still jumps "
					 "to it");
			else if (pass == 1)
				x->res->chains_deleted++;
		}
	}
	return 0;
}

int nftdiff_build(struct nftsock *s, struct nftread_state *st, const struct ruleset *plan,
		  enum writer_family f, enum rs_table t, struct nftbatch *b,
		  struct nftdiff_par *par, struct apply_result *res, struct diag_list *d)
{
	struct nftread_table *tb = &st->f[f].t[t];
	struct diffctx x = {
		.s = s, .st = st, .plan = plan, .b = b, .par = par, .res = res, .d = d, .f = f,
		.t = t, .nfproto = nftenc_nfproto(f), .touched = &tb->touched,
		.n_touched = &tb->n_touched, .cap_touched = &tb->cap_touched
	};
	int r;

	tb->n_touched = 0;
	r = diff_table(&x);
	keepbuf_done(&x.scratch);
	return r;
}

/* Insert a chain named `name` into table t of fam, keeping the order. */
static struct nftread_chain *add_chain(struct nftread_family *fam, enum rs_table t,
				       const char *name, bool builtin)
{
	struct nftread_table *tb = &fam->t[t];
	struct rs_chain *c = ruleset_add_chain(fam->rs, t, name);
	size_t lo = 0, hi = tb->n;

	if (!c || GROW(tb->chains, tb->cap, tb->n + 1) < 0)
		return NULL;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (strcmp(name, tb->chains[mid].c->name) < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	memmove(&tb->chains[lo + 1], &tb->chains[lo], (tb->n - lo) * sizeof(*tb->chains));
	tb->n++;
	memset(&tb->chains[lo], 0, sizeof(tb->chains[lo]));
	tb->chains[lo].c = c;
	tb->chains[lo].base = tb->chains[lo].hook_ok = builtin;
	return &tb->chains[lo];
}

/* Chain ch now holds pc's rules, handles unknown: a user chain as bytes
 * (nftkeep_chain_take()), else copied into fam's arena. */
static int take_rules(struct nftread_family *fam, struct nftread_chain *ch, const struct rs_chain *pc,
		      struct keepbuf *scratch)
{
	int k;

	ch->stale = true;
	ch->gone = false;
	ch->stamp = pc->stamp;
	/* Stale handles are never read (a reload comes first). */
	free(ch->handles);
	ch->handles = NULL;
	ch->cap_handles = 0;
	k = nftkeep_chain_take(ch, pc, scratch);
	if (k != -ENOTSUP)
		return k;
	ch->c->n_rules = 0;
	nftread_chain_unlazy(ch);
	/* Kept until the chain changes again: exactly the room its rules
	 * take, not what doubling the array would leave. */
	if (pc->n_rules && ch->c->cap_rules != pc->n_rules) {
		struct rs_rule *nr = realloc(ch->c->rules, pc->n_rules * sizeof(*nr));

		if (!nr)
			return -ENOMEM;
		ch->c->rules = nr;
		ch->c->cap_rules = pc->n_rules;
	}
	for (size_t j = 0; j < pc->n_rules; j++) {
		struct rs_rule *slot = rs_chain_append(ch->c);

		if (!slot)
			return -ENOMEM;
		*slot = pc->rules[j];
		if (owned_rule_copy_strings(fam->rs, slot) < 0)
			return -ENOMEM;
	}
	return 0;
}

int nftdiff_committed(struct nftread_state *st, const struct ruleset *const plans[2], uint32_t genid)
{
	_cleanup_(keepbuf_done) struct keepbuf scratch = { 0 };

	for (int f = 0; f < 2; f++) {
		struct nftread_family *fam = &st->f[f];

		for (int t = 0; t < RS_NTABLES; t++) {
			struct nftread_table *tb = &fam->t[t];
			const struct ruleset *plan = plans[f];

			if (!plan) {
				tb->n_touched = 0;
				continue;
			}
			if (plan->t[t].n)
				tb->exists = true;
			/* Only the chains the batch wrote changed. */
			for (size_t i = 0; i < tb->n_touched; i++) {
				const char *name = tb->touched[i];
				const struct rs_chain *pc =
					ruleset_find_chain(plan, (enum rs_table)t, name);
				struct nftread_chain *ch = nftread_find(st, (enum writer_family)f,
									(enum rs_table)t, name);

				if (pc) {
					if (!ch &&
					    !(ch = add_chain(fam, (enum rs_table)t, name, pc->builtin)))
						return -ENOMEM;
					if (take_rules(fam, ch, pc, &scratch) < 0)
						return -ENOMEM;
				} else if (ch && ch->c->builtin) {
					ch->c->n_rules = 0; /* svcnat's jumps removed */
					nftread_chain_unlazy(ch);
					ch->stale = true;
					ch->stamp = 0;
				} else if (ch) {
					ch->c->n_rules = 0;
					nftread_chain_unlazy(ch);
					ch->stale = true;
					ch->stamp = 0;
					ch->gone = !nftread_referenced(st, (enum writer_family)f,
								       (enum rs_table)t, name);
				}
			}
			tb->n_touched = 0;
		}
	}
	st->genid = genid;
	return 0;
}
