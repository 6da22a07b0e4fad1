/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * This node's identity (pipeline/node.c), table-driven: the "primary"
 * node-port placeholder and its replacement by the Node object's primary
 * IP of each family, given against learnt addresses and the Node's, the
 * bind address first, the Node's pod CIDRs for NodeCIDR mode, when the
 * learnt addresses matter, and the family warnings.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pipeline/node.h"
#include "util.h"

#define MAXN 8

/* A list of addresses or CIDRs as text, ' '-separated; NULL: none. */
static size_t addrs(const char *text, struct ipaddr *v)
{
	char buf[256], *save = NULL;
	size_t n = 0;

	if (!text)
		return 0;
	snprintf(buf, sizeof(buf), "%s", text);
	for (char *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
		assert_true(n < MAXN);
		assert_int_equal(ipaddr_parse(t, &v[n++]), 0);
	}
	return n;
}

static size_t nets(const char *text, struct ipnet *v)
{
	char buf[256], *save = NULL;
	size_t n = 0;

	if (!text)
		return 0;
	snprintf(buf, sizeof(buf), "%s", text);
	for (char *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
		assert_true(n < MAXN);
		assert_int_equal(ipnet_parse(t, &v[n++]), 0);
	}
	return n;
}

/* a list as text again, to compare with the expected one. */
static void fmt_addrs(const struct ipaddr *v, size_t n, char *out, size_t len)
{
	char b[INET6_ADDRSTRLEN];

	out[0] = '\0';
	for (size_t i = 0; i < n; i++)
		snprintf(out + strlen(out), len - strlen(out), "%s%s", i ? " " : "",
			 ipaddr_fmt(&v[i], b, sizeof(b)));
}

static void fmt_nets(const struct ipnet *v, size_t n, char *out, size_t len)
{
	char b[INET6_ADDRSTRLEN];

	out[0] = '\0';
	for (size_t i = 0; i < n; i++)
		snprintf(out + strlen(out), len - strlen(out), "%s%s/%u", i ? " " : "",
			 ipaddr_fmt(&v[i].addr, b, sizeof(b)), v[i].plen);
}

/* What is given about the node, as text. */
struct given {
	const char *zone;
	const char *node_ips;   /* given node IPs (node_ips_given when not NULL) */
	const char *nodeport;   /* given node-port CIDRs */
	bool primary;           /* "primary" among the node-port addresses */
	const char *bind;       /* --bind-address */
	const char *pod_cidrs;  /* given pod CIDRs */
	bool node_cidr_mode;
};

struct fixture {
	struct ipaddr ips[MAXN];
	struct ipnet np[MAXN], pods[MAXN], cluster[MAXN];
	struct plan_settings plan, s;
	struct node_given g;
	struct node n;
};

static void fixture_init(struct fixture *f, const struct given *gv)
{
	memset(f, 0, sizeof(*f));
	plan_settings_init(&f->plan);
	f->plan.node_ips = f->ips;
	f->plan.n_node_ips = addrs(gv->node_ips, f->ips);
	f->plan.nodeport_addresses = f->np;
	f->plan.n_nodeport_addresses = nets(gv->nodeport, f->np);
	f->plan.node_pod_cidrs = f->pods;
	f->plan.n_node_pod_cidrs = nets(gv->pod_cidrs, f->pods);
	if (gv->node_cidr_mode)
		f->plan.detect_local_mode = DETECT_LOCAL_NODE_CIDR;
	f->g = (struct node_given){
		.plan = &f->plan,
		.hostname = "node-a",
		.zone = gv->zone,
		.node_ips_given = gv->node_ips != NULL,
		.nodeport_primary = gv->primary,
		.bind_address_set = gv->bind != NULL,
	};
	if (gv->bind)
		assert_int_equal(ipaddr_parse(gv->bind, &f->g.bind_address), 0);
	f->s = f->plan;
	assert_int_equal(node_init(&f->n, &f->g, &f->s), 0);
}

static void check_node(const struct fixture *f, const char *zone, const char *node_ips,
		       const char *nodeport)
{
	char buf[512];

	assert_string_equal(f->s.hostname, "node-a");
	if (zone)
		assert_string_equal(f->s.zone, zone);
	else
		assert_null(f->s.zone);
	fmt_addrs(f->s.node_ips, f->s.n_node_ips, buf, sizeof(buf));
	assert_string_equal(buf, node_ips);
	fmt_nets(f->s.nodeport_addresses, f->s.n_nodeport_addresses, buf, sizeof(buf));
	assert_string_equal(buf, nodeport);
}

/* The Node object's facts (zone, addresses), then the expected settings. */
static const struct object_case {
	const char *name;
	struct given g;
	const char *init_np;      /* node-port addresses before the Node is seen */
	const char *obj_zone;
	const char *obj_ips;
	int ret;                  /* node_set_object() */
	const char *zone, *node_ips, *nodeport;
} object_cases[] = {
	{ "nothing given: the Node's zone and IPs", { 0 }, "",
	  "zone-1", "198.18.0.1 2001:2::1", 1, "zone-1", "198.18.0.1 2001:2::1", "" },
	{ "zone given wins over the Node's", { .zone = "mine" }, "",
	  "zone-1", "198.18.0.1", 1, "mine", "198.18.0.1", "" },
	{ "node IPs given win over the Node's", { .node_ips = "198.18.0.9" }, "",
	  "zone-1", "198.18.0.1", 1, "zone-1", "198.18.0.9", "" },
	{ "node IPs and zone given: nothing changes", { .zone = "z", .node_ips = "198.18.0.9" }, "",
	  "zone-1", "198.18.0.1", 0, "z", "198.18.0.9", "" },
	{ "bind address first, not twice", { .bind = "198.18.0.2" }, "",
	  NULL, "198.18.0.1 198.18.0.2", 1, NULL, "198.18.0.2 198.18.0.1", "" },
	{ "primary: placeholders until the Node, then its IPv4", { .primary = true },
	  "0.0.0.0/32 ::/128", NULL, "198.18.0.1 198.18.0.3", 1, NULL,
	  "198.18.0.1 198.18.0.3", "198.18.0.1/32 ::/128" },
	{ "primary: each family's first, after the given CIDRs",
	  { .primary = true, .nodeport = "198.19.0.0/16" }, "198.19.0.0/16 0.0.0.0/32 ::/128",
	  NULL, "2001:2::5 198.18.0.1 2001:2::6", 1, NULL, "2001:2::5 198.18.0.1 2001:2::6",
	  "198.19.0.0/16 2001:2::5/128 198.18.0.1/32" },
	{ "primary with a bind address: the bind address is primary",
	  { .primary = true, .bind = "198.18.0.7" }, "0.0.0.0/32 ::/128", NULL, "198.18.0.1",
	  1, NULL, "198.18.0.7 198.18.0.1", "198.18.0.7/32 ::/128" },
	{ "primary, Node without addresses: placeholders stay", { .primary = true },
	  "0.0.0.0/32 ::/128", "zone-2", NULL, 1, "zone-2", "", "0.0.0.0/32 ::/128" },
	{ "no zone on the Node: none", { 0 }, "", "", "198.18.0.1", 1, NULL, "198.18.0.1", "" },
};

static void test_object(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(object_cases); i++) {
		const struct object_case *c = &object_cases[i];
		struct fixture f;
		struct ipaddr ips[MAXN];
		size_t k = addrs(c->obj_ips, ips);
		char buf[512];

		print_message("  %s\n", c->name);
		fixture_init(&f, &c->g);
		fmt_nets(f.s.nodeport_addresses, f.s.n_nodeport_addresses, buf, sizeof(buf));
		assert_string_equal(buf, c->init_np);
		assert_int_equal(node_set_object(&f.n, c->obj_zone, ips, k), c->ret);
		check_node(&f, c->zone, c->node_ips, c->nodeport);
		/* The same again changes nothing. */
		assert_int_equal(node_set_object(&f.n, c->obj_zone, ips, k), 0);
		check_node(&f, c->zone, c->node_ips, c->nodeport);
		node_done(&f.n);
	}
}

/* Given node IPs double as the local addresses until some are learnt. */
static void test_addresses(void **state)
{
	struct fixture f;
	struct ipaddr a[MAXN];
	char buf[512];
	size_t k;

	(void)state;
	fixture_init(&f, &(struct given){ .node_ips = "198.18.0.9" });
	fmt_addrs(f.s.local_addrs, f.s.n_local_addrs, buf, sizeof(buf));
	assert_string_equal(buf, "198.18.0.9");
	k = addrs("127.0.0.1 198.18.0.1 ::1", a);
	assert_int_equal(node_set_addresses(&f.n, a, k), 1);
	assert_int_equal(node_set_addresses(&f.n, a, k), 0);
	fmt_addrs(f.s.local_addrs, f.s.n_local_addrs, buf, sizeof(buf));
	assert_string_equal(buf, "127.0.0.1 198.18.0.1 ::1");
	/* The node IPs stay the given ones. */
	fmt_addrs(f.s.node_ips, f.s.n_node_ips, buf, sizeof(buf));
	assert_string_equal(buf, "198.18.0.9");
	assert_int_equal(node_set_addresses(&f.n, a, 2), 1);
	assert_int_equal(node_set_addresses(&f.n, NULL, 0), 1);
	assert_int_equal(f.s.n_local_addrs, 0);
	assert_int_equal(node_set_addresses(&f.n, NULL, 0), 0);
	node_done(&f.n);
}

static const struct pod_case {
	struct given g;
	const char *obj;
	int ret;
	const char *after;
} pod_cases[] = {
	{ { 0 }, "198.19.1.0/24", 0, "" },                            /* not NodeCIDR mode */
	{ { .node_cidr_mode = true }, "198.19.1.0/24 2001:2:0:1::/64", 1,
	  "198.19.1.0/24 2001:2:0:1::/64" },
	{ { .node_cidr_mode = true, .pod_cidrs = "198.19.9.0/24" }, "198.19.1.0/24", 0,
	  "198.19.9.0/24" },                                         /* given ones win */
	{ { .node_cidr_mode = true }, NULL, 0, "" },                  /* none, as before */
};

static void test_pod_cidrs(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(pod_cases); i++) {
		struct fixture f;
		struct ipnet v[MAXN];
		size_t k = nets(pod_cases[i].obj, v);
		char buf[512];

		fixture_init(&f, &pod_cases[i].g);
		assert_int_equal(node_set_pod_cidrs(&f.n, v, k), pod_cases[i].ret);
		assert_int_equal(node_set_pod_cidrs(&f.n, v, k), 0);
		fmt_nets(f.s.node_pod_cidrs, f.s.n_node_pod_cidrs, buf, sizeof(buf));
		assert_string_equal(buf, pod_cases[i].after);
		node_done(&f.n);
	}
}

static void test_matter_and_global6(void **state)
{
	static const struct {
		const char *nodeport;
		bool matter;
	} m[] = {
		{ NULL, false },
		{ "0.0.0.0/0 ::/0", false },
		{ "198.18.0.0/15", true },
		{ "0.0.0.0/0 2001:2::/48", true },
	};
	static const struct {
		const char *local, *node_ips;
		bool global6;
	} g6[] = {
		{ NULL, NULL, false },
		{ "::1 fe80::1 :: 198.18.0.1", NULL, false },
		{ "::1 2001:2::1", NULL, true },
		{ NULL, "2001:2::7", true },
		{ "fe80::2", "198.18.0.1", false },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(m); i++) {
		struct plan_settings s;
		struct ipnet v[MAXN];

		plan_settings_init(&s);
		s.nodeport_addresses = v;
		s.n_nodeport_addresses = nets(m[i].nodeport, v);
		assert_int_equal(node_addresses_matter(&s), m[i].matter);
	}
	for (size_t i = 0; i < ARRAY_SIZE(g6); i++) {
		struct plan_settings s;
		struct ipaddr a[MAXN], b[MAXN];

		plan_settings_init(&s);
		s.local_addrs = a;
		s.n_local_addrs = addrs(g6[i].local, a);
		s.node_ips = b;
		s.n_node_ips = addrs(g6[i].node_ips, b);
		assert_int_equal(node_has_global6(&s), g6[i].global6);
	}
}

static const struct family_case {
	const char *local, *node_ips, *cluster, *nodeport, *pods;
	bool node_cidr_mode;
	const char *warned; /* the fields warned about, ' '-separated */
} family_cases[] = {
	/* nothing known of the node: no warning */
	{ NULL, NULL, "2001:2::/64", "198.18.0.0/15", NULL, false, "" },
	{ "198.18.0.1", NULL, "198.19.0.0/16 2001:2::/64", NULL, NULL, false, "--cluster-cidr" },
	{ NULL, "2001:2::1", "198.19.0.0/16", "198.18.0.0/15", NULL, false,
	  "--cluster-cidr --nodeport-addresses" },
	/* "all" and the "primary" placeholders are no complaint */
	{ "198.18.0.1", NULL, NULL, "0.0.0.0/0 ::/0 0.0.0.0/32 ::/128", NULL, false, "" },
	{ "198.18.0.1 2001:2::1", NULL, "198.19.0.0/16 2001:2::/64", NULL, NULL, false, "" },
	/* pod CIDRs only in NodeCIDR mode */
	{ "198.18.0.1", NULL, NULL, NULL, "2001:2:0:1::/64", false, "" },
	{ "198.18.0.1", NULL, NULL, NULL, "2001:2:0:1::/64", true, "--node-pod-cidr" },
};

static void test_families(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(family_cases); i++) {
		const struct family_case *c = &family_cases[i];
		struct ipaddr a[MAXN], b[MAXN];
		struct ipnet cl[MAXN], np[MAXN], pods[MAXN];
		struct plan_settings s;
		struct diag_list d;
		char got[256] = "";

		plan_settings_init(&s);
		s.local_addrs = a;
		s.n_local_addrs = addrs(c->local, a);
		s.node_ips = b;
		s.n_node_ips = addrs(c->node_ips, b);
		s.cluster_cidrs = cl;
		s.n_cluster_cidrs = nets(c->cluster, cl);
		s.nodeport_addresses = np;
		s.n_nodeport_addresses = nets(c->nodeport, np);
		s.node_pod_cidrs = pods;
		s.n_node_pod_cidrs = nets(c->pods, pods);
		if (c->node_cidr_mode)
			s.detect_local_mode = DETECT_LOCAL_NODE_CIDR;
		diag_list_init(&d);
		node_check_families(&s, &d);
		for (size_t k = 0; k < d.n; k++) {
			assert_int_equal(d.items[k].level, DIAG_WARNING);
			assert_non_null(strstr(d.items[k].msg, "but the node has no IPv"));
			snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", k ? " " : "",
				 d.items[k].field);
		}
		assert_string_equal(got, c->warned);
		diag_list_done(&d);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_object),
		cmocka_unit_test(test_addresses),
		cmocka_unit_test(test_pod_cidrs),
		cmocka_unit_test(test_matter_and_global6),
		cmocka_unit_test(test_families),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
