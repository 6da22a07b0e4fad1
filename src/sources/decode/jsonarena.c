/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <pthread.h>
#include <stdalign.h>
#include <stdint.h>
#include <sys/mman.h>

#include <cjson/cJSON.h>

#include "sources/decode/jsonarena.h"
#include "sys/warm.h"
#include "util.h"

#ifdef __SANITIZE_ADDRESS__
/* mmap'ed memory is invisible to ASan: poison it and keep a red zone after
 * each block, so an overrun of a cJSON string is still caught. */
#include <sanitizer/asan_interface.h>
#define REDZONE 16u
#else
#define ASAN_POISON_MEMORY_REGION(p, n) ((void)(p), (void)(n))
#define ASAN_UNPOISON_MEMORY_REGION(p, n) ((void)(p), (void)(n))
#define REDZONE 0u
#endif

#define HUGE_PAGE (2u << 20)
#define ALIGN alignof(max_align_t)
#define ROUND_UP(x, a) (((x) + (a) - 1) / (a) * (a))

struct jsonarena_chunk {
	struct jsonarena_chunk *next;
	size_t size; /* bytes mapped, this header included */
};

#define HDR ROUND_UP(sizeof(struct jsonarena_chunk), ALIGN)

static _Thread_local struct jsonarena *current;
static pthread_once_t hooks_once = PTHREAD_ONCE_INIT;

static void hooks_install(void)
{
	cJSON_Hooks h = { .malloc_fn = jsonarena_malloc, .free_fn = jsonarena_free };

	cJSON_InitHooks(&h);
}

void jsonarena_enter(struct jsonarena *a, size_t hint)
{
	/* A parsed tree is about 5 times its text (64-byte nodes); one chunk
	 * of that size holds it, in 2 MiB steps that huge pages can back. */
	size_t want = hint > JSONARENA_MAX_CHUNK / 5 ? JSONARENA_MAX_CHUNK : hint * 5;

	pthread_once(&hooks_once, hooks_install);
	*a = (struct jsonarena){
		.next_size = want <= JSONARENA_MIN_CHUNK ? JSONARENA_MIN_CHUNK
							 : ROUND_UP(want, HUGE_PAGE),
		.prev = current,
	};
	current = a;
}

void jsonarena_leave(struct jsonarena *a)
{
	struct jsonarena_chunk *c, *next;

	current = a->prev;
	for (c = a->chunks; c; c = next) {
		next = c->next;
		ASAN_UNPOISON_MEMORY_REGION(c, c->size);
		warm_forget(c, c->size);
		munmap(c, c->size);
	}
	*a = (struct jsonarena){ 0 };
}

void jsonarena_mark(const struct jsonarena *a, struct jsonarena_mark *ret)
{
	ret->chunk = a->chunks;
	ret->pos = a->pos;
}

void jsonarena_rewind(struct jsonarena *a, const struct jsonarena_mark *m)
{
	char *to;

	if (!a->chunks)
		return;
	to = a->chunks == m->chunk ? m->pos : (char *)a->chunks + HDR;
	if (!to || to > a->pos)
		return;
	ASAN_POISON_MEMORY_REGION(to, (size_t)(a->pos - to));
	a->pos = to;
}

bool jsonarena_owns(const struct jsonarena *a, const void *p)
{
	const struct jsonarena_chunk *c;
	uintptr_t u = (uintptr_t)p;

	for (c = a->chunks; c; c = c->next)
		if (u >= (uintptr_t)c && u - (uintptr_t)c < c->size)
			return true;
	return false;
}

/* Map a chunk with room for `size` bytes and bump from it from now on. */
static int chunk_add(struct jsonarena *a, size_t size)
{
	struct jsonarena_chunk *c;
	size_t len = a->next_size;

	if (size > JSONARENA_MAX_CHUNK - HDR) {
		if (size > SIZE_MAX - HDR - HUGE_PAGE)
			return -ENOMEM;
		len = ROUND_UP(size + HDR, HUGE_PAGE);
	}
	while (len - HDR < size)
		len = len >= JSONARENA_MAX_CHUNK / 2 ? JSONARENA_MAX_CHUNK : len * 2;
	c = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (c == MAP_FAILED)
		return -errno;
	/* First touch costs one fault per 2 MiB instead of per 4 KiB. */
	if (len >= HUGE_PAGE)
		(void)madvise(c, len, MADV_HUGEPAGE);
	/* Written from its start on, as fast as the decode goes. */
	warm_region(c, len);
	c->next = a->chunks;
	c->size = len;
	a->chunks = c;
	a->pos = (char *)c + HDR;
	a->end = (char *)c + len;
	a->next_size = len >= JSONARENA_MAX_CHUNK / 2 ? JSONARENA_MAX_CHUNK : len * 2;
	ASAN_POISON_MEMORY_REGION(a->pos, len - HDR);
	return 0;
}

void *jsonarena_malloc(size_t size)
{
	struct jsonarena *a = current;
	size_t n;
	void *p;

	if (!a || size > SIZE_MAX / 2)
		return malloc(size);
	n = ROUND_UP((size ? size : 1) + REDZONE, ALIGN);
	/* No chunk to be had: malloc'ed memory is freed by jsonarena_free(). */
	if ((size_t)(a->end - a->pos) < n && chunk_add(a, n) < 0)
		return malloc(size);
	p = a->pos;
	a->pos += n;
	ASAN_UNPOISON_MEMORY_REGION(p, size);
	return p;
}

void jsonarena_free(void *p)
{
	const struct jsonarena *a;

	for (a = current; a; a = a->prev)
		if (jsonarena_owns(a, p))
			return;
	free(p);
}
