/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nftdump TABLE...: every rule of the nf_tables tables named (TABLE: one of
 * the ip family, ip6:TABLE one of the ip6 family), in the canonical text
 * of tests/nft/nftcanon.h, in kernel order.  Used to
 * compare svcnat's nft backend with iptables-nft byte for byte, and to
 * record the reference encodings of tests/data/nft/.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <libnftnl/rule.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>

#include "backend/nft/nftbatch.h"
#include "nft/nftcanon.h"

static int rule_cb(const struct nlmsghdr *nlh, void *data)
{
	struct nftnl_rule *r = nftnl_rule_alloc();

	(void)data;
	if (!r)
		return -ENOMEM;
	if (nftnl_rule_nlmsg_parse(nlh, r) < 0) {
		nftnl_rule_free(r);
		return -EINVAL;
	}
	nftcanon_rule(stdout, r);
	nftnl_rule_free(r);
	return 0;
}

int main(int argc, char **argv)
{
	struct diag_list d;
	struct nftsock *s;
	int r;

	diag_list_init(&d);
	r = nftsock_open(&s, &d);
	if (r < 0) {
		diag_list_print(&d, stderr);
		return 1;
	}
	for (int i = 1; i < argc; i++) {
		bool v6 = strncmp(argv[i], "ip6:", 4) == 0;

		r = nftsock_dump(s, v6 ? NFPROTO_IPV6 : NFPROTO_IPV4, NFT_MSG_GETRULE,
				 argv[i] + (v6 ? 4 : 0), NULL, rule_cb, NULL);
		if (r < 0 && r != -ENOENT) {
			fprintf(stderr, "nftdump: %s: %s\n", argv[i], strerror(-r));
			break;
		}
		r = 0;
	}
	nftsock_close(s);
	diag_list_done(&d);
	return r < 0 ? 1 : 0;
}
