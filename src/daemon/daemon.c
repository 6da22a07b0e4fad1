/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>

#include "core/changes.h"
#include "core/duration.h"
#include "core/syncpolicy.h"
#include "daemon/daemon.h"
#include "daemon/kpmetrics.h"
#include "daemon/kubed.h"
#include "sources/etcd/etcd.h"
#include "sources/file/file.h"
#include "sys/conntrack.h"
#include "sys/exitcode.h"
#include "sys/fswatch.h"
#include "sys/hcserver.h"
#include "sys/http.h"
#include "sys/log.h"
#include "sys/loop.h"
#include "sys/metrics.h"
#include "sys/nl.h"
#include "sys/nslock.h"
#include "sys/worker.h"
#include "util.h"

/* kube-proxy's ip_family label: IPv4, and IPv6 where ip6tables is written
 * too (struct daemon's ipv6). */
#define V4 "ip_family=\"IPv4\""
#define V6 "ip_family=\"IPv6\""
static const char *const family_labels[] = { V4, V6 };

/* The sync in progress: prepared on the loop, written by the worker. */
struct sync_job {
	enum sync_reason reason;
	uint64_t t0;             /* when it started */
	uint64_t since;          /* oldest pending change, if had_pending */
	bool had_pending;
	double decode_seconds;   /* reading and decoding files since the last sync */
	double merge_seconds;    /* merging them */
	struct sync_report rep;
	struct diag_list d;      /* the worker's diagnostics, logged when done */
	int r;
};

struct daemon {
	const struct daemon_config *o;
	struct pipeline *p;
	struct loop *loop;
	int sigfd;
	struct loop_timer *sync_timer;
	struct syncpolicy policy;
	uint64_t health_timeout_usec;
	struct fswatch *watch;
	bool *source_dirty;          /* per --config: to be re-read */
	bool *source_reread;         /* per --config: every file, changed or not (SIGHUP) */
	bool *source_loading;        /* per --config: being read by the worker */
	int *load_result;            /* per --config: pipeline_source_load()'s */
	struct diag_list *load_diags; /* per --config: its diagnostics */
	bool *source_ready;          /* per --config: read completely once */
	struct loop_timer *wait_timer; /* warns while a source was never read */
	struct nladdrs_watch *addrs;
	struct etcd_source *etcd;
	struct kubed *kube;          /* the Kubernetes API source, or NULL */
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
	double decode_seconds;       /* file reads since the last sync started */
	double merge_seconds;        /* merge flushes since then */
	double load_seconds;         /* the load job's reads (the worker's) */
	struct sync_job job;
	bool conntrack_pending;      /* endpoints changed since the last cleanup */
	bool conntrack_warned;
	struct hc_servers *hc;       /* healthCheckNodePort servers */
	struct merge_snapshot *last_snap; /* for kube-proxy's change counts */
	size_t service_changes_pending;   /* since the last sync started */
	size_t endpoint_changes_pending;
	bool notified_ready;         /* READY=1 sent to systemd (after the first good sync) */
	int exit_code;               /* set by a handler that ends the loop */
	struct loop_timer *watchdog; /* WATCHDOG=1 while the loop runs */
	uint64_t watchdog_usec;
	bool ipv6;                   /* the backend writes ip6tables: IPv6 series too */
	int lock_fd;                 /* this network namespace's svcnat lock (sys/nslock.h) */
};

/* How many of family_labels the metrics carry. */
static size_t n_families(const struct daemon *dm)
{
	return dm->ipv6 ? 2 : 1;
}

/* A histogram of both families (one sync writes both, as one figure). */
static void observe_families(struct daemon *dm, const char *name, double v)
{
	for (size_t f = 0; f < n_families(dm); f++)
		metrics_histogram_observe(dm->metrics, name, family_labels[f], v);
}

static double wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void log_diags(struct diag_list *d)
{
	size_t i;

	for (i = 0; i < d->n; i++) {
		_cleanup_free_ char *line = diag_format(&d->items[i]);
		int level = d->items[i].level == DIAG_ERROR   ? LOG_LEVEL_ERR
			    : d->items[i].level == DIAG_WARNING ? LOG_LEVEL_WARNING
								: LOG_LEVEL_INFO;

		if (line)
			log_msg(level, "%s", line);
	}
	if (d->dropped)
		log_warn("%zu more diagnostics not shown", d->dropped);
	diag_list_done(d);
	diag_list_init(d);
}

static void count_source_errors(struct daemon *dm, const char *source, double n)
{
	char lbl[512];

	if (n > 0 && metrics_label(lbl, sizeof(lbl), "source", source))
		metrics_counter_add(dm->metrics, "svcnat_source_errors_total", lbl, n);
}

/*
 * Re-read --config number i after a change (or at start / SIGHUP).  Returns
 * pipeline_read_source()'s result.
 */
static int source_loaded(struct daemon *dm, size_t i, int r, struct diag_list *d)
{
	const struct file_source_stats *fs = pipeline_source_stats(dm->p, i);
	const char *path = dm->o->pipeline.configs[i];
	char lbl[512];

	if (fs && fs->files_read && metrics_label(lbl, sizeof(lbl), "source", path))
		metrics_counter_add(dm->metrics, "svcnat_source_files_read_total", lbl,
				    (double)fs->files_read);
	if (fs && r >= 0 && fs->objects_reused)
		log_debug("%s: %zu of %zu file%s read (%zu objects), %zu of them unchanged and not "
			  "decoded again", path, fs->files_read, fs->files, fs->files == 1 ? "" : "s",
			  fs->objects_read, fs->objects_reused);
	else if (fs && r >= 0)
		log_debug("%s: %zu of %zu file%s read (%zu objects)", path, fs->files_read,
			  fs->files, fs->files == 1 ? "" : "s", fs->objects_read);
	if (r >= 0) {
		double t0 = monotonic_seconds();
		int c = pipeline_source_commit(dm->p, i);

		dm->merge_seconds += monotonic_seconds() - t0;
		if (c < 0)
			r = c;
	}
	if (r == -ENOENT && dm->source_ready[i]) {
		/* Deleted: its services go away. */
		diag_list_done(d);
		diag_list_init(d);
		r = pipeline_clear_source(dm->p, i);
		log_info("%s: not there (deleted?): its services are removed", path);
		r = r < 0 ? r : -ENOENT;
	} else if (r < 0 && dm->source_ready[i]) {
		log_err("%s: rejected, keeping its last good content", path);
		count_source_errors(dm, path, 1);
	} else if (r < 0) {
		log_warn("%s: not read yet: no rules are written until it is", path);
		count_source_errors(dm, path, 1);
	} else {
		if (r > 0)
			log_err("%s: %d file%s rejected, each keeping its last good content", path, r,
				r == 1 ? "" : "s");
		count_source_errors(dm, path, (double)r + (double)diag_count(d, DIAG_ERROR));
		if (pipeline_source_complete(dm->p, i))
			dm->source_ready[i] = true;
	}
	log_diags(d);
	return r;
}

/* Read --config number i now, on the loop thread (at start). */
static int reload_source(struct daemon *dm, size_t i)
{
	double t0 = monotonic_seconds();
	struct diag_list d;
	int r;

	diag_list_init(&d);
	r = pipeline_source_load(dm->p, i, &d);
	dm->decode_seconds += monotonic_seconds() - t0;
	r = source_loaded(dm, i, r, &d);
	diag_list_done(&d);
	return r;
}

/* On the worker thread: read and decode the sources marked loading. */
static void load_job_run(void *userdata)
{
	struct daemon *dm = userdata;
	double t0 = monotonic_seconds();
	size_t i;

	for (i = 0; i < dm->o->pipeline.n_configs; i++)
		if (dm->source_loading[i])
			dm->load_result[i] = pipeline_source_load(dm->p, i, &dm->load_diags[i]);
	dm->load_seconds = monotonic_seconds() - t0;
}

/* Back on the loop thread: hand what was read to the merge engine. */
static void load_job_done(void *userdata)
{
	struct daemon *dm = userdata;
	size_t i;

	dm->decode_seconds += dm->load_seconds;
	for (i = 0; i < dm->o->pipeline.n_configs; i++) {
		if (!dm->source_loading[i])
			continue;
		dm->source_loading[i] = false;
		source_loaded(dm, i, dm->load_result[i], &dm->load_diags[i]);
		diag_list_done(&dm->load_diags[i]);
		diag_list_init(&dm->load_diags[i]);
	}
}

static const char *source_pending(const struct daemon *dm);
static bool etcd_pending(struct daemon *dm);

/*
 * Re-read the changed sources on the worker: decoding a big file takes
 * time the loop must not spend.  When the worker is busy they stay marked
 * and go at the next post hook after it is done.
 */
static void start_loads(struct daemon *dm)
{
	size_t i, n = 0;

	if (worker_busy(dm->worker))
		return;
	/* A sync that is due goes first: changes arriving faster than they
	 * are read must not starve it. */
	if (!source_pending(dm) && !etcd_pending(dm) &&
	    syncpolicy_due(&dm->policy, loop_now_usec(), NULL))
		return;
	for (i = 0; i < dm->o->pipeline.n_configs; i++) {
		dm->source_loading[i] = dm->source_dirty[i];
		dm->source_dirty[i] = false;
		if (dm->source_loading[i] && dm->source_reread[i])
			pipeline_source_reread_all(dm->p, i); /* the worker is idle */
		dm->source_reread[i] = false;
		n += dm->source_loading[i];
	}
	if (n && worker_start(dm->worker, load_job_run, load_job_done, dm) < 0) {
		/* No thread: read them here rather than not at all. */
		load_job_run(dm);
		load_job_done(dm);
	}
}

/* The first --config not read completely yet, or NULL. */
static const char *source_pending(const struct daemon *dm)
{
	size_t i;

	for (i = 0; i < dm->o->pipeline.n_configs; i++)
		if (!dm->source_ready[i])
			return dm->o->pipeline.configs[i];
	return NULL;
}

#define WAIT_WARN_USEC (5 * 1000000ULL)

/* Until every source is read once, a warning every few seconds names them. */
static int on_wait_timer(struct loop *l, struct loop_timer *t, void *userdata)
{
	struct daemon *dm = userdata;
	size_t i, n = 0;

	for (i = 0; i < dm->o->pipeline.n_configs; i++)
		if (!dm->source_ready[i])
			n++;
	if (!n)
		return 0;
	for (i = 0; i < dm->o->pipeline.n_configs; i++)
		if (!dm->source_ready[i])
			log_warn("%s: still not read (%zu source%s pending): no rules are written "
				 "until every source has been read once",
				 dm->o->pipeline.configs[i], n, n == 1 ? "" : "s");
	return loop_timer_arm(t, WAIT_WARN_USEC);
}

/* The fswatch tag of the KubeProxyConfiguration (the sources' are their index). */
#define KPCONFIG_TAG ((void *)(uintptr_t)SIZE_MAX)

static void on_fs_change(struct fswatch *w, const char *path, void *tag, void *userdata)
{
	struct daemon *dm = userdata;
	size_t i = (size_t)(uintptr_t)tag;

	if (tag == KPCONFIG_TAG) {
		/* As kube-proxy: its settings are read at start, so a changed
		 * file ends the daemon (exit 1; systemd's Restart=on-failure,
		 * or the DaemonSet, starts it again with them).  The rules stay. */
		log_warn("%s: the KubeProxyConfiguration changed: exiting to be restarted with it "
			 "(the rules stay in place)", path);
		dm->exit_code = EXIT_RUNTIME;
		loop_quit(dm->loop, 0);
		return;
	}

	log_debug("%s changed", path);
	dm->source_dirty[i] = true;
}

static void on_merged(const struct merge_snapshot *snap, unsigned changed, void *userdata)
{
	struct daemon *dm = userdata;
	uint64_t now = loop_now_usec();

	syncpolicy_change(&dm->policy, now);
	for (size_t f = 0; f < n_families(dm); f++)
		metrics_gauge_set(dm->metrics,
				  "kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds",
				  family_labels[f], wall_now());
	{
		struct snapshot_changes ch;

		snapshot_changes_count(dm->last_snap, snap, &ch);
		metrics_counter_add(dm->metrics, "kubeproxy_sync_proxy_rules_service_changes_total",
				    NULL, (double)ch.services);
		metrics_counter_add(dm->metrics, "kubeproxy_sync_proxy_rules_endpoint_changes_total",
				    NULL, (double)ch.slices);
		dm->service_changes_pending += ch.services;
		dm->endpoint_changes_pending += ch.slices;
		metrics_gauge_set(dm->metrics, "kubeproxy_sync_proxy_rules_service_changes_pending",
				  NULL, (double)dm->service_changes_pending);
		metrics_gauge_set(dm->metrics, "kubeproxy_sync_proxy_rules_endpoint_changes_pending",
				  NULL, (double)dm->endpoint_changes_pending);
		kpmetrics_merged(dm->kpm, dm->last_snap, snap);
		merge_snapshot_unref(dm->last_snap);
		dm->last_snap = merge_snapshot_ref((struct merge_snapshot *)snap);
	}
	if (changed & MERGE_HANDLE_ENDPOINTS || changed & MERGE_HANDLE_SERVICES)
		dm->conntrack_pending = true;
}

/* Whether anything listens on node ports: the rules' node ports, or a
 * health check's (a LoadBalancer without node ports has one too). */
static bool desired_has_node_ports(const struct desired *d)
{
	size_t i;

	for (i = 0; i < d->n_ports; i++)
		if ((d->ports[i].node_port || d->ports[i].health_check_node_port) &&
		    !d->ports[i].skipped)
			return true;
	return false;
}

static void on_addrs(const struct ipaddr *a, size_t n, void *userdata)
{
	struct daemon *dm = userdata;
	int r;

	if (worker_busy(dm->worker)) {
		/* The write in progress plans with the old ones. */
		dm->addrs_deferred = true;
		return;
	}
	r = pipeline_set_addresses(dm->p, a, n);
	if (r <= 0)
		return;
	log_info("node addresses changed: %zu addresses", n);
	/* Only node ports (their KUBE-SERVICES jumps, the health checks'
	 * listeners) inside --nodeport-addresses CIDRs depend on them; the
	 * sync resolves nothing again (nothing resolved depends on them). */
	if (!pipeline_addresses_matter(dm->p) || !desired_has_node_ports(pipeline_desired(dm->p)))
		return;
	dm->addrs_changed = true;
	syncpolicy_change(&dm->policy, loop_now_usec());
}

/* The Node object changed the zone or the node IPs: plan again. */
static void on_kube_node(void *userdata)
{
	struct daemon *dm = userdata;

	syncpolicy_change(&dm->policy, loop_now_usec());
}

static void conntrack_after_sync(struct daemon *dm)
{
	struct conntrack_index *ix = NULL;
	struct conntrack_result res;
	double t0 = monotonic_seconds();
	int r;

	if (!dm->conntrack_pending)
		return;
	dm->conntrack_pending = false;
	r = conntrack_index_build(pipeline_desired(dm->p), pipeline_family(dm->p), &ix);
	if (r >= 0)
		r = conntrack_cleanup(ix, &res);
	conntrack_index_free(ix);
	if (r >= 0)
		kpmetrics_conntrack(dm->kpm, res.deleted - res.deleted6, res.deleted6,
				    monotonic_seconds() - t0);
	if (r < 0) {
		metrics_counter_add(dm->metrics, "svcnat_conntrack_errors_total", NULL, 1);
		if (!dm->conntrack_warned)
			log_warn("conntrack cleanup failed: %s (stale UDP flows may persist; "
				 "is nf_conntrack_netlink available?)", strerror(-r));
		dm->conntrack_warned = true;
		return;
	}
	if (res.deleted || res.failed)
		log_v(LOG_V_SYNC, "conntrack: deleted %zu stale UDP entries (%zu failed) of %zu",
			 res.deleted, res.failed, res.scanned);
	metrics_counter_add(dm->metrics, "svcnat_conntrack_entries_deleted_total", NULL,
			    (double)res.deleted);
	if (res.failed)
		metrics_counter_add(dm->metrics, "svcnat_conntrack_errors_total", NULL, 1);
}

static void update_sync_metrics(struct daemon *dm, const struct sync_report *rep)
{
	const struct plan_stats *st = &rep->plan;
	const struct apply_result *ar = &rep->apply;
	char lbl[64];
	size_t t;

	for (t = 0; t < RS_NTABLES; t++) {
		metrics_label(lbl, sizeof(lbl), "table", rs_table_name((enum rs_table)t));
		for (size_t f = 0; f < n_families(dm); f++) {
			const size_t *rules = f ? rep->rules6 : rep->rules;
			const bool *committed = f ? ar->committed6 : ar->committed;
			char flbl[96];

			snprintf(flbl, sizeof(flbl), "%s,%s", family_labels[f], lbl);
			metrics_gauge_set(dm->metrics, "kubeproxy_sync_proxy_rules_iptables_total",
					  flbl, (double)rules[t]);
			/* A table is written whole or not at all. */
			metrics_gauge_set(dm->metrics, "kubeproxy_sync_proxy_rules_iptables_last",
					  flbl, committed[t] ? (double)rules[t] : 0);
		}
		/* Both families' chains: the tables svcnat writes. */
		metrics_gauge_set(dm->metrics, "svcnat_chains", lbl,
				  (double)(rep->chains[t] +
					   (n_families(dm) > 1 ? rep->chains6[t] : 0)));
	}
	for (size_t f = 0; f < n_families(dm); f++) {
		const struct plan_stats *fs = f ? &rep->plan6 : st;
		char flbl[96];

		snprintf(flbl, sizeof(flbl), "%s,traffic_policy=\"internal\"", family_labels[f]);
		metrics_gauge_set(dm->metrics, "kubeproxy_sync_proxy_rules_no_local_endpoints_total",
				  flbl, (double)fs->no_local_internal);
		snprintf(flbl, sizeof(flbl), "%s,traffic_policy=\"external\"", family_labels[f]);
		metrics_gauge_set(dm->metrics, "kubeproxy_sync_proxy_rules_no_local_endpoints_total",
				  flbl, (double)fs->no_local_external);
	}
	/* Summed over the families written: a dual-stack service port counts
	 * once per family, as each family's tables program it. */
	metrics_gauge_set(dm->metrics, "svcnat_services", NULL,
			  (double)(st->services + (n_families(dm) > 1 ? rep->plan6.services : 0)));
	metrics_gauge_set(dm->metrics, "svcnat_endpoints", NULL,
			  (double)(st->endpoints + (n_families(dm) > 1 ? rep->plan6.endpoints : 0)));
	/* --dispatch: KUBE-DSP- chains, and how many chains are trees (0-5) */
	metrics_gauge_set(dm->metrics, "svcnat_dispatch_chains", NULL, (double)st->dispatch_chains);
	metrics_gauge_set(dm->metrics, "svcnat_dispatch_trees", NULL, (double)st->dispatch_trees);
	metrics_counter_add(dm->metrics, "svcnat_sync_rules_written_total", NULL,
			    (double)ar->rules_written);
	metrics_counter_add(dm->metrics, "svcnat_sync_netlink_messages_total", NULL,
			    (double)ar->messages);
	metrics_counter_add(dm->metrics, "svcnat_sync_netlink_bytes_total", NULL,
			    (double)ar->bytes);
	metrics_gauge_set(dm->metrics, "svcnat_sync_service_ports_rebuilt", "step=\"resolve\"",
			  (double)rep->ports_resolved);
	metrics_gauge_set(dm->metrics, "svcnat_sync_service_ports_rebuilt", "step=\"plan\"",
			  (double)rep->ports_planned);
	metrics_counter_add(dm->metrics, "svcnat_sync_chains_changed_total", "op=\"created\"",
			    (double)ar->chains_created);
	metrics_counter_add(dm->metrics, "svcnat_sync_chains_changed_total", "op=\"replaced\"",
			    (double)ar->chains_replaced);
	metrics_counter_add(dm->metrics, "svcnat_sync_chains_changed_total", "op=\"deleted\"",
			    (double)ar->chains_deleted);
}

/* Each part of the sync: a histogram each, and one line at -v. */
static void sync_parts(struct daemon *dm, const struct sync_job *job)
{
	const struct sync_report *rep = &job->rep;
	const struct apply_result *ar = &rep->apply;
	const struct {
		const char *name;
		double v;
	} part[] = {
		{ "decode", job->decode_seconds },
		{ "merge", job->merge_seconds },
		{ "resolve", rep->resolve_seconds },
		{ "plan", rep->plan_seconds },
		{ "encode", ar->encode_seconds },
		{ "kernel_read", ar->read_seconds },
		{ "kernel_write", ar->write_seconds },
	};
	char lbl[64];

	for (size_t i = 0; i < ARRAY_SIZE(part); i++) {
		metrics_label(lbl, sizeof(lbl), "part", part[i].name);
		metrics_histogram_observe(dm->metrics, "svcnat_sync_part_duration_seconds", lbl,
					  part[i].v);
	}
	log_debug("sync parts: decode %.3f s, merge %.3f s, resolve %.3f s (%zu service ports "
		  "anew), plan %.3f s (%zu anew), encode %.3f s, kernel read %.3f s, kernel "
		  "write %.3f s", job->decode_seconds, job->merge_seconds, rep->resolve_seconds,
		  rep->ports_resolved, rep->plan_seconds, rep->ports_planned, ar->encode_seconds,
		  ar->read_seconds, ar->write_seconds);
}

/* Account for the sync in dm->job: log, metrics, health, conntrack. */
static void sync_finish(struct daemon *dm)
{
	struct sync_job *job = &dm->job;
	const struct sync_report *rep = &job->rep;
	const struct plan_stats *st = &rep->plan;
	const struct apply_result *ar = &rep->apply;
	enum sync_reason reason = job->reason;
	uint64_t t0 = job->t0, since = job->since, t1 = loop_now_usec();
	bool had_pending = job->had_pending;
	bool state_changed;
	struct diag_list hd;
	int r = job->r;

	log_diags(&job->d);
	diag_list_done(&job->d);
	sync_parts(dm, job);
	syncpolicy_sync_done(&dm->policy, t1, r >= 0);
	observe_families(dm, "kubeproxy_sync_proxy_rules_duration_seconds", (double)(t1 - t0) / 1e6);
	/* kube-proxy's full syncs: the first, the periodic ones, those after a
	 * failure; a sync for a change is a partial one. */
	observe_families(dm,
			 reason == SYNC_CHANGE ? "kubeproxy_sync_partial_proxy_rules_duration_seconds"
					       : "kubeproxy_sync_full_proxy_rules_duration_seconds",
			 (double)(t1 - t0) / 1e6);
	if (r < 0) {
		char next[32];
		uint64_t n = syncpolicy_next(&dm->policy, NULL);

		kpmetrics_sync_done(dm->kpm, false, 0);
		/* One transaction for both families: both failed. */
		for (size_t f = 0; f < n_families(dm); f++)
			metrics_counter_add(dm->metrics,
					    "kubeproxy_sync_proxy_rules_iptables_restore_failures_total",
					    family_labels[f], 1);
		log_err("sync (%s) failed: %s; %s, retrying in %s", sync_reason_name(reason),
			strerror(-r),
			ar->partial ? "the tables are half written (see above)"
				   : "the kernel keeps its previous rules",
			duration_fmt(n > t1 ? n - t1 : 0, next, sizeof(next)));
		return;
	}

	size_t changed = ar->chains_created + ar->chains_replaced + ar->chains_deleted;
	bool wrote = ar->committed[RS_NAT] || ar->committed[RS_FILTER] ||
		     ar->committed6[RS_NAT] || ar->committed6[RS_FILTER];

	state_changed = dm->synced_generation != pipeline_desired_generation(dm->p) ||
			dm->addrs_changed;
	dm->last_ok_wall = wall_now();
	for (size_t f = 0; f < n_families(dm); f++)
		metrics_gauge_set(dm->metrics, "kubeproxy_sync_proxy_rules_last_timestamp_seconds",
				  family_labels[f], dm->last_ok_wall);
	update_sync_metrics(dm, rep);
	kpmetrics_sync_done(dm->kpm, true, dm->last_ok_wall);
	if (had_pending && state_changed)
		metrics_histogram_observe(dm->metrics, "svcnat_change_to_commit_duration_seconds",
					  NULL, (double)(t1 - since) / 1e6);

	if (wrote && !state_changed && reason != SYNC_INITIAL) {
		/* Same plan as the last good sync, yet the kernel differed:
		 * someone removed or altered svcnat's rules. */
		metrics_counter_add(dm->metrics, "svcnat_repairs_total", NULL, 1);
		log_warn("repaired drift in the kernel's rules (%s check): %zu chains re-created, "
			 "%zu rewritten, %zu deleted, %zu jump rules restored",
			 sync_reason_name(reason), ar->chains_created, ar->chains_replaced,
			 ar->chains_deleted, ar->jumps_added);
	}
	if (wrote || state_changed || reason == SYNC_INITIAL) {
		/* kube-proxy logs each sync at 2; svcnat's first one also at 0,
		 * to say the daemon's rules are in place. */
		int v = reason == SYNC_INITIAL ? 0 : LOG_V_SYNC;
		char took[32], lat[32];

		duration_fmt(t1 - t0, took, sizeof(took));
		if (had_pending && state_changed)
			duration_fmt(t1 - since, lat, sizeof(lat));
		else
			snprintf(lat, sizeof(lat), "-");
		log_v(v, "sync (%s): %zu service ports, %zu endpoints, %zu rules, %zu chains "
			 "(%zu dispatch); %zu chains changed, %zu rules written; took %s, "
			 "change to commit %s",
			 sync_reason_name(reason), st->services, st->endpoints, st->rules, st->chains,
			 st->dispatch_chains, changed, ar->rules_written, took, lat);
		/* The figures above are the IPv4 plan's (kube-proxy logs one
		 * line per family's proxier too). */
		if (rep->ipv6)
			log_v(v, "  and IPv6 (ip6tables): %zu service ports, %zu endpoints, %zu rules, "
				 "%zu chains (%zu dispatch)", rep->plan6.services, rep->plan6.endpoints,
				 rep->plan6.rules, rep->plan6.chains, rep->plan6.dispatch_chains);
	} else {
		log_debug("sync (%s): kernel already matches the plan, nothing written",
			  sync_reason_name(reason));
	}
	/* kube-proxy's own line (pkg/proxy/iptables/proxier.go, syncProxyRules),
	 * one per family, for what reads kube-proxy's logs. */
	for (size_t f = 0; f < n_families(dm); f++)
		log_infos(LOG_V_SYNC, "SyncProxyRules complete", LOG_STR("ipFamily", f ? "IPv6" : "IPv4"),
			  LOG_DURATION("elapsed", (double)(t1 - t0) / 1e6));
	dm->synced_generation = pipeline_desired_generation(dm->p);
	dm->addrs_changed = false;
	conntrack_after_sync(dm);
	/* kube-proxy updates its service health checks after each sync. */
	diag_list_init(&hd);
	if (hc_servers_sync(dm->hc, pipeline_desired(dm->p), pipeline_settings(dm->p),
			    pipeline_family(dm->p), &hd) < 0)
		log_err("out of memory updating the health-check servers");
	log_diags(&hd);
	diag_list_done(&hd);
	if (!dm->notified_ready) {
		/* Type=notify: ready once the rules are in the kernel. */
		dm->notified_ready = true;
		(void)sd_notify(0, "READY=1\nSTATUS=rules synced");
	}
}

/* On the worker thread: plan and write (see pipeline_sync_run()). */
static void sync_job_run(void *userdata)
{
	struct daemon *dm = userdata;

	dm->job.r = pipeline_sync_run(dm->p, &dm->job.rep, &dm->job.d);
}

/* Back on the loop thread. */
static void sync_job_done(void *userdata)
{
	struct daemon *dm = userdata;

	sync_finish(dm);
	if (dm->addrs_deferred && dm->addrs) {
		const struct ipaddr *a;
		size_t n;

		dm->addrs_deferred = false;
		nladdrs_watch_get(dm->addrs, &a, &n);
		on_addrs(a, n, dm);
	}
}

/*
 * Start a sync: resolve on the loop thread, then plan and write on the
 * worker, so that a wait for the xtables lock or the write of a big table
 * never stalls the loop (/healthz and /metrics answer meanwhile, sources
 * are followed).  sync_finish() accounts for it when it is done.
 */
static void do_sync(struct daemon *dm, enum sync_reason reason)
{
	struct sync_job *job = &dm->job;
	char lbl[64];
	int r;

	*job = (struct sync_job){ .reason = reason, .t0 = loop_now_usec(),
				  .decode_seconds = dm->decode_seconds,
				  .merge_seconds = dm->merge_seconds };
	dm->decode_seconds = dm->merge_seconds = 0;
	diag_list_init(&job->d);
	job->had_pending = syncpolicy_pending_since(&dm->policy, &job->since);
	metrics_label(lbl, sizeof(lbl), "reason", sync_reason_name(reason));
	metrics_counter_add(dm->metrics, "svcnat_syncs_total", lbl, 1);
	/* The changes so far are in this sync: no longer pending. */
	dm->service_changes_pending = dm->endpoint_changes_pending = 0;
	metrics_gauge_set(dm->metrics, "kubeproxy_sync_proxy_rules_service_changes_pending", NULL, 0);
	metrics_gauge_set(dm->metrics, "kubeproxy_sync_proxy_rules_endpoint_changes_pending", NULL, 0);
	syncpolicy_sync_start(&dm->policy, job->t0);
	kpmetrics_sync_start(dm->kpm);
	if (reason == SYNC_PERIODIC)
		pipeline_resolve_full_next(dm->p); /* and check the incremental state */
	r = pipeline_sync_prepare(dm->p, &job->d);
	if (r >= 0)
		r = worker_start(dm->worker, sync_job_run, sync_job_done, dm);
	if (r < 0) {
		job->r = r;
		sync_finish(dm);
	}
}

/*
 * Until etcd's first full read the merged state lacks the cluster's
 * services: a sync would delete their rules (a restart while etcd is
 * unreachable must keep them), so no sync runs before it.
 */
static bool etcd_pending(struct daemon *dm)
{
	struct etcd_status es;

	if (kubed_pending(dm->kube))
		return true; /* likewise the API's first list of Services and EndpointSlices */
	if (!dm->etcd)
		return false;
	etcd_source_get_status(dm->etcd, &es);
	return !es.synced;
}

static int on_sync_timer(struct loop *l, struct loop_timer *t, void *userdata)
{
	struct daemon *dm = userdata;
	enum sync_reason reason;

	if (etcd_pending(dm) || source_pending(dm) || worker_busy(dm->worker))
		return 0; /* the post hook keeps the timer off until then */
	if (!syncpolicy_due(&dm->policy, loop_now_usec(), &reason))
		return 0; /* re-armed by the post hook */
	do_sync(dm, reason);
	return 0;
}

/* Each conflict between sources once (the merge engine records it once). */
static void report_conflicts(struct daemon *dm)
{
	struct diag_list d;
	size_t n;

	diag_list_init(&d);
	n = pipeline_take_conflicts(dm->p, &d);
	if (n)
		metrics_counter_add(dm->metrics, "svcnat_source_conflicts_total", NULL, (double)n);
	log_diags(&d);
	diag_list_done(&d);
}

/* After every batch of events: apply what they marked, arm the sync timer. */
static void on_post(struct loop *l, void *userdata)
{
	struct daemon *dm = userdata;
	double t0;

	start_loads(dm);
	t0 = monotonic_seconds();
	if (merge_flush(pipeline_merge(dm->p)) < 0)
		log_err("out of memory merging the sources; retrying at the next event");
	dm->merge_seconds += monotonic_seconds() - t0;
	report_conflicts(dm);
	if (worker_busy(dm->worker)) {
		/* re-armed when the write in progress is done */
		loop_timer_arm(dm->sync_timer, 0);
		return;
	}
	if (source_pending(dm)) {
		if (!loop_timer_armed(dm->wait_timer))
			loop_timer_arm(dm->wait_timer, WAIT_WARN_USEC);
		loop_timer_arm(dm->sync_timer, 0);
		return;
	}
	if (etcd_pending(dm)) {
		loop_timer_arm(dm->sync_timer, 0);
		return;
	}
	loop_timer_arm_at(dm->sync_timer, syncpolicy_next(&dm->policy, NULL));
}

static int on_signal(struct loop *l, int fd, uint32_t events, void *userdata)
{
	struct daemon *dm = userdata;
	struct signalfd_siginfo si;
	size_t i;

	while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGHUP:
			log_info("SIGHUP: re-reading every source");
			for (i = 0; i < dm->o->pipeline.n_configs; i++)
				if (!streq(dm->o->pipeline.configs[i], "-"))
					dm->source_dirty[i] = dm->source_reread[i] = true;
			if (dm->etcd)
				etcd_source_resync(dm->etcd);
			kubed_resync(dm->kube);
			/* A re-read that changes nothing still checks the kernel. */
			syncpolicy_change(&dm->policy, loop_now_usec());
			break;
		case SIGTERM:
		case SIGINT:
			log_info("%s: exiting, the rules stay in place",
				 si.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT");
			loop_quit(l, 0);
			return 0;
		default:
			break;
		}
	}
	return 0;
}

/* svcnat's detail in /healthz: the etcd source's state in cluster mode (the
 * node keeps its last rules while etcd is unreachable, and says so here). */
static void health_extra(struct daemon *dm, char *buf, size_t len)
{
	struct etcd_status es;
	size_t n = 0;

	buf[0] = '\0';
	if (dm->etcd) {
		etcd_source_get_status(dm->etcd, &es);
		n = (size_t)snprintf(buf, len,
				     "\"etcd\": {\"connected\": %s, \"synced\": %s, \"revision\": %lld, "
				     "\"reconnects\": %llu}%s",
				     es.connected ? "true" : "false", es.synced ? "true" : "false",
				     (long long)es.revision, (unsigned long long)es.reconnects,
				     dm->kube ? ", " : "");
	}
	if (n < len)
		kubed_health(dm->kube, buf + n, len - n);
}

static int h_healthz(void *userdata, struct http_response *resp)
{
	struct daemon *dm = userdata;
	bool healthy = syncpolicy_healthy(&dm->policy, loop_now_usec(), dm->health_timeout_usec) &&
		       !source_pending(dm);
	bool eligible = kubed_node_eligible(dm->kube);
	char extra[1024];

	metrics_counter_add(dm->metrics, "kubeproxy_proxy_healthz_total",
			    healthy && eligible ? "code=\"200\"" : "code=\"503\"", 1);
	health_extra(dm, extra, sizeof(extra));
	return http_health_response(healthy, eligible, dm->last_ok_wall, wall_now(),
				    extra[0] ? extra : NULL, resp);
}

static int h_livez(void *userdata, struct http_response *resp)
{
	struct daemon *dm = userdata;
	bool healthy = syncpolicy_healthy(&dm->policy, loop_now_usec(), dm->health_timeout_usec);
	int r = http_health_response(healthy, true, dm->last_ok_wall, wall_now(), NULL, resp);
	char *nl;

	metrics_counter_add(dm->metrics, "kubeproxy_proxy_livez_total",
			    healthy ? "code=\"200\"" : "code=\"503\"", 1);
	/* /livez has the same body without nodeEligible. */
	if (r >= 0 && (nl = strstr(resp->body, ", \"nodeEligible\""))) {
		strcpy(nl, "}");
		resp->len = strlen(resp->body);
	}
	return r;
}

/* kube-proxy's /proxyMode on the metrics server. */
static int h_proxy_mode(void *userdata, struct http_response *resp)
{
	resp->body = strdup("iptables");
	if (!resp->body)
		return -ENOMEM;
	resp->len = strlen(resp->body);
	resp->content_type = "text/plain; charset=utf-8";
	return 0;
}

static bool proxy_healthy(void *userdata)
{
	struct daemon *dm = userdata;

	return syncpolicy_healthy(&dm->policy, loop_now_usec(), dm->health_timeout_usec);
}

static int on_watchdog(struct loop *l, struct loop_timer *t, void *userdata)
{
	struct daemon *dm = userdata;

	/* The loop turned: tell systemd we are alive (WatchdogSec=). */
	(void)sd_notify(0, "WATCHDOG=1");
	return loop_timer_arm(dm->watchdog, dm->watchdog_usec / 2);
}

static int h_metrics(void *userdata, struct http_response *resp)
{
	struct daemon *dm = userdata;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int r;

	kubed_metrics(dm->kube);
	metrics_update_process(dm->metrics);
	if (dm->etcd) {
		struct etcd_status es;

		etcd_source_get_status(dm->etcd, &es);
		metrics_gauge_set(dm->metrics, "svcnat_etcd_connected", NULL, es.connected);
		metrics_gauge_set(dm->metrics, "svcnat_etcd_revision", NULL, (double)es.revision);
		metrics_gauge_set(dm->metrics, "svcnat_etcd_reconnects", NULL, (double)es.reconnects);
	}
	f = open_memstream(&buf, &len);
	if (!f)
		return -ENOMEM;
	r = metrics_write(dm->metrics, f);
	if (fclose(f) != 0 && r >= 0)
		r = -EIO;
	if (r < 0) {
		free(buf);
		return r;
	}
	resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
	resp->body = buf;
	resp->len = len;
	return 0;
}

static const struct http_route healthz_routes[] = {
	{ "/healthz", h_healthz },
	{ "/livez", h_livez },
};

static const struct http_route metrics_routes[] = {
	{ "/metrics", h_metrics },
	{ "/healthz", h_healthz },
	{ "/proxyMode", h_proxy_mode },
};

static void on_etcd_event(struct etcd_source *s, enum etcd_event ev, const char *msg,
			  void *userdata)
{
	struct daemon *dm = userdata;

	switch (ev) {
	case ETCD_EV_CONNECTED:
	case ETCD_EV_SYNCED:
	case ETCD_EV_COMPACTED:
		log_info("etcd: %s", msg);
		break;
	case ETCD_EV_DISCONNECTED:
		log_warn("etcd: %s (keeping the last rules)", msg);
		count_source_errors(dm, "etcd", 1);
		break;
	case ETCD_EV_RETRY:
		log_debug("etcd: %s", msg);
		break;
	case ETCD_EV_DIAG:
		log_warn("etcd: %s", msg);
		count_source_errors(dm, "etcd", 1);
		break;
	}
}

static int parse_duration_opt(const char *flag, const char *text, uint64_t *ret)
{
	int r = duration_parse(text, ret);

	if (r < 0)
		fprintf(stderr, "svcnat: %s: '%s' is not a duration (e.g. 500ms, 1s, 2m, 1h30m)\n",
			flag, text);
	return r;
}

static int setup_signals(struct daemon *dm)
{
	sigset_t mask;
	int r;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
		return -errno;
	signal(SIGPIPE, SIG_IGN);
	dm->sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (dm->sigfd < 0)
		return -errno;
	r = loop_add_io(dm->loop, dm->sigfd, EPOLLIN, on_signal, dm);
	return r;
}

static int setup_sources(struct daemon *dm)
{
	size_t i;
	int r;

	dm->source_dirty = calloc(dm->o->pipeline.n_configs ? dm->o->pipeline.n_configs : 1, sizeof(bool));
	dm->source_reread = calloc(dm->o->pipeline.n_configs ? dm->o->pipeline.n_configs : 1, sizeof(bool));
	dm->source_ready = calloc(dm->o->pipeline.n_configs ? dm->o->pipeline.n_configs : 1, sizeof(bool));
	dm->source_loading = calloc(dm->o->pipeline.n_configs ? dm->o->pipeline.n_configs : 1, sizeof(bool));
	dm->load_result = calloc(dm->o->pipeline.n_configs ? dm->o->pipeline.n_configs : 1, sizeof(int));
	dm->load_diags = calloc(dm->o->pipeline.n_configs ? dm->o->pipeline.n_configs : 1, sizeof(*dm->load_diags));
	if (!dm->source_dirty || !dm->source_reread || !dm->source_ready || !dm->source_loading || !dm->load_result ||
	    !dm->load_diags)
		return -ENOMEM;
	for (i = 0; i < dm->o->pipeline.n_configs; i++)
		diag_list_init(&dm->load_diags[i]);
	r = loop_timer_new(dm->loop, on_wait_timer, dm, &dm->wait_timer);
	if (r < 0)
		return r;
	r = metrics_declare(dm->metrics, "svcnat_source_conflicts_total", METRIC_COUNTER,
			    "Objects defined by two sources (each conflict counted once)", NULL, 0);
	if (r < 0)
		return r;
	r = fswatch_new(dm->loop, on_fs_change, dm, &dm->watch);
	if (r < 0)
		return r;
	if (dm->o->kp_config) {
		r = fswatch_add(dm->watch, dm->o->kp_config, KPCONFIG_TAG);
		if (r < 0) {
			log_err("%s: cannot watch it: %s", dm->o->kp_config, strerror(-r));
			return r;
		}
	}
	for (i = 0; i < dm->o->pipeline.n_configs; i++) {
		const char *path = dm->o->pipeline.configs[i];

		if (!streq(path, "-")) {
			r = fswatch_add(dm->watch, path, (void *)(uintptr_t)i);
			if (r < 0) {
				log_err("%s: cannot watch it: %s", path, strerror(-r));
				return r;
			}
		}
		/* A config writable by others is refused at start (exit 2);
		 * anything else unreadable is waited for. */
		if (reload_source(dm, i) == -EPERM)
			return -EPERM;
	}
	return 0;
}

static int setup_etcd(struct daemon *dm)
{
	struct etcd_options eo = {
		.endpoints = dm->o->etcd_endpoints,
		.prefix = dm->o->etcd_prefix,
		.cacert = dm->o->etcd_cacert,
		.cert = dm->o->etcd_cert,
		.key = dm->o->etcd_key,
		.mode = dm->o->pipeline.file_mode,
	};
	struct diag_list d;
	int r;

	if (!dm->o->etcd_endpoints)
		return 0;
	diag_list_init(&d);
	r = etcd_options_check(&eo, &d);
	log_diags(&d);
	diag_list_done(&d);
	if (r < 0)
		return r;
	r = etcd_source_new(dm->loop, pipeline_merge(dm->p), &eo, on_etcd_event, dm, &dm->etcd);
	if (r < 0) {
		log_err("etcd source: %s", strerror(-r));
		return r;
	}
	metrics_declare(dm->metrics, "svcnat_etcd_connected", METRIC_GAUGE,
			"1 while a watch is established on an etcd member", NULL, 0);
	metrics_declare(dm->metrics, "svcnat_etcd_revision", METRIC_GAUGE,
			"etcd revision up to which every event is applied", NULL, 0);
	metrics_declare(dm->metrics, "svcnat_etcd_reconnects", METRIC_GAUGE,
			"etcd connection attempts after a failure", NULL, 0);
	return etcd_source_start(dm->etcd);
}

static int setup_http(struct daemon *dm, const char *flag, const char *addr, enum http_kind kind,
		      const struct http_route *routes, size_t n, struct http_server **ret)
{
	int r;

	if (!addr || !*addr)
		return 0;
	r = http_server_new(dm->http_pool, kind, addr, routes, n, dm, ret);
	if (r < 0) {
		log_err("%s %s: %s%s", flag, addr,
			r == -EINVAL ? "not an IP:PORT address" : strerror(-r),
			r == -EINVAL || dm->o->bind_address_hard_fail ? "" : ", serving without it");
		/* kube-proxy goes on without the server unless --bind-address-hard-fail. */
		return r == -EINVAL || dm->o->bind_address_hard_fail ? r : 0;
	}
	log_info("serving %s on %s", routes[0].path, addr);
	return 0;
}

/* A contender's connection, made to learn our pid: closed at once. */
static int on_lock_probe(struct loop *l, int fd, uint32_t events, void *userdata)
{
	(void)events;
	(void)userdata;
	if (nslock_drain(fd) < 0)
		/* Out of descriptors: stop accepting (we keep the lock; a
		 * contender then learns it is held, not by whom). */
		(void)loop_del_io(l, fd);
	return 0;
}

/*
 * One daemon per network namespace: two would each undo the other's rules
 * at every sync.  Taken before anything touches the kernel.  A holder of
 * another uid (or one that does not answer as svcnat does) squats the name:
 * warn and go on without the guard rather than never start.
 */
static int take_netns_lock(struct daemon *dm)
{
	struct nslock_holder h;
	int r = nslock_take(&dm->lock_fd, &h);

	if (r == -EBUSY && !nslock_holder_is_peer(&h)) {
		if (h.uid != (uid_t)-1)
			log_warn("this network namespace's lock @%s is held by pid %d uid %u, not a "
				 "root svcnat; continuing without the one-daemon guard", NSLOCK_NAME,
				 (int)h.pid, (unsigned)h.uid);
		else
			log_warn("this network namespace's lock @%s is held by a process that does "
				 "not answer as svcnat does; continuing without the one-daemon guard",
				 NSLOCK_NAME);
		return 0;
	}
	if (r == -EBUSY) {
		if (h.pid > 0)
			log_err("another svcnat (pid %d) already runs in this network namespace; "
				"not starting a second one", (int)h.pid);
		else
			log_err("another svcnat (pid unknown: another pid namespace) already runs "
				"in this network namespace; not starting a second one");
	} else if (r < 0) {
		log_err("cannot take this network namespace's lock (@%s): %s", NSLOCK_NAME,
			strerror(-r));
	}
	return r;
}

static void daemon_done(struct daemon *dm)
{
	if (worker_busy(dm->worker))
		log_info("waiting for the kernel write in progress to end");
	/* Joins a write in progress: the kernel's tables stay consistent. */
	worker_free(dm->worker);
	diag_list_done(&dm->job.d);
	hc_servers_free(dm->hc);
	merge_snapshot_unref(dm->last_snap);
	loop_timer_free(dm->watchdog);
	http_server_free(dm->healthz);
	http_server_free(dm->metrics_srv);
	http_pool_free(dm->http_pool);
	kubed_free(dm->kube);
	etcd_source_free(dm->etcd);
	nladdrs_watch_free(dm->addrs);
	fswatch_free(dm->watch);
	loop_timer_free(dm->sync_timer);
	loop_timer_free(dm->wait_timer);
	if (dm->sigfd >= 0) {
		loop_del_io(dm->loop, dm->sigfd);
		close(dm->sigfd);
	}
	loop_free(dm->loop);
	pipeline_free(dm->p);
	if (dm->lock_fd >= 0)
		close(dm->lock_fd);
	kpmetrics_free(dm->kpm);
	metrics_free(dm->metrics);
	free(dm->source_dirty);
	free(dm->source_reread);
	free(dm->source_ready);
	free(dm->source_loading);
	free(dm->load_result);
	if (dm->load_diags)
		for (size_t i = 0; i < dm->o->pipeline.n_configs; i++)
			diag_list_done(&dm->load_diags[i]);
	free(dm->load_diags);
}

int daemon_main(const struct daemon_config *o)
{
	struct daemon dm = { .o = o, .sigfd = -1, .lock_fd = -1 };
	struct syncpolicy_config pc;
	struct http_limits hl;
	struct diag_list d;
	struct backend *b;
	char a[32], c[32];
	int r, code = EXIT_RUNTIME;

	syncpolicy_config_default(&pc);
	if (parse_duration_opt("--min-sync-period", o->min_sync_period, &pc.min_sync_usec) < 0 ||
	    parse_duration_opt("--sync-period", o->sync_period, &pc.sync_period_usec) < 0)
		return EXIT_USAGE;
	pc.retry_max_usec = 0; /* = the sync period */
	if (pc.retry_min_usec > pc.sync_period_usec)
		pc.retry_min_usec = pc.sync_period_usec;
	if (syncpolicy_config_check(&pc) < 0) {
		fprintf(stderr, "svcnat: --sync-period must be > 0 and >= --min-sync-period\n");
		return EXIT_USAGE;
	}
	/* kube-proxy's health timeout: twice the sync period. */
	dm.health_timeout_usec = 2 * pc.sync_period_usec;
	if (o->pipeline.n_configs == 0 && !o->etcd_endpoints && !o->pipeline.kube) {
		fprintf(stderr, "svcnat: nothing to follow: give --config PATH, --etcd-endpoints and/or "
				"--kubeconfig\n");
		return EXIT_USAGE;
	}

	diag_list_init(&d);
	r = take_netns_lock(&dm);
	if (r < 0)
		goto out;
	dm.metrics = metrics_new();
	if (!dm.metrics || metrics_declare_svcnat(dm.metrics) < 0) {
		r = -ENOMEM;
		goto out;
	}
	r = pipeline_new(&o->pipeline, &dm.p, &d);
	log_diags(&d);
	if (r < 0) {
		code = r == -EEXIST ? EXIT_USAGE : EXIT_RUNTIME;
		goto out;
	}
	r = pipeline_backend(dm.p, &b, &d);
	log_diags(&d);
	if (r < 0)
		goto out;
	/* Dual-stack (ip6tables written too): kube-proxy's IPv6 series from
	 * the start, beside the IPv4 ones. */
	dm.ipv6 = pipeline_family(dm.p) == AF_UNSPEC;
	if ((dm.ipv6 && metrics_declare_family(dm.metrics, "IPv6") < 0) ||
	    kpmetrics_new(dm.metrics, pipeline_family(dm.p), wall_now(), &dm.kpm) < 0) {
		r = -ENOMEM;
		goto out;
	}
	r = loop_new(&dm.loop);
	if (r < 0)
		goto out;
	r = setup_signals(&dm);
	if (r >= 0 && dm.lock_fd >= 0)
		r = loop_add_io(dm.loop, dm.lock_fd, EPOLLIN, on_lock_probe, &dm);
	if (r < 0)
		goto out;
	/* After the signal mask is set: the worker's thread must not take
	 * TERM/INT/HUP (it blocks every signal anyway). */
	r = worker_new(dm.loop, &dm.worker);
	if (r < 0)
		goto out;
	r = loop_timer_new(dm.loop, on_sync_timer, &dm, &dm.sync_timer);
	if (r < 0)
		goto out;
	http_limits_default(http_raise_nofile(), &hl);
	r = http_pool_new(dm.loop, &hl, &dm.http_pool);
	if (r < 0)
		goto out;
	r = hc_servers_new(dm.http_pool, proxy_healthy, &dm, &dm.hc);
	if (r < 0)
		goto out;
	if (sd_watchdog_enabled(0, &dm.watchdog_usec) > 0 && dm.watchdog_usec) {
		r = loop_timer_new(dm.loop, on_watchdog, &dm, &dm.watchdog);
		if (r >= 0)
			r = loop_timer_arm(dm.watchdog, dm.watchdog_usec / 2);
		if (r < 0)
			goto out;
	}
	syncpolicy_init(&dm.policy, &pc, loop_now_usec());
	r = merge_handler_register(pipeline_merge(dm.p), MERGE_HANDLE_ALL, on_merged, &dm);
	if (r < 0)
		goto out;
	if (!o->pipeline.node_ips_given) {
		const struct ipaddr *addrs;
		size_t n;

		/* Both families: each plan takes its own. */
		r = nladdrs_watch_new(dm.loop, AF_UNSPEC, on_addrs, &dm, &dm.addrs);
		if (r < 0) {
			log_err("cannot follow the node's addresses over netlink: %s", strerror(-r));
			goto out;
		}
		nladdrs_watch_get(dm.addrs, &addrs, &n);
		if (pipeline_set_addresses(dm.p, addrs, n) < 0) {
			r = -ENOMEM;
			goto out;
		}
	}
	pipeline_check_families(dm.p, &d);
	r = pipeline_check_sysctls(dm.p, &d);
	log_diags(&d);
	if (r < 0)
		goto out;
	r = setup_sources(&dm);
	if (r == -EPERM) {
		code = EXIT_USAGE;
		goto out;
	}
	if (r < 0)
		goto out;
	r = setup_etcd(&dm);
	if (r >= 0)
		r = kubed_new(dm.loop, dm.p, dm.metrics, &o->pipeline, on_kube_node, &dm, &dm.kube);
	if (r == -EINVAL || r == -ENOENT || r == -EACCES || r == -EPERM) {
		code = EXIT_USAGE;
		goto out;
	}
	if (r < 0)
		goto out;
	r = setup_http(&dm, "--healthz-bind-address",
		       o->healthz_bind_address,
		       HTTP_HEALTH, healthz_routes, ARRAY_SIZE(healthz_routes), &dm.healthz);
	if (r >= 0)
		r = setup_http(&dm, "--metrics-bind-address",
			       o->metrics_bind_address,
			       HTTP_OTHER, metrics_routes, ARRAY_SIZE(metrics_routes), &dm.metrics_srv);
	if (r < 0)
		goto out;
	loop_set_post(dm.loop, on_post, &dm);
	log_info("svcnat %s running: %zu sources, backend %s, min-sync-period %s, sync-period %s",
		 PACKAGE_VERSION,
		 o->pipeline.n_configs + (o->etcd_endpoints ? 1 : 0) + (o->pipeline.kube ? 1 : 0),
		 backend_kind_name(backend_kind_of(b)),
		 duration_fmt(pc.min_sync_usec, a, sizeof(a)),
		 duration_fmt(pc.sync_period_usec, c, sizeof(c)));
	r = loop_run(dm.loop);
	(void)sd_notify(0, "STOPPING=1");
	if (r < 0)
		log_err("event loop failed: %s", strerror(-r));
	else
		code = dm.exit_code;
out:
	if (r == -ENOMEM)
		log_err("out of memory");
	log_diags(&d);
	diag_list_done(&d);
	daemon_done(&dm);
	return code;
}
