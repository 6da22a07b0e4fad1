/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/merge.h"
#include "util.h"

enum { KIND_SVC, KIND_EPS, N_KINDS };

static const unsigned kind_bit[N_KINDS] = { MERGE_HANDLE_SERVICES, MERGE_HANDLE_ENDPOINTS };

/*
 * Per-source items live in open-addressing hash tables keyed by (ns, name),
 * so the single-item ADD/REMOVE the etcd watch sends costs O(#sources), not
 * a re-sort of the source.  The union is not stored: the winner of a key is
 * the first source (lowest id) whose table holds it.
 */
struct slot {
	void *item; /* struct service * or struct epslice *; NULL = empty */
	uint64_t hash;
	unsigned long mark; /* SET generation that last reported this item */
	int warned_vs;      /* winner this loser was reported against, -1 = none */
};

struct itemmap {
	struct slot *slots;
	size_t cap; /* 0 or a power of two */
	size_t n;
};

struct source {
	char *name;
	struct itemmap maps[N_KINDS];
};

struct handler {
	unsigned kinds;
	merge_handler_fn fn;
	void *userdata;
};

struct merge {
	struct source *sources;
	size_t n_sources, cap_sources;
	struct handler *handlers;
	size_t n_handlers, cap_handlers;
	unsigned dirty;               /* kinds whose winners changed since the last flush */
	size_t keys_added[N_KINDS];   /* keys gained since `cached` was built */
	bool cached_valid;            /* `cached` still equals the union */
	unsigned long generation;
	unsigned long mark;
	struct merge_snapshot *cached;   /* latest snapshot built */
	struct merge_snapshot *notified; /* latest snapshot handed to handlers */
	struct diag_list diags;
};

static const char *nz(const char *s)
{
	return s ? s : "";
}

static void item_key(int kind, const void *item, const char **ns, const char **name)
{
	if (kind == KIND_SVC) {
		const struct service *s = item;

		*ns = nz(s->ns);
		*name = nz(s->name);
	} else {
		const struct epslice *e = item;

		*ns = nz(e->ns);
		*name = nz(e->name);
	}
}

static uint64_t key_hash(const char *ns, const char *name)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	const unsigned char *p;

	for (p = (const unsigned char *)ns; *p; p++)
		h = (h ^ *p) * 0x100000001b3ULL;
	/* NUL cannot occur in either part, so ("a", "bc") != ("ab", "c"). */
	h *= 0x100000001b3ULL;
	for (p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 0x100000001b3ULL;
	return h;
}

static void item_ref(int kind, void *item)
{
	if (kind == KIND_SVC)
		service_ref(item);
	else
		epslice_ref(item);
}

static void item_unref(int kind, void *item)
{
	if (kind == KIND_SVC)
		service_unref(item);
	else
		epslice_unref(item);
}

static bool item_same(int kind, const void *a, const void *b)
{
	if (a == b)
		return true;
	if (!a || !b)
		return false;
	return kind == KIND_SVC ? service_equal(a, b) : epslice_equal(a, b);
}

static int key_cmp(int kind, const void *a, const void *b)
{
	const char *ans, *aname, *bns, *bname;
	int r;

	item_key(kind, a, &ans, &aname);
	item_key(kind, b, &bns, &bname);
	r = strcmp(ans, bns);
	return r ? r : strcmp(aname, bname);
}

static int svc_ptr_cmp(const void *a, const void *b)
{
	return key_cmp(KIND_SVC, *(void *const *)a, *(void *const *)b);
}

static int eps_ptr_cmp(const void *a, const void *b)
{
	return key_cmp(KIND_EPS, *(void *const *)a, *(void *const *)b);
}

/* --- hash table --- */

static struct slot *map_find(const struct itemmap *m, int kind, const char *ns,
			     const char *name, uint64_t hash)
{
	size_t mask, i;

	if (!m->cap)
		return NULL;
	mask = m->cap - 1;
	for (i = hash & mask; m->slots[i].item; i = (i + 1) & mask) {
		const char *sns, *sname;

		if (m->slots[i].hash != hash)
			continue;
		item_key(kind, m->slots[i].item, &sns, &sname);
		if (streq(sns, ns) && streq(sname, name))
			return &m->slots[i];
	}
	return NULL;
}

/* Capacity must have been reserved. */
static struct slot *map_insert_new(struct itemmap *m, uint64_t hash)
{
	size_t mask = m->cap - 1, i;

	for (i = hash & mask; m->slots[i].item; i = (i + 1) & mask)
		;
	m->n++;
	m->slots[i].hash = hash;
	return &m->slots[i];
}

/* Backward-shift deletion: linear probing without tombstones. */
static void map_delete_at(struct itemmap *m, size_t i)
{
	size_t mask = m->cap - 1, j = i;

	for (;;) {
		size_t home;

		j = (j + 1) & mask;
		if (!m->slots[j].item)
			break;
		home = m->slots[j].hash & mask;
		if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
			continue;
		m->slots[i] = m->slots[j];
		i = j;
	}
	memset(&m->slots[i], 0, sizeof(m->slots[i]));
	m->n--;
}

/* Make room for `extra` more items at load <= 1/2; the table is untouched on failure. */
static int map_reserve(struct itemmap *m, size_t extra)
{
	struct slot *ns;
	size_t need, cap, i;

	if (extra > SIZE_MAX / 2 - m->n)
		return -ENOMEM;
	need = (m->n + extra) * 2;
	if (need <= m->cap)
		return 0;
	cap = m->cap ? m->cap : 16;
	while (cap < need) {
		if (cap > SIZE_MAX / 2 / sizeof(*ns))
			return -ENOMEM;
		cap *= 2;
	}
	ns = calloc(cap, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	for (i = 0; i < m->cap; i++) {
		size_t j;

		if (!m->slots[i].item)
			continue;
		for (j = m->slots[i].hash & (cap - 1); ns[j].item; j = (j + 1) & (cap - 1))
			;
		ns[j] = m->slots[i];
	}
	free(m->slots);
	m->slots = ns;
	m->cap = cap;
	return 0;
}

static void map_done(struct itemmap *m, int kind)
{
	size_t i;

	for (i = 0; i < m->cap; i++)
		if (m->slots[i].item)
			item_unref(kind, m->slots[i].item);
	free(m->slots);
	memset(m, 0, sizeof(*m));
}

/* --- what changed between two views --- */

struct keyset {
	char **v;
	size_t n, cap;
};

static int keyset_add(struct keyset *k, const char *ns, const char *name)
{
	char *key;

	if (GROW(k->v, k->cap, k->n + 1) < 0)
		return -ENOMEM;
	if (asprintf(&key, "%s/%s", ns, name) < 0)
		return -ENOMEM;
	k->v[k->n++] = key;
	return 0;
}

static void keyset_done(struct keyset *k)
{
	for (size_t i = 0; i < k->n; i++)
		free(k->v[i]);
	free(k->v);
	memset(k, 0, sizeof(*k));
}

static int str_ptr_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sort and drop duplicates. */
static void keyset_finish(struct keyset *k)
{
	size_t i, n = 0;

	qsort_safe(k->v, k->n, sizeof(*k->v), str_ptr_cmp);
	for (i = 0; i < k->n; i++) {
		if (n && streq(k->v[n - 1], k->v[i]))
			free(k->v[i]);
		else
			k->v[n++] = k->v[i];
	}
	k->n = n;
}

/* The changed item (either side may be NULL) into the key sets. */
static int note_change(int kind, const void *a, const void *b, struct keyset *items,
		       struct keyset *affected)
{
	const void *any = a ? a : b;
	const char *ns, *name;
	int r;

	item_key(kind, any, &ns, &name);
	r = keyset_add(items, ns, name);
	if (r < 0 || kind == KIND_SVC)
		return r < 0 ? r : keyset_add(affected, ns, name);
	for (int side = 0; side < 2; side++) {
		const struct epslice *e = side ? b : a;

		if (e && e->service_name && *e->service_name) {
			r = keyset_add(affected, ns, e->service_name);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

/* Walk two key-sorted arrays of one kind. */
static int diff_kind(int kind, void *const *a, size_t na, void *const *b, size_t nb,
		     struct keyset *items, struct keyset *affected)
{
	size_t i = 0, j = 0;
	int r = 0;

	while (r >= 0 && (i < na || j < nb)) {
		int c = i == na ? 1 : j == nb ? -1 : key_cmp(kind, a[i], b[j]);

		if (c < 0)
			r = note_change(kind, a[i++], NULL, items, affected);
		else if (c > 0)
			r = note_change(kind, NULL, b[j++], items, affected);
		else {
			if (!item_same(kind, a[i], b[j]))
				r = note_change(kind, a[i], b[j], items, affected);
			i++;
			j++;
		}
	}
	return r;
}

int merge_snapshot_diff(const struct merge_snapshot *prev, const struct merge_snapshot *cur,
			struct merge_changes *ret)
{
	struct keyset svc = { 0 }, eps = { 0 }, aff = { 0 };
	int r;

	if (!cur || !ret)
		return -EINVAL;
	if (!prev) {
		*ret = (struct merge_changes){ .all = true };
		return 0;
	}
	r = diff_kind(KIND_SVC, (void *const *)prev->services, prev->n_services,
		      (void *const *)cur->services, cur->n_services, &svc, &aff);
	if (r >= 0)
		r = diff_kind(KIND_EPS, (void *const *)prev->slices, prev->n_slices,
			      (void *const *)cur->slices, cur->n_slices, &eps, &aff);
	if (r < 0) {
		keyset_done(&svc);
		keyset_done(&eps);
		keyset_done(&aff);
		return r;
	}
	keyset_finish(&svc);
	keyset_finish(&eps);
	keyset_finish(&aff);
	*ret = (struct merge_changes){ .services = svc.v, .n_services = svc.n,
				       .slices = eps.v, .n_slices = eps.n,
				       .affected = aff.v, .n_affected = aff.n };
	return 0;
}

void merge_changes_done(struct merge_changes *c)
{
	struct keyset k;

	if (!c)
		return;
	k = (struct keyset){ c->services, c->n_services, c->n_services };
	keyset_done(&k);
	k = (struct keyset){ c->slices, c->n_slices, c->n_slices };
	keyset_done(&k);
	k = (struct keyset){ c->affected, c->n_affected, c->n_affected };
	keyset_done(&k);
	memset(c, 0, sizeof(*c));
}

bool merge_changes_affects(const struct merge_changes *c, const char *ns, const char *name)
{
	char buf[512], *key = buf;
	bool found;
	int n;

	if (!c || c->all)
		return true;
	if (!c->n_affected)
		return false;
	n = snprintf(buf, sizeof(buf), "%s/%s", nz(ns), nz(name));
	if (n < 0)
		return true;
	if ((size_t)n >= sizeof(buf) && asprintf(&key, "%s/%s", nz(ns), nz(name)) < 0)
		return true; /* cannot tell: say yes, which is always safe */
	found = bsearch(&key, c->affected, c->n_affected, sizeof(*c->affected), str_ptr_cmp);
	if (key != buf)
		free(key);
	return found;
}

/* --- snapshots --- */

struct merge_snapshot *merge_snapshot_ref(struct merge_snapshot *s)
{
	if (s)
		s->refcnt++;
	return s;
}

static void snapshot_free(struct merge_snapshot *s)
{
	size_t i;

	for (i = 0; i < s->n_services; i++)
		service_unref(s->services[i]);
	for (i = 0; i < s->n_slices; i++)
		epslice_unref(s->slices[i]);
	free(s->services);
	free(s->slices);
	merge_changes_done(&s->changes);
	free(s);
}

void merge_snapshot_unref(struct merge_snapshot *s)
{
	if (s && --s->refcnt == 0)
		snapshot_free(s);
}

/* --- engine --- */

struct merge *merge_new(void)
{
	struct merge *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	diag_list_init(&m->diags);
	return m;
}

void merge_free(struct merge *m)
{
	size_t i;
	int k;

	if (!m)
		return;
	for (i = 0; i < m->n_sources; i++) {
		for (k = 0; k < N_KINDS; k++)
			map_done(&m->sources[i].maps[k], k);
		free(m->sources[i].name);
	}
	free(m->sources);
	free(m->handlers);
	merge_snapshot_unref(m->cached);
	merge_snapshot_unref(m->notified);
	diag_list_done(&m->diags);
	free(m);
}

int merge_source_register(struct merge *m, const char *name)
{
	struct source *s;
	size_t i;

	if (!m || !name)
		return -EINVAL;
	for (i = 0; i < m->n_sources; i++)
		if (streq(m->sources[i].name, name))
			return -EEXIST;
	if (m->n_sources >= INT_MAX)
		return -ENOSPC;
	if (GROW(m->sources, m->cap_sources, m->n_sources + 1) < 0)
		return -ENOMEM;
	s = &m->sources[m->n_sources];
	memset(s, 0, sizeof(*s));
	s->name = strdup(name);
	if (!s->name)
		return -ENOMEM;
	return (int)m->n_sources++;
}

const char *merge_source_name(const struct merge *m, int source_id)
{
	if (!m || source_id < 0 || (size_t)source_id >= m->n_sources)
		return NULL;
	return m->sources[source_id].name;
}

size_t merge_source_count(const struct merge *m)
{
	return m ? m->n_sources : 0;
}

size_t merge_source_items(const struct merge *m, int source_id)
{
	const struct source *src;

	if (!m || source_id < 0 || (size_t)source_id >= m->n_sources)
		return 0;
	src = &m->sources[source_id];
	return src->maps[KIND_SVC].n + src->maps[KIND_EPS].n;
}

int merge_handler_register(struct merge *m, unsigned kinds, merge_handler_fn fn,
			   void *userdata)
{
	if (!m || !fn || !kinds || (kinds & ~(unsigned)MERGE_HANDLE_ALL))
		return -EINVAL;
	if (GROW(m->handlers, m->cap_handlers, m->n_handlers + 1) < 0)
		return -ENOMEM;
	m->handlers[m->n_handlers++] = (struct handler){ kinds, fn, userdata };
	return 0;
}

static struct slot *winner(const struct merge *m, int kind, const char *ns, const char *name,
			   uint64_t hash, int *ret_sid)
{
	size_t i;

	for (i = 0; i < m->n_sources; i++) {
		struct slot *s = map_find(&m->sources[i].maps[kind], kind, ns, name, hash);

		if (s) {
			if (ret_sid)
				*ret_sid = (int)i;
			return s;
		}
	}
	return NULL;
}

/*
 * Record each (winner, loser) pair for a key once; the mark lives in the
 * loser's slot, so it is forgotten when the loser drops the key or the
 * winner changes.  A diag lost to ENOMEM is not retried: the state itself
 * stays correct, only the warning is missing.
 */
static void note_conflicts(struct merge *m, int kind, const char *ns, const char *name,
			   uint64_t hash)
{
	_cleanup_free_ char *key = NULL;
	int w = -1;
	size_t i;

	for (i = 0; i < m->n_sources; i++) {
		struct slot *s = map_find(&m->sources[i].maps[kind], kind, ns, name, hash);

		if (!s)
			continue;
		if (w < 0) {
			w = (int)i;
			s->warned_vs = -1;
			continue;
		}
		if (s->warned_vs == w)
			continue;
		if (!key && asprintf(&key, "%s/%s", ns, name) < 0) {
			key = NULL;
			return;
		}
		if (diag_add(&m->diags, DIAG_WARNING, m->sources[i].name, key, NULL,
			     "%s also defined by source '%s', which takes precedence",
			     kind == KIND_SVC ? "service" : "endpoint slice",
			     m->sources[w].name) >= 0)
			s->warned_vs = w;
	}
}

/* Winner bookkeeping after a key's entry in one source changed. */
static void key_changed(struct merge *m, int kind, const char *ns, const char *name,
			uint64_t hash, const void *old_w)
{
	struct slot *nw = winner(m, kind, ns, name, hash, NULL);
	const void *new_w = nw ? nw->item : NULL;

	if (!old_w && new_w)
		m->keys_added[kind]++;
	if (!item_same(kind, old_w, new_w)) {
		m->dirty |= kind_bit[kind];
		m->cached_valid = false;
	}
	note_conflicts(m, kind, ns, name, hash);
}

static void source_put(struct merge *m, int sid, int kind, void *item)
{
	struct itemmap *map = &m->sources[sid].maps[kind];
	const char *ns, *name;
	struct slot *slot, *w;
	void *old_w, *prev = NULL;
	uint64_t hash;

	item_key(kind, item, &ns, &name);
	hash = key_hash(ns, name);
	slot = map_find(map, kind, ns, name, hash);
	if (slot && item_same(kind, slot->item, item)) {
		/* Keep the old pointer: downstream compares by identity first. */
		slot->mark = m->mark;
		return;
	}
	w = winner(m, kind, ns, name, hash, NULL);
	old_w = w ? w->item : NULL;
	if (slot) {
		prev = slot->item;
	} else {
		slot = map_insert_new(map, hash);
		slot->warned_vs = -1;
	}
	item_ref(kind, item);
	slot->item = item;
	slot->mark = m->mark;
	key_changed(m, kind, ns, name, hash, old_w);
	if (prev)
		item_unref(kind, prev);
}

/* Remove the item at `slot`; its key strings stay valid until the unref at the end. */
static void source_drop(struct merge *m, int sid, int kind, struct slot *slot)
{
	struct itemmap *map = &m->sources[sid].maps[kind];
	void *item = slot->item;
	const char *ns, *name;
	uint64_t hash = slot->hash;
	struct slot *w;
	void *old_w;

	item_key(kind, item, &ns, &name);
	w = winner(m, kind, ns, name, hash, NULL);
	old_w = w->item;
	map_delete_at(map, (size_t)(slot - map->slots));
	key_changed(m, kind, ns, name, hash, old_w);
	item_unref(kind, item);
}

static void source_remove(struct merge *m, int sid, int kind, const void *item)
{
	const char *ns, *name;
	struct slot *slot;

	item_key(kind, item, &ns, &name);
	slot = map_find(&m->sources[sid].maps[kind], kind, ns, name, key_hash(ns, name));
	if (slot)
		source_drop(m, sid, kind, slot);
}

/* Drop every item of the source not reported in the current SET. */
static void source_sweep(struct merge *m, int sid, int kind)
{
	struct itemmap *map = &m->sources[sid].maps[kind];
	size_t i;

	/* Deletion shifts later entries back into slot i, so re-check it. */
	for (i = 0; i < map->cap; i++)
		while (map->slots[i].item && map->slots[i].mark != m->mark)
			source_drop(m, sid, kind, &map->slots[i]);
}

int merge_update(struct merge *m, int source_id, enum merge_op op,
		 struct service *const *services, size_t n_services,
		 struct epslice *const *slices, size_t n_slices)
{
	struct source *src;
	size_t i;
	int r;

	if (!m || source_id < 0 || (size_t)source_id >= m->n_sources)
		return -ENOENT;
	if ((n_services && !services) || (n_slices && !slices))
		return -EINVAL;
	src = &m->sources[source_id];

	switch (op) {
	case MERGE_SET:
	case MERGE_ADD:
		/* Reserve first so that nothing below can fail half-way. */
		r = map_reserve(&src->maps[KIND_SVC], n_services);
		if (r < 0)
			return r;
		r = map_reserve(&src->maps[KIND_EPS], n_slices);
		if (r < 0)
			return r;
		m->mark++;
		for (i = 0; i < n_services; i++)
			if (services[i])
				source_put(m, source_id, KIND_SVC, services[i]);
		for (i = 0; i < n_slices; i++)
			if (slices[i])
				source_put(m, source_id, KIND_EPS, slices[i]);
		if (op == MERGE_SET) {
			source_sweep(m, source_id, KIND_SVC);
			source_sweep(m, source_id, KIND_EPS);
		}
		return 0;
	case MERGE_REMOVE:
		for (i = 0; i < n_services; i++)
			if (services[i])
				source_remove(m, source_id, KIND_SVC, services[i]);
		for (i = 0; i < n_slices; i++)
			if (slices[i])
				source_remove(m, source_id, KIND_EPS, slices[i]);
		return 0;
	}
	return -EINVAL;
}

bool merge_dirty(const struct merge *m)
{
	return m && m->dirty;
}

/*
 * Winners of one kind, sorted by key.  When no key appeared since the last
 * build, the previous snapshot's order is still right: walk it and look up
 * each key's current winner (O(n) instead of a sort).
 */
static int build_kind(struct merge *m, int kind, void ***ret_arr, size_t *ret_n)
{
	void **base = NULL, **arr;
	size_t n_base = 0, total = 0, n = 0, i, j;

	if (m->cached) {
		base = kind == KIND_SVC ? (void **)m->cached->services : (void **)m->cached->slices;
		n_base = kind == KIND_SVC ? m->cached->n_services : m->cached->n_slices;
	}
	if (m->cached && !m->keys_added[kind]) {
		arr = reallocarray_z(NULL, n_base, sizeof(*arr));
		if (!arr)
			return -ENOMEM;
		for (i = 0; i < n_base; i++) {
			const char *ns, *name;
			struct slot *w;

			item_key(kind, base[i], &ns, &name);
			w = winner(m, kind, ns, name, key_hash(ns, name), NULL);
			if (w)
				arr[n++] = w->item;
		}
	} else {
		for (i = 0; i < m->n_sources; i++)
			total += m->sources[i].maps[kind].n;
		arr = reallocarray_z(NULL, total, sizeof(*arr));
		if (!arr)
			return -ENOMEM;
		for (i = 0; i < m->n_sources; i++) {
			const struct itemmap *map = &m->sources[i].maps[kind];

			for (j = 0; j < map->cap; j++) {
				const char *ns, *name;
				int sid = -1;

				if (!map->slots[j].item)
					continue;
				item_key(kind, map->slots[j].item, &ns, &name);
				winner(m, kind, ns, name, map->slots[j].hash, &sid);
				if ((size_t)sid == i)
					arr[n++] = map->slots[j].item;
			}
		}
		qsort_safe(arr, n, sizeof(*arr), kind == KIND_SVC ? svc_ptr_cmp : eps_ptr_cmp);
	}
	for (i = 0; i < n; i++)
		item_ref(kind, arr[i]);
	*ret_arr = arr;
	*ret_n = n;
	return 0;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct merge_snapshot *, snapshot_free)

/* Build a snapshot of the current union and make it the cached one. */
static int snapshot_build(struct merge *m, struct merge_snapshot **ret)
{
	_cleanup_(snapshot_freep) struct merge_snapshot *s = NULL;
	void **arr;
	size_t n;
	int r;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->refcnt = 1;
	r = build_kind(m, KIND_SVC, &arr, &n);
	if (r < 0)
		return r;
	s->services = (struct service **)arr;
	s->n_services = n;
	r = build_kind(m, KIND_EPS, &arr, &n);
	if (r < 0)
		return r;
	s->slices = (struct epslice **)arr;
	s->n_slices = n;
	r = merge_snapshot_diff(m->cached, s, &s->changes);
	if (r < 0)
		return r;

	merge_snapshot_unref(m->cached);
	m->cached = merge_snapshot_ref(s);
	m->cached_valid = true;
	m->keys_added[KIND_SVC] = m->keys_added[KIND_EPS] = 0;
	*ret = TAKE_PTR(s);
	return 0;
}

static bool kind_differs(int kind, void *const *a, size_t na, void *const *b, size_t nb)
{
	size_t i;

	if (na != nb)
		return true;
	for (i = 0; i < na; i++)
		if (!item_same(kind, a[i], b[i]))
			return true;
	return false;
}

/*
 * Changes that cancel out between two flushes (ADD then REMOVE) leave the
 * dirty bit set; comparing with what handlers last saw filters them out.
 */
static unsigned snapshot_diff(const struct merge_snapshot *cur, const struct merge_snapshot *prev)
{
	unsigned changed = 0;

	if (kind_differs(KIND_SVC, (void *const *)cur->services, cur->n_services,
			 prev ? (void *const *)prev->services : NULL, prev ? prev->n_services : 0))
		changed |= MERGE_HANDLE_SERVICES;
	if (kind_differs(KIND_EPS, (void *const *)cur->slices, cur->n_slices,
			 prev ? (void *const *)prev->slices : NULL, prev ? prev->n_slices : 0))
		changed |= MERGE_HANDLE_ENDPOINTS;
	return changed;
}

int merge_flush(struct merge *m)
{
	struct merge_snapshot *s;
	unsigned changed;
	size_t i;
	int r;

	if (!m || !m->dirty)
		return 0;
	r = snapshot_build(m, &s);
	if (r < 0)
		return r;
	changed = snapshot_diff(s, m->notified);
	m->dirty = 0;
	if (!changed) {
		s->generation = m->generation;
		merge_snapshot_unref(s);
		return 0;
	}
	s->generation = ++m->generation;
	for (i = 0; i < m->n_handlers; i++)
		if (m->handlers[i].kinds & changed)
			m->handlers[i].fn(s, changed, m->handlers[i].userdata);
	merge_snapshot_unref(m->notified);
	m->notified = s;
	return 1;
}

struct merge_snapshot *merge_snapshot_get(struct merge *m)
{
	struct merge_snapshot *s;

	if (!m)
		return NULL;
	if (m->cached && m->cached_valid)
		return merge_snapshot_ref(m->cached);
	if (snapshot_build(m, &s) < 0)
		return NULL;
	s->generation = m->generation;
	return s;
}

struct diag_list *merge_diags(struct merge *m)
{
	return m ? &m->diags : NULL;
}
