/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>

#include "core/planstore.h"

struct plan_store {
	struct ruleset *rs;  /* the current plan, or NULL */
	uint64_t last_stamp; /* the last stamp given */
};

struct plan_store *plan_store_new(void)
{
	return calloc(1, sizeof(struct plan_store));
}

void plan_store_free(struct plan_store *st)
{
	if (!st)
		return;
	ruleset_free(st->rs);
	free(st);
}

const struct ruleset *plan_store_ruleset(const struct plan_store *st)
{
	return st ? st->rs : NULL;
}

/* Stamp every chain of rs: the old chain's stamp where it is equal, else a
 * new one.  Returns how many chains got a new stamp. */
static size_t stamp_carry(struct ruleset *rs, const struct ruleset *old, uint64_t *last)
{
	size_t changed = 0;

	for (size_t t = 0; t < RS_NTABLES; t++) {
		for (size_t i = 0; i < rs->t[t].n; i++) {
			struct rs_chain *c = rs->t[t].chains[i];
			const struct rs_chain *o =
				old ? ruleset_find_chain(old, (enum rs_table)t, c->name) : NULL;

			if (o && o->stamp && rs_chain_equal(o, c)) {
				c->stamp = o->stamp;
			} else {
				c->stamp = ++*last;
				changed++;
			}
		}
	}
	return changed;
}

int plan_store_update(struct plan_store *st, const struct desired *d,
		      const struct plan_settings *s, const struct merge_changes *ch, bool check,
		      struct plan_stats *stats, struct plan_store_info *info,
		      struct diag_list *diags)
{
	struct plan_store_info local = { 0 };
	struct ruleset *rs = NULL;
	int r;

	(void)ch;
	(void)check;
	if (!st || !d || !s)
		return -EINVAL;
	if (!info)
		info = &local;
	*info = (struct plan_store_info){ 0 };
	r = plan_build(d, s, &rs, stats, diags);
	if (r < 0) {
		ruleset_free(st->rs);
		st->rs = NULL;
		return r;
	}
	info->full = true;
	info->ports_planned = d->n_ports;
	info->chains_changed = stamp_carry(rs, st->rs, &st->last_stamp);
	ruleset_free(st->rs);
	st->rs = rs;
	return 0;
}
