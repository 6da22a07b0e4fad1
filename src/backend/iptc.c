/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The libiptc writer: per table one iptc_init, the changes made to the
 * handle at prepare, one iptc_commit, only when the kernel differs from
 * the plan.  A changed table the driver may want put back is also read
 * as raw bytes (xtsnap.c) before the commit.  The only file that includes
 * libiptc; entries are encoded and decoded by xtentry.c.
 *
 * libip4tc and libip6tc are one source built twice (iptc_* and ip6tc_*,
 * no symbol in common), so both are linked and one code path serves both
 * families through struct iptc_family: the calls that differ only in
 * their entry type, and the codec of that entry type.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <netinet/in.h>

#include <libiptc/libip6tc.h>
#include <libiptc/libiptc.h>

#include "backend/writer.h"
#include "backend/xt/xtentry.h"
#include "backend/xt/xtsnap.h"
#include "util.h"

/* --- the two libraries --- */

/* One family's library calls (entries as const void *) and codec. */
struct iptc_family {
	int af;
	const char *read_what; /* "reading the table (iptc_init)": for messages */
	struct xtc_handle *(*init)(const char *table);
	void (*free)(struct xtc_handle *h);
	const char *(*first_chain)(struct xtc_handle *h);
	const char *(*next_chain)(struct xtc_handle *h);
	int (*builtin)(const char *chain, struct xtc_handle *h);
	const void *(*first_rule)(const char *chain, struct xtc_handle *h);
	const void *(*next_rule)(const void *e, struct xtc_handle *h);
	const char *(*get_target)(const void *e, struct xtc_handle *h);
	int (*insert_entry)(const char *chain, const void *e, unsigned pos, struct xtc_handle *h);
	int (*append_entry)(const char *chain, const void *e, struct xtc_handle *h);
	int (*delete_num_entry)(const char *chain, unsigned pos, struct xtc_handle *h);
	int (*flush_entries)(const char *chain, struct xtc_handle *h);
	int (*create_chain)(const char *chain, struct xtc_handle *h);
	int (*delete_chain)(const char *chain, struct xtc_handle *h);
	int (*get_references)(unsigned *refs, const char *chain, struct xtc_handle *h);
	int (*commit)(struct xtc_handle *h);
	const char *(*strerror)(int err);
	/* Rule r as this family's entry, in buf, with labelled targets. */
	int (*build)(const struct rs_rule *r, struct xt_entry_buf *buf, const void **ret_e,
		     const char **ret_why);
	int (*decode)(const void *e, struct xtc_handle *h, struct rs_rule *r, char *why,
		      size_t whylen);
};

/* The calls that take or give entries, with the entry type as void. */
#define IPTC_ENTRY_CALLS(pfx, entry)                                                         \
	static const void *pfx##_w_first_rule(const char *c, struct xtc_handle *h)          \
	{                                                                                    \
		return pfx##_first_rule(c, h);                                               \
	}                                                                                    \
	static const void *pfx##_w_next_rule(const void *e, struct xtc_handle *h)           \
	{                                                                                    \
		return pfx##_next_rule(e, h);                                                \
	}                                                                                    \
	static const char *pfx##_w_get_target(const void *e, struct xtc_handle *h)          \
	{                                                                                    \
		return pfx##_get_target(e, h);                                               \
	}                                                                                    \
	static int pfx##_w_insert_entry(const char *c, const void *e, unsigned pos,         \
					struct xtc_handle *h)                                \
	{                                                                                    \
		return pfx##_insert_entry(c, (const struct entry *)e, pos, h);               \
	}                                                                                    \
	static int pfx##_w_append_entry(const char *c, const void *e, struct xtc_handle *h) \
	{                                                                                    \
		return pfx##_append_entry(c, (const struct entry *)e, h);                    \
	}

IPTC_ENTRY_CALLS(iptc, ipt_entry)
IPTC_ENTRY_CALLS(ip6tc, ip6t_entry)

static const char *label4(const struct ipt_entry *e, void *ctx)
{
	return iptc_get_target(e, ctx);
}

static int build4(const struct rs_rule *r, struct xt_entry_buf *buf, const void **ret_e,
		  const char **ret_why)
{
	*ret_e = &buf->e;
	return xt_entry_build(r, true, buf, ret_why);
}

static int decode4(const void *e, struct xtc_handle *h, struct rs_rule *r, char *why,
		   size_t whylen)
{
	return xt_entry_decode(e, label4, h, r, why, whylen);
}

#define IPTC_FAMILY(pfx)                                                                     \
	.init = pfx##_init, .free = pfx##_free, .first_chain = pfx##_first_chain,            \
	.next_chain = pfx##_next_chain, .builtin = pfx##_builtin,                            \
	.first_rule = pfx##_w_first_rule, .next_rule = pfx##_w_next_rule,                    \
	.get_target = pfx##_w_get_target, .insert_entry = pfx##_w_insert_entry,              \
	.append_entry = pfx##_w_append_entry, .delete_num_entry = pfx##_delete_num_entry,    \
	.flush_entries = pfx##_flush_entries, .create_chain = pfx##_create_chain,            \
	.delete_chain = pfx##_delete_chain, .get_references = pfx##_get_references,          \
	.commit = pfx##_commit, .strerror = pfx##_strerror

static const char *label6(const struct ip6t_entry *e, void *ctx)
{
	return ip6tc_get_target(e, ctx);
}

static int build6(const struct rs_rule *r, struct xt_entry_buf *buf, const void **ret_e,
		  const char **ret_why)
{
	*ret_e = &buf->e6;
	return xt_entry_build6(r, true, buf, ret_why);
}

static int decode6(const void *e, struct xtc_handle *h, struct rs_rule *r, char *why,
		   size_t whylen)
{
	return xt_entry_decode6(e, label6, h, r, why, whylen);
}

static const struct iptc_family fam4 = {
	.af = AF_INET,
	.read_what = "reading the table (iptc_init)",
	IPTC_FAMILY(iptc),
	.build = build4,
	.decode = decode4,
};

static const struct iptc_family fam6 = {
	.af = AF_INET6,
	.read_what = "reading the table (ip6tc_init)",
	IPTC_FAMILY(ip6tc),
	.build = build6,
	.decode = decode6,
};

static bool entry_same(const struct iptc_family *f, const void *e, struct xtc_handle *h,
		       const struct rs_rule *r)
{
	struct rs_rule k;
	char why[96];

	if (f->decode(e, h, &k, why, sizeof(why)) < 0)
		return false;
	return owned_rule_same(&k, r);
}

/* --- errors --- */

static int iptc_fail(const struct iptc_family *f, struct diag_list *d, const char *table,
		     const char *what, const char *chain, int err, bool commit)
{
	const char *mean = xt_errno_meaning(err, commit);

	if (!err)
		err = EIO;
	diag_add(d, DIAG_ERROR, "libiptc", table, chain, "%s failed: errno %d (%s)%s%s", what, err,
		 f->strerror(err), mean ? ": " : "", mean ? mean : "");
	return -err;
}

/* --- the sync of one table --- */

struct ichain {
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
	const struct iptc_family *f;
	struct xtc_handle *h;
	enum rs_table t;
	const char *table; /* for messages: "nat", "ip6 nat", ... */
	const char *name;  /* the kernel's: "nat" */
	const struct ruleset *rs;
	struct apply_result *res;
	struct diag_list *d;

	struct ichain *kc;
	size_t n_kc, cap_kc;
	struct cop *ops;
	size_t n_ops, cap_ops;
	size_t *stale; /* indices into kc */
	size_t n_stale, cap_stale;
	struct jump_fix jf[4];
	size_t n_jf;
	const void **ke; /* scratch: one chain's kernel entries */
	size_t cap_ke;
	bool changed;
	bool committed;
	bool keep;
	struct xt_snap snap; /* the table as read, when keep */
};

static void tsync_done(struct tsync *s)
{
	xt_snap_done(&s->snap);
	free(s->kc);
	free(s->ops);
	free(s->stale);
	free(s->ke);
	for (size_t i = 0; i < s->n_jf; i++) {
		free(s->jf[i].del);
		free(s->jf[i].kpos);
	}
	if (s->h)
		s->f->free(s->h);
	memset(s, 0, sizeof(*s));
}

static int kc_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ichain *)a)->name, ((const struct ichain *)b)->name);
}

static struct ichain *kc_find(struct tsync *s, const char *name)
{
	struct ichain key;

	if (!s->n_kc)
		return NULL;
	snprintf(key.name, sizeof(key.name), "%s", name);
	return bsearch(&key, s->kc, s->n_kc, sizeof(*s->kc), kc_cmp);
}

static int load_entries(struct tsync *s, const char *chain, size_t *ret_n)
{
	size_t n = 0;

	for (const void *e = s->f->first_rule(chain, s->h); e; e = s->f->next_rule(e, s->h)) {
		if (GROW(s->ke, s->cap_ke, n + 1) < 0)
			return -ENOMEM;
		s->ke[n++] = e;
	}
	*ret_n = n;
	return 0;
}

/* Compare an existing planned chain; queue a replace when it differs. */
static int plan_chain(struct tsync *s, const struct rs_chain *pc, struct ichain *k)
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
	while (p < nk && p < pc->n_rules && entry_same(s->f, s->ke[p], s->h, &pc->rules[p]))
		p++;
	if (p == nk && p == pc->n_rules)
		return 0;
	while (sfx < nk - p && sfx < pc->n_rules - p &&
	       entry_same(s->f, s->ke[nk - 1 - sfx], s->h, &pc->rules[pc->n_rules - 1 - sfx]))
		sfx++;
	if (GROW(s->ops, s->cap_ops, s->n_ops + 1) < 0)
		return -ENOMEM;
	s->ops[s->n_ops++] =
		(struct cop){ .pc = pc, .kind = COP_REPLACE, .prefix = p, .suffix = sfx, .nk = nk };
	return 0;
}

struct live_jumps {
	struct tsync *s;
	const struct rs_chain *pc;
	const size_t *at; /* position in the chain of each live jump */
};

static bool live_jump_same(void *ctx, size_t i, size_t j)
{
	const struct live_jumps *lj = ctx;

	return entry_same(lj->s->f, lj->s->ke[lj->at[i]], lj->s->h, &lj->pc->rules[j]);
}

/*
 * svcnat's jump rules in a built-in chain (every rule whose target is one
 * of our chains), as owned_jumps_match() decides: one in place stays
 * where it is (kube-proxy's -C then -I 1), a missing one goes right after
 * its kept planned predecessor or at the top.
 */
static int plan_jumps(struct tsync *s, const char *builtin)
{
	const struct rs_chain *pc = ruleset_find_chain(s->rs, s->t, builtin);
	size_t np = pc ? pc->n_rules : 0, nk, n_ours = 0, n_del = 0;
	_cleanup_free_ size_t *at = NULL, *del = NULL;
	_cleanup_free_ long *match = NULL, *kpos = NULL;
	struct live_jumps lj;
	struct jump_fix *jf;
	int r;

	if (s->n_jf >= ARRAY_SIZE(s->jf))
		return -EINVAL;
	r = load_entries(s, builtin, &nk);
	if (r < 0)
		return r;
	at = calloc(nk + 1, sizeof(*at));
	match = calloc(nk + 1, sizeof(*match));
	kpos = calloc(np + 1, sizeof(*kpos));
	del = calloc(nk + 1, sizeof(*del));
	if (!at || !match || !kpos || !del)
		return -ENOMEM;
	for (size_t i = 0; i < nk; i++) {
		const char *tgt = s->f->get_target(s->ke[i], s->h);

		if (tgt && owned_chain_ours(s->rs, s->t, tgt))
			at[n_ours++] = i;
	}
	lj = (struct live_jumps){ .s = s, .pc = pc, .at = at };
	/* kpos first holds the live jump each plan jump is... */
	r = owned_jumps_match(n_ours, np, live_jump_same, &lj, match, kpos);
	if (r <= 0)
		return r;
	for (size_t k = 0; k < n_ours; k++)
		if (match[k] < 0)
			del[n_del++] = at[k];
	/* ...then its position once the deletions are done. */
	for (size_t j = 0; j < np; j++) {
		size_t before = 0, pos;

		if (kpos[j] < 0)
			continue;
		pos = at[kpos[j]];
		for (size_t x = 0; x < n_del; x++)
			if (del[x] < pos)
				before++;
		kpos[j] = (long)(pos - before);
	}
	jf = &s->jf[s->n_jf++];
	memset(jf, 0, sizeof(*jf));
	snprintf(jf->chain, sizeof(jf->chain), "%s", builtin);
	jf->pc = pc;
	jf->del = TAKE_PTR(del);
	jf->n_del = n_del;
	jf->kpos = TAKE_PTR(kpos);
	return 0;
}

static int put_rule(struct tsync *s, const char *chain, const struct rs_rule *rule, size_t idx,
		    bool insert, size_t pos)
{
	struct xt_entry_buf buf;
	const char *why = NULL;
	const void *e = NULL;
	xt_chainlabel label;
	int ok;

	if (s->f->build(rule, &buf, &e, &why) < 0) {
		diag_add(s->d, DIAG_ERROR, "libiptc", s->table, chain, "rule %zu: %s", idx + 1,
			 why ? why : "cannot be encoded");
		return -EINVAL;
	}
	snprintf(label, sizeof(label), "%s", chain);
	if (insert)
		ok = s->f->insert_entry(label, e, (unsigned)pos, s->h);
	else
		ok = s->f->append_entry(label, e, s->h);
	if (!ok)
		return iptc_fail(s->f, s->d, s->table, insert ? "inserting a rule" : "appending a rule",
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
		if (!s->f->create_chain(label, s->h))
			return iptc_fail(s->f, s->d, s->table, "creating the chain", label, errno, false);
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
				if (!s->f->flush_entries(label, s->h))
					return iptc_fail(s->f, s->d, s->table, "flushing the chain",
							 label, errno, false);
			} else {
				for (size_t k = 0; k < ndel; k++)
					if (!s->f->delete_num_entry(label, (unsigned)op->prefix, s->h))
						return iptc_fail(s->f, s->d, s->table, "deleting a rule",
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
			if (!s->f->delete_num_entry(jf->chain, (unsigned)jf->del[x], s->h))
				return iptc_fail(s->f, s->d, s->table, "deleting a jump rule", jf->chain,
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

		if (s->f->first_rule(name, s->h) && !s->f->flush_entries(name, s->h))
			return iptc_fail(s->f, s->d, s->table, "flushing the chain", name, errno, false);
	}
	for (size_t i = 0; i < s->n_stale; i++) {
		const char *name = s->kc[s->stale[i]].name;
		unsigned refs = 0;

		if (!s->f->get_references(&refs, name, s->h))
			return iptc_fail(s->f, s->d, s->table, "counting references", name, errno, false);
		if (refs) {
			diag_add(s->d, DIAG_WARNING, "libiptc", s->table, name,
				 "not deleted: %u rule(s) of another program still jump to it", refs);
			continue;
		}
		if (!s->f->delete_chain(name, s->h))
			return iptc_fail(s->f, s->d, s->table, "deleting the chain", name, errno, false);
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
		const struct ichain *k = &s->kc[i];

		if (!k->builtin && !owned_chain(s->t, k->name))
			continue;
		for (const void *e = s->f->first_rule(k->name, s->h); e;
		     e = s->f->next_rule(e, s->h)) {
			const char *tgt = s->f->get_target(e, s->h);

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

	if (s->f->first_rule(name, s->h))
		return true;
	if (!s->f->get_references(&refs, name, s->h) || refs == 0)
		return true;
	return refs_from_ours(s, name) > 0;
}

/* Read, compare and make the changes in the handle (not yet the kernel). */
static int prepare_table(struct tsync *s, bool *ret_changed)
{
	const struct rs_chains *cs = &s->rs->t[s->t];
	int r;

	*ret_changed = false;
	s->h = s->f->init(s->name);
	if (!s->h)
		return iptc_fail(s->f, s->d, s->table, s->f->read_what, NULL, errno, false);

	for (const char *c = s->f->first_chain(s->h); c; c = s->f->next_chain(s->h)) {
		if (GROW(s->kc, s->cap_kc, s->n_kc + 1) < 0)
			return -ENOMEM;
		memset(&s->kc[s->n_kc], 0, sizeof(s->kc[0]));
		snprintf(s->kc[s->n_kc].name, sizeof(s->kc[0].name), "%s", c);
		s->kc[s->n_kc].builtin = s->f->builtin(c, s->h);
		s->n_kc++;
	}
	if (s->n_kc > 1)
		qsort(s->kc, s->n_kc, sizeof(*s->kc), kc_cmp);

	for (size_t i = 0; i < cs->n; i++) {
		const struct rs_chain *pc = cs->chains[i];
		struct ichain *k;

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
		struct ichain *k = &s->kc[i];

		if (k->builtin || k->planned || !owned_chain(s->t, k->name))
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

	if (!s->n_ops && !s->n_stale && !s->n_jf)
		return 0;
	*ret_changed = true;
	if (s->keep) {
		/* Only a table that will be committed can need putting back, so
		 * the raw copy is read only now: a sync that changes nothing
		 * reads a large table once.  The driver holds the xtables lock
		 * since before iptc_init, so this is what the handle read; a
		 * writer that ignores the lock and changes the number of entries
		 * meanwhile makes the commit fail with EAGAIN. */
		_cleanup_close_ int fd = -1;

		r = xt_socket(s->f->af, "libiptc", &fd, s->d);
		if (r < 0)
			return r;
		r = xt_snap_read(fd, s->f->af, s->name, &s->snap, "libiptc", s->d);
		if (r < 0)
			return r;
	}
	return execute(s);
}

/* --- reading the live owned state (--diff) --- */

/* The owned rules of chain name (of h), a built-in's jumps to owned
 * chains only, into out. */
static int read_chain(const struct iptc_family *f, struct xtc_handle *h, enum rs_table t,
		      const char *name, struct ruleset *out, const struct ruleset *plan)
{
	bool builtin = f->builtin(name, h);
	struct rs_chain *c;
	size_t idx = 0;

	if (!builtin && !owned_chain_ours(plan, t, name))
		return 0;
	c = ruleset_add_chain(out, t, name);
	if (!c)
		return -errno;
	for (const void *e = f->first_rule(name, h); e; e = f->next_rule(e, h), idx++) {
		struct rs_rule dec, *nr;
		char why[160];

		if (builtin) {
			const char *tgt = f->get_target(e, h);

			if (!tgt || !owned_chain_ours(plan, t, tgt))
				continue;
		}
		if (f->decode(e, h, &dec, why, sizeof(why)) < 0) {
			memset(&dec, 0, sizeof(dec));
			dec.t.kind = OWNED_T_FOREIGN;
			dec.n_matches = 1;
			dec.m[0].kind = RS_M_COMMENT;
			dec.m[0].u.comment = ruleset_printf(out, "rule %zu uses %s", idx + 1, why);
			if (!dec.m[0].u.comment)
				return -ENOMEM;
		} else if (owned_rule_copy_strings(out, &dec) < 0) {
			return -ENOMEM;
		}
		nr = rs_chain_append(c);
		if (!nr)
			return -ENOMEM;
		*nr = dec;
	}
	return 0;
}

/* The owned chains of h into out: the names listed first, then each
 * chain read. */
static int read_chains(const struct iptc_family *f, struct xtc_handle *h, enum rs_table t,
		       struct ruleset *out, const struct ruleset *plan)
{
	_cleanup_free_ const char **names = NULL;
	size_t n = 0, cap = 0;
	int r;

	for (const char *c = f->first_chain(h); c; c = f->next_chain(h)) {
		if (GROW(names, cap, n + 1) < 0)
			return -ENOMEM;
		names[n++] = c;
	}
	for (size_t i = 0; i < n; i++) {
		r = read_chain(f, h, t, names[i], out, plan);
		if (r < 0)
			return r;
	}
	return 0;
}

static int read_table(const struct iptc_family *f, const struct writer_table *tab,
		      struct ruleset *out, const struct ruleset *plan, struct diag_list *d)
{
	struct xtc_handle *h = f->init(rs_table_name(tab->table));
	int r;

	if (!h)
		return iptc_fail(f, d, writer_table_name(tab), f->read_what, NULL, errno, false);
	r = read_chains(f, h, tab->table, out, plan);
	f->free(h);
	return r;
}

/* --- the writer --- */

struct iptc_writer {
	struct writer w;
	struct tsync t[2][RS_NTABLES]; /* [enum writer_family][enum rs_table] */
};

static const struct iptc_family *family_of(enum writer_family fam)
{
	return fam == WRITER_IPV6 ? &fam6 : &fam4;
}

static struct tsync *iw_table(struct writer *w, const struct writer_table *tab)
{
	struct iptc_writer *iw = (struct iptc_writer *)w;

	if ((tab->family != WRITER_IPV4 && tab->family != WRITER_IPV6) || tab->table >= RS_NTABLES)
		return NULL;
	return &iw->t[tab->family][tab->table];
}

static int iptc_prepare(struct writer *w, const struct writer_table *tab,
			const struct ruleset *plan, bool keep, bool *ret_changed,
			struct apply_result *res, struct diag_list *d)
{
	struct tsync *s = iw_table(w, tab);

	if (!s || (tab->family == WRITER_IPV6 && !w->ops->ipv6))
		return -EAFNOSUPPORT;
	tsync_done(s);
	*s = (struct tsync){ .f = family_of(tab->family), .t = tab->table, .table = writer_table_name(tab),
			     .name = rs_table_name(tab->table), .rs = plan, .res = res, .d = d,
			     .keep = keep };
	return prepare_table(s, ret_changed);
}

static int iptc_commit_table(struct writer *w, const struct writer_table *tabs, size_t n,
			     bool *ret_done, struct diag_list *d)
{
	struct tsync *s = n == 1 ? iw_table(w, &tabs[0]) : NULL;

	if (!s || !s->h)
		return -EINVAL;
	ret_done[0] = false;
	if (!s->f->commit(s->h)) {
		int err = errno;

		if (err == EAGAIN)
			return -EAGAIN;
		return iptc_fail(s->f, d, s->table, "committing the table", NULL, err, true);
	}
	s->committed = ret_done[0] = true;
	return 0;
}

static int iptc_put_back(struct writer *w, const struct writer_table *tab, struct diag_list *d)
{
	struct tsync *s = iw_table(w, tab);
	_cleanup_close_ int fd = -1;
	int r;

	if (!s || !s->committed || !s->snap.ge)
		return -EINVAL;
	r = xt_socket(s->f->af, "libiptc", &fd, d);
	if (r < 0)
		return r;
	return xt_put_back(fd, s->f->af, &s->snap.info, s->snap.ge->entrytable, NULL, "libiptc",
			   d);
}

static void iptc_reset(struct writer *w)
{
	struct iptc_writer *iw = (struct iptc_writer *)w;

	for (size_t f = 0; f < ARRAY_SIZE(iw->t); f++)
		for (size_t i = 0; i < RS_NTABLES; i++)
			tsync_done(&iw->t[f][i]);
}

static int iptc_read(struct writer *w, const struct writer_table *tab, const struct ruleset *plan,
		     struct ruleset *out, struct diag_list *d)
{
	if (tab->table >= RS_NTABLES || (tab->family != WRITER_IPV4 && tab->family != WRITER_IPV6) ||
	    (tab->family == WRITER_IPV6 && !w->ops->ipv6))
		return -EAFNOSUPPORT;
	return read_table(family_of(tab->family), tab, out, plan, d);
}

static void iptc_writer_free(struct writer *w)
{
	if (!w)
		return;
	iptc_reset(w);
	free(w);
}

#define IPTC_WRITER_OPS                                                                      \
	.name = "libiptc", .needs_xtables_lock = true, .prepare = iptc_prepare,               \
	.commit = iptc_commit_table, .put_back = iptc_put_back, .reset = iptc_reset,          \
	.read = iptc_read, .free = iptc_writer_free

/* Where the kernel has no ip6_tables: IPv4 only. */
static const struct writer_ops iptc_writer_ops = { IPTC_WRITER_OPS, .ipv6 = false };
static const struct writer_ops iptc_writer_ops6 = { IPTC_WRITER_OPS, .ipv6 = true };

int writer_iptc_new(const struct writer_config *cfg, struct writer **ret, struct diag_list *d)
{
	struct iptc_writer *iw = calloc(1, sizeof(*iw));

	if (!iw)
		return -ENOMEM;
	iw->w.ops = xt_ip6_tables_usable("libiptc", d) ? &iptc_writer_ops6 : &iptc_writer_ops;
	iw->w.cfg = *cfg;
	*ret = &iw->w;
	return 0;
}
