/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Incremental resolve: after every step of a long random (seeded, so
 * repeatable) sequence of changes through the merge engine -- services
 * added, changed and removed, slices added, moved between services and
 * removed, endpoints moved between nodes, traffic policies flipped -- and
 * of the node's addresses (its IPv4 and IPv6 node IPs, its local addresses,
 * --nodeport-addresses of both families), delta_resolve() from the previous
 * state equals resolve_build() of the new view, compared as resolve_dump()
 * prints them.  A node-address change resolves nothing again (no service's
 * resolved state depends on the node's addresses); the incremental plans
 * of both families (core/planstore.h, fed the same changes) equal fresh
 * plans of the full resolve, and re-plan at most the service ports that
 * read the node IP (load-balancer source ranges).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/chainname.h"
#include "core/delta.h"
#include "core/merge.h"
#include "core/plan.h"
#include "core/planstore.h"
#include "core/render.h"
#include "core/resolve.h"
#include "util.h"

#define N_SVC 24
#define N_EPS 40
#define STEPS 3000

#define RANDGEN_SEED 0x9e3779b97f4a7c15ULL
#include "randgen.h"

/* dual: services and slices of both families (the both-families run). */
static struct service *make_svc(unsigned i, bool dual)
{
	struct service *s = calloc(1, sizeof(*s));
	char name[32];
	unsigned n_ports = 1 + rnd(2), n_fam = dual && rnd(2) ? 2 : 1, t = rnd(6);
	bool v6first = dual && rnd(3) == 0;

	assert_non_null(s);
	snprintf(name, sizeof(name), "svc%u", i);
	s->refcnt = 1;
	s->origin = ORIGIN_K8S;
	s->ns = xstrdup(i % 3 ? "shop" : "ops");
	s->name = xstrdup(name);
	s->type = t < 3 ? SVC_CLUSTER_IP : t < 5 ? SVC_NODE_PORT : SVC_LOAD_BALANCER;
	s->headless = rnd(20) == 0;
	s->affinity_timeout = 10800;
	s->affinity_client_ip = rnd(5) == 0;
	s->ext_policy = rnd(2) ? POLICY_LOCAL : POLICY_CLUSTER;
	s->int_policy = rnd(4) ? POLICY_CLUSTER : POLICY_LOCAL;
	s->cluster_ips = calloc(2, sizeof(*s->cluster_ips));
	assert_non_null(s->cluster_ips);
	for (unsigned f = 0; f < n_fam; f++)
		set_ip(&s->cluster_ips[f], (f == 0) == v6first, rnd(2), i);
	s->n_cluster_ips = n_fam;
	if (s->type == SVC_LOAD_BALANCER) {
		s->lb_ingress = calloc(2, sizeof(*s->lb_ingress));
		assert_non_null(s->lb_ingress);
		s->n_lb_ingress = 1 + (dual && rnd(2));
		for (size_t k = 0; k < s->n_lb_ingress; k++)
			set_ip(&s->lb_ingress[k].ip, k == 1, 220, 1 + rnd(8));
		if (rnd(3)) {
			/* ranges that hold the node IPs (198.18.0.1-3, 2001:2::1-3)
			 * or not: the node IP is let in or not */
			s->lb_source_ranges = calloc(2, sizeof(*s->lb_source_ranges));
			assert_non_null(s->lb_source_ranges);
			s->n_lb_source_ranges = 1 + rnd(2);
			assert_int_equal(ipnet_parse(rnd(2) ? "198.18.0.0/31" : "198.18.0.2/31",
						     &s->lb_source_ranges[0]), 0);
			assert_int_equal(ipnet_parse(rnd(2) ? "2001:2::2/127" : "203.0.113.0/24",
						     &s->lb_source_ranges[1]), 0);
		}
		if (s->ext_policy == POLICY_LOCAL)
			s->health_check_node_port = (uint16_t)(32000 + i);
	}
	s->ports = calloc(n_ports, sizeof(*s->ports));
	assert_non_null(s->ports);
	for (unsigned j = 0; j < n_ports; j++) {
		s->ports[j].name = xstrdup(j ? "metrics" : rnd(2) ? "http" : "web");
		s->ports[j].protocol = rnd(4) ? PROTO_TCP : PROTO_UDP;
		s->ports[j].port = (uint16_t)(80 + j);
		s->ports[j].node_port = s->type != SVC_CLUSTER_IP ? (uint16_t)(30000 + i * 2 + j) : 0;
		s->ports[j].target_port = xstrdup("8080");
	}
	s->n_ports = n_ports;
	return s;
}

static struct epslice *make_eps(unsigned k, bool dual)
{
	struct epslice *e = calloc(1, sizeof(*e));
	static const char *const nodes[] = { "node-a", "node-b", "node-c" };
	unsigned svc = rnd(N_SVC), n_eps = rnd(5);
	bool v6 = dual && rnd(3) == 0;
	char name[32];

	assert_non_null(e);
	e->refcnt = 1;
	e->origin = ORIGIN_K8S;
	/* Slice k keeps its key (namespace, name) and may name any service:
	 * one of the other namespace names no service there, a case too. */
	e->ns = xstrdup(k % 3 ? "shop" : "ops");
	snprintf(name, sizeof(name), "eps%u", k);
	e->name = xstrdup(name);
	snprintf(name, sizeof(name), "svc%u", svc);
	e->service_name = xstrdup(name);
	e->family = v6 ? AF_INET6 : AF_INET;
	e->n_ports = 1 + rnd(2);
	e->ports = calloc(e->n_ports, sizeof(*e->ports));
	assert_non_null(e->ports);
	for (size_t j = 0; j < e->n_ports; j++) {
		e->ports[j].name = xstrdup(j ? "metrics" : rnd(2) ? "http" : "web");
		e->ports[j].protocol = rnd(4) ? PROTO_TCP : PROTO_UDP;
		e->ports[j].port = (uint16_t)(8080 + j);
	}
	e->endpoints = calloc(n_eps ? n_eps : 1, sizeof(*e->endpoints));
	assert_non_null(e->endpoints);
	for (unsigned j = 0; j < n_eps; j++) {
		struct epslice_endpoint *ep = &e->endpoints[j];

		set_ip(&ep->addr, v6, 64, 1 + rnd(12)); /* duplicates across slices too */
		ep->ready = rnd(6) != 0;
		ep->serving = ep->ready || rnd(2);
		ep->terminating = !ep->ready && rnd(2);
		ep->node_name = xstrdup(nodes[rnd(3)]);
		rand_hints(ep);
	}
	e->n_endpoints = n_eps;
	return e;
}

static char *dump(const struct desired *d)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	resolve_dump(d, f);
	assert_int_equal(fclose(f), 0);
	return buf;
}

/* The node's addresses, changed by node steps. */
struct node {
	struct ipaddr ips[2];   /* node IPs: IPv4 (198.18.0.1-3), IPv6 (2001:2::1-3) */
	struct ipaddr local[4]; /* local addresses */
	size_t n_local;
	struct ipnet np[2];     /* --nodeport-addresses */
	size_t n_np;
};

static void node_init(struct node *n)
{
	memset(n, 0, sizeof(*n));
	assert_int_equal(ipaddr_parse("198.18.0.1", &n->ips[0]), 0);
	assert_int_equal(ipaddr_parse("2001:2::1", &n->ips[1]), 0);
	n->local[0] = n->ips[0];
	n->local[1] = n->ips[1];
	n->n_local = 2;
}

/* One random change of the node's addresses; returns which families'
 * node IPs moved (bit 0 IPv4, bit 1 IPv6). */
static unsigned node_step(struct node *n)
{
	static const char *const cidrs[] = { "198.18.0.0/30", "198.18.0.2/31", "2001:2::/126",
					     "2001:2::2/127", "0.0.0.0/0" };
	unsigned moved = 0;

	switch (rnd(4)) {
	case 0: /* the IPv4 node IP moves */
	case 1: { /* the IPv6 one */
		unsigned f = rnd(2);
		struct ipaddr old = n->ips[f];

		n->ips[f].u.b[f ? 15 : 3] = (uint8_t)(1 + rnd(3));
		moved = ipaddr_cmp(&old, &n->ips[f]) ? 1u << f : 0;
		n->local[f] = n->ips[f];
		break;
	}
	case 2: /* local addresses of both families come and go */
		n->n_local = 2;
		for (unsigned k = 0; k < 2; k++)
			if (rnd(2)) {
				n->local[n->n_local] = n->ips[k];
				n->local[n->n_local++].u.b[k ? 15 : 3] = (uint8_t)(1 + rnd(3));
			}
		break;
	default: /* --nodeport-addresses */
		n->n_np = rnd(3);
		for (size_t k = 0; k < n->n_np; k++)
			assert_int_equal(ipnet_parse(cidrs[rnd(ARRAY_SIZE(cidrs))], &n->np[k]), 0);
		break;
	}
	return moved;
}

static void node_settings(const struct node *n, int family, bool dual, struct chain_hasher *h,
			  struct plan_settings *ps)
{
	plan_settings_init(ps);
	ps->family = family;
	ps->dual_stack = dual;
	ps->hostname = "node-a";
	ps->zone = "zone-a";
	ps->node_ips = (struct ipaddr *)(family == AF_INET6 ? &n->ips[1] : &n->ips[0]);
	ps->n_node_ips = 1;
	ps->local_addrs = (struct ipaddr *)n->local;
	ps->n_local_addrs = n->n_local;
	ps->nodeport_addresses = (struct ipnet *)n->np;
	ps->n_nodeport_addresses = n->n_np;
	ps->hasher = h;
}

static char *rs_text(const struct ruleset *rs)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(render_save(rs, RENDER_ALL, f), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static char *plan_text(const struct desired *d, const struct plan_settings *ps)
{
	struct ruleset *rs = NULL;
	char *buf;

	assert_int_equal(plan_build(d, ps, &rs, NULL, NULL), 0);
	buf = rs_text(rs);
	ruleset_free(rs);
	return buf;
}

/* Service ports whose plan may read the node IP: those with
 * load-balancer source ranges. */
static size_t reads_node_ip(const struct desired *d)
{
	size_t n = 0;

	for (size_t i = 0; i < d->n_ports; i++)
		n += d->ports[i].n_lb_source_ranges > 0;
	return n;
}

static void equivalence(int family)
{
	const bool dual = family == 0;
	const int fams[] = { AF_INET, AF_INET6 };
	struct chain_hasher *memo = chain_hasher_new_memo();
	struct plan_store *store[2] = { plan_store_new(), plan_store_new() };
	struct merge_snapshot *planned[2] = { NULL, NULL };
	struct node node;
	struct resolve_opts ro = { .hostname = "node-a", .family = family };
	struct merge *m = merge_new();
	struct merge_snapshot *prev = NULL;
	struct desired inc = { 0 };
	size_t rebuilt_total = 0, ports_total = 0, node_steps = 0, plans = 0, remembered = 0;
	int src;

	assert_non_null(m);
	assert_non_null(memo);
	assert_true(store[0] && store[1]);
	node_init(&node);
	src = merge_source_register(m, "random");
	assert_true(src >= 0);
	for (unsigned step = 0; step < STEPS; step++) {
		unsigned n_ops = 1 + (step % 17 == 0 ? rnd(6) : 0), moved = 0;
		struct desired full = { 0 }, next = { 0 };
		struct merge_changes ch;
		struct merge_snapshot *snap;
		struct diag_list dl;
		bool node_changed = false, objects_changed = false;
		char *a, *b;
		size_t rebuilt = 0;

		for (unsigned op = 0; op < n_ops; op++) {
			unsigned what = rnd(11);

			objects_changed |= what < 9;
			if (what < 3) { /* add or change a service (ports, policies, type) */
				struct service *s = make_svc(rnd(N_SVC), dual);

				assert_int_equal(merge_update(m, src, MERGE_ADD, &s, 1, NULL, 0), 0);
				service_unref(s);
			} else if (what < 4) {
				struct service *s = make_svc(rnd(N_SVC), dual);

				assert_int_equal(merge_update(m, src, MERGE_REMOVE, &s, 1, NULL, 0), 0);
				service_unref(s);
			} else if (what < 8) { /* a slice: new endpoints, nodes, or service */
				struct epslice *e = make_eps(rnd(N_EPS), dual);

				assert_int_equal(merge_update(m, src, MERGE_ADD, NULL, 0, &e, 1), 0);
				epslice_unref(e);
			} else if (what < 9) {
				struct epslice *e = make_eps(rnd(N_EPS), dual);

				assert_int_equal(merge_update(m, src, MERGE_REMOVE, NULL, 0, &e, 1), 0);
				epslice_unref(e);
			} else if (what < 10) { /* the node's addresses */
				moved |= node_step(&node);
				node_changed = true;
			} /* else: a step with no change */
		}
		assert_true(merge_flush(m) >= 0);
		snap = merge_snapshot_get(m);
		assert_non_null(snap);

		diag_list_init(&dl);
		assert_int_equal(resolve_build(snap, &ro, &full, &dl), 0);
		assert_int_equal(merge_snapshot_diff(prev, snap, &ch), 0);
		assert_int_equal(delta_resolve(&inc, snap, &ch, &ro, &next, &rebuilt, &dl), 0);
		merge_changes_done(&ch);
		diag_list_done(&dl);
		desired_free(&inc);
		inc = next;

		a = dump(&full);
		b = dump(&inc);
		if (strcmp(a, b) != 0)
			fail_msg("step %u: incremental differs from full:\n--- full\n%s--- incremental\n%s",
				 step, a, b);
		assert_int_equal(inc.n_ports, full.n_ports);
		assert_true(rebuilt <= full.n_ports);
		/* Nothing resolved depends on the node's addresses. */
		if (node_changed && !objects_changed && prev)
			assert_int_equal(rebuilt, 0);
		node_steps += node_changed && !objects_changed;
		rebuilt_total += rebuilt;
		ports_total += full.n_ports;
		free(a);
		free(b);
		if (node_changed || step % 7 == 0) {

			/* The plans of the incremental state, each family's kept
			 * between steps and fed what changed since it was made,
			 * equal fresh plans of the full resolve. */
			for (size_t f = 0; f < (dual ? 2u : 1u); f++) {
				struct plan_settings ps, fresh;
				struct plan_store_info info;

				node_settings(&node, fams[f], dual, f == 0 ? memo : NULL, &ps);
				node_settings(&node, fams[f], dual, NULL, &fresh);
				bool objects_same;

				assert_int_equal(merge_snapshot_diff(planned[f], snap, &ch), 0);
				assert_int_equal(plan_store_update(store[f], &inc, &ps,
								   planned[f] ? &ch : NULL, false, NULL,
								   &info, NULL), 0);
				/* no object changed since this store's last plan */
				objects_same = planned[f] && !ch.n_affected;
				merge_changes_done(&ch);
				merge_snapshot_unref(planned[f]);
				planned[f] = merge_snapshot_ref(snap);
				a = plan_text(&full, &fresh);
				b = rs_text(plan_store_ruleset(store[f]));
				if (strcmp(a, b) != 0)
					fail_msg("step %u: IPv%d: the incremental plan differs from a "
						 "fresh one:\n--- fresh\n%s--- incremental\n%s", step,
						 fams[f] == AF_INET ? 4 : 6, a, b);
				assert_non_null(strstr(a, ":KUBE-SERVICES"));
				/* After a change of the node's addresses alone, only
				 * the ports that read a moved node IP are planned again
				 * (unless the store planned everything). */
				if (node_changed && objects_same && !info.full)
					assert_true(info.ports_planned <=
						    (moved & (1u << f) ? reads_node_ip(&full) : 0));
				plans++;
				free(a);
				free(b);
			}
			if (chain_hasher_remembered(memo) > remembered)
				remembered = chain_hasher_remembered(memo);
		}
		desired_free(&full);
		merge_snapshot_unref(prev);
		prev = snap;
	}
	/* The point of it: most service ports were taken over, not rebuilt. */
	assert_true(ports_total > 10 * (size_t)STEPS);
	assert_true(rebuilt_total * 4 < ports_total);
	assert_true(node_steps > STEPS / 20);
	assert_true(plans > STEPS / 7);
	assert_true(remembered > 0); /* the IPv4 plans kept chain names */
	desired_free(&inc);
	merge_snapshot_unref(prev);
	merge_snapshot_unref(planned[0]);
	merge_snapshot_unref(planned[1]);
	plan_store_free(store[0]);
	plan_store_free(store[1]);
	merge_free(m);
	chain_hasher_free(memo);
}

static void test_equivalence(void **state)
{
	(void)state;
	equivalence(AF_INET);
	equivalence(0); /* both families, as the daemon resolves */
}

/* A state of nothing, changes "all", an empty diff. */
static void test_edges(void **state)
{
	struct resolve_opts ro = { .hostname = "node-a", .family = AF_INET };
	struct merge *m = merge_new();
	struct merge_snapshot *s1, *s2;
	struct desired d0 = { 0 }, d1 = { 0 }, d2 = { 0 };
	struct merge_changes ch;
	struct service *s;
	size_t rebuilt = 99;
	int src;

	(void)state;
	src = merge_source_register(m, "x");
	s = make_svc(1, false);
	assert_int_equal(merge_update(m, src, MERGE_SET, &s, 1, NULL, 0), 0);
	service_unref(s);
	assert_int_equal(merge_flush(m), 1);
	s1 = merge_snapshot_get(m);
	assert_int_equal(merge_snapshot_diff(NULL, s1, &ch), 0);
	assert_int_equal(delta_resolve(&d0, s1, &ch, &ro, &d1, &rebuilt, NULL), 0);
	assert_int_equal(rebuilt, d1.n_ports);
	assert_true(d1.n_ports >= 1);
	merge_changes_done(&ch);
	s2 = merge_snapshot_get(m);
	assert_int_equal(merge_snapshot_diff(s1, s2, &ch), 0);
	assert_int_equal(delta_resolve(&d1, s2, &ch, &ro, &d2, &rebuilt, NULL), 0);
	assert_int_equal(rebuilt, 0);
	assert_int_equal(d2.n_ports, d1.n_ports);
	assert_null(d1.ports[0].key); /* moved out */
	assert_non_null(d2.ports[0].key);
	merge_changes_done(&ch);
	assert_int_equal(delta_resolve(NULL, s2, &ch, &ro, &d2, NULL, NULL), -EINVAL);
	desired_free(&d0);
	desired_free(&d1);
	desired_free(&d2);
	merge_snapshot_unref(s1);
	merge_snapshot_unref(s2);
	merge_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_equivalence),
		cmocka_unit_test(test_edges),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
