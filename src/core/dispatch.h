/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Logarithmic dispatch: turn a linear chain of service rules (nat
 * KUBE-SERVICES, one rule per service IP and port, and the like) into a
 * tree of chains, so that a packet walks O(log n) rules instead of all of
 * them.  Pure: works on a planned ruleset only.
 *
 * A chain's leading run of "keyed" rules is dispatched; everything after
 * the first rule that is not keyed (nat KUBE-SERVICES' final jumps to
 * KUBE-NODEPORTS) stays, in order, after the tree.  Keys:
 *  - address: "-d A/32" (or /128), not inverted, with "-p P" and a single,
 *    not inverted "--dport N": the key is (A, P, N);
 *  - port: no "-d", "-p P" and "--dport N" as above: the key is (P, N).
 * Two rules with different keys of one kind match disjoint packets, so a
 * tree over the keys, each leaf keeping its rules in chain order, sends
 * every packet through the same matching rules in the same order as the
 * linear chain.  Address and port rules can overlap (a local address and a
 * node port); the address subtree comes first, and an address rule with
 * an earlier port rule of the same (P, N) is put into the port subtree
 * (in chain order), which keeps that order exact too.
 *
 * Tree: the keyed rules are bucketed by fixed, aligned ranges: addresses
 * by prefixes of 4 more bits per level (/4, /8, ... /32), ports per
 * protocol by ranges of 4 more bits (4096 ports, 256, 16, 1).  A range with
 * more than leaf_max rules is split into its 16 sub-ranges (only the
 * non-empty ones get a chain); a split range with only one non-empty
 * sub-range gets no chain of its own (its parent jumps to the sub-range).
 * The root (the dispatched chain) always splits.  So the tree is a
 * function of the keys present, not of history, and adding or removing
 * one rule rewrites its leaf, and only when the leaf appears, disappears,
 * splits or merges also its parent, or the up to 16 chains of the split.
 *
 * Tree chains are named KUBE-DSP- + 16 characters of base32(SHA-256(
 * "<table>/<chain>/<range>")), e.g. of "nat/KUBE-SERVICES/172.30.0.0/16"
 * or "nat/KUBE-NODEPORTS/tcp:30000-30015"; the rule jumping to one carries
 * the comment "<chain> <range>" and matches the range (-d prefix, or
 * -p P --dport lo:hi).
 */
#ifndef SVCNAT_CORE_DISPATCH_H
#define SVCNAT_CORE_DISPATCH_H

#include <stddef.h>

#include "core/chainname.h"
#include "core/ruleset.h"

#define DISPATCH_PREFIX "KUBE-DSP-"

enum dispatch_mode {
	DISPATCH_AUTO,   /* the tree from threshold keyed rules on, else linear */
	DISPATCH_LINEAR, /* kube-proxy's layout */
	DISPATCH_TREE,   /* the tree whatever the size (tests) */
};

/* "auto"/"linear"/"tree" -> mode; -EINVAL for anything else. */
int dispatch_mode_parse(const char *s, enum dispatch_mode *ret);
const char *dispatch_mode_name(enum dispatch_mode m);

struct dispatch_params {
	enum dispatch_mode mode;
	size_t threshold; /* auto: dispatch a chain with at least this many keyed rules */
	size_t leaf_max;  /* most rules in a leaf before it splits (>= 1) */
};

struct dispatch_stats {
	size_t chains; /* tree chains created (KUBE-DSP-) */
	size_t trees;  /* chains dispatched as a tree */
};

/*
 * Dispatch chain `name` of table t in rs as described above (nothing
 * happens when the mode or the threshold says linear, or the chain does
 * not exist).  The chain's rules are replaced; jump targets and strings
 * stay in rs's arena.  Returns 0, -ENOMEM (rs may then hold some tree
 * chains: the caller frees it), -EINVAL (leaf_max 0).  stats (may be
 * NULL) is added to.
 */
int dispatch_chain(struct ruleset *rs, struct chain_hasher *h, enum rs_table t, const char *name,
		   const struct dispatch_params *p, struct dispatch_stats *stats);
/*
 * Reusing the tree of a previous plan: old holds that plan's tree chains
 * (same table, chain, mode and leaf_max), changed the rules added to or
 * removed from the chain since (both versions of a changed rule).  A
 * range no changed key falls in gets no new chain: the parent jumps to
 * old's chain of that name, which is appended to kept (with its whole
 * subtree it is the caller's to keep; the caller frees kept).
 */
struct dispatch_reuse {
	struct ruleset *old;
	const struct rs_rule *changed;
	size_t n_changed;
	struct rs_chain **kept;
	size_t n_kept, cap_kept;
};

/*
 * The same, but the tree chains are created in crs (the plan store's
 * scratch ruleset); the jumps to them name crs's chain objects, their
 * strings are in rs's arena.  reuse may be NULL.
 */
int dispatch_chain_into(struct ruleset *rs, struct ruleset *crs, struct chain_hasher *h,
			enum rs_table t, const char *name, const struct dispatch_params *p,
			struct dispatch_stats *stats, struct dispatch_reuse *reuse);

#endif
