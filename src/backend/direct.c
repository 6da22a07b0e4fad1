/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The direct backend: legacy xtables through the kernel's own socket
 * options, without libiptc, for iptables and ip6tables alike (one code
 * path; struct xt_fam says where the two families' entries differ).  Per
 * table one read (IPT_SO_GET_INFO and IPT_SO_GET_ENTRIES, or the IP6T_
 * ones), one compare against the plan and, only when something differs,
 * one IPT_SO_SET_REPLACE of a table built here:
 *
 *   - built-in chains keep every foreign rule and policy byte for byte;
 *     svcnat's jump rules are kept in place or inserted as the libiptc
 *     backend does (kube-proxy's "check, else insert at the top");
 *   - foreign user chains are copied byte for byte;
 *   - planned chains the kernel already has unchanged are copied from the
 *     kernel, changed and new ones are encoded from the plan;
 *   - owned chains the plan no longer has are dropped, unless another
 *     program's rule still jumps to one (then it stays, emptied).
 *
 * Jump offsets are relocated by chain name, and every kept entry gets its
 * packet and byte counters back (IPT_SO_SET_ADD_COUNTERS), as libiptc's
 * commit does.  The kernel refuses the replace with EAGAIN when another
 * writer changed the table since the read (the driver, backend.c, then
 * has it read again).  A table the driver may want put back keeps what
 * was read until then; the others free it before the replace, so the
 * kernel's copy of a large nat table is not held twice.
 *
 * Reading the table and finding its chains is xttable.c's; deciding what
 * changes, building the new table and replacing it is this file's.
 *
 * This is what iptc_init + iptc_commit do, without libiptc's per-rule
 * lists and sorted chain inserts, which dominated syncs at 10,000 services
 * (docs/performance.md).
 */
#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/netfilter.h>
#include <linux/netfilter_ipv4/ip_tables.h>
#include <linux/netfilter_ipv6/ip6_tables.h>

#include "backend/writer.h"
#include "backend/xt/xtentry.h"
#include "backend/xt/xtkept.h"
#include "backend/xt/xtsnap.h"
#include "backend/xt/xttable.h"
#include "core/nameidx.h"
#include "util.h"

enum fate {
	F_KEEP,    /* foreign chain: copied */
	F_SAME,    /* planned, kernel equal: copied */
	F_REPLACE, /* planned, kernel differs: encoded from the plan */
	F_DROP,    /* owned, not planned: deleted */
	F_EMPTY,   /* owned, not planned, another program jumps to it: emptied */
};

/* The rules of one built-in chain in the new table. */
struct bitem {
	bool plan;  /* from the plan (else a kernel entry) */
	size_t idx; /* plan jump index, or kernel entry index */
};

struct bchain {
	struct xtt_chain *k;
	const struct rs_chain *pc;
	struct bitem *items;
	size_t n_items;
	bool changed;
};

/* A user chain of the new table. */
struct ochain {
	const char *name;
	struct xtt_chain *k;          /* NULL: new */
	const struct rs_chain *pc; /* NULL: copied (or emptied) */
	uint32_t first;            /* offset of its first rule in the new table */
	uint32_t end;              /* offset of its RETURN in the new table */
	size_t rec;                /* its record in dsync.nk, SIZE_MAX: none */
};

struct fixup {
	uint32_t at;     /* offset of the verdict in the new table */
	uint32_t ruleno; /* for errors: the rule's number in from */
	bool plan;       /* a planned rule's jump: its target must be planned too */
	const char *from;
	const char *chain; /* the target's name (a copied entry's: to->name) */
	union {
		struct xtt_chain *to;     /* !plan, a copied entry's: the kernel's chain */
		const struct ochain *dst; /* plan: the target, found while encoding; NULL: by name */
	} u;
};

/* The new table being built. */
struct otable {
	unsigned char *buf; /* struct ipt_replace (ip6t_replace's layout), then the entries */
	size_t len, cap;    /* bytes used and allocated, header included */
	uint32_t *cmap;     /* per new entry: old entry index + 1, or 0 */
	size_t n_ent, cap_cmap;
	struct fixup *fx;
	size_t n_fx, cap_fx;
	unsigned hook_entry[NF_INET_NUMHOOKS];
	unsigned underflow[NF_INET_NUMHOOKS];
	size_t hint; /* the first allocation: the expected size */
	/* A part's window into the table (encode_parts()): buf and cmap
	 * point into the table's own, sized exactly, never grown; base is
	 * the table offset of the window's first byte. */
	uint32_t base;
	bool window;
};

struct dsync {
	int fd;
	bool verbose;
	bool keep;                /* put_back may follow: keep k and oldc */
	bool committed;
	struct xt_counters *oldc; /* the replaced table's counters (keep) */
	double t_read, t_build;   /* for the verbose note */
	const struct xt_fam *f;
	enum rs_table t;
	const char *table; /* the kernel's name: "nat", "filter" */
	const char *tname; /* for messages: "nat", "ip6 nat", ... */
	const struct ruleset *rs;
	struct apply_result *res;
	struct diag_list *d;
	struct xtt_table k;
	struct bchain bc[NF_INET_NUMHOOKS];
	size_t n_bc;
	struct ochain *oc; /* in name order if oc_sorted */
	size_t n_oc, cap_oc;
	bool oc_sorted;
	struct nameidx ocix; /* s->oc by name, once its order is final: jumps find their
			      * targets while encoding (the parts share it, read only) */
	struct otable o;
	/* What the writer kept of this table (NULL: keep nothing), and what
	 * it will keep of the new table once it is committed; the writer's
	 * digest key. */
	struct xtk_table *kp;
	struct xtk_table nk;
	const struct xtk_key *key;
	/* The read's chunks given back as the copies consume them (dp: drop,
	 * shared with the parts; NULL: the read stays whole). */
	struct xtk_drop drop;
	struct xtk_drop *dp;
	char *names; /* the user chains' names, out of the read (with dp) */
	size_t n_reused; /* planned chains taken as kept, unread */
	size_t n_planned;
	unsigned threads; /* parts the user chains may be encoded in */
	par_runner par;
	unsigned parts;   /* they were encoded in, for the verbose note */
};

static int dfail(struct dsync *s, const char *what, const char *chain, int err, bool commit)
{
	const char *mean = xt_errno_meaning(err, commit);

	if (!err)
		err = EIO;
	diag_add(s->d, DIAG_ERROR, "direct", s->tname, chain, "%s failed: errno %d (%s)%s%s", what,
		 err, strerror(err), mean ? ": " : "", mean ? mean : "");
	return -err;
}

static bool kentry_same(struct dsync *s, size_t idx, const struct rs_rule *r)
{
	struct rs_rule dec;
	char why[96];

	if (xtt_decode(&s->k, idx, &dec, why, sizeof(why)) < 0)
		return false;
	return owned_rule_same(&dec, r);
}

/* --- deciding what changes --- */

static int add_ochain(struct dsync *s, const char *name, struct xtt_chain *k,
		      const struct rs_chain *pc)
{
	if (GROW(s->oc, s->cap_oc, s->n_oc + 1) < 0)
		return -ENOMEM;
	s->oc[s->n_oc++] = (struct ochain){ .name = name, .k = k, .pc = pc };
	return 0;
}

/* Planned chain pc against the kernel's kc: the same rules? */
static bool chain_same(struct dsync *s, const struct xtt_chain *kc, const struct rs_chain *pc)
{
	if (kc->n_rules != pc->n_rules)
		return false;
	for (size_t j = 0; j < pc->n_rules; j++)
		if (!kentry_same(s, kc->first_idx + j, &pc->rules[j]))
			return false;
	return true;
}

/* A planned chain and its namesake in the kernel (kc NULL: new). */
static int pair_user_chain(struct dsync *s, const struct rs_chain *pc, struct xtt_chain *kc,
			   bool *changed)
{
	if (!kc) {
		s->res->chains_created++;
		*changed = true;
		return add_ochain(s, pc->name, NULL, pc);
	}
	kc->pc = pc;
	s->n_planned++;
	if (s->kp && xtk_same(s->key, s->kp, &s->k, kc, pc->stamp)) {
		kc->fate = F_SAME;
		s->n_reused++;
	} else {
		/* kept now means: taken by its digest, which the new record copies */
		kc->kept = 0;
		kc->fate = chain_same(s, kc, pc) ? F_SAME : F_REPLACE;
	}
	if (kc->fate == F_REPLACE) {
		s->res->chains_replaced++;
		*changed = true;
	}
	return add_ochain(s, kc->name, kc, NULL);
}

/*
 * Every user chain of the new table into s->oc: the planned ones, paired
 * with the kernel's of the same name, and the kernel's others.  The plan
 * (sorted by ruleset_sort()) and the kernel's chains by name are walked
 * side by side, so s->oc comes out in name order, as the table is built.
 */
static int plan_user_chains(struct dsync *s, bool *changed)
{
	const struct rs_chains *cs = &s->rs->t[s->t];
	struct xtt_table *k = &s->k;
	size_t j = 0, n = 0;
	int r;

	s->oc_sorted = cs->sorted;
	for (size_t i = 0; i < cs->n; i++) {
		const struct rs_chain *pc = cs->chains[i];
		struct xtt_chain *kc = NULL;
		int c = 1;

		if (pc->builtin)
			continue;
		if (!cs->sorted) {
			kc = xtt_find(k, pc->name);
		} else {
			while (j < k->n_by_name && (c = strcmp(k->by_name[j]->name, pc->name)) < 0) {
				r = add_ochain(s, k->by_name[j]->name, k->by_name[j], NULL);
				if (r < 0)
					return r;
				j++;
			}
			if (j < k->n_by_name && c == 0)
				kc = k->by_name[j++];
		}
		r = pair_user_chain(s, pc, kc, changed);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < k->n_by_name; i++) {
		struct xtt_chain *kc = k->by_name[i];

		if (!kc->pc)
			kc->fate = owned_chain(s->t, kc->name) ? F_DROP : F_KEEP;
		/* The ones the walk did not reach (all unpaired ones unsorted). */
		if (cs->sorted ? i >= j : !kc->pc) {
			r = add_ochain(s, kc->name, kc, NULL);
			if (r < 0)
				return r;
		}
	}
	/* Another program's rule may still jump to a chain we would drop. */
	for (size_t i = 0; i < k->n_by_name; i++) {
		const struct xtt_chain *kc = k->by_name[i];

		if (kc->fate != F_KEEP)
			continue;
		for (size_t x = 0; x < kc->n_rules; x++) {
			struct xtt_chain *to = (struct xtt_chain *)xtt_jump(k, kc->first_idx + x);

			if (to && (to->fate == F_DROP || to->fate == F_EMPTY)) {
				to->fate = F_EMPTY;
				to->foreign_refs++;
			}
		}
	}
	for (size_t i = 0; i < k->n_by_name; i++) {
		struct xtt_chain *kc = k->by_name[i];

		if (kc->fate == F_DROP) {
			s->res->chains_deleted++;
			*changed = true;
		} else if (kc->fate == F_EMPTY && kc->n_rules) {
			diag_add(s->d, DIAG_WARNING, "direct", s->tname, kc->name,
				 "not deleted: %u rule(s) of another program still jump to it",
				 kc->foreign_refs);
			*changed = true;
		}
	}
	/* Dropped chains leave, replaced ones are encoded from the plan. */
	for (size_t i = 0; i < s->n_oc; i++) {
		struct ochain *oc = &s->oc[i];

		if (oc->k && oc->k->fate == F_DROP)
			continue;
		if (oc->k && oc->k->fate == F_REPLACE)
			oc->pc = oc->k->pc;
		s->oc[n++] = *oc;
	}
	s->n_oc = n;
	return 0;
}

struct live_jumps {
	struct dsync *s;
	const struct xtt_chain *kc;
	const struct rs_chain *pc;
	const size_t *at; /* rule number in kc of each live jump */
};

static bool live_jump_same(void *ctx, size_t i, size_t j)
{
	const struct live_jumps *lj = ctx;

	return kentry_same(lj->s, lj->kc->first_idx + lj->at[i], &lj->pc->rules[j]);
}

/*
 * svcnat's jump rules in a built-in chain (every rule whose target is one
 * of our chains), as owned_jumps_match() decides: one in place stays
 * where it is (kube-proxy's -C then -I 1), a missing one goes right after
 * its kept planned predecessor or at the top.
 */
static int plan_builtin(struct dsync *s, struct xtt_chain *kc, bool *changed)
{
	struct bchain *bc = &s->bc[s->n_bc++];
	size_t np, nk = kc->n_rules, n_ours = 0, nkept = 0, cursor = 0;
	_cleanup_free_ size_t *at = NULL, *kept = NULL, *gat = NULL;
	_cleanup_free_ long *match = NULL, *kept_as = NULL, *kpos_of = NULL;
	struct live_jumps lj;
	int r;

	bc->k = kc;
	bc->pc = ruleset_find_chain(s->rs, s->t, kc->name);
	np = bc->pc ? bc->pc->n_rules : 0;
	at = calloc(nk + 1, sizeof(*at));
	match = calloc(nk + 1, sizeof(*match));
	kept = calloc(nk + 1, sizeof(*kept));      /* kernel rules that stay, in order */
	kept_as = calloc(np + 1, sizeof(*kept_as)); /* per plan jump: its live jump, or -1 */
	kpos_of = calloc(np + 1, sizeof(*kpos_of)); /* per plan jump: its place in kept */
	gat = calloc(np + 1, sizeof(*gat));         /* per missing plan jump: insert before */
	bc->items = calloc(nk + np + 1, sizeof(*bc->items));
	if (!at || !match || !kept || !kept_as || !kpos_of || !gat || !bc->items)
		return -ENOMEM;

	for (size_t i = 0; i < nk; i++) {
		const struct xtt_chain *to = xtt_jump(&s->k, kc->first_idx + i);

		if (to && owned_chain_ours(s->rs, s->t, to->name))
			at[n_ours++] = i;
	}
	lj = (struct live_jumps){ .s = s, .kc = kc, .pc = bc->pc, .at = at };
	r = owned_jumps_match(n_ours, np, live_jump_same, &lj, match, kept_as);
	if (r < 0)
		return r;
	bc->changed = r > 0;
	for (size_t j = 0; j < np; j++)
		kpos_of[j] = -1;
	for (size_t i = 0, k = 0; i < nk; i++) {
		bool ours = k < n_ours && at[k] == i;

		if (ours && match[k] < 0) {
			k++;
			continue;
		}
		if (ours)
			kpos_of[match[k++]] = (long)nkept;
		kept[nkept++] = i;
	}
	for (size_t j = 0; j < np; j++) {
		if (kpos_of[j] >= 0) {
			cursor = (size_t)kpos_of[j] + 1;
			continue;
		}
		gat[j] = cursor;
		s->res->jumps_added++;
	}
	/* gat[] does not decrease over the missing jumps: one pass merges. */
	for (size_t x = 0, j = 0; x <= nkept; x++) {
		while (j < np) {
			if (kpos_of[j] >= 0) {
				j++;
				continue;
			}
			if (gat[j] != x)
				break;
			bc->items[bc->n_items++] = (struct bitem){ .plan = true, .idx = j++ };
		}
		if (x < nkept)
			bc->items[bc->n_items++] =
				(struct bitem){ .idx = kc->first_idx + kept[x] };
	}
	if (bc->changed)
		*changed = true;
	return 0;
}

/* --- building the new table --- */

static uint32_t o_off(const struct otable *o)
{
	return (uint32_t)(o->len - sizeof(struct ipt_replace)) + o->base;
}

/* Room for n entries of size bytes in all (their counters set by the
 * caller in cmap[n_ent - n ..]). */
static unsigned char *o_reserve(struct otable *o, size_t size, size_t n)
{
	unsigned char *e;

	if (o->window && (o->len + size > o->cap || o->n_ent + n > o->cap_cmap))
		return NULL; /* the sizing pass and the encoding disagree */
	if (o->len + size > o->cap) {
		size_t ncap = o->cap ? o->cap : o->hint + size;
		unsigned char *nb;

		while (ncap < o->len + size)
			ncap += ncap / 2;
		nb = xtt_big_grow(o->buf, o->cap, ncap);
		if (!nb)
			return NULL;
		o->buf = nb;
		o->cap = ncap;
	}
	if (GROW(o->cmap, o->cap_cmap, o->n_ent + n) < 0)
		return NULL;
	o->n_ent += n;
	e = o->buf + o->len;
	o->len += size;
	return e;
}

/* Room for an entry of size bytes; its counters come from old entry
 * old_idx (SIZE_MAX: none). */
static unsigned char *o_entry(struct otable *o, size_t size, size_t old_idx)
{
	unsigned char *e = o_reserve(o, size, 1);

	if (e)
		o->cmap[o->n_ent - 1] = old_idx == SIZE_MAX ? 0 : (uint32_t)(old_idx + 1);
	return e;
}

static int o_fixup(struct otable *o, uint32_t at, bool plan, const char *from, size_t ruleno,
		   const char *chain, struct xtt_chain *to, const struct ochain *dst)
{
	if (GROW(o->fx, o->cap_fx, o->n_fx + 1) < 0)
		return -ENOMEM;
	o->fx[o->n_fx++] = (struct fixup){ .at = at, .ruleno = (uint32_t)ruleno, .plan = plan,
					   .from = from, .chain = chain };
	if (plan)
		o->fx[o->n_fx - 1].u.dst = dst;
	else
		o->fx[o->n_fx - 1].u.to = to;
	return 0;
}

/* The standard target's verdict of new entry e, and its offset in the
 * table (it is written through memcpy: an ip6t_entry's target sits at an
 * offset the compiler does not see). */
static unsigned char *verdict_of(const struct xt_fam *f, unsigned char *e)
{
	return e + xt_fam_target_offset(f, e) + offsetof(struct xt_standard_target, verdict);
}

static void set_verdict(const struct xt_fam *f, unsigned char *e, int v)
{
	memcpy(verdict_of(f, e), &v, sizeof(v));
}

static uint32_t verdict_at(const struct otable *o, const struct xt_fam *f, unsigned char *e)
{
	return (uint32_t)(verdict_of(f, e) - o->buf - sizeof(struct ipt_replace)) + o->base;
}

/*
 * Copy the n kernel entries from idx on (one chain's, consecutive in the
 * table) in one piece; each jump is re-aimed at its chain's new place,
 * each fall-through at its own next entry, and each entry takes its
 * counters from the one it copies.
 */
static int emit_copy_run(struct dsync *s, size_t idx, size_t n, const char *chain)
{
	uint32_t from = s->k.eoff[idx];
	uint32_t to_end = idx + n < s->k.n_ent ? s->k.eoff[idx + n] : s->k.info.size;
	uint32_t base = o_off(&s->o);
	size_t first_ent = s->o.n_ent;
	unsigned char *out;
	int r;

	if (!n)
		return 0;
	out = o_reserve(&s->o, to_end - from, n);
	if (!out)
		return -ENOMEM;
	memcpy(out, s->k.blob + from, to_end - from);
	for (size_t x = 0; x < n; x++) {
		uint32_t koff = s->k.eoff[idx + x];
		const void *ke = s->k.blob + koff;
		const struct xt_standard_target *st = (const void *)xtt_target(s->f, ke);
		unsigned char *e = out + (koff - from);
		size_t len = xt_fam_next_offset(s->f, ke);
		struct xtt_chain *to;

		s->o.cmap[first_ent + x] = (uint32_t)(idx + x + 1);
		if (st->target.u.target_size < XT_ALIGN(sizeof(*st)) ||
		    st->target.u.user.name[0] != '\0' || st->verdict < 0)
			continue; /* a verdict or another target: as it is */
		if ((uint32_t)st->verdict == koff + len) {
			set_verdict(s->f, e, (int)(base + (koff - from) + len));
			continue;
		}
		to = (struct xtt_chain *)xtt_jump(&s->k, idx + x);
		if (!to) {
			diag_add(s->d, DIAG_ERROR, "direct", s->tname, chain,
				 "a rule jumps to byte %d, which starts no chain: svcnat cannot "
				 "move it and leaves the table as it is",
				 st->verdict);
			return -EPROTO;
		}
		r = o_fixup(&s->o, verdict_at(&s->o, s->f, e), false, chain, 0, to->name, to, NULL);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Copy kernel entry idx; a jump is re-aimed at its chain's new place. */
static int emit_copy(struct dsync *s, size_t idx, const char *chain)
{
	return emit_copy_run(s, idx, 1, chain);
}

/* Planned rule r, rule ruleno of chain, into buf; its size in *ret_len. */
static int encode_rule(struct dsync *s, const char *chain, const struct rs_rule *r, size_t ruleno,
		       struct xt_entry_buf *buf, size_t *ret_len)
{
	const char *why = NULL;

	if ((s->f->af == AF_INET6 ? xt_entry_build6(r, false, buf, &why)
				  : xt_entry_build(r, false, buf, &why)) < 0) {
		diag_add(s->d, DIAG_ERROR, "direct", s->tname, chain, "rule %zu: %s", ruleno + 1,
			 why ? why : "cannot be encoded");
		return -EINVAL;
	}
	*ret_len = xt_fam_next_offset(s->f, buf->b);
	return 0;
}

static int oc_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ochain *)a)->name, ((const struct ochain *)b)->name);
}

/* The chain named name; NULL: none. */
static const struct ochain *oc_find(const struct dsync *s, const char *name)
{
	size_t i = nameidx_find(&s->ocix, name);

	return i == SIZE_MAX ? NULL : &s->oc[i];
}

static const char *oc_name_at(const void *ctx, size_t i)
{
	return ((const struct dsync *)ctx)->oc[i].name;
}

static int emit_rule(struct dsync *s, const char *chain, const struct rs_rule *r, size_t ruleno)
{
	struct xt_entry_buf buf;
	uint32_t off = o_off(&s->o);
	unsigned char *e;
	size_t len;
	int k;

	k = encode_rule(s, chain, r, ruleno, &buf, &len);
	if (k < 0)
		return k;
	e = o_entry(&s->o, len, SIZE_MAX);
	if (!e)
		return -ENOMEM;
	memcpy(e, buf.b, len);
	s->res->rules_written++;
	switch (r->t.kind) {
	case RS_T_NONE:
		set_verdict(s->f, e, (int)(off + len));
		return 0;
	case RS_T_JUMP:
	case RS_T_GOTO:
		if (!r->t.u.chain)
			return -EINVAL;
		/* Looked up here, where the table's parts encode at once, not
		 * in fix_jumps() on one thread: a third of the rules jump. */
		return o_fixup(&s->o, verdict_at(&s->o, s->f, e), true, chain, ruleno,
			       r->t.u.chain, NULL, oc_find(s, r->t.u.chain));
	default:
		return 0;
	}
}

/* A chain head (name) or, with name NULL, the table's final entry. */
static int emit_error(struct dsync *s, const char *name)
{
	size_t sz = s->f->size + XT_ALIGN(sizeof(struct xt_error_target));
	unsigned char *e = o_entry(&s->o, sz, SIZE_MAX);
	struct xt_error_target *et;

	if (!e)
		return -ENOMEM;
	memset(e, 0, sz);
	xt_fam_set_offsets(s->f, e, s->f->size, (uint16_t)sz);
	et = (struct xt_error_target *)(e + s->f->size);
	et->target.u.user.target_size = XT_ALIGN(sizeof(*et));
	/* Into the zeroed fields, cut to fit (snprintf showed in a 128k-chain
	 * build). */
	memcpy(et->target.u.user.name, XT_ERROR_TARGET, sizeof(XT_ERROR_TARGET));
	name = name ? name : XT_ERROR_TARGET;
	memcpy(et->errorname, name, strnlen(name, sizeof(et->errorname) - 1));
	return 0;
}

static int emit_return(struct dsync *s, size_t old_idx)
{
	size_t sz = s->f->size + XT_ALIGN(sizeof(struct xt_standard_target));
	unsigned char *e = o_entry(&s->o, sz, old_idx);
	struct xt_standard_target *st;

	if (!e)
		return -ENOMEM;
	memset(e, 0, sz);
	xt_fam_set_offsets(s->f, e, s->f->size, (uint16_t)sz);
	st = (struct xt_standard_target *)(e + s->f->size);
	st->target.u.user.target_size = XT_ALIGN(sizeof(*st));
	st->verdict = XT_RETURN;
	return 0;
}

/* The built-in chains, each ending in its policy. */
static int emit_builtins(struct dsync *s)
{
	int r;

	for (size_t i = 0; i < s->n_bc; i++) {
		struct bchain *bc = &s->bc[i];
		int h = bc->k->hook;

		s->o.hook_entry[h] = o_off(&s->o);
		for (size_t x = 0; x < bc->n_items; x++) {
			const struct bitem *it = &bc->items[x];

			r = it->plan ? emit_rule(s, bc->k->name, &bc->pc->rules[it->idx], it->idx)
				     : emit_copy(s, it->idx, bc->k->name);
			if (r < 0)
				return r;
		}
		s->o.underflow[h] = o_off(&s->o);
		r = emit_copy(s, bc->k->tail_idx, bc->k->name);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The kernel's bytes emit_user_chain() copies for oc: false if none. */
static bool copied_run(const struct dsync *s, const struct ochain *oc, uint32_t *ret_from,
		       uint32_t *ret_len)
{
	size_t idx, n;
	uint32_t to_end;

	if (oc->pc || !oc->k || oc->k->fate == F_EMPTY || !oc->k->n_rules)
		return false;
	idx = oc->k->first_idx;
	n = oc->k->n_rules;
	to_end = idx + n < s->k.n_ent ? s->k.eoff[idx + n] : s->k.info.size;
	*ret_from = s->k.eoff[idx];
	*ret_len = to_end - *ret_from;
	return true;
}

/*
 * Unless the old table may have to be put back, the read's bytes are
 * needed only until the user chains copied from it are: announce those
 * copies, so that each chunk of the read goes back to the system once its
 * last one is done (the read and the new table are each as large as the
 * table).  Built-in chains were emitted already; nothing reads the old
 * table's bytes after the user chains.
 */
static void drop_start(struct dsync *s)
{
	size_t bytes = 0, at = 0;
	uint32_t from, len;

	if (s->keep || !s->k.ge)
		return; /* the read stays whole until the commit */
	/* A user chain's name lies in the read (its head entry): the chains
	 * and the jumps to them are named by copies from here on. */
	for (size_t c = 0; c < s->k.n_ch; c++)
		if (s->k.ch[c].hook < 0)
			bytes += strlen(s->k.ch[c].name) + 1;
	s->names = malloc(bytes ? bytes : 1);
	if (!s->names || xtk_drop_init(&s->drop, s->k.ge, s->k.ge_len, XTK_DROP_CHUNK) < 0)
		return;
	for (size_t i = 0; i < s->n_oc; i++)
		if (s->oc[i].k && s->oc[i].name == s->oc[i].k->name)
			s->oc[i].name = NULL;
	for (size_t c = 0; c < s->k.n_ch; c++) {
		struct xtt_chain *kc = &s->k.ch[c];
		size_t n = strlen(kc->name) + 1;

		if (kc->hook >= 0)
			continue;
		memcpy(s->names + at, kc->name, n);
		kc->name = s->names + at;
		at += n;
	}
	for (size_t i = 0; i < s->n_oc; i++) {
		if (!s->oc[i].name)
			s->oc[i].name = s->oc[i].k->name;
		if (copied_run(s, &s->oc[i], &from, &len))
			xtk_drop_need(&s->drop, s->k.blob + from, len);
	}
	s->dp = &s->drop;
}

/* A user chain: its head, its rules (planned or kept), its RETURN. */
static int emit_user_chain(struct dsync *s, struct ochain *oc)
{
	uint32_t from, len;
	int r;

	r = emit_error(s, oc->name);
	if (r < 0)
		return r;
	oc->first = o_off(&s->o);
	if (oc->k) {
		oc->k->placed = true;
		oc->k->ofirst = oc->first;
	}

	if (oc->pc) {
		for (size_t j = 0; j < oc->pc->n_rules; j++) {
			r = emit_rule(s, oc->name, &oc->pc->rules[j], j);
			if (r < 0)
				return r;
		}
	} else if (oc->k->fate != F_EMPTY) {
		r = emit_copy_run(s, oc->k->first_idx, oc->k->n_rules, oc->name);
		if (r < 0)
			return r;
		if (s->dp && copied_run(s, oc, &from, &len))
			xtk_drop_copied(s->dp, s->k.blob + from, len);
	}
	oc->end = o_off(&s->o);
	return emit_return(s, oc->k ? oc->k->tail_idx : SIZE_MAX);
}

/* Every jump's offset, now that the chains are placed. */
static int fix_jumps(struct dsync *s)
{
	for (size_t i = 0; i < s->o.n_fx; i++) {
		const struct fixup *fx = &s->o.fx[i];
		const struct ochain *to = NULL;
		bool ok;
		int v;

		/* Planned rules jump only to planned chains (as the libiptc
		 * backend checks up front); kept foreign rules to kept chains. */
		if (!fx->plan) {
			ok = fx->u.to->placed;
			v = (int)fx->u.to->ofirst;
		} else {
			to = fx->u.dst ? fx->u.dst : oc_find(s, fx->chain);
			ok = to && (!fx->plan || to->pc || (to->k && to->k->pc));
			v = to ? (int)to->first : 0;
		}
		if (!ok) {
			diag_add(s->d, DIAG_ERROR, "plan", s->tname, fx->from,
				 "rule %u jumps to '%s', which is not a planned chain",
				 fx->ruleno + 1, fx->chain);
			return -EINVAL;
		}
		memcpy(s->o.buf + sizeof(struct ipt_replace) + s->o.fx[i].at, &v, sizeof(v));
	}
	return 0;
}

/*
 * --- the user chains in parts ---
 *
 * A big table's user chains are encoded by s->threads parts at once, each
 * a run of consecutive chains.  A first pass sizes each part (its rules
 * are encoded and their lengths summed), so that each part then writes
 * its chains straight into its own window of the table at their final
 * offsets: no part's output is copied or moved afterwards.  The bytes are
 * those of one part encoding all, and so are the errors (the first
 * part's in chain order).
 */

/* Below this many rules in the user chains, one part encodes them. */
#define PAR_MIN_RULES 4096
#define MAX_PARTS 16

struct epart {
	struct dsync w;          /* the part's view of the table's sync */
	struct apply_result res; /* its counters, added to the table's */
	struct diag_list d;
	size_t from, to;         /* its chains, s->oc[from..to) */
	size_t bytes, n_ent;     /* the first pass's sizes */
	int r;
};

struct ejob {
	struct dsync *s;
	struct epart *p;
	bool sizing;
};

static size_t oc_rules(const struct ochain *oc)
{
	if (oc->pc)
		return oc->pc->n_rules;
	return oc->k->fate == F_EMPTY ? 0 : oc->k->n_rules;
}

/* What emit_user_chain() will write of oc: bytes and entries. */
static int chain_size(struct dsync *s, const struct ochain *oc, size_t *bytes, size_t *n_ent)
{
	size_t b = s->f->size + XT_ALIGN(sizeof(struct xt_error_target)) + s->f->size +
		   XT_ALIGN(sizeof(struct xt_standard_target));

	*n_ent += 2 + oc_rules(oc);
	if (oc->pc) {
		for (size_t j = 0; j < oc->pc->n_rules; j++) {
			struct xt_entry_buf buf;
			size_t len;
			int r = encode_rule(s, oc->name, &oc->pc->rules[j], j, &buf, &len);

			if (r < 0)
				return r;
			b += len;
		}
	} else if (oc_rules(oc)) {
		size_t idx = oc->k->first_idx, n = oc->k->n_rules;
		uint32_t to_end = idx + n < s->k.n_ent ? s->k.eoff[idx + n] : s->k.info.size;

		b += to_end - s->k.eoff[idx];
	}
	*bytes += b;
	return 0;
}

static void epart_run(void *arg, unsigned i)
{
	struct ejob *j = arg;
	struct epart *p = &j->p[i];

	for (size_t c = p->from; c < p->to && p->r >= 0; c++)
		p->r = j->sizing ? chain_size(&p->w, &j->s->oc[c], &p->bytes, &p->n_ent)
				 : emit_user_chain(&p->w, &j->s->oc[c]);
}

/* The first failed part's error and messages, in chain order. */
static int parts_failed(struct dsync *s, struct epart *p, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		if (p[i].r >= 0)
			continue;
		return diag_list_move(s->d, &p[i].d) < 0 ? -ENOMEM : p[i].r;
	}
	return 0;
}

/* Add what part p wrote besides the bytes: jumps to fix, counters. */
static int part_merge(struct dsync *s, struct epart *p)
{
	const struct otable *o = &p->w.o;

	if (o->len != o->cap || o->n_ent != o->cap_cmap) {
		diag_add(s->d, DIAG_ERROR, "direct", s->tname, NULL,
			 "a part of the table came out %zu bytes long, sized %zu (a bug)",
			 o->len - sizeof(struct ipt_replace), o->cap - sizeof(struct ipt_replace));
		return -EPROTO;
	}
	if (GROW(s->o.fx, s->o.cap_fx, s->o.n_fx + o->n_fx) < 0)
		return -ENOMEM;
	if (o->n_fx)
		memcpy(s->o.fx + s->o.n_fx, o->fx, o->n_fx * sizeof(*o->fx));
	s->o.n_fx += o->n_fx;
	s->res->rules_written += p->res.rules_written;
	return 0;
}

static void parts_done(struct epart *p, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		free(p[i].w.o.fx);
		diag_list_done(&p[i].d);
	}
}

/* How many parts, and which chains each: about as many rules each. */
static unsigned parts_split(struct dsync *s, struct epart *p)
{
	size_t total = 0, acc = 0, c = 0;
	unsigned n = s->threads < MAX_PARTS ? s->threads : MAX_PARTS;

	for (size_t i = 0; i < s->n_oc; i++)
		total += oc_rules(&s->oc[i]) + 2;
	if (n < 2 || !s->par || total < PAR_MIN_RULES || s->n_oc < n)
		return 1;
	for (unsigned i = 0; i < n; i++) {
		size_t goal = total / n * (i + 1);

		p[i].from = c;
		while (c < s->n_oc && (i == n - 1 || acc < goal))
			acc += oc_rules(&s->oc[c++]) + 2;
		p[i].to = c;
	}
	return n;
}

static int emit_user_chains(struct dsync *s)
{
	struct epart p[MAX_PARTS];
	struct ejob job = { .s = s, .p = p, .sizing = true };
	size_t len, ent;
	unsigned n;
	int r;

	memset(p, 0, sizeof(p));
	n = s->parts = parts_split(s, p);
	if (n == 1) {
		for (size_t i = 0; i < s->n_oc; i++) {
			r = emit_user_chain(s, &s->oc[i]);
			if (r < 0)
				return r;
		}
		return 0;
	}
	for (unsigned i = 0; i < n; i++) {
		p[i].w = *s;
		p[i].w.o = (struct otable){ 0 };
		p[i].w.nk = (struct xtk_table){ 0 };
		p[i].w.res = &p[i].res;
		p[i].w.d = &p[i].d;
		diag_list_init(&p[i].d);
	}
	par_call(s->par, n, epart_run, &job);
	r = parts_failed(s, p, n);
	for (unsigned i = 0; i < n && r >= 0; i++)
		if (!o_reserve(&s->o, p[i].bytes, p[i].n_ent))
			r = -ENOMEM;
	if (r < 0) {
		parts_done(p, n);
		return r;
	}
	/* The windows, from the first part's first byte on. */
	len = s->o.len;
	ent = s->o.n_ent;
	for (unsigned i = n; i-- > 0;) {
		len -= p[i].bytes;
		ent -= p[i].n_ent;
		p[i].w.o = (struct otable){
			.buf = s->o.buf + len - sizeof(struct ipt_replace),
			.len = sizeof(struct ipt_replace),
			.cap = sizeof(struct ipt_replace) + p[i].bytes,
			.cmap = s->o.cmap + ent,
			.cap_cmap = p[i].n_ent,
			.base = (uint32_t)(len - sizeof(struct ipt_replace)),
			.window = true,
		};
	}
	job.sizing = false;
	par_call(s->par, n, epart_run, &job);
	r = parts_failed(s, p, n);
	for (unsigned i = 0; i < n && r >= 0; i++)
		r = part_merge(s, &p[i]);
	parts_done(p, n);
	return r;
}

static int build_table(struct dsync *s)
{
	struct ipt_replace *repl;
	int r;

	/* Start from an estimate (the old table, ~400 bytes per new rule), so
	 * the buffer is rarely remapped while it grows. */
	s->o.hint = s->k.info.size + (1u << 20);
	for (size_t i = 0; i < s->n_oc; i++)
		if (s->o.hint < SIZE_MAX / 2 && s->oc[i].pc)
			s->o.hint += 400 * (s->oc[i].pc->n_rules + 1);
	s->o.len = sizeof(struct ipt_replace);
	r = emit_builtins(s);
	if (r < 0)
		return r;
	if (!s->oc_sorted)
		qsort_safe(s->oc, s->n_oc, sizeof(*s->oc), oc_cmp);
	r = nameidx_build(&s->ocix, s->n_oc, oc_name_at, s);
	if (r < 0)
		return r;
	drop_start(s);
	r = emit_user_chains(s);
	if (r < 0)
		return r;
	/* Nothing reads the old table's bytes from here on: what the copies
	 * left (chunks with changed or removed chains) goes back too. */
	if (s->dp)
		xtk_drop_rest(s->dp);
	r = emit_error(s, NULL);
	if (r < 0)
		return r;
	r = fix_jumps(s);
	if (r < 0)
		return r;
	/* One per jump (a third of the rules): not needed past here, and
	 * the table is at its largest from now until the commit. */
	free(s->o.fx);
	s->o.fx = NULL;
	s->o.n_fx = s->o.cap_fx = 0;
	repl = (struct ipt_replace *)s->o.buf;
	memset(repl, 0, sizeof(*repl));
	snprintf(repl->name, sizeof(repl->name), "%s", s->table);
	repl->valid_hooks = s->k.info.valid_hooks;
	repl->num_entries = (unsigned)s->o.n_ent;
	repl->size = o_off(&s->o);
	memcpy(repl->hook_entry, s->o.hook_entry, sizeof(repl->hook_entry));
	memcpy(repl->underflow, s->o.underflow, sizeof(repl->underflow));
	return 0;
}

/* --- what to keep of the new table --- */

/* The stamp of the plan's chain oc's rules encode, 0: none (not to be taken). */
static uint64_t oc_stamp(const struct ochain *oc)
{
	const struct rs_chain *pc = oc->pc ? oc->pc : oc->k->fate == F_SAME ? oc->k->pc : NULL;

	return pc ? pc->stamp : 0;
}

/* xtk_chain_at_fn of the built table: s->oc is in table order. */
static const char *built_chain_at(void *ctx, uint32_t off)
{
	const struct dsync *s = ctx;
	size_t lo = 0, hi = s->n_oc;

	while (lo < hi) {
		size_t m = lo + (hi - lo) / 2;

		if (s->oc[m].first < off)
			lo = m + 1;
		else
			hi = m;
	}
	return lo < s->n_oc && s->oc[lo].first == off ? s->oc[lo].name : NULL;
}

/* The record of oc: the digest it was taken by, else its new entries'. */
static void keep_chain(struct dsync *s, const struct ochain *oc)
{
	struct xtk_chain *c = &s->nk.ch[oc->rec];
	const unsigned char *blob = s->o.buf + sizeof(struct ipt_replace);

	c->stamp = oc_stamp(oc);
	c->len = oc->end - oc->first;
	c->n_rules = (uint32_t)oc_rules(oc);
	memcpy(c->name, oc->name, strlen(oc->name) + 1);
	if (!oc->pc && oc->k->kept)
		c->digest = s->kp->ch[oc->k->kept - 1].digest;
	else if (xtk_digest(s->key, s->f, blob, oc->first, c->len, built_chain_at, s,
			    &c->digest) < 0)
		c->stamp = 0; /* never taken */
}

struct kjob {
	struct dsync *s;
	size_t per;
};

static void kpart_run(void *arg, unsigned i)
{
	struct kjob *j = arg;
	size_t from = j->per * i, to = from + j->per < j->s->n_oc ? from + j->per : j->s->n_oc;

	for (size_t c = from; c < to; c++)
		if (j->s->oc[c].rec != SIZE_MAX)
			keep_chain(j->s, &j->s->oc[c]);
}

/*
 * The records of the new table's planned chains (s->nk), once its jumps
 * are fixed: digested in as many parts as the chains were encoded in.
 */
static int keep_built(struct dsync *s)
{
	struct kjob job = { .s = s };
	unsigned n = s->parts ? s->parts : 1;
	size_t count = 0;
	int r;

	for (size_t i = 0; i < s->n_oc; i++) {
		struct ochain *oc = &s->oc[i];

		oc->rec = SIZE_MAX;
		if (oc_stamp(oc) && strlen(oc->name) < sizeof(s->nk.ch->name))
			oc->rec = count++;
	}
	r = xtk_reserve(&s->nk, count);
	if (r < 0)
		return r;
	s->nk.n_ch = count;
	job.per = (s->n_oc + n - 1) / n;
	par_call(s->par, n, kpart_run, &job);
	return 0;
}

/* --- one table --- */

static void dsync_done(struct dsync *s)
{
	xtt_done(&s->k);
	xtk_done(&s->nk);
	xtk_drop_done(&s->drop);
	s->dp = NULL;
	free(s->names);
	s->names = NULL;
	for (size_t i = 0; i < s->n_bc; i++)
		free(s->bc[i].items);
	free(s->oc);
	xtt_big_free(s->o.buf, s->o.cap);
	free(s->o.cmap);
	free(s->o.fx);
	s->n_bc = 0;
	s->oc = NULL;
	nameidx_done(&s->ocix);
	memset(&s->o, 0, sizeof(s->o));
}

/* Replace the table, then give every kept entry its counters back. */
static int commit(struct dsync *s)
{
	struct ipt_replace *repl = (struct ipt_replace *)s->o.buf;
	size_t n_old = repl->num_counters = s->k.info.num_entries;
	_cleanup_free_ struct xt_counters *oldc = calloc(n_old + 1, sizeof(*oldc));
	_cleanup_free_ struct xt_counters_info *add = NULL;
	size_t addlen;
	bool any = false;

	if (!oldc)
		return -ENOMEM;
	repl->counters = oldc;
	/* Unless it may have to be put back, the old table is no longer
	 * needed: free it before the kernel allocates the new one. */
	if (!s->keep)
		xtt_done(&s->k);
	/* IP6T_SO_SET_REPLACE and IP6T_SO_SET_ADD_COUNTERS: the same values. */
	if (setsockopt(s->fd, s->f->level, IPT_SO_SET_REPLACE, repl, (socklen_t)s->o.len) < 0) {
		int err = errno;
		char what[64];

		if (err == EAGAIN)
			return -EAGAIN;
		snprintf(what, sizeof(what), "replacing the table (%s_SO_SET_REPLACE)", s->f->so);
		return dfail(s, what, NULL, err, true);
	}
	s->committed = true;
	if (s->keep)
		s->oldc = TAKE_PTR(oldc);
	addlen = sizeof(*add) + s->o.n_ent * sizeof(add->counters[0]);
	/* The built table is what the kernel holds now: its planned chains'
	 * records are kept for the next sync, its bytes are not. */
	if (s->kp && s->nk.n_ch)
		xtk_adopt(s->kp, &s->nk);
	xtt_big_free(s->o.buf, s->o.cap);
	s->o.buf = NULL;
	add = calloc(1, addlen);
	if (!add) {
		diag_add(s->d, DIAG_WARNING, "direct", s->tname, NULL,
			 "the rules are in place, but their packet counters restart from 0: "
			 "out of memory");
		return 0;
	}
	snprintf(add->name, sizeof(add->name), "%s", s->table);
	add->num_counters = (unsigned)s->o.n_ent;
	for (size_t i = 0; i < s->o.n_ent; i++) {
		if (s->o.cmap[i] && s->o.cmap[i] <= n_old) {
			add->counters[i] = (s->oldc ? s->oldc : oldc)[s->o.cmap[i] - 1];
			any = any || add->counters[i].pcnt || add->counters[i].bcnt;
		}
	}
	if (any &&
	    setsockopt(s->fd, s->f->level, IPT_SO_SET_ADD_COUNTERS, add, (socklen_t)addlen) < 0)
		diag_add(s->d, DIAG_WARNING, "direct", s->tname, NULL,
			 "the rules are in place, but their packet counters restart from 0: "
			 "%s_SO_SET_ADD_COUNTERS failed: %s", s->f->so, strerror(errno));
	return 0;
}

/*
 * Nothing to write: the table as read holds the plan, so its planned
 * chains are what to keep: the digest a chain was taken by, else the
 * digest of its entries as read.
 */
static int keep_read(struct dsync *s)
{
	struct xtt_table *k = &s->k;
	int r;

	if (!s->kp)
		return 0;
	for (size_t i = 0; i < k->n_by_name; i++) {
		const struct xtt_chain *kc = k->by_name[i];
		uint64_t stamp = kc->pc && kc->fate == F_SAME ? kc->pc->stamp : 0;
		uint32_t from = k->eoff[kc->first_idx];
		struct xtk_chain *c;

		if (!stamp || strlen(kc->name) >= sizeof(c->name))
			continue;
		r = xtk_reserve(&s->nk, 1);
		if (r < 0)
			return r;
		c = &s->nk.ch[s->nk.n_ch];
		*c = (struct xtk_chain){ .stamp = stamp, .n_rules = (uint32_t)kc->n_rules,
					 .len = k->eoff[kc->tail_idx] - from };
		memcpy(c->name, kc->name, strlen(kc->name) + 1);
		if (kc->kept)
			c->digest = s->kp->ch[kc->kept - 1].digest;
		else if (xtk_digest(s->key, s->f, k->blob, from, c->len, xtk_read_chain_at, k,
				    &c->digest) < 0)
			continue;
		s->nk.n_ch++;
	}
	xtk_adopt(s->kp, &s->nk);
	return 0;
}

/* Read, compare and, when something differs, build the new table. */
static int prepare_table(struct dsync *s, bool *ret_changed)
{
	const struct rs_chains *cs = &s->rs->t[s->t];
	bool changed = false;
	double t0 = monotonic_seconds();
	int r;

	r = xtt_read(&s->k, s->fd, s->f, s->table, "direct", s->tname, s->d);
	if (r < 0)
		return r;
	if (s->kp)
		xtk_pair(s->kp, &s->k);
	for (size_t i = 0; i < cs->n; i++) {
		const struct rs_chain *pc = cs->chains[i];
		bool found = false;

		if (!pc->builtin || !pc->n_rules)
			continue;
		for (size_t c = 0; c < s->k.n_ch && !found; c++)
			found = s->k.ch[c].hook >= 0 && streq(s->k.ch[c].name, pc->name);
		if (!found) {
			diag_add(s->d, DIAG_ERROR, "plan", s->tname, pc->name,
				 "the kernel's %s table has no such built-in chain", s->tname);
			return -EINVAL;
		}
	}
	r = plan_user_chains(s, &changed);
	if (r < 0)
		return r;
	for (size_t c = 0; c < s->k.n_ch; c++) {
		if (s->k.ch[c].hook < 0)
			continue;
		if (s->n_bc >= ARRAY_SIZE(s->bc))
			return xtt_bad_layout(s->d, "direct", s->tname, s->k.ch[c].first, "a built-in chain twice");
		r = plan_builtin(s, &s->k.ch[c], &changed);
		if (r < 0)
			return r;
	}
	s->t_read = monotonic_seconds() - t0;
	*ret_changed = changed;
	if (!changed) {
		if (s->verbose)
			diag_add(s->d, DIAG_NOTE, "direct", s->tname, NULL,
				 "read %u bytes and compared in %.3f s (%zu of %zu planned chains "
				 "as kept): unchanged",
				 s->k.info.size, s->t_read, s->n_reused, s->n_planned);
		return keep_read(s);
	}
	r = build_table(s);
	if (r >= 0 && s->kp)
		r = keep_built(s);
	/* The chains are in the new table and their records made. */
	nameidx_done(&s->ocix);
	free(s->oc);
	s->oc = NULL;
	s->n_oc = s->cap_oc = 0;
	/* What was kept has served (keep_built copied the digests it took). */
	if (s->kp)
		xtk_done(s->kp);
	s->t_build = monotonic_seconds() - t0 - s->t_read;
	s->res->encode_seconds += s->t_build;
	return r;
}

/* --- reading the live owned state (--diff) --- */

static int read_owned(struct dsync *s, const struct ruleset *plan, struct ruleset *out)
{
	struct xtt_table *k = &s->k;
	int r;

	r = xtt_read(&s->k, s->fd, s->f, s->table, "direct", s->tname, s->d);
	if (r < 0)
		return r;
	for (size_t c = 0; c < k->n_ch; c++) {
		const struct xtt_chain *kc = &k->ch[c];
		bool builtin = kc->hook >= 0;
		struct rs_chain *oc;

		if (!builtin && !owned_chain_ours(plan, s->t, kc->name))
			continue;
		oc = ruleset_add_chain(out, s->t, kc->name);
		if (!oc)
			return -errno;
		for (size_t j = 0; j < kc->n_rules; j++) {
			struct rs_rule dec, *nr;
			char why[160];

			if (builtin) {
				const struct xtt_chain *to = xtt_jump(k, kc->first_idx + j);

				if (!to || !owned_chain_ours(plan, s->t, to->name))
					continue;
			}
			if (xtt_decode(k, kc->first_idx + j, &dec, why, sizeof(why)) < 0) {
				memset(&dec, 0, sizeof(dec));
				dec.t.kind = OWNED_T_FOREIGN;
				dec.n_matches = 1;
				dec.m[0].kind = RS_M_COMMENT;
				dec.m[0].u.comment =
					ruleset_printf(out, "rule %zu uses %s", j + 1, why);
				if (!dec.m[0].u.comment)
					return -ENOMEM;
			} else if (owned_rule_copy_strings(out, &dec) < 0) {
				return -ENOMEM;
			}
			nr = rs_chain_append(oc);
			if (!nr)
				return -ENOMEM;
			*nr = dec;
		}
	}
	return 0;
}

/* --- the writer --- */

struct direct_writer {
	struct writer w;
	int fd[2]; /* [WRITER_IPV4], [WRITER_IPV6]: raw sockets, opened at the first use */
	struct dsync t[2][RS_NTABLES];
	struct xtk_table kept[2][RS_NTABLES]; /* from sync to sync (xtkept.h) */
	struct xtk_key key;                   /* of their digests */
};

static const struct xt_fam *fam_of(enum writer_family f)
{
	return f == WRITER_IPV6 ? &xt_fam6 : &xt_fam4;
}

static int dw_socket(struct direct_writer *dw, enum writer_family f, struct diag_list *d)
{
	if (dw->fd[f] >= 0)
		return 0;
	return xt_socket(fam_of(f)->af, "direct", &dw->fd[f], d);
}

static struct dsync *dw_table(struct writer *w, const struct writer_table *tab)
{
	struct direct_writer *dw = (struct direct_writer *)w;

	if (tab->table >= RS_NTABLES || (tab->family != WRITER_IPV4 && tab->family != WRITER_IPV6) ||
	    (tab->family == WRITER_IPV6 && !w->ops->ipv6))
		return NULL;
	return &dw->t[tab->family][tab->table];
}

static void dsync_free(struct dsync *s)
{
	dsync_done(s);
	free(s->oldc);
	memset(s, 0, sizeof(*s));
}

/* A table's sync state before its read. */
static struct dsync dsync_start(struct direct_writer *dw, const struct writer_table *tab,
				const struct ruleset *plan, struct diag_list *d)
{
	return (struct dsync){ .fd = dw->fd[tab->family], .verbose = dw->w.cfg.verbose,
			       .threads = dw->w.cfg.threads, .par = dw->w.cfg.par,
			       .f = fam_of(tab->family), .t = tab->table,
			       .table = rs_table_name(tab->table), .tname = writer_table_name(tab),
			       .rs = plan, .d = d };
}

/* Whether a plan store stamped the table's chains (it stamps them all). */
static bool plan_stamped(const struct rs_chains *cs)
{
	for (size_t i = 0; i < cs->n; i++)
		if (cs->chains[i]->stamp)
			return true;
	return false;
}

static int direct_prepare(struct writer *w, const struct writer_table *tab,
			  const struct ruleset *plan, bool keep, bool *ret_changed,
			  struct apply_result *res, struct diag_list *d)
{
	struct direct_writer *dw = (struct direct_writer *)w;
	struct dsync *s = dw_table(w, tab);
	int r;

	if (!s)
		return -EAFNOSUPPORT;
	r = dw_socket(dw, tab->family, d);
	if (r < 0)
		return r;
	dsync_free(s);
	*s = dsync_start(dw, tab, plan, d);
	s->keep = keep;
	s->res = res;
	/* Only a plan store's plans carry stamps (the daemon's): for any
	 * other (--once, --cleanup) nothing is kept, nor held through it. */
	s->kp = &dw->kept[tab->family][tab->table];
	s->key = &dw->key;
	if (!plan_stamped(&plan->t[tab->table])) {
		xtk_done(s->kp);
		s->kp = NULL;
	}
	return prepare_table(s, ret_changed);
}

static int direct_commit(struct writer *w, const struct writer_table *tabs, size_t n,
			 bool *ret_done, struct diag_list *d)
{
	struct dsync *s = n == 1 ? dw_table(w, &tabs[0]) : NULL;
	double t0 = monotonic_seconds(), c0 = thread_cpu_seconds();
	int r;

	if (!s)
		return -EINVAL;
	s->d = d;
	r = commit(s);
	ret_done[0] = s->committed;
	/* The CPU time is the kernel's work on the replace (it runs in this
	 * thread's system call): on a loaded machine the figure to compare. */
	if (r >= 0 && s->verbose)
		diag_add(d, DIAG_NOTE, "direct", s->tname, NULL,
			 "read and compared in %.3f s (%zu of %zu planned chains as kept), built "
			 "%zu bytes in %.3f s (%u part%s), replaced in %.3f s (CPU %.3f s)",
			 s->t_read, s->n_reused, s->n_planned, s->o.len, s->t_build, s->parts,
			 s->parts == 1 ? "" : "s", monotonic_seconds() - t0,
			 thread_cpu_seconds() - c0);
	if (r >= 0 && s->verbose && s->dp)
		diag_add(d, DIAG_NOTE, "direct", s->tname, NULL,
			 "gave back %zu of the %zu bytes read while building", s->dp->released,
			 s->dp->len);
	return r;
}

static int direct_put_back(struct writer *w, const struct writer_table *tab, struct diag_list *d)
{
	struct dsync *s = dw_table(w, tab);

	if (!s || !s->committed || !s->keep || !s->k.ge) {
		diag_add(d, DIAG_ERROR, "direct", writer_table_name(tab), NULL,
			 "cannot put the table back: what was read is gone");
		return -EINVAL;
	}
	/* The kernel then holds no longer what was kept. */
	xtk_done(s->kp);
	return xt_put_back(s->fd, s->f->af, &s->k.info, s->k.blob, s->oldc, "direct", d);
}

static void direct_reset(struct writer *w)
{
	struct direct_writer *dw = (struct direct_writer *)w;

	for (size_t f = 0; f < 2; f++)
		for (size_t i = 0; i < RS_NTABLES; i++)
			dsync_free(&dw->t[f][i]);
}

static int direct_read(struct writer *w, const struct writer_table *tab,
		       const struct ruleset *plan, struct ruleset *out, struct diag_list *d)
{
	struct direct_writer *dw = (struct direct_writer *)w;
	struct dsync s;
	int r;

	if (!dw_table(w, tab))
		return -EAFNOSUPPORT;
	r = dw_socket(dw, tab->family, d);
	if (r < 0)
		return r;
	s = dsync_start(dw, tab, NULL, d);
	r = read_owned(&s, plan, out);
	xtt_done(&s.k);
	return r;
}

static void direct_free(struct writer *w)
{
	struct direct_writer *dw = (struct direct_writer *)w;

	if (!w)
		return;
	direct_reset(w);
	for (size_t f = 0; f < 2; f++) {
		if (dw->fd[f] >= 0)
			close(dw->fd[f]);
		for (size_t i = 0; i < RS_NTABLES; i++)
			xtk_done(&dw->kept[f][i]);
	}
	free(dw);
}

static size_t direct_kept_bytes(const struct writer *w)
{
	const struct direct_writer *dw = (const struct direct_writer *)w;
	size_t n = 0;

	for (size_t f = 0; f < 2; f++)
		for (size_t t = 0; t < RS_NTABLES; t++)
			n += xtk_bytes(&dw->kept[f][t]);
	return n;
}

#define DIRECT_OPS                                                                           \
	.name = "direct", .needs_xtables_lock = true, .prepare = direct_prepare,              \
	.commit = direct_commit, .put_back = direct_put_back, .reset = direct_reset,          \
	.read = direct_read, .free = direct_free, .kept_bytes = direct_kept_bytes

/* Where the kernel has no ip6_tables: IPv4 only. */
static const struct writer_ops direct_ops = { DIRECT_OPS, .ipv6 = false };
static const struct writer_ops direct_ops6 = { DIRECT_OPS, .ipv6 = true };

int writer_direct_new(const struct writer_config *cfg, struct writer **ret, struct diag_list *d)
{
	struct direct_writer *dw = calloc(1, sizeof(*dw));
	int r;

	if (!dw)
		return -ENOMEM;
	r = xtk_key_init(&dw->key);
	if (r < 0) {
		free(dw);
		diag_add(d, DIAG_ERROR, "direct", NULL, NULL,
			 "making the key of the kept chains' digests failed: %s", strerror(-r));
		return r;
	}
	dw->w.ops = xt_ip6_tables_usable("direct", d) ? &direct_ops6 : &direct_ops;
	dw->w.cfg = *cfg;
	dw->fd[0] = dw->fd[1] = -1;
	*ret = &dw->w;
	return 0;
}
