/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nfnetlink_acct objects ("nfacct" counters) of the calling thread's
 * network namespace, through libnetfilter-acct over a libmnl socket: the
 * counters kube-proxy's "-m nfacct" rules count into.  Each object is per
 * network namespace; a rule naming one that does not exist is refused by
 * the kernel, and one that a rule uses cannot be deleted.
 *
 * Each call opens its own NETLINK_NETFILTER socket and closes it: no state
 * is kept.  All need CAP_NET_ADMIN in the namespace (else -EPERM).
 */
#ifndef SVCNAT_SYS_NFACCT_H
#define SVCNAT_SYS_NFACCT_H

#include <stdint.h>

/* Longest object name (NFACCT_NAME_MAX - 1). */
#define NFACCT_NAME_MAXLEN 31

struct nfacct_counter {
	uint64_t packets;
	uint64_t bytes;
};

/*
 * Read object `name`.  0 and *ret filled, -ENOENT when there is none,
 * -EINVAL for an empty or too long name, -EPROTO for a reply without the
 * counts, or another -errno of the kernel (-EOPNOTSUPP: a kernel without
 * nfnetlink_acct; -EPERM).
 */
int nfacct_get(const char *name, struct nfacct_counter *ret);

/*
 * Make object `name` unless it exists (an existing one keeps its counts),
 * as kube-proxy's pkg/proxy/util/nfacct Ensure: 0 when it exists
 * afterwards, else -errno as nfacct_get() (never -ENOENT).
 */
int nfacct_ensure(const char *name);

#endif
