/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "sources/net/base64.h"

static const char b64_alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *base64_encode(const void *data, size_t len)
{
	const unsigned char *p = data;
	size_t out_len, o = 0;
	char *s;

	if (len > (SIZE_MAX - 1) / 4 * 3 - 3)
		return NULL;
	out_len = (len + 2) / 3 * 4;
	s = malloc(out_len + 1);
	if (!s)
		return NULL;
	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;

		if (i + 1 < len)
			v |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < len)
			v |= p[i + 2];
		s[o++] = b64_alphabet[(v >> 18) & 63];
		s[o++] = b64_alphabet[(v >> 12) & 63];
		s[o++] = i + 1 < len ? b64_alphabet[(v >> 6) & 63] : '=';
		s[o++] = i + 2 < len ? b64_alphabet[v & 63] : '=';
	}
	s[o] = '\0';
	return s;
}

static int b64_value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

int base64_decode(const char *s, size_t n, char **ret, size_t *ret_len)
{
	size_t pad = 0, o = 0, full;
	uint32_t acc = 0;
	unsigned bits = 0;
	char *out;

	while (pad < 2 && n > 0 && s[n - 1] == '=') {
		n--;
		pad++;
	}
	/* Padding, when present, must complete the last quantum. */
	if (pad && (n + pad) % 4 != 0)
		return -EINVAL;
	if (n % 4 == 1)
		return -EINVAL;
	full = n / 4 * 3 + (n % 4 ? n % 4 - 1 : 0);
	out = malloc(full + 1);
	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		int v = b64_value(s[i]);

		if (v < 0) {
			free(out);
			return -EINVAL;
		}
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (char)((acc >> bits) & 0xff);
		}
	}
	/* Leftover bits of a canonical encoding are zero. */
	if (acc & ((1u << bits) - 1)) {
		free(out);
		return -EINVAL;
	}
	out[o] = '\0';
	*ret = out;
	*ret_len = o;
	return 0;
}
