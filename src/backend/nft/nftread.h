/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Reading the live nf_tables tables `ip filter`, `ip nat`, `ip6 filter` and
 * `ip6 nat` back into the rule model, rule by rule with nftreadrule.h, and
 * keeping what a writer needs besides the rules: chain and rule handles,
 * the built-in chains' hooks, and which of svcnat's chains other programs'
 * rules jump to.
 */
#ifndef SVCNAT_BACKEND_NFTREAD_H
#define SVCNAT_BACKEND_NFTREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/netlink.h>

#include "backend/nft/nftbatch.h"
#include "backend/writer.h"
#include "core/diag.h"
#include "core/ruleset.h"

/* A live chain svcnat reads (its own, or a built-in one).  Pointers and
 * counts first, the flags together at the end: a restart holds one for
 * each of 100,000 chains. */
struct nftread_chain {
	struct rs_chain *c;   /* in its family's nftread_family.rs */
	uint64_t handle;      /* chain handle */
	uint64_t *handles;    /* handles[i] is c->rules[i]'s, unless stale (or handles_lazy) */
	size_t cap_handles;
	/* The plan's content stamp (struct rs_chain.stamp) of the rules c
	 * holds, known equal; 0: unknown (as read from the kernel). */
	uint64_t stamp;
	/* Rules not decoded (nftkeep.h's bytes): n_lazy of them, lazy_len
	 * bytes at lazy, either in the state's keep_buf (taken from the
	 * previous process's file) or in lazy_own (malloc'ed, the chain's
	 * own: what a sync left packed, nftkeep_chain_pack()); c holds none
	 * until nftkeep_chain_rules(). */
	const uint8_t *lazy;
	size_t lazy_len;
	void *lazy_own;
	uint32_t n_lazy;
	bool base;            /* has a hook */
	bool hook_ok;         /* built-in: hook, priority and type as iptables-nft makes them */
	bool stale;           /* rules as committed, handles unknown: reload before editing */
	bool gone;            /* deleted by svcnat since the read */
	bool planned;         /* nftdiff's: the plan being diffed has the chain */
	/* The lazy rules' handles are still the file's bytes in keep_buf
	 * (nftkeep.c knows where), not in handles: nftkeep_chain_rules()
	 * decodes both.  Only with lazy, never with stale. */
	bool handles_lazy;
};

struct nftread_table {
	bool exists;
	struct nftread_chain *chains; /* sorted by name once read */
	size_t n, cap;
	/* Names of svcnat's chains that rules svcnat does not own jump to
	 * (sorted; in the family's rs arena): such a chain cannot be deleted. */
	const char **refs;
	size_t n_refs, cap_refs;
	/* Chains the batch being built writes (borrowed names, until
	 * nftdiff_committed()). */
	const char **touched;
	size_t n_touched, cap_touched;
	/* Chains of other programs in this table (sorted; in the family's arena). */
	const char **others;
	size_t n_others, cap_others;
};

/* The two tables of one family. */
struct nftread_family {
	bool read;            /* read at genid (else empty) */
	struct ruleset *rs;   /* svcnat's chains, and built-in chains with svcnat's jumps */
	struct nftread_table t[RS_NTABLES];
	size_t arena_kept;    /* rs's arena bytes after nftread_compact() */
};

/*
 * The live state, family by family: each family is read when a sync first
 * needs it, and only at the generation the other was read at, so the
 * whole is one consistent picture of the ruleset.
 */
struct nftread_state {
	struct nftread_family f[2]; /* [enum writer_family] */
	uint32_t genid;             /* generation the state was read at */
	void *keep_buf;             /* what lazy chains point into (malloc'ed), or NULL */
	size_t keep_len;            /* its bytes */
	/* Rules of user chains were decoded (read, reloaded) since the last
	 * nftkeep_pack(). */
	bool unpacked;
};

/* An empty state (no family read yet).  NULL on ENOMEM. */
struct nftread_state *nftread_state_new(void);
void nftread_state_free(struct nftread_state *st);

/* The heap bytes st holds: each family's rules (ruleset_bytes()), chain
 * records, rule handles, name lists, the bytes of chains not decoded
 * (lazy: their own, and keep_buf whole).  0 for NULL. */
size_t nftread_state_bytes(const struct nftread_state *st);

/*
 * Read family f's two tables into st, consistently (again while the
 * generation moves), replacing what st held of f.  When another family of
 * st was read already, f is read only at st->genid: -EAGAIN (without a
 * diag) when the ruleset moved since.  A chain is svcnat's when
 * owned_chain_ours(plan, ...) holds; the built-in chains keep only the
 * rules that jump to such a chain.  plan may be NULL.  0 or -errno with a
 * diag.
 */
int nftread_family(struct nftsock *s, struct nftread_state *st, enum writer_family f,
		   const struct ruleset *plan, struct diag_list *d);

/* Forget ch's undecoded rules (lazy), freeing their bytes when they are
 * ch's own; ch->c's decoded rules stay. */
void nftread_chain_unlazy(struct nftread_chain *ch);

/*
 * The strings of decoded rules (a read, a reload, a chain compared) stay
 * in their family's arena when the chains go back to bytes
 * (nftkeep_pack()): once they take more than twice what the last
 * compaction kept (and 4 MiB), a family's chains, rules and names move
 * to a fresh ruleset and the old one goes.  Only between transactions
 * (touched names are borrowed).  0 or -ENOMEM (st unchanged).
 */
int nftread_compact(struct nftread_state *st);

/* The chain named `name` of table t of family f, or NULL. */
struct nftread_chain *nftread_find(const struct nftread_state *st, enum writer_family f,
				   enum rs_table t, const char *name);

/* Whether table t of family f has another program's chain `name`. */
bool nftread_other(const struct nftread_state *st, enum writer_family f, enum rs_table t,
		   const char *name);

/* Whether a rule svcnat does not own jumps to chain `name` of table t of f. */
bool nftread_referenced(const struct nftread_state *st, enum writer_family f, enum rs_table t,
			const char *name);

/*
 * Re-read one chain's rules and handles (after a commit left its handles
 * unknown).  0, -EINTR (read everything again) or -errno.
 */
int nftread_chain_reload(struct nftsock *s, struct nftread_state *st, const struct ruleset *plan,
			 enum writer_family f, enum rs_table t, struct nftread_chain *ch);

/*
 * Whether the nf_tables notification nlh (a message of NFNLGRP_NFTABLES)
 * may change what st holds.  Only a rule added to or deleted from another
 * program's chain or a built-in chain does not, unless it is one of
 * svcnat's jumps or may jump to a chain that is not another program's;
 * anything else in an ip or ip6 filter or nat table matters (chains, sets,
 * the table; a rule of svcnat's chains; anything of a family st has not
 * read).  Other tables and families, and NFT_MSG_NEWGEN, do not.  True
 * when in doubt.
 */
bool nftread_event_matters(const struct nftread_state *st, const struct nlmsghdr *nlh);

#endif
