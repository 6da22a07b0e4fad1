/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/diff.h"
#include "core/owned.h"
#include "core/render.h"
#include "util.h"

struct diff_out {
	FILE *f;
	const char *table;
	bool header;
	bool differs;
	char *buf;
	size_t cap;
};

static int diff_line(struct diff_out *o, char sign, const char *chain, const struct rs_rule *r)
{
	int n;

	if (!o->header) {
		fprintf(o->f, "*%s\n", o->table);
		o->header = true;
	}
	o->differs = true;
	if (!r) {
		fprintf(o->f, "%c:%s - [0:0]\n", sign, chain);
		return 0;
	}
	if (r->t.kind == OWNED_T_FOREIGN) {
		fprintf(o->f, "%c-A %s (a rule svcnat does not write: %s)\n", sign, chain,
			r->n_matches && r->m[0].u.comment ? r->m[0].u.comment : "?");
		return 0;
	}
	n = render_rule(r, o->buf, o->cap);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n >= o->cap) {
		char *nb = realloc(o->buf, (size_t)n + 1);

		if (!nb)
			return -ENOMEM;
		o->buf = nb;
		o->cap = (size_t)n + 1;
		render_rule(r, o->buf, o->cap);
	}
	fprintf(o->f, "%c-A %s %s\n", sign, chain, o->buf);
	return 0;
}

static int diff_rules(struct diff_out *o, const char *chain, const struct rs_rule *live, size_t nl,
		      const struct rs_rule *plan, size_t np)
{
	size_t p = 0, s = 0;
	int r;

	while (p < nl && p < np && owned_rule_same(&live[p], &plan[p]))
		p++;
	while (s < nl - p && s < np - p && owned_rule_same(&live[nl - 1 - s], &plan[np - 1 - s]))
		s++;
	for (size_t i = p; i < nl - s; i++)
		if ((r = diff_line(o, '-', chain, &live[i])) < 0)
			return r;
	for (size_t i = p; i < np - s; i++)
		if ((r = diff_line(o, '+', chain, &plan[i])) < 0)
			return r;
	return 0;
}

struct chain_pair {
	const struct rs_chain *live, *plan;
};

static bool pair_same(void *ctx, size_t i, size_t j)
{
	const struct chain_pair *p = ctx;

	return owned_rule_same(&p->live->rules[i], &p->plan->rules[j]);
}

/* Built-in chains: the jump rules, each planned one once and in order. */
static int diff_jumps(struct diff_out *o, const char *chain, const struct rs_chain *live,
		      const struct rs_chain *plan)
{
	size_t nl = live ? live->n_rules : 0, np = plan ? plan->n_rules : 0;
	_cleanup_free_ long *match = calloc(nl + 1, sizeof(long));
	_cleanup_free_ long *kept = calloc(np + 1, sizeof(long));
	struct chain_pair cp = { live, plan };
	int r;

	if (!match || !kept)
		return -ENOMEM;
	r = owned_jumps_match(nl, np, pair_same, &cp, match, kept);
	if (r < 0)
		return r;
	for (size_t i = 0; i < nl; i++)
		if (match[i] < 0 && (r = diff_line(o, '-', chain, &live->rules[i])) < 0)
			return r;
	for (size_t j = 0; j < np; j++)
		if (kept[j] < 0 && (r = diff_line(o, '+', chain, &plan->rules[j])) < 0)
			return r;
	return 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int diff_table(struct diff_out *o, enum rs_table t, const struct ruleset *live,
		      const struct ruleset *plan)
{
	const struct rs_chains *lc = &live->t[t], *pc = &plan->t[t];
	_cleanup_free_ const char **names = calloc(lc->n + pc->n + 1, sizeof(char *));
	size_t n = 0;
	int r = 0;

	if (!names)
		return -ENOMEM;
	for (size_t i = 0; i < pc->n; i++)
		names[n++] = pc->chains[i]->name;
	for (size_t i = 0; i < lc->n; i++)
		if (!ruleset_find_chain(plan, t, lc->chains[i]->name) &&
		    (lc->chains[i]->builtin || owned_chain(t, lc->chains[i]->name)))
			names[n++] = lc->chains[i]->name;
	if (n > 1)
		qsort(names, n, sizeof(*names), name_cmp);

	/* Built-in chains first, then user chains by name. */
	for (int pass = 0; pass < 2 && r >= 0; pass++) {
		for (size_t i = 0; i < n && r >= 0; i++) {
			const struct rs_chain *l = ruleset_find_chain(live, t, names[i]);
			const struct rs_chain *p = ruleset_find_chain(plan, t, names[i]);
			bool builtin = rs_chain_is_builtin(t, names[i]);

			if (builtin != (pass == 0))
				continue;
			if (builtin) {
				r = diff_jumps(o, names[i], l, p);
			} else if (!l) {
				r = diff_line(o, '+', names[i], NULL);
				for (size_t k = 0; r >= 0 && k < p->n_rules; k++)
					r = diff_line(o, '+', names[i], &p->rules[k]);
			} else if (!p) {
				for (size_t k = 0; r >= 0 && k < l->n_rules; k++)
					r = diff_line(o, '-', names[i], &l->rules[k]);
				if (r >= 0)
					r = diff_line(o, '-', names[i], NULL);
			} else {
				r = diff_rules(o, names[i], l->rules, l->n_rules, p->rules,
					       p->n_rules);
			}
		}
	}
	return r;
}

int diff_print(const struct ruleset *live, const struct ruleset *plan, FILE *out)
{
	struct diff_out o = { .f = out };
	int r = 0;

	o.cap = 512;
	o.buf = malloc(o.cap);
	if (!o.buf)
		return -ENOMEM;
	for (int t = 0; t < RS_NTABLES && r >= 0; t++) {
		o.table = rs_table_name((enum rs_table)t);
		o.header = false;
		r = diff_table(&o, (enum rs_table)t, live, plan);
	}
	free(o.buf);
	if (r < 0)
		return r;
	if (fflush(out) != 0)
		return -EIO;
	return o.differs ? 1 : 0;
}
