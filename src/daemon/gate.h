/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daemon's ready gate, pure (tests/unit/test-gate.c): when a sync may
 * run, what /healthz and /livez answer, when systemd hears READY=1.
 *
 *  - No sync before every source was read once (sourceset_ready()), nor
 *    while the worker writes, nor before the sync policy says it is due.
 *  - /healthz: 503 while a --config was never read, or while a change (or a
 *    failed sync) has waited longer than the health timeout, twice the sync
 *    period, for a successful sync (kube-proxy's proxier health server); and
 *    503 while this node's Node object is being deleted (nodeEligible).  A
 *    network source still unlisted holds the sync back but not /healthz: its
 *    state is in /healthz's detail.
 *  - /livez: the sync policy's health alone.
 *  - READY=1 once, after the first successful sync (Type=notify: the rules
 *    are in the kernel).
 */
#ifndef SVCNAT_DAEMON_GATE_H
#define SVCNAT_DAEMON_GATE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/syncpolicy.h"
#include "sources/sourceset.h"

struct gate {
	struct syncpolicy policy;      /* when to sync (core/syncpolicy.h) */
	uint64_t health_timeout_usec;  /* twice the sync period */
	const struct sourceset *sources; /* borrowed */
	bool node_eligible;            /* the Node object's (true without one) */
	bool ready_notified;           /* READY=1 was due once */
};

/* Set up the gate over ss (borrowed) at time now. */
void gate_init(struct gate *g, const struct syncpolicy_config *c, const struct sourceset *ss,
	       uint64_t now);

/* Whether every source was read once (no sync before). */
bool gate_sources_ready(const struct gate *g);

/* Whether a sync may start now (and why: ret_reason, may be NULL). */
bool gate_may_sync(const struct gate *g, bool worker_busy, uint64_t now,
		   enum sync_reason *ret_reason);

/* /healthz's answer: healthy (the syncs) and eligible (the node); 200 when both. */
void gate_healthz(const struct gate *g, uint64_t now, bool *ret_healthy, bool *ret_eligible);

/* /livez's answer, and the health-check node ports' view of this proxy. */
bool gate_livez(const struct gate *g, uint64_t now);

/* A sync ended at now; true exactly once: after the first that succeeded
 * (the time to send READY=1). */
bool gate_sync_done(struct gate *g, uint64_t now, bool ok);

#endif
