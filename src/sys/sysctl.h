/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Integer sysctls and module parameters, read and written under a root
 * directory ("" for the real /proc and /sys; a scratch tree in the unit
 * tests), and kube-proxy's conntrack settings on top of them.
 */
#ifndef SVCNAT_SYS_SYSCTL_H
#define SVCNAT_SYS_SYSCTL_H

#include <stdbool.h>
#include <stdint.h>

#include "core/diag.h"

/* kube-proxy's conntrack defaults (pkg/proxy/apis/config/v1alpha1/
 * defaults.go) and its cap on the scaled maximum (pkg/proxy/conntrack/
 * sysctls.go, getConntrackMax). */
#define CT_DEFAULT_MAX_PER_CORE 32768
#define CT_DEFAULT_MIN 131072
#define CT_DEFAULT_TCP_ESTABLISHED_SEC (24 * 3600)
#define CT_DEFAULT_TCP_CLOSE_WAIT_SEC 3600
#define CT_MAX_LIMIT 1048576

/* A TCP timeout neither a flag nor the KubeProxyConfiguration gave:
 * kube-proxy's default applies (24 h established, 1 h CLOSE_WAIT). */
#define CT_TIMEOUT_DEFAULT UINT64_MAX

/*
 * kube-proxy's conntrack settings (--conntrack-*, conntrack: in a
 * KubeProxyConfiguration) as given, before its defaults (host_setup_sysctls()
 * in sys/host.h applies them).
 */
struct conntrack_settings {
	long max_per_core;            /* -1: not given (32768); 0: leave nf_conntrack_max */
	long min;                     /* -1: not given (kube-proxy's 131072) */
	uint64_t tcp_established_usec;/* 0: leave as is; CT_TIMEOUT_DEFAULT: not given */
	uint64_t tcp_close_wait_usec; /* the same */
	uint64_t udp_usec;
	uint64_t udp_stream_usec;
	bool tcp_be_liberal;          /* set nf_conntrack_tcp_be_liberal=1 */
};

/* What to write, defaults applied: 0 leaves a sysctl as it is. */
struct ct_sysctls {
	long max;                 /* nf_conntrack_max (and hashsize >= max/4) */
	bool max_given;           /* asked for explicitly: say why it is left */
	long tcp_established_sec; /* nf_conntrack_tcp_timeout_established */
	long tcp_close_wait_sec;  /* nf_conntrack_tcp_timeout_close_wait */
	long udp_sec;             /* nf_conntrack_udp_timeout */
	long udp_stream_sec;      /* nf_conntrack_udp_timeout_stream */
	bool tcp_be_liberal;      /* nf_conntrack_tcp_be_liberal = 1 */
};

/* kube-proxy's getConntrackMax: 0 unless max_per_core > 0; else
 * max_per_core x ncpu capped at CT_MAX_LIMIT, and never below min. */
long ct_sysctls_max(long max_per_core, long min, long ncpu);

/* Read root+path as an integer into *ret.  0 or -errno (-EIO: empty). */
int sysctl_read_int(const char *root, const char *path, long *ret);

/* Write v to root+path (no read first).  0 or -errno. */
int sysctl_write_int(const char *root, const char *path, long v);

/* Write v to root+path unless it holds v already; a note in d says what
 * changed, an error what could not.  1 written, 0 already so, -errno. */
int sysctl_set_int(const char *root, const char *path, long v, struct diag_list *d);

/*
 * Apply c as kube-proxy's setupConntrack does: each timeout and
 * tcp_be_liberal in this network namespace, when not 0/false and not
 * already so.  nf_conntrack_max and the module's hashsize (raised to max/4
 * when below it) are one table for the whole host, so they are written
 * only when host_netns (svcnat runs in the host's network namespace, as
 * kube-proxy does); elsewhere they are left, with a warning when
 * c->max_given.  A nf_conntrack_max the kernel refuses (read-only /proc
 * or /sys, as in some container runtimes) is a warning, as kube-proxy
 * only reports it; any other refusal is an error.  0 or -errno.
 */
int ct_sysctls_apply(const struct ct_sysctls *c, const char *root, bool host_netns,
		     struct diag_list *d);

#endif
