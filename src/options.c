/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The command line: svcnat's options and kube-proxy's flag names, into
 * struct svcnat_options.  Messages go to stderr.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/duration.h"
#include "options.h"
#include "sources/etcdwire.h"
#include "sources/kpconfig.h"
#include "util.h"

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2

enum {
	OPT_DRY_RUN = 0x100,
	OPT_DIFF,
	OPT_ONCE,
	OPT_CLEANUP,
	OPT_DUMP_STATE,
	OPT_HOSTNAME,
	OPT_NODE_IP,
	OPT_CLUSTER_CIDR,
	OPT_MASQ_ALL,
	OPT_NODEPORT_ADDRS,
	OPT_LOCALHOST_NODEPORTS,
	OPT_MASQ_BIT,
	OPT_ZONE,
	OPT_BACKEND,
	OPT_SET_SYSCTLS,
	OPT_NO_RANDOM_FULLY,
	OPT_COMPACT_THRESHOLD,
	OPT_DISPATCH,
	OPT_DISPATCH_THRESHOLD,
	OPT_MIN_SYNC,
	OPT_SYNC,
	OPT_HEALTHZ,
	OPT_METRICS,
	OPT_INSECURE,
	OPT_LOCK_WAIT,
	OPT_ETCD_ENDPOINTS,
	OPT_ETCD_PREFIX,
	OPT_ETCD_CACERT,
	OPT_ETCD_CERT,
	OPT_ETCD_KEY,
	OPT_KUBECONFIG,
	OPT_MASTER,
	OPT_VERSION,
	/* kube-proxy's flags (issue 16) */
	OPT_KLOG_V,
	OPT_BIND_ADDRESS,
	OPT_NODE_POD_CIDR,
	OPT_HEALTHZ_PORT,
	OPT_METRICS_PORT,
	OPT_HARD_FAIL,
	OPT_PROXY_MODE,
	OPT_DETECT_LOCAL,
	OPT_POD_BRIDGE,
	OPT_POD_PREFIX,
	OPT_OOM,
	OPT_CT_MAX_PER_CORE,
	OPT_CT_MIN,
	OPT_CT_ESTABLISHED,
	OPT_CT_CLOSE_WAIT,
	OPT_CT_LIBERAL,
	OPT_CT_UDP,
	OPT_CT_UDP_STREAM,
	OPT_INIT_ONLY,
	OPT_LOGGING_FORMAT,
	OPT_WRITE_CONFIG,
	OPT_IGNORED = 0x400, /* + index in kp_ignored[] */
};

static const struct option long_options[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ "verbose", no_argument, NULL, 'v' },
	{ "config", required_argument, NULL, 'c' },
	{ "dry-run", no_argument, NULL, OPT_DRY_RUN },
	{ "diff", no_argument, NULL, OPT_DIFF },
	{ "once", no_argument, NULL, OPT_ONCE },
	{ "cleanup", optional_argument, NULL, OPT_CLEANUP },
	{ "dump-state", no_argument, NULL, OPT_DUMP_STATE },
	{ "hostname", required_argument, NULL, OPT_HOSTNAME },
	{ "hostname-override", required_argument, NULL, OPT_HOSTNAME },
	{ "node-ip", required_argument, NULL, OPT_NODE_IP },
	{ "cluster-cidr", required_argument, NULL, OPT_CLUSTER_CIDR },
	{ "masquerade-all", optional_argument, NULL, OPT_MASQ_ALL },
	{ "nodeport-addresses", required_argument, NULL, OPT_NODEPORT_ADDRS },
	{ "localhost-nodeports", optional_argument, NULL, OPT_LOCALHOST_NODEPORTS },
	{ "masquerade-bit", required_argument, NULL, OPT_MASQ_BIT },
	{ "zone", required_argument, NULL, OPT_ZONE },
	{ "backend", required_argument, NULL, OPT_BACKEND },
	{ "set-sysctls", no_argument, NULL, OPT_SET_SYSCTLS },
	{ "no-random-fully", no_argument, NULL, OPT_NO_RANDOM_FULLY },
	{ "compact-endpoints-threshold", required_argument, NULL, OPT_COMPACT_THRESHOLD },
	{ "dispatch", required_argument, NULL, OPT_DISPATCH },
	{ "dispatch-threshold", required_argument, NULL, OPT_DISPATCH_THRESHOLD },
	{ "lock-wait", required_argument, NULL, OPT_LOCK_WAIT },
	{ "min-sync-period", required_argument, NULL, OPT_MIN_SYNC },
	{ "sync-period", required_argument, NULL, OPT_SYNC },
	{ "healthz-bind-address", required_argument, NULL, OPT_HEALTHZ },
	{ "metrics-bind-address", required_argument, NULL, OPT_METRICS },
	{ "allow-insecure-config", no_argument, NULL, OPT_INSECURE },
	{ "etcd-endpoints", required_argument, NULL, OPT_ETCD_ENDPOINTS },
	{ "etcd-prefix", required_argument, NULL, OPT_ETCD_PREFIX },
	{ "etcd-cacert", required_argument, NULL, OPT_ETCD_CACERT },
	{ "etcd-cert", required_argument, NULL, OPT_ETCD_CERT },
	{ "etcd-key", required_argument, NULL, OPT_ETCD_KEY },
	{ "kubeconfig", required_argument, NULL, OPT_KUBECONFIG },
	{ "master", required_argument, NULL, OPT_MASTER },
	/* kube-proxy's names (cmd/kube-proxy/app/options.go) */
	{ "v", required_argument, NULL, OPT_KLOG_V },
	{ "bind-address", required_argument, NULL, OPT_BIND_ADDRESS },
	{ "node-pod-cidr", required_argument, NULL, OPT_NODE_POD_CIDR },
	{ "healthz-port", required_argument, NULL, OPT_HEALTHZ_PORT },
	{ "metrics-port", required_argument, NULL, OPT_METRICS_PORT },
	{ "bind-address-hard-fail", optional_argument, NULL, OPT_HARD_FAIL },
	{ "proxy-mode", required_argument, NULL, OPT_PROXY_MODE },
	{ "iptables-masquerade-bit", required_argument, NULL, OPT_MASQ_BIT },
	{ "iptables-localhost-nodeports", optional_argument, NULL, OPT_LOCALHOST_NODEPORTS },
	{ "iptables-sync-period", required_argument, NULL, OPT_SYNC },
	{ "iptables-min-sync-period", required_argument, NULL, OPT_MIN_SYNC },
	{ "detect-local-mode", required_argument, NULL, OPT_DETECT_LOCAL },
	{ "pod-bridge-interface", required_argument, NULL, OPT_POD_BRIDGE },
	{ "pod-interface-name-prefix", required_argument, NULL, OPT_POD_PREFIX },
	{ "oom-score-adj", required_argument, NULL, OPT_OOM },
	{ "conntrack-max-per-core", required_argument, NULL, OPT_CT_MAX_PER_CORE },
	{ "conntrack-min", required_argument, NULL, OPT_CT_MIN },
	{ "conntrack-tcp-timeout-established", required_argument, NULL, OPT_CT_ESTABLISHED },
	{ "conntrack-tcp-timeout-close-wait", required_argument, NULL, OPT_CT_CLOSE_WAIT },
	{ "conntrack-tcp-be-liberal", optional_argument, NULL, OPT_CT_LIBERAL },
	{ "conntrack-udp-timeout", required_argument, NULL, OPT_CT_UDP },
	{ "conntrack-udp-timeout-stream", required_argument, NULL, OPT_CT_UDP_STREAM },
	{ "init-only", optional_argument, NULL, OPT_INIT_ONLY },
	{ "logging-format", required_argument, NULL, OPT_LOGGING_FORMAT },
	{ "write-config-to", required_argument, NULL, OPT_WRITE_CONFIG },
	{ NULL, 0, NULL, 0 },
};

/*
 * kube-proxy's flags that svcnat accepts and ignores with a warning (why).
 * Flags that take a value are required_argument, boolean ones optional.
 */
static const struct {
	const char *name;
	int has_arg;
	const char *why;
} kp_ignored[] = {
	{ "feature-gates", required_argument, "svcnat has no feature gates" },
	{ "kube-api-content-type", required_argument, "svcnat's API client has no such setting" },
	{ "kube-api-burst", required_argument, "svcnat's API client has no such setting" },
	{ "kube-api-qps", required_argument, "svcnat's API client has no such setting" },
	{ "config-sync-period", required_argument,
	  "svcnat follows its sources by change (inotify, watches), without a resync period" },
	{ "profiling", optional_argument, "svcnat has no /debug/pprof" },
	{ "show-hidden-metrics-for-version", required_argument, "svcnat hides no metrics" },
	{ "ipvs-sync-period", required_argument, "IPVS mode only" },
	{ "ipvs-min-sync-period", required_argument, "IPVS mode only" },
	{ "ipvs-scheduler", required_argument, "IPVS mode only" },
	{ "ipvs-exclude-cidrs", required_argument, "IPVS mode only" },
	{ "ipvs-strict-arp", optional_argument, "IPVS mode only" },
	{ "ipvs-tcp-timeout", required_argument, "IPVS mode only" },
	{ "ipvs-tcpfin-timeout", required_argument, "IPVS mode only" },
	{ "ipvs-udp-timeout", required_argument, "IPVS mode only" },
	{ "vmodule", required_argument, "svcnat has one log level (-v)" },
	{ "log-flush-frequency", required_argument, "svcnat does not buffer its log" },
	{ "log-text-split-stream", optional_argument, "svcnat logs to standard error" },
	{ "log-text-info-buffer-size", required_argument, "svcnat does not buffer its log" },
	{ "log-json-split-stream", optional_argument, "svcnat logs text only" },
	{ "log-json-info-buffer-size", required_argument, "svcnat logs text only" },
	/* klog's flags, which kube-proxy took before Kubernetes 1.26 */
	{ "logtostderr", optional_argument, "svcnat logs to standard error" },
	{ "alsologtostderr", optional_argument, "svcnat logs to standard error" },
	{ "log-dir", required_argument, "svcnat logs to standard error" },
	{ "log-file", required_argument, "svcnat logs to standard error" },
	{ "log-file-max-size", required_argument, "svcnat logs to standard error" },
	{ "skip-headers", optional_argument, "svcnat's log lines have one format" },
	{ "skip-log-headers", optional_argument, "svcnat's log lines have one format" },
	{ "add-dir-header", optional_argument, "svcnat's log lines have one format" },
	{ "one-output", optional_argument, "svcnat logs to standard error" },
	{ "stderrthreshold", required_argument, "svcnat logs to standard error" },
	{ "log-backtrace-at", required_argument, "svcnat has no log backtraces" },
};

static void usage(FILE *f)
{
	fputs("Usage: svcnat [MODE] --config PATH [OPTIONS]\n"
	      "       svcnat etcd-load --etcd-endpoints URL[,URL...] FILE\n"
	      "\n"
	      "Programs Kubernetes Services as iptables NAT rules, the way kube-proxy's iptables\n"
	      "mode does, from Kubernetes JSON (Service, EndpointSlice, Endpoints) or the\n"
	      "original kube-proxy config format.\n"
	      "\n"
	      "Modes (default: run as a daemon, following the sources):\n"
	      "      --dry-run              print the rules as iptables-save text; no privileges\n"
	      "      --dry-run --diff       compare the plan with the kernel: exit 0 equal,\n"
	      "                             1 different, 2 could not compare\n"
	      "      --once                 write the rules once and exit\n"
	      "      --cleanup[=BOOL]       remove every chain and jump rule svcnat (or kube-proxy)\n"
	      "                             owns, from every iptables flavour present\n"
	      "      --init-only[=BOOL]     write the sysctls asked for (--conntrack-*,\n"
	      "                             --set-sysctls) and exit\n"
	      "      --dump-state           print the merged services and endpoints svcnat understood\n"
	      "\n"
	      "Sources:\n"
	      "  -c, --config PATH          JSON file, directory of *.json, or - for stdin\n"
	      "                             (repeatable; on conflicts the first wins).  A file\n"
	      "                             (up to 1 MiB) whose top-level kind is\n"
	      "                             KubeProxyConfiguration (kubeproxy.config.k8s.io/\n"
	      "                             v1alpha1, YAML or JSON) sets settings instead: each\n"
	      "                             field as the flag of the same meaning; flags given\n"
	      "                             on the command line win; fields svcnat does not\n"
	      "                             implement are named in a warning\n"
	      "      --etcd-endpoints URLS  etcd v3 members, comma-separated (cluster mode)\n"
	      "      --etcd-prefix PREFIX   key prefix (default " ETCD_DEFAULT_PREFIX ")\n"
	      "      --etcd-cacert/--etcd-cert/--etcd-key FILE   TLS for etcd\n"
	      "      --kubeconfig FILE      follow the Kubernetes API server this kubeconfig names\n"
	      "      --master URL           the API server's URL (overrides the kubeconfig's server)\n"
	      "                             (neither, no other source and KUBERNETES_SERVICE_HOST\n"
	      "                             set: the in-cluster service account is used)\n"
	      "\n"
	      "Node settings (kube-proxy's flag names also work: svcnat(8), KUBE-PROXY FLAGS):\n"
	      "      --hostname NAME        which endpoints are local (default: this host's name;\n"
	      "                             also --hostname-override)\n"
	      "      --node-ip IP[,IP]      the node's addresses, IPv4 and IPv6; repeatable, the\n"
	      "                             first of each family is that family's primary\n"
	      "                             (--bind-address IP: the primary)\n"
	      "      --cluster-cidr CIDRS   pod networks, one per family (comma-separated,\n"
	      "                             repeatable); traffic from outside is masqueraded\n"
	      "      --detect-local-mode M  ClusterCIDR (default), NodeCIDR (the Node's podCIDRs, or\n"
	      "                             --node-pod-cidr CIDRS),\n"
	      "                             BridgeInterface (--pod-bridge-interface NAME) or\n"
	      "                             InterfaceNamePrefix (--pod-interface-name-prefix P)\n"
	      "      --masquerade-all[=BOOL]  masquerade all service traffic\n"
	      "      --nodeport-addresses CIDRS  addresses NodePorts answer on, either family\n"
	      "                             (default: all local;\n"
	      "                             also primary, localhost, all)\n"
	      "      --localhost-nodeports=BOOL  NodePorts on 127.0.0.1 (IPv4 only; default true;\n"
	      "                             --iptables-localhost-nodeports)\n"
	      "      --masquerade-bit N     fwmark bit for masquerading (default 14;\n"
	      "                             --iptables-masquerade-bit)\n"
	      "      --zone ZONE            this node's zone, for topology hints\n"
	      "      --no-random-fully      MASQUERADE without --random-fully\n"
	      "\n"
	      "Kernel:\n"
	      "      --backend KIND         auto (default: direct on legacy hosts, else nft),\n"
	      "                             direct, libiptc, nft (nf_tables in iptables-nft's\n"
	      "                             encoding, in process) or restore\n"
	      "      --lock-wait MS         wait at most MS for the xtables lock (default 5000)\n"
	      "      --set-sysctls          turn on net.ipv4.ip_forward (and route_localnet)\n"
	      "      --conntrack-max-per-core N, --conntrack-min N, --conntrack-tcp-be-liberal,\n"
	      "      --conntrack-tcp-timeout-established D, --conntrack-tcp-timeout-close-wait D,\n"
	      "      --conntrack-udp-timeout D, --conntrack-udp-timeout-stream D\n"
	      "                             kube-proxy's conntrack sysctls, written when given\n"
	      "      --oom-score-adj N      this process's OOM score adjustment (-1000..1000)\n"
	      "      --proxy-mode MODE      iptables or empty (anything else is refused)\n"
	      "      --compact-endpoints-threshold N  above N endpoints in all, no KUBE-SEP- chains:\n"
	      "                             about a third of the table per endpoint; traffic from\n"
	      "                             an endpoint to its own service is always masqueraded\n"
	      "                             (default 250000, 0 = never)\n"
	      "      --dispatch MODE        linear (kube-proxy's chains, one rule per service IP\n"
	      "                             and port), tree (KUBE-DSP- chains over address and\n"
	      "                             port ranges: a few rules per level) or auto (default:\n"
	      "                             the tree for a chain of --dispatch-threshold rules)\n"
	      "      --dispatch-threshold N  service rules in a chain from which auto builds the\n"
	      "                             tree (default 1000)\n"
	      "\n"
	      "Daemon:\n"
	      "      --min-sync-period D    batch changes arriving faster (default "
	      OPT_DEFAULT_MIN_SYNC_PERIOD ";\n"
	      "                             also --iptables-min-sync-period)\n"
	      "      --sync-period D        full check and repair period (default "
	      OPT_DEFAULT_SYNC_PERIOD ";\n"
	      "                             also --iptables-sync-period)\n"
	      "      --healthz-bind-address ADDR:PORT  /healthz, /livez (default "
	      OPT_DEFAULT_HEALTHZ_BIND ",\n"
	      "                             empty = off; --healthz-port N)\n"
	      "      --metrics-bind-address ADDR:PORT  /metrics, /proxyMode (default "
	      OPT_DEFAULT_METRICS_BIND ",\n"
	      "                             empty = off; --metrics-port N)\n"
	      "      --bind-address-hard-fail[=BOOL]  a server that cannot listen is fatal\n"
	      "                             (else logged and skipped)\n"
	      "      --allow-insecure-config  accept config files writable by other users\n"
	      "\n"
	      "  -v, --verbose              more detail (repeat for more; -v N / --v=N: 4+ is debug)\n"
	      "  -h, --help                 this text\n"
	      "      --version              print the version\n"
	      "\n"
	      "Health-check node ports of LoadBalancer services with externalTrafficPolicy Local\n"
	      "are served as kube-proxy serves them.  kube-proxy's other flags are accepted and\n"
	      "ignored with a warning; svcnat(8) lists every one.\n"
	      "\n"
	      "Exit status: 0 ok, 1 runtime failure, 2 usage or bad config (--diff: 0 equal,\n"
	      "1 different, 2 could not compare).\n",
	      f);
}

static int push_str(char ***v, size_t *n, const char *s)
{
	char **nv = reallocarray_z(*v, *n + 1, sizeof(**v));

	if (!nv)
		return -ENOMEM;
	*v = nv;
	nv[*n] = strdup(s);
	if (!nv[*n])
		return -ENOMEM;
	(*n)++;
	return 0;
}

static int set_str(char **dst, const char *s)
{
	free(*dst);
	*dst = strdup(s);
	return *dst ? 0 : -ENOMEM;
}

/* Split a comma-separated list; calls fn for each non-empty element. */
static int for_each_csv(const char *arg, const char *opt,
			int (*fn)(const char *item, void *ud), void *ud)
{
	_cleanup_free_ char *copy = strdup(arg);
	char *save = NULL, *tok;
	int r;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		while (isspace((unsigned char)*tok))
			tok++;
		if (!*tok)
			continue;
		r = fn(tok, ud);
		if (r < 0) {
			fprintf(stderr, "svcnat: %s: '%s' is not valid\n", opt, tok);
			return r;
		}
	}
	return 0;
}

struct addr_list {
	struct ipaddr **v;
	size_t *n;
};

struct net_list {
	struct ipnet **v;
	size_t *n;
};

static int add_addr(const char *s, void *ud)
{
	struct addr_list *l = ud;
	struct ipaddr a, *nv;

	if (ipaddr_parse(s, &a) < 0)
		return -EINVAL;
	nv = reallocarray_z(*l->v, *l->n + 1, sizeof(a));
	if (!nv)
		return -ENOMEM;
	nv[(*l->n)++] = a;
	*l->v = nv;
	return 0;
}

static int add_net(const char *s, void *ud)
{
	struct net_list *l = ud;
	struct ipnet a, *nv;

	if (ipnet_parse(s, &a) < 0)
		return -EINVAL;
	nv = reallocarray_z(*l->v, *l->n + 1, sizeof(a));
	if (!nv)
		return -ENOMEM;
	nv[(*l->n)++] = a;
	*l->v = nv;
	return 0;
}

static int parse_bool(const char *s, bool *ret)
{
	if (!s || streq(s, "true") || streq(s, "1") || streq(s, "yes")) {
		*ret = true;
		return 0;
	}
	if (streq(s, "false") || streq(s, "0") || streq(s, "no")) {
		*ret = false;
		return 0;
	}
	return -EINVAL;
}

static int parse_uint(const char *s, unsigned long max, unsigned long *ret)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v > max || *s == '-')
		return -EINVAL;
	*ret = v;
	return 0;
}

static int default_hostname(struct svcnat_options *o)
{
	char buf[256];
	char *p;

	if (o->hostname)
		return 0;
	if (gethostname(buf, sizeof(buf)) < 0)
		return -errno;
	buf[sizeof(buf) - 1] = '\0';
	/* kube-proxy lowercases the hostname, as node names are. */
	for (p = buf; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	return set_str(&o->hostname, buf);
}

/* Parsing state shared by the flags and a KubeProxyConfiguration's fields. */
struct pstate {
	struct svcnat_options *o;
	bool dry, diff, once, cleanup, dump, init_only;
	const char *from;  /* NULL: the command line; else "FILE: FIELD" */
	char name[160];    /* "--flag" or "FILE: field", for messages */
};

static int bad(struct pstate *ps, const char *arg, const char *want)
{
	fprintf(stderr, "svcnat: %s: '%s' is not %s\n", ps->name, arg ? arg : "", want);
	return -EINVAL;
}

static int parse_duration_arg(struct pstate *ps, const char *arg, uint64_t *ret)
{
	if (duration_parse(arg, ret) < 0)
		return bad(ps, arg, "a duration (e.g. 500ms, 1s, 2m, 1h30m)");
	return 0;
}

static int set_bool(struct pstate *ps, const char *arg, bool *dst)
{
	if (parse_bool(arg, dst) < 0)
		return bad(ps, arg, "true or false");
	return 0;
}

/* --nodeport-addresses: CIDRs, or kube-proxy's keywords primary, localhost, all. */
static int add_nodeport(const char *s, void *ud)
{
	struct svcnat_options *o = ud;
	struct net_list npa = { &o->plan.nodeport_addresses, &o->plan.n_nodeport_addresses };

	if (streq(s, "primary")) {
		o->nodeport_primary = true;
		return 0;
	}
	if (streq(s, "localhost"))
		s = "127.0.0.0/8";
	else if (streq(s, "all")) {
		int r = add_net("0.0.0.0/0", &npa);

		return r < 0 ? r : add_net("::/0", &npa);
	}
	return add_net(s, &npa);
}

/* kube-proxy's --healthz-port/--metrics-port: the port of the address. */
static int set_port(struct pstate *ps, const char *arg, char **addr, const char *def)
{
	unsigned long port;
	const char *cur = *addr ? *addr : def, *colon = strrchr(cur, ':');
	char *n = NULL;

	if (parse_uint(arg, 65535, &port) < 0)
		return bad(ps, arg, "a port number");
	if (port == 0)
		return set_str(addr, "");
	if (asprintf(&n, "%.*s:%lu", colon ? (int)(colon - cur) : 0, cur, port) < 0)
		return -ENOMEM;
	free(*addr);
	*addr = n;
	return 0;
}

static int set_detect_local(struct pstate *ps, const char *arg)
{
	static const struct {
		const char *name;
		enum detect_local_mode mode;
	} modes[] = {
		{ "", DETECT_LOCAL_CLUSTER_CIDR },
		{ "ClusterCIDR", DETECT_LOCAL_CLUSTER_CIDR },
		{ "NodeCIDR", DETECT_LOCAL_NODE_CIDR },
		{ "BridgeInterface", DETECT_LOCAL_BRIDGE },
		{ "InterfaceNamePrefix", DETECT_LOCAL_IFACE_PREFIX },
	};

	for (size_t i = 0; i < ARRAY_SIZE(modes); i++) {
		if (streq(arg, modes[i].name)) {
			ps->o->plan.detect_local_mode = modes[i].mode;
			return 0;
		}
	}
	return bad(ps, arg, "ClusterCIDR, NodeCIDR, BridgeInterface or InterfaceNamePrefix");
}

/* --bind-address: the node's primary IP (0.0.0.0 / :: = not set). */
static int set_bind_address(struct pstate *ps, const char *arg)
{
	struct svcnat_options *o = ps->o;
	struct ipaddr a, *nv;

	static const uint8_t zero[16];

	if (ipaddr_parse(arg, &a) < 0)
		return bad(ps, arg, "an IP address");
	if (!memcmp(a.u.b, zero, a.family == AF_INET ? 4 : 16))
		return 0;
	/* The primary node IP comes first; any --node-ip follow. */
	nv = reallocarray_z(o->plan.node_ips, o->plan.n_node_ips + 1, sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	memmove(nv + 1, nv, o->plan.n_node_ips * sizeof(*nv));
	nv[0] = a;
	o->plan.node_ips = nv;
	o->plan.n_node_ips++;
	o->bind_address = a;
	o->bind_address_set = true;
	/* Only the primary: the node's other addresses are still learnt
	 * (kube-proxy does not take the address list from it either). */
	return 0;
}

static int set_long(struct pstate *ps, const char *arg, long min, long max, long *dst)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < min || v > max) {
		char want[64];

		snprintf(want, sizeof(want), "a number %ld to %ld", min, max);
		return bad(ps, arg, want);
	}
	*dst = v;
	return 0;
}

/* klog's -v/--v=N: 4 and more is svcnat's debug level. */
static int set_verbosity(struct pstate *ps, const char *arg)
{
	long v;
	int r = set_long(ps, arg, 0, 100, &v);

	if (r >= 0)
		ps->o->verbose = v >= 4;
	return r;
}

static void warn_ignored(struct pstate *ps, const char *why)
{
	fprintf(stderr, "svcnat: warning: %s: accepted and ignored: %s\n", ps->name, why);
}

/* Which setting a flag (or field) sets, for the precedence of flags over the file. */
static unsigned given_bit(int c)
{
	switch (c) {
	case OPT_HOSTNAME: return GIVEN_HOSTNAME;
	case OPT_NODE_IP: case OPT_BIND_ADDRESS: return GIVEN_NODE_IP;
	case OPT_CLUSTER_CIDR: return GIVEN_CLUSTER_CIDR;
	case OPT_MASQ_ALL: return GIVEN_MASQ_ALL;
	case OPT_NODEPORT_ADDRS: return GIVEN_NODEPORT_ADDRS;
	case OPT_LOCALHOST_NODEPORTS: return GIVEN_LOCALHOST_NODEPORTS;
	case OPT_MASQ_BIT: return GIVEN_MASQ_BIT;
	case OPT_MIN_SYNC: return GIVEN_MIN_SYNC;
	case OPT_SYNC: return GIVEN_SYNC;
	case OPT_HEALTHZ: case OPT_HEALTHZ_PORT: return GIVEN_HEALTHZ;
	case OPT_METRICS: case OPT_METRICS_PORT: return GIVEN_METRICS;
	case OPT_DETECT_LOCAL: return GIVEN_DETECT_LOCAL;
	case OPT_POD_BRIDGE: return GIVEN_BRIDGE;
	case OPT_POD_PREFIX: return GIVEN_IFACE_PREFIX;
	case OPT_OOM: return GIVEN_OOM;
	case OPT_CT_MAX_PER_CORE: return GIVEN_CT_MAX_PER_CORE;
	case OPT_CT_MIN: return GIVEN_CT_MIN;
	case OPT_CT_ESTABLISHED: return GIVEN_CT_ESTABLISHED;
	case OPT_CT_CLOSE_WAIT: return GIVEN_CT_CLOSE_WAIT;
	case OPT_CT_LIBERAL: return GIVEN_CT_LIBERAL;
	case OPT_CT_UDP: return GIVEN_CT_UDP;
	case OPT_CT_UDP_STREAM: return GIVEN_CT_UDP_STREAM;
	case OPT_HARD_FAIL: return GIVEN_HARD_FAIL;
	case 'v': case OPT_KLOG_V: return GIVEN_VERBOSE;
	case OPT_KUBECONFIG: return GIVEN_KUBECONFIG;
	default: return 0;
	}
}

/* Apply one option.  0, -EINVAL (message printed), -ENOMEM. */
static int apply_opt(struct pstate *ps, int c, const char *arg)
{
	struct svcnat_options *o = ps->o;
	struct addr_list nodeips = { &o->plan.node_ips, &o->plan.n_node_ips };
	struct net_list cidrs = { &o->plan.cluster_cidrs, &o->plan.n_cluster_cidrs };
	struct net_list podc = { &o->plan.node_pod_cidrs, &o->plan.n_node_pod_cidrs };
	unsigned long v;
	long l;
	int r = 0;

	switch (c) {
	case 'v':
		o->verbose++;
		break;
	case OPT_KLOG_V:
		if (arg[0] == 'v') {
			/* -vv, -vvv: svcnat's repeated -v */
			o->verbose += 1 + (int)strspn(arg, "v");
			break;
		}
		r = set_verbosity(ps, arg);
		break;
	case 'c':
		r = push_str(&o->configs, &o->n_configs, arg);
		break;
	case OPT_DRY_RUN:
		ps->dry = true;
		break;
	case OPT_DIFF:
		ps->diff = true;
		break;
	case OPT_ONCE:
		ps->once = true;
		break;
	case OPT_CLEANUP:
		r = set_bool(ps, arg, &ps->cleanup);
		break;
	case OPT_INIT_ONLY:
		r = set_bool(ps, arg, &ps->init_only);
		break;
	case OPT_DUMP_STATE:
		ps->dump = true;
		break;
	case OPT_HOSTNAME: {
		char *p;

		/* kube-proxy trims and lowercases it; empty is unset. */
		while (isspace((unsigned char)*arg))
			arg++;
		if (!*arg)
			break;
		r = set_str(&o->hostname, arg);
		for (p = o->hostname; r >= 0 && *p; p++)
			*p = (char)tolower((unsigned char)*p);
		while (r >= 0 && p > o->hostname && isspace((unsigned char)p[-1]))
			*--p = '\0';
		break;
	}
	case OPT_NODE_IP:
		r = for_each_csv(arg, ps->name, add_addr, &nodeips);
		o->node_ips_given = true;
		break;
	case OPT_BIND_ADDRESS:
		r = set_bind_address(ps, arg);
		break;
	case OPT_CLUSTER_CIDR:
		r = for_each_csv(arg, ps->name, add_net, &cidrs);
		break;
	case OPT_NODE_POD_CIDR:
		r = for_each_csv(arg, ps->name, add_net, &podc);
		break;
	case OPT_MASQ_ALL:
		r = set_bool(ps, arg, &o->plan.masquerade_all);
		break;
	case OPT_NODEPORT_ADDRS:
		r = for_each_csv(arg, ps->name, add_nodeport, o);
		break;
	case OPT_LOCALHOST_NODEPORTS:
		r = set_bool(ps, arg, &o->plan.localhost_nodeports);
		break;
	case OPT_MASQ_BIT:
		r = parse_uint(arg, 31, &v);
		if (r < 0)
			bad(ps, arg, "a number 0-31");
		else
			o->plan.masquerade_bit = (unsigned)v;
		break;
	case OPT_ZONE:
		r = set_str(&o->zone, arg);
		break;
	case OPT_BACKEND:
		r = backend_kind_parse(arg, &o->backend.kind);
		if (r < 0)
			bad(ps, arg, "auto, libiptc, direct, nft or restore");
		break;
	case OPT_LOCK_WAIT:
		r = parse_uint(arg, 3600000, &v);
		if (r < 0)
			bad(ps, arg, "a number of milliseconds");
		else
			o->backend.lock_wait_ms = (unsigned)v;
		break;
	case OPT_SET_SYSCTLS:
		o->set_sysctls = true;
		break;
	case OPT_NO_RANDOM_FULLY:
		o->plan.random_fully = false;
		break;
	case OPT_COMPACT_THRESHOLD:
		r = parse_uint(arg, 1000000000, &v);
		if (r < 0)
			bad(ps, arg, "a number of endpoints");
		else
			o->plan.compact_endpoints_threshold = v;
		break;
	case OPT_DISPATCH:
		r = dispatch_mode_parse(arg, &o->plan.dispatch);
		if (r < 0)
			bad(ps, arg, "auto, linear or tree");
		break;
	case OPT_DISPATCH_THRESHOLD:
		r = parse_uint(arg, 1000000000, &v);
		if (r < 0 || !v) {
			r = -EINVAL;
			bad(ps, arg, "a number of rules (1 or more)");
		} else {
			o->plan.dispatch_threshold = v;
		}
		break;
	case OPT_MIN_SYNC:
	case OPT_SYNC: {
		uint64_t us;

		r = parse_duration_arg(ps, arg, &us);
		if (r >= 0)
			r = set_str(c == OPT_SYNC ? &o->sync_period : &o->min_sync_period, arg);
		break;
	}
	case OPT_HEALTHZ:
		r = set_str(&o->healthz_bind_address, arg);
		break;
	case OPT_METRICS:
		r = set_str(&o->metrics_bind_address, arg);
		break;
	case OPT_HEALTHZ_PORT:
		r = set_port(ps, arg, &o->healthz_bind_address, OPT_DEFAULT_HEALTHZ_BIND);
		break;
	case OPT_METRICS_PORT:
		r = set_port(ps, arg, &o->metrics_bind_address, OPT_DEFAULT_METRICS_BIND);
		break;
	case OPT_HARD_FAIL:
		r = set_bool(ps, arg, &o->bind_address_hard_fail);
		break;
	case OPT_INSECURE:
		o->allow_insecure_config = true;
		break;
	case OPT_ETCD_ENDPOINTS:
		r = set_str(&o->etcd_endpoints, arg);
		break;
	case OPT_ETCD_PREFIX:
		r = set_str(&o->etcd_prefix, arg);
		break;
	case OPT_ETCD_CACERT:
		r = set_str(&o->etcd_cacert, arg);
		break;
	case OPT_ETCD_CERT:
		r = set_str(&o->etcd_cert, arg);
		break;
	case OPT_ETCD_KEY:
		r = set_str(&o->etcd_key, arg);
		break;
	case OPT_KUBECONFIG:
		r = set_str(&o->kubeconfig, arg);
		break;
	case OPT_MASTER:
		r = set_str(&o->master, arg);
		break;
	case OPT_PROXY_MODE:
		if (*arg && !streq(arg, "iptables")) {
			fprintf(stderr,
				"svcnat: %s: '%s' is not supported: svcnat implements kube-proxy's "
				"iptables mode only (give iptables, or leave it empty)\n",
				ps->name, arg);
			r = -EINVAL;
		}
		break;
	case OPT_DETECT_LOCAL:
		r = set_detect_local(ps, arg);
		break;
	case OPT_POD_BRIDGE:
		r = set_str(&o->pod_bridge_interface, arg);
		o->plan.pod_bridge_interface = o->pod_bridge_interface;
		break;
	case OPT_POD_PREFIX:
		r = set_str(&o->pod_interface_prefix, arg);
		o->plan.pod_interface_prefix = o->pod_interface_prefix;
		break;
	case OPT_OOM:
		r = set_long(ps, arg, -1000, 1000, &l);
		if (r >= 0) {
			o->oom_score_adj = (int)l;
			o->oom_score_adj_set = true;
		}
		break;
	case OPT_CT_MAX_PER_CORE:
		r = set_long(ps, arg, 0, INT32_MAX, &o->conntrack.max_per_core);
		break;
	case OPT_CT_MIN:
		r = set_long(ps, arg, 0, INT32_MAX, &o->conntrack.min);
		break;
	case OPT_CT_ESTABLISHED:
		r = parse_duration_arg(ps, arg, &o->conntrack.tcp_established_usec);
		break;
	case OPT_CT_CLOSE_WAIT:
		r = parse_duration_arg(ps, arg, &o->conntrack.tcp_close_wait_usec);
		break;
	case OPT_CT_UDP:
		r = parse_duration_arg(ps, arg, &o->conntrack.udp_usec);
		break;
	case OPT_CT_UDP_STREAM:
		r = parse_duration_arg(ps, arg, &o->conntrack.udp_stream_usec);
		break;
	case OPT_CT_LIBERAL:
		r = set_bool(ps, arg, &o->conntrack.tcp_be_liberal);
		/* kube-proxy leaves out its INVALID drop rule in liberal mode. */
		if (r >= 0 && o->conntrack.tcp_be_liberal)
			o->plan.conntrack_tcp_liberal = true;
		break;
	case OPT_WRITE_CONFIG:
		fprintf(stderr, "svcnat: %s: not supported: svcnat does not write a "
			"KubeProxyConfiguration (it reads one: --config FILE)\n", ps->name);
		r = -EINVAL;
		break;
	case OPT_LOGGING_FORMAT:
		if (!streq(arg, "text") && *arg)
			warn_ignored(ps, "svcnat logs text only");
		break;
	default:
		if (c >= OPT_IGNORED && c < OPT_IGNORED + (int)ARRAY_SIZE(kp_ignored)) {
			/* A zero or false value asks for nothing: no warning. */
			if (!arg || !(streq(arg, "") || streq(arg, "0") || streq(arg, "0s") ||
				      streq(arg, "false")))
				warn_ignored(ps, kp_ignored[c - OPT_IGNORED].why);
			break;
		}
		return -EINVAL;
	}
	return r;
}

/* long_options plus kube-proxy's flags that are accepted and ignored. */
static struct option *all_options(void)
{
	size_t n = ARRAY_SIZE(long_options) - 1, k = ARRAY_SIZE(kp_ignored);
	struct option *v = calloc(n + k + 1, sizeof(*v));

	if (!v)
		return NULL;
	memcpy(v, long_options, n * sizeof(*v));
	for (size_t i = 0; i < k; i++)
		v[n + i] = (struct option){ kp_ignored[i].name, kp_ignored[i].has_arg, NULL,
					    OPT_IGNORED + (int)i };
	return v;
}

/* The option (flag) of a long name, from the table. */
static const struct option *find_option(const struct option *all, const char *name)
{
	for (; all->name; all++)
		if (streq(all->name, name))
			return all;
	return NULL;
}

/*
 * A KubeProxyConfiguration's fields, each with the flag of the same meaning
 * (NULL: accepted and ignored, with a warning unless the value is zero or
 * kube-proxy's default, given in `dflt`).  A path ending in '.' matches
 * every field under it.
 */
static const struct {
	const char *path;
	const char *flag;
	const char *dflt;
	const char *why;
} kp_fields[] = {
	{ "hostnameOverride", "hostname-override", NULL, NULL },
	{ "bindAddress", "bind-address", NULL, NULL },
	{ "healthzBindAddress", "healthz-bind-address", NULL, NULL },
	{ "metricsBindAddress", "metrics-bind-address", NULL, NULL },
	{ "bindAddressHardFail", "bind-address-hard-fail", NULL, NULL },
	{ "mode", "proxy-mode", NULL, NULL },
	{ "iptables.masqueradeBit", "iptables-masquerade-bit", NULL, NULL },
	{ "iptables.masqueradeAll", "masquerade-all", NULL, NULL },
	{ "iptables.localhostNodePorts", "iptables-localhost-nodeports", NULL, NULL },
	{ "iptables.syncPeriod", "iptables-sync-period", NULL, NULL },
	{ "iptables.minSyncPeriod", "iptables-min-sync-period", NULL, NULL },
	{ "detectLocalMode", "detect-local-mode", NULL, NULL },
	{ "detectLocal.bridgeInterface", "pod-bridge-interface", NULL, NULL },
	{ "detectLocal.interfaceNamePrefix", "pod-interface-name-prefix", NULL, NULL },
	{ "detectLocal.clusterCIDRs", "cluster-cidr", NULL, NULL },
	{ "clusterCIDR", "cluster-cidr", NULL, NULL },
	{ "nodePortAddresses", "nodeport-addresses", NULL, NULL },
	{ "oomScoreAdj", "oom-score-adj", NULL, NULL },
	{ "conntrack.maxPerCore", "conntrack-max-per-core", NULL, NULL },
	{ "conntrack.min", "conntrack-min", NULL, NULL },
	{ "conntrack.tcpEstablishedTimeout", "conntrack-tcp-timeout-established", NULL, NULL },
	{ "conntrack.tcpCloseWaitTimeout", "conntrack-tcp-timeout-close-wait", NULL, NULL },
	{ "conntrack.tcpBeLiberal", "conntrack-tcp-be-liberal", NULL, NULL },
	{ "conntrack.udpTimeout", "conntrack-udp-timeout", NULL, NULL },
	{ "conntrack.udpStreamTimeout", "conntrack-udp-timeout-stream", NULL, NULL },
	{ "logging.verbosity", "v", NULL, NULL },
	{ "logging.format", "logging-format", NULL, NULL },
	{ "featureGates.", NULL, NULL, "svcnat has no feature gates" },
	{ "clientConnection.kubeconfig", "kubeconfig", NULL, NULL },
	{ "clientConnection.", NULL, "application/vnd.kubernetes.protobuf,5,10",
	  "svcnat's sources have no such setting" },
	{ "logging.", NULL, "5s,5000000000", "svcnat's log has no such setting" },
	{ "enableProfiling", NULL, NULL, "svcnat has no /debug/pprof" },
	{ "showHiddenMetricsForVersion", NULL, NULL, "svcnat hides no metrics" },
	{ "iptables.snatNodeInternalIP", NULL, NULL, "not implemented by svcnat" },
	{ "ipvs.", NULL, NULL, "IPVS mode only" },
	{ "nftables.", NULL, "14", "nftables mode only" },
	{ "winkernel.", NULL, NULL, "Windows only" },
	{ "windowsRunAsService", NULL, NULL, "Windows only" },
	{ "configSyncPeriod", NULL, "15m0s,15m",
	  "svcnat follows its sources by change (inotify, watches), without a resync period" },
	{ "portRange", NULL, NULL, "unused by kube-proxy too" },
};

static bool in_csv(const char *list, const char *v)
{
	size_t n = strlen(v);

	for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (strncmp(p, v, n) == 0 && (p[n] == ',' || !p[n]))
			return true;
	return false;
}

/* A value that sets nothing: null, empty, zero, false, or kube-proxy's default. */
static bool kp_zero(const struct kpfield *f, const char *dflt)
{
	return f->null || !f->value[0] || in_csv("0,0s,false,0.0", f->value) || (dflt && in_csv(dflt, f->value));
}

static int kp_field(struct pstate *ps, const struct option *all, const struct kpconfig *kc,
		    const struct kpfield *f)
{
	struct svcnat_options *o = ps->o;
	const struct option *opt;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(kp_fields); i++) {
		const char *m = kp_fields[i].path;
		size_t n = strlen(m);

		if (m[n - 1] == '.' ? strncmp(f->path, m, n) == 0 : streq(f->path, m))
			break;
	}
	snprintf(ps->name, sizeof(ps->name), "%s: %s", kc->path, f->path);
	if (i == ARRAY_SIZE(kp_fields)) {
		fprintf(stderr, "svcnat: warning: %s (line %u): not a KubeProxyConfiguration field "
			"svcnat knows; ignored\n", ps->name, f->line);
		return 0;
	}
	if (!kp_fields[i].flag) {
		if (!kp_zero(f, kp_fields[i].dflt))
			warn_ignored(ps, kp_fields[i].why);
		return 0;
	}
	/* Empty or null: kube-proxy's default, which is svcnat's. */
	if (f->null || !f->value[0])
		return 0;
	opt = find_option(all, kp_fields[i].flag);
	if (!opt)
		return -EINVAL;
	/* Flags on the command line override the file. */
	if (o->given & given_bit(opt->val))
		return 0;
	return apply_opt(ps, opt->val, f->value);
}

/* Drop configs[i] (it is the KubeProxyConfiguration, not a service source). */
static void drop_config(struct svcnat_options *o, size_t i)
{
	free(o->configs[i]);
	memmove(&o->configs[i], &o->configs[i + 1], (o->n_configs - i - 1) * sizeof(*o->configs));
	o->n_configs--;
}

/*
 * Find the --config that is a KubeProxyConfiguration (at most one), take it
 * out of the service sources and apply its fields.  0 or an exit code.
 */
static int kpconfig_apply_all(struct pstate *ps, const struct option *all)
{
	struct svcnat_options *o = ps->o;
	size_t i = 0;
	int r;

	while (i < o->n_configs) {
		_cleanup_(kpconfig_freep) struct kpconfig *kc = NULL;
		struct diag_list d;

		diag_list_init(&d);
		r = kpconfig_read(o->configs[i], &kc, &d);
		diag_list_print(&d, stderr);
		diag_list_done(&d);
		if (r == -ENOMEM) {
			fputs("svcnat: out of memory\n", stderr);
			return EXIT_RUNTIME;
		}
		if (r < 0) {
			if (r != -EINVAL)
				fprintf(stderr, "svcnat: %s: %s\n", o->configs[i], strerror(-r));
			return EXIT_USAGE;
		}
		if (r == 0) {
			i++;
			continue;
		}
		if (o->kp_config) {
			fprintf(stderr, "svcnat: %s: a second KubeProxyConfiguration (the first is %s)\n",
				o->configs[i], o->kp_config);
			return EXIT_USAGE;
		}
		if (!streq(kc->api_version, "kubeproxy.config.k8s.io/v1alpha1")) {
			fprintf(stderr, "svcnat: %s: apiVersion '%s': svcnat reads "
				"kubeproxy.config.k8s.io/v1alpha1\n", o->configs[i], kc->api_version);
			return EXIT_USAGE;
		}
		o->kp_config = strdup(o->configs[i]);
		if (!o->kp_config)
			return EXIT_RUNTIME;
		for (size_t k = 0; k < kc->n_fields; k++) {
			r = kp_field(ps, all, kc, &kc->fields[k]);
			if (r == -ENOMEM)
				return EXIT_RUNTIME;
			if (r < 0)
				return EXIT_USAGE;
		}
		drop_config(o, i);
	}
	return 0;
}

/* Checks and derived settings once every flag and field is in.  0 or an exit code. */
static int options_finish(struct svcnat_options *o)
{
	struct plan_settings *s = &o->plan;

	if (s->masquerade_bit > 31) {
		fputs("svcnat: --masquerade-bit must be 0-31\n", stderr);
		return EXIT_USAGE;
	}
	if (default_hostname(o) < 0) {
		fputs("svcnat: cannot determine the hostname: give --hostname\n", stderr);
		return EXIT_USAGE;
	}
	if (o->nodeport_primary) {
		/* kube-proxy takes the Node object's primary IP; svcnat has
		 * no Node object, so the primary IP is --node-ip's first. */
		struct ipnet *nv;

		if (!s->n_node_ips && o->kube)
			goto primary_later; /* the Node object's, once listed */
		if (!s->n_node_ips) {
			fputs("svcnat: --nodeport-addresses primary needs the node's primary IP: "
			      "give --node-ip (or --bind-address), or use the API source\n",
			      stderr);
			return EXIT_USAGE;
		}
		/* The primary IP of each family (kube-proxy's NodeIPs). */
		bool seen4 = false, seen6 = false;

		for (size_t i = 0; i < s->n_node_ips; i++) {
			bool v4 = s->node_ips[i].family == AF_INET;

			if (v4 ? seen4 : seen6)
				continue;
			nv = reallocarray_z(s->nodeport_addresses, s->n_nodeport_addresses + 1,
					    sizeof(*nv));
			if (!nv)
				return EXIT_RUNTIME;
			nv[s->n_nodeport_addresses++] =
				(struct ipnet){ .addr = s->node_ips[i], .plen = v4 ? 32 : 128 };
			s->nodeport_addresses = nv;
			*(v4 ? &seen4 : &seen6) = true;
		}
		o->nodeport_primary = false; /* resolved */
	}
primary_later:
	switch (s->detect_local_mode) {
	case DETECT_LOCAL_BRIDGE:
		if (!s->pod_bridge_interface || !*s->pod_bridge_interface) {
			fputs("svcnat: --detect-local-mode=BridgeInterface needs --pod-bridge-interface\n",
			      stderr);
			return EXIT_USAGE;
		}
		break;
	case DETECT_LOCAL_IFACE_PREFIX:
		if (!s->pod_interface_prefix || !*s->pod_interface_prefix) {
			fputs("svcnat: --detect-local-mode=InterfaceNamePrefix needs "
			      "--pod-interface-name-prefix\n",
			      stderr);
			return EXIT_USAGE;
		}
		break;
	case DETECT_LOCAL_NODE_CIDR:
		if (!s->n_node_pod_cidrs && !o->kube) {
			/* kube-proxy reads the Node's spec.podCIDRs from the API. */
			fputs("svcnat: --detect-local-mode=NodeCIDR needs the node's pod CIDRs: from "
			      "the API server's Node object (--kubeconfig) or --node-pod-cidr CIDR[,CIDR]\n",
			      stderr);
			return EXIT_USAGE;
		}
		break;
	case DETECT_LOCAL_CLUSTER_CIDR:
		break;
	}
	o->backend.verbose = o->verbose > 0;
	return 0;
}

int options_parse(int argc, char **argv, struct svcnat_options *o, bool *ret_diff, bool *ret_exit)
{
	_cleanup_free_ struct option *all = all_options();
	struct pstate ps = { .o = o };
	int c, idx, r = 0, modes;

	if (!all) {
		fputs("svcnat: out of memory\n", stderr);
		return EXIT_RUNTIME;
	}
	if (argc > 1 && streq(argv[1], "etcd-load")) {
		o->mode = MODE_ETCD_LOAD;
		argv[1] = argv[0];
		argv++;
		argc--;
	}
	optind = 0; /* glibc: start over (the tests parse many times) */
	while ((c = getopt_long(argc, argv, "hv::c:", all, &idx)) != -1) {
		const char *arg = optarg;

		if (c == 'h') {
			usage(stdout);
			*ret_exit = true;
			return 0;
		}
		if (c == OPT_VERSION) {
			printf("svcnat %s\n", PACKAGE_VERSION);
			*ret_exit = true;
			return 0;
		}
		if (c == '?' || c == ':') {
			fputs("Try 'svcnat --help'.\n", stderr);
			return EXIT_USAGE;
		}
		if (c == 'v') {
			/* svcnat's -v (more detail), or klog's -v N / -v=N. */
			snprintf(ps.name, sizeof(ps.name), "-v");
			if (arg && *arg == '=')
				arg++;
			if (!arg && optind < argc && argv[optind][0] >= '0' && argv[optind][0] <= '9')
				arg = argv[optind++];
			if (arg)
				c = OPT_KLOG_V;
		} else {
			snprintf(ps.name, sizeof(ps.name), "--%s",
				 c == 'c' ? "config" : all[idx].name);
		}
		r = apply_opt(&ps, c, arg);
		o->given |= given_bit(c);
		if (r == -ENOMEM) {
			fputs("svcnat: out of memory\n", stderr);
			return EXIT_RUNTIME;
		}
		if (r < 0)
			return EXIT_USAGE;
	}
	for (; optind < argc; optind++)
		if (push_str(&o->args, &o->n_args, argv[optind]) < 0)
			return EXIT_RUNTIME;

	r = kpconfig_apply_all(&ps, all);
	if (r)
		return r;

	modes = ps.dry + ps.once + ps.cleanup + ps.dump + ps.init_only;
	if (modes > 1 || (ps.diff && !ps.dry)) {
		fputs("svcnat: choose one of --dry-run [--diff], --once, --cleanup, --dump-state, "
		      "--init-only\n",
		      stderr);
		return EXIT_USAGE;
	}
	if (o->mode != MODE_ETCD_LOAD) {
		if (ps.dry)
			o->mode = ps.diff ? MODE_DIFF : MODE_DRY_RUN;
		else if (ps.once)
			o->mode = MODE_ONCE;
		else if (ps.cleanup)
			o->mode = MODE_CLEANUP;
		else if (ps.dump)
			o->mode = MODE_DUMP_STATE;
		else if (ps.init_only)
			o->mode = MODE_INIT_ONLY;
		if (o->n_args) {
			fprintf(stderr, "svcnat: unexpected argument '%s'\n", o->args[0]);
			return EXIT_USAGE;
		}
		/* kube-proxy's in-cluster configuration, when nothing else is given. */
		o->kube = o->kubeconfig || o->master ||
			  (!o->n_configs && !o->etcd_endpoints && getenv("KUBERNETES_SERVICE_HOST"));
		if (o->mode != MODE_CLEANUP && o->mode != MODE_INIT_ONLY && !o->n_configs &&
		    !o->etcd_endpoints && !o->kube) {
			fprintf(stderr, "svcnat: no service source: give --config PATH (or "
				"--etcd-endpoints, --kubeconfig)%s\n",
				o->kp_config ? "; a KubeProxyConfiguration sets settings only" : "");
			return EXIT_USAGE;
		}
	}
	r = options_finish(o);
	if (r)
		return r;
	*ret_diff = ps.diff;
	return 0;
}
