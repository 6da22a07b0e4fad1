/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Render a ruleset as iptables-save text: per table "*nat", the chain
 * declarations (":KUBE-SERVICES - [0:0]", built-ins ":PREROUTING ACCEPT
 * [0:0]"), "-A" rules in iptables-save's canonical argument order, and
 * "COMMIT".  Tables in the order filter, nat (as iptables-save prints them).
 * The text is accepted unchanged by iptables-restore (legacy and nft).
 */
#ifndef SVCNAT_CORE_RENDER_H
#define SVCNAT_CORE_RENDER_H

#include <stdio.h>

#include "core/ruleset.h"

enum render_flags {
	RENDER_FILTER = 1 << RS_FILTER,
	RENDER_NAT = 1 << RS_NAT,
	RENDER_ALL = RENDER_FILTER | RENDER_NAT,
	RENDER_NO_BUILTIN_RULES = 1 << 4, /* declare built-ins but leave out their jump rules */
};

/* Write the text; returns 0 or -errno from the stream. */
int render_save(const struct ruleset *rs, unsigned flags, FILE *f);

/*
 * Render one rule's arguments after "-A CHAIN " (no newline) into buf.
 * Returns the length it needed (like snprintf).
 */
int render_rule(const struct rs_rule *r, char *buf, size_t len);

/* iptables' quoting of a string argument (xtables_save_string). */
int render_quote(const char *s, char *buf, size_t len);

#endif
