/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * When and what the daemon syncs.  Events only mark state: a source dirty
 * (sourceset_mark_dirty()), the sync policy changed (syncpolicy_change()).
 * After every batch of events sync_post() starts the loads of the dirty
 * sources on the worker, flushes the merge engine and arms the sync timer;
 * sync_timer() starts a sync when the gate (gate.h) lets it: resolve on
 * the loop thread, plan and write on the worker, account on the loop
 * thread when it is done.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <systemd/sd-daemon.h>

#include "core/duration.h"
#include "daemon/state.h"
#include "sys/conntrack.h"
#include "sys/log.h"
#include "util.h"

#define WAIT_WARN_USEC (5 * 1000000ULL)

/* On the worker thread: read and decode the sources marked loading. */
static void load_job_run(void *userdata)
{
	struct daemon *dm = userdata;

	sourceset_loads_run(dm->sources);
}

/* Back on the loop thread: hand what was read to the merge engine. */
static void load_job_done(void *userdata)
{
	struct daemon *dm = userdata;

	sourceset_loads_finish(dm->sources);
}

/*
 * Re-read the changed sources on the worker: decoding a big file takes
 * time the loop must not spend.  When the worker is busy they stay marked
 * and go at the next post hook after it is done.
 */
static void start_loads(struct daemon *dm)
{
	if (worker_busy(dm->worker) || !sourceset_dirty(dm->sources))
		return;
	/* A sync that is due goes first: changes arriving faster than they
	 * are read must not starve it. */
	if (gate_may_sync(&dm->gate, false, loop_now_usec(), NULL))
		return;
	if (sourceset_loads_begin(dm->sources) &&
	    worker_start(dm->worker, load_job_run, load_job_done, dm) < 0) {
		/* No thread: read them here rather than not at all. */
		load_job_run(dm);
		load_job_done(dm);
	}
}

/* Until every --config is read once, a warning every few seconds names them. */
int sync_wait_timer(struct loop *l, struct loop_timer *t, void *userdata)
{
	struct daemon *dm = userdata;
	size_t i, n;

	if (!sourceset_waiting(dm->sources, &n))
		return 0;
	for (i = 0; i < sourceset_size(dm->sources); i++) {
		const struct source *s = sourceset_get(dm->sources, i);

		if (s->ops->gates_health && !s->ops->ready(s))
			log_warn("%s: still not read (%zu source%s pending): no rules are written "
				 "until every source has been read once",
				 s->name, n, n == 1 ? "" : "s");
	}
	return loop_timer_arm(t, WAIT_WARN_USEC);
}

void sync_merged(const struct merge_snapshot *snap, unsigned changed, void *userdata)
{
	struct daemon *dm = userdata;

	syncpolicy_change(&dm->gate.policy, loop_now_usec());
	telemetry_changes(dm, snap);
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

void sync_addrs(const struct ipaddr *a, size_t n, void *userdata)
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
	syncpolicy_change(&dm->gate.policy, loop_now_usec());
}

/* The Node object changed: take its zone, node IPs and pod CIDRs where
 * --zone/--node-ip do not say, and plan again when they changed. */
void sync_node(const struct kube_node *n, bool eligible, void *userdata)
{
	struct daemon *dm = userdata;
	int r, c;

	dm->gate.node_eligible = eligible;
	r = pipeline_set_node(dm->p, n ? n->zone : NULL, n ? n->addrs : NULL, n ? n->n_addrs : 0);
	if (r >= 0) {
		c = pipeline_set_node_pod_cidrs(dm->p, n ? n->pod_cidrs : NULL, n ? n->n_pod_cidrs : 0);
		if (c > 0)
			log_info("api: node %s: %zu pod CIDRs (--detect-local-mode=NodeCIDR)",
				 n ? n->name : "(gone)", n ? n->n_pod_cidrs : 0);
		r = c < 0 ? c : r | c;
	}
	if (r < 0) {
		log_err("api: out of memory taking the Node object's settings");
		return;
	}
	if (r == 0)
		return;
	log_info("api: node %s: zone '%s', %zu node IPs (where --zone/--node-ip do not say)",
		 n ? n->name : "(gone)", n ? n->zone : "", n ? n->n_addrs : 0);
	syncpolicy_change(&dm->gate.policy, loop_now_usec());
}

static void conntrack_after_sync(struct daemon *dm)
{
	struct conntrack_index *ix = NULL;
	struct conntrack_result res = { 0 };
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
	telemetry_conntrack(dm, r, res.deleted, res.failed);
	if (r < 0) {
		if (!dm->conntrack_warned)
			log_warn("conntrack cleanup failed: %s (stale UDP flows may persist; "
				 "is nf_conntrack_netlink available?)", strerror(-r));
		dm->conntrack_warned = true;
		return;
	}
	if (res.deleted || res.failed)
		log_v(LOG_V_SYNC, "conntrack: deleted %zu stale UDP entries (%zu failed) of %zu",
			 res.deleted, res.failed, res.scanned);
}

/* The one line a sync that did something logs (and IPv6's, when written). */
static void log_sync(const struct sync_job *job, uint64_t t1, bool state_changed)
{
	const struct sync_report *rep = &job->rep;
	const struct plan_stats *st = &rep->plan;
	const struct apply_result *ar = &rep->apply;
	size_t changed = ar->chains_created + ar->chains_replaced + ar->chains_deleted;
	/* kube-proxy logs each sync at 2; svcnat's first one also at 0, to
	 * say the daemon's rules are in place. */
	int v = job->reason == SYNC_INITIAL ? 0 : LOG_V_SYNC;
	char took[32], lat[32];

	duration_fmt(t1 - job->t0, took, sizeof(took));
	if (job->had_pending && state_changed)
		duration_fmt(t1 - job->since, lat, sizeof(lat));
	else
		snprintf(lat, sizeof(lat), "-");
	log_v(v, "sync (%s): %zu service ports, %zu endpoints, %zu rules, %zu chains "
		 "(%zu dispatch); %zu chains changed, %zu rules written; took %s, "
		 "change to commit %s",
		 sync_reason_name(job->reason), st->services, st->endpoints, st->rules, st->chains,
		 st->dispatch_chains, changed, ar->rules_written, took, lat);
	/* The figures above are the IPv4 plan's (kube-proxy logs one
	 * line per family's proxier too). */
	if (rep->ipv6)
		log_v(v, "  and IPv6 (ip6tables): %zu service ports, %zu endpoints, %zu rules, "
			 "%zu chains (%zu dispatch)", rep->plan6.services, rep->plan6.endpoints,
			 rep->plan6.rules, rep->plan6.chains, rep->plan6.dispatch_chains);
}

/* A sync that failed: the kernel keeps its rules (or says what is half written). */
static void sync_failed(struct daemon *dm, const struct sync_job *job, uint64_t t1)
{
	uint64_t n = syncpolicy_next(&dm->gate.policy, NULL);
	char next[32];

	log_err("sync (%s) failed: %s; %s, retrying in %s", sync_reason_name(job->reason),
		strerror(-job->r),
		job->rep.apply.partial ? "the tables are half written (see above)"
				       : "the kernel keeps its previous rules",
		duration_fmt(n > t1 ? n - t1 : 0, next, sizeof(next)));
}

/* A sync that succeeded: log what it did, then conntrack and the health checks. */
static void sync_succeeded(struct daemon *dm, const struct sync_job *job, uint64_t t1)
{
	const struct apply_result *ar = &job->rep.apply;
	bool wrote = ar->committed[RS_NAT] || ar->committed[RS_FILTER] ||
		     ar->committed6[RS_NAT] || ar->committed6[RS_FILTER];
	bool state_changed = dm->synced_generation != pipeline_desired_generation(dm->p) ||
			     dm->addrs_changed;
	struct diag_list hd;

	dm->last_ok_wall = wall_now();
	telemetry_sync_ok(dm, job, t1, state_changed);
	if (wrote && !state_changed && job->reason != SYNC_INITIAL) {
		/* Same plan as the last good sync, yet the kernel differed:
		 * someone removed or altered svcnat's rules. */
		telemetry_repaired(dm);
		log_warn("repaired drift in the kernel's rules (%s check): %zu chains re-created, "
			 "%zu rewritten, %zu deleted, %zu jump rules restored",
			 sync_reason_name(job->reason), ar->chains_created, ar->chains_replaced,
			 ar->chains_deleted, ar->jumps_added);
	}
	if (wrote || state_changed || job->reason == SYNC_INITIAL)
		log_sync(job, t1, state_changed);
	else
		log_debug("sync (%s): kernel already matches the plan, nothing written",
			  sync_reason_name(job->reason));
	/* kube-proxy's own line (pkg/proxy/iptables/proxier.go, syncProxyRules),
	 * one per family, for what reads kube-proxy's logs. */
	for (size_t f = 0; f < (dm->ipv6 ? 2u : 1u); f++)
		log_infos(LOG_V_SYNC, "SyncProxyRules complete", LOG_STR("ipFamily", f ? "IPv6" : "IPv4"),
			  LOG_DURATION("elapsed", (double)(t1 - job->t0) / 1e6));
	dm->synced_generation = pipeline_desired_generation(dm->p);
	dm->addrs_changed = false;
	conntrack_after_sync(dm);
	/* kube-proxy updates its service health checks after each sync. */
	diag_list_init(&hd);
	if (hc_servers_sync(dm->hc, pipeline_desired(dm->p), pipeline_settings(dm->p),
			    pipeline_family(dm->p), &hd) < 0)
		log_err("out of memory updating the health-check servers");
	daemon_log_diags(&hd);
	diag_list_done(&hd);
}

/* Account for the sync in dm->job (the loop's again): log, metrics, health. */
static void sync_finish(struct daemon *dm)
{
	struct sync_job *job = &dm->job;
	uint64_t t1 = loop_now_usec();
	bool first_ok;

	daemon_log_diags(&job->d);
	diag_list_done(&job->d);
	first_ok = gate_sync_done(&dm->gate, t1, job->r >= 0);
	telemetry_sync_ended(dm, job, t1);
	if (job->r < 0) {
		sync_failed(dm, job, t1);
		return;
	}
	sync_succeeded(dm, job, t1);
	if (first_ok)
		/* Type=notify: ready once the rules are in the kernel. */
		(void)sd_notify(0, "READY=1\nSTATUS=rules synced");
}

/* On the worker thread: plan and write (see pipeline_sync_run()). */
static void sync_job_run(void *userdata)
{
	struct daemon *dm = userdata;

	dm->job.r = pipeline_sync_run(dm->p, &dm->job.rep, &dm->job.d);
}

/* Node addresses that changed while the worker ran. */
static void addrs_after_job(struct daemon *dm)
{
	const struct ipaddr *a;
	size_t n;

	if (!dm->addrs_deferred || !dm->addrs)
		return;
	dm->addrs_deferred = false;
	nladdrs_watch_get(dm->addrs, &a, &n);
	sync_addrs(a, n, dm);
}

/* On the worker thread, after the first sync: the plan stores' first plan
 * (pipeline_store_warm()), which being ready does not wait for. */
static void warm_job_run(void *userdata)
{
	struct daemon *dm = userdata;

	dm->warm_r = pipeline_store_warm(dm->p, &dm->warm_bytes);
}

static void warm_job_done(void *userdata)
{
	struct daemon *dm = userdata;

	if (dm->warm_r < 0)
		log_warn("planning the kept plans failed: %s; the next sync plans in full",
			 strerror(-dm->warm_r));
	else
		telemetry_plan_store(dm, dm->warm_bytes);
	addrs_after_job(dm);
}

/* Back on the loop thread. */
static void sync_job_done(void *userdata)
{
	struct daemon *dm = userdata;

	sync_finish(dm);
	if (dm->job.r >= 0 && pipeline_store_pending(dm->p) &&
	    worker_start(dm->worker, warm_job_run, warm_job_done, dm) < 0) {
		/* No thread: plan them here rather than at the next sync. */
		warm_job_run(dm);
		warm_job_done(dm);
		return;
	}
	if (!worker_busy(dm->worker))
		addrs_after_job(dm);
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
	double load, commit;
	int r;

	sourceset_take_times(dm->sources, &load, &commit);
	*job = (struct sync_job){ .reason = reason, .t0 = loop_now_usec(),
				  .decode_seconds = load,
				  .merge_seconds = dm->merge_seconds + commit };
	dm->merge_seconds = 0;
	diag_list_init(&job->d);
	job->had_pending = syncpolicy_pending_since(&dm->gate.policy, &job->since);
	telemetry_sync_started(dm, reason);
	syncpolicy_sync_start(&dm->gate.policy, job->t0);
	if (reason == SYNC_PERIODIC)
		pipeline_resolve_full_next(dm->p); /* and check the incremental state */
	/* kube-proxy's full syncs ensure its nfacct counters again (proxier.go,
	 * syncProxyRules): one deleted meanwhile is made again, one that can
	 * no longer be made loses its match (the start made them). */
	if ((reason == SYNC_PERIODIC || reason == SYNC_RETRY) && dm->nfacct.want)
		pipeline_set_nfacct(dm->p, counters_ensure(&dm->nfacct, &job->d));
	r = pipeline_sync_prepare(dm->p, &job->d);
	if (r >= 0)
		r = worker_start(dm->worker, sync_job_run, sync_job_done, dm);
	if (r < 0) {
		job->r = r;
		sync_finish(dm);
	}
}

int sync_timer(struct loop *l, struct loop_timer *t, void *userdata)
{
	struct daemon *dm = userdata;
	enum sync_reason reason;

	/* Not yet: the post hook keeps the timer off until the sources are
	 * read and the worker is idle, and re-arms it for the next due time. */
	if (!gate_may_sync(&dm->gate, worker_busy(dm->worker), loop_now_usec(), &reason))
		return 0;
	do_sync(dm, reason);
	return 0;
}

/* Each conflict between sources once (the merge engine records it once). */
static void report_conflicts(struct daemon *dm)
{
	struct diag_list d;

	diag_list_init(&d);
	telemetry_conflicts(dm, pipeline_take_conflicts(dm->p, &d));
	daemon_log_diags(&d);
	diag_list_done(&d);
}

/* After every batch of events: apply what they marked, arm the sync timer. */
void sync_post(struct loop *l, void *userdata)
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
	if (!gate_sources_ready(&dm->gate)) {
		if (sourceset_waiting(dm->sources, NULL) && !loop_timer_armed(dm->wait_timer))
			loop_timer_arm(dm->wait_timer, WAIT_WARN_USEC);
		loop_timer_arm(dm->sync_timer, 0);
		return;
	}
	loop_timer_arm_at(dm->sync_timer, syncpolicy_next(&dm->gate.policy, NULL));
}
