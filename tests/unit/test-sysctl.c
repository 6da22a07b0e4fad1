/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * kube-proxy's conntrack settings (sys/sysctl.c) over a scratch /proc and
 * /sys tree: getConntrackMax's table (kube-proxy's TestGetConntrackMax,
 * pkg/proxy/conntrack/sysctls_test.go, for several CPU counts), which
 * sysctls are written with which values, that the host-wide ones are left
 * outside the host's network namespace, that a value already right is not
 * written, and that the hash size is only ever raised.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "sys/sysctl.h"
#include "util.h"

#define NF "/proc/sys/net/netfilter/"
#define HS "/sys/module/nf_conntrack/parameters/hashsize"

static const char *const files[] = {
	NF "nf_conntrack_max",
	NF "nf_conntrack_tcp_timeout_established",
	NF "nf_conntrack_tcp_timeout_close_wait",
	NF "nf_conntrack_udp_timeout",
	NF "nf_conntrack_udp_timeout_stream",
	NF "nf_conntrack_tcp_be_liberal",
	HS,
};
/* The kernel's defaults, as a fresh namespace shows them. */
static const long initial[] = { 65536, 432000, 60, 30, 120, 0, 16384 };

struct root {
	char dir[64];
};

static void put(const char *root, const char *path, long v)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s%s", root, path);
	f = fopen(p, "w");
	assert_non_null(f);
	fprintf(f, "%ld\n", v);
	fclose(f);
}

static long get(const char *root, const char *path)
{
	long v = -1;

	assert_int_equal(sysctl_read_int(root, path, &v), 0);
	return v;
}

static int setup(void **state)
{
	struct root *r = calloc(1, sizeof(*r));
	char p[512];

	strcpy(r->dir, "/tmp/test-sysctl.XXXXXX");
	assert_non_null(mkdtemp(r->dir));
	snprintf(p, sizeof(p), "mkdir -p %s/proc/sys/net/netfilter %s/sys/module/nf_conntrack/parameters",
		 r->dir, r->dir);
	assert_int_equal(system(p), 0);
	for (size_t i = 0; i < ARRAY_SIZE(files); i++)
		put(r->dir, files[i], initial[i]);
	*state = r;
	return 0;
}

static int teardown(void **state)
{
	struct root *r = *state;
	char p[512];

	snprintf(p, sizeof(p), "rm -rf %s", r->dir);
	assert_int_equal(system(p), 0);
	free(r);
	return 0;
}

static void test_max_table(void **state)
{
	static const struct {
		long per_core, min, ncpu, want;
	} cases[] = {
		/* TestGetConntrackMax: nothing asked */
		{ 0, 0, 2, 0 },
		/* "use this if Max is 0", min 1, capped at 1 Mi */
		{ 67890, 1, 1, 67890 },
		{ 67890, 1, 2, 135780 },
		{ 67890, 1, 15, 1018350 },
		{ 67890, 1, 16, CT_MAX_LIMIT },
		{ 67890, 1, 1024, CT_MAX_LIMIT },
		/* "ensure that Min is considered" */
		{ 1, 123456, 2, 123456 },
		/* "leave system setting" */
		{ 0, 123456, 2, 0 },
		/* kube-proxy's defaults on this machine's 2 cores and on 8 */
		{ CT_DEFAULT_MAX_PER_CORE, CT_DEFAULT_MIN, 2, 131072 },
		{ CT_DEFAULT_MAX_PER_CORE, CT_DEFAULT_MIN, 8, 262144 },
		/* a bad CPU count counts as one */
		{ 200000, 0, 0, 200000 },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		assert_int_equal(ct_sysctls_max(cases[i].per_core, cases[i].min, cases[i].ncpu),
				 cases[i].want);
}

/* kube-proxy's defaults in the host's network namespace: everything. */
static void test_defaults_host(void **state)
{
	struct root *r = *state;
	struct diag_list d = { 0 };
	struct ct_sysctls c = { .max = 262144, .tcp_established_sec = 86400,
				.tcp_close_wait_sec = 3600 };

	assert_int_equal(ct_sysctls_apply(&c, r->dir, true, &d), 0);
	assert_int_equal(get(r->dir, NF "nf_conntrack_max"), 262144);
	assert_int_equal(get(r->dir, HS), 65536);
	assert_int_equal(get(r->dir, NF "nf_conntrack_tcp_timeout_established"), 86400);
	assert_int_equal(get(r->dir, NF "nf_conntrack_tcp_timeout_close_wait"), 3600);
	/* what was not asked for is left */
	assert_int_equal(get(r->dir, NF "nf_conntrack_udp_timeout"), 30);
	assert_int_equal(get(r->dir, NF "nf_conntrack_udp_timeout_stream"), 120);
	assert_int_equal(get(r->dir, NF "nf_conntrack_tcp_be_liberal"), 0);
	assert_int_equal(diag_count(&d, DIAG_NOTE), 4);
	assert_int_equal(diag_count(&d, DIAG_WARNING) + diag_count(&d, DIAG_ERROR), 0);
	diag_list_done(&d);

	/* Again: all already so, nothing written, nothing said. */
	assert_int_equal(ct_sysctls_apply(&c, r->dir, true, &d), 0);
	assert_int_equal(d.n, 0);
	diag_list_done(&d);
}

/* Outside the host's namespace the host-wide two are never touched. */
static void test_not_host_netns(void **state)
{
	struct root *r = *state;
	struct diag_list d = { 0 };
	struct ct_sysctls c = { .max = 262144, .tcp_established_sec = 86400,
				.tcp_close_wait_sec = 3600, .udp_sec = 11, .udp_stream_sec = 22,
				.tcp_be_liberal = true };

	assert_int_equal(ct_sysctls_apply(&c, r->dir, false, &d), 0);
	assert_int_equal(get(r->dir, NF "nf_conntrack_max"), 65536);
	assert_int_equal(get(r->dir, HS), 16384);
	assert_int_equal(get(r->dir, NF "nf_conntrack_tcp_timeout_established"), 86400);
	assert_int_equal(get(r->dir, NF "nf_conntrack_udp_timeout"), 11);
	assert_int_equal(get(r->dir, NF "nf_conntrack_udp_timeout_stream"), 22);
	assert_int_equal(get(r->dir, NF "nf_conntrack_tcp_be_liberal"), 1);
	/* defaults: left without a word */
	assert_int_equal(diag_count(&d, DIAG_WARNING), 0);
	diag_list_done(&d);

	/* asked for explicitly: left, with a warning saying why */
	c.max_given = true;
	assert_int_equal(ct_sysctls_apply(&c, r->dir, false, &d), 0);
	assert_int_equal(get(r->dir, NF "nf_conntrack_max"), 65536);
	assert_int_equal(diag_count(&d, DIAG_WARNING), 1);
	assert_non_null(strstr(d.items[0].msg, "host's"));
	diag_list_done(&d);
}

/* 0 leaves each one; the hash size is raised, never lowered. */
static void test_zero_leaves_and_hashsize(void **state)
{
	struct root *r = *state;
	struct diag_list d = { 0 };
	struct ct_sysctls c = { .max = 40000 };

	put(r->dir, HS, 262144);
	assert_int_equal(ct_sysctls_apply(&c, r->dir, true, &d), 0);
	assert_int_equal(get(r->dir, NF "nf_conntrack_max"), 40000); /* lowered, as kube-proxy */
	assert_int_equal(get(r->dir, HS), 262144);
	assert_int_equal(get(r->dir, NF "nf_conntrack_tcp_timeout_established"), 432000);
	assert_int_equal(get(r->dir, NF "nf_conntrack_tcp_timeout_close_wait"), 60);
	diag_list_done(&d);

	c.max = 0;
	put(r->dir, NF "nf_conntrack_max", 77);
	assert_int_equal(ct_sysctls_apply(&c, r->dir, true, &d), 0);
	assert_int_equal(get(r->dir, NF "nf_conntrack_max"), 77);
	assert_int_equal(d.n, 0);
	diag_list_done(&d);
}

/* A refused nf_conntrack_max (read-only /proc/sys) is a warning; a
 * refused timeout an error. */
static void test_refusals(void **state)
{
	struct root *r = *state;
	struct diag_list d = { 0 };
	struct ct_sysctls c = { .max = 262144 };
	char p[512];

	if (geteuid() == 0)
		skip(); /* root writes a 0444 file anyway */
	snprintf(p, sizeof(p), "%s" NF "nf_conntrack_max", r->dir);
	assert_int_equal(chmod(p, 0444), 0);
	assert_int_equal(ct_sysctls_apply(&c, r->dir, true, &d), 0);
	assert_int_equal(diag_count(&d, DIAG_WARNING), 1);
	diag_list_done(&d);

	c = (struct ct_sysctls){ .tcp_established_sec = 86400 };
	snprintf(p, sizeof(p), "%s" NF "nf_conntrack_tcp_timeout_established", r->dir);
	assert_int_equal(chmod(p, 0444), 0);
	assert_true(ct_sysctls_apply(&c, r->dir, true, &d) < 0);
	assert_int_equal(diag_count(&d, DIAG_ERROR), 1);
	diag_list_done(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_max_table),
		cmocka_unit_test_setup_teardown(test_defaults_host, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_host_netns, setup, teardown),
		cmocka_unit_test_setup_teardown(test_zero_leaves_and_hashsize, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
