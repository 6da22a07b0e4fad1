/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdio.h>
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

void chain_hash(const char *svc_port_name, const char *proto, const char *endpoint,
		char out[CHAIN_HASH_LEN + 1])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	EVP_MD_CTX *ctx;
	bool ok;

	out[0] = '\0';
	ctx = EVP_MD_CTX_new();
	if (!ctx)
		return;
	ok = EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1 &&
	     EVP_DigestUpdate(ctx, svc_port_name, strlen(svc_port_name)) == 1 &&
	     EVP_DigestUpdate(ctx, proto, strlen(proto)) == 1 &&
	     (!endpoint || EVP_DigestUpdate(ctx, endpoint, strlen(endpoint)) == 1) &&
	     EVP_DigestFinal_ex(ctx, md, &mdlen) == 1 && mdlen >= 10;
	EVP_MD_CTX_free(ctx);
	if (ok)
		b32_first16(md, out);
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
