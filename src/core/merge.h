/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The config merge engine, after kube-proxy's original ServiceConfig.
 *
 * Sources register by name.  Each update carries the source, an operation
 * and items:
 *   MERGE_SET    replace everything this source reported with these items
 *   MERGE_ADD    add these items, replacing same-key items of this source
 *   MERGE_REMOVE delete these items (by key) from this source
 * Items are services (key "ns/name") and endpoint slices (key "ns/slicename").
 *
 * The engine keeps, per source, the items it last reported, and the union
 * over all sources.  Precedence is deterministic: when two sources report a
 * service (or slice) with the same key, the source registered first wins,
 * and a warning naming both sources is recorded in the engine's diag list.
 *
 * Handlers register for services and/or endpoints.  Updates only mark the
 * engine dirty; merge_flush() calls the handlers once with the full merged
 * snapshot if (and only if) the union changed since the last flush.  So
 * many updates arriving close together are coalesced into one notification,
 * and an update that changes nothing notifies nothing.
 *
 * Memory: items are immutable and refcounted.  The engine takes a reference
 * on every item passed to merge_update() (the caller keeps its own).  A
 * snapshot is itself refcounted: a handler that wants to keep it past the
 * call takes merge_snapshot_ref() and drops it with merge_snapshot_unref();
 * otherwise it is valid for the duration of the call only.
 */
#ifndef SVCNAT_CORE_MERGE_H
#define SVCNAT_CORE_MERGE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/diag.h"
#include "core/model.h"

enum merge_op {
	MERGE_SET,
	MERGE_ADD,
	MERGE_REMOVE,
};

/*
 * What differs between two merged views, by key ("ns/name" strings, each
 * array sorted by strcmp and free of duplicates).  An item counts as
 * changed when it was added, removed, or replaced by an unequal one.
 */
struct merge_changes {
	bool all;          /* no earlier view to compare with: everything is new */
	char **services;   /* services added, removed or changed */
	size_t n_services;
	char **slices;     /* endpoint slices added, removed or changed */
	size_t n_slices;
	/* Services whose resolved state may differ: the changed services and
	 * the services named (kubernetes.io/service-name) by changed slices,
	 * before and after the change.  Resolving any other service gives the
	 * same result from either view. */
	char **affected;
	size_t n_affected;
};

void merge_changes_done(struct merge_changes *c);
/* Whether the service ns/name is in c->affected (true when c->all). */
bool merge_changes_affects(const struct merge_changes *c, const char *ns, const char *name);

/* An immutable merged view: items sorted by key, winners only. */
struct merge_snapshot {
	unsigned refcnt;
	unsigned long generation;        /* increases with every notification */
	struct service **services;       /* sorted by ns, name */
	size_t n_services;
	struct epslice **slices;         /* sorted by ns, name */
	size_t n_slices;
	/* What differs from the view the engine built before this one (the
	 * previous flush's or merge_snapshot_get()'s); all on the first. */
	struct merge_changes changes;
};

/*
 * Compare two views (prev may be NULL: then ret->all).  Cheap when they
 * share items: unchanged items are compared by identity first.  *ret is
 * the caller's (merge_changes_done()).  0 or -ENOMEM (nothing in *ret).
 */
int merge_snapshot_diff(const struct merge_snapshot *prev, const struct merge_snapshot *cur,
			struct merge_changes *ret);

struct merge_snapshot *merge_snapshot_ref(struct merge_snapshot *s);
void merge_snapshot_unref(struct merge_snapshot *s);

enum merge_handler_kind {
	MERGE_HANDLE_SERVICES = 1,
	MERGE_HANDLE_ENDPOINTS = 2,
	MERGE_HANDLE_ALL = 3,
};

/*
 * Called from merge_flush().  `changed` says which kinds changed since the
 * last notification (MERGE_HANDLE_* bits); a handler registered only for
 * services is called only when services changed, likewise endpoints.
 */
typedef void (*merge_handler_fn)(const struct merge_snapshot *snap, unsigned changed,
				 void *userdata);

struct merge;

struct merge *merge_new(void);
void merge_free(struct merge *m);

/*
 * Register a source by name.  Returns the source id (>= 0) or -EEXIST /
 * -ENOMEM.  Registration order decides precedence (first wins).
 */
int merge_source_register(struct merge *m, const char *name);
const char *merge_source_name(const struct merge *m, int source_id);
size_t merge_source_count(const struct merge *m);

/* Services plus EndpointSlices the source holds now; 0 for an unknown source. */
size_t merge_source_items(const struct merge *m, int source_id);

/* Register a handler; returns 0 or -ENOMEM. */
int merge_handler_register(struct merge *m, unsigned kinds, merge_handler_fn fn,
			   void *userdata);

/*
 * Apply one update from a source.  For MERGE_REMOVE only the items' keys are
 * used.  The engine refs the items it keeps.  Returns 0, -ENOENT (unknown
 * source), -ENOMEM (nothing changed then).
 */
int merge_update(struct merge *m, int source_id, enum merge_op op,
		 struct service *const *services, size_t n_services,
		 struct epslice *const *slices, size_t n_slices);

/* Whether the union changed since the last flush. */
bool merge_dirty(const struct merge *m);

/*
 * If dirty: build the merged snapshot, call the handlers, clear dirty.
 * Returns 1 if handlers were notified, 0 if nothing changed, -ENOMEM.
 */
int merge_flush(struct merge *m);

/* The current merged snapshot (a new reference; NULL on -ENOMEM). */
struct merge_snapshot *merge_snapshot_get(struct merge *m);

/*
 * Conflict warnings recorded by updates (source A vs source B for a key).
 * Each distinct conflict is recorded once until it goes away.  The caller
 * may drain the list with diag_list_move().
 */
struct diag_list *merge_diags(struct merge *m);

#endif
