/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The nf_tables writer's incremental diff: the live state (nftread.h)
 * against a plan, as one batch (nftbatch.h) that changes only what
 * differs, in an order the kernel takes within one transaction:
 *
 *   1. the table and missing built-in chains, every new chain
 *   2. per changed chain, its differing middle: live rules deleted by
 *      handle, planned ones inserted before the first kept rule after
 *      them (or appended); built-in chains: svcnat's jumps, each once, in
 *      plan order, others' rules untouched
 *   3. stale chains flushed, then deleted (one another program still
 *      jumps to stays, emptied, with a warning)
 *
 * Nothing is flushed that stays, so packets never see a half state; a
 * plan equal to the live state gives an empty batch.
 */
#ifndef SVCNAT_BACKEND_NFTDIFF_H
#define SVCNAT_BACKEND_NFTDIFF_H

#include "backend/backend.h"
#include "backend/nft/nftbatch.h"
#include "backend/nft/nftread.h"
#include "util.h"

/* At most this many parts encode one table at once. */
#define NFTDIFF_MAX_PARTS 8

/* How nftdiff_build() may split its encoding over threads. */
struct nftdiff_par {
	par_runner run;   /* NULL: everything on the calling thread */
	unsigned parts;   /* at most this many parts, the calling thread's included */
	size_t min_rules; /* rules each part beside the first gets, at least */
	unsigned used;    /* set: the most parts a table was encoded in so far */
};

/*
 * Add to b what makes table t of family f of the live state st equal
 * plan's (the family's plan); counts go to res (committed[t], for ip6
 * committed6[t], set when anything was added).
 * Chains whose handles went stale are reloaded through s first.  With
 * par (NULL: one part), the new chains' rules may be encoded in parts at
 * once: b ends up byte for byte what one part makes.  Returns
 * 0, -EINVAL with a diag when a rule cannot be encoded or a table is not
 * one iptables-nft would write to, -EINTR when a reload saw the ruleset
 * move (read again), -ENOMEM.
 */
int nftdiff_build(struct nftsock *s, struct nftread_state *st, const struct ruleset *plan,
		  enum writer_family f, enum rs_table t, struct nftbatch *b,
		  struct nftdiff_par *par, struct apply_result *res, struct diag_list *d);

/*
 * After b was committed: make st what the kernel now holds (the plans'
 * rules in every chain the batch wrote, their handles stale; deleted
 * chains gone) at generation genid.  plans[f]: family f's plan, NULL when
 * the batch had none for it.  -ENOMEM (then drop st).
 */
int nftdiff_committed(struct nftread_state *st, const struct ruleset *const plans[2], uint32_t genid);

#endif
