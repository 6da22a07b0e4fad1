/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The pipeline's first half: its sources, this node, the merge engine and
 * the resolve (apply.c plans and writes what it resolved).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/delta.h"
#include "pipeline/state.h"
#include "sources/etcd/etcd.h"
#include "sources/file/filesrc.h"
#include "sources/kube/kube.h"
#include "sys/host.h"
#include "sys/warm.h"
#include "util.h"

int pipeline_new(const struct pipeline_config *c, struct pipeline **ret, struct diag_list *d)
{
	struct pipeline *p;
	size_t i;
	int r;

	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->c = c;
	p->settings = c->plan;
	p->node_given = (struct node_given){
		.plan = &c->plan,
		.hostname = c->hostname,
		.zone = c->zone,
		.node_ips_given = c->node_ips_given,
		.nodeport_primary = c->nodeport_primary,
		.bind_address_set = c->bind_address_set,
		.bind_address = c->bind_address,
	};
	if (node_init(&p->node, &p->node_given, &p->settings) < 0) {
		pipeline_free(p);
		return -ENOMEM;
	}
	/* The first sync decodes, merges and plans on one thread: another
	 * core faults in the memory it writes meanwhile (sys/warm.h). */
	if (c->backend.threads > 1 && !getenv("SVCNAT_NO_WARM"))
		p->warm = warm_start();
	p->merge = merge_new();
	p->files = calloc(c->n_configs ? c->n_configs : 1, sizeof(*p->files));
	/*
	 * The daemon plans again and again: one hasher for all its plans.
	 * Without a memo: the plan stores plan only the changed ports anew,
	 * and a memo of every name (~20 MiB at 10,000 x 10) made even a full
	 * plan slower than hashing the names again.
	 */
	if (c->keep_plans) {
		p->hasher = chain_hasher_new();
		p->store[PLAN_V4] = plan_store_new();
		p->store[PLAN_V6] = plan_store_new();
	}
	if (!p->merge || !p->files ||
	    (c->keep_plans && (!p->hasher || !p->store[PLAN_V4] || !p->store[PLAN_V6]))) {
		pipeline_free(p);
		return -ENOMEM;
	}
	for (i = 0; i < c->n_configs; i++) {
		r = filesrc_new(p->merge, c->configs[i], c->file_mode, d, &p->files[i]);
		if (r < 0) {
			pipeline_free(p);
			return r;
		}
		if (c->read_once)
			filesrc_read_once(p->files[i]);
	}
	*ret = p;
	return 0;
}

/* What must be done before the process exits: warm stopped, the writer
 * freed (the nft writer writes its kept state then). */
static void pipeline_finish(struct pipeline *p)
{
	if (p->warm)
		warm_stop();
	p->warm = false;
	backend_free(p->backend);
	p->backend = NULL;
}

void pipeline_free(struct pipeline *p)
{
	if (!p)
		return;
	pipeline_finish(p);
	for (size_t i = 0; i < PLAN_NFAMILIES; i++)
		ruleset_free(p->spent[i]);
	desired_free(&p->desired);
	merge_snapshot_unref(p->resolved);
	chain_hasher_free(p->hasher);
	plan_store_free(p->store[PLAN_V4]);
	plan_store_free(p->store[PLAN_V6]);
	merge_snapshot_unref(p->planned[PLAN_V4]);
	merge_snapshot_unref(p->planned[PLAN_V6]);
	merge_free(p->merge);
	if (p->files)
		for (size_t i = 0; i < p->c->n_configs; i++)
			filesrc_free(p->files[i]);
	free(p->files);
	node_done(&p->node);
	free(p);
}

/* What pipeline_leave() left, still reachable. */
static struct pipeline *volatile left; /* volatile: the store is kept */

void pipeline_leave(struct pipeline *p)
{
	if (!p)
		return;
	pipeline_finish(p);
	left = p;
}

int pipeline_read_source(struct pipeline *p, size_t i, struct diag_list *d)
{
	if (i >= p->c->n_configs)
		return -EINVAL;
	return filesrc_read(p->files[i], d);
}

struct filesrc *pipeline_file_source(struct pipeline *p, size_t i)
{
	return i < p->c->n_configs ? p->files[i] : NULL;
}

size_t pipeline_take_conflicts(struct pipeline *p, struct diag_list *d)
{
	struct diag_list *c = merge_diags(p->merge);
	size_t n = c ? c->n : 0;

	if (n && diag_list_move(d, c) < 0)
		return 0;
	return n;
}

struct merge *pipeline_merge(struct pipeline *p)
{
	return p->merge;
}

const struct desired *pipeline_desired(const struct pipeline *p)
{
	return &p->desired;
}

unsigned long pipeline_desired_generation(const struct pipeline *p)
{
	return p->desired_generation;
}

int pipeline_family(const struct pipeline *p)
{
	/* Dual-stack when the backend writes ip6tables too. */
	return p->backend && backend_has_ipv6(p->backend) ? AF_UNSPEC : AF_INET;
}

int pipeline_set_node_pod_cidrs(struct pipeline *p, const struct ipnet *cidrs, size_t n)
{
	return node_set_pod_cidrs(&p->node, cidrs, n);
}

const struct plan_settings *pipeline_settings(const struct pipeline *p)
{
	return &p->settings;
}

int pipeline_set_nfacct(struct pipeline *p, unsigned counters)
{
	if (p->settings.nfacct == counters)
		return 0;
	/* Part of the plan stores' fingerprint: the next plan is a full one. */
	p->settings.nfacct = counters;
	return 1;
}

int pipeline_read_sources(struct pipeline *p, struct diag_list *d)
{
	int first = 0;
	size_t i;

	for (i = 0; i < p->c->n_configs; i++) {
		int r = pipeline_read_source(p, i, d);

		if (r < 0 && first >= 0)
			first = r;
		else if (r > 0 && first == 0)
			first = r;
	}
	if (p->c->etcd_endpoints && first >= 0) {
		struct etcd_options eo = {
			.endpoints = p->c->etcd_endpoints,
			.prefix = p->c->etcd_prefix,
			.cacert = p->c->etcd_cacert,
			.cert = p->c->etcd_cert,
			.key = p->c->etcd_key,
			.mode = p->c->file_mode,
		};
		int r = etcd_list_once(p->merge, &eo, d);

		if (r < 0)
			return r == -EIO ? -ENOTCONN : r;
	}
	if (p->c->kube && first >= 0) {
		struct kube_options ko = {
			.kubeconfig = p->c->kubeconfig,
			.master = p->c->master,
			.content_type = p->c->kube_content_type,
			.accept_content_types = p->c->kube_accept_content_types,
			.no_watch_list = p->c->kube_no_watch_list,
			.node_name = p->c->hostname,
			.mode = p->c->file_mode,
		};
		struct kube_node node;
		bool have = false;
		int r;

		r = kube_list_once(p->merge, &ko, &node, &have, d);
		if (r < 0)
			return r == -EIO ? -ENOTCONN : r;
		if (have && (pipeline_set_node(p, node.zone, node.addrs, node.n_addrs) < 0 ||
			     pipeline_set_node_pod_cidrs(p, node.pod_cidrs, node.n_pod_cidrs) < 0))
			return -ENOMEM;
	}
	pipeline_take_conflicts(p, d);
	return first;
}

int pipeline_set_node(struct pipeline *p, const char *zone, const struct ipaddr *ips, size_t n)
{
	return node_set_object(&p->node, zone, ips, n);
}

int pipeline_set_addresses(struct pipeline *p, const struct ipaddr *a, size_t n)
{
	return node_set_addresses(&p->node, a, n);
}

bool pipeline_addresses_matter(const struct pipeline *p)
{
	return node_addresses_matter(&p->settings);
}

int pipeline_learn_addresses(struct pipeline *p, struct diag_list *d)
{
	_cleanup_free_ struct ipaddr *v = NULL;
	size_t n = 0;
	int r;

	if (p->c->node_ips_given)
		return 0;
	/* Both families: each plan takes its own. */
	r = host_addresses(&v, &n);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		diag_add(d, DIAG_WARNING, NULL, NULL, NULL,
			 "cannot list the node's addresses: %s", strerror(-r));
		return r;
	}
	r = pipeline_set_addresses(p, v, n);
	return r < 0 ? r : 0;
}

void pipeline_check_families(const struct pipeline *p, struct diag_list *d)
{
	node_check_families(&p->settings, d);
}

/* resolve_dump() into a string (NULL on ENOMEM). */
static char *desired_text(const struct desired *d)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	resolve_dump(d, f);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* A full resolve of snap, checked against the incremental one from
 * p->resolved (the periodic sync's). */
static int resolve_checked(struct pipeline *p, const struct merge_snapshot *snap,
			   const struct resolve_opts *ro, struct desired *ret, struct diag_list *d)
{
	struct merge_changes ch = { 0 };
	struct desired full = { 0 }, inc = { 0 };
	_cleanup_free_ char *a = NULL, *b = NULL;
	int r;

	r = resolve_build(snap, ro, &full, d);
	if (r < 0)
		return r;
	/* The delta's own diagnostics repeat the full resolve's: not kept. */
	if (merge_snapshot_diff(p->resolved, snap, &ch) >= 0 &&
	    delta_resolve(&p->desired, snap, &ch, ro, &inc, NULL, NULL) >= 0) {
		a = desired_text(&full);
		b = desired_text(&inc);
		if (a && b && !streq(a, b))
			diag_add(d, DIAG_WARNING, "resolve", NULL, NULL,
				 "the incremental state differed from a full resolve (a bug: "
				 "please report it); the full one is used");
	}
	merge_changes_done(&ch);
	desired_free(&inc);
	*ret = full;
	return 0;
}

int pipeline_resolve(struct pipeline *p, struct diag_list *d)
{
	/* Both families: each plan takes its own share. */
	struct resolve_opts ro = { .hostname = p->c->hostname, .family = 0 };
	struct merge_snapshot *snap;
	struct desired nd = { 0 };
	int r;

	snap = merge_snapshot_get(p->merge);
	if (!snap)
		return -ENOMEM;
	if (!p->full_next && p->desired_generation && snap->generation == p->desired_generation &&
	    !merge_dirty(p->merge)) {
		merge_snapshot_unref(snap);
		return 0;
	}
	double t0 = monotonic_seconds();
	size_t rebuilt = 0;

	if (p->full_next && p->resolved) {
		r = resolve_checked(p, snap, &ro, &nd, d);
		rebuilt = nd.n_ports;
	} else if (p->resolved) {
		/* Only the services the changes since the last resolve affect
		 * are resolved again (core/delta.h). */
		struct merge_changes ch = { 0 };

		r = merge_snapshot_diff(p->resolved, snap, &ch);
		if (r >= 0)
			r = delta_resolve(&p->desired, snap, &ch, &ro, &nd, &rebuilt, d);
		merge_changes_done(&ch);
	} else {
		r = resolve_build(snap, &ro, &nd, d);
		rebuilt = nd.n_ports;
	}
	if (r >= 0) {
		desired_free(&p->desired);
		p->desired = nd;
		p->desired_generation = snap->generation;
		p->resolve_seconds = monotonic_seconds() - t0;
		p->ports_resolved = rebuilt;
		merge_snapshot_unref(p->resolved);
		p->resolved = merge_snapshot_ref(snap);
		p->full_next = false;
	}
	merge_snapshot_unref(snap);
	return r;
}

void pipeline_resolve_full_next(struct pipeline *p)
{
	p->full_next = true;
	p->plan_check_next = true;
}
