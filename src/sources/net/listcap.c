/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "sources/net/listcap.h"

void listcap_begin(struct listcap *c, uint64_t now)
{
	c->pages = 0;
	c->bytes = 0;
	c->started = now;
}

uint64_t listcap_remaining_usec(const struct listcap *c, uint64_t now)
{
	uint64_t used = now > c->started ? now - c->started : 0;

	return used < c->max_usec ? c->max_usec - used : 0;
}

static int too_slow(const struct listcap *c, uint64_t now, char *why, size_t whylen)
{
	if (listcap_remaining_usec(c, now) > 0)
		return 0;
	snprintf(why, whylen, "not complete after %" PRIu64 " s (%zu pages): the limit is %" PRIu64
		 " s", (now - c->started) / 1000000, c->pages, c->max_usec / 1000000);
	return -E2BIG;
}

int listcap_next_page(struct listcap *c, uint64_t now, char *why, size_t whylen)
{
	if (c->pages >= c->max_pages) {
		snprintf(why, whylen, "%zu pages and still not the last: the limit is %zu pages",
			 c->pages, c->max_pages);
		return -E2BIG;
	}
	return too_slow(c, now, why, whylen);
}

int listcap_page(struct listcap *c, uint64_t bytes, size_t items, uint64_t now, char *why,
		 size_t whylen)
{
	c->pages++;
	c->bytes += bytes;
	if (items > c->max_items) {
		snprintf(why, whylen, "more than %zu items (%zu in %zu pages): the limit is %zu",
			 c->max_items, items, c->pages, c->max_items);
		return -E2BIG;
	}
	if (c->bytes > c->max_bytes) {
		snprintf(why, whylen, "more than %" PRIu64 " MiB in %zu pages: the limit is %" PRIu64
			 " MiB", c->max_bytes >> 20, c->pages, c->max_bytes >> 20);
		return -E2BIG;
	}
	return too_slow(c, now, why, whylen);
}
