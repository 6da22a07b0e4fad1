/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A rule tracer for tests: follows a new connection's first packet through
 * a ruleset (usually one parsed back from rendered text) the way netfilter
 * would, and reports every possible outcome with its probability.
 *
 * Hook order emulated:
 *   from outside:  nat PREROUTING -> (route) filter INPUT if the (DNATed)
 *                  destination is local, else filter FORWARD -> nat POSTROUTING
 *   from the node: nat OUTPUT -> filter OUTPUT -> nat POSTROUTING
 * Only svcnat's rules are in the ruleset, so a built-in chain that falls
 * through means ACCEPT.  -m statistic forks the trace (p and 1-p), so the
 * outcomes' probabilities add up to 1.  -m recent --rcheck and --update
 * match only when env->recent_name equals their --name (an affinity entry
 * exists for this client); --set, and --update when it matched, are
 * recorded in the outcome (the entry is set or refreshed).  Packets are
 * conntrack state NEW.
 */
#ifndef SVCNAT_TESTS_TRACER_H
#define SVCNAT_TESTS_TRACER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/model.h"
#include "core/ruleset.h"

struct trace_packet {
	struct ipaddr src;
	struct ipaddr dst;
	uint8_t proto;
	uint16_t dport;
	bool from_local; /* sent by a process on the node (OUTPUT path) */
	const char *in_iface; /* interface it arrived on (-i); NULL/ignored when from_local */
};

struct trace_env {
	const struct ipaddr *local_addrs; /* addresses of the node (addrtype LOCAL); 127/8, ::1 always local */
	size_t n_local_addrs;
	const char *recent_name;          /* affinity entry that exists for this client, or NULL */
	uint32_t masq_mark;               /* mark bit KUBE-MARK-MASQ sets; 0 = 0x4000 */
};

enum trace_verdict {
	TRACE_ACCEPT, /* passed without DNAT (not a service packet, or no rule matched) */
	TRACE_DNAT,   /* DNATed to dnat_addr:dnat_port and accepted */
	TRACE_REJECT,
	TRACE_DROP,
};

struct trace_outcome {
	double probability;
	enum trace_verdict verdict;
	struct ipaddr dnat_addr;
	uint16_t dnat_port;
	bool masquerade;        /* reached MASQUERADE in nat POSTROUTING */
	const char *recent_set; /* --set (or matching --update) name hit on the way
				 * (session affinity), or NULL */
	const char *last_chain; /* chain of the deciding rule (for messages) */
	bool masq_marked;       /* carried env->masq_mark when it left the filter
				 * hooks (entering nat POSTROUTING, or at the end) */
};

struct trace_result {
	struct trace_outcome *o;
	size_t n;
};

/* Returns 0, -ELOOP (jump depth > 64, or more than 4 million rule
 * evaluations over all branches: a goto cycle), -EINVAL (unknown chain),
 * -ENOMEM.  On success *ret owns its outcomes (trace_result_done()). */
int trace_packet(const struct ruleset *rs, const struct trace_env *env,
		 const struct trace_packet *p, struct trace_result *ret);
void trace_result_done(struct trace_result *r);

/* Sum of probabilities of outcomes DNATed to addr:port (port 0 = any). */
double trace_prob_to(const struct trace_result *r, const char *addr, uint16_t port);
/* Sum of probabilities of outcomes with verdict v. */
double trace_prob_verdict(const struct trace_result *r, enum trace_verdict v);
/* Whether every outcome with a DNAT is masqueraded (all = true) / none is. */
bool trace_all_masq(const struct trace_result *r);
bool trace_none_masq(const struct trace_result *r);
/* Print the outcomes (for failing tests). */
void trace_result_print(const struct trace_result *r, FILE *f);

#endif
