/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests: sys/warm.c, memory faulted in ahead on a thread of its own. */
#include <errno.h>
#include <malloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "sys/warm.h"
#include "glibcmalloc.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define MIB ((size_t)1 << 20)

static size_t pagesz(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

/* The kernel's own answer, asked apart from warm.c. */
static bool kernel_populates(void)
{
	void *p = mmap(NULL, pagesz(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	bool ok;

	assert_true(p != MAP_FAILED);
	ok = madvise(p, pagesz(), MADV_POPULATE_WRITE) == 0;
	munmap(p, pagesz());
	return ok;
}

/* Pages of [p, p + len) resident now (whole pages: p is rounded down). */
static size_t resident(const void *p, size_t len)
{
	uintptr_t lo = (uintptr_t)p & ~(uintptr_t)(pagesz() - 1);
	size_t n, in = 0;
	unsigned char *v;

	len += (uintptr_t)p - lo;
	n = (len + pagesz() - 1) / pagesz();
	v = calloc(n, 1);
	assert_non_null(v);
	assert_int_equal(mincore((void *)lo, len, v), 0);
	for (size_t i = 0; i < n; i++)
		in += v[i] & 1;
	free(v);
	return in;
}

static void *map_fresh(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	assert_true(p != MAP_FAILED);
	/* 4 KiB pages, so mincore() counts each one. */
	(void)madvise(p, len, MADV_NOHUGEPAGE);
	return p;
}

static void test_not_running(void **state)
{
	char *p = map_fresh(4 * MIB);

	(void)state;
	assert_false(warm_running());
	warm_region(p, 4 * MIB); /* no-ops */
	warm_forget(p, 4 * MIB);
	warm_drain();
	assert_int_equal(warm_stop(), 0);
	assert_int_equal(resident(p, 4 * MIB), 0);
	munmap(p, 4 * MIB);
}

static void test_region(void **state)
{
	size_t len = 16 * MIB;
	char *p = map_fresh(len), *q = map_fresh(len);
	size_t bytes;

	(void)state;
	if (!kernel_populates()) {
		assert_false(warm_start());
		skip();
	}
	/* What the caller wrote before stays as it was. */
	memcpy(p + 3 * pagesz(), "written", 8);
	assert_int_equal(resident(p, len), 1);
	assert_true(warm_start());
	assert_true(warm_running());
	assert_false(warm_start()); /* once */
	warm_region(p, len);
	warm_drain();
	assert_int_equal(resident(p, len), len / pagesz());
	assert_string_equal(p + 3 * pagesz(), "written");
	for (size_t i = 0; i < len; i += pagesz())
		if (i != 3 * pagesz())
			assert_int_equal(p[i], 0);
	/* A mapping nobody named is left alone. */
	assert_int_equal(resident(q, len), 0);
	bytes = warm_stop();
	assert_false(warm_running());
	assert_true(bytes >= len);
	munmap(p, len);
	munmap(q, len);
}

static void test_forget(void **state)
{
	size_t len = 64 * MIB;
	char *p = map_fresh(len), *q = map_fresh(len);

	(void)state;
	if (!kernel_populates())
		skip();
	assert_true(warm_start());
	warm_region(p, len);
	warm_region(q, len);
	/* q waits behind p: forgotten, it is never touched, and p's pages
	 * stop where warm was when forget returned. */
	warm_forget(q, len);
	warm_forget(p, len);
	size_t at = resident(p, len);
	warm_drain();
	assert_int_equal(resident(p, len), at);
	assert_int_equal(resident(q, len), 0);
	munmap(q, len);
	munmap(p, len);
	warm_stop();
}

static void test_heap(void **state)
{
	uintptr_t before, after;
	char *b;
	size_t len = 8 * MIB;

	(void)state;
	if (!kernel_populates() || !glibc_malloc() /* the break is glibc's */)
		skip();
	malloc_trim(0); /* no free top left from the tests before */
	assert_true(warm_start());
	before = (uintptr_t)syscall(SYS_brk, 0);
	/* Below the mmap threshold warm_start() set: from the heap, which
	 * grows by WARM_HEAP_STEP past it. */
	b = malloc(len);
	assert_non_null(b);
	after = (uintptr_t)syscall(SYS_brk, 0);
	assert_true(after >= before + len + WARM_HEAP_STEP / 2);
	assert_true((uintptr_t)b >= before - len && (uintptr_t)b + len <= after);
	warm_drain();
	/* Faulted in before a byte of it was written, and the top pad too. */
	assert_true(resident(b, len) >= len / pagesz());
	assert_true(resident((void *)(after - 4 * MIB), 4 * MIB) == 4 * MIB / pagesz());
	free(b);
	assert_true(warm_stop() >= len);
	malloc_trim(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_not_running),
		cmocka_unit_test(test_region),
		cmocka_unit_test(test_forget),
		cmocka_unit_test(test_heap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
