/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nftreply_feed(), the nf_tables socket's reader of one request's answer,
 * fed canned netlink messages: a dump is read to its end whatever happens
 * on the way (NLM_F_DUMP_INTR, a callback's failure, the kernel's error),
 * the rest of an earlier answer is skipped rather than taken for this
 * one, and a cut buffer is an error.  And nftread_event_matters(): which
 * nf_tables notifications leave the writer's kept state as it was.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netlink.h>

#include "backend/nft/nftbatch.h"
#include "backend/nft/nftread.h"

#define PORTID 4242u
#define SEQ 1000u
#define DATA 0x0a01 /* any type >= NLMSG_MIN_TYPE */

/* One canned message, appended to a buffer. */
struct msg {
	uint16_t type, flags;
	uint32_t seq, pid;
	int payload; /* NLMSG_ERROR: the error; NLMSG_DONE: the dump's; DATA: a tag */
};

static size_t build(char *buf, size_t cap, const struct msg *m, size_t n)
{
	size_t off = 0;

	for (size_t i = 0; i < n; i++) {
		struct nlmsghdr *h = mnl_nlmsg_put_header(buf + off);

		h->nlmsg_type = m[i].type;
		h->nlmsg_flags = m[i].flags;
		h->nlmsg_seq = m[i].seq;
		h->nlmsg_pid = m[i].pid;
		if (m[i].type == NLMSG_ERROR) {
			struct nlmsgerr *e = mnl_nlmsg_put_extra_header(h, sizeof(*e));

			e->error = m[i].payload;
			e->msg.nlmsg_seq = m[i].seq;
		} else {
			int *p = mnl_nlmsg_put_extra_header(h, sizeof(int));

			*p = m[i].payload;
		}
		off += h->nlmsg_len;
		assert_true(off <= cap);
	}
	return off;
}

struct seen {
	int tags[32];
	size_t n;
	int fail_at; /* the tag whose message cb refuses (-EIO); 0: none */
};

static int cb(const struct nlmsghdr *nlh, void *data)
{
	struct seen *s = data;
	int tag = *(const int *)mnl_nlmsg_get_payload(nlh);

	assert_int_equal(nlh->nlmsg_type, DATA);
	if (s->n < 32)
		s->tags[s->n++] = tag;
	return tag == s->fail_at ? -EIO : 0;
}

/* Feed each part (a buffer of messages) in turn, as recv() returns them;
 * stop at done, as the socket's reader does. */
static int feed(struct nftreply *rp, struct seen *s, const struct msg *const *parts,
		const size_t *lens, size_t n_parts, size_t *ret_fed)
{
	char buf[4096];
	size_t k;
	int r = 0;

	for (k = 0; k < n_parts && !rp->done; k++) {
		size_t len = build(buf, sizeof(buf), parts[k], lens[k]);

		r = nftreply_feed(rp, buf, len, cb, s);
		if (r < 0)
			break;
	}
	*ret_fed = k;
	return r;
}

#define D(tag) { DATA, NLM_F_MULTI, SEQ, PORTID, tag }
#define DI(tag) { DATA, NLM_F_MULTI | NLM_F_DUMP_INTR, SEQ, PORTID, tag }
#define DONE { NLMSG_DONE, NLM_F_MULTI, SEQ, PORTID, 0 }
#define PARTS(...) ((const struct msg *const[]){ __VA_ARGS__ })

static void test_dump_whole(void **state)
{
	static const struct msg a[] = { D(1), D(2) }, b[] = { D(3), DONE };
	struct nftreply rp = { .seq = SEQ, .portid = PORTID };
	struct seen s = { 0 };
	size_t fed;

	(void)state;
	assert_int_equal(feed(&rp, &s, PARTS(a, b), (size_t[]){ 2, 2 }, 2, &fed), 0);
	assert_true(rp.done);
	assert_false(rp.intr);
	assert_int_equal(rp.err, 0);
	assert_int_equal(s.n, 3);
	assert_int_equal(s.tags[2], 3);
}

/* The kernel marks the parts after a change: the rest is still read (to
 * NLMSG_DONE), none of it given to cb. */
static void test_dump_interrupted_read_to_end(void **state)
{
	static const struct msg a[] = { D(1), D(2) }, b[] = { DI(3), DI(4) },
				c[] = { DI(5), DONE };
	struct nftreply rp = { .seq = SEQ, .portid = PORTID };
	struct seen s = { 0 };
	size_t fed;

	(void)state;
	assert_int_equal(feed(&rp, &s, PARTS(a, b, c), (size_t[]){ 2, 2, 2 }, 3, &fed), 0);
	assert_int_equal(fed, 3);
	assert_true(rp.done);
	assert_true(rp.intr);
	assert_int_equal(rp.err, 0);
	assert_int_equal(s.n, 2);
}

/* What an abandoned dump left in the socket precedes the next request's
 * answer: skipped and counted, not taken as this answer (libmnl's
 * mnl_cb_run() fails the whole answer with EPROTO here, for good). */
static void test_stale_answer_skipped(void **state)
{
	static const struct msg a[] = {
		{ DATA, NLM_F_MULTI | NLM_F_DUMP_INTR, SEQ - 1, PORTID, 91 },
		{ NLMSG_DONE, NLM_F_MULTI, SEQ - 1, PORTID, 0 },
		{ NLMSG_ERROR, 0, SEQ - 2, PORTID, 0 },
		D(1),
	},
				b[] = { D(2), DONE };
	struct nftreply rp = { .seq = SEQ, .portid = PORTID };
	struct seen s = { 0 };
	size_t fed;

	(void)state;
	assert_int_equal(feed(&rp, &s, PARTS(a, b), (size_t[]){ 4, 2 }, 2, &fed), 0);
	assert_true(rp.done);
	assert_false(rp.intr);
	assert_int_equal(rp.stale, 3);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.tags[0], 1);
}

static void test_ack_and_refusal(void **state)
{
	static const struct msg ack[] = { D(7), { NLMSG_ERROR, 0, SEQ, PORTID, 0 } },
				no[] = { { NLMSG_ERROR, 0, SEQ, PORTID, -ENOENT } };
	struct nftreply rp = { .seq = SEQ, .portid = PORTID };
	struct seen s = { 0 };
	size_t fed;

	(void)state;
	assert_int_equal(feed(&rp, &s, PARTS(ack), (size_t[]){ 2 }, 1, &fed), 0);
	assert_true(rp.done);
	assert_int_equal(rp.err, 0);
	assert_int_equal(s.n, 1);

	rp = (struct nftreply){ .seq = SEQ, .portid = PORTID };
	assert_int_equal(feed(&rp, &s, PARTS(no), (size_t[]){ 1 }, 1, &fed), 0);
	assert_true(rp.done);
	assert_int_equal(rp.err, -ENOENT);
}

/* cb's failure is the answer's error, and the dump is still read to its end. */
static void test_callback_failure_drains(void **state)
{
	static const struct msg a[] = { D(1), D(2), D(3) }, b[] = { D(4), DONE };
	struct nftreply rp = { .seq = SEQ, .portid = PORTID };
	struct seen s = { .fail_at = 2 };
	size_t fed;

	(void)state;
	assert_int_equal(feed(&rp, &s, PARTS(a, b), (size_t[]){ 3, 2 }, 2, &fed), 0);
	assert_int_equal(fed, 2);
	assert_true(rp.done);
	assert_int_equal(rp.err, -EIO);
	assert_int_equal(s.n, 2);
}

/* The dump's own error rides on NLMSG_DONE. */
static void test_done_carries_error(void **state)
{
	static const struct msg a[] = { D(1), { NLMSG_DONE, NLM_F_MULTI, SEQ, PORTID, -EBUSY } };
	struct nftreply rp = { .seq = SEQ, .portid = PORTID };
	struct seen s = { 0 };
	size_t fed;

	(void)state;
	assert_int_equal(feed(&rp, &s, PARTS(a), (size_t[]){ 2 }, 1, &fed), 0);
	assert_true(rp.done);
	assert_int_equal(rp.err, -EBUSY);
}

/* Another port's message, and anything after the end, are not this answer. */
static void test_foreign_and_after_done(void **state)
{
	static const struct msg a[] = { { DATA, 0, SEQ, PORTID + 1, 9 }, D(1), DONE, D(2) };
	struct nftreply rp = { .seq = SEQ, .portid = PORTID };
	struct seen s = { 0 };
	size_t fed;

	(void)state;
	assert_int_equal(feed(&rp, &s, PARTS(a), (size_t[]){ 4 }, 1, &fed), 0);
	assert_true(rp.done);
	assert_int_equal(s.n, 1);
	assert_int_equal(rp.stale, 2);
}

/* A buffer that ends inside a message is not an answer. */
static void test_cut_buffer(void **state)
{
	static const struct msg a[] = { D(1), D(2) };
	struct nftreply rp = { .seq = SEQ, .portid = PORTID };
	struct seen s = { 0 };
	char buf[4096];
	size_t len = build(buf, sizeof(buf), a, 2);

	(void)state;
	assert_int_equal(nftreply_feed(&rp, buf, len - 2, cb, &s), -EPROTO);
	/* A short error message is no answer either. */
	rp = (struct nftreply){ .seq = SEQ, .portid = PORTID };
	{
		struct nlmsghdr *h = mnl_nlmsg_put_header(buf);

		h->nlmsg_type = NLMSG_ERROR;
		h->nlmsg_seq = SEQ;
		assert_int_equal(nftreply_feed(&rp, buf, h->nlmsg_len, cb, &s), -EPROTO);
	}
}

/* --- notifications --- */

/*
 * A state with ip filter read: svcnat's KUBE-SERVICES, the built-in INPUT
 * holding one jump of svcnat's (handle 7), other programs' FOREIGN and
 * OTHER2; refs: whether another program's rule jumps to KUBE-SERVICES.
 */
static struct nftread_state *state(bool refs)
{
	static const char *others[] = { "FOREIGN", "OTHER2" };
	struct nftread_state *st = nftread_state_new();
	struct nftread_family *fam;
	struct nftread_table *tb;

	assert_non_null(st);
	fam = &st->f[WRITER_IPV4];
	fam->read = true;
	fam->rs = ruleset_new();
	assert_non_null(fam->rs);
	tb = &fam->t[RS_FILTER];
	tb->exists = true;
	tb->chains = calloc(2, sizeof(*tb->chains));
	tb->others = malloc(sizeof(others));
	assert_non_null(tb->chains);
	assert_non_null(tb->others);
	memcpy(tb->others, others, sizeof(others));
	tb->n_others = 2;
	tb->n = 2;
	tb->chains[0].c = ruleset_add_chain(fam->rs, RS_FILTER, "INPUT");
	tb->chains[1].c = ruleset_add_chain(fam->rs, RS_FILTER, "KUBE-SERVICES");
	assert_non_null(tb->chains[0].c);
	assert_non_null(tb->chains[1].c);
	assert_non_null(rs_chain_append(tb->chains[0].c));
	tb->chains[0].handles = calloc(1, sizeof(uint64_t));
	assert_non_null(tb->chains[0].handles);
	tb->chains[0].handles[0] = 7;
	if (refs) {
		tb->refs = malloc(sizeof(*tb->refs));
		assert_non_null(tb->refs);
		tb->refs[0] = "KUBE-SERVICES";
		tb->n_refs = 1;
	}
	return st;
}

/* A rule notification: type, family, table, chain, handle (0: none), and
 * a jump to `jump` (NULL: accept). */
static struct nlmsghdr *rule_msg(char *buf, uint16_t type, uint8_t family, const char *table,
				 const char *chain, uint64_t handle, const char *jump)
{
	struct nftnl_rule *r = nftnl_rule_alloc();
	struct nftnl_expr *e = nftnl_expr_alloc("immediate");
	struct nlmsghdr *nlh;

	assert_non_null(r);
	assert_non_null(e);
	nftnl_rule_set_str(r, NFTNL_RULE_TABLE, table);
	nftnl_rule_set_str(r, NFTNL_RULE_CHAIN, chain);
	if (handle)
		nftnl_rule_set_u64(r, NFTNL_RULE_HANDLE, handle);
	nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, NFT_REG_VERDICT);
	nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_VERDICT, jump ? NFT_JUMP : NF_ACCEPT);
	if (jump)
		nftnl_expr_set_str(e, NFTNL_EXPR_IMM_CHAIN, jump);
	nftnl_rule_add_expr(r, e);
	memset(buf, 0, 4096);
	nlh = nftnl_nlmsg_build_hdr(buf, type, family, 0, 1);
	nftnl_rule_nlmsg_build_payload(nlh, r);
	nftnl_rule_free(r);
	return nlh;
}

static void test_event_matters(void **state_)
{
	static const struct {
		uint16_t type;
		uint8_t family;
		const char *table, *chain;
		uint64_t handle;
		const char *jump;
		bool refs, matters;
		const char *what;
	} cases[] = {
		{ NFT_MSG_NEWRULE, NFPROTO_IPV4, "filter", "FOREIGN", 100, NULL, false, false,
		  "a rule added to another program's chain" },
		{ NFT_MSG_DELRULE, NFPROTO_IPV4, "filter", "FOREIGN", 100, NULL, false, false,
		  "a rule deleted from another program's chain" },
		{ NFT_MSG_NEWRULE, NFPROTO_IPV4, "filter", "FOREIGN", 100, "OTHER2", false, false,
		  "a jump between other programs' chains" },
		{ NFT_MSG_NEWRULE, NFPROTO_IPV4, "filter", "FOREIGN", 100, "KUBE-SERVICES", false,
		  true, "a jump from another program's chain to svcnat's" },
		{ NFT_MSG_NEWRULE, NFPROTO_IPV4, "filter", "FOREIGN", 100, "NEWCHAIN", false, true,
		  "a jump to a chain not known" },
		{ NFT_MSG_DELRULE, NFPROTO_IPV4, "filter", "FOREIGN", 100, NULL, true, true,
		  "a deletion while another program's rule jumps to svcnat's" },
		{ NFT_MSG_NEWRULE, NFPROTO_IPV4, "filter", "KUBE-SERVICES", 100, NULL, false, true,
		  "a rule added to svcnat's chain" },
		{ NFT_MSG_NEWRULE, NFPROTO_IPV4, "filter", "INPUT", 100, NULL, false, false,
		  "another program's rule in a built-in chain" },
		{ NFT_MSG_DELRULE, NFPROTO_IPV4, "filter", "INPUT", 7, NULL, false, true,
		  "svcnat's jump deleted from a built-in chain" },
		{ NFT_MSG_DELRULE, NFPROTO_IPV4, "filter", "INPUT", 0, NULL, false, true,
		  "a deletion in a built-in chain without a handle" },
		{ NFT_MSG_NEWRULE, NFPROTO_IPV4, "filter", "UNKNOWN", 100, NULL, false, true,
		  "a rule of a chain not known" },
		{ NFT_MSG_NEWRULE, NFPROTO_IPV4, "mangle", "KUBE-SERVICES", 100, NULL, false, false,
		  "a table svcnat does not write" },
		{ NFT_MSG_NEWRULE, NFPROTO_INET, "filter", "KUBE-SERVICES", 100, NULL, false, false,
		  "an inet table of the same name" },
		{ NFT_MSG_NEWRULE, NFPROTO_IPV6, "filter", "KUBE-SERVICES", 100, NULL, false, false,
		  "a family not read" },
	};
	char buf[4096];

	(void)state_;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct nftread_state *st = state(cases[i].refs);
		struct nlmsghdr *nlh = rule_msg(buf, cases[i].type, cases[i].family, cases[i].table,
						cases[i].chain, cases[i].handle, cases[i].jump);

		if (nftread_event_matters(st, nlh) != cases[i].matters)
			fail_msg("%s: matters should be %d", cases[i].what, cases[i].matters);
		nftread_state_free(st);
	}
}

/* A chain of the table, and the generation message. */
static void test_event_chain_and_gen(void **state_)
{
	struct nftread_state *st = state(false);
	struct nftnl_chain *c = nftnl_chain_alloc();
	char buf[4096];
	struct nlmsghdr *nlh;

	(void)state_;
	assert_non_null(c);
	nftnl_chain_set_str(c, NFTNL_CHAIN_TABLE, "filter");
	nftnl_chain_set_str(c, NFTNL_CHAIN_NAME, "FOREIGN");
	memset(buf, 0, sizeof(buf));
	nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_DELCHAIN, NFPROTO_IPV4, 0, 1);
	nftnl_chain_nlmsg_build_payload(nlh, c);
	nftnl_chain_free(c);
	assert_true(nftread_event_matters(st, nlh));
	memset(buf, 0, sizeof(buf));
	nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_NEWGEN, AF_UNSPEC, 0, 1);
	assert_false(nftread_event_matters(st, nlh));
	nftread_state_free(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dump_whole),
		cmocka_unit_test(test_dump_interrupted_read_to_end),
		cmocka_unit_test(test_stale_answer_skipped),
		cmocka_unit_test(test_ack_and_refusal),
		cmocka_unit_test(test_callback_failure_drains),
		cmocka_unit_test(test_done_carries_error),
		cmocka_unit_test(test_foreign_and_after_done),
		cmocka_unit_test(test_cut_buffer),
		cmocka_unit_test(test_event_matters),
		cmocka_unit_test(test_event_chain_and_gen),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
