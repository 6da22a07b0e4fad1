/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daemon's telemetry: kube-proxy's metric catalogue and svcnat's own
 * (sys/metrics.h), filled in as sources change and syncs end, and the HTTP
 * handlers that serve them and the health (/healthz, /livez, /metrics,
 * /proxyMode, /configz).  What the health is, gate.h decides.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/changes.h"
#include "sys/log.h"
#include "daemon/state.h"
#include "util.h"

/* kube-proxy's ip_family label: IPv4, and IPv6 where ip6tables is written
 * too (struct daemon's ipv6). */
#define V4 "ip_family=\"IPv4\""
#define V6 "ip_family=\"IPv6\""
static const char *const family_labels[] = { V4, V6 };

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

double wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void telemetry_source_errors(struct daemon *dm, const char *source, double n)
{
	char lbl[512];

	if (n > 0 && metrics_label(lbl, sizeof(lbl), "source", source))
		metrics_counter_add(dm->metrics, "svcnat_source_errors_total", lbl, n);
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
	metrics_gauge_set(dm->metrics, "svcnat_memory_bytes", "part=\"plan_store\"",
			  (double)rep->plan_store_bytes);
	metrics_gauge_set(dm->metrics, "svcnat_memory_bytes", "part=\"kernel_state\"",
			  (double)rep->kept_bytes);
}

void telemetry_plan_store(struct daemon *dm, size_t bytes)
{
	metrics_gauge_set(dm->metrics, "svcnat_memory_bytes", "part=\"plan_store\"", (double)bytes);
}

/* svcnat_memory_bytes{part="other"}: the resident memory that neither the
 * plan stores nor the writer's kept state account for. */
static void memory_other(struct daemon *dm)
{
	double rss = 0, plan = 0, kept = 0;

	if (metrics_get(dm->metrics, "process_resident_memory_bytes", NULL, &rss) < 0)
		return;
	metrics_get(dm->metrics, "svcnat_memory_bytes", "part=\"plan_store\"", &plan);
	metrics_get(dm->metrics, "svcnat_memory_bytes", "part=\"kernel_state\"", &kept);
	metrics_gauge_set(dm->metrics, "svcnat_memory_bytes", "part=\"other\"",
			  rss > plan + kept ? rss - plan - kept : 0);
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

static int h_healthz(void *userdata, struct http_response *resp)
{
	struct daemon *dm = userdata;
	bool healthy, eligible;
	char extra[1024];

	gate_healthz(&dm->gate, loop_now_usec(), &healthy, &eligible);
	metrics_counter_add(dm->metrics, "kubeproxy_proxy_healthz_total",
			    healthy && eligible ? "code=\"200\"" : "code=\"503\"", 1);
	/* svcnat's detail: the network sources' state (the node keeps its
	 * last rules while they are unreachable, and says so here). */
	sourceset_health(dm->sources, extra, sizeof(extra));
	return http_health_response(healthy, eligible, dm->last_ok_wall, wall_now(),
				    extra[0] ? extra : NULL, resp);
}

static int h_livez(void *userdata, struct http_response *resp)
{
	struct daemon *dm = userdata;
	bool healthy = gate_livez(&dm->gate, loop_now_usec());
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

/* kube-proxy's /configz on the metrics server: the configuration the
 * command line rendered (cli/configz.h). */
static int h_configz(void *userdata, struct http_response *resp)
{
	struct daemon *dm = userdata;

	resp->body = strdup(dm->o->configz ? dm->o->configz : "{}");
	if (!resp->body)
		return -ENOMEM;
	resp->len = strlen(resp->body);
	resp->content_type = "application/json";
	return 0;
}

bool telemetry_proxy_healthy(void *userdata)
{
	struct daemon *dm = userdata;

	return gate_livez(&dm->gate, loop_now_usec());
}

static int h_metrics(void *userdata, struct http_response *resp)
{
	struct daemon *dm = userdata;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int r;

	sourceset_metrics(dm->sources);
	metrics_update_process(dm->metrics);
	kpmetrics_nfacct(dm->kpm, dm->nfacct.want);
	memory_other(dm);
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
	{ "/configz", h_configz },
};

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

int telemetry_http_setup(struct daemon *dm)
{
	const struct daemon_config *o = dm->o;
	int r;

	r = setup_http(dm, "--healthz-bind-address",
		       o->healthz_bind_address,
		       HTTP_HEALTH, healthz_routes, ARRAY_SIZE(healthz_routes), &dm->healthz);
	if (r >= 0)
		r = setup_http(dm, "--metrics-bind-address",
			       o->metrics_bind_address,
			       HTTP_OTHER, metrics_routes, ARRAY_SIZE(metrics_routes), &dm->metrics_srv);
	return r;
}

void telemetry_changes(struct daemon *dm, const struct merge_snapshot *snap)
{
	struct snapshot_changes ch;

	for (size_t f = 0; f < n_families(dm); f++)
		metrics_gauge_set(dm->metrics,
				  "kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds",
				  family_labels[f], wall_now());
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

void telemetry_sync_started(struct daemon *dm, enum sync_reason reason)
{
	char lbl[64];

	metrics_label(lbl, sizeof(lbl), "reason", sync_reason_name(reason));
	metrics_counter_add(dm->metrics, "svcnat_syncs_total", lbl, 1);
	/* The changes so far are in this sync: no longer pending. */
	dm->service_changes_pending = dm->endpoint_changes_pending = 0;
	metrics_gauge_set(dm->metrics, "kubeproxy_sync_proxy_rules_service_changes_pending", NULL, 0);
	metrics_gauge_set(dm->metrics, "kubeproxy_sync_proxy_rules_endpoint_changes_pending", NULL, 0);
	kpmetrics_sync_start(dm->kpm);
}

void telemetry_sync_ended(struct daemon *dm, const struct sync_job *job, uint64_t t1)
{
	double took = (double)(t1 - job->t0) / 1e6;

	sync_parts(dm, job);
	observe_families(dm, "kubeproxy_sync_proxy_rules_duration_seconds", took);
	/* kube-proxy's full syncs: the first, the periodic ones, those after a
	 * failure; a sync for a change is a partial one. */
	observe_families(dm,
			 job->reason == SYNC_CHANGE ? "kubeproxy_sync_partial_proxy_rules_duration_seconds"
						    : "kubeproxy_sync_full_proxy_rules_duration_seconds",
			 took);
	if (job->r < 0) {
		kpmetrics_sync_done(dm->kpm, false, 0);
		/* One transaction for both families: both failed. */
		for (size_t f = 0; f < n_families(dm); f++)
			metrics_counter_add(dm->metrics,
					    "kubeproxy_sync_proxy_rules_iptables_restore_failures_total",
					    family_labels[f], 1);
	}
}

void telemetry_sync_ok(struct daemon *dm, const struct sync_job *job, uint64_t t1,
		       bool state_changed)
{
	for (size_t f = 0; f < n_families(dm); f++)
		metrics_gauge_set(dm->metrics, "kubeproxy_sync_proxy_rules_last_timestamp_seconds",
				  family_labels[f], dm->last_ok_wall);
	update_sync_metrics(dm, &job->rep);
	kpmetrics_sync_done(dm->kpm, true, dm->last_ok_wall);
	if (job->had_pending && state_changed)
		metrics_histogram_observe(dm->metrics, "svcnat_change_to_commit_duration_seconds",
					  NULL, (double)(t1 - job->since) / 1e6);
}

void telemetry_repaired(struct daemon *dm)
{
	metrics_counter_add(dm->metrics, "svcnat_repairs_total", NULL, 1);
}

void telemetry_conntrack(struct daemon *dm, int r, size_t deleted, size_t failed)
{
	if (r >= 0)
		metrics_counter_add(dm->metrics, "svcnat_conntrack_entries_deleted_total", NULL,
				    (double)deleted);
	if (r < 0 || failed)
		metrics_counter_add(dm->metrics, "svcnat_conntrack_errors_total", NULL, 1);
}

void telemetry_conflicts(struct daemon *dm, size_t n)
{
	if (n)
		metrics_counter_add(dm->metrics, "svcnat_source_conflicts_total", NULL, (double)n);
}
