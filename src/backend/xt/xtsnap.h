/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A legacy xtables table's bytes as the kernel gave them, and putting a
 * table back to them: what the direct and libiptc writers do when a later
 * table of the same transaction is refused.  Either family: af is AF_INET
 * (ip_tables, SOL_IP) or AF_INET6 (ip6_tables, SOL_IPV6, whose headers
 * have the same layout; the entries in the blob are then ip6t_entry).
 */
#ifndef SVCNAT_BACKEND_XTSNAP_H
#define SVCNAT_BACKEND_XTSNAP_H

#include <stdbool.h>
#include <stddef.h>

#include <linux/netfilter_ipv4/ip_tables.h>

#include "core/diag.h"

/* A table as read: IPT_SO_GET_INFO, then IPT_SO_GET_ENTRIES (or IP6T_). */
struct xt_snap {
	int af;
	struct ipt_getinfo info;
	struct ipt_get_entries *ge; /* malloc'ed */
};

/*
 * Read table `table` of family af through the raw socket fd (one of that
 * family, xt_socket) into *snap.  -EAGAIN when it changed between the two
 * calls; other -errno with a diag from `who`.
 */
int xt_snap_read(int fd, int af, const char *table, struct xt_snap *snap, const char *who,
		 struct diag_list *d);
void xt_snap_done(struct xt_snap *snap);

/*
 * Replace the table of family af named in info by the entries it
 * describes (info->size bytes at entries, as IPT_SO_GET_ENTRIES returned
 * them), then give every entry its packet and byte counters: counters[i]
 * when counters is given (info->num_entries of them), else the entry's
 * own.  0, or -errno with a diag from `who`.
 */
int xt_put_back(int fd, int af, const struct ipt_getinfo *info, const void *entries,
		const struct xt_counters *counters, const char *who, struct diag_list *d);

/*
 * Why the kernel cannot take ip6tables' socket options, in words, or NULL
 * when it can: without IPv6 the socket cannot be made (EAFNOSUPPORT),
 * without ip6_tables the options are unknown (ENOPROTOOPT).  Anything else
 * (no permission, a missing xt_comment) says nothing against ip6_tables
 * and is left for the writes to report.  Creates no table.
 */
const char *xt_ip6_tables_missing(void);

/*
 * Whether the kernel takes ip6tables' socket options; where it does not,
 * a note from `who` says why and that only iptables is written.  Without
 * IPv6 the socket cannot be made (EAFNOSUPPORT), without ip6_tables the
 * options are unknown (ENOPROTOOPT).  Anything else (no permission, a
 * missing xt_comment) says nothing against ip6_tables and is left for the
 * writes to report: true.  Creates no table.
 */
bool xt_ip6_tables_usable(const char *who, struct diag_list *d);

/* A raw socket of family af (AF_INET, AF_INET6) for the xtables socket
 * options of that family; -errno with a diag. */
int xt_socket(int af, const char *who, int *ret_fd, struct diag_list *d);

#endif
