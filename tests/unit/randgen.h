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

/*
 * Random topology hints on a slice endpoint, as the EndpointSlice
 * controller writes them for PreferSameZone (zones) and PreferSameNode
 * (its node and zone), or none, or node hints without zone hints: the
 * planner's all-or-nothing rules see every case.
 */
static void rand_hints(struct epslice_endpoint *ep)
{
	static const char *const zones[] = { "zone-a", "zone-b" };
	static const char *const nodes[] = { "node-a", "node-b", "node-c" };
	unsigned what = rnd(5);

	if (what == 0)
		return;
	ep->has_hints = true;
	if (what != 4) {
		ep->hint_zones = calloc(1, sizeof(char *));
		assert_non_null(ep->hint_zones);
		ep->hint_zones[ep->n_hint_zones++] = xstrdup(zones[rnd(2)]);
	}
	if (what >= 3) {
		ep->hint_nodes = calloc(1, sizeof(char *));
		assert_non_null(ep->hint_nodes);
		ep->hint_nodes[ep->n_hint_nodes++] = xstrdup(nodes[rnd(3)]);
	}
}

#endif
