/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/kpmetrics.h"
#include "daemon/kubed.h"
#include "sources/kube/kube.h"
#include "sys/log.h"
#include "util.h"

struct kubed {
	struct kube_source *src;
	struct pipeline *p;
	struct metrics *m;
	kubed_node_fn fn;
	void *userdata;
	bool lost; /* warned that the server is unreachable */
	bool seen; /* the Node object was seen once */
	bool eligible; /* /healthz's nodeEligible */
};

static void source_error(struct kubed *k)
{
	metrics_counter_add(k->m, "svcnat_source_errors_total", "source=\"api\"", 1);
}

static void on_node(struct kubed *k)
{
	const struct kube_node *n = kube_source_node(k->src);
	/* kube-proxy's SyncNode; a Node that is gone after it was seen is
	 * deleted (kube-proxy exits then); none at all yet: eligible. */
	bool eligible = n ? n->eligible : !k->seen;
	int r;

	k->seen = k->seen || n;
	if (eligible != k->eligible) {
		if (eligible)
			log_info("api: node %s is eligible again: /healthz follows the syncs",
				 n ? n->name : "(none)");
		else
			log_warn("api: node %s is being deleted (deletionTimestamp or the "
				 "ToBeDeletedByClusterAutoscaler taint): /healthz answers 503",
				 n ? n->name : "(gone)");
		k->eligible = eligible;
	}
	r = pipeline_set_node(k->p, n ? n->zone : NULL, n ? n->addrs : NULL, n ? n->n_addrs : 0);
	if (r >= 0) {
		int c = pipeline_set_node_pod_cidrs(k->p, n ? n->pod_cidrs : NULL,
						    n ? n->n_pod_cidrs : 0);

		if (c > 0)
			log_info("api: node %s: %zu pod CIDRs (--detect-local-mode=NodeCIDR)",
				 n ? n->name : "(gone)", n ? n->n_pod_cidrs : 0);
		r = c < 0 ? c : r | c;
	}
	if (r < 0) {
		log_err("api: out of memory taking the Node object's settings");
		return;
	}
	if (r == 0)
		return;
	log_info("api: node %s: zone '%s', %zu node IPs (where --zone/--node-ip do not say)",
		 n ? n->name : "(gone)", n ? n->zone : "", n ? n->n_addrs : 0);
	if (k->fn)
		k->fn(k->userdata);
}

static void on_event(struct kube_source *s, enum kube_source_event ev, const char *msg, void *userdata)
{
	struct kubed *k = userdata;

	switch (ev) {
	case KUBE_SRC_CONNECTED:
		if (k->lost) {
			log_info("api: %s (the server is back)", msg);
			k->lost = false;
		} else {
			log_info("api: %s", msg);
		}
		break;
	case KUBE_SRC_SYNCED:
	case KUBE_SRC_RELIST:
		log_info("api: %s", msg);
		break;
	case KUBE_SRC_DISCONNECTED:
		log_warn("api: %s (the rules stay as they are)", msg);
		k->lost = true;
		source_error(k);
		break;
	case KUBE_SRC_RETRY:
		log_debug("api: %s", msg);
		break;
	case KUBE_SRC_DIAG:
		log_warn("%s", msg); /* "api:<Kind>/<ns>/<name>: field: what" */
		source_error(k);
		break;
	case KUBE_SRC_FATAL:
		log_warn("api: %s", msg);
		source_error(k);
		break;
	case KUBE_SRC_NODE:
		on_node(k);
		break;
	}
}

static const struct {
	const char *name, *help;
} gauges[] = {
	{ "svcnat_api_connected", "1 while every watch on the Kubernetes API server is established" },
	{ "svcnat_api_synced", "1 once Services and EndpointSlices were listed" },
	{ "svcnat_api_resource_version", "resourceVersion applied, per resource (when it is a number)" },
	{ "svcnat_api_relists", "lists after the first (an expired resourceVersion, SIGHUP)" },
	{ "svcnat_api_reconnects", "connection attempts to the API server after a failure" },
	{ "svcnat_api_events", "watch events applied" },
	{ "svcnat_api_rejected", "objects from the API server that did not decode" },
};

int kubed_new(struct loop *l, struct pipeline *p, struct metrics *m, const struct pipeline_config *o,
	      kubed_node_fn fn, void *userdata, struct kubed **ret)
{
	struct kube_options ko = {
		.kubeconfig = o->kubeconfig,
		.master = o->master,
		.node_name = o->hostname,
		.mode = o->file_mode,
		.on_request = kpmetrics_rest_request,
		.request_userdata = m,
	};
	struct diag_list d;
	struct kubed *k;
	int r;

	*ret = NULL;
	if (!o->kube)
		return 0;
	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->p = p;
	k->m = m;
	k->fn = fn;
	k->userdata = userdata;
	k->eligible = true;
	diag_list_init(&d);
	r = kube_source_new(l, pipeline_merge(p), &ko, on_event, k, &k->src, &d);
	for (size_t i = 0; i < d.n; i++) {
		_cleanup_free_ char *line = diag_format(&d.items[i]);

		if (line)
			log_err("%s", line);
	}
	diag_list_done(&d);
	if (r < 0) {
		if (r == -ENOMEM || r == -EIO)
			log_err("api source: %s", strerror(-r));
		free(k);
		return r;
	}
	for (size_t i = 0; i < ARRAY_SIZE(gauges); i++)
		metrics_declare(m, gauges[i].name, METRIC_GAUGE, gauges[i].help, NULL, 0);
	kpmetrics_declare_rest_client(m);
	(void)kube_source_start(k->src);
	*ret = k;
	return 0;
}

bool kubed_pending(const struct kubed *k)
{
	struct kube_source_status st;

	if (!k)
		return false;
	kube_source_get_status(k->src, &st);
	return !st.synced;
}

/* A JSON string's content: resourceVersions and errors are printable ASCII
 * from the server, but quotes and backslashes must not break the document. */
static void json_str(char *out, size_t len, const char *s)
{
	size_t o = 0;

	for (; *s && o + 2 < len; s++) {
		unsigned char c = (unsigned char)*s;

		if (c < 0x20 || c == '"' || c == '\\' || c >= 0x7f)
			c = '?';
		out[o++] = (char)c;
	}
	out[o] = '\0';
}

bool kubed_node_eligible(const struct kubed *k)
{
	return !k || k->eligible;
}

void kubed_health(const struct kubed *k, char *buf, size_t len)
{
	struct kube_source_status st;
	char rs[KUBE_MAX_RV + 1], re[KUBE_MAX_RV + 1], err[200];

	buf[0] = '\0';
	if (!k)
		return;
	kube_source_get_status(k->src, &st);
	json_str(rs, sizeof(rs), st.rv_services);
	json_str(re, sizeof(re), st.rv_slices);
	json_str(err, sizeof(err), st.last_error);
	snprintf(buf, len,
		 "\"api\": {\"connected\": %s, \"synced\": %s, \"resourceVersion\": {\"services\": "
		 "\"%s\", \"endpointslices\": \"%s\"}, \"relists\": %" PRIu64 ", \"reconnects\": %" PRIu64
		 ", \"events\": %" PRIu64 ", \"rejected\": %" PRIu64 ", \"lastError\": \"%s\"}",
		 st.connected ? "true" : "false", st.synced ? "true" : "false", rs, re, st.relists,
		 st.reconnects, st.events, st.rejected, err);
}

static void rv_gauge(struct kubed *k, const char *res, const char *rv)
{
	char lbl[64], *end;
	double v;

	if (!*rv)
		return;
	v = strtod(rv, &end);
	if (*end)
		return;
	snprintf(lbl, sizeof(lbl), "resource=\"%s\"", res);
	metrics_gauge_set(k->m, "svcnat_api_resource_version", lbl, v);
}

void kubed_metrics(struct kubed *k)
{
	struct kube_source_status st;

	if (!k)
		return;
	kube_source_get_status(k->src, &st);
	metrics_gauge_set(k->m, "svcnat_api_connected", NULL, st.connected);
	metrics_gauge_set(k->m, "svcnat_api_synced", NULL, st.synced);
	rv_gauge(k, "services", st.rv_services);
	rv_gauge(k, "endpointslices", st.rv_slices);
	metrics_gauge_set(k->m, "svcnat_api_relists", NULL, (double)st.relists);
	metrics_gauge_set(k->m, "svcnat_api_reconnects", NULL, (double)st.reconnects);
	metrics_gauge_set(k->m, "svcnat_api_events", NULL, (double)st.events);
	metrics_gauge_set(k->m, "svcnat_api_rejected", NULL, (double)st.rejected);
}

void kubed_resync(struct kubed *k)
{
	if (k)
		(void)kube_source_resync(k->src);
}

void kubed_free(struct kubed *k)
{
	if (!k)
		return;
	kube_source_free(k->src);
	free(k);
}
