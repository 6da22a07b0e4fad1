/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The kube-proxy metrics that need more than a counter bump at a call
 * site: kubeproxy_network_programming_duration_seconds from the
 * EndpointSlices' trigger times (core/progtime.h), per ip_family, and
 * client-go's rest_client_* of the API source's requests.  The
 * daemon calls these on its loop thread; the families are declared by
 * metrics_declare_svcnat().
 */
#ifndef SVCNAT_DAEMON_KPMETRICS_H
#define SVCNAT_DAEMON_KPMETRICS_H

#include <stdbool.h>

#include "core/merge.h"
#include "sys/metrics.h"

struct kpmetrics;

/*
 * m: borrowed, outlives the object.  families: those the backend programs
 * (AF_INET, AF_INET6, or AF_UNSPEC for both).  start: the daemon's start
 * (unix seconds); earlier trigger times are not measured.  0 or -ENOMEM.
 */
int kpmetrics_new(struct metrics *m, int families, double start, struct kpmetrics **ret);
void kpmetrics_free(struct kpmetrics *k);

/* The merged view changed from old (NULL at first) to new. */
void kpmetrics_merged(struct kpmetrics *k, const struct merge_snapshot *old,
		      const struct merge_snapshot *new);

/* A sync starts with the view merged so far. */
void kpmetrics_sync_start(struct kpmetrics *k);

/* It ended: ok when its rules are in the kernel; now is the wall clock. */
void kpmetrics_sync_done(struct kpmetrics *k, bool ok, double now);

/*
 * A conntrack cleanup ran (sys/conntrack.h) and deleted these entries:
 * kube-proxy's kubeproxy_conntrack_reconciler_deleted_entries_total and
 * _sync_duration_seconds, per ip_family of the families programmed (one
 * cleanup covers both: its duration goes to each, as the syncs' do).
 */
void kpmetrics_conntrack(struct kpmetrics *k, size_t deleted4, size_t deleted6, double seconds);

/*
 * Before a scrape: kube-proxy's nfacct counters (pkg/proxy/metrics,
 * newNFAcctMetricCollector) read from the kernel, each one of `counters`
 * (enum plan_nfacct bits: those svcnat keeps) that reads:
 *   kubeproxy_iptables_ct_state_invalid_dropped_packets_total       (ct_state_invalid_dropped_pkts)
 *   kubeproxy_iptables_localhost_nodeports_accepted_packets_total   (localhost_nps_accepted_pkts)
 * its packets.  A family appears at its first good read; one that never
 * reads is not written at all, as kube-proxy's collector sends nothing
 * without its nfacct client or counter, and a failed read drops the
 * series until a read works again (logged once per failure run).
 */
void kpmetrics_nfacct(struct kpmetrics *k, unsigned counters);

/* client-go's rest_client_requests_total{code,host,method} and
 * rest_client_request_duration_seconds{host,verb}, for the API source.
 * 0 or -ENOMEM. */
int kpmetrics_declare_rest_client(struct metrics *m);

/* A kube_options.on_request: userdata is the struct metrics. */
void kpmetrics_rest_request(const char *method, const char *host, long code, double seconds,
			    void *userdata);

#endif
