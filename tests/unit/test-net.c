/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The network sources' neutral plumbing (src/sources/net/): base64, the
 * line framer of the watch streams, and the reconnect backoff.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sources/net/backoff.h"
#include "sources/net/base64.h"
#include "sources/net/framer.h"
#include "util.h"

/* ---- base64 ---- */

static void test_b64_vectors(void **state)
{
	/* RFC 4648 section 10. */
	static const char *const v[][2] = {
		{ "", "" },         { "f", "Zg==" },        { "fo", "Zm8=" },         { "foo", "Zm9v" },
		{ "foob", "Zm9vYg==" }, { "fooba", "Zm9vYmE=" }, { "foobar", "Zm9vYmFy" },
		{ "/registry/services/specs/default/web",
		  "L3JlZ2lzdHJ5L3NlcnZpY2VzL3NwZWNzL2RlZmF1bHQvd2Vi" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(v); i++) {
		char *e = base64_encode(v[i][0], strlen(v[i][0])), *d;
		size_t n;

		assert_non_null(e);
		assert_string_equal(e, v[i][1]);
		assert_int_equal(base64_decode(e, strlen(e), &d, &n), 0);
		assert_int_equal(n, strlen(v[i][0]));
		assert_memory_equal(d, v[i][0], n);
		assert_int_equal(d[n], '\0');
		free(e);
		free(d);
	}
}

static void test_b64_bad_and_unpadded(void **state)
{
	static const char *const bad[] = { "Zg=", "Z", "Zm9v!", "Zh==", "Zm9=", "Zm9vY===",
					   "Zm 9v", "=Zg=", "Zg==Zg==" };
	char *d;
	size_t n;

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		if (base64_decode(bad[i], strlen(bad[i]), &d, &n) != -EINVAL)
			fail_msg("'%s' decoded", bad[i]);
	assert_int_equal(base64_decode("Zm8", 3, &d, &n), 0);
	assert_int_equal(n, 2);
	assert_memory_equal(d, "fo", 2);
	free(d);
	/* Only n bytes are read. */
	assert_int_equal(base64_decode("Zm9vYmFy!!!", 8, &d, &n), 0);
	assert_int_equal(n, 6);
	free(d);
}

static void test_b64_binary_roundtrip(void **state)
{
	unsigned char buf[300];
	char *e, *d;
	size_t n;

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)(i * 37 + 11);
	for (size_t len = 0; len <= sizeof(buf); len++) {
		e = base64_encode(buf, len);
		assert_non_null(e);
		assert_int_equal(strlen(e), (len + 2) / 3 * 4);
		assert_int_equal(base64_decode(e, strlen(e), &d, &n), 0);
		assert_int_equal(n, len);
		if (len)
			assert_memory_equal(d, buf, len);
		free(e);
		free(d);
	}
}

/* ---- framing ---- */

struct lines {
	char got[16][128];
	size_t n;
	int fail_at; /* return -EIO on this line (1-based), 0 = never */
};

static int collect(const char *line, size_t len, void *userdata)
{
	struct lines *l = userdata;

	if (l->fail_at && (int)l->n + 1 == l->fail_at)
		return -EIO;
	assert_true(l->n < ARRAY_SIZE(l->got));
	assert_true(len < sizeof(l->got[0]));
	memcpy(l->got[l->n], line, len);
	l->got[l->n][len] = '\0';
	l->n++;
	return 0;
}

static void test_framer_every_split(void **state)
{
	static const char stream[] = "{\"result\":{\"created\":true}}\n"
				     "\n"
				     "{\"result\":{\"a\":\"x\\ny\"}}\r\n"
				     "{\"b\":1}\n"
				     "{\"partial\":";
	const size_t n = sizeof(stream) - 1;

	/* Cut the stream in three at every pair of positions. */
	for (size_t i = 0; i <= n; i++) {
		for (size_t j = i; j <= n; j++) {
			struct framer f;
			struct lines l = { 0 };

			framer_init(&f, 1024);
			assert_int_equal(framer_feed(&f, stream, i, collect, &l), 0);
			assert_int_equal(framer_feed(&f, stream + i, j - i, collect, &l), 0);
			assert_int_equal(framer_feed(&f, stream + j, n - j, collect, &l), 0);
			assert_int_equal(l.n, 3);
			assert_string_equal(l.got[0], "{\"result\":{\"created\":true}}");
			assert_string_equal(l.got[1], "{\"result\":{\"a\":\"x\\ny\"}}\r");
			assert_string_equal(l.got[2], "{\"b\":1}");
			/* The partial object waits for its newline. */
			assert_int_equal(f.len, strlen("{\"partial\":"));
			framer_done(&f);
		}
	}
}

static void test_framer_bytewise_and_limits(void **state)
{
	static const char stream[] = "{\"x\":1}\n{\"y\":2}\n{\"z\":3}\n";
	struct framer f;
	struct lines l = { 0 };

	framer_init(&f, 1024);
	for (size_t i = 0; i < sizeof(stream) - 1; i++)
		assert_int_equal(framer_feed(&f, stream + i, 1, collect, &l), 0);
	assert_int_equal(l.n, 3);
	assert_string_equal(l.got[2], "{\"z\":3}");
	framer_done(&f);

	/* A line longer than the limit fails, whole or in pieces. */
	framer_init(&f, 8);
	l.n = 0;
	assert_int_equal(framer_feed(&f, "{\"x\":1234}\n", 11, collect, &l), -EFBIG);
	framer_reset(&f);
	assert_int_equal(framer_feed(&f, "{\"x\":", 5, collect, &l), 0);
	assert_int_equal(framer_feed(&f, "1234}", 5, collect, &l), -EFBIG);
	framer_reset(&f);
	assert_int_equal(framer_feed(&f, "{\"x\":1}\n", 8, collect, &l), 0);
	assert_int_equal(l.n, 1);
	framer_done(&f);

	/* The callback's error stops the feed. */
	framer_init(&f, 1024);
	l = (struct lines){ .fail_at = 2 };
	assert_int_equal(framer_feed(&f, stream, sizeof(stream) - 1, collect, &l), -EIO);
	assert_int_equal(l.n, 1);
	framer_done(&f);
}

static void test_framer_blank_and_exact_limit(void **state)
{
	struct framer f;
	struct lines l = { 0 };

	/* Empty and blank-only lines are skipped, split or whole. */
	framer_init(&f, 4);
	assert_int_equal(framer_feed(&f, "\n \t\r\n", 5, collect, &l), 0);
	assert_int_equal(framer_feed(&f, "  ", 2, collect, &l), 0);
	assert_int_equal(framer_feed(&f, "\nabcd\n", 6, collect, &l), 0);
	assert_int_equal(l.n, 1);
	assert_string_equal(l.got[0], "abcd");
	/* A line of exactly max bytes passes in pieces too; one more fails. */
	assert_int_equal(framer_feed(&f, "ab", 2, collect, &l), 0);
	assert_int_equal(framer_feed(&f, "cd\n", 3, collect, &l), 0);
	assert_int_equal(l.n, 2);
	assert_int_equal(framer_feed(&f, "abcde\n", 6, collect, &l), -EFBIG);
	framer_reset(&f);
	assert_int_equal(framer_feed(&f, "abc", 3, collect, &l), 0);
	assert_int_equal(framer_feed(&f, "de", 2, collect, &l), -EFBIG);
	/* Reset drops the partial line: the next line starts clean. */
	framer_reset(&f);
	assert_int_equal(framer_feed(&f, "xy\n", 3, collect, &l), 0);
	assert_int_equal(l.n, 3);
	assert_string_equal(l.got[2], "xy");
	/* Done frees and keeps the limit; the framer is usable again. */
	framer_done(&f);
	assert_null(f.buf);
	assert_int_equal(f.max, 4);
	assert_int_equal(framer_feed(&f, "q", 1, collect, &l), 0);
	framer_done(&f);

	framer_init(&f, 0);
	assert_int_equal(f.max, FRAMER_MAX_DEFAULT);
	framer_done(&f);
}

/* ---- backoff ---- */

struct backoff_case {
	uint64_t base, cap;
	unsigned attempt;
	uint64_t rnd;
	uint64_t want;
};

static const struct backoff_case backoff_cases[] = {
	/* d = base * 2^attempt; rnd 0 gives d/2, rnd d/2 gives d. */
	{ 200, 5000, 0, 0, 100 },
	{ 200, 5000, 0, 100, 200 },
	{ 200, 5000, 0, 101, 100 }, /* rnd wraps modulo d/2 + 1 */
	{ 200, 5000, 1, 0, 200 },
	{ 200, 5000, 3, 0, 800 },
	{ 200, 5000, 3, 800, 1600 },
	/* 200 * 2^5 = 6400 is capped to 5000. */
	{ 200, 5000, 5, 0, 2500 },
	{ 200, 5000, 5, 2500, 5000 },
	{ 200, 5000, 4000000000u, 2500, 5000 },
	/* A cap below the base caps the first attempt too. */
	{ 300, 100, 0, 50, 100 },
	/* The doubling stops at the cap: no overflow at huge attempts. */
	{ 1, UINT64_MAX / 2, 200, 0, UINT64_MAX / 4 },
	{ 200 * 1000ull, 5 * 1000 * 1000ull, 2, 0, 400 * 1000ull },
};

static void test_backoff_table(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(backoff_cases); i++) {
		const struct backoff_case *c = &backoff_cases[i];
		uint64_t got = backoff_usec(c->base, c->cap, c->attempt, c->rnd);

		if (got != c->want)
			fail_msg("case %zu: base %llu cap %llu attempt %u rnd %llu: got %llu, want %llu",
				 i, (unsigned long long)c->base, (unsigned long long)c->cap,
				 c->attempt, (unsigned long long)c->rnd, (unsigned long long)got,
				 (unsigned long long)c->want);
	}
}

static void test_backoff_bounds_and_spread(void **state)
{
	static const uint64_t rnds[] = { 0, 1, 12345, 0x7fffffffffffffffull, UINT64_MAX };
	uint64_t prev = 0;

	for (unsigned a = 0; a < 70; a++) {
		uint64_t d = a < 5 ? 200ull << a : 5000;

		for (size_t i = 0; i < ARRAY_SIZE(rnds); i++) {
			uint64_t x = backoff_usec(200, 5000, a, rnds[i]);

			assert_true(x >= d / 2);
			assert_true(x <= d);
		}
		assert_true(d >= prev);
		prev = d;
	}
	/* Jitter spreads: over many random values both halves of [d/2, d] are hit. */
	{
		unsigned low = 0, high = 0;
		uint64_t r = 0x9e3779b97f4a7c15ull;

		for (int i = 0; i < 1000; i++) {
			uint64_t x;

			r ^= r << 13;
			r ^= r >> 7;
			r ^= r << 17;
			x = backoff_usec(200, 5000, 10, r);
			if (x < 3750)
				low++;
			else
				high++;
		}
		assert_true(low > 100);
		assert_true(high > 100);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_b64_vectors),
		cmocka_unit_test(test_b64_bad_and_unpadded),
		cmocka_unit_test(test_b64_binary_roundtrip),
		cmocka_unit_test(test_framer_every_split),
		cmocka_unit_test(test_framer_bytewise_and_limits),
		cmocka_unit_test(test_framer_blank_and_exact_limit),
		cmocka_unit_test(test_backoff_table),
		cmocka_unit_test(test_backoff_bounds_and_spread),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
