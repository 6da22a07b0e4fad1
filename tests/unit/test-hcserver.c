/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The health-check servers' pure half: which services get one (LoadBalancer,
 * externalTrafficPolicy Local, a healthCheckNodePort), their local endpoint
 * counts as kube-proxy's LocalReadyEndpoints() (ready, on this node,
 * distinct IPs over the service's ports), and kube-proxy's exact body.
 * Their listening addresses per family (kube-proxy's nodePortAddresses per
 * proxier), and servers on IPv4 and IPv6 loopback (127.0.0.1, ::1).  The
 * HTTP answers: tests/e2e/daemon-healthcheck.sh.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "sys/hcserver.h"
#include "sys/loop.h"
#include "util.h"

static struct endpoint ep(const char *ip, uint16_t port, bool ready, bool local)
{
	struct endpoint e = { .port = port, .ready = ready, .serving = ready, .is_local = local };

	assert_int_equal(ipaddr_parse(ip, &e.addr), 0);
	return e;
}

static void test_wanted(void **state)
{
	struct endpoint a[] = {
		ep("198.18.65.10", 80, true, true), ep("198.18.65.11", 80, false, true),
		ep("198.18.65.12", 80, true, false), ep("198.18.65.13", 80, true, true),
		/* a dual-stack service's IPv6 endpoints count for IPv6 only */
		ep("2001:2:0:65::10", 80, true, true), ep("2001:2:0:65::11", 80, false, true),
		ep("2001:2:0:66::10", 80, true, false),
	};
	struct endpoint b[] = {
		ep("198.18.65.10", 443, true, true), ep("198.18.65.14", 443, true, true),
	};
	struct svc_port ports[] = {
		{ .ns = "ns", .name = "lb", .port_name = "http", .type = SVC_LOAD_BALANCER,
		  .ext_policy = POLICY_LOCAL, .health_check_node_port = 32000, .endpoints = a,
		  .n_endpoints = ARRAY_SIZE(a) },
		{ .ns = "ns", .name = "lb", .port_name = "https", .type = SVC_LOAD_BALANCER,
		  .ext_policy = POLICY_LOCAL, .health_check_node_port = 32000, .endpoints = b,
		  .n_endpoints = 2 },
		/* Cluster policy, NodePort, skipped, no port: none */
		{ .ns = "ns", .name = "cluster", .type = SVC_LOAD_BALANCER,
		  .ext_policy = POLICY_CLUSTER, .health_check_node_port = 32001 },
		{ .ns = "ns", .name = "np", .type = SVC_NODE_PORT, .ext_policy = POLICY_LOCAL,
		  .health_check_node_port = 32002 },
		{ .ns = "ns", .name = "headless", .type = SVC_LOAD_BALANCER, .skipped = true,
		  .ext_policy = POLICY_LOCAL, .health_check_node_port = 32003 },
		{ .ns = "a", .name = "empty", .type = SVC_LOAD_BALANCER, .ext_policy = POLICY_LOCAL,
		  .health_check_node_port = 32004 },
	};
	struct desired d = { .ports = ports, .n_ports = ARRAY_SIZE(ports) };
	struct hc_want *w = NULL;
	int n = hc_wanted(&d, &w);

	assert_int_equal(n, 2);
	assert_string_equal(w[0].ns, "a");
	assert_int_equal(w[0].port, 32004);
	assert_int_equal(w[0].local_endpoints[HC_IPV4], 0);
	assert_int_equal(w[0].local_endpoints[HC_IPV6], 0);
	assert_string_equal(w[1].name, "lb");
	assert_int_equal(w[1].port, 32000);
	/* ready local IPs: .10 and .13 on http, .10 and .14 on https: three;
	 * IPv6: 2001:2:0:65::10 (::11 is not ready, 66::10 not local) */
	assert_int_equal(w[1].local_endpoints[HC_IPV4], 3);
	assert_int_equal(w[1].local_endpoints[HC_IPV6], 1);
	free(w);
}

static void test_body(void **state)
{
	char *b = hc_body("e2e", "lb", 1, true);

	assert_string_equal(b, "{\n\t\"service\": {\n\t\t\"namespace\": \"e2e\",\n\t\t\"name\": \"lb\"\n"
			       "\t},\n\t\"localEndpoints\": 1,\n\t\"serviceProxyHealthy\": true\n}");
	free(b);
	b = hc_body("x", "y", 0, false);
	assert_non_null(strstr(b, "\"localEndpoints\": 0,\n\t\"serviceProxyHealthy\": false\n}"));
	free(b);
}

static struct ipnet net(const char *s)
{
	struct ipnet n;

	assert_int_equal(ipnet_parse(s, &n), 0);
	return n;
}

static struct ipaddr addr(const char *s)
{
	struct ipaddr a;

	assert_int_equal(ipaddr_parse(s, &a), 0);
	return a;
}

/* kube-proxy listens per family on that family's node-port addresses. */
static void test_listen_binds(void **state)
{
	struct ipaddr local[] = {
		addr("198.18.0.1"), addr("198.18.1.1"), addr("2001:2::1"), addr("2001:2:0:1::1"),
	};
	struct ipnet np[] = { net("198.18.0.0/24"), net("2001:2::/64") };
	struct plan_settings s = { .family = AF_INET, .local_addrs = local,
				   .n_local_addrs = ARRAY_SIZE(local) };
	char b[8][HC_BIND_LEN];
	size_t n;

	/* no --nodeport-addresses: every address of each family */
	n = hc_listen_binds(&s, AF_INET, 32000, b, ARRAY_SIZE(b));
	assert_int_equal(n, 1);
	assert_string_equal(b[0], "0.0.0.0:32000");
	n = hc_listen_binds(&s, AF_UNSPEC, 32000, b, ARRAY_SIZE(b));
	assert_int_equal(n, 2);
	assert_string_equal(b[0], "0.0.0.0:32000");
	assert_string_equal(b[1], "[::]:32000");
	/* CIDRs of both families: the node's addresses inside them */
	s.nodeport_addresses = np;
	s.n_nodeport_addresses = ARRAY_SIZE(np);
	n = hc_listen_binds(&s, AF_INET, 32000, b, ARRAY_SIZE(b));
	assert_int_equal(n, 1);
	assert_string_equal(b[0], "198.18.0.1:32000");
	n = hc_listen_binds(&s, AF_UNSPEC, 32001, b, ARRAY_SIZE(b));
	assert_int_equal(n, 2);
	assert_string_equal(b[0], "198.18.0.1:32001");
	assert_string_equal(b[1], "[2001:2::1]:32001");
	/* only IPv4 CIDRs: IPv6 on every address */
	s.n_nodeport_addresses = 1;
	n = hc_listen_binds(&s, AF_UNSPEC, 32000, b, ARRAY_SIZE(b));
	assert_int_equal(n, 2);
	assert_string_equal(b[0], "198.18.0.1:32000");
	assert_string_equal(b[1], "[::]:32000");
	/* ::/0 is every IPv6 address; max bounds the count */
	np[1] = net("::/0");
	s.n_nodeport_addresses = 2;
	n = hc_listen_binds(&s, AF_UNSPEC, 32000, b, ARRAY_SIZE(b));
	assert_int_equal(n, 2);
	assert_string_equal(b[1], "[::]:32000");
	assert_int_equal(hc_listen_binds(&s, AF_UNSPEC, 32000, b, 1), 1);
	assert_string_equal(b[0], "198.18.0.1:32000");
}

/* Whether something listens on ip:port (TCP; the backlog accepts). */
static bool listening(int family, const char *ip, uint16_t port)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t len;
	bool ok;
	int fd;

	if (family == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		a->sin_family = AF_INET;
		a->sin_port = htons(port);
		assert_int_equal(inet_pton(AF_INET, ip, &a->sin_addr), 1);
		len = sizeof(*a);
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		a->sin6_family = AF_INET6;
		a->sin6_port = htons(port);
		assert_int_equal(inet_pton(AF_INET6, ip, &a->sin6_addr), 1);
		len = sizeof(*a);
	}
	fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	ok = connect(fd, (struct sockaddr *)&ss, len) == 0;
	close(fd);
	return ok;
}

/* A free port on both loopbacks (bound and closed again: a small race,
 * no other process of the test uses it). */
static uint16_t free_port(void)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	uint16_t port = 0;

	if (fd < 0)
		return 0;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin6_port);
	close(fd);
	return port;
}

/* Servers on 127.0.0.1 and, dual-stack, ::1; IPv4 only: none on ::1. */
static void test_loopback_servers(void **state)
{
	struct ipaddr local[] = { addr("127.0.0.1"), addr("::1") };
	struct ipnet np[] = { net("127.0.0.1/32"), net("::1/128") };
	struct plan_settings s = { .family = AF_INET, .local_addrs = local, .n_local_addrs = 2,
				   .nodeport_addresses = np, .n_nodeport_addresses = 2 };
	struct endpoint e[] = { ep("198.18.65.10", 80, true, true) };
	struct svc_port sp = { .ns = "ns", .name = "lb", .type = SVC_LOAD_BALANCER,
			       .ext_policy = POLICY_LOCAL, .endpoints = e, .n_endpoints = 1 };
	struct desired d = { .ports = &sp, .n_ports = 1 }, none = { 0 };
	struct hc_servers *h = NULL;
	struct http_pool *pool = NULL;
	struct http_limits lim;
	struct loop *l = NULL;
	struct diag_list diags;
	uint16_t port = free_port();

	if (!port)
		skip(); /* no IPv6 loopback here */
	sp.health_check_node_port = port;
	diag_list_init(&diags);
	assert_int_equal(loop_new(&l), 0);
	http_limits_default(1024, &lim);
	assert_int_equal(http_pool_new(l, &lim, &pool), 0);
	assert_int_equal(hc_servers_new(pool, NULL, NULL, &h), 0);
	/* IPv4 only */
	assert_int_equal(hc_servers_sync(h, &d, &s, AF_INET, &diags), 0);
	assert_int_equal(diags.n, 0);
	assert_int_equal(hc_servers_count(h), 1);
	assert_true(listening(AF_INET, "127.0.0.1", port));
	assert_false(listening(AF_INET6, "::1", port));
	/* gone, then back dual-stack */
	assert_int_equal(hc_servers_sync(h, &none, &s, AF_INET, &diags), 0);
	assert_int_equal(hc_servers_count(h), 0);
	assert_false(listening(AF_INET, "127.0.0.1", port));
	assert_int_equal(hc_servers_sync(h, &d, &s, AF_UNSPEC, &diags), 0);
	assert_int_equal(diags.n, 0);
	assert_int_equal(hc_servers_count(h), 1);
	assert_true(listening(AF_INET, "127.0.0.1", port));
	assert_true(listening(AF_INET6, "::1", port));
	hc_servers_free(h);
	assert_false(listening(AF_INET6, "::1", port));
	http_pool_free(pool);
	loop_free(l);
	diag_list_done(&diags);
}

/* The node's addresses move inside --nodeport-addresses: the health check
 * listens on the new ones, no longer on the old (both families kept). */
static void test_servers_follow_addresses(void **state)
{
	struct ipaddr local[] = { addr("127.0.0.1"), addr("::1") };
	struct ipnet np[] = { net("127.0.0.0/8"), net("::1/128") };
	struct plan_settings s = { .family = AF_INET, .local_addrs = local, .n_local_addrs = 2,
				   .nodeport_addresses = np, .n_nodeport_addresses = 2 };
	struct endpoint e[] = { ep("198.18.65.10", 80, true, true) };
	struct svc_port sp = { .ns = "ns", .name = "lb", .type = SVC_LOAD_BALANCER,
			       .ext_policy = POLICY_LOCAL, .endpoints = e, .n_endpoints = 1 };
	struct desired d = { .ports = &sp, .n_ports = 1 };
	struct hc_servers *h = NULL;
	struct http_pool *pool = NULL;
	struct http_limits lim;
	struct loop *l = NULL;
	struct diag_list diags;
	uint16_t port = free_port();

	if (!port)
		skip(); /* no IPv6 loopback here */
	sp.health_check_node_port = port;
	diag_list_init(&diags);
	assert_int_equal(loop_new(&l), 0);
	http_limits_default(1024, &lim);
	assert_int_equal(http_pool_new(l, &lim, &pool), 0);
	assert_int_equal(hc_servers_new(pool, NULL, NULL, &h), 0);
	assert_int_equal(hc_servers_sync(h, &d, &s, AF_UNSPEC, &diags), 0);
	assert_true(listening(AF_INET, "127.0.0.1", port));
	assert_false(listening(AF_INET, "127.0.0.2", port));
	assert_true(listening(AF_INET6, "::1", port));
	/* 127.0.0.1 replaced by 127.0.0.2 (all of 127/8 is on lo) */
	local[0] = addr("127.0.0.2");
	assert_int_equal(hc_servers_sync(h, &d, &s, AF_UNSPEC, &diags), 0);
	assert_int_equal(diags.n, 0);
	assert_int_equal(hc_servers_count(h), 1);
	assert_true(listening(AF_INET, "127.0.0.2", port));
	assert_false(listening(AF_INET, "127.0.0.1", port));
	assert_true(listening(AF_INET6, "::1", port));
	/* unchanged: the same servers stay */
	assert_int_equal(hc_servers_sync(h, &d, &s, AF_UNSPEC, &diags), 0);
	assert_true(listening(AF_INET, "127.0.0.2", port));
	hc_servers_free(h);
	http_pool_free(pool);
	loop_free(l);
	diag_list_done(&diags);
}

/* A health check follows its service: a changed healthCheckNodePort closes
 * the old port and opens the new one; externalTrafficPolicy Cluster or a
 * type other than LoadBalancer closes it. */
static void test_servers_follow_port(void **state)
{
	struct ipaddr local[] = { addr("127.0.0.1") };
	struct ipnet np[] = { net("127.0.0.1/32") };
	struct plan_settings s = { .family = AF_INET, .local_addrs = local, .n_local_addrs = 1,
				   .nodeport_addresses = np, .n_nodeport_addresses = 1 };
	struct endpoint e[] = { ep("198.18.65.10", 80, true, true) };
	struct svc_port sp = { .ns = "ns", .name = "lb", .type = SVC_LOAD_BALANCER,
			       .ext_policy = POLICY_LOCAL, .endpoints = e, .n_endpoints = 1 };
	struct desired d = { .ports = &sp, .n_ports = 1 };
	struct hc_servers *h = NULL;
	struct http_pool *pool = NULL;
	struct http_limits lim;
	struct loop *l = NULL;
	struct diag_list diags;
	uint16_t p1 = free_port(), p2 = free_port();

	for (int i = 0; i < 10 && p1 && p2 == p1; i++)
		p2 = free_port();
	if (!p1 || !p2 || p1 == p2)
		skip(); /* no IPv6 loopback here (free_port's socket) */
	diag_list_init(&diags);
	assert_int_equal(loop_new(&l), 0);
	http_limits_default(1024, &lim);
	assert_int_equal(http_pool_new(l, &lim, &pool), 0);
	assert_int_equal(hc_servers_new(pool, NULL, NULL, &h), 0);
	sp.health_check_node_port = p1;
	assert_int_equal(hc_servers_sync(h, &d, &s, AF_INET, &diags), 0);
	assert_true(listening(AF_INET, "127.0.0.1", p1));
	sp.health_check_node_port = p2;
	assert_int_equal(hc_servers_sync(h, &d, &s, AF_INET, &diags), 0);
	assert_int_equal(diags.n, 0);
	assert_int_equal(hc_servers_count(h), 1);
	assert_true(listening(AF_INET, "127.0.0.1", p2));
	assert_false(listening(AF_INET, "127.0.0.1", p1));
	/* externalTrafficPolicy Cluster: closed; Local again: open */
	sp.ext_policy = POLICY_CLUSTER;
	assert_int_equal(hc_servers_sync(h, &d, &s, AF_INET, &diags), 0);
	assert_int_equal(hc_servers_count(h), 0);
	assert_false(listening(AF_INET, "127.0.0.1", p2));
	sp.ext_policy = POLICY_LOCAL;
	assert_int_equal(hc_servers_sync(h, &d, &s, AF_INET, &diags), 0);
	assert_true(listening(AF_INET, "127.0.0.1", p2));
	/* a NodePort service (no longer a LoadBalancer): closed */
	sp.type = SVC_NODE_PORT;
	assert_int_equal(hc_servers_sync(h, &d, &s, AF_INET, &diags), 0);
	assert_int_equal(hc_servers_count(h), 0);
	assert_false(listening(AF_INET, "127.0.0.1", p2));
	hc_servers_free(h);
	http_pool_free(pool);
	loop_free(l);
	diag_list_done(&diags);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wanted),
		cmocka_unit_test(test_body),
		cmocka_unit_test(test_listen_binds),
		cmocka_unit_test(test_loopback_servers),
		cmocka_unit_test(test_servers_follow_addresses),
		cmocka_unit_test(test_servers_follow_port),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
