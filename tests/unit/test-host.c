/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Host facts (sys/host.c) over a scratch /proc: the CapEff line and the
 * CAP_NET_ADMIN bit, the host-namespace test (one inode or two), the OOM
 * score write, hostname lowercasing; and the live reads answer sanely.
 */
#include <errno.h>
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

#include "sys/host.h"
#include "util.h"

struct root {
	char dir[64];
};

static void mkdirs(const char *root, const char *sub)
{
	char p[512];

	snprintf(p, sizeof(p), "%s%s", root, sub);
	for (char *s = p + strlen(root) + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		assert_true(mkdir(p, 0755) == 0 || errno == EEXIST);
		*s = '/';
	}
	assert_true(mkdir(p, 0755) == 0 || errno == EEXIST);
}

static void put_text(const char *root, const char *path, const char *text)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s%s", root, path);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int setup(void **state)
{
	struct root *r = calloc(1, sizeof(*r));

	assert_non_null(r);
	snprintf(r->dir, sizeof(r->dir), "/tmp/test-host.XXXXXX");
	assert_non_null(mkdtemp(r->dir));
	mkdirs(r->dir, "/proc/self/ns");
	mkdirs(r->dir, "/proc/1/ns");
	*state = r;
	return 0;
}

static int teardown(void **state)
{
	struct root *r = *state;
	static const char *const files[] = { "/proc/self/status", "/proc/self/ns/net",
					     "/proc/1/ns/net", "/proc/self/oom_score_adj" };
	static const char *const dirs[] = { "/proc/self/ns", "/proc/1/ns", "/proc/self",
					    "/proc/1", "/proc", "" };
	char p[512];

	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		snprintf(p, sizeof(p), "%s%s", r->dir, files[i]);
		unlink(p);
	}
	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
		snprintf(p, sizeof(p), "%s%s", r->dir, dirs[i]);
		rmdir(p);
	}
	free(r);
	return 0;
}

static void test_caps(void **state)
{
	const struct root *r = *state;
	static const struct {
		const char *status;  /* NULL: no status file */
		int ret;             /* host_caps_effective() */
		uint64_t eff;
		bool net_admin;      /* -1 below: as root or not */
	} cases[] = {
		/* root: every capability */
		{ "Name:\tsvcnat\nCapInh:\t0000000000000000\nCapPrm:\t000001ffffffffff\n"
		  "CapEff:\t000001ffffffffff\n", 0, 0x000001ffffffffffULL, true },
		/* CAP_NET_ADMIN alone (bit 12) */
		{ "CapPrm:\t0000000000001000\nCapEff:\t0000000000001000\n", 0, 0x1000, true },
		/* permitted but not effective: not held */
		{ "CapPrm:\t0000000000001000\nCapEff:\t0000000000000000\n", 0, 0, false },
		/* the neighbours (CAP_NET_RAW 13, CAP_NET_BIND_SERVICE 10) */
		{ "CapEff:\t0000000000002400\n", 0, 0x2400, false },
	};
	char p[512];
	uint64_t eff;

	snprintf(p, sizeof(p), "%s/proc/self/status", r->dir);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		put_text(r->dir, "/proc/self/status", cases[i].status);
		eff = 0xdead;
		assert_int_equal(host_caps_effective(r->dir, &eff), cases[i].ret);
		assert_true(eff == cases[i].eff);
		assert_int_equal(host_has_net_admin(r->dir), cases[i].net_admin);
	}
	/* No CapEff line: -EIO, *ret untouched; the answer is then root's. */
	put_text(r->dir, "/proc/self/status", "Name:\tsvcnat\n");
	eff = 7;
	assert_int_equal(host_caps_effective(r->dir, &eff), -EIO);
	assert_true(eff == 7);
	assert_int_equal(host_has_net_admin(r->dir), geteuid() == 0);
	unlink(p);
	assert_int_equal(host_caps_effective(r->dir, &eff), -ENOENT);
	assert_int_equal(host_has_net_admin(r->dir), geteuid() == 0);
}

static void test_netns(void **state)
{
	const struct root *r = *state;
	char self[512], init[512];

	snprintf(self, sizeof(self), "%s/proc/self/ns/net", r->dir);
	snprintf(init, sizeof(init), "%s/proc/1/ns/net", r->dir);
	/* Neither there: not known to be the host's. */
	assert_false(host_in_host_netns(r->dir));
	put_text(r->dir, "/proc/self/ns/net", "");
	assert_false(host_in_host_netns(r->dir));
	/* Two files: two namespaces. */
	put_text(r->dir, "/proc/1/ns/net", "");
	assert_false(host_in_host_netns(r->dir));
	/* One inode: the same namespace. */
	assert_int_equal(unlink(init), 0);
	assert_int_equal(link(self, init), 0);
	assert_true(host_in_host_netns(r->dir));
}

static void test_oom_score(void **state)
{
	const struct root *r = *state;
	char p[512], buf[32] = "";
	FILE *f;

	snprintf(p, sizeof(p), "%s/proc/self/oom_score_adj", r->dir);
	/* The kernel's file exists: a missing one is an error. */
	assert_int_equal(host_set_oom_score(r->dir, -999), -ENOENT);
	put_text(r->dir, "/proc/self/oom_score_adj", "0\n");
	assert_int_equal(host_set_oom_score(r->dir, -999), 0);
	f = fopen(p, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	assert_string_equal(buf, "-999");
}

static void test_name_lower(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "", "" },
		{ "node-1", "node-1" },
		{ "Node-1.Example.COM", "node-1.example.com" },
		{ "WORKER_02", "worker_02" },
	};
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char buf[64];

		snprintf(buf, sizeof(buf), "%s", cases[i].in);
		host_name_lower(buf);
		assert_string_equal(buf, cases[i].out);
	}
}

/* The live reads: what this machine says, within what any machine says. */
static void test_live(void **state)
{
	_cleanup_free_ struct ipaddr *a = NULL;
	_cleanup_free_ char *name = NULL;
	size_t n = 99;

	(void)state;
	assert_true(host_cpus() >= 1);
	assert_int_equal(host_name(&name), 0);
	for (const char *s = name; *s; s++)
		assert_false(*s >= 'A' && *s <= 'Z');
	assert_int_equal(host_addresses(&a, &n), 0);
	assert_true(n < 99 || a);
	for (size_t i = 0; i < n; i++)
		assert_true(a[i].family == AF_INET || a[i].family == AF_INET6);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_caps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_netns, setup, teardown),
		cmocka_unit_test_setup_teardown(test_oom_score, setup, teardown),
		cmocka_unit_test(test_name_lower),
		cmocka_unit_test(test_live),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
