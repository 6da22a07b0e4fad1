/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include <linux/netfilter_ipv4/ip_tables.h>
#include <linux/netfilter_ipv6/ip6_tables.h>

#include "backend/xt/xtkept.h"
#include "backend/xt/xtsip.h"
#include "util.h"

int xtk_key_init(struct xtk_key *key)
{
	size_t got = 0;

	while (got < sizeof(key->b)) {
		ssize_t n = getrandom(key->b + got, sizeof(key->b) - got, 0);

		if (n < 0 && errno != EINTR)
			return -errno;
		got += n > 0 ? (size_t)n : 0;
	}
	return 0;
}

void xtk_done(struct xtk_table *kp)
{
	if (!kp)
		return;
	free(kp->ch);
	memset(kp, 0, sizeof(*kp));
}

size_t xtk_bytes(const struct xtk_table *kp)
{
	return kp->cap_ch * sizeof(*kp->ch);
}

int xtk_reserve(struct xtk_table *kp, size_t n)
{
	if (n > SIZE_MAX / sizeof(*kp->ch) - kp->n_ch)
		return -ENOMEM;
	if (GROW(kp->ch, kp->cap_ch, kp->n_ch + n) < 0)
		return -ENOMEM;
	memset(kp->ch + kp->n_ch, 0, n * sizeof(*kp->ch));
	return 0;
}

void xtk_adopt(struct xtk_table *kp, struct xtk_table *from)
{
	xtk_done(kp);
	*kp = *from;
	memset(from, 0, sizeof(*from));
}

const char *xtk_read_chain_at(void *ctx, uint32_t off)
{
	const struct xtt_chain *c = xtt_chain_at(ctx, off);

	return c && c->hook < 0 ? c->name : NULL;
}

/* What a standard target's verdict stands for in the digest. */
enum { TAG_FALL = 1, TAG_JUMP = 2 };

int xtk_digest(const struct xtk_key *key, const struct xt_fam *f, const unsigned char *blob,
	       uint32_t from, uint32_t len, xtk_chain_at_fn *at, void *ctx,
	       struct xtk_digest *ret)
{
	/* up to comefrom (then padding on IPv6, the counters, the matches) */
	const size_t hdr = f->af == AF_INET6 ? offsetof(struct ip6t_entry, comefrom)
					     : offsetof(struct ipt_entry, comefrom);
	const size_t vat = offsetof(struct xt_standard_target, verdict);
	const size_t stsz = XT_ALIGN(sizeof(struct xt_standard_target));
	struct xt_sip sip;

	xt_sip_init(&sip, key->b);
	for (uint32_t off = 0; off < len;) {
		const unsigned char *e = blob + from + off;
		const struct xt_entry_target *t;
		uint16_t next, to;
		int32_t v;

		if (len - off < f->size)
			return -EINVAL;
		next = xt_fam_next_offset(f, e);
		to = xt_fam_target_offset(f, e);
		if (next > len - off || to < f->size || to + sizeof(*t) > next)
			return -EINVAL;
		xt_sip_update(&sip, e, hdr);
		t = (const void *)(e + to);
		if (t->u.target_size != stsz || t->u.user.name[0] != '\0' || to + stsz > next) {
			xt_sip_update(&sip, e + f->size, next - f->size);
			off += next;
			continue;
		}
		memcpy(&v, e + to + vat, sizeof(v));
		xt_sip_update(&sip, e + f->size, to + vat - f->size);
		if (v >= 0) {
			/* a jump: by what it reaches, not where that lies */
			uint32_t tag = (uint32_t)v == from + off + next ? TAG_FALL : TAG_JUMP;
			const char *name = tag == TAG_JUMP ? at(ctx, (uint32_t)v) : "";
			uint32_t nlen;

			if (!name)
				return -EINVAL;
			nlen = (uint32_t)strlen(name);
			xt_sip_update(&sip, &tag, sizeof(tag));
			xt_sip_update(&sip, &nlen, sizeof(nlen));
			xt_sip_update(&sip, name, nlen);
		} else {
			xt_sip_update(&sip, &v, sizeof(v));
		}
		xt_sip_update(&sip, e + to + vat + sizeof(v), next - to - vat - sizeof(v));
		off += next;
	}
	xt_sip_final(&sip, ret->b);
	return 0;
}

void xtk_pair(const struct xtk_table *kp, struct xtt_table *k)
{
	size_t q = 0;

	for (size_t i = 0; i < k->n_by_name; i++) {
		struct xtt_chain *kc = k->by_name[i];
		int c = 1;

		kc->kept = 0;
		while (q < kp->n_ch && (c = strcmp(kp->ch[q].name, kc->name)) < 0)
			q++;
		if (q < kp->n_ch && c == 0)
			kc->kept = (uint32_t)++q;
	}
}

bool xtk_same(const struct xtk_key *key, const struct xtk_table *kp, const struct xtt_table *k,
	      const struct xtt_chain *kc, uint64_t stamp)
{
	const struct xtk_chain *kk;
	struct xtk_digest d;
	uint32_t from, len;

	if (!kc->kept || !stamp || kc->hook >= 0)
		return false;
	kk = &kp->ch[kc->kept - 1];
	from = k->eoff[kc->first_idx];
	len = k->eoff[kc->tail_idx] - from;
	if (kk->stamp != stamp || kk->n_rules != kc->n_rules || kk->len != len)
		return false;
	if (xtk_digest(key, k->f, k->blob, from, len, xtk_read_chain_at, (void *)k, &d) < 0)
		return false;
	return memcmp(d.b, kk->digest.b, sizeof(d.b)) == 0;
}

int xtk_drop_init(struct xtk_drop *dp, void *map, size_t len, size_t chunk)
{
	long page = sysconf(_SC_PAGESIZE);

	*dp = (struct xtk_drop){ 0 };
	if (!map || page <= 0 || !chunk || chunk % (size_t)page || chunk > (1u << 31) ||
	    (uintptr_t)map % (size_t)page)
		return -EINVAL;
	dp->n = (len + chunk - 1) / chunk;
	dp->need = calloc(dp->n ? dp->n : 1, sizeof(*dp->need));
	if (!dp->need)
		return -ENOMEM;
	dp->map = map;
	dp->len = len;
	dp->chunk = chunk;
	return 0;
}

/* xtk_drop.need of a chunk given back (no chunk holds 2 GiB). */
#define DROP_GONE UINT32_MAX

/* How many of the bytes [off, end) of the mapping lie in off's chunk. */
static size_t chunk_part(const struct xtk_drop *dp, size_t off, size_t end)
{
	size_t next = (off / dp->chunk + 1) * dp->chunk;

	return (next < end ? next : end) - off;
}

/* Whether [p, p + len) is inside the mapping: its offset in *ret_off. */
static bool drop_range(const struct xtk_drop *dp, const void *p, size_t len, size_t *ret_off)
{
	const unsigned char *b = p;

	if (!dp->need || b < dp->map || (size_t)(b - dp->map) > dp->len ||
	    len > dp->len - (size_t)(b - dp->map))
		return false;
	*ret_off = (size_t)(b - dp->map);
	return true;
}

void xtk_drop_need(struct xtk_drop *dp, const void *p, size_t len)
{
	size_t off, end, part;

	if (!drop_range(dp, p, len, &off))
		return;
	for (end = off + len; off < end; off += part) {
		part = chunk_part(dp, off, end);
		dp->need[off / dp->chunk] += (uint32_t)part;
	}
}

void xtk_drop_copied(struct xtk_drop *dp, const void *p, size_t len)
{
	size_t off, end, part;

	if (!drop_range(dp, p, len, &off))
		return;
	for (end = off + len; off < end; off += part) {
		size_t c = off / dp->chunk, at = c * dp->chunk;
		size_t n = at + dp->chunk < dp->len ? dp->chunk : dp->len - at;

		part = chunk_part(dp, off, end);
		if (__atomic_sub_fetch(&dp->need[c], (uint32_t)part, __ATOMIC_ACQ_REL) == 0 &&
		    madvise(dp->map + at, n, MADV_DONTNEED) == 0) {
			__atomic_store_n(&dp->need[c], DROP_GONE, __ATOMIC_RELAXED);
			__atomic_add_fetch(&dp->released, n, __ATOMIC_RELAXED);
		}
	}
}

void xtk_drop_rest(struct xtk_drop *dp)
{
	for (size_t c = 0; dp->need && c < dp->n; c++) {
		size_t at = c * dp->chunk, n = at + dp->chunk < dp->len ? dp->chunk : dp->len - at;

		if (dp->need[c] == DROP_GONE || madvise(dp->map + at, n, MADV_DONTNEED) < 0)
			continue;
		dp->need[c] = DROP_GONE;
		dp->released += n;
	}
}

void xtk_drop_done(struct xtk_drop *dp)
{
	if (!dp)
		return;
	free(dp->need);
	*dp = (struct xtk_drop){ 0 };
}
