/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core/duration.h"
#include "util.h"

#define NS_MAX INT64_MAX

static const struct {
	const char *name;
	uint64_t ns;
} units[] = {
	{ "ns", 1ULL },
	{ "us", 1000ULL },
	{ "\xc2\xb5s", 1000ULL }, /* U+00B5 micro sign */
	{ "\xce\xbcs", 1000ULL }, /* U+03BC Greek mu */
	{ "ms", 1000000ULL },
	{ "s", 1000000000ULL },
	{ "m", 60ULL * 1000000000ULL },
	{ "h", 3600ULL * 1000000000ULL },
};

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

int duration_parse(const char *s, uint64_t *ret_usec)
{
	uint64_t total = 0;

	if (!s)
		return -EINVAL;
	if (*s == '+')
		s++;
	else if (*s == '-')
		return -EINVAL;
	if (*s == '\0')
		return -EINVAL;
	/* Go accepts a bare "0" with no unit, and nothing else without one. */
	if (streq(s, "0")) {
		*ret_usec = 0;
		return 0;
	}
	while (*s) {
		uint64_t whole = 0, frac = 0, scale = 1, unit = 0, v;
		bool pre = false, post = false, overflow = false;
		size_t ulen = 0, i;

		while (is_digit(*s)) {
			if (whole > (NS_MAX - 9) / 10)
				return -ERANGE;
			whole = whole * 10 + (uint64_t)(*s - '0');
			pre = true;
			s++;
		}
		if (*s == '.') {
			s++;
			while (is_digit(*s)) {
				post = true;
				/* Digits past ns precision cannot matter: drop them. */
				if (!overflow && scale <= NS_MAX / 10) {
					frac = frac * 10 + (uint64_t)(*s - '0');
					scale *= 10;
				} else {
					overflow = true;
				}
				s++;
			}
		}
		if (!pre && !post)
			return -EINVAL;
		while (s[ulen] && s[ulen] != '.' && !is_digit(s[ulen]))
			ulen++;
		if (ulen == 0)
			return -EINVAL;
		for (i = 0; i < ARRAY_SIZE(units); i++) {
			if (strlen(units[i].name) == ulen && strncmp(s, units[i].name, ulen) == 0) {
				unit = units[i].ns;
				break;
			}
		}
		if (!unit)
			return -EINVAL;
		s += ulen;
		if (whole > NS_MAX / unit)
			return -ERANGE;
		v = whole * unit;
		if (frac) {
			/* frac / scale * unit, without overflowing: scale <= 1e18. */
			long double f = (long double)frac * (long double)unit / (long double)scale;

			if (f > (long double)(NS_MAX - v))
				return -ERANGE;
			v += (uint64_t)f;
		}
		if (v > NS_MAX - total)
			return -ERANGE;
		total += v;
	}
	*ret_usec = total / 1000ULL;
	return 0;
}

/* Append "<int>[.<frac>]" of v in units of `div`, trailing zeros trimmed. */
static size_t fmt_frac(char *p, size_t len, uint64_t v, uint64_t div, int digits)
{
	uint64_t ip = v / div, fp = v % div;
	char fbuf[24];
	int n;

	if (fp == 0)
		return (size_t)snprintf(p, len, "%llu", (unsigned long long)ip);
	snprintf(fbuf, sizeof(fbuf), "%0*llu", digits, (unsigned long long)fp);
	n = (int)strlen(fbuf);
	while (n > 0 && fbuf[n - 1] == '0')
		fbuf[--n] = '\0';
	return (size_t)snprintf(p, len, "%llu.%s", (unsigned long long)ip, fbuf);
}

const char *duration_fmt(uint64_t usec, char *buf, size_t len)
{
	uint64_t sec = usec / 1000000ULL, us = usec % 1000000ULL;
	size_t off = 0;

	if (!len)
		return buf;
	if (usec == 0) {
		snprintf(buf, len, "0s");
		return buf;
	}
	if (usec < 1000ULL) {
		snprintf(buf, len, "%lluµs", (unsigned long long)usec);
		return buf;
	}
	if (usec < 1000000ULL) {
		off = fmt_frac(buf, len, usec, 1000ULL, 3);
		if (off < len)
			snprintf(buf + off, len - off, "ms");
		return buf;
	}
	if (sec >= 3600) {
		off += (size_t)snprintf(buf + off, len - off, "%lluh", (unsigned long long)(sec / 3600));
		sec %= 3600;
	}
	if (off < len && (off || sec >= 60)) {
		off += (size_t)snprintf(buf + off, len - off, "%llum", (unsigned long long)(sec / 60));
		sec %= 60;
	}
	if (off < len) {
		off += fmt_frac(buf + off, len - off, sec * 1000000ULL + us, 1000000ULL, 6);
		if (off < len)
			snprintf(buf + off, len - off, "s");
	}
	return buf;
}
