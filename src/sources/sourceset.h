/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The set of live sources a daemon follows (sources/source.h) and the one
 * gate on them: no kernel write before every source was read once (a
 * restart while etcd or the API server is unreachable, or while a --config
 * is unreadable, must keep the rules the cluster's services have).
 *
 * Sources are kept in the order added; the merge engine's precedence is
 * their registration order, which their constructors did.  Loads of the
 * sources read off the loop (files) go in three steps: loads_begin() on
 * the loop thread takes the dirty ones, loads_run() on the worker reads
 * them, loads_finish() on the loop thread commits them.  Not thread-safe
 * otherwise: everything else runs on the loop thread, and not between
 * loads_begin() and loads_finish() on a loading source.
 */
#ifndef SVCNAT_SOURCES_SOURCESET_H
#define SVCNAT_SOURCES_SOURCESET_H

#include <stdbool.h>
#include <stddef.h>

#include "sources/source.h"

struct sourceset;

/* An empty set; events of its sources go to fn (may be NULL).  0 or -ENOMEM. */
int sourceset_new(source_event_fn fn, void *userdata, struct sourceset **ret);
/* Frees every source (ops->free). */
void sourceset_free(struct sourceset *ss);

/* Add s (the set owns it from now on, also on failure: then it is freed).
 * 0 or -ENOMEM. */
int sourceset_add(struct sourceset *ss, struct source *s);

size_t sourceset_size(const struct sourceset *ss);
struct source *sourceset_get(const struct sourceset *ss, size_t i);

/* Start every source that starts (ops->start), in order.  The first
 * failure, or 0; a failure does not keep the others from starting. */
int sourceset_start(struct sourceset *ss);

/*
 * Load and commit s now, on the loop thread (at start); its diags are sent
 * as events.  Returns what commit() returned; 0 for a source without load().
 */
int sourceset_read(struct sourceset *ss, struct source *s);

/* s changed (an inotify event): loaded at the next loads_begin(). */
void sourceset_mark_dirty(struct source *s);

/* SIGHUP: every source reads everything again (ops->reread). */
void sourceset_reread(struct sourceset *ss);

/* Whether any source waits for a load. */
bool sourceset_dirty(const struct sourceset *ss);

/* Mark the dirty sources loading; how many.  The caller then runs
 * loads_run() (on the worker) and loads_finish() (on the loop). */
size_t sourceset_loads_begin(struct sourceset *ss);
void sourceset_loads_run(struct sourceset *ss);
void sourceset_loads_finish(struct sourceset *ss);

/* The gate: every source was read once (true for an empty set). */
bool sourceset_ready(const struct sourceset *ss);

/*
 * The sources that gate /healthz (ops->gates_health) and were never read:
 * the first of them (NULL: none), and how many.
 */
const struct source *sourceset_waiting(const struct sourceset *ss, size_t *ret_n);

/* The sources' /healthz members, joined by ", " ("" for none). */
void sourceset_health(const struct sourceset *ss, char *buf, size_t len);

/*
 * Seconds spent in load() and commit() (reading and decoding; handing over
 * to the merge engine) since the last call; the counters start again.
 */
void sourceset_take_times(struct sourceset *ss, double *ret_load, double *ret_commit);

/* Refresh every source's gauges (before /metrics is written). */
void sourceset_metrics(struct sourceset *ss);

#endif
