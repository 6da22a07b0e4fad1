/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Incremental resolve: after every step of a long random (seeded, so
 * repeatable) sequence of changes through the merge engine -- services
 * added, changed and removed, slices added, moved between services and
 * removed, endpoints moved between nodes, traffic policies flipped --
 * delta_resolve() from the previous state equals resolve_build() of the
 * new view, compared as resolve_dump() prints them.
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
#include "core/render.h"
#include "core/resolve.h"
#include "util.h"

#define N_SVC 24
#define N_EPS 40
#define STEPS 3000

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static unsigned rnd(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng % n);
}

static char *xstrdup(const char *s)
{
	char *r = strdup(s);

	assert_non_null(r);
	return r;
}

static struct service *make_svc(unsigned i)
{
	struct service *s = calloc(1, sizeof(*s));
	char name[32];
	unsigned n_ports = 1 + rnd(2);

	assert_non_null(s);
	snprintf(name, sizeof(name), "svc%u", i);
	s->refcnt = 1;
	s->origin = ORIGIN_K8S;
	s->ns = xstrdup(i % 3 ? "shop" : "ops");
	s->name = xstrdup(name);
	s->type = rnd(3) ? SVC_CLUSTER_IP : SVC_NODE_PORT;
	s->headless = rnd(20) == 0;
	s->affinity_timeout = 10800;
	s->affinity_client_ip = rnd(5) == 0;
	s->ext_policy = rnd(2) ? POLICY_LOCAL : POLICY_CLUSTER;
	s->int_policy = rnd(4) ? POLICY_CLUSTER : POLICY_LOCAL;
	s->cluster_ips = calloc(1, sizeof(*s->cluster_ips));
	assert_non_null(s->cluster_ips);
	assert_int_equal(ipaddr_parse(rnd(2) ? "198.19.0.10" : "198.19.1.20", &s->cluster_ips[0]), 0);
	s->cluster_ips[0].u.b[3] = (uint8_t)i;
	s->n_cluster_ips = 1;
	s->ports = calloc(n_ports, sizeof(*s->ports));
	assert_non_null(s->ports);
	for (unsigned j = 0; j < n_ports; j++) {
		s->ports[j].name = xstrdup(j ? "metrics" : rnd(2) ? "http" : "web");
		s->ports[j].protocol = rnd(4) ? PROTO_TCP : PROTO_UDP;
		s->ports[j].port = (uint16_t)(80 + j);
		s->ports[j].node_port = s->type == SVC_NODE_PORT ? (uint16_t)(30000 + i * 2 + j) : 0;
		s->ports[j].target_port = xstrdup("8080");
	}
	s->n_ports = n_ports;
	return s;
}

static struct epslice *make_eps(unsigned k)
{
	struct epslice *e = calloc(1, sizeof(*e));
	static const char *const nodes[] = { "node-a", "node-b", "node-c" };
	unsigned svc = rnd(N_SVC), n_eps = rnd(5);
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
	e->family = AF_INET;
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

		assert_int_equal(ipaddr_parse("198.18.64.0", &ep->addr), 0);
		ep->addr.u.b[3] = (uint8_t)(1 + rnd(12)); /* duplicates across slices too */
		ep->ready = rnd(6) != 0;
		ep->serving = ep->ready || rnd(2);
		ep->terminating = !ep->ready && rnd(2);
		ep->node_name = xstrdup(nodes[rnd(3)]);
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

static char *plan_text(const struct desired *d, struct chain_hasher *h, const struct ipaddr *node)
{
	struct plan_settings ps;
	struct ruleset *rs = NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	plan_settings_init(&ps);
	ps.hostname = "node-a";
	ps.node_ips = (struct ipaddr *)node;
	ps.n_node_ips = 1;
	ps.local_addrs = (struct ipaddr *)node;
	ps.n_local_addrs = 1;
	ps.hasher = h;
	assert_int_equal(plan_build(d, &ps, &rs, NULL, NULL), 0);
	f = open_memstream(&buf, &len);
	assert_non_null(f);
	assert_int_equal(render_save(rs, RENDER_ALL, f), 0);
	assert_int_equal(fclose(f), 0);
	ruleset_free(rs);
	return buf;
}

static void equivalence(int family)
{
	struct chain_hasher *memo = chain_hasher_new_memo();
	struct ipaddr node;
	struct resolve_opts ro = { .hostname = "node-a", .family = family };
	struct merge *m = merge_new();
	struct merge_snapshot *prev = NULL;
	struct desired inc = { 0 };
	size_t rebuilt_total = 0, ports_total = 0;
	int src;

	assert_non_null(m);
	assert_non_null(memo);
	assert_int_equal(ipaddr_parse("198.18.0.1", &node), 0);
	src = merge_source_register(m, "random");
	assert_true(src >= 0);
	for (unsigned step = 0; step < STEPS; step++) {
		unsigned n_ops = 1 + (step % 17 == 0 ? rnd(6) : 0);
		struct desired full = { 0 }, next = { 0 };
		struct merge_changes ch;
		struct merge_snapshot *snap;
		struct diag_list dl;
		char *a, *b;
		size_t rebuilt = 0;

		for (unsigned op = 0; op < n_ops; op++) {
			unsigned what = rnd(10);

			if (what < 3) { /* add or change a service (ports, policies, type) */
				struct service *s = make_svc(rnd(N_SVC));

				assert_int_equal(merge_update(m, src, MERGE_ADD, &s, 1, NULL, 0), 0);
				service_unref(s);
			} else if (what < 4) {
				struct service *s = make_svc(rnd(N_SVC));

				assert_int_equal(merge_update(m, src, MERGE_REMOVE, &s, 1, NULL, 0), 0);
				service_unref(s);
			} else if (what < 8) { /* a slice: new endpoints, nodes, or service */
				struct epslice *e = make_eps(rnd(N_EPS));

				assert_int_equal(merge_update(m, src, MERGE_ADD, NULL, 0, &e, 1), 0);
				epslice_unref(e);
			} else if (what < 9) {
				struct epslice *e = make_eps(rnd(N_EPS));

				assert_int_equal(merge_update(m, src, MERGE_REMOVE, NULL, 0, &e, 1), 0);
				epslice_unref(e);
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
		rebuilt_total += rebuilt;
		ports_total += full.n_ports;
		free(a);
		free(b);
		if (family == AF_INET && step % 7 == 0) {
			/* The planner with names kept between plans (the daemon's)
			 * plans as a fresh one; the node's address moves too. */
			node.u.b[3] = (uint8_t)(1 + rnd(3));
			a = plan_text(&full, NULL, &node);
			b = plan_text(&inc, memo, &node);
			if (strcmp(a, b) != 0)
				fail_msg("step %u: the plan with a memo differs", step);
			assert_non_null(strstr(a, ":KUBE-SERVICES"));
			assert_true(chain_hasher_remembered(memo) > 0);
			free(a);
			free(b);
		}
		desired_free(&full);
		merge_snapshot_unref(prev);
		prev = snap;
	}
	/* The point of it: most service ports were taken over, not rebuilt. */
	assert_true(ports_total > 10 * (size_t)STEPS);
	assert_true(rebuilt_total * 4 < ports_total);
	desired_free(&inc);
	merge_snapshot_unref(prev);
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
	s = make_svc(1);
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
