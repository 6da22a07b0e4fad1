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
#include "backend/nft/nftreadrule.h"
#include "util.h"

/* Reads of both tables (or of one chain) tried before giving up on a
 * ruleset that keeps changing under us. */
#define READ_TRIES 10

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
	/* Handles still as the file's bytes go with them. */
	if (ch->handles_lazy)
		ch->stale = true;
	ch->handles_lazy = false;
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
