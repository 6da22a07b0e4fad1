/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nf_tables over netlink (libmnl): the socket, dumps, the ruleset
 * generation, and one nfnetlink batch (BEGIN ... END) carrying every change
 * of a sync, sent in one sendmsg so the kernel applies all of it or none.
 *
 * Why one sendmsg: nfnetlink processes a batch only when BEGIN and END
 * arrive in the same skb; a batch cut over several sendmsg calls is
 * aborted.  The socket's send buffer is raised (SO_SNDBUFFORCE, as
 * iptables-nft and nft do) to the batch's size instead, and the batch is
 * handed over as an iovec of large pages.
 */
#ifndef SVCNAT_BACKEND_NFTBATCH_H
#define SVCNAT_BACKEND_NFTBATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/netlink.h>

#include "core/diag.h"

struct nftsock;

/*
 * Open a NETLINK_NETFILTER socket.  0, or -errno with a diag saying what
 * it means (no nf_tables in the kernel, no CAP_NET_ADMIN).
 */
int nftsock_open(struct nftsock **ret, struct diag_list *d);
void nftsock_close(struct nftsock *s);

/*
 * Every request reads its whole answer (a dump to its end, whatever
 * happened on the way), so that none of it is left for the next request
 * to read; a socket that failed in the middle of an answer is replaced
 * before the next request.  The number of such replacements so far.
 */
unsigned nftsock_reopened(const struct nftsock *s);

/*
 * Subscribe to the nf_tables notifications (NFNLGRP_NFTABLES: every
 * committed change, then NFT_MSG_NEWGEN with the generation it made), on
 * a second socket of s.  0 or -errno.
 */
int nftsock_follow(struct nftsock *s);

/*
 * Leave (on false) or join again (on true) nftsock_follow()'s group.
 * While a listener is subscribed the kernel builds a notification for
 * every object a commit changes, whether or not anyone reads it: for a
 * full sync's batch that is more than half of the commit's CPU time.
 * Notifications queued before leaving stay queued.  0, -ENOTCONN without
 * nftsock_follow(), or -errno.
 */
int nftsock_listen(struct nftsock *s, bool on);

/*
 * Run cb over every notification queued since the last call, without
 * waiting.  0; -ENOBUFS when some were lost (the socket overflowed; the
 * rest were still read); -ENOTCONN without nftsock_follow(); -errno.
 */
int nftsock_events(struct nftsock *s, int (*cb)(const struct nlmsghdr *nlh, void *data),
		   void *data);

/* The ruleset generation (NFT_MSG_GETGEN).  0 or -errno. */
int nftsock_getgen(struct nftsock *s, uint32_t *ret);

/*
 * Dump objects of `type` (NFT_MSG_GETCHAIN, NFT_MSG_GETRULE, ...) of family
 * `nfproto` (NFPROTO_IPV4, NFPROTO_IPV6), only of table `table` when not NULL (and of chain `chain` for
 * rules when not NULL), calling cb for each message.  Returns 0, cb's
 * negative return, -EINTR when the ruleset changed during the dump
 * (NLM_F_DUMP_INTR: read again), -ENOENT when the table does not exist, or
 * another -errno.
 */
int nftsock_dump(struct nftsock *s, uint8_t nfproto, uint16_t type, const char *table,
		 const char *chain, int (*cb)(const struct nlmsghdr *nlh, void *data), void *data);

/* The answer to one request, as nftreply_feed() reads it. */
struct nftreply {
	uint32_t seq, portid; /* the request's sequence number, the socket's port id */
	bool done;            /* NLMSG_DONE, or the request's ack or refusal, seen */
	bool intr;            /* NLM_F_DUMP_INTR seen: the ruleset changed during the dump */
	int err;              /* the kernel's refusal, or cb's first failure; 0 */
	size_t stale;         /* messages of other requests (or after done) skipped */
};

/*
 * Read one received buffer of rp's answer: cb (may be NULL) gets each data
 * message of the request until it fails, the kernel refuses or the dump
 * turns out interrupted; messages of other sequence numbers (the rest of
 * an earlier request's answer) are skipped and counted.  Read on while
 * !rp->done.  0, or -EPROTO when the buffer is not whole netlink messages.
 */
int nftreply_feed(struct nftreply *rp, const void *buf, size_t len,
		  int (*cb)(const struct nlmsghdr *nlh, void *data), void *data);

/* What a batch message does, for errors in words. */
enum nftmsg_op {
	NFTMSG_TABLE_ADD,
	NFTMSG_CHAIN_ADD,
	NFTMSG_CHAIN_DEL,
	NFTMSG_CHAIN_FLUSH,
	NFTMSG_RULE_ADD,
	NFTMSG_RULE_DEL,
};

struct nftmsg_ctx {
	uint8_t op;        /* enum nftmsg_op */
	uint8_t family;    /* enum writer_family */
	uint8_t table;     /* enum rs_table */
	const char *chain; /* borrowed; valid until the batch is committed */
	long rule;         /* 0-based planned (add) or live (delete) index; -1 */
};

struct nftbatch;

/* An empty batch (BEGIN added at commit).  NULL on ENOMEM. */
struct nftbatch *nftbatch_new(void);
void nftbatch_free(struct nftbatch *b);

/*
 * Room for one message of at most `max` bytes, header built (family
 * nfproto: NFPROTO_IPV4, NFPROTO_IPV6):
 * fill its payload with nftnl_*_nlmsg_build_payload(), then
 * nftbatch_push().  NULL on ENOMEM.
 */
struct nlmsghdr *nftbatch_msg(struct nftbatch *b, uint8_t nfproto, uint16_t type, uint16_t flags);
int nftbatch_push(struct nftbatch *b, const struct nftmsg_ctx *ctx);

/*
 * A part of a batch, encoded on its own (on another thread) and then
 * joined to the batch: no BEGIN, messages numbered from 1 as if it were
 * alone.  NULL on ENOMEM.  Freed with nftbatch_free().
 */
struct nftbatch *nftbatch_new_part(void);

/*
 * Append part's messages to b, after b's, numbered on from b's last (each
 * message's header is renumbered in place): the same bytes, in the same
 * order, as had they been built into b.  b takes part's pages (no copy);
 * part is left empty.  0, -EINVAL with a message built and not pushed in
 * either, or -ENOMEM (nothing moved).
 */
int nftbatch_join(struct nftbatch *b, struct nftbatch *part);

/* Messages pushed, and their bytes. */
size_t nftbatch_count(const struct nftbatch *b);
size_t nftbatch_bytes(const struct nftbatch *b);

/*
 * Page i of the batch as it will be sent (the first begins with the room
 * BEGIN is written into at commit), its length in *ret_len (may be NULL);
 * NULL past the last.
 */
const void *nftbatch_page(const struct nftbatch *b, size_t i, size_t *ret_len);

/* The context of message seq (1 ..); NULL for none. */
const struct nftmsg_ctx *nftbatch_ctx(const struct nftbatch *b, uint32_t seq);

/*
 * Send the batch, guarded by generation genid (the kernel refuses it when
 * the ruleset changed since), and collect the kernel's answers.  Returns 0
 * when it was committed; -EAGAIN when the generation moved (read again);
 * else -errno with one diag per refused message naming the table, chain
 * and rule and saying why.  Either everything was applied or nothing.
 */
int nftbatch_commit(struct nftsock *s, struct nftbatch *b, uint32_t genid, struct diag_list *d);

/* What errno err of an nf_tables write means, in words; NULL if nothing to add. */
const char *nftbatch_errno_meaning(int err);

#endif
