/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A --config path fed into the merge engine: its file source (the files'
 * last good content, sources/file/file.h) and its merge source, named by
 * the path.  The one-shot modes read it once (filesrc_read()); the daemon
 * follows it as a live source (filesrc_live_new(), sources/source.h).
 */
#ifndef SVCNAT_SOURCES_FILE_FILESRC_H
#define SVCNAT_SOURCES_FILE_FILESRC_H

#include <stdbool.h>

#include "core/diag.h"
#include "core/merge.h"
#include "sources/file/file.h"
#include "sources/source.h"
#include "sys/metrics.h"

struct filesrc;

/*
 * Register merge source `path` (its precedence is the registration order)
 * and a file source for it; path is borrowed.  Reads nothing yet.
 * 0, -EEXIST (the path was given twice: a diag says so), -ENOMEM.
 */
int filesrc_new(struct merge *m, const char *path, enum file_mode_check mode,
		struct diag_list *d, struct filesrc **ret);
void filesrc_free(struct filesrc *f);

/* f is read once: see file_source_read_once(). */
void filesrc_read_once(struct filesrc *f);

/*
 * Read the path (file_source_reload(): its returns).  Touches nothing but
 * f's file source, so it may run on another thread while nobody else uses f.
 */
int filesrc_load(struct filesrc *f, bool all, struct diag_list *d);

/*
 * Hand the merge engine what changed since the last commit (loop thread):
 * the first time (and after filesrc_clear()) SETs the whole content, then
 * ADDs the changed objects and REMOVEs those gone.  0 or -ENOMEM.
 */
int filesrc_commit(struct filesrc *f);

/* filesrc_load() then filesrc_commit(): the load's result, or commit's error. */
int filesrc_read(struct filesrc *f, struct diag_list *d);

/*
 * The live source of --config f (borrowed: it must outlive the source),
 * counting its reads in m.  Its events: the path read or rejected, at the
 * level the daemon logs them; a path read once and gone since clears its
 * services.  0 or -ENOMEM.
 */
int filesrc_live_new(struct filesrc *f, struct metrics *m, struct source **ret);

#endif
