/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests: the cJSON arena (sources/jsonarena.c).  free() is wrapped
 * (-Wl,--wrap=free, see Makefile.am) to see which pointers reach it.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "sources/decode/jsonarena.h"
#include "util.h"

void __real_free(void *p);
void __wrap_free(void *p);

static const void *watched; /* the pointer whose free() is counted */
static unsigned long watched_frees;

void __wrap_free(void *p)
{
	if (p && p == watched)
		watched_frees++;
	__real_free(p);
}

static void watch(const void *p)
{
	watched = p;
	watched_frees = 0;
}

/* True if the page holding p is mapped (mincore fails with ENOMEM if not). */
static bool mapped(const void *p)
{
	unsigned char vec;
	void *page = (void *)((uintptr_t)p & ~(uintptr_t)4095);

	return mincore(page, 4096, &vec) == 0;
}

static void test_alignment(void **state)
{
	static const size_t sizes[] = { 0, 1, 2, 7, 8, 9, 15, 16, 17, 63, 64, 65, 100, 4095 };
	struct jsonarena a;
	size_t i;

	(void)state;
	jsonarena_enter(&a, 0);
	for (i = 0; i < 3 * ARRAY_SIZE(sizes); i++) {
		size_t n = sizes[i % ARRAY_SIZE(sizes)];
		char *p = jsonarena_malloc(n);

		assert_non_null(p);
		assert_true(jsonarena_owns(&a, p));
		assert_int_equal((uintptr_t)p % alignof(max_align_t), 0);
		memset(p, 0xa5, n);
	}
	jsonarena_leave(&a);
}

/* Many blocks over several chunks: all owned, none overlapping. */
static void test_growth(void **state)
{
	enum { N = 5000, SZ = 1000 };
	_cleanup_free_ unsigned char **p = calloc(N, sizeof(*p));
	unsigned char *big;
	struct jsonarena a;
	size_t i, j;

	(void)state;
	assert_non_null(p);
	jsonarena_enter(&a, 100);
	/* 5 MB from a first chunk of 1 MiB: several chunks */
	for (i = 0; i < N; i++) {
		p[i] = jsonarena_malloc(SZ);
		assert_non_null(p[i]);
		memset(p[i], (int)(i & 0xff), SZ);
		memcpy(p[i], &i, sizeof(i));
		memcpy(p[i] + SZ - sizeof(i), &i, sizeof(i));
	}
	for (i = 0; i < N; i++) {
		size_t head, tail;

		assert_true(jsonarena_owns(&a, p[i]));
		memcpy(&head, p[i], sizeof(head));
		memcpy(&tail, p[i] + SZ - sizeof(tail), sizeof(tail));
		assert_int_equal(head, i);
		assert_int_equal(tail, i);
		for (j = sizeof(i); j < SZ - sizeof(i); j++)
			assert_int_equal(p[i][j], i & 0xff);
	}
	/* Larger than any chunk: a chunk of its own, still owned. */
	big = jsonarena_malloc(JSONARENA_MAX_CHUNK + 1);
	assert_non_null(big);
	assert_true(jsonarena_owns(&a, big));
	big[0] = 1;
	big[JSONARENA_MAX_CHUNK] = 2;
	assert_true(jsonarena_owns(&a, p[0]));
	jsonarena_leave(&a);
	/* Left: the chunks are unmapped and nothing is owned any more. */
	assert_false(mapped(p[0]));
	assert_false(mapped(big));
	assert_false(jsonarena_owns(&a, p[0]));
}

/* The first chunk is sized from the hint and asks for huge pages. */
static void test_hugepage(void **state)
{
	_cleanup_(freep) char *line = NULL;
	struct jsonarena a;
	bool in_vma = false, hg = false;
	size_t cap = 0;
	char *p;
	FILE *f;

	(void)state;
	jsonarena_enter(&a, 8u << 20);
	p = jsonarena_malloc(64);
	assert_non_null(p);
	f = fopen("/proc/self/smaps", "re");
	if (!f) {
		jsonarena_leave(&a);
		skip();
	}
	while (getline(&line, &cap, f) > 0) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {
			in_vma = (uintptr_t)p >= lo && (uintptr_t)p < hi;
			/* 8 MB of text: a first chunk of 5 * 8 MB, 2 MiB multiple */
			if (in_vma)
				assert_true(hi - lo >= (40u << 20));
		} else if (in_vma && strncmp(line, "VmFlags:", 8) == 0) {
			hg = strstr(line, " hg") != NULL;
		}
	}
	fclose(f);
	jsonarena_leave(&a);
	assert_true(hg);
}

static void test_free_routing(void **state)
{
	struct jsonarena a;
	char *outside = malloc(32), *in, *late;

	(void)state;
	assert_non_null(outside);
	jsonarena_enter(&a, 0);
	in = jsonarena_malloc(32);
	assert_non_null(in);
	strcpy(in, "still here");

	/* An arena pointer: a no-op, the memory stays usable. */
	watch(in);
	jsonarena_free(in);
	assert_int_equal(watched_frees, 0);
	assert_string_equal(in, "still here");

	/* Not the arena's (allocated before it was entered): free(). */
	watch(outside);
	jsonarena_free(outside);
	assert_int_equal(watched_frees, 1);

	jsonarena_free(NULL);
	jsonarena_leave(&a);

	/* No arena current: malloc() and free(). */
	late = jsonarena_malloc(16);
	assert_non_null(late);
	assert_false(jsonarena_owns(&a, late));
	watch(late);
	jsonarena_free(late);
	assert_int_equal(watched_frees, 1);
	watch(NULL);
}

/* Rewinding to a mark reuses what was allocated since, also across a
 * chunk added since the mark (then from that chunk's start). */
static void test_rewind(void **state)
{
	struct jsonarena a;
	struct jsonarena_mark m;
	char *x, *y, *z, *big, *again;

	(void)state;
	jsonarena_enter(&a, 0);
	x = jsonarena_malloc(100);
	jsonarena_mark(&a, &m);
	y = jsonarena_malloc(200);
	assert_true(y > x);
	jsonarena_rewind(&a, &m);
	z = jsonarena_malloc(200);
	assert_ptr_equal(z, y);
	assert_true(jsonarena_owns(&a, x));

	jsonarena_mark(&a, &m);
	big = jsonarena_malloc(JSONARENA_MIN_CHUNK + 1); /* does not fit: a new chunk */
	assert_true(jsonarena_owns(&a, big));
	jsonarena_rewind(&a, &m);
	again = jsonarena_malloc(64);
	assert_ptr_equal(again, big);
	/* Before the mark nothing moved. */
	memset(x, 1, 100);
	memset(z, 2, 200);
	assert_int_equal(x[99], 1);
	jsonarena_leave(&a);
}

static void test_nested(void **state)
{
	struct jsonarena outer, inner;
	char *po, *pi, *po2, *pm;

	(void)state;
	jsonarena_enter(&outer, 0);
	po = jsonarena_malloc(24);
	jsonarena_enter(&inner, 0);
	pi = jsonarena_malloc(24);
	assert_true(jsonarena_owns(&inner, pi));
	assert_false(jsonarena_owns(&outer, pi));
	/* The outer arena's memory is not handed to free() either. */
	watch(po);
	jsonarena_free(po);
	assert_int_equal(watched_frees, 0);
	jsonarena_leave(&inner);

	po2 = jsonarena_malloc(24);
	assert_true(jsonarena_owns(&outer, po2));
	assert_true(jsonarena_owns(&outer, po));
	jsonarena_leave(&outer);

	assert_false(mapped(po));
	pm = jsonarena_malloc(24);
	assert_non_null(pm);
	watch(pm);
	jsonarena_free(pm);
	assert_int_equal(watched_frees, 1);
	watch(NULL);
}

/* Through cJSON: inside an arena the tree lives there, outside in malloc. */
static void test_cjson(void **state)
{
	static const char doc[] = "{\"kind\": \"List\", \"items\": [{\"a\": \"bcd\"}, 1, 2.5, null]}";
	struct jsonarena a;
	cJSON *root, *item;
	char *s;

	(void)state;
	jsonarena_enter(&a, sizeof(doc));
	root = cJSON_Parse(doc);
	assert_non_null(root);
	assert_true(jsonarena_owns(&a, root));
	item = cJSON_GetObjectItem(root, "kind");
	assert_true(jsonarena_owns(&a, item->valuestring));
	assert_string_equal(item->valuestring, "List");
	watch(root);
	cJSON_Delete(root);
	assert_int_equal(watched_frees, 0);
	jsonarena_leave(&a);

	/* As the etcd source uses it: malloc'ed, printed, freed with free(). */
	root = cJSON_Parse(doc);
	assert_non_null(root);
	s = cJSON_PrintUnformatted(root);
	assert_non_null(s);
	assert_string_equal(s, "{\"kind\":\"List\",\"items\":[{\"a\":\"bcd\"},1,2.5,null]}");
	free(s);
	watch(root);
	cJSON_Delete(root);
	assert_int_equal(watched_frees, 1);
	watch(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alignment),
		cmocka_unit_test(test_growth),
		cmocka_unit_test(test_hugepage),
		cmocka_unit_test(test_free_routing),
		cmocka_unit_test(test_nested),
		cmocka_unit_test(test_rewind),
		cmocka_unit_test(test_cjson),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
