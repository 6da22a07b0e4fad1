/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A legacy xtables table of either family as one read gives it
 * (IPT_SO_GET_INFO and IPT_SO_GET_ENTRIES, or the IP6T_ ones): its entries
 * indexed, its chains found (built-in ones by the hook offsets, user
 * chains by their ERROR heads), jumps resolved to chains.  The direct
 * writer (direct.c) reads with it, compares and builds the new table.
 */
#ifndef SVCNAT_BACKEND_XTTABLE_H
#define SVCNAT_BACKEND_XTTABLE_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/xt/xtentry.h"
#include "core/diag.h"
#include "core/ruleset.h"

/* A chain of the table as read. */
struct xtt_chain {
	const char *name; /* into the blob, or a hook's name */
	int hook;         /* NF_INET_* of a built-in chain; -1 for a user chain */
	uint32_t first;   /* offset of the first rule (the tail's if empty) */
	size_t first_idx; /* entry index of the first rule */
	size_t n_rules;   /* rules before the tail */
	size_t tail_idx;  /* entry index of the tail: RETURN, or the policy */
	/* The writer's, zero after the read: */
	uint8_t fate;
	bool placed;     /* written into the new table, its rules from ofirst */
	uint32_t ofirst;
	uint32_t kept;   /* 1 + index of its namesake in what was kept (xtkept.h), 0: none */
	const struct rs_chain *pc;
	unsigned foreign_refs;
};

/* The kernel's table as read.  ipt_getinfo and ipt_get_entries are
 * ip6t_getinfo's and ip6t_get_entries' layout too. */
struct xtt_table {
	const struct xt_fam *f;
	struct ipt_getinfo info;
	struct ipt_get_entries *ge;
	size_t ge_len;
	const unsigned char *blob;
	uint32_t *eoff; /* offset of each entry */
	size_t n_ent;
	struct xtt_chain *ch; /* in blob order: ascending .first */
	size_t n_ch, cap_ch;
	struct xtt_chain **by_name; /* user chains sorted by name */
	size_t n_by_name;
	/* chains by first offset (open addressing, 1 + index into ch, 0:
	 * empty; at_mask + 1 slots); NULL: xtt_chain_at() searches ch */
	uint32_t *at;
	size_t at_mask;
};

/*
 * Read table `table` of family f through fd (a raw socket of f's family)
 * into *k (zeroed first; xtt_done() frees it, also after a failure).
 * -EAGAIN: the table changed between the two calls; -EPROTO: its layout
 * is not what the kernel writes; other -errno.  Diags from who, naming the
 * table as tname ("ip6 nat", ...).
 */
int xtt_read(struct xtt_table *k, int fd, const struct xt_fam *f, const char *table,
	     const char *who, const char *tname, struct diag_list *d);
void xtt_done(struct xtt_table *k);

/* "the kernel's table has an unexpected layout at byte off: why"; -EPROTO. */
int xtt_bad_layout(struct diag_list *d, const char *who, const char *tname, uint32_t off,
		   const char *why);

/* Entry idx (struct ipt_entry or struct ip6t_entry, as k->f says). */
static inline const void *xtt_entry(const struct xtt_table *k, size_t idx)
{
	return k->blob + k->eoff[idx];
}

static inline const struct xt_entry_target *xtt_target(const struct xt_fam *f, const void *e)
{
	return (const struct xt_entry_target *)((const unsigned char *)e +
						 xt_fam_target_offset(f, e));
}

bool xtt_target_is(const struct xt_fam *f, const void *e, const char *name);

/* The chain whose first rule is at offset off (user or built-in), or NULL. */
const struct xtt_chain *xtt_chain_at(const struct xtt_table *k, uint32_t off);

/* The user chain named name, or NULL. */
struct xtt_chain *xtt_find(const struct xtt_table *k, const char *name);

/* The user chain entry idx jumps to, or NULL (a verdict, a fall-through,
 * or not a standard target). */
const struct xtt_chain *xtt_jump(const struct xtt_table *k, size_t idx);

/* Entry idx as a rule (strings into the table); -EINVAL with a reason in why. */
int xtt_decode(const struct xtt_table *k, size_t idx, struct rs_rule *r, char *why,
	       size_t whylen);

/*
 * Buffers for tables, which run to hundreds of MB: mapped with transparent
 * huge pages where the kernel allows it.  NULL when out of memory;
 * xtt_big_free(NULL, ...) is a no-op.
 */
void *xtt_big_alloc(size_t len);
void *xtt_big_grow(void *p, size_t old, size_t len);
void xtt_big_free(void *p, size_t len);

#endif
