/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "core/chainname.h"

static const char b32_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/*
 * 16 base32 characters carry 80 bits, so only the first 10 bytes of the
 * digest matter; base32 of the whole digest starts with the same 16
 * characters (each 5-byte group encodes to 8 characters on its own).
 */
static void b32_first16(const unsigned char *d, char out[CHAIN_HASH_LEN + 1])
{
	size_t o = 0;

	for (size_t g = 0; g < 2; g++) {
		const unsigned char *p = d + 5 * g;
		uint64_t v = ((uint64_t)p[0] << 32) | ((uint64_t)p[1] << 24) |
			     ((uint64_t)p[2] << 16) | ((uint64_t)p[3] << 8) | p[4];

		for (int i = 7; i >= 0; i--)
			out[o++] = b32_alphabet[(v >> (5 * i)) & 31];
	}
	out[o] = '\0';
}

struct memo_entry {
	char *key;           /* svc_port_name NUL proto NUL [endpoint]; NULL = empty slot */
	size_t klen;
	uint64_t hash;
	bool used;           /* hashed since the last sweep */
	char out[CHAIN_HASH_LEN + 1];
};

struct chain_hasher {
	EVP_MD *md;
	EVP_MD_CTX *ctx;
	bool memo;
	struct memo_entry *tab; /* open addressing, linear probing */
	size_t cap, n;          /* cap: 0 or a power of two */
};

struct chain_hasher *chain_hasher_new(void)
{
	struct chain_hasher *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->md = EVP_MD_fetch(NULL, "SHA256", NULL);
	h->ctx = EVP_MD_CTX_new();
	if (!h->md || !h->ctx) {
		chain_hasher_free(h);
		return NULL;
	}
	return h;
}

struct chain_hasher *chain_hasher_new_memo(void)
{
	struct chain_hasher *h = chain_hasher_new();

	if (h)
		h->memo = true;
	return h;
}

static void memo_free(struct memo_entry *tab, size_t cap)
{
	for (size_t i = 0; i < cap; i++)
		free(tab[i].key);
	free(tab);
}

/* Put e (its key taken over) into tab; the caller made room. */
static void memo_place(struct memo_entry *tab, size_t cap, const struct memo_entry *e)
{
	size_t i = (size_t)e->hash & (cap - 1);

	while (tab[i].key)
		i = (i + 1) & (cap - 1);
	tab[i] = *e;
}

/* A table of cap slots holding h's entries (used ones only if only_used). */
static int memo_rebuild(struct chain_hasher *h, size_t cap, bool only_used)
{
	struct memo_entry *tab = calloc(cap, sizeof(*tab));
	size_t n = 0;

	if (!tab)
		return -ENOMEM;
	for (size_t i = 0; i < h->cap; i++) {
		struct memo_entry *e = &h->tab[i];

		if (!e->key)
			continue;
		if (only_used && !e->used) {
			free(e->key);
			continue;
		}
		if (only_used)
			e->used = false; /* a new round */
		memo_place(tab, cap, e);
		n++;
	}
	free(h->tab);
	h->tab = tab;
	h->cap = cap;
	h->n = n;
	return 0;
}

void chain_hasher_sweep(struct chain_hasher *h)
{
	size_t live = 0, cap = 16;

	if (!h || !h->memo || !h->cap)
		return;
	for (size_t i = 0; i < h->cap; i++)
		live += h->tab[i].key && h->tab[i].used;
	while (cap < live * 2)
		cap *= 2;
	if (memo_rebuild(h, cap, true) < 0) {
		/* Cannot shrink: drop everything rather than keep stale names forever. */
		memo_free(h->tab, h->cap);
		h->tab = NULL;
		h->cap = h->n = 0;
	}
}

size_t chain_hasher_remembered(const struct chain_hasher *h)
{
	return h ? h->n : 0;
}

void chain_hasher_free(struct chain_hasher *h)
{
	if (!h)
		return;
	memo_free(h->tab, h->cap);
	EVP_MD_CTX_free(h->ctx);
	EVP_MD_free(h->md);
	free(h);
}

static void hash_with(EVP_MD_CTX *ctx, const EVP_MD *md, const char *svc_port_name,
		      const char *proto, const char *endpoint, char out[CHAIN_HASH_LEN + 1])
{
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned int dlen = 0;

	out[0] = '\0';
	if (EVP_DigestInit_ex(ctx, md, NULL) == 1 &&
	    EVP_DigestUpdate(ctx, svc_port_name, strlen(svc_port_name)) == 1 &&
	    EVP_DigestUpdate(ctx, proto, strlen(proto)) == 1 &&
	    (!endpoint || EVP_DigestUpdate(ctx, endpoint, strlen(endpoint)) == 1) &&
	    EVP_DigestFinal_ex(ctx, d, &dlen) == 1 && dlen >= 10)
		b32_first16(d, out);
}

void chain_hasher_hash(struct chain_hasher *h, const char *svc_port_name, const char *proto,
		       const char *endpoint, char out[CHAIN_HASH_LEN + 1])
{
	size_t a = strlen(svc_port_name), b = strlen(proto), c = endpoint ? strlen(endpoint) : 0;
	struct memo_entry e = { 0 };
	char buf[512];
	size_t i;

	if (!h->memo) {
		hash_with(h->ctx, h->md, svc_port_name, proto, endpoint, out);
		return;
	}
	/* The key: both NULs keep ("a", "bc") apart from ("ab", "c"); a
	 * third byte tells endpoint NULL from "". */
	e.klen = a + b + c + 3;
	e.key = e.klen <= sizeof(buf) ? buf : malloc(e.klen);
	if (!e.key) {
		hash_with(h->ctx, h->md, svc_port_name, proto, endpoint, out);
		return;
	}
	memcpy(e.key, svc_port_name, a + 1);
	memcpy(e.key + a + 1, proto, b + 1);
	e.key[a + b + 2] = endpoint ? 'e' : '-';
	if (c)
		memcpy(e.key + a + b + 3, endpoint, c);
	e.hash = 0xcbf29ce484222325ULL;
	for (i = 0; i < e.klen; i++)
		e.hash = (e.hash ^ (unsigned char)e.key[i]) * 0x100000001b3ULL;
	for (i = h->cap ? (size_t)e.hash & (h->cap - 1) : 0; h->cap && h->tab[i].key;
	     i = (i + 1) & (h->cap - 1)) {
		struct memo_entry *m = &h->tab[i];

		if (m->hash == e.hash && m->klen == e.klen && memcmp(m->key, e.key, e.klen) == 0) {
			m->used = true;
			memcpy(out, m->out, CHAIN_HASH_LEN + 1);
			if (e.key != buf)
				free(e.key);
			return;
		}
	}
	hash_with(h->ctx, h->md, svc_port_name, proto, endpoint, out);
	/* Remember it (with room for it: at most 3/4 full). */
	if (out[0] && ((h->n + 1) * 4 <= h->cap * 3 ||
		       memo_rebuild(h, h->cap ? h->cap * 2 : 64, false) >= 0)) {
		char *key = e.key != buf ? e.key : malloc(e.klen);

		if (key) {
			if (key != e.key)
				memcpy(key, e.key, e.klen);
			e.key = key;
			e.used = true;
			memcpy(e.out, out, CHAIN_HASH_LEN + 1);
			memo_place(h->tab, h->cap, &e);
			h->n++;
			return;
		}
	}
	if (e.key != buf)
		free(e.key);
}

void chain_hash(const char *svc_port_name, const char *proto, const char *endpoint,
		char out[CHAIN_HASH_LEN + 1])
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();

	out[0] = '\0';
	if (!ctx)
		return;
	hash_with(ctx, EVP_sha256(), svc_port_name, proto, endpoint, out);
	EVP_MD_CTX_free(ctx);
}

void chain_name(const char *prefix, const char *svc_port_name, const char *proto,
		const char *endpoint, char out[RS_CHAIN_MAXLEN + 1])
{
	char h[CHAIN_HASH_LEN + 1];
	size_t pl = strlen(prefix);

	out[0] = '\0';
	chain_hash(svc_port_name, proto, endpoint, h);
	if (!h[0] || pl + CHAIN_HASH_LEN > RS_CHAIN_MAXLEN)
		return;
	memcpy(out, prefix, pl);
	memcpy(out + pl, h, CHAIN_HASH_LEN + 1);
}
