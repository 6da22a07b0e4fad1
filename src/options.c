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

#include "options.h"
#include "sources/etcdwire.h"
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
	OPT_VERSION,
};

static const struct option long_options[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ "verbose", no_argument, NULL, 'v' },
	{ "config", required_argument, NULL, 'c' },
	{ "dry-run", no_argument, NULL, OPT_DRY_RUN },
	{ "diff", no_argument, NULL, OPT_DIFF },
	{ "once", no_argument, NULL, OPT_ONCE },
	{ "cleanup", no_argument, NULL, OPT_CLEANUP },
	{ "dump-state", no_argument, NULL, OPT_DUMP_STATE },
	{ "hostname", required_argument, NULL, OPT_HOSTNAME },
	{ "hostname-override", required_argument, NULL, OPT_HOSTNAME },
	{ "node-ip", required_argument, NULL, OPT_NODE_IP },
	{ "cluster-cidr", required_argument, NULL, OPT_CLUSTER_CIDR },
	{ "masquerade-all", no_argument, NULL, OPT_MASQ_ALL },
	{ "nodeport-addresses", required_argument, NULL, OPT_NODEPORT_ADDRS },
	{ "localhost-nodeports", optional_argument, NULL, OPT_LOCALHOST_NODEPORTS },
	{ "masquerade-bit", required_argument, NULL, OPT_MASQ_BIT },
	{ "zone", required_argument, NULL, OPT_ZONE },
	{ "backend", required_argument, NULL, OPT_BACKEND },
	{ "set-sysctls", no_argument, NULL, OPT_SET_SYSCTLS },
	{ "no-random-fully", no_argument, NULL, OPT_NO_RANDOM_FULLY },
	{ "compact-endpoints-threshold", required_argument, NULL, OPT_COMPACT_THRESHOLD },
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
	{ NULL, 0, NULL, 0 },
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
	      "      --dry-run --diff       compare the plan with the kernel; exit 1 if they differ\n"
	      "      --once                 write the rules once and exit\n"
	      "      --cleanup              remove every chain and jump rule svcnat (or kube-proxy) owns\n"
	      "      --dump-state           print the merged services and endpoints svcnat understood\n"
	      "\n"
	      "Sources:\n"
	      "  -c, --config PATH          JSON file, directory of *.json, or - for stdin\n"
	      "                             (repeatable; on conflicts the first wins)\n"
	      "      --etcd-endpoints URLS  etcd v3 members, comma-separated (cluster mode)\n"
	      "      --etcd-prefix PREFIX   key prefix (default " ETCD_DEFAULT_PREFIX ")\n"
	      "      --etcd-cacert/--etcd-cert/--etcd-key FILE   TLS for etcd\n"
	      "\n"
	      "Node settings (named as kube-proxy's flags):\n"
	      "      --hostname NAME        which endpoints are local (default: this host's name)\n"
	      "      --node-ip IP           the node's address; repeatable, the first is primary\n"
	      "      --cluster-cidr CIDRS   pod network(s); traffic from outside is masqueraded\n"
	      "      --masquerade-all       masquerade all service traffic\n"
	      "      --nodeport-addresses CIDRS  addresses NodePorts answer on (default: all local)\n"
	      "      --localhost-nodeports=BOOL  NodePorts on 127.0.0.1 (default true)\n"
	      "      --masquerade-bit N     fwmark bit for masquerading (default 14)\n"
	      "      --zone ZONE            this node's zone, for topology hints\n"
	      "      --no-random-fully      MASQUERADE without --random-fully\n"
	      "\n"
	      "Kernel:\n"
	      "      --backend KIND         auto (default: direct on legacy hosts, else restore),\n"
	      "                             direct, libiptc or restore\n"
	      "      --lock-wait MS         wait at most MS for the xtables lock (default 5000)\n"
	      "      --set-sysctls          turn on net.ipv4.ip_forward (and route_localnet)\n"
	      "      --compact-endpoints-threshold N  above N endpoints in all, no KUBE-SEP- chains:\n"
	      "                             about a third of the table per endpoint; traffic from\n"
	      "                             an endpoint to its own service is always masqueraded\n"
	      "                             (default 250000, 0 = never)\n"
	      "\n"
	      "Daemon:\n"
	      "      --min-sync-period D    batch changes arriving faster (default "
	      OPT_DEFAULT_MIN_SYNC_PERIOD ")\n"
	      "      --sync-period D        full check and repair period (default "
	      OPT_DEFAULT_SYNC_PERIOD ")\n"
	      "      --healthz-bind-address ADDR:PORT  (default "
	      OPT_DEFAULT_HEALTHZ_BIND ", empty = off)\n"
	      "      --metrics-bind-address ADDR:PORT  (default "
	      OPT_DEFAULT_METRICS_BIND ", empty = off)\n"
	      "      --allow-insecure-config  accept config files writable by other users\n"
	      "\n"
	      "  -v, --verbose              more detail (repeat for more)\n"
	      "  -h, --help                 this text\n"
	      "      --version              print the version\n"
	      "\n"
	      "Exit status: 0 ok, 1 runtime failure (or --diff: differences), 2 usage or bad config.\n",
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

int options_parse(int argc, char **argv, struct svcnat_options *o, bool *ret_diff, bool *ret_exit)
{
	bool dry = false, diff = false, once = false, cleanup = false, dump = false;
	struct addr_list nodeips = { &o->plan.node_ips, &o->plan.n_node_ips };
	struct net_list cidrs = { &o->plan.cluster_cidrs, &o->plan.n_cluster_cidrs };
	struct net_list npa = { &o->plan.nodeport_addresses, &o->plan.n_nodeport_addresses };
	unsigned long v;
	int c, r = 0, modes;

	if (argc > 1 && streq(argv[1], "etcd-load")) {
		o->mode = MODE_ETCD_LOAD;
		argv[1] = argv[0];
		argv++;
		argc--;
	}
	while ((c = getopt_long(argc, argv, "hvc:", long_options, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			*ret_exit = true;
			return 0;
		case OPT_VERSION:
			printf("svcnat %s\n", PACKAGE_VERSION);
			*ret_exit = true;
			return 0;
		case 'v':
			o->verbose++;
			break;
		case 'c':
			r = push_str(&o->configs, &o->n_configs, optarg);
			break;
		case OPT_DRY_RUN:
			dry = true;
			break;
		case OPT_DIFF:
			diff = true;
			break;
		case OPT_ONCE:
			once = true;
			break;
		case OPT_CLEANUP:
			cleanup = true;
			break;
		case OPT_DUMP_STATE:
			dump = true;
			break;
		case OPT_HOSTNAME:
			r = set_str(&o->hostname, optarg);
			break;
		case OPT_NODE_IP:
			r = for_each_csv(optarg, "--node-ip", add_addr, &nodeips);
			o->node_ips_given = true;
			break;
		case OPT_CLUSTER_CIDR:
			r = for_each_csv(optarg, "--cluster-cidr", add_net, &cidrs);
			break;
		case OPT_MASQ_ALL:
			o->plan.masquerade_all = true;
			break;
		case OPT_NODEPORT_ADDRS:
			r = for_each_csv(optarg, "--nodeport-addresses", add_net, &npa);
			break;
		case OPT_LOCALHOST_NODEPORTS:
			r = parse_bool(optarg, &o->plan.localhost_nodeports);
			if (r < 0)
				fprintf(stderr, "svcnat: --localhost-nodeports: '%s' is not true or false\n",
					optarg);
			break;
		case OPT_MASQ_BIT:
			r = parse_uint(optarg, 31, &v);
			if (r < 0)
				fprintf(stderr, "svcnat: --masquerade-bit: '%s' is not a number 0-31\n",
					optarg);
			else
				o->plan.masquerade_bit = (unsigned)v;
			break;
		case OPT_ZONE:
			r = set_str(&o->zone, optarg);
			break;
		case OPT_BACKEND:
			r = backend_kind_parse(optarg, &o->backend.kind);
			if (r < 0)
				fprintf(stderr, "svcnat: --backend: '%s' is not auto, libiptc, direct or restore\n",
					optarg);
			break;
		case OPT_LOCK_WAIT:
			r = parse_uint(optarg, 3600000, &v);
			if (r < 0)
				fprintf(stderr, "svcnat: --lock-wait: '%s' is not a number of milliseconds\n",
					optarg);
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
			r = parse_uint(optarg, 1000000000, &v);
			if (r < 0)
				fprintf(stderr,
					"svcnat: --compact-endpoints-threshold: '%s' is not a number of endpoints\n",
					optarg);
			else
				o->plan.compact_endpoints_threshold = v;
			break;
		case OPT_MIN_SYNC:
			r = set_str(&o->min_sync_period, optarg);
			break;
		case OPT_SYNC:
			r = set_str(&o->sync_period, optarg);
			break;
		case OPT_HEALTHZ:
			r = set_str(&o->healthz_bind_address, optarg);
			break;
		case OPT_METRICS:
			r = set_str(&o->metrics_bind_address, optarg);
			break;
		case OPT_INSECURE:
			o->allow_insecure_config = true;
			break;
		case OPT_ETCD_ENDPOINTS:
			r = set_str(&o->etcd_endpoints, optarg);
			break;
		case OPT_ETCD_PREFIX:
			r = set_str(&o->etcd_prefix, optarg);
			break;
		case OPT_ETCD_CACERT:
			r = set_str(&o->etcd_cacert, optarg);
			break;
		case OPT_ETCD_CERT:
			r = set_str(&o->etcd_cert, optarg);
			break;
		case OPT_ETCD_KEY:
			r = set_str(&o->etcd_key, optarg);
			break;
		default:
			fputs("Try 'svcnat --help'.\n", stderr);
			return EXIT_USAGE;
		}
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

	modes = dry + once + cleanup + dump;
	if (modes > 1 || (diff && !dry)) {
		fputs("svcnat: choose one of --dry-run [--diff], --once, --cleanup, --dump-state\n",
		      stderr);
		return EXIT_USAGE;
	}
	if (o->mode != MODE_ETCD_LOAD) {
		if (dry)
			o->mode = diff ? MODE_DIFF : MODE_DRY_RUN;
		else if (once)
			o->mode = MODE_ONCE;
		else if (cleanup)
			o->mode = MODE_CLEANUP;
		else if (dump)
			o->mode = MODE_DUMP_STATE;
		if (o->n_args) {
			fprintf(stderr, "svcnat: unexpected argument '%s'\n", o->args[0]);
			return EXIT_USAGE;
		}
		if (o->mode != MODE_CLEANUP && !o->n_configs && !o->etcd_endpoints) {
			fputs("svcnat: no source: give --config PATH (or --etcd-endpoints)\n", stderr);
			return EXIT_USAGE;
		}
	}
	if (o->plan.masquerade_bit > 31) {
		fputs("svcnat: --masquerade-bit must be 0-31\n", stderr);
		return EXIT_USAGE;
	}
	if (default_hostname(o) < 0) {
		fputs("svcnat: cannot determine the hostname: give --hostname\n", stderr);
		return EXIT_USAGE;
	}
	o->backend.verbose = o->verbose > 0;
	*ret_diff = diff;
	return 0;
}

