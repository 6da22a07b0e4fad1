/* SPDX-License-Identifier: GPL-2.0-or-later */
/* core/progtime: the trigger-time parser and the network programming
 * latency tracker (kube-proxy's endpointschangetracker semantics). */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "core/progtime.h"
#include "util.h"

static void parse_one(const char *s, int want_r, double want)
{
	double t = -1;
	int r = progtime_parse(s, &t);

	if (r != want_r)
		fail_msg("'%s': %d, wanted %d", s ? s : "(null)", r, want_r);
	if (r == 0 && fabs(t - want) > 1e-6)
		fail_msg("'%s': %.9f, wanted %.9f", s, t, want);
}

static void test_parse(void **state)
{
	/* date -u -d 2026-12-01T22:00:00Z +%s = 1796162400 */
	parse_one("2026-12-01T22:00:00Z", 0, 1796162400);
	parse_one("1970-01-01T00:00:00Z", 0, 0);
	parse_one("2026-12-01T22:00:00.5Z", 0, 1796162400.5);
	parse_one("2026-12-01T22:00:00.123456789Z", 0, 1796162400.123456789);
	parse_one("2026-12-01T23:00:00+01:00", 0, 1796162400);
	parse_one("2026-12-01T20:30:00-01:30", 0, 1796162400);
	parse_one("2024-02-29T00:00:00Z", 0, 1709164800);
	parse_one("2000-03-01T00:00:00Z", 0, 951868800);
	parse_one("2023-02-29T00:00:00Z", -EINVAL, 0);  /* not a leap year */
	parse_one("2026-13-01T00:00:00Z", -EINVAL, 0);
	parse_one("2026-12-01T24:00:00Z", -EINVAL, 0);
	parse_one("2026-12-01T22:00:60Z", -EINVAL, 0);
	parse_one("2026-12-01 22:00:00Z", -EINVAL, 0);
	parse_one("2026-12-01T22:00:00", -EINVAL, 0);   /* no zone */
	parse_one("2026-12-01T22:00:00.Z", -EINVAL, 0);
	parse_one("2026-12-01T22:00:00Zx", -EINVAL, 0);
	parse_one("2026-12-01T22:00:00+0100", -EINVAL, 0);
	parse_one("1969-12-31T23:59:59Z", -EINVAL, 0);
	parse_one("1970-01-01T00:30:00+01:00", -EINVAL, 0);
	parse_one("", -EINVAL, 0);
	parse_one("now", -EINVAL, 0);
	parse_one(NULL, -EINVAL, 0);
}

struct seen {
	size_t n;
	uint8_t family[16];
	double v[16];
};

static void observe(uint8_t family, double seconds, void *userdata)
{
	struct seen *s = userdata;

	assert_true(s->n < 16);
	s->family[s->n] = family;
	s->v[s->n++] = seconds;
}

#define SLICE(NS, NAME, SVC, FAM, T) \
	{ .ns = NS, .name = NAME, .service_name = SVC, .family = FAM, .trigger_time = T }

static struct merge_snapshot snap(struct epslice **s, size_t n)
{
	return (struct merge_snapshot){ .slices = s, .n_slices = n };
}

/* Added and changed slices are measured from their trigger time, each in
 * its own family; unchanged ones (the same item), times before the start
 * and families not programmed add nothing. */
static void test_note_and_observe(void **state)
{
	struct epslice a = SLICE("ns", "a-1", "a", AF_INET, 1000);
	struct epslice a6 = SLICE("ns", "a-6", "a", AF_INET6, 1001);
	struct epslice b = SLICE("ns", "b-1", "b", AF_INET, 50); /* before the start */
	struct epslice a2 = SLICE("ns", "a-1", "a", AF_INET, 1010);
	struct epslice c = SLICE("ns", "c-1", "c", AF_INET, 0);  /* no annotation */
	struct epslice *v1[] = { &a, &a6, &b }, *v2[] = { &a2, &a6, &b, &c };
	struct merge_snapshot s1 = snap(v1, 3), s2 = snap(v2, 4);
	struct progtime pt;
	struct seen seen = { 0 };

	progtime_init(&pt, 100);
	assert_int_equal(progtime_note(&pt, NULL, &s1, AF_UNSPEC), 0);
	assert_int_equal(pt.n_pending, 2);
	progtime_sync_start(&pt);
	assert_int_equal(progtime_sync_done(&pt, true, 1002, observe, &seen), 2);
	assert_int_equal(seen.n, 2);
	assert_int_equal(seen.family[0], AF_INET);
	assert_true(fabs(seen.v[0] - 2) < 1e-9);
	assert_int_equal(seen.family[1], AF_INET6);
	assert_true(fabs(seen.v[1] - 1) < 1e-9);

	/* a-1 replaced, a-6 and b the same items, c without a time. */
	seen.n = 0;
	assert_int_equal(progtime_note(&pt, &s1, &s2, AF_UNSPEC), 0);
	progtime_sync_start(&pt);
	assert_int_equal(progtime_sync_done(&pt, true, 1012.5, observe, &seen), 1);
	assert_true(fabs(seen.v[0] - 2.5) < 1e-9);
	assert_int_equal(seen.family[0], AF_INET);

	/* An IPv4-only node: IPv6 slices are not programmed, not measured. */
	seen.n = 0;
	assert_int_equal(progtime_note(&pt, NULL, &s1, AF_INET), 0);
	assert_int_equal(pt.n_pending, 1);
	progtime_sync_start(&pt);
	progtime_sync_done(&pt, true, 1001, observe, &seen);
	assert_int_equal(seen.n, 1);
	assert_int_equal(seen.family[0], AF_INET);
	progtime_done(&pt);
}

/* A failed sync keeps what it carried; the next successful one measures
 * it to its own end, with what came in between. */
static void test_failed_sync(void **state)
{
	struct epslice a = SLICE("ns", "a-1", "a", AF_INET, 1000);
	struct epslice b = SLICE("ns", "b-1", "b", AF_INET, 1005);
	struct epslice *v1[] = { &a }, *v2[] = { &a, &b };
	struct merge_snapshot s1 = snap(v1, 1), s2 = snap(v2, 2);
	struct progtime pt;
	struct seen seen = { 0 };

	progtime_init(&pt, 0);
	progtime_note(&pt, NULL, &s1, AF_UNSPEC);
	progtime_sync_start(&pt);
	assert_int_equal(progtime_sync_done(&pt, false, 1001, observe, &seen), 0);
	assert_int_equal(seen.n, 0);
	progtime_note(&pt, &s1, &s2, AF_UNSPEC);
	progtime_sync_start(&pt);
	assert_int_equal(progtime_sync_done(&pt, true, 1010, observe, &seen), 2);
	assert_true(fabs(seen.v[0] - 10) < 1e-9);
	assert_true(fabs(seen.v[1] - 5) < 1e-9);
	/* Nothing left: the next sync observes nothing. */
	progtime_sync_start(&pt);
	assert_int_equal(progtime_sync_done(&pt, true, 1020, observe, &seen), 0);
	progtime_done(&pt);
}

/* A slice removed drops the pending times of its service in its family
 * (kube-proxy: the annotation of a deletion measures nothing), not those
 * of the other family or of other services, nor those already in a sync. */
static void test_removed(void **state)
{
	struct epslice a1 = SLICE("ns", "a-1", "a", AF_INET, 1000);
	struct epslice a2 = SLICE("ns", "a-2", "a", AF_INET, 1001);
	struct epslice a6 = SLICE("ns", "a-6", "a", AF_INET6, 1002);
	struct epslice b = SLICE("ns", "b-1", "b", AF_INET, 1003);
	struct epslice *v1[] = { &a1, &a2, &a6, &b }, *v2[] = { &a2, &a6, &b };
	struct merge_snapshot s1 = snap(v1, 4), s2 = snap(v2, 3);
	struct progtime pt;
	struct seen seen = { 0 };

	progtime_init(&pt, 0);
	progtime_note(&pt, NULL, &s1, AF_UNSPEC);
	assert_int_equal(pt.n_pending, 4);
	progtime_note(&pt, &s1, &s2, AF_UNSPEC); /* a-1 removed */
	assert_int_equal(pt.n_pending, 2);
	progtime_sync_start(&pt);
	progtime_sync_done(&pt, true, 1010, observe, &seen);
	assert_int_equal(seen.n, 2);
	assert_int_equal(seen.family[0], AF_INET6);
	assert_true(fabs(seen.v[1] - 7) < 1e-9); /* b */

	/* Carried by a sync in flight: a removal does not take it back. */
	seen.n = 0;
	progtime_note(&pt, NULL, &s1, AF_UNSPEC);
	progtime_sync_start(&pt);
	progtime_note(&pt, &s1, &s2, AF_UNSPEC);
	assert_int_equal(progtime_sync_done(&pt, true, 1010, observe, &seen), 4);
	progtime_done(&pt);
}

static void test_cap(void **state)
{
	struct epslice a = SLICE("ns", "a-1", "a", AF_INET, 1000);
	struct epslice *v[] = { &a };
	struct merge_snapshot s = snap(v, 1);
	struct progtime pt;

	progtime_init(&pt, 0);
	for (size_t i = 0; i < PROGTIME_MAX + 5; i++)
		assert_int_equal(progtime_note(&pt, NULL, &s, AF_UNSPEC), 0);
	assert_int_equal(pt.n_pending, PROGTIME_MAX);
	assert_int_equal(pt.dropped, 5);
	progtime_done(&pt);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_note_and_observe),
		cmocka_unit_test(test_failed_sync),
		cmocka_unit_test(test_removed),
		cmocka_unit_test(test_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
