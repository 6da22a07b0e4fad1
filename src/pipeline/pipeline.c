/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/chainname.h"
#include "core/delta.h"
#include "core/planstore.h"
#include "core/resolve.h"
#include "pipeline/node.h"
#include "pipeline/pipeline.h"
#include "sources/kube/kube.h"
#include "sources/file/filesrc.h"
#include "sys/host.h"
#include "sys/sysctl.h"
#include "util.h"

struct pipeline {
	const struct pipeline_config *c;
	struct plan_settings settings; /* c->plan with this node's facts (node) filled in */
	struct node_given node_given;  /* what c says of this node */
	struct node node;              /* keeps settings' node fields */
	struct merge *merge;
	struct filesrc **files;        /* per --config: its merge source and files */
	struct backend *backend;       /* created on first apply */
	struct desired desired;        /* last resolved state */
	unsigned long desired_generation;
	struct merge_snapshot *resolved; /* the view `desired` was resolved from */
	struct chain_hasher *hasher;   /* the daemon's: chain names kept between IPv4 plans */
	bool full_next;                /* the next resolve is a full one, checking the delta */
	/* The daemon's: each family's plan kept between syncs (core/planstore.h). */
	struct plan_store *store[PLAN_NFAMILIES];
	struct merge_snapshot *planned[PLAN_NFAMILIES]; /* the view each store's plan is of */
	bool plan_check_next;          /* the next plans are checked against full ones */
	double resolve_seconds;        /* of the last pipeline_resolve() that resolved */
	size_t ports_resolved;         /* service ports it built anew */
	size_t ports_planned[PLAN_NFAMILIES]; /* service ports the last plans planned anew */
};

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
	p->merge = merge_new();
	p->files = calloc(c->n_configs ? c->n_configs : 1, sizeof(*p->files));
	/* The daemon plans again and again: it keeps the chain names. */
	if (c->keep_plans) {
		p->hasher = chain_hasher_new_memo();
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
	}
	*ret = p;
	return 0;
}

void pipeline_free(struct pipeline *p)
{
	if (!p)
		return;
	backend_free(p->backend);
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
	if (p->c->kube && first >= 0) {
		struct kube_options ko = {
			.kubeconfig = p->c->kubeconfig,
			.master = p->c->master,
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

int pipeline_plan_family(struct pipeline *p, int family, bool dual_stack, struct ruleset **ret,
			 struct plan_stats *st, struct diag_list *d)
{
	struct plan_settings s = p->settings;
	struct plan_stats local;

	s.family = family;
	s.dual_stack = dual_stack;
	/* One memo per family's plan, or each plan would sweep the other's. */
	s.hasher = family == AF_INET ? p->hasher : NULL;
	return plan_build(&p->desired, &s, ret, st ? st : &local, d);
}

/*
 * The daemon's plan of one family: the store's, updated from the last
 * resolved state; *ret is the store's (not to be freed).  On the periodic
 * sync the incremental plan is checked against a full one.
 */
static int plan_family_store(struct pipeline *p, int family, bool dual_stack,
			     const struct ruleset **ret, struct plan_stats *st,
			     struct diag_list *d)
{
	const int f = family == AF_INET ? PLAN_V4 : PLAN_V6;
	struct plan_store *store = p->store[f];
	struct plan_settings s = p->settings;
	struct merge_changes ch = { 0 };
	struct plan_store_info info;
	int r;

	s.family = family;
	s.dual_stack = dual_stack;
	s.hasher = family == AF_INET ? p->hasher : NULL;
	/* What changed since the view the store planned (the desired state
	 * is a function of the view). */
	r = p->resolved ? merge_snapshot_diff(p->planned[f], p->resolved, &ch) : 0;
	if (r >= 0)
		r = plan_store_update(store, &p->desired, &s, p->resolved ? &ch : NULL,
				      p->plan_check_next, st, &info, d);
	merge_changes_done(&ch);
	merge_snapshot_unref(p->planned[f]);
	p->planned[f] = r >= 0 && p->resolved ? merge_snapshot_ref(p->resolved) : NULL;
	if (r < 0)
		return r;
	p->ports_planned[f] = info.ports_planned;
	if (info.mismatched)
		diag_add(d, DIAG_WARNING, "plan", NULL, NULL,
			 "the incremental IPv%d plan differed from a full one in %zu chain%s (a "
			 "bug: please report it); the full one is used",
			 family == AF_INET ? 4 : 6, info.mismatched, info.mismatched == 1 ? "" : "s");
	*ret = plan_store_ruleset(store);
	return 0;
}

/*
 * Plan IPv4 and, with want6, IPv6 (diagnostics both give: once).  ret[]
 * are the caller's to free, or with store the stores' (borrowed; the
 * daemon's pipeline has them).
 */
static int plan_both(struct pipeline *p, bool want6, bool store,
		     struct ruleset *ret[PLAN_NFAMILIES], struct plan_stats st[PLAN_NFAMILIES],
		     struct diag_list *d)
{
	struct ruleset *rs[PLAN_NFAMILIES] = { NULL };
	const struct ruleset *kept[PLAN_NFAMILIES] = { NULL };
	struct diag_list d6;
	size_t from = d ? d->n : 0;
	int r;

	if (store)
		r = plan_family_store(p, AF_INET, want6, &kept[PLAN_V4], &st[PLAN_V4], d);
	else
		r = pipeline_plan_family(p, AF_INET, want6, &rs[PLAN_V4], &st[PLAN_V4], d);
	if (r < 0 || !want6) {
		ret[PLAN_V4] = store ? (struct ruleset *)kept[PLAN_V4] : rs[PLAN_V4];
		ret[PLAN_V6] = NULL;
		if (r >= 0 && store)
			p->plan_check_next = false;
		return r;
	}
	/* The IPv6 plan repeats what concerns both families (a port defined
	 * twice, an unsupported protocol): say it once. */
	diag_list_init(&d6);
	if (store)
		r = plan_family_store(p, AF_INET6, true, &kept[PLAN_V6], &st[PLAN_V6],
				      d ? &d6 : NULL);
	else
		r = pipeline_plan_family(p, AF_INET6, true, &rs[PLAN_V6], &st[PLAN_V6],
					 d ? &d6 : NULL);
	if (r >= 0 && d)
		r = diag_list_move_new(d, &d6, from);
	diag_list_done(&d6);
	if (r < 0) {
		ruleset_free(rs[PLAN_V4]);
		ruleset_free(rs[PLAN_V6]);
		return r;
	}
	if (store) {
		p->plan_check_next = false;
		ret[PLAN_V4] = (struct ruleset *)kept[PLAN_V4];
		ret[PLAN_V6] = (struct ruleset *)kept[PLAN_V6];
		return 0;
	}
	ret[PLAN_V4] = rs[PLAN_V4];
	ret[PLAN_V6] = rs[PLAN_V6];
	return 0;
}

int pipeline_plan(struct pipeline *p, struct ruleset *ret[PLAN_NFAMILIES],
		  struct plan_stats st[PLAN_NFAMILIES], struct diag_list *d)
{
	int r;

	r = pipeline_resolve(p, d);
	if (r < 0)
		return r;
	return plan_both(p, true, false, ret, st, d);
}

int pipeline_backend(struct pipeline *p, struct backend **ret, struct diag_list *d)
{
	int r;

	if (!p->backend) {
		if (!host_has_net_admin("")) {
			diag_add(d, DIAG_ERROR, NULL, NULL, NULL, "%s",
				 p->c->no_net_admin ? p->c->no_net_admin
						    : "this needs CAP_NET_ADMIN: run svcnat as root");
			return -EPERM;
		}
		r = backend_new(&p->c->backend, &p->backend, d);
		if (r < 0)
			return r;
	}
	*ret = p->backend;
	return 0;
}

int pipeline_sync_prepare(struct pipeline *p, struct diag_list *d)
{
	struct backend *b;
	int r;

	r = pipeline_backend(p, &b, d);
	if (r < 0)
		return r;
	p->resolve_seconds = 0;
	p->ports_resolved = 0;
	return pipeline_resolve(p, d);
}

int pipeline_sync_run(struct pipeline *p, struct sync_report *rep, struct diag_list *d)
{
	struct sync_report local = { 0 };
	struct ruleset *rs2[PLAN_NFAMILIES] = { NULL }, *rs;
	struct plan_stats st[PLAN_NFAMILIES] = { { 0 } };
	double t0 = monotonic_seconds(), t1;
	bool v6;
	int r;

	if (!rep)
		rep = &local;
	memset(rep, 0, sizeof(*rep));
	rep->resolve_seconds = p->resolve_seconds;
	rep->ports_resolved = p->ports_resolved;
	if (!p->backend)
		return -EINVAL;
	/* ip6tables too when the backend writes it (kube-proxy runs
	 * single-stack where the host has no ip6tables). */
	v6 = backend_has_ipv6(p->backend);
	r = plan_both(p, v6, p->store[PLAN_V4] != NULL, rs2, st, d);
	if (r < 0)
		return r;
	rs = rs2[PLAN_V4];
	rep->plan = st[PLAN_V4];
	rep->plan6 = st[PLAN_V6];
	rep->ipv6 = v6;
	t1 = monotonic_seconds();
	rep->plan_seconds = t1 - t0;
	/* The IPv6 plan, if any, plans the same ports again. */
	rep->ports_planned = p->store[PLAN_V4] ? p->ports_planned[PLAN_V4] : p->desired.n_ports;
	/* The plans counted them (no walk over every chain again). */
	memcpy(rep->chains, st[PLAN_V4].table_chains, sizeof(rep->chains));
	memcpy(rep->rules, st[PLAN_V4].table_rules, sizeof(rep->rules));
	memcpy(rep->chains6, st[PLAN_V6].table_chains, sizeof(rep->chains6));
	memcpy(rep->rules6, st[PLAN_V6].table_rules, sizeof(rep->rules6));
	if (p->c->sync_once) {
		/* A one-shot run needs only the plan from here on: free the
		 * merged and resolved state, so the peak is the kernel write's. */
		desired_free(&p->desired);
		memset(&p->desired, 0, sizeof(p->desired));
		p->desired_generation = 0;
		merge_snapshot_unref(p->resolved);
		p->resolved = NULL;
		merge_free(p->merge);
		p->merge = NULL;
		/* Give the freed pages back (glibc keeps them otherwise). */
		malloc_trim(0);
	}
	r = backend_apply_families(p->backend, rs, rs2[PLAN_V6], &rep->apply, d);
	if (!p->store[PLAN_V4]) { /* else the stores' plans */
		ruleset_free(rs);
		ruleset_free(rs2[PLAN_V6]);
	}
	rep->total_seconds = monotonic_seconds() - t0;
	return r;
}

int pipeline_sync(struct pipeline *p, struct sync_report *rep, struct diag_list *d)
{
	double t0 = monotonic_seconds(), resolve;
	int r;

	if (rep)
		memset(rep, 0, sizeof(*rep));
	r = pipeline_sync_prepare(p, d);
	if (r < 0)
		return r;
	resolve = monotonic_seconds() - t0;
	r = pipeline_sync_run(p, rep, d);
	if (rep) {
		/* The resolve counts as planning, as it did before the split. */
		rep->plan_seconds += resolve;
		rep->total_seconds += resolve;
	}
	return r;
}

/*
 * kube-proxy's conntrack settings (cmd/kube-proxy/app/server_linux.go,
 * setupConntrack), its defaults for what neither a flag nor the
 * KubeProxyConfiguration gave: 32768 per CPU (at least 131072) for
 * nf_conntrack_max, 24 h established and 1 h CLOSE_WAIT TCP timeouts.
 */
static int conntrack_sysctls(const struct conntrack_settings *ct, struct diag_list *d)
{
	long per = ct->max_per_core >= 0 ? ct->max_per_core : CT_DEFAULT_MAX_PER_CORE;
	long min = ct->min >= 0 ? ct->min : CT_DEFAULT_MIN;
	struct ct_sysctls c = {
		.max = ct_sysctls_max(per, min, host_cpus()),
		.max_given = ct->max_per_core >= 0 || ct->min >= 0,
		.tcp_established_sec = ct->tcp_established_usec == CT_TIMEOUT_DEFAULT ?
					       CT_DEFAULT_TCP_ESTABLISHED_SEC :
					       (long)(ct->tcp_established_usec / 1000000),
		.tcp_close_wait_sec = ct->tcp_close_wait_usec == CT_TIMEOUT_DEFAULT ?
					      CT_DEFAULT_TCP_CLOSE_WAIT_SEC :
					      (long)(ct->tcp_close_wait_usec / 1000000),
		.udp_sec = (long)(ct->udp_usec / 1000000),
		.udp_stream_sec = (long)(ct->udp_stream_usec / 1000000),
		.tcp_be_liberal = ct->tcp_be_liberal,
	};

	return ct_sysctls_apply(&c, "", host_in_host_netns(""), d);
}

int pipeline_check_sysctls(struct pipeline *p, struct diag_list *d)
{
	static const struct {
		const char *path;
		const char *why;
		bool localhost_only;
	} need[] = {
		{ "/proc/sys/net/ipv4/ip_forward",
		  "service traffic from other hosts and pods is not forwarded", false },
		{ "/proc/sys/net/ipv4/conf/all/route_localnet",
		  "NodePorts on 127.0.0.1 do not work (--localhost-nodeports)", true },
	};
	size_t i;
	long v = 0;
	int r;

	for (i = 0; i < ARRAY_SIZE(need); i++) {
		if (need[i].localhost_only && !p->settings.localhost_nodeports)
			continue;
		r = sysctl_read_int("", need[i].path, &v);
		if (r < 0 || v == 1)
			continue;
		if (p->c->set_sysctls) {
			r = sysctl_set_int("", need[i].path, 1, d);
			if (r < 0)
				return r;
		} else {
			diag_add(d, DIAG_WARNING, NULL, NULL, NULL,
				 "%s is 0: %s (use --set-sysctls to turn it on)",
				 need[i].path + strlen("/proc/sys/"), need[i].why);
		}
	}
	/* IPv6 forwarding is only warned about: with it on, the kernel
	 * ignores router advertisements (accept_ra 1), which may be what
	 * configures the node's own IPv6 addresses and routes. */
	if (node_has_global6(&p->settings) &&
	    sysctl_read_int("", "/proc/sys/net/ipv6/conf/all/forwarding", &v) >= 0 && v == 0)
		diag_add(d, DIAG_WARNING, NULL, NULL, NULL,
			 "net/ipv6/conf/all/forwarding is 0: IPv6 service traffic from other hosts "
			 "and pods is not forwarded (svcnat does not turn it on, --set-sysctls "
			 "neither: forwarding on, the kernel ignores router advertisements)");
	return conntrack_sysctls(&p->c->conntrack, d);
}
