/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The command line and KubeProxyConfiguration files: every kube-proxy flag
 * and field svcnat implements lands in the setting it means (and the
 * planner's output changes as kube-proxy's would: see test-plan for the
 * detect-local modes), flags override the file, refusals exit 2.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/duration.h"
#include "core/model.h"
#include "core/plan.h"
#include "core/render.h"
#include "cli/config.h"
#include "cli/options.h"
#include "pipeline/pipeline.h"
#include "cli/kpconfig.h"
#include "util.h"

static char tmpdir[] = "/tmp/svcnat-test-options-XXXXXX";

static const char *write_tmp(const char *name, const char *text)
{
	static char paths[8][256];
	static unsigned next;
	char *path = paths[next++ % 8];
	FILE *f;

	snprintf(path, 256, "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

/* Parse a NULL-terminated argument list; returns the exit code (0 = go on). */
static int parse(struct svcnat_options *o, ...)
{
	char *argv[64];
	int argc = 0, r;
	bool diff = false, done = false;
	va_list ap;
	const char *a;

	argv[argc++] = "svcnat";
	va_start(ap, o);
	while ((a = va_arg(ap, const char *)) && argc < 63)
		argv[argc++] = (char *)a;
	va_end(ap);
	argv[argc] = NULL;
	options_init(o);
	r = options_parse(argc, argv, o, &diff, &done);
	return r;
}

static const char *fmt_addr(const struct ipaddr *a)
{
	static char buf[64];

	return ipaddr_fmt(a, buf, sizeof(buf));
}

static const char *fmt_net(const struct ipnet *n)
{
	static char buf[80];
	char a[64];

	snprintf(buf, sizeof(buf), "%s/%u", ipaddr_fmt(&n->addr, a, sizeof(a)), (unsigned)n->plen);
	return buf;
}

static void test_kube_proxy_flags(void **state)
{
	struct svcnat_options o;
	const char *svc = write_tmp("svc.json", "{\"kind\": \"List\", \"items\": []}");

	assert_int_equal(parse(&o, "--config", svc, "--hostname-override", " Node-A ",
			       "--bind-address", "198.18.0.1", "--cluster-cidr", "198.18.64.0/18",
			       "--iptables-masquerade-bit", "12", "--iptables-localhost-nodeports=false",
			       "--iptables-sync-period", "1m", "--iptables-min-sync-period=2s",
			       "--masquerade-all=true", "--proxy-mode", "iptables",
			       "--healthz-port", "10300", "--metrics-bind-address", "0.0.0.0:10249",
			       "--oom-score-adj=-999", "--conntrack-max-per-core", "0",
			       "--conntrack-min", "1000", "--conntrack-tcp-timeout-established", "24h",
			       "--conntrack-tcp-timeout-close-wait", "1h", "--conntrack-tcp-be-liberal",
			       "--conntrack-udp-timeout", "30s", "--conntrack-udp-timeout-stream", "2m",
			       "--bind-address-hard-fail", "--v=4", "--feature-gates", "A=true",
			       "--ipvs-scheduler", "rr", "--logtostderr=true", NULL),
			 0);
	assert_string_equal(o.hostname, "node-a");
	assert_int_equal(o.plan.n_node_ips, 1);
	assert_string_equal(fmt_addr(&o.plan.node_ips[0]), "198.18.0.1");
	assert_false(o.node_ips_given); /* the other addresses are still learnt */
	assert_int_equal(o.plan.n_cluster_cidrs, 1);
	assert_int_equal(o.plan.masquerade_bit, 12);
	assert_false(o.plan.localhost_nodeports);
	assert_string_equal(o.sync_period, "1m");
	assert_string_equal(o.min_sync_period, "2s");
	assert_true(o.plan.masquerade_all);
	assert_string_equal(o.healthz_bind_address, "0.0.0.0:10300");
	assert_string_equal(o.metrics_bind_address, "0.0.0.0:10249");
	assert_true(o.oom_score_adj_set);
	assert_int_equal(o.oom_score_adj, -999);
	assert_int_equal(o.conntrack.max_per_core, 0);
	assert_int_equal(o.conntrack.min, 1000);
	assert_true(o.conntrack.tcp_established_usec == 24ULL * 3600 * 1000000);
	assert_true(o.conntrack.tcp_close_wait_usec == 3600ULL * 1000000);
	assert_true(o.conntrack.udp_usec == 30ULL * 1000000);
	assert_true(o.conntrack.udp_stream_usec == 120ULL * 1000000);
	assert_true(o.conntrack.tcp_be_liberal);
	assert_true(o.plan.conntrack_tcp_liberal);
	assert_true(o.bind_address_hard_fail);
	assert_int_equal(o.verbose, 1);
	options_done(&o);

	/* --healthz-port 0 / --metrics-port 0 turn the servers off. */
	assert_int_equal(parse(&o, "--config", svc, "--healthz-port", "0", "--metrics-port=0", NULL), 0);
	assert_string_equal(o.healthz_bind_address, "");
	assert_string_equal(o.metrics_bind_address, "");
	options_done(&o);
	/* --bind-address 0.0.0.0 is kube-proxy's "not set". */
	assert_int_equal(parse(&o, "--config", svc, "--bind-address", "0.0.0.0", NULL), 0);
	assert_int_equal(o.plan.n_node_ips, 0);
	options_done(&o);
	/* -v N and -vv */
	assert_int_equal(parse(&o, "--config", svc, "-v", "2", NULL), 0);
	assert_int_equal(o.verbose, 0);
	options_done(&o);
	assert_int_equal(parse(&o, "--config", svc, "-vv", NULL), 0);
	assert_int_equal(o.verbose, 2);
	assert_int_equal(o.log_verbosity, 5);
	options_done(&o);
	/* klog's verbosity: -v N / --v=N as given, a bare -v the details (4) */
	assert_int_equal(parse(&o, "--config", svc, "-v", "2", NULL), 0);
	assert_int_equal(o.log_verbosity, 2);
	assert_false(o.backend.verbose);
	options_done(&o);
	assert_int_equal(parse(&o, "--config", svc, "--v=4", NULL), 0);
	assert_int_equal(o.log_verbosity, 4);
	assert_true(o.backend.verbose);
	options_done(&o);
	assert_int_equal(parse(&o, "--config", svc, "-v", NULL), 0);
	assert_int_equal(o.log_verbosity, 4);
	options_done(&o);
	assert_int_equal(parse(&o, "--config", svc, NULL), 0);
	assert_int_equal(o.log_verbosity, 0);
	assert_int_equal(o.log_format, LOG_FORMAT_OPT_UNSET);
	options_done(&o);
	/* --logging-format: text or json (component-base's registry); else exit 2 */
	assert_int_equal(parse(&o, "--config", svc, "--logging-format=json", NULL), 0);
	assert_int_equal(o.log_format, LOG_FORMAT_OPT_JSON);
	options_done(&o);
	assert_int_equal(parse(&o, "--config", svc, "--logging-format", "text", NULL), 0);
	assert_int_equal(o.log_format, LOG_FORMAT_OPT_TEXT);
	options_done(&o);
	assert_int_equal(parse(&o, "--config", svc, "--logging-format=xml", NULL), 2);
	options_done(&o);
	/* --vmodule: klog's PATTERN=N list, checked here (exit 2) */
	assert_int_equal(parse(&o, "--config", svc, "--vmodule=sync=4,kube*=5", NULL), 0);
	assert_string_equal(o.vmodule, "sync=4,kube*=5");
	options_done(&o);
	assert_int_equal(parse(&o, "--config", svc, "--vmodule", "sync", NULL), 2);
	options_done(&o);
	/* klog's --log-file / --logtostderr (default true) / --alsologtostderr */
	assert_int_equal(parse(&o, "--config", svc, NULL), 0);
	assert_true(o.logtostderr);
	assert_false(o.alsologtostderr);
	assert_null(o.log_file);
	options_done(&o);
	assert_int_equal(parse(&o, "--config", svc, "--logtostderr=false", "--alsologtostderr",
			       "--log-file", "/x/y.log", NULL), 0);
	assert_false(o.logtostderr);
	assert_true(o.alsologtostderr);
	assert_string_equal(o.log_file, "/x/y.log");
	options_done(&o);
	assert_int_equal(parse(&o, "--config", svc, "--logtostderr=maybe", NULL), 2);
	options_done(&o);
	/* --log-flush-frequency: a duration above zero, accepted (every line is written at once) */
	assert_int_equal(parse(&o, "--config", svc, "--log-flush-frequency=5s", NULL), 0);
	options_done(&o);
	assert_int_equal(parse(&o, "--config", svc, "--log-flush-frequency=0", NULL), 2);
	options_done(&o);
	assert_int_equal(parse(&o, "--config", svc, "--log-flush-frequency=often", NULL), 2);
	options_done(&o);
	/* --cleanup is kube-proxy's bool */
	assert_int_equal(parse(&o, "--cleanup=true", NULL), 0);
	assert_int_equal(o.mode, MODE_CLEANUP);
	options_done(&o);
	assert_int_equal(parse(&o, "--init-only", NULL), 0);
	assert_int_equal(o.mode, MODE_INIT_ONLY);
	options_done(&o);
}

static void test_nodeport_keywords(void **state)
{
	struct svcnat_options o;
	const char *svc = write_tmp("svc.json", "{\"kind\": \"List\", \"items\": []}");
	char buf[64];

	assert_int_equal(parse(&o, "--config", svc, "--node-ip", "198.18.0.7",
			       "--nodeport-addresses", "primary,localhost", NULL),
			 0);
	assert_int_equal(o.plan.n_nodeport_addresses, 2);
	snprintf(buf, sizeof(buf), "%s/%u", fmt_addr(&o.plan.nodeport_addresses[0].addr),
		 o.plan.nodeport_addresses[0].plen);
	assert_string_equal(buf, "127.0.0.0/8");
	snprintf(buf, sizeof(buf), "%s/%u", fmt_addr(&o.plan.nodeport_addresses[1].addr),
		 o.plan.nodeport_addresses[1].plen);
	assert_string_equal(buf, "198.18.0.7/32");
	options_done(&o);
	/* primary without a known primary IP is refused */
	assert_int_equal(parse(&o, "--config", svc, "--nodeport-addresses", "primary", NULL), 2);
	options_done(&o);
}

static void test_detect_local_flags(void **state)
{
	struct svcnat_options o;
	const char *svc = write_tmp("svc.json", "{\"kind\": \"List\", \"items\": []}");

	assert_int_equal(parse(&o, "--config", svc, "--detect-local-mode", "BridgeInterface",
			       "--pod-bridge-interface", "cbr0", NULL),
			 0);
	assert_int_equal(o.plan.detect_local_mode, DETECT_LOCAL_BRIDGE);
	assert_string_equal(o.plan.pod_bridge_interface, "cbr0");
	options_done(&o);
	assert_int_equal(parse(&o, "--config", svc, "--detect-local-mode=InterfaceNamePrefix",
			       "--pod-interface-name-prefix", "veth", NULL),
			 0);
	assert_int_equal(o.plan.detect_local_mode, DETECT_LOCAL_IFACE_PREFIX);
	assert_string_equal(o.plan.pod_interface_prefix, "veth");
	options_done(&o);
	assert_int_equal(parse(&o, "--config", svc, "--detect-local-mode=NodeCIDR",
			       "--node-pod-cidr", "198.18.65.0/24", NULL),
			 0);
	assert_int_equal(o.plan.detect_local_mode, DETECT_LOCAL_NODE_CIDR);
	assert_int_equal(o.plan.n_node_pod_cidrs, 1);
	options_done(&o);
	/* each mode without what it needs, and unknown modes: exit 2 */
	assert_int_equal(parse(&o, "--config", svc, "--detect-local-mode=BridgeInterface", NULL), 2);
	options_done(&o);
	assert_int_equal(parse(&o, "--config", svc, "--detect-local-mode=InterfaceNamePrefix", NULL), 2);
	options_done(&o);
	assert_int_equal(parse(&o, "--config", svc, "--detect-local-mode=NodeCIDR", NULL), 2);
	options_done(&o);
	/* with the API source, the Node object's spec.podCIDRs */
	assert_int_equal(parse(&o, "--kubeconfig", "/nonexistent/kubeconfig",
			       "--detect-local-mode=NodeCIDR", NULL),
			 0);
	assert_int_equal(o.plan.n_node_pod_cidrs, 0);
	options_done(&o);
	assert_int_equal(parse(&o, "--config", svc, "--detect-local-mode=Nope", NULL), 2);
	options_done(&o);
}

static void test_refusals(void **state)
{
	struct svcnat_options o;
	const char *svc = write_tmp("svc.json", "{\"kind\": \"List\", \"items\": []}");

	assert_int_equal(parse(&o, "--config", svc, "--proxy-mode", "ipvs", NULL), 2);
	options_done(&o);
	assert_int_equal(parse(&o, "--config", svc, "--proxy-mode=nftables", NULL), 2);
	options_done(&o);
	assert_int_equal(parse(&o, "--config", svc, "--oom-score-adj", "-1001", NULL), 2);
	options_done(&o);
	assert_int_equal(parse(&o, "--config", svc, "--iptables-masquerade-bit", "32", NULL), 2);
	options_done(&o);
	assert_int_equal(parse(&o, "--config", svc, "--iptables-sync-period", "5x", NULL), 2);
	options_done(&o);
	/* Dual-stack (issue 14): an IPv6 --bind-address is the IPv6 primary. */
	assert_int_equal(parse(&o, "--config", svc, "--bind-address", "2001:2::1", NULL), 0);
	assert_int_equal(o.plan.n_node_ips, 1);
	assert_int_equal(o.plan.node_ips[0].family, AF_INET6);
	options_done(&o);
	assert_int_equal(parse(&o, "--config", svc, "--no-such-flag", NULL), 2);
	options_done(&o);
	/* --dispatch (issue 13) */
	assert_int_equal(parse(&o, "--config", svc, NULL), 0);
	assert_int_equal(o.plan.dispatch, DISPATCH_AUTO);
	assert_int_equal(o.plan.dispatch_threshold, PLAN_DISPATCH_THRESHOLD);
	options_done(&o);
	assert_int_equal(parse(&o, "--config", svc, "--dispatch=tree", "--dispatch-threshold", "5",
			       NULL), 0);
	assert_int_equal(o.plan.dispatch, DISPATCH_TREE);
	assert_int_equal(o.plan.dispatch_threshold, 5);
	options_done(&o);
	assert_int_equal(parse(&o, "--config", svc, "--dispatch", "linear", NULL), 0);
	assert_int_equal(o.plan.dispatch, DISPATCH_LINEAR);
	options_done(&o);
	assert_int_equal(parse(&o, "--config", svc, "--dispatch", "binary", NULL), 2);
	options_done(&o);
	assert_int_equal(parse(&o, "--config", svc, "--dispatch-threshold", "0", NULL), 2);
	options_done(&o);
}

static const char kpc[] =
	"apiVersion: kubeproxy.config.k8s.io/v1alpha1\n"
	"kind: KubeProxyConfiguration\n"
	"bindAddress: 198.18.0.9\n"
	"hostnameOverride: Node-B\n"
	"healthzBindAddress: 198.18.0.9:10256\n"
	"metricsBindAddress: \"\"\n"
	"bindAddressHardFail: true\n"
	"clusterCIDR: 198.18.64.0/18\n"
	"mode: iptables\n"
	"nodePortAddresses: [198.18.0.0/24]\n"
	"oomScoreAdj: -998\n"
	"detectLocalMode: InterfaceNamePrefix\n"
	"detectLocal:\n"
	"  interfaceNamePrefix: veth\n"
	"  bridgeInterface: \"\"\n"
	"iptables:\n"
	"  masqueradeAll: true\n"
	"  masqueradeBit: 13\n"
	"  localhostNodePorts: false\n"
	"  minSyncPeriod: 3s\n"
	"  syncPeriod: 45s\n"
	"conntrack:\n"
	"  maxPerCore: 32768\n"
	"  min: 131072\n"
	"  tcpEstablishedTimeout: 24h0m0s\n"
	"  tcpCloseWaitTimeout: 1h0m0s\n"
	"  tcpBeLiberal: true\n"
	"  udpTimeout: 0s\n"
	"  udpStreamTimeout: 0s\n"
	"ipvs:\n"
	"  scheduler: \"\"\n"
	"  excludeCIDRs: null\n"
	"configSyncPeriod: 15m0s\n"
	"logging:\n"
	"  verbosity: 4\n";

static void test_kpconfig_file(void **state)
{
	struct svcnat_options o;
	const char *svc = write_tmp("svc.json", "{\"kind\": \"List\", \"items\": []}");
	char kp[256];

	snprintf(kp, sizeof(kp), "%s", write_tmp("kube-proxy.yaml", kpc));
	assert_int_equal(parse(&o, "--config", kp, "--config", svc, NULL), 0);
	/* taken out of the service sources */
	assert_int_equal(o.n_configs, 1);
	assert_string_equal(o.kp_config, kp);
	assert_string_equal(o.hostname, "node-b");
	assert_string_equal(fmt_addr(&o.plan.node_ips[0]), "198.18.0.9");
	assert_string_equal(o.healthz_bind_address, "198.18.0.9:10256");
	assert_null(o.metrics_bind_address); /* "" in the file: kube-proxy's default */
	assert_true(o.bind_address_hard_fail);
	assert_int_equal(o.plan.n_cluster_cidrs, 1);
	assert_int_equal(o.plan.n_nodeport_addresses, 1);
	assert_int_equal(o.oom_score_adj, -998);
	assert_int_equal(o.plan.detect_local_mode, DETECT_LOCAL_IFACE_PREFIX);
	assert_string_equal(o.plan.pod_interface_prefix, "veth");
	assert_true(o.plan.masquerade_all);
	assert_int_equal(o.plan.masquerade_bit, 13);
	assert_false(o.plan.localhost_nodeports);
	assert_string_equal(o.min_sync_period, "3s");
	assert_string_equal(o.sync_period, "45s");
	assert_int_equal(o.conntrack.max_per_core, 32768);
	assert_int_equal(o.conntrack.min, 131072);
	assert_true(o.conntrack.tcp_be_liberal);
	assert_true(o.conntrack.udp_usec == 0);
	assert_int_equal(o.verbose, 1);
	options_done(&o);

	/* Flags override the file, whatever their order. */
	assert_int_equal(parse(&o, "--iptables-masquerade-bit", "10", "--config", kp, "--config", svc,
			       "--hostname-override", "flag-node", "--masquerade-all=false", NULL),
			 0);
	assert_int_equal(o.plan.masquerade_bit, 10);
	assert_string_equal(o.hostname, "flag-node");
	assert_false(o.plan.masquerade_all);
	assert_int_equal(o.plan.n_cluster_cidrs, 1); /* from the file */
	options_done(&o);

	/* JSON works too */
	snprintf(kp, sizeof(kp), "%s",
		 write_tmp("kp.json", "{\"apiVersion\": \"kubeproxy.config.k8s.io/v1alpha1\", "
				      "\"kind\": \"KubeProxyConfiguration\", \"iptables\": "
				      "{\"masqueradeBit\": 9}, \"nodePortAddresses\": []}"));
	assert_int_equal(parse(&o, "--config", kp, "--config", svc, NULL), 0);
	assert_int_equal(o.plan.masquerade_bit, 9);
	assert_int_equal(o.plan.n_nodeport_addresses, 0);
	options_done(&o);
}

/*
 * Every KubeProxyConfiguration field svcnat implements (docs/operations.md's list, and
 * kpflags.c's table), one at a time: the field alone lands in its own
 * setting, and the flag of the same meaning, given too, wins over it.  The
 * values differ from the defaults and from each other, so a field sent to
 * a neighbour's setting, or a flag that does not mark its field as given,
 * fails here; so does a flag that marks another field as given (the file's
 * field is then dropped), checked with every other case's flag.
 */
struct kp_case {
	const char *yaml;   /* the fields, after apiVersion and kind */
	const char *flag;   /* the flag of the same meaning, with another value */
	void (*check)(const struct svcnat_options *o, bool flag);
};

/* false: check the case's own setting only (another flag set others) */
static bool ck_strict = true;

static void ck_hostname(const struct svcnat_options *o, bool flag)
{
	assert_string_equal(o->hostname, flag ? "flag-node" : "file-node");
}
static void ck_bind(const struct svcnat_options *o, bool flag)
{
	assert_true(o->plan.n_node_ips >= 1);
	assert_string_equal(fmt_addr(&o->plan.node_ips[0]), flag ? "198.18.0.8" : "198.18.0.7");
}
static void ck_healthz(const struct svcnat_options *o, bool flag)
{
	assert_string_equal(o->healthz_bind_address, flag ? "127.0.0.1:10301" : "198.18.0.7:10300");
	if (ck_strict)
		assert_null(o->metrics_bind_address);
}
static void ck_metrics(const struct svcnat_options *o, bool flag)
{
	assert_string_equal(o->metrics_bind_address, flag ? "127.0.0.1:10303" : "127.0.0.1:10302");
	if (ck_strict)
		assert_null(o->healthz_bind_address);
}
static void ck_hard_fail(const struct svcnat_options *o, bool flag)
{
	assert_int_equal(o->bind_address_hard_fail, !flag);
}
static void ck_masq_bit(const struct svcnat_options *o, bool flag)
{
	assert_int_equal(o->plan.masquerade_bit, flag ? 8 : 7);
}
static void ck_masq_all(const struct svcnat_options *o, bool flag)
{
	assert_int_equal(o->plan.masquerade_all, !flag);
}
static void ck_localhost_np(const struct svcnat_options *o, bool flag)
{
	assert_int_equal(o->plan.localhost_nodeports, flag);
}
static void ck_sync(const struct svcnat_options *o, bool flag)
{
	assert_string_equal(o->sync_period, flag ? "42s" : "41s");
	if (ck_strict)
		assert_null(o->min_sync_period);
}
static void ck_min_sync(const struct svcnat_options *o, bool flag)
{
	assert_string_equal(o->min_sync_period, flag ? "3s" : "2s");
	if (ck_strict)
		assert_null(o->sync_period);
}
static void ck_detect_mode(const struct svcnat_options *o, bool flag)
{
	assert_int_equal(o->plan.detect_local_mode,
			 flag ? DETECT_LOCAL_CLUSTER_CIDR : DETECT_LOCAL_BRIDGE);
}
static void ck_bridge(const struct svcnat_options *o, bool flag)
{
	assert_int_equal(o->plan.detect_local_mode, DETECT_LOCAL_BRIDGE);
	assert_string_equal(o->plan.pod_bridge_interface, flag ? "br9" : "cbr0");
}
static void ck_prefix(const struct svcnat_options *o, bool flag)
{
	assert_int_equal(o->plan.detect_local_mode, DETECT_LOCAL_IFACE_PREFIX);
	assert_string_equal(o->plan.pod_interface_prefix, flag ? "cali" : "veth");
}
static void ck_cidrs(const struct svcnat_options *o, bool flag)
{
	assert_int_equal(o->plan.n_cluster_cidrs, flag ? 1 : 2);
	assert_string_equal(fmt_net(&o->plan.cluster_cidrs[0]),
			    flag ? "198.18.128.0/17" : "198.18.64.0/18");
	if (!flag)
		assert_string_equal(fmt_net(&o->plan.cluster_cidrs[1]),
				    "2001:2::/64");
}
static void ck_cidr(const struct svcnat_options *o, bool flag)
{
	assert_int_equal(o->plan.n_cluster_cidrs, 1);
	assert_string_equal(fmt_net(&o->plan.cluster_cidrs[0]),
			    flag ? "198.18.128.0/17" : "198.18.64.0/18");
}
static void ck_nodeport(const struct svcnat_options *o, bool flag)
{
	assert_int_equal(o->plan.n_nodeport_addresses, 1);
	assert_string_equal(fmt_net(&o->plan.nodeport_addresses[0]),
			    flag ? "198.18.1.0/24" : "198.18.0.0/24");
}
static void ck_oom(const struct svcnat_options *o, bool flag)
{
	assert_true(o->oom_score_adj_set);
	assert_int_equal(o->oom_score_adj, flag ? -996 : -997);
}
static void ck_ct_max(const struct svcnat_options *o, bool flag)
{
	assert_int_equal(o->conntrack.max_per_core, flag ? 23456 : 12345);
	if (ck_strict)
		assert_int_equal(o->conntrack.min, -1);
}
static void ck_ct_min(const struct svcnat_options *o, bool flag)
{
	assert_int_equal(o->conntrack.min, flag ? 65432 : 54321);
	if (ck_strict)
		assert_int_equal(o->conntrack.max_per_core, -1);
}
/* The four timeouts: timeout `which` is `sec` seconds, the others not set
 * (the TCP ones then keep kube-proxy's default, the UDP ones 0: leave). */
static void ck_timeouts(const struct svcnat_options *o, size_t which, uint64_t sec)
{
	const uint64_t v[] = { o->conntrack.tcp_established_usec, o->conntrack.tcp_close_wait_usec,
			       o->conntrack.udp_usec, o->conntrack.udp_stream_usec };

	for (size_t i = 0; i < ARRAY_SIZE(v); i++)
		if (i == which)
			assert_true(v[i] == sec * 1000000);
		else if (ck_strict)
			assert_true(v[i] == (i < 2 ? CT_TIMEOUT_DEFAULT : 0));
	if (ck_strict)
		assert_false(o->conntrack.tcp_be_liberal);
}
static void ck_ct_est(const struct svcnat_options *o, bool flag)
{
	ck_timeouts(o, 0, flag ? 7200 : 10803);
}
static void ck_ct_cw(const struct svcnat_options *o, bool flag)
{
	ck_timeouts(o, 1, flag ? 1080 : 1020);
}
static void ck_ct_udp(const struct svcnat_options *o, bool flag)
{
	ck_timeouts(o, 2, flag ? 43 : 41);
}
static void ck_ct_stream(const struct svcnat_options *o, bool flag)
{
	ck_timeouts(o, 3, flag ? 128 : 127);
}
static void ck_ct_liberal(const struct svcnat_options *o, bool flag)
{
	assert_int_equal(o->conntrack.tcp_be_liberal, !flag);
	assert_int_equal(o->plan.conntrack_tcp_liberal, !flag);
	if (ck_strict)
		assert_true(o->conntrack.tcp_established_usec == CT_TIMEOUT_DEFAULT);
}
static void ck_verbosity(const struct svcnat_options *o, bool flag)
{
	assert_int_equal(o->verbose, flag ? 0 : 1);
}
static void ck_log_format(const struct svcnat_options *o, bool flag)
{
	assert_int_equal(o->log_format, flag ? LOG_FORMAT_OPT_TEXT : LOG_FORMAT_OPT_JSON);
}
static void ck_vmodule(const struct svcnat_options *o, bool flag)
{
	assert_string_equal(o->vmodule, flag ? "kube*=5" : "sync=4,src/daemon/tele*=2");
}
static void ck_kubeconfig(const struct svcnat_options *o, bool flag)
{
	assert_string_equal(o->kubeconfig, flag ? "/nonexistent/flag.conf" : "/nonexistent/file.conf");
}

static void ck_content_type(const struct svcnat_options *o, bool flag)
{
	assert_string_equal(o->kube_content_type,
			    flag ? "application/vnd.kubernetes.protobuf" : "application/json");
}

static const struct kp_case kp_cases[] = {
	{ "hostnameOverride: File-Node\n", "--hostname-override=flag-node", ck_hostname },
	{ "bindAddress: 198.18.0.7\n", "--bind-address=198.18.0.8", ck_bind },
	{ "healthzBindAddress: 198.18.0.7:10300\n", "--healthz-bind-address=127.0.0.1:10301",
	  ck_healthz },
	{ "metricsBindAddress: 127.0.0.1:10302\n", "--metrics-bind-address=127.0.0.1:10303",
	  ck_metrics },
	{ "bindAddressHardFail: true\n", "--bind-address-hard-fail=false", ck_hard_fail },
	{ "iptables:\n  masqueradeBit: 7\n", "--iptables-masquerade-bit=8", ck_masq_bit },
	{ "iptables:\n  masqueradeAll: true\n", "--masquerade-all=false", ck_masq_all },
	{ "iptables:\n  localhostNodePorts: false\n", "--iptables-localhost-nodeports=true",
	  ck_localhost_np },
	{ "iptables:\n  syncPeriod: 41s\n", "--iptables-sync-period=42s", ck_sync },
	{ "iptables:\n  minSyncPeriod: 2s\n", "--iptables-min-sync-period=3s", ck_min_sync },
	{ "detectLocalMode: BridgeInterface\ndetectLocal:\n  bridgeInterface: cbr0\n",
	  "--detect-local-mode=ClusterCIDR", ck_detect_mode },
	{ "detectLocalMode: BridgeInterface\ndetectLocal:\n  bridgeInterface: cbr0\n",
	  "--pod-bridge-interface=br9", ck_bridge },
	{ "detectLocalMode: InterfaceNamePrefix\ndetectLocal:\n  interfaceNamePrefix: veth\n",
	  "--pod-interface-name-prefix=cali", ck_prefix },
	{ "detectLocal:\n  clusterCIDRs: [198.18.64.0/18, \"2001:2::/64\"]\n",
	  "--cluster-cidr=198.18.128.0/17", ck_cidrs },
	{ "clusterCIDR: 198.18.64.0/18\n", "--cluster-cidr=198.18.128.0/17", ck_cidr },
	{ "nodePortAddresses: [198.18.0.0/24]\n", "--nodeport-addresses=198.18.1.0/24", ck_nodeport },
	{ "oomScoreAdj: -997\n", "--oom-score-adj=-996", ck_oom },
	{ "conntrack:\n  maxPerCore: 12345\n", "--conntrack-max-per-core=23456", ck_ct_max },
	{ "conntrack:\n  min: 54321\n", "--conntrack-min=65432", ck_ct_min },
	{ "conntrack:\n  tcpEstablishedTimeout: 3h0m3s\n", "--conntrack-tcp-timeout-established=2h",
	  ck_ct_est },
	{ "conntrack:\n  tcpCloseWaitTimeout: 17m\n", "--conntrack-tcp-timeout-close-wait=18m",
	  ck_ct_cw },
	{ "conntrack:\n  udpTimeout: 41s\n", "--conntrack-udp-timeout=43s", ck_ct_udp },
	{ "conntrack:\n  udpStreamTimeout: 2m7s\n", "--conntrack-udp-timeout-stream=2m8s",
	  ck_ct_stream },
	{ "conntrack:\n  tcpBeLiberal: true\n", "--conntrack-tcp-be-liberal=false", ck_ct_liberal },
	{ "logging:\n  verbosity: 4\n", "--v=0", ck_verbosity },
	{ "logging:\n  format: json\n", "--logging-format=text", ck_log_format },
	{ "logging:\n  vmodule:\n  - filePattern: sync\n    verbosity: 4\n"
	  "  - {filePattern: \"src/daemon/tele*\", verbosity: 2}\n",
	  "--vmodule=kube*=5", ck_vmodule },
	{ "clientConnection:\n  kubeconfig: /nonexistent/file.conf\n",
	  "--kubeconfig=/nonexistent/flag.conf", ck_kubeconfig },
	{ "clientConnection:\n  contentType: application/json\n",
	  "--kube-api-content-type=application/vnd.kubernetes.protobuf", ck_content_type },
};

/* --kube-api-content-type: kube-proxy's default unless given; only the
 * types svcnat reads; WatchListClient in the feature gates. */
static void test_kube_content_type(void **state)
{
	struct svcnat_options o;
	char svc[256];

	(void)state;
	snprintf(svc, sizeof(svc), "%s", write_tmp("svc.json", "{\"kind\": \"List\", \"items\": []}"));
	assert_int_equal(parse(&o, "--config", svc, NULL), 0);
	assert_null(o.kube_content_type);
	assert_false(o.kube_no_watch_list);
	options_done(&o);
	assert_int_equal(parse(&o, "--config", svc, "--kube-api-content-type", "application/json",
			       "--feature-gates", "WatchListClient=false", NULL),
			 0);
	assert_string_equal(o.kube_content_type, "application/json");
	assert_true(o.kube_no_watch_list);
	options_done(&o);
	assert_int_equal(parse(&o, "--config", svc, "--kube-api-content-type=application/json",
			       "--kube-api-content-type=", NULL),
			 0);
	assert_null(o.kube_content_type);
	options_done(&o);
	assert_int_equal(parse(&o, "--config", svc, "--kube-api-content-type", "application/cbor",
			       NULL),
			 2);
	options_done(&o);
	assert_int_equal(parse(&o, "--config", svc, "--kube-api-content-type", "text/plain", NULL),
			 2);
	options_done(&o);
}

/* clientConnection.acceptContentTypes: no flag (kube-proxy has none);
 * taken as given, refused (exit 2) when svcnat could not send it or read
 * any answer it allows. */
static void test_kpconfig_accept_types(void **state)
{
	static const struct {
		const char *yaml, *want;
		int rc;
	} cases[] = {
		{ "clientConnection:\n  acceptContentTypes: application/json\n", "application/json", 0 },
		{ "clientConnection:\n  acceptContentTypes: 'application/vnd.kubernetes.protobuf, "
		  "application/json'\n",
		  "application/vnd.kubernetes.protobuf, application/json", 0 },
		{ "clientConnection:\n  acceptContentTypes: \"\"\n", NULL, 0 },
		{ "clientConnection:\n  acceptContentTypes: null\n", NULL, 0 },
		{ "clientConnection:\n  acceptContentTypes: application/cbor\n", NULL, 2 },
		{ "clientConnection:\n  acceptContentTypes: \"application/json\\r\\nX: y\"\n", NULL, 2 },
	};
	char svc[256];

	(void)state;
	snprintf(svc, sizeof(svc), "%s", write_tmp("svc.json", "{\"kind\": \"List\", \"items\": []}"));
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct svcnat_options o;
		char text[512], kp[256];
		int r;

		snprintf(text, sizeof(text), "apiVersion: kubeproxy.config.k8s.io/v1alpha1\n"
					     "kind: KubeProxyConfiguration\n%s", cases[i].yaml);
		snprintf(kp, sizeof(kp), "%s", write_tmp("accept.yaml", text));
		r = parse(&o, "--config", kp, "--config", svc, NULL);
		if (r != cases[i].rc)
			fail_msg("case %zu: exit %d, want %d", i, r, cases[i].rc);
		if (r == 0 && cases[i].want)
			assert_string_equal(o.kube_accept_content_types, cases[i].want);
		else if (r == 0)
			assert_null(o.kube_accept_content_types);
		options_done(&o);
	}
}

/* Whether two "--name=value" flags name the same option. */
static bool same_flag(const char *a, const char *b)
{
	size_t n = strcspn(a, "=");

	return n == strcspn(b, "=") && strncmp(a, b, n) == 0;
}

static void test_kpconfig_each_field(void **state)
{
	char svc[256];

	/* write_tmp()'s names are reused after 8 calls: keep a copy */
	snprintf(svc, sizeof(svc), "%s", write_tmp("svc.json", "{\"kind\": \"List\", \"items\": []}"));

	for (size_t i = 0; i < ARRAY_SIZE(kp_cases); i++) {
		struct svcnat_options o;
		char text[512], kp[256];

		snprintf(text, sizeof(text), "apiVersion: kubeproxy.config.k8s.io/v1alpha1\n"
					     "kind: KubeProxyConfiguration\n%s", kp_cases[i].yaml);
		snprintf(kp, sizeof(kp), "%s", write_tmp("field.yaml", text));
		print_message("field case %zu (flag %s)\n", i, kp_cases[i].flag);
		assert_int_equal(parse(&o, "--config", kp, "--config", svc, NULL), 0);
		kp_cases[i].check(&o, false);
		options_done(&o);
		assert_int_equal(parse(&o, "--config", kp, "--config", svc, kp_cases[i].flag, NULL), 0);
		kp_cases[i].check(&o, true);
		options_done(&o);
		/* Another field's flag does not keep this field from the file. */
		ck_strict = false;
		for (size_t j = 0; j < ARRAY_SIZE(kp_cases); j++) {
			if (same_flag(kp_cases[i].flag, kp_cases[j].flag) ||
			    (strstr(kp_cases[i].yaml, "detectLocalMode") &&
			     same_flag(kp_cases[j].flag, "--detect-local-mode=")) ||
			    /* vmodule is the text format's: refused with json */
			    (strstr(kp_cases[i].yaml, "format: json") &&
			     same_flag(kp_cases[j].flag, "--vmodule=")))
				continue;
			assert_int_equal(parse(&o, "--config", kp, "--config", svc, kp_cases[j].flag,
					       NULL), 0);
			kp_cases[i].check(&o, false);
			options_done(&o);
		}
		ck_strict = true;
	}
}

/*
 * The logging block as component-base's LoggingConfiguration reads it:
 * vmodule a list of {filePattern, verbosity} (klog's --vmodule), only with
 * the text format; verbosity; format text or json; flushFrequency a
 * duration or a number of nanoseconds; options.* accepted when zero (as
 * kubeadm writes them).
 */
static void test_kpconfig_logging(void **state)
{
	static const char *const head = "apiVersion: kubeproxy.config.k8s.io/v1alpha1\n"
					"kind: KubeProxyConfiguration\nlogging:\n";
	static const struct {
		const char *yaml;
		int exit;
		const char *vmodule; /* with exit 0: o.vmodule, NULL for none */
		int verbosity, format;
	} cases[] = {
		/* kubeadm's ConfigMap */
		{ "  flushFrequency: 0\n  options:\n    json:\n      infoBufferSize: \"0\"\n"
		  "    text:\n      infoBufferSize: \"0\"\n  verbosity: 0\n",
		  0, NULL, 0, LOG_FORMAT_OPT_UNSET },
		{ "  format: text\n  verbosity: 3\n  flushFrequency: 5s\n"
		  "  vmodule:\n  - filePattern: sync\n    verbosity: 4\n"
		  "  - filePattern: \"kube*\"\n",
		  0, "sync=4,kube*=0", 3, LOG_FORMAT_OPT_TEXT },
		{ "  flushFrequency: 5000000000\n  format: json\n  vmodule: []\n", 0, NULL, 0,
		  LOG_FORMAT_OPT_JSON },
		/* JSON's spelling of the list */
		{ "  vmodule: [{\"filePattern\": \"daemon\", \"verbosity\": 6}]\n", 0, "daemon=6", 0,
		  LOG_FORMAT_OPT_UNSET },
		/* component-base's Validate */
		{ "  format: json\n  vmodule:\n  - filePattern: sync\n    verbosity: 4\n", 2, NULL, 0, 0 },
		{ "  vmodule:\n  - verbosity: 4\n", 2, NULL, 0, 0 },
		{ "  vmodule:\n  - filePattern: \"\"\n    verbosity: 4\n", 2, NULL, 0, 0 },
		{ "  vmodule:\n  - filePattern: a=b\n    verbosity: 4\n", 2, NULL, 0, 0 },
		{ "  vmodule:\n  - filePattern: a,b\n    verbosity: 4\n", 2, NULL, 0, 0 },
		{ "  vmodule:\n  - filePattern: sync\n    verbosity: -1\n", 2, NULL, 0, 0 },
		{ "  vmodule:\n  - filePattern: sync\n    verbosity: many\n", 2, NULL, 0, 0 },
		{ "  vmodule:\n  - filePattern: sync\n    verbosity: 4294967296\n", 2, NULL, 0, 0 },
		{ "  vmodule:\n  - sync=4\n", 2, NULL, 0, 0 },
		{ "  vmodule: sync=4\n", 2, NULL, 0, 0 },
		{ "  format: xml\n", 2, NULL, 0, 0 },
		{ "  verbosity: loud\n", 2, NULL, 0, 0 },
		{ "  flushFrequency: soon\n", 2, NULL, 0, 0 },
	};
	char svc[256];

	(void)state;
	snprintf(svc, sizeof(svc), "%s", write_tmp("svc.json", "{\"kind\": \"List\", \"items\": []}"));
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct svcnat_options o;
		char text[1024], kp[256];

		snprintf(text, sizeof(text), "%s%s", head, cases[i].yaml);
		snprintf(kp, sizeof(kp), "%s", write_tmp("logging.yaml", text));
		print_message("logging case %zu\n", i);
		assert_int_equal(parse(&o, "--config", kp, "--config", svc, NULL), cases[i].exit);
		if (cases[i].exit == 0) {
			if (cases[i].vmodule)
				assert_string_equal(o.vmodule, cases[i].vmodule);
			else
				assert_true(!o.vmodule || !o.vmodule[0]);
			assert_int_equal(o.log_verbosity, cases[i].verbosity);
			assert_int_equal(o.log_format, cases[i].format);
		}
		options_done(&o);
	}
	/* The flags win over the file (kube-proxy's copyLogsFromFlags); json
	 * with a vmodule is refused whichever says which. */
	{
		struct svcnat_options o;
		char text[512], kp[256];

		snprintf(text, sizeof(text), "%s  format: text\n  vmodule:\n  - filePattern: sync\n"
			 "    verbosity: 4\n", head);
		snprintf(kp, sizeof(kp), "%s", write_tmp("logging.yaml", text));
		assert_int_equal(parse(&o, "--config", kp, "--config", svc, "--vmodule=kube*=5", NULL), 0);
		assert_string_equal(o.vmodule, "kube*=5");
		options_done(&o);
		assert_int_equal(parse(&o, "--vmodule=kube*=5", "--config", kp, "--config", svc, NULL), 0);
		assert_string_equal(o.vmodule, "kube*=5");
		options_done(&o);
		assert_int_equal(parse(&o, "--config", kp, "--config", svc, "--logging-format=json", NULL),
				 2);
		options_done(&o);
		assert_int_equal(parse(&o, "--config", svc, "--vmodule=sync=4", "--logging-format=json",
				       NULL), 2);
		options_done(&o);
	}
}

static void test_kpconfig_refusals(void **state)
{
	struct svcnat_options o;
	const char *svc = write_tmp("svc.json", "{\"kind\": \"List\", \"items\": []}");
	char kp[256];

	snprintf(kp, sizeof(kp), "%s",
		 write_tmp("ipvs.yaml", "apiVersion: kubeproxy.config.k8s.io/v1alpha1\n"
					"kind: KubeProxyConfiguration\nmode: ipvs\n"));
	assert_int_equal(parse(&o, "--config", kp, "--config", svc, NULL), 2);
	options_done(&o);
	/* the flag (iptables) overrides the file's mode */
	assert_int_equal(parse(&o, "--config", kp, "--config", svc, "--proxy-mode", "iptables", NULL), 2);
	options_done(&o);
	snprintf(kp, sizeof(kp), "%s",
		 write_tmp("v2.yaml", "apiVersion: kubeproxy.config.k8s.io/v1alpha2\n"
				      "kind: KubeProxyConfiguration\n"));
	assert_int_equal(parse(&o, "--config", kp, "--config", svc, NULL), 2);
	options_done(&o);
	snprintf(kp, sizeof(kp), "%s",
		 write_tmp("bad.yaml", "apiVersion: kubeproxy.config.k8s.io/v1alpha1\n"
				       "kind: KubeProxyConfiguration\niptables: [a: b\n"));
	assert_int_equal(parse(&o, "--config", kp, "--config", svc, NULL), 2);
	options_done(&o);
	snprintf(kp, sizeof(kp), "%s",
		 write_tmp("badval.yaml", "apiVersion: kubeproxy.config.k8s.io/v1alpha1\n"
					  "kind: KubeProxyConfiguration\niptables:\n  masqueradeBit: 40\n"));
	assert_int_equal(parse(&o, "--config", kp, "--config", svc, NULL), 2);
	options_done(&o);
	/* only settings: no service source left */
	snprintf(kp, sizeof(kp), "%s", write_tmp("only.yaml", kpc));
	assert_int_equal(parse(&o, "--config", kp, NULL), 2);
	options_done(&o);
}

/*
 * Feature gates as kube-proxy 1.35 takes them: PreferSameTrafficDistribution
 * is GA and locked to true, so true is accepted and false refused; other
 * gates are ignored (with a warning); a malformed list is refused.
 */
static void test_feature_gates(void **state)
{
	struct svcnat_options o;
	const char *svc = write_tmp("svc.json", "{\"kind\": \"List\", \"items\": []}");
	static const struct {
		const char *arg;
		int rc;
	} flags[] = {
		{ "PreferSameTrafficDistribution=true", 0 },
		{ " PreferSameTrafficDistribution = True ,OtherGate=false", 0 },
		{ "PreferSameTrafficDistribution=1", 0 },
		{ "", 0 },
		{ "PreferSameTrafficDistribution=false", 2 },
		{ "A=true,PreferSameTrafficDistribution=0", 2 },
		{ "PreferSameTrafficDistribution", 2 },
		{ "PreferSameTrafficDistribution=yes", 2 },
	};
	char kp[256];

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(flags); i++) {
		int r = parse(&o, "--config", svc, "--feature-gates", flags[i].arg, NULL);

		if (r != flags[i].rc)
			fail_msg("--feature-gates '%s': exit %d, want %d", flags[i].arg, r, flags[i].rc);
		options_done(&o);
	}
	snprintf(kp, sizeof(kp), "%s",
		 write_tmp("gates.yaml", "apiVersion: kubeproxy.config.k8s.io/v1alpha1\n"
					 "kind: KubeProxyConfiguration\nfeatureGates:\n"
					 "  PreferSameTrafficDistribution: true\n  SomeOther: false\n"));
	assert_int_equal(parse(&o, "--config", kp, "--config", svc, NULL), 0);
	options_done(&o);
	snprintf(kp, sizeof(kp), "%s",
		 write_tmp("gates-off.yaml", "apiVersion: kubeproxy.config.k8s.io/v1alpha1\n"
					     "kind: KubeProxyConfiguration\nfeatureGates:\n"
					     "  PreferSameTrafficDistribution: false\n"));
	assert_int_equal(parse(&o, "--config", kp, "--config", svc, NULL), 2);
	options_done(&o);
	snprintf(kp, sizeof(kp), "%s",
		 write_tmp("gates-empty.yaml", "apiVersion: kubeproxy.config.k8s.io/v1alpha1\n"
					       "kind: KubeProxyConfiguration\nfeatureGates: {}\n"));
	assert_int_equal(parse(&o, "--config", kp, "--config", svc, NULL), 0);
	options_done(&o);
}

/* The file's fields, flattened. */
static void test_kpconfig_parse(void **state)
{
	struct kpconfig *c = NULL;
	struct diag_list d;

	diag_list_init(&d);
	assert_int_equal(kpconfig_parse("x", kpc, strlen(kpc), &c, &d), 1);
	assert_string_equal(c->api_version, "kubeproxy.config.k8s.io/v1alpha1");
	assert_string_equal(c->fields[0].path, "bindAddress");
	assert_string_equal(c->fields[0].value, "198.18.0.9");
	assert_int_equal(c->fields[0].line, 3);
	for (size_t i = 0; i < c->n_fields; i++) {
		if (streq(c->fields[i].path, "ipvs.excludeCIDRs"))
			assert_true(c->fields[i].null);
		if (streq(c->fields[i].path, "nodePortAddresses"))
			assert_string_equal(c->fields[i].value, "198.18.0.0/24");
	}
	kpconfig_free(c);
	c = NULL;
	/* not a KubeProxyConfiguration: 0, nothing */
	assert_int_equal(kpconfig_parse("x", "{\"kind\": \"List\"}", 16, &c, &d), 0);
	assert_null(c);
	assert_int_equal(kpconfig_parse("x", "kind: List\nitems: [KubeProxyConfiguration]\n", 43, &c, &d), 0);
	assert_null(c);
	assert_int_equal(d.n, 0);
	diag_list_done(&d);
}

/* What each mode asks of the pipeline: only the daemon reads its files
 * again (the others keep no items for a reload), only --once frees the
 * merged state once planned, only the daemon keeps its plans. */
static void test_pipeline_modes(void **state)
{
	static const struct {
		const char *flag, *flag2; /* besides --config (NULL: none) */
		bool read_once, sync_once, keep_plans;
	} modes[] = {
		{ NULL, NULL, false, false, true },
		{ "--once", NULL, true, true, false },
		{ "--dry-run", NULL, true, false, false },
		{ "--dry-run", "--diff", true, false, false },
		{ "--dump-state", NULL, true, false, false },
	};
	struct svcnat_options o;
	struct pipeline_config c;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(modes); i++) {
		assert_int_equal(parse(&o, "--config=/nonexistent", modes[i].flag, modes[i].flag2,
				       NULL), 0);
		config_pipeline(&o, &c);
		assert_int_equal(c.read_once, modes[i].read_once);
		assert_int_equal(c.sync_once, modes[i].sync_once);
		assert_int_equal(c.keep_plans, modes[i].keep_plans);
		options_done(&o);
	}
}

/* Run parse() with stderr in a file; returns the exit code, *ret_err the text. */
static int parse_quiet(struct svcnat_options *o, char **ret_err, const char **args, size_t n)
{
	char path[300], *buf;
	const char *v[16] = { NULL };
	int saved = dup(2), r;
	FILE *f;
	long len;

	assert_true(n < 16);
	memcpy(v, args, n * sizeof(*args));
	snprintf(path, sizeof(path), "%s/stderr", tmpdir);
	fflush(stderr);
	assert_non_null(freopen(path, "w", stderr));
	r = parse(o, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11], v[12],
		  v[13], v[14], NULL);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	f = fopen(path, "r");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	buf = calloc(1, (size_t)len + 1);
	assert_true(fread(buf, 1, (size_t)len, f) == (size_t)len);
	fclose(f);
	*ret_err = buf;
	return r;
}

/* A conntrack timeout given as 0 leaves the kernel's (kube-proxy: a set,
 * zero duration is skipped), where null or absent means kube-proxy's 24 h
 * and 1 h; the same for the flags. */
static void test_conntrack_zero_vs_default(void **state)
{
	struct svcnat_options o;
	const char *svc = write_tmp("ct-svc.json", "{\"kind\": \"List\", \"items\": []}");
	const char *zero = write_tmp("ct-zero.yaml",
				     "apiVersion: kubeproxy.config.k8s.io/v1alpha1\n"
				     "kind: KubeProxyConfiguration\n"
				     "conntrack:\n  tcpEstablishedTimeout: 0s\n"
				     "  tcpCloseWaitTimeout: 0s\n");
	const char *a[] = { "--config", zero, "--config", svc };
	const char *b[] = { "--config", svc, "--conntrack-tcp-timeout-established=0",
			    "--conntrack-tcp-timeout-close-wait=0s" };
	const char *c[] = { "--config", svc };
	char *err = NULL;

	(void)state;
	assert_int_equal(parse_quiet(&o, &err, a, ARRAY_SIZE(a)), 0);
	assert_true(o.conntrack.tcp_established_usec == 0 && o.conntrack.tcp_close_wait_usec == 0);
	free(err);
	options_done(&o);
	assert_int_equal(parse_quiet(&o, &err, b, ARRAY_SIZE(b)), 0);
	assert_true(o.conntrack.tcp_established_usec == 0 && o.conntrack.tcp_close_wait_usec == 0);
	free(err);
	options_done(&o);
	assert_int_equal(parse_quiet(&o, &err, c, ARRAY_SIZE(c)), 0);
	assert_true(o.conntrack.tcp_established_usec == CT_TIMEOUT_DEFAULT);
	assert_true(o.conntrack.tcp_close_wait_usec == CT_TIMEOUT_DEFAULT);
	free(err);
	options_done(&o);
}

/* kube-proxy's flag set reads '_' as '-' in flag names (not in values). */
static void test_underscore_flags(void **state)
{
	struct svcnat_options o;
	const char *svc = write_tmp("us-svc.json", "{\"kind\": \"List\", \"items\": []}");
	const char *a[] = { "--config", svc, "--hostname_override=node_b",
			    "--iptables_min_sync_period", "2s", "--log_dir=/tmp" };
	char *err = NULL;

	(void)state;
	assert_int_equal(parse_quiet(&o, &err, a, ARRAY_SIZE(a)), 0);
	assert_string_equal(o.hostname, "node_b");
	assert_string_equal(o.min_sync_period, "2s");
	/* --log_dir is --log-dir: accepted and ignored, with its warning */
	assert_non_null(strstr(err, "--log-dir"));
	free(err);
	options_done(&o);
}

/* Values equal to kube-proxy's defaults of fields svcnat ignores give no
 * warning (kubespray writes ipvs.syncPeriod 30s and ipvs.scheduler rr);
 * other values do. */
static void test_ignored_field_defaults(void **state)
{
	struct svcnat_options o;
	const char *svc = write_tmp("dflt-svc.json", "{\"kind\": \"List\", \"items\": []}");
	const char *quiet = write_tmp("dflt.yaml",
				      "apiVersion: kubeproxy.config.k8s.io/v1alpha1\n"
				      "kind: KubeProxyConfiguration\n"
				      "ipvs:\n  syncPeriod: 30s\n  scheduler: rr\n  minSyncPeriod: 0s\n"
				      "nftables:\n  syncPeriod: 30s\n  minSyncPeriod: 1s\n"
				      "  masqueradeBit: 14\n");
	const char *loud = write_tmp("nondflt.yaml",
				     "apiVersion: kubeproxy.config.k8s.io/v1alpha1\n"
				     "kind: KubeProxyConfiguration\n"
				     "ipvs:\n  scheduler: wlc\n  tcpTimeout: 30s\n");
	const char *a[] = { "--config", quiet, "--config", svc };
	const char *b[] = { "--config", loud, "--config", svc };
	char *err = NULL;

	(void)state;
	assert_int_equal(parse_quiet(&o, &err, a, ARRAY_SIZE(a)), 0);
	assert_string_equal(err, "");
	free(err);
	options_done(&o);
	assert_int_equal(parse_quiet(&o, &err, b, ARRAY_SIZE(b)), 0);
	assert_non_null(strstr(err, "ipvs.scheduler"));
	assert_non_null(strstr(err, "ipvs.tcpTimeout"));
	free(err);
	options_done(&o);
}

/* A kube-proxy flag given beside a KubeProxyConfiguration wins, with a
 * warning naming it (kube-proxy would ignore it); --hostname-override and
 * the logging flags, which kube-proxy honours too, give none. */
static void test_flag_over_file_warning(void **state)
{
	struct svcnat_options o;
	const char *svc = write_tmp("fo-svc.json", "{\"kind\": \"List\", \"items\": []}");
	const char *kp = write_tmp("fo.yaml", "apiVersion: kubeproxy.config.k8s.io/v1alpha1\n"
					      "kind: KubeProxyConfiguration\n"
					      "clusterCIDR: 198.18.64.0/18\n");
	const char *a[] = { "--config", kp, "--config", svc, "--cluster-cidr=198.18.128.0/17",
			    "--iptables-sync-period=10s" };
	const char *b[] = { "--config", kp, "--config", svc, "--hostname-override=node-a",
			    "--v=2", "--backend=direct" };
	char *err = NULL;

	(void)state;
	assert_int_equal(parse_quiet(&o, &err, a, ARRAY_SIZE(a)), 0);
	assert_non_null(strstr(err, "warning: --cluster-cidr: given with the KubeProxyConfiguration"));
	assert_non_null(strstr(err, "warning: --iptables-sync-period: given with"));
	assert_null(strstr(strstr(err, "--cluster-cidr") + 1, "--cluster-cidr: given")); /* once */
	assert_string_equal(fmt_net(&o.plan.cluster_cidrs[0]), "198.18.128.0/17");
	free(err);
	options_done(&o);
	assert_int_equal(parse_quiet(&o, &err, b, ARRAY_SIZE(b)), 0);
	assert_string_equal(err, "");
	free(err);
	options_done(&o);
}

/* A field whose flag is given still has to be a value (kube-proxy reads
 * the file whatever the flags say): refused, exit 2, naming the field;
 * the flag's value is what a good file leaves in place. */
static void test_flag_over_bad_field(void **state)
{
	struct svcnat_options o;
	const char *svc = write_tmp("fb-svc.json", "{\"kind\": \"List\", \"items\": []}");
	const char *kp = write_tmp("fb.yaml", "apiVersion: kubeproxy.config.k8s.io/v1alpha1\n"
					      "kind: KubeProxyConfiguration\n"
					      "conntrack:\n"
					      "  tcpEstablishedTimeout: forever\n");
	const char *good = write_tmp("fg.yaml", "apiVersion: kubeproxy.config.k8s.io/v1alpha1\n"
						"kind: KubeProxyConfiguration\n"
						"conntrack:\n"
						"  tcpEstablishedTimeout: 2h\n");
	const char *a[] = { "--config", kp, "--config", svc, "--conntrack-tcp-timeout-established=1h" };
	const char *b[] = { "--config", good, "--config", svc, "--conntrack-tcp-timeout-established=1h" };
	char *err = NULL;

	(void)state;
	assert_int_equal(parse_quiet(&o, &err, a, ARRAY_SIZE(a)), 2);
	assert_non_null(strstr(err, "conntrack.tcpEstablishedTimeout"));
	free(err);
	options_done(&o);
	assert_int_equal(parse_quiet(&o, &err, b, ARRAY_SIZE(b)), 0);
	assert_null(strstr(err, "error"));
	assert_int_equal(o.conntrack.tcp_established_usec, 3600ULL * 1000000);
	free(err);
	options_done(&o);
}

/* Healthz and metrics addresses are checked with the flags, before any
 * side effect; an IP alone gets kube-proxy's default port. */
static void test_bind_addresses(void **state)
{
	static const struct {
		const char *flag, *healthz, *metrics;
	} ok[] = {
		{ "--healthz-bind-address=127.0.0.1", "127.0.0.1:10256", NULL },
		{ "--healthz-bind-address=::1", "[::1]:10256", NULL },
		{ "--healthz-bind-address=[2001:2::1]:99", "[2001:2::1]:99", NULL },
		{ "--healthz-bind-address=", "", NULL },
		{ "--metrics-bind-address=198.18.0.1", NULL, "198.18.0.1:10249" },
		{ "--metrics-bind-address=0.0.0.0:1", NULL, "0.0.0.0:1" },
	};
	static const char *const bad[] = {
		"--healthz-bind-address=not an address", "--metrics-bind-address=198.18.0.1:",
		"--healthz-bind-address=[::1]", "--metrics-bind-address=host:10249",
		"--healthz-bind-address=198.18.0.1:70000",
	};
	const char *svc = write_tmp("svc.json", "{\"kind\": \"List\", \"items\": []}");
	struct svcnat_options o;
	char *err = NULL;

	for (size_t i = 0; i < ARRAY_SIZE(ok); i++) {
		const char *args[] = { "--dry-run", "--config", svc, ok[i].flag };

		if (parse_quiet(&o, &err, args, ARRAY_SIZE(args)) != 0)
			fail_msg("%s: %s", ok[i].flag, err);
		if (ok[i].healthz)
			assert_string_equal(o.healthz_bind_address, ok[i].healthz);
		if (ok[i].metrics)
			assert_string_equal(o.metrics_bind_address, ok[i].metrics);
		free(err);
		options_done(&o);
	}
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		const char *args[] = { "--dry-run", "--config", svc, bad[i] };
		char want[256];

		assert_int_equal(parse_quiet(&o, &err, args, ARRAY_SIZE(args)), 2);
		snprintf(want, sizeof(want), "svcnat: %.*s: '%s' is not an IP:PORT address (or an IP, "
			 "for the default port)\n", (int)(strchr(bad[i], '=') - bad[i]), bad[i],
			 strchr(bad[i], '=') + 1);
		assert_string_equal(err, want);
		free(err);
		options_done(&o);
	}
	/* The file's fields the same. */
	{
		const char *kp = write_tmp("bind.yaml", "apiVersion: kubeproxy.config.k8s.io/v1alpha1\n"
							"kind: KubeProxyConfiguration\n"
							"healthzBindAddress: 'not an address'\n");
		const char *args[] = { "--dry-run", "--config", kp, "--config", svc };

		assert_int_equal(parse_quiet(&o, &err, args, ARRAY_SIZE(args)), 2);
		assert_non_null(strstr(err, "bind.yaml: healthzBindAddress: 'not an address' is not an "
					    "IP:PORT address"));
		free(err);
		options_done(&o);
		kp = write_tmp("bind.yaml", "apiVersion: kubeproxy.config.k8s.io/v1alpha1\n"
					    "kind: KubeProxyConfiguration\n"
					    "metricsBindAddress: 2001:2::7\n");
		assert_int_equal(parse_quiet(&o, &err, args, ARRAY_SIZE(args)), 0);
		assert_string_equal(o.metrics_bind_address, "[2001:2::7]:10249");
		free(err);
		options_done(&o);
	}
}

/* A KubeProxyConfiguration is judged as every config file: YAML limits,
 * NULs, size, the permission rule (refused where rules are written). */
static void test_kpconfig_safety(void **state)
{
	static const struct {
		const char *name, *text, *err;
	} cases[] = {
		{ "nul.yaml", "clusterCIDR: \"198.18.0.0/16\\0junk\"\n",
		  "error: nul.yaml: clusterCIDR: line 3: contains a NUL byte\n" },
		{ "nul-list.yaml", "nodePortAddresses: [\"198.18.0.0/24\", \"a\\0b\"]\n",
		  "error: nul-list.yaml: nodePortAddresses: line 3: contains a NUL byte\n" },
		{ "alias.yaml", "a: &a {x: 1}\nb: *a\n",
		  "error: alias.yaml: line 4, column 4: not a valid KubeProxyConfiguration: an alias (*a): "
		  "svcnat does not expand YAML aliases\n" },
		{ "two.yaml", "mode: iptables\n---\nmode: ipvs\n",
		  "error: two.yaml: line 5, column 1: not a valid KubeProxyConfiguration: a second YAML "
		  "document: svcnat reads one document per file\n" },
	};
	const char *svc = write_tmp("svc.json", "{\"kind\": \"List\", \"items\": []}");
	struct svcnat_options o;
	char text[512], path[300], *err = NULL;

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		snprintf(text, sizeof(text), "apiVersion: kubeproxy.config.k8s.io/v1alpha1\n"
					     "kind: KubeProxyConfiguration\n%s", cases[i].text);
		snprintf(path, sizeof(path), "%s", write_tmp(cases[i].name, text));
		assert_int_equal(chdir(tmpdir), 0);
		{
			const char *args[] = { "--dry-run", "--config", cases[i].name, "--config", svc };

			assert_int_equal(parse_quiet(&o, &err, args, ARRAY_SIZE(args)), 2);
		}
		assert_string_equal(err, cases[i].err);
		free(err);
		options_done(&o);
	}
	/* Writable by others: refused by the daemon and --once, a warning in --dry-run. */
	snprintf(path, sizeof(path), "%s", write_tmp("ww.yaml", kpc));
	assert_int_equal(chmod(path, 0666), 0);
	{
		const char *daemon[] = { "--config", "ww.yaml", "--config", svc };
		const char *once[] = { "--once", "--config", "ww.yaml", "--config", svc };
		const char *dry[] = { "--dry-run", "--config", "ww.yaml", "--config", svc };
		const char *insecure[] = { "--config", "ww.yaml", "--config", svc,
					   "--allow-insecure-config" };
		const char *msg = "ww.yaml: writable by users other than its owner (mode 0666): ";

		assert_int_equal(parse_quiet(&o, &err, daemon, ARRAY_SIZE(daemon)), 2);
		assert_non_null(strstr(err, msg));
		assert_non_null(strstr(err, "refusing it (chmod go-w, or --allow-insecure-config)"));
		free(err);
		options_done(&o);
		assert_int_equal(parse_quiet(&o, &err, once, ARRAY_SIZE(once)), 2);
		assert_non_null(strstr(err, msg));
		free(err);
		options_done(&o);
		assert_int_equal(parse_quiet(&o, &err, dry, ARRAY_SIZE(dry)), 0);
		assert_non_null(strstr(err, "warning: "));
		assert_non_null(strstr(err, "svcnat would refuse it when writing rules"));
		free(err);
		options_done(&o);
		assert_int_equal(parse_quiet(&o, &err, insecure, ARRAY_SIZE(insecure)), 0);
		assert_null(strstr(err, msg));
		free(err);
		options_done(&o);
	}
	/* Over 1 MiB: named as a KubeProxyConfiguration too large, not "not JSON". */
	{
		FILE *f = fopen("big.yaml", "we");
		const char *args[] = { "--dry-run", "--config", "big.yaml", "--config", svc };

		assert_non_null(f);
		fputs(kpc, f);
		for (int i = 0; i < 20000; i++)
			fprintf(f, "# %060d\n", i);
		fclose(f);
		assert_int_equal(parse_quiet(&o, &err, args, ARRAY_SIZE(args)), 2);
		assert_string_equal(err, "error: big.yaml: larger than the limit of 1048576 bytes of a "
					 "KubeProxyConfiguration\n");
		free(err);
		options_done(&o);
	}
}

/* docs/operations.md's examples: kubeadm's kube-proxy ConfigMap and a kube-proxy unit's
 * flags work unchanged, without a single warning. */
static void test_readme_examples(void **state)
{
	struct svcnat_options o;
	const char *svc = write_tmp("svc.json", "{\"kind\": \"List\", \"items\": []}");
	const char *cfg[] = { "--config", SRCDIR "/contrib/examples/kube-proxy-config.yaml",
			      "--config", svc };
	const char *unit[] = {
		"--kubeconfig=/var/lib/kube-proxy/kubeconfig", "--hostname-override=node-a",
		"--cluster-cidr=10.200.0.0/16", "--proxy-mode=iptables",
		"--iptables-min-sync-period=1s", "--iptables-sync-period=30s",
		"--conntrack-max-per-core=32768", "--conntrack-min=131072",
		"--oom-score-adj=-999", "--healthz-bind-address=0.0.0.0:10256",
		"--metrics-bind-address=127.0.0.1:10249", "--v=2",
	};
	char *err = NULL;

	assert_int_equal(parse_quiet(&o, &err, cfg, ARRAY_SIZE(cfg)), 0);
	assert_string_equal(err, "");
	assert_string_equal(o.kubeconfig, "/var/lib/kube-proxy/kubeconfig.conf");
	assert_int_equal(o.plan.n_cluster_cidrs, 1);
	assert_int_equal(o.plan.masquerade_bit, 14);
	assert_true(o.plan.localhost_nodeports);
	assert_null(o.healthz_bind_address); /* "": kube-proxy's default, 0.0.0.0:10256 */
	assert_int_equal(o.conntrack.max_per_core, -1);
	/* kubeadm's conntrack fields are null: kube-proxy's defaults apply */
	assert_int_equal(o.conntrack.min, -1);
	assert_true(o.conntrack.tcp_established_usec == CT_TIMEOUT_DEFAULT);
	assert_true(o.conntrack.tcp_close_wait_usec == CT_TIMEOUT_DEFAULT);
	assert_true(o.conntrack.udp_usec == 0 && o.conntrack.udp_stream_usec == 0);
	assert_false(o.oom_score_adj_set);
	assert_int_equal(o.n_configs, 1);
	free(err);
	options_done(&o);

	assert_int_equal(parse_quiet(&o, &err, unit, ARRAY_SIZE(unit)), 0);
	assert_string_equal(err, "");
	assert_string_equal(o.hostname, "node-a");
	assert_string_equal(o.kubeconfig, "/var/lib/kube-proxy/kubeconfig");
	assert_int_equal(o.conntrack.max_per_core, 32768);
	assert_int_equal(o.oom_score_adj, -999);
	assert_string_equal(o.sync_period, "30s");
	free(err);
	options_done(&o);
}

static int setup(void **state)
{
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kube_proxy_flags),
		cmocka_unit_test(test_kube_content_type),
		cmocka_unit_test(test_nodeport_keywords),
		cmocka_unit_test(test_detect_local_flags),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_kpconfig_file),
		cmocka_unit_test(test_kpconfig_each_field),
		cmocka_unit_test(test_kpconfig_refusals),
		cmocka_unit_test(test_kpconfig_accept_types),
		cmocka_unit_test(test_kpconfig_logging),
		cmocka_unit_test(test_feature_gates),
		cmocka_unit_test(test_kpconfig_parse),
		cmocka_unit_test(test_bind_addresses),
		cmocka_unit_test(test_kpconfig_safety),
		cmocka_unit_test(test_readme_examples),
		cmocka_unit_test(test_conntrack_zero_vs_default),
		cmocka_unit_test(test_underscore_flags),
		cmocka_unit_test(test_ignored_field_defaults),
		cmocka_unit_test(test_flag_over_file_warning),
		cmocka_unit_test(test_flag_over_bad_field),
		cmocka_unit_test(test_pipeline_modes),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
