/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Host facts (sys/host.c) over a scratch /proc: the CapEff line and the
 * CAP_NET_ADMIN bit, the host-namespace test (one inode or two), the OOM
 * score write, hostname lowercasing; the data path's sysctls
 * (host_setup_sysctls()) over a scratch /proc and /sys, case by case; and
 * the live reads answer sanely.
 */
#include <errno.h>
#include <ftw.h>
#include <linux/capability.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
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

/* --- host_setup_sysctls() over a scratch tree --- */

#define FWD4 "/proc/sys/net/ipv4/ip_forward"
#define LOCALNET "/proc/sys/net/ipv4/conf/all/route_localnet"
#define FWD6 "/proc/sys/net/ipv6/conf/all/forwarding"
#define NF "/proc/sys/net/netfilter/"
#define CTMAX NF "nf_conntrack_max"
#define EST NF "nf_conntrack_tcp_timeout_established"
#define CLOSEW NF "nf_conntrack_tcp_timeout_close_wait"
#define UDP NF "nf_conntrack_udp_timeout"
#define UDPS NF "nf_conntrack_udp_timeout_stream"
#define LIBERAL NF "nf_conntrack_tcp_be_liberal"
#define HASH "/sys/module/nf_conntrack/parameters/hashsize"

/* Conntrack settings that leave every conntrack sysctl as it is. */
#define CT_LEAVE { .max_per_core = 0, .min = -1 }
/* Nothing given: kube-proxy's defaults. */
#define CT_DEFAULTS                                                                          \
	{ .max_per_core = -1, .min = -1, .tcp_established_usec = CT_TIMEOUT_DEFAULT,         \
	  .tcp_close_wait_usec = CT_TIMEOUT_DEFAULT }

struct sc_file {
	const char *path;
	const char *before;  /* NULL: the file is missing */
	const char *after;   /* its text after the call ("" for "as before") */
	bool readonly;       /* mode 0444, written without CAP_DAC_OVERRIDE */
};

#define F(path, before, after) { path, before, after, false }
#define RO(path, before, after) { path, before, after, true }
#define MISSING(path) { path, NULL, "", false }

struct sc_diag {
	enum diag_level level;
	const char *has;     /* a substring of the message */
};

struct sc_case {
	const char *name;
	struct host_sysctls h;
	bool host_netns;     /* /proc/self/ns/net and /proc/1/ns/net one inode */
	struct sc_file files[8];
	int ret;
	struct sc_diag diags[6];
};

/* The effective CAP_DAC_OVERRIDE on or off (root would write a 0444 file). */
static void dac_override(bool on)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2];

	assert_int_equal(syscall(SYS_capget, &hdr, data), 0);
	if (!(data[0].permitted & (1U << CAP_DAC_OVERRIDE)))
		return;
	if (on)
		data[0].effective |= 1U << CAP_DAC_OVERRIDE;
	else
		data[0].effective &= ~(1U << CAP_DAC_OVERRIDE);
	assert_int_equal(syscall(SYS_capset, &hdr, data), 0);
}

static void get_text(const char *root, const char *path, char *buf, size_t len)
{
	char p[512];
	FILE *f;
	size_t n;

	snprintf(p, sizeof(p), "%s%s", root, path);
	f = fopen(p, "r");
	assert_non_null(f);
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	return remove(p);
}

static void sc_one(const struct sc_case *c)
{
	_cleanup_(diag_list_done) struct diag_list d = { 0 };
	char dir[64] = "/tmp/test-host-sc.XXXXXX", p[512], buf[64];
	bool ro = false;
	size_t n_diags = 0;
	int r;

	print_message("case %s\n", c->name);
	assert_non_null(mkdtemp(dir));
	mkdirs(dir, "/proc/self/ns");
	mkdirs(dir, "/proc/1/ns");
	put_text(dir, "/proc/self/ns/net", "");
	snprintf(p, sizeof(p), "%s/proc/1/ns/net", dir);
	if (c->host_netns) {
		char self[512];

		snprintf(self, sizeof(self), "%s/proc/self/ns/net", dir);
		assert_int_equal(link(self, p), 0);
	} else {
		put_text(dir, "/proc/1/ns/net", "");
	}
	mkdirs(dir, "/proc/sys/net/ipv4/conf/all");
	mkdirs(dir, "/proc/sys/net/ipv6/conf/all");
	mkdirs(dir, "/proc/sys/net/netfilter");
	mkdirs(dir, "/sys/module/nf_conntrack/parameters");
	for (const struct sc_file *f = c->files; f->path; f++) {
		if (!f->before)
			continue;
		put_text(dir, f->path, f->before);
		if (f->readonly) {
			snprintf(p, sizeof(p), "%s%s", dir, f->path);
			assert_int_equal(chmod(p, 0444), 0);
			ro = true;
		}
	}
	if (ro)
		dac_override(false);
	r = host_setup_sysctls(dir, &c->h, &d);
	if (ro)
		dac_override(true);
	for (size_t i = 0; i < d.n; i++)
		print_message("  diag %d: %s\n", d.items[i].level, d.items[i].msg);
	assert_int_equal(r, c->ret);
	for (const struct sc_diag *x = c->diags; x->has; x++, n_diags++) {
		assert_true(n_diags < d.n);
		assert_int_equal(d.items[n_diags].level, x->level);
		assert_non_null(strstr(d.items[n_diags].msg, x->has));
	}
	assert_int_equal(d.n, n_diags);
	for (const struct sc_file *f = c->files; f->path; f++) {
		snprintf(p, sizeof(p), "%s%s", dir, f->path);
		if (!f->before) {
			/* Never made. */
			assert_int_equal(access(p, F_OK), -1);
			continue;
		}
		get_text(dir, f->path, buf, sizeof(buf));
		assert_string_equal(buf, *f->after ? f->after : f->before);
	}
	assert_int_equal(nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
}

static void test_setup_sysctls(void **state)
{
	/* Written files hold the number without a newline: "1" is a write,
	 * "1\n" the text the case put there. */
	static const struct sc_case cases[] = {
		{ "ip_forward off, --set-sysctls: turned on",
		  { .set = true, .conntrack = CT_LEAVE }, false,
		  { F(FWD4, "0\n", "1") }, 0,
		  { { DIAG_NOTE, "set net/ipv4/ip_forward to 1 (was 0)" } } },
		{ "ip_forward off: a warning, left",
		  { .conntrack = CT_LEAVE }, false,
		  { F(FWD4, "0\n", "") }, 0,
		  { { DIAG_WARNING, "net/ipv4/ip_forward is 0: service traffic from other hosts" },
		    { 0 } } },
		{ "ip_forward on already: left alone, no record",
		  { .set = true, .conntrack = CT_LEAVE }, false,
		  { RO(FWD4, "1\n", "") }, 0, { { 0 } } },
		{ "ip_forward and route_localnet on, no --set-sysctls: no warning",
		  { .localhost_nodeports = true, .conntrack = CT_LEAVE }, false,
		  { F(FWD4, "1\n", ""), F(LOCALNET, "1\n", "") }, 0, { { 0 } } },
		{ "ip_forward missing: nothing to check, nothing made",
		  { .set = true, .conntrack = CT_LEAVE }, false,
		  { MISSING(FWD4) }, 0, { { 0 } } },
		{ "route_localnet off without --localhost-nodeports: not asked for",
		  { .set = true, .conntrack = CT_LEAVE }, false,
		  { F(FWD4, "1\n", ""), F(LOCALNET, "0\n", "") }, 0, { { 0 } } },
		{ "route_localnet off with --localhost-nodeports and --set-sysctls: turned on",
		  { .set = true, .localhost_nodeports = true, .conntrack = CT_LEAVE }, false,
		  { F(FWD4, "1\n", ""), F(LOCALNET, "0\n", "1") }, 0,
		  { { DIAG_NOTE, "set net/ipv4/conf/all/route_localnet to 1 (was 0)" } } },
		{ "route_localnet off with --localhost-nodeports: a warning naming the flag",
		  { .localhost_nodeports = true, .conntrack = CT_LEAVE }, false,
		  { F(FWD4, "0\n", ""), F(LOCALNET, "0\n", "") }, 0,
		  { { DIAG_WARNING, "net/ipv4/ip_forward is 0" },
		    { DIAG_WARNING, "net/ipv4/conf/all/route_localnet is 0: NodePorts on 127.0.0.1 "
				    "do not work (--localhost-nodeports) (use --set-sysctls" } } },
		{ "ip_forward unwritable: an error naming it, the rest not tried",
		  { .set = true, .localhost_nodeports = true, .conntrack = CT_DEFAULTS }, true,
		  { RO(FWD4, "0\n", ""), F(LOCALNET, "0\n", ""), F(EST, "5\n", "") },
		  -EACCES,
		  { { DIAG_ERROR, "cannot set net/ipv4/ip_forward to 1: Permission denied" } } },
		{ "IPv6 forwarding off with a global IPv6 address: warned, never written",
		  { .set = true, .global6 = true, .conntrack = CT_LEAVE }, false,
		  { F(FWD4, "1\n", ""), F(FWD6, "0\n", "") }, 0,
		  { { DIAG_WARNING, "net/ipv6/conf/all/forwarding is 0: IPv6 service traffic" } } },
		{ "IPv6 forwarding off without a global IPv6 address: not asked for",
		  { .set = true, .conntrack = CT_LEAVE }, false,
		  { F(FWD6, "0\n", "") }, 0, { { 0 } } },
		{ "IPv6 forwarding on: no record",
		  { .global6 = true, .conntrack = CT_LEAVE }, false,
		  { F(FWD6, "1\n", "") }, 0, { { 0 } } },
		{ "conntrack defaults outside the host's namespace: timeouts only",
		  { .conntrack = CT_DEFAULTS }, false,
		  { F(CTMAX, "1000\n", ""), F(HASH, "10\n", ""), F(EST, "432000\n", "86400"),
		    F(CLOSEW, "60\n", "3600"), F(UDP, "30\n", ""), F(UDPS, "120\n", ""),
		    F(LIBERAL, "0\n", "") },
		  0,
		  { { DIAG_NOTE, "set net/netfilter/nf_conntrack_tcp_timeout_established to 86400 "
				 "(was 432000)" },
		    { DIAG_NOTE, "set net/netfilter/nf_conntrack_tcp_timeout_close_wait to 3600" } } },
		{ "conntrack timeouts right already: left alone",
		  { .conntrack = CT_DEFAULTS }, false,
		  { RO(EST, "86400\n", ""), RO(CLOSEW, "3600\n", "") }, 0, { { 0 } } },
		{ "a maximum given outside the host's namespace: left, with a warning",
		  { .conntrack = { .max_per_core = 1, .min = 200000 } }, false,
		  { F(CTMAX, "1000\n", ""), F(HASH, "10\n", "") }, 0,
		  { { DIAG_WARNING, "left as they are (wanted 200000)" } } },
		{ "a maximum given in the host's namespace: max and hashsize raised",
		  { .conntrack = { .max_per_core = 1, .min = 200000 } }, true,
		  { F(CTMAX, "1000\n", "200000"), F(HASH, "10\n", "50000") }, 0,
		  { { DIAG_NOTE, "set net/netfilter/nf_conntrack_max to 200000 (was 1000)" },
		    { DIAG_NOTE, "set /sys/module/nf_conntrack/parameters/hashsize to 50000" } } },
		{ "hashsize large enough: left",
		  { .conntrack = { .max_per_core = 1, .min = 200000 } }, true,
		  { F(CTMAX, "1000\n", "200000"), F(HASH, "65536\n", "") }, 0,
		  { { DIAG_NOTE, "set net/netfilter/nf_conntrack_max to 200000" } } },
		{ "nf_conntrack_max read-only: a warning, the timeouts still written",
		  { .conntrack = CT_DEFAULTS }, true,
		  { RO(CTMAX, "1000\n", ""), F(EST, "5\n", "86400"), F(CLOSEW, "3600\n", "") },
		  0,
		  { { DIAG_WARNING, "cannot set net/netfilter/nf_conntrack_max to " },
		    { DIAG_NOTE, "nf_conntrack_tcp_timeout_established to 86400 (was 5)" } } },
		{ "hashsize read-only: a warning",
		  { .conntrack = { .max_per_core = 1, .min = 200000 } }, true,
		  { F(CTMAX, "1000\n", "200000"), RO(HASH, "10\n", "") }, 0,
		  { { DIAG_NOTE, "nf_conntrack_max to 200000" },
		    { DIAG_WARNING, "cannot set /sys/module/nf_conntrack/parameters/hashsize to 50000" } } },
		{ "a timeout unwritable: an error naming it",
		  { .conntrack = CT_DEFAULTS }, false,
		  { RO(EST, "5\n", ""), F(CLOSEW, "60\n", "") }, -EACCES,
		  { { DIAG_ERROR, "cannot set net/netfilter/nf_conntrack_tcp_timeout_established "
				  "to 86400: Permission denied" } } },
		{ "a timeout missing: an error naming it",
		  { .conntrack = CT_DEFAULTS }, false,
		  { F(EST, "86400\n", ""), MISSING(CLOSEW) }, -ENOENT,
		  { { DIAG_ERROR, "cannot set net/netfilter/nf_conntrack_tcp_timeout_close_wait "
				  "to 3600: No such file or directory" } } },
		{ "UDP timeouts and tcp_be_liberal given: written",
		  { .conntrack = { .max_per_core = 0, .min = -1, .udp_usec = 30000000,
				   .udp_stream_usec = 120000000, .tcp_be_liberal = true } },
		  false,
		  { F(EST, "5\n", ""), F(UDP, "60\n", "30"), F(UDPS, "60\n", "120"),
		    F(LIBERAL, "0\n", "1") },
		  0,
		  { { DIAG_NOTE, "nf_conntrack_udp_timeout to 30 (was 60)" },
		    { DIAG_NOTE, "nf_conntrack_udp_timeout_stream to 120 (was 60)" },
		    { DIAG_NOTE, "nf_conntrack_tcp_be_liberal to 1 (was 0)" } } },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		sc_one(&cases[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_caps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_netns, setup, teardown),
		cmocka_unit_test_setup_teardown(test_oom_score, setup, teardown),
		cmocka_unit_test(test_name_lower),
		cmocka_unit_test(test_live),
		cmocka_unit_test(test_setup_sysctls),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
