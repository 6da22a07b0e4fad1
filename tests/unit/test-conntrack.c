/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Which UDP conntrack entries are stale, after kube-proxy's reconciler. */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/model.h"
#include "sys/conntrack.h"
#include "util.h"

static struct ipaddr ip(const char *s)
{
	struct ipaddr a = { 0 };

	a.family = AF_INET;
	assert_int_equal(inet_pton(AF_INET, s, &a.u.v4), 1);
	return a;
}

/*
 * dns   UDP 198.19.0.10:53, external 198.18.200.1, LB 198.18.200.2, node
 *       port 30053; endpoints 198.18.65.2 (ready), 198.18.66.2 (ready),
 *       198.18.65.9 (not serving).
 * empty UDP 198.19.0.20:5000, node port 30500, no endpoints.
 * web   TCP 198.19.0.30:80 with an endpoint (TCP: never touched).
 * gone  UDP 198.19.0.40:6000, skipped (headless): not indexed.
 */
static struct ipaddr dns_cips[1], dns_ext[1], dns_lb[1], empty_cips[1], web_cips[1], gone_cips[1];
static struct endpoint dns_eps[3], web_eps[1], gone_eps[1];
static struct svc_port ports[4];
static struct desired d = { ports, 4 };

static int setup(void **state)
{
	dns_cips[0] = ip("198.19.0.10");
	dns_ext[0] = ip("198.18.200.1");
	dns_lb[0] = ip("198.18.200.2");
	empty_cips[0] = ip("198.19.0.20");
	web_cips[0] = ip("198.19.0.30");
	gone_cips[0] = ip("198.19.0.40");
	dns_eps[0] = (struct endpoint){ .addr = ip("198.18.66.2"), .port = 53, .ready = true, .serving = true };
	dns_eps[1] = (struct endpoint){ .addr = ip("198.18.65.2"), .port = 53, .ready = true, .serving = true };
	dns_eps[2] = (struct endpoint){ .addr = ip("198.18.65.9"), .port = 53 };
	web_eps[0] = (struct endpoint){ .addr = ip("198.18.65.3"), .port = 8080, .ready = true, .serving = true };
	gone_eps[0] = (struct endpoint){ .addr = ip("198.18.65.4"), .port = 6000, .ready = true, .serving = true };
	ports[0] = (struct svc_port){
		.protocol = PROTO_UDP, .port = 53, .node_port = 30053,
		.cluster_ips = dns_cips, .n_cluster_ips = 1,
		.external_ips = dns_ext, .n_external_ips = 1,
		.lb_ips = dns_lb, .n_lb_ips = 1,
		.endpoints = dns_eps, .n_endpoints = 3,
	};
	ports[1] = (struct svc_port){
		.protocol = PROTO_UDP, .port = 5000, .node_port = 30500,
		.cluster_ips = empty_cips, .n_cluster_ips = 1,
	};
	ports[2] = (struct svc_port){
		.protocol = PROTO_TCP, .port = 80,
		.cluster_ips = web_cips, .n_cluster_ips = 1,
		.endpoints = web_eps, .n_endpoints = 1,
	};
	ports[3] = (struct svc_port){
		.protocol = PROTO_UDP, .port = 6000, .skipped = true,
		.cluster_ips = gone_cips, .n_cluster_ips = 1,
		.endpoints = gone_eps, .n_endpoints = 1,
	};
	return 0;
}

static const struct {
	const char *what;
	uint8_t proto;
	const char *dst;
	uint16_t dport;
	const char *reply_src;
	bool stale;
} cases[] = {
	{ "to a serving endpoint", PROTO_UDP, "198.19.0.10", 53, "198.18.65.2", false },
	{ "to the other serving endpoint", PROTO_UDP, "198.19.0.10", 53, "198.18.66.2", false },
	{ "to a removed endpoint", PROTO_UDP, "198.19.0.10", 53, "198.18.65.77", true },
	{ "to a not-serving endpoint", PROTO_UDP, "198.19.0.10", 53, "198.18.65.9", true },
	{ "made while rejecting (not NATed)", PROTO_UDP, "198.19.0.10", 53, "198.19.0.10", true },
	{ "external IP, removed endpoint", PROTO_UDP, "198.18.200.1", 53, "198.18.65.77", true },
	{ "external IP, live endpoint", PROTO_UDP, "198.18.200.1", 53, "198.18.66.2", false },
	{ "LB IP, removed endpoint", PROTO_UDP, "198.18.200.2", 53, "198.18.65.77", true },
	{ "node port on any address, removed endpoint", PROTO_UDP, "198.18.0.1", 30053, "198.18.65.77", true },
	{ "node port, live endpoint", PROTO_UDP, "198.18.0.1", 30053, "198.18.65.2", false },
	{ "other port of the cluster IP", PROTO_UDP, "198.19.0.10", 54, "198.18.65.77", false },
	{ "TCP to the same frontend", PROTO_TCP, "198.19.0.10", 53, "198.18.65.77", false },
	{ "TCP service", PROTO_TCP, "198.19.0.30", 80, "198.18.65.99", false },
	{ "no endpoints, still NATed to a removed one", PROTO_UDP, "198.19.0.20", 5000, "198.18.65.5", true },
	{ "no endpoints, not NATed", PROTO_UDP, "198.19.0.20", 5000, "198.19.0.20", false },
	{ "no endpoints, node port NATed", PROTO_UDP, "198.18.0.1", 30500, "198.18.65.5", true },
	{ "no endpoints, node port not NATed", PROTO_UDP, "198.18.0.1", 30500, "198.18.0.1", false },
	{ "skipped service", PROTO_UDP, "198.19.0.40", 6000, "198.18.65.99", false },
	{ "unrelated UDP", PROTO_UDP, "198.18.1.1", 53, "198.18.1.1", false },
};

static void test_stale_table(void **state)
{
	struct conntrack_index *ix;
	size_t i;

	assert_int_equal(conntrack_index_build(&d, AF_INET, &ix), 0);
	/* dns: 3 IPs + node port; empty: 1 IP + node port. */
	assert_int_equal(conntrack_index_size(ix), 6);
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct ct_entry e = {
			.family = AF_INET,
			.proto = cases[i].proto,
			.orig_dst = ip(cases[i].dst),
			.orig_dport = cases[i].dport,
			.reply_src = ip(cases[i].reply_src),
		};

		if (conntrack_entry_stale(ix, &e) != cases[i].stale)
			fail_msg("%s: expected %s", cases[i].what, cases[i].stale ? "stale" : "kept");
	}
	conntrack_index_free(ix);
}

static void test_family_and_empty(void **state)
{
	struct desired none = { 0 };
	struct conntrack_index *ix;
	struct ct_entry e = {
		.family = AF_INET6, .proto = PROTO_UDP, .orig_dst = ip("198.19.0.10"),
		.orig_dport = 53, .reply_src = ip("198.18.65.77"),
	};

	assert_int_equal(conntrack_index_build(&d, AF_INET, &ix), 0);
	assert_false(conntrack_entry_stale(ix, &e)); /* another family */
	conntrack_index_free(ix);
	assert_int_equal(conntrack_index_build(&none, AF_INET, &ix), 0);
	assert_int_equal(conntrack_index_size(ix), 0);
	e.family = AF_INET;
	assert_false(conntrack_entry_stale(ix, &e));
	conntrack_index_free(ix);
	conntrack_index_free(NULL);
}


static struct ipaddr ip6(const char *s)
{
	struct ipaddr a = { 0 };

	a.family = AF_INET6;
	assert_int_equal(inet_pton(AF_INET6, s, &a.u.v6), 1);
	return a;
}

/* Dual-stack (issue 14): one index of both families (0), each entry judged
 * by the endpoints of its own family; an IPv4 index ignores IPv6 entries. */
static void test_dual_stack(void **state)
{
	struct ipaddr cips[2] = { ip("198.19.0.50"), ip6("2001:2:0:f000::50") };
	struct endpoint eps[2] = {
		{ .addr = ip("198.18.65.50"), .port = 53, .ready = true, .serving = true },
		{ .addr = ip6("2001:2:0:65::50"), .port = 53, .ready = true, .serving = true },
	};
	struct svc_port p = {
		.protocol = PROTO_UDP, .port = 53, .node_port = 30054,
		.cluster_ips = cips, .n_cluster_ips = 2, .endpoints = eps, .n_endpoints = 2,
	};
	struct desired dd = { &p, 1 };
	struct conntrack_index *ix;
	struct ct_entry e = {
		.family = AF_INET6, .proto = PROTO_UDP, .orig_dst = ip6("2001:2:0:f000::50"),
		.orig_dport = 53, .reply_src = ip6("2001:2:0:65::77"),
	};

	(void)state;
	assert_int_equal(conntrack_index_build(&dd, 0, &ix), 0);
	assert_int_equal(conntrack_index_size(ix), 3); /* 2 cluster IPs + node port */
	assert_true(conntrack_entry_stale(ix, &e));    /* removed IPv6 endpoint */
	e.reply_src = ip6("2001:2:0:65::50");
	assert_false(conntrack_entry_stale(ix, &e));   /* live IPv6 endpoint */
	e.orig_dst = ip6("2001:2::1");
	e.orig_dport = 30054;
	e.reply_src = ip6("2001:2:0:65::77");
	assert_true(conntrack_entry_stale(ix, &e));    /* IPv6 node port, removed endpoint */
	e = (struct ct_entry){ .family = AF_INET, .proto = PROTO_UDP, .orig_dst = ip("198.19.0.50"),
			       .orig_dport = 53, .reply_src = ip("198.18.65.50") };
	assert_false(conntrack_entry_stale(ix, &e));   /* live IPv4 endpoint */
	e.reply_src = ip("198.18.65.77");
	assert_true(conntrack_entry_stale(ix, &e));
	conntrack_index_free(ix);

	assert_int_equal(conntrack_index_build(&dd, AF_INET, &ix), 0);
	assert_int_equal(conntrack_index_size(ix), 2);
	e = (struct ct_entry){ .family = AF_INET6, .proto = PROTO_UDP,
			       .orig_dst = ip6("2001:2:0:f000::50"), .orig_dport = 53,
			       .reply_src = ip6("2001:2:0:65::77") };
	assert_false(conntrack_entry_stale(ix, &e));
	conntrack_index_free(ix);
}

/*
 * kube-proxy's TestDeleteEndpointConnections (pkg/proxy/iptables/
 * proxier_test.go), its eight cases with their addresses: a ClusterIP
 * service gets one endpoint, then loses it.  kube-proxy runs
 * "conntrack -D --orig-dst SVC -p udp [-f ipv6]" when the endpoint comes
 * (entries made while the service rejected) and "conntrack -D --orig-dst
 * SVC --dst-nat EP -p udp [-f ipv6]" when it goes, for UDP only; TCP and
 * SCTP entries are never touched.  Here: those entries are stale in the
 * index of the state after each step, of the case's family (the "-f
 * ipv6"), and only for UDP.  The two error cases differ from "V4 UDP" only
 * in what the conntrack command answers (nothing here runs it).
 */
static void test_kp_delete_endpoint_connections(void **state)
{
	static const struct {
		const char *description;
		uint8_t proto;
		const char *svc_ip, *ep_ip;
	} kp[] = {
		{ "V4 UDP", PROTO_UDP, "172.30.1.1", "10.240.0.3" },
		{ "V4 TCP", PROTO_TCP, "172.30.2.2", "10.240.0.4" },
		{ "V4 SCTP", PROTO_SCTP, "172.30.3.3", "10.240.0.5" },
		{ "V4 UDP, nothing to delete, benign error", PROTO_UDP, "172.30.4.4", "10.240.0.6" },
		{ "V4 UDP, unexpected error, should be glogged", PROTO_UDP, "172.30.5.5", "10.240.0.7" },
		{ "V6 UDP", PROTO_UDP, "fd00:1234::20", "2001:db8::2" },
		{ "V6 TCP", PROTO_TCP, "fd00:1234::30", "2001:db8::3" },
		{ "V6 SCTP", PROTO_SCTP, "fd00:1234::40", "2001:db8::4" },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(kp); i++) {
		bool v6 = strchr(kp[i].svc_ip, ':') != NULL;
		struct ipaddr cip = v6 ? ip6(kp[i].svc_ip) : ip(kp[i].svc_ip);
		struct ipaddr epip = v6 ? ip6(kp[i].ep_ip) : ip(kp[i].ep_ip);
		struct endpoint ep = { .addr = epip, .port = 80, .ready = true, .serving = true };
		struct svc_port p = { .protocol = kp[i].proto, .port = 80, .cluster_ips = &cip,
				      .n_cluster_ips = 1, .endpoints = &ep, .n_endpoints = 1 };
		struct desired dd = { &p, 1 };
		struct ct_entry rejected = { .family = cip.family, .proto = kp[i].proto,
					     .orig_dst = cip, .orig_dport = 80, .reply_src = cip };
		struct ct_entry to_ep = rejected;
		struct conntrack_index *ix;
		bool udp = kp[i].proto == PROTO_UDP;

		print_message("  case: %s\n", kp[i].description);
		to_ep.reply_src = epip;
		/* the endpoint added: entries made while rejecting go */
		assert_int_equal(conntrack_index_build(&dd, 0, &ix), 0);
		if (conntrack_entry_stale(ix, &rejected) != udp)
			fail_msg("%s: the service's un-NATed entry %s", kp[i].description,
				 udp ? "kept" : "deleted");
		assert_false(conntrack_entry_stale(ix, &to_ep));
		conntrack_index_free(ix);
		/* the endpoint removed: entries DNATed to it go */
		p.n_endpoints = 0;
		assert_int_equal(conntrack_index_build(&dd, 0, &ix), 0);
		if (conntrack_entry_stale(ix, &to_ep) != udp)
			fail_msg("%s: the entry DNATed to the removed endpoint %s", kp[i].description,
				 udp ? "kept" : "deleted");
		conntrack_index_free(ix);
		/* a one-family index never touches the other family ("-f ipv6") */
		assert_int_equal(conntrack_index_build(&dd, v6 ? AF_INET : AF_INET6, &ix), 0);
		assert_false(conntrack_entry_stale(ix, &to_ep));
		conntrack_index_free(ix);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stale_table),
		cmocka_unit_test(test_family_and_empty),
		cmocka_unit_test(test_dual_stack),
		cmocka_unit_test(test_kp_delete_endpoint_connections),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
