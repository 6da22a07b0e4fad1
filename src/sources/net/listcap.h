/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Caps on one paged list (the API server's limit/continue, etcd's ranged
 * reads): a server whose pages never end, or end only after more than a
 * node can hold, gets the list given up with a reason instead of memory
 * and time without bound.  Pure: the caller passes the clock.
 */
#ifndef SVCNAT_SOURCES_NET_LISTCAP_H
#define SVCNAT_SOURCES_NET_LISTCAP_H

#include <stddef.h>
#include <stdint.h>

/* The limits of one list, and what it has used so far. */
struct listcap {
	size_t max_items;  /* items kept from every page together */
	size_t max_pages;  /* requests */
	uint64_t max_bytes; /* answer bytes of every page together */
	uint64_t max_usec; /* from the first request to the last answer */
	size_t pages;
	uint64_t bytes;
	uint64_t started;
};

/* Start counting a new list at time now (microseconds, any clock). */
void listcap_begin(struct listcap *c, uint64_t now);

/*
 * Before asking for another page at now: whether the list may go on.
 * 0, or -E2BIG with the reason in why (e.g. "1,000 pages and still a
 * continue token").
 */
int listcap_next_page(struct listcap *c, uint64_t now, char *why, size_t whylen);

/*
 * A page arrived: its answer had bytes bytes, and the list now holds items
 * items (all pages so far).  0, or -E2BIG with the reason in why.
 */
int listcap_page(struct listcap *c, uint64_t bytes, size_t items, uint64_t now, char *why,
		 size_t whylen);

/* Microseconds the list may still take at now (0: none left). */
uint64_t listcap_remaining_usec(const struct listcap *c, uint64_t now);

#endif
