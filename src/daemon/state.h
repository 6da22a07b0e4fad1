/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daemon's state, shared by its files: daemon.c (setup, signals,
 * teardown), sync.c (when and what to sync: the loads, the job on the
 * worker, its end), telemetry.c (metrics and the HTTP handlers).  Private
 * to src/daemon/.
 */
#ifndef SVCNAT_DAEMON_STATE_H
#define SVCNAT_DAEMON_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/daemon.h"
#include "daemon/gate.h"
#include "daemon/kpmetrics.h"
#include "pipeline/pipeline.h"
#include "sources/kube/kube.h"
#include "sources/sourceset.h"
#include "sys/fswatch.h"
#include "sys/hcserver.h"
#include "sys/http.h"
#include "sys/loop.h"
#include "sys/metrics.h"
#include "sys/nl.h"
#include "sys/worker.h"
#include "sys/exitcode.h"


/*
 * The sync in progress: prepared on the loop thread; from worker_start()
 * until sync_job_done() runs on the loop thread the worker owns rep, d
 * and r (and the pipeline's plan state), nobody else touches them.
 */
struct sync_job {
	enum sync_reason reason;
	uint64_t t0;             /* when it started */
	uint64_t since;          /* oldest pending change, if had_pending */
	bool had_pending;
	double decode_seconds;   /* reading and decoding files since the last sync */
	double merge_seconds;    /* merging them */
	struct sync_report rep;  /* the worker's */
	struct diag_list d;      /* the worker's diagnostics, logged when done */
	int r;                   /* the worker's result */
};

struct daemon {
	const struct daemon_config *o;
	struct pipeline *p;
	struct loop *loop;
	int sigfd;
	struct loop_timer *sync_timer;
	struct gate gate;            /* when to sync; /healthz, /livez, READY=1 */
	struct counters nfacct;      /* ensured again at each periodic and retry sync */
	struct fswatch *watch;
	struct sourceset *sources;   /* every --config, etcd, the API */
	struct loop_timer *wait_timer; /* warns while a source was never read */
	struct nladdrs_watch *addrs;
	struct http_pool *http_pool; /* the limits every HTTP server shares */
	struct http_server *healthz;
	struct http_server *metrics_srv;
	struct metrics *metrics;
	struct kpmetrics *kpm;       /* trigger-time latency (daemon/kpmetrics.h) */
	double last_ok_wall;         /* unix time of the last successful sync */
	unsigned long synced_generation; /* desired generation of the last good sync */
	bool addrs_changed;          /* since the last good sync */
	bool addrs_deferred;         /* changed while the worker ran: applied after it */
	struct worker *worker;       /* the kernel write, off the loop thread */
	double merge_seconds;        /* merge flushes since the last sync started */
	struct sync_job job;
	int warm_r;                  /* the plan stores' first plan, after the first sync */
	size_t warm_bytes;           /* their bytes then */
	bool conntrack_pending;      /* endpoints changed since the last cleanup */
	bool conntrack_warned;
	struct hc_servers *hc;       /* healthCheckNodePort servers */
	struct merge_snapshot *last_snap; /* for kube-proxy's change counts */
	size_t service_changes_pending;   /* since the last sync started */
	size_t endpoint_changes_pending;
	int exit_code;               /* set by a handler that ends the loop */
	struct loop_timer *watchdog; /* WATCHDOG=1 while the loop runs */
	uint64_t watchdog_usec;
	bool ipv6;                   /* the backend writes ip6tables: IPv6 series too */
	int lock_fd;                 /* this network namespace's svcnat lock (sys/nslock.h) */
};

/* daemon.c: log every record of d at its level and empty d. */
void daemon_log_diags(struct diag_list *d);

/* sync.c: the loop's hooks. */
void sync_post(struct loop *l, void *userdata);                      /* loop_set_post() */
int sync_timer(struct loop *l, struct loop_timer *t, void *userdata); /* dm->sync_timer */
int sync_wait_timer(struct loop *l, struct loop_timer *t, void *userdata); /* dm->wait_timer */
void sync_merged(const struct merge_snapshot *snap, unsigned changed, void *userdata);
void sync_addrs(const struct ipaddr *a, size_t n, void *userdata);  /* nladdrs_watch */
void sync_node(const struct kube_node *n, bool eligible, void *userdata); /* kubesrc */

/* telemetry.c */
double wall_now(void);
/* Serve /healthz and /metrics (--healthz-bind-address, --metrics-bind-address):
 * 0, or -errno when the daemon must not go on. */
int telemetry_http_setup(struct daemon *dm);
/* The health-check node ports' view of this proxy (hc_servers_new()). */
bool telemetry_proxy_healthy(void *userdata);
/* svcnat_source_errors_total{source} += n (n > 0). */
void telemetry_source_errors(struct daemon *dm, const char *source, double n);
/* The merge engine changed: kube-proxy's change counters and queued time. */
void telemetry_changes(struct daemon *dm, const struct merge_snapshot *snap);
/* A sync starts (its counter; the pending changes are in it) or ended. */
void telemetry_sync_started(struct daemon *dm, enum sync_reason reason);
void telemetry_sync_ended(struct daemon *dm, const struct sync_job *job, uint64_t t1);
/* A sync succeeded: its figures, and kube-proxy's programming latency. */
void telemetry_sync_ok(struct daemon *dm, const struct sync_job *job, uint64_t t1,
		       bool state_changed);
/* The plan stores' bytes after their first plan (svcnat_memory_bytes). */
void telemetry_plan_store(struct daemon *dm, size_t bytes);
/* A sync changed nothing it planned, yet wrote: a repair. */
void telemetry_repaired(struct daemon *dm);
/* The conntrack cleanup's outcome (r < 0: it failed). */
void telemetry_conntrack(struct daemon *dm, int r, size_t deleted, size_t failed);
/* Conflicts between sources, each once. */
void telemetry_conflicts(struct daemon *dm, size_t n);

#endif
