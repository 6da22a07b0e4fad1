/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>

#include <libmnl/libmnl.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>

#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/gen.h>
#include <libnftnl/rule.h>

#include "backend/nft/nftbatch.h"
#include "backend/writer.h"
#include "core/ruleset.h"
#include "util.h"

/* Pages of the batch iovec: large, so that IOV_MAX (1024) pages hold
 * more than any table the kernel takes. */
#define PAGE_BYTES (2u << 20)
/* Room every message gets; svcnat's largest rule is a few KiB. */
#define MSG_MAX (64u << 10)
#define RECV_BYTES (256u << 10)
/* Errors reported one by one before "and N more". */
#define MAX_REPORTED 8

struct nftsock {
	struct mnl_socket *nl;
	uint32_t portid;
	uint32_t seq;
	int sndbuf, rcvbuf;
	char *buf; /* RECV_BYTES */
};

struct page {
	char *buf;
	size_t len;
};

struct nftbatch {
	struct page *pages;
	size_t n_pages, cap_pages;
	struct nftmsg_ctx *ctx; /* ctx[i] is message seq i + 1 */
	size_t n, cap;
	size_t bytes;
	struct nlmsghdr *cur; /* built by nftbatch_msg, not yet pushed */
};

const char *nftbatch_errno_meaning(int err)
{
	switch (err) {
	case EPERM:
	case EACCES:
		return "svcnat needs CAP_NET_ADMIN (run it as root)";
	case ENOENT:
		return "a table, chain, match or target it names does not exist "
		       "(a missing nft_compat or xt_* module?)";
	case EOPNOTSUPP:
	case EPROTONOSUPPORT:
	case EAFNOSUPPORT:
		return "this kernel has no nf_tables support for it (nf_tables, nft_compat); "
		       "try --backend=direct";
	case EEXIST:
		return "it already exists";
	case EBUSY:
		return "the chain is still referenced by a rule, or the table is in use";
	case ELOOP:
		return "the chains would form a loop";
	case EINVAL:
		return "the kernel refused an option or a target in this table or chain "
		       "(dmesg may say which)";
	case ENOMEM:
		return "the kernel is short of memory";
	case EMSGSIZE:
	case ENOBUFS:
		return "the batch is larger than the netlink socket takes";
	case ERESTART:
		return "another program changed the ruleset meanwhile";
	default:
		return NULL;
	}
}

static int open_meaning(int err, struct diag_list *d)
{
	const char *why = err == EPROTONOSUPPORT || err == EAFNOSUPPORT || err == EOPNOTSUPP ||
					  err == ENOENT || err == EINVAL
				  ? "this kernel has no nf_tables (CONFIG_NF_TABLES, nf_tables module); "
				    "try --backend=direct"
				  : nftbatch_errno_meaning(err);

	diag_add(d, DIAG_ERROR, "nf_tables", NULL, NULL, "%s%s%s", strerror(err), why ? ": " : "",
		 why ? why : "");
	return -err;
}

int nftsock_open(struct nftsock **ret, struct diag_list *d)
{
	struct nftsock *s = calloc(1, sizeof(*s));
	int one = 1;
	uint32_t gen;
	int r;

	if (!s)
		return -ENOMEM;
	s->buf = malloc(RECV_BYTES);
	if (!s->buf) {
		free(s);
		return -ENOMEM;
	}
	s->nl = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC);
	if (!s->nl || mnl_socket_bind(s->nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		int err = errno;

		nftsock_close(s);
		return open_meaning(err, d);
	}
	s->portid = mnl_socket_get_portid(s->nl);
	s->seq = (uint32_t)time(NULL);
	/* Errors carry only the refused message's header, not its body. */
	mnl_socket_setsockopt(s->nl, NETLINK_CAP_ACK, &one, sizeof(one));
	mnl_socket_setsockopt(s->nl, NETLINK_EXT_ACK, &one, sizeof(one));
	/* Every nfnetlink request needs CAP_NET_ADMIN; ask once, to say so
	 * up front rather than at the first write. */
	r = nftsock_getgen(s, &gen);
	if (r < 0) {
		nftsock_close(s);
		return open_meaning(-r, d);
	}
	*ret = s;
	return 0;
}

void nftsock_close(struct nftsock *s)
{
	if (!s)
		return;
	if (s->nl)
		mnl_socket_close(s->nl);
	free(s->buf);
	free(s);
}

static int gen_cb(const struct nlmsghdr *nlh, void *data)
{
	struct nftnl_gen *g = nftnl_gen_alloc();

	if (!g)
		return MNL_CB_ERROR;
	if (nftnl_gen_nlmsg_parse(nlh, g) < 0) {
		nftnl_gen_free(g);
		return MNL_CB_ERROR;
	}
	*(uint32_t *)data = nftnl_gen_get_u32(g, NFTNL_GEN_ID);
	nftnl_gen_free(g);
	return MNL_CB_OK;
}

/* Send one request and run cb over the answers until the ack or done. */
static int talk(struct nftsock *s, struct nlmsghdr *nlh, mnl_cb_t cb, void *data)
{
	uint32_t seq = nlh->nlmsg_seq;
	int r;

	if (mnl_socket_sendto(s->nl, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	for (;;) {
		ssize_t n = mnl_socket_recvfrom(s->nl, s->buf, RECV_BYTES);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		r = mnl_cb_run(s->buf, (size_t)n, seq, s->portid, cb, data);
		if (r < 0)
			return -errno;
		if (r == MNL_CB_STOP)
			return 0;
	}
}

int nftsock_getgen(struct nftsock *s, uint32_t *ret)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh =
		nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETGEN, AF_UNSPEC, NLM_F_ACK, ++s->seq);
	uint32_t gen = 0;
	int r = talk(s, nlh, gen_cb, &gen);

	if (r < 0)
		return r;
	*ret = gen;
	return 0;
}

struct dump_ctx {
	int (*cb)(const struct nlmsghdr *nlh, void *data);
	void *data;
	int err;
	bool intr;
};

static int dump_cb(const struct nlmsghdr *nlh, void *data)
{
	struct dump_ctx *c = data;
	int r;

	if (nlh->nlmsg_flags & NLM_F_DUMP_INTR)
		c->intr = true;
	r = c->cb(nlh, c->data);
	if (r < 0) {
		c->err = r;
		return MNL_CB_ERROR;
	}
	return MNL_CB_OK;
}

int nftsock_dump(struct nftsock *s, uint8_t nfproto, uint16_t type, const char *table,
		 const char *chain, int (*cb)(const struct nlmsghdr *nlh, void *data), void *data)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct dump_ctx c = { .cb = cb, .data = data };
	struct nlmsghdr *nlh;
	int r;

	/* libnftnl leaves some padding unwritten: send no stack garbage (the
	 * request, with a table and a chain name, is far smaller than this). */
	memset(buf, 0, 1024);
	nlh = nftnl_nlmsg_build_hdr(buf, type, nfproto, NLM_F_DUMP, ++s->seq);

	if (table && type == NFT_MSG_GETRULE) {
		struct nftnl_rule *fr = nftnl_rule_alloc();

		if (!fr)
			return -ENOMEM;
		nftnl_rule_set_str(fr, NFTNL_RULE_TABLE, table);
		if (chain)
			nftnl_rule_set_str(fr, NFTNL_RULE_CHAIN, chain);
		nftnl_rule_nlmsg_build_payload(nlh, fr);
		nftnl_rule_free(fr);
	} else if (table && type == NFT_MSG_GETCHAIN) {
		struct nftnl_chain *fc = nftnl_chain_alloc();

		if (!fc)
			return -ENOMEM;
		nftnl_chain_set_str(fc, NFTNL_CHAIN_TABLE, table);
		nftnl_chain_nlmsg_build_payload(nlh, fc);
		nftnl_chain_free(fc);
	}
	r = talk(s, nlh, dump_cb, &c);
	if (c.err < 0)
		return c.err;
	if (r < 0)
		return r;
	return c.intr ? -EINTR : 0;
}

/* --- the batch --- */

struct nftbatch *nftbatch_new(void)
{
	struct nftbatch *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	/* Message 0 is BEGIN, written at commit into the room kept here. */
	if (!nftbatch_msg(b, NFPROTO_UNSPEC, NFNL_MSG_BATCH_BEGIN, 0)) {
		nftbatch_free(b);
		return NULL;
	}
	b->pages[0].len = MNL_ALIGN(sizeof(struct nlmsghdr)) + MNL_ALIGN(sizeof(struct nfgenmsg)) +
			  MNL_ATTR_HDRLEN + MNL_ALIGN(sizeof(uint32_t));
	b->cur = NULL;
	return b;
}

void nftbatch_free(struct nftbatch *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->n_pages; i++)
		free(b->pages[i].buf);
	free(b->pages);
	free(b->ctx);
	free(b);
}

struct nlmsghdr *nftbatch_msg(struct nftbatch *b, uint8_t nfproto, uint16_t type, uint16_t flags)
{
	struct page *p = b->n_pages ? &b->pages[b->n_pages - 1] : NULL;

	if (!p || p->len + MSG_MAX > PAGE_BYTES) {
		if (GROW(b->pages, b->cap_pages, b->n_pages + 1) < 0)
			return NULL;
		p = &b->pages[b->n_pages];
		/* Zeroed, as libnftnl leaves some padding unwritten. */
		p->buf = calloc(1, PAGE_BYTES);
		if (!p->buf)
			return NULL;
		p->len = 0;
		b->n_pages++;
	}
	/* Message i + 1 has sequence number i + 1; BEGIN is 0. */
	b->cur = nftnl_nlmsg_build_hdr(p->buf + p->len, type, nfproto, flags | NLM_F_REQUEST,
				       (uint32_t)b->n + 1);
	return b->cur;
}

int nftbatch_push(struct nftbatch *b, const struct nftmsg_ctx *ctx)
{
	struct page *p = &b->pages[b->n_pages - 1];

	if (!b->cur)
		return -EINVAL;
	if (GROW(b->ctx, b->cap, b->n + 1) < 0)
		return -ENOMEM;
	b->ctx[b->n++] = *ctx;
	p->len += MNL_ALIGN(b->cur->nlmsg_len);
	b->bytes += MNL_ALIGN(b->cur->nlmsg_len);
	b->cur = NULL;
	return 0;
}

size_t nftbatch_count(const struct nftbatch *b)
{
	return b->n;
}

size_t nftbatch_bytes(const struct nftbatch *b)
{
	return b->bytes;
}

static const char *op_words(uint8_t op)
{
	switch (op) {
	case NFTMSG_TABLE_ADD:
		return "creating the table";
	case NFTMSG_CHAIN_ADD:
		return "creating chain";
	case NFTMSG_CHAIN_DEL:
		return "deleting chain";
	case NFTMSG_CHAIN_FLUSH:
		return "flushing chain";
	case NFTMSG_RULE_ADD:
		return "adding a rule to chain";
	case NFTMSG_RULE_DEL:
		return "deleting a rule of chain";
	default:
		return "writing";
	}
}

static void report(struct nftbatch *b, uint32_t seq, int err, struct diag_list *d)
{
	const char *why = nftbatch_errno_meaning(err);
	const struct nftmsg_ctx *c;
	struct writer_table tab;
	char rule[32] = "";

	if (seq == 0 || seq > b->n) {
		diag_add(d, DIAG_ERROR, "nf_tables", NULL, NULL,
			 "the kernel refused the transaction: %s%s%s", strerror(err),
			 why ? ": " : "", why ? why : "");
		return;
	}
	c = &b->ctx[seq - 1];
	if (c->rule >= 0)
		snprintf(rule, sizeof(rule), " (rule %ld)", c->rule + 1);
	tab.family = (enum writer_family)c->family;
	tab.table = (enum rs_table)c->table;
	diag_add(d, DIAG_ERROR, "nf_tables", writer_table_name(&tab), c->chain,
		 "%s%s%s%s refused: %s%s%s", op_words(c->op), c->op == NFTMSG_TABLE_ADD ? "" : " ",
		 c->op == NFTMSG_TABLE_ADD ? "" : (c->chain ? c->chain : "?"), rule, strerror(err),
		 why ? ": " : "", why ? why : "");
}

/* Write BEGIN (with the generation) and END around the messages. */
static int seal(struct nftbatch *b, uint32_t genid)
{
	struct nlmsghdr *nlh = nftnl_batch_begin(b->pages[0].buf, 0);

	mnl_attr_put_u32(nlh, NFNL_BATCH_GENID, htonl(genid));
	if (!nftbatch_msg(b, NFPROTO_UNSPEC, NFNL_MSG_BATCH_END, 0))
		return -ENOMEM;
	nftnl_batch_end((char *)b->cur, (uint32_t)b->n + 1);
	b->pages[b->n_pages - 1].len += MNL_ALIGN(b->cur->nlmsg_len);
	b->cur = NULL;
	return 0;
}

static void raise_buf(struct nftsock *s, int opt, int fallback, int *have, size_t want)
{
	int v = want > (size_t)(1u << 30) ? 1 << 30 : (int)want;

	if (v <= *have)
		return;
	/* SOL_SOCKET: mnl_socket_setsockopt() sets SOL_NETLINK options. */
	if (setsockopt(mnl_socket_get_fd(s->nl), SOL_SOCKET, opt, &v, sizeof(v)) == 0 ||
	    setsockopt(mnl_socket_get_fd(s->nl), SOL_SOCKET, fallback, &v, sizeof(v)) == 0)
		*have = v;
}

int nftbatch_commit(struct nftsock *s, struct nftbatch *b, uint32_t genid, struct diag_list *d)
{
	_cleanup_free_ struct iovec *iov = NULL;
	struct sockaddr_nl snl = { .nl_family = AF_NETLINK };
	struct msghdr msg = { .msg_name = &snl, .msg_namelen = sizeof(snl) };
	size_t total = 0, errors = 0;
	int first = 0, r;
	bool lost = false, restart = false;

	r = seal(b, genid);
	if (r < 0)
		return r;
	iov = calloc(b->n_pages, sizeof(*iov));
	if (!iov)
		return -ENOMEM;
	for (size_t i = 0; i < b->n_pages; i++) {
		iov[i].iov_base = b->pages[i].buf;
		iov[i].iov_len = b->pages[i].len;
		total += b->pages[i].len;
	}
	msg.msg_iov = iov;
	msg.msg_iovlen = b->n_pages;
	raise_buf(s, SO_SNDBUFFORCE, SO_SNDBUF, &s->sndbuf, total + (64u << 10));
	/* Room for an error per message (CAP_ACK keeps each small), within reason. */
	raise_buf(s, SO_RCVBUFFORCE, SO_RCVBUF, &s->rcvbuf,
		  b->n > 65536 ? 64u << 20 : (b->n + 1024) * 1024);
	for (;;) {
		if (sendmsg(mnl_socket_get_fd(s->nl), &msg, 0) >= 0)
			break;
		if (errno == EINTR)
			continue;
		r = -errno;
		diag_add(d, DIAG_ERROR, "nf_tables", NULL, NULL,
			 "sending the batch (%zu messages, %zu bytes) failed: %s%s%s", b->n, total,
			 strerror(-r), nftbatch_errno_meaning(-r) ? ": " : "",
			 nftbatch_errno_meaning(-r) ? nftbatch_errno_meaning(-r) : "");
		return r;
	}
	/*
	 * The kernel processes the batch inside sendmsg (netlink to the
	 * kernel is synchronous), so every answer is queued by now: drain
	 * without waiting.  Without NLM_F_ACK on the messages only refusals
	 * are answered.
	 */
	for (;;) {
		ssize_t n = recv(mnl_socket_get_fd(s->nl), s->buf, RECV_BYTES, MSG_DONTWAIT);
		int len;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ENOBUFS) {
				lost = true;
				continue;
			}
			break;
		}
		len = (int)n;
		for (const struct nlmsghdr *h = (const void *)s->buf; mnl_nlmsg_ok(h, len);
		     h = mnl_nlmsg_next(h, &len)) {
			const struct nlmsgerr *e = mnl_nlmsg_get_payload(h);

			if (h->nlmsg_type != NLMSG_ERROR || h->nlmsg_len < NLMSG_LENGTH(sizeof(*e)) ||
			    e->error == 0)
				continue;
			if (e->msg.nlmsg_seq == 0 && -e->error == ERESTART)
				restart = true;
			if (!first)
				first = e->error;
			if (errors++ < MAX_REPORTED && !(restart && e->msg.nlmsg_seq == 0))
				report(b, e->msg.nlmsg_seq, -e->error, d);
		}
	}
	if (restart)
		return -EAGAIN;
	if (errors > MAX_REPORTED)
		diag_add(d, DIAG_ERROR, "nf_tables", NULL, NULL, "and %zu more refusals",
			 errors - MAX_REPORTED);
	if (!errors && lost) {
		diag_add(d, DIAG_ERROR, "nf_tables", NULL, NULL,
			 "the kernel's answers to the batch overflowed the socket; it refused the "
			 "batch, for reasons lost: every table keeps its previous rules");
		return -ENOBUFS;
	}
	if (errors) {
		diag_add(d, DIAG_ERROR, "nf_tables", NULL, NULL,
			 "the kernel applied none of the batch: every table keeps its previous rules");
		return first;
	}
	return 0;
}
