/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One option's value into struct svcnat_options, for the command line and
 * a KubeProxyConfiguration's fields alike.  Messages go to stderr.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/duration.h"
#include "sources/kube/kubereq.h"
#include "cli/optval.h"
#include "sys/http.h"
#include "sys/log.h"
#include "util.h"

int opt_push_str(char ***v, size_t *n, const char *s)
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

int opt_set_str(char **dst, const char *s)
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

/* A growing array of struct ipnet (net) or struct ipaddr, for for_each_csv(). */
struct ip_list {
	void **v;
	size_t *n;
	bool net;
};

static int add_ip(const char *s, void *ud)
{
	struct ip_list *l = ud;
	union {
		struct ipaddr addr;
		struct ipnet net;
	} x;
	size_t sz = l->net ? sizeof(x.net) : sizeof(x.addr);
	char *nv;

	if ((l->net ? ipnet_parse(s, &x.net) : ipaddr_parse(s, &x.addr)) < 0)
		return -EINVAL;
	nv = reallocarray_z(*l->v, *l->n + 1, sz);
	if (!nv)
		return -ENOMEM;
	memcpy(nv + *l->n * sz, &x, sz);
	(*l->n)++;
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
	struct ip_list npa = { (void **)&o->plan.nodeport_addresses, &o->plan.n_nodeport_addresses,
			       true };

	if (streq(s, "primary")) {
		o->nodeport_primary = true;
		return 0;
	}
	if (streq(s, "localhost"))
		s = "127.0.0.0/8";
	else if (streq(s, "all")) {
		int r = add_ip("0.0.0.0/0", &npa);

		return r < 0 ? r : add_ip("::/0", &npa);
	}
	return add_ip(s, &npa);
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
		return opt_set_str(addr, "");
	if (asprintf(&n, "%.*s:%lu", colon ? (int)(colon - cur) : 0, cur, port) < 0)
		return -ENOMEM;
	free(*addr);
	*addr = n;
	return 0;
}

/*
 * --healthz-bind-address, --metrics-bind-address and their fields: IP:PORT,
 * an IP alone with the port of def (kube-proxy's AppendPortIfNeeded,
 * pkg/proxy/util/utils.go, in its v1alpha1 defaults), or "" (off).  Checked
 * here, so that --dry-run refuses what the daemon could not serve.
 */
static int set_bind(struct pstate *ps, const char *arg, char **addr, const char *def)
{
	struct sockaddr_storage ss;
	struct ipaddr a;
	socklen_t sl;
	char *n = NULL;

	if (!*arg || http_parse_bind(arg, &ss, &sl) == 0)
		return opt_set_str(addr, arg);
	if (ipaddr_parse(arg, &a) < 0)
		return bad(ps, arg, "an IP:PORT address (or an IP, for the default port)");
	if (asprintf(&n, a.family == AF_INET6 ? "[%s]%s" : "%s%s", arg, strrchr(def, ':')) < 0)
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

	if (r >= 0) {
		ps->o->verbose = v >= 4;
		ps->o->log_verbosity = (int)v;
	}
	return r;
}

/* svcnat's bare -v: the details (4), and one more level per repetition. */
static void more_verbose(struct svcnat_options *o, int times)
{
	o->verbose += times;
	for (; times > 0; times--)
		o->log_verbosity = o->log_verbosity < 4 ? 4 : o->log_verbosity + 1;
}

/*
 * component-base's flushFrequency: a duration (flag, config string) or
 * nanoseconds (a config number), more than zero on the command line
 * (ValidateAndApply); 0 in a file is its default.  svcnat writes each line
 * at once, so the value changes nothing.
 */
static int set_flush_frequency(struct pstate *ps, const char *arg)
{
	size_t digits = strspn(arg, "0123456789");
	bool in_file = ps->name[0] != '-'; /* "FILE: field", not "--flag" */
	uint64_t us;

	/* In a file, a number is nanoseconds and 0 asks for the default (5s). */
	if (in_file && digits && !arg[digits])
		return 0;
	if (duration_parse(arg, &us) < 0 || (us == 0 && !in_file))
		return bad(ps, arg, "a duration of more than zero (e.g. 5s)");
	return 0;
}

void opt_warn_ignored(const struct pstate *ps, const char *why)
{
	fprintf(stderr, "svcnat: warning: %s: accepted and ignored: %s\n", ps->name, why);
}

unsigned opt_given_bit(int c)
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
	case OPT_LOGGING_FORMAT: return GIVEN_LOG_FORMAT;
	case OPT_KUBECONFIG: return GIVEN_KUBECONFIG;
	case OPT_KUBE_CONTENT_TYPE: return GIVEN_KUBE_CONTENT_TYPE;
	default: return 0;
	}
}

/* The options that only store their value in one field of struct svcnat_options. */
enum field_kind { F_STR, F_BOOL, F_DURATION, F_LONG };

static const struct {
	int opt;
	enum field_kind kind;
	size_t off;  /* of the field in struct svcnat_options */
	long max;    /* F_LONG: 0 to max */
} field_opts[] = {
#define FIELD(opt, kind, field, max) { opt, kind, offsetof(struct svcnat_options, field), max }
	FIELD(OPT_ZONE, F_STR, zone, 0),
	FIELD(OPT_ETCD_ENDPOINTS, F_STR, etcd_endpoints, 0),
	FIELD(OPT_ETCD_PREFIX, F_STR, etcd_prefix, 0),
	FIELD(OPT_ETCD_CACERT, F_STR, etcd_cacert, 0),
	FIELD(OPT_ETCD_CERT, F_STR, etcd_cert, 0),
	FIELD(OPT_ETCD_KEY, F_STR, etcd_key, 0),
	FIELD(OPT_KUBECONFIG, F_STR, kubeconfig, 0),
	FIELD(OPT_MASTER, F_STR, master, 0),
	FIELD(OPT_MASQ_ALL, F_BOOL, plan.masquerade_all, 0),
	FIELD(OPT_LOCALHOST_NODEPORTS, F_BOOL, plan.localhost_nodeports, 0),
	FIELD(OPT_HARD_FAIL, F_BOOL, bind_address_hard_fail, 0),
	FIELD(OPT_CT_ESTABLISHED, F_DURATION, conntrack.tcp_established_usec, 0),
	FIELD(OPT_CT_CLOSE_WAIT, F_DURATION, conntrack.tcp_close_wait_usec, 0),
	FIELD(OPT_CT_UDP, F_DURATION, conntrack.udp_usec, 0),
	FIELD(OPT_CT_UDP_STREAM, F_DURATION, conntrack.udp_stream_usec, 0),
	FIELD(OPT_CT_MAX_PER_CORE, F_LONG, conntrack.max_per_core, INT32_MAX),
	FIELD(OPT_CT_MIN, F_LONG, conntrack.min, INT32_MAX),
	FIELD(OPT_LOG_FILE, F_STR, log_file, 0),
	FIELD(OPT_LOGTOSTDERR, F_BOOL, logtostderr, 0),
	FIELD(OPT_ALSOLOGTOSTDERR, F_BOOL, alsologtostderr, 0),
#undef FIELD
};

/* Apply c if it is one of field_opts[]: 1 when it was, else 0, -EINVAL, -ENOMEM. */
static int apply_field(struct pstate *ps, int c, const char *arg)
{
	for (size_t i = 0; i < ARRAY_SIZE(field_opts); i++) {
		void *p = (char *)ps->o + field_opts[i].off;
		int r = 0;

		if (field_opts[i].opt != c)
			continue;
		switch (field_opts[i].kind) {
		case F_STR:
			r = opt_set_str(p, arg);
			break;
		case F_BOOL:
			r = set_bool(ps, arg, p);
			break;
		case F_DURATION:
			r = parse_duration_arg(ps, arg, p);
			break;
		case F_LONG:
			r = set_long(ps, arg, 0, field_opts[i].max, p);
			break;
		}
		return r < 0 ? r : 1;
	}
	return 0;
}

/* A number from 0 (or 1: min) to max, else 'ARG' is not WANT. */
static int set_uint(struct pstate *ps, const char *arg, unsigned long min, unsigned long max,
		    const char *want, unsigned long *ret)
{
	if (parse_uint(arg, max, ret) < 0 || *ret < min)
		return bad(ps, arg, want);
	return 0;
}

/* The mode, the services files, the API's wire and what svcnat refuses to be.
 * 1 if c is one of them (*ret: 0 or -errno), else 0. */
static int apply_mode(struct pstate *ps, int c, const char *arg, int *ret)
{
	struct svcnat_options *o = ps->o;
	int r = 0;

	switch (c) {
	case 'c':
		r = opt_push_str(&o->configs, &o->n_configs, arg);
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
	case OPT_INSECURE:
		o->allow_insecure_config = true;
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
	case OPT_WRITE_CONFIG:
		fprintf(stderr, "svcnat: %s: not supported: svcnat does not write a "
			"KubeProxyConfiguration (it reads one: --config FILE)\n", ps->name);
		r = -EINVAL;
		break;
	case OPT_KUBE_CONTENT_TYPE:
		/* "" is kube-proxy's default; client-go's other types (CBOR, off
		 * by default) svcnat does not read */
		if (*arg && !kube_content_type_valid(arg))
			r = bad(ps, arg, "a content type svcnat reads (" KUBE_CT_PROTOBUF ", "
				KUBE_CT_JSON ")");
		else if (*arg)
			r = opt_set_str(&o->kube_content_type, arg);
		else
			o->kube_content_type = (free(o->kube_content_type), NULL);
		break;
	default:
		return 0;
	}
	*ret = r;
	return 1;
}

/* The log: verbosity, format, per-file verbosity, flushing.
 * 1 if c is one of them (*ret: 0 or -errno), else 0. */
static int apply_log(struct pstate *ps, int c, const char *arg, int *ret)
{
	struct svcnat_options *o = ps->o;
	int r = 0;

	switch (c) {
	case 'v':
		more_verbose(o, 1);
		break;
	case OPT_KLOG_V:
		if (arg[0] == 'v') {
			/* -vv, -vvv: svcnat's repeated -v */
			more_verbose(o, 1 + (int)strspn(arg, "v"));
			break;
		}
		r = set_verbosity(ps, arg);
		break;
	case OPT_LOGGING_FORMAT:
		/* component-base's registry: "" is the default, text. */
		if (streq(arg, "json"))
			o->log_format = LOG_FORMAT_OPT_JSON;
		else if (streq(arg, "text"))
			o->log_format = LOG_FORMAT_OPT_TEXT;
		else if (!*arg)
			o->log_format = LOG_FORMAT_OPT_UNSET;
		else
			r = bad(ps, arg, "a log format svcnat writes (text, json)");
		break;
	case OPT_VMODULE:
		if (log_vmodule_check(arg) < 0)
			r = bad(ps, arg, "klog's --vmodule: comma-separated PATTERN=N (N >= 0)");
		else
			r = opt_set_str(&o->vmodule, arg);
		break;
	case OPT_LOG_FLUSH:
		r = set_flush_frequency(ps, arg);
		break;
	default:
		return 0;
	}
	*ret = r;
	return 1;
}

/* This node: its name, addresses and how local traffic is told apart.
 * 1 if c is one of them (*ret: 0 or -errno), else 0. */
static int apply_node(struct pstate *ps, int c, const char *arg, int *ret)
{
	struct svcnat_options *o = ps->o;
	struct ip_list nodeips = { (void **)&o->plan.node_ips, &o->plan.n_node_ips, false };
	struct ip_list cidrs = { (void **)&o->plan.cluster_cidrs, &o->plan.n_cluster_cidrs, true };
	struct ip_list podc = { (void **)&o->plan.node_pod_cidrs, &o->plan.n_node_pod_cidrs, true };
	int r = 0;

	switch (c) {
	case OPT_HOSTNAME: {
		char *p;

		/* kube-proxy trims and lowercases it; empty is unset. */
		while (isspace((unsigned char)*arg))
			arg++;
		if (!*arg)
			break;
		r = opt_set_str(&o->hostname, arg);
		for (p = o->hostname; r >= 0 && *p; p++)
			*p = (char)tolower((unsigned char)*p);
		while (r >= 0 && p > o->hostname && isspace((unsigned char)p[-1]))
			*--p = '\0';
		break;
	}
	case OPT_NODE_IP:
		r = for_each_csv(arg, ps->name, add_ip, &nodeips);
		o->node_ips_given = true;
		break;
	case OPT_BIND_ADDRESS:
		r = set_bind_address(ps, arg);
		break;
	case OPT_CLUSTER_CIDR:
		r = for_each_csv(arg, ps->name, add_ip, &cidrs);
		break;
	case OPT_NODE_POD_CIDR:
		r = for_each_csv(arg, ps->name, add_ip, &podc);
		break;
	case OPT_NODEPORT_ADDRS:
		r = for_each_csv(arg, ps->name, add_nodeport, o);
		break;
	case OPT_DETECT_LOCAL:
		r = set_detect_local(ps, arg);
		break;
	case OPT_POD_BRIDGE:
		r = opt_set_str(&o->pod_bridge_interface, arg);
		o->plan.pod_bridge_interface = o->pod_bridge_interface;
		break;
	case OPT_POD_PREFIX:
		r = opt_set_str(&o->pod_interface_prefix, arg);
		o->plan.pod_interface_prefix = o->pod_interface_prefix;
		break;
	default:
		return 0;
	}
	*ret = r;
	return 1;
}

/* The rules and their writer, the host's settings.
 * 1 if c is one of them (*ret: 0 or -errno), else 0. */
static int apply_rules(struct pstate *ps, int c, const char *arg, int *ret)
{
	struct svcnat_options *o = ps->o;
	unsigned long v;
	long l;
	int r = 0;

	switch (c) {
	case OPT_MASQ_BIT:
		r = set_uint(ps, arg, 0, 31, "a number 0-31", &v);
		if (r >= 0)
			o->plan.masquerade_bit = (unsigned)v;
		break;
	case OPT_BACKEND:
		r = backend_kind_parse(arg, &o->backend.kind);
		if (r < 0)
			bad(ps, arg, "auto, libiptc, direct, nft or restore");
		break;
	case OPT_LOCK_WAIT:
		r = set_uint(ps, arg, 0, 3600000, "a number of milliseconds", &v);
		if (r >= 0)
			o->backend.lock_wait_ms = (unsigned)v;
		break;
	case OPT_SET_SYSCTLS:
		o->set_sysctls = true;
		break;
	case OPT_NO_RANDOM_FULLY:
		o->plan.random_fully = false;
		break;
	case OPT_COMPACT_THRESHOLD:
		r = set_uint(ps, arg, 0, 1000000000, "a number of endpoints", &v);
		if (r >= 0)
			o->plan.compact_endpoints_threshold = v;
		break;
	case OPT_DISPATCH:
		r = dispatch_mode_parse(arg, &o->plan.dispatch);
		if (r < 0)
			bad(ps, arg, "auto, linear or tree");
		break;
	case OPT_DISPATCH_THRESHOLD:
		r = set_uint(ps, arg, 1, 1000000000, "a number of rules (1 or more)", &v);
		if (r >= 0)
			o->plan.dispatch_threshold = v;
		break;
	case OPT_NFACCT:
		if (streq(arg, "auto"))
			o->nfacct = NFACCT_OPT_AUTO;
		else if (streq(arg, "on"))
			o->nfacct = NFACCT_OPT_ON;
		else if (streq(arg, "off"))
			o->nfacct = NFACCT_OPT_OFF;
		else
			r = bad(ps, arg, "auto, on or off");
		if (r >= 0)
			o->plan.nfacct = o->nfacct == NFACCT_OPT_ON ? PLAN_NFACCT_ALL : 0;
		break;
	case OPT_OOM:
		r = set_long(ps, arg, -1000, 1000, &l);
		if (r >= 0) {
			o->oom_score_adj = (int)l;
			o->oom_score_adj_set = true;
		}
		break;
	case OPT_CT_LIBERAL:
		r = set_bool(ps, arg, &o->conntrack.tcp_be_liberal);
		/* kube-proxy leaves out its INVALID drop rule in liberal mode. */
		if (r >= 0 && o->conntrack.tcp_be_liberal)
			o->plan.conntrack_tcp_liberal = true;
		break;
	default:
		return 0;
	}
	*ret = r;
	return 1;
}

/* The daemon: sync periods and its servers.
 * 1 if c is one of them (*ret: 0 or -errno), else 0. */
static int apply_daemon(struct pstate *ps, int c, const char *arg, int *ret)
{
	struct svcnat_options *o = ps->o;
	int r = 0;

	switch (c) {
	case OPT_MIN_SYNC:
	case OPT_SYNC: {
		uint64_t us;

		r = parse_duration_arg(ps, arg, &us);
		/* In a file, 0s (kubeadm writes it) is kube-proxy's default
		 * (pkg/proxy/apis/config/v1alpha1/defaults.go); a flag's 0 stands. */
		if (r >= 0 && us == 0 && ps->name[0] != '-')
			break;
		if (r >= 0)
			r = opt_set_str(c == OPT_SYNC ? &o->sync_period : &o->min_sync_period, arg);
		break;
	}
	case OPT_HEALTHZ:
		r = set_bind(ps, arg, &o->healthz_bind_address, OPT_DEFAULT_HEALTHZ_BIND);
		break;
	case OPT_METRICS:
		r = set_bind(ps, arg, &o->metrics_bind_address, OPT_DEFAULT_METRICS_BIND);
		break;
	case OPT_HEALTHZ_PORT:
		r = set_port(ps, arg, &o->healthz_bind_address, OPT_DEFAULT_HEALTHZ_BIND);
		break;
	case OPT_METRICS_PORT:
		r = set_port(ps, arg, &o->metrics_bind_address, OPT_DEFAULT_METRICS_BIND);
		break;
	default:
		return 0;
	}
	*ret = r;
	return 1;
}

int opt_apply(struct pstate *ps, int c, const char *arg)
{
	int r;

	r = apply_field(ps, c, arg);
	if (r != 0)
		return r < 0 ? r : 0;
	if (apply_mode(ps, c, arg, &r) || apply_log(ps, c, arg, &r) || apply_node(ps, c, arg, &r) ||
	    apply_rules(ps, c, arg, &r) || apply_daemon(ps, c, arg, &r))
		return r;
	return -EINVAL;
}
