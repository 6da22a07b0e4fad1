/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sources/decode/decode.h"
#include "sources/etcd/etcdstore.h"
#include "util.h"

enum { IK_SVC, IK_EPS };

/* The items one etcd key yields. */
struct etcd_entry {
	char *key;
	int64_t mod_revision;
	struct service **services;
	size_t n_services;
	struct epslice **slices;
	size_t n_slices;
};

/* How many entries yield an item key ("S"/"E" ns 0x1f name). */
struct ikey {
	char *k;
	unsigned count;
};

struct etcd_store {
	char *prefix;
	struct merge *m;
	int source_id;
	struct etcd_entry **entries; /* sorted by key */
	size_t n_entries, cap_entries;
	struct ikey *index;          /* sorted by k */
	size_t n_index, cap_index;
	struct etcd_entry **pending; /* a full read in progress */
	size_t n_pending, cap_pending;
	int64_t revision;
	struct diag_list diags;
	struct etcd_store_stats st;
};

static void entry_free(struct etcd_entry *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->n_services; i++)
		service_unref(e->services[i]);
	for (size_t i = 0; i < e->n_slices; i++)
		epslice_unref(e->slices[i]);
	free(e->services);
	free(e->slices);
	free(e->key);
	free(e);
}

static void entries_free(struct etcd_entry **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		entry_free(v[i]);
	free(v);
}

static void index_free(struct ikey *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].k);
	free(v);
}

int etcd_store_new(const char *prefix, struct merge *m, int source_id, struct etcd_store **ret)
{
	struct etcd_store *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->prefix = strdup(prefix);
	if (!s->prefix) {
		free(s);
		return -ENOMEM;
	}
	s->m = m;
	s->source_id = source_id;
	diag_list_init(&s->diags);
	*ret = s;
	return 0;
}

void etcd_store_free(struct etcd_store *s)
{
	if (!s)
		return;
	entries_free(s->entries, s->n_entries);
	entries_free(s->pending, s->n_pending);
	index_free(s->index, s->n_index);
	diag_list_done(&s->diags);
	free(s->prefix);
	free(s);
}

struct diag_list *etcd_store_diags(struct etcd_store *s)
{
	return &s->diags;
}

void etcd_store_stats(const struct etcd_store *s, struct etcd_store_stats *ret)
{
	*ret = s->st;
	ret->revision = s->revision;
	ret->n_keys = s->n_entries;
}

int64_t etcd_store_revision(const struct etcd_store *s)
{
	return s->revision;
}

void etcd_store_advance(struct etcd_store *s, int64_t rev)
{
	if (rev > s->revision)
		s->revision = rev;
}

static const char *item_ns(int kind, const void *item)
{
	const char *ns = kind == IK_SVC ? ((const struct service *)item)->ns :
					  ((const struct epslice *)item)->ns;
	return ns ? ns : "";
}

static const char *item_name(int kind, const void *item)
{
	const char *n = kind == IK_SVC ? ((const struct service *)item)->name :
					 ((const struct epslice *)item)->name;
	return n ? n : "";
}

static char *ikey_make(int kind, const void *item)
{
	char *k;

	if (asprintf(&k, "%c%s\x1f%s", kind == IK_SVC ? 'S' : 'E', item_ns(kind, item),
		     item_name(kind, item)) < 0)
		return NULL;
	return k;
}

static bool index_find(const struct etcd_store *s, const char *k, size_t *ret_pos)
{
	size_t lo = 0, hi = s->n_index;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(s->index[mid].k, k);

		if (c == 0) {
			*ret_pos = mid;
			return true;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*ret_pos = lo;
	return false;
}

/* Count one more producer of item's key; returns the new count or -ENOMEM. */
static int index_inc(struct etcd_store *s, int kind, const void *item)
{
	_cleanup_free_ char *k = ikey_make(kind, item);
	size_t pos;

	if (!k)
		return -ENOMEM;
	if (index_find(s, k, &pos))
		return (int)++s->index[pos].count;
	if (GROW(s->index, s->cap_index, s->n_index + 1) < 0)
		return -ENOMEM;
	memmove(&s->index[pos + 1], &s->index[pos], (s->n_index - pos) * sizeof(*s->index));
	s->index[pos] = (struct ikey){ .k = TAKE_PTR(k), .count = 1 };
	s->n_index++;
	return 1;
}

/* One producer fewer; returns the remaining count or -ENOMEM. */
static int index_dec(struct etcd_store *s, int kind, const void *item)
{
	_cleanup_free_ char *k = ikey_make(kind, item);
	size_t pos;

	if (!k)
		return -ENOMEM;
	if (!index_find(s, k, &pos))
		return 0;
	if (--s->index[pos].count > 0)
		return (int)s->index[pos].count;
	free(s->index[pos].k);
	memmove(&s->index[pos], &s->index[pos + 1], (s->n_index - pos - 1) * sizeof(*s->index));
	s->n_index--;
	return 0;
}

static size_t entry_n(const struct etcd_entry *e, int kind)
{
	return kind == IK_SVC ? e->n_services : e->n_slices;
}

static void *entry_item(const struct etcd_entry *e, int kind, size_t i)
{
	return kind == IK_SVC ? (void *)e->services[i] : (void *)e->slices[i];
}

static bool same_key(int kind, const void *a, const void *b)
{
	return streq(item_ns(kind, a), item_ns(kind, b)) &&
	       streq(item_name(kind, a), item_name(kind, b));
}

static bool entry_has(const struct etcd_entry *e, int kind, const void *item)
{
	if (!e)
		return false;
	for (size_t i = 0; i < entry_n(e, kind); i++)
		if (same_key(kind, entry_item(e, kind, i), item))
			return true;
	return false;
}

/* Whether entry a beats entry b for an item both yield: written later wins. */
static bool entry_beats(const struct etcd_entry *a, const struct etcd_entry *b)
{
	if (a->mod_revision != b->mod_revision)
		return a->mod_revision > b->mod_revision;
	return strcmp(a->key, b->key) > 0;
}

/* Of the entries other than `skip` yielding item's key, the winner's item. */
static void *find_winner(const struct etcd_store *s, int kind, const void *item,
			 const struct etcd_entry *skip)
{
	const struct etcd_entry *best = NULL;
	void *best_item = NULL;

	for (size_t i = 0; i < s->n_entries; i++) {
		const struct etcd_entry *e = s->entries[i];

		if (e == skip)
			continue;
		for (size_t j = 0; j < entry_n(e, kind); j++) {
			void *it = entry_item(e, kind, j);

			if (same_key(kind, it, item) && (!best || entry_beats(e, best))) {
				best = e;
				best_item = it;
			}
		}
	}
	return best_item;
}

static int emit(struct etcd_store *s, enum merge_op op, int kind, void *item)
{
	struct service *svc = item;
	struct epslice *eps = item;

	if (kind == IK_SVC)
		return merge_update(s->m, s->source_id, op, &svc, 1, NULL, 0);
	return merge_update(s->m, s->source_id, op, NULL, 0, &eps, 1);
}

static int entry_find(const struct etcd_store *s, const char *key, size_t *ret_pos)
{
	size_t lo = 0, hi = s->n_entries;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(s->entries[mid]->key, key);

		if (c == 0) {
			*ret_pos = mid;
			return 1;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*ret_pos = lo;
	return 0;
}

static void diag_key(struct etcd_store *s, enum diag_level level, const char *key,
		     const char *object, const char *msg)
{
	_cleanup_free_ char *src = NULL;

	if (asprintf(&src, "etcd:%s", key) < 0)
		return;
	(void)diag_add(&s->diags, level, src, object, NULL, "%s", msg);
}

/* A spec under a one-segment key: a Kubernetes Service, or the original object. */
static const char *legacy_spec_kind(const char *value, size_t len)
{
	cJSON *root = cJSON_ParseWithLength(value, len);
	const char *kind = "legacy-service";
	const cJSON *k;

	if (root && cJSON_IsObject(root)) {
		k = cJSON_GetObjectItemCaseSensitive(root, "kind");
		if (cJSON_IsString(k) && streq(k->valuestring, "Service"))
			kind = "Service";
	}
	cJSON_Delete(root);
	return kind;
}

/*
 * Decode one kv into an entry; *ret = NULL when the key is not ours, is
 * malformed, or its value yields nothing (diags say why).
 */
static int store_decode(struct etcd_store *s, const struct etcd_kv *kv, struct etcd_entry **ret)
{
	_cleanup_free_ char *src = NULL;
	struct decoded dec = { 0 };
	struct etcd_entry *e;
	struct etcd_key k;
	const char *kind;
	size_t errs;
	int r;

	*ret = NULL;
	r = etcd_key_parse(s->prefix, kv->key, kv->key_len, &k);
	if (r == -ENOENT)
		return 0;
	if (r < 0) {
		diag_key(s, DIAG_WARNING, kv->key, NULL,
			 "key does not fit the layout <prefix>/services/{specs,endpoints,endpointslices}/..., ignoring");
		return 0;
	}
	switch (k.kind) {
	case ETCD_KEY_SERVICE:
		kind = "Service";
		break;
	case ETCD_KEY_SLICE:
		kind = "EndpointSlice";
		break;
	case ETCD_KEY_ENDPOINTS:
		kind = "Endpoints";
		break;
	case ETCD_KEY_LEGACY_SPEC:
		kind = legacy_spec_kind(kv->value, kv->value_len);
		break;
	default:
		kind = "legacy-endpoints";
		break;
	}
	if (asprintf(&src, "etcd:%s", kv->key) < 0)
		return -ENOMEM;
	errs = diag_count(&s->diags, DIAG_ERROR);
	r = decode_object(kv->value, kv->value_len, kind, k.ns[0] ? k.ns : NULL, k.name, src,
			  &dec, &s->diags);
	if (r == -ENOMEM) {
		decoded_done(&dec);
		return r;
	}
	if (r < 0 || diag_count(&s->diags, DIAG_ERROR) > errs)
		s->st.rejected++;
	if (r < 0 || (!dec.n_services && !dec.n_slices)) {
		decoded_done(&dec);
		return 0;
	}
	e = calloc(1, sizeof(*e));
	if (e)
		e->key = strdup(kv->key);
	if (!e || !e->key) {
		free(e);
		decoded_done(&dec);
		return -ENOMEM;
	}
	e->mod_revision = kv->mod_revision;
	e->services = TAKE_PTR(dec.services);
	e->n_services = dec.n_services;
	e->slices = TAKE_PTR(dec.slices);
	e->n_slices = dec.n_slices;
	*ret = e;
	return 0;
}

static void note_duplicate(struct etcd_store *s, const struct etcd_entry *e, int kind,
			   const void *item)
{
	_cleanup_free_ char *obj = NULL;

	if (asprintf(&obj, "%s %s/%s", kind == IK_SVC ? "Service" : "endpoints", item_ns(kind, item),
		     item_name(kind, item)) < 0)
		return;
	diag_key(s, DIAG_WARNING, e->key, obj,
		 "also defined under another key; the key written last wins");
}

/* Drop old's item (kind, item): another key's item takes over, or it goes. */
static int drop_item(struct etcd_store *s, const struct etcd_entry *old, int kind, void *item)
{
	void *w;
	int c;

	c = index_dec(s, kind, item);
	if (c < 0)
		return c;
	if (c == 0)
		return emit(s, MERGE_REMOVE, kind, item);
	w = find_winner(s, kind, item, old);
	return emit(s, w ? MERGE_ADD : MERGE_REMOVE, kind, w ? w : item);
}

static int entry_remove_at(struct etcd_store *s, size_t pos)
{
	struct etcd_entry *old = s->entries[pos];
	int r = 0;

	for (int kind = IK_SVC; kind <= IK_EPS && r >= 0; kind++)
		for (size_t i = 0; i < entry_n(old, kind) && r >= 0; i++)
			r = drop_item(s, old, kind, entry_item(old, kind, i));
	memmove(&s->entries[pos], &s->entries[pos + 1],
		(s->n_entries - pos - 1) * sizeof(*s->entries));
	s->n_entries--;
	entry_free(old);
	return r;
}

static int store_put(struct etcd_store *s, const struct etcd_kv *kv)
{
	struct etcd_entry *ne = NULL, *old;
	size_t pos;
	int r, c;

	r = store_decode(s, kv, &ne);
	if (r < 0)
		return r;
	old = entry_find(s, kv->key, &pos) ? s->entries[pos] : NULL;
	if (!ne)
		return old ? entry_remove_at(s, pos) : 0;
	if (!old && GROW(s->entries, s->cap_entries, s->n_entries + 1) < 0) {
		entry_free(ne);
		return -ENOMEM;
	}
	for (int kind = IK_SVC; kind <= IK_EPS && r >= 0; kind++) {
		for (size_t i = 0; old && i < entry_n(old, kind) && r >= 0; i++) {
			void *it = entry_item(old, kind, i);

			if (!entry_has(ne, kind, it))
				r = drop_item(s, old, kind, it);
		}
		for (size_t i = 0; i < entry_n(ne, kind) && r >= 0; i++) {
			void *it = entry_item(ne, kind, i);

			c = entry_has(old, kind, it) ? 1 : index_inc(s, kind, it);
			if (c > 1)
				note_duplicate(s, ne, kind, it);
			r = c < 0 ? c : emit(s, MERGE_ADD, kind, it);
		}
	}
	if (old) {
		entry_free(old);
		s->entries[pos] = ne;
	} else {
		memmove(&s->entries[pos + 1], &s->entries[pos],
			(s->n_entries - pos) * sizeof(*s->entries));
		s->entries[pos] = ne;
		s->n_entries++;
	}
	return r;
}

static int store_delete(struct etcd_store *s, const struct etcd_kv *kv)
{
	size_t pos;

	if (!entry_find(s, kv->key, &pos))
		return 0;
	return entry_remove_at(s, pos);
}

int etcd_store_apply_events(struct etcd_store *s, const struct etcd_kv *ev, size_t n)
{
	/* Events of one revision (a transaction) share it, so compare with the
	 * revision before this batch, not the one the batch reaches. */
	int64_t base = s->revision, top = s->revision;
	int r;

	for (size_t i = 0; i < n; i++) {
		if (ev[i].mod_revision <= base) {
			s->st.duplicates++;
			continue;
		}
		r = ev[i].is_delete ? store_delete(s, &ev[i]) : store_put(s, &ev[i]);
		if (r < 0)
			return r;
		s->st.events++;
		if (ev[i].mod_revision > top)
			top = ev[i].mod_revision;
	}
	s->revision = top;
	return 0;
}

void etcd_store_read_begin(struct etcd_store *s)
{
	etcd_store_read_abort(s);
}

void etcd_store_read_abort(struct etcd_store *s)
{
	entries_free(s->pending, s->n_pending);
	s->pending = NULL;
	s->n_pending = s->cap_pending = 0;
}

int etcd_store_read_add(struct etcd_store *s, const struct etcd_kv *kvs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct etcd_entry *e;
		int r;

		r = store_decode(s, &kvs[i], &e);
		if (r < 0)
			return r;
		if (!e)
			continue;
		if (GROW(s->pending, s->cap_pending, s->n_pending + 1) < 0) {
			entry_free(e);
			return -ENOMEM;
		}
		s->pending[s->n_pending++] = e;
	}
	return 0;
}

static int ikey_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ikey *)a)->k, ((const struct ikey *)b)->k);
}

struct cand {
	int kind;
	void *item;
	const struct etcd_entry *e;
};

static int entry_ptr_cmp(const void *a, const void *b)
{
	const struct etcd_entry *x = *(const struct etcd_entry *const *)a;
	const struct etcd_entry *y = *(const struct etcd_entry *const *)b;

	return strcmp(x->key, y->key);
}

/* Group by item key, the winner first. */
static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	int c;

	if (x->kind != y->kind)
		return x->kind - y->kind;
	c = strcmp(item_ns(x->kind, x->item), item_ns(y->kind, y->item));
	if (!c)
		c = strcmp(item_name(x->kind, x->item), item_name(y->kind, y->item));
	if (c)
		return c;
	return entry_beats(x->e, y->e) ? -1 : entry_beats(y->e, x->e) ? 1 : 0;
}

int etcd_store_read_commit(struct etcd_store *s, int64_t rev)
{
	struct cand *cands = NULL;
	struct service **svcs = NULL;
	struct epslice **eps = NULL;
	struct ikey *index = NULL;
	size_t n = 0, n_svcs = 0, n_eps = 0, n_index = 0;
	int r = -ENOMEM;

	if (s->n_pending)
		qsort(s->pending, s->n_pending, sizeof(*s->pending), entry_ptr_cmp);
	for (size_t i = 0; i < s->n_pending; i++)
		n += s->pending[i]->n_services + s->pending[i]->n_slices;
	cands = calloc(n ? n : 1, sizeof(*cands));
	svcs = calloc(n ? n : 1, sizeof(*svcs));
	eps = calloc(n ? n : 1, sizeof(*eps));
	index = calloc(n ? n : 1, sizeof(*index));
	if (!cands || !svcs || !eps || !index)
		goto out;
	n = 0;
	for (size_t i = 0; i < s->n_pending; i++)
		for (int kind = IK_SVC; kind <= IK_EPS; kind++)
			for (size_t j = 0; j < entry_n(s->pending[i], kind); j++)
				cands[n++] = (struct cand){ kind, entry_item(s->pending[i], kind, j),
							    s->pending[i] };
	qsort(cands, n, sizeof(*cands), cand_cmp);
	for (size_t i = 0; i < n;) {
		size_t j = i + 1;

		while (j < n && cands[j].kind == cands[i].kind &&
		       same_key(cands[i].kind, cands[i].item, cands[j].item))
			j++;
		index[n_index].k = ikey_make(cands[i].kind, cands[i].item);
		if (!index[n_index].k)
			goto out;
		index[n_index++].count = (unsigned)(j - i);
		if (cands[i].kind == IK_SVC)
			svcs[n_svcs++] = cands[i].item;
		else
			eps[n_eps++] = cands[i].item;
		if (j - i > 1)
			note_duplicate(s, cands[i].e, cands[i].kind, cands[i].item);
		i = j;
	}
	/* The index is sorted like the candidates, which is not strcmp order
	 * of the keys once namespaces differ in length: sort it. */
	qsort(index, n_index, sizeof(*index), ikey_cmp);
	r = merge_update(s->m, s->source_id, MERGE_SET, svcs, n_svcs, eps, n_eps);
	if (r < 0)
		goto out;
	entries_free(s->entries, s->n_entries);
	index_free(s->index, s->n_index);
	s->entries = TAKE_PTR(s->pending);
	s->n_entries = s->n_pending;
	s->cap_entries = s->cap_pending;
	s->n_pending = s->cap_pending = 0;
	s->index = TAKE_PTR(index);
	s->n_index = s->cap_index = n_index;
	s->revision = rev;
	s->st.full_reads++;
	r = 0;
out:
	if (r < 0) {
		index_free(index, n_index);
		etcd_store_read_abort(s);
	}
	free(cands);
	free(svcs);
	free(eps);
	return r;
}
