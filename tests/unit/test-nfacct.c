/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nfnetlink_acct objects (sys/nfacct.c) against the kernel, in a network
 * namespace of the test's own (unshare(CLONE_NEWNET) first: the host's
 * objects are never touched): a missing object reads -ENOENT, ensure makes
 * it once and leaves it (and its counts) alone after, names are checked.
 * Skipped (77) without the rights to make a namespace; a kernel without
 * nfnetlink_acct skips too, outside CI.
 */
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sys/nfacct.h"

static void test_missing(void **state)
{
	struct nfacct_counter c = { 7, 7 };

	(void)state;
	assert_int_equal(nfacct_get("svcnat_test_missing", &c), -ENOENT);
	assert_int_equal(c.packets, 7); /* untouched on failure */
}

static void test_ensure(void **state)
{
	struct nfacct_counter c = { 7, 7 };

	(void)state;
	assert_int_equal(nfacct_ensure("ct_state_invalid_dropped_pkts"), 0);
	assert_int_equal(nfacct_get("ct_state_invalid_dropped_pkts", &c), 0);
	assert_int_equal(c.packets, 0);
	assert_int_equal(c.bytes, 0);
	/* Again: it exists, nothing is replaced. */
	assert_int_equal(nfacct_ensure("ct_state_invalid_dropped_pkts"), 0);
	assert_int_equal(nfacct_get("ct_state_invalid_dropped_pkts", &c), 0);
	/* 31 bytes is the longest name. */
	assert_int_equal(nfacct_ensure("n23456789012345678901234567890a"), 0);
	assert_int_equal(nfacct_get("n23456789012345678901234567890a", &c), 0);
}

static void test_names(void **state)
{
	struct nfacct_counter c;

	(void)state;
	assert_int_equal(nfacct_ensure(""), -EINVAL);
	assert_int_equal(nfacct_ensure(NULL), -EINVAL);
	assert_int_equal(nfacct_ensure("n234567890123456789012345678901b"), -EINVAL);
	assert_int_equal(nfacct_get("n234567890123456789012345678901b", &c), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_missing),
		cmocka_unit_test(test_ensure),
		cmocka_unit_test(test_names),
	};
	struct nfacct_counter c;
	int r;

	if (unshare(CLONE_NEWNET) < 0) {
		fprintf(stderr, "SKIP: cannot make a network namespace: %s\n", strerror(errno));
		return getenv("CI") && !strcmp(getenv("CI"), "true") ? 1 : 77;
	}
	r = nfacct_get("svcnat_probe", &c);
	if (r != -ENOENT) {
		fprintf(stderr, "SKIP: no nfnetlink_acct here: %s\n", strerror(-r));
		return getenv("CI") && !strcmp(getenv("CI"), "true") ? 1 : 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
