/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <string.h>

#include "core/changes.h"

static int key_cmp(const char *ans, const char *an, const char *bns, const char *bn)
{
	int c = strcmp(ans, bns);

	return c ? c : strcmp(an, bn);
}

/* Both arrays sorted by (ns, name): a merge walk. */
#define COUNT_DIFF(A, NA, B, NB, OUT)                                                  \
	do {                                                                           \
		size_t i_ = 0, j_ = 0;                                                 \
		while (i_ < (NA) || j_ < (NB)) {                                       \
			int c_ = i_ == (NA)   ? 1                                      \
				 : j_ == (NB) ? -1                                     \
					      : key_cmp((A)[i_]->ns, (A)[i_]->name,    \
							(B)[j_]->ns, (B)[j_]->name);   \
			if (c_ < 0) {                                                  \
				(OUT)++;                                               \
				i_++;                                                  \
			} else if (c_ > 0) {                                           \
				(OUT)++;                                               \
				j_++;                                                  \
			} else {                                                       \
				(OUT) += (A)[i_] != (B)[j_];                           \
				i_++;                                                  \
				j_++;                                                  \
			}                                                              \
		}                                                                      \
	} while (0)

void snapshot_changes_count(const struct merge_snapshot *old, const struct merge_snapshot *new,
			    struct snapshot_changes *ret)
{
	static const struct merge_snapshot empty;

	if (!old)
		old = &empty;
	*ret = (struct snapshot_changes){ 0 };
	COUNT_DIFF(old->services, old->n_services, new->services, new->n_services, ret->services);
	COUNT_DIFF(old->slices, old->n_slices, new->slices, new->n_slices, ret->slices);
}
