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

enum svcnat_mode {
	MODE_DAEMON,
	MODE_ONCE,
	MODE_DRY_RUN,
	MODE_DIFF,
	MODE_DUMP_STATE,
	MODE_CLEANUP,
	MODE_ETCD_LOAD,
};

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
	char *min_sync_period;        /* kube-proxy duration text, default "1s" */
	char *sync_period;            /* default "30s" */
	char *healthz_bind_address;   /* default 127.0.0.1:10256; "" = off */
	char *metrics_bind_address;   /* default 127.0.0.1:10249; "" = off */
	bool allow_insecure_config;
	/* etcd (issue 6) */
	char *etcd_endpoints;         /* comma-separated URLs, NULL = no etcd source */
	char *etcd_prefix;            /* default /registry */
	char *etcd_cacert;
	char *etcd_cert;
	char *etcd_key;
	char **args;                  /* positional arguments (etcd-load FILE) */
	size_t n_args;
};

void options_init(struct svcnat_options *o);
void options_done(struct svcnat_options *o);

struct sync_report {
	struct plan_stats plan;
	struct apply_result apply;
	double plan_seconds;
	double total_seconds;
};

struct pipeline {
	const struct svcnat_options *o;
	struct plan_settings settings; /* o->plan with the learnt addresses filled in */
	struct ipaddr *learnt_addrs;   /* owned; local_addrs when not from --node-ip */
	struct merge *merge;
	int *source_ids;               /* merge source id per --config */
	struct backend *backend;       /* created on first apply */
	struct desired desired;        /* last resolved state */
	unsigned long desired_generation;
};

/*
 * Create the pipeline: registers one merge source per --config (named by
 * its path), in order.  Does not read anything yet.  0 or -errno.
 */
int pipeline_new(const struct svcnat_options *o, struct pipeline **ret, struct diag_list *d);
void pipeline_free(struct pipeline *p);

/*
 * Read --config number i and SET its items into the merge engine.  On a
 * file rejected whole (-EINVAL, -EFBIG, -ENOENT, ...) the source keeps its
 * previous content.  Object-level errors are in d, the call still succeeds.
 */
int pipeline_read_source(struct pipeline *p, size_t i, struct diag_list *d);
/* All of them; returns the first error but reads every source. */
int pipeline_read_sources(struct pipeline *p, struct diag_list *d);

/* Fill settings.local_addrs from the system (getifaddrs) unless --node-ip
 * was given.  For --once/--diff/the daemon; the dry-run stays hermetic. */
int pipeline_learn_addresses(struct pipeline *p, struct diag_list *d);
/* Replace the learnt node addresses (the daemon's netlink watcher).  Takes
 * a copy.  Returns 1 if they changed, 0 if not, -ENOMEM. */
int pipeline_set_addresses(struct pipeline *p, const struct ipaddr *a, size_t n);

/* Resolve the merged snapshot (if it changed) into p->desired. */
int pipeline_resolve(struct pipeline *p, struct diag_list *d);

/* Resolve and plan.  *ret is the caller's. */
int pipeline_plan(struct pipeline *p, struct ruleset **ret, struct plan_stats *st,
		  struct diag_list *d);

/* Create the backend if needed (checks CAP_NET_ADMIN first). */
int pipeline_backend(struct pipeline *p, struct backend **ret, struct diag_list *d);

/*
 * Plan and apply to the kernel.  On failure the kernel keeps the previous
 * rules.  rep may be NULL.  0 or -errno.  In MODE_ONCE the merged and
 * resolved state is freed once planned (the write's peak memory is then
 * its own): such a pipeline syncs once.
 */
int pipeline_sync(struct pipeline *p, struct sync_report *rep, struct diag_list *d);

/*
 * Check the sysctls the data path needs and warn (in d) when one is off;
 * with o->set_sysctls, turn them on.  0 or -errno.
 */
int pipeline_check_sysctls(struct pipeline *p, struct diag_list *d);

#endif
