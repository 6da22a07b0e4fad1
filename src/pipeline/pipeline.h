/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The pipeline shared by every mode: file sources -> merge engine ->
 * resolve -> plan -> backend.  --dump-state and --dry-run stop after the
 * plan, --once applies it once, the daemon drives the same steps from its
 * event loop.
 */
#ifndef SVCNAT_PIPELINE_H
#define SVCNAT_PIPELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "backend/backend.h"
#include "core/diag.h"
#include "core/merge.h"
#include "core/model.h"
#include "core/plan.h"
#include "core/ruleset.h"
#include "sources/file/cfgfile.h"

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

/* A TCP timeout neither a flag nor the KubeProxyConfiguration gave:
 * kube-proxy's default applies (24 h established, 1 h CLOSE_WAIT). */
#define CT_TIMEOUT_DEFAULT UINT64_MAX

/*
 * kube-proxy's conntrack settings (--conntrack-*, conntrack: in a
 * KubeProxyConfiguration), written as sysctls at start with kube-proxy's
 * defaults for what was not given (sys/sysctl.h).
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
};

/* Defaults of the daemon's options (kube-proxy's), for the daemon and
 * --help alike.  The backend's (lock, waits, retries) are in backend.h. */
#define OPT_DEFAULT_MIN_SYNC_PERIOD "1s"
#define OPT_DEFAULT_SYNC_PERIOD "30s"
#define OPT_DEFAULT_HEALTHZ_BIND "0.0.0.0:10256" /* kube-proxy's (docs/operations.md: why) */
#define OPT_DEFAULT_METRICS_BIND "127.0.0.1:10249"

/* Everything the command line says.  Owned arrays are freed by options_done(). */
struct svcnat_options {
	enum svcnat_mode mode;
	int verbose;                  /* 0 info, 1+ debug */
	char **configs;               /* --config, in order (registration order = precedence) */
	size_t n_configs;
	char *hostname;               /* --hostname or the machine's (lowercased) */
	char *zone;                   /* --zone */
	struct plan_settings plan;    /* owns node_ips, cluster_cidrs, nodeport_addresses */
	bool node_ips_given;          /* --node-ip was given (else learnt from the system) */
	struct backend_options backend;
	bool set_sysctls;             /* --set-sysctls: turn on ip_forward / route_localnet */
	/* daemon (issue 5) */
	/* NULL = the OPT_DEFAULT_ above */
	char *min_sync_period;        /* kube-proxy duration text */
	char *sync_period;
	char *healthz_bind_address;   /* "" = off */
	char *metrics_bind_address;   /* "" = off */
	bool allow_insecure_config;
	/* etcd (issue 6) */
	char *etcd_endpoints;         /* comma-separated URLs, NULL = no etcd source */
	char *etcd_prefix;            /* default /registry */
	char *etcd_cacert;
	char *etcd_cert;
	char *etcd_key;
	/* Kubernetes API (issue 15) */
	char *kubeconfig;             /* --kubeconfig FILE */
	char *master;                 /* --master URL */
	bool kube;                    /* follow the API (kubeconfig, master or in-cluster) */
	char **args;                  /* positional arguments (etcd-load FILE) */
	size_t n_args;
	/* kube-proxy drop-in (issue 16) */
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

void options_init(struct svcnat_options *o);
void options_done(struct svcnat_options *o);

struct sync_report {
	struct plan_stats plan;        /* the IPv4 plan's */
	struct plan_stats plan6;       /* the IPv6 plan's (ipv6) */
	bool ipv6;                     /* ip6tables was planned and written too */
	struct apply_result apply;
	size_t chains[RS_NTABLES];     /* the plan's own chains per table (not built-ins) */
	size_t rules[RS_NTABLES];      /* the plan's rules per table */
	size_t chains6[RS_NTABLES];    /* the same for the IPv6 plan (ipv6; else 0) */
	size_t rules6[RS_NTABLES];
	double plan_seconds;
	double total_seconds;
	/* The resolve before it (pipeline_sync_prepare(); 0 when the merged
	 * state had not changed) and how many service ports it and the plan
	 * built anew rather than reused. */
	double resolve_seconds;
	size_t ports_resolved;
	size_t ports_planned;
};

/* The pipeline's state is its own: callers use the functions below. */
struct pipeline;

/*
 * Create the pipeline: registers one merge source per --config (named by
 * its path), in order.  Does not read anything yet.  0 or -errno.
 */
int pipeline_new(const struct svcnat_options *o, struct pipeline **ret, struct diag_list *d);
void pipeline_free(struct pipeline *p);

/* The config-safety rule for every file that decides what svcnat programs
 * or whom it trusts (services files, kubeconfig and the files it names):
 * refused where svcnat writes rules (the daemon, --once), warned about in
 * the other modes, taken with --allow-insecure-config. */
enum file_mode_check pipeline_file_mode(const struct svcnat_options *o);

/*
 * Read --config number i and SET its items into the merge engine.  When the
 * path is rejected whole (-EINVAL, -EFBIG, -ENOENT, -EPERM, ...) the source
 * keeps its previous content and the error is returned.  Otherwise returns
 * the number of files (of a directory) rejected whole, which keep their
 * last good content.  Object-level errors are in d either way.  The mode
 * check (files writable by others) refuses in the modes that write rules
 * and warns in the others, unless --allow-insecure-config.
 */
int pipeline_read_source(struct pipeline *p, size_t i, struct diag_list *d);

/*
 * pipeline_read_source() in two steps, for a daemon that reads off its loop
 * thread: _load reads and decodes --config number i into its file source
 * (it touches nothing else of p, so it may run on another thread while the
 * caller leaves that source alone); same returns.  _commit hands the
 * merge engine what changed since the last commit (loop thread): the first
 * time (and after pipeline_clear_source()) SETs the whole content, then
 * ADDs the changed objects and REMOVEs those gone.  0 or -ENOMEM.
 */
int pipeline_source_load(struct pipeline *p, size_t i, struct diag_list *d);
int pipeline_source_commit(struct pipeline *p, size_t i);
/* Whether --config number i has said everything once: read with no file
 * lacking content (see file_source_complete()). */
bool pipeline_source_complete(const struct pipeline *p, size_t i);
/* What --config number i's last load read (files, files read again,
 * their objects); NULL for no such source.  Borrowed. */
struct file_source_stats;
const struct file_source_stats *pipeline_source_stats(const struct pipeline *p, size_t i);
/* Its next load reads every file, changed or not (SIGHUP).  Not while a
 * load of it runs. */
void pipeline_source_reread_all(struct pipeline *p, size_t i);
/*
 * All of them, then pipeline_take_conflicts(); reads every source and
 * returns the first error, or > 0 if some file was rejected whole, or 0.
 * With the API source (o->kube), it is listed once too (kube_list_once():
 * -ENOTCONN when the server cannot be listed, -EINVAL for a wrong kubeconfig).
 */
int pipeline_read_sources(struct pipeline *p, struct diag_list *d);

/* Move the merge engine's new conflict warnings (each conflict once, naming
 * both sources and the object) into d; returns how many. */
size_t pipeline_take_conflicts(struct pipeline *p, struct diag_list *d);

/* Fill settings.local_addrs from the system (getifaddrs) unless --node-ip
 * was given.  For --once/--diff/the daemon; the dry-run stays hermetic. */
int pipeline_learn_addresses(struct pipeline *p, struct diag_list *d);
/*
 * This node as its Node object describes it (the API source): the zone
 * unless --zone, the node IPs unless --node-ip.  Copies.  Returns 1 if
 * something changed, 0 if not, -ENOMEM.
 */
int pipeline_set_node(struct pipeline *p, const char *zone, const struct ipaddr *ips, size_t n);
/* Replace the learnt node addresses (the daemon's netlink watcher).  Takes
 * a copy.  Returns 1 if they changed, 0 if not, -ENOMEM. */
int pipeline_set_addresses(struct pipeline *p, const struct ipaddr *a, size_t n);
/* Whether the learnt addresses change any rule or listener: only through
 * --nodeport-addresses CIDRs (node ports' KUBE-SERVICES jumps and the
 * health-check servers' addresses).  Nothing resolved depends on them. */
bool pipeline_addresses_matter(const struct pipeline *p);

/*
 * Warn (in d) about each --cluster-cidr, --nodeport-addresses (and, in
 * NodeCIDR mode, --node-pod-cidr) CIDR of a family the node has no
 * address of (neither learnt nor --node-ip).  Silent when nothing is
 * known of the node's addresses.
 */
void pipeline_check_families(const struct pipeline *p, struct diag_list *d);

/*
 * Resolve the merged snapshot (if it changed) into the desired state:
 * after the first time, only the services the changes affect are resolved
 * again (core/delta.h).
 */
int pipeline_resolve(struct pipeline *p, struct diag_list *d);

/*
 * Make the next pipeline_resolve() resolve every service, whether or not
 * anything changed (the daemon's periodic sync), and check the incremental
 * result against it: when they differ (a bug), a warning says so in d and
 * the full result is used.
 */
void pipeline_resolve_full_next(struct pipeline *p);

/*
 * The last resolved state (empty before the first resolve) and its merge
 * generation (0 before).  Valid until the next resolve, plan or sync.
 */
const struct desired *pipeline_desired(const struct pipeline *p);
unsigned long pipeline_desired_generation(const struct pipeline *p);

/* The address families the pipeline writes: AF_INET, or AF_UNSPEC for both
 * (the backend writes ip6tables too). */
int pipeline_family(const struct pipeline *p);

/*
 * The Node object's pod CIDRs, for --detect-local-mode=NodeCIDR unless
 * --node-pod-cidr gave them (kube-proxy reads them from the Node).  Takes
 * a copy.  Returns 1 if they changed, 0 if not (or not used), -ENOMEM.
 */
int pipeline_set_node_pod_cidrs(struct pipeline *p, const struct ipnet *cidrs, size_t n);

/* The planner's settings, with the node's learnt addresses.  Owned by p. */
const struct plan_settings *pipeline_settings(const struct pipeline *p);

/*
 * The merge engine the sources feed: for registering change handlers,
 * flushing, and sources that register themselves (etcd).  Owned by p.
 */
struct merge *pipeline_merge(struct pipeline *p);

/* Empty --config number i (its file is gone): its items are removed at the
 * next flush.  0 or -errno. */
int pipeline_clear_source(struct pipeline *p, size_t i);

/* A family's plan in the arrays below: iptables' and ip6tables'. */
enum { PLAN_V4, PLAN_V6, PLAN_NFAMILIES };

/*
 * Resolve and plan both families (dual-stack, as kube-proxy runs one
 * proxier per family): ret[PLAN_V4] for iptables, ret[PLAN_V6] for
 * ip6tables, both the caller's, with their stats.  Diagnostics that both
 * plans give are in d once.  0 or -errno (nothing in ret then).
 */
int pipeline_plan(struct pipeline *p, struct ruleset *ret[PLAN_NFAMILIES],
		  struct plan_stats st[PLAN_NFAMILIES], struct diag_list *d);
/*
 * Plan one family (AF_INET or AF_INET6) from the last resolved state;
 * dual_stack: the other family is planned too (plan_settings.dual_stack).
 * st may be NULL.
 */
int pipeline_plan_family(struct pipeline *p, int family, bool dual_stack, struct ruleset **ret,
			 struct plan_stats *st, struct diag_list *d);

/* Create the backend if needed (checks CAP_NET_ADMIN first). */
int pipeline_backend(struct pipeline *p, struct backend **ret, struct diag_list *d);

/*
 * Create the backend if needed, plan and apply to the kernel.  On failure
 * the kernel keeps the previous rules.  rep (may be NULL) is filled as far
 * as the sync got.  0 or -errno.  In MODE_ONCE the merged and
 * resolved state is freed once planned (the write's peak memory is then
 * its own): such a pipeline syncs once.
 */
int pipeline_sync(struct pipeline *p, struct sync_report *rep, struct diag_list *d);

/*
 * pipeline_sync() in two steps, for a daemon that writes off its loop
 * thread.  _prepare creates the backend if needed and resolves the merged
 * state (it reads the merge engine).  _run plans from the resolved state and
 * applies: it reads only that state and the settings and uses the backend,
 * so it may run on another thread while the caller goes on updating and
 * flushing the merge engine (and reading sources); the caller must not call
 * any other pipeline function that resolves, plans, syncs or sets addresses
 * until _run has returned.  0 or -errno each; -EINVAL from _run without a
 * backend.
 */
int pipeline_sync_prepare(struct pipeline *p, struct diag_list *d);
int pipeline_sync_run(struct pipeline *p, struct sync_report *rep, struct diag_list *d);

/*
 * Check the sysctls the data path needs and warn (in d) when one is off;
 * with o->set_sysctls, turn them on.  Then write the conntrack settings
 * given (--conntrack-*, conntrack: in a KubeProxyConfiguration) as
 * kube-proxy does: a failure is an error (-errno), except nf_conntrack_max
 * read-only outside the host's namespace (a warning).  0 or -errno.
 */
int pipeline_check_sysctls(struct pipeline *p, struct diag_list *d);

/* --oom-score-adj: write /proc/self/oom_score_adj (a failure is a warning
 * in d, as kube-proxy only logs it).  Returns 0. */
int pipeline_set_oom_score(const struct svcnat_options *o, struct diag_list *d);

#endif
