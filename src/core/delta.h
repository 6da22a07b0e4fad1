/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Incremental resolve: the desired state of a new merged view from the
 * previous one and what changed between the two views (merge_changes).
 * Every service port of a service the changes do not affect is taken over
 * from the previous state as it is; only the affected services are
 * resolved again (resolve_build() over a view holding just them and the
 * slices that name them, so their result is the full resolve's).  The
 * result equals resolve_build() of the new view (tests/unit/test-delta.c
 * checks it after every step of a long random sequence of changes).
 * Diagnostics are those of the services resolved again.  Pure: no I/O.
 */
#ifndef SVCNAT_CORE_DELTA_H
#define SVCNAT_CORE_DELTA_H

#include "core/diag.h"
#include "core/merge.h"
#include "core/model.h"
#include "core/resolve.h"

/*
 * prev: the state resolve_build() (or this function) made of the older
 * view, with the same opts.  ch: merge_snapshot_diff(older, snap).  On
 * success *ret holds the new state; the service ports taken over are moved
 * out of prev (which the caller still frees with desired_free()), and
 * *ret_rebuilt (may be NULL) says how many service ports were resolved
 * again.  0 or -ENOMEM (prev unchanged, nothing in *ret).
 */
int delta_resolve(struct desired *prev, const struct merge_snapshot *snap,
		  const struct merge_changes *ch, const struct resolve_opts *opts,
		  struct desired *ret, size_t *ret_rebuilt, struct diag_list *diags);

#endif
