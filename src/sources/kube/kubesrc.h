/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The Kubernetes API source (sources/kube/kube.h) as a live source
 * (sources/source.h): its events at the level the daemon logs them (a lost
 * server at warning: the rules stay), /healthz's "api" member, the
 * svcnat_api_* gauges, and this node's Node object for its owner; read
 * once when Services and EndpointSlices were listed.
 */
#ifndef SVCNAT_SOURCES_KUBE_KUBESRC_H
#define SVCNAT_SOURCES_KUBE_KUBESRC_H

#include <stdbool.h>

#include "sources/kube/kube.h"
#include "sources/source.h"
#include "sys/loop.h"
#include "sys/metrics.h"

/*
 * The Node object changed (n: NULL when gone or not seen yet).  eligible
 * is kube-proxy's nodeEligible: false while the Node has a
 * deletionTimestamp or the ToBeDeletedByClusterAutoscaler taint, or is gone
 * after it was seen; true before it is seen.
 */
typedef void (*kubesrc_node_fn)(const struct kube_node *n, bool eligible, void *userdata);

/*
 * Read the kubeconfig (or in-cluster settings: diags in d, errors at
 * DIAG_ERROR), create the source on l feeding m (merge sources
 * "api:services", "api:endpointslices"), declare its gauges in metrics.
 * Nothing is sent before sourceset_start().  fn may be NULL.  Returns
 * kube_source_new()'s: 0, -EINVAL / -ENOENT / -EACCES (configuration),
 * -EEXIST, -ENOMEM, -EIO (libcurl: a diag says so).
 */
int kubesrc_new(struct loop *l, struct merge *m, struct metrics *metrics,
		const struct kube_options *o, kubesrc_node_fn fn, void *userdata,
		struct diag_list *d, struct source **ret);

#endif
