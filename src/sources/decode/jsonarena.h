/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A bump arena for cJSON's allocations while one big buffer is parsed and
 * its tree deleted (decode_buffer()).  The tree of a large List is built
 * once and dropped whole, so malloc's per-node work and its 4 KiB first-touch
 * page faults are pure overhead; the arena hands out memory from a few large
 * mmap'ed chunks (transparent huge pages asked for) and unmaps them at once.
 *
 * cJSON's hooks are process-global and cJSON is used elsewhere (the etcd
 * source), so the hooks installed here route to an arena only while one is
 * current in the calling thread, and to malloc()/free() otherwise:
 *  - jsonarena_malloc(): from the current arena, else malloc(); if a chunk
 *    cannot be mapped, malloc() too (never NULL for want of a chunk);
 *  - jsonarena_free(): a no-op for memory of the current arena or of one it
 *    was entered on top of, free() for anything else.
 * Arenas nest: entering one while another is current makes the new one
 * current until it is left, then the outer one is current again.
 *
 * Contract: every pointer of an arena is dead once it is left: delete (or
 * drop) the cJSON tree before jsonarena_leave(), and do not free what cJSON
 * allocated inside an arena with free() (use cJSON_Delete()/cJSON_free()).
 */
#ifndef SVCNAT_SOURCES_JSONARENA_H
#define SVCNAT_SOURCES_JSONARENA_H

#include <stdbool.h>
#include <stddef.h>

struct jsonarena_chunk;

struct jsonarena {
	struct jsonarena_chunk *chunks; /* newest first */
	char *pos;                      /* free space of the newest chunk */
	char *end;
	size_t next_size;               /* bytes of the next chunk to map */
	struct jsonarena *prev;         /* current before this one was entered */
};

/* Smallest and largest chunk (a larger allocation gets a chunk of its own). */
#define JSONARENA_MIN_CHUNK (1u << 20)
#define JSONARENA_MAX_CHUNK (64u << 20)

/*
 * Install the hooks (first call only) and make *a current in this thread.
 * `hint` is the length of the JSON text to be parsed: the first chunk is
 * sized from it.  Chunks are mapped on first use, so entering cannot fail.
 */
void jsonarena_enter(struct jsonarena *a, size_t hint);

/*
 * Make the arena that was current before *a current again and unmap a's
 * chunks.  *a must be the current arena.
 */
void jsonarena_leave(struct jsonarena *a);

/*
 * A point of the current arena to come back to: jsonarena_rewind() drops
 * everything allocated since (the tree of one list item once it is
 * decoded), so the next allocations reuse that memory.  When a chunk was
 * added since the mark, the newest chunk is reused from its start and the
 * older one's tail is left unused.
 */
struct jsonarena_mark {
	const struct jsonarena_chunk *chunk;
	char *pos;
};

void jsonarena_mark(const struct jsonarena *a, struct jsonarena_mark *ret);
void jsonarena_rewind(struct jsonarena *a, const struct jsonarena_mark *m);

/* True if p lies in one of a's chunks. */
bool jsonarena_owns(const struct jsonarena *a, const void *p);

/* The hooks (see above); exported for the unit test. */
void *jsonarena_malloc(size_t size);
void jsonarena_free(void *p);

#endif
