/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The list/watch skeleton of the watch sources (sources/net/reflector.h):
 * the backoff's bounds and a server's Retry-After, what counts as progress
 * (a list for the API, a watch that delivered and lasted for both), relists
 * that come too soon.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sources/net/reflector.h"
#include "util.h"

#define S 1000000ull

/* The sources' own settings: 200 ms doubling to 5 s, relists 5 s apart,
 * a watch shorter than 1 s is no progress. */
static const struct reflector_config api = {
	.backoff_base_usec = 200 * 1000ull,
	.backoff_cap_usec = 5 * S,
	.relist_min_usec = 5 * S,
	.watch_short_usec = S,
	.list_is_progress = true,
};
static const struct reflector_config etcd = {
	.backoff_base_usec = 200 * 1000ull,
	.backoff_cap_usec = 5 * S,
	.relist_min_usec = 5 * S,
	.watch_short_usec = S,
};

static void test_backoff(void **state)
{
	static const uint64_t rnds[] = { 0, 1, 12345, 0x7fffffffffffffffull, UINT64_MAX };
	struct reflector r;
	uint64_t prev = 0;
	bool first;

	reflector_init(&r, &etcd);
	assert_int_equal(r.state, REFLECTOR_IDLE);
	assert_true(reflector_next_is_list(&r));
	/* Each failure: within [d/2, d] of the doubled, capped delay. */
	for (unsigned a = 0; a < 80; a++) {
		uint64_t d = etcd.backoff_base_usec, x;

		for (unsigned i = 0; i < a && d < etcd.backoff_cap_usec; i++)
			d *= 2;
		if (d > etcd.backoff_cap_usec)
			d = etcd.backoff_cap_usec;
		for (size_t i = 0; i < ARRAY_SIZE(rnds); i++) {
			struct reflector c = r;

			x = reflector_failed(&c, rnds[i], 0, NULL);
			assert_true(x >= d / 2 && x <= d);
		}
		x = reflector_failed(&r, 0, 0, &first);
		assert_int_equal(x, d / 2);
		assert_true(first == (a == 0));
		assert_int_equal(r.state, REFLECTOR_BACKOFF);
		assert_false(r.connected);
		assert_true(d >= prev);
		prev = d;
	}
	/* The count stops growing. */
	assert_int_equal(r.attempt, REFLECTOR_MAX_ATTEMPT);
	/* Jitter spreads. */
	assert_int_not_equal(reflector_failed(&r, 1, 0, NULL), reflector_failed(&r, 999999, 0, NULL));
}

static void test_retry_after(void **state)
{
	struct reflector r;

	reflector_init(&r, &api);
	/* The server's Retry-After, up to 60 s, replaces the backoff; the count still grows. */
	assert_int_equal(reflector_failed(&r, 0, 7, NULL), 7 * S);
	assert_int_equal(r.attempt, 1);
	assert_int_equal(reflector_failed(&r, 0, 600, NULL), 60 * S);
	assert_int_equal(reflector_failed(&r, 0, 0, NULL), 400 * 1000ull);
}

static void test_progress(void **state)
{
	struct reflector a, e;
	bool first;

	reflector_init(&a, &api);
	reflector_init(&e, &etcd);
	for (int i = 0; i < 3; i++) {
		reflector_failed(&a, 0, 0, NULL);
		reflector_failed(&e, 0, 0, NULL);
	}
	/* A list applied: the watch comes next; progress for the API only. */
	reflector_listed(&a);
	reflector_listed(&e);
	assert_false(reflector_next_is_list(&a));
	assert_false(reflector_next_is_list(&e));
	assert_int_equal(a.attempt, 0);
	assert_int_equal(e.attempt, 3);

	/* A watch that was answered and ended at once, or delivered nothing,
	 * or was never established, is no progress... */
	assert_false(reflector_watch_ended(&e, true, true, S - 1));
	assert_false(reflector_watch_ended(&e, true, false, 60 * S));
	assert_false(reflector_watch_ended(&e, false, true, 60 * S));
	assert_int_equal(e.attempt, 3);
	reflector_failed(&e, 0, 0, &first);
	assert_false(first); /* still failing: "retrying", not "disconnected" */
	/* ...one that delivered and lasted is. */
	assert_true(reflector_watch_ended(&e, true, true, S));
	assert_int_equal(e.attempt, 0);
	reflector_failed(&e, 0, 0, &first);
	assert_true(first);
}

static void test_relist_too_soon(void **state)
{
	struct reflector r;
	uint64_t t = 100 * S;

	reflector_init(&r, &api);
	reflector_listed(&r);
	r.connected = true;
	/* The first relist goes at once. */
	assert_false(reflector_relist(&r, t));
	assert_true(reflector_next_is_list(&r));
	assert_false(r.connected);
	reflector_listed(&r);
	/* The next within 5 s: too soon, and the count is raised to the
	 * streak, even though the list in between reset it. */
	assert_true(reflector_relist(&r, t + 2 * S));
	assert_int_equal(r.attempt, 1);
	reflector_listed(&r);
	assert_true(reflector_relist(&r, t + 4 * S));
	assert_int_equal(r.attempt, 2);
	/* The window slides: 5 s after the last one, at once again. */
	assert_false(reflector_relist(&r, t + 9 * S));
	assert_int_equal(r.relist_streak, 0);
	/* SIGHUP: never too soon. */
	reflector_forget_relist(&r);
	assert_false(reflector_relist(&r, t + 10 * S));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_backoff),
		cmocka_unit_test(test_retry_after),
		cmocka_unit_test(test_progress),
		cmocka_unit_test(test_relist_too_soon),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
