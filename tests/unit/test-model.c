/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests: address helpers, diagnostics, the rule model. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/diag.h"
#include "core/model.h"
#include "core/ruleset.h"
#include "util.h"

static void test_ipaddr_parse(void **state)
{
	static const struct {
		const char *in;
		int ret;
		const char *out;
	} cases[] = {
		{ "10.0.0.1", 0, "10.0.0.1" },
		{ "010.001.002.003", 0, "10.1.2.3" }, /* decimal, not octal */
		{ "255.255.255.255", 0, "255.255.255.255" },
		{ "256.1.1.1", -EINVAL, NULL },
		{ "1.2.3", -EINVAL, NULL },
		{ "1.2.3.4.5", -EINVAL, NULL },
		{ "1.2.3.4 ", -EINVAL, NULL },
		{ "0001.2.3.4", -EINVAL, NULL },
		{ "", -EINVAL, NULL },
		{ "fd00::1", 0, "fd00::1" },
		{ "fd00::1::2", -EINVAL, NULL },
		{ "hello", -EINVAL, NULL },
	};
	char buf[INET6_ADDRSTRLEN];
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct ipaddr a;
		int r = ipaddr_parse(cases[i].in, &a);

		assert_int_equal(r, cases[i].ret);
		if (r == 0)
			assert_string_equal(ipaddr_fmt(&a, buf, sizeof(buf)), cases[i].out);
	}
	assert_int_equal(ipaddr_parse(NULL, &(struct ipaddr){ 0 }), -EINVAL);
}

static void test_ipnet_parse(void **state)
{
	static const struct {
		const char *in;
		int ret;
		const char *addr;
		int plen;
	} cases[] = {
		{ "10.0.0.0/8", 0, "10.0.0.0", 8 },
		{ " 198.18.1.0/25 ", 0, "198.18.1.0", 25 }, /* stray blanks */
		{ "10.1.2.3/8", 0, "10.0.0.0", 8 },         /* host bits masked */
		{ "10.1.2.3", 0, "10.1.2.3", 32 },
		{ "0.0.0.0/0", 0, "0.0.0.0", 0 },
		{ "198.18.1.129/25", 0, "198.18.1.128", 25 },
		{ "10.0.0.0/33", -EINVAL, NULL, 0 },
		{ "10.0.0.0/", -EINVAL, NULL, 0 },
		{ "10.0.0.0/8x", -EINVAL, NULL, 0 },
		{ "fd00::/64", 0, "fd00::", 64 },
		{ "fd00::/129", -EINVAL, NULL, 0 },
		{ "   ", -EINVAL, NULL, 0 },
	};
	char buf[INET6_ADDRSTRLEN];
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct ipnet n;
		int r = ipnet_parse(cases[i].in, &n);

		assert_int_equal(r, cases[i].ret);
		if (r == 0) {
			assert_string_equal(ipaddr_fmt(&n.addr, buf, sizeof(buf)), cases[i].addr);
			assert_int_equal(n.plen, cases[i].plen);
		}
	}
}

static void test_ipnet_contains(void **state)
{
	struct ipnet n;
	struct ipaddr a;

	(void)state;
	assert_int_equal(ipnet_parse("198.18.64.0/18", &n), 0);
	assert_int_equal(ipaddr_parse("198.18.65.10", &a), 0);
	assert_true(ipnet_contains(&n, &a));
	assert_int_equal(ipaddr_parse("198.18.127.255", &a), 0);
	assert_true(ipnet_contains(&n, &a));
	assert_int_equal(ipaddr_parse("198.18.128.0", &a), 0);
	assert_false(ipnet_contains(&n, &a));
	assert_int_equal(ipaddr_parse("198.18.63.255", &a), 0);
	assert_false(ipnet_contains(&n, &a));
	assert_int_equal(ipaddr_parse("fd00::1", &a), 0);
	assert_false(ipnet_contains(&n, &a)); /* other family */
	assert_int_equal(ipnet_parse("0.0.0.0/0", &n), 0);
	assert_int_equal(ipaddr_parse("1.2.3.4", &a), 0);
	assert_true(ipnet_contains(&n, &a));
}

static void test_proto(void **state)
{
	(void)state;
	assert_int_equal(proto_from_k8s("TCP"), PROTO_TCP);
	assert_int_equal(proto_from_k8s("UDP"), PROTO_UDP);
	assert_int_equal(proto_from_k8s("SCTP"), PROTO_SCTP);
	assert_int_equal(proto_from_k8s("tcp"), 0); /* the API is case-sensitive */
	assert_int_equal(proto_from_k8s(NULL), 0);
	assert_string_equal(proto_name(PROTO_SCTP), "sctp");
}

static struct service *mk_service(const char *ns, const char *name, uint16_t port)
{
	struct service *s = calloc(1, sizeof(*s));

	assert_non_null(s);
	s->refcnt = 1;
	s->ns = strdup(ns);
	s->name = strdup(name);
	s->ports = calloc(1, sizeof(*s->ports));
	s->n_ports = 1;
	s->ports[0].name = strdup("http");
	s->ports[0].protocol = PROTO_TCP;
	s->ports[0].port = port;
	s->cluster_ips = calloc(1, sizeof(*s->cluster_ips));
	s->n_cluster_ips = 1;
	assert_int_equal(ipaddr_parse("198.19.0.10", &s->cluster_ips[0]), 0);
	return s;
}

static void test_service_equal_ref(void **state)
{
	struct service *a = mk_service("shop", "web", 80);
	struct service *b = mk_service("shop", "web", 80);

	(void)state;
	assert_true(service_equal(a, b));
	b->ports[0].port = 81;
	assert_false(service_equal(a, b));
	b->ports[0].port = 80;
	assert_int_equal(ipaddr_parse("198.19.0.11", &b->cluster_ips[0]), 0);
	assert_false(service_equal(a, b));
	/* refcount: the second unref frees (ASan/valgrind catch mistakes) */
	assert_ptr_equal(service_ref(a), a);
	assert_int_equal(a->refcnt, 2);
	service_unref(a);
	service_unref(a);
	service_unref(b);
	service_unref(NULL);
}

static void test_epslice_equal(void **state)
{
	struct epslice *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	struct epslice *v[2] = { a, b };
	size_t i;

	(void)state;
	for (i = 0; i < 2; i++) {
		v[i]->refcnt = 1;
		v[i]->ns = strdup("shop");
		v[i]->name = strdup("web-abc");
		v[i]->service_name = strdup("web");
		v[i]->family = AF_INET;
		v[i]->endpoints = calloc(1, sizeof(*v[i]->endpoints));
		v[i]->n_endpoints = 1;
		v[i]->endpoints[0].ready = true;
		v[i]->endpoints[0].node_name = strdup("node-a");
		assert_int_equal(ipaddr_parse("198.18.65.11", &v[i]->endpoints[0].addr), 0);
	}
	assert_true(epslice_equal(a, b));
	b->endpoints[0].terminating = true;
	assert_false(epslice_equal(a, b));
	b->endpoints[0].terminating = false;
	free(b->endpoints[0].node_name);
	b->endpoints[0].node_name = strdup("node-b");
	assert_false(epslice_equal(a, b));
	free(b->endpoints[0].node_name);
	b->endpoints[0].node_name = strdup("node-a");
	/* node hints count, names and number (a change re-plans the service) */
	for (i = 0; i < 2; i++) {
		v[i]->endpoints[0].hint_nodes = calloc(1, sizeof(char *));
		v[i]->endpoints[0].hint_nodes[0] = strdup("node-a");
		v[i]->endpoints[0].n_hint_nodes = 1;
	}
	assert_true(epslice_equal(a, b));
	free(b->endpoints[0].hint_nodes[0]);
	b->endpoints[0].hint_nodes[0] = strdup("node-b");
	assert_false(epslice_equal(a, b));
	b->endpoints[0].n_hint_nodes = 0;
	assert_false(epslice_equal(a, b));
	b->endpoints[0].n_hint_nodes = 1;
	epslice_unref(a);
	epslice_unref(b);
}

static void test_diag(void **state)
{
	struct diag_list l, m;
	char *s;

	(void)state;
	diag_list_init(&l);
	diag_list_init(&m);
	assert_int_equal(diag_add(&l, DIAG_ERROR, "a.json", "shop/web", "spec.ports[1].port",
				  "%d is not a valid port", 70000),
			 0);
	assert_int_equal(diag_add(&l, DIAG_NOTE, NULL, NULL, NULL, "plain"), 0);
	s = diag_format(&l.items[0]);
	assert_string_equal(s, "a.json: shop/web: spec.ports[1].port: 70000 is not a valid port");
	free(s);
	s = diag_format(&l.items[1]);
	assert_string_equal(s, "plain");
	free(s);
	assert_int_equal(diag_count(&l, DIAG_ERROR), 1);
	assert_int_equal(diag_count(&l, DIAG_NOTE), 2);
	assert_int_equal(diag_list_move(&m, &l), 0);
	assert_int_equal(l.n, 0);
	assert_int_equal(m.n, 2);
	/* a cap keeps memory bounded for hostile input */
	m.max = 3;
	assert_int_equal(diag_add(&m, DIAG_ERROR, NULL, NULL, NULL, "x"), 0);
	assert_int_equal(diag_add(&m, DIAG_ERROR, NULL, NULL, NULL, "y"), 0);
	assert_int_equal(m.n, 3);
	assert_int_equal(m.dropped, 1);
	diag_list_done(&l);
	diag_list_done(&m);
}

static void test_ruleset_chains(void **state)
{
	struct ruleset *rs = ruleset_new();
	static const char *const names[] = { "KUBE-SVC-B", "KUBE-SERVICES", "PREROUTING",
					     "KUBE-SVC-A", "POSTROUTING", "OUTPUT" };
	static const char *const sorted[] = { "PREROUTING", "OUTPUT", "POSTROUTING",
					      "KUBE-SERVICES", "KUBE-SVC-A", "KUBE-SVC-B" };
	struct rs_chain *c;
	size_t i;

	(void)state;
	assert_non_null(rs);
	for (i = 0; i < ARRAY_SIZE(names); i++)
		assert_non_null(ruleset_add_chain(rs, RS_NAT, names[i]));
	errno = 0;
	assert_null(ruleset_add_chain(rs, RS_NAT, "KUBE-SVC-A"));
	assert_int_equal(errno, EEXIST);
	assert_null(ruleset_add_chain(rs, RS_NAT, "KUBE-THIS-NAME-IS-LONGER-THAN-28"));
	assert_int_equal(errno, ENAMETOOLONG);
	/* same name in another table is another chain */
	assert_non_null(ruleset_add_chain(rs, RS_FILTER, "KUBE-SERVICES"));

	ruleset_sort(rs);
	assert_int_equal(rs->t[RS_NAT].n, ARRAY_SIZE(sorted));
	for (i = 0; i < ARRAY_SIZE(sorted); i++)
		assert_string_equal(rs->t[RS_NAT].chains[i]->name, sorted[i]);
	c = ruleset_find_chain(rs, RS_NAT, "PREROUTING");
	assert_non_null(c);
	assert_true(c->builtin);
	assert_false(ruleset_find_chain(rs, RS_NAT, "KUBE-SVC-A")->builtin);
	assert_null(ruleset_find_chain(rs, RS_FILTER, "KUBE-SVC-A"));
	assert_ptr_equal(ruleset_get_chain(rs, RS_NAT, "KUBE-SVC-A"),
			 ruleset_find_chain(rs, RS_NAT, "KUBE-SVC-A"));
	assert_int_equal(ruleset_count_chains(rs), 4); /* built-ins do not count */
	ruleset_free(rs);
}

static void fill_rule(struct ruleset *rs, struct rs_rule *r, const char *comment, uint16_t port)
{
	struct rs_match *m;

	r->proto = PROTO_TCP;
	assert_int_equal(ipnet_parse("198.19.0.10/32", &r->dst), 0);
	m = rs_rule_add_match(r, RS_M_COMMENT);
	m->u.comment = ruleset_strdup(rs, comment);
	m = rs_rule_add_match(r, RS_M_PORT);
	m->u.port.dport = port;
	r->t.kind = RS_T_JUMP;
	r->t.u.chain = ruleset_strdup(rs, "KUBE-SVC-A");
}

static void test_ruleset_rules(void **state)
{
	struct ruleset *a = ruleset_new(), *b = ruleset_new();
	struct rs_chain *ca, *cb, *cc;
	struct rs_rule *r;
	size_t i;

	(void)state;
	ca = ruleset_add_chain(a, RS_NAT, "KUBE-SERVICES");
	cb = ruleset_add_chain(b, RS_NAT, "KUBE-SERVICES");
	fill_rule(a, rs_chain_append(ca), "shop/web:http cluster IP", 80);
	fill_rule(b, rs_chain_append(cb), "shop/web:http cluster IP", 80);
	/* equality is by content, not by string pointer */
	assert_true(rs_chain_equal(ca, cb));
	cb->rules[0].m[1].u.port.dport = 81;
	assert_false(rs_chain_equal(ca, cb));
	cb->rules[0].m[1].u.port.dport = 80;
	cb->rules[0].m[1].u.port.dport_max = 90;
	assert_false(rs_chain_equal(ca, cb));
	cb->rules[0].m[1].u.port.dport_max = 0;
	assert_true(rs_chain_equal(ca, cb));
	cb->rules[0].dst_inv = true;
	assert_false(rs_rule_equal(&ca->rules[0], &cb->rules[0]));
	cb->rules[0].dst_inv = false;

	/* probabilities compare as the kernel stores them */
	r = rs_chain_append(ca);
	rs_rule_add_match(r, RS_M_STATISTIC)->u.stat.probability = 1.0 / 3.0;
	r = rs_chain_append(cb);
	rs_rule_add_match(r, RS_M_STATISTIC)->u.stat.probability = 0.3333333333;
	assert_true(rs_chain_equal(ca, cb));

	/* match slots are bounded */
	r = rs_chain_append(ca);
	for (i = 0; i < RS_MAX_MATCHES; i++)
		assert_non_null(rs_rule_add_match(r, RS_M_COMMENT));
	assert_null(rs_rule_add_match(r, RS_M_COMMENT));
	/* kube-proxy's rules need 3 slots; the plan holds ~441k rules at
	 * 10,000 x 10, so their size is the plan store's (264 bytes before) */
	assert_true(RS_MAX_MATCHES >= 3);
	assert_true(sizeof(struct rs_rule) <= 192);

	/* a copied chain owns its strings: it outlives its source */
	cc = ruleset_copy_chain(b, ca);
	assert_null(cc); /* name taken in b */
	ruleset_free(b);
	b = ruleset_new();
	cc = ruleset_copy_chain(b, ca);
	assert_non_null(cc);
	assert_true(rs_chain_equal(ca, cc));
	ruleset_free(a);
	assert_string_equal(cc->rules[0].m[0].u.comment, "shop/web:http cluster IP");
	assert_string_equal(cc->rules[0].t.u.chain, "KUBE-SVC-A");
	assert_int_equal(ruleset_count_rules(b), 3);
	ruleset_free(b);
}

/* Many chains (the index grows and moves), chains added unindexed, moves. */
static void test_ruleset_index(void **state)
{
	struct ruleset *rs = ruleset_new(), *dst = ruleset_new();
	char name[RS_CHAIN_MAXLEN + 1];
	struct rs_chain *c;

	(void)state;
	assert_non_null(rs);
	assert_non_null(dst);
	assert_int_equal(ruleset_reserve(rs, RS_NAT, 10, true), 0);
	assert_int_equal(ruleset_reserve(rs, RS_FILTER, 10, false), 0);
	for (int i = 0; i < 5000; i++) {
		snprintf(name, sizeof(name), "KUBE-SEP-%06d", i);
		c = ruleset_add_chain(rs, RS_NAT, name);
		assert_non_null(c);
		assert_string_equal(c->name, name);
	}
	for (int i = 0; i < 5000; i += 7) {
		snprintf(name, sizeof(name), "KUBE-SEP-%06d", i);
		assert_non_null(ruleset_find_chain(rs, RS_NAT, name));
		assert_null(ruleset_add_chain(rs, RS_NAT, name));
		assert_int_equal(errno, EEXIST);
	}
	assert_null(ruleset_find_chain(rs, RS_NAT, "KUBE-SEP-005000"));
	assert_null(ruleset_find_chain(rs, RS_NAT, "KUBE-THIS-NAME-IS-LONGER-THAN-28"));
	/* Unindexed: found by a walk, then indexed by the next add. */
	for (int i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "KUBE-SVC-%06d", i);
		assert_non_null(ruleset_add_chain_new(rs, RS_NAT, name));
	}
	assert_null(ruleset_add_chain_new(rs, RS_NAT, ""));
	assert_non_null(ruleset_find_chain(rs, RS_NAT, "KUBE-SVC-000299"));
	assert_non_null(ruleset_find_chain(rs, RS_NAT, "KUBE-SEP-000001"));
	assert_null(ruleset_find_chain(rs, RS_NAT, "KUBE-SVC-000300"));
	assert_null(ruleset_add_chain(rs, RS_NAT, "KUBE-SVC-000007"));
	assert_int_equal(errno, EEXIST);
	assert_non_null(ruleset_add_chain(rs, RS_NAT, "KUBE-SVC-000300"));
	assert_ptr_equal(ruleset_get_chain(rs, RS_NAT, "KUBE-SVC-000100"),
			 ruleset_find_chain(rs, RS_NAT, "KUBE-SVC-000100"));
	/* Moves take chains out of the index and into another's. */
	ruleset_sort(rs);
	assert_non_null(ruleset_add_chain_new(rs, RS_NAT, "KUBE-XLB-1"));
	for (int i = 0; i < 5000; i += 3) {
		snprintf(name, sizeof(name), "KUBE-SEP-%06d", i);
		c = ruleset_find_chain(rs, RS_NAT, name);
		assert_int_equal(ruleset_move_chain(dst, rs, c), 0);
		assert_null(ruleset_find_chain(rs, RS_NAT, name));
		assert_ptr_equal(ruleset_find_chain(dst, RS_NAT, name), c);
	}
	for (int i = 0; i < 5000; i++) {
		snprintf(name, sizeof(name), "KUBE-SEP-%06d", i);
		assert_non_null(ruleset_find_chain(i % 3 ? rs : dst, RS_NAT, name));
		assert_null(ruleset_find_chain(i % 3 ? dst : rs, RS_NAT, name));
	}
	assert_non_null(ruleset_find_chain(rs, RS_NAT, "KUBE-XLB-1"));
	/* A chain from a block moves too (and lives as long as rs). */
	c = ruleset_find_chain(rs, RS_NAT, "KUBE-SVC-000001");
	assert_true(c->pooled);
	assert_int_equal(ruleset_move_chain(dst, rs, c), 0);
	assert_ptr_equal(ruleset_find_chain(dst, RS_NAT, "KUBE-SVC-000001"), c);
	assert_int_equal(ruleset_move_chain(rs, dst, c), 0);
	assert_int_equal(ruleset_count_chains(rs) + ruleset_count_chains(dst), 5000 + 302);
	ruleset_sort(rs);
	for (size_t i = 1; i < rs->t[RS_NAT].n; i++)
		assert_true(strcmp(rs->t[RS_NAT].chains[i - 1]->name, rs->t[RS_NAT].chains[i]->name) < 0);
	ruleset_free(dst);
	ruleset_free(rs);
}

/* ruleset_sort() of many names: random order, long shared prefixes, names
 * that differ only past the 16 bytes after their common prefix, built-in
 * chains among them, a sorted table with a tail added. */
static void test_ruleset_sort_many(void **state)
{
	static const char *const pre[] = { "KUBE-SEP-", "KUBE-SVC-", "KUBE-SVC-XXXXXXXXXXXXXX",
					   "KUBE-", "KUBE-FW-XXXXXXXXXXXXXXXXX" };
	static const int width[] = { 6, 6, 4, 1, 3 };
	struct ruleset *rs = ruleset_new();
	char name[RS_CHAIN_MAXLEN + 1];
	unsigned x = 12345;

	(void)state;
	assert_non_null(rs);
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 3000; i++) {
			x = x * 1103515245u + 12345u;
			snprintf(name, sizeof(name), "%s%0*x", pre[(x >> 8) % 5], width[(x >> 8) % 5],
				 (x >> 12) & 0xfff);
			(void)ruleset_get_chain(rs, RS_NAT, name);
			if (i % 1000 == 0)
				(void)ruleset_get_chain(rs, RS_NAT, i ? "OUTPUT" : "POSTROUTING");
		}
		if (round == 0)
			(void)ruleset_get_chain(rs, RS_NAT, "PREROUTING");
		ruleset_sort(rs);
		{
			const struct rs_chains *cs = &rs->t[RS_NAT];

			assert_string_equal(cs->chains[0]->name, "PREROUTING");
			assert_string_equal(cs->chains[1]->name, "OUTPUT");
			assert_string_equal(cs->chains[2]->name, "POSTROUTING");
			for (size_t i = 4; i < cs->n; i++)
				assert_true(strcmp(cs->chains[i - 1]->name, cs->chains[i]->name) < 0);
		}
	}
	/* Sorted already: stays. */
	ruleset_sort(rs);
	assert_true(rs->t[RS_NAT].sorted);
	ruleset_free(rs);
}

static void test_ruleset_printf_long(void **state)
{
	struct ruleset *rs = ruleset_new();
	char big[2000];
	const char *s;

	(void)state;
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	s = ruleset_printf(rs, "%s-%d", big, 7);
	assert_non_null(s);
	assert_int_equal(strlen(s), sizeof(big) - 1 + 2);
	assert_string_equal(s + sizeof(big) - 1, "-7");
	/* many small strings across arena chunks stay intact */
	for (int i = 0; i < 20000; i++) {
		s = ruleset_printf(rs, "ns/svc%d:port", i);
		assert_non_null(s);
	}
	assert_string_equal(s, "ns/svc19999:port");
	ruleset_free(rs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ipaddr_parse),
		cmocka_unit_test(test_ipnet_parse),
		cmocka_unit_test(test_ipnet_contains),
		cmocka_unit_test(test_proto),
		cmocka_unit_test(test_service_equal_ref),
		cmocka_unit_test(test_epslice_equal),
		cmocka_unit_test(test_diag),
		cmocka_unit_test(test_ruleset_chains),
		cmocka_unit_test(test_ruleset_rules),
		cmocka_unit_test(test_ruleset_index),
		cmocka_unit_test(test_ruleset_sort_many),
		cmocka_unit_test(test_ruleset_printf_long),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
