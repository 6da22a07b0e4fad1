/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ruleset.h"
#include "util.h"

/* --- string arena: bump allocation in chunks, freed all at once --- */

#define ARENA_CHUNK (64 * 1024)

struct arena_chunk {
	struct arena_chunk *next;
	size_t used;
	size_t size;
	char data[];
};

struct rs_arena {
	struct arena_chunk *head;
	size_t bytes; /* handed out */
	size_t held;  /* in chunks (their headers too) */
};

static char *arena_alloc(struct rs_arena *a, size_t n)
{
	struct arena_chunk *c = a->head;

	if (!c || c->size - c->used < n) {
		size_t size = n > ARENA_CHUNK ? n : ARENA_CHUNK;

		c = malloc(sizeof(*c) + size);
		if (!c)
			return NULL;
		c->size = size;
		c->used = 0;
		a->held += sizeof(*c) + size;
		c->next = a->head;
		a->head = c;
	}
	c->used += n;
	a->bytes += n;
	return c->data + c->used - n;
}

static void arena_free(struct rs_arena *a)
{
	struct arena_chunk *c, *n;

	if (!a)
		return;
	for (c = a->head; c; c = n) {
		n = c->next;
		free(c);
	}
	free(a);
}

const char *ruleset_strdup(struct ruleset *rs, const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = arena_alloc(rs->arena, n);

	if (p)
		memcpy(p, s, n);
	return p;
}

const char *ruleset_printf(struct ruleset *rs, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	char *p;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	p = arena_alloc(rs->arena, (size_t)n + 1);
	if (!p)
		return NULL;
	if ((size_t)n < sizeof(buf)) {
		memcpy(p, buf, (size_t)n + 1);
	} else {
		va_start(ap, fmt);
		vsnprintf(p, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	return p;
}

/* --- chain index: open addressing on the name, per table --- */

/*
 * A slot holds the chain's name hash beside the pointer: probing compares
 * hashes in the slot array and touches a chain record only on a hash
 * match, and growing moves slots without reading a chain.  At 100,000
 * chains the records are far out of cache, and following each probe's
 * pointer was most of the index's cost.
 */
struct index_slot {
	struct rs_chain *c; /* NULL: empty */
	uint64_t h;
};

struct chain_index {
	struct index_slot *slots;
	size_t cap; /* power of two */
	size_t n;
	/* Chains were added by ruleset_add_chain_new() and are not in the
	 * slots: the next change by name indexes the whole table, a lookup
	 * until then walks it. */
	bool partial;
};

/* Chain records of ruleset_add_chain_new(), a block at a time: a restart
 * decodes 100,000 of them and frees them at exit. */
#define CHAIN_BLOCK 1024

struct chain_block {
	struct chain_block *next;
	size_t used;
	struct rs_chain c[CHAIN_BLOCK];
};

struct ruleset_priv {
	struct ruleset pub;
	struct chain_index idx[RS_NTABLES];
	struct chain_block *blocks; /* the newest first */
};

static struct ruleset_priv *priv(const struct ruleset *rs)
{
	return (struct ruleset_priv *)rs;
}

/* The last 1..8 bytes of a name as one word (little endian, zero filled). */
static uint64_t tail_word(const unsigned char *s, size_t n)
{
	uint64_t w = 0;

	for (size_t i = 0; i < n; i++)
		w |= (uint64_t)s[i] << (8 * i);
	return w;
}

/* A word at a time (names are at most RS_CHAIN_MAXLEN bytes), then
 * murmur3's finaliser: linear probing takes the low bits. */
static uint64_t name_hash(const char *name, size_t len)
{
	const unsigned char *s = (const unsigned char *)name;
	uint64_t h = (uint64_t)len * 0x9e3779b97f4a7c15ULL, w;

	for (; len > 8; s += 8, len -= 8) {
		memcpy(&w, s, sizeof(w));
		h = (h ^ w) * 0xff51afd7ed558ccdULL;
		h ^= h >> 32;
	}
	h = (h ^ tail_word(s, len)) * 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h;
}

/* Room for `need` chains at a load of at most one half.  0 or -ENOMEM. */
static int index_reserve(struct chain_index *ix, size_t need)
{
	size_t ncap = ix->cap ? ix->cap : 64;
	struct index_slot *ns;

	if (need * 2 <= ix->cap)
		return 0;
	while (need * 2 > ncap) {
		if (ncap > SIZE_MAX / 4 / sizeof(*ns))
			return -ENOMEM;
		ncap *= 2;
	}
	ns = calloc(ncap, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	for (size_t i = 0; i < ix->cap; i++) {
		const struct index_slot *o = &ix->slots[i];
		size_t j;

		if (!o->c)
			continue;
		for (j = o->h & (ncap - 1); ns[j].c; j = (j + 1) & (ncap - 1))
			;
		ns[j] = *o;
	}
	free(ix->slots);
	ix->slots = ns;
	ix->cap = ncap;
	return 0;
}

/*
 * The slot of the chain named name (len bytes, hash h), else the empty
 * slot where it would go.  The index must have a slot (cap > 0).
 */
static size_t index_probe(const struct chain_index *ix, const char *name, size_t len, uint64_t h)
{
	size_t mask = ix->cap - 1, i;

	for (i = h & mask; ix->slots[i].c; i = (i + 1) & mask)
		if (ix->slots[i].h == h && memcmp(ix->slots[i].c->name, name, len + 1) == 0)
			break;
	return i;
}

/* c must not be in the index yet.  0 or -ENOMEM. */
static int index_insert(struct chain_index *ix, struct rs_chain *c)
{
	size_t len = strlen(c->name);
	uint64_t h = name_hash(c->name, len);
	size_t i;

	if (index_reserve(ix, ix->n + 1) < 0)
		return -ENOMEM;
	i = index_probe(ix, c->name, len, h);
	ix->slots[i].c = c;
	ix->slots[i].h = h;
	ix->n++;
	return 0;
}

/* Linear probing's deletion: later entries of the cluster shift back. */
static void index_remove(struct chain_index *ix, const struct rs_chain *c)
{
	size_t mask = ix->cap - 1, i, j;

	if (!ix->cap)
		return;
	for (i = name_hash(c->name, strlen(c->name)) & mask; ix->slots[i].c != c;
	     i = (i + 1) & mask)
		if (!ix->slots[i].c)
			return;
	ix->slots[i].c = NULL;
	ix->n--;
	for (j = (i + 1) & mask; ix->slots[j].c; j = (j + 1) & mask) {
		size_t k = ix->slots[j].h & mask;

		/* Stays if its home k is cyclically within (i, j]. */
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		ix->slots[i] = ix->slots[j];
		ix->slots[j].c = NULL;
		i = j;
	}
}

static struct rs_chain *index_find(const struct chain_index *ix, const char *name)
{
	size_t len;

	if (!ix->cap)
		return NULL;
	len = strnlen(name, RS_CHAIN_MAXLEN + 1);
	if (len > RS_CHAIN_MAXLEN)
		return NULL; /* no chain has so long a name */
	return ix->slots[index_probe(ix, name, len, name_hash(name, len))].c;
}

size_t ruleset_arena_bytes(const struct ruleset *rs)
{
	return rs->arena->bytes;
}

size_t ruleset_bytes(const struct ruleset *rs)
{
	const struct ruleset_priv *p;
	size_t n;

	if (!rs)
		return 0;
	p = priv(rs);
	n = sizeof(*p) + sizeof(*rs->arena) + rs->arena->held;
	for (size_t t = 0; t < RS_NTABLES; t++) {
		n += rs->t[t].cap * sizeof(*rs->t[t].chains) + p->idx[t].cap * sizeof(*p->idx[t].slots);
		for (size_t i = 0; i < rs->t[t].n; i++)
			n += sizeof(struct rs_chain) +
			     rs->t[t].chains[i]->cap_rules * sizeof(struct rs_rule);
	}
	return n;
}

void ruleset_compact(struct ruleset *rs)
{
	for (size_t t = 0; rs && t < RS_NTABLES; t++) {
		for (size_t i = 0; i < rs->t[t].n; i++) {
			struct rs_chain *c = rs->t[t].chains[i];
			struct rs_rule *nr;

			if (c->cap_rules <= c->n_rules)
				continue;
			if (!c->n_rules) {
				free(c->rules);
				c->rules = NULL;
				c->cap_rules = 0;
				continue;
			}
			nr = realloc(c->rules, c->n_rules * sizeof(*nr));
			if (nr) {
				c->rules = nr;
				c->cap_rules = c->n_rules;
			}
		}
	}
}

/* --- ruleset --- */

struct ruleset *ruleset_new(void)
{
	struct ruleset_priv *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->pub.arena = calloc(1, sizeof(*p->pub.arena));
	if (!p->pub.arena) {
		free(p);
		return NULL;
	}
	return &p->pub;
}

void ruleset_free(struct ruleset *rs)
{
	struct ruleset_priv *p;
	size_t t, i;

	if (!rs)
		return;
	p = priv(rs);
	for (t = 0; t < RS_NTABLES; t++) {
		for (i = 0; i < rs->t[t].n; i++) {
			free(rs->t[t].chains[i]->rules);
			if (!rs->t[t].chains[i]->pooled)
				free(rs->t[t].chains[i]);
		}
		free(rs->t[t].chains);
		free(p->idx[t].slots);
	}
	while (p->blocks) {
		struct chain_block *b = p->blocks;

		p->blocks = b->next;
		free(b);
	}
	arena_free(rs->arena);
	free(p);
}

const char *rs_table_name(enum rs_table t)
{
	return t == RS_NAT ? "nat" : "filter";
}

static const char *const builtin_filter[] = { "INPUT", "FORWARD", "OUTPUT" };
static const char *const builtin_nat[] = { "PREROUTING", "INPUT", "OUTPUT", "POSTROUTING" };

/* Position in the kernel's hook order, or -1 for a user chain. */
static int builtin_rank(enum rs_table t, const char *name)
{
	const char *const *v = t == RS_NAT ? builtin_nat : builtin_filter;
	size_t n = t == RS_NAT ? ARRAY_SIZE(builtin_nat) : ARRAY_SIZE(builtin_filter);
	size_t i;

	for (i = 0; i < n; i++)
		if (streq(v[i], name))
			return (int)i;
	return -1;
}

bool rs_chain_is_builtin(enum rs_table t, const char *name)
{
	return builtin_rank(t, name) >= 0;
}

/* Index every chain of table t when some are not (partial).  0 or -ENOMEM
 * (the index stays partial, lookups stay right). */
static int index_complete(struct ruleset *rs, enum rs_table t)
{
	struct chain_index *ix = &priv(rs)->idx[t];
	const struct rs_chains *cs = &rs->t[t];

	if (!ix->partial)
		return 0;
	free(ix->slots);
	ix->slots = NULL;
	ix->cap = ix->n = 0;
	if (index_reserve(ix, cs->n) < 0)
		return -ENOMEM;
	for (size_t k = 0; k < cs->n; k++) {
		struct rs_chain *c = cs->chains[k];
		size_t len = strlen(c->name);
		uint64_t h = name_hash(c->name, len);
		size_t i = index_probe(ix, c->name, len, h);

		ix->slots[i].c = c;
		ix->slots[i].h = h;
		ix->n++;
	}
	ix->partial = false;
	return 0;
}

/* A new chain record (name of len bytes, checked) in table t's array, which
 * has room for it. */
static struct rs_chain *chain_push(struct rs_chains *cs, enum rs_table t, const char *name,
				   size_t len, struct chain_block **pool)
{
	struct rs_chain *c;

	if (pool && (!*pool || (*pool)->used == CHAIN_BLOCK)) {
		struct chain_block *b = calloc(1, sizeof(*b));

		if (!b) {
			errno = ENOMEM;
			return NULL;
		}
		b->next = *pool;
		*pool = b;
	}
	c = pool ? &(*pool)->c[(*pool)->used++] : calloc(1, sizeof(*c));
	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	c->pooled = pool != NULL;
	memcpy(c->name, name, len + 1);
	c->table = (uint8_t)t;
	c->builtin = rs_chain_is_builtin(t, name);
	cs->chains[cs->n++] = c;
	cs->sorted = false;
	return c;
}

struct rs_chain *ruleset_add_chain(struct ruleset *rs, enum rs_table t, const char *name)
{
	struct rs_chains *cs = &rs->t[t];
	struct chain_index *ix = &priv(rs)->idx[t];
	struct rs_chain *c;
	size_t len = strnlen(name, RS_CHAIN_MAXLEN + 1), i;
	uint64_t h;

	if (len == 0 || len > RS_CHAIN_MAXLEN) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	if (index_complete(rs, t) < 0 || index_reserve(ix, ix->n + 1) < 0 ||
	    GROW(cs->chains, cs->cap, cs->n + 1) < 0) {
		errno = ENOMEM;
		return NULL;
	}
	h = name_hash(name, len);
	i = index_probe(ix, name, len, h);
	if (ix->slots[i].c) {
		errno = EEXIST;
		return NULL;
	}
	c = chain_push(cs, t, name, len, NULL);
	if (!c)
		return NULL;
	ix->slots[i].c = c;
	ix->slots[i].h = h;
	ix->n++;
	return c;
}

struct rs_chain *ruleset_add_chain_new(struct ruleset *rs, enum rs_table t, const char *name)
{
	struct rs_chains *cs = &rs->t[t];
	size_t len = strnlen(name, RS_CHAIN_MAXLEN + 1);
	struct rs_chain *c;

	if (len == 0 || len > RS_CHAIN_MAXLEN) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	if (GROW(cs->chains, cs->cap, cs->n + 1) < 0) {
		errno = ENOMEM;
		return NULL;
	}
	c = chain_push(cs, t, name, len, &priv(rs)->blocks);
	if (c)
		priv(rs)->idx[t].partial = true;
	return c;
}

int ruleset_reserve(struct ruleset *rs, enum rs_table t, size_t n, bool indexed)
{
	struct rs_chains *cs = &rs->t[t];
	struct chain_index *ix = &priv(rs)->idx[t];

	if (n > SIZE_MAX - cs->n || (indexed && !ix->partial && index_reserve(ix, cs->n + n) < 0) ||
	    GROW(cs->chains, cs->cap, cs->n + n) < 0)
		return -ENOMEM;
	return 0;
}

struct rs_chain *ruleset_find_chain(const struct ruleset *rs, enum rs_table t, const char *name)
{
	const struct rs_chains *cs = &rs->t[t];

	if (!priv(rs)->idx[t].partial)
		return index_find(&priv(rs)->idx[t], name);
	for (size_t i = 0; i < cs->n; i++)
		if (streq(cs->chains[i]->name, name))
			return cs->chains[i];
	return NULL;
}

struct rs_chain *ruleset_get_chain(struct ruleset *rs, enum rs_table t, const char *name)
{
	struct rs_chain *c;

	/* A failure leaves the walk, and the add fails alike. */
	(void)index_complete(rs, t);
	c = ruleset_find_chain(rs, t, name);

	return c ? c : ruleset_add_chain(rs, t, name);
}

static int chain_cmp(const void *a, const void *b)
{
	const struct rs_chain *ca = *(struct rs_chain *const *)a;
	const struct rs_chain *cb = *(struct rs_chain *const *)b;
	int ra, rb;

	/* Most chains are user chains: skip the built-in lookup for them. */
	if (!ca->builtin && !cb->builtin)
		return strcmp(ca->name, cb->name);
	ra = builtin_rank((enum rs_table)ca->table, ca->name);
	rb = builtin_rank((enum rs_table)cb->table, cb->name);
	if (ra >= 0 || rb >= 0) {
		if (ra < 0)
			return 1;
		if (rb < 0)
			return -1;
		return ra - rb;
	}
	return strcmp(ca->name, cb->name);
}

/* First position in a[0..n) whose chain sorts after c. */
static size_t upper_bound(struct rs_chain *const *a, size_t n, const struct rs_chain *c)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (chain_cmp(&a[mid], &c) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Merge the sorted tail a[n..n+k) into the sorted a[0..n), from the back;
 * tmp holds k.  Each tail chain finds its place by binary search. */
static void merge_tail(struct rs_chain **a, size_t n, size_t k, struct rs_chain **tmp)
{
	size_t hi = n, w = n + k;

	memcpy(tmp, a + n, k * sizeof(*tmp));
	for (size_t j = k; j-- > 0;) {
		size_t pos = upper_bound(a, hi, tmp[j]);

		memmove(a + w - (hi - pos), a + pos, (hi - pos) * sizeof(*a));
		w -= hi - pos;
		hi = pos;
		a[--w] = tmp[j];
	}
}

/*
 * Sorting user chains by name.  Comparing through the chain pointers was
 * a cache miss per comparison at 100,000 chains (and strcmp() past the
 * common "KUBE-" prefix): the chains are sorted as keys instead, the 16
 * name bytes after the prefix every name of the range shares, in an
 * array of their own, the names compared only when those are equal.
 */
struct sort_key {
	uint64_t w[2]; /* big endian: compares as the bytes do */
	struct rs_chain *c;
};

static uint64_t be_word(const char *p)
{
	uint64_t w = 0;

	for (int i = 0; i < 8; i++)
		w = w << 8 | (unsigned char)p[i];
	return w;
}

static int key_cmp(const struct sort_key *a, const struct sort_key *b)
{
	for (int i = 0; i < 2; i++)
		if (a->w[i] != b->w[i])
			return a->w[i] < b->w[i] ? -1 : 1;
	return strcmp(a->c->name, b->c->name);
}

static void key_swap(struct sort_key *a, struct sort_key *b)
{
	struct sort_key t = *a;

	*a = *b;
	*b = t;
}

/* Quicksort, median of three; the smaller side first keeps the stack
 * at log n; insertion sort below 16. */
static void key_sort(struct sort_key *k, size_t n)
{
	while (n >= 16) {
		size_t m = n / 2, i = 0, j = n - 1;
		struct sort_key pivot;

		if (key_cmp(&k[m], &k[0]) < 0)
			key_swap(&k[m], &k[0]);
		if (key_cmp(&k[n - 1], &k[m]) < 0) {
			key_swap(&k[n - 1], &k[m]);
			if (key_cmp(&k[m], &k[0]) < 0)
				key_swap(&k[m], &k[0]);
		}
		pivot = k[m];
		for (;;) {
			while (key_cmp(&k[i], &pivot) < 0)
				i++;
			while (key_cmp(&pivot, &k[j]) < 0)
				j--;
			if (i >= j)
				break;
			key_swap(&k[i++], &k[j--]);
		}
		/* k[0..j] <= pivot <= k[j+1..n) */
		if (j + 1 < n - j - 1) {
			key_sort(k, j + 1);
			k += j + 1;
			n -= j + 1;
		} else {
			key_sort(k + j + 1, n - j - 1);
			n = j + 1;
		}
	}
	for (size_t i = 1; i < n; i++) {
		struct sort_key t = k[i];
		size_t j = i;

		for (; j > 0 && key_cmp(&t, &k[j - 1]) < 0; j--)
			k[j] = k[j - 1];
		k[j] = t;
	}
}

/* Whether a[0..n) is in chain_cmp()'s order already. */
static bool in_order(struct rs_chain *const *a, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (chain_cmp(&a[i - 1], &a[i]) > 0)
			return false;
	return true;
}

/* a[0..n) into chain_cmp()'s order: built-in chains first (few, by
 * qsort), then the user chains by key_sort(). */
static void chains_sort(struct rs_chain **a, size_t n)
{
	struct sort_key *k;
	size_t nb = 0, pre = RS_CHAIN_MAXLEN;

	if (in_order(a, n))
		return;
	for (size_t i = 0; i < n; i++)
		if (a[i]->builtin) {
			struct rs_chain *t = a[nb];

			a[nb++] = a[i];
			a[i] = t;
		}
	qsort_safe(a, nb, sizeof(*a), chain_cmp);
	a += nb;
	n -= nb;
	k = n > 1 ? malloc(n * sizeof(*k)) : NULL;
	if (!k) {
		qsort_safe(a, n, sizeof(*a), chain_cmp);
		return;
	}
	/* The prefix every name shares (names are NUL padded to the end of
	 * their array: the words never read past it). */
	for (size_t i = 1; i < n && pre; i++)
		while (pre && memcmp(a[0]->name, a[i]->name, pre) != 0)
			pre--;
	if (pre > sizeof(a[0]->name) - 16)
		pre = sizeof(a[0]->name) - 16;
	for (size_t i = 0; i < n; i++) {
		k[i].w[0] = be_word(a[i]->name + pre);
		k[i].w[1] = be_word(a[i]->name + pre + 8);
		k[i].c = a[i];
	}
	key_sort(k, n);
	for (size_t i = 0; i < n; i++)
		a[i] = k[i].c;
	free(k);
}

void ruleset_sort(struct ruleset *rs)
{
	size_t t;

	for (t = 0; t < RS_NTABLES; t++) {
		struct rs_chains *cs = &rs->t[t];
		size_t k = cs->n - cs->n_sorted;
		struct rs_chain **tmp;

		if (cs->sorted || !k) {
			cs->sorted = true;
			cs->n_sorted = cs->n;
			continue;
		}
		chains_sort(cs->chains + cs->n_sorted, k);
		/* Without room for the merge, or with a large tail: sort all. */
		tmp = cs->n_sorted && k < cs->n_sorted ? malloc(k * sizeof(*tmp)) : NULL;
		if (tmp)
			merge_tail(cs->chains, cs->n_sorted, k, tmp);
		else if (cs->n_sorted)
			chains_sort(cs->chains, cs->n);
		free(tmp);
		cs->sorted = true;
		cs->n_sorted = cs->n;
	}
}

int ruleset_move_chain(struct ruleset *dst, struct ruleset *src, struct rs_chain *c)
{
	enum rs_table t = (enum rs_table)c->table;
	struct rs_chains *from = &src->t[t], *to = &dst->t[t];
	size_t pos = from->n;

	if (index_complete(src, t) < 0 || index_complete(dst, t) < 0)
		return -ENOMEM;
	if (ruleset_find_chain(src, t, c->name) != c)
		return -ENOENT;
	if (ruleset_find_chain(dst, t, c->name))
		return -EEXIST;
	if (GROW(to->chains, to->cap, to->n + 1) < 0 || index_insert(&priv(dst)->idx[t], c) < 0)
		return -ENOMEM;
	if (from->n_sorted) {
		size_t u = upper_bound(from->chains, from->n_sorted, c);

		if (u && from->chains[u - 1] == c)
			pos = u - 1;
	}
	for (size_t i = from->n_sorted; pos == from->n && i < from->n; i++)
		if (from->chains[i] == c)
			pos = i;
	memmove(from->chains + pos, from->chains + pos + 1,
		(from->n - pos - 1) * sizeof(*from->chains));
	from->n--;
	if (pos < from->n_sorted)
		from->n_sorted--;
	index_remove(&priv(src)->idx[t], c);
	to->chains[to->n++] = c;
	to->sorted = false;
	return 0;
}

struct rs_rule *rs_chain_append(struct rs_chain *c)
{
	struct rs_rule *r;

	if (GROW(c->rules, c->cap_rules, c->n_rules + 1) < 0)
		return NULL;
	r = &c->rules[c->n_rules++];
	memset(r, 0, sizeof(*r));
	return r;
}

struct rs_match *rs_rule_add_match(struct rs_rule *r, enum rs_match_kind kind)
{
	struct rs_match *m;

	if (r->n_matches >= RS_MAX_MATCHES)
		return NULL;
	m = &r->m[r->n_matches++];
	memset(m, 0, sizeof(*m));
	m->kind = (uint8_t)kind;
	return m;
}

static bool net_equal(const struct ipnet *a, const struct ipnet *b)
{
	if (a->addr.family != b->addr.family)
		return false;
	if (!a->addr.family)
		return true;
	return a->plen == b->plen && ipaddr_cmp(&a->addr, &b->addr) == 0;
}

static bool match_equal(const struct rs_match *a, const struct rs_match *b)
{
	if (a->kind != b->kind || a->invert != b->invert)
		return false;
	switch (a->kind) {
	case RS_M_COMMENT:
		return streq_null(a->u.comment, b->u.comment);
	case RS_M_PORT:
		return a->u.port.dport == b->u.port.dport &&
		       a->u.port.dport_max == b->u.port.dport_max;
	case RS_M_ADDRTYPE:
		return a->u.addrtype.src == b->u.addrtype.src &&
		       a->u.addrtype.type == b->u.addrtype.type;
	case RS_M_MARK:
		return a->u.mark.value == b->u.mark.value && a->u.mark.mask == b->u.mark.mask;
	case RS_M_CONNTRACK:
		return a->u.ct.states == b->u.ct.states;
	case RS_M_STATISTIC:
		/* Equal as the kernel stores them (u32 fixed point). */
		return (uint32_t)(a->u.stat.probability * 2147483648.0 + 0.5) ==
		       (uint32_t)(b->u.stat.probability * 2147483648.0 + 0.5);
	case RS_M_RECENT:
		return streq_null(a->u.recent.name, b->u.recent.name) &&
		       a->u.recent.set == b->u.recent.set &&
		       a->u.recent.update == b->u.recent.update &&
		       a->u.recent.reap == b->u.recent.reap &&
		       a->u.recent.seconds == b->u.recent.seconds &&
		       a->u.recent.ipv6 == b->u.recent.ipv6;
	case RS_M_NFACCT:
		return streq_null(a->u.nfacct.name, b->u.nfacct.name);
	default:
		return false;
	}
}

static bool target_equal(const struct rs_target *a, const struct rs_target *b)
{
	if (a->kind != b->kind)
		return false;
	switch (a->kind) {
	case RS_T_JUMP:
	case RS_T_GOTO:
		return streq_null(a->u.chain, b->u.chain);
	case RS_T_DNAT:
		return a->u.dnat.port == b->u.dnat.port &&
		       ipaddr_cmp(&a->u.dnat.addr, &b->u.dnat.addr) == 0;
	case RS_T_MARK:
		return a->u.mark.op == b->u.mark.op && a->u.mark.value == b->u.mark.value &&
		       a->u.mark.mask == b->u.mark.mask;
	case RS_T_MASQUERADE:
		return a->u.masq.random_fully == b->u.masq.random_fully;
	case RS_T_REJECT:
		return a->u.reject.icmp6 == b->u.reject.icmp6;
	default:
		return true;
	}
}

/* The length of a -i name, without the "+" a prefix may carry. */
static size_t iface_len(const char *name, bool prefix)
{
	size_t n = strlen(name);

	return prefix && n && name[n - 1] == '+' ? n - 1 : n;
}

bool rs_rule_equal(const struct rs_rule *a, const struct rs_rule *b)
{
	size_t i;

	if (!!a->in_iface != !!b->in_iface ||
	    (a->in_iface && (a->in_iface_prefix != b->in_iface_prefix ||
			     a->in_iface_inv != b->in_iface_inv ||
			     iface_len(a->in_iface, a->in_iface_prefix) !=
				     iface_len(b->in_iface, b->in_iface_prefix) ||
			     memcmp(a->in_iface, b->in_iface,
				    iface_len(a->in_iface, a->in_iface_prefix)))))
		return false;
	if (a->proto != b->proto || a->src_inv != b->src_inv || a->dst_inv != b->dst_inv ||
	    a->n_matches != b->n_matches || !net_equal(&a->src, &b->src) ||
	    !net_equal(&a->dst, &b->dst) || !target_equal(&a->t, &b->t))
		return false;
	for (i = 0; i < a->n_matches; i++)
		if (!match_equal(&a->m[i], &b->m[i]))
			return false;
	return true;
}

bool rs_chain_equal(const struct rs_chain *a, const struct rs_chain *b)
{
	size_t i;

	if (a->table != b->table || a->n_rules != b->n_rules || !streq(a->name, b->name))
		return false;
	for (i = 0; i < a->n_rules; i++)
		if (!rs_rule_equal(&a->rules[i], &b->rules[i]))
			return false;
	return true;
}

size_t ruleset_count_rules(const struct ruleset *rs)
{
	size_t t, i, n = 0;

	for (t = 0; t < RS_NTABLES; t++)
		for (i = 0; i < rs->t[t].n; i++)
			n += rs->t[t].chains[i]->n_rules;
	return n;
}

size_t ruleset_count_chains(const struct ruleset *rs)
{
	size_t t, i, n = 0;

	for (t = 0; t < RS_NTABLES; t++)
		for (i = 0; i < rs->t[t].n; i++)
			if (!rs->t[t].chains[i]->builtin)
				n++;
	return n;
}

static int copy_str(struct ruleset *rs, const char **s)
{
	if (!*s)
		return 0;
	*s = ruleset_strdup(rs, *s);
	return *s ? 0 : -ENOMEM;
}

/* r's strings copied into rs's arena: 0 or -ENOMEM. */
static int copy_rule_strs(struct ruleset *rs, struct rs_rule *r)
{
	for (size_t j = 0; j < r->n_matches; j++) {
		struct rs_match *m = &r->m[j];

		if ((m->kind == RS_M_COMMENT && copy_str(rs, &m->u.comment) < 0) ||
		    (m->kind == RS_M_RECENT && copy_str(rs, &m->u.recent.name) < 0) ||
		    (m->kind == RS_M_NFACCT && copy_str(rs, &m->u.nfacct.name) < 0))
			return -ENOMEM;
	}
	if ((r->t.kind == RS_T_JUMP || r->t.kind == RS_T_GOTO) && copy_str(rs, &r->t.u.chain) < 0)
		return -ENOMEM;
	return copy_str(rs, &r->in_iface);
}

struct rs_chain *ruleset_copy_chain(struct ruleset *rs, const struct rs_chain *c)
{
	struct rs_chain *n = ruleset_add_chain(rs, (enum rs_table)c->table, c->name);

	if (!n)
		return NULL;
	n->stamp = c->stamp;
	if (c->n_rules) {
		n->rules = malloc(c->n_rules * sizeof(*n->rules));
		if (!n->rules) {
			errno = ENOMEM;
			return NULL;
		}
		memcpy(n->rules, c->rules, c->n_rules * sizeof(*n->rules));
		n->n_rules = n->cap_rules = c->n_rules;
	}
	for (size_t i = 0; i < n->n_rules; i++) {
		if (copy_rule_strs(rs, &n->rules[i]) < 0) {
			errno = ENOMEM;
			return NULL;
		}
	}
	return n;
}
