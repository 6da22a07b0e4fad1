/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The layout follows kube-proxy's iptables proxier (syncProxyRules,
 * writeServiceToEndpointRules, iptablesJumpChains) and its endpoint
 * selection (proxy.CategorizeEndpoints).  Everything a service port needs is
 * written by plan_port() (planport.c), which reads only the
 * settings-derived context and that port, so the plan store
 * (planstore.c) can keep its output per service port.
 */
#include "core/planint.h"

void plan_settings_init(struct plan_settings *s)
{
	memset(s, 0, sizeof(*s));
	s->family = AF_INET;
	s->localhost_nodeports = true;
	s->masquerade_bit = 14;
	s->random_fully = true;
	s->large_cluster_threshold = 1000;
	s->compact_endpoints_threshold = 250000;
	s->dispatch = DISPATCH_AUTO;
	s->dispatch_threshold = PLAN_DISPATCH_THRESHOLD;
	s->dispatch_leaf_max = 32;
}

int plan_setup_ctx(struct plan_ctx *c, const struct desired *d)
{
	const struct plan_settings *s = c->s;
	size_t total = 0;
	int e;

	c->masq_mark = 1u << s->masquerade_bit;
	c->node_ip = first_of_family(s->node_ips, s->n_node_ips, s->family);

	e = plan_setup_detector(c);
	if (e < 0)
		return e;

	c->localhost_nodeports = plan_localhost_nodeports(s);

	for (size_t i = 0; i < d->n_ports; i++) {
		const struct svc_port *sp = &d->ports[i];

		if (sp->skipped || !first_of_family(sp->cluster_ips, sp->n_cluster_ips, s->family))
			continue;
		total += count_family_eps(sp, s->family);
	}
	c->large_cluster = total > s->large_cluster_threshold;
	c->compact = s->compact_endpoints_threshold && total > s->compact_endpoints_threshold;
	return 0;
}

static int write_dispatch(struct plan_ctx *c, struct dispatch_stats *st)
{
	const struct dispatch_params p = {
		.mode = c->s->dispatch,
		.threshold = c->s->dispatch_threshold,
		.leaf_max = c->s->dispatch_leaf_max,
	};

	for (size_t i = 0; i < PLAN_N_DISPATCHED; i++) {
		int e = dispatch_chain(c->rs, c->hasher, plan_dispatched[i].table, plan_dispatched[i].name,
				       &p, st);

		if (e < 0)
			return e;
	}
	return 0;
}

bool plan_same_port(const struct svc_port *a, const struct svc_port *b)
{
	return a->key && b->key && streq(a->key, b->key) && a->protocol == b->protocol;
}


/* The plan's chains and rules into c->rs, dispatch trees included. */
static int plan_all(struct plan_ctx *c, const struct desired *d, struct dispatch_stats *dst)
{
	int e;

	e = plan_setup_ctx(c, d);
	if (e < 0)
		return e;
	e = plan_fixed_chains(c);
	if (e < 0)
		return e;
	/* The nat chain index sized once, not grown a dozen times (about a
	 * KUBE-SVC- chain per port and a KUBE-SEP- per endpoint). */
	{
		size_t n = d->n_ports;

		for (size_t i = 0; i < d->n_ports; i++)
			n += d->ports[i].n_endpoints;
		if (ruleset_reserve(c->rs, RS_NAT, n, true) < 0)
			return -ENOMEM;
	}
	for (size_t i = 0; i < d->n_ports; i++) {
		const struct svc_port *sp = &d->ports[i];

		/* Ports are sorted by (key, protocol): a repeat is adjacent. */
		if (i > 0 && plan_same_port(sp, &d->ports[i - 1])) {
			e = c->diags ? diag_add(c->diags, DIAG_ERROR, NULL, sp->key, NULL,
						"service port defined twice; the first is used")
				     : 0;
			if (e < 0)
				return e;
			continue;
		}
		e = plan_port(c, sp);
		if (e < 0)
			return e;
	}
	e = plan_nodeports_jump(c);
	if (e < 0)
		return e;
	return write_dispatch(c, dst);
}

static void fill_stats(const struct plan_ctx *c, const struct dispatch_stats *dst,
		       struct plan_stats *stats)
{
	stats->services = c->n_ports;
	stats->endpoints = c->n_seps;
	stats->no_local_internal = c->no_local_internal;
	stats->no_local_external = c->no_local_external;
	stats->chains = stats->rules = 0;
	for (size_t t = 0; t < RS_NTABLES; t++) {
		stats->table_chains[t] = stats->table_rules[t] = 0;
		for (size_t i = 0; i < c->rs->t[t].n; i++) {
			stats->table_chains[t] += !c->rs->t[t].chains[i]->builtin;
			stats->table_rules[t] += c->rs->t[t].chains[i]->n_rules;
		}
		stats->chains += stats->table_chains[t];
		stats->rules += stats->table_rules[t];
	}
	stats->dispatch_chains = dst->chains;
	stats->dispatch_trees = dst->trees;
}

/* What plan_build() allocates: the hasher only when it made it. */
static void build_done(struct plan_ctx *c)
{
	ruleset_free(c->rs);
	if (c->hasher != c->s->hasher)
		chain_hasher_free(c->hasher);
	free(c->eps);
}

int plan_build(const struct desired *d, const struct plan_settings *s,
	       struct ruleset **ret, struct plan_stats *stats, struct diag_list *diags)
{
	_cleanup_(build_done) struct plan_ctx c = { .s = s, .diags = diags };
	struct dispatch_stats dst = { 0 };
	int e;

	if (s->masquerade_bit > 31 || (s->family != AF_INET && s->family != AF_INET6) ||
	    !s->dispatch_leaf_max)
		return -EINVAL;
	c.rs = ruleset_new();
	c.hasher = s->hasher ? s->hasher : chain_hasher_new();
	if (!c.rs || !c.hasher)
		return -ENOMEM;
	e = plan_all(&c, d, &dst);
	if (e < 0)
		return e;

	if (s->family == AF_INET6)
		for (size_t t = 0; t < RS_NTABLES; t++)
			for (size_t i = 0; i < c.rs->t[t].n; i++)
				plan_mark_ipv6(c.rs->t[t].chains[i]->rules,
					       c.rs->t[t].chains[i]->n_rules);
	ruleset_sort(c.rs);
	if (stats)
		fill_stats(&c, &dst, stats);
	*ret = TAKE_PTR(c.rs);
	if (s->hasher)
		chain_hasher_sweep(s->hasher); /* forget the names of ports gone */
	return 0;
}
