/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/duration.h"
#include "util.h"

static const struct {
	const char *in;
	int r;
	uint64_t usec;
} parse_cases[] = {
	{ "0", 0, 0 },
	{ "+0", 0, 0 },
	{ "0s", 0, 0 },
	{ "500ms", 0, 500000 },
	{ "1s", 0, 1000000 },
	{ "2m", 0, 120000000 },
	{ "1h", 0, 3600000000ULL },
	{ "1h30m", 0, 5400000000ULL },
	{ "1h30m15s", 0, 5415000000ULL },
	{ "1.5s", 0, 1500000 },
	{ ".5s", 0, 500000 },
	{ "1.s", 0, 1000000 },
	{ "0.25h", 0, 900000000ULL },
	{ "100us", 0, 100 },
	{ "100\xc2\xb5s", 0, 100 },
	{ "100\xce\xbcs", 0, 100 },
	{ "1500ns", 0, 1 },
	{ "999ns", 0, 0 },
	{ "1m0.5s", 0, 60500000 },
	{ "10s500ms", 0, 10500000 },
	{ "1.0000000000000000000001s", 0, 1000000 },
	{ "2562047h", 0, 2562047ULL * 3600000000ULL },
	{ "", -EINVAL, 0 },
	{ "1", -EINVAL, 0 },
	{ "10", -EINVAL, 0 },
	{ "s", -EINVAL, 0 },
	{ ".s", -EINVAL, 0 },
	{ "1x", -EINVAL, 0 },
	{ "1 s", -EINVAL, 0 },
	{ "1S", -EINVAL, 0 },
	{ "-1s", -EINVAL, 0 },
	{ "1s-", -EINVAL, 0 },
	{ "1s2", -EINVAL, 0 },
	{ "1sec", -EINVAL, 0 },
	{ "+", -EINVAL, 0 },
	{ "2562048h", -ERANGE, 0 },
	{ "9223372036854775808ns", -ERANGE, 0 },
	{ "99999999999999999999s", -ERANGE, 0 },
	{ "2562047h2562047h", -ERANGE, 0 },
};

static void test_parse_table(void **state)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(parse_cases); i++) {
		uint64_t v = 4242;
		int r = duration_parse(parse_cases[i].in, &v);

		if (r != parse_cases[i].r)
			fail_msg("'%s': got %d, want %d", parse_cases[i].in, r, parse_cases[i].r);
		if (r == 0 && v != parse_cases[i].usec)
			fail_msg("'%s': got %llu us, want %llu", parse_cases[i].in,
				 (unsigned long long)v, (unsigned long long)parse_cases[i].usec);
		if (r < 0 && v != 4242)
			fail_msg("'%s': out-param written on failure", parse_cases[i].in);
	}
	assert_int_equal(duration_parse(NULL, &(uint64_t){ 0 }), -EINVAL);
}

static const struct {
	uint64_t usec;
	const char *out;
} fmt_cases[] = {
	{ 0, "0s" },
	{ 1, "1µs" },
	{ 1500, "1.5ms" },
	{ 500000, "500ms" },
	{ 1000000, "1s" },
	{ 1500000, "1.5s" },
	{ 60000000, "1m0s" },
	{ 90000000, "1m30s" },
	{ 3600000000ULL, "1h0m0s" },
	{ 5415500000ULL, "1h30m15.5s" },
	{ 1000001, "1.000001s" },
};

static void test_fmt_table(void **state)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(fmt_cases); i++) {
		char buf[32];

		assert_string_equal(duration_fmt(fmt_cases[i].usec, buf, sizeof(buf)), fmt_cases[i].out);
	}
}

static void test_roundtrip(void **state)
{
	static const uint64_t vals[] = { 1, 999, 1000, 123456, 1000000, 61000000, 3723000001ULL };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(vals); i++) {
		char buf[32];
		uint64_t back = 0;

		duration_fmt(vals[i], buf, sizeof(buf));
		assert_int_equal(duration_parse(buf, &back), 0);
		assert_int_equal(back, vals[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_table),
		cmocka_unit_test(test_fmt_table),
		cmocka_unit_test(test_roundtrip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
