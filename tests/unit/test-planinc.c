/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The plan store (core/planstore.h): after every step of a long random
 * (seeded, so repeatable) sequence of changes through the merge engine and
 * the incremental resolve -- services added, changed (type, policies,
 * affinity, external and load-balancer IPs, source ranges) and removed,
 * slices added, moved and removed, endpoints moved between nodes, the
 * node's addresses changed, the dispatch tree on and off -- the store's
 * plan equals plan_build() of the same state rule for rule, and the
 * content stamps keep their contract: a chain with the stamp it had in
 * the previous step has the rules it had then.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/delta.h"
#include "core/merge.h"
#include "core/plan.h"
#include "core/planstore.h"
#include "core/render.h"
#include "core/resolve.h"
#include "util.h"

#define N_SVC 30
#define N_EPS 50
#define STEPS 1500

#include "randgen.h"

static struct service *make_svc(unsigned i, bool dual)
{
	static const enum svc_type types[] = { SVC_CLUSTER_IP, SVC_CLUSTER_IP, SVC_NODE_PORT,
					       SVC_LOAD_BALANCER };
	struct service *s = calloc(1, sizeof(*s));
	unsigned n_ports = 1 + rnd(2), n_fam = dual && rnd(2) ? 2 : 1;
	bool v6first = dual && rnd(3) == 0;
	char name[32];

	assert_non_null(s);
	snprintf(name, sizeof(name), "svc%u", i);
	s->refcnt = 1;
	s->origin = ORIGIN_K8S;
	s->ns = xstrdup(i % 3 ? "shop" : "ops");
	s->name = xstrdup(name);
	s->type = types[rnd(4)];
	s->headless = rnd(25) == 0;
	s->affinity_timeout = 10800;
	s->affinity_client_ip = rnd(5) == 0;
	s->ext_policy = rnd(2) ? POLICY_LOCAL : POLICY_CLUSTER;
	s->int_policy = rnd(4) ? POLICY_CLUSTER : POLICY_LOCAL;
	s->cluster_ips = calloc(2, sizeof(*s->cluster_ips));
	assert_non_null(s->cluster_ips);
	for (unsigned f = 0; f < n_fam; f++)
		set_ip(&s->cluster_ips[f], (f == 0) == v6first, 200 + rnd(2), i + 1);
	s->n_cluster_ips = n_fam;
	if (rnd(3) == 0) {
		s->external_ips = calloc(2, sizeof(*s->external_ips));
		assert_non_null(s->external_ips);
		s->n_external_ips = 1 + (dual && rnd(2));
		for (size_t k = 0; k < s->n_external_ips; k++)
			set_ip(&s->external_ips[k], k == 1, 210, 1 + rnd(8));
	}
	if (s->type == SVC_LOAD_BALANCER) {
		s->lb_ingress = calloc(2, sizeof(*s->lb_ingress));
		assert_non_null(s->lb_ingress);
		s->n_lb_ingress = 1 + (dual && rnd(2));
		for (size_t k = 0; k < s->n_lb_ingress; k++)
			set_ip(&s->lb_ingress[k].ip, k == 1, 220, 1 + rnd(8));
		if (rnd(2)) {
			s->lb_source_ranges = calloc(2, sizeof(*s->lb_source_ranges));
			assert_non_null(s->lb_source_ranges);
			s->n_lb_source_ranges = 1 + rnd(2);
			/* the node's IP moves in and out of 198.19.0.2/31 */
			assert_int_equal(ipnet_parse(rnd(2) ? "198.18.0.0/24" : "198.19.0.2/31",
						     &s->lb_source_ranges[0]), 0);
			assert_int_equal(ipnet_parse(rnd(2) ? "203.0.113.0/24" : "2001:2::/64",
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
		/* sometimes another service's node port: its external IP rule
		 * then sorts into the tree's port subtree after that rule */
		s->ports[j].port = rnd(6) ? (uint16_t)(80 + j) : (uint16_t)(30000 + rnd(N_SVC) * 2);
		s->ports[j].node_port = s->type != SVC_CLUSTER_IP ? (uint16_t)(30000 + i * 2 + j) : 0;
		s->ports[j].target_port = xstrdup("8080");
	}
	s->n_ports = n_ports;
	return s;
}

static struct epslice *make_eps(unsigned k, bool dual)
{
	static const char *const nodes[] = { "node-a", "node-b", "node-c" };
	struct epslice *e = calloc(1, sizeof(*e));
	unsigned svc = rnd(N_SVC), n_eps = rnd(6);
	bool v6 = dual && rnd(3) == 0;
	char name[32];

	assert_non_null(e);
	e->refcnt = 1;
	e->origin = ORIGIN_K8S;
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

		set_ip(&ep->addr, v6, 64, 1 + rnd(14));
		ep->ready = rnd(6) != 0;
		ep->serving = ep->ready || rnd(2);
		ep->terminating = !ep->ready && rnd(2);
		ep->node_name = xstrdup(nodes[rnd(3)]);
		rand_hints(ep);
	}
	e->n_endpoints = n_eps;
	return e;
}

static char *text(const struct ruleset *rs)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(render_save(rs, RENDER_ALL, f), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

/* The node's addresses and the settings that change during a run. */
struct node {
	struct ipaddr ips[2];
	struct ipaddr local[4];
	size_t n_local;
	struct ipnet cidrs[2];
	struct ipnet np[2];
	size_t n_np;
	enum dispatch_mode dispatch;
	const char *hostname, *zone; /* which endpoints' node and zone hints are this node's */
};

static void node_settings(const struct node *n, int family, bool dual, struct plan_settings *ps)
{
	plan_settings_init(ps);
	ps->family = family;
	ps->dual_stack = dual;
	ps->hostname = n->hostname;
	ps->zone = n->zone;
	ps->node_ips = (struct ipaddr *)n->ips;
	ps->n_node_ips = dual ? 2 : 1;
	ps->local_addrs = (struct ipaddr *)n->local;
	ps->n_local_addrs = n->n_local;
	ps->cluster_cidrs = (struct ipnet *)n->cidrs;
	ps->n_cluster_cidrs = dual ? 2 : 1;
	ps->nodeport_addresses = (struct ipnet *)n->np;
	ps->n_nodeport_addresses = n->n_np;
	ps->dispatch = n->dispatch;
	ps->dispatch_leaf_max = 3;
	ps->dispatch_threshold = 20;
	/* The nfacct counters come and go with the number of local
	 * addresses (no draw of its own: the random sequence stays). */
	ps->nfacct = n->n_local % 2 ? PLAN_NFACCT_ALL : 0;
	/* Both layout switches flip during the run. */
	ps->large_cluster_threshold = 10;
	ps->compact_endpoints_threshold = 16;
}

static void node_change(struct node *n)
{
	unsigned what = rnd(5);

	if (what == 4) {
		static const char *const names[] = { "node-a", "node-b", "node-c" };
		static const char *const zones[] = { "zone-a", "zone-b", NULL };

		n->hostname = names[rnd(3)];
		n->zone = zones[rnd(3)];
	} else if (what == 0) {
		set_ip(&n->ips[0], false, 0, 1 + rnd(3));
		n->local[0] = n->ips[0];
	} else if (what == 1) {
		n->n_local = 1 + rnd(4);
		for (size_t i = 1; i < n->n_local; i++)
			set_ip(&n->local[i], i % 2, 1, 1 + rnd(4));
	} else if (what == 2) {
		n->n_np = rnd(3);
		assert_int_equal(ipnet_parse(rnd(2) ? "198.19.1.0/24" : "127.0.0.0/8", &n->np[0]), 0);
		assert_int_equal(ipnet_parse("2001:2::1:0/112", &n->np[1]), 0);
	} else {
		static const enum dispatch_mode modes[] = { DISPATCH_AUTO, DISPATCH_LINEAR,
							    DISPATCH_TREE };

		n->dispatch = modes[rnd(3)];
	}
}

/*
 * Every chain with the stamp it had in the previous step (*prev, a copy of
 * that plan) has the rules it had then; *prev becomes a copy of rs.
 */
static void check_stamps(const struct ruleset *rs, struct ruleset **prev, size_t *reused,
			 size_t *total)
{
	struct ruleset *copy = ruleset_new();

	assert_non_null(copy);
	for (size_t t = 0; t < RS_NTABLES; t++) {
		for (size_t i = 0; i < rs->t[t].n; i++) {
			const struct rs_chain *c = rs->t[t].chains[i];
			const struct rs_chain *o =
				*prev ? ruleset_find_chain(*prev, (enum rs_table)t, c->name) : NULL;

			assert_true(c->stamp != 0);
			++*total;
			if (o && o->stamp == c->stamp) {
				if (!rs_chain_equal(o, c))
					fail_msg("%s: the same stamp, other rules", c->name);
				++*reused;
			}
			assert_non_null(ruleset_copy_chain(copy, c));
		}
	}
	ruleset_free(*prev);
	*prev = copy;
}

/* The store's byte count covers at least its chains and their rules, and
 * the kept rule arrays have no spare room. */
static void check_bytes(const struct plan_store *st)
{
	const struct ruleset *rs = plan_store_ruleset(st);
	size_t least = 0;

	for (size_t t = 0; t < RS_NTABLES; t++) {
		for (size_t i = 0; i < rs->t[t].n; i++) {
			const struct rs_chain *c = rs->t[t].chains[i];

			assert_int_equal(c->cap_rules, c->n_rules);
			least += sizeof(*c) + c->n_rules * sizeof(*c->rules);
		}
	}
	assert_true(ruleset_bytes(rs) >= least);
	assert_true(plan_store_bytes(st) > ruleset_bytes(rs));
}

static void equivalence(bool dual, uint64_t seed)
{
	struct resolve_opts ro = { .hostname = "node-a", .family = dual ? 0 : AF_INET };
	struct plan_store *store[2] = { plan_store_new(), plan_store_new() };
	struct ruleset *kept[2] = { NULL, NULL };
	size_t compact = 0, trees = 0, reused = 0, chains = 0, planned = 0, ports = 0;
	struct merge *m = merge_new();
	struct merge_snapshot *prev = NULL, *planned_from = NULL;
	struct desired inc = { 0 };
	struct node node = { .n_local = 1, .dispatch = DISPATCH_AUTO, .hostname = "node-a",
			     .zone = "zone-a" };
	int src;

	rng = seed;
	assert_non_null(m);
	assert_non_null(store[0]);
	assert_non_null(store[1]);
	set_ip(&node.ips[0], false, 0, 1);
	set_ip(&node.ips[1], true, 0, 1);
	node.local[0] = node.ips[0];
	assert_int_equal(ipnet_parse("198.18.64.0/18", &node.cidrs[0]), 0);
	assert_int_equal(ipnet_parse("2001:2::40:0/112", &node.cidrs[1]), 0);
	src = merge_source_register(m, "random");
	assert_true(src >= 0);
	for (unsigned step = 0; step < STEPS; step++) {
		unsigned n_ops = 1 + (step % 13 == 0 ? rnd(8) : 0);
		struct merge_changes ch = { 0 };
		struct merge_snapshot *snap;
		struct desired next = { 0 };
		struct diag_list dl;

		for (unsigned op = 0; op < n_ops; op++) {
			unsigned what = rnd(12);

			if (what < 3) {
				struct service *s = make_svc(rnd(N_SVC), dual);

				assert_int_equal(merge_update(m, src, MERGE_ADD, &s, 1, NULL, 0), 0);
				service_unref(s);
			} else if (what < 4) {
				struct service *s = make_svc(rnd(N_SVC), dual);

				assert_int_equal(merge_update(m, src, MERGE_REMOVE, &s, 1, NULL, 0), 0);
				service_unref(s);
			} else if (what < 9) {
				struct epslice *e = make_eps(rnd(N_EPS), dual);

				assert_int_equal(merge_update(m, src, MERGE_ADD, NULL, 0, &e, 1), 0);
				epslice_unref(e);
			} else if (what < 10) {
				struct epslice *e = make_eps(rnd(N_EPS), dual);

				assert_int_equal(merge_update(m, src, MERGE_REMOVE, NULL, 0, &e, 1), 0);
				epslice_unref(e);
			} else if (what < 11) {
				node_change(&node);
			} /* else: a step with no change */
		}
		assert_true(merge_flush(m) >= 0);
		snap = merge_snapshot_get(m);
		assert_non_null(snap);
		diag_list_init(&dl);
		assert_int_equal(merge_snapshot_diff(prev, snap, &ch), 0);
		assert_int_equal(delta_resolve(&inc, snap, &ch, &ro, &next, NULL, &dl), 0);
		merge_changes_done(&ch);
		desired_free(&inc);
		inc = next;
		merge_snapshot_unref(prev);
		prev = snap;

		/* What changed since the store's last plan (the daemon's way). */
		assert_int_equal(merge_snapshot_diff(planned_from, snap, &ch), 0);
		for (int f = 0; f < (dual ? 2 : 1); f++) {
			struct plan_settings ps;
			struct plan_store_info info;
			struct plan_stats st_full = { 0 }, st_inc = { 0 };
			struct ruleset *full = NULL;
			bool check = step % 97 == 0;
			char *a, *b;

			node_settings(&node, f ? AF_INET6 : AF_INET, dual, &ps);
			assert_int_equal(plan_build(&inc, &ps, &full, &st_full, NULL), 0);
			assert_int_equal(plan_store_update(store[f], &inc, &ps, &ch, check, &st_inc,
							   &info, &dl), 0);
			assert_int_equal(info.mismatched, 0);
			a = text(full);
			b = text(plan_store_ruleset(store[f]));
			if (strcmp(a, b) != 0)
				fail_msg("step %u IPv%d: the store's plan differs from a full one:\n"
					 "--- full\n%s--- store\n%s", step, f ? 6 : 4, a, b);
			assert_memory_equal(&st_full, &st_inc, sizeof(st_full));
			check_stamps(plan_store_ruleset(store[f]), &kept[f], &reused, &chains);
			check_bytes(store[f]);
			trees += st_full.dispatch_trees > 0;
			compact += strstr(a, ":KUBE-SVC-") && !strstr(a, ":KUBE-SEP-");
			planned += info.ports_planned;
			ports += inc.n_ports;
			free(a);
			free(b);
			ruleset_free(full);
		}
		merge_changes_done(&ch);
		diag_list_done(&dl);
		merge_snapshot_unref(planned_from);
		planned_from = merge_snapshot_ref(snap);
	}
	/* Most chains kept their stamps from step to step; the tree was
	 * planned often. */
	assert_true(reused * 2 > chains);
	assert_true(trees > STEPS / 4);
	assert_true(compact > 10);
	printf("# %s: %zu of %zu chains kept their stamp; %zu of %zu service ports planned "
	       "anew; %zu plans with a dispatch tree, %zu compact\n",
	       dual ? "dual-stack" : "IPv4", reused, chains, planned, ports, trees, compact);
	for (int f = 0; f < 2; f++) {
		ruleset_free(kept[f]);
		plan_store_free(store[f]);
	}
	desired_free(&inc);
	merge_snapshot_unref(prev);
	merge_snapshot_unref(planned_from);
	merge_free(m);
}

/* plan_store_bytes() grows with the services planned and shrinks when
 * they go. */
static void test_bytes(void **state)
{
	struct resolve_opts ro = { .hostname = "node-a", .family = AF_INET };
	struct plan_store *st = plan_store_new();
	struct merge *m = merge_new();
	struct node node = { .n_local = 1, .dispatch = DISPATCH_AUTO, .hostname = "node-a",
			     .zone = "zone-a" };
	size_t bytes[3];
	int src;

	(void)state;
	rng = 7;
	assert_non_null(st);
	assert_non_null(m);
	assert_int_equal(plan_store_bytes(NULL), 0);
	set_ip(&node.ips[0], false, 0, 1);
	node.local[0] = node.ips[0];
	assert_int_equal(ipnet_parse("198.18.64.0/18", &node.cidrs[0]), 0);
	src = merge_source_register(m, "all");
	assert_true(src >= 0);
	for (int phase = 0; phase < 3; phase++) {
		struct plan_settings ps;
		struct merge_snapshot *snap;
		struct desired d = { 0 };
		struct diag_list dl;

		/* 0: every service and slice; 1: the slices gone; 2: all gone */
		for (unsigned i = 0; i < N_SVC && phase != 1; i++) {
			struct service *s = make_svc(i, false);

			assert_int_equal(merge_update(m, src, phase ? MERGE_REMOVE : MERGE_ADD, &s, 1,
						      NULL, 0), 0);
			service_unref(s);
		}
		for (unsigned k = 0; k < N_EPS && phase != 2; k++) {
			struct epslice *e = make_eps(k, false);

			assert_int_equal(merge_update(m, src, phase ? MERGE_REMOVE : MERGE_ADD, NULL,
						      0, &e, 1), 0);
			epslice_unref(e);
		}
		assert_true(merge_flush(m) >= 0);
		snap = merge_snapshot_get(m);
		assert_non_null(snap);
		diag_list_init(&dl);
		assert_int_equal(resolve_build(snap, &ro, &d, &dl), 0);
		node_settings(&node, AF_INET, false, &ps);
		assert_int_equal(plan_store_update(st, &d, &ps, NULL, false, NULL, NULL, &dl), 0);
		check_bytes(st);
		bytes[phase] = plan_store_bytes(st);
		desired_free(&d);
		diag_list_done(&dl);
		merge_snapshot_unref(snap);
	}
	printf("# plan store: %zu bytes with %u services, %zu without slices, %zu empty\n",
	       bytes[0], N_SVC, bytes[1], bytes[2]);
	assert_true(bytes[0] > bytes[1]);
	assert_true(bytes[1] > bytes[2]);
	plan_store_free(st);
	merge_free(m);
}

static void test_equivalence_ipv4(void **state)
{
	(void)state;
	equivalence(false, 0x9e3779b97f4a7c15ULL);
}

static void test_equivalence_dual(void **state)
{
	(void)state;
	equivalence(true, 0x2545f4914f6cdd1dULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bytes),
		cmocka_unit_test(test_equivalence_ipv4),
		cmocka_unit_test(test_equivalence_dual),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
