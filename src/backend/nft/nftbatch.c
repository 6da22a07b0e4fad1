/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
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
	bool broken;       /* an answer was left half read: reopen before the next request */
	unsigned reopened; /* times the socket was replaced */
	size_t stale;      /* messages of earlier requests skipped */
	char *buf;         /* RECV_BYTES */
	struct mnl_socket *ev; /* NFNLGRP_NFTABLES notifications, or NULL */
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

/* How long a reply may keep svcnat waiting: the kernel answers inside
 * the request's sendmsg and makes each further dump part inside the
 * recvmsg that asks for it, so only a lost answer ever waits this long. */
#define RECV_TIMEOUT_S 10

/* A new socket in s (s->nl NULL before).  0 or -errno, errno's value. */
static int sock_connect(struct nftsock *s)
{
	struct timeval tv = { .tv_sec = RECV_TIMEOUT_S };
	int one = 1;

	s->nl = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC);
	if (!s->nl || mnl_socket_bind(s->nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		int err = errno;

		if (s->nl)
			mnl_socket_close(s->nl);
		s->nl = NULL;
		return -err;
	}
	s->portid = mnl_socket_get_portid(s->nl);
	s->sndbuf = s->rcvbuf = 0;
	s->broken = false;
	/* Errors carry only the refused message's header, not its body. */
	mnl_socket_setsockopt(s->nl, NETLINK_CAP_ACK, &one, sizeof(one));
	mnl_socket_setsockopt(s->nl, NETLINK_EXT_ACK, &one, sizeof(one));
	setsockopt(mnl_socket_get_fd(s->nl), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return 0;
}

/*
 * A socket whose earlier conversation ended in the middle (a read error,
 * lost messages, a timeout) may still hold the rest of that answer, which
 * every later request would read as its own: open a new one instead.
 */
static int sock_ready(struct nftsock *s)
{
	if (s->nl && !s->broken)
		return 0;
	if (s->nl)
		mnl_socket_close(s->nl);
	s->nl = NULL;
	s->reopened++;
	return sock_connect(s);
}

int nftsock_open(struct nftsock **ret, struct diag_list *d)
{
	struct nftsock *s = calloc(1, sizeof(*s));
	uint32_t gen;
	int r;

	if (!s)
		return -ENOMEM;
	s->buf = malloc(RECV_BYTES);
	if (!s->buf) {
		free(s);
		return -ENOMEM;
	}
	r = sock_connect(s);
	if (r < 0) {
		nftsock_close(s);
		return open_meaning(-r, d);
	}
	s->seq = (uint32_t)time(NULL);
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
	if (s->ev)
		mnl_socket_close(s->ev);
	if (s->nl)
		mnl_socket_close(s->nl);
	free(s->buf);
	free(s);
}

unsigned nftsock_reopened(const struct nftsock *s)
{
	return s->reopened;
}

/* Room for the notifications of a sync's batch and other programs' writes
 * in between; a larger batch overflows it, which nftsock_events() reports. */
#define EVENT_RCVBUF (8 << 20)

int nftsock_follow(struct nftsock *s)
{
	int v = EVENT_RCVBUF, err;

	if (s->ev)
		return 0;
	s->ev = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (!s->ev)
		return -errno;
	if (mnl_socket_bind(s->ev, 1u << (NFNLGRP_NFTABLES - 1), MNL_SOCKET_AUTOPID) < 0) {
		err = errno;
		mnl_socket_close(s->ev);
		s->ev = NULL;
		return -err;
	}
	if (setsockopt(mnl_socket_get_fd(s->ev), SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v)) < 0)
		setsockopt(mnl_socket_get_fd(s->ev), SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
	return 0;
}

int nftsock_listen(struct nftsock *s, bool on)
{
	int grp = NFNLGRP_NFTABLES;

	if (!s->ev)
		return -ENOTCONN;
	if (mnl_socket_setsockopt(s->ev, on ? NETLINK_ADD_MEMBERSHIP : NETLINK_DROP_MEMBERSHIP,
				  &grp, sizeof(grp)) < 0)
		return -errno;
	return 0;
}

/*
 * Read what fd holds, without waiting, into buf (RECV_BYTES) and run cb
 * over every whole message.  *lost is set when the kernel dropped
 * messages for want of room (ENOBUFS: the rest are still read) or a
 * datagram ended in a cut message.  0 once the socket is empty, or the
 * -errno of a failed read.
 */
static int drain(int fd, char *buf, int (*cb)(const struct nlmsghdr *nlh, void *data), void *data,
		 bool *lost)
{
	for (;;) {
		ssize_t n = recv(fd, buf, RECV_BYTES, MSG_DONTWAIT);
		int left;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ENOBUFS) {
				*lost = true;
				continue;
			}
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			return -errno;
		}
		left = (int)n;
		for (const struct nlmsghdr *h = (const void *)buf; mnl_nlmsg_ok(h, left);
		     h = mnl_nlmsg_next(h, &left))
			cb(h, data);
		if (left > 0)
			*lost = true; /* a cut message: what it said is lost */
	}
}

int nftsock_events(struct nftsock *s, int (*cb)(const struct nlmsghdr *nlh, void *data), void *data)
{
	bool lost = false;
	int r;

	if (!s->ev)
		return -ENOTCONN;
	r = drain(mnl_socket_get_fd(s->ev), s->buf, cb, data, &lost);
	if (r < 0)
		return r;
	return lost ? -ENOBUFS : 0;
}

static int gen_cb(const struct nlmsghdr *nlh, void *data)
{
	struct nftnl_gen *g;

	if (nlh->nlmsg_type != ((NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWGEN))
		return 0;
	g = nftnl_gen_alloc();
	if (!g)
		return -ENOMEM;
	if (nftnl_gen_nlmsg_parse(nlh, g) < 0) {
		nftnl_gen_free(g);
		return -EPROTO;
	}
	*(uint32_t *)data = nftnl_gen_get_u32(g, NFTNL_GEN_ID);
	nftnl_gen_free(g);
	return 0;
}

int nftreply_feed(struct nftreply *rp, const void *buf, size_t len,
		  int (*cb)(const struct nlmsghdr *nlh, void *data), void *data)
{
	int left = len > INT_MAX ? INT_MAX : (int)len;
	const struct nlmsghdr *h;

	for (h = buf; mnl_nlmsg_ok(h, left); h = mnl_nlmsg_next(h, &left)) {
		/* The rest of an earlier conversation, or a message not for
		 * this socket: not this request's answer. */
		if (h->nlmsg_seq != rp->seq || (h->nlmsg_pid && h->nlmsg_pid != rp->portid)) {
			rp->stale++;
			continue;
		}
		if (rp->done) {
			rp->stale++; /* nothing follows the end of an answer */
			continue;
		}
		/* The dump's parts were taken from different generations:
		 * read on to its end (the caller asks again), but take no
		 * more of it. */
		if (h->nlmsg_flags & NLM_F_DUMP_INTR)
			rp->intr = true;
		switch (h->nlmsg_type) {
		case NLMSG_NOOP:
			continue;
		case NLMSG_OVERRUN:
			if (!rp->err)
				rp->err = -ENOBUFS;
			continue;
		case NLMSG_DONE:
			/* A dump's end carries the dump's error, if any. */
			if (h->nlmsg_len >= NLMSG_LENGTH(sizeof(int))) {
				int e = *(const int *)mnl_nlmsg_get_payload(h);

				if (e < 0 && !rp->err)
					rp->err = e;
			}
			rp->done = true;
			continue;
		case NLMSG_ERROR: {
			const struct nlmsgerr *e = mnl_nlmsg_get_payload(h);

			if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*e)))
				return -EPROTO;
			/* The ack (0) or refusal ends the answer. */
			if (e->error < 0 && !rp->err)
				rp->err = e->error;
			else if (e->error > 0 && !rp->err)
				rp->err = -EPROTO;
			rp->done = true;
			continue;
		}
		default:
			break;
		}
		if (h->nlmsg_type < NLMSG_MIN_TYPE || rp->intr || rp->err || !cb)
			continue;
		{
			int r = cb(h, data);

			if (r < 0)
				rp->err = r;
		}
	}
	/* A buffer that ends in the middle of a message is no answer. */
	if (left > 0)
		return -EPROTO;
	return 0;
}

/*
 * Send one request and read its whole answer: a dump to its end, a
 * request to its ack, whatever cb or the kernel said on the way, so that
 * nothing of it is left for the next request to read.  When the socket
 * failed during the answer (lost messages, a timeout, garbage), it is
 * marked broken and replaced before the next request.  0 or -errno
 * (the kernel's, cb's, or the socket's); *ret_intr: NLM_F_DUMP_INTR seen.
 */
static int talk(struct nftsock *s, struct nlmsghdr *nlh,
		int (*cb)(const struct nlmsghdr *nlh, void *data), void *data, bool *ret_intr)
{
	struct nftreply rp = { .seq = nlh->nlmsg_seq };
	int r;

	r = sock_ready(s);
	if (r < 0)
		return r;
	rp.portid = s->portid;
	if (mnl_socket_sendto(s->nl, nlh, nlh->nlmsg_len) < 0)
		return -errno; /* nothing was sent: nothing to read */
	while (!rp.done) {
		ssize_t n = mnl_socket_recvfrom(s->nl, s->buf, RECV_BYTES);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			/* ENOBUFS: messages were dropped (maybe the end of
			 * this answer); EAGAIN: the receive timeout. */
			r = errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
			s->broken = true;
			return r;
		}
		r = nftreply_feed(&rp, s->buf, (size_t)n, cb, data);
		if (r < 0) {
			s->broken = true;
			return r;
		}
	}
	s->stale += rp.stale;
	if (ret_intr)
		*ret_intr = rp.intr;
	return rp.err;
}

int nftsock_getgen(struct nftsock *s, uint32_t *ret)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh =
		nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETGEN, AF_UNSPEC, NLM_F_ACK, ++s->seq);
	uint32_t gen = 0;
	int r = talk(s, nlh, gen_cb, &gen, NULL);

	if (r < 0)
		return r;
	*ret = gen;
	return 0;
}

int nftsock_dump(struct nftsock *s, uint8_t nfproto, uint16_t type, const char *table,
		 const char *chain, int (*cb)(const struct nlmsghdr *nlh, void *data), void *data)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh;
	bool intr = false;
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
	r = talk(s, nlh, cb, data, &intr);
	/* An interrupted dump's callback may have failed on its half-changed
	 * content: asking again is the answer to both. */
	if (intr && r != -ENOMEM && !s->broken)
		return -EINTR;
	return r;
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

struct nftbatch *nftbatch_new_part(void)
{
	return calloc(1, sizeof(struct nftbatch));
}

int nftbatch_join(struct nftbatch *b, struct nftbatch *part)
{
	uint32_t base = (uint32_t)b->n;

	if (b->cur || part->cur)
		return -EINVAL;
	if (GROW(b->pages, b->cap_pages, b->n_pages + part->n_pages) < 0 ||
	    GROW(b->ctx, b->cap, b->n + part->n) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < part->n_pages; i++) {
		const struct page *p = &part->pages[i];

		for (size_t off = 0; off < p->len;) {
			struct nlmsghdr *h = (struct nlmsghdr *)(p->buf + off);

			h->nlmsg_seq += base;
			off += MNL_ALIGN(h->nlmsg_len);
		}
		b->pages[b->n_pages++] = *p;
	}
	if (part->n)
		memcpy(b->ctx + b->n, part->ctx, part->n * sizeof(*part->ctx));
	b->n += part->n;
	b->bytes += part->bytes;
	part->n_pages = part->n = part->bytes = 0;
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

const void *nftbatch_page(const struct nftbatch *b, size_t i, size_t *ret_len)
{
	if (i >= b->n_pages)
		return NULL;
	if (ret_len)
		*ret_len = b->pages[i].len;
	return b->pages[i].buf;
}

const struct nftmsg_ctx *nftbatch_ctx(const struct nftbatch *b, uint32_t seq)
{
	return seq == 0 || seq > b->n ? NULL : &b->ctx[seq - 1];
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

/* The kernel's refusals of a batch's messages, as drain() reads them. */
struct refusals {
	struct nftbatch *b;
	struct diag_list *d;
	size_t errors;
	int first;    /* the first refusal's (negative) error */
	bool restart; /* the batch as a whole came too late (ERESTART) */
};

static int refusal_cb(const struct nlmsghdr *h, void *data)
{
	const struct nlmsgerr *e = mnl_nlmsg_get_payload(h);
	struct refusals *rf = data;

	if (h->nlmsg_type != NLMSG_ERROR || h->nlmsg_len < NLMSG_LENGTH(sizeof(*e)) || e->error == 0)
		return 0;
	if (e->msg.nlmsg_seq == 0 && -e->error == ERESTART)
		rf->restart = true;
	if (!rf->first)
		rf->first = e->error;
	if (rf->errors++ < MAX_REPORTED && !(rf->restart && e->msg.nlmsg_seq == 0))
		report(rf->b, e->msg.nlmsg_seq, -e->error, rf->d);
	return 0;
}

/* Send the sealed batch in one sendmsg.  0 or -errno, with a diagnostic. */
static int send_batch(struct nftsock *s, struct nftbatch *b, struct diag_list *d)
{
	_cleanup_free_ struct iovec *iov = NULL;
	struct sockaddr_nl snl = { .nl_family = AF_NETLINK };
	struct msghdr msg = { .msg_name = &snl, .msg_namelen = sizeof(snl) };
	size_t total = 0;
	int r;

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
			return 0;
		if (errno == EINTR)
			continue;
		r = -errno;
		diag_add(d, DIAG_ERROR, "nf_tables", NULL, NULL,
			 "sending the batch (%zu messages, %zu bytes) failed: %s%s%s", b->n, total,
			 strerror(-r), nftbatch_errno_meaning(-r) ? ": " : "",
			 nftbatch_errno_meaning(-r) ? nftbatch_errno_meaning(-r) : "");
		return r;
	}
}

int nftbatch_commit(struct nftsock *s, struct nftbatch *b, uint32_t genid, struct diag_list *d)
{
	struct refusals rf = { .b = b, .d = d };
	bool lost = false;
	int r;

	r = sock_ready(s);
	if (r < 0) {
		diag_add(d, DIAG_ERROR, "nf_tables", NULL, NULL, "opening a netlink socket: %s",
			 strerror(-r));
		return r;
	}
	r = seal(b, genid);
	if (r < 0)
		return r;
	r = send_batch(s, b, d);
	if (r < 0)
		return r;
	/*
	 * The kernel processes the batch inside sendmsg (netlink to the
	 * kernel is synchronous), so every answer is queued by now: drain
	 * without waiting.  Without NLM_F_ACK on the messages only refusals
	 * are answered.  A failed read ends the answer: what was read is
	 * judged.
	 */
	(void)drain(mnl_socket_get_fd(s->nl), s->buf, refusal_cb, &rf, &lost);
	if (rf.restart)
		return -EAGAIN;
	if (rf.errors > MAX_REPORTED)
		diag_add(d, DIAG_ERROR, "nf_tables", NULL, NULL, "and %zu more refusals",
			 rf.errors - MAX_REPORTED);
	if (!rf.errors && lost) {
		diag_add(d, DIAG_ERROR, "nf_tables", NULL, NULL,
			 "the kernel's answers to the batch overflowed the socket; it refused the "
			 "batch, for reasons lost: every table keeps its previous rules");
		return -ENOBUFS;
	}
	if (rf.errors) {
		diag_add(d, DIAG_ERROR, "nf_tables", NULL, NULL,
			 "the kernel applied none of the batch: every table keeps its previous rules");
		return rf.first;
	}
	return 0;
}
