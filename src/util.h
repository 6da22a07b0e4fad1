/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Small helpers shared by every layer: cleanup attributes, array sizes,
 * overflow-checked allocation, the monotonic clock.  Header-only, no state.
 */
#ifndef SVCNAT_UTIL_H
#define SVCNAT_UTIL_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _unused_ __attribute__((unused))
#define _must_check_ __attribute__((warn_unused_result))

/* Take ownership of a pointer out of a _cleanup_ variable. */
#define TAKE_PTR(p)                                                            \
	({                                                                     \
		__typeof__(p) _p = (p);                                        \
		(p) = NULL;                                                    \
		_p;                                                            \
	})

#define TAKE_FD(fd)                                                            \
	({                                                                     \
		int _fd = (fd);                                                \
		(fd) = -1;                                                     \
		_fd;                                                           \
	})

static inline void freep(void *p)
{
	free(*(void **)p);
}

static inline void closep(int *fd)
{
	if (*fd >= 0)
		close(*fd);
}

/*
 * Define funcp(type *p), calling func(*p) unless *p is NULL, for
 * _cleanup_(funcp) on a local of that type (systemd's macro of this name).
 */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)                                \
	static inline void func##p(type *p)                                    \
	{                                                                      \
		if (*p)                                                        \
			func(*p);                                              \
	}

#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)

/* calloc-like array allocation that fails cleanly on overflow. */
static inline void *reallocarray_z(void *p, size_t n, size_t sz)
{
	if (sz && n > SIZE_MAX / sz) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(p, n * sz != 0 ? n * sz : 1);
}

/*
 * Grow *arr (of *cap elements of size sz) so that it holds at least need
 * elements.  Returns 0 or -ENOMEM; *arr is untouched on failure.
 */
static inline int grow_array(void **arr, size_t *cap, size_t need, size_t sz)
{
	size_t ncap;
	void *n;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap : 8;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return -ENOMEM;
		ncap *= 2;
	}
	n = reallocarray_z(*arr, ncap, sz);
	if (!n)
		return -ENOMEM;
	*arr = n;
	*cap = ncap;
	return 0;
}

#define GROW(arr, cap, need) grow_array((void **)&(arr), &(cap), (need), sizeof(*(arr)))

/* qsort() that accepts an empty (possibly NULL) array: glibc's qsort is
 * declared nonnull, so qsort(NULL, 0, ...) is undefined behaviour. */
static inline void qsort_safe(void *base, size_t n, size_t sz, int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, sz, cmp);
}

static inline bool streq(const char *a, const char *b)
{
	return strcmp(a, b) == 0;
}

static inline bool streq_null(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

/* The monotonic clock, in microseconds and in seconds. */
static inline uint64_t monotonic_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000ULL + (uint64_t)ts.tv_nsec / 1000ULL;
}

static inline double monotonic_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The calling thread's CPU time (user and system), in seconds: what a
 * system call's work cost, whatever else the machine runs meanwhile. */
static inline double thread_cpu_seconds(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
		return 0;
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * A job split in parts run at once (sys/par.c's par_run): part i of n is
 * fn(arg, i).  The pure code that splits its work (the planner, the
 * writers' encoders) is handed one, so it needs no threads of its own; a
 * NULL runner or n of 1 means one part on the calling thread.
 */
typedef void (*par_part_fn)(void *arg, unsigned i);
typedef void (*par_runner)(unsigned n, par_part_fn fn, void *arg);

static inline void par_call(par_runner run, unsigned n, par_part_fn fn, void *arg)
{
	if (run && n > 1) {
		run(n, fn, arg);
		return;
	}
	for (unsigned i = 0; i < n; i++)
		fn(arg, i);
}

#endif
