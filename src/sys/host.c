/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sys/host.h"
#include "sys/sysctl.h"
#include "util.h"

void host_name_lower(char *s)
{
	for (; *s; s++)
		*s = (char)tolower((unsigned char)*s);
}

int host_name(char **ret)
{
	char buf[256];
	char *s;

	if (gethostname(buf, sizeof(buf)) < 0)
		return -errno;
	buf[sizeof(buf) - 1] = '\0';
	host_name_lower(buf);
	s = strdup(buf);
	if (!s)
		return -ENOMEM;
	*ret = s;
	return 0;
}

long host_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 ? n : 1;
}

static int path_under(const char *root, const char *path, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s%s", root, path);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(FILE *, fclose)

int host_caps_effective(const char *root, uint64_t *ret)
{
	_cleanup_(fclosep) FILE *f = NULL;
	char p[512], line[256];
	int r;

	r = path_under(root, "/proc/self/status", p, sizeof(p));
	if (r < 0)
		return r;
	f = fopen(p, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long eff;

		if (sscanf(line, "CapEff: %llx", &eff) == 1) {
			*ret = eff;
			return 0;
		}
	}
	return -EIO;
}

bool host_has_net_admin(const char *root)
{
	uint64_t eff;

	/* No libcap needed: the kernel prints the set in /proc. */
	if (host_caps_effective(root, &eff) < 0)
		return geteuid() == 0;
	return (eff >> HOST_CAP_NET_ADMIN) & 1;
}

bool host_in_host_netns(const char *root)
{
	char self[512], init[512];
	struct stat a, b;

	if (path_under(root, "/proc/self/ns/net", self, sizeof(self)) < 0 ||
	    path_under(root, "/proc/1/ns/net", init, sizeof(init)) < 0)
		return false;
	return stat(self, &a) == 0 && stat(init, &b) == 0 && a.st_ino == b.st_ino &&
	       a.st_dev == b.st_dev;
}

int host_set_oom_score(const char *root, int adj)
{
	return sysctl_write_int(root, "/proc/self/oom_score_adj", adj);
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct ifaddrs *, freeifaddrs)

int host_addresses(struct ipaddr **ret, size_t *ret_n)
{
	_cleanup_(freeifaddrsp) struct ifaddrs *ifa = NULL;
	_cleanup_free_ struct ipaddr *v = NULL;
	size_t n = 0, cap = 0;

	if (getifaddrs(&ifa) < 0)
		return -errno;
	for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
		struct ipaddr a = { 0 };

		if (!i->ifa_addr)
			continue;
		if (i->ifa_addr->sa_family == AF_INET) {
			a.family = AF_INET;
			a.u.v4 = ((struct sockaddr_in *)i->ifa_addr)->sin_addr;
		} else if (i->ifa_addr->sa_family == AF_INET6) {
			a.family = AF_INET6;
			a.u.v6 = ((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr;
		} else {
			continue;
		}
		if (GROW(v, cap, n + 1) < 0)
			return -ENOMEM;
		v[n++] = a;
	}
	*ret = TAKE_PTR(v);
	*ret_n = n;
	return 0;
}

/*
 * kube-proxy's conntrack settings (cmd/kube-proxy/app/server_linux.go,
 * setupConntrack), its defaults for what neither a flag nor the
 * KubeProxyConfiguration gave: 32768 per CPU (at least 131072) for
 * nf_conntrack_max, 24 h established and 1 h CLOSE_WAIT TCP timeouts.
 */
static int conntrack_sysctls(const char *root, const struct conntrack_settings *ct,
			     struct diag_list *d)
{
	long per = ct->max_per_core >= 0 ? ct->max_per_core : CT_DEFAULT_MAX_PER_CORE;
	long min = ct->min >= 0 ? ct->min : CT_DEFAULT_MIN;
	struct ct_sysctls c = {
		.max = ct_sysctls_max(per, min, host_cpus()),
		.max_given = ct->max_per_core >= 0 || ct->min >= 0,
		.tcp_established_sec = ct->tcp_established_usec == CT_TIMEOUT_DEFAULT ?
					       CT_DEFAULT_TCP_ESTABLISHED_SEC :
					       (long)(ct->tcp_established_usec / 1000000),
		.tcp_close_wait_sec = ct->tcp_close_wait_usec == CT_TIMEOUT_DEFAULT ?
					      CT_DEFAULT_TCP_CLOSE_WAIT_SEC :
					      (long)(ct->tcp_close_wait_usec / 1000000),
		.udp_sec = (long)(ct->udp_usec / 1000000),
		.udp_stream_sec = (long)(ct->udp_stream_usec / 1000000),
		.tcp_be_liberal = ct->tcp_be_liberal,
	};

	return ct_sysctls_apply(&c, root, host_in_host_netns(root), d);
}

int host_setup_sysctls(const char *root, const struct host_sysctls *h, struct diag_list *d)
{
	static const struct {
		const char *path;
		const char *why;
		bool localhost_only;
	} need[] = {
		{ "/proc/sys/net/ipv4/ip_forward",
		  "service traffic from other hosts and pods is not forwarded", false },
		{ "/proc/sys/net/ipv4/conf/all/route_localnet",
		  "NodePorts on 127.0.0.1 do not work (--localhost-nodeports)", true },
	};
	size_t i;
	long v = 0;
	int r;

	for (i = 0; i < ARRAY_SIZE(need); i++) {
		if (need[i].localhost_only && !h->localhost_nodeports)
			continue;
		r = sysctl_read_int(root, need[i].path, &v);
		if (r < 0 || v == 1)
			continue;
		if (h->set) {
			r = sysctl_set_int(root, need[i].path, 1, d);
			if (r < 0)
				return r;
		} else {
			diag_add(d, DIAG_WARNING, NULL, NULL, NULL,
				 "%s is 0: %s (use --set-sysctls to turn it on)",
				 need[i].path + strlen("/proc/sys/"), need[i].why);
		}
	}
	/* IPv6 forwarding is only warned about: with it on, the kernel
	 * ignores router advertisements (accept_ra 1), which may be what
	 * configures the node's own IPv6 addresses and routes. */
	if (h->global6 &&
	    sysctl_read_int(root, "/proc/sys/net/ipv6/conf/all/forwarding", &v) >= 0 && v == 0)
		diag_add(d, DIAG_WARNING, NULL, NULL, NULL,
			 "net/ipv6/conf/all/forwarding is 0: IPv6 service traffic from other hosts "
			 "and pods is not forwarded (svcnat does not turn it on, --set-sysctls "
			 "neither: forwarding on, the kernel ignores router advertisements)");
	return conntrack_sysctls(root, &h->conntrack, d);
}
