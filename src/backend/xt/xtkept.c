/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/netfilter_ipv4/ip_tables.h>
#include <linux/netfilter_ipv6/ip6_tables.h>

#include "backend/xt/xtkept.h"
#include "util.h"

void xtk_done(struct xtk_table *kp)
{
	if (!kp)
		return;
	xtt_big_free(kp->map, kp->map_len);
	free(kp->ch);
	memset(kp, 0, sizeof(*kp));
}

size_t xtk_bytes(const struct xtk_table *kp)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), n = kp->cap_ch * sizeof(*kp->ch);
	_cleanup_free_ unsigned char *vec = NULL;
	size_t pages;

	if (!kp->map || !kp->map_len)
		return n;
	pages = (kp->map_len + page - 1) / page;
	vec = malloc(pages);
	/* Without the page map, the whole mapping. */
	if (!vec || mincore(kp->map, kp->map_len, vec) < 0)
		return n + kp->map_len;
	for (size_t i = 0; i < pages; i++)
		n += (vec[i] & 1) ? page : 0;
	return n;
}

int xtk_add(struct xtk_table *kp, uint32_t name_at, uint32_t first, uint32_t end,
	    uint32_t n_rules, uint64_t stamp)
{
	if (GROW(kp->ch, kp->cap_ch, kp->n_ch + 1) < 0)
		return -ENOMEM;
	kp->ch[kp->n_ch++] = (struct xtk_chain){ .name_at = name_at, .first = first, .end = end,
						 .n_rules = n_rules, .stamp = stamp };
	return 0;
}

void xtk_adopt(struct xtk_table *kp, void *map, size_t map_len, const unsigned char *blob,
	       struct xtk_table *from)
{
	xtk_done(kp);
	*kp = *from;
	kp->map = map;
	kp->map_len = map_len;
	kp->blob = blob;
	memset(from, 0, sizeof(*from));
}

void xtk_pair(struct xtk_table *kp, struct xtt_table *k)
{
	size_t q = 0, in_place = 0;

	for (size_t i = 0; i < k->n_by_name; i++) {
		struct xtt_chain *kc = k->by_name[i];
		int c = 1;

		kc->kept = 0;
		while (q < kp->n_ch &&
		       (c = strcmp((const char *)kp->blob + kp->ch[q].name_at, kc->name)) < 0)
			q++;
		if (q < kp->n_ch && c == 0) {
			kc->kept = (uint32_t)++q;
			in_place += kp->ch[q - 1].first == kc->first;
		}
	}
	kp->same_layout = in_place == kp->n_ch && in_place == k->n_by_name;
}

/* Jump verdict vk of a kernel entry and vp of the kept one: aimed at the
 * same chain (by name)? */
static bool same_target(const struct xtk_table *kp, const struct xtt_table *k, uint32_t vk,
			uint32_t vp)
{
	const struct xtt_chain *to = xtt_chain_at(k, vk);

	return to && to->hook < 0 && to->kept && kp->ch[to->kept - 1].first == vp;
}

bool xtk_same(const struct xtk_table *kp, const struct xtt_table *k, const struct xtt_chain *kc,
	      uint64_t stamp)
{
	const struct xt_fam *f = k->f;
	/* up to comefrom (then padding on IPv6, the counters, the matches) */
	const size_t hdr = f->af == AF_INET6 ? offsetof(struct ip6t_entry, comefrom)
					     : offsetof(struct ipt_entry, comefrom);
	const size_t vat = offsetof(struct xt_standard_target, verdict);
	const struct xtk_chain *kk;
	uint32_t kfrom, len;

	if (!kc->kept || !stamp || kc->hook >= 0)
		return false;
	kk = &kp->ch[kc->kept - 1];
	kfrom = k->eoff[kc->first_idx];
	len = k->eoff[kc->tail_idx] - kfrom;
	if (kk->stamp != stamp || kk->n_rules != kc->n_rules || kk->end - kk->first != len)
		return false;
	if (kp->same_layout) {
		/* Every chain where it was: equal offsets are equal chains, and
		 * the verdicts compare as bytes. */
		for (uint32_t off = 0; off < len;) {
			const unsigned char *a = k->blob + kfrom + off, *b = kp->blob + kk->first + off;
			uint16_t next;

			if (memcmp(a, b, hdr) != 0)
				return false;
			next = xt_fam_next_offset(f, a);
			if (next > len - off || memcmp(a + f->size, b + f->size, next - f->size) != 0)
				return false;
			off += next;
		}
		return true;
	}
	for (uint32_t off = 0; off < len;) {
		const unsigned char *a = k->blob + kfrom + off, *b = kp->blob + kk->first + off;
		const struct xt_standard_target *st;
		uint16_t next, to;
		int32_t va, vb;

		/* ip header, target and next offsets (the kernel checked a's
		 * at the read; b's are equal from here on) */
		if (memcmp(a, b, hdr) != 0)
			return false;
		next = xt_fam_next_offset(f, a);
		to = xt_fam_target_offset(f, a);
		if (next > len - off)
			return false;
		st = (const void *)(a + to);
		memcpy(&va, a + to + vat, sizeof(va));
		if (st->target.u.target_size != XT_ALIGN(sizeof(*st)) ||
		    st->target.u.user.name[0] != '\0' || va < 0 ||
		    to + XT_ALIGN(sizeof(*st)) > next) {
			/* no jump: every byte after the counters counts */
			if (memcmp(a + f->size, b + f->size, next - f->size) != 0)
				return false;
		} else {
			if (memcmp(a + f->size, b + f->size, to + vat - f->size) != 0 ||
			    memcmp(a + to + vat + sizeof(va), b + to + vat + sizeof(va),
				   next - to - vat - sizeof(va)) != 0)
				return false;
			memcpy(&vb, b + to + vat, sizeof(vb));
			if ((uint32_t)va == kfrom + off + next) {
				if ((uint32_t)vb != kk->first + off + next) /* a fall-through */
					return false;
			} else if (!same_target(kp, k, (uint32_t)va, (uint32_t)vb)) {
				return false;
			}
		}
		off += next;
	}
	return true;
}
