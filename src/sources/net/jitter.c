/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "sources/net/jitter.h"

uint64_t jitter_seed(void)
{
	uint64_t s;

	if (getrandom(&s, sizeof(s), GRND_NONBLOCK) != sizeof(s))
		s = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	return s | 1;
}

uint64_t jitter_next(uint64_t *state)
{
	/* xorshift64*: jitter only needs to differ between nodes. */
	*state ^= *state >> 12;
	*state ^= *state << 25;
	*state ^= *state >> 27;
	return *state * 2685821657736338717ull;
}
