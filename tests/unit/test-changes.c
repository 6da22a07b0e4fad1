/* SPDX-License-Identifier: GPL-2.0-or-later */
/* snapshot_changes_count(): added, replaced and removed objects, by name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/changes.h"
#include "util.h"

static void test_count(void **state)
{
	struct service a = { .ns = "ns", .name = "a" }, b = { .ns = "ns", .name = "b" },
		       b2 = { .ns = "ns", .name = "b" }, c = { .ns = "x", .name = "c" };
	struct epslice s1 = { .ns = "ns", .name = "a-1" }, s2 = { .ns = "ns", .name = "a-2" };
	struct service *v1[] = { &a, &b }, *v2[] = { &a, &b2, &c };
	struct epslice *e1[] = { &s1, &s2 }, *e2[] = { &s2 };
	struct merge_snapshot old = { .services = v1, .n_services = 2, .slices = e1, .n_slices = 2 };
	struct merge_snapshot new = { .services = v2, .n_services = 3, .slices = e2, .n_slices = 1 };
	struct snapshot_changes ch;

	snapshot_changes_count(&old, &new, &ch);
	assert_int_equal(ch.services, 2); /* b replaced, c added; a the same */
	assert_int_equal(ch.slices, 1);   /* a-1 removed */
	snapshot_changes_count(NULL, &new, &ch);
	assert_int_equal(ch.services, 3);
	assert_int_equal(ch.slices, 1);
	snapshot_changes_count(&new, &new, &ch);
	assert_int_equal(ch.services + ch.slices, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = { cmocka_unit_test(test_count) };

	return cmocka_run_group_tests(tests, NULL, NULL);
}
