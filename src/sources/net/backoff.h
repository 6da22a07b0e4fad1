/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Reconnect delays of the watch sources: capped exponential backoff with
 * jitter, so that the nodes of a cluster that lost the same server spread
 * out.  Pure (tests/unit/test-net.c); the random values come from jitter.h.
 */
#ifndef SVCNAT_SOURCES_NET_BACKOFF_H
#define SVCNAT_SOURCES_NET_BACKOFF_H

#include <stdint.h>

/*
 * The delay for the attempt-th consecutive failure (0-based): the capped
 * exponential d = min(cap, base * 2^attempt), jittered uniformly into
 * [d/2, d] by rnd (any 64-bit random value).  base must be > 0.
 */
uint64_t backoff_usec(uint64_t base_usec, uint64_t cap_usec, unsigned attempt, uint64_t rnd);

#endif
