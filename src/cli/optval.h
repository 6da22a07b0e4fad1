/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SVCNAT_OPT_H
#define SVCNAT_OPT_H

/*
 * One option's value into struct svcnat_options: the flags' ids, the
 * parsing state the command line and a KubeProxyConfiguration share, and
 * the value parsers.  Messages go to stderr, naming ps->name.
 */
#include <stdbool.h>
#include <stddef.h>

#include "cli/options.h"
#include "sys/exitcode.h"

/* getopt_long's values for the long options (options.c's table). */
enum opt_id {
	OPT_DRY_RUN = 0x100,
	OPT_DIFF,
	OPT_ONCE,
	OPT_CLEANUP,
	OPT_DUMP_STATE,
	OPT_HOSTNAME,
	OPT_NODE_IP,
	OPT_CLUSTER_CIDR,
	OPT_MASQ_ALL,
	OPT_NODEPORT_ADDRS,
	OPT_LOCALHOST_NODEPORTS,
	OPT_MASQ_BIT,
	OPT_ZONE,
	OPT_BACKEND,
	OPT_SET_SYSCTLS,
	OPT_NO_RANDOM_FULLY,
	OPT_COMPACT_THRESHOLD,
	OPT_DISPATCH,
	OPT_DISPATCH_THRESHOLD,
	OPT_NFACCT,
	OPT_MIN_SYNC,
	OPT_SYNC,
	OPT_HEALTHZ,
	OPT_METRICS,
	OPT_INSECURE,
	OPT_LOCK_WAIT,
	OPT_ETCD_ENDPOINTS,
	OPT_ETCD_PREFIX,
	OPT_ETCD_CACERT,
	OPT_ETCD_CERT,
	OPT_ETCD_KEY,
	OPT_KUBECONFIG,
	OPT_MASTER,
	OPT_VERSION,
	/* kube-proxy's flags */
	OPT_KLOG_V,
	OPT_BIND_ADDRESS,
	OPT_NODE_POD_CIDR,
	OPT_HEALTHZ_PORT,
	OPT_METRICS_PORT,
	OPT_HARD_FAIL,
	OPT_PROXY_MODE,
	OPT_DETECT_LOCAL,
	OPT_POD_BRIDGE,
	OPT_POD_PREFIX,
	OPT_OOM,
	OPT_CT_MAX_PER_CORE,
	OPT_CT_MIN,
	OPT_CT_ESTABLISHED,
	OPT_CT_CLOSE_WAIT,
	OPT_CT_LIBERAL,
	OPT_CT_UDP,
	OPT_CT_UDP_STREAM,
	OPT_INIT_ONLY,
	OPT_LOGGING_FORMAT,
	OPT_WRITE_CONFIG,
	OPT_LOG_FLUSH,
	OPT_VMODULE,
	OPT_KUBE_CONTENT_TYPE,
	OPT_LOG_FILE,
	OPT_LOGTOSTDERR,
	OPT_ALSOLOGTOSTDERR,
	OPT_IGNORED = 0x400, /* + index in kpflags.c's ignored flags */
};

/* Parsing state shared by the flags and a KubeProxyConfiguration's fields. */
struct pstate {
	struct svcnat_options *o;
	bool dry, diff, once, cleanup, dump, init_only;
	const char *from;  /* NULL: the command line; else "FILE: FIELD" */
	char name[160];    /* "--flag" or "FILE: field", for messages */
};

/* Append a copy of s to the string array (*v, *n).  0 or -ENOMEM. */
int opt_push_str(char ***v, size_t *n, const char *s);

/* Replace *dst (freed) with a copy of s.  0 or -ENOMEM. */
int opt_set_str(char **dst, const char *s);

/* Print "warning: NAME: accepted and ignored: WHY". */
void opt_warn_ignored(const struct pstate *ps, const char *why);

/* The GIVEN_* bit of the setting option c sets (0: none), for the
 * precedence of flags over a KubeProxyConfiguration. */
unsigned opt_given_bit(int c);

/*
 * Apply option c (an enum opt_id, 'v' or 'c') with its argument arg (NULL
 * for a flag without one) to ps->o.  Returns 0, -EINVAL (message printed)
 * or -ENOMEM.  Not for OPT_IGNORED + i: see kpflags_ignore().
 */
int opt_apply(struct pstate *ps, int c, const char *arg);

#endif
