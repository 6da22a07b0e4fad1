/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "sys/httplimit.h"

struct slot {
	struct httplimit_key key;
	uint32_t hash;
	unsigned count; /* 0: empty */
};

struct httplimit {
	struct httplimit_conf conf;
	uint64_t seed;
	struct slot *slots; /* open addressing, linear probing */
	size_t mask;
	unsigned used;      /* slots in use */
	unsigned total;
	unsigned kind[HTTP_KIND_MAX];
};

int httplimit_key(const struct sockaddr *sa, socklen_t len, enum http_kind k,
		  struct httplimit_key *ret)
{
	struct httplimit_key key = { .b = { (uint8_t)k } };

	if (sa && sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		key.b[1] = 4;
		memcpy(key.b + 2, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (sa && sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;

		if (IN6_IS_ADDR_V4MAPPED(a)) {
			/* a dual-stack listener's IPv4 client is that IPv4 client */
			key.b[1] = 4;
			memcpy(key.b + 2, a->s6_addr + 12, 4);
		} else {
			key.b[1] = 6;
			memcpy(key.b + 2, a->s6_addr, 8); /* the /64 */
		}
	} else {
		return -EAFNOSUPPORT;
	}
	*ret = key;
	return 0;
}

/* Keyed with a random seed, so that a client cannot pick addresses that
 * collide (every probe of a long run costs the loop thread). */
static uint32_t key_hash(const struct httplimit *t, const struct httplimit_key *k)
{
	uint64_t a, b = (uint64_t)k->b[8] | (uint64_t)k->b[9] << 8;

	memcpy(&a, k->b, 8);
	a ^= t->seed;
	a *= 0x9e3779b97f4a7c15ULL;
	a ^= a >> 29;
	a ^= b * 0xbf58476d1ce4e5b9ULL ^ (t->seed >> 17);
	a *= 0x94d049bb133111ebULL;
	a ^= a >> 32;
	return (uint32_t)a;
}

int httplimit_new(const struct httplimit_conf *conf, uint64_t seed, struct httplimit **ret)
{
	struct httplimit *t;
	size_t cap = 16;

	if (!conf->max_total || !conf->per_client)
		return -EINVAL;
	/* At most max_total keys: a load factor of one half at worst. */
	while (cap < (size_t)conf->max_total * 2)
		cap *= 2;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->slots = calloc(cap, sizeof(*t->slots));
	if (!t->slots) {
		free(t);
		return -ENOMEM;
	}
	t->conf = *conf;
	for (int k = 0; k < HTTP_KIND_MAX; k++)
		if (!t->conf.max_kind[k] || t->conf.max_kind[k] > conf->max_total)
			t->conf.max_kind[k] = conf->max_total;
	t->seed = seed;
	t->mask = cap - 1;
	*ret = t;
	return 0;
}

void httplimit_free(struct httplimit *t)
{
	if (!t)
		return;
	free(t->slots);
	free(t);
}

/* The slot holding key, or the empty slot where it would go. */
static size_t find(const struct httplimit *t, const struct httplimit_key *key, uint32_t h)
{
	size_t i = h & t->mask;

	while (t->slots[i].count && (t->slots[i].hash != h ||
				     memcmp(&t->slots[i].key, key, sizeof(*key)) != 0))
		i = (i + 1) & t->mask;
	return i;
}

static enum http_kind kind_of(const struct httplimit_key *key)
{
	return key->b[0] < HTTP_KIND_MAX ? (enum http_kind)key->b[0] : HTTP_OTHER;
}

int httplimit_check(const struct httplimit *t, const struct httplimit_key *key)
{
	enum http_kind k = kind_of(key);

	if (t->total >= t->conf.max_total || t->kind[k] >= t->conf.max_kind[k])
		return -ENOSPC;
	if (httplimit_client(t, key) >= t->conf.per_client)
		return -EDQUOT;
	return 0;
}

int httplimit_add(struct httplimit *t, const struct httplimit_key *key)
{
	uint32_t h = key_hash(t, key);
	size_t i = find(t, key, h);

	if (!t->slots[i].count) {
		if (t->used >= t->conf.max_total)
			return -ENOSPC;
		t->slots[i].key = *key;
		t->slots[i].hash = h;
		t->used++;
	}
	t->slots[i].count++;
	t->total++;
	t->kind[kind_of(key)]++;
	return 0;
}

void httplimit_del(struct httplimit *t, const struct httplimit_key *key)
{
	uint32_t h = key_hash(t, key);
	size_t i = find(t, key, h), j;

	if (!t->slots[i].count)
		return;
	t->total--;
	t->kind[kind_of(key)]--;
	if (--t->slots[i].count)
		return;
	/* Backward-shift deletion: pull later members of the probe run into
	 * the hole, so that lookups need no tombstones. */
	t->used--;
	j = i;
	for (;;) {
		size_t home;

		j = (j + 1) & t->mask;
		if (!t->slots[j].count)
			break;
		home = t->slots[j].hash & t->mask;
		/* Move j into the hole at i unless its home lies in (i, j]. */
		if (i <= j ? (home <= i || home > j) : (home <= i && home > j)) {
			t->slots[i] = t->slots[j];
			i = j;
		}
	}
	t->slots[i].count = 0;
}

unsigned httplimit_total(const struct httplimit *t)
{
	return t->total;
}

unsigned httplimit_kind(const struct httplimit *t, enum http_kind k)
{
	return k < HTTP_KIND_MAX ? t->kind[k] : 0;
}

unsigned httplimit_client(const struct httplimit *t, const struct httplimit_key *key)
{
	return t->slots[find(t, key, key_hash(t, key))].count;
}
