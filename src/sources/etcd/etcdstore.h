/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The etcd source's store, pure like etcdwire.h: what the source last read,
 * per etcd key, and how a range read or a watch response turns into
 * MERGE_SET / ADD / REMOVE updates, with the revision bookkeeping that
 * makes resuming exact.  Unit-tested in tests/unit/test-etcd.c.
 */
#ifndef SVCNAT_SOURCES_ETCDSTORE_H
#define SVCNAT_SOURCES_ETCDSTORE_H

#include "core/diag.h"
#include "core/merge.h"
#include "sources/etcd/etcdwire.h"

/*
 * The store: the items the source last reported, per etcd key, and the
 * revision up to which every event has been applied.
 *
 * Two keys that yield the same item (e.g. a legacy spec and a namespaced one
 * both naming default/web) are resolved by revision: the item from the key
 * written last (highest mod_revision) is the one the merge engine sees, in
 * a full read as in the watch; deleting it brings back the other's.
 *
 * Diagnostics (rejected objects, malformed keys, duplicate definitions) are
 * appended to the store's diag list, source "etcd:<key>"; the caller drains
 * it with diag_list_move().
 */
struct etcd_store;

struct etcd_store_stats {
	int64_t revision;     /* every event up to here is applied */
	size_t n_keys;        /* etcd keys holding at least one item */
	uint64_t events;      /* watch events applied */
	uint64_t duplicates;  /* watch events skipped as already applied */
	uint64_t rejected;    /* values that decoded to an error */
	uint64_t full_reads;  /* completed full reads (SETs) */
};

/* prefix: normalized.  Registers nothing: source_id is the merge source. */
int etcd_store_new(const char *prefix, struct merge *m, int source_id, struct etcd_store **ret);
void etcd_store_free(struct etcd_store *s);
struct diag_list *etcd_store_diags(struct etcd_store *s);
void etcd_store_stats(const struct etcd_store *s, struct etcd_store_stats *ret);
int64_t etcd_store_revision(const struct etcd_store *s);

/*
 * A full read, in pages: begin, add every page's kvs, commit at revision rev
 * (the header revision the pages were read at).  Commit sends one MERGE_SET
 * with every item and sets the store's revision to rev; abort drops the pages.
 * A value that fails to decode keeps no item (its diag is recorded).
 */
void etcd_store_read_begin(struct etcd_store *s);
int etcd_store_read_add(struct etcd_store *s, const struct etcd_kv *kvs, size_t n);
int etcd_store_read_commit(struct etcd_store *s, int64_t rev);
void etcd_store_read_abort(struct etcd_store *s);

/*
 * Apply watch events in order: PUT -> MERGE_ADD of the decoded items (and
 * MERGE_REMOVE of items the key no longer yields), DELETE -> MERGE_REMOVE of
 * the key's items.  Events at or below the store's revision are skipped
 * (counted as duplicates); the revision then becomes the highest applied.
 * Returns 0 or -ENOMEM (then the store must be re-read).
 */
int etcd_store_apply_events(struct etcd_store *s, const struct etcd_kv *ev, size_t n);

/* A progress notification or empty response at rev: nothing is pending below it. */
void etcd_store_advance(struct etcd_store *s, int64_t rev);

#endif
