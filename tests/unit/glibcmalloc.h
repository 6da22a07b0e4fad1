/* SPDX-License-Identifier: GPL-2.0-or-later */
/* For unit tests: whether malloc is glibc's own here. */
#ifndef SVCNAT_TESTS_GLIBCMALLOC_H
#define SVCNAT_TESTS_GLIBCMALLOC_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* ASan and valgrind bring their own allocators: there glibc's arenas,
 * malloc_info() and the program break mean nothing. */
static inline bool glibc_malloc(void)
{
#if defined(__SANITIZE_ADDRESS__)
	return false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
	return false;
#endif
#endif
	const char *pre = getenv("LD_PRELOAD");

	return !(pre && strstr(pre, "vgpreload"));
}

#endif
