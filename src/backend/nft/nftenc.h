/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Planned rules, chains and tables as nf_tables objects (libnftnl), in the
 * encoding iptables-nft 1.8.9 writes (ip6tables-nft for the ip6 family),
 * so that iptables-nft-save, -L and -C on the node show and find svcnat's
 * rules:
 *
 *   [!] -i I[+]   meta iifname; cmp eq/neq the name with its NUL (the prefix
 *                 without one for I+)
 *   -p P          meta l4proto; cmp eq P                       (and the rule's
 *                 NFTA_RULE_COMPAT proto, which compat matches are checked against)
 *   [!] -s/-d A/N payload nh+12/16 (ip6: nh+8/24), as many bytes as the mask
 *                 has 0xff bytes, or the whole address (4 or 16) with a bitwise
 *                 mask when it ends inside a byte; cmp eq/neq
 *                 (-p is meta l4proto in ip6 too, as ip6tables-nft 1.8.9 writes it)
 *   -m tcp|udp --dport N[:M]  payload th+2 (2 bytes); cmp eq/neq N, or
 *                 range eq/neq N M
 *   -m mark [!] --mark V/M meta mark; bitwise M (unless M is ~0); cmp eq/neq V
 *   everything else: an xtables-compat "match"/"target" expression carrying
 *                 the xt blob xtentry.c builds (comment, addrtype, conntrack,
 *                 statistic, recent, sctp, port-less tcp/udp, DNAT, MARK,
 *                 MASQUERADE, REJECT; ip6: xt_entry_build6()'s IPv6 blobs)
 *   then a counter (0 packets, 0 bytes), then the verdict: immediate
 *   accept/drop/return/jump/goto, or nothing for a rule without -j.
 *
 * Registers are NFT_REG_1 and the verdict register, as iptables-nft uses.
 * No object here talks to the kernel.
 */
#ifndef SVCNAT_BACKEND_NFTENC_H
#define SVCNAT_BACKEND_NFTENC_H

#include <stdint.h>

#include <libnftnl/chain.h>
#include <libnftnl/rule.h>
#include <libnftnl/table.h>

#include "backend/writer.h"
#include "core/ruleset.h"

/* NFPROTO_IPV4 or NFPROTO_IPV6: the nf_tables family of writer family f. */
uint8_t nftenc_nfproto(enum writer_family f);

/* A built-in chain as iptables-nft creates it. */
struct nftenc_hook {
	const char *name;  /* "PREROUTING", ... */
	uint32_t hooknum;  /* NF_INET_* */
	int32_t prio;      /* NF_IP_PRI_* */
	const char *type;  /* "filter", "nat" */
};

/* The built-in chain `name` of table t, or NULL when it is none (the ip6
 * family's built-in chains are the same, at the same priorities). */
const struct nftenc_hook *nftenc_builtin(enum rs_table t, const char *name);

/*
 * Build rule r of chain `chain` in table t of family f.  *ret is the
 * caller's (nftnl_rule_free).  Returns 0, -ENOMEM, or -EINVAL with a static
 * reason in *ret_why for a rule the encoding has no place for.
 */
int nftenc_rule(const struct rs_rule *r, enum writer_family f, enum rs_table t, const char *chain,
		struct nftnl_rule **ret, const char **ret_why);

/*
 * A chain of table t: a base chain with hook, priority, type and policy
 * ACCEPT when `name` is a built-in chain, else a plain user chain.  NULL on
 * ENOMEM.
 */
struct nftnl_chain *nftenc_chain(enum writer_family f, enum rs_table t, const char *name);

/* Table t of family f; NULL on ENOMEM. */
struct nftnl_table *nftenc_table(enum writer_family f, enum rs_table t);

#endif
