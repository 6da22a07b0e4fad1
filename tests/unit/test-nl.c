/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libnl helpers: the NLE_* mapping, an address dump, and (as root, in a
 * private network namespace this process enters) the address watcher
 * following an address added and removed, also when a dump fails (the
 * socket is replaced and the dump tried again).  Bounded by a safety timer.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netlink/cache.h>
#include <netlink/errno.h>
#include <netlink/socket.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/model.h"
#include "sys/loop.h"
#include "sys/nl.h"
#include "util.h"

static void test_nlerr(void **state)
{
	static const struct {
		int nle, err;
	} cases[] = {
		{ 0, 0 },
		{ -NLE_NOMEM, -ENOMEM },
		{ -NLE_PERM, -EPERM },
		{ -NLE_NOACCESS, -EACCES },
		{ -NLE_EXIST, -EEXIST },
		{ -NLE_OBJ_NOTFOUND, -ENOENT },
		{ -NLE_AGAIN, -EAGAIN },
		{ -NLE_DUMP_INTR, -EAGAIN },
		{ -NLE_BUSY, -EBUSY },
		{ -NLE_NODEV, -ENODEV },
		{ -NLE_FAILURE, -EIO },
		{ NLE_INVAL, -EINVAL },
		{ -999, -EIO },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++)
		assert_int_equal(nlerr_to_errno(cases[i].nle), cases[i].err);
}

static bool has(const struct ipaddr *a, size_t n, const char *s)
{
	struct ipaddr x = { .family = AF_INET };
	size_t i;

	assert_int_equal(inet_pton(AF_INET, s, &x.u.v4), 1);
	for (i = 0; i < n; i++)
		if (ipaddr_cmp(&a[i], &x) == 0)
			return true;
	return false;
}

static void test_dump_has_loopback(void **state)
{
	struct ipaddr *a = NULL;
	size_t n = 0, i;

	assert_int_equal(nladdrs_dump(AF_INET, &a, &n), 0);
	/* Sorted, unique, all IPv4. */
	for (i = 0; i < n; i++) {
		assert_int_equal(a[i].family, AF_INET);
		if (i)
			assert_true(ipaddr_cmp(&a[i - 1], &a[i]) < 0);
	}
	free(a);
	assert_int_equal(nladdrs_dump(AF_UNIX, &a, &n), -EAFNOSUPPORT);
}

struct wctx {
	struct loop *l;
	const char *want;
	bool want_present;
	int calls;
};

static void on_addrs(const struct ipaddr *a, size_t n, void *ud)
{
	struct wctx *c = ud;

	c->calls++;
	if (has(a, n, c->want) == c->want_present)
		loop_quit(c->l, 0);
}

/* Dumps made to fail (as one left half read would, with the rest of its
 * answer in the socket): rtnl_addr_alloc_cache() is wrapped (-Wl,--wrap). */
static int fail_dumps;
int __real_rtnl_addr_alloc_cache(struct nl_sock *sk, struct nl_cache **ret);
int __wrap_rtnl_addr_alloc_cache(struct nl_sock *sk, struct nl_cache **ret);
int __wrap_rtnl_addr_alloc_cache(struct nl_sock *sk, struct nl_cache **ret)
{
	if (fail_dumps > 0) {
		fail_dumps--;
		return -NLE_SEQ_MISMATCH;
	}
	return __real_rtnl_addr_alloc_cache(sk, ret);
}

static int on_safety(struct loop *l, struct loop_timer *t, void *ud)
{
	loop_quit(l, -ETIMEDOUT);
	return 0;
}

static void test_watch_follows_changes(void **state)
{
	struct nladdrs_watch *w;
	struct loop_timer *safety;
	const struct ipaddr *a;
	struct wctx c = { .want = "198.18.0.1" };
	size_t n;

	if (geteuid() != 0 || unshare(CLONE_NEWNET) != 0) {
		fprintf(stderr, "SKIPPED: the address watcher test needs root (network namespace)\n");
		skip();
	}
	/* From here this process is in its own empty network namespace. */
	assert_int_equal(system("ip link set lo up"), 0);
	assert_int_equal(loop_new(&c.l), 0);
	assert_int_equal(loop_timer_new(c.l, on_safety, NULL, &safety), 0);
	assert_int_equal(nladdrs_watch_new(c.l, AF_INET, on_addrs, &c, &w), 0);
	nladdrs_watch_get(w, &a, &n);
	assert_false(has(a, n, "198.18.0.1"));

	c.want_present = true;
	assert_int_equal(system("ip addr add 198.18.0.1/32 dev lo"), 0);
	assert_int_equal(loop_timer_arm(safety, 5000000), 0);
	assert_int_equal(loop_run(c.l), 0);
	nladdrs_watch_get(w, &a, &n);
	assert_true(has(a, n, "198.18.0.1"));

	c.want_present = false;
	assert_int_equal(system("ip addr del 198.18.0.1/32 dev lo"), 0);
	assert_int_equal(loop_timer_arm(safety, 5000000), 0);
	assert_int_equal(loop_run(c.l), 0);
	nladdrs_watch_get(w, &a, &n);
	assert_false(has(a, n, "198.18.0.1"));
	assert_true(c.calls >= 2);

	/* The re-dump after the notification fails once: the change is
	 * still seen, at once. */
	c.want_present = true;
	fail_dumps = 1;
	assert_int_equal(system("ip addr add 198.18.0.1/32 dev lo"), 0);
	assert_int_equal(loop_timer_arm(safety, 5000000), 0);
	assert_int_equal(loop_run(c.l), 0);
	assert_int_equal(fail_dumps, 0);
	nladdrs_watch_get(w, &a, &n);
	assert_true(has(a, n, "198.18.0.1"));

	nladdrs_watch_free(w);
	loop_timer_free(safety);
	loop_free(c.l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nlerr),
		cmocka_unit_test(test_dump_has_loopback),
		cmocka_unit_test(test_watch_follows_changes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
