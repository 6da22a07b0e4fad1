/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The command line: svcnat's options and kube-proxy's flag names, into
 * struct svcnat_options.  Messages go to stderr.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/kpflags.h"
#include "cli/optval.h"
#include "cli/options.h"
#include "core/duration.h"
#include "core/syncpolicy.h"
#include "sources/etcd/etcdwire.h"
#include "sys/host.h"
#include "sys/par.h"
#include "util.h"

void options_init(struct svcnat_options *o)
{
	memset(o, 0, sizeof(*o));
	o->mode = MODE_DAEMON;
	o->logtostderr = true; /* klog's default */
	plan_settings_init(&o->plan);
	/* lock_path, lock_wait_ms and commit_retries left 0: the backend's
	 * defaults (backend.h). */
	o->backend.kind = BACKEND_AUTO;
	o->conntrack.max_per_core = -1;
	o->conntrack.min = -1;
	o->conntrack.tcp_established_usec = CT_TIMEOUT_DEFAULT;
	o->conntrack.tcp_close_wait_usec = CT_TIMEOUT_DEFAULT;
}

void options_done(struct svcnat_options *o)
{
	size_t i;

	for (i = 0; i < o->n_configs; i++)
		free(o->configs[i]);
	free(o->configs);
	for (i = 0; i < o->n_args; i++)
		free(o->args[i]);
	free(o->args);
	free(o->hostname);
	free(o->zone);
	free(o->plan.node_ips);
	free(o->plan.cluster_cidrs);
	free(o->plan.nodeport_addresses);
	free(o->plan.node_pod_cidrs);
	free(o->pod_bridge_interface);
	free(o->pod_interface_prefix);
	free(o->kp_config);
	free(o->vmodule);
	free(o->log_file);
	free(o->min_sync_period);
	free(o->sync_period);
	free(o->healthz_bind_address);
	free(o->metrics_bind_address);
	free(o->etcd_endpoints);
	free(o->etcd_prefix);
	free(o->etcd_cacert);
	free(o->etcd_cert);
	free(o->etcd_key);
	free(o->kubeconfig);
	free(o->master);
	free(o->kube_content_type);
	free(o->kube_accept_content_types);
	memset(o, 0, sizeof(*o));
}

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
	{ "nfacct", required_argument, NULL, OPT_NFACCT },
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
	{ "kube-api-content-type", required_argument, NULL, OPT_KUBE_CONTENT_TYPE },
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
	{ "log-flush-frequency", required_argument, NULL, OPT_LOG_FLUSH },
	{ "vmodule", required_argument, NULL, OPT_VMODULE },
	{ "log-file", required_argument, NULL, OPT_LOG_FILE },
	{ "logtostderr", optional_argument, NULL, OPT_LOGTOSTDERR },
	{ "alsologtostderr", optional_argument, NULL, OPT_ALSOLOGTOSTDERR },
	{ NULL, 0, NULL, 0 },
};

/* --help: the synopsis and what svcnat does. */
static const char usage_head[] =
	      "Usage: svcnat [MODE] --config PATH [OPTIONS]\n"
	      "       svcnat etcd-load --etcd-endpoints URL[,URL...] FILE\n"
	      "\n"
	      "Programs Kubernetes Services as iptables NAT rules, the way kube-proxy's iptables\n"
	      "mode does, from Kubernetes JSON (Service, EndpointSlice, Endpoints) or the\n"
	      "original kube-proxy config format.\n";

/* --help: the modes. */
static const char usage_modes[] =
	      "\n"
	      "Modes (default: run as a daemon, following the sources):\n"
	      "      --dry-run              print the rules as iptables-save text (then the IPv6\n"
	      "                             ones as ip6tables-save text); no privileges\n"
	      "      --dry-run --diff       compare the plan with the kernel: exit 0 equal,\n"
	      "                             1 different, 2 could not compare\n"
	      "      --once                 write the rules once and exit\n"
	      "      --cleanup[=BOOL]       remove every chain and jump rule svcnat (or kube-proxy)\n"
	      "                             owns, from every iptables flavour present\n"
	      "                             (--once, --cleanup and a second daemon are refused,\n"
	      "                             exit 1, while a daemon runs in the network namespace)\n"
	      "      --init-only[=BOOL]     write the sysctls asked for (--conntrack-*,\n"
	      "                             --set-sysctls) and exit\n"
	      "      --dump-state           print the merged services and endpoints svcnat understood\n";

/* --help: where the services come from. */
static const char usage_sources[] =
	      "\n"
	      "Sources:\n"
	      "  -c, --config PATH          JSON file, directory of *.json, or - for stdin\n"
	      "                             (repeatable; on conflicts the first wins).  The\n"
	      "                             daemon reads a directory's changed files again, a\n"
	      "                             single file whole at every change (its unchanged\n"
	      "                             List items not decoded again).  A file\n"
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
	      "      --kube-api-content-type TYPE  what the API source asks for:\n"
	      "                             application/vnd.kubernetes.protobuf (default, with\n"
	      "                             JSON where the server answers JSON) or\n"
	      "                             application/json\n";

/* --help: this node. */
static const char usage_node[] =
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
	      "      --no-random-fully      MASQUERADE without --random-fully\n";

/* --help: the kernel: the writer, sysctls, the rules' shape. */
static const char usage_kernel[] =
	      "\n"
	      "Kernel:\n"
	      "      --backend KIND         auto (default: direct on legacy hosts, else nft),\n"
	      "                             direct, libiptc, nft (nf_tables in iptables-nft's\n"
	      "                             encoding, in process) or restore; ip6tables too\n"
	      "                             with every one of them (where the host has it;\n"
	      "                             nft: ip6 nat/filter in ip6tables-nft's encoding)\n"
	      "      --lock-wait MS         wait at most MS for the xtables lock (default 5000)\n"
	      "      --set-sysctls          turn on net.ipv4.ip_forward (and route_localnet)\n"
	      "      --conntrack-max-per-core N, --conntrack-min N, --conntrack-tcp-be-liberal,\n"
	      "      --conntrack-tcp-timeout-established D, --conntrack-tcp-timeout-close-wait D,\n"
	      "      --conntrack-udp-timeout D, --conntrack-udp-timeout-stream D\n"
	      "                             kube-proxy's conntrack sysctls, written when given\n"
	      "      --oom-score-adj N      this process's OOM score adjustment (-1000..1000;\n"
	      "                             the daemon's default: kube-proxy's -999)\n"
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
	      "      --nfacct MODE          kube-proxy's nfacct counters (made by --once and the\n"
	      "                             daemon), their -m nfacct rules and metrics: auto\n"
	      "                             (default) where the kernel can make them, as\n"
	      "                             kube-proxy; on: always (fatal if not); off: none\n";

/* --help: the daemon's periods, servers and file checks. */
static const char usage_daemon[] =
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
	      "                             an IP alone: port 10256; empty = off;\n"
	      "                             --healthz-port N)\n"
	      "      --metrics-bind-address ADDR:PORT  /metrics, /proxyMode (default "
	      OPT_DEFAULT_METRICS_BIND ",\n"
	      "                             an IP alone: port 10249; empty = off;\n"
	      "                             --metrics-port N)\n"
	      "      --bind-address-hard-fail[=BOOL]  a server that cannot listen is fatal\n"
	      "                             (else logged and skipped)\n"
	      "      --allow-insecure-config  accept config files writable by other users\n"
	      "                             (services, KubeProxyConfiguration, kubeconfig and\n"
	      "                             its token, CA, certificate and key files, the\n"
	      "                             --etcd-cacert/--etcd-cert/--etcd-key files)\n";

/* --help: the log, help and version. */
static const char usage_logging[] =
	      "\n"
	      "Logging (to standard error):\n"
	      "  -v N, --v=N                verbosity as kube-proxy's: 0 (default), 2 adds each\n"
	      "                             sync's summary, 4 the details (-v alone: 4)\n"
	      "      --logging-format FMT   text (klog's lines, the daemon's default) or json\n"
	      "                             (component-base's); one-shot modes print plain\n"
	      "                             'error: ...' lines unless this is given\n"
	      "      --vmodule PAT=N,...    klog's per-file verbosity: N for svcnat's source\n"
	      "                             files matching PAT ('sync=4', 'kube*=5',\n"
	      "                             'src/daemon/*=4')\n"
	      "      --log-flush-frequency D  accepted: every line is written at once\n"
	      "  -h, --help                 this text\n"
	      "      --version              print the version\n";

/* --help: what else is accepted; the exit status. */
static const char usage_tail[] =
	      "\n"
	      "Health-check node ports of LoadBalancer services with externalTrafficPolicy Local\n"
	      "are served as kube-proxy serves them.  kube-proxy's other flags are accepted and\n"
	      "ignored with a warning; svcnat(8) lists every one.\n"
	      "\n"
	      "Exit status: 0 ok, 1 runtime failure, 2 usage or bad config (--diff: 0 equal,\n"
	      "1 different, 2 could not compare).\n";

static void usage(FILE *f)
{
	static const char *const text[] = {
		usage_head,   usage_modes,  usage_sources, usage_node,
		usage_kernel, usage_daemon, usage_logging, usage_tail,
	};

	for (size_t i = 0; i < ARRAY_SIZE(text); i++)
		fputs(text[i], f);
}

static int default_hostname(struct svcnat_options *o)
{
	if (o->hostname)
		return 0;
	return host_name(&o->hostname);
}

/*
 * The daemon's sync periods as kube-proxy's validation wants them
 * (syncPeriod > 0 and >= minSyncPeriod), checked here, before anything
 * is done, rather than when the daemon sets its loop up.  Each text was
 * parsed as a duration already.  0 or EXIT_USAGE.
 */
int options_sync_periods(const struct svcnat_options *o, uint64_t *ret_min, uint64_t *ret_period)
{
	struct syncpolicy_config c;
	uint64_t min, period;

	if (duration_parse(o->min_sync_period ? o->min_sync_period : OPT_DEFAULT_MIN_SYNC_PERIOD,
			   &min) < 0 ||
	    duration_parse(o->sync_period ? o->sync_period : OPT_DEFAULT_SYNC_PERIOD, &period) < 0 ||
	    syncpolicy_config_periods(&c, min, period) < 0)
		return -EINVAL;
	*ret_min = min;
	*ret_period = period;
	return 0;
}

static int check_sync_periods(const struct svcnat_options *o)
{
	uint64_t min, period;

	if (o->mode != MODE_DAEMON || options_sync_periods(o, &min, &period) == 0)
		return 0;
	fputs("svcnat: --sync-period must be > 0 and >= --min-sync-period\n", stderr);
	return EXIT_USAGE;
}

/* Checks and derived settings once every flag and field is in.  0 or an exit code. */
static int options_finish(struct svcnat_options *o)
{
	struct plan_settings *s = &o->plan;

	if (check_sync_periods(o))
		return EXIT_USAGE;
	/* The pipeline would refuse it too, but only once running. */
	for (size_t i = 0; i < o->n_configs; i++)
		for (size_t j = 0; j < i; j++)
			if (streq(o->configs[i], o->configs[j])) {
				fprintf(stderr, "svcnat: %s: given twice with --config\n",
					o->configs[i]);
				return EXIT_USAGE;
			}
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
	o->backend.verbose = o->log_verbosity >= 4;
	o->backend.threads = par_threads();
	o->backend.par = par_run;
	return 0;
}

/* Arguments normalize_flag_names() renamed, freed when parsing ends. */
struct argv_copies {
	char **v;
	size_t n;
};

static void argv_copies_done(struct argv_copies *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->v[i]);
	free(c->v);
}

/* kube-proxy's flag set reads '_' in a flag's name as '-' (component-base
 * cliflag.WordSepNormalizeFunc): --log_dir is --log-dir.  Names only, up to
 * '=' and before a "--" that ends the options.  A renamed argument is a copy
 * put in argv[i] (the caller's strings are not written).  0 or -ENOMEM. */
static int normalize_flag_names(int argc, char **argv, struct argv_copies *c)
{
	for (int i = 1; i < argc; i++) {
		size_t name;
		char *copy, **grown;

		if (streq(argv[i], "--"))
			return 0;
		if (strncmp(argv[i], "--", 2) != 0)
			continue;
		name = strcspn(argv[i], "=");
		if (!memchr(argv[i], '_', name))
			continue;
		copy = strdup(argv[i]);
		grown = copy ? realloc(c->v, (c->n + 1) * sizeof(*grown)) : NULL;
		if (!grown) {
			free(copy);
			return -ENOMEM;
		}
		c->v = grown;
		c->v[c->n++] = copy;
		for (size_t k = 2; k < name; k++)
			if (copy[k] == '_')
				copy[k] = '-';
		argv[i] = copy;
	}
	return 0;
}

/* The flags, each into ps->o in the order given.  0, or the exit code;
 * *ret_exit after --help and --version. */
static int parse_flags(int argc, char **argv, const struct option *all, struct pstate *ps,
		       bool *ret_exit)
{
	int c, idx, r;

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
			snprintf(ps->name, sizeof(ps->name), "-v");
			if (arg && *arg == '=')
				arg++;
			if (!arg && optind < argc && argv[optind][0] >= '0' && argv[optind][0] <= '9')
				arg = argv[optind++];
			if (arg)
				c = OPT_KLOG_V;
		} else {
			snprintf(ps->name, sizeof(ps->name), "--%s",
				 c == 'c' ? "config" : all[idx].name);
		}
		r = c >= OPT_IGNORED ? kpflags_ignore(ps, c, arg) : opt_apply(ps, c, arg);
		ps->o->given |= opt_given_bit(c);
		if (r == -ENOMEM) {
			fputs("svcnat: out of memory\n", stderr);
			return EXIT_RUNTIME;
		}
		if (r < 0)
			return EXIT_USAGE;
	}
	for (; optind < argc; optind++)
		if (opt_push_str(&ps->o->args, &ps->o->n_args, argv[optind]) < 0)
			return EXIT_RUNTIME;
	return 0;
}

/* The mode the flags chose, and whether there is a source to follow.  0 or
 * EXIT_USAGE. */
static int choose_mode(struct svcnat_options *o, const struct pstate *ps)
{
	int modes;

	modes = ps->dry + ps->once + ps->cleanup + ps->dump + ps->init_only;
	if (modes > 1 || (ps->diff && !ps->dry)) {
		fputs("svcnat: choose one of --dry-run [--diff], --once, --cleanup, --dump-state, "
		      "--init-only\n",
		      stderr);
		return EXIT_USAGE;
	}
	if (o->mode != MODE_ETCD_LOAD) {
		if (ps->dry)
			o->mode = ps->diff ? MODE_DIFF : MODE_DRY_RUN;
		else if (ps->once)
			o->mode = MODE_ONCE;
		else if (ps->cleanup)
			o->mode = MODE_CLEANUP;
		else if (ps->dump)
			o->mode = MODE_DUMP_STATE;
		else if (ps->init_only)
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
	return 0;
}

int options_parse(int argc, char **argv, struct svcnat_options *o, bool *ret_diff, bool *ret_exit)
{
	_cleanup_free_ struct option *all = kpflags_all_options(long_options, ARRAY_SIZE(long_options) - 1);
	_cleanup_(argv_copies_done) struct argv_copies copies = { 0 };
	struct pstate ps = { .o = o };
	bool done = false;
	int r;

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
	if (normalize_flag_names(argc, argv, &copies) < 0) {
		fputs("svcnat: out of memory\n", stderr);
		return EXIT_RUNTIME;
	}
	r = parse_flags(argc, argv, all, &ps, &done);
	if (r)
		return r;
	if (done) {
		*ret_exit = true;
		return 0;
	}
	r = kpflags_apply_config(&ps, all);
	if (r)
		return r;

	r = choose_mode(o, &ps);
	if (r)
		return r;
	r = options_finish(o);
	if (r)
		return r;
	*ret_diff = ps.diff;
	return 0;
}
