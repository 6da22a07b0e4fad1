/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sys/metrics.h"
#include "util.h"

static char *render(const struct metrics *m)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(metrics_write(m, f), 0);
	fclose(f);
	return buf;
}

static void test_text_format(void **state)
{
	static const double b[] = { 0.1, 1, 10 };
	struct metrics *m = metrics_new();
	char lbl[64];
	char *out;

	assert_non_null(m);
	assert_int_equal(metrics_declare(m, "t_seconds", METRIC_HISTOGRAM, "Latency\nin \\s", b, 3), 0);
	assert_int_equal(metrics_declare(m, "t_total", METRIC_COUNTER, "Things", NULL, 0), 0);
	assert_int_equal(metrics_declare(m, "t_gauge", METRIC_GAUGE, "Level", NULL, 0), 0);
	assert_int_equal(metrics_histogram_observe(m, "t_seconds", NULL, 0.05), 0);
	assert_int_equal(metrics_histogram_observe(m, "t_seconds", NULL, 0.1), 0); /* le is inclusive */
	assert_int_equal(metrics_histogram_observe(m, "t_seconds", NULL, 5), 0);
	assert_int_equal(metrics_histogram_observe(m, "t_seconds", NULL, 50), 0);
	assert_int_equal(metrics_counter_add(m, "t_total", metrics_label(lbl, sizeof(lbl), "source", "b"), 2), 0);
	assert_int_equal(metrics_counter_add(m, "t_total", metrics_label(lbl, sizeof(lbl), "source", "a\"x\\"), 1), 0);
	assert_int_equal(metrics_counter_add(m, "t_total", "source=\"b\"", 1), 0);
	assert_int_equal(metrics_gauge_set(m, "t_gauge", NULL, 1.5), 0);
	assert_int_equal(metrics_gauge_set(m, "t_gauge", NULL, 1714557600.25), 0);
	out = render(m);
	assert_string_equal(out,
		"# HELP t_seconds Latency\\nin \\\\s\n"
		"# TYPE t_seconds histogram\n"
		"t_seconds_bucket{le=\"0.1\"} 2\n"
		"t_seconds_bucket{le=\"1\"} 2\n"
		"t_seconds_bucket{le=\"10\"} 3\n"
		"t_seconds_bucket{le=\"+Inf\"} 4\n"
		"t_seconds_sum 55.15\n"
		"t_seconds_count 4\n"
		"# HELP t_total Things\n"
		"# TYPE t_total counter\n"
		"t_total{source=\"a\\\"x\\\\\"} 1\n"
		"t_total{source=\"b\"} 3\n"
		"# HELP t_gauge Level\n"
		"# TYPE t_gauge gauge\n"
		"t_gauge 1714557600.25\n");
	free(out);
	metrics_free(m);
}

static void test_labelled_histogram(void **state)
{
	static const double b[] = { 1 };
	struct metrics *m = metrics_new();
	char *out;

	assert_int_equal(metrics_declare(m, "h", METRIC_HISTOGRAM, "", b, 1), 0);
	assert_int_equal(metrics_histogram_observe(m, "h", "op=\"x\"", 2), 0);
	out = render(m);
	assert_non_null(strstr(out, "h_bucket{op=\"x\",le=\"1\"} 0\n"));
	assert_non_null(strstr(out, "h_bucket{op=\"x\",le=\"+Inf\"} 1\n"));
	assert_non_null(strstr(out, "h_sum{op=\"x\"} 2\n"));
	assert_non_null(strstr(out, "h_count{op=\"x\"} 1\n"));
	free(out);
	metrics_free(m);
}

static void test_errors(void **state)
{
	static const double bad[] = { 1, 1 };
	struct metrics *m = metrics_new();
	double v = 0;
	char small[8];

	assert_int_equal(metrics_declare(m, "1bad", METRIC_GAUGE, "", NULL, 0), -EINVAL);
	assert_int_equal(metrics_declare(m, "bad-name", METRIC_GAUGE, "", NULL, 0), -EINVAL);
	assert_int_equal(metrics_declare(m, "h", METRIC_HISTOGRAM, "", bad, 2), -EINVAL);
	assert_int_equal(metrics_declare(m, "h", METRIC_HISTOGRAM, "", NULL, 0), -EINVAL);
	assert_int_equal(metrics_declare(m, "g", METRIC_GAUGE, "", NULL, 0), 0);
	assert_int_equal(metrics_declare(m, "g", METRIC_GAUGE, "", NULL, 0), -EEXIST);
	assert_int_equal(metrics_counter_add(m, "g", NULL, 1), -EINVAL);
	assert_int_equal(metrics_gauge_set(m, "nope", NULL, 1), -ENOENT);
	assert_int_equal(metrics_declare(m, "c_total", METRIC_COUNTER, "", NULL, 0), 0);
	assert_int_equal(metrics_counter_add(m, "c_total", NULL, -1), -EINVAL);
	assert_int_equal(metrics_counter_add(m, "c_total", NULL, NAN), -EINVAL);
	assert_int_equal(metrics_get(m, "c_total", NULL, &v), -ENOENT); /* no series yet */
	assert_int_equal(metrics_counter_add(m, "c_total", NULL, 3), 0);
	assert_int_equal(metrics_get(m, "c_total", NULL, &v), 0);
	assert_true(v == 3);
	assert_null(metrics_label(small, sizeof(small), "source", "x"));
	metrics_free(m);
	metrics_free(NULL);
}

static void test_svcnat_families(void **state)
{
	static const char *const names[] = {
		"kubeproxy_sync_proxy_rules_duration_seconds",
		"kubeproxy_network_programming_duration_seconds",
		"kubeproxy_sync_proxy_rules_last_timestamp_seconds",
		"kubeproxy_sync_proxy_rules_iptables_total",
		"kubeproxy_sync_proxy_rules_iptables_restore_failures_total",
		"svcnat_services",
		"svcnat_endpoints",
		"svcnat_dispatch_chains",
		"svcnat_dispatch_trees",
		"svcnat_sync_part_duration_seconds",
		"svcnat_sync_service_ports_rebuilt",
		"svcnat_source_errors_total",
		"svcnat_conntrack_entries_deleted_total",
		"svcnat_change_to_commit_duration_seconds",
		"kubernetes_build_info",
	};
	struct metrics *m = metrics_new();
	char *out, line[160];
	size_t i;

	assert_int_equal(metrics_declare_svcnat(m), 0);
	assert_int_equal(metrics_histogram_observe(m, "kubeproxy_sync_proxy_rules_duration_seconds", NULL, 0.003), 0);
	out = render(m);
	for (i = 0; i < ARRAY_SIZE(names); i++) {
		snprintf(line, sizeof(line), "# TYPE %s ", names[i]);
		if (!strstr(out, line))
			fail_msg("family %s missing", names[i]);
	}
	/* kube-proxy's exponential buckets: 0.001 * 2^i, 15 of them. */
	assert_non_null(strstr(out, "kubeproxy_sync_proxy_rules_duration_seconds_bucket{le=\"0.002\"} 0\n"));
	assert_non_null(strstr(out, "kubeproxy_sync_proxy_rules_duration_seconds_bucket{le=\"0.004\"} 1\n"));
	assert_non_null(strstr(out, "kubeproxy_sync_proxy_rules_duration_seconds_bucket{le=\"16.384\"} 1\n"));
	/* kube-proxy's programming buckets begin with 0 (MergeBuckets), 81 in all. */
	assert_non_null(strstr(out, "kubeproxy_network_programming_duration_seconds_bucket{ip_family=\"IPv4\",le=\"0\"} 0\n"));
	assert_non_null(strstr(out, "kubeproxy_network_programming_duration_seconds_bucket{ip_family=\"IPv4\",le=\"300\"} 0\n"));
	{
		size_t nb = 0;

		for (const char *p = out; (p = strstr(p, "kubeproxy_network_programming_duration_seconds_bucket{ip_family=\"IPv4\"")); p++)
			nb++;
		assert_int_equal(nb, 82); /* and +Inf */
	}
	assert_non_null(strstr(out, "kubernetes_build_info{build_date=\"1970-01-01T00:00:00Z\",compiler=\""));
	assert_non_null(strstr(out, ",git_version=\"v" PACKAGE_VERSION "\",go_version=\"\",major=\""));
	free(out);
	metrics_free(m);
}

/* Lines of text without the process_* ones (their values change between
 * two scrapes), and with ip_family="IPv6" series dropped when drop6. */
static char *filter_lines(const char *text, bool drop6)
{
	char *out = calloc(1, strlen(text) + 1), *o = out;
	const char *p = text;

	assert_non_null(out);
	while (*p) {
		const char *e = strchr(p, '\n');
		size_t n = e ? (size_t)(e - p) + 1 : strlen(p);

		if (strncmp(p, "process_", 8) != 0 &&
		    !(drop6 && memmem(p, n, "ip_family=\"IPv6\"", 16))) {
			memcpy(o, p, n);
			o += n;
		}
		p += n;
	}
	return out;
}

/* A dual-stack node: every ip_family series also as IPv6, from the start,
 * at 0, and on its own; without metrics_declare_family() none at all. */
static void test_dual_stack_families(void **state)
{
	static const char *const v6_lines[] = {
		"kubeproxy_sync_proxy_rules_duration_seconds_count{ip_family=\"IPv6\"} 0\n",
		"kubeproxy_sync_full_proxy_rules_duration_seconds_count{ip_family=\"IPv6\"} 0\n",
		"kubeproxy_sync_partial_proxy_rules_duration_seconds_count{ip_family=\"IPv6\"} 0\n",
		"kubeproxy_network_programming_duration_seconds_bucket{ip_family=\"IPv6\",le=\"0.25\"} 0\n",
		"kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family=\"IPv6\"} 0\n",
		"kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds{ip_family=\"IPv6\"} 0\n",
		"kubeproxy_sync_proxy_rules_iptables_total{ip_family=\"IPv6\",table=\"filter\"} 0\n",
		"kubeproxy_sync_proxy_rules_iptables_total{ip_family=\"IPv6\",table=\"nat\"} 0\n",
		"kubeproxy_sync_proxy_rules_iptables_last{ip_family=\"IPv6\",table=\"filter\"} 0\n",
		"kubeproxy_sync_proxy_rules_iptables_last{ip_family=\"IPv6\",table=\"nat\"} 0\n",
		"kubeproxy_sync_proxy_rules_iptables_restore_failures_total{ip_family=\"IPv6\"} 0\n",
		"kubeproxy_sync_proxy_rules_iptables_partial_restore_failures_total{ip_family=\"IPv6\"} 0\n",
		"kubeproxy_sync_proxy_rules_no_local_endpoints_total{ip_family=\"IPv6\",traffic_policy=\"external\"} 0\n",
		"kubeproxy_sync_proxy_rules_no_local_endpoints_total{ip_family=\"IPv6\",traffic_policy=\"internal\"} 0\n",
	};
	struct metrics *m4 = metrics_new(), *m = metrics_new();
	char *out4, *out, *a, *b;
	const char *p;
	size_t n4 = 0, n6 = 0;
	double v;

	assert_int_equal(metrics_declare_svcnat(m4), 0);
	assert_int_equal(metrics_declare_svcnat(m), 0);
	assert_int_equal(metrics_declare_family(m, "IPv6"), 0);
	assert_int_equal(metrics_declare_family(m, "IPv6"), 0); /* the same series again */
	out4 = render(m4);
	out = render(m);
	assert_null(strstr(out4, "IPv6"));
	for (size_t i = 0; i < ARRAY_SIZE(v6_lines); i++)
		if (!strstr(out, v6_lines[i]))
			fail_msg("missing: %s", v6_lines[i]);
	/* As many IPv6 lines as IPv4 ones, each after its IPv4 twin. */
	for (p = out; (p = strstr(p, "ip_family=\"IPv4\"")); p++)
		n4++;
	for (p = out; (p = strstr(p, "ip_family=\"IPv6\"")); p++)
		n6++;
	assert_true(n4 > 100); /* the histograms' buckets */
	assert_int_equal(n4, n6);
	assert_true(strstr(out, "kubeproxy_sync_proxy_rules_iptables_total{ip_family=\"IPv4\",table=\"nat\"}") <
		    strstr(out, "kubeproxy_sync_proxy_rules_iptables_total{ip_family=\"IPv6\",table=\"filter\"}"));
	/* Without the IPv6 series, the text is the IPv4-only one. */
	a = filter_lines(out4, false);
	b = filter_lines(out, true);
	assert_string_equal(a, b);
	free(a);
	free(b);
	/* The families' series are apart. */
	assert_int_equal(metrics_gauge_set(m, "kubeproxy_sync_proxy_rules_iptables_total",
					   "ip_family=\"IPv6\",table=\"nat\"", 7), 0);
	assert_int_equal(metrics_get(m, "kubeproxy_sync_proxy_rules_iptables_total",
				     "ip_family=\"IPv4\",table=\"nat\"", &v), 0);
	assert_true(v == 0);
	assert_int_equal(metrics_get(m, "kubeproxy_sync_proxy_rules_iptables_total",
				     "ip_family=\"IPv6\",table=\"nat\"", &v), 0);
	assert_true(v == 7);
	free(out4);
	free(out);
	metrics_free(m4);
	metrics_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text_format),
		cmocka_unit_test(test_labelled_histogram),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_svcnat_families),
		cmocka_unit_test(test_dual_stack_families),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
