/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the direct writer keeps between syncs (src/backend/xt/xtkept.c),
 * without a kernel: tables built here as the writer and the kernel lay them
 * out (chain head, rules, RETURN; jumps as offsets), for both families, and
 * each chain kept as its keyed digest (no bytes), and xtk_same() asked
 * whether the "kernel's" chain still holds the kept one:
 *   - the same bytes with the same stamp: yes; another stamp: no;
 *   - the kernel's own bookkeeping (comefrom, counters) differing: yes;
 *   - every chain moved by a foreign chain before them: yes (jumps are
 *     compared by the name of the chain they reach; with every chain in
 *     place, as bytes);
 *   - one address byte of a rule changed, a rule removed, a jump aimed at
 *     another chain, a fall-through turned into a jump: no, for that
 *     chain only (the address byte leaves the entry's size as it was);
 *   - kept with another key: no digest is the same;
 * and the SipHash-2-4-128 under it against libcrypto's, fed in pieces;
 * and a read given back chunk by chunk (xtk_drop_*): a chunk only once the
 * last byte announced in it is copied, one with nothing announced never,
 * the last chunk short, ranges outside the mapping ignored.
 */
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sys/mman.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/evp.h>

#include <linux/netfilter_ipv4/ip_tables.h>
#include <linux/netfilter_ipv6/ip6_tables.h>

#include "backend/xt/xtentry.h"
#include "backend/xt/xtkept.h"
#include "backend/xt/xtsip.h"
#include "backend/xt/xttable.h"
#include "core/parse.h"
#include "util.h"

#define MAXE 64

/* A table as the writer lays it out, and its xtt_table view. */
struct tb {
	unsigned char buf[16384] __attribute__((aligned(8)));
	size_t len;
	uint32_t eoff[MAXE];
	size_t n_ent;
	struct xtt_chain ch[8];
	struct xtt_chain *by_name[8];
	uint32_t name_at[8];
	struct xtt_table k;
};

static const char base4[] =
	"*nat\n:KUBE-A - [0:0]\n:KUBE-B - [0:0]\n:KUBE-C - [0:0]\n"
	"-A KUBE-A -s 198.18.0.1/32 -j KUBE-B\n"
	"-A KUBE-A -m comment --comment \"default/x\" -j KUBE-C\n"
	"-A KUBE-A -m comment --comment \"counts only\"\n"
	"-A KUBE-B -p tcp -m comment --comment \"default/x\" -m tcp -j DNAT --to-destination 198.18.0.2:80\n"
	"-A KUBE-C -j RETURN\n"
	"COMMIT\n";

static const char base6[] =
	"*nat\n:KUBE-A - [0:0]\n:KUBE-B - [0:0]\n:KUBE-C - [0:0]\n"
	"-A KUBE-A -s 2001:2::1/128 -j KUBE-B\n"
	"-A KUBE-A -m comment --comment \"default/x\" -j KUBE-C\n"
	"-A KUBE-A -m comment --comment \"counts only\"\n"
	"-A KUBE-B -p tcp -m comment --comment \"default/x\" -m tcp -j DNAT --to-destination [2001:2::2]:80\n"
	"-A KUBE-C -j RETURN\n"
	"COMMIT\n";

static struct ruleset *parse(const char *text, bool v6)
{
	struct ruleset *rs = NULL;
	struct diag_list d;

	diag_list_init(&d);
	assert_int_equal(ruleset_parse(text, strlen(text), v6 ? PARSE_IPV6 : 0, &rs, &d), 0);
	diag_list_done(&d);
	return rs;
}

static unsigned char *put(struct tb *t, size_t len)
{
	unsigned char *e = t->buf + t->len;

	assert_true(t->len + len <= sizeof(t->buf) && t->n_ent < MAXE);
	t->eoff[t->n_ent++] = (uint32_t)t->len;
	t->len += len;
	return e;
}

static void put_error(struct tb *t, const struct xt_fam *f, const char *name)
{
	size_t sz = f->size + XT_ALIGN(sizeof(struct xt_error_target));
	unsigned char *e = put(t, sz);
	struct xt_error_target *et = (struct xt_error_target *)(e + f->size);

	memset(e, 0, sz);
	xt_fam_set_offsets(f, e, f->size, (uint16_t)sz);
	et->target.u.user.target_size = XT_ALIGN(sizeof(*et));
	strcpy(et->target.u.user.name, XT_ERROR_TARGET);
	strcpy(et->errorname, name);
}

static void put_return(struct tb *t, const struct xt_fam *f)
{
	size_t sz = f->size + XT_ALIGN(sizeof(struct xt_standard_target));
	unsigned char *e = put(t, sz);
	struct xt_standard_target *st = (struct xt_standard_target *)(e + f->size);

	memset(e, 0, sz);
	xt_fam_set_offsets(f, e, f->size, (uint16_t)sz);
	st->target.u.user.target_size = XT_ALIGN(sizeof(*st));
	st->verdict = XT_RETURN;
}

static void set_verdict(const struct xt_fam *f, unsigned char *e, int v)
{
	memcpy(e + xt_fam_target_offset(f, e) + offsetof(struct xt_standard_target, verdict), &v,
	       sizeof(v));
}

/*
 * Lay out rs's nat chains (in name order), after a foreign chain of one
 * rule if foreign; with noise, every entry's comefrom and counters set as
 * the kernel's would be.
 */
static void build(struct tb *t, const struct xt_fam *f, const struct ruleset *rs, bool foreign,
		  bool noise)
{
	const struct rs_chains *cs = &rs->t[RS_NAT];
	struct fix {
		unsigned char *e;
		const char *to;
	} fx[MAXE];
	size_t n_fx = 0, n_ch = 0;

	memset(t, 0, sizeof(*t));
	if (foreign) {
		struct xt_entry_buf b;
		const char *why;
		const struct rs_rule r = { .t = { .kind = RS_T_ACCEPT } };

		put_error(t, f, "AAA-FOREIGN");
		t->ch[n_ch++] = (struct xtt_chain){ .name = "AAA-FOREIGN", .hook = -1 };
		t->ch[0].first = (uint32_t)t->len;
		t->ch[0].first_idx = t->n_ent;
		assert_int_equal((f->af == AF_INET6 ? xt_entry_build6 : xt_entry_build)(&r, false,
										    &b, &why),
				 0);
		memcpy(put(t, xt_fam_next_offset(f, b.b)), b.b, xt_fam_next_offset(f, b.b));
		t->ch[0].n_rules = 1;
		t->ch[0].tail_idx = t->n_ent;
		put_return(t, f);
	}
	for (size_t i = 0; i < cs->n; i++) {
		const struct rs_chain *c = cs->chains[i];
		struct xtt_chain *kc = &t->ch[n_ch];

		t->name_at[n_ch] = (uint32_t)(t->len + f->size +
					      offsetof(struct xt_error_target, errorname));
		put_error(t, f, c->name);
		*kc = (struct xtt_chain){ .name = (const char *)t->buf + t->name_at[n_ch++],
					  .hook = -1, .first = (uint32_t)t->len,
					  .first_idx = t->n_ent, .n_rules = c->n_rules };
		for (size_t j = 0; j < c->n_rules; j++) {
			const struct rs_rule *r = &c->rules[j];
			struct xt_entry_buf b;
			const char *why = NULL;
			size_t len;
			unsigned char *e;

			assert_int_equal((f->af == AF_INET6 ? xt_entry_build6 : xt_entry_build)(
						 r, false, &b, &why),
					 0);
			len = xt_fam_next_offset(f, b.b);
			e = put(t, len);
			memcpy(e, b.b, len);
			if (r->t.kind == RS_T_NONE)
				set_verdict(f, e, (int)(e - t->buf + len));
			else if (r->t.kind == RS_T_JUMP)
				fx[n_fx++] = (struct fix){ e, r->t.u.chain };
		}
		kc->tail_idx = t->n_ent;
		put_return(t, f);
	}
	put_error(t, f, XT_ERROR_TARGET);
	for (size_t i = 0; i < n_fx; i++) {
		size_t c = 0;

		while (c < n_ch && strcmp(t->ch[c].name, fx[i].to))
			c++;
		assert_true(c < n_ch);
		set_verdict(f, fx[i].e, (int)t->ch[c].first);
	}
	if (noise) {
		size_t cf = f->af == AF_INET6 ? offsetof(struct ip6t_entry, comefrom)
					      : offsetof(struct ipt_entry, comefrom);

		for (size_t i = 0; i < t->n_ent; i++) {
			struct xt_counters c = { .pcnt = 7 + i, .bcnt = 700 + i };
			uint32_t from = 0x12;

			memcpy(t->buf + t->eoff[i] + cf, &from, sizeof(from));
			memcpy(t->buf + t->eoff[i] + f->counters_at, &c, sizeof(c));
		}
	}
	for (size_t c = 0; c < n_ch; c++)
		t->by_name[c] = &t->ch[c];
	t->k = (struct xtt_table){ .f = f, .blob = t->buf, .eoff = t->eoff, .n_ent = t->n_ent,
				   .ch = t->ch, .n_ch = n_ch, .by_name = t->by_name,
				   .n_by_name = n_ch };
}

static const struct xtk_key key1 = { { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 } };
static const struct xtk_key key2 = { { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 17 } };

/* Keep table t's chains with key, stamps 10, 11, ... (its bytes are not kept). */
static void keep_with(struct xtk_table *kp, const struct tb *t, const struct xtk_key *key)
{
	memset(kp, 0, sizeof(*kp));
	assert_int_equal(xtk_reserve(kp, t->k.n_ch), 0);
	for (size_t c = 0; c < t->k.n_ch; c++) {
		struct xtk_chain *kc = &kp->ch[kp->n_ch++];
		uint32_t from = t->eoff[t->ch[c].first_idx];

		kc->stamp = 10 + c;
		kc->n_rules = (uint32_t)t->ch[c].n_rules;
		kc->len = t->eoff[t->ch[c].tail_idx] - from;
		strcpy(kc->name, t->ch[c].name);
		assert_int_equal(xtk_digest(key, t->k.f, t->buf, from, kc->len, xtk_read_chain_at,
					    (void *)&t->k, &kc->digest),
				 0);
	}
	/* the chain records only */
	assert_int_equal(xtk_bytes(kp), kp->cap_ch * sizeof(*kp->ch));
	assert_true(xtk_bytes(kp) >= t->k.n_ch * sizeof(*kp->ch));
	assert_true(sizeof(*kp->ch) <= 72);
}

static void keep(struct xtk_table *kp, const struct tb *t)
{
	keep_with(kp, t, &key1);
}

/* xtk_same() of each of the kernel's planned chains (KUBE-A, -B, -C). */
static void same3(struct xtk_table *kp, struct tb *k, bool a, bool b, bool c)
{
	const bool want[3] = { a, b, c };
	size_t off = k->k.n_ch - 3;

	xtk_pair(kp, &k->k);
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(xtk_same(&key1, kp, &k->k, &k->ch[off + i], 10 + i), want[i]);
}

static const struct xt_fam *fam(bool v6)
{
	return v6 ? &xt_fam6 : &xt_fam4;
}

static void check_family(bool v6)
{
	const struct xt_fam *f = fam(v6);
	const char *text = v6 ? base6 : base4;
	struct ruleset *rs = parse(text, v6);
	static struct tb kept, k;
	struct xtk_table kp;
	char *mod;

	build(&kept, f, rs, false, false);
	keep(&kp, &kept);

	/* the same bytes; another stamp */
	build(&k, f, rs, false, false);
	same3(&kp, &k, true, true, true);
	assert_false(xtk_same(&key1, &kp, &k.k, &k.ch[0], 99));
	assert_false(xtk_same(&key1, &kp, &k.k, &k.ch[0], 0));
	/* kept with another key: no digest matches */
	{
		struct xtk_table kp2;

		keep_with(&kp2, &kept, &key2);
		xtk_pair(&kp2, &k.k);
		for (size_t i = 0; i < 3; i++) {
			assert_memory_not_equal(kp.ch[i].digest.b, kp2.ch[i].digest.b, 16);
			assert_false(xtk_same(&key1, &kp2, &k.k, &k.ch[i], 10 + i));
		}
		xtk_done(&kp2);
	}

	/* the kernel's comefrom and counters */
	build(&k, f, rs, false, true);
	same3(&kp, &k, true, true, true);

	/* everything moved by a foreign chain first */
	build(&k, f, rs, true, true);
	same3(&kp, &k, true, true, true);
	assert_int_equal(k.ch[0].kept, 0);

	/* the last byte of KUBE-B's DNAT address (an entry of the same
	 * size), with every chain in place and moved */
	for (int moved = 0; moved < 2; moved++) {
		size_t b;

		build(&k, f, rs, moved, false);
		b = k.ch[moved + 1].first_idx;
		k.buf[k.eoff[b] + xt_fam_target_offset(f, k.buf + k.eoff[b]) +
		      sizeof(struct xt_entry_target) + (v6 ? 4 + 15 : 8 + 3)] ^= 1;
		assert_int_equal(k.ch[moved + 1].n_rules, kept.ch[1].n_rules);
		same3(&kp, &k, true, false, true);
	}
	ruleset_free(rs);

	/* a jump aimed at another chain; then also a rule gone */
	mod = strdup(text);
	assert_non_null(mod);
	memcpy(strstr(mod, "-j KUBE-B"), "-j KUBE-C", 9);
	rs = parse(mod, v6);
	build(&k, f, rs, false, false);
	same3(&kp, &k, false, true, true);
	ruleset_free(rs);
	strcpy(strstr(mod, "-A KUBE-C -j RETURN\n"), "COMMIT\n");
	rs = parse(mod, v6);
	build(&k, f, rs, false, false);
	same3(&kp, &k, false, true, false);
	ruleset_free(rs);
	free(mod);

	xtk_done(&kp);
}

static void test_kept4(void **state)
{
	(void)state;
	check_family(false);
}

static void test_kept6(void **state)
{
	(void)state;
	check_family(true);
}

/* A fall-through (a rule without -j) that becomes a jump is a change. */
static void test_fallthrough(void **state)
{
	const struct xt_fam *f = &xt_fam4;
	struct ruleset *rs = parse(base4, false);
	static struct tb kept, k;
	struct xtk_table kp;
	unsigned char *e;

	(void)state;
	build(&kept, f, rs, false, false);
	keep(&kp, &kept);
	for (int moved = 0; moved < 2; moved++) {
		build(&k, f, rs, moved, false);
		e = k.buf + k.eoff[k.ch[moved].first_idx + 2];
		set_verdict(f, e, (int)k.ch[moved + 2].first);
		same3(&kp, &k, false, true, true);
	}
	ruleset_free(rs);
	xtk_done(&kp);
}

/* xt_sip_* against libcrypto's SIPHASH (size 16), every length to 200,
 * fed in pieces of 1, 3 and 7 bytes and whole. */
static void test_sip(void **state)
{
	EVP_MAC *mac = EVP_MAC_fetch(NULL, "SIPHASH", NULL);
	unsigned char msg[200];

	(void)state;
	assert_non_null(mac);
	for (size_t i = 0; i < sizeof(msg); i++)
		msg[i] = (unsigned char)(i * 37 + 11);
	for (size_t len = 0; len <= sizeof(msg); len++) {
		EVP_MAC_CTX *ctx = EVP_MAC_CTX_new(mac);
		size_t size = 16, outl = 0;
		OSSL_PARAM params[] = { OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &size),
					OSSL_PARAM_END };
		unsigned char want[16], got[16];
		const size_t steps[] = { 1, 3, 7, sizeof(msg) };

		assert_non_null(ctx);
		assert_int_equal(EVP_MAC_init(ctx, key1.b, 16, params), 1);
		assert_int_equal(EVP_MAC_update(ctx, msg, len), 1);
		assert_int_equal(EVP_MAC_final(ctx, want, &outl, sizeof(want)), 1);
		assert_int_equal(outl, 16);
		EVP_MAC_CTX_free(ctx);
		for (size_t st = 0; st < ARRAY_SIZE(steps); st++) {
			struct xt_sip sip;

			xt_sip_init(&sip, key1.b);
			for (size_t at = 0; at < len; at += steps[st])
				xt_sip_update(&sip, msg + at,
					      len - at < steps[st] ? len - at : steps[st]);
			xt_sip_final(&sip, got);
			assert_memory_equal(got, want, 16);
		}
	}
	EVP_MAC_free(mac);
}

/* A jump to no user chain's start (here the middle of one): not digested. */
static void test_jump_nowhere(void **state)
{
	const struct xt_fam *f = &xt_fam4;
	struct ruleset *rs = parse(base4, false);
	static struct tb k;
	struct xtk_digest d;
	uint32_t from;

	(void)state;
	build(&k, f, rs, false, false);
	from = k.eoff[k.ch[0].first_idx];
	assert_int_equal(xtk_digest(&key1, f, k.buf, from, k.eoff[k.ch[0].tail_idx] - from,
				    xtk_read_chain_at, &k.k, &d),
			 0);
	set_verdict(f, k.buf + from, (int)k.eoff[k.ch[0].first_idx + 2]);
	assert_int_equal(xtk_digest(&key1, f, k.buf, from, k.eoff[k.ch[0].tail_idx] - from,
				    xtk_read_chain_at, &k.k, &d),
			 -EINVAL);
	/* a length that cuts an entry */
	assert_int_equal(xtk_digest(&key1, f, k.buf, from, 8, xtk_read_chain_at, &k.k, &d),
			 -EINVAL);
	ruleset_free(rs);
}


/* Whether every byte of the len at p is v. */
static bool all_are(const unsigned char *p, size_t len, unsigned char v)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != v)
			return false;
	return true;
}

static void test_drop(void **state)
{
	const size_t pg = (size_t)sysconf(_SC_PAGESIZE), ch = 2 * pg, len = 3 * ch - pg / 2;
	unsigned char *m = mmap(NULL, 3 * ch, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				-1, 0);
	struct xtk_drop dp;

	(void)state;
	assert_true(m != MAP_FAILED);
	memset(m, 0xaa, 3 * ch);
	assert_int_equal(xtk_drop_init(&dp, m, len, pg + 1), -EINVAL);
	assert_int_equal(xtk_drop_init(&dp, m + 1, len, ch), -EINVAL);
	assert_int_equal(xtk_drop_init(&dp, m, len, ch), 0);
	assert_int_equal(dp.n, 3);
	/* chunk 0: two runs, one across into chunk 1; chunk 2: one run to
	 * the end; nothing announced past the end or before the mapping */
	xtk_drop_need(&dp, m + 10, 100);
	xtk_drop_need(&dp, m + ch - 50, 100);
	xtk_drop_need(&dp, m + 2 * ch + 7, len - 2 * ch - 7);
	xtk_drop_need(&dp, m + len - 10, 20);
	xtk_drop_copied(&dp, m + len - 10, 20);
	xtk_drop_copied(&dp, m + ch - 50, 100);
	/* chunk 1's announced bytes are copied; chunk 0 still has 100 */
	assert_true(all_are(m, ch, 0xaa));
	assert_true(all_are(m + ch, ch, 0));
	xtk_drop_copied(&dp, m + 10, 60);
	assert_true(all_are(m, ch, 0xaa));
	xtk_drop_copied(&dp, m + 70, 40);
	assert_true(all_are(m, ch, 0));
	assert_true(all_are(m + 2 * ch, ch, 0xaa));
	xtk_drop_copied(&dp, m + 2 * ch + 7, len - 2 * ch - 7);
	assert_true(all_are(m + 2 * ch, len - 2 * ch, 0));
	assert_int_equal(dp.released, len);
	/* all given back already: the rest is nothing more */
	xtk_drop_rest(&dp);
	assert_int_equal(dp.released, len);
	xtk_drop_done(&dp);
	xtk_drop_done(NULL);
	/* nothing announced: nothing given back */
	memset(m, 0xbb, 3 * ch);
	assert_int_equal(xtk_drop_init(&dp, m, 3 * ch, ch), 0);
	xtk_drop_copied(&dp, m, 0);
	assert_true(all_are(m, 3 * ch, 0xbb));
	assert_int_equal(dp.released, 0);
	xtk_drop_done(&dp);
	/* the rest: chunk 1 given back by its copy, 0 (a copy pending) and 2
	 * (nothing announced) by xtk_drop_rest() */
	assert_int_equal(xtk_drop_init(&dp, m, 3 * ch, ch), 0);
	xtk_drop_need(&dp, m + 5, 10);
	xtk_drop_need(&dp, m + ch, 10);
	xtk_drop_copied(&dp, m + ch, 10);
	assert_true(all_are(m, ch, 0xbb));
	assert_true(all_are(m + ch, ch, 0));
	assert_true(all_are(m + 2 * ch, ch, 0xbb));
	memset(m + ch, 0xcc, ch);
	xtk_drop_rest(&dp);
	assert_true(all_are(m, ch, 0));
	assert_true(all_are(m + ch, ch, 0xcc)); /* not given back twice */
	assert_true(all_are(m + 2 * ch, ch, 0));
	assert_int_equal(dp.released, 3 * ch);
	xtk_drop_done(&dp);
	munmap(m, 3 * ch);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kept4),
		cmocka_unit_test(test_kept6),
		cmocka_unit_test(test_fallthrough),
		cmocka_unit_test(test_sip),
		cmocka_unit_test(test_jump_nowhere),
		cmocka_unit_test(test_drop),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
