/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The caps on one paged list: items, pages, bytes and time, each with its
 * reason; the time left for the next page.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sources/net/listcap.h"

static struct listcap small(void)
{
	return (struct listcap){ .max_items = 10, .max_pages = 3, .max_bytes = 1000,
				 .max_usec = 5000000 };
}

static void test_items(void **state)
{
	struct listcap c = small();
	char why[200];

	listcap_begin(&c, 100);
	assert_int_equal(listcap_page(&c, 10, 10, 200, why, sizeof(why)), 0);
	assert_int_equal(listcap_page(&c, 10, 11, 300, why, sizeof(why)), -E2BIG);
	assert_string_equal(why, "more than 10 items (11 in 2 pages): the limit is 10");
}

static void test_pages(void **state)
{
	struct listcap c = small();
	char why[200];

	listcap_begin(&c, 0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(listcap_next_page(&c, 0, why, sizeof(why)), 0);
		assert_int_equal(listcap_page(&c, 0, 0, 0, why, sizeof(why)), 0);
	}
	assert_int_equal(listcap_next_page(&c, 0, why, sizeof(why)), -E2BIG);
	assert_string_equal(why, "3 pages and still not the last: the limit is 3 pages");
	/* A new list counts from zero. */
	listcap_begin(&c, 0);
	assert_int_equal(listcap_next_page(&c, 0, why, sizeof(why)), 0);
}

static void test_bytes(void **state)
{
	struct listcap c = small();
	char why[200];

	c.max_bytes = 3u << 20;
	listcap_begin(&c, 0);
	assert_int_equal(listcap_page(&c, 2u << 20, 1, 0, why, sizeof(why)), 0);
	assert_int_equal(listcap_page(&c, (1u << 20) + 1, 2, 0, why, sizeof(why)), -E2BIG);
	assert_string_equal(why, "more than 3 MiB in 2 pages: the limit is 3 MiB");
}

static void test_time(void **state)
{
	struct listcap c = small();
	char why[200];

	listcap_begin(&c, 1000000);
	assert_int_equal(listcap_remaining_usec(&c, 1000000), 5000000);
	assert_int_equal(listcap_remaining_usec(&c, 4000000), 2000000);
	assert_int_equal(listcap_page(&c, 1, 1, 5999999, why, sizeof(why)), 0);
	assert_int_equal(listcap_remaining_usec(&c, 6000000), 0);
	assert_int_equal(listcap_next_page(&c, 6000000, why, sizeof(why)), -E2BIG);
	assert_string_equal(why, "not complete after 5 s (1 pages): the limit is 5 s");
	assert_int_equal(listcap_page(&c, 1, 1, 7000000, why, sizeof(why)), -E2BIG);
	/* A clock that went back leaves the whole time. */
	assert_int_equal(listcap_remaining_usec(&c, 0), 5000000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_items),
		cmocka_unit_test(test_pages),
		cmocka_unit_test(test_bytes),
		cmocka_unit_test(test_time),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
