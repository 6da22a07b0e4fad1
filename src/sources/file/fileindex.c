/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sources/decode/decode.h"
#include "sources/file/fileindex.h"
#include "util.h"

/* One definition of a key: the file (its path, owned by the file source)
 * and its item. */
struct def {
	const char *file;
	void *item;
};

struct key {
	struct key *next;   /* hash chain */
	uint64_t hash;
	bool slice;
	bool pending;       /* in x->pending */
	bool dup_listed;    /* in x->touched (for the duplicate report) */
	struct def *defs;   /* sorted by file (strcmp) */
	size_t n_defs, cap_defs;
	void *committed;    /* the item last handed over (a reference), or NULL */
	char text[];        /* "ns\0name\0" */
};

struct file_index {
	struct key **buckets;
	size_t n_buckets; /* 0 or a power of two */
	size_t n_keys;
	struct key **pending; /* changed since the last accept */
	size_t n_pending, cap_pending;
	struct key **touched; /* changed since the last duplicate report */
	size_t n_touched, cap_touched;
};

static const char *nz(const char *s)
{
	return s ? s : "";
}

static void item_ns_name(const struct service *svc, const struct epslice *slice,
			 const char **ns, const char **name)
{
	*ns = nz(svc ? svc->ns : slice->ns);
	*name = nz(svc ? svc->name : slice->name);
}

static uint64_t key_hash(bool slice, const char *ns, const char *name)
{
	uint64_t h = slice ? 0x84222325cbf29ce4ULL : 0xcbf29ce484222325ULL;
	const unsigned char *p;

	for (p = (const unsigned char *)ns; *p; p++)
		h = (h ^ *p) * 0x100000001b3ULL;
	h *= 0x100000001b3ULL; /* NUL occurs in neither part */
	for (p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 0x100000001b3ULL;
	return h;
}

static const char *key_name(const struct key *k)
{
	return k->text + strlen(k->text) + 1;
}

static struct key *key_find(const struct file_index *x, bool slice, const char *ns,
			    const char *name, uint64_t h)
{
	struct key *k;

	if (!x->n_buckets)
		return NULL;
	for (k = x->buckets[h & (x->n_buckets - 1)]; k; k = k->next)
		if (k->hash == h && k->slice == slice && streq(k->text, ns) &&
		    streq(key_name(k), name))
			return k;
	return NULL;
}

static int rehash(struct file_index *x)
{
	size_t n = x->n_buckets ? x->n_buckets * 2 : 64, i;
	struct key **b;

	if (n > SIZE_MAX / sizeof(*b))
		return -ENOMEM;
	b = calloc(n, sizeof(*b));
	if (!b)
		return -ENOMEM;
	for (i = 0; i < x->n_buckets; i++) {
		struct key *k = x->buckets[i], *next;

		for (; k; k = next) {
			next = k->next;
			k->next = b[k->hash & (n - 1)];
			b[k->hash & (n - 1)] = k;
		}
	}
	free(x->buckets);
	x->buckets = b;
	x->n_buckets = n;
	return 0;
}

static struct key *key_add(struct file_index *x, bool slice, const char *ns, const char *name,
			   uint64_t h)
{
	size_t lns = strlen(ns), lname = strlen(name);
	struct key *k;

	if (x->n_keys >= x->n_buckets && rehash(x) < 0)
		return NULL;
	k = calloc(1, sizeof(*k) + lns + lname + 2);
	if (!k)
		return NULL;
	k->hash = h;
	k->slice = slice;
	memcpy(k->text, ns, lns + 1);
	memcpy(k->text + lns + 1, name, lname + 1);
	k->next = x->buckets[h & (x->n_buckets - 1)];
	x->buckets[h & (x->n_buckets - 1)] = k;
	x->n_keys++;
	return k;
}

static void item_unref(bool slice, void *item)
{
	if (slice)
		epslice_unref(item);
	else
		service_unref(item);
}

static void key_free(struct key *k)
{
	if (k->committed)
		item_unref(k->slice, k->committed);
	free(k->defs);
	free(k);
}

/* Unlink and free k if nothing refers to it any more. */
static void key_gc(struct file_index *x, struct key *k)
{
	struct key **pp;

	if (k->n_defs || k->committed || k->pending || k->dup_listed)
		return;
	for (pp = &x->buckets[k->hash & (x->n_buckets - 1)]; *pp != k; pp = &(*pp)->next)
		;
	*pp = k->next;
	x->n_keys--;
	key_free(k);
}

static int mark(struct file_index *x, struct key *k)
{
	if (!k->pending) {
		if (GROW(x->pending, x->cap_pending, x->n_pending + 1) < 0)
			return -ENOMEM;
		x->pending[x->n_pending++] = k;
		k->pending = true;
	}
	if (!k->dup_listed) {
		if (GROW(x->touched, x->cap_touched, x->n_touched + 1) < 0)
			return -ENOMEM;
		x->touched[x->n_touched++] = k;
		k->dup_listed = true;
	}
	return 0;
}

int file_index_new(struct file_index **ret)
{
	*ret = calloc(1, sizeof(**ret));
	return *ret ? 0 : -ENOMEM;
}

void file_index_clear(struct file_index *x)
{
	size_t i;

	for (i = 0; i < x->n_buckets; i++) {
		struct key *k = x->buckets[i], *next;

		for (; k; k = next) {
			next = k->next;
			key_free(k);
		}
	}
	free(x->buckets);
	free(x->pending);
	free(x->touched);
	memset(x, 0, sizeof(*x));
}

void file_index_free(struct file_index *x)
{
	if (!x)
		return;
	file_index_clear(x);
	free(x);
}

/* Where file's definition goes in k->defs (or is). */
static size_t def_pos(const struct key *k, const char *file, bool *found)
{
	size_t lo = 0, hi = k->n_defs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(k->defs[mid].file, file);

		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

int file_index_put(struct file_index *x, const char *file, struct service *svc,
		   struct epslice *slice)
{
	const char *ns, *name;
	bool found, is_slice = !svc;
	struct key *k;
	uint64_t h;
	size_t at;

	item_ns_name(svc, slice, &ns, &name);
	h = key_hash(is_slice, ns, name);
	k = key_find(x, is_slice, ns, name, h);
	if (!k && !(k = key_add(x, is_slice, ns, name, h)))
		return -ENOMEM;
	at = def_pos(k, file, &found);
	if (!found) {
		if (GROW(k->defs, k->cap_defs, k->n_defs + 1) < 0)
			return -ENOMEM;
		memmove(&k->defs[at + 1], &k->defs[at], (k->n_defs - at) * sizeof(*k->defs));
		k->n_defs++;
	}
	k->defs[at] = (struct def){ file, is_slice ? (void *)slice : (void *)svc };
	return mark(x, k);
}

int file_index_drop(struct file_index *x, const char *file, const struct service *svc,
		    const struct epslice *slice)
{
	int r;

	const char *ns, *name;
	bool found, is_slice = !svc;
	struct key *k;
	size_t at;

	item_ns_name(svc, slice, &ns, &name);
	k = key_find(x, is_slice, ns, name, key_hash(is_slice, ns, name));
	if (!k)
		return 0;
	at = def_pos(k, file, &found);
	if (!found)
		return 0;
	r = mark(x, k);
	if (r < 0)
		return r;
	memmove(&k->defs[at], &k->defs[at + 1], (k->n_defs - at - 1) * sizeof(*k->defs));
	k->n_defs--;
	return 0;
}

void *file_index_get(const struct file_index *x, const char *file, const struct service *svc,
		     const struct epslice *slice)
{
	const char *ns, *name;
	const struct key *k;
	bool found, is_slice = !svc;
	size_t at;

	item_ns_name(svc, slice, &ns, &name);
	k = key_find(x, is_slice, ns, name, key_hash(is_slice, ns, name));
	if (!k)
		return NULL;
	at = def_pos(k, file, &found);
	return found ? k->defs[at].item : NULL;
}

bool file_index_wins(const struct file_index *x, const char *file, const struct service *svc,
		     const struct epslice *slice)
{
	const char *ns, *name;
	const struct key *k;
	bool is_slice = !svc;

	item_ns_name(svc, slice, &ns, &name);
	k = key_find(x, is_slice, ns, name, key_hash(is_slice, ns, name));
	return k && k->n_defs && streq(k->defs[0].file, file);
}

int file_index_report_dups(struct file_index *x, struct diag_list *diags)
{
	int r = 0;
	size_t i;

	for (i = 0; i < x->n_touched; i++) {
		struct key *k = x->touched[i];

		for (size_t j = 1; r >= 0 && j < k->n_defs; j++) {
			char obj[600];

			snprintf(obj, sizeof(obj), "%s%s/%s",
				 k->slice ? decode_slice_kind(k->defs[j].item) : "", k->text,
				 key_name(k));
			r = diag_add(diags, DIAG_ERROR, k->defs[j].file, obj, NULL,
				     "defined more than once; the later definition is ignored");
		}
	}
	for (i = 0; i < x->n_touched; i++) {
		x->touched[i]->dup_listed = false;
		key_gc(x, x->touched[i]);
	}
	x->n_touched = 0;
	return r < 0 ? -ENOMEM : 0;
}

void file_delta_done(struct file_delta *d)
{
	free(d->put_services);
	free(d->put_slices);
	free(d->del_services);
	free(d->del_slices);
	memset(d, 0, sizeof(*d));
}

/* Append item to the put or del array of its kind. */
static int delta_add(struct file_delta *d, bool slice, bool put, void *item, size_t cap)
{
	void ***arr;
	size_t *n;

	if (slice) {
		arr = put ? (void ***)&d->put_slices : (void ***)&d->del_slices;
		n = put ? &d->n_put_slices : &d->n_del_slices;
	} else {
		arr = put ? (void ***)&d->put_services : (void ***)&d->del_services;
		n = put ? &d->n_put_services : &d->n_del_services;
	}
	if (!*arr && !(*arr = calloc(cap ? cap : 1, sizeof(void *))))
		return -ENOMEM;
	(*arr)[(*n)++] = item;
	return 0;
}

/* What k contributes to a delta: its winner if it changed, or its removal. */
static int delta_key(const struct key *k, bool all, struct file_delta *d, size_t cap)
{
	void *w = k->n_defs ? k->defs[0].item : NULL;

	if (all)
		return w ? delta_add(d, k->slice, true, w, cap) : 0;
	if (w == k->committed)
		return 0;
	if (w)
		return delta_add(d, k->slice, true, w, cap);
	return delta_add(d, k->slice, false, k->committed, cap);
}

int file_index_delta(const struct file_index *x, bool all, struct file_delta *ret)
{
	struct file_delta d = { 0 };
	size_t i, cap = all ? x->n_keys : x->n_pending;
	int r = 0;

	if (all) {
		for (i = 0; r >= 0 && i < x->n_buckets; i++)
			for (struct key *k = x->buckets[i]; r >= 0 && k; k = k->next)
				r = delta_key(k, true, &d, cap);
	} else {
		for (i = 0; r >= 0 && i < x->n_pending; i++)
			r = delta_key(x->pending[i], false, &d, cap);
	}
	if (r < 0) {
		file_delta_done(&d);
		return r;
	}
	*ret = d;
	return 0;
}

static void commit_key(struct key *k)
{
	void *w = k->n_defs ? k->defs[0].item : NULL;

	if (w == k->committed)
		return;
	if (w) {
		if (k->slice)
			epslice_ref(w);
		else
			service_ref(w);
	}
	if (k->committed)
		item_unref(k->slice, k->committed);
	k->committed = w;
}

void file_index_accept(struct file_index *x, bool all)
{
	size_t i;

	if (all)
		for (i = 0; i < x->n_buckets; i++)
			for (struct key *k = x->buckets[i]; k; k = k->next)
				commit_key(k);
	for (i = 0; i < x->n_pending; i++) {
		struct key *k = x->pending[i];

		commit_key(k);
		k->pending = false;
	}
	/* Keys without definitions or a committed item go now (the chains
	 * are walked again: key_gc() unlinks). */
	for (i = 0; i < x->n_pending; i++)
		key_gc(x, x->pending[i]);
	if (all)
		for (i = 0; i < x->n_buckets; i++) {
			struct key *k = x->buckets[i], *next;

			for (; k; k = next) {
				next = k->next;
				key_gc(x, k);
			}
		}
	x->n_pending = 0;
}

size_t file_index_pending(const struct file_index *x)
{
	return x->n_pending;
}
