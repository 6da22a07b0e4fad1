/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The command line: what svcnat is asked to do (the mode) and with which
 * settings, from the flags and a KubeProxyConfiguration.  Nothing below
 * the command line sees this struct: cli/config.h turns it into the
 * pipeline's and the daemon's configurations.
 */
#ifndef SVCNAT_OPTIONS_H
#define SVCNAT_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pipeline/pipeline.h"
#include "sys/sysctl.h"

enum svcnat_mode {
	MODE_DAEMON,
	MODE_ONCE,
	MODE_DRY_RUN,
	MODE_DIFF,
	MODE_DUMP_STATE,
	MODE_CLEANUP,
	MODE_ETCD_LOAD,
	MODE_INIT_ONLY,               /* kube-proxy's --init-only: sysctls, then exit */
};

/* Settings that a KubeProxyConfiguration sets unless a flag did (given). */
enum option_given {
	GIVEN_HOSTNAME = 1u << 0,
	GIVEN_NODE_IP = 1u << 1,
	GIVEN_CLUSTER_CIDR = 1u << 2,
	GIVEN_MASQ_ALL = 1u << 3,
	GIVEN_NODEPORT_ADDRS = 1u << 4,
	GIVEN_LOCALHOST_NODEPORTS = 1u << 5,
	GIVEN_MASQ_BIT = 1u << 6,
	GIVEN_MIN_SYNC = 1u << 7,
	GIVEN_SYNC = 1u << 8,
	GIVEN_HEALTHZ = 1u << 9,
	GIVEN_METRICS = 1u << 10,
	GIVEN_DETECT_LOCAL = 1u << 11,
	GIVEN_BRIDGE = 1u << 12,
	GIVEN_IFACE_PREFIX = 1u << 13,
	GIVEN_OOM = 1u << 14,
	GIVEN_CT_MAX_PER_CORE = 1u << 15,
	GIVEN_CT_MIN = 1u << 16,
	GIVEN_CT_ESTABLISHED = 1u << 17,
	GIVEN_CT_CLOSE_WAIT = 1u << 18,
	GIVEN_CT_LIBERAL = 1u << 19,
	GIVEN_CT_UDP = 1u << 20,
	GIVEN_CT_UDP_STREAM = 1u << 21,
	GIVEN_HARD_FAIL = 1u << 22,
	GIVEN_VERBOSE = 1u << 23,
	GIVEN_KUBECONFIG = 1u << 24,
	GIVEN_LOG_FORMAT = 1u << 25,
	GIVEN_KUBE_CONTENT_TYPE = 1u << 26,
};

/* Defaults of the daemon's options (kube-proxy's), for the daemon and
 * --help alike.  The backend's (lock, waits, retries) are in backend.h. */
#define OPT_DEFAULT_MIN_SYNC_PERIOD "1s"
#define OPT_DEFAULT_SYNC_PERIOD "30s"
#define OPT_DEFAULT_HEALTHZ_BIND "0.0.0.0:10256" /* kube-proxy's (docs/operations.md: why) */
#define OPT_DEFAULT_METRICS_BIND "127.0.0.1:10249"

/* Everything the command line says.  Owned arrays are freed by options_done(). */
/* --logging-format: unset (text in the daemon, plain in one-shot modes), text, json */
enum log_format_opt { LOG_FORMAT_OPT_UNSET, LOG_FORMAT_OPT_TEXT, LOG_FORMAT_OPT_JSON };

/* --nfacct: kube-proxy's counters where the kernel has them (auto), always
 * (on: they must be made), never (off) */
enum nfacct_opt { NFACCT_OPT_AUTO, NFACCT_OPT_ON, NFACCT_OPT_OFF };

struct svcnat_options {
	enum svcnat_mode mode;
	int verbose;                  /* 0 info, 1+ debug */
	int log_verbosity;            /* klog's -v N (a bare -v is 4, -vv 5, ...) */
	int log_format;               /* enum log_format_opt: --logging-format */
	char *vmodule;                /* --vmodule (sys/log.h), or NULL */
	char *log_file;               /* klog's --log-file, or NULL */
	bool logtostderr;             /* klog's --logtostderr (default true) */
	bool alsologtostderr;         /* klog's --alsologtostderr */
	char **configs;               /* --config, in order (registration order = precedence) */
	size_t n_configs;
	char *hostname;               /* --hostname or the machine's (lowercased) */
	char *zone;                   /* --zone */
	struct plan_settings plan;    /* owns node_ips, cluster_cidrs, nodeport_addresses */
	bool node_ips_given;          /* --node-ip was given (else learnt from the system) */
	struct backend_options backend;
	bool set_sysctls;             /* --set-sysctls: turn on ip_forward / route_localnet */
	int nfacct;                   /* enum nfacct_opt: --nfacct (plan.nfacct is
				       * PLAN_NFACCT_ALL with on, else 0 as parsed) */
	/* NULL = the OPT_DEFAULT_ above */
	char *min_sync_period;        /* kube-proxy duration text */
	char *sync_period;
	char *healthz_bind_address;   /* "" = off */
	char *metrics_bind_address;   /* "" = off */
	bool allow_insecure_config;
	/* etcd */
	char *etcd_endpoints;         /* comma-separated URLs, NULL = no etcd source */
	char *etcd_prefix;            /* default /registry */
	char *etcd_cacert;
	char *etcd_cert;
	char *etcd_key;
	/* Kubernetes API */
	char *kubeconfig;             /* --kubeconfig FILE */
	char *master;                 /* --master URL */
	bool kube;                    /* follow the API (kubeconfig, master or in-cluster) */
	char *kube_content_type;      /* --kube-api-content-type, NULL: protobuf (kube-proxy's) */
	/* clientConnection.acceptContentTypes (no flag, as in kube-proxy):
	 * the Accept header's value; NULL: the content type's, then any */
	char *kube_accept_content_types;
	bool kube_no_watch_list;      /* --feature-gates WatchListClient=false */
	char **args;                  /* positional arguments (etcd-load FILE) */
	size_t n_args;
	/* kube-proxy drop-in */
	char *kp_config;              /* the --config that is a KubeProxyConfiguration */
	unsigned given;               /* enum option_given: set by a flag */
	bool nodeport_primary;        /* --nodeport-addresses primary, still to resolve
				       * (from the API's Node: pipeline_set_node) */
	char *pod_bridge_interface;   /* plan.pod_bridge_interface points here */
	char *pod_interface_prefix;   /* plan.pod_interface_prefix points here */
	bool bind_address_set;        /* --bind-address: the primary node IP, first */
	struct ipaddr bind_address;
	bool oom_score_adj_set;
	int oom_score_adj;            /* --oom-score-adj, [-1000, 1000] */
	struct conntrack_settings conntrack;
	bool bind_address_hard_fail;  /* a health or metrics server that cannot
				       * listen is fatal (else logged, skipped) */
};

/* Set o to the defaults (MODE_DAEMON, BACKEND_AUTO, kube-proxy's
 * conntrack defaults); options_done() frees what o owns. */
void options_init(struct svcnat_options *o);
void options_done(struct svcnat_options *o);

/*
 * The daemon's --min-sync-period and --sync-period (defaults applied) in
 * microseconds, if they make a sync policy (the period > 0 and at least
 * the minimum).  0 or -EINVAL; options_parse() refuses the latter for the
 * daemon.
 */
int options_sync_periods(const struct svcnat_options *o, uint64_t *ret_min, uint64_t *ret_period);


/*
 * Parse argv into o (options_init() first).  Returns 0 to go on, or an exit
 * code (EXIT_RUNTIME, EXIT_USAGE) after printing why.  *ret_diff: --dry-run
 * --diff.  *ret_exit: --help or --version printed, exit with the returned
 * code (0).
 */
int options_parse(int argc, char **argv, struct svcnat_options *o, bool *ret_diff,
		  bool *ret_exit);

#endif
