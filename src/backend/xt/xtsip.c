/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <endian.h>
#include <string.h>

#include "backend/xt/xtsip.h"

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

#define SIPROUND(v0, v1, v2, v3)                                                      \
	do {                                                                          \
		v0 += v1;                                                             \
		v1 = ROTL(v1, 13);                                                    \
		v1 ^= v0;                                                             \
		v0 = ROTL(v0, 32);                                                    \
		v2 += v3;                                                             \
		v3 = ROTL(v3, 16);                                                    \
		v3 ^= v2;                                                             \
		v0 += v3;                                                             \
		v3 = ROTL(v3, 21);                                                    \
		v3 ^= v0;                                                             \
		v2 += v1;                                                             \
		v1 = ROTL(v1, 17);                                                    \
		v1 ^= v2;                                                             \
		v2 = ROTL(v2, 32);                                                    \
	} while (0)

static void rounds(struct xt_sip *s, int n)
{
	for (int i = 0; i < n; i++)
		SIPROUND(s->v0, s->v1, s->v2, s->v3);
}

static void word(struct xt_sip *s, uint64_t m)
{
	s->v3 ^= m;
	rounds(s, 2);
	s->v0 ^= m;
}

static uint64_t le64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

void xt_sip_init(struct xt_sip *s, const uint8_t key[16])
{
	uint64_t k0 = le64(key), k1 = le64(key + 8);

	*s = (struct xt_sip){ .v0 = 0x736f6d6570736575ULL ^ k0, .v1 = 0x646f72616e646f6dULL ^ k1,
			      .v2 = 0x6c7967656e657261ULL ^ k0, .v3 = 0x7465646279746573ULL ^ k1 };
	s->v1 ^= 0xee; /* the 128-bit output */
}

void xt_sip_update(struct xt_sip *s, const void *p, size_t n)
{
	const unsigned char *b = p;

	s->len += n;
	while (s->ntail && n) {
		s->tail |= (uint64_t)*b++ << (8 * s->ntail);
		n--;
		if (++s->ntail == 8) {
			word(s, s->tail);
			s->tail = 0;
			s->ntail = 0;
		}
	}
	if (n >= 8) {
		/* the state in registers over the whole words */
		uint64_t v0 = s->v0, v1 = s->v1, v2 = s->v2, v3 = s->v3;

		for (; n >= 8; b += 8, n -= 8) {
			uint64_t m = le64(b);

			v3 ^= m;
			SIPROUND(v0, v1, v2, v3);
			SIPROUND(v0, v1, v2, v3);
			v0 ^= m;
		}
		s->v0 = v0;
		s->v1 = v1;
		s->v2 = v2;
		s->v3 = v3;
	}
	for (; n; n--)
		s->tail |= (uint64_t)*b++ << (8 * s->ntail++);
}

static void put64(uint8_t *out, uint64_t v)
{
	v = htole64(v);
	memcpy(out, &v, sizeof(v));
}

void xt_sip_final(struct xt_sip *s, uint8_t out[16])
{
	word(s, s->tail | s->len << 56);
	s->v2 ^= 0xee;
	rounds(s, 4);
	put64(out, s->v0 ^ s->v1 ^ s->v2 ^ s->v3);
	s->v1 ^= 0xdd;
	rounds(s, 4);
	put64(out + 8, s->v0 ^ s->v1 ^ s->v2 ^ s->v3);
}
