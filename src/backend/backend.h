/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Backends apply a planned ruleset to the kernel: one transaction
 * (backend.c) over one of four writers (writer.h): libiptc (in-process,
 * legacy xtables), direct (in-process, legacy xtables through the kernel's
 * socket options without libiptc), nft (in-process, nf_tables over netlink
 * in iptables-nft's encoding) and restore (pipes rendered text to
 * iptables-restore --noflush / iptables-nft-restore).
 *
 * Ownership: svcnat owns chains named KUBE-* in filter and nat, and its
 * jump rules in the built-in chains; nothing else is touched.
 */
#ifndef SVCNAT_BACKEND_BACKEND_H
#define SVCNAT_BACKEND_BACKEND_H

#include <stdbool.h>
#include <stdio.h>

#include "core/diag.h"
#include "core/ruleset.h"
#include "util.h"

enum backend_kind {
	BACKEND_AUTO,
	BACKEND_LIBIPTC,
	BACKEND_RESTORE,
	BACKEND_DIRECT,
	BACKEND_NFT,
};

struct backend_options {
	enum backend_kind kind;
	const char *lock_path;   /* xtables lock, default /run/xtables.lock */
	unsigned lock_wait_ms;   /* bounded wait for the lock (default 5000) */
	unsigned commit_retries; /* on EAGAIN (table changed under us), default 3 */
	const char *restore_cmd; /* restore backend: iptables-restore binary (auto) */
	/* Where the nft writer keeps its state for the next process
	 * (backend/keepfile.h): NULL for $SVCNAT_RUNTIME_DIR or /run/svcnat;
	 * "": nowhere (every start reads the tables). */
	const char *runtime_dir;
	bool verbose;
	/* Parts a writer may split a big table's encoding into, run by par
	 * (NULL or 1: one, on the calling thread; the bytes are the same). */
	unsigned threads;
	par_runner par;
};

struct apply_result {
	bool committed[RS_NTABLES]; /* false: that table already matched the plan */
	bool committed6[RS_NTABLES];/* the same for the ip6tables tables */
	size_t chains_created;
	size_t chains_replaced;
	size_t chains_deleted;
	size_t jumps_added;
	size_t rules_written;
	size_t messages;            /* nft: netlink write messages sent (0: nothing to do) */
	size_t bytes;               /* nft: bytes of those messages */
	double seconds;
	/* The parts of seconds (the last attempt's): reading and comparing the
	 * kernel's tables, encoding the new contents (writers that tell the
	 * two apart; 0 otherwise, read_seconds then holds both), writing. */
	double read_seconds;
	double encode_seconds;
	double write_seconds;
	/* After a failed apply: some table kept the new rules because putting
	 * it back failed too (the diags say which); false: the kernel keeps
	 * its previous rules. */
	bool partial;
};

struct backend;

/* Parse "auto" / "libiptc" / "direct" / "restore" / "nft"; -EINVAL otherwise. */
int backend_kind_parse(const char *s, enum backend_kind *ret);
const char *backend_kind_name(enum backend_kind k);

/* Create a backend; BACKEND_AUTO picks by the host's iptables.  0 or -errno
 * (with a diag saying why). */
int backend_new(const struct backend_options *o, struct backend **ret, struct diag_list *d);
void backend_free(struct backend *b);
enum backend_kind backend_kind_of(const struct backend *b);

/* A backend over writer w (taken over, also on failure): for tests. */
struct writer;
int backend_new_over(const struct backend_options *o, struct writer *w, struct backend **ret);

/*
 * Make the kernel's owned chains and jump rules equal the plan: every
 * table is read and encoded before the first is written, no commit for a
 * table that already matches.  On failure returns -errno with a diag with
 * the kernel's error in words, and the tables are as they were (a table
 * already committed is put back), unless res->partial says otherwise.
 */
int backend_apply(struct backend *b, const struct ruleset *rs, struct apply_result *res,
		  struct diag_list *d);
/*
 * The same for both families in one transaction: rs for iptables, rs6 (NULL:
 * IPv4 only) for ip6tables; the four tables are all written or none is.
 * -EINVAL for an rs6 the backend cannot write (backend_has_ipv6()).
 */
int backend_apply_families(struct backend *b, const struct ruleset *rs,
			   const struct ruleset *rs6, struct apply_result *res,
			   struct diag_list *d);
/* Whether the backend writes ip6tables too (its writer can, and the host's
 * ip6tables tools or tables are there). */
bool backend_has_ipv6(const struct backend *b);

/* The bytes b's writer keeps between syncs (writer_ops.kept_bytes), 0
 * when it keeps nothing or b is NULL. */
size_t backend_kept_bytes(const struct backend *b);

/*
 * Print what a sync would add ("+" lines) and remove ("-" lines), in
 * iptables-save rule syntax.  Returns 0 when equal, 1 when different, -errno.
 */
int backend_diff(struct backend *b, const struct ruleset *rs, FILE *out, struct diag_list *d);
/* Both families: iptables' lines, then "# ip6tables" and ip6tables' (rs6
 * non-NULL).  0 equal, 1 different, -errno. */
int backend_diff_families(struct backend *b, const struct ruleset *rs, const struct ruleset *rs6,
			  FILE *out, struct diag_list *d);

/* Remove every owned chain and jump rule (also kube-proxy's), in ip6tables
 * too when the backend writes it.  0 or -errno. */
int backend_cleanup(struct backend *b, struct diag_list *d);

#endif
