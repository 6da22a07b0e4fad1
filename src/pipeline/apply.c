/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The pipeline's second half: plan the resolved state (fresh, or from the
 * daemon's kept plans), create the backend and apply.
 */
#include <errno.h>
#include <malloc.h>
#include <string.h>

#include "pipeline/state.h"
#include "sys/host.h"
#include "sys/warm.h"
#include "util.h"

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
	bool v6, store;
	int r;

	if (!rep)
		rep = &local;
	memset(rep, 0, sizeof(*rep));
	rep->resolve_seconds = p->resolve_seconds;
	rep->ports_resolved = p->ports_resolved;
	if (!p->backend)
		return -EINVAL;
	/* What the sources' reload and the resolve freed (a changed file's
	 * old and new decoded items, its read buffer) goes back to the system
	 * before the writer's big buffers are faulted in: on the direct
	 * writer the table read and the table built are both alive at this
	 * sync's peak, and the freed heap would only add to it. */
	if (p->synced && !p->c->sync_once)
		malloc_trim(0);
	/* ip6tables too when the backend writes it (kube-proxy runs
	 * single-stack where the host has no ip6tables). */
	v6 = backend_has_ipv6(p->backend);
	/* Until a sync succeeded the daemon plans for the nft writer as --once
	 * does: the stores' first (full) plan costs several times a plain one
	 * and only later syncs need it (pipeline_store_warm() makes it after).
	 * The nft writer keeps what it wrote by content; the direct writer
	 * keeps a chain's bytes only under the stores' stamp, so elsewhere
	 * the first sync plans with the stores as before. */
	store = p->store[PLAN_V4] != NULL &&
		(p->synced || backend_kind_of(p->backend) != BACKEND_NFT);
	r = plan_both(p, v6, store, rs2, st, d);
	if (r < 0)
		return r;
	rs = rs2[PLAN_V4];
	rep->plan = st[PLAN_V4];
	rep->plan6 = st[PLAN_V6];
	rep->ipv6 = v6;
	t1 = monotonic_seconds();
	rep->plan_seconds = t1 - t0;
	/* The IPv6 plan, if any, plans the same ports again. */
	rep->ports_planned = store ? p->ports_planned[PLAN_V4] : p->desired.n_ports;
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
	/* The writer's encode keeps every core busy: warm's work is done. */
	if (p->warm) {
		rep->warm_bytes = warm_stop();
		p->warm = false;
	}
	r = backend_apply_families(p->backend, rs, rs2[PLAN_V6], &rep->apply, d);
	if (!store && p->c->sync_once) {
		/* Kept for pipeline_free(), or for the exit (pipeline_leave()). */
		ruleset_free(p->spent[PLAN_V4]);
		ruleset_free(p->spent[PLAN_V6]);
		p->spent[PLAN_V4] = rs;
		p->spent[PLAN_V6] = rs2[PLAN_V6];
	} else if (!store) { /* else the stores' plans */
		ruleset_free(rs);
		ruleset_free(rs2[PLAN_V6]);
	}
	if (r >= 0 && p->store[PLAN_V4] && !store)
		p->store_pending = true;
	if (r >= 0)
		p->synced = true;
	/* Stores still waiting for their first plan hold nothing yet. */
	rep->plan_store_bytes = p->store_pending ? 0
						 : plan_store_bytes(p->store[PLAN_V4]) +
							   plan_store_bytes(p->store[PLAN_V6]);
	rep->kept_bytes = backend_kept_bytes(p->backend);
	/* What the sync freed (the plan's and the writer's working copies:
	 * the first sync's are as large as the tables) goes back to the
	 * system instead of staying in malloc's free lists until the next. */
	if (!p->c->sync_once)
		malloc_trim(0);
	rep->total_seconds = monotonic_seconds() - t0;
	return r;
}

bool pipeline_store_pending(const struct pipeline *p)
{
	return p->store_pending;
}

int pipeline_store_warm(struct pipeline *p, size_t *ret_bytes)
{
	struct ruleset *rs2[PLAN_NFAMILIES] = { NULL };
	struct plan_stats st[PLAN_NFAMILIES] = { { 0 } };
	int r = 0;

	if (p->store_pending && p->backend) {
		/* The first sync said what these plans would say again. */
		r = plan_both(p, backend_has_ipv6(p->backend), true, rs2, st, NULL);
		p->store_pending = false;
		/* What planning freed (the full plan's working copies). */
		malloc_trim(0);
	}
	if (ret_bytes)
		*ret_bytes = plan_store_bytes(p->store[PLAN_V4]) + plan_store_bytes(p->store[PLAN_V6]);
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
