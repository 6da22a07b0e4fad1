/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nfnetlink_acct objects (sys/nfacct.c) against the kernel, in a network
 * namespace of the test's own (unshare(CLONE_NEWNET) first: the host's
 * objects are never touched): a missing object reads -ENOENT, ensure makes
 * it once and leaves it (and its counts) alone after, names are checked.
 * Skipped (77) without the rights to make a namespace; a kernel without
 * nfnetlink_acct skips too, outside CI.
 */
#include <errno.h>
#include <linux/capability.h>
#include <sched.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/plan.h"
#include "daemon/kpmetrics.h"
#include "pipeline/counters.h"
#include "sys/metrics.h"
#include "sys/nfacct.h"
#include "util.h"

extern char **environ;

#define LNP PLAN_NFACCT_LOCALHOST_NP_NAME
#define INV PLAN_NFACCT_CT_INVALID_NAME
#define LM "kubeproxy_iptables_localhost_nodeports_accepted_packets_total"
#define IM "kubeproxy_iptables_ct_state_invalid_dropped_packets_total"

/* Someone deletes a counter (the nfacct tool, as an operator would). */
static void del(const char *name)
{
	char *argv[] = { "nfacct", "del", (char *)name, NULL };
	pid_t pid;
	int st;

	assert_int_equal(posix_spawnp(&pid, "nfacct", NULL, NULL, argv, environ), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* CAP_NET_ADMIN in the effective set on or off (nfnetlink then says EPERM). */
static void net_admin(bool on)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct c[2];

	assert_int_equal(syscall(SYS_capget, &h, c), 0);
	if (on)
		c[0].effective |= 1u << CAP_NET_ADMIN;
	else
		c[0].effective &= ~(1u << CAP_NET_ADMIN);
	assert_int_equal(syscall(SYS_capset, &h, c), 0);
}

static size_t count_level(const struct diag_list *d, enum diag_level l)
{
	size_t n = 0;

	for (size_t i = 0; i < d->n; i++)
		n += d->items[i].level == l;
	return n;
}

static void test_missing(void **state)
{
	struct nfacct_counter c = { 7, 7 };

	(void)state;
	assert_int_equal(nfacct_get("svcnat_test_missing", &c), -ENOENT);
	assert_int_equal(c.packets, 7); /* untouched on failure */
}

static void test_ensure(void **state)
{
	struct nfacct_counter c = { 7, 7 };

	(void)state;
	assert_int_equal(nfacct_ensure("ct_state_invalid_dropped_pkts"), 0);
	assert_int_equal(nfacct_get("ct_state_invalid_dropped_pkts", &c), 0);
	assert_int_equal(c.packets, 0);
	assert_int_equal(c.bytes, 0);
	/* Again: it exists, nothing is replaced. */
	assert_int_equal(nfacct_ensure("ct_state_invalid_dropped_pkts"), 0);
	assert_int_equal(nfacct_get("ct_state_invalid_dropped_pkts", &c), 0);
	/* 31 bytes is the longest name. */
	assert_int_equal(nfacct_ensure("n23456789012345678901234567890a"), 0);
	assert_int_equal(nfacct_get("n23456789012345678901234567890a", &c), 0);
}

static void test_names(void **state)
{
	struct nfacct_counter c;

	(void)state;
	assert_int_equal(nfacct_ensure(""), -EINVAL);
	assert_int_equal(nfacct_ensure(NULL), -EINVAL);
	assert_int_equal(nfacct_ensure("n234567890123456789012345678901b"), -EINVAL);
	assert_int_equal(nfacct_get("n234567890123456789012345678901b", &c), -EINVAL);
}

/*
 * kube-proxy's full syncs: each counter ensured (made again after someone
 * deleted it); one that cannot be made (no CAP_NET_ADMIN here) leaves the
 * plan without its match under auto and is said once per failure run; on
 * keeps every match and says it as an error; the read-only probe of the
 * modes that write nothing makes nothing.
 */
static void test_counters(void **state)
{
	struct counters c = { .want = PLAN_NFACCT_ALL };
	struct nfacct_counter v;
	unsigned unknown;
	struct diag_list d;
	int err;

	(void)state;
	diag_list_init(&d);
	/* the probe: absent but makeable, and nothing made */
	if (nfacct_get(LNP, &v) == 0)
		del(LNP);
	if (nfacct_get(INV, &v) == 0)
		del(INV);
	assert_int_equal(counters_probe(PLAN_NFACCT_ALL, &unknown, &err), PLAN_NFACCT_ALL);
	assert_int_equal(unknown, 0);
	assert_int_equal(err, 0);
	assert_int_equal(nfacct_get(LNP, &v), -ENOENT);
	/* made */
	assert_int_equal(counters_ensure(&c, &d), PLAN_NFACCT_ALL);
	assert_int_equal(nfacct_get(LNP, &v), 0);
	assert_int_equal(nfacct_get(INV, &v), 0);
	assert_int_equal(d.n, 0);
	/* deleted by someone: made again at the next ensure */
	del(LNP);
	assert_int_equal(counters_ensure(&c, &d), PLAN_NFACCT_ALL);
	assert_int_equal(nfacct_get(LNP, &v), 0);
	assert_int_equal(d.n, 0);
	/* cannot be made: auto plans without it, one warning per run */
	del(LNP);
	net_admin(false);
	assert_int_equal(counters_probe(PLAN_NFACCT_ALL, &unknown, &err), 0);
	assert_int_equal(unknown, PLAN_NFACCT_ALL);
	assert_int_equal(err, -EPERM);
	assert_int_equal(counters_ensure(&c, &d), 0);
	assert_int_equal(count_level(&d, DIAG_WARNING), 2);
	assert_int_equal(counters_ensure(&c, &d), 0);
	assert_int_equal(d.n, 2);
	/* on: every match planned, the failure an error */
	{
		struct counters on = { .want = PLAN_NFACCT_ALL, .required = true };

		assert_int_equal(counters_ensure(&on, &d), PLAN_NFACCT_ALL);
		assert_int_equal(count_level(&d, DIAG_ERROR), 2);
		assert_int_equal(on.failing, PLAN_NFACCT_ALL);
	}
	/* back: made again, with a note each */
	net_admin(true);
	assert_int_equal(counters_ensure(&c, &d), PLAN_NFACCT_ALL);
	assert_int_equal(count_level(&d, DIAG_NOTE), 2);
	assert_int_equal(c.failing, 0);
	assert_int_equal(nfacct_get(LNP, &v), 0);
	/* off: nothing */
	{
		struct counters off = { 0 };

		assert_int_equal(counters_ensure(&off, &d), 0);
	}
	assert_string_equal(counters_name(PLAN_NFACCT_CT_INVALID), INV);
	assert_null(counters_name(1u << 7));
	diag_list_done(&d);
}

/* kube-proxy's collector: no sample while a counter cannot be read. */
static void test_metrics(void **state)
{
	struct metrics *m = metrics_new();
	struct kpmetrics *k = NULL;
	double v;

	(void)state;
	assert_non_null(m);
	assert_int_equal(metrics_declare_svcnat(m), 0);
	assert_int_equal(kpmetrics_new(m, AF_INET, 0, &k), 0);
	assert_int_equal(nfacct_ensure(LNP), 0);
	assert_int_equal(nfacct_ensure(INV), 0);
	kpmetrics_nfacct(k, PLAN_NFACCT_ALL);
	assert_int_equal(metrics_get(m, LM, NULL, &v), 0);
	assert_int_equal(metrics_get(m, IM, NULL, &v), 0);
	/* deleted: the series goes, the other stays */
	del(LNP);
	kpmetrics_nfacct(k, PLAN_NFACCT_ALL);
	assert_int_equal(metrics_get(m, LM, NULL, &v), -ENOENT);
	assert_int_equal(metrics_get(m, IM, NULL, &v), 0);
	kpmetrics_nfacct(k, PLAN_NFACCT_ALL);
	assert_int_equal(metrics_get(m, LM, NULL, &v), -ENOENT);
	/* made again: reported again */
	assert_int_equal(nfacct_ensure(LNP), 0);
	kpmetrics_nfacct(k, PLAN_NFACCT_ALL);
	assert_int_equal(metrics_get(m, LM, NULL, &v), 0);
	/* not wanted (--nfacct off): never read */
	kpmetrics_nfacct(k, 0);
	kpmetrics_free(k);
	metrics_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_missing),
		cmocka_unit_test(test_ensure),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_counters),
		cmocka_unit_test(test_metrics),
	};
	struct nfacct_counter c;
	int r;

	if (unshare(CLONE_NEWNET) < 0) {
		fprintf(stderr, "SKIP: cannot make a network namespace: %s\n", strerror(errno));
		return getenv("CI") && !strcmp(getenv("CI"), "true") ? 1 : 77;
	}
	r = nfacct_get("svcnat_probe", &c);
	if (r != -ENOENT) {
		fprintf(stderr, "SKIP: no nfnetlink_acct here: %s\n", strerror(-r));
		return getenv("CI") && !strcmp(getenv("CI"), "true") ? 1 : 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
