// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/nameidx.h"

struct nameidx_slot {
	uint32_t pos1; /* position + 1, 0: empty */
	uint32_t hash;
};

/* FNV-1a, 32 bits: names are short (chain names at most 28 bytes). */
static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

int nameidx_build(struct nameidx *ix, size_t n, nameidx_name_fn name, const void *ctx)
{
	size_t cap = 16;

	memset(ix, 0, sizeof(*ix));
	if (n > UINT32_MAX - 1)
		return -E2BIG;
	while (cap < 2 * n)
		cap *= 2;
	ix->slots = calloc(cap, sizeof(*ix->slots));
	if (!ix->slots)
		return -ENOMEM;
	ix->mask = cap - 1;
	ix->name = name;
	ix->ctx = ctx;
	for (size_t pos = 0; pos < n; pos++) {
		const char *nm = name(ctx, pos);
		uint32_t h = name_hash(nm);
		size_t i;

		for (i = h & ix->mask; ix->slots[i].pos1; i = (i + 1) & ix->mask)
			if (ix->slots[i].hash == h && strcmp(name(ctx, ix->slots[i].pos1 - 1), nm) == 0)
				break;
		if (!ix->slots[i].pos1) /* else a later duplicate: the first stays */
			ix->slots[i] = (struct nameidx_slot){ .pos1 = (uint32_t)pos + 1, .hash = h };
	}
	return 0;
}

size_t nameidx_find(const struct nameidx *ix, const char *name)
{
	uint32_t h;

	if (!ix->slots || !name)
		return SIZE_MAX;
	h = name_hash(name);
	for (size_t i = h & ix->mask; ix->slots[i].pos1; i = (i + 1) & ix->mask) {
		const struct nameidx_slot *s = &ix->slots[i];

		if (s->hash == h && strcmp(ix->name(ix->ctx, s->pos1 - 1), name) == 0)
			return s->pos1 - 1;
	}
	return SIZE_MAX;
}

void nameidx_done(struct nameidx *ix)
{
	free(ix->slots);
	memset(ix, 0, sizeof(*ix));
}
