/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The health-check servers' pure half: which services get one (LoadBalancer,
 * externalTrafficPolicy Local, a healthCheckNodePort), their local endpoint
 * counts as kube-proxy's LocalReadyEndpoints() (ready, on this node,
 * distinct IPs over the service's ports), and kube-proxy's exact body.
 * The servers themselves: tests/e2e/daemon-healthcheck.sh.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sys/hcserver.h"
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
	};
	struct endpoint b[] = {
		ep("198.18.65.10", 443, true, true), ep("198.18.65.14", 443, true, true),
	};
	struct svc_port ports[] = {
		{ .ns = "ns", .name = "lb", .port_name = "http", .type = SVC_LOAD_BALANCER,
		  .ext_policy = POLICY_LOCAL, .health_check_node_port = 32000, .endpoints = a,
		  .n_endpoints = 4 },
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
	assert_int_equal(w[0].local_endpoints, 0);
	assert_string_equal(w[1].name, "lb");
	assert_int_equal(w[1].port, 32000);
	/* ready local IPs: .10 and .13 on http, .10 and .14 on https: three */
	assert_int_equal(w[1].local_endpoints, 3);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wanted),
		cmocka_unit_test(test_body),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
