/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The writer interface: what backend.c (the one transaction) asks of each
 * way of writing the kernel's tables (direct.c, iptc.c, restore.c and
 * nft/, each for both families).  A writer knows only how it reads,
 * encodes and commits a table; the driver owns the rest: the
 * xtables lock, the plan's jump-target check, the order of the tables, the
 * bounded EAGAIN retry, putting tables back when a later one is refused,
 * and the messages that say what the kernel holds afterwards.
 *
 * One transaction, as the driver runs it:
 *
 *   reset; prepare(t) for every table t          read, compare, encode
 *   commit(t1..tn)   (one call for every changed table when one_commit,
 *                     else one call per table, in order)
 *   on a refused commit: put_back(t) for every table already committed,
 *                        newest first (writers that can)
 *   on -EAGAIN from prepare or commit: all of the above again, a bounded
 *                        number of times
 *   reset
 *
 * prepare writes nothing; only commit and put_back change the kernel.
 * Tables are prepared and committed in the driver's order (the filter
 * tables before the nat ones, the nat table of the larger plan last, so
 * it never needs keeping).
 *
 * Returns: 0 or -errno, with a located diag for anything but -EAGAIN (the
 * driver words that one).  A writer never logs and never retries.
 */
#ifndef SVCNAT_BACKEND_WRITER_H
#define SVCNAT_BACKEND_WRITER_H

#include <stdbool.h>
#include <stddef.h>

#include "backend/backend.h"
#include "core/diag.h"
#include "core/owned.h"
#include "core/ruleset.h"

/* Address families of the tables a writer may be asked for. */
enum writer_family {
	WRITER_IPV4,
	WRITER_IPV6,
};

/* One table of one family: what prepare, commit, put_back and read name. */
struct writer_table {
	enum writer_family family;
	enum rs_table table;
};

/* "filter", "ip6 nat", ...: for messages.  Static storage. */
static inline const char *writer_table_name(const struct writer_table *t)
{
	if (t->family == WRITER_IPV6)
		return t->table == RS_NAT ? "ip6 nat" : "ip6 filter";
	return rs_table_name(t->table);
}

/* What every writer is built from (strings borrowed from the backend). */
struct writer_config {
	const char *lock_path;   /* the xtables lock */
	unsigned lock_wait_ms;   /* how long a writer's own tool may wait for it */
	const char *restore_cmd; /* restore writer: the iptables-restore binary */
	bool verbose;            /* timing notes in the diags */
	/* Where a writer keeps what it knows of the tables for the next
	 * process (keepfile.h); NULL: nowhere. */
	const char *keep_dir;
	unsigned threads;        /* backend_options' */
	par_runner par;
};

struct writer;

struct writer_ops {
	const char *name; /* "direct", "libiptc", ...: the diags' source */
	/* The driver holds the xtables lock from the first prepare to the
	 * last commit or put_back (writers that lock by themselves, such as
	 * iptables-restore -w, say false). */
	bool needs_xtables_lock;
	/* commit takes every changed table in one call (the writer then
	 * sends them together; say in ret_done which ones landed). */
	bool one_commit;
	/* prepare, commit, put_back and read take WRITER_IPV6 tables too
	 * (false: the driver never asks for them). */
	bool ipv6;

	/*
	 * Read table tab, compare it with plan->t[tab->table] and, when they
	 * differ, encode the new contents; write nothing.  keep: the driver
	 * may ask for put_back of this table after committing it, so what
	 * was read must stay until reset (otherwise the writer may free it
	 * as early as it likes).  *ret_changed: whether commit has anything
	 * to write.  Counts chains and rules into res (zeroed by the driver
	 * before each attempt).  -EAGAIN: the table changed while it was
	 * read; -EINVAL: the plan cannot be written (diag).
	 */
	int (*prepare)(struct writer *w, const struct writer_table *tab, const struct ruleset *plan,
		       bool keep, bool *ret_changed, struct apply_result *res,
		       struct diag_list *d);

	/*
	 * Write the prepared tables tabs[0..n) (n == 1 unless one_commit),
	 * each of which prepare found changed.  ret_done[i]: table i now
	 * holds the new contents; set on success and failure alike (a
	 * one_commit writer whose tool commits table by table may have
	 * landed some before the refusal).  -EAGAIN: the kernel's table
	 * changed since prepare and the writer wrote nothing of it.
	 */
	int (*commit)(struct writer *w, const struct writer_table *tabs, size_t n, bool *ret_done,
		      struct diag_list *d);

	/*
	 * Put table tab, committed by this transaction and prepared with
	 * keep, back to what prepare read: the same rules, chains and packet
	 * counters.  NULL when the writer cannot (an atomic one never
	 * needs to).
	 */
	int (*put_back)(struct writer *w, const struct writer_table *tab, struct diag_list *d);

	/* Forget everything prepared and read. */
	void (*reset)(struct writer *w);

	/*
	 * Append to out the live state svcnat owns or plans in table tab:
	 * every chain for which owned_chain_ours(plan, ...) holds, with its
	 * rules, and the built-in chains with only the rules that jump to
	 * such a chain (plan may be NULL).  A live rule svcnat cannot
	 * represent comes back with t.kind == OWNED_T_FOREIGN and its
	 * description in m[0].u.comment.  Takes no lock (iptables-save takes
	 * none).  -EAGAIN: the table changed while it was read.
	 */
	int (*read)(struct writer *w, const struct writer_table *tab, const struct ruleset *plan,
		    struct ruleset *out, struct diag_list *d);

	void (*free)(struct writer *w);

	/* The bytes the writer keeps from sync to sync (what it read or
	 * wrote, to compare the next plan with); NULL: it keeps nothing. */
	size_t (*kept_bytes)(const struct writer *w);
};

/* Each writer's state starts with this. */
struct writer {
	const struct writer_ops *ops;
	struct writer_config cfg;
};

/* Constructors: 0 or -errno with a diag.  The writer borrows cfg's strings. */
int writer_direct_new(const struct writer_config *cfg, struct writer **ret, struct diag_list *d);
int writer_iptc_new(const struct writer_config *cfg, struct writer **ret, struct diag_list *d);
int writer_restore_new(const struct writer_config *cfg, struct writer **ret,
		       struct diag_list *d);
/* nf_tables (nft.c): ip and ip6 tables (ip6 where the kernel runs IPv6); no
 * xtables lock; one batch for all. */
int writer_nft_new(const struct writer_config *cfg, struct writer **ret, struct diag_list *d);

#endif
