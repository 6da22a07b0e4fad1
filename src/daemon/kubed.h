/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daemon's side of the Kubernetes API source (sources/kube.h): it logs
 * the source's events (a lost server at warning: the rules stay), keeps the
 * pipeline's node settings in step with the Node object, and reports the
 * source in /healthz and /metrics.  Every function takes NULL (no API
 * source) as a no-op.
 */
#ifndef SVCNAT_KUBED_H
#define SVCNAT_KUBED_H

#include <stdbool.h>
#include <stddef.h>

#include "pipeline/pipeline.h"
#include "sys/loop.h"
#include "sys/metrics.h"

struct kubed;

/* The node's zone or addresses changed: the daemon should sync. */
typedef void (*kubed_node_fn)(void *userdata);

/*
 * Create and start the source when o->kube (else *ret = NULL, 0).  Logs
 * what is wrong.  0, -EINVAL / -ENOENT / -EACCES (configuration), -errno.
 */
int kubed_new(struct loop *l, struct pipeline *p, struct metrics *m, const struct pipeline_config *o,
	      kubed_node_fn fn, void *userdata, struct kubed **ret);

/* True until Services and EndpointSlices were listed once: no kernel write before. */
bool kubed_pending(const struct kubed *k);

/*
 * kube-proxy's nodeEligible: false while this node's Node object has a
 * deletionTimestamp or the ToBeDeletedByClusterAutoscaler taint, or is gone
 * after it was seen; true before it is seen and without an API source.
 */
bool kubed_node_eligible(const struct kubed *k);

/* Write a JSON member ("\"api\": {...}") for /healthz into buf ("" for NULL). */
void kubed_health(const struct kubed *k, char *buf, size_t len);

/* Refresh the source's gauges before /metrics is written. */
void kubed_metrics(struct kubed *k);

/* List everything again (SIGHUP). */
void kubed_resync(struct kubed *k);

void kubed_free(struct kubed *k);

#endif
