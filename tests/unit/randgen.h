/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the seeded equivalence tests (test-delta, test-planinc) share: a
 * xorshift64 generator (the same sequence from the same state on every
 * machine) and two helpers for the objects they build.  Included once by
 * each test, after cmocka.h and the core headers (ipaddr_parse()).
 * RANDGEN_SEED, when defined before, is the generator's first state.
 */
#ifndef SVCNAT_TESTS_RANDGEN_H
#define SVCNAT_TESTS_RANDGEN_H

#ifndef RANDGEN_SEED
#define RANDGEN_SEED 0
#endif

static uint64_t rng = RANDGEN_SEED;

static unsigned rnd(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng % n);
}

static char *xstrdup(const char *s)
{
	char *r = strdup(s);

	assert_non_null(r);
	return r;
}

/* An IPv4 198.19.NET.HOST or IPv6 2001:2::NET:HOST address. */
static void set_ip(struct ipaddr *a, bool v6, unsigned net, unsigned host)
{
	char buf[64];

	if (v6)
		snprintf(buf, sizeof(buf), "2001:2::%x:%x", net, host);
	else
		snprintf(buf, sizeof(buf), "198.19.%u.%u", net, host);
	assert_int_equal(ipaddr_parse(buf, a), 0);
}

#endif
