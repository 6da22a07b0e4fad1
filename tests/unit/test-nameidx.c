/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/nameidx.h"

struct names {
	char (*v)[32];
	size_t n;
	unsigned calls; /* name() calls, to see that lookups compare little */
};

static const char *name_at(const void *ctx, size_t i)
{
	struct names *a = (struct names *)ctx;

	a->calls++;
	return a->v[i];
}

/* n names: prefix and i, in hex (16 digits) or decimal. */
static struct names make(size_t n, const char *prefix, bool hex)
{
	struct names a = { calloc(n ? n : 1, sizeof(*a.v)), n, 0 };

	assert_non_null(a.v);
	for (size_t i = 0; i < n; i++) {
		if (hex)
			snprintf(a.v[i], sizeof(a.v[i]), "%s%016zX", prefix, i);
		else
			snprintf(a.v[i], sizeof(a.v[i]), "%s%zu", prefix, i);
	}
	return a;
}

/* Every name is found at its position, over many probes' worth of names. */
static void test_finds_all(void **state)
{
	struct names a = make(100000, "KUBE-SEP-", true);
	struct nameidx ix;
	unsigned before;

	(void)state;
	assert_int_equal(nameidx_build(&ix, a.n, name_at, &a), 0);
	for (size_t i = 0; i < a.n; i++)
		assert_int_equal(nameidx_find(&ix, a.v[i]), i);
	/* The hashes keep most compares away: about one name read per find. */
	before = a.calls;
	for (size_t i = 0; i < a.n; i++)
		nameidx_find(&ix, a.v[i]);
	assert_true(a.calls - before < a.n + a.n / 10);
	assert_int_equal(nameidx_find(&ix, "KUBE-SEP-NOT-THERE"), SIZE_MAX);
	assert_int_equal(nameidx_find(&ix, ""), SIZE_MAX);
	assert_int_equal(nameidx_find(&ix, NULL), SIZE_MAX);
	nameidx_done(&ix);
	assert_null(ix.slots);
	free(a.v);
}

/* A name at two positions: the first is found; a prefix is another name. */
static void test_duplicates_and_prefixes(void **state)
{
	struct names a = make(6, "X", false);
	struct nameidx ix;

	(void)state;
	strcpy(a.v[4], "X1");
	strcpy(a.v[5], "X");
	assert_int_equal(nameidx_build(&ix, a.n, name_at, &a), 0);
	assert_int_equal(nameidx_find(&ix, "X1"), 1);
	assert_int_equal(nameidx_find(&ix, "X"), 5);
	assert_int_equal(nameidx_find(&ix, "X3"), 3);
	assert_int_equal(nameidx_find(&ix, "X4"), SIZE_MAX);
	assert_int_equal(nameidx_find(&ix, "X11"), SIZE_MAX);
	nameidx_done(&ix);
	free(a.v);
}

/* Empty, and never built: nothing is found. */
static void test_empty(void **state)
{
	struct names a = make(0, "", false);
	struct nameidx ix, none = { 0 };

	(void)state;
	assert_int_equal(nameidx_build(&ix, 0, name_at, &a), 0);
	assert_int_equal(nameidx_find(&ix, "a"), SIZE_MAX);
	assert_int_equal(nameidx_find(&none, "a"), SIZE_MAX);
	nameidx_done(&ix);
	nameidx_done(&none);
	free(a.v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_finds_all),
		cmocka_unit_test(test_duplicates_and_prefixes),
		cmocka_unit_test(test_empty),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
