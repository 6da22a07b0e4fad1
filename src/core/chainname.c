/* SPDX-License-Identifier: GPL-2.0-or-later */
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

struct chain_hasher {
	EVP_MD *md;
	EVP_MD_CTX *ctx;
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

void chain_hasher_free(struct chain_hasher *h)
{
	if (!h)
		return;
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
	hash_with(h->ctx, h->md, svc_port_name, proto, endpoint, out);
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
