/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Facts about the host, read from the kernel in one place: its name, its
 * CPUs, this process's capabilities, whether it runs in the host's
 * network namespace, its OOM score, the addresses of its interfaces.
 * Paths are read under a root directory: "" for the real /proc, a scratch
 * tree in the unit tests (as sys/sysctl.h does).
 */
#ifndef SVCNAT_SYS_HOST_H
#define SVCNAT_SYS_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/diag.h"
#include "core/model.h"
#include "sys/sysctl.h"

/* The capability bit of CAP_NET_ADMIN (linux/capability.h). */
#define HOST_CAP_NET_ADMIN 12

/* s in lowercase, in place (kube-proxy lowercases the hostname, as node
 * names are). */
void host_name_lower(char *s);

/* The machine's hostname, lowercased, into *ret (malloc'ed, the caller's).
 * 0 or -errno. */
int host_name(char **ret);

/* The CPUs online (sysconf); at least 1. */
long host_cpus(void);

/* This process's effective capability set, from root/proc/self/status's
 * CapEff line, into *ret.  0, -ENOENT (no such file), -EIO (no CapEff
 * line), -errno. */
int host_caps_effective(const char *root, uint64_t *ret);

/* Whether this process holds CAP_NET_ADMIN.  Without a readable status
 * file: whether it runs as root. */
bool host_has_net_admin(const char *root);

/* Whether this process runs in the host's network namespace (that of pid
 * 1): root/proc/self/ns/net and root/proc/1/ns/net are one inode.  False
 * when either cannot be read. */
bool host_in_host_netns(const char *root);

/* Write adj to root/proc/self/oom_score_adj.  0 or -errno. */
int host_set_oom_score(const char *root, int adj);

/* The addresses of every interface, both families (getifaddrs), into
 * *ret and *ret_n (malloc'ed, the caller's; may be empty).  0 or -errno. */
int host_addresses(struct ipaddr **ret, size_t *ret_n);

/* What the data path asks of the host's sysctls (host_setup_sysctls()). */
struct host_sysctls {
	bool set;                     /* --set-sysctls: turn ip_forward / route_localnet on */
	bool localhost_nodeports;     /* route_localnet matters */
	bool global6;                 /* the node has a global IPv6 address: check
				       * IPv6 forwarding */
	struct conntrack_settings conntrack;
};

/*
 * Check the sysctls the data path needs under root and warn (in d) when
 * one is off; with h->set, turn them on.  Then write the conntrack settings
 * given (--conntrack-*, conntrack: in a KubeProxyConfiguration) as
 * kube-proxy does: a failure is an error (-errno), except nf_conntrack_max
 * read-only outside the host's namespace (a warning).  0 or -errno.
 */
int host_setup_sysctls(const char *root, const struct host_sysctls *h, struct diag_list *d);

#endif
