/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daemon's ready gate (daemon/gate.h), without a kernel: when a sync may
 * start, when /healthz and /livez flip, when READY=1 is due, over fake
 * sources (a --config file and a network source) and the real sync policy.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "daemon/gate.h"

#define S 1000000ull /* one second in usec */

struct fake {
	struct source base; /* first */
	bool ready;
};

static bool fake_ready(const struct source *s)
{
	return ((const struct fake *)s)->ready;
}

static void fake_free(struct source *s)
{
	free(s);
}

static const struct source_ops file_ops = {
	.kind = "file", .gates_health = true, .ready = fake_ready, .free = fake_free,
};
static const struct source_ops net_ops = {
	.kind = "etcd", .ready = fake_ready, .free = fake_free,
};

static struct fake *add(struct sourceset *ss, const struct source_ops *ops, const char *name)
{
	struct fake *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	source_init(&f->base, ops, name);
	assert_int_equal(sourceset_add(ss, &f->base), 0);
	return f;
}

/* --min-sync-period 1s, --sync-period 30s: /healthz's timeout is 60 s. */
static void setup(struct gate *g, struct sourceset **ss, uint64_t now)
{
	struct syncpolicy_config c;

	syncpolicy_config_default(&c);
	c.min_sync_usec = 1 * S;
	c.sync_period_usec = 30 * S;
	c.retry_max_usec = 0;
	assert_int_equal(syncpolicy_config_check(&c), 0);
	assert_int_equal(sourceset_new(NULL, NULL, ss), 0);
	gate_init(g, &c, *ss, now);
	assert_int_equal(g->health_timeout_usec, 60 * S);
}

static bool healthz(const struct gate *g, uint64_t now)
{
	bool healthy, eligible;

	gate_healthz(g, now, &healthy, &eligible);
	return healthy && eligible;
}

/* A sync from start to end at `now`, `took` long. */
static bool sync_once(struct gate *g, uint64_t now, uint64_t took, bool ok)
{
	syncpolicy_sync_start(&g->policy, now);
	return gate_sync_done(g, now + took, ok);
}

static void test_sources_loaded(void **state)
{
	struct sourceset *ss;
	struct gate g;
	struct fake *file, *etcd;
	enum sync_reason why;
	uint64_t t = 1000 * S;

	setup(&g, &ss, t);
	file = add(ss, &file_ops, "svc.json");
	etcd = add(ss, &net_ops, "etcd");

	/* Nothing read: no sync; the unread file holds /healthz at 503. */
	assert_false(gate_sources_ready(&g));
	assert_false(gate_may_sync(&g, false, t, &why));
	assert_false(healthz(&g, t));
	assert_true(gate_livez(&g, t));

	/* The file read, etcd not yet: /healthz 200, still no sync (a sync
	 * now would delete the cluster's services). */
	file->ready = true;
	assert_true(healthz(&g, t));
	assert_false(gate_may_sync(&g, false, t, &why));

	/* etcd listed: the first sync is due at once. */
	etcd->ready = true;
	assert_true(gate_sources_ready(&g));
	assert_true(gate_may_sync(&g, false, t, &why));
	assert_int_equal(why, SYNC_INITIAL);
	/* Never while the worker writes. */
	assert_false(gate_may_sync(&g, true, t, &why));
	sourceset_free(ss);
}

static void test_first_sync(void **state)
{
	struct sourceset *ss;
	struct gate g;
	enum sync_reason why;
	uint64_t t = 1000 * S;

	setup(&g, &ss, t);
	add(ss, &file_ops, "svc.json")->ready = true;

	/* A first sync that fails: no READY=1; it is retried. */
	assert_false(sync_once(&g, t, S / 10, false));
	assert_false(gate_may_sync(&g, false, t + S / 2, &why));
	assert_true(gate_may_sync(&g, false, t + 30 * S, &why));
	assert_int_equal(why, SYNC_RETRY);
	/* The first that succeeds: READY=1, once. */
	assert_true(sync_once(&g, t + 30 * S, S / 10, true));
	assert_false(sync_once(&g, t + 61 * S, S / 10, true));
	assert_false(sync_once(&g, t + 92 * S, S / 10, false));
	assert_false(sync_once(&g, t + 123 * S, S / 10, true));
	sourceset_free(ss);
}

static void test_failed_sync(void **state)
{
	struct sourceset *ss;
	struct gate g;
	uint64_t t = 1000 * S;

	setup(&g, &ss, t);
	add(ss, &file_ops, "svc.json")->ready = true;
	assert_true(sync_once(&g, t, S, true));
	assert_true(healthz(&g, t + 2 * S));

	/* A failed sync: the kernel may differ from the plan.  Healthy for
	 * the health timeout, then 503 on both /healthz and /livez. */
	t += 10 * S;
	assert_false(sync_once(&g, t, S, false));
	assert_true(healthz(&g, t + 2 * S));
	assert_true(gate_livez(&g, t + 60 * S));
	assert_false(healthz(&g, t + 62 * S));
	assert_false(gate_livez(&g, t + 62 * S));
	/* The next success makes it healthy again. */
	assert_false(sync_once(&g, t + 63 * S, S, true));
	assert_true(healthz(&g, t + 64 * S));
	assert_true(gate_livez(&g, t + 64 * S));
	sourceset_free(ss);
}

static void test_stale(void **state)
{
	struct sourceset *ss;
	struct gate g;
	struct fake *file, *etcd;
	bool healthy, eligible;
	uint64_t t = 1000 * S;

	setup(&g, &ss, t);
	file = add(ss, &file_ops, "svc.json");
	etcd = add(ss, &net_ops, "etcd");
	file->ready = etcd->ready = true;
	assert_true(sync_once(&g, t, S, true));

	/* A change that no sync follows (the worker stuck on the xtables
	 * lock, say): 503 once it is older than the health timeout. */
	syncpolicy_change(&g.policy, t + 10 * S);
	assert_true(healthz(&g, t + 69 * S));
	assert_false(healthz(&g, t + 71 * S));
	assert_false(sync_once(&g, t + 72 * S, S, true));
	assert_true(healthz(&g, t + 74 * S));

	/* Without changes, no sync for hours is healthy: nothing waits. */
	assert_true(healthz(&g, t + 3600 * S));

	/* A source read once stays read (a lost etcd keeps the last rules):
	 * the gate does not close again. */
	assert_true(gate_sources_ready(&g));

	/* A Node being deleted: /healthz 503 (nodeEligible false), /livez not. */
	g.node_eligible = false;
	gate_healthz(&g, t + 3600 * S, &healthy, &eligible);
	assert_true(healthy);
	assert_false(eligible);
	assert_true(gate_livez(&g, t + 3600 * S));
	sourceset_free(ss);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sources_loaded),
		cmocka_unit_test(test_first_sync),
		cmocka_unit_test(test_failed_sync),
		cmocka_unit_test(test_stale),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
