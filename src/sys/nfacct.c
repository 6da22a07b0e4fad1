/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nfnetlink_acct requests: one socket per request, a GET of one object or
 * a NEW, each acknowledged (NLM_F_ACK) so that the reply ends with the
 * kernel's error message or its ACK.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libmnl/libmnl.h>
#include <libnetfilter_acct/libnetfilter_acct.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_acct.h>

#include "sys/nfacct.h"
#include "util.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(struct mnl_socket *, mnl_socket_close)
DEFINE_TRIVIAL_CLEANUP_FUNC(struct nfacct *, nfacct_free)

struct get_ctx {
	struct nfacct_counter *ret;
	bool seen;
	bool bad;
};

static int get_cb(const struct nlmsghdr *nlh, void *data)
{
	struct get_ctx *g = data;
	_cleanup_(nfacct_freep) struct nfacct *a = nfacct_alloc();

	if (!a)
		return MNL_CB_ERROR;
	if (nfacct_nlmsg_parse_payload(nlh, a) < 0 ||
	    !nfacct_attr_get(a, NFACCT_ATTR_PKTS) || !nfacct_attr_get(a, NFACCT_ATTR_BYTES)) {
		g->bad = true;
		return MNL_CB_OK;
	}
	g->ret->packets = nfacct_attr_get_u64(a, NFACCT_ATTR_PKTS);
	g->ret->bytes = nfacct_attr_get_u64(a, NFACCT_ATTR_BYTES);
	g->seen = true;
	return MNL_CB_OK;
}

/* Send the one request in buf and read until its ACK or error: 0 or -errno. */
static int talk(char *buf, size_t bufsize, mnl_cb_t cb, void *data)
{
	_cleanup_(mnl_socket_closep) struct mnl_socket *nl = mnl_socket_open(NETLINK_NETFILTER);
	struct nlmsghdr *nlh = (struct nlmsghdr *)buf;
	uint32_t portid, seq = nlh->nlmsg_seq;
	ssize_t n;
	int r;

	if (!nl || mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0)
		return -errno;
	portid = mnl_socket_get_portid(nl);
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	for (;;) {
		n = mnl_socket_recvfrom(nl, buf, bufsize);
		if (n < 0)
			return -errno;
		errno = 0;
		r = mnl_cb_run(buf, (size_t)n, seq, portid, cb, data);
		if (r < 0)
			return errno ? -errno : -EPROTO;
		if (r == MNL_CB_STOP)
			return 0;
	}
}

static int request(const char *name, uint8_t cmd, uint16_t flags, mnl_cb_t cb, void *data)
{
	_cleanup_(nfacct_freep) struct nfacct *a = NULL;
	_cleanup_free_ char *buf = NULL;
	struct nlmsghdr *nlh;

	if (!name || !name[0] || strlen(name) > NFACCT_NAME_MAXLEN)
		return -EINVAL;
	buf = calloc(1, MNL_SOCKET_BUFFER_SIZE); /* attribute padding is sent too */
	a = nfacct_alloc();
	if (!buf || !a)
		return -ENOMEM;
	nlh = nfacct_nlmsg_build_hdr(buf, cmd, (uint16_t)(flags | NLM_F_ACK), (uint32_t)time(NULL));
	nfacct_attr_set_str(a, NFACCT_ATTR_NAME, name);
	nfacct_nlmsg_build_payload(nlh, a);
	return talk(buf, MNL_SOCKET_BUFFER_SIZE, cb, data);
}

int nfacct_get(const char *name, struct nfacct_counter *ret)
{
	struct nfacct_counter c = { 0 };
	struct get_ctx g = { .ret = &c };
	int r;

	r = request(name, NFNL_MSG_ACCT_GET, 0, get_cb, &g);
	if (r < 0)
		return r;
	if (g.bad || !g.seen)
		return -EPROTO;
	*ret = c;
	return 0;
}

int nfacct_ensure(const char *name)
{
	struct nfacct_counter c;
	int r;

	r = nfacct_get(name, &c);
	if (r != -ENOENT)
		return r;
	/* Without NLM_F_REPLACE an existing object is left as it is and the
	 * kernel answers EBUSY: another process made it meanwhile. */
	r = request(name, NFNL_MSG_ACCT_NEW, NLM_F_CREATE, NULL, NULL);
	return r == -EBUSY ? 0 : r;
}
