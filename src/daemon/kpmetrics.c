/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "core/plan.h"
#include "core/progtime.h"
#include "daemon/kpmetrics.h"
#include "sys/log.h"
#include "sys/nfacct.h"
#include "util.h"

struct kpmetrics {
	struct metrics *m;
	int families;
	struct progtime pt;
	size_t dropped_warned;
	unsigned nfacct_declared; /* enum plan_nfacct: families declared */
	unsigned nfacct_warned;   /* read failures logged */
};

int kpmetrics_new(struct metrics *m, int families, double start, struct kpmetrics **ret)
{
	struct kpmetrics *k = calloc(1, sizeof(*k));

	if (!k)
		return -ENOMEM;
	k->m = m;
	k->families = families;
	progtime_init(&k->pt, start);
	*ret = k;
	return 0;
}

void kpmetrics_free(struct kpmetrics *k)
{
	if (!k)
		return;
	progtime_done(&k->pt);
	free(k);
}

void kpmetrics_merged(struct kpmetrics *k, const struct merge_snapshot *old,
		      const struct merge_snapshot *new)
{
	if (progtime_note(&k->pt, old, new, k->families) < 0)
		log_warn("out of memory noting EndpointSlice trigger times; some changes are not "
			 "measured in kubeproxy_network_programming_duration_seconds");
	if (k->pt.dropped > k->dropped_warned) {
		if (!k->dropped_warned)
			log_warn("more than %d EndpointSlice changes wait for a sync; the further ones "
				 "are not measured", PROGTIME_MAX);
		k->dropped_warned = k->pt.dropped;
	}
}

void kpmetrics_sync_start(struct kpmetrics *k)
{
	progtime_sync_start(&k->pt);
}

static void observe(uint8_t family, double seconds, void *userdata)
{
	struct kpmetrics *k = userdata;

	/* kube-proxy observes each trigger time of the sync (and logs it at
	 * -v=4, "Network programming"). */
	metrics_histogram_observe(k->m, "kubeproxy_network_programming_duration_seconds",
				  family == AF_INET6 ? "ip_family=\"IPv6\"" : "ip_family=\"IPv4\"",
				  seconds);
}

void kpmetrics_sync_done(struct kpmetrics *k, bool ok, double now)
{
	size_t n = progtime_sync_done(&k->pt, ok, now, observe, k);

	if (n)
		log_debug("network programming: %zu EndpointSlice change%s measured from "
			  "their trigger time", n, n == 1 ? "" : "s");
}

void kpmetrics_conntrack(struct kpmetrics *k, size_t deleted4, size_t deleted6, double seconds)
{
	/* pkg/proxy/conntrack/cleanup.go, CleanStaleEntries: per family. */
	if (k->families != AF_INET6) {
		metrics_histogram_observe(k->m, "kubeproxy_conntrack_reconciler_sync_duration_seconds",
					  "ip_family=\"IPv4\"", seconds);
		metrics_counter_add(k->m, "kubeproxy_conntrack_reconciler_deleted_entries_total",
				    "ip_family=\"IPv4\"", (double)deleted4);
	}
	if (k->families != AF_INET) {
		metrics_histogram_observe(k->m, "kubeproxy_conntrack_reconciler_sync_duration_seconds",
					  "ip_family=\"IPv6\"", seconds);
		metrics_counter_add(k->m, "kubeproxy_conntrack_reconciler_deleted_entries_total",
				    "ip_family=\"IPv6\"", (double)deleted6);
	}
}

int kpmetrics_declare_rest_client(struct metrics *m)
{
	/* client-go's buckets (component-base/metrics/prometheus/restclient). */
	static const double buckets[] = { 0.005, 0.025, 0.1, 0.25, 0.5, 1.0,
					  2.0,   4.0,   8.0, 15.0, 30.0, 60.0 };
	int r;

	r = metrics_declare(m, "rest_client_requests_total", METRIC_COUNTER,
			    "Number of HTTP requests, partitioned by status code, method, and host.",
			    NULL, 0);
	if (r == 0)
		r = metrics_declare(m, "rest_client_request_duration_seconds", METRIC_HISTOGRAM,
				    "Request latency in seconds. Broken down by verb, and host.",
				    buckets, ARRAY_SIZE(buckets));
	return r == -EEXIST ? 0 : r;
}

void kpmetrics_rest_request(const char *method, const char *host, long code, double seconds,
			    void *userdata)
{
	struct metrics *m = userdata;
	char c[32], h[320], v[64], lbl[512];

	/* client-go: the status as a number, "<error>" without an answer. */
	if (code > 0)
		snprintf(c, sizeof(c), "%ld", code);
	else
		snprintf(c, sizeof(c), "<error>");
	if (!metrics_label(h, sizeof(h), "host", host) || !metrics_label(v, sizeof(v), "method", method))
		return;
	snprintf(lbl, sizeof(lbl), "code=\"%s\",%s,%s", c, h, v);
	metrics_counter_add(m, "rest_client_requests_total", lbl, 1);
	if (!metrics_label(v, sizeof(v), "verb", method))
		return;
	snprintf(lbl, sizeof(lbl), "%s,%s", h, v);
	metrics_histogram_observe(m, "rest_client_request_duration_seconds", lbl, seconds);
}

void kpmetrics_nfacct(struct kpmetrics *k, unsigned counters)
{
	static const struct {
		unsigned bit;
		const char *counter, *metric, *help;
	} nf[] = {
		{ PLAN_NFACCT_CT_INVALID, PLAN_NFACCT_CT_INVALID_NAME,
		  "kubeproxy_iptables_ct_state_invalid_dropped_packets_total",
		  "packets dropped by iptables to work around conntrack problems" },
		{ PLAN_NFACCT_LOCALHOST_NP, PLAN_NFACCT_LOCALHOST_NP_NAME,
		  "kubeproxy_iptables_localhost_nodeports_accepted_packets_total",
		  "Number of packets accepted on nodeports of loopback interface" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(nf); i++) {
		struct nfacct_counter c;
		int r;

		if (!(counters & nf[i].bit))
			continue;
		r = nfacct_get(nf[i].counter, &c);
		if (r < 0) {
			/* kube-proxy's collector sends no sample when its Get
			 * fails: the series is gone until a read works again. */
			if (!(k->nfacct_warned & nf[i].bit))
				log_warn("cannot read the nfacct counter '%s': %s; %s not reported",
					 nf[i].counter, strerror(-r), nf[i].metric);
			k->nfacct_warned |= nf[i].bit;
			if (k->nfacct_declared & nf[i].bit)
				(void)metrics_remove(k->m, nf[i].metric, NULL);
			continue;
		}
		k->nfacct_warned &= ~nf[i].bit;
		if (!(k->nfacct_declared & nf[i].bit)) {
			r = metrics_declare(k->m, nf[i].metric, METRIC_COUNTER, nf[i].help, NULL, 0);
			if (r < 0 && r != -EEXIST)
				continue;
			k->nfacct_declared |= nf[i].bit;
		}
		metrics_counter_set(k->m, nf[i].metric, NULL, (double)c.packets);
	}
}
