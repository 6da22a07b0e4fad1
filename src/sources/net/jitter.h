/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Random jitter for the watch sources' retries and timeouts, so that the
 * nodes of a cluster spread out: a per-process seed and xorshift64*.
 * Not for anything that needs unpredictability.
 */
#ifndef SVCNAT_SOURCES_JITTER_H
#define SVCNAT_SOURCES_JITTER_H

#include <stdint.h>

/* A seed from getrandom(), else from the time and pid; never 0. */
uint64_t jitter_seed(void);

/* The next value of the generator whose state is *state (not 0). */
uint64_t jitter_next(uint64_t *state);

#endif
