/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "sources/decode/decode.h"
#include "sources/decode/decodecache.h"
#include "util.h"

#define DIGEST_LEN 32 /* SHA-256 */

struct centry {
	uint64_t hash;     /* the digest's first 8 bytes: the table's hash */
	size_t len;
	unsigned char digest[DIGEST_LEN]; /* of the item's text */
	struct service **svcs;
	size_t n_svcs;
	struct epslice **eps;
	size_t n_eps;
	unsigned long gen; /* the decode that last took or added it */
	bool fresh;        /* added by the decode in progress */
};

struct decode_cache {
	struct centry **cur; /* the kept items: an open-addressing table */
	size_t cap;          /* 0 or a power of two */
	struct centry **next; /* the decode in progress's, in order */
	size_t n_next, cap_next;
	unsigned long gen;
	size_t hits;
	EVP_MD *md;
	EVP_MD_CTX *ctx;
};

/* The SHA-256 digest of [p, p + len); -ENOMEM when libcrypto fails. */
static int text_digest(struct decode_cache *c, const char *p, size_t len,
		       unsigned char out[DIGEST_LEN])
{
	unsigned int n = 0;

	if (!EVP_DigestInit_ex(c->ctx, c->md, NULL) || !EVP_DigestUpdate(c->ctx, p, len) ||
	    !EVP_DigestFinal_ex(c->ctx, out, &n) || n != DIGEST_LEN)
		return -ENOMEM;
	return 0;
}

static uint64_t digest_hash(const unsigned char d[DIGEST_LEN])
{
	uint64_t h;

	memcpy(&h, d, sizeof(h));
	return h;
}

static void centry_free(struct centry *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->n_svcs; i++)
		service_unref(e->svcs[i]);
	for (size_t i = 0; i < e->n_eps; i++)
		epslice_unref(e->eps[i]);
	free(e->svcs);
	free(e->eps);
	free(e);
}

int decode_cache_new(struct decode_cache **ret)
{
	struct decode_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->md = EVP_MD_fetch(NULL, "SHA256", NULL);
	c->ctx = EVP_MD_CTX_new();
	if (!c->md || !c->ctx) {
		decode_cache_free(c);
		return -ENOMEM;
	}
	*ret = c;
	return 0;
}

void decode_cache_abort(struct decode_cache *c)
{
	for (size_t i = 0; i < c->n_next; i++)
		if (c->next[i]->fresh)
			centry_free(c->next[i]);
	c->n_next = 0;
}

void decode_cache_free(struct decode_cache *c)
{
	if (!c)
		return;
	decode_cache_abort(c);
	for (size_t i = 0; i < c->cap; i++)
		centry_free(c->cur[i]);
	free(c->cur);
	free(c->next);
	EVP_MD_CTX_free(c->ctx);
	EVP_MD_free(c->md);
	free(c);
}

void decode_cache_begin(struct decode_cache *c)
{
	decode_cache_abort(c);
	c->gen++;
	c->hits = 0;
}

size_t decode_cache_hits(const struct decode_cache *c)
{
	return c->hits;
}

static struct centry *find(const struct decode_cache *c, size_t len,
			   const unsigned char d[DIGEST_LEN])
{
	size_t mask = c->cap - 1;
	uint64_t h = digest_hash(d);

	if (!c->cap)
		return NULL;
	for (size_t i = h & mask; c->cur[i]; i = (i + 1) & mask) {
		struct centry *e = c->cur[i];

		if (e->hash == h && e->len == len && memcmp(e->digest, d, DIGEST_LEN) == 0)
			return e;
	}
	return NULL;
}

static int append_next(struct decode_cache *c, struct centry *e)
{
	if (GROW(c->next, c->cap_next, c->n_next + 1) < 0)
		return -ENOMEM;
	c->next[c->n_next++] = e;
	return 0;
}

int decode_cache_take(struct decode_cache *c, const char *p, size_t len, struct decoded *out)
{
	unsigned char d[DIGEST_LEN];
	struct centry *e;

	if (text_digest(c, p, len, d) < 0)
		return -ENOMEM;
	e = find(c, len, d);

	/* The same text twice in one file: the second is decoded (and is a
	 * duplicate the decoder names). */
	if (!e || e->gen == c->gen)
		return 0;
	if (GROW(out->services, out->cap_services, out->n_services + e->n_svcs) < 0 ||
	    GROW(out->slices, out->cap_slices, out->n_slices + e->n_eps) < 0 ||
	    append_next(c, e) < 0)
		return -ENOMEM;
	e->gen = c->gen;
	for (size_t i = 0; i < e->n_svcs; i++)
		out->services[out->n_services++] = service_ref(e->svcs[i]);
	for (size_t i = 0; i < e->n_eps; i++)
		out->slices[out->n_slices++] = epslice_ref(e->eps[i]);
	c->hits++;
	return 1;
}

int decode_cache_add(struct decode_cache *c, const char *p, size_t len,
		     struct service *const *svcs, size_t n_svcs, struct epslice *const *eps,
		     size_t n_eps)
{
	struct centry *e = calloc(1, sizeof(*e));

	if (!e)
		return -ENOMEM;
	e->len = len;
	e->gen = c->gen;
	e->fresh = true;
	e->svcs = calloc(n_svcs ? n_svcs : 1, sizeof(*e->svcs));
	e->eps = calloc(n_eps ? n_eps : 1, sizeof(*e->eps));
	if (text_digest(c, p, len, e->digest) < 0 || !e->svcs || !e->eps ||
	    append_next(c, e) < 0) {
		centry_free(e);
		return -ENOMEM;
	}
	e->hash = digest_hash(e->digest);
	for (size_t i = 0; i < n_svcs; i++)
		e->svcs[e->n_svcs++] = service_ref(svcs[i]);
	for (size_t i = 0; i < n_eps; i++)
		e->eps[e->n_eps++] = epslice_ref(eps[i]);
	return 0;
}

void decode_cache_commit(struct decode_cache *c)
{
	size_t cap = 16, i;
	struct centry **t;

	while (cap < c->n_next * 2)
		cap *= 2;
	/* Without a table nothing is kept (the next decode decodes all). */
	t = calloc(cap, sizeof(*t));
	/* Kept items not taken this time go (without a table, all: the
	 * taken ones are among them). */
	for (i = 0; i < c->cap; i++)
		if (c->cur[i] && (!t || c->cur[i]->gen != c->gen))
			centry_free(c->cur[i]);
	for (i = 0; i < c->n_next; i++) {
		struct centry *e = c->next[i];
		size_t j;

		if (!t) {
			if (e->fresh)
				centry_free(e);
			continue;
		}
		e->fresh = false;
		for (j = e->hash & (cap - 1); t[j]; j = (j + 1) & (cap - 1))
			;
		t[j] = e;
	}
	free(c->cur);
	c->cur = t;
	c->cap = t ? cap : 0;
	c->n_next = 0;
}

const char *decode_cache_skip(const char *p, const char *end)
{
	size_t depth = 0;

	if (p >= end || (*p != '{' && *p != '['))
		return NULL;
	for (; p < end; p++) {
		switch (*p) {
		case '"':
			for (p++; p < end && *p != '"'; p++)
				if (*p == '\\')
					p++;
			if (p >= end)
				return NULL;
			break;
		case '{':
		case '[':
			depth++;
			break;
		case '}':
		case ']':
			if (--depth == 0)
				return p + 1;
			break;
		default:
			break;
		}
	}
	return NULL;
}
