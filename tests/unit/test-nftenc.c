/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nftenc.c and nftreadrule.c without a kernel:
 *   - every rule of the shipped examples' golden dry-run (and of
 *     tests/data/nft/extra.rules and extra6.rules), encoded, equals what
 *     iptables-nft 1.8.9 (ip6tables-nft 1.8.9 for the ip6tables part)
 *     wrote for it (tests/data/nft/<case>.expr: the kernel's dump after
 *     iptables-nft-restore / ip6tables-nft-restore of the same text,
 *     recorded with tests/e2e/nftdump TABLE... ip6:TABLE...);
 *   - each encoded rule, through netlink bytes and back, decodes to the
 *     same rule;
 *   - rules svcnat does not write decode as foreign, with a reason.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <libmnl/libmnl.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <libnftnl/udata.h>

#include "core/owned.h"
#include "backend/nft/nftenc.h"
#include "backend/nft/nftreadrule.h"
#include "core/parse.h"
#include "nft/nftcanon.h"
#include "util.h"
#include "slurp.h"

/* Through the wire format and back, as the kernel would hand it out. */
static struct nftnl_rule *wire(struct nftnl_rule *r)
{
	static char buf[65536];
	struct nlmsghdr *nlh = nftnl_nlmsg_build_hdr(
		buf, NFT_MSG_NEWRULE, (uint16_t)nftnl_rule_get_u32(r, NFTNL_RULE_FAMILY), 0, 1);
	struct nftnl_rule *back = nftnl_rule_alloc();

	nftnl_rule_nlmsg_build_payload(nlh, r);
	assert_non_null(back);
	assert_int_equal(nftnl_rule_nlmsg_parse(nlh, back), 0);
	return back;
}

/* Encode every rule of rs (family f) into out, and check each decodes back. */
static size_t check_rules(const char *name, const struct ruleset *rs, enum writer_family f,
			  struct ruleset *scratch, FILE *out)
{
	size_t rules = 0;

	for (int t = 0; t < RS_NTABLES; t++) {
		for (size_t i = 0; i < rs->t[t].n; i++) {
			const struct rs_chain *c = rs->t[t].chains[i];

			for (size_t j = 0; j < c->n_rules; j++) {
				struct nftnl_rule *r = NULL, *back;
				const char *why = NULL, *jump = NULL;
				struct rs_rule dec;

				if (nftenc_rule(&c->rules[j], f, (enum rs_table)t, c->name, &r, &why))
					fail_msg("%s: %s rule %zu not encoded: %s", name, c->name,
						 j + 1, why ? why : "?");
				nftcanon_rule(out, r);
				back = wire(r);
				assert_int_equal(nftnl_rule_get_u32(back, NFTNL_RULE_FAMILY),
						 f == WRITER_IPV6 ? NFPROTO_IPV6 : NFPROTO_IPV4);
				assert_int_equal(nftread_rule(back, f, scratch, &dec, &jump), 0);
				if (!owned_rule_same(&dec, &c->rules[j]))
					fail_msg("%s: %s rule %zu does not decode back", name, c->name,
						 j + 1);
				nftnl_rule_free(back);
				nftnl_rule_free(r);
				rules++;
			}
		}
	}
	return rules;
}

/*
 * tests/data/DIR/NAME.rules against tests/data/nft/NAME.expr.  The text is
 * iptables-save's, then (from its second *filter on) ip6tables-save's, as
 * the dry-run prints a dual-stack plan; all_v6: all of it is ip6tables'.
 */
static void check_case(const char *dir, const char *name, bool all_v6)
{
	char path[512];
	_cleanup_free_ char *text = NULL, *want = NULL;
	char *got = NULL, *v6;
	size_t len, wlen, glen = 0;
	struct diag_list d;
	struct ruleset *rs = NULL, *rs6 = NULL, *scratch = ruleset_new();
	FILE *out = open_memstream(&got, &glen);
	size_t rules = 0;

	assert_non_null(scratch);
	assert_non_null(out);
	diag_list_init(&d);
	snprintf(path, sizeof(path), "%s/tests/data/%s/%s.rules", SRCDIR, dir, name);
	text = slurp(path, &len);
	v6 = all_v6 ? text : strstr(text + 1, "\n*filter\n");
	if (v6 && !all_v6)
		v6++;
	if (!all_v6)
		assert_int_equal(ruleset_parse(text, v6 ? (size_t)(v6 - text) : len, 0, &rs, &d), 0);
	if (v6)
		assert_int_equal(ruleset_parse(v6, len - (size_t)(v6 - text), PARSE_IPV6, &rs6, &d), 0);
	snprintf(path, sizeof(path), "%s/tests/data/nft/%s.expr", SRCDIR, name);
	want = slurp(path, &wlen);

	if (rs)
		rules += check_rules(name, rs, WRITER_IPV4, scratch, out);
	if (rs6)
		rules += check_rules(name, rs6, WRITER_IPV6, scratch, out);
	fclose(out);
	assert_true(rules >= 9);
	if (strcmp(got, want) != 0) {
		size_t k = 0;

		while (got[k] && got[k] == want[k])
			k++;
		while (k && got[k - 1] != '\n')
			k--;
		fail_msg("%s: encoding differs from iptables-nft's at:\n got: %.300s\nwant: %.300s",
			 name, got + k, want + k);
	}
	free(got);
	ruleset_free(rs);
	ruleset_free(rs6);
	ruleset_free(scratch);
	diag_list_done(&d);
}

static void test_cluster(void **state)
{
	(void)state;
	check_case("golden", "cluster", false);
}

static void test_original(void **state)
{
	(void)state;
	check_case("golden", "original", false);
}

/* What the dispatch tree and the interface detectors add: -i, port ranges,
 * negations, masks (tests/data/nft/extra.rules, written with iptables-nft). */
static void test_extra(void **state)
{
	(void)state;
	check_case("nft", "extra", false);
}

/* kube-proxy's -m nfacct rules: an xtables-compat "match" expression,
 * nfacct revision 1, as iptables-nft writes it (tests/data/nft/nfacct.rules,
 * the counters made before the restore). */
static void test_nfacct(void **state)
{
	(void)state;
	check_case("nft", "nfacct", false);
}

/* The dual-stack example: both families, ip6tables-nft's encoding for the
 * IPv6 part (addresses at nh+8/24, 16-byte loads and masks, REJECT
 * icmp6-port-unreachable, IPv6 DNAT, recent's IPv6 mask, MASQUERADE's
 * nf_nat_range). */
static void test_dual_stack(void **state)
{
	(void)state;
	check_case("golden", "dual-stack", false);
}

/* IPv6 -i, port ranges, negations, masks inside a byte, goto, DNAT
 * without a port (tests/data/nft/extra6.rules, written with ip6tables-nft). */
static void test_extra6(void **state)
{
	(void)state;
	check_case("nft", "extra6", true);
}

static struct nftnl_rule *rule_with(const char *const *exprs, size_t n)
{
	struct nftnl_rule *r = nftnl_rule_alloc();

	assert_non_null(r);
	nftnl_rule_set_str(r, NFTNL_RULE_TABLE, "nat");
	nftnl_rule_set_str(r, NFTNL_RULE_CHAIN, "PREROUTING");
	for (size_t i = 0; i < n; i++) {
		struct nftnl_expr *e = nftnl_expr_alloc(exprs[i]);

		assert_non_null(e);
		if (strcmp(exprs[i], "meta") == 0) {
			nftnl_expr_set_u32(e, NFTNL_EXPR_META_KEY, NFT_META_OIFNAME);
			nftnl_expr_set_u32(e, NFTNL_EXPR_META_DREG, NFT_REG_1);
		} else if (strcmp(exprs[i], "cmp") == 0) {
			nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_SREG, NFT_REG_1);
			nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_OP, NFT_CMP_EQ);
			nftnl_expr_set(e, NFTNL_EXPR_CMP_DATA, "eth0\0\0\0\0\0\0\0\0\0\0\0\0", 16);
		} else if (strcmp(exprs[i], "immediate") == 0) {
			nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, NFT_REG_VERDICT);
			nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_VERDICT, (uint32_t)NFT_JUMP);
			nftnl_expr_set_str(e, NFTNL_EXPR_IMM_CHAIN, "KUBE-SERVICES");
		}
		nftnl_rule_add_expr(r, e);
	}
	return r;
}

static void expect_foreign(struct nftnl_rule *r, const char *reason)
{
	struct ruleset *rs = ruleset_new();
	struct rs_rule dec;
	const char *jump = NULL;

	assert_non_null(rs);
	assert_int_equal(nftread_rule(r, WRITER_IPV4, rs, &dec, &jump), 1);
	assert_int_equal(dec.t.kind, OWNED_T_FOREIGN);
	if (!strstr(dec.m[0].u.comment, reason))
		fail_msg("foreign because '%s', expected '%s'", dec.m[0].u.comment, reason);
	/* Whom it jumps to is known even so (a foreign rule can hold a chain). */
	assert_string_equal(jump, "KUBE-SERVICES");
	ruleset_free(rs);
	nftnl_rule_free(r);
}

static void test_foreign(void **state)
{
	static const char *const iif[] = { "meta", "cmp", "counter", "immediate" };
	static const char *const nocounter[] = { "immediate" };
	static const char *const plain[] = { "counter", "immediate" };
	struct nftnl_rule *r;

	(void)state;
	/* -o eth0: svcnat writes no output interface matches */
	expect_foreign(rule_with(iif, ARRAY_SIZE(iif)), "expression 'meta'");
	/* nft's "jump KUBE-SERVICES" without a counter: not iptables-nft's */
	expect_foreign(rule_with(nocounter, ARRAY_SIZE(nocounter)), "no counter");
	/* an nft comment (user data) */
	r = rule_with(plain, ARRAY_SIZE(plain));
	assert_int_equal(nftnl_rule_set_data(r, NFTNL_RULE_USERDATA, "\0\3ab", 5), 0);
	expect_foreign(r, "user data");
}

static void test_refused(void **state)
{
	struct rs_rule r = { 0 };
	struct nftnl_rule *nr = NULL;
	const char *why = NULL;

	(void)state;
	r.dst.addr.family = AF_INET6;
	r.dst.plen = 128;
	r.t.kind = RS_T_ACCEPT;
	assert_int_equal(nftenc_rule(&r, WRITER_IPV4, RS_FILTER, "X", &nr, &why), -EINVAL);
	assert_string_equal(why, "address is not IPv4");
	assert_null(nr);
	/* and an IPv4 address in an ip6 table */
	r.dst.addr.family = AF_INET;
	r.dst.plen = 32;
	assert_int_equal(nftenc_rule(&r, WRITER_IPV6, RS_FILTER, "X", &nr, &why), -EINVAL);
	assert_string_equal(why, "address is not IPv6");
	assert_null(nr);
	/* DNAT to an IPv4 address in ip6 nat */
	memset(&r, 0, sizeof(r));
	r.t.kind = RS_T_DNAT;
	r.t.u.dnat.addr.family = AF_INET;
	assert_int_equal(nftenc_rule(&r, WRITER_IPV6, RS_NAT, "X", &nr, &why), -EINVAL);
	assert_string_equal(why, "DNAT to a non-IPv6 address");
	assert_null(nr);
}

/* A rule decodes only in the family it was encoded for: an ip6 address
 * load read as ip (or the other way round) is a foreign rule. */
static void test_family_strict(void **state)
{
	struct ruleset *rs = ruleset_new();
	struct rs_rule r = { 0 }, dec;
	struct nftnl_rule *nr = NULL, *back;
	const char *why = NULL, *jump = NULL;

	(void)state;
	assert_non_null(rs);
	r.dst.addr.family = AF_INET6;
	assert_int_equal(inet_pton(AF_INET6, "2001:2:0:f000::10", &r.dst.addr.u.v6), 1);
	r.dst.plen = 128;
	r.t.kind = RS_T_ACCEPT;
	assert_int_equal(nftenc_rule(&r, WRITER_IPV6, RS_FILTER, "KUBE-SERVICES", &nr, &why), 0);
	back = wire(nr);
	assert_int_equal(nftread_rule(back, WRITER_IPV6, rs, &dec, &jump), 0);
	assert_true(owned_rule_same(&dec, &r));
	assert_int_equal(nftread_rule(back, WRITER_IPV4, rs, &dec, &jump), 1);
	assert_int_equal(dec.t.kind, OWNED_T_FOREIGN);
	nftnl_rule_free(back);
	nftnl_rule_free(nr);

	memset(&r, 0, sizeof(r));
	r.src.addr.family = AF_INET;
	r.src.addr.u.v4.s_addr = htonl(0xc6124000); /* 198.18.64.0/18 */
	r.src.plen = 18;
	r.t.kind = RS_T_RETURN;
	assert_int_equal(nftenc_rule(&r, WRITER_IPV4, RS_NAT, "KUBE-SVC-X", &nr, &why), 0);
	back = wire(nr);
	assert_int_equal(nftread_rule(back, WRITER_IPV6, rs, &dec, &jump), 1);
	assert_int_equal(dec.t.kind, OWNED_T_FOREIGN);
	nftnl_rule_free(back);
	nftnl_rule_free(nr);
	ruleset_free(rs);
}

static void test_builtin(void **state)
{
	(void)state;
	assert_int_equal(nftenc_builtin(RS_NAT, "PREROUTING")->prio, -100);
	assert_int_equal(nftenc_builtin(RS_NAT, "INPUT")->prio, 100);
	assert_string_equal(nftenc_builtin(RS_FILTER, "FORWARD")->type, "filter");
	assert_null(nftenc_builtin(RS_FILTER, "PREROUTING"));
	assert_null(nftenc_builtin(RS_NAT, "KUBE-SERVICES"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cluster), cmocka_unit_test(test_original),
		cmocka_unit_test(test_extra),   cmocka_unit_test(test_dual_stack),
		cmocka_unit_test(test_extra6),  cmocka_unit_test(test_foreign),
		cmocka_unit_test(test_refused), cmocka_unit_test(test_builtin),
		cmocka_unit_test(test_family_strict), cmocka_unit_test(test_nfacct),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
