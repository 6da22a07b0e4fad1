/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli/configz.h"
#include "core/duration.h"
#include "core/model.h"
#include "sources/kube/kubereq.h"
#include "util.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(cJSON *, cJSON_Delete);

/* Each adder returns false on -ENOMEM; one && chain per object. */
static bool add_str(cJSON *o, const char *k, const char *v)
{
	return cJSON_AddStringToObject(o, k, v ? v : "") != NULL;
}

static bool add_num(cJSON *o, const char *k, double v)
{
	return cJSON_AddNumberToObject(o, k, v) != NULL;
}

static bool add_bool(cJSON *o, const char *k, bool v)
{
	return cJSON_AddBoolToObject(o, k, v) != NULL;
}

static bool add_usec(cJSON *o, const char *k, uint64_t usec)
{
	char buf[32];

	return add_str(o, k, duration_fmt(usec, buf, sizeof(buf)));
}

/* A duration flag's text (already validated) in Go's normal form. */
static bool add_duration(cJSON *o, const char *k, const char *text, const char *dflt)
{
	uint64_t usec = 0;

	if (duration_parse(text ? text : dflt, &usec) < 0 && duration_parse(dflt, &usec) < 0)
		usec = 0;
	return add_usec(o, k, usec);
}

static bool add_cidrs(cJSON *o, const char *k, const struct ipnet *n, size_t count)
{
	cJSON *a;
	char buf[64], cidr[80];

	if (!count)
		return cJSON_AddNullToObject(o, k) != NULL;
	a = cJSON_AddArrayToObject(o, k);
	if (!a)
		return false;
	for (size_t i = 0; i < count; i++) {
		snprintf(cidr, sizeof(cidr), "%s/%u", ipaddr_fmt(&n[i].addr, buf, sizeof(buf)),
			 n[i].plen);
		if (!cJSON_AddItemToArray(a, cJSON_CreateString(cidr)))
			return false;
	}
	return true;
}

static bool add_linux(cJSON *root, const struct svcnat_options *o)
{
	const struct conntrack_settings *ct = &o->conntrack;
	cJSON *l = cJSON_AddObjectToObject(root, "Linux");
	cJSON *c = l ? cJSON_AddObjectToObject(l, "Conntrack") : NULL;

	/* cmd/kube-proxy/app/server_linux.go setupConntrack: the defaults
	 * svcnat applies too (pipeline.h conntrack_settings). */
	return c && add_num(c, "MaxPerCore", ct->max_per_core < 0 ? 32768 : (double)ct->max_per_core) &&
	       add_num(c, "Min", ct->min < 0 ? 131072 : (double)ct->min) &&
	       add_usec(c, "TCPEstablishedTimeout", ct->tcp_established_usec == CT_TIMEOUT_DEFAULT
						       ? 86400ULL * 1000000 : ct->tcp_established_usec) &&
	       add_usec(c, "TCPCloseWaitTimeout", ct->tcp_close_wait_usec == CT_TIMEOUT_DEFAULT
						     ? 3600ULL * 1000000 : ct->tcp_close_wait_usec) &&
	       add_bool(c, "TCPBeLiberal", ct->tcp_be_liberal) &&
	       add_usec(c, "UDPTimeout", ct->udp_usec) &&
	       add_usec(c, "UDPStreamTimeout", ct->udp_stream_usec) &&
	       add_bool(l, "MasqueradeAll", o->plan.masquerade_all) &&
	       add_num(l, "OOMScoreAdj", o->oom_score_adj_set ? o->oom_score_adj : -999);
}

static bool add_logging(cJSON *root, const struct svcnat_options *o)
{
	cJSON *l = cJSON_AddObjectToObject(root, "Logging");
	cJSON *opts = l ? cJSON_CreateObject() : NULL;

	if (!opts)
		return false;
	cJSON_AddItemToObject(l, "options", opts);
	for (size_t i = 0; i < 2; i++) {
		cJSON *f = cJSON_AddObjectToObject(opts, i ? "json" : "text");

		if (!f || !add_str(f, "infoBufferSize", "0") || !add_bool(f, "splitStream", false))
			return false;
	}
	return add_str(l, "format", o->log_format == LOG_FORMAT_OPT_JSON ? "json" : "text") &&
	       add_str(l, "flushFrequency", "5s") && add_num(l, "verbosity", o->log_verbosity);
}

static const char *detect_local_name(enum detect_local_mode m)
{
	switch (m) {
	case DETECT_LOCAL_NODE_CIDR:
		return "NodeCIDR";
	case DETECT_LOCAL_BRIDGE:
		return "BridgeInterface";
	case DETECT_LOCAL_IFACE_PREFIX:
		return "InterfaceNamePrefix";
	default:
		return "ClusterCIDR";
	}
}

static bool add_proxier(cJSON *root, const struct svcnat_options *o)
{
	const struct plan_settings *p = &o->plan;
	cJSON *ipt = cJSON_AddObjectToObject(root, "IPTables");
	cJSON *ipvs = ipt ? cJSON_AddObjectToObject(root, "IPVS") : NULL;
	cJSON *nft = ipvs ? cJSON_AddObjectToObject(root, "NFTables") : NULL;
	cJSON *dl = nft ? cJSON_AddObjectToObject(root, "DetectLocal") : NULL;

	return dl && add_str(root, "Mode", "iptables") &&
	       add_num(ipt, "MasqueradeBit", p->masquerade_bit) &&
	       add_bool(ipt, "LocalhostNodePorts", p->localhost_nodeports) &&
	       add_str(ipvs, "Scheduler", "") && cJSON_AddNullToObject(ipvs, "ExcludeCIDRs") &&
	       add_bool(ipvs, "StrictARP", false) && add_usec(ipvs, "TCPTimeout", 0) &&
	       add_usec(ipvs, "TCPFinTimeout", 0) && add_usec(ipvs, "UDPTimeout", 0) &&
	       add_num(nft, "MasqueradeBit", p->masquerade_bit) &&
	       add_str(root, "DetectLocalMode", detect_local_name(p->detect_local_mode)) &&
	       add_str(dl, "BridgeInterface", p->pod_bridge_interface) &&
	       add_cidrs(dl, "ClusterCIDRs", p->cluster_cidrs, p->n_cluster_cidrs) &&
	       add_str(dl, "InterfaceNamePrefix", p->pod_interface_prefix);
}

static bool add_nodeport_addresses(cJSON *root, const struct svcnat_options *o)
{
	cJSON *a;

	if (!o->nodeport_primary)
		return add_cidrs(root, "NodePortAddresses", o->plan.nodeport_addresses,
				 o->plan.n_nodeport_addresses);
	a = cJSON_AddArrayToObject(root, "NodePortAddresses");
	return a && cJSON_AddItemToArray(a, cJSON_CreateString("primary"));
}

static bool add_top(cJSON *c, const struct svcnat_options *o)
{
	cJSON *cc = cJSON_AddObjectToObject(c, "ClientConnection");
	cJSON *win = cc ? cJSON_AddObjectToObject(c, "Windows") : NULL;
	char bind[64] = "0.0.0.0";

	if (o->bind_address_set)
		ipaddr_fmt(&o->bind_address, bind, sizeof(bind));
	return win && add_bool(win, "RunAsService", false) &&
	       cJSON_AddNullToObject(c, "FeatureGates") &&
	       add_str(cc, "Kubeconfig", o->kubeconfig) && add_str(cc, "AcceptContentTypes", o->kube_accept_content_types) &&
	       add_str(cc, "ContentType", o->kube_content_type ? o->kube_content_type
							       : KUBE_CT_DEFAULT) &&
	       add_num(cc, "QPS", 5) && add_num(cc, "Burst", 10) &&
	       add_str(c, "HostnameOverride", o->hostname) && add_str(c, "BindAddress", bind) &&
	       add_str(c, "HealthzBindAddress", o->healthz_bind_address ? o->healthz_bind_address
									: OPT_DEFAULT_HEALTHZ_BIND) &&
	       add_str(c, "MetricsBindAddress", o->metrics_bind_address ? o->metrics_bind_address
									: OPT_DEFAULT_METRICS_BIND) &&
	       add_bool(c, "BindAddressHardFail", o->bind_address_hard_fail) &&
	       add_bool(c, "EnableProfiling", false) && add_str(c, "ShowHiddenMetricsForVersion", "") &&
	       add_duration(c, "SyncPeriod", o->sync_period, OPT_DEFAULT_SYNC_PERIOD) &&
	       add_duration(c, "MinSyncPeriod", o->min_sync_period, OPT_DEFAULT_MIN_SYNC_PERIOD) &&
	       add_str(c, "ConfigSyncPeriod", "15m0s");
}

int configz_render(const struct svcnat_options *o, char **ret_json)
{
	_cleanup_(cJSON_Deletep) cJSON *root = cJSON_CreateObject();
	cJSON *c = root ? cJSON_AddObjectToObject(root, CONFIGZ_NAME) : NULL;
	char *s;

	if (!c || !add_linux(c, o) || !add_top(c, o) || !add_logging(c, o) || !add_proxier(c, o) ||
	    !add_nodeport_addresses(c, o))
		return -ENOMEM;
	s = cJSON_PrintUnformatted(root);
	if (!s)
		return -ENOMEM;
	*ret_json = s;
	return 0;
}
