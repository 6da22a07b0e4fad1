/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/owned.h"
#include "util.h"

static const char *const owned_prefixes[] = {
	"KUBE-SVC-", "KUBE-SVL-", "KUBE-EXT-", "KUBE-FW-", "KUBE-SEP-", "KUBE-XLB-",
	"KUBE-DSP-", /* svcnat's dispatch tree (core/dispatch.h) */
};

const struct owned_fixed owned_fixed_chains[] = {
	{ RS_FILTER, OWNED_F_OWNED | OWNED_F_BASE, "KUBE-SERVICES" },
	{ RS_FILTER, OWNED_F_OWNED | OWNED_F_BASE, "KUBE-EXTERNAL-SERVICES" },
	{ RS_FILTER, OWNED_F_OWNED | OWNED_F_BASE, "KUBE-FORWARD" },
	{ RS_FILTER, OWNED_F_OWNED | OWNED_F_BASE, "KUBE-NODEPORTS" },
	{ RS_FILTER, OWNED_F_OWNED | OWNED_F_BASE, "KUBE-PROXY-FIREWALL" },
	{ RS_FILTER, OWNED_F_BASE, "KUBE-FIREWALL" },
	{ RS_NAT, OWNED_F_OWNED | OWNED_F_BASE, "KUBE-SERVICES" },
	{ RS_NAT, OWNED_F_OWNED | OWNED_F_BASE, "KUBE-NODEPORTS" },
	{ RS_NAT, OWNED_F_OWNED | OWNED_F_BASE, "KUBE-POSTROUTING" },
	{ RS_NAT, OWNED_F_OWNED | OWNED_F_BASE, "KUBE-MARK-MASQ" },
};
const size_t owned_n_fixed_chains = ARRAY_SIZE(owned_fixed_chains);

bool owned_kube_name(const char *name)
{
	return name && strncmp(name, "KUBE-", 5) == 0;
}

bool owned_chain(enum rs_table t, const char *name)
{
	if (!owned_kube_name(name))
		return false;
	for (size_t i = 0; i < ARRAY_SIZE(owned_prefixes); i++)
		if (strncmp(name, owned_prefixes[i], strlen(owned_prefixes[i])) == 0)
			return true;
	for (size_t i = 0; i < ARRAY_SIZE(owned_fixed_chains); i++)
		if (owned_fixed_chains[i].table == t &&
		    (owned_fixed_chains[i].flags & OWNED_F_OWNED) &&
		    streq(name, owned_fixed_chains[i].name))
			return true;
	return false;
}

bool owned_chain_ours(const struct ruleset *plan, enum rs_table t, const char *name)
{
	const struct rs_chain *c;

	if (owned_chain(t, name))
		return true;
	c = plan && name ? ruleset_find_chain(plan, t, name) : NULL;
	return c && !c->builtin;
}

void owned_mark_encode(const struct rs_target *t, uint32_t *ret_mark, uint32_t *ret_mask)
{
	/* As libxt_MARK encodes --or-mark, --xor-mark and --set-xmark. */
	switch (t->u.mark.op) {
	case RS_MARK_OR:
		*ret_mark = t->u.mark.value;
		*ret_mask = t->u.mark.value;
		break;
	case RS_MARK_XOR:
		*ret_mark = t->u.mark.value;
		*ret_mask = 0;
		break;
	default:
		*ret_mark = t->u.mark.value;
		*ret_mask = t->u.mark.mask;
		break;
	}
}

/* A prefix of length 0, not inverted, matches every address: the same as
 * no address (what the kernel and iptables-save hold for "-s 0.0.0.0/0"). */
static bool net_every(const struct ipnet *n, bool inv)
{
	return n->addr.family && !n->plen && !inv;
}

static void net_canon(struct ipnet *n, bool *inv)
{
	if (!n->addr.family || net_every(n, *inv)) {
		memset(n, 0, sizeof(*n));
		*inv = false;
	}
}

static void rule_canon(struct rs_rule *r)
{
	if (r->t.kind == RS_T_MARK) {
		uint32_t mark, mask;

		owned_mark_encode(&r->t, &mark, &mask);
		r->t.u.mark.op = RS_MARK_SET;
		r->t.u.mark.value = mark;
		r->t.u.mark.mask = mask;
	}
	net_canon(&r->src, &r->src_inv);
	net_canon(&r->dst, &r->dst_inv);
}

bool owned_rule_same(const struct rs_rule *a, const struct rs_rule *b)
{
	struct rs_rule ca, cb;

	if (a->t.kind == OWNED_T_FOREIGN || b->t.kind == OWNED_T_FOREIGN)
		return false;
	if (a->t.kind != RS_T_MARK && b->t.kind != RS_T_MARK && a->src_inv == b->src_inv &&
	    a->dst_inv == b->dst_inv && !net_every(&a->src, a->src_inv) &&
	    !net_every(&b->src, b->src_inv) && !net_every(&a->dst, a->dst_inv) &&
	    !net_every(&b->dst, b->dst_inv))
		return rs_rule_equal(a, b);
	ca = *a;
	cb = *b;
	rule_canon(&ca);
	rule_canon(&cb);
	return rs_rule_equal(&ca, &cb);
}

int owned_jumps_match(size_t nl, size_t np, bool (*same)(void *ctx, size_t i, size_t j),
		      void *ctx, long *match, long *kept)
{
	_cleanup_free_ bool *used = calloc(np + 1, sizeof(*used));
	bool in_order = true, change = false;
	long last = -1;

	if (!used)
		return -ENOMEM;
	for (size_t i = 0; i < nl; i++) {
		match[i] = -1;
		for (size_t j = 0; j < np; j++) {
			if (!used[j] && same(ctx, i, j)) {
				used[j] = true;
				match[i] = (long)j;
				break;
			}
		}
		if (match[i] >= 0) {
			if (match[i] < last)
				in_order = false;
			last = match[i];
		}
	}
	for (size_t j = 0; j < np; j++)
		kept[j] = -1;
	for (size_t i = 0; i < nl; i++) {
		if (match[i] < 0 || !in_order) {
			match[i] = -1;
			change = true;
		} else {
			kept[match[i]] = (long)i;
		}
	}
	for (size_t j = 0; j < np; j++)
		if (kept[j] < 0)
			change = true;
	return change;
}

/* Below this many chains the targets are checked in one part. */
#define CHECK_PART_MIN_CHAINS 4096
#define CHECK_MAX_PARTS 16

struct tcheck {
	const struct ruleset *rs;
	enum rs_table t;
	size_t per; /* chains per part */
	struct {
		size_t chain, rule; /* the part's first bad jump; chain SIZE_MAX: none */
	} bad[CHECK_MAX_PARTS];
};

static void check_part(void *arg, unsigned i)
{
	struct tcheck *k = arg;
	const struct rs_chains *cs = &k->rs->t[k->t];
	size_t from = k->per * i, to = from + k->per < cs->n ? from + k->per : cs->n;

	k->bad[i].chain = SIZE_MAX;
	for (size_t c = from; c < to; c++) {
		const struct rs_chain *ch = cs->chains[c];

		for (size_t j = 0; j < ch->n_rules; j++) {
			const struct rs_target *tg = &ch->rules[j].t;
			const struct rs_chain *dst;

			if (tg->kind != RS_T_JUMP && tg->kind != RS_T_GOTO)
				continue;
			dst = tg->u.chain ? ruleset_find_chain(k->rs, k->t, tg->u.chain) : NULL;
			if (!dst || dst->builtin) {
				k->bad[i].chain = c;
				k->bad[i].rule = j;
				return;
			}
		}
	}
}

int owned_check_targets(const struct ruleset *rs, enum rs_table t, par_runner par,
			unsigned parts, struct diag_list *d)
{
	const struct rs_chains *cs = &rs->t[t];
	struct tcheck k = { .rs = rs, .t = t };

	if (parts > CHECK_MAX_PARTS)
		parts = CHECK_MAX_PARTS;
	if (!par || parts < 2 || cs->n < CHECK_PART_MIN_CHAINS)
		parts = 1;
	k.per = (cs->n + parts - 1) / parts;
	par_call(par, parts, check_part, &k);
	/* The first bad jump in chain order, as one part finds it. */
	for (unsigned i = 0; i < parts; i++) {
		const struct rs_chain *c;
		const char *to;

		if (k.bad[i].chain == SIZE_MAX)
			continue;
		c = cs->chains[k.bad[i].chain];
		to = c->rules[k.bad[i].rule].t.u.chain;
		diag_add(d, DIAG_ERROR, "plan", rs_table_name(t), c->name,
			 "rule %zu jumps to '%s', which is not a planned chain", k.bad[i].rule + 1,
			 to ? to : "");
		return -EINVAL;
	}
	return 0;
}

int owned_rule_copy_strings(struct ruleset *rs, struct rs_rule *r)
{
	for (size_t i = 0; i < r->n_matches; i++) {
		struct rs_match *m = &r->m[i];
		const char **sp = m->kind == RS_M_COMMENT  ? &m->u.comment
				  : m->kind == RS_M_RECENT ? &m->u.recent.name
				  : m->kind == RS_M_NFACCT ? &m->u.nfacct.name
							   : NULL;

		if (sp && *sp && !(*sp = ruleset_strdup(rs, *sp)))
			return -ENOMEM;
	}
	if ((r->t.kind == RS_T_JUMP || r->t.kind == RS_T_GOTO) &&
	    !(r->t.u.chain = ruleset_strdup(rs, r->t.u.chain)))
		return -ENOMEM;
	if (r->in_iface) {
		size_t n = strlen(r->in_iface);

		/* The model's name of a prefix has no "+" (iptables keeps it). */
		if (r->in_iface_prefix && n && r->in_iface[n - 1] == '+')
			n--;
		if (!(r->in_iface = ruleset_printf(rs, "%.*s", (int)n, r->in_iface)))
			return -ENOMEM;
	}
	return 0;
}
