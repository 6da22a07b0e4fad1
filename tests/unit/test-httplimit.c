/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The HTTP servers' connection admission (sys/httplimit.c): who counts as
 * one client (an IPv4 address, also IPv4-mapped; an IPv6 /64; per kind of
 * server), the per-client, per-kind and total limits, and the table
 * against a plain model over many clients opening and closing (its
 * deletion moves entries around).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sys/httplimit.h"
#include "util.h"

static struct httplimit_key key(const char *ip, enum http_kind k)
{
	struct sockaddr_storage ss = { 0 };
	struct httplimit_key ret;
	socklen_t len;

	if (strchr(ip, ':')) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		a->sin6_family = AF_INET6;
		a->sin6_port = htons(40000);
		assert_int_equal(inet_pton(AF_INET6, ip, &a->sin6_addr), 1);
		len = sizeof(*a);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		a->sin_family = AF_INET;
		a->sin_port = htons(40000);
		assert_int_equal(inet_pton(AF_INET, ip, &a->sin_addr), 1);
		len = sizeof(*a);
	}
	assert_int_equal(httplimit_key((struct sockaddr *)&ss, len, k, &ret), 0);
	return ret;
}

/* A pointer to a key that lives until the end of the full expression. */
#define KEY(ip, k) (&(struct httplimit_key[1]){ key(ip, k) }[0])

static bool same(struct httplimit_key a, struct httplimit_key b)
{
	return memcmp(&a, &b, sizeof(a)) == 0;
}

static void test_keys(void **state)
{
	struct sockaddr_un_like {
		sa_family_t family;
		char path[20];
	} un = { .family = AF_UNIX };
	struct sockaddr_in short4 = { .sin_family = AF_INET };
	struct httplimit_key k;

	assert_true(same(key("198.18.1.100", HTTP_HEALTH), key("198.18.1.100", HTTP_HEALTH)));
	assert_false(same(key("198.18.1.100", HTTP_HEALTH), key("198.18.1.101", HTTP_HEALTH)));
	/* a dual-stack listener's IPv4 client */
	assert_true(same(key("::ffff:198.18.1.100", HTTP_HEALTH), key("198.18.1.100", HTTP_HEALTH)));
	/* one IPv6 client is its /64 */
	assert_true(same(key("2001:2:1::100", HTTP_HEALTH), key("2001:2:1::ffff:1", HTTP_HEALTH)));
	assert_true(same(key("2001:2:1:0:1:2:3:4", HTTP_HEALTH), key("2001:2:1::", HTTP_HEALTH)));
	assert_false(same(key("2001:2:1:1::100", HTTP_HEALTH), key("2001:2:1::100", HTTP_HEALTH)));
	/* an IPv6 /64 whose first bytes spell an IPv4 address is not it */
	assert_false(same(key("c612:164::", HTTP_HEALTH), key("198.18.1.100", HTTP_HEALTH)));
	/* per kind of server */
	assert_false(same(key("198.18.1.100", HTTP_HEALTH), key("198.18.1.100", HTTP_OTHER)));
	assert_int_equal(httplimit_key((struct sockaddr *)&un, sizeof(un), HTTP_HEALTH, &k),
			 -EAFNOSUPPORT);
	assert_int_equal(httplimit_key((struct sockaddr *)&short4, 4, HTTP_HEALTH, &k),
			 -EAFNOSUPPORT);
	assert_int_equal(httplimit_key(NULL, 0, HTTP_HEALTH, &k), -EAFNOSUPPORT);
}

static void test_limits(void **state)
{
	struct httplimit_conf conf = { .max_total = 6, .max_kind = { 0, 2 }, .per_client = 2 };
	struct httplimit_key a = key("198.18.1.100", HTTP_HEALTH), b = key("2001:2:1::1", HTTP_HEALTH),
			     am = key("198.18.1.100", HTTP_OTHER), bm = key("2001:2:1::1", HTTP_OTHER);
	struct httplimit *t;

	assert_int_equal(httplimit_new(&(struct httplimit_conf){ .max_total = 0, .per_client = 1 },
				       1, &t),
			 -EINVAL);
	assert_int_equal(httplimit_new(&conf, 42, &t), 0);
	/* per client */
	assert_int_equal(httplimit_check(t, &a), 0);
	assert_int_equal(httplimit_add(t, &a), 0);
	assert_int_equal(httplimit_add(t, &a), 0);
	assert_int_equal(httplimit_check(t, &a), -EDQUOT);
	assert_int_equal(httplimit_check(t, &b), 0);
	assert_int_equal(httplimit_client(t, &a), 2);
	assert_int_equal(httplimit_client(t, &b), 0);
	/* the same client on another kind of server has its own share */
	assert_int_equal(httplimit_check(t, &am), 0);
	assert_int_equal(httplimit_add(t, &am), 0);
	/* the other kind's share: 2 */
	assert_int_equal(httplimit_add(t, &bm), 0);
	assert_int_equal(httplimit_check(t, &am), -ENOSPC);
	assert_int_equal(httplimit_check(t, KEY("198.18.1.1", HTTP_OTHER)), -ENOSPC);
	assert_int_equal(httplimit_kind(t, HTTP_OTHER), 2);
	assert_int_equal(httplimit_kind(t, HTTP_HEALTH), 2);
	/* ... while health still has room: the total is 6 */
	assert_int_equal(httplimit_add(t, &b), 0);
	assert_int_equal(httplimit_add(t, &b), 0);
	assert_int_equal(httplimit_total(t), 6);
	assert_int_equal(httplimit_check(t, KEY("198.18.1.1", HTTP_HEALTH)), -ENOSPC);
	/* one closes: room again, for that kind and client */
	httplimit_del(t, &a);
	assert_int_equal(httplimit_check(t, &a), 0);
	assert_int_equal(httplimit_check(t, KEY("198.18.1.1", HTTP_HEALTH)), 0);
	assert_int_equal(httplimit_check(t, KEY("198.18.1.1", HTTP_OTHER)), -ENOSPC);
	/* deleting a client without connections changes nothing */
	httplimit_del(t, KEY("198.18.9.9", HTTP_HEALTH));
	assert_int_equal(httplimit_total(t), 5);
	httplimit_del(t, &a);
	httplimit_del(t, &am);
	httplimit_del(t, &bm);
	httplimit_del(t, &b);
	httplimit_del(t, &b);
	assert_int_equal(httplimit_total(t), 0);
	assert_int_equal(httplimit_kind(t, HTTP_HEALTH), 0);
	assert_int_equal(httplimit_client(t, &b), 0);
	httplimit_free(t);
	httplimit_free(NULL);
}

/* The table never holds more clients than max_total (its memory bound):
 * add refuses a new client once it does, even unchecked. */
static void test_full(void **state)
{
	struct httplimit_conf conf = { .max_total = 3, .per_client = 5 };
	struct httplimit *t;
	char ip[32];

	assert_int_equal(httplimit_new(&conf, 7, &t), 0);
	for (int i = 0; i < 3; i++) {
		snprintf(ip, sizeof(ip), "198.18.2.%d", i);
		assert_int_equal(httplimit_add(t, KEY(ip, HTTP_HEALTH)), 0);
	}
	assert_int_equal(httplimit_add(t, KEY("198.18.3.1", HTTP_HEALTH)), -ENOSPC);
	assert_int_equal(httplimit_total(t), 3);
	assert_int_equal(httplimit_client(t, KEY("198.18.3.1", HTTP_HEALTH)), 0);
	httplimit_free(t);
}

static uint64_t rnd_state = 88172645463325252ULL;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/* Many clients opening and closing at random against plain counters:
 * every count agrees after each step (a lost entry after a deletion would
 * make a client's count 0, or a check pass that must not). */
static void test_model(void **state)
{
	enum { CLIENTS = 300, STEPS = 200000 };
	struct httplimit_conf conf = { .max_total = 1000, .max_kind = { 0, 250 }, .per_client = 7 };
	static struct httplimit_key keys[CLIENTS];
	static unsigned count[CLIENTS];
	unsigned total = 0, kind[2] = { 0 };
	struct httplimit *t;
	char ip[64];

	for (int i = 0; i < CLIENTS; i++) {
		if (i % 3 == 0)
			snprintf(ip, sizeof(ip), "198.18.%d.%d", i / 250, i % 250);
		else if (i % 3 == 1)
			snprintf(ip, sizeof(ip), "2001:2:%x:%x::1", i / 7, i);
		else
			snprintf(ip, sizeof(ip), "::ffff:198.19.%d.%d", i / 250, i % 250);
		keys[i] = key(ip, i % 5 == 0 ? HTTP_OTHER : HTTP_HEALTH);
	}
	assert_int_equal(httplimit_new(&conf, 12345, &t), 0);
	for (int s = 0; s < STEPS; s++) {
		int i = (int)(rnd() % CLIENTS);
		int k = i % 5 == 0 ? HTTP_OTHER : HTTP_HEALTH;
		bool open = rnd() % 2;

		if (open) {
			unsigned kmax = k == HTTP_OTHER ? 250 : 1000;
			int want = total >= 1000 || kind[k] >= kmax ? -ENOSPC
				   : count[i] >= 7		    ? -EDQUOT
								    : 0;

			assert_int_equal(httplimit_check(t, &keys[i]), want);
			if (want == 0) {
				assert_int_equal(httplimit_add(t, &keys[i]), 0);
				count[i]++;
				total++;
				kind[k]++;
			}
		} else if (count[i]) {
			httplimit_del(t, &keys[i]);
			count[i]--;
			total--;
			kind[k]--;
		}
		if (s % 997 == 0)
			for (int j = 0; j < CLIENTS; j++)
				assert_int_equal(httplimit_client(t, &keys[j]), count[j]);
		assert_int_equal(httplimit_total(t), total);
	}
	for (int j = 0; j < CLIENTS; j++)
		assert_int_equal(httplimit_client(t, &keys[j]), count[j]);
	assert_int_equal(httplimit_kind(t, HTTP_OTHER), kind[HTTP_OTHER]);
	httplimit_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_full),
		cmocka_unit_test(test_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
