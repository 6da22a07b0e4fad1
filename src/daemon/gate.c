/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "daemon/gate.h"

void gate_init(struct gate *g, const struct syncpolicy_config *c, const struct sourceset *ss,
	       uint64_t now)
{
	*g = (struct gate){
		/* kube-proxy's health timeout: twice the sync period. */
		.health_timeout_usec = 2 * c->sync_period_usec,
		.sources = ss,
		.node_eligible = true,
	};
	syncpolicy_init(&g->policy, c, now);
}

bool gate_sources_ready(const struct gate *g)
{
	return sourceset_ready(g->sources);
}

bool gate_may_sync(const struct gate *g, bool worker_busy, uint64_t now,
		   enum sync_reason *ret_reason)
{
	if (worker_busy || !gate_sources_ready(g))
		return false;
	return syncpolicy_due(&g->policy, now, ret_reason);
}

void gate_healthz(const struct gate *g, uint64_t now, bool *ret_healthy, bool *ret_eligible)
{
	*ret_healthy = gate_livez(g, now) && !sourceset_waiting(g->sources, NULL);
	*ret_eligible = g->node_eligible;
}

bool gate_livez(const struct gate *g, uint64_t now)
{
	return syncpolicy_healthy(&g->policy, now, g->health_timeout_usec);
}

bool gate_sync_done(struct gate *g, uint64_t now, bool ok)
{
	syncpolicy_sync_done(&g->policy, now, ok);
	if (!ok || g->ready_notified)
		return false;
	g->ready_notified = true;
	return true;
}
