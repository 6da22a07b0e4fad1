/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the direct writer wrote into a legacy xtables table at its last
 * write, or found there equal to its plan when it had nothing to write:
 * per planned user chain its name, the plan's content stamp (struct
 * rs_chain.stamp) its rules encode, their count and byte length, and a
 * keyed 128-bit digest (SipHash-2-4, xtsip.h) of its entries as the kernel
 * holds them.  Kept from sync to sync so that unchanged chains cost no
 * decoding and comparing rule by rule; the table's bytes are not kept
 * (an unchanged chain is copied from the table read at the next sync).
 *
 * Never trusted by itself.  A planned chain is taken as the kernel holds
 * it without looking at its rules only when
 *   1. the plan's chain carries the kept chain's nonzero stamp (so its
 *      rules are the ones that were written), and
 *   2. the kernel's chain, as read in this sync, has the kept count, length
 *      and digest.  The digest covers every byte of each entry except what
 *      the kernel keeps there itself (comefrom, the packet counters); a
 *      jump counts by the name of the chain it reaches, a fall-through as
 *      such, so chains moved by others still match.  The key is random per
 *      writer, so another program cannot aim at a digest.
 * Whatever another program changed in the chain fails 2, and the chain is
 * compared rule by rule.
 */
#ifndef SVCNAT_BACKEND_XTKEPT_H
#define SVCNAT_BACKEND_XTKEPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/netfilter/x_tables.h>

#include "backend/xt/xttable.h"

struct xtk_key {
	uint8_t b[16];
};

struct xtk_digest {
	uint8_t b[16];
};

struct xtk_chain {
	struct xtk_digest digest;
	uint64_t stamp;    /* of the plan's chain these rules encode (nonzero) */
	uint32_t len;      /* bytes of its rules, its RETURN excluded */
	uint32_t n_rules;
	char name[XT_FUNCTION_MAXNAMELEN];
};

struct xtk_table {
	struct xtk_chain *ch; /* planned chains, in name order (strcmp) */
	size_t n_ch, cap_ch;
};

/* A random key (getrandom).  0 or -errno. */
int xtk_key_init(struct xtk_key *key);

/* Free everything kept; kp is empty afterwards.  NULL-safe. */
void xtk_done(struct xtk_table *kp);

/* The bytes kp holds (its chain records). */
size_t xtk_bytes(const struct xtk_table *kp);

/*
 * Room for n chains more, their records zeroed from kp->ch[kp->n_ch] on
 * (the caller fills them, in name order, and counts them into n_ch).
 * 0 or -ENOMEM.
 */
int xtk_reserve(struct xtk_table *kp, size_t n);

/* Take over the chains of from; what kp held before is freed, from is empty. */
void xtk_adopt(struct xtk_table *kp, struct xtk_table *from);

/* The name of the user chain whose first rule (its RETURN if it has none)
 * is at table offset off, or NULL. */
typedef const char *xtk_chain_at_fn(void *ctx, uint32_t off);

/*
 * The digest with key of the len bytes of entries of family f that start
 * at table offset from in the table at blob (offset 0).  at names the
 * chains jumps reach.  0; -EINVAL when an entry runs past the end or a
 * jump reaches no user chain's start (such a chain is not to be taken).
 */
int xtk_digest(const struct xtk_key *key, const struct xt_fam *f, const unsigned char *blob,
	       uint32_t from, uint32_t len, xtk_chain_at_fn *at, void *ctx,
	       struct xtk_digest *ret);

/* xtk_chain_at_fn of a table as read: its user chains (ctx: the xtt_table). */
const char *xtk_read_chain_at(void *ctx, uint32_t off);

/* Set xtt_chain.kept of every user chain of k (its namesake in kp, or 0). */
void xtk_pair(const struct xtk_table *kp, struct xtt_table *k);

/* Whether k's user chain kc (paired by xtk_pair) holds what kp kept for it
 * with this stamp (conditions 1 and 2 above). */
bool xtk_same(const struct xtk_key *key, const struct xtk_table *kp, const struct xtt_table *k,
	      const struct xtt_chain *kc, uint64_t stamp);

/*
 * A table read whose bytes go back to the system as the new table's
 * copies of its chains consume them (the read and the table built from it
 * are otherwise both whole at a sync's peak).  The read's mapping is cut
 * in chunks; each copy to come is announced first (xtk_drop_need()), and a
 * chunk is given back (MADV_DONTNEED: it reads as zeros afterwards) once
 * every byte announced in it was copied (xtk_drop_copied()).  A chunk in
 * which nothing was announced is never given back.  Announce each byte at
 * most once and read no byte of the mapping after its copy was reported.
 */
struct xtk_drop {
	unsigned char *map; /* the mapping (page aligned) */
	size_t len;
	size_t chunk;       /* bytes per chunk, a multiple of the page size */
	uint32_t *need;     /* per chunk: announced bytes not yet copied */
	size_t n;
	size_t released;    /* bytes given back so far */
};

/* Chunks of a table read given back as their copies are done. */
#define XTK_DROP_CHUNK (2u << 20)

/* Track the len bytes at map (page aligned) in chunks of chunk bytes (a
 * multiple of the page size, at most 2 GiB).  0 or -EINVAL, -ENOMEM. */
int xtk_drop_init(struct xtk_drop *dp, void *map, size_t len, size_t chunk);

/* The len bytes at p (inside the mapping) are to be copied; before any
 * xtk_drop_copied(), from one thread. */
void xtk_drop_need(struct xtk_drop *dp, const void *p, size_t len);

/* The len bytes at p, announced, are copied: the chunks no announced byte
 * is left in are given back.  Any thread, at the same time as others. */
void xtk_drop_copied(struct xtk_drop *dp, const void *p, size_t len);

/* Every copy is done (or will not be made): give back every chunk not
 * given back yet.  After the copies' threads are done. */
void xtk_drop_rest(struct xtk_drop *dp);

/* Stop tracking (nothing more is given back).  NULL-safe. */
void xtk_drop_done(struct xtk_drop *dp);

#endif
