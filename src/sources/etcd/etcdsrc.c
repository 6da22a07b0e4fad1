/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sources/etcd/etcdsrc.h"
#include "util.h"

struct etcdsrc {
	struct source base; /* first */
	struct etcd_source *etcd;
	struct metrics *m;
};

static void on_event(struct etcd_source *e, enum etcd_event ev, const char *msg, void *userdata)
{
	struct source *s = userdata;

	switch (ev) {
	case ETCD_EV_CONNECTED:
	case ETCD_EV_SYNCED:
	case ETCD_EV_COMPACTED:
		source_emit(s, SOURCE_INFO, 0, "%s", msg);
		break;
	case ETCD_EV_DISCONNECTED:
		source_emit(s, SOURCE_WARNING, 1, "%s (keeping the last rules)", msg);
		break;
	case ETCD_EV_RETRY:
		source_emit(s, SOURCE_DEBUG, 0, "%s", msg);
		break;
	case ETCD_EV_DIAG:
		source_emit(s, SOURCE_WARNING, 1, "%s", msg);
		break;
	}
}

static int etcdsrc_start(struct source *s)
{
	return etcd_source_start(((struct etcdsrc *)s)->etcd);
}

static bool etcdsrc_reread(struct source *s)
{
	(void)etcd_source_resync(((struct etcdsrc *)s)->etcd);
	return false;
}

static bool etcdsrc_ready(const struct source *s)
{
	struct etcd_status es;

	/* Until the first full read the merged state lacks the cluster's
	 * services: a sync would delete their rules. */
	etcd_source_get_status(((const struct etcdsrc *)s)->etcd, &es);
	return es.synced;
}

/* The node keeps its last rules while etcd is unreachable, and says so here. */
static size_t etcdsrc_health(const struct source *s, char *buf, size_t len)
{
	struct etcd_status es;
	int n;

	etcd_source_get_status(((const struct etcdsrc *)s)->etcd, &es);
	n = snprintf(buf, len,
		     "\"etcd\": {\"connected\": %s, \"synced\": %s, \"revision\": %lld, "
		     "\"reconnects\": %llu}",
		     es.connected ? "true" : "false", es.synced ? "true" : "false",
		     (long long)es.revision, (unsigned long long)es.reconnects);
	return n < 0 ? 0 : (size_t)n < len ? (size_t)n : len - 1;
}

static void etcdsrc_metrics(struct source *s)
{
	struct etcdsrc *e = (struct etcdsrc *)s;
	struct etcd_status es;

	etcd_source_get_status(e->etcd, &es);
	metrics_gauge_set(e->m, "svcnat_etcd_connected", NULL, es.connected);
	metrics_gauge_set(e->m, "svcnat_etcd_revision", NULL, (double)es.revision);
	metrics_gauge_set(e->m, "svcnat_etcd_reconnects", NULL, (double)es.reconnects);
}

static void etcdsrc_free(struct source *s)
{
	struct etcdsrc *e = (struct etcdsrc *)s;

	etcd_source_free(e->etcd);
	free(e);
}

static const struct source_ops etcdsrc_ops = {
	.kind = "etcd",
	.start = etcdsrc_start,
	.reread = etcdsrc_reread,
	.ready = etcdsrc_ready,
	.health = etcdsrc_health,
	.metrics = etcdsrc_metrics,
	.free = etcdsrc_free,
};

int etcdsrc_new(struct loop *l, struct merge *m, struct metrics *metrics,
		const struct etcd_options *o, struct diag_list *d, struct source **ret)
{
	struct etcdsrc *e;
	int r;

	r = etcd_options_check(o, d);
	if (r < 0)
		return r;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	source_init(&e->base, &etcdsrc_ops, "etcd");
	e->m = metrics;
	r = etcd_source_new(l, m, o, on_event, &e->base, &e->etcd);
	if (r < 0) {
		diag_add(d, DIAG_ERROR, "etcd source", NULL, NULL, "%s", strerror(-r));
		free(e);
		return r;
	}
	metrics_declare(metrics, "svcnat_etcd_connected", METRIC_GAUGE,
			"1 while a watch is established on an etcd member", NULL, 0);
	metrics_declare(metrics, "svcnat_etcd_revision", METRIC_GAUGE,
			"etcd revision up to which every event is applied", NULL, 0);
	metrics_declare(metrics, "svcnat_etcd_reconnects", METRIC_GAUGE,
			"etcd connection attempts after a failure", NULL, 0);
	*ret = &e->base;
	return 0;
}
