/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Shared between the backend implementations (backend.c, iptc.c,
 * restore.c); not part of the public backend interface.
 */
#ifndef SVCNAT_BACKEND_INTERNAL_H
#define SVCNAT_BACKEND_INTERNAL_H

#include <stdbool.h>

#include "backend/backend.h"

struct backend;

/* rs_target.kind of a live rule the model cannot represent. */
#define BACKEND_T_FOREIGN 0xff

struct backend_ops {
	/* Sync the kernel to rs; cleanup passes an empty ruleset. */
	int (*apply)(struct backend *b, const struct ruleset *rs, struct apply_result *res,
		     struct diag_list *d);
	/*
	 * Read the live state svcnat owns or plans: every chain for which
	 * backend_chain_ours(plan, ...) holds, with its rules, and the built-in
	 * chains with only the rules that jump to such a chain (plan may be
	 * NULL).  A live rule svcnat cannot represent is
	 * returned with t.kind == BACKEND_T_FOREIGN and its description in
	 * m[0].u.comment.
	 */
	int (*read)(struct backend *b, const struct ruleset *plan, struct ruleset **ret,
		    struct diag_list *d);
	void (*done)(struct backend *b);
};

struct backend {
	const struct backend_ops *ops;
	enum backend_kind kind;
	struct backend_options o; /* strings point into the copies below */
	char *lock_path;
	char *restore_cmd;
	char *save_cmd;
	void *priv;
};

/*
 * Ownership, as kube-proxy's CleanupLeftovers draws it: the fixed chains
 * of each table and every per-service chain (KUBE-SVC-, KUBE-SVL-,
 * KUBE-EXT-, KUBE-FW-, KUBE-SEP-, the older KUBE-XLB-).  Chains of kubelet
 * (KUBE-FIREWALL, KUBE-MARK-DROP, KUBE-KUBELET-CANARY) are not owned.
 */
bool backend_chain_owned(enum rs_table t, const char *name);

/* Owned, or named by the plan (rs may be NULL). */
bool backend_chain_ours(const struct ruleset *rs, enum rs_table t, const char *name);

/*
 * Rules equal as the kernel stores them: MARK ops that encode the same
 * (mark, mask) pair and probabilities with the same 2^-31 fixed point are
 * equal.  A BACKEND_T_FOREIGN rule equals nothing.
 */
bool backend_rule_same(const struct rs_rule *a, const struct rs_rule *b);

/*
 * What errno err from a legacy xtables call means for a user, in words;
 * NULL when there is nothing to add to strerror().  commit: the error came
 * from replacing the table (as opposed to reading it).
 */
const char *backend_xt_errno_meaning(int err, bool commit);

/* Every jump in the plan names a planned user chain; -EINVAL with a diag. */
int backend_check_plan_targets(const struct ruleset *rs, enum rs_table t, struct diag_list *d);

/* Copy the strings a decoded rule points to into rs's arena; -ENOMEM. */
int backend_rule_copy_strings(struct ruleset *rs, struct rs_rule *r);

/*
 * svcnat's live jump rules in a built-in chain against the plan's jumps:
 * each of the nl live jumps is matched to the first plan jump (of np) it
 * equals (same(ctx, i, j)) that no earlier live jump took.  They must be
 * the plan's jumps, each once, in plan order: on return match[i] is the
 * plan jump live jump i stays as, or -1 when it goes (unmatched, or every
 * one when the matched ones are out of order), and kept[j] the live jump
 * plan jump j is, or -1 when it is to be inserted (after the nearest kept
 * predecessor, else at the top).  Returns whether anything changes.
 * match has nl slots, kept np; -ENOMEM.
 */
int backend_jumps_match(size_t nl, size_t np, bool (*same)(void *ctx, size_t i, size_t j),
			void *ctx, long *match, long *kept);

/* The (mark, mask) pair the kernel stores for a MARK target. */
void backend_mark_encode(const struct rs_target *t, uint32_t *ret_mark, uint32_t *ret_mask);

/*
 * Take the xtables lock as iptables does (open O_CREAT 0600, flock
 * LOCK_EX), waiting at most wait_ms.  *ret_fd holds it until closed.
 * -EBUSY with a diag naming the path and, when /proc/locks tells, the
 * holder's pid and command.
 */
int backend_xtables_lock(const char *path, unsigned wait_ms, int *ret_fd, struct diag_list *d);

/* Constructors of the implementations. */
int backend_iptc_init(struct backend *b, struct diag_list *d);
int backend_direct_init(struct backend *b, struct diag_list *d);
int backend_restore_init(struct backend *b, struct diag_list *d);

/*
 * Run argv (PATH lookup) with `in` on its stdin; collect stdout and stderr
 * (NUL-terminated, caller frees; either ret may be NULL).  *ret_status is
 * the exit code, 127 when the command could not be run, 128+N on signal N.
 * Returns 0 or -errno for a failure to run it at all.
 */
int backend_run(const char *const argv[], const char *in, size_t inlen, char **ret_out,
		char **ret_err, int *ret_status);

/* A monotonic clock in seconds. */
double backend_now(void);

#endif
