/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "sources/net/backoff.h"

uint64_t backoff_usec(uint64_t base_usec, uint64_t cap_usec, unsigned attempt, uint64_t rnd)
{
	uint64_t d = base_usec;

	for (unsigned i = 0; i < attempt && d < cap_usec; i++)
		d *= 2;
	if (d > cap_usec)
		d = cap_usec;
	return d / 2 + rnd % (d / 2 + 1);
}
