/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The pipeline: file sources -> merge engine -> resolve -> plan ->
 * backend.  It knows no mode: a caller stops after the plan (to print or
 * compare it), applies it once, or drives the same steps from an event
 * loop.
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

/*
 * What the pipeline reads, plans and writes: built by the command line
 * (cli/config.h) from the options, whose strings and arrays it borrows.
 */
struct pipeline_config {
	char *const *configs;         /* the services files and directories, in order
				       * (registration order = precedence) */
	size_t n_configs;
	const char *hostname;         /* this node's name */
	const char *zone;             /* NULL: the Node object's (the API source) */
	struct plan_settings plan;    /* the planner's settings as given (arrays borrowed) */
	bool node_ips_given;          /* plan.node_ips were given: none learnt, none
				       * taken from the Node object */
	bool nodeport_primary;        /* plan.nodeport_addresses lack the node's
				       * "primary" IP, to take from the Node object */
	bool bind_address_set;        /* bind_address: the primary node IP, first */
	struct ipaddr bind_address;
	struct backend_options backend;
	enum file_mode_check file_mode; /* for every file that decides what is programmed */
	bool kube;                    /* list the API server in pipeline_read_sources() */
	const char *kubeconfig;       /* NULL: --master or in-cluster */
	const char *master;
	const char *etcd_endpoints;   /* read etcd in pipeline_read_sources(); NULL = no */
	const char *etcd_prefix;
	const char *etcd_cacert;
	const char *etcd_cert;
	const char *etcd_key;
	const char *kube_content_type; /* NULL: protobuf (sources/kube/kubereq.h) */
	const char *kube_accept_content_types; /* the Accept header; NULL: from the type */
	bool kube_no_watch_list;      /* list, never stream (WatchListClient=false) */
	bool keep_plans;              /* plans are made again and again: keep the chain
				       * names and each family's plan between syncs */
	bool sync_once;               /* one sync only: the merged and resolved state
				       * is freed once planned */
	bool read_once;               /* each file is read once: no items kept for
				       * a reload (every mode but the daemon) */
	const char *no_net_admin;     /* the error without CAP_NET_ADMIN */
};

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
	/* Heap bytes kept for the next sync once this one is done: the plan
	 * stores' (plan_store_bytes()) and the writer's (backend_kept_bytes()). */
	size_t plan_store_bytes;
	size_t kept_bytes;
	/* What sys/warm.h faulted in ahead of this sync's writes (the first
	 * sync's; 0 when it did not run). */
	size_t warm_bytes;
};

/* The pipeline's state is its own: callers use the functions below. */
struct pipeline;

/*
 * Create the pipeline: registers one merge source per c->configs (named by
 * its path), in order.  Does not read anything yet.  c is borrowed and
 * must outlive the pipeline.  0, -EEXIST (a path given twice, in d) or
 * -errno.
 */
int pipeline_new(const struct pipeline_config *c, struct pipeline **ret, struct diag_list *d);
void pipeline_free(struct pipeline *p);

/*
 * For a process about to exit: what must outlive it is done (the writer is
 * freed, and the nft writer writes its kept state then), and the rest of
 * p's memory is left for the kernel to take back with the process, where
 * freeing it would cost the one-shot's time after its write (at 10,000 x
 * 10 the plan's and the state's frees were 0.07-0.08 s of the time from
 * the replace to the exit).  p stays reachable (memory checkers count it
 * as still in use, not lost).  p must not be used again.
 */
void pipeline_leave(struct pipeline *p);

/*
 * Read configs[i] and SET its items into the merge engine.  When the
 * path is rejected whole (-EINVAL, -EFBIG, -ENOENT, -EPERM, ...) the source
 * keeps its previous content and the error is returned.  Otherwise returns
 * the number of files (of a directory) rejected whole, which keep their
 * last good content.  Object-level errors are in d either way.  The mode
 * check (files writable by others) refuses in the modes that write rules
 * and warns in the others, unless --allow-insecure-config.
 */
int pipeline_read_source(struct pipeline *p, size_t i, struct diag_list *d);

/* --config number i's source, for a daemon that follows it
 * (sources/file/filesrc.h); NULL for no such source.  Owned by p. */
struct filesrc;
struct filesrc *pipeline_file_source(struct pipeline *p, size_t i);
/*
 * All of them, then pipeline_take_conflicts(); reads every source and
 * returns the first error, or > 0 if some file was rejected whole, or 0.
 * etcd (c->etcd_endpoints) and the API server (c->kube) are read once too
 * (etcd_list_once(), kube_list_once()): -ENOTCONN when the store cannot be
 * read, -EINVAL for wrong options or a wrong kubeconfig.
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
 * The nfacct counters the plans carry "-m nfacct" matches for from the
 * next plan on (enum plan_nfacct bits: those that exist, pipeline/counters.h).
 * 1 when that changed (the next plan is a full one), else 0.
 */
int pipeline_set_nfacct(struct pipeline *p, unsigned counters);

/*
 * The merge engine the sources feed: for registering change handlers,
 * flushing, and sources that register themselves (etcd).  Owned by p.
 */
struct merge *pipeline_merge(struct pipeline *p);

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

/* Create the backend if needed.  Without CAP_NET_ADMIN: -EPERM, with
 * c->no_net_admin in d. */
int pipeline_backend(struct pipeline *p, struct backend **ret, struct diag_list *d);

/*
 * Create the backend if needed, plan and apply to the kernel.  On failure
 * the kernel keeps the previous rules.  rep (may be NULL) is filled as far
 * as the sync got.  0 or -errno.  With c->sync_once the merged and
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
 * The daemon's first successful sync with the nft writer plans as a
 * one-shot run does, without the plan stores: their records are for the
 * later syncs, not for the rules to be in place.  Whether the stores still
 * wait for that first plan (false without stores).
 */
bool pipeline_store_pending(const struct pipeline *p);
/*
 * Make the stores' first plan from the last resolved state (the one the
 * first sync wrote), after that sync; a sync's rules on another thread, as
 * pipeline_sync_run().  *ret_bytes (may be NULL): the stores' bytes then.
 * 0 (also when nothing was pending) or -errno: the next sync's stores
 * then plan in full.
 */
int pipeline_store_warm(struct pipeline *p, size_t *ret_bytes);

#endif
