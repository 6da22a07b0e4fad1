/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * owned_jumps_match(): which of svcnat's live jump rules in a built-in
 * chain stay, which go, and which planned ones are inserted.  Rules are
 * letters here; equal letters are equal rules.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cases),
		cmocka_unit_test(test_owned_chains),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
