/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Parse iptables-save text (the subset svcnat renders) back into a ruleset.
 * Used by --diff (live tables read with iptables-save) and by the tests
 * (render -> parse round trips, the tracer runs on parsed text).
 *
 * Rules that use matches or targets outside the model are skipped in
 * PARSE_OWNED_ONLY mode when they are not svcnat's (foreign chains, other
 * tools' rules in built-in chains); otherwise they are an error.
 */
#ifndef SVCNAT_CORE_PARSE_H
#define SVCNAT_CORE_PARSE_H

#include <stddef.h>

#include "core/diag.h"
#include "core/ruleset.h"

enum parse_flags {
	PARSE_OWNED_ONLY = 1 << 0, /* keep only KUBE-* chains and jumps to them from built-ins */
	PARSE_IPV6 = 1 << 1,       /* ip6tables-save text: IPv6 addresses ("[ADDR]:PORT" in
				    * DNAT), REJECT's icmp6-port-unreachable, recent's
				    * all-ones IPv6 mask */
};

/* Returns 0, -EINVAL (diag names the line), -ENOMEM. */
int ruleset_parse(const char *text, size_t len, unsigned flags, struct ruleset **ret,
		  struct diag_list *diags);

#endif
