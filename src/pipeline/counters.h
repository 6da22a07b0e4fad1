/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * kube-proxy's nfacct counters, by enum plan_nfacct bit (core/plan.h).
 * kube-proxy's pkg/proxy/iptables/proxier.go names both in NewProxier;
 * syncProxyRules ensures each at every full sync (pkg/proxy/util/nfacct
 * Ensure: made unless it exists) and writes a counter's "-m nfacct" match
 * only while its last ensure worked, so a counter someone deleted is made
 * again at the next full sync, and one that cannot be made costs only its
 * match and its metric.
 */
#ifndef SVCNAT_PIPELINE_COUNTERS_H
#define SVCNAT_PIPELINE_COUNTERS_H

#include <stdbool.h>

#include "core/diag.h"

struct counters {
	unsigned want;    /* enum plan_nfacct: the counters to keep (0: none, --nfacct off) */
	bool required;    /* --nfacct on: every match is planned; a failure is an error */
	unsigned failing; /* those whose last ensure failed (said once per failure run) */
};

/* The counter's nfnetlink_acct object name, NULL for another bit. */
const char *counters_name(unsigned bit);

/*
 * Ensure each counter of c->want in the calling thread's network namespace
 * (sys/nfacct.h, needs CAP_NET_ADMIN).  Returns the enum plan_nfacct bits
 * to plan: those that exist now, or c->want with c->required.  A counter
 * that cannot be made adds one diagnostic when it starts failing (an error
 * with c->required, else a warning), and a note when it is made again.
 */
unsigned counters_ensure(struct counters *c, struct diag_list *d);

/*
 * Without changing anything: the bits --once would plan here for want,
 * each counter that exists or is absent while nfnetlink_acct answers
 * (--once would make it).  *ret_unknown (optional): the bits whose probe
 * failed otherwise (no CAP_NET_ADMIN, no nfnetlink_acct), *ret_err the
 * first such -errno (0 when none).
 */
unsigned counters_probe(unsigned want, unsigned *ret_unknown, int *ret_err);

#endif
