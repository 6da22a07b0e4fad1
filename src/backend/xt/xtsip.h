/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * SipHash-2-4 with its 128-bit output (Aumasson and Bernstein, the
 * reference implementation's outlen 16), fed in pieces: the digest of the
 * pieces is that of their concatenation.
 */
#ifndef SVCNAT_BACKEND_XTSIP_H
#define SVCNAT_BACKEND_XTSIP_H

#include <stddef.h>
#include <stdint.h>

struct xt_sip {
	uint64_t v0, v1, v2, v3;
	uint64_t tail;  /* the bytes not yet in a word, little-endian */
	unsigned ntail; /* 0..7 */
	uint64_t len;   /* bytes fed so far */
};

/* Start with the 16-byte key (k0 then k1, little-endian as the reference). */
void xt_sip_init(struct xt_sip *s, const uint8_t key[16]);
void xt_sip_update(struct xt_sip *s, const void *p, size_t n);
/* The 16 bytes of the digest; s is spent afterwards. */
void xt_sip_final(struct xt_sip *s, uint8_t out[16]);

#endif
