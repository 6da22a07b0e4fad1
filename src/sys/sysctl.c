/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "sys/sysctl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

#define NETFILTER "/proc/sys/net/netfilter/"
#define HASHSIZE "/sys/module/nf_conntrack/parameters/hashsize"

long ct_sysctls_max(long max_per_core, long min, long ncpu)
{
	long scaled;

	if (max_per_core <= 0)
		return 0;
	if (ncpu < 1)
		ncpu = 1;
	scaled = max_per_core > CT_MAX_LIMIT / ncpu ? CT_MAX_LIMIT + 1 : max_per_core * ncpu;
	if (scaled > CT_MAX_LIMIT)
		return CT_MAX_LIMIT;
	return scaled > min ? scaled : (min > 0 ? min : 0);
}

static int full_path(const char *root, const char *path, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s%s", root ? root : "", path);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int sysctl_read_int(const char *root, const char *path, long *ret)
{
	char p[512], buf[32], *end;
	_cleanup_close_ int fd = -1;
	ssize_t n;
	long v;
	int r;

	r = full_path(root, path, p, sizeof(p));
	if (r < 0)
		return r;
	fd = open(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -EIO;
	buf[n] = '\0';
	errno = 0;
	v = strtol(buf, &end, 10);
	if (errno || end == buf)
		return -EIO;
	*ret = v;
	return 0;
}

int sysctl_write_int(const char *root, const char *path, long v)
{
	char p[512], buf[32];
	_cleanup_close_ int fd = -1;
	ssize_t n;
	int r, len;

	r = full_path(root, path, p, sizeof(p));
	if (r < 0)
		return r;
	fd = open(p, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	len = snprintf(buf, sizeof(buf), "%ld", v);
	n = write(fd, buf, (size_t)len);
	if (n < 0)
		return -errno;
	return n == len ? 0 : -EIO;
}

int sysctl_set_int(const char *root, const char *path, long v, struct diag_list *d)
{
	const char *name = strncmp(path, "/proc/sys/", 10) == 0 ? path + 10 : path;
	long cur = 0;
	int r;

	if (sysctl_read_int(root, path, &cur) >= 0 && cur == v)
		return 0;
	r = sysctl_write_int(root, path, v);
	if (r < 0) {
		diag_add(d, DIAG_ERROR, NULL, NULL, NULL, "cannot set %s to %ld: %s", name, v,
			 strerror(-r));
		return r;
	}
	diag_add(d, DIAG_NOTE, NULL, NULL, NULL, "set %s to %ld (was %ld)", name, v, cur);
	return 1;
}

static int ct_max_apply(const struct ct_sysctls *c, const char *root, struct diag_list *d)
{
	long hashsize = 0;
	int r;

	r = sysctl_set_int(root, NETFILTER "nf_conntrack_max", c->max, d);
	if (r == -EACCES || r == -EPERM || r == -EROFS) {
		/* kube-proxy reports a read-only /proc/sys and goes on. */
		d->items[d->n - 1].level = DIAG_WARNING;
		return 0;
	}
	if (r < 0)
		return r;
	if (sysctl_read_int(root, HASHSIZE, &hashsize) < 0 || hashsize >= c->max / 4)
		return 0;
	r = sysctl_set_int(root, HASHSIZE, c->max / 4, d);
	if (r < 0)
		/* A read-only /sys (kube-proxy's errReadOnlySysFS): reported, not fatal. */
		d->items[d->n - 1].level = DIAG_WARNING;
	return 0;
}

int ct_sysctls_apply(const struct ct_sysctls *c, const char *root, bool host_netns,
		     struct diag_list *d)
{
	const struct {
		const char *name;
		long v;
	} timeouts[] = {
		{ NETFILTER "nf_conntrack_tcp_timeout_established", c->tcp_established_sec },
		{ NETFILTER "nf_conntrack_tcp_timeout_close_wait", c->tcp_close_wait_sec },
		{ NETFILTER "nf_conntrack_udp_timeout", c->udp_sec },
		{ NETFILTER "nf_conntrack_udp_timeout_stream", c->udp_stream_sec },
	};
	int r;

	if (c->max > 0 && host_netns) {
		r = ct_max_apply(c, root, d);
		if (r < 0)
			return r;
	} else if (c->max > 0 && c->max_given) {
		diag_add(d, DIAG_WARNING, NULL, NULL, NULL,
			 "nf_conntrack_max and the conntrack hash size are the host's, not this "
			 "network namespace's: left as they are (wanted %ld)",
			 c->max);
	}
	for (size_t i = 0; i < ARRAY_SIZE(timeouts); i++) {
		if (timeouts[i].v <= 0)
			continue;
		r = sysctl_set_int(root, timeouts[i].name, timeouts[i].v, d);
		if (r < 0)
			return r;
	}
	if (c->tcp_be_liberal) {
		r = sysctl_set_int(root, NETFILTER "nf_conntrack_tcp_be_liberal", 1, d);
		if (r < 0)
			return r;
	}
	return 0;
}
