/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * An index from names to their positions in an array the caller keeps:
 * open addressing over positions, each slot with its name's hash, so a
 * lookup compares names only where the hashes agree.  The array is read
 * through a callback; the index holds no names of its own.  Built once,
 * then read only (several threads may look up at once).
 */
#ifndef SVCNAT_CORE_NAMEIDX_H
#define SVCNAT_CORE_NAMEIDX_H

#include <stddef.h>
#include <stdint.h>

/* The name at position pos of the caller's array. */
typedef const char *(*nameidx_name_fn)(const void *ctx, size_t pos);

struct nameidx {
	struct nameidx_slot *slots; /* NULL: not built */
	size_t mask;
	nameidx_name_fn name;
	const void *ctx;
};

/*
 * Index positions 0..n-1 by name(ctx, pos).  Where a name is at more than
 * one position, the first is found.  0, -ENOMEM or -E2BIG (n beyond 2^32 - 2).
 */
int nameidx_build(struct nameidx *ix, size_t n, nameidx_name_fn name, const void *ctx);

/* The position of name, SIZE_MAX: none (or the index not built). */
size_t nameidx_find(const struct nameidx *ix, const char *name);

void nameidx_done(struct nameidx *ix);

#endif
