/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the direct writer wrote into a legacy xtables table at its last
 * write, or found there equal to its plan when it had nothing to write:
 * the entries as the kernel took them and, per planned user chain, where
 * its rules lie and the plan's content stamp (struct rs_chain.stamp) they
 * encode.  Kept from sync to sync so that unchanged chains cost no
 * decoding and comparing rule by rule.
 *
 * Never trusted by itself.  A planned chain is taken as the kernel holds
 * it without looking at its rules only when
 *   1. the plan's chain carries the kept chain's nonzero stamp (so its
 *      rules are the ones that were written), and
 *   2. the kernel's chain, as read in this sync, holds the kept bytes:
 *      entry for entry equal except for what the kernel keeps there
 *      itself (comefrom, the packet counters), each jump aimed at the
 *      chain of the same name wherever that lies now.
 * Whatever another program changed in the chain fails 2, and the chain is
 * compared rule by rule.
 */
#ifndef SVCNAT_BACKEND_XTKEPT_H
#define SVCNAT_BACKEND_XTKEPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/xt/xttable.h"

struct xtk_chain {
	uint32_t name_at; /* table offset of its name (its head's errorname) */
	uint32_t first;   /* table offset of its first rule (its RETURN's if none) */
	uint32_t end;     /* table offset of its RETURN entry */
	uint32_t n_rules;
	uint64_t stamp;   /* of the plan's chain these rules encode; 0: not to be
			   * taken (foreign, emptied, unstamped), only placed */
};

struct xtk_table {
	void *map;                 /* the mapping that holds the bytes (xtt_big_*) */
	size_t map_len;
	const unsigned char *blob; /* table offset 0, in map */
	struct xtk_chain *ch;      /* every user chain, in name order (strcmp),
				    * which is table order */
	size_t n_ch, cap_ch;
	/* Set by xtk_pair(): the kernel's user chains are these, each at the
	 * same offset, so equal jump offsets reach chains of equal names. */
	bool same_layout;
};

/* Free everything kept; kp is empty afterwards.  NULL-safe. */
void xtk_done(struct xtk_table *kp);

/* The bytes kp holds: its mapping's resident pages (the mapping is sized
 * for the largest table the write could have made) and its chain records. */
size_t xtk_bytes(const struct xtk_table *kp);

/* Append a chain (names in strcmp order, the caller's duty).  0 or -ENOMEM. */
int xtk_add(struct xtk_table *kp, uint32_t name_at, uint32_t first, uint32_t end,
	    uint32_t n_rules, uint64_t stamp);

/*
 * Take over the mapping map (map_len bytes, entries from blob) and the
 * chains of from (added for those bytes); what kp held before is freed.
 * from is empty afterwards.
 */
void xtk_adopt(struct xtk_table *kp, void *map, size_t map_len, const unsigned char *blob,
	       struct xtk_table *from);

/* Set xtt_chain.kept of every user chain of k (its namesake in kp, or 0)
 * and kp->same_layout. */
void xtk_pair(struct xtk_table *kp, struct xtt_table *k);

/* Whether k's user chain kc (paired by xtk_pair) holds what kp kept for it
 * with this stamp (conditions 1 and 2 above). */
bool xtk_same(const struct xtk_table *kp, const struct xtt_table *k, const struct xtt_chain *kc,
	      uint64_t stamp);

#endif
