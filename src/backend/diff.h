/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * --diff: what a sync would add ("+" lines) and remove ("-" lines), in
 * iptables-save rule syntax, from the live owned state a writer read.
 */
#ifndef SVCNAT_BACKEND_DIFF_H
#define SVCNAT_BACKEND_DIFF_H

#include <stdio.h>

#include "core/ruleset.h"

/*
 * Print the difference of live (a writer's read: owned chains, and the
 * built-in chains with svcnat's jump rules only) and plan, table by table.
 * Returns 0 when equal, 1 when different, -errno (-EIO: out failed).
 */
int diff_print(const struct ruleset *live, const struct ruleset *plan, FILE *out);

#endif
