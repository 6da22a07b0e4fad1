/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Which chains and rules are svcnat's, and when two rules are the same as
 * the kernel stores them: the policy every writer (and --diff, the planner
 * and the parser) shares.  Pure: no kernel headers, no libiptc.
 *
 * Ownership, as kube-proxy's CleanupLeftovers draws it: the fixed chains of
 * each table and every per-service chain (KUBE-SVC-, KUBE-SVL-, KUBE-EXT-,
 * KUBE-FW-, KUBE-SEP-, the older KUBE-XLB-, and svcnat's KUBE-DSP- dispatch
 * chains).  Chains of kubelet
 * (KUBE-FIREWALL, KUBE-MARK-DROP, KUBE-KUBELET-CANARY) are not owned, though
 * kube-proxy declares KUBE-FIREWALL in every sync; nor are kube-proxy's
 * KUBE-PROXY-CANARY chains: its iptables monitor (pkg/util/iptables,
 * Monitor) makes them to see whether something flushed the tables, and
 * svcnat never does.
 */
#ifndef SVCNAT_CORE_OWNED_H
#define SVCNAT_CORE_OWNED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/diag.h"
#include "core/ruleset.h"
#include "util.h"

/* rs_target.kind of a live rule the model cannot represent (a writer's
 * read puts its description in m[0].u.comment). */
#define OWNED_T_FOREIGN 0xff

enum {
	OWNED_F_OWNED = 1 << 0, /* svcnat's: removed when no longer planned */
	OWNED_F_BASE = 1 << 1,  /* declared in every sync, empty or not */
};

/* The fixed chains, in the order the planner declares the base ones. */
struct owned_fixed {
	uint8_t table; /* enum rs_table */
	uint8_t flags; /* OWNED_F_* */
	const char *name;
};
extern const struct owned_fixed owned_fixed_chains[];
extern const size_t owned_n_fixed_chains;

/* Named like one of kube-proxy's or kubelet's chains ("KUBE-..."): what a
 * parse of svcnat's part of a table keeps. */
bool owned_kube_name(const char *name);

/* Owned by svcnat in table t (see above); false for NULL. */
bool owned_chain(enum rs_table t, const char *name);

/* Owned, or a user chain the plan names (plan may be NULL). */
bool owned_chain_ours(const struct ruleset *plan, enum rs_table t, const char *name);

/* The (mark, mask) pair the kernel stores for a MARK target. */
void owned_mark_encode(const struct rs_target *t, uint32_t *ret_mark, uint32_t *ret_mask);

/*
 * Rules equal as the kernel stores them: MARK ops that encode the same
 * (mark, mask) pair, and inversions of absent addresses, are equal.  An
 * OWNED_T_FOREIGN rule equals nothing.
 */
bool owned_rule_same(const struct rs_rule *a, const struct rs_rule *b);

/*
 * svcnat's live jump rules in a built-in chain against the plan's jumps:
 * each of the nl live jumps is matched to the first plan jump (of np) it
 * equals (same(ctx, i, j)) that no earlier live jump took.  They must be
 * the plan's jumps, each once, in plan order: on return match[i] is the
 * plan jump live jump i stays as, or -1 when it goes (unmatched, or every
 * one when the matched ones are out of order), and kept[j] the live jump
 * plan jump j is, or -1 when it is to be inserted (after the nearest kept
 * predecessor, else at the top).  Returns whether anything changes (0 or
 * 1).  match has nl slots, kept np; -ENOMEM.
 */
int owned_jumps_match(size_t nl, size_t np, bool (*same)(void *ctx, size_t i, size_t j),
		      void *ctx, long *match, long *kept);

/*
 * Every jump in table t of the plan names a planned user chain; -EINVAL
 * with a diag naming the chain and rule otherwise (the first bad jump in
 * chain order).  Checked in up to parts parts at once by par (the chains
 * split in ranges); par NULL or parts 1: on the calling thread.
 */
int owned_check_targets(const struct ruleset *rs, enum rs_table t, par_runner par,
			unsigned parts, struct diag_list *d);

/* Copy the strings a decoded rule points to into rs's arena; -ENOMEM. */
int owned_rule_copy_strings(struct ruleset *rs, struct rs_rule *r);

#endif
