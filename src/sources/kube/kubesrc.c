/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sources/kube/kubesrc.h"
#include "util.h"

struct kubesrc {
	struct source base; /* first */
	struct kube_source *src;
	struct metrics *m;
	kubesrc_node_fn fn;
	void *userdata;
	bool lost;     /* said that the server is unreachable */
	bool seen;     /* the Node object was seen once */
	bool eligible; /* /healthz's nodeEligible */
};

static void on_node(struct kubesrc *k)
{
	const struct kube_node *n = kube_source_node(k->src);
	/* kube-proxy's SyncNode; a Node that is gone after it was seen is
	 * deleted (kube-proxy exits then); none at all yet: eligible. */
	bool eligible = n ? n->eligible : !k->seen;

	k->seen = k->seen || n;
	if (eligible != k->eligible) {
		if (eligible)
			source_emit(&k->base, SOURCE_INFO, 0,
				    "node %s is eligible again: /healthz follows the syncs",
				    n ? n->name : "(none)");
		else
			source_emit(&k->base, SOURCE_WARNING, 0,
				    "node %s is being deleted (deletionTimestamp or the "
				    "ToBeDeletedByClusterAutoscaler taint): /healthz answers 503",
				    n ? n->name : "(gone)");
		k->eligible = eligible;
	}
	if (k->fn)
		k->fn(n, k->eligible, k->userdata);
}

static void on_event(struct kube_source *s, enum kube_source_event ev, const char *msg,
		     void *userdata)
{
	struct kubesrc *k = userdata;
	struct diag line = { .level = DIAG_WARNING, .msg = (char *)msg };

	switch (ev) {
	case KUBE_SRC_CONNECTED:
		source_emit(&k->base, SOURCE_INFO, 0, "%s%s", msg,
			    k->lost ? " (the server is back)" : "");
		k->lost = false;
		break;
	case KUBE_SRC_SYNCED:
	case KUBE_SRC_RELIST:
		source_emit(&k->base, SOURCE_INFO, 0, "%s", msg);
		break;
	case KUBE_SRC_DISCONNECTED:
		source_emit(&k->base, SOURCE_WARNING, 1, "%s (the rules stay as they are)", msg);
		k->lost = true;
		break;
	case KUBE_SRC_RETRY:
		source_emit(&k->base, SOURCE_DEBUG, 0, "%s", msg);
		break;
	case KUBE_SRC_DIAG:
		/* A record formatted already ("api:<Kind>/<ns>/<name>: field: what"). */
		source_emit_diag(&k->base, &line, 1);
		break;
	case KUBE_SRC_FATAL:
		source_emit(&k->base, SOURCE_WARNING, 1, "%s", msg);
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

static int kubesrc_start(struct source *s)
{
	(void)kube_source_start(((struct kubesrc *)s)->src);
	return 0;
}

static bool kubesrc_reread(struct source *s)
{
	(void)kube_source_resync(((struct kubesrc *)s)->src);
	return false;
}

static bool kubesrc_ready(const struct source *s)
{
	struct kube_source_status st;

	kube_source_get_status(((const struct kubesrc *)s)->src, &st);
	return st.synced;
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

static size_t kubesrc_health(const struct source *s, char *buf, size_t len)
{
	struct kube_source_status st;
	char rs[KUBE_MAX_RV + 1], re[KUBE_MAX_RV + 1], err[200];
	int n;

	kube_source_get_status(((const struct kubesrc *)s)->src, &st);
	json_str(rs, sizeof(rs), st.rv_services);
	json_str(re, sizeof(re), st.rv_slices);
	json_str(err, sizeof(err), st.last_error);
	n = snprintf(buf, len,
		     "\"api\": {\"connected\": %s, \"synced\": %s, \"resourceVersion\": {\"services\": "
		     "\"%s\", \"endpointslices\": \"%s\"}, \"relists\": %" PRIu64 ", \"reconnects\": %" PRIu64
		     ", \"events\": %" PRIu64 ", \"rejected\": %" PRIu64 ", \"lastError\": \"%s\"}",
		     st.connected ? "true" : "false", st.synced ? "true" : "false", rs, re, st.relists,
		     st.reconnects, st.events, st.rejected, err);
	return n < 0 ? 0 : (size_t)n < len ? (size_t)n : len - 1;
}

static void rv_gauge(struct kubesrc *k, const char *res, const char *rv)
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

static void kubesrc_metrics(struct source *s)
{
	struct kubesrc *k = (struct kubesrc *)s;
	struct kube_source_status st;

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

static void kubesrc_free(struct source *s)
{
	struct kubesrc *k = (struct kubesrc *)s;

	kube_source_free(k->src);
	free(k);
}

static const struct source_ops kubesrc_ops = {
	.kind = "api",
	.start = kubesrc_start,
	.reread = kubesrc_reread,
	.ready = kubesrc_ready,
	.health = kubesrc_health,
	.metrics = kubesrc_metrics,
	.free = kubesrc_free,
};

int kubesrc_new(struct loop *l, struct merge *m, struct metrics *metrics,
		const struct kube_options *o, kubesrc_node_fn fn, void *userdata,
		struct diag_list *d, struct source **ret)
{
	struct kubesrc *k;
	int r;

	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	source_init(&k->base, &kubesrc_ops, "api");
	k->m = metrics;
	k->fn = fn;
	k->userdata = userdata;
	k->eligible = true;
	r = kube_source_new(l, m, o, on_event, k, &k->src, d);
	if (r < 0) {
		if (r == -ENOMEM || r == -EIO)
			diag_add(d, DIAG_ERROR, "api source", NULL, NULL, "%s", strerror(-r));
		free(k);
		return r;
	}
	for (size_t i = 0; i < ARRAY_SIZE(gauges); i++)
		metrics_declare(metrics, gauges[i].name, METRIC_GAUGE, gauges[i].help, NULL, 0);
	*ret = &k->base;
	return 0;
}
