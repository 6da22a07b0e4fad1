/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libnl-3 helpers: NLE_* error mapping, and the node's addresses over
 * rtnetlink (a dump, and a watcher on the daemon's loop that follows
 * RTM_NEWADDR / RTM_DELADDR).
 *
 * libnl returns negative NLE_* codes, which are not errno values: every
 * libnl call in svcnat goes through nlerr_to_errno() once, here or in
 * conntrack.c, and the rest of the program sees -errno only.
 */
#ifndef SVCNAT_SYS_NL_H
#define SVCNAT_SYS_NL_H

#include <stddef.h>

#include "core/model.h"
#include "sys/loop.h"

/* Map a libnl return code (0, or -NLE_* / NLE_*) to 0 or -errno. */
int nlerr_to_errno(int nle);

/*
 * Every address of the node of `family` (AF_INET, AF_INET6, or AF_UNSPEC:
 * both, as the dual-stack planner wants them), loopback included,
 * sorted and deduplicated; *ret_addrs is the caller's (free()).  0 or -errno.
 */
int nladdrs_dump(int family, struct ipaddr **ret_addrs, size_t *ret_n);

struct nladdrs_watch;

/* Called from the loop when the address set changed (a, n: the new set,
 * valid during the call). */
typedef void (*nladdrs_fn)(const struct ipaddr *a, size_t n, void *userdata);

/*
 * Subscribe to the family's address notifications (AF_UNSPEC: both
 * families'), dump the current set
 * (read it with nladdrs_watch_get()), and watch on the loop.  All
 * notifications read in one loop turn lead to one re-dump, and fn is
 * called only if the set differs; a lost notification (ENOBUFS) is
 * recovered by the same re-dump.  0 or -errno.
 */
int nladdrs_watch_new(struct loop *l, int family, nladdrs_fn fn, void *userdata,
		      struct nladdrs_watch **ret);
void nladdrs_watch_free(struct nladdrs_watch *w);
/* The current set, owned by the watcher. */
void nladdrs_watch_get(const struct nladdrs_watch *w, const struct ipaddr **ret_a, size_t *ret_n);

#endif
