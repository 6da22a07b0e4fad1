/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "sources/net/framer.h"
#include "util.h"

void framer_init(struct framer *f, size_t max)
{
	*f = (struct framer){ .max = max ? max : FRAMER_MAX_DEFAULT };
}

void framer_reset(struct framer *f)
{
	f->len = 0;
}

void framer_done(struct framer *f)
{
	free(f->buf);
	framer_init(f, f->max);
}

static bool blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			return false;
	return true;
}

static int framer_append(struct framer *f, const char *data, size_t n)
{
	if (n > f->max || f->len > f->max - n)
		return -EFBIG;
	if (GROW(f->buf, f->cap, f->len + n) < 0)
		return -ENOMEM;
	memcpy(f->buf + f->len, data, n);
	f->len += n;
	return 0;
}

int framer_feed(struct framer *f, const char *data, size_t n, framer_line_fn fn, void *userdata)
{
	while (n > 0) {
		const char *nl = memchr(data, '\n', n);
		size_t take = nl ? (size_t)(nl - data) : n;
		int r;

		if (!nl)
			return framer_append(f, data, n);
		if (f->len == 0) {
			/* Whole line in this chunk: hand it out without copying. */
			if (take > f->max)
				return -EFBIG;
			if (!blank(data, take)) {
				r = fn(data, take, userdata);
				if (r < 0)
					return r;
			}
		} else {
			size_t l;

			r = framer_append(f, data, take);
			if (r < 0)
				return r;
			l = f->len;
			f->len = 0;
			if (!blank(f->buf, l)) {
				r = fn(f->buf, l, userdata);
				if (r < 0)
					return r;
			}
		}
		data += take + 1;
		n -= take + 1;
	}
	return 0;
}
