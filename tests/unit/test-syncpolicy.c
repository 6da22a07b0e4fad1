/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/syncpolicy.h"
#include "util.h"

#define S(x) ((uint64_t)((x) * 1000000.0))
#define T0 S(1000) /* the injected clock starts at an arbitrary point */

static void setup(struct syncpolicy *p, double min, double period, double rmin, double rmax)
{
	struct syncpolicy_config c = {
		.min_sync_usec = S(min),
		.sync_period_usec = S(period),
		.retry_min_usec = S(rmin),
		.retry_max_usec = S(rmax),
	};

	assert_int_equal(syncpolicy_config_check(&c), 0);
	syncpolicy_init(p, &c, T0);
}

static void expect_next(const struct syncpolicy *p, uint64_t at, enum sync_reason reason)
{
	enum sync_reason r;
	uint64_t n = syncpolicy_next(p, &r);

	if (n != at || r != reason)
		fail_msg("next: got %.3f (%s), want %.3f (%s)", (double)(n - T0) / 1e6,
			 sync_reason_name(r), (double)(at - T0) / 1e6, sync_reason_name(reason));
}

static void test_defaults(void **state)
{
	struct syncpolicy_config c;

	syncpolicy_config_default(&c);
	assert_int_equal(c.min_sync_usec, S(1));
	assert_int_equal(c.sync_period_usec, S(30));
	assert_int_equal(syncpolicy_config_check(&c), 0);
}

static void test_config_check(void **state)
{
	static const struct {
		double min, period, rmin, rmax;
		int r;
	} cases[] = {
		{ 1, 30, 1, 30, 0 },   { 0, 30, 1, 30, 0 },    { 30, 30, 1, 30, 0 },
		{ 31, 30, 1, 30, -EINVAL }, { 1, 0, 1, 30, -EINVAL }, { 1, 30, 0, 30, -EINVAL },
		{ 1, 30, 10, 5, -EINVAL },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct syncpolicy_config c = {
			S(cases[i].min), S(cases[i].period), S(cases[i].rmin), S(cases[i].rmax),
		};

		assert_int_equal(syncpolicy_config_check(&c), cases[i].r);
	}
	/* retry_max 0 means "the sync period". */
	struct syncpolicy_config c = { S(1), S(20), S(1), 0 };

	assert_int_equal(syncpolicy_config_check(&c), 0);
	assert_int_equal(c.retry_max_usec, S(20));
}

/* The daemon's policy from its two flags: retries between 1s (at most the
 * period) and the period. */
static void test_config_periods(void **state)
{
	static const struct {
		double min, period, rmin, rmax;
		int r;
	} cases[] = {
		{ 1, 30, 1, 30, 0 },      { 0, 0.5, 0.5, 0.5, 0 }, { 2, 2, 1, 2, 0 },
		{ 0, 45, 1, 45, 0 },      { 3, 2, 0, 0, -EINVAL }, { 0, 0, 0, 0, -EINVAL },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct syncpolicy_config c;

		assert_int_equal(syncpolicy_config_periods(&c, S(cases[i].min), S(cases[i].period)),
				 cases[i].r);
		if (cases[i].r < 0)
			continue;
		assert_int_equal(c.min_sync_usec, S(cases[i].min));
		assert_int_equal(c.sync_period_usec, S(cases[i].period));
		assert_int_equal(c.retry_min_usec, S(cases[i].rmin));
		assert_int_equal(c.retry_max_usec, S(cases[i].rmax));
	}
}

static void test_initial_due_at_once(void **state)
{
	struct syncpolicy p;
	enum sync_reason r;

	setup(&p, 1, 30, 1, 30);
	expect_next(&p, T0, SYNC_INITIAL);
	assert_true(syncpolicy_due(&p, T0, &r));
	assert_int_equal(r, SYNC_INITIAL);
	assert_true(syncpolicy_healthy(&p, T0 + S(3600), S(60)));
}

static void test_batching(void **state)
{
	struct syncpolicy p;
	enum sync_reason r;

	setup(&p, 1, 30, 1, 30);
	syncpolicy_sync_done(&p, T0 + S(0.1), true);
	expect_next(&p, T0 + S(30.1), SYNC_PERIODIC);

	/* Three changes inside the min-sync window: one sync at its end. */
	syncpolicy_change(&p, T0 + S(0.2));
	syncpolicy_change(&p, T0 + S(0.3));
	syncpolicy_change(&p, T0 + S(0.5));
	expect_next(&p, T0 + S(1.1), SYNC_CHANGE);
	assert_false(syncpolicy_due(&p, T0 + S(1.0), &r));
	assert_true(syncpolicy_due(&p, T0 + S(1.1), &r));
	assert_int_equal(r, SYNC_CHANGE);

	uint64_t since = 0;

	assert_true(syncpolicy_pending_since(&p, &since));
	assert_int_equal(since, T0 + S(0.2)); /* change-to-commit counts from the oldest */

	syncpolicy_sync_done(&p, T0 + S(1.3), true);
	assert_false(syncpolicy_pending_since(&p, &since));
	/* Nothing pending: the next is the periodic check, from the end. */
	expect_next(&p, T0 + S(31.3), SYNC_PERIODIC);

	/* A change long after the window syncs at once. */
	syncpolicy_change(&p, T0 + S(10));
	expect_next(&p, T0 + S(10), SYNC_CHANGE);
	assert_true(syncpolicy_due(&p, T0 + S(10), NULL));
}

/* A sync running off the loop thread: a change that arrives while it runs
 * was not read by it, so it stays due (and pending) after it ends. */
static void test_change_while_running(void **state)
{
	struct syncpolicy p;
	uint64_t since = 0;

	setup(&p, 1, 30, 1, 30);
	syncpolicy_sync_done(&p, T0 + S(0.1), true);
	syncpolicy_change(&p, T0 + S(2));
	syncpolicy_sync_start(&p, T0 + S(2));
	syncpolicy_change(&p, T0 + S(3)); /* while the write runs */
	syncpolicy_sync_done(&p, T0 + S(5), true);
	expect_next(&p, T0 + S(6), SYNC_CHANGE);
	assert_true(syncpolicy_pending_since(&p, &since));
	assert_int_equal(since, T0 + S(3));

	/* no change while running: nothing due but the period */
	syncpolicy_sync_start(&p, T0 + S(6));
	syncpolicy_sync_done(&p, T0 + S(7), true);
	expect_next(&p, T0 + S(37), SYNC_PERIODIC);
	assert_false(syncpolicy_pending_since(&p, &since));

	/* a failed sync with a change while running: the change is due at
	 * min-sync, before the backoff's retry */
	setup(&p, 1, 30, 4, 30);
	syncpolicy_sync_done(&p, T0 + S(0.1), true);
	syncpolicy_sync_start(&p, T0 + S(1));
	syncpolicy_change(&p, T0 + S(1.5));
	syncpolicy_sync_done(&p, T0 + S(2), false);
	expect_next(&p, T0 + S(3), SYNC_CHANGE);
	assert_true(syncpolicy_pending_since(&p, &since));
	assert_int_equal(since, T0 + S(1.5)); /* the change: the oldest event pending */
}

static void test_min_interval_counts_from_sync_end(void **state)
{
	struct syncpolicy p;

	setup(&p, 2, 30, 1, 30);
	syncpolicy_sync_done(&p, T0 + S(5), true); /* a slow sync ending at 5s */
	syncpolicy_change(&p, T0 + S(5.5));
	expect_next(&p, T0 + S(7), SYNC_CHANGE);
}

static void test_zero_min_sync(void **state)
{
	struct syncpolicy p;

	setup(&p, 0, 30, 1, 30);
	syncpolicy_sync_done(&p, T0, true);
	syncpolicy_change(&p, T0 + 1);
	expect_next(&p, T0 + 1, SYNC_CHANGE);
}

static void test_periodic(void **state)
{
	struct syncpolicy p;
	uint64_t t = T0;
	int i;

	setup(&p, 1, 30, 1, 30);
	syncpolicy_sync_done(&p, t, true);
	for (i = 0; i < 5; i++) {
		enum sync_reason r;
		uint64_t next = syncpolicy_next(&p, &r);

		assert_int_equal(r, SYNC_PERIODIC);
		assert_int_equal(next, t + S(30));
		assert_false(syncpolicy_due(&p, next - 1, NULL));
		t = next + S(0.05); /* the sync itself takes 50ms */
		syncpolicy_sync_done(&p, t, true);
	}
	/* A change-triggered sync restarts the period. */
	syncpolicy_change(&p, t + S(10));
	syncpolicy_sync_done(&p, t + S(10), true);
	expect_next(&p, t + S(40), SYNC_PERIODIC);
}

static void test_backoff_sequence(void **state)
{
	static const double want[] = { 1, 2, 4, 8, 16, 30, 30, 30 };
	struct syncpolicy p;
	uint64_t t = T0;
	size_t i;

	setup(&p, 0.5, 60, 1, 30);
	for (i = 0; i < ARRAY_SIZE(want); i++) {
		syncpolicy_sync_done(&p, t, false);
		expect_next(&p, t + S(want[i]), SYNC_RETRY);
		assert_int_equal(syncpolicy_backoff(&p.cfg, (unsigned)i + 1), S(want[i]));
		t += S(want[i]);
	}
	/* Success resets the backoff. */
	syncpolicy_sync_done(&p, t, true);
	expect_next(&p, t + S(60), SYNC_PERIODIC);
	syncpolicy_sync_done(&p, t + S(1), false);
	expect_next(&p, t + S(2), SYNC_RETRY);
}

static void test_backoff_respects_min_sync_and_period(void **state)
{
	struct syncpolicy p;

	/* Retry sooner than min-sync-period is held back to it. */
	setup(&p, 5, 30, 1, 30);
	syncpolicy_sync_done(&p, T0, false);
	expect_next(&p, T0 + S(5), SYNC_RETRY);

	/* A cap above the period: the periodic sync comes first. */
	setup(&p, 1, 10, 8, 60);
	syncpolicy_sync_done(&p, T0, false);
	expect_next(&p, T0 + S(8), SYNC_RETRY);
	syncpolicy_sync_done(&p, T0 + S(8), false); /* backoff 16 > period 10 */
	expect_next(&p, T0 + S(18), SYNC_PERIODIC);
}

static void test_change_during_backoff(void **state)
{
	struct syncpolicy p;

	setup(&p, 1, 30, 1, 30);
	syncpolicy_sync_done(&p, T0, false);
	syncpolicy_sync_done(&p, T0 + S(1), false);
	syncpolicy_sync_done(&p, T0 + S(3), false);
	syncpolicy_sync_done(&p, T0 + S(7), false); /* next retry in 8s */
	expect_next(&p, T0 + S(15), SYNC_RETRY);
	/* A new change is not held back by the backoff, only by min-sync. */
	syncpolicy_change(&p, T0 + S(7.2));
	expect_next(&p, T0 + S(8), SYNC_CHANGE);
	/* That attempt fails too: back to the backoff, not a change. */
	syncpolicy_sync_done(&p, T0 + S(8), false);
	expect_next(&p, T0 + S(24), SYNC_RETRY);
}

static void test_health(void **state)
{
	struct syncpolicy p;
	const uint64_t timeout = S(60); /* 2 * sync period */

	setup(&p, 1, 30, 1, 30);
	syncpolicy_sync_done(&p, T0, true);
	assert_true(syncpolicy_healthy(&p, T0 + S(1000), timeout));

	/* A change not synced within the timeout: unhealthy. */
	syncpolicy_change(&p, T0 + S(100));
	assert_true(syncpolicy_healthy(&p, T0 + S(159), timeout));
	assert_false(syncpolicy_healthy(&p, T0 + S(160), timeout));
	syncpolicy_sync_done(&p, T0 + S(161), true);
	assert_true(syncpolicy_healthy(&p, T0 + S(161), timeout));

	/* Failed syncs, even without a change, make it unhealthy in time. */
	syncpolicy_sync_done(&p, T0 + S(200), false);
	assert_true(syncpolicy_healthy(&p, T0 + S(259), timeout));
	syncpolicy_sync_done(&p, T0 + S(230), false);
	assert_false(syncpolicy_healthy(&p, T0 + S(260), timeout)); /* counts from the first */
	syncpolicy_sync_done(&p, T0 + S(261), true);
	assert_true(syncpolicy_healthy(&p, T0 + S(262), timeout));
}

/*
 * A simulated daemon: changes arrive every 50ms for 10s; whenever a sync is
 * due it runs and takes 20ms.  Every gap between a sync's end and the next
 * start must be >= min-sync-period, and the changes must be batched into
 * about one sync per period.
 */
static void test_simulated_burst(void **state)
{
	struct syncpolicy p;
	uint64_t now = T0, last_end = 0, next_change = T0, end_changes = T0 + S(10);
	unsigned syncs = 0;
	int guard = 0;

	setup(&p, 1, 30, 1, 30);
	while (now < T0 + S(12) && guard++ < 100000) {
		uint64_t due = syncpolicy_next(&p, NULL);

		if (next_change <= end_changes && next_change <= due) {
			now = next_change;
			syncpolicy_change(&p, now);
			next_change += S(0.05);
			continue;
		}
		now = due > now ? due : now;
		if (syncs > 0 && now - last_end < S(1))
			fail_msg("sync %u starts %.3fs after the previous", syncs,
				 (double)(now - last_end) / 1e6);
		now += S(0.02);
		syncpolicy_sync_done(&p, now, true);
		last_end = now;
		syncs++;
	}
	/* 1 initial + one per 1.02s over ~10s of changes (+ the tail). */
	assert_in_range(syncs, 9, 12);
	assert_false(syncpolicy_pending_since(&p, &now));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_config_check),
		cmocka_unit_test(test_config_periods),
		cmocka_unit_test(test_initial_due_at_once),
		cmocka_unit_test(test_batching),
		cmocka_unit_test(test_change_while_running),
		cmocka_unit_test(test_min_interval_counts_from_sync_end),
		cmocka_unit_test(test_zero_min_sync),
		cmocka_unit_test(test_periodic),
		cmocka_unit_test(test_backoff_sequence),
		cmocka_unit_test(test_backoff_respects_min_sync_and_period),
		cmocka_unit_test(test_change_during_backoff),
		cmocka_unit_test(test_health),
		cmocka_unit_test(test_simulated_burst),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
