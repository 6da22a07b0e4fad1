/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * owned_jumps_match(): which of svcnat's live jump rules in a built-in
 * chain stay, which go, and which planned ones are inserted (rules are
 * letters here; equal letters are equal rules); owned_check_targets().
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/owned.h"
#include "util.h"

struct pair {
	const char *live, *plan;
};

static bool letter_same(void *ctx, size_t i, size_t j)
{
	const struct pair *p = ctx;

	return p->live[i] == p->plan[j];
}

static const struct {
	const char *live, *plan;
	const long match[8]; /* per live rule */
	const long kept[8];  /* per plan rule */
	int change;
} cases[] = {
	/* nothing there yet: every planned jump is inserted */
	{ "", "ABC", { 0 }, { -1, -1, -1 }, 1 },
	/* all in place, in order: nothing changes */
	{ "ABC", "ABC", { 0, 1, 2 }, { 0, 1, 2 }, 0 },
	/* a duplicate goes, the first one stays */
	{ "AAB", "AB", { 0, -1, 1 }, { 0, 2 }, 1 },
	/* out of order: all go, all are put back */
	{ "BA", "AB", { -1, -1 }, { -1, -1 }, 1 },
	/* a jump the plan no longer has goes */
	{ "XA", "A", { -1, 0 }, { 1 }, 1 },
	/* a missing one in the middle is inserted, the others stay */
	{ "AC", "ABC", { 0, 2 }, { 0, -1, 1 }, 1 },
	/* nothing planned: all of ours go */
	{ "AB", "", { -1, -1 }, { 0 }, 1 },
	/* nothing either side */
	{ "", "", { 0 }, { 0 }, 0 },
};

static void test_cases(void **state)
{
	(void)state;
	for (size_t c = 0; c < ARRAY_SIZE(cases); c++) {
		struct pair p = { cases[c].live, cases[c].plan };
		size_t nl = strlen(p.live), np = strlen(p.plan);
		long match[8], kept[8];
		int r;

		memset(match, 0x55, sizeof(match));
		memset(kept, 0x55, sizeof(kept));
		r = owned_jumps_match(nl, np, letter_same, &p, match, kept);
		print_message("case %zu: live '%s' plan '%s'\n", c, p.live, p.plan);
		assert_int_equal(r, cases[c].change);
		for (size_t i = 0; i < nl; i++)
			assert_int_equal(match[i], cases[c].match[i]);
		for (size_t j = 0; j < np; j++)
			assert_int_equal(kept[j], cases[c].kept[j]);
	}
}

/* Whose chains are svcnat's: kube-proxy's and kubelet's canaries are not. */
static void test_owned_chains(void **state)
{
	(void)state;
	assert_true(owned_chain(RS_NAT, "KUBE-SERVICES"));
	assert_true(owned_chain(RS_FILTER, "KUBE-PROXY-FIREWALL"));
	assert_true(owned_chain(RS_NAT, "KUBE-SEP-ABCDEFGHIJKLMNOP"));
	assert_false(owned_chain(RS_FILTER, "KUBE-PROXY-CANARY"));
	assert_false(owned_chain(RS_NAT, "KUBE-PROXY-CANARY"));
	assert_false(owned_chain(RS_NAT, "KUBE-KUBELET-CANARY"));
	assert_false(owned_chain(RS_FILTER, "KUBE-FIREWALL"));
	assert_false(owned_chain(RS_NAT, "CNI-HOSTPORT-DNAT"));
}

/* --- owned_check_targets(): every jump names a planned user chain --- */

/* Parts run last to first: the result must not depend on their order. */
static void backwards(unsigned n, par_part_fn fn, void *arg)
{
	for (unsigned i = n; i-- > 0;)
		fn(arg, i);
}

/* n service chains, each jumping to its endpoint chain; PREROUTING jumps to
 * KUBE-SERVICES, which jumps to every service chain. */
static struct ruleset *targets_plan(size_t n)
{
	struct ruleset *rs = ruleset_new();
	struct rs_chain *pre, *svcs;
	char name[32];

	assert_non_null(rs);
	pre = ruleset_add_chain(rs, RS_NAT, "PREROUTING");
	svcs = ruleset_add_chain(rs, RS_NAT, "KUBE-SERVICES");
	assert_non_null(pre);
	assert_non_null(svcs);
	assert_true(pre->builtin);
	rs_chain_append(pre)->t = (struct rs_target){ .kind = RS_T_JUMP,
						       .u.chain = "KUBE-SERVICES" };
	for (size_t i = 0; i < n; i++) {
		struct rs_chain *c;

		snprintf(name, sizeof(name), "KUBE-SVC-%05zu", i);
		c = ruleset_add_chain(rs, RS_NAT, name);
		assert_non_null(c);
		rs_chain_append(svcs)->t = (struct rs_target){
			.kind = RS_T_JUMP, .u.chain = ruleset_strdup(rs, name) };
		snprintf(name, sizeof(name), "KUBE-SEP-%05zu", i);
		assert_non_null(ruleset_add_chain(rs, RS_NAT, name));
		assert_non_null(rs_chain_append(c)); /* a rule with no target */
		rs_chain_append(c)->t = (struct rs_target){
			.kind = i % 2 ? RS_T_GOTO : RS_T_JUMP, .u.chain = ruleset_strdup(rs, name) };
	}
	return rs;
}

/* Both checks, serial and in 2 and 16 parts: r and the one message. */
static void check_all(const struct ruleset *rs, int want, const char *msg)
{
	static const unsigned parts[] = { 1, 2, 16 };

	for (size_t i = 0; i < ARRAY_SIZE(parts); i++) {
		struct diag_list d;

		diag_list_init(&d);
		assert_int_equal(owned_check_targets(rs, RS_NAT, parts[i] == 1 ? NULL : backwards,
						     parts[i], &d),
				 want);
		assert_int_equal(d.n, msg ? 1 : 0);
		if (msg)
			assert_string_equal(d.items[0].msg, msg);
		diag_list_done(&d);
	}
}

static void test_targets(void **state)
{
	struct ruleset *rs = targets_plan(6000);
	struct rs_chain *late, *early;

	(void)state;
	check_all(rs, 0, NULL);
	/* Two bad jumps, the later chain first: the earlier is reported. */
	late = ruleset_find_chain(rs, RS_NAT, "KUBE-SVC-05000");
	early = ruleset_find_chain(rs, RS_NAT, "KUBE-SVC-01234");
	assert_non_null(late);
	assert_non_null(early);
	late->rules[1].t.u.chain = "KUBE-SEP-GONE";
	check_all(rs, -EINVAL,
		  "rule 2 jumps to 'KUBE-SEP-GONE', which is not a planned chain");
	/* A jump to a built-in chain is none to a planned user chain either. */
	early->rules[1].t.u.chain = "PREROUTING";
	check_all(rs, -EINVAL, "rule 2 jumps to 'PREROUTING', which is not a planned chain");
	early->rules[1].t.u.chain = NULL;
	check_all(rs, -EINVAL, "rule 2 jumps to '', which is not a planned chain");
	ruleset_free(rs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cases),
		cmocka_unit_test(test_owned_chains),
		cmocka_unit_test(test_targets),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
