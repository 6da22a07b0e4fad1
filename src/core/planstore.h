/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The plan store: one address family's plan kept from sync to sync, so
 * that the next plan reuses what did not change and every chain carries a
 * content stamp (struct rs_chain.stamp in core/ruleset.h) writers can
 * trust.  The plan it holds is always the one plan_build() makes of the
 * same desired state and settings, rule for rule (tests/unit/
 * test-planinc.c checks it after every step of a long random sequence).
 * Pure: no I/O.
 */
#ifndef SVCNAT_CORE_PLANSTORE_H
#define SVCNAT_CORE_PLANSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/diag.h"
#include "core/merge.h"
#include "core/model.h"
#include "core/plan.h"
#include "core/ruleset.h"

struct plan_store;

/* What one plan_store_update() did. */
struct plan_store_info {
	bool full;              /* everything was planned anew */
	size_t ports_planned;   /* service ports planned anew */
	size_t chains_changed;  /* chains given a new stamp */
	/* With check: chains (and chains present on one side only) in which
	 * the incremental plan differed from the full one (a bug: 0). */
	size_t mismatched;
};

/* An empty store (its first update plans everything); NULL on ENOMEM. */
struct plan_store *plan_store_new(void);
void plan_store_free(struct plan_store *st);

/*
 * Plan d with settings s into the store.  ch: what changed between the
 * view the previous update's d was resolved from and the one d was
 * resolved from (merge_snapshot_diff()), or NULL: unknown, plan
 * everything.  With check the incremental plan is made and then checked
 * against a full one, which is kept (info->mismatched says whether they
 * differed).  Stats and diagnostics as plan_build()'s, except that
 * diagnostics of service ports are those of the ports planned anew.
 * Returns 0; -ENOMEM or plan_build()'s -EINVAL: the store then is empty
 * (its next update plans everything).  info may be NULL.
 */
int plan_store_update(struct plan_store *st, const struct desired *d,
		      const struct plan_settings *s, const struct merge_changes *ch, bool check,
		      struct plan_stats *stats, struct plan_store_info *info,
		      struct diag_list *diags);

/*
 * The plan of the last successful update (sorted, stamped), owned by the
 * store: valid until the next update or plan_store_free(), and only to be
 * read.  NULL before the first update and after a failed one.
 */
const struct ruleset *plan_store_ruleset(const struct plan_store *st);

/*
 * The heap bytes the store holds between updates: its plan
 * (ruleset_bytes()) and the per-port records with their copies of the
 * shared chains' rules.  0 for NULL.
 */
size_t plan_store_bytes(const struct plan_store *st);

#endif
