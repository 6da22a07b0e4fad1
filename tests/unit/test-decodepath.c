/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The decoders' field path (sources/decode/decode-json.h): dec_path_key()
 * and dec_path_idx() append as dec_path_push() with ".%s" / "[%zu]" does,
 * cut at the same place when the path is full, and pop back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sources/decode/decode-json.h"

/* Two contexts whose path is fill bytes of 'p' (no path: fill 0). */
static void start(struct dctx *a, struct dctx *b, size_t fill)
{
	memset(a, 0, sizeof(*a));
	memset(a->path, 'p', fill);
	a->plen = fill;
	*b = *a;
}

static void same(const struct dctx *a, const struct dctx *b)
{
	assert_int_equal(a->plen, b->plen);
	assert_int_equal(strlen(a->path), a->plen);
	assert_string_equal(a->path, b->path);
}

static void test_key(void **state)
{
	char key[300];

	(void)state;
	for (size_t fill = 0; fill < sizeof(((struct dctx *)0)->path); fill++)
		for (size_t klen = 0; klen < sizeof(key); klen += 7) {
			struct dctx a, b;
			size_t la, lb;

			memset(key, 'k', klen);
			key[klen] = '\0';
			start(&a, &b, fill);
			la = dec_path_key(&a, key);
			lb = dec_path_push(&b, fill ? ".%s" : "%s", key);
			assert_int_equal(la, lb);
			same(&a, &b);
			dec_path_pop(&a, la);
			assert_int_equal(a.plen, fill);
			assert_int_equal(strlen(a.path), fill);
		}
}

static void test_idx(void **state)
{
	static const size_t idx[] = { 0, 1, 9, 10, 99, 100, 12345, SIZE_MAX };

	(void)state;
	for (size_t fill = 0; fill < sizeof(((struct dctx *)0)->path); fill++)
		for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++) {
			struct dctx a, b;
			size_t la, lb;

			start(&a, &b, fill);
			la = dec_path_idx(&a, idx[i]);
			lb = dec_path_push(&b, "[%zu]", idx[i]);
			assert_int_equal(la, lb);
			same(&a, &b);
		}
}

/* The path of a nested field, as the messages show it. */
static void test_nested(void **state)
{
	struct dctx c = { 0 };
	size_t l0, l1, l2;

	(void)state;
	l0 = dec_path_key(&c, "spec");
	l1 = dec_path_key(&c, "ports");
	l2 = dec_path_idx(&c, 12);
	dec_path_key(&c, "nodePort");
	assert_string_equal(c.path, "spec.ports[12].nodePort");
	dec_path_pop(&c, l2);
	assert_string_equal(c.path, "spec.ports");
	dec_path_pop(&c, l1);
	assert_string_equal(c.path, "spec");
	dec_path_pop(&c, l0);
	assert_string_equal(c.path, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_key),
		cmocka_unit_test(test_idx),
		cmocka_unit_test(test_nested),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
