/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A legacy xtables table as read (xttable.h), for either family: one
 * IPT_SO_GET_INFO and one IPT_SO_GET_ENTRIES (the IP6T_ ones share their
 * values and structures, at the IPv6 level), then one pass over the
 * entries that finds the chains and checks the layout the kernel keeps.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include <linux/netfilter.h>

#include "backend/xt/xttable.h"
#include "util.h"

static const char *const hook_names[NF_INET_NUMHOOKS] = {
	[NF_INET_PRE_ROUTING] = "PREROUTING", [NF_INET_LOCAL_IN] = "INPUT",
	[NF_INET_FORWARD] = "FORWARD",        [NF_INET_LOCAL_OUT] = "OUTPUT",
	[NF_INET_POST_ROUTING] = "POSTROUTING",
};


/*
 * Tables run to hundreds of MB.  Their buffers are mapped with transparent
 * huge pages where the kernel allows it: one fault per 2 MiB instead of one
 * per 4 KiB, which under a hypervisor was a third of a sync's time.
 */
#define BIG_ALIGN (2u << 20)

static size_t big_round(size_t len)
{
	return (len + BIG_ALIGN - 1) & ~(size_t)(BIG_ALIGN - 1);
}

void *xtt_big_alloc(size_t len)
{
	void *p = mmap(NULL, big_round(len), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	(void)madvise(p, big_round(len), MADV_HUGEPAGE);
	return p;
}

void *xtt_big_grow(void *p, size_t old, size_t len)
{
	void *n;

	if (!p)
		return xtt_big_alloc(len);
	n = mremap(p, big_round(old), big_round(len), MREMAP_MAYMOVE);
	if (n == MAP_FAILED)
		return NULL;
	(void)madvise(n, big_round(len), MADV_HUGEPAGE);
	return n;
}

void xtt_big_free(void *p, size_t len)
{
	if (p)
		munmap(p, big_round(len));
}


/* One read's context, for its messages. */
struct rd {
	struct xtt_table *k;
	const char *who, *tname;
	struct diag_list *d;
};

static int rfail(const struct rd *s, const char *opt, int err)
{
	const char *mean = xt_errno_meaning(err, false);

	if (!err)
		err = EIO;
	diag_add(s->d, DIAG_ERROR, s->who, s->tname, NULL,
		 "reading the table (%s_SO_%s) failed: errno %d (%s)%s%s", s->k->f->so, opt, err,
		 strerror(err), mean ? ": " : "", mean ? mean : "");
	return -err;
}

int xtt_bad_layout(struct diag_list *d, const char *who, const char *tname, uint32_t off,
		   const char *why)
{
	diag_add(d, DIAG_ERROR, who, tname, NULL,
		 "the kernel's table has an unexpected layout at byte %u: %s", off, why);
	return -EPROTO;
}

static int bad_layout(const struct rd *s, uint32_t off, const char *why)
{
	return xtt_bad_layout(s->d, s->who, s->tname, off, why);
}

bool xtt_target_is(const struct xt_fam *f, const void *e, const char *name)
{
	return streq(xtt_target(f, e)->u.user.name, name);
}

/* --- reading the table --- */

static int kc_first_cmp(const void *key, const void *elem)
{
	uint32_t off = *(const uint32_t *)key;
	const struct xtt_chain *c = elem;

	return off < c->first ? -1 : off > c->first ? 1 : 0;
}

static const char *klabel(const void *e, void *ctx)
{
	const struct xtt_table *k = ctx;
	const struct xt_standard_target *st = (const void *)xtt_target(k->f, e);
	uint32_t off = (uint32_t)((const unsigned char *)e - k->blob);
	const struct xtt_chain *c;
	int v;

	if (st->target.u.target_size < XT_ALIGN(sizeof(*st)) ||
	    !streq(st->target.u.user.name, XT_STANDARD_TARGET))
		return NULL;
	v = st->verdict;
	if (v < 0)
		return xt_verdict_name(v);
	if ((uint32_t)v == off + xt_fam_next_offset(k->f, e))
		return "";
	c = xtt_chain_at(k, (uint32_t)v);
	return c && c->hook < 0 ? c->name : NULL;
}

static const char *klabel4(const struct ipt_entry *e, void *ctx)
{
	return klabel(e, ctx);
}

static const char *klabel6(const struct ip6t_entry *e, void *ctx)
{
	return klabel(e, ctx);
}

/* Kernel entry idx as a rule (strings into the table); -EINVAL with a reason. */
int xtt_decode(const struct xtt_table *k, size_t idx, struct rs_rule *r, char *why,
		   size_t whylen)
{
	const void *e = xtt_entry(k, idx);

	if (k->f->af == AF_INET6)
		return xt_entry_decode6(e, klabel6, (void *)k, r, why, whylen);
	return xt_entry_decode(e, klabel4, (void *)k, r, why, whylen);
}

static size_t at_slot(uint32_t off, size_t mask)
{
	/* entries start 8-aligned: the low bits say nothing */
	return (size_t)(((uint64_t)(off >> 3) * 0x9E3779B97F4A7C15ull) >> 32) & mask;
}

const struct xtt_chain *xtt_chain_at(const struct xtt_table *k, uint32_t off)
{
	if (!k->at)
		return bsearch(&off, k->ch, k->n_ch, sizeof(*k->ch), kc_first_cmp);
	for (size_t i = at_slot(off, k->at_mask);; i = (i + 1) & k->at_mask) {
		uint32_t v = k->at[i];

		if (!v)
			return NULL;
		if (k->ch[v - 1].first == off)
			return &k->ch[v - 1];
	}
}

/* Index the chains by first offset: every jump is resolved through it
 * (a bsearch over 100,000 chains showed in a sync's profile). */
static int index_at(struct xtt_table *k)
{
	size_t n = 16;

	while (n < 2 * k->n_ch)
		n *= 2;
	k->at = calloc(n, sizeof(*k->at));
	if (!k->at)
		return -ENOMEM;
	k->at_mask = n - 1;
	for (size_t c = 0; c < k->n_ch; c++) {
		size_t i = at_slot(k->ch[c].first, k->at_mask);

		/* an empty built-in chain's first is its policy: unique too */
		while (k->at[i])
			i = (i + 1) & k->at_mask;
		k->at[i] = (uint32_t)(c + 1);
	}
	return 0;
}

static int kc_name_cmp(const void *a, const void *b)
{
	return strcmp((*(struct xtt_chain *const *)a)->name, (*(struct xtt_chain *const *)b)->name);
}

struct xtt_chain *xtt_find(const struct xtt_table *k, const char *name)
{
	size_t lo = 0, hi = k->n_by_name;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(name, k->by_name[mid]->name);

		if (c == 0)
			return k->by_name[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

static int close_user_chain(const struct rd *s, struct xtt_chain *c, size_t next_idx)
{
	const void *tail;

	if (next_idx <= c->first_idx)
		return bad_layout(s, c->first, "a user chain without its RETURN entry");
	c->tail_idx = next_idx - 1;
	c->n_rules = c->tail_idx - c->first_idx;
	tail = xtt_entry(s->k, c->tail_idx);
	if (!xtt_target_is(s->k->f, tail, XT_STANDARD_TARGET) ||
	    ((const struct xt_standard_target *)xtt_target(s->k->f, tail))->verdict != XT_RETURN)
		return bad_layout(s, s->k->eoff[c->tail_idx], "a user chain not ending in RETURN");
	return 0;
}

/* The table's blob from the kernel: GET_INFO, then GET_ENTRIES. */
static int fetch(const struct rd *s, int fd, const char *table)
{
	struct xtt_table *k = s->k;
	socklen_t len = sizeof(k->info);

	snprintf(k->info.name, sizeof(k->info.name), "%s", table);
	/* IP6T_SO_GET_INFO and IP6T_SO_GET_ENTRIES have the IPT_ values. */
	if (getsockopt(fd, k->f->level, IPT_SO_GET_INFO, &k->info, &len) < 0)
		return rfail(s, "GET_INFO", errno);
	len = (socklen_t)(sizeof(*k->ge) + k->info.size);
	k->ge = xtt_big_alloc(len);
	if (!k->ge)
		return -ENOMEM;
	k->ge_len = len;
	memset(k->ge, 0, sizeof(*k->ge));
	snprintf(k->ge->name, sizeof(k->ge->name), "%s", table);
	k->ge->size = k->info.size;
	if (getsockopt(fd, k->f->level, IPT_SO_GET_ENTRIES, k->ge, &len) < 0) {
		/* EAGAIN: the table changed between the two calls. */
		if (errno == EAGAIN)
			return -EAGAIN;
		return rfail(s, "GET_ENTRIES", errno);
	}
	k->blob = (const unsigned char *)k->ge->entrytable;
	k->n_ent = k->info.num_entries;
	return 0;
}

/* Entry i at off is whole and inside the table: *ret_next its size. */
static int check_entry(const struct rd *s, uint32_t off, size_t i, size_t *ret_next)
{
	const struct xtt_table *k = s->k;
	const struct xt_fam *f = k->f;
	const void *e = k->blob + off;
	size_t hdr = f->size, next, to;

	if (i >= k->n_ent || k->info.size - off < hdr)
		return bad_layout(s, off, "a malformed entry");
	next = xt_fam_next_offset(f, e);
	to = xt_fam_target_offset(f, e);
	if (next < hdr + sizeof(struct xt_entry_target) || next > k->info.size - off || to < hdr ||
	    to > next - sizeof(struct xt_entry_target) || xtt_target(f, e)->u.target_size > next - to)
		return bad_layout(s, off, "a malformed entry");
	*ret_next = next;
	return 0;
}

/* The built-in chain whose hook starts at off, or -1. */
static int hook_at(const struct xtt_table *k, uint32_t off)
{
	int hook = -1;

	for (int h = 0; h < NF_INET_NUMHOOKS; h++)
		if ((k->info.valid_hooks & (1u << h)) && k->info.hook_entry[h] == off)
			hook = h;
	return hook;
}

/* The chains of the blob, entry by entry (k->eoff, k->ch). */
static int walk_entries(const struct rd *s)
{
	struct xtt_table *k = s->k;
	const struct xt_fam *f = k->f;
	struct xtt_chain *cur = NULL;
	bool ended = false;
	size_t i = 0;
	uint32_t off;

	for (off = 0; off < k->info.size; i++) {
		const void *e = k->blob + off;
		size_t next;
		int hook, r;

		r = check_entry(s, off, i, &next);
		if (r < 0)
			return r;
		k->eoff[i] = off;
		hook = hook_at(k, off);
		if (hook >= 0) {
			if (cur && cur->hook >= 0)
				return bad_layout(s, off, "a built-in chain without its policy");
			if (cur && close_user_chain(s, cur, i) < 0)
				return -EPROTO;
			if (GROW(k->ch, k->cap_ch, k->n_ch + 1) < 0)
				return -ENOMEM;
			cur = &k->ch[k->n_ch++];
			*cur = (struct xtt_chain){ .name = hook_names[hook], .hook = hook, .first = off,
						.first_idx = i };
		}
		/* (the first byte first: most entries are rules) */
		if (xtt_target(f, e)->u.user.name[0] == XT_ERROR_TARGET[0] &&
		    xtt_target_is(f, e, XT_ERROR_TARGET)) {
			const struct xt_error_target *et = (const void *)xtt_target(f, e);

			if (cur && cur->hook >= 0)
				return bad_layout(s, off, "a chain head inside a built-in chain");
			if (cur && close_user_chain(s, cur, i) < 0)
				return -EPROTO;
			cur = NULL;
			if (et->target.u.target_size < XT_ALIGN(sizeof(*et)) ||
			    !memchr(et->errorname, '\0', sizeof(et->errorname)))
				return bad_layout(s, off, "a malformed chain head");
			if (off + next == k->info.size) {
				ended = true;
				i++;
				break;
			}
			if (GROW(k->ch, k->cap_ch, k->n_ch + 1) < 0)
				return -ENOMEM;
			cur = &k->ch[k->n_ch++];
			*cur = (struct xtt_chain){ .name = et->errorname, .hook = -1,
						.first = (uint32_t)(off + next), .first_idx = i + 1 };
		} else if (cur && cur->hook >= 0 && k->info.underflow[cur->hook] == off) {
			cur->tail_idx = i;
			cur->n_rules = i - cur->first_idx;
			cur = NULL;
		} else if (!cur) {
			return bad_layout(s, off, "a rule outside any chain");
		}
		off += (uint32_t)next;
	}
	if (!ended || i != k->n_ent)
		return bad_layout(s, off, "the table does not end with its ERROR entry");
	return 0;
}

/* k->by_name: the user chains by name. */
static int index_names(struct xtt_table *k)
{
	bool sorted = true;

	k->by_name = malloc((k->n_ch + 1) * sizeof(*k->by_name));
	if (!k->by_name)
		return -ENOMEM;
	for (size_t c = 0; c < k->n_ch; c++) {
		if (k->ch[c].hook < 0) {
			k->by_name[k->n_by_name] = &k->ch[c];
			if (sorted && k->n_by_name)
				sorted = strcmp(k->by_name[k->n_by_name - 1]->name,
						k->ch[c].name) < 0;
			k->n_by_name++;
		}
	}
	/* svcnat and libiptc write user chains in name order: then the
	 * table's order is the sorted one, and a merge sort of sorted input
	 * would still cost n log n comparisons. */
	if (!sorted)
		qsort_safe(k->by_name, k->n_by_name, sizeof(*k->by_name), kc_name_cmp);
	return 0;
}

int xtt_read(struct xtt_table *k, int fd, const struct xt_fam *f, const char *table,
	     const char *who, const char *tname, struct diag_list *d)
{
	const struct rd rd = { .k = k, .who = who, .tname = tname, .d = d };
	int r;

	memset(k, 0, sizeof(*k));
	k->f = f;
	r = fetch(&rd, fd, table);
	if (r < 0)
		return r;
	k->eoff = malloc((k->n_ent + 1) * sizeof(*k->eoff));
	if (!k->eoff)
		return -ENOMEM;
	r = walk_entries(&rd);
	if (r < 0)
		return r;
	r = index_names(k);
	if (r < 0)
		return r;
	return index_at(k);
}

/* The user chain entry idx jumps to, or NULL (a verdict, a fall-through,
 * or not a standard target). */
const struct xtt_chain *xtt_jump(const struct xtt_table *k, size_t idx)
{
	const void *e = xtt_entry(k, idx);
	const struct xt_standard_target *st = (const void *)xtt_target(k->f, e);
	const struct xtt_chain *c;

	if (st->target.u.target_size < XT_ALIGN(sizeof(*st)) ||
	    !streq(st->target.u.user.name, XT_STANDARD_TARGET) || st->verdict < 0 ||
	    (uint32_t)st->verdict == k->eoff[idx] + xt_fam_next_offset(k->f, e))
		return NULL;
	c = xtt_chain_at(k, (uint32_t)st->verdict);
	return c && c->hook < 0 ? c : NULL;
}


void xtt_done(struct xtt_table *k)
{
	xtt_big_free(k->ge, k->ge_len);
	free(k->eoff);
	free(k->ch);
	free(k->by_name);
	free(k->at);
	memset(k, 0, sizeof(*k));
}

