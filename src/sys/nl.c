/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <linux/rtnetlink.h>
#include <netlink/addr.h>
#include <netlink/cache.h>
#include <netlink/errno.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/socket.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "sys/nl.h"
#include "util.h"

int nlerr_to_errno(int nle)
{
	static const int map[] = {
		[NLE_SUCCESS] = 0,
		[NLE_FAILURE] = EIO,
		[NLE_INTR] = EINTR,
		[NLE_BAD_SOCK] = EBADF,
		[NLE_AGAIN] = EAGAIN,
		[NLE_NOMEM] = ENOMEM,
		[NLE_EXIST] = EEXIST,
		[NLE_INVAL] = EINVAL,
		[NLE_RANGE] = ERANGE,
		[NLE_MSGSIZE] = EMSGSIZE,
		[NLE_OPNOTSUPP] = EOPNOTSUPP,
		[NLE_AF_NOSUPPORT] = EAFNOSUPPORT,
		[NLE_OBJ_NOTFOUND] = ENOENT,
		[NLE_NOATTR] = ENODATA,
		[NLE_MISSING_ATTR] = EINVAL,
		[NLE_AF_MISMATCH] = EINVAL,
		[NLE_SEQ_MISMATCH] = EPROTO,
		[NLE_MSG_OVERFLOW] = EOVERFLOW,
		[NLE_MSG_TRUNC] = EMSGSIZE,
		[NLE_NOADDR] = EADDRNOTAVAIL,
		[NLE_SRCRT_NOSUPPORT] = EOPNOTSUPP,
		[NLE_MSG_TOOSHORT] = EPROTO,
		[NLE_MSGTYPE_NOSUPPORT] = EOPNOTSUPP,
		[NLE_OBJ_MISMATCH] = EINVAL,
		[NLE_NOCACHE] = ENOENT,
		[NLE_BUSY] = EBUSY,
		[NLE_PROTO_MISMATCH] = EPROTONOSUPPORT,
		[NLE_NOACCESS] = EACCES,
		[NLE_PERM] = EPERM,
		[NLE_PKTLOC_FILE] = ENOENT,
		[NLE_PARSE_ERR] = EINVAL,
		[NLE_NODEV] = ENODEV,
		[NLE_IMMUTABLE] = EPERM,
		[NLE_DUMP_INTR] = EAGAIN,
		[NLE_ATTRSIZE] = EINVAL,
	};
	int n = nle < 0 ? -nle : nle;

	if (n == 0)
		return 0;
	if ((size_t)n >= ARRAY_SIZE(map) || map[n] == 0)
		return -EIO;
	return -map[n];
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct nl_sock *, nl_socket_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(struct nl_cache *, nl_cache_free)

struct collect {
	int family;
	struct ipaddr *v;
	size_t n, cap;
	int err;
};

static void collect_one(struct nl_object *obj, void *arg)
{
	struct collect *c = arg;
	struct rtnl_addr *ra = (struct rtnl_addr *)obj;
	struct nl_addr *local = rtnl_addr_get_local(ra);
	struct ipaddr a = { 0 };
	size_t len;

	int fam = local ? rtnl_addr_get_family(ra) : 0;

	if (c->err || !local || (fam != AF_INET && fam != AF_INET6) ||
	    (c->family != AF_UNSPEC && fam != c->family))
		return;
	len = nl_addr_get_len(local);
	if ((fam == AF_INET && len != 4) || (fam == AF_INET6 && len != 16))
		return;
	a.family = (uint8_t)fam;
	memcpy(a.u.b, nl_addr_get_binary_addr(local), len);
	if (GROW(c->v, c->cap, c->n + 1) < 0) {
		c->err = -ENOMEM;
		return;
	}
	c->v[c->n++] = a;
}

static int ipaddr_qcmp(const void *a, const void *b)
{
	return ipaddr_cmp(a, b);
}

static int dump_with(struct nl_sock *sk, int family, struct ipaddr **ret_addrs, size_t *ret_n)
{
	_cleanup_(nl_cache_freep) struct nl_cache *cache = NULL;
	struct collect c = { .family = family };
	size_t i, o;
	int r, tries;

	/* A dump interrupted by a concurrent change is retried (bounded). */
	for (tries = 0; tries < 5; tries++) {
		r = rtnl_addr_alloc_cache(sk, &cache);
		if (r != -NLE_DUMP_INTR)
			break;
	}
	if (r < 0)
		return nlerr_to_errno(r);
	nl_cache_foreach(cache, collect_one, &c);
	if (c.err) {
		free(c.v);
		return c.err;
	}
	if (c.n)
		qsort_safe(c.v, c.n, sizeof(*c.v), ipaddr_qcmp);
	for (i = 0, o = 0; i < c.n; i++)
		if (o == 0 || ipaddr_cmp(&c.v[o - 1], &c.v[i]) != 0)
			c.v[o++] = c.v[i];
	*ret_addrs = c.v;
	*ret_n = o;
	return 0;
}

static int connect_route(struct nl_sock **ret)
{
	_cleanup_(nl_socket_freep) struct nl_sock *sk = NULL;
	int r;

	sk = nl_socket_alloc();
	if (!sk)
		return -ENOMEM;
	r = nl_connect(sk, NETLINK_ROUTE);
	if (r < 0)
		return nlerr_to_errno(r);
	*ret = TAKE_PTR(sk);
	return 0;
}

int nladdrs_dump(int family, struct ipaddr **ret_addrs, size_t *ret_n)
{
	_cleanup_(nl_socket_freep) struct nl_sock *sk = NULL;
	int r;

	if (family != AF_UNSPEC && family != AF_INET && family != AF_INET6)
		return -EAFNOSUPPORT;
	r = connect_route(&sk);
	if (r < 0)
		return r;
	return dump_with(sk, family, ret_addrs, ret_n);
}

struct nladdrs_watch {
	struct loop *loop;
	int family;
	nladdrs_fn fn;
	void *userdata;
	struct nl_sock *events; /* notifications */
	struct nl_sock *sync;   /* dumps */
	struct ipaddr *addrs;
	size_t n;
};

static int count_msg(struct nl_msg *msg, void *arg)
{
	return NL_OK;
}

static bool same_set(const struct ipaddr *a, size_t na, const struct ipaddr *b, size_t nb)
{
	size_t i;

	if (na != nb)
		return false;
	for (i = 0; i < na; i++)
		if (ipaddr_cmp(&a[i], &b[i]) != 0)
			return false;
	return true;
}

/*
 * A dump on the watcher's own socket.  One that failed half way may leave
 * the rest of its answer in the socket, which every later dump would read
 * as its own and fail (NLE_SEQ_MISMATCH) for good: after a failure the
 * socket is replaced and the dump tried once more, so that a change is not
 * missed until the next notification.
 */
static int watch_dump(struct nladdrs_watch *w, struct ipaddr **ret_addrs, size_t *ret_n)
{
	int r = w->sync ? dump_with(w->sync, w->family, ret_addrs, ret_n) : -ENOTCONN;

	if (r >= 0 || r == -ENOMEM)
		return r;
	if (w->sync)
		nl_socket_free(w->sync);
	w->sync = NULL;
	r = connect_route(&w->sync);
	if (r < 0)
		return r;
	return dump_with(w->sync, w->family, ret_addrs, ret_n);
}

static int on_events(struct loop *l, int fd, uint32_t events, void *userdata)
{
	struct nladdrs_watch *w = userdata;
	struct ipaddr *v = NULL;
	size_t n = 0;
	int r;

	/* Only "something changed" matters: drain, then re-dump once.  An
	 * error here (ENOBUFS: notifications lost) is recovered by the same
	 * full dump. */
	for (;;) {
		r = nl_recvmsgs_default(w->events);
		if (r < 0)
			break;
	}
	r = watch_dump(w, &v, &n);
	if (r < 0)
		return r == -ENOMEM ? r : 0;
	if (same_set(v, n, w->addrs, w->n)) {
		free(v);
		return 0;
	}
	free(w->addrs);
	w->addrs = v;
	w->n = n;
	w->fn(w->addrs, w->n, w->userdata);
	return 0;
}

int nladdrs_watch_new(struct loop *l, int family, nladdrs_fn fn, void *userdata,
		      struct nladdrs_watch **ret)
{
	struct nladdrs_watch *w;
	int r;

	if (family != AF_UNSPEC && family != AF_INET && family != AF_INET6)
		return -EAFNOSUPPORT;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->loop = l;
	w->family = family;
	w->fn = fn;
	w->userdata = userdata;
	w->events = nl_socket_alloc();
	if (!w->events) {
		r = -ENOMEM;
		goto fail;
	}
	nl_socket_disable_seq_check(w->events);
	nl_socket_modify_cb(w->events, NL_CB_VALID, NL_CB_CUSTOM, count_msg, NULL);
	r = nlerr_to_errno(nl_connect(w->events, NETLINK_ROUTE));
	if (r < 0)
		goto fail;
	if (family != AF_INET6)
		r = nlerr_to_errno(nl_socket_add_membership(w->events, RTNLGRP_IPV4_IFADDR));
	if (r >= 0 && family != AF_INET)
		r = nlerr_to_errno(nl_socket_add_membership(w->events, RTNLGRP_IPV6_IFADDR));
	if (r < 0)
		goto fail;
	r = nlerr_to_errno(nl_socket_set_nonblocking(w->events));
	if (r < 0)
		goto fail;
	r = connect_route(&w->sync);
	if (r < 0)
		goto fail;
	/* Subscribed before the dump: a change in between is not lost. */
	r = dump_with(w->sync, family, &w->addrs, &w->n);
	if (r < 0)
		goto fail;
	r = loop_add_io(l, nl_socket_get_fd(w->events), EPOLLIN, on_events, w);
	if (r < 0)
		goto fail;
	*ret = w;
	return 0;
fail:
	nladdrs_watch_free(w);
	return r;
}

void nladdrs_watch_free(struct nladdrs_watch *w)
{
	if (!w)
		return;
	if (w->events) {
		loop_del_io(w->loop, nl_socket_get_fd(w->events));
		nl_socket_free(w->events);
	}
	if (w->sync)
		nl_socket_free(w->sync);
	free(w->addrs);
	free(w);
}

void nladdrs_watch_get(const struct nladdrs_watch *w, const struct ipaddr **ret_a, size_t *ret_n)
{
	*ret_a = w->addrs;
	*ret_n = w->n;
}
