/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Which file of a --config defines each object, so that a change to one
 * file becomes a change to its objects alone.  Every object key
 * (service, or endpoint slice: namespace and name) maps to the files that
 * define it, in strcmp order of their paths; the first file's item wins,
 * as in a directory read in name order.  The index also remembers which
 * item of each key was last handed to the merge engine, and which keys
 * changed since, so that the next hand-over names only those.
 *
 * Items are borrowed from the files' decoded content; the index holds its
 * own reference on each item handed over (it must be removable by key
 * after its file is gone).  Pure bookkeeping: no I/O.
 */
#ifndef SVCNAT_SOURCES_FILEINDEX_H
#define SVCNAT_SOURCES_FILEINDEX_H

#include <stdbool.h>
#include <stddef.h>

#include "core/diag.h"
#include "core/model.h"

struct file_index;

int file_index_new(struct file_index **ret);
void file_index_free(struct file_index *x);

/*
 * file (a path: the definitions' order) now defines svc / slice (exactly
 * one of them non-NULL; a file defines each key at most once).  _drop:
 * it defines it no more.  Each touched key is marked as changed.  0 or
 * -ENOMEM, after which the index is unusable until file_index_clear().
 */
int file_index_put(struct file_index *x, const char *file, struct service *svc,
		   struct epslice *slice);
int file_index_drop(struct file_index *x, const char *file, const struct service *svc,
		    const struct epslice *slice);

/* The item file defines for the key of svc / slice, or NULL. */
void *file_index_get(const struct file_index *x, const char *file, const struct service *svc,
		     const struct epslice *slice);

/* Whether file's definition of the item's key is the winning one. */
bool file_index_wins(const struct file_index *x, const char *file, const struct service *svc,
		     const struct epslice *slice);

/*
 * One error per later definition of a key touched since the last call of
 * this function (naming the later file and the object, "defined more than
 * once; the later definition is ignored").  0 or -ENOMEM.
 */
int file_index_report_dups(struct file_index *x, struct diag_list *diags);

/* What to hand to the merge engine: the winners that changed (put) and the
 * keys that lost their last definition (del, as the items last handed
 * over).  Borrowed, valid until file_index_accept() or a change. */
struct file_delta {
	struct service **put_services;
	size_t n_put_services;
	struct epslice **put_slices;
	size_t n_put_slices;
	struct service **del_services;
	size_t n_del_services;
	struct epslice **del_slices;
	size_t n_del_slices;
};

void file_delta_done(struct file_delta *d);

/*
 * The changes since the last file_index_accept(); with all, every winner
 * as put (nothing in del): for a hand-over that replaces the source's
 * content whole.  0 or -ENOMEM (nothing in *ret).
 */
int file_index_delta(const struct file_index *x, bool all, struct file_delta *ret);
/* The last delta (of the same all) was handed over: it is the merge
 * engine's state now. */
void file_index_accept(struct file_index *x, bool all);

/* Forget everything (definitions and what was handed over). */
void file_index_clear(struct file_index *x);

/* Keys changed since the last accept (for tests and the -v line). */
size_t file_index_pending(const struct file_index *x);

#endif
